"""What several commands share: inputs that must exist, sizes given on the command line, the
progress bar of a measurement (``check --bench``, ``bench``), a checkpoint path that fails
(``bench``, ``watch``) and the run's clock (the Prometheus formats' run duration)."""

import contextlib
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gdsdoctor.errors import UserError

_RUN_STARTED = [time.monotonic()]  # the process's start, until run() marks each command's


def start_run() -> None:
    """A command starts: its run duration counts from here (cli.app.run, before parsing)."""
    _RUN_STARTED[0] = time.monotonic()


def run_seconds() -> float:
    """Seconds since the command started: capture, analysis, report."""
    return time.monotonic() - _RUN_STARTED[0]


def existing(paths: Sequence[Path]) -> list[Path]:
    """Inputs named on the command line must exist: a typo is one line, not an empty report."""
    for path in paths:
        if not path.exists():
            raise UserError(f"{path}: no such file or directory")
    return list(paths)


def size_of(text: str) -> int:
    from gdsdoctor.checkpoint.stall import parse_size

    return parse_size(text)


def progress_bar():  # type: ignore[no-untyped-def]
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


def path_failure(path: str) -> str | None:
    """What ``stat`` on a checkpoint path answers, bounded (probes/path_stat.py): one line
    naming the error when the path fails with an error about its filesystem (EIO, ESTALE,
    ENOTCONN, a hang), None when it answers. ``UserError`` when it does not exist: a command
    that must work in the directory (bench, watch) has nothing to work on."""
    from gdsdoctor.errors import ParseError, Unavailable
    from gdsdoctor.probes import path_stat

    try:
        section = path_stat.parse(path_stat.reader(path)(Path("/")).decode(), path_stat.ARTIFACT)
    except (Unavailable, ParseError):
        return None  # no stat to ask: the command meets the path as it is
    if section["errno"] == "ENOENT":
        raise UserError(f"{path}: no such file or directory")
    if not section["failed"]:
        return None
    if section["hung"]:
        return f"{path}: stat did not answer within {path_stat.STAT_TIMEOUT_S:g} s"
    return f"{path}: {section['error']} ({section['errno']})"


def measured(path: str, measure: Callable[[], Any]) -> tuple[Any, str | None]:
    """``measure()`` of a checkpoint path (bench), or None and why not: the path fails stat
    (``path_failure``), is on a read-only mount (EROFS), or failed while measured (an OSError)."""
    if (problem := path_failure(path) or _read_only(path)) is not None:
        return None, problem
    try:
        return measure(), None
    except OSError as error:
        return None, path_failure(path) or f"{error.filename or path}: {error.strerror or error}"


def _read_only(path: str) -> str | None:
    """A path on a read-only mount (EROFS for every write): asked only once stat answered."""
    import os

    try:
        flags = os.statvfs(path).f_flag
    except OSError:
        return None
    return f"{path}: Read-only file system (EROFS)" if flags & os.ST_RDONLY else None


def say_path_problem(capture: Any, path: str | None) -> None:
    """A --path that fails (EIO, ESTALE, a hang) or does not exist is said in one line, with the
    diagnosis of what the bundle recorded: whoever collects learns it before sending it."""
    from gdsdoctor.pipeline import analyze_capture, path_problem
    from gdsdoctor.report.build import exit_line

    problem = path_problem(capture) if path else None
    if problem is None:
        return
    report = analyze_capture(capture).report
    print(f"gdsdoctor collect: --path {path} {problem}; the bundle records it", file=sys.stderr)
    print(exit_line(report), file=sys.stderr)
