"""The rule engine: certainty combination, applicability, inconclusive, ranking, quoting, lint."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor.engine.evaluate import Outcome, combine, evaluate, render_command
from gdsdoctor.engine.rank import rank
from gdsdoctor.engine.rules import RuleError, lint_paths, load_rules
from gdsdoctor.pipeline import KNOWN_SECTIONS


def test_mycin_combination() -> None:
    assert combine(0.6, 0.5) == pytest.approx(0.8)
    assert combine(0.0, 0.7) == pytest.approx(0.7)
    assert combine(-0.6, -0.5) == pytest.approx(-0.8)
    assert combine(0.8, -0.4) == pytest.approx(0.4 / 0.6)
    assert combine(combine(0.3, 0.3), 0.3) == pytest.approx(1 - 0.7**3)


RULES = """
causes:
  - id: root-cause
    title: the root cause of it all
    category: gds-driver
    severity: critical
    requires: [modules]
    explanation: A root cause that explains the symptom below, for the test.
    signals:
      - {id: a, when: "!contains(modules.names, 'nvidia_fs')", certainty: 0.6, says: "no nvidia_fs", evidence: modules}
      - {id: b, when: "contains(modules.names, 'nvidia')", certainty: 0.5, says: "nvidia is there"}
      - {id: counter, when: "contains(modules.names, 'nvidia_fs_shim')", certainty: -0.9, says: "shim loaded"}
    explains: [symptom]
    vars: {mods: "modules.names"}
    remediation: [{cmd: "lsmod | grep -w {mods}", effect: read}]
  - id: symptom
    title: a symptom of the root cause
    category: gds-config
    severity: critical
    requires: [modules]
    explanation: Fires together with the root cause; must be folded under it.
    signals:
      - {id: s, when: "contains(modules.names, 'nvidia')", certainty: 0.9, says: "symptom"}
  - id: unrelated-warning
    title: an unrelated warning of the test
    category: filesystem
    severity: warning
    requires: [mounts]
    explanation: Fires on its own, ranks after the critical root cause.
    signals:
      - {id: w, when: "mounts.mounts[?fstype=='ext4']", certainty: 0.9, says: "ext4"}
  - id: needs-gdscheck
    title: a cause that needs gdscheck output
    category: gds-config
    severity: warning
    requires: [gdscheck]
    explanation: Must be inconclusive when gdscheck was not collected.
    signals:
      - {id: g, when: "gdscheck", certainty: 0.9, says: "g"}
  - id: gated-off
    title: a cause gated by applies_when
    category: gpu
    severity: warning
    applies_when: "derived.nvidia_present"
    requires: [modules]
    explanation: Not applicable when the facts say there is no NVIDIA stack.
    signals:
      - {id: x, when: "modules", certainty: 0.9, says: "x"}
