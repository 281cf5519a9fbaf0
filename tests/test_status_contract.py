"""The status contract (docs/rules.md, Status): intent, scope and the certainty floor decide what
sets the exit code, on the project's real outputs (fixtures/), through the site config, and in
the formats Slurm, node-problem-detector and Prometheus act on."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gdsdoctor.config import read_config
from gdsdoctor.errors import UserError
from gdsdoctor.pipeline import analyze_paths
from gdsdoctor.report.oneline import npd_result, oneline
from gdsdoctor.report.prometheus import render_prometheus
from tests.conftest import REPO, fake_binary

FIXTURES = REPO / "fixtures"
INTEGRATIONS = REPO / "integrations"


def files(name: str) -> list[Path]:
    return sorted((FIXTURES / name / "files").iterdir())


def report(name: str, site: dict | None = None, **options: object) -> dict:
    return analyze_paths(files(name), site=site, **options).report  # type: ignore[arg-type]


def outcome(rep: dict, cause: str) -> str:
    return next(c["outcome"] for c in rep["causes"] if c["id"] == cause)


# ---- intent -------------------------------------------------------------------------------------


def test_gpu_node_without_gds_is_ok_and_says_why_in_one_line() -> None:
    rep = report("gds-not-set-up-gpu-node")  # lsmod without nvidia_fs + a healthy nvidia-smi -q
    assert rep["summary"]["status"] == "OK" and outcome(rep, "nvidia-fs-not-loaded") == "not_applicable"
    assert rep["intent"]["gds"] == {"state": "unused", "by": "evidence", "evidence": []}
    (line,) = [item for item in rep["summary"]["not_used"] if item["capability"] == "gds"]
    assert line["causes"] > 10
    assert line["line"].startswith(
        f"GDS is not set up on this node (nothing shows it is used): {line['causes']} "
    )
    assert "set `node.gds: required` in the site config to check them" in line["line"]


def test_the_site_statement_wins_over_the_evidence() -> None:
    required = report("gds-not-set-up-gpu-node", site={"node": {"gds": "required"}})
    assert required["summary"]["status"] == "CRITICAL"
    assert [f["id"] for f in required["findings"]] == ["nvidia-fs-not-loaded"]
    assert required["intent"]["gds"]["by"] == "site" and required["intent"]["gds"]["state"] == "used"
    # a gdscheck is evidence of use; a site that says the node does not use GDS is believed
    unused = report("cases/nccl-1637-no-nvidia-fs", site={"node": {"gds": "unused"}})
    assert report("cases/nccl-1637-no-nvidia-fs")["intent"]["gds"]["state"] == "used"
    assert outcome(unused, "nvidia-fs-not-loaded") == "not_applicable"
    assert "the site config says it is unused" in unused["summary"]["not_used"][0]["line"]


@pytest.mark.parametrize(
    ("fixture", "evidence"),
    [
        ("nvidia-fs-missing-lsmod", "cufile.json sets properties.allow_compat_mode"),  # changed file
        ("gds-cufile-log-nvidia-fs-missing", "a cufile.log: an application used cuFile"),
    ],
)
def test_gds_installed_and_broken_still_drains(fixture: str, evidence: str) -> None:
    rep = report(fixture)
    assert rep["summary"]["status"] == "CRITICAL" and rep["findings"][0]["id"] == "nvidia-fs-not-loaded"
    shown = rep["intent"]["gds"]["evidence"]
    assert rep["intent"]["gds"]["state"] == "used" and shown[0]["text"].startswith(evidence)
    assert shown[0]["artifact"] and shown[0]["line"]  # the line that shows it


def test_a_lone_kernel_log_keeps_intent_unknown() -> None:
    rep = report("nvme-pcie-data-transfer-error")  # a dmesg only: nothing says either way
    assert {rep["intent"][c]["state"] for c in ("gds", "nvmeof")} == {"unknown"}
    assert "not_used" not in rep["summary"] and rep["summary"]["status"] == "CRITICAL"


def test_ib_node_with_ofed_and_no_nvmeof_stays_ok_but_a_connect_attempt_drains() -> None:
    quiet = report("ib-ofed-node-without-nvmeof")  # modinfo nvme_rdma (OFED's dummy) + ofed_info
    assert quiet["summary"]["status"] == "OK" and quiet["intent"]["nvmeof"]["state"] == "unused"
    assert outcome(quiet, "nvme-rdma-placeholder-module") == "not_applicable"
    tried = report("nvmeof-nvme-rdma-dummy-module")  # the same module, and the kernel's connect lines
    assert tried["intent"]["nvmeof"]["state"] == "used" and tried["summary"]["status"] == "CRITICAL"


SITE_RULE = """
causes:
  - id: site-rdma-module-mix
    title: an RDMA module mix, judged per capability
    category: nvmeof-transport
    severity: critical
    requires: [ofed]
    explanation: A signal about NVMe-oF counts only on a node that uses it; the other counts anywhere.
    signals:
      - id: anywhere
        when: "ofed"
        certainty: 0.3
        says: OFED is installed
      - id: only-with-nvmeof
        when: "ofed"
        certainty: 0.6
        says: OFED beside NVMe-oF
        uses: [nvmeof]
