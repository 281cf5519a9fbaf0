"""Loose files as pasted into a ticket: recognise each by its content, never by its name."""

from __future__ import annotations

import os
import selectors
import stat
import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from gdsdoctor import DEFAULT_DEADLINE_S
from gdsdoctor.capture import compress, quoted
from gdsdoctor.capture.capture import Capture
from gdsdoctor.capture.merge import MERGERS, host_conflict
from gdsdoctor.capture.recognition import WHOLE_READING, explained_share, recognise_text
from gdsdoctor.capture.unwrap import Part, dedented, inline_code, split_apart, text_blocks, unwrap
from gdsdoctor.deadline import doing
from gdsdoctor.errors import UserError
from gdsdoctor.model import Artifact, ArtifactStatus, decode_text, is_blank
from gdsdoctor.probes import PROBES, lustre_path, path_stat, target
from gdsdoctor.probes.base import Probe

MAX_PASTE_BYTES = 64 * 1024 * 1024
FIFO_WAIT_S = 5.0  # silence after which a fifo (or <(command)) is given up
FIFO_WRITER_GRACE_S = 0.5  # how long a fifo with no writer yet may wait for one
RECOGNISABLE: tuple[Probe, ...] = (*PROBES, target.PROBE, path_stat.PROBE, *lustre_path.PROBES)


def recognise(text: str, probes: Sequence[Probe] = RECOGNISABLE) -> Probe | None:
    """The probe that reads ``text`` best (see ``capture.recognition``), without unwrapping it."""
    best = recognise_text(text, probes).best
    return best.probe if best else None


NOT_RECOGNISED = "not recognised — `gdsdoctor probes` lists what is read"


def capture_files(
    paths: Sequence[Path], deadline_s: float = DEFAULT_DEADLINE_S, shown: dict[Path, str] | None = None
) -> Capture:
    """Recognise each file and assign it to its section; unrecognised files become notes.
    Reading all of them stops at ``deadline_s`` (a fifo fed by a slow writer would otherwise
    keep it reading for as long as the writer trickles): a file still being read then, and
    the files after it, are notes, not input. ``shown``: what to call a file in the report
    (a file of a folder of pastes by its path in the folder) instead of its path."""
    capture = Capture(origin="files", label=", ".join(p.name for p in paths))
    ends_at = time.monotonic() + deadline_s
    reader = PasteReader(capture)
    for path in paths:
        where = (shown or {}).get(path, str(path))
        data, problem = read_pasted(path, ends_at, deadline_s)
        if problem:
            capture.notes.append(f"{where}: {problem}")
            continue
        doing(f"recognising {where}")
        reader.add(path.name, data, where)
    doing("merging the inputs")
    reader.finish()
    return capture


def capture_texts(named: Iterable[tuple[str, bytes]]) -> Capture:
    """``capture_files`` for texts held in memory: ``(name, bytes)`` pairs."""
    pairs = list(named)
    capture = Capture(origin="files", label=", ".join(name for name, _ in pairs))
    reader = PasteReader(capture)
    for name, data in pairs:
        reader.add(name, data, name)
    reader.finish()
    return capture