"""


def _rules(tmp_path: Path) -> list:
    (tmp_path / "r.yaml").write_text(RULES)
    causes, issues = lint_paths([tmp_path], KNOWN_SECTIONS | {"gdscheck"})
    assert issues == []
    return causes


def _facts(modules: list[str], nvidia_present: bool | None) -> dict:
    src = {"artifact": "proc/modules", "line": 1, "text": "nvidia 1 0 - Live"}
    return {
        "modules": {"status": "ok", "names": modules, "by_name": {m: {"src": src} for m in modules}},
        "mounts": {"status": "ok", "mounts": [{"fstype": "ext4", "mountpoint": "/data", "src": src}]},
        "gdscheck": {"status": "not_collected", "detail": "not in this capture"},
        "derived": {"nvidia_present": nvidia_present},
    }


def test_evaluate_outcomes_and_certainty(tmp_path: Path) -> None:
    results = {
        r.cause.id: r
        for r in evaluate(_rules(tmp_path), _facts(["nvidia"], False), {"gdscheck": "`gdscheck -p`"})
    }
    assert results["root-cause"].outcome is Outcome.FIRED
    assert results["root-cause"].certainty == pytest.approx(0.8)
    assert results["needs-gdscheck"].outcome is Outcome.INCONCLUSIVE
    assert results["needs-gdscheck"].missing[0]["collect"] == "`gdscheck -p`"
    assert results["gated-off"].outcome is Outcome.NOT_APPLICABLE
    evidence = results["root-cause"].evidence
    assert evidence[0].text == "no nvidia_fs" and evidence[0].artifact is None
    assert (evidence[1].artifact, evidence[1].line) == ("proc/modules", 1)


def test_unknown_applicability_is_checked_not_skipped(tmp_path: Path) -> None:
    results = {r.cause.id: r for r in evaluate(_rules(tmp_path), _facts(["nvidia"], None), {})}
    assert results["gated-off"].outcome is Outcome.FIRED


def test_counter_evidence_lowers_certainty(tmp_path: Path) -> None:
    results = {
        r.cause.id: r for r in evaluate(_rules(tmp_path), _facts(["nvidia", "nvidia_fs_shim"], False), {})
    }
    assert results["root-cause"].outcome is Outcome.CLEAR
    assert results["root-cause"].certainty < 0


def test_ranking_folds_symptoms_under_cause(tmp_path: Path) -> None:
    ranked = rank(evaluate(_rules(tmp_path), _facts(["nvidia"], False), {}))
    order = [(f.result.cause.id, f.explained_by) for f in ranked]
    assert order == [("root-cause", None), ("symptom", "root-cause"), ("unrelated-warning", None)]
    assert ranked[0].explains == ("symptom",)


def test_remediation_values_are_shell_quoted() -> None:
    assert render_command("modprobe {m}", {"m": "nvidia_fs"}) == ["modprobe nvidia_fs"]
    assert render_command("umount {m}", {"m": "/mnt/a b; rm -rf /"}) == ["umount '/mnt/a b; rm -rf /'"]
    assert render_command("ls {m}", {"m": ["/a", "$(reboot)"]}) == ["ls /a", "ls '$(reboot)'"]
    withheld = render_command("ls {m}", {"m": "/a\x1b[2J"})
    assert withheld[0].startswith("# withheld")
    assert render_command("ls {m}", {"m": None}) == ["ls <m>"]  # not found: a placeholder that cannot run
    assert render_command("ls {m}", {"m": {"a": 1}})[0].startswith("# withheld")


def test_lint_reports_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "causes:\n"
        "  - id: x-cause\n"
        "    title: broken cause\n"
        "    category: not-a-category\n"
        "    severity: critical\n"
        "    requires: [modules]\n"
        "    explanation: an explanation long enough\n"
        "    signals:\n"
        "      - {id: s, when: 'contains(', certainty: 0.5, says: x}\n"
    )
    _, issues = lint_paths([bad], KNOWN_SECTIONS)
    assert len(issues) == 1
    assert issues[0].file == str(bad) and issues[0].line == 4 and "category" in issues[0].message
    bad.write_text(bad.read_text().replace("not-a-category", "gpu"))
    _, issues = lint_paths([bad], KNOWN_SECTIONS)
    assert [(i.line, "invalid JMESPath" in i.message) for i in issues] == [(9, True)]


def test_lint_semantic_cross_checks(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(RULES.replace("explains: [symptom]", "explains: [nonexistent]"))
    (tmp_path / "b.yaml").write_text(
        RULES.split("  - id: symptom")[0].replace("requires: [modules]", "requires: [nope]")
    )
    _, issues = lint_paths([tmp_path], KNOWN_SECTIONS)
    messages = " | ".join(i.message for i in issues)
    assert "explains unknown cause 'nonexistent'" in messages
    assert "duplicate cause id 'root-cause'" in messages
    assert "requires unknown facts section 'nope'" in messages


def test_builtin_rules_lint_clean() -> None:
    # lint_paths validates against the JSON Schema too (load_rules skips that for built-in rules)
    from gdsdoctor.engine.rules import builtin_rules_dir

    causes, issues = lint_paths([builtin_rules_dir()], KNOWN_SECTIONS)
    assert [str(i) for i in issues] == []
    assert len({c.id for c in causes}) == len(causes) == len(load_rules(known_sections=KNOWN_SECTIONS)) > 0


def test_site_rules_dir_loads_beside_builtin(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "site.yaml").write_text(RULES.split("  - id: symptom")[0].replace("explains: [symptom]", ""))
    ids = {c.id for c in load_rules([site], KNOWN_SECTIONS)}
    assert "root-cause" in ids and "nvidia-fs-not-loaded" in ids
    (site / "dup.yaml").write_text(RULES.split("  - id: symptom")[0].replace("explains: [symptom]", ""))
    with pytest.raises(RuleError, match="duplicate cause id"):
        load_rules([site], KNOWN_SECTIONS)


def test_boost_signals_never_fire_a_cause_alone() -> None:
    from gdsdoctor.engine.evaluate import SignalResult, combined_certainty
    from gdsdoctor.engine.rules import Signal

    main = Signal("main", "x", 0.4, "main")
    boost = Signal("ctx", "y", 0.5, "context", boost=True)
    assert combined_certainty([SignalResult(main, False), SignalResult(boost, True)]) == 0.0
    assert combined_certainty([SignalResult(main, True), SignalResult(boost, True)]) == pytest.approx(0.7)


REPO = Path(__file__).resolve().parents[1]


def test_wheel_carries_the_rules_as_the_yaml_loader_reads_them(tmp_path: Path) -> None:
    """The build hook (hatch_build.py) writes gdsdoctor/rules.json into the wheel; it holds the
    causes the YAML gives and compiled syntax trees equal to what jmespath compiles."""
    import json
    import zipfile

    import jmespath
    from hatchling.builders.wheel import WheelBuilder

    from gdsdoctor.engine.rules import builtin_rules_dir, causes_from_document, lint_rule_set, rules_document
    from gdsdoctor.engine.symptoms import symptom_from_record

    (wheel,) = WheelBuilder(str(REPO)).build(directory=str(tmp_path), versions=["standard"])
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        built = json.loads(archive.read("gdsdoctor/rules.json"))
    assert "gdsdoctor/rules/gds-driver.yaml" in names
    rules_dir = builtin_rules_dir()
    found = lint_rule_set([rules_dir], KNOWN_SECTIONS)
    causes = found.causes
    assert found.issues == [] and found.symptoms
    assert built == json.loads(json.dumps(rules_document(rules_dir, causes, found.symptoms)))
    assert causes_from_document(built, rules_dir) == causes
    assert [symptom_from_record(r, str(rules_dir)) for r in built["symptoms"]] == found.symptoms
    expression = causes[0].signals[0].when
    assert built["trees"][expression] == jmespath.compile(expression).parsed
    assert not (REPO / "src" / "gdsdoctor" / "rules.json").exists()  # nothing left in the tree


def test_an_edited_rule_counts_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkout reads the YAML: an edit shows in the next load, with no step in between."""
    import shutil

    from gdsdoctor import pipeline
    from gdsdoctor.engine import rules

    copy = tmp_path / "rules"
    shutil.copytree(rules.builtin_rules_dir(), copy)
    monkeypatch.setattr(rules, "builtin_rules_dir", lambda: copy)
    monkeypatch.setattr(rules, "built_rules", lambda rules_dir: None)  # a checkout has no rules.json
    assert {c.id: c.title for c in pipeline.rules()}[
        "nvidia-fs-not-loaded"
    ] == "nvidia-fs kernel module is not loaded"
    file = copy / "gds-driver.yaml"
    text = file.read_text()
    file.write_text(text.replace("title: nvidia-fs kernel module is not loaded", "title: edited title", 1))
    assert {c.id: c.title for c in pipeline.rules()}["nvidia-fs-not-loaded"] == "edited title"


