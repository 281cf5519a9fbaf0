"""What the node is meant to use: GDS, NVMe-oF, RDMA for storage (the status contract's *intent*).

A cause about a capability the node does not use is not applicable there (``uses:`` in a rule,
engine/evaluate.py): a GPU node that never installed GDS is not drained because nvidia_fs is
not loaded, nor an InfiniBand node with MLNX_OFED that mounts no NVMe-oF namespace because its
``nvme_rdma`` is OFED's placeholder. Use is inferred here from the evidence the facts already
hold; the site config's ``node:`` statement wins over the inference (``required``: used,
``unused``: not used, ``optional``: the evidence decides).

``derive(facts, derived, stated)`` returns ``derived.intent``::

    {"gds": {"state": "used"|"unused"|"unknown", "by": "evidence"|"site",
             "stated": "required"|"optional"|"unused"|None,
             "evidence": [{"says": str, "src": provenance|None}],   # what shows use
             "read": [section]},                                    # the sources that could show it
     "nvmeof": {…}, "storage_rdma": {…},
     "rdma_role": "storage"|"nccl"|"none"|"unknown", "rdma_role_evidence": […]}

Per capability: ``used`` when a source shows use (below); ``unused`` when none does but one of
the sources about it was read (``SOURCES``: a read ``lsmod`` without nvidia_fs, the stock
cufile.json, ``modinfo nvme_rdma`` or ``ofed_info`` with no fabrics controller, connect attempt
or boot target beside them);
``unknown`` when none of them was read (a lone kernel log or application log): then every cause
is judged as before, and what a paste shows of the capability (a gdscheck, a cufile.log, an
NVMe-oF line in the kernel log) is itself evidence of use.

Evidence of GDS use: nvidia_fs loaded (lsmod, /proc/driver/nvidia-fs, the kernel log), the
nvidia-fs module installed (modinfo, DKMS, a build log), gdscheck's output, a cufile.log, the
cuFile statistics, a cufile.json with a key changed from NVIDIA's shipped default (the shipped
file comes with every CUDA toolkit, so it alone says nothing), CUFILE_* variables, an
application's cuFile lines, a gdsio or fio-libcufile run. Of NVMe-oF: a fabrics controller
(sysfs, nvme-cli), a boot target (/etc/nvme/discovery.conf, config.json), an fstab entry on a
fabrics namespace, an ``nvme discover`` run, a connect attempt (the kernel's NVMe-oF lines, the
nvme-cli errors of a pasted session), an NVMe-oF module loaded or refused in the kernel log.
Of RDMA for storage: NVMe-oF over RDMA, an RDMA-backed filesystem mount, cuFile's
``rdma_dev_addr_list``, an inbox storage module over RDMA failing to load.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gdsdoctor.facts.derived.access import dicts, obj, ok_section, strs

USED, UNUSED, UNKNOWN = "used", "unused", "unknown"
STATEMENTS = ("required", "optional", "unused")
CAPABILITIES = ("gds", "nvmeof", "storage_rdma")
# The sources that would show each capability in use: read and silent, the capability is unused.
SOURCES = {
    "gds": (
        "modules",
        "cufile_json",
        "dkms_status",
        "modinfo_nvidia_fs",
        "nvidia_fs_version",
        "nvidia_fs_devices",
        "gdscheck",
        "cufile_log",
    ),
    "nvmeof": (
        "nvme_sysfs",
        "nvme_subsys",
        "nvme_list",
        "nvme_discovery_conf",
        "nvme_config_json",
        "modinfo_nvme_rdma",
        "ofed",
        "modules",
        "fstab",
    ),
    "storage_rdma": ("mounts", "cufile_json", "nvme_sysfs", "nvme_subsys", "nvme_list", "modinfo_nvme_rdma"),
}
# cuFile's own components, named in its log and in gdscheck; a cufile.log is written by cuFile only.
_CUFILE_KINDS = ("nvfs_setup_error", "io_disabled", "pinning_failed", "cufile_error")
# Kernel modules that carry storage over RDMA (the inbox build refusing OFED's symbols is a load attempt).
_STORAGE_RDMA_MODULES = ("nvme_rdma", "nvmet_rdma", "rpcrdma", "xprtrdma", "svcrdma", "ib_iser", "ib_srp")
# Keys whose value in NVIDIA's shipped cufile.json changed between releases, with every shipped
# value seen: such a value is the shipped file's, not a site's change (CUDA 13.0's /etc/cufile.json,
# fixtures/h200-node-without-nvidia-fs, sets posix_pool_slab_count [128, 64, 64]; the documented
# default, probes/cufile.py DEFAULTS, is [128, 64, 32]).
SHIPPED_VARIANTS: dict[str, tuple[object, ...]] = {
    "properties.posix_pool_slab_count": ([128, 64, 32], [128, 64, 64]),
}
_NVMEOF_MODULES = ("nvme_fabrics", "nvme_rdma", "nvme_tcp", "nvme_fc", "nvmet", "nvmet_rdma", "nvmet_tcp")
_NVMEOF_CLI_KINDS = (
    "fabrics_write_failed",
    "fabrics_open_failed",
    "controller_add_failed",
    "trsvcid_missing",
)


def derive(
    facts: dict[str, Any], derived: dict[str, Any], stated: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``derived.intent`` (see the module's docstring); ``stated``: the site config's ``node:``."""
    shown = {
        "gds": list(_gds(facts, derived)),
        "nvmeof": list(_nvmeof(facts, derived)),
        "storage_rdma": list(_storage_rdma(facts, derived)),
    }
    intent: dict[str, Any] = {
        name: _decide(facts, name, shown[name], (stated or {}).get(name)) for name in CAPABILITIES
    }
    intent["rdma_role"], intent["rdma_role_evidence"] = _rdma_role(facts, derived, intent["storage_rdma"])
    return intent


