"""Derived facts for the topology domain: where GPUs, NVMe drives and NICs sit relative to each other,
their PCIe links, ACS on the paths between them, the IOMMU mode, RoCE settings and measured throughput
against the path's line rate.

Placement comes from the first source that has it: sysfs (``pci``: resolved device paths), then
``lspci -tv`` (``lspci_tree``), then ``lspci -vvv`` bridge bus numbers (``lspci``), then
``nvidia-smi topo -m`` (``nvidia_topo``: relations only, no bridges). ``derive`` returns
``derived.topology`` (the IOMMU, RDMA and throughput parts are computed in topology_io.py, each GPU's
nearest device and the NUMA nodes of pastes in topology_nearest.py):

- ``source``: which of ``pci``, ``lspci_tree``, ``lspci``, ``nvme_sysfs`` (a /sys dump with only the
  NVMe classes: drives placed by their address), ``nvidia_topo`` placed the devices (None). NVMe controllers
  of the NVMe sysfs tree are added to any placement that misses them, with their ``subsystem``.
- ``devices``: GPUs, NVMe controllers, NICs and bridges ``{bdf, kind, name, numa_node,
  root_complex, upstream, link: {speed_gts, max_speed_gts, width, max_width}, acs_redirect, namespaces,
  src}``; an NVMe controller of the NVMe sysfs tree also has its ``model``.
- ``pairs``: every GPU × NVMe/NIC ``{gpu, gpu_bdf, other, other_bdf, other_kind, relation, rank,
  label, numa_aligned, path_bridges, src}``; ``relation`` is ``switch`` (PIX/PXB), ``root_port``,
  ``root_complex`` (PHB), ``cross_root_complex`` (NODE: another host bridge of the same socket) or
  ``cross_socket`` (SYS), ``rank`` 0..4 in that order.
- ``gpus``: per GPU ``{gpu, bdf, numa_node, nearest_nvme, nearest_nic, src}``, each nearest being the
  best pair (or None when there is no such device): the closest relation, then the same NUMA node, then (NVMe)
  a drive holding data rather than ``/`` or ``/boot``, then (NIC) an RDMA-capable one (RDMA device, or a
  ConnectX/BlueField by name); ``undecided_between`` lists the other devices that tie with it on all of
  those (the sources cannot tell them apart), empty when the choice is clear.
- ``devices[].numa_node`` is completed for pastes without it (``numa_source``): ``sysfs``/``lspci``
  as read; ``single_node`` (numactl/sysfs show one NUMA node); ``nvidia_topo`` (a GPU's NUMA affinity in
  ``nvidia-smi topo -m``, GPU n ↔ bus id by the nvidia-smi GPU list in index order, else by the placed
  GPUs in PCI bus order, the order nvidia-smi numbers them in; a NIC column NODE-or-closer to GPUs of one
  node, NIC n ↔ the n-th RDMA-capable NIC in bus order when the counts match); ``root_complex``
  (another device under the same host bridge has one: a host bridge belongs to one socket).
- ``counts``: ``{gpus, nvme, nics}`` placed.
- ``links``: endpoints whose link runs below what both ends support ``{bdf, kind, name, speed_gts,
  expected_speed_gts, width, expected_width, width_reduced, speed_reduced, degraded, idle_downclock,
  link_down, says, src}``. A GPU that only runs slower (not narrower) is downclocked at idle, not degraded.
- ``gpu_link_capped``: GPUs whose host slot caps the link (nvidia-smi ``Host Max`` < ``Device Max``).
- ``acs``: ``{readable, redirect_bridges: [...], on_path_bridges: [{bdf, pairs, src}],
  path_known, unattributed_redirect: [...]}``; redirect = ReqRedir+, CmpltRedir+ or EgressCtrl+.
- ``iommu``: ``{mode: translated|passthrough|disabled|None, votes: [{source, mode, says, src}]}``.
- ``arch``: ``x86_64``/``aarch64``/None.
- ``roce_ports``: active Ethernet RDMA ports ``{device, port, active_mtu, netdev, netdev_mtu,
  mtu_low, src}``; ``rdma_slow_ports``: active ports slower than the fastest active port of the same
  HCA type.
- ``roce_qos``: ``{rdma_dscp, rdma_priority, pfc_priorities, pfc_on_rdma_priority, ecn_on_rdma_priority,
  pfc_vector (--pfc with the RDMA priority added), src}`` from ``mlnx_qos`` (DSCP 26 assumed when not shown).
- ``expected_throughput``: the read and write ceilings of the checkpoint path (topology_io.py);
  ``throughput``: each measured rate against the ceiling of its direction ``{tool, what, direction,
  measured_bytes_per_s, expected_bytes_per_s, ceiling, ceiling_basis, ratio, level, src}``.
- ``gds_vs_cpu``: GDS runs slower than the CPU path on the same benchmark ``{tool, io_type,
  gds_bytes_per_s, cpu_bytes_per_s, ratio, src}`` (ratio < 0.9 only).
"""

