"""``derived.fabrics_teardown``: NVMe-oF controllers torn down after their network was gone.

At shutdown systemd stops units in the reverse of their start order. When the network goes
before the filesystem on an NVMe-oF namespace is unmounted and its controller disconnected (an
fstab entry without ``_netdev``, a connect unit not ordered before ``remote-fs-pre.target``), the
host's last commands cannot leave: the disconnect's Property Set (CC.SHN) and the final writes
fail with EPIPE or ECONNRESET ("failed to send request -32"), wait out the I/O timeout ("queue 0:
timeout request … type 4", a fabrics command) and the reconnects find no route ("failed to
connect socket: -101", ENETUNREACH; -100 ENETDOWN; -113 EHOSTUNREACH): the shutdown hangs a
minute per controller and the last checkpoint writes are lost. The target and the fabric are
fine; the host's order of shutdown is wrong (nvme-cli's FAQ, "Ensuring correct shutdown ordering
for NVMe/TCP mounted filesystems"; the kernel's nvme_tcp_try_send prints the errno).

Per controller (``device``) of a boot: its failures that say the host had no network
(``NO_NETWORK`` errnos on a transport error or a reconnect) or a fabrics command timing out
(queue 0), and whether they came after the host began removing the controller ("Removing ctrl:
NQN", a disconnect) or in a boot that was shutting down (``system_shutdown`` markers).

Keys: ``controllers[]`` ``{device, boot, removed, at_shutdown, lines[] (provenance)}``,
``after_removal`` / ``at_shutdown`` (any controller so judged), ``lines`` (every such failure,
for the causes to cite) and, for the causes whose events these are, ``transport_in_teardown``,
``timeouts_in_teardown``, ``reconnects_in_teardown``: True when every event of that kind of
this boot is one of them (the fabric did not fail: the teardown did).
"""

from __future__ import annotations

from typing import Any

# EPIPE, ECONNRESET, ENETDOWN, ENETUNREACH, EHOSTUNREACH: the host's side of the socket is gone
NO_NETWORK = frozenset((-32, -104, -100, -101, -113))
_KINDS = ("nvmeof_transport_error", "nvmeof_reconnect", "nvme_timeout")


def derive(facts: dict[str, Any]) -> dict[str, Any] | None:
    section = facts.get("dmesg")
    if not isinstance(section, dict) or section.get("status") != "ok":
        return None
    events = [e for e in section.get("events") or [] if isinstance(e, dict)]
    shutting = {e.get("boot") for e in events if e.get("kind") == "system_shutdown"}
    by_device: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for event in events:
        if event.get("kind") in _KINDS and event.get("device"):
            by_device.setdefault((event.get("boot"), event["device"]), []).append(event)
    controllers = [
        judged
        for (boot, device), own in by_device.items()
        if (judged := _controller(boot, device, own, boot in shutting)) is not None
    ]
    torn = {id(e) for c in controllers for e in c.pop("events")}
    return {
        "controllers": controllers,
        "after_removal": any(c["removed"] for c in controllers),
        "at_shutdown": any(c["at_shutdown"] for c in controllers),
        "lines": sorted(
            (line for c in controllers for line in c["lines"]),
            key=lambda x: (str(x.get("artifact")), x.get("line") or 0),
        ),
        **{f"{name}_in_teardown": _all_torn(events, kind, torn) for name, kind in _NAMES},
    }


_NAMES = (
    ("transport", "nvmeof_transport_error"),
    ("timeouts", "nvme_timeout"),
    ("reconnects", "nvmeof_reconnect"),
)


def _controller(
    boot: Any, device: str, events: list[dict[str, Any]], shutting: bool
) -> dict[str, Any] | None:
    """One controller's failures that say its network was gone, if any."""
    removal = next((i for i, e in enumerate(events) if _is_removal(e)), None)
    failing = [e for e in events if _no_network(e) or _fabrics_timeout(e)]
    after = [e for e in failing if removal is not None and events.index(e) > removal]
    unreachable = [e for e in failing if _errno(e) in (-100, -101, -113)]
    if not after and not (shutting and unreachable):
        return None
    torn = after or unreachable
    # the removal's own lines, or the reconnect attempts that followed the first unreachable one
    start = removal if after else _recovery_start(events, events.index(unreachable[0]))
    torn = [*torn, *(e for e in events[start:] if e.get("kind") == "nvmeof_reconnect" and e not in torn)]
    return {
        "device": device,
        "boot": boot,
        "removed": bool(after),
        "at_shutdown": shutting,
        "lines": sorted(
            (e["src"] for e in torn if isinstance(e.get("src"), dict)), key=lambda x: x.get("line") or 0
        )[:12],
        "events": torn,
    }


def _recovery_start(events: list[dict[str, Any]], at: int) -> int:
    """The "starting error recovery" that opened the failing reconnects at ``at`` (the socket's
    close began it), else ``at``."""
    before = events[at - 1] if at > 0 else {}
    return at - 1 if "starting error recovery" in str(before.get("message")) else at


def _is_removal(event: dict[str, Any]) -> bool:
    return event.get("kind") == "nvmeof_reconnect" and "Removing ctrl" in str(event.get("message"))


def _errno(event: dict[str, Any]) -> Any:
    details = event.get("details") if isinstance(event.get("details"), dict) else {}
    return details.get("errno")


def _no_network(event: dict[str, Any]) -> bool:
    return event.get("kind") in ("nvmeof_transport_error", "nvmeof_reconnect") and _errno(event) in NO_NETWORK


def _fabrics_timeout(event: dict[str, Any]) -> bool:
    details = event.get("details") if isinstance(event.get("details"), dict) else {}
    fabrics_command = "type 4" in str(event.get("message"))  # "queue 0: timeout request 0x18 type 4"
    return event.get("kind") == "nvme_timeout" and details.get("qid") == 0 and fabrics_command


def _all_torn(events: list[dict[str, Any]], kind: str, torn: set[int]) -> bool:
    own = [e for e in events if e.get("kind") == kind and e.get("current_boot", True)]
    return bool(own) and all(id(e) in torn for e in own)
