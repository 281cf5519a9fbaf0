"""Error lines no fired cause explains: a node with them is never OK.

``derived.error_lines`` holds the input lines that are errors of the storage path now (this boot,
within ``--since``, not an event since recovered). A line is *explained* when a finding — fired
now, set apart by an acknowledgement, or in history — cites it as evidence, or (kernel log,
cufile.log) cites another error line of the same artifact, family and device (a cause quotes at
most a dozen lines of a storm; the rest are the same failure); in a job's output, whose lines
name no device, a cited error explains the error lines of its burst (LEAD_LINES before it,
CASCADE_LINES after it: what led to it, the traceback carrying it, NCCL's teardown, the
launcher's exit). The others are *unexplained*: listed with file:line, the
family the classifier gave them, and the input that would settle them where a neighbouring cause
reads it.

Status (docs/rules.md, the status contract): unexplained lines turn OK into **UNKNOWN** (exit
3: the tool read an error it cannot judge, which is not health); WARNING and CRITICAL stay what
the findings make them, with the count in the reason, since a finding already asks for a person.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gdsdoctor.engine.rank import RankedFinding
from gdsdoctor.probes.error_lines import SETTLE

CASCADE_LINES = 200
LEAD_LINES = 20  # and the burst just before it: a peer's connection closed before NCCL's allocation failed
UNKNOWN_EXIT = 3  # the monitoring-plugin code (report/build.py EXIT_CODES)


def unexplained(
    findings: Iterable[RankedFinding], facts: dict[str, Any], symptoms: Iterable[dict[str, Any]] = ()
) -> list[dict[str, Any]]:
    """The error lines of ``derived.error_lines`` that none of ``findings`` explains, nor any
    symptom of the differential reports (with its candidates: its own lines are said there)."""
    lines = [x for x in (facts.get("derived") or {}).get("error_lines") or [] if isinstance(x, dict)]
    if not lines:
        return []
    cited = {(e.artifact, e.line) for f in findings for e in f.result.evidence if e.line is not None}
    cited |= {(e.get("artifact"), e.get("line")) for s in symptoms for e in s.get("evidence") or []}
    # a job's lines name no device: family alone is too coarse there (the cascade rule below)
    groups = {
        _group(x)
        for x in lines
        if (x.get("artifact"), x.get("line")) in cited and x.get("section") != "app_log"
    }
    causes = _cited_job_lines(lines, cited)
    left = [
        x
        for x in lines
        if (x.get("artifact"), x.get("line")) not in cited
        and _group(x) not in groups
        and not _consequence(x, causes)
    ]
    return [
        {
            "artifact": x.get("artifact"),
            "line": x.get("line"),
            "text": x.get("text"),
            "family": x.get("family"),
            "settle": SETTLE.get(str(x.get("family")), ""),
        }
        for x in left
    ]


def _cited_job_lines(lines: list[dict[str, Any]], cited: set[tuple[Any, Any]]) -> dict[Any, list[int]]:
    """Per artifact of a job's output, the cited error lines' numbers."""
    found: dict[Any, list[int]] = {}
    for x in lines:
        if x.get("section") == "app_log" and (x.get("artifact"), x.get("line")) in cited:
            found.setdefault(x.get("artifact"), []).append(int(x.get("line") or 0))
    return found


def _consequence(line: dict[str, Any], causes: dict[Any, list[int]]) -> bool:
    """A job's error line within CASCADE_LINES after a cited one or LEAD_LINES before it: one
    failure's burst (what led to it, the traceback that carries it, NCCL's teardown warnings,
    the launcher's exit)."""
    if line.get("section") != "app_log":
        return False
    at = int(line.get("line") or 0)
    return any(-LEAD_LINES <= at - cited <= CASCADE_LINES for cited in causes.get(line.get("artifact"), []))


def _group(line: dict[str, Any]) -> tuple[Any, Any, Any]:
    return line.get("artifact"), line.get("family"), line.get("device")


def where(line: dict[str, Any]) -> str:
    """``file:line`` of an unexplained line."""
    return f"{line.get('artifact')}:{line.get('line')}"


def with_unexplained(summary: dict[str, Any], lines: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary with the unexplained lines counted, and an OK status made UNKNOWN."""
    summary = {**summary, "counts": {**summary["counts"], "unexplained": len(lines)}}
    if not lines:
        return summary
    first = lines[0]
    said = f"{len(lines)} error line(s) not explained, first {where(first)} ({first.get('family')})"
    if summary["status"] == "OK":
        summary["status"], summary["exit_code"] = "UNKNOWN", UNKNOWN_EXIT
        summary["reason"] = f"{said}: an error read and not understood is not health; {summary['reason']}"
    else:
        summary["reason"] += f"; {said}"
    return summary


def with_differential(summary: dict[str, Any], symptoms: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary with the symptoms counted; one not explained by a confirmed candidate makes an
    OK status UNKNOWN (its candidates are left to settle, or all ruled out) and raises nothing
    else: a symptom drains no node by itself."""
    left = [s for s in symptoms if s.get("state") != "explained"]
    counts = {**summary["counts"], "symptoms": len(symptoms), "symptoms_open": len(left)}
    summary = {**summary, "counts": counts}
    if not left:
        return summary
    first = left[0]
    open_ = [c for c in first.get("candidates") or [] if c.get("state") in ("open", "suspected")]
    said = f"{len(left)} symptom(s) without a confirmed cause, first {first.get('id')}"
    if open_:
        said += f" ({len(open_)} candidate(s) to settle, first: {open_[0].get('settle')})"
    else:
        said += " (every known candidate ruled out)"
    if summary["status"] == "OK":
        summary["status"], summary["exit_code"] = "UNKNOWN", UNKNOWN_EXIT
        summary["reason"] = f"{said}: a symptom whose cause is not settled is not health; {summary['reason']}"
    else:
        summary["reason"] += f"; {said}"
    return summary
