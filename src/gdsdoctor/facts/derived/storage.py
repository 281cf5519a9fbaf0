"""Derived facts for the storage domain: what sits under each checkpoint mount, and how full it is.

``derive(facts, mounts)`` returns ``derived.storage`` for the mount records the rules judge
(``core.checkpoint_selection``), with these keys:

- ``checkpoint_mounts``: each checkpoint mount (a copy, with its ``src``) plus
  ``maj_min`` (mountinfo, findmnt or lsblk), ``anonymous`` (major 0: overlay, tmpfs, FUSE, NFS,
  btrfs subvolumes — no block device for GDS to classify), ``all_opts`` (per-mount options
  merged over the superblock options of mountinfo when it was read), ``stack`` (the device
  stack from the filesystem down: ``{name, type, kind}``), ``stack_kinds`` (sorted unique kinds:
  ``nvme``, ``partition``, ``md``, ``dm``, ``lvm``, ``crypt``, ``multipath``, ``loop``,
  ``disk``, ``virtio``, ``overlay``, ``tmpfs``, ``fuse``, ``object_store``, ``network``,
  ``zfs``, ``btrfs``), ``nvme_namespaces``, ``nvme_controllers`` (``{name, transport, state,
  fabrics, address, src}``), ``transports`` (sorted unique), ``network_rdma`` (network
  filesystems: true for NFS ``proto=rdma`` or Lustre ``@o2ib``, false for ``proto=tcp`` or
  ``@tcp``, else null), ``volatile_write_cache`` (any device below, stack layer or NVMe
  namespace, says ``write back``, else its controller's ``nvme id-ctrl`` VWC bit; null when
  unknown); ext4 mounts also ``ext4_data_mode`` (``ordered``/``journal``/``writeback``),
  ``ext4_data_mode_source`` (``kernel``: /proc/fs/ext4/<dev>/options, which prints defaults too;
  ``mount table``: only a non-default mode shows there; null: neither says), ``ext4_options_src``.
- ``free``: per checkpoint mount ``{mountpoint, size_bytes, avail_bytes, free_pct, fstype,
  shared (parallel or network filesystem), source ("target"|"df"), src}`` — the ``target``
  section (findmnt on ``--path``) wins over df.
- ``checkpoint_bytes``: the size of the next checkpoint in bytes, null unless the job
  was described (``--params 70B`` → ``job.checkpoint_bytes``).
- ``needed_bytes``: ``checkpoint_bytes × job.checkpoints_kept`` (the space the job needs free).
- ``capacity_short``: the ``free`` entries whose ``avail_bytes`` is below
  ``needed_bytes`` (with ``checkpoint_bytes`` = the needed bytes, ``checkpoint_text`` and
  ``shortfall_bytes``; every entry also has ``avail_text``, e.g. ``500 GB``); [] when
  either is unknown.
- ``targets``: the storage targets of ``lfs df``/``lfs df -i``/``beegfs-df`` merged per target
  (the ``fs_targets`` probe's shape).
- ``stripe_layout``, ``full_targets``, ``whole_file_risk``, ``short_target_mounts``: see
  ``storage_space.target_space``.
- ``inode_short``: metadata targets, and local filesystems of a ``df -i``, 95 % of inodes used
  (``nearly_full``) or with fewer free than the files the job's checkpoints create (``job.gpus ×
  checkpoints_kept``) or none (``too_few``); ``label``, ``inodes_free_text``, ``reason``.
- ``quota_short``: quotas over their limit, at 95 % of it, or leaving less than ``needed_bytes``
  (or than the files needed): ``label``, ``reason``, ``left_bytes``.
- ``fabrics_controllers``: NVMe-oF controllers from sysfs, else nvme-cli
  (``{name, transport, state, subsystem, traddr, trsvcid, ctrl_loss_tmo, ctrl_loss_tmo_s,
  fast_io_fail_tmo_s, reconnect_delay_s, host_iface, host_traddr, src_addr, source, src}``), one
  per controller name.
- ``fabrics_devices``: controller names known to be fabrics (sysfs, nvme-cli, or named
  in NVMe-oF kernel messages) — used to tell PCIe timeouts from fabrics ones.
- ``rdma_capable``: the node has RDMA ports (``infiniband`` section) or an RDMA
  driver loaded (``modules``); null when neither was read.
- ``dmesg``: kernel-log events sorted by what they mean for storage (copies with
  ``src``): ``keepalive`` (keep-alive failures and admin-queue Keep Alive (opcode 0x18)
  timeouts), ``pcie_timeouts`` (I/O timeouts on controllers not known as fabrics, not
  keep-alive), ``pcie_resets`` (resets, removals, capacity → 0, not on fabrics),
  ``fabrics_timeouts``, ``completion_polled`` (lost interrupts), ``devices``: the unique
  device names of each group (``devices.pcie_timeouts``), and ``connect_errors``: the unique
  errnos of NVMe-oF connect/transport failures with their meaning (``{errno, meaning}``),
  ``connect_transports`` (the transports those failures name: ``rdma``, ``tcp``), and
  ``on_checkpoint``: the events whose device is under a checkpoint mount (filesystem, partition,
  namespace or controller).
- ``fabrics_present``: true when any source shows an NVMe-oF controller, false when
  sysfs, nvme-cli or dmesg was read and shows none, null when none was read.
- ``nvme_present``: the same for any NVMe device (sysfs, lsblk, nvme-cli, SMART, or an
  NVMe namespace under a checkpoint mount).
- ``mount_table_shows_atime``: some mount in the table carries relatime/noatime (a
  kernel-written table), so a mount without either really is strictatime.
- ``ana``: per multipath namespace ``{head, paths, states, optimized, usable,
  inaccessible (path names), portal (a live path's ``{transport, traddr, trsvcid}``, None on
  PCIe), src}`` (sysfs ``ana_state``, else nvme-cli list-subsys).
- ``multipath_subsystems``: subsystems reached through two or more NVMe-oF
  controllers: ``{name, nqn, iopolicy, controllers, src}``.
"""

