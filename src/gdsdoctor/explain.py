"""`gdsdoctor explain ID [INPUTS]` and `gdsdoctor probes`: show the reasoning, not just the verdict."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jmespath.exceptions import JMESPathError

from gdsdoctor.engine.evaluate import evaluate_cause
from gdsdoctor.engine.functions import search
from gdsdoctor.facts.document import ANALYSED_PROBES, build_facts
from gdsdoctor.model import UserError
from gdsdoctor.report.escape import one_line


def explain_cause(cause_id: str, inputs: Sequence[Path], rules_dirs: Sequence[Path]) -> str:
    from gdsdoctor.capture.live import capture_live
    from gdsdoctor.pipeline import HOW_TO_COLLECT, load_inputs, rules

    causes = {c.id: c for c in rules(rules_dirs)}
    if cause_id not in causes:
        raise UserError(f"no cause with id {cause_id!r}; `gdsdoctor rules list` shows them")
    cause = causes[cause_id]
    capture = load_inputs(inputs) if inputs else capture_live()
    facts = build_facts(capture)
    result = evaluate_cause(cause, facts, HOW_TO_COLLECT)
    lines = [
        f"{cause.id}: {one_line(cause.title)}",
        f"  outcome: {result.outcome}  certainty: {result.certainty:.2f}",
    ]
    lines.append("  required facts:")
    for requirement in cause.requires:
        for section in (requirement,) if isinstance(requirement, str) else requirement:
            value = facts.get(section) or {}
            lines.append(
                f"    {section}: {value.get('status', 'absent')} {one_line(value.get('detail', ''))}".rstrip()
            )
    if cause.applies_when:
        lines.append(f"  applies when {cause.applies_when} → {_value(cause.applies_when, facts)}")
    lines.append("  signals:")
    held = {r.signal.id: r for r in result.signals}
    for signal in cause.signals:
        state = "held" if signal.id in held and held[signal.id].held else "not held"
        if signal.id not in held:
            state = "not evaluated"
        lines.append(f"    [{state}] {signal.certainty:+.2f} {signal.id}: {one_line(signal.says)}")
        lines.append(f"        when {signal.when} → {_value(signal.when, facts)}")
        if signal.evidence:
            lines.append(f"        evidence {signal.evidence} → {_value(signal.evidence, facts)}")
    for name, expression in cause.vars.items():
        lines.append(f"  var {name} = {expression} → {_value(expression, facts)}")
    return "\n".join(lines) + "\n"


def _value(expression: str, facts: dict[str, Any]) -> str:
    try:
        text = json.dumps(search(expression, facts), default=str)
    except JMESPathError as error:
        text = f"error: {str(error).splitlines()[0]}"
    return one_line(text if len(text) <= 300 else text[:300] + "…")


def probes_table() -> str:
    rows = []
    for probe in ANALYSED_PROBES:
        if not probe.sources:
            rows.append((probe.section, probe.title, f"paste only: {probe.paste_hint}", ""))
        for index, source in enumerate(probe.sources):
            label = probe.section if index == 0 else ""
            title = probe.title if index == 0 else "  (fallback)"
            root = "root" if source.needs_root else ""
            rows.append((label, title, source.describe, root))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c:<{widths[2]}}  {d}".rstrip() for a, b, c, d in rows]
    return "\n".join(lines) + "\n"
