"""Escaping shared by the renderers: nothing from the facts reaches a screen or document raw.

Facts come from the host and from strangers' bundles. Control characters (ANSI escape
sequences, carriage returns, NULs, C1 controls) and invisible format characters (bidi
overrides such as U+202E, zero-width characters) are shown as ``\\xNN`` / ``\\uNNNN`` instead of
being interpreted. The terminal renderer never parses Rich markup; Markdown escapes every
character that could start markup, so ``[text](url)``, ``<html>`` and ``|`` stay inert.
"""

from __future__ import annotations

import re

from gdsdoctor.engine.evaluate import UNSAFE_CHARACTERS
from gdsdoctor.patterns import lazy_compile

_SHOWN = lazy_compile(f"[{UNSAFE_CHARACTERS}]")


def _code(match: re.Match[str]) -> str:
    char = match[0]
    if char in "\n\t":
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: object) -> str:
    """The text with control and invisible characters shown as escapes (newlines and tabs kept)."""
    return _SHOWN.sub(_code, str(text))


def one_line(text: object) -> str:
    return visible(str(text).replace("\n", " ").replace("\t", " "))


# Characters that change meaning anywhere inline (emphasis, code, links, HTML, tables, entities).
_MARKDOWN_SPECIAL = lazy_compile(r"([\\`*_{}\[\]<>#|~!&])")
# What only matters at the start of a line: list markers, headings, setext underlines, "1." lists.
_MARKDOWN_LINE_START = lazy_compile(r"^(\s*)([-+=]|\d+[.)])")


def markdown_inline(text: object) -> str:
    """Text that Markdown shows literally: inline specials escaped everywhere, block markers
    escaped at the start (so readable prose such as ``0.1.0 (x)`` stays unescaped)."""
    escaped = _MARKDOWN_SPECIAL.sub(r"\\\1", one_line(text))
    return _MARKDOWN_LINE_START.sub(lambda m: m[1] + _escape_marker(m[2]), escaped, count=1)


def _escape_marker(marker: str) -> str:
    """``-`` → ``\\-``; ``1.`` → ``1\\.`` (the escape goes before the punctuation)."""
    return marker[:-1] + "\\" + marker[-1]


def markdown_code_block(lines: list[str], language: str = "") -> str:
    """A fenced block whose fence is longer than any run of backticks inside it."""
    body = "\n".join(visible(line) for line in lines)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{body}\n{fence}"


def markdown_code_span(text: object) -> str:
    """Inline code holding the text verbatim: delimited by a backtick run longer than any inside
    it, padded with a space when the text starts or ends with a backtick (CommonMark 6.1)."""
    body = one_line(text)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if body.startswith("`") or body.endswith("`") or (body.startswith(" ") and body.strip()) else ""
    return f"{fence}{pad}{body}{pad}{fence}"
