"""Every invocation that worked before the typer rewrite keeps working and exiting as it did.

The list below was captured by running the argparse command line (commit before the rewrite):
for each invocation, its exit code, what stdout holds and how many lines stderr holds. It runs
in-process through ``cli.run`` (the function the ``gdsdoctor`` script calls) to stay fast.
``check`` reads this machine, whose health is not ours to fix: its rows accept any exit code,
but a JSON report's own ``summary.exit_code`` must be the one returned.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gdsdoctor import cli

REPO = Path(__file__).resolve().parents[1]
MOUNTS = str(REPO / "fixtures/ext4-journal-checkpoint/files/proc-mounts.txt")
FIO = str(REPO / "fixtures/throughput-fio-stall-over-budget/files/fio.json")
BUNDLE = str(REPO / "fixtures/h200-node-without-nvidia-fs/bundle")
TOPO_BUNDLE = str(REPO / "fixtures/topo-sysfs-degraded-links/bundle")
JOB = ["--params", "70B", "--preset", "bf16-adamw", "--interval", "1h", "--budget", "2%", "--gpus", "8"]
ESTIMATE = ["estimate", "--params", "70B", "--throughput", "1.2GB/s"]
ANY = None  # an exit code or stderr line count this list does not fix

# (argv, exit code, stdout kind, stderr line count). Kinds: json (parses), text (non-empty, not
# JSON), empty. {tmp} is a scratch directory holding site.yaml, rules/, paste.txt, bad-rules/
# and fleet.json (a fleet summary of BUNDLE and TOPO_BUNDLE).
# fmt: off
INVOCATIONS: list[tuple[list[str], int | None, str, int | None]] = [
    # analyze: formats, outputs, exit policy, rules, verbosity, the job
    (["analyze", MOUNTS, "-f", "json", "--path", "/mnt/ckpt"], 1, "json", 1),
    (["analyze", MOUNTS, "--format", "text", "--path", "/mnt/ckpt"], 1, "text", 0),
    (["analyze", MOUNTS, "-f", "markdown"], 1, "text", 0),
    (["analyze", MOUNTS], 1, "text", 0),
    (["analyze", MOUNTS, "-v"], 1, "text", 0),
    (["analyze", MOUNTS, "--verbose", "-f", "json"], 1, "json", 1),
    (["analyze", MOUNTS, "--output", "json={tmp}/r.json", "--output", "markdown={tmp}/r.md"], 1, "empty", 1),
    (["analyze", MOUNTS, "-o", "json={tmp}/r2.json", "-f", "text"], 1, "text", 0),
    (["analyze", MOUNTS, "-o", "json=-"], 1, "json", 1),
    (["analyze", MOUNTS, "-o", "yaml={tmp}/r.yaml"], 3, "empty", 1),
    (["analyze", MOUNTS, "-o", "json"], 3, "empty", 1),
    (["analyze", MOUNTS, "--npd"], 1, "text", 0),
    (["analyze", MOUNTS, "--fail-on", "warning", "-f", "json"], 1, "json", 1),
    (["analyze", MOUNTS, "--fail-on", "critical", "-f", "json"], 0, "json", 1),
    (["analyze", MOUNTS, "--fail-on", "never"], 3, "empty", 1),
    (["analyze", MOUNTS, "--rules-dir", "{tmp}/rules", "--rules-dir", "{tmp}/rules", "-f", "json"], 1, "json", 1),
    (["analyze", FIO, *JOB, "-f", "json"], 1, "json", 1),
    (["analyze", FIO, "--site-config", "{tmp}/site.yaml", "-f", "json"], 1, "json", 1),
    (["analyze", FIO, "--site-config", "{tmp}/site.yaml", "--params", "seventy"], 3, "empty", 1),
    (["analyze", FIO, "--gpus", "eight"], 3, "empty", 1),
    # BUNDLE, a GPU node that does not use GDS, is OK since the status contract (issue 31: intent)
    (["analyze", BUNDLE, TOPO_BUNDLE, "-j", "2", "-f", "json"], 1, "json", 1),
    (["analyze", BUNDLE, TOPO_BUNDLE, "--jobs", "1", "--fleet", "-f", "text"], 1, "text", 0),
    (["analyze", BUNDLE, TOPO_BUNDLE, "-j", "0"], 3, "empty", 1),
    # bad input with --npd: node-problem-detector's "unknown" (2) and its message (issue 25)
    (["analyze", BUNDLE, TOPO_BUNDLE, "--npd"], 2, "text", 1),
    (["analyze", BUNDLE, "-f", "json"], 0, "json", 1),
    (["analyze"], 3, "empty", 1),
    # check (this machine): formats, outputs, exit policy, the job, the host root
    (["check", "-f", "json", "--deadline", "20"], ANY, "json", 1),
    (["check", "--path", "/tmp", "-v", "--fail-on", "warning"], ANY, "text", 0),
    (["check", "--host-root", BUNDLE, "--npd", "--rules-dir", "{tmp}/rules"], ANY, "text", 0),
    (["check", "-o", "markdown={tmp}/c.md", *JOB, "--site-config", "{tmp}/site.yaml"], ANY, "empty", 1),
    (["check", "--path", "/definitely/not/here"], None, "text", None),  # its nearest parent, said
    (["check", "--bench"], 3, "empty", 1),
    (["check", "--gpus", "x"], 3, "empty", 1),
    (["check", "--deadline", "soon"], 3, "empty", 1),
    # collect, redact, explain, topo, probes, estimate, bench
    (["collect", "-o", "{tmp}/node.tar.gz", "--host-root", BUNDLE, "--deadline", "20"], 0, "empty", 1),
    (["collect", "--output", "{tmp}/node.tar.gz"], 3, "empty", 1),
    (["collect", "--case-id", "no spaces!"], 3, "empty", 1),
    (["redact", "{tmp}/paste.txt"], 0, "empty", ANY),
    (["redact", "{tmp}/paste.txt", "--output-dir", "{tmp}/redacted"], 0, "empty", ANY),
    (["redact"], 3, "empty", 1),
    (["explain", "ext4-data-journal", MOUNTS], 0, "text", 0),
    (["explain", "ext4-data-journal", MOUNTS, "--rules-dir", "{tmp}/rules"], 0, "text", 0),
    (["explain", "no-such-cause", MOUNTS], 3, "empty", 1),
    (["explain"], 3, "empty", 1),
    # topo exits as the other diagnosing commands (issue 25): its bundle has degraded links.
    (["topo", TOPO_BUNDLE, "-f", "json"], 1, "json", 0),
    (["topo", TOPO_BUNDLE, "--format", "text"], 1, "text", 0),
    (["topo", TOPO_BUNDLE, "-f", "markdown"], 1, "text", 0),
    (["topo", TOPO_BUNDLE], 1, "text", 0),
    (["topo", "--host-root", BUNDLE, "-f", "json"], 3, "empty", 1),  # a bundle is no host root: nothing to draw
    (["topo", TOPO_BUNDLE, "-f", "svg"], 1, "text", 0),  # a picture (issue 34)
    (["topo", TOPO_BUNDLE, "-f", "png"], 3, "empty", 1),
    (["probes"], 0, "text", 0),
    (["probes", "-f", "markdown"], 0, "text", 0),
    (["probes", "-f", "yaml"], 3, "empty", 1),
    ([*ESTIMATE, "-f", "json"], 0, "json", 0),
    ([*ESTIMATE, "--format", "markdown", "--units", "iec"], 0, "text", 0),
    ([*ESTIMATE, "--preset", "bf16-adamw", "--component", "extra=2", "--fsync", "2s", "--interval", "30m",
      "--gpus", "64", "--budget", "5%", "--archive-throughput", "0.5GB/s"], 1, "text", 0),  # budget missed: 1
    ([*ESTIMATE, "--units", "metric"], 3, "empty", 1),
    (["estimate", "--params", "70B"], 3, "empty", 1),
    (["bench", "{tmp}/not-there"], 3, "empty", 1),
    (["bench", "{tmp}", "--size", "lots"], 3, "empty", 1),
    (["bench", "{tmp}", "--time-limit", "forever"], 3, "empty", 1),
    (["bench"], 3, "empty", 1),
    # rules, fleet
    (["rules", "list"], 0, "text", 0),
    (["rules", "list", "-f", "json", "--rules-dir", "{tmp}/rules"], 0, "json", 0),
    (["rules", "list", "--format", "markdown"], 0, "text", 0),
    (["rules", "show", "nvidia-fs-not-loaded"], 0, "text", 0),
    (["rules", "show", "no-such-cause"], 3, "empty", 1),
    (["rules", "show"], 3, "empty", 1),
    (["rules", "lint"], 0, "empty", 1),
    (["rules", "lint", "{tmp}/bad-rules"], 1, "text", 1),  # lint problems: 1, as linters exit (issue 25)
    (["rules", "lint", "{tmp}/not-there"], 3, "empty", 1),
    (["rules"], 3, "empty", 1),
    (["rules", "nope"], 3, "empty", 1),
    (["fleet", "merge", "{tmp}/fleet.json", "{tmp}/fleet.json", "-f", "json"], 1, "json", 1),
    (["fleet", "merge", "{tmp}/fleet.json", "-o", "json={tmp}/merged.json"], 1, "text", 0),
    (["fleet", "merge", "{tmp}/fleet.json", "--fail-on", "warning"], 1, "text", 0),
    (["fleet", "merge", "{tmp}/paste.txt"], 3, "empty", 1),
    (["fleet", "merge"], 3, "empty", 1),
    (["fleet"], 3, "empty", 1),
    # the program itself: version, help, usage errors
    (["--version"], 0, "text", 0),
    (["--help"], 0, "text", 0),
    (["check", "--help"], 0, "text", 0),
    (["analyze", "--help"], 0, "text", 0),
    (["rules", "--help"], 0, "text", 0),
    (["rules", "lint", "--help"], 0, "text", 0),
    (["fleet", "merge", "--help"], 0, "text", 0),
    ([], 3, "text", 1),
    (["no-such-command"], 3, "empty", 1),
    (["check", "--no-such-option"], 3, "empty", 1),
    (["check", "--dead", "30"], 3, "empty", 1),
    (["check", "-f", "yaml"], 3, "empty", 1),
    (["check", "--format"], 3, "empty", 1),
    (["analyze", MOUNTS, "--jobs", "two"], 3, "empty", 1),
    (["estimate", "--params", "70B", "--throughput", "1GB/s", "--gpus", "many"], 3, "empty", 1),
]
# fmt: on


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("invocations")
    (tmp / "site.yaml").write_text("checkpoint:\n  params: 70B\n  budget: 2%\n")
    (tmp / "rules").mkdir()
    (tmp / "redacted").mkdir()
    (tmp / "bad-rules").mkdir()
    (tmp / "bad-rules" / "x.yaml").write_text("causes:\n  - id: Bad_Id\n")
    (tmp / "paste.txt").write_text("gpu001.example.com 10.1.2.3 nqn.2014-08.org.nvmexpress:uuid:1\n")
    from gdsdoctor.commands import fleet

    summary = fleet.analyse_fleet([Path(BUNDLE), Path(TOPO_BUNDLE)], jobs=1)
    (tmp / "fleet.json").write_text(json.dumps(summary))
    return tmp


def _kind(stdout: str) -> str:
    if not stdout:
        return "empty"
    try:
        json.loads(stdout)
    except ValueError:
        return "text"
    return "json"


@pytest.mark.parametrize(
    ("argv", "code", "kind", "stderr_lines"), INVOCATIONS, ids=[" ".join(i[0])[:80] for i in INVOCATIONS]
)
def test_invocation_exits_and_prints_as_before(
    argv: list[str],
    code: int | None,
    kind: str,
    stderr_lines: int | None,
    scratch: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A redact run refuses to overwrite its copy: each run starts without one.
    leftovers = [*scratch.glob("paste.txt.*"), *scratch.glob("node.tar.gz*")]
    for old in [*leftovers, *(scratch / "redacted").iterdir()]:
        old.unlink()
    if argv[:2] == ["collect", "--output"]:  # the already-exists refusal needs a bundle there
        (scratch / "node.tar.gz").write_bytes(b"")
    returned = cli.run([word.replace("{tmp}", str(scratch)) for word in argv])
    out, err = capsys.readouterr()
    assert _kind(out) == kind, out[-2000:]
    assert "Traceback" not in err and "internal error" not in err, err
    if code is not None:
        assert returned == code, err
    else:
        assert returned in (0, 1, 2, 3)
        if kind == "json":
            assert json.loads(out)["summary"]["exit_code"] == returned
    if stderr_lines is not None:
        assert len(err.splitlines()) == stderr_lines, err
