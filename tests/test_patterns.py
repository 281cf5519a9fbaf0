"""Patterns compiled at first use: the same answers as re.compile, and nothing compiled early."""

from __future__ import annotations

import re
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from gdsdoctor.patterns import lazy_compile

PATTERN = r"^(?P<key>[a-z_]+)\s*=\s*(?P<value>\S*)"


def test_nothing_is_compiled_before_the_first_use() -> None:
    lazy = lazy_compile(PATTERN, re.M)
    assert lazy.pattern == PATTERN and lazy._compiled is None  # type: ignore[attr-defined]
    assert lazy.match("a = 1")["value"] == "1"
    assert lazy._compiled is re.compile(PATTERN, re.M)  # type: ignore[attr-defined]


def _span(match: re.Match[str] | None) -> tuple[int, int] | None:
    return match.span() if match else None


@given(st.text(alphabet="ab_= \n1x", max_size=40))
def test_every_method_answers_as_the_compiled_pattern(text: str) -> None:
    lazy, real = lazy_compile(PATTERN, re.M), re.compile(PATTERN, re.M)
    for method in ("match", "search", "fullmatch"):
        assert _span(getattr(lazy, method)(text)) == _span(getattr(real, method)(text)), method
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in real.finditer(text)]
    assert lazy.findall(text) == real.findall(text)
    assert lazy.sub("<\\g<key>>", text) == real.sub("<\\g<key>>", text)
    assert lazy.subn("", text) == real.subn("", text)
    assert lazy.split(text) == real.split(text)
    assert (lazy.flags, lazy.groups, lazy.groupindex) == (real.flags, real.groups, real.groupindex)


def test_importing_every_stage_compiles_few_patterns() -> None:
    """Start-up cost: the ~360 patterns of the probes are compiled when a parser uses them, not
    when a command starts (a fresh interpreter, counting what re compiles during the imports)."""
    code = (
        "import re, sys\n"
        "count = [0]; original = re._compile\n"
        "def counting(pattern, flags):\n"
        "    if not isinstance(pattern, re.Pattern): count[0] += 1\n"
        "    return original(pattern, flags)\n"
        "re._compile = counting\n"
        "import gdsdoctor.pipeline, gdsdoctor.facts.document, gdsdoctor.engine.evaluate, gdsdoctor.report.build\n"
        "print(count[0])\n"
    )
    compiled = int(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    )
    assert compiled < 60, (
        f"{compiled} regular expressions compiled at import (use gdsdoctor.patterns.lazy_compile)"
    )
