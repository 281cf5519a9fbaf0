"""Bundles: a directory or ``.tar.gz`` holding ``manifest.json`` plus the raw artifacts.

Format ``gdsdoctor.bundle`` version 1 (documented in docs/bundle.md). Everything read from a
bundle is untrusted: member names are checked before use, only regular files are read,
nothing is extracted to disk, and sizes are bounded.
"""

from __future__ import annotations

import io
import json
import posixpath
import tarfile
import time
from pathlib import Path, PurePosixPath
from typing import Any

from gdsdoctor import BUNDLE_FORMAT, BUNDLE_VERSION, __version__
from gdsdoctor.capture.capture import Capture
from gdsdoctor.model import Artifact, ArtifactStatus

MANIFEST = "manifest.json"
MAX_MEMBERS = 10_000
MAX_MEMBER_BYTES = 64 * 1024 * 1024
MAX_TOTAL_BYTES = 512 * 1024 * 1024


class BundleError(ValueError):
    """The bundle cannot be read at all (one line, for the user)."""


def manifest_for(capture: Capture) -> dict[str, Any]:
    return {
        "format": BUNDLE_FORMAT,
        "format_version": BUNDLE_VERSION,
        "tool_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": capture.host,
        "options": capture.options,
        "sections": capture.assignments,
        "artifacts": [_entry(artifact) for artifact in capture.artifacts.values()],
    }


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


def write_bundle(capture: Capture, output: Path) -> Path:
    """Write ``capture`` as a ``.tar.gz`` (when the name says so) or as a directory."""
    manifest = json.dumps(manifest_for(capture), indent=2, sort_keys=True).encode()
    files = {MANIFEST: manifest} | {a.name: a.data for a in capture.artifacts.values() if a.data}
    if output.name.endswith((".tar.gz", ".tgz")):
        _write_tar(files, output)
    else:
        for name, data in files.items():
            target = output / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    return output


def _write_tar(files: dict[str, bytes], output: Path) -> None:
    partial = output.with_name(output.name + ".partial")
    with tarfile.open(partial, "w:gz") as tar:
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = int(time.time())
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    partial.replace(output)  # atomic: a reader never sees half a bundle


def safe_member_name(name: str) -> str | None:
    """A normalised relative POSIX name, or None if it escapes the bundle or is odd."""
    if not name or "\x00" in name or "\\" in name:
        return None
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        return None
    normal = posixpath.normpath(name)
    return None if normal in (".", "") else normal


def read_bundle(path: Path) -> Capture:
    """Read a bundle directory or archive into a Capture; raises BundleError if unusable."""
    files = _read_tar(path) if path.is_file() else _read_dir(path)
    files = _strip_common_top(files)
    if MANIFEST not in files:
        raise BundleError(f"{path}: no {MANIFEST} (not a gdsdoctor bundle)")
    try:
        manifest = json.loads(files[MANIFEST])
    except (ValueError, UnicodeDecodeError):
        raise BundleError(f"{path}: {MANIFEST} is not valid JSON") from None
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        raise BundleError(f"{path}: {MANIFEST} does not describe a {BUNDLE_FORMAT}")
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > BUNDLE_VERSION:
        raise BundleError(f"{path}: bundle format version {version!r} is newer than this gdsdoctor reads")
    return _capture_from(path, manifest, files)


def _capture_from(path: Path, manifest: dict[str, Any], files: dict[str, bytes]) -> Capture:
    host = manifest.get("host") if isinstance(manifest.get("host"), dict) else {}
    options = manifest.get("options") if isinstance(manifest.get("options"), dict) else {}
    capture = Capture(origin="bundle", host=dict(host), options=dict(options), label=str(path))
    entries = manifest.get("artifacts") if isinstance(manifest.get("artifacts"), list) else []
    for entry in entries:
        artifact = _artifact_from(entry, files, capture.notes)
        if artifact is not None:
            capture.artifacts[artifact.name] = artifact
    sections = manifest.get("sections") if isinstance(manifest.get("sections"), dict) else {}
    for section, names in sections.items():
        if isinstance(section, str) and isinstance(names, list):
            capture.assignments[section] = [n for n in names if isinstance(n, str) and n in capture.artifacts]
    return capture


def _artifact_from(entry: Any, files: dict[str, bytes], notes: list[str]) -> Artifact | None:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        notes.append("manifest: skipped a malformed artifact entry")
        return None
    name = safe_member_name(entry["name"])
    if name is None:
        notes.append(f"manifest: refused unsafe artifact name {entry['name']!r}")
        return None
    try:
        status = ArtifactStatus(entry.get("status", "ok"))
    except ValueError:
        status = ArtifactStatus.ERROR
    data = files.get(name, b"")
    detail = str(entry.get("detail") or "")
    if status is ArtifactStatus.OK and name not in files:
        status, detail = ArtifactStatus.MISSING, "listed in the manifest but absent from the bundle"
    elif entry.get("sha256") and status is ArtifactStatus.OK and _sha(data) != entry["sha256"]:
        notes.append(f"{name}: sha256 differs from the manifest (edited or corrupted); analysed as found")
    return Artifact(
        name,
        status,
        data,
        source=str(entry.get("source") or ""),
        detail=detail,
        exit_code=entry.get("exit_code") if isinstance(entry.get("exit_code"), int) else None,
    )


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _read_dir(root: Path) -> dict[str, bytes]:
    if not root.is_dir():
        raise BundleError(f"{root}: no such file or directory")
    files: dict[str, bytes] = {}
    total = 0
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue  # links could point anywhere on the host: never follow them
        name = path.relative_to(root).as_posix()
        size = path.stat().st_size
        total += size
        if len(files) >= MAX_MEMBERS or size > MAX_MEMBER_BYTES or total > MAX_TOTAL_BYTES:
            raise BundleError(f"{root}: bundle exceeds the size limits (see docs/bundle.md)")
        files[name] = path.read_bytes()
    return files


def _read_tar(path: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    total = 0
    try:
        with tarfile.open(path, "r:*") as tar:
            for count, member in enumerate(tar):
                if count >= MAX_MEMBERS:
                    raise BundleError(f"{path}: more than {MAX_MEMBERS} members")
                name = safe_member_name(member.name)
                if name is None or not member.isreg():
                    continue  # links, devices, absolute or ../ names: never used
                if member.size > MAX_MEMBER_BYTES:
                    raise BundleError(f"{path}: member {name!r} is larger than {MAX_MEMBER_BYTES} bytes")
                handle = tar.extractfile(member)
                data = handle.read(MAX_MEMBER_BYTES + 1) if handle else b""
                total += len(data)
                if total > MAX_TOTAL_BYTES:
                    raise BundleError(f"{path}: unpacks to more than {MAX_TOTAL_BYTES} bytes")
                files.setdefault(name, data)  # duplicate names: the first one wins
    except (tarfile.TarError, EOFError, OSError, ValueError) as error:
        if isinstance(error, BundleError):
            raise
        raise BundleError(f"{path}: not a readable tar.gz bundle ({type(error).__name__})") from None
    return files


def _strip_common_top(files: dict[str, bytes]) -> dict[str, bytes]:
    """Accept archives made with a top-level folder (tar czf x.tgz bundle-dir/)."""
    if MANIFEST in files:
        return files
    tops = {name.split("/", 1)[0] for name in files}
    if len(tops) == 1:
        top = tops.pop() + "/"
        return {name[len(top) :]: data for name, data in files.items() if name.startswith(top)}
    return files
