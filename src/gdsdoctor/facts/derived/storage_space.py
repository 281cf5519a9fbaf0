"""Free space on the checkpoint mounts and whether the next checkpoints fit: the ``free``,
``checkpoint_bytes``, ``needed_bytes``, ``capacity_short``, ``targets``, ``full_targets``,
``inode_short`` and ``quota_short`` keys of ``derived.storage`` (see storage.py).

The threshold is the job's, not a percentage: ``needed = checkpoint_bytes × checkpoints_kept``. A
parallel filesystem spreads a checkpoint over its data targets (Lustre OSTs, BeeGFS storage targets),
so each active target takes about ``needed / targets``; a target with less free than that share fills
before the save ends: ENOSPC with terabytes free in the aggregate. A Lustre OST stops taking new
objects only below ``osp.*.reserved_mb_low`` (about 0.1 % of the OST free, resuming above
``reserved_mb_high``, about 0.2 %): 95 % used only biases the QOS allocator away from it, so a
target 95 % used is ``nearly_full`` (worth a look), one below the reserve ``allocation_stopped``."""

from __future__ import annotations

from typing import Any

from gdsdoctor.facts.derived.access import dicts, obj, ok_section
from gdsdoctor.facts.derived.core import PSEUDO_FSTYPES, SYSTEM_MOUNTPOINTS, longest_prefix_mount
from gdsdoctor.facts.derived.storage_stripes import (
    LAYOUT_FILESYSTEMS,
    checkpoint_layout,
    file_bytes_of,
    file_share,
    layout_summary,
    mirror_count,
    share_basis,
    whole_file_risk,
)


def free_of(facts: dict[str, Any], mount: dict[str, Any]) -> dict[str, Any] | None:
    point = mount.get("mountpoint")
    target = ok_section(facts, "target")
    if target.get("mountpoint") == point and target.get("avail_bytes") is not None:
        return _free_entry(point, target, "target", mount.get("fstype"))
    entry = obj(ok_section(facts, "df").get("by_mountpoint")).get(point) if isinstance(point, str) else None
    if isinstance(entry, dict) and entry.get("avail_bytes") is not None:
        return _free_entry(point, entry, "df", mount.get("fstype"))
    return None


def free_from_df(facts: dict[str, Any]) -> list[dict[str, Any]]:
    """Without a mount table: the df line holding --path, else every data filesystem df lists."""
    entries = [e for e in checkpoint_df_entries(facts) if e.get("avail_bytes") is not None]
    return [_free_entry(e.get("mountpoint"), e, "df", e.get("fstype")) for e in entries]


def checkpoint_df_entries(facts: dict[str, Any], section: str = "df") -> list[dict[str, Any]]:
    """The df lines that may hold checkpoints: the one holding --path, else the data filesystems
    (not pseudo filesystems, not / nor system trees: name the path to judge those)."""
    entries = dicts(ok_section(facts, section).get("filesystems"))
    path = obj(facts.get("target")).get("path")
    if path:
        best = longest_prefix_mount(entries, str(path))
        return [best] if best else []
    return [
        e
        for e in entries
        if e.get("fstype") not in PSEUDO_FSTYPES
        and e.get("source") not in PSEUDO_FSTYPES
        and e.get("mountpoint") != "/"
        and not any(
            str(e.get("mountpoint")) == p or str(e.get("mountpoint")).startswith(p + "/")
            for p in SYSTEM_MOUNTPOINTS
        )
    ]


# Filesystems spread over storage targets or servers: their df aggregate hides a full target, and
# a du over them walks the metadata server (the parallel filesystem's own tools say more).
SHARED_FSTYPES = {"lustre", "beegfs", "gpfs", "wekafs", "nfs", "nfs4", "cephfs", "glusterfs"}


def _free_entry(point: Any, entry: dict[str, Any], source: str, fstype: Any = None) -> dict[str, Any]:
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
        "fstype": fstype if isinstance(fstype, str) else None,
        "shared": fstype in SHARED_FSTYPES if isinstance(fstype, str) else None,
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


def needed_bytes_of(facts: dict[str, Any]) -> int | None:
    """The space the job needs free: its checkpoint × the checkpoints its retention keeps."""
    size = checkpoint_bytes_of(facts)
    kept = ok_section(facts, "job").get("checkpoints_kept") or 1
    return None if size is None else size * kept


def capacity_short(free: list[dict[str, Any]], needed: int | None) -> list[dict[str, Any]]:
    if needed is None:
        return []
    return [
        {
            **entry,
            "checkpoint_bytes": needed,
            "checkpoint_text": human_bytes(needed),
            "shortfall_bytes": needed - entry["avail_bytes"],
        }
        for entry in free
        if isinstance(entry.get("avail_bytes"), int) and entry["avail_bytes"] < needed
    ]


