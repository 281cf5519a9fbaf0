"""udev: the storage, GPU and network devices with their udev properties, and the udev database.

cuFile finds the device behind a file through libudev (``ID_FS_TYPE``, ``ID_PATH``, the PCI
parent): a container or VM without ``/run/udev``, or with an empty database, makes it fail
or abort. Section ``udev`` (one JSON artifact, ``run/udev/udev.json``, replayed by ``analyze``):

- Live (host root ``/``): devices enumerated through ``pyudev.Context`` (libudev). pyudev is
  imported here only; without libudev the source is *missing*, with the reason.
- Under another ``--host-root`` (libudev cannot be pointed at one): ``ROOT/sys`` for the
  devices (``uevent``) and ``ROOT/run/udev/data/*`` for what udev added, merged the way libudev
  merges them. A database file holds lines ``E:KEY=VALUE`` (property), ``S:link`` (a symlink
  under /dev), ``I:usec`` (initialised), ``G:``/``Q:`` (tags), ``V:`` (version); its name is
  ``b259:0`` (block major:minor), ``c242:0`` (char), ``n3`` (net ifindex) or
  ``+pci:0000:01:00.0`` (subsystem:name, devices without a node).
- A pasted ``udevadm info --export-db``: records of ``P:``/``N:``/``S:``/``E:`` lines (the same
  line parser), one record per device, separated by blank lines.

Devices: the ``block``, ``nvme``, ``nvme-subsystem``, ``infiniband`` and ``net`` classes (not
virtual network interfaces), and PCI functions that are NVIDIA (vendor 0x10de), NVMe (class
0x0108) or network (0x02xx, InfiniBand 0x0207).

Shape::

    {"via": "pyudev"|"files"|"export-db",
     "database": {"path": "/run/udev/data", "present": bool|None, "entries": int|None,
                  "control": bool|None, "src"},   # export-db: entries = records udev initialised
     "populated": bool|None,        # present with at least one entry (None: cannot tell)
     "count": int, "initialized_count": int,
     "devices": [{"subsystem", "name", "sys_path", "device_node", "devtype", "kind", "pci_bdf",
                  "id_path", "id_serial", "id_serial_short", "id_wwn", "id_model", "id_fs_type",
                  "devlinks": [str], "dm_name", "dm_uuid", "md_level", "layer", "initialized",
                  "needs_id_path", "properties": {KEY: VALUE}, "src"}],
     "missing_id_path": [name]}     # devices that need ID_PATH and have none

``kind``: block ``nvme``/``partition``/``dm``/``md``/``loop``/``disk``; ``nvme_controller``,
``nvme_subsystem``; PCI ``gpu``/``nvme``/``rdma``/``nic``/``other``; ``rdma`` (infiniband
class), ``rdma_net`` (a net interface of a PCI function with an RDMA device), ``net``.
``layer``: ``lvm``/``crypt``/``multipath`` (from ``DM_UUID``), ``dm``, ``md``, ``loop`` or None.
``needs_id_path``: PCIe NVMe namespaces and the net interfaces of RDMA NICs, the devices cuFile
places on the PCIe tree.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from gdsdoctor.errors import ParseError, Unavailable
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, Source, numbered_lines, src
from gdsdoctor.probes.host_io import (
    bdfs_in,
    child_inside,
    list_inside,
    read_attr,
    read_under_root,
    real_inside,
)
from gdsdoctor.probes.text import (
    json_bytes,
    line_finder,
    load_reader_json,
    reader_items,
    text_or_none,
    to_int,
)

DATABASE = "/run/udev/data"
CONTROL = "/run/udev/control"
# subsystem -> where its devices are listed under the root
CLASS_DIRS = {
    "block": "sys/class/block",
    "nvme": "sys/class/nvme",
    "nvme-subsystem": "sys/class/nvme-subsystem",
    "pci": "sys/bus/pci/devices",
    "infiniband": "sys/class/infiniband",
    "net": "sys/class/net",
}
KEPT = frozenset(
    (
        "DEVNAME DEVTYPE DEVLINKS DEVPATH SUBSYSTEM MAJOR MINOR DRIVER IFINDEX INTERFACE PCI_CLASS PCI_ID "
        "PCI_SLOT_NAME ID_PATH ID_PATH_TAG ID_SERIAL ID_SERIAL_SHORT ID_WWN ID_MODEL ID_REVISION ID_BUS "
        "ID_TYPE ID_NSID ID_PART_TABLE_TYPE ID_NET_DRIVER ID_NET_NAME_PATH USEC_INITIALIZED NVME_TRTYPE"
    ).split()
)
KEPT_PREFIXES = ("DM_", "MD_", "ID_FS_")
NVIDIA_VENDOR = 0x10DE
MAX_DEVICES = 8192  # per class: more means it is not the tree we think it is
_NVME_NAMESPACE = lazy_compile(r"^nvme\d+(?:c\d+)?n\d+$")
_RECORD_LINE = lazy_compile(r"^([A-Z]):\s?(.*)$")

# -------------------------------------------------------------------------------------------------
# one record's lines (pure): the database files and `udevadm info --export-db` share this


def record_fields(
    lines: Iterable[str], database_file: bool = False
) -> tuple[dict[str, str], list[str], dict[str, str]]:
    """``(properties, symlinks, other)`` from ``X:value`` lines (``E: KEY=V`` with export-db's
    space too). In a database file ``I:`` is when udev initialised the device (µs), which
    libudev reports as ``USEC_INITIALIZED``; in export-db it is a net ifindex, and the record has
    ``E: USEC_INITIALIZED`` itself. ``other`` keeps export-db's first ``P:`` (devpath), ``M:``
    (name), ``U:`` (subsystem) and ``N:`` (node name)."""
    properties: dict[str, str] = {}
    links: list[str] = []
    other: dict[str, str] = {}
    for line in lines:
        match = _RECORD_LINE.match(line.rstrip("\r"))
        if not match:
            continue
        tag, value = match[1], match[2]
        if tag == "E":
            key, sep, rest = value.partition("=")
            if sep and key:
                properties[key] = rest
        elif tag == "S":
            links.append(value.strip())
        elif tag == "I" and database_file:
            properties.setdefault("USEC_INITIALIZED", value.strip())
        elif tag in "PMUN":
            other.setdefault(tag, value.strip())
    return properties, links, other


def with_devlinks(properties: dict[str, str], links: list[str]) -> dict[str, str]:
    """libudev's DEVLINKS: the record's symlinks under /dev, space-separated. They win over a
    DEVLINKS line, which `udevadm info` in a pager cuts at the screen width (``…/by-id/w>``)."""
    if links:
        return {**properties, "DEVLINKS": " ".join("/dev/" + link.lstrip("/") for link in links)}
    return properties


def _hex(value: str | None) -> int | None:
    try:
        return int(value, 16) if value else None
    except ValueError:
        return None


def wanted(subsystem: str, properties: dict[str, str]) -> bool:
    """Every device of the classes read; of PCI, the NVIDIA, NVMe and network functions."""
    if subsystem != "pci":
        return subsystem in CLASS_DIRS
    vendor = _hex(properties.get("PCI_ID", "").partition(":")[0])
    klass = _hex(properties.get("PCI_CLASS"))
    return vendor == NVIDIA_VENDOR or (klass is not None and (klass >> 8 == 0x0108 or klass >> 16 == 0x02))


def device_record(
    subsystem: str, sys_path: str, sys_name: str, device_node: str | None, properties: dict[str, str]
) -> dict[str, Any] | None:
    """What the artifact keeps of one device (None for a device not wanted). Virtual network
    interfaces (veth, bridges, lo: thousands on a Kubernetes node) carry no storage path."""
    if not wanted(subsystem, properties) or (subsystem == "net" and "/devices/virtual/" in sys_path):
        return None
    kept = {k: v for k, v in properties.items() if k in KEPT or k.startswith(KEPT_PREFIXES)}
    return {
        "subsystem": subsystem,
        "sys_name": sys_name,
        "sys_path": sys_path,
        "device_node": device_node,
        "properties": dict(sorted(kept.items())),
    }


# -------------------------------------------------------------------------------------------------
# readers (I/O; never raise except Unavailable, never leave the host root)


def database_state(host_root: Path) -> dict[str, Any]:
    """Whether ``/run/udev/data`` exists under the root, how many entries it has, and whether
    udevd's control socket is there."""
    root = os.path.realpath(host_root)
    data = Path(root, DATABASE.lstrip("/"))
    real = real_inside(root, data)
    present = real is not None and os.path.isdir(real)
    return {
        "path": DATABASE,
        "present": present,
        "entries": len(list_inside(root, data)) if present else 0,
        "control": os.path.lexists(Path(root, CONTROL.lstrip("/"))),
    }


