"""Compressed inputs: a pasted ``dmesg.txt.gz``, a sos report's ``.tar.zst``.

gzip, bzip2 and xz are decoded by Python's standard library; zstd has no decoder there before
Python 3.14, and rather than a new dependency gdsdoctor runs Debian's ``zstd`` program (package
``zstd``), without a shell, through ``runner.streamed_output`` like every command: its group is
killed when reading stops, on every way out. Its memory for one frame is capped by zstd's own
default (``--memory``, 128 MiB of window); what it writes is counted by the caller's cap.

Every decoder here stops at a cap of decompressed bytes, checked as it decompresses: a bomb
costs at most that much work and memory, whatever it claims.
"""

from __future__ import annotations

import bz2
import contextlib
import io
import lzma
import os
import zlib
from collections.abc import Callable, Iterator
from typing import IO

from gdsdoctor.capture import runner
from gdsdoctor.errors import BundleError

GZIP_MAGIC = b"\x1f\x8b"
BZIP2_MAGIC = b"BZh"
XZ_MAGIC = b"\xfd7zXZ\x00"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ZSTD_ARGV = ("zstd", "--decompress", "--stdout", "--quiet", "--no-progress")
_CHUNK = 1024 * 1024


class TooLarge(Exception):
    """Decompressed data passed its cap."""


def kind_of(data: bytes) -> str:
    """The compression of ``data`` by its first bytes ("" when none that we read)."""
    for magic, kind in ((GZIP_MAGIC, "gzip"), (BZIP2_MAGIC, "bzip2"), (XZ_MAGIC, "xz"), (ZSTD_MAGIC, "zstd")):
        if data.startswith(magic):
            return kind
    return ""


@contextlib.contextmanager
def zstd_stream(raw: IO[bytes]) -> Iterator[IO[bytes]]:
    """The decompressed bytes of the zstd file open in ``raw`` (from where it stands), read from
    the ``zstd`` program."""
    # A buffered file's descriptor may stand past its logical position (it read ahead): the
    # program reads the descriptor, so put it where the file object says it is.
    os.lseek(raw.fileno(), raw.tell(), os.SEEK_SET)
    with runner.streamed_output(ZSTD_ARGV, stdin=raw.fileno()) as process:
        if process is None or process.stdout is None:
            raise BundleError("a .zst file needs the zstd program (Debian and Ubuntu: apt-get install zstd)")
        yield _Checked(process.stdout, process.wait)


class _Checked(io.RawIOBase):
    """zstd's output; at its end, an error exit (corrupt data) is an error, not a short file."""

    def __init__(self, pipe: IO[bytes], wait: Callable[[], int]) -> None:
        super().__init__()
        self._pipe, self._wait = pipe, wait

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        data = self._pipe.read(_CHUNK if size is None or size < 0 else size)
        if not data and self._wait() != 0:
            raise OSError("zstd could not decompress it (corrupt or truncated)")
        return data


def decompress(data: bytes, cap: int) -> bytes:
    """``data`` decompressed (every concatenated frame or member), at most ``cap`` bytes;
    raises TooLarge past the cap and ValueError for corrupt or truncated data."""
    out: list[bytes] = []
    _decode(data, cap, out)
    return b"".join(out)


def head(data: bytes, size: int) -> bytes:
    """The first ``size`` decompressed bytes of the start of a file (``data`` may be cut
    anywhere): whatever decodes, no error for the cut."""
    out: list[bytes] = []
    with contextlib.suppress(TooLarge, ValueError):
        _decode(data, size, out)
    return b"".join(out)[:size]


def _decode(data: bytes, cap: int, out: list[bytes]) -> None:
    kind = kind_of(data)
    if kind == "zstd":
        _zstd_bytes(data, cap, out)
    elif kind == "gzip":
        _frames(data, cap, lambda: zlib.decompressobj(16 + zlib.MAX_WBITS), (zlib.error,), out)
    elif kind == "bzip2":
        _frames(data, cap, bz2.BZ2Decompressor, (OSError,), out)
    elif kind == "xz":
        _frames(data, cap, lambda: lzma.LZMADecompressor(lzma.FORMAT_XZ), (lzma.LZMAError,), out)
    else:
        out.append(data)


def _frames(
    data: bytes, cap: int, make: Callable[[], object], errors: tuple[type[Exception], ...], out: list[bytes]
) -> None:
    """Concatenated members (``cat a.gz b.gz``) decoded one after the other, within ``cap``."""
    size, rest = 0, data
    try:
        while rest:
            decoder = make()
            pending = rest
            while True:
                chunk = _step(decoder, pending, cap - size + 1)
                out.append(chunk)
                size += len(chunk)
                if size > cap:
                    raise TooLarge
                pending = b""
                if _finished(decoder) or not chunk:
                    break
            if not _finished(decoder):
                raise ValueError("truncated")
            rest = _unused(decoder).lstrip(b"\x00")  # gzip pads with NULs at times
    except errors as error:
        raise ValueError(str(error)) from None


def _step(decoder: object, data: bytes, room: int) -> bytes:
    if isinstance(decoder, bz2.BZ2Decompressor | lzma.LZMADecompressor):
        return decoder.decompress(data, max_length=min(room, _CHUNK))
    feed = data or decoder.unconsumed_tail  # type: ignore[attr-defined]
    return decoder.decompress(feed, min(room, _CHUNK))  # type: ignore[attr-defined]


def _finished(decoder: object) -> bool:
    if isinstance(decoder, bz2.BZ2Decompressor | lzma.LZMADecompressor):
        return decoder.eof
    return bool(decoder.eof)  # type: ignore[attr-defined]


def _unused(decoder: object) -> bytes:
    return decoder.unused_data  # type: ignore[attr-defined]


def _zstd_bytes(data: bytes, cap: int, out: list[bytes]) -> None:
    """zstd data held in memory, handed to the program through an anonymous memory file (never
    a file on disk); its output read within ``cap``."""
    fd = os.memfd_create("gdsdoctor-zst", os.MFD_CLOEXEC)
    size = 0
    with os.fdopen(fd, "w+b") as memory:
        memory.write(data)
        memory.seek(0)
        try:
            with zstd_stream(memory) as stream:
                while size <= cap and (more := stream.read(min(_CHUNK, cap + 1 - size))):
                    out.append(more)
                    size += len(more)
        except (OSError, BundleError) as error:
            raise ValueError(str(error)) from None
    if size > cap:
        raise TooLarge
