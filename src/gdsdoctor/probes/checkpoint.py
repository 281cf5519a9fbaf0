"""The size of the next checkpoint, from a pasted ``gdsdoctor estimate --format json`` document.

Paste only (nothing to run on the host): the capacity rules compare it with the free space of
the checkpoint filesystem. The estimate document looks like::

    {"units": "SI", "inputs": {"params": 70000000000, "preset": "bf16-adamw", ...},
     "size": {"weights_bf16_bytes": ..., "bytes_per_param": 14.0, "total_bytes": 980000000000}, ...}

Section ``checkpoint_estimate``: ``total_bytes`` (int, the checkpoint size), ``params`` (int or
None), ``preset`` (str or None), ``bytes_per_param`` (float or None), ``src`` (the
``total_bytes`` line).
"""

from __future__ import annotations

import json
import re
from typing import Any

from gdsdoctor.probes.base import ParseError, Probe, Section, Source, src

_TOTAL = re.compile(r'"total_bytes"\s*:')


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def parse(text: str, artifact: str) -> Section:
    start = text.find("{")
    try:
        document = json.loads(text[start:]) if start >= 0 else None
    except (ValueError, RecursionError):
        document = None
    if not isinstance(document, dict) or not isinstance(document.get("size"), dict):
        raise ParseError("not a `gdsdoctor estimate --format json` document (no size section)")
    total = _int(document["size"].get("total_bytes"))
    if total is None or total <= 0:
        raise ParseError("estimate document without a positive size.total_bytes")
    inputs = document.get("inputs") if isinstance(document.get("inputs"), dict) else {}
    per_param = document["size"].get("bytes_per_param")
    lines = text.split("\n")
    line = next((n for n, t in enumerate(lines, 1) if _TOTAL.search(t)), 1)
    return {
        "total_bytes": total,
        "params": _int(inputs.get("params")),
        "preset": inputs.get("preset") if isinstance(inputs.get("preset"), str) else None,
        "bytes_per_param": per_param
        if isinstance(per_param, int | float) and not isinstance(per_param, bool)
        else None,
        "src": src(artifact, line, lines[line - 1]),
    }


def recognise(text: str) -> bool:
    head = text.lstrip()[:4000]
    return head.startswith("{") and '"size"' in head and bool(_TOTAL.search(head)) and '"inputs"' in head


PROBES: tuple[Probe, ...] = (
    Probe(
        section="checkpoint_estimate",
        title="size of the next checkpoint (gdsdoctor estimate)",
        sources=(Source("cmd/gdsdoctor-estimate.json"),),  # no argv: paste or bundle only
        parse=parse,
        recognise=recognise,
        paste_hint="`gdsdoctor estimate ... --format json`",
    ),
)
