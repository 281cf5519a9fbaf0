"""Derived facts about the node as a whole, written at the top of ``derived``:

- ``nvidia_present``: True if any source shows the NVIDIA GPU stack (module, GPU, gdscheck; an
  nvidia-smi that failed or a gdscheck listing no GPU shows none: the PCI list decides),
  False if the sources that would show it were read and do not, None if none was readable.
- ``rdma_present``: True if the RDMA device list (``infiniband``: sysfs, ibstat, ibv_devinfo)
  shows a device, False if it was read and shows none (no ``/sys/class/infiniband``: the RDMA
  and RoCE causes do not apply), None when it was not read (pasted files: they are checked).
- ``grub_defaults_absent``: True when ``/etc/default/grub`` does not exist on a host whose
  ``etc/`` was read (``os-release``): a distribution that boots without GRUB's defaults file,
  so the causes comparing it with the running kernel do not apply (rather than asking for it).
- ``undecided``: for a derived fact left None although the sources that would tell were
  looked for (a live capture or bundle, not pasted files), those sources: causes gated on it
  are then inconclusive rather than checked (an empty ``--host-root`` must not diagnose GPUs).
- ``target_mount``: the mount holding ``--path`` (findmnt; for a path not created yet, the
  mount ``stat`` names for its nearest existing parent; else the longest prefix over mounts).
- ``path_focus``: with ``--path``, the names of the filesystem holding it (mount point,
  device, devices below it: ``names``), the other data mounts' points (``elsewhere``) and every
  other device the host lists (``elsewhere_names``: the block listing, the mount table, their
  NVMe controllers); ranking puts findings whose evidence names the former first and those
  naming only the latter last, and caps the latter at WARNING (engine/rank.narrow).
- ``checkpoint_stall``: the stall model applied to the measured write rate, when the job was
  described.

The mounts the filesystem rules judge (``checkpoint_selection``: the target mount with
``--path``, otherwise every data mount — block or network filesystems, not pseudo ones, not
``/`` nor system trees such as ``/boot``) are described in ``derived.storage.checkpoint_mounts``.
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.facts.derived.access import items, ok_section
from gdsdoctor.patterns import lazy_compile

PSEUDO_FSTYPES = frozenset(
    (
        "proc sysfs devtmpfs devpts tmpfs securityfs cgroup cgroup2 pstore bpf debugfs tracefs configfs "
        "fusectl mqueue hugetlbfs autofs binfmt_misc rpc_pipefs nsfs efivarfs ramfs selinuxfs squashfs "
        "overlay nfsd"
    ).split()
)
_NVME_NAMESPACE = lazy_compile(r"^(nvme\d+)(?:c\d+)?n\d+")  # nvme0n1p2 → its controller nvme0
SYSTEM_MOUNTPOINTS = ("/boot", "/efi", "/snap", "/proc", "/sys", "/dev", "/run")


def derive(facts: dict[str, Any], target_path: str | None) -> dict[str, Any]:
    """The node-wide facts; ``path_focus`` comes later (see ``path_focus``), from the storage ones."""
    derived: dict[str, Any] = {
        "nvidia_present": _nvidia_present(facts),
        "rdma_present": _rdma_present(facts),
        "grub_defaults_absent": _grub_defaults_absent(facts),
        "target_mount": _target_mount(facts, _mounts(facts), target_path),
        "checkpoint_stall": checkpoint_stall(facts),
    }
    derived["undecided"] = _undecided(facts, derived)
    return derived


def checkpoint_selection(facts: dict[str, Any], target_mount: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The mount records the filesystem rules judge: the target mount with ``--path``, otherwise
    every data mount."""
    return [target_mount] if target_mount else _data_mounts(_mounts(facts))


def _mounts(facts: dict[str, Any]) -> list[dict[str, Any]]:
    return items(ok_section(facts, "mounts"), "mounts")


def path_focus(facts: dict[str, Any], derived: dict[str, Any]) -> dict[str, Any] | None:
    """With ``--path``: the names of the filesystem holding it (mount point, device and the
    devices below it) and the other data mounts, so that ranking puts what concerns the
    checkpoint filesystem first (engine/rank.py)."""
    target = derived["target_mount"]
    if not target or not target.get("mountpoint"):
        return None
    names = {str(target["mountpoint"])}
    device = str(target.get("device") or "")
    if device.startswith("/dev/"):
        names |= {device, device.rsplit("/", 1)[1]}
    for mount in (derived.get("storage") or {}).get("checkpoint_mounts") or []:
        names |= {str(layer["name"]) for layer in mount.get("stack") or [] if layer.get("name")}
        names |= {str(n) for n in mount.get("nvme_namespaces") or []}
        names |= {str(c["name"]) for c in mount.get("nvme_controllers") or [] if c.get("name")}
    elsewhere = {str(m["mountpoint"]) for m in _data_mounts(_mounts(facts))} - {str(target["mountpoint"])}
    return {
        "mountpoint": str(target["mountpoint"]),
        "device": device or None,
        "names": sorted(names),
        "elsewhere": sorted(elsewhere),
        "elsewhere_names": sorted(_listed_devices(facts) - names),
    }


