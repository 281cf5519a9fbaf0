"""Command line: thin commands that call the pipeline and pick a renderer.

Exit codes (monitoring-plugin convention): 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN — which
also covers bad input and usage errors: every error is one line on stderr, never a traceback.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from gdsdoctor import __version__
from gdsdoctor.model import UserError

UNKNOWN_EXIT = 3
# The capture layer, the rules and the renderers are imported when a command needs them, so
# that `--version`, `--help` and hooks that call gdsdoctor often start fast (see README
# "Performance"). tests/test_api.py checks this default equals capture.live's.
DEFAULT_DEADLINE_S = 60.0


def capture_live(*args: Any, **kwargs: Any) -> Any:
    from gdsdoctor.capture.live import capture_live as capture

    return capture(*args, **kwargs)


def write_bundle(*args: Any, **kwargs: Any) -> Any:
    from gdsdoctor.capture.bundle import write_bundle as write

    return write(*args, **kwargs)


def _input_errors() -> tuple[type[Exception], ...]:
    """Errors the user can fix (one line, exit 3). An ``except`` clause evaluates this only when
    something was raised, so their modules are not imported at start-up."""
    from gdsdoctor.capture.bundle import BundleError
    from gdsdoctor.engine.rules import RuleError

    return (UserError, BundleError, RuleError)


def _click_errors(name: str) -> tuple[type[BaseException], ...]:
    """The click exception class ``name`` from typer's vendored click (typer ≥ 0.16) or from
    click (older typer), and typer's own, so usage errors stay one line whichever typer is
    installed. click itself is not imported beside a vendored copy: nothing raises its classes
    then, and importing it costs start-up time."""
    import importlib.util

    vendored = importlib.util.find_spec("typer._click") is not None
    found: list[type[BaseException]] = []
    for module in ("typer._click.exceptions" if vendored else "click.exceptions", "typer.exceptions"):
        try:
            found.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            continue
    return tuple(dict.fromkeys(found))


_EXIT, _ABORT, _CLICK_ERROR = _click_errors("Exit"), _click_errors("Abort"), _click_errors("ClickException")

app = typer.Typer(
    name="gdsdoctor",
    help="Diagnose the GPU checkpoint storage path: GPUDirect Storage, NVMe/NVMe-oF, PCIe/NUMA, filesystems.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
rules_app = typer.Typer(help="List, show and lint the diagnostic rules.", no_args_is_help=True)
app.add_typer(rules_app, name="rules")
fleet_app = typer.Typer(help="Fleet summaries: merge the shards of a fleet analysis.", no_args_is_help=True)
app.add_typer(fleet_app, name="fleet")


class Format(StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


class ReportFormat(StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"
    junit = "junit"
    prometheus = "prometheus"
    oneline = "oneline"


class FailOn(StrEnum):
    critical = "critical"
    warning = "warning"


FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
ReportFormatOpt = Annotated[
    ReportFormat | None,
    typer.Option("--format", "-f", help="Format on stdout (default text; none when only --output is given)."),
]
OutputsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--output",
        "-o",
        metavar="FORMAT=PATH",
        help="Also write FORMAT to PATH, atomically (e.g. prometheus=/var/lib/node_exporter/gdsdoctor.prom); "
        "repeatable; PATH - is stdout.",
    ),
]
FailOnOpt = Annotated[
    FailOn | None,
    typer.Option(
        "--fail-on",
        help="Lowest severity that fails (non-zero exit): critical or warning. Default: monitoring-plugin "
        "codes (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN). UNKNOWN always fails.",
    ),
]
NpdOpt = Annotated[
    bool,
    typer.Option(
        "--npd",
        help="Kubernetes node-problem-detector custom plugin: exit 0 OK, 1 problem, 2 unknown; "
        "one short message on stdout.",
    ),
]
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


ParamsOpt = Annotated[
    str | None,
    typer.Option("--params", help="Model parameter count (70B): judge the checkpoint stall and space."),
]
PresetOpt = Annotated[str | None, typer.Option("--preset", help="What a checkpoint saves (see `estimate`).")]
IntervalOpt = Annotated[str | None, typer.Option("--interval", help="Time between checkpoints (default 1h).")]
BudgetOpt = Annotated[
    str | None, typer.Option("--budget", help="Stall budget, share of wall time (default 5%).")
]
GpusOpt = Annotated[int | None, typer.Option("--gpus", help="GPUs the checkpoint stalls (default 1).")]
SiteConfigOpt = Annotated[
    Path | None,
    typer.Option("--site-config", help="YAML with a `checkpoint:` job description (params, ...)."),
]


def _job(
    params: str | None,
    preset: str | None,
    interval: str | None,
    budget: str | None,
    gpus: int | None,
    site_config: Path | None,
) -> dict[str, Any]:
    """The checkpoint job from the site config, overridden by options given on the command line."""
    job: dict[str, Any] = _site_job(site_config) if site_config is not None else {}
    given = {"params": params, "preset": preset, "interval": interval, "budget": budget, "gpus": gpus}
    job.update({k: v for k, v in given.items() if v is not None})
    if not job:
        return job  # nothing to check (and the estimate model, ~10 ms of imports, is not needed)
    from gdsdoctor.estimate import EstimateError
    from gdsdoctor.facts.job import validate

    try:
        validate(job)
    except EstimateError as error:
        raise UserError(str(error)) from None
    return job


def _site_job(path: Path) -> dict[str, Any]:
    import yaml

    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise UserError(f"{path}: cannot read site config ({type(error).__name__})") from None
    job = document.get("checkpoint") if isinstance(document, dict) else None
    if not isinstance(job, dict):
        raise UserError(
            f"{path}: expected a mapping `checkpoint:` with params, preset, interval, budget, gpus"
        )
    return {str(k): v for k, v in job.items()}


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


def _targets(outputs: list[str] | None) -> list[tuple[str, str]]:
    """``FORMAT=PATH`` options, checked before any work is done."""
    from gdsdoctor.report.render import FORMATS

    targets = []
    for option in outputs or []:
        fmt, sep, path = option.partition("=")
        if not sep or not path or fmt not in FORMATS:
            raise UserError(
                f"--output {option!r}: expected FORMAT=PATH with FORMAT one of {', '.join(FORMATS)}"
            )
        targets.append((fmt, path))
    return targets


def _write(text: str, path: str) -> None:
    from gdsdoctor.report.files import write_atomic

    if path == "-":
        sys.stdout.write(text)
        return
    try:
        write_atomic(Path(path), text)
    except OSError as error:
        raise UserError(f"cannot write {path}: {error.strerror or error}") from None


def _finish(
    report: dict[str, Any],
    fmt: ReportFormat | None,
    verbose: bool,
    outputs: Sequence[tuple[str, str]] = (),
    fail_on: FailOn | None = None,
    npd: bool = False,
) -> None:
    """Write every requested output, then exit with the code the report (and --fail-on) says;
    the last line printed says why (stdout's status line for text and markdown, else stderr)."""
    from gdsdoctor.report.build import apply_fail_on, exit_line
    from gdsdoctor.report.render import MACHINE_FORMATS, render

    report = apply_fail_on(report, fail_on and str(fail_on))
    for target_format, path in outputs:
        _write(render(report, target_format, verbose), path)
    if npd:
        from gdsdoctor.report.oneline import npd_result

        code, message = npd_result(report)
        typer.echo(message)
        raise typer.Exit(code)
    shown = str(fmt) if fmt is not None else (None if outputs else "text")
    if shown is not None:
        color = shown == "text" and sys.stdout.isatty()
        sys.stdout.write(render(report, shown, verbose, color=color))
    if shown is None or shown in MACHINE_FORMATS:
        typer.echo(exit_line(report), err=True)
    raise typer.Exit(int(report["summary"]["exit_code"]))


@app.command()
def check(
    path: PathOpt = None,
    host_root: HostRootOpt = Path("/"),
    fmt: ReportFormatOpt = None,
    output: OutputsOpt = None,
    fail_on: FailOnOpt = None,
    npd: NpdOpt = False,
    rules_dir: RulesDirOpt = None,
    deadline: Annotated[
        float, typer.Option(help="Global time limit for capture, seconds.")
    ] = DEFAULT_DEADLINE_S,
    verbose: VerboseOpt = False,
    params: ParamsOpt = None,
    preset: PresetOpt = None,
    interval: IntervalOpt = None,
    budget: BudgetOpt = None,
    gpus: GpusOpt = None,
    site_config: SiteConfigOpt = None,
    bench: Annotated[
        bool,
        typer.Option(
            "--bench",
            help="Also measure --path with fio/gdsio (writes temporary files there, removed afterwards).",
        ),
    ] = False,
    bench_size: Annotated[
        str | None, typer.Option("--bench-size", help="Data --bench writes: 4GiB (default 5% of free space).")
    ] = None,
) -> None:
    """Diagnose this host (read-only unless --bench): capture every source, analyse, print ranked findings."""
    from gdsdoctor.pipeline import check as run_check

    targets = _targets(output)
    job = _job(params, preset, interval, budget, gpus, site_config)
    if bench and not path:
        raise UserError("--bench needs --path: the directory to measure")
    bench_bytes = _size(bench_size) if bench_size else None
    with _progress_bar() if bench else contextlib.nullcontext(None) as progress:
        measure = None if progress is None else (progress, bench_bytes)
        report = run_check(host_root, path, rules_dir or [], deadline, job, measure).report
    _finish(report, fmt, verbose, targets, fail_on, npd)


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
    redact: Annotated[
        bool,
        typer.Option(
            "--redact",
            help="Replace host names, addresses, MACs, serials, NQNs, GUIDs and user names; "
            "the private map goes to OUTPUT.redaction-map.json (mode 0600), never into the bundle.",
        ),
    ] = False,
) -> None:
    """Capture this host into a bundle (manifest + raw outputs) for offline analysis."""
    from gdsdoctor.capture.redact import map_path_for, redact_capture, write_private_map

    if output.exists() and (output.is_file() or any(output.iterdir())):
        raise UserError(f"{output} already exists; choose a new name")
    if redact and map_path_for(output).exists():
        raise UserError(f"{map_path_for(output)} already exists; choose a new name")
    capture = capture_live(host_root, path, deadline_s=deadline)
    try:
        if redact:
            capture, mapping = redact_capture(capture)
            write_private_map(mapping, map_path_for(output))
        write_bundle(capture, output, redacted=redact)
    except OSError as error:  # a read-only or full filesystem: one line, not a traceback
        raise UserError(f"cannot write {error.filename or output}: {error.strerror or error}") from None
    ok = sum(1 for a in capture.artifacts.values() if a.status == "ok")
    typer.echo(f"wrote {output}: {len(capture.artifacts)} artifacts, {ok} ok", err=True)
    if redact:
        typer.echo(f"private redaction map (keep it, never attach it): {map_path_for(output)}", err=True)


