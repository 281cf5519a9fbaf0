"""The error-line classifier (gdsdoctor.probes.error_lines) and what the report does with its
lines (report/unexplained.py): an error of the storage path that no finding cites is listed
with file:line and never leaves a node OK; healthy boots of several distributions and errors of
other subsystems stay quiet.

Real lines: tests/data/error_lines (SOURCES.md), tests/data/dmesg, the fixtures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gdsdoctor.pipeline import analyze_paths
from gdsdoctor.probes import dmesg, error_lines
from gdsdoctor.report.render import render

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "error_lines"
HEALTHY = sorted(DATA.glob("healthy-*")) + sorted(DATA.glob("offpath-*"))
REAL_BOOTS = [  # whole boots of real nodes (an H200 VM, a GPU node), every line
    ROOT / "fixtures" / "h200-node-without-nvidia-fs" / "bundle" / "cmd" / "dmesg.txt",
    ROOT / "fixtures" / "gds-h200-vm-no-gds" / "files" / "dmesg.txt",
]


def _report(*names: str, since: str | None = None) -> dict[str, Any]:
    return analyze_paths([DATA / name for name in names], since=since).report


@pytest.mark.parametrize(
    ("name", "family", "lines"),
    [
        ("nfs-not-responding.lkml-6.11-rc6-bad-gso.dmesg.txt", "nfs", [5]),
        ("lustre-fsx-client-ost-rc-107-connection-lost.dmesg.txt", "lustre", [1, 3]),
        ("lnet-o2iblnd-timed-out-tx.format-string.dmesg.txt", "lustre", [1, 2]),
        ("deepspeedexamples-626--launcher-return-code-11.log", "launcher", [6]),
    ],
)
def test_the_issues_error_lines_are_never_ok(name: str, family: str, lines: list[int]) -> None:
    """Each line is either cited by a finding (a cause that reads its class) or listed as
    unexplained with file:line and what would settle it; the node is never OK."""
    report = _report(name)
    cited = {e.get("line") for f in report["findings"] for e in f["evidence"] if e.get("artifact") == name}
    listed = {u["line"]: u for u in report["unexplained"]}
    assert all(n in cited or n in listed for n in lines), (cited, listed)
    assert all(u["family"] == family and u["settle"] for u in listed.values())
    if listed:  # no finding: UNKNOWN, saying how many and where (a cited line takes its cause's scope)
        assert report["summary"]["status"] != "OK"
        assert report["summary"]["counts"]["unexplained"] == len(listed)
        assert f"not explained, first {name}:{min(listed)}" in report["summary"]["reason"]


def test_deepspeeds_return_code_9_is_understood() -> None:
    """Read as the job's output (not as `dmesg -T`), the SIGKILL is a candidate OOM kill that cites
    the line: understood, not silence. Its status is the status contract's (a job's event outside
    a save is job scope: listed, not counted against the node)."""
    report = _report("deepspeed-3232--launcher-return-code-9.log")
    finding = next(f for f in report["findings"] if f["id"] == "checkpoint-save-oom-killed")
    assert any(e.get("line") == 2 for e in finding["evidence"]) and report["unexplained"] == []
    assert report["summary"]["status"] != "OK" or finding.get("counted") is False


def test_an_nccl_watchdog_timeout_outside_a_save_is_not_ok() -> None:
    log = ROOT / "tests" / "data" / "app_log_ckpt" / "llamafactory-7396--watchdog-training-allreduce.log"
    report = analyze_paths([log]).report
    assert report["summary"]["status"] == "UNKNOWN"
    # said as a symptom with its candidate causes (issue 32 item 5), not as bare unexplained lines
    assert [s["id"] for s in report["differential"]] == ["collective-timeout"]
    assert report["differential"][0]["state"] == "open" and report["unexplained"] == []


@pytest.mark.parametrize("path", HEALTHY + REAL_BOOTS, ids=lambda p: p.name)
def test_healthy_boots_and_other_subsystems_errors_hold_no_error_line(path: Path) -> None:
    section = dmesg.parse(path.read_text(), path.name)
    assert section["error_lines"] == [], [e["src"]["text"] for e in section["error_lines"]]


def test_healthy_boots_stay_ok() -> None:
    report = _report(*(p.name for p in HEALTHY))
    assert report["unexplained"] == [] and report["summary"]["status"] == "OK"


@pytest.mark.parametrize(
    ("healthy", "error", "family"),
    [
        # a near-miss of each family beside a real error of it
        (
            "nvme nvme0: Shutdown timeout set to 8 seconds",
            "nvme nvme0: I/O 39 QID 3 timeout, aborting",
            "nvme",
        ),
        (
            "nvme nvme1: missing or invalid SUBNQN field.",
            "nvme nvme0: Removing after probe failure status: -19",
            "nvme",
        ),
        (
            "EXT4-fs (sda1): re-mounted. Opts: errors=remount-ro",
            "EXT4-fs error (device sda1): ext4_find_entry:1455",
            "filesystem",
        ),
        (
            "ata3: SATA link down (SStatus 0 SControl 300)",
            "ata1.00: failed command: READ FPDMA QUEUED",
            "block",
        ),
        (
            "blk_update_request: I/O error, dev fd0, sector 0",
            "blk_update_request: I/O error, dev sdb, sector 2048",
            "block",
        ),
        (
            "pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0",
            "pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:01:00.0",
            "pcie",
        ),
        (
            "nvidia: module verification failed: signature and/or required key missing - tainting kernel",
            "NVRM: Xid (PCI:0000:05:00): 79, GPU has fallen off the bus.",
            "gpu",
        ),
        ("nfs: server storage01 OK", "nfs: server storage01 not responding, still trying", "nfs"),
        (
            "Lustre: Lustre: Build Version: 2.15.4",
            "Lustre: fs-OST0000-osc: This client was evicted by fs-OST0000",
            "lustre",
        ),
        (
            "torch.distributed.elastic.multiprocessing.api: failed (exitcode: 0)",
            "exitcode  : -9 (pid: 12)",
            "launcher",
        ),
        (
            "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB",
            "NCCL WARN NET/IB : Got completion from peer with error 12",
            "nccl",
        ),
        (
            "usb 1-2: device descriptor read/64, error -71",
            "OSError: [Errno 28] No space left on device",
            "traceback",
        ),
    ],
)
def test_a_near_miss_stays_quiet_beside_its_family_error(healthy: str, error: str, family: str) -> None:
    assert error_lines.classify(healthy) is None
    assert error_lines.classify(error) == (family, error_lines.classify(error)[1])  # type: ignore[index]


def test_a_cited_line_explains_its_storm_and_a_finding_keeps_its_status() -> None:
    log = ROOT / "tests" / "data" / "dmesg" / "journal-gentoo-nvme-timeouts-reset-queues-then-polled.txt"
    report = analyze_paths([log]).report
    assert report["summary"]["status"] == "CRITICAL"  # the findings cite a dozen lines: all explained
    assert report["unexplained"] == [] and report["summary"]["counts"]["unexplained"] == 0


# a line of a class no cause reads (libata's failed command: its sense data is what the SATA
# causes read), for the tests of how unexplained lines are counted
ATA = "[  612.771238] ata1.00: failed command: READ FPDMA QUEUED\n"


def test_a_critical_status_keeps_its_status_and_counts_the_lines(tmp_path: Path) -> None:
    shutdown = "[  380.047632] XFS (sdb1): Filesystem has been shut down due to log error (0x2).\n"
    (tmp_path / "dmesg.txt").write_text(shutdown + ATA)
    report = analyze_paths([tmp_path / "dmesg.txt"]).report
    assert report["summary"]["status"] == "CRITICAL"
    assert "1 error line(s) not explained, first dmesg.txt:2" in report["summary"]["reason"]


def test_only_lines_of_this_boot_and_within_since_count(tmp_path: Path) -> None:
    earlier_boot = ATA + "[    0.000000] Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075)\n"
    (tmp_path / "dmesg.txt").write_text(earlier_boot + "[  900.000000] systemd[1]: Started Session 4.\n")
    assert analyze_paths([tmp_path / "dmesg.txt"]).report["unexplained"] == []
    (tmp_path / "dmesg.txt").write_text(ATA + "[ 9000.000000] systemd[1]: Started Session 4.\n")
    assert len(analyze_paths([tmp_path / "dmesg.txt"]).report["unexplained"]) == 1
    assert analyze_paths([tmp_path / "dmesg.txt"], since="1h").report["unexplained"] == []


def test_a_recovered_events_lines_are_history_not_unexplained(tmp_path: Path) -> None:
    text = "".join(
        (ROOT / "tests" / "data" / "dmesg" / "journal-gentoo-nvme-timeouts-reset-queues-then-polled.txt")
        .read_text()
        .splitlines(keepends=True)[:14]
    )
    later = (
        "Sep 12 12:48:00 [kernel] [  831.000000][ T1082] EXT4-fs (nvme0n1p4): re-mounted. Quota mode: none.\n"
    )
    (tmp_path / "dmesg.txt").write_text(text + later)
    analysis = analyze_paths([tmp_path / "dmesg.txt"])
    assert analysis.report["unexplained"] == [] and analysis.report["summary"]["status"] == "OK"
    assert analysis.facts["dmesg"]["error_lines_past"] > 0


def test_a_hung_task_outside_storage_code_stays_quiet() -> None:
    case = ROOT / "fixtures" / "storage-hung-task-not-storage" / "files"
    report = analyze_paths(sorted(case.iterdir())).report
    assert report["unexplained"] == [] and report["summary"]["status"] == "OK"


def test_every_format_lists_the_lines_with_file_and_line() -> None:
    report = _report("deepspeedexamples-626--launcher-return-code-11.log")
    where = "deepspeedexamples-626--launcher-return-code-11.log:6"
    text = render(report, "text")
    markdown = render(report, "markdown")
    assert "1 error line(s) not explained" in text and where in text and "OOM killer" in text
    assert "1 error line(s) not explained" in markdown and where in markdown
    assert "not explained" in render(report, "text", quiet=True)
