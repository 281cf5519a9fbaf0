from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest
from gds_samples import KINDS, others, read
from hypothesis import given, settings
from hypothesis import strategies as st

from gdsdoctor.errors import ParseError, Unavailable
from gdsdoctor.probes import nvidia_fs

MIB = 1024 * 1024


def test_stats_gds_0_9_with_rw_stats() -> None:
    text = read("nvidia_fs/proc-driver-nvidia-fs-stats.gds-0.9.nvidia-gds-config-guide.txt")
    facts = nvidia_fs.parse_stats(text, "proc/driver/nvidia-fs/stats")
    assert facts["gds_version"] == "0.9.0.743"
    assert facts["stats_version"] == "2.0"
    assert facts["driver_version"] == "2.3.1"
    assert facts["active_shadow_buffer"] == 128 * MIB
    assert facts["active_processes"] == 1
    assert facts["rw_stats_enabled"] is True
    reads = facts["counters"]["reads"]
    assert reads["n"] == 424436862
    assert reads["read_bytes"] == 21518771 * MIB
    assert reads["bandwidth_mib_s"] == 13081
    assert reads["avg_latency_usec"] == 9773
    assert facts["counters"]["writes"]["pg_cache_eio"] == 0
    assert facts["counters"]["bar1_map"]["active"] == 128
    assert facts["counters"]["ops"] == {"read": 128, "write": 0}
    assert facts["src"]["reads"]["line"] == 7
    gpu = facts["gpus"][1]
    assert gpu["pci_address"] == "0000:e7:00.0"
    assert gpu["uuid"] == "029faa3b-cb0d-2718-259c-6dc650c636eb"
    assert gpu["max_pinned_bytes"] == 8 * MIB
    assert gpu["cross_root_port_pct"] == 0
    assert gpu["src"]["line"] == 17


def test_stats_v4_rw_stats_off() -> None:
    facts = nvidia_fs.parse_stats(read("nvidia_fs/proc-nvidia-fs-stats.v4-rw-stats-off.synthetic.txt"), "s")
    assert facts["stats_version"] == "4.0"
    assert facts["driver_version"] == "2.20.5"
    assert facts["peer_direct"] is False
    assert facts["io_stats_enabled"] is False
    assert facts["peer_io_stats_enabled"] is False
    assert facts["logging_level"] == "info"
    assert facts["rw_stats_enabled"] is False
    assert facts["counters"]["reads"] == {"err": 0, "io_state_err": 0}
    assert facts["counters"]["bar1_map"]["delay_frees"] == 0
    assert facts["counters"]["ops"]["batch_io"] == 0
    assert facts["gpus"][0]["pci_address"] == "0000:8b:00.0"
    assert facts["gpus"][0]["registered_bytes"] == 0


def test_version_and_modules() -> None:
    version = nvidia_fs.parse_version(read("nvidia_fs/proc-nvidia-fs-version.synthetic.txt"), "v")
    assert version["version"] == "2.28"
    assert version["src"]["line"] == 1
    modules = nvidia_fs.parse_modules(read("nvidia_fs/proc-nvidia-fs-modules.synthetic.txt"), "m")
    assert modules["names"] == ["nvme", "nvme_rdma", "wekafsio"]
    assert modules["nvme_registered"] is True
    assert modules["modules"][0]["version"] is None  # "(null)"
    assert modules["modules"][2]["version"] == "1"
    missing = nvidia_fs.parse_modules(
        read("nvidia_fs/proc-nvidia-fs-modules.nvme-missing.synthetic.txt"), "m"
    )
    assert missing["nvme_registered"] is False


def test_devices_reader(tmp_path: Path) -> None:
    (tmp_path / "dev").mkdir()
    for name in ("nvidia-fs0", "nvidia-fs1", "nvidia0"):
        (tmp_path / "dev" / name).write_text("")
    proc = tmp_path / "proc/driver/nvidia-fs"
    proc.mkdir(parents=True)
    (proc / "devcount").write_text("2\n")
    facts = nvidia_fs.parse_devices(nvidia_fs.read_devices(tmp_path).decode(), "dev/nvidia-fs.json")
    assert facts == {
        "devices": ["/dev/nvidia-fs0", "/dev/nvidia-fs1"],
        "count": 2,
        "devcount": 2,
        "proc_present": True,
    }
    with pytest.raises(Unavailable, match="no /dev"):  # missing, not "no devices"
        nvidia_fs.read_devices(tmp_path / "nothing")
    (tmp_path / "nothing/dev").mkdir(parents=True)
    empty = nvidia_fs.parse_devices(nvidia_fs.read_devices(tmp_path / "nothing").decode(), "x")
    assert empty == {"devices": [], "count": 0, "devcount": None, "proc_present": False}


