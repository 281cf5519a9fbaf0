"""RDMA ports, network interfaces, RoCE QoS and the memlock limit.

Longer than 600 lines: five sections whose pastes come in many forms (ibstat, ibstatus,
ibv_devinfo, ibdev2netdev, sysfs dumps, mlnx_qos), sharing the port model.

Section ``infiniband``: a reader over ``/sys/class/infiniband/<dev>/ports/<n>/`` (plain reads), or a pasted
``ibstat``, ``ibstat CA PORT``, ``ibstatus``, ``ibv_devinfo``, ``ibdev2netdev [-v]`` or
``grep -H . /sys/class/infiniband/...`` dump.
Samples::

    /sys/class/infiniband/mlx5_0/ports/1/rate:400 Gb/sec (4X NDR)     (sysfs, grep -H)
            State: Active / Rate: 400 / Link layer: InfiniBand         (ibstat)
    CA: 'mlx4_0' / Port 2: / State: Down / Physical state: Polling    (ibstat mlx4_0 2, unindented)
                            state:                  PORT_DOWN (1)      (ibv_devinfo)
    mlx5_0 port 1 ==> ib0 (Up)                                         (ibdev2netdev)

``ibstat CA PORT`` prints one port's stanza at column 0 under ``CA: 'name'``; a stanza pasted without
that line names its device only through an ``ibstat NAME PORT`` command line in the paste, else the
port's ``device`` is None (never guessed). ``ibstat -p`` (port GUIDs only) is not this section.

>>> stanza = ["CA: 'mlx5_0'", "Port 1:", "State: Down", "Physical state: Polling", "Rate: 40"]
>>> section = parse_infiniband(chr(10).join(stanza), "p")
>>> port = section["ports"][0]
>>> (section["format"], port["device"], port["port"], port["state"], port["active"], port["rate_gbps"])
('ibstat-port', 'mlx5_0', 1, 'DOWN', False, 40.0)

``{"format": "sysfs"|"sysfs-grep"|"ibstat"|"ibstat-port"|"ibstatus"|"ibv_devinfo"|"ibdev2netdev",
"devices": [{name, hca_type, fw_ver, board_id, bdf, netdevs, src}], "ports": [port]}``, a port
being ``{device, port (int), state ("ACTIVE", "DOWN", "INIT", "ARMED"…), state_num, active (bool),
phys_state ("LinkUp", "Polling", "Disabled"…), phys_state_num, rate_gbps (float; a DOWN port reports
40), rate_text, link_layer ("InfiniBand"|"Ethernet"), active_mtu, max_mtu (bytes, ibv_devinfo only),
netdevs, counters, hw_counters ({name: int}, sysfs only), src}``. Values a format does not carry are
None.

Section ``netdev`` (reader over ``/sys/class/net/*``, or a pasted ``ip link``, read by
``ip_link_text``): ``{"interfaces": [{name, mtu,
operstate, speed_mbps (None when unknown/-1), bdf (PCI function, None for virtual), driver, virtual,
link_type ("ether", "infiniband", "loopback" or None: sysfs ``type``, ``ip link``'s ``link/…``), src}]}``.

Section ``mlnx_qos`` (pasted ``mlnx_qos -i <netdev>``, also the spiderpool ``rdma-qos.sh q`` wrapper)::

    Priority trust state: dscp
            enabled     0   0   0   1   0   0   0   0

``{"interface", "rdma_device", "dcbx_mode", "trust" ("dscp"|"pcp"), "pfc_enabled_priorities": [int],
"pfc_buffer": [int]|None, "dscp2prio": {"3": [dscp]}, "tcs": [{tc, tsa, bw_pct, priorities}],
"ecn_np_enabled_priorities" / "ecn_rp_enabled_priorities": [int]|None, "cnp_dscp", "rdma_tclass", "src"}``.

Section ``memlock`` (reader: ``resource.getrlimit(RLIMIT_MEMLOCK)`` of the gdsdoctor process itself, not of
``--host-root``; a pasted ``ulimit -l`` (KiB) or ``/proc/<pid>/limits`` line (bytes) also parses):
``{"soft_bytes", "hard_bytes" (int|None; None when unlimited or unknown), "soft_unlimited", "hard_unlimited"
(bool; None when unknown, e.g. the hard limit of a pasted ``ulimit -l``), "src"}``.
"""

from __future__ import annotations

import os
import re
import resource
from pathlib import Path
from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, Source, head_lines, numbered_lines, src
from gdsdoctor.probes.host_io import (
    MISSING,
    attrs_inside,
    attrs_of_real,
    bdfs_in,
    link_name,
    list_inside,
    real_inside,
)
from gdsdoctor.probes.ip_link_text import interfaces as ip_link_interfaces
from gdsdoctor.probes.ip_link_text import looks_like_ip_link
from gdsdoctor.probes.text import json_bytes, load_reader_json, provenance_finder, reader_items, to_int

