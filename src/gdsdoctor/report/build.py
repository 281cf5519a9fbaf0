"""Assemble the report document (the JSON contract, see schemas/report.schema.json).

Status (the contract of docs/rules.md "Status"): the worst severity among the findings that
count — those of ``node`` scope, and of the scopes the site config raises
(``status: {count_scopes: [node, shared]}``); a critical finding below the certainty floor
(a *candidate*) counts as a warning. Shared and job findings are listed with their scope and
``counted: false``; the causes not applicable because the node does not use their capability
(GDS, NVMe-oF, RDMA for storage) are said in one line each (``summary.not_used``). Otherwise:
critical → CRITICAL, warning → WARNING, info only → OK. With no finding: OK if at least one
cause could be evaluated, UNKNOWN if none could (missing data is inconclusive, never healthy),
and UNKNOWN too when the run was *partial* (report/partial.py: blind to what its critical
causes need, such as the kernel log denied to a non-root user): ``summary.partial`` names what
was not read and how to read it, whatever the status. Error lines of the storage path that no
finding cites make an OK status UNKNOWN (report/unexplained.py). Exit codes follow the monitoring-plugin
convention: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gdsdoctor import REPORT_SCHEMA_VERSION, __version__
from gdsdoctor.capture.capture import Capture
from gdsdoctor.engine.acknowledge import Acknowledged
from gdsdoctor.engine.acknowledge import describe as describe_ack
from gdsdoctor.engine.evaluate import CERTAINTY_FLOOR, CauseResult, Outcome
from gdsdoctor.engine.rank import RankedFinding
from gdsdoctor.facts.event_clock import ago
from gdsdoctor.report.node import node_summary
from gdsdoctor.report.partial import describe, partial
from gdsdoctor.report.unexplained import unexplained, with_differential, with_unexplained

EXIT_CODES = {"OK": 0, "WARNING": 1, "CRITICAL": 2, "UNKNOWN": 3}
DEFAULT_COUNTED_SCOPES = ("node",)
# How each capability of ``uses:`` is named in the one line that says its causes do not apply.
CAPABILITY_NAMES = {"gds": "GDS", "nvmeof": "NVMe-oF", "storage_rdma": "RDMA for storage"}
_STATUS_OF_SEVERITY = {"critical": "CRITICAL", "warning": "WARNING", "info": "OK"}


def build_report(
    capture: Capture,
    facts: dict[str, Any],
    results: Sequence[CauseResult],
    ranked: Sequence[RankedFinding],
    acknowledged: Acknowledged | None = None,
    history: Sequence[RankedFinding] = (),
    symptoms: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """The report; with ``acknowledged`` (engine/acknowledge.py), its acknowledged findings are
    set apart (``acknowledged``, counted apart, never setting the status) and its expired
    acknowledgements listed (``expired_acknowledgements``: their findings count again);
    ``history``: the findings of kernel events since recovered (facts/lifecycle.py), apart too."""
    kept = acknowledged.kept if acknowledged is not None else ranked
    timeline = _Timeline(facts)
    counted = tuple(capture.options.get("count_scopes") or DEFAULT_COUNTED_SCOPES)
    findings = _symptoms_in_scope([timeline.dated(_finding(f, counted)) for f in kept], counted)
    firing_now = {f.result.cause.id for f in ranked}
    inconclusive = _by_relevance(
        [_inconclusive(r, facts) for r in results if r.outcome is Outcome.INCONCLUSIVE], results
    )
    probes = _probes(facts)
    set_apart = [
        {"finding": _finding(f), "acknowledgement": describe_ack(ack)}
        for f, ack in (acknowledged.set_apart if acknowledged else [])
    ]
    expired = [
        {"acknowledgement": describe_ack(ack), "fired": fired}
        for ack, fired in (acknowledged.expired if acknowledged else [])
    ]
    report = {
        "schema_version": REPORT_SCHEMA_VERSION,
        "tool": {"name": "gdsdoctor", "version": __version__},
        "source": {
            "kind": capture.origin,
            "label": capture.label,
            "target_path": capture.options.get("target_path"),
            "notes": [*capture.notes, *_cut_notes(facts)],
        },
        "host": {str(k): str(v) for k, v in capture.host.items()},
        "node": node_summary(facts),
        "probes": probes,
        "findings": findings,
        "history": [timeline.past(_finding(f), f.result.cause.id in firing_now) for f in history],
        "events": timeline.describe(),
        "inconclusive": inconclusive,
        "causes": [_verdict(r, {a["finding"]["id"] for a in set_apart}) for r in results],
        "summary": summarise(
            results,
            findings,
            probes,
            capture.notes,
            _gpu_causes_not_applicable(facts, results),
            partial(capture, facts, results),
            len(history),
            not_used_lines(facts, results),
        ),
        "intent": _intent(facts),
    }
    if set_apart or expired:
        report["acknowledged"] = set_apart
        report["expired_acknowledgements"] = expired
        report["summary"] = _with_acknowledgements(report["summary"], set_apart, expired)
    # error lines no finding (now, acknowledged or history) cites: never OK (report/unexplained.py)
    report["differential"] = list(symptoms)
    report["unexplained"] = unexplained([*ranked, *history], facts, symptoms)
    report["summary"] = with_unexplained(report["summary"], report["unexplained"])
    # a symptom whose candidates are left to settle is not health either (engine/differential.py)
    report["summary"] = with_differential(report["summary"], report["differential"])
    return report


def _with_acknowledgements(
    summary: dict[str, Any], set_apart: Sequence[dict[str, Any]], expired: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """The counts and the reason say what was set apart and what expired."""
    summary = {**summary, "counts": {**summary["counts"], "acknowledged": len(set_apart)}}
    if set_apart:
        summary["reason"] += f"; {len(set_apart)} acknowledged finding(s) not counted"
    if expired:
        ids = ", ".join(e["acknowledgement"]["id"] for e in expired)
        summary["reason"] += f"; {len(expired)} acknowledgement(s) expired ({ids})"
    return summary


class _Timeline:
    """Ages and lifecycle verdicts of the kernel events, for the evidence lines that quote them
    (gdsdoctor.facts.lifecycle gave each event its age and, for history, its reason)."""

    def __init__(self, facts: dict[str, Any]) -> None:
        section = facts.get("dmesg") if isinstance(facts.get("dmesg"), dict) else {}
        self.clock = section.get("clock") if isinstance(section.get("clock"), dict) else {}
        self.history = [e for e in section.get("history") or [] if isinstance(e, dict)]
        self.by_line: dict[tuple[Any, Any], dict[str, Any]] = {}
        for event in [*(section.get("events") or []), *self.history]:
            src = event.get("src") if isinstance(event, dict) else None
            if isinstance(src, dict):
                self.by_line[(src.get("artifact"), src.get("line"))] = event

    def describe(self) -> dict[str, Any]:
        """What the ages are measured from, and how many events are history."""
        return {
            "clock": self.clock.get("basis"),
            "captured_at": self.clock.get("captured_at"),
            "drifting": bool(self.clock.get("drifting")),
            "since": self.clock.get("since"),
            "history_events": len(self.history),
        }

    def age(self, age_s: float | None) -> str:
        return ago(age_s, self.clock)

    def dated(self, finding: dict[str, Any]) -> dict[str, Any]:
        """The finding with each kernel-log evidence line's age (and, for history, why)."""
        for evidence in finding["evidence"]:
            event = self.by_line.get((evidence.get("artifact"), evidence.get("line")))
            if event is None:
                continue
            evidence["age_s"] = event.get("age_s")
            evidence["at"] = event.get("at")
            evidence["age"] = self.age(event.get("age_s"))
            if isinstance(event.get("history"), dict):
                evidence["history"] = str(event["history"].get("reason") or "")
        return finding

    def past(self, finding: dict[str, Any], also_now: bool) -> dict[str, Any]:
        """A finding of the whole log with evidence now history: INFO, with why. When the cause
        fires now too (on other events), only its history lines are shown here."""
        finding = self.dated(finding)
        past = [e for e in finding["evidence"] if e.get("history")]
        if also_now:
            finding["evidence"] = past
        newest = min(
            past, key=lambda e: e["age_s"] if e.get("age_s") is not None else float("inf"), default=None
        )
        age_s = newest.get("age_s") if newest else None
        return {
            **finding,
            "severity": "info",
            "was_severity": finding["severity"],
            "also_now": also_now,
            "history_reason": newest["history"] if newest else "its kernel events are history",
            "age_s": age_s,
            "age": self.age(age_s),
        }


