"""IBM Storage Scale (GPFS) quotas: ``mmlsquota`` (and site wrappers printing its table).

A user, group or fileset over its block or file limit gets "Disk quota exceeded" however much the
filesystem has free; GPFS also counts usage it has not yet settled across nodes (``in_doubt``)::

                         Block Limits                          |     File Limits
    Filesystem type       KB      quota      limit in_doubt grace | files   quota   limit in_doubt grace
    gpfs       USR  28292096 3221225472 4294967296        0  none | 136704 2000000 3000000     0  none

Section ``gpfs_quota``: the ``fs_quota`` shape (``fs_targets.quota_entry``): ``{"quotas": [{kind
("usr"|"grp"|"fileset"), owner (from a ``Disk quotas for group NAME (gid N):`` title; else null: the
user running it), id, filesystem, used_bytes, soft_bytes (``quota``), hard_bytes (``limit``; null:
0, no limit), in_doubt_bytes, grace, files, files_soft, files_hard, files_in_doubt, over_soft (a
grace period shown instead of ``none``: the soft limit is passed), src}]}``. The block column is in
the unit its title says (``KB``, ``MB``, ``GB``, ``TB``; ``blocks`` with ``--block-size=auto``:
each value carries its own suffix); sizes are binary. A ``no limits`` row has no limits to judge.

>>> section = parse_mmlsquota("                         Block Limits        |     File Limits\\n"
...     "Filesystem type             KB      quota      limit   in_doubt    grace |    files   quota"
...     "    limit in_doubt    grace  Remarks\\n"
...     "gpfs       USR        28292096 3221225472 4294967296          0     none |   136704 2000000"
...     "  3000000        0     none\\n", "q.txt")
>>> [(q["kind"], q["used_bytes"], q["hard_bytes"]) for q in section["quotas"]]
[('usr', 28971106304, 4398046511104)]
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, head_lines, numbered_lines, src
from gdsdoctor.probes.fs_targets import combine_quotas, quota_entry
from gdsdoctor.probes.text import size_bytes

_TITLE = lazy_compile(r"^\s*Block Limits\s+\|\s+File Limits\s*$")
_COLUMNS = lazy_compile(
    r"^\s*(?P<first>Filesystem|Name)\s+type\s+(?P<unit>KB|MB|GB|TB|blocks)\s+quota\s+limit\s+in_doubt"
    r"\s+grace\s+\|"
)
_OWNER = lazy_compile(
    r"^\s*Disk quotas for (?P<kind>user|group) (?P<owner>\S{1,64}) \((?:uid|gid) (?P<id>\d{1,12})\):"
)
_REPORT = lazy_compile(r"^\s*\*\*\* Report for .{1,40} quotas on (?P<fs>\S{1,64})\s*$")  # mmrepquota's title
_KINDS = {"USR": "usr", "GRP": "grp", "FILESET": "fileset"}
_UNITS = {"KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}


def _size(value: str, unit: str) -> int | None:
    if value.isdecimal():
        return int(value) * _UNITS.get(unit, 1024)  # `blocks` prints bare numbers in KiB
    return size_bytes(value)[0]


def _limit(value: int | None) -> int | None:
    return value or None  # 0: no limit


def _row(left: list[str], right: list[str], unit: str, context: dict[str, Any]) -> dict[str, Any] | None:
    """``FS TYPE used quota limit in_doubt grace… | files quota limit in_doubt grace… remarks``."""
    if len(left) < 6 or left[1] not in _KINDS or len(right) < 4:
        return None
    used, soft, hard, doubt = (_size(v, unit) for v in left[2:6])
    if used is None or not all(v.isdecimal() for v in right[:4]):
        return None
    grace, files_grace = " ".join(left[6:]) or None, right[4] if len(right) > 4 else None
    first = "filesystem" if context["first"] == "Filesystem" else "owner"
    files, files_soft, files_hard, files_doubt = (int(v) for v in right[:4])
    return {
        "kind": _KINDS[left[1]], "owner": context.get("owner"), "id": context.get("id"),
        "filesystem": context.get("filesystem"), first: left[0], "used_bytes": used,
        "soft_bytes": _limit(soft), "hard_bytes": _limit(hard), "in_doubt_bytes": doubt, "grace": grace,
        "files": files, "files_soft": _limit(files_soft), "files_hard": _limit(files_hard),
        "files_in_doubt": files_doubt,
        "over_soft": (grace or "none") != "none" or (files_grace or "none") != "none",
    }  # fmt: skip


def parse_mmlsquota(text: str, artifact: str) -> Section:
    context: dict[str, Any] = {}
    unit: str | None = None
    quotas: list[dict[str, Any]] = []
    for number, line in numbered_lines(text):
        if match := _OWNER.match(line):
            context |= {"owner": match["owner"], "id": int(match["id"])}
        elif match := _REPORT.match(line):
            context["filesystem"] = match["fs"]
        elif match := _COLUMNS.match(line):
            unit, context["first"] = match["unit"], match["first"]
        elif unit and "|" in line and not _TITLE.match(line):
            left, _, right = line.partition("|")
            fields = _row(left.split(), right.split(), unit, context)
            if fields:
                quotas.append(quota_entry(src(artifact, number, line), **fields))
    if not quotas:
        raise ParseError("no `Filesystem type KB quota limit in_doubt grace |` rows (expected `mmlsquota`)")
    return {"quotas": quotas}


def recognise_mmlsquota(text: str) -> bool:
    head = head_lines(text, 40)
    return any(_TITLE.match(line) for line in head) and any(_COLUMNS.match(line) for line in head)


PROBE = Probe(
    section="gpfs_quota",
    title="IBM Storage Scale (GPFS) quotas (mmlsquota)",
    # pasted: mmlsquota lives in the GPFS tree (/usr/lpp/mmfs/bin) and picks its own filesystems
    sources=(),
    parse=parse_mmlsquota,
    recognise=recognise_mmlsquota,
    combine=combine_quotas,
    paste_hint="`mmlsquota` (or `mmlsquota -j FILESET FS` for a fileset)",
    tags=("storage",),
)
