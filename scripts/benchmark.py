#!/usr/bin/env python3
"""Benchmark gdsdoctor on this machine; every number is a ratio or rate measured in this run.

    python3 scripts/benchmark.py                 # full: fleet of 1,000 bundles on 2 processes
    python3 scripts/benchmark.py --quick         # smoke run (small sizes, one repetition)

Measures (medians of --repeat runs, wall clock):

1. ``check`` against its floor: the bare sources it captures (each probe's commands run and
   files read directly, in parallel threads like check does), plus the start-up of the same
   interpreter importing the command-line stack the project requires
   (``python -c "import typer, rich"``). Target: check <= 1.5 x (floor + start-up).
   ``gdsdoctor --version`` against that start-up. These four run in turns, at least 15
   rounds, so that a change in a shared machine's load weighs on each alike.
2. ``analyze``: one typical bundle (this host's own capture) in-process after start-up
   (target < 100 ms), and a fleet of generated bundles through the CLI on --jobs processes
   (target: 1,000 bundles in < 60 s on 2 cores), with peak memory (largest process).
3. Rule-engine scaling: the shipped rules x1, x10, x100 over a typical node, a node with
   10,000 items in each facts section no rule reads, and a node with 10,000 mounts (which the
   rules read); then 1,000 vs 10,000 kernel events (read too). Evaluation must grow linearly
   with the rules and with the size of what the rules read, never as a product with facts they
   do not read, and building facts must grow linearly with the node.
5. ``watch --every 1s`` in its steady state (after start-up, before the collect that ends it):
   CPU share of one core and peak resident set over 20 s (target < 2 % of a core, < 50 MiB).
4. ``collect`` against ``sos report`` restricted to comparable plugins (if sos is installed:
   Debian ``sosreport``, PyPI ``sos``), both writing a compressed archive.
6. ``analyze`` of two real sos reports of this host, one with sos's default plugins (what
   support receives) and one of only the plugins gdsdoctor reads (archive and unpacked
   directory each), beside ``hotsos`` (PyPI, installed into the benchmark's own temporary
   venv) on the same directory:
   wall and CPU time, peak memory. Target: gdsdoctor at least 10x faster. Needs root and sos.
7. The documented installs (scripts/install_check.py: README's venv step as an ordinary user, the
   system-wide install in a throwaway prefix, the systemd unit's and the NPD plugin's commands
   against it): each step ok, and how long the install took. Not with --quick (a few minutes,
   a package index).
8. Hostile inputs (SECURITY.md): every regular expression of src/ and of the rules on its
   slowest attack text of 16 KiB (the regex audit's texts; CPU ms per KiB, worst and median),
   and ``analyze`` of a bundle holding each of the worst inputs of issue 26 (a 12 MiB mount
   table, a 2.5 MiB ``nvidia-smi topo -m`` matrix, 1.3 MiB of ``nvme list-subsys``, three
   60 MiB mount tables): wall time and peak resident set (target <= 300 MiB).
9. Deadlines and kills (the timed bounds the tests once asserted; they assert what happened):
   a command past its 0.5 s timeout killed with its group, ``analyze --deadline 1`` of a bundle
   slow to parse (100k NVMe subsystems) ending UNKNOWN, and ``check --deadline 3`` with a probe
   that hangs ignoring SIGTERM: seconds from start to return, against the deadline plus a margin.
10. Where the work grows (issue 36), each figure with the machine's load beside it: a fleet of
   this host's bundles at ``-j`` with a quiet kernel log (target >= 100 bundles/s) and with 1,400
   kernel events each (>= 40/s); a 100k-line kernel log (scripts/incident_logs.py) analysed in
   a bundle and pasted, in MB/s of CPU beside a Python loop that only matches each line's
   timestamp (>= 20 MB/s and >= 12% of that floor), and the paste against the bundle (<= 1.2x).

Commands run from a wheel built from this checkout and installed into a temporary directory, as
users run gdsdoctor: the wheel carries the rules parsed and linted (hatch_build.py), where a
source checkout parses the YAML at every run (~150 ms). ``--source`` measures the checkout
itself (the default of ``--quick``, the test suite's smoke run).

Output: a Markdown table for docs/performance.md (the README keeps a summary), and a verdict per target.
This is not a test: numbers depend on the machine; tests stay free of timing assertions.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if (REPO / "src" / "gdsdoctor").is_dir():
    sys.path.insert(0, str(REPO / "src"))
# Commands run with their bytecode cached, as after `pip install` (which compiles it): with
# PYTHONDONTWRITEBYTECODE set (sandboxes, some CI), a source checkout would otherwise compile
# every module at every run, ~200 ms that no installed copy pays. The cache goes to a temporary
# directory (PYTHONPYCACHEPREFIX, set in main), never into the checkout.
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"} | {
    "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")]))
}
SOS_PLUGINS = "block,filesys,kernel,nvme,pci,networking,infiniband,nvidia"

Row = tuple[str, str, str]  # what, measured, target / verdict
SECTIONS = ("check", "analyze", "rules", "collect", "watch", "sos", "install", "regex", "hostile")
SECTIONS += ("deadlines", "events")


@dataclasses.dataclass(frozen=True)
class Timing:
    wall: float  # seconds, median
    cpu: float  # user + system seconds of this process and its children, median


def _cpu_now() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(action: Callable[[], Any], repeat: int) -> Timing:
    """Median wall and CPU time of ``repeat`` runs (a run over 2 s is not repeated). CPU time
    (this process and the children it waited for) hardly depends on other load on the machine,
    wall time does: on a busy machine compare the CPU ratios."""
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(repeat):
        started, cpu = time.perf_counter(), _cpu_now()
        action()
        walls.append(time.perf_counter() - started)
        cpus.append(_cpu_now() - cpu)
        if walls[-1] > 2.0:
            break
    return Timing(statistics.median(walls), statistics.median(cpus))


def timed_in_turns(actions: dict[str, Callable[[], Any]], rounds: int) -> dict[str, Timing]:
    """Median wall and CPU time of each action, run in turns (a, b, c, a, b, c, ...): a change
    in the machine's load during the run then weighs on every measure alike, which matters for
    ratios between them on a shared machine."""
    walls: dict[str, list[float]] = {name: [] for name in actions}
    cpus: dict[str, list[float]] = {name: [] for name in actions}
    for _ in range(rounds):
        for name, action in actions.items():
            started, cpu = time.perf_counter(), _cpu_now()
            action()
            walls[name].append(time.perf_counter() - started)
            cpus[name].append(_cpu_now() - cpu)
    return {name: Timing(statistics.median(walls[name]), statistics.median(cpus[name])) for name in actions}


def wall(action: Callable[[], Any], repeat: int) -> float:
    return timed(action, repeat).wall


def best(action: Callable[[], Any], samples: int = 5, sample_s: float = 0.05) -> float:
    """Per-call time of a CPU-bound in-process action: the fastest of ``samples`` samples, each
    looping long enough (>= ``sample_s``) that timer resolution and a busy neighbour matter
    little (the timeit method). Actions over 2 s are timed once. Process CPU time, not wall
    time: other jobs on the machine then barely change the result."""
    clock = time.process_time
    started = clock()
    action()
    first = clock() - started
    if first > 2.0:
        return first
    number = max(1, int(sample_s / max(first, 1e-6)))
    timings = []
    for _ in range(samples):
        started = clock()
        for _ in range(number):
            action()
        timings.append((clock() - started) / number)
    return min(timings)


def run(*argv: str) -> Callable[[], None]:
    return lambda: subprocess.run(
        argv, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )


def gdsdoctor(*args: str) -> list[str]:
    return [sys.executable, "-m", "gdsdoctor", *args]


def fleet_run(argv: list[str]) -> tuple[float, float, float]:
    """Wall time, CPU time (the command and its workers) and the largest resident set of any
    of its processes, measured in a fresh wrapper so that earlier children do not count."""
    probe = (
        "import resource, subprocess, sys, time; t = time.perf_counter(); "
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
        "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
        "print(time.perf_counter() - t, u.ru_utime + u.ru_stime, u.ru_maxrss)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, *argv], env=ENV, capture_output=True, text=True, check=True
    )
    seconds, cpu, kib = out.stdout.split()
    return float(seconds), float(cpu), int(kib) / 1024


def verdict(ok: bool) -> str:
    return "**met**" if ok else "**missed**"


# ---- 1. check vs its floor ---------------------------------------------------------------------


def floor_capture() -> None:
    """What check captures, done bare: every probe's sources in parallel threads, in order
    until one succeeds, commands without a shell, files read whole."""
    from gdsdoctor.probes import PROBES

    def capture(probe: Any) -> None:
        for source in probe.sources:
            try:
                if source.argv:
                    done = subprocess.run(
                        source.argv, capture_output=True, timeout=source.timeout, check=False
                    )
                    ok = done.returncode == 0
                elif source.reader is not None:
                    ok = bool(source.reader(Path("/")))
                elif source.path:
                    ok = bool(Path(source.path).read_bytes())
                else:
                    ok = False
            except (OSError, subprocess.SubprocessError):
                ok = False
            if ok:
                return

    threads = [threading.Thread(target=capture, args=(p,)) for p in PROBES]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


# The start-up check is held to: this interpreter importing the command-line stack the design
# requires (typer for the commands, rich for help and terminal output), nothing of gdsdoctor.
STARTUP = (sys.executable, "-c", "import typer, rich")


def bench_check(rounds: int) -> list[Row]:
    for warm_up in ("--version", "check"):  # fills the bytecode cache
        run(*gdsdoctor(warm_up))()
    run(*STARTUP)()
    floor_capture()  # imports the probe registry, which the floor does not count
    measured = timed_in_turns(
        {
            "startup": run(*STARTUP),
            "version": run(*gdsdoctor("--version")),
            "floor": floor_capture,
            "check": run(*gdsdoctor("check", "--format", "json")),
        },
        rounds,
    )
    startup, version, floor, check = (measured[k] for k in ("startup", "version", "floor", "check"))
    wall_ratio = check.wall / (floor.wall + startup.wall)
    fixed = check.wall - floor.wall - startup.wall
    # check = floor + start-up + fixed <= 1.5 (floor + start-up)  <=>  floor >= 2 fixed - start-up
    floor_needed = 2 * fixed - startup.wall
    cpu_ratio = check.cpu / (floor.cpu + startup.cpu)
    return [
        ('start-up: `python -c "import typer, rich"` (same interpreter)', _both(startup), ""),
        ("`gdsdoctor --version`", f"{_both(version)} = {version.wall / startup.wall:.1f}x start-up", ""),
        ("floor: bare probe sources in parallel", _both(floor), ""),
        (
            "`gdsdoctor check --format json`",
            f"{_both(check)} = {wall_ratio:.2f}x (floor + start-up) wall, {cpu_ratio:.2f}x CPU",
            f"<= 1.5x: wall {verdict(wall_ratio <= 1.5)}, CPU {verdict(cpu_ratio <= 1.5)}",
        ),
        (
            "fixed cost of check: check - (floor + start-up)",
            f"{fixed * 1000:.0f} ms wall",
            f"1.5x holds from a floor of {floor_needed * 1000:.0f} ms",
        ),
        ("this host's kernel log, which check parses and judges (the floor only reads it)", kernel_log(), ""),
    ]


def kernel_log() -> str:
    """The size of what check reads from the kernel log: its cost grows with it, the floor's
    does not (docs/performance.md), so a ratio is read with it."""
    from gdsdoctor.errors import ParseError
    from gdsdoctor.probes import dmesg

    done = subprocess.run(["dmesg"], capture_output=True, text=True, check=False)
    try:
        section = dmesg.parse(done.stdout, "dmesg") if done.returncode == 0 else None
    except ParseError:
        section = None
    if section is None:
        return "not readable here"
    return f"{section['line_count']:,} lines, {len(section['events'])} events"


def _both(timing: Timing) -> str:
    return f"{timing.wall * 1000:.0f} ms (CPU {timing.cpu * 1000:.0f} ms)"


# ---- 2. analyze: one bundle, a fleet -------------------------------------------------------------


def typical_capture() -> Any:
    from gdsdoctor.capture.live import capture_live

    return capture_live(Path("/"))


def write_fleet(capture: Any, root: Path, size: int) -> Path:
    """``size`` bundles: this host's capture under other names, one in 20 with a mount-option
    outlier and one in 50 without the module list, so groups and outliers are not trivial."""
    from gdsdoctor.capture.bundle import write_bundle
    from gdsdoctor.capture.capture import Capture
    from gdsdoctor.model import Artifact, ArtifactStatus

    root.mkdir(parents=True, exist_ok=True)
    mounts_name = (capture.assignments.get("mounts") or [None])[0]
    for index in range(size):
        node = Capture(
            capture.origin,
            dict(capture.artifacts),
            {k: list(v) for k, v in capture.assignments.items()},
            {**capture.host, "hostname": f"gpu{index:05d}"},
            capture.options,
            capture.notes,
            capture.label,
        )
        if mounts_name and index % 20 == 0:
            extra = b"/dev/nvme9n1 /mnt/ckpt ext4 rw,relatime,data=journal 0 0\n"
            node.artifacts[mounts_name] = Artifact(
                mounts_name, ArtifactStatus.OK, capture.artifacts[mounts_name].data + extra
            )
        if index % 50 == 0:
            node.assignments.pop("modules", None)
        write_bundle(node, root / f"gpu{index:05d}.tar.gz")
    return root


def bench_analyze(repeat: int, fleet_size: int, jobs: int, work: Path) -> list[Row]:
    from gdsdoctor.capture.bundle import write_bundle
    from gdsdoctor.pipeline import analyze_paths

    capture = typical_capture()
    bundle = write_bundle(capture, work / "typical.tar.gz")
    analyze_paths([bundle])  # warm: rules loaded once per process, as in a fleet worker
    one = best(lambda: analyze_paths([bundle]), samples=repeat)
    run(*gdsdoctor("analyze", str(bundle)))()  # fills the bytecode cache
    cold = timed(run(*gdsdoctor("analyze", str(bundle), "--format", "json")), repeat)
    fleet_dir = write_fleet(capture, work / "fleet", fleet_size)
    seconds, cpu, peak = fleet_run(
        gdsdoctor("analyze", str(fleet_dir), "-j", str(jobs), "-o", f"json={work / 'fleet.json'}")
    )
    per_1000 = seconds * 1000 / fleet_size  # what 1,000 bundles take at this rate
    idle_estimate = cpu * 1000 / fleet_size / jobs  # the same on idle cores: CPU time over the workers
    return [
        (
            "analyze one bundle, in-process after start-up (CPU time)",
            f"{one * 1000:.1f} ms = {1 / one:.0f} bundles/s",
            f"< 100 ms: {verdict(one < 0.1)}",
        ),
        ("`gdsdoctor analyze BUNDLE` (with start-up)", _both(cold), ""),
        (
            f"fleet of {fleet_size:,} bundles, `-j {jobs}`",
            f"{seconds:.1f} s wall = {fleet_size / seconds:.0f} bundles/s; {cpu:.1f} s CPU;"
            f" peak RSS {peak:.0f} MiB (largest process)",
            f"1,000 in < 60 s: wall {verdict(per_1000 < 60)} ({per_1000:.1f} s),"
            f" idle cores {verdict(idle_estimate < 60)} (CPU / {jobs} = {idle_estimate:.1f} s)",
        ),
    ]


# ---- 3. rule-engine scaling -------------------------------------------------------------------------

BIG = 10_000  # items of the large node (--big)
CHECK_ROUNDS = 15  # at least, for the check rows: their ratio is what varies most on a shared machine


def big_mounts(count: int) -> str:
    return "".join(
        f"/dev/nvme{i % 64}n1p{i % 7 + 1} /mnt/data{i} ext4 rw,noatime,data=ordered 0 0\n"
        for i in range(count)
    )


def unread_sections() -> list[str]:
    """Facts sections that no shipped rule reads (no expression names them, no cause requires
    them): their size must not change evaluation time."""
    import re

    from gdsdoctor.engine.rules import cause_expressions
    from gdsdoctor.pipeline import KNOWN_SECTIONS, rules

    causes = rules()
    text = " ".join(expression for cause in causes for _, expression in cause_expressions(cause))
    required = {s for c in causes for r in c.requires for s in ((r,) if isinstance(r, str) else r)}
    return [
        section
        for section in sorted(KNOWN_SECTIONS - required - {"derived", "job"})
        if not re.search(rf"\b{re.escape(section)}\b", text)
    ]


def filler_sections(names: list[str], count: int) -> dict[str, Any]:
    return {
        name: {
            "status": "ok",
            "items": [{"name": f"item{i}", "value": i, "flag": i % 2 == 0} for i in range(count)],
        }
        for name in names
    }


def dmesg_events(count: int) -> dict[str, Any]:
    """Kernel events, which the rules do read (nvme timeouts: what a failing drive spews)."""
    events = [
        {
            "kind": "nvme_timeout",
            "device": f"nvme{i % 64}",
            "text": f"nvme nvme{i % 64}: I/O {i} QID 1 timeout",
        }
        for i in range(count)
    ]
    return {"dmesg": {"status": "ok", "events": events}}


def replicated_rules(times: int) -> list[Any]:
    from gdsdoctor.pipeline import rules

    shipped = rules()
    return [
        dataclasses.replace(cause, id=f"{cause.id}-{n}", explains=())
        for n in range(times)
        for cause in shipped
    ]


def facts_for(mounts: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    from gdsdoctor.capture.capture import Capture
    from gdsdoctor.facts.document import build_facts
    from gdsdoctor.model import Artifact, ArtifactStatus

    capture = Capture(origin="files")
    capture.add("mounts", Artifact("proc/mounts", ArtifactStatus.OK, mounts.encode()))
    capture.add(
        "modules",
        Artifact(
            "proc/modules", ArtifactStatus.OK, b"nvidia_fs 1 0 - Live 0x0\nnvidia 1 1 nvidia_fs, Live 0x0\n"
        ),
    )
    facts = build_facts(capture)
    facts.update(extra or {})
    return facts


def bench_rules(repeat: int, big: int = BIG, most: int = 100) -> list[Row]:
    """``most``: the largest multiple of the shipped rules evaluated (10 in a --quick run)."""
    from gdsdoctor.engine.evaluate import evaluate
    from gdsdoctor.pipeline import HOW_TO_COLLECT

    typical_mounts = big_mounts(12)
    rows: list[Row] = []
    build_small = best(lambda: facts_for(big_mounts(big // 10)))
    build_big = best(lambda: facts_for(big_mounts(big)))
    small_us, big_us = build_small / (big // 10) * 1e6, build_big / big * 1e6
    rows.append(
        (
            f"build facts (parse + derive): {big // 10:,} vs {big:,} mounts",
            f"{build_small * 1000:.0f} ms vs {build_big * 1000:.0f} ms:"
            f" {small_us:.1f} vs {big_us:.1f} us per mount",
            f"linear (per-item cost < 2x): {verdict(big_us / small_us < 2)}",
        )
    )
    unread = unread_sections()
    nodes = {
        "typical node": facts_for(typical_mounts),
        f"+{big:,} items in each of {len(unread)} sections no rule reads": facts_for(
            typical_mounts, filler_sections(unread, big)
        ),
        f"{big:,} mounts (read by the rules)": facts_for(big_mounts(big)),
    }
    measured: dict[tuple[str, int], float] = {}
    for label, facts in nodes.items():
        for times in sorted({1, max(2, most // 10), most}):
            causes = replicated_rules(times)
            seconds = best(lambda c=causes, f=facts: evaluate(c, f, HOW_TO_COLLECT), samples=repeat)
            measured[label, times] = seconds
            growth = seconds / measured[label, 1]
            rows.append(
                (
                    f"evaluate {len(causes)} rules (x{times}), {label}",
                    f"{seconds * 1000:.1f} ms = {growth:.0f}x the x1 time",
                    "",
                )
            )
    typical, with_unread = (measured[label, most] for label in list(nodes)[:2])
    # Per-rule cost at x100 against x1: 1.0 is perfectly linear; a product of rules and facts
    # would show up as growth with the node's size, noise on a busy machine as up to ~2.
    worst = max(measured[label, most] / measured[label, 1] / most for label in nodes)
    rows.append(
        (
            f"x{most} rules vs x1: per-rule cost, worst node",
            f"{worst:.2f}x",
            f"linear (< 2x, noise included): {verdict(worst < 2)}",
        )
    )
    rows.append(
        (
            f"x{most} rules: node with {big:,} unread items a section ({', '.join(unread)}) vs typical node",
            f"{with_unread / typical:.2f}x",
            f"no product with facts the rules do not read (< 1.5x): {verdict(with_unread / typical < 1.5)}",
        )
    )
    causes = replicated_rules(1)
    per_event: dict[int, float] = {}
    for count in (big // 10, big):
        facts = facts_for(typical_mounts, dmesg_events(count))
        per_event[count] = best(lambda f=facts: evaluate(causes, f, HOW_TO_COLLECT)) / count
    rows.append(
        (
            f"evaluate the shipped rules, {big // 10:,} vs {big:,} kernel events (read by the rules)",
            f"{per_event[big // 10] * 1e6:.0f} vs {per_event[big] * 1e6:.0f} us per event",
            f"linear (per-event cost < 2x): {verdict(per_event[big] / per_event[big // 10] < 2)}",
        )
    )
    return rows


# ---- 4. collect vs sos report --------------------------------------------------------------------------


def bench_collect(repeat: int, work: Path) -> list[Row]:
    counter = iter(range(10_000))

    def collect() -> None:
        subprocess.run(
            gdsdoctor("collect", "-o", str(work / f"collect-{next(counter)}.tar.gz")),
            env=ENV,
            capture_output=True,
            check=False,
        )

    ours = wall(collect, repeat)
    rows: list[Row] = [("`gdsdoctor collect -o X.tar.gz`", f"{ours * 1000:.0f} ms", "")]
    sos = shutil.which("sos")
    if sos is None:
        rows.append(("`sos report`", "not run: sos is not installed (Debian sosreport, PyPI sos)", ""))
        return rows
    if os.geteuid() != 0:
        rows.append(("`sos report`", "not run: sos report needs root", ""))
        return rows
    target = work / "sos"
    target.mkdir(exist_ok=True)
    argv = [
        sos,
        "report",
        "--batch",
        "--quiet",
        "--only-plugins",
        SOS_PLUGINS,
        "--tmp-dir",
        str(target),
        "-z",
        "gzip",
    ]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
    theirs = time.perf_counter() - started
    if done.returncode != 0:
        rows.append(
            ("`sos report`", f"failed here (exit {done.returncode}): {done.stderr.strip()[:120]}", "")
        )
        return rows
    rows.append(
        (
            f"`sos report --only-plugins {SOS_PLUGINS}`",
            f"{theirs * 1000:.0f} ms = {theirs / ours:.1f}x collect",
            "(one run)",
        )
    )
    return rows


# ---- 5. watch: the cost of sampling ------------------------------------------------------------

WATCH_SECONDS = 20.0


def _process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (/proc/PID/stat fields 14 and 15, after the name)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _process_peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def bench_watch(seconds: float, work: Path) -> list[Row]:
    """`gdsdoctor watch --every 1s` on a quiet directory: CPU and memory between its first sample
    and the end (start-up, the final collect and the report are a `check`'s, measured above)."""
    argv = [
        sys.executable,
        "-m",
        "gdsdoctor",
        "watch",
        "--path",
        str(work),
        "--every",
        "1s",
        "--format",
        "json",
    ]
    process = subprocess.Popen(argv, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    try:
        process.stdout.readline()  # the header
        process.stdout.readline()  # the first sample: started
        started_cpu, started = _process_cpu_s(process.pid), time.monotonic()
        reader = threading.Thread(target=process.stdout.read, daemon=True)  # keep the pipe drained
        reader.start()
        time.sleep(seconds)
        share = (_process_cpu_s(process.pid) - started_cpu) / (time.monotonic() - started)
        rss = _process_peak_rss_mib(process.pid)
    finally:
        process.terminate()
        process.wait(timeout=120)
    return [
        (
            f"`watch --every 1s`: CPU over {seconds:g} s of sampling",
            f"{share:.2%} of one core",
            f"< 2 % — {verdict(share < 0.02)}",
        ),
        ("`watch --every 1s`: peak resident set", f"{rss:.1f} MiB", f"< 50 MiB — {verdict(rss < 50)}"),
    ]


# ---- 6. analyze a sos report beside hotsos -------------------------------------------------------

SOS_READ_PLUGINS = SOS_PLUGINS + ",host,date,release"  # and the header gdsdoctor reads (host, clock)
# The two reports measured: the one support receives (`sos report` as its vendors ask for it, every
# default plugin: what hotsos is run on too), and one of only the plugins gdsdoctor reads, where
# hotsos has least to read and gdsdoctor's fixed cost (interpreter, typer, rich, rules) weighs most.
SOS_REPORTS = {"default plugins": (), "only the plugins gdsdoctor reads": ("-o", SOS_READ_PLUGINS)}


def make_sos_report(work: Path, plugins: tuple[str, ...]) -> Path | None:
    """A sos report of this machine (archive), or None where sos cannot run here (not
    installed, not root, or it failed)."""
    if shutil.which("sos") is None or os.geteuid() != 0:
        return None
    where = Path(tempfile.mkdtemp(prefix="sos-report-", dir=work))
    argv = ["sos", "report", "--batch", "-q", "--tmp-dir", str(where), *plugins]
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, timeout=900)
    return next(iter(sorted(where.glob("sosreport-*.tar.xz"))), None)


def install_hotsos(work: Path) -> tuple[Path, str] | None:
    """hotsos from PyPI in a virtual environment of its own under ``work`` (never a dependency
    of gdsdoctor), with its version; None where it cannot be installed here."""
    venv = work / "hotsos-venv"
    if subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True).returncode != 0:
        return None
    pip = str(venv / "bin" / "pip")
    if subprocess.run([pip, "install", "-q", "hotsos"], capture_output=True, timeout=900).returncode != 0:
        return None
    shown = subprocess.run([pip, "show", "hotsos"], capture_output=True, text=True).stdout
    version = next((line.split()[1] for line in shown.splitlines() if line.startswith("Version:")), "?")
    return venv / "bin" / "hotsos", version


