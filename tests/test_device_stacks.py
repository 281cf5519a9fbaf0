"""Explanations follow the device chain (issue 31 item 7): a finding explains another only when
their devices are on one stack (a namespace under the controller that reset, a loop device and
the filesystem its image is on); a full backing store on an unrelated loop device explains no
shutdown on the checkpoint's device. And ``-q`` never hides a critical finding.

On pasted outputs (kernel lines as the kernel prints them, losetup's JSON as util-linux prints
it) and on real loop devices (root only)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import gdsdoctor.api as gd
from gdsdoctor.facts.derived import device_stacks
from gdsdoctor.pipeline import check
from gdsdoctor.probes import losetup
from gdsdoctor.report.render import render
from tests.loopfs import loop_device, loop_mount, skip_unless_root_with, tmpfs

SHUTDOWN = "fs-errors-or-shutdown"
BACKING = "backing-store-full"
MOUNTS = """\
/dev/vda1 / ext4 rw,relatime 0 0
/dev/vdb /srv xfs rw,relatime 0 0
/dev/loop0 /mnt/ckpt xfs rw,relatime 0 0
"""
LOSETUP = {
    "loopdevices": [
        {"name": "/dev/loop0", "sizelimit": 0, "offset": 0, "autoclear": False, "ro": False,
         "back-file": "/srv/images/ckpt.img", "dio": False, "log-sec": 512},
        {"name": "/dev/loop3", "sizelimit": 0, "offset": 0, "autoclear": True, "ro": False,
         "back-file": "/var/lib/scratch/cache.img (deleted)", "dio": False, "log-sec": 512},
    ]
}  # fmt: skip
DMESG = """\
[  262.397585] critical space allocation error, dev {full}, sector 198736 op 0x1:(WRITE) flags 0xc800 phys_seg 128 prio class 2
[  262.400060] critical space allocation error, dev {full}, sector 199760 op 0x1:(WRITE) flags 0x8800 phys_seg 128 prio class 2
[  382.087342] XFS (loop0): User initiated shutdown received.
[  382.088634] XFS (loop0): Log I/O Error (0x6) detected at xfs_fs_goingdown+0x8e/0xd0 (fs/xfs/xfs_fsops.c:475).  Shutting down filesystem.
[  382.091293] XFS (loop0): Please unmount the filesystem and rectify the problem(s)
"""


def _by_id(report: gd.Report) -> dict[str, dict]:
    return {f["id"]: f for f in report.findings}


def _analyze(full: str, path: str | None = "/mnt/ckpt") -> gd.Report:
    texts = {
        "mounts": MOUNTS,
        "losetup.json": json.dumps(LOSETUP, indent=3),
        "dmesg": DMESG.format(full=full),
    }
    return gd.analyze_texts(texts, path=path)


@pytest.mark.parametrize("path", ["/mnt/ckpt", None])
def test_a_full_backing_store_on_an_unrelated_loop_device_explains_no_shutdown(path: str | None) -> None:
    report = _analyze("loop3", path)
    found = _by_id(report)
    assert found[SHUTDOWN]["explained_by"] is None and found[BACKING]["explained_by"] is None
    assert SHUTDOWN not in found[BACKING]["explains"]
    if path:  # the checkpoint's shutdown comes first
        assert report.findings[0]["id"] == SHUTDOWN
    assert report.status == "CRITICAL"


def test_a_full_backing_store_under_the_same_loop_device_explains_its_shutdown() -> None:
    found = _by_id(_analyze("loop0"))
    assert found[SHUTDOWN]["explained_by"] == BACKING and SHUTDOWN in found[BACKING]["explains"]


NVME = """\
[  100.000000] nvme {ctrl}: I/O 123 QID 4 timeout, aborting
[  100.100000] nvme {ctrl}: I/O 123 QID 4 timeout, reset controller
[  130.000000] nvme {ctrl}: Abort status: 0x371
[  131.000000] blk_update_request: I/O error, dev nvme0n1, sector 2048 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 0
[  132.000000] blk_update_request: I/O error, dev nvme0n1, sector 4096 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 0
"""


@pytest.mark.parametrize(("ctrl", "folded"), [("nvme0", True), ("nvme1", False)])
def test_io_errors_on_a_namespace_fold_under_its_own_controller_only(ctrl: str, folded: bool) -> None:
    found = _by_id(gd.analyze_texts({"dmesg": NVME.format(ctrl=ctrl)}))
    explained = found["blk-io-errors"]["explained_by"]
    assert (explained is not None) == folded, found["blk-io-errors"]


def test_stacks_join_a_loop_device_to_the_filesystem_its_image_is_on() -> None:
    facts = {
        "mounts": {"status": "ok", "mounts": [
            {"device": "/dev/vda1", "mountpoint": "/"}, {"device": "/dev/vdb", "mountpoint": "/srv"},
            {"device": "/dev/mapper/vg-ckpt", "mountpoint": "/mnt/ckpt"},
        ]},
        "losetup": {"status": "ok", **losetup.parse(json.dumps(LOSETUP), "cmd/losetup-l.json")},
        "lsblk": {"status": "ok", "devices": [
            {"name": "vg-ckpt", "kname": "dm-0", "parents": ["md0"]},
            {"name": "md0", "kname": "md0", "parents": ["nvme0n1p1", "nvme1n1p1"]},
        ]},
        "dmesg": {"status": "ok", "events": [{"device": "nvme1c1n1"}, {"device": "sdb2"}]},
    }  # fmt: skip
    derived = device_stacks.derive(facts)
    below = derived["below"]
    assert "vdb" in below["loop0"] and "vda1" in below["loop3"]  # each on the filesystem of its image
    assert "loop0" not in below["loop3"] and "loop3" not in below["loop0"]
    assert {"md0", "nvme0n1p1", "nvme0n1", "nvme0", "nvme1"} <= set(below["vg-ckpt"])  # down to the disks
    assert "dm-0" in below["vg-ckpt"] and "vg-ckpt" in below["dm-0"]  # two names of one device
    assert below["nvme1c1n1"] == ["nvme1", "nvme1n1"]
    assert below["sdb2"] == ["sdb"] and below["sdb"] == []
    assert derived["mounts"] == {"/srv": "vdb", "/mnt/ckpt": "vg-ckpt"}


def test_two_loop_devices_whose_images_share_a_filesystem_are_not_one_stack() -> None:
    two = {
        "loopdevices": [
            {"name": "/dev/loop0", "back-file": "/var/a.img"},
            {"name": "/dev/loop3", "back-file": "/var/b.img"},
        ]
    }
    texts = {"mounts": MOUNTS, "losetup.json": json.dumps(two), "dmesg": DMESG.format(full="loop3")}
    found = _by_id(gd.analyze_texts(texts, path="/mnt/ckpt"))
    assert found[SHUTDOWN]["explained_by"] is None


def test_losetup_table_and_list_forms_are_read() -> None:
    table = (
        "NAME       SIZELIMIT OFFSET AUTOCLEAR RO BACK-FILE                    DIO LOG-SEC\n"
        "/dev/loop0         0      0         0  0 /srv/images/ckpt image.img   0     512\n"
        "/dev/loop4         0      0         1  1 /var/lib/snapd/snaps/lxd_1.snap   0     512\n"
    )
    devices = losetup.parse(table, "t")["devices"]
    assert [(d["name"], d["back_file"], d["ro"]) for d in devices] == [
        ("loop0", "/srv/images/ckpt image.img", False),
        ("loop4", "/var/lib/snapd/snaps/lxd_1.snap", True),
    ]
    listed = losetup.parse("/dev/loop1: []: (/var/lib/snapd/snaps/core20_2105.snap)\n", "t")["devices"]
    assert listed[0]["back_file"] == "/var/lib/snapd/snaps/core20_2105.snap"
    assert losetup.recognise(table) and losetup.recognise(json.dumps(LOSETUP))


def test_quiet_lists_a_critical_symptom_folded_under_another_cause() -> None:
    report = _analyze("loop0")
    quiet = render(report.data, "text", False, quiet=True)
    lines = quiet.splitlines()
    assert any(
        line.startswith("CRITICAL  fs-errors-or-shutdown") and "explained by" in line for line in lines
    )
    assert any(line.startswith("CRITICAL  backing-store-full") for line in lines)
    markdown = render(report.data, "markdown", False, quiet=True)
    assert "fs-errors-or-shutdown" in markdown


def test_on_real_loop_devices_an_unrelated_full_backing_store_explains_nothing(tmp_path: Path) -> None:
    """loop C's image on a 16 MiB tmpfs, written past it (the kernel's "critical space allocation
    error, dev loopC"), and the checkpoint's XFS on loop B shut down: two causes, the shutdown
    first, neither folded under the other."""
    skip_unless_root_with("mkfs.xfs", "xfs_io", "dd", "losetup")
    with tmpfs(tmp_path / "small", "16m") as small, loop_device("ext4", small / "c.img", 64 << 20) as full:
        subprocess.run(
            ["dd", "if=/dev/zero", f"of={full}", "bs=1M", "count=40", "oflag=direct"],
            capture_output=True, check=False, timeout=120,
        )  # fmt: skip
        with loop_mount("xfs", tmp_path / "b.img", 320 << 20, tmp_path / "ckpt") as device:
            subprocess.run(["xfs_io", "-x", "-c", "shutdown", str(tmp_path / "ckpt")], check=True)
            report = check(target_path=str(tmp_path / "ckpt")).report
    name, full_name = device.removeprefix("/dev/"), full.removeprefix("/dev/")
    mine = [
        f
        for f in report["findings"]
        if f["id"] == SHUTDOWN and any(f"({name})" in e["text"] for e in f["evidence"])
    ]
    assert mine and mine[0]["explained_by"] is None, report["findings"]
    backing = [f for f in report["findings"] if f["id"] == BACKING]
    if backing and not any(name in e["text"] for e in backing[0]["evidence"]):
        assert SHUTDOWN not in backing[0]["explains"]
    assert any(full_name in e["text"] for f in backing for e in f["evidence"]), (
        "no space allocation error seen"
    )
