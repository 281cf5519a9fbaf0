"""sos reports (``sos report``, ``sosreport``; sos 3.x and 4.x) read as a bundle of another tool.

A sos report is an archive (``.tar.xz``, ``.tar.gz``, ``.tar.bz2``, ``.tar.zst``) or the tree it
unpacks to: the host's files under their own paths (``proc/cmdline``, ``etc/os-release``) and
command outputs under ``sos_commands/PLUGIN/COMMAND_LINE`` (spaces as ``_``, ``/`` as ``.``).
:data:`SOS_SOURCES` maps those paths onto the facts sections the probes already parse; the
probes' parsers read the text as they read a paste. Each artifact keeps its path in the
report as its name, so a finding cites ``sos_commands/kernel/dmesg`` line 812.

Read as untrusted as a gdsdoctor bundle (``capture.bundle``: same name checks, size caps,
nothing extracted, nothing followed on disk), and only the members the table names are kept:
a 100,000-file report costs the memory of the few dozen files read. sos itself writes links
(``proc/mounts -> self/mounts``, ``proc/self -> 15152``): they are resolved *by name among the
report's members*, never opened, never out of the report (``bundle.resolve_link``).

The header: the host name (``sos_commands/host/hostname``, ``etc/hostname``), the kernel
(``uname -a``), and the capture time as ``host.created`` (UTC ISO 8601), from
``sos_commands/date/date_--utc`` or, failing that, ``sos_reports/manifest.json``'s start time.
"""

from __future__ import annotations

import calendar
import contextlib
import fnmatch
import json
import re
import time
from pathlib import Path

from gdsdoctor.capture import bundle
from gdsdoctor.capture.capture import Capture
from gdsdoctor.errors import BundleError
from gdsdoctor.model import Artifact, ArtifactStatus, decode_text, is_blank
from gdsdoctor.probes import nvme_host

