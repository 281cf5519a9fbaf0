from __future__ import annotations

import contextlib
import json
import os
import resource
from pathlib import Path

import pytest
from fake_sysfs import MELLANOX, NIC, FakeSysfs, gds_switch_tree
from hypothesis import given, settings
from hypothesis import strategies as st
from pyfakefs.fake_filesystem import FakeFilesystem

from gdsdoctor.errors import ParseError
from gdsdoctor.probes import rdma

DATA = Path(__file__).parent.parent / "data"
MIXED = "ibstat.a100-mixed-eth-ib-hdr.txt"
NDR = "ibstat.h100-ib-ndr-cx7.all-active.txt"
DOWN = "ibstat.h100-roce-cx7.some-down.txt"
IBSTATUS = "ibstatus.a100-ib-hdr.txt"
DEVINFO = "ibv_devinfo.cx7-eth-port-down.stelline-puget.txt"
GREP = "sysfs-class-infiniband.h100.grep-H.txt"
QOS = "mlnx_qos.cx-roce-dscp-pfc3.att-netarbiter.txt"
SPIDER = "rdma-qos-q.mlnx_qos-ecn-sysfs-cnp.spiderpool.txt"
PORT_ACTIVE = "ibstat-port.mlx4-cx3-fdr56-active.heioy-books.txt"
PORT_DOWN = "ibstat-port.mlx4-qdr-down-polling.redhat-cip-hardware.txt"
PORT_GUIDS = "ibstat-p.port-guids.heioy-books.txt"
IBDEV_V = "ibdev2netdev-v.cx4-eth-sriov-vfs-down.sriov-cni.txt"
IBDEV = "ibdev2netdev.cx4-ib-one-down.ib-sriov-cni.txt"
IBDEV_LUSTRE = "ibdev2netdev-v.cx6-hdr100-lustre-o2ib.gds-troubleshooting.txt"
IB_FILES = (MIXED, NDR, DOWN, IBSTATUS, DEVINFO, GREP, PORT_ACTIVE, PORT_DOWN, IBDEV_V, IBDEV, IBDEV_LUSTRE)
IP_LINK_IB = "ip-link.cx4-ib-vfs-down.ib-sriov-cni.txt"
IP_LINK_VM = "ip-link.this-machine-debian12-vm.txt"


def read(name: str, kind: str = "rdma") -> str:
    return (DATA / kind / name).read_text()


def ports_of(section: dict) -> dict[str, dict]:
    return {f"{p['device']}/{p['port']}": p for p in section["ports"]}


# --- infiniband: pasted formats ------------------------------------------------------------------


def test_ibstat_mixed_ethernet_and_ib() -> None:
    section = rdma.parse_infiniband(read(MIXED), MIXED)
    assert section["format"] == "ibstat" and len(section["devices"]) == 9
    ports = ports_of(section)
    assert ports["mlx5_0/1"]["link_layer"] == "Ethernet" and ports["mlx5_1/1"]["link_layer"] == "InfiniBand"
    assert ports["mlx5_1/1"]["rate_gbps"] == 200.0 and ports["mlx5_1/1"]["active"] is True
    assert section["devices"][0]["hca_type"] == "MT4126" and section["devices"][0]["fw_ver"] == "22.35.2302"
    assert ports["mlx5_0/1"]["src"]["line"] == 8


def test_ibstat_some_down_tabs() -> None:
    ports = ports_of(rdma.parse_infiniband(read(DOWN), DOWN))
    down = [p for p in ports.values() if not p["active"]]
    assert {p["phys_state"] for p in down} == {"Polling", "Disabled"}
    assert all(p["state"] == "DOWN" and p["state_num"] == 1 and p["rate_gbps"] == 40.0 for p in down)
    assert ports["mlx5_0/1"]["rate_gbps"] == 400.0 and ports["mlx5_0/1"]["phys_state_num"] == 5


