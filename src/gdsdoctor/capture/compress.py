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
import re
import zlib
from collections.abc import Callable, Iterator
from typing import IO, Any

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


# What decoding one xz stream may take: its dictionary, which the file's header chooses (xz -9
# needs 65 MiB; a 1.5 GiB dictionary ended in MemoryError under a 1 GiB limit).
XZ_MEMLIMIT = 128 * 1024 * 1024
XZ_TOO_BIG = f"an xz stream that needs more than {XZ_MEMLIMIT >> 20} MiB of memory to decode (its dictionary)"


def xz_decoder() -> lzma.LZMADecompressor:
    return lzma.LZMADecompressor(lzma.FORMAT_XZ, memlimit=XZ_MEMLIMIT)


def xz_stream(raw: IO[bytes]) -> IO[bytes]:
    """An xz file read within XZ_MEMLIMIT (``lzma.LZMAFile`` has no memory limit)."""
    import _compression  # the reader lzma.LZMAFile itself reads through

    reader = _compression.DecompressReader(raw, xz_decoder, trailing_error=lzma.LZMAError)
    return io.BufferedReader(_LimitSaid(reader))


class _LimitSaid(io.RawIOBase):
    """The decoder's "Memory usage limit was reached" as one line saying which limit."""

    def __init__(self, inner: io.RawIOBase) -> None:
        super().__init__()
        self._inner = inner

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            return self._inner.readinto(buffer)  # type: ignore[no-any-return]
        except lzma.LZMAError as error:
            if "memory" in str(error).lower():
                raise BundleError(f"{XZ_TOO_BIG}: not read") from None
            raise


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
        _frames(data, cap, xz_decoder, (lzma.LZMAError,), out)
    else:
        out.append(data)


# Concatenated members are real (``cat a.gz b.gz``; bgzip writes one per 64 KiB block: about a
# thousand within the 64 MiB cap); a file of hundreds of thousands of empty ones is an attack.
MAX_MEMBERS = 4096
_PIECE = 64 * 1024  # input fed at a time at most: a finished member's unused part is copied
_NOT_NUL = re.compile(rb"[^\x00]")


def _frames(
    data: bytes, cap: int, make: Callable[[], object], errors: tuple[type[Exception], ...], out: list[bytes]
) -> None:
    """Concatenated members (``cat a.gz b.gz``) decoded one after the other, within ``cap``. The
    input is fed a piece at a time from a view of ``data``: handing each member the whole rest
    made its decoder copy the rest as ``unused_data`` (one gzip member and 800,000 empty ones,
    16 MB: 6.8 s); now each member costs its own bytes and at most as many again."""
    view, at, size, members = memoryview(data), 0, 0, 0
    try:
        while at < len(view):
            members += 1
            if members > MAX_MEMBERS:
                raise ValueError(f"more than {MAX_MEMBERS} compressed members")
            decoder, wants, feed = make(), True, 64  # a member may be 20 bytes: small first
            while True:
                piece = view[at : at + feed] if wants else b""
                at, feed = at + len(piece), min(2 * feed, _PIECE)
                chunk = _step(decoder, piece, cap - size + 1)
                out.append(chunk)
                size += len(chunk)
                if size > cap:
                    raise TooLarge
                if _finished(decoder):
                    break
                wants = _needs_input(decoder, chunk, cap - size + 1)
                if wants and at >= len(view):
                    raise ValueError("truncated")
            at -= len(_unused(decoder))  # the start of the next member, fed with this piece
            padding = _NOT_NUL.search(data, at)  # gzip pads with NULs at times
            at = padding.start() if padding else len(view)
    except errors as error:
        said = XZ_TOO_BIG if "memory usage limit" in str(error).lower() else str(error)
        raise ValueError(said) from None


def _step(decoder: object, data: bytes | memoryview, room: int) -> bytes:
    if isinstance(decoder, bz2.BZ2Decompressor | lzma.LZMADecompressor):
        return decoder.decompress(data, max_length=min(room, _CHUNK))
    feed = data or decoder.unconsumed_tail  # type: ignore[attr-defined]
    return decoder.decompress(feed, min(room, _CHUNK))  # type: ignore[attr-defined]


def _needs_input(decoder: object, chunk: bytes, room: int) -> bool:
    """Whether the decoder has used all it was given (and has no output waiting)."""
    if isinstance(decoder, bz2.BZ2Decompressor | lzma.LZMADecompressor):
        return decoder.needs_input
    return not decoder.unconsumed_tail and len(chunk) < min(room, _CHUNK)  # type: ignore[attr-defined]


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
