"""NVMe-oF controllers torn down without their network (facts/derived/fabrics_teardown.py): a
disconnect or a shutdown with the network gone is the host's shutdown order, a target that
refuses or a fabric that drops is not."""

from __future__ import annotations

from pathlib import Path

from gdsdoctor.facts.derived import fabrics_teardown
from gdsdoctor.probes import dmesg

ROOT = Path(__file__).resolve().parents[2]
# the kernel's own words (drivers/nvme/host/tcp.c "failed to connect socket: %d", fabrics.c
# "Failed reconnect attempt %d", kernel/reboot.c "reboot: Restarting system", systemd-shutdown's
# kmsg line), in the order a shutdown with the network stopped first prints them
SHUTDOWN_WITHOUT_ROUTE = """\
[ 9001.100000] nvme nvme1: starting error recovery
[ 9001.200000] nvme nvme1: failed to connect socket: -101
[ 9011.300000] nvme nvme1: Failed reconnect attempt 1
[ 9021.400000] systemd-shutdown[1]: Syncing filesystems and block devices.
[ 9022.500000] reboot: Restarting system
"""


def _derive(text: str, name: str = "dmesg.txt") -> dict | None:
    return fabrics_teardown.derive({"dmesg": {"status": "ok", **dmesg.parse(text, name)}})


def test_a_disconnect_whose_requests_find_no_socket_is_a_teardown() -> None:
    text = (ROOT / "fixtures" / "nvmeof-disconnect-network-down" / "files" / "dmesg.txt").read_text()
    found = _derive(text)
    assert found and found["after_removal"] and not found["at_shutdown"]
    assert found["transport_in_teardown"] and found["timeouts_in_teardown"]
    assert [line["line"] for line in found["lines"]] == [1, 2, 3]


def test_no_route_while_shutting_down_is_a_teardown() -> None:
    found = _derive(SHUTDOWN_WITHOUT_ROUTE)
    assert found and found["at_shutdown"] and found["reconnects_in_teardown"]
    assert found["controllers"][0]["device"] == "nvme1"


def test_the_same_no_route_without_a_shutdown_is_not() -> None:
    text = "\n".join(line for line in SHUTDOWN_WITHOUT_ROUTE.splitlines() if "nvme" in line)
    found = _derive(text)
    assert found is not None and found["controllers"] == [] and not found["reconnects_in_teardown"]


def test_a_target_refusing_its_port_is_not_a_teardown() -> None:
    text = (ROOT / "fixtures" / "nvmeof-tcp-reconnect-econnrefused" / "files").glob("*")
    for path in text:
        found = _derive(path.read_text(errors="replace"), path.name)
        assert found is None or (found["controllers"] == [] and not found["reconnects_in_teardown"])