def _median_run(argv: list[str], repeat: int) -> tuple[float, float, float]:
    runs = [fleet_run(argv) for _ in range(repeat)]
    return (
        statistics.median(r[0] for r in runs),
        statistics.median(r[1] for r in runs),
        max(r[2] for r in runs),
    )


def bench_sos(repeat: int, work: Path) -> list[Row]:
    installed = install_hotsos(work)
    rows: list[Row] = []
    for name, plugins in SOS_REPORTS.items():
        archive = make_sos_report(work, plugins)
        if archive is None:
            return [("`analyze` of a sos report", "not measured: needs Debian's sosreport and root", "")]
        rows += _bench_one_sos_report(name, archive, installed, repeat)
    return rows


def _bench_one_sos_report(
    name: str, archive: Path, hotsos: tuple[Path, str] | None, repeat: int
) -> list[Row]:
    tree = archive.parent / "tree"
    tree.mkdir()
    subprocess.run(["tar", "-xf", str(archive), "-C", str(tree)], check=True)
    unpacked = next(tree.iterdir())
    files = [p for p in unpacked.rglob("*") if p.is_file() and not p.is_symlink()]
    what = (
        f"{name}: {archive.stat().st_size / 2**20:.1f} MiB archive,"
        f" {sum(p.stat().st_size for p in files) / 2**20:.1f} MiB in {len(files):,} files unpacked"
    )
    run(*gdsdoctor("analyze", str(unpacked)))()  # fills the bytecode cache
    ours = {
        "archive": _median_run(gdsdoctor("analyze", str(archive)), repeat),
        "directory": _median_run(gdsdoctor("analyze", str(unpacked)), repeat),
    }
    rows: list[Row] = [
        (
            f"`gdsdoctor analyze` of a sos report of this host ({kind}; {what})",
            f"{wall_s:.2f} s (CPU {cpu_s:.2f} s); peak RSS {peak:.0f} MiB",
            "",
        )
        for kind, (wall_s, cpu_s, peak) in ours.items()
    ]
    if hotsos is None:
        return [*rows, ("hotsos on the same report", "not measured: hotsos could not be installed here", "")]
    theirs = _median_run([str(hotsos[0]), str(unpacked)], repeat)
    wall_x, cpu_x = theirs[0] / ours["directory"][0], theirs[1] / ours["directory"][1]
    rows.append(
        (
            f"hotsos {hotsos[1]} (PyPI) on the same directory ({name})",
            f"{theirs[0]:.2f} s (CPU {theirs[1]:.2f} s); peak RSS {theirs[2]:.0f} MiB;"
            f" gdsdoctor {wall_x:.1f}x faster wall, {cpu_x:.1f}x CPU",
            f">= 10x faster: wall {verdict(wall_x >= 10)}, CPU {verdict(cpu_x >= 10)}",
        )
    )
    return rows


