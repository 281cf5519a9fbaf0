"""Shared robustness checks for the block/NVMe parser tests: garbage and damaged real samples."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gdsdoctor.errors import ParseError
from gdsdoctor.probes.base import Parser

DATA = Path(__file__).resolve().parent.parent / "data"


def read(module: str, name: str) -> str:
    return (DATA / module / name).read_text()


def survives(parse: Parser, text: str) -> None:
    """The contract: a dict, or ParseError; nothing else, ever."""
    try:
        result = parse(text, "fuzz")
    except ParseError:
        return
    assert isinstance(result, dict)
    assert "status" not in result and "artifact" not in result


def check_garbage(parse: Parser) -> None:
    @settings(max_examples=80, deadline=None)
    @given(st.text())
    def run(text: str) -> None:
        survives(parse, text)

    run()


def check_damaged(parse: Parser, sample: str) -> None:
    """Truncated at any point, or with a line dropped: still a dict or a ParseError."""
    lines = sample.split("\n")

    # 60 cuts a sample: this runs once per real sample (two dozen of them), so the cuts over all
    # samples number well over a thousand per parser.
    @settings(max_examples=60, deadline=None)
    @given(st.integers(0, len(sample)), st.integers(0, max(0, len(lines) - 1)))
    def run(cut: int, drop: int) -> None:
        survives(parse, sample[:cut])
        survives(parse, "\n".join(lines[:drop] + lines[drop + 1 :]))

    run()
