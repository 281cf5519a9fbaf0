"""The integrations fit what consumes them (issue 33 item 6): Slurm's drain reason within 64
characters, a Prometheus mode of a few series a node, a textfile unit that makes its directory,
and every script calling gdsdoctor where the install docs put it."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gdsdoctor import cli
from gdsdoctor.pipeline import analyze_paths
from gdsdoctor.report.oneline import REASON_PREFIX, SLURM_REASON_MAX, cut_words, slurm_reason
from gdsdoctor.report.prometheus import render_prometheus, render_prometheus_fired
from tests.conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
import install_check

FIXTURES = REPO / "fixtures"
INTEGRATIONS = REPO / "integrations"
PROMTOOL = shutil.which("promtool")


def report(name: str) -> dict:
    return analyze_paths(sorted((FIXTURES / name / "files").iterdir())).report  # type: ignore[return-value]


# ---- Slurm drain reason ---------------------------------------------------------------------------

# Real fixtures: (fixture, the reason's whole head: top counted cause and the count of the others).
REASONS = [
    ("nvidia-fs-missing-lsmod", "gdsdoctor: nvidia-fs-not-loaded: "),  # one cause: no count
    ("cases/gdsnvfs-019-nvme-not-registered", "gdsdoctor: nvme-not-registered-with-nvidia-fs (+2): "),
    ("gds-cufile-json-misconfigured", "gdsdoctor: cufile-direct-io-size-invalid (+3)"),  # no title word fits
    ("nvmeof-hostid-clash-einval", "gdsdoctor: nvmeof-host-identity-conflict: "),  # its symptom is folded
]


@pytest.mark.parametrize(("fixture", "head"), REASONS)
def test_slurm_reason_names_the_top_cause_and_counts_the_rest(fixture: str, head: str) -> None:
    rep = report(fixture)
    reason = slurm_reason(rep)
    assert reason.startswith(head) and len(reason) <= SLURM_REASON_MAX, reason
    assert reason.isascii() and all(" " <= c <= "~" for c in reason)
    top = next(f for f in rep["findings"] if f["id"] == head.split()[1].rstrip(":"))
    whole = f"{head.rstrip(': ')}: {top['title']}"  # what it would say with room: cut between words
    if reason.endswith("..."):
        kept = reason[:-3]
        assert whole.startswith(kept) and whole[len(kept)] in " :;,-", (reason, whole)
    else:
        assert reason in (whole, head.rstrip(": "))


def test_slurm_reason_without_a_counted_cause_says_the_status() -> None:
    """A full OST of a shared filesystem drains nothing: the reason is the status, never its id."""
    reason = slurm_reason(report("capacity-one-ost-full-shared"))
    assert reason.startswith("gdsdoctor: OK: ") and len(reason) <= SLURM_REASON_MAX
    assert "capacity-target-full" not in reason


def test_a_long_site_rule_id_is_cut_between_its_words_and_keeps_the_count() -> None:
    finding = {"id": "site-" + "very-long-" * 8 + "id", "title": "t", "severity": "critical"}
    finding |= {"explained_by": [], "counted": True, "certainty": 0.9}
    other = {**finding, "id": "other"}
    reason = slurm_reason({"findings": [finding, other], "summary": {"status": "CRITICAL"}})
    assert len(reason) <= SLURM_REASON_MAX and reason.endswith("-long... (+1)"), reason
    assert reason.startswith(REASON_PREFIX + "site-very-long-")


def test_cut_words_never_cuts_inside_a_word() -> None:
    assert cut_words("gdsdoctor: a-b (+1): one two three", 30, keep=19) == "gdsdoctor: a-b (+1): one..."
    assert cut_words("gdsdoctor: a-b (+1): onetwothree", 25, keep=19) == "gdsdoctor: a-b (+1)"
    assert cut_words("short", 64) == "short"


def test_slurm_format_through_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(p) for p in sorted((FIXTURES / "gds-cufile-json-misconfigured" / "files").iterdir())]
    code = cli.run(["analyze", *files, "--no-config", "--format", "slurm"])
    out = capsys.readouterr().out
    assert code == 1 and out == "gdsdoctor: cufile-direct-io-size-invalid (+3)\n"
    code = cli.run(["analyze", "/nonexistent/gdsdoctor-input", "--format", "slurm"])  # bad input
    out = capsys.readouterr().out
    assert code == 3 and out.startswith("gdsdoctor: UNKNOWN: ") and len(out) - 1 <= SLURM_REASON_MAX


# ---- Prometheus: one series per cause that fired ----------------------------------------------------


def _series(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


@pytest.mark.parametrize(
    "fixture", ["gds-cufile-json-misconfigured", "capacity-one-ost-full-shared", "nvidia-fs-missing-lsmod"]
)
def test_prometheus_fired_writes_one_series_per_fired_cause(fixture: str) -> None:
    rep = report(fixture)
    text = render_prometheus_fired(rep, now=1700000000.5, run_s=1.25)
    series = _series(text)
    fired = {f["id"] for f in rep["findings"]} | {a["finding"]["id"] for a in rep.get("acknowledged", [])}
    states = [line for line in series if line.startswith("gdsdoctor_cause_state{")]
    assert sorted(re.search(r'id="([^"]+)"', line)[1] for line in states) == sorted(fired)  # type: ignore[index]
    assert all(line.rsplit(" ", 1)[1] in {"1", "4", "5", "6"} for line in states)  # fired, in some form
    status = {"OK": 0, "WARNING": 1, "CRITICAL": 2, "UNKNOWN": 3}[rep["summary"]["status"]]
    assert f"gdsdoctor_status {status}" in series
    assert "gdsdoctor_run_duration_seconds 1.25" in series
    assert "gdsdoctor_last_run_timestamp_seconds 1700000000.5" in series
    assert len(series) == len(fired) + 3  # no partial run here: status, causes, duration, time
    assert len(_series(render_prometheus(rep, run_s=1.25))) > 250  # the full mode stays as it was


@pytest.mark.skipif(PROMTOOL is None, reason="promtool absent (Debian package prometheus)")
def test_prometheus_fired_passes_promtool() -> None:
    text = render_prometheus_fired(report("gds-cufile-json-misconfigured"), run_s=0.5)
    done = subprocess.run(
        [PROMTOOL or "promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_alert_rules_work_on_the_fired_mode() -> None:
    """Every metric the alert rules read is one the short mode writes (the unit uses it)."""
    import yaml

    written = {
        line.split()[2]
        for line in render_prometheus_fired(report("nvidia-fs-missing-lsmod"), run_s=1).splitlines()
        if line.startswith("# TYPE")
    }
    document = yaml.safe_load((INTEGRATIONS / "prometheus" / "gdsdoctor-alerts.yaml").read_text())
    used = {
        word
        for group in document["groups"]
        for rule in group["rules"]
        for word in re.split(r"[\s{}()]", rule["expr"])
        if word.startswith("gdsdoctor_")
    }
    assert used and used <= written, used - written


def test_prometheus_fired_output_from_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prom = tmp_path / "gdsdoctor.prom"
    files = [str(p) for p in sorted((FIXTURES / "nvidia-fs-missing-lsmod" / "files").iterdir())]
    code = cli.run(["analyze", *files, "--no-config", "--output", f"prometheus-fired={prom}"])
    capsys.readouterr()
    series = _series(prom.read_text())
    assert code == 2 and "gdsdoctor_status 2" in series
    assert any(line.startswith("gdsdoctor_run_duration_seconds ") for line in series)
    assert 'gdsdoctor_cause_state{id="nvidia-fs-not-loaded",category="gds-driver"' in prom.read_text()
    code = cli.run(["analyze", str(tmp_path / "missing.txt"), "--output", f"prometheus-fired={prom}"])
    capsys.readouterr()
    assert code == 3 and "gdsdoctor_status 3" in _series(prom.read_text())  # bad input: rewritten UNKNOWN


# ---- the textfile unit, and the path every integration calls ------------------------------------


def test_the_textfile_unit_makes_its_directory(tmp_path: Path) -> None:
    """node_exporter's textfile directory may be missing: the unit's ExecStartPre, run as written
    (moved under a prefix), makes the directory its ExecStart writes into."""
    _argv, _codes, output = install_check.unit_command(tmp_path)
    assert output.name == "gdsdoctor.prom" and not output.parent.exists()
    for pre in install_check.unit_pre_commands(tmp_path):
        subprocess.run(pre, check=True, timeout=60)
    assert output.parent.is_dir()
    for pre in install_check.unit_pre_commands(tmp_path):  # an existing one: still succeeds
        subprocess.run(pre, check=True, timeout=60)
    argv = install_check.unit_command(tmp_path)[0]
    assert any(a.startswith("prometheus-fired=") for a in argv)


def _installed_program() -> str:
    """Where docs/install.md's system-wide install links the command."""
    links = [line.split()[-1] for line in install_check.readme_block() if " ln " in f" {line}"]
    return next(link for link in links if link.endswith("/bin/gdsdoctor"))


