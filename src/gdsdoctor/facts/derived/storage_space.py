"""Free space on the checkpoint mounts and whether the next checkpoint fits: the ``free``,
``checkpoint_bytes`` and ``capacity_short`` keys of ``derived.storage`` (see storage.py)."""

from __future__ import annotations

from typing import Any

from gdsdoctor.facts.derived.access import dicts, obj, ok_section
from gdsdoctor.facts.derived.core import PSEUDO_FSTYPES, SYSTEM_MOUNTPOINTS, longest_prefix_mount


def free_of(facts: dict[str, Any], mount: dict[str, Any]) -> dict[str, Any] | None:
    point = mount.get("mountpoint")
    target = ok_section(facts, "target")
    if target.get("mountpoint") == point and target.get("avail_bytes") is not None:
        return _free_entry(point, target, "target")
    entry = obj(ok_section(facts, "df").get("by_mountpoint")).get(point) if isinstance(point, str) else None
    if isinstance(entry, dict) and entry.get("avail_bytes") is not None:
        return _free_entry(point, entry, "df")
    return None


def free_from_df(facts: dict[str, Any]) -> list[dict[str, Any]]:
    """Without a mount table: the df line holding --path, else every data filesystem df lists."""
    entries = dicts(ok_section(facts, "df").get("filesystems"))
    path = obj(facts.get("target")).get("path")
    if path:
        best = longest_prefix_mount(entries, str(path))
        return (
            [_free_entry(best["mountpoint"], best, "df")]
            if best and best.get("avail_bytes") is not None
            else []
        )
    data = [
        e
        for e in entries
        if e.get("fstype") not in PSEUDO_FSTYPES
        and e.get("source") not in PSEUDO_FSTYPES
        and e.get("mountpoint") != "/"
        and not any(
            str(e.get("mountpoint")) == p or str(e.get("mountpoint")).startswith(p + "/")
            for p in SYSTEM_MOUNTPOINTS
        )
        and e.get("avail_bytes") is not None
    ]
    return [_free_entry(e.get("mountpoint"), e, "df") for e in data]


def _free_entry(point: Any, entry: dict[str, Any], source: str) -> dict[str, Any]:
    size, avail = entry.get("size_bytes"), entry.get("avail_bytes")
    used = entry.get("used_bytes")
    # df's Use% counts reserved blocks as unavailable: free = avail / (used + avail)
    usable = (used + avail) if isinstance(used, int) and isinstance(avail, int) else size
    free_pct = round(100.0 * avail / usable, 1) if isinstance(avail, int) and usable else None
    return {
        "mountpoint": point,
        "size_bytes": size,
        "avail_bytes": avail,
        "avail_text": human_bytes(avail),
        "free_pct": free_pct,
        "source": source,
        "src": entry.get("src"),
    }


def human_bytes(size: Any) -> str | None:
    """``980000000000`` → ``980 GB`` (SI, as df -H and gdsdoctor estimate print)."""
    if not isinstance(size, int | float) or isinstance(size, bool):
        return None
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if abs(size) < 1000 or unit == "PB":
            return f"{size:.3g} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1000
    return None


def checkpoint_bytes_of(facts: dict[str, Any]) -> int | None:
    """The checkpoint size of the job the user described (``--params`` → ``job.checkpoint_bytes``)."""
    value = ok_section(facts, "job").get("checkpoint_bytes")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def capacity_short(free: list[dict[str, Any]], checkpoint_bytes: int | None) -> list[dict[str, Any]]:
    if checkpoint_bytes is None:
        return []
    return [
        {
            **entry,
            "checkpoint_bytes": checkpoint_bytes,
            "checkpoint_text": human_bytes(checkpoint_bytes),
            "shortfall_bytes": checkpoint_bytes - entry["avail_bytes"],
        }
        for entry in free
        if isinstance(entry.get("avail_bytes"), int) and entry["avail_bytes"] < checkpoint_bytes
    ]


# --- RDMA and kernel log ------------------------------------------------------------------------
