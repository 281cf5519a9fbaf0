"""Hung tasks judged by the stack they block in, whatever the task's name (dmesg's
``details.trace``, facts/derived/devices.py): a ``gdscheck`` or a container hook blocked in the
NVIDIA driver is the GPU driver's stall, not storage's; a storage-named thread blocked elsewhere is
not a storage stall; a report without a stack still counts by its name.

Real logs (tests/data/dmesg/SOURCES.md): NVIDIA/nvidia-persistenced#15 (gdscheck in the driver's
rwlock), NVIDIA/k8s-device-plugin#77 (nvidia-container-cli in nvidia_uvm), raspberrypi/linux#2482
(a task in the page cache's writeback wait)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gdsdoctor.pipeline import analyze_paths
from gdsdoctor.probes import dmesg

DATA = Path(__file__).resolve().parents[1] / "data" / "dmesg"


def _report(text: str, tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "dmesg.txt"
    path.write_text(text)
    return analyze_paths([path]).report


def _ids(report: dict[str, Any]) -> set[str]:
    return {f["id"] for f in report["findings"]}


def test_the_stack_is_kept_without_its_sleeping_frames() -> None:
    name = "dmesg-hung-gdscheck-in-nvidia-rwlock.nvidia-persistenced-15.txt"
    (hung,) = dmesg.parse((DATA / name).read_text(), "d")["events"]
    # schedule, rwsem_down_read_slowpath, down_read are where every task sleeps; "? " frames are unsure
    assert hung["details"]["trace"] == ["os_acquire_rwlock_read [nvidia]", "_nv051482rm [nvidia]"]


def test_a_gds_tool_blocked_in_the_gpu_driver_is_not_a_storage_stall() -> None:
    for name in (
        "dmesg-hung-gdscheck-in-nvidia-rwlock.nvidia-persistenced-15.txt",
        "dmesg-hung-nvc-driver-in-nvidia-uvm.k8s-device-plugin-77.txt",
    ):
        report = analyze_paths([DATA / name]).report
        ids = _ids(report)
        assert "gpu-driver-task-hung" in ids and "storage-task-hung" not in ids, name


def test_a_storage_named_thread_is_judged_by_its_stack(tmp_path: Path) -> None:
    header = "[ 2418.120624] INFO: task kswapd0:61 blocked for more than 120 seconds.\n[ 2418.151697] Call Trace:\n"
    in_mm = header + "[ 2418.154331]  __schedule+0x282/0x870\n[ 2418.163399]  shrink_node+0x1c1/0x2230\n"
    assert "storage-task-hung" not in _ids(_report(in_mm, tmp_path))
    in_writeback = (
        header + "[ 2418.154331]  __schedule+0x282/0x870\n[ 2418.163399]  wb_writeback+0x1c1/0x2230\n"
    )
    assert "storage-task-hung" in _ids(_report(in_writeback, tmp_path))
    # no stack in the log: the name is all there is
    bare = "[  361.021044] INFO: task jbd2/sda1-8:161 blocked for more than 120 seconds.\n"
    assert "storage-task-hung" in _ids(_report(bare, tmp_path))


def test_a_task_in_the_page_cache_writeback_wait_stays_storage() -> None:
    report = analyze_paths([DATA / "dmesg-nfs-not-responding-ok-then-hung.rpi-2482.txt"]).report
    assert "storage-task-hung" in _ids(report) and "gpu-driver-task-hung" not in _ids(report)


def test_a_cpu_stuck_in_storage_code_is_told_from_one_stuck_elsewhere() -> None:
    rpc = analyze_paths([DATA / "syslog-soft-lockup-rpciod-sunrpc.ips99-169395.txt"]).report
    lockup = next(f for f in rpc["findings"] if f["id"] == "storage-cpu-lockup")
    assert "CPU#0 rpciod/0:5562" in " ".join(e["text"] for e in lockup["evidence"])
    for name in (
        "dmesg-hard-lockup-rcu-serial-console.suse-kb-000020516.txt",  # RCU's thread, a serial console
        "journal-soft-lockup-nfs-client-header.fedora-coreos-1841.txt",  # no trace in the paste
    ):
        ids = _ids(analyze_paths([DATA / name]).report)
        assert "storage-cpu-lockup" not in ids and "storage-module-oops" not in ids, name
    (event,) = dmesg.parse(
        (DATA / "dmesg-hard-lockup-rcu-serial-console.suse-kb-000020516.txt").read_text(), "d"
    )["events"]
    assert (event["kind"], event["details"]["cpu"]) == ("soft_lockup", 10)


def test_xids_are_the_gpus_and_said_so_by_their_class() -> None:
    hardware = analyze_paths([DATA / "dmesg-xid-149-145-94-bare.gpud-1174.txt"]).report
    finding = next(f for f in hardware["findings"] if f["id"] == "gpu-xid-not-storage")
    assert finding["severity"] == "warning"  # NVLink and ECC: this GPU's hardware
    for name in (
        "dmesg-xid-43-kernel-assert.intel-llvm-6548.txt",
        "dmesg-T-xid-13-109-app-errors.gpud-46.txt",
    ):
        app = analyze_paths([DATA / name]).report
        assert next(f for f in app["findings"] if f["id"] == "gpu-xid-not-storage")["severity"] == "info", (
            name
        )
    only_79 = _ids(analyze_paths([DATA / "nvrm-xid79.gpud-xid-examples.txt"]).report)
    assert "gpu-fell-off-the-bus" in only_79 and "gpu-xid-not-storage" not in only_79


def test_a_server_thread_blocked_in_a_filesystems_commit_is_a_storage_stall() -> None:
    """openzfs/zfs#1060: nfsd (no storage thread by its name) blocked in zfs_fsync → zil_commit,
    in the old frame form without timestamps: the stack says storage."""
    report = analyze_paths([DATA / "hung-nfsd-in-zfs-zil-commit-no-time.openzfs-1060.txt"]).report
    hung = next(f for f in report["findings"] if f["id"] == "storage-task-hung")
    says = " ".join(str(e.get("text", "")) for e in hung["evidence"] if isinstance(e, dict))
    assert "nfsd:7576" in says and "zil_commit [zfs]" in says
