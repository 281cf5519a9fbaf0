"""The `rules` commands: list, show and lint the diagnostic rules."""

import sys
from pathlib import Path
from typing import Annotated

import typer

from gdsdoctor.cli.options import CauseId, Format, RulesDirs
from gdsdoctor.errors import UserError, did_you_mean

# `rules lint` found problems in the rules it read: 1, as linters report findings to CI; a path
# that does not exist or a usage error is still 3 (UNKNOWN: nothing could be linted).
LINT_PROBLEMS_EXIT = 1


def rules_list(fmt: Format = "text", rules_dir: RulesDirs = None) -> int:
    """List the causes of the diagnostic matrix."""
    from gdsdoctor.commands.catalogue import render_catalogue
    from gdsdoctor.pipeline import rules

    sys.stdout.write(render_catalogue(rules(rules_dir or []), fmt))
    return 0


def rules_show(cause_id: CauseId, rules_dir: RulesDirs = None) -> int:
    """Show one cause in full."""
    from gdsdoctor.commands.catalogue import render_cause
    from gdsdoctor.pipeline import rules

    causes = rules(rules_dir or [])
    found = [c for c in causes if c.id == cause_id]
    if not found:
        hint = did_you_mean(cause_id, (c.id for c in causes))
        raise UserError(f"no cause with id {cause_id!r}{hint}; `gdsdoctor rules list` shows them")
    sys.stdout.write(render_cause(found[0]))
    return 0


def rules_lint(
    paths: Annotated[
        list[Path] | None, typer.Argument(metavar="[PATH]...", help="Rule files or directories.")
    ] = None,
) -> int:
    """Check rule files against the schema and for semantic errors (file:line: message)."""
    from gdsdoctor.engine.rules import builtin_rules_dir, lint_rule_set
    from gdsdoctor.pipeline import KNOWN_SECTIONS

    targets = paths or [builtin_rules_dir()]
    missing = [p for p in targets if not p.exists()]
    if missing:
        raise UserError(f"{missing[0]}: no such file or directory")
    found = lint_rule_set(targets, KNOWN_SECTIONS)  # causes, and symptoms whose candidates must exist
    causes, issues = found.causes, found.issues
    for issue in issues:
        print(issue)
    problems = [issue for issue in issues if not issue.warning]  # warnings: old fact names, still loaded
    warned = f", {len(issues) - len(problems)} warning(s)" if len(problems) < len(issues) else ""
    symptoms = f", {len(found.symptoms)} symptom(s)" if found.symptoms else ""
    print(f"{len(causes)} cause(s){symptoms}, {len(problems)} problem(s){warned}", file=sys.stderr)
    return LINT_PROBLEMS_EXIT if problems else 0
