"""Derived facts for the GDS domain: which data path the node is set up for, the cuFile
configuration in effect, and which GPUs GDS can use.

``derive(facts, derived)`` returns ``derived.gds``:

- ``nvidia_fs_loaded``: bool|None — nvidia_fs is loaded now (lsmod, /proc/driver/nvidia-fs,
  gdscheck header, nvidia-fs stats); False when a source shows it absent (lsmod without it,
  gdscheck header without the ``nvidia_fs version`` line, cufile.log ``driver not loaded``);
  a positive source wins over a negative one (a cufile.log may be older than the module).
- ``nvidia_fs_version``: str|None — the loaded (or installed) nvidia-fs version.
- ``gds_version``: str|None — the GDS (libcufile) release: gdscheck's ``GDS release version``,
  else the nvidia-fs stats' ``GDS Version``. Rules gate on it where libcufile's behaviour
  changed (1.7 non-O_DIRECT handling, 1.16 tmpfs/overlay compat, 1.17 ZFS/Btrfs compat); when
  it is null they say which behaviour they assumed.
- ``cufile_effective``: the cuFile configuration in effect ``{values: {json key: value},
  sources: {json key: "env"|"gdscheck"|"file"|"default"}, items: [{key, value, source, src}],
  env_overrides: [{key, env, env_value, file_value, src}]}``. Precedence: CUFILE_* environment
  (cufile_env, or the ENVIRONMENT section gdscheck printed) > what gdscheck read > cufile.json
  > documented defaults. ``env_overrides`` lists env values that contradict the file.
- ``rdma_dev_addrs``: every RDMA address cuFile is given (global, per-filesystem, mount tables).
- ``direct_io_size_misaligned``: bool|None — ``max_direct_io_size_kb`` not a multiple of 64.
- ``p2pdma_configured``: bool|None — ``use_pci_p2pdma`` true in effect (``properties.`` or a
  route's own key); ``p2pdma_routes``: the per-route keys ``[{key, route, value}]``
  (``block.nvme``, ``block.nvmeof``, ``block.raid``, ``fs.virtiofs``); ``p2pdma_keys``: the keys
  that are true.
- ``path``: ``"p2pdma"`` (upstream PCI P2PDMA configured or reported usable), ``"nvfs"``
  (nvidia-fs loaded or a backend with a direct nvfs path), ``"compat-only"`` (neither: every
  IO goes through the CPU bounce buffer at best), None (cannot tell). ``path_src``: the
  provenance records that decided it.
- ``compat_in_use``: True when a runtime source shows IO running in compat mode (cufile.log
  ``running in compatible mode`` / per-file fallback, kvikio banner, gds_stats posix IO);
  ``compat_evidence``: those items (with src).
- ``gpus``: GPUs from nvidia-smi, gdscheck and application output ``[{name, bus_id,
  bar1_bytes, bar1_used_pct (nvidia-smi), compute_capability, consumer, source, src}]`` (from
  nvidia-smi, gdscheck, the application's log; else from a pasted lspci naming the model, with
  ``pre_pascal`` for Fermi/Kepler/Maxwell chips);
  ``unsupported_gpus``: those GDS cannot pin (GeForce/consumer, compute capability < 6).
- ``is_wsl``: bool|None — running under WSL (uname, systemd-detect-virt).
- ``rdma_fs_mounts`` / ``userspace_rdma_fs_mounts``: mounts of RDMA-backed filesystems
  (Lustre, NFS over RDMA, WekaFS, GPFS, BeeGFS) / those whose GDS path is userspace RDMA through
  libcufile_rdma (WekaFS, GPFS), which needs ``rdma_dev_addr_list``.
"""

from __future__ import annotations

import re
from typing import Any

from gdsdoctor.facts.derived.access import ok_section
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.text import to_bool

