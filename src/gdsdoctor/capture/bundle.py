"""Bundles: a directory or ``.tar.gz`` holding ``manifest.json`` plus the raw artifacts.

Format ``gdsdoctor.bundle`` version 1 (documented in docs/bundle.md). Everything read from a
bundle is untrusted, and nothing is ever extracted to disk:

- member names are checked before use (no absolute names, no ``..``, no control characters);
  only regular files are read: links, devices, fifos and sparse members are never used;
- archives are read as a stream through a counter that stops decompression past a limit,
  so a decompression bomb costs at most ``MAX_STREAM_BYTES`` of work and ``MAX_TOTAL_BYTES``
  of memory, whatever the headers claim;
- a directory is walked without following links, files are opened relative to their
  directory with ``O_NOFOLLOW | O_NONBLOCK`` and checked with ``fstat`` (a fifo never blocks);
- the manifest is bounded and every value in it is type-checked and cut to size;
  a member name present twice is ambiguous and not analysed.

Longer than 600 lines: the writer, the manifest and the two untrusted readers (directory and
archive, with the selection and link records other tools' bundles need: ``capture.sos``) share
one set of limits and checks, kept in one place so that every front door has the same guards.
"""

from __future__ import annotations

import bz2
import contextlib
import errno
import gzip
import hashlib
import io
import json
import lzma
import os
import posixpath
import re
import secrets
import stat
import tarfile
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from gdsdoctor import BUNDLE_FORMAT, BUNDLE_VERSION, __version__
from gdsdoctor.capture import compress
from gdsdoctor.capture.capture import HOST_TREES, Capture
from gdsdoctor.config import JOB_KEYS
from gdsdoctor.errors import BundleError
from gdsdoctor.model import Artifact, ArtifactStatus
from gdsdoctor.outputs import PRIVATE, PRIVATE_DIR, write_new

MANIFEST = "manifest.json"
# Names read as an archive bundle (the compression is told by the content, not the name: gzip,
# bzip2, xz, zstd or none, all under the same size and member limits).
BUNDLE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst", ".tzst")
MAX_MEMBERS = 10_000
MAX_MEMBER_BYTES = 64 * 1024 * 1024
MAX_TOTAL_BYTES = 256 * 1024 * 1024
MAX_MANIFEST_BYTES = 8 * 1024 * 1024
MAX_HEADER_BYTES = 64 * 1024  # a pax or GNU long-name header: metadata, never content
MAX_HEADER_CHAIN = 16  # metadata headers before one member: pax global + extended, GNU long name + link
MAX_DIR_ENTRIES = 4 * MAX_MEMBERS  # entries a directory walk looks at, files or not
MAX_DIR_DEPTH = 16  # directory levels below a bundle directory (its names are at most 5 deep)
MAX_TEXT = 300  # characters kept of a free-text manifest value (detail, source…)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")  # searched in C: a sos archive has 1,500+ names


def is_bundle(path: Path) -> bool:
    """A bundle: an archive by its suffix, or a directory holding the manifest, directly or in
    its one sub-directory (an unpacked archive keeps its top folder). A directory of several
    bundles is not one bundle: a fleet run lists its children."""
    if not path.is_dir():
        return path.name.endswith(BUNDLE_SUFFIXES)
    if (path / MANIFEST).is_file():
        return True
    try:
        children = [child for child in path.iterdir() if child.is_dir()]
    except OSError:
        return False
    return len(children) == 1 and (children[0] / MANIFEST).is_file()


def max_stream_bytes() -> int:
    """Decompressed bytes read from an archive at most: content plus a header per member."""
    return MAX_TOTAL_BYTES + MAX_MEMBERS * 2 * 512 + 1024 * 1024


def manifest_for(capture: Capture, redacted: bool = False) -> dict[str, Any]:
    manifest = {
        "format": BUNDLE_FORMAT,
        "format_version": BUNDLE_VERSION,
        "tool_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": capture.host,
        "options": capture.options,
        "sections": capture.assignments,
        "artifacts": [_entry(artifact) for artifact in capture.artifacts.values()],
    }
    if redacted:
        manifest["redacted"] = True
    return manifest


