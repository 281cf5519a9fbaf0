"""Escaping shared by the renderers: nothing from the facts reaches a screen or document raw.

Facts come from the host and from strangers' bundles. Control characters (ANSI escape
sequences, carriage returns, NULs) are made visible instead of being interpreted.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: object) -> str:
    """The text with control characters shown as ``\\xNN`` (newlines and tabs kept)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", str(text))


def one_line(text: object) -> str:
    return visible(str(text).replace("\n", " ").replace("\t", " "))


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+\-.!|~])")


def markdown_inline(text: object) -> str:
    return _MARKDOWN_SPECIAL.sub(r"\\\1", one_line(text))


def markdown_code_block(lines: list[str], language: str = "") -> str:
    """A fenced block whose fence is longer than any run of backticks inside it."""
    body = "\n".join(visible(line) for line in lines)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{body}\n{fence}"
