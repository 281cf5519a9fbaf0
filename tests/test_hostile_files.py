"""Loose (pasted) files that are not what they seem: each gets a clear status and the analysis
of the other files goes on. Nothing here may block (a fifo is the trap)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from gdsdoctor.capture import detect
from gdsdoctor.capture.detect import capture_files
from gdsdoctor.pipeline import analyze_capture

MOUNTS = "/dev/nvme1n1 /mnt/ckpt ext4 rw,noatime,data=journal 0 0\n/dev/nvme0n1p2 / ext4 rw 0 0\n"
LSMOD = "Module                  Size  Used by\nnvidia_fs             262144  0\n"


def _capture(paths: list[Path]) -> Any:
    """capture_files in a thread, so that a regression that blocks fails instead of hanging."""
    result: list[Any] = []
    worker = threading.Thread(target=lambda: result.append(capture_files(paths)), daemon=True)
    worker.start()
    worker.join(20)
    assert not worker.is_alive(), "reading pasted files blocked"
    return result[0]


def _with_good(tmp_path: Path, name: str, data: bytes) -> tuple[Path, Any]:
    """The odd file next to a good one: the odd one gets a note, the good one is analysed."""
    good = tmp_path / "lsmod.txt"
    good.write_text(LSMOD)
    odd = tmp_path / name
    odd.write_bytes(data)
    capture = _capture([odd, good])
    assert capture.assignments.get("modules") == ["lsmod.txt"]
    return odd, capture


@pytest.mark.parametrize(
    ("data", "status"),
    [
        (b"", "empty"),
        (b"  \n\r\n\t\n", "empty"),
        (b"\x7fELF\x02\x01\x01\x00" + os.urandom(3000), "binary data, not a text output"),
        (bytes(range(256)) * 4, "binary data, not a text output"),
        (b"just some words\n", "not recognised — `gdsdoctor probes` lists what is read"),
    ],
    ids=["empty", "blank", "elf", "bytes", "prose"],
)
def test_unusable_files_get_a_status(tmp_path: Path, data: bytes, status: str) -> None:
    odd, capture = _with_good(tmp_path, "odd.txt", data)
    assert next(n for n in capture.notes if n.startswith(str(odd))).startswith(f"{odd}: {status}")


@pytest.mark.parametrize(
    "data",
    [
        MOUNTS.replace("\n", "\r\n").encode(),
        MOUNTS.encode("utf-16"),
        MOUNTS.encode("utf-16-le"),
        MOUNTS.encode("utf-16-be"),
        b"\xef\xbb\xbf" + MOUNTS.encode(),
        MOUNTS.encode()
        + "/dev/sdb /mnt/caf\xe9 xfs rw 0 0\n".encode("latin-1")
        + "/dev/sdc /mnt/é xfs rw 0 0\n".encode(),
    ],
    ids=["crlf", "utf16-bom", "utf16le-no-bom", "utf16be-no-bom", "utf8-bom", "mixed-encodings"],
)
def test_encodings_are_decoded(tmp_path: Path, data: bytes) -> None:
    _, capture = _with_good(tmp_path, "mounts.txt", data)
    assert capture.notes == []
    facts = analyze_capture(capture).facts
    mounts = facts["mounts"]["mounts"]
    assert [m["mountpoint"] for m in mounts[:2]] == ["/mnt/ckpt", "/"]
    assert mounts[0]["opts"]["data"] == "journal" and mounts[0]["src"]["line"] == 1


def test_huge_file_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    huge = tmp_path / "huge.txt"
    with open(huge, "wb") as handle:  # sparse: costs no disk
        handle.truncate(detect.MAX_PASTE_BYTES + 1)
    capture = _capture([huge])
    assert capture.notes == [f"{huge}: larger than 64 MiB; not read"]
    monkeypatch.setattr(detect, "MAX_PASTE_BYTES", 100)
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    writer = threading.Thread(target=lambda: pipe.write_bytes(b"x" * 1000), daemon=True)
    writer.start()
    assert _capture([pipe]).notes == [f"{pipe}: larger than 0 MiB; not read"]


def test_directory_fifo_device_and_missing(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: must read as empty at once, not block
    paths = [tmp_path, fifo, Path("/dev/zero"), tmp_path / "missing.txt"]
    capture = _capture(paths)
    assert capture.notes == [
        f"{tmp_path}: is a directory (a bundle directory needs a manifest.json)",
        f"{fifo}: empty",
        "/dev/zero: not a regular file (a device or socket); not read",
        f"{tmp_path / 'missing.txt'}: no such file",
    ]


def test_fifo_with_a_writer_is_read_like_process_substitution(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text(MOUNTS), daemon=True)
    writer.start()
    capture = _capture([fifo])
    assert capture.assignments == {"mounts": ["fifo"]}


def test_silent_fifo_writer_is_given_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(detect, "FIFO_WAIT_S", 0.3)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    holder = os.open(fifo, os.O_RDWR)  # a writer that never writes
    try:
        assert _capture([fifo]).notes == [f"{fifo}: empty"]
    finally:
        os.close(holder)


def test_unreadable_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Root reads through chmod 000; /proc/self/mem fails with EIO, and a PermissionError is
    simulated (the non-root case runs for real in test_hostile_hosts)."""
    capture = _capture([Path("/proc/self/mem")])
    assert capture.notes == ["/proc/self/mem: cannot read (Input/output error)"]
    locked = tmp_path / "locked.txt"
    locked.write_text(MOUNTS)
    real_open = os.open

    def denying_open(path: Any, *args: Any, **kwargs: Any) -> int:
        if str(path) == str(locked):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(detect.os, "open", denying_open)
    assert _capture([locked]).notes == [f"{locked}: permission denied"]


def test_recogniser_that_raises_does_not_stop_the_others(tmp_path: Path) -> None:
    from gdsdoctor.probes import mounts
    from gdsdoctor.probes.base import Probe

    def broken(text: str) -> bool:
        raise RuntimeError("bug")

    probes = (Probe("broken", "broken", (), mounts.parse, broken), *detect.RECOGNISABLE)
    assert detect.recognise(MOUNTS, probes) is mounts.PROBE
