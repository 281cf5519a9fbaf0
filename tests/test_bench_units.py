"""`bench` states its units once: rates in decimal GB/s, as `analyze` of the same run prints them
(issue 33: bench said GiB/s where analyze said GB/s), sizes in whole MiB/GiB (issue 12: `268 MB`,
`1.05 MB blocks` and refusals in GiB were mixed)."""

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


RATE = re.compile(r"\d\s?([kKMGTP]i?B)/s\b")


def test_bench_report_states_its_units_once() -> None:
    text = bench.render_text(_result())
    assert {m[1] for m in RATE.finditer(text)} == {"GB"}, text  # 2.5e9 B/s is 2.5 GB/s, as analyze says
    assert re.search(r"write +2\.5 GB/s +read +3\.1 GB/s", text), text
    sizes = {m[1] for m in UNIT.finditer(text) if m[2] is None}
    assert sizes == {"MiB"} and "256 MiB in 4 job(s), 1 MiB blocks" in text
    assert text.rstrip().endswith("units: rates SI (1 GB/s = 10^9 bytes/s), sizes IEC (1 MiB = 2^20 bytes)")
    iec = bench.render_text(_result(), units="iec")
    assert {m[1] for m in RATE.finditer(iec)} == {"GiB"}


def test_refusal_and_progress_use_the_run_units() -> None:
    with pytest.raises(BenchError) as refused:
        bench.plan_size(free_bytes=300 * bench.MIB, total_bytes=bench.GIB, requested=268 * 10**6, numjobs=4)
    units = {m[1] for m in UNIT.finditer(str(refused.value))}
    assert units and units <= {"MiB", "GiB"}, refused.value
