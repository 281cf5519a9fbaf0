"""What the storage tier's setup commands print when they fail, pasted from a terminal.

Setting up an NVMe-oF checkpoint tier is a short procedure (``nvme discover``/``connect``,
``modprobe nvidia-fs``, ``mount``, reading a ``numa_node``), and what a user pastes into a
ticket is that session: the commands and their one-line errors. Nothing here is captured on a
live host (these are the user's commands, never gdsdoctor's); the kernel's side of the same
failures is in the kernel log.

Section ``cli_errors``::

    {"errors": [{"tool": "nvme"|"modprobe"|"insmod"|"mount", "kind": …, "reason": str|None,
                 "errno": "EINVAL"|None, "module": …, "kernel": …, "device": …, "mountpoint": …,
                 "transport": …, "src"}],
     "kinds": [str],
     "commands": [{"tool": "mount"|"nvme", "argv": [str], "options": [str], "fstype": …,
                   "device": …, "mountpoint": …, "transport": …, "traddr": …, "src"}],
     "numa_reads": [{"path": "/sys/block/nvme1n1/device/numa_node", "device": "nvme1n1",
                     "value": -1, "src"}]}

Kinds: ``fabrics_write_failed`` (nvme-cli 1.x ``Failed to write to /dev/nvme-fabrics: …``, the
kernel refused the connect string), ``fabrics_open_failed`` (``Failed to open /dev/nvme-fabrics``:
nvme_fabrics is not loaded), ``controller_add_failed`` (nvme-cli 2.x ``could not add new
controller: …``, libnvme's words for the errno), ``trsvcid_missing``, ``nvme_status`` (a command the controller answered with an NVMe status:
``NVMe status: Access Denied: …(0x4286)``, 1.x ``NVME IO command error:ACCESS_DENIED: …(6286)``;
the record adds ``sct``, ``sc``, ``dnr``, ``more``, ``status_name``, ``status_class`` from the
number, probes/nvme_status.py), ``module_not_found``
(``modprobe: FATAL: Module X not found in directory /lib/modules/REL``), ``module_insert_failed``
(``modprobe: ERROR: could not insert 'X': …``, insmod's), ``mount_failed`` (mount(8)'s ``wrong fs
type, bad option, bad superblock on DEV``, both layouts), ``mount_no_device`` (``special device
… does not exist``), ``mount_no_mountpoint``.

Real samples: tests/data/cli_errors/SOURCES.md.

>>> paste = "$ nvme discover -t rdma -a 10.0.0.5 -s 4420\\nFailed to write to /dev/nvme-fabrics: Invalid argument\\n"
>>> section = parse(paste, "pasted")
>>> error = section["errors"][0]
>>> error["kind"], error["errno"], section["commands"][0]["transport"]
('fabrics_write_failed', 'EINVAL', 'rdma')
"""

# ruff: noqa: E501  (one error format a line reads better than a pattern cut to fit)
from __future__ import annotations

import re
import shlex
from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes import nvme_status
from gdsdoctor.probes.base import Probe, Section, head_lines, numbered_lines, src

# strerror(3) texts these commands print, and the errno each names (glibc's wording)
STRERROR = {
    "invalid argument": "EINVAL",
    "input/output error": "EIO",
    "no such file or directory": "ENOENT",
    "no such device": "ENODEV",
    "connection refused": "ECONNREFUSED",
    "connection reset by peer": "ECONNRESET",
    "connection timed out": "ETIMEDOUT",
    "no route to host": "EHOSTUNREACH",
    "operation already in progress": "EALREADY",
    "address already in use": "EADDRINUSE",
    "cannot assign requested address": "EADDRNOTAVAIL",
    "operation not supported": "EOPNOTSUPP",
    "permission denied": "EACCES",
    "operation not permitted": "EPERM",
    "device or resource busy": "EBUSY",
    "exec format error": "ENOEXEC",
    "cannot allocate memory": "ENOMEM",
    "unknown symbol in module, or unknown parameter (see dmesg)": "ENOENT",
    "invalid parameters": "EINVAL",
    # libnvme's own words for the connect errnos (nvme-cli 2.x "could not add new controller: …")
    "invalid arguments/configuration": "EINVAL",
    "hostnqn already in use": "EADDRINUSE",
    "already connected": "EALREADY",
}

