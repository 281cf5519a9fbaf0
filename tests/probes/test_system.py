"""Kernel/system identity probes: kernel, os_release, cmdline, kallsyms, ofed, virt, etc_default_grub."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gdsdoctor.errors import ParseError
from gdsdoctor.probes import system

DATA = Path(__file__).parent.parent / "data" / "system"
DMESG_DATA = Path(__file__).parent.parent / "data" / "dmesg"
CMDLINE = (DATA / "proc-cmdline.amd_iommu_on.nvidia-gds-best-practices.txt").read_text()
GRUB = (DATA / "etc-default-grub.amd_iommu_off-iommu_pt.stelline-puget.txt").read_text()
LSB = (DATA / "pytorch-rfcs-059.os.txt").read_text()

# Written in the documented formats (no real capture of these in the reference set).
PROC_VERSION = (
    "Linux version 6.8.0-1040-nvidia (buildd@lcy02-amd64-070) (x86_64-linux-gnu-gcc-13 (Ubuntu 13.3.0-6ubuntu2~24.04)"
    " 13.3.0, GNU ld (GNU Binutils for Ubuntu) 2.42) #43-Ubuntu SMP PREEMPT_DYNAMIC Fri Jul 25 16:53:55 UTC 2025\n"
)
UNAME_A = "Linux dgx01 5.15.0-91-generic #101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023 x86_64 x86_64 x86_64 GNU/Linux\n"
OS_RELEASE = (
    'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\nVERSION="22.04.4 LTS (Jammy Jellyfish)"\n'
    "VERSION_CODENAME=jammy\nID=ubuntu\nID_LIKE=debian\n"
)
KALLSYMS = (
    "0000000000000000 T pci_p2pdma_add_resource\n"
    "0000000000000000 T pci_p2pdma_distance_many\n"
    "0000000000000000 d p2pdma_pgmap_ops\n"
    "0000000000000000 T nvme_v2_register_nvfs_dma_ops\t[nvme]\n"
    "0000000000000000 T nvidia_p2p_get_pages\t[nvidia]\n"
)


def probe(section: str):
    return next(p for p in system.PROBES if p.section == section)


def test_probe_sections() -> None:
    sections = [p.section for p in system.PROBES]
    assert sections == ["kernel", "os_release", "cmdline", "kallsyms", "ofed", "virt", "etc_default_grub"]


# ---- kernel --------------------------------------------------------------------------------


def test_kernel_from_proc_version() -> None:
    section = system.parse_kernel(PROC_VERSION, "proc/version")
    assert section["release"] == "6.8.0-1040-nvidia" and section["version_tuple"] == [6, 8, 0]
    assert section["build"].startswith("#43-Ubuntu SMP") and section["is_wsl"] is False
    assert section["machine"] is None and section["src"]["line"] == 1


def test_kernel_from_uname_a_and_r() -> None:
    section = system.parse_kernel("$ uname -a\n" + UNAME_A, "cmd/uname-a.txt")
    assert (section["hostname"], section["release"], section["machine"]) == (
        "dgx01",
        "5.15.0-91-generic",
        "x86_64",
    )
    assert section["build"] == "#101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023"
    assert section["src"]["line"] == 2
    assert system.parse_kernel("5.14.0-611.30.1.el9_7.x86_64\n", "x")["version_tuple"] == [5, 14, 0]


def test_kernel_wsl() -> None:
    text = "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@941d701f84f1) (gcc (GCC) 11.2.0) #1 SMP\n"
    assert system.parse_kernel(text, "x")["is_wsl"] is True


# ---- os_release ----------------------------------------------------------------------------


def test_os_release() -> None:
    section = system.parse_os_release(OS_RELEASE, "etc/os-release")
    assert (section["id"], section["version_id"], section["pretty_name"]) == (
        "ubuntu",
        "22.04",
        "Ubuntu 22.04.4 LTS",
    )
    assert section["id_like"] == ["debian"] and section["version_codename"] == "jammy"
    assert section["src"]["line"] == 1 and section["format"] == "os-release"


def test_lsb_release_paste() -> None:
    section = system.parse_os_release(LSB, "pasted")
    assert (section["id"], section["version_id"], section["format"]) == ("ubuntu", "22.04", "lsb_release")
    assert section["pretty_name"] == "Ubuntu 22.04.4 LTS" and section["src"]["line"] == 2


# ---- cmdline -------------------------------------------------------------------------------


def test_cmdline_reference_with_prompt_on_same_line() -> None:
    section = system.parse_cmdline(CMDLINE, "proc/cmdline")
    assert section["raw"].startswith("BOOT_IMAGE=/boot/vmlinuz-5.19.0-38-generic")
    assert section["boot_image"] == "/boot/vmlinuz-5.19.0-38-generic"
    assert section["params"]["amd_iommu"] == "on" and section["params"]["ro"] is True
    assert section["params"]["rootflags"] == "data=ordered"
    assert section["iommu"]["amd_iommu"] == "on" and section["iommu"]["intel_iommu"] is None
    assert [p["key"] for p in section["param_list"]] == ["BOOT_IMAGE", "root", "ro", "rootflags", "amd_iommu"]
    assert section["param_list"][0]["src"]["line"] == 1


def test_cmdline_iommu_acs_nvme_keys() -> None:
    text = (
        "BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt iommu.passthrough=1 pci=realloc=off "
        'pci=disable_acs_redir=0000:00:01.0;0000:15:00.0 nvme_core.multipath=N nvme_core.io_timeout=4294967295 dyndbg="a b"'
    )
    section = system.parse_cmdline(text, "proc/cmdline")
    assert section["iommu"]["intel_iommu"] == "on" and section["iommu"]["iommu"] == "pt"
    assert section["iommu"]["iommu_passthrough"] == "1"
    assert section["iommu"]["pci"] == ["realloc=off", "disable_acs_redir=0000:00:01.0;0000:15:00.0"]
    assert section["iommu"]["disable_acs_redir"] == "0000:00:01.0;0000:15:00.0"
    assert section["nvme_core"] == {
        "multipath": "N",
        "io_timeout": "4294967295",
        "admin_timeout": None,
        "default_ps_max_latency_us": None,
    }
    assert section["params"]["dyndbg"] == "a b"


# ---- etc_default_grub ----------------------------------------------------------------------


def test_grub_reference() -> None:
    section = system.parse_grub(GRUB, "etc/default/grub")
    assert section["variables"]["GRUB_CMDLINE_LINUX"] == ""
    assert section["iommu"]["amd_iommu"] == "off" and section["iommu"]["iommu"] == "pt"
    assert section["iommu"]["pci"] == ["realloc=off"]
    assert section["params"]["hugepages"] == "8" and section["params"]["rcu_nocb_poll"] is True
    assert section["param_list"][0]["src"]["line"] == 11
    assert section["src"]["line"] == 11


# ---- kallsyms ------------------------------------------------------------------------------


def host_with_kallsyms(tmp_path: Path, content: str) -> Path:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "kallsyms").write_text(content)
    return tmp_path


def test_kallsyms_reader_keeps_only_symbols_of_interest(tmp_path: Path) -> None:
    filler = "".join(f"ffffffff8100{i:04x} T filler_{i}\n" for i in range(2000))
    artifact = system.read_kallsyms(
        host_with_kallsyms(tmp_path, filler + KALLSYMS.replace("0000000000000000", "ffffffffc0a1a000"))
    )
    scan = json.loads(artifact)
    assert scan["lines_scanned"] == 2005 and scan["addresses_hidden"] is False
    assert [s["name"] for s in scan["found"]][:2] == ["nvidia_p2p_get_pages", "nvme_v2_register_nvfs_dma_ops"]
    assert b"filler_" not in artifact
    section = system.parse_kallsyms(artifact.decode(), "proc/kallsyms.json")
    assert section["complete"] is True and section["note"] is None
    assert section["has_p2pdma"] and section["has_nvfs_dma_ops"] and section["has_nvidia_p2p"]
    by_name = {s["name"]: s for s in section["symbols"]}
    assert by_name["blk_rq_dma_map_iter_start"]["present"] is False
    assert by_name["nvme_v1_register_nvfs_dma_ops"]["present"] is False
    assert by_name["nvme_v2_register_nvfs_dma_ops"]["module"] == "nvme"
    assert by_name["pci_p2pdma_distance_many"]["present"] is True
    line = by_name["nvidia_p2p_get_pages"]["src"]["line"]
    assert '"nvidia_p2p_get_pages"' in artifact.decode().split("\n")[line - 1]


def _scan_line_by_line(text: str) -> dict:
    """The scan's meaning, written the slow obvious way: every table line, one at a time."""
    found: dict = {}
    scanned = nonzero = 0
    for line in text.split("\n"):
        m = system._KALLSYMS_LINE.match(line)
        if not m:
            continue
        scanned += 1
        nonzero += int(m["addr"], 16) != 0
        if m["name"] in system.KALLSYMS_OF_INTEREST or m["name"].startswith("pci_p2pdma_"):
            found.setdefault(m["name"], {"name": m["name"], "module": m["module"], "type": m["type"]})
    return {
        "lines_scanned": len(text.split("\n")) - text.endswith("\n") if text else 0,
        "table_lines": min(scanned, system.COMPLETE_TABLE_LINES),  # all that completeness needs
        "addresses_hidden": not nonzero if scanned else None,
        "found": sorted(found.values(), key=lambda s: s["name"]),
    }


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                *KALLSYMS.splitlines(),
                "ffffffff81000000 T filler",
                "not a table line",
                "",
                "0000000000000000 t nvidia_p2p_get_pages_x",
                "ffffffffc0a1a000 T pci_p2pdma_map [mod x]",
            ]
        ),
        max_size=40,
    ),
    st.integers(min_value=1, max_value=64),
)
def test_kallsyms_chunked_scan_equals_line_by_line(lines: list[str], chunk: int) -> None:
    """The reader scans in chunks with whole-chunk patterns (for speed); wherever the chunks
    are cut it must find exactly what a line-by-line scan finds."""
    import io

    text = "\n".join(lines)
    scan = system.scan_kallsyms(system._line_chunks(io.StringIO(text), chunk))
    expected = _scan_line_by_line(text)
    assert {k: scan[k] for k in expected} == expected
    # the live reader (the kernel's own table): the same but for the count of table lines
    read = system.scan_kallsyms(system._line_chunks(io.StringIO(text), chunk), table_only=False)
    assert "table_lines" not in read
    assert {k: read[k] for k in ("lines_scanned", "addresses_hidden", "found")} == {
        k: scan[k] for k in ("lines_scanned", "addresses_hidden", "found")
    }


