"""The outputs a storage engineer pastes instead of the ones gdsdoctor captures (issue 15): each read
from real samples (tests/data/*/SOURCES) into the facts the captured form gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor.probes import BY_SECTION
from gdsdoctor.probes.dmesg import parse as parse_dmesg
from gdsdoctor.probes.dmesg import recognise as recognise_dmesg
from gdsdoctor.probes.fs import parse_df, recognise_df
from gdsdoctor.probes.gpu import parse_nvidia_smi, recognise_nvidia_smi
from gdsdoctor.probes.lsblk import parse as parse_lsblk
from gdsdoctor.probes.lsblk import recognise as recognise_lsblk
from gdsdoctor.probes.mounts import parse as parse_mounts
from gdsdoctor.probes.mounts import recognise as recognise_mounts
from gdsdoctor.probes.system import parse_os_release, recognise_os_release

DATA = Path(__file__).parents[1] / "data"


def text(path: str) -> str:
    return (DATA / path).read_text()


# --- nvidia-smi ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "driver", "cuda", "count", "first"),
    [
        ("gpu/nvidia-smi.txt", "545.23.08", "12.3", 2, ("NVIDIA A100-SXM4-40GB", "0000:82:00.0", 40960)),
        (
            "gpu/nvidia-smi.thamada-nvsim-A40x10.550.excerpt.txt",
            "550.127.05",
            "12.4",
            4,
            ("NVIDIA A40", "0000:4f:00.0", 46068),
        ),
        (
            "gpu/nvidia-smi.gpud-e2e-mock-a10.550.txt",
            "550.127.05",
            "12.4",
            1,
            ("NVIDIA A10", "0000:06:00.0", 23028),
        ),
    ],
)
def test_nvidia_smi_table(path: str, driver: str, cuda: str, count: int, first: tuple) -> None:
    assert recognise_nvidia_smi(text(path))
    facts = parse_nvidia_smi(text(path), path)
    assert (facts["format"], facts["driver_version"], facts["cuda_version"]) == ("table", driver, cuda)
    assert len(facts["gpus"]) == facts["attached_gpus"] == count
    gpu = facts["gpus"][0]
    assert (gpu["product_name"], gpu["bus_id"], gpu["fb_total_mib"]) == first
    assert gpu["index"] == 0 and gpu["persistence_mode"] is True
    assert gpu["link_width_current"] is None  # the table does not show it: unknown, never guessed
    assert gpu["src"]["text"].startswith("|   0  ")


@pytest.mark.parametrize(
    ("path", "count", "name", "uuid"),
    [
        (
            "gpu/nvidia-smi-L.insights-core-a100-pcie.txt",
            2,
            "NVIDIA A100-PCIE-40GB",
            "GPU-63110aaa-3561-c8f5-e125-4ab40bbcf838",
        ),
        (
            "gpu/nvidia-smi-L.insights-core-quadro-rtx8000.txt",
            8,
            "Quadro RTX 8000",
            "GPU-6b201039-6477-dd9c-1edd-137c8c44f8d6",
        ),
    ],
)
def test_nvidia_smi_list(path: str, count: int, name: str, uuid: str) -> None:
    facts = parse_nvidia_smi(text(path), path)
    assert facts["format"] == "list" and len(facts["gpus"]) == count
    assert (facts["gpus"][0]["product_name"], facts["gpus"][0]["uuid"]) == (name, uuid)
    assert facts["gpus"][-1]["index"] == count - 1 and facts["gpus"][0]["bus_id"] is None


def test_nvidia_smi_list_counts_mig_devices() -> None:
    listing = (
        "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-b614723c-e261-4605-066e-79daab4c00ff)\n"
        "  MIG 7g.80gb     Device  0: (UUID: MIG-dc34c2fd-4bd7-52ad-a6d0-645dcd1794e4)\n"
        "GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-e52dfcc4-406d-a3d4-f787-4402b535877a)\n"
    )
    assert [g["mig_devices"] for g in parse_nvidia_smi(listing, "l")["gpus"]] == [1, 0]


def test_nvidia_smi_csv_with_header_and_without() -> None:
    facts = parse_nvidia_smi(text("gpu/nvidia-smi-query-gpu-csv.con-duct-rtx-a5500.txt"), "csv")
    gpu = facts["gpus"][0]
    assert (facts["format"], facts["driver_version"]) == ("csv", "535.183.01")
    assert (gpu["index"], gpu["product_name"], gpu["bus_id"], gpu["fb_total_mib"]) == (
        0,
        "NVIDIA RTX A5500 Laptop GPU",
        "0000:01:00.0",
        16384,
    )
    # csv,noheader: the same row, its fields known by their shape
    row = text("gpu/nvidia-smi-query-gpu-csv.con-duct-rtx-a5500.txt").splitlines()[1]
    bare = parse_nvidia_smi(row + "\n", "csv")
    assert (bare["gpus"][0]["bus_id"], bare["driver_version"]) == ("0000:01:00.0", "535.183.01")


def test_a_csv_of_something_else_is_not_nvidia_smi() -> None:
    assert not recognise_nvidia_smi("name, size\nfoo, 12\nbar, 13\n")


# --- mount ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "root"),
    [
        ("mounts/mount.jc-centos-7.7.txt", ("/dev/mapper/centos-root", "xfs")),
        ("mounts/mount.jc-ubuntu-18.04.excerpt.txt", ("/dev/sda2", "ext4")),
        ("mounts/mount-l.this-machine-debian12.txt", None),
    ],
)
def test_mount_command_output(path: str, root: tuple[str, str] | None) -> None:
    assert recognise_mounts(text(path))
    facts = parse_mounts(text(path), path)
    assert "skipped_lines" not in facts
    by_point = {m["mountpoint"]: m for m in facts["mounts"]}
    assert by_point["/proc"]["fstype"] == "proc"
    if root:
        assert (by_point["/"]["device"], by_point["/"]["fstype"]) == root
        assert by_point["/"]["opts"]["relatime"] is True


def test_findmnt_tree_reads_as_mounts() -> None:
    path = "mounts/findmnt-tree.nvme-home-efi.redashu-notes.txt"
    assert recognise_mounts(text(path))
    facts = parse_mounts(text(path), path)
    assert [(m["mountpoint"], m["device"], m["fstype"]) for m in facts["mounts"]] == [
        ("/", "/dev/nvme0n1p2", "ext4"),
        ("/boot/efi", "/dev/nvme0n1p1", "vfat"),
        ("/home", "/dev/nvme0n1p3", "ext4"),
        ("/run/user/1000", "tmpfs", "tmpfs"),
    ]
    assert facts["mounts"][3]["opts"]["size"] == "163840k" and facts["mounts"][1]["src"]["line"] == 3
    assert "skipped_lines" not in facts


def test_findmnt_of_this_machine_and_its_escapes() -> None:
    path = "mounts/findmnt-tree.this-machine-debian12-vm.txt"
    facts = parse_mounts(text(path), path)
    assert facts["skipped_lines"].startswith("1 lines ") and "'$ findmnt'" in facts["skipped_lines"]
    by_point = {m["mountpoint"]: m for m in facts["mounts"]}
    assert by_point["/"]["fstype"] == "ext4" and by_point["/proc"]["fstype"] == "proc"
    listed = parse_mounts(
        "TARGET SOURCE FSTYPE OPTIONS\n/mnt/my\\x20data /dev/sdd1[/ckpt] ext4 rw,noatime\n", "f"
    )["mounts"][0]  # findmnt -l: no tree; a space written \x20, a bind mount's [subdir]
    assert (listed["mountpoint"], listed["device"]) == ("/mnt/my data", "/dev/sdd1")


def test_mount_l_label_and_a_mount_point_with_spaces() -> None:
    facts = parse_mounts("/dev/sda1 on /data/my disk type ext4 (rw,relatime) [HD]\n", "m")
    assert facts["mounts"][0]["mountpoint"] == "/data/my disk"
    assert facts["mounts"][0]["options"] == "rw,relatime"


# --- lsblk ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "name", "key", "value"),
    [
        ("lsblk/lsblk-2.38.1-sysroot-simple-nvme-P-reordered.txt", "sda", "type", "disk"),
        ("lsblk/lsblk-P-reordered-no-type.this-machine.txt", "vda", "type", None),
        ("lsblk/lsblk-2.38.1-sysroot-simple-nvme-l.txt", "sda1", "type", "part"),
        ("lsblk/lsblk-l.this-machine.txt", "vda", "type", "disk"),
        ("lsblk/lsblk-2.38.1-sysroot-simple-nvme-t.txt", "sda", "sched", "cfq"),
        ("lsblk/lsblk-t.this-machine.txt", "vda", "sched", "mq-deadline"),
        ("lsblk/lsblk-2.38.1-sysroot-simple-nvme-f.txt", "sda2", "mountpoints", ["/boot"]),
        ("lsblk/lsblk-f.this-machine.txt", "vda", "mountpoints", ["/"]),
    ],
)
def test_lsblk_layouts(path: str, name: str, key: str, value: object) -> None:
    assert recognise_lsblk(text(path))
    assert not recognise_os_release(text(path))
    device = parse_lsblk(text(path), path)["by_name"][name]
    assert device[key] == value


def test_os_release_lines_are_not_lsblk() -> None:
    assert not recognise_lsblk(text("system/os-release.this-machine-debian12.txt"))


# --- os-release ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "id_", "version"),
    [
        ("system/os-release.compliance-as-code-rhcos-4.13.txt", "rhcos", "4.13"),
        ("system/os-release.homesetup-fedora-38.txt", "fedora", "38"),
        ("system/os-release.this-machine-debian12.txt", "debian", "12"),
    ],
)
def test_os_release_with_vendor_keys(path: str, id_: str, version: str) -> None:
    assert recognise_os_release(text(path))
    facts = parse_os_release(text(path), path)
    assert (facts["id"], facts["version_id"]) == (id_, version)


# --- df -i ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "mountpoint", "inodes", "used_pct"),
    [
        ("fs/df-i.ubuntuforums-2015-ibod-inodes-full.txt", "/", 1250928, 100),
        ("fs/df-i.this-machine-debian12.txt", "/dev", None, None),
        ("fs/df-li.this-machine-debian12.txt", "/dev", None, None),
    ],
)
def test_df_inodes_are_counts_never_sizes(
    path: str, mountpoint: str, inodes: int | None, used_pct: int | None
) -> None:
    assert recognise_df(text(path))
    facts = parse_df(text(path), path)
    entry = facts["by_mountpoint"][mountpoint]
    assert facts["counts"] == "inodes"
    assert entry["size_bytes"] is None and entry["avail_bytes"] is None and entry["use_pct"] is None
    assert isinstance(entry["inodes"], int) and isinstance(entry["inodes_free"], int)
    if inodes is not None:
        assert (entry["inodes"], entry["inodes_use_pct"]) == (inodes, used_pct)


# --- dmesg -t ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "release"),
    [
        ("dmesg/dmesg-t.this-machine-healthy-vm.txt", "6.18.44-fc-v595"),
        ("dmesg/dmesg-t.lkml-2025-ricci-6.13-boot-excerpt.txt", "6.13.0-rc7_ricci"),
    ],
)
def test_healthy_dmesg_without_timestamps(path: str, release: str) -> None:
    assert recognise_dmesg(text(path))
    facts = parse_dmesg(text(path), path)
    assert (facts["format"], facts["kernel_release"], facts["events"]) == ("plain", release, [])


def test_prose_is_not_a_kernel_log() -> None:
    prose = "I installed MOFED 5.8.\nthen I install nvidia-fs\nwhen I tried to load it I see an error.\n"
    assert not recognise_dmesg(prose)
    assert BY_SECTION["dmesg"].recognise is recognise_dmesg


# --- lspci -vmm ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "bdf", "kind", "driver", "numa"),
    [
        ("pci/lspci-vmm.idem-linux-dell-laptop.excerpt.txt", "0000:3d:00.0", "nvme", None, 0),
        ("pci/lspci-vmm.idem-linux-dell-laptop.excerpt.txt", "0000:00:01.0", "bridge", None, None),
        ("pci/lspci-vmm.this-machine-vm.txt", "0000:00:03.0", "nic", None, None),
        ("pci/lspci-vmmkn.this-machine-vm.txt", "0000:00:03.0", "nic", "virtio-pci", None),
    ],
)
def test_lspci_vmm_stanzas(path: str, bdf: str, kind: str, driver: str | None, numa: int | None) -> None:
    from gdsdoctor.probes.pci import parse_lspci, recognise_lspci

    assert recognise_lspci(text(path))
    facts = parse_lspci(text(path), path)
    device = {d["bdf"]: d for d in facts["devices"]}[bdf]
    assert (device["kind"], device["driver"], device["numa_node"]) == (kind, driver, numa)
    assert device["lnk_sta"] is None and facts["caps_readable"] is None  # not shown: unknown
    assert device["src"]["text"].startswith("Slot:")


def test_lspci_vmm_nvidia_gpu_by_numeric_ids() -> None:
    from gdsdoctor.probes.pci import parse_lspci

    stanza = (
        "Slot:\t0000:01:00.0\nClass:\tVGA compatible controller [0300]\nVendor:\tNVIDIA Corporation [10de]\n"
    )
    assert (
        parse_lspci(stanza + "Device:\tGA102 [GeForce RTX 3080] [2204]\n", "x")["devices"][0]["kind"] == "gpu"
    )
    numeric = "Slot:\t01:00.0\nClass:\t0302\nVendor:\t10de\nDevice:\t2335\n"
    assert parse_lspci(numeric, "x")["devices"][0]["kind"] == "gpu"


def test_a_mount_line_wrapped_by_its_author_loses_only_that_mount() -> None:
    """Before, 3 good lines of 5 (under 80%) lost the whole paste."""
    path = "mounts/mount-cmd-output-lustre-o2ib.txt"
    assert recognise_mounts(text(path))
    facts = parse_mounts(text(path), path)
    assert [m["mountpoint"] for m in facts["mounts"]] == ["/bigwork", "/mnt/lustre", "/mnt/fsx"]
    assert facts["skipped_lines"].startswith("2 lines not in a mount format, skipped: line 2 (")


# --- nvme list (text) ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "count", "first"),
    [
        (
            "nvme_cli/nvme-list-text.nvme-tcp-howto-samsung-pm9a3.excerpt.txt",
            3,
            (
                "nvme0n1",
                1,
                "SAMSUNG MZQL2960HCJR-00A07",
                "S64FNE0R906008",
                "GDC5302Q",
                22_080_000_000,
                960_200_000_000,
            ),
        ),
        (
            "nvme_cli/nvme-list-text.nvmet-tcp-tutorial-linux-target.txt",
            1,
            ("nvme0n1", 1, "Linux", "646ec652826976d694ed", "5.14.0-3", 10_740_000_000, 10_740_000_000),
        ),
        (
            "nvme_cli/nvme-list-text.qemu-devel-cns12h-cover-letter.txt",
            3,
            ("nvme0n1", 1, "QEMU NVMe Ctrl", "foo", "1.0", 268_440_000, 268_440_000),
        ),
    ],
)
def test_nvme_list_text_table(path: str, count: int, first: tuple) -> None:
    from gdsdoctor.capture.capture import Capture
    from gdsdoctor.capture.detect import PasteReader
    from gdsdoctor.probes.nvme_cli import parse_list

    capture = Capture("files")
    PasteReader(capture).add(
        "nvme-list.txt", text(path).encode(), "nvme-list.txt"
    )  # the qemu one has a prompt
    assert list(capture.assignments) == ["nvme_list"]
    facts = parse_list(capture.artifacts["nvme-list.txt"].text, "nvme-list.txt")
    ns = facts["namespaces"]
    assert (facts["layout"], len(ns)) == ("text", count)
    fields = ("device", "nsid", "model", "serial", "firmware", "used_bytes", "physical_size_bytes")
    assert tuple(ns[0][f] for f in fields) == first
    assert ns[0]["sector_size"] == 512 and ns[0]["src"]["text"].lstrip().startswith("/dev/nvme0n1")


def test_nvme_list_verbose_tables() -> None:
    """`nvme list -v` (nvme-cli 2.x) tables, in the layout nvme-cli prints them."""
    from gdsdoctor.probes.nvme_cli import parse_list

    verbose = (
        "Device   SN                   MN                                       FR       TxPort Address        Subsystem    Namespaces\n"
        "-------- -------------------- ---------------------------------------- -------- ------ -------------- ------------ ----------------\n"
        "nvme0    S64FNE0R906008       SAMSUNG MZQL2960HCJR-00A07               GDC5302Q pcie   0000:41:00.0   nvme-subsys0 nvme0n1\n"
        "\n"
        "Device       Generic      NSID       Usage                      Format           Controllers\n"
        "------------ ------------ ---------- -------------------------- ---------------- ----------------\n"
        "/dev/nvme0n1 /dev/ng0n1   0x1         22.08  GB / 960.20  GB    512   B +  0 B   nvme0\n"
    )
    facts = parse_list(verbose, "v")
    assert facts["layout"] == "text-verbose"
    assert (facts["controllers"][0]["name"], facts["controllers"][0]["traddr"]) == ("nvme0", "0000:41:00.0")
    assert (facts["namespaces"][0]["nsid"], facts["namespaces"][0]["controller"]) == (1, "nvme0")
