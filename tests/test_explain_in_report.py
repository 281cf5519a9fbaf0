"""`explain ID INPUT`: where check/analyze put the cause over the same inputs, and whether it sets
the status — explain runs the whole analysis, so it never says "fired" where the report folds the
finding, counts it out (job scope), sets it apart (acknowledged) or finds it not applicable
(a capability the node does not use)."""

from __future__ import annotations

import json
from pathlib import Path

from gdsdoctor.commands.explain import explain_cause
from gdsdoctor.pipeline import analyze_paths

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def files(name: str) -> list[Path]:
    return sorted((FIXTURES / name / "files").iterdir())


def placed(cause: str, name: str, site: dict | None = None) -> dict:
    return json.loads(explain_cause(cause, files(name), (), site=site, fmt="json"))["in_report"]


def test_a_finding_folded_under_its_cause_says_so_and_agrees_with_the_report() -> None:
    report = analyze_paths(files("disk-sata-medium-error")).report
    ranked = [f["id"] for f in report["findings"]]
    folded = placed("blk-io-errors", "disk-sata-medium-error")
    assert (
        folded["explained_by"] == "disk-media-errors" and folded["rank"] == ranked.index("blk-io-errors") + 1
    )
    assert folded["status"] == report["summary"]["status"] == "CRITICAL" and folded["exit_code"] == 2
    text = explain_cause("blk-io-errors", files("disk-sata-medium-error"), ())
    assert "folded under disk-media-errors, which explains it" in text
    assert f"in the report: finding {folded['rank']} of {len(ranked)}, node scope: sets the status" in text


def test_a_job_scope_finding_fires_but_does_not_set_the_status() -> None:
    quota = placed("capacity-quota-exceeded", "capacity-quota-full-edquot")
    assert quota["outcome"] == "fired" and quota["scope"] == "job" and quota["sets_status"] is False
    assert quota["status"] == "OK"
    text = explain_cause("capacity-quota-exceeded", files("capacity-quota-full-edquot"), ())
    assert "job scope: does not set the status; the report's status is OK (exit 0)" in " ".join(text.split())


def test_an_acknowledged_finding_is_set_apart_as_the_report_sets_it() -> None:
    site = {"acknowledge": [{"id": "disk-media-errors", "reason": "image rebuild pending"}]}
    acknowledged = placed("disk-media-errors", "disk-sata-medium-error", site)
    assert acknowledged["rank"] is None and acknowledged["sets_status"] is False
    assert acknowledged["acknowledged"]["id"] == "disk-media-errors"
    unacknowledged = placed("disk-media-errors", "disk-sata-medium-error")
    assert unacknowledged["rank"] == 1 and unacknowledged["sets_status"] is True


def test_a_cause_of_a_capability_the_node_does_not_use_says_which_and_how_to_check_it() -> None:
    not_used = placed("nvidia-fs-not-loaded", "gds-not-set-up-gpu-node")
    assert not_used["outcome"] == "not_applicable" and not_used["status"] == "OK"
    assert not_used["not_used"].startswith("GDS is not set up on this node")
    text = " ".join(explain_cause("nvidia-fs-not-loaded", files("gds-not-set-up-gpu-node"), ()).split())
    assert "in the report: GDS is not set up on this node" in text and "`node.gds: required`" in text
    required = placed("nvidia-fs-not-loaded", "gds-not-set-up-gpu-node", {"node": {"gds": "required"}})
    assert required["outcome"] == "fired" and required["not_used"] is None and required["sets_status"]


def test_a_fired_cause_commands_are_labelled_filled_with_the_values_found() -> None:
    text = explain_cause("disk-media-errors", files("disk-sata-medium-error"), ())
    assert "commands (filled with the values found):" in text and "as written in the rule" not in text
