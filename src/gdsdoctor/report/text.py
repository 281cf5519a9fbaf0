"""Terminal renderer (rich). Only ``Text`` objects are printed: no markup is ever parsed, and
control characters from the facts are made visible first."""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Iterable
from typing import Any

from rich.console import Console, RenderableType
from rich.padding import Padding
from rich.text import Text

from gdsdoctor.patterns import lazy_compile
from gdsdoctor.report.escape import visible
from gdsdoctor.report.outline import Block, Bullet, Commands, Heading, Line, Span, Title, outline

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


DEFAULT_WIDTH = 100  # output that goes to a file or a pipe, with no COLUMNS set
MIN_WIDTH = 30
# The style codes rich opens and closes text with (kept, as a group, by split).
_STYLE_CODE = lazy_compile(r"(\x1b\[[0-9;]*m)")


def terminal_width() -> int:
    """The width to wrap at: ``COLUMNS`` when set, else the terminal's, else 100 (a pipe)."""
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() else shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    return max(MIN_WIDTH, width) if width > 0 else DEFAULT_WIDTH


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
        renderable = _renderable(block)
        unwrapped = isinstance(renderable, Text) and bool(renderable.no_wrap)  # URLs, the status line
        console.print(renderable, soft_wrap=unwrapped)
    return "\n".join(_without_end_spaces(line) for line in buffer.getvalue().split("\n"))


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


def _renderable(block: Block) -> RenderableType:
    """Indented blocks are padded, so that wrapped lines keep their indentation."""
    match block:
        case Heading(text=heading):
            return Text("\n" + visible(heading), style="bold underline")
        case Title(spans=spans):
            return _spans(spans)
        case Line(spans=spans, whole=whole):
            line = _spans(spans)
            if whole:  # the status line: `| tail -1` must give all of it
                line.no_wrap, line.overflow = True, "ignore"
            return line
        case Bullet(spans=spans, indent=indent):
            if any(style == "link" for _, style in spans):
                # A URL broken over lines cannot be copied: one line, past the width if need be.
                line = Text("  " * indent) + _spans(spans)
                line.no_wrap, line.overflow = True, "ignore"
                return line
            return Padding(_spans(spans), (0, 0, 0, 2 * indent), expand=False)
        case Commands(lines=lines, indent=indent):
            commands = Text("\n".join(f"$ {visible(line)}" for line in lines), style="green")
            return Padding(commands, (0, 0, 0, 2 * indent), expand=False)
    raise TypeError(f"unknown block {block!r}")
