from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from fake_sysfs import FakeSysfs, gds_switch_tree
from hypothesis import given, settings
from hypothesis import strategies as st
from pyfakefs.fake_filesystem import FakeFilesystem

from gdsdoctor.errors import ParseError
from gdsdoctor.probes import pci

DATA = Path(__file__).parent.parent / "data" / "pci"
HGX = "lspci-vvv.hgx-h100-dell.pex890xx-gpu-nvme-cx7-excerpt.txt"
RTX = "lspci-vvv.gpu-idle-link-downgraded-2.5GT.rtx6000ada.stelline.txt"
CX7 = "lspci-vvv.cx7-gen5-x16-acs-disabled.stelline.txt"
GREP = "lspci-vvv-grep-ACSCtl.all-disabled.stelline.txt"
LSPCI_FILES = (HGX, RTX, CX7, GREP)


def read(name: str) -> str:
    return (DATA / name).read_text()


def by_bdf(section: dict) -> dict[str, dict]:
    return {device["bdf"]: device for device in section["devices"]}


# --- sysfs reader on this machine ---------------------------------------------------------------


@pytest.mark.skipif(not Path("/sys/bus/pci/devices").is_dir(), reason="no /sys/bus/pci on this machine")
def test_reader_on_real_sysfs() -> None:
    text = pci.read_pci(Path("/")).decode()
    section = pci.parse_pci(text, "sys/bus/pci/devices.json")
    entries = sorted(os.listdir("/sys/bus/pci/devices"))
    assert section["count"] == len(entries) == len(section["devices"])
    assert [device["bdf"] for device in section["devices"]] == entries
    for device in section["devices"]:
        assert device["class"].startswith("0x") and len(device["class"]) == 8
        assert device["vendor"] == Path(f"/sys/bus/pci/devices/{device['bdf']}/vendor").read_text().strip()
        assert device["root_complex"].startswith("pci")
        assert device["kind"] in {"gpu", "nvme", "nic", "bridge", "other"}
        assert device["numa_node"] is None or device["numa_node"] >= 0
        assert device["src"]["line"] > 1 and device["bdf"] in device["src"]["text"]
        assert device["path"].startswith("sys/devices/")


@pytest.mark.skipif(not Path("/sys/kernel/iommu_groups").is_dir(), reason="no iommu_groups directory")
def test_iommu_groups_reader_on_real_sysfs() -> None:
    section = pci.parse_iommu_groups(pci.read_iommu_groups(Path("/")).decode(), "a")
    expected = os.listdir("/sys/kernel/iommu_groups")
    assert section["count"] == len(expected)
    assert section["present"] is bool(expected)


# --- sysfs reader on fake trees ----------------------------------------------------------------


@pytest.fixture
def switch_tree(fs: FakeFilesystem) -> Path:
    root = Path("/host")
    gds_switch_tree(FakeSysfs(root))
    return root


def test_reader_gpu_nvme_nic_under_one_switch(switch_tree: Path) -> None:
    section = pci.parse_pci(pci.read_pci(switch_tree).decode(), "pci.json")
    devices = by_bdf(section)
    assert section["count"] == 11
    gpu, nvme, nic = devices["0000:19:00.0"], devices["0000:18:00.0"], devices["0000:1a:00.0"]
    assert (gpu["kind"], nvme["kind"], nic["kind"]) == ("gpu", "nvme", "nic")
    assert gpu["upstream"] == ["0000:15:01.0", "0000:16:00.0", "0000:17:01.0"]
    assert nvme["upstream"] == ["0000:15:01.0", "0000:16:00.0", "0000:17:00.0"]
    assert nic["upstream"][:2] == gpu["upstream"][:2]  # share the switch upstream port
    assert {gpu["root_complex"], nvme["root_complex"], nic["root_complex"]} == {"pci0000:15"}
    assert gpu["root_port"] == "0000:15:01.0"
    assert devices["0000:15:01.0"]["upstream"] == [] and devices["0000:15:01.0"]["kind"] == "bridge"
    assert nvme["current_link_speed_gts"] == 16.0 and nvme["max_link_width"] == 4
    assert gpu["current_link_speed_gts"] == 32.0 and gpu["current_link_width"] == 16
    assert gpu["driver"] == "nvidia" and nvme["driver"] == "nvme" and nic["driver"] == "mlx5_core"
    assert gpu["iommu_group"] == "12" and nic["iommu_group"] is None
    assert gpu["numa_node"] == 0 and gpu["local_cpulist"] == "0-31"
    assert gpu["vendor"] == "0x10de" and gpu["device"] == "0x2330" and nvme["class"] == "0x010802"
    assert gpu["path"] == "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0"


