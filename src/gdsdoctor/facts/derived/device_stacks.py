"""Which block devices are one stack: a device and what it is built on, down to the disk. A
finding explains another only when their devices are on one stack, one on top of the other
(engine/rank.py): a loop device and the filesystem its image is on, a namespace and the
controller that reset, a partition and its disk with media errors, an LVM volume and the md
array under it. Devices side by side (two partitions of a disk, two loop devices whose images
share a filesystem) are not one stack: what fails on one does not explain the other.

``derive(facts)`` returns ``derived.device_stacks``: ``{"below": {name: [every device it is
built on, directly or not]}, "mounts": {mount point: device}}``. The names are every device the
block listing (name and kernel name), the mount table, the loop listing and the kernel log's
events name; each is built on:

- its parents in the block listing (a partition on its disk, dm/md on their members; the
  kernel name is the same device);
- the disk of a partition and the namespace head and controller of an NVMe namespace, by name
  (``nvme0n1p1`` → ``nvme0n1`` → ``nvme0``; ``nvme0c1n1`` → ``nvme0n1`` and ``nvme1``;
  ``sda1`` → ``sda``), which holds without a block listing (a pasted kernel log);
- for a loop device, the device of the filesystem its image file lives on (``losetup``, the
  mount table: the longest mount point above the file).

A name that nothing places stands alone: two devices are one stack only when something shows it.
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.facts.derived.access import as_list, dicts, items, obj, ok_section, txt
from gdsdoctor.facts.derived.core import longest_prefix_mount
from gdsdoctor.patterns import lazy_compile

_NVME = lazy_compile(r"^nvme(?P<sub>\d+)(?:c(?P<ctrl>\d+))?n(?P<ns>\d+)(?:p\d+)?$")
_PARTITION = lazy_compile(r"^(?P<disk>(?:sd|vd|xvd|hd)[a-z]+)\d+$|^(?P<pdisk>(?:mmcblk|loop|nbd|md)\d+)p\d+$")


class _Stacks:
    """What each device name is directly built on."""

    def __init__(self) -> None:
        self.on: dict[str, set[str]] = {}

    def put(self, name: str, below: str) -> None:
        self.add(name)
        self.add(below)
        if name != below:
            self.on[name].add(below)

    def same(self, a: str, b: str) -> None:
        """Two names of one device (lsblk's name and kernel name: vg-ckpt and dm-0)."""
        self.put(a, b)
        self.put(b, a)

    def add(self, name: str | None) -> None:
        """A device name, with what its name alone says it is on."""
        if not name:
            return
        name = _name(name)
        if name in self.on:
            return
        self.on[name] = set()
        if (nvme := _NVME.match(name)) is not None:
            head = f"nvme{nvme['sub']}n{nvme['ns']}"
            if head != name:
                self.put(name, head)
            self.put(head, f"nvme{nvme['ctrl'] or nvme['sub']}")
        elif (part := _PARTITION.match(name)) is not None:
            self.put(name, part["disk"] or part["pdisk"])

    def below(self, name: str) -> list[str]:
        seen: set[str] = set()
        todo = list(self.on.get(name, ()))
        while todo:
            current = todo.pop()
            if current not in seen and current != name:
                seen.add(current)
                todo.extend(self.on.get(current, ()))
        return sorted(seen)


def derive(facts: dict[str, Any]) -> dict[str, Any]:
    stacks = _Stacks()
    for device in items(ok_section(facts, "lsblk"), "devices"):
        name = txt(device.get("name"))
        if not name:
            continue
        stacks.add(name)
        if kname := txt(device.get("kname")):
            stacks.same(name, kname)
        for parent in as_list(device.get("parents")) or [device.get("parent")]:
            if isinstance(parent, str) and parent:
                stacks.put(name, parent)
    mounts = items(ok_section(facts, "mounts"), "mounts")
    block_mounts = [m for m in mounts if str(m.get("device") or "").startswith("/dev/")]
    for mount in block_mounts:
        stacks.add(str(mount["device"]))
    for loop in items(ok_section(facts, "losetup"), "devices"):
        name, back = txt(loop.get("name")), txt(loop.get("back_file"))
        stacks.add(name)
        holder = longest_prefix_mount(block_mounts, back) if back else None
        if name and holder is not None:
            stacks.put(name, _name(str(holder["device"])))
    for event in dicts(obj(facts.get("dmesg")).get("events")):
        stacks.add(txt(event.get("device")))
    return {
        "below": {name: stacks.below(name) for name in sorted(stacks.on)},
        "mounts": {
            str(m["mountpoint"]): _name(str(m["device"]))
            for m in block_mounts
            if m.get("mountpoint") and m["mountpoint"] != "/"
        },
    }


def _name(device: str) -> str:
    return device.removeprefix("/dev/").removeprefix("mapper/")