# cuFile environment variables that override one cufile.json key, and how they read.
ENV_KEYS = {
    "CUFILE_ALLOW_COMPAT_MODE": "properties.allow_compat_mode",
    "CUFILE_FORCE_COMPAT_MODE": "properties.force_compat_mode",
    "CUFILE_USE_PCIP2PDMA": "properties.use_pci_p2pdma",
}
# Consumer GPUs: GDS (third-party P2P via nvidia_p2p_get_pages) is refused by the driver.
CONSUMER_GPU = lazy_compile(r"GeForce|\bTITAN\b|\bRTX [2-5]0[5-9]0\b|\bGTX\b", re.I)
# Chips before Pascal (compute capability < 6): Fermi GF1xx, Kepler GK1xx/GK2xx, Maxwell GM1xx/GM2xx,
# as lspci names them ("NVIDIA Corporation GK210GL [Tesla K80]")
PRE_PASCAL_CHIP = lazy_compile(r"\bG[FKM]\d{3}[A-Z]{0,3}\b")
_LSPCI_MODEL = lazy_compile(r"\b[A-Z]{2}\d{3}[A-Z]{0,3} \[[^\]]{2,60}\]")  # GA102, AD102, TU104, GK210GL
_LSPCI_IDS = lazy_compile(r" ?\[[0-9a-f]{4}:[0-9a-f]{4}\]| ?\(rev [0-9a-f]{2}\)")
RDMA_FSTYPES = {"lustre", "wekafs", "gpfs", "beegfs"}
# Oldest nvidia-fs that builds for a kernel (nvidia-fs ChangeLog, gds-matrix §13), newest first.
# 6.18 changed the block-layer DMA map iterator again (issue #80: 2.28.2 fails); 7.0 needs GDS 1.18.
KERNEL_MIN_NVIDIA_FS = (
    ((7, 0), "2.29"),
    ((6, 18), "2.29"),
    ((6, 17), "2.28.2"),
    ((6, 11), "2.26.6"),
    ((6, 6), "2.19.7"),
    ((6, 5), "2.19.6"),
    ((6, 2), "2.18.3"),
    ((6, 0), "2.17.0"),
)
USERSPACE_RDMA_FSTYPES = {"wekafs", "gpfs"}


def derive(facts: dict[str, Any], derived: dict[str, Any]) -> dict[str, Any]:
    effective = cufile_effective(facts)
    routes = p2pdma_routes(effective["values"])
    p2pdma_configured = effective["values"].get("properties.use_pci_p2pdma")
    if p2pdma_configured is not True and any(r["value"] is True for r in routes):
        p2pdma_configured = True  # a route of its own asks for it (block.nvme.use_pci_p2pdma)
    loaded, loaded_src = nvidia_fs_loaded(facts)
    path, path_src = gds_path(facts, loaded, loaded_src, p2pdma_configured, effective)
    compat = compat_evidence(facts)
    gpus = gds_gpus(facts)
    mounts = ok_section(facts, "mounts").get("mounts", [])
    return {
        "nvidia_fs_loaded": loaded,
        "nvidia_fs_version": nvidia_fs_version(facts),
        "gds_version": gds_version(facts),
        "cufile_effective": effective,
        "rdma_dev_addrs": rdma_dev_addrs(effective["values"]),
        "direct_io_size_misaligned": _misaligned(effective["values"].get("properties.max_direct_io_size_kb")),
        "p2pdma_configured": p2pdma_configured if isinstance(p2pdma_configured, bool) else None,
        "p2pdma_routes": routes,
        "p2pdma_keys": [
            k for k, v in sorted(effective["values"].items()) if k.endswith("use_pci_p2pdma") and v is True
        ],
        "path": path,
        "path_src": path_src,
        "compat_in_use": True if compat else None,
        "compat_evidence": compat,
        "compat_cannot_save": compat_cannot_save(facts, effective["values"]),
        "gpus": gpus,
        "unsupported_gpus": [g for g in gpus if g["consumer"] or _old_arch(g)],
        "nvidia_fs_kernel_gap": nvidia_fs_kernel_gap(facts),
        "is_wsl": is_wsl(facts),
        "rdma_fs_mounts": [m for m in mounts if _rdma_mount(m)],
        "userspace_rdma_fs_mounts": [m for m in mounts if m.get("fstype") in USERSPACE_RDMA_FSTYPES],
    }


