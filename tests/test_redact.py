"""Redaction: a redacted capture gives the same diagnosis, keeps every format parseable, keeps
subnet relations, and no original identifier survives in it. Runs over every fixture and every
reference file under tests/data (so fixtures and probes that land later are covered too)."""

from __future__ import annotations

import ipaddress
import json
import re
import stat
import tarfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gdsdoctor.capture.bundle import read_bundle
from gdsdoctor.capture.capture import Capture
from gdsdoctor.capture.detect import capture_files
from gdsdoctor.capture.redact import Redactor, redact_capture, v4_kept_bits
from gdsdoctor.pipeline import analyze_capture, load_inputs
from tests.conftest import REPO, THIS_KERNEL, fake_binary, write_tree
from tests.test_fixtures import CASES, _expect, _inputs

DATA = REPO / "tests" / "data"
REFERENCE_FILES = sorted(p for p in DATA.rglob("*") if p.is_file() and not p.name.endswith((".xz", ".md")))

# Identifier-rich outputs, written for this test (every value here is made up).
SAMPLES = {
    "nvme-list.txt": (
        "Node                  SN                   Model                                    Namespace Usage                      Format           FW Rev\n"
        "--------------------- -------------------- ---------------------------------------- --------- -------------------------- ---------------- --------\n"
        "/dev/nvme0n1          S4EWNX0R123456       Samsung SSD 980 PRO 1TB                  1         123.45  GB /   1.00  TB    512   B +  0 B   5B2QGXA7\n"
    ),
    "nvme-id-ctrl.txt": "vid       : 0x144d\nsn        : S43ANA0M405593      \nmn        : SAMSUNG MZQLB1T9HAJR-00007\nsubnqn    : nqn.2019-10.com.kioxia:KCM6XRUL3T84:3DK0A04E0FH8\n",
    "hostnqn": "nqn.2014-08.org.nvmexpress:uuid:ca5d7304-9502-4787-bca1-44fe5be80db2\n",
    "hostid": "ca5d7304-9502-4787-bca1-44fe5be80db2\n",
    "list-subsys.json": json.dumps(
        {
            "HostNQN": "nqn.2014-08.org.nvmexpress:uuid:ca5d7304-9502-4787-bca1-44fe5be80db2",
            "Subsystems": [
                {
                    "NQN": "nqn.2024-01.com.acmecorp:storage:array7",
                    "Paths": [{"Address": "traddr=192.168.100.10,trsvcid=4420,host_traddr=192.168.100.5"}],
                }
            ],
            "SerialNumber": "PHLJ134500AB2P0BGN",
        }
    ),
    "lsblk.json": json.dumps(
        {
            "blockdevices": [
                {
                    "name": "nvme0n1",
                    "serial": "S4EWNX0R123456",
                    "wwn": "eui.0025388b91c0b1a3",
                    "mountpoint": "/home/alice/ckpt",
                }
            ]
        }
    ),
    "ibstat.txt": "CA 'mlx5_0'\n\tNode GUID: 0x0002c90300a1b2c3\n\tSystem image GUID: 0x0002c90300a1b2c3\n\tPort 1:\n\t\tPort GUID: 0x0002c90300a1b2c4\n",
    "ibv_devinfo.txt": "hca_id:\tmlx5_0\n\tnode_guid:\t\t\t0002:c903:00a1:b2c3\n\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0002:c903:00a1:b2c4\n\t\t\tGID[  1]:\t\t0000:0000:0000:0000:0000:ffff:c0a8:6405\n",
    "ip-addr.txt": "4: ib0: <BROADCAST,MULTICAST,UP> mtu 4092\n    link/infiniband 00:00:10:87:fe:80:00:00:00:00:00:00:00:02:c9:03:00:a1:b2:c4 brd 00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff\n    inet 192.168.100.5/24 brd 192.168.100.255 scope global ib0\n    inet6 2001:db8:abcd:12::5/64 scope global\n5: eth0: <UP>\n    link/ether 0c:42:a1:12:34:56 brd ff:ff:ff:ff:ff:ff\n    inet 172.20.3.17/20 scope global eth0\n",
    "proc-mounts.txt": "nfs01.corp.acme.com:/export/ckpt /home/alice/ckpt nfs4 rw,vers=4.2,addr=10.1.2.3,clientaddr=10.1.2.77 0 0\n//fileserver7/share /mnt/cifs cifs rw,user=bob,addr=10.1.3.4 0 0\nmds01@o2ib:/lustre /mnt/lustre lustre rw 0 0\n",
    "dmesg.txt": '[    2.1] gpu-node-017 kernel: nvme nvme0: pci function 0000:3b:00.0\n[ 12.3] nvme nvme1: new ctrl: NQN "nqn.2024-01.com.acmecorp:storage:array7", addr 192.168.100.10:4420\n[ 13.0] GDS release version: 1.7.2.10\n',
    "lspci.txt": "3b:00.0 Non-Volatile memory controller: Samsung\n\tCapabilities: [150 v1] Device Serial Number 00-11-22-ff-ff-33-44-55\n",
    "nvidia-smi-q.txt": "    GPU UUID                     : GPU-c83f1955-c0e6-e727-36ed-8eecf4bc1c67\n    Serial Number                : 1653724056222\n",
    "sysfs-wwid": "eui.0025388b91c0b1a3\nnvme.1e0f-3339314130343554333336-4b4347573130343554333336-00000001\n",
}
IDENTIFIERS = [
    "S4EWNX0R123456", "S43ANA0M405593", "PHLJ134500AB2P0BGN", "KCM6XRUL3T84", "3DK0A04E0FH8",
    "ca5d7304-9502-4787-bca1-44fe5be80db2", "acmecorp", "192.168.100.10", "192.168.100.5", "10.1.2.3",
    "10.1.2.77", "10.1.3.4", "172.20.3.17", "2001:db8:abcd:12::5", "0c:42:a1:12:34:56",
    "0002c90300a1b2c3", "0002:c903:00a1:b2c3", "c903:00a1:b2c4", "c0a8:6405", "02:c9:03:00:a1:b2:c4",
    "00-11-22-ff-ff-33-44-55", "0025388b91c0b1a3", "3339314130343554333336", "nfs01", "corp.acme.com",
    "fileserver7", "mds01", "gpu-node-017", "alice", "bob", "c83f1955-c0e6-e727-36ed-8eecf4bc1c67", "1653724056222",
]  # fmt: skip
KEPT = [
    "1.7.2.10",
    "0000:3b:00.0",
    "ff:ff:ff:ff:ff:ff",
    "vers=4.2",
    "SAMSUNG MZQLB1T9HAJR-00007",
    "/24",
    "/20",
]


