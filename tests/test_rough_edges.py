"""The first hour's rough edges (issue 33 item 7), each through the real command line (in-process):
`explain --params/--path/--format json`, `--read-only` never printing a `{placeholder}`, `rules
show --format json`, `rules list` one line per rule in a pipe, decimal GB/s in `bench`, suggested
commands in human units that `estimate` itself reads, `estimate`'s status line, the man page's
EXAMPLES and ENVIRONMENT, and `rules lint` refusing what Python before 3.11.5 matches wrongly."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from gdsdoctor import cli
from gdsdoctor.cli.manpage import ENVIRONMENT, EXAMPLES, commands, render
from gdsdoctor.commands import bench_run as bench
from gdsdoctor.pipeline import rules
from tests.conftest import REPO

FIXTURES = REPO / "fixtures"
FIO = FIXTURES / "throughput-fio-stall-over-budget" / "files" / "fio.json"  # real fio 3.20: 1.6 MB/s
LSMOD = [str(p) for p in sorted((FIXTURES / "nvidia-fs-missing-lsmod" / "files").iterdir())]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.run(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ---- explain ----------------------------------------------------------------------------------


def test_explain_takes_the_job_the_path_and_answers_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    """`explain` said "pass --params" and then refused --params."""
    args = ["explain", "checkpoint-stall-over-budget", str(FIO), "--no-config"]
    code, out, _ = run(capsys, *args, "--format", "json")
    before = json.loads(out)
    assert code == 0 and before["outcome"] == "not_applicable"
    assert {"section": "job", "status": "not_collected"}.items() <= before["required"][0].items()
    assert "pass --params" in before["required"][0]["detail"]
    job = ["--params", "70B", "--budget", "2%", "--gpus", "64", "--path", "/mnt/ckpt"]
    code, out, _ = run(capsys, *args, *job, "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["outcome"] == "fired" and data["path"]["given"] == "/mnt/ckpt"
    assert next(v for v in data["vars"] if v["name"] == "params")["value"] == "70B"
    (step,) = data["commands"]["remediation"]
    assert step["command"] == "gdsdoctor estimate --params 70B --throughput 1.62MB/s --budget 2%"
    assert data["commands"]["filled"] == "finding" and data["commands"]["unfilled"] == []
    code, text, _ = run(capsys, *args, *job)  # the same as text
    assert code == 0 and "$ gdsdoctor estimate --params 70B --throughput 1.62MB/s --budget 2%" in text


def test_a_suggested_estimate_runs_as_printed(capsys: pytest.CaptureFixture[str]) -> None:
    """Human units (`--throughput 1.62MB/s`, not `1616406.0B/s`) that estimate itself reads, and
    its answer agrees with the finding: the budget is missed."""
    code, out, _ = run(capsys, "analyze", str(FIO), "--params", "70B", "--no-config", "--format", "json")
    (finding,) = [f for f in json.loads(out)["findings"] if f["id"] == "checkpoint-stall-over-budget"]
    (command,) = [step["command"] for step in finding["remediation"]]
    assert command == "gdsdoctor estimate --params 70B --throughput 1.62MB/s --budget 5%"
    assert not re.search(r"\d{7,}|\.0B/s|0\.05", command)
    code, out, _ = run(capsys, *shlex.split(command)[1:])
    assert code == 1 and out.rstrip().splitlines()[-1].startswith(
        "Status: exit 1: the synchronous write stalls"
    )


def test_read_only_never_prints_a_placeholder_unfilled(capsys: pytest.CaptureFixture[str]) -> None:
    """A cause that did not fire: its read commands filled with what the facts hold, the rest
    `<name>` (the shell refuses to run it) and one line saying what would give it."""
    args = ["explain", "capacity-below-checkpoint-size", *LSMOD, "--no-config", "--read-only"]
    code, text, _ = run(capsys, *args)
    assert code == 0 and "$ df -h <mountpoints>" in text
    assert not re.search(r"\{[a-z_]+\}", text.split("commands (")[1]), text  # no {name} left
    assert re.search(r"<mountpoints>.* unfilled: from facts these inputs do not hold", " ".join(text.split()))
    code, out, _ = run(capsys, *args, "--format", "json")
    commands = json.loads(out)["commands"]
    assert commands["filled"] == "facts" and "mountpoints" in {u["name"] for u in commands["unfilled"]}
    assert all("{" not in step["command"] for step in commands["remediation"])
    code, full, _ = run(capsys, *args[:-1])  # without --read-only: the rule as written, for its author
    assert "$ df -h {mountpoints}" in full and "commands (as written in the rule)" in full


# ---- rules show, rules list, rules lint ----------------------------------------------------------


def test_rules_show_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rules", "show", "nvidia-fs-not-loaded", "--format", "json")
    cause = json.loads(out)
    assert code == 0 and cause["id"] == "nvidia-fs-not-loaded" and cause["severity"] == "critical"
    assert cause["signals"] and {"id", "when", "certainty", "says"} <= set(cause["signals"][0])
    assert cause["file"].endswith("gds-driver.yaml") and cause["line"] > 0


def test_rules_list_is_one_line_per_rule_in_a_pipe(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a pipe (461 lines for 155 rules, so grep returned title fragments): one row per rule, its
    title whole, nothing else; on a terminal (COLUMNS) the wrapped table and its count as before."""
    monkeypatch.delenv("COLUMNS", raising=False)
    causes = {c.id: c for c in rules()}
    code, out, err = run(capsys, "rules", "list")
    lines = out.splitlines()
    assert code == 0 and len(lines) == len(causes) and err == ""
    for line in lines:
        cause = causes[line.split()[0]]
        assert line.endswith(cause.title.strip()) and cause.severity in line.split()
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run(capsys, "rules", "list")
    assert len(out.splitlines()) > len(causes) + 1 and out.endswith(f"{len(causes)} cause(s)\n")


