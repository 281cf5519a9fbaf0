"""cuFile (libcufile) configuration, environment and log.

Longer than 600 lines: one family (cufile.json, its environment, cufile.log, gds_stats) sharing
the JSON-with-comments reader and the cuFile key names.

Section ``cufile_json`` — the cufile.json in effect, with the documented defaults filled in.
cufile.json allows ``//`` and ``/* */`` comments and trailing commas; they are removed outside
strings only (``"http://x"`` stays). The reader picks ``$CUFILE_ENV_PATH_JSON`` if set, else
``/etc/cufile.json`` (libcufile's rule) and wraps the file as JSON
``{"reader": "cufile_json", "path", "selected_by": "CUFILE_ENV_PATH_JSON"|"default", "exists", "text"}``;
a pasted cufile.json is parsed as is. Keys:

- ``config``: effective flat config, dotted key -> value (``properties.allow_compat_mode``: true);
  ``explicit``: sorted keys the file sets; ``items``: ``[{key, value, default, src}]`` for them
  (src line: where the key is written); ``unknown_keys``: explicit keys with no documented default.
- ``file``: ``{path, selected_by, exists}`` (None values for a paste); ``partial``: the text was not
  valid JSON (a pasted excerpt) and only its ``"key": value`` lines were read.

Section ``cufile_env`` — CUFILE_* / KVIKIO_COMPAT_MODE / LIBCUDF_CUFILE_POLICY variables of the
process (reader: JSON object; a pasted ``env | grep CUFILE`` is read too). Keys: ``vars``
(name -> str), ``items`` ``[{name, value, src}]``, and the meaning: ``allow_compat_mode``,
``force_compat_mode``, ``use_pci_p2pdma`` (bool|None), ``config_path``, ``logfile_path``,
``logging_level`` (str|None).

Section ``cufile_log`` — cufile.log lines such as::

     22-09-2023 11:28:19:425 [pid=1 tid=1] ERROR  cufio-drv:716 nvidia-fs.ko driver not loaded

Keys: ``entries`` ``[{timestamp, pid, tid, level, component, code_line, message, kind, src}]``
(lines with a known kind or level NOTICE/WARN/ERROR, at most 2000), ``counts``
``{lines, by_level, by_kind}`` over all lines, ``kinds`` (sorted), ``pids``, ``volumes`` (parsed
"dumping volume attributes" dicts: ``devname``, ``fs_type``, ``pci_bridge``, ``numa_node``,
``ext4_journal_mode``, ``transport``, ``attributes``, ``src``), ``truncated``.
The kinds are in :data:`LOG_KINDS` (``driver_not_loaded``, ``compat_mode``, ``nvme_not_registered``,
``compat_fallback``, ``map_ioctl_failed``, ``bar_exhausted``, ``no_nic_gpu_pair``, ``gds_path_taken``...).
"""

from __future__ import annotations

import bisect
import json
import os
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, Source, head_lines, numbered_lines, src
from gdsdoctor.probes.gdscheck import MIB, content_lines
from gdsdoctor.probes.host_io import read_under_root, same_kernel
from gdsdoctor.probes.nvidia_fs import parse_pairs, snake_key
from gdsdoctor.probes.text import JSON_STRING

