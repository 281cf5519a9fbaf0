"""What a terminal shows during a watch: per-device write throughput, the current phase and the
events as they come (rich.live); and the one-line forms for a pipe or a log."""

from __future__ import annotations

from typing import Any

from gdsdoctor.checkpoint.phases import clock, rate_text, size_text
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
    return (
        f"phase from {clock(phase['start'])} ({state}): {size_text(phase['bytes'])} in "
        f"{phase['duration_s']:g} s, {rate_text(phase['bytes_per_s'])}"
    )


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
    for event in list(state.events)[-SHOWN_EVENTS:]:
        parts.append(Text(event_line(event), style="yellow"))
    for note in state.head.get("notes", []):
        parts.append(Text(one_line(f"not measured: {note}"), style="dim"))
    return Group(*parts)
