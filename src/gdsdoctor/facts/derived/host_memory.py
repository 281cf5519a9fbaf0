"""Whether a node can stage its shard of an asynchronous checkpoint: ``derived.checkpoint_host``.

With a job described (``--params``): the node holds ``checkpoint / nodes`` (its GPUs' shards), times
the staging buffers (``async_buffers``, default 2), in host memory during an asynchronous save, and
each rank pins its own shard (× buffers) under the job's own locked-memory limit (``job_memlock``)::

    gpus_here  = job.gpus_per_node, else the GPUs nvidia-smi lists, else min(job.gpus, 8)
    shard_node = checkpoint_bytes × gpus_here / job.gpus          needed = shard_node × buffers
    shard_rank = shard_node / gpus_here                           pinned = shard_rank × buffers

``{shard_node_bytes, needed_bytes, pinned_per_rank_bytes, gpus_here, buffers, mem_available_bytes,
memlock_bytes (the job's; null: unlimited or unknown), memory_short (needed > MemAvailable; null without
meminfo), memlock_short (pinned > a finite memlock soft limit), text: {needed, available, pinned,
memlock}, src}``; null without a job.
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.facts.derived.access import dicts, ok_section
from gdsdoctor.facts.derived.storage_space import human_bytes

DEFAULT_BUFFERS = 2
DEFAULT_GPUS_PER_NODE = 8


def _gpus_here(facts: dict[str, Any], job: dict[str, Any]) -> int:
    given = job.get("gpus_per_node")
    if isinstance(given, int) and given > 0:
        return min(given, job["gpus"])
    listed = len(dicts(ok_section(facts, "nvidia_smi").get("gpus")))
    return min(listed or DEFAULT_GPUS_PER_NODE, job["gpus"])


def derive(facts: dict[str, Any]) -> dict[str, Any] | None:
    job = ok_section(facts, "job")
    if not job or not job.get("checkpoint_bytes"):
        return None
    here = _gpus_here(facts, job)
    buffers = job.get("async_buffers") or DEFAULT_BUFFERS
    shard_node = job["checkpoint_bytes"] * here / job["gpus"]
    needed, pinned = shard_node * buffers, shard_node / here * buffers
    memory = ok_section(facts, "meminfo")
    available = memory.get("mem_available_bytes") or memory.get("mem_free_bytes")
    lock = ok_section(facts, "job_memlock")  # the job's own limit, never gdsdoctor's (facts/job.py)
    limit = None if lock.get("soft_unlimited") else lock.get("soft_bytes")
    return {
        "shard_node_bytes": round(shard_node),
        "needed_bytes": round(needed),
        "pinned_per_rank_bytes": round(pinned),
        "gpus_here": here,
        "buffers": buffers,
        "mem_available_bytes": available,
        "memlock_bytes": limit,
        "memory_short": None if available is None else needed > available,
        "memlock_short": isinstance(limit, int) and pinned > limit,
        "text": {
            "needed": human_bytes(needed),
            "available": human_bytes(available),
            "shard": human_bytes(shard_node),
            "pinned": human_bytes(pinned),
            "memlock": human_bytes(limit),
        },
        "src": memory.get("src"),
    }
