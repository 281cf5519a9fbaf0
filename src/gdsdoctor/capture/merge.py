"""Several pasted files of one kind from one host, read as one.

A ticket often holds ``dmesg``, ``kern.log`` and a journal excerpt of the same node, or a full
``lspci -vvv -s BDF`` beside ``lspci -vvv | grep ACSCtl``: each says something the others do not.
Kernel logs merge on their messages in order (a line both logs hold, whatever its prefix or clock,
is kept once); lspci listings merge per device (the fuller stanza of a device is kept); lsblk
outputs (tree, ``-f``, ``-t``, ``-O -P``, JSON) merge per device, column by column (each adds the
columns the others lack; a value two outputs give differently is noted, the first kept). Kinds
whose probe has a ``combine`` (mount tables) keep every file and are read as one at the facts,
each item with its own file and line; other kinds do not merge: the first file is read and the
report says the others were not.

Files from different hosts never merge: :func:`host_conflict` names the identities (hostnames,
boot ids, machine ids) that differ, and the caller refuses the inputs.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Mapping
from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes import lsblk
from gdsdoctor.probes.dmesg import split_line

MAX_MERGED_LINES = 200_000  # beyond this the alignment costs too much: the first file is read alone

_LSPCI_HEADER = lazy_compile(r"^(?:([0-9a-fA-F]{4}):)?([0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]) ")
_IP = lazy_compile(r"^(?:\d{1,3}\.){3}\d{1,3}$|^(?=[0-9a-fA-F]*:[0-9a-fA-F:])[0-9a-fA-F:]+$")


def _log_key(number: int, line: str) -> str:
    """What a kernel log line says, without its clock, host or level prefix."""
    return " ".join(split_line(number, line).message.split())


def merge_kernel_logs(first: str, second: str) -> tuple[str, str]:
    """``first`` with the lines of ``second`` it lacks, in order; and words saying what merged."""
    if first.count("\n") + second.count("\n") > MAX_MERGED_LINES:
        return first, "too long to merge; only the first was read"
    a, b = first.split("\n"), second.split("\n")
    keys_a = [_log_key(i, line) for i, line in enumerate(a, 1)]
    keys_b = [_log_key(i, line) for i, line in enumerate(b, 1)]
    merged: list[str] = []
    added = 0
    matcher = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        merged.extend(a[a0:a1])
        if tag in ("insert", "replace"):
            new = [line for line in b[b0:b1] if line.strip()]
            merged.extend(new)
            added += len(new)
    duplicates = sum(1 for line in b if line.strip()) - added
    return "\n".join(merged), f"{added} kernel log lines added, {duplicates} already there dropped"


def _lspci_blocks(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """Lines before any device header (``grep`` excerpts), and each device's stanza by address."""
    loose: list[str] = []
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.split("\n"):
        header = _LSPCI_HEADER.match(line)
        if header:
            address = f"{(header[1] or '0000').lower()}:{header[2].lower()}"
            current = blocks.setdefault(address, []) if address not in blocks else []
            current.append(line)
        elif current is not None and line.strip():
            current.append(line)
        elif line.strip():
            loose.append(line)
        else:
            current = None
    return loose, blocks


def merge_lspci(first: str, second: str) -> tuple[str, str]:
    """Per device, the fuller of the two stanzas; lines naming no device (``| grep`` output) kept
    apart at the top, where the reader counts them as unattributed."""
    loose_a, blocks_a = _lspci_blocks(first)
    loose_b, blocks_b = _lspci_blocks(second)
    added = fuller = 0
    blocks = dict(blocks_a)
    for address, block in blocks_b.items():
        if address not in blocks:
            blocks[address] = block
            added += 1
        elif len(block) > len(blocks[address]):
            blocks[address] = block
            fuller += 1
    loose = loose_a + [line for line in loose_b if line not in loose_a]
    stanzas = ["\n".join(block) for block in blocks.values()]
    text = "\n\n".join(["\n".join(loose)] * bool(loose) + stanzas)
    words = f"{added} devices added, {fuller} stanzas replaced by fuller ones"
    return text, f"{words}, {len(loose)} lines naming no device"


