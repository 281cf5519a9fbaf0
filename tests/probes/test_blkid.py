"""blkid's filesystem identities, and the fstab UUID=/LABEL= entries they tie to a device.

Samples (tests/data/blkid/SOURCES.md): an EC2 instance's `blkid` (NVMe namespaces, loop devices,
a vfat ESP) with its fstab, this VM's blkid on two loop devices; and blkid run here on a real XFS
loop device (root only).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gdsdoctor.capture.detect import recognise
from gdsdoctor.errors import ParseError
from gdsdoctor.pipeline import analyze_paths
from gdsdoctor.probes.blkid import parse_blkid
from tests.loopfs import loop_device, skip_unless_root_with

DATA = Path(__file__).resolve().parents[1] / "data"
AWS = DATA / "blkid" / "blkid.aws-ubuntu-ebs-nvme.blog.txt"
LOOPS = DATA / "blkid" / "blkid.this-machine-loop-xfs-ext4.txt"
FSTAB = DATA / "fstab" / "fstab-aws-ubuntu-uuid-label.blog.txt"


def test_blkid_of_an_nvme_instance() -> None:
    section = parse_blkid(AWS.read_text(), "blkid.txt")
    devices = {d["device"]: d for d in section["devices"]}
    assert devices["/dev/nvme1n1"]["uuid"] == "ac496379-39f0-49a3-a295-06b2e8a74feb"
    assert devices["/dev/nvme1n1"]["type"] == "ext4" and devices["/dev/nvme1n1"]["label"] is None
    esp = devices["/dev/nvme0n1p15"]  # LABEL_FATBOOT is not LABEL
    assert (esp["label"], esp["uuid"], esp["type"]) == ("UEFI", "955C-CD3C", "vfat")
    assert devices["/dev/nvme0n1p14"]["partuuid"] == "b6802a66-9dde-4d0b-b60d-bc57d31d2d7a"
    assert devices["/dev/nvme1n1"]["src"]["line"] == 10 and len(devices) == 9


@pytest.mark.parametrize("path", [AWS, LOOPS])
def test_blkid_is_recognised(path: Path) -> None:
    assert recognise(path.read_text()).section == "blkid"


def test_other_text_is_refused() -> None:
    with pytest.raises(ParseError):
        parse_blkid("/dev/nvme1n1 /data ext4 rw 0 0\n", "p")


def test_no_output_is_no_device_not_an_unparsable_source() -> None:
    """blkid run as root on a host (a container here) with no filesystem on a block device
    prints nothing and exits 0: `check` called the source unparsable. It read no device; an
    fstab UUID= entry then stays unresolved, as without blkid."""
    from gdsdoctor.facts.section import section_from
    from gdsdoctor.model import Artifact, ArtifactStatus
    from gdsdoctor.probes.blkid import PROBES

    assert parse_blkid("", "cmd/blkid.txt") == {"devices": []} == parse_blkid("\n", "cmd/blkid.txt")
    ran = Artifact("cmd/blkid.txt", ArtifactStatus.OK, b"", "blkid", exit_code=0)
    assert section_from(PROBES[0], [ran]) == {"devices": [], "status": "ok", "artifact": "cmd/blkid.txt"}


def test_fstab_uuid_entries_are_tied_to_their_devices() -> None:
    fabrics = analyze_paths([AWS, FSTAB]).facts["derived"]["fabrics"]
    resolved = {e["spec"]: (e["resolved_device"], e["resolved_by"]) for e in fabrics["fstab_entries"]}
    assert resolved == {
        "UUID=ac496379-39f0-49a3-a295-06b2e8a74feb": ("/dev/nvme1n1", "blkid"),
        "UUID=0516d848-b2a6-49ad-b851-a6e50459fb2b": ("/dev/nvme2n1", "blkid"),
    }  # the LABEL= lines are the system's own mounts (/, /boot), not data entries


@pytest.mark.parametrize(
    ("spec", "device"),
    [("LABEL=ckpt-tier", "/dev/loop0"), ("UUID=F1119CF6-C4D8-44AB-9284-79D695BE59C0", "/dev/loop1"),
     ("/dev/disk/by-label/scratch", "/dev/loop1"), ("LABEL=Ckpt-Tier", None)],
)  # fmt: skip
def test_labels_uuids_and_by_links(tmp_path: Path, spec: str, device: str | None) -> None:
    """An fstab line written for the test in fstab(5)'s layout, against this VM's real blkid
    (a UUID compares case-blind, a label does not)."""
    fstab = tmp_path / "fstab"
    fstab.write_text(f"{spec} /mnt/ckpt xfs defaults,nofail 0 0\n")
    fabrics = analyze_paths([LOOPS, fstab]).facts["derived"]["fabrics"]
    (entry,) = fabrics["fstab_entries"]
    assert entry["resolved_device"] == device


def test_without_blkid_a_uuid_entry_stays_unresolved() -> None:
    fabrics = analyze_paths([FSTAB]).facts["derived"]["fabrics"]
    entry = next(e for e in fabrics["fstab_entries"] if e["spec"].startswith("UUID=ac49"))
    assert (entry["resolved_device"], entry["fabrics"]) == (None, None)


def test_blkid_on_a_real_xfs_loop_device(tmp_path: Path) -> None:
    skip_unless_root_with("blkid", "mkfs.xfs")
    with loop_device("xfs", tmp_path / "xfs.img", 320 << 20, ("-L", "ckpt-tier")) as device:
        # no cache file: the device just formatted is probed, never looked up in blkid's cache
        # (the test failed once in a loaded full run and passed alone; the cause was not seen)
        cmd = ["blkid", "-c", "/dev/null", device]
        text = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    (found,) = parse_blkid(text, "blkid.txt")["devices"]
    assert (found["device"], found["label"], found["type"]) == (device, "ckpt-tier", "xfs")
    assert len(found["uuid"]) == 36
