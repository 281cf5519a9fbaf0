"""The diagnosing commands (`check`, `analyze`, `fleet merge`) and what they share: the job,
the outputs, the exit policy. Each command imports the pipeline it needs when it runs."""

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from gdsdoctor.cli.common import existing, progress_bar, run_seconds, size_of
from gdsdoctor.cli.options import (
    DEFAULT_DEADLINE_S,
    REPORT_FORMATS,
    Budget,
    Deadline,
    FailOn,
    FleetOutputs,
    Format,
    Gpus,
    HostRoot,
    Interval,
    Memlock,
    NoConfig,
    Npd,
    Outputs,
    Params,
    Preset,
    Quiet,
    ReportFormat,
    RulesDirs,
    SaveMode,
    Since,
    SiteConfig,
    TargetPath,
    Verbose,
)
from gdsdoctor.errors import UserError


def site_config_of(site_config: Path | None, no_config: bool) -> dict[str, Any]:
    """The site config (gdsdoctor/config.py): ``--site-config``, else $GDSDOCTOR_CONFIG or
    /etc/gdsdoctor/config.yaml unless ``--no-config``; checked before any work is done."""
    from gdsdoctor.config import config_path, read_config

    return read_config(config_path(site_config, no_config))


def job_of(
    params: str | None,
    preset: str | None,
    interval: str | None,
    budget: str | None,
    gpus: int | None,
    config: dict[str, Any] | None = None,
    asynchronous: bool | None = None,
    memlock: str | None = None,
) -> dict[str, Any]:
    """The checkpoint job from the site config, overridden by options given on the command line
    (``asynchronous``: --async/--sync; ``memlock``: the job's own locked-memory limit)."""
    job: dict[str, Any] = dict((config or {}).get("checkpoint") or {})
    save = None if asynchronous is None else ("async" if asynchronous else "sync")
    given = {"params": params, "preset": preset, "interval": interval, "budget": budget, "gpus": gpus}
    given |= {"save": save, "memlock": memlock}
    job.update({k: v for k, v in given.items() if v is not None})
    if not job:
        return job  # nothing to check (and the stall model need not be imported)
    from gdsdoctor.facts.job import validate

    validate(job)  # a bad value raises EstimateError, a UserError
    return job


def since_of(since: str | None) -> str | None:
    """``--since`` checked before any work is done (a bad value is one line, exit 3); kept as
    given, so a bundle's manifest records it and ``analyze`` judges it again."""
    if since is None:
        return None
    from gdsdoctor.facts.event_clock import parse_since

    parse_since(since)
    return since.strip()


def targets_of(outputs: list[str] | None) -> list[tuple[str, str]]:
    """``--output`` options, checked before any work is done: ``FORMAT=PATH``, or a PATH whose
    extension names the format (``r.json``, ``node.prom``, ``r.xml``, ``r.md``, ``r.txt``)."""
    targets = []
    for option in outputs or []:
        fmt, sep, path = option.partition("=")
        if not (sep and path and fmt in REPORT_FORMATS):
            fmt, path = OUTPUT_SUFFIXES.get(Path(option).suffix.lower(), ""), option
        if not fmt:
            suffixes = ", ".join(OUTPUT_SUFFIXES)
            raise UserError(
                f"--output {option!r}: expected FORMAT=PATH with FORMAT one of {', '.join(REPORT_FORMATS)}, "
                f"or a PATH ending in {suffixes}"
            )
        _refuse_special(option, path)
        targets.append((fmt, path))
    return targets


# The format an --output PATH's extension names (`-o r.json`): the extensions each format's
# consumers expect (node_exporter's textfile collector reads *.prom, CI reads JUnit *.xml).
OUTPUT_SUFFIXES = {
    ".json": "json",
    ".prom": "prometheus",
    ".xml": "junit",
    ".md": "markdown",
    ".txt": "text",
    ".html": "html",
}


def _refuse_special(option: str, path: str) -> None:
    """Checked before any work (``-`` is stdout): see outputs.special_target."""
    from gdsdoctor.outputs import special_target

    if path != "-" and (why := special_target(path)):
        raise UserError(f"--output {option!r}: {path} {why}; - is stdout")


def write_output(text: str, path: str) -> None:
    from gdsdoctor.report.files import write_atomic

    if path == "-":
        sys.stdout.write(text)
        return
    try:
        write_atomic(Path(path), text)
    except OSError as error:
        raise UserError(f"cannot write {path}: {error.strerror or error}") from None