# lsblk columns as the reader keeps them -> the lsblk -J key they are written back under
_LSBLK_KEYS = (
    ("kname", "kname"), ("path", "path"), ("maj_min", "maj:min"), ("type", "type"), ("size_bytes", "size"),
    ("fstype", "fstype"), ("tran", "tran"), ("rota", "rota"), ("ro", "ro"), ("rm", "rm"),
    ("hotplug", "hotplug"), ("sched", "sched"), ("model", "model"), ("serial", "serial"),
)  # fmt: skip
MAX_NOTED_CONFLICTS = 5


def merge_lsblk(first: str, second: str) -> tuple[str, str]:
    """Both outputs' devices, column by column, as one ``lsblk -J -b`` document (one device a
    line, parents by ``pkname``): the tree gives sizes and mountpoints, ``-f`` the filesystems,
    ``-t`` the schedulers; a column both give differently keeps the first's value, noted."""
    try:
        a, b = lsblk.parse(first, "a")["devices"], lsblk.parse(second, "b")["devices"]
    except ParseError:
        return first, "the second could not be read as lsblk; only the first was read"
    merged: dict[str, dict[str, Any]] = {d["name"]: dict(d) for d in a if d.get("name")}
    added, conflicts = 0, []
    for device in b:
        name = device.get("name")
        known = merged.get(name) if name else None
        if not name:
            continue
        if known is None:
            merged[name], added = dict(device), added + 1
            continue
        for key, _ in (*_LSBLK_KEYS, ("mountpoints", "")):
            mine, theirs = known.get(key), device.get(key)
            if key == "mountpoints":
                known[key] = [*(mine or []), *[p for p in theirs or [] if p not in (mine or [])]]
            elif mine in (None, "", []) or (key == "size_bytes" and device.get("size_exact")):
                known[key] = theirs if theirs not in (None, "", []) else mine
            elif theirs not in (None, "", []) and theirs != mine and key != "size_bytes":
                conflicts.append(f"{name} {key} {mine!r}/{theirs!r}")
        known["parents"] = [*known.get("parents", []), *[p for p in device.get("parents", [])
                                                          if p not in known.get("parents", [])]]  # fmt: skip
    lines = [
        json.dumps({"name": d["name"], **{out: d.get(key) for key, out in _LSBLK_KEYS},
                    "mountpoints": d.get("mountpoints") or [None], "pkname": parent})
        for d in merged.values() for parent in (d.get("parents") or [None])
    ]  # fmt: skip
    text = '{"blockdevices": [\n' + ",\n".join(lines) + "\n]}"
    words = f"{added} devices added, the columns of both kept per device"
    if conflicts:
        more = len(conflicts) - MAX_NOTED_CONFLICTS
        words += (
            "; they differ on "
            + ", ".join(conflicts[:MAX_NOTED_CONFLICTS])
            + (f" (+{more})" if more > 0 else "")
            + " (the first kept)"
        )
    return text, words


MERGERS: Mapping[str, Callable[[str, str], tuple[str, str]]] = {
    "dmesg": merge_kernel_logs,
    "lspci": merge_lspci,
    "lsblk": merge_lsblk,
}


def identity_kind(kind: str, value: str) -> tuple[str, str]:
    """An identity in comparable form: host names by their short name, lower case; an address
    apart from names (one node logs under its name and its address)."""
    if kind == "hostname":
        if _IP.match(value):
            return "address", value.lower()
        return kind, value.split(".", 1)[0].lower()
    return kind, value.strip().lower().replace("-", "")


def host_conflict(identities: Mapping[str, Mapping[str, set[str]]]) -> str:
    """A line naming two inputs that come from different hosts ("" when they agree). Each input's
    identities map a kind (hostname, address, boot_id, machine_id) to the values it names."""
    by_kind: dict[str, tuple[str, str]] = {}  # kind -> (value, input) first seen
    for name, found in identities.items():
        for kind, values in found.items():
            for raw in sorted(values):
                key = identity_kind(kind, raw)
                first = by_kind.setdefault(key[0], (key[1], name))
                if first[0] != key[1] and key[0] != "boot_id":
                    where = name if first[1] == name else f"{first[1]} and {name}"
                    return (
                        f"the inputs come from more than one host: {where} name {key[0]} "
                        f"{first[0]!r} and {key[1]!r}; analyse each host's files separately"
                    )
    return ""