from __future__ import annotations

import re
from typing import Any

from gdsdoctor.facts.derived.access import as_list, dicts, items, obj, ok_section
from gdsdoctor.facts.derived.ana import ana_group, portal_of
from gdsdoctor.facts.derived.storage_events import (
    NVME_PARTITION,
    checkpoint_devices,
    dmesg_fabrics_devices,
    kernel_log,
    namespace_of,
)
from gdsdoctor.facts.derived.storage_space import (
    TARGET_SPACE_EMPTY,
    capacity_short,
    checkpoint_bytes_of,
    files_needed_of,
    free_from_df,
    free_of,
    inode_short,
    needed_bytes_of,
    quota_short,
    storage_targets,
    target_space,
)

OBJECT_STORE_FUSE = (
    "s3fs",
    "mountpoint-s3",
    "mount-s3",
    "gcsfuse",
    "goofys",
    "rclone",
    "blobfuse",
    "s3backer",
)
NETWORK_FSTYPES = frozenset(
    "nfs nfs4 cifs smb3 smbfs lustre beegfs wekafs gpfs ceph glusterfs 9p virtiofs afs ocfs2 scatefs".split()
)
RDMA_MODULES = frozenset(("mlx5_ib", "mlx4_ib", "ib_core", "rdma_cm", "irdma", "bnxt_re", "efa", "rdma_rxe"))
NO_BLOCK_DEVICE = frozenset(("network", "fuse", "overlay", "tmpfs", "zfs"))
FABRICS = ("rdma", "tcp", "fc")


def derive(facts: dict[str, Any], mounts: list[dict[str, Any]]) -> dict[str, Any]:
    try:
        return _derive(facts, mounts)
    except Exception as error:  # a bug here must not take the whole diagnosis down
        return {**EMPTY, "error": f"{type(error).__name__}: {error}"[:300]}


EMPTY: dict[str, Any] = {
    "checkpoint_mounts": [],
    "fabrics_present": None,
    "nvme_present": None,
    "ana": [],
    "multipath_subsystems": [],
    "free": [],
    "checkpoint_bytes": None,
    "needed_bytes": None,
    "capacity_short": [],
    "targets": [],
    **TARGET_SPACE_EMPTY,
    "inode_short": [],
    "quota_short": [],
    "fabrics_controllers": [],
    "fabrics_devices": [],
    "rdma_capable": None,
    "mount_table_shows_atime": False,
    "dmesg": {},
}


