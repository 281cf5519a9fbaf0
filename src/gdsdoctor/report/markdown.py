"""Markdown renderer for tickets and runbooks: the same outline as the terminal, escaped for
Markdown (inline text escaped, commands in fences longer than any backtick run)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gdsdoctor.report.escape import markdown_code_block, markdown_inline, one_line
from gdsdoctor.report.outline import Block, Bullet, Commands, Heading, Line, Span, outline

_EMPHASIS = {"critical": "**", "warning": "**", "ok": "**", "unknown": "**", "bold": "**", "dim": "_"}


def render_markdown(report: dict[str, Any], verbose: bool = False) -> str:
    return render_markdown_blocks(outline(report, verbose))


def render_markdown_blocks(blocks: Iterable[Block]) -> str:
    """Draw outline blocks (a report's, or a fleet summary's) as Markdown."""
    return "\n".join(_markdown(block) for block in blocks) + "\n"


def _spans(spans: tuple[Span, ...]) -> str:
    parts = []
    for content, style in spans:
        if not content.strip():
            parts.append(" " if content else "")
            continue
        escaped = markdown_inline(content.strip())
        if style == "code":
            parts.append("`" + one_line(content.strip()).replace("`", "'") + "`")
        else:
            mark = _EMPHASIS.get(style, "")
            parts.append(f"{mark}{escaped}{mark}")
    return " ".join(p for p in parts if p.strip())


def _markdown(block: Block) -> str:
    match block:
        case Heading(text=heading):
            return f"\n## {markdown_inline(heading)}\n"
        case Line(spans=spans):
            return _spans(spans) + "\n"
        case Bullet(spans=spans, indent=indent):
            return "  " * (indent - 1) + "- " + _spans(spans)
        case Commands(lines=lines):
            return "\n" + markdown_code_block(list(lines), "sh") + "\n"
    raise TypeError(f"unknown block {block!r}")
