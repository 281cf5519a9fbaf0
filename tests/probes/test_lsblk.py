from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from blockfuzz import DATA, check_damaged, check_garbage, read

from gdsdoctor.errors import ParseError
from gdsdoctor.probes import lsblk
from gdsdoctor.probes.text import size_bytes
from tests.conftest import unpack_dump

SAMPLES = sorted(p.name for p in (DATA / "lsblk").iterdir() if p.suffix in (".json", ".txt", ".expected"))
# util-linux expected tables without a MAJ:MIN column are parsed but not claimed by the recogniser
NARROW_TABLES = ("lsblk-simple-nvme-state.expected", "lsblk-simple-nvme-vendor.expected")


@pytest.mark.parametrize("name", SAMPLES)
def test_every_sample_is_recognised_and_parsed(name: str) -> None:
    text = read("lsblk", name)
    assert lsblk.recognise(text) or name in NARROW_TABLES
    section = lsblk.parse(text, f"cmd/{name}")
    assert section["devices"]
    for device in section["devices"]:
        assert device["src"]["line"] >= 1
        assert device["name"] in device["src"]["text"]


def test_typed_json_of_util_linux_2_38_with_bytes() -> None:
    section = lsblk.parse(read("lsblk", "lsblk-2.38.1-sysroot-simple-nvme-J-b.json"), "cmd/lsblk.json")
    by_name = section["by_name"]
    assert [d["name"] for d in section["devices"] if d["type"] == "disk"] == ["sda", "sdb", "nvme0n1"]
    nvme = by_name["nvme0n1"]
    assert nvme["size_bytes"] == 240057409536 and nvme["size_exact"] is True
    assert nvme["children"] == ["nvme0n1p1", "nvme0n1p2", "nvme0n1p3"]
    assert nvme["sched"] == "none" and nvme["rota"] is False and nvme["ro"] is False
    assert nvme["model"] == "KINGSTON SKC1000240G" and nvme["path"] == "/dev/nvme0n1"
    assert nvme["mountpoints"] == []  # "mountpoints": [null]
    part = by_name["nvme0n1p2"]
    assert part["parent"] == "nvme0n1" and part["mountpoints"] == ["/home"] and part["type"] == "part"
    assert by_name["sdb"]["rota"] is True
    assert by_name["sda1"]["src"]["line"] == 24


def test_human_sizes_without_b_are_approximate() -> None:
    section = lsblk.parse(read("lsblk", "lsblk-2.38.1-sysroot-simple-nvme-J.json"), "cmd/lsblk.json")
    nvme = section["by_name"]["nvme0n1"]
    assert nvme["size_exact"] is False
    assert abs(nvme["size_bytes"] - 240057409536) / 240057409536 < 0.001


def test_same_tree_as_the_upstream_expected_text_table() -> None:
    """util-linux's expected `lsblk` table for the dump lists the same devices and sizes."""
    section = lsblk.parse(read("lsblk", "lsblk-2.38.1-sysroot-simple-nvme-P-b.txt"), "cmd/lsblk-pairs.txt")
    rows = read("lsblk", "lsblk-simple-nvme-basic.expected").split("\n")[1:]
    table = {row.split()[0].lstrip("|`-"): row.split()[4] for row in rows if row.strip()}
    assert set(table) == set(section["by_name"])
    for name, human in table.items():
        expected, _ = size_bytes(human)  # lsblk rounds to one decimal
        assert abs(section["by_name"][name]["size_bytes"] - expected) <= 0.01 * expected
    assert section["format"] == "pairs"
    assert section["by_name"]["sdb1"]["mountpoints"] == ["/home/archive"]
    assert section["by_name"]["sdb1"]["parent"] == "sdb"


def test_tree_tables_of_plain_lsblk() -> None:
    table = lsblk.parse(read("lsblk", "lsblk-2.38.1-sysroot-simple-nvme-table.txt"), "x")
    pairs = lsblk.parse(read("lsblk", "lsblk-2.38.1-sysroot-simple-nvme-P-b.txt"), "x")
    assert table["format"] == "table"
    assert [(d["name"], d["parent"], d["type"], d["mountpoints"]) for d in table["devices"]] == [
        (d["name"], d["parent"], d["type"], d["mountpoints"]) for d in pairs["devices"]
    ]
    assert table["by_name"]["sda"]["model"] == "KINGSTON SH103S3"
    assert table["by_name"]["nvme0n1p3"]["src"]["line"] == 14
    state = lsblk.parse(read("lsblk", "lsblk-simple-nvme-state.expected"), "x")["by_name"]
    assert (
        state["sdb1"]["rota"] is True and state["sdb1"]["parent"] == "sdb" and state["sdb1"]["sched"] == "cfq"
    )
    assert state["nvme0n1p1"]["sched"] == "none" and state["nvme0n1"]["ro"] is False
    vendor = lsblk.parse(read("lsblk", "lsblk-simple-nvme-vendor.expected"), "x")["by_name"]
    assert vendor["sdb"]["model"] == "WDC WD800JD-00MS" and vendor["sdb1"]["model"] is None


