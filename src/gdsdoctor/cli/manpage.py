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

# What a first hour asks, one command each (the README's table, shortest form).
EXAMPLES = (
    ("gdsdoctor check --path /mnt/ckpt", "Diagnose this node for the job's checkpoint directory."),
    ("gdsdoctor collect -o node.tar.gz", "Collect a bundle on the node (0600: it holds the kernel log)."),
    ("gdsdoctor analyze node.tar.gz --path /mnt/ckpt", "Analyze that bundle elsewhere, as check would."),
    ("gdsdoctor analyze gdscheck.txt dmesg.txt mounts.txt", "Analyze outputs pasted into a ticket."),
    ("gdsdoctor analyze bundles/ -f json > fleet.json", "A fleet: causes with their nodes, outliers."),
    ("gdsdoctor diff before.tar.gz after.tar.gz", "What a change on one node fixed, and what it broke."),
    ("gdsdoctor explain nvidia-fs-not-loaded --read-only",
     "Why a cause fired or not, and its read-only commands."),
    ("gdsdoctor explain checkpoint-stall-over-budget fio.json --params 70B -f json",
     "The same, for a job, as JSON."),
    ("gdsdoctor estimate --params 70B --throughput 1.2GB/s --gpus 64 --budget 2%",
     "How long a checkpoint stalls the GPUs; exit 1 and a status line when the budget is missed."),
    ("gdsdoctor check --format slurm --fail-on critical", "The drain reason a Slurm health check sets."),
    ("gdsdoctor check -o prometheus-fired=/var/lib/node_exporter/textfile/gdsdoctor.prom",
     "Metrics for node_exporter: the status and the causes that fired."),
    ("gdsdoctor rules list | grep nvme", "One line per cause in a pipe."),
)  # fmt: skip
# Every variable the code reads (a test greps the sources for os.environ and checks this list).
ENVIRONMENT = (
    ("GDSDOCTOR_CONFIG", "the site config to read instead of /etc/gdsdoctor/config.yaml (it must exist)."),
    ("GDSDOCTOR_DEBUG", "set: an internal error shows its traceback instead of one line."),
    ("GDSDOCTOR_RUNTIME_DIR", "where the locks that keep one copy of each probe command live (default "
                              "/run/gdsdoctor as root, else $XDG_RUNTIME_DIR/gdsdoctor)."),
    ("XDG_RUNTIME_DIR", "see GDSDOCTOR_RUNTIME_DIR."),
    ("GDSDOCTOR_SBIN_DIRS", "directories searched after PATH for the tools gdsdoctor runs, colon-separated "
                            "(default /usr/local/sbin:/usr/sbin:/sbin; empty: none)."),
    ("PATH", "where the tools gdsdoctor runs (nvme, lspci, gdscheck...) are found."),
    ("COLUMNS", "the width text output wraps at (default the terminal's; 100 in a pipe)."),
    ("CUFILE_ENV_PATH_JSON", "the cufile.json read instead of /etc/cufile.json, as libcufile does "
                             "(only for this host, not for --host-root)."),
    ("CUFILE_LOGFILE_PATH", "the cufile.log read instead of ./cufile.log, as libcufile does."),
    ("CUFILE_*, KVIKIO_COMPAT_MODE, LIBCUDF_CUFILE_POLICY",
     "read as evidence: they override cufile.json keys for the processes that inherit them."),
    ("CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES, SLURM_JOB_ID, SLURM_JOB_GPUS, SLURM_STEP_GPUS, "
     "SLURM_GPUS_ON_NODE", "read as evidence: which GPUs this job or container may see."),
    ("_GDSDOCTOR_COMPLETE", "set by the shell completion script when the shell asks for words."),
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
    lines.append(".SH ENVIRONMENT")
    for name, meaning in ENVIRONMENT:
        lines += [".TP", f"\\fB{escape(name)}\\fR", escape(meaning)]
    lines.append(".SH FILES")
    for path, meaning in FILES:
        lines += [".TP", f"\\fI{escape(path)}\\fR", escape(meaning)]
    lines.append(".SH EXAMPLES")
    for command, meaning in EXAMPLES:
        lines += [".TP", f"\\fB{escape(command)}\\fR", escape(meaning)]
    see_also = "\\fBgdsdoctor\\fR \\fICOMMAND\\fR \\fB\\-\\-help\\fR; nvidia\\-smi(1), nvme(1)"
    lines += [".SH SEE ALSO", see_also]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
