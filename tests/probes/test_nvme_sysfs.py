from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from blockfuzz import DATA, check_damaged, check_garbage, read

from gdsdoctor.errors import ParseError, Unavailable
from gdsdoctor.probes import nvme_sysfs
from tests.conftest import unpack_dump


def capture(tmp_path: Path, tarball: str) -> dict:
    unpack_dump(DATA / "nvme_sysfs" / tarball, tmp_path)
    root = next(p for p in (tmp_path, *tmp_path.iterdir()) if (p / "sys").is_dir())
    text = nvme_sysfs.read_sysfs(root).decode()
    assert nvme_sysfs.recognise(text)
    return nvme_sysfs.parse(text, "sys/nvme-sysfs.json")


def expected_tree(name: str) -> tuple[set[tuple[str, str, str]], set[tuple[str, str]], set[tuple[str, str]]]:
    """(ctrl, transport, traddr), (subsystem, nqn) and (path, ctrl) from libnvme's expected .out."""
    text = read("nvme_sysfs", name)
    ctrls = set(re.findall(r"ctrl (nvme\d+) transport=(\S+) traddr=(\S+)", text))
    subsystems = {(m[0], m[1].strip()) for m in re.findall(r"subsystem (nvme-subsys\d+) (.+)", text)}
    paths = set(re.findall(r"path (nvme\d+c\d+n\d+) .*\n\s+ctrl (nvme\d+)", text))
    return ctrls, subsystems, paths


def test_libnvme_pcie_dump_matches_libnvme_expected_tree(tmp_path: Path) -> None:
    section = capture(tmp_path, "tree-pcie.tar.xz")
    ctrls, subsystems, paths = expected_tree("tree-pcie.out")
    assert {(c["name"], c["transport"], c["address"]) for c in section["controllers"]} == ctrls
    assert len(ctrls) == 3
    # libnvme prints only the NQN's first word
    assert {(s["name"], s["nqn"].split()[0]) for s in section["subsystems"]} == subsystems
    assert (
        {(p["name"], p["controller"]) for p in section["paths"]}
        == paths
        == {
            ("nvme1c1n1", "nvme1"),
            ("nvme1c2n1", "nvme2"),
        }
    )


def test_libnvme_pcie_dump_values(tmp_path: Path) -> None:
    section = capture(tmp_path, "tree-pcie.tar.xz")
    by_name = {c["name"]: c for c in section["controllers"]}
    nvme1 = by_name["nvme1"]
    assert nvme1["pci_bdf"] == "052e:78:00.0" and nvme1["state"] == "live" and nvme1["fabrics"] is False
    assert nvme1["subsysnqn"] == "nqn.1994-11.com.samsung:nvme:PM1735a:2.5-inch:S6RTNE0R900057"  # unpadded
    assert nvme1["serial"] == "S6RTNE0R900057" and nvme1["model"] == "3.2TB NVMe Gen4 U.2 SSD III"
    assert nvme1["numa_node"] == 0 and nvme1["queue_count"] == 65 and nvme1["kato_s"] == 0
    assert nvme1["ctrl_loss_tmo"] is None and nvme1["subsystem"] == "nvme-subsys1"
    assert by_name["nvme2"]["numa_node"] == 2 and by_name["nvme0"]["namespaces"] == ["nvme0n1"]
    subsystems = {s["name"]: s for s in section["subsystems"]}
    assert subsystems["nvme-subsys1"]["controllers"] == ["nvme1", "nvme2"]
    assert subsystems["nvme-subsys1"]["namespaces"] == ["nvme1n1"]
    assert (
        subsystems["nvme-subsys1"]["iopolicy"] == "numa" and subsystems["nvme-subsys1"]["subsystype"] == "nvm"
    )
    block = {b["name"]: b for b in section["block"]}
    assert block["nvme0n1"]["scheduler"] == "none" and block["nvme0n1"]["nr_requests"] == 1023
    assert block["nvme0n1"]["logical_block_size"] == 4096 and block["nvme0n1"]["read_ahead_kb"] == 4096
    assert block["nvme1n1"]["max_sectors_kb"] == 1280 and block["nvme1n1"]["rotational"] is False
    assert nvme1["src"]["text"].strip() == '"nvme1": {'


