"""Every live reader of /sys, /proc, /dev and /etc run on fake hosts (pyfakefs, tests/probes/fakehost.py).

The sections are captured the way ``check --host-root ROOT`` captures them: ``capture_live`` over the
probes, each trying its host-file and reader sources in order (commands are left out: a fake
filesystem has no binaries), then parsed into facts sections with their status. Each scenario is a
layout met on real nodes: GPU + NVMe + NIC under one PCIe switch, NVMe-oF over two paths, a container
without /dev/nvidia-fs* or a udev database, an unreadable attribute, a device unplugged during the
walk, links that leave the host root.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest
from fakehost import FakeHost
from pyfakefs.fake_filesystem import FakeFilesystem

from gdsdoctor.capture.live import capture_live, capture_source
from gdsdoctor.errors import UserError
from gdsdoctor.facts.document import held_artifacts
from gdsdoctor.facts.section import section_from
from gdsdoctor.model import ArtifactStatus
from gdsdoctor.probes import BY_SECTION, PROBES, nvme_sysfs, pci, rdma

ROOT = "/host"
# every section a host file or a reader captures (the command-only probes cannot run on a fake tree)
HOST_SECTIONS = tuple(probe.section for probe in PROBES if any(not source.argv for source in probe.sources))
CUFILE_JSON = """{
    // comments are allowed in cufile.json
    "logging": { "level": "ERROR" },
    "properties": {
        "allow_compat_mode": false,
        "max_direct_io_size_kb": 16384,
        "rdma_dev_addr_list": ["192.168.10.100"]
    }
}
"""
KALLSYMS = (
    "ffffffff8a2b3c40 T p2pdma_pgmap_ops\n"
    "ffffffffc0a1a000 T nvidia_p2p_get_pages\t[nvidia]\n"
    "ffffffffc0b2c000 t nvme_v2_register_nvfs_dma_ops\t[nvme]\n"
)


def sections(root: str | Path, *names: str) -> dict[str, dict[str, Any]]:
    """The facts sections ``names`` of the host at ``root``, captured as ``check --host-root`` does."""
    probes = [BY_SECTION[name] for name in names]
    probes = [
        dataclasses.replace(probe, sources=tuple(s for s in probe.sources if not s.argv)) for probe in probes
    ]
    capture = capture_live(Path(root), probes=probes, deadline_s=20)
    return {probe.section: section_from(probe, held_artifacts(probe, capture)) for probe in probes}


def section(root: str | Path, name: str) -> dict[str, Any]:
    return sections(root, name)[name]


def by(items: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    return {item[key]: item for item in items}


def pci_devices(root: str | Path) -> dict[str, dict[str, Any]]:
    found = section(root, "pci")
    assert found["status"] == "ok", found
    return by(found["devices"], "bdf")


# --- the GPU node: GPU + NVMe + NIC under one PCIe switch on socket 0, a GPU alone on socket 1 -------

SWITCH_GPU, SWITCH_NVME, SWITCH_NIC, LONE_GPU = "0000:19:00.0", "0000:18:00.0", "0000:1a:00.0", "0000:9a:00.0"


@pytest.fixture
def gpu_node(fs: FakeFilesystem, monkeypatch: pytest.MonkeyPatch) -> FakeHost:
    monkeypatch.delenv("CUFILE_ENV_PATH_JSON", raising=False)
    host = FakeHost(fs, ROOT)
    down = host.add_pcie_switch("0000:15:01.0", "0000:16:00.0", ["0000:17:00.0", "0000:17:01.0", "0000:17:02.0"],
                                iommu_group=10)  # fmt: skip
    host.add_nvme("nvme0", SWITCH_NVME, parent=down[0], namespaces={"nvme0n1": 3_840_755_982_336})
    host.add_gpu(SWITCH_GPU, parent=down[1], iommu_group=12)
    host.add_nic(SWITCH_NIC, "ens1f0np0", parent=down[2])
    host.sysfs.add_pci("0000:97:01.0", cls=0x060400, vendor=0x8086, numa_node=1, driver="pcieport")
    host.add_gpu(LONE_GPU, parent="0000:97:01.0", numa=1, speed="2.5 GT/s PCIe")
    host.add_numa_nodes(2)
    host.add_proc_basics()
    host.add_mount("/dev/nvme0n1", "/mnt/ckpt", "ext4", "rw,relatime", super_options="rw,data=ordered")
    host.add_mount("192.168.10.50:/export", "/mnt/nfs", "nfs4", "rw,relatime,vers=4.1,proto=rdma",
                   major_minor="0:52", super_options="rw,vers=4.1,proto=rdma,port=20049")  # fmt: skip
    host.add_modules(["nvidia_fs", "nvidia", "nvme", "nvme_core", "mlx5_ib"])
    host.add_nvidia_fs(devices=16)
    host.set_file("/proc/driver/nvidia/version",
                  "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build\n")  # fmt: skip
    host.set_file("/proc/kallsyms", KALLSYMS)
    host.add_cufile_json(CUFILE_JSON)
    host.add_udev_db({"b259:0": {"DEVLINKS": "disk/by-path/pci-0000:18:00.0-nvme-1",
                                 "ID_PATH": "pci-0000:18:00.0-nvme-1", "ID_SERIAL_SHORT": "S6RTNE0R900057"}})  # fmt: skip
    return host


def test_gpu_on_the_switch_has_its_link_numa_node_and_upstream_ports(gpu_node: FakeHost) -> None:
    gpu = pci_devices(ROOT)[SWITCH_GPU]
    assert (gpu["kind"], gpu["driver"], gpu["numa_node"]) == ("gpu", "nvidia", 0)
    assert (gpu["current_link_speed_gts"], gpu["current_link_width"], gpu["max_link_width"]) == (32.0, 16, 16)
    assert gpu["upstream"] == ["0000:15:01.0", "0000:16:00.0", "0000:17:01.0"]
    assert gpu["root_complex"] == "pci0000:15" and gpu["iommu_group"] == "12"


def test_nvme_and_nic_share_the_gpus_switch(gpu_node: FakeHost) -> None:
    devices = pci_devices(ROOT)
    nvme, nic = devices[SWITCH_NVME], devices[SWITCH_NIC]
    assert (nvme["kind"], nvme["current_link_speed_gts"], nvme["current_link_width"]) == ("nvme", 16.0, 4)
    assert (nic["kind"], nic["driver"]) == ("nic", "mlx5_core")
    switch_upstream = {device["upstream"][1] for device in (nvme, nic, devices[SWITCH_GPU])}
    assert switch_upstream == {"0000:16:00.0"}
    assert devices["0000:17:00.0"]["kind"] == "bridge" and devices["0000:16:00.0"]["driver"] == "pcieport"


def test_lone_gpu_on_the_second_socket_with_a_downgraded_link(gpu_node: FakeHost) -> None:
    gpu = pci_devices(ROOT)[LONE_GPU]
    assert gpu["numa_node"] == 1 and gpu["local_cpulist"] == "32-63"
    assert gpu["current_link_speed_gts"] == 2.5 and gpu["max_link_speed_gts"] == 32.0
    assert gpu["root_port"] == "0000:97:01.0" and gpu["root_complex"] == "pci0000:97"


def test_iommu_groups_and_numa_nodes(gpu_node: FakeHost) -> None:
    found = sections(ROOT, "iommu_groups", "numa")
    groups = by(found["iommu_groups"]["groups"], "group")
    assert found["iommu_groups"]["present"] is True and groups["12"]["devices"] == [SWITCH_GPU]
    nodes = by(found["numa"]["nodes"], "node")
    assert found["numa"]["count"] == 2 and nodes[1]["cpus"][0] == 32 and nodes[1]["cpu_count"] == 32
    assert nodes[0]["distances"] == [10, 32] and nodes[0]["size_bytes"] == 197_760_952 * 1024


def test_nvme_controller_from_sysfs(gpu_node: FakeHost) -> None:
    found = section(ROOT, "nvme_sysfs")
    (controller,) = found["controllers"]
    assert (
        controller["name"] == "nvme0" and controller["transport"] == "pcie" and controller["state"] == "live"
    )
    assert controller["pci_bdf"] == SWITCH_NVME and controller["numa_node"] == 0
    assert controller["serial"] == "S6RTNE0R900057" and controller["subsystem"] == "nvme-subsys0"
    assert controller["fabrics"] is False and controller["queue_count"] == 65
    block = by(found["block"], "name")["nvme0n1"]
    assert (
        block["size_bytes"] == 3_840_755_982_336 and block["scheduler"] == "none" and block["dev"] == "259:0"
    )


# what read_sysfs returns for libnvme's real tree-pcie dump (tests/data/nvme_sysfs/SOURCES.md)
REAL_NVME_TREE = json.loads(
    (Path(__file__).resolve().parents[1] / "data/nvme_sysfs/nvme-sysfs.tree-pcie.json").read_text()
)


def test_fake_nvme_controller_and_subsystem_carry_the_real_dumps_attributes(gpu_node: FakeHost) -> None:
    artifact = capture_source(BY_SECTION["nvme_sysfs"].sources[0], Path(ROOT))
    fake = json.loads(artifact.data)
    assert set(fake["controllers"]["nvme0"]) == set(REAL_NVME_TREE["controllers"]["nvme1"])
    assert set(fake["subsystems"]["nvme-subsys0"]) == set(REAL_NVME_TREE["subsystems"]["nvme-subsys1"])


def test_netdev_and_rdma_port_of_the_nic(gpu_node: FakeHost) -> None:
    found = sections(ROOT, "netdev", "infiniband")
    interface = by(found["netdev"]["interfaces"], "name")["ens1f0np0"]
    assert (interface["bdf"], interface["driver"], interface["mtu"]) == (SWITCH_NIC, "mlx5_core", 4200)
    (device,) = found["infiniband"]["devices"]
    assert device["name"] == "mlx5_0" and device["bdf"] == SWITCH_NIC and device["netdevs"] == ["ens1f0np0"]
    (port,) = found["infiniband"]["ports"]
    assert (port["state"], port["active"], port["rate_gbps"], port["link_layer"]) == (
        "ACTIVE", True, 400.0, "InfiniBand")  # fmt: skip


def test_nvidia_fs_proc_files_and_devices(gpu_node: FakeHost) -> None:
    found = sections(ROOT, "nvidia_fs_stats", "nvidia_fs_devices", "nvidia_fs_version", "nvidia_fs_modules")
    stats = found["nvidia_fs_stats"]
    assert stats["status"] == "ok" and stats["gds_version"] == "0.9.0.743"
    assert stats["counters"]["reads"]["n"] == 424436862 and stats["active_shadow_buffer"] == 128 << 20
    devices = found["nvidia_fs_devices"]
    assert devices["count"] == 16 and devices["devcount"] == 16 and devices["proc_present"] is True
    assert devices["devices"][0] == "/dev/nvidia-fs0"
    assert found["nvidia_fs_version"]["version"] == "2.17"
    assert found["nvidia_fs_modules"]["names"] == ["nvme", "nvme_rdma"]
    assert found["nvidia_fs_modules"]["nvme_registered"] is True


def test_modules_and_driver_version(gpu_node: FakeHost) -> None:
    found = sections(ROOT, "modules", "nvidia_driver")
    modules = found["modules"]["by_name"]
    assert {"nvidia_fs", "nvme_core", "mlx5_ib"} <= set(modules) and modules["nvme_core"]["used_by"] == [
        "nvme"
    ]
    driver = found["nvidia_driver"]
    assert driver["version"] == "550.54.15" and driver["open"] is True


def test_mounts_through_the_kernels_proc_self_links(gpu_node: FakeHost) -> None:
    found = sections(ROOT, "mounts", "mountinfo")
    assert found["mounts"]["artifact"] == "proc/mounts"  # /proc/mounts -> self/mounts -> 4242/mounts
    mounts = by(found["mounts"]["mounts"], "mountpoint")
    assert mounts["/mnt/ckpt"]["fstype"] == "ext4" and mounts["/mnt/nfs"]["opts"]["proto"] == "rdma"
    info = found["mountinfo"]["by_mountpoint"]
    assert info["/mnt/ckpt"]["maj_min"] == "259:1" and info["/mnt/ckpt"]["super_opts"]["data"] == "ordered"
    assert info["/mnt/nfs"]["fstype"] == "nfs4" and info["/mnt/nfs"]["source"] == "192.168.10.50:/export"


def test_kernel_command_line_os_release_and_version(gpu_node: FakeHost) -> None:
    found = sections(ROOT, "cmdline", "os_release", "kernel")
    assert found["cmdline"]["iommu"]["iommu"] == "pt" and found["cmdline"]["nvme_core"]["multipath"] == "Y"
    assert found["os_release"]["artifact"] == "etc/os-release"  # a link to ../usr/lib/os-release
    assert found["os_release"]["id"] == "ubuntu" and found["os_release"]["version_id"] == "22.04"
    assert found["kernel"]["release"] == "5.15.0-101-generic"


def test_cufile_json_of_the_host(gpu_node: FakeHost) -> None:
    found = section(ROOT, "cufile_json")
    assert found["file"] == {"path": "/etc/cufile.json", "selected_by": "default", "exists": True}
    assert found["config"]["properties.allow_compat_mode"] is False
    assert found["config"]["properties.max_direct_io_size_kb"] == 16384
    assert "properties.rdma_dev_addr_list" in found["explicit"]


def test_cufile_json_named_by_the_environment(
    gpu_node: FakeHost, fs: FakeFilesystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    gpu_node.add_cufile_json('{"properties": {"allow_compat_mode": true}}', "/opt/job/cufile.json")
    monkeypatch.setenv("CUFILE_ENV_PATH_JSON", "/opt/job/cufile.json")
    found = section(ROOT, "cufile_json")  # another host's root: this process's variable is not its
    assert found["file"]["selected_by"] == "default"
    # the root of this kernel (its boot id: a container given the host's /): the variable applies
    fs.create_file("/proc/sys/kernel/random/boot_id", contents="4f5e\n")
    gpu_node.set_file("/proc/sys/kernel/random/boot_id", "4f5e\n")
    found = section(ROOT, "cufile_json")
    assert found["file"]["selected_by"] == "CUFILE_ENV_PATH_JSON" and found["file"]["exists"] is True
    assert found["config"]["properties.allow_compat_mode"] is True


def test_kallsyms_symbols(gpu_node: FakeHost) -> None:
    found = section(ROOT, "kallsyms")
    assert found["readable"] is True and found["has_p2pdma"] is True and found["has_nvidia_p2p"] is True
    assert found["has_nvfs_dma_ops"] is True and found["addresses_hidden"] is False


def test_whole_host_capture_has_no_error_and_no_invented_section(gpu_node: FakeHost) -> None:
    found = sections(ROOT, *HOST_SECTIONS)
    statuses = {name: value["status"] for name, value in found.items()}
    assert "error" not in statuses.values() and "unparsable" not in statuses.values(), statuses
    # what this tree does not hold is missing (unknown), never ok
    assert statuses["etc_default_grub"] == "missing" and statuses["nvidia_fs_build"] == "missing"
    assert statuses["pci"] == statuses["nvme_sysfs"] == statuses["nvidia_fs_stats"] == "ok"


# --- NVMe-oF: one subsystem over two paths, one live, one reconnecting ---------------------------


@pytest.fixture
def nvmeof_node(fs: FakeFilesystem) -> FakeHost:
    host = FakeHost(fs, ROOT)
    host.add_nvmeof_subsystem(1, paths=2, transport="rdma", states=("live", "connecting"),
                              ana_states=("optimized", "inaccessible"))  # fmt: skip
    host.add_nvmeof_subsystem(5, paths=1, transport="tcp", states=("live",))
    return host


def test_nvmeof_two_paths_one_live_one_connecting(nvmeof_node: FakeHost) -> None:
    found = section(ROOT, "nvme_sysfs")
    controllers = by(found["controllers"], "name")
    assert controllers["nvme1"]["state"] == "live" and controllers["nvme2"]["state"] == "connecting"
    assert {controllers[name]["transport"] for name in ("nvme1", "nvme2")} == {"rdma"}
    assert (
        controllers["nvme1"]["traddr"] == "192.168.10.10"
        and controllers["nvme2"]["traddr"] == "192.168.10.11"
    )
    assert controllers["nvme2"]["subsystem"] == "nvme-subsys1" and controllers["nvme2"]["fabrics"] is True
    subsystem = by(found["subsystems"], "name")["nvme-subsys1"]
    assert subsystem["controllers"] == ["nvme1", "nvme2"] and subsystem["namespaces"] == ["nvme1n1"]


def test_nvmeof_paths_and_their_ana_states(nvmeof_node: FakeHost) -> None:
    found = section(ROOT, "nvme_sysfs")
    paths = by([p for p in found["paths"] if p["head"] == "nvme1n1"], "name")
    assert len(paths) == 2
    assert (
        paths["nvme1c1n1"]["ana_state"] == "optimized" and paths["nvme1c2n1"]["ana_state"] == "inaccessible"
    )
    assert paths["nvme1c2n1"]["controller"] == "nvme2"
    head = by(found["block"], "name")["nvme1n1"]
    assert head["size_bytes"] == 7_681_501_126_656 and head["nr_requests"] == 127


def test_nvmeof_tcp_controller_timeouts_and_source_address(nvmeof_node: FakeHost) -> None:
    tcp = by(section(ROOT, "nvme_sysfs")["controllers"], "name")["nvme5"]
    assert tcp["transport"] == "tcp" and tcp["src_addr"] == "192.168.10.100" and tcp["trsvcid"] == "4420"
    assert tcp["numa_node"] is None  # -1: no affinity, not node 0
    assert tcp["ctrl_loss_tmo_s"] == 600 and tcp["fast_io_fail_tmo"] == "off" and tcp["kato_s"] == 5


# --- a container: /proc and a GPU in sysfs, but no /dev/nvidia-fs*, no nvidia-fs, no udev database -


@pytest.fixture
def container(fs: FakeFilesystem, monkeypatch: pytest.MonkeyPatch) -> FakeHost:
    monkeypatch.delenv("CUFILE_ENV_PATH_JSON", raising=False)
    host = FakeHost(fs, ROOT)
    host.sysfs.add_pci("0000:00:01.0", cls=0x060400, vendor=0x8086, driver="pcieport")
    host.add_gpu("0000:01:00.0", parent="0000:00:01.0")
    host.add_proc_basics()
    host.add_mount("overlay", "/", "overlay", "rw,relatime", major_minor="0:48")
    host.add_modules(["nvidia", "nvme", "nvme_core"])
    host.path("/dev").mkdir()
    return host


def test_container_without_nvidia_fs_devices(container: FakeHost) -> None:
    found = sections(ROOT, "nvidia_fs_devices", "nvidia_fs_stats", "nvidia_fs_version", "modules")
    devices = found["nvidia_fs_devices"]
    assert devices["status"] == "ok" and devices["count"] == 0 and devices["devices"] == []
    assert devices["proc_present"] is False and devices["devcount"] is None
    assert (
        found["nvidia_fs_stats"]["status"] == "missing" and found["nvidia_fs_version"]["status"] == "missing"
    )
    assert "nvidia_fs" not in found["modules"]["names"]
    assert not container.path("/run/udev").exists()


def test_container_without_rdma_nvme_numa_or_iommu_trees(container: FakeHost) -> None:
    found = sections(ROOT, "infiniband", "iommu_groups", "numa", "nvme_sysfs", "netdev")
    for name in ("infiniband", "iommu_groups", "numa", "netdev"):
        assert found[name]["status"] == "missing", name  # unknown, never "zero devices"
    assert found["nvme_sysfs"]["controllers"] == [] and found["nvme_sysfs"]["nvme_core"]["multipath"] is None


def test_container_without_cufile_json_or_kallsyms(container: FakeHost) -> None:
    found = sections(ROOT, "cufile_json", "kallsyms", "etc_default_grub")
    assert found["cufile_json"]["file"]["exists"] is False and found["cufile_json"]["explicit"] == []
    kallsyms = found["kallsyms"]
    assert kallsyms["readable"] is False and kallsyms["has_p2pdma"] is None  # unknown, not "absent"
    assert found["etc_default_grub"]["status"] == "missing"


def test_container_gpu_is_still_seen_in_sysfs(container: FakeHost) -> None:
    gpu = pci_devices(ROOT)["0000:01:00.0"]
    assert gpu["kind"] == "gpu" and gpu["root_port"] == "0000:00:01.0" and gpu["numa_node"] == 0


# --- unreadable files and attributes (an ordinary user; root reads any mode) ----------------------


def test_unreadable_proc_file_is_denied(gpu_node: FakeHost) -> None:
    gpu_node.make_unreadable("/proc/driver/nvidia-fs/stats")
    found = section(ROOT, "nvidia_fs_stats")
    assert found["status"] == "denied" and "permission denied" in found["detail"]


def test_unreadable_link_width_is_unknown_not_guessed(gpu_node: FakeHost) -> None:
    gpu_node.make_unreadable(f"/sys/bus/pci/devices/{SWITCH_GPU}/current_link_width")
    devices = pci_devices(ROOT)
    gpu = devices[SWITCH_GPU]
    assert gpu["current_link_width"] is None and gpu["max_link_width"] == 16 and gpu["numa_node"] == 0
    assert devices[SWITCH_NVME]["current_link_width"] == 4


def test_unreadable_controller_state_is_unknown(nvmeof_node: FakeHost) -> None:
    nvmeof_node.make_unreadable("/sys/class/nvme/nvme2/state")
    controllers = by(section(ROOT, "nvme_sysfs")["controllers"], "name")
    assert controllers["nvme2"]["state"] is None and controllers["nvme2"]["transport"] == "rdma"
    assert controllers["nvme1"]["state"] == "live"


def test_unreadable_kallsyms_says_so(gpu_node: FakeHost) -> None:
    gpu_node.make_unreadable("/proc/kallsyms")
    found = section(ROOT, "kallsyms")
    assert found["readable"] is False and found["has_nvidia_p2p"] is None and "Permission" in found["note"]


def test_unreadable_cufile_json_is_denied_not_defaults(gpu_node: FakeHost) -> None:
    gpu_node.make_unreadable("/etc/cufile.json")
    found = section(ROOT, "cufile_json")
    assert found["status"] == "denied" and "config" not in found


def test_unreadable_device_directory_is_denied_not_empty(gpu_node: FakeHost) -> None:
    gpu_node.make_unreadable("/sys/bus/pci/devices")
    assert section(ROOT, "pci")["status"] == "denied"


# --- a device unplugged while the reader walks the tree --------------------------------------------


def test_pci_device_gone_after_listing(gpu_node: FakeHost, monkeypatch: pytest.MonkeyPatch) -> None:
    gone = os.path.relpath(os.path.realpath(gpu_node.path(f"/sys/bus/pci/devices/{SWITCH_NIC}")), ROOT)
    gpu_node.vanish_after_listing(monkeypatch, pci, "/sys/bus/pci/devices", gone)
    devices = pci_devices(ROOT)
    nic = devices[SWITCH_NIC]  # listed, then gone: its name only, nothing made up
    assert (
        nic["class"] is None and nic["kind"] == "other" and nic["numa_node"] is None and nic["driver"] is None
    )
    assert devices[SWITCH_GPU]["kind"] == "gpu" and devices[SWITCH_GPU]["current_link_width"] == 16


def test_nvme_controller_gone_after_listing(nvmeof_node: FakeHost, monkeypatch: pytest.MonkeyPatch) -> None:
    nvmeof_node.vanish_after_listing(monkeypatch, nvme_sysfs, "/sys/class/nvme",
                                     "/sys/devices/virtual/nvme-fabrics/ctl/nvme2")  # fmt: skip
    found = section(ROOT, "nvme_sysfs")
    controllers = by(found["controllers"], "name")
    assert controllers["nvme2"]["state"] is None and controllers["nvme2"]["paths"] == []
    assert controllers["nvme1"]["state"] == "live" and len(found["paths"]) == 2  # nvme1c1n1, nvme5c5n1


def test_netdev_gone_after_listing(gpu_node: FakeHost, monkeypatch: pytest.MonkeyPatch) -> None:
    net = os.path.relpath(os.path.realpath(gpu_node.path("/sys/class/net/ens1f0np0")), ROOT)
    gpu_node.vanish_after_listing(monkeypatch, rdma, "/sys/class/net", net)
    (interface,) = section(ROOT, "netdev")["interfaces"]
    assert interface["name"] == "ens1f0np0" and interface["mtu"] is None and interface["bdf"] is None


def test_dangling_class_links_are_read_as_unknown(gpu_node: FakeHost) -> None:
    os.symlink(
        "../../devices/pci0000:20/0000:20:01.0/0000:21:00.0/nvme/nvme7",
        gpu_node.path("/sys/class/nvme/nvme7"),
    )
    os.symlink("../../../devices/pci0000:20/0000:20:01.0/0000:21:00.0",
               gpu_node.path("/sys/bus/pci/devices/0000:21:00.0"))  # fmt: skip
    found = sections(ROOT, "nvme_sysfs", "pci")
    nvme7 = by(found["nvme_sysfs"]["controllers"], "name")["nvme7"]
    assert nvme7["state"] is None and nvme7["transport"] is None
    assert by(found["pci"]["devices"], "bdf")["0000:21:00.0"]["class"] is None


# --- links that leave the host root are not followed ------------------------------------------------

SECRET = "outside the host root"


def test_pci_device_linking_out_is_refused(gpu_node: FakeHost) -> None:
    gpu_node.fs.create_file("/elsewhere/0000:55:00.0/class", contents="0x030200\n")
    gpu_node.link_out("/sys/bus/pci/devices/0000:55:00.0", "/elsewhere/0000:55:00.0")
    device = pci_devices(ROOT)["0000:55:00.0"]
    assert device["class"] is None and device["path"] is None and device["kind"] == "other"


def test_nvme_attribute_linking_out_is_refused(nvmeof_node: FakeHost) -> None:
    nvmeof_node.link_out("/sys/class/nvme/nvme1/state", "/etc/real-state", "live\n")
    artifact = capture_source(BY_SECTION["nvme_sysfs"].sources[0], Path(ROOT))
    assert artifact.status is ArtifactStatus.OK
    assert "state" not in json.loads(artifact.data)["controllers"]["nvme1"]


def test_rdma_device_linking_out_is_refused(gpu_node: FakeHost) -> None:
    gpu_node.link_out("/sys/class/infiniband/mlx5_9", "/elsewhere/mlx5_9")
    devices = by(section(ROOT, "infiniband")["devices"], "name")
    assert devices["mlx5_9"]["bdf"] is None and devices["mlx5_9"]["fw_ver"] is None
    assert devices["mlx5_0"]["fw_ver"] == "28.39.1002"


def test_cufile_json_linking_out_is_not_read(gpu_node: FakeHost) -> None:
    gpu_node.link_out(
        "/etc/cufile.json", "/etc/container-cufile.json", '{"properties": {"allow_compat_mode": true}}'
    )
    found = section(ROOT, "cufile_json")
    # resolved inside the root, as on the host (RESOLVE_IN_ROOT): a dangling link there, so the
    # file is absent as cuFile on that host finds it; this machine's file is never read
    assert found["status"] == "ok" and found["file"]["exists"] is False
    gpu_node.set_file("/etc/container-cufile.json", '{"properties": {"allow_compat_mode": false}}')
    assert section(ROOT, "cufile_json")["config"]["properties.allow_compat_mode"] is False


def test_proc_file_linking_out_is_refused(gpu_node: FakeHost) -> None:
    gpu_node.link_out("/proc/cmdline", "/proc-of-the-container/cmdline", "BOOT_IMAGE=/vmlinuz iommu=off\n")
    found = section(ROOT, "cmdline")
    assert found["status"] == "missing"  # the link dangles inside the root; iommu=off is not read
    gpu_node.set_file("/proc-of-the-container/cmdline", "BOOT_IMAGE=/vmlinuz iommu=pt\n")
    assert "iommu=pt" in json.dumps(section(ROOT, "cmdline"))


def test_kallsyms_linking_out_is_refused(gpu_node: FakeHost) -> None:
    gpu_node.link_out("/proc/kallsyms", "/outside/kallsyms", KALLSYMS)
    found = section(ROOT, "kallsyms")
    assert found["readable"] is False and found["has_nvidia_p2p"] is None


def test_dkms_build_log_linking_out_is_refused(gpu_node: FakeHost) -> None:
    gpu_node.link_out(
        "/var/lib/dkms/nvidia-fs/2.17.5/build/make.log", "/outside/make.log", "nvidia-fs.ko error\n"
    )
    assert section(ROOT, "nvidia_fs_build")["status"] == "missing"


# --- the other host files: cuFile's log, GRUB defaults, the DKMS build log, os-release's fallback ---

DATA = Path(__file__).resolve().parents[1] / "data"
# real files, read before pyfakefs hides the real filesystem
CUFILE_LOG = (DATA / "cufile/gdsnvfs-019--cufile.log").read_text()
GRUB = (
    (DATA / "system/etc-default-grub.amd_iommu_off-iommu_pt.stelline-puget.txt").read_text().split("\n", 1)[1]
)
MAKE_LOG = (DATA / "nvidia_fs/gdsnvfs-080--make.log").read_text()


def test_cufile_log_named_by_the_environment(gpu_node: FakeHost, monkeypatch: pytest.MonkeyPatch) -> None:
    gpu_node.set_file("/var/log/job/cufile.log", CUFILE_LOG)
    monkeypatch.setenv("CUFILE_LOGFILE_PATH", "/var/log/job/cufile.log")
    found = section(ROOT, "cufile_log")
    assert found["status"] == "ok" and found["counts"]["by_level"]["ERROR"] == 7
    assert "nvme_not_registered" in found["kinds"] and found["pids"] == [41294, 41337]


def test_cufile_log_absent_or_unreadable(gpu_node: FakeHost, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUFILE_LOGFILE_PATH", "/var/log/job/cufile.log")
    assert section(ROOT, "cufile_log")["status"] == "missing"
    gpu_node.set_file("/var/log/job/cufile.log", CUFILE_LOG)
    gpu_node.make_unreadable("/var/log/job/cufile.log")
    assert section(ROOT, "cufile_log")["status"] == "denied"


def test_grub_defaults_and_os_release_fallback(gpu_node: FakeHost) -> None:
    gpu_node.set_file("/etc/default/grub", GRUB)
    os.unlink(gpu_node.path("/etc/os-release"))  # a host with only /usr/lib/os-release
    found = sections(ROOT, "etc_default_grub", "os_release")
    assert found["etc_default_grub"]["iommu"]["amd_iommu"] == "off"
    assert found["etc_default_grub"]["iommu"]["iommu"] == "pt"
    assert found["os_release"]["artifact"] == "usr/lib/os-release" and found["os_release"]["id"] == "ubuntu"


def test_newest_dkms_build_log(gpu_node: FakeHost) -> None:
    old = gpu_node.set_file("/var/lib/dkms/nvidia-fs/2.17.5/build/make.log", "make: old build\n")
    os.utime(old, (1_700_000_000, 1_700_000_000))
    gpu_node.set_file("/var/lib/dkms/nvidia-fs/2.26.6/build/make.log", MAKE_LOG)
    found = section(ROOT, "nvidia_fs_build")
    assert found["status"] == "ok" and found["failed"] is True
    assert found["kernel"] == "6.18.8-9.213.amzn2023.aarch64"


def test_nvme_cli_readers_never_run_for_another_root(gpu_node: FakeHost) -> None:
    # the nvme commands address this machine's /dev/nvmeX: under --host-root they would describe
    # the wrong host, so the sections are missing, not filled from here
    found = sections(ROOT, "nvme_smart", "nvme_id_ctrl")
    assert found["nvme_smart"]["status"] == found["nvme_id_ctrl"]["status"] == "missing"


def test_an_empty_host_root_is_refused(fs: FakeFilesystem) -> None:
    """No proc/, sys/ or etc/: no host's / (a DaemonSet that forgot to mount it), never a healthy one."""
    fs.create_dir(ROOT)
    with pytest.raises(UserError, match=r"/host has no proc/, sys/ or etc/: is the host's / mounted there\?"):
        sections(ROOT, *HOST_SECTIONS)


def test_a_bare_host_root_gives_no_section_ok_with_invented_data(fs: FakeFilesystem) -> None:
    fs.create_dir(ROOT + "/etc")  # an etc/ alone: read for what is there
    found = sections(ROOT, *HOST_SECTIONS)
    # kallsyms and cufile.json say themselves that nothing was read; this process's environment
    # and memlock limit are not that root's host (it gives no boot id: another host), so not read
    own = {"kallsyms", "cufile_json"}
    assert {name for name, value in found.items() if value["status"] == "ok"} == own
    assert found["memlock"]["status"] == found["cufile_env"]["status"] == "missing"
    assert "another host" in found["memlock"]["detail"]
    assert found["kallsyms"]["readable"] is False and found["cufile_json"]["file"]["exists"] is False
    assert (
        found["nvme_sysfs"]["status"]
        == found["nvidia_fs_devices"]["status"]
        == found["pci"]["status"]
        == "missing"
    )
