"""BeeGFS and IBM Storage Scale (GPFS) capacity outputs read into the Lustre readers' facts, so that
the same capacity causes judge them (public outputs of several sites; tests/data/fs_targets)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor.capture.detect import recognise
from gdsdoctor.pipeline import analyze_paths
from gdsdoctor.probes import beegfs_layout, beegfs_quota, fs_targets, gpfs

TARGETS = Path(__file__).resolve().parents[1] / "data" / "fs_targets"
GIB, TIB = 2**30, 2**40


def _findings(*names: str, job: dict | None = None) -> dict[str, dict]:
    analysis = analyze_paths([TARGETS / name for name in names], None, job=job)
    lost = [note for note in analysis.report["source"]["notes"] if " as one (" not in note]  # combined: kept
    assert not lost, lost
    return {f["id"]: f for f in analysis.report["findings"]}


@pytest.mark.parametrize(
    ("name", "rows"),
    [
        # (owner, where, used, hard, files, files hard)
        ("wynton-beegfs-ctl-getquota.txt", [("alice", None, 88.71 * GIB, 1000 * GIB, 645266, None)]),
        ("usc-discovery-myquota-beegfs.txt", [  # a site wrapper: the path above each table
            ("ttrojan", "/home1/ttrojan", 127.23 * 2**20, 100 * GIB, 4530, 2_000_000),
            ("ttrojan", "/scratch/ttrojan", 446.78 * 2**20, 10 * TIB, 5797, None)]),
        ("delftblue-beegfs-getquota-pools.txt", [  # one table per storage pool
            ("<netid>", "storage pool scratch", 20.63 * GIB, 5 * TIB, 278772, 1_000_000),
            ("<netid>", "storage pool home", 3.44 * GIB, 8 * GIB, 48433, 1_000_000)]),
        ("unige-beegfs-quota-chunk-files-full.txt", [  # a wrapper with a storage column
            ("private_dpnc", "home", 12.76 * TIB, None, 24719933, None),
            ("private_dpnc", "scratch", 489.86 * TIB, 875 * TIB, 69942301, 70_000_000)]),
        ("wuppertal-beegfs-getquota-gid.txt", [("<groupname>", "storage pool Default", 51.5 * TIB, 60 * TIB,
                                                12345678, None)]),
    ],
)  # fmt: skip
def test_beegfs_getquota_tables(name: str, rows: list[tuple]) -> None:
    text = (TARGETS / name).read_text()
    assert beegfs_quota.recognise_getquota(text) and recognise(text).section == "beegfs_quota"
    quotas = beegfs_quota.parse_getquota(text, name)["quotas"]
    got = [(q["owner"], q["filesystem"], q["used_bytes"], q["hard_bytes"], q["files"], q["files_hard"])
           for q in quotas]  # fmt: skip
    assert [row[:2] + row[4:] for row in got] == [row[:2] + row[4:] for row in rows]
    for (_, _, used, hard, *_), (_, _, want_used, want_hard, *_) in zip(got, rows, strict=True):
        assert used == pytest.approx(want_used, rel=1e-3)
        assert hard == (None if want_hard is None else pytest.approx(want_hard, rel=1e-3))
    assert all(q["src"]["text"] in text for q in quotas)


@pytest.mark.parametrize(
    ("name", "kind", "owner", "fs", "used", "hard", "files_hard"),
    [
        ("gpfs-docs-mmlsquota-kb.txt", "usr", None, "gpfs", 28292096 * 1024, 4294967296 * 1024, 3_000_000),
        ("gpfs-docs-mmlsquota-block-size-g.txt", "usr", None, "gpfs", 27 * GIB, 4096 * GIB, 3_000_000),
        ("amarel-mmlsquota-auto.txt", "usr", None, "cache", 78.18 * GIB, 110 * GIB, None),  # --block-size=auto
        ("cshl-griddf-mmlsquota-fileset.txt", "fileset", None, "grid", 29.74 * TIB, 32 * TIB, None),
        ("storm-mmlsquota-fileset-nearly-full.txt", "fileset", None, "storage_2", 203872043440 * 1024,
         204010946560 * 1024, None),
        ("mihg-mmlsquota-group.txt", "grp", "mihg", "homelv", 381268576 * 1024, 1180696576 * 1024, None),
    ],
)  # fmt: skip
def test_mmlsquota_rows(name: str, kind: str, owner: str | None, fs: str, used: float, hard: int,
                        files_hard: int | None) -> None:  # fmt: skip
    text = (TARGETS / name).read_text()
    assert gpfs.recognise_mmlsquota(text) and recognise(text).section == "gpfs_quota"  # not lfs quota's
    first = gpfs.parse_mmlsquota(text, name)["quotas"][0]
    assert (first["kind"], first["owner"], first["filesystem"], first["files_hard"]) == (
        kind,
        owner,
        fs,
        files_hard,
    )
    assert first["used_bytes"] == pytest.approx(used, rel=1e-3)
    assert first["hard_bytes"] == pytest.approx(hard, rel=1e-3) and first["over_soft"] is False


def test_beegfs_8_health_df_gives_the_beegfs_df_targets() -> None:
    text = (TARGETS / "beegfs8-health-df.txt").read_text()
    assert fs_targets.recognise_beegfs_df(text)
    targets = fs_targets.parse_beegfs_df(text, "df")["targets"]
    assert [(t["name"], t["kind"], t["pool"], t["use_pct"]) for t in targets] == [
        ("2", "metadata", "low", 1), ("301", "data", "low", 1), ("302", "data", "normal", 2)]  # fmt: skip
    assert targets[1]["avail_bytes"] == pytest.approx(99.2 * GIB, rel=1e-3)
    assert targets[2]["inodes_free"] == 468_800_000 and targets[0]["inodes_used"] == 66_100


def test_a_small_beegfs_target_is_judged_as_an_ost_is() -> None:
    """BeeGFS 8, two storage targets (99.2 GiB and 879.5 GiB free): a 70B checkpoint's even spread
    (490 GB each) does not fit the small one; a 7B one (49 GB each) fits both."""
    full = _findings("beegfs8-health-df.txt", job={"params": "70B"})["capacity-target-full"]
    said = full["evidence"][0]["text"]
    assert said.startswith("301 of beegfs: 107 GB free, less than its share of the checkpoints (490 GB:")
    assert "beegfs-ctl --getentryinfo" in said
    assert any(step["command"].startswith("beegfs-df") for step in full["remediation"])
    assert not any("lfs " in step["command"] for step in full["remediation"])
    assert "capacity-target-full" not in _findings("beegfs8-health-df.txt", job={"params": "7B"})


@pytest.mark.parametrize(
    ("name", "job", "reason"),
    [
        ("unige-beegfs-quota-chunk-files-full.txt", None, "private_dpnc on scratch: 99.9% of its files used"),
        ("storm-mmlsquota-fileset-nearly-full.txt", None, "fileset on storage_2: 100% of its space used"),
        ("wuppertal-beegfs-getquota-gid.txt", {"params": "1T"}, "9.35 TB left, the checkpoints need 14 TB"),
        (
            "cshl-griddf-mmlsquota-fileset.txt",
            {"params": "405B"},
            "fileset on grid: 2.44 TB left, the checkpoints",
        ),
    ],
)
def test_beegfs_and_gpfs_quotas_fire_the_quota_cause(name: str, job: dict | None, reason: str) -> None:
    found = _findings(name, job=job)["capacity-quota-exceeded"]
    assert reason in found["evidence"][0]["text"]
    assert found["evidence"][1]["artifact"].endswith(name)  # the quota's own line


@pytest.mark.parametrize(
    ("names", "job"),
    [
        (("wuppertal-beegfs-getquota-gid.txt",), None),  # 86 % of 60 TiB: no job, no threshold passed
        (("cshl-griddf-mmlsquota-fileset.txt",), None),  # 93 %, under 95 %
        (("cshl-griddf-mmlsquota-fileset.txt",), {"params": "70B"}),  # 980 GB fits the 2.44 TB left
        (("mihg-mmlsquota-group.txt", "gpfs-docs-mmlsquota-kb.txt"), {"params": "7B", "gpus": 64}),
        # two pastes read together: 98 GB fit in each quota's room (the smallest: 107 GB on /home1)
        (("wynton-beegfs-ctl-getquota.txt", "usc-discovery-myquota-beegfs.txt"), {"params": "7B"}),
    ],
)  # fmt: skip
def test_near_misses_stay_quiet(names: tuple[str, ...], job: dict | None) -> None:
    assert "capacity-quota-exceeded" not in _findings(*names, job=job)


def test_several_quota_pastes_are_read_together() -> None:
    names = (
        "wynton-beegfs-ctl-getquota.txt",
        "usc-discovery-myquota-beegfs.txt",
        "delftblue-beegfs-getquota-pools.txt",
    )
    analysis = analyze_paths([TARGETS / name for name in names])
    assert len(analysis.facts["beegfs_quota"]["quotas"]) == 5
    lustre = analyze_paths([TARGETS / "lfs-quota-home-full.txt", TARGETS / "sdsc-lfs-quota-h-g.txt"])
    assert [q["kind"] for q in lustre.facts["fs_quota"]["quotas"]] == ["usr", "grp"]


@pytest.mark.parametrize(
    ("name", "kind", "count", "size", "pool", "targets"),
    [
        ("saga-beegfs-getentryinfo-file.txt", "file", 4, 512 * 2**10, None, [1203, 2101, 2102, 2103]),
        ("csi-beegfs-getentryinfo-file-actual-3.txt", "file", 3, 512 * 2**10, None, [1201, 1001, 1101]),
        ("abci-beeond-getentryinfo-dir.txt", "default", 8, 4 * 2**20, "Default", []),  # after a setpattern
        ("usc-hpcc-beegfs-getentryinfo-dir-1-target.txt", "default", 1, 8 * 2**20, "Default", []),
    ],
)
def test_beegfs_stripe_patterns(
    name: str, kind: str, count: int, size: int, pool: str | None, targets: list
) -> None:
    text = (TARGETS / name).read_text()
    assert recognise(text).section == "beegfs_entryinfo"
    [layout] = beegfs_layout.parse_entryinfo(text, name)["layouts"]
    [component] = layout["components"]
    assert (layout["kind"], component["stripe_count"], component["stripe_size"]) == (kind, count, size)
    assert (component["pool"], component["osts"], component["pattern"]) == (pool, targets, "raid0")


def test_one_storage_target_per_file_puts_a_whole_file_on_one_beegfs_target() -> None:
    """BeeGFS 8 targets of 99.2 GiB and 879.5 GiB free, a 10B checkpoint in one 140 GB file: an even
    spread (70 GB each) fits; USC's directory pattern of 1 target per file does not on the small
    target; ABCI's 8 targets per file (capped at the 2 there are) does."""
    one_file = {"params": "10B", "gpus": 1}  # one rank's torch.save: the file count is given
    one = _findings("beegfs8-health-df.txt", "usc-hpcc-beegfs-getentryinfo-dir-1-target.txt", job=one_file)
    said = one["capacity-target-full"]["evidence"][0]["text"]
    assert said.startswith(
        "301 of beegfs: 107 GB free, less than its share of the checkpoints (140 GB: 1 storage"
    )
    assert "pool" not in said  # the Default pool holds every target
    for quiet in (("beegfs8-health-df.txt", "abci-beeond-getentryinfo-dir.txt"), ("beegfs8-health-df.txt",)):
        assert "capacity-target-full" not in _findings(*quiet, job=one_file)


