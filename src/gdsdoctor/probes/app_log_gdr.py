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
copybw's and copylat's ``error in gdr_pin_buffer with code=22``, UCX's gdr_copy transport),
``gdr_open_failed`` (``/dev/gdrdrv`` could not be opened: ``gdr_open error: Is gdrdrv driver installed
and loaded?``), ``gdrcopy_tests_failed`` (gdrcopy_sanity's summary ``Total: 28, Passed: 25, Failed: 1,
Waived: 2`` with a failure: ``gdrcopy`` holds the counts; a summary with none is no error); ``ret``
and ``errno`` when the line says them.
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
    r"|\berror in gdr_pin_buffer with code=(?P<code>-?\d{1,4})"  # copybw/copylat since 2.3
)
# gdr_open() could not open /dev/gdrdrv (tests and libgdrapi: "gdr_open error: Is gdrdrv driver
# installed and loaded?")
_OPEN_FAILED = lazy_compile(r"\bgdr_open error\b|\bgdr_open\(\) failed")
# gdrcopy_sanity's summary (check's format): "Total: 28, Passed: 25, Failed: 1, Waived: 2"
_SANITY_SUMMARY = lazy_compile(
    r"^\s*Total: (?P<total>\d{1,5}), Passed: (?P<passed>\d{1,5}), Failed: (?P<failed>\d{1,5})"
    r"(?:, Waived: (?P<waived>\d{1,5}))?\s*$"
)


def _found(line: str) -> tuple[str, int | None, int | None, dict[str, Any] | None] | None:
    """(kind, ret, errno, sanity counts) of a GDRCopy line, or None."""
    if match := _SANITY_SUMMARY.match(line):
        counts = {key: int(value) for key, value in match.groupdict().items() if value is not None}
        return ("gdrcopy_tests_failed", None, None, counts) if counts["failed"] else None
    if "gdr" not in line:
        return None
    if match := _TOO_OLD.search(line):
        return "gdrdrv_too_old", None, int(match["errno"]), None
    if match := _PIN_FAILED.search(line):
        code = match["ret"] or match["code"]
        return "gdr_pin_failed", int(code) if code else None, None, None
    if _OPEN_FAILED.search(line):
        return "gdr_open_failed", None, None, None
    return None


def gdr_error(line_no: int, line: str, artifact: str) -> dict[str, Any] | None:
    """The GDRCopy failure one line reports, or None (a sanity summary with no failure is none)."""
    found = _found(line)
    if found is None:
        return None
    kind, ret, errno, counts = found
    api = {"gdr_pin_failed": "gdr_pin_buffer", "gdr_open_failed": "gdr_open"}.get(kind)
    return {"code": None, "name": None, "kind": kind, "api": api, "text": line.strip()[:500],
            "src": src(artifact, line_no, line), "source": "gdrcopy", "ret": ret, "errno": errno,
            "rdma": None, "ckpt": None, "gdrcopy": counts}  # fmt: skip


def signature(line: str) -> bool:
    """A line this module makes an error of."""
    return gdr_error(0, line, "") is not None
