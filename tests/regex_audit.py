"""The regex audit: every regular expression of gdsdoctor, found automatically, fed strings built
from its own structure, must stay linear (docs/security-patterns.md says how a pattern passes).

How patterns are found (``all_patterns``):

- every module under ``gdsdoctor`` is imported and its globals walked (containers, records and
  class attributes included) for compiled patterns, ``lazy_compile`` ones included: a pattern
  built at import (an f-string, a join, a table such as ``dmesg_kinds``) is found as it runs;
- every ``re.<function>(literal, ...)`` and ``lazy_compile(literal)`` written inside a function
  is read from the source (its flags too);
- the ``regex(subject, 'pattern')`` literals of the built-in rules.

A pattern built at run time inside a function (from a value) cannot be found either way: those
call sites are listed by ``dynamic_call_sites`` and each must be reviewed in the test's table.

How a pattern is attacked (``attacks``): for every repetition in it (``*``, ``+``, ``{m,n}``),
the shortest text that reaches it, then one unit the repetition accepts (a character of each
class the pattern tells apart, or the repeated part's shortest match) many times, then an
ending that makes the match fail (end of text, NUL, a newline then NUL). A backtracking pattern
retries every split of the pumped run between its overlapping quantifiers: time grows with the
square (or worse) of the run, which is what ``slowest`` measures with ``search`` and
``fullmatch``.
"""

from __future__ import annotations

import ast
import importlib
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gdsdoctor
from gdsdoctor.patterns import _LazyPattern
from gdsdoctor.patterns import forbidden_constructs as forbidden_constructs  # the audit's, and lint's

try:  # re's own parser: re._parser from 3.11, sre_parse (deprecated since) on 3.10
    import re._constants as sre
    import re._parser as sre_parse
except ImportError:  # pragma: no cover - 3.10
    import sre_constants as sre  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

SRC = Path(gdsdoctor.__file__).parent
RE_FUNCTIONS = {"compile", "match", "search", "fullmatch", "finditer", "findall", "sub", "subn", "split"}
# One character of each kind a pattern may tell apart; the attack keeps one per class signature.
ALPHABET = " \t\naZ0_-.:/=,;\"'()[]{}<>#%@!+*x\x00\x7f\u00e9\u2028"
# The shortest text reaching a repetition is built twice: with spaces where a class allows them, and
# with letters ("a" then a run of spaces is what a lazy run before \s* retries on).
ORDERS = (ALPHABET, "a0Z_-.:/=,;\"'()[]{}<>#%@!+*x \t\n\x00\x7f\u00e9\u2028")
ENDINGS = ("", "\x00", "\n\x00", "!")


@dataclass(frozen=True)
class Found:
    pattern: str
    flags: int
    where: str  # module.NAME or file:line


# --- finding the patterns ------------------------------------------------------------------------


def _walk_value(
    value: Any, where: str, out: dict[tuple[str, int], Found], seen: set[int], depth: int
) -> None:
    if depth > 6 or id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, re.Pattern):
        if isinstance(value.pattern, str):
            out.setdefault((value.pattern, value.flags), Found(value.pattern, value.flags, where))
        return
    if isinstance(value, _LazyPattern):
        flags = re.compile(value.pattern, value._flags).flags
        out.setdefault((value.pattern, flags), Found(value.pattern, flags, where))
        return
    if isinstance(value, (str, bytes, int, float, bool, type(None))):
        return
    if isinstance(value, dict):
        for key, item in value.items():
            _walk_value(key, where, out, seen, depth + 1)
            _walk_value(item, where, out, seen, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            _walk_value(item, where, out, seen, depth + 1)
    elif isinstance(value, type) and value.__module__.startswith("gdsdoctor"):
        for name, item in vars(value).items():
            _walk_value(item, f"{where}.{name}", out, seen, depth + 1)
    elif type(value).__module__.startswith("gdsdoctor"):
        for name in getattr(type(value), "__slots__", ()) or ():
            _walk_value(getattr(value, name, None), where, out, seen, depth + 1)
        for item in getattr(value, "__dict__", {}).values():
            _walk_value(item, where, out, seen, depth + 1)


def module_name(file: str) -> str:
    """``gdsdoctor/probes/cufile.py`` -> ``gdsdoctor.probes.cufile``."""
    return file.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def source_files() -> list[str]:
    """Every module of gdsdoctor but ``__main__`` (importing it runs the command line)."""
    files = (str(p.relative_to(SRC.parent)) for p in SRC.rglob("*.py"))
    return sorted(f for f in files if not f.endswith("__main__.py"))


def module_patterns(file: str) -> dict[tuple[str, int], Found]:
    """The patterns a module holds once imported (in its globals, at any depth)."""
    out: dict[tuple[str, int], Found] = {}
    name = module_name(file)
    module = importlib.import_module(name)
    seen: set[int] = set()
    for key, value in vars(module).items():
        if not key.startswith("__"):
            _walk_value(value, f"{name}.{key}", out, seen, 0)
    return out


def _pattern_call(node: ast.Call) -> bool:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id == "lazy_compile"
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "re"
        and func.attr in RE_FUNCTIONS
    )


