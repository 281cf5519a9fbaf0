"""Pastes as tickets hold them: wrappers removed, every reader asked, files of one kind merged,
files of two hosts refused (issue 15, the reading half)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor.capture.capture import Capture
from gdsdoctor.capture.detect import PasteReader, capture_files
from gdsdoctor.capture.merge import host_conflict, merge_kernel_logs, merge_lspci
from gdsdoctor.capture.recognition import recognise_text
from gdsdoctor.capture.unwrap import dedented, unwrap
from gdsdoctor.errors import UserError
from gdsdoctor.pipeline import analyze_paths
from gdsdoctor.probes import BY_SECTION
from gdsdoctor.probes.dmesg import parse as parse_dmesg
from gdsdoctor.probes.pci import parse_lspci

DATA = Path(__file__).parent / "data"
MOUNTS = (DATA / "mounts" / "mount.jc-centos-7.7.txt").read_text()
LSBLK_P = (DATA / "lsblk" / "lsblk-2.38.1-sysroot-simple-nvme-P-reordered.txt").read_text()
DMESG = (DATA / "dmesg" / "dmesg-nvme-pcie-io-timeout-aborting-old-format.txt").read_text()
LSPCI_FULL = (DATA / "pci" / "lspci-vvv.cx7-gen5-x16-acs-disabled.stelline.txt").read_text()
LSPCI_GREP = (DATA / "pci" / "lspci-vvv-grep-ACSCtl.all-disabled.stelline.txt").read_text()


def read(*named: tuple[str, str]) -> Capture:
    capture = Capture("files")
    reader = PasteReader(capture)
    for name, text in named:
        reader.add(name, text.encode(), name)
    reader.finish()
    return capture


def section_of(text: str) -> str | None:
    capture = read(("paste.txt", text))
    return next(iter(capture.assignments), None)


# --- wrappers ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "wrapped",
    [
        f"```\n{MOUNTS}```\n",  # markdown fence
        f"Here is the output:\n\n```text\n{MOUNTS}```\nThanks!\n",  # prose around a fence
        f"$ mount\n{MOUNTS}",  # a prompt
        f"root@gpu-node-7:~# mount\n{MOUNTS}root@gpu-node-7:~#\n",  # a root prompt, and one after
        "".join(f"> {line}\n" for line in MOUNTS.splitlines()),  # mail quoting
        "".join(f"    {line}\n" for line in MOUNTS.splitlines()),  # indented (markdown code block)
        MOUNTS.replace("\n", "\r\n"),  # CRLF
        f"\n\n\n{MOUNTS}",  # leading blank lines
        "".join(f"`{line}`\n" for line in MOUNTS.splitlines()),  # inline backticks on every line
    ],
    ids=[
        "fence",
        "prose-fence",
        "prompt",
        "root-prompt",
        "quote",
        "indent",
        "crlf",
        "blank-lead",
        "backticks",
    ],
)
def test_wrapped_mount_output_is_read_as_mounts(wrapped: str) -> None:
    capture = read(("ticket.txt", wrapped))
    assert list(capture.assignments) == ["mounts"]
    mounts = BY_SECTION["mounts"].parse(capture.artifacts["ticket.txt"].text, "ticket.txt")["mounts"]
    assert {m["mountpoint"] for m in mounts} >= {"/", "/boot", "/run/user/1000"}


def test_facts_cite_the_lines_of_the_file_as_pasted() -> None:
    """Wrapper lines become blank lines: line 3 of the paste is line 3 in the evidence."""
    capture = read(("t.txt", f"Output:\n```\n{MOUNTS}```\n"))
    mounts = BY_SECTION["mounts"].parse(capture.artifacts["t.txt"].text, "t.txt")["mounts"]
    assert mounts[0]["src"]["line"] == 3
    assert mounts[0]["src"]["text"] == MOUNTS.splitlines()[0]


def test_several_commands_in_one_paste_are_split_and_each_read() -> None:
    paste = (
        "[root@node7 ~]# cat /etc/os-release\n"
        + (DATA / "system" / "os-release.compliance-as-code-rhcos-4.13.txt").read_text()
        + "[root@node7 ~]# lsblk -P -o TYPE,SIZE,NAME,RM\n"
        + LSBLK_P
        + "[root@node7 ~]# nvidia-smi -L\n"
        + (DATA / "gpu" / "nvidia-smi-L.insights-core-a100-pcie.txt").read_text()
    )
    capture = read(("ticket.txt", paste))
    assert sorted(capture.assignments) == ["lsblk", "nvidia_smi", "os_release"]
    assert any("part 2 (`lsblk -P -o TYPE,SIZE,NAME,RM`): read as" in note for note in capture.notes)
    os_release = capture.artifacts[capture.assignments["os_release"][0]].text
    assert os_release.split("\n")[1].startswith('NAME="Red Hat Enterprise Linux CoreOS"')  # line 2 as pasted


def test_a_reader_of_prompts_gets_back_the_prompt_that_names_its_subject() -> None:
    """`ibstat mlx5_3 1` pasted without its "CA:" line: only the prompt names the device; `ulimit -l`
    prints a bare number that only its prompt makes a memlock limit. Other readers never see prompts."""
    from gdsdoctor.facts.section import section_from

    paste = (
        "```\nroot@gpu-node-7:~# ibstat mlx5_3 1\nState: Down\nPhysical state: Disabled\nRate: 40\n"
        "root@gpu-node-7:~# ulimit -l\n64\nroot@gpu-node-7:~# mount\n" + MOUNTS + "```\n"
    )
    capture = read(("ticket.txt", paste))
    assert sorted(capture.assignments) == ["infiniband", "memlock", "mounts"]

    def artifacts(section: str) -> list:
        return [capture.artifacts[name] for name in capture.assignments[section]]

    ib = section_from(BY_SECTION["infiniband"], artifacts("infiniband"))
    assert [(p["device"], p["port"], p["state"], p["src"]["line"]) for p in ib["ports"]] == [
        ("mlx5_3", 1, "DOWN", 3)
    ]
    memlock = section_from(BY_SECTION["memlock"], artifacts("memlock"))
    assert memlock["soft_bytes"] == 64 * 1024 and memlock["src"]["line"] == 7
    mounts = capture.artifacts[capture.assignments["mounts"][0]].text
    assert "ulimit" not in mounts and "ibstat" not in mounts


def test_hash_comments_are_not_prompts() -> None:
    grub = (DATA / "system" / "etc-default-grub.amd_iommu_off-iommu_pt.stelline-puget.txt").read_text()
    assert len(unwrap(grub)) == 1
    assert section_of(grub) == "etc_default_grub"


def test_indentation_is_removed_only_when_the_output_is_not_read_with_it() -> None:
    """`lspci -vvv | grep ACSCtl` lines are all indented, and the lspci reader wants them so."""
    part = unwrap(LSPCI_GREP)[0]
    assert part.text.split("\n")[0].startswith("                ACSCtl:")
    assert section_of(LSPCI_GREP) == "lspci"
    flat = dedented(unwrap("".join(f"      {line}\n" for line in MOUNTS.splitlines()))[0])
    assert flat is not None and flat.text.startswith("sysfs on /sys")


@pytest.mark.parametrize(
    "line",
    [
        "2024-05-01T10:00:00.123+00:00 gpu-node-7 kern.err kernel: [  519.201025] nvme nvme0: I/O 39 QID 3 "
        "timeout, aborting",
        "<3>May  1 10:00:00 gpu-node-7 kernel: [  519.201025] nvme nvme0: I/O 39 QID 3 timeout, aborting",
        "May  1 10:00:00 gpu-node-7 kern warning kernel: [  519.201025] nvme nvme0: I/O 39 QID 3 timeout, "
        "aborting",
        "2024-05-01 10:00:00,123 host=gpu-node-7 level=err kernel: [  519.201025] nvme nvme0: I/O 39 QID 3 "
        "timeout, aborting",
    ],
)
def test_remote_syslog_prefixes_are_reduced_to_what_the_kernel_log_reader_reads(line: str) -> None:
    capture = read(("kern.log", f"{line}\n{line.replace('519.2', '520.2')}\n"))
    assert list(capture.assignments) == ["dmesg"]
    facts = parse_dmesg(capture.artifacts["kern.log"].text, "kern.log")
    assert facts["events"][0]["kind"] == "nvme_timeout"
    assert facts["events"][0]["device"] == "nvme0"


def test_journal_export_records_become_kernel_lines_with_their_host() -> None:
    export = (
        "__CURSOR=s=1\n__REALTIME_TIMESTAMP=1700000000000000\n__MONOTONIC_TIMESTAMP=519201025\n"
        "_BOOT_ID=8f2d1c0e5b6a4f3e9d7c6b5a4f3e2d1c\n_TRANSPORT=kernel\nPRIORITY=4\n"
        "_HOSTNAME=gpu-node-7\nMESSAGE=nvme nvme0: I/O 39 QID 3 timeout, aborting\n\n"
        "__CURSOR=s=2\n_TRANSPORT=syslog\nSYSLOG_IDENTIFIER=sshd\n_HOSTNAME=gpu-node-7\nMESSAGE=Accepted key\n"
    )
    part = unwrap(export)[0]
    lines = part.text.split("\n")
    assert [line for line in lines if line] == ["[  519.201025] nvme nvme0: I/O 39 QID 3 timeout, aborting"]
    assert lines.index("[  519.201025] nvme nvme0: I/O 39 QID 3 timeout, aborting") == 7  # its MESSAGE line
    assert part.identity["hostname"] == {"gpu-node-7"}
    assert section_of(export) == "dmesg"


# --- every reader asked ------------------------------------------------------------------------------


def test_lsblk_pairs_are_not_taken_for_os_release() -> None:
    recognition = recognise_text(LSBLK_P, tuple(BY_SECTION.values()))
    assert recognition.best is not None and recognition.best.probe.section == "lsblk"
    no_type = (DATA / "lsblk" / "lsblk-P-reordered-no-type.this-machine.txt").read_text()
    assert section_of(no_type) == "lsblk"


def test_a_close_second_reading_is_named_in_the_notes() -> None:
    """Both readers explain every line: the report says the reading was ambiguous."""
    from gdsdoctor.capture.recognition import Reading, Recognition

    mounts, df = BY_SECTION["mounts"], BY_SECTION["df"]
    words = Recognition(Reading(mounts, 1.0), (Reading(df, 0.95),)).ambiguity
    assert "could also be `df -P -T -B1`" in words and "95%" in words
    assert Recognition(Reading(mounts, 1.0), (Reading(df, 0.3),)).ambiguity == ""


# --- partial reading -------------------------------------------------------------------------------


def test_one_odd_mount_line_is_skipped_and_named() -> None:
    text = "/dev/sda1 on / type ext4 (rw,relatime) [root]\n/dev/sdb1 /mnt/my data ext4 rw 0 0\n"
    capture = read(("mounts.txt", text))
    assert list(capture.assignments) == ["mounts"]
    facts = BY_SECTION["mounts"].parse(text, "mounts.txt")
    assert [m["mountpoint"] for m in facts["mounts"]] == ["/"]
    assert "1 lines not in a mount format, skipped: line 2" in facts["skipped_lines"]


def test_skipped_lines_reach_the_report_notes(tmp_path: Path) -> None:
    from gdsdoctor.pipeline import analyze_paths

    paste = tmp_path / "mount.txt"
    paste.write_text(MOUNTS + "this line is not a mount\n")
    notes = analyze_paths([paste]).report["source"]["notes"]
    assert any(n.startswith("mounts: 1 lines not in a mount format, skipped: line 32") for n in notes)


# --- one kind, several files -----------------------------------------------------------------------


def test_dmesg_and_kern_log_of_one_host_merge_without_repeating_lines() -> None:
    dmesg = (
        "[  519.201025] nvme nvme0: I/O 39 QID 3 timeout, aborting\n[  520.0] nvme nvme0: Abort status: 0x0\n"
    )
    kern = (
        "May  1 10:00:00 node7 kernel: [  519.201025] nvme nvme0: I/O 39 QID 3 timeout, aborting\n"
        "May  1 10:00:01 node7 kernel: [  520.0] nvme nvme0: Abort status: 0x0\n"
        "May  1 10:00:02 node7 kernel: [  521.5] EXT4-fs error (device nvme0n1p1): ext4_journal_check_start:83: "
        "comm kworker: Detected aborted journal\n"
    )
    merged, words = merge_kernel_logs(dmesg, kern)
    assert merged.count("I/O 39 QID 3 timeout") == 1
    assert "EXT4-fs error" in merged
    assert words == "1 kernel log lines added, 2 already there dropped"
    capture = read(("dmesg.txt", dmesg), ("kern.log", kern))
    assert capture.assignments["dmesg"] == ["dmesg.txt+kern.log"]
    assert "EXT4-fs error" in capture.artifacts["dmesg.txt+kern.log"].text
    assert any(
        n.startswith("kern.log: merged with dmesg.txt into dmesg.txt+kern.log (1 kernel log lines added")
        for n in capture.notes
    )


def test_full_lspci_and_grepped_acs_lines_merge_per_device() -> None:
    merged, words = merge_lspci(LSPCI_GREP.split("\n", 1)[1], LSPCI_FULL)
    facts = parse_lspci(merged, "lspci")
    assert facts["devices"] and facts["unattributed_acs_ctl"]
    assert words.startswith(f"{len(facts['devices'])} devices added")
    capture = read(("acs.txt", LSPCI_GREP), ("lspci.txt", LSPCI_FULL))
    assert any(n.startswith("lspci.txt: merged with acs.txt into acs.txt+lspci.txt") for n in capture.notes)


OS_RELEASE = (DATA / "system" / "os-release.this-machine-debian12.txt").read_text()


def test_other_kinds_keep_the_first_file_and_say_so() -> None:
    capture = read(("a.txt", OS_RELEASE), ("b.txt", OS_RELEASE))
    assert capture.assignments["os_release"] == ["a.txt"]
    assert any("b.txt: another" in n and "(a.txt) was given first" in n for n in capture.notes)


def test_mount_tables_are_kept_both_and_read_as_one() -> None:
    """Mount tables combine at the facts (tests/test_mount_tables_combined.py): both files kept."""
    capture = read(("a.txt", MOUNTS), ("b.txt", MOUNTS))
    assert capture.assignments["mounts"] == ["a.txt", "b.txt"]
    assert any("b.txt: read with a.txt as one" in n for n in capture.notes)


# --- one host -------------------------------------------------------------------------------------


def test_two_hosts_logs_are_refused_naming_the_conflict() -> None:
    node7 = "May  1 10:00:00 node7 kernel: XFS (dm-4): x\n"
    node8 = "May  1 10:00:00 node8 kernel: XFS (dm-4): y\n"
    with pytest.raises(
        UserError, match=r"more than one host: a\.log and b\.log name hostname 'node7' and 'node8'"
    ):
        read(("a.log", node7), ("b.log", node8))


def test_one_host_under_its_name_its_fqdn_and_a_prompt_is_one_host() -> None:
    assert host_conflict({"a": {"hostname": {"node7"}}, "b": {"hostname": {"node7.cluster.local"}}}) == ""
    assert host_conflict({"a": {"hostname": {"node7"}}, "b": {"hostname": {"10.0.0.7"}}}) == ""
    assert host_conflict({"a": {"boot_id": {"aa"}}, "b": {"boot_id": {"bb"}}}) == ""  # two boots
    assert "machine_id" in host_conflict({"a": {"machine_id": {"aa"}}, "b": {"machine_id": {"bb"}}})


def test_two_hosts_through_the_command_line_is_one_line_and_exit_3(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "a.log").write_text("May  1 10:00:00 node7 kernel: XFS (dm-4): x\n")
    (tmp_path / "b.log").write_text("May  1 10:00:00 node8 kernel: XFS (dm-4): y\n")
    argv = [sys.executable, "-m", "gdsdoctor", "analyze", str(tmp_path / "a.log"), str(tmp_path / "b.log")]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert result.returncode == 3
    assert result.stderr.count("\n") == 1 and "more than one host" in result.stderr


def test_capture_files_reads_a_wrapped_file(tmp_path: Path) -> None:
    paste = tmp_path / "ticket.md"
    paste.write_text(f"See:\n```console\n$ nvidia-smi\n{(DATA / 'gpu' / 'nvidia-smi.txt').read_text()}```\n")
    capture = capture_files([paste])
    assert list(capture.assignments) == ["nvidia_smi"]


def test_the_python_api_reads_pastes_the_same_way() -> None:
    from gdsdoctor.api import GdsdoctorError, analyze_texts

    report = analyze_texts({"ticket.md": f"```\n$ mount\n{MOUNTS}```\n"})
    assert report.facts["mounts"]["status"] == "ok"
    assert len(report.facts["mounts"]["mounts"]) == 31
    with pytest.raises(GdsdoctorError, match="more than one host"):
        analyze_texts(
            {"a.log": "May  1 10:00:00 node7 kernel: x\n", "b.log": "May  1 10:00:00 node8 kernel: y\n"}
        )


def test_a_huge_input_is_read_as_it_is_never_held_as_lines() -> None:
    """A whole kern.log or a flood of newlines is no hand-made paste: not split into a list."""
    from gdsdoctor.capture.unwrap import MAX_UNWRAP_LINES

    flood = "\n" * (MAX_UNWRAP_LINES + 1)
    parts = unwrap(flood)
    assert len(parts) == 1 and parts[0].text is flood
    assert dedented(parts[0]) is None
    capture = read(("flood.txt", flood))
    assert capture.notes[0].startswith("flood.txt: not recognised")


def test_an_unrecognised_file_is_one_short_line_and_a_note_beside_read_files(tmp_path: Path) -> None:
    """Issue 20.6: never the list of every format; `gdsdoctor probes` has it."""
    readme = tmp_path / "readme.txt"
    readme.write_text("Please find the logs attached, thanks!\n")
    alone = analyze_paths([readme], None)
    line = f"{readme}: not recognised — `gdsdoctor probes` lists what is read"
    assert alone.exit_code == 3 and alone.report["source"]["notes"] == [line]
    log = tmp_path / "dmesg.txt"
    log.write_text("[    1.000000] nvme nvme0: I/O 39 QID 3 timeout, aborting\n")
    beside = analyze_paths([readme, log], None)
    assert beside.exit_code != 3 and line in beside.report["source"]["notes"]
    assert all(len(note) < 200 for note in beside.report["source"]["notes"])


LSBLK = Path(__file__).resolve().parent / "data" / "lsblk"


def test_lsblk_outputs_of_one_host_merge_column_by_column(tmp_path: Path) -> None:
    """Issue 20.4: the tree gives models and mountpoints, -t the schedulers, -P -b exact sizes."""
    names = ("table.txt", "t.txt", "P-b.txt")
    result = analyze_paths([LSBLK / f"lsblk-2.38.1-sysroot-simple-nvme-{n}" for n in names], None)
    nvme = result.facts["lsblk"]["by_name"]["nvme0n1"]
    assert nvme["sched"] == "none" and nvme["model"] == "KINGSTON SKC1000240G" and nvme["size_exact"]
    assert result.facts["lsblk"]["by_name"]["nvme0n1p2"]["mountpoints"] == ["/home"]
    assert sum("merged with" in note for note in result.report["source"]["notes"]) == 2


def test_lsblk_outputs_that_disagree_keep_the_first_and_say_so(tmp_path: Path) -> None:
    table = (LSBLK / "lsblk-2.38.1-sysroot-simple-nvme-t.txt").read_text()
    edited = tmp_path / "lsblk-t-later.txt"  # the same host later, its scheduler changed
    edited.write_text(table.replace("nvme0n1             0    512      0     512     512    0 none   ",
                                    "nvme0n1             0    512      0     512     512    0 bfq    "))  # fmt: skip
    result = analyze_paths([LSBLK / "lsblk-2.38.1-sysroot-simple-nvme-t.txt", edited], None)
    assert result.facts["lsblk"]["by_name"]["nvme0n1"]["sched"] == "none"
    assert any("nvme0n1 sched 'none'/'bfq'" in note for note in result.report["source"]["notes"])
