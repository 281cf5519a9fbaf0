"""What a pasted text wraps around command outputs, removed before recognition.

A ticket rarely holds a clean output: it holds a markdown fence around it, ``> `` quoting from a
mail reply, a shell prompt and the command before it, several commands one after the other,
indentation, CRLF, and kernel messages behind a remote-syslog or journal-export prefix. This
module turns such a text into its *parts*: one per command output, each unwrapped, with what
was removed (for the report) and the host identities the wrappers named (for the one-host check).

Order: quoting and fences first (they wrap everything), then the split on prompt lines, then per
part indentation, inline backticks, blank edges and log prefixes (an installer's: capture/installer.py).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace

from gdsdoctor import syslog_time
from gdsdoctor.capture import installer, quoted
from gdsdoctor.capture.rewrap import fullwidth_to_ascii, rejoin
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes import fs, lsblk

# `user@host:~$ cmd`, `[root@host dir]# cmd`, `root@host:/x# cmd`, `$ cmd`, `sh-5.1# cmd`, `PS1> cmd`
_USER_PROMPT = lazy_compile(
    r"^\s*(?:\$\s+)?(?:\(\S+\)\s+)?(?:\[(?P<user1>[\w.-]+)@(?P<host1>[\w.-]+)(?![\w.-])[^\]]*\]|(?P<user2>[\w.-]+)@(?P<host2>[\w.-]+)"
    r"(?::[^\s$#%]*)?)\s?[$#%]\s*(?P<cmd>.*)$"
)
_DOLLAR_PROMPT = lazy_compile(r"^\s*(?:[\w.-]*-\d[\d.]*)?\$\s+(?P<cmd>\S.*)$")
# `# cmd` is also a comment (grub, modprobe.d): a prompt only before a command we know.
_HASH_PROMPT = lazy_compile(r"^\s*#\s+(?:sudo\s+)?(?P<word>[\w./-]+)(?![\w./-])(?P<rest>.*)$")
KNOWN_COMMANDS = frozenset(
    "nvidia-smi lspci lsblk mount findmnt cat dmesg journalctl nvme ibstat ibstatus ibv_devinfo df uname "
    "gdscheck gdscheck.py lsmod modinfo numactl grep ls ofed_info dkms ulimit systemd-detect-virt udevadm "
    "mlnx_qos env fio gdsio gds_stats tail head zcat less more hostnamectl lscpu".split()
)
# ...and the commands a collector's section header may name besides them (never a `# cmd` prompt)
SECTION_COMMANDS = KNOWN_COMMANDS | frozenset(
    "smartctl show_gids ibdev2netdev rdma nfsstat mountstats lctl lfs blkid lsof sysctl".split()
)
# A collector script's section header: the command or file between bars ("=== uname -a ===", "---- cat
# /proc/mounts ----", "##### lsmod #####", tail's "==> /var/log/syslog <=="); what it names must be a
# command or a path (section_command: a markdown rule, a diff's "--- a/x", a tool's banner name neither)
_SECTION = lazy_compile(
    r"^[ \t]{0,8}(?:={3,20}|-{3,20}|#{3,20}|[*]{3,20}|[+]{3,20}|==>)(?P<rest>[^-=#+*\n][^\n]{0,299})$"
)
_BARS = "=-#*+"
_FLAG = lazy_compile(r"\s--?[A-Za-z]")  # a command's option ("ibv_devinfo -v", "nvme list -o json")
_FENCE = lazy_compile(r"^\s*(?:```+|~~~+)\s*(?:[\w+.-]+\s*)?$")
_INLINE_CODE = lazy_compile(r"^\s*`([^`]+)`\s*$")
_INLINE_SPAN = lazy_compile(r"`([^`\n]{3,400})`")
_HEADING = lazy_compile(r"^\s{0,3}#{1,6}\s")  # a markdown heading (prose: never an output)
_QUOTE = lazy_compile(r"^\s*>(?: |$)")
# What a wrapper's line holds, looked for in the whole text before its lines are (C tests: a text
# without them has no such wrapper; tests/test_unwrap_gates.py compares with the gates open)
_FENCE_MARKS = ("```", "~~~")  # a fence line holds one
_PROMPT_MARKS = ("$", "#", "%")  # every prompt form ends in one
# where a quoted line can be (``_quote_ends``: only blanks before its `>`), the first line or after a newline
_QUOTED_FIRST = lazy_compile(r"^[^\S\n]*>")
_QUOTED_LINE = lazy_compile(r"\n[^\S\n]*>")

# Kernel messages behind a remote-syslog prefix: time, then host / facility / level in any order,
# then the program. dmesg reads `TIME HOST kernel: msg`; anything else between is removed.
_TIME = (
    rf"(?:{syslog_time.STAMP}(?:\.\d+)?|{syslog_time.FULL_STAMP}|{syslog_time.UNIX_STAMP}"
    r"|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)"
)
_SYSLOG_PREFIX = lazy_compile(
    r"^(?:<\d{1,3}>\d?\s*)?(?P<ts>" + _TIME + r")\s+(?P<mid>(?:\S+\s+){1,5}?)"
    r"(?P<ident>[A-Za-z][\w.-]*)(?:\[\d+\])?(?::\s?| - - (?:-|\[[^\]]*\]) )(?P<msg>.*)$"
)
_UNTIMED_KERNEL = lazy_compile(r"^(?P<mid>(?:\S+\s+){2,4}?)kernel(?:\[\d+\])?:\s?(?P<msg>.*)$")
# ...whose words hold a clock: a stamp in a locale's month names that syslog_time does not know
# (`Απρ 20 19:55:29 host kernel:`): the line is left as it is, undated, its first word no host.
_CLOCK = lazy_compile(r"(?<![\d:])\d{1,2}:\d\d(?::\d\d)?(?![\d:])")
_FACILITY = lazy_compile(
    r"^(?:<\d{1,3}>|(?:kern|user|daemon|syslog|local\d)(?:[.:]\w+)?:?|(?:emerg|alert|crit|err|error|warning|warn"
    r"|notice|info|debug):?|\w+=\S*|-|\d+)$",
    re.IGNORECASE,
)
# journal export format (`journalctl -o export`): KEY=value lines, records split by blank lines
_EXPORT_FIELD = lazy_compile(r"^(?P<key>_{0,2}[A-Z][A-Z0-9_]*)=(?P<value>.*)$")
# `journalctl -o verbose`: the same fields, indented, under a header per record whose cursor
# holds the monotonic clock in hex microseconds (`m=1afcdb929`)
_VERBOSE_HEADER = lazy_compile(
    rf"^{syslog_time.FULL_STAMP} \[s=[0-9a-f]+;i=[0-9a-f]+;b=[0-9a-f]+;m=(?P<m>[0-9a-f]+);[^\]]*\]$"
)
# What names the host a text came from (journal fields, hostnamectl, a prompt's host).
_IDENTITY_FIELDS = {"_HOSTNAME": "hostname", "_BOOT_ID": "boot_id", "_MACHINE_ID": "machine_id"}
_JSON_IDENTITY = lazy_compile(r'"(?P<key>_HOSTNAME|_BOOT_ID|_MACHINE_ID)"\s*:\s*"(?P<value>[^"]{1,128})"')
# Unwrapping holds a paste's lines as a list (~100 bytes a line): pastes typed into tickets are far
# smaller; a larger input (a whole kern.log, 64 MiB of newlines) is read as it is, unwrapped.
MAX_UNWRAP_CHARS = 16 * 1024 * 1024
MAX_UNWRAP_LINES = 200_000
# Blocks of prose are read one by one only in a text a person wrote: a ticket, not a log.
MAX_BLOCKS_CHARS = 256 * 1024
MAX_BLOCKS = 400
_NOT_A_HOST = frozenset({"-", "localhost", "localhost.localdomain", "(none)", "host", "hostname"})


@dataclass
class Part:
    """One command's output from a paste, unwrapped."""

    text: str
    command: str = ""  # the command its prompt named ("" when none did)
    first_line: int = 1  # where it starts in the pasted text
    removed: list[str] = field(default_factory=list)  # wrappers removed, in words
    identity: dict[str, set[str]] = field(default_factory=dict)  # hostname/boot_id/machine_id -> values
    # (line number, line) of the prompt lines removed before it: a reader whose output never names
    # its subject (`ibstat mlx5_0 1` without its "CA:" line) may ask for them back (Probe.reads_prompts)
    prompts: list[tuple[int, str]] = field(default_factory=list)


