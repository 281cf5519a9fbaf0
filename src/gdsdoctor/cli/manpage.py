"""The man page, gdsdoctor(1), written from the command line itself (the typer app's commands,
arguments, options and their help), so it never drifts from ``--help``. The wheel's build hook
(hatch_build.py) writes it as ``share/man/man1/gdsdoctor.1``; ``python -m gdsdoctor.cli.manpage``
prints it.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Iterator
from typing import Any

from gdsdoctor import __version__
from gdsdoctor.cli.app import _program, click_command

_CODE = re.compile(r"`([^`]+)`")
_MARKUP = re.compile(r"\[/?(?:bold|dim|italic|cyan|green|red|yellow|magenta)\]")

EXIT_STATUS = (
    ("0", "OK: no critical or warning finding."),
    ("1", "WARNING: the worst finding is a warning."),
    ("2", "CRITICAL: a critical finding."),
    ("3", "UNKNOWN: nothing could be judged, a partial run that found nothing, or bad input "
          "(a usage error, a missing file): one line on stderr."),
)  # fmt: skip
FILES = (
    ("/etc/gdsdoctor/config.yaml", "the site config: the checkpoint job and acknowledged findings "
                                   "(or $GDSDOCTOR_CONFIG)."),
)  # fmt: skip


def commands() -> list[tuple[str, Any]]:
    """Every command, subcommands included, as (``gdsdoctor rules show``, click command)."""
    root = click_command()
    return list(_walk("gdsdoctor", root))


def _walk(name: str, command: Any) -> Iterator[tuple[str, Any]]:
    children = getattr(command, "commands", None)
    if children is None:
        yield name, command
        return
    for child_name, child in children.items():
        if not child.hidden:
            yield from _walk(f"{name} {child_name}", child)


def escape(text: str) -> str:
    """Text safe in roff: backslashes and hyphens escaped, characters beyond ASCII as groff's
    ``\\[uXXXX]`` (the page renders in any locale), no line starting a request."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    text = "".join(c if ord(c) < 128 else f"\\[u{ord(c):04X}]" for c in text)
    return "\n".join("\\&" + line if line.startswith((".", "'")) else line for line in text.split("\n"))


def prose(text: str) -> str:
    """Help text as roff: `code` in bold, rich markup dropped, paragraphs kept."""
    text = _MARKUP.sub("", text or "")
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    marked = [_CODE.sub(lambda m: f"\\fB{m[1]}\\fR", escape(p)) for p in paragraphs]
    return "\n.PP\n".join(marked)


def _params(command: Any, ctx: Any) -> list[str]:
    lines: list[str] = []
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        if param.param_type_name == "argument":
            lines += [".TP", f"\\fI{escape(param.human_readable_name)}\\fR", prose(_argument_help(param))]
            continue
        record = param.get_help_record(ctx)
        if record is not None:
            lines += [".TP", f"\\fB{escape(record[0])}\\fR", prose(record[1]) or "\\&"]
    return lines


def _argument_help(param: Any) -> str:
    return getattr(param, "help", None) or ""


def render() -> str:
    """gdsdoctor(1) in roff (man macros)."""
    root = click_command()
    lines = [
        f'.TH GDSDOCTOR 1 "" "gdsdoctor {__version__}" "User Commands"',
        ".SH NAME",
        "gdsdoctor \\- diagnose the GPU checkpoint storage path",
        ".SH SYNOPSIS",
        "\\fBgdsdoctor\\fR \\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGUMENTS\\fR]",
        ".SH DESCRIPTION",
        prose(root.help or inspect.getdoc(_program) or ""),
        ".SH COMMANDS",
    ]
    for name, command in commands():
        ctx = command.make_context(name, [], resilient_parsing=True)
        usage = " ".join(command.collect_usage_pieces(ctx))
        lines += [f".SS {escape(name)}", f"\\fB{escape(name)}\\fR {escape(usage)}", ".PP"]
        lines += [prose(command.help or ""), *_params(command, ctx)]
    lines.append(".SH EXIT STATUS")
    for code, meaning in EXIT_STATUS:
        lines += [".TP", f"\\fB{code}\\fR", escape(meaning)]
    lines.append(".SH FILES")
    for path, meaning in FILES:
        lines += [".TP", f"\\fI{escape(path)}\\fR", escape(meaning)]
    see_also = "\\fBgdsdoctor\\fR \\fICOMMAND\\fR \\fB\\-\\-help\\fR; nvidia\\-smi(1), nvme(1)"
    lines += [".SH SEE ALSO", see_also]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
