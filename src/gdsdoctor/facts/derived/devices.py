"""Derived facts that judge each device a kernel message names by what it is and what it holds.

An I/O error is worth a page on the checkpoint drive and a line on a snap image: rules cap
their severity (``severity_at_most``, engine/evaluate.py) with what is derived here.

``derive(facts, derived)`` returns ``derived.devices``, with these keys:

- ``roles``: per device named by a storage event of the kernel log ``{class, role,
  ceiling, mountpoints}``. ``class``: ``nvme``, ``scsi`` (SCSI/SATA/SAS/USB disks ``sd*``),
  ``loop``, ``ram`` (``ram*``, ``zram*``), ``optical`` (``sr*``), ``mmc`` (SD/MMC cards,
  ``mmcblk*``), ``md``, ``dm``, ``virtio``,
  ``network`` (interfaces) or ``other``. ``role``: ``checkpoint`` (under a checkpoint mount:
  ``--path``'s filesystem, or without it every data mount), ``data`` (another data mount),
  ``system`` (``/``, ``/boot``, swap and other system trees), ``snap`` (mounted under
  ``/snap``), ``unmounted`` (the block listing shows it and nothing on it is mounted) or
  ``unknown`` (no mount table or block listing names it). ``ceiling``: the highest severity a
  failure of that device deserves: ``critical`` for checkpoint and data devices; ``warning``
  for system devices; ``info`` for unmounted and snap devices and for loop, ram and optical
  devices not holding data; ``critical`` for an unknown role (what cannot be told is not
  played down).
- ``storage_events``: copies of the kernel log's storage events (block I/O errors, SCSI sense
  reports, a full backing store, NVMe errors, timeouts and resets) with ``device_class``,
  ``device_role`` and ``ceiling``; on a SCSI device also ``scsi_verdict`` and ``removable``
  (see ``scsi``).
- ``ceiling``: per event kind, the highest ceiling among its events (null when there is
  none); ``scsi_errors``: that of the block I/O errors on SCSI/SATA disks; ``nvme_media``: that
  of NVMe status errors and block errors on NVMe (or unnamed) devices; ``hung_task``: that of the
  devices named by storage hung-task reports (``warning`` when none is named: the I/O stalled,
  nothing says it failed); ``nvme_controller``: that of resets and removals (``nvme_reset``,
  ``capacity_to_zero``); ``filesystem``: that of filesystem errors and shutdowns;
  ``nvme_timeouts``: that of the PCIe NVMe timeouts, no higher than ``warning`` unless one
  controller timed out three times or more, or a command was aborted or a controller reset (a
  single polled completion is a lost interrupt, not a failing drive).
- ``failing``: per device class, the unique names of the devices with block I/O errors
  (``failing.scsi``), ``scsi_media``: the SCSI/SATA disks whose errors are the medium's or the
  hardware's, and ``described``: each as ``name (class, role)``, for messages.
- ``scsi``: per SCSI device (``sd*``, ``sr*``, ``st*``) with errors, ``{device, verdict, why,
  sense_keys, asc, removable, reports}`` (``reports``: the first lines that said so). A failed
  command is judged by what the device said (the sense key and additional sense of the sd
  driver's report, the block layer's error word), not by the ``I/O error`` line alone:
  ``verdict`` ``media`` (Medium Error, Hardware Error, unrecovered read/write errors,
  "critical medium error"), ``not_media`` (Not Ready, medium not present, Illegal Request,
  Aborted Command, incompatible medium, a target or transport error: the command or the
  medium in the slot, not worn sectors) or ``unknown`` (no sense data). ``removable``: a
  USB-attached disk (its SCSI host is usb-storage or uas), a disk the sd driver attached as
  removable, or one lsblk marks RM/HOTPLUG. A removable device's or a card reader's (``mmc``)
  errors are at most ``info`` (``warning`` when it holds data), and ``not_media`` errors on a
  fixed disk at most ``warning``.
- ``hung_storage_tasks``: hung-task reports whose call trace runs through storage code, local or
  network/parallel filesystems (NFS/RPC, Lustre, BeeGFS, GPFS, WekaFS, Ceph, FUSE) or writeback,
  whatever the task's name (``storage_frames``: the frames that follow it); a report the log
  gives no stack for counts by its task's name (jbd2, xfs, flush workers, nvme, md/dm, bcache),
  one whose stack blocks elsewhere does not, whatever its name.
- ``hung_gpu_driver_tasks``: hung-task reports whose stack blocks in the NVIDIA driver and never
  in storage code (``driver_frames``), whatever the task's name (a ``gdscheck`` too).
- ``storage_oopses``: kernel BUGs, oopses and warnings whose call trace (or RIP)
  runs through a storage module or function (nvme, xfs, ext4, jbd2, nvidia_fs, md, dm,
  bcache), with those ``storage_frames``.
- ``storage_lockups``: soft or hard lockups (a CPU stuck in kernel code) whose trace runs through
  storage code, with those ``storage_frames``.
- ``links``: the degraded PCIe links (``derived.topology.links``) with ``role``:
  ``management`` for a NIC that is not RDMA-capable and whose driver (igb, e1000e, tg3…) or
  product name (lspci: I210, I350, BCM5720, "Gigabit Ethernet") says 1 GbE (onboard management
  ports are wired x1 by design), else ``data``.
"""