def _listed_devices(facts: dict[str, Any]) -> set[str]:
    """Every block device the host lists (the block listing, the mount table, the loop listing), with the NVMe
    controller of each namespace, by name and /dev path: what is known to exist somewhere."""
    lsblk = ok_section(facts, "lsblk")
    by_name = lsblk.get("by_name") if isinstance(lsblk.get("by_name"), dict) else {}
    found = {str(name) for name in by_name}
    for mount in _mounts(facts):
        device = str(mount.get("device") or "")
        if device.startswith("/dev/"):
            found.add(device.rsplit("/", 1)[1])
    found |= {
        str(loop["name"]) for loop in items(ok_section(facts, "losetup"), "devices") if loop.get("name")
    }
    found |= {m[1] for name in list(found) if (m := _NVME_NAMESPACE.match(name))}
    return found | {f"/dev/{name}" for name in found}


def _nvidia_present(facts: dict[str, Any]) -> bool | None:
    """Evidence of the NVIDIA stack from any source; unknown only when nothing was readable. An
    nvidia-smi or gdscheck that could not see a GPU is evidence of neither: the tools are
    installed, and the driver is down or the GPU unseen; then no nvidia module loaded is no sign
    of a node without GPUs either, and only the PCI list tells."""
    seen: list[bool] = []
    tools = [read for name in ("gdscheck", "nvidia_smi") if (read := ok_section(facts, name))]
    blind_tools = any(_saw_no_gpu(read) for read in tools)
    modules = ok_section(facts, "modules")
    if modules:
        loaded = any(name.startswith("nvidia") for name in modules.get("names", []))
        if loaded or not blind_tools:
            seen.append(loaded)
    for section in ("gdscheck", "nvidia_smi", "nvidia_topo", "nvidia_driver", "nvidia_fs_version"):
        read = ok_section(facts, section)
        if read and not _saw_no_gpu(read):
            seen.append(True)
    for section in GPU_PRESENCE_SECTIONS:
        pci = ok_section(facts, section)
        if pci:
            seen.append(any(d.get("kind") == "gpu" for d in pci.get("devices", [])))
    if any(seen):
        return True
    return False if seen else None


def _saw_no_gpu(section: dict[str, Any]) -> bool:
    """An nvidia-smi that failed or a gdscheck that lists no GPU: installed tools, no evidence of
    a GPU (a CPU node with the driver package installed prints the same), so the PCI list decides."""
    if section.get("gpus"):
        return False
    said = [m.get("kind") for m in section.get("messages") or []]
    return bool(section.get("failures")) or "no_supported_gpu" in said


def _rdma_present(facts: dict[str, Any]) -> bool | None:
    infiniband = ok_section(facts, "infiniband")
    if not infiniband:
        return None
    return bool(infiniband.get("devices"))


def _grub_defaults_absent(facts: dict[str, Any]) -> bool:
    grub = facts.get("etc_default_grub") or {}
    not_there = grub.get("status") == "missing" and str(grub.get("detail", "")).endswith("does not exist")
    return not_there and bool(ok_section(facts, "os_release"))


# The sources that show whether a GPU is there: the PCI device list, from sysfs or lspci.
GPU_PRESENCE_SECTIONS = ("pci", "lspci")


def _undecided(facts: dict[str, Any], derived: dict[str, Any]) -> dict[str, list[str]]:
    """Derived facts that stayed unknown although their sources were looked for: pasted files
    leave a source ``not_collected`` (the user chose what to paste, the causes are checked);
    a capture that looked for the PCI devices and found none cannot judge GPU causes."""
    looked_for = [
        section
        for section in GPU_PRESENCE_SECTIONS
        if (facts.get(section) or {}).get("status", "not_collected") != "not_collected"
    ]
    if derived["nvidia_present"] is None and looked_for:
        return {"nvidia_present": looked_for}
    return {}


def _target_mount(
    facts: dict[str, Any], mounts: list[dict[str, Any]], target_path: str | None
) -> dict[str, Any] | None:
    found = ok_section(facts, "target")
    if found.get("mountpoint"):
        for mount in reversed(mounts):  # the last mount on a point is the visible one
            if mount.get("mountpoint") == found["mountpoint"]:
                return mount
        return {k: found.get(k) for k in ("device", "mountpoint", "fstype", "options", "src")}
    if target_path:
        # a path not created yet: the mount stat found for its nearest existing parent (links
        # resolved); else the longest mount point above it (a path that does not answer)
        nearest = _nearest_mountpoint(facts)
        for mount in reversed(mounts) if nearest else ():
            if mount.get("mountpoint") == nearest:
                return mount
        return longest_prefix_mount(mounts, target_path)
    return None


