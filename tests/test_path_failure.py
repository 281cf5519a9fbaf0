"""The checkpoint path under failure (issue 31 item 6): a ``--path`` whose stat fails with EIO,
ESTALE, ENOTCONN or hangs is evidence about its mount and device, CRITICAL in every format; only
ENOENT is "no such file or directory", and then the nearest existing parent is diagnosed (and
the report says so). ``bench``, ``watch`` and ``collect --path`` give one line and the
diagnosis, never a traceback.

For real on a loop-mounted XFS shut down with ``xfs_io -x -c shutdown`` (root only), with the
real ``stat`` of coreutils; the other errnos and the hang through a ``stat`` on PATH that
answers as the kernel would (the words of glibc's strerror), and through pasted outputs."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import gdsdoctor.api as gd
from gdsdoctor.pipeline import check
from gdsdoctor.probes import path_stat
from gdsdoctor.report.oneline import SLURM_REASON_MAX
from gdsdoctor.report.render import render
from tests.conftest import REPO, fake_binary
from tests.loopfs import loop_mount, skip_unless_root_with

PATH_FAILS = "checkpoint-path-fails"
SHUTDOWN = "fs-errors-or-shutdown"
NFS_MOUNTS = "server:/export /mnt/ckpt nfs4 rw,relatime,vers=4.2,hard,proto=tcp 0 0\n"
FUSE_MOUNTS = "s3fs /mnt/ckpt fuse.s3fs rw,nosuid,nodev,relatime,user_id=0,group_id=0 0 0\n"
XFS_MOUNTS = "/dev/nvme0n1p1 /mnt/ckpt xfs rw,relatime 0 0\n/dev/nvme1n1 /data ext4 rw 0 0\n"


def _ids(report: gd.Report | dict) -> dict[str, dict]:
    findings = report.findings if isinstance(report, gd.Report) else report["findings"]
    return {f["id"]: f for f in findings}


@pytest.fixture(scope="module")
def shut_down_xfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A loop-mounted XFS with a checkpoint directory, shut down; yields (directory, device)."""
    skip_unless_root_with("mkfs.xfs", "xfs_io", "stat")
    root = tmp_path_factory.mktemp("shutdown")
    with loop_mount("xfs", root / "xfs.img", 320 << 20, root / "mnt") as device:
        (root / "mnt" / "ckpt").mkdir()
        (root / "mnt" / "ckpt" / "step-100.pt").write_bytes(b"x" * 4096)
        subprocess.run(["sync"], check=True)
        subprocess.run(["xfs_io", "-x", "-c", "shutdown", str(root / "mnt")], check=True, capture_output=True)
        yield root / "mnt" / "ckpt", device


def test_a_shut_down_xfs_path_is_critical_evidence_in_every_format(shut_down_xfs: tuple[Path, str]) -> None:
    directory, device = shut_down_xfs
    with pytest.raises(OSError):
        os.stat(directory)  # what the kernel answers: EIO, not ENOENT
    report = check(target_path=str(directory)).report
    found = _ids(report)
    fails = found[PATH_FAILS]
    assert fails["severity"] == "critical" and report["summary"]["exit_code"] == 2
    says = fails["evidence"][0]["text"]
    assert "EIO" in says and device in says and str(directory.parent) in says
    cited = {e["artifact"] for e in fails["evidence"]}
    assert {"cmd/stat-path.txt", "proc/mounts"} <= cited  # the stat and the mount table's line
    # the filesystem cause fires with the path's error as evidence, whatever the kernel log holds
    assert any(e["artifact"] == "cmd/stat-path.txt" for e in found[SHUTDOWN]["evidence"])
    assert not any("no such file" in note for note in report["source"]["notes"])
    for fmt in ("text", "markdown", "oneline", "prometheus", "junit", "json"):
        shown = render(report, fmt, False)
        assert PATH_FAILS in shown or SHUTDOWN in shown, fmt
    assert "gdsdoctor_status 2" in render(report, "prometheus", False)
    assert json.loads(render(report, "json", False))["summary"]["status"] == "CRITICAL"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gdsdoctor", *args], capture_output=True, text=True, timeout=300, check=False
    )


def test_check_bench_watch_and_collect_on_it_give_one_line_and_the_diagnosis(
    shut_down_xfs: tuple[Path, str], tmp_path: Path
) -> None:
    directory, _device = shut_down_xfs
    checked = _cli("check", "--path", str(directory), "--format", "oneline")
    assert checked.returncode == 2 and "no such file" not in checked.stderr
    for command in (["bench", str(directory)], ["watch", "--path", str(directory), "--duration", "1s"]):
        ran = _cli(*command)
        assert ran.returncode == 2, (command, ran.stderr)
        assert "Traceback" not in ran.stderr and "internal error" not in ran.stderr
        first = ran.stderr.splitlines()[0]
        assert (
            first
            == f"gdsdoctor {command[0]}: {directory}: Input/output error (EIO); diagnosing the path instead"
        )
        assert PATH_FAILS in ran.stdout and "Status: CRITICAL (exit 2)" in ran.stdout
    bundle = tmp_path / "b.tar.gz"
    collected = _cli("collect", "--path", str(directory), "-o", str(bundle))
    assert collected.returncode == 0 and bundle.exists()
    assert f"--path {directory} fails stat with EIO" in collected.stderr
    assert "exit 2 (CRITICAL)" in collected.stderr and "Traceback" not in collected.stderr
    # the bundle carries the evidence: analysed elsewhere, the same finding
    assert PATH_FAILS in _ids(gd.analyze(bundle, path=str(directory)))


