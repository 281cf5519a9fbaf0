"""Installer and provisioning logs (issue 32 item 2): anaconda's, Python logging's default,
Subiquity's/curtin's and cloud-init's line prefixes removed as the syslog one is, the kernel's
lines given to the kernel-log reader and the rest to their own. Real samples:
tests/data/installer_logs/SOURCES.md; near misses (an installer's log with no storage error) stay
quiet."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor.capture import installer
from gdsdoctor.capture.unwrap import unwrap
from gdsdoctor.probes import dmesg
from tests.conftest import read_paste

LOGS = Path(__file__).resolve().parent / "data" / "installer_logs"
HUNG = LOGS / "anaconda-syslog-hung-task-btrfs.linux-btrfs-2019-07-26.txt"


@pytest.mark.parametrize(
    ("line", "form", "message"),
    [
        ("15:52:20,316 ERR kernel:INFO: task kworker/u4:0:7 blocked", "anaconda", "- kernel: INFO: task kworker/u4:0:7 blocked"),
        ("15:52:20,317 WARNING kernel: ? __schedule+0x352/0x900", "anaconda", "- kernel:  ? __schedule+0x352/0x900"),
        ("17:43:11,437 INF program: Running... udevadm settle", "anaconda", "Running... udevadm settle"),
        ("ERROR:blivet:failed to update sysfs path for vda1", "python", "failed to update sysfs path for vda1"),
        ("2021-11-16 17:05:04,630 ERROR subiquity.server.server:393 top level error", "subiquity", "top level error"),
        ("2024-05-01 11:22:10,488 - util.py[WARNING]: Failed during filesystem operation", "cloud-init", "Failed during filesystem operation"),
    ],
)  # fmt: skip
def test_each_installer_prefix_goes(line: str, form: str, message: str) -> None:
    removed: list[str] = []
    assert installer.strip([line, line], removed) == [message, message]
    assert removed == [f"{form} log prefixes"]


@pytest.mark.parametrize(
    "lines",
    [
        ["[  12.3] nvme nvme0: I/O 12 QID 3 timeout, aborting"] * 3,  # dmesg
        ["Jul 26 15:52:20 host kernel: nvme nvme0: reset"] * 3,  # syslog: unwrap's own prefix
        ["INFO:root:step 10", *["loss 1.0 lr 0.1 tokens 4096"] * 5],  # Python's default, a job's few lines
        ["12:00:01 up 3 days", "12:00:02 load 0.1"],  # a clock is no installer's prefix
    ],
)
def test_what_carries_no_installer_prefix_stays(lines: list[str]) -> None:
    removed: list[str] = []
    assert installer.strip(lines, removed) == lines
    assert removed == []


def test_anaconda_kernel_lines_reach_the_kernel_log_reader() -> None:
    capture = read_paste(HUNG)
    assert list(capture.assignments) == ["dmesg"]
    text = capture.artifacts[capture.assignments["dmesg"][0]].text
    parsed = dmesg.parse(text, "x")
    hung = [e for e in parsed["events"] if e["kind"] == "hung_task"]
    assert hung and hung[0]["details"]["task"] == "kworker/u4:0:7"
    # the mail's 72-column wrap was joined back before the prefix went, and the stack was read
    assert hung[0]["details"]["seconds"] == 122
    assert "btrfs_tree_read_lock [btrfs]" in hung[0]["details"]["trace"]
    assert hung[0]["src"]["line"] == 7


def test_the_kernel_lines_and_the_rest_are_two_parts_at_their_own_lines() -> None:
    parts = unwrap(HUNG.read_text())
    kernel, rest = parts
    kernel_lines, rest_lines = kernel.text.split("\n"), rest.text.split("\n")
    assert all(not line or line.startswith(installer.KERNEL) for line in kernel_lines)
    assert not any(line.startswith(installer.KERNEL) for line in rest_lines)
    assert kernel.first_line == rest.first_line == 1
    # each line where it was pasted: line 7 of the file is the hung task's
    assert kernel_lines[6].startswith("- kernel: INFO: task kworker/u4:0:7")


def test_a_nested_prefix_goes_too() -> None:
    path = LOGS / "anaconda-syslog-storage-module-no-error.kickstart-tests-1028.txt"
    (part,) = unwrap(path.read_text())
    assert part.text.startswith("executing action: [183] create format ext4")
    assert {"anaconda log prefixes", "python log prefixes"} <= set(part.removed)


@pytest.mark.parametrize(
    "name",
    [
        "anaconda-syslog-storage-module-no-error.kickstart-tests-1028.txt",
        "cloud-init-disk-setup-healthy.cloud-init-pr-5263.txt",
        "cloud-init-disk-setup-lsblk-not-a-block-device.cloud-init-5246.txt",
        "console-anaconda-storage-no-error.complianceascode-10277.txt",
    ],
)
def test_an_installer_log_without_a_storage_error_stays_quiet(name: str) -> None:
    """Nothing in them is an output gdsdoctor reads, and no line is taken for a kernel's."""
    capture = read_paste(LOGS / name)
    assert not capture.assignments


def test_a_programs_console_lines_are_no_kernel_log() -> None:
    """journald's console form (an installer's serial console): the kernel's clock before a
    program's name and pid. Read as a kernel log before, a log with no storage error said the
    kernel log was clean; now the prefix goes and the programs' lines are theirs."""
    path = LOGS / "console-anaconda-mounts-and-df.coreos-assembler-695.txt"
    mounts, df = unwrap(path.read_text())
    assert "console log prefixes" in mounts.removed and "console log prefixes" in df.removed
    assert mounts.text.startswith("sysfs on /sys type sysfs") and (mounts.first_line, df.first_line) == (2, 8)
    assert df.text.startswith("Filesystem      Size  Used Avail Use% Mounted on")
    assert not dmesg.recognise(path.read_text())
    # the tool output inside reaches its readers: df's header starts df's part
    capture = read_paste(path)
    assert sorted(capture.assignments) == ["df", "mounts"]
    df = capture.artifacts[capture.assignments["df"][0]].text.split("\n")
    assert df[7].startswith("Filesystem      Size") and df[8].startswith("/dev/sda2       7.0G")


def test_a_kernel_log_with_a_few_programs_lines_stays_a_kernel_log() -> None:
    path = (
        Path(__file__).resolve().parent / "data" / "dmesg" / "dmesg-nvme-pcie-device-not-ready-io-error.txt"
    )
    assert "systemd[1]:" in path.read_text()
    assert dmesg.recognise(path.read_text())
    assert list(read_paste(path).assignments) == ["dmesg"]


def test_the_form_is_decided_on_the_head_of_the_text() -> None:
    """An installer prefixes its log from the first line; a long kernel log is not matched line by
    line for one (its clock is the console form's): prefixed lines after HEAD_LINES others decide nothing."""
    anaconda = "15:52:20,316 ERR kernel:INFO: task kworker/u4:0:7 blocked for more than 122 seconds."
    kernel = [f"[{i}.5] nvme nvme0: I/O {i} QID 3 timeout, aborting" for i in range(installer.HEAD_LINES)]
    assert installer.form_of([*kernel, *[anaconda] * 50]) is None
    assert installer.form_of([anaconda] * 300 + kernel) == "anaconda"  # 300 of the first 2000
