"""Kernel and system identity: small sections, one probe each.

Longer than 600 lines: eight small sections, one probe each, too small for a module apiece.

``kernel`` (``/proc/version`` or ``uname -a``; also a bare ``uname -r``)::

    Linux version 6.8.0-1040-nvidia (buildd@lcy02-amd64-070) (x86_64-linux-gnu-gcc-13 ...) #43-Ubuntu SMP ...
    -> {release, version_tuple: [6, 8, 0], build, machine, hostname, is_wsl, src}

``os_release`` (``/etc/os-release``; a pasted ``lsb_release -a`` also parses)::

    PRETTY_NAME="Ubuntu 22.04.4 LTS"
    -> {id, id_like: [str], version_id, version_codename, name, pretty_name, fields: {KEY: value},
        format, src}

``cmdline`` (``/proc/cmdline``)::

    BOOT_IMAGE=/boot/vmlinuz-5.19.0-38-generic root=UUID=... ro amd_iommu=on
    -> {raw, boot_image, params: {key: value | true}, param_list: [{key, value, src}], iommu: {...},
        nvme_core: {...}}

``kallsyms`` (a reader scanning ``/proc/kallsyms`` in chunks, keeping only symbols of interest;
a pasted ``grep ... /proc/kallsyms`` also parses)::

    ffffffffc0a1a000 T nvidia_p2p_get_pages	[nvidia]
    -> {readable, complete, lines_scanned, addresses_hidden, symbols: [{name, present, module, src}],
        present: [str], has_p2pdma, has_nvfs_dma_ops (nvme's hook: PCIe), has_nvme_rdma_nvfs_dma_ops
        (nvme_rdma's: fabrics), has_nvidia_p2p, note}

``ofed`` (``ofed_info -s``)::

    MLNX_OFED_LINUX-5.8-1.0.1.1:
    -> {flavour, version, major, minor, release ("5.8", "23.04": the release notes' spelling), is_doca, src}

``virt`` (``systemd-detect-virt``)::

    kvm
    -> {virt, is_virtual, is_container, src}

``etc_default_grub`` (``/etc/default/grub``)::

    GRUB_CMDLINE_LINUX_DEFAULT="amd_iommu=off iommu=pt"
    -> {variables: {NAME: value}, params, param_list, iommu, nvme_core, src}   # from both GRUB_CMDLINE_LINUX*

``iommu`` keys: intel_iommu, amd_iommu, iommu, iommu_passthrough, iommu_strict, pci (list of pci=
sub-options), disable_acs_redir, config_acs, pcie_acs_override. ``nvme_core`` keys: multipath,
io_timeout, admin_timeout, default_ps_max_latency_us. Values are strings as written, None when absent.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import re
import shlex
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from gdsdoctor.capture.runner import streamed_output
from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, Source, numbered_lines, src
from gdsdoctor.probes.host_io import open_regular, resolve_in_root


def _content_lines(text: str, at_most: int | None = None) -> list[tuple[int, str]]:
    """The first ``at_most`` (all when None) numbered non-empty lines, without a leading
    ``$ command`` line a user pasted. Parsers that read every line use ``_each_content_line``."""
    return list(itertools.islice(_each_content_line(text), at_most))


def _each_content_line(text: str) -> Iterator[tuple[int, str]]:
    """``_content_lines`` one at a time: a text of millions of lines is never held as a list."""
    lines = ((n, line.rstrip()) for n, line in numbered_lines(text) if line.strip())
    first = next(lines, None)
    if first is None:
        return
    if re.match(r"^\s*\S*[$#] ", first[1]):
        output = _strip_command_prefix(first[1])  # "$ cat /proc/cmdline BOOT_IMAGE=..." keeps its output
        if output.strip() and output != first[1]:
            yield first[0], output
    else:
        yield first
    yield from lines


def _strip_command_prefix(line: str) -> str:
    """``$ cat /proc/cmdline BOOT_IMAGE=...`` (prompt and output pasted on one line) -> the output."""
    m = re.match(r"^\s*\S*[$#] (?:sudo )?cat \S+ ?", line)
    return line[m.end() :] if m else line


# ---------------------------------------------------------------------------------------------
# kernel
# ---------------------------------------------------------------------------------------------

_PROC_VERSION = lazy_compile(r"^Linux version (?P<release>\S+)(?: (?:[^#\n]|#(?!\S))*(?P<build>#\S.*))?$")
_UNAME_A = lazy_compile(r"^Linux (?P<host>\S+) (?P<release>\d+\.\d\S*) (?P<build>#.*)$")
_UNAME_R = lazy_compile(r"^\d+\.\d[\w.+~^-]*$")
_MACHINES = ("x86_64", "aarch64", "ppc64le", "s390x", "riscv64", "armv7l", "i686")


def _without_uname_tail(build: str) -> str:
    """``#1 SMP … x86_64 x86_64 x86_64 GNU/Linux`` without its machine words and ``GNU/Linux``
    (a loop: the pattern ``(?: machine)* GNU/Linux$`` is retried from every word)."""
    if not build.endswith(" GNU/Linux"):
        return build
    head = build.removesuffix(" GNU/Linux")
    while (cut := head.rpartition(" "))[1] and cut[2] in (*_MACHINES, "unknown"):
        head = cut[0]
    return head


def _version_tuple(release: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", release.split("-")[0])[:3]]


def parse_kernel(text: str, artifact: str) -> Section:
    for number, line in _each_content_line(text):
        line = line.strip()
        machine = hostname = None
        if m := _PROC_VERSION.match(line):
            release, build = m["release"], m["build"]
        elif m := _UNAME_A.match(line):
            release, build, hostname = m["release"], _without_uname_tail(m["build"]), m["host"]
            machine = next((w for w in reversed(line.split()) if w in _MACHINES), None)
        elif _UNAME_R.match(line):
            release, build = line, None
        else:
            continue
        return {
            "release": release,
            "version_tuple": _version_tuple(release),
            "build": build.strip() if build else None,
            "machine": machine,
            "hostname": hostname,
            "is_wsl": bool(re.search(r"microsoft|wsl", release, re.IGNORECASE)),
            "src": src(artifact, number, line),
        }
    raise ParseError("no kernel version line (expected /proc/version, `uname -a` or `uname -r`)")


def recognise_kernel(text: str) -> bool:
    lines = _content_lines(text[:20_000])
    if not lines or len(lines) > 3:
        return False
    first = lines[0][1].strip()
    return bool(
        _PROC_VERSION.match(first) or _UNAME_A.match(first) or (len(lines) == 1 and _UNAME_R.match(first))
    )


# ---------------------------------------------------------------------------------------------
# os_release (also lsb_release -a)
# ---------------------------------------------------------------------------------------------

_OS_LINE = lazy_compile(r"^(?P<key>[A-Z][A-Z0-9_]*)=(?P<value>.*)$")
_ASSIGNMENT = lazy_compile(r'(?<![A-Z0-9_:%-])[A-Z][A-Z0-9_:%-]*="')  # one KEY="v" of a line
_LSB_LINE = lazy_compile(r"^(?P<key>Distributor ID|Description|Release|Codename):\s*(?P<value>.*)$")
_LSB_KEYS = {
    "Distributor ID": "ID",
    "Description": "PRETTY_NAME",
    "Release": "VERSION_ID",
    "Codename": "CODENAME",
}


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    return re.sub(r"\\(.)", r"\1", value)


def parse_os_release(text: str, artifact: str) -> Section:
    fields: dict[str, str] = {}
    lines: dict[str, tuple[int, str]] = {}
    form = "os-release"
    for number, line in _each_content_line(text):
        if m := _OS_LINE.match(line.strip()):
            key, value = m["key"], _unquote(m["value"])
        elif m := _LSB_LINE.match(line.strip()):
            key, value, form = _LSB_KEYS[m["key"]], m["value"].strip(), "lsb_release"
            value = value.lower() if key == "ID" else value
        else:
            continue
        fields[key] = value
        lines[key] = (number, line)
    if not ({"ID", "NAME", "PRETTY_NAME"} & fields.keys()):
        raise ParseError("no ID/NAME/PRETTY_NAME line (expected /etc/os-release)")
    number, line = lines.get("PRETTY_NAME") or lines.get("ID") or lines["NAME"]
    return {
        "id": fields.get("ID"),
        "id_like": fields["ID_LIKE"].split() if fields.get("ID_LIKE") else [],
        "version_id": fields.get("VERSION_ID"),
        "version_codename": fields.get("VERSION_CODENAME") or fields.get("CODENAME"),
        "name": fields.get("NAME"),
        "pretty_name": fields.get("PRETTY_NAME"),
        "fields": fields,
        "format": form,
        "src": src(artifact, number, line),
    }


def recognise_os_release(text: str) -> bool:
    """Two of the standard keys, and most lines one ``KEY=value`` assignment each (vendors add many
    keys: ANSI_COLOR, CPE_NAME, REDHAT_*); a line of several ``KEY="v"`` pairs is ``lsblk -P``'s."""
    lines = [line.strip() for _, line in _content_lines(text[:20_000], 60)]
    single = [x for x in lines if _OS_LINE.match(x) and len(_ASSIGNMENT.findall(x)) <= 1]
    os_keys = sum(
        bool(re.match(r"^(NAME|ID|ID_LIKE|VERSION_ID|PRETTY_NAME|VERSION|HOME_URL)=", x)) for x in single
    )
    lsb_keys = sum(bool(_LSB_LINE.match(x)) for x in lines)
    return (os_keys >= 2 and len(single) * 2 >= len(lines)) or lsb_keys >= 2


