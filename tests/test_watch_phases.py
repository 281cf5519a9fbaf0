"""Phase detection and limiters (pure) on recorded and built timelines, each with a near miss."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gdsdoctor.checkpoint.phases import Interval, find_phases
from gdsdoctor.errors import ParseError
from gdsdoctor.probes.watch import recognise
from gdsdoctor.probes.watch_timeline import analyse, parse
from gdsdoctor.watch import devices, sampler
from gdsdoctor.watch.events import kernel_event
from gdsdoctor.watch.timeline import to_line

DATA = Path(__file__).parent / "data" / "watch"
MB = 1e6
T0 = 1_796_000_000.0  # 2026-11-30 ... UTC


def head(**devices_extra: Any) -> dict[str, Any]:
    resolved = {
        "path": "/ckpt",
        "mount": "/ckpt",
        "fstype": "xfs",
        "top": "md0",
        "below": ["nvme0n1", "nvme1n1"],
        "members": ["nvme0n1", "nvme1n1"],
        "controllers": ["nvme0", "nvme1"],
        "notes": [],
    }
    static = {"queue_depth": {"nvme0n1": 32}, "line_rates": {"nvme0 PCIe link": 1000 * MB}}
    return {
        "type": "header",
        "format": "gdsdoctor-watch",
        "version": 1,
        "devices": resolved | devices_extra,
        "static": static,
        "job": None,
        "notes": [],
    }


def samples(rates_mb: list[float], every: float = 1.0, **per_sample: Any) -> list[dict[str, Any]]:
    """Samples whose md0 counter grows at each rate (MB/s); ``per_sample[key]`` is a function of
    the sample's index giving more fields (member disks, meminfo, nvfs…)."""
    written, found = 0, []
    for index in range(len(rates_mb) + 1):
        sample: dict[str, Any] = {
            "type": "sample",
            "t": T0 + index * every,
            "line": index + 2,
            "disks": {"md0": {"write_bytes": written}},
        }
        for key, make in per_sample.items():
            value = make(index)
            if key == "disks":
                sample["disks"] |= value
            else:
                sample[key] = value
        found.append(sample)
        if index < len(rates_mb):
            written += int(rates_mb[index] * MB * every)
    return found


def watched(rates: list[float], events: list[dict[str, Any]] = (), header: dict | None = None, **more: Any):
    return analyse(header or head(), samples(rates, **more), list(events))


def kinds(section: dict[str, Any]) -> set[str]:
    return {lim["kind"] for lim in section["limiters"]}


# --- phases ----------------------------------------------------------------------------------


def test_a_phase_is_writes_above_50_mb_s_and_its_bytes_are_counted() -> None:
    section = watched([0, 0, 60, 60, 60, 60, 0, 0, 0, 0])
    [phase] = section["phases"]
    assert phase["bytes"] == 240 * MB and phase["duration_s"] == 4.0 and not phase["ongoing"]
    assert phase["start"] == T0 + 2 and phase["stall_s"] == 4.0


def test_near_miss_writes_at_45_mb_s_are_no_phase() -> None:
    assert watched([0, 45, 45, 45, 45, 0])["phases"] == []


def test_ten_percent_of_the_peak_raises_the_threshold() -> None:
    section = watched([2000, 2000, 150, 150, 150, 150, 0])
    [phase] = section["phases"]
    assert phase["bytes"] == 4000 * MB  # 150 MB/s is under 10 % of a 2 GB/s peak: the phase ended


def test_a_dip_of_2_s_stays_in_the_phase_and_3_s_end_it() -> None:
    assert len(watched([100, 100, 10, 10, 100, 100, 0, 0, 0])["phases"]) == 1
    one = watched([100, 100, 10, 10, 100, 100, 0, 0, 0])["phases"][0]
    assert one["bytes"] == 420 * MB  # the dip's bytes belong to the phase
    assert len(watched([100, 100, 10, 10, 10, 100, 100, 0, 0, 0])["phases"]) == 2


def test_a_phase_still_writing_at_the_end_is_ongoing() -> None:
    [phase] = watched([0, 100, 100])["phases"]
    assert phase["ongoing"]


