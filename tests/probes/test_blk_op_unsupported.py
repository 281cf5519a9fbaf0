"""A device without an optional command (Write Zeroes, Discard…) is not a failing device: the
block layer's "operation not supported error" on a command that moves no data is its own kind,
never a block I/O error and never an unexplained line, while a read or write that failed with the
same words stays one (real lines from four kernel threads: tests/data/dmesg/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor.pipeline import analyze_paths
from gdsdoctor.probes import dmesg

DATA = Path(__file__).resolve().parents[1] / "data" / "dmesg"
OPTIONAL = sorted(DATA.glob("blk-write-zeroes-unsupported.*.txt"))


def test_three_sources_of_the_optional_command_form() -> None:
    assert len(OPTIONAL) == 3


@pytest.mark.parametrize("path", OPTIONAL, ids=lambda p: p.name)
def test_an_optional_command_refused_is_its_own_kind_and_the_node_stays_ok(path: Path) -> None:
    events = dmesg.parse(path.read_text(), path.name)["events"]
    refused = [e for e in events if e["kind"] == "blk_op_unsupported"]
    assert refused and {e["details"]["op"] for e in refused} == {"WRITE_ZEROES"}
    assert not [e for e in events if e["kind"] == "blk_io_error"]
    report = analyze_paths([path]).report
    assert report["summary"]["status"] == "OK" and report["unexplained"] == []
    assert not [f for f in report["findings"] if f["id"] == "blk-io-errors"]


def test_a_read_refused_with_the_same_words_is_a_failed_read() -> None:
    path = DATA / "blk-read-unsupported-after-format.nvme-lbaf.txt"
    events = dmesg.parse(path.read_text(), path.name)["events"]
    assert next(e["details"].get("op") for e in events if e["kind"] == "blk_io_error") == "READ"
    report = analyze_paths([path]).report
    assert "blk-io-errors" in [f["id"] for f in report["findings"]]
    assert report["summary"]["status"] != "OK"


def test_a_failed_write_beside_refused_write_zeroes_still_fires(tmp_path: Path) -> None:
    refused = (DATA / "blk-write-zeroes-unsupported.nvme-sandisk-skyhawk.txt").read_text()
    failed = "[ 6306.100000] I/O error, dev nvme0n1, sector 340812040 op 0x1:(WRITE) flags 0x0 phys_seg 1 prio class 0\n"
    (tmp_path / "dmesg.txt").write_text(refused + failed)
    report = analyze_paths([tmp_path / "dmesg.txt"]).report
    (finding,) = [f for f in report["findings"] if f["id"] == "blk-io-errors"]
    assert [e["line"] for e in finding["evidence"] if e.get("line")] == [2]
