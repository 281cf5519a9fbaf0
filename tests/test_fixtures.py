"""Every fixture (a node state) produces the findings it must, and not the ones it must not.

A fixture is ``fixtures/NAME/`` with ``files/`` (pasted outputs) or ``bundle/`` (a bundle
directory) and ``expect.yaml``: ``fires`` (ids that must be found), ``top`` (ids that must be
among the first three root causes), ``not_fires`` (ids that must not be found), optional
``status``, ``severities`` (``{id: severity}``: a fired cause's severity after its
``severity_at_most``), ``history`` (ids that must be in the report's History: fired by the whole log,
not by the node as it is now), ``path`` (the --path to analyse with), ``site`` (the site config's ``node:`` and
``status:``, as ``{node: {gds: required}}``), ``job`` (the --params/--budget/... options,
e.g. ``{params: 70B, budget: 2%}``) and ``unrecognised`` (file names that gdsdoctor is expected not
to recognise, such as free prose copied from a ticket: notes about them are tolerated, notes about
any other file fail the test).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from gdsdoctor.engine.functions import OPTIONS, compile_expression
from gdsdoctor.engine.query import FactQuery
from gdsdoctor.engine.rules import cause_expressions
from gdsdoctor.pipeline import analyze_paths, rules, symptom_table

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CASES = sorted(p.parent for p in FIXTURES.rglob("expect.yaml"))


def _inputs(case: Path) -> list[Path]:
    if (case / "bundle").is_dir():
        return [case / "bundle"]
    return sorted(p for p in (case / "files").iterdir() if p.is_file())


def _expect(case: Path) -> dict:
    return yaml.safe_load((case / "expect.yaml").read_text())


@pytest.mark.parametrize("case", CASES, ids=[str(c.relative_to(FIXTURES)) for c in CASES])
def test_fixture(case: Path) -> None:
    expect = _expect(case)
    analysis = analyze_paths(
        _inputs(case), expect.get("path"), job=expect.get("job"), site=expect.get("site")
    )
    found = [f["id"] for f in analysis.report["findings"]]
    roots = [f["id"] for f in analysis.report["findings"] if not f["explained_by"]]
    for cause in expect.get("fires", []):
        assert cause in found, f"{cause} did not fire; found {found}"
    for cause in expect.get("top", []):
        assert cause in roots[:3], f"{cause} not in the top three root causes {roots[:3]}"
    for cause in expect.get("not_fires", []):
        assert cause not in found, f"{cause} fired but must not"
    severity = {f["id"]: f["severity"] for f in analysis.report["findings"]}
    for cause, expected in (expect.get("severities") or {}).items():
        assert severity.get(cause) == expected, f"{cause}: {severity.get(cause)}, expected {expected}"
    inconclusive = [i["id"] for i in analysis.report["inconclusive"]]
    for cause in expect.get("inconclusive", []):  # its data missing: neither fired nor clear
        assert cause in inconclusive, f"{cause} is not inconclusive; inconclusive: {inconclusive}"
    past = [h["id"] for h in analysis.report["history"]]
    for cause in expect.get("history", []):
        assert cause in past and cause not in found, f"{cause} is not in history; history: {past}"
    if "status" in expect:
        assert analysis.report["summary"]["status"] == expect["status"]
    tolerated = tuple(expect.get("unrecognised", []))
    notes = [n for n in analysis.report["source"]["notes"] if not _about(n, tolerated)]
    assert not notes, notes
    _filters_agree_with_jmespath(analysis.facts)


@lru_cache(maxsize=1)
def _filter_expressions() -> list[str]:
    """Every expression of the rules and symptoms with a filter: what FactQuery evaluates
    through conditions compiled to closures (engine/compiled.py) and an index."""
    expressions = {e for cause in rules() for _, e in cause_expressions(cause)}
    for symptom in symptom_table():
        expressions |= {symptom.when, symptom.evidence or symptom.when}
        expressions |= {c.decided_when for c in symptom.candidates if c.decided_when}
    return sorted(e for e in expressions if "[?" in e)


def _outcome(run: Any, *args: Any) -> tuple[str, Any]:
    try:
        return ("value", run(*args))
    except Exception as error:  # both ways must fail alike
        return ("error", f"{type(error).__name__}: {error}")


def _filters_agree_with_jmespath(facts: dict[str, Any]) -> None:
    """Each expression gives jmespath's own result over the fixture's facts, and over the whole
    log's (the history pass's) where some events are history."""
    from gdsdoctor.facts import lifecycle
    from gdsdoctor.facts.derived import derive

    documents = [facts]
    if (facts.get("dmesg") or {}).get("history"):
        whole = lifecycle.with_history(facts)
        target_path, intent = (facts.get("target") or {}).get("path"), facts["derived"]["intent"]
        whole["derived"] = derive(whole, target_path, known_intent=intent)  # as the history pass does
        documents.append(whole)
    for document in documents:
        query = FactQuery(document)
        for expression in _filter_expressions():
            plain = _outcome(compile_expression(expression).search, document, OPTIONS)
            assert _outcome(query.search, expression) == plain, expression


def _about(note: str, names: tuple[str, ...]) -> bool:
    """A note about one of the named files (notes start with the file's path and a colon)."""
    path = note.split(": ", 1)[0]
    return any(path.endswith("/" + name) for name in names)


def test_every_cause_has_a_firing_and_a_near_miss_fixture() -> None:
    fires: set[str] = set()
    misses: set[str] = set()
    for case in CASES:
        expect = _expect(case)
        fires |= set(expect.get("fires", [])) | set(expect.get("top", []))
        misses |= set(expect.get("not_fires", []))
    ids = {cause.id for cause in rules()}
    assert sorted(ids - fires) == [], "causes without a fixture where they fire"
    assert sorted(ids - misses) == [], "causes without a near-miss fixture"
    assert sorted((fires | misses) - ids) == [], "fixtures name causes that do not exist"