def test_collapse_needs_half_the_rate_for_2_s() -> None:
    [collapse] = watched([1000, 1000, 1000, 200, 200, 200, 1000, 0, 0, 0])["collapses"]
    assert collapse["at"] == T0 + 3 and collapse["for_s"] == 3.0 and collapse["recovered"]
    assert collapse["from_bytes_per_s"] == 1000 * MB and collapse["to_bytes_per_s"] == 200 * MB
    assert "at " in collapse["says"] and "fell from 1 GB/s to 200 MB/s for 3 s" in collapse["says"]
    assert watched([1000, 1000, 1000, 200, 1000, 1000, 0, 0, 0])["collapses"] == []  # 1 s
    assert watched([1000, 1000, 1000, 600, 600, 600, 1000, 0, 0, 0])["collapses"] == []  # 60 %


def test_recorded_fio_collapse_on_xfs() -> None:
    section = parse((DATA / "xfs-collapse.timeline.jsonl").read_text(), "watch/timeline.jsonl")
    [phase] = section["phases"]
    written = 524288000 + 188743680  # fio's io_bytes (SOURCES)
    assert abs(phase["bytes"] - written) <= 0.10 * written
    [collapse] = phase["collapses"]
    assert collapse["from_bytes_per_s"] > 200 * MB and 40 * MB < collapse["to_bytes_per_s"] < 80 * MB


# dd's own bytes and seconds (SOURCES.md): a write shorter than two samples, and one whose first
# second completed little while the device was busy.
DD_RUNS = {
    "xfs-shm-loop-dd-1.5gib-direct": (1593835520, 0.797289),
    "xfs-loop-dd-330mib-direct": (346030080, 1.10711),
}


@pytest.mark.parametrize("name", sorted(DD_RUNS))
def test_a_short_write_is_timed_by_the_device_not_by_whole_samples(name: str) -> None:
    """At 1 s samples a 0.8 s dd spans two intervals (2 s: 797 MB/s for its 2.0 GB/s); the busy
    time of the device gives its length and rate within 15 % of dd's own."""
    text = (DATA / f"{name}.timeline.jsonl").read_text()
    [phase] = parse(text, "watch/timeline.jsonl")["phases"]
    written, seconds = DD_RUNS[name]
    assert phase["edges"] == "busy"
    assert abs(phase["bytes"] - written) <= 0.01 * written
    assert abs(phase["duration_s"] / seconds - 1) < 0.15 and phase["stall_s"] == phase["duration_s"]
    assert abs(phase["bytes_per_s"] / (written / seconds) - 1) < 0.15
    # without the device's busy time (NFS, writers) two intervals cannot be split: whole samples
    records = [json.loads(line) for line in text.splitlines()]
    for record in records:
        for row in (record.get("disks") or {}).values():
            row.pop("io_ms", None)
    [blind] = parse("\n".join(json.dumps(r) for r in records), "watch/timeline.jsonl")["phases"]
    assert blind["edges"] == "samples" and blind["duration_s"] == round(blind["end"] - blind["start"], 3)


def test_edges_without_busy_time_are_interpolated_at_the_rate_between_them() -> None:
    """1.3 s at 1.2 GB/s from 0.85 s, over 1 s samples: 0.15 s, 1 s and 0.15 s of writing, read as
    1.56 GB in 1.3 s (1.2 GB/s), not in 3 s (520 MB/s)."""
    series = [
        Interval(0, 1, 180_000_000, 2),
        Interval(1, 2, 1_200_000_000, 3),
        Interval(2, 3, 180_000_000, 4),
    ]
    series += [Interval(t, t + 1, 0, 5 + t) for t in range(3, 7)]
    [phase] = find_phases(series)
    assert phase["edges"] == "interpolated" and phase["duration_s"] == pytest.approx(1.3)
    assert phase["bytes_per_s"] == pytest.approx(1.2e9)
    # the device's busy time is a floor: an edge busy 0.5 s wrote at least 0.5 s
    busy = [i._replace(busy_s=b) for i, b in zip(series, [0.5, 1.0, 0.15, 0, 0, 0, 0], strict=True)]
    assert find_phases(busy)[0]["duration_s"] == pytest.approx(1.65)