CHECKED_RULES = """
checks:
  ext4_mounts: "derived.storage.checkpoint_mounts[?fstype=='ext4']"
causes:
  - id: ext4-anywhere
    title: ext4 checkpoint mounts, for the test
    category: filesystem
    severity: warning
    requires: [mounts]
    explanation: A cause whose condition and vars share one named check of the file.
    signals:
      - id: ext4
        when: "{check.ext4_mounts}"
        certainty: 0.6
        says: "ext4 on {mountpoints}"
      - id: not-negated
        when: "!{check.ext4_mounts}"
        certainty: -0.1
        says: no ext4 mount
      - id: quiet
        when: "{check.ext4_mounts}"
        certainty: 0.1
        says: cites nothing
        evidence: false
    vars:
      mountpoints: "{check.ext4_mounts}[].mountpoint"
"""


def _facts_with_mounts(*mounts: tuple[str, str]) -> dict:
    records = [
        {"mountpoint": point, "fstype": fstype, "src": {"artifact": "mounts", "line": n, "text": point}}
        for n, (point, fstype) in enumerate(mounts, 1)
    ]
    return {"mounts": {"status": "ok"}, "derived": {"storage": {"checkpoint_mounts": records}}}


def test_named_checks_and_evidence_default_to_when(tmp_path: Path) -> None:
    (tmp_path / "checks.yaml").write_text(CHECKED_RULES)
    causes, issues = lint_paths([tmp_path], KNOWN_SECTIONS)
    assert issues == []
    (cause,) = causes
    filter_ = "(derived.storage.checkpoint_mounts[?fstype=='ext4'])"
    assert cause.signals[0].when == cause.signals[0].evidence == filter_
    assert cause.signals[1].when == "!" + filter_
    assert cause.signals[2].evidence is None
    assert cause.vars == {"mountpoints": filter_ + "[].mountpoint"}
    facts = _facts_with_mounts(("/ckpt", "ext4"), ("/data", "xfs"), ("/scratch", "ext4"))
    (result,) = evaluate(causes, facts, {})
    assert result.outcome == Outcome.FIRED
    assert [e.text for e in result.evidence] == [
        "ext4 on /ckpt, /scratch",
        "/ckpt",
        "/scratch",
        "cites nothing",
    ]
    (clear,) = evaluate(causes, _facts_with_mounts(("/data", "xfs")), {})
    assert clear.outcome == Outcome.CLEAR and [s.held for s in clear.signals] == [False, True, False]


