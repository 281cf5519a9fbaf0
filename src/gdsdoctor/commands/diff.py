"""``gdsdoctor diff BEFORE AFTER``: what a change on one node fixed, what it broke, and which
facts moved.

Each side is any capture ``analyze`` reads (a gdsdoctor bundle, a sos report, an
nvidia-bug-report log, a folder of pasted outputs, one paste), analysed on its own with the same
rules, job and site config. Both must be of one node: two host names that differ are refused
(one line, exit 3); a capture that names no host (a paste) is taken as the other's.

The comparison, by cause id:

- *resolved*: fired in BEFORE, not in AFTER (the AFTER finding may be in its history: recovered);
- *new*: fired in AFTER only;
- *changed*: fired in both, with another severity, scope count or candidacy;
- *unchanged*: fired in both alike;
- the causes that became inconclusive (AFTER lacks what judged them) or were judged again;
- the facts that changed (``diff_facts``), side by side.

Status and exit code (docs/usage.md "diff"): the AFTER capture's status and exit code, raised to
1 (WARNING) when the change made anything *worse* and AFTER is OK. Worse, under the status
contract (docs/rules.md "Status"): a counted finding that appears (new, or counted only now; an
info finding too: it does not set a status, but the change brought it), a counted finding whose
severity rose (or a critical that is no longer a candidate), or a status that rose (OK < WARNING
< UNKNOWN < CRITICAL). A finding of shared or job scope that appears is listed, and makes
nothing worse unless the site counts its scope. History (what recovered) is never a finding.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gdsdoctor import DEFAULT_DEADLINE_S, __version__
from gdsdoctor.commands import diff_facts
from gdsdoctor.errors import UserError
from gdsdoctor.pipeline import Analysis, analyze_paths

DIFF_KIND = "gdsdoctor.diff"
DIFF_SCHEMA_VERSION = "1.0"
DIFF_FORMATS = ("text", "json", "markdown", "html")
EXIT_CODES = {"OK": 0, "WARNING": 1, "CRITICAL": 2, "UNKNOWN": 3}
STATUS_ORDER = ("OK", "WARNING", "UNKNOWN", "CRITICAL")  # later is worse (the fleet's order)
SEVERITY_RANK = {"info": 0, "warning": 1, "critical": 2}
_FINDING_KEYS = ("id", "title", "severity", "scope", "counted", "candidate")


def diff_paths(
    before: Path,
    after: Path,
    target_path: str | None = None,
    rules_dirs: Sequence[Path] = (),
    job: dict[str, Any] | None = None,
    deadline_s: float = DEFAULT_DEADLINE_S,
    acknowledgements: Sequence[dict[str, Any]] = (),
    since: str | None = None,
    site: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Analyse both captures and compare them (the diff document, docs/usage.md "diff")."""
    for path in (before, after):
        if not path.exists():
            raise UserError(f"{path}: no such file or directory")
    sides = [
        analyze_paths([path], target_path, rules_dirs, job, deadline_s, acknowledgements, since, site)
        for path in (before, after)
    ]
    return compare(sides[0], sides[1], str(before), str(after))


def compare(before: Analysis, after: Analysis, before_label: str, after_label: str) -> dict[str, Any]:
    """The diff document of two analyses of one node; raises UserError for two hosts."""
    host = _one_host(before.report, after.report, before_label, after_label)
    findings = _findings(
        before.report["findings"],
        after.report["findings"],
        after.report.get("history"),
        {i["id"] for i in after.report.get("inconclusive") or []},
    )
    worse = _worse(before.report, after.report, findings)
    unsettled = [f"{f['id']} ({f['severity']})" for f in findings["unjudged"] if _weight(f) > 0]
    status = _status(after.report["summary"]["status"], worse, unsettled)
    return {
        "kind": DIFF_KIND,
        "schema_version": DIFF_SCHEMA_VERSION,
        "tool": {"name": "gdsdoctor", "version": __version__},
        "host": host,
        "before": _side(before.report, before_label),
        "after": _side(after.report, after_label),
        "findings": findings,
        "inconclusive": _inconclusive(before.report, after.report),
        "facts": diff_facts.changed(before.facts, after.facts),
        "sections": diff_facts.sections_read_once(before.facts, after.facts),
        "notes": _notes(before.report, after.report),
        "summary": {
            "status": status,
            "exit_code": EXIT_CODES[status],
            "worse": bool(worse),
            "worse_because": worse,
            "not_judged_after": unsettled,
        },
    }


def _status(after: str, worse: list[str], unsettled: list[str]) -> str:
    """AFTER's status, unless AFTER is OK: then WARNING when the change made something worse,
    else UNKNOWN when AFTER cannot judge a counted finding of BEFORE (its capture lacks the
    data): a fix is not shown by a capture that cannot see the fault."""
    if after != "OK":
        return after
    if worse:
        return "WARNING"
    return "UNKNOWN" if unsettled else "OK"


def _one_host(before: dict[str, Any], after: dict[str, Any], before_label: str, after_label: str) -> str:
    names = [str(report["host"].get("hostname") or "") for report in (before, after)]
    if all(names) and names[0].lower() != names[1].lower():
        raise UserError(
            f"{before_label} is host {names[0]} and {after_label} is host {names[1]}: "
            "diff compares two captures of one node (analyze them both for a fleet summary)"
        )
    return names[0] or names[1]


