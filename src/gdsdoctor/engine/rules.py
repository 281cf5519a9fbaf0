"""Load and check the diagnostic matrix: YAML rule files validated against a JSON Schema.

A rule file holds causes; each cause fires on signals (JMESPath conditions with a
certainty). ``lint`` reports schema and semantic problems with file and line, so that
``gdsdoctor rules lint`` and an editor with the schema agree.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from jmespath.exceptions import IncompleteExpressionError, JMESPathError, LexerError

from gdsdoctor.engine.functions import compile_expression
from gdsdoctor.patterns import lazy_compile

if TYPE_CHECKING:
    import yaml

Location = tuple[str | int, ...]
PLACEHOLDER = lazy_compile(r"\{([a-z_][a-z0-9_]*)\}")  # {name} in says and remediation


class Signal(NamedTuple):
    id: str
    when: str
    certainty: float
    says: str
    evidence: str | None = None
    boost: bool = False  # context: adds certainty only when a non-boost signal holds


class Cause(NamedTuple):
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
    remediation: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    explains: tuple[str, ...] = ()
    collect: str = ""
    file: str = ""
    line: int = 0


class LintIssue(NamedTuple):
    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


class RuleError(ValueError):
    """The rules cannot be loaded (the issues say where and why)."""

    def __init__(self, issues: Sequence[LintIssue]) -> None:
        super().__init__("; ".join(str(i) for i in issues[:5]) + (" …" if len(issues) > 5 else ""))
        self.issues = list(issues)


def builtin_rules_dir() -> Path:
    """Rules ship inside the wheel (gdsdoctor/rules) and sit at the repo root in a checkout."""
    packaged = Path(str(resources.files("gdsdoctor"))) / "rules"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[3] / "rules"


@cache
def schema() -> dict[str, Any]:
    text = resources.files("gdsdoctor").joinpath("schemas/rules.schema.json").read_text()
    return json.loads(text)


def rule_files(paths: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*.y*ml") if p.suffix in (".yaml", ".yml")))
        else:
            files.append(path)
    return files


def load_rules(extra_dirs: Sequence[Path] = (), known_sections: Iterable[str] = ()) -> list[Cause]:
    """The built-in matrix plus site rule directories; raises RuleError on any lint issue.

    Site rules are validated against the JSON Schema; the built-in ones are not validated again
    at every run (``rules lint`` checks them in the test suite), because jsonschema is the
    slowest import of an analysis. Built-in rules come from the pre-parsed pack while it matches
    the rule files (see rules_pack); semantic checks run on everything parsed.
    """
    from gdsdoctor.engine.rules_pack import read_pack  # it builds on this module

    builtin = builtin_rules_dir()
    packed = read_pack(builtin, rule_files([builtin]))
    paths = [*extra_dirs] if packed is not None else [builtin, *extra_dirs]
    causes, issues = lint_paths(paths, known_sections, schema_exempt=(builtin,), loaded=packed or ())
    if issues:
        raise RuleError(issues)
    return causes


def lint_paths(
    paths: Sequence[Path],
    known_sections: Iterable[str] = (),
    schema_exempt: Sequence[Path] = (),
    loaded: Sequence[Cause] = (),
) -> tuple[list[Cause], list[LintIssue]]:
    """Load and lint the rule files under ``paths``, cross-checked with causes ``loaded`` before."""
    causes: list[Cause] = list(loaded)
    issues: list[LintIssue] = []
    for file in rule_files(paths):
        trusted = any(file.is_relative_to(directory) for directory in schema_exempt)
        file_causes, file_issues = _load_file(file, validate=not trusted)
        causes.extend(file_causes)
        issues.extend(file_issues)
    issues.extend(_cross_checks(causes, set(known_sections)))
    return causes, issues


def _load_file(file: Path, validate: bool = True) -> tuple[list[Cause], list[LintIssue]]:
    import yaml  # not needed when the built-in rules come from the pack

    name = str(file)
    try:
        node, document = _parse_yaml(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        return [], [LintIssue(name, 0, f"cannot read: {error}")]
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        return [], [
            LintIssue(name, mark.line + 1 if mark else 0, f"YAML error: {getattr(error, 'problem', error)}")
        ]
    lines = _line_map(node)
    schema_issues = _schema_issues(name, document, lines) if validate else []
    if schema_issues:
        return [], schema_issues
    causes = [_cause(raw, name, lines.get(("causes", i), 0)) for i, raw in enumerate(document["causes"])]
    issues = [issue for i, cause in enumerate(causes) for issue in _cause_checks(cause, lines, ("causes", i))]
    return causes, issues


def _parse_yaml(text: str) -> tuple[yaml.Node | None, Any]:
    """Parse once: the node tree (for line numbers) and the document built from it."""
    import yaml

    # libyaml when present: the pure-Python loader costs ~30x more.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    finally:
        loader.dispose()


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
        return f"invalid JMESPath ({reason}): {expression}"
    return f"invalid JMESPath ({reason}, column {position + 1}):\n    {expression}\n    {' ' * position}^"


def _cause(raw: dict[str, Any], file: str, line: int) -> Cause:
    requires = tuple(r if isinstance(r, str) else tuple(r["any_of"]) for r in raw["requires"])
    signals = tuple(
        Signal(s["id"], s["when"], float(s["certainty"]), s["says"], s.get("evidence"), bool(s.get("boost")))
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
        remediation=tuple(raw.get("remediation", ())),
        references=tuple(raw.get("references", ())),
        explains=tuple(raw.get("explains", ())),
        collect=raw.get("collect", ""),
        file=file,
        line=line,
    )


def cause_expressions(cause: Cause) -> list[tuple[Location, str]]:
    """Every JMESPath expression of a cause, with where it sits in the cause."""
    expressions: list[tuple[Location, str]] = []
    if cause.applies_when:
        expressions.append((("applies_when",), cause.applies_when))
    if cause.severity_at_most:
        expressions.append((("severity_at_most",), cause.severity_at_most))
    for i, signal in enumerate(cause.signals):
        expressions.append((("signals", i, "when"), signal.when))
        if signal.evidence:
            expressions.append((("signals", i, "evidence"), signal.evidence))
    expressions += [(("vars", k), v) for k, v in cause.vars.items()]
    return expressions


def _cause_checks(cause: Cause, lines: dict[Location, int], at: Location) -> list[LintIssue]:
    issues: list[LintIssue] = []

    def issue(where: Location, message: str) -> None:
        issues.append(LintIssue(cause.file, _nearest_line(lines, at + where), f"{cause.id}: {message}"))

    for where, expression in cause_expressions(cause):
        try:
            compile_expression(expression)
        except JMESPathError as error:
            issue(where, jmespath_problem(expression, error))
    if not any(s.certainty > 0 and not s.boost for s in cause.signals):
        issue(("signals",), "no signal with a positive certainty: the cause could never fire")
    seen: set[str] = set()
    for i, signal in enumerate(cause.signals):
        if signal.id in seen:
            issue(("signals", i, "id"), f"duplicate signal id {signal.id!r}")
        seen.add(signal.id)
    templates: list[tuple[Location, str]] = [(("remediation", i), t) for i, t in enumerate(cause.remediation)]
    templates += [(("signals", i, "says"), s.says) for i, s in enumerate(cause.signals)]
    reported: set[str] = set()
    for where, template in templates:  # each unknown placeholder once, where it first appears
        for name in PLACEHOLDER.findall(template):
            if name not in cause.vars and name not in reported:
                reported.add(name)
                issue(where, f"placeholder {{{name}}} has no entry in vars")
    return issues


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
                    f"duplicate cause id {cause.id!r} (first at {first.file}:{first.line})",
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
