from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gdsdoctor.errors import ParseError
from gdsdoctor.probes import gpu, pci, rdma

DATA = Path(__file__).parent.parent / "data"
Q = "nvidia-smi-q.h100-hgx.535.161.08.gpu0.txt"
HGX = "nvidia-smi-topo-m.h100-hgx-8gpu-8nic-pix.sglang-30401.txt"
ASUS = "nvidia-smi-topo-m.asus-esc8000a-e12.4gpu-4nic.txt"
DGX2 = "nvidia-smi-topo-mp.dgx2-excerpt.nvidia-gds-config-guide.txt"
CASE030 = "nvidia-smi-topo.txt"
TOPO_FILES = (HGX, ASUS, DGX2, CASE030)


def read(name: str, kind: str = "gpu") -> str:
    return (DATA / kind / name).read_text()


# --- nvidia-smi -q -------------------------------------------------------------------------------


def test_nvidia_smi_q_h100() -> None:
    section = gpu.parse_nvidia_smi_q(read(Q), Q)
    assert section["driver_version"] == "535.161.08" and section["cuda_version"] == "12.2"
    assert section["attached_gpus"] == 8
    (h100,) = section["gpus"]
    assert h100["bus_id"] == "0000:19:00.0" and h100["product_name"] == "NVIDIA H100 80GB HBM3"
    assert h100["persistence_mode"] is True and h100["mig_mode"] == "Disabled"
    assert (h100["link_gen_current"], h100["link_gen_max"], h100["link_gen_host_max"]) == (5, 5, 5)
    assert (h100["link_width_current"], h100["link_width_max"]) == (16, 16)
    assert h100["bar1_total_mib"] == 131072 and h100["bar1_total_bytes"] == 128 << 30
    assert h100["bar1_used_mib"] == 1 and h100["pcie_replays"] == 67 and h100["fb_total_mib"] == 81559
    assert h100["src"]["line"] == 9 and h100["src"]["text"] == "GPU 00000000:19:00.0"


def test_nvidia_smi_q_na_values_are_none() -> None:
    text = "GPU 00000001:3B:00.0\n    Product Name : NVIDIA A10\n    Persistence Mode : N/A\n    PCI\n"
    text += "        GPU Link Info\n            PCIe Generation\n                Max : N/A\n"
    (card,) = gpu.parse_nvidia_smi_q(text, "q")["gpus"]
    assert (
        card["bus_id"] == "0001:3b:00.0" and card["persistence_mode"] is None and card["link_gen_max"] is None
    )


def test_normalise_bus_id() -> None:
    assert gpu.normalise_bus_id("00000000:19:00.0") == "0000:19:00.0"
    assert gpu.normalise_bus_id("0000:C1:00.0") == "0000:c1:00.0"
    assert gpu.normalise_bus_id("junk") is None


# --- nvidia-smi topo -m --------------------------------------------------------------------------


def test_topo_hgx_each_gpu_has_one_pix_nic() -> None:
    section = gpu.parse_nvidia_topo(read(HGX), HGX)
    assert section["has_cpu_affinity"] and section["has_numa_affinity"] and section["has_gpu_numa_id"]
    assert len(section["gpus"]) == 8 and len(section["nics"]) == 8 and len(section["gpu_nic"]) == 64
    assert section["legend"]["NIC7"] == "mlx5_7"
    gpu4 = section["gpus"][4]
    assert (
        gpu4["cpu_affinity"] == "48-95,144-191" and gpu4["numa_affinity"] == 1 and gpu4["gpu_numa_id"] is None
    )
    assert (
        gpu4["links"]["GPU0"] == "NV18"
        and gpu4["best_nic"] == "mlx5_4"
        and gpu4["best_nic_relation"] == "PIX"
    )
    pix = [(p["gpu"], p["device"]) for p in section["gpu_nic"] if p["relation"] == "PIX"]
    assert pix == [(f"GPU{i}", f"mlx5_{i}") for i in range(8)]
    assert section["gpu_nic"][0]["src"]["line"] == 2
    assert section["nics"][7]["device"] == "mlx5_7" and section["nics"][7]["links"]["NIC6"] == "NODE"


