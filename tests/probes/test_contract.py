"""The contract every probe keeps, checked over the whole registry rather than once per probe:
on any text, ``parse`` returns a section (a dict) or raises ParseError, nothing else, and
``recognise`` answers without raising. Texts are arbitrary, or lines of the real samples under
tests/data shuffled together (which reach deeper into the parsers than random characters)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gdsdoctor.errors import ParseError
from gdsdoctor.probes import ANALYSED_PROBES
from gdsdoctor.probes.base import Probe

DATA = Path(__file__).resolve().parent.parent / "data"
SAMPLE_LINES = sorted(
    {
        line[:300]
        for path in DATA.rglob("*")
        if path.is_file() and path.suffix not in (".xz", ".gz", ".xsd") and path.name != "SOURCES.md"
        for line in path.read_text(errors="replace").splitlines()[:400]
    }
)
TEXTS = st.one_of(
    st.text(),
    st.lists(st.sampled_from(SAMPLE_LINES), max_size=40).map("\n".join),
    st.lists(st.one_of(st.sampled_from(SAMPLE_LINES), st.text(max_size=20)), max_size=20).map("\n".join),
)
RECOGNISING = [probe for probe in ANALYSED_PROBES if probe.recognise is not None]


def test_the_registry_and_the_samples_are_what_the_contract_runs_over() -> None:
    assert len(ANALYSED_PROBES) > 30 and len(RECOGNISING) > 20
    assert len(SAMPLE_LINES) > 2000


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(ANALYSED_PROBES), TEXTS)
def test_parse_returns_a_section_or_raises_parse_error(probe: Probe, text: str) -> None:
    try:
        section = probe.parse(text, "contract")
    except ParseError:
        return
    assert isinstance(section, dict), probe.section


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(RECOGNISING), TEXTS)
def test_recognise_never_raises(probe: Probe, text: str) -> None:
    assert probe.recognise is not None
    assert probe.recognise(text) in (True, False), probe.section
