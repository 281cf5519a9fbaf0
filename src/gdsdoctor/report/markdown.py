"""Markdown renderer for tickets and runbooks: the same outline as the terminal, written so that
a CommonMark renderer (GitHub, GitLab, markdown-it) keeps its structure.

Every heading, line (a paragraph) and list stands apart with a blank line before it, so a finding
or the status line is never swallowed into the bullet above it (lazy continuation); a finding's
title is a ``###`` heading; a command block is fenced inside the list item it belongs to
(indented to that item's content), so the list goes on after it; prose is escaped, commands
and evidence lines are code spans or fences that hold their text verbatim.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gdsdoctor.report.escape import markdown_code_block, markdown_code_span, markdown_inline, one_line
from gdsdoctor.report.outline import Block, Bullet, Commands, Heading, Line, Span, Title, outline

_EMPHASIS = {"critical": "**", "warning": "**", "ok": "**", "unknown": "**", "bold": "**", "dim": "_"}


def render_markdown(report: dict[str, Any], verbose: bool = False, quiet: bool = False) -> str:
    return render_markdown_blocks(outline(report, verbose, quiet))


def render_markdown_blocks(blocks: Iterable[Block]) -> str:
    """Draw outline blocks (a report's, or a fleet summary's) as Markdown."""
    lines: list[str] = []
    depth = 0  # how deep the list the previous block left open is nested (0: no list)
    for block in blocks:
        match block:
            case Heading(text=heading):
                _paragraph(lines, "## " + markdown_inline(heading))
                depth = 0
            case Title(spans=spans):
                _paragraph(lines, "### " + markdown_inline("".join(text for text, _ in spans)))
                depth = 0
            case Line(spans=spans):
                _paragraph(lines, _spans(spans))
                depth = 0
            case Bullet(spans=spans, indent=indent):
                if depth == 0:
                    _blank(lines)
                depth = min(indent, depth + 1)  # a nested list cannot skip a level
                lines.append("  " * (depth - 1) + "- " + _spans(spans))
            case Commands(lines=commands):
                if depth == 0:
                    _blank(lines)
                pad = "  " * depth  # the content column of the open list item: the fence is inside it
                fence = markdown_code_block(list(commands), "sh").split("\n")
                lines += [(pad + line).rstrip() for line in fence]
            case _:
                raise TypeError(f"unknown block {block!r}")
    return "\n".join(lines).strip("\n") + "\n"


def _blank(lines: list[str]) -> None:
    if lines and lines[-1]:
        lines.append("")


def _paragraph(lines: list[str], text: str) -> None:
    """A block of its own: a blank line before and after it."""
    _blank(lines)
    lines += [text, ""]


def _spans(spans: tuple[Span, ...]) -> str:
    """Styled spans as inline Markdown, keeping the spaces between them (outside the emphasis
    marks, which must touch their text) and a space where two marks would meet."""
    out = ""
    for content, style in spans:
        text = one_line(content)
        core = text.strip()
        if not core:
            out += " " if text and not out.endswith(" ") else ""
            continue
        lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]
        if style in ("code", "command"):
            part = markdown_code_span(core)
        else:
            mark = _EMPHASIS.get(style, "")
            part = f"{mark}{markdown_inline(core)}{mark}"
        if not lead and out and not out.endswith(" ") and _touching(out[-1], part[0]):
            lead = " "
        out += lead + part + trail
    return out.strip()


def _touching(before: str, first: str) -> bool:
    """Whether a part starting with ``first`` after ``before`` would not read as its own marks:
    two marks meeting (``**a**_b_``, ``x``y``) or an underscore inside a word (``a_b_``)."""
    return (before in "*_`" and first in "*_`") or (first == "_" and before.isalnum())
