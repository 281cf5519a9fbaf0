"""`gdsdoctor explain ID [INPUTS]` and `gdsdoctor probes`: show the reasoning, not just the verdict."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from jmespath.exceptions import JMESPathError

from gdsdoctor.capture.live import capture_live
from gdsdoctor.commands.catalogue import step_records
from gdsdoctor.engine.evaluate import CauseResult, Outcome, render_command
from gdsdoctor.engine.functions import search
from gdsdoctor.engine.rules import PLACEHOLDER, Cause, Signal
from gdsdoctor.errors import UserError, did_you_mean
from gdsdoctor.pipeline import analyze_capture, apply_site, load_inputs, require_target, rules
from gdsdoctor.probes import ANALYSED_PROBES
from gdsdoctor.report.escape import one_line
from gdsdoctor.report.outline import command_lines
from gdsdoctor.report.verdicts import verdicts
from gdsdoctor.textwidth import fit_lines, prose_width, table


def explain_cause(
    cause_id: str,
    inputs: Sequence[Path],
    rules_dirs: Sequence[Path],
    path: str | None = None,
    read_only: bool = False,
    job: dict[str, Any] | None = None,
    site: dict[str, Any] | None = None,
    fmt: str = "text",
) -> str:
    """The reasoning for one cause over the inputs (this host when none), as text or JSON;
    ``path``: the checkpoint path, as ``--path`` gives it to check/analyze (filesystem rules
    judge its mount); ``job``: the checkpoint job (``--params`` and friends); ``site``: the site
    config; ``read_only``: of its commands, only those that change nothing (and the verify ones)."""
    data = explanation(cause_id, inputs, rules_dirs, path, read_only, job, site)
    if fmt == "json":
        return json.dumps(data, indent=2, default=str) + "\n"
    return render_explanation(data)


def explanation(
    cause_id: str,
    inputs: Sequence[Path],
    rules_dirs: Sequence[Path],
    path: str | None = None,
    read_only: bool = False,
    job: dict[str, Any] | None = None,
    site: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """What ``explain`` shows, as data: the outcome, the facts each part read and their values,
    the commands (see :func:`_commands`)."""
    causes = {c.id: c for c in rules(rules_dirs)}
    if cause_id not in causes:
        hint = did_you_mean(cause_id, causes)
        raise UserError(f"no cause with id {cause_id!r}{hint}; `gdsdoctor rules list` shows them")
    cause = causes[cause_id]
    if inputs:
        capture = load_inputs(inputs, path, job)
    else:
        capture = capture_live(Path("/"), path)
        if path:
            require_target(capture, path)
        if job:
            capture.options["job"] = job
    apply_site(capture, site)
    # the whole analysis, as check and analyze run it: the cause judged with the same ranking,
    # --path narrowing, acknowledgements and intent, so explain never contradicts the report
    analysis = analyze_capture(capture, rules_dirs, acknowledgements=(site or {}).get("acknowledge") or ())
    facts = analysis.facts
    (result,) = [r for r in analysis.results if r.cause.id == cause_id]
    before_narrowing = result.narrowed["from"] if result.narrowed else result.cause.severity
    lowered = before_narrowing != cause.severity  # severity_at_most lowered it for these facts
    data: dict[str, Any] = {
        "id": cause.id,
        "title": cause.title,
        "outcome": str(result.outcome),
        "certainty": result.certainty,
        "severity": result.cause.severity,
        "severity_lowered": {"from": cause.severity, "by": cause.severity_at_most} if lowered else None,
        "in_report": in_report(analysis.report, result),
        "path": None,
        "required": [
            {"section": section, "status": (facts.get(section) or {}).get("status", "absent")}
            | {"detail": (facts.get(section) or {}).get("detail", "")}
            for requirement in cause.requires
            for section in ((requirement,) if isinstance(requirement, str) else requirement)
        ],
        "applies_when": _query(cause.applies_when, facts) if cause.applies_when else None,
        "signals": [_signal(signal, result, facts) for signal in cause.signals],
        "vars": [{"name": name, **_query(expression, facts)} for name, expression in cause.vars.items()],
        "missing": result.missing,
        "commands": _commands(cause, result, facts, read_only),
    }
    if path:
        mount = (facts["derived"].get("target_mount") or {}).get("mountpoint")
        data["path"] = {"given": path, "mount": mount}
    return data


def in_report(report: dict[str, Any], result: CauseResult) -> dict[str, Any]:
    """Where check/analyze put the cause in their report over the same inputs, and whether it
    sets the status: its rank among the findings, scope, candidate, the finding that explains
    it, an acknowledgement, --path narrowing, history, or the capability the node does not use."""
    cause_id = result.cause.id
    (verdict,) = [v for v in verdicts(report) if v.id == cause_id]
    finding = verdict.finding or {}
    ranked = [f["id"] for f in report["findings"]]
    past = [f for f in report.get("history", []) if f["id"] == cause_id]
    not_used = [
        u["line"] for u in report["summary"].get("not_used", []) if u["capability"] in result.not_used
    ]
    return {
        "outcome": verdict.outcome,
        "rank": ranked.index(cause_id) + 1 if cause_id in ranked else None,
        "of": len(ranked),
        "sets_status": verdict.fails,
        "scope": verdict.scope,
        "candidate": verdict.candidate,
        "explained_by": finding.get("explained_by") or None,
        "acknowledged": verdict.acknowledged,
        "narrowed": result.narrowed,
        "history": past[0].get("history_reason") if past else None,
        "not_used": not_used[0] if not_used else None,
        "status": report["summary"]["status"],
        "exit_code": report["summary"]["exit_code"],
    }


def _placement_lines(placed: dict[str, Any]) -> list[str]:
    """``in_report`` as the lines under the outcome."""
    status = f"the report's status is {placed['status']} (exit {placed['exit_code']})"
    if placed["rank"] is not None:
        sets = "sets the status" if placed["sets_status"] else "does not set the status"
        said = f"finding {placed['rank']} of {placed['of']}, {placed['scope']} scope: {sets}"
    elif placed["acknowledged"]:
        said = f"set apart by the site's acknowledgement {placed['acknowledged'].get('id')}: not counted"
    elif placed["not_used"]:
        said = placed["not_used"]
    else:
        said = {"clear": "clear", "inconclusive": "inconclusive: listed with what to collect"}.get(
            placed["outcome"], placed["outcome"].replace("_", " ")
        )
    lines = [f"  in the report: {one_line(said)}; {status}"]
    if placed["candidate"]:
        lines.append("    a candidate: critical below the certainty floor, so it caps the status at WARNING")
    if placed["explained_by"]:
        lines.append(f"    folded under {one_line(str(placed['explained_by']))}, which explains it")
    if placed["narrowed"]:
        narrowed = placed["narrowed"]
        lines.append(f"    capped at warning (from {narrowed['from']}): {one_line(narrowed['reason'])}")
    if placed["history"]:
        lines.append(f"    also in history: {one_line(placed['history'])}")
    return lines


def _query(expression: str, facts: dict[str, Any]) -> dict[str, Any]:
    """An expression and its value over the facts (``error`` instead when it cannot be evaluated)."""
    try:
        return {"expression": expression, "value": search(expression, facts)}
    except JMESPathError as error:
        return {"expression": expression, "value": None, "error": str(error).splitlines()[0]}


def _signal(signal: Signal, result: CauseResult, facts: dict[str, Any]) -> dict[str, Any]:
    held = {r.signal.id: r for r in result.signals}
    state = "not evaluated" if signal.id not in held else ("held" if held[signal.id].held else "not held")
    shown = {"id": signal.id, "state": state, "certainty": signal.certainty, "says": signal.says}
    shown["when"] = _query(signal.when, facts)
    shown["evidence"] = _query(signal.evidence, facts) if signal.evidence else None
    return shown


def _commands(cause: Cause, result: CauseResult, facts: dict[str, Any], read_only: bool) -> dict[str, Any]:
    """The cause's commands: filled with the facts' values when it fired; when it did not, as
    written in the rule, except with ``read_only`` (commands meant to be run as they are): then
    filled with what the facts hold, each value they do not hold left as ``<name>`` (which the
    shell refuses to run) and named in ``unfilled`` with what would give it."""
    fired = result.outcome == Outcome.FIRED
    if fired:
        steps, verify, filled = result.remediation, result.verify, "finding"
    elif read_only:
        values = {name: _query(expression, facts)["value"] for name, expression in cause.vars.items()}
        values = {
            name: None if value == [] else value for name, value in values.items()
        }  # none found: <name>
        steps = [replace(s, cmd=line) for s in cause.remediation for line in render_command(s.cmd, values)]
        verify = [line for template in cause.verify for line in render_command(template, values)]
        filled = "facts"
    else:
        steps, verify, filled = list(cause.remediation), list(cause.verify), "rule"
    kept = [s for s in steps if s.effect == "read"] if read_only else steps
    templates = [s.cmd for s in cause.remediation if not read_only or s.effect == "read"] + list(cause.verify)
    shown = {"filled": filled, "remediation": step_records(kept), "verify": verify}
    shown["left_out"] = len(steps) - len(kept)
    shown["unfilled"] = [
        {"name": name, "expression": cause.vars.get(name), "give": _how_to_fill(name, cause)}
        for name in sorted({n for t in templates for n in PLACEHOLDER.findall(t)})
        if any(f"<{name}>" in line for line in [*(s.cmd for s in kept), *verify])
    ]
    return shown


_FILLED = {
    "finding": "filled with the values found",
    "facts": "filled with what these facts hold",
    "rule": "as written in the rule",
}
_FROM_JOB = "the checkpoint job: pass --params (and --gpus, --budget...)"
_FROM_FACTS = (
    "facts these inputs do not hold (the cause did not fire here): give the INPUT where it fires, "
    "or --path DIR (the checkpoint directory), or fill them in by hand"
)


def _how_to_fill(name: str, cause: Cause) -> str:
    """What gives a placeholder its value: the job's options, or the facts its expression reads."""
    expression = cause.vars.get(name)
    if expression is None:
        return "nothing: not a var of the rule; fill it in by hand"
    return _FROM_JOB if expression.startswith("job.") else _FROM_FACTS


