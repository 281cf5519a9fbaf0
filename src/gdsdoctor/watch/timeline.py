"""The recorded timeline (``watch/timeline.jsonl`` in a bundle), the writing side: the header
and one JSON object a line. Its format is in :mod:`gdsdoctor.checkpoint.records`; its reading
(a pure parser: phases, collapses and limiters found again from the records) is the probe's,
:mod:`gdsdoctor.probes.watch_timeline`, so that ``analyze`` of a recording gives the findings the
watch gave.
"""

from __future__ import annotations

import json
from typing import Any

from gdsdoctor.checkpoint.records import FORMAT, VERSION


def header(
    resolved: dict[str, Any],
    static: dict[str, Any],
    every_s: float,
    started: float,
    job: dict[str, Any] | None,
    notes: list[str],
) -> dict[str, Any]:
    return {
        "type": "header",
        "format": FORMAT,
        "version": VERSION,
        "started": round(started, 3),
        "every_s": every_s,
        "devices": resolved,
        "static": static,
        "job": job or None,
        "notes": notes,
    }


def to_line(record: dict[str, Any]) -> str:
    return json.dumps(record, separators=(",", ":"), sort_keys=True)