def test_the_slurm_healthcheck_and_npd_drain_on_it(shut_down_xfs: tuple[Path, str], tmp_path: Path) -> None:
    """The integrations configured with the checkpoint path see it break (they went blind)."""
    directory, _device = shut_down_xfs
    bindir = tmp_path / "bin"
    program = fake_binary(bindir, "gdsdoctor", f'exec {shlex.quote(sys.executable)} -m gdsdoctor "$@"')
    fake_binary(bindir, "scontrol", f'for a in "$@"; do printf "%s\\n" "$a"; done > {tmp_path}/argv')
    fake_binary(bindir, "logger", f'echo "$@" > {tmp_path}/logged')
    env = {
        **os.environ,
        "PATH": f"{bindir}:{os.environ['PATH']}",
        "GDSDOCTOR": str(program),
        "GDSDOCTOR_PATH": str(directory),
    }
    script = str(REPO / "integrations" / "slurm" / "gdsdoctor-healthcheck")
    subprocess.run(["bash", script], env={**env, "SLURMD_NODENAME": "gpu001"}, check=True, timeout=300)
    argv = (tmp_path / "argv").read_text().splitlines()
    assert argv[:3] == ["update", "NodeName=gpu001", "State=DRAIN"]
    assert argv[3].startswith("Reason=gdsdoctor: ") and len(argv[3]) <= len("Reason=") + SLURM_REASON_MAX
    npd = _cli("check", "--npd", "--path", str(directory))
    assert npd.returncode == 1 and npd.stdout.count("\n") == 1  # NPD: a problem, in one line


def test_bench_on_a_read_only_mount_is_one_line_and_the_diagnosis(tmp_path: Path) -> None:
    """EROFS: stat answers, every write fails; bench says so and diagnoses (fs-read-only)."""
    skip_unless_root_with("mkfs.xfs", "stat")
    with loop_mount("xfs", tmp_path / "xfs.img", 320 << 20, tmp_path / "ro", mount_options="ro"):
        ran = _cli("bench", str(tmp_path / "ro"))
    assert ran.returncode == 2 and "Traceback" not in ran.stderr
    assert ran.stderr.splitlines()[0].endswith("Read-only file system (EROFS); diagnosing the path instead")
    assert "fs-read-only" in ran.stdout


def test_a_healthy_loop_mounted_path_stays_quiet(tmp_path: Path) -> None:
    skip_unless_root_with("mkfs.xfs", "stat")
    with loop_mount("xfs", tmp_path / "xfs.img", 320 << 20, tmp_path / "mnt") as device:
        (tmp_path / "mnt" / "ckpt").mkdir()
        analysis = check(target_path=str(tmp_path / "mnt" / "ckpt"))
    assert analysis.facts["path_stat"]["exists"] is True
    assert analysis.facts["path_stat"]["mountpoint"] == str(tmp_path / "mnt")
    assert analysis.facts["derived"]["path_failure"] is None
    assert analysis.facts["derived"]["target_mount"]["device"] == device
    assert PATH_FAILS not in _ids(analysis.report)


def test_a_path_not_created_yet_is_diagnosed_through_its_nearest_parent(tmp_path: Path) -> None:
    missing = tmp_path / "run-7" / "step-100"
    analysis = check(target_path=str(missing))
    notes = analysis.report["source"]["notes"]
    said = f"--path {missing}: no such file or directory; diagnosed its nearest existing parent {tmp_path}"
    assert any(note.startswith(said) for note in notes), notes
    assert analysis.facts["derived"]["path_failure"] is None
    assert analysis.facts["derived"]["path_missing"]["nearest"] == str(tmp_path)
    assert PATH_FAILS not in _ids(analysis.report)
    assert analysis.facts["derived"]["target_mount"]  # the parent's mount is the one judged


def test_bench_of_a_missing_directory_is_one_line(tmp_path: Path) -> None:
    ran = _cli("bench", str(tmp_path / "nothere"))
    assert (
        ran.returncode == 3
        and ran.stderr.strip() == f"gdsdoctor: {tmp_path / 'nothere'}: no such file or directory"
    )


# --- the other errnos and the hang, through a stat that answers as the kernel would ---------


@contextlib.contextmanager
def _fake_stat(tmp_path: Path, script: str) -> Iterator[None]:
    """``stat`` on PATH replaced by ``script`` (the runner looks on PATH first)."""
    tools = tmp_path / "bin"
    tools.mkdir(exist_ok=True)
    fake = tools / "stat"
    fake.write_text("#!/bin/sh\n" + script)
    fake.chmod(0o755)
    before = os.environ["PATH"]
    os.environ["PATH"] = f"{tools}:{before}"
    try:
        yield
    finally:
        os.environ["PATH"] = before