def _limiters_of(name: str, drop: str | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    records = [json.loads(line) for line in (DATA / f"{name}.timeline.jsonl").read_text().splitlines()]
    for record in records:
        record.pop(drop or "", None)
    [phase] = parse("\n".join(json.dumps(r) for r in records), "watch/timeline.jsonl")["phases"]
    return phase, [lim for lim in phase["limiters"] if lim["kind"] == "page_cache"]


def test_an_o_direct_writer_is_not_blamed_for_the_hosts_dirty_pages() -> None:
    """dd with O_DIRECT while other writers dirtied 447 MB on another filesystem: the host's
    Dirty + Writeback grew by more than the phase's share, but the writer's own file says direct."""
    name = "xfs-shm-loop-dd-direct-beside-buffered-writers"
    phase, cached = _limiters_of(name)
    assert cached == [] and abs(phase["duration_s"] - 1.72893) < 0.1  # dd's own seconds
    samples = [json.loads(x) for x in (DATA / f"{name}.timeline.jsonl").read_text().splitlines()][1:]
    inside = [
        s["mem"]["dirty_bytes"]
        for s in samples
        if s["type"] == "sample" and phase["start"] <= s["t"] <= phase["end"]
    ]
    assert max(inside) - inside[0] > 0.2 * phase["bytes"]  # what the system-wide counter alone said
    _phase, [unseen] = _limiters_of(name, drop="open_writes")  # an older recording, no writers seen
    assert unseen["writers"] == "unseen" and "whole host" in unseen["says"]


def test_a_buffered_writer_is_named_from_its_own_file() -> None:
    """dd without O_DIRECT, flushed by its fsync: the device wrote after Dirty had fallen, so the
    host's counter did not grow during the phase; the writer's open file says buffered."""
    _phase, [cached] = _limiters_of("xfs-shm-loop-dd-buffered-fsync")
    assert cached["writers"] == "buffered" and "without O_DIRECT" in cached["says"]
    assert _limiters_of("xfs-shm-loop-dd-buffered-fsync", drop="open_writes")[1] == []  # missed before


def test_recorded_enospc_on_xfs_fails_the_phase_with_its_device_errors() -> None:
    section = parse((DATA / "xfs-enospc.timeline.jsonl").read_text(), "watch/timeline.jsonl")
    [failed] = section["failed_phases"]
    [error] = [lim for lim in failed["limiters"] if lim["kind"] == "kernel_errors"]
    assert error["device"] == "loop0" and "critical space allocation error" in error["says"]
    assert error["src"]["line"] > 1 and error["src"]["artifact"] == "watch/timeline.jsonl"


# --- limiters, each with a near miss -----------------------------------------------------------


def event(kind: str, device: str, at: float, message: str = "m") -> dict[str, Any]:
    return {
        "type": "event",
        "t": T0 + at,
        "source": "kmsg",
        "kind": kind,
        "device": device,
        "message": message,
        "line": 99,
    }


def test_controller_reset_on_own_device_only() -> None:
    rates = [500, 500, 500, 500, 0, 0, 0, 0]
    section = watched(rates, [event("nvme_reset", "nvme1", 2.0)])
    assert kinds(section) == {"controller_reset"}
    assert "nvme1 reset its controller" in section["limiters"][0]["says"]
    assert kinds(watched(rates, [event("nvme_reset", "nvme7", 2.0)])) == set()  # another drive
    assert kinds(watched(rates, [event("nvme_reset", "nvme1", 20.0)])) == set()  # long after


def test_reset_during_a_collapse_is_named_in_it() -> None:
    section = watched([2100, 2100, 2100, 300, 300, 300, 300, 0, 0, 0, 0], [event("nvme_reset", "nvme1", 3.2)])
    assert (
        "nvme1 reset its controller; write throughput fell from 2.1 GB/s to 300 MB/s for 4 s"
        in (section["collapses"][0]["says"])
    )


def test_path_lost_from_ana_state() -> None:
    def ana(state: str):
        return lambda i: {"nvme0n1": "optimized", "nvme1n1": state if i >= 2 else "optimized"}

    assert kinds(watched([500] * 5 + [0] * 4, ana=ana("inaccessible"))) == {"path_lost"}
    assert kinds(watched([500] * 5 + [0] * 4, ana=ana("optimized"))) == set()


def test_kernel_errors_fail_the_phase() -> None:
    section = watched([500] * 4 + [0] * 4, [event("blk_io_error", "nvme0n1p1", 1.0)])
    assert section["failed_phases"] and kinds(section) == {"kernel_errors"}
    assert watched([500] * 4 + [0] * 4, [event("blk_io_error", "sda", 1.0)])["failed_phases"] == []


def members(rate0: float, rate1: float):
    return lambda i: {
        "nvme0n1": {"write_bytes": int(i * rate0 * MB)},
        "nvme1n1": {"write_bytes": int(i * rate1 * MB)},
    }


def test_slow_sibling() -> None:
    section = watched([500] * 4 + [0] * 4, disks=members(400, 100))
    assert kinds(section) == {"slow_sibling"} and "nvme1n1 wrote 100 MB/s" in section["limiters"][0]["says"]
    assert kinds(watched([500] * 4 + [0] * 4, disks=members(300, 200))) == set()  # 67 %: near miss


def test_gds_counters_flat_while_bytes_flow() -> None:
    flat = watched([500] * 4 + [0] * 4, nvfs=lambda i: {"write_bytes": 7, "writes_ops": 3})
    assert kinds(flat) == {"gds_compat"}
    rising = watched([500] * 4 + [0] * 4, nvfs=lambda i: {"write_bytes": 7 + i, "writes_ops": 3 + i})
    assert kinds(rising) == set()
    assert kinds(watched([500] * 4 + [0] * 4)) == set()  # no nvidia-fs: nothing said


def test_queue_saturated() -> None:
    def inflight(full_from: int):
        return lambda i: {"nvme0n1": {"write_bytes": 0, "inflight_w": 32 if i >= full_from else 4}}

    assert kinds(watched([500] * 6 + [0] * 4, disks=inflight(0))) == {"queue_saturated"}
    assert kinds(watched([500] * 6 + [0] * 4, disks=inflight(6))) == set()


def test_rdma_link_down_and_errors() -> None:
    def port(down: int, errors: int):
        return lambda i: {"mlx5_0/1": {"link_downed": down if i >= 3 else 0, "symbol_error": errors}}

    assert kinds(watched([500] * 5 + [0] * 4, rdma=port(1, 0))) == {"rdma_link_down"}
    assert kinds(watched([500] * 5 + [0] * 4, rdma=port(0, 5))) == set()  # constant: not during the phase


def test_flat_at_the_line_rate() -> None:
    assert kinds(watched([950] * 5 + [0] * 4)) == {"line_rate"}
    assert kinds(watched([800] * 5 + [0] * 4)) == set()  # 80 % of the link
    assert kinds(watched([950, 500, 1000, 950, 950] + [0] * 4)) == set()  # not flat


def test_page_cache_growth() -> None:
    def dirty(per_s_mb: float):
        return lambda i: {"dirty_bytes": int(min(i, 4) * per_s_mb * MB), "writeback_bytes": 0}

    assert kinds(watched([500] * 4 + [0] * 4, mem=dirty(200))) == {"page_cache"}
    assert kinds(watched([500] * 4 + [0] * 4, mem=dirty(20))) == set()


def test_stall_against_the_job_budget() -> None:
    header = head() | {"job": {"params": "70B"}}
    stall = watched([1200] * 5 + [0] * 4, header=header)["stall"]
    assert stall["checkpoint_bytes"] == 70e9 * 14 and stall["budget_met"] is False
    assert stall["stall_s"] == pytest.approx(0.98e12 / 1.2e9) and "70B parameters" in stall["says"]
    assert watched([1200] * 5 + [0] * 4)["stall"] is None  # no job: nothing to set against


# --- the recording is untrusted; the readers are pure ------------------------------------------


def test_garbage_records_are_skipped_and_no_header_is_unparsable() -> None:
    lines = [to_line(head()), "not json", to_line({"type": "sample", "t": "soon"}), to_line({"type": "x"})]
    assert parse("\n".join(lines), "a")["skipped_records"] == 3
    with pytest.raises(ParseError):
        parse('{"type": "sample", "t": 1}\n', "a")
    assert recognise(to_line(head())) and not recognise('{"type": "sample"}')


def test_kernel_records_only_from_the_kernel() -> None:
    record = "3,1234,5000000,-;critical space allocation error, dev loop3, sector 8 op 0x1:(WRITE) flags 0x0"
    found = kernel_event(record, now_wall=1000.0, now_monotonic=6.0)
    assert found is not None and found["kind"] == "backing_store_full" and found["device"] == "loop3"
    assert found["t"] == 999.0  # the record's own clock, on the wall clock
    assert kernel_event("11,1,5000000,-;" + record.split(";", 1)[1], 1000.0, 6.0) is None  # user facility
    assert kernel_event("6,1,1,-;random chatter", 1000.0, 6.0) is None


def test_readers_parse_real_files() -> None:
    stats = (
        Path(__file__).parent
        / "data/nvidia_fs/proc-driver-nvidia-fs-stats.gds-0.9.nvidia-gds-config-guide.txt"
    )
    nvfs = sampler.parse_nvfs_stats(stats.read_text())
    assert nvfs["writes_ops"] == 309770912 and nvfs["write_bytes"] == 9748727 * 2**20
    disks = sampler.parse_diskstats(" 259 0 nvme0n1 10 0 80 1 20 0 160 5 2 30 40 0 0 0 0\n", {"nvme0n1"})
    assert disks["nvme0n1"]["write_bytes"] == 160 * 512 and disks["nvme0n1"]["in_flight"] == 2
    assert sampler.parse_meminfo("Dirty:  8 kB\nWriteback: 4 kB\n") == {
        "dirty_bytes": 8192,
        "writeback_bytes": 4096,
    }
    assert sampler.parse_inflight("  0  7\n") == (0, 7) and sampler.parse_inflight("x") is None
    mountstats = (
        "device srv:/export mounted on /ckpt with fstype nfs4 statvers=1.1\n"
        "\tbytes:\t10 20 30 40 50 60 70 80\n\tper-op statistics\n\t WRITE: 9 9 0 0 0 0 0 0\n"
    )
    assert sampler.parse_mountstats(mountstats, "/ckpt") == {
        "buffered_write_bytes": 20,
        "direct_write_bytes": 40,
        "write_bytes": 60,
        "writes": 9,
    }
    assert sampler.parse_mountstats(mountstats, "/other") == {}


def test_mount_of_takes_the_longest_prefix() -> None:
    text = (DATA.parent / "fs/mountinfo.debian12-vm.txt").read_text()
    assert devices.mount_of("/", text)["mount"] == "/"
    found = devices.mount_of("/proc/self", text)
    assert found is not None and found["fstype"] == "proc"


def test_network_filesystem_says_what_cannot_be_measured(tmp_path: Path) -> None:
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/mountinfo").write_text(
        "30 1 0:50 / /ckpt rw - lustre 10.0.0.1@o2ib:/fs rw\n31 1 0:51 / /nfs rw - nfs4 srv:/x rw\n"
    )
    lustre = devices.resolve("/ckpt/run1", tmp_path)
    assert lustre["network"] and lustre["top"] is None and "wchar" in lustre["notes"][0]
    assert "mountstats" in devices.resolve("/nfs", tmp_path)["notes"][0]
    assert json.dumps(lustre)