def test_unknown_or_nested_check_is_a_lint_error(tmp_path: Path) -> None:
    text = CHECKED_RULES.replace('"{check.ext4_mounts}[].mountpoint"', '"{check.ext4_mount}[].mountpoint"')
    text = text.replace('  ext4_mounts: "', '  nested: "{check.ext4_mounts}"\n  ext4_mounts: "')
    text = text.replace('when: "!{check.ext4_mounts}"', 'when: "!{check.nested}"')
    (tmp_path / "checks.yaml").write_text(text)
    _, issues = lint_paths([tmp_path], KNOWN_SECTIONS)
    messages = [str(i).split(": ", 1)[1] for i in issues]
    assert messages == [
        "check nested: a check cannot use another check ({check.ext4_mounts})",
        "ext4-anywhere: unknown check {check.ext4_mount} (the checks of this file: ext4_mounts, nested)",
    ]
    assert [i.line for i in issues] == [3, 27]
    with pytest.raises(RuleError, match="unknown check"):
        load_rules([tmp_path], KNOWN_SECTIONS)


def test_old_fact_names_still_fire_and_lint_names_the_new_one(tmp_path: Path) -> None:
    """A site rule written for the previous release (flat derived names) loads, fires on today's
    facts, and lint warns (without failing) with the new name."""
    from gdsdoctor.facts.derived.aliases import OLD_TO_NEW

    old = CHECKED_RULES.replace("derived.storage.checkpoint_mounts", "derived.storage_checkpoint_mounts")
    old = old.replace(
        'when: "!{check.ext4_mounts}"', "when: \"!(derived.checkpoint_mounts[?fstype=='ext4'])\""
    )
    (tmp_path / "old.yaml").write_text(old)
    _, issues = lint_paths([tmp_path], KNOWN_SECTIONS)
    assert [(i.line, i.warning, i.message) for i in issues] == [
        (
            3,
            True,
            "check ext4_mounts: derived.storage_checkpoint_mounts is an old name: "
            "write derived.storage.checkpoint_mounts",
        ),
        (
            17,
            True,
            "ext4-anywhere: derived.checkpoint_mounts is an old name: write derived.storage.checkpoint_mounts",
        ),
    ]
    assert str(issues[0]).startswith(f"{tmp_path / 'old.yaml'}:3: warning: check ext4_mounts:")
    (cause,) = [c for c in load_rules([tmp_path], KNOWN_SECTIONS) if c.id == "ext4-anywhere"]
    assert "storage_checkpoint_mounts" not in str(cause) and "derived.checkpoint_mounts" not in str(cause)
    (result,) = evaluate([cause], _facts_with_mounts(("/ckpt", "ext4")), {})
    assert result.outcome == Outcome.FIRED and [s.held for s in result.signals] == [True, False, True]
    assert OLD_TO_NEW["derived.storage_checkpoint_mounts"] == "derived.storage.checkpoint_mounts"