# Facts section -> paths in the report, in order of preference (fnmatch patterns; where a
# pattern matches several files, in name order). The first one that parses feeds the section.
# Documented in docs/bundle.md ("sos reports"); a path sos 3.x and 4.x spell differently is
# listed in both spellings.
SOS_SOURCES: dict[str, tuple[str, ...]] = {
    "kernel": ("proc/version", "sos_commands/kernel/uname_-a", "uname"),
    "os_release": ("etc/os-release", "usr/lib/os-release"),
    "cmdline": ("proc/cmdline",),
    "etc_default_grub": ("etc/default/grub",),
    "kallsyms": ("proc/kallsyms",),
    "modules": ("proc/modules", "sos_commands/kernel/lsmod", "lsmod"),
    "meminfo": ("proc/meminfo",),  # memory plugin
    "dmesg": (
        "sos_commands/kernel/dmesg",
        "sos_commands/logs/journalctl_--no-pager_--catalog_--boot",
        "var/log/kern.log",
        "var/log/dmesg",
    ),
    "mounts": ("proc/mounts", "sos_commands/filesys/mount_-l", "mount"),
    "mountinfo": ("proc/self/mountinfo", "proc/1/mountinfo"),
    "fstab": ("etc/fstab",),
    "df": ("sos_commands/filesys/df_-al_-x_autofs", "sos_commands/filesys/df_-al", "df"),
    # `df -ali -x autofs` (sos 4), `df -ali` (sos 3)
    "df_i": ("sos_commands/filesys/df_-ali_-x_autofs", "sos_commands/filesys/df_-ali"),
    # the filesys plugin copies /proc/fs/: each ext4 device's options file, read as one section
    "ext4_options": ("proc/fs/ext4/*/options",),
    "lsblk": (
        "sos_commands/block/lsblk_-O_-P",
        "sos_commands/block/lsblk",
        "sos_commands/block/lsblk_-f_-a_-l",
    ),
    "blkid": ("sos_commands/block/blkid_-c_.dev.null",),
    "losetup": ("sos_commands/block/losetup_-a",),  # newer sos 4 releases (not Debian's 4.0)
    "udev": ("sos_commands/devices/udevadm_info_--export-db",),
    "lspci": ("sos_commands/pci/lspci_-nnvv", "sos_commands/pci/lspci_-nvv", "sos_commands/pci/lspci_-vvnn"),
    "lspci_tree": ("sos_commands/pci/lspci_-tv",),
    "nvme_list": ("sos_commands/nvme/nvme_list",),
    "nvme_subsys": ("sos_commands/nvme/nvme_list-subsys",),
    # one file per namespace (sos's nvme plugin runs `nvme smart-log /dev/nvmeXnY` for each),
    # read as one section (Probe.combine), each device with its own file and line; some sos
    # releases keep them in sub-folders of sos_commands/nvme (nvme_fw_smart_error_logs/,
    # nvme_id-ctrl_-H/: the plugin's `subdir=`), others beside the plugin's other outputs
    "nvme_smart": (
        "sos_commands/nvme/nvme_smart-log_.dev.nvme*",
        "sos_commands/nvme/nvme_fw_smart_error_logs/nvme_smart-log_.dev.nvme*",
    ),
    # `nvme id-ctrl -H /dev/nvmeXnY`, one file per namespace: its output names no device, the
    # file's name does (nvme_cli.parse_id_ctrl reads it from there)
    "nvme_id_ctrl": (
        "sos_commands/nvme/nvme_id-ctrl_-H_.dev.nvme*",
        "sos_commands/nvme/nvme_id-ctrl_-H/nvme_id-ctrl_-H_.dev.nvme*",
    ),
    # the nvme plugin copies /etc/nvme/discovery.conf (sos 4.0) or /etc/nvme/* (newer releases)
    "nvme_hostnqn": ("etc/nvme/hostnqn",),
    "nvme_hostid": ("etc/nvme/hostid",),
    "nvme_discovery_conf": ("etc/nvme/discovery.conf",),
    "nvme_config_json": ("etc/nvme/config.json",),
    "nvmf_autoconnect": ("sos_commands/systemd/systemctl_list-unit-files",),
    "netdev": (
        "sos_commands/networking/ip_-d_address",
        "sos_commands/networking/ip_address",
        "sos_commands/networking/ip_-s_-d_link",
        "sos_commands/networking/ip_link",
    ),
    # `ip -d address` (sos 4), `ip address` (sos 3); `ip -o addr` (the `ip_addr` link
    # at the report's top) as a last resort
    "ip_addr": (
        "sos_commands/networking/ip_-d_address",
        "sos_commands/networking/ip_address",
        "sos_commands/networking/ip_-o_addr",
        "ip_addr",
    ),
    "numa": ("sos_commands/numa/numactl_--hardware",),
    "infiniband": ("sos_commands/infiniband/ibstat", "sos_commands/infiniband/ibv_devinfo_-v"),
    "nvidia_smi": ("sos_commands/nvidia/nvidia-smi_-q",),
    "nvidia_topo": ("sos_commands/nvidia/nvidia-smi_topo_-m",),
    "nvidia_driver": ("proc/driver/nvidia/version",),
    "nvidia_fs_version": ("proc/driver/nvidia-fs/version",),
    "nvidia_fs_modules": ("proc/driver/nvidia-fs/modules",),
    "nvidia_fs_stats": ("proc/driver/nvidia-fs/stats",),
    # the dkms plugin's, or the kernel plugin's (newer sos 4 releases run `dkms status` there)
    "dkms_status": ("sos_commands/dkms/dkms_status", "sos_commands/kernel/dkms_status"),
    "cufile_json": ("etc/cufile.json",),
}
# Copies of the host's files that may hold its secrets (NVMe-oF DH-HMAC-CHAP and TLS keys): read
# as the live readers read them, the keys' values left out, so no evidence line prints one.
_WITHOUT_KEYS = {
    "etc/nvme/discovery.conf": nvme_host.discovery_conf_without_keys,
    "etc/nvme/config.json": lambda data: nvme_host.config_json_without_keys(data, keep_clean=True),
}
# `modinfo` of every loaded module in one file (sos 3.5 and later): cut into one artifact per
# module for the modinfo probes (``NAME#MODULE``).
MODINFO_ALL = "sos_commands/kernel/modinfo_ALL_MODULES"
MODINFO_SECTIONS = {
    "nvidia": "modinfo_nvidia",
    "nvidia_fs": "modinfo_nvidia_fs",
    "nvme": "modinfo_nvme",
    "nvme_rdma": "modinfo_nvme_rdma",
}
# Read for the header only.
HOSTNAME_PATHS = ("sos_commands/host/hostname", "hostname", "etc/hostname", "sos_commands/general/hostname")
DATE_PATHS = ("sos_commands/date/date_--utc", "sos_commands/general/date_--utc")
UPTIME_PATHS = ("sos_commands/host/uptime", "uptime", "sos_commands/general/uptime")
SOS_MANIFEST = "sos_reports/manifest.json"
_HEADER_PATHS = (*HOSTNAME_PATHS, *DATE_PATHS, *UPTIME_PATHS, SOS_MANIFEST, "version.txt", MODINFO_ALL)
_ALL_PATTERNS = tuple(p for paths in SOS_SOURCES.values() for p in paths) + _HEADER_PATHS
_MARKERS = ("sos_commands", "sos_reports", "sos_logs")
PEEK_HEADERS = 64  # archive members looked at to tell a sos report from a gdsdoctor bundle
MAX_HEADER_FILE = 1024 * 1024  # the header's files (hostname, date, manifest) are small


