"""Reading a recorded timeline (``watch/timeline.jsonl``, written by `gdsdoctor watch --record`):
the parser of the ``watch`` facts section (:mod:`gdsdoctor.probes.watch` declares the probe and
imports this module when a timeline is parsed: the analysis it needs costs a `check` without a
timeline nothing).

One JSON object a line: a ``header`` (the path, its devices, what does not change, the job, what
cannot be measured), then ``sample`` and ``event`` records in time order, and an ``end``. The
parser is pure: phases, collapses and limiters are found again from the records, so
``analyze`` of a recording gives the findings the watch gave. A recording is untrusted input:
records of the wrong shape are skipped and counted, never trusted.
"""

from __future__ import annotations

import json
from typing import Any

from gdsdoctor.checkpoint import DEFAULT_BUDGET, limiters, records, stall
from gdsdoctor.checkpoint.phases import (
    Interval,
    clock,
    find_phases,
    intervals,
    rate_text,
    size_text,
    write_counter,
)
from gdsdoctor.checkpoint.records import ARTIFACT, FORMAT, MAX_RECORDS
from gdsdoctor.checkpoint.series import phase_series
from gdsdoctor.errors import EstimateError, ParseError
from gdsdoctor.probes.base import Section, head_lines, src


def read_records(text: str) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], int]:
    """The header, samples and events (each with its ``line``), and how many lines were skipped."""
    head: dict[str, Any] | None = None
    samples: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    skipped = 0
    for number, raw in enumerate(head_lines(text, MAX_RECORDS), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            record = None
        kind = record.get("type") if isinstance(record, dict) else None
        if kind == "header" and head is None and record.get("format") == FORMAT:
            head = records.header(record)
        elif kind == "sample" and _is_time(record.get("t")):
            samples.append(records.sample(record, number))
        elif kind == "event" and _is_time(record.get("t")) and isinstance(record.get("kind"), str):
            events.append(records.event(record, number))
        elif kind not in ("end", "phase"):
            skipped += 1
    if head is None:
        raise ParseError(f"not a gdsdoctor watch timeline (no {FORMAT} header line)")
    return head, samples, events, skipped


def _is_time(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 1e11


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def analyse(
    head: dict[str, Any],
    samples: list[dict[str, Any]],
    events: list[dict[str, Any]],
    artifact: str = ARTIFACT,
) -> dict[str, Any]:
    """Phases with their limiters and events, collapses, and the measured stall against the job."""
    resolved, static = _mapping(head.get("devices")), _mapping(head.get("static"))
    top = resolved.get("top") if isinstance(resolved.get("top"), str) else None
    series: list[Interval] = intervals(samples, top)
    phases = find_phases(series)
    for index, phase in enumerate(phases):
        win = limiters.window(phase, samples, events, resolved, static)
        phase["index"] = index
        phase["limiters"] = limiters.limiters(win)
        phase["events"] = [e for e in win["events"] if limiters.on_device(e, win["devices"])]
        phase["failed"] = any(lim["kind"] == "kernel_errors" for lim in phase["limiters"])
        phase["io"] = limiters.io_mode(win)
        phase["queue_depth"] = static.get("queue_depth", {}).get(top) if top else None
        phase["series"] = phase_series(phase, samples, events, top, win["devices"])
        phase.pop("rates")
        _annotate(phase, top or "the NFS mount", artifact)
    return {
        "path": resolved.get("path"),
        "mount": resolved.get("mount"),
        "fstype": resolved.get("fstype"),
        "device": top,
        "devices": [d for d in [top, *resolved.get("below", [])] if isinstance(d, str)],
        "measured": any(isinstance(write_counter(s, top), int) for s in samples),
        "notes": [str(n)[:300] for n in head.get("notes") or [] if isinstance(n, str)],
        "sample_count": len(samples),
        "event_count": len(events),
        "duration_s": round(samples[-1]["t"] - samples[0]["t"], 3) if len(samples) > 1 else 0.0,
        "phases": phases,
        "collapses": [c for p in phases for c in p["collapses"]],
        "limiters": [lim for p in phases for lim in p["limiters"]],
        "failed_phases": [p for p in phases if p["failed"]],
        "stall": stall_against_budget(phases, _mapping(head.get("job")), artifact),
    }


def _annotate(phase: dict[str, Any], where: str, artifact: str) -> None:
    """Evidence sentences, with provenance pointing at the timeline line where it happened."""
    state = "still writing when the watch ended" if phase["ongoing"] else f"ended {clock(phase['end'])}"
    phase["says"] = (
        f"write phase from {clock(phase['start'])} ({state}): {size_text(phase['bytes'])} in "
        f"{phase['duration_s']:g} s, {rate_text(phase['bytes_per_s'])} on {where}"
    )
    phase["src"] = src(artifact, phase["line"], phase["says"])
    for collapse in phase["collapses"]:
        cause = _named_cause(phase["limiters"], collapse["at"])
        fell = (
            f"write throughput fell from {rate_text(collapse['from_bytes_per_s'])} to "
            f"{rate_text(collapse['to_bytes_per_s'])} for {collapse['for_s']:g} s"
        )
        collapse["says"] = f"{cause['says']}; {fell}" if cause else f"at {clock(collapse['at'])} {fell}"
        collapse["src"] = src(artifact, collapse["line"], collapse["says"])
    for limiter in phase["limiters"]:
        limiter["src"] = src(artifact, limiter["line"], limiter["says"])


def _named_cause(found: list[dict[str, Any]], at: float) -> dict[str, Any] | None:
    """What happened when the throughput fell: a kernel or udev record first, then a state change."""
    near = [
        lim
        for lim in found
        if lim["kind"] in ("controller_reset", "path_lost", "kernel_errors")
        and abs(lim["at"] - at) <= limiters.EVENT_MARGIN_S
    ]
    return min(near, key=lambda lim: ("event_kind" not in lim, abs(lim["at"] - at)), default=None)


def stall_against_budget(
    phases: list[dict[str, Any]], job: dict[str, Any], artifact: str
) -> dict[str, Any] | None:
    """The job's checkpoint written at the rate of the largest phase: the stall it costs each
    checkpoint, against the budget (the same model as `gdsdoctor estimate`)."""
    done = [p for p in phases if p["bytes_per_s"] > 0]
    if not done or not job.get("params"):
        return None
    largest = max(done, key=lambda p: p["bytes"])
    try:
        result = stall.run(
            str(job["params"]),
            float(largest["bytes_per_s"]),
            preset=job.get("preset") or stall.DEFAULT_PRESET,
            interval=str(job.get("interval") or "1h"),
            gpus=job.get("gpus") or 1,
            budget=str(job.get("budget") or DEFAULT_BUDGET),
        )
    except EstimateError as error:
        return {"error": str(error)}
    budget = result.budget
    says = (
        f"the {size_text(result.total_bytes)} checkpoint of {job['params']} parameters at the "
        f"{rate_text(largest['bytes_per_s'])} measured from {clock(largest['start'])} stalls the GPUs "
        f"{stall.format_duration(result.stall_s)} ({result.wall_fraction:.1%} of wall time, budget "
        f"{budget.fraction:.1%})"
        if budget
        else ""
    )
    return {
        "phase": largest["index"],
        "checkpoint_bytes": result.total_bytes,
        "stall_s": result.stall_s,
        "wall_fraction": result.wall_fraction,
        "budget_fraction": budget.fraction if budget else None,
        "budget_met": budget.met if budget else None,
        "needed_bytes_per_s": budget.required_bytes_per_s if budget else None,
        "share_text": f"{result.wall_fraction:.1%}",
        "budget_text": f"{budget.fraction:.1%}" if budget else None,
        "says": says,
        "src": src(artifact, largest["line"], says),
    }


def parse(text: str, artifact: str) -> Section:
    head, samples, events, skipped = read_records(text)
    section = analyse(head, samples, events, artifact)
    section["skipped_records"] = skipped
    return section
