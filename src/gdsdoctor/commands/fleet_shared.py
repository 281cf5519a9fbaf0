"""Shared conditions across a fleet: a finding of ``shared`` scope (a full OST, an exhausted MDT,
a target's fault: docs/rules.md, Status) is one problem of the storage that every client sees.
A fleet summary reports it once, with the nodes that see it and what they show of it, rather than
once per node; the per-cause list (``causes``) keeps the nodes' own findings.

Each node record keeps ``scopes`` (cause id → scope, for findings that are not the node's own)
and ``subjects`` (cause id → the evidence lines of its shared findings), so the rows below are
recomputed from the records alone and summaries stay mergeable.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from gdsdoctor.report.outline import Block, Bullet, Heading

# A shared condition sets the fleet's status once, at its severity (as a node finding would).
STATUS_OF = {"critical": "CRITICAL", "warning": "WARNING", "info": "OK"}
MAX_SUBJECTS = 4


def scopes_of(findings: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Cause id → scope, for a node's findings that are not of node scope."""
    return {f["id"]: f["scope"] for f in findings if f.get("scope", "node") != "node"}


def subjects_of(findings: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    """Cause id → the input lines a shared finding cites (what the node sees of the condition)."""
    return {
        f["id"]: [e["text"] for e in f["evidence"] if e.get("artifact")][:MAX_SUBJECTS]
        for f in findings
        if f.get("scope") == "shared"
    }


def shared_conditions(
    nodes: Sequence[dict[str, Any]], catalogue: dict[str, dict[str, str]]
) -> list[dict[str, Any]]:
    """One row per shared condition: the cause, how many nodes and which see it, and the lines
    they cite (each distinct line once)."""
    where: dict[str, list[str]] = defaultdict(list)
    seen: dict[str, list[str]] = defaultdict(list)
    for node in nodes:
        for cause, scope in (node.get("scopes") or {}).items():
            if scope != "shared":
                continue
            where[cause].append(node["name"])
            for line in (node.get("subjects") or {}).get(cause, []):
                if line not in seen[cause] and len(seen[cause]) < MAX_SUBJECTS:
                    seen[cause].append(line)
    rows = [
        {
            "id": cause,
            **catalogue.get(cause, {"title": cause, "severity": "info", "category": "capacity"}),
            "count": len(names),
            "nodes": names,
            "seen": seen[cause],
        }
        for cause, names in where.items()
    ]
    order = {"critical": 0, "warning": 1, "info": 2}
    return sorted(rows, key=lambda r: (order.get(r["severity"], 3), -r["count"], r["id"]))


def own_findings(node: dict[str, Any]) -> list[str]:
    """The node's findings that are its own or its jobs' (its shared ones are listed once apart)."""
    scopes = node.get("scopes") or {}
    return [cause for cause in node["findings"] if scopes.get(cause) != "shared"]


def blocks(summary: dict[str, Any], names: Callable[[Sequence[str]], str]) -> Iterator[Block]:
    """The fleet outline's section of shared conditions (``names`` shortens a node list)."""
    rows = summary.get("shared") or []
    if not rows:
        return
    yield Heading(f"Shared conditions ({len(rows)}, each reported once)")
    for row in rows:
        yield Bullet(
            (
                (row["severity"].upper(), row["severity"]),
                ("  ", ""),
                (row["id"], "bold"),
                (f"  seen by {row['count']}/{summary['summary']['nodes']} nodes: ", ""),
                (names(row["nodes"]), "dim"),
            )
        )
        for line in row["seen"]:
            yield Bullet(((line, "code"),), indent=2)