def _derive(facts: dict[str, Any], selected: list[dict[str, Any]]) -> dict[str, Any]:
    context = _Context(facts)
    mounts = [context.stack_of(mount) for mount in selected]
    writable = [m for m in mounts if not obj(m.get("opts")).get("ro")]  # a full read-only fs is no news
    free = [entry for entry in (free_of(facts, mount) for mount in writable) if entry]
    if not ok_section(facts, "mounts"):
        free = free or free_from_df(facts)
    checkpoint_bytes, needed, files = (
        checkpoint_bytes_of(facts),
        needed_bytes_of(facts),
        files_needed_of(facts),
    )
    targets = storage_targets(facts)
    fabrics = context.fabrics_controllers()
    fabrics_devices = sorted({c["name"] for c in fabrics if c.get("name")} | dmesg_fabrics_devices(facts))
    return {
        "checkpoint_mounts": mounts,
        "fabrics_present": _fabrics_present(facts, fabrics_devices),
        "nvme_present": True if any(m["nvme_namespaces"] for m in mounts) else _nvme_present(facts),
        "ana": context.ana_groups(),
        "multipath_subsystems": context.multipath_subsystems(),
        "free": free,
        "checkpoint_bytes": checkpoint_bytes,
        "needed_bytes": needed,
        "capacity_short": capacity_short(free, needed),
        "targets": targets,
        **target_space(facts, targets, needed),
        "inode_short": inode_short(facts, targets, files),
        "quota_short": quota_short(facts, needed, files),
        "fabrics_controllers": fabrics,
        "fabrics_devices": fabrics_devices,
        "rdma_capable": _rdma_capable(facts),
        "mount_table_shows_atime": _shows_atime(facts),
        "dmesg": kernel_log(facts, set(fabrics_devices), checkpoint_devices(mounts)),
    }