from __future__ import annotations

import re
from typing import Any

from gdsdoctor.facts.derived.access import as_list, obj, ok_section
from gdsdoctor.facts.derived.core import is_data_mount
from gdsdoctor.facts.derived.storage_events import JOURNAL_SUFFIX, checkpoint_devices, namespace_of
from gdsdoctor.patterns import lazy_compile

SEVERITIES = ("info", "warning", "critical")
ROLE_CEILING = {
    "checkpoint": "critical",
    "data": "critical",
    "unknown": "critical",
    "system": "warning",
    "snap": "info",
    "unmounted": "info",
}
SCRATCH_CLASSES = frozenset(("loop", "ram", "optical", "mmc"))  # images, RAM disks, discs, cards
STORAGE_EVENT_KINDS = frozenset(
    ("blk_io_error", "nvme_status_error", "nvme_timeout", "nvme_abort", "nvme_reset", "capacity_to_zero",
     "md_failure", "fs_error", "fs_shutdown", "backing_store_full", "scsi_sense")
)  # fmt: skip
# What a SCSI device's failed command says about its medium (SPC sense keys; the block layer's
# error words, block/blk-core.c blk_errors). Media failures are the sectors or the drive itself.
MEDIA_SENSE_KEYS = frozenset(("medium error", "hardware error", "0x3", "0x03", "0x4", "0x04"))
NOT_MEDIA_SENSE_KEYS = frozenset(
    ("not ready", "illegal request", "unit attention", "data protect", "aborted command", "blank check",
     "no sense", "recovered error", "volume overflow",
     "0x0", "0x00", "0x1", "0x01", "0x2", "0x02", "0x5", "0x05", "0x6", "0x06", "0x7", "0x07", "0xb", "0x0b")
)  # fmt: skip
_MEDIA_ASC = lazy_compile(
    r"(?i)unrecovered read error|\bwrite error|uncorrectable|\becc error|medium format corrupted|"
    r"recorded entity not found|read retries exhausted|internal target failure"
)
_NOT_MEDIA_ASC = lazy_compile(
    r"(?i)medium not present|incompatible medium|not ready|invalid (?:field|command|opcode)|"
    r"out of range|power on|bus device reset|parameters changed|write protected|medium may have changed"
)
MEDIA_ASC_CODES = frozenset(("0x11", "0x0c", "0x31", "0x14", "0x44"))  # read, write, format, entity, internal
MEDIA_BLOCK_ERRORS = frozenset(("critical medium",))
NOT_MEDIA_BLOCK_ERRORS = frozenset(("critical target", "recoverable transport", "critical nexus", "timeout"))
TIMEOUTS_BEFORE_CRITICAL = 3  # on one controller
TRACE_WINDOW_LINES = 80  # a call trace follows its header within this many lines
_CLASSES = (
    (lazy_compile(r"^nvme\d+(?:c\d+)?(?:n\d+(?:p\d+)?)?$"), "nvme"),
    (lazy_compile(r"^(?:sd[a-z]+|hd[a-z]+)\d*$"), "scsi"),
    (lazy_compile(r"^loop\d+(?:p\d+)?$"), "loop"),
    (lazy_compile(r"^z?ram\d+$"), "ram"),
    (lazy_compile(r"^(?:sr|scd)\d+$"), "optical"),
    (lazy_compile(r"^mmcblk\d+(?:p\d+)?$"), "mmc"),
    (lazy_compile(r"^md\w*$"), "md"),
    (lazy_compile(r"^(?:dm-\d+|[\w.]+-[\w.-]+)$"), "dm"),  # dm-3, /dev/mapper/<vg>-<lv>
    (lazy_compile(r"^x?vd[a-z]+\d*$"), "virtio"),
    (lazy_compile(r"^(?:eth|en[a-z]|ib|mlx\d|bond|wl)\w*$"), "network"),
)
_STORAGE_TASK = lazy_compile(
    r"^(?:jbd2/|xfs|kworker/\S*(?:flush|writeback|xfs|ext4|nvme|blkcg|kblockd)|nvme|md\d*_|md/|raid\d|dm[-_]|"
    r"kdmflush|kcryptd|bcache|kswapd|ext4|flush-|loop\d)"
)
_GPU_DRIVER_FRAME = lazy_compile(r"\[nvidia(?:_uvm|_modeset|_drm)?\]$")
_ONE_GBE = lazy_compile(
    r"(?i)\b(?:I210|I211|I350|I219|82574|82576|82580|BCM57(?:19|20|62)|NetXtreme BCM57\d\d Gigabit|"
    r"(?<![\d-])Gigabit Ethernet)\b"
)
ONE_GBE_DRIVERS = frozenset(("igb", "igc", "e1000", "e1000e", "tg3", "bnx2", "r8169"))
_JOURNAL_TASK = lazy_compile(r"^(?:jbd2|kworker/\S{0,32}flush)[/-](?P<device>[a-z][\w-]*\d)-\d+(?::\d+)?$")
_NAMESPACE = lazy_compile(r"(?P<controller>nvme\d+)(?:c\d+)?n\d+")  # nvme0n1, nvme0c1n1
_PARTITION_SUFFIX = lazy_compile(r"p?\d+")
_CONTROLLER_OF = lazy_compile(r"(?:c\d+)?n\d+(?:p\d+)?$")  # nvme0n1p2, nvme0c1n1 -> nvme0


