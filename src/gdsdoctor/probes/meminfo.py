"""The node's memory as the kernel counts it (``/proc/meminfo``): what an asynchronous checkpoint can stage.

An asynchronous save copies each GPU's shard of the checkpoint into host memory before a background
process writes it; the node must hold its whole shard (× its staging buffers) beside the job's own
memory. ``MemAvailable`` is the kernel's estimate of what can be allocated without swapping.

Section ``meminfo``: ``{mem_total_bytes, mem_available_bytes, mem_free_bytes, commit_limit_bytes,
committed_as_bytes, hugepages_total, hugepage_size_bytes, src}`` (null for a field the kernel does not
print, e.g. ``MemAvailable`` before 3.14); ``src`` is the ``MemAvailable`` line (else ``MemTotal``).

>>> parse_meminfo("MemTotal: 2113265676 kB\\nMemAvailable: 1987110736 kB\\n", "m")["mem_available_bytes"]
2034801393664
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, Source, head_lines, numbered_lines, src

_LINE = lazy_compile(r"^(?P<key>[A-Za-z][\w()]{0,40}):\s+(?P<value>\d{1,20})(?:\s+(?P<unit>kB))?\s*$")
_FIELDS = {
    "MemTotal": "mem_total_bytes",
    "MemAvailable": "mem_available_bytes",
    "MemFree": "mem_free_bytes",
    "CommitLimit": "commit_limit_bytes",
    "Committed_AS": "committed_as_bytes",
    "HugePages_Total": "hugepages_total",
    "Hugepagesize": "hugepage_size_bytes",
}


def parse_meminfo(text: str, artifact: str) -> Section:
    values: dict[str, Any] = dict.fromkeys(_FIELDS.values())
    provenance: dict[str, dict[str, Any]] = {}
    for number, line in numbered_lines(text):
        match = _LINE.match(line.strip())
        if not match or match["key"] not in _FIELDS:
            continue
        key = _FIELDS[match["key"]]
        values[key] = int(match["value"]) * (1024 if match["unit"] else 1)
        provenance[key] = src(artifact, number, line)
    if values["mem_total_bytes"] is None:
        raise ParseError("no `MemTotal:` line (expected /proc/meminfo)")
    return values | {"src": provenance.get("mem_available_bytes") or provenance["mem_total_bytes"]}


def recognise_meminfo(text: str) -> bool:
    head = [line.strip() for line in head_lines(text, 5) if line.strip()]
    return bool(head) and head[0].startswith("MemTotal:") and all(_LINE.match(line) for line in head)


PROBES: tuple[Probe, ...] = (
    Probe(
        section="meminfo",
        title="memory of the node (/proc/meminfo): what an asynchronous save can stage",
        sources=(Source("proc/meminfo", path="/proc/meminfo"),),
        parse=parse_meminfo,
        recognise=recognise_meminfo,
        paste_hint="`cat /proc/meminfo`",
    ),
)
