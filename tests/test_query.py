"""engine/query.py: filters looked up in an index give exactly JMESPath's results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jmespath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gdsdoctor.engine import functions
from gdsdoctor.engine.query import _INDEXED_FROM, FactQuery, requirements
from gdsdoctor.engine.rules import builtin_rules_dir, cause_expressions, lint_paths
from gdsdoctor.pipeline import KNOWN_SECTIONS


def plain(expression: str, facts: Any) -> Any:
    return jmespath.search(expression, facts, options=functions.OPTIONS)


KINDS = ["a", "b", "c"]
# Mostly the compared strings; also values where JMESPath's equality has corners: other strings,
# numbers, booleans, null, containers.
CORNERS = st.one_of(st.sampled_from(["", "A"]), st.integers(0, 2), st.booleans(), st.none(), st.just([]))
VALUES = st.one_of(st.sampled_from(KINDS), st.sampled_from(KINDS), CORNERS)
DETAILS = st.one_of(st.fixed_dictionaries({"sct": VALUES}), st.just({}), VALUES)  # or not an object
EVENTS = st.fixed_dictionaries(
    {"kind": VALUES, "device": VALUES, "current_boot": st.booleans(), "details": DETAILS}
)
ELEMENTS = st.one_of(
    EVENTS,
    EVENTS,
    st.fixed_dictionaries({"device": VALUES}),  # no kind at all
    st.sampled_from(["a", 1, None, ["a"]]),  # not an object: no field to read
)
CONDITIONS = [
    "kind=='a'",
    "'a'==kind",
    "kind=='a' || kind=='b'",
    "kind=='a' && current_boot",
    "(kind=='a' || kind=='b') && device=='b'",
    "kind=='a' && device=='c'",
    "kind=='a' || device=='b'",  # two fields: nothing required of either
    "!(kind=='a')",
    "kind!='a'",
    'kind==`"a"`',
    "kind==`1`",  # a number: not looked up
    "kind=='a' && kind=='b'",
    "(kind=='a' && current_boot) || (kind=='c' && device=='a')",
    "details.sct=='a'",  # a path of fields
    "details.sct=='a' && kind=='b'",
    "'b'==details.sct || details.sct=='c'",
]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(ELEMENTS, min_size=_INDEXED_FROM - 4, max_size=80),  # mostly past the threshold: indexed
    st.sampled_from(CONDITIONS),
    st.sampled_from(["", ".device", "[]"]),
)
def test_an_indexed_filter_equals_jmespaths(events: list[Any], condition: str, projection: str) -> None:
    facts = {"dmesg": {"events": events}}
    for expression in (f"dmesg.events[?{condition}]{projection}", f"length(dmesg.events[?{condition}])"):
        query = FactQuery(facts)
        assert query.search(expression) == plain(expression, facts), expression
        assert query.search(expression) == plain(expression, facts), "the second search reuses the index"


def test_every_builtin_expression_gives_jmespaths_result_on_real_logs() -> None:
    """All the rules' expressions, over the facts of the real kernel logs of tests/data (their
    events and judged storage events pooled, so the filters meet many kinds, past the threshold
    from which they are indexed)."""
    from gdsdoctor.pipeline import analyze_paths

    logs = sorted((Path(__file__).parent / "data" / "dmesg").glob("*.txt"))
    analyses = [analyze_paths([log]).facts for log in logs]
    facts = analyses[0]
    facts["dmesg"]["events"] = [e for a in analyses for e in a["dmesg"].get("events", [])]
    devices = facts["derived"]["devices"]
    devices["storage_events"] = [e for a in analyses for e in a["derived"]["devices"]["storage_events"]]
    kinds = {e["kind"] for e in facts["dmesg"]["events"]}
    assert len(kinds) >= 10 and len(devices["storage_events"]) >= _INDEXED_FROM  # the index is used
    causes, _ = lint_paths([builtin_rules_dir()], KNOWN_SECTIONS)
    query = FactQuery(facts)
    held = 0
    for expression in sorted({e for cause in causes for _, e in cause_expressions(cause)}):
        try:
            expected = plain(expression, facts)
        except jmespath.exceptions.JMESPathError:
            with pytest.raises(jmespath.exceptions.JMESPathError):
                query.search(expression)
            continue
        assert query.search(expression) == expected, expression
        held += bool(expected) and "events[?" in expression
    assert held >= 10  # filters that found something, not only empty lists on both sides


def test_the_condition_is_tested_only_on_the_elements_with_the_required_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tested: list[str] = []
    regex = functions.OPTIONS.custom_functions.FUNCTION_TABLE["regex"]  # type: ignore[union-attr]
    original = regex["function"]

    def counting(self: Any, subject: str | None, pattern: str) -> bool:
        tested.append(subject or "")
        return original(self, subject, pattern)

    monkeypatch.setitem(regex, "function", counting)
    events = [{"kind": "noise", "message": f"line {n}"} for n in range(1000)]
    events[10] = events[500] = {"kind": "nvme_reset", "message": "nvme1: resetting controller"}
    found = FactQuery({"events": events}).search("events[?kind=='nvme_reset' && regex(message, 'reset')]")
    assert found == [events[10], events[500]]
    assert len(tested) == 2  # not 1,000


def test_requirements_read_off_the_condition() -> None:
    def of(condition: str) -> list[tuple[tuple[str, ...], frozenset[str]]]:
        return requirements(jmespath.compile(f"x[?{condition}]").parsed["children"][2])

    assert of("kind=='a'") == [(("kind",), frozenset({"a"}))]
    assert of("kind=='a' || kind=='b'") == [(("kind",), frozenset({"a", "b"}))]
    assert of("kind=='a' && device=='d'") == [(("kind",), frozenset({"a"})), (("device",), frozenset({"d"}))]
    assert of("'x'==a.b.c") == [(("a", "b", "c"), frozenset({"x"}))]
    assert of("a[0]=='x'") == [] and of("a.b=='x' || a.c=='x'") == []
    assert of("kind=='a' || device=='d'") == []
    assert of("kind!='a'") == [] and of("!(kind=='a')") == [] and of("kind==`1`") == []