@app.command("redact")
def redact_command(
    files: Annotated[list[Path], typer.Argument(help="Pasted text files to redact.")],
    output_dir: Annotated[
        Path | None, typer.Option("--output-dir", help="Where to write the copies (default: next to each).")
    ] = None,
) -> None:
    """Write redacted copies (NAME.redacted) of pasted files, and the private map beside them."""
    from gdsdoctor.capture.redact import redact_files

    for line in redact_files(files, output_dir):
        typer.echo(line, err=True)


@app.command()
def analyze(
    inputs: Annotated[
        list[str],
        typer.Argument(
            help="A bundle (.tar.gz or directory) or pasted text files; or many bundles (a directory "
            "of bundles, several bundles, a quoted glob) for a fleet summary."
        ),
    ],
    path: PathOpt = None,
    fmt: ReportFormatOpt = None,
    output: OutputsOpt = None,
    fail_on: FailOnOpt = None,
    npd: NpdOpt = False,
    rules_dir: RulesDirOpt = None,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", min=1, help="Fleet: parallel processes (default: every core)."),
    ] = None,
    fleet: Annotated[bool, typer.Option("--fleet", help="Summarise as a fleet even for one bundle.")] = False,
    verbose: VerboseOpt = False,
    params: ParamsOpt = None,
    preset: PresetOpt = None,
    interval: IntervalOpt = None,
    budget: BudgetOpt = None,
    gpus: GpusOpt = None,
    site_config: SiteConfigOpt = None,
) -> None:
    """Analyse a bundle or text files pasted into a ticket (recognised by content), or a fleet."""
    from gdsdoctor.fleet import expand_inputs, is_fleet
    from gdsdoctor.pipeline import analyze_paths

    paths = expand_inputs(inputs)
    if not paths:
        raise UserError(f"nothing matches {' '.join(inputs)}")
    job = _job(params, preset, interval, budget, gpus, site_config)
    if fleet or is_fleet(paths):
        if npd:
            raise UserError("--npd reports on one node; a fleet summary has no NPD form")
        _fleet(paths, path, rules_dir or [], jobs, fmt, _targets(output), fail_on, job)
    targets = _targets(output)
    _finish(analyze_paths(paths, path, rules_dir or [], job).report, fmt, verbose, targets, fail_on, npd)