def derive(facts: dict[str, Any], derived: dict[str, Any]) -> dict[str, Any]:
    try:
        return _derive(facts, derived)
    except Exception as error:  # a bug here must not take the whole diagnosis down (as storage)
        return {**EMPTY, "error": f"{type(error).__name__}: {error}"[:300]}


EMPTY: dict[str, Any] = {
    "roles": {},
    "storage_events": [],
    "ceiling": {},
    "failing": {},
    "scsi": [],
    "hung_storage_tasks": [],
    "hung_gpu_driver_tasks": [],
    "storage_oopses": [],
    "storage_lockups": [],
    "links": [],
    "error": None,
}


def _derive(facts: dict[str, Any], derived: dict[str, Any]) -> dict[str, Any]:
    events = [e for e in as_list(ok_section(facts, "dmesg").get("events")) if isinstance(e, dict)]
    places = _Places(facts, derived)
    scsi = _scsi_verdicts(events, places)
    storage = [_judged(e, places, scsi) for e in events if e.get("kind") in STORAGE_EVENT_KINDS]
    trace = _trace_context(events)  # the storage frames and report lines, found once for both
    hung = _hung_storage_tasks(events, trace)
    named = [e["device"] for e in [*storage, *hung] if isinstance(e.get("device"), str) and e["device"]]
    roles = {device: places.role_of(device) for device in named}
    ceilings = _ceilings(storage, derived)
    ceilings["hung_task"] = _highest(
        [roles[e["device"]]["ceiling"] for e in hung if e.get("device") in named]
    ) or ("warning" if hung else None)
    return {
        "roles": roles,
        "storage_events": storage,
        "ceiling": ceilings,
        "failing": _failing(storage, scsi),
        "scsi": list(scsi.values()),
        "hung_storage_tasks": hung,
        "hung_gpu_driver_tasks": _hung_gpu_driver_tasks(events, trace),
        "storage_oopses": _storage_oopses(events, trace),
        "storage_lockups": _storage_oopses(events, trace, "soft_lockup"),
        "links": _links(facts, derived),
        "error": None,
    }


