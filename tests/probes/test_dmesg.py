"""Kernel log probe: line forms, failure-mode classification, boots, aggregation, recognition."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gdsdoctor.errors import ParseError
from gdsdoctor.probes import dmesg

DATA = Path(__file__).parent.parent / "data" / "dmesg"
# journalctl's export and verbose records are rewritten as dmesg lines by the paste reader
# (capture/unwrap), not read by this probe: tests/test_syslog_time.py reads them as pastes.
PASTE_LAYER = ("journalctl-export.", "journalctl-verbose.")
SAMPLES = sorted(
    p for p in DATA.iterdir() if p.is_file() and p.name != "SOURCES.md" and not p.name.startswith(PASTE_LAYER)
)
NEGATIVES = sorted(
    p for d in (DATA / "not-dmesg", DATA.parent / "system") for p in d.iterdir() if p.name != "SOURCES.md"
)


def load(name: str) -> dict:
    return dmesg.parse((DATA / name).read_text(errors="replace"), "cmd/dmesg.txt")


def summary(section: dict) -> dict[tuple[str, str | None], dict]:
    return {(s["kind"], s["device"]): s for s in section["summary"]}


# ---- every reference file is recognised and parsed; other sources are not claimed ----------


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_reference_samples_recognised_and_parsed(path: Path) -> None:
    text = path.read_text(errors="replace")
    assert dmesg.recognise(text)
    section = dmesg.parse(text, "cmd/dmesg.txt")
    assert section["line_count"] > 0
    assert section["boot_count"] >= 1


@pytest.mark.parametrize("path", NEGATIVES, ids=lambda p: p.name)
def test_other_sources_not_recognised(path: Path) -> None:
    assert not dmesg.recognise(path.read_text(errors="replace"))


# ---- NVMe PCIe -----------------------------------------------------------------------------


def test_timeout_abort_status_and_block_errors() -> None:
    section = load("dmesg-nvme-data-transfer-error-blk-update-request.txt")
    by = summary(section)
    assert by[("nvme_timeout", "nvme0")]["count"] == 1
    assert by[("nvme_abort", "nvme0")]["first_line"] == 2
    status = by[("nvme_status_error", "nvme0n1")]
    assert (status["count"], status["first_line"], status["last_line"]) == (4, 3, 9)
    assert by[("blk_io_error", "nvme0n1")]["count"] == 4
    first = section["events"][0]
    # the glued "node1 login: " prefix does not hide the stamp
    assert first["timestamp"] == "519.201025" and first["monotonic_s"] == pytest.approx(519.201025)
    assert first["details"] == {"tag": 39, "qid": 3, "action": "aborting"}
    decoded = section["events"][2]["details"]
    assert decoded["status"] == "Data Transfer Error" and (decoded["sct"], decoded["sc"]) == ("0x0", "0x4")
    blk = section["events"][3]
    assert blk["details"]["caller"] == "blk_update_request" and blk["details"]["op"] == "WRITE"
    assert blk["src"]["line"] == 4 and blk["src"]["artifact"] == "cmd/dmesg.txt"


def test_path_error_status_and_ext4_journal_abort() -> None:
    section = load("dmesg-nvme-io-error-status-ext4-journal-abort.txt")
    by = summary(section)
    assert section["events"][0]["details"]["sc"] == "0x71"
    assert by[("blk_io_error", "nvme0n1")]["count"] == 8
    assert by[("blk_io_error", "nvme0n1p1")]["count"] == 2  # Buffer I/O error on device nvme0n1p1
    assert by[("fs_shutdown", "nvme0n1p1")]["first_line"] == 12  # "-8" journal inode dropped


def test_admin_timeout_controller_removed() -> None:
    by = summary(load("dmesg-nvme-pcie-admin-timeout-removed.txt"))
    assert by[("nvme_timeout", "nvme2")]["count"] == 1
    assert by[("nvme_reset", "nvme2")]["count"] == 3
    assert by[("nvme_reset", "nvme3")]["last_line"] == 9
    assert by[("capacity_to_zero", "nvme3n1")]["first_line"] == 10


def test_disable_controller_and_identify_failed() -> None:
    section = load("dmesg-nvme-pcie-admin-timeout-disable-identify-failed.txt")
    assert [e["kind"] for e in section["events"]] == ["nvme_timeout", "nvme_reset", "nvme_reset"]
    assert section["events"][0]["details"]["action"] == "disable controller"
    assert section["events"][2]["details"]["errno"] == -5


def test_completion_polled_and_device_not_ready() -> None:
    polled = load("dmesg-nvme-pcie-completion-polled.txt")["events"][0]
    assert polled["details"]["action"] == "completion polled" and polled["details"]["qid"] == 2
    section = load("dmesg-nvme-pcie-device-not-ready-io-error.txt")
    assert section["events"][0]["details"]["csts"] == "0x1"
    assert summary(section)[("blk_io_error", "nvme0n1")]["count"] == 4


def test_old_format_timeout_storm() -> None:
    by = summary(load("dmesg-nvme-pcie-io-timeout-aborting-old-format.txt"))
    assert by[("nvme_timeout", "nvme0")]["count"] == 12
    assert by[("nvme_abort", "nvme0")]["count"] == 13


# ---- NVMe-oF -------------------------------------------------------------------------------


def test_tcp_reconnect_loop_dmesg_T() -> None:
    section = load("dmesg-nvmeof-tcp-reconnect-econnrefused.txt")
    assert section["format"] == "dmesg_T"
    group = summary(section)[("nvmeof_reconnect", "nvme0")]
    assert group["count"] == 17
    assert group["first_timestamp"] == "Wed Apr  9 08:23:03 2025"
    assert group["last_timestamp"] == "Wed Apr  9 08:23:54 2025"
    errnos = [e["details"].get("errno") for e in section["events"] if "errno" in e["details"]]
    assert errnos == [-111] * 5
    attempts = [e["details"]["attempt"] for e in section["events"] if "attempt" in e["details"]]
    assert attempts == [1, 2, 3, 4, 5]


def test_rdma_connect_failures_and_cmdline() -> None:
    section = load("dmesg-nvmeof-rdma-connect-reset-by-peer.txt")
    assert summary(section)[("nvmeof_reconnect", "nvme0")]["count"] == 3
    assert section["events"][0]["details"]["errno"] == -104
    assert section["cmdline"] == "BOOT_IMAGE=/boot/vmlinuz-5.4.0-107-generic"  # the paste wrapped the line
    pool = load("dmesg-nvmeof-rdma-mlx5-pi-mr-pool-einval.txt")
    assert [e["device"] for e in pool["events"]] == ["nvme1", "nvme1"]  # no space after "]"
    assert pool["events"][1]["details"]["errno"] == -22


def test_journal_admin_keepalive_timeouts() -> None:
    section = load("journal-nvmeof-tcp-admin-timeout-cid-format.txt")
    assert section["format"] == "journal"
    timeouts = [e for e in section["events"] if e["kind"] == "nvme_timeout"]
    assert [e["device"] for e in timeouts] == ["nvme2", "nvme0", "nvme3", "nvme4", "nvme1"]
    assert timeouts[0]["details"] == {"qid": 0, "cid": "0xb001", "opcode": "0x18"}
    assert timeouts[0]["level"] == "warning"
    assert timeouts[0]["timestamp"] == "2024-10-29T13:44:17.655294812Z"
    assert timeouts[0]["monotonic_s"] is None


# ---- filesystems ---------------------------------------------------------------------------


def test_xfs_shutdown_from_syslog_excerpt() -> None:
    section = load("syslog-xfs-internal-error-force-shutdown.txt")
    by = summary(section)
    assert by[("fs_error", "dm-4")]["count"] == 2
    assert by[("fs_shutdown", "dm-4")]["count"] == 4
    assert section["events"][3]["details"]["flags"] == "0x1"


def test_xfs_log_force_storm() -> None:
    assert summary(load("dmesg-xfs-log-force-eio-old.txt"))[("fs_error", "dm-0")]["count"] == 5


# ---- GDS: nvidia-fs, peermem ---------------------------------------------------------------


def test_nvfs_pin_gpu_pages_einval_bare_excerpt() -> None:
    section = load("gdsnvfs-014-geforce-rtx3090-p2p-get-pages-einval.dmesg.txt")
    assert section["format"] == "plain"
    assert section["events"][0]["details"] == {"errno": -22, "call": "nvidia_p2p_get_pages"}


def test_nvfs_write_io_failed_mixed_paste() -> None:
    section = load("gdsnvfs-026-vast-nfsordma-write-io-failed-512.dmesg.txt")
    assert section["format"] == "mixed"
    assert summary(section)[("nvidia_fs_error", None)]["count"] == 5
    assert summary(section)[("nvidia_fs_loaded", None)]["src"]["line"] == 2
    assert section["events"][1]["details"] == {"op": "write", "errno": -512}


def test_gpl_symbol_refusal_dmesg_H() -> None:
    section = load("gdsnvfs-034-nvfs-proprietary-driver-gpl-symbols.dmesg.txt")
    assert section["format"] == "dmesg_H"
    symbols = {e["details"]["symbol"] for e in section["events"] if "symbol" in e["details"]}
    assert "nvidia_p2p_get_pages" in symbols and len(symbols) == 6
    assert section["events"][0]["details"] == {"module": "nvidia_fs", "provider": "nvidia"}


def test_incompatible_page_table_and_kernel_bug() -> None:
    events = load("gdsnvfs-066-dgx-h100-vast-incompatible-page-table-kernel-bug.dmesg.txt")["events"]
    assert events[0]["details"] == {"version": "0x00020000"}
    assert events[1]["kind"] == "nvidia_fs_error" and "kernel BUG" in events[1]["message"]


def test_unversioned_symbol() -> None:
    events = load("gdsnvfs-072-h20-ubuntu2404-modpost-undefined-nvidia-p2p.dmesg.txt")["events"]
    assert events[0]["kind"] == "module_symbol_mismatch"
    assert events[0]["details"] == {"module": "nvidia_fs", "symbol": "nvidia_p2p_dma_unmap_pages"}
    assert events[1]["details"] == {"major": 501}


def test_kmsg_records() -> None:
    section = load("kmsg.nvidia-peermem-invalid-context.txt")
    assert section["format"] == "kmsg"
    assert summary(section)[("peermem_error", None)]["count"] == 7
    assert section["events"][0]["monotonic_s"] == pytest.approx(227.996636)
    assert section["events"][0]["level"] == "info"


# ---- util-linux dmesg -r and --json --------------------------------------------------------


def test_raw_priority_prefix() -> None:
    section = load("util-linux-dmesg-input")
    assert section["format"] == "dmesg_raw" and section["line_count"] == 106
    assert section["events"] == [] and section["boot_count"] == 1


def test_json_with_banner() -> None:
    section = load("cid-kmsg-json.expected")
    assert section["format"] == "json" and section["line_count"] == 58
    assert section["kernel_release"] == "6.6.4-arch1-1"
    assert section["cmdline"].startswith("initrd=")


def test_json_event_provenance_line() -> None:
    text = (
        '{\n   "dmesg": [\n      {\n         "pri": 3,\n         "time":    12.000000,\n'
        '         "msg": "nvme nvme0: I/O 1 QID 1 timeout, aborting"\n      }\n   ]\n}\n'
    )
    event = dmesg.parse(text, "cmd/dmesg.json")["events"][0]
    assert (event["kind"], event["device"], event["level"]) == ("nvme_timeout", "nvme0", "err")
    assert event["src"]["line"] == 6 and event["monotonic_s"] == 12.0


# ---- boots ---------------------------------------------------------------------------------


def test_journal_boot_separators_mark_current_boot() -> None:
    text = "\n".join(
        [
            "-- Boot 1a2b3c --",
            "Jan 02 10:00:00 gpu1 kernel: nvme nvme0: I/O 5 QID 2 timeout, aborting",
            "-- Boot 4d5e6f --",
            "Jan 03 09:00:00 gpu1 kernel: Linux version 6.8.0-1040-nvidia (buildd@lcy02)",
            "Jan 03 09:00:01 gpu1 kernel: iommu: Default domain type: Translated",
            "Jan 03 09:05:00 gpu1 kernel: nvme nvme0: I/O 7 QID 2 timeout, aborting",
        ]
    )
    section = dmesg.parse(text, "cmd/journalctl-k.txt")
    assert section["boot_count"] == 2 and section["kernel_release"] == "6.8.0-1040-nvidia"
    assert [(e["boot"], e["current_boot"]) for e in section["events"]] == [(0, False), (1, True), (1, True)]
    group = summary(section)[("nvme_timeout", "nvme0")]
    assert (group["count"], group["current_boot_count"]) == (2, 1)
    assert section["current_boot_kinds"] == ["iommu_info", "nvme_timeout"]
    assert section["events"][1]["details"] == {"domain_type": "Translated"}


def test_kern_log_with_kernel_stamps_finds_reboot() -> None:
    text = "\n".join(
        [
            "Jan  2 10:00:00 gpu1 kernel: [ 9000.100000] nvme nvme1: Removing after probe failure status: -5",
            "Jan  2 10:05:00 gpu1 kernel: [    0.000000] Linux version 6.8.0-45-generic (buildd@lcy02) #45",
            "Jan  2 10:05:09 gpu1 kernel: [    9.500000] nvme nvme1: Removing after probe failure status: -5",
        ]
    )
    section = dmesg.parse(text, "var/log/kern.log")
    assert section["boot_count"] == 2 and section["format"] == "journal"
    events = section["events"]
    assert [e["current_boot"] for e in events] == [False, True]
    assert events[1]["monotonic_s"] == 9.5 and events[1]["timestamp"] == "Jan  2 10:05:09"
    assert events[1]["device"] == "nvme1"


def test_journalctl_json_records() -> None:
    records = [
        {"MESSAGE": "nvme nvme0: I/O 5 QID 2 timeout, aborting", "PRIORITY": "4", "_BOOT_ID": "aa",
         "__MONOTONIC_TIMESTAMP": "5000000"},
        {"MESSAGE": "nvme nvme0: Abort status: 0x0", "PRIORITY": "4", "_BOOT_ID": "bb",
         "__MONOTONIC_TIMESTAMP": "12000000"},
    ]  # fmt: skip
    text = "\n".join(json.dumps(r) for r in records)
    assert dmesg.recognise(text)
    section = dmesg.parse(text, "cmd/journalctl-k.json")
    assert section["format"] == "journal" and section["boot_count"] == 2
    first, second = section["events"]
    assert (first["kind"], first["device"], first["level"], first["monotonic_s"]) == (
        "nvme_timeout",
        "nvme0",
        "warning",
        5.0,
    )
    assert (second["current_boot"], second["src"]["line"]) == (True, 2)


def test_clock_going_backwards_starts_a_boot() -> None:
    text = "\n".join(
        [
            "[ 5000.000000] XFS (nvme0n1): log I/O error -5",
            "[    0.000000] Linux version 6.5.0-generic (x@y) #1 SMP",
            "[    1.000000] DMAR: IOMMU enabled",
        ]
    )
    section = dmesg.parse(text, "cmd/dmesg.txt")
    assert section["boot_count"] == 2
    assert [e["current_boot"] for e in section["events"]] == [False, True]


# ---- synthetic lines in kernel-source wording (modes without a real sample) ----------------

CLASSIFIED = [
    ("nvme nvme0: I/O tag 28 (401c) opcode 0x1 (I/O Cmd) QID 3 timeout, aborting req_op:WRITE(1) size:4096",
     "nvme_timeout", "nvme0", {"tag": 28, "opcode": "0x1", "qid": 3, "action": "aborting"}),
    ("nvme nvme0: controller is down; will reset: CSTS=0xffffffff, PCI_STATUS=0xffff",
     "nvme_reset", "nvme0", {"csts": "0xffffffff"}),
    ("nvme nvme1: Failed reconnect attempt 3/60", "nvmeof_reconnect", "nvme1", {"attempt": 3, "max_attempts": 60}),
    ("nvme nvme1: Successfully reconnected (attempt 2/60)", "nvmeof_reconnected", "nvme1", {}),
    ("nvme nvme1: failed nvme_keep_alive_end_io error=10", "nvmeof_keepalive", "nvme1", {"status": 10}),
    ("block nvme0n1: no usable path - requeuing I/O", "nvme_ana", "nvme0n1", {"state": "usable"}),
    ("nvme nvme0: Connect rejected: status 8 (invalid service ID).", "nvmeof_connect_refused", "nvme0",
     {"cm_status": 8, "cm_reason": "invalid service ID", "reason": "no_listener"}),
    ("nvme nvme0: Admin Cmd(0x6), I/O Error (sct 0x0 / sc 0x4) DNR",
     "nvme_status_error", "nvme0", {"op": "Admin Cmd", "status": "I/O Error", "sct": "0x0", "sc": "0x4",
                                    "status_name": "Data Transfer Error", "status_class": "data_transfer"}),
    ("print_req_error: critical medium error, dev nvme0n1, sector 2048",
     "blk_io_error", "nvme0n1", {"caller": "print_req_error", "error": "critical medium", "sector": 2048}),
    ("EXT4-fs (nvme0n1p1): Remounting filesystem read-only", "fs_shutdown", "nvme0n1p1", {}),
    ("XFS (sda1): nobarrier option is deprecated, ignoring.", "fs_mount_option_rejected", "sda1", {}),
    ("xfs: Unknown parameter 'nobarrier'", "fs_mount_option_rejected", None, {}),
    ("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.", "nvrm_xid", "0000:3b:00", {"xid": 79}),
    ("pcieport 0000:00:03.1: AER: Uncorrected (Non-Fatal) error received: 0000:03:00.0",
     "pcie_aer", "0000:00:03.1", {"severity": "Uncorrected"}),
    ("nvme 0000:01:00.0:    [ 6] BadTLP", "pcie_aer", "0000:01:00.0", {"error": "BadTLP"}),
    ("nvme 0000:41:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0000 address=0xfe000000 flags=0x0000]",
     "iommu_fault", "0000:41:00.0", {}),
    ("DMAR: [DMA Read NO_PASID] Request device [3b:00.0] fault addr 0xfe000000", "iommu_fault", "3b:00.0", {}),
    ("pci 0000:3b:00.0: Adding to iommu group 42", "iommu_info", "0000:3b:00.0", {"group": 42}),
    ("AMD-Vi: Unknown option - 'on'", "cmdline_option_rejected", None, {"subsystem": "AMD-Vi"}),
    ("x86/PAT: gdsio:1234 conflicting memory types 3800000000-3800200000 write-combining<->uncached-minus",
     "pat_conflict", None, {}),
    ("nvme 0000:01:00.0: cannot be used for peer-to-peer DMA as the client and provider (0000:3b:00.0) do not "
     "share an upstream bridge or whitelisted host bridge", "p2pdma", "0000:01:00.0", {}),
    ("nvidia_peermem: disagrees about version of symbol ib_register_peer_memory_client", "peermem_error", None, {}),
    ("nvidia-fs:rw_verify_area failed with -14", "nvidia_fs_error", None, {"errno": -14}),
    ("INFO: task python3:1234 blocked for more than 120 seconds.",
     "hung_task", None, {"task": "python3:1234", "seconds": 120}),
]  # fmt: skip


@pytest.mark.parametrize(("message", "kind", "device", "details"), CLASSIFIED)
def test_classify_kernel_wording(message: str, kind: str, device: str | None, details: dict) -> None:
    assert dmesg.classify(message) == (kind, device, details)
    assert kind in dmesg.KINDS


@pytest.mark.parametrize(
    "message",
    [
        "Kernel command line: ro quiet",
        "CUFILE_USE_PCIP2PDMA=false",
        "XFS (loop0): Please unmount the filesystem and rectify the problem(s)",  # a shutdown's, no unmount
    ],
)
def test_benign_lines_not_classified(message: str) -> None:
    assert dmesg.classify(message) is None


LIFECYCLE = [
    ("nvme nvme0: 32/0/0 default/read/poll queues", "nvme_ready", "nvme0", {}),
    ("nvme nvme1: mapped 8/0/0 default/read/poll queues.", "nvme_ready", "nvme1", {}),
    ("nvme nvme1: creating 8 I/O queues.", "nvme_ready", "nvme1", {}),
    ('nvme nvme3: new ctrl: NQN "nqn.2014-08.org.nvmexpress:uuid:5a1c", addr 10.0.0.2:4420',
     "nvme_ready", "nvme3", {"nqn": "nqn.2014-08.org.nvmexpress:uuid:5a1c"}),
    ("XFS (loop0): Mounting V5 Filesystem a24c9434-7867-4448-9949-b7458d29ea2d",
     "fs_mounted", "loop0", {"uuid": "a24c9434-7867-4448-9949-b7458d29ea2d"}),
    ("XFS (dm-2): Mounting V5 Filesystem", "fs_mounted", "dm-2", {}),
    ("EXT4-fs (loop0): mounted filesystem 23c787d4-d345-459d-92e3-5e9e3a2af56a r/w with ordered data mode. "
     "Quota mode: none.", "fs_mounted", "loop0", {"fstype": "EXT4", "uuid": "23c787d4-d345-459d-92e3-5e9e3a2af56a"}),
    ("EXT4-fs (sda1): mounted filesystem with ordered data mode. Opts: discard", "fs_mounted", "sda1",
     {"fstype": "EXT4"}),
    ("EXT4-fs (nvme0n1p2): re-mounted 6b6f0d52-6a3a-4b32-9a3e-1c7c1a7e1a0b r/w. Quota mode: none.",
     "fs_mounted", "nvme0n1p2", {"fstype": "EXT4", "uuid": "6b6f0d52-6a3a-4b32-9a3e-1c7c1a7e1a0b"}),
    ("XFS (loop0): Unmounting Filesystem a24c9434-7867-4448-9949-b7458d29ea2d",
     "fs_unmounted", "loop0", {"uuid": "a24c9434-7867-4448-9949-b7458d29ea2d"}),
    ("EXT4-fs (nvme0n1p2): unmounting filesystem.", "fs_unmounted", "nvme0n1p2", {"fstype": "EXT4"}),
    ("loop0: detected capacity change from 0 to 655360", "block_attached", "loop0", {}),
    ("sd 2:0:0:0: [sdb] Attached SCSI disk", "block_attached", "sdb", {}),
    ("pcieport 0000:00:01.0: AER: device recovery successful", "pcie_recovered", "0000:00:01.0", {}),
]  # fmt: skip


@pytest.mark.parametrize(("message", "kind", "device", "details"), LIFECYCLE)
def test_lifecycle_markers_classified_and_kept_apart(
    message: str, kind: str, device: str, details: dict
) -> None:
    assert dmesg.classify(message) == (kind, device, details)
    section = dmesg.parse(f"[   12.000000] {message}\n", "dmesg.txt")
    assert section["events"] == [] and section["summary"] == []  # a marker is no failure event
    assert [(m["kind"], m["device"]) for m in section["lifecycle"]] == [(kind, device)]


@pytest.mark.parametrize(
    ("line", "form", "timestamp", "level", "message"),
    [
        ("kern  :err   : [  12.345678] nvme nvme0: Abort status: 0x371", "dmesg", "12.345678", "err", None),
        ("<3>[ 1.500000] nvme nvme0: Abort status: 0x0", "dmesg_raw", "1.500000", "err", None),
        ("Jan 02 10:00:00.123456 host kernel: nvme nvme0: Abort status: 0x0", "journal", "Jan 02 10:00:00.123456",
         None, None),
        ("2023-01-02T10:00:00+0000 host kernel: nvme nvme0: Abort status: 0x0", "journal",
         "2023-01-02T10:00:00+0000", None, None),
        ("[   12.345678] host kernel: nvme nvme0: Abort status: 0x0", "journal", "12.345678", None, None),
        ("2023-01-02T10:00:00,123456+00:00 nvme nvme0: Abort status: 0x0", "dmesg_T",
         "2023-01-02T10:00:00,123456+00:00", None, None),
        ("[  519.201025 <    0.000120>] nvme nvme0: Abort status: 0x0", "dmesg", "519.201025", None, None),
        ("[2023-01-02T10:00:00,123456+00:00] nvme nvme0: Abort status: 0x0", "dmesg_T",
         "2023-01-02T10:00:00,123456+00:00", None, None),
        # "[" + something else than a seconds stamp: the fast path for plain dmesg must not take these
        ("[Mon Jan  2 10:00:00 2023] nvme nvme0: Abort status: 0x0", "dmesg_T", "Mon Jan  2 10:00:00 2023",
         None, None),
        ("[  +0.000120] nvme nvme0: Abort status: 0x0", "dmesg_H", "+0.000120", None, None),
        ("[Jan 2 10:00] nvme nvme0: Abort status: 0x0", "dmesg_H", "Jan 2 10:00", None, None),
        ("[12.5] nvme nvme0: Abort status: 0x0", "dmesg", "12.5", None, None),
    ],
)  # fmt: skip
def test_line_forms(line: str, form: str, timestamp: str, level: str | None, message: str | None) -> None:
    parsed = dmesg.split_line(1, line)
    assert (parsed.form, parsed.timestamp, parsed.level) == (form, timestamp, level)
    assert parsed.message.startswith("nvme nvme0: Abort status")


def test_every_pattern_carries_a_hint_of_its_kind() -> None:
    # classify() skips a kind when none of its hints is in the message: a pattern without one is dead
    for kind, hints, patterns in dmesg._RULES:
        for pattern in patterns:
            assert any(hint in pattern.lower() for hint in hints), (kind, pattern)


# ---- robustness ----------------------------------------------------------------------------


def test_not_a_kernel_log_raises() -> None:
    with pytest.raises(ParseError):
        dmesg.parse("hello\nworld\n", "x")
    with pytest.raises(ParseError):
        dmesg.parse('{"blockdevices": []}', "x")
    assert dmesg.parse("", "x")["events"] == []


def test_event_storm_is_capped_but_counted() -> None:
    text = "\n".join(f"[{i}.000000] XFS (dm-0): xfs_log_force: error -5 returned." for i in range(1, 5002))
    section = dmesg.parse(text, "x")
    assert len(section["events"]) == dmesg.MAX_EVENTS and section["events_dropped"] == 1001
    assert summary(section)[("fs_error", "dm-0")]["count"] == 5001
    assert summary(section)[("fs_error", "dm-0")]["last_line"] == 5001


def test_pathological_lines_stay_fast() -> None:
    for junk in [
        "a" * 200_000,
        "I/O " * 50_000,
        "error, dev " * 20_000,
        "[ " * 100_000,
        "nvme0n1: " + "a(0x1) @ LBA " * 9000,
    ]:
        # this thread's CPU time, which other processes' load does not stretch (a backtracking
        # pattern took minutes here; linear parsing takes milliseconds)
        started = time.thread_time()
        _safe_parse(junk)
        assert time.thread_time() - started < 5


def _safe_parse(text: str) -> None:
    try:
        section = dmesg.parse(text, "x")
    except ParseError:
        return
    assert "status" not in section and "artifact" not in section
    dmesg.recognise(text)


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(SAMPLES),
    st.integers(min_value=0, max_value=20000),
    st.integers(min_value=0, max_value=50),
)
def test_truncated_and_line_dropped_samples(path: Path, cut: int, drop: int) -> None:
    text = path.read_text(errors="replace")
    _safe_parse(text[:cut])
    lines = text.split("\n")
    _safe_parse("\n".join(lines[:drop] + lines[drop + 1 :]))


def _required_literal(pattern: str) -> str:
    """What re's own parser says every match starts with: the literal characters at the top
    level before anything else (one of a repeated character that must occur)."""
    from tests.regex_audit import sre as c
    from tests.regex_audit import sre_parse as parser

    flags = re.IGNORECASE if pattern.startswith("(?i)") else 0
    items = list(parser.parse(pattern[4:] if flags else pattern, flags))
    text = []
    for index, (op, arg) in enumerate(items):
        if op is c.AT and index == 0:
            continue
        if op is c.LITERAL:
            text.append(chr(arg))
            continue
        repeated = list(arg[2]) if op in (c.MAX_REPEAT, c.MIN_REPEAT) else []
        if repeated and arg[0] >= 1 and repeated[0][0] is c.LITERAL:
            text.append(chr(repeated[0][1]))
        break
    return "".join(text).lower() if flags else "".join(text)


def _corpus_lines() -> list[str]:
    root = Path(__file__).parent.parent.parent
    files = [*DATA.glob("*.txt"), *root.glob("fixtures/**/dmesg*"), *root.glob("fixtures/**/journal*")]
    return [
        line for file in files if file.is_file() for line in file.read_text(errors="replace").splitlines()
    ]


def test_gated_classification_equals_trying_every_pattern() -> None:
    """classify() skips kinds whose hints are absent from a message
    (speed); over every kernel log line in the tests and fixtures, and words taken from the
    patterns, it must answer exactly what searching every pattern in order answers."""

    def every_pattern(message: str) -> tuple[str, str | None, dict] | None:
        message = message[: dmesg.MAX_CLASSIFIED_CHARS]
        for kind, _, patterns in dmesg._RULES:
            for pattern in patterns:
                if m := re.search(pattern, message):
                    groups = {k: v for k, v in m.groupdict().items() if v is not None}
                    device = groups.pop("device", None) or dmesg._device(message)
                    details = {key: dmesg._detail(value) for key, value in groups.items()}
                    return kind, device, dmesg._decoded(kind, details)
        return None

    lines = _corpus_lines()
    assert len(lines) > 1000
    messages = [dmesg.split_line(n, line).message.strip() for n, line in enumerate(lines)]
    messages += [_required_literal(p) + " x" for _, _, patterns in dmesg._RULES for p in patterns]
    hits = 0
    for message in messages:
        expected = every_pattern(message)
        hits += expected is not None
        assert dmesg.classify(message) == expected, message
        assert dmesg.classify(message, dmesg.hints_in(message)) == expected, message
    assert hits > 200


_HINT_TEXT = st.lists(
    st.one_of(
        st.sampled_from(sorted(dmesg._KINDS_OF_HINT)),
        st.sampled_from([" ", "\n", "\t", "  ", ":", "-", "x", "A", "Ext4", "IOMMU"]),
        st.text(alphabet="abcdeimnorstuvx0189 :-_/+\n\t", max_size=8),  # digits: hints_in drops them
    ),
    max_size=30,
).map("".join)


@given(_HINT_TEXT)
@settings(max_examples=400, deadline=None)
def test_hints_found_in_the_distinct_words_are_those_in_the_text(text: str) -> None:
    """hints_in looks in the log's distinct words (and confirms hints with spaces in the text):
    it must find exactly the hints a plain substring test of the whole text finds."""
    lowered = text.lower()
    expected = [hint for hint in dmesg._KINDS_OF_HINT if hint in lowered]
    assert [hint for hint, _ in dmesg.hints_in(text)] == expected


@given(_HINT_TEXT)
@settings(max_examples=300, deadline=None)
def test_hinted_lines_are_the_lines_holding_a_hint(text: str) -> None:
    hints = dmesg.hints_in(text)
    expected = {
        number
        for number, line in dmesg.numbered_lines(text)
        if any(hint in line.lower() for hint, _ in hints)
    }
    assert dmesg.hinted_lines(text, hints) == expected
    # each hinted line's span is that line of the text (when lowering keeps the text's length)
    lines = text.split("\n")
    if len(text.lower()) == len(text):
        for number, start, end in dmesg.hinted_line_spans(text, hints):
            assert text[start:end] == lines[number - 1]


def _every_line(text: str, hints: object, lowered: object = None) -> Iterator[tuple[int, int, int]]:
    """(number, start, end) of every line: parse classifies each (no line gate)."""
    start = 0
    for number, line in enumerate(text.split("\n"), start=1):
        yield number, start, start + len(line)
        start += len(line) + 1


def test_skipping_lines_without_a_hint_changes_no_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """parse() classifies only the lines holding a hint; every test and fixture log must give
    the same section as classifying every line."""
    root = Path(__file__).parent.parent.parent
    logs = [*DATA.glob("*.txt"), *root.glob("fixtures/**/dmesg*"), *root.glob("fixtures/**/journal*")]
    texts = [file.read_text(errors="replace") for file in logs if file.is_file()]
    assert len(texts) > 20
    skipping = [dmesg.parse(text, "x") if _is_log(text) else None for text in texts]
    monkeypatch.setattr(dmesg, "hinted_candidates", lambda text, hints: set(range(1, text.count("\n") + 2)))
    monkeypatch.setattr(dmesg, "hinted_line_spans", _every_line)
    assert [dmesg.parse(text, "x") if _is_log(text) else None for text in texts] == skipping
    assert sum(len(section["events"]) for section in skipping if section) > 50


def _is_log(text: str) -> bool:
    try:
        dmesg.parse(text, "x")
    except dmesg.ParseError:
        return False
    return True


_LOG_LINES = st.lists(
    st.sampled_from(
        [
            "[    0.000000] Linux version 6.8.0-45-generic (buildd@lcy02) #45-Ubuntu SMP",
            "[    0.000000] Command line: BOOT_IMAGE=/vmlinuz iommu=pt",
            "[    1.500000] pci 0000:00:01.0: [8086:1234] type 00 class 0x060400",
            "[    2.000000] host kernel: nvme nvme0: I/O 12 QID 3 timeout, aborting",
            "[    3.000000] nvme nvme0: I/O 12 QID 3 timeout, aborting",
            "[    3.5] EXT4-fs (nvme0n1): mounted filesystem with ordered data mode",
            "[ 9000.000000] loop0: detected capacity change from 0 to 4194304",
            "[   12.000000 <    0.000100>] usb 1-1: new high-speed USB device",
            "[    0.400000] a clock going back",
            "[    0.900000] a quiet line",  # quiet lines in runs: read by their stamps in one pass
            "[ 5000.250000] a later quiet line",
            "[    1.000000][    T1] a quiet line with its caller",
            "[  2.5 ]\r",
            "-- Boot 0123456789abcdef --",
            "<6>[    4.000000] xfs: mounting",
            "Nov 30 01:02:03 node kernel: [    5.000000] nvidia-fs: loaded",
            "  SUBSYSTEM=pci",
            "",
            "[",
            "[ 7.0]",
            "plain text without a prefix",
        ]
    ),
    max_size=40,
).map("\n".join)


@given(_LOG_LINES)
@settings(max_examples=300, deadline=None)
def test_quiet_lines_read_by_their_clock_alone_give_the_same_section(text: str) -> None:
    """parse() reads a plain line that holds no hint, banner, command line or ident by its clock
    alone, and a run of them by their stamps in one pass (speed); the section must be what
    making a LogLine of every line gives."""
    try:
        fast = dmesg.parse(text, "x")
    except dmesg.ParseError:
        fast = None
    original = dmesg._quiet_clock, dmesg._quiet_run
    dmesg._quiet_clock = lambda raw: None  # type: ignore[assignment]
    dmesg._quiet_run = lambda text, at, stop: None  # type: ignore[assignment]
    try:
        try:
            slow = dmesg.parse(text, "x")
        except dmesg.ParseError:
            slow = None
    finally:
        dmesg._quiet_clock, dmesg._quiet_run = original  # type: ignore[assignment]
    assert fast == slow


@pytest.mark.parametrize(
    "line",
    [
        # cufile.log: its "pci_p2pdma not supported" is a kernel event's wording too (gdsnvfs-078)
        " 26-02-2026 03:08:04:646 [pid=21281 tid=21281] INFO   cufio-drv:828 pci_p2pdma not supported errornum: 801",
        # UCX starts like dmesg -T's seconds (openucx/ucx #8746)
        "[1668693503.473099] [ampere:1188443:0]          ib_log.c:246  UCX  ERROR mlx5_0: ibv_create_cq() failed: "
        "Cannot allocate memory. Please set max locked memory (ulimit -l) to 'unlimited' (current: 64 kbytes)",
        "H100-2:19989:20082 [1] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer x with error 4",
    ],
    ids=["cufile-log", "ucx", "nccl"],
)
def test_application_log_lines_are_not_a_kernel_log(line: str) -> None:
    assert not dmesg.recognise(line + "\n")


def test_a_kernel_log_with_rdma_lines_stays_a_kernel_log() -> None:
    from gdsdoctor.capture.detect import recognise

    text = (DATA / "dmesg-nvmeof-rdma-mlx5-pi-mr-pool-einval.txt").read_text()
    probe = recognise(text)
    assert probe is not None and probe.section == "dmesg"


# Filesystem and loop-device lines every host logs (mounts, unmounts, loop devices attached),
# and failures of the same filesystems and devices, quoted from public kernel threads (LKML,
# xfs and ext4 lists) and from this VM's log.
ROUTINE_STORAGE_LINES = [
    "[ 74.346464] XFS (dm-0): Mounting V5 Filesystem",
    "[ 74.519334] XFS (dm-0): Starting recovery (logdev: internal)",
    "[ 75.001000] XFS (dm-0): Unmounting Filesystem",
    "[ 76.123456] EXT4-fs (loop0): mounted filesystem 5f8036dd-614e-4eda-9826-dbac54c3935e r/w with ordered data mode. Quota mode: none.",
    "[ 76.903435] EXT4-fs (loop0): unmounting filesystem 5f8036dd-614e-4eda-9826-dbac54c3935e.",
    "[ 76.949209] loop0: detected capacity change from 0 to 4194304",
]
STORAGE_FAILURE_LINES = {
    "[ 80.000001] XFS (dm-0): Internal error XFS_WANT_CORRUPTED_RETURN at line 337 of file fs/xfs/libxfs/xfs_alloc.c.": "fs_error",
    "[ 80.000002] XFS (dm-1): log I/O error -5": "fs_error",
    "[ 80.000003] XFS (dm-1): Filesystem has been shut down due to log error (0x2).": "fs_shutdown",
    "[ 80.000004] XFS (dm-3): xfs_log_force: error -5 returned.": "fs_error",
    "[ 80.000005] EXT4-fs error (device nvme0n1p1): ext4_find_entry:1455: inode #2: comm ls: reading directory lblock 0": "fs_error",
    "[ 80.000006] EXT4-fs (dm-0): I/O error while writing superblock": "fs_error",
    "[ 80.000007] loop5: detected capacity change from 8 to 0": "capacity_to_zero",
}


def test_routine_mount_and_loop_lines_are_markers_not_events_but_failures_are() -> None:
    """Hints name failures and lifecycle markers, not the filesystems every line names: a log of
    mounts gives markers and no event, while each failure still gives its event."""
    routine = "\n".join(ROUTINE_STORAGE_LINES * 50)
    # a mount, an unmount, a loop device attached: lifecycle markers (what ends an event's
    # object), never failure events; "Starting recovery" is neither, and costs nothing
    hinted = set(dmesg.hinted_line_numbers(routine, dmesg.hints_in(routine)))
    assert not any(n % len(ROUTINE_STORAGE_LINES) == 2 for n in hinted)
    quiet = dmesg.parse(routine, "x")
    assert quiet["events"] == [] and len(quiet["lifecycle"]) == 5 * 50
    section = dmesg.parse(routine + "\n" + "\n".join(STORAGE_FAILURE_LINES), "x")
    assert [event["kind"] for event in section["events"]] == list(STORAGE_FAILURE_LINES.values())
