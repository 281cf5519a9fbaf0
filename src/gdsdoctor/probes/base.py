"""What a probe is: the sources it captures and the pure parser that turns them into facts.

A probe declares; the capture layer executes. Each probe owns one section of the facts
document (``facts[probe.section]``). Its ``sources`` are alternatives tried in order
(for example ``/proc/modules`` then ``lsmod``): the first one captured ``ok`` is parsed.

Parsers are pure functions ``parse(text, artifact) -> dict``: no I/O, no subprocess.
They raise :class:`ParseError` for text that is not what they expect; anything else they
return is merged into the section. Every item that came from a line of text carries a
provenance record made by :func:`src`, so a finding can show the exact line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import compress
from pathlib import Path
from typing import Any

Section = dict[str, Any]
Parser = Callable[[str, str], Section]
Recogniser = Callable[[str], bool]
# A reader captures something that is not one file or one command (a sysfs tree walk):
# it gets the host root and returns the artifact bytes (usually JSON).
Reader = Callable[[Path], bytes]


@dataclass(frozen=True, slots=True)
class Source:
    """One way to capture a probe's input: a command, a host file, or a reader."""

    artifact: str  # bundle-relative name, e.g. "proc/modules", "cmd/lsmod.txt"
    argv: tuple[str, ...] = ()  # command, run without a shell
    path: str = ""  # absolute host path, read under --host-root
    reader: Reader | None = None
    timeout: float = 10.0
    needs_root: bool = False  # full output only as root (the capture still runs as non-root)
    env: tuple[tuple[str, str], ...] = ()
    ok_exit_codes: tuple[int, ...] = (0,)  # e.g. systemd-detect-virt exits 1 when it prints "none"
    # The command a user runs to get it: when gdsdoctor does not capture it itself ("gdsdoctor
    # bench PATH"), or for a reader, the command showing what it reads ("ls /sys/class/infiniband").
    how: str = ""
    # The command pointed at another machine's root ("{root}" is replaced by --host-root), e.g.
    # ``lsblk --sysroot {root}``. Under a --host-root that is not this kernel's root, a command
    # without one is not run: it would report this host, not that one (capture/live.py).
    root_argv: tuple[str, ...] = ()
    # A reader of this process's own state (its environment, its ulimits), whatever the root:
    # not read for another machine's root either.
    this_process: bool = False
    # The reader runs ``how`` itself, after checks of its own (lfs only for a path on Lustre): the
    # command is then what the capture records as the source.
    runs_how: bool = False

    @property
    def describe(self) -> str:
        """What gdsdoctor itself runs or reads (the artifact's recorded source)."""
        if self.argv:
            return " ".join(self.argv)
        if self.runs_how and self.how:
            return self.how
        if self.path:
            return self.path
        return f"(reads {self.artifact})" if self.reader else self.how or f"(reads {self.artifact})"

    @property
    def command(self) -> str:
        """The shell command a user runs to see what this source captures ("" for a reader
        with no ``how``: its probe's paste hint says it); never a bundle-internal name."""
        if self.argv:
            return " ".join(self.argv)
        if self.path:
            return f"cat {self.path}"
        return self.how


@dataclass(frozen=True, slots=True)
class Probe:
    section: str  # key in the facts document
    title: str  # what it is, for `gdsdoctor probes` and "how to collect" hints
    sources: tuple[Source, ...]
    parse: Parser
    recognise: Recogniser | None = None  # True if a pasted text is this source's output
    paste_hint: str = ""  # what a user should paste, e.g. "output of `gdscheck -p`"
    targeted: bool = False  # captured only with --path
    # A pasted output gets back the shell prompt lines unwrapping removed (`$ ibstat mlx5_0 1`): they
    # name what an output that does not name it was run on. Its parser must ignore other prompts.
    reads_prompts: bool = False
    tags: tuple[str, ...] = ()
    # Sections of several outputs of this kind of one host, read as one (each item keeps its
    # own provenance): ``facts.section.section_from`` parses every one and combines them.
    combine: Callable[[Sequence[Section]], Section] | None = None

    def how_to_collect(self) -> str:
        """What to do to get this section, as an imperative ("run `…`", "paste …"): it
        completes "To check them: " and "not in this capture; "."""
        commands = [f"`{s.command}`" for s in self.sources if s.command]
        if not commands:
            hint = self.paste_hint or "its output"
            return f"paste the output of {hint}" if hint.startswith("`") else f"paste {hint}"
        root = any(s.needs_root for s in self.sources)
        return "run " + " or ".join(commands) + (" as root" if root else "")


def src(artifact: str, line: int, text: str) -> dict[str, Any]:
    """Provenance of one item: the artifact, the 1-based line number and the raw line."""
    return {"artifact": artifact, "line": line, "text": text.rstrip("\n")[:500]}


def head_lines(text: str, count: int) -> list[str]:
    """The first ``count`` lines of ``text``: ``text.split("\n")[:count]``, without splitting
    (or copying) the rest. Every recogniser reads a paste's head, and each split the whole text
    to do it: ~16 ms of a 100k-line paste each, 0.8 s for the ~55 of them (docs/performance.md)."""
    end = -1
    for _ in range(count):
        end = text.find("\n", end + 1)
        if end == -1:  # fewer lines than that: all of them
            return text.split("\n")[:count]
    return text[:end].split("\n") if count > 0 else []


_LINES_CHUNK = 1 << 20  # characters split at a time: a text of newlines must not become a list


class NumberedLines:
    """The lines of a text with 1-based numbers, the way provenance counts them: what
    ``enumerate(text.split("\n"), start=1)`` gives, without ever holding that list. Each pass
    splits about a MiB at a time, so memory stays bounded by the text's bytes however many
    lines it has (a list costs ~100 bytes a line: 20M newlines took 2.3 GB). Iterable any
    number of times."""

    __slots__ = ("chunk", "text")

    def __init__(self, text: str, chunk: int = _LINES_CHUNK) -> None:
        self.text = text
        self.chunk = max(1, chunk)

    def __iter__(self) -> Iterator[tuple[int, str]]:
        text, number, start = self.text, 1, 0
        while True:
            cut = text.find("\n", start + self.chunk)
            lines = text[start : cut if cut != -1 else len(text)].split("\n")
            yield from enumerate(lines, number)
            number += len(lines)
            if cut == -1:
                return
            start = cut + 1

    def nonempty(self) -> Iterator[tuple[int, str]]:
        """The same, without the empty lines, passed over in C (``compress``): 40M newlines
        cost a Python step each, 48 s of a kernel log that says nothing."""
        text, number, start = self.text, 1, 0
        while True:
            cut = text.find("\n", start + self.chunk)
            lines = text[start : cut if cut != -1 else len(text)].split("\n")
            yield from compress(enumerate(lines, number), lines)
            number += len(lines)
            if cut == -1:
                return
            start = cut + 1


def numbered_lines(text: str) -> NumberedLines:
    """Lines with 1-based numbers, the way provenance counts them (streamed: ``NumberedLines``)."""
    return NumberedLines(text)