def _fleet(
    paths: list[Path],
    path: str | None,
    rules_dirs: list[Path],
    jobs: int | None,
    fmt: ReportFormat | None,
    targets: list[tuple[str, str]],
    fail_on: FailOn | None,
    job: dict[str, Any] | None = None,
) -> None:
    from gdsdoctor import fleet

    _check_fleet_formats(fmt, targets)
    with _progress(len(paths)) as advance:
        summary = fleet.analyse_fleet(paths, path, rules_dirs, jobs, advance, job)
    _finish_fleet(fleet.apply_fail_on(summary, fail_on and str(fail_on)), fmt, targets)


def _check_fleet_formats(fmt: ReportFormat | None, targets: list[tuple[str, str]]) -> None:
    from gdsdoctor.fleet import FLEET_FORMATS

    for name in [*([str(fmt)] if fmt else []), *(f for f, _ in targets)]:
        if name not in FLEET_FORMATS:
            raise UserError(f"a fleet summary is written as {', '.join(FLEET_FORMATS)}, not {name}")


def _finish_fleet(summary: dict[str, Any], fmt: ReportFormat | None, targets: list[tuple[str, str]]) -> None:
    from gdsdoctor import fleet

    for target_format, target in targets:
        _write(fleet.render(summary, target_format), target)
    shown = str(fmt) if fmt is not None else (None if targets else "text")
    if shown is not None:
        sys.stdout.write(fleet.render(summary, shown, color=shown == "text" and sys.stdout.isatty()))
    if shown != "text":
        typer.echo(fleet.exit_line(summary), err=True)
    raise typer.Exit(int(summary["summary"]["exit_code"]))


