"""Terminal renderer (rich). Only ``Text`` objects are printed: no markup is ever parsed, and
control characters from the facts are made visible first."""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.text import Text

from gdsdoctor.patterns import lazy_compile
from gdsdoctor.report.escape import visible
from gdsdoctor.report.outline import Block, Bullet, Commands, Heading, Line, Span, Title, outline
from gdsdoctor.textwidth import (
    DEFAULT_WIDTH,
    MIN_WIDTH,
    PROSE_MAX,
    fold_command,
    terminal_width,
    width_was_asked,
)

__all__ = ["DEFAULT_WIDTH", "MIN_WIDTH", "render_blocks", "render_text", "terminal_width"]

STYLES = {
    "critical": "bold red",
    "warning": "bold yellow",
    "info": "cyan",
    "ok": "bold green",
    "unknown": "bold magenta",
    "bold": "bold",
    "dim": "dim",
    "link": "dim",
    "code": "",
    "command": "cyan",
    "": "",
}


# The style codes rich opens and closes text with (kept, as a group, by split).
_STYLE_CODE = lazy_compile(r"(\x1b\[[0-9;]*m)")


def render_text(
    report: dict[str, Any],
    color: bool = False,
    verbose: bool = False,
    width: int | None = None,
    quiet: bool = False,
) -> str:
    return render_blocks(outline(report, verbose, quiet), color, width)


def render_blocks(blocks: Iterable[Block], color: bool = False, width: int | None = None) -> str:
    """Draw outline blocks (a report's, or a fleet summary's) for the terminal, wrapped at
    ``width`` (the terminal's when None), with no spaces left at the end of wrapped lines."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        force_terminal=color,
        no_color=not color,
        width=width or terminal_width(),
        highlight=False,
        emoji=False,
        markup=False,
    )
    # The status line is whole on a pipe (`| tail -1` reads it), wrapped when a width was asked for.
    wrap_whole = width is not None or width_was_asked()
    for block in blocks:
        # Prose stops near 100 columns on a wide terminal; log lines and commands use the width.
        verbatim = isinstance(block, Commands) or _mostly_code(_spans_of(block))
        if isinstance(block, Line) and block.whole and wrap_whole:
            block = Line(block.spans)
        console.print(
            _renderable(block, console.width if verbatim else min(console.width, PROSE_MAX)), soft_wrap=True
        )
    return "\n".join(_without_end_spaces(line) for line in buffer.getvalue().split("\n"))


def _spans_of(block: Block) -> tuple[Span, ...]:
    return getattr(block, "spans", ())


def _mostly_code(spans: tuple[Span, ...]) -> bool:
    """A log line quoted as evidence (most of its characters in code spans): it uses the width. Prose
    that names commands, even mostly (a probe's "not in this capture; run `…`"), stops at the prose
    width, each command kept whole on a line (:func:`_whole_ranges`)."""
    code = sum(len(text) for text, style in spans if style == "code")
    return code * 2 > sum(len(text) for text, _ in spans)


def _whole_ranges(spans: tuple[Span, ...]) -> list[tuple[int, int]]:
    """Where the commands lie in the spans' text: a line never breaks inside one."""
    ranges, at = [], 0
    for text, style in spans:
        if style == "command":
            ranges.append((at, at + len(visible(text))))
        at += len(visible(text))
    return ranges


def _without_end_spaces(line: str) -> str:
    """A line without the spaces at its end, keeping the style codes among them (a reset must
    still reset). Walked in Python: a pattern for "spaces and codes up to the end" retried
    from every space of a long run (quadratic, see docs/security-patterns.md)."""
    if not line.endswith((" ", "m")):
        return line
    pieces = _STYLE_CODE.split(line)  # text, code, text, ..., text
    for index in range(len(pieces) - 1, -1, -2):
        kept = pieces[index].rstrip(" ")
        pieces[index] = kept
        if kept:
            break
    return "".join(pieces)


def _spans(spans: tuple[Span, ...]) -> Text:
    text = Text()
    for content, style in spans:
        text.append(visible(content), style=STYLES.get(style, ""))
    return text


_WORD = lazy_compile(r"\S+\s*")


def _wrapped(
    text: Text, width: int, indent: int = 0, hanging: int = 0, whole: list[tuple[int, int]] | None = None
) -> Text:
    """The text in lines of ``width`` columns broken between words only (a word longer than the
    line, a path or a URL, stands whole on its line: rich would cut it), each line indented by
    ``indent`` and the lines after the first by ``hanging`` more, styles kept. The ``whole``
    ranges of a one-line text (commands) are never broken: each is one word."""
    out = Text()
    for number, line in enumerate(text.split(allow_blank=True)):
        offsets, used = [], 0
        room = max(width - indent - (hanging if number else 0), 10)
        for start, word in _units(line.plain, whole if "\n" not in text.plain else None):
            if used and used + len(word.rstrip()) > room:
                offsets.append(start)
                used, room = 0, max(width - indent - hanging, 10)
            used += len(word)
        for index, piece in enumerate(line.divide(offsets)):
            piece.rstrip()
            out.append("\n" if out.plain or number or index else "")
            out.append(" " * (indent + (hanging if index else 0)))
            out.append_text(piece)
    return out


def _units(line: str, whole: list[tuple[int, int]] | None) -> list[tuple[int, str]]:
    """The line's words (start, text with its spaces), a word inside a ``whole`` range joined to
    the one before it."""
    units: list[tuple[int, str]] = []
    for word in _WORD.finditer(line):
        inside = any(low < word.start() < high for low, high in whole or ())
        if inside and units:
            units[-1] = (units[-1][0], units[-1][1] + word[0])
        else:
            units.append((word.start(), word[0]))
    return units


def _renderable(block: Block, width: int) -> Text:
    """Each block as lines already wrapped at ``width`` and indented (printed as they are)."""
    match block:
        case Heading(text=heading):
            return Text("\n") + _wrapped(Text(visible(heading), style="bold underline"), width)
        case Title(spans=spans):
            return _wrapped(_spans(spans), width, 0, 2)
        case Line(spans=spans, whole=whole):
            # The status line whole on a pipe: `| tail -1` must give all of it.
            return _spans(spans) if whole else _wrapped(_spans(spans), width, 0, 2)
        case Bullet(spans=spans, indent=indent):
            if any(style == "link" for _, style in spans):
                # A URL broken over lines cannot be copied: one line, past the width if need be.
                return Text("  " * indent) + _spans(spans)
            return _wrapped(_spans(spans), width, 2 * indent, 0, _whole_ranges(spans))
        case Commands(lines=lines, indent=indent):
            # Each command whole for copying: a long one on several lines a shell reads as one.
            margin = " " * (2 * indent)
            shown = [
                f"{margin}{'$ ' if number == 0 else '    '}{piece}"
                for line in lines
                for number, piece in enumerate(fold_command(visible(line), width - 2 * indent - 4))
            ]
            return Text("\n".join(shown), style="green")
    raise TypeError(f"unknown block {block!r}")
