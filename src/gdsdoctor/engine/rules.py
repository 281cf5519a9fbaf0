"""Load and check the diagnostic matrix: YAML rule files validated against a JSON Schema.

A rule file holds causes; each cause fires on signals (JMESPath conditions with a
certainty), and may hold the differential's symptoms (engine/symptoms.py parses and lints them;
here they are loaded with the causes, since every candidate must name a cause loaded).
``lint`` reports schema and semantic problems with file and line, so that ``gdsdoctor rules
lint`` and an editor with the schema agree.

Longer than 600 lines: loading, the wheel's built form and the lint of one rule set share
their line maps and records; split, each half would import the other's private helpers.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jmespath.exceptions import IncompleteExpressionError, JMESPathError, LexerError

from gdsdoctor.config_files import YamlAliasError, parse_yaml, read_config_text
from gdsdoctor.engine.command_shape import NEEDS_NOTE, Step, command_issues
from gdsdoctor.engine.functions import compile_expression, expression_problems
from gdsdoctor.engine.symptoms import (
    Symptom,
    symptom_expressions,
    symptom_from_record,
    symptom_problems,
    symptoms_of,
)
from gdsdoctor.errors import UserError
from gdsdoctor.facts.derived.aliases import OLD_TO_NEW
from gdsdoctor.patterns import lazy_compile

if TYPE_CHECKING:
    import yaml

__all__ = ["Cause", "LintIssue", "RuleError", "Signal", "Step"]  # Step: defined beside the command lint

Location = tuple[str | int, ...]
# {name} in says and remediation; {{name}} is the literal text {name} (a udev rule's ATTR{iopolicy}).
PLACEHOLDER = lazy_compile(r"(?<!\{)\{([a-z_][a-z0-9_]*)\}(?!\})")
ESCAPED_BRACES = lazy_compile(r"\{\{([a-z_][a-z0-9_]*)\}\}")


def fill(template: str, value: Callable[[re.Match[str]], str]) -> str:
    """``template`` with each {name} replaced by ``value(match)`` and each {{name}} by {name}."""
    return ESCAPED_BRACES.sub(r"{\1}", PLACEHOLDER.sub(value, template))


# A derived fact name in an expression (``derived.storage_free``; not ``x.derived.y``), to rewrite old ones.
OLD_FACT_NAME = lazy_compile(r"(?<![\w.])derived\.[a-z0-9_]+(?![\w])")
CHECK_REFERENCE = lazy_compile(r"\{check\.([A-Za-z0-9_]*)\}")  # a named check of the file, in an expression
# The installed package: a directory (gdsdoctor is not run from a zip), where importlib.resources
# would add ~6 ms of imports to every check for nothing.
PACKAGE_DIR = Path(__file__).resolve().parents[1]
BUILT_RULES = "rules.json"  # beside the package in a wheel only (hatch_build.py writes it)


@dataclass(frozen=True, slots=True)
class Signal:
    id: str
    when: str
    certainty: float
    says: str
    evidence: str | None = None
    boost: bool = False  # context: adds certainty only when a non-boost signal holds
    # holds on its own data: may fire the cause while a required section is missing (a symptom
    # seen in a pasted log), where the other signals would leave it inconclusive
    stands_alone: bool = False
    uses: tuple[str, ...] = ()  # capabilities it is about: left out where the node uses none of them


@dataclass(frozen=True, slots=True)
class Cause:
    id: str
    title: str
    category: str
    severity: str
    explanation: str
    requires: tuple[str | tuple[str, ...], ...]
    signals: tuple[Signal, ...]
    vars: dict[str, str]  # placeholder -> expression, for the remediation commands
    applies_when: str | None = None
    # An expression giving the highest severity the evidence allows ("warning", "info") or null
    # for no cap: e.g. I/O errors only on a loop device or a boot disk (engine/evaluate.py).
    severity_at_most: str | None = None
    min_certainty: float = 0.2
    fix: str = ""
    remediation: tuple[Step, ...] = ()
    verify: tuple[str, ...] = ()  # read commands that show the fix took, printed after it
    references: tuple[str, ...] = ()
    explains: tuple[str, ...] = ()
    collect: str = ""
    # docs/rules.md "Status": capabilities (not applicable where unused), scope, and its expression
    uses: tuple[str, ...] = ()
    scope: str = "node"
    scope_from: str | None = None
    file: str = ""
    line: int = 0


@dataclass(frozen=True, slots=True, order=True)
class LintIssue:
    file: str
    line: int
    message: str
    warning: bool = False  # still loads (e.g. an old fact name); an error stops the rules loading

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {'warning: ' if self.warning else ''}{self.message}"


class RuleError(UserError, ValueError):
    """The rules cannot be loaded (the issues say where and why)."""

    def __init__(self, issues: Sequence[LintIssue]) -> None:
        super().__init__("; ".join(str(i) for i in issues[:5]) + (" …" if len(issues) > 5 else ""))
        self.issues = list(issues)


def builtin_rules_dir() -> Path:
    """Rules ship inside the wheel (gdsdoctor/rules) and sit at the repo root in a checkout."""
    packaged = PACKAGE_DIR / "rules"
    if packaged.is_dir():
        return packaged
    return PACKAGE_DIR.parents[1] / "rules"


@cache
def schema() -> dict[str, Any]:
    text = (PACKAGE_DIR / "schemas" / "rules.schema.json").read_text()
    return json.loads(text)


def rule_files(paths: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*.y*ml") if p.suffix in (".yaml", ".yml")))
        else:
            files.append(path)
    return files


@dataclass(frozen=True, slots=True)
class RuleSet:
    """What the rule files hold: the causes and the differential's symptom table."""

    causes: list[Cause]
    symptoms: list[Symptom]
    issues: list[LintIssue]


