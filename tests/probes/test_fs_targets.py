"""Capacity as the storage counts it: per Lustre OST/MDT and BeeGFS target, per quota, local inodes, and
the node's memory for an asynchronous save, judged against the job's checkpoints (public outputs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor.pipeline import analyze_paths
from gdsdoctor.probes import fs_targets, meminfo

DATA = Path(__file__).resolve().parents[1] / "data"
TARGETS = DATA / "fs_targets"
CKPT = DATA / "app_log_ckpt"
JOB = {"params": "70B", "gpus": 64}  # 980 GB: about 89 GB on each of 11 OSTs


def _analysis(*paths: Path, job: dict | None = None, path: str | None = None):
    analysis = analyze_paths(list(paths), path, job=job)
    assert not analysis.report["source"]["notes"], analysis.report["source"]["notes"]
    return analysis


def _findings(*paths: Path, job: dict | None = None, path: str | None = None) -> dict[str, dict]:
    return {f["id"]: f for f in _analysis(*paths, job=job, path=path).report["findings"]}


def test_lfs_df_h_reads_every_target_with_its_line() -> None:
    text = (TARGETS / "ozstar-lfs-df-h.txt").read_text()
    section = fs_targets.parse_lfs_df(text, "lfs.txt")
    names = [t["name"] for t in section["targets"]]
    assert names[0] == "MDT0000" and names[-1] == "OST000A" and len(names) == 12
    ost = section["targets"][1]
    assert (ost["kind"], ost["fsname"], ost["mountpoint"], ost["index"], ost["use_pct"]) == (
        "data", "lustre", "/lustre", 0, 2)  # fmt: skip
    assert ost["avail_bytes"] == pytest.approx(13.5 * 2**40, rel=1e-3) and not ost["exact"]
    assert ost["src"]["line"] == 4 and "OST0000_UUID" in ost["src"]["text"]


def test_lfs_df_summary_and_beegfs_pools() -> None:
    fsx = fs_targets.parse_lfs_df((TARGETS / "fsx-lfs-df-h.txt").read_text(), "fsx.txt")
    assert [f["mountpoint"] for f in fsx["filesystems"]] == ["/fsx"]
    beegfs = fs_targets.parse_beegfs_df((TARGETS / "beegfs-docker-emergency-beegfs-df.txt").read_text(), "b")
    storage = [t for t in beegfs["targets"] if t["kind"] == "data"]
    assert [(t["name"], t["pool"], t["use_pct"]) for t in storage] == [
        ("101", "emergency", 74),
        ("102", "emergency", 74),
    ]
    assert storage[0]["inodes"] == 1_500_000 and storage[0]["inodes_free"] == 1_200_000
    older = fs_targets.parse_beegfs_df(
        (TARGETS / "beegfs-sandbox-beegfs-df.txt").read_text(), "b"
    )  # no "Cap."
    assert [t["kind"] for t in older["targets"]] == ["metadata", "data"]


@pytest.mark.parametrize(
    ("name", "used", "hard", "files_hard", "over"),
    [
        ("ozstar-lfs-quota.txt", 1041408 * 1024, 6291456 * 1024, None, False),
        ("sdsc-lfs-quota-h.txt", round(792.3 * 2**20), round(9.537 * 2**40), 2_000_000, False),
        ("lfs-quota-home-full.txt", round(99.99 * 2**30), 100 * 2**30, 1_048_576, False),
        ("grex-quota-s.txt", 249 * 2**20, 105 * 2**30, 1_000_000, False),
        ("sheffield-quota-u-s-files-over-soft.txt", 3289 * 2**20, 76800 * 2**20, 350_000, True),
    ],
)
def test_quotas_from_lfs_quota_and_quota_s(
    name: str, used: int, hard: int, files_hard: int | None, over: bool
) -> None:
    [quota] = fs_targets.parse_quota((TARGETS / name).read_text(), name)["quotas"]
    assert quota["used_bytes"] == pytest.approx(used, rel=1e-3)
    assert quota["hard_bytes"] == pytest.approx(hard, rel=1e-3)
    assert quota["files_hard"] == files_hard and quota["over_soft"] is over


def test_enospc_with_aggregate_free_and_a_full_ost_names_the_ost() -> None:
    analysis = _analysis(TARGETS / "ozstar-lfs-df-h--ost6-full-edited.txt", CKPT / "ast-30--torch-save-enospc.log",
                         job=JOB)  # fmt: skip
    storage = analysis.facts["derived"]["storage"]
    free = sum(t["avail_bytes"] for t in storage["targets"] if t["kind"] == "data")
    assert free > 100e12  # the filesystem has over 100 TB free
    found = {f["id"]: f for f in analysis.report["findings"]}
    ost = found["capacity-target-full"]
    assert "OST0006 of /lustre" in ost["evidence"][0]["text"] and not ost["explained_by"]
    assert any(e.get("line") == 10 for e in ost["evidence"])  # OST0006's own line (after the prompt)
    assert found["checkpoint-write-out-of-space"]["explained_by"] == "capacity-target-full"


def test_a_healthy_lustre_stays_quiet_and_a_small_job_fits_where_a_big_one_does_not() -> None:
    assert "capacity-target-full" not in _findings(TARGETS / "ozstar-lfs-df-h.txt", job=JOB)
    assert "capacity-target-full" not in _findings(TARGETS / "fsx-lfs-df-h.txt", job={"params": "7B"})
    # 3 OSTs of 1.1 TiB: 405B × 14 B = 5.7 TB puts 1.9 TB on each, more than each has
    assert "capacity-target-full" in _findings(TARGETS / "fsx-lfs-df-h.txt", job={"params": "405B"})
    # kept checkpoints count: 3 × 980 GB over 11 OSTs is 267 GB each, still within 13.5 TiB
    assert "capacity-target-full" not in _findings(
        TARGETS / "ozstar-lfs-df-h.txt", job={**JOB, "checkpoints_kept": 3}
    )


def test_edquot_with_a_full_quota_names_the_quota() -> None:
    found = _findings(TARGETS / "lfs-quota-home-full.txt", CKPT / "hostg-7--edquot-lustre.log")
    assert "usr normandf on /home/mila" in found["capacity-quota-exceeded"]["evidence"][0]["text"]
    # the EDQUOT is a tool's intermediate file with no save in sight: not the checkpoint's (issue 31
    # item 9), but the quota stops every write of its owner and cites the job's line
    assert "checkpoint-write-out-of-space" not in found
    assert any(
        e.get("artifact") == "hostg-7--edquot-lustre.log"
        for e in found["capacity-quota-exceeded"]["evidence"]
    )
    files = _findings(TARGETS / "sheffield-quota-u-s-files-over-soft.txt")["capacity-quota-exceeded"]
    assert "over its limit" in files["evidence"][0]["text"]
    assert "capacity-quota-exceeded" not in _findings(TARGETS / "grex-quota-s.txt")  # 249M of 100G
    small = _findings(TARGETS / "ozstar-lfs-quota.txt", job=JOB)["capacity-quota-exceeded"]
    assert "the checkpoints need 980 GB" in small["evidence"][0]["text"]


def test_local_inodes_exhausted_on_the_checkpoint_path_only() -> None:
    df = TARGETS / "nixos-74524-df-ih-root-inodes-full.txt"
    found = _findings(df, path="/root/ckpt")
    assert "/ (/dev/sda2): 8 inodes free" in found["capacity-inodes-exhausted"]["evidence"][0]["text"]
    assert "capacity-inodes-exhausted" not in _findings(df)  # / is no data mount unless it holds --path


MEMINFO = "MemTotal:       2113265676 kB\nMemFree:        1985000000 kB\nMemAvailable:   1987110736 kB\n"


def test_meminfo_reads_available_memory() -> None:
    section = meminfo.parse_meminfo(MEMINFO, "meminfo")
    assert section["mem_available_bytes"] == 1987110736 * 1024 and section["src"]["line"] == 3
    assert meminfo.recognise_meminfo(MEMINFO) and not meminfo.recognise_meminfo("MemTotal is 2 TB\n")


ASYNC = {"save": "async", "memlock": "unlimited"}  # the job saves asynchronously, its pinning unlimited


@pytest.mark.parametrize(
    ("job", "fires"),
    [
        ({"params": "405B", "gpus": 8, **ASYNC}, True),  # one node stages 2 × 5.67 TB: more than its 2.03 TB
        ({"params": "70B", "gpus": 8, **ASYNC}, False),  # 2 × 980 GB = 1.96 TB: it just fits
        ({"params": "70B", "gpus": 8, "async_buffers": 3, **ASYNC}, True),  # 3 buffers: 2.94 TB
        ({"params": "405B", "gpus": 64, **ASYNC}, False),  # 8 nodes: 2 × 709 GB each
    ],
)
def test_async_headroom_compares_the_node_shard_with_available_memory(
    tmp_path: Path, job: dict, fires: bool
) -> None:
    (tmp_path / "meminfo").write_text(MEMINFO)
    found = _findings(tmp_path / "meminfo", job=job)
    assert ("async-save-host-memory-short" in found) is fires
    if fires:
        assert "2.03 TB available" in found["async-save-host-memory-short"]["evidence"][0]["text"]


def test_a_listing_cut_short_counts_the_osts_its_indexes_say() -> None:
    """SDSC Expanse's lfs df -h as published: 5 OST rows of 72 ('...' between OST:2 and OST:70). The
    even spread is over 72 OSTs, not 5 (else each OST's share is overstated 14 times)."""
    from gdsdoctor.facts.derived.storage_space import full_targets, storage_targets

    text = (TARGETS / "expanse-lfs-df-h-cut.txt").read_text()
    section = fs_targets.parse_lfs_df(text, "df")
    assert {t["listing_cut"] for t in section["targets"]} == {True}
    targets = storage_targets({"lfs_df": {"status": "ok", **section}})
    needed = 72 * 130 * 10**12  # 130 TB an OST: more than each has free (at most 111.9 TiB, 123 TB)
    short = full_targets(targets, needed)
    assert len(short) == 5 and {t["share_bytes"] for t in short} == {130 * 10**12}
    assert "an even spread over 72 data targets" in short[0]["share_basis"]
    whole = fs_targets.parse_lfs_df((TARGETS / "ozstar-lfs-df-h.txt").read_text(), "df")
    assert not any("listing_cut" in t for t in whole["targets"])  # a listing pasted whole
