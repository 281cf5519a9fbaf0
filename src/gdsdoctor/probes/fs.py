"""Filesystem mounts from ``/proc/self/mountinfo`` and space usage from ``df``.

Section ``mountinfo`` (proc(5); bind mounts and per-superblock options that /proc/mounts hides)::

    36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue

    {"mounts": [{"mount_id": 36, "parent_id": 35, "maj_min": "98:0", "major": 98, "minor": 0,
      "root": "/mnt1", "mountpoint": "/mnt2", "options": "rw,noatime", "opts": {"rw": true, "noatime": true},
      "optional": ["master:1"], "fstype": "ext3", "source": "/dev/root",
      "super_options": "rw,errors=continue", "super_opts": {...}, "all_opts": {...merged...},
      "bind": false, "src": {...}}],
     "by_mountpoint": {"/mnt2": {...last mount on that path...}}}

Section ``df_i`` (``df -P -T -i``, live): the same shape with inode counts (``counts`` "inodes").

Section ``df`` (``df -P -T -B1``; also plain ``df``/``df -T``/``df -h`` pastes, sizes then approximate,
and df in any of coreutils' languages, read by its shape: see ``_translated_header``)::

    /dev/nvme0n1p1 ext4 1967317618688 21474836480 1845829668864 2% /mnt/ckpt

    {"filesystems": [{"source": "/dev/nvme0n1p1", "fstype": "ext4"|None, "size_bytes": …, "used_bytes": …,
      "avail_bytes": …, "use_pct": 2|None, "mountpoint": "/mnt/ckpt", "exact": true, "src": {...}}],
     "by_mountpoint": {...}}
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes import mounts as mount_table
from gdsdoctor.probes.base import Probe, Section, Source, head_lines, numbered_lines, src
from gdsdoctor.probes.mounts import lines_from, mounts_cut, split_options, unescape
from gdsdoctor.probes.text import grouped_int, joined_digit_groups, size_bytes

_MOUNTINFO = lazy_compile(r"^(\d+) (\d+) (\d+):(\d+) (\S+) (\S+) (\S+)((?: \S+)*?) - (\S+) (\S+) (\S+)\s*$")


def _mountinfo_entry(match: re.Match[str], provenance: dict[str, Any]) -> dict[str, Any]:
    mount_id, parent_id, major, minor, root, mountpoint, options, optional, fstype, source, super_options = (
        match.groups()
    )
    opts, super_opts = split_options(options), split_options(super_options)
    return {
        "mount_id": int(mount_id),
        "parent_id": int(parent_id),
        "maj_min": f"{major}:{minor}",
        "major": int(major),
        "minor": int(minor),
        "root": unescape(root),
        "mountpoint": unescape(mountpoint),
        "options": options,
        "opts": opts,
        "optional": optional.split(),
        "fstype": unescape(fstype),
        "source": unescape(source),
        "super_options": super_options,
        "super_opts": super_opts,
        # per-mount flags win over superblock flags of the same name (ro bind of a rw fs)
        "all_opts": super_opts | opts,
        "bind": unescape(root) != "/",
        "src": provenance,
    }


def parse_mountinfo(text: str, artifact: str) -> Section:
    mounts = []
    beyond = 0  # lines past the MAX_MOUNTS kept, counted only
    for number, line in numbered_lines(text):
        if len(mounts) >= mount_table.MAX_MOUNTS and line.strip():
            beyond = lines_from(text, number)
            break
        match = _MOUNTINFO.match(line.strip())
        if match:
            mounts.append(_mountinfo_entry(match, src(artifact, number, line)))
    if not mounts:
        raise ParseError(
            "no mountinfo lines (expected `id parent major:minor root mountpoint opts … - fstype src opts`)"
        )
    section: Section = {"mounts": mounts, "by_mountpoint": {mount["mountpoint"]: mount for mount in mounts}}
    if beyond:
        section["input_cut"] = mounts_cut(beyond, "mountinfo")
    return section


def recognise_mountinfo(text: str) -> bool:
    lines = [line for line in head_lines(text, 100) if line.strip() and not line.startswith("$ ")]
    good = [line for line in lines if _MOUNTINFO.match(line.strip())]
    return bool(good) and len(good) >= 0.8 * len(lines)


# ---------------------------------------------------------------------------------------------------
# df

_DF_HEADER = lazy_compile(
    r"^Filesystem\s+(Type\s+)?(\S+)\s+Used\s+Avail(able)?\s+(Use|Capacity)%?\s+Mounted on\s*$"
)
# `df -i` / `df -li` / `df -iT`: inode counts, never sizes (the facts keep them apart)
_DF_INODE_HEADER = lazy_compile(r"^Filesystem\s+(Type\s+)?Inodes\s+IUsed\s+IFree\s+IUse%\s+Mounted on\s*$")
_BLOCK_UNIT = lazy_compile(r"^(\d+)([KMG]?)B?-blocks$", re.IGNORECASE)


def is_df_header(line: str) -> bool:
    """Whether ``line`` is df's column header (sizes or inodes): where a df output begins."""
    stripped = line.strip()
    return bool(_DF_HEADER.match(stripped) or _DF_INODE_HEADER.match(stripped))


