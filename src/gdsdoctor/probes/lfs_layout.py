"""Lustre file layouts: which OSTs a checkpoint file lands on (``lfs getstripe``).

A Lustre file is striped over ``stripe_count`` OSTs (1 on many sites: a whole file on one OST), a
directory's default layout decides the layout of the files created in it, and a Progressive File
Layout (PFL) gives each byte range of a file its own stripe count. Every Lustre release since 1.8
prints these, in four shapes read here::

    stripe_count:  1 stripe_size:   1048576 pattern:       raid0 stripe_offset: -1 pool:  flash
    lmm_stripe_count:  4                     (a file: one lmm_ key per line, then its objects)
    lcme_extent.e_end:   10737418240         (a PFL component, before its stripe_count line)
    - 0: { l_ost_idx: 1, l_fid: [0x100010000:0x2:0x0] }     (a composite file's objects)

Section ``lfs_getstripe``: ``{"layouts": [{path (null for ``lfs getstripe -d DIR``), kind ("default":
a directory's template, the one-line form; "file": a file's own layout), mirror_count, components,
src}]}``; each component ``{start, end (null: EOF), stripe_count (-1: every OST; 0: the filesystem
default), stripe_size, pattern ("raid0", "mdt" for Data-on-MDT, "raid0,overstriped"; older
releases print 1 or 0, and 1.8 nothing), stripe_offset, pool, mirror_id, osts (the OST indexes of
a file's objects, as listed), src}``.

>>> section = parse_getstripe("stripe_count:  1 stripe_size:   1048576 pattern:       raid0 "
...     "stripe_offset: -1 pool:          ddn_hdd\\n", "getstripe.txt")
>>> [(c["stripe_count"], c["pattern"], c["pool"]) for c in section["layouts"][0]["components"]]
[(1, 'raid0', 'ddn_hdd')]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Section, head_lines, numbered_lines, src

# a directory's default (and each PFL template component): one line, pattern and pool optional
_TEMPLATE = lazy_compile(
    r"^\s*stripe_count:\s*(?P<count>-?\d{1,6})\s+stripe_size:\s*(?P<size>\d{1,20})"
    r"(?:\s+pattern:\s*(?P<pattern>\S{1,40}))?\s+stripe_offset:\s*(?P<offset>-?\d{1,6})"
    r"(?:\s+pool:\s*(?P<pool>\S{0,40}))?\s*$"
)
_LMM = lazy_compile(
    r"^\s*lmm_(?P<key>stripe_count|stripe_size|pattern|stripe_offset|pool):\s*(?P<value>\S{0,40})\s*$"
)
_LCM_MIRRORS = lazy_compile(r"^\s*lcm_mirror_count:\s*(?P<count>\d{1,6})\s*$")
_LCME = lazy_compile(
    r"^\s*lcme_(?P<key>id|mirror_id|extent\.e_start|extent\.e_end):\s*(?P<value>\S{1,24})\s*$"
)
# obdidx objid objid(hex) group: the OST index of each of a file's objects
_OBJECT_ROW = lazy_compile(
    r"^\s*(?P<ost>\d{1,6})\s+\d{1,20}\s+0x[0-9a-fA-F]{1,20}\s+(?:0x)?[0-9a-fA-F]{1,20}\s*$"
)
_OBJECT_YAML = lazy_compile(r"^\s*-\s*\d{1,6}:\s*\{\s*l_ost_idx:\s*(?P<ost>\d{1,6})\b")
_KNOWN_KEY = lazy_compile(r"^\s*(?:lmm_|lcm_|lcme_|obdidx\b)")


def _number(value: str | None) -> int | None:
    return int(value) if value and re.fullmatch(r"-?\d{1,20}", value) else None


def layout_component(provenance: dict[str, Any], **fields: Any) -> dict[str, Any]:
    keys = ("start", "end", "stripe_count", "stripe_size", "pattern", "stripe_offset", "pool", "mirror_id")
    return {**{key: fields.get(key) for key in keys}, "osts": [], "src": provenance}


class _Reader:
    """The layouts of one paste, line by line: a path line opens a layout, a PFL extent opens a
    component, a stripe line or ``lmm_stripe_count`` fills (or opens) one."""

    def __init__(self, artifact: str) -> None:
        self.artifact = artifact
        self.layouts: list[dict[str, Any]] = []
        self.layout: dict[str, Any] | None = None
        self.extent: dict[str, Any] = {}  # the PFL component whose stripe lines come next
        self.component: dict[str, Any] | None = None

    def open_layout(self, path: str | None, provenance: dict[str, Any]) -> dict[str, Any]:
        self.layout = {"path": path, "kind": None, "mirror_count": 1, "components": [], "src": provenance}
        self.layouts.append(self.layout)
        self.extent, self.component = {}, None
        return self.layout

    def current(self, provenance: dict[str, Any]) -> dict[str, Any]:
        return self.layout if self.layout is not None else self.open_layout(None, provenance)

    def add_component(self, kind: str, provenance: dict[str, Any], **fields: Any) -> dict[str, Any]:
        layout = self.current(provenance)
        if layout["kind"] not in (None, kind) or (not self.extent and layout["components"]):
            # another plain layout with no path line of its own (`lfs getstripe -d A B`)
            layout = self.open_layout(None, provenance)
        layout["kind"] = kind
        extent = self.extent or {"start": 0, "end": None}
        self.component = layout_component(provenance, **extent, **fields)
        layout["components"].append(self.component)
        self.extent = {}
        return self.component

    def line(self, number: int, line: str) -> None:
        provenance = src(self.artifact, number, line)
        if match := _TEMPLATE.match(line):
            self.add_component("default", provenance, stripe_count=int(match["count"]),
                               stripe_size=int(match["size"]), pattern=match["pattern"],
                               stripe_offset=int(match["offset"]), pool=match["pool"] or None)  # fmt: skip
        elif match := _LMM.match(line):
            self._lmm(match["key"], match["value"], provenance)
        elif match := _LCME.match(line):
            self._lcme(match["key"], match["value"], provenance)
        elif match := _LCM_MIRRORS.match(line):
            self.current(provenance)["mirror_count"] = int(match["count"])
        elif (match := _OBJECT_ROW.match(line) or _OBJECT_YAML.match(line)) and self.component is not None:
            self.component["osts"].append(int(match["ost"]))
        elif _is_path(line):
            self.open_layout(line.strip(), provenance)

    def _lmm(self, key: str, value: str, provenance: dict[str, Any]) -> None:
        if key == "stripe_count" or self.component is None:
            self.add_component("file", provenance)
        assert self.component is not None
        if key == "pattern" or key == "pool":
            self.component[key] = value or None
        else:
            self.component[key] = _number(value)

    def _lcme(self, key: str, value: str, provenance: dict[str, Any]) -> None:
        if key == "id":  # each PFL component begins with its id (N/A in a directory's template)
            self.current(provenance)
            self.extent, self.component = {"start": 0, "end": None}, None
        elif key == "mirror_id":
            self.extent["mirror_id"] = _number(value)
        elif key == "extent.e_start":
            self.extent["start"] = _number(value) or 0
        else:
            self.extent["end"] = None if value.upper() == "EOF" else _number(value)


def _is_path(line: str) -> bool:
    """A file or directory name alone on its line, as lfs prints it before the layout; prompts,
    messages and the object table's heading all hold spaces, lfs's own keys are matched above."""
    text = line.strip()
    return (
        bool(text)
        and not re.search(r"\s", text)
        and not text.startswith(("[", "-", "#"))
        and (not _KNOWN_KEY.match(text))
    )


def parse_getstripe(text: str, artifact: str) -> Section:
    """``lfs getstripe [-d] PATH``: every layout printed, in order (the last one of a path is its
    current one: a paste often shows a layout, a setstripe, and the layout again)."""
    reader = _Reader(artifact)
    for number, line in numbered_lines(text):
        reader.line(number, line)
    layouts = [layout for layout in reader.layouts if layout["components"]]
    if not layouts:
        raise ParseError("no `stripe_count:` / `lmm_stripe_count:` lines (expected `lfs getstripe`)")
    return {"layouts": layouts}


def combine_layouts(sections: Sequence[Section]) -> Section:
    """``lfs getstripe`` outputs given one file each: their layouts in the order given."""
    return {"layouts": [layout for section in sections for layout in section.get("layouts", [])]}


def recognise_getstripe(text: str) -> bool:
    head = head_lines(text, 60)
    return any(_TEMPLATE.match(line) or _LMM.match(line) for line in head)