from __future__ import annotations

import re
from typing import Any

from gdsdoctor.facts.derived.access import items, num, obj, ok_section, strs, txt
from gdsdoctor.facts.derived.topology_io import (
    arch,
    gds_vs_cpu,
    iommu_state,
    nic_pcie_bottleneck,
    rdma_slow_ports,
    roce_ports,
    roce_qos,
    smaller,
    throughput,
)
from gdsdoctor.facts.derived.topology_nearest import infer_numa, nearest
from gdsdoctor.patterns import lazy_compile

RELATIONS = ("switch", "root_port", "root_complex", "cross_root_complex", "cross_socket")
RANK = {name: rank for rank, name in enumerate(RELATIONS)}
LABEL = {"switch": "PXB", "root_port": "PXB", "root_complex": "PHB", "cross_root_complex": "NODE",
         "cross_socket": "SYS"}  # fmt: skip
FROM_TOPO = {"PIX": "switch", "PXB": "switch", "PHB": "root_complex", "NODE": "cross_root_complex",
             "SYS": "cross_socket", "SOC": "cross_socket"}  # fmt: skip
ENDPOINTS = ("gpu", "nvme", "nic")
KIND_LABEL = {"gpu": "GPU", "nvme": "NVMe", "nic": "NIC"}
_NAMESPACE = lazy_compile(r"^(nvme\d+)n\d+$")


def derive(facts: dict[str, Any], derived: dict[str, Any]) -> dict[str, Any]:
    source, devices = placed_devices(facts)
    add_names(facts, devices)
    mark_rdma(facts, devices)
    infer_numa(facts, devices)
    pairs = placement_pairs(devices) if source in ("pci", "lspci_tree", "lspci", "nvme_sysfs") else []
    if not pairs and (from_topo := topo_pairs(facts)):  # nvidia-smi topo -m: the second source
        source, pairs = "nvidia_topo", from_topo
    gpus = gpu_summaries(facts, {} if source == "nvidia_topo" else devices, pairs)
    links = link_states(facts, devices)
    return {
        "source": source,
        "devices": list(devices.values()),
        "pairs": pairs,
        "gpus": gpus,
        "counts": counts(devices, facts),
        "links": links,
        "gpu_link_capped": gpu_link_capped(facts),
        "acs": acs_state(facts, devices, pairs),
        "iommu": iommu_state(facts),
        "arch": arch(facts),
        "roce_ports": roce_ports(facts),
        "rdma_slow_ports": rdma_slow_ports(facts),
        "roce_qos": roce_qos(facts),
        "nic_pcie_bottleneck": nic_pcie_bottleneck(facts, devices),
        **aer_latched(facts),
        **throughput(facts, derived, devices),
        "gds_vs_cpu": gds_vs_cpu(facts),
    }


# --- placement ------------------------------------------------------------------------------------