def device_class(name: str) -> str:
    for pattern, found in _CLASSES:
        if pattern.match(name):
            return found
    return "other"


class _Places:
    """Where each device sits: its mountpoints (the block listing's, down to its partitions,
    and the mount table's) and whether it is under a checkpoint mount."""

    def __init__(self, facts: dict[str, Any], derived: dict[str, Any]) -> None:
        lsblk = ok_section(facts, "lsblk")
        self.by_name = lsblk.get("by_name") if isinstance(lsblk.get("by_name"), dict) else {}
        self.mounts = [m for m in as_list(ok_section(facts, "mounts").get("mounts")) if isinstance(m, dict)]
        checkpoint_mounts = as_list(obj(derived.get("storage")).get("checkpoint_mounts"))
        self.checkpoint = checkpoint_devices(checkpoint_mounts) if checkpoint_mounts else set()
        self.checkpoint_points = {str(m.get("mountpoint")) for m in checkpoint_mounts
                                  if isinstance(m, dict)}  # fmt: skip
        self.cache: dict[str, dict[str, Any]] = {}

    def role_of(self, device: str) -> dict[str, Any]:
        if device not in self.cache:
            self.cache[device] = self._role(device)
        return self.cache[device]

    def _role(self, device: str) -> dict[str, Any]:
        name = JOURNAL_SUFFIX.sub(r"\1", device)
        found = device_class(name)
        points = sorted(self._mountpoints(name))
        if self._on_checkpoint(name, points):
            role = "checkpoint"
        elif any(_is_data_point(p, self.mounts) for p in points):
            role = "data"
        elif any(p == "/snap" or p.startswith("/snap/") for p in points):
            role = "snap"
        elif points:
            role = "system"
        elif self._listed(name):
            role = "unmounted"
        else:
            role = "unknown"
        ceiling = ROLE_CEILING[role]
        if found in SCRATCH_CLASSES and role not in ("checkpoint", "data"):
            ceiling = "info"
        return {"class": found, "role": role, "ceiling": ceiling, "mountpoints": points}

    def _on_checkpoint(self, name: str, points: list[str]) -> bool:
        namespace = namespace_of(name)
        on_mount = bool(self.checkpoint_points & set(points))
        return name in self.checkpoint or namespace in self.checkpoint or on_mount

    def removable(self, name: str) -> bool:
        """lsblk says the disk holds removable media (RM) or is hot-pluggable (HOTPLUG), or is USB."""
        device = self.by_name.get(name)
        return isinstance(device, dict) and (
            device.get("rm") is True or device.get("hotplug") is True or device.get("tran") == "usb"
        )

    def _listed(self, name: str) -> bool:
        return bool(self._family(name)) or any(_mount_device(m) == name for m in self.mounts)

    def _family(self, name: str) -> list[dict[str, Any]]:
        """The device and everything built on it in the block listing; an NVMe controller
        (``nvme0``) stands for its namespaces."""
        if re.fullmatch(r"nvme\d+", name):
            roots = [d for n, d in self.by_name.items() if _controller_of(str(n)) == name]
        else:
            roots = [self.by_name[name]] if isinstance(self.by_name.get(name), dict) else []
        seen: dict[str, dict[str, Any]] = {}
        stack = list(roots)
        while stack and len(seen) < 1000:
            device = stack.pop()
            if not isinstance(device, dict) or str(device.get("name")) in seen:
                continue
            seen[str(device.get("name"))] = device
            stack += [self.by_name.get(child) for child in as_list(device.get("children"))]
        return list(seen.values())

    def _mountpoints(self, name: str) -> set[str]:
        family = self._family(name)
        points = {str(p) for d in family for p in as_list(d.get("mountpoints")) if p}
        names = {str(d.get("name")) for d in family} | {name}
        points |= {str(m.get("mountpoint")) for m in self.mounts if _mount_device(m) in names}
        # without a block listing, a partition in the mount table still shows where its disk is used
        points |= {str(m.get("mountpoint")) for m in self.mounts
                   if _is_partition_of(_mount_device(m) or "", name)}  # fmt: skip
        return {p for p in points if p and p != "None"}


