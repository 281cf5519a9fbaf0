"""The review's corrections of issue 21 (remediation-review.md §1.1, §1.2), one assertion each on
the corrected command or condition of the cause."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from gdsdoctor import api
from gdsdoctor.checkpoint.line_rate import ceilings, pcie_link_bytes_per_s
from gdsdoctor.engine.rules import Cause
from gdsdoctor.facts.derived.topology_io import judge, pfc_vector
from gdsdoctor.pipeline import rules

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
NVME_CLI = REPO / "tests" / "data" / "nvme_cli"


def _cause(cause_id: str) -> Cause:
    return next(c for c in rules() if c.id == cause_id)


def _commands(cause_id: str) -> dict[str, str]:
    return {step.cmd: step.effect for step in _cause(cause_id).remediation}


def test_nfs_transport_changes_by_unmount_and_mount_never_by_remount() -> None:
    commands = _commands("network-fs-over-tcp")
    assert not [c for c in commands if "remount" in c]  # EINVAL: nfs_compare_remount_data()
    assert commands["umount {nfs_mounts}"] == "disruptive" and commands["mount {nfs_mounts}"] == "live"
    assert "--with-nfsrdma" in _cause("network-fs-over-tcp").fix


def test_nvmeof_rdma_path_is_connected_before_the_tcp_one_is_disconnected() -> None:
    order = [
        s.cmd.split()[1]
        for s in _cause("nvmeof-tcp-instead-of-rdma").remediation
        if s.cmd.startswith("nvme ")
    ]
    assert order.index("connect") < order.index("list-subsys") < order.index("disconnect")
    assert "connect-all" not in order  # the target's RDMA address and NQN, not every entry


def test_modprobe_options_go_in_files_of_their_own_with_both_initramfs_tools() -> None:
    for cause_id in ("p2pdma-not-enabled", "p2pdma-nvme-multipath-on"):
        commands = _commands(cause_id)
        assert "echo 'options nvme_core multipath=N' > /etc/modprobe.d/nvme-p2pdma.conf" in commands
        assert not [c for c in commands if c.endswith("/etc/modprobe.d/nvme.conf")]
        assert commands['dracut -f --kver "$(uname -r)"'] == "reboot"
        assert commands['update-initramfs -u -k "$(uname -r)"'] == "reboot"
        assert "cat /sys/module/nvme_core/parameters/multipath" in _cause(cause_id).verify
    notes = " ".join(s.note for s in _cause("p2pdma-nvme-multipath-on").remediation)
    assert "not on a node with NVMe-oF multipath" in notes


def test_iommu_fix_prefers_passthrough_on_every_kernel_and_says_reboot() -> None:
    for cause_id in ("iommu-translating-gds", "iommu-translating-p2p-cross-root-complex"):
        cause = _cause(cause_id)
        commands = _commands(cause_id)
        # ALL: current and future kernels (review 2 §1; DEFAULT is lost at the next kernel update)
        assert commands["grubby --update-kernel=ALL --args=iommu=pt"] == "reboot"
        assert not [c for c in commands if "--update-kernel=DEFAULT" in c or c.startswith("sed -i")]
        assert any("/etc/default/grub.d/" in c for c in commands)  # idempotent drop-in, read last
        assert "255 logical CPUs" in cause.fix and "x2APIC" in cause.fix
        assert "cat /sys/kernel/iommu_groups/*/type | sort | uniq -c" in cause.verify


def test_pfc_vector_keeps_the_enabled_priorities_and_adds_the_rdma_one() -> None:
    assert pfc_vector(3, [4]) == "0,0,0,1,1,0,0,0"
    assert pfc_vector(3, []) == "0,0,0,1,0,0,0,0"
    assert pfc_vector(None, [4]) is None and pfc_vector(3, None) is None
    assert "mlnx_qos -i {netdev} --trust dscp --pfc {pfc_vector}" in _commands("roce-no-pfc-on-rdma-priority")
    assert "ecn_on_rdma_priority" in str(_cause("roce-no-pfc-on-rdma-priority").severity_at_most)


def test_xfs_discard_needs_an_unmount_ext4_takes_a_remount() -> None:
    commands = _commands("online-discard-on-checkpoint-mount")
    assert commands["mount -o remount,nodiscard {ext4_mounts}"] == "live"
    assert commands["umount {xfs_mounts} && mount {xfs_mounts}"] == "disruptive"


def test_peermem_is_asked_only_of_userspace_rdma_filesystems() -> None:
    cause = _cause("nvidia-peermem-not-loaded")
    applies = str(cause.applies_when)
    assert "userspace_rdma_fs_mounts" in applies and "gds.rdma_fs_mounts" not in applies
    assert "DMA-BUF" in cause.explanation and "/sys/module/nvidia_peermem" in cause.fix


def test_compat_mode_is_proved_on_a_scratch_file_never_under_the_job() -> None:
    commands = _commands("gds-compat-mode-in-use")
    assert not [c for c in commands if "<your application>" in c]
    assert any(
        c.startswith("CUFILE_ALLOW_COMPAT_MODE=false") and "gdsio -f <scratch dir" in c for c in commands
    )


def test_gds_vs_cpu_is_an_ab_pair_of_gdsio_runs() -> None:
    commands = [c for c in _commands("throughput-gds-slower-than-cpu") if "gdsio" in c]
    assert [c.split(" -x ")[1].split()[0] for c in commands] == ["0", "2"]
    assert not [c for c in commands if c.endswith("gdsio -h")]


def test_acs_clears_only_redirect_bits_on_the_gpu_path_and_is_critical_only_when_translating() -> None:
    cause = _cause("acs-redirect-on-gpu-path")
    assert _commands(cause.id) == {
        **{c: e for c, e in _commands(cause.id).items() if e == "read"},
        "setpci -s {gpu_path_bridge} ECAP_ACS+0x6.w=0000:002c": "live",
    }
    assert "redirect_bridges" not in cause.vars["gpu_path_bridge"]  # never every bridge of the host
    assert "passthrough" in str(cause.severity_at_most)


def test_fast_io_fail_states_its_trade_off_and_the_nvme_cli_spelling() -> None:
    cause = _cause("nvmeof-ctrl-loss-tmo-unbounded")
    assert "--fast_io_fail_tmo=<s>" in cause.fix and "--ctrl-loss-tmo=<s>" in cause.fix
    assert any("EIO" in s.note for s in cause.remediation)


def test_container_devices_are_listed_by_the_shell_not_a_glob_glued_to_the_option() -> None:
    commands = _commands("container-nvidia-fs-devices-missing")
    assert any("for d in /dev/nvidia-fs*; do printf -- '--device=%s '" in c for c in commands)
    assert "--device=/dev/nvidia-fs*`" not in _cause("container-nvidia-fs-devices-missing").fix


def test_raid0_member_loss_is_the_array_lost() -> None:
    cause = _cause("md-array-member-failed")
    assert "no rebuild" in cause.fix and "archive tier" in cause.fix
    assert "raid0-lost" in [s.id for s in cause.signals]


def test_ext4_data_mode_is_read_where_the_kernel_prints_it_and_is_info() -> None:
    cause = _cause("ext4-data-mode-not-explicit")
    assert cause.severity == "info"
    assert "grep -H data= /proc/fs/ext4/*/options" in _commands(cause.id)


def test_drop_caches_is_for_an_idle_node_only() -> None:
    [step] = [s for s in _cause("throughput-above-line-rate").remediation if "drop_caches" in s.cmd]
    assert step.effect == "live" and "idle node only" in step.note


def test_nvidia_fs_fix_offers_p2pdma_only_for_local_nvme() -> None:
    assert "only when every" in _cause("nvidia-fs-not-loaded").fix
    assert "remote-targets" in [s.id for s in _cause("p2pdma-not-enabled").signals]


def _fired_commands(texts: dict[str, str], cause_id: str) -> list[str]:
    report = api.analyze_texts(texts)
    [finding] = [f for f in report.findings if f["id"] == cause_id]
    return [step["command"] for step in finding["remediation"]]


def _fixture_text(name: str) -> str:
    return "".join(p.read_text() for p in sorted((FIXTURES / name / "files").iterdir()))


def test_reconnect_loop_tests_a_tcp_target_with_nc_and_an_rdma_one_with_rdma_cm() -> None:
    tcp = _fired_commands(
        {"dmesg": _fixture_text("nvmeof-tcp-reconnect-econnrefused"),
         "list-subsys": (NVME_CLI / "nvme-list-subsys-text.v2.0-tcp-ana-powerstore.txt").read_text()},
        "nvmeof-reconnect-loop",
    )  # fmt: skip
    assert "nc -zv 10.162.198.42 4420" in tcp and "nc -zv 10.162.198.45 4420" in tcp
    assert "nvme discover -t tcp -a 10.162.198.45 -s 4420" in tcp
    assert not [c for c in tcp if c.startswith(("rping", "ib_write_bw", "show_gids"))]
    rdma = _fired_commands(
        {"dmesg": _fixture_text("nvmeof-rdma-connect-reset-by-peer")}, "nvmeof-reconnect-loop"
    )
    assert "rping -c -a <rdma_traddr> -C 3 -v" in rdma and "nvme discover -t rdma" in " ".join(rdma)
    assert not [c for c in rdma if c.startswith("nc ")]


def test_lost_interrupts_never_suggests_turning_interrupt_remapping_off() -> None:
    cause = _cause("nvme-lost-interrupts")
    assert "Do not turn interrupt remapping off (intremap=off)" in cause.fix and "x2APIC" in cause.fix
    assert not [c for c in _commands(cause.id) if "intremap=off" in c]


def _low_free_texts(fstype: str, source: str) -> dict[str, str]:
    """The capacity-low-free fixture with its /mnt/ckpt line given another filesystem type, 7 % free."""
    files = FIXTURES / "capacity-low-free" / "files"
    swap = {
        "/dev/nvme1n1": source,
        " xfs ": f" {fstype} ",
        "3745134759936 95621222400": "3572000000000 268755982336",
    }
    texts = {p.name: p.read_text() for p in files.iterdir()}
    for name, text in texts.items():
        lines = text.splitlines(keepends=True)
        texts[name] = "".join(_replace_all(line, swap) if "/mnt/ckpt" in line else line for line in lines)
    return texts


def _replace_all(line: str, swap: dict[str, str]) -> str:
    for old, new in swap.items():
        line = line.replace(old, new)
    return line


def test_capacity_walks_a_local_filesystem_with_du_and_asks_a_parallel_one_its_own_tools() -> None:
    local = _fired_commands(_low_free_texts("xfs", "/dev/nvme1n1"), "capacity-low-free-space")
    assert "du -xsh /mnt/ckpt/* | sort -h | tail" in local and "df -i /mnt/ckpt" in local
    assert not [c for c in local if c.startswith("lfs ")]
    lustre = _fired_commands(_low_free_texts("lustre", "10.0.0.1@o2ib:/lustre"), "capacity-low-free-space")
    assert "lfs df -h /mnt/ckpt" in lustre and "lfs df -i /mnt/ckpt" in lustre
    assert not [c for c in lustre if c.startswith("du ")]  # du on a parallel FS walks the MDS
    ost_list = FIXTURES / "capacity-full-ost-enospc" / "files" / "ozstar-lfs-df-h--ost6-full-edited.txt"
    judged = api.analyze_texts(
        {**_low_free_texts("lustre", "10.0.0.1@o2ib:/lustre"), "lfs": ost_list.read_text()}
    )
    assert "capacity-low-free-space" not in [f["id"] for f in judged.findings]  # its targets were judged


def test_retry_exceeded_asks_for_the_roce_gids() -> None:
    cause = _cause("rdma-transport-retry-exceeded")
    assert "show_gids" in _commands(cause.id) and "NCCL_IB_GID_INDEX" in cause.fix


def _severity(texts: dict[str, str], cause_id: str, path: str) -> str:
    [finding] = [f for f in api.analyze_texts(texts, path=path).findings if f["id"] == cause_id]
    return str(finding["severity"])


def _fixture_files(name: str) -> dict[str, str]:
    return {p.name: p.read_text() for p in (FIXTURES / name / "files").iterdir()}


GDSCHECK = REPO / "tests" / "data" / "gdscheck"
COMPAT_OFF = (
    (FIXTURES / "gds-cufile-defaults" / "files" / "cufile.json")
    .read_text()
    .replace('"allow_compat_mode": true', '"allow_compat_mode": false')
)


def test_dm_and_virtual_filesystems_are_critical_only_where_compat_cannot_carry_the_io() -> None:
    lvm, overlay = _fixture_files("fs-lvm-checkpoint-gpu"), _fixture_files("fs-overlay-container-path")
    assert _severity(lvm, "fs-device-mapper-or-loop", "/mnt/ckpt/run1") == "warning"  # compat: slow
    assert (
        _severity({**lvm, "cufile.json": COMPAT_OFF}, "fs-device-mapper-or-loop", "/mnt/ckpt/run1")
        == "critical"
    )
    failed = "cuFileHandleRegister failed: internal error (5030)\n"
    assert _severity(overlay, "fs-virtual-no-block-device", "/workspace/ckpt") == "warning"
    assert (
        _severity({**overlay, "app.log": failed}, "fs-virtual-no-block-device", "/workspace/ckpt")
        == "critical"
    )


@pytest.mark.parametrize(
    ("gdscheck", "severity", "said"),
    [
        ("gdscheck-p.gds-1.16-modes.gds-matrix.txt", "warning", "GDS 1.16.1.26 (1.16 or later)"),
        ("gdsnvfs-026--gdscheck-p.txt", "critical", "(before 1.16)"),
    ],
)
def test_the_virtual_filesystem_verdict_follows_the_gds_release(
    gdscheck: str, severity: str, said: str
) -> None:
    texts = {**_fixture_files("fs-overlay-container-path"), "gdscheck": (GDSCHECK / gdscheck).read_text()}
    report = api.analyze_texts(texts, path="/workspace/ckpt")
    [finding] = [f for f in report.findings if f["id"] == "fs-virtual-no-block-device"]
    assert finding["severity"] == severity
    assert said in " ".join(e["text"] for e in finding["evidence"])


DEFAULT_CUFILE = (FIXTURES / "gds-cufile-defaults" / "files" / "cufile.json").read_text()
LSMOD_GDS = (FIXTURES / "fs-lvm-checkpoint-gpu" / "files" / "lsmod.txt").read_text()


def test_the_legacy_blacklist_section_is_read_as_the_denylist() -> None:
    legacy = DEFAULT_CUFILE.replace(
        '"denylist": {\n        "drivers":  [ ],', '"blacklist": {\n        "drivers":  [ "nvme" ],'
    )
    assert legacy != DEFAULT_CUFILE
    fired = [f["id"] for f in api.analyze_texts({"cufile.json": legacy, "lsmod": LSMOD_GDS}).findings]
    assert "cufile-denylist-disables-gds" in fired
    quiet = [f["id"] for f in api.analyze_texts({"cufile.json": DEFAULT_CUFILE, "lsmod": LSMOD_GDS}).findings]
    assert "cufile-denylist-disables-gds" not in quiet


def test_a_file_without_o_direct_is_judged_by_the_gds_release() -> None:
    texts = _fixture_files("gds-file-without-odirect")
    said = " ".join(e["text"] for f in api.analyze_texts(texts).findings for e in f["evidence"])
    assert "GDS version unknown" in said and "assumed 1.7 or later" in said
    old = {
        **texts,
        "gdscheck": (GDSCHECK / "gdsnvfs-004--gdscheck-p.helper-working-reference.txt").read_text(),
    }
    said = " ".join(e["text"] for f in api.analyze_texts(old).findings for e in f["evidence"])
    assert "(before 1.7): cuFile refuses a file opened without O_DIRECT" in said


RAID0_LSBLK = """NAME        MAJ:MIN RM  SIZE RO TYPE  MOUNTPOINTS
nvme0n1     259:0    0  3.5T  0 disk
└─md0         9:0    0    7T  0 raid0 /mnt/ckpt
nvme1n1     259:1    0  3.5T  0 disk
└─md0         9:0    0    7T  0 raid0 /mnt/ckpt
"""
GRACE_7_1 = "Linux gh200 7.1.0-1003-nvidia-64k #3-Ubuntu SMP PREEMPT_DYNAMIC Fri Aug  9 15:36:07 UTC 2026 aarch64 aarch64 aarch64 GNU/Linux\n"


def test_p2pdma_is_configured_by_a_route_key_and_raid0_passes_it_through_where_the_platform_does() -> None:
    texts = _fixture_files("gds-p2pdma-md-raid-multipath-old-driver")
    texts["cufile.json"] = texts["cufile.json"].replace(
        '"use_pci_p2pdma": true',
        '"use_pci_p2pdma": false\n    },\n    "block": {"raid": {"use_pci_p2pdma": true}',
    )
    assert '"raid"' in texts["cufile.json"]
    routed = {f["id"]: f for f in api.analyze_texts(texts).findings}
    assert "p2pdma-md-raid" in routed  # the route alone asks for P2PDMA
    passed = [
        f["id"] for f in api.analyze_texts({**texts, "lsblk": RAID0_LSBLK, "uname": GRACE_7_1}).findings
    ]
    assert "p2pdma-md-raid" not in passed  # RAID0, route on, kernel 7.1 / Grace


def _h200_bundle_without_barriers(tmp_path: Path, cache: str) -> Path:
    """The real H200 bundle with its root ext4 (the checkpoint path's filesystem, on vda) mounted
    nobarrier, and vda's write cache as ``cache``."""
    bundle = tmp_path / "bundle"
    shutil.copytree(FIXTURES / "h200-node-checkpoint-path-on-root-ext4" / "bundle", bundle)
    mounts = bundle / "proc" / "mounts"
    mounts.write_text(
        mounts.read_text().replace("/dev/vda / ext4 rw,relatime,", "/dev/vda / ext4 rw,relatime,nobarrier,")
    )
    sysfs = bundle / "sys" / "nvme-sysfs.json"
    tree = json.loads(sysfs.read_text())
    tree["block"]["vda"]["queue"]["write_cache"] = cache
    sysfs.write_text(json.dumps(tree))
    return bundle


GDS_NODE = {"node": {"gds": "required"}}


@pytest.mark.parametrize(("cache", "severity"), [("write back", "critical"), ("write through", "warning")])
def test_barriers_off_are_critical_over_a_volatile_write_cache(
    tmp_path: Path, cache: str, severity: str
) -> None:
    # a node meant for GDS (the lent H200's bundle has only CUDA's shipped cufile.json: issue 31)
    report = api.analyze(_h200_bundle_without_barriers(tmp_path, cache), path="/tmp", site=GDS_NODE)
    ranked = [f["id"] for f in report.findings]
    [finding] = [f for f in report.findings if f["id"] == "write-barriers-disabled"]
    assert finding["severity"] == severity
    # the barrier finding ranks above the nags about the same mount
    assert ranked.index("write-barriers-disabled") < ranked.index("ext4-data-mode-not-explicit")
    assert ranked.index("write-barriers-disabled") < ranked.index("online-discard-on-checkpoint-mount")


def test_a_pcie_link_is_a_read_ceiling_and_a_write_needs_the_drive_rate_or_the_nic() -> None:
    link = pcie_link_bytes_per_s(4, 4) * 2  # two Gen4 x4 drives
    local = ceilings(link_bytes_per_s=link, drives=2)
    assert local["read"].bytes_per_s == pytest.approx(2 * 7.877e9 * 0.85, rel=1e-3)
    assert "read ceiling" in local["read"].label and local["write"].bytes_per_s is None
    spec = ceilings(link_bytes_per_s=link, drives=2, write_bytes_per_s=3.5e9)["write"]
    assert (spec.bytes_per_s, spec.basis) == (7e9, "write spec")
    fabric = ceilings(nic_gbit_s=400)
    assert fabric["read"].bytes_per_s == fabric["write"].bytes_per_s == pytest.approx(45e9)
    expected = {"read": _ceiling_dict(local["read"]), "write": _ceiling_dict(local["write"])}
    healthy_write = judge({"tool": "gdsio", "what": "WRITE GPUD", "measured_bytes_per_s": 7e9}, expected)
    assert healthy_write is not None and healthy_write["level"] == "unjudged"  # 52 % of the links: not poor
    impossible = judge({"tool": "fio", "what": "write", "measured_bytes_per_s": 20e9}, expected)
    assert impossible is not None and impossible["level"] == "suspect"
    slow_read = judge({"tool": "fio", "what": "read", "measured_bytes_per_s": 5e9}, expected)
    assert slow_read is not None and slow_read["level"] == "poor"


def _ceiling_dict(found: Any) -> dict[str, Any]:
    return {"bytes_per_s": found.bytes_per_s, "basis": found.basis, "label": found.label}


def test_an_nvmeof_namespace_is_judged_against_the_nic_line_rate() -> None:
    texts = _fixture_files("nvmeof-sysfs-rdma-healthy")  # two RDMA controllers, NDR ibstat
    guide = (
        REPO / "tests" / "data" / "bench" / "gdsio-output.nfs-rdma-ib-dgx2-client.nvidia-gds-config-guide.txt"
    )
    texts["gdsio"] = "".join(
        line for line in guide.read_text().splitlines(True) if "IoType: WRITE XferType: GPUD" in line
    )
    texts["mounts"] = "/dev/nvme1n1 /mnt/ckpt xfs rw,noatime,attr2,inode64,noquota 0 0\n"
    [finding] = [
        f
        for f in api.analyze_texts(texts, path="/mnt/ckpt").findings
        if f["id"] == "throughput-below-line-rate"
    ]
    assert "(NIC line rate 400 Gb/s × 0.9 goodput)" in finding["evidence"][0]["text"]


EXT4_LOOP_MOUNT = "/dev/loop1 /tmp/ext4-adv-mnt ext4 rw,relatime 0 0\n"  # as /proc/mounts showed it


def _ext4_findings(options: str | None) -> list[str]:
    texts = {"mounts": EXT4_LOOP_MOUNT, "lsmod": LSMOD_GDS}
    if options is not None:
        texts["ext4-options"] = (REPO / "tests" / "data" / "fs" / options).read_text()
    return [f["id"] for f in api.analyze_texts(texts, path="/tmp/ext4-adv-mnt").findings]


def test_the_ext4_data_mode_is_read_where_the_kernel_prints_it() -> None:
    assert "ext4-data-mode-not-explicit" in _ext4_findings(None)  # the mount table alone: said so
    assert "ext4-data-mode-not-explicit" not in _ext4_findings(
        "ext4-options.loop-journal-default-ordered.this-vm-6.18.txt"
    )
    # a journal mode that is the superblock's default shows only in the kernel's options
    assert "ext4-data-journal" in _ext4_findings("ext4-options.loop-data-journal-nobarrier.this-vm-6.18.txt")


PM983_ID_CTRL = (
    NVME_CLI / "nvme-id-ctrl-json.v1.x-samsung-pm983.json"
).read_text()  # WCTEMP 353 K, CCTEMP 365 K
SMART_HOT = (NVME_CLI / "nvme-smart-log-json.v1.4-1.9.json").read_text()


def _temperature_finding(kelvin: int, id_ctrl: bool) -> dict[str, Any] | None:
    smart = re.sub(r'"temperature" ?: ?\d+', f'"temperature" : {kelvin}', SMART_HOT, count=1)
    texts = {"smart": smart, **({"id-ctrl": PM983_ID_CTRL} if id_ctrl else {})}
    found = [f for f in api.analyze_texts(texts).findings if f["id"] == "nvme-temperature-high"]
    return found[0] if found else None


def test_the_temperature_is_judged_against_the_drives_own_warning_temperature() -> None:
    assert _temperature_finding(349, id_ctrl=False) is not None  # 76 °C, no WCTEMP known: the generic 70 °C
    assert _temperature_finding(349, id_ctrl=True) is None  # 76 °C is below this drive's 80 °C WCTEMP
    over = _temperature_finding(355, id_ctrl=True)  # 82 °C
    assert over is not None and "WCTEMP 80 °C, CCTEMP 92 °C" in " ".join(e["text"] for e in over["evidence"])
