"""`gdsdoctor topo`: the tree drawn from sysfs, lspci and nvidia-smi topo, its flags, and escaping."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gdsdoctor.commands import topology_view as topo
from gdsdoctor.facts.document import build_facts
from gdsdoctor.pipeline import load_inputs

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
DATA = REPO / "tests" / "data"


def topology(*paths: Path) -> topo.Topology:
    return topo.build(build_facts(load_inputs(list(paths))))


def test_sysfs_tree_sockets_switch_devices_and_mounts() -> None:
    found = topology(FIXTURES / "topo-sysfs-two-socket-iommu" / "bundle")
    text = topo.render_text(found)
    assert text.splitlines()[:3] == ["host (from sysfs)", "  IOMMU: translated",
                                     "  ! IOMMU translates DMA: GPUDirect P2P through a root complex fails or slows"]  # fmt: skip
    assert "├── NUMA node 0" in text and "└── NUMA node 1" in text
    assert "│               │   └── NVMe nvme0 0000:18:00.0 — Micron_7450  16 GT/s x4" in text
    assert "nvme0n1 15.0 TiB → /mnt/ckpt" in text  # the size from the NVMe sysfs tree
    assert "NIC mlx5_0 0000:1a:00.0 [ens1np0]  32 GT/s x16" in text
    assert (
        "GPU 0000:9a:00.0 (NUMA 1): nvme0 — across CPU sockets (SYS); mlx5_0 — across CPU sockets (SYS)"
        in text
    )
    assert "  ! GPU 0000:9a:00.0: nearest nvme0 is across CPU sockets (SYS)" in text
    assert "GPU 0000:19:00.0 (NUMA 0): nvme0 — same PCIe switch (PIX)" in text


def test_balanced_node_has_no_problems_and_idle_gpu_is_not_flagged(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the device's label and details on one line
    found = topology(FIXTURES / "topo-sysfs-two-socket-balanced" / "bundle")
    assert found.problems == []
    text = topo.render_text(found)
    assert "link slowed at idle (power saving, not a fault)" in text
    assert text.rstrip().endswith("Problems:\n  none seen")


def test_degraded_link_is_flagged_on_its_device() -> None:
    text = topo.render_text(topology(FIXTURES / "topo-sysfs-degraded-links" / "bundle"))
    assert "NVMe nvme0 0000:18:00.0 — Micron_7450  8 GT/s x2 (max 16 GT/s x4)" in text
    assert "! degraded link: nvme0 (0000:18:00.0): 8.0 GT/s x2, both ends support 16.0 GT/s x4" in text


def test_acs_redirect_on_the_path_is_flagged_on_the_bridge() -> None:
    found = topology(*sorted((FIXTURES / "pci-acs-redirect-plx-switch" / "files").iterdir()))
    assert found.source == "lspci"
    flagged = [n.label for n in topo.walk(found.root) if n.flags]
    assert [label.split()[0] for label in flagged] == ["0000:17:00.0", "0000:17:01.0", "0000:17:02.0"]
    assert "0000:16:00.0 switch — Broadcom / LSI PEX890xx PCIe Gen 5 Switch" in topo.render_text(found)


def test_nvidia_topo_only_gives_relations_without_a_tree() -> None:
    found = topology(DATA / "bench" / "nvidia-smi-topo.gdsnvfs-030.txt")
    assert found.root.children == []
    assert [g["nic"] for g in found.gpus] == ["NIC0 — across CPU sockets (SYS)"] * 2
    markdown = topo.render_markdown(found)
    assert "## Problems" in markdown and "- **GPU0: nearest NIC0 is across CPU sockets (SYS)**" in markdown


def test_json_is_the_model() -> None:
    found = topology(FIXTURES / "topo-sysfs-two-socket-iommu" / "bundle")
    document = json.loads(topo.render_json(found))
    assert document["source"] == "pci" and document["tree"]["children"][0]["label"] == "NUMA node 0"
    assert len(document["gpus"]) == 2


def test_host_strings_are_escaped_in_every_form() -> None:
    hostile = topo.Topology(
        "pci",
        topo.Node("host", details=["[bold red]x[/]"], children=[topo.Node("GPU \x1b[31mred\x1b[0m", flags=["bad\rline"])]),
        [{"gpu": "GPU [link=http://x]", "numa_node": None, "nvme": None, "nic": None, "problems": []}],
        ["[blink]p[/blink] \x1b]8;;x\x07"],
    )  # fmt: skip
    for rendered in (
        topo.render_text(hostile),
        topo.render_markdown(hostile),
        topo.render_rich(hostile, True),
    ):
        assert "\x1b[31m" not in rendered and "\x1b]8" not in rendered and "\r" not in rendered
    rich_text = topo.render_rich(hostile, color=False)
    assert (
        "[bold red]x[/]" in rich_text
        and "[blink]p[/blink]" in rich_text
        and "GPU [link=http://x]" in rich_text
    )


def test_cli_topo_on_pasted_files_as_markdown() -> None:
    files = sorted(str(p) for p in (FIXTURES / "numa-topo-asus-nics-node" / "files").iterdir())
    result = subprocess.run(
        [sys.executable, "-m", "gdsdoctor", "topo", *files, "--format", "markdown"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )  # fmt: skip
    assert result.returncode == 1, result.stderr  # GPUs reach their drive through the root complex
    assert result.stdout.startswith("## PCIe topology")
    assert (
        "GPU 0000:01:00.0 — NVIDIA Corporation AD102GL [RTX 6000 Ada Generation]" in result.stdout
    )  # tree names
    assert "NVMe 0000:02:00.0" in result.stdout and "through the root complex" in result.stdout


def test_live_topo_reads_a_host_root(tmp_path: Path) -> None:
    sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "probes")]
    import topology_trees
    from fake_sysfs import FakeSysfs

    topology_trees.two_socket_balanced(FakeSysfs(tmp_path))
    found = topo.topology_of([], host_root=tmp_path)
    assert found.source == "pci" and found.problems == []
    assert [node.label for node in found.root.children] == ["NUMA node 0", "NUMA node 1"]
    assert {g["nvme"] for g in found.gpus} == {
        "nvme0 — same PCIe switch (PIX)",
        "nvme1 — same PCIe switch (PIX)",
    }


def test_nic_behind_a_slower_pcie_link_is_flagged() -> None:
    found = topology(FIXTURES / "pci-sysfs-nic-400g-in-gen4-slot" / "bundle")
    assert "0000:42:00.0: PCIe 16 GT/s x16 carries ~214.3 Gb/s for a 400 Gb/s port" in found.problems