def _mount_device(mount: dict[str, Any]) -> str | None:
    device = str(mount.get("device") or "")
    return device.rsplit("/", 1)[-1] if device.startswith("/dev/") else None


def _is_data_point(point: str, mounts: list[dict[str, Any]]) -> bool:
    if point.startswith("["):  # [SWAP]
        return False
    fstype = next((str(m.get("fstype")) for m in mounts if m.get("mountpoint") == point), "")
    return is_data_mount({"mountpoint": point, "fstype": fstype})


def _judged(event: dict[str, Any], places: _Places, scsi: dict[str, dict[str, Any]]) -> dict[str, Any]:
    device = event.get("device")
    role = places.role_of(device) if isinstance(device, str) and device else None
    if role is None:
        return {**event, "device_class": None, "device_role": "unknown", "ceiling": "critical"}
    ceiling = role["ceiling"]
    if event.get("kind") == "backing_store_full":  # a write ran out of space: the image was written to
        ceiling = ROLE_CEILING[role["role"]]
    judged = scsi.get(str(device))
    if judged is None:
        return {**event, "device_class": role["class"], "device_role": role["role"], "ceiling": ceiling}
    ceiling = min(ceiling, _scsi_ceiling(judged, role), key=SEVERITIES.index)
    return {**event, "device_class": role["class"], "device_role": role["role"], "ceiling": ceiling,
            "scsi_verdict": judged["verdict"], "removable": judged["removable"]}  # fmt: skip


def _scsi_ceiling(judged: dict[str, Any], role: dict[str, Any]) -> str:
    """Removable media never pages anyone; a command the disk refused is not a failing disk."""
    if judged["removable"]:
        return "warning" if role["role"] in ("checkpoint", "data") else "info"
    return "warning" if judged["verdict"] == "not_media" else "critical"


def _scsi_verdicts(events: list[dict[str, Any]], places: _Places) -> dict[str, dict[str, Any]]:
    """Per SCSI device with errors: what its sense data and the block layer's words say."""
    usb_hosts = {str(obj(e.get("details")).get("host")) for e in events
                 if e.get("kind") == "scsi_attach" and obj(e.get("details")).get("transport")}  # fmt: skip
    attached = [e for e in events if e.get("kind") == "scsi_attach"]
    attached_removable = {str(e.get("device")) for e in attached if obj(e.get("details")).get("media")}
    found: dict[str, dict[str, Any]] = {}
    for event in events:
        device = event.get("device")
        if event.get("kind") not in ("scsi_sense", "blk_io_error") or not isinstance(device, str):
            continue
        if device_class(device) not in ("scsi", "optical") and not re.fullmatch(r"st\d+", device):
            continue
        entry = found.setdefault(device, {"device": device, "verdict": "unknown", "why": [],
                                          "sense_keys": [], "asc": [], "removable": False,
                                          "reports": []})  # fmt: skip
        details = obj(event.get("details"))
        host = str(details.get("hctl") or "").split(":", 1)[0]
        if host and host in usb_hosts:
            entry["removable"] = True
        _add_sense(entry, event.get("kind"), details)
        if len(entry["reports"]) < 6 and isinstance(event.get("src"), dict):
            entry["reports"].append(event["src"])
    for device, entry in found.items():
        entry["removable"] = entry["removable"] or device in attached_removable or places.removable(device)
        why = entry["why"]
        entry["verdict"] = "media" if "media" in why else "not_media" if "not_media" in why else "unknown"
        entry["why"] = sorted(set(entry.pop("_says", [])))
    return found


