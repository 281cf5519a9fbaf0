"""The network and parallel filesystem servers the kernel log says a client lost: ``derived.netfs``.

``derive(facts)`` returns ``{"servers": [...]}``, one entry per server the current events name
(``dmesg.events`` after the lifecycle moved recovered outages to history), in the log's order:

- ``name``: the host or LNet NID (a Lustre eviction names only its target: then the target);
- ``fs``: ``nfs``, ``lustre`` or ``beegfs``; ``targets``: the Lustre targets named on it;
- ``states``: what the client said, each once (``still trying``, ``timed out``, ``was lost``,
  ``evicted``, ``Timed out tx`` …); ``events``: how many lines; ``evicted``: whether it evicted this
  client;
- ``mounts``: the mount points (the mount table) whose source names the server: an NFS
  ``host:/export``, a Lustre ``NID[:NID]:/fsname``, an ``addr=`` option.

>>> facts = {"dmesg": {"status": "ok", "events": [
...     {"kind": "nfs_client", "details": {"server": "filer1", "state": "still trying"}}]},
...     "mounts": {"status": "ok", "mounts": [{"device": "filer1:/ckpt", "mountpoint": "/mnt/ckpt",
...     "fstype": "nfs4", "opts": {"addr": "10.0.0.5"}}]}}
>>> derive(facts)["servers"][0]["mounts"]
['/mnt/ckpt']
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.facts.derived.access import as_list, obj, ok_section
from gdsdoctor.facts.lifecycle import netfs_names

KINDS = {"nfs_client": "nfs", "lustre_client": "lustre", "beegfs_client": "beegfs"}


def derive(facts: dict[str, Any]) -> dict[str, Any]:
    servers: dict[str, dict[str, Any]] = {}
    for event in as_list(ok_section(facts, "dmesg").get("events")):
        if not isinstance(event, dict) or event.get("kind") not in KINDS:
            continue
        names = netfs_names(event)
        if not names:
            continue
        details = obj(event.get("details"))
        entry = servers.setdefault(
            names[0],
            {"name": names[0], "fs": KINDS[event["kind"]], "targets": [], "states": [], "events": 0,
             "evicted": False, "mounts": []},
        )  # fmt: skip
        entry["events"] += 1
        state = details.get("state")
        if isinstance(state, str) and state not in entry["states"]:
            entry["states"].append(state)
        entry["evicted"] = entry["evicted"] or state == "evicted"
        for target in names[1:]:
            if target not in entry["targets"]:
                entry["targets"].append(target)
    mounts = [m for m in as_list(ok_section(facts, "mounts").get("mounts")) if isinstance(m, dict)]
    for entry in servers.values():
        entry["mounts"] = [str(m.get("mountpoint")) for m in mounts if _served_by(m, entry["name"])]
    return {"servers": list(servers.values())}


def _served_by(mount: dict[str, Any], server: str) -> bool:
    """Whether a mount's source or address names the server (compared as text, never as a pattern)."""
    device = str(mount.get("device") or "")
    host = device.split(":/", 1)[0] if ":/" in device else ""  # NFS host:/export, Lustre NID[:NID]:/fs
    addr = obj(mount.get("opts")).get("addr")
    return bool(server) and (server in host.split(":") or addr == server)
