"""Every supported interpreter gives the same answers (issue 33): scripts/report_equality.py
analyses every fixture under each Python named and compares the JSON reports. ``.ci/run`` runs
it across the floor (3.10), Debian's /usr/bin/python3 and the newest Python; here it runs when
``GDSDOCTOR_PYTHONS`` names other interpreters (with gdsdoctor's dependencies, ``:``-separated)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import report_equality


def test_the_first_difference_is_named_by_its_json_path() -> None:
    left = {"summary": {"status": "OK"}, "findings": [{"id": "a"}, {"id": "b"}]}
    assert report_equality.first_difference(left, left) is None
    right = {"summary": {"status": "UNKNOWN"}, "findings": [{"id": "a"}, {"id": "b"}]}
    assert report_equality.first_difference(left, right) == ".summary.status: 'OK' / 'UNKNOWN'"
    right = {"summary": {"status": "OK"}, "findings": [{"id": "a"}]}
    assert report_equality.first_difference(left, right) == ".findings: 2 items / 1"
    assert report_equality.first_difference(left, {"summary": {}}) == ".findings: only in the first"


def test_a_fixture_report_is_the_json_document(tmp_path: Path) -> None:
    """The dump holds what ``--format json`` prints, by fixture name (one fixture: in-process)."""
    case = report_equality.FIXTURES / "app-gdsio-io-failed"
    found = report_equality.reports([case])
    assert list(found) == ["app-gdsio-io-failed"]
    assert found["app-gdsio-io-failed"]["summary"]["status"] in {"OK", "WARNING", "CRITICAL", "UNKNOWN"}


def test_an_interpreter_that_cannot_run_is_an_error() -> None:
    errors, differences = report_equality.compare(["/nonexistent/python3"])
    assert differences == []
    assert len(errors) == 1 and errors[0].startswith("/nonexistent/python3: ")


OTHERS = [p for p in os.environ.get("GDSDOCTOR_PYTHONS", "").split(os.pathsep) if p]


@pytest.mark.skipif(not OTHERS, reason="GDSDOCTOR_PYTHONS names no other interpreter (.ci/run compares them)")
def test_every_fixture_gives_the_same_report_under_each_interpreter() -> None:
    errors, differences = report_equality.compare([sys.executable, *OTHERS])
    assert not errors, errors
    assert not differences, "\n".join(differences)