def compat_cannot_save(facts: dict[str, Any], values: dict[str, Any]) -> bool:
    """Where the compat path cannot carry the I/O, so that a direct-path defect fails it: compat
    mode off (``allow_compat_mode`` false in effect), or a file's registration failed all the same
    (5030 in the application's output, cuFile's internal error or file object allocation failure
    in cufile.log). Elsewhere such a defect costs speed (CPU bounce buffers), not the save."""
    if values.get("properties.allow_compat_mode") is False:
        return True
    errors = ok_section(facts, "app_log").get("errors") or []
    if any(isinstance(e, dict) and e.get("code") == 5030 for e in errors):
        return True
    entries = ok_section(facts, "cufile_log").get("entries") or []
    failed = ("internal_error", "file_object_alloc_failed")
    return any(isinstance(e, dict) and e.get("kind") in failed for e in entries)


# --- nvidia-fs -----------------------------------------------------------------------------


def nvidia_fs_loaded(facts: dict[str, Any]) -> tuple[bool | None, list[dict[str, Any]]]:
    """(loaded, provenance): any positive source wins; otherwise any negative one."""
    says: list[tuple[bool, Any]] = []
    modules = ok_section(facts, "modules")
    if modules:
        entry = (modules.get("by_name") or {}).get("nvidia_fs")
        says.append((entry is not None, (entry or {}).get("src")))
    for name in ("nvidia_fs_version", "nvidia_fs_stats", "nvidia_fs_modules"):
        section = ok_section(facts, name)
        if section:
            says.append((True, _first_src(section)))
    gdscheck = ok_section(facts, "gdscheck")
    if isinstance(gdscheck.get("nvidia_fs_loaded"), bool):
        header_src = (gdscheck.get("header") or {}).get("src") or {}
        says.append((gdscheck["nvidia_fs_loaded"], header_src.get("nvidia_fs_version")))
    log = ok_section(facts, "cufile_log")
    says.extend((False, e.get("src")) for e in log.get("entries", []) if e.get("kind") == "driver_not_loaded")
    for verdict in (True, False):
        if any(v is verdict for v, _ in says):
            return verdict, [s for v, s in says if v is verdict and _is_src(s)]
    return None, []


def _first_src(section: dict[str, Any]) -> Any:
    value = section.get("src")
    if _is_src(value):
        return value
    if isinstance(value, dict):
        return next((v for v in value.values() if _is_src(v)), None)
    return None


def _is_src(value: Any) -> bool:
    return isinstance(value, dict) and {"artifact", "line", "text"} <= value.keys()


def nvidia_fs_version(facts: dict[str, Any]) -> str | None:
    candidates = (
        ok_section(facts, "nvidia_fs_version").get("version"),
        ok_section(facts, "gdscheck").get("nvidia_fs_version"),
        ok_section(facts, "nvidia_fs_stats").get("driver_version"),
        ok_section(facts, "modinfo_nvidia_fs").get("version"),
        (ok_section(facts, "app_log").get("kvikio") or {}).get("gds_driver"),
    )
    return next((str(c) for c in candidates if c), None)


def gds_version(facts: dict[str, Any]) -> str | None:
    """The GDS release the node runs (gdscheck's header, else the nvidia-fs stats' header)."""
    candidates = (
        (ok_section(facts, "gdscheck").get("header") or {}).get("gds_version"),
        ok_section(facts, "nvidia_fs_stats").get("gds_version"),
    )
    return next((str(c) for c in candidates if c), None)


