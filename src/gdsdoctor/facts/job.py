"""The checkpoint job the user describes (``--params 70B`` and friends, or a site config).

Section ``job``: ``params``, ``preset``, ``bytes_per_param``, ``checkpoint_bytes``,
``interval_s``, ``budget_fraction``, ``gpus``, ``params_text`` and ``budget_text`` (``70B``, ``2%``:
as the commands a finding suggests write them), and from a site config ``checkpoints_kept`` (how many
checkpoints the retention keeps on the filesystem, default 1: the space the job needs free is
``checkpoint_bytes × checkpoints_kept``), ``gpus_per_node`` (default: the GPUs the node lists) and
``async_buffers`` (staging buffers of an asynchronous save, default 2). It is ``not_collected``
when no parameter count was given, so causes that need it are inconclusive rather than silently clear.

The job's own limits, each a section of its own so that a cause needing it is inconclusive, with
the flag to pass, rather than judged on gdsdoctor's limits (issue 31 item 8):

- ``job_save``: ``{mode: "async"|"sync", src}`` from ``--async``/``--sync`` (or the site config's
  ``checkpoint.save``), else ``not_collected``;
- ``job_memlock``: the job's locked-memory limit, ``{soft_bytes, soft_unlimited, of, src}``: from
  ``--memlock`` (or ``checkpoint.memlock``), else a pasted ``ulimit -l`` / ``/proc/<pid>/limits``
  of the job, else the limit the job's own log states (UCX), else gdsdoctor's own limit when it
  runs inside the job (a Slurm job step: ``SLURM_JOB_ID`` set, its limits are the job's), else
  ``not_collected``. gdsdoctor's own limit outside the job says nothing of the job's (a login
  shell's 8 MiB is not the training process's ``unlimited``).
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.checkpoint import DEFAULT_BUDGET


def job_section(options: dict[str, Any] | None) -> dict[str, Any]:
    job = options or {}
    if not job.get("params"):
        return {
            "status": "not_collected",
            "detail": "no checkpoint job given; pass --params (e.g. --params 70B)",
        }
    from gdsdoctor.checkpoint import stall as estimate  # imported only when a job is given (start-up time)

    try:
        components = estimate.components_for(
            job.get("preset") or estimate.DEFAULT_PRESET, job.get("components", ())
        )
        params = estimate.parse_params(str(job["params"]))
        section = {
            "params": params,
            "preset": job.get("preset") or estimate.DEFAULT_PRESET,
            "bytes_per_param": sum(c.bytes_per_param for c in components),
            "interval_s": estimate.parse_duration(
                str(job.get("interval") or "1h"), what="checkpoint interval"
            ),
            "budget_fraction": estimate.parse_fraction(str(job.get("budget") or DEFAULT_BUDGET)),
            "gpus": estimate.parse_count(job.get("gpus") or 1),
            # the GPU count was given (--gpus or the site config), not the default of 1: only then
            # is one checkpoint file's size (checkpoint / GPUs) known
            "gpus_given": job.get("gpus") is not None,
            "checkpoints_kept": estimate.parse_count(
                job.get("checkpoints_kept") or 1, what="checkpoints kept"
            ),
            "gpus_per_node": _optional_count(estimate, job.get("gpus_per_node"), "GPUs per node"),
            "async_buffers": _optional_count(estimate, job.get("async_buffers"), "staging buffers"),
            "save": _save_mode(job.get("save")),
            "memlock": _memlock(job.get("memlock")),
        }
    except estimate.EstimateError as error:
        return {"status": "unparsable", "detail": str(error)}
    section["checkpoint_bytes"] = round(params * section["bytes_per_param"])
    from gdsdoctor.checkpoint.units import fraction_argument, params_argument

    # as a command line takes them, for the commands a finding suggests (`estimate --params 70B`)
    section["params_text"] = params_argument(params)
    section["budget_text"] = fraction_argument(section["budget_fraction"])
    return {"status": "ok", **section}


OWN_MEMLOCK = "proc/self/memlock.json"  # gdsdoctor's own limit (probes/rdma.py)
FLAGS = "pass --async or --sync (how the job saves its checkpoints)"
MEMLOCK_FLAGS = (
    "pass --memlock (the job's `ulimit -l`: unlimited, 64KiB…) or paste `grep locked /proc/<pid>/limits` "
    "of the training process"
)


def _save_mode(value: Any) -> str | None:
    if value is None:
        return None
    mode = str(value).strip().lower()
    if mode not in ("async", "sync"):
        from gdsdoctor.errors import EstimateError

        raise EstimateError(f"save mode {value!r}: async or sync")
    return mode


def _memlock(value: Any) -> int | str | None:
    """``unlimited`` (or -1, as docker's --ulimit writes it), or a size in bytes."""
    if value is None:
        return None
    text = str(value).strip().lower()
    if text in ("unlimited", "infinity", "-1"):
        return "unlimited"
    from gdsdoctor.checkpoint.units import parse_size
    from gdsdoctor.errors import EstimateError

    try:
        return parse_size(str(value).strip())
    except (EstimateError, ValueError):
        raise EstimateError(f"memlock {value!r}: unlimited or a size (64KiB, 8GiB)") from None


def save_section(job: dict[str, Any]) -> dict[str, Any]:
    mode = job.get("save") if job.get("status") == "ok" else None
    if mode is None:
        return {"status": "not_collected", "detail": f"the job's save mode is not known; {FLAGS}"}
    return {"status": "ok", "mode": mode, "src": _given("--" + mode)}


def memlock_section(job: dict[str, Any], facts: dict[str, Any]) -> dict[str, Any]:
    """The job's own locked-memory limit, from the first source that states it (module docstring)."""
    given = job.get("memlock") if job.get("status") == "ok" else None
    if given is not None:
        unlimited = given == "unlimited"
        return _limit(None if unlimited else given, unlimited, "--memlock", _given(f"--memlock {given}"))
    memlock = facts.get("memlock") if isinstance(facts.get("memlock"), dict) else {}
    found = memlock.get("status") == "ok" and isinstance(memlock.get("src"), dict)
    if found and memlock["src"].get("artifact") != OWN_MEMLOCK:
        return _limit(memlock.get("soft_bytes"), memlock.get("soft_unlimited"), "pasted", memlock["src"])
    logged = (facts.get("app_log") or {}).get("memlock") if isinstance(facts.get("app_log"), dict) else None
    if isinstance(logged, dict) and (logged.get("soft_bytes") is not None or logged.get("soft_unlimited")):
        return _limit(
            logged.get("soft_bytes"), logged.get("soft_unlimited"), "the job's log", logged.get("src")
        )
    in_job = (facts.get("job_env") or {}).get("in_job") if isinstance(facts.get("job_env"), dict) else None
    if found and in_job:
        return _limit(
            memlock.get("soft_bytes"), memlock.get("soft_unlimited"), "inside the job", memlock["src"]
        )
    return {
        "status": "not_collected",
        "detail": f"the job's locked-memory limit is not known; {MEMLOCK_FLAGS}",
    }


def _limit(soft: Any, unlimited: Any, of: str, source: Any) -> dict[str, Any]:
    return {"status": "ok", "soft_bytes": soft, "soft_unlimited": bool(unlimited), "of": of, "src": source}


def _given(text: str) -> dict[str, Any]:
    """The provenance of a value given on the command line or in the site config."""
    return {"artifact": "command line", "line": 1, "text": text}


def _optional_count(estimate: Any, value: Any, what: str) -> int | None:
    return None if value is None else estimate.parse_count(value, what=what)


def validate(options: dict[str, Any]) -> None:
    """Raise EstimateError for a job description that cannot be read (for the CLI, before capture)."""
    section = job_section(options)
    if section["status"] == "unparsable":
        from gdsdoctor.errors import EstimateError

        raise EstimateError(section["detail"])
