"""app_log_gdr: GDRCopy's failures as its library, its sanity test and UCX print them, and the
cause they point to with gdrdrv's own kernel lines (real samples: tests/data/app_log_gdr/SOURCES.md,
tests/data/dmesg/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gdsdoctor.pipeline import analyze_paths
from gdsdoctor.probes import app_log
from gdsdoctor.probes.app_log_gdr import gdr_error

DATA = Path(__file__).resolve().parents[1] / "data"
CAUSE = "gdrdrv-mismatched-with-nvidia-driver"


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("gdrcopy-sanity-gdrdrv-too-old.gdrcopy-115.log", "gdrdrv_too_old"),
        ("gdrcopy-sanity-pin-buffer-560.gdrcopy-305.log", "gdr_pin_failed"),
        ("ucx-gdr-pin-buffer-failed.gdrcopy-113.log", "gdr_pin_failed"),
    ],
)
def test_each_gdrcopy_failure_is_read_and_answered(name: str, kind: str) -> None:
    text = (DATA / "app_log_gdr" / name).read_text()
    assert app_log.recognise_app_log(text)
    errors = [e for e in app_log.parse_app_log(text, name)["errors"] if e["source"] == "gdrcopy"]
    assert errors and errors[0]["kind"] == kind
    report = analyze_paths([DATA / "app_log_gdr" / name]).report
    finding = next(f for f in report["findings"] if f["id"] == CAUSE)
    assert finding["severity"] == "warning"  # GDS does not use gdrdrv: never a storage drain


def test_the_numbers_the_lines_give() -> None:
    ucx = "[1583370992.161735] [gn0101:301910:0]    gdr_copy_md.c:113  UCX  ERROR gdr_pin_buffer failed. length :3735552 ret:25"
    assert gdr_error(1, ucx, "a")["ret"] == 25
    lib = (
        "ERR:  Error getting the gdrdrv driver version with ioctl error (errno=22). gdrdrv might be too old."
    )
    assert gdr_error(1, lib, "a")["errno"] == 22
    for quiet in ("gdrcopy_sanity", "Total: 28, Passed: 28, Failed: 0, Waived: 0", "gdr_open succeeded"):
        assert gdr_error(1, quiet, "a") is None


def test_gdrdrvs_kernel_lines_are_its_own_not_nvidia_fss() -> None:
    found = {
        f["id"]
        for f in analyze_paths([DATA / "dmesg" / "dmesg-gdrdrv-disagrees-nvidia-p2p.gdrcopy-13.txt"]).report[
            "findings"
        ]
    }
    assert CAUSE in found
    assert not found & {"nvidia-driver-proprietary-refused", "nvidia-fs-unversioned-nvidia-p2p-symbols"}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("copylat-pin-buffer-code-22.gdrcopy-184.log", [(7, "gdr_pin_failed", 22, None)]),
        ("gdrcopy-sanity-gdrdrv-not-loaded.gdrcopy-234.log",
         [(3, "gdr_open_failed", None, None), (4, "gdr_open_failed", None, None), (5, "gdr_open_failed", None, None)]),
        ("gdrcopy-sanity-summary-tokens-570.gdrcopy-324.log",
         [(2, "gdr_pin_failed", None, None),
          (3, "gdrcopy_tests_failed", None, {"total": 28, "passed": 25, "failed": 1, "waived": 2})]),
    ],
)  # fmt: skip
def test_gdrcopys_own_tools_output(name: str, expected: list[tuple[Any, ...]]) -> None:
    text = (DATA / "app_log_gdr" / name).read_text()
    assert app_log.recognise_app_log(text)
    errors = app_log.parse_app_log(text, name)["errors"]
    assert [(e["src"]["line"], e["kind"], e["ret"], e["gdrcopy"]) for e in errors] == expected


def test_a_sanity_run_that_passed_is_no_error() -> None:
    text = (DATA / "app_log_gdr" / "gdrcopy-sanity-all-passed--near-miss.gdrcopy-299.log").read_text()
    assert not app_log.recognise_app_log(text)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("gdrcopy-sanity-gdrdrv-not-loaded.gdrcopy-234.log", "gdr_open_failed"),
        ("gdrcopy-sanity-gdrdrv-too-old.gdrcopy-115.log", "gdrdrv_too_old"),
        ("copylat-pin-buffer-code-22.gdrcopy-184.log", "gdr_pin_failed"),
        ("gdrcopy-sanity-summary-tokens-570.gdrcopy-324.log", "gdrcopy_tests_failed"),
    ],
)
def test_gdrcopys_failures_are_error_lines_of_the_gpu_family(name: str, kind: str) -> None:
    """gdrdrv is a GPU module (its kernel lines are the gpu family's): GDRCopy's own failures are
    error lines of that family, so that one no cause explains never leaves a node OK."""
    parsed = app_log.parse_app_log((DATA / "app_log_gdr" / name).read_text(), "x")
    lines = [line for line in parsed["error_lines"] if line["kind"] == kind]
    assert lines and {line["family"] for line in lines} == {"gpu"}


def test_gdrdrv_not_loaded_is_no_longer_ok() -> None:
    """gdr_open failed: no cause of the catalogue reads it yet; its lines are unexplained, so the
    status is UNKNOWN with the line, not OK (it was OK before the gdr kinds had a family)."""
    report = analyze_paths([DATA / "app_log_gdr" / "gdrcopy-sanity-gdrdrv-not-loaded.gdrcopy-234.log"]).report
    assert report["summary"]["status"] == "UNKNOWN"
    assert report["unexplained"] and {line["family"] for line in report["unexplained"]} == {"gpu"}