def unwrap(text: str, inside_fences: bool = True) -> list[Part]:
    """The command outputs in ``text``, each without its wrappers; empty parts dropped. With
    ``inside_fences`` false, fence lines are blanked and the text around them kept (fences nested
    or unbalanced by hand hold the output between them, not inside)."""
    if len(text) > MAX_UNWRAP_CHARS or text.count("\n") > MAX_UNWRAP_LINES:
        return [Part(text)]  # a captured file, not a hand-made paste: read as it is, never held as lines
    ascii_text = fullwidth_to_ascii(text)
    removed: list[str] = ["full-width punctuation"] if ascii_text != text else []
    plain = ascii_text.replace("\r\n", "\n").replace("\r", "\n")
    lines = plain.split("\n")
    # a quoted line starts with `>` after its blanks: a text with none is quoted nowhere (a C search)
    quoting = bool(_QUOTED_FIRST.match(plain) or _QUOTED_LINE.search(plain))
    lines = _unquote(lines, removed) if quoting else lines
    # a fence line holds ``` or ~~~ (unquoting removes none): a text with neither has no fence (a C test)
    fences = any(mark in ascii_text for mark in _FENCE_MARKS)
    if not inside_fences and fences:
        lines = ["" if _FENCE.match(line) else line for line in lines]
    parts = []
    for start, block, fenced in _fenced_blocks(lines) if fences else [(1, lines, False)]:
        inner: list[str] = []  # a block quoted inside its fence (the prose around it is not)
        block = _unquote(block, inner) if quoting else block
        for part in _split_on_prompts(block, start):
            part.removed[:0] = [*removed, *(["markdown fence"] if fenced else []), *inner]
            kernel = _clean(part, quoting)
            # an installer's kernel lines apart from the rest, each to its own reader; an output's
            # header after other text starts that output's part
            for piece in split_apart(part, kernel):
                parts += [p for p in _split_on_headers(piece) if p.text.strip()]
    return parts