def load_rules(extra_dirs: Sequence[Path] = (), known_sections: Iterable[str] = ()) -> list[Cause]:
    """The causes of ``load_rule_set``."""
    return load_rule_set(extra_dirs, known_sections).causes


def load_rule_set(extra_dirs: Sequence[Path] = (), known_sections: Iterable[str] = ()) -> RuleSet:
    """The built-in matrix plus site rule directories; raises RuleError on any lint issue.

    An installed wheel carries the built-in rules parsed, linted and compiled at build time
    (``gdsdoctor/rules.json``, see hatch_build.py); a source checkout or an editable install
    parses the YAML under ``rules/``, so an edited rule counts at once. The built-in files are
    not validated against the JSON Schema at every run (``rules lint`` does, in the test suite):
    jsonschema is the slowest import of an analysis. Site rules are always validated.
    """
    builtin = builtin_rules_dir()
    built = built_rules(builtin)
    if built is None:
        found = lint_rule_set([builtin, *extra_dirs], known_sections, schema_exempt=(builtin,))
    else:
        found = lint_rule_set(extra_dirs, known_sections, loaded=built)
    errors = [issue for issue in found.issues if not issue.warning]
    if errors:
        raise RuleError(errors)
    return found


def built_rules(rules_dir: Path) -> RuleSet | None:
    """The built-in causes and symptoms from ``gdsdoctor/rules.json`` when this is an installed
    wheel that has it (None otherwise: the caller parses the YAML), their expressions compiled
    from its trees."""
    try:
        document = json.loads((PACKAGE_DIR / BUILT_RULES).read_bytes())
        symptoms = [symptom_from_record(record, str(rules_dir)) for record in document["symptoms"]]
        return RuleSet(causes_from_document(document, rules_dir), symptoms, [])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # no built rules (a source checkout), or a damaged file: parse the YAML


