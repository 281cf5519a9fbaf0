"""Write phases in a timeline (pure): a checkpoint is a burst of writes on the checkpoint's device.

A phase starts when the write rate rises above max(50 MB/s, 10 % of the peak seen so far) and
ends once it has stayed below for 3 s (its end is the last second above). Within a phase, a
*collapse* is a run of at least 2 s at under half the rate the phase had just before it.

Times are wall-clock seconds (the samples' ``t``); each interval is the bytes written between
two samples of the device that carries the filesystem (``top``), or the NFS client's bytes.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, NamedTuple

MIN_PHASE_RATE = 50e6  # bytes/s
PEAK_SHARE = 0.10
END_AFTER_S = 3.0
IDLE_END_S = 30.0  # --until-idle: the watch ends this long after the last phase (or its start)
COLLAPSE_RATIO = 0.5
COLLAPSE_MIN_S = 2.0
LEVEL_WINDOW = 3  # intervals whose median is the rate a collapse is measured against


class Interval(NamedTuple):
    start: float
    end: float
    bytes: int
    line: int  # timeline line of the sample that closes it (provenance)

    @property
    def rate(self) -> float:
        return self.bytes / (self.end - self.start) if self.end > self.start else 0.0


def write_counter(sample: dict[str, Any], top: str | None) -> int | None:
    """Cumulative bytes written to the checkpoint filesystem at a sample, if it was measured: its
    block device's, else the NFS client's, else (other network filesystems) its writers'."""
    if top:
        row = (sample.get("disks") or {}).get(top)
        return row.get("write_bytes") if isinstance(row, dict) else None
    for key in ("nfs", "writers"):
        if isinstance(counters := sample.get(key), dict) and "write_bytes" in counters:
            return counters["write_bytes"]
    return None


def intervals(samples: list[dict[str, Any]], counter: Any) -> list[Interval]:
    """Bytes written between consecutive samples (``counter(sample)`` is cumulative or None; a
    counter that went backwards, a device removed and re-added, starts again from zero)."""
    found: list[Interval] = []
    previous: tuple[float, int] | None = None
    for sample in samples:
        value = counter(sample)
        if not isinstance(value, int):
            previous = None
            continue
        t = float(sample["t"])
        if previous is not None and t > previous[0]:
            found.append(Interval(previous[0], t, max(0, value - previous[1]), int(sample.get("line", 0))))
        previous = (t, value)
    return found


class PhaseFinder:
    """Finds phases as intervals arrive (the watch adds one a tick; a long watch must not redo the
    whole timeline each tick): the rules of the module docstring, one interval at a time."""

    def __init__(self) -> None:
        self.series: list[Interval] = []
        self.peak = 0.0
        self._found: list[dict[str, Any]] = []  # {"first", "last", "ended"} by index into series
        self._current: dict[str, Any] | None = None
        self._built: dict[int, dict[str, Any]] = {}  # ended phases, built once

    def add(self, interval: Interval) -> None:
        index = len(self.series)
        self.series.append(interval)
        self.peak = max(self.peak, interval.rate)
        if interval.rate > max(MIN_PHASE_RATE, PEAK_SHARE * self.peak):
            if self._current is None:
                self._current = {"first": index, "last": index, "ended": False}
                self._found.append(self._current)
            self._current["last"] = index
        elif (
            self._current is not None and interval.end - self.series[self._current["last"]].end >= END_AFTER_S
        ):
            self._current["ended"] = True
            self._current = None

    def phases(self) -> list[dict[str, Any]]:
        found = []
        for number, raw in enumerate(self._found):
            if raw["ended"]:
                if number not in self._built:
                    self._built[number] = _phase(self.series, raw)
                found.append(self._built[number])
            else:
                found.append(_phase(self.series, raw))
        return found


def find_phases(series: list[Interval]) -> list[dict[str, Any]]:
    """The write phases of a series of intervals (see the module docstring)."""
    finder = PhaseFinder()
    for interval in series:
        finder.add(interval)
    return finder.phases()


def _phase(series: list[Interval], found: dict[str, Any]) -> dict[str, Any]:
    inside = series[found["first"] : found["last"] + 1]
    start, end = inside[0].start, inside[-1].end
    written = sum(i.bytes for i in inside)
    duration = end - start
    return {
        "start": start,
        "end": end,
        "duration_s": round(duration, 3),
        "bytes": written,
        "bytes_per_s": written / duration if duration > 0 else 0.0,
        "peak_bytes_per_s": max(i.rate for i in inside),
        # A synchronous checkpoint holds the GPUs for the whole write.
        "stall_s": round(duration, 3),
        "ongoing": not found["ended"],
        "line": inside[0].line,
        "collapses": collapses(inside),
        "rates": [i.rate for i in inside],  # for the limiters; not kept in the facts
    }


def collapses(inside: list[Interval]) -> list[dict[str, Any]]:
    """Runs of at least COLLAPSE_MIN_S at under COLLAPSE_RATIO of the rate just before them."""
    found: list[dict[str, Any]] = []
    levels: list[float] = []
    run: list[Interval] = []
    level = 0.0
    for interval in inside:
        if run or (levels and interval.rate < COLLAPSE_RATIO * statistics.median(levels[-LEVEL_WINDOW:])):
            if not run:
                level = statistics.median(levels[-LEVEL_WINDOW:])
            if interval.rate < COLLAPSE_RATIO * level:
                run.append(interval)
                continue
            _close_run(run, level, found, recovered=True)
            run = []
        levels.append(interval.rate)
    _close_run(run, level, found, recovered=False)
    return found


def _close_run(run: list[Interval], level: float, found: list[dict[str, Any]], recovered: bool) -> None:
    if not run or run[-1].end - run[0].start < COLLAPSE_MIN_S:
        return
    lasted = run[-1].end - run[0].start
    found.append(
        {
            "at": run[0].start,
            "for_s": round(lasted, 3),
            "from_bytes_per_s": level,
            "to_bytes_per_s": sum(i.bytes for i in run) / lasted,
            "recovered": recovered,
            "line": run[0].line,
        }
    )


def idle_for(phases: list[dict[str, Any]], started: float, now: float) -> float:
    """Seconds since the last phase ended (or the watch started): --until-idle stops at IDLE_END_S."""
    if phases and phases[-1]["ongoing"]:
        return 0.0
    return now - (phases[-1]["end"] if phases else started)


def clock(t: float) -> str:
    """A time as evidence names it: HH:MM:SS, UTC (a recording replays the same anywhere)."""
    return time.strftime("%H:%M:%S", time.gmtime(t))


def rate_text(bytes_per_s: float) -> str:
    for unit, size in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if bytes_per_s >= size:
            return f"{bytes_per_s / size:.3g} {unit}"
    return f"{bytes_per_s:.0f} B/s"


def size_text(size: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size:.0f} B"
