"""Lines a mail client or a terminal wrapped, joined back; full-width punctuation made ASCII.

A kernel or job log pasted into a mail is wrapped at 72 columns (the break at a space, the space
gone); one copied from a terminal or a ticket system is cut at the window's width (the break
anywhere, mid-word). Either way a message arrives in two lines and the second, without the log's
prefix, is read as nothing. Two signals, one per way of wrapping:

- *soft* (mail): most lines of the block start with one log prefix (a kernel timestamp, a syslog or
  ISO time, ``[rankN]:``, NCCL's ``host:pid:tid [dev]``, glog's ``E0325 20:57:27``); a line
  without it, not indented, right after a long prefixed line, is that line's end: joined with a space;
- *hard* (terminal): several lines have exactly the block's longest length, each cut mid-word (a
  letter or digit on both sides of the cut) and the line after each starts unlike them (not the same
  first-token shape: a table's rows all start alike): joined as is.

The joined line takes the first line's place and the continuation's line becomes blank, so every
line keeps its number in the paste (the facts cite the pasted lines).

Full-width forms (U+FF01–FF5E) and the ideographic space, typed by CJK input methods around
pasted values (``错误：`` ``（28）``), are mapped to their ASCII twins one character for one.
"""

from __future__ import annotations

import re
from collections import Counter

from gdsdoctor.patterns import lazy_compile

_PREFIXES = (
    lazy_compile(r"^\s{0,2}\[\s{0,12}\d{1,8}\.\d{1,9}\]"),  # dmesg
    lazy_compile(
        r"^\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\]"
    ),  # dmesg -T
    lazy_compile(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d "),  # syslog
    lazy_compile(r"^\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d"),  # ISO, Python logging
    lazy_compile(r"^\[rank\d{1,6}\]:"),  # torchrun's rank prefix
    lazy_compile(r"^[\w.-]{1,64}:\d{1,10}:\d{1,10} \[\d{1,3}\] "),  # NCCL
    lazy_compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d"),  # glog
    lazy_compile(r"^\d\d:\d\d:\d\d,\d{1,6} {1,2}[A-Z]{3,8} "),  # anaconda (capture/installer.py)
)
SOFT_MIN = 50  # a line shorter than this was not wrapped
MAX_LINES = 5000  # a hand-made paste; a captured log (a whole kern.log) is never mail-wrapped
HARD_MIN = 80  # nor cut at a window's width (terminals: 80 columns or more)
_FULLWIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}
_SHAPE = lazy_compile(r"^\S{0,24}")
_FULLWIDTH_CHAR = lazy_compile("[\uff01-\uff5e\u3000]")


def fullwidth_to_ascii(text: str) -> str:
    """Full-width forms and the ideographic space as ASCII, one character for one."""
    # an ASCII text holds none (a flag of the string, no scan); else a C scan: a whole log is pasted too
    if text.isascii() or not _FULLWIDTH_CHAR.search(text):
        return text
    return text.translate(_FULLWIDTH)


def _prefix(line: str) -> int | None:
    return next((i for i, pattern in enumerate(_PREFIXES) if pattern.search(line)), None)


def log_prefix(line: str) -> int | None:
    """Which log prefix ``line`` starts with (dmesg, syslog, ISO, a rank's, NCCL's…), or None."""
    return _prefix(line)


def _shape(line: str) -> str:
    """The first token's shape: digits as 0, letters as a (``[ 123.4]`` and ``[ 987.6]`` are alike)."""
    token = _SHAPE.match(line.lstrip())
    return re.sub(r"[A-Za-z]", "a", re.sub(r"\d", "0", token[0] if token else ""))


def rejoin(lines: list[str]) -> tuple[list[str], int]:
    """The lines with wrapped messages joined back (see the module), and how many were joined."""
    if len(lines) > MAX_LINES:
        return lines, 0
    filled = [line for line in lines if line.strip()]
    if len(filled) < 2:
        return lines, 0
    out = list(lines)
    joined = _soft(out, filled) or _hard(out, filled)
    return out, joined


def _continuations(lines: list[str], kind: int, width: int | None) -> list[bool]:
    """Which lines continue the prefixed line above them: not prefixed, not indented, in a run
    that starts right after a long prefixed line, each after a long line. ``width``: the terminal's,
    when it cut the lines (a piece may then start with the blank it was cut before)."""
    flags, open_run, previous = [False] * len(lines), False, ""
    for i, line in enumerate(lines):
        indented = line[:1].isspace() and not (len(previous) == width and not line[1:2].isspace())
        if not line.strip() or _prefix(line) is not None or indented:
            open_run = bool(_PREFIXES[kind].search(line)) and len(line) >= SOFT_MIN
        elif open_run and len(previous) >= SOFT_MIN:
            flags[i] = True
        else:
            open_run = False
        previous = line
    return flags


def _soft(out: list[str], filled: list[str]) -> int:
    kinds = Counter(kind for line in filled if (kind := _prefix(line)) is not None)
    if not kinds:
        return 0
    kind, count = kinds.most_common(1)[0]
    width = max(len(line) for line in filled)
    cut = width >= HARD_MIN and sum(1 for line in filled if len(line) == width) >= 2  # a terminal's cut
    flags = _continuations(out, kind, width if cut else None)
    # the continuations do not count against the prefix's share of the lines
    if count < 2 or count < 0.6 * (len(filled) - sum(flags)):
        return 0
    raw, joined, anchor = list(out), 0, 0
    for i, line in enumerate(raw):
        if not flags[i]:
            anchor = i
            continue
        piece = raw[i - 1]  # the physical line this one continues
        mid_word = cut and len(piece) == width and not piece.endswith(" ")
        head = out[anchor].rstrip(" ") if mid_word else out[anchor].rstrip()
        out[anchor] = f"{head}{line.rstrip()}" if mid_word else f"{head} {line.strip()}"
        out[i] = ""
        joined += 1
    return joined


def _run_head(lines: list[str], i: int, width: int) -> int:
    """The first line of the run of full-width lines ``i`` ends (a line cut twice is two pieces)."""
    while i > 0 and len(lines[i - 1]) == width:
        i -= 1
    return i


def _hard(out: list[str], filled: list[str]) -> int:
    width = max(len(line) for line in filled)
    at_width = [i for i, line in enumerate(out) if len(line) == width]
    if width < HARD_MIN or len(at_width) < 2:
        return 0
    # a terminal wraps every line that reaches its width: one such line followed by a line like
    # itself (a table's next row: a mount table's, df's) makes the width a table's, not a terminal's
    rows = (i for i in at_width if i + 1 < len(out))
    if any(_shape(out[i + 1]) == _shape(out[_run_head(out, i, width)]) for i in rows):
        return 0
    raw, joined, head, continued = list(out), 0, 0, False
    for i, line in enumerate(raw[:-1]):
        head = head if continued else i  # the line a run of cut pieces belongs to
        continued = False
        nxt = raw[i + 1]
        if len(line) != width or raw[head][:1].isspace() or not nxt.strip() or nxt[:1].isspace():
            continue
        if _shape(nxt) == _shape(raw[head]) or _prefix(nxt) is not None:
            continue  # a table's next row, or the log's next line
        if not (line[-1].isalnum() and nxt[0].isalnum()):
            continue  # cut mid-word: a table's padded header and its first row are not
        out[head] += nxt
        out[i + 1] = ""
        joined, continued = joined + 1, True
    return joined
