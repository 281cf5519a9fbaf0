"""PCIe devices from sysfs, IOMMU groups, and ``lspci -vvv``.

Longer than 600 lines: one family, three sources (sysfs, IOMMU groups, ``lspci -vvv`` and its tree)
sharing the device model; split, each part would import the others.

Section ``pci`` (reader over ``/sys/bus/pci/devices/*``). Plain file reads, not pyudev: pyudev
always talks to the running host's udev/sysfs and cannot be pointed at another root
(``--host-root`` or a bundle), so the reader walks the tree itself. A sample attribute::

    /sys/bus/pci/devices/0000:19:00.0/current_link_speed: 32.0 GT/s PCIe

Shape: ``{"count": int, "devices": [device]}``, a device being
``{bdf, kind (gpu|nvme|nic|bridge|other), class, vendor, device, subsystem_vendor, subsystem_device (hex),
current_link_speed_gts, max_link_speed_gts (float|None), current_link_width, max_link_width (int|None),
numa_node (None for -1), local_cpulist, iommu_group (str|None), driver, root_complex ("pci0000:15"),
upstream ([BDF] root port first), root_port, path, src}``.

Section ``iommu_groups`` (reader over ``/sys/kernel/iommu_groups``; ``present`` = any group exists):
``{"present": bool, "count": int, "groups": [{group, type, devices: [BDF], src}]}``.

Section ``numa`` (reader over ``/sys/devices/system/node/node*``, or a pasted ``numactl --hardware``):
``{"count": int, "nodes": [{node, cpus: [int], cpu_count, size_bytes, distances: [int],
src}]}``.

Section ``lspci_tree`` (``lspci -tv``)::

    +-01.1-[01]--+-00.0  NVIDIA Corporation AD102GL [RTX 6000 Ada Generation]

``{"devices": [{bdf, name (None for bridges drawn with children), parent (upstream bridge BDF|None),
upstream ([BDF] root port first), root_bus ("0000:00"), src}]}``.

Section ``lspci`` (``lspci -vvv``; capabilities need root, else ``Capabilities: <access denied>``)::

    \t\tLnkSta:\tSpeed 16GT/s (downgraded), Width x4 (ok)
    \t\tACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-

``{"caps_readable": bool|None, "devices": [device], "unattributed_acs_ctl": [{flags, src}]}`` (the last for
a pasted ``lspci -vvv | grep ACSCtl``). A device: ``{bdf (with domain), kind (as in ``pci``), class_name,
name, numa_node, driver, caps_readable, lnk_cap/lnk_sta: {speed_gts, width, speed_downgraded,
width_downgraded}|None, lnk_downgraded, acs_capable (None if unreadable), acs_cap/acs_ctl: {src_valid,
trans_blk, req_redir, cmplt_redir, upstream_fwd, egress_ctrl, direct_trans}|None,
aer_ue_set/aer_ce_set/aer_ue_masked: [flag]|None, bar1_bytes, secondary_bus ("0000:17" for a bridge's
``Bus: secondary=17``, else None), port_type
(``root_port``, ``upstream``, ``downstream``, ``endpoint``, ``rc_endpoint``, ``legacy_endpoint``,
``bridge`` or None), src,
srcs: {LnkSta: src, ACSCtl: src, ...}}``. Capability values are None (unknown)
when the capabilities were not readable, never False.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes import lspci_vmm
from gdsdoctor.probes.base import Probe, Section, Source, head_lines, numbered_lines, src
from gdsdoctor.probes.host_io import (
    BDF,
    MISSING,
    attrs_inside,
    attrs_of_real,
    bdfs_in,
    link_name,
    list_inside,
    real_inside,
)
from gdsdoctor.probes.pci_records import new_lspci_device
from gdsdoctor.probes.text import json_bytes, load_reader_json, provenance_finder, reader_items, to_int

PCI_DEVICES = "sys/bus/pci/devices"
IOMMU_GROUPS = "sys/kernel/iommu_groups"
ATTRS = (
    "class",
    "vendor",
    "device",
    "subsystem_vendor",
    "subsystem_device",
    "current_link_speed",
    "max_link_speed",
    "current_link_width",
    "max_link_width",
    "numa_node",
    "local_cpulist",
)
_SPEED = lazy_compile(r"^\s*(\d+(?:\.\d+)?)\s*GT/s")
_ROOT_COMPLEX = lazy_compile(r"^pci[0-9a-f]{4}:[0-9a-f]{2}$")
NVIDIA = 0x10DE


# --- reader -------------------------------------------------------------------------------------


def read_pci_device(root: str, entry: Path) -> dict[str, Any]:
    """One function's attributes, read through its resolved path (never through a link that leaves
    the host root ``root``, a realpath: then only the name is known)."""
    real = real_inside(root, entry)
    return {
        "bdf": entry.name,
        "path": os.path.relpath(real, root) if real is not None else None,  # sys/devices/pci0000:00/…
        "attrs": attrs_of_real(root, real, ATTRS),
        "links": {
            name: link_name(Path(real, name)) if real is not None else None
            for name in ("driver", "iommu_group")
        },
    }


def read_pci(host_root: Path) -> bytes:
    devices_dir = host_root / PCI_DEVICES
    if not devices_dir.is_dir():
        return MISSING
    root = os.path.realpath(host_root)
    names = list_inside(root, devices_dir, raise_denied=True)
    devices = [read_pci_device(root, devices_dir / name) for name in names]
    return json_bytes({"reader": "pci", "entries": names, "devices": devices})


def read_iommu_groups(host_root: Path) -> bytes:
    groups_dir = host_root / IOMMU_GROUPS
    if not groups_dir.is_dir():
        return MISSING
    root = os.path.realpath(host_root)
    groups = [
        {
            "group": name,
            "type": attrs_inside(root, groups_dir / name, ("type",))["type"],
            "devices": list_inside(root, groups_dir / name / "devices"),
        }
        for name in list_inside(root, groups_dir, raise_denied=True)
    ]
    return json_bytes({"reader": "iommu_groups", "groups": groups})


# --- parsers ------------------------------------------------------------------------------------


def link_speed_gts(text: Any) -> float | None:
    """``"16.0 GT/s PCIe"`` (or the pre-5.2 ``"8 GT/s"``) → 16.0; ``"Unknown"`` → None."""
    match = _SPEED.match(text) if isinstance(text, str) else None
    return float(match[1]) if match else None


def device_kind(class_code: int | None, vendor: int | None) -> str:
    if class_code is None:
        return "other"
    base = class_code >> 8
    if base in (0x0300, 0x0302) and vendor == NVIDIA:
        return "gpu"
    if class_code == 0x010802:
        return "nvme"
    if base in (0x0200, 0x0207):
        return "nic"
    if base == 0x0604:
        return "bridge"
    return "other"


def hex_id(value: int | None, width: int) -> str | None:
    return None if value is None else f"0x{value:0{width}x}"


def placement(bdf: str, path: Any) -> dict[str, Any]:
    """Root complex and upstream bridges (root port first) from the resolved sysfs path."""
    parts = path.split("/") if isinstance(path, str) else []
    complexes = [part for part in parts if _ROOT_COMPLEX.match(part)]
    chain = bdfs_in(path) if isinstance(path, str) else []
    upstream = chain[: chain.index(bdf)] if bdf in chain else chain[:-1]
    return {
        "root_complex": complexes[0] if complexes else None,
        "upstream": upstream,
        "root_port": upstream[0] if upstream else None,
        "path": path if isinstance(path, str) else None,
    }


def pci_device(raw: dict[str, Any], find: Any) -> dict[str, Any] | None:
    bdf = raw.get("bdf")
    if not isinstance(bdf, str):
        return None
    attrs = raw.get("attrs") if isinstance(raw.get("attrs"), dict) else {}
    links = raw.get("links") if isinstance(raw.get("links"), dict) else {}
    class_code, vendor = to_int(attrs.get("class")), to_int(attrs.get("vendor"))
    numa = to_int(attrs.get("numa_node"))
    cpulist = attrs.get("local_cpulist")
    return {
        "bdf": bdf,
        "kind": device_kind(class_code, vendor),
        "class": hex_id(class_code, 6),
        "vendor": hex_id(vendor, 4),
        "device": hex_id(to_int(attrs.get("device")), 4),
        "subsystem_vendor": hex_id(to_int(attrs.get("subsystem_vendor")), 4),
        "subsystem_device": hex_id(to_int(attrs.get("subsystem_device")), 4),
        "current_link_speed_gts": link_speed_gts(attrs.get("current_link_speed")),
        "max_link_speed_gts": link_speed_gts(attrs.get("max_link_speed")),
        "current_link_width": to_int(attrs.get("current_link_width")),
        "max_link_width": to_int(attrs.get("max_link_width")),
        "numa_node": None if numa is None or numa < 0 else numa,
        "local_cpulist": cpulist if isinstance(cpulist, str) and cpulist else None,
        "iommu_group": links.get("iommu_group") if isinstance(links.get("iommu_group"), str) else None,
        "driver": links.get("driver") if isinstance(links.get("driver"), str) else None,
        **placement(bdf, raw.get("path")),
        "src": find(bdf),
    }


def parse_pci(text: str, artifact: str) -> Section:
    data = load_reader_json(text, "pci")
    find = provenance_finder(text, artifact, "bdf")
    devices = [item for raw in reader_items(data, "devices") if (item := pci_device(raw, find))]
    return {"count": len(devices), "devices": devices}


def parse_iommu_groups(text: str, artifact: str) -> Section:
    data = load_reader_json(text, "iommu_groups")
    find = provenance_finder(text, artifact, "group")
    groups = []
    for raw in reader_items(data, "groups"):
        name, members = raw.get("group"), raw.get("devices")
        if not isinstance(name, str):
            continue
        members = (
            [m for m in members if isinstance(m, str) and BDF.match(m)] if isinstance(members, list) else []
        )
        kind = raw.get("type")
        groups.append(
            {
                "group": name,
                "type": kind if isinstance(kind, str) else None,
                "devices": members,
                "src": find(name),
            }
        )
    return {"present": bool(groups), "count": len(groups), "groups": groups}


# --- lspci -vvv ---------------------------------------------------------------------------------

_HEADER = lazy_compile(r"^((?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]) (.+)$")
_KEYED = lazy_compile(r"^\s+([A-Za-z][A-Za-z0-9 ]*?):\s*(.*)$")
_LNK = lazy_compile(
    r"Speed (?P<speed>[\d.]+(?![\d.])|unknown)(?:GT/s)?(?P<sd> \(downgraded\))?.{0,80}?Width x(?P<width>\d+)"
    r"(?P<wd> \(downgraded\))?"
)
_FLAG = lazy_compile(r"(?<![A-Za-z0-9])([A-Za-z][A-Za-z0-9]*)([+-])")
_SIZE = lazy_compile(r"\[size=(\d+)([KMGT]?)\]")
_SECONDARY = lazy_compile(r"secondary=([0-9a-fA-F]{2})")
_PORT_TYPES = {
    "Root Port": "root_port",
    "Upstream Port": "upstream",
    "Downstream Port": "downstream",
    "Root Complex Integrated Endpoint": "rc_endpoint",
    "Legacy Endpoint": "legacy_endpoint",
    "Endpoint": "endpoint",
    "PCI-Express to PCI/PCI-X Bridge": "bridge",
}
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
ACS_FLAGS = {
    "SrcValid": "src_valid",
    "TransBlk": "trans_blk",
    "ReqRedir": "req_redir",
    "CmpltRedir": "cmplt_redir",
    "UpstreamFwd": "upstream_fwd",
    "EgressCtrl": "egress_ctrl",
    "DirectTrans": "direct_trans",
}
_CAPABILITY_FIELDS = ("lnk_cap", "lnk_sta", "acs_cap", "acs_ctl", "aer_ue_set", "aer_ce_set", "aer_ue_masked")


def flags(text: str) -> dict[str, bool]:
    return {name: sign == "+" for name, sign in _FLAG.findall(text)}


def acs_flags(text: str) -> dict[str, bool | None]:
    found = flags(text)
    return {key: found.get(name) for name, key in ACS_FLAGS.items()}


def link(text: str) -> dict[str, Any] | None:
    match = _LNK.search(text)
    if not match:
        return None
    speed = match["speed"]
    return {
        "speed_gts": None if speed == "unknown" else float(speed),
        "width": int(match["width"]),
        "speed_downgraded": bool(match["sd"]),
        "width_downgraded": bool(match["wd"]),
    }


def apply_lspci_line(device: dict[str, Any], key: str, value: str, source: dict[str, Any]) -> None:
    """Fold one indented ``Key: value`` line into the device it belongs to."""
    if key == "Capabilities":
        readable = "<access denied>" not in value
        device["caps_readable"] = (
            readable if device["caps_readable"] is None else device["caps_readable"] and readable
        )
        if "Access Control Services" in value:
            device["acs_capable"] = True
        if "] Express" in value:
            device["port_type"] = express_port_type(value)
    elif key in ("LnkCap", "LnkSta"):
        device["lnk_cap" if key == "LnkCap" else "lnk_sta"] = link(value)
    elif key in ("ACSCap", "ACSCtl"):
        device["acs_cap" if key == "ACSCap" else "acs_ctl"] = acs_flags(value)
    elif key in ("UESta", "CESta", "UEMsk"):
        field = {"UESta": "aer_ue_set", "CESta": "aer_ce_set", "UEMsk": "aer_ue_masked"}[key]
        device[field] = sorted(n for n, on in flags(value).items() if on)
    elif key == "NUMA node":
        device["numa_node"] = to_int(value)
    elif key == "Kernel driver in use":
        device["driver"] = value.strip() or None
    elif key == "Region 1" and (size := _SIZE.search(value)):
        device["bar1_bytes"] = int(size[1]) * _UNITS[size[2]]
    elif key == "Bus" and (secondary := _SECONDARY.search(value)):
        device["secondary_bus"] = f"{device['bdf'][:4]}:{secondary[1].lower()}"
    else:
        return
    device["srcs"][key] = source


def express_port_type(value: str) -> str | None:
    """``[40] Express (v2) Root Port (Slot-), MSI 00`` → ``root_port``."""
    return next((kind for name, kind in _PORT_TYPES.items() if name in value), None)


def finish_lspci_device(device: dict[str, Any]) -> dict[str, Any]:
    """Unknown stays None when capabilities were unreadable; readable-but-missing ACS is False."""
    if device["caps_readable"]:
        device["acs_capable"] = bool(device["acs_capable"] or device["acs_ctl"])
    elif device["caps_readable"] is False:
        for field in _CAPABILITY_FIELDS:
            device[field] = None
    sta = device["lnk_sta"]
    device["lnk_downgraded"] = (sta["speed_downgraded"] or sta["width_downgraded"]) if sta else None
    return device


def parse_lspci(text: str, artifact: str) -> Section:
    if lspci_vmm.is_vmm(text):  # the -vmm stanzas, read into this section's devices
        return lspci_vmm.parse(text, artifact)
    devices: list[dict[str, Any]] = []
    orphans: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for number, line in numbered_lines(text):
        header = _HEADER.match(line)
        if header:
            current = new_lspci_device(header[1], header[2], src(artifact, number, line))
            devices.append(current)
            continue
        keyed = _KEYED.match(line)
        if not keyed:
            if not line.strip():
                current = None
            continue
        key, value = keyed[1], keyed[2]
        if current is not None:
            apply_lspci_line(current, key, value, src(artifact, number, line))
        elif key == "ACSCtl":
            orphans.append({"flags": acs_flags(value), "src": src(artifact, number, line)})
    if not devices and not orphans:
        raise ParseError("no device stanzas (expected `lspci -vvv`: `BB:DD.F Class: Vendor Device` headers)")
    devices = [finish_lspci_device(device) for device in devices]
    readable = {device["caps_readable"] for device in devices} - {None}
    return {
        "caps_readable": all(readable) if readable else None,
        "devices": devices,
        "unattributed_acs_ctl": orphans,
    }


def recognise_lspci(text: str) -> bool:
    if lspci_vmm.is_vmm(text):
        return True
    lines = [line for line in head_lines(text, 100) if line.strip() and not line.startswith("$")]
    headers = sum(1 for line in lines if _HEADER.match(line))
    known = sum(1 for line in lines if (m := _KEYED.match(line)) and m[1] in _LSPCI_KEYS)
    if headers:
        return known >= 1 or headers == len(lines)
    # a fragment without its device headers (``lspci -vvv | grep -i acs``, ``… | grep Lnk``): every line
    # an ACS or link register, or the ACS capability's own header
    return bool(lines) and known == len(lines) and all(_FRAGMENT_KEY.search(line) for line in lines)


_LSPCI_KEYS = frozenset(
    {"Subsystem", "Control", "Status", "Capabilities", "LnkCap", "LnkSta", "ACSCtl", "Kernel driver in use",
     "ACSCap", "LnkCtl", "LnkCap2", "LnkSta2", "LnkCtl2"}
)  # fmt: skip
_FRAGMENT_KEY = lazy_compile(r"\b(?:ACSC(?:tl|ap)|Lnk(?:Cap|Sta|Ctl)2?):|\bAccess Control Services\b")


# --- lspci -tv -----------------------------------------------------------------------------------

_TREE_TOKEN = lazy_compile(
    r"\[(?:(?P<domain>[0-9a-f]{4}):)?(?P<bus>[0-9a-f]{2})(?:-[0-9a-f]{2})?\]|(?P<devfn>[0-9a-f]{2}\.[0-7])"
)
_TREE_ROOT = lazy_compile(r"^[-+\\ |]*-\[(?:[0-9a-f]{4}:)?[0-9a-f]{2}\]-")


def tree_devices(line: str, by_column: dict[int, tuple[str, str, str | None]]) -> list[dict[str, Any]]:
    """The devices on one ``lspci -tv`` line. A child sits in the column where its parent's first child
    sat, so ``by_column`` maps that column to (domain, bus, parent BDF) for the lines below."""
    found = []
    pending: tuple[str, str, str | None] | None = None  # a bus whose first child follows on this line
    last: dict[str, Any] | None = None
    for token in _TREE_TOKEN.finditer(line):
        if token["bus"] is not None:
            after_device = last is not None and line[token.start() - 1 : token.start()] == "-"
            domain = token["domain"] or (last["bdf"][:4] if after_device and last else "0000")
            pending = (domain, token["bus"], last["bdf"] if after_device and last else None)
            continue
        parent = pending or by_column.get(token.start())
        if parent is None:
            continue
        if pending is not None:
            by_column[token.start()] = pending
        domain, bus, upstream = parent
        rest = line[token.end() :]
        name = rest.strip() if rest.startswith("  ") else None
        last = {"bdf": f"{domain}:{bus}:{token['devfn']}", "name": name, "parent": upstream}
        found.append(last)
        if name is not None:
            break  # the rest is the device name, which may itself look like "10.0"
        pending = None
    return found


def parse_lspci_tree(text: str, artifact: str) -> Section:
    by_column: dict[int, tuple[str, str, str | None]] = {}
    devices: list[dict[str, Any]] = []
    for number, line in numbered_lines(text):
        if line.startswith("$"):
            continue
        for device in tree_devices(line, by_column):
            devices.append({**device, "src": src(artifact, number, line)})
    if not devices:
        raise ParseError("no `-[0000:00]-+-00.0  Name` tree lines (expected `lspci -tv` output)")
    parents = {device["bdf"]: device["parent"] for device in devices}
    for device in devices:
        chain, parent = [], device["parent"]
        while parent is not None and parent not in chain:
            chain.insert(0, parent)
            parent = parents.get(parent)
        device["upstream"] = chain
        device["root_bus"] = (chain[0] if chain else device["bdf"])[:7]
    return {"devices": devices}


def recognise_lspci_tree(text: str) -> bool:
    lines = [line for line in head_lines(text, 100) if line.strip() and not line.startswith("$")]
    return bool(lines) and bool(_TREE_ROOT.match(lines[0]))


# --- NUMA nodes -----------------------------------------------------------------------------------

NODES = "sys/devices/system/node"
_NODE_DIR = lazy_compile(r"^node(\d+)$")
_MEMTOTAL = lazy_compile(r"MemTotal:\s*(\d+)\s*kB")
_NUMACTL_CPUS = lazy_compile(r"^node (\d+) cpus:(.*)$")
_NUMACTL_SIZE = lazy_compile(r"^node (\d+) size: (\d+) MB$")
_NUMACTL_DISTANCE = lazy_compile(r"^\s*(\d+):((?:\s+\d+)+)\s*$")


def read_numa(host_root: Path) -> bytes:
    base = host_root / NODES
    if not base.is_dir():
        return MISSING
    root = os.path.realpath(host_root)
    nodes = []
    for name in list_inside(root, base, raise_denied=True):
        if _NODE_DIR.match(name):
            attrs = attrs_inside(root, base / name, ("cpulist", "distance", "meminfo"))
            nodes.append({"node": name, **attrs, "meminfo": (attrs["meminfo"] or "")[:200] or None})
    return json_bytes({"reader": "numa", "nodes": nodes})


def expand_cpulist(text: Any) -> list[int] | None:
    """``"0-3,8"`` → [0, 1, 2, 3, 8]; None when it is not a cpulist."""
    if not isinstance(text, str):
        return None
    cpus: list[int] = []
    for part in filter(None, text.strip().split(",")):
        low, _, high = part.partition("-")
        if not low.isdecimal() or (high and not high.isdecimal()) or len(cpus) > 65536:
            return None
        cpus.extend(range(int(low), int(high or low) + 1)[:65536])
    return cpus


def numa_node(node: int, cpus: list[int] | None, size: int | None, distances: list[int], source: Any) -> dict:
    return {"node": node, "cpus": cpus, "cpu_count": None if cpus is None else len(cpus),
            "size_bytes": size, "distances": distances, "src": source}  # fmt: skip


def parse_numa_reader(text: str, artifact: str) -> Section:
    data = load_reader_json(text, "numa")
    find = provenance_finder(text, artifact, "node")
    nodes = []
    for raw in reader_items(data, "nodes"):
        name, distance, meminfo = raw.get("node"), raw.get("distance"), raw.get("meminfo")
        if not isinstance(name, str) or not (match := _NODE_DIR.match(name)):
            continue
        total = _MEMTOTAL.search(meminfo) if isinstance(meminfo, str) else None
        distances = [int(d) for d in distance.split() if d.isdecimal()] if isinstance(distance, str) else []
        size = int(total[1]) * 1024 if total else None
        nodes.append(
            numa_node(int(match[1]), expand_cpulist(raw.get("cpulist")), size, distances, find(name))
        )
    nodes.sort(key=lambda node: node["node"])
    return {"count": len(nodes), "nodes": nodes}


def parse_numactl(text: str, artifact: str) -> Section:
    """``numactl --hardware``: per-node cpus and size (MB = MiB), then the distance matrix."""
    nodes: dict[int, dict[str, Any]] = {}
    for number, line in numbered_lines(text):
        if match := _NUMACTL_CPUS.match(line.strip()):
            cpus = [int(cpu) for cpu in match[2].split() if cpu.isdecimal()]
            nodes[int(match[1])] = numa_node(int(match[1]), cpus, None, [], src(artifact, number, line))
        elif (match := _NUMACTL_SIZE.match(line.strip())) and int(match[1]) in nodes:
            nodes[int(match[1])]["size_bytes"] = int(match[2]) << 20
        elif (match := _NUMACTL_DISTANCE.match(line)) and int(match[1]) in nodes:
            nodes[int(match[1])]["distances"] = [int(d) for d in match[2].split()]
    if not nodes:
        raise ParseError("no `node N cpus:` lines (expected `numactl --hardware` output)")
    return {"count": len(nodes), "nodes": [nodes[n] for n in sorted(nodes)]}


def parse_numa(text: str, artifact: str) -> Section:
    if text.lstrip().startswith("{"):
        return parse_numa_reader(text, artifact)
    return parse_numactl(text, artifact)


def recognise_numactl(text: str) -> bool:
    lines = [line.strip() for line in head_lines(text, 100)]
    return any(line.startswith("available:") and "nodes" in line for line in lines) and any(
        _NUMACTL_CPUS.match(line) for line in lines
    )


PROBES: tuple[Probe, ...] = (
    Probe(
        section="pci",
        title="PCIe devices: class, link speed/width, NUMA node, IOMMU group, driver, upstream bridges",
        sources=(Source("sys/bus/pci/devices.json", reader=read_pci, how="lspci -vvv"),),
        parse=parse_pci,
        tags=("pcie", "topology"),
    ),
    Probe(
        section="iommu_groups",
        title="IOMMU groups (present only when an IOMMU translates DMA)",
        sources=(
            Source(
                "sys/kernel/iommu_groups.json", reader=read_iommu_groups, how="ls /sys/kernel/iommu_groups"
            ),
        ),
        parse=parse_iommu_groups,
        tags=("pcie", "iommu"),
    ),
    Probe(
        section="numa",
        title="NUMA nodes: CPUs, memory size, distances",
        sources=(Source("sys/devices/system/node.json", reader=read_numa, how="numactl --hardware"),),
        parse=parse_numa,
        recognise=recognise_numactl,
        paste_hint="`numactl --hardware`",
        tags=("numa", "topology"),
    ),
    Probe(
        section="lspci",
        title="PCIe capabilities: link cap/status, ACS, AER, NUMA node, driver (lspci -vvv)",
        sources=(Source("cmd/lspci-vvv.txt", argv=("lspci", "-vvv", "-D"), timeout=30.0, needs_root=True),),
        parse=parse_lspci,
        recognise=recognise_lspci,
        paste_hint="`sudo lspci -vvv` (as root: without root the ACS/AER capabilities are hidden)",
        tags=("pcie", "acs"),
    ),
    Probe(
        section="lspci_tree",
        title="PCIe tree: which bridge/switch each device sits under (lspci -tv)",
        sources=(Source("cmd/lspci-tv.txt", argv=("lspci", "-tv"), timeout=30.0),),
        parse=parse_lspci_tree,
        recognise=recognise_lspci_tree,
        paste_hint="`lspci -tv`",
        tags=("pcie", "topology"),
    ),
)