class PasteReader:
    """Pasted texts into one capture: each unwrapped into its command outputs (``unwrap``), each
    output recognised by the reader that explains it best, outputs of one kind merged where the
    kind allows it (``merge``), and every input checked to come from one host."""

    def __init__(self, capture: Capture, probes: Sequence[Probe] = RECOGNISABLE) -> None:
        self.capture = capture
        self.probes = probes
        self.identities: dict[str, dict[str, set[str]]] = {}

    def add(self, name: str, data: bytes, source: str) -> None:
        text = decode_text(data)
        readings = self._readings(text)
        several = len(readings) > 1
        for index, (part, (probe, ambiguity)) in enumerate(readings, 1):
            where = f"{source}: part {index}{_command_words(part)}" if several else source
            if probe is None:
                # one short line: the list of every format is `gdsdoctor probes`, not each note
                self.capture.notes.append(f"{where}: {NOT_RECOGNISED}")
                continue
            if several:  # one output of several in a paste: say which is which
                self.capture.notes.append(f"{where}: read as {probe.paste_hint}")
            if ambiguity:
                self.capture.notes.append(f"{where}: {ambiguity}")
            if part.identity:
                self.identities[where] = part.identity
            # Blank lines where the wrappers were: the facts cite the lines of the file as pasted.
            padded = _padded(part)
            if probe.reads_prompts:
                padded = _with_prompts(padded, part.prompts)
            label = f"{name}#{index}" if several else name
            self._assign(probe, label, where, data if padded == text else padded.encode())

    def _readings(self, text: str) -> Readings:
        """Each output in the text with its reader (None when no reader knows it)."""
        parts = unwrap(text)
        readings = _with_quoted_commands(text, [(part, self._recognised(part)) for part in parts])
        if any(probe for _, (probe, _) in readings):
            return self._kept(readings)
        if [p.text for p in parts] != [text]:  # something was unwrapped: try the text without it
            if "```" in text or "~~~" in text:
                readings = [(part, self._recognised(part)) for part in unwrap(text, inside_fences=False)]
            if any(probe for _, (probe, _) in readings):
                return self._kept(readings)
            # No output inside the wrappers is one we know: the text may be one as a whole (an
            # application log quoting commands, prose around a fenced snippet the log reader reads).
            whole = _with_quoted_lines(Part(text))[0]
            readings = [(whole, self._recognised(whole))]
            if readings[0][1][0] is not None:
                return readings
        # Nothing known, whole or unwrapped: outputs pasted bare between paragraphs (an issue
        # form's "Terminal output" section, no fence) are read block by block.
        blocks = [(block, self._block_reading(_with_quoted_lines(block)[0])) for block in text_blocks(text)]
        if any(probe for _, (probe, _) in blocks):
            return self._kept(blocks)
        # Last, the lines its prose quotes, alone: a sentence's one kernel line in a paragraph of prose.
        whole, quoted_at = _with_quoted_lines(Part(text))
        if quoted_at:
            alone = split_apart(whole, quoted_at)[0]
            reading = self._recognised(alone)
            if reading[0] is not None:
                return [(alone, reading)]
        return readings[:1]

    def _block_reading(self, block: Part) -> tuple[Probe | None, str]:
        """A paragraph's reader, kept only when what it parsed explains more than half of it:
        a sentence a lenient reader claims ("name: words", as a bare kernel message looks) is
        prose, and its reading cites none of it."""
        probe, ambiguity = self._recognised(block)
        if probe is None or explained_share(probe, block.text) <= WHOLE_READING:
            return None, ""
        return probe, ambiguity

    @staticmethod
    def _kept(readings: Readings) -> Readings:
        """Outputs of one reader put back together; text before the first prompt that no reader
        knows is what the user wrote about the outputs, dropped once something else is read."""
        if not any(probe for _, (probe, _) in readings):
            return readings[:1]
        return [r for r in _one_per_kind(readings) if r[1][0] is not None or r[0].command]

    def _recognised(self, part: Part) -> tuple[Probe | None, str]:
        """The reader of one part (tried without its common indentation when not recognised as
        pasted, then as the code its prose quotes inline; the part then becomes that; then, by the
        readers that read prompts, with its prompt lines: `ulimit -l` prints one bare number) and
        words naming an ambiguity."""
        recognition = recognise_text(part.text, self.probes)
        if recognition.best is None and (flat := dedented(part)) is not None:
            flat_recognition = recognise_text(flat.text, self.probes)
            if flat_recognition.best is not None:
                part.text, part.removed = flat.text, flat.removed
                recognition = flat_recognition
        if recognition.best is None and (quoted := inline_code(part)) is not None and _quotes_output(quoted):
            quoted_recognition = recognise_text(quoted.text, self.probes)
            if quoted_recognition.best is not None:
                part.text, part.removed = quoted.text, quoted.removed
                recognition = quoted_recognition
        if recognition.best is None and part.prompts:
            prompted = "\n".join([*(line for _, line in part.prompts), part.text])
            recognition = recognise_text(prompted, [p for p in self.probes if p.reads_prompts])
        best = recognition.best
        return (best.probe if best else None), recognition.ambiguity

    def _assign(self, probe: Probe, label: str, where: str, data: bytes) -> None:
        held = self.capture.assignments.get(probe.section)
        if held:
            self._second_of_kind(probe, held[0], label, where, data)
            return
        name = _unique_name(label, self.capture)
        self.capture.add(probe.section, Artifact(name, ArtifactStatus.OK, data, source=where))

    def _second_of_kind(self, probe: Probe, first_name: str, label: str, where: str, data: bytes) -> None:
        """Another output of a kind already given: merged into it where the kind allows it. The
        merged input is named after both (``dmesg.txt+kern.log``): its lines are the merged
        text's, so evidence never credits one file with another's line."""
        first = self.capture.artifacts[first_name]
        merger = MERGERS.get(probe.section)
        if merger is None and probe.combine is not None:  # read as one at the facts (each line its file)
            name = _unique_name(label, self.capture)
            self.capture.add(probe.section, Artifact(name, ArtifactStatus.OK, data, source=where))
            self.capture.notes.append(f"{where}: read with {first_name} as one ({probe.paste_hint})")
            return
        if merger is None:
            self.capture.notes.append(
                f"{where}: another {probe.paste_hint} ({first_name}) was given first; this one is ignored"
            )
            return
        merged, words = merger(first.text, decode_text(data))
        del self.capture.artifacts[first_name]
        name = _unique_name(f"{first_name}+{label}", self.capture)
        self.capture.artifacts[name] = replace(
            first, name=name, data=merged.encode(), source=f"{first.source} + {where}"
        )
        names = self.capture.assignments[probe.section]
        names[names.index(first_name)] = name
        self.capture.notes.append(f"{where}: merged with {first_name} into {name} ({words})")

    def finish(self) -> None:
        """Refuse inputs from more than one host (their facts would be read as one machine's)."""
        conflict = host_conflict(self.identities)
        if conflict:
            raise UserError(conflict)


