"""Sysfs trees of GPU nodes for the topology rules, and the bundles built from them.

The trees are the layouts engineers meet (a switch holding GPU + NVMe + NIC; a second socket with a
GPU and nothing else; degraded links) written with FakeSysfs. ``python tests/topology_trees.py``
captures each tree through the real sysfs readers (``--host-root``) into ``fixtures/<name>/bundle``;
pasted benchmark outputs are added as the artifacts ``gdsdoctor bench`` would have written.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests" / "probes")]

from fake_sysfs import BRIDGE, BROADCOM, INTEL, MELLANOX, MICRON, NIC, NVME, FakeSysfs  # noqa: E402

GEN4, GEN5, GEN3 = "16.0 GT/s PCIe", "32.0 GT/s PCIe", "8.0 GT/s PCIe"
TIB = 1 << 40
ROCE_PORT = {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "rate": "400 Gb/sec (4X NDR)",
             "link_layer": "Ethernet"}  # fmt: skip


def numa_nodes(tree: FakeSysfs, count: int) -> None:
    for node in range(count):
        cpus = f"{node * 32}-{node * 32 + 31}"
        tree.add_numa_node(node, cpus, [10 if n == node else 32 for n in range(count)], 197760952)


def switch_with_gpu_nvme_nic(
    tree: FakeSysfs,
    bus: int,
    node: int,
    *,
    nvme: str,
    mlx: str,
    netdev: str,
    mtu: int = 9000,
    iommu: bool = False,
    **nvme_link: str,
) -> None:
    """Root port ``bus:01.0`` → switch → GPU, NVMe (Gen4 x4) and a RoCE NIC, as on HGX boards."""
    rp, up = f"0000:{bus:02x}:01.0", f"0000:{bus + 1:02x}:00.0"
    tree.add_pci(rp, cls=BRIDGE, vendor=INTEL, numa_node=node, driver="pcieport",
                 iommu_group=bus if iommu else None)  # fmt: skip
    tree.add_pci(up, parent=rp, cls=BRIDGE, vendor=BROADCOM, device=0xC030, numa_node=node)
    for port in range(3):
        tree.add_pci(f"0000:{bus + 2:02x}:0{port}.0", parent=up, cls=BRIDGE, vendor=BROADCOM, numa_node=node)
    drive = f"0000:{bus + 3:02x}:00.0"
    tree.add_pci(
        drive, parent=f"0000:{bus + 2:02x}:00.0", cls=NVME, vendor=MICRON, device=0x51C3, numa_node=node,
        driver="nvme", speed=nvme_link.get("speed", GEN4), max_speed=GEN4,
        width=int(nvme_link.get("width", "4")), max_width=4,
    )  # fmt: skip
    tree.add_nvme(nvme, drive, {f"{nvme}n1": 15 * TIB})
    tree.add_pci(f"0000:{bus + 4:02x}:00.0", parent=f"0000:{bus + 2:02x}:01.0", numa_node=node, driver="nvidia",
                 speed=nvme_link.get("gpu_speed", GEN5))  # fmt: skip
    nic = f"0000:{bus + 5:02x}:00.0"
    tree.add_pci(nic, parent=f"0000:{bus + 2:02x}:02.0", cls=NIC, vendor=MELLANOX, device=0x1021, numa_node=node,
                 driver="mlx5_core", speed=nvme_link.get("nic_speed", GEN5))  # fmt: skip
    tree.add_netdev(netdev, nic, mtu=mtu)
    tree.add_ib(mlx, nic, {1: ROCE_PORT})


def lone_gpu(tree: FakeSysfs, bus: int, node: int, *, iommu: bool) -> None:
    """A GPU on its own root port of another socket's host bridge."""
    rp = f"0000:{bus:02x}:01.0"
    tree.add_pci(
        rp, cls=BRIDGE, vendor=INTEL, numa_node=node, driver="pcieport", iommu_group=bus if iommu else None
    )
    tree.add_pci(f"0000:{bus + 3:02x}:00.0", parent=rp, numa_node=node, driver="nvidia",
                 iommu_group=bus + 3 if iommu else None)  # fmt: skip


def two_socket_iommu(tree: FakeSysfs) -> None:
    """Socket 0: GPU + NVMe + NIC under one switch; socket 1: a GPU alone; IOMMU translating."""
    numa_nodes(tree, 2)
    switch_with_gpu_nvme_nic(tree, 0x15, 0, nvme="nvme0", mlx="mlx5_0", netdev="ens1np0", iommu=True)
    lone_gpu(tree, 0x97, 1, iommu=True)
    write(
        tree.root / "proc/cmdline",
        "BOOT_IMAGE=/boot/vmlinuz-6.8.0-60-generic root=/dev/sda2 ro intel_iommu=on",
    )
    write(tree.root / "proc/mounts", "/dev/nvme0n1 /mnt/ckpt xfs rw,relatime,attr2,inode64 0 0")