def test_a_quota_of_another_filesystem_than_the_checkpoint_path_is_not_held_to_the_job() -> None:
    """USC's myquota: /home1 (107 GB left) and /scratch (10 TiB): a 10B checkpoint (140 GB) does not
    fit /home1's room; written under /scratch, that quota is not the one it is charged to."""
    usc = [TARGETS / "usc-discovery-myquota-beegfs.txt"]
    anywhere = analyze_paths(usc, job={"params": "10B"}).report["findings"]
    assert "ttrojan on /home1/ttrojan: 107 GB left" in next(
        f for f in anywhere if f["id"] == "capacity-quota-exceeded")["evidence"][0]["text"]  # fmt: skip
    for path, fires in (("/scratch/ttrojan/run1", False), ("/home1/ttrojan/run1", True)):
        found = analyze_paths(usc, path, job={"params": "10B"}).report["findings"]
        assert ("capacity-quota-exceeded" in {f["id"] for f in found}) is fires, path


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        # Lustre project quotas (`lfs quota -p`): the wrapped filesystem row, the kbytes listing
        ("czbiohub-lfs-quota-h-p-project-nearly-full.txt", "prj 200020 on /hpc/projects/group.royer: 99% of"),
        ("nrel-eagle-lfs-quota-p-over-soft.txt", "prj 110255 on /projects/csc000: over its limit"),
    ],
)
def test_lustre_project_quotas_fire_the_quota_cause(name: str, reason: str) -> None:
    found = _findings(name)["capacity-quota-exceeded"]
    assert reason in found["evidence"][0]["text"]
    project = reason.split()[1]  # the command that reads this project's quota again, with its ID
    assert any(step["command"].startswith(f"lfs quota -h -p {project} /") for step in found["remediation"])