def finish(
    report: dict[str, Any],
    fmt: str | None,
    verbose: bool,
    outputs: Sequence[tuple[str, str]] = (),
    fail_on: str | None = None,
    npd: bool = False,
    quiet: bool = False,
    facts: dict[str, Any] | None = None,
) -> int:
    """Write every requested output and return the exit code the report (and --fail-on) says;
    the last line printed says why (stdout's status line for text and markdown, else stderr).
    ``facts``: what the html format draws its pictures from (the topology, a watch record)."""
    from gdsdoctor.report.build import apply_fail_on, exit_line
    from gdsdoctor.report.render import MACHINE_FORMATS, render

    report = apply_fail_on(report, fail_on)
    html = "html" in (fmt, *(f for f, _ in outputs))
    pictures = pictures_of(report, facts) if html and facts is not None else None
    for target_format, path in outputs:
        write_output(render(report, target_format, verbose, run_s=run_seconds(), pictures=pictures), path)
    if npd:
        from gdsdoctor.report.oneline import npd_result

        code, message = npd_result(report)
        print(message)
        return code
    shown = fmt if fmt is not None else (None if outputs else "text")
    if shown is not None:
        color = shown == "text" and sys.stdout.isatty()
        sys.stdout.write(
            render(report, shown, verbose, color=color, quiet=quiet, run_s=run_seconds(), pictures=pictures)
        )
    if shown is None or shown in MACHINE_FORMATS or shown == "html":
        print(exit_line(report), file=sys.stderr)
    return int(report["summary"]["exit_code"])


def pictures_of(report: dict[str, Any], facts: dict[str, Any]) -> dict[str, Any]:
    """What the html report draws beside the findings: the PCIe/NUMA tree ``topo`` draws, with the
    verdict of its causes, and the ``watch`` section of a recorded timeline."""
    from gdsdoctor.commands.topology_view import build, verdict

    topology = build(facts)
    topology.verdict = verdict(report["findings"])
    watch = facts.get("watch")
    return {"topology": topology.to_dict(), "watch": watch if isinstance(watch, dict) else None}


def check(
    path: TargetPath = None,
    host_root: HostRoot = Path("/"),
    fmt: ReportFormat = None,
    output: Outputs = None,
    fail_on: FailOn = None,
    npd: Npd = False,
    rules_dir: RulesDirs = None,
    verbose: Verbose = False,
    quiet: Quiet = False,
    deadline: Deadline = DEFAULT_DEADLINE_S,
    since: Since = None,
    bench: Annotated[
        bool,
        typer.Option(
            "--bench",
            help="Also measure --path with fio/gdsio (writes temporary files there, removed afterwards).",
        ),
    ] = False,
    bench_size: Annotated[
        str | None,
        typer.Option(
            "--bench-size",
            metavar="SIZE",
            help="Data --bench writes, e.g. 4GiB (default 5% of the free space, within 64 MiB to 8 GiB); "
            "refused above half the free space or when it would leave less than 10% free.",
        ),
    ] = None,
    params: Params = None,
    preset: Preset = None,
    interval: Interval = None,
    budget: Budget = None,
    gpus: Gpus = None,
    save: SaveMode = None,
    memlock: Memlock = None,
    site_config: SiteConfig = None,
    no_config: NoConfig = False,
) -> int:
    """Diagnose this host (read-only unless --bench): capture every source, analyze, print ranked findings."""
    from gdsdoctor.pipeline import check as run_check

    targets = targets_of(output)
    config = site_config_of(site_config, no_config)
    job = job_of(params, preset, interval, budget, gpus, config, save, memlock)
    since = since_of(since)
    if bench and not path:
        raise UserError("--bench needs --path: the directory to measure")
    bench_bytes = size_of(bench_size) if bench_size else None
    with progress_bar() if bench else contextlib.nullcontext(None) as progress:
        measure = None if progress is None else (progress, bench_bytes)
        acknowledgements = config.get("acknowledge") or ()
        analysis = run_check(
            host_root, path, rules_dir or [], deadline, job, measure, acknowledgements, since, site=config
        )
    return finish(analysis.report, fmt, verbose, targets, fail_on, npd, quiet, analysis.facts)


def analyze(
    inputs: Annotated[
        list[str],
        typer.Argument(
            metavar="INPUT...",
            help="A bundle (.tar.gz or directory) or pasted text files; or many bundles (a directory "
            "of bundles, several bundles, a quoted glob) for a fleet summary.",
        ),
    ],
    path: TargetPath = None,
    fmt: ReportFormat = None,
    output: Outputs = None,
    fail_on: FailOn = None,
    npd: Npd = False,
    rules_dir: RulesDirs = None,
    verbose: Verbose = False,
    quiet: Quiet = False,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs", "-j", min=1, metavar="N", help="Fleet: parallel processes (default: every core)."
        ),
    ] = None,
    fleet: Annotated[bool, typer.Option("--fleet", help="Summarize as a fleet even for one bundle.")] = False,
    deadline: Deadline = DEFAULT_DEADLINE_S,
    since: Since = None,
    params: Params = None,
    preset: Preset = None,
    interval: Interval = None,
    budget: Budget = None,
    gpus: Gpus = None,
    save: SaveMode = None,
    memlock: Memlock = None,
    site_config: SiteConfig = None,
    no_config: NoConfig = False,
) -> int:
    """Analyze a bundle or text files pasted into a ticket (recognized by content), or a fleet."""
    from gdsdoctor.commands.fleet import expand_inputs, is_fleet, one_host
    from gdsdoctor.pipeline import analyze_paths

    paths = existing(expand_inputs(inputs))
    if not paths:
        raise UserError(f"nothing matches {' '.join(inputs)}")
    config = site_config_of(site_config, no_config)
    job = job_of(params, preset, interval, budget, gpus, config, save, memlock)
    targets = targets_of(output)
    since = since_of(since)
    notes: list[str] = []
    if fleet or is_fleet(paths):
        summary = _fleet_summary(paths, path, rules_dir or [], jobs, job, deadline, config)
        newest = None if fleet else one_host(summary)
        if newest is None:
            if npd:
                raise UserError("--npd reports on one node; a fleet summary has no NPD form")
            return _finish_fleet(summary, fmt, targets, fail_on, verbose)
        paths, notes = [Path(newest["bundle"])], [_newest_note(summary, newest)]
    acknowledgements = config.get("acknowledge") or ()
    analysis = analyze_paths(
        paths, path, rules_dir or [], job, deadline, acknowledgements, since, site=config
    )
    analysis.report["source"]["notes"][:0] = notes
    return finish(analysis.report, fmt, verbose, targets, fail_on, npd, quiet, analysis.facts)


