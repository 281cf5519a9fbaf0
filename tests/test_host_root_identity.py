"""--host-root reads one host: commands run only for this kernel's root or pointed at the other one.

Real data: libnvme's /sys dump (tests/data/nvme_sysfs/tree-pcie.tar.xz: three PCIe controllers, two
subsystems, one namespace reached through two of them) and util-linux's lsblk --sysroot dump
(tests/data/lsblk/simple-nvme.tar.xz); the real lsblk binary of this machine.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gdsdoctor.capture.live import ANOTHER_HOST, capture_source, same_kernel
from gdsdoctor.commands import topology_view as topo
from gdsdoctor.model import ArtifactStatus
from gdsdoctor.pipeline import check
from gdsdoctor.probes import BY_SECTION
from tests.conftest import THIS_KERNEL, unpack_dump, write_tree

DATA = Path(__file__).resolve().parent / "data"


def _extract(archive: Path, into: Path) -> Path:
    return unpack_dump(archive, into)


@pytest.fixture
def tree_pcie(tmp_path: Path) -> Path:
    return _extract(DATA / "nvme_sysfs" / "tree-pcie.tar.xz", tmp_path / "dump")


def test_this_kernels_root_is_the_same_host(tmp_path: Path) -> None:
    assert same_kernel(Path("/"))
    assert same_kernel(write_tree(tmp_path / "container-view", THIS_KERNEL))


def test_near_miss_another_boot_id_or_none_is_another_host(tmp_path: Path) -> None:
    other = "0b3f7d2c-1e55-4f0e-9d7a-2a1c9c4e8f10\n"
    assert not same_kernel(write_tree(tmp_path / "other", {"proc/sys/kernel/random/boot_id": other}))
    assert not same_kernel(write_tree(tmp_path / "dump", {"sys/class/nvme/.keep": ""}))


def test_commands_of_the_running_kernel_are_not_run_for_another_root(tree_pcie: Path) -> None:
    for section in ("dmesg", "lspci", "lspci_tree", "nvme_list"):
        for source in (s for s in BY_SECTION[section].sources if s.argv):
            artifact = capture_source(source, tree_pcie, same_host=False)
            assert (artifact.status, artifact.detail) == (ArtifactStatus.MISSING, ANOTHER_HOST), source


@pytest.mark.skipif(shutil.which("lsblk") is None, reason="util-linux lsblk not installed")
def test_lsblk_is_pointed_at_the_other_root(tmp_path: Path) -> None:
    root = _extract(DATA / "lsblk" / "simple-nvme.tar.xz", tmp_path) / "simple-nvme"
    probe = BY_SECTION["lsblk"]
    artifact = capture_source(probe.sources[0], root, same_host=False)
    assert artifact.status is ArtifactStatus.OK, artifact.detail
    names = {d["name"] for d in probe.parse(artifact.data.decode(), artifact.name)["devices"]}
    assert {"sda", "nvme0n1"} <= names  # the dump's disks, not this machine's


def test_tree_pcie_dump_shows_its_controllers_subsystems_and_dual_ported_namespace(tree_pcie: Path) -> None:
    found = topo.topology_of([], host_root=tree_pcie)
    text = topo.render_text(found)
    assert found.source == "nvme_sysfs"
    # Each drive named with its model, the second port of the dual-ported drive too (issue 25).
    for line in ("NVMe nvme0 0214:90:00.0 — 3.2TB NVMe Gen4 U.2 SSD V  subsystem nvme-subsys0",
                 "NVMe nvme1 052e:78:00.0 — 3.2TB NVMe Gen4 U.2 SSD III  subsystem nvme-subsys1",
                 "NVMe nvme2 058e:78:00.0 — 3.2TB NVMe Gen4 U.2 SSD III  subsystem nvme-subsys1",
                 "nvme1n1 5.4 GiB (multipath, via nvme1c1n1)", "nvme1n1 5.4 GiB (multipath, via nvme1c2n1)"):  # fmt: skip
        assert line in text, text
    assert "Virtio" not in text and "(no GPU found)" in text  # nothing of this machine


def test_check_of_the_dump_reports_its_devices_and_not_this_host(tree_pcie: Path) -> None:
    analysis = check(tree_pcie)
    devices = [d for d in analysis.facts["derived"]["topology"]["devices"] if d["kind"] == "nvme"]
    assert sorted((d["name"], d["subsystem"]) for d in devices) == [
        ("nvme0", "nvme-subsys0"), ("nvme1", "nvme-subsys1"), ("nvme2", "nvme-subsys1"),
    ]  # fmt: skip
    subsystems = analysis.facts["nvme_sysfs"]["subsystems"]
    assert sorted(s["name"] for s in subsystems) == ["nvme-subsys0", "nvme-subsys1"]
    probes = {p["name"]: p for p in analysis.report["probes"]}
    for name in ("dmesg", "lspci", "df", "memlock"):
        assert probes[name]["status"] == "missing" and probes[name]["detail"] == ANOTHER_HOST