def _gpu_causes_not_applicable(facts: dict[str, Any], results: Sequence[CauseResult]) -> int | None:
    """How many GPU causes do not apply because the facts show no NVIDIA GPU; None when they
    do not show that (a GPU found, or nobody could tell)."""
    if (facts.get("derived") or {}).get("nvidia_present") is not False:
        return None
    return sum(
        1
        for r in results
        if r.outcome is Outcome.NOT_APPLICABLE and "derived.nvidia_present" in (r.cause.applies_when or "")
    )


def _symptoms_in_scope(findings: list[dict[str, Any]], counted: Sequence[str]) -> list[dict[str, Any]]:
    """A symptom folded under a shared or job cause takes its cause's scope: the job's ENOSPC
    that a full OST explains is the OST's condition, not this node's."""
    roots = {f["id"]: f["scope"] for f in findings if not f["explained_by"]}
    for finding in findings:
        root_scope = roots.get(finding["explained_by"] or "", "node")
        if finding["explained_by"] and root_scope != "node":
            finding["scope"], finding["counted"] = root_scope, root_scope in counted
    return findings


def not_used_lines(facts: dict[str, Any], results: Sequence[CauseResult]) -> list[dict[str, Any]]:
    """Per capability the node does not use, how many causes that leaves not applicable and the
    one line that says it ("GDS is not set up on this node: 14 causes not applicable; …")."""
    intent = (facts.get("derived") or {}).get("intent") or {}
    lines = []
    for capability, name in CAPABILITY_NAMES.items():
        count = sum(1 for r in results if r.outcome is Outcome.NOT_APPLICABLE and capability in r.not_used)
        if not count:
            continue
        stated = (intent.get(capability) or {}).get("by") == "site"
        why = "the site config says it is unused" if stated else "nothing shows it is used"
        line = (
            f"{name} is not set up on this node ({why}): {count} cause(s) not applicable; "
            f"set `node.{capability}: required` in the site config to check them"
        )
        lines.append({"capability": capability, "causes": count, "line": line})
    return lines


