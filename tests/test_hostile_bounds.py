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
import tarfile
import threading
import zlib
from pathlib import Path

import pytest

from gdsdoctor.capture import compress
from gdsdoctor.cli.app import run
from gdsdoctor.errors import BundleError
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