Readings = list[tuple[Part, tuple[Probe | None, str]]]


def _with_quoted_lines(part: Part) -> tuple[Part, set[int]]:
    """The part with each prose line that quotes a kernel or tool line replaced by that line, and
    which lines were (capture/quoted.py; unwrap does it for the parts it makes, this for the texts
    read whole or block by block)."""
    removed: list[str] = []
    lines, replaced = quoted.unquote_lines(part.text.split("\n"), removed)
    if replaced:
        part.text = "\n".join(lines)
        part.removed += removed
    return part, replaced


def _padded(part: Part) -> str:
    return "\n" * (part.first_line - 1) + part.text


def _with_prompts(padded: str, prompts: list[tuple[int, str]]) -> str:
    """The prompt lines put back where they were (each on the blank line its removal left)."""
    if not prompts:
        return padded
    lines = padded.split("\n")
    for number, line in prompts:
        if 1 <= number <= len(lines) and not lines[number - 1].strip():
            lines[number - 1] = line
    return "\n".join(lines)


# The reader of a terminal session's commands and their errors: the one reader a quoted command
# line belongs to (the other readers of prompts want their own prompt only: `ulimit -l`, `cat hostid`).
_SESSION = "cli_errors"


def _quotes_output(quoted: Part) -> bool:
    """Quoted code that holds an output, not only commands (a request to run them is no output)."""
    return any(line and not line.startswith("$ ") for line in quoted.text.split("\n"))


def _with_quoted_commands(text: str, readings: Readings) -> Readings:
    """The commands that the prose around the outputs quotes inline ("the command `mount -t xfs
    -o nobarrier …` results in:" above a fenced error), given to the reader of a terminal session
    (``_SESSION``) when one of the outputs is one: a command's options are evidence of what
    failed. Only the command lines are added, in their places (``_one_per_kind`` puts the parts
    of one reader together); the outputs quoted inline are the fenced parts' or nobody's."""
    terminal = next((probe for _, (probe, _) in readings if probe and probe.section == _SESSION), None)
    quoted = inline_code(Part(text)) if terminal is not None else None
    if quoted is None:
        return readings
    commands = [line if line.startswith("$ ") else "" for line in quoted.text.split("\n")]
    if not any(commands):
        return readings
    quoted.text = "\n".join(commands)
    return [*readings, (quoted, (terminal, ""))]