def _add_sense(entry: dict[str, Any], kind: Any, details: dict[str, Any]) -> None:
    """One report of a device's failed command: its sense key, its ASC, or the block layer's word."""
    says = entry.setdefault("_says", [])
    key = str(details.get("sense_key") or "").strip().lower()
    asc = str(details.get("asc") or "").strip()
    code = str(details.get("asc_code") or "").lower()
    error = str(details.get("error") or "").strip().lower() if kind == "blk_io_error" else ""
    if key:
        entry["sense_keys"] = sorted({*entry["sense_keys"], key})
        judged = "media" if key in MEDIA_SENSE_KEYS else "not_media" if key in NOT_MEDIA_SENSE_KEYS else None
        if judged:
            entry["why"].append(judged)
            says.append(f"sense key {key}")
    for text in (asc, code):
        if not text:
            continue
        entry["asc"] = sorted({*entry["asc"], text})
        if _MEDIA_ASC.search(text) or text in MEDIA_ASC_CODES:
            entry["why"].append("media")
        elif _NOT_MEDIA_ASC.search(text) or text.startswith("0x"):
            entry["why"].append("not_media")
        says.append(f"sense {text}")
    if error in MEDIA_BLOCK_ERRORS or error in NOT_MEDIA_BLOCK_ERRORS:
        entry["why"].append("media" if error in MEDIA_BLOCK_ERRORS else "not_media")
        says.append(f"{error} error")


def _verdict_note(judged: dict[str, Any] | None) -> str:
    if judged is None:
        return ""
    removable = "; removable media" if judged["removable"] else ""
    if judged["verdict"] == "unknown":
        return removable
    says = ", ".join(judged["why"][:3])
    verdict = "a media failure" if judged["verdict"] == "media" else "not a media failure"
    return f"{removable}; {verdict}: {says}"


def _failing(storage: list[dict[str, Any]], scsi: dict[str, dict[str, Any]]) -> dict[str, Any]:
    failing = [e for e in storage if e.get("kind") == "blk_io_error" and e.get("device")]
    found: dict[str, Any] = {}
    for event in failing:
        found.setdefault(str(event["device_class"]), set()).add(str(event["device"]))
    described = {
        f"{e['device']} ({e['device_class']}, {e['device_role']}{_verdict_note(scsi.get(str(e['device'])))})"
        for e in failing
    }
    media = sorted(d for d, judged in scsi.items() if judged["verdict"] == "media")
    return {**{k: sorted(v) for k, v in found.items()}, "scsi_media": media, "described": sorted(described)}


def _highest(ceilings: list[str]) -> str | None:
    return max(ceilings, key=SEVERITIES.index) if ceilings else None


