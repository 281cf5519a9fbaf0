"""Facts from a real GPU node: the bundle `gdsdoctor collect` wrote on a lent H200 machine
(fixtures/h200-node-without-nvidia-fs). The only real GPU node we could reach; what it says
is checked value by value."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor.pipeline import analyze_paths

BUNDLE = Path(__file__).resolve().parents[1] / "fixtures/h200-node-without-nvidia-fs/bundle"


@pytest.fixture(scope="module")
def facts() -> dict:
    return analyze_paths([BUNDLE]).facts


def test_gpu_facts(facts: dict) -> None:
    smi = facts["nvidia_smi"]
    assert smi["status"] == "ok" and smi["driver_version"] == "580.159.04"
    gpu = smi["gpus"][0]
    assert gpu["product_name"] == "NVIDIA H200"
    assert gpu["bar1_total_mib"] == 262144
    assert facts["nvidia_driver"]["open"] is True and facts["nvidia_driver"]["version"] == "580.159.04"
    topo = facts["nvidia_topo"]
    assert [g["name"] for g in topo["gpus"]] == ["GPU0"] and topo["has_gpu_numa_id"] is True


def test_platform_facts(facts: dict) -> None:
    assert facts["kernel"]["release"].startswith("6.18.44")
    assert "nvidia_fs" not in facts["modules"]["names"] and "nvidia" in facts["modules"]["names"]
    assert any(d["kind"] == "gpu" and d["vendor"] == "0x10de" for d in facts["pci"]["devices"])
    assert facts["derived"]["nvidia_present"] is True
    assert facts["cufile_json"]["file"]["exists"] is True
    assert facts["cmdline"]["params"]["pci"] == "realloc=off"


def test_live_and_offline_agree_on_that_node() -> None:
    # The device run compared `check` with `analyze` of the bundle on the node itself
    # (same findings); here the bundle alone must still give the documented diagnosis: a node
    # that does not use GDS (the cufile.json CUDA ships, no nvidia-fs anywhere) is OK and says
    # so; the site saying it does use GDS makes the missing module its first finding.
    report = analyze_paths([BUNDLE]).report
    assert report["summary"]["status"] == "OK" and report["intent"]["gds"]["state"] == "unused"
    assert report["summary"]["not_used"][0]["line"].startswith("GDS is not set up on this node")
    assert report["source"]["notes"] == []
    stated = analyze_paths([BUNDLE], site={"node": {"gds": "required"}}).report
    assert stated["findings"][0]["id"] == "nvidia-fs-not-loaded" and stated["summary"]["status"] == "CRITICAL"
