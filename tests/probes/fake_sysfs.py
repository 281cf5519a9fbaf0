"""Build fake sysfs trees (with the symlinks real sysfs has) for reader and topology tests.

Use inside a pyfakefs ``fs`` fixture::

    tree = FakeSysfs(Path("/host"))
    tree.add_pci("0000:15:01.0", cls=0x060400, vendor=0x8086)          # root port
    tree.add_pci("0000:19:00.0", parent="0000:15:01.0", driver="nvidia")  # GPU under it

Devices live at ``sys/devices/<root complex>/<bridge>/.../<bdf>``; ``sys/bus/pci/devices/<bdf>``,
``driver``, ``iommu_group``, ``/sys/class/net/<if>`` and ``/sys/class/infiniband/<dev>`` are relative
symlinks, as in the kernel's tree.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyfakefs.fake_filesystem import FakeFilesystem

NVIDIA, MELLANOX, MICRON, INTEL, BROADCOM = 0x10DE, 0x15B3, 0x1344, 0x8086, 0x1000
GPU, NVME, NIC, BRIDGE = 0x030200, 0x010802, 0x020000, 0x060400


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def relative_link(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(target, link.parent), link)


class FakeSysfs:
    def __init__(self, root: Path, fs: FakeFilesystem | None = None) -> None:
        """``fs``: the pyfakefs filesystem the tree is in, written through directly (a third of the
        time pathlib takes there); without it, the tree is written with pathlib (a real directory)."""
        self.root = root
        self.sys = root / "sys"
        self.paths: dict[str, Path] = {}
        self.fs = fs

    def write(self, path: Path, text: str) -> None:
        if self.fs is None:
            write(path, text)
            return
        try:
            self.fs.create_file(path, contents=text + "\n")
        except FileExistsError:
            path.write_text(text + "\n")

    def link(self, link: Path, target: Path) -> None:
        if self.fs is None:
            relative_link(link, target)
        else:
            self.fs.create_symlink(link, os.path.relpath(target, link.parent))

    def make_dir(self, path: Path) -> None:
        if self.fs is None:
            path.mkdir(parents=True, exist_ok=True)
        elif not self.fs.exists(path):
            self.fs.create_dir(path)

    def add_pci(
        self,
        bdf: str,
        *,
        parent: str | None = None,
        root_complex: str | None = None,
        cls: int = GPU,
        vendor: int = NVIDIA,
        device: int = 0x2330,
        speed: str | None = "32.0 GT/s PCIe",
        max_speed: str | None = "32.0 GT/s PCIe",
        width: int | None = 16,
        max_width: int | None = 16,
        numa_node: int = 0,
        driver: str | None = None,
        iommu_group: int | None = None,
    ) -> Path:
        """A PCI function under ``parent`` (a BDF added before) or directly under its root complex."""
        if parent is not None:
            base = self.paths[parent]
        else:
            base = self.sys / "devices" / (root_complex or f"pci{bdf[:4]}:{bdf[5:7]}")
        path = base / bdf
        self.paths[bdf] = path
        attrs = {"class": f"0x{cls:06x}", "vendor": f"0x{vendor:04x}", "device": f"0x{device:04x}"}
        attrs |= {"numa_node": str(numa_node), "local_cpulist": "0-31" if numa_node <= 0 else "32-63"}
        for name, value in (("current_link_speed", speed), ("max_link_speed", max_speed)):
            if value is not None:
                attrs[name] = value
        for name, number in (("current_link_width", width), ("max_link_width", max_width)):
            if number is not None:
                attrs[name] = str(number)
        for name, value in attrs.items():
            self.write(path / name, value)
        self.link(self.sys / "bus/pci/devices" / bdf, path)
        if driver:
            drivers = self.sys / "bus/pci/drivers" / driver
            self.make_dir(drivers)
            self.link(path / "driver", drivers)
        if iommu_group is not None:
            group = self.sys / "kernel/iommu_groups" / str(iommu_group)
            self.write(group / "type", "DMA-FQ")
            self.link(path / "iommu_group", group)
            self.link(group / "devices" / bdf, path)
        return path

    def add_numa_node(self, node: int, cpulist: str, distances: list[int], mem_kb: int) -> Path:
        path = self.sys / "devices/system/node" / f"node{node}"
        self.write(path / "cpulist", cpulist)
        self.write(path / "distance", " ".join(map(str, distances)))
        self.write(
            path / "meminfo", f"Node {node} MemTotal:       {mem_kb} kB\nNode {node} MemFree:        1 kB"
        )
        return path

    def add_netdev(
        self,
        name: str,
        bdf: str | None,
        *,
        mtu: int = 9000,
        operstate: str = "up",
        speed: int | None = 400000,
    ) -> Path:
        """``/sys/class/net/<name>`` linked to ``devices/<pci path>/net/<name>`` (or virtual)."""
        base = self.paths[bdf] if bdf else self.sys / "devices/virtual"
        path = base / "net" / name
        self.write(path / "mtu", str(mtu))
        self.write(path / "operstate", operstate)
        if speed is not None:
            self.write(path / "speed", str(speed))
        if bdf:
            self.link(path / "device", self.paths[bdf])
        self.link(self.sys / "class/net" / name, path)
        return path

    def add_nvme(
        self, name: str, bdf: str, namespaces: dict[str, int], *, model: str = "Micron_7450"
    ) -> Path:
        """``/sys/class/nvme/<name>`` (a PCIe controller under ``bdf``) with namespaces of the given sizes
        (bytes); each namespace also appears as ``/sys/block/<ns>``."""
        path = self.paths[bdf] / "nvme" / name
        for attr, value in (("transport", "pcie"), ("state", "live"), ("model", model), ("address", bdf)):
            self.write(path / attr, value)
        self.link(path / "device", self.paths[bdf])
        self.link(self.sys / "class/nvme" / name, path)
        for namespace, size in namespaces.items():
            self.write(path / namespace / "size", str(size // 512))
            self.write(path / namespace / "queue/scheduler", "[none] mq-deadline")
            self.link(self.sys / "block" / namespace, path / namespace)
        return path

    def add_ib(self, name: str, bdf: str, ports: dict[int, dict[str, str]]) -> Path:
        """``/sys/class/infiniband/<name>`` with ``ports/<n>/<attr>`` files and a ``device`` link."""
        path = self.paths[bdf] / "infiniband" / name
        for port, attrs in ports.items():
            for attr, value in attrs.items():
                self.write(path / "ports" / str(port) / attr, value)
        self.link(path / "device", self.paths[bdf])
        self.link(self.sys / "class/infiniband" / name, path)
        return path


def gds_switch_tree(tree: FakeSysfs) -> None:
    """Socket 0: GPU, NVMe and CX7 under one PEX890xx switch. Socket 1: a second GPU and NIC."""
    tree.add_pci("0000:15:01.0", cls=BRIDGE, vendor=INTEL, device=0x352A, driver="pcieport", iommu_group=10)
    tree.add_pci("0000:16:00.0", parent="0000:15:01.0", cls=BRIDGE, vendor=BROADCOM, device=0xC030)
    for port in range(3):
        tree.add_pci(f"0000:17:0{port}.0", parent="0000:16:00.0", cls=BRIDGE, vendor=BROADCOM, device=0xC030)
    tree.add_pci(
        "0000:18:00.0", parent="0000:17:00.0", cls=NVME, vendor=MICRON, device=0x51C3, driver="nvme",
        speed="16.0 GT/s PCIe", max_speed="16.0 GT/s PCIe", width=4, max_width=4, iommu_group=11,
    )  # fmt: skip
    tree.add_pci("0000:19:00.0", parent="0000:17:01.0", driver="nvidia", iommu_group=12)
    tree.add_pci(
        "0000:1a:00.0", parent="0000:17:02.0", cls=NIC, vendor=MELLANOX, device=0x1021, driver="mlx5_core"
    )
    tree.add_pci("0000:97:01.0", cls=BRIDGE, vendor=INTEL, numa_node=1, driver="pcieport")
    tree.add_pci(
        "0000:9a:00.0", parent="0000:97:01.0", numa_node=1, driver="nvidia",
        speed="2.5 GT/s PCIe", width=16,
    )  # fmt: skip
    tree.add_numa_node(0, "0-31", [10, 32], 197760952)
    tree.add_numa_node(1, "32-63", [32, 10], 198113268)
    (tree.sys / "devices/system/node/online").write_text("0-1\n")
    tree.add_pci("0000:9b:00.0", cls=0x020700, vendor=MELLANOX, numa_node=-1, speed="Unknown", width=0)
