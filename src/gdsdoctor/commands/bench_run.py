"""``gdsdoctor bench PATH``: measure what the checkpoint path delivers, and compare it with the line rate.

:func:`run` writes then reads large sequential files with direct I/O in a temporary directory
under PATH, which it always removes. The engine, in order of preference (``engine="auto"``):

* ``libcufile`` — fio's cuFile engine (GPU memory ↔ storage through GDS), when this fio has it
  (distro fio packages normally do not). The same fio run also measures ``cuda_io=posix``
  (storage → CPU → GPU) so that a GDS path slower than the CPU path shows up.
* ``gdsio`` — NVIDIA's gdsio, when on PATH or under /usr/local/cuda*/gds/tools: GPUD (-x 0)
  and CPU_GPU (-x 2), write then read.
* ``cpu-direct`` — fio with ``direct=1`` and libaio from CPU memory.

Sizing: by default 5 % of the free space, between 64 MiB and 8 GiB. A size that would take more
than half the free space, or leave less than 10 % of the filesystem free, is refused.
Bounded: no ``--runtime``/``--time_based`` (the run is sized), but a hard deadline kills the
benchmark and all its descendants (fio's workers run in sessions of their own).

The result carries the raw output as an artifact (``bench/fio.json`` or ``bench/gdsio.txt``,
parsed by :mod:`gdsdoctor.probes.bench`) and the parsed throughput.

The expected line rate and the verdict on a measurement are :mod:`gdsdoctor.checkpoint.line_rate`.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gdsdoctor.checkpoint.stall import Units, format_bytes, format_rate
from gdsdoctor.commands.bench_process import (
    MonotonicProgress,
    Progress,
    last_line,
    run_streaming,
    tree_io_bytes,
)
from gdsdoctor.errors import BenchError, ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes import bench as bench_probes

Engine = Literal["cpu-direct", "libcufile", "gdsio"]

MIB = 2**20
GIB = 2**30
BLOCK_SIZE = 1 * MIB  # large sequential I/O, as checkpoints write
DEFAULT_FREE_FRACTION = 0.05
MIN_SIZE = 64 * MIB
MAX_DEFAULT_SIZE = 8 * GIB
# Rates in decimal GB/s, as every other command prints them (`analyze` of the saved run, `check
# --bench`, `estimate`, `watch`: one run is never 2.33 GiB/s here and 2.5 GB/s there); sizes
# (test data, block size, refusals, progress) binary, since they are whole MiB (a 1 MiB block is
# not "1.05 MB"). The run's last line states both once.
UNITS: Units = "si"  # rates
SIZE_UNITS: Units = "iec"
UNIT_NOTES = {"iec": "IEC (1 GiB/s = 2^30 bytes/s)", "si": "SI (1 GB/s = 10^9 bytes/s)"}
SIZE_NOTE = "sizes IEC (1 MiB = 2^20 bytes)"
MAX_FREE_FRACTION = 0.5  # never take more than half the free space
MIN_FREE_LEFT = 0.10  # never leave less than 10 % of the filesystem free
DEFAULT_TIME_LIMIT_S = 300.0


@dataclass(frozen=True, slots=True)
class Measurement:
    """One I/O path's throughput: the primary one, or the CPU path run alongside GDS."""

    label: str  # "cpu-direct", "libcufile (cuda_io=cufile)", "gdsio GPUD", "gdsio CPU_GPU", …
    gds: bool
    write_bytes_per_s: float | None
    read_bytes_per_s: float | None


@dataclass(frozen=True, slots=True)
class BenchResult:
    path: Path
    engine: Engine
    size_bytes: int  # total test data written (all jobs)
    block_size_bytes: int
    numjobs: int
    iodepth: int
    measurements: tuple[Measurement, ...]  # primary first
    artifact: str  # bundle name of the raw output: "bench/fio.json" or "bench/gdsio.txt"
    raw: bytes
    facts: dict[str, Any]  # the parsed section (as probes.bench produces it)
    elapsed_s: float
    notes: tuple[str, ...]

    @property
    def write_bytes_per_s(self) -> float | None:
        return self.measurements[0].write_bytes_per_s

    @property
    def read_bytes_per_s(self) -> float | None:
        return self.measurements[0].read_bytes_per_s

    @property
    def gds_slower_than_cpu(self) -> bool | None:
        """True when the GDS path wrote or read slower than the CPU path measured with it."""
        gds = [m for m in self.measurements if m.gds]
        cpu = [m for m in self.measurements if not m.gds]
        if not gds or not cpu:
            return None
        compared = []
        for direction in ("write_bytes_per_s", "read_bytes_per_s"):
            gds_rates = [getattr(m, direction) for m in gds if getattr(m, direction)]
            cpu_rates = [getattr(m, direction) for m in cpu if getattr(m, direction)]
            if gds_rates and cpu_rates:
                compared.append(max(gds_rates) < max(cpu_rates))
        return any(compared) if compared else None


