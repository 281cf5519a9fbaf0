"""Block devices from ``lsblk`` (util-linux), flattened to one list with parent links.

Reads every lsblk output variant seen in the wild:

- ``lsblk -J`` of util-linux 2.27-2.32 (every value a string: ``"size": "1.8T"``, ``"ro": "0"``),
  2.33-2.36 (typed booleans, sizes numbers only with ``-b``) and 2.37+ (``mountpoints`` list with
  ``null`` for "not mounted", one key per line);
- ``lsblk -P`` pairs (``NAME="sda" MAJ:MIN="8:0" …``) for util-linux < 2.27 (RHEL/CentOS 7);
- plain ``lsblk`` tree tables as pasted in tickets (``├─``/``|-`` trees; sizes then approximate).

Section ``lsblk``::

    {"devices": [{"name": "nvme0n1p1", "kname": "nvme0n1p1", "path": "/dev/nvme0n1p1",
                  "maj_min": "259:1", "type": "part", "size_bytes": 503358750720,
                  "size_exact": true, "fstype": "ext4", "mountpoints": ["/mnt/stateful"],
                  "tran": "nvme", "rota": false, "ro": false, "rm": false, "hotplug": null,
                  "sched": "none",
                  "model": null, "serial": null, "parent": "nvme0n1", "parents": ["nvme0n1"],
                  "children": [], "src": {...}}],
     "by_name": {"nvme0n1p1": {...}}, "format": "json" | "pairs" | "table"}

Sample line (util-linux 2.31): ``{"name": "nvme0n1p1", "maj:min": "259:2", "rm": "0",
"size": "8G", "ro": "0", "type": "part", "mountpoint": "/"}``.
"""

from __future__ import annotations

import re
from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, Source, head_lines, src
from gdsdoctor.probes.text import json_key, line_finder, load_pasted_json, size_bytes, text_or_none, to_bool

COLUMNS_FULL = (
    "NAME,KNAME,PATH,MAJ:MIN,TYPE,SIZE,FSTYPE,MOUNTPOINT,MOUNTPOINTS,MODEL,SERIAL,TRAN,ROTA,SCHED,PKNAME,"
    "RO,RM"
)
# util-linux < 2.37 rejects MOUNTPOINTS and < 2.33 rejects PATH ("unknown column"): a second try.
COLUMNS_COMPAT = "NAME,KNAME,MAJ:MIN,TYPE,SIZE,FSTYPE,MOUNTPOINT,MODEL,SERIAL,TRAN,ROTA,SCHED,PKNAME,RO,RM"

_PAIR = lazy_compile(r'(?<![A-Z0-9:_%-])([A-Z][A-Z0-9:_%-]*)="((?:[^"\\]|\\.)*)"')
_HEX_ESCAPE = lazy_compile(r"\\x([0-9a-fA-F]{2})")
_DEVICE_KEYS = ("name", "kname", "maj:min", "type")


def _mountpoints(raw: dict[str, Any]) -> list[str]:
    """Union of ``mountpoints`` (list, nulls when unmounted) and legacy ``mountpoint``."""
    found: list[str] = []
    listed = raw.get("mountpoints")
    candidates = list(listed) if isinstance(listed, list) else []
    candidates.append(raw.get("mountpoint"))
    for candidate in candidates:
        if isinstance(candidate, str) and candidate and candidate not in found:
            found.append(candidate)
    return found


def _device(raw: dict[str, Any], parent: str | None, provenance: dict[str, Any]) -> dict[str, Any]:
    name = text_or_none(raw.get("name"))
    size, exact = size_bytes(raw.get("size"))
    parent = parent or text_or_none(raw.get("pkname"))
    return {
        "name": name,
        "kname": text_or_none(raw.get("kname")) or name,
        "path": text_or_none(raw.get("path")) or (f"/dev/{name}" if name else None),
        "maj_min": text_or_none(raw.get("maj:min")),
        "type": text_or_none(raw.get("type")),
        "size_bytes": size,
        "size_exact": exact,
        "fstype": text_or_none(raw.get("fstype")),
        "mountpoints": _mountpoints(raw),
        "tran": text_or_none(raw.get("tran")),
        "rota": to_bool(raw.get("rota")),
        "ro": to_bool(raw.get("ro")),
        # removable media (a USB stick, a card reader): lsblk's RM, or HOTPLUG where -O gave it
        "rm": to_bool(raw.get("rm")),
        "hotplug": to_bool(raw.get("hotplug")),
        "sched": text_or_none(raw.get("sched")),
        "model": text_or_none(raw.get("model")),
        "serial": text_or_none(raw.get("serial")),
        "parent": parent,
        "parents": [parent] if parent else [],
        "children": [],
        "src": provenance,
    }