def _entry(artifact: Artifact) -> dict[str, Any]:
    return {
        "name": artifact.name,
        "source": artifact.source,
        "status": str(artifact.status),
        "detail": artifact.detail,
        "exit_code": artifact.exit_code,
        "duration_s": round(artifact.duration_s, 4),
        "size": len(artifact.data),
        "sha256": artifact.sha256,
    }


def write_bundle(capture: Capture, output: Path, redacted: bool = False) -> Path:
    """Write ``capture`` as a ``.tar.gz`` (when the name says so) or as a directory. An archive
    is created whole under its name or not at all (``outputs.write_new``): never over an
    existing file or link, never half-written, nothing left behind on failure."""
    manifest = json.dumps(manifest_for(capture, redacted), indent=2, sort_keys=True).encode()
    files = {MANIFEST: manifest} | {a.name: a.data for a in capture.artifacts.values() if a.data}
    if output.name.endswith((".tar.gz", ".tgz")):
        write_new(output, lambda raw: _write_tar(files, output.name, raw), PRIVATE)
    else:
        _DirectoryWriter(output).write(files)
    return output


def write_tar(files: dict[str, bytes], output: Path) -> None:
    """``files`` (name -> bytes) as a ``.tar.gz`` at ``output``, created whole or not at all."""
    write_new(output, lambda raw: _write_tar(files, output.name, raw), PRIVATE)


def _write_tar(files: dict[str, bytes], name: str, raw: IO[bytes]) -> None:
    """The archive into ``raw``; its gzip header names the bundle (``gzip -N`` restores that
    name), not the temporary file it is written to."""
    now = int(time.time())
    with (
        gzip.GzipFile(filename=name, mode="wb", fileobj=raw, mtime=now) as compressed,
        tarfile.open(fileobj=compressed, mode="w") as tar,
    ):
        for member, data in sorted(files.items()):
            info = tarfile.TarInfo(member)
            info.size = len(data)
            info.mtime = now
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_OWN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class _DirectoryWriter:
    """A directory bundle, written so that nothing planted in the directory (it may be an
    empty one in a shared place, where another user can add entries while we write) redirects
    a write: every directory is opened without following links and must be ours, every file is
    created new (``O_EXCL | O_NOFOLLOW``) relative to its directory. On failure or interrupt
    what was created is removed, through the same descriptors."""

    def __init__(self, output: Path) -> None:
        self.output = output
        self.dirs: dict[str, int] = {}  # relative directory ("" for the top) -> descriptor
        self.created: list[tuple[str, str, bool]] = []  # (parent, name, is a directory)

    def write(self, files: dict[str, bytes]) -> None:
        """Build the bundle in a hidden directory beside ``output`` (``.NAME.XXXX.tmp``) and
        rename it into place whole: a run killed with SIGKILL, which no cleanup survives, leaves
        that hidden directory, never a half bundle at the name that would refuse the retry. The
        rename replaces an empty directory at the name (``collect -o DIR`` into one made
        beforehand) and nothing else."""
        parent = self.output.absolute().parent
        parent.mkdir(parents=True, exist_ok=True)  # the path the user named is trusted
        building = _new_hidden_directory(parent, self.output.name)
        try:
            self.dirs[""] = self._open_own(building, None)
            os.fchmod(self.dirs[""], PRIVATE_DIR)  # the bundle's own directory, whatever the umask
            for name, data in files.items():
                parent_name, _, base = name.rpartition("/")
                try:
                    self._create(parent_name, base, data)
                except OSError as error:
                    error.filename = str(self.output / name)  # not the bare name opened
                    raise
            _rename_into_place(building, self.output)
        except BaseException:
            self._remove_created()
            with contextlib.suppress(OSError):
                os.rmdir(building)
            raise
        finally:
            for descriptor in self.dirs.values():
                os.close(descriptor)

    def _create(self, parent: str, base: str, data: bytes) -> None:
        descriptor = os.open(base, _NEW_FILE, PRIVATE, dir_fd=self._directory(parent))
        self.created.append((parent, base, False))
        os.fchmod(descriptor, PRIVATE)  # whatever the umask (os.open's mode is masked by it)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)

    def _directory(self, relative: str) -> int:
        if relative in self.dirs:
            return self.dirs[relative]
        above, _, name = relative.rpartition("/")
        parent = self._directory(above)
        try:
            os.mkdir(name, PRIVATE_DIR, dir_fd=parent)
            self.created.append((above, name, True))
        except FileExistsError:
            pass  # made by us for an earlier file, or already there: checked on opening
        self.dirs[relative] = self._open_own(name, parent)
        os.fchmod(self.dirs[relative], PRIVATE_DIR)  # whatever the umask
        return self.dirs[relative]

    def _open_own(self, name: str, parent: int | None) -> int:
        descriptor = os.open(name, _OWN_DIR, dir_fd=parent)
        if os.fstat(descriptor).st_uid != os.geteuid():
            os.close(descriptor)
            raise PermissionError(errno.EPERM, "a directory in the bundle is not ours", str(self.output))
        return descriptor

    def _remove_created(self) -> None:
        for parent, name, is_directory in reversed(self.created):
            with contextlib.suppress(OSError, KeyError):
                if is_directory:
                    os.rmdir(name, dir_fd=self.dirs[parent])
                else:
                    os.unlink(name, dir_fd=self.dirs[parent])