@contextlib.contextmanager
def _progress(total: int) -> Iterator[Callable[[int], None] | None]:
    """A progress bar on stderr when it is a terminal; nothing otherwise (logs stay clean)."""
    if not sys.stderr.isatty() or total < 2:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    columns = ("analysing", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("bundles", total=total)
        yield lambda done: bar.advance(task, done)


@fleet_app.command("merge")
def fleet_merge(
    summaries: Annotated[list[Path], typer.Argument(help="Fleet summaries (`analyze … --format json`).")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="text, json or markdown.")] = "text",
    output: OutputsOpt = None,
    fail_on: FailOnOpt = None,
) -> None:
    """Merge fleet summaries of shards (e.g. Slurm array tasks) into one; counts add up."""
    import json

    from gdsdoctor import fleet

    if fmt not in fleet.FLEET_FORMATS:
        raise UserError(f"--format must be one of {', '.join(fleet.FLEET_FORMATS)}")
    targets = _targets(output)
    _check_fleet_formats(None, targets)
    loaded = []
    for file in summaries:
        try:
            loaded.append(json.loads(file.read_text(encoding="utf-8")))
        except (OSError, ValueError) as error:
            raise UserError(f"{file}: cannot read a fleet summary ({type(error).__name__})") from None
    try:
        merged = fleet.merge(loaded)
    except (ValueError, KeyError, TypeError) as error:
        raise UserError(f"cannot merge: {error}") from None
    _finish_fleet(fleet.apply_fail_on(merged, fail_on and str(fail_on)), ReportFormat(fmt), targets)


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


