"""Command line: thin commands that call the pipeline and pick a renderer.

Exit codes (monitoring-plugin convention): 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN — which
also covers bad input and usage errors: every error is one line on stderr, never a traceback.

The parser is the standard library's argparse: health checks run `gdsdoctor check` every few
minutes on every node, and typer's import (with its vendored click, inspect and completion
machinery) was a quarter of check's own cost (docs/architecture.md, "Start-up cost").
Each command is a function whose keyword arguments are the parsed options; it returns the
exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

from gdsdoctor import __version__
from gdsdoctor.model import UserError
from gdsdoctor.report.render import FORMATS as REPORT_FORMATS

UNKNOWN_EXIT = 3
# The capture layer, the rules and the renderers are imported when a command needs them, so
# that `--version`, `--help` and hooks that call gdsdoctor often start fast (see README
# "Performance"). tests/test_api.py checks this default equals capture.live's.
DEFAULT_DEADLINE_S = 60.0
FORMATS = ("text", "json", "markdown")
FAIL_ON = ("critical", "warning")
TOPO_FORMATS = ("auto", "rich", "text", "markdown", "json")


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


def _targets(outputs: list[str] | None) -> list[tuple[str, str]]:
    """``FORMAT=PATH`` options, checked before any work is done."""
    targets = []
    for option in outputs or []:
        fmt, sep, path = option.partition("=")
        if not sep or not path or fmt not in REPORT_FORMATS:
            raise UserError(
                f"--output {option!r}: expected FORMAT=PATH with FORMAT one of {', '.join(REPORT_FORMATS)}"
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
    fmt: str | None,
    verbose: bool,
    outputs: Sequence[tuple[str, str]] = (),
    fail_on: str | None = None,
    npd: bool = False,
) -> int:
    """Write every requested output and return the exit code the report (and --fail-on) says;
    the last line printed says why (stdout's status line for text and markdown, else stderr)."""
    from gdsdoctor.report.build import apply_fail_on, exit_line
    from gdsdoctor.report.render import MACHINE_FORMATS, render

    report = apply_fail_on(report, fail_on)
    for target_format, path in outputs:
        _write(render(report, target_format, verbose), path)
    if npd:
        from gdsdoctor.report.oneline import npd_result

        code, message = npd_result(report)
        print(message)
        return code
    shown = fmt if fmt is not None else (None if outputs else "text")
    if shown is not None:
        color = shown == "text" and sys.stdout.isatty()
        sys.stdout.write(render(report, shown, verbose, color=color))
    if shown is None or shown in MACHINE_FORMATS:
        print(exit_line(report), file=sys.stderr)
    return int(report["summary"]["exit_code"])


def check(
    path: str | None,
    host_root: Path,
    fmt: str | None,
    output: list[str] | None,
    fail_on: str | None,
    npd: bool,
    rules_dir: list[Path] | None,
    deadline: float,
    verbose: bool,
    bench: bool,
    bench_size: str | None,
    **job_options: Any,
) -> int:
    """Diagnose this host (read-only unless --bench): capture every source, analyse, print ranked findings."""
    from gdsdoctor.pipeline import check as run_check

    targets = _targets(output)
    job = _job(**job_options)
    if bench and not path:
        raise UserError("--bench needs --path: the directory to measure")
    bench_bytes = _size(bench_size) if bench_size else None
    with _progress_bar() if bench else contextlib.nullcontext(None) as progress:
        measure = None if progress is None else (progress, bench_bytes)
        report = run_check(host_root, path, rules_dir or [], deadline, job, measure).report
    return _finish(report, fmt, verbose, targets, fail_on, npd)


def collect(output: Path, path: str | None, host_root: Path, deadline: float, redact: bool) -> int:
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
    print(f"wrote {output}: {len(capture.artifacts)} artifacts, {ok} ok", file=sys.stderr)
    if redact:
        print(f"private redaction map (keep it, never attach it): {map_path_for(output)}", file=sys.stderr)
    return 0


def redact(files: list[Path], output_dir: Path | None) -> int:
    """Write redacted copies (NAME.redacted) of pasted files, and the private map beside them."""
    from gdsdoctor.capture.redact import redact_files

    for line in redact_files(files, output_dir):
        print(line, file=sys.stderr)
    return 0


def analyze(
    inputs: list[str],
    path: str | None,
    fmt: str | None,
    output: list[str] | None,
    fail_on: str | None,
    npd: bool,
    rules_dir: list[Path] | None,
    jobs: int | None,
    fleet: bool,
    verbose: bool,
    **job_options: Any,
) -> int:
    """Analyse a bundle or text files pasted into a ticket (recognised by content), or a fleet."""
    from gdsdoctor.fleet import expand_inputs, is_fleet
    from gdsdoctor.pipeline import analyze_paths

    paths = expand_inputs(inputs)
    if not paths:
        raise UserError(f"nothing matches {' '.join(inputs)}")
    job = _job(**job_options)
    targets = _targets(output)
    if fleet or is_fleet(paths):
        if npd:
            raise UserError("--npd reports on one node; a fleet summary has no NPD form")
        return _fleet(paths, path, rules_dir or [], jobs, fmt, targets, fail_on, job)
    return _finish(
        analyze_paths(paths, path, rules_dir or [], job).report, fmt, verbose, targets, fail_on, npd
    )


def _fleet(
    paths: list[Path],
    path: str | None,
    rules_dirs: list[Path],
    jobs: int | None,
    fmt: str | None,
    targets: list[tuple[str, str]],
    fail_on: str | None,
    job: dict[str, Any] | None = None,
) -> int:
    from gdsdoctor import fleet

    _check_fleet_formats(fmt, targets)
    with _progress(len(paths)) as advance:
        summary = fleet.analyse_fleet(paths, path, rules_dirs, jobs, advance, job)
    return _finish_fleet(fleet.apply_fail_on(summary, fail_on), fmt, targets)


def _check_fleet_formats(fmt: str | None, targets: list[tuple[str, str]]) -> None:
    from gdsdoctor.fleet import FLEET_FORMATS

    for name in [*([fmt] if fmt else []), *(f for f, _ in targets)]:
        if name not in FLEET_FORMATS:
            raise UserError(f"a fleet summary is written as {', '.join(FLEET_FORMATS)}, not {name}")


def _finish_fleet(summary: dict[str, Any], fmt: str | None, targets: list[tuple[str, str]]) -> int:
    from gdsdoctor import fleet

    for target_format, target in targets:
        _write(fleet.render(summary, target_format), target)
    shown = fmt if fmt is not None else (None if targets else "text")
    if shown is not None:
        sys.stdout.write(fleet.render(summary, shown, color=shown == "text" and sys.stdout.isatty()))
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


def fleet_merge(summaries: list[Path], fmt: str, output: list[str] | None, fail_on: str | None) -> int:
    """Merge fleet summaries of shards (e.g. Slurm array tasks) into one; counts add up."""
    import json

    from gdsdoctor import fleet

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
    return _finish_fleet(fleet.apply_fail_on(merged, fail_on), fmt, targets)


def explain(cause_id: str, inputs: list[Path], rules_dir: list[Path] | None) -> int:
    """Show which facts a cause needs, their values here, and which signals held."""
    from gdsdoctor.explain import explain_cause

    sys.stdout.write(explain_cause(cause_id, inputs, rules_dir or []))
    return 0


def topo(inputs: list[Path], host_root: Path, fmt: str) -> int:
    """Draw the PCIe/NUMA layout: GPUs, NVMe drives and NICs, their links, and misplacements."""
    from gdsdoctor.topo import render, topology_of

    tty = sys.stdout.isatty()
    chosen = ("rich" if tty else "text") if fmt == "auto" else fmt
    sys.stdout.write(render(topology_of(inputs, host_root), chosen, color=tty))
    return 0


def probes(fmt: str) -> int:
    """List every probe: what it runs or reads, and whether it needs root."""
    from gdsdoctor.explain import probes_markdown, probes_table

    sys.stdout.write(probes_markdown() if fmt == "markdown" else probes_table())
    return 0


def estimate(
    params: str,
    throughput: str,
    preset: str,
    component: list[str] | None,
    fsync: str,
    interval: str,
    gpus: int,
    budget: str | None,
    archive_throughput: str | None,
    units: str,
    fmt: str,
) -> int:
    """How long one synchronous checkpoint stalls the GPUs, and what it costs."""
    from gdsdoctor import estimate as model

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
    if fmt == "json":
        import json

        print(json.dumps(model.to_dict(result, units), indent=2))
    elif fmt == "markdown":
        sys.stdout.write(model.render_markdown(result, units))
    else:
        sys.stdout.write(model.render_text(result, units))
    return 0


def bench(
    path: Path, size: str | None, time_limit: float, engine: str, save_raw: Path | None, fmt: str
) -> int:
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
    if fmt == "json":
        import json

        print(json.dumps(runner.to_dict(result), indent=2))
    else:
        sys.stdout.write(runner.render_text(result))
    return 0


def _size(text: str) -> int:
    from gdsdoctor.estimate import EstimateError, parse_size

    try:
        return parse_size(text)
    except EstimateError as error:
        raise UserError(str(error)) from None


def _progress_bar():  # type: ignore[no-untyped-def]
    """A progress callback drawing a bar on stderr when it is a terminal, silent otherwise."""
    if not sys.stderr.isatty():
        return contextlib.nullcontext(lambda fraction, message: None)
    from rich.console import Console
    from rich.progress import Progress

    @contextlib.contextmanager
    def bar():  # type: ignore[no-untyped-def]
        with Progress(console=Console(stderr=True), transient=True) as progress:
            task = progress.add_task("bench", total=1.0)

            def update(fraction: float, message: str) -> None:
                progress.update(task, completed=fraction, description=message[:60])

            yield update

    return bar()


def rules_list(fmt: str, rules_dir: list[Path] | None) -> int:
    """List the causes of the diagnostic matrix."""
    from gdsdoctor.catalogue import render_catalogue
    from gdsdoctor.pipeline import rules

    sys.stdout.write(render_catalogue(rules(rules_dir or []), fmt))
    return 0


def rules_show(cause_id: str, rules_dir: list[Path] | None) -> int:
    """Show one cause in full."""
    from gdsdoctor.catalogue import render_cause
    from gdsdoctor.pipeline import rules

    found = [c for c in rules(rules_dir or []) if c.id == cause_id]
    if not found:
        raise UserError(f"no cause with id {cause_id!r}; `gdsdoctor rules list` shows them")
    sys.stdout.write(render_cause(found[0]))
    return 0


def rules_lint(paths: list[Path]) -> int:
    """Check rule files against the schema and for semantic errors (file:line: message)."""
    from gdsdoctor.engine.rules import builtin_rules_dir, lint_paths
    from gdsdoctor.pipeline import KNOWN_SECTIONS

    targets = paths or [builtin_rules_dir()]
    missing = [p for p in targets if not p.exists()]
    if missing:
        raise UserError(f"{missing[0]}: no such file or directory")
    causes, issues = lint_paths(targets, KNOWN_SECTIONS)
    for issue in issues:
        print(issue)
    print(f"{len(causes)} cause(s), {len(issues)} problem(s)", file=sys.stderr)
    return UNKNOWN_EXIT if issues else 0


# ---- the parser ------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse with gdsdoctor's error convention: one line, exit 3 (UNKNOWN). Options are never
    abbreviated: a health check's `--dead 30` must not mean something else after an upgrade."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, allow_abbrev=False, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UserError(f"{message} (`{self.prog} --help` shows the usage)")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is below 1")
    return value


def _add_path(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--path", help="Narrow the diagnosis to the checkpoint directory PATH.")


def _add_host_root(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host-root",
        type=Path,
        default=Path("/"),
        metavar="DIR",
        help="Where the host's / is mounted (e.g. /host in a container; default /).",
    )


def _add_deadline(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--deadline",
        type=float,
        default=DEFAULT_DEADLINE_S,
        metavar="SECONDS",
        help=f"Global time limit for capture (default {DEFAULT_DEADLINE_S:g}).",
    )


def _add_rules_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rules-dir",
        type=Path,
        action="append",
        metavar="DIR",
        help="Extra (site) rule directory; repeatable.",
    )


def _add_format(
    parser: argparse.ArgumentParser, choices: Sequence[str], default: str | None, help: str
) -> None:
    parser.add_argument(
        "--format", "-f", dest="fmt", choices=choices, default=default, metavar="FORMAT", help=help
    )


def _add_outputs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output",
        "-o",
        action="append",
        metavar="FORMAT=PATH",
        help="Also write FORMAT to PATH, atomically (e.g. prometheus=/var/lib/node_exporter/gdsdoctor.prom); "
        "repeatable; PATH - is stdout.",
    )
    parser.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        metavar="SEVERITY",
        help="Lowest severity that fails (non-zero exit): %(choices)s. Default: monitoring-plugin "
        "codes (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN). UNKNOWN always fails.",
    )