def two_socket_balanced(tree: FakeSysfs) -> None:
    """Each socket: GPU + NVMe + NIC under one switch; IOMMU off; the socket-1 GPU idles at 2.5 GT/s."""
    numa_nodes(tree, 2)
    switch_with_gpu_nvme_nic(tree, 0x15, 0, nvme="nvme0", mlx="mlx5_0", netdev="ens1np0")
    switch_with_gpu_nvme_nic(
        tree, 0x97, 1, nvme="nvme1", mlx="mlx5_1", netdev="ens2np0", gpu_speed="2.5 GT/s PCIe"
    )
    (tree.sys / "kernel/iommu_groups").mkdir(parents=True, exist_ok=True)
    write(
        tree.root / "proc/cmdline",
        "BOOT_IMAGE=/boot/vmlinuz-6.8.0-60-generic root=/dev/sda2 ro intel_iommu=off",
    )
    write(
        tree.root / "proc/mounts",
        "/dev/nvme0n1 /mnt/ckpt xfs rw,relatime 0 0\n/dev/nvme1n1 /mnt/ckpt1 xfs rw 0 0",
    )


def degraded_links(tree: FakeSysfs) -> None:
    """One switch: the NVMe trained at 8 GT/s x2 (of 16 GT/s x4), the NIC at 16 GT/s (of 32), MTU 1500."""
    numa_nodes(tree, 1)
    switch_with_gpu_nvme_nic(tree, 0x15, 0, nvme="nvme0", mlx="mlx5_0", netdev="ens1np0", mtu=1500, speed=GEN3,
                             width="2", nic_speed=GEN4, gpu_speed="2.5 GT/s PCIe")  # fmt: skip
    (tree.sys / "kernel/iommu_groups").mkdir(parents=True, exist_ok=True)
    write(tree.root / "proc/mounts", "/dev/nvme0n1 /mnt/ckpt xfs rw,relatime 0 0")


def eight_gpus(tree: FakeSysfs) -> None:
    """An 8-GPU node of two sockets: per socket four switches, each with a GPU, a NIC and two NVMe
    drives (8 GPUs, 8 NICs, 16 drives); the last switch's drives trained at x2 (a picture test)."""
    numa_nodes(tree, 2)
    mounts = []
    for index in range(8):
        node, bus = index // 4, (0x10 if index < 4 else 0x90) + 8 * (index % 4)
        rp, up = f"0000:{bus:02x}:01.0", f"0000:{bus + 1:02x}:00.0"
        tree.add_pci(rp, cls=BRIDGE, vendor=INTEL, numa_node=node, driver="pcieport")
        tree.add_pci(up, parent=rp, cls=BRIDGE, vendor=BROADCOM, device=0xC030, numa_node=node)
        for port in range(4):
            tree.add_pci(
                f"0000:{bus + 2:02x}:0{port}.0", parent=up, cls=BRIDGE, vendor=BROADCOM, numa_node=node
            )
        for slot, port, disk in ((3, 0, 2 * index), (6, 3, 2 * index + 1)):
            drive = f"0000:{bus + slot:02x}:00.0"
            width = 2 if index == 7 else 4
            tree.add_pci(drive, parent=f"0000:{bus + 2:02x}:0{port}.0", cls=NVME, vendor=MICRON, device=0x51C3,
                         numa_node=node, driver="nvme", speed=GEN4, max_speed=GEN4, width=width,
                         max_width=4)  # fmt: skip
            tree.add_nvme(f"nvme{disk}", drive, {f"nvme{disk}n1": 15 * TIB})
            mounts.append(f"/dev/nvme{disk}n1 /mnt/ckpt{disk} xfs rw,relatime 0 0")
        tree.add_pci(f"0000:{bus + 4:02x}:00.0", parent=f"0000:{bus + 2:02x}:01.0", numa_node=node,
                     driver="nvidia", speed=GEN5)  # fmt: skip
        nic = f"0000:{bus + 5:02x}:00.0"
        tree.add_pci(nic, parent=f"0000:{bus + 2:02x}:02.0", cls=NIC, vendor=MELLANOX, device=0x1021,
                     numa_node=node, driver="mlx5_core", speed=GEN5)  # fmt: skip
        tree.add_netdev(f"ens{index + 1}np0", nic, mtu=9000)
        tree.add_ib(f"mlx5_{index}", nic, {1: ROCE_PORT})
    (tree.sys / "kernel/iommu_groups").mkdir(parents=True, exist_ok=True)
    write(tree.root / "proc/mounts", "\n".join(mounts))


