"""Mounted filesystems, from ``/proc/mounts`` (or ``/proc/self/mounts``, ``/etc/mtab``).

Fields are space-separated with octal escapes (``\\040`` for a space); each line becomes
``{device, mountpoint, fstype, options, opts: {option: value | True}, src}``:

>>> section = parse("/dev/nvme0n1p1 /mnt/ckpt ext4 rw,relatime,data=ordered 0 0\\n", "proc/mounts")
>>> mount = section["mounts"][0]
>>> mount["mountpoint"], mount["fstype"], mount["opts"]["data"]
('/mnt/ckpt', 'ext4', 'ordered')
>>> mount["src"]
{'artifact': 'proc/mounts', 'line': 1, 'text': '/dev/nvme0n1p1 /mnt/ckpt ext4 rw,relatime,data=ordered 0 0'}
"""

from __future__ import annotations

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, Source, numbered_lines, src

_OCTAL = lazy_compile(r"\\([0-7]{3})")
_LINE = lazy_compile(r"^(\S+) (\S+) (\S+) (\S+) (\d+) (\d+)\s*$")


def unescape(field: str) -> str:
    return _OCTAL.sub(lambda m: chr(int(m[1], 8)), field)


def split_options(options: str) -> dict[str, str | bool]:
    parsed: dict[str, str | bool] = {}
    for option in options.split(","):
        key, sep, value = option.partition("=")
        parsed[key] = value if sep else True
    return parsed


def parse(text: str, artifact: str) -> Section:
    mounts = []
    for number, line in numbered_lines(text):
        match = _LINE.match(line.strip())
        if not match:
            continue
        device, mountpoint, fstype, options = (unescape(f) for f in match.groups()[:4])
        mounts.append(
            {
                "device": device,
                "mountpoint": mountpoint,
                "fstype": fstype,
                "options": options,
                "opts": split_options(options),
                "src": src(artifact, number, line),
            }
        )
    if not mounts:
        raise ParseError(
            "no mount lines (expected /proc/mounts format: device mountpoint fstype options 0 0)"
        )
    return {"mounts": mounts}


def recognise(text: str) -> bool:
    lines = [line for line in text.split("\n")[:200] if line.strip()]
    good = [line for line in lines if _LINE.match(line.strip())]
    return bool(good) and len(good) >= 0.8 * len(lines)


PROBE = Probe(
    section="mounts",
    title="mounted filesystems and their options",
    sources=(Source("proc/mounts", path="/proc/mounts"),),
    parse=parse,
    recognise=recognise,
    paste_hint="`cat /proc/mounts`",
)