def causes_from_document(document: dict[str, Any], rules_dir: Path) -> list[Cause]:
    """The causes of a ``rules_document``, their expressions compiled from its syntax trees."""
    causes = [_cause_from_record(record, str(rules_dir)) for record in document["causes"]]
    for expression, tree in document["trees"].items():
        compile_expression(expression, tree)
    return causes


def rules_document(
    rules_dir: Path, causes: Sequence[Cause], symptoms: Sequence[Symptom] = ()
) -> dict[str, Any]:
    """What ``built_rules`` reads: each cause and symptom as loaded from the YAML under
    ``rules_dir`` (lint clean), and the syntax tree of every expression."""
    expressions = {e for cause in causes for _, e in cause_expressions(cause)}
    expressions |= {e for symptom in symptoms for e in symptom_expressions(symptom)}
    records, table = [], []
    for item, into in [*((c, records) for c in causes), *((s, table) for s in symptoms)]:
        record = asdict(item)
        record["file"] = Path(item.file).relative_to(rules_dir).as_posix()
        into.append(record)
    trees = {e: compile_expression(e).parsed for e in sorted(expressions)}
    return {"causes": records, "symptoms": table, "trees": trees}


def _cause_from_record(record: dict[str, Any], rules_dir: str) -> Cause:
    fields = dict(record)
    fields["file"] = os.path.join(rules_dir, record["file"])  # a str join: Path costs 10 us a cause
    fields["signals"] = tuple(
        Signal(**{**signal, "uses": tuple(signal.get("uses", ()))}) for signal in record["signals"]
    )
    fields["requires"] = tuple(r if isinstance(r, str) else tuple(r) for r in record["requires"])
    fields["remediation"] = tuple(Step(**step) for step in record["remediation"])
    for name in ("verify", "references", "explains", "uses"):
        fields[name] = tuple(record[name])
    return Cause(**fields)


def lint_paths(
    paths: Sequence[Path],
    known_sections: Iterable[str] = (),
    schema_exempt: Sequence[Path] = (),
    loaded: Sequence[Cause] = (),
) -> tuple[list[Cause], list[LintIssue]]:
    """Load and lint the rule files under ``paths``, cross-checked with causes ``loaded`` before."""
    found = lint_rule_set(paths, known_sections, schema_exempt, RuleSet(list(loaded), [], []))
    return found.causes, found.issues


def lint_rule_set(
    paths: Sequence[Path],
    known_sections: Iterable[str] = (),
    schema_exempt: Sequence[Path] = (),
    loaded: RuleSet | None = None,
) -> RuleSet:
    """``lint_paths`` with the symptom tables too: every candidate must be a cause loaded."""
    causes: list[Cause] = list(loaded.causes) if loaded else []
    symptoms: list[Symptom] = list(loaded.symptoms) if loaded else []
    issues: list[LintIssue] = []
    for file in rule_files(paths):
        trusted = any(file.is_relative_to(directory) for directory in schema_exempt)
        file_causes, file_symptoms, file_issues = _load_file(file, validate=not trusted)
        causes.extend(file_causes)
        symptoms.extend(file_symptoms)
        issues.extend(file_issues)
    issues.extend(_cross_checks(causes, set(known_sections)))
    problems = symptom_problems(symptoms, (c.id for c in causes), set(known_sections))
    issues.extend(LintIssue(file, line, message) for file, line, message in problems)
    return RuleSet(causes, symptoms, issues)


