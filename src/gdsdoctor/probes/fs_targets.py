"""Capacity as a parallel filesystem counts it: per storage target, and per quota.

A distributed checkpoint fails with "No space left on device" while ``df`` shows terabytes free when
one storage target is full (Lustre stripes each file over a few OSTs; BeeGFS over a few storage
targets), or when the metadata target runs out of inodes (a DCP save writes a file per rank), or
with "Disk quota exceeded" when the user's, group's or project's quota is reached.

Sections ``lfs_df`` (``lfs df``, sizes) and ``lfs_df_i`` (``lfs df -i``, inodes) and ``beegfs_df``
(BeeGFS 7 ``beegfs-df``, BeeGFS 8 ``beegfs health df``, both): ``{"targets": [...], "filesystems":
[...]}``::

    fsx-OST0000_UUID            1.1T       44.6M        1.1T   0% /fsx[OST:0]
    filesystem_summary:         3.3T      134.8M        3.3T   0% /fsx
         101         low     238.4GiB     144.2GiB  61%      125.0M      125.0M 100%
    s:302  storage  target_0-682AD7A2-3  s:3  s:1  Normal  893.8GiB  14.3GiB (1.60%)  879.5GiB …

- ``targets[]``: ``{fs ("lustre"|"beegfs"), fsname, name ("OST0000", "MDT0000", "101"), kind ("data"|
  "metadata"), index, mountpoint, size_bytes, used_bytes, avail_bytes, use_pct, inodes, inodes_used,
  inodes_free, inodes_use_pct, active (False for "inactive device"), pool (BeeGFS capacity pool:
  normal/low/emergency), exact, listing_cut (only when the paste left rows out: ``...``), src}``: the
  fields a listing does not give are null (``lfs df`` has
  no inodes, ``lfs df -i`` no sizes; a BeeGFS ``%`` is the share *free*, turned into ``use_pct``);
- ``filesystems[]``: the ``filesystem_summary:`` lines ``{fs, mountpoint, size_bytes, avail_bytes,
  use_pct, inodes, inodes_free, inodes_use_pct, src}``.

Sizes with a suffix (``lfs df -h``, BeeGFS ``GiB``) are binary and approximate (``exact`` False);
``lfs df`` without ``-h`` counts 1 KiB blocks. Inode counts with a suffix (``125.0M``) are SI.

Section ``fs_quota`` (``lfs quota``, ``quota -s``; live: ``quota -s -w`` for the user running the
check): ``{"quotas": [{kind ("usr"|"grp"|"prj"|"user"|"group"), owner, id, filesystem, used_bytes,
soft_bytes, hard_bytes (null when 0: no limit), grace, files, files_soft, files_hard, over_soft
(a ``*`` after the usage: the soft limit is exceeded), src}]}``.

>>> section = parse_lfs_df("UUID bytes Used Available Use% Mounted on\\n"
...     "fs-OST0001_UUID 14.5T 14.4T 12.0G 99% /lustre[OST:1]\\n", "lfs-df.txt")
>>> [(t["name"], t["kind"], t["use_pct"]) for t in section["targets"]]
[('OST0001', 'data', 99)]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, Source, head_lines, numbered_lines, src
from gdsdoctor.probes.text import size_bytes

_LFS_HEADER = lazy_compile(
    r"^\s*UUID\s+(?P<unit>bytes|1K-blocks|Inodes)\s+(?:Used|IUsed)\s+(?:Available|IFree)\s+I?Use%"
    r"\s+Mounted on\s*$"
)
_LFS_ROW = lazy_compile(
    r"^\s*(?P<uuid>[\w.-]{1,80}?)-(?P<kind>OST|MDT)(?P<hex>[0-9a-fA-F]{4})_UUID\s+(?P<size>\S{1,20})\s+"
    r"(?P<used>\S{1,20})\s+(?P<avail>\S{1,20})\s+(?P<pct>\d{1,3})%\s+(?P<mount>/\S{0,400}?)"
    r"(?:\[(?:OST|MDT):(?P<index>\d{1,6})\])?\s*$"
)
_LFS_SUMMARY = lazy_compile(
    r"^\s*filesystem_summary:\s+(?P<size>\S{1,20})\s+(?P<used>\S{1,20})\s+(?P<avail>\S{1,20})\s+"
    r"(?P<pct>\d{1,3})%\s+(?P<mount>/\S{0,400})\s*$"
)
_LFS_INACTIVE = lazy_compile(
    r"^\s*(?:(?P<fsname>[\w.-]{1,80}?)-)?(?P<kind>OST|MDT)(?P<hex>[0-9a-fA-F]{4})(?:_UUID)?"
    r"\s*:\s*inactive device\s*$"
)
# a paste that left rows out ("...", "[...]", "…" on its own line)
_ELIDED = lazy_compile(r"^\s*(?:\.\.\.|\[\.\.\.\]|…)\s*$")
_BEEGFS_SECTION = lazy_compile(
    r"^\s*(?:(?P<section>METADATA SERVERS|STORAGE TARGETS):|## (?P<section8>Metadata|Storage) Targets)\s*$"
)
# BeeGFS 8 `beegfs health df`: ID TYPE ALIAS NODE STORAGE_POOL CAP_POOL SPACE SPACE_USED SPACE_FREE INODES…
_BEEGFS8_HEADER = lazy_compile(
    r"^\s*ID\s+TYPE\s+ALIAS\s+NODE\s+STORAGE_POOL\s+CAP_POOL\s+SPACE\s+SPACE_USED\s+SPACE_FREE\b"
)
_BEEGFS8_ROW = lazy_compile(
    r"^\s*[ms]:(?P<id>\d{1,6})\s+(?P<type>meta|storage)\s+\S{1,120}\s+\S{1,40}\s+\S{1,40}\s+(?P<pool>[A-Za-z]{1,12})"
    r"\s+(?P<total>[\d.]{1,12}[KMGTPE]?i?B)\s+(?P<used>[\d.]{1,12}[KMGTPE]?i?B)\s+\((?P<used_pct>[\d.]{1,6})%\)"
    r"\s+(?P<free>[\d.]{1,12}[KMGTPE]?i?B)\s+(?P<itotal>[\d.]{1,12}[kKMGT]?)\s+(?P<iused>[\d.]{1,12}[kKMGT]?)"
    r"\s+\((?P<iused_pct>[\d.]{1,6})%\)\s+(?P<ifree>[\d.]{1,12}[kKMGT]?)\s*$"
)
_BEEGFS_HEADER = lazy_compile(r"^\s*TargetID\s+(?:Cap\. )?Pool\s+Total\s+Free\s+%\s+ITotal\s+IFree\s+%\s*$")
_BEEGFS_ROW = lazy_compile(
    r"^\s*(?P<id>\d{1,6})\s+(?P<pool>[a-z]{1,12})\s+(?P<total>[\d.]{1,12}[KMGTPE]iB)"
    r"\s+(?P<free>[\d.]{1,12}[KMGTPE]iB)\s+(?P<free_pct>\d{1,3})%\s+(?P<itotal>[\d.]{1,12}[kKMGT]?)"
    r"\s+(?P<ifree>[\d.]{1,12}[kKMGT]?)\s+(?P<ifree_pct>\d{1,3})%\s*$"
)
_QUOTA_HEADER = lazy_compile(
    r"^\s*Disk quotas for (?P<kind>usr|grp|prj|user|group|project) (?P<owner>\S{1,64}) "
    r"\((?:uid|gid|pid|prj|projid)? ?(?P<id>\d{1,12})\)"
)
_QUOTA_COLUMNS = lazy_compile(
    # Lustre 2.16 prints bquota blimit bgrace … iquota ilimit igrace
    r"^\s*Filesystem\s+(?P<unit>kbytes|used|space|blocks)\s+b?quota\s+b?limit\s+b?grace\s+files"
)
_QUOTA_NUMBER = lazy_compile(r"\[?[\d.]{1,20}[kKMGTP]?\]?\*?")
_SI_COUNT = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}


def _lfs_size(value: str, unit: str) -> tuple[int | None, bool]:
    if unit == "1K-blocks":
        return (int(value) * 1024, True) if value.isdecimal() else (None, False)
    return size_bytes(value if value[-1:].isalpha() else value + "K") if unit == "bytes" else (None, False)


def _count(value: str) -> int | None:
    match = re.fullmatch(r"\[?([\d.]{1,20})([kKMGT]?)\]?\*?", value)
    if not match:
        return None
    return round(float(match[1]) * _SI_COUNT[match[2].lower()])


def _target(fs: str, name: str, kind: str, provenance: dict[str, Any], **fields: Any) -> dict[str, Any]:
    keys = ("fsname", "index", "mountpoint", "size_bytes", "used_bytes", "avail_bytes", "use_pct", "inodes",
            "inodes_used", "inodes_free", "inodes_use_pct", "pool")  # fmt: skip
    record = {"fs": fs, "name": name, "kind": kind, "active": fields.pop("active", True)}
    record |= {key: fields.get(key) for key in keys}
    return record | {"exact": fields.get("exact", False), "src": provenance}


def _lfs_row(match: re.Match[str], unit: str, provenance: dict[str, Any]) -> dict[str, Any]:
    kind = "data" if match["kind"] == "OST" else "metadata"
    index = int(match["index"]) if match["index"] else int(match["hex"], 16)
    fields: dict[str, Any] = {"fsname": match["uuid"], "mountpoint": match["mount"], "index": index}
    if unit == "Inodes":
        fields |= {"inodes": _count(match["size"]), "inodes_used": _count(match["used"]),
                   "inodes_free": _count(match["avail"]), "inodes_use_pct": int(match["pct"])}  # fmt: skip
    else:
        size, exact = _lfs_size(match["size"], unit)
        used, avail = _lfs_size(match["used"], unit)[0], _lfs_size(match["avail"], unit)[0]
        fields |= {"size_bytes": size, "used_bytes": used, "avail_bytes": avail,
                   "use_pct": int(match["pct"]), "exact": exact}  # fmt: skip
    return _target("lustre", f"{match['kind']}{match['hex'].upper()}", kind, provenance, **fields)


def _lfs_summary(match: re.Match[str], unit: str, provenance: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {"fs": "lustre", "mountpoint": match["mount"]}
    entry |= dict.fromkeys(
        ("size_bytes", "avail_bytes", "use_pct", "inodes", "inodes_free", "inodes_use_pct")
    )
    if unit == "Inodes":
        entry |= {"inodes": _count(match["size"]), "inodes_free": _count(match["avail"]),
                  "inodes_use_pct": int(match["pct"])}  # fmt: skip
    else:
        size, avail = _lfs_size(match["size"], unit)[0], _lfs_size(match["avail"], unit)[0]
        entry |= {"size_bytes": size, "avail_bytes": avail, "use_pct": int(match["pct"])}
    return entry | {"src": provenance}


def parse_lfs_df(text: str, artifact: str) -> Section:
    """``lfs df`` / ``lfs df -h`` / ``lfs df -i`` (one or several listings in one paste)."""
    unit: str | None = None
    targets: list[dict[str, Any]] = []
    filesystems: list[dict[str, Any]] = []
    cut = False
    for number, line in numbered_lines(text):
        if header := _LFS_HEADER.match(line):
            unit = header["unit"]
            continue
        if inactive := _LFS_INACTIVE.match(line):
            kind = "data" if inactive["kind"] == "OST" else "metadata"
            targets.append(_target("lustre", f"{inactive['kind']}{inactive['hex'].upper()}", kind,
                                   src(artifact, number, line), active=False, fsname=inactive["fsname"],
                                   index=int(inactive["hex"], 16)))  # fmt: skip
        elif unit and (row := _LFS_ROW.match(line)):
            targets.append(_lfs_row(row, unit, src(artifact, number, line)))
        elif unit and (summary := _LFS_SUMMARY.match(line)):
            filesystems.append(_lfs_summary(summary, unit, src(artifact, number, line)))
        elif unit and _ELIDED.match(line):
            cut = True
    if unit is None or not (targets or filesystems):
        raise ParseError(
            "no `UUID bytes|1K-blocks|Inodes Used Available Use% Mounted on` table (expected `lfs df`)"
        )
    if cut:  # rows left out of the paste: the indexes listed tell how many targets there are
        for target in targets:
            target["listing_cut"] = True
    return {"targets": targets, "filesystems": filesystems}


def _beegfs8_row(row: re.Match[str], provenance: dict[str, Any]) -> dict[str, Any]:
    """A row of BeeGFS 8's ``beegfs health df``: sizes with their units, used shares given."""
    total, used, free = (size_bytes(row[key])[0] for key in ("total", "used", "free"))
    inodes, inodes_used, inodes_free = (_count(row[key]) for key in ("itotal", "iused", "ifree"))
    return _target("beegfs", row["id"], "metadata" if row["type"] == "meta" else "data", provenance,
                   index=int(row["id"]), size_bytes=total, used_bytes=used, avail_bytes=free,
                   use_pct=round(float(row["used_pct"])), inodes=inodes, inodes_used=inodes_used,
                   inodes_free=inodes_free, inodes_use_pct=round(float(row["iused_pct"])),
                   pool=row["pool"].lower())  # fmt: skip


