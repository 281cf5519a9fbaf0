"""`--format html`: the whole diagnosis as one self-contained page to hand to someone else.

The page says what the text and Markdown reports say, in the same order (it draws the same
outline, report/outline.py), and adds what a page can show better: the status at the top, an
index of every finding with its severity and scope, the PCIe/NUMA topology picture and, where a
``watch`` recording was analysed, the checkpoint's timeline (report/svg_topology.py,
report/svg_timeline.py). Commands are ``<pre>`` blocks, each marked with what it does to the node.

Self-contained: styles inline, pictures inline SVG, no script at all, and a Content-Security-
Policy that forbids the page any request (a copy handed on shows the same offline). Jinja2
renders it with autoescape on, so every string from the input is escaped by the template; the
SVG pictures are the only markup passed through, and they escape their own text (report/svg.py).

Jinja2 is the optional extra ``gdsdoctor[html]`` (docs/html.md says why it and not another): a
node's install stays without it, and asking for html there says, in one line, how to get it.
``gdsdoctor diff --format html`` is a page of its own (templates/diff.html.j2, render_diff_html):
BEFORE and AFTER side by side, with the same styles (templates/_style.html.j2).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gdsdoctor.errors import UserError
from gdsdoctor.report.escape import visible
from gdsdoctor.report.outline import (
    EFFECT_LABELS,
    STATUS_STYLE,
    Block,
    Bullet,
    Commands,
    Heading,
    Line,
    Title,
    outline,
)

MISSING = "--format html needs the optional extra: pip install 'gdsdoctor[html]' (Jinja2)"
TEMPLATES = Path(__file__).parent / "templates"
_URL = re.compile(r"^https?://[^\s<>\"']+$")
_EFFECT_WORDS = tuple(label.split(" (")[0] for label in EFFECT_LABELS.values())


def available() -> bool:
    """Whether the extra is installed (the UNKNOWN answer of a failed run skips html without it)."""
    try:
        import jinja2  # noqa: F401
    except ImportError:
        return False
    return True


def render_html(report: dict[str, Any], pictures: dict[str, Any] | None = None, verbose: bool = False) -> str:
    """The report as one HTML page; ``pictures``: ``topology`` (a ``topo --format json``
    document) and ``watch`` (the facts section of a recorded timeline), either may be absent."""
    try:
        import markupsafe  # Jinja2's own dependency: the type of text passed through unescaped
    except ImportError:
        raise UserError(MISSING) from None
    from gdsdoctor.report.svg_timeline import render_svg as timeline_svg
    from gdsdoctor.report.svg_topology import render_svg as topology_svg

    pictures = pictures or {}
    markup = markupsafe.Markup
    environment = _environment()
    topology = pictures.get("topology")
    watch = pictures.get("watch")
    has_topology = bool(topology and ((topology.get("tree") or {}).get("children") or topology.get("gpus")))
    has_timeline = bool(isinstance(watch, dict) and watch.get("phases"))
    summary = report["summary"]
    return environment.get_template("report.html.j2").render(
        report=report,
        summary=summary,
        status_class=STATUS_STYLE.get(summary["status"], "unknown"),
        index=[_index_row(f) for f in report["findings"]],
        blocks=[_block(b) for b in outline(report, verbose)],
        topology_svg=markup(topology_svg(topology)) if has_topology else None,
        timeline_svg=markup(timeline_svg(watch)) if has_timeline else None,
    )


def render_diff_html(document: dict[str, Any]) -> str:
    """``gdsdoctor diff`` as one page: the two captures side by side, each finding's state in
    BEFORE and in AFTER, the facts that moved (commands/diff.py makes the document)."""
    from gdsdoctor.report.diff_view import diff_rows, status_text

    summary = document["summary"]
    sides = {
        side: {**document[side], "status_class": STATUS_STYLE.get(document[side]["status"], "unknown")}
        for side in ("before", "after")
    }
    return (
        _environment()
        .get_template("diff.html.j2")
        .render(
            host=document.get("host"),
            tool=document["tool"],
            schema_version=document["schema_version"],
            summary=summary,
            status_class=STATUS_STYLE.get(summary["status"], "unknown"),
            status_line=status_text(document),
            rows=diff_rows(document["findings"]),
            facts=[_fact_row(row) for row in document["facts"]],
            unjudged=_unjudged_lines(document),
            notes=document.get("notes") or [],
            **sides,
        )
    )


def _fact_row(row: dict[str, Any]) -> dict[str, str]:
    name = row["fact"] if row["key"] is None else f"{row['fact']} {row['key']}"
    return {
        "name": name,
        "before": "(absent)" if row["before"] is None else str(row["before"]),
        "after": "(absent)" if row["after"] is None else str(row["after"]),
    }


def _unjudged_lines(document: dict[str, Any]) -> list[str]:
    lines = []
    if document["inconclusive"]["new"]:
        unjudged = ", ".join(document["inconclusive"]["new"])
        lines.append(f"Not judged in AFTER (its capture lacks the data): {unjudged}")
    for side, key in (("BEFORE", "only_before"), ("AFTER", "only_after")):
        if document["sections"][key]:
            lines.append(f"Read only in {side}: " + ", ".join(document["sections"][key]))
    return lines


def _environment() -> Any:
    try:
        import jinja2
        import markupsafe
    except ImportError:
        raise UserError(MISSING) from None
    markup = markupsafe.Markup
    return jinja2.Environment(
        # Every value printed shows control and invisible characters as escapes, as the other
        # formats do (report/escape.py), then autoescape makes it text; the pictures pass as they are.
        finalize=lambda value: (
            value if isinstance(value, markup) or not isinstance(value, str) else visible(value)
        ),
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _index_row(finding: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": finding["id"],
        "severity": finding["severity"],
        "scope": finding.get("scope", "node"),
        "title": finding["title"],
        "under": finding.get("explained_by"),
        "certainty": finding.get("certainty"),
    }


def _block(block: Block) -> dict[str, Any]:
    """An outline block as the template draws it: its kind, spans (text, CSS class, link) and
    indent; a finding's title carries the id its anchor takes."""
    match block:
        case Heading(text=words):
            return {"kind": "heading", "text": words}
        case Title(spans=spans):
            ids = [text for text, style in spans if re.fullmatch(r"[a-z0-9][a-z0-9.-]*", text.strip())]
            anchor = next((t.strip() for t in ids if "-" in t), None)
            return {"kind": "title", "spans": _spans(spans), "anchor": anchor}
        case Line(spans=spans):
            return {"kind": "line", "spans": _spans(spans)}
        case Bullet(spans=spans, indent=indent):
            effect = any(text.lstrip("⚠ ").startswith(_EFFECT_WORDS) for text, _ in spans)
            return {"kind": "bullet", "spans": _spans(spans), "indent": indent, "effect": effect}
        case Commands(lines=lines, indent=indent):
            return {"kind": "commands", "lines": list(lines), "indent": indent}
    raise TypeError(f"unknown block {block!r}")


def _spans(spans: tuple[tuple[str, str], ...]) -> list[dict[str, Any]]:
    """Each span's text, its style as a class, and an ``href`` only for an http(s) address (an
    input's ``javascript:`` or ``data:`` stays text)."""
    found = []
    for words, style in spans:
        href = words.strip() if style == "link" and _URL.match(words.strip()) else None
        found.append({"text": words, "cls": style or "", "href": href})
    return found