def _add(devices: dict[str, dict[str, Any]], device: dict[str, Any]) -> None:
    """Keep one entry per device: an md/dm device under two disks appears twice in the tree."""
    key = device["kname"] or device["name"]
    known = devices.get(key)
    if known is None:
        devices[key] = device
        return
    for parent in device["parents"]:
        if parent not in known["parents"]:
            known["parents"].append(parent)


def _walk_json(nodes: Any, parent: str | None, text: str, artifact: str, find: Any, out: dict) -> None:
    if not isinstance(nodes, list):
        return
    for raw in nodes:
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            continue
        number, line = find(json_key("name", raw["name"]))
        device = _device(raw, parent, src(artifact, number, line))
        _add(out, device)
        _walk_json(raw.get("children"), device["name"], text, artifact, find, out)


def _link_children(devices: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    for device in devices.values():
        for parent in device["parents"]:
            if parent in devices and device["name"] not in devices[parent]["children"]:
                devices[parent]["children"].append(device["name"])
    return list(devices.values())


def _parse_json(text: str, artifact: str) -> list[dict[str, Any]]:
    document, _ = load_pasted_json(text, "lsblk -J")
    if not isinstance(document, dict) or not isinstance(document.get("blockdevices"), list):
        raise ParseError("JSON without a 'blockdevices' list (expected lsblk -J output)")
    devices: dict[str, dict[str, Any]] = {}
    _walk_json(document["blockdevices"], None, text, artifact, line_finder(text), devices)
    return _link_children(devices)


def _pairs(line: str) -> dict[str, str | None]:
    found = {
        key.lower(): _HEX_ESCAPE.sub(lambda m: chr(int(m[1], 16)), value)
        for key, value in _PAIR.findall(line)
    }
    return {key: (value if value != "" else None) for key, value in found.items()}


def _parse_pairs(text: str, artifact: str) -> list[dict[str, Any]]:
    devices: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        raw = _pairs(line)
        if raw.get("name"):
            _add(devices, _device(raw, None, src(artifact, number, line)))
    if not devices:
        raise ParseError('no lsblk JSON and no NAME="…" pairs lines (expected lsblk -J or -P output)')
    return _link_children(devices)


_TABLE_HEADER = lazy_compile(r"^NAME(\s+[A-Z][A-Z0-9:%_-]*)+\s*$")
_TREE = lazy_compile(r"^[\s|`│├└─-]*")


def _header_columns(header: str) -> list[tuple[str, int, int]]:
    return [(m[0].lower(), m.start(), m.end()) for m in re.finditer(r"\S+", header)]


def _table_row(line: str, columns: list[tuple[str, int, int]]) -> dict[str, Any]:
    """Assign each word to the header word it overlaps (lsblk right-aligns numbers, left-aligns text);
    a word overlapping none (a model with a space) continues the previous column."""
    row: dict[str, Any] = {}
    previous = None
    for word in re.finditer(r"\S+", line):
        owner = next(
            (name for name, start, end in columns if word.start() < end and word.end() > start), None
        )
        owner = owner or previous
        if owner is None:
            continue
        row[owner] = f"{row[owner]} {word[0]}" if owner in row else word[0]
        previous = owner
    return row


def _parse_table(text: str, artifact: str) -> list[dict[str, Any]]:
    """Plain ``lsblk`` (tree table). The tree indentation gives the parent; extra mountpoints of
    util-linux 2.37+ come on continuation lines holding only a path."""
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines[:20]) if _TABLE_HEADER.match(line)), None)
    if start is None:
        raise ParseError('no lsblk JSON, NAME="…" pairs or NAME … table header (expected lsblk output)')
    columns = _header_columns(lines[start])
    devices: dict[str, dict[str, Any]] = {}
    stack: list[tuple[int, str]] = []  # (indent of the name, name) of the open ancestors
    last: dict[str, Any] | None = None
    for number, line in enumerate(lines[start + 1 :], start=start + 2):
        indent = len(_TREE.match(line)[0])  # type: ignore[index]
        row = _table_row(" " * indent + line[indent:], columns)
        name = row.get("name", "")
        extra = row.get("mountpoints") or row.get("mountpoint") or name
        if len(row) == 1 and extra.startswith("/") and last is not None:
            last["mountpoints"].append(extra)  # continuation line of MOUNTPOINTS
            continue
        if not name or not re.match(r"^[\w.:+-]+$", name):
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        row["mountpoints"] = [row.pop("mountpoints")] if "mountpoints" in row else None
        last = _device(row, stack[-1][1] if stack else None, src(artifact, number, line))
        _add(devices, last)
        stack.append((indent, name))
    if not devices:
        raise ParseError("an lsblk table header but no device lines")
    return _link_children(devices)


