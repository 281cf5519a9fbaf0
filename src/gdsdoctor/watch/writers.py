"""The processes writing under a network filesystem's mount, and how much they write.

Lustre, GPFS, Weka or BeeGFS have no local block device and no client statistics gdsdoctor
reads: the writers' own accounting (/proc/PID/io ``wchar``: bytes their write calls passed
to the kernel) is then the measure of the checkpoint. Writers are found by their open files
under the mount (/proc/PID/fd), again every RESCAN ticks (a checkpointing job opens new files).
``wchar`` counts every write of the process, to any file or socket: it is an upper bound.
"""

from __future__ import annotations

import os
from pathlib import Path

RESCAN = 10  # ticks between looks for writers (a /proc walk costs ~ a readlink per open file)
MAX_PROCESSES = 4096


def parse_io(text: str) -> int | None:
    """``wchar`` of /proc/PID/io."""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key == "wchar" and value.strip().isdigit():
            return int(value)
    return None


class Writers:
    """A cumulative count of the bytes written by the processes with files open under ``mount``:
    each process counts from when it was first seen (its earlier writes are not this watch's),
    and a process gone keeps what it wrote, so the total only grows."""

    def __init__(self, mount: str, root: Path = Path("/")) -> None:
        self.mount = mount.rstrip("/") + "/"
        self.proc = root / "proc"
        self.last: dict[int, int] = {}  # pid -> wchar when last read
        self.total = 0
        self.hidden = 0  # processes whose files this user may not look at
        self._tick = 0

    def sample(self) -> dict[str, int]:
        if self._tick % RESCAN == 0:
            self._rescan()
        self._tick += 1
        for pid, before in list(self.last.items()):
            now = self._wchar(pid)
            if now is None:  # exited: what it wrote stays counted
                del self.last[pid]
                continue
            self.total += max(0, now - before)
            self.last[pid] = now
        return {"write_bytes": self.total, "processes": len(self.last), "hidden": self.hidden}

    def _rescan(self) -> None:
        hidden = 0
        try:
            pids = [int(name) for name in os.listdir(self.proc) if name.isdigit()][:MAX_PROCESSES]
        except OSError:
            return
        for pid in pids:
            if pid in self.last or pid == os.getpid():
                continue
            try:
                links = [
                    os.readlink(self.proc / str(pid) / "fd" / fd)
                    for fd in os.listdir(self.proc / str(pid) / "fd")
                ]
            except PermissionError:
                hidden += 1
                continue
            except OSError:  # gone meanwhile
                continue
            if any(link.startswith(self.mount) for link in links) and (now := self._wchar(pid)) is not None:
                self.last[pid] = now
        self.hidden = hidden

    def _wchar(self, pid: int) -> int | None:
        try:
            return parse_io((self.proc / str(pid) / "io").read_text())
        except OSError:
            return None
