"""``--path`` narrows severity (issue 19 item 5): a finding about devices and mounts that are
not under the checkpoint path's storage stack is capped at WARNING, and says so; the path's own
stack keeps its severity. On pasted outputs, and on real loop devices (root only)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import gdsdoctor.api as gd
from tests.conftest import validate_report
from tests.loopfs import loop_mount, skip_unless_root_with

NOT_THE_CHECKPOINTS = "not the checkpoint's device"
MOUNTS = """\
/dev/nvme0n1p1 /mnt/ckpt xfs rw,relatime 0 0
/dev/nvme1n1 /data ext4 rw,relatime 0 0
"""
SHUTDOWN = "[ 812.001] XFS ({device}): Corruption of in-memory data detected.  Shutting down filesystem\n"


def _finding(report: gd.Report, cause_id: str) -> dict:
    return next(f for f in report.findings if f["id"] == cause_id)


@pytest.mark.parametrize(
    ("device", "path", "severity"),
    [
        ("nvme1n1", "/mnt/ckpt", "warning"),  # /data's device: not the checkpoint's
        ("nvme0n1p1", "/mnt/ckpt", "critical"),  # the checkpoint filesystem's own device
        ("nvme1n1", "/data", "critical"),  # judged as the checkpoint path itself
        ("nvme9n1", "/mnt/ckpt", "critical"),  # a device nothing places: not played down
    ],
)
def test_a_shutdown_elsewhere_is_capped_at_warning(device: str, path: str, severity: str) -> None:
    report = gd.analyze_texts({"mounts": MOUNTS, "dmesg": SHUTDOWN.format(device=device)}, path=path)
    validate_report(report.data)
    finding = _finding(report, "fs-errors-or-shutdown")
    assert finding["severity"] == severity
    if severity == "warning":
        assert finding["narrowed"]["from"] == "critical"
        assert (
            NOT_THE_CHECKPOINTS in finding["narrowed"]["reason"] and device in finding["narrowed"]["reason"]
        )
        assert report.status == "WARNING" and report.exit_code == 1
    else:
        assert "narrowed" not in finding


def test_without_path_nothing_is_narrowed() -> None:
    report = gd.analyze_texts({"mounts": MOUNTS, "dmesg": SHUTDOWN.format(device="nvme1n1")})
    finding = _finding(report, "fs-errors-or-shutdown")
    assert finding["severity"] == "critical" and "narrowed" not in finding


def _kernel_log_since(marker: str) -> str:
    log = subprocess.run(["dmesg"], capture_output=True, text=True, check=True).stdout
    return log[log.rindex(marker) :]


def test_path_on_one_loop_mount_caps_another_mounts_device_errors(tmp_path: Path) -> None:
    """Two real loop-mounted filesystems; the second is shut down. Judged from the first (--path),
    the shutdown is a WARNING that names the other device; judged from the second, CRITICAL."""
    skip_unless_root_with("mkfs.xfs", "mkfs.ext4", "xfs_io", "dmesg", "lsblk")
    ckpt, other = tmp_path / "ckpt", tmp_path / "other"
    with (
        loop_mount("ext4", tmp_path / "ckpt.img", 64 << 20, ckpt) as ckpt_device,
        loop_mount("xfs", tmp_path / "other.img", 320 << 20, other) as other_device,
    ):
        marker = f"gdsdoctor-test-{uuid.uuid4()}"
        Path("/dev/kmsg").write_text(marker + "\n")  # the test's own kernel log starts here
        subprocess.run(["xfs_io", "-x", "-c", "shutdown", str(other)], check=True, capture_output=True)
        texts = {
            "dmesg": _kernel_log_since(marker),
            "mounts": Path("/proc/mounts").read_text(),
            "lsblk": subprocess.run(["lsblk", "-J", "-O"], capture_output=True, text=True).stdout,
        }
        command = [sys.executable, "-m", "gdsdoctor", "check", "--path", str(ckpt), "--format", "json"]
        checked = subprocess.run(command, capture_output=True, text=True)
    other_name, ckpt_name = Path(other_device).name, Path(ckpt_device).name
    narrowed = _finding(gd.analyze_texts(texts, path=str(ckpt)), "fs-errors-or-shutdown")
    assert narrowed["severity"] == "warning" and other_name in narrowed["narrowed"]["reason"]
    assert NOT_THE_CHECKPOINTS in narrowed["narrowed"]["reason"]
    own = _finding(gd.analyze_texts(texts, path=str(other)), "fs-errors-or-shutdown")
    assert own["severity"] == "critical" and "narrowed" not in own
    # The live check reads the whole kernel log (earlier tests' loop devices too): whatever it
    # holds, no finding naming only the other mount's device is critical.
    for finding in json.loads(checked.stdout)["findings"]:
        words = set(re.split(r"[\s():,=\[\]]+", " ".join(e["text"] for e in finding["evidence"])))
        if other_name in words and ckpt_name not in words:
            assert finding["severity"] != "critical", finding