def test_topo_asus_gpus_only_node_or_sys_to_nics() -> None:
    section = gpu.parse_nvidia_topo(read(ASUS), ASUS)
    assert {p["relation"] for p in section["gpu_nic"]} == {"NODE", "SYS"}
    assert [g["best_nic_rank"] for g in section["gpus"]] == [3, 3, 3, 3]
    assert section["gpus"][2]["best_nic"] == "mlx5_2" and section["gpus"][2]["numa_affinity"] == 1


def test_topo_dgx2_old_layout_nic_rows_only() -> None:
    section = gpu.parse_nvidia_topo(read(DGX2), DGX2)
    assert not section["has_cpu_affinity"] and section["legend"] == {}
    assert len(section["gpus"]) == 16 and [n["device"] for n in section["nics"]] == [
        f"mlx5_{i}" for i in range(4)
    ]
    gpu0 = section["gpus"][0]
    assert (
        gpu0["best_nic"] == "mlx5_0" and gpu0["best_nic_relation"] == "PIX" and gpu0["cpu_affinity"] is None
    )
    pairs = {(p["gpu"], p["nic"]): p for p in section["gpu_nic"]}
    assert pairs[("GPU2", "mlx5_1")]["relation"] == "PIX" and pairs[("GPU2", "mlx5_1")]["src"]["line"] == 20
    assert section["gpus"][8]["best_nic"] is None  # trimmed matrix: no NIC relation for GPU8


def test_topo_case_without_legend() -> None:
    section = gpu.parse_nvidia_topo(read(CASE030), CASE030)
    assert section["has_numa_affinity"] and not section["has_gpu_numa_id"]
    assert [p["relation"] for p in section["gpu_nic"]] == ["SYS"] * 4
    assert section["nics"][0]["device"] is None and section["gpus"][1]["links"]["GPU0"] == "NV4"


ANSI_TABS = (
    "\x1b[4m\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\x1b[0m\n"
    "GPU0\t X \tPHB\tSYS\t0-11\n"
    "GPU1\tPHB\t X \tPIX\t12-23\n"
    "mlx5_0\tSYS\tPIX\t X \n"
)

NVME_MATRIX = """\
        GPU0    GPU1    NIC0    CPU Affinity    NUMA Affinity   GPU NUMA ID
GPU0     X      NV12    PXB     0-63    0               N/A
GPU1    NV12     X      SYS     64-127  1               N/A
NIC0    PXB     SYS      X

NIC Legend:

  NIC0: mlx5_0

        NVMe0   NVMe1
GPU0    PXB     SYS
GPU1    SYS     PIX

NVMe Legend:

  NVMe0: nvme0n1
  NVMe1: nvme1n1
"""


def test_topo_old_layout_with_ansi_and_tabs() -> None:
    section = gpu.parse_nvidia_topo(ANSI_TABS, "t")
    assert section["columns"] == ["GPU0", "GPU1", "mlx5_0"] and section["has_cpu_affinity"]
    assert section["gpus"][1]["cpu_affinity"] == "12-23" and section["gpus"][1]["best_nic"] == "mlx5_0"
    assert section["gpus"][0]["links"] == {"GPU1": "PHB", "mlx5_0": "SYS"}


def test_topo_nvme_matrix_after_nic_legend() -> None:
    section = gpu.parse_nvidia_topo(NVME_MATRIX, "t")
    assert section["legend"] == {"NIC0": "mlx5_0", "NVMe0": "nvme0n1", "NVMe1": "nvme1n1"}
    assert len(section["gpus"]) == 2  # the NVMe matrix adds links to the same GPU rows
    nvme = {(p["gpu"], p["device"]): p["relation"] for p in section["gpu_nvme"]}
    assert nvme[("GPU0", "nvme0n1")] == "PXB" and nvme[("GPU1", "nvme1n1")] == "PIX"
    assert section["gpus"][1]["numa_affinity"] == 1


@pytest.mark.parametrize("name", TOPO_FILES)
def test_topo_recognised(name: str) -> None:
    text = read(name)
    assert gpu.recognise_nvidia_topo(text) and not gpu.recognise_nvidia_smi_q(text)


NEGATIVES = [
    ("gpu", "nvidia-smi.txt"),
    ("pci", "lspci-tv.asus-esc8000a-e12.epyc-genoa.rtx6000ada-cx7-nvme.txt"),
    ("pci", "lspci-vvv.hgx-h100-dell.pex890xx-gpu-nvme-cx7-excerpt.txt"),
    ("pci", "numactl-hardware.asus-esc8000a-e12.txt"),
    ("rdma", "ibstat.h100-ib-ndr-cx7.all-active.txt"),
    ("rdma", "mlnx_qos.cx-roce-dscp-pfc3.att-netarbiter.txt"),
]


