"""The GPU record the two nvidia-smi readers fill (``gpu`` for ``nvidia-smi -q``,
``nvidia_smi_text`` for the table, ``-L`` and ``--query-gpu`` outputs pasted instead), below both
so that neither imports the other's module."""

from __future__ import annotations

from typing import Any

from gdsdoctor.patterns import lazy_compile

_BUS_ID = lazy_compile(r"^([0-9A-Fa-f]{4,8}):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})\.([0-7])$")
_LINK = ("PCI", "GPU Link Info")
Q_FIELDS: dict[tuple[str, ...], str] = {
    ("Product Name",): "product_name",
    ("GPU UUID",): "uuid",
    ("Persistence Mode",): "persistence_mode",
    ("MIG Mode", "Current"): "mig_mode",
    ("PCI", "Bus Id"): "bus_id",
    (*_LINK, "PCIe Generation", "Current"): "link_gen_current",
    (*_LINK, "PCIe Generation", "Max"): "link_gen_max",
    (*_LINK, "PCIe Generation", "Device Max"): "link_gen_device_max",
    (*_LINK, "PCIe Generation", "Host Max"): "link_gen_host_max",
    (*_LINK, "Link Width", "Current"): "link_width_current",
    (*_LINK, "Link Width", "Max"): "link_width_max",
    ("PCI", "Replays Since Reset"): "pcie_replays",
    ("BAR1 Memory Usage", "Total"): "bar1_total_mib",
    ("BAR1 Memory Usage", "Used"): "bar1_used_mib",
    ("FB Memory Usage", "Total"): "fb_total_mib",
}


def normalise_bus_id(bus_id: str) -> str | None:
    """``00000000:19:00.0`` (nvidia-smi, 8-digit domain) → ``0000:19:00.0`` (sysfs form)."""
    match = _BUS_ID.match(bus_id.strip())
    if not match:
        return None
    domain, bus, slot, function = match.groups()
    return f"{int(domain, 16) & 0xFFFF:04x}:{bus.lower()}:{slot.lower()}.{function}"


def new_gpu(bus_id: str, source: dict[str, Any]) -> dict[str, Any]:
    gpu: dict[str, Any] = dict.fromkeys(Q_FIELDS.values())
    gpu |= {
        "bus_id": normalise_bus_id(bus_id),
        "bar1_total_bytes": None,
        "bar1_used_bytes": None,
        "src": source,
    }
    return gpu
