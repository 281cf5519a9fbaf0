"""Fleet summaries a new user reads (issue 12): nodes named by host and bundle file, also in
the text and after merges of merges; the worst groups first; counts in correct English."""

from __future__ import annotations

import json
from pathlib import Path

from gdsdoctor.capture.bundle import write_bundle
from gdsdoctor.commands import fleet
from tests.test_fleet import JOURNAL, LSMOD_GDS, LSMOD_NO_GDS, ORDERED, node_capture, validate_fleet


def _vm_bundles(root: Path, count: int, offset: int = 0) -> list[Path]:
    """Bundles of VMs that all call themselves `vm` (the default of many images)."""
    root.mkdir(parents=True, exist_ok=True)
    mounts = [ORDERED, JOURNAL]
    return [
        write_bundle(node_capture("vm", mounts[i % 2], LSMOD_GDS), root / f"node{i + offset}.tar.gz")
        for i in range(count)
    ]


def test_nodes_of_one_host_name_are_named_by_bundle_file_across_merges(tmp_path: Path) -> None:
    shards = [
        json.loads(json.dumps(fleet.analyse_fleet(_vm_bundles(tmp_path / f"s{s}", 3, 3 * s), jobs=1)))
        for s in range(4)
    ]
    merged = fleet.merge([fleet.merge(shards[:2]), fleet.merge(shards[2:]), shards[1]])
    names = [n["name"] for n in validate_fleet(merged)["nodes"]]
    assert sorted(names) == sorted(f"vm (node{i}.tar.gz)" for i in range(12))
    assert merged == fleet.merge(shards)
    text = fleet.render(merged, "text")
    assert "vm (node10.tar.gz)" in text and "#" not in text


def test_records_of_older_summaries_lose_their_counters(tmp_path: Path) -> None:
    summary = fleet.analyse_fleet(_vm_bundles(tmp_path, 2), jobs=1)
    old = [{k: v for k, v in n.items() if k != "host"} for n in summary["nodes"]]
    old[0]["name"], old[1]["name"] = "vm#10#2", "vm#3"
    assert sorted(n["name"] for n in fleet.summarise(old)["nodes"]) == [
        "vm (node0.tar.gz)",
        "vm (node1.tar.gz)",
    ]


def test_groups_worst_first_and_counts_in_english(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    healthy = [write_bundle(node_capture(f"ok{i}", ORDERED), tmp_path / f"ok{i}.tar.gz") for i in range(3)]
    broken = write_bundle(node_capture("bad", ORDERED, LSMOD_NO_GDS), tmp_path / "bad.tar.gz")
    summary = fleet.analyse_fleet([*healthy, broken], jobs=1)
    assert [g["status"] for g in summary["groups"]] == ["CRITICAL", "OK"]
    text = fleet.render(summary, "text")
    assert text.index("CRITICAL  nvidia-fs-not-loaded: bad") < text.index("OK  no finding: ok0, ok1, ok2")
    single = fleet.render(fleet.analyse_fleet(healthy[:1], jobs=1), "text")
    assert "(1 group, worst first)" in single and "fleet of 1 node:" in single
    assert "1 groups" not in single and "1 nodes" not in single
    assert "(2 groups, worst first)" in text