def test_ibstat_space_indented_ndr() -> None:
    section = rdma.parse_infiniband(read(NDR), NDR)
    ib = [p for p in section["ports"] if p["link_layer"] == "InfiniBand"]
    assert len(ib) == 8 and {p["rate_gbps"] for p in ib} == {400.0}
    assert section["devices"][0]["hca_type"] == "MT4129"


def test_ibstatus() -> None:
    section = rdma.parse_infiniband(read(IBSTATUS), IBSTATUS)
    port = ports_of(section)["mlx5_0/1"]
    assert section["format"] == "ibstatus"
    assert (port["state"], port["state_num"], port["phys_state"]) == ("ACTIVE", 4, "LinkUp")
    assert port["rate_gbps"] == 200.0 and port["rate_text"] == "200 Gb/sec (4X HDR)"
    assert port["link_layer"] == "InfiniBand" and port["src"]["line"] == 1


def test_ibv_devinfo_port_down() -> None:
    section = rdma.parse_infiniband(read(DEVINFO), DEVINFO)
    assert section["format"] == "ibv_devinfo" and [d["name"] for d in section["devices"]] == [
        "mlx5_0",
        "mlx5_1",
    ]
    port = ports_of(section)["mlx5_1/1"]
    assert (port["state"], port["state_num"], port["active"]) == ("DOWN", 1, False)
    assert port["active_mtu"] == 1024 and port["max_mtu"] == 4096 and port["link_layer"] == "Ethernet"
    assert port["rate_gbps"] is None and section["devices"][0]["fw_ver"] == "28.44.1036"


def test_ibdev2netdev_verbose_gives_pci_address_firmware_and_port_state() -> None:
    section = rdma.parse_infiniband(read(IBDEV_V), IBDEV_V)
    assert section["format"] == "ibdev2netdev" and len(section["devices"]) == 6
    first = section["devices"][0]
    assert (first["name"], first["bdf"], first["fw_ver"], first["hca_type"], first["netdevs"]) == (
        "mlx5_0",
        "0000:02:00.0",
        "12.23.1020",
        "MT4115",
        ["enp2s0f0"],
    )
    ports = ports_of(section)
    assert ports["mlx5_0/1"]["active"] and ports["mlx5_0/1"]["netdevs"] == ["enp2s0f0"]
    assert (ports["mlx5_2/1"]["state"], ports["mlx5_2/1"]["active"]) == ("DOWN", False)  # "(DOWN  )"
    assert ports["mlx5_2/1"]["src"]["line"] == 4


def test_ibdev2netdev_port_state_is_the_verbose_column_not_the_netdevs() -> None:
    """``-v`` prints the port's own state: an ACTIVE port whose IPoIB netdev is down is active."""
    section = rdma.parse_infiniband(
        "0000:02:00.1 mlx5_1 (MT4115 - MT1523X04353) CX456A - ConnectX-4 QSFP fw 12.23.1020 port 1 "
        "(ACTIVE) ==> ib1 (Down)\n",
        "p",
    )
    assert section["ports"][0]["state"] == "ACTIVE"
    short = rdma.parse_infiniband(read(IBDEV), IBDEV)  # without -v, the netdev's state stands for it
    assert [(p["device"], p["active"]) for p in short["ports"]] == [("mlx5_0", True), ("mlx5_1", False)]
    assert short["devices"][0]["bdf"] is None  # not printed without -v: never guessed


def test_ibdev2netdev_with_lnet_names_and_interface_lines_between() -> None:
    section = rdma.parse_infiniband(read(IBDEV_LUSTRE), IBDEV_LUSTRE)
    assert [(p["device"], p["netdevs"], p["active"]) for p in section["ports"]] == [
        ("mlx5_13", ["ib4"], True),
        ("mlx5_15", ["ib5"], True),
    ]
    assert section["devices"][1]["bdf"] == "0000:bd:00.1" and section["devices"][1]["fw_ver"] == "20.26.4012"


