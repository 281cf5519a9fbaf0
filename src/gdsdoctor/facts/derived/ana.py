"""The ANA state of each multipath NVMe namespace, one group per namespace head: which of its
paths are optimized, usable or inaccessible, and a live path's target port (its discovery log
lists the target's other ports: where ``nvme connect-all`` is pointed)."""

from __future__ import annotations

from typing import Any


def portal_of(controller: dict[str, Any]) -> dict[str, Any] | None:
    """The target port a fabrics controller reached ``{transport, traddr, trsvcid}`` (None for PCIe,
    which has no target address)."""
    if not controller.get("transport") or not controller.get("traddr"):
        return None
    return {k: controller.get(k) for k in ("transport", "traddr", "trsvcid")}


def ana_group(head: str, paths: list[dict[str, Any]]) -> dict[str, Any]:
    live = [p for p in paths if p.get("state") in ("live", None)]
    states = [str(p.get("ana_state")) for p in paths]
    return {
        "head": head,
        # a live path's target port: its discovery log lists the target's other ports
        "portal": next((p["portal"] for p in live if p.get("portal")), None),
        "paths": [p.get("name") for p in paths],
        "states": states,
        "optimized": any(p.get("ana_state") == "optimized" for p in live),
        "usable": any(p.get("ana_state") in ("optimized", "non-optimized") for p in live),
        "inaccessible": [
            p.get("name") for p in paths if p.get("ana_state") in ("inaccessible", "persistent-loss")
        ],
        "src": paths[0].get("src"),
    }