# sos links proc/mounts -> self/mounts and proc/self -> PID (its own process). The first pass
# over the report keeps these files of every PID directory, so that an archive is not
# decompressed a second time for the one proc/self names (docs/performance.md).
_SELF_TARGETS = ("proc/[0-9]*/mounts", "proc/[0-9]*/mountinfo")


def _is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


# Looked up for every file of the directories walked (a thousand or more): the plain names in a
# set, fnmatch only for the few patterns.
_EXACT_NAMES = frozenset(p for p in _ALL_PATTERNS if not _is_glob(p))
_GLOBS = tuple(p for p in (*_ALL_PATTERNS, *_SELF_TARGETS) if _is_glob(p))


def _selected(name: str) -> bool:
    return name in _EXACT_NAMES or any(fnmatch.fnmatchcase(name, pattern) for pattern in _GLOBS)


def _directories() -> frozenset[str]:
    """Every directory on the way to a path of the table (a walk enters only these)."""
    found = set()
    for pattern in _ALL_PATTERNS:
        parts = pattern.split("/")[:-1]
        found.update("/".join(parts[: n + 1]) for n in range(len(parts)))
    return frozenset(found | {"proc/self", "proc/1"})


_DIRECTORIES = _directories()
# a directory named by a pattern (proc/fs/ext4/*: one per device) is entered where it matches
_DIRECTORY_GLOBS = tuple(d for d in _DIRECTORIES if _is_glob(d))


def _entered(name: str) -> bool:
    return name in _DIRECTORIES or any(fnmatch.fnmatchcase(name, pattern) for pattern in _DIRECTORY_GLOBS)


SELECTION = bundle.Selection(file=_selected, directory=_entered)


# --- is it one -------------------------------------------------------------------------------


def is_sos_report(path: Path) -> bool:
    """A sos report: a directory holding ``sos_commands``/``sos_reports``/``sos_logs`` (or
    whose one sub-directory does: an unpacked archive keeps its top folder), or an archive
    whose first members say so. Never raises: an unreadable input is not one."""
    try:
        if path.is_dir():
            return _is_sos_dir(path) or any(_is_sos_dir(child) for child in _only_subdirectory(path))
        return path.is_file() and path.name.endswith(bundle.BUNDLE_SUFFIXES) and _archive_says_sos(path)
    except OSError:
        return False


def _is_sos_dir(path: Path) -> bool:
    return any((path / marker).is_dir() for marker in _MARKERS)


def _only_subdirectory(path: Path) -> list[Path]:
    """The top folder of an unpacked archive: the one sub-directory of a folder holding no
    archive beside it (a checksum may be there). A folder that also holds a bundle archive is
    a fleet (`analyze fleet/`), not one report in a wrapper."""
    entries = list(path.iterdir())
    children = [child for child in entries if child.is_dir() and not child.is_symlink()]
    archives = [entry for entry in entries if entry.name.endswith(bundle.BUNDLE_SUFFIXES) and entry.is_file()]
    return children if len(children) == 1 and not archives else []


def _archive_says_sos(path: Path) -> bool:
    """Whether the first members of the archive are a sos report's (its top folder named
    ``sosreport-…``, a ``sos_commands`` path, or a top-level link into one)."""
    with contextlib.suppress(BundleError, *bundle.DECOMPRESS_ERRORS):
        for name, link in bundle.member_names(path, PEEK_HEADERS):
            parts = name.split("/")
            if parts[0].startswith(("sosreport-", "sos-collector-")) or any(p in _MARKERS for p in parts):
                return True
            if link.startswith(_MARKERS):
                return True
    return False


# --- reading ---------------------------------------------------------------------------------


