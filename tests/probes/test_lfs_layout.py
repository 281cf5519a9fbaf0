"""Lustre stripe layouts (`lfs getstripe`, Lustre 1.8 to 2.15, public outputs): what each says, the
share one checkpoint file puts on an OST, and the capacity judgement that uses it; the live reader
runs lfs only for a path on Lustre."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from gdsdoctor.capture import command_lock
from gdsdoctor.capture.live import ANOTHER_HOST, capture_live, capture_source
from gdsdoctor.facts.derived.storage_stripes import file_share
from gdsdoctor.model import ArtifactStatus
from gdsdoctor.pipeline import analyze_paths, check
from gdsdoctor.probes import lfs_layout, lustre_path
from tests.conftest import fake_binary, this_kernels_root

TARGETS = Path(__file__).resolve().parents[1] / "data" / "fs_targets"
GIB = 2**30


def _layouts(name: str) -> list[dict]:
    return lfs_layout.parse_getstripe((TARGETS / name).read_text(), name)["layouts"]


def _counts(layout: dict) -> list[int]:
    return [c["stripe_count"] for c in layout["components"]]


@pytest.mark.parametrize(
    ("name", "kinds", "counts", "pools", "osts"),
    [
        # 1.8.7: no lmm_pattern line at all
        ("lustre-1.8.7-lfs-getstripe-file.txt", ["file"], [1], [None], [86]),
        # 2.x printing the pattern as a number (1 = RAID0), and a directory default without one
        ("abci-lfs-getstripe-file-pattern-1.txt", ["file"], [4], [None], [10, 11, 12, 13]),
        ("abci-lfs-getstripe-dir-no-pattern.txt", ["default"], [4], [None], []),
        ("flashx-lfs-getstripe-hdf5-checkpoint.txt", ["file"], [4], [None], [5, 3, 43, 57]),
        ("expanse-lfs-getstripe-d-pattern-0.txt", ["default"], [1], [None], []),
        # a directory shown, restriped, shown again, then a file written in it
        (
            "expanse-lfs-getstripe-restriped-dir-and-file.txt",
            ["default", "default", "file"],
            [4],
            [None],
            [52, 15, 5, 53],
        ),
        ("czbiohub-lfs-getstripe-d-pool.txt", ["default"], [1], ["ddn_hdd"], []),
        ("ulhpc-lfs-getstripe-empty-pool.txt", ["default"], [1], [None], []),  # "pool:" with no name
        ("gio-lfs-getstripe-overstriped-pool.txt", ["file"], [8], ["original"], [10, 11] * 4),
        # PFL templates: Data-on-MDT then every OST; 2.15.6's four widening components
        ("lustre-demo-lfs-getstripe-dom-dir.txt", ["default"], [0, -1], [None, None], []),
        ("fsx-2.15-lfs-getstripe-d-pfl.txt", ["default"], [1, 8, 16, 32], [None] * 4, []),
        (
            "lustre-manual-lfs-getstripe-mirrored.txt",
            ["file"],
            [2, 6],
            ["flash", "archive"],
            [3, 4, 5, 6, 7, 2],
        ),
    ],
)
def test_every_release_layout_is_read(name: str, kinds: list, counts: list, pools: list, osts: list) -> None:
    text = (TARGETS / name).read_text()
    layouts = _layouts(name)
    assert lfs_layout.recognise_getstripe(text)
    assert [layout["kind"] for layout in layouts] == kinds
    last = layouts[-1]
    assert _counts(last) == counts and [c["pool"] for c in last["components"]] == pools
    assert last["components"][-1]["osts"] == osts
    first = last["components"][0]
    assert first["src"]["artifact"] == name and first["src"]["text"] in text


def test_paths_extents_and_mirrors_are_kept() -> None:
    restriped = _layouts("expanse-lfs-getstripe-restriped-dir-and-file.txt")
    assert [layout["path"] for layout in restriped] == [
        "striped/",
        "striped/",
        "striped/ILSVRC2012_img_train.tar",
    ]
    pfl = _layouts("fsx-2.15-lfs-getstripe-d-pfl.txt")[0]
    assert pfl["path"] is None  # lfs getstripe -d prints no name
    assert [(c["start"], c["end"]) for c in pfl["components"]] == [
        (0, 100 * 2**20), (100 * 2**20, 10 * GIB), (10 * GIB, 100 * GIB), (100 * GIB, None)]  # fmt: skip
    dom = _layouts("lustre-demo-lfs-getstripe-dom-dir.txt")[0]["components"]
    assert [c["pattern"] for c in dom] == ["mdt", "raid0"] and dom[0]["end"] == 65536
    mirrored = _layouts("lustre-manual-lfs-getstripe-mirrored.txt")[0]
    assert mirrored["mirror_count"] == 2 and [c["mirror_id"] for c in mirrored["components"]] == [1, 2]


@pytest.mark.parametrize("text", ["", "lfs getstripe: cannot get lov name: Inappropriate ioctl for device (25)\n",
                                  "UUID bytes Used Available Use% Mounted on\n"])  # fmt: skip
def test_text_without_a_layout_is_refused(text: str) -> None:
    assert not lfs_layout.recognise_getstripe(text)
    with pytest.raises(lfs_layout.ParseError):
        lfs_layout.parse_getstripe(text, "x")


def test_one_file_share_per_ost_follows_the_layout() -> None:
    size = 5_670_000_000_000  # 405B × 14 B/param, one file
    single = _layouts("expanse-lfs-getstripe-d-pattern-0.txt")[0]
    assert file_share(single, size, 6) == size  # stripe_count 1: the whole file on one OST
    pfl = _layouts("fsx-2.15-lfs-getstripe-d-pfl.txt")[0]
    # 100 MiB on one OST, the rest of each component over min(count, 6 OSTs)
    expected = 100 * 2**20 + (10 * GIB - 100 * 2**20) / 6 + (90 * GIB) / 6 + (size - 100 * GIB) / 6
    assert file_share(pfl, size, 6) == pytest.approx(expected)
    assert file_share(pfl, 50 * 2**20, 6) == 50 * 2**20  # a small file stays in the first component
    wide = _layouts("lustre-demo-lfs-getstripe-dom-dir.txt")[0]
    assert file_share(wide, 65536 + 2 * 2**20, 2) == 2**20  # the first 64 KiB on the MDT, no OST
    over = _layouts("gio-lfs-getstripe-overstriped-pool.txt")[0]
    assert file_share(over, 8 * GIB, 100) == 4 * GIB  # 8 stripes, but on 2 OSTs (its objects say)
    mirrored = _layouts("lustre-manual-lfs-getstripe-mirrored.txt")[0]
    assert file_share(mirrored, 12 * GIB, 8) == 6 * GIB  # the 2-stripe mirror is the larger share


def _findings(*names: str, job: dict) -> dict[str, dict]:
    analysis = analyze_paths([TARGETS / name for name in names], None, job=job)
    assert not analysis.report["source"]["notes"], analysis.report["source"]["notes"]
    return {f["id"]: f for f in analysis.report["findings"]}


SINGLE_FILE = {"params": "405B", "gpus": 1}  # 5.67 TB in one file (one rank's torch.save)


def test_a_file_larger_than_any_ost_fails_with_stripe_count_1_and_fits_a_pfl_layout() -> None:
    """FSx for Lustre 2.15.6, 6 OSTs of 4.5 TiB (4.95 TB) free: the even spread (945 GB each) fits;
    one 5.67 TB file does not fit on one OST, which is where stripe_count 1 puts it."""
    one = _findings("fsx-2.15-lfs-df-h.txt", "expanse-lfs-getstripe-d-pattern-0.txt", job=SINGLE_FILE)
    full = one["capacity-target-full"]
    said = full["evidence"][0]["text"]
    assert "OST0005 of /mnt/lustre" in said and "(5.67 TB: stripe_count 1: one 5.67 TB file's share" in said
    assert ("expanse-lfs-getstripe-d-pattern-0.txt", 1) in [
        (e.get("artifact"), e.get("line")) for e in full["evidence"]
    ]
    assert full["certainty"] >= 0.8
    # the same filesystem's own default layout widens with the file: about 945 GB on each OST
    assert "capacity-target-full" not in _findings("fsx-2.15-lfs-df-h.txt", "fsx-2.15-lfs-getstripe-d-pfl.txt",
                                                   job=SINGLE_FILE)  # fmt: skip


def test_an_unread_layout_is_said_and_weighs_less() -> None:
    unknown = _findings("fsx-2.15-lfs-df-h.txt", job=SINGLE_FILE)["capacity-target-full"]
    said = unknown["evidence"][0]["text"]
    assert "less than one 5.67 TB checkpoint file" in said and "the stripe layout was not read" in said
    assert unknown["certainty"] == pytest.approx(0.4)
    assert any("lfs getstripe -d" in step["command"] for step in unknown["remediation"])


@pytest.mark.parametrize(
    ("names", "job"),
    [
        # 13.5 TiB free on each OzSTAR OST: a whole 5.67 TB file fits on any of them
        (("ozstar-lfs-df-h.txt", "expanse-lfs-getstripe-d-pattern-0.txt"), SINGLE_FILE),
        (("ozstar-lfs-df-h.txt",), SINGLE_FILE),
        # 64 ranks: 88.6 GB files, stripe_count 1, on 4.95 TB OSTs
        (("fsx-2.15-lfs-df-h.txt", "czbiohub-lfs-getstripe-d-pool.txt"), {**SINGLE_FILE, "gpus": 64}),
    ],
)
def test_near_misses_stay_quiet(names: tuple[str, ...], job: dict) -> None:
    assert "capacity-target-full" not in _findings(*names, job=job)


def test_live_getstripe_runs_only_on_lustre_and_reads_as_the_paste(
    tmp_path: Path, isolated_path: Path
) -> None:
    """A fake findmnt and lfs on PATH (how the suite runs tools this machine lacks): findmnt's one
    word is written here, lfs prints the real 2.15.6 output kept under tests/data."""
    root = this_kernels_root(tmp_path / "root")
    ckpt = str(tmp_path)
    probes = lustre_path.probes_for(ckpt)

    def captured(fstype: str) -> object:
        fake_binary(isolated_path, "findmnt", f"echo {fstype}")
        return capture_live(root, None, probes).artifacts["cmd/lfs-getstripe-d.txt"]

    off = captured("xfs")
    assert off.status is ArtifactStatus.MISSING and off.detail == f"{ckpt} is on xfs, not Lustre: lfs not run"
    absent = captured("lustre")
    assert absent.status is ArtifactStatus.MISSING and absent.detail == "lfs: command not found"
    sample = (TARGETS / "fsx-2.15-lfs-getstripe-d-pfl.txt").read_text()
    fake_binary(
        isolated_path, "lfs", f'[ "$*" = "getstripe -d {ckpt}" ] || exit 9\n/bin/cat <<\'EOF\'\n{sample}EOF'
    )
    live = captured("lustre")
    assert live.status is ArtifactStatus.OK
    parsed = lfs_layout.parse_getstripe(live.data.decode(), "x")
    assert parsed == lfs_layout.parse_getstripe(sample, "x")
    fake_binary(
        isolated_path, "lfs", "echo 'lfs getstripe: cannot get lov name: No such device' >&2; exit 19"
    )
    failed = captured("lustre")
    assert failed.status is ArtifactStatus.ERROR and "cannot get lov name" in failed.detail
    elsewhere = capture_source(probes[0].sources[0], root, same_host=False)  # another machine's root
    assert (elsewhere.status, elsewhere.detail) == (ArtifactStatus.MISSING, ANOTHER_HOST)


def _fake_lustre_tools(bindir: Path, ckpt: str) -> None:
    """findmnt says `lustre` for the FSTYPE query (the one word written here) and is the real
    findmnt for the rest (the target probe's JSON of the real tmp mount); lfs prints the real
    captured outputs kept under tests/data for exactly the commands gdsdoctor runs."""
    real_findmnt = shutil.which("findmnt", path="/usr/bin:/bin")
    if real_findmnt is None:
        pytest.skip("util-linux findmnt not installed")
    fake_binary(bindir, "findmnt", f'case "$*" in *FSTYPE*) echo lustre;; *) exec {real_findmnt} "$@";; esac')
    uid, gid = lustre_path.quota_owners(ckpt)
    cases = {
        f"quota -u {uid} {ckpt}": "lfs-quota-home-full.txt",  # Mila: 99.99G of a 100G hard limit
        f"quota -g {gid} {ckpt}": "sdsc-lfs-quota-h-g.txt",  # SDSC: 5.95G of 50T
        f"getstripe -d {ckpt}": "fsx-2.15-lfs-getstripe-d-pfl.txt",
        f"project -d {ckpt}": "czbiohub-lfs-project-d.txt",  # project 200020
        f"quota -p 200020 {ckpt}": "czbiohub-lfs-quota-h-p-project-nearly-full.txt",  # 322.5T of 327T
    }
    # a sample's prompt line (`[user@host ~]$ lfs …`) is no output of lfs: sed leaves it out
    script = 'case "$*" in\n' + "".join(
        f'"{args}") /bin/sed "/^\\[/d" {TARGETS / name};;\n' for args, name in cases.items()
    )
    fake_binary(bindir, "lfs", script + "*) exit 9;;\nesac")


def _quota_finding(analysis) -> tuple:
    found = next(f for f in analysis.report["findings"] if f["id"] == "capacity-quota-exceeded")
    return found["severity"], found["certainty"], [e["text"] for e in found["evidence"]]


def test_live_lfs_quota_gives_the_findings_of_the_pasted_outputs(tmp_path: Path, isolated_path: Path) -> None:
    root = this_kernels_root(tmp_path / "root")
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    _fake_lustre_tools(isolated_path, str(ckpt))
    live = check(root, str(ckpt), deadline_s=20)
    probes = {p["name"]: p for p in live.report["probes"]}
    assert probes["lfs_quota"]["status"] == "ok" and probes["lfs_getstripe"]["status"] == "ok"
    names = (
        "lfs-quota-home-full.txt",
        "sdsc-lfs-quota-h-g.txt",
        "czbiohub-lfs-quota-h-p-project-nearly-full.txt",
    )
    pasted = analyze_paths([TARGETS / name for name in names])
    assert _quota_finding(live) == _quota_finding(pasted)
    said = _quota_finding(live)[2][0]
    assert "usr normandf on /home/mila" in said and "prj 200020 on /hpc/projects/group.royer" in said
    owners = [(q["kind"], q["owner"]) for q in live.facts["lfs_quota"]["quotas"]]
    assert owners == [("usr", "normandf"), ("grp", "sds184"), ("prj", "200020")]
    assert live.facts["derived"]["storage"]["stripe_layout"]["stripe_counts"] == [1, 8, 16, 32]
    group_only = analyze_paths([TARGETS / "sdsc-lfs-quota-h-g.txt"]).report["findings"]
    assert "capacity-quota-exceeded" not in {f["id"] for f in group_only}  # 5.95G of 50T: quiet


def test_live_lfs_quota_is_not_asked_off_lustre(tmp_path: Path, isolated_path: Path) -> None:
    fake_binary(isolated_path, "findmnt", "echo ext4")
    fake_binary(isolated_path, "lfs", f"/usr/bin/touch {tmp_path}/lfs-ran")
    probes = lustre_path.probes_for(str(tmp_path))
    capture = capture_live(this_kernels_root(tmp_path / "root"), None, probes)
    quota = capture.artifacts["cmd/lfs-quota.txt"]
    assert quota.status is ArtifactStatus.MISSING and "is on ext4, not Lustre" in quota.detail
    assert not (tmp_path / "lfs-ran").exists()


def test_a_lock_whose_holder_has_not_written_its_pid_yet_is_waited_for(
    tmp_path: Path, isolated_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both Lustre readers run the same `findmnt -T PATH` at once: the second finds the lock file
    taken and still empty (the first has not recorded its pid); it waits, it does not crash."""
    monkeypatch.setenv("GDSDOCTOR_RUNTIME_DIR", str(tmp_path / "run"))
    fake_binary(isolated_path, "tool", "exit 0")
    first = command_lock.acquire(["tool"], str(isolated_path), time.monotonic() + 1)
    try:
        with pytest.raises(command_lock.StillRunning):
            command_lock.acquire(["tool"], str(isolated_path), time.monotonic() + 0.1)
    finally:
        command_lock.release(first)
    command_lock.release(command_lock.acquire(["tool"], str(isolated_path), time.monotonic() + 1))


def test_a_directory_in_no_project_or_a_lustre_without_projects_asks_no_project_quota(
    tmp_path: Path, isolated_path: Path
) -> None:
    assert lustre_path.project_of(b"200020 P /hpc/projects/group.royer\n") == 200020
    assert lustre_path.project_of(b"    0 - /scratch/run1\n") is None  # project 0: none
    ckpt = str(tmp_path)
    fake_binary(isolated_path, "findmnt", "echo lustre")
    uid, gid = lustre_path.quota_owners(ckpt)
    sample = TARGETS / "lfs-quota-home-full.txt"
    fake_binary(isolated_path, "lfs", f'case "$*" in "quota -u {uid} {ckpt}"|"quota -g {gid} {ckpt}") /bin/cat {sample};;\n'
                "\"project -d\"*) echo 'lfs project: Operation not supported' >&2; exit 95;;\n*) exit 9;;\nesac")  # fmt: skip
    probes = lustre_path.probes_for(ckpt)
    quota = capture_live(this_kernels_root(tmp_path / "root"), None, probes).artifacts["cmd/lfs-quota.txt"]
    assert quota.status is ArtifactStatus.OK and quota.data == sample.read_bytes() * 2
