"""nvidia-bug-report.log (``nvidia-bug-report.sh``, shipped with the NVIDIA driver) as input.

The script writes one text file (gzip-compressed: ``nvidia-bug-report.log.gz``): a prologue
(``Date:``, ``uname:``), then sections each opened by a line of underscores. A section starts
with one of three headers, the same across driver releases (the 304 to 580 scripts):

- ``*** /path`` for a file, followed by ``*** ls: <ls -l line>`` and the file's content
  (``*** /path does not exist`` / ``is not readable`` when it could not be read);
- a command line (``/usr/bin/lspci -d "10de:*" -v -xxx``, ``/usr/bin/nvidia-smi --query``),
  a blank line, and its output; several commands of one program may follow each other in one
  section (``nvidia-smi --query`` then ``--query --unit``);
- a label ending in ``:`` (``dmesg:``, ``xset -q:``) and the output.

:func:`split_sections` cuts the log into ``(header, text)`` pairs; :data:`SECTIONS` names the
ones gdsdoctor reads and the facts section each feeds. Each artifact is named after the log and
its header (``nvidia-bug-report.log: /proc/cmdline``) and keeps the log's own line numbers
(``Artifact.first_line``), so evidence cites the line of the log file.
"""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Iterator
from pathlib import Path

from gdsdoctor.capture.capture import Capture
from gdsdoctor.errors import BundleError
from gdsdoctor.model import Artifact, ArtifactStatus, decode_text

SEPARATOR = re.compile(r"^_{20,}[ \t]*$")
_SEPARATORS = re.compile(r"^_{20,}[ \t]*$", re.M)  # the same, found in the whole log
_BLANK_LINES = re.compile(r"(?:[^\S\n]*\n)*")  # whitespace-only lines, as str.strip() sees them
START = "Start of NVIDIA bug report log file"
PEEK_BYTES = 64 * 1024  # the prologue is in the first lines
# Facts section <- headers (regular expressions, matched whole; the program's directory
# varies: /usr/bin/lspci, /sbin/lspci, lspci). In order of preference within a section.
_PROGRAM = r"(?:(?<!\S)\S*/)?"  # a path only from a word's start: linear
_FILE = r"(?:\*\*\* )?"  # the 2009 scripts wrote the bare path, later ones `*** PATH`
SECTIONS: tuple[tuple[str, str], ...] = (
    ("cmdline", _FILE + r"/proc/cmdline"),
    ("modules", _FILE + r"/proc/modules"),
    ("kernel", _FILE + r"/proc/version"),
    ("os_release", _FILE + r"/etc/os-release"),
    ("os_release", _FILE + r"/usr/lib/os-release"),
    ("nvidia_driver", _FILE + r"/proc/driver/nvidia(?:/\.)?/version"),
    ("nvidia_fs_version", _FILE + r"/proc/driver/nvidia-fs/version"),
    ("nvidia_fs_stats", _FILE + r"/proc/driver/nvidia-fs/stats"),
    ("nvidia_fs_modules", _FILE + r"/proc/driver/nvidia-fs/modules"),
    ("dmesg", r"dmesg:"),
    ("dmesg", r"journalctl -b -0(?: -k)?:?"),
    ("nvidia_smi", _PROGRAM + r"nvidia-smi (?:--query|-q)"),
    ("nvidia_topo", _PROGRAM + r"nvidia-smi topo -m"),
    # current scripts (the 390 driver's onwards at least): every device, verbose, config space in hex
    ("lspci", _PROGRAM + r"lspci -nnDvvvx{3,4}"),
    ("lspci", _PROGRAM + r"lspci (?:-nn )?-vvv?(?: -nn)?(?: -D)?"),
    ("lspci", _PROGRAM + r"lspci -d \"?10de:\*\"? -v(?:vv)? -xxx"),
    ("lspci_tree", _PROGRAM + r"lspci -tv?"),
    ("modinfo_nvidia", _PROGRAM + r"modinfo nvidia"),
    ("modinfo_nvidia_fs", _PROGRAM + r"modinfo nvidia[-_]fs"),
    ("dkms_status", _PROGRAM + r"dkms status"),
    ("cufile_json", _FILE + r"/etc/cufile\.json"),
)
_COMPILED = tuple((section, re.compile(pattern)) for section, pattern in SECTIONS)
MAX_LOG_BYTES = 256 * 1024 * 1024  # decompressed: the bundle cap (SECURITY.md)


