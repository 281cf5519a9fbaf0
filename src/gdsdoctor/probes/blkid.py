"""Filesystem identities of block devices (``blkid``): which device an fstab ``UUID=``/``LABEL=``
entry mounts.

fstab names the NVMe-oF tier's filesystem by ``UUID=`` or ``LABEL=`` more often than by device
path (device names change between boots); ``blkid`` ties the identity to the device, so the
fstab rules (``_netdev``/``nofail`` on NVMe-oF) see what lies under such an entry.

Section ``blkid``: ``{"devices": [{device ("/dev/nvme1n1"), uuid, label, type, partuuid,
partlabel, src}]}`` from blkid's default output, one device a line::

    /dev/nvme1n1: UUID="ac496379-39f0-49a3-a295-06b2e8a74feb" BLOCK_SIZE="4096" TYPE="ext4"

Live: ``blkid`` (as root it probes each device; otherwise it prints its cache, possibly
stale, and exits 2 when it has nothing). Under ``--host-root`` it is not run (it would list this
machine's devices).
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, Source, head_lines, numbered_lines, src

_LINE = lazy_compile(r'^(?P<device>/dev/[^\s:]+):(?P<pairs>(?:\s+[A-Z_]+="[^"]*")+)\s*$')
_PAIR = lazy_compile(r'(?<![A-Z_])([A-Z_]+)="([^"]*)"')  # a run of capitals tried once
_KEYS = {"UUID": "uuid", "LABEL": "label", "TYPE": "type", "PARTUUID": "partuuid", "PARTLABEL": "partlabel"}


def parse_blkid(text: str, artifact: str) -> Section:
    devices = []
    for number, line in numbered_lines(text):
        match = _LINE.match(line.strip())
        if not match:
            continue
        pairs = dict(_PAIR.findall(match["pairs"]))
        entry: dict[str, Any] = {"device": match["device"]}
        entry |= {name: pairs.get(key) or None for key, name in _KEYS.items()}
        devices.append({**entry, "src": src(artifact, number, line)})
    if not devices and text.strip():  # none at all: blkid (as root) found no filesystem to name
        raise ParseError('no `/dev/NAME: UUID="…" TYPE="…"` lines (expected blkid output)')
    return {"devices": devices}


def recognise_blkid(text: str) -> bool:
    lines = [line.strip() for line in head_lines(text, 200) if line.strip()]
    lines = [line for line in lines if not line.startswith(("$", "#"))]
    return bool(lines) and all(_LINE.match(line) for line in lines)


PROBES: tuple[Probe, ...] = (
    Probe(
        section="blkid",
        title="filesystem UUIDs and labels of block devices (blkid): what fstab's UUID=/LABEL= entries mount",
        sources=(Source("cmd/blkid.txt", argv=("blkid",), ok_exit_codes=(0, 2), needs_root=True),),
        parse=parse_blkid,
        recognise=recognise_blkid,
        paste_hint="`blkid`",
        tags=("storage",),
    ),
)