def read_sos(path: Path) -> Capture:
    """Read a sos report (archive or directory) into a Capture; raises BundleError if unusable."""
    if path.is_dir() and not _is_sos_dir(path):
        path = next(iter(_only_subdirectory(path)), path)  # an unpacked archive's top folder
    members = _members(path)
    capture = Capture(origin="sos", label=str(path))
    exits = return_codes(members)
    for section, patterns in SOS_SOURCES.items():
        for name in _matching(members, patterns):
            capture.add(section, _artifact(name, members, exits.get(name)))
    _add_modinfo(capture, members)
    capture.host = _header(members, path)
    capture.options = {"host_root": None, "target_path": None}
    if capture.host.get("created", "").endswith("Z"):  # the capture's time, for events' ages
        capture.options["created"] = capture.host["created"]
    if not any(a.status is ArtifactStatus.OK for a in capture.artifacts.values()):
        raise BundleError(f"{path}: a sos report holding none of the files gdsdoctor reads")
    if members.ignored:
        shown = ", ".join(members.ignored[:5]) + (" …" if len(members.ignored) > 5 else "")
        capture.notes.append(f"sos report: ignored {len(members.ignored)} member(s): {shown}")
    return capture


def _members(path: Path) -> bundle.Members:
    """The selected members, the report's top folder stripped; a second pass fetches what the
    links among them name (``proc/mounts -> self/mounts -> 15152/mounts``)."""
    members = bundle.read_members(path, SELECTION)
    _strip_top(members)
    wanted = {name for name in _link_targets(members) if name not in members.files}
    if wanted:
        top = _top_of(path)
        names = {f"{top}{name}" for name in wanted} | wanted
        parents = {"/".join(n.split("/")[: i + 1]) for n in names for i in range(n.count("/"))}
        extra = bundle.read_members(
            path, bundle.Selection(file=names.__contains__, directory=parents.__contains__)
        )
        _strip_top(extra)
        for name, data in extra.files.items():
            members.files.setdefault(name, data)
    return members


def _link_targets(members: bundle.Members) -> set[str]:
    """The members the table's paths stand for through links, as names to read."""
    targets = set()
    for patterns in (*SOS_SOURCES.values(), _HEADER_PATHS):
        for pattern in patterns:
            if _is_glob(pattern):
                continue
            target = bundle.resolve_link(pattern, members, must_exist=False)
            if target and target != pattern:
                targets.add(target)
    return targets


def _top_of(path: Path) -> str:
    """The archive's (or directory's) one top folder as a prefix ("" for an unpacked tree)."""
    if path.is_dir():
        children = [] if _is_sos_dir(path) else _only_subdirectory(path)
        return f"{children[0].name}/" if children else ""
    with contextlib.suppress(BundleError, *bundle.DECOMPRESS_ERRORS):
        for name, _ in bundle.member_names(path, 1):
            return name.split("/", 1)[0] + "/" if "/" in name or name.endswith("/") else ""
    return ""


def _strip_top(members: bundle.Members) -> None:
    names = [*members.files, *members.links]
    tops = {name.split("/", 1)[0] for name in names}
    if len(tops) != 1 or not any("/" in name for name in names):
        return
    top = tops.pop()
    if top in _MARKERS or top in ("proc", "etc", "sys", "var", "usr"):
        return  # the report itself, not a folder around it
    prefix = top + "/"
    members.files = {n[len(prefix) :]: d for n, d in members.files.items() if n.startswith(prefix)}
    members.duplicates = {n[len(prefix) :] for n in members.duplicates if n.startswith(prefix)}
    members.links = {
        n[len(prefix) :]: t.replace("/" + prefix, "/", 1) if t.startswith("/" + prefix) else t
        for n, t in members.links.items()
        if n.startswith(prefix)
    }


def _matching(members: bundle.Members, patterns: tuple[str, ...]) -> list[str]:
    """The report's names for ``patterns``, in order, each once (files, links to files, and
    files under a linked directory: ``proc/self/mountinfo`` with ``proc/self -> PID``)."""
    names = [*members.files, *members.links]
    found: list[str] = []
    for pattern in patterns:
        hits = sorted(fnmatch.filter(names, pattern)) if _is_glob(pattern) else [pattern]
        for name in hits:
            held = name in members.files or name in members.links or bundle.resolve_link(name, members)
            if name not in found and held:
                found.append(name)
    return found