def _unquote(lines: list[str], removed: list[str]) -> list[str]:
    """``> `` quoting (a mail reply, a markdown quote), every level, when it quotes the paste: a
    level goes while at least 80% of the lines with text left are quoted at it. Each line's
    levels are found once (where each ends), and the levels to remove counted from them: a pass
    over every line per level cost 5 s for 300,000 levels. A line without ``>`` is quoted at
    no level, and a text with no quoted line is left as it is: most pastes, at a C test a line
    (a 100k-line log: 3 x ~100 ms of calls otherwise)."""
    ends = [_quote_ends(line) if ">" in line else _UNQUOTED for line in lines]
    if not any(ends):
        return lines
    depths = Counter(len(found) for found in ends)  # lines quoted exactly d levels deep
    # lines left with text once their quoting is gone (they count as filled at every deeper level)
    bare = Counter(
        len(found)
        for line, found in zip(lines, ends, strict=True)
        if line[found[-1] if found else 0 :].strip()
    )
    deepest = max(depths, default=0)
    quoted, unquoted_filled, level = sum(depths.values()) - depths[0], bare[0], 0
    while level < deepest and quoted and quoted >= 0.8 * (quoted + unquoted_filled):
        level += 1  # level `level` is removed; lines exactly that deep are unquoted below it
        quoted -= depths[level]
        unquoted_filled += bare[level]
    if not level:
        return lines
    removed.append("> quoting")
    return [
        line[found[min(level, len(found)) - 1] :] if found else line
        for line, found in zip(lines, ends, strict=True)
    ]


_UNQUOTED: list[int] = []  # the levels of a line without ">" (shared: never changed)