def _add_report_options(parser: argparse.ArgumentParser) -> None:
    """What every diagnosing command shares: formats, outputs, exit policy, rules, verbosity."""
    _add_format(
        parser,
        REPORT_FORMATS,
        None,
        "Format on stdout: %(choices)s (default text; none when only --output is given).",
    )
    _add_outputs(parser)
    parser.add_argument(
        "--npd",
        action="store_true",
        help="Kubernetes node-problem-detector custom plugin: exit 0 OK, 1 problem, 2 unknown; "
        "one short message on stdout.",
    )
    _add_rules_dir(parser)
    parser.add_argument(
        "--verbose", "-v", action="store_true", help="Show every source and inconclusive cause."
    )


def _add_job_options(parser: argparse.ArgumentParser) -> None:
    """The checkpoint job (see `_job`): turns a measured throughput into the stall it causes."""
    job = parser.add_argument_group("checkpoint job")
    job.add_argument("--params", help="Model parameter count (70B): judge the checkpoint stall and space.")
    job.add_argument("--preset", help="What a checkpoint saves (see `estimate`).")
    job.add_argument("--interval", help="Time between checkpoints (default 1h).")
    job.add_argument("--budget", help="Stall budget, share of wall time (default 5%%).")
    job.add_argument("--gpus", type=int, help="GPUs the checkpoint stalls (default 1).")
    job.add_argument(
        "--site-config",
        type=Path,
        metavar="YAML",
        help="YAML with a `checkpoint:` job description (params, ...).",
    )


