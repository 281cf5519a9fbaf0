"""The host's IP addresses per interface (``ip address show``): which NIC carries an NVMe-oF
controller is read from them (its ``host_traddr``/``src_addr`` is one of them, or the target's
``traddr`` lies in one of their subnets).

Section ``ip_addr``: ``{"format": "text"|"json", "interfaces": [{name, mtu, operstate, link_type
("ether", "infiniband", … or None), addresses:
[{address, prefixlen, family ("inet"|"inet6"), scope, src}], src}]}``. Read from the text of
``ip address show`` (live; the ``ip -o address`` one-line form too, parsed by ``ip_link_text``) or
a pasted ``ip -j address`` (JSON: ``ifname``, ``addr_info[].local``/``prefixlen``). A pasted
full ``ip addr`` (header lines and all) is read as the ``netdev`` section, which then carries the
same ``addresses``; derivations read both (``facts.derived.fabrics_locality``).
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.probes.base import Probe, Section, Source, src
from gdsdoctor.probes.ip_link_text import interfaces, looks_like_ip_link, looks_like_ip_oneline_addr
from gdsdoctor.probes.text import load_pasted_json, to_int

_FAMILIES = ("inet", "inet6")


def parse_ip_addr(text: str, artifact: str) -> Section:
    if text.lstrip().startswith("["):
        return {"format": "json", "interfaces": _json_interfaces(text, artifact)}
    if not (looks_like_ip_link(text) or looks_like_ip_oneline_addr(text)):
        raise ParseError("not the output of `ip address show`")
    return {"format": "text", "interfaces": interfaces(text, artifact)}


def _json_interfaces(text: str, artifact: str) -> list[dict[str, Any]]:
    data, skipped = load_pasted_json(text, "ip -j address")
    if not isinstance(data, list):
        raise ParseError("not the JSON list `ip -j address` prints")
    source = src(artifact, skipped + 1, text.split("\n", 1)[0])  # one line holds every interface
    found = []
    for raw in data:
        if not isinstance(raw, dict) or not isinstance(raw.get("ifname"), str):
            continue
        addresses = [
            {
                "address": str(info["local"]).lower(),
                "prefixlen": to_int(info.get("prefixlen")),
                "family": info.get("family"),
                "scope": info.get("scope"),
                "src": source,
            }
            for info in raw.get("addr_info") or []
            if isinstance(info, dict)
            and info.get("family") in _FAMILIES
            and isinstance(info.get("local"), str)
        ]
        operstate = raw.get("operstate")
        found.append(
            {
                "name": raw["ifname"],
                "mtu": to_int(raw.get("mtu")),
                "operstate": operstate.lower() if isinstance(operstate, str) else None,
                "link_type": raw.get("link_type") if isinstance(raw.get("link_type"), str) else None,
                "addresses": addresses,
                "src": source,
            }
        )
    return found


def recognise_ip_addr(text: str) -> bool:
    """``ip -j address`` (a JSON list with ``ifname`` and ``addr_info``) or ``ip -o address``."""
    head = text.lstrip()[:4096]
    if head.startswith("["):
        return '"ifname"' in head and '"addr_info"' in head
    return looks_like_ip_oneline_addr(text)


PROBES: tuple[Probe, ...] = (
    Probe(
        section="ip_addr",
        title="IP addresses per interface (which NIC carries each NVMe-oF controller)",
        sources=(Source("cmd/ip-address.txt", argv=("ip", "address", "show")),),
        parse=parse_ip_addr,
        recognise=recognise_ip_addr,
        paste_hint="`ip -j address` (or `ip -o address`)",
        tags=("network", "nvmeof"),
    ),
)