def test_apple_dump_with_nul_padded_attributes(tmp_path: Path) -> None:
    section = capture(tmp_path, "tree-apple-nvme.tar.xz")
    ctrls, subsystems, _ = expected_tree("tree-apple-nvme.out")
    assert {(c["name"], c["transport"], c["address"]) for c in section["controllers"]} == ctrls
    assert {s["name"] for s in section["subsystems"]} == {name for name, _ in subsystems}
    (ctrl,) = section["controllers"]
    assert ctrl["namespaces"] == ["nvme0n1", "nvme0n2", "nvme0n3"] and ctrl["pci_bdf"] is None
    assert ctrl["model"] == "APPLE SSD AP2048Z" and ctrl["subsystem"] == "nvme-subsys0"
    assert {b["name"]: b["scheduler"] for b in section["block"]} == dict.fromkeys(
        ctrl["namespaces"], "mq-deadline"
    )


def test_util_linux_dump_block_queues(tmp_path: Path) -> None:
    section = capture(tmp_path, "simple-nvme.tar.xz")
    block = {b["name"]: b for b in section["block"]}
    assert set(block) == {"sda", "sdb", "nvme0n1"}
    assert block["sdb"]["rotational"] is True and block["sdb"]["scheduler"] == "cfq"
    assert block["nvme0n1"]["size_bytes"] == 240057409536 and block["nvme0n1"]["scheduler"] == "none"
    assert block["nvme0n1"]["schedulers"] == ["none", "mq-deadline"]
    assert section["controllers"] == [] and section["nvme_core"]["multipath"] is None


def _write(fs, path: str, value: str) -> None:
    fs.create_file(path, contents=value + "\n")


def test_fabrics_controllers_md_stack_and_module_params(fs) -> None:
    ctrl = "/sys/devices/virtual/nvme-fabrics/ctl/nvme3"
    for name, value in {
        "transport": "tcp", "state": "connecting", "ctrl_loss_tmo": "off", "reconnect_delay": "10",
        "fast_io_fail_tmo": "off", "kato": "5", "queue_count": "9", "numa_node": "-1",
        "address": "traddr=10.0.0.5,trsvcid=4420,src_addr=10.0.0.9", "subsysnqn": "nqn.2024-01.io:target",
        "hostnqn": "nqn.2014-08.org.nvmexpress:uuid:1", "cntrltype": "io",
    }.items():  # fmt: skip
        _write(fs, f"{ctrl}/{name}", value)
    _write(fs, f"{ctrl}/nvme5c3n1/ana_state", "inaccessible")
    _write(fs, f"{ctrl}/nvme5c3n1/ana_grpid", "2")
    fs.create_symlink("/sys/class/nvme/nvme3", ctrl)
    dying = "/sys/devices/virtual/nvme-fabrics/ctl/nvme4"
    dying_attrs = {"transport": "rdma", "state": "deleting (no IO)", "ctrl_loss_tmo": "600",
                   "fast_io_fail_tmo": "30", "address": "traddr=192.168.7.1,trsvcid=4420"}  # fmt: skip
    for name, value in dying_attrs.items():
        _write(fs, f"{dying}/{name}", value)
    fs.create_symlink("/sys/class/nvme/nvme4", dying)
    subsys = "/sys/devices/virtual/nvme-subsystem/nvme-subsys5"
    _write(fs, f"{subsys}/iopolicy", "round-robin")
    _write(fs, f"{subsys}/subsysnqn", "nqn.2024-01.io:target")
    fs.create_symlink(f"{subsys}/nvme3", ctrl)
    _write(fs, f"{subsys}/nvme5n1/size", "2048")
    _write(fs, f"{subsys}/nvme5n1/queue/scheduler", "[none] mq-deadline ")
    fs.create_symlink("/sys/class/nvme-subsystem/nvme-subsys5", subsys)
    _write(fs, "/sys/block/md0/size", "4096")
    _write(fs, "/sys/block/md0/queue/scheduler", "none")
    fs.create_dir("/sys/block/md0/slaves/nvme5n1")
    fs.create_dir("/sys/block/md0/holders")
    _write(fs, "/sys/module/nvme_core/parameters/multipath", "Y")
    _write(fs, "/sys/module/nvme_core/parameters/io_timeout", "4294967295")
    _write(fs, "/sys/module/nvme_core/parameters/max_retries", "5")

    section = nvme_sysfs.parse(nvme_sysfs.read_sysfs(Path("/")).decode(), "sys/nvme-sysfs.json")
    nvme3, nvme4 = section["controllers"]
    assert nvme3["state"] == "connecting" and nvme3["fabrics"] is True and nvme3["transport"] == "tcp"
    assert nvme3["ctrl_loss_tmo"] == "off" and nvme3["ctrl_loss_tmo_s"] is None
    assert nvme3["fast_io_fail_tmo"] == "off" and nvme3["reconnect_delay_s"] == 10 and nvme3["kato_s"] == 5
    assert nvme3["traddr"] == "10.0.0.5" and nvme3["src_addr"] == "10.0.0.9" and nvme3["numa_node"] is None
    assert nvme3["subsystem"] == "nvme-subsys5" and nvme3["paths"] == ["nvme5c3n1"]
    assert nvme4["state"] == "deleting (no IO)" and nvme4["ctrl_loss_tmo_s"] == 600
    assert nvme4["fast_io_fail_tmo_s"] == 30 and nvme4["subsystem"] is None
    (path,) = section["paths"]
    assert path == path | {
        "name": "nvme5c3n1",
        "controller": "nvme3",
        "head": "nvme5n1",
        "ana_state": "inaccessible",
    }
    assert section["subsystems"][0]["iopolicy"] == "round-robin"
    block = {b["name"]: b for b in section["block"]}
    assert block["md0"]["slaves"] == ["nvme5n1"] and block["md0"]["size_bytes"] == 4096 * 512
    assert block["nvme5n1"]["scheduler"] == "none" and block["nvme5n1"]["schedulers"] == [
        "none",
        "mq-deadline",
    ]
    assert section["nvme_core"]["multipath"] is True and section["nvme_core"]["io_timeout_s"] == 4294967295
    assert section["module_params"]["nvme_core"]["max_retries"] == "5"


