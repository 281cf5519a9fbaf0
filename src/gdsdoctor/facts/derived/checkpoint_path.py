"""The checkpoint path itself (``--path``) under failure: what ``stat`` on it answered
(probes/path_stat.py), placed on its mount and device from the mount table.

- ``derived.path_failure``: the path fails with an error about its filesystem (EIO, ESTALE,
  ENOTCONN, EROFS, EUCLEAN…) or stat did not answer (``hung``, errno ``ETIMEDOUT``), else null:
  ``{"path", "errno", "error", "hung", "mountpoint", "device", "device_name", "fstype",
  "network", "local", "src", "mount": {"src"}}``. The mount is the longest mount point above
  the path in the mount table (the path cannot be resolved: it does not answer; without
  --path, the path a pasted stat names); ``device_name`` is its device below /dev/, as the
  kernel log names it, so a repair command is written once for both; ``network`` for NFS,
  Lustre, FUSE and the other filesystems served over a network, ``local`` for a filesystem on
  a block device. Its ``src`` (the stat line) and ``mount.src`` (the mount table's line) are
  the evidence.
- ``derived.path_missing``: the path does not exist (ENOENT), else null: ``{"path",
  "nearest", "mountpoint", "src"}``, ``nearest`` the nearest existing parent, which the
  analysis diagnoses in its place (the report says so).
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.facts.derived.access import items, obj, ok_section, txt
from gdsdoctor.facts.derived.core import longest_prefix_mount
from gdsdoctor.facts.derived.storage import NETWORK_FSTYPES


def stat_section(facts: dict[str, Any]) -> dict[str, Any]:
    return ok_section(facts, "path_stat")


def failure(facts: dict[str, Any], target_mount: dict[str, Any] | None) -> dict[str, Any] | None:
    stat = stat_section(facts)
    if not stat or not stat.get("failed"):
        return None
    # a pasted stat without --path: the mount above the path it names
    path = txt(stat.get("path"))
    mounts = items(ok_section(facts, "mounts"), "mounts")
    mount = obj(target_mount or (longest_prefix_mount(mounts, path) if path else None))
    fstype = str(mount.get("fstype") or "")
    device = txt(mount.get("device"))
    return {
        "path": stat.get("path"),
        "errno": stat.get("errno"),
        "error": stat.get("error"),
        "hung": bool(stat.get("hung")),
        "mountpoint": mount.get("mountpoint"),
        "device": device,
        "device_name": device.removeprefix("/dev/") if device and device.startswith("/dev/") else None,
        "fstype": fstype or None,
        "network": fstype in NETWORK_FSTYPES or fstype.startswith("fuse"),
        "local": bool(device and device.startswith("/dev/")),
        "src": stat.get("src"),
        "mount": {"src": mount.get("src")} if mount.get("src") else None,
    }


def missing(facts: dict[str, Any], target_mount: dict[str, Any] | None) -> dict[str, Any] | None:
    stat = stat_section(facts)
    if stat.get("errno") != "ENOENT":
        return None
    nearest = obj(stat.get("nearest"))
    return {
        "path": stat.get("path"),
        "nearest": nearest.get("path"),
        "mountpoint": obj(target_mount).get("mountpoint"),
        "src": stat.get("src"),
    }


def missing_note(facts: dict[str, Any]) -> str | None:
    """The report's line for a path that does not exist: what was diagnosed instead."""
    gone = obj(obj(facts.get("derived")).get("path_missing"))
    if not gone:
        return None
    instead = gone.get("nearest")
    where = f"its nearest existing parent {instead}" if instead else "no parent of it answered either"
    mount = f" (on {gone['mountpoint']})" if gone.get("mountpoint") else ""
    return f"--path {gone.get('path')}: no such file or directory; diagnosed {where}{mount} instead"
