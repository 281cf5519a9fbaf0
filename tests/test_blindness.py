"""Blindness is not health (issue 19 item 6) and contracts automation can trust on bad input
(issue 25 items 1-2): a run that cannot see says so in every format, never "OK"."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gdsdoctor import cli
from gdsdoctor.report.oneline import NPD_OUTPUT_MAX
from tests.conftest import validate_report

REFUSED = "has no proc/, sys/ or etc/: is the host's / mounted there?"
MACHINE_FORMATS = ("json", "junit", "prometheus", "oneline")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, list[str]]:
    code = cli.run(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err.strip().splitlines()


def _unknown_document(fmt: str, out: str, reason: str) -> None:
    """``out`` is ``fmt``'s UNKNOWN document, with ``reason`` in it."""
    if fmt == "json":
        report = json.loads(out)
        validate_report(report)
        assert report["summary"]["status"] == "UNKNOWN" and report["summary"]["exit_code"] == 3
        assert reason in report["summary"]["reason"] and report["findings"] == []
    elif fmt == "junit":
        suite = ET.fromstring(out).find("testsuite")
        assert suite is not None and suite.get("errors") == "1"
        error = suite.find("testcase/error")
        assert error is not None and error.get("type") == "UNKNOWN" and reason in error.get("message", "")
    elif fmt == "prometheus":
        assert "\ngdsdoctor_status 3\n" in out
    else:
        assert out.startswith("UNKNOWN: ") and out.count("\n") == 1