def test_reader_across_sockets(switch_tree: Path) -> None:
    devices = by_bdf(pci.parse_pci(pci.read_pci(switch_tree).decode(), "pci.json"))
    far_gpu, ib_nic = devices["0000:9a:00.0"], devices["0000:9b:00.0"]
    assert far_gpu["root_complex"] == "pci0000:97" and far_gpu["numa_node"] == 1
    assert far_gpu["upstream"] == ["0000:97:01.0"]
    assert far_gpu["current_link_speed_gts"] == 2.5 and far_gpu["max_link_speed_gts"] == 32.0
    assert ib_nic["kind"] == "nic" and ib_nic["numa_node"] is None  # -1 means "not provided"
    assert ib_nic["current_link_speed_gts"] is None and ib_nic["current_link_width"] == 0
    assert ib_nic["root_complex"] == "pci0000:9b" and ib_nic["root_port"] is None


def test_iommu_groups_on_fake_tree(switch_tree: Path) -> None:
    section = pci.parse_iommu_groups(pci.read_iommu_groups(switch_tree).decode(), "groups.json")
    assert section["present"] is True and section["count"] == 3
    groups = {group["group"]: group for group in section["groups"]}
    assert groups["12"]["devices"] == ["0000:19:00.0"] and groups["12"]["type"] == "DMA-FQ"
    assert '"group": "12"' in groups["12"]["src"]["text"]


def test_reader_does_not_follow_links_out_of_host_root(fs: FakeFilesystem) -> None:
    root = Path("/host")
    FakeSysfs(root).add_pci("0000:01:00.0")
    os.symlink("/elsewhere/0000:02:00.0", root / "sys/bus/pci/devices/0000:02:00.0")
    devices = by_bdf(pci.parse_pci(pci.read_pci(root).decode(), "pci.json"))
    assert devices["0000:02:00.0"]["path"] is None and devices["0000:02:00.0"]["class"] is None
    assert devices["0000:01:00.0"]["kind"] == "gpu"


def test_readers_without_sysfs_capture_nothing(fs: FakeFilesystem) -> None:
    # an absent tree is "missing" (unknown), never "zero devices"
    for reader in (pci.read_pci, pci.read_iommu_groups, pci.read_numa):
        assert reader(Path("/nothing")) == b""


def test_empty_iommu_groups_directory(fs: FakeFilesystem) -> None:
    fs.create_dir("/host/sys/kernel/iommu_groups")
    section = pci.parse_iommu_groups(pci.read_iommu_groups(Path("/host")).decode(), "groups.json")
    assert section == {"present": False, "count": 0, "groups": []}


def test_link_speed_formats() -> None:
    assert pci.link_speed_gts("16.0 GT/s PCIe") == 16.0
    assert pci.link_speed_gts("8 GT/s") == 8.0
    assert pci.link_speed_gts("Unknown") is None
    assert pci.link_speed_gts(None) is None


@pytest.mark.parametrize("text", ["", "[]", "{}", '{"reader": "netdev"}', "not json", "\x00\x01"])
def test_sysfs_parsers_reject_other_text(text: str) -> None:
    for parse in (pci.parse_pci, pci.parse_iommu_groups):
        with pytest.raises(ParseError):
            parse(text, "x")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=30,
)


@given(devices=json_values, attrs=json_values)
@settings(max_examples=150)
def test_pci_parser_survives_odd_json(devices: object, attrs: object) -> None:
    doc = {"reader": "pci", "devices": [devices, {"bdf": "0000:00:00.0", "attrs": attrs, "path": attrs}]}
    section = pci.parse_pci(json.dumps(doc, indent=1), "x")
    assert section["count"] >= 1


# --- lspci -vvv --------------------------------------------------------------------------------


