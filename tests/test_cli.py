"""The command line as users and automation call it: exit codes, one-line errors, formats."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import validate_report, write_tree

PROC_MOUNTS = "/dev/nvme1n1 /mnt/ckpt ext4 rw,noatime,data=journal 0 0\n"


def gdsdoctor(
    *args: str, env: dict[str, str] | None = None, umask: int = -1
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gdsdoctor", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        umask=umask,
    )


def test_version() -> None:
    result = gdsdoctor("--version")
    assert result.returncode == 0 and result.stdout.startswith("gdsdoctor ")


@pytest.mark.parametrize(
    "args",
    [["analyze"], ["check", "--format", "yaml"], ["no-such-command"], ["rules", "show", "no-such-cause"]],
)
def test_usage_errors_exit_unknown_with_one_line(args: list[str]) -> None:
    result = gdsdoctor(*args)
    assert result.returncode == 3
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_missing_and_bad_inputs_exit_unknown(tmp_path: Path) -> None:
    (tmp_path / "bad.tar.gz").write_bytes(b"not an archive")
    result = gdsdoctor("analyze", str(tmp_path / "bad.tar.gz"))
    assert result.returncode == 3 and "not a readable tar.gz bundle" in result.stderr
    result = gdsdoctor("analyze", str(tmp_path / "nope.txt"), "--format", "json")
    assert result.stderr == f"gdsdoctor: {tmp_path / 'nope.txt'}: no such file or directory\n"
    # `| jq` still gets a document: UNKNOWN, the error as its reason, nothing judged (issue 25)
    report = json.loads(result.stdout)
    validate_report(report)
    assert result.returncode == 3 and report["summary"]["exit_code"] == 3
    assert report["summary"]["reason"] == f"{tmp_path / 'nope.txt'}: no such file or directory"
    assert report["findings"] == [] and report["causes"] == []


def test_analyze_json_and_exit_code_follow_severity(tmp_path: Path) -> None:
    write_tree(tmp_path, {"mounts.txt": PROC_MOUNTS})
    result = gdsdoctor(
        "analyze", str(tmp_path / "mounts.txt"), "--format", "json", "--path", "/mnt/ckpt/run1"
    )
    report = json.loads(result.stdout)
    validate_report(report)
    assert [f["id"] for f in report["findings"]] == ["ext4-data-journal"]
    assert report["summary"]["status"] == "WARNING" and result.returncode == 1
    markdown = gdsdoctor(
        "analyze", str(tmp_path / "mounts.txt"), "--format", "markdown", "--path", "/mnt/ckpt"
    )
    assert markdown.returncode == 1 and "**WARNING**" in markdown.stdout and "```sh" in markdown.stdout
    text = gdsdoctor("analyze", str(tmp_path / "mounts.txt"), "--path", "/mnt/ckpt")
    assert "ext4-data-journal" in text.stdout and text.stdout.rstrip().splitlines()[-1].startswith(
        "Status: WARNING"
    )


def test_check_on_this_machine_completes(tmp_path: Path) -> None:
    result = gdsdoctor("check", "--format", "json", "--deadline", "30")
    assert result.returncode in (0, 1, 2, 3) and "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    validate_report(report)
    assert report["summary"]["exit_code"] == result.returncode


def test_collect_then_analyze_cli(tmp_path: Path) -> None:
    bundle = tmp_path / "node.tar.gz"
    result = gdsdoctor("collect", "-o", str(bundle), "--deadline", "30", umask=0)
    assert result.returncode == 0 and bundle.is_file(), result.stderr
    assert stat.S_IMODE(bundle.stat().st_mode) == 0o600  # the kernel log inside: root-only on the host
    again = gdsdoctor("collect", "-o", str(bundle))
    assert again.returncode == 3 and "already exists" in again.stderr
    analysis = gdsdoctor("analyze", str(bundle), "--format", "json")
    validate_report(json.loads(analysis.stdout))


def test_rules_commands() -> None:
    listing = gdsdoctor("rules", "list")
    assert listing.returncode == 0 and "nvidia-fs-not-loaded" in listing.stdout
    show = gdsdoctor("rules", "show", "nvidia-fs-not-loaded")
    assert show.returncode == 0 and "modprobe nvidia_fs" in show.stdout
    lint = gdsdoctor("rules", "lint")
    assert lint.returncode == 0 and "0 problem(s)" in lint.stderr


def test_rules_lint_reports_problems(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_text("causes:\n  - id: Bad_Id\n")
    result = gdsdoctor("rules", "lint", str(tmp_path))
    assert result.returncode == 1  # problems found (CI's convention); 3 is for what cannot be linted
    assert result.stdout.startswith(f"{tmp_path / 'x.yaml'}:2:")


def test_explain_shows_signals(tmp_path: Path) -> None:
    write_tree(tmp_path, {"mounts.txt": PROC_MOUNTS})
    result = gdsdoctor("explain", "ext4-data-journal", str(tmp_path / "mounts.txt"))
    assert result.returncode == 0
    assert "[held]" in result.stdout and "mounts: ok" in result.stdout


def test_probes_lists_sources() -> None:
    result = gdsdoctor("probes")
    assert result.returncode == 0 and "/proc/modules" in result.stdout and "lsmod" in result.stdout


def test_check_with_nonexistent_path_diagnoses_its_nearest_parent_and_says_so() -> None:
    result = gdsdoctor("check", "--path", "/definitely/not/here", "--format", "json")
    assert result.returncode != 3 and "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    said = "does not exist: its nearest existing parent / is diagnosed"
    assert report["node"]["checkpoint_fs"]["path"] == said  # the header's line, before any finding
    note = "--path /definitely/not/here: no such file or directory; diagnosed its nearest existing parent /"
    assert any(n.startswith(note) for n in report["source"]["notes"])


def test_check_with_path_names_the_target() -> None:
    result = gdsdoctor("check", "--path", "/tmp", "--format", "json")
    report = json.loads(result.stdout)
    assert report["source"]["target_path"] == "/tmp"
    assert {p["name"]: p["status"] for p in report["probes"]}["target"] == "ok"


def test_estimate_textbook_case_json() -> None:
    result = gdsdoctor(
        "estimate", "--params", "70B", "--throughput", "1.2GB/s", "--preset", "bf16-adamw-bf16grads",
        "--gpus", "64", "--format", "json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    text = json.dumps(data)
    assert "1120000000000" in text.replace(".0", "")  # 70e9 × 16 B
    stall = next(v for k, v in _walk(data) if k == "stall_s")
    assert 15 * 60 < stall < 16 * 60


def _walk(value, key=None):  # type: ignore[no-untyped-def]
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v, key)
    else:
        yield key, value


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--params", "0", "--throughput", "1GB/s"], "parameter count"),
        (["--params", "70B", "--throughput", "-1GB/s"], "throughput"),
        (["--params", "70B", "--throughput", "1.2 furlongs/s"], "unknown unit"),
        (["--params", "70B", "--throughput", "1GB/s", "--budget", "150%"], "budget"),
    ],
)
def test_estimate_bad_input_is_one_line_exit_3(args: list[str], message: str) -> None:
    result = gdsdoctor("estimate", *args)
    assert result.returncode == 3 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_analyze_with_params_turns_pasted_fio_into_a_stall_finding() -> None:
    fio = Path(__file__).resolve().parents[1] / "fixtures/throughput-fio-stall-over-budget/files/fio.json"
    result = gdsdoctor("analyze", str(fio), "--params", "70B", "--budget", "2%", "--format", "json")
    report = json.loads(result.stdout)
    finding = next(f for f in report["findings"] if f["id"] == "checkpoint-stall-over-budget")
    assert "980 GB checkpoint" in finding["evidence"][0]["text"]
    assert result.returncode == 1
    bad = gdsdoctor("analyze", str(fio), "--params", "seventy")
    assert bad.returncode == 3 and "parameter count" in bad.stderr


def test_site_config_supplies_the_job(tmp_path: Path) -> None:
    fio = Path(__file__).resolve().parents[1] / "fixtures/throughput-fio-stall-over-budget/files/fio.json"
    (tmp_path / "site.yaml").write_text("checkpoint:\n  params: 70B\n  budget: 2%\n")
    result = gdsdoctor("analyze", str(fio), "--site-config", str(tmp_path / "site.yaml"), "--format", "json")
    assert "checkpoint-stall-over-budget" in [f["id"] for f in json.loads(result.stdout)["findings"]]
    (tmp_path / "bad.yaml").write_text("- not a mapping\n")
    bad = gdsdoctor("analyze", str(fio), "--site-config", str(tmp_path / "bad.yaml"))
    assert bad.returncode == 3 and "checkpoint:" in bad.stderr


def test_pasted_gdsio_write_feeds_the_stall_model() -> None:
    data = Path(__file__).resolve().parent / "data/bench"
    gdsio = data / "gdsio-output.nvidia-getting-started-example1.txt"
    result = gdsdoctor("analyze", str(gdsio), "--params", "70B", "--format", "json")
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    assert "checkpoint-stall-over-budget" not in [i["id"] for i in report["inconclusive"]]


def test_check_bench_measures_the_path_and_judges_the_stall(tmp_path: Path) -> None:
    import shutil

    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (Debian package fio)")
    result = gdsdoctor(
        "check", "--path", str(tmp_path), "--bench", "--bench-size", "32MiB", "--params", "70B",
        "--budget", "1%", "--format", "json",
    )  # fmt: skip
    report = json.loads(result.stdout)
    assert {p["name"]: p["status"] for p in report["probes"]}["fio"] == "ok"
    finding = next(f for f in report["findings"] if f["id"] == "checkpoint-stall-over-budget")
    assert finding["evidence"][1]["artifact"] == "bench/fio.json"
    assert list(tmp_path.iterdir()) == [], "bench left files behind"
    no_path = gdsdoctor("check", "--bench")
    assert no_path.returncode == 3 and "--bench needs --path" in no_path.stderr


def test_text_output_keeps_reference_urls_whole() -> None:
    case = next((Path(__file__).resolve().parents[1] / "fixtures/cases").glob("dali-4771*"))
    result = gdsdoctor("analyze", *[str(p) for p in sorted((case / "files").iterdir())])
    url = "https://docs.nvidia.com/gpudirect-storage/troubleshooting-guide/installing-gpudirect-storage.html"
    assert any(line.strip() == f"see {url}" for line in result.stdout.splitlines()), result.stdout


def _all_command_lines() -> list[list[str]]:
    """Every command and sub-command, read off the typer app itself."""
    import typer

    from gdsdoctor import cli

    def commands(group: Any, prefix: list[str]) -> list[list[str]]:
        found = []
        for name, command in getattr(group, "commands", {}).items():
            found.append([*prefix, name])
            found += commands(command, [*prefix, name])
        return found

    return commands(typer.main.get_command(cli.build_app()), [])


def test_every_command_is_listed() -> None:
    names = {" ".join(words) for words in _all_command_lines()}
    assert {"check", "analyze", "collect", "rules lint", "fleet merge", "estimate", "topo"} <= names


@pytest.mark.parametrize("words", _all_command_lines(), ids=" ".join)
def test_every_command_has_help_and_one_line_usage_errors(
    words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """--help exits 0 with the command's usage; an unknown option is one line, exit 3 (click's
    own usage exit 2 would read as CRITICAL), and names the command whose --help to read.
    In-process through ``cli.run``, what the script calls (the script's own exit codes are
    test_usage_errors_exit_unknown_with_one_line's and test_version's)."""
    from gdsdoctor import cli

    assert cli.run([*words, "--help"]) == 0
    assert f"Usage: gdsdoctor {' '.join(words)}" in capsys.readouterr().out
    assert cli.run([*words, "--no-such-option"]) == 3
    wrong = capsys.readouterr().err
    assert "Traceback" not in wrong
    assert wrong.count("\n") == 1 and f"`gdsdoctor {' '.join(words)} --help`" in wrong


def test_a_reader_that_goes_away_is_not_an_internal_error() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "gdsdoctor", "rules", "list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # before gdsdoctor writes: its write fails with EPIPE
    assert process.wait(timeout=60) == 0  # a closed pipe is the reader's choice, not an error
    assert process.stderr.read() == b""


def test_no_command_prints_the_commands_and_exits_unknown() -> None:
    result = gdsdoctor()
    assert result.returncode == 3 and "check" in result.stdout and "analyze" in result.stdout
    assert result.stderr.strip() == "gdsdoctor: give a command (listed above)"


def test_options_are_never_abbreviated() -> None:
    """`--dead 30` must not silently mean --deadline (nor something else after an upgrade)."""
    result = gdsdoctor("check", "--dead", "30")
    assert result.returncode == 3 and "--dead" in result.stderr


def _command(app: Any, words: list[str]) -> Any:
    import typer

    command = typer.main.get_command(app)
    for word in words:
        command = command.commands[word]
    return command


def _declared(command: Any) -> list[tuple[Any, ...]]:
    return [(p.name, p.opts, p.required, p.multiple, p.default, p.type.name) for p in command.params]


@pytest.mark.parametrize("words", _all_command_lines(), ids=" ".join)
def test_a_command_built_alone_reads_as_in_the_whole_app(words: list[str]) -> None:
    """A run builds only the command it names (start-up time): its options, help and errors
    must be those of the whole app."""
    from gdsdoctor import cli

    alone, whole = cli.build_app(words[0]), cli.build_app()
    assert _declared(_command(alone, words)) == _declared(_command(whole, words))
    assert _command(alone, words).help == _command(whole, words).help
    assert list(_command(alone, []).commands) == [words[0]]


def test_report_formats_are_the_renderers() -> None:
    from gdsdoctor import cli
    from gdsdoctor.commands.fleet import FLEET_FORMATS

    fmt = next(p for p in _command(cli.build_app(), ["check"]).params if p.name == "fmt")
    assert tuple(fmt.type.choices) == cli.REPORT_FORMATS
    assert cli.FORMATS == FLEET_FORMATS


@pytest.mark.parametrize(
    ("raised", "line"),
    [
        (
            RuntimeError("boom"),
            "gdsdoctor: internal error: RuntimeError: boom (GDSDOCTOR_DEBUG=1 shows more)",
        ),
        (KeyboardInterrupt(), "gdsdoctor: interrupted"),
    ],
)
def test_a_bug_or_an_interrupt_is_one_line_and_unknown(
    raised: BaseException, line: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from gdsdoctor import cli
    from gdsdoctor.cli import tools

    def fail() -> None:
        raise raised

    monkeypatch.setattr(tools, "probes_list", fail)
    monkeypatch.delenv("GDSDOCTOR_DEBUG", raising=False)
    assert cli.run(["probes", "--format", "json"]) == 3
    assert capsys.readouterr().err == line + "\n"


def test_debug_shows_the_traceback_of_a_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    from gdsdoctor import cli
    from gdsdoctor.cli import tools

    def fail() -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(tools, "probes_list", fail)
    monkeypatch.setenv("GDSDOCTOR_DEBUG", "1")
    with pytest.raises(RuntimeError, match="boom"):
        cli.run(["probes", "--format", "json"])


def test_short_help_option_and_rich_help(capsys: pytest.CaptureFixture[str]) -> None:
    from gdsdoctor import cli

    assert cli.run(["estimate", "-h"]) == 0
    out = capsys.readouterr().out
    assert "Usage: gdsdoctor estimate" in out and "--throughput" in out and "╭─ Options" in out