def placed_devices(facts: dict[str, Any]) -> tuple[str | None, dict[str, dict[str, Any]]]:
    """GPUs, NVMe, NICs and bridges by BDF, from the best source that places them."""
    listed = items(ok_section(facts, "lspci"), "devices")
    lspci = {d["bdf"]: d for d in listed if isinstance(d.get("bdf"), str)}
    sysfs = [d for d in items(ok_section(facts, "pci"), "devices") if isinstance(d.get("bdf"), str)]
    tree = [d for d in items(ok_section(facts, "lspci_tree"), "devices") if isinstance(d.get("bdf"), str)]
    if sysfs:
        source, devices = "pci", {d["bdf"]: from_sysfs(d) for d in sysfs}
    elif tree:
        source, devices = "lspci_tree", {d["bdf"]: from_tree(d, lspci.get(d["bdf"])) for d in tree}
    elif any(d.get("secondary_bus") for d in lspci.values()):
        source, devices = "lspci", from_lspci_buses(lspci)
    elif lspci:
        source = None
        devices = {bdf: from_lspci(d, None, []) for bdf, d in lspci.items()}
    elif nvme_controllers(facts):
        source, devices = "nvme_sysfs", {}
    else:
        return ("nvidia_topo" if ok_section(facts, "nvidia_topo") else None), {}
    add_nvme_controllers(facts, devices)
    for bdf, device in devices.items():
        enrich_from_lspci(device, lspci.get(bdf))
    kept = {bdf: d for bdf, d in devices.items() if d["kind"] in (*ENDPOINTS, "bridge")}
    return source, kept


def nvme_controllers(facts: dict[str, Any]) -> list[dict[str, Any]]:
    """PCIe NVMe controllers of the NVMe sysfs tree with their PCI address."""
    controllers = items(ok_section(facts, "nvme_sysfs"), "controllers")
    return [c for c in controllers if c.get("fabrics") is False and txt(c.get("pci_bdf"))]


def add_nvme_controllers(facts: dict[str, Any], devices: dict[str, dict[str, Any]]) -> None:
    """NVMe controllers the PCI sources did not place (a /sys dump holding only the NVMe classes):
    placed by their address (the host bridge of their bus), with the NUMA node sysfs gives."""
    for controller in nvme_controllers(facts):
        bdf = str(controller["pci_bdf"])
        if bdf not in devices:
            numa = num(controller.get("numa_node"))
            devices[bdf] = device(bdf, "nvme", numa if numa is None or numa >= 0 else None,
                                  f"pci{bdf[:7]}", [], controller.get("src"))  # fmt: skip
        devices[bdf]["subsystem"] = txt(controller.get("subsystem"))


def link_of(speed: Any, max_speed: Any, width: Any, max_width: Any) -> dict[str, Any]:
    return {"speed_gts": speed, "max_speed_gts": max_speed, "width": width, "max_width": max_width}


def device(
    bdf: str, kind: str, numa: Any, root_complex: Any, upstream: list[str], src: Any
) -> dict[str, Any]:
    return {
        "bdf": bdf, "kind": kind, "name": None, "numa_node": numa if isinstance(num(numa), int) else None,
        "root_complex": txt(root_complex), "upstream": upstream, "link": link_of(None, None, None, None),
        "acs_redirect": None, "acs_ctl": None, "namespaces": [], "netdevs": [], "src": src,
    }  # fmt: skip


def from_sysfs(raw: dict[str, Any]) -> dict[str, Any]:
    found = device(raw["bdf"], str(raw.get("kind")), raw.get("numa_node"), raw.get("root_complex"),
                   strs(raw.get("upstream")), raw.get("src"))  # fmt: skip
    found["link"] = link_of(num(raw.get("current_link_speed_gts")), num(raw.get("max_link_speed_gts")),
                            num(raw.get("current_link_width")), num(raw.get("max_link_width")))  # fmt: skip
    return found


def tree_kind(name: Any) -> str:
    text = str(name or "")
    if "NVMe" in text or "Non-Volatile memory" in text:
        return "nvme"
    if any(word in text for word in ("Mellanox", "ConnectX", "Ethernet", "Infiniband", "InfiniBand")):
        return "nic"
    if text.startswith("NVIDIA") and not any(w in text for w in ("Audio", "USB", "Bridge", "Switch")):
        return "gpu"
    return "other" if name else "bridge"