SITE_RULE = """
description: a site rule with a regular expression
causes:
  - id: site-pattern
    title: a site pattern
    category: environment
    severity: warning
    requires: [mounts]
    explanation: A site rule that matches the mount's filesystem type with a regular expression.
    signals:
      - id: fstype
        when: "mounts.mounts[?regex(fstype, '{pattern}')]"
        certainty: 0.9
        says: "matched"
"""


@pytest.mark.parametrize(
    ("pattern", "refused"),
    [
        ("x++fs", "possessive ++"),
        ("(?>xf)s", "atomic group"),
        ("ext[0-9]{1,2}+", "possessive {1,2}+"),
        ("x\\\\++fs", None),  # an escaped + repeated: not possessive
        ("[+]+fs", None),  # + in a class, repeated
        ("(?:xf)s", None),  # a non-capturing group
    ],
)
def test_rules_lint_refuses_what_old_pythons_match_wrongly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pattern: str, refused: str | None
) -> None:
    (tmp_path / "site.yaml").write_text(SITE_RULE.replace("{pattern}", pattern))
    code, out, _ = run(capsys, "rules", "lint", str(tmp_path))
    if refused is None:
        assert code == 0 and out == "", out
        return
    (line,) = out.splitlines()
    written = pattern.replace("\\\\", "\\")
    assert code == 1 and "site-pattern: regex(): " in line and repr(written) in line and refused in line
    assert "3.11.5" in line and line.startswith(f"{tmp_path / 'site.yaml'}:")


# ---- units: bench and analyze of the same run, estimate's status line -------------------------------


