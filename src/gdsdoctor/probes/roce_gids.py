"""The RoCE GID tables: which GID index is which address and which RoCE version.

For each IP address of a RoCE netdev the kernel adds two GIDs, one RoCE v1 (L2 only) and one
RoCE v2 (UDP/IP, routable), beside the link-local (fe80::) ones. An application picks one by
index (NCCL_IB_GID_INDEX, UCX_IB_GID_INDEX, ``ib_write_bw -x``); one that names a v1 or a
link-local GID on a routed RoCE v2 fabric connects and then times out (transport retry counter
exceeded, status 12) or fails ``ibv_modify_qp``.

Section ``roce_gids``: ``{"format": "sysfs"|"show_gids", "gids": [{device, port, index, gid
(the full IPv6 form sysfs prints), ipv4 (the IPv4 of a ::ffff:a.b.c.d GID, else None), version
("v1"|"v2"|None), netdev, link_local (fe80::/10), link_layer, src}]}`` (show_gids adds
``n_gids_found``). Read from
``/sys/class/infiniband/<dev>/ports/<n>/gids/<i>`` with ``gid_attrs/types/<i>`` ("IB/RoCE v1",
"RoCE v2") and ``gid_attrs/ndevs/<i>`` (a reader; the unset, all-zero entries are left out), or
a pasted ``show_gids`` (MLNX_OFED's script)::

    DEV     PORT    INDEX   GID                                     IPv4            VER     DEV
    mlx5_0  1       5       0000:0000:0000:0000:0000:ffff:ac13:003c 172.19.0.60     v2      ens1f0

``ibv_devinfo -v``'s GID lines pasted without the rest of the device (``GID[  3]: ::ffff:10.0.0.5,
RoCE v2``; device and port when the paste keeps their ``hca_id:``/``port:`` lines) are format
``ibv_devinfo``.

``show_gids`` printing only its header and ``n_gids_found=0`` is a table with no GID (the
interface has no address, or the device is not the one the namespace sees).
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Any

from gdsdoctor.compat import ipv6_text
from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, Source, head_lines, numbered_lines, src
from gdsdoctor.probes.host_io import MISSING, attrs_inside, list_inside, real_inside
from gdsdoctor.probes.text import json_bytes, load_reader_json, provenance_finder, reader_items, to_int

IB_CLASS = "sys/class/infiniband"
_MAX_GIDS = 256  # mlx5's gid_tbl_len: a table longer than this is not one
_UNSET = {"0000:0000:0000:0000:0000:0000:0000:0000", "fe80:0000:0000:0000:0000:0000:0000:0000"}
_SHOW_GIDS_HEADER = lazy_compile(r"^DEV\s+PORT\s+INDEX\s+GID\s+IPv4\s+VER\s+DEV\s*$")
_SHOW_GIDS_ROW = lazy_compile(
    r"^(?P<device>[\w.-]+)\s+(?P<port>\d+)\s+(?P<index>\d+)\s+(?P<gid>[0-9a-fA-F:]{2,39})"
    r"(?:\s+(?P<ipv4>\d{1,3}(?:\.\d{1,3}){3}))?\s+(?P<version>v[12])(?:\s+(?P<netdev>\S+))?\s*$"
)
_FOUND = lazy_compile(r"^n_gids_found=(\d+)\s*$")


# --- reader ------------------------------------------------------------------------------------


def _port_gids(root: str, port_dir: Path) -> list[dict[str, Any]]:
    names = [n for n in list_inside(root, port_dir / "gids") if n.isdecimal()][:_MAX_GIDS]
    values = attrs_inside(root, port_dir / "gids", names)
    found = []
    for name in sorted(names, key=int):
        gid = (values.get(name) or "").strip()
        if not gid or gid in _UNSET:
            continue  # an unset entry: its gid_attrs cannot even be read (EINVAL)
        attrs = {
            kind: attrs_inside(root, port_dir / "gid_attrs" / kind, [name]).get(name)
            for kind in ("types", "ndevs")
        }
        found.append({"index": int(name), "gid": gid, "type": attrs["types"], "ndev": attrs["ndevs"]})
    return found


def read_roce_gids(host_root: Path) -> bytes:
    base = host_root / IB_CLASS
    if not base.is_dir():
        return MISSING
    root = os.path.realpath(host_root)
    ports = []
    for device in list_inside(root, base, raise_denied=True):
        real = real_inside(root, base / device)
        if real is None:
            continue
        for port in list_inside(root, Path(real) / "ports"):
            port_dir = Path(real) / "ports" / port
            layer = attrs_inside(root, port_dir, ["link_layer"]).get("link_layer")
            ports.append(
                {"device": device, "port": port, "link_layer": layer, "gids": _port_gids(root, port_dir)}
            )
    return json_bytes({"reader": "roce_gids", "ports": ports})


# --- parsers -----------------------------------------------------------------------------------


def gid_entry(
    device: str | None, port: Any, index: Any, gid: str, version: Any, netdev: Any, source: dict[str, Any]
) -> dict[str, Any] | None:
    """One GID in the section's shape; None for text that is no IPv6-form GID."""
    try:
        address = ipaddress.IPv6Address(gid.strip())
    except ValueError:
        return None
    mapped = address.ipv4_mapped
    return {
        "device": device,
        "port": to_int(port),
        "index": to_int(index),
        "gid": ipv6_text(address, exploded=True),  # as sysfs and show_gids print it, on every Python
        "ipv4": str(mapped) if mapped else None,
        "version": _version(version),
        "netdev": netdev.strip() if isinstance(netdev, str) and netdev.strip() else None,
        "link_local": address.is_link_local,
        "src": source,
    }