def from_tree(raw: dict[str, Any], lspci: dict[str, Any] | None) -> dict[str, Any]:
    kind = str(lspci.get("kind")) if lspci else tree_kind(txt(raw.get("name")))
    upstream = strs(raw.get("upstream"))
    root = upstream[0] if upstream else raw["bdf"]
    found = device(raw["bdf"], kind, None, f"pci{root[:7]}", upstream, raw.get("src"))
    found["lspci_name"] = txt(raw.get("name"))
    return found


def from_lspci(raw: dict[str, Any], root_complex: str | None, upstream: list[str]) -> dict[str, Any]:
    return device(
        raw["bdf"], str(raw.get("kind")), raw.get("numa_node"), root_complex, upstream, raw.get("src")
    )


def from_lspci_buses(lspci: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Upstream chains from the bridges' ``Bus: secondary=`` numbers (a device on bus B sits under the
    bridge whose secondary bus is B)."""
    parent_of_bus = {d["secondary_bus"]: bdf for bdf, d in lspci.items() if txt(d.get("secondary_bus"))}
    devices = {}
    for bdf, raw in lspci.items():
        chain: list[str] = []
        parent = parent_of_bus.get(bdf[:7])
        while parent is not None and parent not in chain and parent != bdf:
            chain.insert(0, parent)
            parent = parent_of_bus.get(parent[:7])
        root = chain[0] if chain else bdf
        devices[bdf] = from_lspci(raw, f"pci{root[:7]}", chain)
    return devices


def enrich_from_lspci(found: dict[str, Any], raw: dict[str, Any] | None) -> None:
    """ACS, NUMA node and (where sysfs did not give it) the link, from ``lspci -vvv``."""
    if raw is None:
        return
    numa = raw.get("numa_node")
    if found["numa_node"] is None and isinstance(numa, int) and not isinstance(numa, bool):
        found["numa_node"] = numa if numa >= 0 else None
    sta, cap = obj(raw.get("lnk_sta")), obj(raw.get("lnk_cap"))
    if found["link"]["speed_gts"] is None and (sta or cap):
        found["link"] = link_of(
            num(sta.get("speed_gts")), num(cap.get("speed_gts")), num(sta.get("width")), num(cap.get("width"))
        )
        found["link_src"] = obj(raw.get("srcs")).get("LnkSta")
    acs = raw.get("acs_ctl")
    if isinstance(acs, dict):
        found["acs_ctl"] = acs
        found["acs_redirect"] = bool(acs.get("req_redir") or acs.get("cmplt_redir") or acs.get("egress_ctrl"))
        found["acs_src"] = obj(raw.get("srcs")).get("ACSCtl")
    found["lspci_name"] = txt(raw.get("name"))


def add_names(facts: dict[str, Any], devices: dict[str, dict[str, Any]]) -> None:
    """OS names: NVMe controller (``nvme0``) with its namespaces and mounts, RDMA device and netdevs."""
    for controller in items(ok_section(facts, "nvme_sysfs"), "controllers"):
        found = devices.get(str(controller.get("pci_bdf")))
        if found is not None:
            found["name"], found["model"] = txt(controller.get("name")), txt(controller.get("model"))
    for ib in items(ok_section(facts, "infiniband"), "devices"):
        found = devices.get(str(ib.get("bdf")))
        if found is not None:
            found["name"] = txt(ib.get("name"))
    for netdev in items(ok_section(facts, "netdev"), "interfaces"):
        found = devices.get(str(netdev.get("bdf")))
        if found is not None and txt(netdev.get("name")):
            found["netdevs"].append(netdev["name"])
            found["name"] = found["name"] or netdev["name"]
    namespaces = namespaces_by_controller(facts)
    for found in devices.values():
        found["namespaces"] = namespaces.get(found["name"], []) if found["kind"] == "nvme" else []


def mark_rdma(facts: dict[str, Any], devices: dict[str, dict[str, Any]]) -> None:
    """Which NICs can carry GPUDirect RDMA: those with an RDMA device. Unknown (None) when the RDMA
    devices were not read or do not say their PCI address (a pasted ``ibstat``)."""
    section = facts.get("infiniband") if isinstance(facts.get("infiniband"), dict) else {}
    ib = items(ok_section(facts, "infiniband"), "devices")
    bdfs = {txt(d.get("bdf")) for d in ib} - {None}
    if section.get("status") == "missing" or (section.get("status") == "ok" and not ib):
        known: bool | None = True  # no RDMA stack, or no RDMA device on this host
    else:
        known = True if bdfs else None
    for found in devices.values():
        if found["kind"] == "nic":
            found["rdma"] = (found["bdf"] in bdfs) if known else None


def namespaces_by_controller(facts: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """``nvme0`` → [{name: nvme0n1, size_bytes, mountpoints}], from lsblk and the NVMe sysfs tree; a
    namespace's mountpoints include those of its partitions and of md/dm devices built on it."""
    lsblk = items(ok_section(facts, "lsblk"), "devices")
    by_name = {str(d.get("name")): d for d in lsblk}
    names = [str(d.get("name")) for d in lsblk]
    for controller in items(ok_section(facts, "nvme_sysfs"), "controllers"):
        names += strs(controller.get("namespaces"))
    mounts = items(ok_section(facts, "mounts"), "mounts")
    found: dict[str, list[dict[str, Any]]] = {}
    for name in dict.fromkeys(names):
        match = _NAMESPACE.match(name)
        if not match:
            continue
        points = mountpoints_below(by_name[name], by_name, set()) if name in by_name else []
        points += [
            m["mountpoint"]
            for m in mounts
            if on_namespace(m.get("device"), name) and txt(m.get("mountpoint"))
        ]
        size = num(by_name.get(name, {}).get("size_bytes")) or sysfs_sizes(facts).get(name)
        found.setdefault(match[1], []).append(
            {"name": name, "size_bytes": size, "mountpoints": sorted(set(points))}
        )
    add_multipath_heads(facts, found)
    return found


