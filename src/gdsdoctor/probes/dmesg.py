"""Kernel log events, from ``dmesg`` (or ``journalctl -k``) in every form users paste.

Accepted line forms (mixed in one paste is fine)::

    [  519.201025] nvme nvme0: I/O 39 QID 3 timeout, aborting          dmesg
    <3>[  519.201025] nvme nvme0: ...                                  dmesg -r
    kern  :err   : [  519.201025] nvme nvme0: ...                      dmesg -x
    [Wed Apr  9 08:23:03 2025] nvme nvme0: starting error recovery     dmesg -T
    [Jan18 08:23] nvidia_fs: ...   /   [  +0.000031] nvidia_fs: ...     dmesg -H
    6,3973,227996636,-;nvidia-peermem nv_get_p2p_free_callback ...     /dev/kmsg
    Jan  2 10:00:00 host kernel: XFS (dm-4): ...                       syslog, journalctl
    2023-01-02T10:00:00+0000 host kernel: ...                          journalctl -o short-iso
    [   12.345678] host kernel: ...                                     journalctl -o short-monotonic
     kern: warning: [2024-10-29T13:44:17.655Z]: nvme nvme2: ...        talosctl dmesg
    10.5.0.3: kern:    info: [2022-07-28T11:49:42.49Z]: ...            talosctl -n NODE dmesg
    {"dmesg": [{"pri": 3, "time": 12.3, "msg": "..."}]}                dmesg --json
    {"MESSAGE": "...", "_BOOT_ID": "...", "__MONOTONIC_TIMESTAMP": ...} journalctl -k -o json (one per line)
    nvidia-fs:nvfs_pin_gpu_pages:1292 Error ret -22 ...                bare message

Boots: ``-- Boot <id> --`` / ``-- Reboot --`` separators, a new ``_BOOT_ID``, a ``Linux version`` banner, or
seconds-since-boot timestamps going backwards start a new boot; the last one is current.

Section shape::

    format: str              # dmesg|dmesg_raw|dmesg_T|dmesg_H|kmsg|json|journal|plain|mixed
    line_count: int                # lines read (JSON: entries)
    boot_count: int                # boots seen (>= 1)
    kernel_release: str | None     # from the last "Linux version X" banner
    cmdline: str | None            # from the last "Command line:" line
    events: [ {kind, device, message, timestamp, monotonic_s, level, boot, current_boot, details, src} ]
    events_dropped: int            # events cut from the middle of a huge log (summary still counts them)
    input_cut: str                 # only when events were cut: says so (the report shows it as a note)
    summary: [ {kind, device, count, current_boot_count, first_line, last_line,
                first_timestamp, last_timestamp, message, src} ]   # one per (kind, device)
    kinds: [str]                   # kinds seen at all
    current_boot_kinds: [str]      # kinds seen in the current boot
    lifecycle: [ {kind, device, message, timestamp, monotonic_s, boot, current_boot, details, src} ]
                                   # markers of an object beginning anew or recovering (a mount,
                                   # an unmount, a device attached, an NVMe controller's I/O queues,
                                   # AER recovery): not events; the newest MAX_EVENTS are kept
    error_lines: [ {family, device, kind, timestamp, monotonic_s, boot, current_boot, src} ]
                                   # lines that are errors of the storage path (probes/error_lines.py):
                                   # failure events and lines of a storage family with an error word;
                                   # the newest MAX_ERROR_LINES are kept, error_lines_seen counts all
    last_monotonic_s: float | None # the current boot's last seconds-since-boot stamp (the log's end)
    last_timestamp: str | None     # the last stamp as given, when the log has no seconds-since-boot

``timestamp`` is the stamp as given (``"519.201025"``, ``"Wed Apr  9 08:23:03 2025"``, ISO);
``monotonic_s`` is seconds since boot when the stamp is one, else None. ``details`` holds
values pulled from the message (errno, qid, xid, sector, status...), keys per kind in
docs/facts/dmesg.md. The event kinds and their patterns are :mod:`gdsdoctor.probes.dmesg_kinds`.

>>> classify("nvme nvme0: I/O 39 QID 3 timeout, aborting")
('nvme_timeout', 'nvme0', {'tag': 39, 'qid': 3, 'action': 'aborting'})

Longer than 600 lines because the fourteen line forms above, the boot tracking and the events'
bookkeeping are one reader: split, each part would need the others' state (the boots, the clock
of quiet lines, the hinted lines).
"""

from __future__ import annotations

import heapq
import json
import operator
import re
from collections import deque
from collections.abc import Container, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import compress, repeat
from typing import Any

from gdsdoctor import syslog_time
from gdsdoctor.compat import UTC
from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes import error_lines, nvme_status
from gdsdoctor.probes.base import Probe, Section, Source, numbered_lines, src
from gdsdoctor.probes.dmesg_kinds import LIFECYCLE_KINDS
from gdsdoctor.probes.dmesg_kinds import RULES as _RULES
from gdsdoctor.probes.kernel_shape import kernel_prefixed, kernel_shaped

MAX_EVENTS = 4000  # a storm of one message must not blow up the facts document
MAX_ERROR_LINES = 1000  # error lines kept (the newest: what the node says now)

_LEVELS = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug")
_LEVEL_ALIASES = {"warn": "warning", "error": "err", "panic": "emerg"}

# ---------------------------------------------------------------------------------------------
# Line prefixes (timestamps, priorities, syslog headers)
# ---------------------------------------------------------------------------------------------