def test_links_out_of_the_host_root_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "real-host" / "nvme9"
    outside.mkdir(parents=True)
    (outside / "state").write_text("live\n")
    root = tmp_path / "dump"
    (root / "sys/class/nvme").mkdir(parents=True)
    (root / "sys/class/nvme/nvme9").symlink_to(outside)  # absolute: points at the "real" host
    section = nvme_sysfs.parse(nvme_sysfs.read_sysfs(root).decode(), "x")
    assert section["controllers"][0]["state"] is None


def test_an_attribute_linking_out_of_the_host_root_is_not_read(tmp_path: Path) -> None:
    """The reader resolves each directory once and then checks only attributes that are links
    themselves: such a link leading out is not followed, one staying inside is read."""
    outside = tmp_path / "real-host"
    outside.mkdir()
    (outside / "secret").write_text("live\n")
    root = tmp_path / "dump"
    controller = root / "sys/class/nvme/nvme9"
    controller.mkdir(parents=True)
    (controller / "state").symlink_to(outside / "secret")  # absolute, out
    (controller / "model").symlink_to("../../../../../real-host/secret")  # relative, out
    (root / "sys/serial").write_text("S123\n")
    (controller / "serial").symlink_to("../../../serial")  # relative, inside
    (controller / "transport").write_text("pcie\n")
    raw = json.loads(nvme_sysfs.read_sysfs(root))["controllers"]["nvme9"]
    assert "state" not in raw and "model" not in raw
    assert raw["serial"] == "S123" and raw["transport"] == "pcie"


def test_reader_says_missing_for_a_missing_root(tmp_path: Path) -> None:
    with pytest.raises(Unavailable, match="no /sys"):  # captured as missing, not "no NVMe"
        nvme_sysfs.read_sysfs(tmp_path / "nope")
    (tmp_path / "sys").mkdir()
    section = nvme_sysfs.parse(nvme_sysfs.read_sysfs(tmp_path).decode(), "x")
    assert section["controllers"] == [] and section["block"] == []


def test_real_sysfs_of_this_machine() -> None:
    section = nvme_sysfs.parse(nvme_sysfs.read_sysfs(Path("/")).decode(), "sys/nvme-sysfs.json")
    names = {b["name"] for b in section["block"]}
    assert {p.name for p in Path("/sys/block").iterdir()} <= names
    for block in section["block"]:
        assert block["size_bytes"] is None or block["size_bytes"] >= 0


def test_recogniser_and_parse_errors() -> None:
    sample = read("nvme_sysfs", "nvme-sysfs.tree-pcie.json")
    assert nvme_sysfs.recognise(sample)
    assert not nvme_sysfs.recognise(read("lsblk", "lsblk-2.38.1-sysroot-simple-nvme-J-b.json"))
    assert not nvme_sysfs.recognise(read("nvme_cli", "nvme-list-json.v2.11.netdata-normalized.json"))
    with pytest.raises(ParseError):
        nvme_sysfs.parse(json.dumps({"blockdevices": []}), "x")


def test_garbage_and_damaged_samples() -> None:
    check_garbage(nvme_sysfs.parse)
    check_damaged(nvme_sysfs.parse, read("nvme_sysfs", "nvme-sysfs.tree-pcie.json"))
