"""Mounted filesystems, from ``/proc/mounts`` (or ``/proc/self/mounts``, ``/etc/mtab``), or the
output of ``mount`` / ``mount -l`` or ``findmnt`` (tree or ``-l``, any columns that include
TARGET, SOURCE, FSTYPE and OPTIONS) pasted instead.

Fields are space-separated with octal escapes (``\\040`` for a space); each line becomes
``{device, mountpoint, fstype, options, opts: {option: value | True}, src}``:

    /dev/nvme0n1p1 /mnt/ckpt ext4 rw,relatime,data=ordered 0 0
    /dev/nvme0n1p1 on /mnt/ckpt type ext4 (rw,relatime,data=ordered) [CKPT]     mount -l
    TARGET      SOURCE          FSTYPE OPTIONS                                      findmnt
    └─/mnt/ckpt /dev/nvme0n1p1  ext4   rw,relatime,data=ordered

findmnt draws its tree before TARGET, writes a space as ``\x20`` and a bind mount's source as
``/dev/sda1[/subdir]`` (the device is the part before the bracket).

Lines in neither form are skipped and named in ``skipped_lines`` (the report's notes): one odd line
(a mount point with a literal space, a line cut short) never loses the others. Past MAX_MOUNTS
entries the lines are counted, not parsed, and ``input_cut`` says so (so do mountinfo and df).

>>> section = parse("/dev/nvme0n1p1 /mnt/ckpt ext4 rw,relatime,data=ordered 0 0\\n", "proc/mounts")
>>> mount = section["mounts"][0]
>>> mount["mountpoint"], mount["fstype"], mount["opts"]["data"]
('/mnt/ckpt', 'ext4', 'ordered')
>>> mount["src"]
{'artifact': 'proc/mounts', 'line': 1, 'text': '/dev/nvme0n1p1 /mnt/ckpt ext4 rw,relatime,data=ordered 0 0'}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, Source, head_lines, numbered_lines, src

_OCTAL = lazy_compile(r"\\([0-7]{3})")
_LINE = lazy_compile(r"^(\S+) (\S+) (\S+) (\S+) (\d+) (\d+)\s*$")
# `mount` prints the mount point unescaped: it may hold spaces, so the fields are found by their words.
_MOUNT_CMD = lazy_compile(r"^(\S+) on (.+?) type (\S+) \(([^()]*)\)(?: \[(.*)\])?\s*$")
# fstab(5)'s line: the freq and pass numbers, even the options, may be left out
FSTAB_ENTRY = lazy_compile(
    r"^(?P<spec>\S+)\s+(?P<file>\S+)\s+(?P<type>\S+)(?:\s+(?P<opts>\S+)(?:\s+(?P<freq>\d+)(?:\s+(?P<pass>\d+))?)?)?\s*$"
)
_FSTAB_TAGS = ("UUID=", "LABEL=", "PARTUUID=", "PARTLABEL=", "ID=")
_BOOT_OPTIONS = frozenset({"defaults", "nofail", "noauto", "_netdev", "auto"})
MAX_SKIPPED_NAMED = 5  # lines named in the notes; the rest are counted
# Mounts kept per table (mounts, mountinfo, df). A busy Kubernetes node has a few thousand; each
# kept mount costs ~3 KB through the facts and the rules (a 12 MiB table of 190k mounts took
# 585 MiB and 42 s), so the rest of a longer table is counted, not split or parsed, and the
# report says so.
MAX_MOUNTS = 10_000


def lines_from(text: str, number: int) -> int:
    """How many lines ``text`` has from line ``number`` on, counted in C (a final newline ends
    a line, it starts none)."""
    return max(0, text.count("\n") + (not text.endswith("\n")) - number + 1)


def mounts_cut(beyond: int, what: str = "mounts") -> str:
    """The ``input_cut`` note of a table cut after MAX_MOUNTS entries, ``beyond`` lines not read."""
    return (
        f"only the first {MAX_MOUNTS:,} entries of {what} were read; {beyond:,} lines after them were "
        "not (a mount there is not seen)"
    )


def unescape(field: str) -> str:
    return _OCTAL.sub(lambda m: chr(int(m[1], 8)), field)


def split_options(options: str) -> dict[str, str | bool]:
    parsed: dict[str, str | bool] = {}
    for option in options.split(","):
        key, sep, value = option.partition("=")
        parsed[key] = value if sep else True
    return parsed


_FINDMNT_HEADER = ("TARGET", "SOURCE", "FSTYPE", "OPTIONS")
_TREE = "│├└─ \t`|-"  # what findmnt draws before a target (UTF-8, or ASCII with --ascii)
_HEX = lazy_compile(r"\\x([0-9a-fA-F]{2})")


def findmnt_columns(line: str) -> list[str] | None:
    """The column names of a findmnt header line holding the four a mount needs, else None."""
    names = line.split()
    return names if names and names[0] == "TARGET" and set(_FINDMNT_HEADER) <= set(names) else None


def findmnt_fields(line: str, columns: list[str]) -> tuple[str, str, str, str] | None:
    cells = line.lstrip(_TREE).split()
    if len(cells) != len(columns) or not cells[0].startswith("/"):
        return None
    row = dict(zip(columns, (_HEX.sub(lambda m: chr(int(m[1], 16)), cell) for cell in cells), strict=True))
    return row["SOURCE"].split("[", 1)[0] or row["SOURCE"], row["TARGET"], row["FSTYPE"], row["OPTIONS"]


def mount_fields(line: str) -> tuple[str, str, str, str] | None:
    """(device, mount point, type, options) of a /proc/mounts or `mount` line, else None."""
    if match := _LINE.match(line.strip()):
        device, mountpoint, fstype, options = (unescape(f) for f in match.groups()[:4])
        return device, mountpoint, fstype, options
    if match := _MOUNT_CMD.match(line.strip()):
        return match[1], match[2], match[3], match[4]
    return None


def parse(text: str, artifact: str) -> Section:
    mounts = []
    skipped: list[str] = []
    columns: list[str] | None = None  # of the findmnt table being read
    beyond = 0  # lines past the MAX_MOUNTS kept, counted only
    for number, line in numbered_lines(text):
        if len(mounts) >= MAX_MOUNTS and line.strip():
            beyond = lines_from(text, number)
            break
        if header := findmnt_columns(line):
            columns = header
            continue
        fields = findmnt_fields(line, columns) if columns else None
        fields = fields or mount_fields(line)
        if fields is None:
            if line.strip():
                skipped.append(f"line {number} ({line.strip()[:60]!r})")
            continue
        device, mountpoint, fstype, options = fields
        mounts.append(
            {
                "device": device,
                "mountpoint": mountpoint,
                "fstype": fstype,
                "options": options,
                "opts": split_options(options),
                "src": src(artifact, number, line),
            }
        )
    if not mounts:
        raise ParseError(
            "no mount lines (expected /proc/mounts format: device mountpoint fstype options 0 0)"
        )
    section: Section = {"mounts": mounts}
    if beyond:
        section["input_cut"] = mounts_cut(beyond)
    if skipped:
        named = ", ".join(skipped[:MAX_SKIPPED_NAMED])
        more = f" and {len(skipped) - MAX_SKIPPED_NAMED} more" if len(skipped) > MAX_SKIPPED_NAMED else ""
        section["skipped_lines"] = f"{len(skipped)} lines not in a mount format, skipped: {named}{more}"
    return section


def looks_like_fstab(lines: list[str]) -> bool:
    """What only an fstab holds, never the kernel's mount table (the two share a line format): a
    ``UUID=``/``LABEL=`` spec, ``defaults`` or another boot-only option, a non-zero pass number,
    or fstab's own comment lines."""
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("#") and ("fstab" in stripped or "<file system>" in stripped):
            return True
        match = FSTAB_ENTRY.match(stripped)
        if not match or stripped.startswith("#"):
            continue
        opts = split_options(match["opts"] or "")
        if match["spec"].startswith(_FSTAB_TAGS) or _BOOT_OPTIONS & set(opts):
            return True
        if any(key.startswith(("x-systemd.", "x-mount.")) for key in opts) or (match["pass"] or "0") != "0":
            return True
    return False


