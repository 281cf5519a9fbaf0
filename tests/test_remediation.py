"""Remediation commands say what they do: every command of the catalogue carries an effect its
shape does not contradict, what changes the host for good has verify commands, the lint refuses
the rest (site rules too), and the reports mark each non-read command before it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor import api
from gdsdoctor.commands.explain import explain_cause
from gdsdoctor.engine.command_shape import DESTROYS, EFFECTS, NEEDS_VERIFY, destroys_data, state_change
from gdsdoctor.engine.rules import RuleError, lint_paths, load_rules
from gdsdoctor.pipeline import KNOWN_SECTIONS, rules

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"


def test_every_command_of_the_catalogue_has_an_effect_its_shape_allows() -> None:
    causes = rules()
    assert len(causes) >= 122
    problems = []
    for cause in causes:
        for step in cause.remediation:
            if step.effect not in EFFECTS:
                problems.append(f"{cause.id}: no effect: {step.cmd}")
            elif step.effect == "read" and state_change(step.cmd):
                problems.append(f"{cause.id}: read but {state_change(step.cmd)}: {step.cmd}")
            elif destroys_data(step.cmd) and step.effect != DESTROYS:
                problems.append(f"{cause.id}: {step.effect} but destroys data: {step.cmd}")
        problems += [f"{cause.id}: verify changes state: {c}" for c in cause.verify if state_change(c)]
    assert problems == []


def test_every_cause_that_changes_the_host_for_good_says_how_to_verify_it() -> None:
    lasting = [c for c in rules() if any(s.effect in NEEDS_VERIFY for s in c.remediation)]
    assert len(lasting) >= 15  # the review counted 42 state-changing commands
    assert [c.id for c in lasting if not c.verify] == []
    unexplained = [
        (c.id, s.cmd)
        for c in rules()
        for s in c.remediation
        if s.effect in ("disruptive", "reboot") and not s.note
    ]
    assert unexplained == []


@pytest.mark.parametrize(
    ("command", "changes"),
    [
        ("echo N > /sys/module/nvme_core/parameters/multipath", "a redirect into /sys"),
        ("echo 'options nvme_core multipath=N' >> /etc/modprobe.d/nvme.conf", "a redirect into /etc"),
        ("sync && echo 3 > /proc/sys/vm/drop_caches", "a redirect into /proc"),
        ("echo x | sudo tee -a /etc/modules-load.d/x.conf", "tee into /etc"),
        ("modprobe nvidia_fs", "modprobe"),
        ("rmmod nvme_rdma", "rmmod"),
        ("setpci -s 0000:00:01.0 ECAP_ACS+0x6.w=0000:002c", "setpci write"),
        ("mount -o remount,noatime /mnt/ckpt", "mount"),
        ("umount /mnt/ckpt", "umount"),
        ("nvme connect -t rdma -a 10.0.0.1 -s 4420 -n nqn.x", "nvme connect"),
        ("nvme disconnect -d nvme3", "nvme disconnect"),
        ("nvme reset /dev/nvme0", "nvme reset"),
        ("nvme format /dev/nvme0n1", "nvme format"),
        ("mlnx_qos -i eth4 --trust dscp --pfc 0,0,0,1,0,0,0,0", "mlnx_qos setting"),
        ("ip link set dev eth4 mtu 4200", "ip link set"),
        ("sysctl -w vm.dirty_ratio=5", "sysctl write"),
        ("grubby --update-kernel=DEFAULT --args=iommu=pt", "grubby"),
        ("update-grub", "update-grub"),
        ("grub2-mkconfig -o /boot/grub2/grub.cfg", "grub2-mkconfig"),
        ('dracut -f --kver "$(uname -r)"', "dracut"),
        ("update-initramfs -u", "update-initramfs"),
        ("sed -i 's/a/b/' /etc/default/grub", "sed -i"),
        ("systemctl enable --now fstrim.timer", "systemctl enable"),
        ("systemctl restart nvmf-autoconnect", "systemctl restart"),
        ("systemctl start nvidia-fabricmanager", "systemctl start"),
        ("CUFILE_X=1 sudo modprobe nvidia_peermem", "modprobe"),
    ],
)
def test_a_state_changing_shape_is_named(command: str, changes: str) -> None:
    assert state_change(command) == changes


@pytest.mark.parametrize(
    "command",
    [
        "cat /sys/module/nvme_core/parameters/multipath",
        "grep -rn nvme_core /etc/modprobe.d/",
        "grep modprobe /etc/modules-load.d/x.conf",
        "findmnt -no OPTIONS /mnt/ckpt",
        "mount | grep nvme",
        "nvme list-subsys",
        "nvme discover -t rdma -a 10.0.0.1 -s 4420",
        "mlnx_qos -i eth4",
        "setpci -s 0000:00:01.0 ECAP_ACS+0x6.w",
        "ip -d link show dev eth4",
        "sysctl vm.dirty_ratio",
        "grubby --info=DEFAULT",
        "systemctl status systemd-udevd",
        "sed -n 1,5p /etc/fstab",
        "modprobe -n -v nvidia_fs",
        "dmesg 2>/dev/null | tail",
        "grep <nqn> /etc/nvme/discovery.conf",  # a placeholder's > is no redirect
    ],
)
def test_a_read_shape_is_a_read(command: str) -> None:
    assert state_change(command) == ""


CAUSE = """
causes:
  - id: site-cause
    title: a site cause for the lint
    category: gds-driver
    severity: warning
    requires: [modules]
    explanation: A cause written by a site, linted like the built-in ones.
    signals:
      - {{id: s, when: "modules", certainty: 0.5, says: "s"}}
    remediation:
{steps}
"""


def _lint(tmp_path: Path, steps: str, extra: str = "") -> list[str]:
    (tmp_path / "site.yaml").write_text(CAUSE.format(steps=steps) + extra)
    _, issues = lint_paths([tmp_path], KNOWN_SECTIONS)
    return [issue.message for issue in issues]


def test_lint_refuses_a_command_without_an_effect(tmp_path: Path) -> None:
    [message] = _lint(tmp_path, '      - "lsmod"')
    assert "remediation/0" in message and "is a plain string" in message and "effect" in message
    [message] = _lint(tmp_path, '      - {cmd: "lsmod"}')
    assert "effect" in message


def test_lint_refuses_a_read_command_that_changes_state(tmp_path: Path) -> None:
    [message] = _lint(
        tmp_path, '      - {cmd: "echo 30 > /sys/class/nvme/nvme0/fast_io_fail_tmo", effect: read}'
    )
    assert message == (
        "site-cause: command 'echo 30 > /sys/class/nvme/nvme0/fast_io_fail_tmo' is marked read"
        " but changes state (a redirect into /sys)"
    )


def test_lint_wants_verify_for_lasting_changes_and_a_note_for_disruptive_ones(tmp_path: Path) -> None:
    messages = _lint(tmp_path, '      - {cmd: "umount /mnt/ckpt", effect: disruptive}')
    assert any("disruptive: its note must say what comes first" in m for m in messages)
    assert any("a disruptive command needs verify" in m for m in messages)
    good = '      - {cmd: "umount /mnt/ckpt", effect: disruptive, note: "stop the job first"}'
    assert _lint(tmp_path, good, '    verify: ["findmnt /mnt/ckpt"]\n') == []
    assert _lint(tmp_path, '      - {cmd: "modprobe x", effect: live}') == []  # live needs no verify
    bad_verify = _lint(tmp_path, good, '    verify: ["mount /mnt/ckpt"]\n')
    assert bad_verify == ["site-cause: verify command 'mount /mnt/ckpt' changes state (mount)"]


def test_site_rules_with_an_unmarked_state_change_do_not_load(tmp_path: Path) -> None:
    (tmp_path / "site.yaml").write_text(
        CAUSE.format(steps='      - {cmd: "modprobe nvme_rdma", effect: read}')
    )
    with pytest.raises(RuleError, match="marked read but changes state"):
        load_rules([tmp_path], KNOWN_SECTIONS)


def _fixture_files(fixture: str) -> list[Path]:
    return sorted((FIXTURES / fixture / "files").iterdir())


def test_reports_mark_each_change_before_its_command_and_verify_after() -> None:
    report = api.analyze(_fixture_files("rdma-mlnx-qos-pfc-wrong-priority"))
    [finding] = [f for f in report.findings if f["id"] == "roce-no-pfc-on-rdma-priority"]
    effects = {s["command"]: s["effect"] for s in finding["remediation"]}
    assert effects["mlnx_qos -i eth4"] == "read"
    # the vector keeps PFC where it is on (priority 4) and adds the RDMA priority (3)
    assert effects["mlnx_qos -i eth4 --trust dscp --pfc 0,0,0,1,1,0,0,0"] == "disruptive"
    assert finding["verify"] == ["mlnx_qos -i eth4"]
    text = report.render("text")
    marker = text.index("⚠ DISRUPTIVE (interrupts I/O or jobs) — only together with the matching switch")
    command = text.index("$ mlnx_qos -i eth4 --trust dscp --pfc 0,0,0,1,1,0,0,0")
    assert text.index("$ mlnx_qos -i eth4\n") < marker < command < text.index("Verify after the fix:\n")
    markdown = report.render("markdown")
    marker = markdown.index("**⚠ DISRUPTIVE (interrupts I/O or jobs)")
    assert marker < markdown.index("--pfc 0,0,0,1,1,0,0,0") < markdown.index("**Verify after the fix:**")


def test_explain_read_only_prints_only_what_changes_nothing() -> None:
    files = _fixture_files("rdma-mlnx-qos-pfc-wrong-priority")
    full = explain_cause("roce-no-pfc-on-rdma-priority", files, [])
    safe = explain_cause("roce-no-pfc-on-rdma-priority", files, [], read_only=True)
    assert "$ mlnx_qos -i eth4 --trust dscp --pfc 0,0,0,1,1,0,0,0" in full and "DISRUPTIVE" in full
    assert "--trust" not in safe and "DISRUPTIVE" not in safe
    assert "$ mlnx_qos -i eth4" in safe and "1 command(s) that change the host left out" in safe


@pytest.mark.parametrize(
    ("command", "erases"),
    [
        ("nvme format /dev/nvme0n1 --lbaf=0", "nvme format"),
        ("sudo nvme sanitize /dev/nvme0 -a 2", "nvme sanitize"),
        ("nvme delete-ns /dev/nvme0 -n 1", "nvme delete-ns"),
        ("mkfs.xfs -f /dev/nvme0n1", "mkfs.xfs"),
        ("mkfs -t ext4 /dev/md0", "mkfs"),
        ("mke2fs -t ext4 /dev/sdb1", "mke2fs"),
        ("wipefs -a /dev/nvme1n1", "wipefs"),
        ("wipefs --all /dev/nvme1n1", "wipefs"),
        ("xfs_repair -L /dev/dm-4", "xfs_repair -L"),
        ("umount /mnt/ckpt && xfs_repair -vL /dev/dm-4", "xfs_repair -L"),
        ("blkdiscard /dev/nvme0n1", "blkdiscard"),
        ("dd if=/dev/zero of=/dev/nvme0n1 bs=1M count=10", "dd of=/dev"),
        ("sgdisk --zap-all /dev/nvme0n1", "sgdisk zap"),
        ("mdadm --zero-superblock /dev/nvme0n1", "mdadm --zero-superblock"),
    ],
)
def test_a_data_destroying_shape_is_named_and_changes_state(command: str, erases: str) -> None:
    assert destroys_data(command) == erases
    assert state_change(command) == erases  # never a read either


@pytest.mark.parametrize(
    "command",
    [
        "xfs_repair -n /dev/dm-4",
        "wipefs /dev/nvme1n1",  # lists the signatures
        "wipefs -n -a /dev/nvme1n1",  # no-act
        "nvme id-ns /dev/nvme0n1",
        "nvme reset /dev/nvme0",  # disruptive, not erasing
        "dd if=/dev/nvme0n1 of=/dev/null bs=1M count=10",
        "e2fsck -fn /dev/nvme0n1p1",
    ],
)
def test_a_shape_that_erases_nothing_is_not_data_destroying(command: str) -> None:
    assert destroys_data(command) == ""


def test_xfs_repair_and_e2fsck_without_no_modify_are_not_reads() -> None:
    assert state_change("xfs_repair /dev/dm-4") == "xfs_repair"
    assert state_change("e2fsck -f /dev/nvme0n1p1") == "fsck"
    assert state_change("xfs_repair -n /dev/dm-4") == ""


FORMAT = '      - {{cmd: "nvme format /dev/nvme0n1 --lbaf=0", effect: {effect}{note}}}'


@pytest.mark.parametrize("effect", ["read", "live", "persistent", "disruptive", "reboot"])
def test_lint_refuses_a_data_destroying_command_under_any_other_mark(tmp_path: Path, effect: str) -> None:
    messages = _lint(tmp_path, FORMAT.format(effect=effect, note=', note: "copy it away"'), VERIFY)
    assert messages == [
        f"site-cause: command 'nvme format /dev/nvme0n1 --lbaf=0' is marked {effect} but destroys data (nvme format)"
    ]


VERIFY = '    verify: ["nvme id-ns /dev/nvme0n1"]\n'


def test_lint_wants_a_note_and_verify_for_a_data_destroying_command(tmp_path: Path) -> None:
    bare = _lint(tmp_path, FORMAT.format(effect=DESTROYS, note=""))
    assert any("destroys-data: its note must say what comes first" in m for m in bare)
    assert any("a destroys-data command needs verify" in m for m in bare)
    good = FORMAT.format(effect=DESTROYS, note=', note: "ERASES the namespace: copy it away first"')
    assert _lint(tmp_path, good, VERIFY) == []


def test_reports_print_a_data_destroying_command_commented_out_behind_its_warning() -> None:
    report = api.analyze(_fixture_files("nvme-id-ns-metadata-format-gpu"))
    [finding] = [f for f in report.findings if f["id"] == "nvme-namespace-metadata-format"]
    [step] = [s for s in finding["remediation"] if s["command"].startswith("nvme format")]
    # JSON carries the command as it is, with its effect and warning
    assert step["effect"] == "destroys-data" and "ERASES every block" in step["note"]
    assert '"effect": "destroys-data"' in report.render("json")
    text = report.render("text")
    marker = text.index("⚠ DESTROYS DATA")
    command = text.index("$ # nvme format /dev/<device> --lbaf=")
    assert marker < command and "$ nvme format" not in text
    markdown = report.render("markdown")
    assert markdown.index("**⚠ DESTROYS DATA") < markdown.index("# nvme format /dev/<device> --lbaf=")
    assert "\nnvme format" not in markdown  # never a bare line in the sh block


def test_explain_never_prints_a_data_destroying_command_read_only() -> None:
    files = _fixture_files("fs-xfs-corruption-shutdown")
    full = explain_cause("fs-errors-or-shutdown", files, [])
    safe = explain_cause("fs-errors-or-shutdown", files, [], read_only=True)
    assert "$ # xfs_repair -L /dev/dm-4" in full and "ZEROES THE LOG" in full
    assert "xfs_repair -L" not in safe and "DESTROYS" not in safe
    assert "$ xfs_repair -n /dev/dm-4" in safe  # the dry run is a read
