"""GPUDirect Storage platform check, from ``gdscheck -p`` (or the version-only ``gdscheck -v``).

Every layout from GDS 0.9 beta to >= 1.16 is read line by line; rows are ``name : value`` and
neither their set nor their order is assumed. Sample (GDS 1.14)::

     GDS release version: 1.14.0.30
     nvidia_fs version:  2.24 libcufile version: 2.12
     NVMe P2PDMA        : Unsupported
     NVMe               : Supported          (>= 1.16: "nvfs, compat", "compat", "p2pdma, ...")
     --rdma_device_status  : Up: 0 Down: 0
     properties.use_compat_mode : false
     GPU index 0 NVIDIA RTX 6000 Ada Generation bar:1 bar size (MiB):65536 supports GDS, IOMMU State: Disabled
     IOMMU: disabled

Section ``gdscheck``:

- ``header``: ``gds_version``, ``gds_beta`` (bool), ``libcufile_version``, ``nvidia_fs_version``,
  ``nvidia_fs_min_version``, ``arch`` (all str or None) and ``src`` (key -> provenance).
- ``nvidia_fs_version`` (str|None), ``nvidia_fs_loaded`` (bool|None: None when the header was not
  pasted; False when the header has no ``nvidia_fs version:`` or a "not loaded" message shows).
- ``backends``: ``[{name, status, supported, modes, direct, src}]`` with ``by_backend`` by name.
  ``supported``: status is not "Unsupported"; ``modes``: the >= 1.16 mode list (``nvfs``,
  ``p2pdma``, ``compat``), [] for the older Supported/Unsupported style; ``direct``: a non-compat
  path is available (Supported, or nvfs/p2pdma in the modes).
- ``rdma``: ``peer_direct``, ``library_loaded``, ``devices_configured`` (bool|None),
  ``devices_up``, ``devices_down`` (int|None), ``src``.
- ``environment``: ``{NAME: value}`` of the ENVIRONMENT section (CUFILE_* set when run, >= 1.16).
- ``config``: cufile.json-style dotted key -> typed value (bool/int/float/str/list[int]); gdscheck
  names that differ from cufile.json are mapped (``properties.use_compat_mode`` ->
  ``properties.allow_compat_mode``). ``config_items``: ``[{key, json_key, value, raw, src}]``.
- ``gpus``: ``[{index, name, bar, bar_size (bytes), supports_gds, iommu_enabled, compute_capability,
  attributes, src}]``.
- ``platform``: ``iommu_enabled``, ``driver_info_status``, ``open_driver`` (bool|None),
  ``cuda_driver_version`` (int, e.g. 12090), ``name``, ``arch``, ``kernel``, ``verified``
  (bool|None), ``src``.
- ``messages``: ``[{kind, text, src}]`` error/warning lines (kind e.g. ``unsupported_gpu_arch``,
  ``no_supported_gpu``, ``platform_verification_failed``, ``nvidia_fs_not_loaded``).
- ``layout``: ``"beta"`` (0.9), ``"modes"`` (>= 1.16 mode lists), ``"classic"`` or None;
  ``truncated``: the paste was cut (an ``[... excerpt truncated ...]`` marker; the cut line is dropped).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, Source, head_lines, numbered_lines, src

MIB = 1024 * 1024

_SECTION = lazy_compile(
    r"(?:^|\s)(ENVIRONMENT|DRIVER CONFIGURATION|CUFILE CONFIGURATION|cuFile CONFIGURATION|GPU INFO|"
    r"PLATFORM INFO)\s*:\s*$"
)
_RELEASE = lazy_compile(r"GDS release version(?P<beta> \(beta\))?\s*:\s*(?P<v>\S+)")
_HEADER_FIELDS = {
    "nvidia_fs_version": lazy_compile(r"nvidia_fs version\s*:\s*(\d[\w.:]*)"),
    "nvidia_fs_min_version": lazy_compile(r"nvidia_fs minimum version\s*:\s*(\d[\w.:]*)"),
    "libcufile_version": lazy_compile(r"libcufile version\s*:\s*(\d[\w.:]*)"),
}
_ROW = lazy_compile(r"^(?P<name>-{0,2}[A-Za-z](?:[\w .\-/]*[\w.\-/])?)\s*:\s*(?P<value>(?:.*\S)?)\s*$")
_CONFIG_KEY = lazy_compile(r"^(?:properties|fs|profile|miscellaneous|execution|logging|cufile)\.[\w.]+$")
_GPU = lazy_compile(
    r"^GPU (?:index )?(?P<index>\d+) (?P<name>.+?) bar:\s*(?P<bar>\d+) bar size \(MiB\)\s*:\s*"
    r"(?P<mib>\d+)(?!\d)(?P<rest>.*)"
)
_GPU_BAD_ARCH = lazy_compile(
    r"^GPU (?:index )?(?P<index>\d+) (?P<name>.+?) does not have supported architecture"
    r"(?:, has (?P<cc>\d+) requires >= (?P<need>\d+))?"
)
_PLATFORM_LINE = lazy_compile(
    r"^Platform\s*:\s*(?!\s)(?P<name>.*?),\s*Arch\s*:\s*(?P<arch>[\w]+)(?:\((?P<kernel>[^)]*)\))?"
)
_RDMA_STATUS = lazy_compile(r"Up:\s*(\d+)\s+Down:\s*(\d+)")
TRUNCATION_MARKER = lazy_compile(r"^\s*\[\.\.\. [^\]\n]*truncated[^\n]*\]\s*$")
_PROMPT = lazy_compile(r"(^\$|[#$>]\s|^\S*gdscheck(\.py)?\s+-[pv]\b|\bgdscheck(\.py)?\s+-[pv]\b)")
_MODES = {"nvfs", "p2pdma", "compat"}

# gdscheck prints some properties under names that differ from the cufile.json keys (gds-matrix §3.5).
GDSCHECK_TO_JSON_KEY = {
    "properties.use_compat_mode": "properties.allow_compat_mode",
    "properties.max_batch_io_size": "properties.io_batchsize",
    "properties.rdma_peer_affinity_policy": "properties.rdma_load_balancing_policy",
    "properties.prefer_iouring": "properties.prefer_io_uring",
}
# Printed as 0/1 by GDS 0.9 (and rdma_dynamic_routing still is): read these as booleans.
BOOLEAN_KEYS = frozenset(
    {
        "properties.use_pci_p2pdma",
        "properties.allow_compat_mode",
        "properties.force_compat_mode",
        "properties.gds_rdma_write_support",
        "properties.use_poll_mode",
        "properties.rdma_dynamic_routing",
        "properties.force_odirect_mode",
        "properties.prefer_io_uring",
        "properties.allow_system_memory",
        "fs.generic.posix_unaligned_writes",
        "fs.weka.rdma_write_support",
        "fs.gpfs.gds_write_support",
        "fs.gpfs.gds_async_support",
        "profile.nvtx",
        "miscellaneous.api_check_aggressive",
        "execution.parallel_io",
    }
)
_MESSAGE_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("unsupported_gpu_arch", lazy_compile(r"does not have supported architecture", re.I)),
    ("no_supported_gpu", lazy_compile(r"does not have any supported GPU", re.I)),
    ("platform_verification_failed", lazy_compile(r"verification (failed|error)", re.I)),
    ("platform_not_supported", lazy_compile(r"not supported (by cufile|on current platform)", re.I)),
    ("nvidia_fs_not_loaded", lazy_compile(r"nvidia[-_]fs(\.ko)? driver (is )?not loaded", re.I)),
    ("cufile_init_failed", lazy_compile(r"cufile initialization failed", re.I)),
    ("error", lazy_compile(r"\b(error|failed|failure)\b", re.I)),
    ("warning", lazy_compile(r"\bwarn(ing)?\b", re.I)),
)


def typed_value(raw: str) -> Any:
    """'true' -> True, '16384' -> 16384, '4 1024 16384' -> [4, 1024, 16384], else the string."""
    value = raw.strip()
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    if re.fullmatch(r"^-?\d+\.\d+", value):
        return float(value)
    if re.fullmatch(r"^-?\d+(?:[ ,]+-?\d+)+", value):
        return [int(v) for v in re.split(r"[ ,]+", value)]
    return value


def config_value(key: str, raw: str) -> Any:
    value = typed_value(raw)
    if key in BOOLEAN_KEYS and value in (0, 1) and not isinstance(value, bool):
        return bool(value)
    return value


def classify_message(text: str) -> str | None:
    for kind, pattern in _MESSAGE_KINDS:
        if pattern.search(text):
            return kind
    return None


# --- helpers shared by the GDS probes (cufile.py, nvidia_fs.py) ---------------------------------


class ContentLines:
    """Numbered lines minus a line cut by an excerpt marker (the line just before it), read one
    at a time (a list of every line of a text of newlines would cost ~100 bytes a line);
    ``truncated`` says, once they have been read, whether a marker was seen."""

    __slots__ = ("text", "truncated")

    def __init__(self, text: str) -> None:
        self.text = text
        self.truncated = False

    def __iter__(self) -> Iterator[tuple[int, str]]:
        held: tuple[int, str] | None = None  # the previous line: a marker after it drops it
        for number, line in numbered_lines(self.text):
            if TRUNCATION_MARKER.match(line):
                self.truncated, held = True, None
                continue
            if held is not None:
                yield held
            held = (number, line)
        if held is not None:
            yield held


def content_lines(text: str) -> ContentLines:
    """The lines of a pasted text, excerpt markers honoured (``ContentLines``)."""
    return ContentLines(text)


class _Parser:
    def __init__(self, artifact: str) -> None:
        self.artifact = artifact
        self.header: dict[str, Any] = {
            "gds_version": None,
            "gds_beta": None,
            "libcufile_version": None,
            "nvidia_fs_version": None,
            "nvidia_fs_min_version": None,
            "arch": None,
            "src": {},
        }
        self.rdma: dict[str, Any] = {
            "peer_direct": None,
            "library_loaded": None,
            "devices_configured": None,
            "devices_up": None,
            "devices_down": None,
            "src": {},
        }
        self.platform: dict[str, Any] = {
            "iommu_enabled": None,
            "driver_info_status": None,
            "open_driver": None,
            "cuda_driver_version": None,
            "name": None,
            "arch": None,
            "kernel": None,
            "verified": None,
            "src": {},
        }
        self.backends: list[dict[str, Any]] = []
        self.environment: dict[str, str] = {}
        self.config_items: list[dict[str, Any]] = []
        self.gpus: list[dict[str, Any]] = []
        self.messages: list[dict[str, Any]] = []
        self.section: str | None = None
        self.recognised = 0

    def src(self, number: int, line: str) -> dict[str, Any]:
        return src(self.artifact, number, line)

    def feed(self, number: int, raw: str) -> None:
        line = raw.strip()
        if not line or set(line) <= set("=:. "):
            return
        section = _SECTION.search(line)
        if section:
            self.section = section[1].upper()
            self.recognised += 1
            return
        if self.header_line(number, raw, line):
            return
        gpu_context = self.section == "GPU INFO" or (self.section is None and line.startswith("GPU "))
        if gpu_context and self.gpu_line(number, raw, line):
            return
        row = _ROW.match(line)
        if row and self.row(number, raw, row["name"].strip(), row["value"]):
            self.recognised += 1
            return
        self.message(number, raw, line)

    def header_line(self, number: int, raw: str, line: str) -> bool:
        release = _RELEASE.search(line)
        found = False
        if release:
            self.set(self.header, "gds_version", release["v"], number, raw)
            self.set(self.header, "gds_beta", bool(release["beta"]), number, raw)
            found = True
        for key, pattern in _HEADER_FIELDS.items():
            match = pattern.search(line)
            if match:
                self.set(self.header, key, match[1], number, raw)
                found = True
        if not found and self.section is None and re.fullmatch(r"Platform\s*:\s*\w+", line):
            self.set(self.header, "arch", line.split(":", 1)[1].strip(), number, raw)
            found = True
        self.recognised += found
        return found

    def set(self, target: dict[str, Any], key: str, value: Any, number: int, raw: str) -> None:
        target[key] = value
        target["src"][key] = self.src(number, raw)

    def row(self, number: int, raw: str, name: str, value: str) -> bool:
        if _CONFIG_KEY.match(name):
            self.config_row(number, raw, name, value)
            return True
        if name.startswith("-"):
            return self.rdma_row(number, raw, name.lstrip("-").strip().lower(), value)
        if re.fullmatch(r"^[A-Z][A-Z0-9]*_[A-Z0-9_]+", name):  # CUFILE_LOGGING_LEVEL (backends have no "_")
            self.environment[name] = value
            return True
        platform_context = self.section == "PLATFORM INFO" or name in ("IOMMU", "Nvidia Driver Info Status")
        if platform_context and self.platform_row(number, raw, name, value):
            return True
        if self.section in (None, "DRIVER CONFIGURATION", "CUFILE CONFIGURATION"):
            return self.backend_row(number, raw, name, value)
        return False

    def backend_row(self, number: int, raw: str, name: str, value: str) -> bool:
        modes = [m.strip().lower() for m in value.split(",") if m.strip()]
        if value.lower() in ("supported", "unsupported"):
            modes = []
        elif not modes or not set(modes) <= _MODES:
            return False
        supported = value.lower() != "unsupported"
        self.backends.append(
            {
                "name": name,
                "status": value,
                "supported": supported,
                "modes": modes,
                "direct": bool(set(modes) & {"nvfs", "p2pdma"}) if modes else supported,
                "src": self.src(number, raw),
            }
        )
        return True

    def rdma_row(self, number: int, raw: str, name: str, value: str) -> bool:
        lowered = value.lower()
        if "peer" in name:  # "Mellanox PeerDirect" (>= 1.0) or "MOFED peer direct" (0.9)
            self.set(self.rdma, "peer_direct", lowered.startswith("enabled"), number, raw)
        elif name == "rdma library":
            self.set(self.rdma, "library_loaded", lowered.startswith("loaded"), number, raw)
        elif name == "rdma devices":
            self.set(self.rdma, "devices_configured", lowered.startswith("configured"), number, raw)
        elif name == "rdma_device_status":
            counts = _RDMA_STATUS.search(value)
            if not counts:
                return False
            self.set(self.rdma, "devices_up", int(counts[1]), number, raw)
            self.set(self.rdma, "devices_down", int(counts[2]), number, raw)
        else:
            return False
        return True

    def platform_row(self, number: int, raw: str, name: str, value: str) -> bool:
        if name == "IOMMU":
            self.set(self.platform, "iommu_enabled", value.lower().startswith("enabled"), number, raw)
        elif name == "Nvidia Driver Info Status":
            self.set(self.platform, "driver_info_status", value, number, raw)
            self.set(self.platform, "open_driver", "open driver" in value.lower(), number, raw)
        elif name.startswith("Cuda Driver Version") and value.isdecimal():
            self.set(self.platform, "cuda_driver_version", int(value), number, raw)
        elif name == "Platform":
            match = _PLATFORM_LINE.match(f"Platform: {value}")
            if not match:
                self.set(self.platform, "name", value, number, raw)
                return True
            self.set(self.platform, "name", match["name"], number, raw)
            self.set(self.platform, "arch", match["arch"], number, raw)
            kernel = re.sub(r"^Linux\s+", "", match["kernel"] or "") or None
            self.set(self.platform, "kernel", kernel, number, raw)
        else:
            return False
        return True

    def config_row(self, number: int, raw: str, key: str, value: str) -> None:
        json_key = GDSCHECK_TO_JSON_KEY.get(key, key)
        self.config_items.append(
            {
                "key": key,
                "json_key": json_key,
                "value": config_value(json_key, value),
                "raw": value,
                "src": self.src(number, raw),
            }
        )

    def gpu_line(self, number: int, raw: str, line: str) -> bool:
        match = _GPU.match(line)
        if match:
            attributes = [a.strip() for a in match["rest"].split(",") if a.strip()]
            states = [a.partition(":")[2].strip().lower() for a in attributes if a.startswith("IOMMU")]
            iommu = states[0] if states else ""
            self.gpus.append(
                {
                    "index": int(match["index"]),
                    "name": match["name"].strip(),
                    "bar": int(match["bar"]),
                    "bar_size": int(match["mib"]) * MIB,
                    "supports_gds": any(a.lower() == "supports gds" for a in attributes),
                    "iommu_enabled": iommu.startswith("enabled") if iommu else None,
                    "compute_capability": None,
                    "attributes": attributes,
                    "src": self.src(number, raw),
                }
            )
            self.recognised += 1
            return True
        bad = _GPU_BAD_ARCH.match(line)
        if bad:
            self.gpus.append(
                {
                    "index": int(bad["index"]),
                    "name": bad["name"].strip(),
                    "bar": None,
                    "bar_size": None,
                    "supports_gds": False,
                    "iommu_enabled": None,
                    "compute_capability": int(bad["cc"]) if bad["cc"] else None,
                    "attributes": ["does not have supported architecture"],
                    "src": self.src(number, raw),
                }
            )
            self.message(number, raw, line)
            return True
        return False

    def message(self, number: int, raw: str, line: str) -> None:
        if re.search(r"verification succeeded", line, re.I):
            self.set(self.platform, "verified", True, number, raw)
            self.recognised += 1
            return
        kind = classify_message(line)
        if kind is None or _PROMPT.search(line):
            return
        if kind == "platform_verification_failed":
            self.set(self.platform, "verified", False, number, raw)
        self.messages.append({"kind": kind, "text": line, "src": self.src(number, raw)})


def _nvidia_fs_loaded(parser: _Parser) -> bool | None:
    if any(m["kind"] == "nvidia_fs_not_loaded" for m in parser.messages):
        return False
    if parser.header["nvidia_fs_version"]:
        return True
    return False if parser.header["gds_version"] else None


def _layout(parser: _Parser) -> str | None:
    beta_rows = {"USERSPACE RDMA", "SCALEFLUX CSD"}  # 0.9 printed the backend names in capitals
    if parser.header["gds_beta"] or any(b["name"] in beta_rows for b in parser.backends):
        return "beta"
    if any(b["modes"] for b in parser.backends):
        return "modes"
    return "classic" if parser.backends or parser.header["gds_version"] else None


def parse(text: str, artifact: str) -> Section:
    parser = _Parser(artifact)
    lines = content_lines(text)
    for number, line in lines:
        parser.feed(number, line)
    if not parser.recognised:
        raise ParseError("no gdscheck lines (expected `gdscheck -p` output: version header, backend rows)")
    return {
        "header": parser.header,
        "nvidia_fs_version": parser.header["nvidia_fs_version"],
        "nvidia_fs_loaded": _nvidia_fs_loaded(parser),
        "backends": parser.backends,
        "by_backend": {b["name"]: b for b in parser.backends},
        "rdma": parser.rdma,
        "environment": parser.environment,
        "config": {item["json_key"]: item["value"] for item in parser.config_items},
        "config_items": parser.config_items,
        "gpus": parser.gpus,
        "platform": parser.platform,
        "messages": parser.messages,
        "layout": _layout(parser),
        "truncated": lines.truncated,
    }


_RECOGNISE = lazy_compile(
    r"^\s*GDS release version|^\s*(DRIVER|CUFILE|cuFile) CONFIGURATION:\s*$|"
    r"^\s*--(rdma library|rdma devices|rdma_device_status|Mellanox PeerDirect|MOFED peer direct)\s*:|"
    r"^\s*(NVMe P2PDMA|NVMeOF|ScaleFlux CSD|DDN EXAScaler|IBM Spectrum Scale|Userspace RDMA)\s*:\s*"
    r"(Supported|Unsupported|nvfs|p2pdma|compat)",
    re.M | re.I,
)


def recognise(text: str) -> bool:
    head = "\n".join(head_lines(text, 100))
    return bool(_RECOGNISE.search(head))


PROBES: tuple[Probe, ...] = (
    Probe(
        section="gdscheck",
        title="GPUDirect Storage platform check (backends, cuFile config, GPUs, IOMMU)",
        sources=(
            Source("cmd/gdscheck-p.txt", argv=("gdscheck", "-p"), timeout=20.0),
            # Its own name: a failed run of the first must stay in the capture and the manifest.
            Source(
                "cmd/gds-tools-gdscheck-p.txt",
                argv=("/usr/local/cuda/gds/tools/gdscheck", "-p"),
                timeout=20.0,
            ),
        ),
        parse=parse,
        recognise=recognise,
        paste_hint="`/usr/local/cuda/gds/tools/gdscheck -p`",
        tags=("gds",),
    ),
)
