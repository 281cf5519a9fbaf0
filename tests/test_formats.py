"""Monitoring formats (JUnit, Prometheus textfile, one line), checked with the real consumers'
validators where Debian has them (promtool; the Jenkins junit-10.xsd), plus --output,
--fail-on, --npd and the integrations in integrations/."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import gdsdoctor.api as gd
from gdsdoctor.report.files import write_atomic
from gdsdoctor.report.junit import render_junit, xml_text
from gdsdoctor.report.oneline import NPD_OUTPUT_MAX, ONELINE_MAX, npd_result, render_oneline
from gdsdoctor.report.prometheus import label_value, render_prometheus
from gdsdoctor.report.verdicts import verdicts
from tests.conftest import REPO, fake_binary, validate_report, write_tree
from tests.test_cli import gdsdoctor

XSD = REPO / "tests" / "data" / "junit" / "junit-10.xsd"
INTEGRATIONS = REPO / "integrations"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool absent (Debian package prometheus)")

HOSTILE = "ctl\x01\x1b[31m <b>&amp; \"q\" 'a' ]]> ünï\u2028"
# /proc/mounts with a mount point holding control characters and XML/shell metacharacters.
MOUNTS = (
    "/dev/nvme1n1 /mnt/ckpt ext4 rw,noatime,data=journal 0 0\n"
    "/dev/nvme2n1 /mnt/x\\033[31m]]>&<\"'\\001 ext4 rw 0 0\n"
    "/dev/nvme3n1 /scratch xfs rw 0 0\n"
)
SITE_RULES = f"""
description: test causes in every state
causes:
  - id: site-info-xfs
    title: {json.dumps("XFS scratch present (info) " + HOSTILE)}
    category: environment
    severity: info
    requires: [mounts]
    explanation: Fires whenever an XFS filesystem is mounted, as an info finding.
    signals:
      - id: xfs
        when: "mounts.mounts[?fstype=='xfs']"
        certainty: 0.9
        says: "xfs at {{where}}"
        evidence: "mounts.mounts[?fstype=='xfs']"
    vars:
      where: "mounts.mounts[?fstype=='xfs'].mountpoint"
  - id: site-critical-ext4
    title: "critical <title> & \\"quotes\\" ]]> ünï"
    category: filesystem
    severity: critical
    requires: [mounts]
    explanation: "Fires on ext4 mounts; the says line carries the hostile mount point."
    signals:
      - id: ext4
        when: "mounts.mounts[?fstype=='ext4']"
        certainty: 0.95
        says: "ext4 at {{where}}"
        evidence: "mounts.mounts[?fstype=='ext4']"
    vars:
      where: "mounts.mounts[?fstype=='ext4'].mountpoint"
    fix: "Do something about it."
  - id: site-never-applies
    title: never applies here
    category: environment
    severity: warning
    applies_when: "`false`"
    requires: [mounts]
    explanation: Not applicable on any host, to test the not-applicable state.
    signals:
      - id: always
        when: "`true`"
        certainty: 0.9
        says: always
  - id: site-clear-zfs
    title: never fires here
    category: environment
    severity: warning
    requires: [mounts]
    explanation: Evaluated and clear on this host (no zfs), to test the clear state.
    signals:
      - id: zfs
        when: "mounts.mounts[?fstype=='zfs']"
        certainty: 0.9
        says: zfs is mounted
  - id: site-needs-modules
    title: needs the module list
    category: gds-driver
    severity: warning
    requires: [modules]
    explanation: Inconclusive without the module list, to test the inconclusive state.
    signals:
      - id: any
        when: "modules.names"
        certainty: 0.9
        says: modules were listed
