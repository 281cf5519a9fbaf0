"""engine/compiled.py: a syntax tree compiled to closures gives what jmespath's TreeInterpreter
gives, value or error, on documents full of JMESPath's corners (0 and 1 beside false and true,
empty containers, null, strings beside numbers, fields missing, objects that are not objects).
The rules' own expressions are compared over every fixture's facts in tests/test_fixtures.py."""

from __future__ import annotations

from typing import Any

import jmespath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jmespath.visitor import TreeInterpreter

from gdsdoctor.engine import functions, query
from gdsdoctor.engine.compiled import compile_node, is_false


def outcome(run: Any) -> tuple[str, Any]:
    """A value, or the error's type and message: both ways must fail alike."""
    try:
        return ("value", run())
    except Exception as error:
        return ("error", f"{type(error).__name__}: {error}")


def both_ways(expression: str, document: Any) -> tuple[tuple[str, Any], tuple[str, Any]]:
    tree = functions.compile_expression(expression).parsed
    interpreted = outcome(lambda: TreeInterpreter(functions.OPTIONS).visit(tree, document))
    return outcome(lambda: compile_node(tree)(document)), interpreted


SCALARS = st.one_of(
    st.sampled_from(["a", "b", "", "A", "nvme0", "Remounting filesystem read-only", "0x3", "1.2.10"]),
    st.integers(-1, 2),
    st.sampled_from([0.0, 1.0, 2.5]),
    st.booleans(),
    st.none(),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["kind", "device", "details", "message", "n"]), inner, max_size=4),
    ),
    max_leaves=12,
)
EXPRESSIONS = [
    # fields, paths, indexes, slices, flattening, projections of every kind
    "kind",
    "details.n",
    "details.n.kind",
    "@",
    "items[0]",
    "items[-1].kind",
    "items[1:3]",
    "items[::-1]",
    "items[]",
    "items[][]",
    "items[*].kind",
    "details.*",
    "details.*.kind",
    "items[].details.n",
    "items | [0]",
    "items[*].kind | length(@)",
    "[kind, device]",
    "{k: kind, d: device}",
    "items[*].[kind, n]",
    # comparators: equality with jmespath's 0/1 against false/true, orderings on numbers and strings
    "kind == 'a'",
    "'a' == kind",
    "kind != 'a'",
    "n == `1`",
    "n == `true`",
    "n == `false`",
    "n != `0`",
    "kind == device",
    "n > `0`",
    "n <= `1`",
    "kind < 'b'",
    "n >= kind",
    "n < `null`",
    # truth: && || ! over every kind of value
    "kind && device",
    "kind || device",
    "!kind",
    "!n",
    "!details",
    "!(kind == 'a')",
    "kind == 'a' && (device || `false`)",
    # filters, nested, projected, over anything
    "items[?kind == 'a']",
    "items[?kind == 'a' || kind == 'b'].device",
    "items[?n]",
    "items[?!n]",
    "items[?n > `0`].n",
    "items[?details.kind == 'a' && n != `1`]",
    "items[?details[?kind == 'b']]",
    "items[?contains(['a', 'b'], kind)]",
    "items[?regex(message, 'read-only')]",
    "items[?regex(kind || '', '(?i)^a')]",
    "items[?starts_with(device, 'nvme')].device",
    "length(items[?kind == 'a']) > `0`",
    "items[?kind == 'a'] && !(items[?kind == 'b'])",
    # the registry's functions: right types, wrong types (the same error), arity, unknown
    "regex(kind, 'a')",
    "regex(message, 'read-only')",
    "regex(`1`, 'a')",
    "lower(kind)",
    "version_cmp(kind, '1.2.9')",
    "any_true(items)",
    "unique(items)",
    "contains(kind, 'a')",
    "contains(items, `1`)",
    "length(kind)",
    "join(', ', items)",
    "max(items)",
    "sort_by(items, &n)",
    "not_null(kind, device, `1`)",
    "keys(details)",
    "to_string(n)",
    "abs(n)",
    "type(details)",
    "nonexistent(kind)",
    "lower(kind, device)",
]


@settings(max_examples=150, deadline=None)
@given(
    st.fixed_dictionaries(
        {"kind": VALUES, "device": VALUES, "n": VALUES, "message": VALUES, "details": VALUES},
        optional={"items": st.lists(VALUES, max_size=6)},
    ),
)
def test_a_compiled_expression_gives_the_interpreters_value_or_error(document: dict[str, Any]) -> None:
    for expression in EXPRESSIONS:
        compiled, interpreted = both_ways(expression, document)
        assert compiled == interpreted, expression


@pytest.mark.parametrize("document", [None, "a", 1, [], {}, [1, {"kind": "a"}], {"items": "not a list"}])
def test_every_expression_over_documents_that_are_not_objects(document: Any) -> None:
    for expression in EXPRESSIONS:
        compiled, interpreted = both_ways(expression, document)
        assert compiled == interpreted, expression


def test_falsehood_is_jmespaths() -> None:
    interpreter = TreeInterpreter()
    for value in ["", "a", [], [0], {}, {"a": 1}, None, False, True, 0, 0.0, 1, -1]:
        assert is_false(value) == interpreter._is_false(value), value


def test_a_function_replaced_in_the_registry_is_the_one_called(monkeypatch: pytest.MonkeyPatch) -> None:
    """A compiled call looks the function up when it runs, not when it was compiled."""
    document = {"items": [{"message": "x"}]}
    compiled = compile_node(jmespath.compile("items[?regex(message, 'y')]").parsed)
    assert compiled(document) == []
    regex = functions.OPTIONS.custom_functions.FUNCTION_TABLE["regex"]  # type: ignore[union-attr]
    monkeypatch.setitem(regex, "function", lambda self, subject, pattern: True)
    assert compiled(document) == [{"message": "x"}]


def test_a_filter_is_compiled_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second search of a filter, over other facts too, compiles nothing: each evaluation of
    a fleet's bundles reuses the closures."""
    compiled: list[str] = []

    def counting(node: dict[str, Any]) -> Any:
        compiled.append(node["type"])
        return compile_node(node)

    monkeypatch.setattr(query, "compile_node", counting)
    expression = "events[?kind == 'compiled-once' && n > `1`].n"
    assert query.FactQuery({"events": [{"kind": "compiled-once", "n": 2}]}).search(expression) == [2]
    assert compiled  # the condition and the projection
    compiled.clear()
    assert (
        query.FactQuery({"events": [{"kind": "compiled-once", "n": 3}] * 20}).search(expression) == [3] * 20
    )
    assert compiled == []