def _newest_note(summary: dict[str, Any], newest: dict[str, Any]) -> str:
    """Captures of one host are never a fleet: the newest is analysed, and ``diff`` compares."""
    others = [n["bundle"] for n in summary["nodes"] if n is not newest]
    when = f", taken {newest['created']}" if newest.get("created") else ""
    return (
        f"{len(summary['nodes'])} captures of host {newest['host']}: this is the newest, {newest['bundle']}"
        f"{when}; `gdsdoctor diff {others[-1]} {newest['bundle']}` compares them"
    )


def _fleet_summary(
    paths: list[Path],
    path: str | None,
    rules_dirs: list[Path],
    jobs: int | None,
    job: dict[str, Any] | None = None,
    deadline: float = DEFAULT_DEADLINE_S,
    site: dict[str, Any] | None = None,
) -> dict[str, Any]:
    from gdsdoctor.commands import fleet

    with _progress(len(paths)) as advance:
        return fleet.analyse_fleet(paths, path, rules_dirs, jobs, advance, job, deadline, site)


def _check_fleet_formats(fmt: str | None, targets: list[tuple[str, str]]) -> None:
    from gdsdoctor.commands.fleet import FLEET_FORMATS

    for name in [*([fmt] if fmt else []), *(f for f, _ in targets)]:
        if name not in FLEET_FORMATS:
            raise UserError(f"a fleet summary is written as {', '.join(FLEET_FORMATS)}, not {name}")


def _finish_fleet(
    summary: dict[str, Any],
    fmt: str | None,
    targets: list[tuple[str, str]],
    fail_on: str | None = None,
    verbose: bool = False,
) -> int:
    from gdsdoctor.commands import fleet

    _check_fleet_formats(fmt, targets)
    summary = fleet.apply_fail_on(summary, fail_on)
    for target_format, target in targets:
        write_output(fleet.render(summary, target_format, verbose=verbose), target)
    shown = fmt if fmt is not None else (None if targets else "text")
    if shown is not None:
        color = shown == "text" and sys.stdout.isatty()
        sys.stdout.write(fleet.render(summary, shown, color=color, verbose=verbose))
    if shown != "text":
        print(fleet.exit_line(summary), file=sys.stderr)
    return int(summary["summary"]["exit_code"])


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


def fleet_merge(
    summaries: Annotated[
        list[Path], typer.Argument(metavar="SUMMARY...", help="Fleet summaries (`analyze … --format json`).")
    ],
    fmt: Format = "text",
    output: FleetOutputs = None,
    fail_on: FailOn = None,
) -> int:
    """Merge fleet summaries of shards (e.g. Slurm array tasks) into one; counts add up."""
    from gdsdoctor.commands import fleet
    from gdsdoctor.commands.fleet_workers import load_summary

    targets = targets_of(output)
    _check_fleet_formats(None, targets)
    loaded = [load_summary(file) for file in summaries]
    try:
        merged = fleet.merge(loaded)
    except (ValueError, KeyError, TypeError) as error:
        raise UserError(f"cannot merge: {error}") from None
    return _finish_fleet(merged, fmt, targets, fail_on)


def failing_path_report(command: str, path: str, problem: str, host_root: Path = Path("/")) -> dict:
    """``bench``, ``watch``: a checkpoint path that fails is one line (stderr) and the
    diagnosis of it, the report ``check --path`` gives, never a traceback."""
    from gdsdoctor.pipeline import check

    print(f"gdsdoctor {command}: {problem}; diagnosing the path instead", file=sys.stderr)
    return check(host_root, target_path=path).report


def diagnosed(command: str, path: str, problem: str, fmt: str | None) -> int:
    """The failing path's line and diagnosis in ``fmt``, with its exit code."""
    return finish(failing_path_report(command, path, problem), fmt, verbose=False)
