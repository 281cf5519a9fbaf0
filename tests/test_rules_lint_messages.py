"""`rules lint` says what is wrong and what is allowed, shows a bad expression with a caret, and
points a placeholder error at the line that uses it (issue 12, "the first ten minutes")."""

from __future__ import annotations

from pathlib import Path

from gdsdoctor.engine.rules import lint_paths
from gdsdoctor.pipeline import KNOWN_SECTIONS

RULE = """\
causes:
  - id: bad-one
    title: a rule with mistakes
    category: gpu
    severity: warning
    requires: [modules, {any: [mounts]}]
    explanation: tiny
    min_certainty: 0
    signals:
      - {id: s1, when: "modules", certainty: 1.5, says: s}
"""

EXPRESSIONS = """\
causes:
  - id: bad-two
    title: a rule with bad expressions
    category: gpu
    severity: warning
    requires: [modules]
    explanation: Expressions that do not parse, and a placeholder without a var.
    signals:
      - id: s1
        when: "modules.names[?"
        certainty: 0.5
        says: fine
      - id: s2
        when: "modules.names[?a ==]"
        certainty: 0.5
        says: "uses {missing_var}"
"""


def _messages(tmp_path: Path, text: str) -> dict[int, str]:
    (tmp_path / "r.yaml").write_text(text)
    _, issues = lint_paths([tmp_path], KNOWN_SECTIONS)
    return {issue.line: issue.message for issue in issues}


def test_schema_problems_say_what_is_wrong_and_what_is_allowed(tmp_path: Path) -> None:
    messages = _messages(tmp_path, RULE)
    assert messages[6] == (
        "causes/0/requires/1: matches none of the allowed forms: {'any': ['mounts']} is not a string; "
        "or Additional properties are not allowed ('any' was unexpected)"
    )
    assert messages[7] == "causes/0/explanation: 'tiny' is too short: at least 20 characters"
    assert messages[8] == "causes/0/min_certainty: 0 is out of range: must be in (0, 1]"
    assert messages[10] == "causes/0/signals/0/certainty: 1.5 is out of range: must be in [-1, 1], not 0"
    assert not any("is not valid under any of the given schemas" in m for m in messages.values())


def test_jmespath_errors_show_the_expression_and_a_caret(tmp_path: Path) -> None:
    messages = _messages(tmp_path, EXPRESSIONS)
    assert messages[10].splitlines() == [
        "bad-two: invalid JMESPath (the expression ends too early, column 16):",
        "    modules.names[?",
        "                   ^",
    ]
    assert messages[14].splitlines() == [
        "bad-two: invalid JMESPath (unexpected ']', column 20):",
        "    modules.names[?a ==]",
        "                       ^",
    ]


def test_placeholder_error_points_at_the_line_using_it(tmp_path: Path) -> None:
    messages = _messages(tmp_path, EXPRESSIONS)
    assert messages[16] == "bad-two: placeholder {missing_var} has no entry in vars"
    assert 2 not in messages  # not the id line


def test_an_expression_nested_thousands_deep_is_a_lint_problem_not_a_recursion_error(tmp_path: Path) -> None:
    """jmespath's parser recurses once per nesting level: a site rule of 3,000 parentheses ended
    in "internal error: RecursionError". It is one lint problem (exit 1), its expression cut."""
    deep = "(" * 3000 + "dmesg" + ")" * 3000
    rule = tmp_path / "deep.yaml"
    rule.write_text(
        "description: a hostile rule file\ncauses:\n  - id: site-deep-nesting\n"
        "    title: a site rule with a deeply nested expression\n    category: gpu\n    severity: info\n"
        "    requires: [dmesg]\n    explanation: an expression nested thousands of levels deep\n"
        f'    signals:\n      - id: deep\n        when: "{deep}"\n        certainty: 0.5\n        says: deep\n'
        "    fix: nothing to fix\n    remediation: []\n"
    )
    _, issues = lint_paths([rule], KNOWN_SECTIONS)
    problems = [issue.message for issue in issues if "nested too deeply" in issue.message]
    assert len(problems) == 1 and len(problems[0]) < 400, [issue.message[:200] for issue in issues]


def test_a_remediation_command_written_as_text_is_told_to_state_its_effect(tmp_path: Path) -> None:
    """`- umount /mnt/x` said only "is not an object": the author learns that an effect is
    required and how the command is written with one."""
    rule = RULE.replace("explanation: tiny", "explanation: a cause whose remedy is plain text")
    rule += '    remediation:\n      - umount /mnt/ckpt\n      - {cmd: "findmnt /mnt/ckpt", effect: read}\n'
    messages = [m for m in _messages(tmp_path, rule).values() if "remediation/0" in m]
    assert messages == [
        "causes/0/remediation/0: 'umount /mnt/ckpt' is a plain string, but a remediation command must say "
        'what running it does to the host: write {cmd: "umount /mnt/ckpt", effect: …} with effect one of '
        "read, live, persistent, disruptive, reboot, destroys-data (a note is required for disruptive, "
        "reboot and destroys-data: what to do first)"
    ]


NEGATED = """\
causes:
  - id: negated-path
    title: a negation before a path
    category: gpu
    severity: warning
    requires: [modules]
    explanation: JMESPath reads !a.b as (!a).b, which is null whatever the facts.
    signals:
      - {id: s1, when: "modules.names && !derived.gds.compat_in_use", certainty: 0.5, says: s}
      - {id: s2, when: "modules.names[?!name.x]", certainty: 0.5, says: s}
      - {id: s3, when: "modules.names && !(derived.gds.compat_in_use) && !modules", certainty: 0.5, says: s}
"""


def test_a_negation_before_a_path_is_a_lint_problem(tmp_path: Path) -> None:
    problems = list(_messages(tmp_path, NEGATED).values())
    negated = [m for m in problems if "(!a).b" in m]
    assert len(negated) == 2, problems  # s1 and s2; s3's parenthesised and bare forms are right