# ---------------------------------------------------------------------------------------------
# cmdline (shared with etc_default_grub)
# ---------------------------------------------------------------------------------------------

_IOMMU_KEYS = {
    "intel_iommu": "intel_iommu",
    "amd_iommu": "amd_iommu",
    "iommu": "iommu",
    "iommu.passthrough": "iommu_passthrough",
    "iommu.strict": "iommu_strict",
    "pcie_acs_override": "pcie_acs_override",
}
_NVME_KEYS = ("multipath", "io_timeout", "admin_timeout", "default_ps_max_latency_us")


def split_params(line: str) -> list[tuple[str, str | bool]]:
    """Kernel parameters in order: ``key=value`` -> (key, value), a bare flag -> (key, True)."""
    try:
        tokens = shlex.split(line)
    except ValueError:  # unbalanced quote: fall back to whitespace
        tokens = line.split()
    params: list[tuple[str, str | bool]] = []
    for token in tokens:
        if token == "--":  # the kernel hands everything after a bare "--" to init
            break
        key, sep, value = token.partition("=")
        if key:
            params.append((key, value if sep else True))
    return params


def cmdline_facts(params: list[tuple[str, str | bool]], artifact: str, number: int, line: str) -> Section:
    """params / param_list / iommu / nvme_core for one parameter list (the last repeat wins)."""
    by_key: dict[str, str | bool] = {}
    pci: list[str] = []
    for key, value in params:
        by_key[key] = value
        if key == "pci" and isinstance(value, str):
            pci.extend(option for option in value.split(",") if option)
    iommu: dict[str, Any] = {name: _as_text(by_key.get(key)) for key, name in _IOMMU_KEYS.items()}
    iommu["pci"] = pci
    for name in ("disable_acs_redir", "config_acs"):
        iommu[name] = next((o.partition("=")[2] for o in reversed(pci) if o.startswith(name + "=")), None)
    nvme_core = {name: _as_text(by_key.get(f"nvme_core.{name}")) for name in _NVME_KEYS}
    record = src(artifact, number, line)
    return {
        "params": by_key,
        "param_list": [{"key": k, "value": v, "src": record} for k, v in params],
        "iommu": iommu,
        "nvme_core": nvme_core,
    }


