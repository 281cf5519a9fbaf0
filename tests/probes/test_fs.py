from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from blockfuzz import check_damaged, check_garbage, read

from gdsdoctor.errors import ParseError
from gdsdoctor.probes import fs
from tests import loopfs

PROC5_EXAMPLE = "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue"


def test_proc5_example_line() -> None:
    (mount,) = fs.parse_mountinfo(PROC5_EXAMPLE, "proc/self/mountinfo")["mounts"]
    assert mount["mount_id"] == 36 and mount["parent_id"] == 35 and mount["maj_min"] == "98:0"
    assert mount["root"] == "/mnt1" and mount["mountpoint"] == "/mnt2" and mount["bind"] is True
    assert mount["opts"] == {"rw": True, "noatime": True} and mount["optional"] == ["master:1"]
    assert mount["fstype"] == "ext3" and mount["source"] == "/dev/root"
    assert mount["super_opts"] == {"rw": True, "errors": "continue"}
    assert mount["all_opts"]["errors"] == "continue" and mount["src"]["line"] == 1


def test_escapes_and_several_optional_fields() -> None:
    line = r"100 1 0:50 / /data\040disk rw shared:7 master:2 - nfs4 srv:/ex\040port rw,vers=4.2,proto=rdma"
    (mount,) = fs.parse_mountinfo(line, "x")["mounts"]
    assert mount["mountpoint"] == "/data disk" and mount["source"] == "srv:/ex port"
    assert mount["optional"] == ["shared:7", "master:2"] and mount["super_opts"]["proto"] == "rdma"


def test_captured_mountinfo() -> None:
    text = read("fs", "mountinfo.debian12-vm.txt")
    assert fs.recognise_mountinfo(text)
    section = fs.parse_mountinfo(text, "proc/self/mountinfo")
    assert len(section["mounts"]) == len(text.strip().split("\n"))
    root = section["by_mountpoint"]["/"]
    assert root["fstype"] == "ext4" and root["source"] == "/dev/vda"
    assert section["by_mountpoint"]["/proc"]["fstype"] == "proc"


def test_real_mountinfo_of_this_machine() -> None:
    text = Path("/proc/self/mountinfo").read_text()
    section = fs.parse_mountinfo(text, "proc/self/mountinfo")
    assert len(section["mounts"]) == len(text.strip().split("\n"))
    assert "/" in section["by_mountpoint"]


def test_df_exact_and_human() -> None:
    exact = fs.parse_df(read("fs", "df-PT-B1.debian12-coreutils9.1.txt"), "cmd/df.txt")
    root = exact["by_mountpoint"]["/"]
    assert root["fstype"] == "ext4" and root["source"] == "/dev/vda" and root["exact"] is True
    assert root["size_bytes"] == 270553174016 and root["use_pct"] == 22 and root["src"]["line"] == 4
    human = fs.parse_df(read("fs", "df-hT.debian12-coreutils9.1.txt"), "cmd/df.txt")["by_mountpoint"]["/"]
    assert (
        human["exact"] is False and abs(human["size_bytes"] - root["size_bytes"]) < 0.01 * root["size_bytes"]
    )


def test_df_without_type_in_1k_blocks_and_wrapped_device_name() -> None:
    text = (
        "Filesystem     1K-blocks    Used Available Use% Mounted on\n"
        "/dev/mapper/vg_scratch-lv_checkpoints\n"
        "               1048576  524288    524288  50% /mnt/ckpt\n"
    )
    (entry,) = fs.parse_df(text, "x")["filesystems"]
    assert entry["source"] == "/dev/mapper/vg_scratch-lv_checkpoints" and entry["fstype"] is None
    assert entry["size_bytes"] == 1024**3 and entry["use_pct"] == 50 and entry["src"]["line"] == 2