def _side(report: dict[str, Any], label: str) -> dict[str, Any]:
    summary = report["summary"]
    source = report.get("source") or {}
    return {
        "input": label,
        "kind": source.get("kind"),
        "created": captured_at(report),
        "status": summary["status"],
        "exit_code": summary["exit_code"],
        "reason": summary["reason"],
    }


def captured_at(report: dict[str, Any]) -> str | None:
    """When the capture was taken (a sos report's time, else the capture's clock: a bundle's or
    a live check's), as UTC ISO 8601; None for a paste that does not say."""
    host = report.get("host") or {}
    if isinstance(host.get("created"), str) and host["created"]:
        return str(host["created"])
    try:
        epoch = float(host["captured_at_epoch"])
        # to the millisecond: two captures of one node a second apart must still be ordered
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch)) + f".{int(epoch % 1 * 1000):03d}Z"
    except (KeyError, TypeError, ValueError, OverflowError):
        return None


def _brief(finding: dict[str, Any]) -> dict[str, Any]:
    return {key: finding.get(key) for key in _FINDING_KEYS}


def _findings(
    before: list[dict[str, Any]],
    after: list[dict[str, Any]],
    history: list[dict[str, Any]] | None,
    unjudged_after: set[str],
) -> dict[str, list[dict[str, Any]]]:
    """Each finding of either side in one bucket. One that AFTER could not judge (its capture
    lacks what decides it) is not resolved: blindness is not health."""
    old = {f["id"]: _brief(f) for f in before}
    new = {f["id"]: _brief(f) for f in after}
    recovered = {h.get("id") for h in history or [] if isinstance(h, dict)}
    gone = [key for key in old if key not in new]
    changed = [
        {"id": key, "title": new[key]["title"], "before": old[key], "after": new[key]}
        for key in new
        if key in old and _state(old[key]) != _state(new[key])
    ]
    return {
        "resolved": [
            {**old[key], "in_history": key in recovered} for key in gone if key not in unjudged_after
        ],
        "unjudged": [old[key] for key in gone if key in unjudged_after],
        "new": [new[key] for key in new if key not in old],
        "changed": changed,
        "unchanged": [new[key] for key in new if key in old and _state(old[key]) == _state(new[key])],
    }


def _state(finding: dict[str, Any]) -> tuple[Any, ...]:
    return (finding["severity"], finding["counted"], finding["candidate"], finding["scope"])


def _weight(finding: dict[str, Any] | None) -> int:
    """How much a finding weighs on the node: 0 nothing (an info finding, which sets no status,
    or one not counted: another scope, or set apart), 1 a warning or a critical candidate, 2 a
    critical."""
    if not finding or not finding.get("counted", True) or finding["severity"] == "info":
        return 0
    if finding["severity"] == "critical":
        return 1 if finding.get("candidate") else 2
    return 1


def _worse(before: dict[str, Any], after: dict[str, Any], findings: dict[str, list]) -> list[str]:
    """Why the change made the node worse (empty: it did not)."""
    reasons = [f"new {f['severity']} finding {f['id']}" for f in findings["new"] if _weight(f) > 0] + [
        f"{row['id']} {_said(row['before'])} -> {_said(row['after'])}"
        for row in findings["changed"]
        if _weight(row["after"]) > _weight(row["before"])
    ]
    statuses = [before["summary"]["status"], after["summary"]["status"]]
    if STATUS_ORDER.index(statuses[1]) > STATUS_ORDER.index(statuses[0]):
        reasons.append(f"status {statuses[0]} -> {statuses[1]}")
    return reasons


def _said(finding: dict[str, Any]) -> str:
    counted = "" if finding.get("counted", True) else f", {finding['scope']} scope, not counted"
    return f"{finding['severity']}{' candidate' if finding.get('candidate') else ''}{counted}"


def _inconclusive(before: dict[str, Any], after: dict[str, Any]) -> dict[str, list[str]]:
    """Causes AFTER could not judge and BEFORE did (its capture lacks a source), and back."""
    old = {i["id"] for i in before.get("inconclusive") or []}
    new = {i["id"] for i in after.get("inconclusive") or []}
    return {"new": sorted(new - old), "resolved": sorted(old - new)}


def _notes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    times = [captured_at(before), captured_at(after)]
    notes = []
    if all(times) and str(times[1]) < str(times[0]):
        notes.append(f"AFTER was captured before BEFORE ({times[1]} < {times[0]}): are they in order?")
    return notes


def render(document: dict[str, Any], fmt: str, color: bool = False) -> str:
    """The diff in ``fmt`` (one of :data:`DIFF_FORMATS`)."""
    if fmt == "json":
        return json.dumps(document, indent=2, ensure_ascii=True) + "\n"
    from gdsdoctor.report import diff_view

    if fmt == "html":  # the optional extra gdsdoctor[html]; without it, one line (UserError)
        from gdsdoctor.report.html import render_diff_html

        return render_diff_html(document)
    if fmt == "markdown":
        from gdsdoctor.report.markdown import render_markdown_blocks

        return render_markdown_blocks(diff_view.outline(document))
    if fmt == "text":
        from gdsdoctor.report.text import render_blocks

        return render_blocks(diff_view.outline(document), color=color)
    raise UserError(f"a diff is written as {', '.join(DIFF_FORMATS)}, not {fmt}")