def _as_text(value: str | bool | None) -> str | None:
    if value is None:
        return None
    return "" if value is True else str(value)


def parse_cmdline(text: str, artifact: str) -> Section:
    lines = _content_lines(text, 2)  # one line of parameters; a second says it is not that
    if not lines:
        raise ParseError("empty /proc/cmdline")
    number, line = lines[0]
    line = _strip_command_prefix(line).strip()
    params = split_params(line)
    if not params or len(lines) > 1 or not _looks_like_params(params):
        raise ParseError("not a kernel command line (expected one line of parameters, /proc/cmdline)")
    image = params[0][1] if params[0][0] == "BOOT_IMAGE" else None
    return {"raw": line, "boot_image": image, **cmdline_facts(params, artifact, number, lines[0][1])}


def _looks_like_params(params: list[tuple[str, str | bool]]) -> bool:
    return all(re.fullmatch(r"[\w.\-/]+", key) for key, _ in params)


def recognise_cmdline(text: str) -> bool:
    lines = _content_lines(text[:20_000])
    if len(lines) != 1:
        return False
    params = split_params(_strip_command_prefix(lines[0][1]))
    keys = {key for key, _ in params}
    return _looks_like_params(params) and bool(keys & {"BOOT_IMAGE", "root", "ro", "rw", "initrd"})


