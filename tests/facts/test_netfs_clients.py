"""Network and parallel filesystem clients losing their server (dmesg kinds ``nfs_client``,
``lustre_client``, ``beegfs_client``; recovery ``netfs_recovered``) and the cause that reports them
(``netfs-server-unreachable``).

Real kernel logs of tests/data/dmesg (SOURCES.md): an NFS server that answered again before a
later hang (raspberrypi/linux#2482), SUSE's two sunrpc forms, Lustre clients losing an OSS
(gmagklaras/lustre-hpc-test-setup, jade-hpc-gpu#14, whamcloud/integrated-manager-for-lustre#329)
and an MDS whose connection was restored. The lines the patterns follow are the sources' format
strings (net/sunrpc/clnt.c, lustre/ptlrpc/import.c and client.c, BeeGFS MessagingTk.c)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gdsdoctor.facts import lifecycle
from gdsdoctor.pipeline import analyze_paths
from gdsdoctor.probes import dmesg

DATA = Path(__file__).resolve().parents[1] / "data" / "dmesg"
CAUSE = "netfs-server-unreachable"


def _report(*names: str) -> dict[str, Any]:
    return analyze_paths([DATA / n for n in names]).report


def _ids(items: list[dict[str, Any]]) -> list[str]:
    return [item["id"] for item in items]


# ---- the lines, by the sources' format strings -------------------------------------------------

CLASSIFIED = [
    # sunrpc rpc_check_timeout: "%s: server %s not responding, still trying|timed out"
    ("nfs: server ease not responding, still trying", "nfs_client",
     {"program": "nfs", "server": "ease", "state": "still trying"}),
    ("nfs: server 10.2.80.41 not responding, timed out", "nfs_client",
     {"program": "nfs", "server": "10.2.80.41", "state": "timed out"}),
    ("lockd: server nfs01.example.org not responding, still trying", "nfs_client",
     {"program": "lockd", "server": "nfs01.example.org", "state": "still trying"}),
    # Lustre import.c
    ("Lustre: DIAS-OST0001-osc-ffff9d6153c91000: Connection to DIAS-OST0001 (at 192.168.14.178@tcp) was lost; "
     "in progress operations using this service will wait for recovery to complete", "lustre_client",
     {"client": "DIAS-OST0001-osc-ffff9d6153c91000", "target": "DIAS-OST0001", "server": "192.168.14.178@tcp",
      "state": "was lost"}),
    ("LustreError: 167-0: fs1-OST0003-osc-ffff8800b1c2d000: This client was evicted by fs1-OST0003; in progress "
     "operations using this service will fail.", "lustre_client",
     {"client": "fs1-OST0003-osc-ffff8800b1c2d000", "state": "evicted", "target": "fs1-OST0003"}),
    ("LustreError: 11-0: jmain01-MDT0000-mdc-ffff88203810d800: operation obd_ping to node 172.31.126.88@o2ib "
     "failed: rc = -107", "lustre_client",
     {"client": "jmain01-MDT0000-mdc-ffff88203810d800", "op": "obd_ping", "server": "172.31.126.88@o2ib",
      "state": "failed", "errno": -107}),
    # ptlrpc_expire_one_request: an MGC import's name holds a NID; the server is the last one
    ("Lustre: 1160:0:(client.c:2114:ptlrpc_expire_one_request()) @@@ Request sent has timed out for slow reply: "
     "[sent 1507651404/real 1507651404]  req@ffff88005ef8c000 x1580882981821232/t0(0) "
     "o250->MGC10.14.81.0@tcp@10.14.81.0@tcp:26/25 lens 520/544 e 0 to 1 dl 1507651425 ref 1 fl Rpc:XN/0/ffffffff "
     "rc 0/-1", "lustre_client",
     {"state": "timed out for slow reply", "client": "MGC10.14.81.0@tcp", "server": "10.14.81.0@tcp"}),
    ("LNet: 2431:0:(o2iblnd_cb.c:3174:kiblnd_check_conns()) Timed out tx for 172.31.126.87@o2ib: 403055 seconds",
     "lustre_client", {"state": "Timed out tx", "server": "172.31.126.87@o2ib"}),
    # BeeGFS client MessagingTk.c
    ("beegfs: Messaging (RPC) (12345): Communication error: Node: storage01 [ID: 101] (comm result: -110; "
     "message type: 2011)", "beegfs_client", {"state": "Communication error", "server": "storage01 [ID: 101]"}),
]  # fmt: skip


@pytest.mark.parametrize(("message", "kind", "details"), CLASSIFIED)
def test_client_lines_classified_by_their_format(message: str, kind: str, details: dict) -> None:
    assert dmesg.classify(message) == (kind, None, details)


@pytest.mark.parametrize(
    "message",
    [
        "NFS: Registering the id_resolver key type",
        "Lustre: DIAS-OST0002: Recovery over after 0:53, of 2 clients 2 recovered and 0 were evicted.",
        "Lustre: 2449:0:(client.c:2141:ptlrpc_expire_one_request()) Skipped 24 previous similar messages",
        "beegfs: mount(1516568): Built without NVFS RDMA support.",
        "e1000e 0000:00:19.0 eth0: Reset adapter unexpectedly; server not responding",  # no "%s: server %s"
    ],
)
def test_near_misses_are_not_client_failures(message: str) -> None:
    hit = dmesg.classify(message)
    assert hit is None or hit[0] not in lifecycle.NETFS_KINDS


def test_recovery_lines_are_markers_naming_the_server() -> None:
    ok = dmesg.parse("[ 3224.612015] nfs: server ease OK\n", "dmesg.txt")
    assert ok["events"] == [] and [m["kind"] for m in ok["lifecycle"]] == ["netfs_recovered"]
    assert lifecycle.netfs_names(ok["lifecycle"][0]) == ["ease"]
    restored = dmesg.classify(
        "Lustre: DIAS-OST0002-osc-MDT0000: Connection restored to 192.168.14.178@tcp (at 192.168.14.178@tcp)"
    )
    assert restored is not None and restored[0] == "netfs_recovered"
    evicted = {"details": {"client": "fs1-OST0003-osc-ffff8800b1c2d000", "state": "evicted"}}
    assert lifecycle.netfs_names(evicted) == ["fs1-OST0003"]  # the target, read from the import's name


# ---- the cause, on the real logs ------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "dmesg-T-lustre-lnet-timed-out-tx-rc107.jade-14.txt",
        "dmesg-lustre-client-connection-lost-slow-reply.lustre-hpc-test-setup.txt",
        "dmesg-lustre-mgc-slow-reply.iml-329.txt",
        "syslog-nfs-not-responding-both-forms.suse-kb-000020830.txt",
    ],
)
def test_a_server_lost_without_recovery_is_reported_and_not_a_drain(name: str) -> None:
    report = _report(name)
    finding = next(f for f in report["findings"] if f["id"] == CAUSE)
    assert finding["severity"] == "warning"  # a shared filesystem's condition: never CRITICAL alone
    assert report["summary"]["status"] != "CRITICAL"
    assert any(e.get("line") for e in finding["evidence"])  # the client's lines are cited


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("dmesg-nfs-not-responding-ok-then-hung.rpi-2482.txt", "ease answered again"),
        (
            "dmesg-T-lustre-mds-lost-then-restored.lustre-hpc-test-setup.txt",
            "192.168.14.178@tcp answered again",
        ),
    ],
)
def test_an_outage_the_log_says_ended_is_history(name: str, reason: str) -> None:
    report = _report(name)
    assert CAUSE not in _ids(report["findings"])
    past = next(h for h in report["history"] if h["id"] == CAUSE)
    assert past["history_reason"].startswith(reason)


def test_a_server_lost_again_after_it_answered_is_current() -> None:
    text = (
        "[  100.000000] nfs: server filer1 not responding, still trying\n"
        "[  160.000000] nfs: server filer1 OK\n"
        "[  900.000000] nfs: server filer1 not responding, still trying\n"
    )
    section = dmesg.parse(text, "dmesg.txt")
    facts: dict[str, Any] = {"dmesg": {**section, "status": "ok"}}
    lifecycle.judge(facts, {}, None)
    assert [e["src"]["line"] for e in facts["dmesg"]["events"]] == [3]
    assert [e["src"]["line"] for e in facts["dmesg"]["history"]] == [1]


def test_the_lost_server_names_the_mounts_it_serves(tmp_path: Path) -> None:
    # the rpi #2482 outage's first line, with a mount table naming that server as the source
    (tmp_path / "dmesg.txt").write_text("[ 3223.539141] nfs: server ease not responding, still trying\n")
    (tmp_path / "mounts.txt").write_text(
        "/dev/sda1 / ext4 rw,relatime 0 0\n"
        "ease:/srv/ckpt /mnt/ckpt nfs4 rw,relatime,vers=4.2,hard,proto=tcp,addr=192.168.1.2 0 0\n"
    )
    report = analyze_paths([tmp_path / "dmesg.txt", tmp_path / "mounts.txt"]).report
    finding = next(f for f in report["findings"] if f["id"] == CAUSE)
    says = " ".join(e["text"] for e in finding["evidence"])
    assert "ease (nfs: still trying)" in says and "it serves /mnt/ckpt" in says
    assert any(step["command"] == "rpcinfo -T tcp ease nfs" for step in finding["remediation"])
