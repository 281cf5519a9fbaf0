"""The mount options ext4 applies, defaults included (``/proc/fs/ext4/<dev>/options``).

``/proc/mounts`` prints an ext4 option only where it differs from the superblock's default mount
options (``_ext4_show_options()`` in fs/ext4/super.c), so a plain ``data=ordered`` mount shows no
``data=`` there. The per-device file is printed by the same function with every option
(``ext4_seq_options_show()``): the data mode is read from it. Live, the reader writes one line per
option in the form ``grep -H . /proc/fs/ext4/*/options`` prints, which is also what a user pastes.
A sos report holds each device's file as it is (``proc/fs/ext4/vda/options``, one option a
line): the device is then read from the file's name, and the files are read as one section
(``combine``).

Section ``ext4_options``::

    /proc/fs/ext4/nvme0n1p1/options:data=ordered

    {"devices": {"nvme0n1p1": {"data": "ordered", "barrier": true, "nobarrier": false,
                               "options": {"rw": true, "data": "ordered", …}, "src": {...}}}}

``src`` is the ``data=`` line (else the device's first line); ``barrier``/``nobarrier`` say which
of the two the file lists (ext4 prints ``barrier`` or ``nobarrier``; null when neither).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gdsdoctor.errors import ParseError, Unavailable
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, Source, head_lines, numbered_lines, src
from gdsdoctor.probes.host_io import list_inside, read_regular_file, resolve_in_root

EXT4_PROC = "/proc/fs/ext4"
# "/proc/fs/ext4/nvme0n1p1/options:data=ordered" (a device name is one path component)
_LINE = lazy_compile(r"^/proc/fs/ext4/(?P<device>[^/\s:]{1,64})/options:(?P<option>\S{1,200})\s*$")
# the file itself, named by its path (a sos report: "proc/fs/ext4/nvme0n1p1/options")
_FILE = lazy_compile(r"(?:^|/)proc/fs/ext4/(?P<device>[^/\s:]{1,64})/options$")
_OPTION = lazy_compile(r"^(?P<option>[^\s/:]\S{0,199})$")
MAX_DEVICES = 256


def read_ext4_options(host_root: Path) -> bytes:
    """Every ext4 device's options file, as ``grep -H . /proc/fs/ext4/*/options`` prints them."""
    root = os.path.realpath(host_root)
    devices = list_inside(root, host_root / EXT4_PROC.lstrip("/"))
    if not devices:
        raise Unavailable("no /proc/fs/ext4/*/options (no ext4 filesystem mounted, or not Linux)")
    lines = []
    for device in devices[:MAX_DEVICES]:
        real = resolve_in_root(root, f"{EXT4_PROC}/{device}/options")
        try:
            text = read_regular_file(real, 1 << 16).decode(errors="replace") if real else ""
        except OSError:
            continue
        lines += [f"{EXT4_PROC}/{device}/options:{line}" for line in text.split("\n") if line.strip()]
    return "".join(f"{line}\n" for line in lines).encode()


def parse_ext4_options(text: str, artifact: str) -> Section:
    devices: dict[str, dict[str, Any]] = {}
    named = _FILE.search(artifact)  # the device's own file: its lines are its options
    for number, line in numbered_lines(text):
        match = _LINE.match(line.strip()) or (_OPTION.match(line.strip()) if named else None)
        if not match:
            continue
        device = match.groupdict().get("device") or named["device"]  # type: ignore[index]
        entry = devices.setdefault(device, {"options": {}, "src": src(artifact, number, line)})
        key, _, value = match["option"].partition("=")
        entry["options"][key] = value if value else True
        if key == "data":
            entry["src"] = src(artifact, number, line)
    if not devices:
        raise ParseError(
            "no `/proc/fs/ext4/<dev>/options:<option>` lines (expected grep -H . /proc/fs/ext4/*/options)"
        )
    for entry in devices.values():
        options = entry["options"]
        listed = "barrier" in options or "nobarrier" in options
        entry.update(
            data=options.get("data") if isinstance(options.get("data"), str) else None,
            barrier=("barrier" in options) if listed else None,
            nobarrier=("nobarrier" in options) if listed else None,
        )
    return {"devices": devices}


def combine(sections: Sequence[Section]) -> Section:
    """Each device's file of a sos report read as one section (a device once: the first)."""
    devices: dict[str, Any] = {}
    for section in sections:
        for device, entry in section["devices"].items():
            devices.setdefault(device, entry)
    return {"devices": devices}


def recognise_ext4_options(text: str) -> bool:
    lines = [line.strip() for line in head_lines(text, 50) if line.strip()]
    return bool(lines) and all(_LINE.match(line) for line in lines)


PROBES: tuple[Probe, ...] = (
    Probe(
        section="ext4_options",
        title="ext4 options in effect, defaults included (/proc/fs/ext4/<dev>/options)",
        sources=(
            Source(
                "proc/fs-ext4-options.txt", reader=read_ext4_options, how="grep -H . /proc/fs/ext4/*/options"
            ),
        ),
        parse=parse_ext4_options,
        recognise=recognise_ext4_options,
        paste_hint="`grep -H . /proc/fs/ext4/*/options`",
        combine=combine,
    ),
)