class TopoFormat(StrEnum):
    auto = "auto"
    rich = "rich"
    text = "text"
    markdown = "markdown"
    json = "json"


@app.command()
def topo(
    inputs: Annotated[
        list[Path] | None,
        typer.Argument(help="Bundle or pasted files (lspci -tv/-vvv, nvidia-smi topo -m…); none: this host."),
    ] = None,
    host_root: HostRootOpt = Path("/"),
    fmt: Annotated[
        TopoFormat,
        typer.Option(
            "--format", "-f", help="rich tree (terminal), plain text or markdown for tickets, json."
        ),
    ] = TopoFormat.auto,
) -> None:
    """Draw the PCIe/NUMA layout: GPUs, NVMe drives and NICs, their links, and misplacements."""
    from gdsdoctor.topo import render, topology_of

    tty = sys.stdout.isatty()
    chosen = ("rich" if tty else "text") if fmt is TopoFormat.auto else str(fmt)
    sys.stdout.write(render(topology_of(inputs or [], host_root), chosen, color=tty))


@app.command()
def probes(fmt: FormatOpt = Format.text) -> None:
    """List every probe: what it runs or reads, and whether it needs root."""
    from gdsdoctor.explain import probes_markdown, probes_table

    typer.echo(probes_markdown() if fmt is Format.markdown else probes_table(), nl=False)


@app.command()
def estimate(
    params: Annotated[str, typer.Option("--params", help="Parameter count: 70B, 7e10, 405b.")],
    throughput: Annotated[
        str, typer.Option("--throughput", help="Storage write throughput: 1.2GB/s, 400Gbit/s.")
    ],
    preset: Annotated[
        str, typer.Option(help="What is saved per parameter (see --help of presets).")
    ] = "bf16-adamw",
    component: Annotated[
        list[str] | None, typer.Option("--component", help="Override bytes/param: NAME=BYTES; repeatable.")
    ] = None,
    fsync: Annotated[str, typer.Option(help="fsync/metadata time per checkpoint: 2s, 500ms.")] = "0s",
    interval: Annotated[str, typer.Option(help="Time between checkpoint starts: 1h, 30m.")] = "1h",
    gpus: Annotated[int, typer.Option(help="GPUs stalled by the checkpoint.")] = 1,
    budget: Annotated[str | None, typer.Option(help="Stall budget as share of wall time: 2%, 0.02.")] = None,
    archive_throughput: Annotated[
        str | None, typer.Option(help="Archive tier throughput for the asynchronous flush.")
    ] = None,
    units: Annotated[str, typer.Option(help="Output units: si (GB) or iec (GiB).")] = "si",
    fmt: FormatOpt = Format.text,
) -> None:
    """How long one synchronous checkpoint stalls the GPUs, and what it costs."""
    from gdsdoctor import estimate as model

    if units not in ("si", "iec"):
        raise UserError(f"--units must be si or iec, not {units!r}")
    try:
        result = model.run(
            params,
            throughput,
            preset=preset,
            components=component or [],
            fsync=fsync,
            interval=interval,
            gpus=gpus,
            budget=budget,
            archive_throughput=archive_throughput,
        )
    except model.EstimateError as error:
        raise UserError(str(error)) from None
    if fmt is Format.json:
        import json

        typer.echo(json.dumps(model.to_dict(result, units), indent=2))
    elif fmt is Format.markdown:
        typer.echo(model.render_markdown(result, units), nl=False)
    else:
        typer.echo(model.render_text(result, units), nl=False)


