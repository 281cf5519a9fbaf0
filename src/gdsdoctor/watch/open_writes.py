"""Whether the processes writing on the checkpoint filesystem opened their files with O_DIRECT.

``/proc/PID/fdinfo/FD`` carries the flags a file was opened with (``flags:``, octal): the
writer's own evidence of direct or buffered I/O, where Dirty and Writeback in /proc/meminfo are
the whole host's (every device's page cache, every process's writes). Files are those open for
writing whose link lies under the mount and whose ``st_dev`` is the mount point's (a checkpoint
path on ``/`` must not count every log file of the host on other filesystems).

The walk of /proc costs a readlink per open file (70 ms for 120 processes on a loaded 2-core VM,
160 ms for a path on ``/``, where every open file is under the mount): it is started on the first
sample whose device wrote since the previous one (a dd of one second is caught while it writes),
then every RESCAN samples while the device keeps writing, in a thread of its own so that the
samples keep their pace. Its counts go with the next sample, the one after the write included
(the limiter reads that one too); a sample of an idle device otherwise has none (None), and a
walk not done by then is dropped: the files of one write are not the next one's.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

RESCAN = 10
MAX_PROCESSES = 4096
# The recording host's values (O_DIRECT differs between architectures: 0o40000 on x86-64,
# 0o200000 on arm64); the timeline keeps the counts, not the flags, so it replays anywhere.
O_DIRECT = getattr(os, "O_DIRECT", 0)
WRITE_MODES = (os.O_WRONLY, os.O_RDWR)


def parse_flags(text: str) -> int | None:
    """The ``flags:`` field of an fdinfo file (octal)."""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key == "flags":
            try:
                return int(value.strip(), 8)
            except ValueError:
                return None
    return None


def kind_of(flags: int) -> str | None:
    """``direct``, ``buffered``, or None for a file not open for writing."""
    if flags & os.O_ACCMODE not in WRITE_MODES:
        return None
    return "direct" if O_DIRECT and flags & O_DIRECT else "buffered"


class OpenWrites:
    """Counts of the files open for writing on the filesystem at ``mount``, by how they were
    opened; the last counts between two walks."""

    def __init__(self, mount: str, root: Path = Path("/")) -> None:
        self.mount = mount.rstrip("/") + "/"
        try:
            self.device: int | None = os.stat(root / mount.lstrip("/")).st_dev
        except OSError:
            self.device = None
        self.proc = root / "proc"
        self._writing_for = 0  # samples since the device started writing
        self.last: dict[str, int] | None = None
        self._walker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gdsdoctor-open-writes")
        self._pending: Future[dict[str, int]] | None = None

    def sample(self, writing: bool) -> dict[str, int] | None:
        walked = None
        if self._pending is not None and self._pending.done():
            failed = self._pending.exception() is not None  # never the watch's end: counts unknown
            walked = None if failed else self._pending.result()
            self.last, self._pending = walked or self.last, None
        if not writing:  # the walk started during the write that just ended still tells of it
            self._writing_for, self.last, self._pending = 0, None, None
            return walked
        if self._writing_for % RESCAN == 0 and self._pending is None:
            self._pending = self._walker.submit(self._walk)
        self._writing_for += 1
        return self.last

    def _walk(self) -> dict[str, int]:
        counts = {"direct": 0, "buffered": 0, "hidden": 0}
        try:
            pids = [name for name in os.listdir(self.proc) if name.isdigit()][:MAX_PROCESSES]
        except OSError:
            return counts
        for pid in pids:
            if int(pid) == os.getpid():
                continue
            try:
                fds = os.listdir(self.proc / pid / "fd")
            except PermissionError:
                counts["hidden"] += 1
                continue
            except OSError:  # gone meanwhile
                continue
            for fd in fds:
                if (kind := self._kind(pid, fd)) is not None:
                    counts[kind] += 1
        return counts

    def _kind(self, pid: str, fd: str) -> str | None:
        link = self.proc / pid / "fd" / fd
        try:
            if not os.readlink(link).startswith(self.mount):
                return None
            if self.device is not None and os.stat(link).st_dev != self.device:
                return None
            flags = parse_flags((self.proc / pid / "fdinfo" / fd).read_text())
        except OSError:
            return None
        return kind_of(flags) if flags is not None else None
