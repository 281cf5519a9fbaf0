"""Run commands safely: no shell, C locale, bounded output, and a timeout that kills the group.

A hung ``nvme`` stuck in the kernel or a stale network mount must not hang the doctor, and a
command that spews must not eat its memory:

- each command runs in its own session (process group); on timeout, on too much output, or
  when it exits while a grandchild still holds its stdout, the whole group gets SIGKILL
  (SIGTERM can be ignored, SIGKILL cannot);
- output is read as it comes, at most ``MAX_OUTPUT_BYTES`` of stdout and ``MAX_STDERR_BYTES``
  of stderr: past that the command is killed, never read further;
- a process stuck in uninterruptible sleep cannot be killed: we stop waiting for it after a
  second and report the timeout, and the next run does not start another copy while it lives
  (``command_lock``);
- on every way out (:func:`kill_running`: the command line's exit, an interrupt turned into
  ``KeyboardInterrupt`` by ``signals``, the interpreter's exit) no command starts any more and
  every group still running is killed; in gdsdoctor's own process, which becomes the child
  subreaper, so is every process a command daemonised out of its group.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gdsdoctor import signals
from gdsdoctor.capture import command_lock
from gdsdoctor.model import Artifact, ArtifactStatus

MAX_OUTPUT_BYTES = 32 * 1024 * 1024  # keeps a spewing command from eating memory
MAX_STDERR_BYTES = 1024 * 1024  # only the first line is used
# After the command exits, how long a grandchild that keeps its stdout open may delay us.
EXIT_GRACE_S = 0.5
_CHUNK = 64 * 1024
_BASE_ENV = {
    "LC_ALL": "C",
    "LANG": "C",
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
}
_PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
_running: set[int] = set()  # process groups started and not yet reaped
_running_lock = threading.Lock()
_settled = threading.Condition(_running_lock)  # notified when a start finishes
_starting = 0  # commands being started (forked, not yet registered)
_closing = False  # kill_running began: nothing starts any more
_subreaper: bool | None = None  # None: not tried yet


# Where the system tools live that an ordinary user's PATH often lacks (nvme, modinfo, lspci and
# lsmod on many distributions): looked in after PATH, as sos does. $GDSDOCTOR_SBIN_DIRS
# (colon-separated, empty for none) replaces them: the test suite empties it, so that the fake
# tools it puts on PATH are the only ones a capture finds.
SBIN_DIRS = ("/usr/local/sbin", "/usr/sbin", "/sbin")


def search_path() -> str:
    """PATH, then the sbin directories it does not name: "command not found" must mean that the
    tool is not installed, not that this user's PATH leaves out /usr/sbin."""
    path = os.environ.get("PATH", _BASE_ENV["PATH"])
    named = os.environ.get("GDSDOCTOR_SBIN_DIRS")
    extra = SBIN_DIRS if named is None else tuple(d for d in named.split(":") if d)
    listed = path.split(":")
    return ":".join([*listed, *(d for d in extra if d not in listed)])


def command_env(extra: Mapping[str, str] = ()) -> dict[str, str]:
    env = dict(_BASE_ENV)
    env["PATH"] = search_path()
    env.update(dict(extra))
    return env


@dataclass(slots=True)
class _Outcome:
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    timed_out: bool = False
    overflow: str = ""  # "stdout" or "stderr" when a cap was hit


def run_command(
    name: str,
    argv: Sequence[str],
    timeout: float,
    env: Mapping[str, str] = (),
    ok_exit_codes: Sequence[int] = (0,),
) -> Artifact:
    """Run ``argv`` and return its stdout as an artifact; never raises (but for an interrupt)."""
    source = " ".join(argv)
    started = time.monotonic()
    full_env = command_env(env)
    try:
        lock = command_lock.acquire(argv, full_env["PATH"], started + timeout)
    except command_lock.StillRunning as running:
        return Artifact(name, ArtifactStatus.TIMEOUT, source=source, detail=str(running))
    try:
        process = _start(argv, full_env, lock)
    except FileNotFoundError:
        return Artifact(name, ArtifactStatus.MISSING, source=source, detail=f"{argv[0]}: command not found")
    except PermissionError:
        return Artifact(name, ArtifactStatus.DENIED, source=source, detail=f"{argv[0]}: permission denied")
    except (OSError, ValueError) as error:  # ENOEXEC, NUL in argv…
        reason = getattr(error, "strerror", None) or str(error)
        return Artifact(name, ArtifactStatus.ERROR, source=source, detail=f"{argv[0]}: {reason}")
    except _Exiting:
        return Artifact(name, ArtifactStatus.ERROR, source=source, detail="not started: gdsdoctor is exiting")
    finally:
        command_lock.release(lock)  # the command holds it while it lives
    try:
        outcome = _collect(process, started + timeout)
    finally:
        _kill_group(process)
    return _artifact(name, source, process, outcome, timeout, ok_exit_codes, time.monotonic() - started)


