"""``lspci -vmm`` / ``-vmmk`` / ``-vmmkn`` / ``-vmmnn`` (machine-readable stanzas) pasted instead of
``lspci -vvv``, read into the same ``lspci`` section: each device's address, kind, class, name,
driver and NUMA node (what the stanzas show; links, ACS and AER stay unknown)::

    Slot:   3d:00.0
    Class:  Non-Volatile memory controller          (-n: 0108; -nn: ... [0108])
    Vendor: Toshiba Corporation
    Device: Device 011a
    ProgIf: 02
    Driver: nvme
    NUMANode:       0

Old lspci versions label the address ``Device:`` too (the first ``Device:`` of a stanza is then its
address).
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Section, head_lines, numbered_lines, src
from gdsdoctor.probes.pci_records import lspci_kind, new_lspci_device

_FIELD = lazy_compile(r"^\s*([A-Za-z]+):\s*(.*?)\s*$")
_ADDRESS = lazy_compile(r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_NUMERIC_ID = lazy_compile(r"(?<!\s)\s*\[([0-9a-fA-F]{4})\]$")
_KEYS = frozenset(
    "Slot Class Vendor Device SVendor SDevice Rev ProgIf Driver Module NUMANode IOMMUGroup PhySlot".split()
)
# PCI class codes (-n) to the names lspci prints, for the kinds the rules need
_CLASS_NAMES = {
    "0108": "Non-Volatile memory controller",
    "0200": "Ethernet controller",
    "0207": "Infiniband controller",
    "0300": "VGA compatible controller",
    "0302": "3D controller",
    "0604": "PCI bridge",
}
_NVIDIA = "10de"


def is_vmm(text: str) -> bool:
    """Stanzas of ``Key:<tab>value`` lines, the first key ``Slot`` (or the old ``Device`` address)."""
    lines = [line for line in head_lines(text, 200) if line.strip()]
    if not lines:
        return False
    first = _FIELD.match(lines[0])
    if not first or first[1] not in ("Slot", "Device") or not _ADDRESS.match(first[2]):
        return False
    known = sum(1 for line in lines if (m := _FIELD.match(line)) and m[1] in _KEYS)
    return known * 10 >= len(lines) * 9


def parse(text: str, artifact: str) -> Section:
    if not is_vmm(text):
        raise ParseError("not `lspci -vmm` stanzas (expected `Slot:<tab>BB:DD.F` first)")
    devices = [_device(stanza, artifact) for stanza in _stanzas(text)]
    return {"caps_readable": None, "devices": devices, "unattributed_acs_ctl": [], "format": "vmm"}


def _stanzas(text: str) -> list[list[tuple[int, str, str, str]]]:
    stanzas: list[list[tuple[int, str, str, str]]] = []
    current: list[tuple[int, str, str, str]] = []
    for number, line in numbered_lines(text):
        field = _FIELD.match(line)
        if field is None:
            if not line.strip() and current:
                stanzas.append(current)
                current = []
            continue
        key, value = field[1], field[2]
        if not current and key == "Device" and _ADDRESS.match(value):
            key = "Slot"  # old lspci: the address under "Device:"
        current.append((number, line, key, value))
    if current:
        stanzas.append(current)
    return [s for s in stanzas if s[0][2] == "Slot" and _ADDRESS.match(s[0][3])]


def _device(stanza: list[tuple[int, str, str, str]], artifact: str) -> dict[str, Any]:

    number, line, _, address = stanza[0]
    fields = {key: value for _, _, key, value in stanza[1:]}
    class_name = _name_and_id(fields.get("Class", ""))[0]
    vendor, vendor_id = _name_and_id(fields.get("Vendor", ""))
    name = " ".join(filter(None, (vendor, _name_and_id(fields.get("Device", ""))[0])))
    device = new_lspci_device(address, f"{class_name}: {name}", src(artifact, number, line))
    device["kind"] = _kind(class_name, vendor, vendor_id, fields.get("ProgIf"))
    device["driver"] = fields.get("Driver") or None
    numa = fields.get("NUMANode", "")
    device["numa_node"] = int(numa) if numa.lstrip("-").isdigit() and int(numa) >= 0 else None
    return device


def _name_and_id(value: str) -> tuple[str, str | None]:
    """``Ethernet controller [0200]`` -> (name, "0200"); a bare ``0200`` (-n) -> (its name, "0200")."""
    if match := _NUMERIC_ID.search(value):
        return value[: match.start()].strip(), match[1].lower()
    if len(value) == 4 and all(c in "0123456789abcdefABCDEF" for c in value):
        return _CLASS_NAMES.get(value.lower(), value), value.lower()
    return value.strip(), None


def _kind(class_name: str, vendor: str, vendor_id: str | None, prog_if: str | None) -> str:

    nvidia = vendor.startswith("NVIDIA") or vendor_id == _NVIDIA or vendor.lower() == _NVIDIA
    if class_name in ("VGA compatible controller", "3D controller") and nvidia:
        return "gpu"
    if class_name == "Non-Volatile memory controller" and (prog_if or "").strip() == "02":
        return "nvme"  # ProgIf 02: NVM Express
    return lspci_kind(class_name, vendor)