def _quote_ends(line: str) -> list[int]:
    r"""Where each ``> `` level of ``line`` ends (after its one space): what ``_QUOTE`` matches,
    level after level, found with ``str.find`` (the blanks before each ``>`` are looked at once:
    a pattern's ``\s*`` searched along a run of blanks went back over it from every start)."""
    ends, at = [], 0
    while (mark := line.find(">", at)) != -1 and (mark == at or line[at:mark].isspace()):
        after = line[mark + 1 : mark + 2]
        if after not in ("", " "):
            break
        at = mark + 1 + len(after)
        ends.append(at)
    return ends


def _fenced_blocks(lines: list[str]) -> list[tuple[int, list[str], bool]]:
    """The markdown code blocks (start line, lines, True) or, without fences, the whole text. Prose
    around fences is what the user wrote about the outputs, not an output."""
    fences = [i for i, line in enumerate(lines) if _FENCE.match(line)]
    if not fences:
        return [(1, lines, False)]
    blocks = []
    for opening, closing in zip(fences[0::2], [*fences[1::2], len(lines)], strict=False):
        blocks.append((opening + 2, lines[opening + 1 : closing], True))
    return blocks


def prompt_command(line: str) -> tuple[str, str] | None:
    """``(command, host)`` when ``line`` is a shell prompt (host "" when it names none)."""
    if m := _USER_PROMPT.match(line):
        return m["cmd"].strip(), (m["host1"] or m["host2"] or "")
    if m := _DOLLAR_PROMPT.match(line):
        return m["cmd"].strip(), ""
    if (m := _HASH_PROMPT.match(line)) and m["word"].rsplit("/", 1)[-1] in KNOWN_COMMANDS:
        return line.strip().lstrip("#").strip(), ""
    return None


def section_command(line: str) -> str | None:
    """The command or file a collector script's section header names, or None."""
    if "==" not in line and "--" not in line and "##" not in line and "**" not in line and "++" not in line:
        return None
    m = _SECTION.match(line)
    if not m:
        return None
    rest = m["rest"].strip().removesuffix(":").strip()
    name = rest.removesuffix("<==").rstrip(_BARS).strip()  # the closing bar, when there is one
    if not name or name[0] in _BARS + "<>":
        return None
    # what it names must be a command or a file: tools print their own banners between bars
    # (smartctl's "=== START OF SMART DATA SECTION ===", UCX's "==== backtrace (tid:N) ====")
    words = name.removeprefix("sudo ").split()
    first = words[0].rsplit("/", 1)[-1] if words else ""
    command = first in SECTION_COMMANDS or (len(words) > 1 and _FLAG.search(name) is not None)
    return name if command or name.startswith(("/", "~")) else None


# Where a section header can start (``_SECTION``'s bars after a line's blanks): the first line, or
# after a newline (a literal first, which the engine finds fast)
_SECTION_FIRST = lazy_compile(r"^[ \t]{0,8}(?:={3}|-{3}|#{3}|[*]{3}|[+]{3}|==>)")
_SECTION_START = lazy_compile(r"\n[ \t]{0,8}(?:={3}|-{3}|#{3}|[*]{3}|[+]{3}|==>)")


def _output_header(line: str) -> bool:
    """A line that starts an output of its own wherever it stands: df's and lsblk's column headers
    (an installer's log holding `df -h`, two outputs pasted one under the other without prompts)."""
    head = line.lstrip()[:10]
    if head.startswith("Filesystem"):
        return fs.is_df_header(line)
    return head.startswith("NAME") and lsblk.is_table_header(line)


def _split_on_headers(part: Part) -> list[Part]:
    """The part cut before each output header that follows other text (``_output_header``); the
    part itself when none does. Cut after the prefixes went, so an installer's log holding ``df -h``
    gives df its own part."""
    if "Filesystem" not in part.text and "NAME" not in part.text:  # one C scan: most parts hold neither
        return [part]
    lines = part.text.split("\n")
    cuts = [i for i, line in enumerate(lines) if i and _output_header(line)]
    cuts = [i for i in cuts if any(line.strip() for line in lines[:i])]
    if not cuts:
        return [part]
    pieces = []
    for begin, end in zip([0, *cuts], [*cuts, len(lines)], strict=True):
        text = "\n".join(lines[begin:end])
        prompts = part.prompts if begin == 0 else []
        pieces.append(
            replace(
                part, text=text, first_line=part.first_line + begin, removed=[*part.removed], prompts=prompts
            )
        )
    return pieces