_FLAGS_AT = {"compile": 1, "sub": 4, "subn": 4, "split": 3}  # where re.<function> takes flags


def _flags_of(node: ast.Call) -> int:
    name = node.func.attr if isinstance(node.func, ast.Attribute) else "compile"  # lazy_compile
    at = _FLAGS_AT.get(name, 2)
    flag_nodes = [k.value for k in node.keywords if k.arg == "flags"] + node.args[at : at + 1]
    flags = 0
    for flag in flag_nodes:
        flags |= _flag_value(flag)
    return flags


def _flag_value(node: ast.expr) -> int:
    """``re.I``, ``re.I | re.M``; a variable reads as no flag (the pattern is audited without it)."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "re":
        return int(getattr(re, node.attr, 0))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _flag_value(node.left) | _flag_value(node.right)
    return 0


def _calls(tree: ast.AST) -> Iterator[tuple[ast.Call, bool]]:
    """Every pattern call with whether it is inside a function."""

    def visit(node: ast.AST, in_function: bool) -> Iterator[tuple[ast.Call, bool]]:
        inside = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if isinstance(node, ast.Call) and _pattern_call(node) and node.args:
            yield node, in_function
        for child in ast.iter_child_nodes(node):
            yield from visit(child, inside)

    yield from visit(tree, False)


def source_patterns(file: str) -> dict[tuple[str, int], Found]:
    """The literal patterns of a module's source (those inside functions are found only here)."""
    out: dict[tuple[str, int], Found] = {}
    for call, _ in _calls(ast.parse((SRC.parent / file).read_text())):
        first = call.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            flags = re.compile(first.value, _flags_of(call)).flags
            out.setdefault((first.value, flags), Found(first.value, flags, f"{file}:{call.lineno}"))
    return out


def patterns_of(file: str) -> list[Found]:
    found = module_patterns(file)
    for key, value in source_patterns(file).items():
        found.setdefault(key, value)
    return sorted(found.values(), key=lambda f: f.where)


def dynamic_call_sites() -> set[str]:
    """``file:function`` of every call inside a function whose pattern is not a literal nor a
    module-level name (which the module walk finds)."""
    sites: set[str] = set()
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Call) and _pattern_call(node) and node.args:
                    first = node.args[0]
                    literal = isinstance(first, ast.Constant)
                    named = isinstance(first, (ast.Name, ast.Attribute))
                    if not literal and not named:
                        sites.add(f"{path.relative_to(SRC.parent)}:{function.name}")
    return sites


def rule_patterns() -> dict[tuple[str, int], Found]:
    """The literal patterns of ``regex(subject, 'pattern')`` in the built-in rules."""
    from gdsdoctor.engine.rules import cause_expressions, load_rules

    out: dict[tuple[str, int], Found] = {}
    literal = re.compile(r"regex\([^,()]{1,200},\s*'((?:[^'\\]|\\.){1,500})'\)")
    for cause in load_rules():
        for _, expression in cause_expressions(cause):
            for pattern in literal.findall(expression):
                pattern = pattern.replace("\\'", "'")
                out.setdefault((pattern, 0), Found(pattern, 0, f"rule {cause.id}"))
    return out


# --- what the engine choice forbids: gdsdoctor.patterns.forbidden_constructs (lint uses it too) ---


# --- building attacks from a pattern's structure -----------------------------------------------

_CATEGORY = {
    sre.CATEGORY_DIGIT: str.isdigit,
    sre.CATEGORY_SPACE: lambda c: c in " \t\n\r\f\v" or (c.isspace() and ord(c) > 127),
    sre.CATEGORY_WORD: lambda c: c.isalnum() or c == "_",
    sre.CATEGORY_LINEBREAK: lambda c: c == "\n",
}
_NEGATED = {
    sre.CATEGORY_NOT_DIGIT: sre.CATEGORY_DIGIT,
    sre.CATEGORY_NOT_SPACE: sre.CATEGORY_SPACE,
    sre.CATEGORY_NOT_WORD: sre.CATEGORY_WORD,
    sre.CATEGORY_NOT_LINEBREAK: sre.CATEGORY_LINEBREAK,
}


def _in_category(category: Any, char: str, flags: int) -> bool:
    if category in _NEGATED:
        return not _in_category(_NEGATED[category], char, flags)
    test = _CATEGORY.get(category)
    if test is None:
        return False
    if flags & re.ASCII and ord(char) > 127:
        return False
    return bool(test(char))