def _new_hidden_directory(parent: Path, name: str) -> str:
    """A new directory ``.NAME.XXXXXXXX.tmp`` in ``parent`` (created exclusively, as mkdtemp
    does, with the bundle's own mode once renamed: its owner's alone)."""
    for _ in range(100):
        candidate = str(parent / f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            os.mkdir(candidate, PRIVATE_DIR)
        except FileExistsError:
            continue
        return candidate
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(parent / name))


def _rename_into_place(building: str, output: Path) -> None:
    """``building`` renamed to ``output``: over nothing, or over an empty directory only."""
    try:
        os.rename(building, output)
    except OSError as error:
        if error.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
            raise FileExistsError(errno.EEXIST, "already exists", str(output)) from None
        error.filename = str(output)
        raise


def safe_member_name(name: str) -> str | None:
    """A normalised relative POSIX name, or None if it escapes the bundle or is odd."""
    if not isinstance(name, str) or not name or len(name) > 1024 or "\\" in name:
        return None
    if _CONTROL.search(name) or not _encodable(name):
        return None  # NUL, newline, escape sequences, undecodable bytes: never a name we write
    if name.startswith("/") or ".." in name.split("/"):
        return None
    normal = posixpath.normpath(name)
    return None if normal in (".", "") else normal


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from undecodable bytes in a name
        return False
    return True


@dataclass(frozen=True, slots=True)
class Selection:
    """Which members of a foreign bundle (a sos report) are worth reading. Names are relative to
    the bundle's top (an archive's one top folder is tried both ways): ``file(name)`` keeps a
    regular file, ``directory(name)`` says whether a directory walk enters it. Members not
    selected are passed over without being kept, so a report of 100,000 files costs the memory
    of the few the probes read; the header count and decompressed bytes stay capped."""

    file: Callable[[str], bool]
    directory: Callable[[str], bool] = lambda name: True
    max_headers: int = 20 * MAX_MEMBERS  # entries looked at, kept or not
    max_stream: int = 8 * MAX_TOTAL_BYTES  # decompressed bytes worked through, kept or not

    def keeps(self, name: str) -> bool:
        return self.file(name) or self.file(name.partition("/")[2])

    def enters(self, name: str) -> bool:
        return self.directory(name) or self.directory(name.partition("/")[2])


@dataclass(slots=True)
class Members:
    """What an archive or directory holds: regular files read, and what was set aside."""

    files: dict[str, bytes] = field(default_factory=dict)
    duplicates: set[str] = field(default_factory=set)
    ignored: list[str] = field(default_factory=list)  # "name (why)"
    total: int = 0
    # Symbolic and hard links seen (name -> what they name), never opened on disk: a foreign
    # bundle's reader may resolve them by name among the members (``resolve_link``).
    links: dict[str, str] = field(default_factory=dict)

    def add(self, name: str, data: bytes) -> None:
        if name in self.files:
            self.duplicates.add(name)
            return
        self.files[name] = data

    def budget(self, where: Path, name: str, size: int) -> None:
        """Refuse the bundle when one more member would pass the size or count limits."""
        if size > MAX_MEMBER_BYTES:
            raise BundleError(f"{where}: member {name!r} is larger than {MAX_MEMBER_BYTES} bytes")
        if self.total + size > MAX_TOTAL_BYTES:
            raise BundleError(f"{where}: unpacks to more than {MAX_TOTAL_BYTES} bytes")
        self.total += size


