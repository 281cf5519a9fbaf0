"""The device record the two lspci readers fill (``pci`` for ``lspci -vvv``, ``lspci_vmm`` for
``lspci -vmm``), below both so that neither imports the other's module."""

from __future__ import annotations

import re
from typing import Any


def full_bdf(bdf: str) -> str:
    bdf = bdf.lower()
    return bdf if bdf.count(":") == 2 else "0000:" + bdf


def lspci_kind(class_name: str, name: str) -> str:
    """The same kinds as the sysfs section, from lspci's class and vendor names."""
    if class_name in ("VGA compatible controller", "3D controller") and name.startswith("NVIDIA"):
        return "gpu"
    if class_name == "Non-Volatile memory controller" and "NVM Express" in name:
        return "nvme"
    if class_name in ("Ethernet controller", "Infiniband controller"):
        return "nic"
    return "bridge" if class_name == "PCI bridge" else "other"


def new_lspci_device(bdf: str, rest: str, source: dict[str, Any]) -> dict[str, Any]:
    class_name, _, name = rest.partition(": ")
    class_name = re.sub(r"(?<!\s)\s*\[[0-9a-f]{4}\]$", "", class_name.strip())  # `-nn` appends [0302]
    return {
        "bdf": full_bdf(bdf),
        "kind": lspci_kind(class_name, name.strip()),
        "class_name": class_name if name else None,
        "name": (name or rest).strip(),
        "numa_node": None,
        "driver": None,
        "caps_readable": None,
        "lnk_cap": None,
        "lnk_sta": None,
        "lnk_downgraded": None,
        "acs_capable": None,
        "acs_cap": None,
        "acs_ctl": None,
        "aer_ue_set": None,
        "aer_ce_set": None,
        "aer_ue_masked": None,
        "bar1_bytes": None,
        "secondary_bus": None,
        "port_type": None,
        "src": source,
        "srcs": {},
    }