def read_udev(host_root: Path) -> bytes:
    """The artifact: libudev on the running host, the database files under another root."""
    live = os.path.realpath(host_root) == "/"
    if not live and not os.path.isdir(Path(host_root, "sys")):
        raise Unavailable("no /sys under the host root")  # not a host without devices
    devices = list(_live_devices()) if live else list(file_devices(host_root))
    database = database_state(host_root)
    return json_bytes({"reader": "udev", "via": "pyudev" if live else "files", "database": database,
                       "devices": devices})  # fmt: skip


def _live_devices() -> Iterator[dict[str, Any]]:
    try:
        import pyudev  # the one place pyudev is imported: only a live capture needs libudev

        context = pyudev.Context()
    except Exception as error:  # ImportError (no pyudev, no libudev.so.1), OSError
        raise Unavailable(f"libudev unavailable ({type(error).__name__}: {error})"[:300]) from None
    for subsystem in CLASS_DIRS:
        for device in context.list_devices(subsystem=subsystem):
            try:
                record = device_record(
                    subsystem, device.sys_path, device.sys_name, device.device_node, dict(device.properties)
                )
            except (OSError, ValueError, KeyError, UnicodeDecodeError):
                continue  # a device that vanished mid-walk
            if record is not None:
                yield record


def file_devices(host_root: Path) -> Iterator[dict[str, Any]]:
    """The devices under ``host_root/sys`` with their database entries, as libudev would list them."""
    root = os.path.realpath(host_root)
    for subsystem, class_dir in CLASS_DIRS.items():
        directory = Path(root, class_dir)
        for name in list_inside(root, directory)[:MAX_DEVICES]:
            real = real_inside(root, directory / name)
            if real is None:
                continue
            record = _file_device(host_root, root, subsystem, name, real)
            if record is not None:
                yield record