def _intent(facts: dict[str, Any]) -> dict[str, Any]:
    """What the node is meant to use (derived.intent), as the report states it."""
    intent = (facts.get("derived") or {}).get("intent") or {}
    decided = {
        name: {
            "state": value.get("state", "unknown"),
            "by": value.get("by", "evidence"),
            "evidence": [
                {
                    "text": item.get("says", ""),
                    "artifact": (item.get("src") or {}).get("artifact"),
                    "line": (item.get("src") or {}).get("line"),
                }
                for item in value.get("evidence") or []
            ],
        }
        for name, value in intent.items()
        if isinstance(value, dict) and "state" in value
    }
    return {**decided, "rdma_role": intent.get("rdma_role", "unknown")}


def _cut_notes(facts: dict[str, Any]) -> list[str]:
    """A note for each section whose parser kept only part of its input (``input_cut``: a huge
    input; ``skipped_lines``: lines in no known form; ``conflicts``: outputs read as one that
    disagree, the first kept): the report must say when a cap or an odd line, not the host, is
    why something is absent."""
    return [
        f"{name}: {section[key]}"
        for name, section in facts.items()
        for key in ("input_cut", "skipped_lines", "conflicts")
        if isinstance(section, dict) and isinstance(section.get(key), str)
    ]


def _verdict(result: CauseResult, acknowledged: set[str] = frozenset()) -> dict[str, Any]:  # type: ignore[assignment]
    """Every cause with its outcome (fired, clear, inconclusive, not applicable), in rule order:
    what per-cause formats (JUnit, Prometheus) and fleet summaries need beside the findings; a
    fired cause set apart by an acknowledgement says so."""
    cause = result.cause
    evaluated = result.outcome in (Outcome.FIRED, Outcome.CLEAR)
    verdict = {
        "id": cause.id,
        "title": cause.title,
        "category": cause.category,
        "severity": cause.severity,
        "outcome": result.outcome.value,
        "certainty": result.certainty if evaluated else None,  # < 0: evidence against
        "scope": result.scope,
    }
    if cause.id in acknowledged:
        verdict["acknowledged"] = True
    return verdict