def read_members(path: Path, select: Selection | None = None) -> Members:
    """The members of a bundle directory or archive, read as untrusted input (module docstring);
    with ``select``, only the members it keeps."""
    return _read_tar(path, select) if path.is_file() else _read_dir(path, select)


def resolve_link(name: str, members: Members, hops: int = 16, must_exist: bool = True) -> str | None:
    """The member a name stands for once the links on its way are resolved *by name among the
    members* (as ``openat2(RESOLVE_IN_ROOT)`` would: an absolute target starts again at the top,
    ``..`` never climbs above it); None when it leads nowhere, out, or round in circles. Nothing
    is opened on disk. ``must_exist=False``: where it leads, whether or not that member was read."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    done: list[str] = []
    while parts:
        part = parts.pop(0)
        if part == "..":
            if done:
                done.pop()
            continue
        here = "/".join([*done, part])
        target = members.links.get(here)
        if target is None:
            done.append(part)
            continue
        hops -= 1
        if hops < 0:
            return None
        parts = [p for p in target.split("/") if p not in ("", ".")] + parts
        if target.startswith("/"):
            done = []
    found = "/".join(done)
    return found if found in members.files or not must_exist else None


def read_bundle(path: Path) -> Capture:
    """Read a bundle directory or archive into a Capture; raises BundleError if unusable."""
    members = read_members(path)
    strip_common_top(members)
    manifest = _load_manifest(path, members)
    capture = _capture_from(path, manifest, members)
    if members.ignored:
        shown = ", ".join(members.ignored[:5]) + (" …" if len(members.ignored) > 5 else "")
        count = len(members.ignored)
        capture.notes.append(f"bundle: ignored {count} member(s) that are not safe to read: {shown}")
    return capture


def _load_manifest(path: Path, members: Members) -> dict[str, Any]:
    if MANIFEST in members.duplicates:
        raise BundleError(f"{path}: more than one {MANIFEST} (ambiguous; refused)")
    raw = members.files.get(MANIFEST)
    if raw is None:
        raise BundleError(f"{path}: no {MANIFEST} (not a gdsdoctor bundle)")
    if len(raw) > MAX_MANIFEST_BYTES:
        raise BundleError(f"{path}: {MANIFEST} is larger than {MAX_MANIFEST_BYTES} bytes")
    try:
        manifest = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: [[[[…]]]] nested too deep
        raise BundleError(f"{path}: {MANIFEST} is not valid JSON") from None
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        raise BundleError(f"{path}: {MANIFEST} does not describe a {BUNDLE_FORMAT}")
    version = manifest.get("format_version")
    if type(version) is not int or version < 1:
        raise BundleError(f"{path}: unknown bundle format version {_text(version, 40)!r}")
    if version > BUNDLE_VERSION:
        raise BundleError(f"{path}: bundle format version {version} is newer than this gdsdoctor reads")
    return manifest


def _capture_from(path: Path, manifest: dict[str, Any], members: Members) -> Capture:
    capture = Capture(origin="bundle", host=_host(manifest), options=_options(manifest), label=str(path))
    entries = manifest.get("artifacts") if isinstance(manifest.get("artifacts"), list) else []
    if len(entries) > MAX_MEMBERS:
        capture.notes.append(f"manifest: {len(entries)} artifacts; only the first {MAX_MEMBERS} are read")
    for entry in entries[:MAX_MEMBERS]:
        artifact = _artifact_from(entry, members, capture.notes)
        if artifact is None:
            continue
        if artifact.name in capture.artifacts:
            capture.notes.append(f"manifest: {artifact.name!r} listed twice; the first entry is used")
            continue
        capture.artifacts[artifact.name] = artifact
    sections = manifest.get("sections") if isinstance(manifest.get("sections"), dict) else {}
    for section, names in list(sections.items())[:MAX_MEMBERS]:
        if isinstance(section, str) and isinstance(names, list):
            capture.assignments[section] = [n for n in names if isinstance(n, str) and n in capture.artifacts]
    return capture


def _host(manifest: dict[str, Any]) -> dict[str, str]:
    host = manifest.get("host")
    if not isinstance(host, dict):
        return {}
    return {_text(k, 40): _text(v, 200) for k, v in list(host.items())[:50] if _is_scalar(v)}


def _options(manifest: dict[str, Any]) -> dict[str, Any]:
    options = manifest.get("options")
    options = options if isinstance(options, dict) else {}
    cleaned: dict[str, Any] = {}
    for key in ("host_root", "target_path"):
        value = options.get(key)
        cleaned[key] = _text(value, 4096) if isinstance(value, str) and value else None
    # the host's trees a live capture's --host-root lacked (capture/live.py): the run was partial
    trees = options.get("absent_trees")
    absent = [t for t in HOST_TREES if isinstance(trees, list) and t in trees]
    if absent:
        cleaned["absent_trees"] = absent
    if isinstance(options.get("since"), str) and options["since"]:  # `collect --since`, judged on reading
        cleaned["since"] = _text(options["since"], 100)
    if job := _job(options.get("job")):  # `watch --record --params`: analyze judges the same job
        cleaned["job"] = job
    if isinstance(manifest.get("created"), str):  # the capture's time, for events' ages
        cleaned["created"] = _text(manifest["created"], 40)
    return cleaned


def _job(job: Any) -> dict[str, Any]:
    """The recorded checkpoint job: its known keys with scalar values, as text or whole numbers (a
    value that does not parse makes the job section unparsable, judged as any bad --params)."""
    if not isinstance(job, dict):
        return {}
    return {
        key: value if isinstance(value, int) and not isinstance(value, bool) else _text(value, 100)
        for key in JOB_KEYS
        if _is_scalar(value := job.get(key)) and value not in (None, "")
    }


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _text(value: Any, limit: int = MAX_TEXT) -> str:
    """A manifest value as a bounded, printable-encodable string ("" for containers)."""
    if value is None or not _is_scalar(value):
        return ""
    return str(value)[:limit].encode("utf-8", errors="replace").decode("utf-8")


def _artifact_from(entry: Any, members: Members, notes: list[str]) -> Artifact | None:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        notes.append("manifest: skipped a malformed artifact entry")
        return None
    name = safe_member_name(entry["name"])
    if name is None:
        notes.append(f"manifest: refused unsafe artifact name {_text(entry['name'], 100)!r}")
        return None
    try:
        status = ArtifactStatus(entry.get("status", "ok"))
    except (ValueError, TypeError):
        status = ArtifactStatus.ERROR
    data = members.files.get(name, b"")
    detail = _text(entry.get("detail"))
    if name in members.duplicates:
        status, data = ArtifactStatus.ERROR, b""
        detail = "the bundle holds this name more than once (edited?); not analysed"
        notes.append(f"{name}: present more than once in the bundle; not analysed")
    elif status is ArtifactStatus.OK and name not in members.files:
        status, detail = ArtifactStatus.MISSING, "listed in the manifest but absent from the bundle"
    elif status is ArtifactStatus.OK:
        _check_integrity(name, entry, data, notes)
    exit_code = entry.get("exit_code")
    return Artifact(
        name,
        status,
        data,
        source=_text(entry.get("source"), 1000),
        detail=detail,
        exit_code=exit_code if type(exit_code) is int and abs(exit_code) < 2**31 else None,
    )


def _check_integrity(name: str, entry: dict[str, Any], data: bytes, notes: list[str]) -> None:
    size, sha = entry.get("size"), entry.get("sha256")
    if type(size) is int and size != len(data):
        notes.append(f"{name}: {len(data)} bytes, the manifest says {size} (edited?); analysed as found")
    elif isinstance(sha, str) and sha and hashlib.sha256(data).hexdigest() != sha:
        notes.append(f"{name}: sha256 differs from the manifest (edited or corrupted); analysed as found")


# --- directories -------------------------------------------------------------------------

_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _read_dir(root: Path, select: Selection | None = None) -> Members:
    """Walk a bundle directory iteratively, never deeper than MAX_DIR_DEPTH: a bundle's names are
    a few levels deep, and a hostile tree 1,000 levels deep must be refused in one line, not
    exhaust the recursion limit (os.fwalk recurses) or the open files (one per level). With
    ``select``, only the directories it enters are walked and the files it keeps read."""
    if not root.is_dir():
        raise BundleError(f"{root}: no such file or directory")
    top = root.resolve()  # the path the user named is trusted; nothing under it is followed
    members, seen = Members(), [0]
    stack: list[tuple[int, str, Iterator[str]]] = []  # the open directories, top first

    def enter(dirfd: int, relative: str) -> None:
        stack.append((dirfd, relative, iter(())))  # on the stack first: closed should reading fail
        level = _read_dir_level(root, members, dirfd, relative, seen, select)
        stack[-1] = (dirfd, relative, iter(level))

    try:
        enter(os.open(top, _DIR_FLAGS), "")
        while stack:
            dirfd, relative, subdirectories = stack[-1]
            name = next(subdirectories, None)
            if name is None:
                os.close(stack.pop()[0])
                continue
            if len(stack) > MAX_DIR_DEPTH:
                raise BundleError(f"{root}: more than {MAX_DIR_DEPTH} directory levels (not a bundle?)")
            if select is not None and not select.enters(f"{relative}{name}"):
                continue
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=dirfd)
            except OSError as error:
                members.ignored.append(f"{relative}{name}/ ({error.strerror or 'unreadable'})")
                continue
            enter(child, f"{relative}{name}/")
    except OSError as error:
        raise BundleError(f"{root}: cannot read the directory ({error.strerror or error})") from None
    finally:
        for dirfd, _, _ in stack:
            os.close(dirfd)
    return members


def _read_dir_level(
    root: Path, members: Members, dirfd: int, relative: str, seen: list[int], select: Selection | None
) -> list[str]:
    """Read the files of one directory (``relative`` to the bundle, ``/``-terminated unless
    the top); returns its subdirectories' names, links not counted as directories."""
    with os.scandir(dirfd) as entries:
        listed = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    seen[0] += len(listed)
    limit = MAX_DIR_ENTRIES if select is None else select.max_headers
    if seen[0] > limit:
        raise BundleError(f"{root}: more than {limit} entries (not a bundle?)")
    for filename in sorted(name for name, is_directory in listed if not is_directory):
        raw_name = relative + filename
        name = safe_member_name(raw_name)
        if name is None:
            members.ignored.append(f"{raw_name!r} (unsafe name)")
            continue
        if select is not None:
            _note_dir_link(members, name, filename, dirfd)
            if name in members.links or not select.keeps(name):
                continue
        _read_dir_file(root, members, name, filename, dirfd)
        if len(members.files) > MAX_MEMBERS:
            raise BundleError(f"{root}: more than {MAX_MEMBERS} files")
    return sorted(name for name, is_directory in listed if is_directory)