def _load_file(file: Path, validate: bool = True) -> tuple[list[Cause], list[Symptom], list[LintIssue]]:
    import yaml  # not needed when the built-in rules come built into the wheel

    name = str(file)
    try:
        node, document = parse_yaml(read_config_text(file, "rule file"))
    except UserError as error:
        return [], [], [LintIssue(name, 0, str(error).removeprefix(f"{name}: "))]
    except YamlAliasError as error:
        return [], [], [LintIssue(name, error.line, str(error))]
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        return (
            [],
            [],
            [
                LintIssue(
                    name, mark.line + 1 if mark else 0, f"YAML error: {getattr(error, 'problem', error)}"
                )
            ],
        )
    lines = _line_map(node)
    schema_issues = _schema_issues(name, document, lines) if validate else []
    if schema_issues:
        return [], [], schema_issues
    checks = {
        check: OLD_FACT_NAME.sub(lambda m: OLD_TO_NEW.get(m[0], m[0]), body)
        if isinstance(body, str)
        else body
        for check, body in _checks(document).items()
    }
    nested = [
        LintIssue(
            name, _nearest_line(lines, ("checks", check)), f"check {check}: {_unknown_check(inner, checks)}"
        )
        for check, body in checks.items()
        for inner in CHECK_REFERENCE.findall(body)[:1]
    ]
    causes = [
        _cause(_with_checks(raw, checks), name, lines.get(("causes", i), 0))
        for i, raw in enumerate(document.get("causes") or [])
    ]
    issues = [issue for i, c in enumerate(causes) for issue in _cause_checks(c, lines, ("causes", i), checks)]
    symptoms = symptoms_of(document, name, lines)
    return causes, symptoms, _old_names(document, name, lines) + nested + issues


def _with_checks(raw: dict[str, Any], checks: dict[str, str]) -> dict[str, Any]:
    """The cause with every ``{check.NAME}`` in its expressions replaced by the file's check NAME,
    in parentheses so that it reads as one value wherever it stands (a reference to no check of
    the file is left as it is: lint reports it), and every old derived fact name by its new one."""

    def expand(text: str) -> str:
        if "{check." in text:
            text = CHECK_REFERENCE.sub(lambda m: f"({checks[m[1]]})" if _usable(checks, m[1]) else m[0], text)
        return OLD_FACT_NAME.sub(lambda m: OLD_TO_NEW.get(m[0], m[0]), text)

    return _map_expressions(raw, expand)


def _map_expressions(raw: dict[str, Any], change: Callable[[str], str]) -> dict[str, Any]:
    """A copy of the cause as read with ``change`` applied to each of its expressions."""

    def apply(value: Any) -> Any:
        return change(value) if isinstance(value, str) else value

    cause = dict(raw)
    for key in ("applies_when", "severity_at_most", "scope_from"):
        if key in cause:
            cause[key] = apply(cause[key])
    cause["signals"] = [
        {**signal, **{key: apply(signal[key]) for key in ("when", "evidence") if key in signal}}
        for signal in raw["signals"]
    ]
    if "vars" in cause:
        cause["vars"] = {name: apply(expression) for name, expression in cause["vars"].items()}
    return cause


def _old_names(document: dict[str, Any], name: str, lines: dict[Location, int]) -> list[LintIssue]:
    """A warning for each old derived fact name (aliases.py) in the file's expressions."""
    expressions = [(("checks", check), f"check {check}", body) for check, body in _checks(document).items()]
    for i, raw in enumerate(document.get("causes") or []):
        at: Location = ("causes", i)
        where = [((key,), raw.get(key)) for key in ("applies_when", "severity_at_most", "scope_from")]
        where += [
            (("signals", j, key), signal.get(key))
            for j, signal in enumerate(raw["signals"])
            for key in ("when", "evidence")
        ]
        where += [(("vars", var), value) for var, value in (raw.get("vars") or {}).items()]
        expressions += [(at + place, str(raw["id"]), text) for place, text in where if isinstance(text, str)]
    return [
        LintIssue(
            name, _nearest_line(lines, at), f"{who}: {old} is an old name: write {OLD_TO_NEW[old]}", True
        )
        for at, who, text in expressions
        for old in dict.fromkeys(m[0] for m in OLD_FACT_NAME.finditer(text) if m[0] in OLD_TO_NEW)
    ]


def _checks(document: dict[str, Any]) -> dict[str, Any]:
    return document.get("checks") or {}


