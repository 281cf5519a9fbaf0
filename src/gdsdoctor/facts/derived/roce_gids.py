"""Derived facts for the RoCE GID tables: which GID an application or the NVMe-oF host uses, and
whether that one is a routable RoCE v2 GID (issue 23 item 3).

``derive(facts, derived)`` returns ``derived.roce_gids`` (after ``derived.fabrics_locality``):

- ``gids``: the GID table entries read (``roce_gids``), Ethernet (RoCE) ports only: an entry
  without a link layer (``show_gids`` prints none) is left out when its port or netdev is known
  to be InfiniBand (``infiniband`` ports' ``link_layer``, an IPoIB netdev's ``link/infiniband``).
- ``infiniband_netdevs``: the netdevs known to be InfiniBand (IPoIB): the RoCE GID rules do not
  apply to a connection from them.
- ``v2_ipv4``: per RoCE device and port, the RoCE v2 GIDs of an IPv4 address ``{device, port,
  index, ipv4, netdev}`` — the entries a RoCE v2 fabric routes.
- ``configured``: the GID indexes a pasted log says were set (``app_log.gid_settings``:
  NCCL_IB_GID_INDEX, UCX_IB_GID_INDEX) ``{name, index, src}``.
- ``configured_wrong``: each configured index that names, on a RoCE port of this table, a RoCE v1
  GID or a link-local (fe80::) one ``{name, index, device, port, gid, version, link_local,
  reason, right (the v2 IPv4 indexes of that port), src, gid_src}``; an index that names a RoCE v2
  GID of an IPv4 or global address on every port is right and stays out.
- ``fabrics_sources``: the source address of each NVMe-oF RDMA controller (derived.fabrics_locality:
  host_traddr, or its interface's IPv4) with the GID versions the table has for it ``{controller,
  state, address, netdev, versions, src}``; ``fabrics_without_v2``: those whose address has GIDs
  but no RoCE v2 one, or no GID at all on a table that was read (rdma_cm resolves the source GID
  from that address and prefers RoCE v2). A controller whose source is an InfiniBand netdev, or
  whose RDMA port is InfiniBand, is no RoCE connection and is left out.
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.facts.derived.access import dicts, items, num, obj, ok_section, txt
from gdsdoctor.facts.derived.fabrics_locality import interface_addresses


def derive(facts: dict[str, Any], derived: dict[str, Any]) -> dict[str, Any]:
    ib_netdevs, ib_ports = infiniband_netdevs(facts), _infiniband_ports(facts)
    gids = [
        g
        for g in items(ok_section(facts, "roce_gids"), "gids")
        if g.get("link_layer") == "Ethernet"
        or (
            g.get("link_layer") is None
            and g.get("netdev") not in ib_netdevs
            and (g.get("device"), g.get("port")) not in ib_ports
        )
    ]
    configured = items(ok_section(facts, "app_log"), "gid_settings")
    sources = _fabrics_sources(facts, derived, gids, ib_netdevs)
    return {
        "gids": gids,
        "infiniband_netdevs": sorted(ib_netdevs),
        "v2_ipv4": [_short(g) for g in gids if _routable_v2(g)],
        "configured": configured,
        "configured_wrong": _configured_wrong(configured, gids),
        "fabrics_sources": sources,
        "fabrics_without_v2": [s for s in sources if "v2" not in s["versions"]],
    }


def infiniband_netdevs(facts: dict[str, Any]) -> set[str]:
    """Netdevs known to be InfiniBand: IPoIB by its link type (sysfs ``type`` 32, ``ip``'s
    ``link/infiniband``), or a netdev of an RDMA device whose ports are all InfiniBand."""
    found = {
        str(i["name"])
        for section in ("netdev", "ip_addr")
        for i in items(ok_section(facts, section), "interfaces")
        if txt(i.get("name")) and i.get("link_type") == "infiniband"
    }
    ports = items(ok_section(facts, "infiniband"), "ports")
    for device in items(ok_section(facts, "infiniband"), "devices"):
        layers = {p.get("link_layer") for p in ports if p.get("device") == device.get("name")}
        if layers == {"InfiniBand"}:
            found |= {str(n) for n in device.get("netdevs") or [] if isinstance(n, str)}
    return found


def _infiniband_ports(facts: dict[str, Any]) -> set[tuple[Any, Any]]:
    ports = items(ok_section(facts, "infiniband"), "ports")
    return {(p.get("device"), p.get("port")) for p in ports if p.get("link_layer") == "InfiniBand"}


def _routable_v2(gid: dict[str, Any]) -> bool:
    return gid.get("version") == "v2" and not gid.get("link_local") and bool(gid.get("ipv4"))


def _short(gid: dict[str, Any]) -> dict[str, Any]:
    return {k: gid.get(k) for k in ("device", "port", "index", "ipv4", "netdev")}


def _configured_wrong(configured: list[dict[str, Any]], gids: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = []
    for setting in configured:
        index = num(setting.get("index"))
        for gid in gids:
            if gid.get("index") != index or not (gid.get("version") == "v1" or gid.get("link_local")):
                continue
            place = (gid.get("device"), gid.get("port"))
            right = sorted(
                {
                    int(g["index"])
                    for g in gids
                    if _routable_v2(g) and (g.get("device"), g.get("port")) == place
                }
            )
            found.append(
                {
                    "name": setting.get("name"),
                    "index": index,
                    "device": gid.get("device"),
                    "port": gid.get("port"),
                    "gid": gid.get("gid"),
                    "version": gid.get("version"),
                    "link_local": gid.get("link_local"),
                    "reason": _reason(gid),
                    "right": right,
                    "src": setting.get("src"),
                    "gid_src": gid.get("src"),
                }
            )
    return found


def _reason(gid: dict[str, Any]) -> str:
    kind = f"RoCE {gid['version']}" if gid.get("version") else "RoCE"
    return f"a link-local (fe80::) {kind} GID" if gid.get("link_local") else f"a {kind} GID"


def _fabrics_sources(
    facts: dict[str, Any], derived: dict[str, Any], gids: list[dict[str, Any]], ib_netdevs: set[str]
) -> list[dict[str, Any]]:
    if not gids:
        return []  # no RoCE table read: nothing to compare with (an IB table is no RoCE one)
    addresses = interface_addresses(facts)
    found = []
    for controller in dicts(obj(derived.get("fabrics_locality")).get("controllers")):
        if controller.get("transport") != "rdma" or controller.get("netdev") in ib_netdevs:
            continue  # over InfiniBand rdma_cm resolves an IB path, no RoCE GID
        netdev_addresses = addresses.get(str(controller.get("netdev")), [])
        address = txt(controller.get("source_address")) or _ipv4_of(netdev_addresses)
        if not address or _holder(addresses, address) in ib_netdevs:
            continue
        versions = sorted(
            {str(g.get("version")) for g in gids if g.get("ipv4") == address and g.get("version")}
        )
        found.append(
            {
                "controller": controller.get("name"),
                "state": controller.get("state"),
                "address": address,
                "netdev": controller.get("netdev"),
                "versions": versions,
                "src": controller.get("src"),
            }
        )
    return found


def _holder(addresses: dict[str, list[dict[str, Any]]], address: str) -> str | None:
    """The interface that holds ``address``."""
    return next(
        (name for name, entries in addresses.items() if any(a.get("address") == address for a in entries)),
        None,
    )


def _ipv4_of(entries: list[dict[str, Any]]) -> str | None:
    return next(
        (str(a["address"]) for a in entries if a.get("family") == "inet" and a.get("scope") != "host"), None
    )
