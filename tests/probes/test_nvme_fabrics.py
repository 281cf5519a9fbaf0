"""The NVMe-oF readiness facts (issue 23): the nvme_rdma nvfs hook in kallsyms, the OFED release
as the GDS release notes spell it, MLNX_OFED's placeholder modules, the kernel's "no handler
found for transport" and nvme-cli's show-topology namespace lines; on real samples
(tests/data/nvme_fabrics/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor.errors import ParseError
from gdsdoctor.probes import dmesg, nvidia_fs, nvme_cli, nvme_host, system

DATA = Path(__file__).parent.parent / "data" / "nvme_fabrics"


def test_kallsyms_tells_the_fabrics_hook_from_the_pcie_one() -> None:
    filler = "".join(f"ffffffff8100{i:04x} T filler_{i}\n" for i in range(10_000))
    rdma_only = filler + "ffffffffc0b00000 T nvme_rdma_v1_register_nvfs_dma_ops\t[nvme_rdma]\n"
    section = system.parse_kallsyms(rdma_only, "proc/kallsyms")
    assert section["has_nvme_rdma_nvfs_dma_ops"] is True
    assert section["has_nvfs_dma_ops"] is False  # the fabrics hook does not make local NVMe direct
    pcie_only = filler + "ffffffffc0a00000 T nvme_v1_register_nvfs_dma_ops\t[nvme]\n"
    section = system.parse_kallsyms(pcie_only, "proc/kallsyms")
    assert (section["has_nvfs_dma_ops"], section["has_nvme_rdma_nvfs_dma_ops"]) == (True, False)
    excerpt = system.parse_kallsyms("ffffffffc0a00000 T nvme_v1_register_nvfs_dma_ops\t[nvme]\n", "pasted")
    assert excerpt["has_nvme_rdma_nvfs_dma_ops"] is None  # a grep excerpt cannot show absence


@pytest.mark.parametrize(
    ("text", "release"),
    [
        ("MLNX_OFED_LINUX-5.8-1.0.1.1:\n", "5.8"),
        ("MLNX_OFED_LINUX-23.04-0.5.3.3:\n", "23.04"),
        ((DATA / "ofed_info-s.mlnx-ofed-5.4.txt").read_text(), "5.4"),
        ("OFED-internal-24.10-1.1.4:\n", "24.10"),
    ],
)
def test_ofed_release_is_spelled_as_the_release_notes_do(text: str, release: str) -> None:
    assert system.parse_ofed(text, "cmd/ofed_info-s.txt")["release"] == release


@pytest.mark.parametrize(
    ("name", "placeholder", "out_of_tree"),
    [
        ("modinfo-nvme-rdma.mlnx-ofed-dummy.composed.txt", True, True),
        ("modinfo-nvme-rdma.mlnx-ofed-extra.pg-strom.txt", None, True),  # no description line
    ],
)
def test_modinfo_nvme_rdma(name: str, placeholder: bool | None, out_of_tree: bool) -> None:
    text = (DATA / name).read_text()
    assert nvidia_fs.modinfo_recogniser("nvme_rdma")(text)
    assert not nvidia_fs.modinfo_recogniser("nvme")(text)  # nvme-rdma.ko is not nvme.ko
    section = nvidia_fs.modinfo_parser("nvme_rdma")(text, "cmd/modinfo-nvme_rdma.txt")
    assert (section["placeholder"], section["out_of_tree"]) == (placeholder, out_of_tree)


def test_a_real_description_is_no_placeholder() -> None:
    text = "filename: /lib/modules/6.8.0/kernel/drivers/nvme/host/nvme-rdma.ko.zst\ndescription: NVMe host RDMA transport driver\n"
    assert nvidia_fs.modinfo_parser("nvme_rdma")(text, "x")["placeholder"] is False


def test_no_handler_found_for_transport() -> None:
    section = dmesg.parse((DATA / "dmesg-nvme-fabrics-no-handler-rdma.spdk-900.txt").read_text(), "dmesg")
    events = [e for e in section["events"] if e["kind"] == "nvmeof_no_transport"]
    assert [e["details"]["transport"] for e in events] == ["rdma", "rdma", "xx", "rgma", "rdma", "rdma"]


@pytest.mark.parametrize(
    "name",
    ["dmesg-rdma-unknown-symbol-inbox-vs-ofed.spdk-684.txt", "dmesg-nvmet-rdma-disagrees-mlnx-ofed-5.4.txt",
     "dmesg-nvme-fabrics-disagrees-mlnx-ofed-5.4.txt"],
)  # fmt: skip
def test_rdma_symbol_errors_are_module_symbol_mismatches(name: str) -> None:
    section = dmesg.parse((DATA / name).read_text(), "dmesg")
    kinds = {e["kind"] for e in section["events"]}
    assert "module_symbol_mismatch" in kinds
    modules = {e["details"]["module"] for e in section["events"] if e["kind"] == "module_symbol_mismatch"}
    assert modules <= {"rpcrdma", "nvmet_rdma", "nvme_rdma", "nvme_fabrics"}


@pytest.mark.parametrize(
    ("name", "paths", "nsids"),
    [
        ("list-subsys-text.v1.x-rdma-three-paths.smartx.txt", ["nvme11", "nvme12", "nvme13"], [None]),
        ("list-subsys-text.v1.x-rdma-two-ctrls.linux-nvme-2019.txt", ["nvme4", "nvme5"], [None]),
        ("show-topology-text.v2.x-rdma-netapp-eseries.txt", ["nvme1", "nvme2", "nvme3", "nvme4"], [1]),
    ],
)
def test_rdma_subsystem_text(name: str, paths: list[str], nsids: list[int | None]) -> None:
    text = (DATA / name).read_text()
    assert nvme_cli.recognise_subsys(text)
    section = nvme_cli.parse_subsys(text, name)
    assert [p["name"] for p in section["paths"]] == paths
    assert {p["transport"] for p in section["paths"]} == {"rdma"}
    assert {p["state"] for p in section["paths"]} == {"live"}
    assert sorted({p["nsid"] for p in section["paths"]}, key=str) == nsids


def test_host_identity_files() -> None:
    nqn = "nqn.2014-08.org.nvmexpress:uuid:717a9176-ac73-4ea3-829e-e4ccf0b5735f"  # nvme-cli#3268's
    assert nvme_host.recognise_hostnqn(f"$ cat /etc/nvme/hostnqn\n{nqn}\n")
    assert (
        nvme_host.parse_hostnqn(f"{nqn}\n", "etc/nvme/hostnqn")["uuid"]
        == "717a9176-ac73-4ea3-829e-e4ccf0b5735f"
    )
    hostid = "$ cat /etc/nvme/hostid\n717A9176-AC73-4EA3-829E-E4CCF0B5735F\n"
    assert nvme_host.recognise_hostid(hostid)
    assert nvme_host.parse_hostid(hostid, "x")["hostid"] == "717a9176-ac73-4ea3-829e-e4ccf0b5735f"
    assert not nvme_host.recognise_hostid("717a9176-ac73-4ea3-829e-e4ccf0b5735f\n")  # a bare UUID: anything
    with pytest.raises(ParseError):
        nvme_host.parse_hostnqn("not an nqn\n", "x")


def test_the_kernel_refusing_a_host_identity_pair() -> None:
    line = (
        "[  811.402113] nvme_fabrics: found same hostid 2e3b0c44-1c2e-4f3a-9b6d-a0c417e2f5d1 but different "
        "hostnqn nqn.2014-08.org.nvmexpress:uuid:717a9176-ac73-4ea3-829e-e4ccf0b5735f\n"
    )
    event = dmesg.parse(line, "dmesg")["events"][0]
    assert event["kind"] == "nvmeof_host_identity"
    assert event["details"]["hostid"] == "2e3b0c44-1c2e-4f3a-9b6d-a0c417e2f5d1"


@pytest.mark.parametrize(
    ("name", "device", "format_", "lba", "ms"),
    [
        ("id-ns-text.v1.x-512-no-metadata.linux-nvme.txt", "nvme0n1", 0, 512, 0),
        ("id-ns-text.v2.x-4k-ms64-in-use.wd-sn840.excerpt.txt", None, 4, 4096, 64),
        ("id-ns-text.v2.x-512-ms8-pi.enterprise.excerpt.txt", "nvme11n1", 1, 512, 8),
        ("id-ns-json.v2.x-512-no-metadata.excerpt.json", None, 0, 512, 0),
    ],
)
def test_id_ns_format_in_use(name: str, device: str | None, format_: int, lba: int, ms: int) -> None:
    text = (DATA / name).read_text()
    assert nvme_cli.recognise_id_ns(text) and not nvme_cli.recognise_id_ctrl(text)
    namespace = nvme_cli.parse_id_ns(text, name)["namespaces"][0]
    assert (namespace["device"], namespace["format"], namespace["lba_bytes"], namespace["metadata_bytes"]) == (
        device, format_, lba, ms)  # fmt: skip


def test_flbas_upper_bits_name_formats_past_16() -> None:
    text = "NVME Identify Namespace 1:\nflbas   : 0x21\n"  # bits 6:5 = 1 -> format 0x11 = 17
    assert nvme_cli.parse_id_ns(text, "x")["namespaces"][0]["format"] == 17


def test_id_ctrl_thresholds_in_celsius() -> None:
    entry = nvme_cli.parse_id_ctrl(
        '{"vid": 5197, "sn": "S", "mn": "M", "fr": "F", "wctemp": 353, "cctemp": 358}', "x"
    )
    assert (entry["controllers"][0]["wctemp_c"], entry["controllers"][0]["cctemp_c"]) == (80, 85)


def test_discovery_conf_and_the_autoconnect_unit() -> None:
    conf = (
        "# Used for extracting default parameters for discovery\n#\n"
        "-t rdma -a 192.168.100.10 -s 4420 --host-iface=ens1f0np0\n--transport=tcp --traddr=10.0.0.1 --trsvcid=8009\n"
    )
    assert nvme_host.recognise_discovery_conf(conf)
    entries = nvme_host.parse_discovery_conf(conf, "etc/nvme/discovery.conf")["entries"]
    assert [(e["transport"], e["traddr"], e["trsvcid"], e["host_iface"]) for e in entries] == [
        ("rdma", "192.168.100.10", "4420", "ens1f0np0"), ("tcp", "10.0.0.1", "8009", None)]  # fmt: skip
    assert nvme_host.parse_discovery_conf("# only the shipped comments\n", "x")["entries"] == []
    for state, enabled in (("enabled", True), ("disabled", False), ("masked", False)):
        text = f"$ systemctl is-enabled nvmf-autoconnect.service\n{state}\n"
        assert nvme_host.recognise_autoconnect(text)
        assert nvme_host.parse_autoconnect(text, "x")["enabled"] is enabled
    assert not nvme_host.recognise_autoconnect("enabled\n")  # one word alone names no unit
