"""Loop devices and the files behind them (``losetup -l -J``): which filesystem a loop device's
image lives on, so that a full filesystem and the loop device on it are known to be one stack
(engine/rank.py folds a finding under another only then).

Section ``losetup``: ``{"devices": [{name ("loop0"), back_file ("/srv/images/ckpt.img"),
deleted (the file was removed while attached), ro, src}]}``, from the JSON form::

    {"loopdevices": [{"name": "/dev/loop0", "sizelimit": 0, "offset": 0, "autoclear": false,
      "ro": false, "back-file": "/srv/images/ckpt.img", "dio": false, "log-sec": 512}]}

or a pasted table (``losetup -l``, ``losetup -a``)::

    NAME       SIZELIMIT OFFSET AUTOCLEAR RO BACK-FILE              DIO LOG-SEC
    /dev/loop0         0      0         0  0 /srv/images/ckpt.img   0     512
    /dev/loop1: []: (/var/lib/snapd/snaps/core20_2105.snap)

With no loop device ``losetup -l -J`` prints nothing: an empty list. Under ``--host-root`` it is
not run (it would list this machine's loop devices).
"""

from __future__ import annotations

import json
from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, Source, numbered_lines, src

_DELETED = " (deleted)"
_ALL = lazy_compile(
    r"^(?P<name>/dev/loop\d+):[ \t]+\[[^\]\n]*\]:\d*[ \t]+\((?P<file>[^\n]+)\)[ \t]*$"
)  # losetup -a


def parse(text: str, artifact: str) -> Section:
    if not text.strip():
        return {"devices": []}
    if text.lstrip().startswith("{"):
        return {"devices": _from_json(text, artifact)}
    devices = _from_table(text, artifact)
    if not devices:
        raise ParseError("no loop device lines (expected `losetup -l` or `losetup -l -J` output)")
    return {"devices": devices}


def _entry(name: str, back_file: str, ro: Any, line: dict[str, Any]) -> dict[str, Any]:
    deleted = back_file.endswith(_DELETED)
    return {
        "name": name.removeprefix("/dev/"),
        "back_file": back_file.removesuffix(_DELETED) or None,
        "deleted": deleted,
        "ro": ro if isinstance(ro, bool) else (str(ro) == "1" if ro is not None else None),
        "src": line,
    }


def _from_json(text: str, artifact: str) -> list[dict[str, Any]]:
    try:
        found = json.loads(text)["loopdevices"]
    except (ValueError, KeyError, TypeError) as error:
        raise ParseError(f"not losetup -J output ({type(error).__name__})") from None
    lines = text.split("\n")
    devices = []
    for item in found if isinstance(found, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        number = next((n for n, t in enumerate(lines, 1) if f'"{item["name"]}"' in t), 1)
        back = item.get("back-file") if isinstance(item.get("back-file"), str) else ""
        devices.append(_entry(item["name"], back, item.get("ro"), src(artifact, number, lines[number - 1])))
    return devices


def _from_table(text: str, artifact: str) -> list[dict[str, Any]]:
    devices: list[dict[str, Any]] = []
    start, after, ro_at = None, 0, -1
    for number, line in numbered_lines(text):
        if (listed := _ALL.match(line.strip())) is not None:
            devices.append(_entry(listed["name"], listed["file"], None, src(artifact, number, line)))
        elif line.startswith("NAME") and "BACK-FILE" in line:
            start, ro_at = line.index("BACK-FILE"), line.find(" RO ")
            after = len(line[start:].split()) - 1  # columns after the file (DIO, LOG-SEC)
        elif start is not None and line.startswith("/dev/loop"):
            rest = line[start:].rstrip()
            back = rest.rsplit(None, after)[0] if after else rest
            ro = line[ro_at : ro_at + 4].strip() if ro_at > 0 else None
            devices.append(_entry(line.split()[0], back.strip(), ro or None, src(artifact, number, line)))
    return devices


def recognise(text: str) -> bool:
    head = text.lstrip()[:600]
    if head.startswith("{"):
        return '"loopdevices"' in head
    first = head.split("\n", 1)[0]
    return (first.startswith("NAME") and "BACK-FILE" in first) or bool(_ALL.match(first.strip()))


PROBES: tuple[Probe, ...] = (
    Probe(
        section="losetup",
        title="loop devices and the image files behind them (losetup -l -J)",
        sources=(Source("cmd/losetup-l.json", argv=("losetup", "-l", "-J")),),
        parse=parse,
        recognise=recognise,
        paste_hint="`losetup -l`",
        tags=("storage",),
    ),
)
