"""Searches of one facts document, with filters on a field's value looked up in an index.

Most rule conditions filter a list of events by kind: ``dmesg.events[?kind=='nvme_reset']``.
JMESPath visits every element for every such filter, so a kernel log of a few hundred events
cost each of the ~50 filters a pass over all of them: 15 of the 17 ms of a check's evaluation
with 161 events, and growing with the log (docs/performance.md). Here a filter whose condition
can hold only where one field (or a path of fields, ``details.sct``) equals one of some string
literals (``kind=='a'``, ``kind=='a' || kind=='b'``, or either of those ``&&`` anything) visits
only the elements with those values, found in an index of the list built at the first such
filter. The whole condition is still tested on each of them (unless it says no more than the
lookup), so the result is JMESPath's own. The condition and what the filter projects are
compiled once into closures (engine/compiled.py), not interpreted again for every element.

A query holds on to the lists it indexed: the facts must not change while it is in use (the
engine builds one per evaluation, after the facts are complete).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jmespath.visitor import TreeInterpreter

from gdsdoctor.engine.compiled import Fn, compile_node, identity, is_false
from gdsdoctor.engine.functions import OPTIONS, compile_expression

# A shorter list is filtered the plain way: the index would cost more than it saves.
_INDEXED_FROM = 16

Node = dict[str, Any]
Index = dict[str, list[int]]
Path = tuple[str, ...]  # fields read one in another: ("details", "sct") for details.sct
Requirement = tuple[Path, frozenset[str]]


class FactQuery:
    """``search(expression)`` over ``facts``, sharing one index per list and field."""

    def __init__(self, facts: dict[str, Any]) -> None:
        self.facts = facts
        self._interpreter = _IndexedInterpreter()

    def search(self, expression: str) -> Any:
        """Raises jmespath.exceptions.JMESPathError as ``functions.search`` does."""
        return self._interpreter.visit(compile_expression(expression).parsed, self.facts)


class _IndexedInterpreter(TreeInterpreter):
    def __init__(self) -> None:
        super().__init__(OPTIONS)
        # (id of the list, path) -> (the list, its index): the list is kept so its id stays its own
        self._indexes: dict[tuple[int, Path], tuple[list[Any], Index]] = {}

    def visit_filter_projection(self, node: Node, value: Any) -> Any:
        """TreeInterpreter's filter, over the candidates only (same result, same order)."""
        base = self.visit(node["children"][0], value)
        if not isinstance(base, list):
            return None
        plan = _plan(node)
        if plan.required and len(base) >= _INDEXED_FROM:
            candidates = self._candidates(base, plan.required)
            # a condition that is only what the index looked up (``kind=='a' || kind=='b'``)
            # holds on every candidate: tested again, it was most of a filter's work over a log
            held = candidates if plan.lookup else [e for e in candidates if not is_false(plan.condition(e))]
        else:
            held = [element for element in base if not is_false(plan.condition(element))]
        if plan.projected is identity:
            return [element for element in held if element is not None]
        return [current for current in map(plan.projected, held) if current is not None]

    def _candidates(self, base: list[Any], required: list[Requirement]) -> list[Any]:
        """The elements for which a condition requiring ``required`` may hold: those with the
        values its first requirement names (``kind``'s, in ``kind=='a' && details.sct=='b'``).
        Indexing the other fields too, to visit the fewest, cost a pass over the list for each
        and saved only tests of a compiled condition."""
        path, values = required[0]
        return [base[p] for p in sorted(self._positions(base, path, values))]

    def _positions(self, base: list[Any], path: Path, values: frozenset[str]) -> list[int]:
        index = self._index(base, path)
        return [position for value in values for position in index.get(value, ())]

    def _index(self, base: list[Any], path: Path) -> Index:
        key = (id(base), path)
        if (known := self._indexes.get(key)) is not None:
            return known[1]
        index: Index = {}
        for position, element in enumerate(base):
            found = element
            for name in path:  # what JMESPath's field lookup gives: a dict's value, else None
                found = found.get(name) if isinstance(found, dict) else None
            if isinstance(found, str):  # only a string can equal a string literal
                index.setdefault(found, []).append(position)
        self._indexes[key] = (base, index)
        return index


@dataclass(frozen=True, slots=True)
class _Plan:
    """A filter's parts, read off its syntax tree once: its condition and projection compiled
    (engine/compiled.py), what the condition requires of a field, and whether that is all it says."""

    condition: Fn
    projected: Fn
    required: list[Requirement]
    lookup: bool


# id of a filter's node -> (the node, its plan): the node is kept so its id stays its own
_PLANS: dict[int, tuple[Node, _Plan]] = {}


def _plan(node: Node) -> _Plan:
    known = _PLANS.get(id(node))
    if known is not None and known[0] is node:
        return known[1]
    condition, projected = node["children"][2], node["children"][1]
    compiled = compile_node(condition), compile_node(projected)
    plan = _Plan(*compiled, requirements(condition), _is_lookup(condition))
    _PLANS[id(node)] = (node, plan)
    return plan


def requirements(condition: Node) -> list[Requirement]:
    """What ``condition`` requires of an element, as ``(path, values)`` pairs, each meaning
    "the value at this path of fields is one of these strings": each pair must hold for the
    condition to hold. Empty when it requires nothing so simple."""
    kind = condition["type"]
    if kind == "comparator" and condition["value"] == "eq":
        return _field_equals_literal(*condition["children"])
    if kind == "and_expression":  # both sides must hold: so must what each requires
        left, right = (requirements(child) for child in condition["children"])
        return left + right
    if kind == "or_expression":  # one side holds: a field required by both has one of their values
        left, right = (requirements(child) for child in condition["children"])
        return [(path, values | other) for path, values in left for same, other in right if same == path]
    return []


def _is_lookup(condition: Node) -> bool:
    """Whether ``condition`` says no more than its one requirement: a field equal to a string
    literal, or several such of one field joined by ``||``."""
    required = requirements(condition)
    if len(required) != 1:
        return False
    if condition["type"] == "comparator":
        return condition["value"] == "eq"
    if condition["type"] == "or_expression":
        return all(_is_lookup(child) for child in condition["children"])
    return False


def _field_equals_literal(left: Node, right: Node) -> list[Requirement]:
    if right["type"] != "literal":
        left, right = right, left
    path = _fields(left)
    if path and right["type"] == "literal" and isinstance(right["value"], str):
        return [(path, frozenset([right["value"]]))]
    return []


def _fields(node: Node) -> Path:
    """The path of a field (``kind``) or of fields read one in another (``details.sct``); empty
    for any other expression."""
    if node["type"] == "field":
        return (node["value"],)
    if node["type"] == "subexpression":
        parts = [_fields(child) for child in node["children"]]
        return tuple(name for part in parts for name in part) if all(parts) else ()
    return ()
