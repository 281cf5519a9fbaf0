"""``ip link`` (also ``ip -d link``, ``ip addr``) as printed, read into the ``netdev`` section:

    4: enp1s0f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc mq state UP mode DEFAULT group …
        link/ether 94:6d:ae:3f:c8:9a brd ff:ff:ff:ff:ff:ff

One interface a header line: its name (``name@parent`` for a VLAN keeps the name), MTU, and
``state UP`` as sysfs writes an operstate (``up``). The index before the name may be missing (a
paste cut with ``...``). Not printed, so None: speed, PCI function, driver, whether it is virtual.
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import numbered_lines, src

_LINK = lazy_compile(
    r"^(?:\d+:\s+)?(?P<name>[^\s:@]+)(?:@\S+)?:\s+<(?P<flags>[A-Z0-9_,-]*)>\s+mtu\s+(?P<mtu>\d+)\b(?P<rest>.*)$"
)
_STATE = lazy_compile(r"\bstate\s+(?P<state>[A-Z]+)\b")


def looks_like_ip_link(text: str) -> bool:
    return any(_LINK.match(line.strip()) for line in text.split("\n", 400)[:400])


def interfaces(text: str, artifact: str) -> list[dict[str, Any]]:
    found = []
    for number, line in numbered_lines(text):
        if not (link := _LINK.match(line.strip())):
            continue
        state = _STATE.search(link["rest"])
        found.append(
            {
                "name": link["name"],
                "mtu": int(link["mtu"]),
                "operstate": state["state"].lower() if state else None,
                "speed_mbps": None,
                "bdf": None,
                "driver": None,
                "virtual": None,
                "src": src(artifact, number, line),
            }
        )
    return found