def _schema_issues(name: str, document: Any, lines: dict[Location, int]) -> list[LintIssue]:
    import jsonschema  # only when validating: the slowest import of a run

    validator = jsonschema.Draft202012Validator(schema())
    return [
        LintIssue(name, _nearest_line(lines, tuple(e.absolute_path)), _schema_message(e))
        for e in sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
    ]


def _schema_message(error: Any) -> str:
    where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
    return f"{where}: {_what_is_wrong(error)}"


def _what_is_wrong(error: Any) -> str:
    """jsonschema's message, made to say what is wrong and what is allowed: the allowed range
    or length, and for alternatives (oneOf/anyOf) why each one does not match."""
    schema, value, kind = error.schema, error.instance, error.validator
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return f"{value!r} is out of range: must be {_range(schema)}"
    if kind in ("minLength", "maxLength"):
        short = kind == "minLength"
        bound = f"{'at least' if short else 'at most'} {error.validator_value} characters"
        return f"{value!r} is too {'short' if short else 'long'}: {bound}"
    if kind == "type" and isinstance(value, str) and "effect" in schema.get("required", ()):
        return _step_written_as_text(value)
    if kind == "type":
        expected = str(error.validator_value)
        return f"{value!r} is not {'an' if expected[:1] in ('a', 'o', 'i') else 'a'} {expected}"
    if kind == "minItems":
        return f"{value!r} has too few items: at least {error.validator_value}"
    if kind == "not" and isinstance(error.validator_value, dict) and "const" in error.validator_value:
        return f"{value!r} is not allowed here: must not be {error.validator_value['const']!r}"
    if kind in ("oneOf", "anyOf") and error.context:
        reasons: dict[int, str] = {}
        for sub in error.context:  # the first reason each alternative gives
            reasons.setdefault(sub.schema_path[0], _what_is_wrong(sub))
        return f"matches none of the allowed forms: {'; or '.join(reasons.values())}"
    return str(error.message)


def _step_written_as_text(command: str) -> str:
    """A remediation command written as a bare string: say that its effect is required, and how
    the command is written with one (the effects and what each means are the schema's)."""
    effects = schema()["$defs"]["step"]["properties"]["effect"]["enum"]
    quoted = command.replace('"', '\\"')
    return (
        f"{command!r} is a plain string, but a remediation command must say what running it does "
        f'to the host: write {{cmd: "{quoted}", effect: …}} with effect one of {", ".join(effects)} '
        f"(a note is required for {', '.join(NEEDS_NOTE[:-1])} and {NEEDS_NOTE[-1]}: what to do first)"
    )


def _range(schema: dict[str, Any]) -> str:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    opening = "(" if "exclusiveMinimum" in schema else "["
    closing = ")" if "exclusiveMaximum" in schema else "]"
    if low is not None and high is not None:
        text = f"in {opening}{low}, {high}{closing}"
    elif low is not None:
        text = f"{'>' if opening == '(' else '≥'} {low}"
    else:
        text = f"{'<' if closing == ')' else '≤'} {high}"
    excluded = (schema.get("not") or {}).get("const")
    return text + (f", not {excluded}" if excluded is not None else "")


def jmespath_problem(expression: str, error: JMESPathError) -> str:
    """What is wrong with an expression, with the expression and a caret under the place
    (jmespath's own message stops at "Incomplete expression:" on the first line)."""
    position = getattr(error, "lex_position", None)
    if isinstance(error, IncompleteExpressionError):
        reason = "the expression ends too early"
    elif isinstance(error, LexerError):
        reason = str(getattr(error, "message", "") or "unknown character")
    elif getattr(error, "token_value", None) is not None:
        reason = f"unexpected {error.token_value!r}"
    else:
        reason = str(error).splitlines()[0]
    if not isinstance(position, int) or not 0 <= position <= len(expression):
        shown = expression if len(expression) <= 200 else f"{expression[:200]}… ({len(expression)} chars)"
        return f"invalid JMESPath ({reason}): {shown}"
    return f"invalid JMESPath ({reason}, column {position + 1}):\n    {expression}\n    {' ' * position}^"