def test_real_df_of_this_machine() -> None:
    run = subprocess.run(fs.PROBES[1].sources[0].argv, capture_output=True, text=True, timeout=30)
    section = fs.parse_df(run.stdout, "cmd/df.txt")
    assert "/" in section["by_mountpoint"] and section["by_mountpoint"]["/"]["size_bytes"] > 0


def test_recognisers_do_not_claim_other_formats() -> None:
    mountinfo, df = read("fs", "mountinfo.debian12-vm.txt"), read("fs", "df-PT-B1.debian12-coreutils9.1.txt")
    assert fs.recognise_df(df) and not fs.recognise_df(mountinfo) and not fs.recognise_mountinfo(df)
    proc_mounts = "/dev/nvme0n1p1 /mnt/ckpt ext4 rw,relatime,data=ordered 0 0\n"
    assert not fs.recognise_mountinfo(proc_mounts) and not fs.recognise_df(proc_mounts)
    lsblk_json = read("lsblk", "lsblk-J.util-linux-2.31-ubuntu18.04-aws-nvme.json")
    assert not fs.recognise_mountinfo(lsblk_json) and not fs.recognise_df(lsblk_json)
    with pytest.raises(ParseError):
        fs.parse_mountinfo(proc_mounts, "x")
    with pytest.raises(ParseError):
        fs.parse_df(proc_mounts, "x")


def test_garbage_and_damaged_samples() -> None:
    check_garbage(fs.parse_mountinfo)
    check_garbage(fs.parse_df)
    check_damaged(fs.parse_mountinfo, read("fs", "mountinfo.debian12-vm.txt"))
    check_damaged(fs.parse_df, read("fs", "df-PT-B1.debian12-coreutils9.1.txt"))


# ----- a real loop-mounted filesystem (root only)


def _loop_mount_skip_reason(mkfs: str) -> str | None:
    if os.geteuid() != 0:
        return "needs root (losetup/mount)"
    for tool in (mkfs, "losetup", "mount", "umount"):
        if shutil.which(tool) is None:
            return f"{tool} not installed"
    return None


@pytest.fixture
def loop_mount(tmp_path: Path) -> Iterator:
    """Make, loop-attach and mount a small filesystem with chosen options; always cleaned up
    (the image too: tests/loopfs.py)."""
    with contextlib.ExitStack() as stack:

        def mount(mkfs: str, options: str, size_mb: int) -> str:
            point = tmp_path / "mnt"
            fstype = mkfs.removeprefix("mkfs.")
            stack.enter_context(
                loopfs.loop_mount(fstype, tmp_path / "fs.img", size_mb << 20, point, (), options)
            )
            return str(point)

        yield mount


def _mounted(point: str) -> dict:
    return fs.parse_mountinfo(Path("/proc/self/mountinfo").read_text(), "x")["by_mountpoint"][point]


@pytest.mark.skipif(
    _loop_mount_skip_reason("mkfs.ext4") is not None, reason=str(_loop_mount_skip_reason("mkfs.ext4"))
)
def test_real_ext4_loop_mount_options(loop_mount) -> None:
    point = loop_mount("mkfs.ext4", "noatime,data=ordered,errors=remount-ro", 64)
    mount = _mounted(point)
    assert mount["fstype"] == "ext4" and mount["source"].startswith("/dev/loop")
    assert mount["opts"]["noatime"] is True and mount["super_opts"]["errors"] == "remount-ro"
    assert mount["all_opts"]["data"] == "ordered"


@pytest.mark.skipif(
    _loop_mount_skip_reason("mkfs.xfs") is not None, reason=str(_loop_mount_skip_reason("mkfs.xfs"))
)
def test_real_xfs_loop_mount_options(loop_mount) -> None:
    point = loop_mount("mkfs.xfs", "noatime,inode64,logbsize=256k", 320)
    mount = _mounted(point)
    assert mount["fstype"] == "xfs" and mount["opts"]["noatime"] is True
    assert mount["super_opts"]["inode64"] is True and mount["super_opts"]["logbsize"] == "256k"
