"""Command line: a typer app whose commands are thin functions that call the pipeline and pick
a renderer (``app``: the table and how a run ends; ``options``: the shared options;
``diagnose``: check, analyze, fleet merge; ``tools``: the other commands).

A module only some commands need is imported inside those commands (the command boundary is
the one place for deferred imports): `--version`, `--help` and health checks start fast.
``run(argv) -> exit code`` is the whole contract; ``main()`` is the script's entry point.
"""

from gdsdoctor.cli.app import build_app, exit_now, main, run
from gdsdoctor.cli.options import DEFAULT_DEADLINE_S, FORMATS, REPORT_FORMATS, UNKNOWN_EXIT

__all__ = [
    "DEFAULT_DEADLINE_S",
    "FORMATS",
    "REPORT_FORMATS",
    "UNKNOWN_EXIT",
    "build_app",
    "exit_now",
    "main",
    "run",
]