def _cause(raw: dict[str, Any], file: str, line: int) -> Cause:
    requires = tuple(r if isinstance(r, str) else tuple(r["any_of"]) for r in raw["requires"])
    signals = tuple(
        Signal(
            s["id"],
            s["when"],
            float(s["certainty"]),
            s["says"],
            s.get("evidence", s["when"]) or None,  # the lines the condition finds; false: none
            bool(s.get("boost")),
            bool(s.get("stands_alone")),
            tuple(s.get("uses", ())),
        )
        for s in raw["signals"]
    )
    return Cause(
        id=raw["id"],
        title=raw["title"],
        category=raw["category"],
        severity=raw["severity"],
        explanation=raw["explanation"].strip(),
        requires=requires,
        signals=signals,
        applies_when=raw.get("applies_when"),
        severity_at_most=raw.get("severity_at_most"),
        min_certainty=float(raw.get("min_certainty", 0.2)),
        vars=dict(raw.get("vars", {})),
        fix=raw.get("fix", "").strip(),
        remediation=tuple(_step(item) for item in raw.get("remediation", ())),
        verify=tuple(raw.get("verify", ())),
        references=tuple(raw.get("references", ())),
        explains=tuple(raw.get("explains", ())),
        collect=raw.get("collect", ""),
        uses=tuple(raw.get("uses", ())),
        scope=raw.get("scope", "node"),
        scope_from=raw.get("scope_from"),
        file=file,
        line=line,
    )


def _step(item: Any) -> Step:
    """A remediation item; a plain string (refused by the schema) keeps no effect, so that the
    semantic lint, which also runs where the schema is not checked, says so."""
    if isinstance(item, dict):
        return Step(str(item.get("cmd", "")), str(item.get("effect", "")), str(item.get("note", "")).strip())
    return Step(str(item), "")


def cause_expressions(cause: Cause) -> list[tuple[Location, str]]:
    """Every JMESPath expression of a cause, with where it sits in the cause."""
    expressions: list[tuple[Location, str]] = []
    if cause.applies_when:
        expressions.append((("applies_when",), cause.applies_when))
    if cause.severity_at_most:
        expressions.append((("severity_at_most",), cause.severity_at_most))
    if cause.scope_from:
        expressions.append((("scope_from",), cause.scope_from))
    for i, signal in enumerate(cause.signals):
        expressions.append((("signals", i, "when"), signal.when))
        if signal.evidence and signal.evidence != signal.when:  # by default it is the when
            expressions.append((("signals", i, "evidence"), signal.evidence))
    expressions += [(("vars", k), v) for k, v in cause.vars.items()]
    return expressions


