"""The checkpoint's timeline as a chart, from a ``watch`` record (live or replayed): the write rate
over time for the filesystem's device and each device under it, the phases shaded, a collapse
shaded red and named by what caused it, the limiters and the kernel's events marked at their
time, and below, the dirty pages and the writes in flight (against the queue depth).

It draws the ``series`` each phase carries (checkpoint/series.py) as it is: the record is the
chart's only input, so a chart of a recording is the chart the watch would have drawn.
"""

from __future__ import annotations

import itertools
import statistics
import textwrap
from typing import Any

from gdsdoctor.checkpoint.phases import clock, rate_text, size_text
from gdsdoctor.report.svg import (
    AMBER,
    GRID,
    INK,
    MUTED,
    RED,
    RED_FILL,
    document,
    esc,
    line,
    nice_ticks,
    rect,
    text,
)

WIDTH = 960
LEFT, RIGHT = 78, 24
MAIN_H, DIRTY_H, QUEUE_H = 220, 56, 56
TOP_RATE = "#1565c0"
DEVICE_COLOURS = ("#2e7d32", "#6a1b9a", "#ef6c00", "#00838f", "#5d4037", "#ad1457", "#455a64", "#9e9d24")
PHASE_FILL, COLLAPSE_FILL = "#e3f2fd", RED_FILL
TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400)
MARK_KINDS = {
    "controller_reset",
    "path_lost",
    "kernel_errors",
    "slow_sibling",
    "gds_compat",
    "rdma_link_down",
}


def render_svg(watch: dict[str, Any]) -> str:
    """The chart of a ``watch`` facts section (its phases and their series)."""
    phases = [p for p in watch.get("phases") or [] if isinstance(p, dict)]
    points = _points(phases)
    device = str(watch.get("device") or "the mount")
    where = f"{watch.get('fstype') or '?'} on {device}"
    title = f"Checkpoint writes on {watch.get('path') or '?'} ({where}), times UTC"
    if len(points) < 2:
        body = [
            text(LEFT, 28, title, 14, INK, weight="bold"),
            text(LEFT, 56, "no write phase was recorded", 12, MUTED),
        ]
        return document(WIDTH, 80, body, "gdsdoctor watch timeline", title)
    body = [text(16, 24, title, 14, INK, weight="bold")]
    t0, t1 = min(p["t"] for p in points) - _step(points), max(p["t"] for p in points)
    t0 = min([t0, *(p["start"] for p in phases)])
    t1 = max([t1, *(p["end"] for p in phases)])
    plot = _Plot(t0, max(t1, t0 + 1), top=68, height=MAIN_H)
    body += _legend(points, device, 40)
    peak = max(
        [p["bytes_per_s"] for p in points] + [r for p in points for r in (p.get("devices") or {}).values()]
    )
    ticks = nice_ticks(peak * 1.08 if peak > 0 else 1e6)
    body += _axis(plot, ticks)
    shading = [_phase(plot, phase, index) for index, phase in enumerate(phases)]
    body += [part for shade, _words in shading for part in shade]
    body += [part for _shade, words in shading for part in words]  # over every phase's shading
    body += _rate_lines(plot, points, ticks[-1])
    body += _marks(plot, phases, points)
    y = plot.top + plot.height + 22
    body += _time_axis(plot, y - 4)
    y += 16
    body += _dirty(plot, points, y)
    y += DIRTY_H + 14
    body += _queue(plot, points, phases, y)
    y += QUEUE_H + 8
    stall = (watch.get("stall") or {}).get("says") if isinstance(watch.get("stall"), dict) else None
    for words in textwrap.wrap(f"stall: {stall}", 130)[:3] if stall else []:
        body.append(text(16, y + 14, words, 11, INK))
        y += 16
    return document(WIDTH, y + 10, body, "gdsdoctor watch timeline", title)


class _Plot:
    def __init__(self, t0: float, t1: float, top: float, height: float) -> None:
        self.t0, self.t1, self.top, self.height = t0, t1, top, height
        self.left, self.width = LEFT, WIDTH - LEFT - RIGHT

    def x(self, t: float) -> float:
        return self.left + (min(max(t, self.t0), self.t1) - self.t0) / (self.t1 - self.t0) * self.width

    def y(
        self, value: float, top_value: float, top: float | None = None, height: float | None = None
    ) -> float:
        top = self.top if top is None else top
        height = self.height if height is None else height
        return top + height - (min(value, top_value) / top_value * height if top_value > 0 else 0)