# --- parallel filesystems: per target, per quota -------------------------------------------------

FULL_PCT = 95  # nearly full: Lustre's QOS allocator weighs against it, nothing fails yet
# Lustre's MDT stops allocating objects on an OST with less free than osp.*.reserved_mb_low,
# by default 0.1 % of the OST (Lustre manual, "Handling Full OSTs"); no free byte stops any target.
RESERVED_LOW_FRACTION = 0.001
TARGET_SECTIONS = ("lfs_df", "lfs_df_i", "beegfs_df")
_MERGED = ("size_bytes", "used_bytes", "avail_bytes", "use_pct", "inodes", "inodes_used", "inodes_free",
           "inodes_use_pct")  # fmt: skip


def storage_targets(facts: dict[str, Any]) -> list[dict[str, Any]]:
    """The targets of every listing, one per (filesystem, target): ``lfs df`` and ``lfs df -i`` merged."""
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    for section in TARGET_SECTIONS:
        for target in dicts(ok_section(facts, section).get("targets")):
            key = (target.get("fs"), target.get("fsname"), target.get("mountpoint"), target.get("name"))
            known = merged.setdefault(key, dict(target))
            for field in _MERGED:
                if known.get(field) is None and target.get(field) is not None:
                    known[field] = target[field]
    return list(merged.values())


def _group(target: dict[str, Any]) -> tuple[Any, ...]:
    return target.get("fs"), target.get("fsname"), target.get("mountpoint")


TARGET_SPACE_EMPTY: dict[str, Any] = {
    "stripe_layout": None, "stripe_layouts": {"lustre": None, "beegfs": None}, "full_targets": [],
    "whole_file_risk": [], "short_target_mounts": [],
    "layout_dirs": {"lustre": [], "beegfs": []}}  # fmt: skip


def target_space(facts: dict[str, Any], targets: list[dict[str, Any]], needed: int | None) -> dict[str, Any]:
    """``derived.storage``'s per-target keys:

    - ``stripe_layouts``: ``{lustre, beegfs}``, the layout new checkpoint files get on each
      (``lfs getstripe``, ``beegfs-ctl --getentryinfo``; storage_stripes.py): ``{path, kind,
      components, stripe_counts, pools, mirror_count, file_bytes, file_text, src}``; null when none
      was read (shares then assume an even spread); ``stripe_layout`` is the Lustre one;
    - ``full_targets``: active data targets with less free than their share (``share_bytes``,
      ``share_text``, ``share_basis``, ``below_share``) or 95 % used; ``avail_text``, ``label``;
    - ``whole_file_risk``: with no layout read, the Lustre OSTs with less free than one whole
      checkpoint file (``job.checkpoint_bytes / job.gpus``), where stripe_count 1 would put it;
    - ``short_target_mounts``: the mountpoints of both, once each;
    - ``layout_dirs``: ``{lustre: [dir], beegfs: [dir]}``, where to read the stripe layout of each
      filesystem with a short target (--path, else its mountpoint; [] when none is short)."""
    layouts, file_bytes = (
        {fs: checkpoint_layout(facts, fs) for fs in LAYOUT_FILESYSTEMS},
        file_bytes_of(facts),
    )
    full = full_targets(targets, needed, layouts, file_bytes)
    risk = whole_file_risk(targets, layouts["lustre"], file_bytes, human_bytes)
    summaries = {fs: layout_summary(layout, file_bytes, human_bytes) for fs, layout in layouts.items()}
    short = [*full, *risk]
    return {
        "stripe_layout": summaries["lustre"],
        "stripe_layouts": summaries,
        "full_targets": full,
        "whole_file_risk": risk,
        "short_target_mounts": sorted({str(t["mountpoint"]) for t in short if t.get("mountpoint")}),
        "layout_dirs": {
            fs: _layout_dir(facts, [t for t in short if t.get("fs") == fs]) for fs in ("lustre", "beegfs")
        },
    }


def _layout_dir(facts: dict[str, Any], short: list[dict[str, Any]]) -> list[str]:
    """Where to read the stripe layout the short targets' filesystem gives new files: --path, else
    the mountpoint (at most one, so that one command is printed)."""
    if not short:
        return []
    path = obj(facts.get("target")).get("path") or short[0].get("mountpoint")
    return [str(path)] if path else []


