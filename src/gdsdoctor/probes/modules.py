"""Loaded kernel modules, from ``/proc/modules`` or ``lsmod`` (same columns, lsmod has a header).

/proc/modules::

    nvidia_fs 262144 0 - Live 0xffffffffc0a1a000 (OE)

lsmod::

    Module                  Size  Used by
    nvidia_fs             262144  0

Section: ``{names: [str], by_name: {name: {name, size, refcount, used_by: [str], src}}}``.

>>> section = parse("nvidia_fs 262144 0 - Live 0xffffffffc0a1a000 (OE)\\n", "proc/modules")
>>> section["names"], section["by_name"]["nvidia_fs"]["size"]
(['nvidia_fs'], 262144)
"""

from __future__ import annotations

import re

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, Source, numbered_lines, src

_LSMOD_HEADER = lazy_compile(r"^Module\s+Size\s+Used by")
_LINE = lazy_compile(r"^(?P<name>[A-Za-z0-9_\-]+)\s+(?P<size>\d+)\s+(?P<used>-|\d+)(?P<rest>.*)$")


def parse(text: str, artifact: str) -> Section:
    modules: dict[str, dict] = {}
    for number, line in numbered_lines(text):
        if not line.strip() or _LSMOD_HEADER.match(line):
            continue
        match = _LINE.match(line.strip())
        if not match:
            continue
        name = match["name"].replace("-", "_")
        # the users are the first field after the refcount ("nvme,nvme_tcp," or "-"); /proc/modules
        # goes on with the state and the load address ("Live 0xffffffffc0a1a000"), which are not users
        users = match["rest"].split(None, 1)[0] if match["rest"].strip() else ""
        used_by = [m for m in users.split(",") if re.fullmatch(r"[a-z0-9_]+", m)]
        modules[name] = {
            "name": name,
            "size": int(match["size"]),
            "refcount": 0 if match["used"] == "-" else int(match["used"]),
            "used_by": used_by,
            "src": src(artifact, number, line),
        }
    if not modules:
        raise ParseError("no module lines (expected /proc/modules or lsmod output)")
    return {"names": sorted(modules), "by_name": modules}


def recognise(text: str) -> bool:
    lines = [line for line in text.split("\n")[:50] if line.strip()]
    if not lines:
        return False
    if _LSMOD_HEADER.match(lines[0]):
        return True
    proc_like = [
        line for line in lines if re.match(r"^[a-z0-9_]+ \d+ (\d+|-) \S+ (Live|Loading|Unloading)", line)
    ]
    return len(proc_like) >= max(1, len(lines) // 2)


PROBE = Probe(
    section="modules",
    title="loaded kernel modules",
    sources=(
        Source("proc/modules", path="/proc/modules"),
        Source("cmd/lsmod.txt", argv=("lsmod",)),
    ),
    parse=parse,
    recognise=recognise,
    paste_hint="`lsmod` or `cat /proc/modules`",
)