Commands = argparse._SubParsersAction  # the sub-command table of a parser


def _command(commands: Commands, name: str, function: Callable[..., int]) -> argparse.ArgumentParser:
    """A sub-command running ``function``, described by its docstring."""
    summary = (function.__doc__ or "").strip()
    parser = commands.add_parser(name, help=summary, description=summary)
    parser.set_defaults(command=function, command_parser=parser)
    return parser


def _group(commands: Commands, name: str, summary: str) -> Commands:
    parser = commands.add_parser(name, help=summary, description=summary)
    return parser.add_subparsers(title="commands", metavar="COMMAND", required=True)


def _define_check(commands: Commands) -> None:
    parser = _command(commands, "check", check)
    _add_path(parser)
    _add_host_root(parser)
    _add_report_options(parser)
    _add_deadline(parser)
    parser.add_argument(
        "--bench",
        action="store_true",
        help="Also measure --path with fio/gdsio (writes temporary files there, removed afterwards).",
    )
    parser.add_argument(
        "--bench-size", metavar="SIZE", help="Data --bench writes: 4GiB (default 5%% of free space)."
    )
    _add_job_options(parser)


def _define_collect(commands: Commands) -> None:
    parser = _command(commands, "collect", collect)
    parser.add_argument(
        "--output", "-o", type=Path, required=True, help="Bundle to write: NAME.tar.gz or a directory."
    )
    _add_path(parser)
    _add_host_root(parser)
    _add_deadline(parser)
    parser.add_argument(
        "--redact",
        action="store_true",
        help="Replace host names, addresses, MACs, serials, NQNs, GUIDs and user names; "
        "the private map goes to OUTPUT.redaction-map.json (mode 0600), never into the bundle.",
    )


