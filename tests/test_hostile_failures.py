"""One bad input is one clear line, never a lost fleet (fourth round): a fleet worker killed by
the kernel, an interrupted fleet run, impossible clocks, rule files and site configs lint cannot
read, a watch whose interval outlasts its duration, and a hard link out of a folder of pastes."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from gdsdoctor.capture.bundle import write_bundle
from gdsdoctor.capture.capture import Capture
from gdsdoctor.commands import fleet
from gdsdoctor.commands.fleet_workers import KILLED
from gdsdoctor.model import Artifact, ArtifactStatus
from gdsdoctor.pipeline import analyze_paths
from tests.conftest import REPO

MOUNTS = b"/dev/nvme0n1 /mnt/ckpt ext4 rw,data=journal 0 0\n"


def small_bundle(where: Path, host: str) -> Path:
    capture = Capture(origin="live", host={"hostname": host}, label=host)
    capture.add("mounts", Artifact("proc/mounts", ArtifactStatus.OK, MOUNTS, source="/proc/mounts"))
    return write_bundle(capture, where / f"{host}.tar.gz")


def analyse_or_die(task: fleet.Task) -> dict:
    """A worker the kernel kills on one bundle (its analysis took the node's memory)."""
    if task[0].name.startswith("oom"):
        os.kill(os.getpid(), signal.SIGKILL)
    return fleet.node_record(*task)


# --- item 11: a worker killed, an interrupted fleet --------------------------------------------


def test_a_worker_killed_on_one_bundle_loses_that_bundle_only(tmp_path: Path, monkeypatch) -> None:
    bundles = [small_bundle(tmp_path, name) for name in ("gpu01", "gpu02", "oom03", "gpu04", "gpu05")]
    monkeypatch.setattr(fleet, "_analyse_one", analyse_or_die)
    summary = fleet.analyse_fleet(bundles, jobs=2)
    nodes = {node["name"]: node for node in summary["nodes"]}
    assert sorted(nodes) == ["gpu01", "gpu02", "gpu04", "gpu05", "oom03.tar.gz"]
    assert (nodes["oom03.tar.gz"]["status"], nodes["oom03.tar.gz"]["error"]) == ("UNKNOWN", KILLED)
    for name in ("gpu01", "gpu02", "gpu04", "gpu05"):
        assert nodes[name]["findings"] == ["ext4-data-journal"], nodes[name]


SLOW_FLEET = """
import sys, time
from gdsdoctor.commands import fleet

def slow(task):
    time.sleep(60)

fleet._analyse_one = slow
from gdsdoctor.cli.app import main
sys.argv = ["gdsdoctor", "analyze", "--fleet", "-j", "2", *sys.argv[1:]]
main()
"""


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(p) for p in (task / "children").read_text().split()]
    return found


def test_sigterm_stops_a_fleet_s_workers_at_once(tmp_path: Path) -> None:
    bundles = [str(small_bundle(tmp_path, f"gpu0{n}")) for n in range(4)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen(
        [sys.executable, "-c", SLOW_FLEET, *bundles], env=env, cwd=REPO, stderr=subprocess.PIPE, text=True
    )
    workers: list[int] = []
    for _ in range(300):  # until both workers run a bundle
        time.sleep(0.1)
        workers = [p for p in _children(process.pid) if Path(f"/proc/{p}").exists()]
        if len(workers) >= 2:
            break
    assert len(workers) >= 2, "no workers started"
    time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=20)  # today's: waits for the bundles (60 s here)
    assert process.returncode == 3 and "interrupted" in err
    time.sleep(0.2)
    alive = [p for p in workers if Path(f"/proc/{p}").exists() and "Z" not in _state(p)]
    assert alive == []


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return "Z"


# --- item 12: impossible clocks ----------------------------------------------------------------------

DMESG = b"[  100.000000] nvme nvme0: I/O 1 QID 2 timeout, aborting\n[  200.000000] nvme nvme0: resetting controller\n"


@pytest.mark.parametrize("clock", ["nan", "inf", "1e20", "-62135596800", "253402300799"])
def test_an_impossible_capture_clock_is_unknown_with_a_note(tmp_path: Path, clock: str) -> None:
    capture = Capture(
        origin="live",
        host={"hostname": "gpu01", "captured_at_epoch": clock, "uptime_s": "300"},
        label="gpu01",
    )
    capture.add("dmesg", Artifact("cmd/dmesg.txt", ArtifactStatus.OK, DMESG, source="dmesg"))
    report = analyze_paths([write_bundle(capture, tmp_path / "clock.tar.gz")]).report
    assert any(
        f"the capture's clock ({clock}) is not a possible time" in n for n in report["source"]["notes"]
    )
    assert report["summary"]["status"] == "CRITICAL"  # the timeouts are still judged


def test_a_sos_report_whose_date_says_year_1_is_read(tmp_path: Path) -> None:
    top = "sosreport-gpu01-2026-01-01-aaaaaa"
    members = {
        "sos_commands/date/date_--utc": b"Mon Jan  1 00:05:00 UTC 0001\n",
        "sos_commands/host/uptime": b" 00:05:00 up 5 min,  0 users,  load average: 0.00, 0.00, 0.00\n",
        "sos_commands/kernel/dmesg": DMESG,
    }
    archive = tmp_path / f"{top}.tar.xz"
    with tarfile.open(archive, "w:xz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    report = analyze_paths([archive]).report
    assert report["summary"]["status"] == "CRITICAL"
    assert any("is not a possible time" in note for note in report["source"]["notes"]), report["source"]
