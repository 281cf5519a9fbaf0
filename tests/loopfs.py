"""Loop-mounted filesystems for tests that run real tools (fio) on a real kernel: root only."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def missing_tools(*tools: str) -> list[str]:
    return [tool for tool in tools if shutil.which(tool) is None]


def skip_unless_root_with(*tools: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to losetup and mount")
    missing = missing_tools("losetup", "mount", "umount", *tools)
    if missing:
        pytest.skip(f"missing tools: {', '.join(missing)}")


@contextlib.contextmanager
def loop_mount(
    fstype: str,
    image: Path,
    size: int,
    mountpoint: Path,
    mkfs_options: tuple[str, ...] = (),
    mount_options: str | None = None,
) -> Iterator[str]:
    """A sparse ``image`` of ``size`` bytes, formatted ``fstype``, attached to a loop device and
    mounted on ``mountpoint`` (with ``mount_options``); yields the device (/dev/loopN).
    Unmounted, detached and the image removed afterwards: what tests write into images (fio's
    gigabytes) must not stay in pytest's temporary directory."""
    mountpoint.mkdir(exist_ok=True)
    with loop_device(fstype, image, size, mkfs_options) as device:
        options = ["-o", mount_options] if mount_options else []
        subprocess.run(["mount", *options, device, str(mountpoint)], check=True, capture_output=True)
        try:
            yield device
        finally:
            subprocess.run(["umount", str(mountpoint)], check=False, capture_output=True)


@contextlib.contextmanager
def loop_device(fstype: str, image: Path, size: int, mkfs_options: tuple[str, ...] = ()) -> Iterator[str]:
    """A sparse ``image`` formatted ``fstype`` and attached to a loop device (yielded, not
    mounted); detached and the image removed afterwards."""
    try:
        with image.open("wb") as handle:
            handle.truncate(size)
        mkfs(fstype, image, mkfs_options)
        attach = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True)
        if attach.returncode != 0:
            pytest.skip(f"no loop device available: {attach.stderr.strip()}")
        device = attach.stdout.strip()
        try:
            yield device
        finally:
            subprocess.run(["losetup", "-d", device], check=False, capture_output=True)
    finally:
        image.unlink(missing_ok=True)


def mkfs(fstype: str, target: Path | str, options: tuple[str, ...] = ()) -> None:
    force = "-f" if fstype == "xfs" else "-F"
    subprocess.run([f"mkfs.{fstype}", "-q", force, *options, str(target)], check=True, capture_output=True)


@contextlib.contextmanager
def tmpfs(mountpoint: Path, size: str) -> Iterator[Path]:
    """A size-limited tmpfs (writes past ``size`` fail with ENOSPC), unmounted afterwards."""
    mountpoint.mkdir(exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mountpoint)], check=True)
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=False, capture_output=True)
