"""The rule authors' commands: `rules list`, `rules show`, `rules lint`, and `explain`."""

import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

from gdsdoctor.cli.common import existing
from gdsdoctor.cli.options import (
    Budget,
    CauseId,
    Format,
    Gpus,
    Interval,
    Memlock,
    NoConfig,
    Params,
    Preset,
    RulesDirs,
    SaveMode,
    SiteConfig,
    TargetPath,
)
from gdsdoctor.errors import UserError, did_you_mean

DataFormat = Annotated[
    Literal["text", "json"],
    typer.Option("--format", "-f", metavar="FORMAT", show_default=False, help="text or json (default text)."),
]

# `rules lint` found problems in the rules it read: 1, as linters report findings to CI; a path
# that does not exist or a usage error is still 3 (UNKNOWN: nothing could be linted).
LINT_PROBLEMS_EXIT = 1


def rules_list(fmt: Format = "text", rules_dir: RulesDirs = None) -> int:
    """List the causes of the diagnostic matrix (one line each when stdout is not a terminal)."""
    from gdsdoctor.commands.catalogue import render_catalogue
    from gdsdoctor.pipeline import rules
    from gdsdoctor.textwidth import width_was_asked

    piped = fmt == "text" and not width_was_asked()  # `| grep` must return whole rows, never title fragments
    sys.stdout.write(render_catalogue(rules(rules_dir or []), fmt, one_line_each=piped))
    return 0


def rules_show(cause_id: CauseId, rules_dir: RulesDirs = None, fmt: DataFormat = "text") -> int:
    """Show one cause in full."""
    from gdsdoctor.commands.catalogue import cause_record, render_cause
    from gdsdoctor.pipeline import rules

    causes = rules(rules_dir or [])
    found = [c for c in causes if c.id == cause_id]
    if not found:
        hint = did_you_mean(cause_id, (c.id for c in causes))
        raise UserError(f"no cause with id {cause_id!r}{hint}; `gdsdoctor rules list` shows them")
    if fmt == "json":
        import json

        print(json.dumps(cause_record(found[0]), indent=2))
    else:
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


def explain(
    cause_id: CauseId,
    inputs: Annotated[
        list[Path] | None,
        typer.Argument(metavar="[INPUT]...", help="Bundle or pasted files; none: this host."),
    ] = None,
    rules_dir: RulesDirs = None,
    path: TargetPath = None,
    read_only: Annotated[
        bool,
        typer.Option(
            "--read-only",
            help="Of the cause's commands, print only those that change nothing (and verify), "
            "filled with the values found.",
        ),
    ] = False,
    params: Params = None,
    preset: Preset = None,
    interval: Interval = None,
    budget: Budget = None,
    gpus: Gpus = None,
    save: SaveMode = None,
    memlock: Memlock = None,
    site_config: SiteConfig = None,
    no_config: NoConfig = False,
    fmt: DataFormat = "text",
) -> int:
    """Show which facts a cause needs, their values here, which signals held, and its commands."""
    from gdsdoctor.cli.diagnose import job_of, site_config_of
    from gdsdoctor.commands.explain import explain_cause

    config = site_config_of(site_config, no_config)
    job = job_of(params, preset, interval, budget, gpus, config, save, memlock)
    found = existing(inputs or [])
    text = explain_cause(cause_id, found, rules_dir or [], path, read_only, job, config, fmt)
    sys.stdout.write(text)
    return 0