def full_targets(
    targets: list[dict[str, Any]], needed: int | None, layouts: Layouts = None, file_bytes: int | None = None
) -> list[dict[str, Any]]:
    """Active data targets that cannot take their share of the job's checkpoints, or are nearly full.
    A target's share is the even spread ``needed × mirrors / data targets``, or, where the Lustre
    stripe layout was read, one checkpoint file's share of it (storage_stripes) when that is more:
    with stripe_count 1 a whole file lands on one OST."""
    data = [
        t for t in targets if t.get("kind") == "data" and t.get("active") and t.get("avail_bytes") is not None
    ]
    counts = _target_counts(data)
    found = []
    for target in data:
        layout = (layouts or {}).get(str(target.get("fs")))
        share, basis = _share(target, counts[_group(target)], needed, layout, file_bytes)
        short = share is not None and target["avail_bytes"] < share
        full = (target.get("use_pct") or 0) >= FULL_PCT
        stopped = allocation_stopped(target)
        if short or full or stopped:
            found.append({**target, "share_bytes": round(share) if share else None,
                          "share_text": human_bytes(share), "share_basis": basis,
                          "avail_text": human_bytes(target["avail_bytes"]),
                          "below_share": short, "allocation_stopped": stopped, "nearly_full": full,
                          "label": _label(target)})  # fmt: skip
    return found


def allocation_stopped(target: dict[str, Any]) -> bool:
    """No new object goes to the target: nothing free, or a Lustre OST below its reserve."""
    avail, size = target.get("avail_bytes"), target.get("size_bytes")
    if avail is not None and avail <= 0:
        return True
    lustre = target.get("fs") == "lustre"
    return bool(
        lustre
        and isinstance(size, int)
        and size > 0
        and avail is not None
        and avail < size * RESERVED_LOW_FRACTION
    )


def _target_counts(data: list[dict[str, Any]]) -> dict[tuple[Any, ...], int]:
    """Active data targets per filesystem; a pasted listing cut short (``...``) has at least as
    many as its highest index + 1 (OST0046 at [OST:70] means 72 OSTs, not the 5 rows pasted)."""
    counts: dict[tuple[Any, ...], int] = {}
    highest: dict[tuple[Any, ...], int] = {}
    for target in data:
        group = _group(target)
        counts[group] = counts.get(group, 0) + 1
        index = target.get("index")
        if target.get("listing_cut") and isinstance(index, int):
            highest[group] = max(highest.get(group, 0), index + 1)
    return {group: max(count, highest.get(group, 0)) for group, count in counts.items()}


Layout = dict[str, Any] | None
Layouts = dict[str, Layout] | None


def _share(
    target: dict[str, Any], osts: int, needed: int | None, layout: Layout, file_bytes: int | None
) -> tuple[float | None, str]:
    """The bytes of the job's checkpoints ``target`` must hold, and the words that say why."""
    summary = layout_summary(layout, file_bytes, human_bytes)
    basis = share_basis(summary, osts, target.get("fs"))
    if not needed:
        return None, basis
    spread = needed * mirror_count(layout) / osts
    if summary is None or layout is None or not file_bytes:
        return spread, basis
    return max(spread, file_share(layout, file_bytes, osts)), basis


def _label(target: dict[str, Any]) -> str:
    where = target.get("mountpoint") or target.get("fsname") or target.get("fs")
    return f"{target.get('name')} of {where}"


def inode_short(
    facts: dict[str, Any], targets: list[dict[str, Any]], files: int | None
) -> list[dict[str, Any]]:
    """Metadata targets (and local filesystems, from `df -i`) out of inodes, or nearly: each with
    ``too_few`` (fewer free than the job's checkpoints create, or none) and ``nearly_full`` (95 %
    used: on a billion-inode MDT that still leaves 50 million, worth a look, not a failure)."""
    found = []
    for target in targets:
        free, pct = target.get("inodes_free"), target.get("inodes_use_pct")
        if target.get("kind") != "metadata" or free is None:
            continue
        found += _inode_entry(target, _label(target), free, pct, files)
    for entry in [*checkpoint_df_entries(facts), *checkpoint_df_entries(facts, "df_i")]:
        pct, free = entry.get("inodes_use_pct"), entry.get("inodes_free")
        if free is None:
            continue
        found += _inode_entry(entry, f"{entry.get('mountpoint')} ({entry.get('source')})", free, pct, files)
    return list({entry["label"]: entry for entry in found}.values())  # a df -i pasted and captured: once


def _inode_entry(
    entry: dict[str, Any], label: str, free: int, pct: int | None, files: int | None
) -> list[dict[str, Any]]:
    too_few = free <= 0 or (files is not None and free < files)
    nearly = (pct or 0) >= FULL_PCT
    if not (too_few or nearly):
        return []
    short = f"fewer than the {files:,} files the job's checkpoints create" if files is not None else ""
    why = "none free" if free <= 0 else short if too_few else "95 % used"
    return [
        {**entry, "label": label, "inodes_free_text": f"{free:,}", "too_few": too_few, "nearly_full": nearly,
         "reason": why}
    ]  # fmt: skip