# ---- 8. hostile inputs: regular expressions, parsers, mount tables ------------------------------


def bench_regex(size: int, every: bool) -> list[Row]:
    """Every pattern of src/ and of the built-in rules (the audit of tests/test_hostile_regex.py,
    whose attack texts are reused) on its slowest attack of ``size`` characters: CPU per KiB."""
    sys.path.insert(0, str(REPO))
    from tests import regex_audit as audit

    found = audit.every_pattern() if every else audit.patterns_of("gdsdoctor/probes/cufile.py")
    timed = sorted(((*audit.worst_attack(item, size), item) for item in found), key=lambda t: t[0])
    kib = size / 1024
    seconds, text, worst = timed[-1]
    median = timed[len(timed) // 2][0]
    budget = audit.budget_s(size)
    return [
        (
            f"{len(timed)} patterns, slowest attack of {size:,} characters each: worst (CPU)",
            f"{seconds * 1000 / kib:.2f} ms/KiB: {worst.where} on {text[:40]}",
            f"audit budget {budget * 1000:.0f} ms at this size: {verdict(seconds < budget)}",
        ),
        ("the same: median pattern", f"{median * 1e6 / kib:.1f} µs/KiB", ""),
    ]


def _lines(line: str, count: int) -> str:
    """``count`` lines of ``line`` formatted with their number (distinct mount points, names)."""
    return "".join(line.format(n=n, d=n % 8) for n in range(max(10, count)))


def _hostile_inputs(scale: float) -> dict[str, list[tuple[str, str, str]]]:
    """What -> its members (section, member, text): the worst inputs of issue 26 at ``scale``
    times their size (a 12 MiB mount table, 1.3 MiB of `nvme list-subsys`, a 2.5 MiB matrix,
    three 60 MiB mount tables)."""
    same = '  {"Name": "nvme-subsys0", "NQN": "nqn.x", "Paths": [{"Name": "nvme0", "State": "live"}]}'
    side = max(4, int(800 * scale**0.5))  # a square matrix: its bytes grow with the side squared
    labels = [f"GPU{i}" for i in range(side // 2)] + [f"NIC{i}" for i in range(side - side // 2)]
    rows = [a + "\t" + "\t".join("X" if a == b else "SYS" for b in labels) + "\t0-47\t0" for a in labels]
    mount = "/dev/nvme{d}n1 /mnt/ckpt/run{n} ext4 rw,relatime,data=ordered 0 0\n"
    info = "{n} 35 259:{d} / /mnt/ckpt/run{n} rw,relatime shared:{n} - ext4 /dev/nvme{d}n1 rw,data=ordered\n"
    df = "/dev/nvme{d}n1 ext4 1000000000 1000 999999000 1% /mnt/ckpt/run{n}\n"
    df_header = "Filesystem Type 1B-blocks Used Available Capacity Mounted on\n"
    return {
        "`/proc/mounts`": [("mounts", "proc/mounts", _lines(mount, int(190_000 * scale)))],
        "`nvme list-subsys` text": [(
            "nvme_subsys", "cmd/nvme-list-subsys.txt",
            _lines("nvme-subsys{n} - NQN=nqn.x{n}\n\\\n +- nvme{n} tcp traddr=10.0.0.1,trsvcid=4420 live\n",
                   int(16_000 * scale)),
        )],
        "`nvme list-subsys -o json`, one name": [(
            "nvme_subsys", "cmd/nvme-list-subsys.json",
            '{\n "Subsystems": [\n' + ",\n".join([same] * max(10, int(15_000 * scale))) + "\n ]\n}\n",
        )],
        "`nvidia-smi topo -m` square matrix": [(
            "nvidia_topo", "cmd/nvidia-smi-topo-m.txt",
            "\t" + "\t".join(labels) + "\tCPU Affinity\tNUMA Affinity\n" + "\n".join(rows) + "\n",
        )],
        "`/proc/mounts`, `mountinfo` and `df`": [
            ("mounts", "proc/mounts", _lines(mount, int(950_000 * scale))),
            ("mountinfo", "proc/self/mountinfo", _lines(info, int(630_000 * scale))),
            ("df", "cmd/df.txt", df_header + _lines(df, int(950_000 * scale))),
        ],
    }  # fmt: skip


def bench_hostile(scale: float, work: Path, every: bool) -> list[Row]:
    """`analyze` of a bundle holding each of the worst inputs (a whole process each: wall time
    and peak resident set; with ``every`` false, the mount table only)."""
    from gdsdoctor.capture.bundle import write_bundle
    from gdsdoctor.capture.capture import Capture
    from gdsdoctor.model import Artifact, ArtifactStatus

    rows = []
    for index, (what, members) in enumerate(_hostile_inputs(scale).items()):
        if index and not every:
            break
        capture = Capture(origin="live", host={"hostname": "gpu001"}, label="gpu001")
        for section, member, text in members:
            capture.add(section, Artifact(member, ArtifactStatus.OK, text.encode(), source=member))
        path = write_bundle(capture, work / f"hostile{index}.tar.gz")
        size = sum(len(text) for _, _, text in members) / 2**20
        seconds, _, peak = fleet_run(gdsdoctor("analyze", str(path), "-f", "json", "--deadline", "600"))
        rows.append(
            (
                f"`analyze`: {what}, {size:.2f} MiB ({path.stat().st_size / 2**20:.2f} MiB in the bundle)",
                f"{seconds:.1f} s, peak RSS {peak:.0f} MiB",
                f"<= 300 MiB: {verdict(peak <= 300)}",
            )
        )
    return rows


def _slow_to_parse(work: Path, subsystems: int) -> Path:
    """A bundle slow to parse, not to read: ``subsystems`` entries of `nvme list-subsys -o json`."""
    from gdsdoctor.capture.bundle import write_bundle
    from gdsdoctor.capture.capture import Capture
    from gdsdoctor.model import Artifact, ArtifactStatus

    item = '  {{"Name": "nvme-subsys{}", "NQN": "nqn.x", "Paths": [{{"Name": "nvme0", "State": "live"}}]}}'
    text = '{\n "Subsystems": [\n' + ",\n".join(item.format(i) for i in range(subsystems)) + "\n ]\n}\n"
    capture = Capture(origin="live", host={"hostname": "gpu001"}, label="gpu001")
    name = "cmd/nvme-list-subsys.json"
    capture.add("nvme_subsys", Artifact(name, ArtifactStatus.OK, text.encode(), source=name))
    return write_bundle(capture, work / "slow-to-parse")


def bench_deadlines(work: Path, subsystems: int) -> list[Row]:
    """How long past a deadline or timeout each stop takes (the tests assert the stop, not this)."""
    from gdsdoctor.capture.runner import run_command

    bindir = work / "deadline-bin"
    bindir.mkdir()
    hang = bindir / "lsmod"
    hang.write_text("#!/bin/sh\ntrap '' TERM; /bin/sleep 60 & wait\n")
    hang.chmod(0o755)
    host = work / "deadline-host"
    for name in ("proc", "sys", "etc"):
        (host / name).mkdir(parents=True)
    (host / "proc" / "mounts").write_text("/dev/nvme1n1 /mnt/ckpt ext4 rw 0 0\n")
    boot_id = "proc/sys/kernel/random/boot_id"  # this kernel's: a live capture runs commands for it
    (host / boot_id).parent.mkdir(parents=True)
    (host / boot_id).write_text(Path("/", boot_id).read_text())
    started = time.monotonic()
    run_command("cmd/hang.txt", [str(hang)], timeout=0.5)
    killed = time.monotonic() - started
    bundle = _slow_to_parse(work, subsystems)
    parsing = wall(run(*gdsdoctor("analyze", str(bundle), "--deadline", "1", "-f", "json")), 1)
    env = ENV | {"PATH": str(bindir)}
    argv = gdsdoctor("check", "--host-root", str(host), "--deadline", "3", "-f", "json")
    started = time.monotonic()
    subprocess.run(argv, env=env, capture_output=True, check=False)
    hanging = time.monotonic() - started
    slow = f"`analyze --deadline 1` of {subsystems:,} NVMe subsystems (slow to parse)"
    return [
        ("a command past its 0.5 s timeout, killed with its group", f"{killed:.2f} s", _within(killed, 2.5)),
        (slow, f"{parsing:.2f} s", _within(parsing, 4)),
        ("`check --deadline 3`, a probe hanging past SIGTERM", f"{hanging:.2f} s", _within(hanging, 7)),
    ]


def _within(seconds: float, bound: float) -> str:
    return f"< {bound:g} s: {verdict(seconds < bound)}"


# ---- 10. where the work grows: event-heavy fleets, big kernel logs, pastes (issue 36) -------------

EVENT_FLEET = 100  # bundles of each fleet (--events-fleet)
EVENTS_PER_NODE = 1_400  # kernel events in each bundle of the event-heavy fleet
BIG_LOG_LINES = 100_000  # the kernel log read as a bundle and as a paste (--big-log)


def _load() -> str:
    """The machine's load beside a figure: on a shared machine CPU time is what compares."""
    return f"load {os.getloadavg()[0]:.1f}"


def _with_log(capture: Any, text: str) -> Any:
    """This host's capture with ``text`` as its kernel log."""
    from gdsdoctor.capture.capture import Capture
    from gdsdoctor.model import Artifact, ArtifactStatus

    name = (capture.assignments.get("dmesg") or ["cmd/dmesg.txt"])[0]
    node = Capture(
        capture.origin,
        {**capture.artifacts, name: Artifact(name, ArtifactStatus.OK, text.encode())},
        {**{k: list(v) for k, v in capture.assignments.items()}, "dmesg": [name]},
        dict(capture.host),
        capture.options,
        capture.notes,
        capture.label,
    )
    return node


def line_loop_floor(text: str) -> float:
    """CPU seconds of the least a reader of the log must do in Python: a loop over its lines
    matching each one's timestamp (the yardstick of the kernel-log goal)."""
    import re

    stamp = re.compile(r"\[\s*(\d+\.\d+)\]")

    def loop() -> None:
        for line in text.split("\n"):
            stamp.match(line)

    return best(loop, samples=3)


def bench_events(repeat: int, fleet_size: int, jobs: int, log_lines: int, work: Path) -> list[Row]:
    """Issue 36's goals, each with its load: a fleet of this host's bundles at ``-j jobs``, with
    a quiet kernel log and with EVENTS_PER_NODE events each (a fleet after an incident); a big
    kernel log (scripts/incident_logs.py: an NVMe incident storm in a tenth of its lines) read
    in a bundle and pasted, in MB/s of CPU beside the line-loop floor; the paste against the
    bundle."""
    import incident_logs

    from gdsdoctor.capture.bundle import write_bundle
    from gdsdoctor.pipeline import analyze_paths

    capture = typical_capture()
    rows: list[Row] = []
    fleets = {
        "a quiet kernel log": incident_logs.incident_log(2_000, event_share=0.0),
        f"{EVENTS_PER_NODE:,} kernel events": incident_logs.events_log(EVENTS_PER_NODE),
    }
    targets = {"a quiet kernel log": 100, f"{EVENTS_PER_NODE:,} kernel events": 40}
    for label, text in fleets.items():
        root = work / f"fleet-{targets[label]}"
        root.mkdir(parents=True, exist_ok=True)
        node = _with_log(capture, text)
        for index in range(fleet_size):
            node.host = {**capture.host, "hostname": f"gpu{index:05d}"}
            write_bundle(node, root / f"gpu{index:05d}.tar.gz")
        load = _load()
        seconds, cpu, _ = fleet_run(
            gdsdoctor("analyze", str(root), "-j", str(jobs), "-o", f"json={work / (root.name + '.json')}")
        )
        rate, idle_rate = fleet_size / seconds, fleet_size / cpu * jobs
        rows.append(
            (
                f"fleet of {fleet_size} bundles with {label}, `-j {jobs}`",
                f"{rate:.0f} bundles/s wall, {cpu / fleet_size * 1000:.0f} ms CPU a bundle"
                f" ({idle_rate:.0f}/s on {jobs} idle cores); {load}",
                f">= {targets[label]}/s: wall {verdict(rate >= targets[label])},"
                f" idle cores {verdict(idle_rate >= targets[label])}",
            )
        )
    text = incident_logs.incident_log(log_lines)
    size_mb = len(text) / 1e6
    bundle = write_bundle(_with_log(capture, text), work / "big-log.tar.gz")
    paste = work / "dmesg.txt"
    paste.write_text(text)
    analyze_paths([bundle])  # rules loaded, patterns compiled
    load = _load()
    in_bundle = best(lambda: analyze_paths([bundle]), samples=repeat)
    pasted = best(lambda: analyze_paths([paste]), samples=repeat)
    floor = line_loop_floor(text)
    for where, seconds in (("in a bundle", in_bundle), ("pasted", pasted)):
        rate, share = size_mb / seconds, floor / seconds
        rows.append(
            (
                f"kernel log of {log_lines:,} lines ({size_mb:.1f} MB) {where}, whole analysis (CPU)",
                f"{seconds * 1000:.0f} ms = {rate:.1f} MB/s = {share:.1%} of the line-loop floor"
                f" ({size_mb / floor:.0f} MB/s); {load}",
                f">= 20 MB/s and >= 12% of the floor: {verdict(rate >= 20 and share >= 0.12)}",
            )
        )
    rows.append(
        (
            "the same kernel log pasted against in a bundle (CPU)",
            f"{pasted / in_bundle:.2f}x; {load}",
            f"<= 1.2x: {verdict(pasted / in_bundle <= 1.2)}",
        )
    )
    return rows


def install_wheel(work: Path) -> str:
    """Build this checkout's wheel (its build hook writes the parsed rules into it) and install
    it, without dependencies (this interpreter has them), into a directory of ``work``."""
    wheels, site = work / "wheel", work / "site"
    pip = [sys.executable, "-m", "pip", "-q"]
    quiet = {"check": True, "stdout": subprocess.DEVNULL, "env": ENV}
    build = ["wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(REPO)]
    subprocess.run([*pip, *build], **quiet)
    wheel = next(wheels.glob("gdsdoctor-*.whl"))
    subprocess.run([*pip, "install", "--no-deps", "--target", str(site), str(wheel)], **quiet)
    return str(site)


def bench_install() -> list[Row]:
    """scripts/install_check.py's steps, as rows (its own output lines)."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "install_check.py")], capture_output=True, text=True
    )
    rows: list[Row] = []
    for line in done.stdout.splitlines():
        state, _, what = line.partition(" ")
        rows.append((f"install check: {what.strip()[:120]}", state.strip(), "ok"))
    rows.append(
        ("install check, whole", f"{time.monotonic() - started:.0f} s", verdict(done.returncode == 0))
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and one repetition (smoke run)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--fleet-size", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--big", type=int, default=BIG, help="items of the large node (mounts, devices, events)"
    )
    parser.add_argument(
        "--events-fleet", type=int, default=EVENT_FLEET, help="bundles of each fleet of section 10"
    )
    parser.add_argument(
        "--big-log", type=int, default=BIG_LOG_LINES, help="lines of the kernel log of section 10"
    )
    parser.add_argument(
        "--source",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run the checkout itself, not a wheel built from it (default: only with --quick)",
    )
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        choices=[*SECTIONS],
    )
    args = parser.parse_args()
    repeat, fleet_size = (1, 8) if args.quick else (args.repeat, args.fleet_size)
    big = 100 if args.quick else args.big
    command = "python3 scripts/benchmark.py " + " ".join(sys.argv[1:])
    machine = (
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.system()} {platform.release()}"
    )
    print(f"`{command.strip()}` on {platform.node()}: {machine}\n")
    print("| measure | result | target |\n| --- | --- | --- |")
    with tempfile.TemporaryDirectory(prefix="gdsdoctor-bench-") as tmp:
        work = Path(tmp)
        ENV["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        if not (args.quick if args.source is None else args.source):
            ENV["PYTHONPATH"] = os.pathsep.join([install_wheel(work), ENV["PYTHONPATH"]])
        sections: dict[str, Callable[[], list[Row]]] = {
            "check": lambda: bench_check(repeat if args.quick else max(repeat, CHECK_ROUNDS)),
            "analyze": lambda: bench_analyze(repeat, fleet_size, args.jobs, work),
            "rules": lambda: bench_rules(repeat, big, 10 if args.quick else 100),
            "collect": lambda: bench_collect(repeat, work),
            "watch": lambda: bench_watch(1.0 if args.quick else WATCH_SECONDS, work),
            "sos": lambda: bench_sos(repeat, work),
            "install": lambda: [] if args.quick else bench_install(),
            "regex": lambda: bench_regex(1024 if args.quick else 16384, not args.quick),
            "hostile": lambda: bench_hostile(0.01 if args.quick else 1.0, work, not args.quick),
            "deadlines": lambda: bench_deadlines(work, 1_000 if args.quick else 100_000),
            "events": lambda: bench_events(
                repeat,
                2 if args.quick else args.events_fleet,
                args.jobs,
                2_000 if args.quick else args.big_log,
                work,
            ),
        }
        for name, section in sections.items():
            if name in args.skip:
                continue
            for what, measured, target in section():
                print(f"| {what} | {measured} | {target} |", flush=True)


if __name__ == "__main__":
    main()