"""


def test_a_signal_about_a_capability_is_left_out_where_it_is_not_used(tmp_path: Path) -> None:
    (tmp_path / "site.yaml").write_text(SITE_RULE)

    def certainty(fixture: str) -> float:
        rep = analyze_paths(files(fixture), rules_dirs=[tmp_path]).report
        return next(c["certainty"] for c in rep["causes"] if c["id"] == "site-rdma-module-mix")

    assert certainty("ib-ofed-node-without-nvmeof") == 0.3  # NVMe-oF unused: only the first signal
    assert certainty("nvmeof-rdma-symbols-inbox-vs-ofed") == 0.72  # its kernel log shows nvmet_rdma


def test_lint_refuses_an_unknown_capability_or_scope(tmp_path: Path) -> None:
    from gdsdoctor.engine.rules import lint_paths

    bad = SITE_RULE.replace("uses: [nvmeof]", "uses: [gpu]").replace(
        "severity: critical", "severity: critical\n    scope: cluster"
    )
    (tmp_path / "bad.yaml").write_text(bad)
    _, issues = lint_paths([tmp_path])
    messages = " ".join(i.message for i in issues)
    assert "uses" in messages and "scope" in messages


# ---- scope --------------------------------------------------------------------------------------


def test_a_full_ost_is_shared_listed_apart_and_counted_only_when_the_site_says() -> None:
    rep = report("capacity-one-ost-full-shared")
    (finding,) = rep["findings"]
    assert finding["scope"] == "shared" and finding["counted"] is False
    assert rep["summary"]["status"] == "OK" and rep["summary"]["counts"]["shared"] == 1
    assert "1 shared finding(s) not counted (capacity-target-full)" in rep["summary"]["reason"]
    raised = report("capacity-one-ost-full-shared", site={"status": {"count_scopes": ["node", "shared"]}})
    assert raised["summary"]["status"] == "CRITICAL" and raised["findings"][0]["counted"] is True


def test_a_symptom_takes_its_causes_scope() -> None:
    rep = report("capacity-quota-full-edquot")  # a user's quota explains the job's EDQUOT
    # the EDQUOT names a tool's file with no save in sight: not the checkpoint's (issue 31 item 9);
    # the quota cites it
    assert {f["id"]: f["scope"] for f in rep["findings"]} == {"capacity-quota-exceeded": "job"}
    assert rep["summary"]["status"] == "OK"


def test_an_oom_kill_outside_a_save_is_the_jobs_history() -> None:
    rep = report("ckpt-oom-killed-deepspeed")
    (finding,) = rep["findings"]
    assert (finding["id"], finding["scope"], finding["severity"]) == (
        "checkpoint-save-oom-killed",
        "job",
        "info",
    )
    counted = report("ckpt-oom-killed-deepspeed", site={"status": {"count_scopes": ["node", "job"]}})
    assert counted["summary"]["status"] == "OK"  # counted, but outside a save it is only info


def test_the_nodes_own_nvme_failing_still_drains() -> None:
    rep = report("nvme-pcie-data-transfer-error")
    assert rep["summary"]["status"] == "CRITICAL" and all(f["scope"] == "node" for f in rep["findings"])


# ---- certainty floor ----------------------------------------------------------------------------


def test_a_weak_critical_finding_is_a_candidate_that_says_what_would_confirm_it() -> None:
    rep = report("cases/dali-4771-nvfs-driver-init-error-5033")  # 5033 in an application's output
    candidates = [f for f in rep["findings"] if f["candidate"]]
    assert candidates and all(f["severity"] == "critical" and f["certainty"] < 0.5 for f in candidates)
    assert rep["summary"]["status"] == "WARNING" and rep["summary"]["counts"]["candidates"] == len(candidates)
    first = candidates[0]
    assert first["confirm"] and any("lsmod" in item for item in first["confirm"])
    assert f"to confirm: {first['confirm'][0]}" in rep["summary"]["reason"]
    assert oneline(rep).startswith(f"{first['id']} CANDIDATE ") or "CANDIDATE" not in oneline(rep)


def test_findings_at_or_above_the_floor_are_not_candidates() -> None:
    rep = report("nvme-pcie-data-transfer-error")
    assert all(not f["candidate"] for f in rep["findings"] if f["certainty"] >= 0.5)


# ---- site config --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("node: {gds: maybe}\n", "node.gds 'maybe': expected one of required, optional, unused"),
        ("node: {gpu: required}\n", "unknown key node.gpu"),
        ("status: {count_scopes: [shared]}\n", "a list of node, shared, job that holds node"),
        ("status: {count_scope: [node]}\n", "did you mean count_scopes?"),
    ],
)
def test_site_config_statements_are_checked(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "c.yaml").write_text(text)
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace("?", r"\?")):
        read_config(tmp_path / "c.yaml")


def test_site_config_reaches_analyze_through_the_cli(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("node:\n  gds: required\n")
    argv = [sys.executable, "-m", "gdsdoctor", "analyze", *map(str, files("gds-not-set-up-gpu-node"))]
    plain = subprocess.run([*argv, "--no-config", "-q"], capture_output=True, text=True, timeout=120)
    stated = subprocess.run(
        [*argv, "--site-config", str(config), "-q"], capture_output=True, text=True, timeout=120
    )
    assert (plain.returncode, stated.returncode) == (0, 2), plain.stderr + stated.stderr


# ---- the integrations ---------------------------------------------------------------------------


def test_prometheus_writes_what_the_alert_rules_test_for() -> None:
    """integrations/prometheus/gdsdoctor-alerts.test.yaml feeds the alerts 6 for a shared finding
    and 5 for a candidate: the values gdsdoctor writes for these real cases."""
    shared = render_prometheus(report("capacity-one-ost-full-shared"), now=0).splitlines()
    assert (
        'gdsdoctor_cause_state{id="capacity-target-full",category="capacity",severity="critical",scope="shared"} 6'
        in shared
    )
    assert "gdsdoctor_status 0" in shared and 'gdsdoctor_findings_not_counted{scope="shared"} 1' in shared
    weak = render_prometheus(report("cases/dali-4771-nvfs-driver-init-error-5033"), now=0).splitlines()
    assert (
        'gdsdoctor_cause_state{id="nvidia-fs-not-loaded",category="gds-driver",severity="critical",scope="node"} 5'
        in weak
    )
    unused = render_prometheus(report("gds-not-set-up-gpu-node"), now=0).splitlines()
    assert 'gdsdoctor_intent{capability="gds",state="unused",by="evidence"} 1' in unused
    assert (
        'gdsdoctor_cause_state{id="nvidia-fs-not-loaded",category="gds-driver",severity="critical",scope="node"} 3'
        in unused
    )


@pytest.mark.parametrize(
    ("fixture", "npd_code"),
    [
        ("capacity-one-ost-full-shared", 0),
        ("gds-not-set-up-gpu-node", 0),
        ("cases/dali-4771-nvfs-driver-init-error-5033", 0),  # a candidate: WARNING, not critical
        ("nvidia-fs-missing-lsmod", 1),
    ],
)
def test_npd_problem_condition_follows_the_contract(fixture: str, npd_code: int) -> None:
    from gdsdoctor.report.build import apply_fail_on

    code, message = npd_result(apply_fail_on(report(fixture), "critical"))  # the permanent rule's --fail-on
    assert code == npd_code, message


def _healthcheck(tmp_path: Path, fixture: str) -> str | None:
    """Run the Slurm HealthCheckProgram with the real gdsdoctor analysing a fixture (a wrapper
    turns its `check` into `analyze FILES`); the drain reason, or None when it did not drain."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    bindir = tmp_path / "bin"
    shown = " ".join(f"'{f}'" for f in files(fixture))
    program = fake_binary(
        bindir, "gdsdoctor", f'shift; exec {sys.executable} -m gdsdoctor analyze {shown} --no-config "$@"'
    )
    fake_binary(bindir, "scontrol", f'for a in "$@"; do printf "%s\\n" "$a"; done > {tmp_path}/argv')
    fake_binary(bindir, "logger", "true")
    env = {
        **os.environ,
        "PATH": f"{bindir}:{os.environ['PATH']}",
        "GDSDOCTOR": str(program),
        "SLURMD_NODENAME": "gpu001",
    }
    argv = tmp_path / "argv"
    argv.unlink(missing_ok=True)
    subprocess.run(
        [bash, str(INTEGRATIONS / "slurm" / "gdsdoctor-healthcheck")], env=env, timeout=120, check=True
    )
    return argv.read_text().splitlines()[-1] if argv.exists() else None