def _sample_capture() -> Capture:
    from gdsdoctor.model import Artifact, ArtifactStatus

    capture = Capture(
        origin="live", host={"hostname": "gpu-node-017", "kernel": "6.8.0"}, label="gpu-node-017"
    )
    capture.options = {"host_root": "/", "target_path": "/home/alice/ckpt/run1"}
    for name, text in SAMPLES.items():
        capture.artifacts[name] = Artifact(name, ArtifactStatus.OK, text.encode(), source=f"cat {name}")
    return capture


def _all_bytes(capture: Capture) -> bytes:
    parts = [a.data + a.source.encode() + a.detail.encode() for a in capture.artifacts.values()]
    parts += [json.dumps(capture.host).encode(), json.dumps(capture.options).encode(), capture.label.encode()]
    return b"\n".join(parts)


def test_identifiers_are_replaced_and_formats_kept() -> None:
    redacted, mapping = redact_capture(_sample_capture())
    everything = _all_bytes(redacted).decode()
    for identifier in IDENTIFIERS:
        assert identifier.lower() not in everything.lower(), identifier
    for kept in KEPT:
        assert kept in everything, kept
    text = {name: a.data.decode() for name, a in redacted.artifacts.items()}
    table = text["nvme-list.txt"].splitlines()
    assert [len(line) for line in table] == [len(line) for line in SAMPLES["nvme-list.txt"].splitlines()]
    assert re.fullmatch(r"nqn\.2014-08\.org\.nvmexpress:uuid:[0-9a-f-]{36}\n", text["hostnqn"])
    assert text["hostnqn"].split(":uuid:")[1] == text["hostid"]  # consistent across artifacts
    assert (
        "nqn.2019-10.com.kioxia:" in text["nvme-id-ctrl.txt"]
        and "nqn.2024-01.com.example:" in text["dmesg.txt"]
    )
    for address in re.findall(r"inet6? (\S+)/", text["ip-addr.txt"]):
        ipaddress.ip_address(address)  # still an address
    guid = re.search(r"Node GUID: 0x([0-9a-f]{16})", text["ibstat.txt"])[1]
    assert guid == re.search(r"node_guid:\s+(\S+)", text["ibv_devinfo.txt"])[1].replace(":", "")
    assert text["ibv_devinfo.txt"].count("fe80:0000:0000:0000:") == 1  # the GID prefix is kept
    assert redacted.host["hostname"] == "host1" and redacted.options["target_path"] == "/home/user1/ckpt/run1"
    assert set(mapping["maps"]) >= {
        "serial",
        "uuid",
        "nqn",
        "ipv4",
        "ipv6",
        "mac",
        "guid",
        "hexid",
        "hostname",
        "user",
    }


