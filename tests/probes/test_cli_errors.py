"""The setup commands' error lines (issue 23 item 7) and fstab (item 2), on real samples
(tests/data/cli_errors/SOURCES.md, tests/data/fstab/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor.errors import ParseError
from gdsdoctor.probes import cli_errors, fstab, mounts

DATA = Path(__file__).parent.parent / "data"


@pytest.mark.parametrize(
    ("name", "kind", "fields"),
    [
        ("nvme-discover-rdma-einval.spdk-900.txt", "fabrics_write_failed", {"errno": "EINVAL"}),
        ("nvme-discover-rdma-einval.spdk-684.txt", "fabrics_write_failed", {"errno": "EINVAL"}),
        ("nvme-connect-rdma-no-trsvcid.libnvme-295.txt", "trsvcid_missing", {"transport": "rdma"}),
        ("nvme-connect-enomem-v2.nvmeof-firmware-notes.txt", "fabrics_write_failed", {"errno": "ENOMEM"}),
        ("modprobe-nvme-rdma-einval-mlnx-ofed-5.4.txt", "module_insert_failed", {"module": "nvme_rdma", "errno": "EINVAL"}),
        ("insmod-nvmet-rdma-invalid-parameters-mlnx-ofed-5.4.txt", "module_insert_failed", {"module": "nvmet_rdma"}),
        ("modprobe-nvme-not-found-6.11.txt", "module_not_found", {"module": "nvme", "kernel": "6.11.0-17-generic"}),
        ("modprobe-nvidia-fs-not-found.composed.txt", "module_not_found", {"module": "nvidia_fs"}),
        ("mount-nvme-wrong-fs-type.aws-notes.txt", "mount_failed", {"device": "/dev/nvme1n1", "mountpoint": "/mnt/data"}),
        ("mount-nvme-wrong-fs-type-wrapped.korean-notes.txt", "mount_failed", {"device": "/dev/nvme1n1", "mountpoint": "/data"}),
        ("mount-xfs-sb-validate-failed.linux-xfs.txt", "mount_failed", {"device": "/dev/nvme0n1p5"}),
    ],
)  # fmt: skip
def test_error_lines(name: str, kind: str, fields: dict[str, str]) -> None:
    text = (DATA / "cli_errors" / name).read_text()
    assert cli_errors.recognise(text)
    section = cli_errors.parse(text, name)
    error = next(e for e in section["errors"] if e["kind"] == kind)
    assert {key: error[key] for key in fields} == fields
    assert error["src"]["line"] >= 1 and error["src"]["text"].strip()


def test_the_prompt_line_gives_the_mount_options() -> None:
    text = (DATA / "cli_errors" / "mount-barrier0-reference-procedure.composed.txt").read_text()
    command = cli_errors.parse(text, "x")["commands"][0]
    assert (command["options"], command["device"], command["mountpoint"]) == (
        ["noatime", "nodiratime", "barrier=0"], "/dev/nvme1n1", "/mnt/ai-scratch")  # fmt: skip


def test_a_bare_numa_node_value_with_its_command() -> None:
    text = (DATA / "cli_errors" / "numa-node-multipath-head.composed.txt").read_text()
    assert cli_errors.recognise(text)
    read = cli_errors.parse(text, "x")["numa_reads"][0]
    assert (read["device"], read["value"]) == ("nvme1n1", -1)


@pytest.mark.parametrize(
    "text",
    ["nvme-subsys0 - NQN=nqn.x\n\\\n +- nvme0 pcie 0000:01:00.0 live\n",  # an output, not an error
     "$ nvme connect -t rdma -a 10.0.0.1 -s 4420 -n nqn.x\n",  # a command that printed nothing
     "Failed to write the report\n"],
)  # fmt: skip
def test_near_misses_are_not_read(text: str) -> None:
    assert not cli_errors.recognise(text)


@pytest.mark.parametrize(
    ("name", "points"),
    [
        (
            "fstab-nfs-nofail-netdev.domus-docs.txt",
            [("/mnt/data", False, True), ("/mnt/nas/vms", True, True)],
        ),
        ("fstab-ubuntu-default-plus-scratch-barrier0.composed.txt", [("/mnt/ai-scratch", False, False)]),
        ("fstab-scratch-netdev-nofail.composed.txt", [("/mnt/ai-scratch", True, True)]),
    ],
)
def test_fstab(name: str, points: list[tuple[str, bool, bool]]) -> None:
    text = (DATA / "fstab" / name).read_text()
    assert fstab.recognise(text) and not mounts.recognise(text)  # the two share a line format
    section = fstab.parse(text, name)
    assert sorted({(e["mountpoint"], e["netdev"], e["nofail"]) for e in section["data_entries"]}) == points


def test_a_mount_table_is_not_an_fstab() -> None:
    for path in sorted((DATA / "mounts").glob("*.txt")):
        assert not fstab.recognise(path.read_text()), path.name


def test_an_fstab_of_comments_only_mounts_nothing() -> None:
    """This machine's own /etc/fstab (a Debian base image: one comment, no entry) is an empty
    table, not an unparsable file; text of another kind still is not an fstab."""
    text = (DATA / "fstab" / "fstab-debian-base-unconfigured.this-machine.txt").read_text()
    assert fstab.parse(text, "etc/fstab") == {"entries": [], "data_entries": []}
    with pytest.raises(ParseError):
        fstab.parse("hello world\n", "etc/fstab")
    with pytest.raises(ParseError):
        fstab.parse("", "etc/fstab")