def _sections_possible(text: str) -> bool:
    return bool(_SECTION_FIRST.match(text) or _SECTION_START.search(text))


def _split_on_prompts(lines: list[str], start: int) -> list[Part]:
    text = "\n".join(lines)
    # every prompt holds $, # or %, and every header starts with its bars: a block with neither is
    # one part, found by two C scans rather than a look at each line (a 100k-line log: ~70 ms)
    if not any(mark in text for mark in _PROMPT_MARKS) and not _sections_possible(text):
        return [Part(text, first_line=start)]
    parts: list[Part] = []
    current = Part("", first_line=start)
    body: list[str] = []
    for offset, line in enumerate(lines):
        # every prompt form ends in $, # or %: a line without one is output (a C test, not 3 patterns)
        prompt = prompt_command(line) if "$" in line or "#" in line or "%" in line else None
        section = section_command(line) if prompt is None else None
        if prompt is None and section is None:
            body.append(line)
            continue
        current.text = "\n".join(body)
        parts.append(current)
        command, host = prompt or (section or "", "")
        current = Part(
            "",
            command=command,
            first_line=start + offset + 1,
            removed=["shell prompt" if prompt else "section header"],
            prompts=[(start + offset, line)],
        )
        if host and host.lower() not in _NOT_A_HOST:
            current.identity.setdefault("hostname", set()).add(host)
        body = []
    current.text = "\n".join(body)
    parts.append(current)
    return parts


def _clean(part: Part, quoting: bool = True) -> set[int]:
    """The part without its wrappers; returns the lines to read apart from the rest (an
    installer log's kernel lines). ``quoting`` false: no line of the paste is quoted."""
    lines = part.text.split("\n")
    lines = _unquote(lines, part.removed) if quoting else lines  # quoted output behind an unquoted prompt
    while lines and not lines[0].strip():
        lines.pop(0)
        part.first_line += 1
    while lines and not lines[-1].strip():
        lines.pop()
    lines = _strip_inline_code(lines, part.removed)
    lines = _journal_export(lines, part)
    lines, joined = rejoin(lines)  # a mail's or a terminal's wrapping, before the prefixes go
    if joined:
        part.removed.append(f"wrapping ({joined} line{'s' if joined > 1 else ''} joined)")
    stripped = len(part.removed)
    lines = installer.strip(lines, part.removed)  # an installer's prefix, before the syslog one
    apart = installer.kernel_lines(lines) if len(part.removed) > stripped else set()
    lines = _log_prefixes(lines, part)
    lines, _ = quoted.unquote_lines(lines, part.removed)  # a kernel line quoted in a sentence
    _json_identity(lines, part)
    part.text = "\n".join(lines)
    return apart


def split_apart(part: Part, apart: set[int]) -> list[Part]:
    """The part as two, the ``apart`` lines (indices into its text) and the rest, each with the
    other's lines blank so that every line keeps its number; the part itself when either is empty."""
    if not apart:  # no line to set apart (most texts): the part as it is, without a look at its lines
        return [part]
    lines = part.text.split("\n")
    chosen = [line if index in apart else "" for index, line in enumerate(lines)]
    rest = ["" if index in apart else line for index, line in enumerate(lines)]
    if not any(line.strip() for line in chosen) or not any(line.strip() for line in rest):
        return [part]
    return [
        replace(part, text="\n".join(chosen), removed=[*part.removed], prompts=[*part.prompts]),
        replace(part, text="\n".join(rest), removed=[*part.removed], prompts=[*part.prompts]),
    ]


def dedented(part: Part) -> Part | None:
    """The part without a common indentation of two or more columns (a markdown code block, an
    indented quote), or None when it has none. Tried only when the part as pasted is not
    recognised: indentation is meaningful in some outputs (``lspci -vvv | grep ACSCtl`` lines are
    all indented), and one column is kept (``talosctl dmesg`` lines start with a space)."""
    if len(part.text) > MAX_UNWRAP_CHARS or part.text.count("\n") > MAX_UNWRAP_LINES:
        return None
    lines = part.text.split("\n")
    indents = [len(line) - len(line.lstrip(" \t")) for line in lines if line.strip()]
    cut = min(indents, default=0)
    if cut < 2:
        return None
    text = "\n".join(line[cut:] for line in lines)
    return Part(
        text,
        part.command,
        part.first_line,
        [*part.removed, "indentation"],
        part.identity,
        part.prompts,
    )


