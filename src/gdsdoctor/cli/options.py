"""The options several commands share, as ``Annotated`` types: one definition, one help text.

Only typer and the report format names are imported here: `--version` and `--help` must start
fast, so what a command needs is imported inside that command (see ``gdsdoctor.cli``).
"""

from pathlib import Path
from typing import Annotated, Literal

import typer

from gdsdoctor import DEFAULT_DEADLINE_S
from gdsdoctor.report.render import FORMATS as REPORT_FORMATS

UNKNOWN_EXIT = 3
FORMATS = ("text", "json", "markdown")
FAIL_ON = ("critical", "warning")
TOPO_FORMATS = ("auto", "rich", "text", "markdown", "json", "svg")
JOB_PANEL = "Checkpoint job"

# Literal[tuple] is Literal[*tuple]: the choices are the renderers' own names.
ReportFormatName = Literal[REPORT_FORMATS]  # type: ignore[valid-type]
FormatName = Literal[FORMATS]  # type: ignore[valid-type]

TargetPath = Annotated[
    str | None,
    typer.Option("--path", metavar="PATH", help="Narrow the diagnosis to the checkpoint directory PATH."),
]
HostRoot = Annotated[
    Path,
    typer.Option(
        "--host-root",
        metavar="DIR",
        show_default=False,
        help="Where the host's / is mounted (e.g. /host in a container; default /).",
    ),
]
Deadline = Annotated[
    float,
    typer.Option(
        "--deadline",
        metavar="SECONDS",
        show_default=False,
        help="Global time limit: for `check` and `collect` the capture; for `analyze` reading and "
        "analyzing the inputs, each bundle of a fleet; for `redact` the whole run "
        f"(default {DEFAULT_DEADLINE_S:g}).",
    ),
]
RulesDirs = Annotated[
    list[Path] | None,
    typer.Option("--rules-dir", metavar="DIR", help="Extra (site) rule directory; repeatable."),
]
ReportFormat = Annotated[
    ReportFormatName | None,
    typer.Option(
        "--format",
        "-f",
        metavar="FORMAT",
        help=f"Format on stdout: {', '.join(REPORT_FORMATS)} "
        "(default text; none when only --output is given).",
    ),
]
Format = Annotated[
    FormatName,
    typer.Option(
        "--format",
        "-f",
        metavar="FORMAT",
        show_default=False,
        help=f"Output format: {', '.join(FORMATS)} (default text).",
    ),
]
Outputs = Annotated[
    list[str] | None,
    typer.Option(
        "--output",
        "-o",
        metavar="[FORMAT=]PATH",
        help="Also write the report to PATH, atomically, as FORMAT or as its extension says (.json, "
        ".prom, .xml for junit, .md, .txt): e.g. -o /var/lib/node_exporter/gdsdoctor.prom; repeatable; "
        "PATH - is stdout.",
    ),
]
FleetOutputs = Annotated[
    list[str] | None,
    typer.Option(
        "--output",
        "-o",
        metavar="[FORMAT=]PATH",
        help="Also write the merged summary to PATH, atomically, as FORMAT (text, json, markdown) or "
        "as its extension says: e.g. -o fleet.json; repeatable; PATH - is stdout.",
    ),
]
FailOn = Annotated[
    Literal[FAIL_ON] | None,  # type: ignore[valid-type]
    typer.Option(
        "--fail-on",
        metavar="SEVERITY",
        help="Lowest severity that fails (non-zero exit): critical, warning. Default: monitoring-plugin "
        "codes (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN). UNKNOWN always fails.",
    ),
]
Npd = Annotated[
    bool,
    typer.Option(
        "--npd",
        help="Kubernetes node-problem-detector custom plugin: exit 0 OK, 1 problem, 2 unknown; "
        "one short message on stdout.",
    ),
]
Since = Annotated[
    str | None,
    typer.Option(
        "--since",
        metavar="WHEN",
        help="Kernel events before WHEN are history (shown, never failing): a duration before now "
        "(10m, 2s, 1h, 2d) or an ISO 8601 time (2026-01-31T08:00:00Z).",
    ),
]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Show every source and inconclusive cause.")]
Quiet = Annotated[
    bool,
    typer.Option(
        "--quiet", "-q", help="Text and markdown: only the findings, one line each, and the status."
    ),
]


def complete_cause_ids(incomplete: str) -> list[str]:
    """The cause ids the shell completes (the built-in rules; a completion has no --rules-dir)."""
    from gdsdoctor.pipeline import rules

    return [c.id for c in rules() if c.id.startswith(incomplete)]


def complete_presets(incomplete: str) -> list[str]:
    from gdsdoctor.checkpoint.stall import PRESETS

    return [name for name in PRESETS if name.startswith(incomplete)]


CauseId = Annotated[
    str,
    typer.Argument(
        metavar="CAUSE_ID",
        help="Cause id, as in `gdsdoctor rules list`.",
        autocompletion=complete_cause_ids,
    ),
]

# The checkpoint job (see ``diagnose.job_of``): turns a measured throughput into the stall it causes.
Params = Annotated[
    str | None,
    typer.Option(
        "--params",
        metavar="COUNT",
        help="Model parameter count (70B): judge the checkpoint stall and space.",
        rich_help_panel=JOB_PANEL,
    ),
]
Preset = Annotated[
    str | None,
    typer.Option(
        "--preset",
        metavar="NAME",
        help="What a checkpoint saves (see `estimate`; default bf16-adamw).",
        autocompletion=complete_presets,
        rich_help_panel=JOB_PANEL,
    ),
]
Interval = Annotated[
    str | None,
    typer.Option(
        "--interval",
        metavar="DURATION",
        help="Time between checkpoints (default 1h).",
        rich_help_panel=JOB_PANEL,
    ),
]
Budget = Annotated[
    str | None,
    typer.Option(
        "--budget",
        metavar="SHARE",
        help="Stall budget, share of wall time (default 5%).",
        rich_help_panel=JOB_PANEL,
    ),
]
Gpus = Annotated[
    int | None,
    typer.Option(
        "--gpus", metavar="N", help="GPUs the checkpoint stalls (default 1).", rich_help_panel=JOB_PANEL
    ),
]
SaveMode = Annotated[
    bool | None,
    typer.Option(
        "--async/--sync",
        show_default=False,
        help="How the job saves: --async stages each shard in host memory (judged against the job's "
        "memlock); --sync does not (the async causes do not apply).",
        rich_help_panel=JOB_PANEL,
    ),
]
Memlock = Annotated[
    str | None,
    typer.Option(
        "--memlock",
        metavar="SIZE",
        help="The job's locked-memory limit (its `ulimit -l`: unlimited, 64KiB, 8GiB), not gdsdoctor's own.",
        rich_help_panel=JOB_PANEL,
    ),
]
SiteConfig = Annotated[
    Path | None,
    typer.Option(
        "--site-config",
        metavar="YAML",
        help="Site config instead of the default ($GDSDOCTOR_CONFIG, else /etc/gdsdoctor/config.yaml): "
        "`checkpoint:` (params, preset, interval, budget, gpus), `acknowledge:` (known findings set apart).",
        rich_help_panel=JOB_PANEL,
    ),
]
NoConfig = Annotated[
    bool,
    typer.Option(
        "--no-config",
        help="Read no default site config ($GDSDOCTOR_CONFIG, /etc/gdsdoctor/config.yaml).",
        rich_help_panel=JOB_PANEL,
    ),
]