def test_bench_and_analyze_of_the_same_run_print_the_same_rate(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "analyze", str(FIO), "--params", "70B", "--no-config")
    assert code == 1 and "at the measured 1.62 MB/s" in out
    measured = bench.Measurement("cpu-direct", False, 1616406.0, None)
    result = bench.BenchResult(
        path=Path("/mnt/ckpt"), engine="cpu-direct", size_bytes=256 * bench.MIB,
        block_size_bytes=bench.BLOCK_SIZE, numjobs=2, iodepth=16, measurements=(measured,),
        artifact="bench/fio.json", raw=b"", facts={}, elapsed_s=1.0, notes=(),
    )  # fmt: skip
    text = bench.render_text(result)
    assert re.search(r"write +1\.62 MB/s", text) and "GiB/s" not in text and "MiB/s" not in text


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (
            ["--throughput", "1.2GB/s", "--budget", "2%"],
            1,
            "exit 1: the synchronous write stalls 22.7% of wall",
        ),
        (
            ["--throughput", "20GB/s", "--budget", "2%"],
            0,
            "exit 0: 1.4% of wall time stalled, within the 2.00%",
        ),
        (["--throughput", "1.2GB/s"], 0, "no --budget given"),
        (
            ["--throughput", "1.2GB/s", "--async", "--gpus", "8", "--host-mem", "100GB"],
            1,
            "more than --host-mem",
        ),
    ],
)
def test_estimate_ends_with_a_status_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, args: list[str], code: int, says: str
) -> None:
    """estimate exited 1 with no line saying why. In a pipe the line is whole (`| tail -1`)."""
    monkeypatch.delenv("COLUMNS", raising=False)
    done, out, err = run(capsys, "estimate", "--params", "70B", *args)
    assert done == code and out.rstrip().splitlines()[-1].startswith("Status: ") and says in out, out
    done, out, err = run(capsys, "estimate", "--params", "70B", *args, "--format", "json")
    status = json.loads(out)["status"]
    assert done == code == status["exit_code"] and says in status["says"] and err == ""


# ---- the man page ----------------------------------------------------------------------------------


def test_the_man_page_lists_every_environment_variable_the_code_reads() -> None:
    from gdsdoctor.probes.job_env import NAMES

    read = set()
    for source in (REPO / "src" / "gdsdoctor").rglob("*.py"):
        text = source.read_text()
        read |= set(re.findall(r"os\.environ(?:\.get)?[\[(]\s*\"([A-Z_][A-Z0-9_]*)\"", text))
        read |= set(re.findall(r"\"([A-Z_][A-Z0-9_]*)\" (?:not )?in os\.environ", text))
    read |= {name for name in re.findall(r"[A-Z_]+", "GDSDOCTOR_CONFIG COMPLETE_VAR")} - {"COMPLETE_VAR"}
    read |= set(NAMES) | {"_GDSDOCTOR_COMPLETE"}  # job_env reads its list; app.py through COMPLETE_VAR
    assert {"GDSDOCTOR_DEBUG", "GDSDOCTOR_SBIN_DIRS", "CUFILE_LOGFILE_PATH", "COLUMNS"} <= read
    listed = {name for names, _ in ENVIRONMENT for name in re.findall(r"[A-Z_][A-Z0-9_]*", names)}
    assert read <= listed, read - listed
    page = render()
    assert page.index(".SH ENVIRONMENT") < page.index(".SH FILES") < page.index(".SH EXAMPLES")
    assert "\\fBGDSDOCTOR_CONFIG\\fR" in page


def test_every_example_uses_real_options() -> None:
    page = render()
    found = dict(commands())
    for example, _meaning in EXAMPLES:
        words = shlex.split(example.split(" | ")[0].split(" > ")[0])
        name = next(n for n in sorted(found, key=len, reverse=True) if example.startswith(n + " "))
        ctx = found[name].make_context(name, [], resilient_parsing=True)
        options = {opt for param in found[name].get_params(ctx) for opt in param.opts}
        used = {word.split("=")[0] for word in words if word.startswith("-")}
        assert used <= options, (example, used - options)
        assert example.replace("-", "\\-") in page.replace("\\e", "\\")