# Documented defaults (gds-matrix §7, shipped cufile.json; execution.* as printed by gdscheck 1.14).
DEFAULTS: dict[str, Any] = {
    "logging.dir": None,  # None = the process's current working directory
    "logging.level": "ERROR",
    "profile.nvtx": False,
    "profile.cufile_stats": 0,
    "execution.max_io_queue_depth": 128,
    "execution.max_io_threads": 4,
    "execution.parallel_io": True,
    "execution.min_io_threshold_size_kb": 8192,
    "execution.max_request_parallelism": 4,
    "properties.max_direct_io_size_kb": 16384,
    "properties.max_device_cache_size_kb": 131072,
    "properties.per_buffer_cache_size_kb": 1024,
    "properties.max_device_pinned_mem_size_kb": 33554432,
    "properties.use_poll_mode": False,
    "properties.poll_mode_max_size_kb": 4,
    "properties.allow_compat_mode": True,
    "properties.force_compat_mode": False,
    "properties.gds_rdma_write_support": True,
    "properties.io_batchsize": 128,
    "properties.max_batch_io_timeout_msecs": 5,
    "properties.io_priority": "default",
    "properties.rdma_dev_addr_list": [],
    "properties.rdma_load_balancing_policy": "RoundRobin",
    "properties.rdma_dynamic_routing": False,
    "properties.rdma_dynamic_routing_order": ["GPU_MEM_NVLINKS", "GPU_MEM", "SYS_MEM", "P2P"],
    "properties.posix_pool_slab_size_kb": [4, 1024, 16384],
    "properties.posix_pool_slab_count": [128, 64, 32],
    "properties.use_pci_p2pdma": False,
    "fs.generic.posix_unaligned_writes": False,
    "fs.lustre.posix_gds_min_kb": 0,
    "fs.beegfs.posix_gds_min_kb": 0,
    "fs.gpfs.gds_write_support": False,
    "fs.weka.rdma_write_support": False,
    "denylist.drivers": [],
    "denylist.devices": [],
    "denylist.mounts": [],
    "denylist.filesystems": [],
    "miscellaneous.api_check_aggressive": False,
}
CONFIG_PATH = "/etc/cufile.json"
_KEEP_AS_VALUE = {"mount_table"}  # per-mount dicts stay one value, not flattened further


# --- cufile.json -----------------------------------------------------------------------------


# One token at a time, in C: a string (to its closing quote, or the end of an unterminated
# one), a comment, a trailing comma (only in the second pass), or a run of anything else: a
# loop over characters in Python was slow on the stock cufile.json, read on every GDS node.
_STRING = r'"(?:[^"\\]|\\.)*(?:"|\\?\Z)'
_COMMENT_TOKENS = lazy_compile(rf"{_STRING}|//[^\n]*|/\*.*?(?:\*/|\Z)|[^\"/]+|.", re.S)
_COMMA_TOKENS = lazy_compile(rf"{_STRING}|(?P<trailing>,)(?=\s*[}}\]])|[^\",]+|.", re.S)


def strip_json_comments(text: str) -> str:
    """Blank out // and /* */ comments and trailing commas outside strings, keeping line numbers."""
    return _COMMA_TOKENS.sub(_blank_comma, _COMMENT_TOKENS.sub(_blank_comment, text))


def _blank_comment(token: re.Match[str]) -> str:
    text = token[0]
    if text.startswith("//"):
        return " " * len(text)
    if text.startswith("/*"):
        return re.sub(r"[^\n]", " ", text)
    return text


def _blank_comma(token: re.Match[str]) -> str:
    return " " if token["trailing"] else token[0]


# cuFile's keys sit at most three objects deep ("fs.generic.posix_unaligned_writes"). Objects
# deeper than this, or under a longer prefix, are kept whole as one value: every key under
# them would repeat the prefix (a 20 KB object name over 20k keys made 0.2 MiB 400 MiB; 800
# nested objects over 50k keys took 35 s), so the keys stay linear in the file's size.
MAX_KEY_DEPTH = 8
MAX_KEY_PREFIX = 128


def _nested_prefix(prefix: str, key: str, depth: int) -> str | None:
    """The prefix of the keys inside object ``key``, or None where they are not flattened."""
    nested = f"{prefix}{key}."
    return nested if depth < MAX_KEY_DEPTH and len(nested) <= MAX_KEY_PREFIX else None