def _file_device(host_root: Path, root: str, subsystem: str, name: str, real: str) -> dict[str, Any] | None:
    uevent_path = child_inside(root, real, "uevent")
    uevent = read_attr(uevent_path) if uevent_path is not None else None
    properties, _, _ = record_fields(f"E:{line}" for line in (uevent or "").split("\n"))
    sys_path = "/" + os.path.relpath(real, root)
    properties["SUBSYSTEM"] = subsystem
    properties["DEVPATH"] = sys_path.removeprefix("/sys")  # as libudev adds them
    if properties.get("DEVNAME") and not properties["DEVNAME"].startswith("/"):
        properties["DEVNAME"] = "/dev/" + properties["DEVNAME"]  # uevent names it relative to /dev
    entry = read_under_root(host_root, f"{DATABASE}/{database_key(subsystem, name, properties)}", 1 << 20)
    stored, links, _ = record_fields((entry or "").split("\n"), database_file=True)
    properties = with_devlinks({**properties, **stored}, links)
    return device_record(subsystem, sys_path, name, properties.get("DEVNAME"), properties)


def database_key(subsystem: str, name: str, properties: dict[str, str]) -> str:
    """The name of a device's database file (systemd's ``device_get_device_id``)."""
    major, minor = properties.get("MAJOR"), properties.get("MINOR")
    if major and minor:
        return f"{'b' if subsystem == 'block' else 'c'}{major}:{minor}"
    if subsystem == "net" and properties.get("IFINDEX"):
        return f"n{properties['IFINDEX']}"
    return f"+{subsystem}:{name}"


# -------------------------------------------------------------------------------------------------
# parsers (pure)