def render_explanation(data: dict[str, Any]) -> str:
    lines = [
        f"{data['id']}: {one_line(data['title'])}",
        f"  outcome: {data['outcome']}  certainty: {data['certainty']:.2f}",
        f"  severity: {data['severity']}",
    ]
    placement = _placement_lines(data["in_report"])
    if data["severity_lowered"]:
        lowered = data["severity_lowered"]
        lines[-1] += f" (lowered from {lowered['from']} by {one_line(lowered['by'] or '')})"
    lines += placement
    if data["path"]:
        mount = data["path"]["mount"]
        where = f"on {one_line(str(mount))}" if mount else "no mount in the facts holds it"
        lines.append(f"  path: {one_line(data['path']['given'])} ({where})")
    lines.append("  required facts:")
    for item in data["required"]:
        lines.append(f"    {item['section']}: {item['status']} {one_line(item['detail'])}".rstrip())
    if data["applies_when"]:
        lines.append(f"  applies when {_shown(data['applies_when'])}")
    lines.append("  signals:")
    for signal in data["signals"]:
        lines.append(
            f"    [{signal['state']}] {signal['certainty']:+.2f} {signal['id']}: {one_line(signal['says'])}"
        )
        lines.append(f"        when {_shown(signal['when'])}")
        if signal["evidence"]:
            lines.append(f"        evidence {_shown(signal['evidence'])}")
    for var in data["vars"]:
        lines.append(f"  var {var['name']} = {_shown(var)}")
    return "\n".join(fit_lines(lines + _command_text(data["commands"]), prose_width(), hanging=4)) + "\n"


def _shown(query: dict[str, Any]) -> str:
    """``expression → value`` (a long value cut)."""
    if "error" in query:
        return f"{query['expression']} → error: {query['error']}"
    text = json.dumps(query["value"], default=str)
    return f"{query['expression']} → " + one_line(text if len(text) <= 300 else text[:300] + "…")


def _command_text(commands: dict[str, Any]) -> list[str]:
    if not commands["remediation"] and not commands["verify"]:
        return []
    lines = ["", f"  commands ({_FILLED[commands['filled']]}):"]
    lines += command_lines(commands["remediation"], commands["verify"], indent="    ")
    if commands["left_out"]:
        lines.append(f"  ({commands['left_out']} command(s) that change the host left out: --read-only)")
    by_source: dict[str, list[str]] = {}
    for item in commands["unfilled"]:
        by_source.setdefault(item["give"], []).append(f"<{item['name']}>")
    lines += [f"  {', '.join(names)} unfilled: from {give}" for give, names in by_source.items()]
    return lines


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