def _artifact(name: str, members: bundle.Members, exit_code: int | None = None) -> Artifact:
    source = f"sos report: {name}"
    if name in members.duplicates:
        return Artifact(
            name, ArtifactStatus.ERROR, b"", source, "present more than once in the report; not analysed"
        )
    real = bundle.resolve_link(name, members) if name in members.links or name not in members.files else name
    if real is None:
        detail = "a link in the report that leads to no file of the report; not read"
        return Artifact(name, ArtifactStatus.MISSING, b"", source, detail)
    if real != name:
        source = f"sos report: {name} (-> {real})"
    data = members.files[real]
    if is_blank(data):
        return Artifact(name, ArtifactStatus.MISSING, b"", source, "empty in the sos report")
    if name in _WITHOUT_KEYS:
        data = _WITHOUT_KEYS[name](data)
    # a command that failed keeps its output (smartctl and others print a full report with a
    # non-zero exit): its exit code tells a parse failure from the tool's own error message
    return Artifact(name, ArtifactStatus.OK, data, source, exit_code=exit_code)


def return_codes(members: bundle.Members) -> dict[str, int]:
    """The exit code of each command output of the report, by its path, from sos 4's
    ``sos_reports/manifest.json`` (``components.report.plugins.*.commands[]``); {} for sos 3 or
    a manifest that does not say (untrusted: anything malformed is passed over)."""
    raw = members.files.get(SOS_MANIFEST, b"")
    if not raw or len(raw) > bundle.MAX_MANIFEST_BYTES:
        return {}
    try:
        plugins = json.loads(raw)["components"]["report"]["plugins"]
    except (ValueError, RecursionError, KeyError, TypeError):
        return {}
    codes: dict[str, int] = {}
    for plugin in plugins.values() if isinstance(plugins, dict) else ():
        commands = plugin.get("commands") if isinstance(plugin, dict) else None
        for command in commands if isinstance(commands, list) else ():
            if not isinstance(command, dict):
                continue
            where, code = command.get("filepath"), command.get("return_code")
            if isinstance(where, str) and isinstance(code, int) and not isinstance(code, bool):
                codes[where] = code
    return codes


def _add_modinfo(capture: Capture, members: bundle.Members) -> None:
    """``modinfo_ALL_MODULES`` cut at each ``filename:`` line, one artifact per module the
    probes read. The lines before a cut belong to the module they follow."""
    data = members.files.get(MODINFO_ALL)
    if not data:
        return
    for module, text in split_modinfo(decode_text(data)).items():
        section = MODINFO_SECTIONS.get(module.replace("-", "_"))
        if section:
            name = f"{MODINFO_ALL}#{module}"
            capture.add(section, Artifact(name, ArtifactStatus.OK, text.encode(), f"sos report: {name}"))


_FILENAME = re.compile(r"^filename:\s+(\S+)", re.M)
_NAME = re.compile(r"^name:\s+(\S+)", re.M)


def split_modinfo(text: str) -> dict[str, str]:
    """Concatenated ``modinfo`` outputs by module name (its ``name:`` field, else the file's)."""
    starts = [m.start() for m in _FILENAME.finditer(text)]
    modules: dict[str, str] = {}
    for start, end in zip(starts, [*starts[1:], len(text)][: len(starts)], strict=True):
        block = text[start:end]
        named = _NAME.search(block)
        module = named[1] if named else _module_of(_FILENAME.match(block)[1])  # type: ignore[index]
        modules.setdefault(module, block)
    return modules


def _module_of(filename: str) -> str:
    base = filename.rsplit("/", 1)[-1]
    return re.sub(r"\.ko(\.(xz|gz|zst))?$", "", base)


# --- the header ------------------------------------------------------------------------------


def _header(members: bundle.Members, path: Path) -> dict[str, str]:
    host: dict[str, str] = {}
    hostname = _first_line(members, HOSTNAME_PATHS)
    if hostname and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.\-]{0,252}", hostname):
        host["hostname"] = hostname
    uname = _first_line(members, ("sos_commands/kernel/uname_-a", "uname"))
    if uname and len(uname.split()) >= 3 and uname.startswith("Linux "):
        host["kernel"] = uname.split()[2][:200]
    created = _utc_date(_first_line(members, DATE_PATHS)) or _manifest_time(members)
    if created:
        host["created"] = created
    uptime = uptime_s(_first_line(members, UPTIME_PATHS))
    if uptime is not None and created.endswith("Z"):
        # the event clock (facts.event_clock): the wall time and the uptime of one moment, as a
        # live capture records them; sos ran `date` and `uptime` seconds apart, `uptime` to the minute
        parsed = time.strptime(created.removesuffix("Z"), "%Y-%m-%dT%H:%M:%S")
        host["captured_at_epoch"] = f"{calendar.timegm(parsed)}"
        host["uptime_s"] = f"{uptime}"
    version = _sos_version(members)
    if version:
        host["sos_version"] = version
    return host


