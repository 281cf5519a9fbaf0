"""Bounded work on any input, fourth round: inputs whose cost grew with the square of their size
(a compressed paste of one member and many empty ones), an xz stream that asks for a 1.5 GiB
dictionary, and fleet shards that are a fifo, a device or JSON nested 100,000 deep. Work is
counted, not timed (as the second round did), so each test holds on a loaded machine."""

from __future__ import annotations

import gzip
import io
import lzma
import os
import struct
import sys
import tarfile
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from gdsdoctor.capture import compress
from gdsdoctor.capture.capture import Capture
from gdsdoctor.cli.app import run
from gdsdoctor.errors import BundleError
from gdsdoctor.model import Artifact, ArtifactStatus
from gdsdoctor.pipeline import analyze_paths

# --- item 8: a compressed paste of one member and many empty ones ---------------------------------


def _fed(data: bytes) -> int:
    """Bytes handed to the gzip decoders while decompressing ``data`` (each member's decoder was
    handed the whole rest of the file, and copied it back as ``unused_data``)."""
    fed = 0

    class Counting:
        def __init__(self) -> None:
            self._inner = zlib.decompressobj(16 + zlib.MAX_WBITS)

        def decompress(self, data: bytes, max_length: int = 0) -> bytes:
            nonlocal fed
            fed += len(data)
            return self._inner.decompress(data, max_length)

        def __getattr__(self, name: str) -> object:
            return getattr(self._inner, name)

    compress._frames(data, 1 << 26, Counting, (zlib.error,), [])
    return fed


def test_many_empty_gzip_members_cost_their_own_bytes() -> None:
    first, empty = gzip.compress(b"[    1.0] nvme nvme0: I/O timeout\n"), gzip.compress(b"")
    fed = [_fed(first + empty * members) for members in (1000, 2000, 4000)]
    assert fed[1] < 2.2 * fed[0] and fed[2] < 2.2 * fed[1], fed  # linear: today's is quadratic
    assert fed[2] < 4 * len(first + empty * 4000)  # each member: its bytes and a small first piece


def test_a_paste_of_too_many_members_is_one_note(tmp_path: Path) -> None:
    paste = tmp_path / "dmesg.txt.gz"
    paste.write_bytes(gzip.compress(b"x\n") + gzip.compress(b"") * (compress.MAX_MEMBERS + 1))
    notes = analyze_paths([paste]).capture.notes
    assert any(f"more than {compress.MAX_MEMBERS} compressed members" in note for note in notes), notes


# --- item 9: xz with a huge dictionary ------------------------------------------------------------


def huge_dictionary(data: bytes) -> bytes:
    """``data`` as xz whose block header asks for a 1.5 GiB dictionary (LZMA2 property 37): made
    by patching a small stream's header (compressing with such a dictionary takes gigabytes)."""
    packed = bytearray(lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32))
    size = (packed[12] + 1) * 4
    header = packed[12 : 12 + size]
    at = header.index(b"\x21\x01", 2) + 2  # the LZMA2 filter: id, size of its properties, property
    header[at] = 37
    header[-4:] = struct.pack("<I", zlib.crc32(bytes(header[:-4])))
    packed[12 : 12 + size] = header
    return bytes(packed)


def test_an_xz_paste_asking_for_a_huge_dictionary_is_one_note(tmp_path: Path) -> None:
    paste = tmp_path / "dmesg.txt.xz"
    paste.write_bytes(huge_dictionary(b"[    1.0] nvme nvme0: I/O 1 QID 2 timeout, aborting\n"))
    with pytest.raises(ValueError, match="more than 128 MiB of memory"):
        compress.decompress(paste.read_bytes(), 1 << 26)
    notes = analyze_paths([paste]).capture.notes
    assert any("more than 128 MiB of memory" in note for note in notes), notes
    assert compress.decompress(lzma.compress(b"ok\n"), 100) == b"ok\n"  # an ordinary one is read


def test_an_xz_bundle_asking_for_a_huge_dictionary_is_refused_in_one_line(tmp_path: Path) -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo("manifest.json")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"{}"))
    bundle = tmp_path / "bundle.tar.xz"
    bundle.write_bytes(huge_dictionary(raw.getvalue()))
    with pytest.raises(BundleError, match="more than 128 MiB of memory to decode"):
        analyze_paths([bundle])


# --- item 10: fleet merge reads shards as --site-config is read -----------------------------------


def test_fleet_merge_refuses_a_fifo_at_once(tmp_path: Path, capsys) -> None:
    fifo = tmp_path / "shard.json"
    os.mkfifo(fifo)
    writer = os.open(fifo, os.O_RDWR)  # a writer that never writes: a blocking read waits for ever
    threading.Timer(5, os.close, (writer,)).start()  # (today's reader: released after 5 s)
    assert run(["fleet", "merge", str(fifo)]) == 3
    assert "not a regular file" in capsys.readouterr().err


def test_fleet_merge_refuses_a_device(capsys) -> None:
    assert run(["fleet", "merge", "/dev/zero"]) == 3
    assert "not a regular file" in capsys.readouterr().err


def test_fleet_merge_refuses_deep_json_in_one_line(tmp_path: Path, capsys) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    nested = tmp_path / "nested.json"
    nested.write_text('{"kind": "gdsdoctor.fleet", "nodes": ' + "[" * 100 + "]" * 100 + "}")
    for shard in (deep, nested):
        assert run(["fleet", "merge", str(shard)]) == 3
        err = capsys.readouterr().err
        assert "nested more than 32 deep" in err and "internal error" not in err, err


