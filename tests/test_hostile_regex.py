"""Hostile inputs, third round, item 1: every regular expression gdsdoctor runs is linear in the
text it is given. The audit (``tests/regex_audit.py``; the rule in docs/security-patterns.md)
finds every pattern of every module of ``src/`` and of the built-in rules, so a pattern added
tomorrow is audited the day it lands, and attacks each with texts built from its own
structure: the time for 4 KiB must stay within 6 ms (linear patterns take microseconds)."""

from __future__ import annotations

import pytest

from tests import regex_audit as audit

# Patterns built inside a function from a value (the audit cannot see them): each reviewed here.
REVIEWED_DYNAMIC = {
    "gdsdoctor/capture/redact.py:pattern": "alternation of re.escape'd literals, longest first",
    "gdsdoctor/checkpoint/units.py:_split_quantity": "the module's _NUMBER (audited) in a fixed frame, "
    "on a command-line argument",
    "gdsdoctor/probes/nvidia_fs.py:modinfo_recogniser": "a module name of the probe table, re.escape'd",
    "gdsdoctor/probes/nvme_cli.py:recognise_id_ctrl": "text.json_key of a constant key",
}


def _report(slow: list[tuple[audit.Found, tuple[float, int, str]]]) -> str:
    return "\n".join(
        f"{found.where}: {found.pattern!r} took {seconds * 1000:.0f} ms on {size} characters {text}"
        for found, (seconds, size, text) in slow
    )


@pytest.mark.parametrize("file", audit.source_files())
def test_every_pattern_of_the_module_is_linear(file: str) -> None:
    slow = [(found, result) for found in audit.patterns_of(file) if (result := audit.slowest(found, 4096))]
    assert not slow, _report(slow)


def test_every_pattern_of_the_built_in_rules_is_linear() -> None:
    found = audit.rule_patterns().values()
    assert len(found) >= 10  # the rules' regex() literals are read
    slow = [(f, result) for f in found if (result := audit.slowest(f, 4096))]
    assert not slow, _report(slow)


def test_patterns_built_at_run_time_are_reviewed() -> None:
    """A pattern made inside a function from a value is out of the audit's sight (and a value
    from a bundle put in a pattern unescaped is an injection): each such call is named here."""
    assert audit.dynamic_call_sites() == set(REVIEWED_DYNAMIC)


@pytest.mark.parametrize(
    "pattern",
    [
        r"modpost: \".+\" .*undefined",  # adjacent unbounded quantifiers over one class
        r"[\w-]+:",  # searched: every start position rescans the run
        r"^(?P<name>[A-Z]\w*?)\s*:\s*(?:\w+=\S*\s*)+$",  # nested: exponential
        r"\s*x",
        r"(?:a|a)*$",
        r"(\d+)$",
        r"^(?P<value>[^{].*?)\s*,?\s*$",  # lazy .*? then \s* before $
    ],
)
def test_the_audit_catches_superlinear_patterns(pattern: str) -> None:
    assert audit.slowest(audit.Found(pattern, 0, "test"), 4096) is not None


@pytest.mark.parametrize(
    "pattern",
    [
        r"^\s*x",
        r"nvidia-fs\.ko driver not loaded",
        r"^(?P<key>[\w.]+)\s*:\s*(?P<value>.*)$",
        r"^(?P<value>[^{\s](?:.*\S)?)\s*$",
        r"(?<!\d)\d+$",
        r"modpost: \"[^\"]+\" .*undefined",
        r"\b(mlx\d_\w+|rxe\d+)\b",
    ],
)
def test_the_audit_passes_linear_patterns(pattern: str) -> None:
    assert audit.slowest(audit.Found(pattern, 0, "test"), 4096) is None


def test_the_audit_finds_the_patterns_of_tables_and_functions() -> None:
    """Tables built at import (dmesg_kinds, cuFile log kinds), f-string patterns and literals
    inside functions are all found."""
    from gdsdoctor.probes import cufile, dmesg_kinds

    kinds = {pattern for _, _, patterns in dmesg_kinds.RULES for pattern in patterns}
    found = {f.pattern for f in audit.patterns_of("gdsdoctor/probes/dmesg.py")}
    assert kinds and kinds <= found
    cufile_found = {f.pattern for f in audit.patterns_of("gdsdoctor/probes/cufile.py")}
    assert {p.pattern for _, p in cufile.LOG_KINDS} <= cufile_found
    assert cufile._COMMENT_TOKENS.pattern in cufile_found  # an f-string
    assert r"-?\d+" in cufile_found  # a literal inside a function
