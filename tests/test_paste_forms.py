"""Pastes as people paste them (issue 32 item 2): fragments without their header line (lsmod's body,
ACS lines alone, ibv_devinfo's GID list), collector scripts' sections, a mail's 72-column wrapping
under `> ` quoting, a terminal's cut, a locale's digit grouping and full-width punctuation. Real
samples: tests/data/paste_forms/SOURCES.md; each with a near miss that must stay as it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor.capture.capture import Capture
from gdsdoctor.capture.detect import PasteReader
from gdsdoctor.capture.rewrap import fullwidth_to_ascii, rejoin
from gdsdoctor.capture.unwrap import section_command, unwrap
from gdsdoctor.probes import app_log, dmesg, fs, modules, pci, roce_gids
from gdsdoctor.probes.text import grouped_int
from tests.conftest import read_paste

DATA = Path(__file__).resolve().parent / "data"
FORMS = DATA / "paste_forms"


@pytest.mark.parametrize(
    ("name", "section"),
    [
        ("lsmod-grep-nvidia--no-header.gds-emulated-nvmevirt.txt", "modules"),
        ("lspci-vvv-grep-acs--cap-and-ctl.hgx-h100-dell.txt", "lspci"),
        ("ibv-devinfo-v-gid-list.nccl-769.txt", "roce_gids"),
        ("mail-quoted-wrapped-72.dmesg-nvme-io-error.crucible-1844.txt", "dmesg"),
        ("terminal-wrapped-120.watchdog-stuck.vlm-r1-257.txt", "app_log"),
        *(
            (f"df-block-size-grouped.coreutils-9.1.{loc}.txt", "df")
            for loc in ("de_DE", "fr_FR", "de_CH", "en_US")
        ),
    ],
)
def test_each_paste_form_is_read_as_what_it_holds(name: str, section: str) -> None:
    assert list(read_paste(FORMS / name).assignments) == [section]


def test_lsmods_body_without_its_header() -> None:
    text = (FORMS / "lsmod-grep-nvidia--no-header.gds-emulated-nvmevirt.txt").read_text()
    parsed = modules.parse(text, "x")
    assert parsed["names"] == ["nvidia", "nvidia_fs", "nvidia_uvm"]
    assert parsed["by_name"]["nvidia"]["used_by"] == ["nvidia_uvm"]


@pytest.mark.parametrize(
    "text",
    [
        "nvme0n1     259:0    0   1.8T  0 disk\n",  # lsblk
        "total 12\n-rw-r--r-- 1 root root 4096 Jan  1 00:00 a\n",  # ls -l
        "Filesystem 1K-blocks Used Available Use% Mounted on\n",
        "gpu01 12 34\n",  # a word and two numbers, not lsmod's padded columns
    ],
)
def test_what_is_not_lsmods_body(text: str) -> None:
    assert not modules.recognise(text)


def test_acs_lines_without_their_devices_are_read_for_acs() -> None:
    text = (FORMS / "lspci-vvv-grep-acs--cap-and-ctl.hgx-h100-dell.txt").read_text()
    assert pci.recognise_lspci(text)
    parsed = pci.parse_lspci(text, "x")
    controls = parsed["unattributed_acs_ctl"]
    assert controls and all(not c["flags"]["req_redir"] for c in controls)
    # a keyed line of another register alone is not a fragment of lspci
    assert not pci.recognise_lspci("\t\tSubsystem: Dell Device 0000\n")


def test_the_gid_list_of_ibv_devinfo() -> None:
    text = (FORMS / "ibv-devinfo-v-gid-list.nccl-769.txt").read_text()
    parsed = roce_gids.parse_roce_gids(text, "x")
    assert parsed["format"] == "ibv_devinfo"
    assert [(g["index"], g["version"], g["ipv4"], g["link_local"]) for g in parsed["gids"]] == [
        (0, "v1", None, True),
        (1, "v2", None, True),
        (2, "v1", "200.0.209.6", False),
        (3, "v2", "200.0.209.6", False),
    ]


def test_a_whole_ibv_devinfo_stays_the_infiniband_readers() -> None:
    """ibv_devinfo's device and port lines with the GID list under them: the whole output."""
    device = (DATA / "rdma" / "ibv_devinfo.cx7-eth-port-down.stelline-puget.txt").read_text()
    whole = device.rstrip("\n") + "\n" + (FORMS / "ibv-devinfo-v-gid-list.nccl-769.txt").read_text()
    assert not roce_gids.recognise_roce_gids(whole)