def _points(phases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every phase's points once (phases close together share their margins), in time order."""
    seen: dict[float, dict[str, Any]] = {}
    for phase in phases:
        for point in phase.get("series") or []:
            if isinstance(point, dict) and isinstance(point.get("t"), int | float):
                seen.setdefault(float(point["t"]), point)
    return [seen[t] for t in sorted(seen)]


def _step(points: list[dict[str, Any]]) -> float:
    """The sampling interval (the median gap between points)."""
    gaps = [b["t"] - a["t"] for a, b in itertools.pairwise(points) if b["t"] > a["t"]]
    return statistics.median(gaps) if gaps else 1.0


def _legend(points: list[dict[str, Any]], device: str, y: float) -> list[str]:
    names = sorted({name for p in points for name in (p.get("devices") or {})})
    entries = [(f"{device} (written)", TOP_RATE, 3.0)]
    entries += [(name, DEVICE_COLOURS[i % len(DEVICE_COLOURS)], 1.5) for i, name in enumerate(names[:8])]
    parts, x = [], 16.0
    for name, colour, width in entries:
        parts += [line(x, y, x + 22, y, colour, width), text(x + 27, y + 4, name, 11, MUTED, limit=28)]
        x += 27 + 7 * min(len(name), 28) + 14
    parts += [rect(x, y - 6, 14, 12, PHASE_FILL), text(x + 19, y + 4, "write phase", 11, MUTED)]
    x += 19 + 7 * 11 + 14
    parts += [rect(x, y - 6, 14, 12, COLLAPSE_FILL, RED), text(x + 19, y + 4, "collapse", 11, RED)]
    x += 19 + 7 * 8 + 14
    parts += [
        f'<path d="M{x},{y - 6} l6,10 l6,-10 z" fill="{RED}"/>',
        text(x + 17, y + 4, "kernel event", 11, RED),
    ]
    return parts


def _axis(plot: _Plot, ticks: list[float]) -> list[str]:
    parts = [rect(plot.left, plot.top, plot.width, plot.height, "#ffffff", GRID)]
    for value in ticks:
        y = plot.y(value, ticks[-1])
        parts.append(line(plot.left, y, plot.left + plot.width, y, GRID))
        parts.append(text(plot.left - 6, y + 4, rate_text(value) if value else "0", 10, MUTED, anchor="end"))
    return parts


def _phase(plot: _Plot, phase: dict[str, Any], index: int) -> tuple[list[str], list[str]]:
    """The phase's and its collapses' shading, and their words."""
    x1, x2 = plot.x(phase["start"]), plot.x(phase["end"])
    mode = (phase.get("io") or {}).get("mode")
    how = {"direct": "direct I/O", "buffered": "buffered", "mixed": "direct + buffered"}.get(str(mode), "")
    words = " · ".join(
        w
        for w in (
            f"phase {index + 1}",
            size_text(phase.get("bytes", 0)),
            rate_text(phase.get("bytes_per_s", 0)),
            how,
        )
        if w
    )
    shade = [rect(x1, plot.top, max(x2 - x1, 2), plot.height, PHASE_FILL, opacity="0.8")]
    said = [text(x1 + 4, plot.top + 14 + 14 * (index % 2), words, 11, TOP_RATE, limit=60)]
    for collapse in phase.get("collapses") or []:
        c1, c2 = plot.x(collapse["at"]), plot.x(collapse["at"] + collapse.get("for_s", 0))
        shade.append(rect(c1, plot.top, max(c2 - c1, 2), plot.height, COLLAPSE_FILL, opacity="0.9"))
        fell = (
            f"collapse: {rate_text(collapse['from_bytes_per_s'])} → {rate_text(collapse['to_bytes_per_s'])}"
        )
        said.append(
            f"<g><title>{esc(collapse.get('says', fell))}</title>"
            + text(c1 + 4, plot.top + plot.height - 8, fell, 11, RED, limit=48)
            + "</g>"
        )
    return shade, said


def _rate_lines(plot: _Plot, points: list[dict[str, Any]], top_value: float) -> list[str]:
    step = _step(points)
    parts = [_steps(plot, points, lambda p: p["bytes_per_s"], top_value, step, TOP_RATE, 2.5)]
    names = sorted({name for p in points for name in (p.get("devices") or {})})
    for index, name in enumerate(names[:8]):
        colour = DEVICE_COLOURS[index % len(DEVICE_COLOURS)]
        parts.append(
            _steps(
                plot, points, lambda p, n=name: (p.get("devices") or {}).get(n), top_value, step, colour, 1.2
            )
        )
    return parts


def _steps(
    plot: _Plot,
    points: list[dict[str, Any]],
    value: Any,
    top_value: float,
    step: float,
    colour: str,
    width: float,
    top: float | None = None,
    height: float | None = None,
) -> str:
    """A step line: each point's value held over the interval it closes (a gap breaks it)."""
    path, previous = [], None
    for point in points:
        number = value(point)
        if not isinstance(number, int | float):
            previous = None
            continue
        start = point["t"] - step if previous is None or point["t"] - previous > 3 * step else previous
        y = plot.y(number, top_value, top, height)
        command = "M" if previous is None or point["t"] - previous > 3 * step else "L"
        path.append(f"{command}{plot.x(start):.1f},{y:.1f} L{plot.x(point['t']):.1f},{y:.1f}")
        previous = point["t"]
    d = " ".join(path)
    return f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="{width:g}" stroke-linejoin="round"/>'


def _marks(plot: _Plot, phases: list[dict[str, Any]], points: list[dict[str, Any]]) -> list[str]:
    """Kernel events (red triangles at their time, a line down the plot), limiters with a time
    (their kind beside a tick), and the errors counted in the samples (red dots at the bottom)."""
    parts: list[str] = []
    for phase in phases:
        for event in phase.get("events") or []:
            x = plot.x(event["t"])
            parts.append(line(x, plot.top, x, plot.top + plot.height, RED, 1, "2 3"))
            who = f"{event.get('kind')} {event.get('device') or ''}"
            said = f"{clock(event['t'])} {who}: {event.get('message', '')}"
            triangle = f'<path d="M{x - 6:.1f},{plot.top - 11:.1f} l6,10 l6,-10 z" fill="{RED}"/>'
            parts.append(f"<g><title>{esc(said, 240)}</title>{triangle}</g>")
        shown: list[tuple[float, str]] = []
        for limiter in phase.get("limiters") or []:
            kind = str(limiter.get("kind"))
            if kind not in MARK_KINDS or not isinstance(limiter.get("at"), int | float):
                continue
            x = plot.x(limiter["at"])
            if any(k == kind and abs(s - x) < 60 for s, k in shown):  # the same cause told twice
                continue
            row = sum(1 for s, _k in shown if abs(s - x) < 120)
            shown.append((x, kind))
            y = plot.top + 44 + 14 * row
            parts.append(
                f"<g><title>{esc(limiter.get('says', ''), 300)}</title>"
                + line(x, y - 10, x, y + 2, AMBER, 2)
                + text(
                    x + 4, y, str(limiter.get("kind")).replace("_", " "), 11, AMBER, weight="bold", limit=24
                )
                + "</g>"
            )
    for point in points:
        if point.get("errors"):
            x = plot.x(point["t"])
            parts.append(
                f'<circle cx="{x:.1f}" cy="{plot.top + plot.height - 4:.1f}" r="4" fill="{RED}">'
                f"<title>{esc(point['errors'])} kernel error(s) at {esc(clock(point['t']))}</title></circle>"
            )
    return parts


def _time_axis(plot: _Plot, y: float) -> list[str]:
    span = plot.t1 - plot.t0
    step = next((s for s in TIME_STEPS if span / s <= 8), TIME_STEPS[-1])
    first = (int(plot.t0) // step + 1) * step
    parts = []
    t = float(first)
    while t <= plot.t1:
        x = plot.x(t)
        parts.append(line(x, plot.top + plot.height, x, plot.top + plot.height + 4, MUTED))
        parts.append(text(x, y + 8, clock(t), 10, MUTED, anchor="middle"))
        t += step
    return parts


def _dirty(plot: _Plot, points: list[dict[str, Any]], top: float) -> list[str]:
    values = [p["dirty_bytes"] for p in points if isinstance(p.get("dirty_bytes"), int | float)]
    whose = next((p.get("dirty_of") for p in points if p.get("dirty_of")), None)
    label = {"device": "dirty pages (the device's own)", "host": "dirty pages (the whole host's)"}
    parts = [rect(plot.left, top, plot.width, DIRTY_H, "#ffffff", GRID)]
    if not values:
        return [*parts, text(plot.left + 8, top + 30, "not measured", 11, MUTED)]
    peak = max(values) or 1
    parts.append(text(plot.left - 6, top + 20, size_text(peak), 10, MUTED, anchor="end"))
    parts.append(text(plot.left + 6, top + 12, label.get(str(whose), "dirty pages"), 10, MUTED))
    parts.append(
        _steps(
            plot,
            points,
            lambda p: p.get("dirty_bytes"),
            peak,
            _step(points),
            "#78909c",
            1.5,
            top + 4,
            DIRTY_H - 4,
        )
    )
    return parts


def _queue(plot: _Plot, points: list[dict[str, Any]], phases: list[dict[str, Any]], top: float) -> list[str]:
    values = [p["inflight"] for p in points if isinstance(p.get("inflight"), int)]
    depth = next((p.get("queue_depth") for p in phases if isinstance(p.get("queue_depth"), int)), None)
    parts = [rect(plot.left, top, plot.width, QUEUE_H, "#ffffff", GRID)]
    words = "writes in flight" + (f" (queue depth {depth})" if depth else "")
    parts.append(text(plot.left + 6, top + 12, words, 10, MUTED))
    if not values:
        return [*parts, text(plot.left + 8, top + 32, "not measured", 11, MUTED)]
    scale = max(max(values), 1)
    if depth and depth <= 2 * scale:  # the depth drawn only where the writes come near it
        scale = max(scale, depth)
        y = plot.y(depth, scale, top + 16, QUEUE_H - 18)
        parts.append(line(plot.left, y, plot.left + plot.width, y, AMBER, 1, "4 3"))
    parts.append(text(plot.left - 6, top + 20, str(scale), 10, MUTED, anchor="end"))
    parts.append(
        _steps(
            plot,
            points,
            lambda p: p.get("inflight"),
            scale,
            _step(points),
            "#ef6c00",
            1.5,
            top + 4,
            QUEUE_H - 4,
        )
    )
    return parts