@pytest.mark.parametrize("fmt", ["text", "markdown", *MACHINE_FORMATS])
def test_an_empty_host_root_is_refused_in_every_format(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "check", "--host-root", str(tmp_path), "--format", fmt)
    assert code == 3
    assert err == [f"gdsdoctor: --host-root {tmp_path} {REFUSED}"]
    if fmt in MACHINE_FORMATS:
        _unknown_document(fmt, out, REFUSED)
    else:
        assert out == ""  # a person reads stderr's one line


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "--host-root", "{empty}", "--npd"],
        ["check", "--host-root", "/nonexistent/gdsdoctor-host", "--npd"],
        ["check", "--npd", "--no-such-flag"],
        ["analyze", "/nonexistent/gdsdoctor-paste.txt", "--npd"],
    ],
)
def test_npd_bad_input_is_unknown_with_one_short_line(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """node-problem-detector: 0 OK, 1 problem, 2 unknown; the message is at most 80 characters."""
    code, out, err = _run(capsys, *(word.replace("{empty}", str(tmp_path)) for word in argv))
    assert code == 2
    [line] = out.splitlines()
    assert line.startswith("UNKNOWN: ") and len(line) <= NPD_OUTPUT_MAX
    assert len(err) == 1 and err[0].startswith("gdsdoctor: ")


@pytest.mark.parametrize("fmt", MACHINE_FORMATS)
@pytest.mark.parametrize(
    "argv",
    [
        ["check", "--host-root", "/nonexistent/gdsdoctor-host"],
        ["analyze", "/nonexistent/gdsdoctor-paste.txt"],
    ],
)
def test_machine_formats_print_their_unknown_document_on_bad_input(
    fmt: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, *argv, f"--format={fmt}")
    assert code == 3 and len(err) == 1
    _unknown_document(fmt, out, err[0].removeprefix("gdsdoctor: "))


def test_a_usage_error_still_gives_the_unknown_document(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "check", "-fjson", "--no-such-flag")
    assert code == 3 and len(err) == 1 and "--no-such-flag" in err[0]
    _unknown_document("json", out, "--no-such-flag")


def test_prometheus_output_file_is_rewritten_unknown_on_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A textfile left from the last good run would export its OK for hours."""
    prom = tmp_path / "gdsdoctor.prom"
    prom.write_text("gdsdoctor_status 0\n")
    code, out, err = _run(
        capsys, "check", "--host-root", "/nonexistent/gdsdoctor-host", "-o", f"prometheus={prom}"
    )
    assert (
        code == 3
        and out == ""
        and err == ["gdsdoctor: --host-root /nonexistent/gdsdoctor-host: no such directory"]
    )
    _unknown_document("prometheus", prom.read_text(), "")


def test_a_root_missing_some_trees_is_read_and_says_what_it_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_path: Path
) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "os-release").write_text('ID=debian\nVERSION_ID="12"\n')
    code, out, _ = _run(capsys, "check", "--host-root", str(tmp_path), "--format", "json")
    report = json.loads(out)
    assert any(f"--host-root {tmp_path} has no proc/ or sys/" in note for note in report["source"]["notes"])
    assert report["summary"]["status"] != "OK" and code == report["summary"]["exit_code"]


# --- a run as an ordinary user: the kernel log is denied, the PCIe capabilities hidden ---------

_AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
REPO = Path(__file__).resolve().parents[1]


def _nobody_python() -> tuple[list[str], dict[str, str]] | str:
    """An interpreter the user nobody can start and import gdsdoctor with: this one, else the
    system's of the same version given this checkout's sources and this environment's packages
    (an interpreter under root's private home, or packages installed under umask 077, as seen
    in CI, are the machine's limits, not gdsdoctor's). A string: why there is none."""
    import shutil
    import site
    import subprocess
    import sys

    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    packages = os.pathsep.join([str(REPO / "src"), *site.getsitepackages()])
    tried = []
    for python, extra in (
        (sys.executable, {}),
        (shutil.which(version, path="/usr/bin:/bin"), {"PYTHONPATH": packages}),
    ):
        if not python:
            continue
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/nonexistent", "LC_ALL": "C", **extra}
        result = subprocess.run(
            [*_AS_NOBODY, python, "-c", "import gdsdoctor.cli"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd="/",
            env=env,
        )
        if result.returncode == 0:
            return [*_AS_NOBODY, python, "-m", "gdsdoctor"], env
        tried.append((result.stderr.strip().splitlines() or ["?"])[-1])
    return "; ".join(tried) or "no interpreter"


def test_a_run_as_an_ordinary_user_blind_to_the_kernel_log_is_never_ok() -> None:
    import subprocess

    if os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists():
        pytest.skip("needs root to drop to nobody with setpriv")
    if Path("/proc/sys/kernel/dmesg_restrict").read_text().strip() != "1":
        pytest.skip("kernel.dmesg_restrict is 0 here: every user may read the kernel log")
    found = _nobody_python()
    if isinstance(found, str):
        pytest.skip(f"gdsdoctor cannot be imported as nobody here: {found}")
    command, env = found
    result = subprocess.run(
        [*command, "check", "--format", "json"], capture_output=True, text=True, timeout=120, cwd="/", env=env
    )
    report = json.loads(result.stdout)
    validate_report(report)
    summary = report["summary"]
    assert summary["status"] != "OK" and result.returncode == summary["exit_code"]
    not_read = {item["source"]: item for item in summary["partial"]["not_read"]}
    assert not_read["dmesg"]["status"] == "denied" and "run as root" in not_read["dmesg"]["how"]
    assert "partial: dmesg denied" in summary["reason"]
    if not report["findings"]:
        assert summary["status"] == "UNKNOWN"
    for tool in ("modinfo", "nvme"):  # in /usr/sbin, off this user's PATH: still found
        if Path("/usr/sbin", tool).exists():
            assert not any(f"{tool}: command not found" in p["detail"] for p in report["probes"])
    npd = subprocess.run(
        [*command, "check", "--npd"], capture_output=True, text=True, timeout=120, cwd="/", env=env
    )
    assert npd.returncode != 0, npd.stdout  # node-problem-detector never marks this node healthy
    assert "partial" in npd.stdout and len(npd.stdout.strip()) <= NPD_OUTPUT_MAX


def test_tools_are_found_in_sbin_when_path_lacks_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An ordinary user's PATH often lacks /usr/sbin, where nvme, modinfo and lsmod live: a
    capture looks there too, so "command not found" means not installed."""
    from gdsdoctor.capture import runner
    from gdsdoctor.model import ArtifactStatus
    from tests.conftest import fake_binary

    monkeypatch.delenv("GDSDOCTOR_SBIN_DIRS")
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
    assert runner.search_path().split(":")[3:] == ["/usr/local/sbin", "/usr/sbin", "/sbin"]
    sbin = tmp_path / "sbin"
    fake_binary(sbin, "gdsdoctor-test-tool", "echo found")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("GDSDOCTOR_SBIN_DIRS", str(sbin))
    artifact = runner.run_command("tool.txt", ("gdsdoctor-test-tool",), timeout=10)
    assert artifact.status is ArtifactStatus.OK and artifact.data == b"found\n"
    monkeypatch.setenv("GDSDOCTOR_SBIN_DIRS", "")
    assert (
        runner.run_command("tool.txt", ("gdsdoctor-test-tool",), timeout=10).status is ArtifactStatus.MISSING
    )


# --- a source read only in part (issue 20: blindness is not health) ---------------------------------


def _mount_table(tmp_path: Path, filler: int) -> Path:
    """/proc/mounts: ``filler`` container overlay mounts (a dense Kubernetes node), then a
    checkpoint directory on an s3fs FUSE mount."""
    lines = [f"overlay /run/containerd/io.containerd.runtime.v2.task/k8s.io/c{n}/rootfs overlay rw,relatime 0 0"
             for n in range(filler)]  # fmt: skip
    lines.append("s3fs /mnt/ckpt fuse.s3fs rw,nosuid,nodev,relatime,user_id=0,group_id=0 0 0")
    path = tmp_path / "mounts.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_mount_table_read_in_part_leaves_its_causes_inconclusive_not_clear(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the mount table's cap the mounts are counted, not read: a cause that found nothing in
    the part read is inconclusive (the cut is named), and one that fired there stands."""
    from gdsdoctor.pipeline import analyze_paths
    from gdsdoctor.probes import mounts

    monkeypatch.setattr(mounts, "MAX_MOUNTS", 40, raising=False)
    seen = analyze_paths([_mount_table(tmp_path, 10)], None).report
    assert "fs-object-store-fuse" in {f["id"] for f in seen["findings"]}

    blind = analyze_paths([_mount_table(tmp_path, 60)], None).report
    assert "fs-object-store-fuse" not in {f["id"] for f in blind["findings"]}
    (verdict,) = [i for i in blind["inconclusive"] if i["id"] == "fs-object-store-fuse"]
    assert [(m["section"], m["status"]) for m in verdict["missing"]] == [("mounts", "cut")]
    assert "only the first 40 entries" in verdict["missing"][0]["detail"]
    validate_report(blind)


def test_a_requirement_another_source_meets_whole_is_not_blind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``any_of: [mounts, cufile_log]``: with the cufile.log read whole beside a mount table read in
    part, the requirement is met by whole data, as ``requires`` reads it (gds-nvidia-fs #78's log,
    a path that goes through nvidia-fs)."""
    from gdsdoctor.pipeline import analyze_paths
    from gdsdoctor.probes import mounts

    monkeypatch.setattr(mounts, "MAX_MOUNTS", 40, raising=False)
    log = Path(__file__).parent / "data" / "cufile" / "gdsnvfs-078--cufile.log"
    report = analyze_paths([_mount_table(tmp_path, 60), log], None).report
    cut_alone = {i["id"] for i in report["inconclusive"] if [m["status"] for m in i["missing"]] == ["cut"]}
    assert "fs-object-store-fuse" in cut_alone  # requires mounts alone: still blind
    outcomes = {c["id"]: c["outcome"] for c in report["causes"]}
    assert outcomes["fs-device-mapper-or-loop"] == "clear"  # any_of [mounts, cufile_log]: met whole


def test_every_inconclusive_line_names_the_command_or_file_that_settles_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Half the lines of the inconclusive section said what was missing without the command or
    file that settles it (a source read in part: "mounts was read only in part (…)"; the
    application's output: only the error lines to look for). Each way now names one: a command
    or file in backticks, or the option to pass."""
    from gdsdoctor.pipeline import analyze_paths
    from gdsdoctor.probes import mounts
    from tests.conftest import REPO

    monkeypatch.setattr(mounts, "MAX_MOUNTS", 40, raising=False)
    inputs = [[_mount_table(tmp_path, 60)], [REPO / "fixtures" / "fs-xfs-corruption-shutdown" / "files"]]
    ways = {
        m["collect"] for i in inputs for c in analyze_paths(i).report["inconclusive"] for m in c["missing"]
    }
    assert len(ways) > 20
    command_or_file = re.compile(
        r"^(?:run|pass|paste the output of) `|`[^`]*(?:/|\.[a-z]{2,}\b)[^`]*`|`[a-z][a-z0-9_-]* "
    )
    assert [way for way in ways if not command_or_file.search(way)] == []
    old_hint = "paste the application's output around the error (`cuFile error (5033)`, `NCCL WARN …`)"
    assert not command_or_file.search(old_hint)  # error lines to look for name no file
    cut = next(way for way in ways if "read only in part" in way)
    assert cut.startswith("run `cat /proc/mounts` again on less")