def test_built_in_rules_use_no_old_fact_name() -> None:
    from gdsdoctor.engine.rules import builtin_rules_dir

    _, issues = lint_paths([builtin_rules_dir()], KNOWN_SECTIONS)
    assert [str(i) for i in issues if i.warning] == []


STANDS_ALONE = """
causes:
  - id: needs-gdscheck-or-log
    title: a cause a pasted log can show without gdscheck
    category: gds-config
    severity: warning
    requires: [gdscheck]
    explanation: The log's own error fires it; without gdscheck and without the error it is inconclusive.
    signals:
      - {id: from-gdscheck, when: "gdscheck", certainty: 0.9, says: "g"}
      - {id: from-log, when: "mounts.mounts[?fstype=='ext4']", certainty: 0.4, says: "log", stands_alone: true}
      - {id: weak-log, when: "mounts.mounts[?fstype=='xfs']", certainty: 0.1, says: "weak", stands_alone: true}
"""


def _one(tmp_path: Path, rules: str, facts: dict) -> object:
    (tmp_path / "r.yaml").write_text(rules)
    causes, issues = lint_paths([tmp_path], KNOWN_SECTIONS | {"gdscheck"})
    assert issues == []
    return evaluate(causes, facts, {})[0]


def test_a_signal_standing_alone_fires_a_cause_whose_required_section_is_missing(tmp_path: Path) -> None:
    facts = _facts(["nvidia"], True)  # gdscheck not collected, an ext4 mount: the log signal holds
    result = _one(tmp_path, STANDS_ALONE, facts)
    assert result.outcome is Outcome.FIRED and result.certainty == pytest.approx(0.4)
    assert [r.signal.id for r in result.signals] == ["from-log", "weak-log"]  # only these were judged


def test_without_its_symptom_the_cause_stays_inconclusive_never_clear(tmp_path: Path) -> None:
    facts = _facts(["nvidia"], True)
    facts["mounts"]["mounts"][0]["fstype"] = "xfs"  # only the weak signal holds: below min_certainty
    result = _one(tmp_path, STANDS_ALONE, facts)
    assert result.outcome is Outcome.INCONCLUSIVE and result.missing[0]["section"] == "gdscheck"
    facts["mounts"]["mounts"][0]["fstype"] = "nfs"
    assert _one(tmp_path, STANDS_ALONE, facts).outcome is Outcome.INCONCLUSIVE


def test_only_a_confirming_signal_can_stand_alone(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text(STANDS_ALONE.replace("certainty: 0.1", "certainty: -0.3"))
    _, issues = lint_paths([tmp_path], KNOWN_SECTIONS | {"gdscheck"})
    assert [i.message.split(": ", 1)[1] for i in issues] == [
        "only a confirming, non-boost signal can stand alone"
    ]
