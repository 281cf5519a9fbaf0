"""The JMESPath dialect of rule conditions: standard JMESPath plus a few registered functions.

- ``regex(subject, pattern)``: true if the regular expression matches anywhere in subject
  (false for null subjects, so a missing value never matches).
- ``version_cmp(a, b)``: -1, 0 or 1 comparing dotted versions numerically (``2.17.5`` >
  ``2.9``); null if either side is not a version.
- ``lower(s)``: lower-case string (null for null).
- ``any_true(list)``: true if any element is truthy (JMESPath truthiness).
- ``unique(list)``: the list without repeats, in first-seen order (a device that several events
  name, once per command).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import jmespath
from jmespath import functions
from jmespath.exceptions import JMESPathError
from jmespath.parser import ParsedResult

from gdsdoctor.patterns import forbidden_constructs


def version_key(value: str) -> tuple[int, ...] | None:
    numbers = re.findall(r"\d+", str(value))
    return tuple(int(n) for n in numbers) if numbers else None


class RuleFunctions(functions.Functions):
    @functions.signature({"types": ["string", "null"]}, {"types": ["string"]})
    def _func_regex(self, subject: str | None, pattern: str) -> bool:
        return subject is not None and _compiled(pattern).search(subject) is not None

    @functions.signature({"types": ["string", "number", "null"]}, {"types": ["string", "number", "null"]})
    def _func_version_cmp(self, left: Any, right: Any) -> int | None:
        a, b = (
            version_key(left) if left is not None else None,
            version_key(right) if right is not None else None,
        )
        if a is None or b is None:
            return None
        width = max(len(a), len(b))
        a, b = a + (0,) * (width - len(a)), b + (0,) * (width - len(b))
        return (a > b) - (a < b)

    @functions.signature({"types": ["string", "null"]})
    def _func_lower(self, subject: str | None) -> str | None:
        return None if subject is None else subject.lower()

    @functions.signature({"types": ["array", "null"]})
    def _func_any_true(self, values: list[Any] | None) -> bool:
        return any(truthy(v) for v in values or [])

    @functions.signature({"types": ["array", "null"]})
    def _func_unique(self, values: list[Any] | None) -> list[Any]:
        seen: list[Any] = []
        for value in values or []:
            if value not in seen:  # a list, not a set: values may be objects
                seen.append(value)
        return seen


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


OPTIONS = jmespath.Options(custom_functions=RuleFunctions())


_COMPILED: dict[str, ParsedResult] = {}


def compile_expression(expression: str, tree: dict[str, Any] | None = None) -> ParsedResult:
    """Compile once per process; raises jmespath.exceptions.JMESPathError on a bad expression.
    ``tree``: its syntax tree, compiled before (the rules built into a wheel carry them)."""
    compiled = _COMPILED.get(expression)
    if compiled is None:
        try:
            compiled = ParsedResult(expression, tree) if tree is not None else jmespath.compile(expression)
        except RecursionError:  # jmespath's parser recurses once per nesting level
            raise ExpressionTooDeep("nested too deeply to parse") from None
        _COMPILED[expression] = compiled
    return compiled


class ExpressionTooDeep(JMESPathError):
    """An expression nested deeper than jmespath's recursive parser can go (a site rule of
    thousands of parentheses ended in "internal error: RecursionError"): a lint problem."""


class InvalidPattern(JMESPathError):
    """A ``regex()`` pattern Python cannot compile: that condition cannot hold (lint says so)."""


# How deep an expression may nest: evaluation recurses several frames a level, and parsing an
# expression that deep succeeded where evaluating it met the interpreter's limit.
MAX_EXPRESSION_DEPTH = 100


def search(expression: str, facts: Any) -> Any:
    """The expression over ``facts``. What lint could not foresee (a pattern built from the
    facts, a nesting the interpreter cannot follow) is a JMESPathError: the condition does not
    hold, the cause is judged on the rest, never a crashed analysis."""
    try:
        return compile_expression(expression).search(facts, options=OPTIONS)
    except RecursionError:
        raise ExpressionTooDeep("nested too deeply to evaluate") from None
    except re.error as error:
        raise InvalidPattern(f"invalid regular expression: {error}") from None


NEGATED_PATH = (
    "`!a.b` negates `a` before the path goes on (JMESPath binds `!` tighter than `.`): it is "
    "`(!a).b`, null whatever the facts; write `!(a.b)`"
)


def expression_problems(compiled: ParsedResult) -> list[str]:
    """What evaluation would fail on, found in the syntax tree (walked without recursion): a
    nesting deeper than MAX_EXPRESSION_DEPTH, a literal ``regex()`` pattern that does not compile,
    and ``!a.b`` (a sub-expression that starts with a negation: ``(!a).b``, null whatever the facts)."""
    problems: list[str] = []
    stack: list[tuple[Any, int]] = [(compiled.parsed, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, dict):
            continue
        if depth > MAX_EXPRESSION_DEPTH:
            return [f"nested more than {MAX_EXPRESSION_DEPTH} levels deep (evaluation cannot follow it)"]
        children = node.get("children") or []
        first = children[0] if children and isinstance(children[0], dict) else {}
        negated = node.get("type") == "subexpression" and first.get("type") == "not_expression"
        if negated and NEGATED_PATH not in problems:
            problems.append(NEGATED_PATH)
        if node.get("type") == "function_expression" and node.get("value") == "regex" and len(children) == 2:
            pattern = children[1]
            if (
                isinstance(pattern, dict)
                and pattern.get("type") == "literal"
                and isinstance(pattern.get("value"), str)
            ):
                problems += _pattern_problems(pattern["value"])
        stack.extend((child, depth + 1) for child in children)
    return problems


def _pattern_problems(pattern: str) -> list[str]:
    """A literal ``regex()`` pattern that does not compile, or that uses what CPython before 3.11.5
    matches wrongly without an error (possessive quantifiers, atomic groups: 3.10 refuses them,
    3.11.0-3.11.4 answer wrongly), so that a site rule gives the same answer on every Python."""
    forbidden = forbidden_constructs(pattern)
    if forbidden:
        return [
            f"regex(): {pattern!r} uses a {', a '.join(forbidden)}, which Python before 3.11.5 matches "
            "wrongly (3.10 refuses it): write it without (docs/security-patterns.md)"
        ]
    try:
        re.compile(pattern)
    except re.error as error:
        return [f"regex(): {pattern!r} is not a regular expression ({error})"]
    return []


def truthy(value: Any) -> bool:
    """JMESPath truthiness: false, null, empty string/list/object are false; numbers are true."""
    if value is None or value is False:
        return False
    if isinstance(value, str | list | dict):
        return len(value) > 0
    return True