def _decide(facts: dict[str, Any], name: str, evidence: list[dict[str, Any]], stated: Any) -> dict[str, Any]:
    read = [s for s in SOURCES[name] if ok_section(facts, s)]
    state = USED if evidence else UNUSED if read else UNKNOWN
    by = "evidence"
    if stated == "required":
        state, by = USED, "site"
    elif stated == "unused":
        state, by = UNUSED, "site"
    return {"state": state, "by": by, "stated": stated, "evidence": evidence[:8], "read": read}


def _shows(says: str, source: Any = None) -> dict[str, Any]:
    record = source if isinstance(source, dict) and "artifact" in source else None
    return {"says": says, "src": record}


def _gds(facts: dict[str, Any], derived: dict[str, Any]) -> Iterable[dict[str, Any]]:
    modules = ok_section(facts, "modules")
    if "nvidia_fs" in strs(modules.get("names")):
        yield _shows("nvidia_fs is loaded", modules.get("src"))
    for section, says in (
        ("nvidia_fs_version", "/proc/driver/nvidia-fs exists (nvidia_fs is loaded)"),
        ("nvidia_fs_stats", "nvidia-fs statistics were read"),
        ("modinfo_nvidia_fs", "the nvidia-fs module is installed"),
        ("nvidia_fs_build", "nvidia-fs was built for this kernel (a build log)"),
        ("gdscheck", "gdscheck (gds-tools) was run"),
        ("cufile_log", "a cufile.log: an application used cuFile"),
        ("gds_stats", "cuFile statistics (gds_stats) were read"),
        ("gdsio", "gdsio (gds-tools) was run"),
    ):
        section_facts = ok_section(facts, section)
        if section_facts:
            yield _shows(says, section_facts.get("src") or _first_src(section_facts))
    for module in dicts(ok_section(facts, "dkms_status").get("modules")):
        if str(module.get("module", "")).replace("_", "-") == "nvidia-fs":
            yield _shows("nvidia-fs is registered with DKMS", module.get("src"))
            break
    devices = ok_section(facts, "nvidia_fs_devices")
    if devices.get("count") or devices.get("devcount") or devices.get("proc_present"):
        yield _shows("nvidia-fs devices or /proc/driver/nvidia-fs exist (the host loaded nvidia_fs)")
    for item in dicts(ok_section(facts, "cufile_json").get("items")):
        if _changed(item):
            yield _shows(
                f"cufile.json sets {item.get('key')} (changed from NVIDIA's default)", item.get("src")
            )
            break
    gds = obj(derived.get("gds"))
    if gds.get("p2pdma_configured") is True:
        yield _shows("cuFile is configured for P2PDMA (use_pci_p2pdma)")
    if strs(gds.get("rdma_dev_addrs")):
        yield _shows("cufile.json gives cuFile RDMA addresses (rdma_dev_addr_list)")
    env = ok_section(facts, "cufile_env")
    for item in dicts(env.get("items")):
        if str(item.get("name", "")).startswith("CUFILE_"):
            yield _shows(f"{item.get('name')} is set in the environment", item.get("src"))
            break
    yield from _gds_app(facts)
    for event in dicts(ok_section(facts, "dmesg").get("events")):
        if event.get("kind") in ("nvidia_fs_loaded", "nvidia_fs_error"):
            yield _shows("the kernel log shows nvidia_fs", event.get("src"))
            break
    for name in ("fio",):
        for job in dicts(ok_section(facts, name).get("jobs")):
            if job.get("gds"):
                yield _shows("fio ran with ioengine=libcufile", job.get("src"))
                break


def _changed(item: dict[str, Any]) -> bool:
    """A cufile.json key set to another value than NVIDIA ships (a key without a documented
    default, a site's own addition, says nothing either way)."""
    default = item.get("default")
    if default is None or item.get("value") == default:
        return False
    return item.get("value") not in SHIPPED_VARIANTS.get(str(item.get("key")), ())


def _gds_app(facts: dict[str, Any]) -> Iterable[dict[str, Any]]:
    app = ok_section(facts, "app_log")
    if app.get("compat_mode") or app.get("kvikio"):
        yield _shows("the application log shows cuFile (kvikio / compat mode banner)")
    for error in dicts(app.get("errors")):
        cufile = error.get("code") is not None or str(error.get("api") or "").startswith("cuFile")
        if cufile or error.get("source") == "gdsio" or error.get("kind") in _CUFILE_KINDS:
            yield _shows("the application log shows a cuFile call", error.get("src"))
            return