def _same(code: int, char: str, flags: int) -> bool:
    if flags & re.IGNORECASE:
        return chr(code).lower() == char.lower()
    return chr(code) == char


def accepts(op: Any, av: Any, char: str, flags: int) -> bool:
    """Whether one character-matching item takes ``char``."""
    if op is sre.LITERAL:
        return _same(av, char, flags)
    if op is sre.NOT_LITERAL:
        return not _same(av, char, flags)
    if op is sre.ANY:
        return char != "\n" or bool(flags & re.DOTALL)
    if op is sre.IN:
        negate = bool(av) and av[0][0] is sre.NEGATE
        hit = False
        for item_op, item_av in av[1:] if negate else av:
            if item_op is sre.LITERAL:
                hit = _same(item_av, char, flags)
            elif item_op is sre.RANGE:
                low, high = item_av
                hit = low <= ord(char) <= high or (
                    bool(flags & re.IGNORECASE)
                    and any(low <= ord(c) <= high for c in (char.lower(), char.upper()))
                )
            elif item_op is sre.CATEGORY:
                hit = _in_category(item_av, char, flags)
            if hit:
                break
        return hit != negate
    return False


def _atoms(items: Any, out: list[tuple[Any, Any]]) -> None:
    for op, av in items:
        if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN):
            out.append((op, av))
        for child in _children(op, av):
            _atoms(child, out)


def _children(op: Any, av: Any) -> list[Any]:
    if op is sre.SUBPATTERN:
        return [av[3]]
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
        return [av[2]]
    if op is sre.BRANCH:
        return list(av[1])
    if op in (sre.ASSERT, sre.ASSERT_NOT):
        return [av[1]]
    if op is sre.GROUPREF_EXISTS:
        return [branch for branch in av[1:] if branch is not None]
    return []


def first_chars(items: Any, chars: list[str], flags: int) -> tuple[set[str], bool]:
    """The characters (of ``chars``) that can start ``items``, and whether it can match empty."""
    found: set[str] = set()
    for op, av in items:
        if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN):
            return found | {c for c in chars if accepts(op, av, c, flags)}, False
        if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT, sre.GROUPREF):
            continue
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            inner, empty = first_chars(av[2], chars, flags)
            found |= inner
            if av[0] > 0 and not empty:
                return found, False
            continue
        empties = []
        for child in _children(op, av):
            inner, empty = first_chars(child, chars, flags)
            found |= inner
            empties.append(empty)
        if empties and not any(empties):
            return found, False
    return found, True


def example(items: Any, chars: list[str], flags: int) -> str:
    """A short text that ``items`` matches (assertions and back-references left out)."""
    out = []
    for op, av in items:
        if op is sre.LITERAL:
            out.append(chr(av))
        elif op in (sre.NOT_LITERAL, sre.ANY, sre.IN):
            out.append(next((c for c in chars if accepts(op, av, c, flags)), None) or _member(op, av))
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            out.append(example(av[2], chars, flags) * av[0])
        elif op is sre.BRANCH:
            out.append(min((example(b, chars, flags) for b in av[1]), key=len))
        elif op is sre.GROUPREF_EXISTS:
            out.append(example(av[1], chars, flags))
        elif op is sre.SUBPATTERN:
            out.append(example(_children(op, av)[0], chars, flags))
    return "".join(out)


def _member(op: Any, av: Any) -> str:
    """A character of a class none of the alphabet's is in (``[q-s]``)."""
    for item_op, item_av in av if op is sre.IN else ():
        if item_op is sre.LITERAL:
            return chr(item_av)
        if item_op is sre.RANGE:
            return chr(item_av[0])
    return "a"


def _repeats(items: Any, prefix: str, chars: list[str], flags: int) -> Iterator[tuple[str, Any, str]]:
    """(the shortest text reaching it, its body, the text between it and the next repetition)
    for every repetition of two or more."""
    done = ""
    items = list(items)
    for index, (op, av) in enumerate(items):
        here = prefix + done
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            if av[1] >= 2:
                yield here, av[2], _until_repeat(items[index + 1 :], chars, flags)
            yield from _repeats(av[2], here, chars, flags)
        elif op is sre.BRANCH:
            for branch in av[1]:
                yield from _repeats(branch, here, chars, flags)
        elif op in (sre.SUBPATTERN, sre.GROUPREF_EXISTS):
            for child in _children(op, av):
                yield from _repeats(child, here, chars, flags)
        done += example([(op, av)], chars, flags)


def _until_repeat(items: Any, chars: list[str], flags: int) -> str:
    """The fixed text after a repetition, up to the next one (``" `` in ``.+" .*``): pumped
    with it, the two repetitions overlap."""
    out = []
    for op, av in items:
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT) and av[0] != av[1]:
            break
        out.append(example([(op, av)], chars, flags))
    return "".join(out)


