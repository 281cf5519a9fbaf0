"""How long the job's checkpoint saves took, in the job's own words (read by ``app_log``).

Three ways a training log states a save's duration, in decreasing order of trust:

- a timer the framework prints: Megatron-LM's ``save-checkpoint ....: (min, max)`` in ms (its
  ``timers('save-checkpoint')`` brackets the save with barriers: the max is what the training
  loop paid; ``timing_log_option: max`` prints one number) and torchtitan's ``Finished saving the
  checkpoint (or staging if async is enabled) in N seconds`` (``how``: ``timer``);
- a start line and an end line that both carry a timestamp: ``Saving (model) checkpoint …`` /
  ``saving checkpoint at iteration N``, then ``successfully saved checkpoint``, ``Saved
  checkpoint``, ``checkpoint saved``, DeepSpeed's ``[Torch] Checkpoint TAG is ready now!``
  (``how``: ``lines``: the difference of the two timestamps);
- nothing: a log whose saves carry neither gives no duration (``saves`` empty), which is not a
  fast save.

Real lines (tests/data/app_log_saves/SOURCES.md)::

    (min, max) time across ranks (ms):
        save-checkpoint ................................: (81611.24, 81611.82)
    [rank0]:2025-04-01 00:25:59,616 - root - INFO - Finished saving the checkpoint (or staging
        if async is enabled)in 5.53 seconds.
    [2023-08-15 07:22:31,767] [INFO] [logging.py:96:log_dist] [Rank 0] [Torch] Checkpoint
        global_step2500 is about to be saved!

``saves(lines, artifact)`` gives ``[{seconds, how, src}]`` (``src``: the line stating the end or
the timer), one per save.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import src

_MEGATRON_TIMER = lazy_compile(
    r"\bsave-checkpoint \.{3,200}: (?:\((?P<min>\d{1,12}(?:\.\d{1,6})?), (?P<max>\d{1,12}(?:\.\d{1,6})?)\)"
    r"|(?P<one>\d{1,12}(?:\.\d{1,6})?)(?![\d.]))"
)
_TITAN_TIMER = lazy_compile(
    r"\bFinished saving the checkpoint(?: \(or staging if async is enabled\))? ?in "
    r"(?P<s>\d{1,9}(?:\.\d{1,6})?) seconds"
)
_START = lazy_compile(
    r"\b(?:Saving (?:model |the |a full )?checkpoint|saving checkpoint at iteration"
    r"|Checkpoint \S{1,120} is about to be saved)",
    re.IGNORECASE,
)
_END = lazy_compile(
    r"\b(?:successfully saved checkpoint|Saved checkpoint|checkpoint saved|Checkpoint \S{1,120} is ready now"
    r"|Finished saving|Model weights saved in)",
    re.IGNORECASE,
)
# 2024-05-02 10:01:07,123 / 2024-05-02T10:01:07.123456 / [2024-05-02 10:01:07]
_STAMP = lazy_compile(
    r"(?<!\d)(?P<date>\d{4}-\d{2}-\d{2})[ T](?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<frac>\d{1,6}))?(?!\d)"
)
_HINTS = ("save-checkpoint", "aving", "Saved", "saved", "ready now")


def _stamp(line: str) -> datetime | None:
    found = _STAMP.search(line)
    if not found:
        return None
    try:
        when = datetime.strptime(f"{found['date']} {found['time']}", "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None
    frac = found["frac"]
    return when.replace(microsecond=int(frac.ljust(6, "0"))) if frac else when


def _timer(line: str) -> float | None:
    if found := _MEGATRON_TIMER.search(line):
        return float(found["max"] or found["one"]) / 1000.0
    if found := _TITAN_TIMER.search(line):
        return float(found["s"])
    return None


def timer_line(line: str) -> bool:
    """A line that states a save's duration by itself (what makes a text a job's log)."""
    return ("save-checkpoint" in line or "Finished saving" in line) and _timer(line) is not None


def saves(lines: Iterable[tuple[int, str]], artifact: str) -> list[dict[str, Any]]:
    """Each save whose duration the log states, in order. A save by start and end lines runs from
    its first start line to the last end line before the next start (every rank prints its own
    end: DeepSpeed's "is ready now!" once per rank)."""
    found: list[dict[str, Any]] = []
    started: datetime | None = None
    ended: tuple[datetime, int, str] | None = None

    def close() -> None:
        if started is not None and ended is not None and ended[0] >= started:
            seconds = (ended[0] - started).total_seconds()
            where = src(artifact, ended[1], ended[2])
            found.append({"seconds": round(seconds, 3), "how": "lines", "src": where})

    for number, line in lines:
        if not any(hint in line for hint in _HINTS):
            continue
        seconds = _timer(line)
        if seconds is not None:  # the framework timed this save: its own lines are not a second one
            found.append({"seconds": round(seconds, 3), "how": "timer", "src": src(artifact, number, line)})
            started = ended = None
            continue
        stamp = _stamp(line)
        if stamp is None:
            continue
        if _END.search(line) and started is not None:
            ended = (stamp, number, line)
        elif _START.search(line) and (started is None or ended is not None):
            close()
            started, ended = stamp, None
    close()
    return found[:200]