def _first_line(members: bundle.Members, paths: tuple[str, ...]) -> str:
    for name in paths:
        real = bundle.resolve_link(name, members)
        data = members.files.get(real or "", b"")[:MAX_HEADER_FILE]
        line = decode_text(data).strip().split("\n", 1)[0].strip()
        if line:
            return line[:300]
    return ""


_UPTIME = re.compile(
    r"\bup\s+(?:(?P<days>\d{1,6}) days?,\s*)?(?:(?P<hours>\d{1,2}):(?P<minutes>\d\d)|(?P<only>\d{1,2}) min)"
)


def uptime_s(line: str) -> int | None:
    """``uptime``'s ``up 5 days,  3:02`` / ``up 21 min`` / ``up 12 days, 43 min`` in seconds
    (to the minute, as it prints it); None when the line says otherwise."""
    found = _UPTIME.search(line)
    if not found:
        return None
    minutes = int(found["only"] or 0) + int(found["minutes"] or 0) + 60 * int(found["hours"] or 0)
    return (int(found["days"] or 0) * 1440 + minutes) * 60


def _utc_date(line: str) -> str:
    """``date --utc`` output (``Tue Dec  1 14:25:03 UTC 2026``) as ISO 8601 UTC; the year
    written with four digits whatever it is (a clock that lost its battery may say year 1: the
    event clock judges that, facts.event_clock)."""
    with contextlib.suppress(ValueError):
        parsed = time.strptime(" ".join(line.split()), "%a %b %d %H:%M:%S UTC %Y")
        return f"{parsed.tm_year:04d}" + time.strftime("-%m-%dT%H:%M:%SZ", parsed)
    return ""


def _manifest_time(members: bundle.Members) -> str:
    """sos 4's manifest start time. sos writes the host's local time without its zone: kept as
    written (no ``Z``), since its offset from UTC is unknown."""
    raw = members.files.get(SOS_MANIFEST, b"")
    if not raw or len(raw) > bundle.MAX_MANIFEST_BYTES:
        return ""
    with contextlib.suppress(ValueError, RecursionError):
        manifest = json.loads(raw)
        start = manifest.get("start_time") if isinstance(manifest, dict) else None
        if isinstance(start, str) and re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?", start):
            return start.split(".")[0].replace(" ", "T")
    return ""


def _sos_version(members: bundle.Members) -> str:
    text = decode_text(members.files.get("version.txt", b"")[:MAX_HEADER_FILE])
    found = re.search(r"^(?:sosreport|sos report)[: ]\s*(\S+)", text, re.M)
    return found[1][:40] if found else ""


# --- writing (a redacted copy) ---------------------------------------------------------------


def write_sos(capture: Capture, output: Path, top: str) -> None:
    """``capture`` (read from a sos report, then redacted) as a sos report again: a ``.tar.gz``
    holding, under ``top/``, each file gdsdoctor read at its path in the report (links written
    as the files they named), ``modinfo_ALL_MODULES`` of the modules read, and the header's
    files (host name, date, sos version), so that it reads back with the same findings."""
    files: dict[str, bytes] = {}
    modinfo: list[bytes] = []
    for name, artifact in capture.artifacts.items():
        if name.startswith(MODINFO_ALL + "#"):
            modinfo.append(artifact.data)
        elif artifact.status is ArtifactStatus.OK and bundle.safe_member_name(name) == name:
            files[name] = artifact.data
    if modinfo:
        files[MODINFO_ALL] = b"".join(modinfo)
    host = capture.host
    if host.get("hostname"):
        files[HOSTNAME_PATHS[0]] = f"{host['hostname']}\n".encode()
    if str(host.get("created", "")).endswith("Z"):
        when = time.strptime(host["created"], "%Y-%m-%dT%H:%M:%SZ")
        files[DATE_PATHS[0]] = time.strftime("%a %b %d %H:%M:%S UTC %Y\n", when).encode()
    if host.get("sos_version"):
        files["version.txt"] = f"sosreport: {host['sos_version']}\n".encode()
    bundle.write_tar({f"{top}/{name}": data for name, data in files.items()}, output)