# `quota -s` and pasted quotas (fs_quota), `lfs quota` run on a --path on Lustre (lfs_quota),
# pasted `beegfs-ctl --getquota` (beegfs_quota) and `mmlsquota` (gpfs_quota): one shape, one judgement
QUOTA_SECTIONS = ("fs_quota", "lfs_quota", "beegfs_quota", "gpfs_quota")


def quota_short(facts: dict[str, Any], needed: int | None, files: int | None) -> list[dict[str, Any]]:
    """Quotas reached, over their soft limit, 95 % used, or leaving less than the job's checkpoints
    need (space, or files for a sharded save)."""
    found = []
    for section in QUOTA_SECTIONS:
        for quota in dicts(ok_section(facts, section).get("quotas")):
            # a quota of another filesystem than the checkpoint path's is judged on its own state
            # only: the job's checkpoints are not written there
            elsewhere = _quota_elsewhere(facts, quota)
            left, reasons = _quota_reasons(quota, None if elsewhere else needed, None if elsewhere else files)
            if reasons:
                owner = " ".join(str(v) for v in (quota.get("kind"), quota.get("owner")) if v) or "the user"
                where = f" on {quota['filesystem']}" if quota.get("filesystem") else ""
                found.append({**quota, "left_bytes": left, "label": f"{owner}{where}", "source": section,
                              "reason": "; ".join(reasons)})  # fmt: skip
    return found


def _quota_elsewhere(facts: dict[str, Any], quota: dict[str, Any]) -> bool:
    """True when ``--path`` was given and the quota's filesystem is another mount's: a directory
    that does not hold the path, or the device of a mount that is not the path's. Names that map
    to no mount (a BeeGFS pool, ``./``) may hold the path: they are judged."""
    path = obj(facts.get("target")).get("path")
    where = quota.get("filesystem")
    if not isinstance(path, str) or not isinstance(where, str) or not where:
        return False
    target = ok_section(facts, "target")
    mounts = dicts(ok_section(facts, "mounts").get("mounts"))
    if (
        where.startswith("/")
        and not where.startswith("/dev/")
        and where not in {m.get("source") for m in mounts}
    ):
        holds = path == where or path.startswith(where.rstrip("/") + "/") or where == target.get("mountpoint")
        return not holds
    holder = longest_prefix_mount(mounts, path) if mounts else None
    device = target.get("device") or (holder or {}).get("source")
    others = {m.get("source") for m in mounts if m is not holder}
    return where != device and where in others


def _quota_reasons(
    quota: dict[str, Any], needed: int | None, files: int | None
) -> tuple[int | None, list[str]]:
    # GPFS counts usage not yet settled across its nodes apart (in_doubt): it may all be real
    used = _number(quota.get("used_bytes"))
    if used is not None:
        used += _number(quota.get("in_doubt_bytes")) or 0
    limit = min(
        (v for v in (_number(quota.get("soft_bytes")), _number(quota.get("hard_bytes"))) if v), default=None
    )
    left = limit - used if limit is not None and used is not None else None
    count = _number(quota.get("files"))
    files_limit = _number(quota.get("files_soft")) or _number(quota.get("files_hard"))
    files_left = files_limit - count if files_limit and count is not None else None
    reasons = []
    if quota.get("over_soft") or (left is not None and left <= 0):
        reasons.append("over its limit")
    elif left is not None and needed is not None and left < needed:
        reasons.append(f"{human_bytes(left)} left, the checkpoints need {human_bytes(needed)}")
    elif left is not None and limit and used is not None and used / limit >= FULL_PCT / 100:
        reasons.append(f"{round(100 * used / limit)}% of its space used")
    if files_left is not None and (files_left <= 0 or (files is not None and files_left < files)):
        reasons.append(f"{max(files_left, 0):,} files left")
    elif files_left is not None and files_limit and count / files_limit >= FULL_PCT / 100:
        reasons.append(f"{100 * count / files_limit:.1f}% of its files used ({files_left:,} left)")
    return left, reasons


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def files_needed_of(facts: dict[str, Any]) -> int | None:
    """Files the job's checkpoints create at least: one per rank per checkpoint kept (a DCP save)."""
    job = ok_section(facts, "job")
    if not job.get("checkpoint_bytes"):
        return None
    return (job.get("gpus") or 1) * (job.get("checkpoints_kept") or 1)


# --- RDMA and kernel log ------------------------------------------------------------------------