def nvidia_fs_kernel_gap(facts: dict[str, Any]) -> dict[str, Any] | None:
    """The kernel an nvidia-fs build is for, when that nvidia-fs release predates the kernel."""
    build = ok_section(facts, "nvidia_fs_build")
    kernel = build.get("kernel") or ok_section(facts, "kernel").get("release")
    kernel = kernel or ok_section(facts, "gdscheck").get("platform", {}).get("kernel")
    version = build.get("version") or nvidia_fs_version(facts) or _dkms_nvidia_fs_version(facts)
    if not kernel or not version:
        return None
    needed = min_nvidia_fs_for_kernel(str(kernel))
    if needed is None or _version(version) >= _version(needed):
        return None
    return {"kernel": kernel, "nvidia_fs_version": version, "needed": needed, "src": _first_src(build)}


def min_nvidia_fs_for_kernel(release: str) -> str | None:
    numbers = _version(release)
    for kernel, needed in KERNEL_MIN_NVIDIA_FS:
        if numbers[:2] >= kernel:
            return needed
    return None


def _version(text: str) -> tuple[int, ...]:
    match = re.match(r"^\D*(\d+(?:\.\d+)*)", str(text))
    return tuple(int(n) for n in match[1].split(".")) if match else ()


def _dkms_nvidia_fs_version(facts: dict[str, Any]) -> str | None:
    modules = ok_section(facts, "dkms_status").get("modules", [])
    versions = [m.get("version") for m in modules if m.get("module") == "nvidia-fs" and m.get("version")]
    return max(versions, key=_version) if versions else None


# --- cuFile configuration in effect ---------------------------------------------------------