def _unit(size_header: str) -> int | None:
    """Bytes per count from the size column title: ``1-blocks``/``1B-blocks`` 1, ``1K-blocks`` 1024;
    None for ``Size`` (human-readable values with their own suffix)."""
    match = _BLOCK_UNIT.match(size_header)
    if not match:
        return None
    return int(match[1]) * 1024 ** " KMG".index(match[2].upper() or " ")


_DF_WITH_TYPE = lazy_compile(r"^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+%|-)\s+(/(?:.*\S)?)\s*$")
_DF_NO_TYPE = lazy_compile(r"^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+%|-)\s+(/(?:.*\S)?)\s*$")


def _df_bytes(value: str, unit: int | None) -> tuple[int | None, bool]:
    if unit is None:
        return size_bytes(value)
    value = value.rstrip("KMGTPE") if unit > 1 else value  # `df -BM` prints "3780M" under "1M-blocks"
    count = size_bytes(value)[0] if value.isdecimal() or grouped_int(value) is not None else None
    return (count * unit if count is not None else None), count is not None


def _df_entry(fields: tuple[str, ...], typed: bool, unit: int | None, provenance: dict[str, Any]) -> dict:
    source, fstype = fields[0], (fields[1] if typed else None)
    size, used, avail, use, mountpoint = fields[2:] if typed else fields[1:]
    (size_b, exact), used_b, avail_b = (
        _df_bytes(size, unit),
        _df_bytes(used, unit)[0],
        _df_bytes(avail, unit)[0],
    )
    return {
        "source": source,
        "fstype": fstype,
        "size_bytes": size_b,
        "used_bytes": used_b,
        "avail_bytes": avail_b,
        "use_pct": int(use[:-1]) if use.endswith("%") else None,
        "mountpoint": mountpoint,
        "exact": exact,
        "src": provenance,
    }


def _inode_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """A ``df -i`` row read as sizes, turned into inode counts (sizes unknown)."""
    counts = {key: entry[f"{key}_bytes"] for key in ("size", "used", "avail")}
    return entry | {
        "size_bytes": None,
        "used_bytes": None,
        "avail_bytes": None,
        "exact": False,
        "inodes": counts["size"],
        "inodes_used": counts["used"],
        "inodes_free": counts["avail"],
        "inodes_use_pct": entry["use_pct"],
        "use_pct": None,
    }


# df in another language (coreutils has some 40 translations): the titles are translated, the
# shape is not. A translated header is the line right above the first row of df's shape; the
# block size is the number in the size column's title ("1K-Blöcke", "blocs de 1K", "1K的块",
# "1-ブロック"), and since coreutils titles every block count "<N>-blocks", a table with no
# number in its titles holds human sizes (-h: values with a suffix) or inode counts (-i).
_TITLE_UNIT = lazy_compile(r"(?:^|[\s-])(\d{1,4})([KMGTPE]?)B?(?=[-\s\u7684]|$)")
_HUMAN_VALUE = lazy_compile(r"^\d+(?:[.,]\d+)?[KMGTPE]$")
_HEAD_LINES = 50  # where a header is looked for, as recognise_df does
# `lfs df`: rows of df's shape under English titles of its own, a table of OSTs and MDTs that
# probes/app_log_ckpt reads; never a df table.
_OTHER_TABLES = ("UUID",)


@dataclass(frozen=True, slots=True)
class _Header:
    line: int  # 1-based, as numbered_lines counts
    typed: bool
    unit: int | None
    inodes: bool


def _head(text: str) -> list[str]:
    """The first _HEAD_LINES lines, cut before splitting (``split("\n", n)`` copies the rest of a
    60 MiB table as its last item)."""
    end = -1
    for _ in range(_HEAD_LINES):
        end = text.find("\n", end + 1)
        if end == -1:
            return text.split("\n")
    return text[:end].split("\n")


def _translated_header(text: str) -> _Header | None:
    """The header of a df table whose titles are in another language, from its first lines."""
    lines = _head(text)
    for index in range(1, len(lines)):
        row = lines[index].strip()
        typed = _DF_WITH_TYPE.match(row) is not None
        if not typed and _DF_NO_TYPE.match(row) is None:
            continue
        title = lines[index - 1].strip()
        if not _is_header_shaped(title):
            return None
        rows = [line.split() for line in lines[index:] if line.strip()]
        return _Header(index, typed, *_header_unit(title, rows, typed))
    return None