def sysfs_sizes(facts: dict[str, Any]) -> dict[str, Any]:
    return {
        str(b.get("name")): num(b.get("size_bytes")) for b in items(ok_section(facts, "nvme_sysfs"), "block")
    }


def add_multipath_heads(facts: dict[str, Any], found: dict[str, list[dict[str, Any]]]) -> None:
    """A namespace reached through several controllers (multipath: ``nvme1c2n1`` → head
    ``nvme1n1``) belongs to each of them; its entry names the path (``via``)."""
    sizes = sysfs_sizes(facts)
    for path in items(ok_section(facts, "nvme_sysfs"), "paths"):
        controller, head = txt(path.get("controller")), txt(path.get("head"))
        if controller and head and not any(ns["name"] == head for ns in found.get(controller, [])):
            below = [ns for entries in found.values() for ns in entries if ns["name"] == head]
            points = below[0]["mountpoints"] if below else []
            entry = {"name": head, "size_bytes": sizes.get(head), "mountpoints": points}
            found.setdefault(controller, []).append({**entry, "via": txt(path.get("name"))})


def on_namespace(device: Any, namespace: str) -> bool:
    """``/dev/nvme0n1`` or a partition of it (``/dev/nvme0n1p2``)."""
    return isinstance(device, str) and bool(re.fullmatch(rf"/dev/{re.escape(namespace)}(p\d+)?", device))


def mountpoints_below(entry: dict[str, Any], by_name: dict[str, dict[str, Any]], seen: set[str]) -> list[str]:
    name = str(entry.get("name"))
    if name in seen:
        return []
    seen.add(name)
    points = [p for p in strs(entry.get("mountpoints")) if p.startswith("/")]
    for child in strs(entry.get("children")):
        if child in by_name:
            points += mountpoints_below(by_name[child], by_name, seen)
    return points


# --- relations ------------------------------------------------------------------------------------


