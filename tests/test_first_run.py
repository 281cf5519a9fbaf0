"""The first ten minutes of a new user (issue 12): what a first try at each command must say.

Each test here failed on the code before the change it covers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gdsdoctor import cli, pipeline
from tests.conftest import THIS_KERNEL, write_tree


def _json_check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = cli.run(["check", *args, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_check_host_root_that_does_not_exist_is_one_line_exit_3(
    capsys: pytest.CaptureFixture[str], isolated_path: Path
) -> None:
    code = cli.run(["check", "--host-root", "/nonexistent/gdsdoctor-host"])
    captured = capsys.readouterr()
    assert code == 3
    assert captured.out == ""
    assert captured.err.strip().splitlines() == [
        "gdsdoctor: --host-root /nonexistent/gdsdoctor-host: no such directory"
    ]


def test_check_host_root_without_sys_does_not_judge_gpu_causes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_path: Path
) -> None:
    """No PCI data at all (a root with etc/ alone, no lspci): GPU causes are inconclusive, never
    fired. (An empty root is refused: tests/test_blindness.py.)"""
    empty = tmp_path / "root"
    (empty / "etc").mkdir(parents=True)
    code, report = _json_check(capsys, "--host-root", str(empty))
    outcomes = {c["id"]: c["outcome"] for c in report["causes"]}
    assert outcomes["nvidia-fs-not-loaded"] == "inconclusive"
    missing = next(i for i in report["inconclusive"] if i["id"] == "nvidia-fs-not-loaded")["missing"]
    assert {m["section"] for m in missing} == {"pci", "lspci"}
    assert not any(f["severity"] == "critical" for f in report["findings"])
    assert code != 2


def test_host_without_gpu_in_lspci_makes_gpu_causes_not_applicable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_path: Path
) -> None:
    """lspci (the live listing) showing no NVIDIA device is enough to say GPU causes do not apply."""
    from tests.conftest import fake_binary

    fake_binary(
        isolated_path,
        "lspci",
        "echo '00:00.0 Host bridge [0600]: Intel Corporation 440FX [8086:1237] (rev 02)'\n"
        "echo '00:03.0 Ethernet controller [0200]: Red Hat, Inc. Virtio network device [1af4:1000]'",
    )
    empty = write_tree(tmp_path / "root", THIS_KERNEL)  # this kernel's root: the fake lspci runs
    _, report = _json_check(capsys, "--host-root", str(empty))
    outcomes = {c["id"]: c["outcome"] for c in report["causes"]}
    assert outcomes["nvidia-fs-not-loaded"] == "not_applicable"


def test_pasted_files_still_check_gpu_causes_without_pci_data() -> None:
    """Pasted files leave PCI not collected: the user chose what to paste, the causes are checked."""
    facts = {"pci": {"status": "not_collected"}, "lspci": {"status": "not_collected"}}
    from gdsdoctor.facts.derived import derive

    assert derive(facts, None)["undecided"] == {}
    assert {"pci", "lspci"} <= pipeline.KNOWN_SECTIONS


@pytest.mark.parametrize("files", [{}, {"hosts": "127.0.0.1 localhost\n", "motd": "welcome\n"}])
def test_report_that_read_nothing_says_so_at_the_top(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, files: dict[str, str]
) -> None:
    """`analyze` of an empty directory or of /etc: nothing recognised is the first thing said. The
    folder is named relative to the working directory: a long temporary path wrapped the line."""

    write_tree(tmp_path / "etc", files).mkdir(exist_ok=True)
    monkeypatch.chdir(tmp_path)
    folder = Path("etc")
    code = cli.run(["analyze", str(folder)])
    lines = capsys.readouterr().out.splitlines()
    assert code == 3
    notice = " ".join(
        line.strip() for line in lines[1 : next(n for n, x in enumerate(lines) if x.startswith("Sources"))]
    )
    assert notice.startswith("Nothing was read: ")  # wrapped when the folder's path is long
    assert str(folder) in notice
    assert not any("No problem found" in line for line in lines)
    code = cli.run(["analyze", str(folder), "--format", "markdown"])
    markdown = capsys.readouterr().out
    assert [line for line in markdown.splitlines() if line][1].startswith("**Nothing was read:")
    assert "No problem found" not in markdown


def test_host_without_nvidia_gpu_says_so_not_plain_no_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_path: Path
) -> None:
    from tests.conftest import fake_binary

    fake_binary(
        isolated_path, "lspci", "echo '00:00.0 Host bridge [0600]: Intel Corporation 440FX [8086:1237]'"
    )
    write_tree(tmp_path / "root", THIS_KERNEL)  # this kernel's root: the fake lspci runs
    (tmp_path / "root" / "sys").mkdir()  # a root without sys/ would be a partial run
    code = cli.run(["check", "--host-root", str(tmp_path / "root"), "--format", "json"])
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert code == 0 and summary["reason"].endswith(f"; {summary['notice']}")
    cli.run(["check", "--host-root", str(tmp_path / "root")])
    lines = capsys.readouterr().out.splitlines()
    notice = next(line for line in lines if "NVIDIA GPU" in line)
    assert lines.index(notice) == 1
    count = int(notice.split(": ")[1].split()[0])
    assert notice == f"No NVIDIA GPU found: {count} GPU causes not applicable" and count > 10
    assert "No problem found" not in lines
    assert summary["notice"] == f"no NVIDIA GPU found: {count} GPU causes not applicable"


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _fixture_files(name: str) -> list[str]:
    return sorted(str(p) for p in (FIXTURES / name / "files").iterdir())


@pytest.mark.parametrize("columns", [60, 132])
def test_text_report_follows_the_terminal_width(
    columns: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    code = cli.run(["analyze", *_fixture_files("ext4-journal-checkpoint"), "--path", "/mnt/ckpt/run-42"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    start = max(n for n, line in enumerate(lines) if line.startswith("Status: "))
    status = " ".join(line.strip() for line in lines[start:])
    assert status.startswith("Status: WARNING (exit 1) — ") and "ext4-data-journal" in status
    # at an asked width (COLUMNS) the status line wraps as prose does; on a pipe it is one line
    assert (len(lines) - start > 1) == (len(status) > min(columns, 100))
    body = [line for line in lines if "see http" not in line]  # URLs stay whole
    assert max(len(line) for line in body) <= columns
    assert max(len(line) for line in body) > min(columns, 100) - 15  # the width is used
    assert [line for line in lines if line != line.rstrip()] == []


def test_colored_report_has_no_trailing_spaces() -> None:
    from gdsdoctor.report.text import render_text

    report = pipeline.analyze_paths(
        [Path(p) for p in _fixture_files("ext4-journal-checkpoint")], "/mnt/ckpt/run-42"
    ).report
    text = render_text(report, color=True, width=50)
    assert "\x1b[" in text
    assert [line for line in text.splitlines() if line.replace("\x1b[0m", "").endswith(" ")] == []


def _probe_statuses(capsys: pytest.CaptureFixture[str], root: Path) -> dict[str, dict]:
    write_tree(root, THIS_KERNEL)  # this kernel's root: the fake commands run
    cli.run(["check", "--host-root", str(root), "--format", "json"])
    return {p["name"]: p for p in json.loads(capsys.readouterr().out)["probes"]}


def test_kernel_log_denied_to_non_root_says_run_as_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_path: Path
) -> None:
    """dmesg_restrict=1: dmesg is refused and journalctl -k shows no kernel line to a user."""
    from tests.conftest import fake_binary

    fake_binary(
        isolated_path, "dmesg", "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1"
    )
    fake_binary(
        isolated_path,
        "journalctl",
        "echo 'Hint: You are currently not seeing messages from other users and the system.' >&2\n"
        "echo '-- No entries --'",
    )
    dmesg = _probe_statuses(capsys, tmp_path / "root")["dmesg"]
    assert dmesg["status"] == "denied"
    assert dmesg["detail"].startswith("run as root (dmesg: read kernel buffer failed")
    cli.run(["check", "--host-root", str(tmp_path / "root")])
    assert "  dmesg denied: run as root (dmesg: read kernel buffer failed: Operation not permitted)" in (
        capsys.readouterr().out.splitlines()
    )


def test_every_permission_failure_says_run_as_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_path: Path
) -> None:
    from tests.conftest import fake_binary

    fake_binary(isolated_path, "nvme", "echo 'open /dev/nvme0: Permission denied' >&2; exit 1")
    probes = _probe_statuses(capsys, tmp_path / "root")
    assert probes["nvme_list"]["status"] == "denied"
    assert probes["nvme_list"]["detail"] == "run as root (open /dev/nvme0: Permission denied)"


def test_inconclusive_hints_are_commands_to_run_in_plain_english(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    cli.run(["analyze", str(tmp_path / "empty"), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    hints = {m["section"]: m["collect"] for i in report["inconclusive"] for m in i["missing"]}
    assert hints["infiniband"] == "run `ls /sys/class/infiniband` or `ibstat`"
    assert hints["pci"] == "run `lspci -vvv`"
    assert hints["app_log"].startswith("paste the application's output around the error")
    assert hints["modules"] == "run `cat /proc/modules` or `lsmod` or `ls /sys/module`"
    details = {p["name"]: p["detail"] for p in report["probes"]}
    assert details["app_log"].startswith("not in this capture; paste the application's output")
    every_hint = [*hints.values(), *details.values()]
    # a bundle-internal artifact name (`sys/class/net.json`) is no command; a host file (`cat
    # /etc/nvme/config.json`) is
    internal = re.compile(r"(?:^|[\s`])(?!/)[\w.-]+/[\w./-]*\.json`")
    assert [h for h in every_hint if "(reads " in h or "collect with" in h or internal.search(h)] == []
    cli.run(["analyze", str(tmp_path / "empty"), "--verbose"])
    text = capsys.readouterr().out
    assert "run lspci -vvv → " in text and "collect with" not in text and "(reads " not in text


def test_check_host_root_that_is_a_file_is_one_line_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_path: Path
) -> None:
    (tmp_path / "file").write_text("x")
    assert cli.run(["check", "--host-root", str(tmp_path / "file")]) == 3
    assert capsys.readouterr().err.strip() == f"gdsdoctor: --host-root {tmp_path / 'file'}: not a directory"


def test_the_status_line_is_one_line_on_a_pipe() -> None:
    """`gdsdoctor check | tail -1` reads the whole status line: with no COLUMNS and no terminal it
    is never wrapped, however long; at an asked width it wraps between words."""
    from gdsdoctor.report.text import render_text

    report = pipeline.analyze_paths([FIXTURES / "cli-mount-barrier0-rejected" / "files"]).report
    report["summary"]["reason"] += "; " + "a long reason " * 10
    last = render_text(report).rstrip().splitlines()[-1]
    assert last.startswith("Status: CRITICAL (exit 2)") and last.endswith("a long reason") and len(last) > 100
    wrapped = render_text(report, width=60).rstrip().splitlines()
    assert max(map(len, wrapped[-4:])) <= 60 and wrapped[-1].startswith("  ")
