"""Loaded kernel modules, from ``/proc/modules`` or ``lsmod`` (same columns, lsmod has a header).

/proc/modules::

    nvidia_fs 262144 0 - Live 0xffffffffc0a1a000 (OE)

lsmod::

    Module                  Size  Used by
    nvidia_fs             262144  0

A kernel built without module support has neither (``/proc/modules`` does not exist, lsmod
fails): what it has built in is then read from ``/sys/module`` (every built-in module with a
parameter or a version has a directory there) and ``/lib/modules/<release>/modules.builtin``
when it exists, so the module causes are answered rather than asking for ``lsmod``.

Section: ``{names: [str], by_name: {name: {name, size, refcount, used_by: [str], src}}}``; from
``/sys/module``: ``{names, by_name: {name: {name, builtin: true, src}}, builtin_only: true}``.

>>> section = parse("nvidia_fs 262144 0 - Live 0xffffffffc0a1a000 (OE)\\n", "proc/modules")
>>> section["names"], section["by_name"]["nvidia_fs"]["size"]
(['nvidia_fs'], 262144)
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from gdsdoctor.errors import ParseError, Unavailable
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, Source, head_lines, numbered_lines, src
from gdsdoctor.probes.host_io import list_inside, read_regular_file, resolve_in_root
from gdsdoctor.probes.text import json_bytes, load_reader_json

_LSMOD_HEADER = lazy_compile(r"^Module\s+Size\s+Used by")
_LSMOD_BODY = lazy_compile(
    r"^[a-z][a-z0-9_]{1,55} {2,}\d{3,10} {1,3}\d{1,5}(?: {1,2}[a-z0-9_,\[\]-]{1,500})? *$"
)
_LINE = lazy_compile(r"^(?P<name>[A-Za-z0-9_\-]+)\s+(?P<size>\d+)\s+(?P<used>-|\d+(?!\d))(?P<rest>.*)$")


SYS_MODULE = "sys/module"
OSRELEASE = "/proc/sys/kernel/osrelease"


def read_builtin_modules(host_root: Path) -> bytes:
    """The modules built into a kernel without module support (no ``/proc/modules``)."""
    root = os.path.realpath(host_root)
    if (host_root / "proc" / "modules").exists() or not (host_root / SYS_MODULE).is_dir():
        raise Unavailable("the kernel lists its modules in /proc/modules, or there is no /sys/module")
    names = list_inside(root, host_root / SYS_MODULE, raise_denied=True)
    builtin: list[str] = []
    release = _file(root, OSRELEASE).strip()
    if release:
        listed = _file(root, f"/lib/modules/{release}/modules.builtin")
        builtin = [Path(line).name.removesuffix(".ko").replace("-", "_") for line in listed.split()]
    return json_bytes({"reader": "builtin_modules", "sys_module": names, "modules_builtin": builtin})


def _file(root: str, path: str) -> str:
    real = resolve_in_root(root, path)
    try:
        return read_regular_file(real, 1 << 20, follow=False).decode(errors="replace") if real else ""
    except OSError:
        return ""


def _parse_builtin(text: str, artifact: str) -> Section:
    data = load_reader_json(text, "builtin_modules")
    names = sorted(
        {str(n).replace("-", "_") for n in [*data.get("sys_module", []), *data.get("modules_builtin", [])]}
    )
    if not names:
        raise ParseError("no module under /sys/module nor in modules.builtin")
    where = src(artifact, 1, "/sys/module")
    by_name = {name: {"name": name, "builtin": True, "src": where} for name in names}
    return {"names": names, "by_name": by_name, "builtin_only": True}


def parse(text: str, artifact: str) -> Section:
    if text.lstrip().startswith("{"):
        return _parse_builtin(text, artifact)
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
    lines = [line for line in head_lines(text, 50) if line.strip()]
    if not lines:
        return False
    if _LSMOD_HEADER.match(lines[0]):
        return True
    proc_like = [
        line for line in lines if re.match(r"^[a-z0-9_]+ \d+ (\d+|-) \S+ (Live|Loading|Unloading)", line)
    ]
    if len(proc_like) >= max(1, len(lines) // 2):
        return True
    # lsmod's body without its header (``lsmod | grep nvidia``): every line name, size, use count and
    # the users, in lsmod's padded columns
    return all(_LSMOD_BODY.match(line) for line in lines)


PROBE = Probe(
    section="modules",
    title="loaded kernel modules",
    sources=(
        Source("proc/modules", path="/proc/modules"),
        Source("cmd/lsmod.txt", argv=("lsmod",)),
        Source("sys/module.json", reader=read_builtin_modules, how="ls /sys/module"),
    ),
    parse=parse,
    recognise=recognise,
    paste_hint="`lsmod` or `cat /proc/modules`",
)