# ---------------------------------------------------------------------------------------------
# kallsyms
# ---------------------------------------------------------------------------------------------

KALLSYMS_OF_INTEREST = (
    "p2pdma_pgmap_ops",
    "nvme_v1_register_nvfs_dma_ops",
    "nvme_v2_register_nvfs_dma_ops",
    "nvme_rdma_v1_register_nvfs_dma_ops",
    "nvidia_p2p_get_pages",
    "blk_rq_dma_map_iter_start",
)
_KALLSYMS_PREFIXES = ("pci_p2pdma_",)
_NVME_PCIE_HOOKS = ("nvme_v1_register_nvfs_dma_ops", "nvme_v2_register_nvfs_dma_ops")
_NVME_RDMA_HOOK = "nvme_rdma_v1_register_nvfs_dma_ops"
# What the table is searched for: every symbol of interest contains one of these (a test checks),
# and each search is a pass over 5 MB, so names that share a part are found by that part.
_KALLSYMS_ANCHORS = ("p2pdma_", "_register_nvfs_dma_ops", "nvidia_p2p_get_pages", "blk_rq_dma_map_iter_start")
_KALLSYMS_LINE = lazy_compile(
    r"^(?P<addr>[0-9a-fA-F]{8,16}) (?P<type>[a-zA-Z?]) (?P<name>\S+)(?:\s+\[(?P<module>[^\]]+)\])?"
)
# The table has 100k+ lines: a Python loop over them was the longest probe of a check.
# Whole chunks go through C instead: patterns led by a literal newline (which the regex engine
# scans for quickly) count table lines and find a non-zero address, and str.find picks out the
# few lines naming a symbol of interest.
_KALLSYMS_TABLE_LINE = lazy_compile(r"\n(?=[0-9a-fA-F]{8,16} [a-zA-Z?] \S)")
_KALLSYMS_NONZERO = lazy_compile(r"\n(?=[0-9a-fA-F]{8,16} [a-zA-Z?] \S)0*[1-9a-fA-F]")
_KALLSYMS_CHUNK = 1 << 16
# A paste with fewer lines in the table's format is an excerpt (a grep), which cannot prove a
# symbol absent; a whole table has 100k+.
COMPLETE_TABLE_LINES = 10_000
_SCAN_MARK = "gdsdoctor-kallsyms-scan"