def test_lspci_hgx_switch_excerpt() -> None:
    section = pci.parse_lspci(read(HGX), HGX)
    devices = by_bdf(section)
    assert len(devices) == 16 and section["caps_readable"] is True
    gpu, nvme, down = devices["0000:19:00.0"], devices["0000:18:00.0"], devices["0000:17:00.0"]
    assert gpu["name"] == "NVIDIA Corporation Device 2330 (rev a1)" and gpu["class_name"] == "3D controller"
    assert gpu["driver"] == "nvidia" and gpu["numa_node"] == 0
    kinds = {bdf: device["kind"] for bdf, device in devices.items()}
    assert (kinds["0000:19:00.0"], kinds["0000:18:00.0"], kinds["0000:1a:00.0"]) == ("gpu", "nvme", "nic")
    assert kinds["0000:17:00.0"] == "bridge" and kinds["0000:15:00.0"] == "other"
    assert devices["0000:15:00.4"]["class_name"] == "Generic system peripheral"
    assert gpu["lnk_cap"] == {
        "speed_gts": 32.0,
        "width": 16,
        "speed_downgraded": False,
        "width_downgraded": False,
    }
    assert (
        nvme["lnk_sta"]["speed_gts"] == 16.0 and nvme["lnk_sta"]["width"] == 4 and not nvme["lnk_downgraded"]
    )
    assert down["lnk_sta"]["speed_downgraded"] is True and down["lnk_downgraded"] is True
    assert down["srcs"]["LnkSta"]["line"] == 306
    assert down["acs_capable"] is True and down["acs_cap"]["direct_trans"] is True
    assert down["acs_ctl"] == dict.fromkeys(pci.ACS_FLAGS.values(), False)
    assert devices["0000:15:01.0"]["acs_cap"]["direct_trans"] is False
    assert gpu["acs_capable"] is False and gpu["acs_ctl"] is None
    assert devices["0000:17:01.0"]["aer_ce_set"] == ["BadDLLP", "BadTLP", "RxErr", "Timeout"]
    assert devices["0000:17:01.0"]["aer_ue_set"] == []
    assert gpu["src"]["line"] == 776


def test_lspci_bridge_bus_numbers_and_port_types() -> None:
    devices = by_bdf(pci.parse_lspci(read(HGX), HGX))
    ports = {bdf: (d["port_type"], d["secondary_bus"]) for bdf, d in devices.items() if d["kind"] == "bridge"}
    assert ports["0000:15:01.0"] == ("root_port", "0000:16")
    assert ports["0000:16:00.0"] == ("upstream", "0000:17")
    assert ports["0000:17:01.0"] == ("downstream", "0000:19")
    assert (
        devices["0000:19:00.0"]["port_type"] == "endpoint"
        and devices["0000:19:00.0"]["secondary_bus"] is None
    )
    assert devices["0000:15:00.0"]["port_type"] == "rc_endpoint"
    assert devices["0000:17:01.0"]["srcs"]["Bus"]["line"] == 376


def test_lspci_gpu_idle_downgraded_with_prompt_and_spaces() -> None:
    (gpu,) = pci.parse_lspci(read(RTX), RTX)["devices"]
    assert gpu["bdf"] == "0000:01:00.0" and gpu["class_name"] == "VGA compatible controller"
    assert gpu["kind"] == "gpu"
    assert gpu["lnk_sta"] == {
        "speed_gts": 2.5,
        "width": 16,
        "speed_downgraded": True,
        "width_downgraded": False,
    }
    assert gpu["lnk_cap"]["speed_gts"] == 16.0
    assert gpu["bar1_bytes"] == 64 << 30 and gpu["driver"] == "nvidia"


def test_lspci_cx7() -> None:
    (nic,) = pci.parse_lspci(read(CX7), CX7)["devices"]
    assert nic["lnk_sta"]["speed_gts"] == 32.0 and nic["acs_capable"] is True
    assert nic["acs_ctl"]["req_redir"] is False and nic["driver"] == "mlx5_core"


def test_lspci_grep_acsctl_only() -> None:
    section = pci.parse_lspci(read(GREP), GREP)
    assert section["devices"] == [] and len(section["unattributed_acs_ctl"]) == 46
    assert all(not any(item["flags"].values()) for item in section["unattributed_acs_ctl"])
    assert section["unattributed_acs_ctl"][0]["src"]["line"] == 2


ACCESS_DENIED = """\
0000:19:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)
\tSubsystem: NVIDIA Corporation Device 16c1
\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- DisINTx+
\tNUMA node: 0
\tCapabilities: <access denied>
\tKernel driver in use: nvidia

"""


def test_lspci_without_root_is_unknown_not_absent() -> None:
    section = pci.parse_lspci(ACCESS_DENIED, "cmd/lspci-vvv.txt")
    (gpu,) = section["devices"]
    assert section["caps_readable"] is False and gpu["caps_readable"] is False
    assert gpu["acs_capable"] is None and gpu["acs_ctl"] is None and gpu["lnk_sta"] is None
    assert gpu["lnk_downgraded"] is None and gpu["aer_ce_set"] is None
    assert gpu["numa_node"] == 0 and gpu["driver"] == "nvidia"


