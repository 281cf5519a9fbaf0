"""What automation gets when a diagnosing command cannot run at all (bad input, a usage error).

A health check reads a machine format, not stderr: an error that leaves stdout empty breaks
``| jq``, and an ``--output prometheus=FILE`` that is not rewritten keeps exporting the last
status for hours. So when ``check`` or ``analyze`` stops on an error, every machine format it
was asked for carries the UNKNOWN document (``report.build.unknown_report``: no finding, the
error as its reason), on stdout and in each ``--output`` file; the error line stays on stderr.
``--npd`` follows node-problem-detector's contract instead: one message line on stdout and exit
2 (its "unknown"; 3 would be read as a failure of the plugin itself).

The options are read from ``argv`` by hand: a usage error (an unknown flag) stops the command
line before any option is parsed, and that is exactly when automation must still get its answer.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path

DIAGNOSING = ("check", "analyze")
_FORMAT_FLAGS = ("--format", "-f")
_OUTPUT_FLAGS = ("--output", "-o")


def asked_outputs(argv: Sequence[str]) -> tuple[bool, str | None, list[tuple[str, str]]]:
    """(``--npd`` given, the ``--format`` named, the ``--output FORMAT=PATH`` pairs) of a
    diagnosing command's ``argv``; nothing for another command."""
    if not argv or argv[0] not in DIAGNOSING:
        return False, None, []
    npd, fmt, outputs = False, None, []
    words = list(argv[1:])
    for index, word in enumerate(words):
        if word == "--":
            break
        following = words[index + 1] if index + 1 < len(words) else None
        if word == "--npd":
            npd = True
        elif value := _value(word, following, _FORMAT_FLAGS):
            fmt = value
        elif value := _value(word, following, _OUTPUT_FLAGS):
            name, sep, path = value.partition("=")
            if sep and path:
                outputs.append((name, path))
    return npd, fmt, outputs


def _value(word: str, following: str | None, flags: tuple[str, str]) -> str | None:
    """The value of ``--long VALUE``, ``--long=VALUE``, ``-s VALUE`` or ``-sVALUE``."""
    long, short = flags
    if word in flags:
        return following
    if word.startswith(long + "="):
        return word[len(long) + 1 :]
    if word.startswith(short) and len(word) > len(short) and not word.startswith("--"):
        return word[len(short) :]
    return None


def answer_unknown(argv: Sequence[str], message: str, code: int) -> int:
    """Emit the UNKNOWN answer each machine format asked for in ``argv`` (the error ``message``
    is already on stderr) and return the exit code: ``code``, or NPD's unknown with ``--npd``."""
    npd, fmt, outputs = asked_outputs(argv)
    if not npd and fmt is None and not outputs:
        return code
    from gdsdoctor.cli.common import run_seconds
    from gdsdoctor.report.build import unknown_report
    from gdsdoctor.report.render import FORMATS, MACHINE_FORMATS, render

    report = unknown_report(message, "live" if argv[0] == "check" else "files")
    from gdsdoctor.report.html import available

    for name, path in outputs:
        if name in FORMATS and (name != "html" or available()):  # the extra's absence was said
            _write_quietly(render(report, name, run_s=run_seconds()), path)
    if npd:
        from gdsdoctor.report.oneline import NPD_UNKNOWN, npd_result

        print(npd_result(report)[1])
        return NPD_UNKNOWN
    if fmt in MACHINE_FORMATS:
        sys.stdout.write(render(report, fmt, run_s=run_seconds()))
    return code


def _write_quietly(text: str, path: str) -> None:
    """The UNKNOWN file written where it can be; a path that cannot be written was (or will be)
    the error already said, one line is enough."""
    from gdsdoctor.outputs import write_atomic

    if path == "-":
        sys.stdout.write(text)
        return
    with contextlib.suppress(OSError):
        write_atomic(Path(path), text)
