"""Hostile inputs, third round, item 1: every regular expression gdsdoctor runs is linear in the
text it is given. The audit (``tests/regex_audit.py``; the rule in docs/security-patterns.md)
finds every pattern of every module of ``src/`` and of the built-in rules, so a pattern added
tomorrow is audited the day it lands, and attacks each with texts built from its own
structure: the time for 4 KiB must stay within 6 ms (linear patterns take microseconds)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests import regex_audit as audit

# Patterns built inside a function from a value (the audit cannot see them): each reviewed here.
REVIEWED_DYNAMIC = {
    "gdsdoctor/capture/redact.py:pattern": "the learned names as a trie of re.escape'd characters "
    "(redact.literal_trie), audited in test_the_learned_names_pattern_is_linear",
    "gdsdoctor/checkpoint/units.py:_split_quantity": "the module's _NUMBER (audited) in a fixed frame, "
    "on a command-line argument",
    "gdsdoctor/facts/derived/topology.py:on_namespace": "a namespace name, re.escape'd",
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


def test_the_learned_names_pattern_is_linear() -> None:
    """Redaction's pattern is built from what a bundle's texts taught it: many host names, and
    names that are prefixes of one another (a chain the trie nests one level a character)."""
    from gdsdoctor.capture.redact import Redactor

    redactor = Redactor()
    for number in range(300):
        redactor.learn_hostname(f"gpu-node-{number:03d}.cluster.internal")
    for length in range(4, 64):
        redactor.learn_hostname("a" * length)
    redactor.learn('sn : S4EWNX0R1234\nSERIAL="X1-2-3-4-5-6-7-8"\n')
    found = audit.Found(redactor.pattern().pattern, 0, "redact.Redactor.pattern()")
    assert audit.slowest(found, 4096) is None
    assert not audit.forbidden_constructs(found.pattern)


def test_no_pattern_is_possessive_or_atomic() -> None:
    """Python 3.10 refuses possessive quantifiers and atomic groups, and 3.11.0-3.11.4 (Debian 12's
    own 3.11.2) match them wrongly without a word (a /proc/version paste was "not recognised"):
    gdsdoctor's patterns are linear without them (docs/security-patterns.md)."""
    found = audit.every_pattern()
    assert len(found) > 700
    bad = [
        f"{f.where}: {f.pattern!r}: {', '.join(wrong)}"
        for f in found
        if (wrong := audit.forbidden_constructs(f.pattern))
    ]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    ("pattern", "wrong"),
    [
        (r"^\s*+x", ["possessive *+ at 3"]),
        (r"\d++\.", ["possessive ++ at 2"]),
        (r"a?+b", ["possessive ?+ at 1"]),
        (r"[^:\s]{1,300}+:", ["possessive {1,300}+ at 6"]),
        (r"(?>[^\]\n]*truncated)", ["atomic group at 0"]),
        (r"[+*]++", ["possessive ++ at 4"]),
        # not possessive: an escaped or class member +, a literal }, a lazy run, {+ as literals
        (r"\++", []),
        (r"[*+]+[?+]", []),
        (r"a}+", []),
        (r"a+?b*?", []),
        (r"x{+", []),
        (r"[]+]+", []),
        (r"(?:a)+(?=b)", []),
    ],
)
def test_the_audit_reads_possessive_and_atomic_constructs(pattern: str, wrong: list[str]) -> None:
    assert audit.forbidden_constructs(pattern) == wrong


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
    # up to 16 KiB: the quadratic `modpost` pattern takes 6.1 ms at 4 KiB on a 2-core VM, at the
    # 6 ms budget's edge (caught or not by chance), and 95 ms at 16 KiB against 18 ms
    assert audit.slowest(audit.Found(pattern, 0, "test"), 16384) is not None


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


# --- the inputs of the report: each kept analyze busy for seconds to minutes ---------------------


def _hostile_bundle(tmp_path: Path, section: str, name: str, data: bytes) -> Path:
    from gdsdoctor.capture.bundle import write_bundle
    from gdsdoctor.capture.capture import Capture
    from gdsdoctor.model import Artifact, ArtifactStatus

    capture = Capture(origin="live", host={"hostname": "gpu001"}, label="gpu001")
    capture.add(section, Artifact(name, ArtifactStatus.OK, data, source=name))
    return write_bundle(capture, tmp_path / "hostile.tar.gz")


HOSTILE_INPUTS = {
    # a DKMS build log line whose symbol is quote-space pairs: `".+" .*undefined` tried every pair
    "make.log": ("nvidia_fs_build", "var/lib/dkms/nvidia-fs/make.log", b'modpost: "x' + b'" ' * 13_000),
    # nvidia-fs counters: the nested pairs of `(?:[\w]+=\S*\s*)+$` were exponential
    "nvidia-fs stats": ("nvidia_fs_stats", "proc/driver/nvidia-fs/stats", b"Reads : " + b"a=" * 40 + b"\n!"),
    # a cuFile JSON excerpt: `(?P<value>[^{].*?)\s*,?\s*$` was cubic in a run of spaces
    "cufile.json": ("cufile_json", "etc/cufile.json", b'{\n "a": x' + b" " * 5_000 + b"y\n"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_INPUTS))
def test_a_hostile_line_in_a_bundle_is_analysed_at_once(tmp_path: Path, name: str) -> None:
    """Seconds or minutes each before (the make.log line 15 s, the counters 0.3 s for 18 pairs and
    doubling with each pair, the JSON line 2.6 s per KiB cubed); now well under a second."""
    from gdsdoctor.pipeline import analyze_paths

    section, member, data = HOSTILE_INPUTS[name]
    bundle = _hostile_bundle(tmp_path, section, member, data)
    started = time.thread_time()
    analyze_paths([bundle])
    assert time.thread_time() - started < 5
