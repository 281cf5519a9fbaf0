"""Several pasted files of one kind from one host, read as one.

A ticket often holds ``dmesg``, ``kern.log`` and a journal excerpt of the same node, or a full
``lspci -vvv -s BDF`` beside ``lspci -vvv | grep ACSCtl``: each says something the others do not.
Kernel logs merge on their messages in order (a line both logs hold, whatever its prefix or clock,
is kept once); lspci listings merge per device (the fuller stanza of a device is kept). Other
kinds do not merge: the first file is read and the report says the others were not.

Files from different hosts never merge: :func:`host_conflict` names the identities (hostnames,
boot ids, machine ids) that differ, and the caller refuses the inputs.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping

from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.dmesg import split_line

MAX_MERGED_LINES = 200_000  # beyond this the alignment costs too much: the first file is read alone

_LSPCI_HEADER = lazy_compile(r"^(?:([0-9a-fA-F]{4}):)?([0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]) ")
_IP = lazy_compile(r"^(?:\d{1,3}\.){3}\d{1,3}$|^[0-9a-fA-F:]*:[0-9a-fA-F:]+$")


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


MERGERS: Mapping[str, Callable[[str, str], tuple[str, str]]] = {
    "dmesg": merge_kernel_logs,
    "lspci": merge_lspci,
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
