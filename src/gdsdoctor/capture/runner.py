"""Run commands safely: no shell, C locale, bounded output, and a timeout that kills the group.

A hung ``nvme`` stuck in the kernel or a stale network mount must not hang the doctor, and a
command that spews must not eat its memory:

- each command runs in its own session (process group); on timeout, on too much output, or
  when it exits while a grandchild still holds its stdout, the whole group gets SIGKILL
  (SIGTERM can be ignored, SIGKILL cannot);
- output is read as it comes, at most ``MAX_OUTPUT_BYTES`` of stdout and ``MAX_STDERR_BYTES``
  of stderr: past that the command is killed, never read further;
- a process stuck in uninterruptible sleep cannot be killed: we stop waiting for it after a
  second and report the timeout; groups still alive when the interpreter exits are killed then.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence

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
_running: set[int] = set()  # process groups started and not yet reaped
_running_lock = threading.Lock()


def command_env(extra: Mapping[str, str] = ()) -> dict[str, str]:
    env = dict(_BASE_ENV)
    env["PATH"] = os.environ.get("PATH", env["PATH"])
    env.update(dict(extra))
    return env


class _Outcome:
    __slots__ = ("overflow", "stderr", "stdout", "timed_out")

    def __init__(self) -> None:
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.timed_out = False
        self.overflow = ""  # "stdout" or "stderr" when a cap was hit


def run_command(
    name: str,
    argv: Sequence[str],
    timeout: float,
    env: Mapping[str, str] = (),
    ok_exit_codes: Sequence[int] = (0,),
) -> Artifact:
    """Run ``argv`` and return its stdout as an artifact; never raises."""
    source = " ".join(argv)
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=command_env(env),
            start_new_session=True,
            close_fds=True,
        )
    except FileNotFoundError:
        return Artifact(name, ArtifactStatus.MISSING, source=source, detail=f"{argv[0]}: command not found")
    except PermissionError:
        return Artifact(name, ArtifactStatus.DENIED, source=source, detail=f"{argv[0]}: permission denied")
    except (OSError, ValueError) as error:  # ENOEXEC, NUL in argv…
        reason = getattr(error, "strerror", None) or str(error)
        return Artifact(name, ArtifactStatus.ERROR, source=source, detail=f"{argv[0]}: {reason}")
    with _running_lock:
        _running.add(process.pid)
    try:
        outcome = _collect(process, started + timeout)
    finally:
        _kill_group(process)
    duration = time.monotonic() - started
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


@atexit.register
def kill_running() -> None:
    """Kill every command still running: at the global deadline, and at exit, so that commands
    abandoned at the deadline never outlive gdsdoctor."""
    with _running_lock:
        groups = list(_running)
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)


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