def test_mountpoints_continuation_lines_of_2_37() -> None:
    text = (
        "NAME        MAJ:MIN RM   SIZE RO TYPE MOUNTPOINTS\n"
        "nvme0n1     259:0    0   1.7T  0 disk \n"
        "└─nvme0n1p1 259:1    0   1.7T  0 part /mnt/ckpt\n"
        "                                      /var/lib/ckpt\n"
    )
    part = lsblk.parse(text, "x")["by_name"]["nvme0n1p1"]
    assert part["mountpoints"] == ["/mnt/ckpt", "/var/lib/ckpt"] and part["parent"] == "nvme0n1"


def test_all_strings_json_of_old_util_linux() -> None:
    section = lsblk.parse(read("lsblk", "lsblk-J.util-linux-2.2x-pre2.33-strings.json"), "cmd/lsblk.json")
    by_name = section["by_name"]
    assert by_name["sda"]["size_exact"] is False
    assert by_name["sda"]["size_bytes"] == int(1.8 * 1024**4)
    assert by_name["sda3"]["mountpoints"] == ["[SWAP]"] and by_name["sda3"]["ro"] is False
    assert by_name["sda"]["children"] == ["sda1", "sda2", "sda3", "sda4"]
    assert by_name["nvme0n1"]["rota"] is None  # column not captured -> unknown


def test_bytes_as_strings() -> None:
    text = read("lsblk", "lsblk-J-b.util-linux-pre2.33-chromeos-bytes-as-strings.json")
    by_name = lsblk.parse(text, "x")["by_name"]
    assert by_name["nvme0n1p1"]["size_bytes"] == 503358750720 and by_name["nvme0n1p1"]["size_exact"]
    assert by_name["loop5"]["ro"] is True
    assert by_name["nvme0n1p12"]["src"]["line"] == 12


def test_md_device_under_two_disks_is_one_device_with_two_parents() -> None:
    document = {
        "blockdevices": [
            {"name": "nvme0n1", "type": "disk", "size": 100, "rota": False, "children": [
                {"name": "md0", "type": "raid0", "size": 200, "mountpoints": ["/scratch", None]}]},
            {"name": "nvme1n1", "type": "disk", "size": 100, "rota": "0", "children": [
                {"name": "md0", "type": "raid0", "size": 200, "mountpoints": ["/scratch", None]}]},
        ]
    }  # fmt: skip
    section = lsblk.parse("$ lsblk -J -b\n" + json.dumps(document, indent=2), "x")
    md0 = section["by_name"]["md0"]
    assert md0["parents"] == ["nvme0n1", "nvme1n1"] and md0["mountpoints"] == ["/scratch"]
    assert section["by_name"]["nvme1n1"]["children"] == ["md0"]
    assert [d["name"] for d in section["devices"]].count("md0") == 1


def test_recogniser_rejects_other_formats() -> None:
    for module, name in [
        ("nvme_cli", "nvme-list-json.v2.11.netdata-normalized.json"),
        ("nvme_cli", "nvme-list-subsys-text.v2.0-tcp-ana-powerstore.txt"),
    ]:
        assert not lsblk.recognise(read(module, name))
    assert not lsblk.recognise("/dev/nvme0n1p1 /mnt ext4 rw 0 0\n")


def test_not_lsblk_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        lsblk.parse('{"Devices": []}', "x")
    with pytest.raises(ParseError):
        lsblk.parse("hello", "x")


def test_garbage_and_damaged_samples() -> None:
    check_garbage(lsblk.parse)
    for name in SAMPLES:
        check_damaged(lsblk.parse, read("lsblk", name))


@pytest.mark.skipif(shutil.which("lsblk") is None, reason="no lsblk on this machine")
def test_real_lsblk_finds_the_devices_sys_block_lists() -> None:
    for source in lsblk.PROBES[0].sources:
        run = subprocess.run(source.argv, capture_output=True, text=True, timeout=30)
        if run.returncode == 0:
            break
    else:
        pytest.skip("this lsblk accepts none of the column sets")
    names = set(lsblk.parse(run.stdout, "cmd/lsblk.json")["by_name"])
    expected = set()
    for entry in Path("/sys/block").iterdir():
        size = (entry / "size").read_text().strip()
        # lsblk hides loop devices with no backing file
        if not (entry.name.startswith("loop") and size == "0"):
            expected.add(entry.name)
    assert expected <= names


@pytest.mark.skipif(shutil.which("lsblk") is None, reason="no lsblk on this machine")
def test_real_lsblk_on_the_upstream_dump(tmp_path: Path) -> None:
    """The installed lsblk run on util-linux's sysfs dump gives the tree we assert above."""
    unpack_dump(DATA / "lsblk" / "simple-nvme.tar.xz", tmp_path)
    argv = list(lsblk.PROBES[0].sources[0].argv)
    run = subprocess.run(
        [argv[0], "--sysroot", str(tmp_path / "simple-nvme"), *argv[1:]],
        capture_output=True, text=True, timeout=30, env=os.environ | {"LC_ALL": "C"},
    )  # fmt: skip
    if run.returncode != 0:
        pytest.skip(f"lsblk --sysroot failed: {run.stderr.strip()[:100]}")
    by_name = lsblk.parse(run.stdout, "x")["by_name"]
    assert by_name["nvme0n1p3"]["mountpoints"] == ["/home/test"]
    assert by_name["sda"]["size_bytes"] == 240057409536