@contextlib.contextmanager
def streamed_output(
    argv: Sequence[str], stdin: int | None = None
) -> Iterator[subprocess.Popen[bytes] | None]:
    """``argv`` started, for its stdout to be read as it comes (an output too large to hold,
    taken in pieces); None when it cannot be started. Tracked like every command: its group
    is killed when the block ends and on every way out of gdsdoctor. No timeout of its own:
    the reader stops reading at the capture's deadline, and the command is killed then.
    ``stdin``: a descriptor it reads (a file to decompress), else nothing."""
    try:
        process: subprocess.Popen[bytes] | None = _start(argv, command_env(), None, stdin)
    except (OSError, ValueError, _Exiting):
        process = None
    try:
        yield process
    finally:
        if process is not None:
            _kill_group(process)


class _Exiting(Exception):
    """Raised instead of starting a command once the final kill has begun."""


def _start(
    argv: Sequence[str], env: dict[str, str], lock: int | None, stdin: int | None = None
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a session of its own, holding ``lock``, and register its group, unless
    gdsdoctor is exiting: no command may start after :func:`kill_running` took its list."""
    global _starting
    with _running_lock:
        if _closing:
            raise _Exiting
        _starting += 1
    process = None
    try:
        _adopt_orphans()
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL if stdin is None else stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
            close_fds=True,
            pass_fds=() if lock is None else (lock,),
        )
    finally:
        with _running_lock:
            _starting -= 1
            if process is not None:
                _running.add(process.pid)
            _settled.notify_all()
    command_lock.record(lock, process.pid)
    return process


def _artifact(
    name: str,
    source: str,
    process: subprocess.Popen[bytes],
    outcome: _Outcome,
    timeout: float,
    ok_exit_codes: Sequence[int],
    duration: float,
) -> Artifact:
    stdout = bytes(outcome.stdout)
    if outcome.timed_out:
        detail = f"killed after {timeout:g}s"
        return Artifact(name, ArtifactStatus.TIMEOUT, stdout, source, detail, None, duration)
    if outcome.overflow:
        cap = MAX_OUTPUT_BYTES if outcome.overflow == "stdout" else MAX_STDERR_BYTES
        detail = f"{outcome.overflow} exceeded {cap} bytes; killed (output kept up to the limit)"
        return Artifact(name, ArtifactStatus.ERROR, stdout, source, detail, None, duration)
    code = process.returncode
    if code not in ok_exit_codes:
        detail = _first_line(bytes(outcome.stderr)) or _exit_description(code)
        status = _failure_status(bytes(outcome.stderr))
        return Artifact(name, status, stdout, source, detail, code, duration)
    return Artifact(name, ArtifactStatus.OK, stdout, source, "", code, duration)


def _collect(process: subprocess.Popen[bytes], deadline: float) -> _Outcome:
    """Read both pipes until EOF, the deadline, or a cap; the caller kills the group after."""
    outcome = _Outcome()
    buffers = {process.stdout: (outcome.stdout, MAX_OUTPUT_BYTES, "stdout")}
    buffers[process.stderr] = (outcome.stderr, MAX_STDERR_BYTES, "stderr")
    with selectors.DefaultSelector() as selector:
        for pipe in buffers:
            selector.register(pipe, selectors.EVENT_READ)  # type: ignore[arg-type]
        exited_at: float | None = None
        while selector.get_map():
            now = time.monotonic()
            if exited_at is None and process.poll() is not None:
                exited_at = now
            if exited_at is not None and now > exited_at + EXIT_GRACE_S:
                break  # a grandchild holds the pipe open: the command itself is done
            if now >= deadline:
                outcome.timed_out = process.poll() is None
                break
            limit = deadline if exited_at is None else min(deadline, exited_at + EXIT_GRACE_S)
            for key, _ in selector.select(timeout=min(0.1, max(0.0, limit - now))):
                data = os.read(key.fd, _CHUNK)
                if not data:
                    selector.unregister(key.fileobj)
                    continue
                buffer, cap, label = buffers[key.fileobj]  # type: ignore[index]
                room = cap - len(buffer)
                buffer += data[:room]
                if len(data) > room:
                    outcome.overflow = label
                    return outcome
    if not outcome.timed_out:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        outcome.timed_out = process.poll() is None
    return outcome


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the command's whole process group (grandchildren included) and close our pipes."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    # A process stuck in uninterruptible sleep (D state) may never die: do not wait long.
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=1)
    for pipe in (process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()
    if process.returncode is not None:
        with _running_lock:
            _running.discard(process.pid)


def kill_groups() -> None:
    """SIGKILL every command still running (at the global deadline: what still runs is
    abandoned); commands may still start afterwards."""
    with _running_lock:
        groups = list(_running)
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)


@atexit.register
def kill_running() -> None:
    """On every way out (the command line's exit, an interrupt, the interpreter's exit): no
    command starts any more, every command still running is killed with its group, and, in
    gdsdoctor's own process, every process our commands left behind (daemonised out of their
    session, so re-parented to us) too. Commands never outlive gdsdoctor, except one stuck in
    the kernel, which even SIGKILL cannot end (see ``command_lock``)."""
    global _closing
    with _running_lock:
        _closing = True
        _settled.wait_for(lambda: _starting == 0, timeout=2.0)  # a fork under way finishes first
    kill_groups()
    _kill_adopted()


def _adopt_orphans() -> None:
    """In gdsdoctor's own process (``signals.install_signal_handlers``), before the first
    command: become the Linux child subreaper, so that a command's descendant that daemonises
    (``setsid -f``, a double fork) is re-parented to us instead of PID 1, where it would
    outlive us; :func:`kill_running` kills it at the end."""
    global _subreaper
    if _subreaper is not None or not signals.owns_children():
        return
    _subreaper = False
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        _subreaper = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def _kill_adopted() -> None:
    """SIGKILL every child of this process and its group, until none is left that can die: an
    adopted process's own children are re-parented to us when it dies. Zombies are reaped.
    Bounded: a child stuck in uninterruptible sleep is signalled once and left."""
    if not _subreaper:
        return
    signalled: set[int] = set()
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        fresh = [pid for pid in _children() if pid not in signalled]
        if not fresh:
            break
        for pid in fresh:
            _kill_process_and_group(pid)
            signalled.add(pid)
        _reap(fresh, until=min(end, time.monotonic() + 0.2))
    _reap(list(signalled), until=0)


def _children() -> list[int]:
    """Our children, whichever of our threads they were started by or re-parented to."""
    children: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError, ValueError):
                children += map(int, Path(f"/proc/self/task/{task}/children").read_text().split())
    return children


def _kill_process_and_group(pid: int) -> None:
    with contextlib.suppress(OSError):
        group = os.getpgid(pid)
        if group != os.getpgrp():
            os.killpg(group, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


def _reap(pids: list[int], until: float) -> None:
    """Wait for ``pids`` to die (reaping them) until ``until`` (monotonic), once if past it."""
    waiting = set(pids)
    while waiting:
        for pid in list(waiting):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid  # reaped elsewhere (its Popen)
            if done:
                waiting.discard(pid)
        if not waiting or time.monotonic() >= until:
            return
        time.sleep(0.01)


def _exit_description(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by signal {signal.Signals(-code).name}"
        return f"killed by signal {-code}"
    return f"exit status {code}"


def _first_line(data: bytes) -> str:
    for line in data.decode("utf-8", errors="replace").splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def _failure_status(stderr: bytes) -> ArtifactStatus:
    """Why a command failed: no permission, nothing there to look at (``modinfo nvidia`` on a
    host without the driver, ``nvme list`` without NVMe), or some other error."""
    text = stderr.decode("utf-8", errors="replace").lower()
    if "permission denied" in text or "operation not permitted" in text or "must be root" in text:
        return ArtifactStatus.DENIED
    if "not found" in text or "no such file or directory" in text:
        return ArtifactStatus.MISSING
    return ArtifactStatus.ERROR
