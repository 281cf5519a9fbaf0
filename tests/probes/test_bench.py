"""fio JSON and gdsio text parsers on real outputs (tests/data/bench/, copied from shared/reference)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gdsdoctor.errors import ParseError
from gdsdoctor.probes import bench

DATA = Path(__file__).parent.parent / "data" / "bench"
GIB = 2**30
FIO_FILES = sorted(p.name for p in DATA.glob("fio-*.json"))
GDSIO_FILES = sorted(
    [p.name for p in DATA.glob("gdsio-output.*")] + [p.name for p in DATA.glob("gdsio.*.txt")]
)
NEGATIVES = [
    "gdsio-help.v1.1.nvidia-gds-config-guide.txt",
    "gds_stats-l3.dgx2.nvidia-gds-config-guide.txt",
    "proc-driver-nvidia-fs-stats.gds-0.9.nvidia-gds-config-guide.txt",
    "lsblk-J.util-linux-2.31-ubuntu18.04-aws-nvme.json",
    "nvme-id-ctrl-json.v1.x-samsung-pm983.json",
    "dmesg-nvme-io-error-status-ext4-journal-abort.txt",
    "nvidia-smi-topo.gdsnvfs-030.txt",
    "gdscheck-p.gdsnvfs-070.txt",
    "gdsio_verify.gdsnvfs-014.txt",
]


def read(name: str) -> str:
    return (DATA / name).read_text()


# --- fio -------------------------------------------------------------------------------------


def test_fio_kubestr_320_two_concurrent_jobs() -> None:
    facts = bench.parse_fio(read("fio-3.20.kubestr-2jobs-libaio.json"), "bench/fio.json")
    assert facts["version"] == "fio-3.20"
    assert [job["name"] for job in facts["jobs"]] == ["read_iops", "write_iops"]
    read_job, write_job = facts["jobs"]
    assert read_job["ioengine"] == "libaio" and read_job["direct"] is True  # from global options
    assert read_job["rw"] == "randread"
    assert read_job["block_size_bytes"] == 4096
    assert read_job["iodepth"] == 64 and read_job["numjobs"] == 1
    assert read_job["read"]["bytes_per_s"] == 4039322  # bw_bytes
    assert read_job["read"]["iops"] == pytest.approx(982.05078)
    assert read_job["read"]["io_bytes"] == 61886464
    assert read_job["read"]["lat_mean_ns"] is None  # gtod_reduce=1: N = 0, not measured
    assert write_job["write"]["bytes_per_s"] == 1616406
    assert read_job["src"] == {
        "artifact": "bench/fio.json",
        "line": 16,
        "text": '\t\t"jobname" : "read_iops",',
    }
    assert write_job["src"]["line"] == 246
    # both jobs are in group 0 (concurrent): each direction has one contributor
    assert facts["aggregate"] == {
        "read_bytes_per_s": 4039322,
        "read_iops": pytest.approx(982.05078),
        "write_bytes_per_s": 1616406,
        "write_iops": pytest.approx(390.525218),
    }
    assert facts["gds"] is False


def test_fio_333_write_then_read_groups() -> None:
    facts = bench.parse_fio(read("fio-3.33.local-write-read-2groups-libaio.json"), "bench/fio.json")
    assert facts["version"] == "fio-3.33"
    write_job, read_job = facts["jobs"]
    assert (write_job["groupid"], read_job["groupid"]) == (0, 1)
    assert write_job["block_size_bytes"] == 1 << 20
    assert write_job["numjobs"] == 2 and write_job["iodepth"] == 8
    assert write_job["write"]["io_bytes"] == 32 << 20
    assert write_job["write"]["bytes_per_s"] == 1597830095
    assert write_job["write"]["lat_mean_ns"] == pytest.approx(7373357.625)
    assert write_job["write"]["clat_p99_ns"] == 11075584
    assert facts["aggregate"]["write_bytes_per_s"] == 1597830095
    assert facts["aggregate"]["read_bytes_per_s"] == 1342177280


def test_fio_banner_before_json_and_line_offsets() -> None:
    text = "fio-3.20\nStarting 2 processes\n" + read("fio-3.20.kubestr-2jobs-libaio.json")
    facts = bench.parse_fio(text, "pasted")
    assert facts["jobs"][0]["src"]["line"] == 18
    assert bench.recognise_fio(text)


def synthetic_old_fio(version: str) -> str:
    """Shape of fio 2.x JSON (keys from fio's stat.c history), values chosen for the arithmetic."""
    return json.dumps(
        {
            "fio version": version,
            "global options": [{"ioengine": "libaio", "buffered": "0", "bs": "128KiB"}],
            "jobs": [
                {
                    "jobname": "old",
                    "groupid": 0,
                    "job options": {"rw": "write", "numjobs": "4", "iodepth": "32"},
                    "read": {"io_bytes": 0, "bw": 0, "iops": 0, "runtime": 0},
                    "write": {
                        "io_bytes": 1000,  # KiB before 2.21
                        "bw": 2048,  # KiB/s
                        "iops": 16.0,
                        "runtime": 500,
                        "lat": {"min": 1, "max": 9, "mean": 12.5, "stddev": 1.0},  # µs before 3.0
                        "clat": {"percentile": {"99.000000": 40}},
                    },
                }
            ],
        },
        indent=2,
    )


def test_fio_old_versions_units() -> None:
    job = bench.parse_fio(synthetic_old_fio("fio-2.2.10"), "x")["jobs"][0]
    assert job["write"]["bytes_per_s"] == 2048 * 1024  # bw KiB/s without bw_bytes
    assert job["write"]["io_bytes"] == 1000 * 1024
    assert job["write"]["lat_mean_ns"] == 12500  # lat µs
    assert job["write"]["clat_p99_ns"] == 40000
    assert job["direct"] is True  # buffered=0
    assert job["block_size_bytes"] == 128000  # fio kb_base=1024: KiB means 1000 (compat quirk)
    assert job["numjobs"] == 4 and job["iodepth"] == 32
    newer = bench.parse_fio(synthetic_old_fio("fio-2.99"), "x")["jobs"][0]
    assert newer["write"]["io_bytes"] == 1000  # from 2.21 on, io_bytes is bytes


def test_fio_libcufile_job_is_gds() -> None:
    document = json.loads(read("fio-3.33.local-write-read-2groups-libaio.json"))
    document["global options"].update({"ioengine": "libcufile", "cuda_io": "cufile", "gpu_dev_ids": "0:1"})
    facts = bench.parse_fio(json.dumps(document), "x")
    assert facts["gds"] is True
    assert facts["jobs"][0]["cuda_io"] == "cufile" and facts["jobs"][0]["gpu_dev_ids"] == "0:1"
    document["global options"]["cuda_io"] = "posix"
    assert bench.parse_fio(json.dumps(document), "x")["gds"] is False


@pytest.mark.parametrize(
    ("value", "size"),
    [("4k", 4096), ("4K", 4096), ("1M", 1 << 20), ("1m", 1 << 20), ("4KB", 4096), ("1MiB", 10**6),
     ("1M,512K", 1 << 20), ("4096", 4096), (65536, 65536), ("4k-16k", None), ("junk", None), (None, None)],
)  # fmt: skip
def test_fio_size(value: object, size: int | None) -> None:
    assert bench.fio_size(value) == size


def test_fio_size_kb_base_1000() -> None:
    assert bench.fio_size("4k", kb_base=1000) == 4000
    assert bench.fio_size("4KiB", kb_base=1000) == 4096


@pytest.mark.parametrize(
    "text",
    ["", "not json", "{", '{"a": 1}', "[1, 2]", '{"fio version": "fio-3.1", "jobs": 3}', '{"jobs": []}'],
)
def test_fio_rejects_non_fio(text: str) -> None:
    with pytest.raises(ParseError):
        bench.parse_fio(text, "x")


def test_fio_truncated_is_a_parse_error() -> None:
    text = read("fio-3.20.kubestr-2jobs-libaio.json")
    with pytest.raises(ParseError, match="truncated"):
        bench.parse_fio(text[: len(text) // 2], "x")
    assert bench.recognise_fio(text[: len(text) // 2])  # a cut paste is still recognised


# --- gdsio -----------------------------------------------------------------------------------


def test_gdsio_dgx2_same_vs_cross_switch() -> None:
    name = "gdsio-output.dgx2-nvme-raid0-same-vs-cross-switch.nvidia-gds-config-guide.txt"
    facts = bench.parse_gdsio(read(name), "bench/gdsio.txt")
    runs = facts["runs"]
    assert len(runs) == 9
    first = runs[0]
    assert first["io_type"] == "READ" and first["xfer_type"] == "GPUD"
    assert first["threads"] == 8 and first["io_depth"] is None
    assert first["dataset_done_bytes"] == 818796544 * 1024  # done > total with -T
    assert first["dataset_total_bytes"] == 4096000 * 1024
    assert first["io_size_bytes"] == 1 << 20
    assert first["throughput_gib_per_s"] == pytest.approx(6.524658)
    assert first["throughput_bytes_per_s"] == pytest.approx(6.524658 * GIB)
    assert first["avg_latency_us"] == pytest.approx(1197.370995)
    assert first["ops"] == 799606 and first["total_time_s"] == pytest.approx(119.679102)
    assert first["command"] == "dgx2> gdsio -D /nvme23/gds_dir -d 2 -w 8 -s 500M -i 1M -x 0 -I 0 -T 120"
    assert first["src"]["line"] == 2
    assert runs[1]["throughput_gib_per_s"] == pytest.approx(3.893747)  # GPU12, other switch
    assert runs[1]["src"]["line"] == 20
    assert [run["threads"] for run in runs[2:8]] == [4, 8, 16, 32, 64, 128]
    best = {(b["io_type"], b["xfer_type"]): b for b in facts["best"]}
    assert best["READ", "GPUD"]["runs"] == 2
    assert best["READ", "GPUD"]["throughput_bytes_per_s"] == pytest.approx(6.524658 * GIB)
    assert facts["errors"] == []


def test_gdsio_forum_three_transfer_types() -> None:
    facts = bench.parse_gdsio(read("gdsio-output.nvidia-forum-346097-gpud-cpuonly-cpugpu.txt"), "x")
    by_xfer = {run["xfer_type"]: run["throughput_gib_per_s"] for run in facts["runs"]}
    assert by_xfer == {"GPUD": 6.622534, "CPU_GPU": 6.573733, "CPUONLY": 6.478798}


def test_gdsio_batch_has_io_depth() -> None:
    facts = bench.parse_gdsio(read("gdsio-output.nvidia-getting-started-example1.txt"), "x")
    gpud, batch = facts["runs"]
    assert (gpud["xfer_type"], gpud["io_depth"], gpud["dataset_total_bytes"]) == ("GPUD", None, 8192)
    assert (batch["xfer_type"], batch["threads"], batch["io_depth"]) == ("GPU_BATCH", 1, 10)
    assert batch["ops"] == 20


def test_gdsio_verify_lines_and_stelline_prompts() -> None:
    verify = bench.parse_gdsio(read("gdsio-output.nvidia-deploy-test-gds-cpuonly-cpugpu-verify.txt"), "x")
    assert [(r["io_type"], r["xfer_type"]) for r in verify["runs"]] == [
        ("WRITE", "CPUONLY"), ("READ", "CPUONLY"), ("READ", "CPUONLY"), ("WRITE", "CPU_GPU"),
    ]  # fmt: skip
    asus = bench.parse_gdsio(read("gdsio-output.stelline-asus-esc8000a-gen4-raid0.txt"), "x")
    assert len(asus["runs"]) == 17
    assert asus["runs"][0]["io_size_bytes"] == 1 << 30
    best = {b["xfer_type"]: b["throughput_bytes_per_s"] / GIB for b in asus["best"]}
    assert best == pytest.approx({"GPUD": 24.352646, "CPUONLY": 25.474384})


def test_gdsio_fragments_keep_throughput_only() -> None:
    facts = bench.parse_gdsio(read("gdsio.gdsnvfs-030-vast-gds-throughput-drop-topology-sys.txt"), "x")
    assert [run["throughput_gib_per_s"] for run in facts["runs"]] == [2.308903, 6.885191, 20.600775]
    assert all(run["threads"] is None and run["inferred"] for run in facts["runs"])
    # types from the text before each fragment: `-I 1 -x 0`, `-I 0 -x 0`, then "… 2 (CPU_GPU)" prose
    assert [(r["io_type"], r["xfer_type"]) for r in facts["runs"]] == [
        ("WRITE", "GPUD"),
        ("READ", "GPUD"),
        ("READ", "CPU_GPU"),
    ]
    assert facts["runs"][0]["avg_latency_us"] == pytest.approx(81215.056568)
    assert facts["runs"][0]["command"].startswith("**Write Test:** `gdsio -T 60")
    assert facts["best"] == []


def test_gdsio_fragment_without_context_stays_unknown() -> None:
    facts = bench.parse_gdsio("Throughput: 2.308903 GiB/sec, Avg_Latency: 81215.056568 usecs\n", "x")
    (run,) = facts["runs"]
    assert (run["io_type"], run["xfer_type"], run["inferred"]) == (None, None, False)


def test_gdsio_error_only_output() -> None:
    name = "gdsio.gdsnvfs-070-cross-root-complex-compat-off-file-register-error.txt"
    facts = bench.parse_gdsio(read(name), "x")
    assert facts["runs"] == []
    assert [e["text"] for e in facts["errors"]] == [
        "file register error: GPUDirect Storage not supported on current file filename:/root/gds_test/gdsio.0"
    ]
    assert facts["errors"][0]["src"]["line"] == 4


def test_gdsio_rejects_other_text() -> None:
    for name in NEGATIVES:
        with pytest.raises(ParseError):
            bench.parse_gdsio(read(name), "x")


# --- recognisers -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", FIO_FILES)
def test_every_fio_sample_is_recognised_and_parsed(name: str) -> None:
    assert bench.recognise_fio(read(name))
    assert not bench.recognise_gdsio(read(name))
    assert bench.parse_fio(read(name), name)["jobs"]


@pytest.mark.parametrize("name", GDSIO_FILES)
def test_every_gdsio_sample_is_recognised_and_parsed(name: str) -> None:
    assert bench.recognise_gdsio(read(name))
    assert not bench.recognise_fio(read(name))
    facts = bench.parse_gdsio(read(name), name)
    assert facts["runs"] or facts["errors"]


@pytest.mark.parametrize("name", NEGATIVES)
def test_recognisers_reject_other_sources(name: str) -> None:
    assert not bench.recognise_fio(read(name))
    assert not bench.recognise_gdsio(read(name))


def test_probes_declare_bench_artifacts() -> None:
    fio, gdsio = bench.PROBES
    assert (fio.section, gdsio.section) == ("fio", "gdsio")
    assert [s.artifact for s in fio.sources] == ["bench/fio.json"]
    assert [s.artifact for s in gdsio.sources] == ["bench/gdsio.txt"]
    assert not any(s.argv or s.path or s.reader for s in (*fio.sources, *gdsio.sources))


# --- robustness ------------------------------------------------------------------------------

SAMPLES = [read(name) for name in (*FIO_FILES, *GDSIO_FILES)]


def parse_any(text: str) -> None:
    for parse in (bench.parse_fio, bench.parse_gdsio):
        with contextlib.suppress(ParseError):
            parse(text, "x")
    bench.recognise_fio(text)
    bench.recognise_gdsio(text)


@given(st.text())
def test_parsers_only_raise_parse_error_on_any_text(text: str) -> None:
    parse_any(text)


@settings(max_examples=200)
@given(st.sampled_from(SAMPLES), st.integers(min_value=0, max_value=100_000), st.data())
def test_parsers_survive_truncation_and_line_drops(sample: str, cut: int, data: st.DataObject) -> None:
    parse_any(sample[:cut])
    lines = sample.split("\n")
    dropped = data.draw(st.sets(st.integers(min_value=0, max_value=max(0, len(lines) - 1)), max_size=20))
    parse_any("\n".join(line for i, line in enumerate(lines) if i not in dropped))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=5),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=20,
)


@given(JSON_VALUES)
def test_fio_parser_survives_odd_json_values(value: object) -> None:
    for key in ("jobs", "global options", "fio version"):
        document = json.loads(read("fio-3.20.kubestr-2jobs-libaio.json"))
        document[key] = value
        parse_any(json.dumps(document))
    document = json.loads(read("fio-3.20.kubestr-2jobs-libaio.json"))
    document["jobs"][0]["write"] = value
    document["jobs"][1]["job options"] = value
    parse_any(json.dumps(document))


# ---- fio's text output ---------------------------------------------------------------------------

FIO_TEXT_ZFS = "fio-3.25-text.zfs-raidz2-fdatasync-4k.k8s-homelab.txt"
FIO_TEXT_VPS = "fio-3.1-text.libaio-4k-write-qd4.vps-comparison.txt"


def test_fio_text_gives_the_jobs_its_json_would() -> None:
    text = (DATA / FIO_TEXT_VPS).read_text()
    assert bench.recognise_fio(text)
    section = bench.parse_fio(text, FIO_TEXT_VPS)
    assert (section["format"], section["version"], section["gds"]) == ("text", "fio-3.1", False)
    (job,) = section["jobs"]
    assert (job["name"], job["rw"], job["ioengine"], job["block_size_bytes"], job["iodepth"]) == (
        "myjob",
        "write",
        "libaio",
        4096,
        4,
    )
    assert job["direct"] is None  # not printed: never guessed
    write = job["write"]
    assert write["bytes_per_s"] == 112 * 2**20 and write["iops"] == 28_800 and write["io_bytes"] == 4 * 2**30
    assert (
        write["runtime_ms"] == 36447 and write["lat_mean_ns"] == 136_970 and write["clat_p99_ns"] == 408_000
    )
    assert job["read"]["bytes_per_s"] is None and section["aggregate"]["write_bytes_per_s"] == 112 * 2**20
    assert job["src"]["line"] == 7 and "groupid=0" in job["src"]["text"]


def test_fio_text_takes_the_completion_percentiles_not_the_sync_ones() -> None:
    section = bench.parse_fio((DATA / FIO_TEXT_ZFS).read_text(), FIO_TEXT_ZFS)
    write = section["jobs"][0]["write"]
    assert write["bytes_per_s"] == 382 * 1024 and write["clat_p99_ns"] == 56_000  # not sync's 62 ms
    assert write["lat_mean_ns"] == 28_550


def test_fio_2_text_and_a_pasted_summary() -> None:
    old = (
        "create-files: (g=0): rw=write, bs=4K-4K/4K-4K/4K-4K, ioengine=sync, iodepth=1\n"
        "fio-2.2.10\n"
        "create-files: (groupid=0, jobs=1): err= 0: pid=2619: Mon Apr 23 15:41:29 2018\n"
        "  write: io=3200.0KB, bw=1935.9KB/s, iops=483, runt=  1653msec\n"
    )
    job = bench.parse_fio(old, "p")["jobs"][0]
    assert job["write"]["bytes_per_s"] == pytest.approx(1935.9 * 1024)  # fio 2's KB is 1024 bytes
    assert (job["block_size_bytes"], job["write"]["runtime_ms"]) == (4096, 1653)
    summary = (
        "Run status group 0 (all jobs):\n"
        "   READ: bw=54.5MiB/s (57.1MB/s), 54.5MiB/s-54.5MiB/s (57.1MB/s-57.1MB/s), io=6537MiB (6854MB), "
        "run=120002-120002msec\n"
        "  WRITE: bw=54.5MiB/s (57.2MB/s), 54.5MiB/s-54.5MiB/s (57.2MB/s-57.2MB/s), io=6544MiB (6862MB), "
        "run=120002-120002msec\n"
    )
    section = bench.parse_fio(summary, "p")
    assert [j["name"] for j in section["jobs"]] == ["group 0"]
    assert section["aggregate"]["read_bytes_per_s"] == 54.5 * 2**20


def test_fio_si_units_are_powers_of_1000_in_fio_3() -> None:
    text = (
        "j: (groupid=0, jobs=2): err= 0: pid=1: Mon Jan  1 00:00:00 2024\n"
        "  write: IOPS=1000, BW=629MB/s (600MiB/s)(1258MB/2000msec)\n"
    )
    assert bench.parse_fio(text, "p")["jobs"][0]["write"]["bytes_per_s"] == 629e6


def test_text_that_is_not_fio_is_not_read_as_fio() -> None:
    assert not bench.recognise_fio("WRITE: something\nRun status: fine\n")
    with pytest.raises(ParseError):
        bench.parse_fio("Run status group 0 (all jobs):\n\n", "p")