def test_slurm_drains_on_the_nodes_own_fault_only(tmp_path: Path) -> None:
    assert _healthcheck(tmp_path, "capacity-one-ost-full-shared") is None  # one full OST drains nothing
    assert _healthcheck(tmp_path, "ib-ofed-node-without-nvmeof") is None
    reason = _healthcheck(tmp_path, "nvidia-fs-missing-lsmod")
    assert reason is not None and reason.startswith("Reason=gdsdoctor: nvidia-fs-not-loaded: ")
    assert len(reason) <= len("Reason=") + 64  # the drain reason's limit (report/oneline.py)


def test_report_json_keeps_the_contract_fields() -> None:
    rep = report("capacity-full-ost-enospc")
    data = json.loads(json.dumps(rep))
    assert {"scope", "counted", "candidate"} <= set(data["findings"][0])
    assert {c["id"]: c.get("scope") for c in data["causes"]}["capacity-target-full"] == "shared"


def test_the_python_api_takes_the_site_statements_checked() -> None:
    from gdsdoctor import api as gd

    paths = files("gds-not-set-up-gpu-node")
    assert gd.analyze(paths).status == "OK"
    assert gd.analyze(paths, site={"node": {"gds": "required"}}).status == "CRITICAL"
    with pytest.raises(UserError, match=r"node\.gds 'yes'"):
        gd.analyze(paths, site={"node": {"gds": "yes"}})


def test_a_nofail_share_that_is_down_is_a_warning_of_its_server_not_a_drain() -> None:
    rep = report("fstab-nofail-nfs-datasets-down")
    (finding,) = rep["findings"]
    assert (finding["severity"], finding["scope"], rep["summary"]["status"]) == ("warning", "shared", "OK")
    fstab = REPO / "tests" / "data" / "fstab" / "fstab-nfs-nofail-netdev.domus-docs.txt"
    with_disk = analyze_paths([fstab, files("fstab-nofail-nfs-datasets-down")[1]]).report
    assert with_disk["summary"]["status"] == "WARNING"  # the local nofail disk: the node's
    assert report("fstab-tier-barrier0-not-mounted")["summary"]["status"] == "CRITICAL"