def _note_dir_link(members: Members, name: str, filename: str, dirfd: int) -> None:
    """A symbolic link's target, read with readlink (never followed), for name resolution."""
    with contextlib.suppress(OSError):
        if stat.S_ISLNK(os.stat(filename, dir_fd=dirfd, follow_symlinks=False).st_mode):
            target = os.readlink(filename, dir_fd=dirfd)
            if len(target) <= 1024 and _encodable(target):
                members.links[name] = target


def _read_dir_file(root: Path, members: Members, name: str, filename: str, dirfd: int) -> None:
    try:
        fd = os.open(filename, _OPEN_FLAGS, dir_fd=dirfd)
    except OSError as error:  # ELOOP: a symbolic link; ENXIO: a socket; EACCES…
        members.ignored.append(f"{name} ({_why_unopenable(filename, dirfd, error)})")
        return
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            members.ignored.append(f"{name} (not a regular file)")
            return
        if info.st_nlink > 1:  # a hard link may share an inode with a file outside the bundle
            members.ignored.append(f"{name} (hard link)")
            return
        members.budget(root, name, info.st_size)
        data = handle.read(MAX_MEMBER_BYTES + 1)
    extra = len(data) - info.st_size
    if extra > 0:  # grew while we read it: count what was really read
        members.budget(root, name, extra)
    members.add(name, data)


