"""What must differ between the nodes of a fleet and does not: identities one node's analysis
cannot judge (issue 23 items 2 and 5).

A node's record keeps, per key below, the values its facts hold (``identity``); the summary
lists every value that more than one node holds (``conflicts``), with the key's severity:

- ``nvme_hostnqn`` / ``nvme_hostid``: /etc/nvme/hostnqn and hostid, or what the live
  controllers were connected with. Two nodes with one host NQN (a cloned image) look like one
  host to the target: its access list cannot tell them apart, and a target that keeps one
  association per host NQN drops the first node's controllers when the second connects.
- ``rw_local_namespace``: the NGUID/UUID/WWID of an NVMe namespace under a read-write mount of a
  local filesystem (XFS, ext4, …). Two kernels writing one XFS or ext4 with no knowledge of each
  other corrupt it silently; these are not cluster filesystems.

Pure: the records are the fleet's mergeable part, so a merge of shards finds the same conflicts.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from jmespath.exceptions import JMESPathError

from gdsdoctor.engine.functions import search

# key -> (JMESPath over the facts, severity, what a shared value means)
UNIQUE_KEYS: dict[str, tuple[str, str, str]] = {
    "nvme_hostnqn": (
        "[derived.fabrics.host_identity.hostnqn, derived.fabrics.host_identity.connected_hostnqns[]][]",
        "warning",
        "one NVMe-oF host NQN on several nodes (a cloned image): the target cannot tell them apart",
    ),
    "nvme_hostid": (
        "[derived.fabrics.host_identity.hostid, derived.fabrics.host_identity.connected_hostids[]][]",
        "warning",
        "one NVMe-oF host ID on several nodes (a cloned image)",
    ),
    "rw_local_namespace": (
        "derived.fabrics.local_fs_namespaces[].join(' ', [id, fstype])",
        "critical",
        "one NVMe namespace mounted read-write with a local filesystem on several nodes: being corrupted",
    ),
}
STATUS_OF = {"critical": "CRITICAL", "warning": "WARNING"}


def identity_of(facts: dict[str, Any]) -> dict[str, list[str]]:
    """Per key, the sorted distinct values this node holds (empty keys left out)."""
    found: dict[str, list[str]] = {}
    for key, (expression, _, _) in UNIQUE_KEYS.items():
        try:
            values = search(expression, {"derived": facts.get("derived") or {}})
        except (JMESPathError, TypeError, ValueError):
            continue
        distinct = sorted({str(v) for v in values or [] if v not in (None, "")})
        if distinct:
            found[key] = distinct
    return found


def conflicts(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every value of a unique key that two or more nodes hold, critical first."""
    holders: dict[tuple[str, str], list[str]] = defaultdict(list)
    hosts: dict[tuple[str, str], set[str]] = defaultdict(set)
    for node in nodes:
        for key, values in (node.get("identity") or {}).items():
            for value in values:
                holders[(key, value)].append(node["name"])
                hosts[(key, value)].add(str(node.get("host") or "").lower() or node["name"])
    rows = []
    for (key, value), names in sorted(holders.items()):
        # two captures of one host (before and after a change) hold its identity twice: that
        # is one node, not a cloned image
        if len(names) < 2 or len(hosts[(key, value)]) < 2 or key not in UNIQUE_KEYS:
            continue
        _, severity, meaning = UNIQUE_KEYS[key]
        rows.append({"key": key, "value": value, "severity": severity, "meaning": meaning,
                     "count": len(names), "nodes": sorted(names)})  # fmt: skip
    return sorted(rows, key=lambda r: (r["severity"] != "critical", r["key"], r["value"]))
