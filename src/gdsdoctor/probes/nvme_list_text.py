"""``nvme list`` as printed (no ``-o json``), read into the ``nvme_list`` section the JSON fills:

    Node            SN              Model                Namespace Usage                Format        FW Rev
    --------------- --------------- -------------------- --------- -------------------- ------------- --------
    /dev/nvme0n1    S64FNE0R906008  SAMSUNG MZQL2960HCJR 1         22.08 GB / 960.20 GB 512 B +  0 B  GDC5302Q

Columns are cut where the dashes under the header are (a model holds spaces), so every nvme-cli
layout with that rule line reads alike: 1.x and 2.x (with or without the ``Generic`` column), and
the ``nvme list -v`` tables (controllers: ``Device … TxPort Address … Subsystem``, namespaces:
``Device … NSID Usage Format Controllers``). ``layout`` is ``text`` or ``text-verbose``.
"""

from __future__ import annotations

import re
from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Section, head_lines, src

_RULE = lazy_compile(r"^\s*-{3,}(?:\s+-{2,})+\s*$")
_USAGE = lazy_compile(r"(?<![\d.])([\d.]+)\s*([KMGTP]?B)\s*/\s*([\d.]+)\s*([KMGTP]?B)")
_SECTOR = lazy_compile(r"^(\d+)\s*(KiB|B)")
_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15}
Row = dict[str, Any]


def tables(text: str) -> list[tuple[list[str], list[tuple[int, str, Row]]]]:
    """Each table: its column names and rows ``(line number, line, {column: cell})``."""
    lines = text.split("\n")
    found = []
    for index in range(1, len(lines)):
        if not _RULE.match(lines[index]) or not lines[index - 1].strip():
            continue
        spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[index])]
        starts = [start for start, _ in spans] + [10**6]
        header = lines[index - 1]
        names = [header[starts[i] : starts[i + 1]].strip() for i in range(len(spans))]
        rows = []
        for number in range(index + 1, len(lines)):
            line = lines[number]
            if not line.strip() or _RULE.match(line):
                break
            cells = {names[i]: line[starts[i] : starts[i + 1]].strip() for i in range(len(spans))}
            rows.append((number + 1, line, cells))
        found.append((names, rows))
    return found


def is_text(text: str) -> bool:
    return any(_kind(names) for names, _ in tables("\n".join(head_lines(text, 60))))


def _kind(names: list[str]) -> str | None:
    if {"Node", "SN", "Model"} <= set(names):
        return "list"
    if {"Device", "TxPort", "Address"} <= set(names):
        return "controllers"
    if {"Device", "NSID", "Usage"} <= set(names):
        return "namespaces"
    return None


def parse(text: str, artifact: str) -> Section:
    namespaces: list[Row] = []
    controllers: list[Row] = []
    verbose = False
    for names, rows in tables(text):
        kind = _kind(names)
        for number, line, cells in rows:
            provenance = src(artifact, number, line)
            if kind == "list":
                namespaces.append(_namespace(cells["Node"], cells, provenance))
            elif kind == "namespaces":
                verbose = True
                namespaces.append(_namespace(cells["Device"], cells, provenance))
            elif kind == "controllers":
                verbose = True
                controllers.append(_controller(cells, provenance))
    if not namespaces and not controllers:
        raise ParseError("no `Node  SN  Model …` table rows (expected `nvme list` output)")
    layout = "text-verbose" if verbose else "text"
    return {"layout": layout, "namespaces": namespaces, "controllers": controllers}


def _namespace(node: str, cells: Row, provenance: dict[str, Any]) -> Row:
    device = node.rsplit("/", 1)[-1]
    used, physical = _usage(cells.get("Usage", ""))
    nsid = cells.get("Namespace") or cells.get("NSID") or ""
    controller = (cells.get("Controllers") or "").split(",")[0].strip() or None
    return {
        "device": device,
        "device_path": node if node.startswith("/") else f"/dev/{device}",
        "nsid": int(nsid, 0) if re.fullmatch(r"0x[0-9a-fA-F]+|\d+", nsid) else None,
        "controller": controller,
        "subsystem": None,
        "model": cells.get("Model") or None,
        "serial": cells.get("SN") or None,
        "firmware": cells.get("FW Rev") or None,
        "used_bytes": used,
        "physical_size_bytes": physical,
        "sector_size": _sector(cells.get("Format", "")),
        "src": provenance,
    }


def _controller(cells: Row, provenance: dict[str, Any]) -> Row:
    address = cells.get("Address") or None
    return {
        "name": cells.get("Device") or None,
        "transport": cells.get("TxPort") or None,
        "address": address,
        "traddr": address if cells.get("TxPort") == "pcie" else None,
        "subsystem": cells.get("Subsystem") or None,
        "subsystem_nqn": None,
        "model": cells.get("MN") or None,
        "serial": cells.get("SN") or None,
        "firmware": cells.get("FR") or None,
        "src": provenance,
    }


def _usage(cell: str) -> tuple[int | None, int | None]:
    """``22.08  GB / 960.20  GB`` (decimal units, as nvme-cli prints them) in bytes."""
    match = _USAGE.search(cell)
    if not match:
        return None, None
    used = round(float(match[1]) * _UNITS.get(match[2].upper(), 1))
    return used, round(float(match[3]) * _UNITS.get(match[4].upper(), 1))


def _sector(cell: str) -> int | None:
    match = _SECTOR.match(cell.strip())
    if not match:
        return None
    return int(match[1]) * (1024 if match[2] == "KiB" else 1)
