"""`bench` prints every number of a run in one unit system (issue 12: `268 MB`, `1.05 MB
blocks` and refusals in GiB were mixed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gdsdoctor.commands import bench_run as bench
from gdsdoctor.commands.bench_run import BenchResult, Measurement
from gdsdoctor.errors import BenchError

UNIT = re.compile(r"\d\s?([kKMGTP]i?B|B)(/s)?\b")


def _result() -> BenchResult:
    return BenchResult(
        path=Path("/mnt/ckpt"),
        engine="cpu-direct",
        size_bytes=256 * bench.MIB,
        block_size_bytes=bench.BLOCK_SIZE,
        numjobs=4,
        iodepth=16,
        measurements=(Measurement("cpu-direct", False, 2.5e9, 3.1e9),),
        artifact="bench/fio.json",
        raw=b"",
        facts={},
        elapsed_s=1.2,
        notes=(),
    )


def test_bench_report_uses_one_unit_system() -> None:
    text = bench.render_text(_result())
    units = {m[1] for m in UNIT.finditer(text)}
    assert units == {"MiB", "GiB"}, text
    assert "256 MiB in 4 job(s), 1 MiB blocks" in text
    assert "units: IEC (1 GiB/s = 2^30 bytes/s)" in text
    si = bench.render_text(_result(), units="si")
    assert {m[1] for m in UNIT.finditer(si)} == {"MB", "GB"} and "units: SI" in si


def test_refusal_and_progress_use_the_run_units() -> None:
    with pytest.raises(BenchError) as refused:
        bench.plan_size(free_bytes=300 * bench.MIB, total_bytes=bench.GIB, requested=268 * 10**6, numjobs=4)
    units = {m[1] for m in UNIT.finditer(str(refused.value))}
    assert units and units <= {"MiB", "GiB"}, refused.value