def attacks(found: Found) -> list[tuple[str, str, str]]:
    """(prefix, unit, ending) triples: the text is prefix + unit × n + ending."""
    parsed = sre_parse.parse(found.pattern, found.flags)
    flags = found.flags | parsed.state.flags
    atoms: list[tuple[Any, Any]] = []
    _atoms(parsed, atoms)
    kinds: dict[tuple[bool, ...], str] = {}
    for char in ALPHABET:
        kinds.setdefault(tuple(accepts(op, av, char, flags) for op, av in atoms), char)
    chars = list(kinds.values())
    out: set[tuple[str, str, str]] = {("", c, e) for c in chars for e in ENDINGS}
    for order in ORDERS:
        for prefix, body, follow in _repeats(parsed, "", list(order), flags):
            starts = first_chars(body, chars, flags)[0]
            units = starts | {c + follow for c in starts} | ({follow} if follow else set())
            whole = example(body, list(order), flags)
            if len(whole) > 1:
                units.add(whole)
            out |= {(prefix, unit, ending) for unit in units for ending in ENDINGS}
    return sorted(out)


# --- measuring ---------------------------------------------------------------------------------


def _time(compiled: re.Pattern[str], text: str) -> float:
    """CPU seconds of this thread (the other processes of a loaded machine do not count)."""
    started = time.thread_time()
    compiled.search(text)
    compiled.fullmatch(text)
    return time.thread_time() - started


def _text(prefix: str, unit: str, ending: str, size: int) -> str:
    return prefix + unit * max(1, (size - len(prefix)) // len(unit)) + ending


# The budget: 2 ms + 1 ms per KiB of attack, for search and fullmatch together. A linear pattern
# takes a few microseconds per KiB (a hundred times under it, on a loaded machine too); a
# quadratic one 16 KiB in 0.1-1 s, an exponential one seconds at 30 characters.
def budget_s(size: int) -> float:
    return 0.002 + 0.001 * size / 1024


SIZES = (8, 16, 24, 32, 64, 256, 1024, 4096, 16384)


def every_pattern() -> list[Found]:
    """Every pattern the audit covers: each module's, then the built-in rules'."""
    found = [item for file in source_files() for item in patterns_of(file)]
    return found + list(rule_patterns().values())


def worst_attack(found: Found, size: int) -> tuple[float, str]:
    """The CPU seconds of the slowest attack of ``size`` characters, and the text's start
    (scripts/benchmark.py reports them per KiB)."""
    compiled = re.compile(found.pattern, found.flags)
    timed = (
        (_time(compiled, _text(prefix, unit, ending, size)), repr(prefix + unit * 3 + "…" + ending))
        for prefix, unit, ending in attacks(found)
    )
    return max(timed, default=(0.0, ""))


def slowest(found: Found, top: int = SIZES[-1]) -> tuple[float, int, str] | None:
    """The first attack over budget: (seconds, size, text's start), or None when all pass. The
    size grows from 8 characters so an exponential pattern is caught before it hangs."""
    compiled = re.compile(found.pattern, found.flags)
    triples = attacks(found)
    for size in (s for s in SIZES if s <= top):
        for prefix, unit, ending in triples:
            text = _text(prefix, unit, ending, size)
            seconds = _time(compiled, text)
            if seconds > budget_s(size):
                seconds = min(seconds, *(_time(compiled, text) for _ in range(4)))  # a pause, not the pattern
                if seconds > budget_s(size) and not _grows_linearly(
                    compiled, (prefix, unit, ending), size, seconds
                ):
                    return seconds, len(text), repr(prefix + unit * 3 + "…" + ending)
    return None


# How much more time four times the text may take before the growth is called superlinear:
# linear is 4, quadratic 16. Past 20 budgets a pattern fails however it grows.
LINEAR_GROWTH = 8.0
HARD_CAP_BUDGETS = 20


def _grows_linearly(
    compiled: re.Pattern[str], attack: tuple[str, str, str], size: int, seconds: float
) -> bool:
    """Whether a pattern over the budget at ``size`` is only slow, not superlinear: its time
    grows at most LINEAR_GROWTH times from a quarter of the text. A loaded machine slows a large
    pattern's constant factor past the budget (its CPU time too: caches and clocks are shared);
    it does not change how the time grows, which is what makes a pattern a denial of service."""
    if size < 1024 or seconds > HARD_CAP_BUDGETS * budget_s(size):
        return False
    quarter = min(_time(compiled, _text(*attack, size // 4)) for _ in range(5))
    return seconds <= LINEAR_GROWTH * max(quarter, 1e-6)