def is_bug_report(path: Path) -> bool:
    """An nvidia-bug-report log: a file (compressed or not) whose prologue says so."""
    from gdsdoctor.capture.detect import read_head  # detect imports the probes: not for `check`

    if not path.is_file():
        return False
    return START in decode_text(read_head(path, PEEK_BYTES))


def read_bug_report(path: Path) -> Capture:
    from gdsdoctor.capture.detect import read_pasted

    data, problem = read_pasted(path, max_bytes=MAX_LOG_BYTES)
    if problem:
        raise BundleError(f"{path}: {problem}")
    return capture_log(path.name, decode_text(data), str(path))


def capture_log(name: str, text: str, where: str) -> Capture:
    """The sections gdsdoctor knows, as artifacts of one capture."""
    capture = Capture(origin="nvidia-bug-report", label=where)
    for first_line, header, body in split_sections(text):
        section = _section_of(header)
        if section is None or _missing(header):
            continue
        artifact = f"{name}: {header[4:] if header.startswith('*** ') else header}"[:200]
        status = ArtifactStatus.OK if body.strip() else ArtifactStatus.MISSING
        detail = "" if body.strip() else "empty in the log"
        source = f"{where}: {header}"[:300]
        # first_line: the evidence cites the log's own line numbers; a header met again (the
        # same command twice) replaces the first: one name is one section's (Capture.add)
        found = Artifact(artifact, status, body.encode(), source, detail, first_line=first_line)
        if artifact in capture.artifacts:
            capture.artifacts[artifact] = found
        else:
            capture.add(section, found)
    capture.host = _prologue(text)
    if capture.host.get("created"):  # the capture's time, for events' ages (facts.event_clock)
        capture.options["created"] = capture.host["created"]
    if not capture.artifacts:
        raise BundleError(f"{where}: an nvidia-bug-report log holding none of the sections gdsdoctor reads")
    return capture


def split_sections(text: str) -> list[tuple[int, str, str]]:
    """``(first line number of the body, header, body)`` for every section of the log.

    Found by offsets in the text, never a list of its lines (a log of newlines held as a list
    cost ~80 bytes a line: 300 MiB for a 32 MiB log); line numbers are counted as it goes."""
    sections: list[tuple[int, str, str]] = []
    separators = list(_SEPARATORS.finditer(text))
    line, counted = 1, 0  # the line number at offset `counted`
    for index, here in enumerate(separators):
        after = separators[index + 1] if index + 1 < len(separators) else None
        start = here.end() + 1  # the line after the separator
        end = after.start() - 1 if after else len(text)  # before the next separator's line
        if start > end:
            continue
        line += text.count("\n", counted, start)
        counted = start
        sections.extend(_pieces(text, start, end, line))
    return sections


def _pieces(text: str, start: int, end: int, line: int) -> list[tuple[int, str, str]]:
    """One section's header and body (``line``: the line number at ``start``); a command
    section is split at each further command line of the same program (``append_command``
    writes them one after another)."""
    head = _BLANK_LINES.match(text, start, end).end()  # type: ignore[union-attr]
    header_end = _line_end(text, head, end)
    header = text[head:header_end].strip()
    if not header:  # only blank lines (the last one without its newline)
        return []
    line += text.count("\n", start, head)
    body, body_line = min(header_end + 1, end), line + 1
    if header.startswith("*** ") and text.startswith("*** ls:", body) and body < end:
        body, body_line = min(_line_end(text, body, end) + 1, end), body_line + 1
    first = header.split(" ", 1)[0]
    program = first if not header.startswith("*** ") and "/" in first else ""
    pieces, piece, piece_line, piece_header = [], body, body_line, header
    if program:
        for found in _command_lines(text, program, body, end):
            if found <= piece:  # the piece's own first line
                continue
            command_end = _line_end(text, found, end)
            pieces.append((piece_line, piece_header, text[piece : found - 1]))
            piece_line += text.count("\n", piece, command_end) + 1
            piece, piece_header = min(command_end + 1, end), text[found:command_end].strip()
    pieces.append((piece_line, piece_header, text[piece:end]))
    return pieces