_BOOT_SEPARATOR = lazy_compile(r"^-- (?:Boot [0-9a-f]+|Reboot) --\s*$")
_JOURNAL_NOTE = lazy_compile(r"^-- (?:Logs begin|Journal begins|No entries|Journal started).*--\s*$")
_CONTINUATION = lazy_compile(r"^\s+[A-Z_]+=")  # kmsg/journal key=value continuation lines
_KMSG = lazy_compile(r"^(?P<prio>\d{1,4}),(?P<seq>\d+),(?P<usec>\d+),[^;,]*(?:,[^;]*)?;(?P<msg>.*)$")
_PRIO = lazy_compile(r"^<(?P<prio>\d{1,4})>")
_DMESG_X = lazy_compile(
    r"^(?P<fac>kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|ftp|local[0-7])\s*:"
    r"\s*(?P<lvl>emerg|alert|crit|err|warn|notice|info|debug)\s*:\s?"
)
# A log shipper's prefix (talosctl dmesg, collectors): the node's name or address first when many
# nodes are asked ("10.5.0.3: ", "k8s-3: "), a facility, a padded level, an ISO stamp in brackets.
_TALOS = lazy_compile(
    r"^\s*(?:(?P<node>[\w.-]{1,64}|[0-9a-fA-F:]{2,39}): )?"
    r"(?P<fac>[a-z][a-z0-9]{0,11}): {0,8}"
    r"(?P<lvl>[a-z]{3,8}): {0,8}\[(?P<ts>\d{4}-\d\d-\d\dT[^\]]{1,40})\]: ?"
)
# dmesg -d and journalctl -o short-delta add a <delta> (journalctl pads: `[ 7244.46        ]`)
# CONFIG_PRINTK_CALLER adds the caller after the stamp: `[  150.539498][ T1018]` (a task), `[   C52]` (a CPU)
_MONO = lazy_compile(r"\[\s*(?P<ts>\d+\.\d+)(?:\s*<\s*\d+\.\d+\s*>)?\s*\](?:\[\s*[TC]\d{1,7}\])? ?")
# journalctl -o short-unix: seconds since the epoch, then host and program as in short
_UNIX = lazy_compile(
    rf"^(?P<epoch>{syslog_time.UNIX_STAMP}) (?P<host>\S+) (?P<ident>[^\s:\[]+)(?:\[\d+\])?: ?"
)
_ISO_DMESG = lazy_compile(r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d+[+-]\d\d:\d\d) ")  # --time-format iso
_BRACKET_DATE = lazy_compile(
    rf"^\[(?P<ts>{syslog_time.DATED_STAMP}"
    r"|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d[^\]]*)\] ?"
)
# dmesg -e: a minute stamp where the clock jumps, else the time since the line before (a decimal
# comma in locales that write one)
_BRACKET_HUMAN = lazy_compile(rf"^\[(?P<ts>{syslog_time.SHORT_STAMP}|\s*\+\s*\d+[.,]\d+)\] ?")
_SYSLOG = lazy_compile(
    rf"^ ?(?P<ts>{syslog_time.STAMP}(?:\.\d+)?|{syslog_time.FULL_STAMP}"
    r"|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)"
    r" (?P<host>\S+) (?P<ident>[^\s:\[]+)(?:\[\d+\])?: ?"
)
_BARE_IDENT = lazy_compile(r"^(?:[\w.-]+ )?kernel(?:\[\d+\])?: ?")
_BANNER = lazy_compile(r"Linux version (?P<release>\S+)")
_CMDLINE = lazy_compile(r"^(?:Kernel )?[Cc]ommand line: (?P<cmdline>.*)$")


@dataclass(frozen=True, slots=True)
class LogLine:
    """One kernel message with its prefix taken apart."""

    number: int
    raw: str
    message: str
    form: str  # which prefix form the line had (feeds the section's "format")
    timestamp: str | None = None
    monotonic_s: float | None = None
    level: str | None = None


def _level_name(value: Any) -> str | None:
    if isinstance(value, int) or (isinstance(value, str) and value.isdecimal()):
        return _LEVELS[int(value) & 7]
    if isinstance(value, str):
        name = value.strip().lower()
        name = _LEVEL_ALIASES.get(name, name)
        return name if name in _LEVELS else None
    return None


def _strip_ident(message: str) -> str:
    """Drop a leftover ``host kernel:`` (journalctl short-monotonic, bare syslog excerpts)."""
    # Every line of a log comes here: a substring test the pattern needs is ~10x cheaper than
    # running it (the same holds for the other `in` tests guarding patterns in this module).
    return _BARE_IDENT.sub("", message, count=1) if "kernel" in message else message


def split_line(number: int, raw: str) -> LogLine:
    """Take the prefix of one line apart; a line with no known prefix is a bare message."""
    line = raw.rstrip()
    # Plain `dmesg` ("[   12.345678] msg"), the form of every live capture, first: no other
    # prefix form starts with "[" followed by a seconds stamp, so the result is the same.
    if line.startswith("[") and (m := _MONO.match(line)):
        return _monotonic_line(number, raw, line, m, "dmesg", None)
    if m := _KMSG.match(line):
        usec = int(m["usec"])
        return LogLine(
            number, raw, m["msg"], "kmsg", f"{usec / 1e6:.6f}", usec / 1e6, _level_name(int(m["prio"]))
        )
    if m := _TALOS.match(line):
        return LogLine(number, raw, line[m.end() :], "journal", m["ts"], None, _level_name(m["lvl"]))
    level: str | None = None
    form = "dmesg"
    if m := _PRIO.match(line):
        level, line, form = _level_name(int(m["prio"])), line[m.end() :], "dmesg_raw"
    elif m := _DMESG_X.match(line):
        level, line = _level_name(m["lvl"]), line[m.end() :]
    if m := _BRACKET_DATE.match(line):
        return LogLine(number, raw, _strip_ident(line[m.end() :]), "dmesg_T", m["ts"], None, level)
    if m := _BRACKET_HUMAN.match(line):
        return LogLine(number, raw, line[m.end() :], "dmesg_H", m["ts"].strip(), None, level)
    if m := _ISO_DMESG.match(line):
        return LogLine(number, raw, line[m.end() :], "dmesg_T", m["ts"], None, level)
    if m := _SYSLOG.match(line):
        message, monotonic = line[m.end() :], None
        if inner := _MONO.match(message):  # kern.log keeps the kernel stamp: "kernel: [   12.3] msg"
            message, monotonic = message[inner.end() :], float(inner["ts"])
        return LogLine(number, raw, message, "journal", m["ts"], monotonic, level)
    if line[:1].isdigit() and (m := _UNIX.match(line)):
        stamp = datetime.fromtimestamp(float(m["epoch"]), UTC).isoformat()
        return LogLine(number, raw, line[m.end() :], "journal", stamp, None, level)
    # A monotonic stamp may come after other output glued to the line ("node1 login: [ 519.2] ...").
    if (m := _MONO.match(line)) or (
        # metalog writes "Sep 12 12:36:45 [kernel] [  150.5] msg": no host, the ident bracketed
        (m := _MONO.search(line)) and m.start() <= 40 and "[" not in line[: m.start()].replace("[kernel]", "")
    ):
        return _monotonic_line(number, raw, line, m, form, level)
    bare = _strip_ident(line)
    if bare != line:
        form = "journal"
    elif level is None:
        form = "plain"
    return LogLine(number, raw, bare, form, None, None, level)