def _finding(ranked: RankedFinding, counted: Sequence[str] = DEFAULT_COUNTED_SCOPES) -> dict[str, Any]:
    result, cause = ranked.result, ranked.result.cause
    return {
        "id": cause.id,
        "title": cause.title,
        "category": cause.category,
        "severity": cause.severity,
        "certainty": result.certainty,
        "explanation": cause.explanation,
        "evidence": [e.to_dict() for e in result.evidence],
        "fix": cause.fix,
        "remediation": [
            {"command": step.cmd, "effect": step.effect, "note": step.note} for step in result.remediation
        ],
        "verify": list(result.verify),
        "explains": list(ranked.explains),
        "explained_by": ranked.explained_by,
        "references": list(cause.references),
        **({"narrowed": dict(result.narrowed)} if result.narrowed else {}),
        **({"answers": list(ranked.answers)} if ranked.answers else {}),
        "scope": result.scope,
        "counted": result.scope in counted,
        "candidate": result.candidate,
        **({"confirm": list(result.confirm)} if result.candidate else {}),
    }


def _inconclusive(result: CauseResult, facts: dict[str, Any]) -> dict[str, Any]:
    cause = result.cause
    sections = [s for r in cause.requires for s in ((r,) if isinstance(r, str) else r) if s != "derived"]
    return {
        "id": cause.id,
        "title": cause.title,
        "category": cause.category,
        "severity": cause.severity,
        "missing": result.missing,
        "read": [s for s in dict.fromkeys(sections) if (facts.get(s) or {}).get("status") == "ok"],
    }


def _by_relevance(items: list[dict[str, Any]], results: Sequence[CauseResult]) -> list[dict[str, Any]]:
    """The inconclusive causes in the order of what the input is about: those with some of their
    input read first (most sections read first), then those of a category whose other causes
    could be judged, then the rest, each group in rule order. What a pasted /proc/mounts leaves
    open is about filesystems and mounts, not WSL or containers."""
    judged = {r.cause.category for r in results if r.outcome in (Outcome.FIRED, Outcome.CLEAR)}
    return sorted(items, key=lambda item: (-len(item["read"]), item["category"] not in judged))


def _probes(facts: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "status": section.get("status", "unknown"),
            "artifact": section.get("artifact"),
            "detail": str(section.get("detail", "")),
        }
        for name, section in sorted(facts.items())
        if name != "derived" and isinstance(section, dict)
    ]


def summarise(
    results: Sequence[CauseResult],
    findings: Sequence[dict[str, Any]],
    probes: Sequence[dict[str, Any]],
    notes: Sequence[str] = (),
    gpu_not_applicable: int | None = None,
    blind: dict[str, Any] | None = None,
    history: int = 0,
    not_used: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """Status, exit code, the reason, the counts, ``partial`` when the run could not see what
    its critical causes need (``blind``), and a ``notice`` when the reader must know something
    before anything else: nothing was read, or no NVIDIA GPU was found. Only the findings that
    count (``counted``: their scope counts) set the status; a critical candidate (below the
    certainty floor) sets it to WARNING at most. ``not_used``: ``not_used_lines``."""
    counts = {outcome.value: 0 for outcome in Outcome}
    for result in results:
        counts[result.outcome.value] += 1
    counting = [f for f in findings if f.get("counted", True)]
    candidates = [f for f in counting if f["severity"] == "critical" and f.get("candidate")]
    severities = {
        s: sum(1 for f in counting if f["severity"] == s and not (s == "critical" and f.get("candidate")))
        for s in ("critical", "warning", "info")
    }
    evaluated = counts["fired"] + counts["clear"]
    readable = any(p["status"] == "ok" for p in probes)
    notice = None
    if not readable:
        status = "UNKNOWN"
        notice = "nothing was read: " + (notes[0] if notes else "no source gave any data")
        reason = notice
    elif evaluated == 0:
        status, reason = "UNKNOWN", "no cause could be evaluated with the data available"
    elif severities["critical"]:
        status, reason = (
            "CRITICAL",
            f"{severities['critical']} critical finding(s), first: {_first(counting, 'critical')}",
        )
    elif severities["warning"] or candidates:
        status, reason = "WARNING", _warning_reason(counting, severities["warning"], candidates)
    elif blind:  # nothing found in what could be read: that is not health
        status = "UNKNOWN"
        reason = f"{describe(blind)}; nothing critical or warning in the {evaluated} cause(s) evaluated"
    else:
        status = "OK"
        reason = f"{evaluated} cause(s) evaluated, none critical or warning"
        if counts["inconclusive"]:
            reason += f"; {counts['inconclusive']} inconclusive for lack of data"
    if blind and status in ("CRITICAL", "WARNING"):
        reason += f"; {describe(blind)}"
    if severities["critical"] and candidates:
        reason += f"; {len(candidates)} critical candidate(s) below certainty {CERTAINTY_FLOOR:g}"
    apart = [f for f in findings if not f.get("counted", True) and f["severity"] != "info"]
    for scope in ("shared", "job"):
        of_scope = [f for f in apart if f.get("scope") == scope]
        if of_scope and readable:
            reason += f"; {len(of_scope)} {scope} finding(s) not counted ({of_scope[0]['id']})"
    if history and readable:
        reason += f"; {history} finding(s) in history (recovered since)"
    if readable and gpu_not_applicable:
        notice = f"no NVIDIA GPU found: {gpu_not_applicable} GPU causes not applicable"
        if status == "OK":
            reason += f"; {notice}"
    by_scope = {s: sum(1 for f in apart if f.get("scope") == s) for s in ("shared", "job")}
    summary = {
        "status": status,
        "exit_code": EXIT_CODES[status],
        "reason": reason,
        "counts": {**severities, **counts, "history": history, "candidates": len(candidates), **by_scope},
    }
    if notice:
        summary["notice"] = notice
    if readable and not_used:
        summary["not_used"] = list(not_used)
    if blind and readable:
        summary["partial"] = blind
    return summary


def unknown_report(reason: str, kind: str = "live") -> dict[str, Any]:
    """The report of a run that could not evaluate anything (bad input, a usage error): UNKNOWN,
    with ``reason`` (the error) as its reason, so that every machine format still has a document
    to give (cli/unknown.py)."""
    import os

    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "tool": {"name": "gdsdoctor", "version": __version__},
        "source": {"kind": kind, "label": os.uname().nodename, "target_path": None, "notes": []},
        "host": {"hostname": os.uname().nodename},
        "probes": [],
        "findings": [],
        "inconclusive": [],
        "causes": [],
        "summary": {
            "status": "UNKNOWN",
            "exit_code": EXIT_CODES["UNKNOWN"],
            "reason": reason,
            "counts": {"critical": 0, "warning": 0, "info": 0, **{o.value: 0 for o in Outcome}},
        },
    }


