"""The typer application: the command table, the sub-apps, and how a run ends.

Exit codes (monitoring-plugin convention): 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN, which also
covers bad input and usage errors. click exits 2 on a usage error, which here would read as
CRITICAL and drain a node over a typo: the app runs with click's standalone mode off and every
usage error becomes one line naming the command's `--help`, exit 3.
"""

import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Annotated, Any, NoReturn

import typer

# typer 0.26-0.28 carry their own click as typer._click (pyproject.toml pins that range): its
# exceptions are what a usage error raises; typer re-exports only some of them.
from typer import Abort, Exit, TyperException
from typer._click.exceptions import NoArgsIsHelpError, UsageError

from gdsdoctor import __version__
from gdsdoctor.cli import diagnose, rules, tools, watch
from gdsdoctor.cli import diff as diff_command
from gdsdoctor.cli.common import start_run
from gdsdoctor.cli.options import UNKNOWN_EXIT
from gdsdoctor.cli.unknown import answer_unknown
from gdsdoctor.errors import UserError
from gdsdoctor.textwidth import terminal_width, wrap

PROGRAM = "gdsdoctor"
COMPLETE_VAR = "_GDSDOCTOR_COMPLETE"  # set by the completion script when the shell asks for words
SETTINGS: dict[str, Any] = {"help_option_names": ["--help", "-h"]}
# (name, function or sub-app table, help of a sub-app): in the order `gdsdoctor --help` lists them.
Table = dict[str, Callable[..., int]]
COMMANDS: dict[str, Callable[..., int] | tuple[str, Table]] = {
    "check": diagnose.check,
    "collect": tools.collect,
    "redact": tools.redact,
    "analyze": diagnose.analyze,
    "diff": diff_command.diff,
    "explain": rules.explain,
    "topo": tools.topo,
    "probes": tools.probes,
    "estimate": tools.estimate,
    "bench": tools.bench,
    "watch": watch.watch,
    "rules": (
        "List, show and lint the diagnostic rules.",
        {"list": rules.rules_list, "show": rules.rules_show, "lint": rules.rules_lint},
    ),
    "fleet": ("Fleet summaries: merge the shards of a fleet analysis.", {"merge": diagnose.fleet_merge}),
}


def _show_version(value: bool) -> None:
    if value:
        print(f"{PROGRAM} {__version__}")
        raise typer.Exit()