def scan_kallsyms(chunks: Iterable[str], table_only: bool = True) -> dict[str, Any]:
    """Keep only symbols of interest from a kallsyms text given in chunks that end at line
    boundaries (never the whole table in memory at once).

    ``lines_scanned``: the lines read. ``table_only`` (a paste, which may hold anything else):
    also ``table_lines``, those in the table's format, counted only as far as
    COMPLETE_TABLE_LINES: that count decides whether the paste is a whole table and nothing past
    it, and matching each of a sos report's 122,000 lines was 15 of its 27 ms
    (docs/performance.md). The live reader reads the kernel's own table, one symbol a line."""
    found: dict[str, dict[str, Any]] = {}
    scanned = table_lines = 0
    table = nonzero = False  # a line in the table's format seen; one with a non-zero address
    for chunk in chunks:
        text = "\n" + chunk  # the patterns find a line by the newline before it
        if chunk:
            scanned += chunk.count("\n") + (not chunk.endswith("\n"))
        if table_only and table_lines < COMPLETE_TABLE_LINES:
            wanted = COMPLETE_TABLE_LINES - table_lines
            table_lines += sum(1 for _ in itertools.islice(_KALLSYMS_TABLE_LINE.finditer(text), wanted))
        table = table or _KALLSYMS_TABLE_LINE.search(text) is not None
        nonzero = nonzero or _KALLSYMS_NONZERO.search(text) is not None
        for line in _lines_containing(text, _KALLSYMS_ANCHORS):
            m = _KALLSYMS_LINE.match(line)
            if m and (m["name"] in KALLSYMS_OF_INTEREST or m["name"].startswith(_KALLSYMS_PREFIXES)):
                found.setdefault(m["name"], {"name": m["name"], "module": m["module"], "type": m["type"]})
    return {
        "format": _SCAN_MARK,
        "readable": True,
        "lines_scanned": scanned,
        "addresses_hidden": (not nonzero) if table else None,
        "found": sorted(found.values(), key=lambda s: s["name"]),
        **({"table_lines": table_lines} if table_only else {}),
    }


def _lines_containing(text: str, needles: Iterable[str]) -> Iterator[str]:
    for needle in needles:
        at = text.find(needle)
        while at != -1:
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            end = len(text) if end == -1 else end
            yield text[start:end]
            at = text.find(needle, end)


def _line_chunks(stream: Any, size: int = _KALLSYMS_CHUNK) -> Iterator[str]:
    """Chunks of a text stream, each ending at a line boundary."""
    rest = ""
    while block := stream.read(size):
        block = rest + block
        cut = block.rfind("\n") + 1
        if cut == 0:
            rest = block
            continue
        rest = block[cut:]
        yield block[:cut]
    if rest:
        yield rest


def read_kallsyms(host_root: Path) -> bytes:
    """Reader: stream ``<root>/proc/kallsyms``; unreadable -> a record that says why."""
    try:
        real = resolve_in_root(os.path.realpath(host_root), "/proc/kallsyms")
        if real is None:
            raise PermissionError("proc/kallsyms: too many links")
        result = (_scan_through_cat() if real == "/proc/kallsyms" else None) or _scan_here(real)
    except OSError as exc:
        result = {"format": _SCAN_MARK, "readable": False, "error": f"{type(exc).__name__}: {exc}"}
    return json.dumps(result, indent=1).encode()


def _scan_through_cat() -> dict[str, Any] | None:
    """The running kernel's table, read by ``cat`` and scanned as it comes; None when cat
    could not read it all (not installed, or it failed: the table is then read here).

    The kernel hands the table out a page per read, some 1,300 reads of 4 KiB. Made in this
    process, each read waits for the interpreter lock while other probes parse, and this was
    the last probe of a check to finish; cat makes those reads on another core and passes the
    table on 64 KiB at a time (docs/performance.md). For this host's own /proc only: a
    --host-root is read here, through the links resolved inside it."""
    with streamed_output(("cat", "/proc/kallsyms")) as cat:
        if cat is None or cat.stdout is None:
            return None
        text = io.TextIOWrapper(cat.stdout, encoding="ascii", errors="replace")
        scan = scan_kallsyms(_line_chunks(text), table_only=False)
        return scan if cat.wait() == 0 else None


