"""Which NIC carries each NVMe-oF controller, against the GPUs' sockets and switches (issue 23 item 3).

Fake hosts (pyfakefs, tests/probes/fakehost.py) laid out as on HGX-class nodes: per socket a PCIe
switch holding a GPU and a ConnectX NIC; NVMe-oF controllers under
/sys/devices/virtual/nvme-fabrics/ctl with their ``address`` as the kernel writes it
(``traddr=…,trsvcid=…[,host_traddr=…][,src_addr=…][,host_iface=…]``, the forms of the real
list-subsys outputs in tests/data/nvme_fabrics). The interfaces' addresses are an ``ip address``
text in iproute2's layout (tests/data/ip_addr/ip-addr.this-machine-debian12-vm.txt is a real one),
written for each fake host: this machine has no RDMA NIC to print them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from pyfakefs.fake_filesystem import FakeFilesystem

TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS / "probes")]

from fakehost import FakeHost, analyze_fake_host  # noqa: E402

from gdsdoctor.model import Artifact, ArtifactStatus  # noqa: E402
from gdsdoctor.pipeline import analyze_paths  # noqa: E402

ROOT = "/host"
CAUSE = "nvmeof-path-far-from-gpu"
NQN = "nqn.2024-01.io.example:target1"
DATA = TESTS / "data"


def ip_address_text(interfaces: dict[str, str]) -> str:
    """``ip address show`` for ``{netdev: "192.168.10.101/24"}`` (iproute2 6.1's layout)."""
    lines = []
    for index, (name, address) in enumerate(interfaces.items(), start=2):
        lines += [
            f"{index}: {name}: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 4200 qdisc mq state UP group default qlen 1000",
            f"    link/ether b8:3f:d2:00:00:{index:02x} brd ff:ff:ff:ff:ff:ff",
            f"    inet {address} scope global {name}",
            "       valid_lft forever preferred_lft forever",
        ]
    return "\n".join(lines) + "\n"


def two_socket_node(fs: FakeFilesystem) -> FakeHost:
    """Socket 0: switch with GPU 18:00.0 and mlx5_0 (ens1np0); socket 1: GPU 98:00.0 and mlx5_1."""
    host = FakeHost(fs, root=ROOT)
    host.add_proc_basics()
    host.add_numa_nodes(2)
    for node, bus, rdma, netdev in ((0, 0x15, "mlx5_0", "ens1np0"), (1, 0x95, "mlx5_1", "ens2np0")):
        ports = host.add_pcie_switch(
            f"0000:{bus:02x}:01.0",
            f"0000:{bus + 1:02x}:00.0",
            [f"0000:{bus + 2:02x}:00.0", f"0000:{bus + 2:02x}:01.0"],
            numa=node,
        )
        host.add_gpu(f"0000:{bus + 3:02x}:00.0", parent=ports[0], numa=node)
        port = {
            "state": "4: ACTIVE",
            "phys_state": "5: LinkUp",
            "rate": "400 Gb/sec (4X NDR)",
            "link_layer": "Ethernet",
        }
        host.add_nic(
            f"0000:{bus + 4:02x}:00.0", netdev, parent=ports[1], numa=node, rdma_device=rdma, port=port
        )
    return host


def report_of(fs: FakeFilesystem, ip_text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    ip = Artifact(
        "cmd/ip-address.txt", source="ip address show", status=ArtifactStatus.OK, data=ip_text.encode()
    )
    analysis = analyze_fake_host(fs, ROOT, [("ip_addr", ip)])
    findings = {f["id"]: f for f in analysis.report["findings"]}
    causes = {c["id"]: {**c, **findings.get(c["id"], {})} for c in analysis.report["causes"]}
    return analysis.facts["derived"]["fabrics_locality"], causes


def by_gpu(locality: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["gpu_bdf"]: p for p in locality["gpu_paths"]}


def test_a_path_pinned_to_the_far_nic_while_the_near_one_reaches_the_target(fs: FakeFilesystem) -> None:
    host = two_socket_node(fs)
    host.add_nvmeof_subsystem(
        1,
        paths=1,
        states=("live",),
        addresses=["traddr=192.168.10.10,trsvcid=4420,host_traddr=192.168.10.102"],
    )
    locality, causes = report_of(
        fs, ip_address_text({"ens1np0": "192.168.10.101/24", "ens2np0": "192.168.10.102/24"})
    )
    controller = locality["controllers"][0]
    assert (controller["netdev"], controller["basis"], controller["rdma_device"]) == (
        "ens2np0",
        "host_traddr",
        "mlx5_1",
    )
    assert controller["nic_bdf"] == "0000:99:00.0" and controller["subsysnqn"] == NQN
    paths = by_gpu(locality)
    assert paths["0000:98:00.0"]["best"]["relation"] == "switch"  # GPU 1 is beside the NIC it uses
    far = paths["0000:18:00.0"]
    assert far["best"]["relation"] == "cross_socket" and far["best"]["label"] == "SYS"
    assert [n["netdev"] for n in far["closer_nics"]] == ["ens1np0"]
    assert [p["gpu_bdf"] for p in locality["far"]] == ["0000:18:00.0"]
    cause = causes[CAUSE]
    assert cause["outcome"] == "fired" and cause["certainty"] >= 0.7  # both signals
    commands = [step["command"] for step in cause["remediation"]]
    assert (
        "nvme connect -t rdma -a 192.168.10.10 -s 4420 -n nqn.2024-01.io.example:target1 --host-traddr=192.168.10.101"
        in commands
    )


def test_a_path_through_each_socket_s_nic_stays_quiet(fs: FakeFilesystem) -> None:
    host = two_socket_node(fs)
    host.add_nvmeof_subsystem(
        1,
        paths=2,
        states=("live", "live"),
        addresses=[
            "traddr=192.168.10.10,trsvcid=4420,host_traddr=192.168.10.101",
            "traddr=192.168.10.10,trsvcid=4420,host_traddr=192.168.10.102",
        ],
    )
    locality, causes = report_of(
        fs, ip_address_text({"ens1np0": "192.168.10.101/24", "ens2np0": "192.168.10.102/24"})
    )
    assert {p["best"]["relation"] for p in locality["gpu_paths"]} == {"switch"}
    assert locality["far"] == [] and causes[CAUSE]["outcome"] == "clear"


def test_a_down_path_through_the_near_nic_leaves_the_far_one(fs: FakeFilesystem) -> None:
    """Each rail on its own subnet; the socket-0 rail's controller is reconnecting."""
    host = two_socket_node(fs)
    host.add_nvmeof_subsystem(
        1,
        paths=2,
        states=("connecting", "live"),
        addresses=[
            "traddr=192.168.10.10,trsvcid=4420",
            "traddr=192.168.11.10,trsvcid=4420",
        ],
    )
    locality, causes = report_of(
        fs, ip_address_text({"ens1np0": "192.168.10.101/24", "ens2np0": "192.168.11.101/24"})
    )
    controllers = {c["name"]: c for c in locality["controllers"]}
    assert (controllers["nvme1"]["netdev"], controllers["nvme1"]["basis"]) == ("ens1np0", "subnet")
    assert controllers["nvme2"]["netdev"] == "ens2np0"
    far = by_gpu(locality)["0000:18:00.0"]
    assert far["controller"] == "nvme2" and [n["traddr"] for n in far["closer_nics"]] == ["192.168.10.10"]
    assert causes[CAUSE]["outcome"] == "fired"


def test_a_near_nic_on_another_network_is_no_alternative(fs: FakeFilesystem) -> None:
    """The socket-0 NIC is on the compute fabric's subnet: it cannot reach the target. The GPU's
    only path crosses sockets (the weaker signal alone), and no connect is suggested."""
    host = two_socket_node(fs)
    host.add_nvmeof_subsystem(1, paths=1, states=("live",), addresses=["traddr=192.168.11.10,trsvcid=4420"])
    locality, causes = report_of(
        fs, ip_address_text({"ens1np0": "10.0.0.5/24", "ens2np0": "192.168.11.101/24"})
    )
    assert by_gpu(locality)["0000:18:00.0"]["closer_nics"] == [] and locality["suggested_paths"] == []
    cause = causes[CAUSE]
    assert cause["outcome"] == "fired" and cause["certainty"] == pytest.approx(0.4)
    assert not any(
        step["command"].startswith("nvme connect") and "<" not in step["command"]
        for step in cause["remediation"]
    )


def test_two_interfaces_on_the_target_subnet_decide_nothing(fs: FakeFilesystem) -> None:
    """No source address in the controller's address and two interfaces on its subnet: the kernel's
    route picks one, which these facts do not show; the cause stays quiet rather than guess."""
    host = two_socket_node(fs)
    host.add_nvmeof_subsystem(1, paths=1, states=("live",), addresses=["traddr=192.168.10.10,trsvcid=4420"])
    locality, causes = report_of(
        fs, ip_address_text({"ens1np0": "192.168.10.101/24", "ens2np0": "192.168.10.102/24"})
    )
    controller = locality["controllers"][0]
    assert controller["netdev"] is None and controller["candidates"] == ["ens1np0", "ens2np0"]
    assert locality["gpu_paths"] == [] and causes[CAUSE]["outcome"] == "clear"


def test_host_iface_names_the_nic_without_addresses(fs: FakeFilesystem) -> None:
    host = two_socket_node(fs)
    host.add_nvmeof_subsystem(
        1,
        paths=1,
        transport="tcp",
        states=("live",),
        addresses=["traddr=192.168.10.10,trsvcid=4420,host_iface=ens2np0,src_addr=192.168.10.102"],
    )
    locality, _ = report_of(fs, "")
    controller = locality["controllers"][0]
    assert (controller["netdev"], controller["basis"], controller["nic_bdf"]) == (
        "ens2np0",
        "host_iface",
        "0000:99:00.0",
    )
    assert by_gpu(locality)["0000:18:00.0"]["best"]["relation"] == "cross_socket"


# --- real nvme-cli outputs -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sample", "ip_text", "expected"),
    [
        # AWS FSx for ONTAP guide: nvme connect-all -w client_IP: host_traddr and src_addr both printed
        (
            "nvme_fabrics/list-subsys-text.v2.x-tcp-host-traddr-src-addr.aws-fsx-ontap.txt",
            "2: ens5    inet 172.31.25.143/20 brd 172.31.31.255 scope global dynamic ens5\\\n",
            {"nvme2": ("ens5", "src_addr"), "nvme3": ("ens5", "src_addr")},
        ),
        # a tutorial's single TCP path with the kernel's src_addr only
        (
            "nvme_fabrics/list-subsys-text.v2.x-tcp-src-addr.tutorial.txt",
            "2: enp1s0    inet 192.168.1.111/24 brd 192.168.1.255 scope global enp1s0\\\n",
            {"nvme0": ("enp1s0", "src_addr")},
        ),
    ],
)
def test_real_list_subsys_addresses_name_the_interface(
    tmp_path: Path, sample: str, ip_text: str, expected: dict[str, tuple[str, str]]
) -> None:
    ip_file = tmp_path / "ip-o-addr.txt"
    ip_file.write_text(ip_text)
    facts = analyze_paths([DATA / sample, ip_file]).facts
    assert facts["ip_addr"]["status"] == "ok"
    found = {
        c["name"]: (c["netdev"], c["basis"]) for c in facts["derived"]["fabrics_locality"]["controllers"]
    }
    assert found == expected


# --- the source address's RoCE GIDs ------------------------------------------------------------

ROCE_SOURCE = "nvmeof-rdma-source-without-rocev2-gid"


def write_gids(host: FakeHost, bdf: str, device: str, netdev: str, table: dict[int, tuple[str, str]]) -> None:
    """``gids/<i>`` and ``gid_attrs/{types,ndevs}/<i>`` of port 1, as the kernel lays them out."""
    port = host.sysfs.paths[bdf] / "infiniband" / device / "ports/1"
    for index, (gid, kind) in table.items():
        host.sysfs.write(port / "gids" / str(index), gid)
        host.sysfs.write(port / "gid_attrs/types" / str(index), kind)
        host.sysfs.write(port / "gid_attrs/ndevs" / str(index), netdev)


LINK_LOCAL = "fe80:0000:0000:0000:ba3f:d2ff:fe00:0003"
MAPPED = "0000:0000:0000:0000:0000:ffff:c0a8:0a66"  # ::ffff:192.168.10.102


@pytest.mark.parametrize(
    ("state", "types", "fires"),
    [
        ("connecting", ("IB/RoCE v1",), True),  # the port has no RoCE v2: rdma_cm has no v2 GID to use
        ("connecting", ("IB/RoCE v1", "RoCE v2"), False),  # both: the v2 one is used, the cause is elsewhere
        ("live", ("IB/RoCE v1",), False),  # connected over RoCE v1: an L2 fabric carries it
    ],
)
def test_an_rdma_source_address_without_a_rocev2_gid(
    fs: FakeFilesystem, state: str, types: tuple[str, ...], fires: bool
) -> None:
    host = two_socket_node(fs)
    host.add_nvmeof_subsystem(1, paths=1, states=(state,),
                              addresses=["traddr=192.168.10.10,trsvcid=4420,host_traddr=192.168.10.102"])  # fmt: skip
    table = {0: (LINK_LOCAL, "IB/RoCE v1")}
    for offset, kind in enumerate(types):
        table[2 + offset] = (MAPPED, kind)
    write_gids(host, "0000:99:00.0", "mlx5_1", "ens2np0", table)
    locality, causes = report_of(
        fs, ip_address_text({"ens1np0": "192.168.10.101/24", "ens2np0": "192.168.10.102/24"})
    )
    assert locality["controllers"][0]["source_address"] == "192.168.10.102"
    cause = causes[ROCE_SOURCE]
    assert cause["outcome"] == ("fired" if fires else "clear")
    if fires:
        assert "nvme1 from 192.168.10.102 (ens2np0): GIDs v1" in cause["evidence"][0]["text"]


# --- no address names the NIC: an RDMA controller's own numa_node --------------------------------


@pytest.mark.parametrize(
    ("numa_node", "far_gpu"), [("1", "0000:18:00.0"), ("0", "0000:98:00.0"), ("-1", None)]
)
def test_an_rdma_controller_placed_by_its_numa_node(
    fs: FakeFilesystem, numa_node: str, far_gpu: str | None
) -> None:
    """nvme-rdma sets the controller's numa_node to its RDMA device's (ibdev_to_node): with no
    source address and no `ip address`, that node still says which socket carries the path; -1
    (what TCP controllers and multipath heads show) says nothing and decides nothing."""
    host = two_socket_node(fs)
    host.add_nvmeof_subsystem(1, paths=1, states=("live",), addresses=["traddr=192.168.10.10,trsvcid=4420"],
                              numa_node=numa_node)  # fmt: skip
    locality, causes = report_of(fs, "")
    assert locality["controllers"][0]["netdev"] is None
    if far_gpu is None:
        assert locality["gpu_paths"] == [] and causes[CAUSE]["outcome"] == "clear"
        return
    paths = by_gpu(locality)
    assert {bdf: p["best"]["relation"] for bdf, p in paths.items()} == {
        "0000:18:00.0": "cross_socket" if far_gpu == "0000:18:00.0" else "same_numa_node",
        "0000:98:00.0": "cross_socket" if far_gpu == "0000:98:00.0" else "same_numa_node",
    }
    assert {p["best"]["basis"] for p in paths.values()} == {"numa_node"}
    assert [p["gpu_bdf"] for p in locality["far"]] == [far_gpu]
    cause = causes[CAUSE]
    assert cause["outcome"] == "fired" and cause["certainty"] == pytest.approx(0.4)
    assert "the controller's" in cause["evidence"][0]["text"]
