"""Identities that must differ between nodes (issue 23 items 2, 5): one host NQN on several
nodes (a cloned image), one NVMe namespace mounted read-write with XFS on several nodes. The
nodes are bundles made from the edited libnvme sysfs tree of the NVMe/RDMA fixtures (its
namespace given an NGUID) and the hostnqn format of nvme-cli."""

from __future__ import annotations

import json
from pathlib import Path

from gdsdoctor.capture.bundle import write_bundle
from gdsdoctor.capture.capture import Capture
from gdsdoctor.commands import fleet, fleet_conflicts
from gdsdoctor.model import Artifact, ArtifactStatus
from tests.test_fleet import validate_fleet

SYSFS = Path(__file__).parents[1] / "fixtures" / "nvmeof-sysfs-rdma-healthy" / "files" / "nvme-sysfs.json"
NGUID = "5f3c2a1b9e8d7c6b0011223344556677"


def node(root: Path, name: str, hostnqn: str, mount_options: str, nguid: str = NGUID) -> Path:
    tree = json.loads(SYSFS.read_text())
    tree["block"]["nvme1n1"]["nguid"] = nguid
    capture = Capture(origin="live", host={"hostname": name}, label=name)
    files = {
        "mounts": ("proc/mounts", f"/dev/nvme1n1 /mnt/ckpt xfs {mount_options} 0 0\n", "/proc/mounts"),
        "nvme_sysfs": ("sys/nvme-sysfs.json", json.dumps(tree), "(reads sys/nvme-sysfs.json)"),
        "nvme_hostnqn": ("etc/nvme/hostnqn", hostnqn + "\n", "/etc/nvme/hostnqn"),
    }
    for section, (artifact, text, source) in files.items():
        capture.add(section, Artifact(artifact, ArtifactStatus.OK, text.encode(), source=source))
    return write_bundle(capture, root / f"{name}.tar.gz")


CLONED = "nqn.2014-08.org.nvmexpress:uuid:717a9176-ac73-4ea3-829e-e4ccf0b5735f"


def test_a_shared_namespace_and_a_cloned_hostnqn_are_conflicts(tmp_path: Path) -> None:
    paths = [
        node(tmp_path, "gpu001", CLONED, "rw,noatime"),
        node(tmp_path, "gpu002", CLONED, "rw,noatime"),
        node(tmp_path, "gpu003", CLONED.replace("717a", "9c01"), "rw,noatime", nguid="0" * 31 + "9"),
    ]
    summary = validate_fleet(fleet.analyse_fleet(paths, jobs=1))
    rows = {row["key"]: row for row in summary["conflicts"]}
    assert rows["rw_local_namespace"]["nodes"] == ["gpu001", "gpu002"]
    assert rows["rw_local_namespace"]["severity"] == "critical"
    assert rows["nvme_hostnqn"]["value"] == CLONED and rows["nvme_hostnqn"]["count"] == 2
    assert summary["summary"]["status"] == "CRITICAL"  # whatever each node says alone
    text = fleet.render(summary, "text")
    assert "Shared identities" in text and "rw_local_namespace" in text


def test_a_namespace_mounted_read_only_elsewhere_is_no_conflict() -> None:
    nodes = [
        {"name": "a", "identity": {"rw_local_namespace": [f"{NGUID} xfs"], "nvme_hostnqn": ["nqn.x:a"]}},
        {"name": "b", "identity": {"nvme_hostnqn": ["nqn.x:b"]}},  # its mount is ro: no rw id
    ]
    assert fleet_conflicts.conflicts(nodes) == []


def test_identity_of_reads_the_derived_facts() -> None:
    facts = {"derived": {"fabrics": {
        "host_identity": {"hostnqn": "nqn.x:a", "hostid": None, "connected_hostnqns": ["nqn.x:a", "nqn.x:b"],
                          "connected_hostids": []},
        "local_fs_namespaces": [{"id": NGUID, "fstype": "xfs"}]}}}  # fmt: skip
    assert fleet_conflicts.identity_of(facts) == {
        "nvme_hostnqn": ["nqn.x:a", "nqn.x:b"],
        "rw_local_namespace": [f"{NGUID} xfs"],
    }
    assert fleet_conflicts.identity_of({}) == {}