@pytest.mark.parametrize(("kind", "name"), NEGATIVES)
def test_recognisers_reject_other_sources(kind: str, name: str) -> None:
    text = read(name, kind)
    assert not gpu.recognise_nvidia_topo(text) and not gpu.recognise_nvidia_smi_q(text)


def test_q_recognised_and_not_topo() -> None:
    assert gpu.recognise_nvidia_smi_q(read(Q)) and not gpu.recognise_nvidia_topo(read(Q))


def test_parsers_reject_other_text() -> None:
    with pytest.raises(ParseError):
        gpu.parse_nvidia_topo(read("nvidia-smi.txt"), "x")
    with pytest.raises(ParseError):
        gpu.parse_nvidia_smi_q(read(HGX), "x")


@given(name=st.sampled_from([*TOPO_FILES, Q]), cut=st.integers(0, 8000), drop=st.integers(1, 12))
@settings(max_examples=80)
def test_parsers_survive_mutations(name: str, cut: int, drop: int) -> None:
    lines = read(name)[:cut].split("\n")
    text = "\n".join(line for index, line in enumerate(lines) if index % drop != 1)
    for parse in (gpu.parse_nvidia_topo, gpu.parse_nvidia_smi_q):
        with contextlib.suppress(ParseError):
            parse(text, "x")


EXPECTED_SECTION = {
    "lspci-vvv": "lspci",
    "lspci-vmm": "lspci",
    "lspci-nnD": "lspci",
    "lspci.": "lspci",  # plain `lspci` (| grep nvidia) lines
    "lspci-tv": "lspci_tree",
    "numactl-hardware": "numa",
    "nvidia-smi-q": "nvidia_smi",
    "nvidia-smi-topo": "nvidia_topo",
    "ibstat-p.": None,  # `ibstat -p`: port GUIDs only
    "ibstat": "infiniband",
    "ibv_devinfo": "infiniband",
    "ibdev2netdev": "infiniband",
    "ip-link": "netdev",
    "sysfs-class-infiniband": "infiniband",
    "mlnx_qos": "mlnx_qos",
    "rdma-qos": "mlnx_qos",
    "nvidia-smi.": "nvidia_smi",  # the plain nvidia-smi table, read into the same section
    "nvidia-smi-L": "nvidia_smi",
    "nvidia-smi-query-gpu": "nvidia_smi",
}


@pytest.mark.parametrize(
    "path",
    sorted(
        p
        for kind in ("pci", "gpu", "rdma")
        for p in (DATA / kind).rglob("*")
        if p.is_file() and p.name != "SOURCES.md"
    ),
)
def test_each_sample_is_claimed_by_exactly_its_own_section(path: Path) -> None:

    probes = [probe for module in (pci, gpu, rdma) for probe in module.PROBES if probe.recognise]
    claimed = [probe.section for probe in probes if probe.recognise(path.read_text())]
    expected = next(section for prefix, section in EXPECTED_SECTION.items() if path.name.startswith(prefix))
    assert claimed == ([expected] if expected else [])


def test_topo_single_gpu_no_nic() -> None:
    text = "\x1b[4m\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\nGPU0\t X \t0-15\t0\t\tN/A\n"
    section = gpu.parse_nvidia_topo(text, "t")
    (only,) = section["gpus"]
    assert only["links"] == {} and only["cpu_affinity"] == "0-15" and only["numa_affinity"] == 0
    assert only["best_nic"] is None and section["gpu_nic"] == [] and gpu.recognise_nvidia_topo(text)


def test_nvidia_smi_q_two_gpu_blocks() -> None:
    text = read(Q)
    block = text[text.index("GPU 00000000:19:00.0") :]
    second = block.replace("00000000:19:00.0", "00000000:3B:00.0").replace(": 131072 MiB", ": 256 MiB")
    section = gpu.parse_nvidia_smi_q(text + second, Q)
    assert [card["bus_id"] for card in section["gpus"]] == ["0000:19:00.0", "0000:3b:00.0"]
    assert [card["bar1_total_mib"] for card in section["gpus"]] == [131072, 256]
    assert section["gpus"][1]["src"]["line"] == text.count("\n") + 1