FAIL_ON_LEVELS = ("critical", "warning")


def apply_fail_on(report: dict[str, Any], fail_on: str | None) -> dict[str, Any]:
    """The report with the exit code that ``--fail-on`` asks for, and the reason saying why.

    No ``fail_on``: the monitoring-plugin codes. ``warning``: the same codes (warnings and
    criticals fail). ``critical``: a WARNING status exits 0. UNKNOWN always exits 3, because
    missing data is never healthy.
    """
    if fail_on is None:
        return report
    if fail_on not in FAIL_ON_LEVELS:
        raise ValueError(f"fail_on must be one of {FAIL_ON_LEVELS}, not {fail_on!r}")
    summary = dict(report["summary"], fail_on=fail_on)
    if fail_on == "critical" and summary["status"] == "WARNING":
        summary["exit_code"] = 0
        summary["reason"] += "; warnings do not fail with --fail-on critical"
    return {**report, "summary": summary}


def exit_line(report: dict[str, Any]) -> str:
    """One line saying why the exit code is what it is (stderr, after machine formats)."""
    summary = report["summary"]
    return f"gdsdoctor: exit {summary['exit_code']} ({summary['status']}): {summary['reason']}"


def _warning_reason(
    counting: Sequence[dict[str, Any]], warnings: int, candidates: Sequence[dict[str, Any]]
) -> str:
    """Why the status is WARNING: the warnings, then the critical candidates, each with what
    would confirm it (a candidate is never a drain)."""
    parts = [f"{warnings} warning(s), first: {_first(counting, 'warning')}"] if warnings else []
    if candidates:
        first = candidates[0]
        confirm = f" (to confirm: {first['confirm'][0]})" if first.get("confirm") else ""
        parts.append(
            f"{len(candidates)} critical candidate(s) below certainty {CERTAINTY_FLOOR:g}, "
            f"first: {first['id']} {first['certainty']:.2f}{confirm}"
        )
    return "; ".join(parts)


def _first(findings: Sequence[dict[str, Any]], severity: str) -> str:
    """The first finding of ``severity`` (a critical candidate is not among the critical ones)."""
    return next(
        f["id"]
        for f in findings
        if f["severity"] == severity and not (severity == "critical" and f.get("candidate"))
    )
