"""What a run could not see: blindness is never reported as health.

A run is *partial* when it could not read what its severe causes depend on:

- a source refused (``denied``: the kernel log to a user without CAP_SYSLOG under
  ``dmesg_restrict``, nvme-cli's ioctls, a root-only file) that a critical cause requires, and
  that cause was left inconclusive for it;
- PCIe capabilities hidden (``lspci -vvv`` as non-root prints ``Capabilities: <access denied>``):
  ACS, AER and the link registers read as absent rather than as what they are;
- a ``--host-root`` without ``proc/`` or ``sys/`` (the capture's note says which): everything the
  kernel tells through them is unread.

``partial(...)`` names each, with how to get it (root, for a live run as another user). The
status it leads to (report/build.py): a partial run that found nothing at WARNING or above is
UNKNOWN, never OK; one that found problems keeps their status and says it is partial.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gdsdoctor.capture.capture import Capture
from gdsdoctor.engine.evaluate import CauseResult, Outcome

SEVERE = frozenset({"critical"})
HIDDEN_CAPS = "PCIe capabilities hidden (`lspci -vvv` shows `Capabilities: <access denied>`)"


def partial(capture: Capture, facts: dict[str, Any], results: Sequence[CauseResult]) -> dict[str, Any] | None:
    """``{"not_read": [{source, status, detail, how}], "causes": [ids]}`` when the run was
    blind to what its severe causes need, else None."""
    how = _how(capture)
    blind_causes: dict[str, list[str]] = {}
    for result in results:
        if result.outcome is not Outcome.INCONCLUSIVE or result.cause.severity not in SEVERE:
            continue
        for missing in result.missing:
            if missing.get("status") == "denied":
                blind_causes.setdefault(missing["section"], []).append(result.cause.id)
    not_read = [
        {"source": section, "status": "denied", "detail": _detail(facts, section), "how": how}
        for section in sorted(blind_causes)
    ]
    lspci = facts.get("lspci") or {}
    if lspci.get("status") == "ok" and lspci.get("caps_readable") is False:
        not_read.append({"source": "lspci", "status": "hidden", "detail": HIDDEN_CAPS, "how": how})
    gaps = capture.options.get("absent_trees") or []
    kernel_trees = [tree for tree in gaps if tree in ("proc", "sys")]
    if kernel_trees:
        trees = " and ".join(f"{tree}/" for tree in kernel_trees)
        not_read.append(
            {
                "source": "host_root",
                "status": "missing",
                "detail": f"--host-root has no {trees}",
                "how": "mount the host's whole / there (read-only is enough)",
            }
        )
    if not not_read:
        return None
    causes = sorted({cause for ids in blind_causes.values() for cause in ids})
    return {"not_read": not_read, "causes": causes}


def describe(found: dict[str, Any]) -> str:
    """One line: what was not read and how to get it ("dmesg denied, lspci hidden: run as root")."""
    parts = [
        "PCIe capabilities hidden" if item["status"] == "hidden" else f"{item['source']} {item['status']}"
        for item in found["not_read"]
    ]
    hows = list(dict.fromkeys(item["how"] for item in found["not_read"]))
    return f"partial: {', '.join(parts)} ({'; '.join(hows)})"


def _detail(facts: dict[str, Any], section: str) -> str:
    return str((facts.get(section) or {}).get("detail") or "permission denied")


def _how(capture: Capture) -> str:
    """How to read what was refused: root, for a live run as another user; a bundle is
    collected again as root; a run as root that was refused is in a container without the
    capabilities (CAP_SYSLOG for the kernel log, CAP_SYS_ADMIN for nvme ioctls)."""
    euid = str(capture.host.get("euid", ""))
    if capture.origin == "live":
        if euid and euid != "0":
            return "run as root: sudo gdsdoctor check"
        return "refused even to root: give the container CAP_SYSLOG and CAP_SYS_ADMIN, or run on the host"
    if capture.origin == "bundle":
        return "collect the bundle again as root: sudo gdsdoctor collect"
    return "paste that output as root would see it (sudo)"