def cufile_effective(facts: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    srcs: dict[str, Any] = {}
    cufile_json = ok_section(facts, "cufile_json")
    explicit = {item["key"]: item for item in cufile_json.get("items", [])}
    for key, value in (cufile_json.get("config") or {}).items():
        values[key] = value
        sources[key] = "file" if key in explicit else "default"
        srcs[key] = explicit.get(key, {}).get("src")
    gdscheck = ok_section(facts, "gdscheck")
    for item in gdscheck.get("config_items", []):
        key = item.get("json_key")
        if key:
            values[key], sources[key], srcs[key] = item.get("value"), "gdscheck", item.get("src")
    overrides = []
    for name, raw, line_src in _env_items(facts):
        key = ENV_KEYS.get(name)
        value = to_bool(raw)
        if key is None or value is None:
            continue
        before = values.get(key)
        if sources.get(key) in ("file", "gdscheck") and before is not None and before != value:
            overrides.append(
                {"key": key, "env": name, "env_value": value, "file_value": before, "src": line_src}
            )
        values[key], sources[key], srcs[key] = value, "env", line_src
    items = [{"key": k, "value": values[k], "source": sources[k], "src": srcs.get(k)} for k in sorted(values)]
    return {"values": values, "sources": sources, "items": items, "env_overrides": overrides}


def p2pdma_routes(values: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-route P2PDMA keys of the configuration (``block.nvme.use_pci_p2pdma``,
    ``block.nvmeof.…``, ``block.raid.…``, ``fs.virtiofs.…``): current libcufile gates P2PDMA per
    route as well as with ``properties.use_pci_p2pdma`` (gds-diag's config audit reads both)."""
    return [
        {"key": key, "route": key.removesuffix(".use_pci_p2pdma"), "value": value}
        for key, value in sorted(values.items())
        if key.endswith(".use_pci_p2pdma") and key != "properties.use_pci_p2pdma" and isinstance(value, bool)
    ]


def rdma_dev_addrs(values: dict[str, Any]) -> list[str]:
    """Every RDMA device address cuFile is given: the global list, per-filesystem lists, and the
    lists inside per-filesystem mount tables."""
    found: list[str] = []

    def collect(value: Any) -> None:
        if isinstance(value, list):
            found.extend(str(v) for v in value if isinstance(v, str | int) and str(v).strip())
        elif isinstance(value, dict):
            for key, inner in value.items():
                if key == "rdma_dev_addr_list" or isinstance(inner, dict):
                    collect(inner)

    for key, value in values.items():
        if key.endswith("rdma_dev_addr_list") or key.endswith(".mount_table"):
            collect(value)
    return sorted(set(found))


def _misaligned(size_kb: Any) -> bool | None:
    """max_direct_io_size_kb must be a multiple of 64 KiB."""
    if isinstance(size_kb, bool) or not isinstance(size_kb, int):
        return None
    return size_kb % 64 != 0


def _env_items(facts: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """CUFILE_* variables from the environment capture, else from gdscheck's ENVIRONMENT."""
    env = ok_section(facts, "cufile_env")
    if env.get("items"):
        return [(i["name"], i["value"], i.get("src")) for i in env["items"]]
    gdscheck = ok_section(facts, "gdscheck")
    src_map = (gdscheck.get("src") or {}) if isinstance(gdscheck.get("src"), dict) else {}
    return [(k, v, src_map.get(k)) for k, v in (gdscheck.get("environment") or {}).items()]


# --- data path ----------------------------------------------------------------------------


def gds_path(
    facts: dict[str, Any],
    loaded: bool | None,
    loaded_src: list[dict[str, Any]],
    p2pdma_configured: Any,
    effective: dict[str, Any],
) -> tuple[str | None, list[dict[str, Any]]]:
    """What gdscheck or a TRACE cufile.log shows usable first, then what is configured/loaded."""
    backends = ok_section(facts, "gdscheck").get("backends", [])
    p2p_rows = [b for b in backends if _p2pdma_row(b)]
    nvfs_rows = [b for b in backends if _nvfs_row(b)]
    log = ok_section(facts, "cufile_log")
    nvfs_io = [e for e in log.get("entries", []) if e.get("kind") in ("gds_path_taken", "nvfs_io_submit")]
    key_src = _src_of(effective, "properties.use_pci_p2pdma")
    if p2p_rows:
        return "p2pdma", _srcs([*(b.get("src") for b in p2p_rows), key_src])
    if nvfs_rows or nvfs_io:
        return "nvfs", _srcs([*(b.get("src") for b in nvfs_rows), *(e.get("src") for e in nvfs_io)])
    if p2pdma_configured is True:
        return "p2pdma", _srcs([key_src])
    if loaded:
        return "nvfs", loaded_src
    if loaded is False or (backends and not any(b.get("direct") for b in backends)):
        return "compat-only", loaded_src
    return None, []


def _p2pdma_row(row: dict[str, Any]) -> bool:
    return "p2pdma" in row.get("modes", []) or (
        row.get("name") == "NVMe P2PDMA" and bool(row.get("supported"))
    )


def _nvfs_row(row: dict[str, Any]) -> bool:
    """A backend with the nvidia-fs path: mode ``nvfs`` (>= 1.16) or a plain ``Supported`` row."""
    if "nvfs" in row.get("modes", []):
        return True
    return bool(row.get("supported")) and not row.get("modes") and row.get("name") != "NVMe P2PDMA"


def _srcs(values: list[Any]) -> list[dict[str, Any]]:
    return [v for v in values if _is_src(v)]


def _src_of(effective: dict[str, Any], key: str) -> Any:
    for item in effective["items"]:
        if item["key"] == key:
            return item["src"]
    return None


# --- compat mode at runtime -----------------------------------------------------------------


def compat_evidence(facts: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    log = ok_section(facts, "cufile_log")
    found.extend(e for e in log.get("entries", []) if e.get("kind") in ("compat_mode", "compat_fallback"))
    found.extend(ok_section(facts, "app_log").get("compat", []))
    stats = ok_section(facts, "gds_stats").get("last") or {}
    for gpu in stats.get("gpus", []) or []:
        if any(((gpu.get(op) or {}).get("posix") or 0) > 0 for op in ("read", "write")):
            found.append(gpu)
    return found


# --- GPUs ---------------------------------------------------------------------------------


def gds_gpus(facts: dict[str, Any]) -> list[dict[str, Any]]:
    gpus: list[dict[str, Any]] = []
    for gpu in ok_section(facts, "nvidia_smi").get("gpus", []):
        bar1 = gpu.get("bar1_total_bytes") or _mib(gpu.get("bar1_total_mib"))
        entry = _gpu(gpu.get("product_name"), gpu.get("bus_id"), bar1, None, "nvidia-smi", gpu)
        total, used = gpu.get("bar1_total_mib"), gpu.get("bar1_used_mib")
        if isinstance(total, int) and isinstance(used, int) and total > 0:
            entry["bar1_used_pct"] = round(100 * used / total, 1)
        gpus.append(entry)
    for gpu in ok_section(facts, "gdscheck").get("gpus", []):
        cc = gpu.get("compute_capability")
        gpus.append(_gpu(gpu.get("name"), None, gpu.get("bar_size"), cc, "gdscheck", gpu))
    for gpu in ok_section(facts, "app_log").get("gpus", []):
        gpus.append(_gpu(gpu.get("name"), None, gpu.get("bar1_total_bytes"), None, "application", gpu))
    return gpus or _lspci_gpus(facts)


def _lspci_gpus(facts: dict[str, Any]) -> list[dict[str, Any]]:
    """NVIDIA GPUs of a pasted lspci whose model pci.ids names ("GA102 [GeForce RTX 3090]",
    "GK210GL [Tesla K80]"): when nothing richer (nvidia-smi, gdscheck) lists the GPUs, the model
    alone decides GDS support. A GPU lspci names only by its id ("Device 2330") is left out: an
    unknown model must not count as a supported one."""
    found = []
    listed = [(d, d.get("kind") == "gpu") for d in ok_section(facts, "lspci").get("devices", [])]
    # lspci -tv names no class: its NVIDIA devices with a chip and a model are the GPUs
    listed += [(d, True) for d in ok_section(facts, "lspci_tree").get("devices", [])] if not listed else []
    for device, gpu in listed:
        name = str(device.get("name") or "") if isinstance(device, dict) else ""
        if not gpu or not name.startswith("NVIDIA") or not _LSPCI_MODEL.search(name):
            continue
        entry = _gpu(_LSPCI_IDS.sub("", name).strip(), device.get("bdf"), None, None, "lspci", device)
        entry["pre_pascal"] = bool(PRE_PASCAL_CHIP.search(name))
        found.append(entry)
    return found


def _gpu(name: Any, bus_id: Any, bar1: Any, cc: Any, source: str, item: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "bus_id": bus_id,
        "bar1_bytes": bar1 if isinstance(bar1, int) else None,
        "compute_capability": cc,
        "bar1_used_pct": None,
        "consumer": bool(name and CONSUMER_GPU.search(str(name))),
        "source": source,
        "src": _first_src(item),
    }


def _mib(value: Any) -> int | None:
    return value * 1024 * 1024 if isinstance(value, int) else None


def _old_arch(gpu: dict[str, Any]) -> bool:
    if gpu.get("pre_pascal"):
        return True
    cc = gpu.get("compute_capability")
    try:
        return cc is not None and float(str(cc)) < 6
    except ValueError:
        return False


# --- platform and filesystems ---------------------------------------------------------------


def is_wsl(facts: dict[str, Any]) -> bool | None:
    kernel = ok_section(facts, "kernel")
    virt = ok_section(facts, "virt")
    seen = []
    if kernel:
        seen.append(bool(kernel.get("is_wsl")))
    if virt:
        seen.append(virt.get("virt") == "wsl")
    if any(seen):
        return True
    return False if seen else None


def _rdma_mount(mount: dict[str, Any]) -> bool:
    fstype = mount.get("fstype")
    if fstype in RDMA_FSTYPES:
        return True
    opts = mount.get("opts") or {}
    return str(fstype).startswith("nfs") and opts.get("proto") == "rdma"