GARBAGE = [
    {"type": "sample", "t": T0 + 2.5, "disks": {"md0": {"write_bytes": "lots"}}},
    {"type": "sample", "t": 1e300, "disks": {"md0": {"write_bytes": 1}}},
    {
        "type": "sample",
        "t": T0 + 2.5,
        "disks": [1, 2],
        "mem": "full",
        "rdma": {"p": [1]},
        "ctrl": {"nvme0": 3},
    },
    {"type": "sample", "t": T0 + 2.5, "nvfs": {"write_bytes": -1, "writes_ops": True}, "fs_used_bytes": "x"},
    {"type": "event", "t": T0 + 2.5, "kind": "nvme_reset", "device": ["nvme1"], "message": 5},
    {"type": "event", "t": "now", "kind": "nvme_reset"},
    {"type": "header", "format": "gdsdoctor-watch", "devices": []},  # a second header: skipped
]


@pytest.mark.parametrize("record", GARBAGE, ids=range(len(GARBAGE)))
def test_records_of_the_wrong_shape_never_break_the_analysis(record: dict[str, Any]) -> None:
    lines = [to_line(head())] + [to_line(s) for s in samples([500] * 5 + [0] * 4)]
    lines.insert(4, to_line(record))
    section = parse("\n".join(lines), "watch/timeline.jsonl")
    assert len(section["phases"]) == 1  # the good records still make their phase


