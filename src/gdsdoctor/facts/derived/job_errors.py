"""``derived.checkpoint_errors``: the job's ENOSPC, EDQUOT and EIO errors, each placed.

A "No space left on device" in a training log is not the checkpoint's until its path says so:
the container's 64 MB /dev/shm, /tmp and a DataLoader worker's shared memory fail the same way.
Each error of ``app_log.errors`` with errno 28, 122 or 5 gets ``where``:

- ``shm``, ``data_loader``, ``tmp``: the path (the error's own, or the one its traceback's writing
  frame names) or the frames that wrote put it on the job's scratch space (probes/app_log_ckpt.py);
- ``checkpoint``: the path lies under ``--path`` (the checkpoint path), or no ``--path`` was given
  and a save marker precedes the error (``ckpt.during_save``), or no path is named at all and a
  save marker is there;
- ``elsewhere``: a path outside ``--path``;
- ``unknown``: no path and no save marker.

``for_checkpoint`` is ``where == "checkpoint"``: only those count for the checkpoint causes; the
others stay error lines of the job (the report lists them when no cause explains them).
Item: ``{kind, errno, path, where, for_checkpoint, during_save, text, src}``.
"""

from __future__ import annotations

import posixpath
from typing import Any

_PLACED = {"ckpt_enospc": 28, "ckpt_edquot": 122, "ckpt_eio": 5}


def derive(facts: dict[str, Any], target_path: str | None) -> list[dict[str, Any]]:
    section = facts.get("app_log")
    if not isinstance(section, dict) or section.get("status") != "ok":
        return []
    found = []
    for error in section.get("errors") or []:
        if not isinstance(error, dict) or error.get("kind") not in _PLACED:
            continue
        ckpt = error.get("ckpt") if isinstance(error.get("ckpt"), dict) else {}
        path = ckpt.get("path") or ckpt.get("frame_path")
        where = _where(path, ckpt, target_path)
        found.append(
            {
                "kind": error["kind"],
                "errno": ckpt.get("errno"),
                "path": path,
                "where": where,
                "for_checkpoint": where == "checkpoint",
                "during_save": bool(ckpt.get("during_save")),
                "text": error.get("text"),
                "src": error.get("src"),
            }
        )
    return found


def _where(path: str | None, ckpt: dict[str, Any], target_path: str | None) -> str:
    if ckpt.get("scratch"):
        return str(ckpt["scratch"])
    saving = bool(ckpt.get("during_save"))
    if path and target_path and path.startswith("/"):
        return "checkpoint" if _under(path, target_path) else "elsewhere"
    return "checkpoint" if saving else "unknown"


def _under(path: str, root: str) -> bool:
    path, root = posixpath.normpath(path), posixpath.normpath(root)
    return path == root or path.startswith(root.rstrip("/") + "/")