def test_short_host_name_is_replaced_in_the_host_summary_only() -> None:
    capture = Capture(origin="live", host={"hostname": "vm"}, label="vm")
    from gdsdoctor.model import Artifact, ArtifactStatus

    capture.artifacts["x"] = Artifact("x", ArtifactStatus.OK, b"vm.dirty_ratio = 20\n")
    redacted, mapping = redact_capture(capture)
    assert redacted.host["hostname"] == redacted.label == "host1" and mapping["maps"]["hostname"] == {
        "vm": "host1"
    }
    assert redacted.artifacts["x"].data == b"vm.dirty_ratio = 20\n"  # "vm" is too common to replace


def test_subnet_relations_are_kept() -> None:
    redactor = Redactor()
    out = {
        a: redactor.text(a)
        for a in [
            "10.1.2.3",
            "10.1.2.77",
            "10.1.3.4",
            "10.2.0.1",
            "192.168.100.5",
            "192.168.100.255",
            "8.8.8.8",
        ]
    }
    net = {a: ipaddress.ip_network(f"{b}/24", strict=False) for a, b in out.items()}
    assert net["10.1.2.3"] == net["10.1.2.77"] != net["10.1.3.4"]
    assert ipaddress.ip_network(f"{out['10.1.2.3']}/16", strict=False) == ipaddress.ip_network(
        f"{out['10.1.3.4']}/16", strict=False
    )
    assert ipaddress.ip_network(f"{out['10.1.2.3']}/16", strict=False) != ipaddress.ip_network(
        f"{out['10.2.0.1']}/16", strict=False
    )
    assert out["10.1.2.3"].startswith("10.") and out["192.168.100.5"].startswith("192.168.")
    assert out["192.168.100.255"].endswith(".255") and out["8.8.8.8"] != "8.8.8.8"
    for kept in ("127.0.0.1", "0.0.0.0", "255.255.255.0", "224.0.0.1"):
        assert redactor.text(kept) == kept


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**32 - 1) | st.integers(0, 255).map(lambda low: 0x0A010200 | low),
)
def test_ipv4_mapping_preserves_prefixes_and_is_one_to_one(a: int, b: int) -> None:
    redactor = Redactor()
    first, second = ipaddress.IPv4Address(a), ipaddress.IPv4Address(b)
    if any(x.is_loopback or x.is_unspecified or x.is_multicast or x.is_reserved for x in (first, second)):
        return
    mapped = [int(ipaddress.IPv4Address(redactor.text(str(x)))) for x in (first, second)]

    def common(x: int, y: int) -> int:
        return 32 - (x ^ y).bit_length()

    assert (a == b) == (mapped[0] == mapped[1])
    assert [v4_kept_bits(ipaddress.IPv4Address(m)) for m in mapped] == [
        v4_kept_bits(first),
        v4_kept_bits(second),
    ]
    if v4_kept_bits(first) == v4_kept_bits(second):  # same kind of address: every prefix kept
        assert min(common(a, b), 24) == min(common(*mapped), 24)
    assert [m & 0xFF for m in mapped] == [a & 0xFF, b & 0xFF]


def _findings(capture: Capture) -> tuple:
    report = analyze_capture(capture).report
    return (
        [(f["id"], f["severity"], f["certainty"], f["explained_by"]) for f in report["findings"]],
        sorted(i["id"] for i in report["inconclusive"]),
        [(p["name"], p["status"]) for p in report["probes"]],
        report["summary"]["status"],
    )


def _no_original_left(capture: Capture, mapping: dict) -> None:
    everything = _all_bytes(capture).decode("utf-8", errors="replace").lower()
    # A random replacement can by chance contain a short original (a 4-digit serial inside a
    # replaced address): blank the replacements out first, so only what was left over counts.
    replacements = sorted({r.lower() for table in mapping["maps"].values() for r in table.values()}, key=len)
    for replacement in reversed(replacements):
        if len(replacement) >= 4:
            everything = everything.replace(replacement, " ")
    for kind, table in mapping["maps"].items():
        for original, replacement in table.items():
            if original.lower() != replacement.lower() and len(original) >= 4:
                assert not re.search(
                    rf"(?<![0-9a-z]){re.escape(original.lower())}(?![0-9a-z])", everything
                ), (kind, original)


def _same_diagnosis(redacted: Capture, capture: Capture) -> bool:
    """The findings of the redacted capture are the original's; True when redaction changed
    something (a capture it left equal, nothing identifying in it, is the same input: its
    findings are the same by construction, so it is not analysed twice)."""
    if redacted == capture:
        return False
    assert _findings(redacted) == _findings(capture)
    return True


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_fixture_gives_the_same_diagnosis_redacted(case: Path) -> None:
    capture = load_inputs(_inputs(case), _expect(case).get("path"))
    redacted, mapping = redact_capture(capture)
    _same_diagnosis(redacted, capture)
    _no_original_left(redacted, mapping)