def nic_in_gen4_slot(tree: FakeSysfs) -> None:
    """A 400 Gb/s ConnectX-7 port behind a Gen4 x16 link (a Gen4 server, or a Gen4 riser)."""
    numa_nodes(tree, 1)
    tree.add_pci("0000:40:01.1", cls=BRIDGE, vendor=INTEL, driver="pcieport", speed=GEN4, max_speed=GEN4)
    tree.add_pci("0000:41:00.0", parent="0000:40:01.1", driver="nvidia", speed=GEN4, max_speed=GEN4)
    tree.add_pci("0000:40:03.1", cls=BRIDGE, vendor=INTEL, driver="pcieport", speed=GEN4, max_speed=GEN4)
    nic = "0000:42:00.0"
    tree.add_pci(
        nic, parent="0000:40:03.1", cls=NIC, vendor=MELLANOX, device=0x1021, driver="mlx5_core", speed=GEN4
    )
    tree.add_netdev("ens3np0", nic)
    tree.add_ib("mlx5_0", nic, {1: ROCE_PORT})
    (tree.sys / "kernel/iommu_groups").mkdir(parents=True, exist_ok=True)


def numa_unknown(tree: FakeSysfs) -> None:
    """Two NUMA nodes, but the firmware gives the PCIe devices no node (numa_node -1)."""
    numa_nodes(tree, 2)
    switch_with_gpu_nvme_nic(tree, 0x15, -1, nvme="nvme0", mlx="mlx5_0", netdev="ens1np0")


def small_boot_drive(tree: FakeSysfs) -> None:
    """A Gen3 x1 NVMe (an M.2 boot drive on a chipset lane) holding the checkpoint mount."""
    numa_nodes(tree, 1)
    tree.add_pci("0000:00:1c.0", cls=BRIDGE, vendor=INTEL, driver="pcieport", speed=GEN3, max_speed=GEN3, width=1,
                 max_width=1)  # fmt: skip
    tree.add_pci("0000:03:00.0", parent="0000:00:1c.0", cls=NVME, vendor=MICRON, driver="nvme", speed=GEN3,
                 max_speed=GEN3, width=1, max_width=1)  # fmt: skip
    tree.add_nvme("nvme0", "0000:03:00.0", {"nvme0n1": TIB})
    write(tree.root / "proc/mounts", "/dev/nvme0n1p2 /mnt/ckpt ext4 rw,relatime,data=ordered 0 0")


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


SYSFS_SECTIONS = ("pci", "iommu_groups", "numa", "nvme_sysfs", "infiniband", "netdev", "cmdline", "mounts")


def build_bundle(
    name: str,
    layout: Callable[[FakeSysfs], None],
    extra: dict[str, tuple[str, Path]],
    fixtures: Path = ROOT / "fixtures",
) -> Path:
    """Capture ``layout`` through the sysfs readers into ``<fixtures>/<name>/bundle``; ``extra`` adds
    artifacts as ``{artifact name: (section, file)}`` (benchmark outputs)."""
    from gdsdoctor.capture.bundle import write_bundle
    from gdsdoctor.capture.live import capture_live
    from gdsdoctor.model import Artifact, ArtifactStatus
    from gdsdoctor.probes import BY_SECTION

    with tempfile.TemporaryDirectory() as tmp:
        tree = FakeSysfs(Path(tmp))
        layout(tree)
        capture = capture_live(Path(tmp), probes=[BY_SECTION[s] for s in SYSFS_SECTIONS])
    capture.host, capture.label = {"hostname": name}, name
    capture.options = {"host_root": "/", "target_path": None}
    for artifact_name, (section, path) in extra.items():
        artifact = Artifact(
            artifact_name, source=f"file {path.name}", status=ArtifactStatus.OK, data=path.read_bytes()
        )
        capture.add(section, artifact)
    output = fixtures / name / "bundle"
    shutil.rmtree(output, ignore_errors=True)
    return write_bundle(capture, output)


BENCH = ROOT / "tests" / "data" / "bench"
BUNDLES: dict[str, tuple[Callable[[FakeSysfs], None], dict[str, tuple[str, Path]]]] = {
    "topo-sysfs-two-socket-iommu": (
        two_socket_iommu,
        {"bench/fio.json": ("fio", BENCH / "fio-3.20.kubestr-2jobs-libaio.json")},
    ),
    "topo-sysfs-two-socket-balanced": (two_socket_balanced, {}),
    "topo-sysfs-degraded-links": (
        degraded_links,
        {"bench/fio.json": ("fio", BENCH / "fio-3.33.local-write-read-2groups-libaio.json")},
    ),
    "topo-sysfs-numa-unknown": (numa_unknown, {}),
    "pci-sysfs-nic-400g-in-gen4-slot": (nic_in_gen4_slot, {}),
    "tput-sysfs-fio-above-line-rate": (
        small_boot_drive,
        {"bench/fio.json": ("fio", BENCH / "fio-3.33.local-write-read-2groups-libaio.json")},
    ),
}


if __name__ == "__main__":
    for fixture, (layout, extra) in BUNDLES.items():
        print(build_bundle(fixture, layout, extra))