@pytest.mark.skipif(shutil.which("lspci") is None, reason="lspci not installed")
def test_lspci_real_output() -> None:
    text = subprocess.run(["lspci", "-vvv", "-D"], capture_output=True, text=True, timeout=30).stdout
    section = pci.parse_lspci(text, "cmd/lspci-vvv.txt")
    assert pci.recognise_lspci(text)
    headers = [line for line in text.splitlines() if line[:1].isalnum()]
    assert [device["bdf"] for device in section["devices"]] == [line.split()[0] for line in headers]
    if Path("/sys/bus/pci/devices").is_dir():
        assert len(section["devices"]) == len(os.listdir("/sys/bus/pci/devices"))
    for device in section["devices"]:
        driver = Path(f"/sys/bus/pci/devices/{device['bdf']}/driver")
        assert device["driver"] == (os.path.basename(os.readlink(driver)) if driver.is_symlink() else None)


@pytest.mark.parametrize("name", LSPCI_FILES)
def test_lspci_recognised(name: str) -> None:
    assert pci.recognise_lspci(read(name))


NEGATIVES = [
    DATA / "lspci-tv.asus-esc8000a-e12.epyc-genoa.rtx6000ada-cx7-nvme.txt",
    DATA / "numactl-hardware.asus-esc8000a-e12.txt",
    DATA.parent / "gpu" / "nvidia-smi-topo-m.asus-esc8000a-e12.4gpu-4nic.txt",
    DATA.parent / "gpu" / "nvidia-smi-q.h100-hgx.535.161.08.gpu0.txt",
    DATA.parent / "rdma" / "ibstat.h100-roce-cx7.some-down.txt",
    DATA.parent / "rdma" / "ibv_devinfo.cx7-eth-port-down.stelline-puget.txt",
]


@pytest.mark.parametrize("path", NEGATIVES, ids=lambda p: p.name)
def test_lspci_recogniser_rejects_other_sources(path: Path) -> None:
    assert not pci.recognise_lspci(path.read_text())


def test_lspci_rejects_non_lspci() -> None:
    with pytest.raises(ParseError):
        pci.parse_lspci("hello\nworld\n", "x")


@given(cut=st.integers(min_value=0, max_value=60000), drop=st.integers(min_value=1, max_value=40))
@settings(max_examples=60)
def test_lspci_mutations(cut: int, drop: int) -> None:
    text = read(HGX)
    lines = text[:cut].split("\n")
    mutated = "\n".join(line for index, line in enumerate(lines) if index % drop != 1)
    with contextlib.suppress(ParseError):
        pci.parse_lspci(mutated, "x")


# --- lspci -tv ---------------------------------------------------------------------------------

TREE = "lspci-tv.asus-esc8000a-e12.epyc-genoa.rtx6000ada-cx7-nvme.txt"


def test_lspci_tree_genoa() -> None:
    section = pci.parse_lspci_tree(read(TREE), TREE)
    devices = by_bdf(section)
    assert len(devices) == len(section["devices"]) == 198
    gpu = devices["0000:01:00.0"]
    assert gpu["name"] == "NVIDIA Corporation AD102GL [RTX 6000 Ada Generation]"
    assert (
        gpu["parent"] == "0000:00:01.1"
        and gpu["upstream"] == ["0000:00:01.1"]
        and gpu["root_bus"] == "0000:00"
    )
    assert gpu["src"]["line"] == 5
    nvme = devices["0000:65:00.0"]
    assert nvme["upstream"] == [
        "0000:60:01.1",
        "0000:61:00.0",
        "0000:62:00.0",
        "0000:63:00.0",
        "0000:64:10.0",
    ]
    assert nvme["name"].startswith("Samsung") and devices["0000:61:00.0"]["name"] is None
    assert devices["0000:6c:00.0"]["parent"] == "0000:6a:04.0"  # a sibling drawn on its own line
    assert (
        devices["0000:81:00.1"]["upstream"] == ["0000:80:01.1"]
        and devices["0000:e3:00.4"]["root_bus"] == "0000:e0"
    )
    assert devices["0000:00:18.3"]["parent"] is None and devices["0000:c0:03.3"]["name"] is None
    # GPUs and NVMe never share a switch on this box: no common upstream below the root complex
    assert not set(gpu["upstream"]) & set(nvme["upstream"])


