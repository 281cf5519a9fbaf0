"""`gdsdoctor watch`: diagnose a checkpoint while it is being written (see gdsdoctor.watch)."""

import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from gdsdoctor.cli.options import (
    Budget,
    Gpus,
    HostRoot,
    Interval,
    NoConfig,
    Params,
    Preset,
    RulesDirs,
    SiteConfig,
    Verbose,
)
from gdsdoctor.errors import UserError

WATCH_FORMATS = ("text", "json")
MIN_EVERY_S = 0.1


def watch(
    path: Annotated[
        str,
        typer.Option(
            "--path",
            metavar="PATH",
            show_default=False,
            help="The checkpoint directory to watch (default: .).",
        ),
    ] = ".",
    every: Annotated[
        str,
        typer.Option(
            "--every", metavar="DURATION", show_default=False, help="Time between samples (default 1s)."
        ),
    ] = "1s",
    duration: Annotated[
        str | None, typer.Option("--duration", metavar="DURATION", help="Stop after DURATION (e.g. 10m).")
    ] = None,
    until_idle: Annotated[
        bool, typer.Option("--until-idle", help="Stop 30 s after the last write phase (or the start).")
    ] = False,
    record: Annotated[
        str | None,
        typer.Option(
            "--record",
            metavar="FILE",
            help="Also write a bundle (timeline + a normal collect) that `gdsdoctor analyze FILE` replays; "
            "FILE.tar.gz or a directory.",
        ),
    ] = None,
    fmt: Annotated[
        Literal[WATCH_FORMATS],  # type: ignore[valid-type]
        typer.Option(
            "--format",
            "-f",
            metavar="FORMAT",
            show_default=False,
            help="text (a live view on a terminal) or json (one object a line: samples, events, "
            "phases, then the report) (default text).",
        ),
    ] = "text",
    host_root: HostRoot = Path("/"),
    rules_dir: RulesDirs = None,
    verbose: Verbose = False,
    params: Params = None,
    preset: Preset = None,
    interval: Interval = None,
    budget: Budget = None,
    gpus: Gpus = None,
    site_config: SiteConfig = None,
    no_config: NoConfig = False,
) -> int:
    """Watch the checkpoint path while a checkpoint is written: write phases, what limited them,
    kernel and udev events, judged by the rules. Ctrl-C ends it with the report so far."""
    from gdsdoctor.checkpoint.stall import parse_duration
    from gdsdoctor.cli.common import path_failure
    from gdsdoctor.cli.diagnose import failing_path_report, finish, job_of, site_config_of
    from gdsdoctor.cli.tools import bundle_target
    from gdsdoctor.errors import EstimateError
    from gdsdoctor.watch.session import Options, run

    if duration is not None and until_idle:
        raise UserError("give --duration or --until-idle, not both")
    try:
        every_s = parse_duration(every, what="--every")
        duration_s = parse_duration(duration, what="--duration") if duration is not None else None
    except EstimateError as error:
        raise UserError(str(error)) from None
    if every_s < MIN_EVERY_S:
        raise UserError(f"--every {every}: at least {MIN_EVERY_S:g}s (each sample reads every counter)")
    job = job_of(params, preset, interval, budget, gpus, site_config_of(site_config, no_config))
    # Checked now, not after an hour of watching: the name, its directory, nothing there yet.
    target = bundle_target(record, "--record") if record is not None else None
    options = Options(
        path, every_s, duration_s, until_idle, target, job or None, host_root, tuple(rules_dir or ())
    )
    # a path that fails (EIO, ESTALE, a hang) has nothing to watch: one line and the diagnosis
    if (
        problem := path_failure(str(host_root / path.lstrip("/")) if path.startswith("/") else path)
    ) is not None:
        report = failing_path_report("watch", path, problem, host_root)
        return _finish_json(report) if fmt == "json" else finish(report, "text", verbose)
    if fmt == "json":
        _state, analysis = run(options, _print_json)
        return _finish_json(analysis.report)
    with _live_view() as emit:
        _state, analysis = run(options, emit)
    return finish(analysis.report, "text", verbose)


def _print_json(record: dict[str, Any], _state: Any) -> None:
    from gdsdoctor.watch.timeline import to_line

    print(to_line({k: v for k, v in record.items() if k != "line"}), flush=True)


def _finish_json(report: dict[str, Any]) -> int:
    from gdsdoctor.report.build import exit_line

    print(json.dumps({"type": "report", **report}, separators=(",", ":")), flush=True)
    print(exit_line(report), file=sys.stderr)
    return int(report["summary"]["exit_code"])


@contextlib.contextmanager
def _live_view() -> Any:
    """A rich live view on a terminal; otherwise a line per phase and per event."""
    from gdsdoctor.watch.view import ending_line, event_line, header_lines, phase_line, renderable, stall_line

    if not sys.stdout.isatty():

        def lines(record: dict[str, Any], state: Any) -> None:
            if record["type"] == "header":
                print("\n".join([*header_lines(record), ending_line(state, time.time())]), flush=True)
            elif record["type"] == "phase":
                print(phase_line(record), flush=True)
                if (projected := stall_line(state)) is not None:
                    print(projected, flush=True)
            elif record["type"] == "event":
                print(event_line(record), flush=True)

        yield lines
        return
    from rich.live import Live

    with Live(refresh_per_second=4, transient=False) as live:

        def update(record: dict[str, Any], state: Any) -> None:
            if record["type"] in ("sample", "event"):
                live.update(renderable(state))

        yield update