@app.command()
def bench(
    path: Annotated[Path, typer.Argument(help="Directory on the checkpoint filesystem to measure.")],
    size: Annotated[
        str | None, typer.Option(help="Test data size: 4GiB (default: 5% of free space).")
    ] = None,
    time_limit: Annotated[float, typer.Option(help="Hard time limit, seconds.")] = 300.0,
    engine: Annotated[str, typer.Option(help="auto, cpu-direct, libcufile or gdsio.")] = "auto",
    save_raw: Annotated[
        Path | None, typer.Option("--save-raw", help="Write fio JSON / gdsio text here (for `analyze`).")
    ] = None,
    fmt: FormatOpt = Format.text,
) -> None:
    """Measure what the checkpoint path delivers (fio/gdsio, direct I/O, in a temporary directory)."""
    from gdsdoctor import bench as runner

    size_bytes = _size(size) if size else None
    try:
        with _progress_bar() as progress:
            result = runner.run(path, size_bytes, time_limit, progress, engine)
    except runner.BenchError as error:
        raise UserError(str(error)) from None
    if save_raw:
        save_raw.write_bytes(result.raw)
    if fmt is Format.json:
        import json

        typer.echo(json.dumps(runner.to_dict(result), indent=2))
    else:
        typer.echo(runner.render_text(result), nl=False)


def _size(text: str) -> int:
    from gdsdoctor.estimate import EstimateError, parse_size

    try:
        return parse_size(text)
    except EstimateError as error:
        raise UserError(str(error)) from None


def _progress_bar():  # type: ignore[no-untyped-def]
    """A progress callback drawing a bar on stderr when it is a terminal, silent otherwise."""
    from rich.console import Console
    from rich.progress import Progress

    if not sys.stderr.isatty():
        return contextlib.nullcontext(lambda fraction, message: None)

    @contextlib.contextmanager
    def bar():  # type: ignore[no-untyped-def]
        with Progress(console=Console(stderr=True), transient=True) as progress:
            task = progress.add_task("bench", total=1.0)

            def update(fraction: float, message: str) -> None:
                progress.update(task, completed=fraction, description=message[:60])

            yield update

    return bar()


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


def narrowed(argv: Sequence[str]) -> typer.Typer:
    """The app with only the command named first on the command line. Typer builds every
    command's parameters from its type hints at each start (~25 ms for all of them, a tenth of
    a `check`); a run needs one. Its help, usage and errors read the same (a test compares
    them). Anything else (no command, an option first, a typo) gets the whole app."""
    import copy

    from typer.main import get_command_name

    name = argv[0] if argv else ""
    commands = [
        command
        for command in app.registered_commands
        if (command.name or get_command_name(getattr(command.callback, "__name__", ""))) == name
    ]
    groups = [group for group in app.registered_groups if group.name == name]
    if len(commands) + len(groups) != 1:
        return app
    only = copy.copy(app)
    only.registered_commands, only.registered_groups = commands, groups
    return only


def main() -> None:
    """Entry point: run the app, turning every expected failure into one line and exit 3."""
    try:
        code = narrowed(sys.argv[1:])(standalone_mode=False)
    except _EXIT as done:
        code = getattr(done, "exit_code", 0)
    except _ABORT:
        typer.echo("gdsdoctor: aborted", err=True)
        code = UNKNOWN_EXIT
    except _CLICK_ERROR as error:
        typer.echo(f"gdsdoctor: {error.format_message()}", err=True)
        code = UNKNOWN_EXIT
    except _input_errors() as error:
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
    exit_now(code if isinstance(code, int) else 0)


def exit_now(code: int) -> NoReturn:
    """Leave without the interpreter's teardown: freeing every module and object took ~25 ms,
    a tenth of a `check` that health checks run every few minutes. What teardown would do that
    matters is done here: the commands still running are killed (the runner's exit handler),
    and what we wrote is flushed (a reader that went away is not an error of ours)."""
    runner = sys.modules.get("gdsdoctor.capture.runner")
    if runner is not None:
        runner.kill_running()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
