"""Which reader reads an input that holds a whole host: a gdsdoctor bundle, a sos report, or
an nvidia-bug-report log. Each kind has its own module (``bundle``, ``sos``,
``nvidia_bug_report``); this one only tells them apart, by content, and lists what a folder
of pastes holds.
"""

from __future__ import annotations

from pathlib import Path

from gdsdoctor.capture import bundle, nvidia_bug_report, sos
from gdsdoctor.capture.capture import Capture
from gdsdoctor.errors import BundleError

MAX_PASTE_FILES = 1000  # files of a folder of pastes read at most


def kind(path: Path) -> str:
    """``bundle``, ``sos`` or ``nvidia-bug-report``, or "" for anything else (a paste, a folder
    of pastes or of bundles). Telling a sos archive apart decompresses its first members (all
    of a small bundle's), so it is asked once here, and callers that read a bundle pass the
    kind on (``read``) rather than ask again."""
    sos_report = sos.is_sos_report(path)
    if bundle.is_bundle(path) and not sos_report:
        return "bundle"
    if sos_report:
        return "sos"
    if nvidia_bug_report.is_bug_report(path):
        return "nvidia-bug-report"
    return ""


def is_bundle(path: Path) -> bool:
    return bool(kind(path))


def read(path: Path, found: str | None = None) -> Capture:
    """The capture of one bundle of any kind (``found``: its ``kind``, when the caller asked
    already); raises BundleError if it is unusable."""
    found = kind(path) if found is None else found
    if found == "sos":
        return sos.read_sos(path)
    if found == "nvidia-bug-report":
        return nvidia_bug_report.read_bug_report(path)
    return bundle.read_bundle(path)


def _hard_linked(path: Path) -> bool:
    try:
        return path.stat(follow_symlinks=False).st_nlink > 1
    except OSError:
        return False


def pasted_files(directory: Path, left_out: list[str] | None = None) -> list[Path]:
    """The regular files of a folder of pastes (no manifest: one host's outputs copied by
    hand), its sub-folders included, in name order; links and special files are left out
    (they are named in the notes by the paste reader when given by name instead). A file with
    another hard link is left out too, as a directory bundle refuses it: the other name may be
    outside the folder (``ln /etc/shadow pastes/x``), and a link has no way of saying which;
    each is named in ``left_out``."""
    found: list[Path] = []
    stack = [directory]
    while stack:
        here = stack.pop()
        try:
            entries = sorted(here.iterdir())
        except OSError as error:
            raise BundleError(f"{here}: cannot list the folder ({error.strerror or error})") from None
        for entry in entries:
            if entry.is_symlink():
                continue
            if entry.is_dir():
                if len(entry.relative_to(directory).parts) < bundle.MAX_DIR_DEPTH:
                    stack.append(entry)
            elif entry.is_file():
                if _hard_linked(entry):
                    why = "a file with other hard links (perhaps outside the folder): left out"
                    (left_out if left_out is not None else []).append(f"{entry}: {why}")
                    continue
                found.append(entry)
            if len(found) > MAX_PASTE_FILES:
                raise BundleError(f"{directory}: more than {MAX_PASTE_FILES} files (not a folder of pastes?)")
    return sorted(found)
