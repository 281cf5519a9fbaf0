"""Running one benchmark process for ``gdsdoctor bench``: in a session of its own, its output
streamed line by line, its progress counted from the bytes its whole process tree moved, and
at the deadline (or Ctrl-C) killed with every descendant (fio's workers call setsid(): a process
group misses them)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from gdsdoctor.errors import BenchError

Progress = Callable[[float, str], None]  # (fraction done 0..1, short status line)


class MonotonicProgress:
    """Calls the user's callback with a fraction that never goes backwards and the last status."""

    def __init__(self, callback: Progress) -> None:
        self.callback, self.fraction, self.message = callback, 0.0, ""

    def __call__(self, fraction: float, message: str) -> None:
        self.fraction = min(0.99, max(self.fraction, fraction))
        self.message = message or self.message
        self.callback(self.fraction, self.message)


TICK_S = 0.5
_MAX_TREE_WALKS = 20  # a tree that still grows after this many stop rounds is killed as seen


def run_streaming(
    argv: list[str], deadline: float, name: str, on_tick: Callable[[list[str], int], None] | None = None
) -> tuple[int, list[str], str]:
    """Run ``argv`` in its own session; at the deadline kill it and all its descendants.

    Returns (exit status, stdout lines, stderr). ``on_tick`` gets the stdout lines that arrived
    since the last tick and the benchmark's pid, every TICK_S seconds, in the calling thread
    (safe for progress bars).
    """
    lines: list[str] = []
    errors: list[bytes] = []
    readers: list[threading.Thread] = []
    try:
        process = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError as error:
        raise BenchError(f"cannot start {name}: {error.strerror or error}") from None
    seen = 0
    try:  # from the first statement after Popen: a signal while the readers start must kill it too
        assert process.stdout is not None and process.stderr is not None
        stderr = process.stderr
        readers += [
            threading.Thread(target=_pump_lines, args=(process.stdout, lines), daemon=True),
            threading.Thread(target=lambda: errors.append(stderr.read()), daemon=True),
        ]
        for reader in readers:
            reader.start()
        while process.poll() is None:
            if time.monotonic() >= deadline:
                raise BenchError(f"{name} did not finish within the time limit and was killed")
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=min(TICK_S, max(0.01, deadline - time.monotonic())))
            if on_tick is not None:
                fresh, seen = lines[seen:], len(lines)
                with contextlib.suppress(OSError):  # files may vanish under the tick; never fail on it
                    on_tick(fresh, process.pid)
    except BaseException:  # deadline, Ctrl-C (fio is in its own session: SIGINT missed it), callback bug
        kill_tree(process)
        raise
    finally:
        for reader in readers:
            if reader.is_alive():
                reader.join(timeout=5)
    return process.returncode, lines, b"".join(errors).decode(errors="replace")


def _pump_lines(stream: IO[bytes], lines: list[str]) -> None:
    """fio ends progress lines with \\r, results with \\n: split on both."""
    pending = b""
    for chunk in iter(lambda: stream.read1(4096), b""):  # type: ignore[attr-defined]
        pending += chunk
        *complete, pending = re.split(rb"[\r\n]", pending)
        lines.extend(line.decode(errors="replace").strip() for line in complete if line.strip())
    if pending.strip():
        lines.append(pending.decode(errors="replace").strip())


def _process_tree(root: int) -> list[int]:
    """``root`` and all its descendants (fio's workers call setsid(): a process group misses them)."""
    children: dict[int, list[int]] = {}
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()  # after "pid (comm)": state, ppid
            children.setdefault(int(fields[1]), []).append(int(stat_file.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo += children.get(pid, [])
    return tree


def tree_io_bytes(root: int) -> int:
    """Bytes the storage layer read and wrote for ``root`` and its descendants."""
    total = 0
    for pid in _process_tree(root):
        try:
            lines = Path(f"/proc/{pid}/io").read_text().splitlines()
            io = dict(line.split(": ", 1) for line in lines if ": " in line)
            total += int(io.get("read_bytes", 0)) + int(io.get("write_bytes", 0))
        except (OSError, ValueError):
            continue
    return total


def kill_tree(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the benchmark, its process group and every descendant (in their own sessions).

    The tree is stopped before it is killed: a worker fio forks between a walk of /proc and
    its parent's death is reparented to init and escapes every later walk (seen under load: fio
    workers left running after the time limit). A stopped process cannot fork, so the walk is
    repeated until the tree stops growing, and then everything seen is killed."""
    victims: list[int] = []
    for _ in range(_MAX_TREE_WALKS):
        fresh = [pid for pid in _process_tree(process.pid) if pid not in victims]
        if not fresh:
            break
        for pid in fresh:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGSTOP)
        victims += fresh
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    for pid in victims:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    # A process stuck in uninterruptible I/O may outlive SIGKILL for a while; do not hang on it.
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)


def last_line(text: str | list[str]) -> str:
    lines = text.splitlines() if isinstance(text, str) else text
    meaningful = [line.strip() for line in lines if line.strip()]
    return meaningful[-1][:300] if meaningful else ""