@pytest.mark.parametrize(
    ("words", "errno"),
    [
        ("Stale file handle", "ESTALE"),
        ("Transport endpoint is not connected", "ENOTCONN"),
        ("Input/output error", "EIO"),
        ("Structure needs cleaning", "EUCLEAN"),
    ],
)
def test_each_failing_errno_is_read_from_stat(tmp_path: Path, words: str, errno: str) -> None:
    script = f"""eval last=\\${{$#}}; echo "stat: cannot statx '$last': {words}" >&2; exit 1\n"""
    with _fake_stat(tmp_path, script):
        text = path_stat.reader("/mnt/ckpt/run1")(Path("/")).decode()
    section = path_stat.parse(text, path_stat.ARTIFACT)
    assert (section["errno"], section["failed"], section["hung"]) == (errno, True, False)
    assert text.count("\n") == 1  # a failing path's parents are not asked: it is not a name problem


def test_a_hung_stat_is_killed_and_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(path_stat, "STAT_TIMEOUT_S", 0.3)
    with _fake_stat(tmp_path, "exec sleep 30\n"):
        text = path_stat.reader("/mnt/ckpt")(Path("/")).decode()
    section = path_stat.parse(text, path_stat.ARTIFACT)
    assert section["hung"] and section["errno"] == "ETIMEDOUT" and section["failed"]
    assert "no answer within 0.3 s (killed)" in text


def test_enoent_walks_up_to_the_nearest_existing_parent(tmp_path: Path) -> None:
    skip_unless_root_with("stat")  # the real stat; root only for the tool check's sake
    text = path_stat.reader(str(tmp_path / "a" / "b"))(Path("/")).decode()
    section = path_stat.parse(text, path_stat.ARTIFACT)
    assert section["errno"] == "ENOENT" and section["exists"] is False and not section["failed"]
    assert section["nearest"]["path"] == str(tmp_path) and section["nearest"]["type"] == "directory"
    assert len(text.splitlines()) == 3  # b, a, then the directory that exists


@pytest.mark.parametrize(
    ("mounts", "stat_line", "fstype", "signal"),
    [
        (NFS_MOUNTS, "stat: cannot statx '/mnt/ckpt/run1': Stale file handle", "nfs4", "fails"),
        (
            FUSE_MOUNTS,
            "stat: cannot statx '/mnt/ckpt/run1': Transport endpoint is not connected",
            "fuse.s3fs",
            "fails",
        ),
        (NFS_MOUNTS, "stat: cannot statx '/mnt/ckpt/run1': no answer within 5 s (killed)", "nfs4", "hangs"),
        (XFS_MOUNTS, "stat: cannot statx '/mnt/ckpt/run1': Input/output error", "xfs", "fails"),
    ],
)
def test_pasted_failing_stat_names_the_mount_and_is_critical(
    mounts: str, stat_line: str, fstype: str, signal: str
) -> None:
    report = gd.analyze_texts({"mounts": mounts, "stat.txt": stat_line + "\n"}, path="/mnt/ckpt/run1")
    fails = _ids(report)[PATH_FAILS]
    assert fails["severity"] == "critical" and report.exit_code == 2
    assert fails["evidence"][0]["signal"] == signal
    assert (
        f"{fstype} " in fails["evidence"][0]["text"]
        and "mounted at /mnt/ckpt" in fails["evidence"][0]["text"]
    )
    # EIO on a local block filesystem is also the filesystem cause's evidence; not ESTALE on NFS
    assert (SHUTDOWN in _ids(report)) == (fstype == "xfs")


def test_a_stat_that_answers_and_errors_about_the_name_are_not_evidence() -> None:
    for line in (
        "directory|/mnt/ckpt|/mnt/ckpt/run1",
        "stat: cannot statx '/mnt/ckpt/run1': Permission denied",
        "stat: cannot statx '/mnt/ckpt/run1': Not a directory",
    ):
        report = gd.analyze_texts({"mounts": XFS_MOUNTS, "stat.txt": line + "\n"}, path="/mnt/ckpt/run1")
        assert PATH_FAILS not in _ids(report), line


def test_without_the_kernel_log_the_repair_commands_name_the_paths_device() -> None:
    # The kernel log names the shut-down device; without it, the mount under the failing path
    # does, so the repair is printed for that device (and only the XFS tools for an XFS).
    report = gd.analyze_texts(
        {"mounts": XFS_MOUNTS, "stat.txt": "stat: cannot statx '/mnt/ckpt/run1': Input/output error\n"},
        path="/mnt/ckpt/run1",
    )
    commands = [step["command"] for step in _ids(report)[SHUTDOWN]["remediation"]]
    assert "umount /dev/nvme0n1p1" in commands
    assert "xfs_repair -n /dev/nvme0n1p1" in commands
    assert not any("e2fsck" in command or "nvme1n1" in command for command in commands)
    assert not any("{" in command for command in commands)