def test_every_integration_calls_the_documented_path() -> None:
    program = _installed_program()
    assert program == "/usr/local/bin/gdsdoctor"
    assert (
        f"{program}" in (REPO / "README.md").read_text() or program in (REPO / "docs/install.md").read_text()
    )
    healthcheck = (INTEGRATIONS / "slurm" / "gdsdoctor-healthcheck").read_text()
    assert f"gdsdoctor=${{GDSDOCTOR:-{program}}}" in healthcheck
    assert f'"${{GDSDOCTOR:-{program}}}"' in (INTEGRATIONS / "slurm" / "gdsdoctor.nhc").read_text()
    assert shlex.split(re.search(r"^ExecStart=(.+)$", install_check.UNIT.read_text(), re.M)[1])[0] == program  # type: ignore[index]
    plugin = json.loads((INTEGRATIONS / "node-problem-detector" / "gdsdoctor-plugin.json").read_text())
    assert {rule["path"] for rule in plugin["rules"]} == {program}
    dockerfile = (INTEGRATIONS / "node-problem-detector" / "Dockerfile").read_text()
    assert f"ln -sf /opt/gdsdoctor/bin/gdsdoctor {program}" in dockerfile
    for script in ("gdsdoctor-healthcheck", "gdsdoctor.nhc"):  # and both ask for the drain reason
        assert "--format slurm" in (INTEGRATIONS / "slurm" / script).read_text()