# --- planning ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Plan:
    engine: Engine
    size_bytes: int
    numjobs: int
    iodepth: int
    executable: str


def plan_size(free_bytes: int, total_bytes: int, requested: int | None, numjobs: int) -> int:
    """The test size in bytes, or BenchError when it would fill the filesystem."""
    unit = numjobs * BLOCK_SIZE
    if requested is None:
        wanted = min(MAX_DEFAULT_SIZE, max(MIN_SIZE, int(free_bytes * DEFAULT_FREE_FRACTION)))
    elif requested <= 0:
        raise BenchError(f"test size must be positive, not {requested}")
    else:
        wanted = requested
    size = max(unit, wanted // unit * unit)
    left = free_bytes - size
    if size > free_bytes * MAX_FREE_FRACTION or left < total_bytes * MIN_FREE_LEFT:
        raise BenchError(
            f"refusing to write {_human(size)}: only {_human(free_bytes)} free of {_human(total_bytes)} "
            f"(a test may use at most {MAX_FREE_FRACTION:.0%} of the free space and must leave "
            f"{MIN_FREE_LEFT:.0%} of the filesystem free)"
        )
    return size


def _human(size: float, units: Units = SIZE_UNITS) -> str:
    return format_bytes(size, units)


def _rotational(path: Path) -> bool:
    """Whether the block device under ``path`` spins (False when unknown, e.g. network filesystems)."""
    device = os.stat(path).st_dev
    try:
        sysfs = Path(f"/sys/dev/block/{os.major(device)}:{os.minor(device)}").resolve(strict=True)
    except OSError:
        return False
    for queue in (sysfs / "queue", sysfs.parent / "queue"):  # a partition's queue is its disk's
        try:
            return (queue / "rotational").read_text().strip() == "1"
        except OSError:
            continue
    return False


def fio_has_libcufile(fio: str) -> bool:
    try:
        done = subprocess.run([fio, "--enghelp=libcufile"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def find_gdsio() -> str | None:
    found = shutil.which("gdsio")
    if found:
        return found
    candidates = sorted(glob.glob("/usr/local/cuda*/gds/tools/gdsio"))
    return next((c for c in candidates if os.access(c, os.X_OK)), None)


def choose_engine(engine: str = "auto") -> tuple[Engine, str]:
    """The engine to use and its executable; ``auto`` prefers GDS (libcufile, then gdsio)."""
    fio = shutil.which("fio")
    gdsio = find_gdsio()
    if engine == "auto":
        if fio and fio_has_libcufile(fio):
            return "libcufile", fio
        if gdsio:
            return "gdsio", gdsio
        engine = "cpu-direct"
    if engine in ("cpu-direct", "libcufile"):
        if not fio:
            raise BenchError("fio is not installed (Debian/Ubuntu: apt install fio; RHEL: dnf install fio)")
        if engine == "libcufile" and not fio_has_libcufile(fio):
            raise BenchError(
                "this fio has no libcufile engine (build fio with ./configure --enable-libcufile)"
            )
        return engine, fio  # type: ignore[return-value]
    if engine == "gdsio":
        if not gdsio:
            raise BenchError("gdsio not found on PATH or under /usr/local/cuda*/gds/tools")
        return "gdsio", gdsio
    raise BenchError(f"unknown engine {engine!r} (auto, cpu-direct, libcufile, gdsio)")


def make_plan(path: Path, size_bytes: int | None, engine: str = "auto") -> Plan:
    if not path.is_dir():
        raise BenchError(f"{path} is not a directory")
    if not os.access(path, os.W_OK):
        raise BenchError(f"{path} is not writable")
    chosen, executable = choose_engine(engine)
    cpus = os.cpu_count() or 1
    if chosen == "cpu-direct":
        numjobs, iodepth = (1, 4) if _rotational(path) else (min(4, cpus), 16)
    else:  # cuFile is synchronous: parallelism comes from threads (fio #1915)
        numjobs, iodepth = min(8, max(2, cpus)), 1
    stats = os.statvfs(path)
    size = plan_size(stats.f_bavail * stats.f_frsize, stats.f_blocks * stats.f_frsize, size_bytes, numjobs)
    return Plan(chosen, size, numjobs, iodepth, executable)


# --- running -----------------------------------------------------------------------------------


def run(
    path: Path,
    size_bytes: int | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    on_progress: Progress | None = None,
    engine: str = "auto",
) -> BenchResult:
    """Benchmark sequential write then read under ``path``; the temporary directory is always removed."""
    path = Path(path)
    if time_limit_s <= 0:
        raise BenchError(f"time limit must be positive, not {time_limit_s}")
    plan = make_plan(path, size_bytes, engine)
    progress = on_progress or (lambda fraction, message: None)
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix=".gdsdoctor-bench-", dir=path))
    try:
        progress(0.0, f"{plan.engine}: {_human(plan.size_bytes)} in {plan.numjobs} jobs under {path}")
        deadline = started + time_limit_s
        if plan.engine == "gdsio":
            artifact, raw = "bench/gdsio.txt", _run_gdsio(plan, workdir, deadline, progress)
        else:
            artifact, raw = "bench/fio.json", _run_fio(plan, workdir, deadline, progress)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result = _result(path, plan, artifact, raw, time.monotonic() - started)
    progress(1.0, "done")
    return result


def _fio_argv(plan: Plan, workdir: Path, output: Path) -> list[str]:
    per_job = plan.size_bytes // plan.numjobs
    argv = [
        plan.executable, "--output-format=json", f"--output={output}",
        "--eta=always", "--eta-newline=1", "--eta-interval=1s",
        f"--directory={workdir}", "--filename_format=gdsdoctor.$jobnum.$filenum",
        "--direct=1", f"--bs={BLOCK_SIZE}", f"--numjobs={plan.numjobs}", f"--iodepth={plan.iodepth}",
        f"--size={per_job}", "--fallocate=none", "--group_reporting",
        # without this fio lays out the read job's files (buffered) before the write job starts
        "--create_on_open=1",
    ]  # fmt: skip
    if plan.engine == "cpu-direct":
        return [*argv, "--ioengine=libaio", *_write_read_jobs("")]
    gpu = ["--ioengine=libcufile", "--thread=1", "--gpu_dev_ids=0"]
    return [
        *argv,
        *gpu,
        *_write_read_jobs("", "--cuda_io=cufile"),
        *_write_read_jobs("-posix", "--cuda_io=posix"),
    ]


def _write_read_jobs(suffix: str, *options: str) -> list[str]:
    """A write job and a read job of the same files, each in its own reporting group."""
    return [
        f"--name=write{suffix}", "--rw=write", "--end_fsync=1", "--stonewall", "--new_group", *options,
        f"--name=read{suffix}", "--rw=read", "--stonewall", "--new_group", *options,
    ]  # fmt: skip


_ETA_RATE = lazy_compile(r"\[([rw])=([^\],]+)")


def _run_fio(plan: Plan, workdir: Path, deadline: float, progress: Progress) -> bytes:
    output = workdir / "fio.json"
    done = MonotonicProgress(progress)
    directions = 2 if plan.engine == "cpu-direct" else 4  # write+read, twice with posix comparison

    def on_tick(new_lines: list[str], pid: int) -> None:
        # fio's own percentage is unreliable with stonewalled groups: count the bytes its
        # processes moved (/proc/PID/io), and the blocks written so far as a floor.
        written = sum(f.stat().st_blocks * 512 for f in workdir.glob("gdsdoctor.*") if f.is_file())
        moved = max(written, tree_io_bytes(pid))
        message = ""
        for line in new_lines:
            rate = _ETA_RATE.search(line)
            message = f"{'reading' if rate[1] == 'r' else 'writing'} {rate[2]}" if rate else message
        done(moved / plan.size_bytes / directions, message)

    returncode, _, stderr = run_streaming(_fio_argv(plan, workdir, output), deadline, "fio", on_tick)
    raw = output.read_bytes() if output.exists() else b""
    if returncode != 0 or not raw:
        raise BenchError(f"fio failed (exit {returncode}): {last_line(stderr) or 'no output'}")
    return raw


def _run_gdsio(plan: Plan, workdir: Path, deadline: float, progress: Progress) -> bytes:
    per_thread = max(BLOCK_SIZE, plan.size_bytes // plan.numjobs) // MIB
    steps = [(xfer, io) for xfer in ("0", "2") for io in ("1", "0")]  # GPUD, CPU_GPU × write, read
    transcript: list[str] = []
    for index, (xfer, io) in enumerate(steps):
        argv = [plan.executable, "-D", str(workdir), "-d", "0", "-w", str(plan.numjobs),
                "-s", f"{per_thread}M", "-i", "1M", "-x", xfer, "-I", io]  # fmt: skip
        progress(index / len(steps), f"gdsio {'write' if io == '1' else 'read'} -x {xfer}")
        returncode, lines, stderr = run_streaming(argv, deadline, "gdsio")
        transcript += ["$ " + " ".join(argv), *lines]
        if returncode != 0:
            raise BenchError(f"gdsio failed (exit {returncode}): {last_line(stderr) or last_line(lines)}")
    return ("\n".join(transcript) + "\n").encode()


# --- results -----------------------------------------------------------------------------------


def _result(path: Path, plan: Plan, artifact: str, raw: bytes, elapsed: float) -> BenchResult:
    text = raw.decode(errors="replace")
    try:
        if artifact == "bench/fio.json":
            facts = bench_probes.parse_fio(text, artifact)
            measurements = _fio_measurements(facts, plan.engine)
        else:
            facts = bench_probes.parse_gdsio(text, artifact)
            measurements = _gdsio_measurements(facts)
    except ParseError as error:
        raise BenchError(f"cannot read the benchmark output: {error}") from None
    failed = [job["name"] for job in facts.get("jobs", []) if job.get("error")]
    if failed:
        raise BenchError(f"fio reported errors in job(s) {', '.join(failed)}")
    notes = [f"I/O path: {plan.engine}" + (" (GPUDirect Storage)" if plan.engine != "cpu-direct" else "")]
    return BenchResult(
        path=path,
        engine=plan.engine,
        size_bytes=plan.size_bytes,
        block_size_bytes=BLOCK_SIZE,
        numjobs=plan.numjobs,
        iodepth=plan.iodepth,
        measurements=measurements,
        artifact=artifact,
        raw=raw,
        facts=facts,
        elapsed_s=elapsed,
        notes=tuple(notes),
    )


def _fio_measurements(facts: dict[str, Any], engine: Engine) -> tuple[Measurement, ...]:
    def best(jobs: list[dict[str, Any]], direction: str) -> float | None:
        rates = [job[direction]["bytes_per_s"] for job in jobs if job[direction]["bytes_per_s"]]
        return max(rates) if rates else None

    gds_jobs = [job for job in facts["jobs"] if job["gds"]]
    cpu_jobs = [job for job in facts["jobs"] if not job["gds"]]
    measurements = []
    if gds_jobs:
        measurements.append(Measurement("libcufile (cuda_io=cufile)", True, best(gds_jobs, "write"),
                                        best(gds_jobs, "read")))  # fmt: skip
    if cpu_jobs:
        label = "libcufile (cuda_io=posix)" if engine == "libcufile" else "cpu-direct"
        measurements.append(Measurement(label, False, best(cpu_jobs, "write"), best(cpu_jobs, "read")))
    return tuple(measurements)


def _gdsio_measurements(facts: dict[str, Any]) -> tuple[Measurement, ...]:
    by_xfer: dict[str, dict[str, float]] = {}
    for entry in facts["best"]:
        by_xfer.setdefault(entry["xfer_type"], {})[entry["io_type"]] = entry["throughput_bytes_per_s"]
    return tuple(
        Measurement(f"gdsio {xfer}", xfer.startswith("GPU"), rates.get("WRITE"), rates.get("READ"))
        for xfer, rates in by_xfer.items()
    )


# --- output --------------------------------------------------------------------------------------


def to_dict(result: BenchResult) -> dict[str, Any]:
    """The result as JSON-able data (throughputs in bytes/s; the raw output is not repeated)."""
    return {
        "path": str(result.path),
        "engine": result.engine,
        "size_bytes": result.size_bytes,
        "block_size_bytes": result.block_size_bytes,
        "numjobs": result.numjobs,
        "iodepth": result.iodepth,
        "elapsed_s": round(result.elapsed_s, 3),
        "measurements": [
            {
                "label": m.label,
                "gds": m.gds,
                "write_bytes_per_s": m.write_bytes_per_s,
                "read_bytes_per_s": m.read_bytes_per_s,
            }
            for m in result.measurements
        ],
        "gds_slower_than_cpu": result.gds_slower_than_cpu,
        "artifact": result.artifact,
        "notes": list(result.notes),
    }


def render_text(result: BenchResult, units: Units = UNITS) -> str:
    """The run: rates in ``units`` (SI unless asked), sizes and blocks in whole MiB/GiB."""

    def rate(value: float | None) -> str:
        return "n/a" if value is None else format_rate(value, units)

    size, block = _human(result.size_bytes), _human(result.block_size_bytes)
    lines = [
        f"bench {result.path}: {result.engine}, {size} in {result.numjobs} job(s), {block} blocks, "
        f"iodepth {result.iodepth} ({result.elapsed_s:.1f} s)",
    ]
    for m in result.measurements:
        lines.append(
            f"  {m.label:<28} write {rate(m.write_bytes_per_s):>12}   read {rate(m.read_bytes_per_s):>12}"
        )
    if result.gds_slower_than_cpu:
        lines.append("  GDS path slower than the CPU path: a sign of compat mode or a cross-socket topology")
    lines += [f"  {note}" for note in result.notes]
    lines.append(f"  units: rates {UNIT_NOTES[units]}, {SIZE_NOTE}")
    return "\n".join(lines) + "\n"