def _one_per_kind(readings: Readings) -> Readings:
    """Parts of one file read by one reader, put back together in their places (two outputs of
    one command, each behind its prompt, are one input of that kind). Each reader's parts are
    merged once, each line laid at its own number: merging part by part rebuilt the text so far
    each time (8,000 prompts of one command: 8.5 s)."""
    kept: Readings = []
    groups: dict[int, list[Part]] = {}
    for part, reading in readings:
        if reading[0] is not None and id(reading[0]) in groups:
            groups[id(reading[0])].append(part)
            continue
        kept.append((part, reading))
        if reading[0] is not None:
            groups[id(reading[0])] = [part]
    for parts in groups.values():
        if len(parts) > 1:
            _merge(parts)
    return kept


def _merge(parts: list[Part]) -> None:
    """The later parts into the first, in place."""
    first = parts[0]
    lines: list[str] = []
    commands: list[str] = []
    removed: dict[str, None] = {}
    prompts: list[tuple[int, str]] = []
    for index, part in enumerate(parts):
        start = part.first_line - 1  # its lines' place in the file
        for number, line in enumerate(part.text.split("\n"), start):
            if index == 0 or line.strip():
                lines.extend([""] * (number + 1 - len(lines)))
                lines[number] = line
        commands.append(part.command)
        removed.update(dict.fromkeys(part.removed))
        prompts += part.prompts
        if index:
            for kind, values in part.identity.items():
                first.identity.setdefault(kind, set()).update(values)
    first.first_line = min(part.first_line for part in parts)  # a part may come before the first
    first.text = "\n".join(lines[first.first_line - 1 :])
    first.command = "; ".join(c for c in commands if c).strip("; ")
    first.removed = list(removed)
    first.prompts = prompts


def _command_words(part: Part) -> str:
    return f" (`{part.command[:80]}`)" if part.command else ""


class ReadDeadline(Exception):
    """The time for reading inputs ran out while reading this one."""