def _ceilings(storage: list[dict[str, Any]], derived: dict[str, Any]) -> dict[str, Any]:
    by_kind: dict[Any, list[str]] = {}
    for event in storage:
        by_kind.setdefault(event.get("kind"), []).append(event["ceiling"])
    found: dict[str, Any] = {kind: _highest(by_kind.get(kind, [])) for kind in sorted(STORAGE_EVENT_KINDS)}
    found["nvme_timeouts"] = _timeout_ceiling(storage, derived)
    found["nvme_controller"] = _highest([c for c in (found["nvme_reset"], found["capacity_to_zero"]) if c])
    found["filesystem"] = _highest([c for c in (found["fs_error"], found["fs_shutdown"]) if c])
    found["scsi_errors"] = _highest(
        [e["ceiling"] for e in storage if e.get("device_class") == "scsi" and e.get("kind") == "blk_io_error"]
    )
    found["nvme_media"] = _highest(
        [e["ceiling"] for e in storage if e.get("device_class") in ("nvme", None)
         and e.get("kind") in ("nvme_status_error", "blk_io_error")]
    )  # fmt: skip
    return found


def _timeout_ceiling(storage: list[dict[str, Any]], derived: dict[str, Any]) -> str | None:
    groups = obj(obj(derived.get("storage")).get("dmesg"))
    timeouts = [e for e in as_list(groups.get("pcie_timeouts")) if isinstance(e, dict)]
    if not timeouts:
        return None
    devices = [str(event.get("device") or "?") for event in timeouts]
    controllers = {device: _CONTROLLER_OF.sub("", device) for device in set(devices)}  # a few, many times
    per_controller: dict[str, int] = {}
    for device in devices:
        per_controller[controllers[device]] = per_controller.get(controllers[device], 0) + 1
    escalated = (
        max(per_controller.values()) >= TIMEOUTS_BEFORE_CRITICAL
        or any(obj(e.get("details")).get("action") in ("aborting", "reset controller", "disable controller")
               for e in timeouts)
        or any(e.get("kind") == "nvme_abort" for e in storage)
        or bool(as_list(groups.get("pcie_resets")))
    )  # fmt: skip
    names = {str(e.get("device")) for e in timeouts if e.get("device")}
    by_role = _highest(
        [e["ceiling"] for e in storage if e.get("kind") == "nvme_timeout" and e.get("device") in names]
    )
    ceiling = by_role or "critical"
    return ceiling if escalated else min(ceiling, "warning", key=SEVERITIES.index)


def _frames_after(
    event: dict[str, Any], frames: list[dict[str, Any]], headers: list[int]
) -> list[dict[str, Any]]:
    """The storage frames of the call trace that follows a report: same file, after its line,
    before the next report, within TRACE_WINDOW_LINES."""
    src = obj(event.get("src"))
    artifact, line = src.get("artifact"), src.get("line")
    if not isinstance(line, int):
        return []
    end = min([h for h in headers if h > line] + [line + TRACE_WINDOW_LINES])
    return [
        frame for frame in frames
        if obj(frame.get("src")).get("artifact") == artifact
        and line < (obj(frame.get("src")).get("line") or 0) < end
    ]  # fmt: skip


def _trace_context(events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[int]]:
    frames = [e for e in events if e.get("kind") == "storage_trace_frame"]
    headers = [
        obj(e.get("src")).get("line") or 0
        for e in events
        if e.get("kind") in ("hung_task", "kernel_bug", "soft_lockup")
    ]
    return frames, headers


def _frame_names(frames: list[dict[str, Any]]) -> list[str]:
    names = []
    for frame in frames:
        details = obj(frame.get("details"))
        module = details.get("module")
        names.append(f"{details.get('function')} [{module}]" if module else str(details.get("function")))
    return list(dict.fromkeys(names))


def _hung_storage_tasks(
    events: list[dict[str, Any]], trace: tuple[list[dict[str, Any]], list[int]]
) -> list[dict[str, Any]]:
    frames, headers = trace
    found = []
    for event in events:
        if event.get("kind") != "hung_task":
            continue
        task = str(obj(event.get("details")).get("task") or "")
        below = _frames_after(event, frames, headers)
        # the stack decides when the log has one: a task named like a storage thread (kswapd, an
        # md or loop worker) blocked in memory management or the GPU driver is not a storage stall
        if below or (not _has_trace(event) and _STORAGE_TASK.match(task)):
            # "jbd2/sda1-8:161" journals sda1: the device whose role bounds the severity
            named = _JOURNAL_TASK.match(task)
            device = event.get("device") or (named["device"] if named else None)
            found.append({**event, "device": device, "task": task, "storage_frames": _frame_names(below)})
    return found