def parse(text: str, artifact: str) -> Section:
    head = head_lines(text, 20)
    if any(line.lstrip().startswith("{") for line in head):
        devices, layout = _parse_json(text, artifact), "json"
    elif any(_TABLE_HEADER.match(line) for line in head):
        devices, layout = _parse_table(text, artifact), "table"
    else:
        devices, layout = _parse_pairs(text, artifact), "pairs"
    by_name = {device["name"]: device for device in devices if device["name"]}
    return {"devices": devices, "by_name": by_name, "format": layout}


# Column names lsblk prints (-o, -t, -f, -l, -P): a header or pairs naming two of them is lsblk's.
_COLUMNS = frozenset(
    "NAME KNAME PATH MAJ:MIN RM RO SIZE TYPE MOUNTPOINT MOUNTPOINTS FSTYPE FSVER LABEL UUID FSAVAIL "
    "FSUSE% FSSIZE FSUSED ALIGNMENT MIN-IO OPT-IO PHY-SEC LOG-SEC ROTA SCHED RQ-SIZE RA WSAME MODEL "
    "SERIAL TRAN PKNAME VENDOR REV STATE HCTL WWN PARTUUID PARTLABEL DISC-ALN DISC-GRAN DISC-MAX "
    "DISC-ZERO SUBSYSTEMS".split()
)


def is_table_header(line: str) -> bool:
    """Whether ``line`` is lsblk's column header (``NAME MAJ:MIN RM SIZE RO TYPE MOUNTPOINTS``)."""
    stripped = line.strip()
    return bool(_TABLE_HEADER.match(stripped)) and len(_COLUMNS.intersection(stripped.split()[1:])) >= 2


def recognise(text: str) -> bool:
    """lsblk's JSON, a table whose header (``-t``, ``-f``, ``-l`` or plain) names two more of its
    columns after NAME, or ``-P`` pairs with NAME and another of its columns, in any order."""
    head = "\n".join(head_lines(text, 100))
    if '"blockdevices"' in head:
        return True
    for line in head.split("\n")[:5]:
        if _TABLE_HEADER.match(line) and len(_COLUMNS.intersection(line.split()[1:])) >= 2:
            return True
    pair_lines = [keys for line in head.split("\n") if len(keys := [k for k, _ in _PAIR.findall(line)]) >= 2]
    return bool(pair_lines) and all("NAME" in k and len(_COLUMNS.intersection(k)) >= 2 for k in pair_lines)


PROBES: tuple[Probe, ...] = (
    Probe(
        section="lsblk",
        title="block devices (disks, partitions, md/dm stacks) with sizes, mounts and transport",
        sources=(
            # --sysroot (util-linux >= 2.34) reads another root's /sys and /proc (check --host-root)
            Source(
                "cmd/lsblk.json",
                argv=("lsblk", "-J", "-b", "-o", COLUMNS_FULL),
                root_argv=("lsblk", "--sysroot", "{root}", "-J", "-b", "-o", COLUMNS_FULL),
            ),
            Source(
                "cmd/lsblk-compat.json",
                argv=("lsblk", "-J", "-b", "-o", COLUMNS_COMPAT),
                root_argv=("lsblk", "--sysroot", "{root}", "-J", "-b", "-o", COLUMNS_COMPAT),
            ),
            Source("cmd/lsblk-pairs.txt", argv=("lsblk", "-P", "-b", "-o", COLUMNS_COMPAT)),
        ),
        parse=parse,
        recognise=recognise,
        paste_hint=f"`lsblk -J -b -o {COLUMNS_FULL}` (or plain `lsblk -J`)",
    ),
)
