"""A whole fake host for pyfakefs: sysfs (through FakeSysfs), /proc, /dev, /etc and /run/udev.

Use inside a pyfakefs ``fs`` fixture::

    host = FakeHost(fs, root="/host")
    ports = host.add_pcie_switch("0000:15:01.0", "0000:16:00.0", ["0000:17:00.0", "0000:17:01.0"])
    host.add_gpu("0000:19:00.0", parent=ports[0])
    host.add_nvme("nvme0", "0000:18:00.0", parent=ports[1])

The layouts are the kernel's, as in the real dumps (tests/data/nvme_sysfs/tree-pcie.tar.xz, libnvme's
test data): ``/sys/bus/pci/devices/<bdf>`` and the ``/sys/class/*`` entries are relative links into
``/sys/devices/pci<domain>:<bus>/<port>/.../<bdf>``; NVMe-oF controllers live under
``/sys/devices/virtual/nvme-fabrics/ctl``, subsystems under ``/sys/devices/virtual/nvme-subsystem``
with links to their controllers and the shared namespace head; ``/proc/mounts`` is a link to
``self/mounts`` and ``/proc/self`` a link to the process's directory; ``/etc/os-release`` a link to
``../usr/lib/os-release``; ``/dev/nvidia-fs*`` are character devices; the udev database holds one
file per device named ``b<major>:<minor>`` / ``c<major>:<minor>`` with ``E:KEY=value`` lines.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fake_sysfs import BRIDGE, BROADCOM, INTEL, MELLANOX, MICRON, NIC, NVIDIA, NVME, FakeSysfs
from pyfakefs.fake_filesystem import FakeFilesystem
from pyfakefs.helpers import set_uid

from gdsdoctor.capture.live import capture_live
from gdsdoctor.model import Artifact
from gdsdoctor.pipeline import Analysis, analyze_capture
from gdsdoctor.probes import PROBES

DATA = Path(__file__).resolve().parents[1] / "data"
GEN3, GEN4, GEN5 = "8.0 GT/s PCIe", "16.0 GT/s PCIe", "32.0 GT/s PCIe"
UNPRIVILEGED_UID = 1000  # root reads any mode: an unreadable file needs an ordinary reader
PID = 4242  # the fake process's /proc/<pid>, where /proc/self leads


def _real_text(name: str, skip_prompt: bool = False) -> str:
    """A real captured file from tests/data, read when this module is imported (before pyfakefs)."""
    text = (DATA / name).read_text()
    return text.split("\n", 1)[1] if skip_prompt else text


# /proc/driver/nvidia-fs/stats as printed on a real node (NVIDIA's GDS configuration guide)
NVFS_STATS = _real_text("nvidia_fs/proc-driver-nvidia-fs-stats.gds-0.9.nvidia-gds-config-guide.txt", True)
NVFS_VERSION = "version: 2.17\n"
NVFS_MODULES = "nvme: 1\nnvme_rdma: 1\n"
OS_RELEASE = (
    'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\n'
    'VERSION="22.04.4 LTS (Jammy Jellyfish)"\nVERSION_CODENAME=jammy\nID=ubuntu\nID_LIKE=debian\n'
)
CMDLINE = "BOOT_IMAGE=/boot/vmlinuz-5.15.0-101-generic root=UUID=fb2a25a8 ro iommu=pt nvme_core.multipath=Y\n"
KERNEL = (
    "Linux version 5.15.0-101-generic (buildd@lcy02-amd64-031) (gcc (Ubuntu 11.4.0) 11.4.0) #111-Ubuntu SMP\n"
)
PORT_ACTIVE = {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "rate": "400 Gb/sec (4X NDR)",
               "link_layer": "InfiniBand"}  # fmt: skip


class FakeHost:
    """A host tree under ``root`` in the fake filesystem ``fs``; the ``add_*`` methods return what a
    test needs to refer to (paths, BDFs, names)."""

    def __init__(self, fs: FakeFilesystem, root: str = "/") -> None:
        self.fs = fs
        # pyfakefs takes the test runner's umask: under 077 (seen in CI) the tree's directories
        # would be root's only, and a test that drops to an ordinary user could not enter them.
        fs.umask = 0o022
        self.root = Path(root)
        self.sysfs = FakeSysfs(self.root, fs)
        self._mount_id = 20
        self._block_minor = 0
        self._modules: list[str] = []

    def path(self, host_path: str) -> Path:
        """Where ``host_path`` (as the host sees it, ``/proc/...``) lies in the fake filesystem."""
        return self.root / host_path.lstrip("/")

    # --- files ----------------------------------------------------------------------------------

    def set_file(self, host_path: str, text: str) -> Path:
        path = self.path(host_path)
        if os.path.lexists(path):
            path.write_text(text)
        else:
            self.fs.create_file(path, contents=text)
        return path

    def make_unreadable(self, host_path: str) -> None:
        """Mode 000, and the reading process an ordinary user (root reads any mode). Call it last:
        the ordinary user cannot add files to the tree root built."""
        os.chmod(self.path(host_path), 0)
        set_uid(UNPRIVILEGED_UID)

    def link_out(self, host_path: str, target: str, text: str = "outside the host root\n") -> Path:
        """``host_path`` (replaced if there) as an absolute link to ``target``, outside the root: a
        directory made beforehand, or else a file made here holding ``text``."""
        if not os.path.lexists(target):
            self.fs.create_file(target, contents=text)
        link = self.path(host_path)
        if os.path.lexists(link):
            shutil.rmtree(link) if link.is_dir() and not link.is_symlink() else link.unlink()
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, link)
        return link

    def vanish_after_listing(self, monkeypatch: Any, module: Any, listed: str, gone: str) -> None:
        """A device unplugged mid-walk: ``module``'s listing of ``listed`` (a host path) returns its
        names, then the device tree ``gone`` (a host path, the real directory) is removed."""
        original: Callable[..., list[str]] = module.list_inside
        listed_path, gone_path = self.path(listed), self.path(gone)

        def list_then_unplug(real_root: str, directory: Any, **options: Any) -> list[str]:
            names = original(real_root, directory, **options)
            if Path(directory) == listed_path and gone_path.exists():
                shutil.rmtree(gone_path)
            return names

        monkeypatch.setattr(module, "list_inside", list_then_unplug)

    # --- PCIe -----------------------------------------------------------------------------------

    def add_pcie_switch(
        self,
        root_port: str,
        upstream: str,
        downstream: Sequence[str],
        *,
        numa: int = 0,
        speed: str = GEN5,
        iommu_group: int | None = None,
    ) -> list[str]:
        """A root port, a PEX switch's upstream port under it and its downstream ports; returns the
        downstream BDFs, the parents of the endpoints."""
        links = {"speed": speed, "max_speed": speed, "numa_node": numa}
        self.sysfs.add_pci(root_port, cls=BRIDGE, vendor=INTEL, device=0x352A, driver="pcieport",
                           iommu_group=iommu_group, **links)  # fmt: skip
        self.sysfs.add_pci(upstream, parent=root_port, cls=BRIDGE, vendor=BROADCOM, device=0xC030,
                           driver="pcieport", **links)  # fmt: skip
        for port in downstream:
            self.sysfs.add_pci(port, parent=upstream, cls=BRIDGE, vendor=BROADCOM, device=0xC030,
                               driver="pcieport", **links)  # fmt: skip
        return list(downstream)

    def add_gpu(
        self,
        bdf: str,
        *,
        parent: str | None = None,
        numa: int = 0,
        speed: str = GEN5,
        width: int = 16,
        iommu_group: int | None = None,
    ) -> Path:
        """An H100 (10de:2330, class 0302) bound to ``nvidia``."""
        return self.sysfs.add_pci(bdf, parent=parent, cls=0x030200, vendor=NVIDIA, device=0x2330,
                                  speed=speed, max_speed=GEN5, width=width, max_width=16, numa_node=numa,
                                  driver="nvidia", iommu_group=iommu_group)  # fmt: skip

    def add_nvme(
        self,
        name: str,
        bdf: str,
        *,
        parent: str | None = None,
        numa: int = 0,
        speed: str = GEN4,
        width: int = 4,
        namespaces: Mapping[str, int] | None = None,
        state: str = "live",
        serial: str = "S6RTNE0R900057",
    ) -> Path:
        """A PCIe NVMe controller (Micron 7450, bound to ``nvme``) with its namespaces (bytes), its
        subsystem and the controller attributes of the real tree-pcie dump; returns the controller's
        directory."""
        self.sysfs.add_pci(bdf, parent=parent, cls=NVME, vendor=MICRON, device=0x51C3, speed=speed,
                           max_speed=GEN4, width=width, max_width=4, numa_node=numa, driver="nvme")  # fmt: skip
        namespaces = dict(namespaces) if namespaces is not None else {f"{name}n1": 3_840_755_982_336}
        controller = self.sysfs.add_nvme(name, bdf, namespaces)
        number = name.removeprefix("nvme")
        nqn = f"nqn.2014.08.org.nvmexpress:1344{serial}Micron_7450"
        self._write_attrs(controller, {
            "state": state, "numa_node": str(numa), "serial": f"{serial}      ", "firmware_rev": "E2MU200 ",
            "subsysnqn": f"{nqn}      ", "cntlid": "0", "cntrltype": "io", "queue_count": "65",
            "sqsize": "1023", "kato": "0", "dctype": "none", "dev": f"241:{number}",
        })  # fmt: skip
        for namespace in namespaces:
            self._write_attrs(controller / namespace, {"dev": self._next_block_dev(), "ro": "0"})
        subsystem = self._add_subsystem(f"nvme-subsys{number}", nqn, "pcie")
        self.sysfs.link(subsystem / name, controller)
        return controller

    def add_nic(
        self,
        bdf: str,
        netdev: str,
        *,
        parent: str | None = None,
        numa: int = 0,
        rdma_device: str | None = "mlx5_0",
        port: Mapping[str, str] = PORT_ACTIVE,
        mtu: int = 4200,
        width: int = 16,
    ) -> Path:
        """A ConnectX-7 (15b3:1021) bound to ``mlx5_core``, its net interface and RDMA device."""
        path = self.sysfs.add_pci(bdf, parent=parent, cls=NIC, vendor=MELLANOX, device=0x1021,
                                  speed=GEN5, max_speed=GEN5, width=width, max_width=16, numa_node=numa,
                                  driver="mlx5_core")  # fmt: skip
        self.sysfs.add_netdev(netdev, bdf, mtu=mtu)
        if rdma_device:
            device = self.sysfs.add_ib(rdma_device, bdf, {1: dict(port)})
            self._write_attrs(device, {"fw_ver": "28.39.1002", "hca_type": "MT4129", "node_type": "1: CA"})
        return path

    def add_nvmeof_subsystem(
        self,
        number: int = 1,
        *,
        paths: int = 2,
        transport: str = "rdma",
        states: Sequence[str] = ("live", "connecting"),
        ana_states: Sequence[str] | None = None,
        size_bytes: int = 7_681_501_126_656,
        iopolicy: str = "numa",
        addresses: Sequence[str] | None = None,
        numa_node: str = "-1",
    ) -> list[str]:
        """An NVMe-oF subsystem ``nvme-subsys<number>`` reached through ``paths`` controllers (one per
        target port, in ``states``; ``addresses``: each one's sysfs ``address``, default one portal
        each; ``numa_node``: the controllers' sysfs node, -1 as for TCP, an RDMA one has its RDMA
        device's), the shared head ``nvme<number>n1`` and one path device per controller, as native
        multipath lays them out. Returns the controller names."""
        nqn = f"nqn.2024-01.io.example:target{number}"
        subsystem = self._add_subsystem(f"nvme-subsys{number}", nqn, transport, iopolicy)
        head = f"nvme{number}n1"
        head_dir = subsystem / head
        self._write_attrs(
            head_dir, {"size": str(size_bytes // 512), "ro": "0", "dev": self._next_block_dev()}
        )
        self._write_attrs(head_dir / "queue", {"scheduler": "[none] mq-deadline ", "nr_requests": "127",
                                               "max_sectors_kb": "128", "rotational": "0"})  # fmt: skip
        self.sysfs.link(self.sysfs.sys / "block" / head, head_dir)
        ana_states = ana_states or ["optimized"] * paths
        names = []
        for index in range(paths):
            name = f"nvme{number + index}"
            controller = self.sysfs.sys / "devices/virtual/nvme-fabrics/ctl" / name
            self._write_attrs(controller, {
                "transport": transport, "state": states[index], "address": addresses[index] if addresses else self._fabrics_address(transport, index),
                "subsysnqn": nqn, "hostnqn": "nqn.2014-08.org.nvmexpress:uuid:6b0e5a2c", "cntlid": str(index + 1),
                "cntrltype": "io", "numa_node": numa_node, "kato": "5", "queue_count": "9", "sqsize": "127",
                "ctrl_loss_tmo": "600", "reconnect_delay": "10", "fast_io_fail_tmo": "off",
                "dev": f"241:{number + index}",
            })  # fmt: skip
            path_device = controller / f"nvme{number}c{number + index}n1"
            self._write_attrs(path_device, {"ana_state": ana_states[index], "ana_grpid": "1", "nsid": "1"})
            self.sysfs.link(path_device / "device", controller)
            self.sysfs.link(self.sysfs.sys / "class/nvme" / name, controller)
            self.sysfs.link(subsystem / name, controller)
            names.append(name)
        return names

    # --- /proc, /dev, /etc, /run ----------------------------------------------------------------

    def add_proc_basics(
        self, *, cmdline: str = CMDLINE, os_release: str = OS_RELEASE, kernel: str = KERNEL
    ) -> None:
        """/proc/cmdline, /proc/version, /proc/self -> <pid>, /proc/mounts -> self/mounts (the
        kernel's links), /etc/os-release -> ../usr/lib/os-release (Debian's)."""
        self.set_file("/proc/cmdline", cmdline)
        self.set_file("/proc/version", kernel)
        self.set_file(f"/proc/{PID}/mounts", "")
        self.set_file(f"/proc/{PID}/mountinfo", "")
        os.symlink(str(PID), self.path("/proc/self"))
        os.symlink("self/mounts", self.path("/proc/mounts"))
        self.set_file("/usr/lib/os-release", os_release)
        self.path("/etc").mkdir(parents=True, exist_ok=True)
        os.symlink("../usr/lib/os-release", self.path("/etc/os-release"))

    def add_mount(self, source: str, mountpoint: str, fstype: str, options: str = "rw,relatime",
                  *, major_minor: str = "259:1", super_options: str = "rw") -> None:  # fmt: skip
        """One line in /proc/self/mounts and /proc/self/mountinfo (after ``add_proc_basics``)."""
        self._mount_id += 1
        with open(self.path(f"/proc/{PID}/mounts"), "a") as mounts:
            mounts.write(f"{source} {mountpoint} {fstype} {options} 0 0\n")
        with open(self.path(f"/proc/{PID}/mountinfo"), "a") as mountinfo:
            mountinfo.write(f"{self._mount_id} 1 {major_minor} / {mountpoint} {options} shared:1 - "
                            f"{fstype} {source} {super_options}\n")  # fmt: skip

    def add_modules(self, names: Iterable[str]) -> None:
        """/proc/modules lines (``name size refcount users state address (taint)``)."""
        for name in names:
            used_by = "nvme," if name == "nvme_core" else "-"
            self._modules.append(f"{name} 262144 1 {used_by} Live 0xffffffffc0a1a000 (OE)")
        self.set_file("/proc/modules", "\n".join(self._modules) + "\n")

    def add_nvidia_fs(self, devices: int = 16, *, stats: str = NVFS_STATS) -> None:
        """nvidia-fs loaded: /proc/driver/nvidia-fs/{version,modules,stats,devcount}, and the character
        devices /dev/nvidia-fs0..N-1 (major 245)."""
        for name, text in (("version", NVFS_VERSION), ("modules", NVFS_MODULES), ("stats", stats),
                           ("devcount", f"{devices}\n")):  # fmt: skip
            self.set_file(f"/proc/driver/nvidia-fs/{name}", text)
        for index in range(devices):
            self.fs.create_file(self.path(f"/dev/nvidia-fs{index}"), st_mode=stat.S_IFCHR | 0o666)

    def add_cufile_json(self, text: str, host_path: str = "/etc/cufile.json") -> Path:
        return self.set_file(host_path, text)

    def add_udev_db(self, entries: Mapping[str, Mapping[str, str]]) -> Path:
        """/run/udev/data/<b|c><major>:<minor> files, as systemd-udevd writes them: ``S:`` lines for
        the DEVLINKS given (space-separated, without /dev/), then ``E:KEY=value`` for each property."""
        for device, properties in entries.items():
            lines = [f"S:{link}" for link in properties.get("DEVLINKS", "").split()]
            lines += ["W:2", "I:1733011200000000"]
            lines += [f"E:{key}={value}" for key, value in properties.items() if key != "DEVLINKS"]
            lines += ["G:systemd", "Q:systemd", "V:1"]
            self.set_file(f"/run/udev/data/{device}", "\n".join(lines) + "\n")
        return self.path("/run/udev/data")

    def add_numa_nodes(self, count: int = 2) -> None:
        for node in range(count):
            distances = [10 if other == node else 32 for other in range(count)]
            self.sysfs.add_numa_node(node, f"{node * 32}-{node * 32 + 31}", distances, 197_760_952)

    # --- helpers --------------------------------------------------------------------------------

    def _write_attrs(self, directory: Path, attrs: Mapping[str, str]) -> None:
        for name, value in attrs.items():
            self.sysfs.write(directory / name, value)

    def _next_block_dev(self) -> str:
        self._block_minor += 1
        return f"259:{self._block_minor - 1}"

    def _add_subsystem(self, name: str, nqn: str, transport: str, iopolicy: str = "numa") -> Path:
        subsystem = self.sysfs.sys / "devices/virtual/nvme-subsystem" / name
        self._write_attrs(subsystem, {"subsysnqn": nqn, "iopolicy": iopolicy, "subsystype": "nvm",
                                      "model": "Micron_7450" if transport == "pcie" else "Linux",
                                      "serial": "S6RTNE0R900057", "firmware_rev": "E2MU200"})  # fmt: skip
        self.sysfs.link(self.sysfs.sys / "class/nvme-subsystem" / name, subsystem)
        return subsystem

    @staticmethod
    def _fabrics_address(transport: str, index: int) -> str:
        address = f"traddr=192.168.10.{10 + index},trsvcid=4420"
        return address + f",src_addr=192.168.10.{100 + index}" if transport == "tcp" else address


# --- analysing a fake host --------------------------------------------------------------------

# What a fake host can give: its files and readers (its commands would be this machine's).
_READERS = (dataclasses.replace(p, sources=tuple(s for s in p.sources if not s.argv)) for p in PROBES)
READ_ONLY_PROBES = [p for p in _READERS if p.sources]


def analyze_fake_host(fs: FakeFilesystem, root: str, extra: Sequence[tuple[str, Artifact]] = ()) -> Analysis:
    """The fake host under ``root`` captured by its readers (and ``extra`` artifacts: the outputs
    of commands it cannot run), then analysed with the real tree's rules and schema."""
    capture = capture_live(Path(root), probes=READ_ONLY_PROBES, deadline_s=20)
    for section, artifact in extra:
        capture.add(section, artifact)
    fs.pause()  # the rules and the schema are read from the real tree
    try:
        return analyze_capture(capture)
    finally:
        fs.resume()
