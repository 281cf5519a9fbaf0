"""Severity by device class and role (issue 15): each judgement with a near-miss.

The kernel-log lines are quoted from public reports (tests/data/device_judgement/SOURCES.md); the
mount tables are written the way /proc/mounts prints them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor.facts.derived import devices as derive_devices
from gdsdoctor.pipeline import analyze_paths

DATA = Path(__file__).resolve().parents[1] / "data" / "device_judgement"

SNAP_MOUNTS = (
    "/dev/nvme0n1p2 / ext4 rw,relatime 0 0\n/dev/loop2 /snap/core20/2318 squashfs ro,nodev,relatime 0 0\n"
)
LOOP_CHECKPOINT_MOUNTS = "/dev/nvme0n1p2 / ext4 rw,relatime 0 0\n/dev/loop2 /mnt/ckpt ext4 rw,relatime 0 0\n"
ROOT_ON_SDA = "/dev/sda1 / ext4 rw,relatime 0 0\n/dev/nvme0n1 /data xfs rw,relatime 0 0\n"
DATA_ON_SDA = "/dev/nvme0n1p1 / ext4 rw,relatime 0 0\n/dev/sda1 /mnt/ckpt xfs rw,relatime 0 0\n"


def _sample(name: str) -> str:
    return (DATA / name).read_text()


def _findings(
    tmp_path: Path, log: str, mounts: str | None = None, path: str | None = None
) -> dict[str, dict]:
    """The findings (by id) of analyzing a kernel log, with a mount table if given."""
    files = [tmp_path / "dmesg.txt"]
    files[0].write_text(log)
    if mounts is not None:
        (tmp_path / "mounts").write_text(mounts)
        files.append(tmp_path / "mounts")
    return {f["id"]: f for f in analyze_paths(files, path).report["findings"]}


def test_loop_image_errors_are_info(tmp_path: Path) -> None:
    found = _findings(tmp_path, _sample("loop-snap-io-error.log"))
    assert found["blk-io-errors"]["severity"] == "info"


def test_snap_loop_errors_with_the_mount_table_are_info(tmp_path: Path) -> None:
    found = _findings(tmp_path, _sample("loop-snap-io-error.log"), SNAP_MOUNTS)
    assert found["blk-io-errors"]["severity"] == "info"
    assert any("loop2 (loop, snap)" in e["text"] for e in found["blk-io-errors"]["evidence"])


def test_near_miss_loop_device_under_the_checkpoint_path_stays_critical(tmp_path: Path) -> None:
    found = _findings(
        tmp_path, _sample("loop-snap-io-error.log"), LOOP_CHECKPOINT_MOUNTS, path="/mnt/ckpt/step1"
    )
    assert found["blk-io-errors"]["severity"] == "critical"


def test_scsi_medium_error_is_a_disk_cause_with_smartctl(tmp_path: Path) -> None:
    found = _findings(tmp_path, _sample("sdb-medium-error.log"))
    assert "nvme-media-errors" not in found
    disk = found["disk-media-errors"]
    assert disk["severity"] == "critical"  # role unknown: not played down
    commands = [step["command"] for step in disk["remediation"]]
    assert "smartctl -H -A /dev/sdb" in commands
    assert not any("nvme" in line for line in commands)
    assert found["blk-io-errors"]["explained_by"] == "disk-media-errors"


def test_near_miss_nvme_medium_error_stays_an_nvme_cause(tmp_path: Path) -> None:
    found = _findings(
        tmp_path,
        "[ 812.331207] critical medium error, dev nvme1n1, sector 2048 op 0x1:(WRITE) flags 0x0 "
        "phys_seg 1 prio class 0\n",
    )
    assert found["nvme-media-errors"]["severity"] == "critical"
    assert "disk-media-errors" not in found


def test_errors_on_the_root_disk_are_at_most_a_warning(tmp_path: Path) -> None:
    found = _findings(tmp_path, _sample("sdb-medium-error.log"), ROOT_ON_SDA.replace("sda1", "sdb1"))
    assert found["disk-media-errors"]["severity"] == "warning"


def test_near_miss_errors_on_a_data_disk_are_critical(tmp_path: Path) -> None:
    found = _findings(tmp_path, _sample("sdb-medium-error.log"), DATA_ON_SDA.replace("sda1", "sdb1"))
    assert found["disk-media-errors"]["severity"] == "critical"


def test_single_polled_timeout_is_a_warning_under_lost_interrupts(tmp_path: Path) -> None:
    found = _findings(tmp_path, _sample("nvme-completion-polled.log"))
    assert found["nvme-io-timeouts"]["severity"] == "warning"
    assert found["nvme-io-timeouts"]["explained_by"] == "nvme-lost-interrupts"


@pytest.mark.parametrize(
    "lines",
    [
        # repetition: three timeouts on one controller
        [
            f"[  {107 + 61 * i}.508575] nvme nvme0: I/O {12 + i} QID 3 timeout, completion polled"
            for i in range(3)
        ],
        # a single timeout that the driver aborted
        ["[  107.508575] nvme nvme0: I/O 12 QID 3 timeout, aborting"],
    ],
)
def test_near_miss_repeated_or_aborted_timeouts_are_critical(tmp_path: Path, lines: list[str]) -> None:
    found = _findings(tmp_path, "\n".join(lines) + "\n")
    assert found["nvme-io-timeouts"]["severity"] == "critical"


def test_hung_journal_of_the_root_disk_is_a_warning(tmp_path: Path) -> None:
    found = _findings(tmp_path, _sample("jbd2-hung-sda1.log"), ROOT_ON_SDA)
    hung = found["storage-task-hung"]
    assert hung["severity"] == "warning"
    assert any("jbd2_journal_commit_transaction" in e["text"] for e in hung["evidence"])


def test_near_miss_hung_journal_of_the_checkpoint_disk_is_critical(tmp_path: Path) -> None:
    found = _findings(tmp_path, _sample("jbd2-hung-sda1.log"), DATA_ON_SDA)
    assert found["storage-task-hung"]["severity"] == "critical"


def test_hung_application_in_ext4_code_is_a_storage_stall(tmp_path: Path) -> None:
    found = _findings(tmp_path, _sample("promtail-hung.log"))
    assert found["storage-task-hung"]["severity"] == "warning"  # no device named


def test_near_miss_hung_task_outside_the_storage_path_is_not_a_storage_stall(tmp_path: Path) -> None:
    found = _findings(
        tmp_path,
        "[ 2418.120624] INFO: task khugepaged:61 blocked for more than 120 seconds.\n"
        "[ 2418.151697] Call Trace:\n"
        "[ 2418.154331]  __schedule+0x282/0x870\n"
        "[ 2418.163373]  schedule+0x46/0xb0\n"
        "[ 2418.163399]  khugepaged+0x1c1/0x2230\n",
    )
    assert "storage-task-hung" not in found


MD_FAILURE = (
    "[ 9031.112873] md/raid1:md0: Disk failure on sdb1, disabling device.\n"
    "[ 9031.112873] md/raid1:md0: Operation continuing on 1 devices.\n"
)


def test_md_member_failure(tmp_path: Path) -> None:
    found = _findings(tmp_path, MD_FAILURE)
    assert found["md-array-member-failed"]["severity"] == "critical"
    assert "mdadm --detail /dev/md0" in [s["command"] for s in found["md-array-member-failed"]["remediation"]]


def test_near_miss_md_assembly_messages_are_not_failures(tmp_path: Path) -> None:
    found = _findings(
        tmp_path,
        "[    3.112873] md/raid1:md0: active with 2 out of 2 mirrors\n"
        "[    3.112901] md0: detected capacity change from 0 to 1000068202496\n",
    )
    assert "md-array-member-failed" not in found


OOPS = """\
[ 1184.529190] BUG: kernel NULL pointer dereference, address: 0000000000000008
[ 1184.529243] Oops: 0000 [#1] SMP NOPTI
[ 1184.529300] RIP: 0010:nvme_pci_complete_rq+0x1c/0x130 [nvme]
[ 1184.529410] Call Trace:
[ 1184.529430]  <IRQ>
[ 1184.529452]  nvme_irq+0x15e/0x250 [nvme]
[ 1184.529489]  __handle_irq_event_percpu+0x42/0x170
"""


def test_oops_in_the_nvme_driver(tmp_path: Path) -> None:
    found = _findings(tmp_path, OOPS)
    assert any("nvme_irq [nvme]" in e["text"] for e in found["storage-module-oops"]["evidence"])


def test_near_miss_oops_outside_storage_code(tmp_path: Path) -> None:
    found = _findings(
        tmp_path,
        OOPS.replace("nvme_pci_complete_rq+0x1c/0x130 [nvme]", "e1000_clean+0x1c/0x130 [e1000e]").replace(
            "nvme_irq+0x15e/0x250 [nvme]", "e1000_intr_msi+0x15e/0x250 [e1000e]"
        ),
    )
    assert "storage-module-oops" not in found


@pytest.mark.parametrize(
    ("name", "expected"),
    [("nvme0n1p1", "nvme"), ("nvme2", "nvme"), ("sdb", "scsi"), ("sda1", "scsi"), ("loop3", "loop"),
     ("zram0", "ram"), ("sr0", "optical"), ("md127", "md"), ("dm-2", "dm"), ("vg0-lv_data", "dm"),
     ("vda", "virtio"), ("enp65s0f0", "network"), ("mmcblk0", "mmc"), ("mmcblk0p1", "mmc"), ("nbd0", "other")],
)  # fmt: skip
def test_device_class(name: str, expected: str) -> None:
    assert derive_devices.device_class(name) == expected


def test_one_gbe_management_nic_is_not_a_degraded_data_link() -> None:
    links = [
        {"bdf": "0000:04:00.0", "kind": "nic", "rdma": None, "width_reduced": True,
         "says": "NIC 0000:04:00.0 (Intel Corporation I210 Gigabit Network Connection) x1 of x4"},
        {"bdf": "0000:17:00.0", "kind": "nic", "rdma": True, "width_reduced": True,
         "says": "NIC 0000:17:00.0 (Mellanox Technologies MT2910 Family [ConnectX-7]) x8 of x16"},
        {"bdf": "0000:18:00.0", "kind": "nic", "rdma": None, "width_reduced": True,
         "says": "NIC 0000:18:00.0 (Intel Corporation Ethernet Controller X710 for 10GbE SFP+) x4 of x8"},
    ]  # fmt: skip
    judged = derive_devices.derive({}, {"topology": {"links": links}})["links"]
    assert [link["role"] for link in judged] == ["management", "data", "data"]


def test_management_nic_known_by_its_driver_and_near_miss_rdma() -> None:
    links = [
        {"bdf": "0000:c1:00.0", "kind": "nic", "width_reduced": True, "says": "eno1 (0000:c1:00.0): x1"},
        {"bdf": "0000:c2:00.0", "kind": "nic", "width_reduced": True, "says": "ens1 (0000:c2:00.0): x1"},
    ]
    facts = {
        "pci": {
            "status": "ok",
            "devices": [{"bdf": "0000:c1:00.0", "driver": "tg3"}, {"bdf": "0000:c2:00.0", "driver": "tg3"}],
        }
    }
    derived = {"topology": {"links": links, "devices": [{"bdf": "0000:c2:00.0", "rdma": True}]}}
    judged = derive_devices.derive(facts, derived)["links"]
    assert [link["role"] for link in judged] == ["management", "data"]


EXT4_ROOT_ERROR = (
    "[ 7321.440211] EXT4-fs error (device sda1): ext4_find_entry:1455: inode #2: comm ls: "
    "reading directory lblock 0\n"
)


def test_filesystem_errors_on_the_root_disk_are_a_warning(tmp_path: Path) -> None:
    found = _findings(tmp_path, EXT4_ROOT_ERROR, ROOT_ON_SDA)
    assert found["fs-errors-or-shutdown"]["severity"] == "warning"


def test_near_miss_root_filesystem_named_as_the_checkpoint_path_is_critical(tmp_path: Path) -> None:
    found = _findings(tmp_path, EXT4_ROOT_ERROR, ROOT_ON_SDA, path="/home/ckpt")
    assert found["fs-errors-or-shutdown"]["severity"] == "critical"


def _lsblk(*devices: dict) -> dict:
    return {"status": "ok", "by_name": {d["name"]: d for d in devices}}


def test_unmounted_disk_is_info_and_near_miss_its_mounted_partition_is_data() -> None:
    event = {"kind": "blk_io_error", "device": "sdc", "details": {"error": "I/O"}}
    facts = {
        "dmesg": {"status": "ok", "events": [event]},
        "lsblk": _lsblk({"name": "sdc", "children": ["sdc1"], "mountpoints": []},
                        {"name": "sdc1", "children": [], "mountpoints": []}),
    }  # fmt: skip
    assert derive_devices.derive(facts, {})["roles"]["sdc"]["ceiling"] == "info"
    facts["lsblk"]["by_name"]["sdc1"]["mountpoints"] = ["/scratch"]
    role = derive_devices.derive(facts, {})["roles"]["sdc"]
    assert (role["role"], role["ceiling"]) == ("data", "critical")


def test_garbage_facts_give_empty_judgements_not_an_exception() -> None:
    facts = {"dmesg": {"status": "ok", "events": [{"kind": "blk_io_error", "device": ["not", "a", "name"]}]},
             "lsblk": {"status": "ok", "by_name": {"sda": "garbage"}}, "mounts": {"status": "ok", "mounts": 7}}  # fmt: skip
    found = derive_devices.derive(
        facts, {"storage": {"checkpoint_mounts": "x"}, "topology": {"links": [None, 3]}}
    )
    assert set(derive_devices.EMPTY) <= set(found) and found["error"] is None
    assert found["storage_events"][0]["device_role"] == "unknown"
