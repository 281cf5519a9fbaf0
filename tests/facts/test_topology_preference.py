"""Nearest devices judged by NUMA node, role and RDMA, and NUMA nodes joined from pastes (issue 15)."""

from __future__ import annotations

import shutil
from pathlib import Path

from gdsdoctor.facts.derived import topology_nearest as derive_topology
from gdsdoctor.pipeline import analyze_paths

DATA = Path(__file__).resolve().parents[1] / "data"
ASUS = [  # one real ASUS ESC8000A-E12 (2 sockets, 4 GPUs, 2 ConnectX-7, an X710 10 GbE port)
    DATA / "pci" / "lspci-tv.asus-esc8000a-e12.epyc-genoa.rtx6000ada-cx7-nvme.txt",
    DATA / "gpu" / "nvidia-smi-topo-m.asus-esc8000a-e12.4gpu-4nic.txt",
    DATA / "pci" / "numactl-hardware.asus-esc8000a-e12.txt",
]


def _derived(tmp_path: Path, files: list[Path]) -> dict:
    copies = [Path(shutil.copy(f, tmp_path / f.name)) for f in files]
    return analyze_paths(copies, None).facts["derived"]["topology"]


def test_pastes_give_gpus_and_nics_their_numa_nodes(tmp_path: Path) -> None:
    devices = {d["bdf"]: d for d in _derived(tmp_path, ASUS)["devices"]}
    # topo -m: GPU0/1 on node 0, GPU2/3 on node 1 (GPU n = n-th GPU in bus order)
    assert [devices[b]["numa_node"] for b in ("0000:01:00.0", "0000:41:00.0", "0000:c1:00.0", "0000:e1:00.0")] == [
        0, 0, 1, 1,
    ]  # fmt: skip
    # NIC0/1 (mlx5_0/1) are NODE to GPU0/1, NIC2/3 to GPU2/3
    assert devices["0000:21:00.0"]["numa_node"] == 0 and devices["0000:81:00.0"]["numa_node"] == 1
    assert devices["0000:81:00.0"]["numa_source"] == "nvidia_topo"
    # the NVMe under GPU0's host bridge shares its node
    assert (devices["0000:02:00.0"]["numa_node"], devices["0000:02:00.0"]["numa_source"]) == (
        0,
        "root_complex",
    )


def test_nearest_nic_is_the_connectx_not_the_10gbe_port(tmp_path: Path) -> None:
    gpus = {g["bdf"]: g for g in _derived(tmp_path, ASUS)["gpus"]}
    for gpu in ("0000:c1:00.0", "0000:e1:00.0"):
        nic = gpus[gpu]["nearest_nic"]
        assert nic["other_bdf"].startswith("0000:81:00.")  # ConnectX-7, not X710 at 82:00.x
        assert nic["label"] == "NODE"
        assert not any("82:00" in other for other in nic["undecided_between"])


def test_near_miss_without_topo_the_numa_nodes_stay_unknown(tmp_path: Path) -> None:
    derived = _derived(tmp_path, ASUS[:1])
    gpu = next(g for g in derived["gpus"] if g["bdf"] == "0000:c1:00.0")
    assert gpu["numa_node"] is None
    assert gpu["nearest_nic"]["label"] == "NODE or SYS"
    assert gpu["nearest_nic"]["undecided_between"]  # says it cannot tell


def _drive(bdf: str, points: list[str]) -> dict:
    return {"bdf": bdf, "kind": "nvme", "namespaces": [{"name": "nvme0n1", "mountpoints": points}]}


def _pair(bdf: str, rank: int, aligned: bool | None) -> dict:
    return {
        "other": f"NVMe {bdf}",
        "other_bdf": bdf,
        "other_kind": "nvme",
        "rank": rank,
        "numa_aligned": aligned,
    }


def test_data_drive_preferred_over_the_boot_drive() -> None:
    devices = {"0000:02:00.0": _drive("0000:02:00.0", ["/", "/boot/efi"]),
               "0000:65:00.0": _drive("0000:65:00.0", ["/data"])}  # fmt: skip
    pairs = [_pair("0000:02:00.0", 3, None), _pair("0000:65:00.0", 3, None)]
    best = derive_topology.nearest(pairs, "nvme", devices)
    assert best["other_bdf"] == "0000:65:00.0" and best["undecided_between"] == []


def test_same_numa_node_preferred_over_the_other_socket() -> None:
    devices = {
        "0000:02:00.0": _drive("0000:02:00.0", ["/data"]),
        "0000:a5:00.0": _drive("0000:a5:00.0", ["/data2"]),
    }
    pairs = [_pair("0000:a5:00.0", 3, False), _pair("0000:02:00.0", 3, True)]
    assert derive_topology.nearest(pairs, "nvme", devices)["other_bdf"] == "0000:02:00.0"


def test_near_miss_a_closer_boot_drive_still_wins_and_ties_are_named() -> None:
    devices = {
        "0000:02:00.0": _drive("0000:02:00.0", ["/"]),
        "0000:65:00.0": _drive("0000:65:00.0", ["/data"]),
    }
    closer = derive_topology.nearest(
        [_pair("0000:02:00.0", 0, None), _pair("0000:65:00.0", 3, None)], "nvme", devices
    )
    assert closer["other_bdf"] == "0000:02:00.0"  # the relation comes first
    unknown = {"0000:66:00.0": _drive("0000:66:00.0", []), "0000:67:00.0": _drive("0000:67:00.0", [])}
    tie = derive_topology.nearest(
        [_pair("0000:66:00.0", 3, None), _pair("0000:67:00.0", 3, None)], "nvme", unknown
    )
    assert tie["undecided_between"] == ["NVMe 0000:67:00.0"]