def test_sysfs_grep_dump() -> None:
    section = rdma.parse_infiniband(read(GREP), GREP)
    ports = ports_of(section)
    assert section["format"] == "sysfs-grep" and len(ports) == 9
    bond = ports["mlx5_bond_0/1"]
    assert bond["link_layer"] == "Ethernet" and bond["rate_gbps"] == 200.0 and bond["state"] == "ACTIVE"
    assert bond["src"]["text"].endswith("ports/1/state:4: ACTIVE")
    assert ports["mlx5_0/1"]["counters"]["excessive_buffer_overrun_errors"] == 15
    assert "np_cnp_sent" not in bond["hw_counters"] and "duplicate_request" in bond["hw_counters"]
    assert ports["mlx5_4/1"]["counters"] == {}  # not in the dump: absent, not zero


def test_ibstat_one_port_active() -> None:
    """`ibstat mlx4_0 2` (infiniband-diags): "CA: 'mlx4_0'", then the stanza at column 0."""
    section = rdma.parse_infiniband(read(PORT_ACTIVE), PORT_ACTIVE)
    assert section["format"] == "ibstat-port" and [d["name"] for d in section["devices"]] == ["mlx4_0"]
    (port,) = section["ports"]
    assert (port["device"], port["port"], port["state"], port["active"]) == ("mlx4_0", 2, "ACTIVE", True)
    assert (port["phys_state"], port["rate_gbps"], port["link_layer"]) == ("LinkUp", 56.0, "InfiniBand")
    assert port["src"] == {"artifact": PORT_ACTIVE, "line": 3, "text": "Port 2:"}


def test_ibstat_one_port_down_old_diags_without_link_layer() -> None:
    (port,) = rdma.parse_infiniband(read(PORT_DOWN), PORT_DOWN)["ports"]
    assert (port["device"], port["port"], port["state"], port["state_num"]) == ("mlx4_0", 2, "DOWN", 1)
    assert (port["phys_state"], port["rate_gbps"], port["link_layer"]) == ("Polling", 10.0, None)
    assert port["active"] is False


@pytest.mark.parametrize(
    ("text", "device", "port"),
    [
        ("State: Down\nPhysical state: Disabled\nRate: 40\n", None, None),  # named by nothing: never guessed
        ("$ ibstat mlx5_3 1\nState: Down\nPhysical state: Disabled\nRate: 40\n", "mlx5_3", 1),
        (
            "root@n1:~# sudo ibstat mlx5_3 1\n\tState: Down\n\tPhysical state: Polling\n\tRate: 40\n",
            "mlx5_3",
            1,
        ),
        ("Port 1:\nState: Down\nPhysical state: Polling\nLink layer: Ethernet\n", None, 1),
    ],
)
def test_ibstat_one_port_stanza_names_only_what_the_paste_names(
    text: str, device: str | None, port: int | None
) -> None:
    (found,) = rdma.parse_infiniband(text, "x")["ports"]
    assert (found["device"], found["port"], found["state"]) == (device, port, "DOWN")


def test_ibstat_one_port_two_stanzas_without_port_lines() -> None:
    text = (
        "State: Down\nPhysical state: Disabled\nRate: 40\nState: Active\nPhysical state: LinkUp\nRate: 400\n"
    )
    ports = rdma.parse_infiniband(text, "x")["ports"]
    assert [(p["state"], p["rate_gbps"], p["src"]["line"]) for p in ports] == [
        ("DOWN", 40.0, 1),
        ("ACTIVE", 400.0, 4),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "#ibstat -p\n0xec0d9a03000c8981\n0xec0d9a03000c8982\n",  # ibstat -p: port GUIDs only
        "mlx4_0\nmlx4_1\n",  # ibstat -l
        "State                           : Active\nPhysical state                  : LinkUp\nSpeed : 100G\n",  # mlxlink
        "State: Active\nRate: 100\n",  # two keys are not a stanza
    ],
)
def test_not_an_ibstat_port_stanza(text: str) -> None:
    assert not rdma.recognise_infiniband(text)
    with pytest.raises(ParseError):
        rdma.parse_infiniband(text, "x")


