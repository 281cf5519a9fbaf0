"""How one checkpoint file lands on a Lustre filesystem's OSTs: the ``stripe_layout`` key of
``derived.storage`` and the per-file share ``full_targets`` compares with each OST's free space.

A file of ``S`` bytes in a component ``[start, end)`` striped over ``c`` OSTs puts
``(min(S, end) - start) / c`` of its bytes on each of them; a Progressive File Layout sums its
components (the most one OST can take of that file: the allocator may reuse an OST in two
components, and must when the components' stripe counts add up to more OSTs than there are).
``stripe_count -1`` means every OST, a count above the OSTs is capped at them (overstriping
puts several stripes on one OST: a file's listed objects tell how many OSTs it really uses),
``0`` is the filesystem's default (1 on most sites, assumed), a Data-on-MDT component (``mdt``)
stays on the MDT. A mirrored file (FLR) writes every mirror: the largest mirror's share counts per
OST, and the space needed is multiplied by the mirror count.

The file is the job's largest: ``checkpoint_bytes / gpus`` (a sharded save writes a file per
rank; ``--gpus 1`` judges a single-file ``torch.save``); unknown without ``--gpus`` (the default
of one GPU would make the whole checkpoint one file)."""

from __future__ import annotations

from typing import Any

from gdsdoctor.facts.derived.access import dicts, obj, ok_section

# where each filesystem's layouts are read: one shape (lfs_layout.py), one judgement
LAYOUT_SECTIONS = {"lustre": "lfs_getstripe", "beegfs": "beegfs_entryinfo"}
LAYOUT_FILESYSTEMS = tuple(LAYOUT_SECTIONS)


def checkpoint_layout(facts: dict[str, Any], fs: str = "lustre") -> dict[str, Any] | None:
    """The layout new checkpoint files get on ``fs``: the last directory default read (``lfs
    getstripe -d``, ``beegfs-ctl --getentryinfo DIR``), else the last file layout (an existing
    checkpoint's, pasted)."""
    section = ok_section(facts, LAYOUT_SECTIONS[fs])
    layouts = [layout for layout in dicts(section.get("layouts")) if dicts(layout.get("components"))]
    defaults = [layout for layout in layouts if layout.get("kind") == "default"]
    return (defaults or layouts or [None])[-1]


def file_bytes_of(facts: dict[str, Any]) -> int | None:
    job = ok_section(facts, "job")
    size, gpus = job.get("checkpoint_bytes"), job.get("gpus") or 1
    if job.get("gpus_given") is False:  # the default of 1 GPU would take the whole save for one file
        return None
    return round(size / gpus) if isinstance(size, int) and size > 0 and isinstance(gpus, int) else None


def _int_or(value: Any, default: int | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _ost_spread(component: dict[str, Any], osts: int) -> int:
    osts_listed = component.get("osts")
    listed = {ost for ost in osts_listed if isinstance(ost, int)} if isinstance(osts_listed, list) else set()
    if listed:
        return len(listed)
    count = _int_or(component.get("stripe_count"), 0)
    if not count:
        return 1  # the filesystem's default stripe count: 1 unless the site changed it
    return osts if count < 0 else max(1, min(count, osts))


def file_share(layout: dict[str, Any], file_bytes: int, osts: int) -> float:
    """The most bytes one OST takes of one ``file_bytes`` file laid out as ``layout``."""
    per_mirror: dict[Any, float] = {}
    for component in dicts(layout.get("components")):
        if str(component.get("pattern") or "").startswith("mdt"):
            continue  # Data-on-MDT: these bytes are on the MDT
        start, end, mirror = (_int_or(component.get(key), None) for key in ("start", "end", "mirror_id"))
        covered = min(file_bytes, file_bytes if end is None else end) - (start or 0)
        if covered > 0:
            per_mirror[mirror] = per_mirror.get(mirror, 0.0) + covered / _ost_spread(component, osts)
    return max(per_mirror.values(), default=0.0)


def mirror_count(layout: dict[str, Any] | None) -> int:
    count = obj(layout).get("mirror_count")
    return count if isinstance(count, int) and count > 1 else 1


def layout_summary(layout: dict[str, Any] | None, file_bytes: int | None, text: Any) -> dict[str, Any] | None:
    """``derived.storage.stripe_layout``: what was read, in the words the findings use."""
    if layout is None:
        return None
    components = dicts(layout.get("components"))
    counts = [c.get("stripe_count") for c in components if not str(c.get("pattern") or "").startswith("mdt")]
    # BeeGFS's pool 1, "Default", holds every target unless the site made others: no caveat needed
    pools = sorted(
        {str(c["pool"]) for c in components if c.get("pool") and str(c["pool"]).lower() != "default"}
    )
    return {
        "path": layout.get("path"),
        "kind": layout.get("kind"),
        "components": len(components),
        "stripe_counts": counts,
        "pools": pools,
        "mirror_count": mirror_count(layout),
        "file_bytes": file_bytes,
        "file_text": text(file_bytes),
        "src": obj(components[0]).get("src") if components else layout.get("src"),
    }


def share_basis(summary: dict[str, Any] | None, osts: int, fs: Any) -> str:
    """Why a target's share is what it is, said in the finding."""
    if summary is None:
        tool = "lfs getstripe -d" if fs == "lustre" else "beegfs-ctl --getentryinfo"
        unread = f"the stripe layout not read ({tool} on the checkpoint directory says)"
        return f"an even spread over {osts} data targets assumed, {unread}"
    counts = summary["stripe_counts"]
    if fs != "lustre":
        layout = f"{counts[0]} storage target{'s' if counts[0] != 1 else ''} per file"
    else:
        layout = f"stripe_count {counts[0]}" if len(counts) == 1 else f"a {len(counts)}-component PFL layout"
    if summary["pools"]:
        layout += f" in pool {', '.join(summary['pools'])} (its members unlisted: all {osts} assumed)"
    size = summary.get("file_text") or "checkpoint"
    unit = "OST" if fs == "lustre" else "target"
    return f"{layout}: one {size} file's share per {unit}, or an even spread over {osts} {unit}s if more"


def whole_file_risk(
    targets: list[dict[str, Any]], layout: dict[str, Any] | None, file_bytes: int | None, text: Any
) -> list[dict[str, Any]]:
    """``derived.storage.whole_file_risk``: with no layout read, the active Lustre OSTs that could
    not hold one whole checkpoint file, which is where stripe_count 1 (the default on many sites)
    puts it; empty once a layout was read (``full_targets`` then judges the real share)."""
    if layout is not None or not file_bytes:
        return []
    return [
        {**target, "label": f"{target.get('name')} of {target.get('mountpoint') or target.get('fsname')}",
         "avail_text": text(target["avail_bytes"]), "file_bytes": file_bytes, "file_text": text(file_bytes)}
        for target in targets
        if target.get("fs") == "lustre" and target.get("kind") == "data" and target.get("active")
        and isinstance(target.get("avail_bytes"), int) and target["avail_bytes"] < file_bytes
    ]  # fmt: skip