def test_a_pasted_table_is_complete_from_its_10000th_table_line() -> None:
    """A paste's table lines are counted only as far as completeness needs, so what the count
    decides must still hold at the edge: 9,999 table lines among prose and blank lines are an
    excerpt (an absent symbol unknown), 10,000 a whole table (absent), and a symbol after the
    point where counting stopped is still found."""
    table = [f"ffffffff810{i:05x} T filler_{i}" for i in range(10_000)]
    noise = ["", "not a table line", "# grep -c . /proc/kallsyms"] * 2000
    tail = ["ffffffffc0a1a000 T nvidia_p2p_get_pages\t[nvidia]"]
    short = system.parse_kallsyms("\n".join(noise + table[2:] + noise + tail), "kallsyms.txt")
    whole = system.parse_kallsyms("\n".join(noise + table + noise + tail), "kallsyms.txt")
    assert (short["complete"], whole["complete"]) == (False, True)
    for section in (short, whole):
        assert section["has_nvidia_p2p"] is True
    assert short["has_p2pdma"] is None and whole["has_p2pdma"] is False
    assert whole["lines_scanned"] == len(noise) * 2 + len(table) + 1  # every line read


def test_every_symbol_of_interest_contains_a_search_anchor() -> None:
    for name in (*system.KALLSYMS_OF_INTEREST, *system._KALLSYMS_PREFIXES):
        assert any(anchor in name for anchor in system._KALLSYMS_ANCHORS), name


