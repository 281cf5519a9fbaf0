"""NVMe statuses decoded from their numbers, not their wording (probes/nvme_status.py), in the
kernel log and in nvme-cli's answers, and the causes they lead to: an Opal-locked drive's Access
Denied is not a media error; a Connect the target answered with an NVMe status is not an errno.

Real samples (tests/data/*/SOURCES.md): a WD drive after a PSID revert whose reads the block layer
calls "critical medium error" while the drive answered Access Denied (Drive-Trust-Alliance/sedutil
#507), nvme-cli 1.6/1.9/2.x ACCESS_DENIED answers (linux-nvme/nvme-cli#412, #862), a connect whose
"ret=6" is the target's Internal Error (linux-nvme/nvme-cli#659), an RDMA target with no listener
(spdk/spdk#257)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gdsdoctor.pipeline import analyze_paths
from gdsdoctor.probes import cli_errors, dmesg, nvme_status

DATA = Path(__file__).resolve().parents[1] / "data"


def _findings(*paths: Path) -> dict[str, dict[str, Any]]:
    return {f["id"]: f for f in analyze_paths(list(paths)).report["findings"]}


@pytest.mark.parametrize(
    ("sct", "sc", "name", "kind"),
    [
        ("0x2", "0x86", "Access Denied", "access_denied"),
        ("0x2", "0x81", "Unrecovered Read Error", "media"),
        ("0x2", "0x80", "Write Fault", "media"),
        ("0x2", "0x87", "Deallocated or Unwritten Logical Block", "unwritten"),
        ("0x0", "0x4", "Data Transfer Error", "data_transfer"),
        ("0x0", "0x20", "Namespace is Write Protected", "write_protected"),
        ("0x3", "0x71", "Command Aborted By Host", "path"),
        ("0x1", "0x84", "Connect Invalid Host", "connect_invalid_host"),
        ("0x7", "0x1", "Vendor Specific", "vendor"),
    ],
)
def test_a_status_is_its_type_and_code(sct: str, sc: str, name: str, kind: str) -> None:
    assert nvme_status.decode(sct, sc) == {"status_name": name, "status_class": kind}


def test_a_whole_status_field_carries_dnr_and_more() -> None:
    # nvme-cli prints the field: 0x6286 = DNR | More | type 2 code 0x86
    assert nvme_status.decode_value(0x6286) == {
        "sct": "0x2", "sc": "0x86", "dnr": True, "more": True,
        "status_name": "Access Denied", "status_class": "access_denied",
    }  # fmt: skip
    assert nvme_status.decode_value(881)["status_class"] == "path"  # "wo/DNR bit: 881" = 0x371
    assert nvme_status.decode_value(-110) == {}  # an errno is not a status


def test_the_kernels_access_denied_is_not_a_media_error() -> None:
    log = DATA / "dmesg" / "dmesg-nvme-access-denied-critical-medium.sedutil-507.txt"
    events = dmesg.parse(log.read_text(), "dmesg.txt")["events"]
    statuses = [e["details"]["status_class"] for e in events if e["kind"] == "nvme_status_error"]
    assert statuses == ["access_denied", "access_denied"]  # the kernel wrote "I/O Error"
    found = _findings(log)
    assert "nvme-access-denied" in found
    assert "nvme-media-errors" not in found  # "critical medium error" is the block layer's word for it
    assert found["blk-io-errors"]["explained_by"] == "nvme-access-denied"


@pytest.mark.parametrize(
    "name",
    [
        "nvme-sanitize-access-denied-then-dmesg.sedutil-507.txt",
        "nvme-format-access-denied.nvme-cli-412.txt",
        "nvme-write-zeroes-access-denied-1.6-and-1.9.nvme-cli-862.txt",
    ],
)
def test_nvme_cli_answers_decoded_in_every_version(name: str) -> None:
    errors = cli_errors.parse((DATA / "cli_errors" / name).read_text(), name)["errors"]
    assert errors and all(
        (e["kind"], e["sct"], e["sc"], e["status_class"]) == ("nvme_status", "0x2", "0x86", "access_denied")
        for e in errors
    )


def test_a_refused_command_of_another_kind_is_no_lock() -> None:
    name = "nvme-format-cmd-seq-error.nvme-cli-423.txt"
    (error,) = cli_errors.parse((DATA / "cli_errors" / name).read_text(), name)["errors"]
    assert (error["sct"], error["sc"], error["status_class"]) == ("0x0", "0xc", "invalid")
    assert "nvme-access-denied" not in _findings(DATA / "cli_errors" / name)


def test_a_connect_answered_with_a_status_is_the_targets_not_an_errno() -> None:
    log = DATA / "dmesg" / "dmesg-nvmeof-connect-status-6-queue-ret-6.nvme-cli-659.txt"
    events = dmesg.parse(log.read_text(), "dmesg.txt")["events"]
    assert [(e["kind"], e["details"]["status_name"], e["details"].get("errno")) for e in events] == [
        ("nvmeof_connect_refused", "Internal Error", None),
        ("nvmeof_connect_refused", "Internal Error", None),  # "ret=6" is no ENXIO
    ]
    refused = _findings(log)["nvmeof-connect-refused-by-target"]
    assert refused["severity"] == "warning"  # the target's fault: its clients are not drained


def test_a_connect_to_no_listener_and_the_host_refused_by_name() -> None:
    rejected = DATA / "dmesg" / "dmesg-nvmeof-rdma-connect-rejected-invalid-service-id.spdk-257.txt"
    found = _findings(rejected)
    assert found["nvmeof-reconnect-loop"]["explained_by"] == "nvmeof-connect-refused-by-target"
    host = "nvme nvme1: Connect for subsystem nqn.2016-06.io.spdk:cnode1 is not allowed, hostnqn: nqn.h"
    assert dmesg.classify(host) == (
        "nvmeof_connect_refused", "nvme1",
        {"subsysnqn": "nqn.2016-06.io.spdk:cnode1", "hostnqn": "nqn.h", "reason": "host_not_allowed"},
    )  # fmt: skip


def test_a_connect_the_host_aborted_is_the_hosts_side() -> None:
    aborted = dmesg.classify("nvme nvme3: Connect command failed, error wo/DNR bit: 881")
    assert aborted is not None and aborted[2]["reason"] == "host_side"
    # older kernels' timeout handlers set Command Abort Requested (nvme-cli #636: a RoCE connect
    # tried before the bond was up): the host gave up waiting, the target refused nothing
    timed_out = dmesg.classify("Connect command failed, error wo/DNR bit: 7")
    assert timed_out is not None and timed_out[2]["reason"] == "host_side"
    busy = dmesg.classify(
        "nvme nvme0: Connect command failed, error wo/DNR bit: 385"
    )  # 0x181 Controller Busy
    assert busy is not None and busy[2]["reason"] == "target_busy"
    errno = dmesg.classify("nvme nvme0: failed to connect queue: 1 ret=-110")
    assert errno == ("nvmeof_reconnect", "nvme0", {"errno": -110})


def test_a_session_typed_without_prompts_is_read_and_answered() -> None:
    """nvme-cli #862: the commands as a one-liner (`sudo nvme --version;sudo nvme write-zeroes …;echo
    $?`), nvme-cli's banner and the exit codes around the two answers: a session, read as one."""
    path = DATA / "cli_errors" / "nvme-write-zeroes-access-denied-1.6-and-1.9.nvme-cli-862.txt"
    assert cli_errors.recognise(path.read_text())
    assert "nvme-access-denied" in _findings(path)


@pytest.mark.parametrize(
    "text",
    [
        # kernel lines name no nvme verb: not a session's chatter around one cli answer
        "nvme nvme0: I/O 12 QID 3 timeout, aborting\nnvme nvme0: Abort status: 0x0\n"
        "nvme nvme0: I/O 13 QID 3 timeout, aborting\nNVMe status: Access Denied: denied(0x4286)\n",
        "nvme list\nnvme version 2.4\nNode Model\n/dev/nvme0n1 SAMSUNG\n/dev/nvme1n1 SAMSUNG\n",  # no error
    ],
)
def test_what_is_no_session_around_an_nvme_answer(text: str) -> None:
    assert not cli_errors.recognise(text)