def parse_beegfs_df(text: str, artifact: str) -> Section:
    """``beegfs-df`` (BeeGFS 7: METADATA SERVERS and STORAGE TARGETS) and ``beegfs health df``
    (BeeGFS 8: ``## Metadata Targets`` and ``## Storage Targets``)."""
    section: str | None = None
    targets: list[dict[str, Any]] = []
    for number, line in numbered_lines(text):
        if match := _BEEGFS_SECTION.match(line):
            section = match["section"] or match["section8"]
        elif section and (row8 := _BEEGFS8_ROW.match(line)):
            targets.append(_beegfs8_row(row8, src(artifact, number, line)))
        elif section and (row := _BEEGFS_ROW.match(line)):
            total, free = size_bytes(row["total"])[0], size_bytes(row["free"])[0]
            inodes, inodes_free = _count(row["itotal"]), _count(row["ifree"])
            targets.append(_target(
                "beegfs", row["id"], "metadata" if section == "METADATA SERVERS" else "data",
                src(artifact, number, line), index=int(row["id"]), size_bytes=total, avail_bytes=free,
                used_bytes=total - free if total is not None and free is not None else None,
                use_pct=100 - int(row["free_pct"]), inodes=inodes, inodes_free=inodes_free,
                inodes_used=inodes - inodes_free if inodes is not None and inodes_free is not None else None,
                inodes_use_pct=100 - int(row["ifree_pct"]), pool=row["pool"]))  # fmt: skip
    if not targets:
        raise ParseError(
            "no `METADATA SERVERS:` / `STORAGE TARGETS:` tables (expected `beegfs-df` or `beegfs health df`)"
        )
    return {"targets": targets, "filesystems": []}


