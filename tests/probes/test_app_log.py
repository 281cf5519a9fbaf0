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
