"""BeeGFS quotas: ``beegfs-ctl --getquota`` (BeeGFS 7) and the site wrappers that print its table.

BeeGFS counts each user's and group's space and chunk files per storage pool; a write past a hard
limit fails with "Disk quota exceeded" however much the storage targets have free::

    Quota information for storage pool scratch (ID: 1):
          user/group     ||           size          ||    chunk files
         name     |  id  ||    used    |    hard    ||  used   |  hard
    --------------|------||------------|------------||---------|---------
          <netid>|588559||   20.63 GiB|    5.00 TiB||   278772|  1000000

Section ``beegfs_quota``: the ``fs_quota`` shape (``fs_targets.quota_entry``): ``{"quotas": [{kind
(null: the table does not say user or group), owner, id, filesystem (the storage pool, a wrapper's
``storage`` column, or the path a wrapper printed above the table), used_bytes, hard_bytes (null:
unlimited), files, files_hard, src}]}``; BeeGFS has no soft limits. Sizes are binary (GiB, TiB).

>>> section = parse_getquota("      user/group     ||           size          ||    chunk files\\n"
...     "         alice| 99002||   88.71 GiB| 1000.00 GiB||   645266|unlimited\\n", "q.txt")
>>> [(q["owner"], q["hard_bytes"], q["files_hard"]) for q in section["quotas"]]
[('alice', 1073741824000, None)]
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, head_lines, numbered_lines, src
from gdsdoctor.probes.fs_targets import combine_quotas, quota_entry
from gdsdoctor.probes.text import size_bytes

_TITLE = lazy_compile(r"^\s*(?:storage\s+)?user/group\s+\|\|\s+size\s+\|\|\s+chunk files\s*$")
_POOL = lazy_compile(r"^\s*Quota information for storage pool (?P<pool>\S{1,64}) \(ID: \d{1,6}\):\s*$")
_PATH = lazy_compile(r"^\s*(?P<path>/\S{0,400})\s*$")  # a wrapper names the filesystem above a table
_SIZE = lazy_compile(r"[\d.]{1,16} ?[A-Za-z]{1,5}|unlimited")
_COUNT = lazy_compile(r"\d{1,20}|unlimited")


def _row(line: str) -> dict[str, str] | None:
    """``[storage |] name | id || used | hard || used | hard``, cut at its bars (no backtracking)."""
    parts = line.split("||")
    if len(parts) != 3:
        return None
    who, size, files = ([cell.strip() for cell in part.split("|")] for part in parts)
    if len(who) not in (2, 3) or len(size) != 2 or len(files) != 2:
        return None
    if not all(_SIZE.fullmatch(v) for v in size) or not all(_COUNT.fullmatch(v) for v in files):
        return None
    if not files[0].isdecimal() or size[0] == "unlimited":  # usage is a number, only limits are unlimited
        return None
    storage = who[0] if len(who) == 3 else None
    return {"storage": storage, "name": who[-2], "id": who[-1], "used": size[0], "hard": size[1],
            "files": files[0], "files_hard": files[1]}  # fmt: skip


def _bytes(value: str) -> int | None:
    """``20.63 GiB``, ``0 Byte`` (BeeGFS's binary sizes); None for ``unlimited``."""
    text = value.replace(" ", "").replace("Bytes", "B").replace("Byte", "B")
    return None if text == "unlimited" else size_bytes(text)[0]


def _quota(row: dict[str, str], where: str | None, provenance: dict[str, Any]) -> dict[str, Any]:
    files_hard = int(row["files_hard"]) if row["files_hard"].isdecimal() else 0
    return quota_entry(
        provenance, owner=row["name"], id=int(row["id"]) if row["id"].isdecimal() else None,
        filesystem=row["storage"] or where, used_bytes=_bytes(row["used"]),
        hard_bytes=_bytes(row["hard"]) or None, files=int(row["files"]), files_hard=files_hard or None,
    )  # fmt: skip


def parse_getquota(text: str, artifact: str) -> Section:
    """Every table row, each under the pool or path printed above its table."""
    where: str | None = None
    quotas: list[dict[str, Any]] = []
    seen_title = False
    for number, line in numbered_lines(text):
        if match := _POOL.match(line):
            where = f"storage pool {match['pool']}"
        elif match := _PATH.match(line):
            where = match["path"]
        elif _TITLE.match(line):
            seen_title = True
        elif seen_title and (row := _row(line)):
            quotas.append(_quota(row, where, src(artifact, number, line)))
    if not quotas:
        raise ParseError(
            "no `user/group || size || chunk files` table rows (expected `beegfs-ctl --getquota`)"
        )
    return {"quotas": quotas}


def recognise_getquota(text: str) -> bool:
    return any(_TITLE.match(line) for line in head_lines(text, 40))


PROBE = Probe(
    section="beegfs_quota",
    title="BeeGFS user and group quotas per storage pool (beegfs-ctl --getquota)",
    sources=(),  # pasted: which uid, gid and pool to ask is the site's (wrappers print the same table)
    parse=parse_getquota,
    recognise=recognise_getquota,
    combine=combine_quotas,
    paste_hint='`beegfs-ctl --getquota --uid "$USER"` (and `--gid GROUP`)',
    tags=("storage",),
)