def _kind(subsystem: str, name: str, properties: dict[str, str], rdma_bdfs: set[str], bdf: str | None) -> str:
    if subsystem == "block":
        if properties.get("DEVTYPE") == "partition":
            return "partition"
        if name.startswith("dm-"):
            return "dm"
        if name.startswith("md"):
            return "md"
        if name.startswith("loop"):
            return "loop"
        return "nvme" if _NVME_NAMESPACE.match(name) else "disk"
    if subsystem == "pci":
        klass = _hex(properties.get("PCI_CLASS")) or 0
        if _hex(properties.get("PCI_ID", "").partition(":")[0]) == NVIDIA_VENDOR and klass >> 16 == 0x03:
            return "gpu"
        if klass >> 8 == 0x0108:
            return "nvme"
        if klass >> 8 == 0x0207:
            return "rdma"
        return "nic" if klass >> 16 == 0x02 else "other"
    if subsystem == "net":
        return "rdma_net" if bdf is not None and bdf in rdma_bdfs else "net"
    return {"nvme": "nvme_controller", "nvme-subsystem": "nvme_subsystem", "infiniband": "rdma"}.get(
        subsystem, subsystem
    )


def _layer(kind: str, properties: dict[str, str]) -> str | None:
    uuid = properties.get("DM_UUID", "")
    for prefix, layer in (("LVM-", "lvm"), ("CRYPT-", "crypt"), ("mpath-", "multipath")):
        if uuid.startswith(prefix):
            return layer
    if kind == "dm" or properties.get("DM_NAME"):
        return "dm"
    if kind == "md" or properties.get("MD_LEVEL"):
        return "md"
    return "loop" if kind == "loop" else None


def _device(raw: dict[str, Any], rdma_bdfs: set[str], source: dict[str, Any]) -> dict[str, Any]:
    properties = {k: str(v) for k, v in raw["properties"].items()}
    name, subsystem, sys_path = raw["sys_name"], raw["subsystem"], raw["sys_path"]
    bdfs = bdfs_in(sys_path)
    bdf = bdfs[-1] if bdfs else None
    kind = _kind(subsystem, name, properties, rdma_bdfs, bdf)
    needs_id_path = bdf is not None and (
        (kind == "nvme" and subsystem == "block" and properties.get("DEVTYPE", "disk") == "disk")
        or kind == "rdma_net"
    )
    return {
        "subsystem": subsystem,
        "name": name,
        "sys_path": sys_path,
        "device_node": text_or_none(raw.get("device_node")) or text_or_none(properties.get("DEVNAME")),
        "devtype": text_or_none(properties.get("DEVTYPE")),
        "kind": kind,
        "pci_bdf": bdf,
        "id_path": text_or_none(properties.get("ID_PATH")),
        "id_serial": text_or_none(properties.get("ID_SERIAL")),
        "id_serial_short": text_or_none(properties.get("ID_SERIAL_SHORT")),
        "id_wwn": text_or_none(properties.get("ID_WWN")),
        "id_model": text_or_none(properties.get("ID_MODEL")),
        "id_fs_type": text_or_none(properties.get("ID_FS_TYPE")),
        "devlinks": properties.get("DEVLINKS", "").split(),
        "dm_name": text_or_none(properties.get("DM_NAME")),
        "dm_uuid": text_or_none(properties.get("DM_UUID")),
        "md_level": text_or_none(properties.get("MD_LEVEL")),
        "layer": _layer(kind, properties),
        "initialized": bool(properties.get("USEC_INITIALIZED")),
        "needs_id_path": needs_id_path,
        "properties": properties,
        "src": source,
    }


Raw = tuple[dict[str, Any], dict[str, Any]]  # a device as the artifact keeps it, and its provenance


def _section(via: str, database: dict[str, Any], raws: list[Raw]) -> Section:
    # a net interface is an RDMA one when its PCI function also has an infiniband-class device
    rdma_bdfs = {bdfs_in(raw["sys_path"])[-1] for raw, _ in raws if raw["subsystem"] == "infiniband"
                 and bdfs_in(raw["sys_path"])}  # fmt: skip
    devices = [_device(raw, rdma_bdfs, source) for raw, source in raws]
    present, entries = database.get("present"), database.get("entries")
    populated = None if present is None or (present and entries is None) else bool(present and entries)
    return {
        "via": via,
        "database": database,
        "populated": populated,
        "count": len(devices),
        "initialized_count": sum(1 for d in devices if d["initialized"]),
        "devices": devices,
        "missing_id_path": [d["name"] for d in devices if d["needs_id_path"] and not d["id_path"]],
    }


