
"""The built-in rules, pre-parsed: a JSON pack that loads in a few milliseconds.

Parsing the YAML matrix (~45 ms even with libyaml) and compiling its 500-odd JMESPath
conditions (~40 ms, a pure-Python parser) was the largest fixed cost of ``gdsdoctor check``
after interpreter start-up. The pack holds what both produce: each cause as read from YAML with
its line, and the syntax tree of every expression. The trees live in a side file, one JSON text
a line in the order of the pack's expression list: split into lines at load (a JSON string of
JSON texts cost 1.8 ms to unescape), each decoded when its expression is first evaluated (a
run evaluates only the causes its facts allow). The pack is used only while its digest equals
the digest of the rule files on disk and the side file is the one it was written with, so an
edited rule is never shadowed by a stale pack: the YAML is parsed instead, and a test says to
rebuild the pack (``python3 scripts/pack_rules.py``).
Site rules (``--rules-dir``) are always parsed and validated.
"""

from __future__ import annotations

import dataclasses
import json
import os
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gdsdoctor.engine.functions import compile_expression, prime_expressions
from gdsdoctor.engine.rules import Cause, Signal, cause_expressions

PACK_FORMAT = 3
PACK_FILE = Path(__file__).with_name("builtin_rules.pack.json")


def trees_file(pack_file: Path) -> Path:
    """The side file of ``pack_file`` with the syntax trees, one a line."""
    return pack_file.with_suffix(".trees")


def digest(rules_dir: Path, files: Sequence[Path]) -> list[str]:
    """What the pack was built from: name, size and CRC-32 of each rule file. A change
    detector, not a security check (the pack ships beside the files it describes); CRC-32
    because importing hashlib (OpenSSL) costs more than loading the whole pack."""
    entries = []
    for file in files:
        data = file.read_bytes()
        entries.append(f"{file.relative_to(rules_dir).as_posix()} {len(data)} {_crc(data)}")
    return entries


def build_pack(rules_dir: Path, files: Sequence[Path], causes: Sequence[Cause]) -> dict[str, Any]:
    """The pack of ``causes`` (lint-clean, loaded from ``files`` under ``rules_dir``): the
    expressions in order, and their syntax trees as JSON texts in the same order."""
    expressions = sorted({e for cause in causes for _, e in cause_expressions(cause)})
    trees = "\n".join(_tree_text(compile_expression(e).parsed) for e in expressions)
    return {
        "format": PACK_FORMAT,
        "digest": digest(rules_dir, files),
        "trees_crc": _crc(trees.encode()),
        "causes": [_cause_record(cause, rules_dir) for cause in causes],
        "expressions": expressions,
        "trees": trees,
    }


def _crc(data: bytes) -> str:
    return f"{zlib.crc32(data):08x}"


def _tree_text(tree: Any) -> str:
    return json.dumps(tree, separators=(",", ":"))


def _cause_record(cause: Cause, rules_dir: Path) -> dict[str, Any]:
    record = dataclasses.asdict(cause)
    record["file"] = Path(cause.file).relative_to(rules_dir).as_posix()
    record["signals"] = [dataclasses.asdict(s) for s in cause.signals]
    return record


def read_pack(rules_dir: Path, files: Sequence[Path], pack_file: Path = PACK_FILE) -> list[Cause] | None:
    """The causes from the pack, or None when there is no pack or it does not match the files
    (the caller then parses the YAML)."""
    try:
        pack = json.loads(pack_file.read_bytes())
        if pack.get("format") != PACK_FORMAT or pack.get("digest") != digest(rules_dir, files):
            return None
        trees = trees_file(pack_file).read_bytes()
        expressions = pack["expressions"]
        if _crc(trees) != pack["trees_crc"]:
            return None
        # strict: a trees file written for another expression list raises (ValueError)
        syntax_trees = dict(zip(expressions, trees.decode().split("\n"), strict=True))
        directory = str(rules_dir)
        causes = [_cause_from(record, directory) for record in pack["causes"]]
        prime_expressions(syntax_trees)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return causes


def _cause_from(record: dict[str, Any], rules_dir: str) -> Cause:
    fields = dict(record)
    fields["file"] = os.path.join(rules_dir, record["file"])  # a str join: Path costs 10 us a cause
    fields["signals"] = tuple(Signal(**signal) for signal in record["signals"])
    fields["requires"] = tuple(r if isinstance(r, str) else tuple(r) for r in record["requires"])
    for name in ("remediation", "references", "explains"):
        fields[name] = tuple(record[name])
    return Cause(**fields)


def write_pack(pack: dict[str, Any], pack_file: Path = PACK_FILE) -> None:
    # One cause, expression or tree per line: a rule edit shows as a readable diff of the pack.
    causes = ",\n".join(json.dumps(c, sort_keys=True) for c in pack["causes"])
    expressions = ",\n".join(json.dumps(e) for e in pack["expressions"])
    files = ",\n".join(json.dumps(entry) for entry in pack["digest"])
    header = f'"format": {pack["format"]},\n"digest": [\n{files}\n],\n"trees_crc": "{pack["trees_crc"]}"'
    trees_file(pack_file).write_text(pack["trees"], encoding="utf-8")
    pack_file.write_text(
        f'{{{header},\n"causes": [\n{causes}\n],\n"expressions": [\n{expressions}\n]}}\n', encoding="utf-8"
    )
