"""Derived GDS facts: data path, cuFile configuration in effect, nvidia-fs state, GPUs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gdsdoctor.facts.derived import gds
from gdsdoctor.pipeline import analyze_paths

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
CASES = ROOT / "fixtures" / "cases"


def derived(*paths: Path) -> dict[str, Any]:
    return analyze_paths(list(paths)).facts["derived"]["gds"]


def src(line: int, artifact: str = "x") -> dict[str, Any]:
    return {"artifact": artifact, "line": line, "text": "..."}


def ok(**section: Any) -> dict[str, Any]:
    return {"status": "ok", **section}


# --- gds_path and nvidia-fs -------------------------------------------------------------------


def test_p2pdma_reference_node() -> None:
    found = derived(*sorted((CASES / "pgstrom-913-p2pdma-reference" / "files").iterdir()))
    assert found["path"] == "p2pdma"
    assert found["p2pdma_configured"] is True
    assert [s["line"] for s in found["path_src"]] == [11, 4]  # the P2PDMA row, then the json key


def test_gdscheck_without_nvidia_fs_is_compat_only() -> None:
    found = derived(DATA / "gdscheck" / "nccl-1637--gdscheck-p.txt")
    assert found["nvidia_fs_loaded"] is False
    assert found["path"] == "compat-only"
    assert found["p2pdma_configured"] is False


def test_healthy_gdscheck_is_nvfs() -> None:
    found = derived(DATA / "gdscheck" / "gdscheck-p.gds-1.14-iommu-disabled.stelline-puget.txt")
    assert (found["nvidia_fs_loaded"], found["nvidia_fs_version"], found["path"]) == (
        True,
        "2.24",
        "nvfs",
    )


def test_trace_log_proves_nvfs_path() -> None:
    found = derived(DATA / "cufile" / "gdsnvfs-078--cufile.log")
    assert found["path"] == "nvfs"
    assert found["compat_in_use"] is None


def test_positive_source_wins_over_an_old_log() -> None:
    facts = {
        "modules": ok(
            names=["nvidia", "nvidia_fs"], by_name={"nvidia_fs": {"name": "nvidia_fs", "src": src(3)}}
        ),
        "cufile_log": ok(entries=[{"kind": "driver_not_loaded", "src": src(9, "cufile.log")}]),
    }
    loaded, provenance = gds.nvidia_fs_loaded(facts)
    assert loaded is True and provenance == [src(3)]


def test_nothing_known_is_none() -> None:
    assert gds.nvidia_fs_loaded({}) == (None, [])
    assert gds.derive({}, {})["path"] is None


# --- cufile_effective -----------------------------------------------------------------------


def test_env_overrides_file_and_is_reported() -> None:
    facts = {
        "cufile_json": ok(
            config={"properties.force_compat_mode": False, "properties.allow_compat_mode": True},
            items=[{"key": "properties.force_compat_mode", "value": False, "src": src(12, "cufile.json")}],
        ),
        "cufile_env": ok(
            items=[{"name": "CUFILE_FORCE_COMPAT_MODE", "value": "true", "src": src(2, "env.txt")}]
        ),
    }
    effective = gds.cufile_effective(facts)
    assert effective["values"]["properties.force_compat_mode"] is True
    assert effective["sources"] == {
        "properties.force_compat_mode": "env",
        "properties.allow_compat_mode": "default",
    }
    assert effective["env_overrides"] == [
        {
            "key": "properties.force_compat_mode",
            "env": "CUFILE_FORCE_COMPAT_MODE",
            "env_value": True,
            "file_value": False,
            "src": src(2, "env.txt"),
        }
    ]


def test_gdscheck_reading_beats_the_file_and_env_agreeing_is_no_override() -> None:
    facts = {
        "cufile_json": ok(config={"properties.use_pci_p2pdma": False}, items=[]),
        "gdscheck": ok(
            config_items=[{"json_key": "properties.use_pci_p2pdma", "value": True, "src": src(30, "g.txt")}],
            environment={"CUFILE_USE_PCIP2PDMA": "1"},
        ),
    }
    effective = gds.cufile_effective(facts)
    assert effective["values"]["properties.use_pci_p2pdma"] is True
    assert effective["sources"]["properties.use_pci_p2pdma"] == "env"
    assert effective["env_overrides"] == []


@pytest.mark.parametrize(("size", "misaligned"), [(16384, False), (1000, True), (None, None), ("x", None)])
def test_direct_io_alignment(size: Any, misaligned: bool | None) -> None:
    assert gds._misaligned(size) is misaligned


# --- versions, kernels, GPUs, platform -------------------------------------------------------


@pytest.mark.parametrize(
    ("release", "needed"),
    [("6.5.0-17-generic", "2.19.6"), ("6.18.8-9.213.amzn2023.aarch64", "2.29"), ("5.15.0-105-generic", None)],
)
def test_min_nvidia_fs_for_kernel(release: str, needed: str | None) -> None:
    assert gds.min_nvidia_fs_for_kernel(release) == needed


def test_kernel_gap_from_a_dkms_build_log() -> None:
    gap = derived(DATA / "nvidia_fs" / "gdsnvfs-035--dkms-make.log")["nvidia_fs_kernel_gap"]
    assert {k: gap[k] for k in ("kernel", "nvidia_fs_version", "needed")} == {
        "kernel": "6.5.0-17-generic",
        "nvidia_fs_version": "2.18.3",
        "needed": "2.19.6",
    }
    assert gap["src"]["line"] == 1


def test_no_gap_when_the_release_is_new_enough() -> None:
    facts = {"nvidia_fs_build": ok(kernel="6.8.0-60-generic", version="2.24.3", src={})}
    assert gds.nvidia_fs_kernel_gap(facts) is None


@pytest.mark.parametrize(
    ("name", "consumer"),
    [
        ("NVIDIA GeForce RTX 4090", True),
        ("NVIDIA RTX 3090", True),
        ("NVIDIA TITAN RTX", True),
        ("NVIDIA RTX 6000 Ada Generation", False),
        ("NVIDIA RTX A5000", False),
        ("Quadro RTX 8000", False),
        ("NVIDIA H200", False),
    ],
)
def test_consumer_gpu_names(name: str, consumer: bool) -> None:
    assert bool(gds.CONSUMER_GPU.search(name)) is consumer


def test_gpus_from_nvidia_smi_with_bar1_use() -> None:
    gpus = derived(DATA / "gpu" / "nvidia-smi-q.h100-hgx.535.161.08.gpu0.txt")["gpus"]
    assert len(gpus) == 1
    assert gpus[0]["bar1_bytes"] == 131072 * 1024 * 1024
    assert gpus[0]["bar1_used_pct"] == 0.0
    assert gpus[0]["consumer"] is False and gpus[0]["source"] == "nvidia-smi"


def test_old_architecture_is_unsupported() -> None:
    found = derived(DATA / "gdscheck" / "gdscheck-p.gds-0.9-beta.gds-matrix.txt")
    assert [g["name"] for g in found["unsupported_gpus"]] == ["Quadro K1200"]
    assert found["unsupported_gpus"][0]["src"]["line"] == 16


def test_wsl_and_rdma_mounts() -> None:
    facts = {
        "kernel": ok(release="5.15.153.1-microsoft-standard-WSL2", is_wsl=True),
        "mounts": ok(
            mounts=[
                {"mountpoint": "/mnt/weka", "fstype": "wekafs", "opts": {}},
                {"mountpoint": "/mnt/vast", "fstype": "nfs4", "opts": {"proto": "rdma"}},
                {"mountpoint": "/mnt/nfs", "fstype": "nfs4", "opts": {"proto": "tcp"}},
            ]
        ),
    }
    found = gds.derive(facts, {})
    assert found["is_wsl"] is True
    assert [m["mountpoint"] for m in found["rdma_fs_mounts"]] == ["/mnt/weka", "/mnt/vast"]
    assert [m["mountpoint"] for m in found["userspace_rdma_fs_mounts"]] == ["/mnt/weka"]
    assert gds.is_wsl({}) is None


def test_rdma_addresses_from_every_place_cufile_reads_them() -> None:
    values = {
        "properties.rdma_dev_addr_list": [],
        "fs.gpfs.rdma_dev_addr_list": ["172.16.8.11"],
        "fs.lustre.mount_table": {"/mnt/l": {"rdma_dev_addr_list": ["172.16.9.1", " "]}},
        "fs.weka.rdma_write_support": False,
    }
    assert gds.rdma_dev_addrs(values) == ["172.16.8.11", "172.16.9.1"]
