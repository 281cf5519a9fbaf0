"""JMESPath syntax trees turned once into Python closures that give TreeInterpreter's results.

A filter (``dmesg.events[?kind=='nvme_status_error' && details.status_class=='media']``) tests
its condition on every element it visits, and jmespath's TreeInterpreter walks the condition's
tree again for each: a method lookup and a call per node, and for a function such as
``regex(message, '…')`` the registry's type checks rebuilt from its signature at every call. Over
a kernel log of 1,400 events that was most of the rule pass (docs/performance.md). ``compile_node``
turns a tree into nested closures once; each does what TreeInterpreter's ``visit_<type>`` does
for its node, with jmespath's own equality, ordering and truth, so the result is JMESPath's
(tests/test_compiled.py compares both on every rule over every fixture's facts):

- a field is ``value.get(name)``, None where the value has no ``get`` (not an object);
- ``==``/``!=`` use jmespath's equality (``0``/``1`` never equal ``false``/``true``), the
  orderings give null unless both sides are numbers or strings;
- ``&&``, ``||`` and filters use jmespath's truth (``''``, ``[]``, ``{}``, null, false are false);
  ``!`` is the interpreter's own (Python's ``not``, except that ``!0`` is false: whether ``!0.0``
  is too differs between jmespath 1.0 and 1.1);
- a function is the registry's (``engine/functions.py``): called directly where every argument
  has a type its signature allows, else through ``call_function``, which raises the same error
  as the interpreter would;
- an ``&expression`` (sort_by's key) is handed to the function for the plain interpreter to visit.

The closures recurse as the interpreter does, one frame a node instead of two or three.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from jmespath.visitor import TreeInterpreter, _equals, _Expression, _is_comparable

from gdsdoctor.engine.functions import OPTIONS

Fn = Callable[[Any], Any]
Node = dict[str, Any]
Types = frozenset[str] | None  # the Python type names an argument may have; None: any

_FUNCTIONS = OPTIONS.custom_functions
_PLAIN = TreeInterpreter(OPTIONS)  # visits an &expression's tree for the function given it
_ORDERINGS = {"lt": operator.lt, "gt": operator.gt, "lte": operator.le, "gte": operator.ge}


def is_false(value: Any) -> bool:
    """JMESPath's falsehood, as TreeInterpreter._is_false tests it (equality, not type)."""
    if value is True:
        return False
    return value == "" or value == [] or value == {} or value is None or value is False


def identity(value: Any) -> Any:
    return value


def compile_node(node: Node) -> Fn:
    """A closure giving what ``TreeInterpreter.visit(node, value)`` gives for every value."""
    return _COMPILERS[node["type"]](node)


def _children(node: Node) -> list[Fn]:
    return [compile_node(child) for child in node["children"]]


def _field(node: Node) -> Fn:
    name = node["value"]

    def field(value: Any) -> Any:
        try:
            return value.get(name)
        except AttributeError:
            return None

    return field


def _chain(node: Node) -> Fn:
    """A sub-expression, index expression or pipe: each child over what the one before gave."""
    children = node["children"]
    if all(child["type"] == "field" for child in children):
        names = tuple(child["value"] for child in children)

        def path(value: Any) -> Any:
            for name in names:  # None.get fails too: a missing step gives None to the end
                try:
                    value = value.get(name)
                except AttributeError:
                    return None
            return value

        return path
    steps = _children(node)
    if len(steps) == 2:
        first, second = steps
        return lambda value: second(first(value))

    def chain(value: Any) -> Any:
        for step in steps:
            value = step(value)
        return value

    return chain


def _comparator(node: Node) -> Fn:
    left, right = _children(node)
    kind = node["value"]
    if kind in ("eq", "ne"):
        literal = _string_literal(node["children"][1])
        if literal is not None:  # jmespath's equality with a string is Python's
            if kind == "eq":
                return lambda value: left(value) == literal
            return lambda value: left(value) != literal
        if kind == "eq":
            return lambda value: _equals(left(value), right(value))
        return lambda value: not _equals(left(value), right(value))
    ordering = _ORDERINGS[kind]

    def compare(value: Any) -> Any:
        a, b = left(value), right(value)
        if not (_is_comparable(a) and _is_comparable(b)):
            return None
        return ordering(a, b)

    return compare


def _string_literal(node: Node) -> str | None:
    if node["type"] == "literal" and type(node["value"]) is str:
        return str(node["value"])
    return None


def _literal(node: Node) -> Fn:
    literal = node["value"]
    return lambda value: literal


def _current(node: Node) -> Fn:
    return identity


def _expref(node: Node) -> Fn:
    tree = node["children"][0]
    return lambda value: _Expression(tree, _PLAIN)


def _function(node: Node) -> Fn:
    name = node["value"]
    arguments = _children(node)
    allowed = _allowed_types(name, len(arguments))
    if allowed is not None and len(arguments) == 2:
        return _function_of_two(name, node["children"], arguments, allowed)

    def call(value: Any) -> Any:
        args = [argument(value) for argument in arguments]
        if allowed is not None and all(
            types is None or type(arg).__name__ in types for arg, types in zip(args, allowed, strict=True)
        ):
            return _FUNCTIONS.FUNCTION_TABLE[name]["function"](_FUNCTIONS, *args)
        return _FUNCTIONS.call_function(name, args)  # the registry's own checks and errors

    return call