def flatten(
    config: dict[str, Any], prefix: str = "", depth: int = 0, into: dict | None = None
) -> dict[str, Any]:
    """Dotted keys in document order (recursion at most MAX_KEY_DEPTH deep)."""
    flat: dict[str, Any] = {} if into is None else into
    for key, value in config.items():
        nested = _nested_prefix(prefix, key, depth)
        if isinstance(value, dict) and value and key not in _KEEP_AS_VALUE and nested is not None:
            flatten(value, nested, depth + 1, flat)
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def key_line_finder(lines: list[str]) -> Callable[[str], int]:
    """A function: dotted key -> the 1-based line where its last part is written, found by
    walking its parts in order (each part's first ``"part"`` at or after the previous one's
    line; 1 when none is). The string literals of every line are indexed once, so each key
    costs a lookup per part instead of a scan of the text (a scan per key was quadratic)."""
    lines_of: dict[str, list[int]] = {}
    for index, line in enumerate(lines):
        for literal in set(JSON_STRING.findall(line)) if '"' in line else ():
            lines_of.setdefault(literal, []).append(index)

    def key_line(dotted: str) -> int:
        index, found = 0, 0
        for part in dotted.split("."):
            hits = lines_of.get(f'"{part}"', [])
            at = bisect.bisect_left(hits, index)
            if at < len(hits):
                index = hits[at]
                found = index + 1
        return found or 1

    return key_line


def _unwrap(text: str) -> tuple[str | None, dict[str, Any]]:
    """A reader capture is a JSON wrapper around the file text; a paste is the file itself."""
    file_info: dict[str, Any] = {"path": None, "selected_by": None, "exists": None}
    try:
        wrapper = json.loads(text)
    except (ValueError, RecursionError):
        return text, file_info
    if not (isinstance(wrapper, dict) and wrapper.get("reader") == "cufile_json"):
        return text, file_info
    file_info = {key: wrapper.get(key) for key in file_info}
    body = wrapper.get("text")
    return (body if isinstance(body, str) else None), file_info


def parse_cufile_json(text: str, artifact: str) -> Section:
    body, file_info = _unwrap(text)
    explicit: dict[str, Any] = {}
    items: list[dict[str, Any]] = []
    partial = False
    if body is not None:
        explicit, partial = _load_config(body)
        lines = body.split("\n")
        key_line = key_line_finder(lines)
        for key, value in explicit.items():
            number = key_line(key)
            item_src = src(artifact, number, lines[number - 1])
            items.append({"key": key, "value": value, "default": DEFAULTS.get(key), "src": item_src})
    return {
        "config": {**DEFAULTS, **explicit},
        "explicit": sorted(explicit),
        "items": items,
        "unknown_keys": sorted(key for key in explicit if key not in DEFAULTS),
        "file": file_info,
        "partial": partial,
    }


def _load_config(body: str) -> tuple[dict[str, Any], bool]:
    """Flat explicit keys, and whether the file was only partly readable (an excerpt)."""
    stripped = strip_json_comments(body)
    try:
        document = json.loads(stripped)
    except (ValueError, RecursionError) as error:
        lenient = _lenient_keys(stripped)
        if not lenient:
            raise ParseError(f"not cufile.json: {str(error)[:120]}") from None
        return lenient, True
    if not isinstance(document, dict):
        raise ParseError("not cufile.json: the top level is not a JSON object")
    return flatten(document), False


_OBJECT_OPEN = lazy_compile(r'^\s*"(?P<key>[^"]+)"\s*:\s*\{\s*$')
_SCALAR = lazy_compile(r'^\s*"(?P<key>[^"]+)"\s*:\s*(?P<value>[^{\s].*)')  # trimmed in Python: linear


def _lenient_keys(stripped: str) -> dict[str, Any]:
    """Keys of a pasted excerpt (with `:` elisions) read line by line: nesting from `"x": {` / `}`."""
    stack: list[str | None] = []  # the prefix of each open object; None: too deep to name keys
    found: dict[str, Any] = {}
    for line in stripped.split("\n"):
        if opened := _OBJECT_OPEN.match(line):
            outer = stack[-1] if stack else ""
            stack.append(None if outer is None else _nested_prefix(outer, opened["key"], len(stack)))
        elif line.strip().startswith("}") and stack:
            stack.pop()
        elif (scalar := _SCALAR.match(line)) and (outer := stack[-1] if stack else "") is not None:
            try:
                value = json.loads(scalar["value"].rstrip().removesuffix(",").rstrip())
            except (ValueError, RecursionError):
                continue
            found[outer + scalar["key"]] = value
    return found