def test_kallsyms_zero_addresses_still_count(tmp_path: Path) -> None:
    section = system.parse_kallsyms(
        system.read_kallsyms(host_with_kallsyms(tmp_path, KALLSYMS)).decode(), "x"
    )
    assert section["addresses_hidden"] is True and "presence is still valid" in section["note"]
    assert section["has_p2pdma"] is True


def test_kallsyms_unreadable(tmp_path: Path) -> None:
    section = system.parse_kallsyms(system.read_kallsyms(tmp_path).decode(), "x")
    assert section["readable"] is False and section["complete"] is False
    assert section["has_p2pdma"] is None and all(s["present"] is None for s in section["symbols"])
    assert "unreadable" in section["note"]


def test_kallsyms_reader_refuses_link_out_of_root(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_text(KALLSYMS)
    root = tmp_path / "root"
    (root / "proc").mkdir(parents=True)
    (root / "proc" / "kallsyms").symlink_to(outside)
    assert json.loads(system.read_kallsyms(root))["readable"] is False


def test_kallsyms_pasted_grep_is_partial() -> None:
    text = "$ grep -E 'p2pdma|nvfs' /proc/kallsyms\n" + KALLSYMS.split("\n", 1)[0] + "\n"
    assert system.recognise_kallsyms(text)
    section = system.parse_kallsyms(text, "pasted")
    assert section["complete"] is False and section["has_p2pdma"] is True
    assert section["has_nvfs_dma_ops"] is None  # not listed in an excerpt: unknown, not absent


# ---- ofed, virt ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "flavour", "version", "major", "doca"),
    [
        ("MLNX_OFED_LINUX-5.8-1.0.1.1:\n", "MLNX_OFED_LINUX", "5.8-1.0.1.1", 5, False),
        ("$ ofed_info -s\nOFED-internal-24.10-1.1.4:\n", "OFED-internal", "24.10-1.1.4", 24, True),
    ],
)
def test_ofed(text: str, flavour: str, version: str, major: int, doca: bool) -> None:
    section = system.parse_ofed(text, "cmd/ofed_info-s.txt")
    assert (section["flavour"], section["version"], section["major"], section["is_doca"]) == (
        flavour,
        version,
        major,
        doca,
    )
    assert system.recognise_ofed(text)