_MAX_INDENT = 256


def _command_lines(text: str, program: str, start: int, end: int) -> Iterator[int]:
    """The starts of the lines between ``start`` and ``end`` that are ``program`` run again
    (``[ \t]*PROGRAM ``), found with ``str.find``: a pattern compiled per program cost a
    millisecond a section (80,000 sections of distinct programs: 80 s). The indent looked at is
    at most _MAX_INDENT characters, so a long line costs its length once."""
    needle = program + " "
    at = text.find(needle, start, end)
    while at != -1:
        line = text.rfind("\n", max(start, at - _MAX_INDENT - 1), at) + 1
        if not line and at - start > _MAX_INDENT:
            line = -1  # no line start within reach: not a command line
        elif not line:
            line = start
        if line >= 0 and not text[line:at].strip(" \t"):
            yield line
        at = text.find(needle, at + 1, end)


def _line_end(text: str, start: int, end: int) -> int:
    found = text.find("\n", start, end)
    return end if found < 0 else found


def _section_of(header: str) -> str | None:
    return next((section for section, pattern in _COMPILED if pattern.fullmatch(header)), None)


def _missing(header: str) -> bool:
    return header.startswith("*** ") and header.endswith((" does not exist", " is not readable"))


def _prologue(text: str) -> dict[str, str]:
    """Host name and kernel from the prologue's ``uname:`` line, the capture time from ``Date:``
    (as ``created``, UTC ISO 8601 when the date names UTC, else as written)."""
    host: dict[str, str] = {}
    head = text[:PEEK_BYTES]
    uname = re.search(r"^uname: Linux (\S+) (\S+)", head, re.M)
    if uname:
        host["hostname"], host["kernel"] = uname[1][:200], uname[2][:200]
    date = re.search(r"^Date: (.+)$", head, re.M)
    if date:
        when = _date(date[1].strip())
        host["created" if when.endswith("Z") else "date_as_written"] = when
    version = re.search(r"^nvidia-bug-report\.sh Version: (\S+)", head, re.M)
    if version:
        host["nvidia_bug_report_version"] = version[1][:40]
    return {k: v for k, v in host.items() if v}


def _date(value: str) -> str:
    """``date`` output as ISO 8601 UTC (``…Z``) when its zone says the offset (``UTC``, ``-03``,
    ``+0530``), in the C locale's 24-hour form or a 12-hour one (``08:50:11 PM``); else as
    written (``IST``, ``EDT``: a zone name does not say its offset for sure)."""
    words = " ".join(value.split())
    found = re.fullmatch(
        r"(\w{3} \w{3} \d{1,2} [\d:]{8}(?: [AP]M)?) (UTC|GMT|[+-]\d{2}(?::?\d{2})?) (\d{4})",
        words,
    )
    if not found:
        return words[:60]
    clock, zone, year = found.groups()
    offset = 0 if zone in ("UTC", "GMT") else _offset_s(zone)
    form = "%a %b %d %I:%M:%S %p %Y" if clock.endswith("M") else "%a %b %d %H:%M:%S %Y"
    try:
        local = calendar.timegm(time.strptime(f"{clock} {year}", form))
    except ValueError:
        return words[:60]
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(local - offset))


def _offset_s(zone: str) -> int:
    digits = zone[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
    return (1 if zone[0] == "+" else -1) * (hours * 3600 + minutes * 60)
