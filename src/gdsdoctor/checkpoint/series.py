"""What a chart of a write phase needs, kept in the phase's record (pure): for each sample from a
little before the phase to a little after it, the time, the write rate (the phase's counter, and
each device under the filesystem's own), the writes in flight, the dirty pages and the kernel
errors on the phase's devices since the sample before. A chart then draws the record as it is,
with no second reading of the timeline.

The dirty pages are the device's own (debugfs ``bdi``: dirty plus under writeback) where they
were read, else the whole host's (/proc/meminfo Dirty + Writeback); ``dirty_of`` says which.
"""

from __future__ import annotations

import itertools
from typing import Any

from gdsdoctor.checkpoint.limiters import FAILURE_KINDS, RESET_KINDS
from gdsdoctor.checkpoint.phases import between, mark

MARGIN_S = 3.0  # seconds of samples kept before and after the phase (its ramp and what followed)
MAX_POINTS = 1200  # a phase of hours keeps every n-th sample (a chart is ~1000 px wide)
ERROR_KINDS = FAILURE_KINDS | RESET_KINDS  # marked on a chart where they happened


def phase_series(
    phase: dict[str, Any],
    samples: list[dict[str, Any]],
    events: list[dict[str, Any]],
    top: str | None,
    devices: set[str],
) -> list[dict[str, Any]]:
    near = [s for s in samples if phase["start"] - MARGIN_S <= s["t"] <= phase["end"] + MARGIN_S]
    errors = sorted(
        e["t"] for e in events if e["kind"] in ERROR_KINDS and (not e.get("device") or e["device"] in devices)
    )
    below = sorted(devices - {top}) if top else []
    points: list[dict[str, Any]] = []
    for before, after in itertools.pairwise(near):
        interval = between(mark(before, top), mark(after, top), 0)
        if interval is None:
            continue
        point: dict[str, Any] = {
            "t": after["t"],
            "bytes_per_s": round(interval.rate),
            "errors": sum(1 for t in errors if before["t"] < t <= after["t"]),
        }
        rates = {d: r for d in below if (r := _device_rate(before, after, d)) is not None}
        if rates:
            point["devices"] = rates
        row = (after.get("disks") or {}).get(top) if top else None
        if isinstance(row, dict) and isinstance(row.get("inflight_w"), int):
            point["inflight"] = row["inflight_w"]
        point |= _dirty(after)
        points.append(point)
    step = -(-len(points) // MAX_POINTS)
    return points[::step] if step > 1 else points


def _device_rate(before: dict[str, Any], after: dict[str, Any], name: str) -> int | None:
    old, new = (before.get("disks") or {}).get(name), (after.get("disks") or {}).get(name)
    span = after["t"] - before["t"]
    if not isinstance(old, dict) or not isinstance(new, dict) or span <= 0:
        return None
    if not isinstance(old.get("write_bytes"), int) or not isinstance(new.get("write_bytes"), int):
        return None
    return round(max(0, new["write_bytes"] - old["write_bytes"]) / span)


def _dirty(sample: dict[str, Any]) -> dict[str, Any]:
    bdi, mem = sample.get("bdi"), sample.get("mem")
    if isinstance(bdi, dict) and ("reclaimable_bytes" in bdi or "writeback_bytes" in bdi):
        return {
            "dirty_bytes": bdi.get("reclaimable_bytes", 0) + bdi.get("writeback_bytes", 0),
            "dirty_of": "device",
        }
    if isinstance(mem, dict) and mem:
        return {"dirty_bytes": mem.get("dirty_bytes", 0) + mem.get("writeback_bytes", 0), "dirty_of": "host"}
    return {}
