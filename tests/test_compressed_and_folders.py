"""Compressed pastes (gzip, bzip2, xz, zstd) within the paste cap, a folder without a manifest
read as pastes, and a folder of bundles of mixed kinds read as a fleet."""

from __future__ import annotations

import bz2
import gzip
import lzma
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from gdsdoctor.capture import bundles, compress, detect
from gdsdoctor.capture.bundle import write_bundle
from gdsdoctor.capture.detect import capture_files
from gdsdoctor.commands.fleet import expand_inputs, is_fleet
from gdsdoctor.pipeline import analyze_paths

DATA = Path(__file__).parent / "data"
DMESG = DATA / "dmesg" / "dmesg-nvme-io-error-status-ext4-journal-abort.txt"
HOTSOS = DATA / "sos" / "hotsos-openstack"


def _zstd(data: bytes) -> bytes:
    done = subprocess.run(["zstd", "-q", "-c"], input=data, capture_output=True, check=True)
    return done.stdout


PACKERS = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress, "zst": _zstd}


@pytest.mark.parametrize("suffix", sorted(PACKERS))
def test_a_compressed_paste_reads_as_the_plain_one(tmp_path: Path, suffix: str) -> None:
    if suffix == "zst" and shutil.which("zstd") is None:
        pytest.skip("zstd is not installed (.ci/run installs it)")
    packed = tmp_path / f"dmesg.txt.{suffix}"
    packed.write_bytes(PACKERS[suffix](DMESG.read_bytes()))
    plain, from_packed = analyze_paths([DMESG]), analyze_paths([packed])
    assert from_packed.facts["dmesg"]["status"] == "ok"
    assert sorted(f["id"] for f in from_packed.report["findings"]) == sorted(
        f["id"] for f in plain.report["findings"]
    )


@pytest.mark.parametrize("suffix", sorted(PACKERS))
def test_a_compressed_bomb_paste_is_stopped_at_the_cap(tmp_path: Path, suffix: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    if suffix == "zst" and shutil.which("zstd") is None:
        pytest.skip("zstd is not installed")
    monkeypatch.setattr(detect, "MAX_PASTE_BYTES", 1024 * 1024)
    bomb = tmp_path / f"dmesg.txt.{suffix}"
    bomb.write_bytes(PACKERS[suffix](b"\n" * (16 * 1024 * 1024)))
    capture = capture_files([bomb])
    assert capture.artifacts == {}
    assert capture.notes == [
        f"{bomb}: {compress.kind_of(bomb.read_bytes())} data that decompresses to more than 1 MiB; not read"
    ]


def test_corrupt_and_concatenated_gzip(tmp_path: Path) -> None:
    corrupt = tmp_path / "dmesg.txt.gz"
    corrupt.write_bytes(gzip.compress(DMESG.read_bytes())[:-20])
    assert "cannot be decompressed" in capture_files([corrupt]).notes[0]
    text = DMESG.read_bytes()
    half = len(text) // 2
    cut = text.rfind(b"\n", 0, half) + 1
    joined = tmp_path / "two.gz"
    joined.write_bytes(gzip.compress(text[:cut]) + gzip.compress(text[cut:]))  # `cat a.gz b.gz`
    assert compress.decompress(joined.read_bytes(), 10 * len(text)) == text


def test_a_folder_without_manifest_is_a_set_of_pastes(tmp_path: Path) -> None:
    folder = tmp_path / "ticket-4711"
    (folder / "more").mkdir(parents=True)
    shutil.copy(DMESG, folder / "dmesg.txt")
    (folder / "more" / "mounts.txt.gz").write_bytes(
        gzip.compress(b"/dev/nvme0n1p1 /mnt/ckpt ext4 rw,relatime,data=journal 0 0\n")
    )
    (folder / "link").symlink_to("/etc/passwd")  # never read
    assert bundles.kind(folder) == ""
    analysis = analyze_paths([folder])
    assert analysis.report["source"]["kind"] == "files"
    assert analysis.facts["dmesg"]["status"] == analysis.facts["mounts"]["status"] == "ok"
    assert not any("passwd" in a.source for a in analysis.capture.artifacts.values())
    assert analysis.capture.notes[0] == f"{folder}: a folder without a manifest, read as 2 pasted file(s)"
    assert analysis.capture.artifacts["mounts.txt.gz"].source == "ticket-4711/more/mounts.txt.gz"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert analyze_paths([empty]).capture.notes == [f"{empty}: an empty folder (no bundle, no pasted file)"]


def test_a_folder_of_mixed_bundles_is_a_fleet(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    shutil.copytree(HOTSOS, fleet / "sosreport-compute4")  # a sos report directory
    with tarfile.open(fleet / "sosreport-compute5.tar.xz", "w:xz") as tar:  # a sos archive
        tar.add(HOTSOS, arcname="sosreport-compute5-2022-02-10-aaaaaa")
    gds = analyze_paths([DMESG]).capture
    gds.host = {"hostname": "gpu7"}
    write_bundle(gds, fleet / "gpu7.tar.gz")  # a gdsdoctor archive
    write_bundle(gds, fleet / "gpu8")  # a gdsdoctor directory
    paths = expand_inputs([fleet])
    assert sorted(p.name for p in paths) == [
        "gpu7.tar.gz",
        "gpu8",
        "sosreport-compute4",
        "sosreport-compute5.tar.xz",
    ]
    assert is_fleet(paths)
    assert sorted(bundles.kind(p) for p in paths) == ["bundle", "bundle", "sos", "sos"]


def test_one_sos_directory_beside_archives_is_a_fleet_not_a_wrapper(tmp_path: Path) -> None:
    """A folder holding one sos report directory is that report unpacked (its archive's top
    folder, perhaps beside its checksum); holding archives of other bundles too, it is a fleet
    of all of them (it was read as the one sos report, the others silently left out)."""
    wrapper = tmp_path / "unpacked"
    shutil.copytree(HOTSOS, wrapper / "sosreport-compute4-2022-02-10-aaaaaa")
    (wrapper / "sosreport-compute4-2022-02-10-aaaaaa.tar.xz.md5").write_text("0" * 32 + "\n")
    assert bundles.kind(wrapper) == "sos" and expand_inputs([wrapper]) == [wrapper]
    fleet = tmp_path / "fleet"
    shutil.copytree(HOTSOS, fleet / "sosreport-compute4")
    with tarfile.open(fleet / "sosreport-compute5.tar.xz", "w:xz") as tar:
        tar.add(HOTSOS, arcname="sosreport-compute5-2022-02-10-aaaaaa")
    gds = analyze_paths([DMESG]).capture
    gds.host = {"hostname": "gpu7"}
    write_bundle(gds, fleet / "gpu7.tar.gz")
    assert bundles.kind(fleet) == ""
    paths = expand_inputs([fleet])
    assert sorted(p.name for p in paths) == ["gpu7.tar.gz", "sosreport-compute4", "sosreport-compute5.tar.xz"]
    assert is_fleet(paths)
