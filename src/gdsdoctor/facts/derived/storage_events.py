"""The kernel log sorted by what it means for storage: the ``dmesg`` key of ``derived.storage``
(see storage.py), and the controllers the log names as NVMe-oF ones."""

from __future__ import annotations

import re
from typing import Any

from gdsdoctor.facts.derived.access import as_list, obj, ok_section
from gdsdoctor.patterns import lazy_compile

RESET_KINDS = ("nvme_reset", "capacity_to_zero")
CONNECT_KINDS = ("nvmeof_reconnect", "nvmeof_transport_error")
NVME_PARTITION = lazy_compile(r"^(nvme\d+n\d+)p\d+$")
NVME_NAMESPACE = lazy_compile(r"^nvme(\d+)(?:c\d+)?n\d+$")
JOURNAL_SUFFIX = lazy_compile(r"^(.*\d)-\d+$")  # jbd2 names the journal "nvme0n1p1-8"
ERRNO_MEANINGS = {
    -111: "connection refused: nothing listens on the target port (target service down or wrong port)",
    -110: "timed out: no answer from the target (routing, firewall, packet loss)",
    -113: "host unreachable: no route to the target",
    # this host's own network gone: its interface down or its route removed (at shutdown, a network
    # stopped before the NVMe-oF filesystem was unmounted and the controller disconnected)
    -101: "network unreachable: this host's own interface or route to the target is gone",
    -100: "network down: this host's interface to the target is down",
    -104: "connection reset: the RDMA connection was rejected (RoCE interface not configured, no listener)",
    -22: "invalid argument: the HCA refused the queue setup (resources, OFED/firmware)",
    -12: "out of memory: queue resources could not be allocated",
    -512: "interrupted (ERESTARTSYS)",
}


def _events(facts: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in as_list(ok_section(facts, "dmesg").get("events")) if isinstance(e, dict)]


def dmesg_fabrics_devices(facts: dict[str, Any]) -> set[str]:
    kinds = ("nvmeof_reconnect", "nvmeof_reconnected", "nvmeof_keepalive", "nvmeof_transport_error",
             "nvmeof_connect_refused")  # fmt: skip
    found = {
        e["device"] for e in _events(facts) if e.get("kind") in kinds and isinstance(e.get("device"), str)
    }
    # the TCP timeout wordings ("queue N: timeout cid/request") exist only on fabrics
    found |= {
        e["device"]
        for e in _events(facts)
        if e.get("kind") == "nvme_timeout"
        and isinstance(e.get("device"), str)
        and re.search(r"queue \d+: timeout|type \d+ opcode", str(e.get("message") or ""))
    }
    return found


def _is_keepalive(event: dict[str, Any]) -> bool:
    kind = event.get("kind")
    if kind != "nvme_timeout":  # an admin queue's timed-out Keep Alive, or the log's own word for one
        return kind == "nvmeof_keepalive"
    details = event.get("details") if isinstance(event.get("details"), dict) else {}
    opcode = str(details.get("opcode") or "").lower()
    qid = details.get("qid")
    message = str(event.get("message") or "")
    admin = qid in (0, "0") or "queue 0:" in message or "Admin Cmd" in message
    return admin and opcode in ("0x18", "24")


def _errno(event: dict[str, Any]) -> int | None:
    value = obj(event.get("details")).get("errno")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _on_fabrics(event: dict[str, Any], fabrics: set[str]) -> bool:
    device = str(event.get("device") or "")
    match = NVME_NAMESPACE.match(device)
    return device in fabrics or bool(match and f"nvme{match[1]}" in fabrics)


def checkpoint_devices(mounts: list[dict[str, Any]]) -> set[str]:
    """Every device name under the checkpoint mounts: stack layers, namespaces, controllers."""
    names: set[str] = set()
    for mount in mounts:
        names |= {str(layer["name"]) for layer in mount["stack"]}
        names |= set(mount["nvme_namespaces"]) | {str(c["name"]) for c in mount["nvme_controllers"]}
        names |= {f"nvme{m[1]}" for n in mount["nvme_namespaces"] if (m := NVME_NAMESPACE.match(n))}
    return names


def _on_checkpoint(name: str, devices: set[str]) -> bool:
    device = JOURNAL_SUFFIX.sub(r"\1", name)  # the partition a journal is named after
    if not device:
        return False
    namespace = namespace_of(device)
    return device in devices or (namespace is not None and namespace in devices)


def kernel_log(facts: dict[str, Any], fabrics: set[str], checkpoint_devices: set[str]) -> dict[str, Any]:
    events = _events(facts)
    timeouts = [e for e in events if e.get("kind") == "nvme_timeout" and not _is_keepalive(e)]
    groups = {
        "keepalive": [e for e in events if _is_keepalive(e)],
        "pcie_timeouts": [e for e in timeouts if not _on_fabrics(e, fabrics)],
        "pcie_resets": [e for e in events if e.get("kind") in RESET_KINDS and not _on_fabrics(e, fabrics)],
        "fabrics_timeouts": [e for e in timeouts if _on_fabrics(e, fabrics)],
        "completion_polled": [e for e in timeouts if "completion polled" in str(e.get("message") or "")],
    }
    errnos = sorted(
        {e["details"]["errno"] for e in events if e.get("kind") in CONNECT_KINDS and _errno(e) is not None}
    )
    groups_errors = [{"errno": n, "meaning": ERRNO_MEANINGS.get(n, "see errno(3)")} for n in errnos]
    # unique device names per group, for messages and one remediation command per device
    devices = {
        name: sorted({str(e["device"]) for e in group if e.get("device")}) for name, group in groups.items()
    }
    # one answer per device name: a storm names a few devices a thousand times
    names = [str(e.get("device") or "") for e in events]
    on = {name: _on_checkpoint(name, checkpoint_devices) for name in set(names)}
    on_checkpoint = [e for e, name in zip(events, names, strict=True) if on[name]]
    return {**groups, "devices": devices, "connect_errors": groups_errors,
            "connect_transports": connect_transports(events), "on_checkpoint": on_checkpoint}  # fmt: skip


def connect_transports(events: list[dict[str, Any]]) -> list[str]:
    """The transports the NVMe-oF connect failures name ("rdma connection establishment failed",
    "rdma_resolve_addr"; "failed to connect socket" is nvme-tcp's): what to test the target with
    when no controller (sysfs, nvme-cli) says which transport it uses."""
    found = set()
    for event in events:
        if event.get("kind") not in CONNECT_KINDS:
            continue
        message = str(event.get("message") or "").lower()
        if "rdma" in message:
            found.add("rdma")
        if "socket" in message or "nvme_tcp" in message or "tcp:" in message:
            found.add("tcp")
    return sorted(found)


def namespace_of(name: str) -> str | None:
    """The NVMe namespace a block device name is or lies on (``nvme0n1p2`` → ``nvme0n1``)."""
    match = NVME_PARTITION.match(name)
    if match:
        return match[1]
    return name if NVME_NAMESPACE.match(name) and "c" not in name[4:] else None
