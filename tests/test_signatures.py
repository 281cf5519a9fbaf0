"""Every failure signature of the research notes leads to its candidate causes (issue 15).

The catalogue (tests/data/signatures/signatures.yaml) holds one real or faithfully quoted line
per signature of gds-matrix.md and net-pci-notes.md with its candidate causes, most likely
first; scripts/signature_coverage.py prints the same judgement as a table. Signatures marked
``gap`` say why they are not read yet, and the test fails when one of them starts being read
(remove the mark then).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "signature_coverage.py"
_spec = importlib.util.spec_from_file_location("signature_coverage", SCRIPT)
assert _spec and _spec.loader
coverage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(coverage)

ENTRIES = coverage.signatures()


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_signature_leads_to_its_causes(entry: dict) -> None:
    result = coverage.judge(entry)
    if entry.get("gap"):
        assert not result["covered"], f"{entry['id']} is read now: drop its gap mark"
        return
    assert result["covered"], f"no candidate of {entry['causes']} fired; found {result['fired']}"
    assert result["ranked"], f"first root cause {result['roots'][:1]} is not a candidate of {entry['causes']}"


def test_every_candidate_names_a_cause() -> None:
    from gdsdoctor.pipeline import rules

    ids = {cause.id for cause in rules()}
    unknown = {c for entry in ENTRIES for c in entry["causes"]} - ids
    assert not unknown


def test_catalogue_covers_both_notes() -> None:
    sources = " ".join(entry["source"] for entry in ENTRIES)
    assert "gds-matrix" in sources and "net-pci-notes" in sources
    assert all(entry["origin"] in ("real", "quoted") for entry in ENTRIES)
