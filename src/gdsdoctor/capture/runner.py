"""Run commands safely: no shell, C locale, bounded output, and a timeout that kills the group.

A hung ``nvme`` stuck in the kernel or a stale network mount must not hang the doctor:
each command runs in its own session, and on timeout the whole process group is killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence

from gdsdoctor.model import Artifact, ArtifactStatus

MAX_OUTPUT_BYTES = 32 * 1024 * 1024  # keeps a spewing command from eating memory
_BASE_ENV = {
    "LC_ALL": "C",
    "LANG": "C",
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
}


def command_env(extra: Mapping[str, str] = ()) -> dict[str, str]:
    env = dict(_BASE_ENV)
    env["PATH"] = os.environ.get("PATH", env["PATH"])
    env.update(dict(extra))
    return env


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
    except OSError as error:
        return Artifact(name, ArtifactStatus.ERROR, source=source, detail=f"{argv[0]}: {error.strerror}")
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        return Artifact(
            name,
            ArtifactStatus.TIMEOUT,
            source=source,
            detail=f"killed after {timeout:g}s",
            duration_s=time.monotonic() - started,
        )
    duration = time.monotonic() - started
    stdout = stdout[:MAX_OUTPUT_BYTES]
    if process.returncode not in ok_exit_codes:
        detail = _first_line(stderr) or f"exit status {process.returncode}"
        status = _failure_status(stderr)
        return Artifact(name, status, stdout, source, detail, process.returncode, duration)
    return Artifact(name, ArtifactStatus.OK, stdout, source, "", process.returncode, duration)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    # A process stuck in uninterruptible sleep (D state) may never die: do not wait long.
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.communicate(timeout=1)


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
