"""GDRCopy's own failures as an application prints them (read by ``app_log``): a pure line
classifier, one error dict per failing line (the ``app_log.errors[]`` shape, ``source`` "gdrcopy").

GDRCopy maps GPU memory for the CPU through its kernel module gdrdrv, which calls the NVIDIA
driver's nvidia_p2p_* interface; UCX, NCCL, NVSHMEM and MPI libraries use it. Its failures are a
gdrdrv and a library or NVIDIA driver of different generations. Real lines::

    ERR:  Error getting the gdrdrv driver version with ioctl error (errno=22). gdrdrv might be too old.
    Assertion "(gdr_pin_buffer(g, d_A, A_size, 0, 0, &A_mh)) == (0)" failed at sanity.cpp:344
    gdr_copy_md.c:113  UCX  ERROR gdr_pin_buffer failed. length :3735552 ret:25

Kinds: ``gdrdrv_too_old`` (libgdrapi cannot read gdrdrv's version: the loaded module predates the
library), ``gdr_pin_failed`` (pinning GPU memory through gdrdrv failed: gdrcopy_sanity's assertion,
UCX's gdr_copy transport); ``ret`` and ``errno`` when the line says them.
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import src

# libgdrapi (gdrapi.c): "Error getting the gdrdrv driver version with ioctl error (errno=%d).
# gdrdrv might be too old."
_TOO_OLD = lazy_compile(
    r"\bError getting the gdrdrv driver version with ioctl error \(errno=(?P<errno>\d{1,4})\)"
)
_PIN_FAILED = lazy_compile(
    r"\bgdr_pin_buffer failed\b(?:[^\n]{0,80}?\bret ?:(?P<ret>-?\d{1,4}))?"
    r"|Assertion \"\(gdr_pin_buffer\([^\n]{0,200}\)\) == \(0\)\" failed"
)


def gdr_error(line_no: int, line: str, artifact: str) -> dict[str, Any] | None:
    """The GDRCopy failure one line reports, or None."""
    if "gdr" not in line:
        return None
    if match := _TOO_OLD.search(line):
        kind, ret, errno = "gdrdrv_too_old", None, int(match["errno"])
    elif match := _PIN_FAILED.search(line):
        kind, ret, errno = "gdr_pin_failed", int(match["ret"]) if match["ret"] else None, None
    else:
        return None
    api = "gdr_pin_buffer" if kind == "gdr_pin_failed" else None
    return {"code": None, "name": None, "kind": kind, "api": api, "text": line.strip()[:500],
            "src": src(artifact, line_no, line), "source": "gdrcopy", "ret": ret, "errno": errno,
            "rdma": None, "ckpt": None}  # fmt: skip


def signature(line: str) -> bool:
    """A line this module makes an error of."""
    return gdr_error(0, line, "") is not None
