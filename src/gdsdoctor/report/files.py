"""Write output files atomically: a reader (node_exporter's textfile collector, a CI job, a
dashboard) sees the old file or the new one, never half of one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    """Write ``text`` to a hidden temporary file in ``path``'s directory, then rename it.

    The temporary name starts with a dot and ends in ``.tmp``, so collectors that read
    ``*.prom`` or ``*.xml`` never pick it up; the rename is atomic on one filesystem.
    """
    directory = path.parent if str(path.parent) else Path(".")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)  # mkstemp makes 0600; node_exporter may run as another user
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
