"""The checkpoint job the user describes (``--params 70B`` and friends, or a site config).

Section ``job``: ``params``, ``preset``, ``bytes_per_param``, ``checkpoint_bytes``,
``interval_s``, ``budget_fraction``, ``gpus``, and from a site config ``checkpoints_kept`` (how many
checkpoints the retention keeps on the filesystem, default 1: the space the job needs free is
``checkpoint_bytes × checkpoints_kept``), ``gpus_per_node`` (default: the GPUs the node lists) and
``async_buffers`` (staging buffers of an asynchronous save, default 2). It is ``not_collected``
when no parameter count was given, so causes that need it are inconclusive rather than silently clear.
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
        }
    except estimate.EstimateError as error:
        return {"status": "unparsable", "detail": str(error)}
    section["checkpoint_bytes"] = round(params * section["bytes_per_param"])
    return {"status": "ok", **section}


def _optional_count(estimate: Any, value: Any, what: str) -> int | None:
    return None if value is None else estimate.parse_count(value, what=what)


def validate(options: dict[str, Any]) -> None:
    """Raise EstimateError for a job description that cannot be read (for the CLI, before capture)."""
    section = job_section(options)
    if section["status"] == "unparsable":
        from gdsdoctor.errors import EstimateError

        raise EstimateError(section["detail"])
