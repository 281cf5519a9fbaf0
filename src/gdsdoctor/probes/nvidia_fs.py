"""The nvidia-fs kernel driver and the NVIDIA driver flavour it needs.

Sections (keys; ``src`` is provenance of the line each value came from):

- ``nvidia_fs_version`` (``/proc/driver/nvidia-fs/version``, ``version: 2.28``): ``version`` str, ``src``.
- ``nvidia_fs_modules`` (``/proc/driver/nvidia-fs/modules``, ``nvme: (null)``): ``modules``
  ``[{name, version, src}]``, ``names``, ``nvme_registered`` (bool; ``wekafsio`` is always listed).
- ``nvidia_fs_stats`` (``/proc/driver/nvidia-fs/stats``): ``gds_version``, ``stats_version``,
  ``driver_version`` ("2:3:1" -> "2.3.1"), ``peer_direct``, ``io_stats_enabled``,
  ``peer_io_stats_enabled`` (bool|None), ``logging_level``, ``active_shadow_buffer`` (bytes),
  ``active_processes``, ``rw_stats_enabled`` (bool|None: Reads line has ``n=``; the default
  rw_stats_enabled=0 layout prints only ``err=``), ``counters`` ``{reads: {n, ok, err, read_bytes,
  bandwidth_mib_s, avg_latency_usec, ...}, writes, sparse_reads, mmap, bar1_map, error, ops, batches}``
  (``ops`` are in-flight gauges, not totals), ``gpus`` ``[{pci_address, uuid, registered_bytes,
  cache_bytes, max_pinned_bytes, cross_root_port_pct, src}]``, ``src`` (counter name -> first line).
- ``nvidia_fs_devices`` (reader: ``/dev/nvidia-fs*`` and ``/proc/driver/nvidia-fs/devcount``):
  ``devices`` (sorted /dev paths), ``count``, ``devcount`` (int|None), ``proc_present`` (bool).
- ``nvidia_driver`` (``/proc/driver/nvidia/version``): ``version``, ``open`` (bool: "Open Kernel
  Module"), ``arch``, ``gcc``, ``src``.
- ``modinfo_nvidia`` / ``modinfo_nvidia_fs`` / ``modinfo_nvme`` (``modinfo <module>``): ``fields``
  (first value per key), ``filename``, ``version``, ``license``, ``vermagic``, ``depends`` (list),
  ``open`` (nvidia only: license "Dual MIT/GPL"), ``out_of_tree`` (file under updates/ extra/ dkms/
  - e.g. the MLNX_OFED/DOCA nvme instead of the inbox one), ``placeholder`` (the description says
  "dummy": MLNX_OFED/DOCA's stand-in for a module it did not build; None without a description), ``src``.
  ``modinfo_nvme_rdma`` too (the fabrics driver whose GDS build registers with nvidia-fs).
- ``dkms_status`` (``dkms status``, ``nvidia-fs/2.18.3, 6.5.0-17-generic, x86_64: installed``):
  ``modules`` ``[{module, version, kernel, arch, state, warning, src}]``.
- ``nvidia_fs_build`` (newest ``/var/lib/dkms/nvidia-fs/*/build/make.log``, or a pasted build log):
  ``module``, ``version``, ``kernel`` (from the DKMS header or None), ``errors``
  ``[{kind, text, src}]`` (kinds in :data:`BUILD_ERROR_KINDS`), ``kinds`` (sorted), ``failed`` (bool).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gdsdoctor.errors import ParseError, Unavailable
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, Source, head_lines, numbered_lines, src
from gdsdoctor.probes.gdscheck import MIB, content_lines
from gdsdoctor.probes.host_io import read_under_root

PROC_DIR = "/proc/driver/nvidia-fs"

# --- version / modules -----------------------------------------------------------------------

_VERSION = lazy_compile(r"^\s*version\s*:\s*(?P<v>\d+(?:[.:]\d+)*)\s*$")


def parse_version(text: str, artifact: str) -> Section:
    for number, line in numbered_lines(text):
        match = _VERSION.match(line)
        if match:
            return {"version": match["v"].replace(":", "."), "src": src(artifact, number, line)}
    raise ParseError("no `version: X.Y` line (expected /proc/driver/nvidia-fs/version)")


def recognise_version(text: str) -> bool:
    lines = [line for line in head_lines(text, 5) if line.strip() and not line.lstrip().startswith("$")]
    return len(lines) == 1 and bool(_VERSION.match(lines[0]))


_MODULE = lazy_compile(r"^\s*(?P<name>[a-z][a-z0-9_]*)\s*:\s*(?P<version>\S*)\s*$")
_FS_MODULE_NAMES = {
    "nvme",
    "nvme_rdma",
    "sfxvdriver",
    "nvmeib_common",
    "lnet",
    "beegfs",
    "mmfslinux",
    "rpcrdma",
    "scatefs",
    "scsi_mod",
    "wekafsio",
}


def parse_modules(text: str, artifact: str) -> Section:
    modules = []
    for number, line in numbered_lines(text):
        match = _MODULE.match(line)
        if match:
            version = match["version"] or None
            modules.append(
                {
                    "name": match["name"],
                    "version": None if version == "(null)" else version,
                    "src": src(artifact, number, line),
                }
            )
    if not modules and text.strip():
        raise ParseError("no `name: version` lines (expected /proc/driver/nvidia-fs/modules)")
    names = [m["name"] for m in modules]
    return {"modules": modules, "names": names, "nvme_registered": "nvme" in names}


def recognise_modules(text: str) -> bool:
    lines = [line for line in head_lines(text, 50) if line.strip() and not line.lstrip().startswith("$")]
    matches = [_MODULE.match(line) for line in lines]
    return bool(lines) and all(matches) and any(m["name"] in _FS_MODULE_NAMES for m in matches if m)


# --- stats -----------------------------------------------------------------------------------

_STATS_HEADERS: dict[str, re.Pattern[str]] = {
    "gds_version": lazy_compile(r"^GDS Version\s*:\s*(\S+)"),
    "stats_version": lazy_compile(r"^NVFS statistics\s*\(ver:\s*([\d.]+)\)"),
    "driver_version": lazy_compile(r"^NVFS Driver\s*\(version:\s*([\d.:]+)\)"),
    "peer_direct": lazy_compile(r"^Mellanox PeerDirect Supported\s*:\s*(\w+)"),
    "logging_level": lazy_compile(r"^Logging level\s*:\s*(\w+)"),
    "active_shadow_buffer": lazy_compile(r"^Active Shadow-Buffer \(MiB\)\s*:\s*(\d+)"),
    "active_processes": lazy_compile(r"^Active Process\s*:\s*(\d+)"),
}
_IO_STATS = lazy_compile(r"^IO stats\s*:\s*(\w+)(?:,\s*peer IO stats\s*:\s*(\w+))?")
_COUNTER = lazy_compile(
    r"^(?P<name>[A-Z](?:[\w -]*[\w-])?)\s*:\s*(?P<pairs>[\w()%/-]+=\S*(?:\s+[\w()%/-]+=\S*)*\s*)$"
)
_PAIR = lazy_compile(r"(?<![\w()%/-])([\w()%/-]+)=(\S*)")
_GPU = lazy_compile(
    r"^GPU\s+(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d)\s+uuid:(?P<uuid>\S+)\s*:\s*(?P<pairs>.*)$"
)


def snake_key(key: str) -> str:
    """'readMiB' -> 'read_bytes' (value scaled by the caller), 'Bandwidth(MiB/s)' -> 'bandwidth_mib_s'."""
    key = (
        key.replace("BandWidth", "Bandwidth")
        .replace("(MiB/s)", "_mib_s")
        .replace("(usec)", "_usec")
        .replace("(%)", "_pct")
    )
    key = re.sub(r"_?MiB$", "_bytes", key)
    key = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key)
    return re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_")


def number(value: str) -> int | float | str:
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    if re.fullmatch(r"^-?\d+\.\d*", value):
        return float(value)
    return value


def parse_pairs(pairs: str) -> dict[str, Any]:
    parsed: dict[str, Any] = {}
    for key, value in _PAIR.findall(pairs):
        name = snake_key(key)
        parsed[name] = number(value)
        if (name == "bytes" or name.endswith("_bytes")) and isinstance(parsed[name], int | float):
            parsed[name] = int(parsed[name] * MIB)
    return parsed


def parse_stats(text: str, artifact: str) -> Section:
    section: dict[str, Any] = {key: None for key in _STATS_HEADERS}
    section.update(io_stats_enabled=None, peer_io_stats_enabled=None, src={})
    counters: dict[str, dict[str, Any]] = {}
    gpus: list[dict[str, Any]] = []
    for number_, raw in numbered_lines(text):
        line = raw.strip()
        if _stats_header(section, line, src(artifact, number_, raw)):
            continue
        if gpu := _GPU.match(line):
            gpus.append(
                {
                    "pci_address": gpu["pci"].lower(),
                    "uuid": gpu["uuid"],
                    **parse_pairs(gpu["pairs"]),
                    "src": src(artifact, number_, raw),
                }
            )
        elif counter := _COUNTER.match(line):
            name = snake_key(counter["name"])
            counters.setdefault(name, {}).update(parse_pairs(counter["pairs"]))
            section["src"].setdefault(name, src(artifact, number_, raw))
    if not counters and section["stats_version"] is None and section["driver_version"] is None:
        raise ParseError("no NVFS statistics lines (expected /proc/driver/nvidia-fs/stats)")
    reads = counters.get("reads")
    section.update(
        counters=counters,
        gpus=gpus,
        rw_stats_enabled=None if reads is None else "n" in reads,
    )
    return section


def _stats_header(section: dict[str, Any], line: str, line_src: dict[str, Any]) -> bool:
    if io := _IO_STATS.match(line):
        section["io_stats_enabled"] = io[1].lower() == "enabled"
        section["peer_io_stats_enabled"] = None if io[2] is None else io[2].lower() == "enabled"
        section["src"]["io_stats_enabled"] = line_src
        return True
    for key, pattern in _STATS_HEADERS.items():
        match = pattern.match(line)
        if not match:
            continue
        value: Any = match[1]
        if key == "peer_direct":
            value = value.lower() == "true"
        elif key == "active_shadow_buffer":
            value = int(value) * MIB
        elif key == "active_processes":
            value = int(value)
        elif key == "driver_version":
            value = value.replace(":", ".")
        section[key] = value
        section["src"][key] = line_src
        return True
    return False


def recognise_stats(text: str) -> bool:
    head = "\n".join(head_lines(text, 100))
    return bool(re.search(r"NVFS statistics\s*\(ver:|NVFS Driver\s*\(version:", head))


# --- /dev/nvidia-fs* and devcount ----------------------------------------------------------------


def read_devices(host_root: Path) -> bytes:
    """{"devices": [...], "devcount": "text"|None, "proc_present": bool} from under host_root; missing
    when there is no /dev at all: that is not a host without devices."""
    if not (host_root / "dev").is_dir():
        raise Unavailable("no /dev under the host root")
    result: dict[str, Any] = {"devices": [], "devcount": None, "proc_present": False}
    try:
        dev = host_root / "dev"
        result["devices"] = sorted(f"/dev/{p.name}" for p in dev.glob("nvidia-fs*") if not p.is_dir())
    except OSError:
        pass
    with contextlib.suppress(OSError):
        result["proc_present"] = (host_root / PROC_DIR.lstrip("/")).is_dir()
    devcount = read_under_root(host_root, f"{PROC_DIR}/devcount", limit=100)
    result["devcount"] = devcount
    return json.dumps(result).encode()


_DEV_PATH = lazy_compile(r"/dev/nvidia-fs\d+\b")


def parse_devices(text: str, artifact: str) -> Section:
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        document = None
    if isinstance(document, dict):
        listed = document.get("devices")
        devices = [d for d in listed if isinstance(d, str)] if isinstance(listed, list) else []
        raw_count = document.get("devcount")
        count_text = raw_count.strip() if isinstance(raw_count, str) else ""
        return {
            "devices": sorted(devices),
            "count": len(devices),
            "devcount": int(count_text) if count_text.isdecimal() else None,
            "proc_present": bool(document.get("proc_present")),
        }
    devices = sorted({m[0] for _, line in numbered_lines(text) for m in _DEV_PATH.finditer(line)})
    if not devices and "No such file" not in text:
        raise ParseError("no /dev/nvidia-fs* paths (expected `ls -l /dev/nvidia-fs*`)")
    return {"devices": devices, "count": len(devices), "devcount": None, "proc_present": None}


def recognise_devices(text: str) -> bool:
    lines = [line for line in head_lines(text, 80) if line.strip() and not line.lstrip().startswith("$")]
    hits = [line for line in lines if _DEV_PATH.search(line)]
    return bool(hits) and len(hits) >= 0.8 * len(lines)


# --- NVIDIA driver flavour -----------------------------------------------------------------------

_NVRM = lazy_compile(
    r"NVRM version:\s*NVIDIA UNIX (?P<open>Open Kernel Module for )?(?P<arch>\w+)?(?:\s+Kernel Module)?\s+"
    r"(?P<version>\d+\.\d+(?:\.\d+)?)"
)


def parse_nvidia_driver(text: str, artifact: str) -> Section:
    section: dict[str, Any] | None = None
    gcc = None
    for number_, line in numbered_lines(text):
        if match := _NVRM.search(line):
            section = {
                "version": match["version"],
                "open": bool(match["open"]),
                "arch": match["arch"],
                "src": src(artifact, number_, line),
            }
        elif line.startswith("GCC version:"):
            gcc = line.split(":", 1)[1].strip() or None
    if section is None:
        raise ParseError("no `NVRM version:` line (expected /proc/driver/nvidia/version)")
    return {**section, "gcc": gcc}


def recognise_nvidia_driver(text: str) -> bool:
    return any("NVRM version:" in line for line in head_lines(text, 20))


_MODINFO = lazy_compile(r"^(?P<key>[a-z_][\w.]*):\s*(?P<value>.*?)\s*$")


def modinfo_parser(module: str) -> Callable[[str, str], Section]:
    """A parser for `modinfo <module>`: the key: value lines (repeated keys keep the first value)."""

    def parse(text: str, artifact: str) -> Section:
        fields: dict[str, str] = {}
        srcs: dict[str, Any] = {}
        for number_, line in numbered_lines(text):
            match = _MODINFO.match(line)
            if match and match["key"] not in fields:
                fields[match["key"]] = match["value"]
                srcs[match["key"]] = src(artifact, number_, line)
        if "filename" not in fields and "vermagic" not in fields:
            raise ParseError(f"no filename/vermagic lines (expected `modinfo {module}`)")
        filename = fields.get("filename")
        license_ = fields.get("license")
        return {
            "fields": fields,
            "filename": filename,
            "version": fields.get("version"),
            "license": license_,
            "vermagic": fields.get("vermagic"),
            "depends": [d for d in (fields.get("depends") or "").split(",") if d],
            "open": (license_ == "Dual MIT/GPL") if module == "nvidia" and license_ else None,
            "out_of_tree": bool(re.search(r"/(updates|extra|dkms)/", filename)) if filename else None,
            "placeholder": _placeholder(fields),
            "src": srcs,
        }

    return parse


def _placeholder(fields: dict[str, str]) -> bool | None:
    """A module that only holds a name's place: MLNX_OFED/DOCA install one (its description
    says "dummy") for each inbox module it replaces without building, so that the inbox one,
    built against the other ib_core, is not loaded in its stead (``nvme-rdma_dummy.o`` when
    the storage transports were not asked for). None when modinfo printed no description."""
    description = fields.get("description")
    return bool(re.search(r"\bdummy\b", description, re.IGNORECASE)) if description is not None else None


def modinfo_recogniser(module: str) -> Callable[[str], bool]:
    ko = re.compile(rf"^filename:\s*\S*/{re.escape(module).replace('_', '[-_]')}\.ko(\.[a-z]+)?\s*$", re.M)
    name = re.compile(rf"^name:\s*{re.escape(module)}\s*$", re.M)

    def recognise(text: str) -> bool:
        head = "\n".join(head_lines(text, 100))
        return bool(ko.search(head) or (name.search(head) and "vermagic:" in head))

    return recognise


# --- DKMS --------------------------------------------------------------------------------------

_DKMS_NEW = lazy_compile(
    r"^(?P<module>[\w.+-]+)/(?P<version>[^,\s]+)(?:,\s*(?P<kernel>[^,\s]+))?(?:,\s*(?P<arch>[^:\s]+))?"
    r":\s*(?P<state>[\w-]+)(?![\w-])(?P<rest>.*)"  # one line: no $ to retry the state against
)
_DKMS_OLD = lazy_compile(
    r"^(?P<module>[\w.+-]+),\s*(?P<version>[^,\s]+)(?:,\s*(?P<kernel>[^,\s]+))?(?:,\s*(?P<arch>[^:\s]+))?"
    r":\s*(?P<state>[\w-]+)(?![\w-])(?P<rest>.*)"  # one line: no $ to retry the state against
)


def parse_dkms_status(text: str, artifact: str) -> Section:
    modules = []
    for number_, line in numbered_lines(text):
        match = _DKMS_NEW.match(line.strip()) or _DKMS_OLD.match(line.strip())
        if not match:
            continue
        warning = re.search(r"\((WARNING!?[^)]*)\)", match["rest"])
        modules.append(
            {
                "module": match["module"],
                "version": match["version"],
                "kernel": match["kernel"],
                "arch": match["arch"],
                "state": match["state"],
                "warning": warning[1] if warning else None,
                "src": src(artifact, number_, line),
            }
        )
    if not modules and text.strip():
        raise ParseError("no `module/version, kernel, arch: state` lines (expected `dkms status`)")
    return {"modules": modules}


def recognise_dkms_status(text: str) -> bool:
    lines = [line.strip() for line in head_lines(text, 100) if line.strip()]
    lines = [line for line in lines if not line.startswith("$")]
    good = [line for line in lines if _DKMS_NEW.match(line) or _DKMS_OLD.match(line)]
    states = {"added", "built", "installed", "installed-weak", "broken"}
    return (
        bool(good)
        and len(good) >= 0.8 * len(lines)
        and all(
            (_DKMS_NEW.match(line) or _DKMS_OLD.match(line))["state"] in states  # type: ignore[index]
            for line in good
        )
    )


# (kind, pattern): first hit names the line. Quotes in gcc messages may be ' or ‘ ’.
BUILD_ERROR_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, lazy_compile(pattern))
    for kind, pattern in (
        ("page_index_removed", r"struct page.{1,3}has no member named .{0,3}index"),
        ("blk_map_iter_incompatible", r"incompatible pointer type .{0,3}struct blk_map_iter"),
        ("modpost_undefined_nvidia_p2p", r'modpost: "nvidia_p2p_\w+" .*undefined'),
        ("gpl_only_symbols", r"GPL-only symbols"),
        ("unknown_symbol_nvidia_p2p", r"Unknown symbol nvidia_p2p_\w+"),
        ("no_symbol_version", r"no symbol version for nvidia_p2p_\w+"),
        ("modpost_undefined", r'modpost: "[^"]+" .*undefined'),
        ("compile_error", r"\berror:"),
        ("make_error", r"make(\[\d+\])?: \*\*\*.*Error \d+"),
    )
)
_DKMS_HEADER = lazy_compile(
    r"DKMS make\.log for (?P<module>[\w-]+?)-(?P<version>\d[\w.]*) for kernel (?P<kernel>\S+)"
)
# A plain (non-DKMS) build names the kernel tree it builds against.
_KERNEL_TREE = lazy_compile(
    r"Entering directory '(?:/usr/src/kernels|/usr/src/linux-headers-|/lib/modules)/?([0-9][^/']*)"
)
_BUILD_LINE = lazy_compile(r"^\s*(make(\[\d+\])?: |CC \[M\]|LD \[M\]|Checking if |MODPOST)", re.M)


def parse_build_log(text: str, artifact: str) -> Section:
    header: dict[str, Any] = {"module": None, "version": None, "kernel": None, "src": None}
    errors = []
    lines = content_lines(text)
    for number_, line in lines:
        if match := _DKMS_HEADER.search(line):
            header = {"module": match["module"], "version": match["version"], "kernel": match["kernel"]}
            header["src"] = src(artifact, number_, line)
            continue
        if header["kernel"] is None and (tree := _KERNEL_TREE.search(line)):
            header["kernel"], header["src"] = tree[1], src(artifact, number_, line)
        kind = next((kind for kind, pattern in BUILD_ERROR_KINDS if pattern.search(line)), None)
        if kind:
            errors.append({"kind": kind, "text": line.strip()[:500], "src": src(artifact, number_, line)})
    if not errors and header["module"] is None and text.strip() and not _looks_like_build(text):
        raise ParseError("no build lines (expected a DKMS make.log or a kernel module build log)")
    return {
        **header,
        "errors": errors,
        "kinds": sorted({e["kind"] for e in errors}),
        "failed": any(e["kind"] not in ("modpost_undefined_nvidia_p2p", "modpost_undefined") for e in errors),
        "truncated": lines.truncated,
    }


def _looks_like_build(text: str) -> bool:
    return bool(_BUILD_LINE.search(text[:20000]))


def recognise_build_log(text: str) -> bool:
    head = "\n".join(head_lines(text, 100))
    if _DKMS_HEADER.search(head):
        return True
    nvfs = re.search(r"nvidia-fs\.ko|nvidia-fs/|nvfs-\w+\.[co]\b", head)
    return bool(nvfs and (_looks_like_build(head) or re.search(r"modpost:|\.[ch]:\d+:\d+: error:", head)))


def read_build_log(host_root: Path) -> bytes:
    """The newest /var/lib/dkms/nvidia-fs/*/build/make.log under host_root, or b"" when none."""
    try:
        base = (host_root / "var/lib/dkms/nvidia-fs").resolve()
        root = host_root.resolve()
        logs = [p for p in base.glob("*/build/make.log") if p.resolve().is_relative_to(root) and p.is_file()]
        newest = max(logs, key=lambda p: p.stat().st_mtime, default=None)
        if newest is None:
            return b""
        with newest.open("rb") as log:  # only what is kept: a sparse 640 MiB log was read whole
            return log.read(4 * 1024 * 1024)
    except (OSError, ValueError, RuntimeError):
        return b""