def _scan_here(real: str) -> dict[str, Any]:
    with open(open_regular(real, follow=False), encoding="ascii", errors="replace") as stream:
        return scan_kallsyms(_line_chunks(stream), table_only=False)


def parse_kallsyms(text: str, artifact: str) -> Section:
    if text.lstrip().startswith("{"):
        try:
            scan = json.loads(text)
        except (ValueError, RecursionError):
            raise ParseError("kallsyms scan is not valid JSON") from None
        if not isinstance(scan, dict) or scan.get("format") != _SCAN_MARK:
            raise ParseError("JSON is not a kallsyms scan")
        complete = bool(scan.get("readable"))
    else:
        scan = scan_kallsyms([text])
        if not scan["table_lines"]:
            raise ParseError("no kallsyms lines (expected `address type name [module]`)")
        complete = scan["table_lines"] >= COMPLETE_TABLE_LINES
    return _kallsyms_facts(scan, complete, text, artifact)


def _lines_of(text: str, needles: Iterable[str]) -> dict[str, tuple[int, str]]:
    """The first line holding each needle and its number (the first line for one not found),
    found by C-level searches (a Python loop over a 120k-line table took ~0.17 s a needle; a sos
    report holds the whole table), the newlines counted once between the hits in text order
    rather than from the start for each."""
    hits = sorted((text.find(needle), needle) for needle in needles)
    lines: dict[str, tuple[int, str]] = {}
    number, counted_to = 1, 0
    for at, needle in hits:
        start = text.rfind("\n", 0, max(at, 0)) + 1
        number += text.count("\n", counted_to, start)
        counted_to = start
        end = text.find("\n", start)
        lines[needle] = (number, text[start : end if end >= 0 else len(text)])
    return lines


def _kallsyms_facts(scan: dict[str, Any], complete: bool, text: str, artifact: str) -> Section:
    found = {
        s["name"]: s
        for s in scan.get("found") or []
        if isinstance(s, dict) and isinstance(s.get("name"), str)
    }
    names = list(KALLSYMS_OF_INTEREST) + sorted(n for n in found if n not in KALLSYMS_OF_INTEREST)
    # an absent symbol cites a scan's first line, or a table's: one search, not one a name
    lines = _lines_of(text, ["{", *(name for name in names if name in found)])
    symbols = []
    for name in names:
        present = name in found
        symbols.append(
            {
                "name": name,
                "present": present if (present or complete) else None,
                "module": found[name].get("module") if present else None,
                "src": src(artifact, *lines[name if present else "{"]),
            }
        )
    hidden = scan.get("addresses_hidden")
    note = None
    if hidden:
        note = "addresses are all zero (kptr_restrict or not root); symbol presence is still valid"
    elif not scan.get("readable", True):
        note = f"/proc/kallsyms unreadable: {scan.get('error')}"
    elif not complete:
        note = "an excerpt: symbols not listed are unknown (None), not absent"
    present = sorted(found)
    return {
        "readable": bool(scan.get("readable", True)),
        "complete": complete,
        "lines_scanned": scan.get("lines_scanned", 0),
        "addresses_hidden": hidden,
        "symbols": symbols,
        "present": present,
        "has_p2pdma": _any_present(
            found, complete, lambda n: n == "p2pdma_pgmap_ops" or n.startswith("pci_p2pdma_")
        ),
        # the PCIe driver's hook and the fabrics one are told apart: nvidia-fs looks each up by
        # name (nvfs-dma.c modules_list), and a patched nvme_rdma does not make local NVMe direct
        "has_nvfs_dma_ops": _any_present(found, complete, lambda n: n in _NVME_PCIE_HOOKS),
        "has_nvme_rdma_nvfs_dma_ops": _any_present(found, complete, lambda n: n == _NVME_RDMA_HOOK),
        "has_nvidia_p2p": _any_present(found, complete, lambda n: n == "nvidia_p2p_get_pages"),
        "note": note,
    }