def test_ibstat_port_guid_list_sample_is_no_reading() -> None:
    from gdsdoctor.capture.detect import recognise

    assert recognise(read(PORT_GUIDS)) is None


def test_state_normalisation() -> None:
    assert rdma.state_of("4: ACTIVE") == ("ACTIVE", 4)
    assert rdma.state_of("PORT_ACTIVE (4)") == ("ACTIVE", 4)
    assert rdma.state_of("Initializing") == ("INIT", 2)
    assert rdma.phys_state_of("LINK_UP (5)") == ("LinkUp", 5)
    assert rdma.phys_state_of("Polling") == ("Polling", 2)
    assert rdma.phys_state_of(None) == (None, None)


# --- infiniband + netdev readers on a fake tree ------------------------------------------------


@pytest.fixture
def host(fs: FakeFilesystem) -> Path:
    root = Path("/host")
    tree = FakeSysfs(root)
    gds_switch_tree(tree)
    tree.add_pci("0000:1a:00.1", parent="0000:17:02.0", cls=NIC, vendor=MELLANOX, driver="mlx5_core")
    active = {
        "state": "4: ACTIVE",
        "phys_state": "5: LinkUp",
        "rate": "400 Gb/sec (4X NDR)",
        "link_layer": "Ethernet",
    }
    down = {
        "state": "1: DOWN",
        "phys_state": "3: Disabled",
        "rate": "40 Gb/sec (4X QDR)",
        "link_layer": "Ethernet",
    }
    ib = tree.add_ib("mlx5_0", "0000:1a:00.0", {1: active})
    (ib / "ports/1/hw_counters").mkdir(parents=True)
    (ib / "ports/1/hw_counters/np_cnp_sent").write_text("12\n")
    (ib / "fw_ver").write_text("28.39.1002\n")
    tree.add_ib("mlx5_1", "0000:1a:00.1", {1: down})
    tree.add_netdev("ens1f0np0", "0000:1a:00.0", mtu=9000)
    tree.add_netdev("ens1f1np1", "0000:1a:00.1", mtu=1500, operstate="down", speed=-1)
    tree.add_netdev("lo", None, mtu=65536, operstate="unknown", speed=None)
    return root


def test_infiniband_reader(host: Path) -> None:
    text = rdma.read_infiniband(host).decode()
    section = rdma.parse_infiniband(text, "sys/class/infiniband.json")
    assert section["format"] == "sysfs"
    devices = {d["name"]: d for d in section["devices"]}
    assert devices["mlx5_0"]["bdf"] == "0000:1a:00.0" and devices["mlx5_0"]["netdevs"] == ["ens1f0np0"]
    assert devices["mlx5_0"]["fw_ver"] == "28.39.1002" and devices["mlx5_0"]["hca_type"] is None
    ports = ports_of(section)
    assert ports["mlx5_0/1"]["rate_gbps"] == 400.0 and ports["mlx5_0/1"]["active"] is True
    assert ports["mlx5_0/1"]["netdevs"] == ["ens1f0np0"] and ports["mlx5_0/1"]["hw_counters"] == {
        "np_cnp_sent": 12
    }
    assert ports["mlx5_1/1"]["state"] == "DOWN" and ports["mlx5_1/1"]["phys_state"] == "Disabled"
    assert '"name": "mlx5_1"' in ports["mlx5_1/1"]["src"]["text"]


def test_netdev_reader(host: Path) -> None:
    interfaces = {i["name"]: i for i in rdma.parse_netdev(rdma.read_netdev(host).decode(), "n")["interfaces"]}
    up, down, lo = interfaces["ens1f0np0"], interfaces["ens1f1np1"], interfaces["lo"]
    assert (up["mtu"], up["operstate"], up["speed_mbps"], up["bdf"]) == (9000, "up", 400000, "0000:1a:00.0")
    assert up["driver"] == "mlx5_core" and up["virtual"] is False
    assert down["speed_mbps"] is None and down["operstate"] == "down"
    assert lo["virtual"] is True and lo["bdf"] is None and lo["mtu"] == 65536


