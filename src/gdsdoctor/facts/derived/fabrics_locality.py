"""Which NIC carries each NVMe-oF controller, and where that NIC sits against each GPU (issue 23).

For NVMe-oF the data reaches the GPU through the RDMA (or TCP) NIC, so the NIC is the endpoint
whose PCIe switch and NUMA node matter, never the namespace's: a multipath head's ``numa_node``
is -1 and a fabrics controller has no PCIe function. The NIC of a controller is read, in this
order, from its sysfs ``address`` (nvme-cli's ``list-subsys``/``list -v`` print the same string):
``host_iface`` (TCP, ``nvme connect -f``), ``src_addr`` (TCP: the socket's source, kernel 6.1+)
or ``host_traddr`` (``-w``; RDMA binds its source address to it) as one of the host's addresses
(``ip address``), else the one interface whose subnet holds the target's ``traddr`` (the
connected route RDMA-CM and TCP pick; two such interfaces tie and none is chosen). The NIC's
place is the topology model's (``derived.topology.pairs``: GPU × NIC relation, NUMA alignment).

``derive(facts, derived)`` returns ``derived.fabrics_locality`` (after ``derived.topology``):

- ``controllers``: per RDMA/TCP controller ``{name, subsystem, subsysnqn, transport, state, traddr,
  trsvcid, netdev, basis ("host_iface"|"src_addr"|"host_traddr"|"subnet"|None), source_address,
  candidates (interfaces tying on the subnet), nic_bdf, rdma_device, numa_node (an RDMA
  controller's sysfs node: its RDMA device's), src}``. A live RDMA controller whose NIC is not
  placed is still compared with each GPU by that node (``best.basis`` "numa_node": across
  sockets, or "same_numa_node", which is never far).
- ``gpu_paths``: per GPU and subsystem with a live controller whose NIC is placed: ``{gpu,
  gpu_bdf, subsystem, subsysnqn, transport, best (the pair of the closest live path: relation,
  label, says, …), controller (that path's), closer_nics, src}``; ``closer_nics``: NICs closer to
  the GPU than ``best`` that carry no live path of the subsystem but have an address in the
  subnet of one of its portals (they reach the target): ``{netdev, address, traddr, trsvcid,
  relation, label, says}``.
- ``far``: the ``gpu_paths`` whose closest live path crosses host bridges or sockets (NODE/SYS)
  while a closer NIC reaches the target, or crosses sockets at all.
- ``suggested_paths``: the connects that would give those GPUs their nearer path.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from gdsdoctor.facts.derived.access import dicts, items, num, obj, ok_section, strs, txt

_IP_TRANSPORTS = ("rdma", "tcp")
_NODE_OR_WORSE = 3  # topology.RANK["cross_root_complex"]


def derive(facts: dict[str, Any], derived: dict[str, Any]) -> dict[str, Any]:
    addresses = interface_addresses(facts)
    nics = _nic_index(facts)
    nqns = _subsystem_nqns(facts)
    numa = _rdma_numa_nodes(facts)
    controllers = [
        _controller(c, addresses, nics, nqns) | {"numa_node": numa.get(str(c.get("name")))}
        for c in dicts(obj(derived.get("storage")).get("fabrics_controllers"))
        if c.get("transport") in _IP_TRANSPORTS
    ]
    pairs = [p for p in dicts(obj(derived.get("topology")).get("pairs")) if p.get("other_kind") == "nic"]
    gpu_numa = {
        str(g["gpu"]): g
        for g in dicts(obj(derived.get("topology")).get("gpus"))
        if isinstance(num(g.get("numa_node")), int)
    }
    gpu_paths = _gpu_paths(controllers, pairs, addresses, nics, gpu_numa)
    far = [path for path in gpu_paths if _far(path)]
    return {
        "controllers": controllers,
        "gpu_paths": gpu_paths,
        "far": far,
        "suggested_paths": _suggested(far),
    }


def _far(path: dict[str, Any]) -> bool:
    """SYS always; NODE only when a nearer NIC reaches the target (a storage NIC behind another
    host bridge of the GPU's socket is how many nodes are built)."""
    rank = num(path["best"].get("rank"))
    return path["best"].get("relation") == "cross_socket" or bool(
        path["closer_nics"] and rank is not None and rank >= _NODE_OR_WORSE
    )


def _suggested(far: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One connect per closer NIC and portal: ``{netdev, address, traddr, trsvcid, subsysnqn,
    transport, gpus}`` (the GPUs it would serve from nearer)."""
    found: dict[tuple[Any, ...], dict[str, Any]] = {}
    for path in far:
        for nic in path["closer_nics"]:
            key = (nic["netdev"], nic["traddr"], nic["trsvcid"], path["subsysnqn"])
            entry = found.setdefault(
                key,
                {
                    **{k: nic[k] for k in ("netdev", "address", "traddr", "trsvcid")},
                    "subsysnqn": path["subsysnqn"],
                    "transport": path["transport"],
                    "gpus": [],
                },
            )
            entry["gpus"].append(path["gpu"])
    return list(found.values())


# --- the host's addresses and NICs ---------------------------------------------------------------


def interface_addresses(facts: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Interface name → its addresses, from ``ip address`` (the ``ip_addr`` section), else a
    pasted ``ip addr`` read as ``netdev``."""
    for section in ("ip_addr", "netdev"):
        found = {
            str(i["name"]): dicts(i.get("addresses"))
            for i in items(ok_section(facts, section), "interfaces")
            if txt(i.get("name")) and dicts(i.get("addresses"))
        }
        if found:
            return found
    return {}


def _nic_index(facts: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """netdev → ``{bdf, rdma_device}`` from sysfs netdevs and the RDMA devices' netdevs."""
    index: dict[str, dict[str, Any]] = {}
    for netdev in items(ok_section(facts, "netdev"), "interfaces"):
        if txt(netdev.get("name")):
            index[netdev["name"]] = {"bdf": txt(netdev.get("bdf")), "rdma_device": None}
    for device in items(ok_section(facts, "infiniband"), "devices"):
        for name in strs(device.get("netdevs")):
            entry = index.setdefault(name, {"bdf": None, "rdma_device": None})
            entry["rdma_device"] = txt(device.get("name"))
            entry["bdf"] = entry["bdf"] or txt(device.get("bdf"))
    return index


def _rdma_numa_nodes(facts: dict[str, Any]) -> dict[str, int]:
    """Controller name → sysfs ``numa_node`` of an RDMA controller: nvme-rdma sets it to its RDMA
    device's node (``ibdev_to_node``), so it places the NIC on a socket even when no address
    names the NIC. A TCP controller's (and a multipath head's) is -1: no evidence."""
    return {
        str(c["name"]): int(c["numa_node"])
        for c in items(ok_section(facts, "nvme_sysfs"), "controllers")
        if c.get("transport") == "rdma" and txt(c.get("name")) and isinstance(num(c.get("numa_node")), int)
    }


def _subsystem_nqns(facts: dict[str, Any]) -> dict[str, str]:
    """Controller name → its subsystem NQN (sysfs ``subsysnqn``, nvme-cli's subsystem NQN)."""
    found = {}
    for path in items(ok_section(facts, "nvme_subsys"), "paths"):
        if txt(path.get("name")) and txt(path.get("subsystem_nqn")):
            found[path["name"]] = path["subsystem_nqn"]
    for controller in items(ok_section(facts, "nvme_sysfs"), "controllers"):
        if txt(controller.get("name")) and txt(controller.get("subsysnqn")):
            found[controller["name"]] = controller["subsysnqn"]
    return found


def _ip(text: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if not isinstance(text, str):
        return None
    try:
        return ipaddress.ip_address(text.split("%", 1)[0].strip("[]"))
    except ValueError:  # an FC WWN pair, a host name
        return None


def holders_of(address: Any, addresses: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The interfaces holding ``address`` itself."""
    wanted = _ip(address)
    if wanted is None:
        return []
    return sorted(n for n, found in addresses.items() if any(_ip(a.get("address")) == wanted for a in found))


def subnet_holders(target: Any, addresses: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """Interface → its address whose subnet holds ``target`` (host-scope addresses left out)."""
    wanted = _ip(target)
    found: dict[str, str] = {}
    if wanted is None:
        return found
    for name, entries in sorted(addresses.items()):
        for entry in entries:
            if entry.get("scope") == "host" or num(entry.get("prefixlen")) is None:
                continue
            try:
                address = str(entry["address"]).split("%", 1)[0]
                network = ipaddress.ip_interface(f"{address}/{entry['prefixlen']}").network
            except (ValueError, TypeError, AttributeError):
                continue
            if wanted.version == network.version and wanted in network:
                found.setdefault(name, str(entry["address"]))
    return found


# --- controllers ---------------------------------------------------------------------------------


def _controller(
    raw: dict[str, Any],
    addresses: dict[str, list[dict[str, Any]]],
    nics: dict[str, dict[str, Any]],
    nqns: dict[str, str],
) -> dict[str, Any]:
    netdev, basis, source, candidates = _carrier(raw, addresses)
    nic = nics.get(netdev or "", {})
    return {
        "name": raw.get("name"),
        "subsystem": raw.get("subsystem"),
        "subsysnqn": nqns.get(str(raw.get("name"))),
        "transport": raw.get("transport"),
        "state": raw.get("state"),
        "traddr": raw.get("traddr"),
        "trsvcid": raw.get("trsvcid"),
        "netdev": netdev,
        "basis": basis,
        "source_address": source,
        "candidates": candidates,
        "nic_bdf": nic.get("bdf"),
        "rdma_device": nic.get("rdma_device"),
        "src": raw.get("src"),
    }


def _carrier(
    raw: dict[str, Any], addresses: dict[str, list[dict[str, Any]]]
) -> tuple[str | None, str | None, str | None, list[str]]:
    """(netdev, basis, source address, tied candidates) of one controller."""
    scoped = str(raw.get("traddr") or "").partition("%")[2]  # fe80::1%ens1np0 names its interface
    if txt(raw.get("host_iface")) or scoped:
        return str(raw.get("host_iface") or scoped), "host_iface", txt(raw.get("src_addr")), []
    for key in ("src_addr", "host_traddr"):
        holders = holders_of(raw.get(key), addresses)
        if len(holders) == 1:
            return holders[0], key, str(raw[key]), []
    reaching = subnet_holders(raw.get("traddr"), addresses)
    if len(reaching) == 1:
        (name, address), *_ = reaching.items()
        return name, "subnet", address, []
    return None, None, None, sorted(reaching)


# --- GPUs ----------------------------------------------------------------------------------------


def _pair_of(pairs: list[dict[str, Any]], gpu: str, bdf: Any, names: set[Any]) -> dict[str, Any] | None:
    for pair in pairs:
        if pair.get("gpu") == gpu and ((bdf and pair.get("other_bdf") == bdf) or pair.get("other") in names):
            return pair
    return None


def _numa_pair(gpu: str, placed: dict[str, Any] | None, controller: dict[str, Any]) -> dict[str, Any] | None:
    """GPU × an RDMA controller placed by its NUMA node only (no NIC placed): across sockets, or
    on the GPU's node (its switch unknown: never counted as far)."""
    node, gpu_node = controller.get("numa_node"), (placed or {}).get("numa_node")
    if not isinstance(num(gpu_node), int) or not isinstance(node, int):
        return None
    what = f"{controller.get('rdma_device') or controller['name']} (NUMA node {node}, the controller's)"
    same = node == gpu_node
    return {
        "gpu": gpu,
        "gpu_bdf": (placed or {}).get("bdf"),
        "relation": "same_numa_node" if same else "cross_socket",
        "rank": 2 if same else 4,  # the same node: below NODE (never far), its switch unknown
        "label": "NODE or closer" if same else "SYS",
        "numa_aligned": same,
        "basis": "numa_node",
        "says": f"{gpu} (NUMA node {gpu_node}) ↔ {what}: "
        + ("on the same socket" if same else "across CPU sockets"),
    }


def _gpu_paths(
    controllers: list[dict[str, Any]],
    pairs: list[dict[str, Any]],
    addresses: dict[str, list[dict[str, Any]]],
    nics: dict[str, dict[str, Any]],
    gpu_numa: dict[str, Any],
) -> list[dict[str, Any]]:
    by_subsystem: dict[str, list[dict[str, Any]]] = {}
    for controller in controllers:
        if controller["subsystem"]:
            by_subsystem.setdefault(str(controller["subsystem"]), []).append(controller)
    gpus = list(dict.fromkeys([*(str(p.get("gpu")) for p in pairs), *gpu_numa]))
    found = []
    for subsystem, members in sorted(by_subsystem.items()):
        live = [c for c in members if c["state"] == "live"]
        for gpu in gpus:
            placed = []
            for c in live:
                names = {c["rdma_device"], c["netdev"]} - {None}
                pair = _pair_of(pairs, gpu, c["nic_bdf"], names) if c["netdev"] else None
                if pair := pair or _numa_pair(gpu, gpu_numa.get(gpu), c):
                    placed.append((pair, c))
            if not placed:
                continue
            best, controller = min(placed, key=lambda pc: num(pc[0].get("rank")) or 0)
            found.append(
                {
                    "gpu": gpu,
                    "gpu_bdf": best.get("gpu_bdf"),
                    "subsystem": subsystem,
                    "subsysnqn": controller["subsysnqn"],
                    "transport": controller["transport"],
                    "best": best,
                    "controller": controller["name"],
                    "closer_nics": _closer_nics(gpu, best, members, pairs, addresses, nics),
                    "src": controller["src"],
                }
            )
    return found


def _closer_nics(
    gpu: str,
    best: dict[str, Any],
    members: list[dict[str, Any]],
    pairs: list[dict[str, Any]],
    addresses: dict[str, list[dict[str, Any]]],
    nics: dict[str, dict[str, Any]],
) -> list[dict[str, Any]]:
    """NICs closer to ``gpu`` than its best live path that reach one of the subsystem's portals
    (those of every controller, live or not: a rail whose path is down still has its portal)."""
    used = {c["netdev"] for c in members if c["state"] == "live"}
    portals = {(c["traddr"], c["trsvcid"]) for c in members if c["traddr"]}
    found = []
    for traddr, trsvcid in sorted(portals, key=str):
        for netdev, address in subnet_holders(traddr, addresses).items():
            nic = nics.get(netdev, {})
            pair = _pair_of(pairs, gpu, nic.get("bdf"), {nic.get("rdma_device"), netdev} - {None})
            if netdev in used or pair is None or (num(pair.get("rank")) or 0) >= (num(best.get("rank")) or 0):
                continue
            if not any(f["netdev"] == netdev for f in found):
                found.append(
                    {
                        "netdev": netdev,
                        "address": address,
                        "traddr": traddr,
                        "trsvcid": trsvcid,
                        "relation": pair.get("relation"),
                        "label": pair.get("label"),
                        "says": pair.get("says"),
                    }
                )
    return sorted(found, key=lambda f: str(f["netdev"]))
