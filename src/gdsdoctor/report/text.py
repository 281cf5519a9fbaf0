"""Terminal renderer (rich). Only ``Text`` objects are printed: no markup is ever parsed, and
control characters from the facts are made visible first."""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any

from rich.console import Console, RenderableType
from rich.padding import Padding
from rich.text import Text

from gdsdoctor.report.escape import visible
from gdsdoctor.report.outline import Block, Bullet, Commands, Heading, Line, Span, outline

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
    "": "",
}


def render_text(report: dict[str, Any], color: bool = False, verbose: bool = False, width: int = 100) -> str:
    return render_blocks(outline(report, verbose), color, width)


def render_blocks(blocks: Iterable[Block], color: bool = False, width: int = 100) -> str:
    """Draw outline blocks (a report's, or a fleet summary's) for the terminal."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        force_terminal=color,
        no_color=not color,
        width=width,
        highlight=False,
        emoji=False,
        markup=False,
    )
    for block in blocks:
        renderable = _renderable(block)
        unwrapped = isinstance(renderable, Text) and bool(renderable.no_wrap)  # long URLs stay whole
        console.print(renderable, soft_wrap=unwrapped)
    return buffer.getvalue()


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
        case Line(spans=spans):
            return _spans(spans)
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