@pytest.mark.parametrize(
    "name",
    [
        "vsc-dodrio-lfs-quota-prj.txt",  # 1.709G of 2.85G and 15.4T of 19T: under 95 %
        "cirrus-lfs-quota-hp-project.txt",  # run on ".", 958.3G of 13.57T
        "lfs-quota-h-p-bquota-columns.txt",  # Lustre 2.16's bquota/blimit columns, 2.42G of 50G
    ],
)
def test_project_quota_near_misses_are_read_and_stay_quiet(name: str) -> None:
    """No job described: judged on their state only (a 7B job's 98 GB would not fit 2.85G or 50G)."""
    analysis = analyze_paths([TARGETS / name])
    quotas = analysis.facts["fs_quota"]["quotas"]
    assert quotas and {q["kind"] for q in quotas} == {"prj"} and all(q["hard_bytes"] for q in quotas)
    assert "capacity-quota-exceeded" not in {f["id"] for f in analysis.report["findings"]}


def test_without_the_gpu_count_one_file_s_size_is_not_assumed() -> None:
    """No --gpus: the checkpoint's file count is unknown, so the layout's one target per file is not
    taken to hold the whole checkpoint (the default of one GPU would make it one 140 GB file)."""
    names = ("beegfs8-health-df.txt", "usc-hpcc-beegfs-getentryinfo-dir-1-target.txt")
    assert "capacity-target-full" not in _findings(*names, job={"params": "10B"})