def test_devices_paste() -> None:
    text = "$ ls -l /dev/nvidia-fs*\ncrw-rw-rw- 1 root root 240, 1 Jan  1 00:00 /dev/nvidia-fs1\n"
    assert nvidia_fs.recognise_devices(text)
    assert nvidia_fs.parse_devices(text, "p")["devices"] == ["/dev/nvidia-fs1"]


def test_nvidia_driver_flavour() -> None:
    open_ = nvidia_fs.parse_nvidia_driver(
        read("nvidia_fs/proc-driver-nvidia-version.open.synthetic.txt"), "v"
    )
    assert (open_["version"], open_["open"], open_["arch"]) == ("570.124.06", True, "x86_64")
    assert open_["gcc"].startswith("gcc version 12.3.0")
    closed = nvidia_fs.parse_nvidia_driver(
        read("nvidia_fs/proc-driver-nvidia-version.proprietary.synthetic.txt"), "v"
    )
    assert (closed["version"], closed["open"]) == ("535.154.05", False)
    assert closed["src"]["line"] == 1


def test_modinfo() -> None:
    nvidia = nvidia_fs.modinfo_parser("nvidia")(read("nvidia_fs/modinfo-nvidia.open.synthetic.txt"), "m")
    assert nvidia["open"] is True
    assert nvidia["version"] == "570.124.06"
    assert nvidia["depends"] == ["drm"]
    assert nvidia["out_of_tree"] is True
    assert nvidia["src"]["license"]["line"] == 6
    nvme = nvidia_fs.modinfo_parser("nvme")(read("nvidia_fs/modinfo-nvme.inbox.synthetic.txt"), "m")
    assert nvme["out_of_tree"] is False
    assert nvme["open"] is None
    assert nvme["depends"] == ["nvme-core"]
    closed = nvidia_fs.modinfo_parser("nvidia")("filename: /lib/modules/x/nvidia.ko\nlicense: NVIDIA\n", "m")
    assert closed["open"] is False
    with pytest.raises(ParseError):
        nvidia_fs.modinfo_parser("nvidia")("modinfo: ERROR: Module nvidia not found.\n", "m")


def test_dkms_status() -> None:
    facts = nvidia_fs.parse_dkms_status(read("nvidia_fs/dkms-status.synthetic.txt"), "d")
    first, second, nvidia, ofed = facts["modules"]
    assert (first["module"], first["version"], first["kernel"], first["state"]) == (
        "nvidia-fs",
        "2.18.3",
        "6.5.0-17-generic",
        "built",
    )
    assert second["state"] == "installed"
    assert nvidia["warning"] == "WARNING! Diff between built and installed module!"
    assert (ofed["module"], ofed["version"], ofed["kernel"]) == (
        "mlnx-ofed-kernel",
        "23.10",
        "5.15.0-91-generic",
    )
    assert first["src"]["line"] == 2


def build(name: str) -> dict:
    return nvidia_fs.parse_build_log(read(f"nvidia_fs/{name}"), "var/lib/dkms/nvidia-fs/make.log")


def test_build_log_blk_map_iter() -> None:
    facts = build("gdsnvfs-080--make.log")
    assert facts["kinds"] == ["blk_map_iter_incompatible"]
    assert facts["errors"][0]["src"]["line"] == 9
    assert facts["failed"] is True


def test_build_log_modpost_undefined() -> None:
    facts = build("gdsnvfs-072--build.log")
    assert facts["kinds"] == ["modpost_undefined_nvidia_p2p"]
    assert len(facts["errors"]) == 8
    assert facts["failed"] is False  # modpost warnings: the module builds, then fails to load