def _nearest_mountpoint(facts: dict[str, Any]) -> str | None:
    """The mount point ``stat`` named for the nearest existing parent of a --path that does not
    exist (probes/path_stat.py)."""
    stat = ok_section(facts, "path_stat")
    nearest = stat.get("nearest") if stat.get("errno") == "ENOENT" else None
    point = nearest.get("mountpoint") if isinstance(nearest, dict) else None
    return point if isinstance(point, str) else None


def longest_prefix_mount(mounts: list[dict[str, Any]], path: str) -> dict[str, Any] | None:
    best: dict[str, Any] | None = None
    for mount in mounts:
        point = mount.get("mountpoint") or ""
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best["mountpoint"])):
            best = mount
    return best


def _data_mounts(mounts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [mount for mount in mounts if is_data_mount(mount)]


def is_data_mount(mount: dict[str, Any]) -> bool:
    fstype = str(mount.get("fstype", ""))
    point = str(mount.get("mountpoint", ""))
    if point == "/" or any(point == p or point.startswith(p + "/") for p in SYSTEM_MOUNTPOINTS):
        return False
    if fstype.startswith("fuse"):
        # FUSE object-store mounts (s3fs, mountpoint-s3, gcsfuse) are where people put
        # checkpoints by mistake; desktop and container helpers (gvfs, lxcfs) are not.
        return not any(s in fstype for s in ("gvfs", "lxcfs", "portal", "snapfuse"))
    return fstype not in PSEUDO_FSTYPES


def measured_write(facts: dict[str, Any]) -> dict[str, Any] | None:
    """The best measured sequential write rate (fio aggregate, else the best gdsio WRITE run)."""
    fio = ok_section(facts, "fio")
    rate = (fio.get("aggregate") or {}).get("write_bytes_per_s")
    if rate:
        jobs = [j for j in fio.get("jobs", []) if (j.get("write") or {}).get("bytes_per_s")]
        return {"bytes_per_s": rate, "tool": "fio", "src": jobs[0]["src"] if jobs else None}
    runs = [r for r in ok_section(facts, "gdsio").get("runs", []) if r.get("io_type") == "WRITE"]
    if runs:
        best = max(runs, key=lambda r: r.get("throughput_bytes_per_s") or 0)
        return {"bytes_per_s": best["throughput_bytes_per_s"], "tool": "gdsio", "src": best.get("src")}
    return None


def checkpoint_stall(facts: dict[str, Any]) -> dict[str, Any] | None:
    """The stall model applied to the measured write rate, when the user described the job."""
    job = ok_section(facts, "job")
    write = measured_write(facts)
    if not job or not write:
        return None
    from gdsdoctor.checkpoint import (
        stall as estimate,  # imported only when there is a job to judge (start-up time)
    )

    result = estimate.compute(
        estimate.Inputs(
            params=job["params"],
            preset=job["preset"],
            components=estimate.components_for(job["preset"]),
            throughput=estimate.bytes_per_s(write["bytes_per_s"], f"measured by {write['tool']}"),
            fsync_s=0.0,
            interval_s=job["interval_s"],
            gpus=job["gpus"],
            budget_fraction=job["budget_fraction"],
            archive=None,
        )
    )
    budget = result.budget
    needed = budget.required_bytes_per_s if budget else None
    return {
        "write_bytes_per_s": write["bytes_per_s"],
        "tool": write["tool"],
        "src": write["src"],
        "checkpoint_bytes": result.total_bytes,
        "stall_s": round(result.stall_s, 3),
        "share_of_wall_time": round(result.wall_fraction, 5),
        "gpu_hours_lost_per_day": round(result.gpu_hours_lost_per_day, 2),
        "budget_fraction": job["budget_fraction"],
        "budget_met": budget.met if budget else None,
        "required_bytes_per_s": needed,
        # the same numbers as people read them, for evidence and messages
        "text": {
            "checkpoint": estimate.format_bytes(result.total_bytes),
            "write_rate": estimate.format_rate(write["bytes_per_s"]),
            "write_rate_argument": estimate.rate_argument(write["bytes_per_s"]),  # 1.62MB/s: --throughput
            "stall": estimate.format_duration(result.stall_s),
            "share": f"{result.wall_fraction:.1%}",
            "budget": f"{job['budget_fraction']:.1%}",
            "needed_rate": estimate.format_rate(needed) if needed else "n/a",
        },
    }