def test_collector_sections_split_the_paste_into_its_outputs() -> None:
    capture = read_paste(FORMS / "collector-sections--lsmod-mounts-fstab.txt")
    assert sorted(capture.assignments) == ["fstab", "modules", "mounts"]
    parts = unwrap((FORMS / "collector-sections--lsmod-mounts-fstab.txt").read_text())
    assert [p.command for p in parts] == ["lsmod", "cat /proc/mounts", "/etc/fstab"]
    assert all("section header" in p.removed for p in parts)


@pytest.mark.parametrize(
    ("line", "command"),
    [
        ("=== lsmod ===", "lsmod"),
        ("---- cat /proc/mounts ----", "cat /proc/mounts"),
        ("==> /var/log/syslog <==", "/var/log/syslog"),
        ("##### nvidia-smi topo -m #####", "nvidia-smi topo -m"),
        ("=== dmesg (last 30 lines) ===", "dmesg (last 30 lines)"),
        ("=== ibv_devinfo -v", "ibv_devinfo -v"),
        # tools' own banners, a markdown rule, a diff: no section
        ("=== START OF SMART DATA SECTION ===", None),
        ("==== backtrace (tid:2330856) ====", None),
        ("---", None),
        ("--- a/drivers/nvme/host/core.c", None),
        ("======= NFS Mounts =======", None),
    ],
)
def test_a_section_header_names_a_command_or_a_file(line: str, command: str | None) -> None:
    assert section_command(line) == command


def test_smartctls_own_sections_stay_one_output() -> None:
    text = (DATA / "nvme_cli" / "smartctl-a-nvme.v7.4-apple-ssd.smartdisk.txt").read_text()
    assert len(unwrap(text)) == 1


def _events(text: str) -> list[tuple[str, str | None]]:
    parsed = dmesg.parse(text, "x")
    return [(e["kind"], e["device"]) for e in parsed["events"]]


def test_a_mail_wrapped_quoted_kernel_log_reads_as_the_original() -> None:
    original = (DATA / "dmesg" / "dmesg-nvme-io-error-status-ext4-journal-abort.txt").read_text()
    mailed = read_paste(FORMS / "mail-quoted-wrapped-72.dmesg-nvme-io-error.crucible-1844.txt")
    pasted = mailed.artifacts[next(iter(mailed.artifacts))].text
    assert _events(pasted) == _events(original)
    assert _events(original)  # the original holds events to compare


def test_a_terminals_cut_is_joined_mid_word() -> None:
    text = (FORMS / "terminal-wrapped-120.watchdog-stuck.vlm-r1-257.txt").read_text()
    part = unwrap(text)[0]
    first = part.text.split("\n")[0]
    assert "ProcessGroupNCCL's watchdog got stuck for 480 seconds" in first
    assert "This typically indicates a NCCL/CUDA API" in first
    assert len(part.text.split("\n")) == len(text.rstrip("\n").split("\n"))  # every line keeps its number
    errors = app_log.parse_app_log(part.text, "x")["errors"]
    assert [(e["kind"], e["nccl"]["seconds"], e["src"]["line"]) for e in errors] == [
        ("collective_hang", 480, 1)
    ]


@pytest.mark.parametrize(
    "lines",
    [
        # a table's rows padded to one width: never joined
        ["DEV     PORT    INDEX   GID                                     IPv4            VER     DEV",
         "mlx5_0  1       3       0000:0000:0000:0000:0000:ffff:0a00:0005 10.0.0.5        v2      ens1f0",
         "mlx5_1  1       3       0000:0000:0000:0000:0000:ffff:0a00:0105 10.0.1.5        v2      ens1f1"],
        # short kernel lines and the prose after them
        ["[    1.000000] nvme nvme0: pci function 0000:01:00.0", "that was at boot"],
        # an indented trace under a kernel line
        ["[ 5123.123456] INFO: task python:1234 blocked for more than 120 seconds.",
         " __schedule+0x2d1/0x830", " schedule+0x36/0x80"],
        # a padded header and its first row, both as wide: no cut mid-word between them
        ["Filesystem                                   1K-blocks      Used Available Use%  Mounted on",
         "/dev/mapper/ubuntu--vg-ubuntu--lv--root-part 101590008 100000000   1590008  99% /mnt/ckpt_a",
         "/dev/mapper/ubuntu--vg-ubuntu--lv--root-part 101590008 100000000   1590008  99% /mnt/ckpt_b"],
        # a mount table whose rows reach one width, then a shorter row
        ["overlay /run/containerd/io.containerd.runtime.v2.task/k8s.io/c1/rootfs overlay rw,relatime 0 0",
         "overlay /run/containerd/io.containerd.runtime.v2.task/k8s.io/c2/rootfs overlay rw,relatime 0 0",
         "s3fs /mnt/ckpt fuse.s3fs rw,nosuid,nodev,relatime,user_id=0,group_id=0 0 0"],
        # lfs quota's indented, padded table
        ["Disk quotas for usr normandf (uid 1471600598):",
         "     Filesystem    used   quota   limit   grace   files   quota   limit   grace",
         "     /home/mila  99.99G      0k    100G       -  921718       0 1048576       -",
         "uid 1471600598 is using default block quota setting"],
    ],
)  # fmt: skip
def test_lines_that_were_never_wrapped_stay_apart(lines: list[str]) -> None:
    assert rejoin(list(lines)) == (lines, 0)


