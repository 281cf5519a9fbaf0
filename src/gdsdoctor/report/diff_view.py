"""The blocks of ``gdsdoctor diff`` (commands/diff.py): the two captures, the findings resolved,
new, changed and unchanged, the facts that moved side by side, and the status line last (whole:
``| tail -1`` gives it). Text and Markdown draw the same blocks (report/outline.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gdsdoctor.report.outline import STATUS_STYLE, Block, Bullet, Heading, Line

_SEVERITY_STYLE = {"critical": "critical", "warning": "warning", "info": "info"}


def outline(document: dict[str, Any]) -> Iterator[Block]:
    host = document.get("host") or "(no host name in either capture)"
    yield Line(((f"gdsdoctor diff — {host}", "bold"),))
    for side in ("before", "after"):
        yield _side_line(side.upper(), document[side])
    findings = document["findings"]
    yield from _findings("Resolved", findings["resolved"], "ok")
    if findings["unjudged"]:
        # fired before and not judged after: the AFTER capture cannot say it was fixed
        said = "Fired in BEFORE, not judged in AFTER (its capture lacks the data)"
        yield from _findings(said, findings["unjudged"], "")
    yield from _findings("New", findings["new"], "")
    if findings["changed"]:
        yield Heading(f"Changed ({len(findings['changed'])})")
        for row in findings["changed"]:
            yield Bullet(
                (
                    (row["id"], "bold"),
                    (f"  {_state(row['before'])} → {_state(row['after'])}", ""),
                    (f"  {row['title']}", "dim"),
                )
            )
    yield from _findings("Unchanged", findings["unchanged"], "dim")
    yield from _facts(document["facts"])
    yield from _unjudged(document)
    for note in document.get("notes") or []:
        yield Line((("Note: ", "bold"), (note, "")))
    yield _status_line(document)


def _side_line(name: str, side: dict[str, Any]) -> Line:
    when = f" ({side['created']})" if side.get("created") else ""
    return Line(
        (
            (f"{name:<6} ", "bold"),
            (f"{side['input']}{when}: ", ""),
            (side["status"], STATUS_STYLE[side["status"]]),
            (f" — {side['reason']}", "dim"),
        )
    )


def _findings(title: str, rows: list[dict[str, Any]], style: str) -> Iterator[Block]:
    yield Heading(f"{title} ({len(rows)})")
    if not rows:
        yield Bullet((("none", "dim"),))
    for row in rows:
        spans = [
            (row["severity"].upper(), _SEVERITY_STYLE.get(row["severity"], "")),
            (f"  {row['id']}", "bold"),
            (f"  {row['title']}", style),
        ]
        if not row.get("counted", True):
            spans.append((f"  ({row['scope']} scope, not counted)", "dim"))
        if row.get("candidate"):
            spans.append(("  (candidate)", "dim"))
        if row.get("in_history"):
            spans.append(("  (in AFTER's history: recovered)", "dim"))
        yield Bullet(tuple(spans))


def _state(finding: dict[str, Any]) -> str:
    said = finding["severity"] + (" candidate" if finding.get("candidate") else "")
    return said if finding.get("counted", True) else f"{said}, {finding['scope']} scope, not counted"


def _facts(rows: list[dict[str, Any]]) -> Iterator[Block]:
    yield Heading(f"Facts changed ({len(rows)})")
    if not rows:
        yield Bullet((("none of the compared facts (docs/usage.md: diff)", "dim"),))
    for row in rows:
        if row["fact"] == "modules":
            sign = "+" if row["after"] is not None else "−"
            yield Bullet(((f"{row['fact']}: ", "bold"), (f"{sign} {row['key']}", "code")))
            continue
        name = row["fact"] if row["key"] is None else f"{row['fact']} {row['key']}"
        yield Bullet(
            (
                (f"{name}: ", "bold"),
                (row["before"] if row["before"] is not None else "(absent)", "code"),
                ("  →  ", ""),
                (row["after"] if row["after"] is not None else "(absent)", "code"),
            )
        )


def _unjudged(document: dict[str, Any]) -> Iterator[Block]:
    """What one capture could not judge or did not read: a diff is only as good as both."""
    inconclusive, sections = document["inconclusive"], document["sections"]
    if inconclusive["new"]:
        shown = ", ".join(inconclusive["new"][:8]) + (" …" if len(inconclusive["new"]) > 8 else "")
        said = f"(its capture lacks the data; judged in BEFORE): {shown}"
        yield Line((("Not judged in AFTER ", "bold"), (said, "")))
    for side, key in (("BEFORE", "only_before"), ("AFTER", "only_after")):
        if sections[key]:
            yield Line(((f"Read only in {side}: ", "bold"), (", ".join(sections[key]), "dim")))


_CHANGES = (
    ("resolved", "resolved", "ok"),
    ("unjudged", "not judged in AFTER", "unknown"),
    ("new", "new", "critical"),
    ("changed", "changed", "warning"),
    ("unchanged", "unchanged", "dim"),
)


def diff_rows(findings: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per finding of either capture, BEFORE's state beside AFTER's (the HTML page's
    table): what changed, then the state in each (absent where it did not fire)."""
    rows = []
    for key, change, style in _CHANGES:
        for row in findings[key]:
            before, after = {
                "resolved": (row, None),
                "unjudged": (row, None),
                "new": (None, row),
                "changed": (row.get("before"), row.get("after")),
                "unchanged": (row, row),
            }[key]
            rows.append(
                {
                    "change": change + (" (recovered)" if row.get("in_history") else ""),
                    "change_class": style,
                    "id": row["id"],
                    "title": row["title"],
                    "before": before and {"severity": before["severity"], "said": _state(before)},
                    "after": after and {"severity": after["severity"], "said": _state(after)},
                    "after_absent": "not judged" if key == "unjudged" else "—",
                }
            )
    return rows


def status_text(document: dict[str, Any]) -> str:
    """The status line's words (text, Markdown and HTML say the same)."""
    return "".join(text for text, _ in _status_line(document).spans)


def _status_line(document: dict[str, Any]) -> Line:
    summary = document["summary"]
    why = "; ".join(summary["worse_because"]) if summary["worse"] else "nothing got worse"
    if summary["not_judged_after"]:
        why += "; AFTER cannot judge " + ", ".join(summary["not_judged_after"])
    return Line(
        (
            ("Diff status: ", "bold"),
            (summary["status"], STATUS_STYLE[summary["status"]]),
            (f" (exit {summary['exit_code']}) — AFTER is {document['after']['status']}; {why}", ""),
        ),
        whole=True,
    )
