"""NVMe controllers, subsystems, multipath paths, block queues and nvme module parameters from sysfs.

Version-independent ground truth for what nvme-cli shows (research/nvme-notes.md §4). The reader
walks ``/sys/class/nvme/*``, ``/sys/class/nvme-subsystem/*``, ``/sys/block/*`` and
``/sys/module/nvme*/parameters`` under the host root and returns the raw attribute strings as JSON;
the parser types them.

Section ``nvme_sysfs``::

    {"controllers": [{"name": "nvme1", "transport": "tcp", "address": "traddr=…,trsvcid=4420",
       "traddr": …, "trsvcid": …, "host_traddr": …, "src_addr": …, "pci_bdf": "052e:78:00.0"|None,
       "state": "live"|"connecting"|"deleting (no IO)"|…, "subsysnqn": …, "subsystem": "nvme-subsys1",
       "model": …, "serial": …, "firmware_rev": …, "numa_node": 0|None (-1 = none), "cntlid": 1,
       "cntrltype": "io", "hostnqn": …, "hostid": …, "kato_s": 0, "queue_count": 65, "sqsize": 1023,
       "ctrl_loss_tmo": "600"|"off"|None, "ctrl_loss_tmo_s": 600|None, "reconnect_delay_s": 10,
       "fast_io_fail_tmo": "off", "fast_io_fail_tmo_s": None, "namespaces": ["nvme0n1"],
       "paths": ["nvme1c1n1"], "fabrics": true}],
     "subsystems": [{"name": "nvme-subsys1", "nqn": …, "iopolicy": "numa", "model": …, "serial": …,
       "subsystype": "nvm", "controllers": ["nvme1", "nvme2"], "namespaces": ["nvme1n1"]}],
     "paths": [{"name": "nvme1c1n1", "controller": "nvme1", "head": "nvme1n1", "ana_state": …,
       "ana_grpid": …}],
     "block": [{"name": "nvme0n1", "size_bytes": …, "ro": false, "wwid": "eui.…"|None,
       "nguid": …|None, "uuid": …|None (an all-zero id is None), "scheduler": "none",
       "schedulers": ["none", "mq-deadline"], "nr_requests": 1023, "max_sectors_kb": 1280,
       "max_hw_sectors_kb": …, "read_ahead_kb": 128, "rotational": false, "logical_block_size": 512,
       "physical_block_size": …, "io_timeout_ms": …, "write_cache": "write back", "nomerges": …,
       "slaves": [], "holders": ["md0"]}],
     "module_params": {"nvme_core": {"io_timeout": "30", "multipath": "Y", …}, "nvme": {…}},
     "nvme_core": {"multipath": true, "io_timeout_s": 30, "admin_timeout_s": 60, "max_retries": 5}}

Every item's ``src`` points at the line of its name in the reader's JSON artifact.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from gdsdoctor.errors import ParseError, Unavailable
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, Source, src
from gdsdoctor.probes.host_io import child_inside, link_name, list_inside, read_regular, real_inside
from gdsdoctor.probes.text import line_finder, load_pasted_json, split_address, text_or_none, to_bool, to_int

CONTROLLER_ATTRS = (
    "transport", "address", "state", "subsysnqn", "model", "serial", "firmware_rev", "numa_node",
    "ctrl_loss_tmo", "reconnect_delay", "fast_io_fail_tmo", "kato", "queue_count", "sqsize", "cntlid",
    "cntrltype", "dctype", "hostnqn", "hostid",
)  # fmt: skip
SUBSYSTEM_ATTRS = ("subsysnqn", "model", "serial", "firmware_rev", "iopolicy", "subsystype")
PATH_ATTRS = ("ana_state", "ana_grpid", "nsid")
BLOCK_ATTRS = ("size", "ro", "dev", "wwid", "nguid", "uuid")  # the ids: one namespace seen from two hosts
QUEUE_ATTRS = (
    "scheduler", "nr_requests", "max_sectors_kb", "max_hw_sectors_kb", "read_ahead_kb", "rotational",
    "logical_block_size", "physical_block_size", "io_timeout", "write_cache", "nomerges", "rq_affinity",
)  # fmt: skip
MODULES = ("nvme_core", "nvme", "nvme_fabrics", "nvme_tcp", "nvme_rdma")

_CONTROLLER = lazy_compile(r"^nvme\d+$")
_HEAD = lazy_compile(r"^nvme\d+n\d+$")
_PATH = lazy_compile(r"^nvme\d+c\d+n\d+$")
_MAX_ENTRIES = 4096  # a sysfs dir with more entries than this is not what we think it is
_MAX_READ = 65536

# ---------------------------------------------------------------------------------------------------
# reader (I/O; never raises, never leaves the host root)


def _read_attr(path: str) -> str | None:
    data = read_regular(path, _MAX_READ)  # a regular file only: a fifo would block the reader
    # dumps made with tar pad attribute files with NULs up to the page size
    return data.split(b"\0", 1)[0].decode("utf-8", "replace").rstrip("\n") if data is not None else None


def _list(root: str, path: Path, *, raise_denied: bool = False) -> list[str]:
    return list_inside(root, path, raise_denied=raise_denied)[:_MAX_ENTRIES]


def _attrs(root: str, directory: Path, names: tuple[str, ...]) -> dict[str, str]:
    """The attributes present (common.attrs_inside's checks, this module's decoding)."""
    real = real_inside(root, directory)
    if real is None:
        return {}
    found: dict[str, str] = {}
    for name in names:
        path = child_inside(root, real, name)
        value = _read_attr(path) if path is not None else None
        if value is not None:
            found[name] = value
    return found


def _read_block(root: str, directory: Path) -> dict[str, Any]:
    entry: dict[str, Any] = _attrs(root, directory, BLOCK_ATTRS)
    entry["queue"] = _attrs(root, directory / "queue", QUEUE_ATTRS)
    entry["slaves"] = _list(root, directory / "slaves")
    entry["holders"] = _list(root, directory / "holders")
    return entry


def read_sysfs(host_root: Path) -> bytes:
    """Walk the NVMe/block parts of sysfs under ``host_root`` into JSON (the artifact); missing
    without a /sys, which is not a host without NVMe devices."""
    root = os.path.realpath(host_root)
    sys_dir = Path(root) / "sys"
    if not sys_dir.is_dir():
        raise Unavailable("no /sys under the host root")
    tree: dict[str, Any] = {"controllers": {}, "subsystems": {}, "block": {}, "modules": {}}
    for name in _list(root, sys_dir / "class/nvme", raise_denied=True):
        directory = sys_dir / "class/nvme" / name
        controller: dict[str, Any] = _attrs(root, directory, CONTROLLER_ATTRS)
        controller["device_link"] = link_name(directory / "device")
        entries = _list(root, directory)
        controller["namespaces"] = [entry for entry in entries if _HEAD.match(entry)]
        controller["paths"] = {
            entry: _attrs(root, directory / entry, PATH_ATTRS) for entry in entries if _PATH.match(entry)
        }
        for namespace in controller["namespaces"]:
            tree["block"][namespace] = _read_block(root, directory / namespace)
        tree["controllers"][name] = controller
    for name in _list(root, sys_dir / "class/nvme-subsystem", raise_denied=True):
        directory = sys_dir / "class/nvme-subsystem" / name
        subsystem: dict[str, Any] = _attrs(root, directory, SUBSYSTEM_ATTRS)
        entries = _list(root, directory)
        subsystem["controllers"] = [entry for entry in entries if _CONTROLLER.match(entry)]
        subsystem["namespaces"] = [entry for entry in entries if _HEAD.match(entry)]
        for head in subsystem["namespaces"]:
            tree["block"][head] = _read_block(root, directory / head)
        tree["subsystems"][name] = subsystem
    for name in _list(root, sys_dir / "block", raise_denied=True):
        tree["block"][name] = _read_block(root, sys_dir / "block" / name)
    for module in MODULES:
        parameters = sys_dir / "module" / module / "parameters"
        names = tuple(_list(root, parameters))
        if names:
            tree["modules"][module] = _attrs(root, parameters, names)
    return json.dumps(tree, indent=1, sort_keys=True).encode()


# ---------------------------------------------------------------------------------------------------
# parser (pure)


def _seconds(value: Any) -> int | None:
    """``ctrl_loss_tmo``/``fast_io_fail_tmo``/``reconnect_delay``: seconds, or ``off`` (None)."""
    number = to_int(value)
    return number if number is not None and number >= 0 else None


def _scheduler(value: Any) -> tuple[str | None, list[str]]:
    """``[none] mq-deadline kyber`` -> ("none", [all]); a single word (no choice) is the selected one."""
    text = text_or_none(value)
    if not text:
        return None, []
    names = [word.strip("[]") for word in text.split()]
    selected = re.search(r"\[([^\[\]]+)\]", text)
    return (selected[1] if selected else (names[0] if len(names) == 1 else None)), names


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _names(value: Any) -> list[str]:
    if isinstance(value, dict):
        value = list(value)
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _controller(name: str, raw: dict[str, Any], subsystem_of: dict[str, str], provenance: dict) -> dict:
    transport = text_or_none(raw.get("transport"))
    address = text_or_none(raw.get("address"))
    parts = split_address(address)
    if transport == "pcie" and not parts["pci_bdf"]:
        parts["pci_bdf"] = text_or_none(raw.get("device_link"))
    numa = to_int(raw.get("numa_node"))
    return {
        "name": name,
        "transport": transport,
        "address": address,
        **parts,
        "state": text_or_none(raw.get("state")),
        "subsysnqn": text_or_none(raw.get("subsysnqn")),
        "subsystem": subsystem_of.get(name),
        "model": text_or_none(raw.get("model")),
        "serial": text_or_none(raw.get("serial")),
        "firmware_rev": text_or_none(raw.get("firmware_rev")),
        "numa_node": numa if numa is not None and numa >= 0 else None,
        "cntlid": to_int(raw.get("cntlid")),
        "cntrltype": text_or_none(raw.get("cntrltype")),
        "hostnqn": text_or_none(raw.get("hostnqn")),
        "hostid": text_or_none(raw.get("hostid")),
        "kato_s": to_int(raw.get("kato")),
        "queue_count": to_int(raw.get("queue_count")),
        "sqsize": to_int(raw.get("sqsize")),
        "ctrl_loss_tmo": text_or_none(raw.get("ctrl_loss_tmo")),
        "ctrl_loss_tmo_s": _seconds(raw.get("ctrl_loss_tmo")),
        "reconnect_delay": text_or_none(raw.get("reconnect_delay")),
        "reconnect_delay_s": _seconds(raw.get("reconnect_delay")),
        "fast_io_fail_tmo": text_or_none(raw.get("fast_io_fail_tmo")),
        "fast_io_fail_tmo_s": _seconds(raw.get("fast_io_fail_tmo")),
        "fabrics": transport in ("rdma", "tcp", "fc", "loop") if transport else None,
        "namespaces": _names(raw.get("namespaces")),
        "paths": _names(raw.get("paths")),
        "src": provenance,
    }


def _namespace_id(value: Any) -> str | None:
    """An NGUID or namespace UUID; the all-zero value a namespace without one reports is None."""
    text = text_or_none(value)
    return text.lower() if text and text.strip("0-") else None


def _block(name: str, raw: dict[str, Any], provenance: dict) -> dict[str, Any]:
    queue = _dict(raw.get("queue"))
    sectors = to_int(raw.get("size"))
    scheduler, schedulers = _scheduler(queue.get("scheduler"))
    return {
        "name": name,
        "dev": text_or_none(raw.get("dev")),
        "size_bytes": sectors * 512 if sectors is not None else None,  # always 512-byte units
        "ro": to_bool(raw.get("ro")),
        "wwid": text_or_none(raw.get("wwid")),
        "nguid": _namespace_id(raw.get("nguid")),
        "uuid": _namespace_id(raw.get("uuid")),
        "scheduler": scheduler,
        "schedulers": schedulers,
        "nr_requests": to_int(queue.get("nr_requests")),
        "max_sectors_kb": to_int(queue.get("max_sectors_kb")),
        "max_hw_sectors_kb": to_int(queue.get("max_hw_sectors_kb")),
        "read_ahead_kb": to_int(queue.get("read_ahead_kb")),
        "rotational": to_bool(queue.get("rotational")),
        "logical_block_size": to_int(queue.get("logical_block_size")),
        "physical_block_size": to_int(queue.get("physical_block_size")),
        "io_timeout_ms": to_int(queue.get("io_timeout")),
        "write_cache": text_or_none(queue.get("write_cache")),
        "nomerges": to_int(queue.get("nomerges")),
        "rq_affinity": to_int(queue.get("rq_affinity")),
        "slaves": _names(raw.get("slaves")),
        "holders": _names(raw.get("holders")),
        "src": provenance,
    }


def _nvme_core(modules: dict[str, Any]) -> dict[str, Any]:
    core = _dict(modules.get("nvme_core"))
    return {
        "multipath": to_bool(core.get("multipath")),
        "io_timeout_s": to_int(core.get("io_timeout")),
        "admin_timeout_s": to_int(core.get("admin_timeout")),
        "max_retries": to_int(core.get("max_retries")),
        "shutdown_timeout_s": to_int(core.get("shutdown_timeout")),
        "default_ps_max_latency_us": to_int(core.get("default_ps_max_latency_us")),
    }


def parse(text: str, artifact: str) -> Section:
    document, _ = load_pasted_json(text, "the nvme sysfs reader's JSON")
    if not isinstance(document, dict) or not {"controllers", "subsystems", "block"} <= set(document):
        raise ParseError(
            "JSON without controllers/subsystems/block (expected the nvme_sysfs reader's artifact)"
        )
    find = line_finder(text)
    raw_subsystems = sorted(_dict(document["subsystems"]).items())
    subsystem_of = {
        ctrl: name for name, raw in raw_subsystems for ctrl in _names(_dict(raw).get("controllers"))
    }
    controllers, paths = [], []
    for name, raw in sorted(_dict(document["controllers"]).items()):
        raw = _dict(raw)
        controllers.append(
            _controller(name, raw, subsystem_of, src(artifact, *find(rf'^\s*"{re.escape(name)}": \{{')))
        )
        for path_name, path_raw in sorted(_dict(raw.get("paths")).items()):
            path_raw = _dict(path_raw)
            head = re.sub(r"c\d+n", "n", path_name)
            paths.append(
                {
                    "name": path_name,
                    "controller": name,
                    "head": head,
                    "ana_state": text_or_none(path_raw.get("ana_state")),
                    "ana_grpid": to_int(path_raw.get("ana_grpid")),
                    "src": src(artifact, *find(rf'^\s*"{re.escape(path_name)}": \{{')),
                }
            )
    subsystems = []
    for name, raw in raw_subsystems:
        raw = _dict(raw)
        subsystems.append(
            {
                "name": name,
                "nqn": text_or_none(raw.get("subsysnqn")),
                "iopolicy": text_or_none(raw.get("iopolicy")),
                "model": text_or_none(raw.get("model")),
                "serial": text_or_none(raw.get("serial")),
                "firmware_rev": text_or_none(raw.get("firmware_rev")),
                "subsystype": text_or_none(raw.get("subsystype")),
                "controllers": _names(raw.get("controllers")),
                "namespaces": _names(raw.get("namespaces")),
                "src": src(artifact, *find(rf'^\s*"{re.escape(name)}": \{{')),
            }
        )
    block_find = line_finder(text)
    block = [
        _block(name, _dict(raw), src(artifact, *block_find(rf'^\s*"{re.escape(name)}": \{{')))
        for name, raw in sorted(_dict(document["block"]).items())
    ]
    modules = {
        module: {key: value for key, value in _dict(params).items() if isinstance(value, str)}
        for module, params in _dict(document.get("modules")).items()
    }
    return {
        "controllers": controllers,
        "subsystems": subsystems,
        "paths": paths,
        "block": block,
        "module_params": modules,
        "nvme_core": _nvme_core(modules),
    }


_TOP_KEY = lazy_compile(r'^ "(block|controllers|modules|subsystems)": \{', re.MULTILINE)


def recognise(text: str) -> bool:
    """The reader's own JSON: the four top-level keys at one-space indent (sorted, so block first)."""
    body = text.lstrip()
    if not body.startswith("{") or not body[1:].lstrip().startswith('"block"'):
        return False
    found = {match[1] for match in _TOP_KEY.finditer(text[:4_000_000])}
    return found == {"block", "controllers", "modules", "subsystems"}


PROBES: tuple[Probe, ...] = (
    Probe(
        section="nvme_sysfs",
        title="NVMe controllers/subsystems/paths, block queue settings and nvme module parameters (sysfs)",
        sources=(
            Source(
                "sys/nvme-sysfs.json",
                reader=read_sysfs,
                how="ls -l /sys/class/nvme /sys/class/nvme-subsystem",
            ),
        ),
        parse=parse,
        recognise=recognise,
        paste_hint="the `sys/nvme-sysfs.json` file of a gdsdoctor bundle",
    ),
)