def _index(items: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    """Items by a string field (items without it are left out)."""
    return {item[key]: item for item in items if isinstance(item.get(key), str) and item[key]}


class _Context:
    """Indexes over lsblk, sysfs, mountinfo and nvme-cli, built once per derivation."""

    def __init__(self, facts: dict[str, Any]) -> None:
        self.facts = facts
        lsblk = dicts(ok_section(facts, "lsblk").get("devices"))
        self.lsblk_by_name = _index(lsblk, "kname") | _index(lsblk, "name")
        self.lsblk_by_majmin = _index(lsblk, "maj_min")
        self.lsblk_by_mountpoint = {
            point: d for d in lsblk for point in as_list(d.get("mountpoints")) if isinstance(point, str)
        }
        sysfs = ok_section(facts, "nvme_sysfs")
        self.block = _index(dicts(sysfs.get("block")), "name")
        self.sys_controllers = _index(dicts(sysfs.get("controllers")), "name")
        self.sys_subsystems = dicts(sysfs.get("subsystems"))
        self.mountinfo = obj(ok_section(facts, "mountinfo").get("by_mountpoint"))
        self.ext4 = obj(ok_section(facts, "ext4_options").get("devices"))  # /proc/fs/ext4/<dev>/options
        self.cli_paths = dicts(ok_section(facts, "nvme_subsys").get("paths"))
        self.cli_namespaces = dicts(ok_section(facts, "nvme_list").get("namespaces"))
        self.cli_controllers = dicts(ok_section(facts, "nvme_list").get("controllers"))

    # --- the stack under one mount -------------------------------------------------------------

    def stack_of(self, mount: dict[str, Any]) -> dict[str, Any]:
        fstype = str(mount.get("fstype") or "")
        point = str(mount.get("mountpoint") or "")
        info = self.mountinfo.get(point) if isinstance(self.mountinfo.get(point), dict) else {}
        maj_min = info.get("maj_min") or self._target_majmin(point)
        fs_kinds = _fs_kinds(fstype, mount.get("device"))
        # network/virtual filesystems name no block device (/dev/<fsname> for GPFS is not one)
        device = "" if fs_kinds & NO_BLOCK_DEVICE else str(mount.get("device") or mount.get("source") or "")
        stack = self._device_stack(device, maj_min, point) if device or maj_min else []
        kinds = {layer["kind"] for layer in stack} | fs_kinds
        namespaces = sorted({n for layer in stack if (n := namespace_of(layer["name"]))})
        controllers = self._controllers_of(namespaces)
        opts = obj(mount.get("opts")) or _split_options(mount.get("options"))  # findmnt-only targets
        all_opts = info.get("all_opts") if isinstance(info.get("all_opts"), dict) else opts
        return {
            **mount,
            "opts": opts,
            "maj_min": maj_min,
            "anonymous": maj_min.split(":")[0] == "0" if maj_min else None,
            "all_opts": {**all_opts, **opts},
            "stack": stack,
            "stack_kinds": sorted(kinds),
            "nvme_namespaces": namespaces,
            "nvme_controllers": controllers,
            "transports": sorted({c["transport"] for c in controllers if c.get("transport")}),
            "network_rdma": _network_rdma(fstype, str(mount.get("device") or ""), {**all_opts, **opts}),
            "volatile_write_cache": self._write_cache(
                [layer["name"] for layer in stack] + namespaces, controllers
            ),
            **(self._ext4_data_mode(device, stack, {**all_opts, **opts}) if fstype == "ext4" else {}),
        }

    def _ext4_data_mode(
        self, device: str, stack: list[dict[str, Any]], options: dict[str, Any]
    ) -> dict[str, Any]:
        """The ext4 data mode where the kernel shows it (/proc/fs/ext4/<dev>/options prints every
        option, defaults included), else what the mount table says (only a non-default mode: a plain
        data=ordered mount shows no data= there)."""
        names = [device.removeprefix("/dev/"), *(str(layer["name"]) for layer in stack)]
        kernel = next((self.ext4[n] for n in names if isinstance(self.ext4.get(n), dict)), None)
        if kernel and kernel.get("data"):
            return {
                "ext4_data_mode": kernel["data"],
                "ext4_data_mode_source": "kernel",
                "ext4_options_src": kernel.get("src"),
            }
        mode = options.get("data") if isinstance(options.get("data"), str) else None
        return {"ext4_data_mode": mode, "ext4_data_mode_source": "mount table" if mode else None,
                "ext4_options_src": kernel.get("src") if kernel else None}  # fmt: skip

    def _target_majmin(self, point: str) -> str | None:
        target = ok_section(self.facts, "target")
        return target.get("majmin") if target.get("mountpoint") == point else None

    def _device_stack(self, device: str, maj_min: str | None, point: str) -> list[dict[str, Any]]:
        top = self._lsblk_top(device, maj_min, point)
        if top is not None:
            return self._walk_lsblk(top)
        name = _device_name(device)
        return self._walk_sysfs(name) if name else []

    def _lsblk_top(self, device: str, maj_min: str | None, point: str) -> dict[str, Any] | None:
        if maj_min and maj_min in self.lsblk_by_majmin:
            return self.lsblk_by_majmin[maj_min]
        name = _device_name(device)
        if name and name in self.lsblk_by_name:
            return self.lsblk_by_name[name]
        if device.startswith("/dev/"):  # /dev/root and the like
            return self.lsblk_by_mountpoint.get(point)
        return None

    def _walk_lsblk(self, top: dict[str, Any]) -> list[dict[str, Any]]:
        stack, queue, seen = [], [top], set()
        while queue and len(stack) < 64:
            device = queue.pop(0)
            name = device.get("name")
            if not name or name in seen:
                continue
            seen.add(name)
            stack.append({"name": name, "type": device.get("type"), "kind": _lsblk_kind(device)})
            parents = as_list(device.get("parents")) or ([device["parent"]] if device.get("parent") else [])
            queue.extend(self.lsblk_by_name[p] for p in parents if p in self.lsblk_by_name)
        return stack

    def _walk_sysfs(self, name: str) -> list[dict[str, Any]]:
        """Without lsblk: the kernel name, then sysfs ``slaves`` (md/dm) down to the disks."""
        stack, queue, seen = [], [name], set()
        while queue and len(stack) < 64:
            current = queue.pop(0)
            if current in seen:
                continue
            seen.add(current)
            kind = _name_kind(current)
            stack.append({"name": current, "type": None, "kind": kind})
            if kind == "partition":
                queue.append(_disk_of_partition(current))
            queue.extend(as_list((self.block.get(current) or {}).get("slaves")))
        return stack

    # --- NVMe controllers ----------------------------------------------------------------------

    def _controllers_of(self, namespaces: list[str]) -> list[dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for namespace in namespaces:
            for name in self._controller_names(namespace):
                found.setdefault(name, self._controller(name))
        return [found[name] for name in sorted(found)]

    def _controller_names(self, namespace: str) -> list[str]:
        controllers = self.sys_controllers.items()
        names = [c for c, ctrl in controllers if namespace in as_list(ctrl.get("namespaces"))]
        for subsystem in self.sys_subsystems:
            if namespace in as_list(subsystem.get("namespaces")):
                names += [c for c in as_list(subsystem.get("controllers")) if isinstance(c, str)]
        if names:
            return names
        subsystems = {n.get("subsystem") for n in self.cli_namespaces if n.get("device") == namespace}
        names = [
            p["name"] for p in self.cli_paths if p.get("name") and p.get("subsystem") in subsystems - {None}
        ]
        names += [
            n["controller"]
            for n in self.cli_namespaces
            if n.get("device") == namespace and n.get("controller")
        ]
        return names

    def _controller(self, name: str) -> dict[str, Any]:
        sys = self.sys_controllers.get(name)
        if sys:
            return _controller_view(sys, "sysfs")
        for path in self.cli_paths + self.cli_controllers:
            if path.get("name") == name:
                return _controller_view(path, "nvme-cli")
        return {"name": name, "transport": None, "state": None, "fabrics": None, "address": None, "src": None}

    def fabrics_controllers(self) -> list[dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for controller in self.sys_controllers.values():
            if controller.get("fabrics"):
                found[controller["name"]] = _controller_view(controller, "sysfs")
        unnamed = (p for p in self.cli_paths + self.cli_controllers if p.get("transport") in FABRICS)
        for number, path in enumerate(unnamed, 1):
            key = path.get("name") or f"(unnamed path {number})"  # nvme-cli printed (null)
            found.setdefault(key, _controller_view(path, "nvme-cli"))
        return [found[key] for key in sorted(found)]

    def ana_groups(self) -> list[dict[str, Any]]:
        """Per multipath namespace: the ANA states of its paths (sysfs, else nvme-cli)."""
        groups: dict[str, list[dict[str, Any]]] = {}
        states_of = {c: ctrl.get("state") for c, ctrl in self.sys_controllers.items()}
        sys_paths = dicts(ok_section(self.facts, "nvme_sysfs").get("paths"))
        for path in sys_paths:
            if path.get("ana_state") and path.get("head"):
                controller = self.sys_controllers.get(path.get("controller")) or {}
                groups.setdefault(path["head"], []).append(
                    {**path, "state": states_of.get(path.get("controller")), "portal": portal_of(controller)}
                )
        if not groups:
            for path in self.cli_paths:
                if path.get("ana_state") and path.get("subsystem"):
                    key = f"{path['subsystem']}" + (f" ns {path['nsid']}" if path.get("nsid") else "")
                    groups.setdefault(key, []).append({**path, "portal": portal_of(path)})
        return [ana_group(head, paths) for head, paths in sorted(groups.items())]

    def multipath_subsystems(self) -> list[dict[str, Any]]:
        """Subsystems reached through two or more NVMe-oF controllers, with their I/O policy."""
        found = []
        for subsystem in self.sys_subsystems:
            members = [self.sys_controllers.get(c) or {} for c in as_list(subsystem.get("controllers"))]
            fabrics = [c["name"] for c in members if c.get("fabrics")]
            if len(fabrics) > 1:
                found.append(_multipath_entry(subsystem, fabrics))
        if found or self.sys_subsystems:
            return found
        fabric_paths: dict[Any, set[str]] = {}  # by subsystem in one pass (a scan each was quadratic)
        for path in self.cli_paths:
            if path.get("name") and path.get("transport") in FABRICS:
                fabric_paths.setdefault(path.get("subsystem"), set()).add(path["name"])
        multipath: dict[Any, dict[str, Any]] = {}
        for subsystem in dicts(ok_section(self.facts, "nvme_subsys").get("subsystems")):
            fabrics = sorted(fabric_paths.get(subsystem.get("name"), ()))
            if len(fabrics) > 1:
                multipath.setdefault(subsystem.get("name"), _multipath_entry(subsystem, fabrics))
        return list(multipath.values())

    def _write_cache(self, devices: list[str], controllers: list[dict[str, Any]]) -> bool | None:
        """True when a device below (a layer of the stack, an NVMe namespace) has a volatile write
        cache: sysfs ``queue/write_cache`` (``write back``), else the NVMe controller's ``nvme
        id-ctrl`` VWC bit (an NVMe-oF target reports its own)."""
        caches = [(self.block.get(n) or {}).get("write_cache") for n in devices]
        known = [c for c in caches if c]
        if known:
            return any("back" in str(c) for c in known)
        names = {str(c.get("name")) for c in controllers} | set(devices)  # id-ctrl run on either
        vwc = [
            entry.get("volatile_write_cache")
            for entry in dicts(ok_section(self.facts, "nvme_id_ctrl").get("controllers"))
            if str(entry.get("device") or "").removeprefix("/dev/") in names
        ]
        said = [v for v in vwc if isinstance(v, bool)]
        return any(said) if said else None


def _multipath_entry(subsystem: dict[str, Any], controllers: list[str]) -> dict[str, Any]:
    return {
        "name": subsystem.get("name"),
        "nqn": subsystem.get("nqn"),
        "iopolicy": subsystem.get("iopolicy"),
        "controllers": controllers,
        "src": subsystem.get("src"),
    }


def _fabrics_present(facts: dict[str, Any], fabrics_devices: list[str]) -> bool | None:
    """True when any source shows an NVMe-oF controller; False when one was read and shows none."""
    if fabrics_devices:
        return True
    readable = ("nvme_sysfs", "nvme_subsys", "nvme_list", "dmesg")
    return False if any(ok_section(facts, section) for section in readable) else None


def _nvme_present(facts: dict[str, Any]) -> bool | None:
    """True when sysfs, lsblk, nvme-cli or SMART show an NVMe device; False when read and none shown."""
    seen: list[bool] = []
    sysfs = ok_section(facts, "nvme_sysfs")
    if sysfs:
        seen.append(bool(as_list(sysfs.get("controllers"))))
    lsblk = ok_section(facts, "lsblk")
    if lsblk:
        seen.append(any(str(d.get("name") or "").startswith("nvme") for d in dicts(lsblk.get("devices"))))
    for section, key in (("nvme_list", "namespaces"), ("nvme_smart", "devices"), ("nvme_subsys", "paths")):
        if ok_section(facts, section):
            seen.append(bool(as_list(ok_section(facts, section).get(key))))
    if any(seen):
        return True
    return False if seen else None


def _controller_view(raw: dict[str, Any], source: str) -> dict[str, Any]:
    transport = raw.get("transport")
    return {
        "name": raw.get("name"),
        "transport": transport,
        "state": raw.get("state"),
        "fabrics": transport in ("rdma", "tcp", "fc", "loop") if transport else None,
        "address": raw.get("address"),
        "subsystem": raw.get("subsystem"),
        "traddr": raw.get("traddr"),
        "trsvcid": raw.get("trsvcid"),
        "ctrl_loss_tmo": raw.get("ctrl_loss_tmo"),
        "ctrl_loss_tmo_s": raw.get("ctrl_loss_tmo_s"),
        "fast_io_fail_tmo": raw.get("fast_io_fail_tmo"),
        "fast_io_fail_tmo_s": raw.get("fast_io_fail_tmo_s"),
        "reconnect_delay_s": raw.get("reconnect_delay_s"),
        "host_iface": raw.get("host_iface"),
        "host_traddr": raw.get("host_traddr"),
        "src_addr": raw.get("src_addr"),
        "source": source,
        "src": raw.get("src"),
    }


def stack_context(facts: dict[str, Any]) -> _Context:
    """The indexes ``stack_of`` walks, for another concern's mounts (derived.fabrics: fstab's)."""
    return _Context(facts)


# --- classification helpers ---------------------------------------------------------------------


def _split_options(options: Any) -> dict[str, Any]:
    from gdsdoctor.probes.mounts import split_options

    return split_options(options) if isinstance(options, str) and options else {}


def _device_name(device: str) -> str | None:
    """``/dev/nvme0n1p1`` → ``nvme0n1p1``; ``/dev/mapper/vg-lv`` → ``vg-lv``; not a device → None."""
    if not device.startswith("/dev/"):
        return None
    name = device.rsplit("/", 1)[-1]
    return name or None


def _lsblk_kind(device: dict[str, Any]) -> str:
    kind = str(device.get("type") or "").lower()
    name = str(device.get("name") or "")
    if kind == "disk":
        if name.startswith("nvme") or device.get("tran") == "nvme":
            return "nvme"
        return "virtio" if name.startswith("vd") else "disk"
    if kind == "part":
        return "partition"
    if kind.startswith(("raid", "md", "linear")):
        return "md"
    if kind in ("lvm", "crypt", "mpath"):
        return {"lvm": "lvm", "crypt": "crypt", "mpath": "multipath"}[kind]
    if kind in ("dm", "loop", "rom"):
        return kind
    return _name_kind(name)


def _name_kind(name: str) -> str:
    if NVME_PARTITION.match(name) or re.match(r"^(sd[a-z]+|vd[a-z]+|xvd[a-z]+)\d+$", name):
        return "partition"
    if re.match(r"^nvme\d+(c\d+)?n\d+$", name):
        return "nvme"
    for prefix, kind in (("md", "md"), ("dm-", "dm"), ("loop", "loop"), ("vd", "virtio"), ("sd", "disk")):
        if name.startswith(prefix):
            return kind
    return "dm" if "-" in name else "disk"  # /dev/mapper/<vg>-<lv> names


def _disk_of_partition(name: str) -> str:
    match = NVME_PARTITION.match(name)
    return match[1] if match else re.sub(r"(?<!\d)\d+$", "", name)


def _fs_kinds(fstype: str, device: Any) -> set[str]:
    kinds: set[str] = set()
    if fstype == "overlay":
        kinds.add("overlay")
    elif fstype in ("tmpfs", "ramfs"):
        kinds.add("tmpfs")
    elif fstype.startswith("fuse"):
        kinds.add("fuse")
        if _object_store(fstype, str(device or "")):
            kinds.add("object_store")
    elif fstype in NETWORK_FSTYPES:
        kinds.add("network")
    elif fstype in ("zfs", "btrfs"):
        kinds.add(fstype)
    return kinds


def _object_store(fstype: str, device: str) -> bool:
    text = f"{fstype} {device}".lower()
    return any(name in text for name in OBJECT_STORE_FUSE)


def _network_rdma(fstype: str, device: str, opts: dict[str, Any]) -> bool | None:
    if fstype.startswith("nfs"):
        proto = str(opts.get("proto") or "").lower()
        if proto.startswith("rdma"):
            return True
        return False if proto.startswith("tcp") or proto.startswith("udp") else None
    if fstype == "lustre":
        if "@o2ib" in device:
            return True
        return False if "@tcp" in device else None
    return None


# --- capacity -----------------------------------------------------------------------------------


def _shows_atime(facts: dict[str, Any]) -> bool:
    """The kernel prints relatime/noatime/strictatime on every mount; a table without any of them
    was written or filtered by hand, so a missing atime option there says nothing."""
    flags = ("relatime", "noatime", "strictatime", "lazytime")
    mounts = items(ok_section(facts, "mounts"), "mounts") + items(ok_section(facts, "mountinfo"), "mounts")
    return any(obj(m.get("opts")).get(flag) for m in mounts for flag in flags)


def _rdma_capable(facts: dict[str, Any]) -> bool | None:
    seen: list[bool] = []
    infiniband = ok_section(facts, "infiniband")
    if infiniband:
        seen.append(bool(as_list(infiniband.get("ports")) or as_list(infiniband.get("devices"))))
    modules = ok_section(facts, "modules")
    if modules:
        seen.append(bool(RDMA_MODULES & set(as_list(modules.get("names")))))
    if any(seen):
        return True
    return False if seen else None