def _why_unopenable(filename: str, dirfd: int, error: OSError) -> str:
    with contextlib.suppress(OSError):
        if stat.S_ISLNK(os.stat(filename, dir_fd=dirfd, follow_symlinks=False).st_mode):
            return "symbolic link"
    return error.strerror or "unreadable"


# --- archives ----------------------------------------------------------------------------


class _CountingReader(io.RawIOBase):
    """A decompressed stream that refuses to deliver more than ``cap`` bytes in all."""

    def __init__(self, inner: IO[bytes], cap: int, where: Path) -> None:
        super().__init__()
        self._inner, self._cap, self._where, self.count = inner, cap, where, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        room = self._cap - self.count
        size = room + 1 if size is None or size < 0 else min(size, room + 1)
        data = self._inner.read(size)
        self.count += len(data)
        if self.count > self._cap:
            raise BundleError(f"{self._where}: decompresses to more than {self._cap} bytes (a bomb?)")
        return data


class _GuardedTarInfo(tarfile.TarInfo):
    """Refuses, before tarfile reads them, metadata headers that could be huge, and sparse files
    (whose holes expand to more than the archive holds)."""

    def _proc_member(self, tar: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise BundleError(f"sparse member {self.name!r} (not written by gdsdoctor)")
        if self.type in _METADATA_TYPES and self.size > MAX_HEADER_BYTES:
            raise BundleError(f"a {self.size}-byte extended header (more than {MAX_HEADER_BYTES})")
        # tarfile reads the member a metadata header describes by recursing into the next header:
        # a chain of thousands (13 KB compressed) ended in RecursionError. Real archives chain a few.
        chain = getattr(tar, "_gdsdoctor_header_chain", 0) + 1 if self.type in _METADATA_TYPES else 0
        if chain > MAX_HEADER_CHAIN:
            raise BundleError(f"a chain of more than {MAX_HEADER_CHAIN} metadata headers (not from tar)")
        tar._gdsdoctor_header_chain = chain  # type: ignore[attr-defined]
        return super()._proc_member(tar)  # type: ignore[misc]

    def _refuse_sparse(self, *args: Any) -> None:
        raise BundleError(f"sparse member {self.name!r} (not written by gdsdoctor)")

    _proc_gnusparse_00 = _proc_gnusparse_01 = _proc_gnusparse_10 = _refuse_sparse


_METADATA_TYPES = (
    tarfile.GNUTYPE_LONGNAME,
    tarfile.GNUTYPE_LONGLINK,
    tarfile.XHDTYPE,
    tarfile.XGLTYPE,
    tarfile.SOLARIS_XHDTYPE,
)
_MAGIC: tuple[tuple[bytes, Callable[[IO[bytes]], IO[bytes]]], ...] = (
    (b"\x1f\x8b", lambda raw: gzip.GzipFile(fileobj=raw, mode="rb")),
    (b"BZh", bz2.BZ2File),
    (b"\xfd7zXZ\x00", compress.xz_stream),
)
DECOMPRESS_ERRORS = (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError, ValueError)


@contextlib.contextmanager
def _decompressed(path: Path, cap: int | None = None) -> Iterator[_CountingReader]:
    with open(path, "rb") as raw:
        magic = raw.read(6)
        raw.seek(0)
        with decompressor(raw, magic) as inner:
            yield _CountingReader(inner, cap or max_stream_bytes(), path)


@contextlib.contextmanager
def decompressor(raw: IO[bytes], magic: bytes) -> Iterator[IO[bytes]]:
    """The decompressed stream of ``raw`` by its first bytes (gzip, bzip2, xz, zstd or none).
    zstd has no decoder in Python's standard library before 3.14: Debian's ``zstd`` program
    decodes it (``compress.zstd_stream``), in its own process killed when we stop reading."""
    if magic.startswith(compress.ZSTD_MAGIC):
        with compress.zstd_stream(raw) as stream:
            yield stream
        return
    opener = next((opener for prefix, opener in _MAGIC if magic.startswith(prefix)), None)
    inner = opener(raw) if opener is not None else raw
    with contextlib.closing(inner):
        yield inner


def member_names(path: Path, at_most: int) -> Iterator[tuple[str, str]]:
    """The first ``at_most`` member names of an archive and their link targets ("" if none),
    read through the same guards as a whole bundle; raises BundleError or DECOMPRESS_ERRORS."""
    with (
        _decompressed(path) as stream,
        tarfile.open(fileobj=stream, mode="r|", tarinfo=_GuardedTarInfo) as tar,
    ):
        for count, member in enumerate(tar):
            if count >= at_most:
                return
            yield member.name[:1024], member.linkname[:1024] if member.issym() or member.islnk() else ""


def _read_tar(path: Path, select: Selection | None = None) -> Members:
    members = Members()
    max_headers = MAX_MEMBERS if select is None else select.max_headers
    try:
        with (
            _decompressed(path, None if select is None else select.max_stream) as stream,
            tarfile.open(fileobj=stream, mode="r|", tarinfo=_GuardedTarInfo) as tar,
        ):
            for count, member in enumerate(tar):
                if count >= max_headers:
                    raise BundleError(f"{path}: more than {max_headers} members")
                _read_member(path, tar, member, members, select)
                if len(members.files) > MAX_MEMBERS:
                    raise BundleError(f"{path}: more than {MAX_MEMBERS} members")
    except BundleError as error:
        message = str(error)
        raise BundleError(message if message.startswith(str(path)) else f"{path}: {message}") from None
    except DECOMPRESS_ERRORS as error:
        raise BundleError(f"{path}: not a readable tar.gz bundle ({type(error).__name__})") from None
    return members


def _read_member(
    path: Path, tar: tarfile.TarFile, member: tarfile.TarInfo, members: Members, select: Selection | None
) -> None:
    name = safe_member_name(member.name)
    if select is not None and name is not None and not select.keeps(name):
        _note_tar_link(member, name, members)
        return  # passed over: tarfile skips its data (still decompressed: the stream cap counts it)
    if member.size > MAX_MEMBER_BYTES:  # any type: even skipping it would cost the decompression
        raise BundleError(f"{path}: member {member.name[:100]!r} is larger than {MAX_MEMBER_BYTES} bytes")
    if member.isdir():
        return
    if select is not None and name is not None and _note_tar_link(member, name, members):
        return
    if not member.isreg():
        members.ignored.append(f"{member.name[:100]!r} (link, device or fifo)")
        return
    if name is None:
        members.ignored.append(f"{member.name[:100]!r} (unsafe name)")
        return
    members.budget(path, name, member.size)
    handle = tar.extractfile(member)
    members.add(name, read_exactly(handle, member.size) if handle else b"")


_READ_CHUNK = 1 << 20


def read_exactly(handle: IO[bytes], size: int) -> bytes:
    """At most ``size`` bytes of ``handle`` in one buffer of that size, filled a MiB at a time.
    ``handle.read(size)`` of a tar member held the member two more times while it joined its
    pieces (three 60 MiB mount tables peaked at 300 MiB to keep 180); a BytesIO sized first
    hands its own buffer over at the end, without a copy."""
    buffer = io.BytesIO()
    if size > 0:
        buffer.seek(size - 1)
        buffer.write(b"\0")
        buffer.seek(0)
    while buffer.tell() < size and (chunk := handle.read(min(_READ_CHUNK, size - buffer.tell()))):
        buffer.write(chunk)
    buffer.truncate()  # a member cut short keeps what it had
    return buffer.getvalue()


def _note_tar_link(member: tarfile.TarInfo, name: str, members: Members) -> bool:
    """Record a link member's target (a symbolic link's path, a hard link's member name)."""
    if not (member.issym() or member.islnk()) or len(member.linkname) > 1024:
        return False
    target = member.linkname
    if member.islnk():  # a hard link names another member of the archive, from the top
        target = "/" + target
    members.links[name] = target
    return True


def strip_common_top(members: Members) -> None:
    """Accept archives made with a top-level folder (tar czf x.tgz bundle-dir/)."""
    if MANIFEST in members.files:
        return
    tops = {name.split("/", 1)[0] for name in members.files}
    if len(tops) == 1:
        top = tops.pop() + "/"
        members.files = {n[len(top) :]: d for n, d in members.files.items() if n.startswith(top)}
        members.duplicates = {n[len(top) :] for n in members.duplicates if n.startswith(top)}
        members.links = {
            n[len(top) :]: _under_top(t, top) for n, t in members.links.items() if n.startswith(top)
        }


def _under_top(target: str, top: str) -> str:
    """A hard link's target (``/TOP/name``) renamed as the top folder was stripped."""
    return "/" + target[len(top) + 1 :] if target.startswith("/" + top) else target