def read_head(path: Path, size: int) -> bytes:
    """The first ``size`` bytes of a regular file, decompressed when it is compressed (what a
    reader needs to tell a file's kind); b"" for anything else. Never blocks."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        data = os.read(fd, max(size, 1024 * 1024))
    except OSError:
        return b""
    finally:
        os.close(fd)
    return compress.head(data, size) if compress.kind_of(data) else data[:size]


def read_pasted(
    path: Path,
    ends_at: float | None = None,
    deadline_s: float = DEFAULT_DEADLINE_S,
    max_bytes: int | None = None,
) -> tuple[bytes, str]:
    """The file's bytes, or a one-line reason it was not read. Never blocks: a fifo is read only
    while a writer feeds it (``<(command)`` works), up to ``FIFO_WAIT_S`` of silence and never
    past ``ends_at`` (a monotonic time; the deadline of ``deadline_s`` seconds it stands for is
    named in the reason)."""
    ends_at = time.monotonic() + deadline_s if ends_at is None else ends_at
    max_bytes = MAX_PASTE_BYTES if max_bytes is None else max_bytes  # read now: tests lower the cap
    if time.monotonic() >= ends_at:
        return b"", f"not read: the {deadline_s:g} s deadline for reading inputs had passed"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return b"", "no such file"
    except PermissionError:
        return b"", "permission denied"
    except OSError as error:
        return b"", f"cannot read ({error.strerror or error})"
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            return b"", "is a directory (a bundle directory needs a manifest.json)"
        if stat.S_ISFIFO(info.st_mode):
            data = _read_pipe(fd, ends_at)
        elif not stat.S_ISREG(info.st_mode):
            return b"", "not a regular file (a device or socket); not read"
        elif info.st_size > max_bytes:
            return b"", _too_large(max_bytes)
        else:
            data = _read_at_most(fd, max_bytes + 1)
    except ReadDeadline:
        return b"", f"still being written at the {deadline_s:g} s deadline for reading inputs; not read"
    except OSError as error:  # EIO, EISDIR on odd filesystems, /proc/self/mem…
        return b"", f"cannot read ({error.strerror or error})"
    finally:
        os.close(fd)
    data, problem = _decompressed(data, max_bytes)
    if problem:
        return b"", problem
    data = _utf16_without_bom(data)
    return data, _problem(data, max_bytes)


def _decompressed(data: bytes, max_bytes: int) -> tuple[bytes, str]:
    """A gzip, bzip2, xz or zstd paste (``dmesg.txt.gz``) decompressed within the paste cap,
    counted as it decompresses; the name is not asked, the content says it."""
    kind = compress.kind_of(data)
    if not kind:
        return data, ""
    try:
        return compress.decompress(data, max_bytes), ""
    except compress.TooLarge:
        return b"", f"{kind} data that decompresses to more than {max_bytes // (1024 * 1024)} MiB; not read"
    except ValueError as error:
        return b"", f"{kind} data that cannot be decompressed ({error or 'corrupt'}); not read"


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks, size = [], 0
    while size < limit:
        chunk = os.read(fd, min(1024 * 1024, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _read_pipe(fd: int, ends_at: float) -> bytes:
    """A fifo's data while a writer feeds it. No writer at all reads as EOF at once: we then give
    one a moment to connect (``mkfifo p; cmd > p &``); a silent writer is given up after
    ``FIFO_WAIT_S``; one still writing at ``ends_at`` raises ReadDeadline (what it wrote so far
    may be a cut-off part: never analysed as if whole)."""
    chunks: list[bytes] = []
    size, waited_for_writer = 0, False
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while size <= MAX_PASTE_BYTES:
            try:
                chunk: bytes | None = os.read(fd, 1024 * 1024)
            except BlockingIOError:  # a writer, but nothing written yet
                chunk = None
            if chunk:
                chunks.append(chunk)
                size += len(chunk)
            elif chunk == b"" and (chunks or waited_for_writer):
                break  # EOF
            left = ends_at - time.monotonic()
            if left <= 0:
                raise ReadDeadline
            if chunk:
                continue
            waited_for_writer = waited_for_writer or chunk == b""
            wait = FIFO_WRITER_GRACE_S if chunk == b"" else FIFO_WAIT_S
            if not selector.select(timeout=min(wait, left)) and wait <= left:
                break
    return b"".join(chunks)


def _too_large(max_bytes: int | None = None) -> str:
    max_bytes = MAX_PASTE_BYTES if max_bytes is None else max_bytes
    return f"larger than {max_bytes // (1024 * 1024)} MiB; not read"


def _problem(data: bytes, max_bytes: int) -> str:
    if len(data) > max_bytes:
        return _too_large(max_bytes)
    if is_blank(data):
        return "empty"
    if b"\x00" in data[:4096] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "binary data, not a text output"
    return ""


def _utf16_without_bom(data: bytes) -> bytes:
    """UTF-16 text saved without a byte-order mark (some Windows tools), re-encoded as UTF-8;
    other data unchanged. Recognised by ASCII text with a NUL in every other byte."""
    sample = data[:4096]
    if len(sample) < 4 or b"\x00" not in sample or data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data
    for zeros, text, codec in (
        (sample[1::2], sample[0::2], "utf-16-le"),
        (sample[0::2], sample[1::2], "utf-16-be"),
    ):
        if zeros.count(0) >= 0.95 * len(zeros) and text.count(0) <= 0.05 * len(text):
            return data.decode(codec, errors="replace").encode("utf-8")
    return data


def _unique_name(name: str, capture: Capture) -> str:
    candidate, counter = name, 1
    while candidate in capture.artifacts:
        counter += 1
        candidate = f"{name}.{counter}"
    return candidate