@pytest.mark.parametrize("path", REFERENCE_FILES, ids=[str(p.relative_to(DATA)) for p in REFERENCE_FILES])
def test_every_reference_file_gives_the_same_diagnosis_redacted(path: Path) -> None:
    capture = capture_files([path])
    redacted, mapping = redact_capture(capture)
    changed = _same_diagnosis(redacted, capture)
    _no_original_left(redacted, mapping)
    if changed and capture.assignments:  # the redacted text is still recognised as the same kind
        copy = capture_files_from_bytes(path.name, redacted.artifacts[path.name].data)
        assert copy.assignments == capture.assignments


def capture_files_from_bytes(name: str, data: bytes) -> Capture:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / name
        target.write_bytes(data)
        return capture_files([target])


HOST_FILES = {
    "proc/mounts": SAMPLES["proc-mounts.txt"] + "/dev/nvme0n1 /mnt/ckpt ext4 rw,data=journal 0 0\n",
    "proc/modules": "nvidia 56737792 1 nvidia_uvm, Live 0xffffffffc0600000 (POE)\n",
    "etc/nvme/hostnqn": SAMPLES["hostnqn"],
    "etc/nvme/hostid": SAMPLES["hostid"],
    "etc/hostname": "gpu-node-017\n",
}


def test_collect_redact_writes_a_clean_bundle_and_a_private_map(tmp_path: Path, isolated_path: Path) -> None:
    from tests.test_hostile_hosts import cli

    host = write_tree(tmp_path / "host", {**THIS_KERNEL, **HOST_FILES})  # this kernel's root: nvme runs
    fake_binary(isolated_path, "nvme", "cat <<'EOF'\n" + SAMPLES["nvme-list.txt"] + "EOF")
    env = {"PATH": str(isolated_path)}
    plain = cli(
        "collect", "-o", str(tmp_path / "plain.tar.gz"), "--host-root", str(host), "--deadline", "20", env=env
    )
    result = cli(
        "collect",
        "--redact",
        "-o",
        str(tmp_path / "b.tar.gz"),
        "--host-root",
        str(host),
        "--deadline",
        "20",
        env=env,
    )
    assert plain.returncode == 0 and result.returncode == 0, result.stderr
    private = tmp_path / "b.tar.gz.redaction-map.json"
    assert stat.S_IMODE(private.stat().st_mode) == 0o600 and "private redaction map" in result.stderr
    mapping = json.loads(private.read_text())
    assert mapping["maps"]["user"] == {"alice": "user1", "bob": "user2"}
    with tarfile.open(tmp_path / "b.tar.gz") as tar:
        names = tar.getnames()
        content = b"\n".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
        manifest = json.loads(tar.extractfile("manifest.json").read())
    assert not any("redaction-map" in n for n in names) and manifest["redacted"] is True
    for identifier in [
        "alice",
        "nfs01",
        "10.1.2.3",
        "ca5d7304-9502-4787-bca1-44fe5be80db2",
        "S4EWNX0R123456",
    ]:
        assert identifier.encode() not in content, identifier
    assert _findings(read_bundle(tmp_path / "b.tar.gz")) == _findings(read_bundle(tmp_path / "plain.tar.gz"))
    again = cli("collect", "--redact", "-o", str(tmp_path / "b.tar.gz"), "--host-root", str(host), env=env)
    assert again.returncode == 3 and "already exists" in again.stderr


def test_redact_command_writes_copies_and_one_map(tmp_path: Path) -> None:
    from tests.test_hostile_hosts import cli

    write_tree(tmp_path, {"mounts.txt": HOST_FILES["proc/mounts"], "ibstat.txt": SAMPLES["ibstat.txt"]})
    missing = cli("redact", str(tmp_path / "mounts.txt"), str(tmp_path / "nope"), env={})
    assert (
        missing.returncode == 3
        and missing.stderr == f"gdsdoctor: {tmp_path / 'nope'}: no such file or directory\n"
    )
    assert not (tmp_path / "mounts.txt.redacted").exists()  # a typo is caught before anything is written
    result = cli("redact", str(tmp_path / "mounts.txt"), str(tmp_path / "ibstat.txt"), env={})
    assert result.returncode == 0, result.stderr
    copy = (tmp_path / "mounts.txt.redacted").read_text()
    assert "alice" not in copy and "10.1.2.3" not in copy and "/mnt/ckpt ext4 rw,data=journal" in copy
    assert stat.S_IMODE((tmp_path / "redaction-map.json").stat().st_mode) == 0o600
    original = _findings(capture_files([tmp_path / "mounts.txt"]))
    assert _findings(capture_files([tmp_path / "mounts.txt.redacted"])) == original
    assert cli("redact", str(tmp_path / "mounts.txt"), env={}).returncode == 3  # never overwrites
