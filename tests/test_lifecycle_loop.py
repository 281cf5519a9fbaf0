"""Kernel events judged against what came after them, on real loop devices and a real kernel
log (root only; skipped elsewhere with the reason): a shut-down XFS repaired and mounted again
is history, and so is an ext4 journal abort on a loop device since detached and reused.

Other tests (and other programs) may put events of their own loop devices in the same kernel
log meanwhile, so each assertion is about the evidence naming this test's device."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gdsdoctor.capture.live import LiveCapture
from gdsdoctor.pipeline import analyze_capture, check
from tests.loopfs import loop_device, mkfs, skip_unless_root_with

SHUTDOWN = "fs-errors-or-shutdown"


@pytest.fixture(autouse=True)
def _root_with_tools() -> None:
    skip_unless_root_with("xfs_io", "xfs_repair", "mkfs.xfs", "mkfs.ext4", "dmesg")


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=120)


def _names(item: dict[str, Any], device: str) -> bool:
    """Whether a finding's evidence quotes a kernel line about ``device`` (loop0, loop0-8)."""
    name = device.removeprefix("/dev/")
    return any(f"({name})" in e["text"] or f"device {name}-" in e["text"] for e in item["evidence"])


def _about(report: dict[str, Any], key: str, device: str) -> list[dict[str, Any]]:
    return [f for f in report[key] if f["id"] == SHUTDOWN and _names(f, device)]


def _mine(facts: dict[str, Any], key: str, device: str) -> list[dict[str, Any]]:
    """The shutdown and journal-abort events of ``device`` in the kernel log's ``events`` (now) or
    ``history``: a report lists a cause's first evidence lines only, and the log of a machine
    running a whole suite holds many of other loop devices."""
    name = device.removeprefix("/dev/")
    return [
        e
        for e in facts["dmesg"][key]
        if e["kind"] == "fs_shutdown" and (f"({name})" in e["message"] or f"device {name}-" in e["message"])
    ]


@contextlib.contextmanager
def _mounted(device: str, point: Path) -> Iterator[Path]:
    _run("mount", device, str(point))
    try:
        yield point
    finally:
        _run("umount", str(point))


def _shut_down(mountpoint: Path) -> None:
    (mountpoint / "checkpoint").write_bytes(b"x" * 4096)
    _run("sync")
    _run("xfs_io", "-x", "-c", "shutdown", str(mountpoint))  # XFS and ext4 both take it


def test_repaired_and_remounted_xfs_is_history(tmp_path: Path) -> None:
    point = tmp_path / "ckpt"
    point.mkdir()
    with loop_device("xfs", tmp_path / "xfs.img", 320 << 20) as device:
        with _mounted(device, point):
            _shut_down(point)
            broken = check(target_path=str(point)).report
            current = _about(broken, "findings", device)
            assert current and current[0]["severity"] == "critical", broken["findings"]
            assert broken["summary"]["status"] == "CRITICAL"
        _run("xfs_repair", "-L", device)  # a shutdown leaves a dirty log
        with _mounted(device, point):
            (point / "after").write_bytes(b"ok")  # writes work again
            repaired = check(target_path=str(point))
    report = repaired.report
    assert not _about(report, "findings", device), report["findings"]
    assert not _mine(repaired.facts, "events", device)
    newest = _mine(repaired.facts, "history", device)[-1]
    assert newest["history"]["reason"].startswith("before the current mount") and newest["age_s"] is not None
    past = [h for h in report["history"] if h["id"] == SHUTDOWN]
    assert past and past[0]["severity"] == "info" and past[0]["was_severity"] == "critical"
    dated = [e for e in past[0]["evidence"] if e.get("age")]
    assert dated and all(e["age"].endswith(" ago") for e in dated)


def test_ext4_abort_on_a_loop_name_reused_by_a_new_xfs_is_history(tmp_path: Path) -> None:
    point = tmp_path / "ckpt"
    point.mkdir()
    with loop_device("ext4", tmp_path / "ext4.img", 128 << 20) as old, _mounted(old, point):
        _shut_down(point)  # ext4: "Aborting journal on device loopN-8."
    image = tmp_path / "xfs.img"
    with image.open("wb") as handle:
        handle.truncate(320 << 20)
    mkfs("xfs", image)
    attach = subprocess.run(["losetup", old, str(image)], capture_output=True, timeout=60)
    if attach.returncode != 0:  # another program took the name meanwhile
        image.unlink()
        pytest.skip(f"{old} was taken before it could be reused: {attach.stderr.decode().strip()}")
    try:
        with _mounted(old, point):
            reused = check(target_path=str(point))
    finally:
        _run("losetup", "-d", old)
        image.unlink()
    assert not _about(reused.report, "findings", old), reused.report["findings"]
    assert not _mine(reused.facts, "events", old)
    assert _mine(reused.facts, "history", old)[-1]["history"]["reason"].startswith("before the current mount")
    assert SHUTDOWN in [h["id"] for h in reused.report["history"]]


def test_since_puts_the_events_before_it_in_history(tmp_path: Path) -> None:
    point = tmp_path / "ckpt"
    point.mkdir()
    with loop_device("xfs", tmp_path / "xfs.img", 320 << 20) as device, _mounted(device, point):
        _shut_down(point)
        live = LiveCapture(Path("/"), str(point))
        capture = live.finish()
        now = analyze_capture(capture).report
        capture.options["since"] = "0s"  # nothing logged after the capture began
        later = analyze_capture(capture)
    assert _about(now, "findings", device)
    assert not _about(later.report, "findings", device)
    name = device.removeprefix("/dev/")
    mine = [
        e
        for e in later.facts["dmesg"]["history"]
        if f"({name})" in e["message"] and "Shutting down" in e["message"]
    ]
    assert mine and mine[-1]["history"]["reason"] == "before --since 0s"
