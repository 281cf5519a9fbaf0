"""Write output files (reports, bundles, redacted copies, redaction maps) so that nothing is
ever half-written, written through a link, or left behind.

Every output is written to a fresh temporary file in its destination directory (``mkstemp``:
a unique name, ``O_EXCL``, so a link or file planted at a predictable name is never opened),
flushed to disk, and only then given its name, atomically:

- :func:`write_atomic` replaces whatever is at the name (the rename replaces a link itself,
  never what it points to): for reports that a collector re-reads, which must see the old file
  or the new one, never half of one;
- :func:`write_new` never replaces anything, not even a dangling link: for bundles, copies
  and maps, which must not overwrite an earlier one; of two runs writing one name, one wins and
  the other fails with ``FileExistsError``.

Modes are set on the open file (``fchmod``), so the umask changes nothing: what holds the host's
data (bundles, redacted copies, maps: ``PRIVATE``, as sos report writes its archive) is its
owner's alone, a report that a collector running as another user reads (node_exporter's textfile,
a CI job's JUnit) is ``REPORT``.

On any failure or interrupt (a full disk, SIGTERM raised as ``KeyboardInterrupt``) the
temporary file is removed, and the error names the output, not the temporary file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

Writer = Callable[[BinaryIO], None]
PRIVATE = 0o600  # the kernel log, dmesg, lspci -vvv, config files: root-only on the host
PRIVATE_DIR = 0o700
REPORT = 0o644


def write_atomic(path: Path, text: str, mode: int = REPORT) -> None:
    """Write ``text`` (UTF-8) to ``path``, replacing what is there. The temporary name starts
    with a dot and ends in ``.tmp``, so collectors that read ``*.prom`` or ``*.xml`` never pick
    it up. A path the rename must not replace (``special_target``) is an OSError (EINVAL)."""
    write_atomic_bytes(path, text.encode("utf-8"), mode)


def write_atomic_bytes(path: Path, data: bytes, mode: int = REPORT) -> None:
    """``write_atomic`` of bytes (a benchmark's raw output)."""
    if why := special_target(str(path)):
        raise OSError(errno.EINVAL, why, str(path))
    _write(path, lambda out: out.write(data), mode, os.replace)


_SYSTEM_TREES = ("/dev", "/proc", "/sys")


def special_target(path: str) -> str | None:
    """Why a report may not replace ``path``, or None. The rename would swap a fifo, a device or
    a link to one for a regular file, and as root ``/dev/null`` or ``/dev/stdout`` (a link to the
    process's own fd 1) for the system's. Judged by where the path leads, not how it is spelled
    (``//dev/stdout``, ``link-to-dev/stdout``): the directory it lands in, resolved, and that
    directory's filesystem (a devtmpfs, proc or sysfs mounted elsewhere)."""
    parent = os.path.realpath(os.path.dirname(os.path.abspath(path)) or ".")
    if any(parent == tree or parent.startswith(tree + "/") for tree in _SYSTEM_TREES):
        return "is a system path"
    if _same_filesystem_as_a_system_tree(parent):
        return "is on a system filesystem (devices, proc or sysfs)"
    try:
        mode = os.stat(path).st_mode  # follows links: a link to a fifo or a device too
    except OSError:
        return None  # not there yet (or unreadable: the write will say so)
    return None if stat.S_ISREG(mode) else "is not a regular file (the report would replace it)"


def _same_filesystem_as_a_system_tree(directory: str) -> bool:
    """Whether ``directory`` lies on the filesystem of /dev, /proc or /sys where that is a
    filesystem of its own (in a bare chroot /dev may be a plain directory of the root's)."""
    try:
        device, root = os.stat(directory).st_dev, os.stat("/").st_dev
    except OSError:
        return False
    for tree in _SYSTEM_TREES:
        with contextlib.suppress(OSError):
            if os.stat(tree).st_dev == device != root:
                return True
    return False


def write_new(path: Path, write: Writer, mode: int = PRIVATE) -> None:
    """Create ``path`` with what ``write`` writes to the binary file it is given; raises
    ``FileExistsError`` if anything (a file, a link, even a dangling one) is at that name."""
    _write(path, write, mode, _link_new)


def write_new_bytes(path: Path, data: bytes, mode: int = PRIVATE) -> None:
    write_new(path, lambda out: out.write(data), mode)


def _write(path: Path, write: Writer, mode: int, publish: Callable[[str, Path], None]) -> None:
    directory = path.parent if str(path.parent) else Path(".")
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as error:
        raise _naming(error, path) from None
    try:
        with os.fdopen(handle, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
            os.fchmod(out.fileno(), mode)  # mkstemp makes 0600; a report's collector may run as another user
        publish(temporary, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise _naming(error, path) from None
        raise
    with contextlib.suppress(OSError):
        os.unlink(temporary)  # write_new's hard link leaves the temporary name behind


def _link_new(temporary: str, path: Path) -> None:
    """Give ``temporary`` the name ``path`` unless something is there (``link`` neither follows
    nor replaces a link at its destination)."""
    try:
        os.link(temporary, path, follow_symlinks=False)
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK):
            raise
        # A filesystem without hard links (vfat, some FUSE): check, then rename.
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path)) from None
        os.rename(temporary, path)


def _naming(error: OSError, path: Path) -> OSError:
    """The error, naming the output (the user never chose the temporary name)."""
    if error.filename != str(path):
        error.filename = str(path)
        error.filename2 = None
    return error