def _define_redact(commands: Commands) -> None:
    parser = _command(commands, "redact", redact)
    parser.add_argument("files", type=Path, nargs="+", metavar="FILE", help="Pasted text files to redact.")
    parser.add_argument(
        "--output-dir", type=Path, metavar="DIR", help="Where to write the copies (default: next to each)."
    )


def _define_analyze(commands: Commands) -> None:
    parser = _command(commands, "analyze", analyze)
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="A bundle (.tar.gz or directory) or pasted text files; or many bundles (a directory "
        "of bundles, several bundles, a quoted glob) for a fleet summary.",
    )
    _add_path(parser)
    _add_report_options(parser)
    parser.add_argument(
        "--jobs",
        "-j",
        type=_positive_int,
        metavar="N",
        help="Fleet: parallel processes (default: every core).",
    )
    parser.add_argument("--fleet", action="store_true", help="Summarise as a fleet even for one bundle.")
    _add_job_options(parser)


def _define_explain(commands: Commands) -> None:
    parser = _command(commands, "explain", explain)
    parser.add_argument("cause_id", metavar="CAUSE_ID", help="Cause id, as in `gdsdoctor rules list`.")
    parser.add_argument(
        "inputs", type=Path, nargs="*", metavar="INPUT", help="Bundle or pasted files; none: this host."
    )
    _add_rules_dir(parser)