def test_a_hostile_header_is_read_in_the_shapes_the_analysis_expects() -> None:
    hostile = {
        "type": "header",
        "format": "gdsdoctor-watch",
        "devices": {"top": 7, "below": "nvme0n1", "members": [1, "nvme1n1"]},
        "static": {"line_rates": {"x": "fast"}, "queue_depth": {"a": -3}},
        "job": {"params": ["70B"], "budget": True},
        "notes": "everything",
    }
    section = parse(to_line(hostile) + "\n" + to_line({"type": "sample", "t": T0}), "a")
    assert section["device"] is None and section["devices"] == [] and section["notes"] == []
    assert section["stall"] is None and section["measured"] is False


def test_writers_of_a_network_filesystem_are_counted_from_their_own_accounting(tmp_path: Path) -> None:
    """A real process writing under the mount: found by its open file, counted from then on."""
    import subprocess
    import sys

    from gdsdoctor.watch.writers import Writers

    # The writer writes, then waits for the watch's first sample before writing again, so that
    # sample sees writes made before it and none during it, however loaded the machine is.
    script = (
        "import sys, time\nf = open(sys.argv[1], 'wb')\nf.write(b'x' * 2**20); f.flush()\n"
        "print('ready', flush=True); sys.stdin.readline()\n"
        "for _ in range(40):\n    f.write(b'x' * 2**20); f.flush(); time.sleep(0.02)\n"
        "print('written', flush=True); time.sleep(5)\n"
    )
    argv = [sys.executable, "-c", script, str(tmp_path / "ckpt")]
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as writer:
        assert writer.stdin is not None and writer.stdout is not None
        try:
            assert writer.stdout.readline() == b"ready\n"
            writers = Writers(str(tmp_path))
            first = writers.sample()
            writer.stdin.write(b"go\n")
            writer.stdin.flush()
            assert writer.stdout.readline() == b"written\n"
            later = writers.sample()
        finally:
            writer.kill()
    assert first["processes"] == 1 and first["write_bytes"] == 0  # earlier writes are not this watch's
    assert later["write_bytes"] >= 10 * 2**20
    ended = writers.sample()
    assert ended["processes"] == 0 and ended["write_bytes"] == later["write_bytes"]  # kept when it exits


