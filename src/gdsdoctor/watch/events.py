"""Events as they arrive: kernel log records from /dev/kmsg, classified by the dmesg reader's own
per-record classifier, and udev add/remove/change of block and NVMe devices (pyudev.Monitor).

Each follower is drained once a tick and never blocks; one that cannot start (not root, no
netlink in a container, no libudev) says why in ``unavailable`` and the watch goes on without it.
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path
from typing import Any

from gdsdoctor.probes.dmesg import classify, split_line
from gdsdoctor.probes.dmesg_kinds import LIFECYCLE_KINDS

KERNEL_FACILITY = 0  # a record's priority is facility << 3 | level; user-space writes carry 1 (user)
MAX_RECORD_BYTES = 8192  # /dev/kmsg returns one record a read; a longer one is EINVAL
MAX_EVENTS_PER_TICK = 200  # a storm of messages must not stall sampling


def kernel_event(record: str, now_wall: float, now_monotonic: float) -> dict[str, Any] | None:
    """The timeline event of one /dev/kmsg record (``prio,seq,usec,flags;message``), or None when it
    is not from the kernel or not a failure mode the dmesg reader knows. Its time is the record's
    own kernel clock moved onto the wall clock (records are read up to a tick late)."""
    head, _, _ = record.partition(";")
    priority = head.split(",", 1)[0]
    if not priority.isdigit() or int(priority) >> 3 != KERNEL_FACILITY:
        return None
    line = split_line(1, record.split("\n", 1)[0])
    if line.form != "kmsg":
        return None
    hit = classify(line.message.strip())
    if hit is None or hit[0] in LIFECYCLE_KINDS:  # a mount, a device attached: no failure
        return None
    kind, device, _details = hit
    at = now_wall - (now_monotonic - line.monotonic_s) if line.monotonic_s is not None else now_wall
    return {
        "type": "event",
        "t": round(at, 3),
        "source": "kmsg",
        "kind": kind,
        "device": device,
        "level": line.level,
        "message": line.message.strip()[:500],
    }


class KmsgFollower:
    """Reads the kernel log from the moment the watch starts (older records are `check`'s)."""

    def __init__(self, root: Path = Path("/")) -> None:
        self.unavailable = ""
        self._fd: int | None = None
        try:
            self._fd = os.open(root / "dev/kmsg", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            os.lseek(self._fd, 0, os.SEEK_END)
        except OSError as error:
            why = (
                "permission denied (run as root, or kernel.dmesg_restrict=0)"
                if error.errno in (errno.EPERM, errno.EACCES)
                else (error.strerror or str(error))
            )
            self.unavailable = f"kernel log not followed: /dev/kmsg {why}"
            self.close()

    def drain(self) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        if self._fd is None:
            return events
        now_wall, now_monotonic = time.time(), time.clock_gettime(time.CLOCK_MONOTONIC)
        for _ in range(MAX_EVENTS_PER_TICK * 10):
            try:
                data = os.read(self._fd, MAX_RECORD_BYTES)
            except BlockingIOError:
                break
            except OSError as error:
                if error.errno == errno.EPIPE:  # records overwritten before we read them: go on
                    continue
                self.unavailable = f"kernel log stopped: {error.strerror or error}"
                self.close()
                break
            if not data:
                break
            event = kernel_event(data.decode("utf-8", "replace"), now_wall, now_monotonic)
            if event is not None and len(events) < MAX_EVENTS_PER_TICK:
                events.append(event)
        return events

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class UdevFollower:
    """add/remove/change of block and NVMe devices, from libudev's netlink monitor."""

    SUBSYSTEMS = ("block", "nvme", "nvme-subsystem")

    def __init__(self, root: Path = Path("/")) -> None:
        self.unavailable = ""
        self._monitor: Any = None
        # Without udevd (minimal hosts, some containers) its netlink group stays silent: the
        # kernel's own uevents are followed instead (the same actions, before udev's rules).
        self.source = "udev" if (root / "run/udev/control").exists() else "kernel"
        try:
            import pyudev  # as in the udev probe: only a live watch needs libudev

            monitor = pyudev.Monitor.from_netlink(pyudev.Context(), source=self.source)
            for subsystem in self.SUBSYSTEMS:
                monitor.filter_by(subsystem)
            monitor.start()
            self._monitor = monitor
        except Exception as error:  # ImportError, no libudev.so.1, no netlink socket in a container
            self.unavailable = f"udev events not followed ({type(error).__name__}: {error})"[:300]

    def drain(self) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        while self._monitor is not None and len(events) < MAX_EVENTS_PER_TICK:
            try:
                device = self._monitor.poll(timeout=0)
            except Exception as error:  # the socket went away
                self.unavailable = f"udev events stopped ({type(error).__name__})"
                self._monitor = None
                break
            if device is None:
                break
            events.append(
                {
                    "type": "event",
                    "t": round(time.time(), 3),
                    "source": "udev",
                    "kind": f"udev_{device.action}",
                    "device": device.sys_name,
                    "subsystem": device.subsystem,
                    "message": f"udev {device.action} {device.sys_path}",
                }
            )
        return events
