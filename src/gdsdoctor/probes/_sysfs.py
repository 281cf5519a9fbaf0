"""Helpers shared by the sysfs readers (pci, iommu groups, infiniband, netdev) and their parsers.

Readers walk a tree under ``host_root`` with plain file reads; they never raise and never
follow a symlink that leaves ``host_root``. They return JSON (one object per line-ish, via
``indent=1``) so a parser can point provenance at the line where an object's name appears.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gdsdoctor.probes.base import ParseError, numbered_lines, src

# What a reader returns when its tree is absent: the capture records the source as "missing"
# (unknown), so rules stay inconclusive instead of reading "zero devices".
MISSING = b""
BDF = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
_MAX_ATTR = 65536  # sysfs attributes are one page at most; bigger means it is not sysfs


def read_attr(path: Path) -> str | None:
    """The stripped text of one sysfs attribute, or None when it is missing or unreadable."""
    try:
        with open(path, "rb") as handle:
            return handle.read(_MAX_ATTR).decode("utf-8", "replace").strip()
    except OSError:
        return None


def link_name(path: Path) -> str | None:
    """The last component of a symlink's target (``driver`` → ``nvme``), or None."""
    try:
        return os.path.basename(os.readlink(path).rstrip("/")) or None
    except OSError:
        return None


def resolve_inside(host_root: Path, path: Path) -> Path | None:
    """``path`` with every symlink resolved; None when it is missing or leaves ``host_root``."""
    if not os.path.lexists(path):
        return None
    try:
        resolved = Path(os.path.realpath(path))
        root = Path(os.path.realpath(host_root))
    except (OSError, ValueError):
        return None
    return resolved if resolved == root or root in resolved.parents else None


def relative_to_root(host_root: Path, path: Path | None) -> str | None:
    """A resolved path as text relative to the host root (``sys/devices/pci0000:00/...``)."""
    if path is None:
        return None
    try:
        return str(path.relative_to(os.path.realpath(host_root)))
    except ValueError:
        return None


def list_dir(path: Path) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def bdfs_in(path: Path | str) -> list[str]:
    """The PCI addresses along a resolved device path, outermost first."""
    return [part for part in str(path).split("/") if BDF.match(part)]


def json_bytes(obj: Any) -> bytes:
    return json.dumps(obj, indent=1).encode()


def load_json(text: str, what: str) -> Any:
    """Reader JSON back from an artifact; any other text is a ParseError."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise ParseError(f"not the JSON the {what} reader writes ({error.__class__.__name__})") from None
    if not isinstance(data, dict):
        raise ParseError(f"not the JSON object the {what} reader writes")
    return data


def provenance_finder(text: str, artifact: str, key: str) -> Callable[[str], dict[str, Any]]:
    """A function mapping a value of ``key`` to the src of the first line ``"key": value``."""
    lines = numbered_lines(text)

    def find(value: str) -> dict[str, Any]:
        needle = f"{json.dumps(key)}: {json.dumps(value)}"
        for number, line in lines:
            if needle in line:
                return src(artifact, number, line)
        return src(artifact, 1, lines[0][1] if lines else "")

    return find


def as_int(value: Any) -> int | None:
    """An int from sysfs text (decimal or 0x-hex), None when absent or not a number."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip(), 0)
    except ValueError:
        return None