def read_cufile_json(host_root: Path) -> bytes:
    """The cufile.json libcufile would read, wrapped. ``$CUFILE_ENV_PATH_JSON`` is this process's:
    it picks the file only for this kernel's root, never for another host's (``same_kernel``).
    The file is copied only when it reads as a cufile.json (``_is_cufile``): the variable can
    name any file (``~/.ssh/id_rsa``), and a bundle is shared with support."""
    env_path = os.environ.get("CUFILE_ENV_PATH_JSON") if same_kernel(host_root) else None
    path = env_path or CONFIG_PATH
    wrapper: dict[str, Any] = {
        "reader": "cufile_json",
        "path": path,
        "selected_by": "CUFILE_ENV_PATH_JSON" if env_path else "default",
        "exists": False,
        "text": None,
    }
    body = read_under_root(host_root, path, _MAX_CONFIG, raise_denied=True)
    if body is not None and _is_cufile(body):
        wrapper.update(exists=True, text=body)
    elif body is not None:
        wrapper.update(exists=True, unreadable="not a cufile.json: the file was not copied")
    return json.dumps(wrapper).encode()


_MAX_CONFIG = 1 << 20  # the stock cufile.json is 12 KB


def _is_cufile(body: str) -> bool:
    """Whether ``body`` reads as a cufile.json: a JSON object (comments allowed) naming at least
    one of cuFile's keys, or none at all (``{}``), or an excerpt whose ``"key": value`` lines do."""
    try:
        explicit, _ = _load_config(body)
    except ParseError:
        return False
    return not explicit or any(key in DEFAULTS for key in explicit)


def recognise_cufile_json(text: str) -> bool:
    head = "\n".join(head_lines(text, 100))
    if re.search(r'^ "reader": "', head, re.MULTILINE):
        return False  # a gdsdoctor reader's artifact (the udev one has "properties" objects)
    keys = re.findall(
        r'"(properties|logging|profile|execution|fs|denylist|allow_compat_mode|max_direct_io_size_kb|'
        r'use_pci_p2pdma|rdma_dev_addr_list|max_device_pinned_mem_size_kb)"\s*:',
        head,
    )
    return len(set(keys)) >= 2 or ('"properties"' in head and "{" in head)


# --- environment -----------------------------------------------------------------------------

_ENV_NAME = lazy_compile(r"^(CUFILE_[A-Z0-9_]+|KVIKIO_COMPAT_MODE|LIBCUDF_CUFILE_POLICY)$")
_ENV_LINE = lazy_compile(
    r"^\s*(?:export\s+)?(?P<name>[A-Z][A-Z0-9_]*)=(?P<value>(?:[^;]*[^;\s])?)\s*$"
)  # not `A=1; cmd`


def read_cufile_env(host_root: Path) -> bytes:
    del host_root  # the environment belongs to this process, not to a host tree
    return json.dumps({k: v for k, v in sorted(os.environ.items()) if _ENV_NAME.match(k)}).encode()


def _env_bool(value: str | None) -> bool | None:
    if value is None:
        return None
    lowered = value.strip().strip("'\"").lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    return None