IB_CLASS = "sys/class/infiniband"
NET_CLASS = "sys/class/net"
IB_DEVICE_ATTRS = ("hca_type", "fw_ver", "board_id", "node_type")
IB_PORT_ATTRS = ("state", "phys_state", "rate", "link_layer")
STATES = {0: "NOP", 1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
PHYS_STATES = {
    1: "Sleep",
    2: "Polling",
    3: "Disabled",
    4: "PortConfigurationTraining",
    5: "LinkUp",
    6: "LinkErrorRecovery",
    7: "PhyTest",
}
_STATE_NUMBERS = {name: number for number, name in STATES.items()}
_PHYS_BY_NAME = {name.lower(): (name, number) for number, name in PHYS_STATES.items()}
_STATE_WORDS = {"INITIALIZING": "INIT", "INITIALIZE": "INIT", "ACTIVE_DEFERRED": "ACTIVE_DEFER"}
_NUMBERED = lazy_compile(r"^\s*(\d+)\s*:\s*(\S+)")  # sysfs "4: ACTIVE"
_PARENTHESISED = lazy_compile(r"^\s*(\S+)\s*\((\d+)\)")  # ibv_devinfo "PORT_ACTIVE (4)", "1024 (3)"
_RATE = lazy_compile(r"^\s*(\d+(?:\.\d+)?)")


# --- readers ------------------------------------------------------------------------------------


def counters(root: str, directory: Path) -> dict[str, str | None]:
    return attrs_inside(root, directory, list_inside(root, directory))


def read_ib_device(root: str, entry: Path) -> dict[str, Any]:
    real = real_inside(root, entry)
    if real is None:  # the class link leaves the host root: report the name only
        return {"name": entry.name, "attrs": {}, "bdf": None, "netdevs": [], "ports": []}
    path = Path(real)
    device = real_inside(root, path / "device")
    ports = [
        {
            "port": port,
            "attrs": attrs_inside(root, path / "ports" / port, IB_PORT_ATTRS),
            "counters": counters(root, path / "ports" / port / "counters"),
            "hw_counters": counters(root, path / "ports" / port / "hw_counters"),
        }
        for port in list_inside(root, path / "ports")
    ]
    return {
        "name": entry.name,
        "attrs": attrs_of_real(root, path, IB_DEVICE_ATTRS),
        "bdf": (bdfs_in(device) or [None])[-1] if device else None,
        "netdevs": list_inside(root, Path(device, "net")) if device else [],
        "ports": ports,
    }


def read_infiniband(host_root: Path) -> bytes:
    base = host_root / IB_CLASS
    if not base.is_dir():
        if (host_root / "sys" / "class").is_dir():  # the kernel lists no RDMA device: an answer
            return json_bytes({"reader": "infiniband", "devices": [], "class_absent": True})
        return MISSING  # no sysfs to ask (a root without sys/): the ibstat fallback may still tell
    root = os.path.realpath(host_root)
    devices = [read_ib_device(root, base / name) for name in list_inside(root, base, raise_denied=True)]
    return json_bytes({"reader": "infiniband", "devices": devices})


def read_netdev(host_root: Path) -> bytes:
    base = host_root / NET_CLASS
    if not base.is_dir():
        return MISSING
    root = os.path.realpath(host_root)
    interfaces = []
    for name in list_inside(root, base, raise_denied=True):
        path = real_inside(root, base / name)
        device = real_inside(root, Path(path, "device")) if path else None
        interfaces.append(
            {
                "name": name,
                "attrs": attrs_of_real(root, path, ("mtu", "operstate", "speed", "type")),
                "bdf": (bdfs_in(device) or [None])[-1] if device else None,
                "driver": link_name(Path(device, "driver")) if device else None,
                "has_device": device is not None,
            }
        )
    return json_bytes({"reader": "netdev", "interfaces": interfaces})


def read_memlock(host_root: Path) -> bytes:  # a process limit: host_root does not apply
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    except (OSError, ValueError, AttributeError):
        soft = hard = None
    infinity = resource.RLIM_INFINITY
    return json_bytes(
        {
            "reader": "memlock",
            "soft": "unlimited" if soft == infinity else soft,
            "hard": "unlimited" if hard == infinity else hard,
        }
    )


# --- port normalisation (shared by every format) ------------------------------------------------


def split_enum(text: str) -> tuple[str, int | None]:
    """``"4: ACTIVE"`` (sysfs), ``"PORT_ACTIVE (4)"`` (ibv_devinfo) → (name, number);
    ``"Active"`` → (name, None)."""
    if match := _NUMBERED.match(text):
        return match[2], int(match[1])
    if match := _PARENTHESISED.match(text):
        return match[1], int(match[2])
    return text.strip(), None


def state_of(text: str | None) -> tuple[str | None, int | None]:
    """``"4: ACTIVE"``, ``"PORT_ACTIVE (4)"``, ``"Active"`` (ibstat) → ("ACTIVE", 4)."""
    if not text:
        return None, None
    name, number = split_enum(text)
    if number in STATES:
        return STATES[number], number
    word = name.upper().removeprefix("PORT_")
    word = _STATE_WORDS.get(word, word)
    return word, number if number is not None else _STATE_NUMBERS.get(word)


def phys_state_of(text: str | None) -> tuple[str | None, int | None]:
    """``"5: LinkUp"``, ``"LINK_UP (5)"``, ``"Polling"`` (ibstat) → ("LinkUp", 5)."""
    if not text:
        return None, None
    name, number = split_enum(text)
    if number in PHYS_STATES:
        return PHYS_STATES[number], number
    known = _PHYS_BY_NAME.get(name.lower().replace("_", ""))
    return known if known and number is None else (name, number)


def mtu_of(text: str | None) -> int | None:
    match = _PARENTHESISED.match(text or "")
    return int(match[1]) if match and match[1].isdecimal() else to_int(text)


def rate_of(text: str | None) -> float | None:
    match = _RATE.match(text or "")
    return float(match[1]) if match else None


def int_counters(raw: Any) -> dict[str, int]:
    if not isinstance(raw, dict):
        return {}
    return {str(k): n for k, v in raw.items() if (n := to_int(v)) is not None}


def make_port(device: str, port: Any, fields: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
    state, state_num = state_of(fields.get("state"))
    phys, phys_num = phys_state_of(fields.get("phys_state"))
    rate_text = fields.get("rate")
    return {
        "device": device,
        "port": to_int(port),
        "state": state,
        "state_num": state_num,
        "active": state == "ACTIVE",
        "phys_state": phys,
        "phys_state_num": phys_num,
        "rate_gbps": rate_of(rate_text),
        "rate_text": rate_text.strip() if isinstance(rate_text, str) else None,
        "link_layer": fields.get("link_layer") or None,
        "active_mtu": mtu_of(fields.get("active_mtu")),
        "max_mtu": mtu_of(fields.get("max_mtu")),
        "netdevs": fields.get("netdevs", []),
        "counters": int_counters(fields.get("counters")),
        "hw_counters": int_counters(fields.get("hw_counters")),
        "src": source,
    }


def make_device(name: str, fields: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
    netdevs = fields.get("netdevs")
    return {
        "name": name,
        "hca_type": fields.get("hca_type"),
        "fw_ver": fields.get("fw_ver"),
        "board_id": fields.get("board_id"),
        "bdf": fields.get("bdf") if isinstance(fields.get("bdf"), str) else None,
        "netdevs": [n for n in netdevs if isinstance(n, str)] if isinstance(netdevs, list) else [],
        "src": source,
    }


# --- infiniband: one parser per format ----------------------------------------------------------


def text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def parse_ib_reader(data: dict[str, Any], text: str, artifact: str) -> Section:
    find = provenance_finder(text, artifact, "name")
    devices, ports = [], []
    for raw in reader_items(data, "devices"):
        if not isinstance(raw.get("name"), str):
            continue
        attrs = raw.get("attrs") if isinstance(raw.get("attrs"), dict) else {}
        fields = {key: text_or_none(attrs.get(key)) for key in IB_DEVICE_ATTRS}
        device = make_device(
            raw["name"], {**fields, "bdf": raw.get("bdf"), "netdevs": raw.get("netdevs")}, find(raw["name"])
        )
        devices.append(device)
        for port in raw.get("ports") if isinstance(raw.get("ports"), list) else []:
            if not isinstance(port, dict):
                continue
            port_attrs = port.get("attrs") if isinstance(port.get("attrs"), dict) else {}
            fields = {key: text_or_none(port_attrs.get(key)) for key in IB_PORT_ATTRS}
            fields |= {
                "netdevs": device["netdevs"],
                "counters": port.get("counters"),
                "hw_counters": port.get("hw_counters"),
            }
            ports.append(make_port(device["name"], port.get("port"), fields, device["src"]))
    return {"format": "sysfs", "devices": devices, "ports": ports}


_GREP_LINE = lazy_compile(r"^(?:\S*?/sys/class/infiniband/([^/\s]+)/([^\s:]+):)(.*)")


def parse_ib_grep(text: str, artifact: str) -> Section:
    """``grep -H . /sys/class/infiniband/*/...`` lines: ``<path>:<value>``."""
    devices: dict[str, dict[str, Any]] = {}
    ports: dict[tuple[str, str], dict[str, Any]] = {}
    for number, line in numbered_lines(text):
        match = _GREP_LINE.match(line.strip())
        if not match:
            continue
        name, rel, value = match[1], match[2].split("/"), match[3].strip()
        device = devices.setdefault(name, {"src": src(artifact, number, line)})
        if len(rel) == 1:
            device[rel[0]] = value
        elif len(rel) >= 3 and rel[0] == "ports":
            port = ports.setdefault((name, rel[1]), {"src": src(artifact, number, line)})
            if len(rel) == 3:
                port[rel[2]] = value
                if rel[2] == "state":
                    port["src"] = src(artifact, number, line)
            elif len(rel) == 4 and rel[2] in ("counters", "hw_counters"):
                port.setdefault(rel[2], {})[rel[3]] = value
    if not devices:
        raise ParseError("no /sys/class/infiniband/<dev>/...:<value> lines")
    return {
        "format": "sysfs-grep",
        "devices": [make_device(name, fields, fields["src"]) for name, fields in devices.items()],
        "ports": [make_port(name, port, fields, fields["src"]) for (name, port), fields in ports.items()],
    }


_IBSTAT_CA = lazy_compile(r"^CA '([^']+)'")
_IBSTAT_PORT = lazy_compile(r"^\s*Port (\d+):\s*$")
_IBSTAT_KEYS = {
    "CA type": "hca_type",
    "Firmware version": "fw_ver",
    "State": "state",
    "Physical state": "phys_state",
    "Rate": "rate",
    "Link layer": "link_layer",
}


def parse_ibstat(text: str, artifact: str) -> Section:
    devices: list[dict[str, Any]] = []
    ports: list[dict[str, Any]] = []
    device: dict[str, Any] | None = None
    port: dict[str, Any] | None = None
    for number, line in numbered_lines(text):
        if ca := _IBSTAT_CA.match(line):
            device, port = {"name": ca[1], "src": src(artifact, number, line)}, None
            devices.append(device)
        elif device is not None and (header := _IBSTAT_PORT.match(line)):
            port = {"device": device["name"], "port": header[1], "src": src(artifact, number, line)}
            ports.append(port)
        elif device is not None and ":" in line:
            key, _, value = line.strip().partition(":")
            if (field := _IBSTAT_KEYS.get(key.strip())) is not None:
                (port if port is not None and field in IB_PORT_ATTRS else device)[field] = value.strip()
    if not devices:
        raise ParseError("no `CA 'mlx5_0'` blocks (expected `ibstat` output)")
    return {
        "format": "ibstat",
        "devices": [make_device(d["name"], d, d["src"]) for d in devices],
        "ports": [make_port(p["device"], p["port"], p, p["src"]) for p in ports],
    }


# `ibstat CA PORT`: a "CA: 'mlx5_0'" line (the node type, a colon), then the port's stanza unindented.
_IBSTAT_PORT_CA = lazy_compile(r"^(?:CA|Switch|Router|RNIC|iWARP RNIC|\?\?\?): '([^']+)'\s*$")
# The stanza's own lines, as ibstat prints them: "Key: value", no space before the colon.
_IBSTAT_PORT_LINE = lazy_compile(
    r"^(State|Physical state|Rate|Base lid|LMC|SM lid|Capability mask|Port GUID|Link layer): "
)
# The command that printed it, when the paste kept it: `$ ibstat mlx5_0 1`, `#ibstat mlx4_0 2`.
_IBSTAT_COMMAND = lazy_compile(
    r"^\s*(?:[^\s$#]*[$#]+(?![$#])\s*)?(?:sudo\s+)?(?:\S*/)?ibstat(?:\s+-\S+)*\s+([A-Za-z][\w.-]*)(?:\s+(\d+))?\s*$"
)


def ibstat_port_stanza(lines: list[str]) -> bool:
    """``ibstat CA PORT`` output (its ``CA: 'x'`` line, or a bare stanza: State and Physical state
    lines and another of its keys, at column 0)."""
    if any(_IBSTAT_PORT_CA.match(line.strip()) for line in lines):
        return True
    keys = {m[1] for line in lines if (m := _IBSTAT_PORT_LINE.match(line.lstrip(" \t")))}
    return {"State", "Physical state"} <= keys and len(keys) >= 3


def parse_ibstat_port(text: str, artifact: str) -> Section:
    """``ibstat CA PORT``: one stanza per port, each under ``CA: 'name'`` or named by the command."""
    named: str | None = None  # the device the "CA: 'x'" line or the command names
    command_port: str | None = None
    devices: dict[str, dict[str, Any]] = {}
    ports: list[dict[str, Any]] = []
    port: dict[str, Any] | None = None
    for number, line in numbered_lines(text):
        stripped = line.strip()
        if (ca := _IBSTAT_PORT_CA.match(stripped)) or (command := _IBSTAT_COMMAND.match(stripped)):
            named = ca[1] if ca else command[1]
            command_port = None if ca else command[2]
            devices.setdefault(named, {"name": named, "src": src(artifact, number, line)})
            port = None
        elif header := _IBSTAT_PORT.match(line):
            port = {"device": named, "port": header[1], "src": src(artifact, number, line)}
            ports.append(port)
        elif key := _IBSTAT_PORT_LINE.match(stripped):
            field = _IBSTAT_KEYS.get(key[1])
            if field is None:
                continue
            if port is None or field in port:  # a stanza pasted without its "Port N:" line
                port = {"device": named, "port": command_port, "src": src(artifact, number, line)}
                ports.append(port)
            port[field] = stripped.partition(":")[2].strip()
    ports = [p for p in ports if "state" in p or "phys_state" in p]
    if not ports:
        raise ParseError("no port stanza (`State:` / `Physical state:` lines) of `ibstat CA PORT`")
    return {
        "format": "ibstat-port",
        "devices": [make_device(d["name"], d, d["src"]) for d in devices.values()],
        "ports": [make_port(p["device"], p["port"], p, p["src"]) for p in ports],
    }


_IBSTATUS_HEADER = lazy_compile(r"^Infiniband device '([^']+)' port (\d+) status:")
_IBSTATUS_KEYS = {"state": "state", "phys state": "phys_state", "rate": "rate", "link_layer": "link_layer"}


def parse_ibstatus(text: str, artifact: str) -> Section:
    ports: list[dict[str, Any]] = []
    for number, line in numbered_lines(text):
        if header := _IBSTATUS_HEADER.match(line.strip()):
            ports.append({"device": header[1], "port": header[2], "src": src(artifact, number, line)})
        elif ports and ":" in line:
            key, _, value = line.strip().partition(":")
            if (field := _IBSTATUS_KEYS.get(key.strip())) is not None:
                ports[-1][field] = value.strip()
    if not ports:
        raise ParseError("no `Infiniband device 'X' port N status:` blocks (expected `ibstatus` output)")
    names = dict.fromkeys(p["device"] for p in ports)
    first = {name: next(p["src"] for p in ports if p["device"] == name) for name in names}
    return {
        "format": "ibstatus",
        "devices": [make_device(name, {}, first[name]) for name in names],
        "ports": [make_port(p["device"], p["port"], p, p["src"]) for p in ports],
    }


_DEVINFO_KEYS = {"fw_ver": "fw_ver", "board_id": "board_id", "vendor_part_id": "hca_type"}
_DEVINFO_PORT_KEYS = {"state", "phys_state", "max_mtu", "active_mtu", "link_layer"}


def parse_ibv_devinfo(text: str, artifact: str) -> Section:
    devices: list[dict[str, Any]] = []
    ports: list[dict[str, Any]] = []
    for number, line in numbered_lines(text):
        key, sep, value = line.strip().partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "hca_id":
            devices.append({"name": value, "src": src(artifact, number, line)})
        elif devices and key == "port" and value.isdecimal():
            ports.append({"device": devices[-1]["name"], "port": value, "src": src(artifact, number, line)})
        elif ports and key in _DEVINFO_PORT_KEYS and ports[-1]["device"] == devices[-1]["name"]:
            ports[-1][key] = value
        elif devices and key in _DEVINFO_KEYS:
            devices[-1][_DEVINFO_KEYS[key]] = value
    if not devices:
        raise ParseError("no `hca_id:` lines (expected `ibv_devinfo` output)")
    return {
        "format": "ibv_devinfo",
        "devices": [make_device(d["name"], d, d["src"]) for d in devices],
        "ports": [make_port(p["device"], p["port"], p, p["src"]) for p in ports],
    }


# `ibdev2netdev`: "mlx5_0 port 1 ==> ib0 (Up)"; `ibdev2netdev -v` adds the PCI address, the part
# numbers, the card and firmware, and the port state: "0000:02:00.0 mlx5_0 (MT4115 - MT1523X04353)
# CX456A - ConnectX-4 QSFP fw 12.23.1020 port 1 (ACTIVE) ==> enp2s0f0 (Up)".
_IBDEV2NETDEV = lazy_compile(
    r"^(?:(?P<bdf>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+)?(?P<device>[\w.-]+)"
    r"(?:\s+\((?P<ids>[^)]*)\)(?P<card>(?:\s+(?!fw\s|port\s+\d)\S+)*)(?:\s+fw\s+(?P<fw>\S+))?)?"
    r"\s+port\s+(?P<port>\d+)(?:\s+\((?P<state>[A-Za-z_]+)\s*\))?"
    r"\s+==>\s+(?P<netdev>\S+)\s+\((?P<link>Up|Down)\)"
)


def parse_ibdev2netdev(text: str, artifact: str) -> Section:
    """``ibdev2netdev`` (``-v``): each RDMA port's netdev. The port state is the ``-v`` column;
    without it, the netdev's own state, "(Up)" or "(Down)", stands for it: an IPoIB or RoCE
    netdev has a carrier exactly when its port's link is up."""
    devices: dict[str, dict[str, Any]] = {}
    ports = []
    for number, line in numbered_lines(text):
        if not (match := _IBDEV2NETDEV.match(line.strip())):
            continue
        source = src(artifact, number, line)
        name, netdev = match["device"], match["netdev"]
        device = devices.setdefault(name, {"name": name, "netdevs": [], "src": source})
        device["netdevs"].append(netdev)
        device.update({k: v for k, v in (("bdf", match["bdf"]), ("fw_ver", match["fw"])) if v})
        if match["ids"]:
            device["hca_type"] = match["ids"].split(" - ")[0].strip() or None
        state = match["state"] or ("ACTIVE" if match["link"] == "Up" else "DOWN")
        ports.append(make_port(name, match["port"], {"state": state, "netdevs": [netdev]}, source))
    if not ports:
        raise ParseError("no `DEVICE port N ==> NETDEV (Up|Down)` lines (expected `ibdev2netdev` output)")
    return {
        "format": "ibdev2netdev",
        "devices": [make_device(d["name"], d, d["src"]) for d in devices.values()],
        "ports": ports,
    }


def ib_format(text: str) -> str | None:
    """Which infiniband format a text is (first ~100 lines), or None."""
    head = head_lines(text, 100)
    for line in head:
        stripped = line.strip()
        if _IBSTAT_CA.match(stripped) and "CA '" in line[:4]:
            return "ibstat"
        if _IBSTATUS_HEADER.match(stripped):
            return "ibstatus"
        if stripped.startswith("hca_id:"):
            return "ibv_devinfo"
        if _GREP_LINE.match(stripped):
            return "sysfs-grep"
        if stripped.startswith('"reader": "infiniband"'):
            return "sysfs"
        if _IBDEV2NETDEV.match(stripped):
            return "ibdev2netdev"
    return "ibstat-port" if ibstat_port_stanza(head) else None


_IB_PARSERS = {
    "ibstat": parse_ibstat,
    "ibstat-port": parse_ibstat_port,
    "ibstatus": parse_ibstatus,
    "ibv_devinfo": parse_ibv_devinfo,
    "sysfs-grep": parse_ib_grep,
    "ibdev2netdev": parse_ibdev2netdev,
}


def parse_infiniband(text: str, artifact: str) -> Section:
    if text.lstrip().startswith("{"):
        data = load_reader_json(text, "infiniband")
        return parse_ib_reader(data, text, artifact)
    kind = ib_format(text)
    if kind is None or kind == "sysfs":
        raise ParseError(
            "not ibstat, ibstat CA PORT, ibstatus, ibv_devinfo, ibdev2netdev or a /sys/class/infiniband dump"
        )
    return _IB_PARSERS[kind](text, artifact)


def recognise_infiniband(text: str) -> bool:
    return ib_format(text) not in (None, "sysfs")


# --- netdev -------------------------------------------------------------------------------------


# /sys/class/net/<if>/type: the ARPHRD_* of include/uapi/linux/if_arp.h, named as `ip link` prints them.
_ARPHRD = {1: "ether", 32: "infiniband", 772: "loopback"}


def parse_netdev(text: str, artifact: str) -> Section:
    if not text.lstrip().startswith("{") and looks_like_ip_link(text):
        return {"format": "ip-link", "interfaces": ip_link_interfaces(text, artifact)}
    data = load_reader_json(text, "netdev")
    find = provenance_finder(text, artifact, "name")
    interfaces = []
    for raw in reader_items(data, "interfaces"):
        if not isinstance(raw.get("name"), str):
            continue
        attrs = raw.get("attrs") if isinstance(raw.get("attrs"), dict) else {}
        speed = to_int(attrs.get("speed"))
        interfaces.append(
            {
                "name": raw["name"],
                "mtu": to_int(attrs.get("mtu")),
                "operstate": text_or_none(attrs.get("operstate")),
                "speed_mbps": speed if speed is not None and speed > 0 else None,
                "bdf": text_or_none(raw.get("bdf")),
                "driver": text_or_none(raw.get("driver")),
                "virtual": not raw.get("has_device"),
                "link_type": _ARPHRD.get(to_int(attrs.get("type")) or -1),
                "src": find(raw["name"]),
            }
        )
    return {"interfaces": interfaces}


# --- mlnx_qos -----------------------------------------------------------------------------------

_QOS_INTERFACE = lazy_compile(
    r"mlnx_qos\s+(?!\s)(?:.*\s)?-i\s*(\S+)|show configuration for device (\S+) / (\S*[^\s=])=*$"
)
_DSCP2PRIO = lazy_compile(r"prio:\s*(\d+)\s+dscp:\s*(?!\s)([\d,\s]*)")
_TC = lazy_compile(r"^tc:\s*(\d+)\s+ratelimit:\s*([^\s,][^,]*),\s*tsa:\s*(\w+)(?:,\s*bw:\s*(\d+)%)?")
_ECN = lazy_compile(r"/ecn/roce_(np|rp)/enable/(\d+)\s*=\s*(\d+)")


def int_row(line: str) -> list[int]:
    return [int(token) for token in line.split()[1:] if token.isdecimal()]


def apply_qos_line(qos: dict[str, Any], line: str) -> None:
    stripped = line.strip()
    key, _, value = stripped.partition(":")
    if match := _QOS_INTERFACE.search(stripped):
        qos["interface"] = qos["interface"] or match[1] or match[2]
        qos["rdma_device"] = qos["rdma_device"] or match[3]
    elif key == "DCBX mode":
        qos["dcbx_mode"] = value.strip()
    elif key == "Priority trust state":
        qos["trust"] = value.strip().lower()
    elif match := _DSCP2PRIO.search(stripped):
        qos["dscp2prio"][match[1]] = [int(d) for d in match[2].replace(",", " ").split()]
    elif stripped.startswith("priority ") and ":" not in stripped:
        qos["pfc_priorities"] = int_row(stripped)
    elif stripped.startswith("enabled "):
        qos["pfc_enabled"] = int_row(stripped)
    elif stripped.startswith("buffer "):
        qos["pfc_buffer"] = int_row(stripped)
    elif match := _TC.match(stripped):
        bw = int(match[4]) if match[4] else None
        qos["tcs"].append(
            {
                "tc": int(match[1]),
                "ratelimit": match[2].strip(),
                "tsa": match[3],
                "bw_pct": bw,
                "priorities": [],
            }
        )
    elif key == "priority" and qos["tcs"]:
        qos["tcs"][-1]["priorities"] += [int(t) for t in value.split() if t.isdecimal()]
    elif match := _ECN.search(stripped):
        qos.setdefault(f"ecn_{match[1]}", {})[int(match[2])] = match[3] == "1"
    elif "cnp_dscp" in stripped and "=" in stripped:
        qos["cnp_dscp"] = to_int(stripped.rpartition("=")[2])
    elif "tclass=" in stripped:
        qos["rdma_tclass"] = to_int(stripped.rpartition("tclass=")[2])


def parse_mlnx_qos(text: str, artifact: str) -> Section:
    qos: dict[str, Any] = {
        "interface": None, "rdma_device": None, "dcbx_mode": None, "trust": None, "dscp2prio": {},
        "pfc_priorities": [], "pfc_enabled": None, "pfc_buffer": None, "tcs": [], "cnp_dscp": None,
        "rdma_tclass": None, "src": None,
    }  # fmt: skip
    for number, line in numbered_lines(text):
        apply_qos_line(qos, line)
        if qos["src"] is None and "trust state" in line:
            qos["src"] = src(artifact, number, line)
    if qos["trust"] is None and qos["pfc_enabled"] is None:
        raise ParseError("no `Priority trust state:` or PFC `enabled` row (expected `mlnx_qos -i <netdev>`)")
    enabled, priorities = qos.pop("pfc_enabled") or [], qos.pop("pfc_priorities") or list(range(8))
    ecn = {kind: qos.pop(f"ecn_{kind}", None) for kind in ("np", "rp")}
    return {
        **qos,
        "src": qos["src"] or src(artifact, 1, text.split("\n")[0]),
        "pfc_enabled_priorities": [p for p, on in zip(priorities, enabled, strict=False) if on],
        "ecn_np_enabled_priorities": sorted(p for p, on in ecn["np"].items() if on) if ecn["np"] else None,
        "ecn_rp_enabled_priorities": sorted(p for p, on in ecn["rp"].items() if on) if ecn["rp"] else None,
    }


def recognise_mlnx_qos(text: str) -> bool:
    head = head_lines(text, 100)
    return any(line.strip().startswith("Priority trust state:") for line in head) and any(
        line.strip() == "PFC configuration:" for line in head
    )


# --- memlock ------------------------------------------------------------------------------------

_LIMITS_LINE = lazy_compile(r"^Max locked memory\s+(\S+)\s+(\S+)\s+bytes")
# the command's line: `$ ulimit -l`, `root@n:~# ulimit -l`, `$ srun -N1 bash -c 'ulimit -l'`
_ULIMIT_COMMAND = lazy_compile(r"\bulimit -l['\"]?\s*$")


def limit(value: Any, unit: int) -> tuple[int | None, bool | None]:
    if value is None:
        return None, None
    if value == "unlimited":
        return None, True
    number = to_int(value)
    return (None if number is None or number < 0 else number * unit), False


def memlock_section(soft: Any, hard: Any, unit: int, source: dict[str, Any]) -> Section:
    soft_bytes, soft_unlimited = limit(soft, unit)
    hard_bytes, hard_unlimited = limit(hard, unit)
    return {"soft_bytes": soft_bytes, "hard_bytes": hard_bytes, "soft_unlimited": soft_unlimited,
            "hard_unlimited": hard_unlimited, "src": source}  # fmt: skip


def parse_memlock(text: str, artifact: str) -> Section:
    if text.lstrip().startswith("{"):
        data = load_reader_json(text, "memlock")
        return memlock_section(
            data.get("soft"), data.get("hard"), 1, provenance_finder(text, artifact, "reader")("memlock")
        )
    for number, line in numbered_lines(text):
        if match := _LIMITS_LINE.match(line.strip()):
            return memlock_section(match[1], match[2], 1, src(artifact, number, line))
    values = [  # the command's own line (`$ ulimit -l`, `root@node:~# ulimit -l`) is not a value
        (n, line)
        for n, line in numbered_lines(text)
        if line.strip() and not line.lstrip().startswith("$") and not _ULIMIT_COMMAND.search(line)
    ]
    if len(values) == 1 and re.fullmatch(r"\d+|unlimited", values[0][1].strip()):
        number, line = values[0]
        return memlock_section(line.strip(), None, 1024, src(artifact, number, line))  # ulimit -l prints KiB
    raise ParseError("not `ulimit -l` output nor a `Max locked memory` line of /proc/<pid>/limits")


def recognise_memlock(text: str) -> bool:
    lines = [line.strip() for line in head_lines(text, 100) if line.strip()]
    if any(_LIMITS_LINE.match(line) for line in lines):
        return True
    return (
        len(lines) == 2
        and bool(_ULIMIT_COMMAND.search(lines[0]))
        and bool(re.fullmatch(r"\d+|unlimited", lines[1]))
    )


PROBES: tuple[Probe, ...] = (
    Probe(
        section="infiniband",
        title="RDMA ports: state, physical state, rate, link layer, netdev (sysfs or ibstat/ibv_devinfo)",
        sources=(
            Source("sys/class/infiniband.json", reader=read_infiniband, how="ls /sys/class/infiniband"),
            Source("cmd/ibstat.txt", argv=("ibstat",)),
        ),
        parse=parse_infiniband,
        recognise=recognise_infiniband,
        paste_hint="`ibstat` (or `ibv_devinfo`, `ibstatus`, `ibdev2netdev -v`)",
        tags=("rdma", "network"),
        reads_prompts=True,  # `$ ibstat mlx5_0 1` names the device of a stanza pasted without "CA:"
    ),
    Probe(
        section="netdev",
        title="network interfaces: MTU, operstate, speed, PCI function",
        sources=(Source("sys/class/net.json", reader=read_netdev, how="ip -d link"),),
        parse=parse_netdev,
        recognise=looks_like_ip_link,
        paste_hint="`ip link`",
        tags=("network",),
    ),
    Probe(
        section="mlnx_qos",
        title="RoCE QoS: trust state, PFC priorities, ECN (mlnx_qos -i <netdev>)",
        # paste only: it needs the RoCE netdev's name, which only the user knows
        sources=(),
        parse=parse_mlnx_qos,
        recognise=recognise_mlnx_qos,
        paste_hint="`mlnx_qos -i <netdev>` for the RoCE interface (as root)",
        tags=("rdma", "roce"),
    ),
    Probe(
        section="memlock",
        title="locked-memory limit (ulimit -l) of the diagnosing process",
        sources=(Source("proc/self/memlock.json", reader=read_memlock, how="ulimit -l", this_process=True),),
        parse=parse_memlock,
        recognise=recognise_memlock,
        paste_hint="`ulimit -l` run inside the job's launcher (or `grep locked /proc/<pid>/limits`)",
        tags=("rdma",),
        reads_prompts=True,  # `ulimit -l` prints a bare number: its prompt line says what it is
    ),
)