def _version(text: Any) -> str | None:
    """``v1``/``v2`` (show_gids), ``IB/RoCE v1``/``RoCE v2`` (sysfs, ibv_devinfo -v)."""
    if not isinstance(text, str):
        return None
    words = text.replace("/", " ").split()
    return words[-1].lower() if words and words[-1].lower() in ("v1", "v2") else None


def parse_reader(text: str, artifact: str) -> Section:
    data = load_reader_json(text, "roce_gids")
    find = provenance_finder(text, artifact, "gid")
    gids = []
    for port in reader_items(data, "ports"):
        for raw in port.get("gids") if isinstance(port.get("gids"), list) else []:
            if isinstance(raw, dict) and isinstance(raw.get("gid"), str):
                entry = gid_entry(
                    str(port.get("device")),
                    port.get("port"),
                    raw.get("index"),
                    raw["gid"],
                    raw.get("type"),
                    raw.get("ndev"),
                    find(raw["gid"]),
                )
                if entry is not None:
                    gids.append(entry | {"link_layer": port.get("link_layer")})
    return {"format": "sysfs", "gids": gids}


def parse_show_gids(text: str, artifact: str) -> Section:
    gids, header, counted = [], False, None
    for number, line in numbered_lines(text):
        stripped = line.strip()
        if _SHOW_GIDS_HEADER.match(stripped):
            header = True
        elif (found := _FOUND.match(stripped)) is not None:
            counted = int(found[1])
        elif row := _SHOW_GIDS_ROW.match(stripped):
            entry = gid_entry(
                row["device"],
                row["port"],
                row["index"],
                row["gid"],
                row["version"],
                row["netdev"],
                src(artifact, number, line),
            )
            if entry is not None:
                gids.append(entry | {"link_layer": "Ethernet"})  # show_gids lists RoCE ports only
    if not header:
        raise ParseError("no `DEV PORT INDEX GID IPv4 VER DEV` header (expected show_gids output)")
    return {"format": "show_gids", "gids": gids, "n_gids_found": counted}


# ``ibv_devinfo -v``'s GID lines, pasted alone or with the port's lines around them: "GID[  3]:
# ::ffff:200.0.209.6, RoCE v2" (rdma-core prints the type since v20; older ones the GID alone)
_DEVINFO_GID = lazy_compile(
    r"^\s*GID\[\s{0,3}(?P<index>\d{1,3})\]:\s+(?P<gid>[0-9a-fA-F:.]{2,45})"
    r"(?:,\s*(?P<type>[\w/]{1,10}(?: [\w/]{1,10}){0,3}))?\s*$"
)
_DEVINFO_HCA = lazy_compile(r"^\s*hca_id:\s+(?P<device>[\w.-]{1,64})\s*$")
_DEVINFO_PORT = lazy_compile(r"^\s*port:\s+(?P<port>\d{1,3})\s*$")
_DEVINFO_LINK = lazy_compile(r"^\s*link_layer:\s+(?P<ll>\w+)\s*$")


def parse_devinfo_gids(text: str, artifact: str) -> Section:
    """The GIDs of ``ibv_devinfo -v`` lines (device and port when the paste keeps their lines)."""
    gids: list[dict[str, Any]] = []
    device = port = link_layer = None
    for number, line in numbered_lines(text):
        if m := _DEVINFO_HCA.match(line):
            device, port, link_layer = m["device"], None, None
        elif m := _DEVINFO_PORT.match(line):
            port = m["port"]
        elif m := _DEVINFO_LINK.match(line):
            link_layer = m["ll"]
        elif m := _DEVINFO_GID.match(line):
            entry = gid_entry(
                device, port, m["index"], m["gid"], m["type"], None, src(artifact, number, line)
            )
            if entry is not None and m["gid"] not in _UNSET:
                roce = "Ethernet" if _version(m["type"]) else None  # a RoCE type is printed for RoCE only
                gids.append(entry | {"link_layer": link_layer or roce})
    if not gids:
        raise ParseError("no `GID[ N]: GID` lines (expected ibv_devinfo -v output)")
    return {"format": "ibv_devinfo", "gids": gids}


def parse_roce_gids(text: str, artifact: str) -> Section:
    if text.lstrip().startswith("{"):
        return parse_reader(text, artifact)
    head = head_lines(text, 40)
    if not any(_SHOW_GIDS_HEADER.match(line.strip()) for line in head) and any(
        _DEVINFO_GID.match(x) for x in head
    ):
        return parse_devinfo_gids(text, artifact)
    return parse_show_gids(text, artifact)


def recognise_roce_gids(text: str) -> bool:
    lines = [line for line in head_lines(text, 200) if line.strip()]
    if any(_SHOW_GIDS_HEADER.match(line.strip()) for line in lines[:40]):
        return True
    # ``ibv_devinfo -v``'s GID list without the rest of the device (the whole output is infiniband's)
    gid_lines = sum(1 for line in lines if _DEVINFO_GID.match(line))
    return gid_lines > 0 and gid_lines * 2 >= len(lines)


PROBES: tuple[Probe, ...] = (
    Probe(
        section="roce_gids",
        title="RoCE GID tables: each GID index's address and RoCE version (show_gids)",
        sources=(Source("sys/class/infiniband-gids.json", reader=read_roce_gids, how="show_gids"),),
        parse=parse_roce_gids,
        recognise=recognise_roce_gids,
        paste_hint="`show_gids`",
        tags=("rdma", "roce"),
    ),
)