def _monotonic_line(
    number: int, raw: str, line: str, m: re.Match[str], form: str, level: str | None
) -> LogLine:
    message = _strip_ident(line[m.end() :])
    form = "journal" if message != line[m.end() :] else form
    return LogLine(number, raw, message, form, m["ts"], float(m["ts"]), level)


KINDS: tuple[str, ...] = tuple(kind for kind, _, _ in _RULES)


_COMPILED = tuple((kind, tuple(map(lazy_compile, patterns))) for kind, _, patterns in _RULES)
# hint -> the kinds (positions in _COMPILED) that it gates
_KINDS_OF_HINT: dict[str, tuple[int, ...]] = {
    hint: tuple(i for i, (_, hints, _) in enumerate(_RULES) if hint in hints)
    for hint in sorted({hint for _, hints, _ in _RULES for hint in hints})
}
MAX_CLASSIFIED_CHARS = 2000  # bounds regex work on garbage lines

# Device names, most specific first; the first hit names the event's device.
_DEVICE_PATTERNS = tuple(
    lazy_compile(p)
    for p in (
        r"^(?:nvme|block|nvme_tcp|nvme_rdma|nvme_fabrics) (?P<d>nvme\d+(?:c\d+)?(?:n\d+)?(?:p\d+)?):",
        r"^(?P<d>nvme\d+(?:c\d+)?n\d+(?:p\d+)?):",
        r"\bdev(?:ice)? (?P<d>[a-z][\w-]*?)(?:-\d+)?[,.]?(?:\s|$)",
        r"^(?:XFS|EXT[34]-fs(?: error| warning)?|BTRFS \w+) \((?:device )?(?P<d>[^)\s]+)\)",
        r"\b(?P<d>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\b",
        r"\[(?P<d>sd[a-z]+)\]",
        r"Request device \[(?P<d>[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])\]",
        r"\b(?P<d>nvme\d+(?:c\d+)?(?:n\d+)?(?:p\d+)?)\b",
    )
)


def _device(message: str) -> str | None:
    for pattern in _DEVICE_PATTERNS:
        if m := pattern.search(message):
            return m["d"]
    return None


_DECIMAL = lazy_compile(r"-?\d{1,18}")


def _detail(value: str) -> int | str:
    """Decimal numbers become ints; hex stays as written (``"0x71"``), the way rules quote it."""
    value = value.strip()
    return int(value) if _DECIMAL.fullmatch(value) else value


_NO_DIGITS = str.maketrans("", "", "0123456789")


def _pieces(hint: str) -> tuple[tuple[str, str], ...]:
    """What each whitespace-free piece of a hint must be in the log's words (``hints_in``): the
    piece without its digits, with a blank before it when the hint has whitespace before it (it
    starts a word) and after it when the hint has whitespace after it (it ends one), for the
    words joined by blanks; and the piece itself, for the text. A piece that is only digits
    says nothing of the words (its word may be only digits: gone)."""
    pieces = hint.split()
    needles = []
    for index, piece in enumerate(pieces):
        bare = piece.translate(_NO_DIGITS)
        starts = index > 0 or hint[:1].isspace()
        ends = index < len(pieces) - 1 or hint[-1:].isspace()
        word = f"{' ' if starts else ''}{bare}{' ' if ends else ''}" if bare else ""
        needles.append((word, piece))
    return tuple(needles)


# hint -> its pieces' needles (see _pieces and hints_in)
_HINT_PIECES = {hint: _pieces(hint) for hint in _KINDS_OF_HINT}


_WORDS_CHUNK = 1 << 20  # characters split into words at a time
_MAX_DISTINCT_WORDS = 200_000  # past this the log does not repeat itself: search the text instead


def hints_in(text: str, extra: Sequence[str] = ()) -> list[tuple[str, tuple[int, ...]]]:
    """The hints that occur anywhere in ``text`` (with the kinds they gate): what is worth
    looking for in each of its lines. A log has a handful of the ~200.

    Each hint is a scan of the text, so they are first looked for in its distinct words (a
    log repeats itself; measured in docs/performance.md), with the digits taken out: every
    timestamp, sector and command id is a word of its own, and with them a 100k-line log had
    138,000 distinct words (the ~200 scans of them cost 0.7 s), without them 12,000. Each piece
    of a hint, its digits taken out, must be in one of those words, at its start when the hint
    has whitespace before it, at its end when whitespace follows (``_pieces``): so no hint in
    the text is missed, and most that are not there are ruled out without a scan. A hint that
    passes is confirmed in the text (taking digits out may join letters: ``nv0me``; the pieces
    need not be in neighbouring words). The words are gathered a chunk at a time (a list of
    every word of a hostile 64 MiB log would take gigabytes), and a log with too many distinct
    words is searched directly."""
    lowered = text.lower()
    words = _distinct_words(lowered)
    haystack = f" {' '.join(words)} " if words is not None else lowered
    found = []
    for hint, kinds in [*_KINDS_OF_HINT.items(), *((hint, ()) for hint in extra)]:
        # hints that gate no kind (the error-line classifier's, ``extra``): their lines only
        pieces = _HINT_PIECES.get(hint) or _pieces(hint)
        if words is None:
            possible = all(piece in lowered for _, piece in pieces)
        else:
            possible = all(word in haystack for word, _ in pieces)
        if possible and hint in lowered:
            found.append((hint, kinds))
    return found


def _distinct_words(lowered: str) -> set[str] | None:
    """The distinct words of ``lowered`` with their digits taken out; None when there are more
    than _MAX_DISTINCT_WORDS."""
    words: set[str] = set()
    start = 0
    while start < len(lowered):
        cut = lowered.find("\n", start + _WORDS_CHUNK)
        cut = len(lowered) if cut == -1 else cut
        words.update(lowered[start:cut].translate(_NO_DIGITS).split())
        if len(words) > _MAX_DISTINCT_WORDS:
            return None
        start = cut + 1
    return words


