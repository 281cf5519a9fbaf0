"""Bundles keep the host's secrets (issue 33, item 3): what holds the host's data (a bundle of
`collect`, a `redact` copy, a `watch --record`, a redaction map) is its owner's alone (0600, its
directories 0700) whatever the umask, as sos report writes its archive; a report that a collector
running as another user reads keeps 0644. Each written here under umask 000, where the old code
gave 0666/0777 or 0644 to anyone."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from gdsdoctor.capture.bundle import write_bundle
from gdsdoctor.capture.capture import Capture
from gdsdoctor.capture.redact_io import redact_bundle, redact_files
from gdsdoctor.model import Artifact, ArtifactStatus
from gdsdoctor.outputs import write_atomic

DMESG = b"[    1.000000] nvme nvme0: pci function 0000:01:00.0\n[    2.000000] host gpu001.example.com up\n"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture(params=[0o000, 0o022, 0o077], ids=["umask000", "umask022", "umask077"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def _capture() -> Capture:
    capture = Capture(origin="live", host={"hostname": "gpu001"}, label="gpu001")
    capture.add("dmesg", Artifact("cmd/dmesg.txt", ArtifactStatus.OK, DMESG, source="dmesg"))
    capture.add(
        "mounts", Artifact("proc/mounts", ArtifactStatus.OK, b"/dev/nvme0n1 / xfs rw 0 0\n", source="m")
    )
    return capture


def test_an_archive_bundle_is_its_owners_alone(tmp_path: Path, umask: int) -> None:
    bundle = write_bundle(_capture(), tmp_path / "node.tar.gz")
    assert mode(bundle) == 0o600


def test_a_directory_bundle_is_its_owners_alone(tmp_path: Path, umask: int) -> None:
    bundle = write_bundle(_capture(), tmp_path / "node")
    entries = [bundle, *bundle.rglob("*")]
    assert {p.relative_to(tmp_path).as_posix(): mode(p) for p in entries if p.is_dir()} == {
        "node": 0o700,
        "node/cmd": 0o700,
        "node/proc": 0o700,
    }
    files = {p.relative_to(bundle).as_posix(): mode(p) for p in entries if p.is_file()}
    assert files and set(files.values()) == {0o600}, files


def test_an_empty_directory_the_user_made_is_replaced_by_a_private_one(tmp_path: Path, umask: int) -> None:
    """`collect -o DIR` into an empty directory made beforehand: the bundle, built aside and renamed
    over it, is its owner's alone too."""
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine").chmod(0o755)
    write_bundle(_capture(), tmp_path / "mine")
    assert mode(tmp_path / "mine") == 0o700 and mode(tmp_path / "mine" / "cmd" / "dmesg.txt") == 0o600


def test_redacted_copies_and_their_map_are_their_owners_alone(tmp_path: Path, umask: int) -> None:
    paste = tmp_path / "dmesg.txt"
    paste.write_bytes(DMESG)
    redact_files([paste])
    written = sorted(p for p in tmp_path.iterdir() if p != paste)
    assert [p.name for p in written] == ["dmesg.txt.redacted", "redaction-map.json"]
    assert {mode(p) for p in written} == {0o600}
    bundle = write_bundle(_capture(), tmp_path / "node.tar.gz")
    redact_bundle(bundle)
    copies = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("node.redacted"))
    assert copies == ["node.redacted.tar.gz", "node.redacted.tar.gz.redaction-map.json"]
    assert {mode(tmp_path / name) for name in copies} == {0o600}


def test_a_report_keeps_the_mode_its_collector_needs(tmp_path: Path, umask: int) -> None:
    """node_exporter's textfile collector (another user) reads the .prom file: 0644 under umask 077
    too, and 0644, not 0666, under umask 000."""
    write_atomic(tmp_path / "gdsdoctor.prom", "gdsdoctor_status 0\n")
    assert mode(tmp_path / "gdsdoctor.prom") == 0o644