def _is_header_shaped(title: str) -> bool:
    words = title.split()
    return (
        3 <= len(words) <= 16
        and words[0] not in _OTHER_TABLES
        and not any(w.startswith("/") for w in words)
        and _DF_WITH_TYPE.match(title) is None
        and _DF_NO_TYPE.match(title) is None
    )


def _header_unit(title: str, rows: list[list[str]], typed: bool) -> tuple[int | None, bool]:
    """(bytes per count or None for human sizes, inode counts) of a translated table."""
    unit = _TITLE_UNIT.search(title.split(None, 1)[1] if " " in title else "")
    if unit:
        return int(unit[1]) * 1024 ** " KMGTPE".index(unit[2] or " "), False
    first = 2 if typed else 1
    human = any(_HUMAN_VALUE.match(value) for row in rows for value in row[first : first + 3])
    return (None, False) if human else (1, True)


def parse_df(text: str, artifact: str) -> Section:
    text = joined_digit_groups(text)  # `df --block-size="'1"` in fr_FR: 270 553 174 016 (no-break spaces)
    typed: bool | None = None
    unit: int | None = 1
    inodes = False
    pending: tuple[int, str] | None = None  # old df wraps a long device name onto its own line
    filesystems = []
    translated = None if _english_header_in_head(text) else _translated_header(text)
    beyond = 0  # lines past the MAX_MOUNTS kept, counted only
    for number, line in numbered_lines(text):
        if len(filesystems) >= mount_table.MAX_MOUNTS and line.strip():
            beyond = lines_from(text, number)
            break
        header = _DF_HEADER.match(line.strip())
        inode_header = None if header else _DF_INODE_HEADER.match(line.strip())
        if header or inode_header:
            typed = bool((header or inode_header)[1])  # type: ignore[index]
            unit, inodes = (_unit(header[2]), False) if header else (1, True)
            continue
        if translated and number == translated.line:
            typed, unit, inodes = translated.typed, translated.unit, translated.inodes
            continue
        if typed is None:
            continue
        joined = f"{pending[1]} {line.strip()}" if pending else line.strip()
        pattern = _DF_WITH_TYPE if typed else _DF_NO_TYPE
        match = pattern.match(joined)
        if match:
            first = pending or (number, line)
            entry = _df_entry(match.groups(), typed, unit, src(artifact, first[0], joined))
            filesystems.append(_inode_entry(entry) if inodes else entry)
            pending = None
        else:
            pending = (number, line.strip()) if len(line.split()) == 1 else None
    if typed is None:
        raise ParseError("no 'Filesystem … Mounted on' header (expected `df -P -T -B1` output)")
    by_mountpoint = {fs["mountpoint"]: fs for fs in filesystems}
    counts = "inodes" if inodes else "bytes"
    section: Section = {"filesystems": filesystems, "by_mountpoint": by_mountpoint, "counts": counts}
    if beyond:
        section["input_cut"] = mounts_cut(beyond, "df")
    return section


def _english_header_in_head(text: str) -> bool:
    head = [line.strip() for line in _head(text) if line.strip()][:5]
    return any(_DF_HEADER.match(line) or _DF_INODE_HEADER.match(line) for line in head)


def recognise_df(text: str) -> bool:
    text = joined_digit_groups(text)
    if _english_header_in_head(text):
        return True
    header = _translated_header(text)
    return header is not None and header.line <= 5


PROBES: tuple[Probe, ...] = (
    Probe(
        section="mountinfo",
        title="mounts with bind roots, propagation and per-superblock options (/proc/self/mountinfo)",
        sources=(Source("proc/self/mountinfo", path="/proc/self/mountinfo"),),
        parse=parse_mountinfo,
        recognise=recognise_mountinfo,
        paste_hint="`cat /proc/self/mountinfo`",
    ),
    Probe(
        section="df",
        title="filesystem sizes and free space",
        # a hung NFS/Lustre mount makes df block: the capture timeout bounds it
        sources=(Source("cmd/df.txt", argv=("df", "-P", "-T", "-B1"), timeout=20.0),),
        parse=parse_df,
        recognise=recognise_df,
        paste_hint="`df -P -T -B1` (or `df -hT`)",
    ),
    Probe(
        section="df_i",
        title="filesystem inodes (df -i): a distributed checkpoint writes a file per rank",
        sources=(Source("cmd/df-i.txt", argv=("df", "-P", "-T", "-i"), timeout=20.0),),
        parse=parse_df,  # a pasted `df -i` is read by the df probe (its `counts` says inodes)
        paste_hint="`df -i`",
    ),
)