def hinted_line_numbers(text: str, hints: Sequence[tuple[str, tuple[int, ...]]]) -> Iterator[int]:
    """The numbers (1-based, as ``numbered_lines`` counts), in increasing order, of the lines of
    ``text`` in which one of ``hints`` occurs: only those can hold an event, and a log's other
    lines then cost no classification at all (``hinted_line_spans``)."""
    return (number for number, _, _ in hinted_line_spans(text, hints))


def hinted_line_spans(
    text: str, hints: Sequence[tuple[str, tuple[int, ...]]], lowered: str | None = None
) -> Iterator[tuple[int, int, int]]:
    """(number, start, end) of each line of ``text`` in which one of ``hints`` occurs, in
    increasing order: its number as ``numbered_lines`` counts, where it starts and ends (its
    newline or the text's end) in ``lowered`` (``text.lower()``, whose offsets are the text's
    when it is as long). Found by searching the whole lowered text for each hint, the next hit
    of every hint kept in a heap; a hint holding another (``i/o error`` holds ``err``) marks no
    line the other does not, so it is not searched for. Lowering neither adds nor removes
    newlines, so its line numbers are the text's, counted between hits (no list of lines)."""
    lowered = text.lower() if lowered is None else lowered
    heap = [(at, hint) for hint in _fewest(hint for hint, _ in hints) if (at := lowered.find(hint)) != -1]
    heapq.heapify(heap)
    number, counted_to = 1, 0
    while heap:
        at = heap[0][0]
        number += lowered.count("\n", counted_to, at)
        counted_to = at
        line_end = lowered.find("\n", at)
        line_end = len(lowered) if line_end == -1 else line_end
        yield number, lowered.rfind("\n", 0, at) + 1, line_end
        while heap and heap[0][0] < line_end:  # one hit a line is enough: on to the next line
            hint = heapq.heappop(heap)[1]
            if (following := lowered.find(hint, line_end + 1)) != -1:
                heapq.heappush(heap, (following, hint))


def _fewest(hints: Iterable[str]) -> list[str]:
    """The hints that hold no other: a line holds one of ``hints`` exactly when it holds one of
    these (each search is a pass over the whole text)."""
    kept: list[str] = []
    for hint in sorted(set(hints), key=len):
        if not any(shorter in hint for shorter in kept):
            kept.append(hint)
    return kept


def hinted_lines(text: str, hints: Sequence[tuple[str, tuple[int, ...]]]) -> set[int]:
    """``hinted_line_numbers`` as a set."""
    return set(hinted_line_numbers(text, hints))


class _Ascending:
    """Membership in an increasing sequence of numbers for questions asked in increasing order
    (the lines of a log, read in turn): the sequence is consumed as the questions pass it."""

    __slots__ = ("_next", "_numbers")

    def __init__(self, numbers: Iterator[int]) -> None:
        self._numbers = numbers
        self._next = next(numbers, None)

    def __contains__(self, number: object) -> bool:
        if not isinstance(number, int):
            return False
        while self._next is not None and self._next < number:
            self._next = next(self._numbers, None)
        return self._next == number


def classify(
    message: str, hints: Sequence[tuple[str, tuple[int, ...]]] | None = None
) -> tuple[str, str | None, dict[str, Any]] | None:
    """(kind, device, details) for a kernel message, or None when no failure mode matches.
    ``hints``: those of the whole log (``hints_in``), when classifying many of its lines."""
    message = message[:MAX_CLASSIFIED_CHARS]
    lowered = message.lower()
    # Only the kinds gated by a hint in the message are tried, in priority order (dmesg_kinds).
    gates = _KINDS_OF_HINT.items() if hints is None else hints
    candidates = {i for hint, kinds in gates if hint in lowered for i in kinds}
    for index in sorted(candidates):
        kind, patterns = _COMPILED[index]
        for pattern in patterns:
            m = pattern.search(message)
            if not m:
                continue
            groups = {k: v for k, v in m.groupdict().items() if v is not None}
            device = groups.pop("device", None) or _device(message)
            details = {key: _detail(value) for key, value in groups.items()}
            return kind, device, _decoded(kind, details)
    return None


def _decoded(kind: str, details: dict[str, Any]) -> dict[str, Any]:
    """An NVMe status is judged by its numbers, not its wording: the class the status type and code
    name (probes/nvme_status.py), and for a refused fabrics Connect who must act."""
    if kind == "nvme_status_error":
        details.update(nvme_status.describe(details))
    elif kind == "nvmeof_connect_refused":
        details.update(nvme_status.describe(details))
        details["reason"] = nvme_status.connect_reason(details)
    return details


# ---------------------------------------------------------------------------------------------
# Reading the whole text
# ---------------------------------------------------------------------------------------------


class _Boots:
    """Boot boundaries: a separator, a banner, or a seconds-since-boot clock going backwards."""

    __slots__ = ("boot_id", "cmdline", "forms", "index", "last_monotonic", "lines_in_boot", "release")

    def __init__(self) -> None:
        self.index = 0
        self.lines_in_boot = 0
        self.last_monotonic: float | None = None
        self.release: str | None = None
        self.cmdline: str | None = None
        self.boot_id: Any = None  # journalctl -o json _BOOT_ID of the last record
        self.forms: set[str] = set()

    def new_boot(self) -> None:
        if self.lines_in_boot:
            self.index += 1
        self.lines_in_boot = 0
        self.last_monotonic = None

    def see(self, line: LogLine) -> int:
        self._clock(line.monotonic_s)
        if "Linux version" in line.message and (m := _BANNER.search(line.message)):
            self.new_boot()
            self.release = m["release"]
        if "ommand line: " in line.message and (m := _CMDLINE.match(line.message)):
            self.cmdline = m["cmdline"].strip()
        self._counted(line.monotonic_s, line.form)
        return self.index

    def see_boot_id(self, boot_id: Any) -> None:
        """A journal record's ``_BOOT_ID``: another than the record before's starts a boot."""
        if self.boot_id is not None and boot_id != self.boot_id:
            self.new_boot()
        self.boot_id = boot_id

    def see_clock(self, monotonic: float) -> None:
        """A plain `dmesg` line with nothing but its clock to give (see ``_quiet_clock``)."""
        self._clock(monotonic)
        self._counted(monotonic, "dmesg")

    def see_clocks(self, stamps: list[str]) -> None:
        """``see_clock`` for each of a run of such lines, by their stamps (``_quiet_run``): the
        clock going back (a boot) looked for in C over the whole run, the run then counted at
        once; a run where it does go back is taken line by line."""
        if not stamps:
            return
        values = list(map(float, stamps))
        earlier = values[:-1] if self.last_monotonic is None else [self.last_monotonic, *values[:-1]]
        later = values[1:] if self.last_monotonic is None else values
        if any(map(operator.lt, later, map(operator.sub, earlier, repeat(1.0)))):  # see _clock
            for monotonic in values:
                self.see_clock(monotonic)
            return
        self.last_monotonic = values[-1]
        self.lines_in_boot += len(values)
        self.forms.add("dmesg")

    def _clock(self, monotonic: float | None) -> None:
        last = self.last_monotonic
        if monotonic is not None and last is not None and monotonic < last - 1.0:
            self.new_boot()

    def _counted(self, monotonic: float | None, form: str) -> None:
        if monotonic is not None:
            self.last_monotonic = monotonic
        self.lines_in_boot += 1
        self.forms.add(form)