_ERRORS: tuple[tuple[str, str, Any], ...] = (
    ("nvme", "fabrics_write_failed", lazy_compile(r"^Failed to write to /dev/nvme-fabrics: (?P<reason>.{1,200})$")),
    ("nvme", "fabrics_open_failed", lazy_compile(r"^Failed to open /dev/nvme-fabrics: (?P<reason>.{1,200})$")),
    ("nvme", "controller_add_failed", lazy_compile(r"^(?:could not add new controller|failed to add controller(?:, error)?):? (?P<reason>.{1,200})$")),
    ("nvme", "trsvcid_missing", lazy_compile(r"^No trsvcid specified for '(?P<transport>[\w-]{1,20})'$")),
    # a command the controller answered with an NVMe status: nvme-cli 1.9+ "NVMe status: NAME: text(0x4286)",
    # before "NVME IO|Admin command error:NAME: text(4286)" (the whole status field, in hex)
    ("nvme", "nvme_status", lazy_compile(r"^NVMe status: (?P<reason>[^(\n]{1,200})\((?P<status>0x[0-9a-fA-F]{1,4})\)$")),
    ("nvme", "nvme_status", lazy_compile(
        r"^NVME (?:IO|Admin) command error:(?P<reason>[^(\n]{1,200})\((?P<status>[0-9a-fA-F]{1,4})\)$"
    )),
    ("modprobe", "module_not_found", lazy_compile(
        r"^modprobe: FATAL: Module (?P<module>[\w-]{1,64}) not found in directory /lib/modules/(?P<kernel>[^/\s]{1,100})/?$"
    )),
    ("modprobe", "module_insert_failed", lazy_compile(
        r"^modprobe: (?:ERROR|FATAL): could not insert '(?P<module>[\w-]{1,64})': (?P<reason>.{1,200})$"
    )),
    ("insmod", "module_insert_failed", lazy_compile(
        r"^insmod: ERROR: could not insert module (?P<path>[^:\s]{1,300}): (?P<reason>.{1,200})$"
    )),
    ("mount", "mount_failed", lazy_compile(
        r"^mount(?:\(8\))?: (?:(?P<mountpoint>/[^:]{0,200}): )?wrong fs type, bad option, bad superblock on "
        r"(?P<device>[^,\s]{1,200}),?(?P<reason>.{0,200})$"
    )),
    ("mount", "mount_no_device", lazy_compile(
        r"^mount: (?:(?P<mountpoint>/[^:]{0,200}): )?special device (?P<device>\S{1,200}) does not exist\.?$"
    )),
    ("mount", "mount_no_mountpoint", lazy_compile(r"^mount: (?P<mountpoint>/[^:]{0,200}): mount point does not exist\.?$")),
)  # fmt: skip
# a shell prompt: `$ `, `# `, `user@host:dir$ `, `[root@host ~]# `, `(venv) user@host$ `
_PROMPT = lazy_compile(
    r"^\s*(?:\(\S{1,60}\) )?(?:\[[^\]\n]{1,100}\]|[^\s$#\[(]{0,100})[$#] +(?P<command>\S.{0,2000})$"
)
_NUMA_PATH = lazy_compile(r"(?:^|\s)cat\s+(?P<path>/sys/\S{1,300}/numa_node)\s*$")
_NUMA_VALUE = lazy_compile(r"^\s*(?P<value>-?\d{1,4})\s*$")
_SYS_DEVICE = lazy_compile(
    r"^/sys/(?:block|class/\w{1,30})/(?P<device>[^/\s]{1,100})/|^/sys/bus/pci/devices/(?P<bdf>[^/\s]{1,20})/"
)


def _errno(reason: str | None) -> str | None:
    if not reason:
        return None
    return STRERROR.get(reason.strip().rstrip(".").lower())


def _error(
    tool: str, kind: str, match: re.Match[str], artifact: str, number: int, line: str
) -> dict[str, Any]:
    fields = match.groupdict()
    if fields.get("path"):  # insmod names the file: its module is the file's name
        fields["module"] = re.sub(r"\.ko(?:\.\w+)?$", "", fields["path"].rsplit("/", 1)[-1])
    reason = (fields.get("reason") or "").strip(" ,.") or None
    return {
        "tool": tool,
        "kind": kind,
        "reason": reason,
        "errno": _errno(reason),
        "module": (fields.get("module") or "").replace("-", "_") or None,
        "kernel": fields.get("kernel"),
        "device": fields.get("device"),
        "mountpoint": fields.get("mountpoint"),
        "transport": fields.get("transport"),
        "src": src(artifact, number, line),
        # the NVMe status a controller answered, decoded from its number (not its wording)
        **(nvme_status.decode_value(int(fields["status"], 16)) if fields.get("status") else {}),
    }