QUOTA_KEYS = ("kind", "owner", "id", "filesystem", "used_bytes", "soft_bytes", "hard_bytes", "grace", "files",
              "files_soft", "files_hard")  # fmt: skip


def quota_entry(provenance: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """One quota in the ``fs_quota`` shape, whichever tool printed it (null: not given, or no limit)."""
    extra = {key: value for key, value in fields.items() if key not in QUOTA_KEYS and key != "over_soft"}
    return {**{key: fields.get(key) for key in QUOTA_KEYS}, "over_soft": bool(fields.get("over_soft")),
            **extra, "src": provenance}  # fmt: skip


def _quota_bytes(value: str, unit: str) -> int | None:
    cleaned = value.strip("[]*")
    if unit in ("kbytes", "blocks") and cleaned.isdecimal():
        return int(cleaned) * 1024
    bytes_, _ = size_bytes(cleaned if cleaned[-1:].isalpha() else cleaned + "K")
    return bytes_


def _quota_fields(tokens: list[str]) -> dict[str, str | None] | None:
    """used soft hard [grace] files soft hard [grace]: a grace column is blank in `quota` until a soft
    limit is passed, so a row has 6, 7 or 8 values."""
    numeric = [bool(_QUOTA_NUMBER.fullmatch(t)) for t in tokens]
    if len(tokens) == 8 and numeric[:3] == [True] * 3 and all(numeric[4:7]):
        order = ("used", "soft", "hard", "grace", "files", "fsoft", "fhard", None)
    elif len(tokens) == 7 and all(numeric[:3]):
        grace_first = not numeric[3]
        order = ("used", "soft", "hard", "grace", "files", "fsoft", "fhard") if grace_first else (
            "used", "soft", "hard", "files", "fsoft", "fhard", None)  # fmt: skip
    elif len(tokens) == 6 and all(numeric):
        order = ("used", "soft", "hard", "files", "fsoft", "fhard")
    else:
        return None
    fields: dict[str, str | None] = {key: value for key, value in zip(order, tokens, strict=True) if key}
    if not all(
        _QUOTA_NUMBER.fullmatch(fields[k] or "") for k in ("used", "soft", "hard", "files", "fsoft", "fhard")
    ):
        return None
    return fields


def _quota(owner: dict[str, Any], unit: str, fields: dict[str, str | None], fs: str | None,
           provenance: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    used, files = fields["used"] or "", fields["files"] or ""
    hard, soft = _quota_bytes(fields["hard"] or "", unit), _quota_bytes(fields["soft"] or "", unit)
    grace = fields.get("grace")
    return {
        **owner, "filesystem": fs,
        "used_bytes": _quota_bytes(used, unit), "soft_bytes": soft or None, "hard_bytes": hard or None,
        "grace": None if grace in (None, "-") else grace, "files": _count(files),
        "files_soft": _count(fields["fsoft"] or "") or None,
        "files_hard": _count(fields["fhard"] or "") or None,
        "over_soft": used.endswith("*") or files.endswith("*"), "src": provenance,
    }  # fmt: skip


def parse_quota(text: str, artifact: str) -> Section:
    """``lfs quota [-h] -u USER MOUNT`` and ``quota [-s]``: one entry per filesystem row. A
    filesystem name alone on its line (``quota`` wraps a long one) names the values on the next."""
    owner: dict[str, Any] | None = (
        None  # kind, owner, id of the table (unknown when its title was not pasted)
    )
    unit = "kbytes"
    pending: str | None = None
    quotas: list[dict[str, Any]] = []
    for number, line in numbered_lines(text):
        if match := _QUOTA_HEADER.match(line):
            owner, pending = {"kind": match["kind"], "owner": match["owner"], "id": int(match["id"])}, None
            continue
        if match := _QUOTA_COLUMNS.match(line):
            unit, owner = match["unit"], owner or {"kind": None, "owner": None, "id": None}
            continue
        tokens = line.split()
        if owner is None or not tokens:
            continue
        # a filesystem named "." or "./" (lfs quota run on the working directory) is no number
        named = not _QUOTA_NUMBER.fullmatch(tokens[0]) or not any(c.isdigit() for c in tokens[0])
        fields = _quota_fields(tokens[1:] if named else tokens)
        if fields:
            fs = tokens[0] if named else pending
            quotas.append(_quota(owner, unit, fields, fs, src(artifact, number, line)))
            pending = None
        elif len(tokens) == 1:
            pending = tokens[0]
    if not quotas:
        raise ParseError(
            "no `Disk quotas for usr|user NAME (uid N):` table (expected `lfs quota`, `quota -s`)"
        )
    return {"quotas": quotas}


def combine_quotas(sections: Sequence[Section]) -> Section:
    """Quota outputs of one host given one file each (``lfs quota -u`` and ``-g``, a pool per
    file): every table of every file."""
    return {"quotas": [quota for section in sections for quota in section.get("quotas", [])]}


def recognise_lfs_df(text: str) -> bool:
    return any(_LFS_HEADER.match(line) for line in head_lines(text, 40))


def recognise_beegfs_df(text: str) -> bool:
    head = head_lines(text, 40)
    sections = any(_BEEGFS_SECTION.match(line) for line in head)
    return sections and any(_BEEGFS_HEADER.match(line) or _BEEGFS8_HEADER.match(line) for line in head)


def recognise_quota(text: str) -> bool:
    return any(_QUOTA_HEADER.match(line) or _QUOTA_COLUMNS.match(line) for line in head_lines(text, 40))


PROBES: tuple[Probe, ...] = (
    Probe(
        section="lfs_df",
        title="Lustre space per OST and MDT (lfs df)",
        # a hung Lustre client makes lfs block: the capture timeout bounds it
        sources=(Source("cmd/lfs-df.txt", argv=("lfs", "df"), timeout=20.0),),
        parse=parse_lfs_df,
        recognise=recognise_lfs_df,
        paste_hint="`lfs df -h` (and `lfs df -i`)",
        tags=("storage",),
    ),
    Probe(
        section="lfs_df_i",
        title="Lustre inodes per OST and MDT (lfs df -i)",
        sources=(Source("cmd/lfs-df-i.txt", argv=("lfs", "df", "-i"), timeout=20.0),),
        parse=parse_lfs_df,
        paste_hint="`lfs df -i`",
        tags=("storage",),
    ),
    Probe(
        section="beegfs_df",
        title="BeeGFS space and inodes per storage and metadata target (beegfs-df, beegfs health df)",
        # BeeGFS 7's beegfs-df, else BeeGFS 8's beegfs CLI (which replaced beegfs-ctl and beegfs-df)
        sources=(
            Source("cmd/beegfs-df.txt", argv=("beegfs-df",), timeout=20.0),
            Source("cmd/beegfs-health-df.txt", argv=("beegfs", "health", "df"), timeout=20.0),
        ),
        parse=parse_beegfs_df,
        recognise=recognise_beegfs_df,
        paste_hint="`beegfs-df` (BeeGFS 7) or `beegfs health df` (BeeGFS 8)",
        tags=("storage",),
    ),
    Probe(
        section="fs_quota",
        title="quotas of the user running the check (quota -s; paste lfs quota)",
        sources=(Source("cmd/quota.txt", argv=("quota", "-s", "-w"), timeout=20.0, ok_exit_codes=(0, 1)),),
        parse=parse_quota,
        recognise=recognise_quota,
        combine=combine_quotas,
        paste_hint="`lfs quota -h -u $USER MOUNT` or `quota -s`",
        tags=("storage",),
    ),
)
