"""Write phases in a timeline (pure): a checkpoint is a burst of writes on the checkpoint's device.

A phase starts when the write rate rises above max(50 MB/s, 10 % of the peak seen so far) and
ends once it has stayed below for 3 s (its end is the last second above). Within a phase, a
*collapse* is a run of at least 2 s at under half the rate the phase had just before it.

Times are wall-clock seconds (the samples' ``t``); each interval is the bytes written between
two samples of the device that carries the filesystem (``top``), or the NFS client's bytes.

A phase's ``start`` and ``end`` are sample times (the window its limiters look at), but a write
rarely begins or ends on a sample: its duration (and so its rate and stall) counts only the
part of its first and last intervals (and of the busy intervals just before and after it, with
their bytes) it wrote: their bytes at the rate of the phase's full intervals in between, never
less than the device's own busy time there (/proc/diskstats io_ticks, millisecond resolution);
with no interval in between, the busy time alone. ``edges`` says which (``interpolated``,
``busy``, or ``samples``: whole samples, when neither can be known, one or two intervals on NFS).
Other I/O on the device in those edge intervals is counted as the checkpoint's.
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
    busy_s: float | None = None  # seconds the device had I/O in flight, when it counts them

    @property
    def rate(self) -> float:
        return self.bytes / (self.end - self.start) if self.end > self.start else 0.0


# A sample's time, bytes written to the device, its busy milliseconds, and the bytes its own page
# cache dirtied and wrote back (the debugfs ``bdi`` counters; None where they were not read).
Mark = tuple[float, int, int | None, int | None, int | None]


def mark(sample: dict[str, Any], top: str | None) -> Mark | None:
    """What an interval needs of a sample (None when its write counter was not measured)."""
    value = write_counter(sample, top)
    if not isinstance(value, int):
        return None
    row = (sample.get("disks") or {}).get(top) if top else None
    busy = row.get("io_ms") if isinstance(row, dict) else None
    bdi = sample.get("bdi") if top and isinstance(sample.get("bdi"), dict) else {}
    dirtied, written = bdi.get("dirtied_bytes"), bdi.get("written_bytes")
    cached = isinstance(dirtied, int) and isinstance(written, int)
    return (
        float(sample["t"]),
        value,
        busy if isinstance(busy, int) else None,
        dirtied if cached else None,
        written if cached else None,
    )


def between(before: Mark | None, after: Mark | None, line: int) -> Interval | None:
    """The interval from one mark to the next (a counter that went backwards, a device removed
    and re-added, counts from zero); None when either was not measured or time did not move.

    With the device's own page-cache counters, the interval's bytes are what the writers wrote:
    the pages they dirtied on it plus what the device wrote beyond its page cache's writeback
    (direct I/O, metadata). A buffered write then counts when it is written, not 30 s later when
    the kernel writes it back, and its writeback is not counted a second time; the device's busy
    time is then not the writer's (it wrote into memory), so it is not used for the edges."""
    if before is None or after is None:
        return None
    span = after[0] - before[0]
    if span <= 0:
        return None
    busy = None
    if before[2] is not None and after[2] is not None:
        busy = min(span, max(0, after[2] - before[2]) / 1000)
    written = max(0, after[1] - before[1])
    d0, w0, d1, w1 = before[3], before[4], after[3], after[4]
    if d0 is not None and w0 is not None and d1 is not None and w1 is not None:
        dirtied, written_back = max(0, d1 - d0), max(0, w1 - w0)
        beyond = max(0, written - written_back)
        written = dirtied + beyond
        busy = busy if dirtied <= beyond else None
    return Interval(before[0], after[0], written, line, busy)


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


def intervals(samples: list[dict[str, Any]], top: str | None) -> list[Interval]:
    """Bytes written between consecutive samples of ``top`` (its device, else NFS or writers)."""
    found: list[Interval] = []
    previous: Mark | None = None
    for sample in samples:
        current = mark(sample, top)
        if (interval := between(previous, current, int(sample.get("line", 0)))) is not None:
            found.append(interval)
        previous = current
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
    lead = _adjacent(series, found["first"] - 1, start, "end")
    tail = _adjacent(series, found["last"] + 1, end, "start")
    duration, edges, around = writing_time(inside, lead, tail)
    written = sum(i.bytes for i in inside) + sum(i.bytes for i in around)
    return {
        "start": start,
        "end": end,
        "duration_s": round(duration, 3),
        "edges": edges,
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


def _adjacent(series: list[Interval], index: int, at: float, side: str) -> Interval | None:
    """The interval just before (or after) a phase, if it touches it (no gap in the samples)."""
    if not 0 <= index < len(series) or getattr(series[index], side) != at:
        return None
    return series[index]


def writing_time(
    inside: list[Interval], lead: Interval | None = None, tail: Interval | None = None
) -> tuple[float, str, list[Interval]]:
    """Seconds the phase wrote, how its edges were found, and the intervals touching it that it
    took in. Its full intervals in between count whole; of the first and last (and of those just
    before and after it that kept the device busy: a write whose first requests waited long
    completes few bytes in its first second) only their bytes at the rate of the intervals in
    between, never less than the device's busy time there, never more than the interval. With
    no interval in between (a write of a sample or two), the busy time alone: a lower bound, as a
    writer that leaves the device idle between its requests (starved of CPU) takes longer."""
    edges = [inside[0]] if len(inside) == 1 else [inside[0], inside[-1]]
    middle = inside[1:-1]
    level = statistics.median(i.rate for i in middle) if middle else 0.0
    if level <= 0 and not all(i.busy_s is not None for i in edges):
        return inside[-1].end - inside[0].start, "samples", []
    around = [i for i in (lead, tail) if i is not None and (i.busy_s or 0.0) > 0]

    def part(interval: Interval) -> float:
        by_rate = interval.bytes / level if level > 0 else 0.0
        return min(interval.end - interval.start, max(interval.busy_s or 0.0, by_rate))

    whole = sum(i.end - i.start for i in middle)
    return whole + sum(part(i) for i in [*edges, *around]), "interpolated" if level > 0 else "busy", around


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