def _define_topo(commands: Commands) -> None:
    parser = _command(commands, "topo", topo)
    parser.add_argument(
        "inputs",
        type=Path,
        nargs="*",
        metavar="INPUT",
        help="Bundle or pasted files (lspci -tv/-vvv, nvidia-smi topo -m…); none: this host.",
    )
    _add_host_root(parser)
    _add_format(
        parser,
        TOPO_FORMATS,
        "auto",
        "%(choices)s: a rich tree (terminal), plain text or markdown for tickets, json "
        "(default auto: rich on a terminal, else text).",
    )


def _define_probes(commands: Commands) -> None:
    _add_format(
        _command(commands, "probes", probes),
        FORMATS,
        "text",
        "Output format: %(choices)s (default %(default)s).",
    )


def _define_estimate(commands: Commands) -> None:
    parser = _command(commands, "estimate", estimate)
    parser.add_argument("--params", required=True, help="Parameter count: 70B, 7e10, 405b.")
    parser.add_argument("--throughput", required=True, help="Storage write throughput: 1.2GB/s, 400Gbit/s.")
    parser.add_argument(
        "--preset", default="bf16-adamw", help="What is saved per parameter (default bf16-adamw)."
    )
    parser.add_argument(
        "--component", action="append", metavar="NAME=BYTES", help="Override bytes/param; repeatable."
    )
    parser.add_argument("--fsync", default="0s", help="fsync/metadata time per checkpoint: 2s, 500ms.")
    parser.add_argument("--interval", default="1h", help="Time between checkpoint starts: 1h, 30m.")
    parser.add_argument("--gpus", type=int, default=1, help="GPUs stalled by the checkpoint.")
    parser.add_argument("--budget", help="Stall budget as share of wall time: 2%%, 0.02.")
    parser.add_argument("--archive-throughput", help="Archive tier throughput for the asynchronous flush.")
    parser.add_argument(
        "--units",
        choices=("si", "iec"),
        default="si",
        metavar="UNITS",
        help="Output units: si (GB) or iec (GiB); default si.",
    )
    _add_format(parser, FORMATS, "text", "Output format: %(choices)s (default %(default)s).")


def _define_bench(commands: Commands) -> None:
    parser = _command(commands, "bench", bench)
    parser.add_argument("path", type=Path, help="Directory on the checkpoint filesystem to measure.")
    parser.add_argument("--size", help="Test data size: 4GiB (default: 5%% of free space).")
    parser.add_argument(
        "--time-limit", type=float, default=300.0, metavar="SECONDS", help="Hard time limit (default 300)."
    )
    parser.add_argument("--engine", default="auto", help="auto, cpu-direct, libcufile or gdsio.")
    parser.add_argument(
        "--save-raw", type=Path, metavar="FILE", help="Write fio JSON / gdsio text here (for `analyze`)."
    )
    _add_format(parser, FORMATS, "text", "Output format: %(choices)s (default %(default)s).")


