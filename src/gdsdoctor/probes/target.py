"""The checkpoint path given with ``--path``: the filesystem that holds it and its free space.

Captured with ``findmnt -J -b -T PATH`` (util-linux), in a subprocess, so that a stale
network mount under the path hangs a killable child and not the doctor::

    {"filesystems": [{"target": "/mnt/ckpt", "source": "/dev/nvme0n1", "fstype": "xfs",
      "options": "rw,noatime", "maj:min": "259:0", "size": 1000, "avail": 900, "used": 100}]}

Section ``target``: ``mountpoint``, ``device``, ``fstype``, ``options``, ``majmin``,
``size_bytes``, ``avail_bytes``, ``used_bytes`` and ``src``. The path itself is added by the
facts layer from the capture options (``target.path``).
"""

from __future__ import annotations

import json

from gdsdoctor.errors import ParseError
from gdsdoctor.probes.base import Probe, Section, Source, src

ARTIFACT = "cmd/findmnt-target.json"
_COLUMNS = "TARGET,SOURCE,FSTYPE,OPTIONS,MAJ:MIN,SIZE,AVAIL,USED"


def _number(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdecimal():
        return int(value)
    return None


def parse(text: str, artifact: str) -> Section:
    try:
        document = json.loads(text)
        entry = document["filesystems"][0]
    except (ValueError, KeyError, IndexError, TypeError) as error:
        raise ParseError(f"not findmnt -J output ({type(error).__name__})") from None
    if not isinstance(entry, dict):
        raise ParseError("findmnt entry is not an object")
    line = next((n for n, t in enumerate(text.split("\n"), 1) if '"target"' in t), 1)
    return {
        "mountpoint": entry.get("target"),
        "device": entry.get("source"),
        "fstype": entry.get("fstype"),
        "options": entry.get("options"),
        "majmin": entry.get("maj:min"),
        "size_bytes": _number(entry.get("size")),
        "avail_bytes": _number(entry.get("avail")),
        "used_bytes": _number(entry.get("used")),
        "src": src(artifact, line, text.split("\n")[line - 1]),
    }


def recognise(text: str) -> bool:
    head = text.lstrip()[:400]
    return head.startswith("{") and '"filesystems"' in head and '"avail"' in text[:2000]


def probe_for(path: str) -> Probe:
    """The probe for one path: findmnt on exactly that path (argv, never a shell)."""
    argv = ("findmnt", "-J", "-b", "-T", path, "-o", _COLUMNS)
    return Probe(
        section="target",
        title="filesystem and free space behind --path",
        sources=(Source(ARTIFACT, argv=argv, timeout=10.0),),
        parse=parse,
        recognise=recognise,
        paste_hint="`findmnt -J -b -T PATH`",
        targeted=True,
    )


PROBE = probe_for("PATH")
