"""Value types shared by every stage: artifacts (raw captures) and their status.

An artifact is the raw output of one command or one file read, exactly as captured,
with a status. Nothing downstream ever sees an exception from a capture: a failure is
a status with a one-line detail.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from gdsdoctor.compat import StrEnum


class ArtifactStatus(StrEnum):
    OK = "ok"
    MISSING = "missing"  # command or file absent
    DENIED = "denied"  # permission
    TIMEOUT = "timeout"
    ERROR = "error"  # non-zero exit (stderr in detail) or unreadable


@dataclass(frozen=True, slots=True)
class Artifact:
    """One captured command output or file, as raw bytes, with how the capture went."""

    name: str  # bundle-relative path, e.g. "proc/mounts", "cmd/gdscheck-p.txt"
    status: ArtifactStatus
    data: bytes = b""
    source: str = ""  # the command line or host path it came from
    detail: str = ""  # one line: why it is not ok, or stderr of a failed command
    exit_code: int | None = None
    duration_s: float = 0.0
    # The line number of ``data``'s first line in the file it was cut from (a section of an
    # nvidia-bug-report log): the facts' provenance counts lines in that file.
    first_line: int = 1

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def text(self) -> str:
        """Decoded text: UTF-8, UTF-16 with BOM, CRLF normalised; undecodable bytes replaced."""
        return decode_text(self.data)


def is_blank(data: bytes) -> bool:
    """Nothing but whitespace: ``not data.strip()`` without its copy of the whole (which for a
    sos report's 5.4 MB symbol table was a copy made only to be tested)."""
    return not data or data.isspace()


def decode_text(data: bytes) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16", errors="replace")
    elif data.startswith(b"\xef\xbb\xbf"):
        text = data[3:].decode("utf-8", errors="replace")
    else:
        text = data.decode("utf-8", errors="replace")
    if "\r" not in text:  # the usual case; replace("\r\n") scans slowly even when nothing matches
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")