def _define_rules(commands: Commands) -> None:
    group = _group(commands, "rules", "List, show and lint the diagnostic rules.")
    listing = _command(group, "list", rules_list)
    _add_format(listing, FORMATS, "text", "Output format: %(choices)s (default %(default)s).")
    _add_rules_dir(listing)
    show = _command(group, "show", rules_show)
    show.add_argument("cause_id", metavar="CAUSE_ID", help="Cause id, as in `gdsdoctor rules list`.")
    _add_rules_dir(show)
    lint = _command(group, "lint", rules_lint)
    lint.add_argument("paths", type=Path, nargs="*", metavar="PATH", help="Rule files or directories.")


def _define_fleet(commands: Commands) -> None:
    group = _group(commands, "fleet", "Fleet summaries: merge the shards of a fleet analysis.")
    merge = _command(group, "merge", fleet_merge)
    merge.add_argument(
        "summaries",
        type=Path,
        nargs="+",
        metavar="SUMMARY",
        help="Fleet summaries (`analyze … --format json`).",
    )
    _add_format(merge, FORMATS, "text", "Output format: %(choices)s (default %(default)s).")
    _add_outputs(merge)


# In the order `gdsdoctor --help` lists them.
COMMANDS: dict[str, Callable[[Commands], None]] = {
    "check": _define_check,
    "collect": _define_collect,
    "redact": _define_redact,
    "analyze": _define_analyze,
    "explain": _define_explain,
    "topo": _define_topo,
    "probes": _define_probes,
    "estimate": _define_estimate,
    "bench": _define_bench,
    "rules": _define_rules,
    "fleet": _define_fleet,
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line; with ``only`` (a command name), that command alone. Each parser costs
    ~0.5 ms (argparse looks up message catalogues for its headings), and a health check runs
    one command: a test checks that a command parses, helps and errs the same either way."""
    parser = _Parser(
        prog="gdsdoctor",
        description="Diagnose the GPU checkpoint storage path: GPUDirect Storage, NVMe/NVMe-oF, PCIe/NUMA, "
        "filesystems. `gdsdoctor COMMAND --help` describes each command.",
    )
    parser.add_argument("--version", action="version", version=f"gdsdoctor {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for name, define in COMMANDS.items():
        if only is None or name == only:
            define(commands)
    return parser


def run(argv: Sequence[str]) -> int:
    """Parse ``argv`` and run the command; every expected failure is one line and exit 3."""
    parser = build_parser(argv[0] if argv and argv[0] in COMMANDS else None)
    if not argv:
        parser.print_help()
        print("gdsdoctor: give a command (listed above)", file=sys.stderr)
        return UNKNOWN_EXIT
    try:
        namespace, unknown = parser.parse_known_args(argv)
        options = vars(namespace)
        command, command_parser = options.pop("command"), options.pop("command_parser")
        if unknown:  # said by the command's parser, so that the error names its --help
            command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        return command(**options)
    except SystemExit as done:  # --help and --version
        return done.code if isinstance(done.code, int) else 0
    except _input_errors() as error:
        print(f"gdsdoctor: {error}", file=sys.stderr)
    except KeyboardInterrupt:
        print("gdsdoctor: interrupted", file=sys.stderr)
    except BrokenPipeError:  # the reader went away (`| head`): as quiet as a SIGPIPE would be
        pass
    except Exception as error:  # a bug: still one line and UNKNOWN, traceback only on request
        if os.environ.get("GDSDOCTOR_DEBUG"):
            raise
        print(
            f"gdsdoctor: internal error: {type(error).__name__}: {error} (GDSDOCTOR_DEBUG=1 shows more)",
            file=sys.stderr,
        )
    return UNKNOWN_EXIT


def main() -> NoReturn:
    """Entry point (the `gdsdoctor` script and `python -m gdsdoctor`)."""
    exit_now(run(sys.argv[1:]))


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