@pytest.mark.parametrize(
    ("value", "number"),
    [
        ("270.553.174.016", 270553174016),
        ("270,553,174,016", 270553174016),
        ("270\u202f553\u202f174\u202f016", 270553174016),
        ("270\u2019553\u2019174\u2019016", 270553174016),
        ("8,205,799", 8205799),
        ("1,234", 1234),
        ("1.234", None),  # a decimal in most of the world
        ("10.156.129.132", None),  # an IPv4 address: its groups are not three digits each
        ("1,23,456", None),
        ("12345", None),  # a plain integer is to_int's
    ],
)
def test_a_locales_digit_grouping(value: str, number: int | None) -> None:
    assert grouped_int(value) == number


def test_the_df_sizes_are_the_same_in_every_locale() -> None:
    sizes = set()
    for loc in ("de_DE", "fr_FR", "de_CH", "en_US"):
        text = (FORMS / f"df-block-size-grouped.coreutils-9.1.{loc}.txt").read_text()
        parsed = fs.parse_df(text, loc)
        assert parsed["counts"] == "bytes"
        sizes.add(tuple((f["mountpoint"], f["size_bytes"]) for f in parsed["filesystems"]))
    assert sizes == {(("/", 270553174016), ("/dev/shm", 25276182528))}


def test_full_width_punctuation_is_read_as_ascii() -> None:
    typed = "保存时报错：OSError：［Errno 28］ No space left on device：＇/ckpt/step-10/model.pt＇"
    text = fullwidth_to_ascii(typed)
    assert "OSError:[Errno 28] No space left on device:'/ckpt/step-10/model.pt'" in text
    assert len(text) == len(typed)  # one character for one: provenance keeps its columns
    error = app_log.parse_app_log(unwrap(typed)[0].text, "x")["errors"][0]
    assert (error["kind"], error["errno"]) == ("ckpt_enospc", 28)
    assert fullwidth_to_ascii("plain ASCII") == "plain ASCII"


def test_a_terminals_cut_without_a_log_prefix_is_joined_where_it_cut_a_word() -> None:
    text = (DATA / "tickets_fresh" / "open-r1-620-wrapped-watchdog.txt").read_text()
    part = unwrap(text)[0]
    assert "collective operation timeout" in part.text and "before timing out." in part.text
    errors = app_log.parse_app_log(part.text, "x")["errors"]
    assert [(e["kind"], e["nccl"]["op"], e["nccl"]["timeout_ms"]) for e in errors] == [
        ("collective_timeout", "BROADCAST", 1800000)
    ]


def test_an_outputs_header_after_other_text_starts_its_own_part() -> None:
    """Two real outputs pasted one under the other with no prompt or section between them (util-linux's
    lsblk test output, coreutils' df): each header starts its output's part, each read."""
    lsblk_text = (DATA / "lsblk" / "lsblk-2.38.1-sysroot-simple-nvme-table.txt").read_text()
    df_text = (FORMS / "df-block-size-grouped.coreutils-9.1.en_US.txt").read_text()
    parts = unwrap(lsblk_text.rstrip("\n") + "\n" + df_text)
    assert [p.text.split("\n", 1)[0].split()[0] for p in parts] == ["NAME", "Filesystem"]
    assert parts[1].first_line == len(lsblk_text.rstrip("\n").split("\n")) + 1
    capture = Capture("files")
    reader = PasteReader(capture)
    reader.add("x", (lsblk_text.rstrip("\n") + "\n" + df_text).encode(), "x")
    assert sorted(capture.assignments) == ["df", "lsblk"]


def test_an_output_under_its_own_prompt_is_one_part() -> None:
    df_text = (FORMS / "df-block-size-grouped.coreutils-9.1.en_US.txt").read_text()
    (part,) = unwrap("$ df -B1\n" + df_text)
    assert part.text.startswith("Filesystem") and part.command == "df -B1"
