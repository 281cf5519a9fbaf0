"""Whether the checkpoint path given with ``--path`` answers at all: ``stat`` on it, bounded.

A checkpoint path that cannot be stat'ed is evidence, not a typo: a shut-down XFS answers EIO,
an NFS export that changed answers ESTALE, a FUSE or network mount whose daemon died answers
ENOTCONN, and a hard NFS mount whose server is gone never answers. ``stat -L -c '%F|%m|%n' --
PATH`` runs in a subprocess killed after STAT_TIMEOUT_S (the hang is a killable child, never
the doctor). Only when the path does not exist (ENOENT) are its parents stat'ed, one by one up
to ``/``, until one exists: the nearest existing parent, which is then what is diagnosed.

The artifact is that transcript, a line per path stat'ed, as a terminal shows ``stat … 2>&1``
(``LC_ALL=C``), and a line of gdsdoctor's own for a stat killed unanswered::

    directory|/mnt/ckpt|/mnt/ckpt/run1
    stat: cannot statx '/mnt/ckpt/run1': Input/output error
    stat: cannot statx '/mnt/ckpt/run1': no answer within 5 s (killed)

Section ``path_stat``: ``path`` (the path stat'ed first), ``exists`` (True, False for ENOENT,
None when it failed otherwise), ``type``, ``mountpoint`` (stat's %m: the mount holding it,
symbolic links resolved), ``errno`` (``EIO``, ``ESTALE``, ``ENOTCONN``, ``EROFS``, ``ENOENT``, …;
``ETIMEDOUT`` for a stat that did not answer), ``error`` (the words stat printed), ``hung``,
``failed`` (True when the path fails with an error that is evidence about its filesystem:
every errno but ENOENT, ENOTDIR, EACCES, ELOOP and ENAMETOOLONG, which are about the name or the
user), ``nearest`` (for ENOENT: the nearest existing parent, ``{"path", "type", "mountpoint",
"src"}``, or None) and ``src``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gdsdoctor.capture.runner import run_command
from gdsdoctor.errors import ParseError, Unavailable
from gdsdoctor.model import ArtifactStatus, decode_text
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Reader, Section, Source, src

ARTIFACT = "cmd/stat-path.txt"
STAT_TIMEOUT_S = 5.0  # a local stat answers in microseconds; a hard NFS mount never does
FORMAT = "%F|%m|%n"
_NO_ANSWER = lazy_compile(r"^no answer within [\d.]+ s \(killed\)$")  # gdsdoctor's words for a hang

# strerror(3) in glibc's words (LC_ALL=C), for the errors stat meets on a path
STRERROR = {
    "input/output error": "EIO",
    "stale file handle": "ESTALE",
    "stale nfs file handle": "ESTALE",  # glibc before 2.18
    "transport endpoint is not connected": "ENOTCONN",
    "read-only file system": "EROFS",
    "no such file or directory": "ENOENT",
    "not a directory": "ENOTDIR",
    "permission denied": "EACCES",
    "too many levels of symbolic links": "ELOOP",
    "file name too long": "ENAMETOOLONG",
    "no such device": "ENODEV",
    "host is down": "EHOSTDOWN",
    "no route to host": "EHOSTUNREACH",
    "connection timed out": "ETIMEDOUT",
    "connection refused": "ECONNREFUSED",
    "cannot allocate memory": "ENOMEM",
    "structure needs cleaning": "EUCLEAN",  # XFS and ext4 corruption (EFSCORRUPTED)
    "bad message": "EBADMSG",
    "no data available": "ENODATA",
}
# Errors about the name or the user, not about the filesystem: not evidence of a failing mount
ABOUT_THE_NAME = frozenset({"ENOENT", "ENOTDIR", "EACCES", "ELOOP", "ENAMETOOLONG"})

# GNU coreutils (statx since 8.32, stat before; LC_ALL=C quotes '…'), busybox ("can't stat")
_ERROR = lazy_compile(
    r"^stat: (?:cannot statx?|can't stat) ['‘\"](?P<path>.*)['’\"]: (?P<reason>[^\n]{1,200})$"
)


def errno_of(reason: str) -> str | None:
    """The errno name of a strerror(3) text (``Input/output error`` → ``EIO``); ETIMEDOUT for
    a stat killed unanswered."""
    reason = reason.strip()
    return "ETIMEDOUT" if _NO_ANSWER.match(reason) else STRERROR.get(reason.lower())


def parse(text: str, artifact: str) -> Section:
    results = [r for n, line in enumerate(text.split("\n"), 1) if (r := _result(line, n, artifact))]
    if not results:
        raise ParseError("no stat result or stat error")
    first = results[0]
    section: Section = {**first, "nearest": None}
    if first["errno"] == "ENOENT":
        found = next((r for r in results[1:] if r["exists"]), None)
        if found is not None:
            section["nearest"] = {k: found[k] for k in ("path", "type", "mountpoint", "src")}
    return section


def _result(line: str, number: int, artifact: str) -> dict[str, Any] | None:
    error = _ERROR.match(line)
    if error is not None:
        reason = error["reason"].strip()
        errno = errno_of(reason)
        return {
            "path": error["path"],
            "exists": False if errno == "ENOENT" else None,
            "type": None,
            "mountpoint": None,
            "errno": errno,
            "error": reason,
            "hung": bool(_NO_ANSWER.match(reason)),
            "failed": errno not in ABOUT_THE_NAME,
            "src": src(artifact, number, line),
        }
    kind, sep, rest = line.partition("|")
    mountpoint, sep2, path = rest.partition("|")
    if not (sep and sep2 and path.startswith("/") and kind):
        return None
    return {
        "path": path,
        "exists": True,
        "type": kind,
        "mountpoint": mountpoint if mountpoint.startswith("/") else None,
        "errno": None,
        "error": None,
        "hung": False,
        "failed": False,
        "src": src(artifact, number, line),
    }


def recognise(text: str) -> bool:
    head = text.lstrip()[:2000]
    first = head.split("\n", 1)[0]
    return bool(_ERROR.match(first)) or (first.count("|") == 2 and "|/" in first)


def candidates(path: str) -> list[str]:
    """``path`` made absolute (lexically: no stat), then its parents up to ``/``."""
    current = os.path.abspath(path)
    found = [current]
    while current != "/":
        current = os.path.dirname(current)
        found.append(current)
    return found


def reader(path: str) -> Reader:
    """Stat ``path``; if it does not exist, its parents until one does (or fails otherwise)."""

    def read(host_root: Path) -> bytes:
        del host_root  # the kernel's answer for this mount namespace (Source.this_process)
        lines: list[str] = []
        for candidate in candidates(path):
            line = _stat_line(candidate)
            lines.append(line)
            if errno_of(line.rsplit(": ", 1)[-1]) != "ENOENT" or not line.startswith("stat: "):
                break
        return ("\n".join(lines) + "\n").encode()

    return read


def _stat_line(path: str) -> str:
    argv = ("stat", "-L", "-c", FORMAT, "--", path)
    result = run_command("stat", argv, STAT_TIMEOUT_S)
    if result.status is ArtifactStatus.OK:
        return decode_text(result.data).strip().split("\n")[0]
    if result.status is ArtifactStatus.TIMEOUT:
        return f"stat: cannot statx '{path}': no answer within {STAT_TIMEOUT_S:g} s (killed)"
    if result.detail.endswith("command not found"):
        raise Unavailable(result.detail)
    # the runner keeps stderr's first line as the detail: stat's own words
    return result.detail if _ERROR.match(result.detail) else f"stat: cannot statx '{path}': {result.detail}"


def probe_for(path: str) -> Probe:
    how = f"stat -L -c '{FORMAT}' -- {path} 2>&1"
    return Probe(
        section="path_stat",
        title="whether --path answers stat (EIO, ESTALE, ENOTCONN, a hang), bounded",
        sources=(
            Source(
                ARTIFACT,
                reader=reader(path),
                how=how,
                timeout=STAT_TIMEOUT_S,
                this_process=True,
                runs_how=True,
            ),
        ),
        parse=parse,
        recognise=recognise,
        paste_hint="`stat -L -c '%F|%m|%n' -- CHECKPOINT_DIR 2>&1`",
        targeted=True,
        tags=("storage",),
    )


PROBE = probe_for("PATH")