"""


@pytest.fixture
def site_rules(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "site-rules", {"site.yaml": SITE_RULES})


@pytest.fixture
def report(site_rules: Path) -> gd.Report:
    return gd.analyze_texts({"mounts.txt": MOUNTS}, rules_dirs=[site_rules])


def _states(report: gd.Report) -> dict[str, str]:
    return {v.id: v.outcome for v in verdicts(report.data)}


def test_every_cause_state_is_in_the_report(report: gd.Report) -> None:
    validate_report(report.data)
    states = _states(report)
    assert states["site-info-xfs"] == "fired"
    assert states["site-critical-ext4"] == "fired"
    assert states["site-never-applies"] == "not_applicable"
    assert states["site-needs-modules"] == "inconclusive"
    assert states["site-clear-zfs"] == "clear"
    assert (
        len(states)
        == len(report.data["causes"])
        == sum(
            report.data["summary"]["counts"][o] for o in ("fired", "clear", "inconclusive", "not_applicable")
        )
    )


# ---- JUnit -----------------------------------------------------------------------------------


def _junit_schema():  # type: ignore[no-untyped-def]
    xmlschema = pytest.importorskip("xmlschema", reason="xmlschema (pip install '.[test]')")
    return xmlschema.XMLSchema(str(XSD))


def test_junit_validates_and_counts_add_up(report: gd.Report) -> None:
    xml = render_junit(report.data)
    _junit_schema().validate(xml)
    suite = ET.fromstring(xml).find("testsuite")
    assert suite is not None
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert len(cases) == int(suite.get("tests", "-1")) == len(report.data["causes"])
    assert int(suite.get("failures", "-1")) == sum(1 for c in cases.values() if c.find("failure") is not None)
    assert int(suite.get("skipped", "-1")) == sum(1 for c in cases.values() if c.find("skipped") is not None)
    assert suite.get("errors") == "0"
    failure = cases["site-critical-ext4"].find("failure")
    assert failure is not None and failure.get("type") == "critical"
    assert failure.get("message", "").startswith('critical <title> & "quotes" ]]> ünï (certainty 0.95)')
    assert "mounts.txt:1: /dev/nvme1n1 /mnt/ckpt ext4" in (failure.text or "")
    assert "\\x1b[31m" in (failure.text or "")  # the escape character made visible, not raw
    info = cases["site-info-xfs"]
    assert info.find("failure") is None and "xfs at /scratch" in (info.findtext("system-out") or "")
    skipped = cases["site-needs-modules"].find("skipped")
    assert skipped is not None and "modules (not_collected)" in skipped.get("message", "")
    assert "modules (not_collected): run `cat /proc/modules` or `lsmod`" in skipped.get("message", "")
    assert cases["site-never-applies"].find("skipped").get("message") == "not applicable on this host"  # type: ignore[union-attr]
    assert list(cases["site-clear-zfs"]) == []  # clear: passed


def test_junit_survives_characters_xml_cannot_carry(report: gd.Report) -> None:
    data = json.loads(json.dumps(report.data))
    data["host"]["hostname"] = "node\x00\x0c\ud800\ufffe"
    data["findings"][0]["evidence"].append(
        {"text": HOSTILE + "\x00\x0b\udfff", "artifact": None, "line": None}
    )
    xml = render_junit(data)
    _junit_schema().validate(xml)
    suite = ET.fromstring(xml).find("testsuite")
    assert suite is not None and suite.get("hostname") == "node\\x00\\x0c\\ud800\\ufffe"
    assert xml_text("a\tb\nc\rd\x7f") == "a\tb\nc\\x0dd\\x7f"


# ---- Prometheus ------------------------------------------------------------------------------


def _promtool_check(text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PROMTOOL or "promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60
    )


def test_prometheus_values(report: gd.Report) -> None:
    text = render_prometheus(report.data, now=1700000000.5)
    lines = text.splitlines()
    assert "gdsdoctor_status 2" in lines
    assert (
        'gdsdoctor_cause_state{id="site-critical-ext4",category="filesystem",severity="critical",scope="node"} 1'
        in lines
    )
    assert (
        'gdsdoctor_cause_state{id="site-needs-modules",category="gds-driver",severity="warning",scope="node"} 2'
        in lines
    )
    assert (
        'gdsdoctor_cause_state{id="site-never-applies",category="environment",severity="warning",scope="node"} 3'
        in lines
    )
    assert (
        'gdsdoctor_cause_certainty{id="site-critical-ext4",category="filesystem",severity="critical",scope="node"} 0.95'
        in lines
    )
    assert not any(line.startswith('gdsdoctor_cause_certainty{id="site-needs-modules"') for line in lines)
    assert 'gdsdoctor_findings{severity="critical"} 1' in lines
    inconclusive = len(report.data["inconclusive"])
    assert inconclusive >= 2  # site-needs-modules, nvidia-fs-not-loaded and the built-in causes lacking data
    assert f"gdsdoctor_inconclusive_causes {inconclusive}" in lines
    assert 'gdsdoctor_probe_ok{probe="mounts",status="ok"} 1' in lines
    assert 'gdsdoctor_probe_ok{probe="modules",status="not_collected"} 0' in lines
    assert "gdsdoctor_last_run_timestamp_seconds 1700000000.5" in lines
    for name in {line.split("{")[0].split(" ")[0] for line in lines if not line.startswith("#")}:
        assert f"# TYPE {name} gauge" in lines and any(line.startswith(f"# HELP {name} ") for line in lines)


def test_label_values_are_escaped() -> None:
    assert label_value('a\\b"c\nd') == 'a\\\\b\\"c\\nd'


@needs_promtool
def test_prometheus_textfile_passes_promtool(report: gd.Report) -> None:
    result = _promtool_check(render_prometheus(report.data))
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_prometheus_escaping_passes_promtool(report: gd.Report) -> None:
    data = json.loads(json.dumps(report.data))
    data["causes"][0]["id"] = 'bad"id\\with\nnewline'
    data["probes"][0]["name"] = "ünï\\"
    text = render_prometheus(data)
    assert 'id="bad\\"id\\\\with\\nnewline"' in text
    result = _promtool_check(text)
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_alert_rules_pass_promtool() -> None:
    # the rules are valid, then their unit tests (alerts fire on the sample series) pass
    for verb, file in (("check", "gdsdoctor-alerts.yaml"), ("test", "gdsdoctor-alerts.test.yaml")):
        done = subprocess.run(
            [PROMTOOL or "", verb, "rules", file],
            cwd=INTEGRATIONS / "prometheus",
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_alert_rules_use_only_metrics_we_write(report: gd.Report) -> None:
    import yaml

    written = {
        line.split()[2] for line in render_prometheus(report.data).splitlines() if line.startswith("# TYPE")
    }
    document = yaml.safe_load((INTEGRATIONS / "prometheus" / "gdsdoctor-alerts.yaml").read_text())
    used = {
        word
        for group in document["groups"]
        for rule in group["rules"]
        for word in rule["expr"].replace("{", " ").replace("(", " ").split()
        if word.startswith("gdsdoctor_")
    }
    assert used and used <= written


# ---- one line, NPD ----------------------------------------------------------------------------


def test_oneline_starts_with_the_top_cause_and_is_plain_ascii(report: gd.Report) -> None:
    line = render_oneline(report.data)
    assert line.endswith("\n") and "\n" not in line[:-1]
    assert line.startswith("site-critical-ext4 CRITICAL 0.95: critical <title>")
    assert line.isascii() and all(" " <= c <= "~" for c in line[:-1])
    assert len(line) - 1 <= ONELINE_MAX
    long = json.loads(json.dumps(report.data))
    long["findings"][0]["title"] = "x" * 500
    cut = render_oneline(long).rstrip("\n")
    assert len(cut) == ONELINE_MAX and cut.endswith("...")


def test_oneline_spells_our_punctuation_in_ascii() -> None:
    """A drain reason "not recognised ? `gdsdoctor probes` lists …" read as a question."""
    from gdsdoctor.report.oneline import ascii_line

    assert ascii_line("not recognised — `gdsdoctor probes` lists what is read …") == (
        "not recognised - `gdsdoctor probes` lists what is read ..."
    )
    assert ascii_line("Mär → déc. ‘x’ “y” 4月") == "Mar -> dec. 'x' \"y\" 4?"


def test_oneline_without_findings_says_the_status() -> None:
    report = gd.analyze_texts(["/dev/sda1 /data xfs rw 0 0\n"])
    assert render_oneline(report.data).startswith(f"{report.status}: ")


def test_npd_codes_and_length(report: gd.Report) -> None:
    code, message = npd_result(report.data)
    assert code == 1 and len(message) <= NPD_OUTPUT_MAX and message.startswith("site-critical-ext4")
    unknown = gd.analyze_texts({"junk": "nothing recognisable here\n"})
    assert unknown.status == "UNKNOWN" and npd_result(unknown.data)[0] == 2
    ok = gd.analyze_texts(["/dev/sda1 /data xfs rw 0 0\n"])
    assert npd_result(ok.data)[0] == (0 if ok.exit_code == 0 else 1)


# ---- atomic files -------------------------------------------------------------------------------


def test_write_atomic_replaces_and_leaves_nothing_behind(tmp_path: Path) -> None:
    target = tmp_path / "gdsdoctor.prom"
    target.write_text("old\n")
    write_atomic(target, "new\n")
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gdsdoctor.prom"]
    with pytest.raises(OSError):
        write_atomic(tmp_path / "no-such-dir" / "x.prom", "x")


# ---- CLI: --output, --fail-on, --npd ----------------------------------------------------------


@pytest.fixture
def mounts_file(tmp_path: Path) -> Path:
    return (
        write_tree(tmp_path, {"mounts.txt": "/dev/nvme1n1 /mnt/ckpt ext4 rw,noatime,data=journal 0 0\n"})
        / "mounts.txt"
    )


def test_several_outputs_from_one_run(tmp_path: Path, mounts_file: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    args = [
        f"{fmt}={out / name}"
        for fmt, name in (
            ("json", "r.json"),
            ("junit", "r.xml"),
            ("prometheus", "r.prom"),
            ("oneline", "r.txt"),
            ("markdown", "r.md"),
        )
    ]
    result = gdsdoctor(
        "analyze", str(mounts_file), "--path", "/mnt/ckpt", *(a for arg in args for a in ("--output", arg))
    )
    assert result.returncode == 1 and result.stdout == ""
    assert (
        result.stderr.strip().splitlines()[-1]
        == "gdsdoctor: exit 1 (WARNING): 1 warning(s), first: ext4-data-journal"
    )
    assert sorted(p.name for p in out.iterdir()) == ["r.json", "r.md", "r.prom", "r.txt", "r.xml"]
    validate_report(json.loads((out / "r.json").read_text()))
    assert (out / "r.txt").read_text().startswith("ext4-data-journal WARNING")
    assert "gdsdoctor_status 1" in (out / "r.prom").read_text()


def test_format_and_outputs_together(tmp_path: Path, mounts_file: Path) -> None:
    result = gdsdoctor(
        "analyze",
        str(mounts_file),
        "--path",
        "/mnt/ckpt",
        "-f",
        "oneline",
        "-o",
        f"junit={tmp_path / 'r.xml'}",
    )
    assert result.stdout.startswith("ext4-data-journal WARNING") and (tmp_path / "r.xml").is_file()
    assert result.stderr.startswith("gdsdoctor: exit 1 (WARNING)")


def test_fail_on(mounts_file: Path) -> None:
    base = ("analyze", str(mounts_file), "--path", "/mnt/ckpt")
    critical = gdsdoctor(*base, "--fail-on", "critical")
    assert critical.returncode == 0
    last = " ".join(critical.stdout[critical.stdout.rindex("Status: ") :].split())  # rich wraps at 100
    assert last.startswith("Status: WARNING (exit 0)") and last.endswith(
        "warnings do not fail with --fail-on critical"
    )
    warning = gdsdoctor(*base, "--fail-on", "warning", "-f", "json")
    assert warning.returncode == 1 and json.loads(warning.stdout)["summary"]["fail_on"] == "warning"
    assert warning.stderr.strip() == "gdsdoctor: exit 1 (WARNING): 1 warning(s), first: ext4-data-journal"


def test_npd_mode(mounts_file: Path, tmp_path: Path) -> None:
    problem = gdsdoctor("analyze", str(mounts_file), "--path", "/mnt/ckpt", "--npd")
    assert problem.returncode == 1 and problem.stdout.startswith("ext4-data-journal")
    assert len(problem.stdout.rstrip("\n")) <= NPD_OUTPUT_MAX and problem.stdout.count("\n") == 1
    tolerated = gdsdoctor(
        "analyze", str(mounts_file), "--path", "/mnt/ckpt", "--npd", "--fail-on", "critical"
    )
    assert tolerated.returncode == 0
    (tmp_path / "junk.txt").write_text("nothing recognisable\n")
    unknown = gdsdoctor("analyze", str(tmp_path / "junk.txt"), "--npd")
    assert unknown.returncode == 2


@pytest.mark.parametrize("bad", ["prometheus", "yaml=x", "json="])
def test_bad_output_option_is_a_usage_error(mounts_file: Path, bad: str) -> None:
    result = gdsdoctor("analyze", str(mounts_file), "--output", bad)
    assert (
        result.returncode == 3
        and len(result.stderr.strip().splitlines()) == 1
        and "FORMAT=PATH" in result.stderr
    )


# ---- integrations --------------------------------------------------------------------------------


def test_npd_plugin_config_is_consistent() -> None:
    config = json.loads((INTEGRATIONS / "node-problem-detector" / "gdsdoctor-plugin.json").read_text())
    assert config["plugin"] == "custom" and config["pluginConfig"]["max_output_length"] == NPD_OUTPUT_MAX
    conditions = {c["type"] for c in config["conditions"]}
    for rule in config["rules"]:
        assert rule["args"][:2] == ["check", "--npd"]
        assert rule.get("condition", next(iter(conditions))) in conditions
        deadline = float(rule["args"][rule["args"].index("--deadline") + 1])
        assert deadline < float(rule["timeout"].rstrip("m")) * 60  # gdsdoctor stops before NPD kills it


@pytest.mark.parametrize("script", ["gdsdoctor-healthcheck"])
def test_slurm_healthcheck_drains_with_the_reason_as_one_argument(tmp_path: Path, script: str) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    bindir = tmp_path / "bin"
    reason = """nvidia-fs-not-loaded CRITICAL 0.70: it's "quoted" $(touch pwned) `id` ; rm -rf x"""
    program = fake_binary(bindir, "gdsdoctor", f"printf '%s\\n' {sh_quote(reason)}\nexit 2")
    fake_binary(bindir, "scontrol", f'for a in "$@"; do printf "%s\\n" "$a"; done > {tmp_path}/argv')
    fake_binary(bindir, "logger", f'echo "$@" > {tmp_path}/logged')
    env = {
        **os.environ,
        "PATH": f"{bindir}:{os.environ['PATH']}",
        "GDSDOCTOR": str(program),
        "SLURMD_NODENAME": "gpu 001",
    }
    run = subprocess.run(
        [bash, str(INTEGRATIONS / "slurm" / script)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "argv").read_text().splitlines() == [
        "update",
        "NodeName=gpu 001",
        "State=DRAIN",
        f"Reason={reason}",
    ]
    assert not (tmp_path / "pwned").exists()
    fake_binary(bindir, "gdsdoctor", "echo 'UNKNOWN: nothing could be read'; exit 3")
    (tmp_path / "argv").unlink()
    subprocess.run(
        [bash, str(INTEGRATIONS / "slurm" / script)], env=env, cwd=tmp_path, timeout=60, check=True
    )
    assert not (tmp_path / "argv").exists() and "not draining gpu 001" in (tmp_path / "logged").read_text()


def test_nhc_check_is_valid_bash() -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    for script in ("gdsdoctor.nhc", "gdsdoctor-healthcheck"):
        subprocess.run([bash, "-n", str(INTEGRATIONS / "slurm" / script)], check=True, timeout=30)


def sh_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)
