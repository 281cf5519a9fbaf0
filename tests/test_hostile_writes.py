"""Hostile output paths, fourth round: a report path spelled to reach a device (``//dev/stdout``,
a link to /dev then ``/stdout``), a benchmark's raw file planted as a link or a fifo, and a
directory bundle whose writer is killed with SIGKILL half-way. Outputs land only where they
should, whole."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import types
from pathlib import Path

import pytest

from gdsdoctor.capture.bundle import read_bundle, write_bundle
from gdsdoctor.capture.capture import Capture
from gdsdoctor.cli.app import run
from gdsdoctor.cli.tools import bundle_target
from gdsdoctor.errors import UserError
from gdsdoctor.model import Artifact, ArtifactStatus
from gdsdoctor.outputs import special_target

# --- item 5: --output judged by where it leads ----------------------------------------------------


def test_a_report_path_is_judged_by_where_it_leads(tmp_path: Path) -> None:
    (tmp_path / "devices").symlink_to("/dev")
    (tmp_path / "up").mkdir()
    for spelled in ("//dev/stdout", "///dev/null", "/./dev/null", f"{tmp_path}/devices/stdout",
                    f"{tmp_path}/devices/null", f"{tmp_path}/up/../devices/shm-report.json",
                    "//proc/self/fd/1", "/sys/../sys/kernel/x"):  # fmt: skip
        assert special_target(spelled), spelled
    assert special_target(str(tmp_path / "report.json")) is None
    assert special_target(str(tmp_path / "up" / "report.json")) is None  # a near-miss stays allowed


def test_cli_refuses_an_output_through_a_link_to_dev(tmp_path: Path, capsys) -> None:
    (tmp_path / "devices").symlink_to("/dev")
    paste = tmp_path / "mounts.txt"
    paste.write_text("/dev/nvme0n1 /mnt/ckpt ext4 rw,data=journal 0 0\n")
    code = run(["analyze", str(paste), "--output", f"json={tmp_path}/devices/null"])
    assert code == 3 and "system path" in capsys.readouterr().err
    assert Path("/dev/null").is_char_device()


# --- item 6: bench --save-raw through the shared writers ------------------------------------------


@pytest.fixture
def fake_bench(monkeypatch) -> list[Path]:
    """The measurement replaced (fio is tested in test_bench_run): what --save-raw does with it."""
    from gdsdoctor.commands import bench_run

    ran: list[Path] = []

    def measure(path: Path, *args: object, **kwargs: object) -> types.SimpleNamespace:
        ran.append(path)
        return types.SimpleNamespace(raw=b'{"fio version": "fio-3.35", "jobs": []}\n')

    monkeypatch.setattr(bench_run, "run", measure)
    monkeypatch.setattr(bench_run, "render_text", lambda result: "measured\n")
    return ran


def test_save_raw_replaces_a_planted_link_never_its_target(tmp_path: Path, fake_bench: list[Path]) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "raw.json").symlink_to(victim)
    assert run(["bench", str(tmp_path), "--save-raw", str(tmp_path / "raw.json")]) == 0
    assert victim.read_text() == "precious\n"
    assert not (tmp_path / "raw.json").is_symlink() and b"fio-3.35" in (tmp_path / "raw.json").read_bytes()


def test_save_raw_to_a_fifo_is_refused_before_the_run(tmp_path: Path, fake_bench: list[Path], capsys) -> None:
    fifo = tmp_path / "raw.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so that today's writer cannot hang the test
    try:
        assert run(["bench", str(tmp_path), "--save-raw", str(fifo)]) == 3
    finally:
        os.close(reader)
    assert "not a regular file" in capsys.readouterr().err and fake_bench == []


# --- item 7: collect -o DIR whole or not at all ---------------------------------------------------


def _capture(count: int = 40) -> Capture:
    capture = Capture(origin="live", host={"hostname": "gpu001"}, label="gpu001")
    for number in range(count):
        name = f"cmd/out-{number:02d}.txt"
        capture.add(f"section{number}", Artifact(name, ArtifactStatus.OK, b"x\n" * 100, source=name))
    return capture


KILLED_WRITER = """
import os, signal, sys
from pathlib import Path
from gdsdoctor.capture import bundle
from tests.test_hostile_writes import _capture
created = bundle._DirectoryWriter._create
count = [0]
def create(self, parent, base, data):
    count[0] += 1
    if count[0] == 10:
        os.kill(os.getpid(), signal.SIGKILL)  # no cleanup survives this
    created(self, parent, base, data)
bundle._DirectoryWriter._create = create
bundle.write_bundle(_capture(), Path(sys.argv[1]))
"""


@pytest.mark.parametrize("made_before", [False, True], ids=["new", "empty-dir"])
def test_a_directory_bundle_killed_half_way_leaves_nothing_that_blocks_the_retry(
    tmp_path: Path, made_before: bool
) -> None:
    output = tmp_path / "bundle"
    if made_before:
        output.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER, str(output)], env=env, timeout=60, cwd=Path(__file__).parents[1]
    )
    assert killed.returncode == -signal.SIGKILL
    assert not output.exists() or not any(output.iterdir())  # no half bundle at the name
    write_bundle(_capture(), bundle_target(str(output)))  # the retry is not refused
    assert len(read_bundle(output).artifacts) == 40
    with pytest.raises(UserError, match="already exists"):
        bundle_target(str(output))


def test_a_directory_bundle_never_lands_over_a_full_directory(tmp_path: Path) -> None:
    output = tmp_path / "bundle"
    output.mkdir()
    (output / "theirs.txt").write_text("kept\n")
    with pytest.raises(FileExistsError):
        write_bundle(_capture(3), output)
    assert [p.name for p in output.iterdir()] == ["theirs.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["bundle"]  # the hidden directory is removed
