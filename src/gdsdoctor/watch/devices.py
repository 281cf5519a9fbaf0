"""Which devices hold the checkpoint path: the filesystem's block device, resolved through
partitions, device-mapper/md stacks and NVMe native multipath down to namespaces and controllers.

Everything is read under ``root`` (``--host-root``); a network filesystem has no local block
device and is reported as such, with what can be measured for it instead.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import Any

NETWORK_FS = frozenset(
    {"nfs", "nfs4", "lustre", "gpfs", "wekafs", "cifs", "smb3", "beegfs", "ceph", "fuse.weka"}
)
_PATH_OF_NAMESPACE = re.compile(r"^nvme\d+c\d+n\d+$")
_MAX_DEPTH = 8  # a dm over md over partitions is 3; a loop in sysfs links must not hang us


def mount_of(path: str, mountinfo: str) -> dict[str, Any] | None:
    """The mount holding ``path`` (longest mount-point prefix) from /proc/self/mountinfo text:
    mount point, filesystem type, source and the device number."""
    best: dict[str, Any] | None = None
    for line in mountinfo.splitlines():
        fields = line.split()
        if "-" not in fields or len(fields) < 5:
            continue
        dash = fields.index("-")
        if len(fields) < dash + 3:
            continue
        point = _unescape(fields[4])
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best["mount"])):
            best = {
                "mount": point,
                "fstype": fields[dash + 1],
                "source": _unescape(fields[dash + 2]),
                "dev": fields[2],
            }
    return best


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), field)


def resolve(path: str, root: Path = Path("/")) -> dict[str, Any]:
    """The devices under ``path``: ``top`` (the filesystem's own block device, whose write bytes
    are the checkpoint's), ``below`` (every device under it: dm/md members, partitions' disks,
    multipath paths), ``controllers`` (NVMe controllers) and ``notes`` (what cannot be measured)."""
    real = os.path.realpath(path)
    try:
        mountinfo = (root / "proc/self/mountinfo").read_text()
    except OSError as error:
        return _unresolved(real, f"cannot read /proc/self/mountinfo ({error.strerror or error})")
    mount = mount_of(real, mountinfo)
    if mount is None:
        return _unresolved(real, f"{real} is on no mount listed in /proc/self/mountinfo")
    found: dict[str, Any] = {
        "path": real,
        **mount,
        "top": None,
        "below": [],
        "members": [],
        "controllers": [],
        "notes": [],
    }
    if mount["fstype"] in NETWORK_FS or mount["fstype"].startswith("nfs"):
        found["network"] = True
        found["notes"].append(_network_note(mount["fstype"]))
        return found
    top = _block_name(root, mount["dev"])
    if top is None:
        found["notes"].append(
            f"{mount['mount']} ({mount['fstype']}, device {mount['dev']}) has no block device in /sys: "
            "its write throughput cannot be measured here"
        )
        return found
    found["top"] = top
    below: list[str] = []
    _walk_below(root, top, below, 0)
    found["below"] = below
    found["members"] = _children(root, top)
    found["controllers"] = sorted({c for name in [top, *below] if (c := _controller(root, name))})
    return found


def _unresolved(path: str, note: str) -> dict[str, Any]:
    return {
        "path": path,
        "mount": None,
        "fstype": None,
        "source": None,
        "dev": None,
        "top": None,
        "below": [],
        "members": [],
        "controllers": [],
        "notes": [note],
    }


def _network_note(fstype: str) -> str:
    if fstype.startswith("nfs"):
        return (
            f"{fstype}: no local block device; measured from /proc/self/mountstats (NFS WRITE bytes) "
            "and the RDMA port counters; queues, page-cache split and per-device limits cannot be seen"
        )
    return (
        f"{fstype}: no local block device and no client statistics gdsdoctor reads; writes are measured "
        "from the writers' own accounting (/proc/PID/io wchar of the processes with files open under the "
        "mount: an upper bound), the RDMA port counters and the used bytes; queues, page-cache split and "
        "per-device limits cannot be seen"
    )


def _block_name(root: Path, dev: str) -> str | None:
    link = root / "sys/dev/block" / dev
    try:
        return Path(os.path.realpath(link)).name if link.exists() else None
    except OSError:
        return None


def _walk_below(root: Path, name: str, below: list[str], depth: int) -> None:
    """Partitions' disks, dm/md slaves and NVMe multipath paths, depth first, each once."""
    if depth >= _MAX_DEPTH:
        return
    for child in _children(root, name):
        if child not in below and child != name:
            below.append(child)
            _walk_below(root, child, below, depth + 1)


def _children(root: Path, name: str) -> list[str]:
    """The devices one level below ``name``: a partition's disk, dm/md slaves, multipath paths."""
    node = root / "sys/class/block" / name
    children: list[str] = []
    if (node / "partition").exists():
        children.append(Path(os.path.realpath(node)).parent.name)
    for folder in ("slaves", "multipath"):
        with contextlib.suppress(OSError):
            children += sorted(entry.name for entry in (node / folder).iterdir())
    return children


def _controller(root: Path, name: str) -> str | None:
    """The NVMe controller of a namespace or a namespace path (nvme0n1 -> nvme0, nvme0c1n1 -> nvme1)."""
    if not name.startswith("nvme") or "p" in name.split("n", 2)[-1]:
        return None
    if _PATH_OF_NAMESPACE.match(name):
        return "nvme" + name[4:].split("c", 1)[1].split("n", 1)[0]
    device = root / "sys/class/block" / name / "device"
    try:
        target = Path(os.path.realpath(device)).name
    except OSError:
        return None
    return target if re.fullmatch(r"nvme\d+", target) else None