def text_blocks(text: str) -> list[Part]:
    """The text's blocks, split at blank lines and markdown headings, each a part at its own first
    line: what prose holds between its paragraphs (an output pasted without a fence under an issue
    form's heading). Empty when the text is one block, or too large to be prose around outputs."""
    if len(text) > MAX_BLOCKS_CHARS:
        return []
    blocks: list[Part] = []
    lines: list[str] = []
    start = 1
    for number, line in enumerate([*text.split("\n"), ""], start=1):
        if line.strip() and not _HEADING.match(line):
            if not lines:
                start = number
            lines.append(line)
        elif lines:
            blocks.append(Part("\n".join(lines), first_line=start))
            lines = []
    return blocks if 1 < len(blocks) <= MAX_BLOCKS else []


def inline_code(part: Part) -> Part | None:
    """Prose around `inline code` (an issue thread, a ticket): each line replaced by the code it
    quotes, lines without any left blank so that the facts cite the paste's own line numbers, or
    None when it quotes none. A line's code is its longest span of two words or more (a one-word
    span names a command or a module, it quotes nothing); a span that is a command we know is
    written as the prompt it was typed at (``$ mount -o nobarrier /dev/nvme0n1 /ckpt``), so that
    the readers of a terminal session see the command before its output. Tried only when the
    part as pasted is not recognised."""
    if len(part.text) > MAX_UNWRAP_CHARS or part.text.count("\n") > MAX_UNWRAP_LINES:
        return None
    out: list[str] = []
    for line in part.text.split("\n"):
        spans = [span.strip() for span in _INLINE_SPAN.findall(line) if len(span.split()) >= 2]
        out.append(_quoted(max(spans, key=len)) if spans else "")
    if not any(out):
        return None
    removed = [*part.removed, "prose around inline code"]
    return Part("\n".join(out), part.command, part.first_line, removed, part.identity, part.prompts)


def _quoted(span: str) -> str:
    words = span.split()
    command = words[1] if words[0] == "sudo" and len(words) > 1 else words[0]
    return f"$ {span}" if command.rsplit("/", 1)[-1] in KNOWN_COMMANDS else span


def _strip_inline_code(lines: list[str], removed: list[str]) -> list[str]:
    """Lines each wrapped in single backticks (``\\`nvme0n1 259:0 …\\```)."""
    first = next((line for line in lines if line.strip()), None)
    if first is None or not _INLINE_CODE.match(first):  # decided by the first line with text
        return lines
    filled = [line for line in lines if line.strip()]
    if not filled or not all(_INLINE_CODE.match(line) for line in filled):
        return lines
    removed.append("inline backticks")
    return [m[1] if (m := _INLINE_CODE.match(line)) else line for line in lines]


def _journal_export(lines: list[str], part: Part) -> list[str]:
    """``journalctl -o export`` (and ``-o verbose``) records as ``[seconds] message`` dmesg lines
    (kernel records only), each on the line of its MESSAGE field and the other fields' lines left
    blank, so that evidence cites the pasted file's own line; the text unchanged when it is not
    that format."""
    # 90% of the lines with text must be fields, and a field line holds "=": a C test a line
    # rules out most texts before a pattern is matched on every line
    filled = [line for line in lines if line.strip()]
    if sum("=" in line for line in filled) < 0.9 * len(filled):
        return lines
    fields = [
        _EXPORT_FIELD.match(line.strip()) or _VERBOSE_HEADER.match(line) for line in lines if line.strip()
    ]
    if not fields or sum(m is not None for m in fields) < 0.9 * len(fields):
        return lines
    if not any(m and m.groupdict().get("key") == "MESSAGE" for m in fields):
        return lines
    out = [""] * len(lines)
    record: dict[str, str] = {}
    message_at = 0
    for index, line in enumerate([*lines, ""]):
        if header := _VERBOSE_HEADER.match(line):  # a record begins: the one before it ends
            _place(out, message_at, record, part)
            record = {"__MONOTONIC_TIMESTAMP": str(int(header["m"], 16))}
        elif m := _EXPORT_FIELD.match(line.strip()):
            record[m["key"]] = m["value"]
            message_at = index if m["key"] == "MESSAGE" else message_at
        elif not line.strip():
            _place(out, message_at, record, part)
            record = {}
    part.removed.append("journal export fields")
    return out


