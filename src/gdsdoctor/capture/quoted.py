"""Kernel and tool lines quoted inside prose, read as the lines they quote.

A ticket often carries its evidence inside a sentence: ``When the "nvme nvme0: I/O 14 QID 2
timeout, aborting" errors occur, the system…``, ``I see messages like `nvme nvme0: I/O 34 QID 13
timeout, aborting` in the journal``, ``dmesg reports: "end_request: I/O error, dev hdc, sector 0"``.
The kernel-log reader then takes the whole sentence for the message: the device, the time and
the words around it are the prose's, and two quoted lines on one line are one event.

A line of prose is replaced by the line it quotes when a quoted span (between straight or curly
double quotes or backticks), or what follows a colon, is itself a line of the storage path:

- its start names a kernel subsystem of the storage path (``probes/error_lines.kernel_family``:
  ``nvme nvme0:``, ``end_request:``, ``XFS (sda1):``), after a dmesg time if it has one; or
- the error classifier places it (an ``NCCL WARN``, an ``[Errno 28]``, a CUDA or cuFile error).

The line must be prose: words outside the quoted spans, and not itself a log line (a kernel
message quoting a file name, a JSON record's ``"MESSAGE":"…"``). Of several quoted lines on one
line the first that is an error line is kept (the line keeps its number in the paste; a second
quoted line is not read apart). A sentence that names a word like "timeout" and quotes no such
line is left as it is, and so is a template of a line (``some log like "nvme nvme0: I/O tag XXX
(XXX) QID XX timeout"``: placeholders or an elision). A paragraph whose one output is a quoted
line is read as that line alone (capture/detect.py), so that it is read as a kernel log is.
"""

from __future__ import annotations

from gdsdoctor.capture.rewrap import log_prefix
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes import error_lines

_SPAN = lazy_compile(r'"([^"\n]{6,400})"|\u201c([^\u201d\n]{6,400})\u201d|`([^`\n]{6,400})`')
_AFTER_COLON = lazy_compile(r":[ \t]+(?=\S)")
_DMESG_TIME = lazy_compile(r"^\[\s{0,12}\d{1,8}\.\d{1,9}\]\s?")
_WORD = lazy_compile(r"[A-Za-z]{2,}")
# a record, not prose: a JSON object, a list of strings, a clock in brackets ("[Result: …" is prose)
_RECORD = lazy_compile(r"^\s*(?:\{|\[\s*[\d\"'\[{])")
# the words before a colon that introduce a quoted line: two words or more of letters, the last a
# word (not a logger's dotted name, an exception's one name or a program's ``srun:``)
_LEAD = lazy_compile(r"(?:^|\s)[A-Za-z][a-z']{0,30}(?:[ \t]{1,4}[A-Za-z][A-Za-z']{0,30}){1,12}[ \t]{0,4}$")
MIN_PROSE_WORDS = 2  # "When the … errors occur": words around the quote that no log line has
MAX_LINE = 2000  # a paragraph's line; a longer line is a log's or garbage
REMOVED = "prose around quoted lines"
_TEMPLATE = lazy_compile(r"\bX{2,}\b|<[\w./:-]{1,30}>|\.\.\.|\u2026")
MAX_TEXT = 256 * 1024  # what unwrap reads block by block as prose (unwrap.MAX_BLOCKS_CHARS)


def _message(span: str) -> str:
    """The span without the dmesg time or the syslog ``kernel:`` it may carry."""
    text = _DMESG_TIME.sub("", span.strip(), count=1)
    return text.removeprefix("kernel: ").strip()


def quotes_a_line(span: str) -> bool:
    """Whether ``span`` is a kernel line of the storage path or an error line of any family; a
    template of one (``I/O tag XXX (XXX) QID XX timeout``, ``dev <disk>``, an elision) is what to
    look for, not what was seen."""
    message = _message(span)
    if len(message) < 6 or len(message.split()) < 2 or _TEMPLATE.search(message):
        return False
    return error_lines.kernel_family(message) is not None or error_lines.classify_cached(message) is not None


def _is_prose(line: str, spans: list[tuple[int, int]]) -> bool:
    outside, at = [], 0
    for start, end in spans:
        outside.append(line[at:start])
        at = end
    outside.append(line[at:])
    return len(_WORD.findall(" ".join(outside))) >= MIN_PROSE_WORDS


def quoted_line(line: str) -> str | None:
    """The storage-path line ``line`` quotes, or None (see the module). The spans are found first
    (string tests and one pattern): most lines quote nothing, and the checks that a line is prose
    and no log line of its own are paid only for those that do."""
    if len(line) > MAX_LINE:
        return None
    candidates: list[tuple[str, tuple[int, int]]] = []
    if '"' in line or "`" in line or "\u201c" in line:
        for m in _SPAN.finditer(line):
            span = next(group for group in m.groups() if group is not None)
            candidates.append((span, m.span()))
    lead = line[: line.find(": ")] if ": " in line else ""  # the first colon: the prose's
    if not candidates and lead[-1:].isalpha() and "[" not in lead:  # "dmesg shows: nvme nvme0: …"
        m = _AFTER_COLON.search(line)
        if m is not None and _LEAD.search(line[: m.start()]):
            candidates.append((line[m.end() :], (m.start(), len(line))))
    if not candidates or log_prefix(line) is not None or _RECORD.match(line):
        return None
    if error_lines.kernel_family(line, at_start=True) is not None:
        return None  # a kernel line itself (quoting a name or an option)
    quoted = [(span, where) for span, where in candidates if quotes_a_line(span)]
    if not quoted or not _is_prose(line, [where for _, where in quoted]):
        return None
    errors = [span for span, _ in quoted if error_lines.classify_cached(_message(span)) is not None]
    return (errors or [quoted[0][0]])[0].strip()


def unquote_lines(lines: list[str], removed: list[str]) -> tuple[list[str], set[int]]:
    """Each prose line replaced by the storage-path line it quotes (its place kept), and which
    lines were; a text larger than a person writes (``MAX_TEXT``: a captured log) is left as it is."""
    if sum(map(len, lines)) + len(lines) > MAX_TEXT:  # summed in C: a captured log is 100k lines
        return lines, set()
    out = list(lines)
    replaced: set[int] = set()
    for index, line in enumerate(lines):
        if '"' not in line and "`" not in line and "\u201c" not in line and ": " not in line:
            continue  # most lines quote nothing: one C test each
        quoted = quoted_line(line)
        if quoted is not None:
            out[index] = quoted
            replaced.add(index)
    if replaced:
        removed.append(REMOVED)
    return out, replaced
