"""Loose files as pasted into a ticket: recognise each by its content, never by its name."""

from __future__ import annotations

import os
import selectors
import stat
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from gdsdoctor import DEFAULT_DEADLINE_S
from gdsdoctor.capture.capture import Capture
from gdsdoctor.model import Artifact, ArtifactStatus, decode_text
from gdsdoctor.probes import PROBES, target
from gdsdoctor.probes.base import Probe

MAX_PASTE_BYTES = 64 * 1024 * 1024
FIFO_WAIT_S = 5.0  # silence after which a fifo (or <(command)) is given up
FIFO_WRITER_GRACE_S = 0.5  # how long a fifo with no writer yet may wait for one
RECOGNISABLE: tuple[Probe, ...] = (*PROBES, target.PROBE)


def recognise(text: str, probes: Sequence[Probe] = RECOGNISABLE) -> Probe | None:
    """The first probe (in registry order) whose recogniser claims the text."""
    if not text.strip():
        return None
    for probe in probes:
        try:
            if probe.recognise is not None and probe.recognise(text):
                return probe
        except Exception:  # a recogniser bug must not stop the others
            continue
    return None


def expected_kinds(probes: Sequence[Probe] = RECOGNISABLE) -> str:
    return ", ".join(p.paste_hint for p in probes if p.recognise is not None and p.paste_hint)


def capture_files(paths: Sequence[Path], deadline_s: float = DEFAULT_DEADLINE_S) -> Capture:
    """Recognise each file and assign it to its section; unrecognised files become notes.
    Reading all of them stops at ``deadline_s`` (a fifo fed by a slow writer would otherwise
    keep it reading for as long as the writer trickles): a file still being read then, and
    the files after it, are notes, not input."""
    capture = Capture(origin="files", label=", ".join(p.name for p in paths))
    ends_at = time.monotonic() + deadline_s
    for path in paths:
        data, problem = read_pasted(path, ends_at, deadline_s)
        if problem:
            capture.notes.append(f"{path}: {problem}")
            continue
        assign_pasted(capture, str(path), path.name, data)
    return capture


def capture_texts(named: Iterable[tuple[str, bytes]]) -> Capture:
    """``capture_files`` for texts held in memory: ``(name, bytes)`` pairs."""
    pairs = list(named)
    capture = Capture(origin="files", label=", ".join(name for name, _ in pairs))
    for name, data in pairs:
        assign_pasted(capture, name, name, data)
    return capture


def assign_pasted(capture: Capture, source: str, name: str, data: bytes) -> None:
    """Recognise one pasted text by its content and assign it to its section; an unrecognised
    text, or a second one of a kind, becomes a note naming ``source``."""
    probe = recognise(decode_text(data))
    if probe is None:
        capture.notes.append(f"{source}: not recognised; expected one of: {expected_kinds()}")
        return
    if probe.section in capture.assignments:
        first = capture.assignments[probe.section][0]
        capture.notes.append(
            f"{source}: another {probe.paste_hint} ({first}) was given first; this one is ignored"
        )
        return
    unique = _unique_name(name, capture)
    capture.add(probe.section, Artifact(unique, ArtifactStatus.OK, data, source=source))


class ReadDeadline(Exception):
    """The time for reading inputs ran out while reading this one."""


def read_pasted(
    path: Path, ends_at: float | None = None, deadline_s: float = DEFAULT_DEADLINE_S
) -> tuple[bytes, str]:
    """The file's bytes, or a one-line reason it was not read. Never blocks: a fifo is read only
    while a writer feeds it (``<(command)`` works), up to ``FIFO_WAIT_S`` of silence and never
    past ``ends_at`` (a monotonic time; the deadline of ``deadline_s`` seconds it stands for is
    named in the reason)."""
    ends_at = time.monotonic() + deadline_s if ends_at is None else ends_at
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
        elif info.st_size > MAX_PASTE_BYTES:
            return b"", _too_large()
        else:
            data = _read_at_most(fd, MAX_PASTE_BYTES + 1)
    except ReadDeadline:
        return b"", f"still being written at the {deadline_s:g} s deadline for reading inputs; not read"
    except OSError as error:  # EIO, EISDIR on odd filesystems, /proc/self/mem…
        return b"", f"cannot read ({error.strerror or error})"
    finally:
        os.close(fd)
    data = _utf16_without_bom(data)
    return data, _problem(data)


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


def _too_large() -> str:
    return f"larger than {MAX_PASTE_BYTES // (1024 * 1024)} MiB; not read"


def _problem(data: bytes) -> str:
    if len(data) > MAX_PASTE_BYTES:
        return _too_large()
    if not data.strip():
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