def test_readers_on_this_machine() -> None:
    ib_text = rdma.read_infiniband(Path("/")).decode()
    if Path("/sys/class/infiniband").is_dir():
        ib = rdma.parse_infiniband(ib_text, "i")
        assert len(ib["devices"]) == len(os.listdir("/sys/class/infiniband"))
    else:  # the kernel lists no RDMA device: an answer (the RDMA causes do not apply), not a gap
        ib = rdma.parse_infiniband(ib_text, "i")
        assert ib["devices"] == [] and json.loads(ib_text)["class_absent"] is True
    net = rdma.parse_netdev(rdma.read_netdev(Path("/")).decode(), "n")
    assert sorted(i["name"] for i in net["interfaces"]) == sorted(os.listdir("/sys/class/net"))
    assert {i["name"]: i["mtu"] for i in net["interfaces"]}["lo"] == int(
        Path("/sys/class/net/lo/mtu").read_text()
    )
    assert {i["name"]: i["link_type"] for i in net["interfaces"]}["lo"] == "loopback"  # sysfs type 772


# --- mlnx_qos ----------------------------------------------------------------------------------


def test_mlnx_qos_netarbiter() -> None:
    qos = rdma.parse_mlnx_qos(read(QOS), QOS)
    assert qos["interface"] == "eth4" and qos["trust"] == "dscp" and qos["dcbx_mode"] == "OS controlled"
    assert qos["pfc_enabled_priorities"] == [3] and qos["pfc_buffer"] is None
    assert qos["dscp2prio"]["3"] == [31, 30, 29, 28, 27, 26, 25, 24]
    assert len(qos["tcs"]) == 8 and qos["tcs"][0] == {
        "tc": 0, "ratelimit": "unlimited", "tsa": "vendor", "bw_pct": None, "priorities": [1]
    }  # fmt: skip
    assert qos["ecn_np_enabled_priorities"] is None and qos["cnp_dscp"] is None
    assert qos["src"]["line"] == 3


def test_mlnx_qos_spiderpool_with_ecn() -> None:
    qos = rdma.parse_mlnx_qos(read(SPIDER), SPIDER)
    assert (qos["interface"], qos["rdma_device"]) == ("eth0", "mlx5_0")
    assert qos["pfc_enabled_priorities"] == [5] and qos["pfc_buffer"] == [0, 0, 0, 0, 0, 1, 0, 0]
    assert qos["ecn_np_enabled_priorities"] == list(range(8)) == qos["ecn_rp_enabled_priorities"]
    assert qos["cnp_dscp"] == 48 and qos["rdma_tclass"] == 160 and qos["tcs"] == []


def test_mlnx_qos_pcp_with_bandwidth() -> None:
    text = (
        "DCBX mode: Firmware controlled\nPriority trust state: pcp\nPFC configuration:\n"
        "\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   1   1   0   0   0   \n"
        "tc: 0 ratelimit: unlimited, tsa: ets, bw: 50%\n\t priority:  0\n\t priority:  3\n"
    )
    qos = rdma.parse_mlnx_qos(text, "q")
    assert qos["trust"] == "pcp" and qos["pfc_enabled_priorities"] == [3, 4]
    assert qos["tcs"] == [
        {"tc": 0, "ratelimit": "unlimited", "tsa": "ets", "bw_pct": 50, "priorities": [0, 3]}
    ]


# --- memlock -----------------------------------------------------------------------------------


