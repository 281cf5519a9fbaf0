"""Redacted copies on disk: of pasted files (``redact FILE…``), of a bundle (``redact BUNDLE``:
a gdsdoctor bundle or a sos report), of a live capture (``collect --redact``), and the private
map beside them (or the ``--map FILE`` that keeps one ticket's pseudonyms across runs).

A copy is written beside its original (or in ``--output-dir``, created when missing), never in
place, never over anything (``outputs.write_new``); a failed or interrupted run removes what it
wrote, so its retry is not refused. A copy's name is redacted too (a sos report's name holds the
host name). What the redactor replaces is ``capture.redact``'s; host names are always learned:
the bundle's own, this machine's (its name and the FQDNs ``/etc/hosts`` gives it) and the
``--hostname`` ones.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from gdsdoctor.capture.capture import Capture
from gdsdoctor.capture.detect import read_pasted
from gdsdoctor.capture.redact import Redactor, private_map, redact_capture, redactor_from_map
from gdsdoctor.deadline import doing
from gdsdoctor.errors import UserError
from gdsdoctor.outputs import PRIVATE, write_atomic, write_new_bytes

MAX_MAP_BYTES = 64 * 1024 * 1024
_ARCHIVE_SUFFIX = re.compile(r"\.(?:tar(?:\.(?:gz|bz2|xz|zst))?|tgz|tbz2|txz|tzst)$")


def this_hosts_names(etc_hosts: Path = Path("/etc/hosts")) -> list[str]:
    """This machine's name and the names ``/etc/hosts`` gives its addresses beside it (its FQDN),
    read offline: no DNS lookup (gdsdoctor makes no network access of its own)."""
    name = os.uname().nodename
    names = [name]
    with contextlib.suppress(OSError, UnicodeDecodeError):
        for line in etc_hosts.read_text()[:1_000_000].splitlines():
            words = line.split("#", 1)[0].split()
            if name in words[1:] or any(w.split(".", 1)[0] == name for w in words[1:]):
                names.extend(w for w in words[1:] if w not in names)
    return names


def new_redactor(map_file: Path | None, hostnames: Sequence[str] = ()) -> Redactor:
    """A redactor that goes on from ``map_file`` when it exists, knowing every host name to
    replace whatever the text around it."""
    redactor = Redactor()
    if map_file is not None and map_file.exists():
        redactor = redactor_from_map(_load_map(map_file))
    for name in [*this_hosts_names(), *hostnames]:
        redactor.learn_hostname(name)
    return redactor


def _load_map(path: Path) -> dict[str, Any]:
    data, problem = read_pasted(path, max_bytes=MAX_MAP_BYTES)
    if problem:
        raise UserError(f"--map {path}: {problem}")
    try:
        mapping = json.loads(data)
    except (ValueError, RecursionError):
        raise UserError(f"--map {path}: not a gdsdoctor redaction map") from None
    try:
        redactor_from_map(mapping)
    except ValueError as error:
        raise UserError(f"--map {path}: {error}") from None
    except (RecursionError, AttributeError, TypeError):
        raise UserError(f"--map {path}: not a gdsdoctor redaction map") from None
    return mapping  # type: ignore[no-any-return]


MAP_LOCK_WAIT_S = 60.0


@contextlib.contextmanager
def map_locked(map_file: Path | None) -> Iterator[None]:
    """Hold ``--map``'s directory locked (``flock``) from reading the map to writing it back:
    two runs on one map at once would each start from the old map, and the second to finish
    would drop the first's names and could give its pseudonyms to other servers. A run waits
    for the other (up to MAP_LOCK_WAIT_S), then refuses in one line. The lock dies with the
    process (the kernel drops it), so a killed run leaves nothing stale."""
    if map_file is None:
        yield
        return
    directory = map_file.absolute().parent
    try:
        descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        raise UserError(f"--map {map_file}: {error.strerror or error}") from None
    try:
        deadline = time.monotonic() + MAP_LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise UserError(f"--map {map_file}: another run is using it; try again") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def save_map(redactor: Redactor, path: Path, replace: bool) -> None:
    """The private map, readable by its owner only: created new beside the copies, or (``--map``)
    replacing the earlier one whole."""
    if not replace:
        write_private_map(private_map(redactor), path)
        return
    write_atomic(
        path, json.dumps(private_map(redactor), indent=2, sort_keys=True, ensure_ascii=True) + "\n", PRIVATE
    )


def write_private_map(mapping: dict[str, Any], path: Path) -> None:
    """Create ``path`` (never over anything, not even a link) readable by its owner only."""
    text = json.dumps(mapping, indent=2, sort_keys=True, ensure_ascii=True) + "\n"
    write_new_bytes(path, text.encode("ascii"), mode=PRIVATE)


def map_path_for(output: Path) -> Path:
    """Where the private map of a redacted bundle goes: next to it, never inside it."""
    return output.with_name(output.name.rstrip("/") + ".redaction-map.json")


def write_redacted_bundle(capture: Capture, output: Path) -> Path:
    """Redact ``capture``, write it as a bundle at ``output`` and its private map beside it;
    returns the map's path. The map is created first (so an existing one refuses the run before
    anything is written) and removed again if the bundle cannot be written or the run is
    interrupted: a failed run leaves nothing that would block its retry."""
    from gdsdoctor.capture.bundle import write_bundle  # tarfile: not for `redact FILE`

    redactor = new_redactor(None)
    redacted, mapping = redact_capture(capture, redactor)
    map_path = map_path_for(output)
    write_private_map(mapping, map_path)
    try:
        write_bundle(redacted, output, redacted=True)
    except BaseException:
        with contextlib.suppress(OSError):
            map_path.unlink()
        raise
    return map_path


def redact_bundle(
    path: Path,
    output_dir: Path | None = None,
    map_file: Path | None = None,
    hostnames: Sequence[str] = (),
    deadline_s: float | None = None,
) -> list[str]:
    """``redact BUNDLE`` with ``--map`` locked for the whole run (``map_locked``), within
    ``deadline_s`` (``within_deadline``)."""
    with map_locked(map_file), within_deadline(deadline_s):
        return _redact_bundle(path, output_dir, map_file, hostnames)


@contextlib.contextmanager
def within_deadline(deadline_s: float | None) -> Iterator[None]:
    """``--deadline`` as for ``analyze``: past it, one line and what was written removed (the
    writers remove their own on any exception), never a run that goes on for minutes."""
    from gdsdoctor.deadline import DeadlinePassed, analysis_deadline

    try:
        with analysis_deadline(deadline_s):
            yield
    except DeadlinePassed as passed:
        raise UserError(
            f"not redacted: the {deadline_s:g} s deadline passed while {passed} "
            "(a huge or hostile input? --deadline SECONDS gives it longer)"
        ) from None


def _redact_bundle(
    path: Path, output_dir: Path | None, map_file: Path | None, hostnames: Sequence[str]
) -> list[str]:
    """``redact BUNDLE``: a redacted copy of a gdsdoctor bundle (the same kind: archive or
    directory) or of a sos report (a ``.tar.gz`` of the files gdsdoctor reads, in the report's
    layout, so it reads back as a sos report with the same findings) beside it, and the map."""
    from gdsdoctor.capture import bundle, bundles, sos  # tarfile: not for `redact FILE`

    kind = bundles.kind(path)
    doing(f"reading {path}")
    capture = bundles.read(path)
    redactor = new_redactor(map_file, hostnames)
    doing("redacting it")
    redacted, _ = redact_capture(capture, redactor)
    doing("writing the copy")
    where = _output_dir(output_dir or path.absolute().parent)
    target = where / _redacted_name(path, kind, redactor, str(capture.host.get("hostname") or ""))
    map_path = map_file or map_path_for(target)
    clash = next((p for p in (target, None if map_file else map_path) if p and os.path.lexists(p)), None)
    if clash is not None:
        raise UserError(f"{clash} already exists; remove it or choose --output-dir")
    try:
        if kind == "sos":
            sos.write_sos(redacted, target, top=_stem(target.name))
        else:
            bundle.write_bundle(redacted, target, redacted=True)
        save_map(redactor, map_path, replace=map_file is not None)
    except BaseException as error:
        _remove(target)
        if isinstance(error, OSError):
            raise UserError(f"cannot write {error.filename or target}: {error.strerror or error}") from None
        raise
    return [f"{path}: redacted copy in {target}", f"private map (keep it, never attach it): {map_path}"]


def _redacted_name(path: Path, kind: str, redactor: Redactor, hostname: str) -> str:
    """``NAME.redacted`` with the archive suffix a reader expects, the name itself redacted
    (``sosreport-gpunode19-…`` holds the host name, and names a host even when that name is
    too short to be replaced everywhere: ``sosreport-vm-…``)."""
    name = redactor.text(path.name.rstrip("/"))
    stem = _stem(name)
    if kind == "sos":
        short = hostname.partition(".")[0]
        if short and stem.lower().startswith(f"sosreport-{short.lower()}-"):
            stem = f"sosreport-{redactor.hostname(short)}-{stem[len('sosreport-') + len(short) + 1 :]}"
        return f"{stem}.redacted.tar.gz"
    if path.is_dir():
        return f"{stem}.redacted"
    return f"{stem}.redacted.tar.gz"


def _stem(name: str) -> str:
    return _ARCHIVE_SUFFIX.sub("", name.removesuffix(".tar.gz").removesuffix(".redacted"))


def _output_dir(directory: Path) -> Path:
    """The directory the copies go to, created (with its parents) when missing."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"cannot create {directory}: {error.strerror or error}") from None
    if not directory.is_dir():
        raise UserError(f"--output-dir {directory}: not a directory")
    return directory