def _program(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Diagnose the GPU checkpoint storage path: GPUDirect Storage, NVMe/NVMe-oF, PCIe/NUMA,
    filesystems. `gdsdoctor COMMAND --help` describes each command.

    Exit codes: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (also every usage or input error)."""


def _typer(help_text: str | None = None, completion: bool = False) -> typer.Typer:
    return typer.Typer(
        help=help_text,
        rich_markup_mode="rich",
        add_completion=completion,
        pretty_exceptions_enable=False,  # an error is one line (GDSDOCTOR_DEBUG=1 shows the traceback)
        context_settings=SETTINGS,
    )


def build_app(only: str | None = None) -> typer.Typer:
    """The command line; with ``only`` (a command name), that command alone: a health check runs
    one command, and typer reads each command's signature when the app is built. A test checks
    that a command helps and errs the same either way."""
    app = _typer(completion=True)
    app.callback()(_program)
    for name, entry in COMMANDS.items():
        if only is not None and name != only:
            continue
        if isinstance(entry, tuple):
            summary, table = entry
            group = _typer(summary)
            for sub_name, function in table.items():
                group.command(sub_name)(function)
            app.add_typer(group, name=name)
        else:
            app.command(name)(entry)
    return app


def usage_line(error: UsageError) -> str:
    """A click usage error as one line naming the `--help` of the command it concerns."""
    command = error.ctx.command_path if error.ctx is not None else PROGRAM
    if isinstance(error, NoArgsIsHelpError):  # a group named without its command
        message = "give a command"
    else:
        message = " ".join(error.format_message().split())
    return f"{message} (`{command} --help` shows the usage)"


class PipeSafeStream:
    """stdout whose reader may go away (`| head -1`): what is written after that is dropped and
    the command ends with its own exit code. A closed pipe is the reader's choice, not an error.
    A stdout that is closed (``>&-``: Python gives None) or full (``> /dev/full``) loses the
    report: one line, exit 3 (UserError). A locale that cannot spell a character (Latin-1,
    ASCII) gets it as an escape, never a UnicodeEncodeError."""

    def __init__(self, stream: Any) -> None:
        if stream is not None and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
        self._stream = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        if self._stream is None:
            raise UserError("cannot write the output: stdout is closed")
        if not self.reader_gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self.reader_gone = True
            except OSError as error:
                raise UserError(f"cannot write the output to stdout ({error.strerror})") from None
        return len(text)

    def flush(self) -> None:
        if self._stream is not None and not self.reader_gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self.reader_gone = True
            except OSError as error:
                raise UserError(f"cannot write the output to stdout ({error.strerror})") from None

    def __getattr__(self, name: str) -> Any:  # isatty, encoding, fileno…: the real stream's
        if self._stream is None and name == "isatty":
            return lambda: False  # a closed stdout: the command runs, its first write says so
        return getattr(self._stream, name)


def click_command(only: str | None = None) -> Any:
    """The click command of :func:`build_app`, its arguments in the one metavar style of the
    options (``PATH``, ``INPUT...``, ``[INPUT]...`` when optional): typer added a type column to
    each argument (``<str>``, ``<path>``) and wrote a required one in braces (``{path}``)."""
    root = typer.main.get_command(build_app(only))
    pending = [root]
    while pending:
        command = pending.pop()
        pending += list(getattr(command, "commands", {}).values())
        for param in command.params:
            if param.param_type_name == "argument":
                metavar = param.metavar or (param.name or "").upper()
                if not param.required and not metavar.startswith("["):
                    metavar = f"[{metavar}]"
                param.metavar = metavar
                param.make_metavar = lambda *_args, metavar=metavar, **_kwargs: metavar
                param.type = _Untyped(param.type)
    return root


class _Untyped:
    """A click parameter type as it was, less its own metavar (the argument's names it)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def get_metavar(self, *_args: Any, **_kwargs: Any) -> str:
        return ""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._inner(*args, **kwargs)


def _invoke(argv: list[str]) -> int:
    only = None  # every command: for `--help`, completion and an unknown command's error
    if COMPLETE_VAR not in os.environ and argv[0] in (*COMMANDS, "--version"):
        only = argv[0]  # `--version` names no command: none is built
    command = click_command(only)
    # The shell asking for completions (the script `--install-completion` installs): answer, exit.
    command._main_shell_completion({}, PROGRAM, COMPLETE_VAR)  # type: ignore[attr-defined]
    with command.make_context(PROGRAM, argv) as context:
        return int(command.invoke(context) or 0)


def run(argv: Sequence[str]) -> int:
    """Parse ``argv`` and run the command; every expected failure is one line and exit 3 (with
    the UNKNOWN document of each machine format a diagnosing command was asked for, and NPD's
    exit 2 with ``--npd``: cli/unknown.py)."""
    if not argv and COMPLETE_VAR not in os.environ:
        run(["--help"])
        print(f"{PROGRAM}: give a command (listed above)", file=sys.stderr)
        return UNKNOWN_EXIT
    if sys.stderr is not None and hasattr(sys.stderr, "reconfigure"):
        sys.stderr.reconfigure(errors="backslashreplace")
    start_run()
    stdout, sys.stdout = sys.stdout, PipeSafeStream(sys.stdout)
    try:
        message = _failure(list(argv))
        if isinstance(message, int):
            return message
        if message is None:
            return UNKNOWN_EXIT
        print(_for_stderr(f"{PROGRAM}: {message}"), file=sys.stderr)
        try:
            return answer_unknown(argv, message, UNKNOWN_EXIT)
        except UserError:  # stdout closed or full: the line above said why
            return UNKNOWN_EXIT
    finally:
        sys.stdout = stdout


def _for_stderr(line: str) -> str:
    """The error line, wrapped between words on a terminal (a script reading a pipe still gets
    one line): the terminal itself would cut words."""
    if not sys.stderr.isatty():
        return line
    return "\n".join(wrap(line, terminal_width(), "", "  "))


def _failure(argv: list[str]) -> int | str | None:
    """The command's exit code, or the one-line message of what stopped it (None: nothing to say)."""
    try:
        code = _invoke(argv)
        sys.stdout.flush()  # a full stdout fails here, while the exit code can still say so
        return code
    except (Exit, SystemExit) as done:  # --help, --version, --show-completion, a completion answer
        code = done.exit_code if isinstance(done, Exit) else done.code
        return code if isinstance(code, int) else 0
    except UsageError as error:
        return usage_line(error)
    except (TyperException, Abort) as error:
        return " ".join(str(error).split()) or "aborted"
    except UserError as error:  # the user-fixable branch of the tree (gdsdoctor.errors)
        return str(error)
    except KeyboardInterrupt:
        return "interrupted"
    except BrokenPipeError:  # a pipe other than stdout went away: as quiet as a SIGPIPE would be
        return None
    except Exception as error:  # a bug: still one line and UNKNOWN, traceback only on request
        if os.environ.get("GDSDOCTOR_DEBUG"):
            raise
        return f"internal error: {type(error).__name__}: {error} (GDSDOCTOR_DEBUG=1 shows more)"


def main() -> NoReturn:
    """The command line as the whole process (gdsdoctor.entry, the `gdsdoctor` script's and
    `python -m gdsdoctor`'s entry point, calls it). SIGTERM and SIGHUP end the run like Ctrl-C:
    "interrupted", exit 3, every probe killed (gdsdoctor.signals)."""
    from gdsdoctor.signals import install_signal_handlers

    install_signal_handlers()
    exit_now(run(sys.argv[1:]))


def exit_now(code: int) -> NoReturn:
    """Leave without the interpreter's teardown: freeing every module and object is a
    measurable part of a `check` that health checks run every few minutes (docs/performance.md).
    What teardown would do that matters is done here: the commands still running are killed
    (the runner's exit handler), and what we wrote is flushed (a reader that went away is not
    an error of ours)."""
    runner = sys.modules.get("gdsdoctor.capture.runner")
    if runner is not None:
        runner.kill_running()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):  # None: closed at start
            stream.flush()
    os._exit(code)
