"""``gdsdoctor bench``: real fio on loop-mounted XFS and ext4, sizing, time limit, GDS paths, verdicts."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gdsdoctor.checkpoint import line_rate
from gdsdoctor.checkpoint import stall as estimate
from gdsdoctor.commands import bench_run as bench
from gdsdoctor.errors import BenchError
from gdsdoctor.probes import bench as bench_probes
from tests.loopfs import loop_mount, skip_unless_root_with

DATA = Path(__file__).parent / "data" / "bench"
MIB = 2**20
GIB = 2**30


@pytest.fixture(params=["xfs", "ext4"])
def loop_fs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """A 2 GiB sparse image, formatted, loop-mounted; unmounted and detached afterwards."""
    fstype = request.param
    skip_unless_root_with("fio", f"mkfs.{fstype}")
    mountpoint = tmp_path / "mnt"
    with loop_mount(fstype, tmp_path / f"{fstype}.img", 2 * GIB, mountpoint):
        yield mountpoint


def assert_no_fio_left(directory: Path) -> None:
    for _ in range(50):  # fio's workers run in their own sessions: they must be gone too
        if subprocess.run(["pgrep", "-f", "--", f"--directory={directory}"], capture_output=True).returncode:
            return
        time.sleep(0.1)
    pytest.fail("fio processes survived")


def leftovers(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.startswith(".gdsdoctor-bench-")]


# --- real runs -------------------------------------------------------------------------------


def test_bench_runs_fio_on_loop_filesystem(loop_fs: Path) -> None:
    calls: list[tuple[float, str]] = []
    result = bench.run(
        loop_fs, size_bytes=64 * MIB, time_limit_s=120, on_progress=lambda f, m: calls.append((f, m))
    )
    assert result.engine == "cpu-direct"
    assert result.write_bytes_per_s and result.write_bytes_per_s > 0
    assert result.read_bytes_per_s and result.read_bytes_per_s > 0
    assert result.size_bytes == 64 * MIB
    assert result.artifact == "bench/fio.json"
    assert leftovers(loop_fs) == []  # the temporary directory is gone
    assert calls[0][0] == 0.0 and calls[-1] == (1.0, "done")
    assert [f for f, _ in calls] == sorted(f for f, _ in calls)  # progress never goes backwards
    # the raw artifact is real fio JSON, parsed by the probe like a bundle's
    facts = bench_probes.parse_fio(result.raw.decode(), result.artifact)
    assert [job["name"] for job in facts["jobs"]] == ["write", "read"]
    assert all(job["direct"] and job["ioengine"] == "libaio" for job in facts["jobs"])
    assert facts["jobs"][0]["write"]["io_bytes"] == 64 * MIB
    assert facts["aggregate"]["write_bytes_per_s"] == result.write_bytes_per_s
    assert result.notes == ("I/O path: cpu-direct",)


def test_bench_refuses_to_fill_the_filesystem(loop_fs: Path) -> None:
    with pytest.raises(BenchError, match="refusing to write"):
        bench.run(loop_fs, size_bytes=1536 * MIB)
    assert leftovers(loop_fs) == []


def test_bench_time_limit_kills_fio_and_cleans_up(loop_fs: Path) -> None:
    with pytest.raises(BenchError, match="did not finish within the time limit"):
        bench.run(loop_fs, size_bytes=900 * MIB, time_limit_s=0.3)
    assert leftovers(loop_fs) == []
    assert_no_fio_left(loop_fs)


def test_interrupted_bench_kills_fio_and_cleans_up(loop_fs: Path) -> None:
    """Ctrl-C (or a broken progress display) must not leave fio running in its own session."""

    def interrupt(fraction: float, message: str) -> None:
        if 0 < fraction < 1:  # while fio runs
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        bench.run(loop_fs, size_bytes=900 * MIB, on_progress=interrupt)
    assert leftovers(loop_fs) == []
    assert_no_fio_left(loop_fs)


# --- sizing and errors -----------------------------------------------------------------------


def test_plan_size_defaults_and_limits() -> None:
    free, total = 100 * GIB, 200 * GIB
    assert bench.plan_size(free, total, None, 4) == 5 * GIB  # 5 % of free space
    assert bench.plan_size(1000 * GIB, 2000 * GIB, None, 4) == 8 * GIB  # capped
    assert bench.plan_size(GIB, 2 * GIB, None, 4) == 64 * MIB  # floor
    assert bench.plan_size(free, total, 100 * MIB + 5, 4) == 100 * MIB  # whole blocks per job
    with pytest.raises(BenchError, match="at most 50% of the free space"):
        bench.plan_size(free, total, 60 * GIB, 4)
    with pytest.raises(BenchError, match="10% of the filesystem free"):
        bench.plan_size(25 * GIB, 200 * GIB, 10 * GIB, 4)  # would leave 15 GiB of 200 GiB
    with pytest.raises(BenchError, match="positive"):
        bench.plan_size(free, total, 0, 4)


def test_bench_errors_are_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(BenchError, match="not a directory"):
        bench.run(tmp_path / "nope")
    with pytest.raises(BenchError, match="time limit must be positive"):
        bench.run(tmp_path, time_limit_s=0)
    with pytest.raises(BenchError, match="unknown engine"):
        bench.run(tmp_path, engine="warp")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BenchError, match="fio is not installed") as info:
        bench.run(tmp_path, size_bytes=64 * MIB, engine="cpu-direct")
    assert "\n" not in str(info.value)


FAKE_GDSIO = """#!/bin/sh
# stands in for gdsio: prints one result line in gdsio's format, shaped by -x and -I
xfer=GPUD; io=READ; rate=6.5
while [ $# -gt 0 ]; do
  case "$1" in
    -x) [ "$2" = 2 ] && xfer=CPU_GPU && rate=7.5 ;;
    -I) [ "$2" = 1 ] && io=WRITE ;;
  esac
  shift
