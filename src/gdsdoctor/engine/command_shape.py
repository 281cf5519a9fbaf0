"""Remediation commands and what they do to the host: ``Step`` (a command, its ``effect`` and
``note``), ``command_issues`` (the lint of a cause's commands: every one has an effect, none
marked ``read`` has a state-changing shape, what changes the host for good has ``verify``
commands, a disruptive or reboot step says what comes first) and ``state_change``, the judge
of a command marked ``read`` (and of every ``verify`` command, which must change nothing).

A command marked ``read`` is what ``explain --read-only`` prints and what an operator pastes
without a second thought, so a state-changing shape there is a lint error, never a warning.
The shapes are the ones a GPU-storage runbook meets: a redirect (or ``tee``) into /etc, /sys or
/proc; module loading; PCI config-space writes; mount changes; NVMe-oF connections and
controller resets; NIC QoS, link and sysctl changes; boot configuration; in-place edits; unit
starts. The check reads the shell words of each simple command (split at ``|``, ``;``, ``&&``,
``||``, ``$(``), past ``sudo``/``env`` and ``VAR=value`` prefixes, so ``grep modprobe file`` is
a read and ``cat x | sudo tee /etc/y`` is not. It cannot see what a program of the site does;
it catches the shapes, the ``effect`` says the rest.

>>> state_change("cat /sys/module/nvme_core/parameters/multipath")
''
>>> state_change("echo N > /sys/module/nvme_core/parameters/multipath")
'a redirect into /sys'
>>> state_change("mount -o remount,noatime /mnt/ckpt")
'mount'
>>> state_change("findmnt -no OPTIONS /mnt/ckpt")
''

A command that erases data (a namespace format, a new filesystem, a zeroed log) has an effect of
its own, ``destroys-data``, and no other mark will do: ``destroys_data`` names the shape, the
lint refuses it marked anything else, and the reports print it commented out behind its warning.

>>> destroys_data("xfs_repair -L /dev/nvme0n1")
'xfs_repair -L'
>>> destroys_data("xfs_repair -n /dev/nvme0n1")
''
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gdsdoctor.patterns import lazy_compile

EFFECTS = ("read", "live", "persistent", "disruptive", "reboot", "destroys-data")
DESTROYS = "destroys-data"
# ``>``/``>>`` (any fd, not ``>&``) or ``tee [-a]`` into a path under /etc, /sys or /proc.
_REDIRECT = lazy_compile(r"(?<![<>\d])\d*>>?(?!&)\s*['\"]?/(etc|sys|proc)(/|\b)")
_TEE = lazy_compile(r"\btee\b(?:\s+-\S+)*\s+['\"]?/(etc|sys|proc)(/|\b)")
_SEPARATORS = lazy_compile(r"\|\||&&|[|;&`()]|\$\(")
_ASSIGNMENT = lazy_compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# An ``<angle-bracket>`` placeholder for a value the diagnosis did not find: not a redirect.
_PLACEHOLDER = lazy_compile(r"<[A-Za-z][A-Za-z0-9_.:|/ -]*>")
_PREFIXES = {"sudo", "env", "nohup", "time", "exec", "xargs", "nice", "ionice", "timeout", "command"}

# nvme-cli subcommands that change a controller, a namespace or the host's connections.
_NVME_WRITES = {
    "connect", "connect-all", "disconnect", "disconnect-all", "reset", "subsystem-reset", "format",
    "sanitize", "set-feature", "fw-download", "fw-commit", "fw-activate", "create-ns", "delete-ns",
    "attach-ns", "detach-ns", "ns-rescan", "write", "write-zeroes", "dsm", "gen-hostnqn",
}  # fmt: skip
# Of those, the ones that erase what the namespace holds (nvme-format(1), nvme-sanitize(1)).
_NVME_ERASES = {"format", "sanitize", "delete-ns", "write-zeroes"}
_SYSTEMCTL_WRITES = {
    "enable", "disable", "start", "stop", "restart", "reload", "try-restart", "reload-or-restart",
    "mask", "unmask", "daemon-reload", "kill", "isolate", "set-property", "edit", "reboot", "poweroff",
}  # fmt: skip
_ALWAYS = {
    "modprobe", "rmmod", "insmod", "depmod", "update-grub", "update-grub2", "grub2-mkconfig",
    "grub-mkconfig", "dracut", "update-initramfs", "mkinitrd", "mkinitramfs", "reboot", "shutdown",
    "kexec", "swapoff", "swapon", "umount", "dkms",
}  # fmt: skip
# Programs whose every use writes over a device's or filesystem's contents.
_ALWAYS_ERASE = {"mkfs", "mke2fs", "mkswap", "blkdiscard", "shred", "pvremove", "vgremove", "lvremove"}


@dataclass(frozen=True, slots=True)
class Step:
    """A remediation command and what running it does to the host (``EFFECTS``): ``read``
    changes nothing, ``live`` changes running state (lost at reboot), ``persistent`` writes
    configuration, ``disruptive`` interrupts I/O or jobs, ``reboot`` needs one; ``note`` says
    what the effect needs in words (the switch must match, drain the node first)."""

    cmd: str
    effect: str
    note: str = ""


# Effects that leave the host changed after the command: the cause must say how to see it took.
NEEDS_VERIFY = ("persistent", "disruptive", "reboot", DESTROYS)
NEEDS_NOTE = ("disruptive", "reboot", DESTROYS)  # what to drain, stop or copy away first must be written


def command_issues(steps: Sequence[Step], verify: Sequence[str]) -> list[tuple[tuple[str | int, ...], str]]:
    """Each command carries an effect its shape does not contradict; what changes the host for
    good says how to verify it; a disruptive or reboot step says what to do first."""
    issues: list[tuple[tuple[str | int, ...], str]] = []
    for i, step in enumerate(steps):
        where: tuple[str | int, ...] = ("remediation", i)
        if step.effect not in EFFECTS:
            issues.append((where, f"command {step.cmd!r} has no effect: give one of {', '.join(EFFECTS)}"))
            continue
        changes = state_change(step.cmd)
        erases = destroys_data(step.cmd)
        if erases and step.effect != DESTROYS:
            issues.append(
                (where, f"command {step.cmd!r} is marked {step.effect} but destroys data ({erases})")
            )
        elif step.effect == "read" and changes:
            issues.append((where, f"command {step.cmd!r} is marked read but changes state ({changes})"))
        if step.effect in NEEDS_NOTE and not step.note:
            issues.append(
                (where, f"command {step.cmd!r} is {step.effect}: its note must say what comes first")
            )
    for i, command in enumerate(verify):
        changes = state_change(command)
        if changes:
            issues.append((("verify", i), f"verify command {command!r} changes state ({changes})"))
    lasting = sorted({s.effect for s in steps if s.effect in NEEDS_VERIFY})
    if lasting and not verify:
        needs = f"a {'/'.join(lasting)} command needs verify: commands that show it took"
        issues.append((("remediation",), needs))
    return issues


def destroys_data(command: str) -> str:
    """What in ``command`` erases data ('' when nothing does): the ``destroys-data`` shapes."""
    command = _PLACEHOLDER.sub("PLACEHOLDER", command)
    for words in _simple_commands(command):
        reason = _erases(words)
        if reason:
            return reason
    return ""


def state_change(command: str) -> str:
    """What in ``command`` changes the host's state ('' when its shape is a read); a command that
    destroys data changes it too."""
    erases = destroys_data(command)
    if erases:
        return erases
    command = _PLACEHOLDER.sub("PLACEHOLDER", command)
    for pattern, label in ((_REDIRECT, "a redirect into /{}"), (_TEE, "tee into /{}")):
        found = pattern.search(command)
        if found:
            return label.format(found[1])
    for words in _simple_commands(command):
        reason = _judge(words)
        if reason:
            return reason
    return ""


def _simple_commands(command: str) -> list[list[str]]:
    """The words of each simple command, prefixes (sudo, env, VAR=value) removed."""
    commands = []
    for part in _SEPARATORS.split(command):
        try:
            words = shlex.split(part, comments=True)
        except ValueError:  # an unbalanced quote across a separator: judge the raw words
            words = part.split()
        while words and (words[0] in _PREFIXES or _ASSIGNMENT.match(words[0]) or words[0].startswith("-")):
            words = words[1:]
        if words:
            commands.append([words[0].rsplit("/", 1)[-1], *words[1:]])
    return commands


def _erases(words: list[str]) -> str:
    name, args = words[0], words[1:]
    if name in _ALWAYS_ERASE or name.startswith(("mkfs.", "mke2fs.")):
        return name
    judge = _ERASERS.get(name)
    return judge(args) if judge else ""


def _nvme_erase(args: list[str]) -> str:
    return f"nvme {args[0]}" if args and args[0] in _NVME_ERASES else ""


def _xfs_repair(args: list[str]) -> str:
    """-L zeroes the log (xfs_repair(8)): the metadata changes it held are lost."""
    return "xfs_repair -L" if any(re.match(r"^-[a-zA-Z]*L", a) for a in args) else ""


def _wipefs(args: list[str]) -> str:
    """``wipefs DEVICE`` lists the signatures; -a/-o erase them (unless -n, no-act)."""
    if any(a in ("-n", "--no-act") for a in args):
        return ""
    erase = any(
        a in ("--all", "--offset") or re.match(r"^-[a-zA-Z]*[ao]", a) or a.startswith("--offset=")
        for a in args
    )
    return "wipefs" if erase else ""


def _dd(args: list[str]) -> str:
    return "dd of=/dev" if any(a.startswith("of=/dev/") and a not in ("of=/dev/null",) for a in args) else ""


def _sgdisk(args: list[str]) -> str:
    zaps = ("-Z", "--zap-all", "-z", "--zap", "-o", "--clear")
    return "sgdisk zap" if any(a in zaps for a in args) else ""


def _mdadm_erase(args: list[str]) -> str:
    return "mdadm --zero-superblock" if "--zero-superblock" in args else ""


def _cryptsetup(args: list[str]) -> str:
    verbs = [a for a in args if not a.startswith("-")]
    return f"cryptsetup {verbs[0]}" if verbs and verbs[0] in ("luksFormat", "erase", "luksErase") else ""


_ERASERS: dict[str, Callable[[list[str]], str]] = {
    "nvme": _nvme_erase,
    "xfs_repair": _xfs_repair,
    "wipefs": _wipefs,
    "dd": _dd,
    "sgdisk": _sgdisk,
    "mdadm": _mdadm_erase,
    "cryptsetup": _cryptsetup,
}


def _judge(words: list[str]) -> str:
    name, args = words[0], words[1:]
    if name in _ALWAYS or name.startswith("mkfs."):
        if name == "modprobe" and any(a in ("-n", "--dry-run", "-c", "--showconfig", "-D") for a in args):
            return ""
        if name == "dkms" and args[:1] == ["status"]:
            return ""
        return name
    judge = _JUDGES.get(name)
    return judge(args) if judge else ""


def _mount(args: list[str]) -> str:
    return "mount" if [a for a in args if a not in ("-l", "--show-labels")] else ""  # bare `mount` lists


def _nvme(args: list[str]) -> str:
    return f"nvme {args[0]}" if args and args[0] in _NVME_WRITES else ""


def _setpci(args: list[str]) -> str:
    operands = [a for a in args if not a.startswith("-")]
    return "setpci write" if any("=" in a for a in operands) else ""


def _mlnx_qos(args: list[str]) -> str:
    """``mlnx_qos -i DEV`` prints the settings; any other option sets one."""
    rest = list(args)
    for flag in ("-i", "--interface"):
        if flag in rest:
            at = rest.index(flag)
            del rest[at : at + 2]
    rest = [a for a in rest if not a.startswith(("-i", "--interface="))]
    return "mlnx_qos setting" if rest else ""


_IP_OBJECTS = ("link", "l", "addr", "address", "a", "route", "r", "neigh")


def _ip(args: list[str]) -> str:
    objects = [a for a in args if not a.startswith("-")]
    changes = ("set", "add", "del", "delete", "change", "replace", "flush")
    if len(objects) >= 2 and objects[0] in _IP_OBJECTS and objects[1] in changes:
        return f"ip {objects[0]} {objects[1]}"
    return ""


def _sysctl(args: list[str]) -> str:
    writes = any(a in ("-w", "--write", "-p", "--load", "--system") or "=" in a for a in args)
    return "sysctl write" if writes else ""


def _grubby(args: list[str]) -> str:
    queries = ("--info", "--default-kernel", "--default-index", "--default-title")
    reads = all(a.startswith(queries) for a in args)
    return "" if reads else "grubby"


def _sed(args: list[str]) -> str:
    edits = any(a.startswith("--in-place") or re.match(r"^-[a-zA-Z]*i", a) for a in args)
    return "sed -i" if edits else ""


def _systemctl(args: list[str]) -> str:
    verbs = [a for a in args if not a.startswith("-")]
    return f"systemctl {verbs[0]}" if verbs and verbs[0] in _SYSTEMCTL_WRITES else ""


def _udevadm(args: list[str]) -> str:
    return "udevadm " + args[0] if args and args[0] in ("trigger", "control", "settle") else ""


def _xfs_repair_change(args: list[str]) -> str:
    """``xfs_repair -n`` only checks; without it the filesystem is repaired in place."""
    return "" if any(re.match(r"^-[a-zA-Z]*n", a) for a in args) else "xfs_repair"


def _fsck_change(args: list[str]) -> str:
    """``e2fsck -n`` opens read-only; otherwise it repairs (-p/-y/-f without -n)."""
    return "" if any(re.match(r"^-[a-zA-Z]*n", a) for a in args) else "fsck"


def _mdadm(args: list[str]) -> str:
    writes = ("--fail", "-f", "--remove", "-r", "--add", "-a", "--create", "-C", "--stop", "-S", "--grow")
    return "mdadm change" if any(a in writes for a in args) else ""


def _mlxconfig(args: list[str]) -> str:
    return "mlxconfig set" if any(a in ("set", "s", "reset", "r") for a in args) else ""


def _perl(args: list[str]) -> str:
    return "perl -i" if any(re.match(r"^-[a-zA-Z]*i", a) for a in args) else ""


_JUDGES: dict[str, Callable[[list[str]], str]] = {
    "mount": _mount,
    "nvme": _nvme,
    "setpci": _setpci,
    "mlnx_qos": _mlnx_qos,
    "ip": _ip,
    "sysctl": _sysctl,
    "grubby": _grubby,
    "sed": _sed,
    "systemctl": _systemctl,
    "udevadm": _udevadm,
    "mdadm": _mdadm,
    "mlxconfig": _mlxconfig,
    "mstconfig": _mlxconfig,
    "perl": _perl,
    "xfs_repair": _xfs_repair_change,
    "e2fsck": _fsck_change,
    "fsck": _fsck_change,
    "fsck.ext4": _fsck_change,
}