def _nvmeof(facts: dict[str, Any], derived: dict[str, Any]) -> Iterable[dict[str, Any]]:
    storage = obj(derived.get("storage"))
    for controller in dicts(storage.get("fabrics_controllers"))[:1]:
        yield _shows(
            f"NVMe-oF controller {controller.get('name')} ({controller.get('transport')})",
            controller.get("src"),
        )
    fabrics = obj(derived.get("fabrics"))
    for target in dicts(fabrics.get("boot_targets"))[:1]:
        yield _shows(f"{target.get('source')} names a target to connect at boot", target.get("src"))
    for entry in dicts(fabrics.get("fstab_entries")):
        if entry.get("fabrics"):
            yield _shows(
                f"fstab mounts {entry.get('mountpoint')} from an NVMe-oF namespace", entry.get("src")
            )
            break
    discover = ok_section(facts, "nvme_discover")
    if discover:
        yield _shows("nvme discover was run", _first_src(discover))
    for event in dicts(ok_section(facts, "dmesg").get("events")):
        kind = str(event.get("kind") or "")
        module = obj(event.get("details")).get("module")
        if kind.startswith("nvmeof_"):
            yield _shows("the kernel log shows an NVMe-oF connection", event.get("src"))
            break
        if module in _NVMEOF_MODULES:  # loaded (or refused) at boot or by hand: someone set it up
            yield _shows(f"the kernel log shows {module} being loaded", event.get("src"))
            break
    for error in dicts(ok_section(facts, "cli_errors").get("errors")):
        fabrics_module = error.get("module") in ("nvme_rdma", "nvme_tcp", "nvme_fabrics")
        if error.get("kind") in _NVMEOF_CLI_KINDS or (
            error.get("kind") == "module_not_found" and fabrics_module
        ):
            yield _shows("a pasted nvme connect/discover session", error.get("src"))
            break
    for command in dicts(ok_section(facts, "cli_errors").get("commands")):
        if command.get("tool") == "nvme" and command.get("transport"):
            yield _shows("a pasted nvme connect/discover command", command.get("src"))
            break


def _storage_rdma(facts: dict[str, Any], derived: dict[str, Any]) -> Iterable[dict[str, Any]]:
    storage = obj(derived.get("storage"))
    for controller in dicts(storage.get("fabrics_controllers")):
        if controller.get("transport") == "rdma":
            yield _shows(f"NVMe-oF over RDMA ({controller.get('name')})", controller.get("src"))
            break
    gds = obj(derived.get("gds"))
    for mount in dicts(gds.get("rdma_fs_mounts"))[:1]:
        yield _shows(f"{mount.get('fstype')} mount {mount.get('mountpoint')} (RDMA-backed)", mount.get("src"))
    if strs(gds.get("rdma_dev_addrs")):
        yield _shows("cufile.json gives cuFile RDMA addresses (rdma_dev_addr_list)")
    for event in dicts(ok_section(facts, "dmesg").get("events")):
        details = obj(event.get("details"))
        rdma_transport = (
            str(event.get("kind") or "").startswith("nvmeof_") and details.get("transport") == "rdma"
        )
        if details.get("module") in _STORAGE_RDMA_MODULES or rdma_transport:
            yield _shows(
                f"the kernel log shows {details.get('module') or 'NVMe-oF'} over RDMA", event.get("src")
            )
            break


def _rdma_role(
    facts: dict[str, Any], derived: dict[str, Any], storage_rdma: dict[str, Any]
) -> tuple[str, list[dict[str, Any]]]:
    """What RDMA carries here: storage (the storage_rdma evidence), NCCL (an application log of
    NCCL/UCX over verbs), none (no RDMA device), else unknown."""
    if storage_rdma["state"] == USED:
        return "storage", storage_rdma["evidence"]
    for error in dicts(ok_section(facts, "app_log").get("errors")):
        if error.get("source") in ("nccl", "ucx"):
            return "nccl", [_shows(f"{error['source']} over RDMA in the application log", error.get("src"))]
    if derived.get("rdma_present") is False:
        return "none", [_shows("no RDMA device")]
    return "unknown", []


def _first_src(section: dict[str, Any]) -> dict[str, Any] | None:
    """The first provenance record found in a section (a line that shows the source was read)."""
    for value in section.values():
        if isinstance(value, dict) and "artifact" in value and "line" in value:
            return value
        for item in value if isinstance(value, list) else ():
            if isinstance(item, dict) and isinstance(item.get("src"), dict):
                return item["src"]
    return None


def not_used(intent: dict[str, Any], uses: Iterable[str]) -> list[str]:
    """Of ``uses``, the capabilities this node does not use (``state`` unused)."""
    return [name for name in uses if obj(intent.get(name)).get("state") == UNUSED]
