"""Regular expressions compiled when first used.

The probes know ~360 patterns, one family per format they read; a given host has only some of
those formats (a check on a node without nvidia-fs or gdscheck used 58). Compiling every
pattern at import would be paid by every run (measured: docs/performance.md).
"""

from __future__ import annotations

import re
from typing import Any, cast


class _FromCompiled:
    """An attribute of the compiled pattern, fetched at the first access and then kept in the
    instance's ``__dict__``, which shadows this (non-data) descriptor: ``pattern.match`` in a
    loop over 100k lines costs what it costs on an ``re.Pattern``."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: _LazyPattern | None, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = getattr(instance.compiled, self.name)
        instance.__dict__[self.name] = value
        return value


class _LazyPattern:
    """Stands in for ``re.Pattern`` (every method and attribute below), compiled at the first
    use; ``pattern`` is there without compiling. Not an instance of ``re.Pattern``: pass
    ``.compiled`` where one is required (``re.sub(p, ...)``)."""

    match = _FromCompiled()
    search = _FromCompiled()
    fullmatch = _FromCompiled()
    findall = _FromCompiled()
    finditer = _FromCompiled()
    sub = _FromCompiled()
    subn = _FromCompiled()
    split = _FromCompiled()
    flags = _FromCompiled()
    groups = _FromCompiled()
    groupindex = _FromCompiled()

    def __init__(self, pattern: str, flags: int) -> None:
        self.pattern = pattern
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self._flags)
        return self._compiled

    def __repr__(self) -> str:
        return f"lazy_compile({self.pattern!r}, {self._flags!r})"


def lazy_compile(pattern: str, flags: int | re.RegexFlag = 0) -> re.Pattern[str]:
    """``re.compile`` deferred to the first use (typed as the pattern it stands in for)."""
    return cast("re.Pattern[str]", _LazyPattern(pattern, int(flags)))


# --- what the engine choice forbids (docs/security-patterns.md) -------------------------------

_COUNTED = lazy_compile(r"\{\d*(?:,\d*)?\}")  # {m}, {m,}, {,n}, {m,n}: a quantifier; any other { is a literal


def forbidden_constructs(pattern: str) -> list[str]:
    """The possessive quantifiers (``*+ ++ ?+ {m,n}+``) and atomic groups (``(?>``) of a pattern,
    as written. Python 3.10 refuses them and 3.11.0-3.11.4 (Debian 12's 3.11.2) match them wrongly
    without an error, so neither gdsdoctor's patterns nor a site rule's ``regex()`` may use them
    (the regex audit test and `rules lint`); read from the text, not from re's parser, so that the
    answer is the same on every version (docs/security-patterns.md)."""
    found = []
    index = 0
    in_class = False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if in_class:
            in_class = char != "]"
            index += 1
            continue
        if char == "[":
            in_class = True
            index += 1
            index += pattern.startswith("^", index)
            index += pattern.startswith("]", index)  # []...] and [^]...]: ] first is a member
            continue
        if pattern.startswith("(?>", index):
            found.append(f"atomic group at {index}")
        quantifier = _COUNTED.match(pattern, index)
        end = quantifier.end() if quantifier else index + 1
        is_quantifier = quantifier or char in "*+" or (char == "?" and pattern[index - 1 : index] != "(")
        if is_quantifier and pattern.startswith("+", end):
            found.append(f"possessive {pattern[index:end]}+ at {index}")
            end += 1
        index = end
    return found
