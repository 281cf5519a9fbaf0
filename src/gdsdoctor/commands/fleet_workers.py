"""The fleet's worker processes, and the shards ``fleet merge`` reads.

Bundles are analysed in a process pool. A worker the kernel kills (the OOM killer, on a bundle
whose analysis takes more memory than the node has) breaks Python's whole pool: every pending
bundle then fails with ``BrokenProcessPool``, and the run ended in "internal error" with no
result for the good nodes. So at most one bundle per worker is in flight at a time: when the
pool breaks, only those were in a worker; each is analysed again alone, in a fresh process, and
the one whose process dies again is UNKNOWN ("its analysis process was killed"); the rest go on
in a new pool. An interrupt (SIGTERM raised as KeyboardInterrupt by the command line) kills the
workers at once instead of waiting for their bundles (14–19 s, and a worker left running).

Shards are read as ``--site-config`` is (``config_files.read_config_text``): a regular file only,
opened without blocking (a fifo is refused at once, ``/dev/zero`` too), of at most
``MAX_SHARD_BYTES``, and JSON nested at most ``MAX_SHARD_DEPTH`` deep (a summary is 6 deep).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from gdsdoctor.config_files import read_config_text
from gdsdoctor.errors import UserError

KILLED = "its analysis process was killed (by the kernel's OOM killer, or a signal): not analysed"
MAX_SHARD_BYTES = 256 * 1024 * 1024
MAX_SHARD_DEPTH = 32

Analyse = Callable[[Any], dict[str, Any]]


def run_pool(
    tasks: Sequence[Any],
    workers: int,
    analyse: Analyse,
    warm: Callable[..., None],
    warm_args: tuple[Any, ...],
    failed: Callable[[Any, str], dict[str, Any]],
) -> Iterator[dict[str, Any]]:
    """``analyse(task)`` for every task in ``workers`` processes, in the order they finish; a
    task whose process dies twice is ``failed(task, KILLED)``."""
    waiting = list(tasks)  # _one_pool takes from its front
    while waiting:
        suspects: list[Any] = []
        yield from _one_pool(waiting, workers, analyse, warm, warm_args, suspects)
        for task in suspects:  # each alone: the one that dies again is the culprit
            alone: list[Any] = []
            yield from _one_pool([task], 1, analyse, warm, warm_args, alone)
            if alone:
                yield failed(task, KILLED)


def _one_pool(
    waiting: list[Any],
    workers: int,
    analyse: Analyse,
    warm: Callable[..., None],
    warm_args: tuple[Any, ...],
    suspects: list[Any],
) -> Iterator[dict[str, Any]]:
    """Run tasks off the front of ``waiting`` (one in flight per worker) until it is empty or the
    pool breaks; the tasks in flight when it broke go to ``suspects``."""
    pool = ProcessPoolExecutor(workers, initializer=warm, initargs=warm_args)
    running: dict[Future[dict[str, Any]], Any] = {}
    try:
        while waiting or running:
            while waiting and len(running) < workers:
                task = waiting.pop(0)
                running[pool.submit(analyse, task)] = task
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                task = running.pop(future)
                try:
                    yield future.result()
                except BrokenProcessPool:
                    suspects.append(task)
            if suspects:  # the pool is gone: what was still running is suspect too
                suspects.extend(running.values())
                running.clear()
                return
    except BaseException:
        _kill(pool)
        raise
    finally:
        pool.shutdown(wait=not suspects, cancel_futures=True)


def _kill(pool: ProcessPoolExecutor) -> None:
    """Stop the workers now (an interrupt): SIGKILL, not the wait for their bundles."""
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        with contextlib.suppress(OSError, AttributeError):
            process.kill()
    pool.shutdown(wait=False, cancel_futures=True)


def load_summary(path: Path) -> dict[str, Any]:
    """One shard for ``fleet merge``; anything else is one line (UserError)."""
    text = read_config_text(path, "fleet summary", MAX_SHARD_BYTES)
    try:
        data = json.loads(text)
    except RecursionError:
        raise UserError(f"{path}: a fleet summary nested more than {MAX_SHARD_DEPTH} deep") from None
    except ValueError as error:
        raise UserError(f"{path}: cannot read a fleet summary (not JSON: {str(error)[:80]})") from None
    if _depth(data) > MAX_SHARD_DEPTH:
        raise UserError(f"{path}: a fleet summary nested more than {MAX_SHARD_DEPTH} deep")
    if not isinstance(data, dict):
        raise UserError(f"{path}: cannot read a fleet summary (not a JSON object)")
    return data


def _depth(value: Any) -> int:
    """How deep ``value`` nests, counted without recursion (stopping past the limit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            if deepest > MAX_SHARD_DEPTH:
                return deepest
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest
