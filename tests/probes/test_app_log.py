"""app_log: application output with cuFile errors (real outputs from the GDS cases)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gdsdoctor.errors import ParseError
from gdsdoctor.probes import app_log

DATA = Path(__file__).resolve().parents[1] / "data"
SAMPLES = sorted(p for p in (DATA / "app_log").iterdir() if p.suffix != ".md")


def parse(name: str) -> dict:
    path = DATA / "app_log" / name
    return app_log.parse_app_log(path.read_text(), name)


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_every_sample_is_recognised_and_parsed(path: Path) -> None:
    text = path.read_text()
    assert app_log.recognise_app_log(text)
    assert app_log.parse_app_log(text, path.name)["kinds"]


def test_fastsafetensors_5016() -> None:
    section = parse("fastsafetensors-028--vllm.log")
    error = section["errors"][0]
    assert (error["code"], error["name"], error["kind"]) == (
        5016,
        "CU_FILE_INVALID_MAPPING_SIZE",
        "mapping_size",
    )
    assert error["api"] == "cuFileBufRegister"
    assert error["src"]["line"] == 2
    assert section["codes"] == [5016]


def test_dali_internal_error_without_code() -> None:
    section = parse("dali-4718--dali-error.txt")
    assert section["codes"] == [5030]
    assert section["errors"][0]["kind"] == "internal_error"
    assert section["errors"][0]["src"]["line"] == 2


def test_kvikio_compat_banner_and_header() -> None:
    section = parse("kvikio-283--single-node-io.txt")
    assert section["compat_mode"] is True
    assert [c["src"]["line"] for c in section["compat"]] == [4, 5, 10]
    kvikio = section["kvikio"]
    assert kvikio["gpu_name"] == "NVIDIA RTX A5000"
    assert kvikio["bar1_total_bytes"] == 32 * 1024**3
    assert kvikio["gds_driver"] is None  # "N/A (Compatibility Mode)"
    assert kvikio["config_path"] == "/usr/local/cuda-12.2/gds/cufile.json"
    assert section["gpus"] == [
        {"bar1_total_bytes": 32 * 1024**3, "src": kvikio["src"], "name": "NVIDIA RTX A5000"}
    ]


def test_gdsio_verify_and_sample_io_failures() -> None:
    verify = parse("gdsnvfs-014--gdsio_verify.txt")
    assert verify["kinds"] == ["io_failed", "memory_not_registered"]
    assert [e["api"] for e in verify["errors"]] == ["cuFileRead", None]
    sample = parse("nvmevirt-044--cufile_sample_002.txt")
    assert sample["kinds"] == ["io_failed"] and sample["errors"][0]["src"]["line"] == 5


def test_operator_container_crash() -> None:
    section = parse("gpuoperator-2416--repro.txt")
    assert section["kinds"] == ["operator_nvidia_fs_ctr_failed"]
    assert section["operator"][0]["src"]["line"] == 1


@pytest.mark.parametrize(
    ("line", "code", "kind"),
    [
        ("RuntimeError: cuFile error (5033): NVFS driver initialization error", 5033, "nvfs_setup_error"),
        ("cuFileHandleRegister failed: CU_FILE_IO_DISABLED", 5034, "io_disabled"),
        ("cuFileDriverOpen error: driver not initialized", 5001, "driver_not_initialized"),
        (
            "file register error: GPUDirect Storage not supported on current file filename:/x",
            5008,
            "io_not_supported",
        ),
        ("cuFile error (5032): whatever", None, "cufile_error"),
    ],
)
def test_codes_from_numbers_names_and_messages(line: str, code: int | None, kind: str) -> None:
    error = app_log.parse_app_log(line + "\n", "app.txt")["errors"][0]
    assert (error["code"], error["kind"]) == (code, kind)


def test_code_table_has_no_5032_and_maps_both_ways() -> None:
    assert 5032 not in app_log.CODES
    assert all(app_log.BY_NAME[name] == code for code, name in app_log.CODES.items())


NEGATIVE = [
    DATA / "cufile" / "tinygrad-051--cufile.log",
    DATA / "cufile" / "gdsnvfs-078--cufile.log",
    DATA / "gdscheck" / "nccl-1637--gdscheck-p.txt",
    DATA / "dmesg" / "gdsnvfs-034-nvfs-proprietary-driver-gpl-symbols.dmesg.txt",
    DATA / "nvidia_fs" / "gdsnvfs-035--dkms-make.log",
    DATA / "bench" / "gdsio-output.nvidia-getting-started-example1.txt",
]


@pytest.mark.parametrize("path", NEGATIVE, ids=[p.name for p in NEGATIVE])
def test_other_sources_are_not_claimed(path: Path) -> None:
    assert not app_log.recognise_app_log(path.read_text())


def test_text_without_a_cufile_failure_is_rejected() -> None:
    with pytest.raises(ParseError):
        app_log.parse_app_log("Loading safetensors: 100% done\n", "app.txt")


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(SAMPLES), st.integers(min_value=0, max_value=4000), st.integers(min_value=0, max_value=40)
)
def test_truncated_and_line_dropped_samples(path: Path, cut: int, drop: int) -> None:
    lines = path.read_text()[:cut].split("\n")
    text = "\n".join(lines[:drop] + lines[drop + 1 :])
    try:
        section = app_log.parse_app_log(text, path.name)
    except ParseError:
        return
    assert all(e["src"]["artifact"] == path.name for e in section["errors"])


# --- gdsio IO failures, NCCL and UCX RDMA errors ----------------------------------------------------


def test_gdsio_io_failures_with_ret_and_errno() -> None:
    section = parse("gdsnvfs-057--gdsio-io-failed.txt")
    assert section["kinds"] == ["io_failed"]
    found = [(e["src"]["line"], e["source"], e["ret"], e["errno"]) for e in section["errors"]]
    assert found == [
        (1, "gdsio", 0, None),
        (2, "gdsio", -5, None),
        (3, "gdsio", -5, 22),
        (4, "gdsio", -5, 22),
    ]


def test_the_kernels_nvidia_fs_io_failure_is_not_gdsios() -> None:
    assert not app_log.recognise_app_log("[Sat Sep  9 20:24:26 2023] nvidia-fs:write IO failed :-512\n")


def test_nccl_local_protection_error_over_infiniband() -> None:
    section = parse("nccl-928--net-ib-error-4-vendor-81.log")
    assert section["kinds"] == ["rdma_local_protection_error"]
    first = section["errors"][0]
    assert (first["source"], first["src"]["line"]) == ("nccl", 1) and len(section["errors"]) == 2
    rdma = first["rdma"]
    assert (rdma["status"], rdma["opcode"], rdma["vendor_err"], rdma["direction"]) == (4, 32564, 81, "Send")
    assert rdma["link_layer"] == "IB" and rdma["peer"] == "fe80::966d:ae03:8b:df78%ib0<53249>"


def test_nccl_retry_exceeded_on_roce_names_its_hca() -> None:
    section = parse("nccl-1698--net-ib-status-12-vendor-129-roce.log")
    assert section["kinds"] == ["rdma_retry_exceeded"]
    assert [e["src"]["line"] for e in section["errors"]] == [1, 6]  # INFO lines are no errors
    rdma = section["errors"][0]["rdma"]
    assert (rdma["status"], rdma["vendor_err"], rdma["device"], rdma["link_layer"], rdma["direction"]) == (
        12,
        129,
        "mlx5_10",
        "RoCE",
        "Recv",
    )


@pytest.mark.parametrize(
    ("line", "kind", "status"),
    [
        # the pre-2.12 wording (NVIDIA/nccl #214, #523): no peer, "error N"
        ("[0] transport/net_ib.cc:818 NCCL WARN NET/IB : Got completion with error 4, opcode 0, len 32694, vendor err 81",
         "rdma_local_protection_error", 4),
        ("gh-3714u15:7038:7053 [0] ib_plugin.c:1007 NCCL WARN NET/IB : Got completion from peer 10.1.32.3<42519> "
         "with error 5, opcode 0, len 0, vendor err 249", "rdma_completion_error", 5),
        ("x:1:2 [0] NCCL WARN NET/IBP:Got completion from peer 7.6.13.83<36315> with status=12 opcode=32698 len=32696 "
         "vendor err 129 (Send)", "rdma_retry_exceeded", 12),
        ("[ast1815:6807 :0:6807] ib_mlx5_log.c:115  FATAL: Error on mlx5_3:1 QP 0xe6d7 wqe[7821]: Transport retry "
         "count exceeded (synd 0x15 vend 0x81) opcode SEND", "rdma_retry_exceeded", 12),
    ],
)  # fmt: skip
def test_completion_errors_in_every_wording(line: str, kind: str, status: int) -> None:
    (error,) = app_log.parse_app_log(line + "\n", "app.txt")["errors"]
    assert (error["kind"], error["rdma"]["status"]) == (kind, status)


def test_old_ucx_wording_names_device_and_port() -> None:
    line = "[ast1815:6807 :0:6807] ib_mlx5_log.c:115  FATAL: Error on mlx5_3:1 QP 0xe6d7 wqe[7821]: Transport retry"
    rdma = app_log.parse_app_log(line + " count exceeded (synd 0x15 vend 0x81) opcode SEND\n", "u")["errors"][
        0
    ]["rdma"]
    assert (rdma["device"], rdma["port"], rdma["vendor_err"], rdma["link_layer"]) == ("mlx5_3", 1, 0x81, None)


def test_ucx_retry_exceeded_roce_and_ib() -> None:
    roce = parse("ucx-6000--transport-retry-exceeded-roce.log")
    assert [e["src"]["line"] for e in roce["errors"]] == [1, 3, 5, 7]  # not the "DCI QP" detail lines
    rdma = roce["errors"][0]["rdma"]
    assert (rdma["device"], rdma["port"], rdma["link_layer"], rdma["vendor_err"]) == (
        "mlx5_0",
        1,
        "RoCE",
        0x81,
    )
    ib = parse("ucx-9590--transport-retry-exceeded-ib.log")  # its first line lost its "[" as posted
    assert [e["rdma"]["link_layer"] for e in ib["errors"]] == ["IB", "IB"] and ib["errors"][0]["src"][
        "line"
    ] == 1


def test_enomem_from_nccl_and_ucx_and_the_limit_the_log_states() -> None:
    nccl = parse("deepep-143--nccl-ibv-create-cq-enomem.log")
    assert [(e["kind"], e["api"], e["src"]["line"]) for e in nccl["errors"]] == [
        ("rdma_enomem", "ibv_create_cq", 1),
        ("rdma_enomem", "ibv_create_cq", 6),
        # the proxy's own warnings after the failure: the NCCL family's reader (app_log_nccl)
        ("nccl_warn", None, 16),
        ("nccl_warn", None, 18),
    ]
    assert nccl["memlock"] is None  # NCCL does not print the limit
    ucx = parse("ucx-8746--ibv-create-cq-enomem-memlock-64k.log")
    assert ucx["kinds"] == ["rdma_enomem"] and ucx["errors"][0]["rdma"]["device"] == "mlx5_0"
    assert ucx["memlock"] == {
        "soft_bytes": 64 * 1024,
        "soft_unlimited": False,
        "src": ucx["errors"][0]["src"],
    }


def test_a_verbs_failure_that_is_not_enomem() -> None:
    section = parse("nccl-1842--ibv-reg-mr-iova2-einval.log")
    assert [(e["kind"], e["api"]) for e in section["errors"]] == [("rdma_verbs_failed", "ibv_reg_mr_iova2")]
    ucx = app_log.parse_app_log(
        "ib_iface.c:618  UCX  ERROR ibv_create_cq(cqe=4096) failed: Invalid argument\n", "u"
    )
    assert ucx["kinds"] == ["rdma_verbs_failed"]


def test_memlock_from_a_pasted_ulimit_a() -> None:
    text = (
        "[1650000000.1] [n1:1:0]  ib_device.c:1124 UCX  ERROR ibv_create_cq(cqe=4096) failed: Cannot allocate memory\n"
        "max locked memory       (kbytes, -l) 64\n"
    )
    hint = app_log.parse_app_log(text, "u")["memlock"]
    assert (hint["soft_bytes"], hint["soft_unlimited"], hint["src"]["line"]) == (65536, False, 2)


@pytest.mark.parametrize(
    "text",
    [
        "node2:14159:14172 [0] NCCL INFO NET/IB: Dev 0 Port 1 qpn 58 mtu 3 GID 3 (0/A10B0A0AFFFF0000)\n",
        "[1643394930.913056] [cirrus3:1292923:0]  ib_md.c:816  UCX  DEBUG registered memory 0x7f56f0f20ba0 on mlx5_0\n",
        (DATA / "dmesg" / "dmesg-nvmeof-rdma-mlx5-pi-mr-pool-einval.txt").read_text(),
    ],
    ids=["nccl-info", "ucx-debug", "kernel-log-with-mlx5"],
)
def test_healthy_nccl_ucx_lines_and_kernel_rdma_lines_are_not_application_errors(text: str) -> None:
    assert not app_log.recognise_app_log(text)
