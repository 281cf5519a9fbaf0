"""The filesystems the node mounts at boot, from ``/etc/fstab``.

What the mount table shows now is ``mounts``; fstab is what boot tries, so the two together tell
a tier whose mount failed (its mount point then is a bare directory on the root filesystem) and
a network-backed mount with nothing ordering it after the network. fstab(5)'s fields::

    UUID=0a3e… /mnt/ckpt xfs defaults,_netdev,nofail 0 0
    -> {spec, device, mountpoint, fstype, options, opts: {option: value | True}, freq, passno,
        netdev, nofail, noauto, requires: [unit], src}

``device`` is the spec as a device path where it names one (``/dev/nvme1n1``,
``/dev/disk/by-…``), else None (``UUID=``, ``LABEL=``, a network source); ``netdev``: the
``_netdev`` option or a network filesystem type (systemd orders both after the network);
``requires``: the units of ``x-systemd.requires=`` / ``x-systemd.after=``. Comment lines, swap
and ``none`` mount points are skipped (swap is kept with mountpoint ``swap``).

Section: ``{entries: [...], data_entries: [...]}``: data entries are those boot mounts (not
``noauto``, not swap, not ``/`` nor a system tree).

>>> section = parse("UUID=0a3e /mnt/ckpt xfs defaults,nofail 0 0\\n", "etc/fstab")
>>> entry = section["entries"][0]
>>> entry["mountpoint"], entry["nofail"], entry["netdev"], entry["device"]
('/mnt/ckpt', True, False, None)
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.probes.base import Probe, Section, Source, head_lines, numbered_lines, src
from gdsdoctor.probes.mounts import FSTAB_ENTRY, looks_like_fstab, split_options, unescape

_ENTRY = FSTAB_ENTRY
_NETWORK_TYPES = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "lustre", "beegfs", "gpfs", "wekafs", "ceph", "glusterfs", "9p"}
)
_SYSTEM_TREES = ("/", "/boot", "/boot/efi", "/usr", "/var", "/home", "/tmp", "/opt", "/srv")


def parse(text: str, artifact: str) -> Section:
    entries = []
    other = 0  # lines neither blank, a comment nor an entry
    for number, line in numbered_lines(text):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped.startswith("$"):
            continue
        match = _ENTRY.match(stripped)
        if not match or (match["file"] == "none" and match["type"] != "swap"):
            other += 0 if match else 1
            continue
        entries.append(_entry(match, artifact, number, line))
    # An fstab of comments only is an answer: boot mounts nothing (a container image's
    # "# UNCONFIGURED FSTAB FOR BASE SYSTEM"); text with lines of another kind and no entry is not.
    if not entries and (other or not text.strip()):
        raise ParseError("no fstab entries (expected /etc/fstab: spec mountpoint type options freq passno)")
    return {"entries": entries, "data_entries": [e for e in entries if _is_data(e)]}


def _entry(match: Any, artifact: str, number: int, line: str) -> dict[str, Any]:
    spec, fstype = unescape(match["spec"]), match["type"]
    options = match["opts"] or "defaults"
    opts = split_options(options)
    # every x-systemd.requires=/after= (an option may repeat: split_options keeps the last)
    requires = [
        value
        for key, sep, value in (option.partition("=") for option in options.split(","))
        if sep and key in ("x-systemd.requires", "x-systemd.after")
    ]
    return {
        "spec": spec,
        "device": spec if spec.startswith("/dev/") else None,
        "mountpoint": "swap" if fstype == "swap" else unescape(match["file"]),
        "fstype": fstype,
        "options": options,
        "opts": opts,
        "freq": int(match["freq"] or 0),
        "passno": int(match["pass"] or 0),
        "netdev": "_netdev" in opts or fstype in _NETWORK_TYPES or fstype.startswith("fuse."),
        "nofail": "nofail" in opts,
        "noauto": "noauto" in opts,
        "requires": requires,
        "src": src(artifact, number, line),
    }


def _is_data(entry: dict[str, Any]) -> bool:
    point = entry["mountpoint"].rstrip("/") or "/"
    return not entry["noauto"] and entry["fstype"] != "swap" and point not in _SYSTEM_TREES


def recognise(text: str) -> bool:
    lines = [line for line in head_lines(text, 300) if line.strip()]
    fields = [line.strip() for line in lines if not line.lstrip().startswith(("#", "$"))]
    entries = sum(1 for line in fields if _ENTRY.match(line))
    return entries > 0 and entries >= 2 * (len(fields) - entries) and looks_like_fstab(lines)


PROBE = Probe(
    section="fstab",
    title="filesystems mounted at boot (/etc/fstab: options, _netdev/nofail, systemd ordering)",
    sources=(Source("etc/fstab", path="/etc/fstab"),),
    parse=parse,
    recognise=recognise,
    paste_hint="`cat /etc/fstab`",
)
