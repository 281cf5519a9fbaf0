"""Command line: thin commands that call the pipeline and pick a renderer.

Exit codes (monitoring-plugin convention): 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN — which
also covers bad input and usage errors: every error is one line on stderr, never a traceback.
"""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import click
import typer

from gdsdoctor import __version__
from gdsdoctor.capture.bundle import BundleError, write_bundle
from gdsdoctor.capture.live import DEFAULT_DEADLINE_S, capture_live
from gdsdoctor.engine.rules import RuleError
from gdsdoctor.model import UserError

UNKNOWN_EXIT = 3

app = typer.Typer(
    name="gdsdoctor",
    help="Diagnose the GPU checkpoint storage path: GPUDirect Storage, NVMe/NVMe-oF, PCIe/NUMA, filesystems.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
rules_app = typer.Typer(help="List, show and lint the diagnostic rules.", no_args_is_help=True)
app.add_typer(rules_app, name="rules")


class Format(StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
RulesDirOpt = Annotated[
    list[Path] | None, typer.Option("--rules-dir", help="Extra (site) rule directory; repeatable.")
]
PathOpt = Annotated[
    str | None, typer.Option("--path", help="Narrow the diagnosis to the checkpoint directory PATH.")
]
HostRootOpt = Annotated[
    Path, typer.Option("--host-root", help="Where the host's / is mounted (e.g. /host in a container).")
]
VerboseOpt = Annotated[
    bool, typer.Option("--verbose", "-v", help="Show every source and inconclusive cause.")
]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gdsdoctor {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """gdsdoctor: what is wrong with this node's checkpoint path, how sure, and how to fix it."""


def _render(report: dict[str, Any], fmt: Format, verbose: bool) -> str:
    if fmt is Format.json:
        from gdsdoctor.report.json_report import render_json

        return render_json(report)
    if fmt is Format.markdown:
        from gdsdoctor.report.markdown import render_markdown

        return render_markdown(report, verbose)
    from gdsdoctor.report.text import render_text

    return render_text(report, color=sys.stdout.isatty(), verbose=verbose)


def _finish(report: dict[str, Any], fmt: Format, verbose: bool) -> None:
    sys.stdout.write(_render(report, fmt, verbose))
    raise typer.Exit(int(report["summary"]["exit_code"]))


@app.command()
def check(
    path: PathOpt = None,
    host_root: HostRootOpt = Path("/"),
    fmt: FormatOpt = Format.text,
    rules_dir: RulesDirOpt = None,
    deadline: Annotated[
        float, typer.Option(help="Global time limit for capture, seconds.")
    ] = DEFAULT_DEADLINE_S,
    verbose: VerboseOpt = False,
) -> None:
    """Diagnose this host (read-only): capture every source, analyse, print ranked findings."""
    from gdsdoctor.pipeline import check as run_check

    _finish(run_check(host_root, path, rules_dir or [], deadline).report, fmt, verbose)


@app.command()
def collect(
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Bundle to write: NAME.tar.gz or a directory.")
    ],
    path: PathOpt = None,
    host_root: HostRootOpt = Path("/"),
    deadline: Annotated[
        float, typer.Option(help="Global time limit for capture, seconds.")
    ] = DEFAULT_DEADLINE_S,
) -> None:
    """Capture this host into a bundle (manifest + raw outputs) for offline analysis."""
    if output.exists() and (output.is_file() or any(output.iterdir())):
        raise UserError(f"{output} already exists; choose a new name")
    capture = capture_live(host_root, path, deadline_s=deadline)
    write_bundle(capture, output)
    ok = sum(1 for a in capture.artifacts.values() if a.status == "ok")
    typer.echo(f"wrote {output}: {len(capture.artifacts)} artifacts, {ok} ok", err=True)


@app.command()
def analyze(
    inputs: Annotated[
        list[Path], typer.Argument(help="A bundle (.tar.gz or directory), or pasted text files.")
    ],
    path: PathOpt = None,
    fmt: FormatOpt = Format.text,
    rules_dir: RulesDirOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Analyse a bundle or text files pasted into a ticket (recognised by content)."""
    from gdsdoctor.pipeline import analyze_paths

    _finish(analyze_paths(inputs, path, rules_dir or []).report, fmt, verbose)


@app.command()
def explain(
    cause_id: Annotated[str, typer.Argument(help="Cause id, as in `gdsdoctor rules list`.")],
    inputs: Annotated[
        list[Path] | None, typer.Argument(help="Bundle or pasted files; none: this host.")
    ] = None,
    rules_dir: RulesDirOpt = None,
) -> None:
    """Show which facts a cause needs, their values here, and which signals held."""
    from gdsdoctor.explain import explain_cause

    typer.echo(explain_cause(cause_id, inputs or [], rules_dir or []), nl=False)


@app.command()
def probes() -> None:
    """List every probe: what it runs or reads, and whether it needs root."""
    from gdsdoctor.explain import probes_table

    typer.echo(probes_table(), nl=False)


@rules_app.command("list")
def rules_list(
    fmt: FormatOpt = Format.text,
    rules_dir: RulesDirOpt = None,
) -> None:
    """List the causes of the diagnostic matrix."""
    from gdsdoctor.catalogue import render_catalogue
    from gdsdoctor.pipeline import rules

    typer.echo(render_catalogue(rules(rules_dir or []), str(fmt)), nl=False)


@rules_app.command("show")
def rules_show(cause_id: str, rules_dir: RulesDirOpt = None) -> None:
    """Show one cause in full."""
    from gdsdoctor.catalogue import render_cause
    from gdsdoctor.pipeline import rules

    found = [c for c in rules(rules_dir or []) if c.id == cause_id]
    if not found:
        raise UserError(f"no cause with id {cause_id!r}; `gdsdoctor rules list` shows them")
    typer.echo(render_cause(found[0]), nl=False)


@rules_app.command("lint")
def rules_lint(
    paths: Annotated[list[Path] | None, typer.Argument(help="Rule files or directories.")] = None,
) -> None:
    """Check rule files against the schema and for semantic errors (file:line: message)."""
    from gdsdoctor.engine.rules import builtin_rules_dir, lint_paths
    from gdsdoctor.pipeline import KNOWN_SECTIONS

    targets = paths or [builtin_rules_dir()]
    missing = [p for p in targets if not p.exists()]
    if missing:
        raise UserError(f"{missing[0]}: no such file or directory")
    causes, issues = lint_paths(targets, KNOWN_SECTIONS)
    for issue in issues:
        typer.echo(str(issue))
    typer.echo(f"{len(causes)} cause(s), {len(issues)} problem(s)", err=True)
    raise typer.Exit(UNKNOWN_EXIT if issues else 0)


def main() -> None:
    """Entry point: run the app, turning every expected failure into one line and exit 3."""
    try:
        code = app(standalone_mode=False)
    except click.exceptions.Exit as done:
        code = done.exit_code
    except click.exceptions.Abort:
        typer.echo("gdsdoctor: aborted", err=True)
        code = UNKNOWN_EXIT
    except click.ClickException as error:
        typer.echo(f"gdsdoctor: {error.format_message()}", err=True)
        code = UNKNOWN_EXIT
    except (UserError, BundleError, RuleError) as error:
        typer.echo(f"gdsdoctor: {error}", err=True)
        code = UNKNOWN_EXIT
    except KeyboardInterrupt:
        typer.echo("gdsdoctor: interrupted", err=True)
        code = UNKNOWN_EXIT
    except Exception as error:  # a bug: still one line and UNKNOWN, traceback only on request
        if os.environ.get("GDSDOCTOR_DEBUG"):
            raise
        typer.echo(
            f"gdsdoctor: internal error: {type(error).__name__}: {error} (GDSDOCTOR_DEBUG=1 shows more)",
            err=True,
        )
        code = UNKNOWN_EXIT
    sys.exit(code if isinstance(code, int) else 0)