@pytest.mark.parametrize(("word", "virtual", "container"), [("none", False, False), ("kvm", True, False),
                                                           ("docker", False, True), ("wsl", False, True)])  # fmt: skip
def test_virt(word: str, virtual: bool, container: bool) -> None:
    section = system.parse_virt(word + "\n", "cmd/systemd-detect-virt.txt")
    assert (section["virt"], section["is_virtual"], section["is_container"]) == (word, virtual, container)


# ---- recognisers: each claims its own text and nothing else --------------------------------

SAMPLES = {
    "kernel": [PROC_VERSION, UNAME_A, "$ uname -r\n6.8.0-1040-nvidia\n"],
    "os_release": [OS_RELEASE, LSB],
    "cmdline": [CMDLINE, "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet\n"],
    "kallsyms": [KALLSYMS],
    "ofed": ["MLNX_OFED_LINUX-5.8-1.0.1.1:\n"],
    "virt": ["kvm\n", "$ systemd-detect-virt\nnone\n"],
    "etc_default_grub": [GRUB],
}
OTHER_SOURCES = [
    (DMESG_DATA / "dmesg-nvme-pcie-admin-timeout-removed.txt").read_text(),
    (DMESG_DATA / "not-dmesg" / "proc-mounts-beegfs.txt").read_text(),
    (DMESG_DATA / "not-dmesg" / "lsblk-J.util-linux-2.31-ubuntu18.04-aws-nvme.json").read_text(),
    (DMESG_DATA / "not-dmesg" / "gdscheck-p.gds-1.14-iommu-disabled.stelline-puget.txt").read_text(),
]


@pytest.mark.parametrize("section", list(SAMPLES))
def test_recognisers_are_specific(section: str) -> None:
    for name, texts in SAMPLES.items():
        for text in texts:
            assert probe(section).recognise(text) is (name == section), (section, text[:60])
    for text in OTHER_SOURCES:
        assert not probe(section).recognise(text)


