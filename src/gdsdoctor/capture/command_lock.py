"""One copy of each probe command at a time, across runs.

A command stuck in uninterruptible sleep (a hung NVMe ioctl, ``df`` on a dead NFS mount)
survives even SIGKILL. Under a health check that runs every few minutes such copies would pile
up, each holding kernel resources, so a command is not started while an earlier run's copy of
it is still alive; the capture reports that copy instead. A copy that can still finish (two
runs overlapping) is waited for, within the command's own timeout.

How: before starting a command, take an exclusive ``flock`` on a lock file named after the
command (its resolved executable and arguments) and hand the descriptor to the command. The
lock belongs to the open file, which the command and whatever inherits it share, so it is held
exactly as long as one of them is alive, and freed by the kernel when the last one dies: there
is never a stale record to clean. The file holds the pid last started, to name it in the report.

The lock files live in a directory only their owner can write: ``$GDSDOCTOR_RUNTIME_DIR``,
else ``/run/gdsdoctor`` for root, else ``$XDG_RUNTIME_DIR/gdsdoctor``; with none usable,
commands run unlocked. Nothing else is written on the host.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import stat
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

_OPEN_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]")
_POLL_S = 0.05


class StillRunning(Exception):
    """An earlier run's copy of the command holds its lock (the message says which process)."""


def runtime_dir() -> Path | None:
    explicit = os.environ.get("GDSDOCTOR_RUNTIME_DIR")
    if explicit:
        return Path(explicit)
    if os.geteuid() == 0:
        return Path("/run/gdsdoctor")
    user = os.environ.get("XDG_RUNTIME_DIR")
    return Path(user) / "gdsdoctor" if user else None


def acquire(argv: Sequence[str], search_path: str, deadline: float) -> int | None:
    """The descriptor holding ``argv``'s lock (to pass to the command, then :func:`release`),
    or None when there is no safe place for locks or no such executable. While another run's
    copy that can still finish holds it (two checks overlapping), wait for it until ``deadline``
    (monotonic); raise :class:`StillRunning` then, or at once if that copy is stuck in the
    kernel (D state: it may never finish)."""
    executable = shutil.which(argv[0], path=search_path) if argv else None
    directory = _open_private_dir()
    if executable is None or directory is None:
        return None
    try:
        descriptor = os.open(_lock_name(executable, argv[1:]), _OPEN_FLAGS, 0o600, dir_fd=directory)
    except OSError:
        return None  # a link planted there, a full /run…: run unlocked rather than not at all
    finally:
        os.close(directory)
    try:
        holder: int | None = None
        while not _locked(descriptor):
            holder = holder or _holder(descriptor)  # looked for once: it may scan /proc
            if _state(holder) == "D" or time.monotonic() >= deadline:
                raise StillRunning(_still_running_message(holder, " ".join(argv)))
            time.sleep(_POLL_S)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _locked(descriptor: int) -> bool:
    """Take the lock if it is free (an error other than "held" counts as taken: run unlocked)."""
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        pass
    return True


def record(descriptor: int | None, pid: int) -> None:
    """Note which process holds the lock (read back by the next run to name it)."""
    if descriptor is None:
        return
    with contextlib.suppress(OSError):
        data = f"{pid}\n".encode()
        os.pwrite(descriptor, data, 0)
        os.ftruncate(descriptor, len(data))


def release(descriptor: int | None) -> None:
    """Our reference to the lock; the command still holds it if it is still alive."""
    if descriptor is not None:
        with contextlib.suppress(OSError):
            os.close(descriptor)


def _lock_name(executable: str, arguments: Sequence[str]) -> str:
    # CRC-32, not a cryptographic hash: hashlib would load OpenSSL into every check,
    # and two of gdsdoctor's own ~30 commands sharing a name would only run one after the other.
    digest = zlib.crc32("\0".join([executable, *arguments]).encode(errors="replace"))
    return f"{_UNSAFE_NAME.sub('_', os.path.basename(executable))[:40]}-{digest:08x}.lock"


def _open_private_dir() -> int | None:
    """The lock directory, made if needed; None unless it is a real directory owned by us that
    nobody else can write (a lock file planted by another user must not steer us)."""
    path = runtime_dir()
    if path is None:
        return None
    with contextlib.suppress(FileExistsError, OSError):
        os.mkdir(path, 0o700)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    info = os.fstat(descriptor)
    if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        os.close(descriptor)
        return None
    return descriptor


def _still_running_message(holder: int | None, command: str) -> str:
    where = f" (pid {holder}, {_state(holder)} state)" if holder else ""
    return f"an earlier run's `{command}` is still running{where}; not started again"


def _holder(descriptor: int) -> int | None:
    """The process holding the lock: the pid recorded in the file if it still has the file
    open, else any process that has (a child the command left behind inherits it)."""
    # IndexError: an empty file, whose holder (another thread of this run, running the same
    # command) has the lock but has not written its pid yet
    with contextlib.suppress(OSError, ValueError, IndexError):
        recorded = int(os.pread(descriptor, 32, 0).split()[0])
        if _has_open(recorded, descriptor):
            return recorded
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit() and _has_open(int(entry.name), descriptor):
                return int(entry.name)
    return None


def _has_open(pid: int, descriptor: int) -> bool:
    """Whether ``pid`` has the lock file open (its descriptor links, never its memory, are read:
    reading a process's memory can block on a process stuck in the kernel)."""
    wanted = os.fstat(descriptor)
    try:
        links = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for link in links:
        with contextlib.suppress(OSError):
            info = os.stat(f"/proc/{pid}/fd/{link}")
            if (info.st_dev, info.st_ino) == (wanted.st_dev, wanted.st_ino) and pid != os.getpid():
                return True
    return False


def _state(pid: int | None) -> str:
    """The scheduler state letter of ``pid`` (D: uninterruptible sleep, S: sleeping…)."""
    if pid is None:
        return "unknown"
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0].decode()
    except (OSError, IndexError):
        return "unknown"