def _cause_checks(
    cause: Cause, lines: dict[Location, int], at: Location, checks: dict[str, str]
) -> list[LintIssue]:
    issues: list[LintIssue] = []

    def issue(where: Location, message: str) -> None:
        issues.append(LintIssue(cause.file, _nearest_line(lines, at + where), f"{cause.id}: {message}"))

    for where, expression in cause_expressions(cause):
        unknown = CHECK_REFERENCE.findall(expression)
        if unknown:  # a check that uses another one is reported where it is defined
            if unknown[0] not in checks:
                issue(where, _unknown_check(unknown[0], checks))
            continue
        try:
            compiled = compile_expression(expression)
        except JMESPathError as error:
            issue(where, jmespath_problem(expression, error))
            continue
        for problem in expression_problems(compiled):
            issue(where, problem)
    for i, signal in enumerate(cause.signals):  # .nan passes every range check of the schema
        if not math.isfinite(signal.certainty):
            issue(("signals", i, "certainty"), f"certainty {signal.certainty} is not a number")
    if not math.isfinite(cause.min_certainty):
        issue(("min_certainty",), f"min_certainty {cause.min_certainty} is not a number")
    if not any(s.certainty > 0 and not s.boost for s in cause.signals):
        issue(("signals",), "no signal with a positive certainty: the cause could never fire")
    seen: set[str] = set()
    for i, signal in enumerate(cause.signals):
        if signal.id in seen:
            issue(("signals", i, "id"), f"duplicate signal id {signal.id!r}")
        seen.add(signal.id)
        if signal.stands_alone and (signal.certainty <= 0 or signal.boost):
            issue(("signals", i, "stands_alone"), "only a confirming, non-boost signal can stand alone")
    for where, message in command_issues(cause.remediation, cause.verify):
        issue(where, message)
    templates: list[tuple[Location, str]] = [
        (("remediation", i), step.cmd) for i, step in enumerate(cause.remediation)
    ]
    templates += [(("remediation", i, "note"), st.note) for i, st in enumerate(cause.remediation)]
    templates += [(("verify", i), command) for i, command in enumerate(cause.verify)]
    templates += [(("signals", i, "says"), s.says) for i, s in enumerate(cause.signals)]
    reported: set[str] = set()
    for where, template in templates:  # each unknown placeholder once, where it first appears
        for name in PLACEHOLDER.findall(template):
            if name not in cause.vars and name not in reported:
                reported.add(name)
                issue(where, f"placeholder {{{name}}} has no entry in vars")
    return issues


def _usable(checks: dict[str, str], name: str) -> bool:
    body = checks.get(name)
    return isinstance(body, str) and "{check." not in body


def _unknown_check(name: str, checks: dict[str, str]) -> str:
    if name in checks:
        return f"a check cannot use another check ({{check.{name}}})"
    known = ", ".join(sorted(checks)) or "none"
    return f"unknown check {{check.{name}}} (the checks of this file: {known})"


def _cross_checks(causes: Sequence[Cause], known_sections: set[str]) -> list[LintIssue]:
    issues: list[LintIssue] = []
    by_id: dict[str, Cause] = {}
    for cause in causes:
        if cause.id in by_id:
            first = by_id[cause.id]
            issues.append(
                LintIssue(
                    cause.file,
                    cause.line,
                    f"duplicate cause id {cause.id!r} (first at {first.file}:{first.line}); to set a "
                    "built-in cause's findings apart, acknowledge it in the site config (acknowledge:)",
                )
            )
        by_id.setdefault(cause.id, cause)
    for cause in causes:
        for symptom in cause.explains:
            if symptom not in by_id:
                issues.append(
                    LintIssue(cause.file, cause.line, f"{cause.id}: explains unknown cause {symptom!r}")
                )
            elif symptom == cause.id:
                issues.append(LintIssue(cause.file, cause.line, f"{cause.id}: explains itself"))
        if known_sections:
            for requirement in cause.requires:
                for section in (requirement,) if isinstance(requirement, str) else requirement:
                    if section not in known_sections:
                        issues.append(
                            LintIssue(
                                cause.file,
                                cause.line,
                                f"{cause.id}: requires unknown facts section {section!r}",
                            )
                        )
    return issues


def _line_map(node: yaml.Node | None) -> dict[Location, int]:
    """Map each path in the YAML document to its 1-based line, for lint messages."""
    import yaml

    lines: dict[Location, int] = {}

    def walk(current: yaml.Node, path: Location) -> None:
        lines[path] = current.start_mark.line + 1
        if isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                walk(value, (*path, key.value))
                lines[(*path, key.value)] = key.start_mark.line + 1
        elif isinstance(current, yaml.SequenceNode):
            for index, item in enumerate(current.value):
                walk(item, (*path, index))

    if node is not None:
        walk(node, ())
    return lines


def _nearest_line(lines: dict[Location, int], path: Location) -> int:
    while path and path not in lines:
        path = path[:-1]
    return lines.get(path, 1)