def test_memlock_reader_matches_getrlimit() -> None:
    section = rdma.parse_memlock(rdma.read_memlock(Path("/")).decode(), "proc/self/memlock.json")
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    if soft == resource.RLIM_INFINITY:
        assert section["soft_unlimited"] is True and section["soft_bytes"] is None
    else:
        assert section["soft_bytes"] == soft and section["soft_unlimited"] is False
    assert section["hard_unlimited"] is (hard == resource.RLIM_INFINITY)


def test_memlock_pasted_forms() -> None:
    assert rdma.parse_memlock("$ ulimit -l\n64\n", "m")["soft_bytes"] == 65536
    unlimited = rdma.parse_memlock("unlimited\n", "m")
    assert unlimited["soft_unlimited"] is True and unlimited["hard_unlimited"] is None
    limits = rdma.parse_memlock(
        "Max locked memory         65536                unlimited            bytes\n", "m"
    )
    assert limits["soft_bytes"] == 65536 and limits["hard_unlimited"] is True and limits["src"]["line"] == 1
    assert rdma.recognise_memlock("$ ulimit -l\n8192\n") and not rdma.recognise_memlock("8192\n")
    # under the job's launcher, as NCCL's maintainers ask (nccl-tests #206)
    launched = "$ srun -N1 bash -c 'ulimit -l'\n8192\n"
    assert rdma.recognise_memlock(launched) and rdma.parse_memlock(launched, "m")["soft_bytes"] == 8192 * 1024
    assert not rdma.recognise_memlock("$ ulimit -l unlimited\n0\n")


# --- recognisers and robustness ----------------------------------------------------------------


@pytest.mark.parametrize("name", IB_FILES)
def test_infiniband_recognised(name: str) -> None:
    text = read(name)
    assert rdma.recognise_infiniband(text)
    assert not rdma.recognise_mlnx_qos(text) and not rdma.recognise_memlock(text)


@pytest.mark.parametrize("name", [QOS, SPIDER])
def test_mlnx_qos_recognised(name: str) -> None:
    assert rdma.recognise_mlnx_qos(read(name)) and not rdma.recognise_infiniband(read(name))


NEGATIVES = [
    ("pci", "lspci-vvv.hgx-h100-dell.pex890xx-gpu-nvme-cx7-excerpt.txt"),
    ("pci", "lspci-tv.asus-esc8000a-e12.epyc-genoa.rtx6000ada-cx7-nvme.txt"),
    ("pci", "numactl-hardware.asus-esc8000a-e12.txt"),
    ("gpu", "nvidia-smi-topo-m.h100-hgx-8gpu-8nic-pix.sglang-30401.txt"),
    ("gpu", "nvidia-smi-q.h100-hgx.535.161.08.gpu0.txt"),
]


@pytest.mark.parametrize(("kind", "name"), NEGATIVES)
def test_recognisers_reject_other_sources(kind: str, name: str) -> None:
    text = read(name, kind)
    assert not rdma.recognise_infiniband(text) and not rdma.recognise_mlnx_qos(text)
    assert not rdma.recognise_memlock(text)


@pytest.mark.parametrize("text", ["", "hello", '{"reader": "pci"}', "[1]"])
def test_parsers_reject_other_text(text: str) -> None:
    for parse in (rdma.parse_infiniband, rdma.parse_netdev, rdma.parse_mlnx_qos, rdma.parse_memlock):
        with pytest.raises(ParseError):
            parse(text, "x")


PARSERS = (rdma.parse_infiniband, rdma.parse_netdev, rdma.parse_mlnx_qos, rdma.parse_memlock)


@given(name=st.sampled_from([*IB_FILES, QOS, SPIDER]), cut=st.integers(0, 9000), drop=st.integers(1, 9))
@settings(max_examples=80)
def test_parsers_survive_mutations(name: str, cut: int, drop: int) -> None:
    lines = read(name)[:cut].split("\n")
    text = "\n".join(line for index, line in enumerate(lines) if index % drop != 1)
    for parse in PARSERS:
        with contextlib.suppress(ParseError):
            parse(text, "x")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=25,
)


