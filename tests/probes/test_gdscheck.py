from __future__ import annotations

import contextlib

import pytest
from gds_samples import KINDS, others, read
from hypothesis import given, settings
from hypothesis import strategies as st

from gdsdoctor.errors import ParseError
from gdsdoctor.probes import gdscheck

ART = "cmd/gdscheck-p.txt"


def parsed(name: str) -> dict:
    return gdscheck.parse(read(f"gdscheck/{name}"), ART)


def test_gds_1_14_full_output() -> None:
    facts = parsed("gdscheck-p.gds-1.14-iommu-disabled.stelline-puget.txt")
    header = facts["header"]
    assert header["gds_version"] == "1.14.0.30"
    assert header["nvidia_fs_version"] == "2.24"
    assert header["libcufile_version"] == "2.12"
    assert header["arch"] == "x86_64"
    assert header["src"]["gds_version"]["line"] == 2
    assert facts["nvidia_fs_loaded"] is True
    names = [b["name"] for b in facts["backends"]]
    assert names[:3] == ["NVMe P2PDMA", "NVMe", "NVMeOF"]
    assert "ScaTeFS" in names
    assert facts["by_backend"]["NVMe"]["supported"] is True
    assert facts["by_backend"]["NVMe"]["direct"] is True
    assert facts["by_backend"]["NVMe P2PDMA"]["supported"] is False
    assert facts["by_backend"]["NVMe"]["src"]["line"] == 12
    assert facts["rdma"]["peer_direct"] is True
    assert facts["rdma"]["library_loaded"] is False
    assert facts["rdma"]["devices_configured"] is False
    assert (facts["rdma"]["devices_up"], facts["rdma"]["devices_down"]) == (0, 0)
    config = facts["config"]
    assert config["properties.allow_compat_mode"] is False  # printed as use_compat_mode
    assert config["properties.use_pci_p2pdma"] is False
    assert config["properties.max_direct_io_size_kb"] == 16384
    assert config["properties.posix_pool_slab_size_kb"] == [4, 1024, 16384]
    assert config["properties.rdma_dynamic_routing"] is False  # printed as 0
    assert config["properties.rdma_load_balancing_policy"] == "RoundRobin"
    assert config["fs.lustre.posix_gds_min_kb"] == 0  # "key: value" without the space
    assert config["execution.parallel_io"] is True
    item = next(i for i in facts["config_items"] if i["key"] == "properties.use_compat_mode")
    assert item["json_key"] == "properties.allow_compat_mode"
    assert item["src"]["line"] == 32
    assert len(facts["gpus"]) == 2
    gpu = facts["gpus"][1]
    assert gpu["index"] == 1
    assert gpu["name"] == "NVIDIA RTX 6000 Ada Generation"
    assert gpu["bar_size"] == 65536 * 1024 * 1024
    assert gpu["supports_gds"] is True
    assert gpu["iommu_enabled"] is False
    platform = facts["platform"]
    assert platform["iommu_enabled"] is False
    assert platform["open_driver"] is True
    assert platform["cuda_driver_version"] == 12090
    assert platform["name"] == "Puget Rackstation Threadripper PRO WRX90 T141-4U"
    assert platform["arch"] == "x86_64"
    assert platform["kernel"] == "6.8.0-60-generic"
    assert platform["verified"] is True
    assert facts["messages"] == []
    assert facts["layout"] == "classic"
    assert facts["truncated"] is False


def test_missing_nvidia_fs_line_means_not_loaded() -> None:
    facts = parsed("nccl-1637--gdscheck-p.txt")
    assert facts["header"]["gds_version"] == "1.13.1.3"
    assert facts["header"]["nvidia_fs_version"] is None
    assert facts["nvidia_fs_loaded"] is False
    assert all(not b["supported"] for b in facts["backends"])
    assert facts["config"]["properties.allow_compat_mode"] is True
    assert facts["truncated"] is True
    # the line cut by the excerpt marker is dropped rather than read as a wrong value
    assert "properties.posix_pool_slab_size_kb" not in facts["config"]


def test_headerless_excerpt_leaves_loaded_unknown() -> None:
    facts = parsed("dali-4771--gdscheck-p.txt")
    assert facts["nvidia_fs_loaded"] is None
    assert facts["by_backend"]["NVMe"]["supported"] is False
    assert facts["rdma"]["peer_direct"] is False
    assert facts["environment"] == {}
    assert "properties.max_direct_io_size_kb" not in facts["config"]  # "163" was cut


def test_rows_only_excerpt() -> None:
    facts = parsed("gdsnvfs-004--gdscheck-p.txt")
    assert [b["name"] for b in facts["backends"]][:2] == ["NVMe", "NVMeOF"]
    assert facts["backends"][0]["src"]["line"] == 1
    assert len(facts["backends"]) == 10


def test_gds_1_0_header_and_supported_nvme() -> None:
    facts = parsed("gdsnvfs-004--gdscheck-p.helper-working-reference.txt")
    assert facts["header"]["gds_version"] == "1.0.1.3"
    assert facts["header"]["nvidia_fs_version"] == "2.7"
    assert facts["header"]["libcufile_version"] == "2.4"
    assert facts["header"]["arch"] is None
    assert facts["by_backend"]["NVMe"]["supported"] is True
    assert facts["by_backend"]["NVMeOF"]["supported"] is True