def env_variables(
    text: str, artifact: str, wanted: Callable[[str], bool]
) -> tuple[list[dict[str, Any]], bool]:
    """The ``wanted`` variables of an environment, ``[{name, value, src}]``, and whether the text
    was the captured JSON object (else ``NAME=value`` lines of a pasted ``env | grep …``, quotes
    and ``export`` taken off). Shared by the readers of this process's environment."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        document = None
    items: list[dict[str, Any]] = []
    if isinstance(document, dict):
        lines = text.split("\n")
        key_line = key_line_finder(lines)
        for name, value in document.items():
            if isinstance(name, str) and wanted(name):
                number = key_line(name)
                items.append(
                    {"name": name, "value": str(value), "src": src(artifact, number, lines[number - 1])}
                )
        return items, True
    for number, line in numbered_lines(text):
        if (match := env_line(line, wanted)) is not None:
            value = match["value"].strip("'\"")
            items.append({"name": match["name"], "value": value, "src": src(artifact, number, line)})
    return items, False


def env_line(line: str, wanted: Callable[[str], bool]) -> re.Match[str] | None:
    """``NAME=value`` (or ``export NAME=value``) of a wanted variable, else None."""
    match = _ENV_LINE.match(line)
    return match if match and wanted(match["name"]) else None


def parse_cufile_env(text: str, artifact: str) -> Section:
    items, captured = env_variables(text, artifact, _ENV_NAME.match)
    if not items and not captured and text.strip():
        raise ParseError("no CUFILE_* variables (expected `env | grep CUFILE` lines NAME=value)")
    values = {item["name"]: item["value"] for item in items}
    return {
        "vars": values,
        "items": items,
        "allow_compat_mode": _env_bool(values.get("CUFILE_ALLOW_COMPAT_MODE")),
        "force_compat_mode": _env_bool(values.get("CUFILE_FORCE_COMPAT_MODE")),
        "use_pci_p2pdma": _env_bool(values.get("CUFILE_USE_PCIP2PDMA")),
        "config_path": values.get("CUFILE_ENV_PATH_JSON"),
        "logfile_path": values.get("CUFILE_LOGFILE_PATH"),
        "logging_level": values.get("CUFILE_LOGGING_LEVEL"),
    }


def recognise_cufile_env(text: str) -> bool:
    lines = [line for line in head_lines(text, 100) if line.strip()]
    good = [line for line in lines if env_line(line, _ENV_NAME.match)]
    return bool(good) and len(good) >= 0.5 * len(lines)


# --- cufile.log ------------------------------------------------------------------------------

_LOG_LINE = lazy_compile(
    r"^\s*(?:(?P<date>\d{2}-\d{2}-\d{4}) (?P<time>\d{2}:\d{2}:\d{2}:\d{1,3})\s+)?"
    r"(?:\[pid=(?P<pid>\d+) tid=(?P<tid>\d+)\]\s+)?"
    r"(?:(?P<level>NOTICE|ERROR|WARN|WARNING|INFO|DEBUG|TRACE)\s+)?"
    r"(?P<component>cufio[\w-]*|[\w-]+):(?P<code_line>\d*)(?:\s+(?P<message>.*))?$"
)
# (kind, pattern) in match order: the first hit names the line (gds-matrix §4 catalogue).
LOG_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, lazy_compile(pattern, re.I))
    for kind, pattern in (
        ("driver_not_loaded", r"nvidia-fs\.ko driver not loaded"),
        # libcufile reads the module's /proc files first; "failed to open /proc/driver/nvidia-fs/
        # devcount" (WARN, TRACE logs) is the module missing, said before any other line
        ("nvfs_proc_unreadable", r"(?:failed to open|error opening|cannot open) /proc/driver/nvidia-fs/"),
        ("compat_mode", r"running in compatible mode"),
        ("nvme_not_registered", r"NVMe Driver not registered with nvidia-fs"),
        ("volume_attributes", r"dumping volume attributes"),
        ("compat_fallback", r"GDS not supported or disabled by config, using cuFile posix"),
        ("file_checks_failed", r"file checks failed"),
        ("gds_not_supported_on_file", r"GPUDirect Storage not supported on current file"),
        ("udev_device_error", r"error creating udev_device for block device"),
        ("udev_property_missing", r"udev property not found"),
        ("volume_attributes_error", r"error getting volume attributes|unable to get volume attributes"),
        ("file_object_alloc_failed", r"failed to allocate file object"),
        ("internal_error", r"cuFileHandleRegister error: internal error"),
        ("unsupported_block_device", r"Unsupported block device"),
        ("mount_options_missing", r"mount options not specified for device"),
        ("map_ioctl_failed", r"MAP ioctl failed|\bmap failed\b"),
        ("nvfs_handle_alloc_failed", r"error allocating nvfs handle"),
        ("buf_register_failed", r"cuFileBufRegister error"),
        ("buf_deregister_failed", r"cuFileBufDeregister error|device pointer lookup failure"),
        ("bar_exhausted", r"Inc-bar-usage failed"),
        ("peermem_not_loaded", r"nvidia_peermem\.ko is not loaded"),
        ("no_nic_gpu_pair", r"No matching pair for network device"),
        ("cuda_init_failed", r"cuInit Failed"),
        ("cufile_init_failed", r"cuFile initialization failed"),
        ("p2pdma_disabled_by_config", r"Config doesn't support PCIP2PDMA"),
        ("p2pdma_not_supported", r"pci_p2pdma not supported|Failed to get cuda p2p device address"),
        ("gds_path_taken", r"gds path taken with ODIRECT"),
        ("nvfs_io_submit", r"\bnvfs_io_submit\b"),
        ("udev_assertion", r"Assertion failure, file index :cufio-udev"),
        ("log_disabled", r"error opening log file"),
        ("library_loaded", r"Loaded successfully"),
    )
)
_KEEP_LEVELS = {"NOTICE", "ERROR", "WARN", "WARNING"}
MAX_LOG_ENTRIES = 2000


def classify_log_message(message: str) -> str | None:
    for kind, pattern in LOG_KINDS:
        if pattern.search(message):
            return kind
    return None


def _is_log_line(match: re.Match[str] | None) -> bool:
    """A cufile.log line: timestamp, pid or level present, or at least a cufio component."""
    if not match:
        return False
    return bool(match["date"] or match["pid"] or match["level"] or match["component"].startswith("cufio"))


def _timestamp(date: str | None, time: str | None) -> str | None:
    if not date or not time:
        return None
    day, month, year = date.split("-")
    hms, _, millis = time.rpartition(":")
    return f"{year}-{month}-{day}T{hms}.{millis.zfill(3)}"


def volume_attributes(message: str) -> dict[str, Any]:
    """'DEVNAME:/dev/nvme1n1,ID_FS_TYPE:ext4,...,numa_node:1,' -> named fields + all attributes."""
    _, _, listing = message.partition("dumping volume attributes:")
    attributes: dict[str, str] = {}
    for part in listing.split(","):
        key, sep, value = part.strip().partition(":")
        if sep and key:
            attributes[key] = value
    numa = attributes.get("numa_node", "")
    return {
        "devname": attributes.get("DEVNAME"),
        "fs_type": attributes.get("ID_FS_TYPE"),
        "pci_bridge": attributes.get("UDEV_PCI_BRIDGE"),
        "transport": attributes.get("device/transport"),
        "ext4_journal_mode": attributes.get("ext4_journal_mode"),
        "numa_node": int(numa) if re.fullmatch(r"-?\d+", numa) else None,
        "attributes": attributes,
    }


def parse_cufile_log(text: str, artifact: str) -> Section:
    entries: list[dict[str, Any]] = []
    volumes: list[dict[str, Any]] = []
    by_level: Counter[str] = Counter()
    by_kind: Counter[str] = Counter()
    pids: set[int] = set()
    lines = content_lines(text)
    total = not_kept = 0
    for number, line in lines:
        match = _LOG_LINE.match(line)
        log_line = _is_log_line(match)
        message = ((match["message"] or "") if match and log_line else line).strip()
        kind = classify_log_message(message)
        if not log_line and kind is None:
            continue
        total += 1
        level = match["level"] if match and log_line else None
        by_level[level or "NONE"] += 1
        if kind:
            by_kind[kind] += 1
        if match and match["pid"] and log_line:
            pids.add(int(match["pid"]))
        # counted above; the first MAX_LOG_ENTRIES of each list are kept whole (a 64 MiB log of
        # one message must not become a record per line)
        item_src = src(artifact, number, line)
        if kind == "volume_attributes":
            if len(volumes) < MAX_LOG_ENTRIES:
                volumes.append({**volume_attributes(message), "src": item_src})
            else:
                not_kept += 1
        if kind or level in _KEEP_LEVELS:
            if len(entries) < MAX_LOG_ENTRIES:
                entries.append(_entry(match if log_line else None, message, kind, item_src))
            else:
                not_kept += 1
    if not total and text.strip():
        raise ParseError("no cufile.log lines (expected `DD-MM-YYYY HH:MM:SS:ms [pid=N tid=N] LEVEL ...`)")
    section: Section = {
        "entries": entries,
        "counts": {"lines": total, "by_level": dict(by_level), "by_kind": dict(by_kind)},
        "kinds": sorted(by_kind),
        "pids": sorted(pids),
        "volumes": volumes,
        "truncated": lines.truncated,
    }
    if not_kept:
        section["input_cut"] = (
            f"{not_kept} cufile.log entries or volume records not kept after the first {MAX_LOG_ENTRIES} "
            "of each (the counts include them)"
        )
    return section


def _entry(
    match: re.Match[str] | None, message: str, kind: str | None, item_src: dict[str, Any]
) -> dict[str, Any]:
    def group(name: str) -> str | None:
        return match[name] if match else None

    pid, tid, code_line = group("pid"), group("tid"), group("code_line")
    return {
        "timestamp": _timestamp(group("date"), group("time")),
        "pid": int(pid) if pid else None,
        "tid": int(tid) if tid else None,
        "level": group("level"),
        "component": group("component"),
        "code_line": int(code_line) if code_line else None,
        "message": message,
        "kind": kind,
        "src": item_src,
    }


def recognise_cufile_log(text: str) -> bool:
    for line in head_lines(text, 100):
        match = _LOG_LINE.match(line)
        if match and (match["pid"] or (match["component"].startswith("cufio") and match["message"])):
            return True
        if line.lstrip().startswith("Assertion failure, file index :cufio-"):
            return True
    return False


def read_cufile_log(host_root: Path) -> bytes:
    """$CUFILE_LOGFILE_PATH, else ./cufile.log (libcufile's default is the process's cwd); b"" if absent."""
    path = os.environ.get("CUFILE_LOGFILE_PATH") or str(Path.cwd() / "cufile.log")
    body = read_under_root(host_root, path, raise_denied=True)
    return (body or "").encode()


# --- gds_stats (cuFile per-process statistics) -------------------------------------------------

_STATS_VERSION = lazy_compile(r"^cuFile STATS VERSION\s*:\s*(\d+)")
_GLOBAL = lazy_compile(
    r"^(?P<key>(?:Total|Read|Write|Avg)(?:[\w ]*\w)?)\s*(?!\s)(?:\((?P<unit>[^)]*)\))?\s*:"
    r"\s*(?P<value>-?\d+(?:\.\d+)?)\s*$"
)
_HISTOGRAM = lazy_compile(r"^(?P<low>\d+)-(?P<high>\d+|\.\.\.)\(KiB\)\s*:\s*(?P<reads>\d+)\s+(?P<writes>\d+)")
_PER_GPU = lazy_compile(r"^GPU (?P<index>\d+) (?=Read:)(?P<rest>.*)$")
_POOL = lazy_compile(
    r"^GPU\s*:\s*(?P<index>\d+) pool_size_MiB\s*:\s*(?P<size>\d+) usage\s*:\s*(?P<usage>\S+)"
)
_UNIT_SUFFIX = {"MiB": "", "GiB/s": "_gibps", "us": "_usec"}


def _gpu_segments(rest: str) -> dict[str, dict[str, Any]]:
    """'Read: bw=.. n=.. Write: ... BufRegister: ...' -> {read: {...}, write: {...}, buf_register: {...}}."""
    parts = re.split(r"\b(Read|Write|BufRegister):", rest)
    segments: dict[str, dict[str, Any]] = {}
    for name, pairs in zip(parts[1::2], parts[2::2], strict=False):
        values = parse_pairs(pairs)
        if "bw" in values:
            values["bw_gibps"] = values.pop("bw")
        if "bytes" in values:  # bare "MiB=" counts
            values["size_bytes"] = values.pop("bytes")
        segments[snake_key(name)] = values
    return segments


def parse_gds_stats(text: str, artifact: str) -> Section:
    dumps: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for number, line in numbered_lines(text):
        stripped = line.strip()
        if version := _STATS_VERSION.match(stripped):
            current = {
                "stats_version": int(version[1]),
                "global": {},
                "histogram": [],
                "gpus": [],
                "pools": [],
            }
            current["src"] = src(artifact, number, line)
            dumps.append(current)
        elif current is not None:
            _gds_stats_line(current, stripped, src(artifact, number, line))
    if not dumps:
        raise ParseError("no `cuFile STATS VERSION` line (expected `gds_stats -p PID -l N` output)")
    return {"dumps": dumps, "last": dumps[-1]}


def _gds_stats_line(dump: dict[str, Any], line: str, line_src: dict[str, Any]) -> None:
    if gpu := _PER_GPU.match(line):
        dump["gpus"].append({"index": int(gpu["index"]), **_gpu_segments(gpu["rest"]), "src": line_src})
    elif pool := _POOL.match(line):
        used, _, total = pool["usage"].partition("/")
        dump["pools"].append(
            {
                "index": int(pool["index"]),
                "pool_size": int(pool["size"]) * MIB,
                "buffers_used": int(used) if used.isdecimal() else None,
                "buffers_total": int(total) if total.isdecimal() else None,
                "src": line_src,
            }
        )
    elif bucket := _HISTOGRAM.match(line):
        high = None if bucket["high"] == "..." else int(bucket["high"]) * 1024
        dump["histogram"].append(
            {
                "low": int(bucket["low"]) * 1024,
                "high": high,
                "reads": int(bucket["reads"]),
                "writes": int(bucket["writes"]),
                "src": line_src,
            }
        )
    elif total := _GLOBAL.match(line):
        value = total["value"]
        number_value: float | int = float(value) if "." in value else int(value)
        unit = total["unit"] or ""
        key = snake_key(total["key"]) + _UNIT_SUFFIX.get(unit, "")
        if unit == "MiB":
            key, number_value = key.removesuffix("_size") + "_bytes", int(number_value * MIB)
        dump["global"][key] = number_value


def recognise_gds_stats(text: str) -> bool:
    return any(_STATS_VERSION.match(line.strip()) for line in head_lines(text, 100))


PROBES: tuple[Probe, ...] = (
    Probe(
        section="cufile_json",
        title="cuFile configuration in effect (cufile.json with defaults)",
        sources=(
            Source(
                "etc/cufile.json.capture",
                reader=read_cufile_json,
                how="cat ${CUFILE_ENV_PATH_JSON:-/etc/cufile.json}",
            ),
        ),
        parse=parse_cufile_json,
        recognise=recognise_cufile_json,
        paste_hint="`cat ${CUFILE_ENV_PATH_JSON:-/etc/cufile.json}`",
        tags=("gds",),
    ),
    Probe(
        section="cufile_env",
        title="CUFILE_* environment overrides",
        sources=(
            Source(
                "env/cufile.json",
                reader=read_cufile_env,
                how="env | grep -E 'CUFILE|KVIKIO_COMPAT_MODE'",
                this_process=True,
            ),
        ),
        parse=parse_cufile_env,
        recognise=recognise_cufile_env,
        paste_hint="`env | grep -E 'CUFILE|KVIKIO_COMPAT_MODE|LIBCUDF_CUFILE_POLICY'`",
        tags=("gds",),
    ),
    Probe(
        section="cufile_log",
        title="cuFile log (cufile.log): errors, compat-mode fallbacks, path taken",
        sources=(Source("logs/cufile.log", reader=read_cufile_log),),
        parse=parse_cufile_log,
        recognise=recognise_cufile_log,
        paste_hint="the application's `cufile.log` (run with CUFILE_LOGGING_LEVEL=INFO)",
        tags=("gds",),
    ),
    Probe(
        section="gds_stats",
        title="cuFile per-process IO statistics (gds_stats)",
        sources=(),  # needs the PID of a running cuFile application: paste only
        parse=parse_gds_stats,
        recognise=recognise_gds_stats,
        paste_hint="`gds_stats -p <PID of the cuFile application> -l 3`",
        tags=("gds",),
    ),
)
