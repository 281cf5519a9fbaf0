"""``derived.checkpoint_saves``: the job's saves as its own log times them, against the time
they may take.

Two limits, each from the input when it says it:

- the process group's timeout: the watchdog line's ``Timeout(ms)`` when the log has one, else
  PyTorch's default for NCCL, 10 minutes (``init_process_group(timeout=…)``: "Default value is
  10 minutes for NCCL and 30 minutes for other backends",
  https://pytorch.org/docs/stable/distributed.html#torch.distributed.init_process_group). A
  synchronous save longer than that, with the other ranks waiting in a collective, is killed by
  the watchdog; ``timeout_stated`` says whether the log stated it;
- the stall budget of the job the user described (``--interval``, ``--budget``): the share of
  wall time a checkpoint may stall the GPUs (``job.interval_s × job.budget_fraction``); none
  without ``--params``.

Keys (null when the log times no save): ``count``, ``longest_s``, ``longest`` (the save's
provenance: the timer or end line), ``timeout_s``, ``timeout_stated``, ``over_timeout``
(longest ≥ the stated timeout), ``near_timeout`` (longest ≥ NEAR_SHARE of it), both null when the
log states none, ``over_default_timeout`` (longest ≥ PyTorch's default, null when one is stated:
an assumption, Hugging Face's Trainer sets 30 minutes), ``budget_s``, ``over_budget`` (null
without a job), ``crash_after_last_save`` (the launcher's abnormal exit after the last save the
log times, with no save failure between them: ``{text, src, code, signal_name}``, else null), ``text``
(durations for the reports).
"""

from __future__ import annotations

from typing import Any

NCCL_DEFAULT_TIMEOUT_S = 600.0  # PyTorch's default process-group timeout for NCCL (see above)
NEAR_SHARE = 0.8  # a save within a fifth of the timeout: the next larger checkpoint crosses it


def derive(facts: dict[str, Any]) -> dict[str, Any] | None:
    section = facts.get("app_log")
    if not isinstance(section, dict) or section.get("status") != "ok":
        return None
    checkpoint = section.get("checkpoint") if isinstance(section.get("checkpoint"), dict) else {}
    saves = [s for s in checkpoint.get("saves") or [] if isinstance(s, dict)]
    if not saves:
        return None
    longest = max(saves, key=lambda s: float(s.get("seconds") or 0))
    seconds = float(longest["seconds"])
    stated = [
        e["ckpt"]["timeout_ms"] / 1000.0
        for e in section.get("errors") or []
        if isinstance(e, dict) and isinstance(e.get("ckpt"), dict) and e["ckpt"].get("timeout_ms")
    ]
    timeout = min(stated) if stated else NCCL_DEFAULT_TIMEOUT_S
    budget = _budget_s(facts.get("job"))
    errors = [e for e in section.get("errors") or [] if isinstance(e, dict)]
    return {
        "count": len(saves),
        "longest_s": seconds,
        "longest": longest.get("src"),
        "timeout_s": timeout,
        "timeout_stated": bool(stated),
        # a default is an assumption (Hugging Face's Trainer sets 30 minutes): said apart
        "over_timeout": seconds >= timeout if stated else None,
        "near_timeout": seconds >= NEAR_SHARE * timeout if stated else None,
        "over_default_timeout": None if stated else seconds >= timeout,
        "budget_s": budget,
        "over_budget": None if budget is None else seconds > budget,
        "crash_after_last_save": _crash_after(saves[-1], errors),
        "text": {
            "longest": _duration(seconds),
            "timeout": _duration(timeout),
            "budget": _duration(budget) if budget is not None else None,
        },
    }


# what a save failure looks like in the job's log: after the last save, it was not complete
_SAVE_FAILURES = ("collective_timeout", "oom_killed", "gpu_oom", "cufile_interrupted")


def _crash_after(last: dict[str, Any], errors: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The launcher's abnormal exit after the last save the log says completed, with no save
    failure between them: the job crashed at its end, its checkpoint written (``{text, src,
    signal_name, code}``), else None."""
    at = last.get("src") if isinstance(last.get("src"), dict) else {}
    line, artifact = at.get("line"), at.get("artifact")
    if not isinstance(line, int):
        return None
    later = [e for e in errors if _at(e, artifact) > line]
    if any(e.get("kind") in _SAVE_FAILURES or str(e.get("kind")).startswith("ckpt_") for e in later):
        return None
    exits = [e for e in later if e.get("kind") == "launcher_exit" and isinstance(e.get("launch"), dict)]
    if not exits:
        return None
    launch = exits[0]["launch"]
    return {"text": exits[0].get("text"), "src": exits[0].get("src"), "code": launch.get("code"),
            "signal_name": launch.get("signal_name")}  # fmt: skip


def _at(error: dict[str, Any], artifact: Any) -> int:
    where = error.get("src") if isinstance(error.get("src"), dict) else {}
    line = where.get("line")
    return line if where.get("artifact") == artifact and isinstance(line, int) else -1


def _budget_s(job: Any) -> float | None:
    if not isinstance(job, dict) or job.get("status") != "ok":
        return None
    interval, share = job.get("interval_s"), job.get("budget_fraction")
    if not isinstance(interval, int | float) or not isinstance(share, int | float):
        return None
    return float(interval) * float(share)


def _duration(seconds: float) -> str:
    if seconds >= 120:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.1f} s"