def _command(argv: list[str], artifact: str, number: int, line: str) -> dict[str, Any] | None:
    """The mount or nvme-cli fabrics command a prompt line ran, by its arguments."""
    while argv and argv[0] in ("sudo", "time", "env"):
        argv = argv[1:]
    if not argv or argv[0].rsplit("/", 1)[-1] not in ("mount", "nvme"):
        return None
    tool = argv[0].rsplit("/", 1)[-1]
    record: dict[str, Any] = dict.fromkeys(("fstype", "device", "mountpoint", "transport", "traddr"))
    record.update(tool=tool, argv=argv, options=[], src=src(artifact, number, line))
    words = iter(argv[1:])
    plain = []
    type_key = "fstype" if tool == "mount" else "transport"
    for word in words:
        key, eq, value = word.partition("=")
        if word in ("-o", "--options"):
            record["options"] += next(words, "").split(",")
        elif key == "--options" and eq:
            record["options"] += value.split(",")
        elif tool == "mount" and word.startswith("-o") and len(word) > 2:
            record["options"] += word[2:].split(",")
        elif word in ("-t", "--types", "--transport"):
            record[type_key] = next(words, None)
        elif key in ("--types", "--transport") and eq:
            record[type_key] = value
        elif word in ("-a", "--traddr") or (key == "--traddr" and eq):
            record["traddr"] = value if eq else next(words, None)
        elif not word.startswith("-"):
            plain.append(word)
    if tool == "mount" and len(plain) == 2:
        record["device"], record["mountpoint"] = plain
    elif tool == "nvme" and (not plain or plain[0] not in ("connect", "discover", "connect-all")):
        return None
    return record


def parse(text: str, artifact: str) -> Section:
    errors: list[dict[str, Any]] = []
    commands: list[dict[str, Any]] = []
    numa_reads: list[dict[str, Any]] = []
    numa_path: tuple[str, int, str] | None = None  # the `cat …/numa_node` awaiting its value
    for number, line in numbered_lines(text):
        stripped = line.strip()
        if not stripped:
            continue
        if value := _NUMA_VALUE.match(stripped) if numa_path else None:
            path = numa_path[0]
            device = _SYS_DEVICE.match(path)
            name = (device["device"] or device["bdf"]) if device else None
            numa_reads.append({"path": path, "device": name, "value": int(value["value"]),
                               "src": src(artifact, number, line)})  # fmt: skip
            numa_path = None
            continue
        numa_path = None
        if found := _NUMA_PATH.search(stripped):
            numa_path = (found["path"], number, line)
            continue
        if (prompt := _PROMPT.match(line)) and not _error_of(stripped, artifact, number, line):
            try:
                argv = shlex.split(prompt["command"])
            except ValueError:
                continue
            if record := _command(argv, artifact, number, line):
                commands.append(record)
            continue
        if error := _error_of(stripped, artifact, number, line):
            errors.append(error)
    if not errors and not numa_reads:
        raise ParseError(
            "no error line of nvme-cli, modprobe or mount, nor a `cat …/numa_node` and its value"
        )
    return {"errors": errors, "kinds": sorted({e["kind"] for e in errors}), "commands": commands,
            "numa_reads": numa_reads}  # fmt: skip


def _error_of(stripped: str, artifact: str, number: int, line: str) -> dict[str, Any] | None:
    for tool, kind, pattern in _ERRORS:
        if match := pattern.match(stripped):
            return _error(tool, kind, match, artifact, number, line)
    return None


# A session's chatter besides its prompts: a command typed without a prompt, as a session pasted
# from a script or a one-liner shows it ("sudo nvme --version;sudo nvme write-zeroes /dev/nvme0n1;echo
# $?"), and nvme-cli's version banner. nvme's verbs are named: "nvme nvme0: …" is a kernel line.
_BARE_COMMAND = lazy_compile(
    r"^(?:sudo\s+)?(?:nvme\s+(?:--version|version|list|list-subsys|connect|connect-all|disconnect|disconnect-all"
    r"|discover|write-zeroes|format|sanitize|id-ctrl|id-ns|smart-log|error-log|get-log|get-feature|set-feature"
    r"|read|write|flush|reset|ns-rescan|security-send|security-recv|admin-passthru|io-passthru)\b"
    r"|(?:modprobe|insmod|rmmod|mount|umount)\s+\S)"
)
_VERSION_BANNER = lazy_compile(r"^nvme version \S{1,40}$")


def recognise(text: str) -> bool:
    """Error lines of these commands make the paste (its prompts and other chatter aside), or a
    numa_node read with its value."""
    lines = [line.strip() for line in head_lines(text, 200) if line.strip()]
    hits = sum(1 for line in lines if any(pattern.match(line) for _, _, pattern in _ERRORS))
    numa = any(_NUMA_PATH.search(line) for line in lines) and any(_NUMA_VALUE.match(line) for line in lines)
    others = [
        line
        for line in lines
        if not _PROMPT.match(line)
        and not _NUMA_VALUE.match(line)
        and not _BARE_COMMAND.match(line)
        and not _VERSION_BANNER.match(line)
    ]
    return (hits >= 1 and hits * 2 >= len(others)) or (numa and len(lines) <= 4)


PROBES: tuple[Probe, ...] = (
    Probe(
        section="cli_errors",
        title="error lines of the tier's setup commands (nvme connect/discover, modprobe, mount, a numa_node read)",
        sources=(),  # the user's own commands: pasted, never run
        parse=parse,
        recognise=recognise,
        paste_hint="the terminal session of the failing step (`nvme connect …`, `modprobe nvidia-fs`, `mount …`) with its error",
        reads_prompts=True,  # the command a prompt ran says what failed (`$ mount -o … DEV DIR`)
    ),
)