def _function_of_two(name: str, trees: list[Node], arguments: list[Fn], allowed: tuple[Types, ...]) -> Fn:
    """``regex(message, '…')``, ``contains(list, 'x')``: the commonest calls in a filter, without
    the general call's loops; a literal second argument's type is checked here, once."""
    first, second = arguments
    first_types, second_types = allowed
    literal = trees[1]["value"] if trees[1]["type"] == "literal" else None
    if literal is not None and (second_types is None or type(literal).__name__ in second_types):

        def call_with_literal(value: Any) -> Any:
            a = first(value)
            if first_types is None or type(a).__name__ in first_types:
                return _FUNCTIONS.FUNCTION_TABLE[name]["function"](_FUNCTIONS, a, literal)
            return _FUNCTIONS.call_function(name, [a, literal])

        return call_with_literal

    def call(value: Any) -> Any:
        a, b = first(value), second(value)
        if (first_types is None or type(a).__name__ in first_types) and (
            second_types is None or type(b).__name__ in second_types
        ):
            return _FUNCTIONS.FUNCTION_TABLE[name]["function"](_FUNCTIONS, a, b)
        return _FUNCTIONS.call_function(name, [a, b])

    return call


def _allowed_types(name: str, count: int) -> tuple[Types, ...] | None:
    """The Python type names each argument may have, as the registry's type check reads the
    function's signature; None (always call through the registry) for an unknown function, another
    number of arguments, a variadic signature or one that checks the elements of a list."""
    spec = _FUNCTIONS.FUNCTION_TABLE.get(name)
    if spec is None or len(spec["signature"]) != count:
        return None
    allowed: list[Types] = []
    for argument in spec["signature"]:
        types = argument.get("types") or []
        if argument.get("variadic") or any("-" in t for t in types):
            return None
        names = _FUNCTIONS._get_allowed_pytypes(types)[0] if types else None
        allowed.append(frozenset(names) if names is not None else None)
    return tuple(allowed)


def _filter(node: Node) -> Fn:
    base_of, projected, condition = _children(node)

    def filtered(value: Any) -> Any:
        base = base_of(value)
        if not isinstance(base, list):
            return None
        collected = []
        for element in base:
            if not is_false(condition(element)):
                current = projected(element)
                if current is not None:
                    collected.append(current)
        return collected

    return filtered


def _projection(node: Node) -> Fn:
    base_of, projected = _children(node)

    def projection(value: Any) -> Any:
        base = base_of(value)
        if not isinstance(base, list):
            return None
        return [current for current in map(projected, base) if current is not None]

    return projection


def _value_projection(node: Node) -> Fn:
    base_of, projected = _children(node)

    def projection(value: Any) -> Any:
        base = base_of(value)
        try:
            base = base.values()
        except AttributeError:
            return None
        return [current for current in map(projected, base) if current is not None]

    return projection


def _flatten(node: Node) -> Fn:
    (base_of,) = _children(node)

    def flatten(value: Any) -> Any:
        base = base_of(value)
        if not isinstance(base, list):
            return None
        merged: list[Any] = []
        for element in base:
            if isinstance(element, list):
                merged.extend(element)
            else:
                merged.append(element)
        return merged

    return flatten


def _index(node: Node) -> Fn:
    position = node["value"]

    def index(value: Any) -> Any:
        if not isinstance(value, list):
            return None
        try:
            return value[position]
        except IndexError:
            return None

    return index


def _slice(node: Node) -> Fn:
    bounds = slice(*node["children"])
    return lambda value: value[bounds] if isinstance(value, list) else None


def _key_val_pair(node: Node) -> Fn:
    return compile_node(node["children"][0])


def _multi_select_dict(node: Node) -> Fn:
    pairs = [(child["value"], compile_node(child)) for child in node["children"]]
    return lambda value: None if value is None else {key: pick(value) for key, pick in pairs}


def _multi_select_list(node: Node) -> Fn:
    picks = _children(node)
    return lambda value: None if value is None else [pick(value) for pick in picks]


def _or(node: Node) -> Fn:
    left, right = _children(node)

    def either(value: Any) -> Any:
        matched = left(value)
        return right(value) if is_false(matched) else matched

    return either


def _and(node: Node) -> Fn:
    left, right = _children(node)

    def both(value: Any) -> Any:
        matched = left(value)
        return matched if is_false(matched) else right(value)

    return both


def _not(node: Node) -> Fn:
    (operand,) = _children(node)
    negate = _PLAIN.visit_not_expression  # the installed jmespath's own !: which zeros are false varies

    def negated(value: Any) -> Any:
        return negate(_OF_CURRENT, operand(value))

    return negated


_OF_CURRENT: Node = {"type": "not_expression", "children": [{"type": "current", "children": []}]}


_COMPILERS: dict[str, Callable[[Node], Fn]] = {
    "and_expression": _and,
    "comparator": _comparator,
    "current": _current,
    "expref": _expref,
    "field": _field,
    "filter_projection": _filter,
    "flatten": _flatten,
    "function_expression": _function,
    "identity": _current,
    "index": _index,
    "index_expression": _chain,
    "key_val_pair": _key_val_pair,
    "literal": _literal,
    "multi_select_dict": _multi_select_dict,
    "multi_select_list": _multi_select_list,
    "not_expression": _not,
    "or_expression": _or,
    "pipe": _chain,
    "projection": _projection,
    "slice": _slice,
    "subexpression": _chain,
    "value_projection": _value_projection,
}