def test_redact_has_a_deadline_like_analyze(tmp_path: Path, capsys) -> None:
    mounts = tmp_path / "mounts.txt"
    mounts.write_text("".join(f"srv{i:05d}x.site:/export/{i} /mnt/{i} nfs rw 0 0\n" for i in range(20_000)))
    out = tmp_path / "out"
    assert run(["redact", str(mounts), "--output-dir", str(out), "--deadline", "0.05"]) == 3
    assert "not redacted: the 0.05 s deadline passed while" in capsys.readouterr().err
    assert not out.exists() or list(out.iterdir()) == []


# --- item 8: work that grew with the square of the input, counted ----------------------------------


def _python_work(run: Callable[[], object]) -> int:
    """Python lines run plus C functions called while ``run()`` runs (as test_hostile_readers
    counts the parsers' work): counted, not timed."""
    count = 0

    def tracer(frame: object, event: str, arg: object) -> object:
        nonlocal count
        count += 1
        return tracer

    def profiler(frame: object, event: str, arg: object) -> None:
        nonlocal count
        count += event == "c_call"

    sys.settrace(tracer)
    sys.setprofile(profiler)
    try:
        run()
    finally:
        sys.setprofile(None)
        sys.settrace(None)
    return count


class _CountingList(list):
    """A section's list of artifact names that counts the searches of it."""

    searches = 0

    def __contains__(self, item: object) -> bool:
        _CountingList.searches += 1
        return super().__contains__(item)


def test_a_bug_report_of_many_sections_adds_each_without_a_search() -> None:
    """80,000 sections of an nvidia-bug-report log: each new artifact searched its section's list
    (54 s). A new name is appended without a search; a name seen again keeps its place."""
    from gdsdoctor.capture.nvidia_bug_report import capture_log

    sep = "_" * 40 + "\n"
    for sections in (500, 1000, 2000):
        text = "Start of NVIDIA bug report log file.\n" + "".join(
            f"{sep}\n/p{i}/lspci -vv\n\n00:00.0 Host bridge\n" for i in range(sections)
        )
        capture = capture_log("log", text, "log")
        assert len(capture.assignments["lspci"]) == sections
    searched = Capture(origin="files")
    searched.assignments["lspci"] = _CountingList()
    for number in range(2000):
        searched.add("lspci", Artifact(f"a{number}", ArtifactStatus.OK, b"x", "x"))
    searched.add("lspci", Artifact("a7", ArtifactStatus.OK, b"y", "x"))  # again: replaced in place
    assert _CountingList.searches == 1 and searched.assignments["lspci"].count("a7") == 1


def test_prompts_of_one_command_are_merged_in_linear_work(tmp_path: Path) -> None:
    """8,000 prompts of one command in a paste (8.5 s): each merge rebuilt the text so far."""
    from gdsdoctor.capture.detect import capture_files

    work = []
    for prompts in (250, 500, 1000):
        paste = tmp_path / f"prompts{prompts}.txt"
        paste.write_text(
            "".join(f"$ cat /proc/mounts\n/dev/nvme{i}n1 /mnt/c{i} ext4 rw 0 0\n" for i in range(prompts))
        )
        work.append(_python_work(lambda paste=paste: capture_files([paste])))
        lines = capture_files([paste]).artifacts
        assert len(lines) == 1
    assert work[1] < 2.3 * work[0] and work[2] < 2.3 * work[1], work


def test_quoting_levels_are_removed_at_once() -> None:
    """300,000 levels of `> ` on one line (5 s): each level copied the rest of the line (work in
    C, unseen by a count of Python steps: timed in CPU, as the regex audit does, with room)."""
    from gdsdoctor.capture import unwrap

    started = time.thread_time()
    assert unwrap._unquote(["> " * 300_000 + "nvme0n1"], []) == ["nvme0n1"]
    assert time.thread_time() - started < 2
    # the levels go while 80% of the lines with text are quoted, as before
    assert unwrap._unquote(["> > a", "> b", "c", "> > d", "> > e"], []) == ["> a", "b", "c", "> d", "> e"]


def test_empty_lines_of_a_kernel_log_cost_no_python_work() -> None:
    """40M newlines in a kernel log took 48 s (the promise: 30 s): a Python step for each; now
    the empty lines are passed over in C."""
    from gdsdoctor.probes import dmesg

    event = "[  1.000000] nvme nvme0: I/O 1 QID 2 timeout, aborting\n"
    work = [
        _python_work(lambda n=n: dmesg.parse(event + "\n" * n + event, "dmesg")) for n in (10_000, 40_000)
    ]
    assert work[1] < 1.2 * work[0], work


def test_a_gdsio_line_of_repeated_labels_is_read_at_once() -> None:
    """ "IoType:" 15,600 times (109 KiB, no space): `\\S+` ran to the end of the line from each and
    back (16.5 s). Checked with the regex audit's own budget on its size (4 KiB)."""
    from gdsdoctor.probes import bench
    from tests import regex_audit as audit

    for pattern in (bench._GDSIO_RUN, bench._ERROR_WORD, bench._COLON_TEXT):
        assert audit.slowest(audit.Found(pattern.pattern, pattern.flags, "bench"), 4096) is None
    line = "IoType:" * 15_600
    started = time.thread_time()
    assert bench._GDSIO_RUN.search(line) is None and not bench._gdsio_error(
        "error " * 18_000 + ":" + " " * 999
    )
    assert time.thread_time() - started < 1
