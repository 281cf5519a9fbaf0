"""Two mount tables of one host read as one (issue 20, class 4): `findmnt` of one mount pasted
with `mount -l` of the whole host, each printed here by the real tools (util-linux) over a real
loop-mounted ext4 in data=journal mode. The mounts only the second shows count, each with its
own file and line; one shown with other options (a remount between the two) is a note, the first
kept. Root only (losetup, mount)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gdsdoctor.pipeline import analyze_paths
from tests import loopfs


def _run(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=30).stdout


@pytest.fixture(scope="module")
def journal_mount(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One loop mount for the module (the second test remounts it noatime: it runs last)."""
    loopfs.skip_unless_root_with("mkfs.ext4", "findmnt")
    where = tmp_path_factory.mktemp("journal")
    with loopfs.loop_mount(
        "ext4", where / "ext4.img", 64 << 20, where / "ckpt", mount_options="data=journal"
    ):
        yield where / "ckpt"


def _finding(report: dict, cause: str) -> dict | None:
    return next((f for f in report["findings"] if f["id"] == cause), None)


def test_a_mount_only_the_second_table_shows_is_read_with_its_own_line(
    tmp_path: Path, journal_mount: Path
) -> None:
    findmnt = tmp_path / "findmnt.txt"
    findmnt.write_text(_run("findmnt", "/"))  # the root only: the checkpoint mount is not in it
    mount_l = tmp_path / "mount-l.txt"
    mount_l.write_text(_run("mount", "-l"))
    alone = analyze_paths([findmnt]).report
    assert _finding(alone, "ext4-data-journal") is None
    report = analyze_paths([findmnt, mount_l]).report
    found = _finding(report, "ext4-data-journal")
    assert found is not None, [f["id"] for f in report["findings"]]
    (cited,) = [e for e in found["evidence"] if e["artifact"] == "mount-l.txt"]
    line = mount_l.read_text().splitlines()[cited["line"] - 1]
    assert str(journal_mount) in line and "data=journal" in line
    assert any(
        "read with findmnt.txt as one" in note
        for note in report["source"].get("notes", []) + report.get("notes", [])
    )


def test_a_mount_shown_with_other_options_is_a_note_the_first_kept(
    tmp_path: Path, journal_mount: Path
) -> None:
    before = tmp_path / "findmnt-T.txt"
    before.write_text(_run("findmnt", "-T", str(journal_mount)))
    subprocess.run(["mount", "-o", "remount,noatime", str(journal_mount)], check=True, capture_output=True)
    after = tmp_path / "mount-l.txt"
    after.write_text(_run("mount", "-l"))
    analysis = analyze_paths([before, after])
    mounts = analysis.facts["mounts"]
    assert mounts["artifacts"] == ["findmnt-T.txt", "mount-l.txt"]
    ours = [m for m in mounts["mounts"] if m["mountpoint"] == str(journal_mount)]
    assert (
        len(ours) == 1 and ours[0]["src"]["artifact"] == "findmnt-T.txt" and "noatime" not in ours[0]["opts"]
    )
    assert str(journal_mount) in mounts["conflicts"] and "the first kept" in mounts["conflicts"]
    # every other mount of the host as mount -l alone gives it (over-mounts included), from it
    from gdsdoctor.probes import mounts as reader

    alone = [(m["device"], m["mountpoint"]) for m in reader.parse(after.read_text(), "x")["mounts"]]
    others = [
        (m["device"], m["mountpoint"]) for m in mounts["mounts"] if m["mountpoint"] != str(journal_mount)
    ]
    assert others == [pair for pair in alone if pair[1] != str(journal_mount)] and ("proc", "/proc") in others


def test_one_table_is_read_as_it_was() -> None:
    from gdsdoctor.probes import mounts

    table = "/dev/sda1 / ext4 rw 0 0\n/dev/sda1 / ext4 rw,noatime 0 0\n"  # an over-mount: both stay
    section = mounts.combine([mounts.parse(table, "proc/mounts")])
    assert len(section["mounts"]) == 2 and "conflicts" not in section
