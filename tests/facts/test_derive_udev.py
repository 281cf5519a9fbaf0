"""derived.udev.checkpoint_layers: the udev device under each checkpoint mount, found by node,
link or major:minor, from the parsed udev section of real-format records."""

from __future__ import annotations

from pathlib import Path

from gdsdoctor.facts.derived import udev as udev_layers
from gdsdoctor.probes import udev

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "udev-dm-crypt-checkpoint-gpu" / "files"


def _facts() -> dict:
    text = (FIXTURE / "udevadm-export-db.txt").read_text()
    return {"udev": {"status": "ok", **udev.parse(text, "export-db.txt")}}


def _mount(device: str, maj_min: str | None = None) -> dict:
    return {
        "device": device,
        "mountpoint": "/mnt/ckpt",
        "fstype": "xfs",
        "maj_min": maj_min,
        "src": {"line": 5},
    }


def _layers(mount: dict, facts: dict | None = None) -> list[dict]:
    derived = {"storage": {"checkpoint_mounts": [mount]}}
    return udev_layers.derive(facts or _facts(), derived)["checkpoint_layers"]


def test_a_mapper_link_finds_the_crypt_volume() -> None:
    (layer,) = _layers(_mount("/dev/mapper/ckpt"))
    assert (layer["udev_device"], layer["layer"], layer["dm_name"]) == ("dm-0", "crypt", "ckpt")
    assert layer["src"]["text"] == "P: /devices/virtual/block/dm-0" and layer["mount_src"] == {"line": 5}


def test_lvm_by_its_slashed_link_and_by_major_minor() -> None:
    assert _layers(_mount("/dev/vg1/lv1"))[0]["layer"] == "lvm"
    assert _layers(_mount("/dev/disk/by-id/whatever", maj_min="253:1"))[0]["udev_device"] == "dm-1"


def test_a_plain_nvme_partition_has_no_layer() -> None:
    assert _layers(_mount("/dev/nvme0n1p1")) == []
    assert _layers(_mount("/dev/disk/by-uuid/0b7e1f52-9a0c-4d1e-8f65-3f2b1c9d7e40")) == []


def test_md_level_comes_from_udev() -> None:
    record = (
        "P: /devices/virtual/block/md127\nN: md127\nS: md/ckpt\nE: DEVNAME=/dev/md127\nE: DEVTYPE=disk\n"
        "E: MAJOR=9\nE: MINOR=127\nE: SUBSYSTEM=block\nE: USEC_INITIALIZED=5123456\nE: MD_LEVEL=raid1\n"
        "E: MD_DEVICES=2\nE: MD_METADATA=1.2\nE: MD_DEVNAME=ckpt\n"
    )
    facts = {"udev": {"status": "ok", **udev.parse(record, "paste")}}
    (layer,) = _layers(_mount("/dev/md/ckpt"), facts)
    assert (layer["layer"], layer["md_level"]) == ("md", "raid1")


def test_without_the_udev_section_nothing_is_derived() -> None:
    assert _layers(_mount("/dev/mapper/ckpt"), {"udev": {"status": "missing"}}) == []
    assert udev_layers.derive({}, {})["checkpoint_layers"] == []


def test_a_loop_device_is_a_layer() -> None:
    record = (
        "P: /devices/virtual/block/loop3\nN: loop3\nE: DEVNAME=/dev/loop3\nE: DEVTYPE=disk\n"
        "E: MAJOR=7\nE: MINOR=3\nE: SUBSYSTEM=block\nE: USEC_INITIALIZED=7123456\nE: ID_FS_TYPE=xfs\n"
    )
    facts = {"udev": {"status": "ok", **udev.parse(record, "paste")}}
    assert _layers(_mount("/dev/loop3"), facts)[0]["layer"] == "loop"