def test_rdma_configured_after_fix() -> None:
    before = parsed("gdsnvfs-074--gdscheck-p.before.txt")
    after = parsed("gdsnvfs-074--gdscheck-p.after.txt")
    assert before["rdma"]["library_loaded"] is False
    assert before["by_backend"]["Userspace RDMA"]["supported"] is False
    assert after["rdma"]["library_loaded"] is True
    assert after["rdma"]["devices_configured"] is True
    assert after["rdma"]["devices_up"] == 8
    assert after["by_backend"]["Userspace RDMA"]["supported"] is True
    assert after["by_backend"]["NFS"]["supported"] is True
    assert after["header"]["gds_version"] == "1.13.0.11"


def test_p2pdma_supported_and_elision_lines() -> None:
    facts = parsed("pgstrom-913--gdscheck-p.txt")
    assert facts["by_backend"]["NVMe P2PDMA"]["supported"] is True
    assert facts["header"]["nvidia_fs_version"] == "2.24"
    assert facts["messages"] == []


def test_gdscheck_py_wrapper_and_blank_lines() -> None:
    facts = parsed("gdsnvfs-026--gdscheck-p.txt")
    assert facts["header"]["gds_version"] == "1.7.2.10"
    assert facts["header"]["nvidia_fs_version"] == "2.17"
    assert facts["by_backend"]["NFS"]["supported"] is True
    assert facts["rdma"]["peer_direct"] is True


def test_other_excerpts() -> None:
    assert parsed("gdsnvfs-070--gdscheck-p.txt")["header"]["gds_version"] == "1.15.1.6"
    assert parsed("gdsnvfs-070--gdscheck-p.txt")["by_backend"]["NVMe P2PDMA"]["supported"] is False
    assert parsed("gdsnvfs-008--gdscheck-p.txt")["config"]["properties.max_device_cache_size_kb"] == 131072
    pytorch = parsed("pytorch-rfcs--gdscheck-p.txt")  # first line "enabled: ============"
    assert pytorch["by_backend"]["NVMe"]["supported"] is False
    assert pytorch["config"]["properties.io_batchsize"] == 128


def test_gds_0_9_beta_failure() -> None:
    facts = parsed("gdscheck-p.gds-0.9-beta.gds-matrix.txt")
    assert facts["layout"] == "beta"
    assert facts["header"]["gds_beta"] is True
    assert facts["header"]["gds_version"] == "0.9.1.5"
    assert facts["rdma"]["peer_direct"] is True  # "--MOFED peer direct  : enabled"
    assert facts["by_backend"]["USERSPACE RDMA"]["supported"] is False
    assert facts["config"]["properties.allow_compat_mode"] is True  # printed as 1
    assert facts["gpus"][0]["name"] == "Quadro K1200"
    assert facts["gpus"][0]["supports_gds"] is False
    assert facts["gpus"][0]["compute_capability"] == 5
    kinds = [m["kind"] for m in facts["messages"]]
    assert kinds[:3] == ["unsupported_gpu_arch", "no_supported_gpu", "platform_verification_failed"]
    assert "cufile_init_failed" in kinds
    assert facts["platform"]["verified"] is False


def test_gds_1_16_modes() -> None:
    facts = parsed("gdscheck-p.gds-1.16-modes.gds-matrix.txt")
    assert facts["layout"] == "modes"
    assert facts["header"]["nvidia_fs_min_version"] == "2.12"
    assert facts["nvidia_fs_loaded"] is False
    nvme = facts["by_backend"]["NVMe"]
    assert nvme["modes"] == ["compat"]
    assert nvme["supported"] is True
    assert nvme["direct"] is False
    assert facts["environment"] == {"CUFILE_LOGGING_LEVEL": "TRACE"}
    assert facts["gpus"][0]["bar_size"] == 131072 * 1024 * 1024
    assert facts["platform"]["cuda_driver_version"] == 12080


def test_mode_list_row() -> None:
    facts = gdscheck.parse(" GDS release version: 1.16.0.49\n NVMe : nvfs, p2pdma, compat\n", ART)
    nvme = facts["by_backend"]["NVMe"]
    assert nvme["modes"] == ["nvfs", "p2pdma", "compat"]
    assert nvme["direct"] is True


def test_version_only_output() -> None:
    text = (
        "$ gdscheck -v\n GDS release version: 1.13.1.3\n nvidia_fs version:  2.24 libcufile version: 2.12\n"
    )
    assert gdscheck.recognise(text)
    facts = gdscheck.parse(text, ART)
    assert facts["header"]["gds_version"] == "1.13.1.3"
    assert facts["nvidia_fs_loaded"] is True
    assert facts["backends"] == []


@pytest.mark.parametrize("path", KINDS["gdscheck"], ids=lambda p: p.name)
def test_recognises_every_sample(path) -> None:
    assert gdscheck.recognise(path.read_text())


@pytest.mark.parametrize("path", others("gdscheck"), ids=lambda p: p.name)
def test_rejects_other_sources(path) -> None:
    assert not gdscheck.recognise(path.read_text())


def test_rejects_garbage() -> None:
    with pytest.raises(ParseError):
        gdscheck.parse("hello world\nnothing here\n", ART)
    with pytest.raises(ParseError):
        gdscheck.parse("", ART)


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(KINDS["gdscheck"]),
    st.integers(min_value=0, max_value=5000),
    st.lists(st.integers(min_value=0, max_value=80), max_size=8),
)
def test_never_crashes_on_mutated_samples(path, cut: int, drops: list[int]) -> None:
    lines = path.read_text()[:cut].split("\n")
    text = "\n".join(line for i, line in enumerate(lines) if i not in drops)
    with contextlib.suppress(ParseError):
        gdscheck.parse(text, ART)