def test_a_network_filesystem_phase_comes_from_its_writers() -> None:
    lustre = head(top=None, below=[], members=[], controllers=[], fstype="lustre")
    built = samples(
        [0, 200, 200, 200, 0, 0, 0, 0],
        writers=lambda i: {"write_bytes": [0, 0, 2, 4, 6, 6, 6, 6, 6][i] * 10**8},
    )
    for sample in built:
        sample.pop("disks")
    [phase] = analyse(lustre, built, [])["phases"]
    assert phase["bytes"] == 600 * MB


def _recorded(name: str, drop: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in (DATA / f"{name}.timeline.jsonl").read_text().splitlines()]
    for record in records:
        for key in drop:
            record.pop(key, None)
    return parse("\n".join(json.dumps(r) for r in records), "watch/timeline.jsonl")["phases"]


@pytest.mark.parametrize("fstype", ["xfs", "ext4"])
def test_the_devices_own_page_cache_tells_a_direct_writer_from_a_buffered_one(fstype: str) -> None:
    """fio --direct=1 and --direct=0, 300 MiB each on a loop device: the host's Dirty grew by the
    315 MB either way (the loop device writes its backing file through the page cache); loop0's
    own dirtied pages (debugfs bdi) did not for the direct writer, and did for the buffered one,
    whose pages the device had not even written back when the watch ended."""
    [direct] = _recorded(f"{fstype}-loop-fio-300mib-direct", drop=("open_writes",))
    assert direct["io"]["mode"] == "direct" and direct["io"]["by"] == "device"
    assert not [lim for lim in direct["limiters"] if lim["kind"] == "page_cache"]
    [buffered] = _recorded(f"{fstype}-loop-fio-300mib-buffered")
    assert buffered["io"]["mode"] == "buffered" and buffered["io"]["by"] == "device"
    [cached] = [lim for lim in buffered["limiters"] if lim["kind"] == "page_cache"]
    assert "loop0's own page cache" in cached["says"]
    for phase in (direct, buffered):
        assert abs(phase["bytes"] - 300 * 2**20) < 0.05 * 300 * 2**20
    # Without the device's counters: the buffered write never reached the device, so no phase; the
    # direct one is not blamed on the host's counter, which the loop device's backing file moved.
    assert _recorded(f"{fstype}-loop-fio-300mib-buffered", drop=("bdi",)) == []
    [blind] = _recorded(f"{fstype}-loop-fio-300mib-direct", drop=("bdi", "open_writes"))
    assert blind["io"]["mode"] == "unknown" and "loop0 writes its backing file" in blind["io"]["says"]


def test_a_phase_record_carries_what_its_chart_needs() -> None:
    [phase] = _recorded("xfs-collapse")
    points = phase["series"]
    assert len(points) >= 5 and [p["t"] for p in points] == sorted(p["t"] for p in points)
    assert points[0]["t"] < phase["start"] + 1 and points[-1]["t"] >= phase["end"]
    assert {"t", "bytes_per_s", "errors", "dirty_bytes", "dirty_of", "inflight"} <= set(points[1])
    peak = max(p["bytes_per_s"] for p in points)
    assert abs(peak - phase["peak_bytes_per_s"]) < 1  # the same intervals as the phase's
    [failed] = _recorded("xfs-enospc")
    assert sum(p["errors"] for p in failed["series"]) >= 1  # the kernel's errors, at their sample
