"""Reading the host's files under ``--host-root``, for the probes' readers.

Readers (I/O under ``host_root``; they never reach anything outside it, and never raise but a
PermissionError where a caller asks for it, so that the capture says denied, not "nothing there"):
- ``resolve_in_root`` / ``real_inside`` / ``child_inside`` / ``within``: a path with its links
  resolved inside the root, as ``openat2(RESOLVE_IN_ROOT)`` does (an absolute link starts again
  at the root, ``..`` stops at it), so nothing outside the root is ever reached.
- ``attrs_inside`` / ``attrs_of_real`` / ``list_inside``: the attributes and the names of a sysfs
  directory, read only inside the root; ``read_under_root`` (a whole file), ``read_attr`` (one
  sysfs attribute at a path already checked), ``read_in_root`` / ``read_regular`` /
  ``open_regular`` (regular files only, opened without blocking), ``link_name``, ``list_dir``,
  ``bdfs_in``.
- ``MISSING``: what a reader returns when its tree is absent.

Pure text helpers are :mod:`gdsdoctor.probes.text`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from gdsdoctor.patterns import lazy_compile

# -------------------------------------------------------------------------------------------------
# readers: sysfs files under the host root (I/O, never raise)

# What a reader returns when its tree is absent: the capture records the source as "missing"
# (unknown), so rules stay inconclusive instead of reading "zero devices".
MISSING = b""
BDF = lazy_compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
_MAX_ATTR = 65536  # sysfs attributes are one page at most; bigger means it is not sysfs


def open_regular(path: Path | str, follow: bool = True) -> int:
    """A blocking descriptor of a regular file; OSError when it cannot be opened or is not a
    regular file. Opened without blocking and checked with fstat first: a fifo, socket or
    device planted in a host root (sysfs attributes and /proc, /etc files are regular files)
    would otherwise block the reader until the capture's deadline. ``follow`` False refuses a
    link as the last component (``resolve_in_root`` has resolved them all)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    descriptor = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(0, "not a regular file")
        os.set_blocking(descriptor, True)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def read_regular_file(path: Path | str, limit: int, follow: bool = True) -> bytes:
    """At most ``limit`` bytes of a regular file (``open_regular``); OSError when it cannot."""
    descriptor = open_regular(path, follow)
    try:
        chunks, left = [], limit
        while left > 0 and (chunk := os.read(descriptor, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def read_regular(path: Path | str, limit: int, follow: bool = True) -> bytes | None:
    """``read_regular_file``, None instead of an error (readers never raise)."""
    try:
        return read_regular_file(path, limit, follow)
    except (OSError, ValueError):
        return None


def read_attr(path: Path | str) -> str | None:
    """The stripped text of one sysfs attribute, or None when it is missing, unreadable or not a
    regular file. It follows links: readers reach it through ``attrs_inside``, which checks them."""
    data = read_regular(path, _MAX_ATTR)
    return data.decode("utf-8", "replace").strip() if data is not None else None


def link_name(path: Path) -> str | None:
    """The last component of a symlink's target (``driver`` → ``nvme``), not followed; or None."""
    try:
        return os.path.basename(os.readlink(path).rstrip("/")) or None
    except (OSError, ValueError):
        return None


def within(real_root: str, real_path: str) -> bool:
    """Whether ``real_path`` is ``real_root`` or below it (both already resolved with realpath)."""
    return real_path == real_root or real_path.startswith(real_root.rstrip("/") + "/")


def real_inside(real_root: str, path: Path | str) -> str | None:
    """``path``, named below ``real_root`` (the host root, already a realpath: readers resolve
    it once, not once per device), with every link resolved inside that root
    (``resolve_in_root``: the one way every host file and sysfs path is resolved); None when it
    is missing or not named below the root."""
    path = os.fspath(path)
    if not within(real_root, path):
        return None
    real = resolve_in_root(real_root, path[len(real_root) :])
    return real if real is not None and os.path.lexists(real) else None


def child_inside(real_root: str, real_directory: str, name: str) -> str | None:
    """``name`` in a directory already resolved inside ``real_root``: the path itself, or, for a
    link, where it leads inside the root (opening the link would let the kernel follow an
    absolute target out of it). Only a link of its own can lead elsewhere, so one lstat does
    what a walk of every component (sysfs paths run through links) would."""
    path = os.path.join(real_directory, name)
    return real_inside(real_root, path) if os.path.islink(path) else path


def attrs_inside(real_root: str, directory: Path | str | None, names: Iterable[str]) -> dict[str, str | None]:
    """The attributes ``names`` of a sysfs directory (see ``read_attr``), None for each one
    missing or reached only through a link out of ``real_root``. The directory is resolved
    once, not once per attribute."""
    real = real_inside(real_root, directory) if directory is not None else None
    return attrs_of_real(real_root, real, names)


def attrs_of_real(
    real_root: str, real_directory: Path | str | None, names: Iterable[str]
) -> dict[str, str | None]:
    """``attrs_inside`` for a directory already resolved inside ``real_root`` (or None)."""
    found: dict[str, str | None] = {}
    for name in names:
        path = child_inside(real_root, str(real_directory), name) if real_directory is not None else None
        found[name] = read_attr(path) if path is not None else None
    return found


def list_inside(real_root: str, directory: Path | str | None, *, raise_denied: bool = False) -> list[str]:
    """The sorted names in a directory; empty when it is missing or leads out of ``real_root``.
    ``raise_denied``: see ``list_dir``."""
    real = real_inside(real_root, directory) if directory is not None else None
    return list_dir(real, raise_denied=raise_denied) if real is not None else []


_MAX_LINKS = 40  # symlinks followed in one path, as the kernel's ELOOP limit


def resolve_in_root(real_root: str, path: str) -> str | None:
    """``path`` (as the host sees it, e.g. ``/etc/os-release``) resolved under ``real_root`` the
    way ``openat2(RESOLVE_IN_ROOT)`` does: an absolute link starts again at the root and ``..``
    never climbs above it, so ``/etc/os-release -> /usr/lib/os-release`` reads the host root's
    copy, and nothing outside the root is ever reached. Each component is looked at with lstat,
    one at a time; None after too many links or on an unreadable component."""
    pending = [part for part in reversed(path.split("/")) if part not in ("", ".")]
    resolved: list[str] = []
    links = 0
    try:
        while pending:
            part = pending.pop()
            if part == "..":
                if resolved:
                    resolved.pop()
                continue
            candidate = os.path.join(real_root, *resolved, part)
            if not os.path.islink(candidate):
                resolved.append(part)
                continue
            links += 1
            if links > _MAX_LINKS:
                return None
            target = os.readlink(candidate)
            if target.startswith("/"):
                resolved = []
            pending.extend(part for part in reversed(target.split("/")) if part not in ("", "."))
    except (OSError, ValueError):
        return None
    return os.path.join(real_root, *resolved)


def read_in_root(host_root: Path | str, path: str, limit: int, *, raise_denied: bool = False) -> bytes | None:
    """At most ``limit`` bytes of the regular file ``path`` of the host mounted at ``host_root``
    (links resolved inside it: ``resolve_in_root``); None when missing, unreadable or not a
    regular file. The last component is opened with O_NOFOLLOW, so a link swapped in after
    the walk is refused rather than followed. ``raise_denied``: a file there that cannot be
    read raises PermissionError (the capture then says denied) instead of reading as absent."""
    try:
        root = os.path.realpath(host_root)
    except (OSError, ValueError):
        return None
    real = resolve_in_root(root, path)
    if real is None:
        return None
    try:
        return read_regular_file(real, limit, follow=False)
    except PermissionError:
        if raise_denied:
            raise
        return None
    except (OSError, ValueError):
        return None


def read_under_root(
    host_root: Path, path: str, limit: int = 16 * 1024 * 1024, *, raise_denied: bool = False
) -> str | None:
    """Text of the file ``path`` under host_root (``read_in_root``); None when it cannot be read."""
    data = read_in_root(host_root, path, limit, raise_denied=raise_denied)
    return data.decode("utf-8", "replace") if data is not None else None


BOOT_ID = "/proc/sys/kernel/random/boot_id"


def same_kernel(host_root: Path | str) -> bool:
    """Whether ``host_root`` is this running kernel's root: ``/``, or a root whose boot id is
    this kernel's (a container given the host's root). A root that does not say (a dump without
    ``proc``) is another host: nothing of this process (its environment) is read for it."""
    if os.path.realpath(host_root) == "/":
        return True
    theirs = read_in_root(host_root, BOOT_ID, 256)
    mine = read_regular(BOOT_ID, 256)
    return theirs is not None and mine is not None and theirs.strip() == mine.strip()


def list_dir(path: Path | str, *, raise_denied: bool = False) -> list[str]:
    """The sorted names in a directory; empty when it is missing or unreadable. ``raise_denied``: an
    unreadable directory raises PermissionError instead (a reader's top directory: the capture
    then says denied, not "no devices")."""
    try:
        return sorted(os.listdir(path))
    except PermissionError:
        if raise_denied:
            raise
        return []
    except (OSError, ValueError):
        return []


def bdfs_in(path: Path | str) -> list[str]:
    """The PCI addresses along a resolved device path, outermost first."""
    return [part for part in str(path).split("/") if BDF.match(part)]
