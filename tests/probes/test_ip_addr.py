"""`ip address` read into interfaces and their addresses (which NIC carries an NVMe-oF controller).

Samples: this development VM's own `ip address show`, `ip -j address show` and `ip -o address
show` (iproute2 6.1; tests/data/ip_addr/SOURCES.md), each read to the same addresses.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor.capture.detect import recognise
from gdsdoctor.errors import ParseError
from gdsdoctor.probes.ip_addr import parse_ip_addr
from gdsdoctor.probes.rdma import parse_netdev

DATA = Path(__file__).resolve().parents[1] / "data" / "ip_addr"
SAMPLES = [
    "ip-addr.this-machine-debian12-vm.txt",
    "ip-j-addr.this-machine-debian12-vm.json",
    "ip-o-addr.this-machine-debian12-vm.txt",
]
EXPECTED = {
    "lo": [("127.0.0.1", 8, "inet", "host"), ("::1", 128, "inet6", "host")],
    "eth0": [
        ("192.0.2.2", 24, "inet", "global"),
        ("fd00::2", 64, "inet6", "global"),
        ("fe80::fc:ff:fe00:1", 64, "inet6", "link"),
    ],
}


def addresses(section: dict) -> dict[str, list[tuple]]:
    return {
        i["name"]: [(a["address"], a["prefixlen"], a["family"], a["scope"]) for a in i["addresses"]]
        for i in section["interfaces"]
        if i["addresses"]
    }


@pytest.mark.parametrize("sample", SAMPLES)
def test_each_form_gives_the_same_addresses(sample: str) -> None:
    section = parse_ip_addr((DATA / sample).read_text(), sample)
    assert addresses(section) == EXPECTED
    first = next(a for i in section["interfaces"] if i["name"] == "eth0" for a in i["addresses"])
    assert first["src"]["artifact"] == sample
    # a text line per address; `ip -j` prints every interface on one line (cited, cut at 500 characters)
    assert "192.0.2.2" in first["src"]["text"] if sample.endswith(".txt") else first["src"]["line"] == 1


def test_a_pasted_full_ip_addr_is_netdev_with_its_addresses() -> None:
    text = (DATA / SAMPLES[0]).read_text()
    assert recognise(text).section == "netdev"
    section = parse_netdev(text, "paste")
    assert addresses(section) == EXPECTED
    assert {i["name"]: i["mtu"] for i in section["interfaces"]}["eth0"] == 1400


@pytest.mark.parametrize("sample", SAMPLES[1:])
def test_json_and_one_line_forms_are_recognised_as_ip_addr(sample: str) -> None:
    assert recognise((DATA / sample).read_text()).section == "ip_addr"


def test_other_text_is_refused() -> None:
    with pytest.raises(ParseError):
        parse_ip_addr("nvme-subsys0 - NQN=nqn.2023-01.com.example:nvme:fabric\n", "paste")