def relation(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    """How traffic between two placed devices travels, best (switch) to worst (cross socket)."""
    common = [bridge for bridge in a["upstream"] if bridge in b["upstream"]]
    if any(bridge != a["upstream"][0] for bridge in common):
        return "switch"
    if common:
        return "root_port"
    if a["root_complex"] is None or b["root_complex"] is None:
        return None
    if a["root_complex"] == b["root_complex"]:
        return "root_complex"
    if a["numa_node"] is not None and b["numa_node"] is not None and a["numa_node"] != b["numa_node"]:
        return "cross_socket"
    return "cross_root_complex"


WORDS = {"switch": "under the same PCIe switch", "root_port": "under the same root port",
         "root_complex": "through the root complex", "cross_root_complex": "across host bridges",
         "cross_socket": "across CPU sockets"}  # fmt: skip


def pair_says(gpu: str, other: str, found: str, label_text: Any) -> str:
    return f"{gpu} ↔ {other}: {WORDS[found]} ({label_text})"


def relation_label(found: str, a: dict[str, Any], b: dict[str, Any]) -> str:
    """nvidia-smi's name for the relation; across host bridges: NODE or SYS, unknown without NUMA nodes;
    under one switch: PIX when each hangs off one of its downstream ports, PXB through more bridges."""
    if found == "switch":
        common = set(a["upstream"]) & set(b["upstream"])
        below = [x for x in a["upstream"] + b["upstream"] if x not in common]
        return "PIX" if len(below) <= 2 else "PXB"
    if found == "cross_root_complex" and (a["numa_node"] is None or b["numa_node"] is None):
        return "NODE or SYS"
    return LABEL[found]


def label(bdf: str | None, name: Any, kind: str) -> str:
    if name:
        return str(name)
    return f"{KIND_LABEL.get(kind, kind)} {bdf}"


def placement_pairs(devices: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    gpus = [d for d in devices.values() if d["kind"] == "gpu"]
    # a NIC without RDMA (virtio, management Ethernet) carries no GPUDirect traffic
    others = [
        d
        for d in devices.values()
        if d["kind"] == "nvme" or (d["kind"] == "nic" and d.get("rdma") is not False)
    ]
    pairs = []
    for gpu in gpus:
        for other in others:
            found = relation(gpu, other)
            if found is None:
                continue
            common = set(gpu["upstream"]) & set(other["upstream"])
            path = [b for b in gpu["upstream"] + other["upstream"] if b not in common]
            aligned = None
            if gpu["numa_node"] is not None and other["numa_node"] is not None:
                aligned = gpu["numa_node"] == other["numa_node"]
            pairs.append(
                {"gpu": label(gpu["bdf"], None, "gpu"), "gpu_bdf": gpu["bdf"],
                 "other": label(other["bdf"], other["name"], other["kind"]), "other_bdf": other["bdf"],
                 "other_kind": other["kind"], "relation": found, "rank": RANK[found],
                 "label": relation_label(found, gpu, other), "numa_aligned": aligned,
                 "path_bridges": path, "src": other["src"]}
            )  # fmt: skip
            pairs[-1]["says"] = pair_says(pairs[-1]["gpu"], pairs[-1]["other"], found, pairs[-1]["label"])
    return pairs


def topo_pairs(facts: dict[str, Any]) -> list[dict[str, Any]]:
    """Relations from ``nvidia-smi topo -m`` when nothing places the devices on the bus."""
    topo = ok_section(facts, "nvidia_topo")
    numa = {txt(g.get("name")): num(g.get("numa_affinity")) for g in items(topo, "gpus")}
    pairs = []
    for key, kind in (("gpu_nvme", "nvme"), ("gpu_nic", "nic")):
        for pair in items(topo, key):
            found = FROM_TOPO.get(str(pair.get("relation")))
            if found is None:
                continue
            pairs.append(
                {"gpu": str(pair.get("gpu")), "gpu_bdf": None,
                 "other": txt(pair.get("device")) or str(pair.get(kind)),
                 "other_bdf": None, "other_kind": kind, "relation": found, "rank": RANK[found],
                 "label": str(pair.get("relation")),
                 "numa_aligned": False if found == "cross_socket" else None,
                 "gpu_numa_node": numa.get(txt(pair.get("gpu"))), "path_bridges": [], "src": pair.get("src")}
            )  # fmt: skip
            pairs[-1]["says"] = pair_says(
                str(pairs[-1]["gpu"]), str(pairs[-1]["other"]), found, pair.get("relation")
            )
    return pairs


def gpu_summaries(
    facts: dict[str, Any], devices: dict[str, dict[str, Any]], pairs: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    by_gpu: dict[Any, list[dict[str, Any]]] = {}  # one pass: a scan of every pair per GPU was quadratic
    for pair in pairs:
        by_gpu.setdefault(pair["gpu"], []).append(pair)
    placed = {label(d["bdf"], None, "gpu"): d for d in devices.values() if d["kind"] == "gpu"}
    topo = {txt(g.get("name")): g for g in items(ok_section(facts, "nvidia_topo"), "gpus")}
    names = sorted(by_gpu, key=str) + [name for name in placed if name not in by_gpu]
    summaries = []
    for name in names:
        gpu = placed.get(name) or {}
        mine = by_gpu.get(name, [])
        summaries.append(
            {"gpu": name, "bdf": gpu.get("bdf"),
             "numa_node": gpu.get("numa_node", num((topo.get(name) or {}).get("numa_affinity"))),
             "nearest_nvme": nearest(mine, "nvme", devices), "nearest_nic": nearest(mine, "nic", devices),
             "src": gpu.get("src") or (topo.get(name) or {}).get("src")}
        )  # fmt: skip
    return summaries


def counts(devices: dict[str, dict[str, Any]], facts: dict[str, Any]) -> dict[str, int]:
    found = {kind: sum(1 for d in devices.values() if d["kind"] == kind) for kind in ENDPOINTS}
    topo = ok_section(facts, "nvidia_topo")
    if not found["gpu"] and topo:
        found = {
            "gpu": len(items(topo, "gpus")),
            "nvme": len(items(topo, "nvmes")),
            "nic": len(items(topo, "nics")),
        }
    return {"gpus": found["gpu"], "nvme": found["nvme"], "nics": found["nic"]}


# --- links ----------------------------------------------------------------------------------------


def link_states(facts: dict[str, Any], devices: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    found = [state for d in devices.values() if d["kind"] in ENDPOINTS if (state := link_state(d, devices))]
    seen = {state["bdf"] for state in found}
    for gpu in items(ok_section(facts, "nvidia_smi"), "gpus"):
        width, widest = num(gpu.get("link_width_current")), num(gpu.get("link_width_max"))
        if txt(gpu.get("bus_id")) in seen or width is None or widest is None:
            continue
        if 0 < width < widest:
            found.append(
                {"bdf": gpu.get("bus_id"), "kind": "gpu", "name": gpu.get("product_name"), "speed_gts": None,
                 "expected_speed_gts": None, "width": width, "expected_width": widest, "width_reduced": True,
                 "speed_reduced": False, "degraded": True, "idle_downclock": False, "link_down": False,
                 "says": f"GPU {gpu.get('bus_id')} runs x{width} of x{widest} (nvidia-smi -q)",
                 "src": gpu.get("src")}
            )  # fmt: skip
    return found


def link_state(found: dict[str, Any], devices: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """Current vs what both ends of the link support (the endpoint's and its parent port's maximum)."""
    link = found["link"]
    parent = devices.get(found["upstream"][-1]) if found["upstream"] else None
    parent_link = parent["link"] if parent else {}
    expected_speed = smaller(link["max_speed_gts"], parent_link.get("max_speed_gts"))
    expected_width = smaller(link["max_width"], parent_link.get("max_width"))
    speed, width = link["speed_gts"], link["width"]
    link_down = width == 0
    width_reduced = isinstance(width, int) and expected_width is not None and 0 < width < expected_width
    speed_reduced = isinstance(speed, int | float) and expected_speed is not None and speed < expected_speed
    if not (width_reduced or speed_reduced or link_down):
        return None
    idle = found["kind"] == "gpu" and speed_reduced and not width_reduced
    degraded = width_reduced or link_down or (speed_reduced and found["kind"] != "gpu")
    name = label(found["bdf"], found["name"], found["kind"])
    says = (f"{name} ({found['bdf']}): link down" if link_down else
            f"{name} ({found['bdf']}): {speed} GT/s x{width}, "
            f"both ends support {expected_speed} GT/s x{expected_width}"
            + (" (GPU idle power saving)" if idle else ""))  # fmt: skip
    return {
        "bdf": found["bdf"], "kind": found["kind"], "name": found["name"], "speed_gts": speed,
        "expected_speed_gts": expected_speed, "width": width, "expected_width": expected_width,
        "width_reduced": width_reduced, "speed_reduced": speed_reduced, "degraded": degraded,
        "idle_downclock": idle, "link_down": link_down, "says": says,
        "src": found.get("link_src") or found["src"],
    }  # fmt: skip


def gpu_link_capped(facts: dict[str, Any]) -> list[dict[str, Any]]:
    capped = []
    for gpu in items(ok_section(facts, "nvidia_smi"), "gpus"):
        host, dev = num(gpu.get("link_gen_host_max")), num(gpu.get("link_gen_device_max"))
        if host is not None and dev is not None and host < dev:
            capped.append(
                {"bdf": gpu.get("bus_id"), "host_max_gen": host, "device_max_gen": dev, "src": gpu.get("src")}
            )
    return capped


# --- AER ------------------------------------------------------------------------------------------

# Latched by routine enumeration and config-space probing rather than by a failing link: an unsupported
# request, and the advisory flag the kernel sets when it handles such a non-fatal error as correctable.
ROUTINE_AER = {"UnsupReq", "AdvNonFatalErr"}


def aer_latched(facts: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """AER error bits latched in ``lspci -vvv``: uncorrectable ones not masked, correctable ones; both
    without the routine bits."""
    found: dict[str, list[dict[str, Any]]] = {
        "aer_uncorrectable": [],
        "aer_correctable": [],
    }
    for raw in items(ok_section(facts, "lspci"), "devices"):
        srcs = obj(raw.get("srcs"))
        masked = set(strs(raw.get("aer_ue_masked")))
        ue = [b for b in strs(raw.get("aer_ue_set")) if b not in masked and b not in ROUTINE_AER]
        ce = [b for b in strs(raw.get("aer_ce_set")) if b not in ROUTINE_AER]
        if ue:
            found["aer_uncorrectable"].append({"bdf": raw.get("bdf"), "bits": ue, "src": srcs.get("UESta")})
        if ce:
            found["aer_correctable"].append({"bdf": raw.get("bdf"), "bits": ce, "src": srcs.get("CESta")})
    return found


# --- ACS ------------------------------------------------------------------------------------------


def acs_state(facts: dict[str, Any], devices: dict[str, dict[str, Any]], pairs: list[dict[str, Any]]) -> dict:
    lspci = ok_section(facts, "lspci")
    redirect = [
        {
            "bdf": d["bdf"],
            "name": d.get("lspci_name"),
            "flags": d["acs_ctl"],
            "src": d.get("acs_src") or d["src"],
        }
        for d in devices.values()
        if d["acs_redirect"]
    ]
    on_path: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        for bridge in pair["path_bridges"]:
            if devices.get(bridge, {}).get("acs_redirect"):
                entry = on_path.setdefault(
                    bridge, {"bdf": bridge, "pairs": [], "src": devices[bridge].get("acs_src")}
                )
                entry["pairs"].append(f"{pair['gpu']} <-> {pair['other']}")
    unattributed = [
        o for o in items(lspci, "unattributed_acs_ctl")
        if any(obj(o.get("flags")).get(k) for k in ("req_redir", "cmplt_redir", "egress_ctrl"))
    ]  # fmt: skip
    return {
        "readable": lspci.get("caps_readable") if lspci else None,
        "redirect_bridges": redirect,
        "on_path_bridges": [on_path[bdf] for bdf in sorted(on_path)],
        "path_known": any(p["path_bridges"] for p in pairs),
        "unattributed_redirect": unattributed,
    }