def _any_present(found: dict[str, Any], complete: bool, wanted: Any) -> bool | None:
    if any(wanted(name) for name in found):
        return True
    return False if complete else None


def recognise_kallsyms(text: str) -> bool:
    lines = [line for _, line in _content_lines(text[:20_000], 100)]
    hits = sum(bool(_KALLSYMS_LINE.match(line)) for line in lines)
    return bool(lines) and hits * 2 >= len(lines)


# ---------------------------------------------------------------------------------------------
# ofed, virt
# ---------------------------------------------------------------------------------------------

_OFED = lazy_compile(
    r"^(?P<flavour>MLNX_OFED_LINUX|OFED-internal|DOCA[\w-]{0,40}?|OFED)-(?P<version>\d+\.\d[\w.-]*):?$"
)


def parse_ofed(text: str, artifact: str) -> Section:
    for number, line in _each_content_line(text):
        if m := _OFED.match(line.strip()):
            major, minor = (int(x) for x in re.findall(r"\d+", m["version"])[:2])
            return {
                "release": ".".join(m["version"].split("-")[0].split(".")[:2]),
                "flavour": m["flavour"],
                "version": m["version"],
                "major": major,
                "minor": minor,
                "is_doca": m["flavour"] != "MLNX_OFED_LINUX",
                "src": src(artifact, number, line),
            }
    raise ParseError("no OFED version line (expected `ofed_info -s`, e.g. MLNX_OFED_LINUX-5.8-1.0.1.1:)")


def recognise_ofed(text: str) -> bool:
    lines = _content_lines(text[:5_000])
    return 1 <= len(lines) <= 2 and bool(_OFED.match(lines[0][1].strip()))


_CONTAINERS = (
    "docker",
    "podman",
    "lxc",
    "lxc-libvirt",
    "systemd-nspawn",
    "rkt",
    "wsl",
    "proot",
    "pouch",
    "openvz",
)
_VMS = (
    "qemu", "kvm", "amazon", "zvm", "vmware", "microsoft", "oracle", "powervm", "xen", "bochs", "uml",
    "parallels", "bhyve", "qnx", "acrn", "apple", "sre", "google",
)  # fmt: skip


def parse_virt(text: str, artifact: str) -> Section:
    lines = _content_lines(text, 1)
    word = lines[0][1].strip() if lines else ""
    if word not in ("none", *_CONTAINERS, *_VMS):
        raise ParseError("not `systemd-detect-virt` output (one word: none, kvm, docker, ...)")
    return {
        "virt": word,
        "is_virtual": word in _VMS,
        "is_container": word in _CONTAINERS,
        "src": src(artifact, lines[0][0], lines[0][1]),
    }


def recognise_virt(text: str) -> bool:
    lines = _content_lines(text[:1_000])
    return (len(lines) == 1 and lines[0][1].strip() in (*_CONTAINERS, *_VMS)) or (
        len(lines) == 1 and lines[0][1].strip() == "none" and text.lstrip().startswith("$")
    )


# ---------------------------------------------------------------------------------------------
# /etc/default/grub
# ---------------------------------------------------------------------------------------------

_GRUB_LINE = lazy_compile(r"^(?:export\s+)?(?P<key>GRUB_[A-Z0-9_]+)=(?P<value>.*)$")


