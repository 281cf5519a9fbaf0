"""RoCE GID tables (show_gids, sysfs gids/ and gid_attrs/) and the GID index a job sets.

Samples (tests/data/roce_gids/SOURCES.md): show_gids of a ConnectX-6 with v1/v2 pairs for two
link-local GIDs and one IPv4 (IBM SpectrumScale nsdperf fix), of AMD Pollara ports with v2-only
link-local and ULA IPv6 GIDs (Mooncake issue 1617, excerpt), and an empty table in a pod
(k8s-rdma-sriov-dev-plugin issue 30). The sysfs tree is written as the kernel lays it out:
``gids/<i>`` in full IPv6 form for every slot (unset ones all zero), ``gid_attrs/types/<i>``
("IB/RoCE v1", "RoCE v2") and ``gid_attrs/ndevs/<i>`` for the set ones.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pyfakefs.fake_filesystem import FakeFilesystem

sys.path[:0] = [str(Path(__file__).resolve().parent)]
from fakehost import FakeHost  # noqa: E402

from gdsdoctor.capture.detect import recognise  # noqa: E402
from gdsdoctor.errors import ParseError  # noqa: E402
from gdsdoctor.probes.app_log import parse_app_log  # noqa: E402
from gdsdoctor.probes.roce_gids import parse_roce_gids, read_roce_gids  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"
CX6 = DATA / "roce_gids" / "show_gids.cx6-v1-v2-ipv4.spectrumscale-nsdperf.txt"
AMD = DATA / "roce_gids" / "show_gids.amd-ionic-v2-ipv6-only.mooncake-1617.excerpt.txt"
EMPTY = DATA / "roce_gids" / "show_gids.empty-in-pod.k8s-rdma-sriov-dev-plugin-30.txt"
UNSET = "0000:0000:0000:0000:0000:0000:0000:0000"


def rows(section: dict) -> list[tuple]:
    return [(g["device"], g["port"], g["index"], g["ipv4"], g["version"], g["link_local"], g["netdev"])
            for g in section["gids"]]  # fmt: skip


def test_show_gids_with_v1_and_v2_pairs() -> None:
    section = parse_roce_gids(CX6.read_text(), "show_gids.txt")
    assert section["format"] == "show_gids" and section["n_gids_found"] == 6
    assert rows(section)[3:] == [
        ("mlx5_0", 1, 3, None, "v2", True, "ens1f0"),
        ("mlx5_0", 1, 4, "172.19.0.60", "v1", False, "ens1f0"),
        ("mlx5_0", 1, 5, "172.19.0.60", "v2", False, "ens1f0"),
    ]
    assert section["gids"][5]["gid"] == "0000:0000:0000:0000:0000:ffff:ac13:003c"
    assert section["gids"][5]["src"]["line"] == 9


def test_show_gids_of_ipv6_only_ports() -> None:
    section = parse_roce_gids(AMD.read_text(), "show_gids.txt")
    by_device = {(g["device"], g["index"]): g for g in section["gids"]}
    ula = by_device[("rocep105s0", 1)]
    assert (ula["version"], ula["link_local"], ula["ipv4"]) == ("v2", False, None)
    assert by_device[("rocep193s0f0", 0)]["version"] == "v1" and len(section["gids"]) == 10


def test_an_empty_show_gids_is_a_table_without_gids() -> None:
    section = parse_roce_gids(EMPTY.read_text(), "show_gids.txt")
    assert section["gids"] == [] and section["n_gids_found"] == 0


@pytest.mark.parametrize("path", [CX6, AMD, EMPTY])
def test_show_gids_is_recognised(path: Path) -> None:
    assert recognise(path.read_text()).section == "roce_gids"


def test_other_text_is_refused() -> None:
    with pytest.raises(ParseError):
        parse_roce_gids("mlx5_0 port 1 ==> ens1f0 (Up)\n", "paste")


def test_the_sysfs_reader_skips_unset_slots(fs: FakeFilesystem) -> None:
    host = FakeHost(fs, root="/host")
    host.add_nic("0000:3b:00.0", "ens1f0np0", rdma_device="mlx5_0",
                 port={"state": "4: ACTIVE", "link_layer": "Ethernet"})  # fmt: skip
    port = host.sysfs.paths["0000:3b:00.0"] / "infiniband/mlx5_0/ports/1"
    table = {0: ("fe80:0000:0000:0000:0e42:a1ff:fe5d:4db8", "IB/RoCE v1"),
             1: ("fe80:0000:0000:0000:0e42:a1ff:fe5d:4db8", "RoCE v2"),
             2: ("0000:0000:0000:0000:0000:ffff:c0a8:1401", "IB/RoCE v1"),
             3: ("0000:0000:0000:0000:0000:ffff:c0a8:1401", "RoCE v2")}  # fmt: skip
    for index in range(8):
        gid, kind = table.get(index, (UNSET, None))
        host.sysfs.write(port / "gids" / str(index), gid)
        if kind:
            host.sysfs.write(port / "gid_attrs/types" / str(index), kind)
            host.sysfs.write(port / "gid_attrs/ndevs" / str(index), "ens1f0np0")
    text = read_roce_gids(Path("/host")).decode()
    section = parse_roce_gids(text, "sys/class/infiniband-gids.json")
    assert section["format"] == "sysfs"
    assert [(g["index"], g["version"], g["ipv4"], g["netdev"], g["link_layer"]) for g in section["gids"]] == [
        (0, "v1", None, "ens1f0np0", "Ethernet"),
        (1, "v2", None, "ens1f0np0", "Ethernet"),
        (2, "v1", "192.168.20.1", "ens1f0np0", "Ethernet"),
        (3, "v2", "192.168.20.1", "ens1f0np0", "Ethernet"),
    ]


# --- the index a job sets ----------------------------------------------------------------------

# NCCL's own lines, as in public NCCL INFO logs (tests/data/roce_gids/SOURCES.md)
NCCL_INFO = (
    "tpgds-aihub0003:3828982:3830470 [6] NCCL INFO NCCL_IB_GID_INDEX set by environment to 3.\n"
    "tpgds-aihub0003:3828982:3830470 [6] NCCL INFO NCCL_IB_TC set by environment to 106.\n"
)


def test_nccl_says_which_gid_index_the_environment_set() -> None:
    section = parse_app_log(NCCL_INFO, "nccl.log")
    assert [(s["name"], s["index"], s["src"]["line"]) for s in section["gid_settings"]] == [
        ("NCCL_IB_GID_INDEX", 3, 1)
    ]
    assert section["errors"] == [] and recognise(NCCL_INFO).section == "app_log"


def test_a_pasted_command_sets_it_too() -> None:
    text = "$ mpirun -x NCCL_IB_GID_INDEX=1 -x UCX_IB_GID_INDEX=1 ./all_reduce_perf\n" + NCCL_INFO
    names = [(s["name"], s["index"]) for s in parse_app_log(text, "p")["gid_settings"]]
    assert names == [("NCCL_IB_GID_INDEX", 1), ("UCX_IB_GID_INDEX", 1), ("NCCL_IB_GID_INDEX", 3)]
