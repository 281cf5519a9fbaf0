"""``--deadline`` over a whole offline analysis: reading, parsing, deriving, the rules, the report.

A hostile bundle can be slow to parse without being slow to read (every parser is linear, but
a 64 MiB member of a slow format still takes a while), and one such bundle must not stall
`analyze` or a fleet run. :func:`analysis_deadline` arms a real-time timer; when it fires,
:class:`DeadlinePassed` is raised wherever the analysis is, between two Python bytecodes
(the regular expressions, the one C code that could run long, are linear: docs/security-patterns.md).
It is a ``BaseException`` so that no ``except Exception`` around a parser (a parser bug is
reported, never raised) can swallow it. :func:`doing` records the step being done, so the one
line the user gets names what was not finished.

The timer is SIGALRM, which only the main thread receives; elsewhere (the API called from a
thread) there is no timer and the analysis runs to its end. A timer already armed by the
program that imports gdsdoctor is left alone the same way.
"""

from __future__ import annotations

import contextlib
import math
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

_step = ["starting"]  # what the analysis is doing now (one list: set from anywhere, no global)


class DeadlinePassed(BaseException):
    """The analysis deadline passed; the message names the step that was not finished."""


def doing(what: str) -> None:
    """Record the step the analysis is starting (``parsing nvme_subsys (cmd/nvme-list-subsys.txt)``)."""
    _step[0] = what


def current_step() -> str:
    return _step[0]


@contextlib.contextmanager
def analysis_deadline(seconds: float | None) -> Iterator[None]:
    """Within the block, :class:`DeadlinePassed` is raised ``seconds`` from now (no limit when
    ``seconds`` is None, infinite, or this is not the main thread, or a timer is already set)."""
    armed = (
        seconds is not None
        and math.isfinite(seconds)
        and seconds > 0
        and threading.current_thread() is threading.main_thread()
        and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    )
    if not armed:
        yield
        return
    doing("starting")
    previous, unraisable = signal.signal(signal.SIGALRM, _passed), sys.unraisablehook
    sys.unraisablehook = _dropping(unraisable)
    signal.setitimer(signal.ITIMER_REAL, seconds)  # type: ignore[arg-type]
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        sys.unraisablehook = unraisable


def _dropping(hook: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``hook``, but silent for a DeadlinePassed dropped where it could not be raised (the
    timer fires again): the user gets one line, not "Exception ignored in …"."""

    def unraisable(info: Any) -> Any:
        return None if isinstance(info.exc_value, DeadlinePassed) else hook(info)

    return unraisable


def _passed(signum: int, frame: FrameType | None) -> None:
    # A handler may run inside a gc callback or a __del__, where an exception is printed and
    # dropped instead of raised (one was, and the analysis ran to its end): the timer is armed
    # again until the exception lands in the analysis, whose end disarms it.
    signal.setitimer(signal.ITIMER_REAL, _RETRY_S)
    raise DeadlinePassed(current_step())


_RETRY_S = 0.05