done
echo "IoType: $io XferType: $xfer Threads: 2 DataSetSize: 65536/65536(KiB) IOSize: 1024(KiB)" \
     "Throughput: $rate GiB/sec, Avg_Latency: 300.0 usecs ops: 64 total_time 0.01 secs"
"""


def test_gdsio_engine_runs_gpud_and_cpu_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tools, work = tmp_path / "bin", tmp_path / "work"
    tools.mkdir()
    work.mkdir()
    fake = tools / "gdsio"
    fake.write_text(FAKE_GDSIO)
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    if shutil.which("fio") and bench.fio_has_libcufile(shutil.which("fio") or ""):
        pytest.skip("this fio has libcufile: auto would pick it")
    result = bench.run(work, size_bytes=64 * MIB)
    assert result.engine == "gdsio"
    assert result.artifact == "bench/gdsio.txt"
    assert [m.label for m in result.measurements] == ["gdsio GPUD", "gdsio CPU_GPU"]
    assert result.write_bytes_per_s == pytest.approx(6.5 * GIB)
    assert result.gds_slower_than_cpu is True  # 6.5 < 7.5 GiB/s: compat mode or topology
    assert result.raw.decode().count("$ ") == 4  # commands kept in the artifact
    assert bench_probes.recognise_gdsio(result.raw.decode())
    assert leftovers(work) == []


def test_libcufile_plan_measures_cufile_and_posix() -> None:
    plan = bench.Plan("libcufile", 64 * MIB, 4, 1, "fio")
    argv = bench._fio_argv(plan, Path("/x"), Path("/x/out.json"))
    assert "--ioengine=libcufile" in argv and "--thread=1" in argv and "--direct=1" in argv
    names = [a for a in argv if a.startswith("--name=")]
    assert names == ["--name=write", "--name=read", "--name=write-posix", "--name=read-posix"]
    assert argv.count("--cuda_io=cufile") == 2 and argv.count("--cuda_io=posix") == 2
    assert "--runtime" not in " ".join(argv) and "--time_based" not in argv


# --- expected line rate and verdicts -----------------------------------------------------------


def test_pcie_link_rates() -> None:
    assert line_rate.pcie_link_bytes_per_s(4, 4) == pytest.approx(7.877e9, rel=1e-3)
    assert line_rate.pcie_link_bytes_per_s(5, 16) == pytest.approx(63.02e9, rel=1e-3)
    assert line_rate.pcie_link_bytes_per_s(3, 4) == pytest.approx(3.938e9, rel=1e-3)
    assert line_rate.pcie_link_bytes_per_s(2, 1) == pytest.approx(0.5e9)
    with pytest.raises(BenchError):
        line_rate.pcie_link_bytes_per_s(7, 4)
    with pytest.raises(BenchError):
        line_rate.pcie_link_bytes_per_s(4, 3)


def test_expected_throughput_takes_the_narrowest_component() -> None:
    local = line_rate.expected_throughput(pcie_gen=4, pcie_width=4, drives=4)
    assert local.limited_by == "drives"
    assert local.bytes_per_s == pytest.approx(4 * 7.877e9 * 0.85, rel=1e-3)
    spec = line_rate.expected_throughput(pcie_gen=4, pcie_width=4, drives=4, drive_bytes_per_s=3.5e9)
    assert spec.bytes_per_s == pytest.approx(14e9)  # write spec below the link
    fabric = line_rate.expected_throughput(pcie_gen=4, pcie_width=4, drives=8, nic_gbit_s=100)
    assert fabric.limited_by == "network"
    assert fabric.bytes_per_s == pytest.approx(12.5e9 * 0.95)
    assert set(fabric.components) == {"drives", "network"}
    with pytest.raises(BenchError, match="nothing to compute"):
        line_rate.expected_throughput()
    with pytest.raises(BenchError, match="both"):
        line_rate.expected_throughput(pcie_gen=4)


@pytest.mark.parametrize(
    ("ratio", "level"),
    [(1.2, "suspect"), (1.05, "ok"), (0.85, "ok"), (0.84, "degraded"), (0.60, "degraded"), (0.59, "poor")],
)
def test_verdict_thresholds(ratio: float, level: str) -> None:
    result = line_rate.verdict(ratio * 10e9, 10e9)
    assert result.level == level
    assert result.ratio == pytest.approx(ratio)


def gdsio_runs(name: str) -> list[dict]:
    return bench_probes.parse_gdsio((DATA / name).read_text(), name)["runs"]


def test_reference_outputs_through_the_analysis() -> None:
    """Published gdsio results against the ceilings of their documented hardware."""
    # DGX-2: RAID0 of two Gen3 x4 NVMe (~3.4 GB/s each); GPU2 on the same switch, GPU12 across.
    dgx2 = gdsio_runs("gdsio-output.dgx2-nvme-raid0-same-vs-cross-switch.nvidia-gds-config-guide.txt")
    ceiling = line_rate.expected_throughput(pcie_gen=3, pcie_width=4, drives=2, drive_bytes_per_s=3.4e9)
    assert ceiling.bytes_per_s == pytest.approx(2 * 3.938e9 * 0.85, rel=1e-3)
    assert line_rate.verdict(dgx2[0]["throughput_bytes_per_s"], ceiling.bytes_per_s).level == "ok"
    assert line_rate.verdict(dgx2[1]["throughput_bytes_per_s"], ceiling.bytes_per_s).level == "degraded"
    # NFSoRDMA over one 100 Gb/s IB port: 9.48 GiB/s GPUD read is ~86 % of line.
    nfs = gdsio_runs("gdsio-output.nfs-rdma-ib-dgx2-client.nvidia-gds-config-guide.txt")
    read = next(r for r in nfs if r["io_type"] == "READ" and r["throughput_gib_per_s"] > 9)
    ceiling = line_rate.expected_throughput(nic_gbit_s=100)
    assert line_rate.verdict(read["throughput_bytes_per_s"], ceiling.bytes_per_s).level == "ok"
    # stelline: the RTX 6000 Ada's Gen4 x16 link is the ceiling of a fast RAID0.
    asus = gdsio_runs("gdsio-output.stelline-asus-esc8000a-gen4-raid0.txt")
    gpu_link = line_rate.expected_throughput(pcie_gen=4, pcie_width=16)
    assert all(
        line_rate.verdict(r["throughput_bytes_per_s"], gpu_link.bytes_per_s).level == "ok" for r in asus
    )
    # fio kubestr sample: 4 KiB random I/O on Ceph RBD is far below a 10 Gb/s line.
    fio = bench_probes.parse_fio((DATA / "fio-3.20.kubestr-2jobs-libaio.json").read_text(), "x")
    rbd = line_rate.expected_throughput(nic_gbit_s=10)
    assert line_rate.verdict(fio["aggregate"]["read_bytes_per_s"], rbd.bytes_per_s).level == "poor"


def test_measured_throughput_feeds_the_stall_model() -> None:
    """What `check --params 70B` does with a pasted gdsio write result."""
    puget = gdsio_runs("gdsio-output.stelline-puget-wrx90-raid0.txt")
    write = max(r["throughput_bytes_per_s"] for r in puget if r["xfer_type"] == "GPUD")
    stall = estimate.run("70B", write, preset="bf16-adamw", budget="2%")
    assert stall.write_s == pytest.approx(0.98e12 / (25.112706 * GIB), rel=1e-6)  # ≈ 36 s
    assert stall.budget is not None and stall.budget.met  # ≤ 72 s per hour