def test_dkms_make_log_header() -> None:
    facts = build("gdsnvfs-035--dkms-make.log")
    assert (facts["module"], facts["version"], facts["kernel"]) == ("nvidia-fs", "2.18.3", "6.5.0-17-generic")
    assert facts["truncated"] is True


def test_build_error_kinds() -> None:
    text = (
        "DKMS make.log for nvidia-fs-2.28.1 for kernel 6.17.0-5-generic (x86_64)\n"
        "nvfs-mmap.c:120:22: error: 'struct page' has no member named 'index'\n"
        "nvidia_fs: module using GPL-only symbols uses symbols from proprietary module nvidia.\n"
        "make[1]: *** [Makefile:1921: /var/lib/dkms/nvidia-fs/2.28.1/build] Error 2\n"
    )
    facts = nvidia_fs.parse_build_log(text, "x")
    assert [e["kind"] for e in facts["errors"]] == ["page_index_removed", "gpl_only_symbols", "make_error"]
    assert facts["failed"] is True


def test_build_log_reader(tmp_path: Path) -> None:
    old = tmp_path / "var/lib/dkms/nvidia-fs/2.17.0/build/make.log"
    new = tmp_path / "var/lib/dkms/nvidia-fs/2.18.3/build/make.log"
    for path, body in ((old, "old"), (new, "new")):
        path.parent.mkdir(parents=True)
        path.write_text(body)
    os.utime(old, (1, 1))
    assert nvidia_fs.read_build_log(tmp_path) == b"new"
    assert nvidia_fs.read_build_log(tmp_path / "none") == b""


RECOGNISERS = {
    "nvidia_fs_stats": nvidia_fs.recognise_stats,
    "nvidia_fs_version": nvidia_fs.recognise_version,
    "nvidia_fs_modules": nvidia_fs.recognise_modules,
    "nvidia_driver": nvidia_fs.recognise_nvidia_driver,
    "modinfo_nvidia": nvidia_fs.modinfo_recogniser("nvidia"),
    "modinfo_nvme": nvidia_fs.modinfo_recogniser("nvme"),
    "dkms_status": nvidia_fs.recognise_dkms_status,
    "nvidia_fs_build": nvidia_fs.recognise_build_log,
}


@pytest.mark.parametrize(
    ("kind", "path"), [(k, p) for k in RECOGNISERS for p in KINDS[k]], ids=lambda v: getattr(v, "name", v)
)
def test_recognises_every_sample(kind: str, path: Path) -> None:
    assert RECOGNISERS[kind](path.read_text())


@pytest.mark.parametrize(
    ("kind", "path"), [(k, p) for k in RECOGNISERS for p in others(k)], ids=lambda v: getattr(v, "name", v)
)
def test_rejects_other_sources(kind: str, path: Path) -> None:
    assert not RECOGNISERS[kind](path.read_text())


def test_devices_recogniser_rejects_samples() -> None:
    for path in others("nvidia_fs_devices"):
        assert not nvidia_fs.recognise_devices(path.read_text()), path.name


PARSERS = (
    nvidia_fs.parse_version,
    nvidia_fs.parse_modules,
    nvidia_fs.parse_stats,
    nvidia_fs.parse_devices,
    nvidia_fs.parse_nvidia_driver,
    nvidia_fs.modinfo_parser("nvidia"),
    nvidia_fs.parse_dkms_status,
    nvidia_fs.parse_build_log,
)
SAMPLES = [p for k in RECOGNISERS for p in KINDS[k]]


def parse_all(text: str) -> None:
    for parse in PARSERS:
        with contextlib.suppress(ParseError):
            parse(text, "x")


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(SAMPLES),
    st.integers(min_value=0, max_value=4000),
    st.lists(st.integers(min_value=0, max_value=40), max_size=6),
)
def test_never_crashes_on_mutated_samples(path: Path, cut: int, drops: list[int]) -> None:
    lines = path.read_text()[:cut].split("\n")
    parse_all("\n".join(line for i, line in enumerate(lines) if i not in drops))


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["devices", "devcount", "proc_present"]), st.none() | st.integers() | st.text()
    )
)
def test_device_json_never_crashes(document: dict) -> None:
    with contextlib.suppress(ParseError):
        nvidia_fs.parse_devices(json.dumps(document), "x")