def _place(out: list[str], index: int, record: dict[str, str], part: Part) -> None:
    """A record's dmesg line at the line of its MESSAGE field (nothing for an empty record)."""
    if record:
        line = _export_record_line(record, part)
        if line is not None:
            out[index] = line


def _export_record_line(record: dict[str, str], part: Part) -> str | None:
    _add_identity(part, record)
    kernel = record.get("_TRANSPORT") == "kernel" or record.get("SYSLOG_IDENTIFIER") == "kernel"
    if "MESSAGE" not in record or not kernel:
        return None
    monotonic = record.get("__MONOTONIC_TIMESTAMP", "")
    if monotonic.isdigit():
        return f"[{int(monotonic) / 1e6:12.6f}] {record['MESSAGE']}"
    return record["MESSAGE"]


def _add_identity(part: Part, record: dict[str, str]) -> None:
    for key, kind in _IDENTITY_FIELDS.items():
        value = record.get(key, "").strip()
        if value and value.lower() not in _NOT_A_HOST:
            part.identity.setdefault(kind, set()).add(value)


def _json_identity(lines: list[str], part: Part) -> None:
    """Identities in ``journalctl -o json`` records (read as they are by the dmesg reader)."""
    for line in lines[:20000]:
        if line.lstrip().startswith("{") and '"_' in line:
            _add_identity(part, {m["key"]: m["value"] for m in _JSON_IDENTITY.finditer(line)})


def _log_prefixes(lines: list[str], part: Part) -> list[str]:
    """Remote-syslog prefixes reduced to ``TIME HOST PROGRAM: message`` (what the dmesg reader
    reads) when most lines carry one; the host each names is an identity."""
    if not any(line.strip() for line in lines):
        return lines
    # both forms rewrite only the kernel's lines: a C test before a call for each line
    rewritten = [_syslog_line(line, part) if "kernel" in line else line for line in lines]
    if any(new != old for new, old in zip(rewritten, lines, strict=True)):
        part.removed.append("syslog prefixes")
    return rewritten


def _syslog_line(line: str, part: Part) -> str:
    if "kernel" not in line:  # both forms rewrite only the kernel's lines (ident "kernel")
        return line
    stripped = line.strip()
    if (m := _SYSLOG_PREFIX.match(stripped)) and m["ident"] == "kernel":
        host = _host_of(m["mid"].split())
        if host:
            part.identity.setdefault("hostname", set()).add(host)
        canonical = f"{m['ts']} {host or '-'} {m['ident']}: {m['msg']}"
        simple = len(m["mid"].split()) == 1 and not stripped.startswith("<")
        return line if simple and stripped.startswith(m["ts"]) and ": " in stripped else canonical
    if (
        (m := _UNTIMED_KERNEL.match(stripped))
        and not re.search(r"[\[\]<>]", m["mid"])
        and not _CLOCK.search(m["mid"])
    ):
        host = _host_of(m["mid"].split())
        if host:
            part.identity.setdefault("hostname", set()).add(host)
        return f"{host or '-'} kernel: {m['msg']}"
    return line


def _host_of(tokens: list[str]) -> str:
    """The host among the tokens between a syslog time and the program: the first that is not a
    facility, a level or a ``key=value`` field (``host=node1`` names it too)."""
    for token in tokens:
        key, sep, value = token.partition("=")
        if sep and key.lower() in ("host", "hostname", "source"):
            return value if value.lower() not in _NOT_A_HOST else ""
        if not _FACILITY.match(token):
            return token if token.lower() not in _NOT_A_HOST else ""
    return ""
