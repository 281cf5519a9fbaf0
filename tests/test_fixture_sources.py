"""Each fixture's SOURCES.md names the source of every input file it holds, and nothing else.

A sample without its source cannot be checked or refreshed; a row for a file that is gone
misleads whoever reads it. Fixtures without SOURCES.md describe their inputs in expect.yaml.
"""

import re
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ROW = re.compile(r"^\| `([^`]+)` \| (.+) \|$", re.MULTILINE)
WITH_SOURCES = sorted(path.parent for path in FIXTURES.glob("*/SOURCES.md"))


def _rows(fixture: Path) -> dict[str, str]:
    return dict(ROW.findall((fixture / "SOURCES.md").read_text(encoding="utf-8")))


@pytest.mark.parametrize("fixture", WITH_SOURCES, ids=lambda path: path.name)
def test_every_input_file_has_its_source(fixture: Path) -> None:
    rows = _rows(fixture)
    inputs = {str(path.relative_to(fixture)) for path in (fixture / "files").rglob("*") if path.is_file()}
    assert sorted(inputs - rows.keys()) == []
    assert sorted(name for name in rows if not (fixture / name).is_file()) == []


@pytest.mark.parametrize("fixture", WITH_SOURCES, ids=lambda path: path.name)
def test_a_source_is_not_the_fixture_description(fixture: Path) -> None:
    # A row that repeats expect.yaml's description names no source for its one file.
    sources = list(_rows(fixture).values())
    assert len(sources) < 2 or len(set(sources)) == len(sources)
