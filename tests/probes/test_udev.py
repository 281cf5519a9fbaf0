"""The udev probe: the database-record parser on real records, the host-root reader on trees
(temporary and pyfakefs), the live probe through pyudev on this machine, export-db pastes."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import pytest
from fake_sysfs import MELLANOX, NVME, FakeSysfs, relative_link, write

from gdsdoctor.capture.bundle import read_bundle, write_bundle
from gdsdoctor.capture.capture import Capture
from gdsdoctor.capture.detect import recognise
from gdsdoctor.capture.live import capture_source
from gdsdoctor.errors import ParseError
from gdsdoctor.model import ArtifactStatus
from gdsdoctor.probes import BY_SECTION, udev

DATA = Path(__file__).resolve().parents[1] / "data" / "udev"
SOURCE = udev.PROBES[0].sources[0]
MICRON = (DATA / "run-udev-data" / "b259:0").read_text()
LVM = (DATA / "run-udev-data" / "b253:1").read_text()


def _parsed(root: Path) -> dict:
    text = udev.read_udev(root).decode()
    assert udev.recognise(text)
    return udev.parse(text, SOURCE.artifact)


def _by_name(section: dict) -> dict[str, dict]:
    return {device["name"]: device for device in section["devices"]}


# --- one database record ---------------------------------------------------------------------------


def test_database_record_of_an_nvme_namespace() -> None:
    properties, links, _ = udev.record_fields(MICRON.split("\n"), database_file=True)
    assert properties["ID_PATH"] == "pci-0000:6d:00.0-nvme-1"
    assert properties["ID_WWN"] == "eui.000000000000000200a012304bd678b5"
    assert properties["ID_SERIAL_SHORT"] == "        12345ABCD678"  # udev keeps the padding
    assert properties["USEC_INITIALIZED"] == "8399206"  # from the I: line
    assert properties["ID_FS_TYPE"] == ""
    assert links[-1] == "disk/by-path/pci-0000:6d:00.0-nvme-1"
    assert "W" not in properties and "G" not in properties


def test_export_db_i_line_is_an_ifindex_not_initialisation() -> None:
    properties, _, other = udev.record_fields(["P: /devices/virtual/net/lo", "I: 1", "E: SUBSYSTEM=net"])
    assert "USEC_INITIALIZED" not in properties
    assert other["P"] == "/devices/virtual/net/lo"


def test_pci_filter_keeps_nvidia_nvme_and_network_functions() -> None:
    assert udev.wanted("pci", {"PCI_CLASS": "30200", "PCI_ID": "10DE:2330"})
    assert udev.wanted("pci", {"PCI_CLASS": "10802", "PCI_ID": "144D:A80A"})
    assert udev.wanted("pci", {"PCI_CLASS": "20700", "PCI_ID": "15B3:1021"})
    assert udev.wanted("pci", {"PCI_CLASS": "20000", "PCI_ID": "8086:1572"})
    assert not udev.wanted("pci", {"PCI_CLASS": "60400", "PCI_ID": "8086:352A"})  # a bridge
    assert not udev.wanted("pci", {"PCI_CLASS": "30000", "PCI_ID": "1A03:2000"})  # a BMC's VGA
    assert not udev.wanted("usb", {})


# --- the host-root reader ----------------------------------------------------------------------------


def _gds_host(root: Path, *, database: bool = True) -> FakeSysfs:
    """An NVMe namespace, an LVM volume, an RDMA NIC (mlx5_0 + ib0) and a plain NIC, each with the
    ``uevent`` the kernel writes; the database holds the two real records and one for eth0."""
    tree = FakeSysfs(root)
    tree.add_pci("0000:6d:00.0", cls=NVME, vendor=0x1344, driver="nvme")
    tree.add_pci("0000:1a:00.0", cls=0x020700, vendor=MELLANOX, device=0x1021, driver="mlx5_core")
    tree.add_pci("0000:00:1f.0", cls=0x060100, vendor=0x8086)  # an ISA bridge: not listed
    tree.add_pci("0000:03:00.0", cls=0x020000, vendor=0x8086, device=0x1572)
    for bdf, klass, pci_id in (
        ("0000:6d:00.0", "10802", "1344:51C3"), ("0000:1a:00.0", "20700", "15B3:1021"),
        ("0000:00:1f.0", "60100", "8086:A1C8"), ("0000:03:00.0", "20000", "8086:1572"),
    ):  # fmt: skip
        write(
            tree.paths[bdf] / "uevent", f"DRIVER=x\nPCI_CLASS={klass}\nPCI_ID={pci_id}\nPCI_SLOT_NAME={bdf}"
        )
    controller = tree.add_nvme("nvme0", "0000:6d:00.0", {"nvme0n1": 512110190592})
    write(controller / "uevent", "MAJOR=242\nMINOR=0\nDEVNAME=nvme0")
    write(controller / "nvme0n1/uevent", "MAJOR=259\nMINOR=0\nDEVNAME=nvme0n1\nDEVTYPE=disk\nDISKSEQ=1")
    relative_link(tree.sys / "class/block/nvme0n1", controller / "nvme0n1")
    dm = tree.sys / "devices/virtual/block/dm-1"
    write(dm / "uevent", "MAJOR=253\nMINOR=1\nDEVNAME=dm-1\nDEVTYPE=disk\nDISKSEQ=7")
    relative_link(tree.sys / "class/block/dm-1", dm)
    tree.add_ib("mlx5_0", "0000:1a:00.0", {1: {"state": "4: ACTIVE"}})
    write(tree.sys / "class/infiniband/mlx5_0/uevent", "NAME=mlx5_0")
    for name, bdf, index in (("ib0", "0000:1a:00.0", 4), ("eth0", "0000:03:00.0", 2)):
        net = tree.add_netdev(name, bdf)
        write(net / "uevent", f"INTERFACE={name}\nIFINDEX={index}")
    if database:
        data = root / "run/udev/data"
        write(data / "b259:0", MICRON)
        write(data / "b253:1", LVM)
        write(data / "n2", "I:5512345\nE:ID_PATH=pci-0000:03:00.0\nE:ID_NET_DRIVER=i40e\nG:systemd")
        write(data / "c242:0", "I:4400000\nE:ID_PATH=pci-0000:6d:00.0\nE:ID_MODEL=Micron_7450")
        (root / "run/udev/control").touch()
    return tree


def test_host_root_reader_merges_sysfs_and_the_database(tmp_path: Path) -> None:
    _gds_host(tmp_path)
    section = _parsed(tmp_path)
    assert section["via"] == "files"
    assert section["database"] | {"src": None} == {
        "path": "/run/udev/data", "present": True, "entries": 4, "control": True, "src": None,
    }  # fmt: skip
    assert section["populated"] is True
    devices = _by_name(section)
    assert set(devices) == {"nvme0n1", "dm-1", "nvme0", "0000:6d:00.0", "0000:1a:00.0", "0000:03:00.0",
                            "mlx5_0", "ib0", "eth0"}  # fmt: skip
    namespace = devices["nvme0n1"]
    assert namespace["sys_path"] == "/sys/devices/pci0000:6d/0000:6d:00.0/nvme/nvme0/nvme0n1"
    assert (namespace["kind"], namespace["pci_bdf"], namespace["device_node"]) == ("nvme", "0000:6d:00.0",
                                                                                   "/dev/nvme0n1")  # fmt: skip
    assert namespace["id_path"] == "pci-0000:6d:00.0-nvme-1"
    assert namespace["id_serial_short"] == "12345ABCD678"
    assert namespace["id_fs_type"] is None  # "ID_FS_TYPE=" says no filesystem
    assert namespace["initialized"] is True and namespace["layer"] is None
    assert "/dev/disk/by-id/nvme-eui.000000000000000200a012304bd678b5" in namespace["devlinks"]
    volume = devices["dm-1"]
    assert (volume["layer"], volume["dm_name"]) == ("lvm", "fake_vg1-fake-lv1")
    assert "/dev/mapper/vg1-lv1" in volume["devlinks"]
    assert devices["0000:6d:00.0"]["kind"] == "nvme" and devices["0000:1a:00.0"]["kind"] == "rdma"
    assert devices["nvme0"]["id_model"] == "Micron_7450"  # c242:0, found by the char device's numbers
    assert (devices["ib0"]["kind"], devices["eth0"]["kind"]) == ("rdma_net", "net")
    # ib0 (an RDMA NIC's interface) has no database entry: it needs ID_PATH and lacks it
    assert section["missing_id_path"] == ["ib0"]
    assert devices["eth0"]["id_path"] == "pci-0000:03:00.0"


def test_host_root_without_database(tmp_path: Path) -> None:
    _gds_host(tmp_path, database=False)
    section = _parsed(tmp_path)
    assert section["database"]["present"] is False and section["populated"] is False
    assert section["initialized_count"] == 0 and section["count"] == 9
    assert section["database"]["src"]["text"] == '  "present": false,'


def test_empty_database_is_not_populated(tmp_path: Path) -> None:
    _gds_host(tmp_path, database=False)
    (tmp_path / "run/udev/data").mkdir(parents=True)
    section = _parsed(tmp_path)
    assert section["database"]["present"] is True and section["populated"] is False


def test_links_out_of_the_root_are_not_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "host", tmp_path / "outside"
    _gds_host(root)
    write(outside / "secret", "E:ID_PATH=stolen\nE:DM_NAME=stolen")
    (root / "run/udev/data/b259:0").unlink()
    os.symlink(outside / "secret", root / "run/udev/data/b259:0")
    write(outside / "sys/devices/virtual/block/dm-9/uevent", "MAJOR=253\nMINOR=9\nDEVNAME=dm-9")
    os.symlink(outside / "sys/devices/virtual/block/dm-9", root / "sys/class/block/dm-9")
    devices = _by_name(_parsed(root))
    assert "dm-9" not in devices
    assert devices["nvme0n1"]["id_path"] is None
    assert "stolen" not in json.dumps(devices)


def test_host_root_reader_on_a_fake_filesystem(fs) -> None:
    root = Path("/host")
    _gds_host(root)
    (root / "run/udev/data/c242:0").unlink()
    section = _parsed(root)
    assert section["database"]["entries"] == 3
    assert _by_name(section)["nvme0"]["id_model"] is None
    assert _by_name(section)["dm-1"]["layer"] == "lvm"


def test_unreadable_uevent_still_lists_the_device(fs) -> None:
    root = Path("/host")
    _gds_host(root)
    uevent = root / "sys/devices/virtual/block/dm-1/uevent"
    uevent.unlink()
    uevent.mkdir()  # reading a directory fails like an unreadable attribute
    volume = _by_name(_parsed(root))["dm-1"]
    # the database file is found only by major:minor, which the uevent held: no DM_* now
    assert volume["dm_name"] is None and volume["layer"] == "dm"


# --- the live probe (pyudev) -------------------------------------------------------------------------


def _libudev() -> bool:
    try:
        import pyudev

        pyudev.Context()
    except Exception:
        return False
    return True


@pytest.mark.skipif(not _libudev(), reason="no libudev on this machine")
def test_live_probe_on_this_machine() -> None:
    artifact = capture_source(SOURCE, Path("/"))
    assert artifact.status is ArtifactStatus.OK
    section = udev.parse(artifact.data.decode(), artifact.name)
    assert section["via"] == "pyudev"
    assert section["count"] > 0
    if not os.path.isdir("/run/udev/data"):  # this machine: no udev daemon, so no database
        assert section["database"]["present"] is False
        assert section["populated"] is False  # never "healthy"
        assert section["initialized_count"] == 0


@pytest.mark.skipif(not _libudev(), reason="no libudev on this machine")
def test_live_listing_equals_the_file_reader_on_the_same_root() -> None:
    """One JSON shape: libudev's devices and the file reader's, over this very machine."""
    live = sorted(json.dumps(d, sort_keys=True) for d in udev._live_devices())
    files = sorted(json.dumps(d, sort_keys=True) for d in udev.file_devices(Path("/")))
    assert live == files


def _no_libudev() -> None:
    raise ImportError("Unable to find libudev")  # what pyudev raises when libudev.so.1 is absent


def test_without_pyudev_the_source_is_missing_with_the_reason(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pyudev", None)  # import pyudev now raises ImportError
    artifact = capture_source(SOURCE, Path("/"))
    assert artifact.status is ArtifactStatus.MISSING
    assert artifact.detail.startswith("libudev unavailable (ModuleNotFoundError")


def test_without_libudev_the_source_is_missing_with_the_reason(monkeypatch) -> None:
    import pyudev

    monkeypatch.setattr(pyudev, "Context", _no_libudev)
    artifact = capture_source(SOURCE, Path("/"))
    assert (artifact.status, artifact.detail) == (
        ArtifactStatus.MISSING, "libudev unavailable (ImportError: Unable to find libudev)",
    )  # fmt: skip


def test_the_artifact_replays_from_a_bundle(tmp_path: Path) -> None:
    _gds_host(tmp_path / "host")
    capture = Capture(origin="live")
    capture.add("udev", capture_source(SOURCE, tmp_path / "host"))
    capture.assignments["udev"] = [SOURCE.artifact]
    replayed = read_bundle(write_bundle(capture, tmp_path / "bundle.tar.gz"))
    text = replayed.artifacts[SOURCE.artifact].data.decode()
    assert udev.parse(text, SOURCE.artifact) == _parsed(tmp_path / "host")


# --- pastes ------------------------------------------------------------------------------------------


def test_export_db_record_from_the_oracle_documentation() -> None:
    text = (DATA / "export-db-oracle-sda.txt").read_text()
    assert recognise(text) is BY_SECTION["udev"]
    section = udev.parse(text, "export-db.txt")
    assert section["via"] == "export-db"
    assert section["database"]["present"] is True  # USEC_INITIALIZED: udev processed it
    assert section["database"]["entries"] == 1 and section["populated"] is True
    (sda,) = section["devices"]
    assert (sda["name"], sda["subsystem"], sda["device_node"]) == ("sda", "block", "/dev/sda")
    assert sda["id_path"] == "pci-0000:00:04.0-scsi-0:0:0:1"
    assert sda["id_wwn"] == "0x601666418e094990" and sda["id_model"] == "BlockVolume"
    # the DEVLINKS line is cut by the pager ("…/by-id/w>"); the S: lines are whole
    assert len(sda["devlinks"]) == 5 and not any(link.endswith(">") for link in sda["devlinks"])
    assert sda["src"] == {"artifact": "export-db.txt", "line": 1, "text": text.split("\n")[0]}
    assert sda["needs_id_path"] is False  # a SCSI disk, not NVMe


def test_export_db_without_initialised_devices_leaves_the_database_unknown() -> None:
    text = "P: /devices/virtual/block/loop0\nN: loop0\nE: DEVNAME=/dev/loop0\nE: SUBSYSTEM=block\n"
    section = udev.parse(text, "paste")
    assert section["database"]["present"] is None and section["populated"] is None


def test_other_texts_are_not_udev() -> None:
    assert not udev.recognise("/dev/nvme0n1p1 /mnt/ckpt ext4 rw,relatime 0 0\n")
    assert not udev.recognise('{"reader": "pci", "devices": []}')
    assert not udev.recognise("E: ID_PATH=pci-0000:00:14.0-usb-0:2.1:1.0\n")  # a grep, no record
    with pytest.raises(ParseError):
        udev.parse("P: /devices/virtual/misc/fuse\nE: SUBSYSTEM=misc\n", "paste")
    with pytest.raises(ParseError):
        udev.parse('{"reader": "udev", "devices": []}', "paste")


def test_a_hostile_reader_json_drops_malformed_devices() -> None:
    text = json.dumps({"reader": "udev", "database": {"present": True, "entries": "x"},
                       "devices": [{"subsystem": 1}, "x", None,
                                   {"subsystem": "block", "sys_name": "sda", "sys_path": "/sys/x",
                                    "properties": {"ID_PATH": 3}}]}, indent=1)  # fmt: skip
    section = udev.parse(text, "paste")
    assert [d["name"] for d in section["devices"]] == ["sda"]
    assert section["devices"][0]["id_path"] == "3"
    assert section["populated"] is None  # entries unknown


def test_redaction_removes_udev_serials_and_wwns(tmp_path: Path) -> None:
    """ID_SERIAL_SHORT and ID_WWN are learned from udev records (export-db text and the reader's
    JSON); the serial then goes wherever it is embedded (ID_SERIAL, by-id links)."""
    from gdsdoctor.capture.redact import redact_capture

    _gds_host(tmp_path)
    capture = Capture(origin="files")
    capture.add("udev", capture_source(SOURCE, tmp_path))
    export_db = (DATA / "export-db-oracle-sda.txt").read_bytes()
    capture.add(
        "udev", dataclasses.replace(capture.artifacts[SOURCE.artifact], name="export-db.txt", data=export_db)
    )
    redacted, _ = redact_capture(capture)
    everything = b"\n".join(a.data for a in redacted.artifacts.values()).decode()
    for identifier in ("12345ABCD678", "601666418e094990a94f6e388025315b", "0x601666418e094990"):
        assert identifier not in everything, identifier
    assert udev.parse(redacted.artifacts[SOURCE.artifact].data.decode(), SOURCE.artifact)["count"] == 9


def test_export_db_pasted_after_its_prompt() -> None:
    record = (DATA / "export-db-oracle-sda.txt").read_text()
    eth = "/devices/pci0000:00/0000:00:03.0/virtio0/net/eth0"
    text = "$ sudo udevadm info --export-db\n" + record + f"\nP: {eth}\nM: eth0\nU: net\nI: 2\n"
    text += f"E: DEVPATH={eth}\nE: SUBSYSTEM=net\nE: INTERFACE=eth0\nE: IFINDEX=2\n\n"
    text += "P: /devices/virtual/net/lo\nM: lo\nU: net\nI: 1\nE: SUBSYSTEM=net\nE: INTERFACE=lo\n"
    assert recognise(text) is BY_SECTION["udev"]
    section = udev.parse(text, "paste")
    # lo is virtual: not listed
    assert [(d["name"], d["src"]["line"]) for d in section["devices"]] == [("sda", 2), ("eth0", 53)]
    assert section["devices"][1]["initialized"] is False  # its I: is the ifindex