def parse_grub(text: str, artifact: str) -> Section:
    variables: dict[str, str] = {}
    where: dict[str, tuple[int, str]] = {}
    for number, line in _each_content_line(text):
        if m := _GRUB_LINE.match(line.strip()):
            variables[m["key"]] = _unquote(m["value"])
            where[m["key"]] = (number, line)
    if not variables:
        raise ParseError("no GRUB_* variables (expected /etc/default/grub)")
    # The kernel gets GRUB_CMDLINE_LINUX then GRUB_CMDLINE_LINUX_DEFAULT (normal boot entries).
    keys = [k for k in ("GRUB_CMDLINE_LINUX", "GRUB_CMDLINE_LINUX_DEFAULT") if k in variables]
    params = [p for k in keys for p in split_params(variables[k])]
    number, line = where[keys[-1]] if keys else next(iter(where.values()))
    facts = cmdline_facts(params, artifact, number, line)
    facts["param_list"] = [
        {"key": key, "value": value, "src": src(artifact, *where[k])}
        for k in keys
        for key, value in split_params(variables[k])
    ]
    return {"variables": variables, **facts, "src": src(artifact, number, line)}


def recognise_grub(text: str) -> bool:
    lines = [
        line.strip() for _, line in _content_lines(text[:50_000], 100) if not line.strip().startswith("#")
    ]
    hits = sum(bool(_GRUB_LINE.match(line)) for line in lines)
    return hits >= 1 and hits * 2 >= len(lines)


# ---------------------------------------------------------------------------------------------

PROBES: tuple[Probe, ...] = (
    Probe(
        section="kernel",
        title="running kernel release",
        sources=(
            Source("proc/version", path="/proc/version"),
            Source("cmd/uname-a.txt", argv=("uname", "-a")),
        ),
        parse=parse_kernel,
        recognise=recognise_kernel,
        paste_hint="`uname -a` or `cat /proc/version`",
    ),
    Probe(
        section="os_release",
        title="Linux distribution",
        sources=(
            Source("etc/os-release", path="/etc/os-release"),
            Source("usr/lib/os-release", path="/usr/lib/os-release"),
        ),
        parse=parse_os_release,
        recognise=recognise_os_release,
        paste_hint="`cat /etc/os-release`",
    ),
    Probe(
        section="cmdline",
        title="kernel command line (IOMMU, ACS, nvme_core parameters)",
        sources=(Source("proc/cmdline", path="/proc/cmdline"),),
        parse=parse_cmdline,
        recognise=recognise_cmdline,
        paste_hint="`cat /proc/cmdline`",
    ),
    Probe(
        section="kallsyms",
        title="kernel symbols that tell which GDS paths the kernel supports (P2PDMA, nvfs DMA ops)",
        sources=(Source("proc/kallsyms.json", reader=read_kallsyms, timeout=30.0),),
        parse=parse_kallsyms,
        recognise=recognise_kallsyms,
        paste_hint="`grep -E 'p2pdma|nvfs_dma_ops|nvidia_p2p_get_pages|blk_rq_dma_map_iter' /proc/kallsyms`",
    ),
    Probe(
        section="ofed",
        title="MLNX_OFED / DOCA-OFED version",
        sources=(Source("cmd/ofed_info-s.txt", argv=("ofed_info", "-s")),),
        parse=parse_ofed,
        recognise=recognise_ofed,
        paste_hint="`ofed_info -s`",
    ),
    Probe(
        section="virt",
        title="virtualisation or container detected",
        sources=(Source("cmd/systemd-detect-virt.txt", argv=("systemd-detect-virt",), ok_exit_codes=(0, 1)),),
        parse=parse_virt,
        recognise=recognise_virt,
        paste_hint="`systemd-detect-virt`",
    ),
    Probe(
        section="etc_default_grub",
        title="boot loader kernel parameters for the next boot (/etc/default/grub)",
        sources=(Source("etc/default/grub", path="/etc/default/grub"),),
        parse=parse_grub,
        recognise=recognise_grub,
        paste_hint="`cat /etc/default/grub`",
    ),
)