def combine(sections: Sequence[Section]) -> Section:
    """Mount tables of one host read as one (``findmnt -T PATH`` beside ``mount -l``, or
    /proc/mounts beside ``mount`` in a sos report): each mount once, with the line of the first
    output that shows it; a mount only a later output shows is added with its own line; one
    shown with other options is noted, the first kept (options may change between two captures:
    a remount). Several mounts of one table on one point (an over-mount) all stay."""
    mounts: list[dict[str, Any]] = []
    seen: dict[tuple[str, str, str], dict[str, Any]] = {}
    conflicts: list[str] = []
    for section in sections:
        added = []
        for mount in section["mounts"]:
            key = (mount["device"], mount["mountpoint"], mount["fstype"])
            first = seen.get(key)
            if first is None:
                added.append(mount)
            elif first["opts"] != mount["opts"]:
                conflicts.append(
                    f"{mount['mountpoint']} options {first['options']!r} ({first['src']['artifact']}) /"
                    f" {mount['options']!r} ({mount['src']['artifact']}): the first kept"
                )
        mounts.extend(added)
        seen.update(((m["device"], m["mountpoint"], m["fstype"]), m) for m in added)
    combined: Section = {"mounts": mounts}
    skipped = [str(s["skipped_lines"]) for s in sections if s.get("skipped_lines")]
    if skipped:
        combined["skipped_lines"] = "; ".join(skipped)
    if conflicts:
        shown = ", ".join(conflicts[:MAX_SKIPPED_NAMED])
        more = f" and {len(conflicts) - MAX_SKIPPED_NAMED} more" if len(conflicts) > MAX_SKIPPED_NAMED else ""
        combined["conflicts"] = f"{len(conflicts)} mounts shown differently: {shown}{more}"
    return combined


def recognise(text: str) -> bool:
    """Mount lines make most of the text; the lines that are not are skipped (and named) by the
    parser, and the detection scores how many lines each reader explains. An fstab shares the
    line format and is the fstab reader's."""
    lines = [line for line in head_lines(text, 200) if line.strip()]
    if looks_like_fstab(lines):
        return False
    columns = next((found for line in lines if (found := findmnt_columns(line))), None)
    good = sum(1 for line in lines if _explained(line, columns))
    return good >= 1 and good * 2 >= len(lines)


def _explained(line: str, columns: list[str] | None) -> bool:
    """A mount line in any of the forms (a findmnt header counts: it is the table's)."""
    if columns and (findmnt_columns(line) or findmnt_fields(line, columns)):
        return True
    return mount_fields(line) is not None


PROBE = Probe(
    section="mounts",
    title="mounted filesystems and their options",
    sources=(Source("proc/mounts", path="/proc/mounts"),),
    parse=parse,
    recognise=recognise,
    paste_hint="`cat /proc/mounts`",
    combine=combine,
)