def _modinfo_probe(module: str, title: str) -> Probe:
    return Probe(
        section=f"modinfo_{module}",
        title=title,
        sources=(Source(f"cmd/modinfo-{module}.txt", argv=("modinfo", module)),),
        parse=modinfo_parser(module),
        recognise=modinfo_recogniser(module),
        paste_hint=f"`modinfo {module}`",
        tags=("gds",),
    )


PROBES: tuple[Probe, ...] = (
    Probe(
        section="nvidia_fs_version",
        title="nvidia-fs driver version",
        sources=(Source("proc/driver/nvidia-fs/version", path=f"{PROC_DIR}/version"),),
        parse=parse_version,
        recognise=recognise_version,
        paste_hint="`cat /proc/driver/nvidia-fs/version`",
        tags=("gds",),
    ),
    Probe(
        section="nvidia_fs_modules",
        title="storage drivers registered with nvidia-fs",
        sources=(Source("proc/driver/nvidia-fs/modules", path=f"{PROC_DIR}/modules"),),
        parse=parse_modules,
        recognise=recognise_modules,
        paste_hint="`cat /proc/driver/nvidia-fs/modules`",
        tags=("gds",),
    ),
    Probe(
        section="nvidia_fs_stats",
        title="nvidia-fs IO statistics",
        sources=(Source("proc/driver/nvidia-fs/stats", path=f"{PROC_DIR}/stats"),),
        parse=parse_stats,
        recognise=recognise_stats,
        paste_hint="`cat /proc/driver/nvidia-fs/stats`",
        tags=("gds",),
    ),
    Probe(
        section="nvidia_fs_devices",
        title="nvidia-fs device nodes (/dev/nvidia-fs*)",
        sources=(Source("dev/nvidia-fs.json", reader=read_devices, how="ls -l /dev/nvidia-fs*"),),
        parse=parse_devices,
        recognise=recognise_devices,
        paste_hint="`ls -l /dev/nvidia-fs*`",
        tags=("gds",),
    ),
    Probe(
        section="nvidia_driver",
        title="NVIDIA kernel driver version and flavour (open / proprietary)",
        sources=(Source("proc/driver/nvidia/version", path="/proc/driver/nvidia/version"),),
        parse=parse_nvidia_driver,
        recognise=recognise_nvidia_driver,
        paste_hint="`cat /proc/driver/nvidia/version`",
        tags=("gds",),
    ),
    _modinfo_probe("nvidia", "NVIDIA kernel module info (license tells open vs proprietary)"),
    _modinfo_probe("nvidia_fs", "nvidia-fs kernel module info"),
    _modinfo_probe("nvme", "nvme kernel module info (inbox vs MLNX_OFED/DOCA build)"),
    _modinfo_probe("nvme_rdma", "nvme_rdma kernel module info (inbox, MLNX_OFED/DOCA build or its dummy)"),
    Probe(
        section="dkms_status",
        title="DKMS module build/install states",
        sources=(Source("cmd/dkms-status.txt", argv=("dkms", "status"), timeout=20.0),),
        parse=parse_dkms_status,
        recognise=recognise_dkms_status,
        paste_hint="`dkms status`",
        tags=("gds",),
    ),
    Probe(
        section="nvidia_fs_build",
        title="nvidia-fs DKMS build log (known kernel-compatibility errors)",
        sources=(
            Source(
                "var/lib/dkms/nvidia-fs/make.log",
                reader=read_build_log,
                how="cat /var/lib/dkms/nvidia-fs/*/build/make.log",
            ),
        ),
        parse=parse_build_log,
        recognise=recognise_build_log,
        paste_hint="`cat /var/lib/dkms/nvidia-fs/*/build/make.log`",
        tags=("gds",),
    ),
)