@pytest.mark.parametrize("section", list(SAMPLES))
def test_samples_parse(section: str) -> None:
    for text in SAMPLES[section]:
        assert "status" not in probe(section).parse(text, "x")


@pytest.mark.parametrize("section", list(SAMPLES))
def test_other_text_raises_parse_error(section: str) -> None:
    with pytest.raises(ParseError):
        probe(section).parse("hello world\nthis is not it\n", "x")


# ---- robustness ----------------------------------------------------------------------------


def _safe(section: str, text: str) -> None:
    with contextlib.suppress(ParseError):
        probe(section).parse(text, "x")
    probe(section).recognise(text)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(list(SAMPLES)),
    st.integers(min_value=0, max_value=3000),
    st.integers(min_value=0, max_value=20),
)
def test_never_raises_on_truncated_samples(section: str, cut: int, drop: int) -> None:
    for text in SAMPLES[section]:
        _safe(section, text[:cut])
        lines = text.split("\n")
        _safe(section, "\n".join(lines[:drop] + lines[drop + 1 :]))


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.text(), st.dictionaries(st.text(), st.text()).map(json.dumps)))
def test_kallsyms_json_garbage(text: str) -> None:
    with contextlib.suppress(ParseError):
        system.parse_kallsyms("{" + text, "x")
    system.parse_kallsyms(json.dumps({"format": "gdsdoctor-kallsyms-scan", "found": text}), "x")


def test_cmdline_stops_at_init_arguments() -> None:
    line = "console=ttyS0 intel_iommu=on rdinit=/init -- --addr 0.0.0.0:2024 --flag"
    facts = system.parse_cmdline(line, "proc/cmdline")
    assert facts["params"]["intel_iommu"] == "on" and "--addr" not in facts["params"]
    assert facts["iommu"]["intel_iommu"] == "on"


def test_this_kernels_kallsyms_read_through_cat_equals_the_table_read_here() -> None:
    """The live table is read by cat (faster within a check); what it finds is what reading
    /proc/kallsyms in this process finds."""
    if not Path("/proc/kallsyms").is_file():
        pytest.skip("no /proc/kallsyms here")
    through_cat = system._scan_through_cat()
    assert through_cat is not None and through_cat["lines_scanned"] > 1000
    assert through_cat == system._scan_here("/proc/kallsyms")
    assert json.loads(system.read_kallsyms(Path("/"))) == through_cat


def test_kallsyms_without_cat_is_read_here(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if not Path("/proc/kallsyms").is_file():
        pytest.skip("no /proc/kallsyms here")
    monkeypatch.setenv("PATH", str(tmp_path))  # no cat on it
    assert system._scan_through_cat() is None
    assert json.loads(system.read_kallsyms(Path("/"))) == system._scan_here("/proc/kallsyms")


def test_kallsyms_of_another_root_is_never_read_through_cat(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(system, "_scan_through_cat", lambda: pytest.fail("cat used for a --host-root"))
    scan = json.loads(system.read_kallsyms(host_with_kallsyms(tmp_path, KALLSYMS)))
    assert scan["lines_scanned"] == len(KALLSYMS.splitlines())


def test_a_kallsyms_symbol_line_is_numbered_as_provenance_counts_lines() -> None:
    """_lines_of finds the first line holding each name by C-level searches, counting lines
    between the hits; it must give the line and number that numbered_lines gives (first,
    middle and unterminated last lines, two names on one line, names asked in any order, and
    the table's first line when the name is absent)."""
    from gdsdoctor.probes.base import numbered_lines

    text = "ffff T _stext\nffff t nvme_rdma_v1_register_nvfs_dma_ops [nvme_rdma]\nffff T xfs_fs_goingdown"
    needles = ["xfs_fs_goingdown", "_stext", "nvfs_dma", "nvme_rdma]", "T ", "not_there"]
    expected = {
        needle: next(((n, line) for n, line in numbered_lines(text) if needle in line), (1, "ffff T _stext"))
        for needle in needles
    }
    assert system._lines_of(text, needles) == expected
    assert system._lines_of(text, reversed(needles)) == expected
