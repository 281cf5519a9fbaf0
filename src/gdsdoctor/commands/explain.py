"""`gdsdoctor explain ID [INPUTS]` and `gdsdoctor probes`: show the reasoning, not just the verdict."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jmespath.exceptions import JMESPathError

from gdsdoctor.capture.live import capture_live
from gdsdoctor.commands.catalogue import step_records
from gdsdoctor.engine.evaluate import CauseResult, Outcome, evaluate_cause
from gdsdoctor.engine.functions import search
from gdsdoctor.engine.rules import Cause
from gdsdoctor.errors import UserError, did_you_mean
from gdsdoctor.facts.document import build_facts
from gdsdoctor.pipeline import HOW_TO_COLLECT, load_inputs, require_target, rules
from gdsdoctor.probes import ANALYSED_PROBES
from gdsdoctor.report.escape import one_line
from gdsdoctor.report.outline import command_lines
from gdsdoctor.textwidth import fit_lines, prose_width, table


def explain_cause(
    cause_id: str,
    inputs: Sequence[Path],
    rules_dirs: Sequence[Path],
    path: str | None = None,
    read_only: bool = False,
) -> str:
    """The reasoning for one cause over the inputs (this host when none); ``path``: the
    checkpoint path, as ``--path`` gives it to check/analyze (filesystem rules judge its mount);
    ``read_only``: of its commands, only those that change nothing (and the verify ones)."""
    causes = {c.id: c for c in rules(rules_dirs)}
    if cause_id not in causes:
        hint = did_you_mean(cause_id, causes)
        raise UserError(f"no cause with id {cause_id!r}{hint}; `gdsdoctor rules list` shows them")
    cause = causes[cause_id]
    if inputs:
        capture = load_inputs(inputs, path)
    else:
        capture = capture_live(Path("/"), path)
        if path:
            require_target(capture, path)
    facts = build_facts(capture)
    result = evaluate_cause(cause, facts, HOW_TO_COLLECT)
    lines = [
        f"{cause.id}: {one_line(cause.title)}",
        f"  outcome: {result.outcome}  certainty: {result.certainty:.2f}",
    ]
    lowered = result.cause.severity != cause.severity  # severity_at_most lowered it for these facts
    lines.append(f"  severity: {result.cause.severity}")
    if lowered:
        lines[-1] += f" (lowered from {cause.severity} by {one_line(cause.severity_at_most or '')})"
    if path:
        mount = (facts["derived"].get("target_mount") or {}).get("mountpoint")
        where = f"on {one_line(str(mount))}" if mount else "no mount in the facts holds it"
        lines.append(f"  path: {one_line(path)} ({where})")
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
    return "\n".join(fit_lines(lines + _commands(cause, result, read_only), prose_width(), hanging=4)) + "\n"


def _commands(cause: Cause, result: CauseResult, read_only: bool) -> list[str]:
    """The cause's commands: filled with the facts' values when it fired, else as written."""
    fired = result.outcome == Outcome.FIRED
    steps = result.remediation if fired else list(cause.remediation)
    verify = result.verify if fired else list(cause.verify)
    kept = [s for s in steps if s.effect == "read"] if read_only else steps
    if not kept and not verify:
        return []
    heading = "filled with the values found" if fired else "as written in the rule"
    heading = f"  commands ({heading}):"
    lines = ["", heading, *command_lines(step_records(kept), verify, indent="    ")]
    if len(kept) < len(steps):
        lines.append(f"  ({len(steps) - len(kept)} command(s) that change the host left out: --read-only)")
    return lines


def _value(expression: str, facts: dict[str, Any]) -> str:
    try:
        text = json.dumps(search(expression, facts), default=str)
    except JMESPathError as error:
        text = f"error: {str(error).splitlines()[0]}"
    return one_line(text if len(text) <= 300 else text[:300] + "…")


def probes_table(width: int | None = None) -> str:
    """Each probe: its section and what it reads, then its sources in order (the ones after the
    first are fallbacks), each marked when it needs root; a list when the table cannot fit."""
    rows = []
    for probe in ANALYSED_PROBES:
        rows.append((probe.section, probe.title))
        if not probe.sources:
            rows.append(("", f"paste only: {probe.paste_hint}"))
        for index, source in enumerate(probe.sources):
            marks = [m for m, on in (("fallback", index > 0), ("root", source.needs_root)) if on]
            rows.append(("", f"{source.describe}" + (f" ({', '.join(marks)})" if marks else "")))
    return "\n".join(table(rows, width)) + "\n"


def probes_markdown() -> str:
    """The probe list for docs/probes.md (a test keeps the file current)."""
    lines = [
        "# Probes",
        "",
        "Generated by `gdsdoctor probes --format markdown`; a test keeps it current. Each probe fills",
        "one section of the facts (see `docs/facts/`); its sources are tried in order and the first",
        "one captured is parsed. *root*: the output is incomplete without root (the probe still runs).",
        "",
        "| section | what | sources (in order) | root |",
        "| --- | --- | --- | --- |",
    ]
    for probe in ANALYSED_PROBES:
        sources = "<br>".join(f"`{s.describe}`" for s in probe.sources) or f"paste only: {probe.paste_hint}"
        root = "yes" if any(s.needs_root for s in probe.sources) else ""
        lines.append(f"| `{probe.section}` | {probe.title} | {sources.replace('|', '&#124;')} | {root} |")
    return "\n".join(lines) + "\n"
