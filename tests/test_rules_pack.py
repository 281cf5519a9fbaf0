"""The pre-parsed pack of the built-in rules: current, identical to the YAML, never stale."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jmespath
import pytest

from gdsdoctor.engine import functions, rules_pack
from gdsdoctor.engine.rules import builtin_rules_dir, lint_paths, load_rules, rule_files
from gdsdoctor.pipeline import KNOWN_SECTIONS

REBUILD = "the rules changed: run `python3 scripts/pack_rules.py` and commit the pack"


@pytest.fixture(scope="module")
def parsed() -> list:
    causes, issues = lint_paths([builtin_rules_dir()], KNOWN_SECTIONS)
    assert issues == []
    return causes


def test_shipped_pack_is_current(parsed: list) -> None:
    rules_dir = builtin_rules_dir()
    expected = rules_pack.build_pack(rules_dir, rule_files([rules_dir]), parsed)
    shipped = json.loads(rules_pack.PACK_FILE.read_text())
    assert shipped["digest"] == expected["digest"], REBUILD
    trees = expected.pop("trees")
    assert shipped == json.loads(json.dumps(expected)), REBUILD
    assert rules_pack.trees_file(rules_pack.PACK_FILE).read_text() == trees, REBUILD


def test_pack_gives_the_same_causes_as_the_yaml(parsed: list) -> None:
    rules_dir = builtin_rules_dir()
    packed = rules_pack.read_pack(rules_dir, rule_files([rules_dir]))
    assert packed is not None
    assert packed == parsed
    assert load_rules(known_sections=KNOWN_SECTIONS) == parsed


def test_pack_syntax_trees_are_what_jmespath_compiles() -> None:
    expressions = json.loads(rules_pack.PACK_FILE.read_text())["expressions"]
    lines = rules_pack.trees_file(rules_pack.PACK_FILE).read_text().split("\n")
    assert len(expressions) > 400 and len(lines) == len(expressions)
    for expression, tree in zip(expressions, lines, strict=True):
        assert jmespath.compile(expression).parsed == json.loads(tree), expression
        assert functions.compile_expression(expression).parsed == json.loads(tree)


def copy_rules(tmp_path: Path) -> tuple[Path, Path]:
    rules_dir = tmp_path / "rules"
    shutil.copytree(builtin_rules_dir(), rules_dir)
    pack = tmp_path / "pack.json"
    shutil.copy(rules_pack.PACK_FILE, pack)
    shutil.copy(rules_pack.trees_file(rules_pack.PACK_FILE), rules_pack.trees_file(pack))
    return rules_dir, pack


def test_pack_of_a_copy_still_matches(tmp_path: Path, parsed: list) -> None:
    rules_dir, pack = copy_rules(tmp_path)
    causes = rules_pack.read_pack(rules_dir, rule_files([rules_dir]), pack)
    assert causes is not None and [c.id for c in causes] == [c.id for c in parsed]
    assert all(Path(c.file).parent == rules_dir for c in causes)


@pytest.mark.parametrize(
    "change",
    [
        lambda d: (d / "gds-driver.yaml").write_text(
            (d / "gds-driver.yaml").read_text().replace("0.9", "0.8", 1)
        ),
        lambda d: (d / "gds-driver.yaml").rename(d / "gds-driver-renamed.yaml"),
        lambda d: (d / "extra.yaml").write_text("causes: []\n"),
        lambda d: (d / "capacity.yaml").unlink(),
    ],
    ids=["edited", "renamed", "added", "removed"],
)
def test_a_stale_pack_is_never_used(tmp_path: Path, change) -> None:
    rules_dir, pack = copy_rules(tmp_path)
    change(rules_dir)
    assert rules_pack.read_pack(rules_dir, rule_files([rules_dir]), pack) is None


@pytest.mark.parametrize(
    "content", ["", "{", "[]", '{"format": 1}', '{"format": 99, "digest": "x"}', "\x00\xff"]
)
def test_a_broken_pack_is_ignored(tmp_path: Path, content: str) -> None:
    rules_dir, pack = copy_rules(tmp_path)
    pack.write_text(content)
    assert rules_pack.read_pack(rules_dir, rule_files([rules_dir]), pack) is None


@pytest.mark.parametrize(
    "change",
    [
        lambda text: text.replace('"field"', '"fielt"', 1),  # edited: its CRC no longer matches
        lambda text: text.rsplit("\n", 1)[0],  # a tree short
        lambda text: text + "\n{}",  # a tree too many
        None,  # missing
    ],
    ids=["edited", "short", "long", "missing"],
)
def test_a_pack_whose_trees_file_does_not_match_is_never_used(tmp_path: Path, change) -> None:
    rules_dir, pack = copy_rules(tmp_path)
    trees = rules_pack.trees_file(pack)
    if change is None:
        trees.unlink()
    else:
        trees.write_text(change(trees.read_text()))
    assert rules_pack.read_pack(rules_dir, rule_files([rules_dir]), pack) is None


def test_a_trees_file_of_another_length_is_never_used_even_with_its_crc(tmp_path: Path) -> None:
    """The CRC in the pack catches an edited trees file; the line count catches one written
    for another expression list (its CRC rewritten to match, as a hand edit of both might)."""
    rules_dir, pack = copy_rules(tmp_path)
    trees = rules_pack.trees_file(pack)
    shorter = trees.read_text().rsplit("\n", 1)[0]
    trees.write_text(shorter)
    document = json.loads(pack.read_text())
    document["trees_crc"] = rules_pack._crc(shorter.encode())
    pack.write_text(json.dumps(document))
    assert rules_pack.read_pack(rules_dir, rule_files([rules_dir]), pack) is None


def test_broken_records_behind_a_matching_digest_are_ignored(tmp_path: Path) -> None:
    rules_dir, pack = copy_rules(tmp_path)
    document = json.loads(pack.read_text())
    document["causes"][0] = {"id": "half a cause"}
    pack.write_text(json.dumps(document))
    assert rules_pack.read_pack(rules_dir, rule_files([rules_dir]), pack) is None


def test_a_damaged_syntax_tree_is_compiled_instead() -> None:
    functions.prime_expressions({"zz_pack_test.a": "{not json", "zz_pack_test.b": '"a string"'})
    assert functions.compile_expression("zz_pack_test.a").search({"zz_pack_test": {"a": 1}}) == 1
    assert functions.compile_expression("zz_pack_test.b").search({"zz_pack_test": {"b": 2}}) == 2
