"""SIGTERM and SIGHUP end a run the way Ctrl-C does.

``timeout 60 gdsdoctor check``, a health-check agent giving up, systemd stopping a unit, or an
ssh session closing sends SIGTERM or SIGHUP. By default they kill the interpreter on the spot:
no ``finally`` runs, so probe commands (each in a session of its own) outlive us under PID 1,
``bench`` leaves fio writing and its scratch directory on the measured filesystem, and a
bundle's temporary file stays behind. :func:`install_signal_handlers` makes both signals (and
SIGINT) raise :class:`Interrupted`, a ``KeyboardInterrupt``, in the main thread: every cleanup
that already runs on Ctrl-C runs, and the command line reports "interrupted" and exits 3.

Only a process that gdsdoctor owns (the command line) installs them: it also takes charge of
every process its commands leave behind (see ``capture.runner``), which a library must not do
to the program that imports it.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from types import FrameType

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# The kernel may hand a signal sent to the process to any of its threads; Python runs the
# handler in the main thread only, when that thread next wakes. A wait of the main thread is
# made in slices this long, so that a signal taken by a probe thread still ends it at once.
POLL_S = 0.1
_owner: int | None = None  # the pid that installed the handlers


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal (SIGINT, SIGTERM or SIGHUP)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def install_signal_handlers() -> None:
    """At the start of the command line (main thread): SIGINT, SIGTERM and SIGHUP raise
    :class:`Interrupted`. A signal the parent set to be ignored (``nohup``, a background job's
    SIGINT) stays ignored."""
    global _owner
    for signum in HANDLED:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _interrupt)
    _owner = os.getpid()


def owns_children() -> bool:
    """Whether this process is gdsdoctor's own (handlers installed): it may then adopt, and
    kill at exit, whatever its commands leave running (not a forked worker of it)."""
    return _owner == os.getpid()


def _interrupt(signum: int, frame: FrameType | None) -> None:
    if os.getpid() != _owner:  # a forked worker (a fleet's): die of the signal, silently, as before
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    # Once: a second signal while the cleanup runs must not cut it short with a traceback.
    for other in HANDLED:
        if signal.getsignal(other) is _interrupt:
            signal.signal(other, signal.SIG_IGN)
    raise Interrupted(signum)


def join_within(thread: threading.Thread, timeout: float) -> None:
    """``thread.join(timeout)`` woken every POLL_S: a plain join by the main thread sleeps
    through a signal that went to another thread, until its timeout (a capture's deadline)."""
    end = time.monotonic() + timeout
    while thread.is_alive() and (left := end - time.monotonic()) > 0:
        thread.join(min(left, POLL_S))
