"""The recorded timeline's format and the shapes of its records, enforced: a recording comes
from elsewhere (a bundle, a paste) and is untrusted, so every value the analysis reads is
checked for its type here, once, and what does not fit is dropped. The analysis then never
meets a string where it counts bytes."""

from __future__ import annotations

import math
from typing import Any

ARTIFACT = "watch/timeline.jsonl"  # where a bundle keeps the timeline
FORMAT = "gdsdoctor-watch"  # the header's format name
VERSION = 1
MAX_RECORDS = 500_000  # lines of a timeline read
# The RDMA port counters whose growth is an error (the sampler reads them with the data counters).
RDMA_ERROR_COUNTERS = (
    "link_downed",
    "symbol_error",
    "port_rcv_errors",
    "port_xmit_discards",
    "link_error_recovery",
    "local_link_integrity_errors",
)
MAX_NAME = 200  # characters of a device, port or counter name
MAX_TEXT = 500  # characters of a message or note
MAX_ITEMS = 4096  # entries of one mapping (devices, ports)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63 else None


def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def text(value: Any, limit: int = MAX_TEXT) -> str | None:
    return value[:limit] if isinstance(value, str) else None


def names(value: Any) -> list[str]:
    return [v[:MAX_NAME] for v in value[:MAX_ITEMS] if isinstance(v, str)] if isinstance(value, list) else []


def counters(value: Any) -> dict[str, int]:
    """A mapping of counter names to non-negative integers; anything else dropped."""
    if not isinstance(value, dict):
        return {}
    return {k[:MAX_NAME]: v for k, raw in list(value.items())[:MAX_ITEMS] if (v := _int(raw)) is not None}


def _nested(value: Any) -> dict[str, dict[str, int]]:
    if not isinstance(value, dict):
        return {}
    return {k[:MAX_NAME]: counters(v) for k, v in list(value.items())[:MAX_ITEMS] if isinstance(v, dict)}


def _states(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {k[:MAX_NAME]: v[:MAX_NAME] for k, v in list(value.items())[:MAX_ITEMS] if isinstance(v, str)}


def sample(record: dict[str, Any], line: int) -> dict[str, Any]:
    found: dict[str, Any] = {"type": "sample", "t": record["t"], "line": line}
    for key, clean in (
        ("disks", _nested),
        ("rdma", _nested),
        ("mem", counters),
        ("nvfs", counters),
        ("nfs", counters),
        ("writers", counters),
        ("open_writes", counters),
        ("bdi", counters),
        ("ctrl", _states),
        ("ana", _states),
    ):
        if key in record:
            found[key] = clean(record[key])
    if (used := _int(record.get("fs_used_bytes"))) is not None:
        found["fs_used_bytes"] = used
    return found


def event(record: dict[str, Any], line: int) -> dict[str, Any]:
    return {
        "type": "event",
        "t": record["t"],
        "source": text(record.get("source"), MAX_NAME) or "",
        "kind": record["kind"][:MAX_NAME],
        "device": text(record.get("device"), MAX_NAME),
        "level": text(record.get("level"), MAX_NAME),
        "message": text(record.get("message")) or "",
        "subsystem": text(record.get("subsystem"), MAX_NAME),
        "line": line,
    }


def header(record: dict[str, Any]) -> dict[str, Any]:
    """The header's devices, static facts, job and notes, in the shapes the analysis reads."""
    devices = record.get("devices") if isinstance(record.get("devices"), dict) else {}
    static = record.get("static") if isinstance(record.get("static"), dict) else {}
    job = record.get("job") if isinstance(record.get("job"), dict) else {}
    return {
        "devices": {
            **{key: text(devices.get(key), 4096) for key in ("path", "mount", "fstype", "source", "top")},
            **{key: names(devices.get(key)) for key in ("below", "members", "controllers")},
        },
        "static": {
            "queue_depth": {k: v for k, v in counters(static.get("queue_depth")).items() if v > 0},
            "buffered_below": names(static.get("buffered_below")),
            "line_rates": {
                k[:MAX_NAME]: rate
                for k, v in list((static.get("line_rates") or {}).items())[:MAX_ITEMS]
                if isinstance(static.get("line_rates"), dict) and (rate := number(v))
            },
        },
        "job": {
            k: v
            for k, v in job.items()
            if k in ("params", "preset", "interval", "budget", "gpus")
            and isinstance(v, str | int)
            and not isinstance(v, bool)
        },
        "notes": [n for n in (text(v) for v in (record.get("notes") or [])[:50]) if n]
        if isinstance(record.get("notes"), list)
        else [],
    }
