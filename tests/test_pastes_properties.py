"""Every reader meets garbage, a paste with wrappers and a file with one bad line: a status and a
message, never an exception, never a lost file (issue 15)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gdsdoctor.capture.capture import Capture
from gdsdoctor.capture.detect import PasteReader
from gdsdoctor.errors import UserError
from gdsdoctor.facts.section import section_from
from gdsdoctor.model import Artifact, ArtifactStatus
from gdsdoctor.probes import BY_SECTION

DATA = Path(__file__).parent / "data"
SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# One real sample per reader that reads text line by line (JSON documents do not survive a bad line
# in their middle, and are still accounted for: see test_one_bad_line_never_loses_the_file).
SAMPLES = {
    "mounts": "mounts/mount.jc-centos-7.7.txt",
    "lsblk": "lsblk/lsblk-2.38.1-sysroot-simple-nvme-l.txt",
    "os_release": "system/os-release.compliance-as-code-rhcos-4.13.txt",
    "nvidia_smi": "gpu/nvidia-smi.txt",
    "dmesg": "dmesg/dmesg-nvme-pcie-io-timeout-aborting-old-format.txt",
    "df": "fs/df-i.ubuntuforums-2015-ibod-inodes-full.txt",
    "lspci": "pci/lspci-vvv.cx7-gen5-x16-acs-disabled.stelline.txt",
    "infiniband": "rdma/ibstat.h100-ib-ndr-cx7.all-active.txt",
    "gdscheck": "gdscheck/gdsnvfs-070--gdscheck-p.txt",
    "nvidia_topo": "gpu/nvidia-smi-topo-m.asus-esc8000a-e12.4gpu-4nic.txt",
    "app_log": "app_log/nccl-1698--net-ib-status-12-vendor-129-roce.log",
}
# More than one sample of a section: "section:what" (the reading is the part before the colon).
SAMPLES |= {
    "infiniband:ibstat-port": "rdma/ibstat-port.mlx4-qdr-down-polling.redhat-cip-hardware.txt",
    "app_log:ucx": "app_log/ucx-6000--transport-retry-exceeded-roce.log",
    "app_log:gdsio": "app_log/gdsnvfs-057--gdsio-io-failed.txt",
    "infiniband:ibdev2netdev": "rdma/ibdev2netdev-v.cx4-eth-sriov-vfs-down.sriov-cni.txt",
    "fio:text": "bench/fio-3.1-text.libaio-4k-write-qd4.vps-comparison.txt",
    "nvme_smart:text": "nvme_cli/nvme-smart-log-text.v1.14-samsung-pm981.opensource-com.txt",
    "nvme_smart:smartctl": "nvme_cli/smartctl-a-nvme.v7.4-apple-ssd.smartdisk.txt",
    "nvme_id_ctrl:text": "nvme_cli/nvme-id-ctrl-text.v1.14-samsung-pm981.opensource-com.txt",
    "mounts:findmnt": "mounts/findmnt-tree.nvme-home-efi.redashu-notes.txt",
    "netdev:ip-link": "rdma/ip-link.this-machine-debian12-vm.txt",
}
TEXTS = {case: (DATA / path).read_text() for case, path in SAMPLES.items()}
ALL_SAMPLES = sorted(
    p
    for p in DATA.rglob("*")
    if p.is_file() and p.suffix in (".txt", ".json", ".log") and p.stat().st_size < 200_000
)


def read(name: str, text: str) -> Capture:
    capture = Capture("files")
    reader = PasteReader(capture)
    reader.add(name, text.encode("utf-8", "surrogatepass"), name)
    return capture


def accounted_for(capture: Capture, name: str) -> bool:
    """The input is read (an artifact) or the report says why not (a note naming it)."""
    return any(a.startswith(name) for a in capture.artifacts) or any(
        n.startswith(name) for n in capture.notes
    )


WRAPPERS = {
    "fence": lambda t: f"```\n{t}\n```\n",
    "prose-and-fence": lambda t: f"Output below, thanks\n\n```console\n{t}\n```\nAny idea?\n",
    "prompt": lambda t: f"$ some-command --flag\n{t}",
    "root-prompt": lambda t: f"root@gpu-node-3:~# some-command\n{t}\nroot@gpu-node-3:~# \n",
    "quote": lambda t: "".join(f"> {line}\n" for line in t.split("\n")),
    "crlf": lambda t: t.replace("\n", "\r\n"),
    "blank-lead": lambda t: f"\n\n  \n{t}",
    "indent": lambda t: "".join(f"    {line}\n" for line in t.split("\n")),
}


@pytest.mark.parametrize("case", sorted(SAMPLES))
@given(wrappers=st.lists(st.sampled_from(sorted(WRAPPERS)), min_size=1, max_size=3, unique=True))
@SETTINGS
def test_a_wrapped_paste_is_read_as_what_it_wraps(case: str, wrappers: list[str]) -> None:
    if {"fence", "prose-and-fence"} <= set(wrappers):
        wrappers.remove("fence")  # a fence inside a fence is not markdown anyone writes
    text, section = TEXTS[case], case.partition(":")[0]
    for wrapper in wrappers:
        text = WRAPPERS[wrapper](text)
    capture = read("ticket.txt", text)
    assert list(capture.assignments) == [section], capture.notes
    parsed = section_from(BY_SECTION[section], [capture.artifacts[capture.assignments[section][0]]])
    assert parsed["status"] == "ok", parsed


@pytest.mark.parametrize("case", sorted(SAMPLES))
@given(
    where=st.floats(min_value=0, max_value=1), bad=st.sampled_from(["???", "x" * 300, "\x00\x01", "a b c"])
)
@SETTINGS
def test_one_bad_line_leaves_the_reading_and_its_facts(case: str, where: float, bad: str) -> None:
    lines, section = TEXTS[case].split("\n"), case.partition(":")[0]
    at = int(where * len(lines))
    capture = read("one-bad-line.txt", "\n".join([*lines[:at], bad, *lines[at:]]))
    assert list(capture.assignments) == [section], capture.notes
    parsed = section_from(BY_SECTION[section], [capture.artifacts[capture.assignments[section][0]]])
    assert parsed["status"] == "ok", parsed


@pytest.mark.parametrize("path", ALL_SAMPLES, ids=lambda p: str(p.relative_to(DATA)))
def test_one_bad_line_never_loses_the_file(path: Path) -> None:
    lines = path.read_text(errors="replace").split("\n")
    text = "\n".join([*lines[: len(lines) // 2], "}{ not part of it", *lines[len(lines) // 2 :]])
    try:
        capture = read(path.name, text)
    except UserError as error:  # two hosts named inside one file: refused with a line, not lost
        assert "more than one host" in str(error)
        return
    assert accounted_for(capture, path.name)
    for section, names in capture.assignments.items():
        artifacts = [capture.artifacts[n] for n in names]
        assert section_from(BY_SECTION[section], artifacts)["status"] in ("ok", "unparsable")


@given(st.text(max_size=2000))
@SETTINGS
def test_garbage_is_a_note_or_a_reading_never_an_exception(garbage: str) -> None:
    try:
        capture = read("garbage.txt", garbage)
    except UserError as error:
        assert "more than one host" in str(error)
        return
    assert accounted_for(capture, "garbage.txt") or not garbage.strip()
    for section, names in capture.assignments.items():
        artifact: Artifact = capture.artifacts[names[0]]
        assert artifact.status is ArtifactStatus.OK
        assert section_from(BY_SECTION[section], [artifact])["status"] in ("ok", "unparsable", "error")