@given(value=json_values)
@settings(max_examples=150)
def test_reader_parsers_survive_odd_json(value: object) -> None:
    docs = [
        {"reader": "infiniband", "devices": [value, {"name": "mlx5_0", "attrs": value, "ports": [value]}]},
        {"reader": "infiniband", "devices": [{"name": "m", "ports": [{"port": value, "attrs": value}]}]},
        {"reader": "netdev", "interfaces": [value, {"name": "eth0", "attrs": value, "bdf": value}]},
        {"reader": "memlock", "soft": value, "hard": value},
    ]
    for doc, parse in zip(
        docs, (rdma.parse_infiniband,) * 2 + (rdma.parse_netdev, rdma.parse_memlock), strict=True
    ):
        with contextlib.suppress(ParseError):
            parse(json.dumps(doc, indent=1), "x")


def test_readers_do_not_follow_class_links_out_of_host_root(fs: FakeFilesystem) -> None:
    root = Path("/host")
    fs.create_file("/real/devices/mlx5_9/fw_ver", contents="secret\n")
    fs.create_file("/real/net/eth9/mtu", contents="9000\n")
    (root / "sys/class/infiniband").mkdir(parents=True)
    (root / "sys/class/net").mkdir(parents=True)
    os.symlink("/real/devices/mlx5_9", root / "sys/class/infiniband/mlx5_9")
    os.symlink("/real/net/eth9", root / "sys/class/net/eth9")
    (device,) = rdma.parse_infiniband(rdma.read_infiniband(root).decode(), "i")["devices"]
    assert device["name"] == "mlx5_9" and device["fw_ver"] is None
    (interface,) = rdma.parse_netdev(rdma.read_netdev(root).decode(), "n")["interfaces"]
    assert interface["name"] == "eth9" and interface["mtu"] is None


def test_every_probe_reader_survives_a_missing_root(fs: FakeFilesystem) -> None:
    from gdsdoctor.probes import gpu, pci

    for probe in (*pci.PROBES, *gpu.PROBES, *rdma.PROBES):
        for source in probe.sources:
            if source.reader is not None:
                data = source.reader(Path("/missing"))
                assert data == b"" or probe.section == "memlock"  # memlock is the process's own limit
    section = rdma.parse_memlock(rdma.read_memlock(Path("/missing")).decode(), "m")
    assert "status" not in section and "artifact" not in section


# ---- netdev from a pasted `ip link` -------------------------------------------------------------------


def test_ip_link_gives_each_interfaces_mtu_and_state() -> None:
    text = read(IP_LINK_IB)
    assert rdma.looks_like_ip_link(text) and not rdma.recognise_infiniband(text)
    section = rdma.parse_netdev(text, IP_LINK_IB)
    assert section["format"] == "ip-link"
    assert [(i["name"], i["mtu"], i["operstate"]) for i in section["interfaces"]] == [
        (f"ib{n}", 1500, "down") for n in range(2, 6)
    ]
    assert section["interfaces"][0]["src"]["line"] == 3 and section["interfaces"][0]["bdf"] is None
    # link/infiniband: IPoIB, whose port carries no RoCE GID (the GID rules leave it out)
    # (ib5's link line was cut from the paste: its type stays unknown)
    assert [i["link_type"] for i in section["interfaces"]] == ["infiniband"] * 3 + [None]


def test_ip_link_of_this_machine_and_a_vlan() -> None:
    section = rdma.parse_netdev(read(IP_LINK_VM), IP_LINK_VM)
    by_name = {i["name"]: i for i in section["interfaces"]}
    assert by_name["lo"]["mtu"] == 65536 and by_name["lo"]["operstate"] == "unknown"
    vlan = rdma.parse_netdev(
        "7: ens1f0.100@ens1f0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc noqueue state UP\n", "p"
    )["interfaces"][0]
    assert (vlan["name"], vlan["mtu"], vlan["operstate"]) == ("ens1f0.100", 9000, "up")
