"""Which NVMe drive and NIC is each GPU's nearest, and the NUMA nodes a paste leaves out.

Part of ``derived.topology`` (topology.py places the devices and pairs them): ``nearest`` picks
a GPU's best pair of a kind by relation, then NUMA node, then what the device is (a data drive
over a boot drive, an RDMA-capable NIC over another) and names the ties the sources cannot
break; ``infer_numa`` completes ``numa_node`` from single-node hosts, ``nvidia-smi topo -m``
and the host bridge, saying where each came from (``numa_source``).
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.facts.derived.access import items, num, obj, ok_section, txt
from gdsdoctor.facts.derived.core import SYSTEM_MOUNTPOINTS
from gdsdoctor.patterns import lazy_compile


def nearest(
    pairs: list[dict[str, Any]], kind: str, devices: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any] | None:
    """The best pair of that kind, and the devices the sources cannot tell apart from it."""
    mine = [p for p in pairs if p["other_kind"] == kind]
    if not mine:
        return None
    keys = {id(p): preference(p, (devices or {}).get(str(p.get("other_bdf")))) for p in mine}
    best = min(mine, key=lambda p: keys[id(p)])
    ties = {str(p["other"]) for p in mine if keys[id(p)] == keys[id(best)] and p["other"] != best["other"]}
    return {**best, "undecided_between": sorted(ties)}


NUMA_PREFERENCE = {True: 0, None: 1, False: 2}
_RDMA_NAME = lazy_compile(r"(?i)Mellanox|ConnectX|BlueField|InfiniBand|Infiniband")


def preference(pair: dict[str, Any], other: dict[str, Any] | None) -> tuple[int, int, int, int]:
    """Sort key of a GPU's pairs: relation, same NUMA node, data drive, RDMA-capable NIC."""
    aligned = pair.get("numa_aligned")
    role = rdma = 1
    if other is not None and other["kind"] == "nvme":
        role = drive_role(other)
    if other is not None and other["kind"] == "nic" and rdma_capable(other):
        rdma = 0
    return (pair["rank"], NUMA_PREFERENCE.get(aligned, 1), role, rdma)


def drive_role(drive: dict[str, Any]) -> int:
    """0 holds a data mount, 2 holds only the root or system trees, 1 unknown or unmounted."""
    points = [str(p) for ns in drive.get("namespaces") or [] for p in ns.get("mountpoints") or []]
    system = {
        p for p in points if p == "/" or any(p == t or p.startswith(t + "/") for t in SYSTEM_MOUNTPOINTS)
    }
    if set(points) - system:
        return 0
    return 2 if system else 1


def infer_numa(facts: dict[str, Any], devices: dict[str, dict[str, Any]]) -> None:
    """Fill the NUMA nodes a paste leaves out (``lspci -tv`` has none), saying where each came from."""
    for found in devices.values():
        found["numa_source"] = "sysfs_or_lspci" if found["numa_node"] is not None else None
    nodes = items(ok_section(facts, "numa"), "nodes")
    if len(nodes) == 1 and isinstance(num(nodes[0].get("node")), int):
        for found in devices.values():
            if found["numa_node"] is None:
                found["numa_node"], found["numa_source"] = nodes[0]["node"], "single_node"
    for bdf, node in gpu_numa_from_topo(facts, devices).items():
        found = devices.get(bdf)
        if found is not None and found["numa_node"] is None:
            found["numa_node"], found["numa_source"] = node, "nvidia_topo"
    for bdf, node in nic_numa_from_topo(facts, devices).items():
        if devices[bdf]["numa_node"] is None:
            devices[bdf]["numa_node"], devices[bdf]["numa_source"] = node, "nvidia_topo"
    by_root: dict[str, set[int]] = {}
    for found in devices.values():
        if found["numa_node"] is not None and found["root_complex"]:
            by_root.setdefault(found["root_complex"], set()).add(found["numa_node"])
    for found in devices.values():
        known = by_root.get(str(found["root_complex"]))
        if found["numa_node"] is None and known and len(known) == 1:
            found["numa_node"], found["numa_source"] = next(iter(known)), "root_complex"


SAME_NODE = ("PIX", "PXB", "PHB", "NODE")  # topo -m relations that stay within one NUMA node


def nic_numa_from_topo(facts: dict[str, Any], devices: dict[str, dict[str, Any]]) -> dict[str, int]:
    """NIC bus id → NUMA node: a NIC column of ``topo -m`` (an RDMA device, numbered in PCI order)
    that is NODE or closer to GPUs of one NUMA node is on that node. Matched by order only when the
    count of RDMA-capable NICs placed equals the count of NIC columns."""
    topo = ok_section(facts, "nvidia_topo")
    nics = sorted(bdf for bdf, d in devices.items() if d["kind"] == "nic" and rdma_capable(d))
    columns = [txt(n.get("name")) for n in items(topo, "nics")]
    if not nics or len(nics) != len(columns):
        return {}
    gpu_node = {txt(g.get("name")): num(g.get("numa_affinity")) for g in items(topo, "gpus")}
    found = {}
    for bdf, column in zip(nics, columns, strict=True):
        nodes = {
            gpu_node.get(txt(g.get("name")))
            for g in items(topo, "gpus")
            if obj(g.get("links")).get(column) in SAME_NODE
        }
        if len(nodes) == 1 and isinstance(node := next(iter(nodes)), int):
            found[bdf] = node
    return found


def rdma_capable(found: dict[str, Any]) -> bool:
    return found.get("rdma") is True or bool(_RDMA_NAME.search(str(found.get("lspci_name") or "")))


def gpu_numa_from_topo(facts: dict[str, Any], devices: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Bus id → NUMA affinity: ``nvidia-smi topo -m`` names GPUs by index, the nvidia-smi GPU list
    (``-q`` or the table) gives their bus ids in index order."""
    bus_ids = [txt(g.get("bus_id")) for g in items(ok_section(facts, "nvidia_smi"), "gpus")]
    if not bus_ids:
        # nvidia-smi numbers GPUs in PCI bus order: without its list, the placed GPUs in that order
        placed = sorted(d["bdf"] for d in devices.values() if d["kind"] == "gpu")
        bus_ids = placed if len(placed) == len(items(ok_section(facts, "nvidia_topo"), "gpus")) else []
    found = {}
    for gpu in items(ok_section(facts, "nvidia_topo"), "gpus"):
        index, node = num(gpu.get("index")), num(gpu.get("numa_affinity"))
        known = isinstance(index, int) and isinstance(node, int) and 0 <= index < len(bus_ids)
        if known and bus_ids[index]:
            found[str(bus_ids[index])] = node
    return found
