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
from gdsdoctor.textwidth import DEFAULT_WIDTH, MIN_WIDTH, PROSE_MAX, terminal_width

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
    for block in blocks:
        # Prose stops near 100 columns on a wide terminal; log lines and commands use the width.
        verbatim = isinstance(block, Commands) or _mostly_code(_spans_of(block))
        console.print(
            _renderable(block, console.width if verbatim else min(console.width, PROSE_MAX)), soft_wrap=True
        )
    return "\n".join(_without_end_spaces(line) for line in buffer.getvalue().split("\n"))


def _spans_of(block: Block) -> tuple[Span, ...]:
    return getattr(block, "spans", ())


def _mostly_code(spans: tuple[Span, ...]) -> bool:
    """A log line or a command quoted as evidence (most of its characters in code spans), not
    prose that names a command or a setting in passing (a Fix sentence quoting a cufile.json key)."""
    code = sum(len(text) for text, style in spans if style in ("code", "command"))
    return code * 2 > sum(len(text) for text, _ in spans)


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


def _wrapped(text: Text, width: int, indent: int = 0, hanging: int = 0) -> Text:
    """The text in lines of ``width`` columns broken between words only (a word longer than the
    line, a path or a URL, stands whole on its line: rich would cut it), each line indented by
    ``indent`` and the lines after the first by ``hanging`` more, styles kept."""
    out = Text()
    for number, line in enumerate(text.split(allow_blank=True)):
        offsets, used = [], 0
        room = max(width - indent - (hanging if number else 0), 10)
        for word in _WORD.finditer(line.plain):
            if used and used + len(word[0].rstrip()) > room:
                offsets.append(word.start())
                used, room = 0, max(width - indent - hanging, 10)
            used += len(word[0])
        for index, piece in enumerate(line.divide(offsets)):
            piece.rstrip()
            out.append("\n" if out.plain or number or index else "")
            out.append(" " * (indent + (hanging if index else 0)))
            out.append_text(piece)
    return out


def _renderable(block: Block, width: int) -> Text:
    """Each block as lines already wrapped at ``width`` and indented (printed as they are)."""
    match block:
        case Heading(text=heading):
            return Text("\n") + _wrapped(Text(visible(heading), style="bold underline"), width)
        case Title(spans=spans):
            return _wrapped(_spans(spans), width, 0, 2)
        case Line(spans=spans, whole=whole):
            # The status line whole: `| tail -1` must give all of it.
            return _spans(spans) if whole else _wrapped(_spans(spans), width)
        case Bullet(spans=spans, indent=indent):
            if any(style == "link" for _, style in spans):
                # A URL broken over lines cannot be copied: one line, past the width if need be.
                return Text("  " * indent) + _spans(spans)
            return _wrapped(_spans(spans), width, 2 * indent)
        case Commands(lines=lines, indent=indent):
            commands = Text("\n".join(f"$ {visible(line)}" for line in lines), style="green")
            return _wrapped(commands, width, 2 * indent, 2)
    raise TypeError(f"unknown block {block!r}")