def _json_lines(text: str) -> Iterator[LogLine]:
    """Entries of ``dmesg --json``, each placed on the line of its ``"msg"`` key."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"dmesg --json output is not valid JSON: {exc}") from None
    entries = document.get("dmesg") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise ParseError('JSON without a "dmesg" list (expected `dmesg --json`)')
    msg_lines = ((n, line) for n, line in numbered_lines(text) if '"msg"' in line)
    first_line = text.split("\n", 1)[0]
    for entry in entries:
        number, raw = next(msg_lines, (1, first_line))  # the entry's own "msg" line, in turn
        if not isinstance(entry, dict) or not isinstance(entry.get("msg"), str):
            continue
        raw_time = entry.get("time")
        monotonic = (
            float(raw_time) if isinstance(raw_time, int | float) and not isinstance(raw_time, bool) else None
        )
        timestamp = f"{monotonic:.6f}" if monotonic is not None else (str(raw_time) if raw_time else None)
        level = _level_name(entry.get("pri")) if entry.get("pri") is not None else None
        yield LogLine(number, raw, entry["msg"], "json", timestamp, monotonic, level)


# What parse reads of a log: a line (with whether it holds a hint, so may hold an event), the clock
# of a plain `dmesg` line with nothing else to give, or the stamps of a run of such lines.
_Item = tuple[LogLine, bool] | float | list[str]


def _text_lines(
    text: str, boots: _Boots, hints: Sequence[tuple[str, tuple[int, ...]]] | None
) -> Iterator[_Item]:
    """The log's lines. With ``hints`` (those of the log: ``hints_in``), only the lines holding
    one may hold an event, and the plain `dmesg` lines between them with nothing else to give
    (most lines of a log) are read by their clocks alone, a run of them at a time
    (``_unhinted``): making each a LogLine, or even looking at each, was most of the parse
    (docs/performance.md)."""
    if hints is None:
        yield from _one_by_one(text, boots, None)
        return
    lowered = text.lower()
    if len(lowered) != len(text):  # lowering changed lengths (U+0130): the hits' offsets are not the text's
        yield from _one_by_one(text, boots, hinted_candidates(text, hints))
        return
    at, number = 0, 1  # the first line not read yet, and its number
    for hinted, start, end in hinted_line_spans(text, hints, lowered):
        if start > at:
            yield from _unhinted(text, at, start - 1, number, boots)
        if (item := _read_line(hinted, text[start:end], boots)) is not None:
            yield item, True
        at, number = end + 1, hinted + 1
    end = len(text) - text.endswith("\n")  # the empty line after a last newline says nothing
    if at < end:
        yield from _unhinted(text, at, end, number, boots)


def _one_by_one(text: str, boots: _Boots, hinted: Container[int] | None) -> Iterator[_Item]:
    """The log's lines, each on its own (``hinted``: the lines that may hold an event, or None
    for all)."""
    for number, raw in numbered_lines(text).nonempty():  # an empty line says nothing
        if hinted is not None and number not in hinted and (clock := _quiet_clock(raw)) is not None:
            yield clock
            continue
        if (line := _read_line(number, raw, boots)) is not None:
            yield line, hinted is None or number in hinted


def _read_line(number: int, raw: str, boots: _Boots) -> LogLine | None:
    """One line taken apart; None for what is no message (a continuation, a journal's note, a
    boot separator: the boots see it)."""
    stripped = raw.strip()
    if not stripped or (raw[0].isspace() and _CONTINUATION.match(raw)):
        return None
    if stripped.startswith("-- "):
        if _JOURNAL_NOTE.match(stripped):
            return None
        if _BOOT_SEPARATOR.match(stripped):
            boots.new_boot()
            return None
    record = _journal_json(stripped) if stripped.startswith("{") else None
    if record is None:
        return split_line(number, raw)
    boots.see_boot_id(record.get("_BOOT_ID"))
    return _journal_json_line(number, raw, record)


_RUN_CHARS = 1 << 20  # characters of a run of unhinted lines read at a time (bounds the stamps' list)
# The stamp of each plain `dmesg` line after a newline: ``_MONO`` where it decides (its ``\s``
# without the newline, which a line cannot hold); the newline first, a literal the engine finds fast.
_RUN_STAMP = lazy_compile(r"\n\[[^\S\n]*(\d+\.\d+)(?:[^\S\n]*<[^\S\n]*\d+\.\d+[^\S\n]*>)?[^\S\n]*\]")


def _unhinted(text: str, at: int, stop: int, number: int, boots: _Boots) -> Iterator[_Item]:
    """The lines of ``text[at:stop]`` (whole lines, the first numbered ``number``), none holding a
    hint: a run of plain `dmesg` lines with nothing but a clock to give (``_quiet_clock``) as
    their stamps, found in one pass; any other run line by line."""
    while at < stop:
        cut = text.find("\n", at + _RUN_CHARS, stop)
        cut = stop if cut == -1 else cut
        stamps = _quiet_run(text, at, cut)
        if stamps is not None:
            yield stamps
        else:
            lines = text[at:cut].split("\n")
            for line_number, raw in compress(enumerate(lines, number), lines):  # empty lines in C
                if (clock := _quiet_clock(raw)) is not None:
                    yield clock
                elif (line := _read_line(line_number, raw, boots)) is not None:
                    yield line, False
        number += text.count("\n", at, cut) + 1
        at = cut + 1


def _quiet_run(text: str, at: int, stop: int) -> list[str] | None:
    """The stamps of the lines of ``text[at:stop]`` when every one is a line ``_quiet_clock``
    reads by its clock (a stamp first; no ``kernel`` ident, banner or command line anywhere),
    else None. A line without a stamp (an empty one too) leaves fewer stamps than lines."""
    for word in _NOT_QUIET:
        if text.find(word, at, stop) != -1:
            return None
    stamps = _RUN_STAMP.findall(text, at - 1, stop) if at else _RUN_STAMP.findall("\n" + text[:stop])
    return stamps if len(stamps) == text.count("\n", at, stop) + 1 else None


def _pretty_journal_lines(text: str, boots: _Boots) -> Iterator[LogLine]:
    """``journalctl -o json-pretty``: one JSON object over many lines per record, each record
    placed on the line of its ``"MESSAGE"`` key. A record that does not decode ends the reading
    (a paste cut short keeps what came before it)."""
    decoder = json.JSONDecoder()
    at, number, counted_to = 0, 1, 0
    while (at := _next_record(text, at)) != -1:
        try:
            record, end = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            return
        message_at = text.find('"MESSAGE"', at, end)
        if isinstance(record, dict) and isinstance(record.get("MESSAGE"), str) and message_at != -1:
            number += text.count("\n", counted_to, message_at)
            counted_to = message_at
            line_end = text.find("\n", message_at)
            raw = text[text.rfind("\n", 0, message_at) + 1 : line_end if line_end != -1 else len(text)]
            boots.see_boot_id(record.get("_BOOT_ID"))
            yield _journal_json_line(number, raw, record)
        at = end


def _next_record(text: str, at: int) -> int:
    """Where the next ``{`` record starts after whitespace, or -1 (the end, or something else)."""
    while at < len(text) and text[at].isspace():
        at += 1
    return at if at < len(text) and text[at] == "{" else -1


def _is_pretty_journal(text: str) -> bool:
    """The text opens with a json-pretty record: ``{`` alone on its first line, then a journal
    field (``"_TRANSPORT" : …``, ``"MESSAGE" : …``, ``"__CURSOR" : …``)."""
    return bool(_PRETTY_OPENING.match(text[:400]))


# what a plain line may hold that the boots read: an ident to strip, a banner, a command line
_NOT_QUIET = ("kernel", "Linux version", "ommand line: ")


def _quiet_clock(raw: str) -> float | None:
    """The clock of a plain `dmesg` line (``[   12.345678] msg``) that gives the boot record
    nothing but that clock: no banner, no command line, and no ``kernel:`` ident to strip (its
    form is then "dmesg", as ``split_line`` would say). None for any other line."""
    if not raw.startswith("[") or any(word in raw for word in _NOT_QUIET):
        return None
    m = _MONO.match(raw.rstrip())
    return float(m["ts"]) if m else None


def _journal_json(line: str) -> dict[str, Any] | None:
    """One ``journalctl -o json`` record, or None when the line is not one."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("MESSAGE"), str) else None


def _journal_json_line(number: int, raw: str, record: dict[str, Any]) -> LogLine:
    usec = record.get("__MONOTONIC_TIMESTAMP")
    monotonic = int(usec) / 1e6 if isinstance(usec, str) and usec.isdecimal() else None
    timestamp = f"{monotonic:.6f}" if monotonic is not None else None
    level = _level_name(record["PRIORITY"]) if isinstance(record.get("PRIORITY"), str) else None
    return LogLine(number, raw, record["MESSAGE"], "journal", timestamp, monotonic, level)


_PRETTY_OPENING = lazy_compile(r'^\s*\{[ \t]*\r?\n\s*"_{0,2}[A-Z][A-Z0-9_]*"\s*:')


def _is_json(text: str) -> bool:
    return bool(re.match(r'^\s*\{\s*"dmesg"\s*:', text[:200]))


# One frame of a call trace, any code's ("func+0x1/0x2 [module]", after "RIP: 0010:" or an old
# kernel's "[<ffffffffa03f2d5e>] "; 32-bit ARM's "[<80230d70>] (func) from …"); "? " marks a frame
# the unwinder is unsure of, left out.
_FRAME = lazy_compile(
    r"^\s*(?:RIP: [0-9a-f]{4}:|IP: |PC is at |LR is at )?(?:\[<[0-9a-f]{8,16}>\] )?(?P<unsure>\? )?"
    r"(?:(?P<function>[A-Za-z_][\w.]{0,80})\+0x[0-9a-f]{1,8}/0x[0-9a-f]{1,8}(?: \[(?P<module>\w{1,40}))?"
    r"|\((?P<arm>[A-Za-z_]\w{0,80})\) from )"
)
# where every blocked task sleeps: what it blocks *in* is the frame after these
_SLEEP_FRAMES = frozenset(
    ("__schedule", "schedule", "schedule_timeout", "io_schedule", "io_schedule_timeout",
     "schedule_preempt_disabled", "preempt_schedule_common", "__mutex_lock", "__mutex_lock_slowpath",
     "mutex_lock", "__mutex_lock.constprop.0", "rwsem_down_read_slowpath", "rwsem_down_write_slowpath",
     "down_read", "down_write", "down", "__down", "wait_for_completion", "bit_wait_io", "__wait_on_bit",
     "out_of_line_wait_on_bit", "__wait_on_bit_lock", "__lock_page", "__folio_lock", "wait_on_page_bit",
     "wait_on_page_bit_common", "folio_wait_bit_common", "ret_from_fork", "ret_from_fork_asm", "kthread")
)  # fmt: skip
TRACE_HEADERS = frozenset(("hung_task", "kernel_bug", "soft_lockup"))
TRACE_WINDOW_LINES = 80  # the same window the derived facts tie frames to their report with
TRACE_FRAMES = 12


class _Traces:
    """The call trace after each hung-task report, oops or lockup, as ``details["trace"]``: the
    first TRACE_FRAMES frames of any code (not only storage code), sleeping primitives left out,
    so a report is judged by the stack it blocks in, whatever the task's name."""

    __slots__ = ("line", "trace")

    def __init__(self) -> None:
        self.trace: list[str] | None = None
        self.line = 0

    def start(self, kind: str, details: dict[str, Any], number: int) -> None:
        if kind in TRACE_HEADERS:
            self.trace = details["trace"] = []
            self.line = number

    def frame(self, number: int, message: str) -> None:
        if self.trace is None or number - self.line > TRACE_WINDOW_LINES or len(self.trace) >= TRACE_FRAMES:
            return
        if "+0x" not in message and ") from [" not in message:
            return
        m = _FRAME.match(message)
        if not m or m["unsure"]:
            return
        function = m["function"] or m["arm"]
        if function in _SLEEP_FRAMES:
            return
        self.trace.append(f"{function} [{m['module']}]" if m["module"] else function)


class _Events:
    """The events of a log as they are found: every one counted in its (kind, device) summary,
    the first and last MAX_EVENTS // 2 kept whole. A storm of one message (a 64 MiB log of
    timeouts) then costs a summary and a bounded list, not a record per line."""

    __slots__ = ("dropped", "errors", "errors_seen", "first", "groups", "last", "markers")

    def __init__(self) -> None:
        self.first: list[dict[str, Any]] = []
        self.last: deque[dict[str, Any]] = deque(maxlen=MAX_EVENTS // 2)
        self.dropped = 0
        self.groups: dict[tuple[str, str | None], dict[str, Any]] = {}
        # lifecycle markers (a mount, a controller's I/O queues): the newest are what matters
        self.markers: deque[dict[str, Any]] = deque(maxlen=MAX_EVENTS)
        # error lines of the storage path (gdsdoctor.probes.error_lines): the newest are kept
        self.errors: deque[dict[str, Any]] = deque(maxlen=MAX_ERROR_LINES)
        self.errors_seen = 0

    def error_line(
        self, line: LogLine, boot: int, artifact: str, hit: tuple[str, str | None, dict[str, Any]] | None
    ) -> None:
        """Keep ``line`` when it is an error of the storage path: an event of a failure kind
        (the reader judged it) or a line the error classifier places on the path."""
        if hit is not None:
            family, device = error_lines.of_event(hit[0], hit[2]), hit[1]
        else:
            found = error_lines.classify_cached(line.message.strip())
            family, device = found if found else (None, None)
            device = device or (_device(line.message) if family else None)  # "XFS (loop2): …"
        if family is None:
            return
        self.errors_seen += 1
        self.errors.append(
            {
                "family": family,
                "device": device,
                "kind": hit[0] if hit else None,
                "timestamp": line.timestamp,
                "monotonic_s": line.monotonic_s,
                "boot": boot,
                "src": src(artifact, line.number, line.raw),
            }
        )

    def add(self, event: dict[str, Any]) -> None:
        if event["kind"] in LIFECYCLE_KINDS:
            self.markers.append(event)
            return
        self._count(event)
        if len(self.first) < MAX_EVENTS // 2:
            self.first.append(event)
            return
        if len(self.last) == self.last.maxlen:
            self.dropped += 1
        self.last.append(event)

    def _count(self, event: dict[str, Any]) -> None:
        key = (event["kind"], event["device"])
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = {
                "kind": event["kind"],
                "device": event["device"],
                "count": 0,
                "current_boot_count": 0,
                "first_line": event["src"]["line"],
                "first_timestamp": event["timestamp"],
                "message": event["message"],
                "src": event["src"],
                "_boot": event["boot"],  # the boot current_boot_count counts (boots only go up)
            }
        if group["_boot"] != event["boot"]:
            group["_boot"], group["current_boot_count"] = event["boot"], 0
        group["count"] += 1
        group["current_boot_count"] += 1
        group["last_line"] = event["src"]["line"]
        group["last_timestamp"] = event["timestamp"]

    def finish(self, current_boot: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(events kept, summary), ``current_boot`` marked once the last boot is known."""
        events = self.first + list(self.last)
        for event in events:
            event["current_boot"] = event["boot"] == current_boot
        summary = []
        for group in self.groups.values():
            boot = group.pop("_boot")
            summary.append(
                {**group, "current_boot_count": group["current_boot_count"] if boot == current_boot else 0}
            )
        return events, summary


def parse(text: str, artifact: str) -> Section:
    boots = _Boots()
    # An escape (JSON records) could hide a hint from a scan of the raw text: scan each message then.
    hints = hints_in(text, error_lines.HINTS) if "\\" not in text else None
    lines: Iterator[_Item]
    if _is_json(text):
        lines = _gated(_json_lines(text), text, hints)
    elif _is_pretty_journal(text):
        lines = _gated(_pretty_journal_lines(text, boots), text, hints)
    else:
        lines = _text_lines(text, boots, hints)
    found = _Events()
    traces = _Traces()
    line_count = 0
    last_stamp: str | None = None  # the last line's stamp as given (a wall clock in `dmesg -T`)
    for item in lines:
        if type(item) is list:  # a run of quiet plain lines: their clocks are all there is
            line_count += len(item)
            boots.see_clocks(item)
            continue
        line_count += 1
        if type(item) is float:  # one quiet plain line
            boots.see_clock(item)
            continue
        line, hinted = item  # type: ignore[misc]
        boot = boots.see(line)
        if line.monotonic_s is None and line.timestamp:  # a wall clock (`dmesg -T`, syslog)
            last_stamp = line.timestamp
        if not hinted:
            continue  # no hint anywhere in the line, so none in its message: no event
        hit = classify(line.message.strip(), hints)
        found.error_line(line, boot, artifact, hit)
        if hit is None or hit[0] == "storage_trace_frame":
            traces.frame(line.number, line.message)
            if hit is None:
                continue
        kind, device, details = hit
        traces.start(kind, details, line.number)
        found.add(
            {
                "kind": kind,
                "device": device,
                "message": line.message.strip()[:500],
                "timestamp": line.timestamp,
                "monotonic_s": line.monotonic_s,
                "level": line.level,
                "boot": boot,
                "current_boot": False,  # set by finish, once the last boot is known
                "details": details,
                "src": src(artifact, line.number, line.raw),
            }
        )
    forms = boots.forms - {"plain"}
    healthy_untimed = kernel_shaped(text[:200_000].split("\n")[:200])  # `dmesg -t` with no event
    if text.strip() and not forms and not found.groups and not found.errors and not healthy_untimed:
        raise ParseError("no kernel log lines (expected dmesg, journalctl -k, /dev/kmsg or syslog output)")
    events, summary = found.finish(boots.index)
    section: Section = {
        "format": (forms.pop() if len(forms) == 1 else "mixed") if forms else "plain",
        "line_count": line_count,
        "boot_count": boots.index + 1,
        "kernel_release": boots.release,
        "cmdline": boots.cmdline,
        "events": events,
        "events_dropped": found.dropped,
        "summary": summary,
        "kinds": sorted({e["kind"] for e in summary}),
        "current_boot_kinds": sorted({e["kind"] for e in summary if e["current_boot_count"]}),
        "lifecycle": [{**m, "current_boot": m["boot"] == boots.index} for m in found.markers],
        "error_lines": [{**e, "current_boot": e["boot"] == boots.index} for e in found.errors],
        "error_lines_seen": found.errors_seen,
        "last_monotonic_s": boots.last_monotonic,
        "last_timestamp": last_stamp if boots.last_monotonic is None else None,
    }
    if found.dropped:
        section["input_cut"] = (
            f"{found.dropped} of {found.dropped + len(events)} kernel log events not kept (the first and "
            f"last {MAX_EVENTS // 2} are; the summary counts them all)"
        )
    return section


def _gated(
    lines: Iterator[LogLine], text: str, hints: Sequence[tuple[str, tuple[int, ...]]] | None
) -> Iterator[_Item]:
    """Each of ``lines`` with whether it may hold an event (holds one of ``hints``)."""
    hinted = hinted_candidates(text, hints) if hints is not None else None
    for line in lines:
        yield line, hinted is None or line.number in hinted


def hinted_candidates(text: str, hints: Sequence[tuple[str, tuple[int, ...]]]) -> Container[int]:
    """The hinted lines, for questions asked in line order: consumed as the log is read, never
    held as a set (a log of 12M hinted lines would hold 12M numbers)."""
    return _Ascending(hinted_line_numbers(text, hints))


# ---------------------------------------------------------------------------------------------
# Recognising a paste
# ---------------------------------------------------------------------------------------------

_COMMAND_LINE = lazy_compile(r"^\s*[$#] ")
# Lines of programs' own logs that a kernel-log prefix does not make kernel lines: cufile.log
# (`[pid=N tid=N]`, its words "pci_p2pdma not supported" are a kernel event's too), UCX
# (`[1668693503.473099] [host:pid:0] ib_log.c:246  UCX  ERROR …` starts like dmesg), NCCL, and
# Python's logging, whose default time (`[2023-04-14 13:11:27,885]`: a comma before the
# milliseconds) no kernel log tool prints: DeepSpeed's and torchrun's launchers.
_APPLICATION_LINE = lazy_compile(
    r"\[pid=\d+ tid=\d+\]|\bUCX\s+[A-Z]{4,5}\b|\bNCCL (?:WARN|INFO|ABORT|TRACE)\b"
    r"|^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\]"
)


def recognise(text: str) -> bool:
    head = text[:200_000].split("\n")[:100]
    lines = [
        line
        for line in head
        if line.strip() and not _COMMAND_LINE.match(line) and not _APPLICATION_LINE.search(line)
    ]
    if not lines:
        return False
    if _is_json(text):
        return True
    if _is_pretty_journal(text):
        return next(_pretty_journal_lines(text[:200_000], _Boots()), None) is not None
    prefixed = events = unprefixed_events = 0
    for number, raw in enumerate(lines, start=1):
        if _BOOT_SEPARATOR.match(raw.strip()) or _JOURNAL_NOTE.match(raw.strip()):
            prefixed += 1
            continue
        if _CONTINUATION.match(raw):
            continue
        record = _journal_json(raw.strip()) if raw.lstrip().startswith("{") else None
        line = _journal_json_line(number, raw, record) if record else split_line(number, raw)
        if line.form == "journal" and _is_other_syslog(raw):
            continue  # syslog lines of other programs do not make a kernel log
        if line.form == "dmesg" and _PROGRAM_LINE.match(line.message):
            continue  # nor does a program's line behind the kernel's clock (journald's console, kmsg)
        prefixed += line.form != "plain"
        hit = classify(line.message.strip())
        event = hit is not None and hit[0] not in LIFECYCLE_KINDS  # failures, not mounts
        # an error line of a kernel subsystem no kind reads yet (`LustreError: … rc = -107`)
        event = event or _kernel_error_line(line.message)
        events += event
        unprefixed_events += event and line.form == "plain" and not kernel_prefixed(raw)
    # Most lines carry a kernel-log prefix, or (bare excerpts) kernel failure messages are present,
    # or (`dmesg -t`, healthy) most lines start the way kernel messages do.
    return (
        prefixed * 2 >= len(lines)
        or (events >= 1 and (prefixed + events) * 2 >= len(lines))
        or kernel_shaped(lines, unprefixed_events)  # an old log without a clock: its events count
    )


def _kernel_error_line(message: str) -> bool:
    found = error_lines.classify_cached(message.strip()) if error_lines.has_hint(message.lower()) else None
    return found is not None and found[0] in error_lines.KERNEL_FAMILIES


# "[  65.349509] anaconda[1828]: …": a program's line (systemd's to /dev/kmsg, journald's console);
# a kernel message names no process id after its subsystem
_PROGRAM_LINE = lazy_compile(r"^[A-Za-z][\w.\-]{0,80}\[\d{1,9}\]: ")


def _is_other_syslog(raw: str) -> bool:
    m = _SYSLOG.match(raw.strip())
    return bool(m and m["ident"] != "kernel")


PROBES: tuple[Probe, ...] = (
    Probe(
        section="dmesg",
        title="kernel log events (NVMe, NVMe-oF, filesystems, nvidia-fs, PCIe, IOMMU)",
        sources=(
            Source("cmd/dmesg.txt", argv=("dmesg",), timeout=20.0, needs_root=True),
            Source(
                "cmd/journalctl-k.txt",
                argv=("journalctl", "-k", "-b", "--no-pager", "-o", "short-monotonic"),
                timeout=30.0,
                needs_root=True,
            ),
        ),
        parse=parse,
        recognise=recognise,
        paste_hint="`sudo dmesg -T` (or `journalctl -k -b`)",
    ),
)