def _has_trace(event: dict[str, Any]) -> bool:
    return bool(as_list(obj(event.get("details")).get("trace")))


def _hung_gpu_driver_tasks(
    events: list[dict[str, Any]], trace: tuple[list[dict[str, Any]], list[int]]
) -> list[dict[str, Any]]:
    """Hung-task reports whose stack blocks in the NVIDIA driver (nvidia, nvidia_uvm,
    nvidia_modeset, nvidia_drm) and never in storage code, whatever the task's name."""
    frames, headers = trace
    found = []
    for event in events:
        if event.get("kind") != "hung_task" or _frames_after(event, frames, headers):
            continue
        stack = [str(f) for f in as_list(obj(event.get("details")).get("trace"))]
        driver = [f for f in stack if _GPU_DRIVER_FRAME.search(f)]
        if driver:
            task = str(obj(event.get("details")).get("task") or "")
            found.append({**event, "task": task, "driver_frames": driver[:6]})
    return found


def _storage_oopses(
    events: list[dict[str, Any]], trace: tuple[list[dict[str, Any]], list[int]], kind: str = "kernel_bug"
) -> list[dict[str, Any]]:
    frames, headers = trace
    found = []
    for event in events:
        if event.get("kind") != kind:
            continue
        below = _frames_after(event, frames, headers)
        if below:
            found.append({**event, "storage_frames": _frame_names(below)})
    return found


def _links(facts: dict[str, Any], derived: dict[str, Any]) -> list[dict[str, Any]]:
    known = _pci_identity(facts, derived)
    return [
        {**link, "role": _link_role(link, known.get(str(link.get("bdf")), {}))}
        for link in as_list(obj(derived.get("topology")).get("links"))
        if isinstance(link, dict)
    ]


def _pci_identity(facts: dict[str, Any], derived: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per PCI address: the product name (lspci), the bound driver and whether it has RDMA."""
    found: dict[str, dict[str, Any]] = {}
    for section in ("pci", "lspci"):
        for device in as_list(ok_section(facts, section).get("devices")):
            if isinstance(device, dict) and device.get("bdf"):
                entry = found.setdefault(str(device["bdf"]), {})
                for key in ("name", "driver"):
                    entry[key] = entry.get(key) or device.get(key)
    for device in as_list(obj(derived.get("topology")).get("devices")):
        if isinstance(device, dict) and device.get("bdf"):
            found.setdefault(str(device["bdf"]), {})["rdma"] = device.get("rdma")
    return found


def _link_role(link: dict[str, Any], identity: dict[str, Any]) -> str:
    return "management" if _management_nic(link, identity) else "data"


def _management_nic(link: dict[str, Any], identity: dict[str, Any]) -> bool:
    """A 1 GbE NIC without RDMA: BMC-shared and management ports are wired x1 on purpose."""
    if link.get("kind") != "nic" or True in (link.get("rdma"), identity.get("rdma")):
        return False
    if identity.get("driver") in ONE_GBE_DRIVERS:
        return True
    text = " ".join(str(v) for v in (link.get("says"), link.get("name"), identity.get("name")) if v)
    return bool(_ONE_GBE.search(text))


def _controller_of(name: str) -> str | None:
    """``nvme0`` for ``nvme0n1`` and ``nvme0c1n1`` (a name is never put into a pattern)."""
    match = _NAMESPACE.fullmatch(name)
    return match["controller"] if match else None


def _is_partition_of(device: str, disk: str) -> bool:
    """``sda1`` of ``sda``, ``nvme0n1p2`` of ``nvme0n1``."""
    return device.startswith(disk) and bool(_PARTITION_SUFFIX.fullmatch(device, len(disk)))
