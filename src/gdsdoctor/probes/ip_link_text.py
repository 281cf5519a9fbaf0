"""``ip link`` (also ``ip -d link``, ``ip addr``) as printed, read into the ``netdev`` section:

    4: enp1s0f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc mq state UP mode DEFAULT group …
        link/ether 94:6d:ae:3f:c8:9a brd ff:ff:ff:ff:ff:ff

One interface a header line: its name (``name@parent`` for a VLAN keeps the name), MTU, and
``state UP`` as sysfs writes an operstate (``up``). The index before the name may be missing (a
paste cut with ``...``). Not printed, so None: speed, PCI function, driver, whether it is virtual.
The ``link/TYPE`` line under the header gives ``link_type`` (``ether``, ``infiniband``, ``loopback``):
an IPoIB interface is InfiniBand, whose ports carry no RoCE GIDs.

``ip addr`` adds ``inet 192.0.2.2/24 brd … scope global eth0`` / ``inet6 …`` lines under the header:
each becomes ``addresses[]`` of that interface, ``{address, prefixlen, family ("inet"|"inet6"),
scope, src}`` (which NIC carries an NVMe-oF controller is found by its source address or by the
subnet holding the target's). ``ip -o addr`` prints one address a line (``4: eth0    inet …``):
read the same way.
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import head_lines, numbered_lines, src

_LINK = lazy_compile(
    r"^(?:\d+:\s+)?(?P<name>[^\s:@]+)(?:@\S+)?:\s+<(?P<flags>[A-Z0-9_,-]*)>\s+mtu\s+(?P<mtu>\d+)\b(?P<rest>.*)$"
)
_STATE = lazy_compile(r"\bstate\s+(?P<state>[A-Z]+)\b")
_INET = lazy_compile(
    r"^(?:\d+:\s+(?P<name>[^\s:@]+)(?:@\S+)?\s+)?(?P<family>inet6?)\s+(?P<address>[0-9A-Fa-f:.]+)"
    r"(?:/(?P<prefixlen>\d{1,3}))?\b(?P<rest>.*)$"
)
_SCOPE = lazy_compile(r"\bscope\s+(?P<scope>\w+)")
_LINK_TYPE = lazy_compile(r"^link/(?P<type>[a-z0-9_]+)\b")


def looks_like_ip_link(text: str) -> bool:
    return any(_LINK.match(line.strip()) for line in head_lines(text, 400))


def looks_like_ip_oneline_addr(text: str) -> bool:
    """``ip -o addr``: every address line names its interface (no header lines)."""
    lines = [line.strip() for line in head_lines(text, 400) if line.strip()]
    return bool(lines) and all((found := _INET.match(line)) and found["name"] for line in lines)


def interfaces(text: str, artifact: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    by_name: dict[str, dict[str, Any]] = {}
    for number, line in numbered_lines(text):
        stripped = line.strip()
        if link := _LINK.match(stripped):
            state = _STATE.search(link["rest"])
            found.append(_interface(link["name"], int(link["mtu"]), state["state"].lower() if state else None,
                                    src(artifact, number, line)))  # fmt: skip
            by_name[link["name"]] = found[-1]
        elif (kind := _LINK_TYPE.match(stripped)) and found:
            found[-1]["link_type"] = kind["type"]
        elif (inet := _INET.match(stripped)) and (inet["name"] or found):
            owner = by_name.get(inet["name"]) if inet["name"] else found[-1]
            if owner is None:  # `ip -o addr`: the interface first seen on its address line
                owner = _interface(inet["name"], None, None, src(artifact, number, line))
                by_name[inet["name"]] = owner
                found.append(owner)
            owner["addresses"].append(_address(inet, src(artifact, number, line)))
    return found


def _interface(name: str, mtu: int | None, operstate: str | None, source: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "mtu": mtu, "operstate": operstate, "speed_mbps": None, "bdf": None,
            "driver": None, "virtual": None, "link_type": None, "addresses": [], "src": source}  # fmt: skip


def _address(inet: Any, source: dict[str, Any]) -> dict[str, Any]:
    scope = _SCOPE.search(inet["rest"])
    length = int(inet["prefixlen"]) if inet["prefixlen"] else None
    return {"address": inet["address"].lower(), "prefixlen": length, "family": inet["family"],
            "scope": scope["scope"] if scope else None, "src": source}  # fmt: skip