def _remove(target: Path) -> None:
    """What a failed run wrote (the bundle writers remove their own partial output; this is for
    one that was complete when the map failed)."""
    import shutil

    with contextlib.suppress(OSError):
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()


def redact_files(
    paths: Sequence[Path],
    output_dir: Path | None = None,
    map_file: Path | None = None,
    hostnames: Sequence[str] = (),
    deadline_s: float | None = None,
) -> list[str]:
    """``redact FILE…`` with ``--map`` locked for the whole run (``map_locked``), within
    ``deadline_s`` (``within_deadline``)."""
    with map_locked(map_file), within_deadline(deadline_s):
        return _redact_files(paths, output_dir, map_file, hostnames)


def _redact_files(
    paths: Sequence[Path], output_dir: Path | None, map_file: Path | None, hostnames: Sequence[str]
) -> list[str]:
    """Write a redacted copy of each pasted file (``NAME.redacted``) and one private map; the
    same identifier gets the same replacement in every file. Returns one line per file. Nothing
    is written through or over an existing name (a link included), and a failed or interrupted
    run removes what it wrote."""
    texts: dict[Path, bytes] = {}
    lines = []
    for path in paths:
        data, problem = read_pasted(path)
        if problem:
            lines.append(f"{path}: {problem}; skipped")
        else:
            texts[path] = data
    if lines and not texts:  # nothing to write: an error, not a run that "succeeded" doing nothing
        more = f" (and {len(lines) - 1} more file(s) skipped)" if len(lines) > 1 else ""
        raise UserError(f"nothing redacted: {lines[0].removesuffix('; skipped')}{more}")
    redactor = new_redactor(map_file, hostnames)
    doing("learning the identifiers")
    for data in texts.values():
        redactor.learn(data.decode("utf-8", errors="replace"))
    doing("redacting the files")
    where = _output_dir(output_dir) if output_dir is not None else None
    targets = {p: (where or p.parent) / f"{redactor.text(p.name)}.redacted" for p in texts}
    map_path = map_file or (where or (paths[0].parent if paths else Path("."))) / "redaction-map.json"
    clashes = [t for t in [*targets.values(), *([] if map_file else [map_path])] if os.path.lexists(t)]
    if clashes:
        raise UserError(f"{clashes[0]} already exists; remove it or choose --output-dir")
    written: list[Path] = []
    try:
        for path, data in texts.items():
            write_new_bytes(targets[path], redactor.data(data))
            written.append(targets[path])
            lines.append(f"{path}: redacted copy in {targets[path]}")
        if texts:
            save_map(redactor, map_path, replace=map_file is not None)
            lines.append(f"private map (keep it, never attach it): {map_path}")
    except BaseException as error:
        for done in written:
            with contextlib.suppress(OSError):
                done.unlink()
        if isinstance(error, OSError):
            raise UserError(f"cannot write {error.filename}: {error.strerror or error}") from None
        raise
    return lines
