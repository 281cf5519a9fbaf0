"""Derived facts from udev: the device-mapper, md or loop layer under each checkpoint mount.

``derive(facts, derived)`` returns ``derived.udev`` (it runs after the storage derivation, whose
mounts carry ``maj_min``):

- ``checkpoint_layers``: for each checkpoint mount whose block device udev lists as a
  device-mapper, md or loop device, ``{mountpoint, device (as mounted), udev_device (kernel name),
  layer (lvm|crypt|multipath|dm|md|loop), dm_name, dm_uuid, md_level, src (the udev device), mount_src}``.
  The device is found by its node or one of its links (``/dev/mapper/vg-lv``, ``/dev/md/name``,
  ``/dev/disk/by-uuid/…``), else by ``major:minor``. [] when the ``udev`` section was not read.
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.facts.derived.core import checkpoint_selection


def derive(facts: dict[str, Any], derived: dict[str, Any]) -> dict[str, Any]:
    section = facts.get("udev") or {}
    if section.get("status") != "ok":
        return {"checkpoint_layers": []}
    by_node, by_majmin = _block_index(section.get("devices"))
    storage = derived.get("storage") or {}
    mounts = storage.get("checkpoint_mounts") or checkpoint_selection(facts, derived.get("target_mount"))
    layers = []
    for mount in mounts:
        if not isinstance(mount, dict):
            continue
        device = by_node.get(str(mount.get("device") or "")) or by_majmin.get(str(mount.get("maj_min") or ""))
        if device is not None and device.get("layer"):
            layers.append(_layer_entry(mount, device))
    return {"checkpoint_layers": layers}


def _block_index(devices: Any) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """udev's block devices by node and link, and by ``major:minor``."""
    by_node: dict[str, dict[str, Any]] = {}
    by_majmin: dict[str, dict[str, Any]] = {}
    for device in devices if isinstance(devices, list) else []:
        if not isinstance(device, dict) or device.get("subsystem") != "block":
            continue
        names = [device.get("device_node"), *(device.get("devlinks") or [])]
        for name in names:
            if isinstance(name, str) and name:
                by_node.setdefault(name, device)
        properties = device.get("properties") if isinstance(device.get("properties"), dict) else {}
        if properties.get("MAJOR") and properties.get("MINOR"):
            by_majmin.setdefault(f"{properties['MAJOR']}:{properties['MINOR']}", device)
    return by_node, by_majmin


def _layer_entry(mount: dict[str, Any], device: dict[str, Any]) -> dict[str, Any]:
    return {
        "mountpoint": mount.get("mountpoint"),
        "device": mount.get("device"),
        "udev_device": device.get("name"),
        "layer": device.get("layer"),
        "dm_name": device.get("dm_name"),
        "dm_uuid": device.get("dm_uuid"),
        "md_level": device.get("md_level"),
        "src": device.get("src"),
        "mount_src": mount.get("src"),
    }
