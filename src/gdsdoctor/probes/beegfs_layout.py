"""BeeGFS stripe patterns: how many storage targets a checkpoint file lands on
(``beegfs-ctl --getentryinfo DIR|FILE``, BeeGFS 7).

A BeeGFS file is striped over ``numtargets`` storage targets (4 by default; a site may set 1, and a
whole file then lands on one target); a directory's pattern is the one new files in it get::

    Stripe pattern details:
    + Type: RAID0
    + Chunksize: 512K
    + Number of storage targets: desired: 4; actual: 3
    + Storage targets:
      + 1201 @ devnode2 [ID: 3]

Section ``beegfs_entryinfo``: the ``lfs_getstripe`` shape (lfs_layout.py), so that the one per-file
share of ``derived.storage`` judges both: ``{"layouts": [{path: null, kind ("file"; "default": a
directory's pattern), mirror_count (2 for a ``Buddy Mirror`` pattern: every chunk written twice),
components: [{start 0, end null, stripe_count (the actual count of a file, else the desired one),
stripe_size, pattern ("raid0", "buddymirror"), pool, osts (the file's storage target IDs), src}],
src}]}``.

>>> layouts = parse_entryinfo("Stripe pattern details:\\n+ Type: RAID0\\n+ Chunksize: 8M\\n"
...     "+ Number of storage targets: desired: 1\\n+ Storage Pool: 1 (Default)\\n", "e.txt")["layouts"]
>>> [(c["stripe_count"], c["stripe_size"], c["pool"]) for c in layouts[0]["components"]]
[(1, 8388608, 'Default')]
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, head_lines, numbered_lines, src
from gdsdoctor.probes.lfs_layout import combine_layouts, layout_component
from gdsdoctor.probes.text import size_bytes

_START = lazy_compile(r"^\s*Stripe pattern details:\s*$")
_ENTRY_TYPE = lazy_compile(r"^\s*Entry type:\s*(?P<type>\w{1,20})\s*$")
_TYPE = lazy_compile(r"^\s*\+\s*Type:\s*(?P<type>\w{1,20}(?: \w{1,20}){0,3})\s*$")  # RAID0, Buddy Mirror
_CHUNK = lazy_compile(r"^\s*\+\s*Chunksize:\s*(?P<size>\d{1,12}[KMG]?)\s*$")
_COUNT = lazy_compile(
    r"^\s*\+\s*Number of storage targets:\s*desired:\s*(?P<desired>\d{1,6})"
    r"(?:;\s*actual:\s*(?P<actual>\d{1,6}))?\s*$"
)
_POOL = lazy_compile(r"^\s*\+\s*Storage Pool:\s*\d{1,6}\s*\((?P<pool>[^)]{1,64})\)\s*$")
_TARGET = lazy_compile(r"^\s*\+\s*(?P<id>\d{1,6})\s*@\s*\S{1,120}")


def _layout(entry_type: str | None, provenance: dict[str, Any]) -> dict[str, Any]:
    component = layout_component(provenance, start=0)
    kind = "file" if entry_type == "file" else "default" if entry_type == "directory" else None
    return {"path": None, "kind": kind, "mirror_count": 1, "components": [component], "src": provenance}


def _fill(layout: dict[str, Any], line: str) -> None:
    component = layout["components"][0]
    if match := _TYPE.match(line):
        pattern = match["type"].lower().replace(" ", "")
        component["pattern"] = pattern
        layout["mirror_count"] = 2 if pattern == "buddymirror" else 1
    elif match := _CHUNK.match(line):
        component["stripe_size"] = size_bytes(match["size"])[0]
    elif match := _COUNT.match(line):
        component["stripe_count"] = int(match["actual"] or match["desired"])
        layout["kind"] = layout["kind"] or ("file" if match["actual"] else "default")
    elif match := _POOL.match(line):
        component["pool"] = match["pool"]
    elif match := _TARGET.match(line):
        component["osts"].append(int(match["id"]))


def parse_entryinfo(text: str, artifact: str) -> Section:
    """Every ``Stripe pattern details:`` block of the paste, in order."""
    layouts: list[dict[str, Any]] = []
    entry_type: str | None = None
    for number, line in numbered_lines(text):
        if match := _ENTRY_TYPE.match(line):
            entry_type = match["type"].lower()
        elif _START.match(line):
            layouts.append(_layout(entry_type, src(artifact, number, line)))
            entry_type = None
        elif layouts:
            _fill(layouts[-1], line)
    layouts = [layout for layout in layouts if layout["components"][0]["stripe_count"] is not None]
    if not layouts:
        raise ParseError(
            "no `Stripe pattern details:` with its storage targets (expected `beegfs-ctl --getentryinfo`)"
        )
    for layout in layouts:
        layout["kind"] = layout["kind"] or "default"
    return {"layouts": layouts}


def recognise_entryinfo(text: str) -> bool:
    head = head_lines(text, 40)
    return any(_START.match(line) for line in head) and any(_COUNT.match(line) for line in head)


PROBE = Probe(
    section="beegfs_entryinfo",
    title="BeeGFS stripe pattern of the checkpoint directory (beegfs-ctl --getentryinfo)",
    sources=(),  # pasted: run on the checkpoint directory (`beegfs getentryinfo` in BeeGFS 8: not read)
    parse=parse_entryinfo,
    recognise=recognise_entryinfo,
    paste_hint="`beegfs-ctl --getentryinfo CHECKPOINT_DIR`",
    combine=combine_layouts,
    tags=("storage",),
)