def _valid_raw(raw: dict[str, Any]) -> bool:
    return all(isinstance(raw.get(key), str) for key in ("subsystem", "sys_name", "sys_path")) and isinstance(
        raw.get("properties"), dict
    )


def parse_reader(text: str, artifact: str) -> Section:
    data = load_reader_json(text, "udev")
    database = data.get("database")
    if not isinstance(database, dict) or not isinstance(database.get("present"), bool):
        raise ParseError('the udev reader\'s JSON has no "database" with "present"')
    find = line_finder(text)
    find(r'^\s*"database": \{')
    database_src = src(artifact, *find(r'^\s*"present": '))  # the line that says it
    raws = [
        (raw, src(artifact, *find(rf'^\s*"sys_path": "{re.escape(raw["sys_path"])}"')))
        for raw in reader_items(data, "devices")
        if _valid_raw(raw)
    ]
    state = {
        "path": text_or_none(database.get("path")) or DATABASE,
        "present": database["present"],
        "entries": to_int(database.get("entries")),
        "control": database.get("control") if isinstance(database.get("control"), bool) else None,
        "src": database_src,
    }
    return _section(str(data.get("via") or "files"), state, raws)


def export_db_records(text: str) -> Iterator[tuple[int, str, list[str]]]:
    """``(line number, P: line, lines)`` for each record of ``udevadm info --export-db``."""
    start, lines = 0, []
    for number, line in [*numbered_lines(text), (0, "")]:
        if line.strip():
            if not lines:
                start = number
            lines.append(line.strip())
            continue
        first = next((index for index, kept in enumerate(lines) if kept.startswith("P:")), None)
        if first is not None:  # a prompt line pasted right above the first record is dropped
            yield start + first, lines[first], lines[first:]
        lines = []


def parse_export_db(text: str, artifact: str) -> Section:
    raws = []
    for number, first, lines in export_db_records(text):
        properties, links, other = record_fields(lines)
        devpath = other.get("P") or properties.get("DEVPATH", "")
        subsystem = properties.get("SUBSYSTEM") or other.get("U", "")
        name = other.get("M") or devpath.rsplit("/", 1)[-1]
        node = properties.get("DEVNAME") or ("/dev/" + other["N"] if other.get("N") else None)
        raw = device_record(subsystem, "/sys" + devpath, name, node, with_devlinks(properties, links))
        if raw is not None:
            raws.append((raw, src(artifact, number, first)))
    if not raws:
        raise ParseError("no P:/E: device records (expected `udevadm info --export-db` output)")
    # A device udev has processed carries USEC_INITIALIZED, read from its database entry: those
    # count the entries seen. None at all cannot say the database is absent (an old udev, a
    # filtered paste), so it stays unknown.
    initialized = sum(1 for raw, _ in raws if raw["properties"].get("USEC_INITIALIZED"))
    database = {"path": DATABASE, "present": True if initialized else None, "entries": initialized or None,
                "control": None, "src": raws[0][1]}  # fmt: skip
    return _section("export-db", database, raws)


def parse(text: str, artifact: str) -> Section:
    if text.lstrip().startswith("{"):
        return parse_reader(text, artifact)
    return parse_export_db(text, artifact)


def recognise(text: str) -> bool:
    head = text.lstrip()[:4000]
    if head.startswith("{"):
        return bool(re.search(r'^\s*"reader": "udev",?$', text[:200_000], re.MULTILINE))
    lines = [line.strip() for line in head.split("\n") if line.strip() and not line.startswith(("$ ", "# "))]
    tagged = [line for line in lines if _RECORD_LINE.match(line)]
    return bool(lines) and lines[0].startswith("P: /devices/") and len(tagged) >= 0.9 * len(lines)


PROBES: tuple[Probe, ...] = (
    Probe(
        section="udev",
        title="udev devices (block, NVMe, PCI GPU/NVMe/NIC, RDMA, net), their properties, the udev database",
        sources=(Source("run/udev/udev.json", reader=read_udev),),
        parse=parse,
        recognise=recognise,
        paste_hint="output of `udevadm info --export-db`",
    ),
)
