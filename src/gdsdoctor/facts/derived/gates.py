"""Version gates: behaviour of libcufile (GDS) and the kernel that changed at a known release, judged
once against the version the facts hold, for every rule that depends on it.

``derive(facts, derived)`` returns ``derived.gates``: one entry per gate in :data:`GATES`::

    {"newer": bool, "known": bool, "version": "1.15.0.42" | None, "since": "1.16", "says": "..."}

``newer`` is whether the node has the behaviour of ``since`` and later: from the version when it is
known (``known``), else the gate's assumption, which ``says`` names ("GDS version unknown (no
gdscheck -p, no nvidia-fs stats): assumed 1.16 or later, …"). A rule reads ``newer`` in its
conditions and ``says`` in its text, so a finding never hides which behaviour it was judged by. The
assumption is what most nodes run now (a current GDS, a kernel before 7.1); where the other
behaviour would raise a severity, the rule lets its own evidence decide when the version is unknown
(the registration error in the log), so that an assumption never plays a failure down.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gdsdoctor.facts.derived.access import ok_section, txt


@dataclass(frozen=True, slots=True)
class Gate:
    component: str  # "gds": derived.gds.gds_version; "kernel": the running kernel's release
    since: str  # the first release with the newer behaviour
    newer: str  # what the newer releases do
    older: str  # what the releases before it do
    assume_newer: bool  # what a rule assumes without a version
    source: str  # where the change is documented


GATES = {
    "non_odirect_fds": Gate(
        "gds",
        "1.7",
        "cuFile accepts a file opened without O_DIRECT; its I/O takes the POSIX compat path (slow, no "
        "error) unless force_odirect_mode is set",
        "cuFile refuses a file opened without O_DIRECT (5020 CU_FILE_DIO_NOT_SET)",
        True,
        "O_DIRECT requirements guide: CUDA 12.2 (GDS 1.7) introduces non-O_DIRECT file descriptors",
    ),
    "tmpfs_overlay_compat": Gate(
        "gds",
        "1.16",
        "tmpfs and overlay files have a documented compat path: with allow_compat_mode they are read "
        "and written through CPU memory",
        "tmpfs and overlay files have no documented compat path: cuFileHandleRegister can fail "
        "(5030) whatever the compat setting",
        True,
        "GDS 1.16 support matrix (NVIDIA/MagnumIO gds-diag)",
    ),
    "zfs_btrfs_compat": Gate(
        "gds",
        "1.17",
        "ZFS and Btrfs files have a documented compat path on every I/O API: with allow_compat_mode "
        "they are read and written through CPU memory",
        "ZFS and Btrfs files have no documented compat path: cuFileHandleRegister may refuse them "
        "instead of falling back",
        True,
        "GDS 1.17 support matrix (NVIDIA/MagnumIO gds-diag)",
    ),
    "md_raid0_p2pdma": Gate(
        "kernel",
        "7.1",
        "md RAID0 passes PCI P2PDMA through to its NVMe members (BLK_FEAT_PCI_P2PDMA), so GDS can "
        "use P2PDMA mode on a RAID0 array when its cufile.json route allows it",
        "md RAID0 does not pass PCI P2PDMA through: GDS in P2PDMA mode cannot use the array",
        False,
        "md BLK_FEAT_PCI_P2PDMA propagation (2026); gds-diag support legend",
    ),
}
COMPONENT_NAME = {"gds": "GDS", "kernel": "kernel"}
UNKNOWN_REASON = {
    "gds": "no gdscheck -p header, no nvidia-fs stats",
    "kernel": "no /proc/version or uname -a",
}


def derive(facts: dict[str, Any], derived: dict[str, Any]) -> dict[str, dict[str, Any]]:
    versions = {"gds": txt((derived.get("gds") or {}).get("gds_version")), "kernel": kernel_release(facts)}
    return {name: judge(gate, versions[gate.component]) for name, gate in GATES.items()}


def kernel_release(facts: dict[str, Any]) -> str | None:
    release = txt(ok_section(facts, "kernel").get("release"))
    return str(release) if release else None


def release_key(version: str) -> tuple[int, ...] | None:
    """``1.16.1.26`` → (1, 16, 1, 26); a kernel's ``6.8.0-45-generic`` → (6, 8, 0): its package suffix
    is not part of the upstream release."""
    numbers = re.findall(r"\d+", version.split("-")[0])
    return tuple(int(n) for n in numbers) if numbers else None


def at_least(version: str, since: str) -> bool | None:
    have, need = release_key(version), release_key(since)
    if have is None or need is None:
        return None
    width = max(len(have), len(need))
    return have + (0,) * (width - len(have)) >= need + (0,) * (width - len(need))


def judge(gate: Gate, version: str | None) -> dict[str, Any]:
    name = COMPONENT_NAME[gate.component]
    newer = at_least(version, gate.since) if version else None
    if newer is None:
        side = f"{gate.since} or later" if gate.assume_newer else f"before {gate.since}"
        behaviour = gate.newer if gate.assume_newer else gate.older
        says = f"{name} version unknown ({UNKNOWN_REASON[gate.component]}): assumed {side}, where {behaviour}"
        return {"newer": gate.assume_newer, "known": False, "version": None, "since": gate.since,
                "says": says, "source": gate.source}  # fmt: skip
    side = f"{gate.since} or later" if newer else f"before {gate.since}"
    says = f"{name} {version} ({side}): {gate.newer if newer else gate.older}"
    return {"newer": newer, "known": True, "version": version, "since": gate.since, "says": says,
            "source": gate.source}  # fmt: skip
