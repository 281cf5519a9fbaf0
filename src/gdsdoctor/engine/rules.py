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

from jmespath.exceptions import JMESPathError

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
    return f"{where}: {error.message}"


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
            issue(where, f"invalid JMESPath {expression!r}: {str(error).splitlines()[0]}")
    if not any(s.certainty > 0 and not s.boost for s in cause.signals):
        issue(("signals",), "no signal with a positive certainty: the cause could never fire")
    seen: set[str] = set()
    for i, signal in enumerate(cause.signals):
        if signal.id in seen:
            issue(("signals", i, "id"), f"duplicate signal id {signal.id!r}")
        seen.add(signal.id)
    templates = [*cause.remediation, *(s.says for s in cause.signals)]
    for name in sorted({m for t in templates for m in PLACEHOLDER.findall(t)} - set(cause.vars)):
        issue(("remediation",), f"placeholder {{{name}}} has no entry in vars")
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
