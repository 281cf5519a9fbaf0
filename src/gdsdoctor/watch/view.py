"""What a terminal shows during a watch: per-device write throughput, the current phase and the
events as they come (rich.live); and the one-line forms for a pipe or a log."""

from __future__ import annotations

import time
from typing import Any

from gdsdoctor.checkpoint import phases
from gdsdoctor.checkpoint.phases import clock, rate_text, size_text
from gdsdoctor.checkpoint.records import ARTIFACT
from gdsdoctor.probes.watch_timeline import stall_against_budget
from gdsdoctor.report.escape import one_line
from gdsdoctor.watch.session import State

SHOWN_EVENTS = 8


def device_rates(state: State) -> list[tuple[str, float]]:
    """Each sampled device's write rate over the last interval."""
    if len(state.samples) < 2:
        return []
    before, now = state.samples[-2], state.samples[-1]
    span = now["t"] - before["t"]
    rates = []
    for name, row in (now.get("disks") or {}).items():
        old = (before.get("disks") or {}).get(name)
        if old and span > 0:
            rates.append((name, max(0, row["write_bytes"] - old["write_bytes"]) / span))
    return rates


def phase_line(phase: dict[str, Any]) -> str:
    state = "writing" if phase["ongoing"] else f"ended {clock(phase['end'])}"
    mode = (phase.get("io") or {}).get("mode")  # told once the phase is analysed
    how = {"direct": ", direct I/O", "buffered": ", buffered (page cache)", "mixed": ", direct and buffered"}
    return (
        f"phase from {clock(phase['start'])} ({state}): {size_text(phase['bytes'])} in "
        f"{phase['duration_s']:g} s, {rate_text(phase['bytes_per_s'])}{how.get(str(mode), '')}"
    )


def _minutes(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return (
        f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        if seconds >= 3600
        else (f"{seconds // 60}:{seconds % 60:02d}")
    )


def ending_line(state: State, now: float) -> str:
    """How long it has run and how it will end: the --duration left, the --until-idle countdown
    (none while a phase is being written), and that Ctrl-C ends it with the report so far."""
    started = state.started if state.started is not None else now
    parts = [f"elapsed {_minutes(now - started)}"]
    if state.duration_s is not None:
        parts.append(f"ends in {_minutes(state.duration_s - (now - started))} (--duration)")
    elif state.until_idle:
        if state.phases and state.phases[-1]["ongoing"]:
            parts.append(f"--until-idle: ends {phases.IDLE_END_S:g} s after this write")
        else:
            left = phases.IDLE_END_S - phases.idle_for(state.phases, started, now)
            parts.append(f"ends in {max(0, round(left))} s unless a write starts (--until-idle)")
    parts.append("Ctrl-C ends it with the report")
    return " · ".join(parts)


def stall_line(state: State) -> str | None:
    """With a job (--params): the stall its checkpoint costs at the rate measured so far, and the
    budget; the same model and words as the report's finding."""
    job = state.head.get("job") or {}
    if not job.get("params"):
        return None
    numbered = [{**phase, "index": index} for index, phase in enumerate(state.phases)]
    found = stall_against_budget(numbered, job, ARTIFACT)
    if found is None:
        return f"--params {job['params']}: the projected stall comes with the first write phase"
    if "error" in found:
        return one_line(f"--params {job['params']}: {found['error']}")
    verdict = {True: "within the budget", False: "OVER the budget", None: ""}[found["budget_met"]]
    return one_line(f"projected: {found['says']}" + (f": {verdict}" if verdict else ""))


def event_line(event: dict[str, Any]) -> str:
    """One event, every character of the kernel's or udev's text shown, none obeyed."""
    device = event.get("device") or "-"
    return one_line(f"{clock(event['t'])} {event['kind']} {device}: {str(event.get('message', ''))[:120]}")


def header_lines(head: dict[str, Any]) -> list[str]:
    """What is watched and what cannot be measured, before the first sample."""
    devices = head["devices"]
    where = f"{devices.get('path')} ({devices.get('fstype')} on {devices.get('top') or '-'})"
    watched = f"watching {where}, every {head['every_s']:g} s"
    return [one_line(watched), *(one_line(f"not measured: {note}") for note in head.get("notes", []))]


def renderable(state: State) -> Any:
    """The live view: a table of devices, the phase, the events (all text escaped)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    devices = state.head["devices"]
    title = f"gdsdoctor watch {devices.get('path')} ({devices.get('fstype')} on {devices.get('top') or '-'})"
    table = Table(expand=False)
    table.add_column("device")
    table.add_column("write", justify="right")
    for name, rate in device_rates(state):
        table.add_row(Text(one_line(name)), rate_text(rate))
    parts: list[Any] = [Text(one_line(title), style="bold"), table]
    current = state.phases[-1] if state.phases else None
    parts.append(Text(phase_line(current) if current else "no write phase yet"))
    if (projected := stall_line(state)) is not None:
        parts.append(Text(projected, style="bold"))
    for event in list(state.events)[-SHOWN_EVENTS:]:
        parts.append(Text(event_line(event), style="yellow"))
    for note in state.head.get("notes", []):
        parts.append(Text(one_line(f"not measured: {note}"), style="dim"))
    parts.append(Text(ending_line(state, time.time()), style="dim"))
    return Group(*parts)