def test_lspci_tree_name_that_looks_like_a_slot() -> None:
    (device,) = pci.parse_lspci_tree("-[0000:00]---01.0  Red Hat, Inc. Virtio 10.0 block\n", "t")["devices"]
    assert device["bdf"] == "0000:00:01.0" and device["name"] == "Red Hat, Inc. Virtio 10.0 block"


@pytest.mark.skipif(shutil.which("lspci") is None, reason="lspci not installed")
def test_lspci_tree_real_output() -> None:
    text = subprocess.run(["lspci", "-tv"], capture_output=True, text=True, timeout=30).stdout
    assert pci.recognise_lspci_tree(text)
    tree = {device["bdf"] for device in pci.parse_lspci_tree(text, "t")["devices"]}
    listed = subprocess.run(["lspci", "-D"], capture_output=True, text=True, timeout=30).stdout
    assert tree == {line.split()[0] for line in listed.splitlines() if line.strip()}


def test_lspci_tree_recogniser() -> None:
    assert pci.recognise_lspci_tree(read(TREE))
    assert not pci.recognise_lspci(read(TREE))
    for name in (HGX, RTX, GREP, "numactl-hardware.asus-esc8000a-e12.txt"):
        assert not pci.recognise_lspci_tree(read(name))
    with pytest.raises(ParseError):
        pci.parse_lspci_tree(read(HGX), "x")


@given(cut=st.integers(min_value=0, max_value=15000), drop=st.integers(min_value=1, max_value=20))
@settings(max_examples=60)
def test_lspci_tree_mutations(cut: int, drop: int) -> None:
    lines = read(TREE)[:cut].split("\n")
    with contextlib.suppress(ParseError):
        pci.parse_lspci_tree("\n".join(line for i, line in enumerate(lines) if i % drop != 1), "x")


# --- NUMA ---------------------------------------------------------------------------------------

NUMACTL = "numactl-hardware.asus-esc8000a-e12.txt"


def test_numa_reader_on_real_sysfs() -> None:
    base = Path("/sys/devices/system/node")
    if not base.is_dir():
        pytest.skip("no /sys/devices/system/node")
    section = pci.parse_numa(pci.read_numa(Path("/")).decode(), "n")
    expected = [name for name in os.listdir(base) if name.startswith("node")]
    assert section["count"] == len(expected)
    for node in section["nodes"]:
        cpulist = (base / f"node{node['node']}" / "cpulist").read_text().strip()
        assert node["cpus"] == pci.expand_cpulist(cpulist) and node["size_bytes"] > 0
        assert node["distances"][node["node"]] == 10


def test_numa_reader_on_fake_tree(switch_tree: Path) -> None:
    section = pci.parse_numa(pci.read_numa(switch_tree).decode(), "sys/devices/system/node.json")
    assert section["count"] == 2
    node1 = section["nodes"][1]
    assert node1["node"] == 1 and node1["cpu_count"] == 32 and node1["cpus"][0] == 32
    assert node1["distances"] == [32, 10] and node1["size_bytes"] == 198113268 * 1024
    assert '"node": "node1"' in node1["src"]["text"]


def test_numactl_hardware() -> None:
    section = pci.parse_numa(read(NUMACTL), NUMACTL)
    assert section["count"] == 2 and pci.recognise_numactl(read(NUMACTL))
    node0, node1 = section["nodes"]
    assert node0["cpus"] == list(range(32)) and node0["size_bytes"] == 193129 << 20
    assert node1["distances"] == [32, 10] and node1["src"]["line"] == 6


def test_expand_cpulist() -> None:
    assert pci.expand_cpulist("0-3,8") == [0, 1, 2, 3, 8]
    assert (
        pci.expand_cpulist("") == [] and pci.expand_cpulist("x") is None and pci.expand_cpulist(None) is None
    )


def test_numactl_recogniser_rejects_others() -> None:
    for name in (HGX, TREE, GREP):
        assert not pci.recognise_numactl(read(name))
    with pytest.raises(ParseError):
        pci.parse_numa(read(TREE), "x")


@given(value=json_values)
@settings(max_examples=100)
def test_numa_reader_parser_survives_odd_json(value: object) -> None:
    doc = {
        "reader": "numa",
        "nodes": [value, {"node": "node0", "cpulist": value, "distance": value, "meminfo": value}],
    }
    assert pci.parse_numa(json.dumps(doc, indent=1), "x")["count"] == 1
