"""NVMe facts from nvme-cli: namespaces, subsystems/paths, SMART, identify-controller, discovery.

Longer than 600 lines: seven nvme-cli commands, each with JSON shapes from many versions and a text
form, sharing the shape dispatch and the controller/namespace model.

nvme-cli changed its JSON shapes many times (research/nvme-notes.md §1), so every parser
dispatches on the SHAPE of the document, never on a version number.

Sections (all lists of dicts with ``src`` provenance):

``nvme_list`` (``nvme list -o json``; v1.x simple, v2.x simple, v2.11/2.12 verbose tree)::

    {"layout": "simple"|"verbose", "namespaces": [{"device": "nvme0n1", "device_path": "/dev/nvme0n1",
      "nsid": 1, "controller": "nvme0"|None, "subsystem": "nvme-subsys0"|None, "model": …, "serial": …,
      "firmware": …, "used_bytes": int|None, "physical_size_bytes": int|None, "sector_size": 512}],
     "controllers": [{"name": "nvme0", "transport": "pcie", "address": "0000:01:00.0", "traddr": …,
      "subsystem": …, "subsystem_nqn": …, "model": …, "serial": …, "firmware": …}]}

``nvme_subsys`` (``nvme list-subsys`` JSON of 1.x/2.x, its text form, and ``nvme show-topology``)::

    {"subsystems": [{"name": "nvme-subsys1", "nqn": …, "iopolicy": "numa"|None, "type": …,
      "host_nqn": …, "path_count": 2, "live_path_count": 1}],
     "paths": [{"name": "nvme1"|None, "subsystem": "nvme-subsys1", "subsystem_nqn": …, "transport": "tcp",
      "address": "traddr=…,trsvcid=4420", "traddr": …, "trsvcid": …, "host_traddr": …, "src_addr": …,
      "state": "live"|"connecting"|None, "ana_state": "optimized"|None, "nsid": int|None}]}

``nvme_smart`` (``nvme smart-log <ctrl> -o json``, one per controller, or one pasted; its text
output too, read by ``nvme_kv_text``)::

    {"devices": [{"device": "nvme0"|None, "temperature_c": 28, "critical_warning": 0,
      "warnings": {"available_spare": false, "temperature": false, "reliability_degraded": false,
                   "read_only": false, "volatile_backup_failed": false, "pmr_read_only": false},
      "avail_spare_pct": 100, "spare_thresh_pct": 5, "percent_used": 15, "media_errors": 0,
      "num_err_log_entries": 17, "power_on_hours": …, "unsafe_shutdowns": …, "error": None}]}

``nvme_id_ctrl`` (``nvme id-ctrl <ctrl> -o json``, or its text, read by ``nvme_kv_text``)::

    {"controllers": [{"device": "nvme0"|None, "model": "…", "serial": "…", "firmware": "…",
      "subnqn": …, "vid": 5197, "cntlid": 4, "version": "1.2.0", "kas": …, "cmic": 0,
      "multi_controller": false, "anacap": …, "vwc": …, "error": None}]}

``nvme_id_ns`` (``nvme id-ns <namespace>`` text or ``-o json``; paste only)::

    {"namespaces": [{"device": "nvme0n1"|None, "nsid": 1|None, "flbas": 4, "format": 4,
      "lba_bytes": 4096, "metadata_bytes": 64, "extended_lba": false, "pi_type": 0,
      "formats": [{"index", "lba_bytes", "metadata_bytes", "in_use"}], "nguid": …, "src"}]}

  ``format`` is the LBA format in use (FLBAS bits 3:0, and 6:5 for more than 16 formats; the
  text's ``(in use)`` mark); ``metadata_bytes`` its metadata size (``ms``; GDS refuses I/O that
  carries integrity metadata); ``pi_type``: DPS bits 2:0 (0 = no protection information).

``nvme_discover`` (``nvme discover`` text or ``-o json``; paste only: discovery connects to a target)::

    {"device": "nvme1"|None, "genctr": 4, "records": [{"trtype": "tcp", "adrfam": "ipv4",
      "subtype": "nvme subsystem", "traddr": "127.0.0.1", "trsvcid": "8009", "subnqn": "storage1",
      "portid": 1, "treq": …}]}

Real sample line (list-subsys text, nvme-cli 2.0): `` +- nvme1 tcp traddr=10.162.198.42,trsvcid=4420 live
non-optimized``.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gdsdoctor.capture.runner import run_command
from gdsdoctor.errors import ParseError
from gdsdoctor.model import ArtifactStatus
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes import nvme_kv_text, nvme_list_text
from gdsdoctor.probes.base import Probe, Section, Source, head_lines, numbered_lines, src
from gdsdoctor.probes.text import (
    json_key,
    line_finder,
    load_pasted_json,
    size_bytes,
    split_address,
    strip_prompt_lines,
    text_or_none,
    to_int,
)

_CTRL_NAME = lazy_compile(r"^nvme\d+$")
_DEVICE_NAME = lazy_compile(r"^nvme\d+(?:n\d+)?$")
READER_BUDGET_S = 45.0  # the per-controller readers' Source timeout is 60 s
_TRANSPORTS = ("pcie", "rdma", "tcp", "fc", "loop", "apple-nvme")
_STATES = ("live", "connecting", "resetting", "new", "deleting", "dead", "only-admin", "(null)", "unknown")
_ANA_STATES = ("optimized", "non-optimized", "inaccessible", "persistent-loss", "change")

# ---------------------------------------------------------------------------------------------------
# the per-controller capture (smart-log, id-ctrl): devices are only known at capture time


def run_nvme(argv: list[str], timeout: float = 10.0) -> str:
    """Run one nvme-cli command through the runner (timeout, group kill, one copy at a time);
    its stdout, or ``error: …`` (never raises)."""
    result = run_command("nvme", argv, timeout)
    text = result.data.decode("utf-8", errors="replace")
    if result.status is ArtifactStatus.OK or text.strip():
        return text
    return f"error: {result.detail}"


def controllers_under(host_root: Path) -> list[str]:
    """Controller names (nvme0, …) listed in /sys/class/nvme under the host root."""
    try:
        return sorted((entry.name for entry in (host_root / "sys/class/nvme").iterdir()), key=_natural)
    except OSError:
        return []


def _natural(name: str) -> tuple[str, int]:
    digits = re.search(r"(?<!\d)(\d+)$", name)
    return (name[: digits.start()] if digits else name, int(digits[1]) if digits else -1)


def per_controller_reader(subcommand: str) -> Callable[[Path], bytes]:
    """Reader running ``nvme <subcommand> /dev/nvmeX -o json`` for each controller.

    Only on the live host (host root ``/``): the device nodes of a sysfs dump are not there.
    """

    def read(host_root: Path) -> bytes:
        outputs: dict[str, str] = {}
        try:
            live = os.path.realpath(host_root) == "/"
        except (OSError, ValueError):
            live = False
        deadline = time.monotonic() + READER_BUDGET_S
        for name in controllers_under(host_root) if live else []:
            if not _CTRL_NAME.match(name):
                continue
            if time.monotonic() > deadline:  # many hung controllers must not stall the whole capture
                outputs[name] = "error: skipped, time budget of the capture spent"
            else:
                outputs[name] = run_nvme(["nvme", subcommand, f"/dev/{name}", "-o", "json"])
        # nothing to ask (no controllers, or a dump): empty, so the capture says "missing", not "ok"
        return json.dumps(outputs, indent=1).encode() if outputs else b""

    return read


# ---------------------------------------------------------------------------------------------------
# shared


def _lower_keys(value: Any) -> dict[str, Any]:
    """nvme-cli 2.7 capitalised some keys ("Temperature", "Value"): look keys up case-insensitively."""
    return {str(key).lower(): item for key, item in value.items()} if isinstance(value, dict) else {}


def _per_device_documents(text: str, what: str, marker: str) -> list[tuple[str | None, Any, str | None]]:
    """(device, document, error) for the reader's ``{"nvme0": "<json>"}`` wrapper or one pasted doc."""
    document, _ = load_pasted_json(text, what)
    if isinstance(document, dict) and document and all(_CTRL_NAME.match(str(key)) for key in document):
        found: list[tuple[str | None, Any, str | None]] = []
        for device, raw in document.items():
            if isinstance(raw, dict):
                found.append((device, raw, None))
                continue
            try:
                found.append((device, json.loads(str(raw)), None))
            except ValueError:
                found.append((device, None, text_or_none(raw) or "no output"))
        return found
    if isinstance(document, dict) and document == {}:
        return []
    if isinstance(document, dict) and marker in _lower_keys(document):
        return [(None, document, None)]
    raise ParseError(f"JSON without '{marker}' (expected {what})")


def _device_line(find: Any, device: str | None, fallback: str) -> tuple[int, str]:
    return find(rf'"{device}"\s*:' if device else json_key(fallback))


# ---------------------------------------------------------------------------------------------------
# nvme list -o json


def _namespace(raw: dict[str, Any], controller: dict[str, Any] | None, provenance: dict) -> dict[str, Any]:
    raw = _lower_keys(raw)
    name_field = raw.get("namespace")
    # simple list: NameSpace is the NSID (int); verbose tree: the block device name (issue #225)
    device = name_field if isinstance(name_field, str) else None
    path = text_or_none(raw.get("devicepath"))
    device = device or (path.rsplit("/", 1)[-1] if path else None)
    nsid = to_int(raw.get("nsid")) if "nsid" in raw else to_int(name_field)
    controller = controller or {}
    return {
        "device": device,
        "device_path": path or (f"/dev/{device}" if device else None),
        "generic_path": text_or_none(raw.get("genericpath") or raw.get("generic")),
        "nsid": nsid,
        "controller": controller.get("name"),
        "subsystem": controller.get("subsystem"),
        "model": text_or_none(raw.get("modelnumber")) or controller.get("model"),
        "serial": text_or_none(raw.get("serialnumber")) or controller.get("serial"),
        "firmware": text_or_none(raw.get("firmware")) or controller.get("firmware"),
        "used_bytes": size_bytes(raw.get("usedbytes"))[0],
        "physical_size_bytes": size_bytes(raw.get("physicalsize"))[0],
        "maximum_lba": size_bytes(raw.get("maximumlba"))[0],
        "sector_size": to_int(raw.get("sectorsize")),
        "src": provenance,
    }


def _verbose_controller(raw: dict[str, Any], subsystem: dict[str, Any], provenance: dict) -> dict[str, Any]:
    raw = _lower_keys(raw)
    address = text_or_none(raw.get("address"))
    return {
        "name": text_or_none(raw.get("controller")),
        "cntlid": to_int(raw.get("cntlid")),
        "transport": text_or_none(raw.get("transport")),
        "address": address,
        **split_address(address),
        "state": text_or_none(raw.get("state")),
        "subsystem": subsystem.get("subsystem"),
        "subsystem_nqn": text_or_none(subsystem.get("subsystemnqn")),
        "model": text_or_none(raw.get("modelnumber")),
        "serial": text_or_none(raw.get("serialnumber")),
        "firmware": text_or_none(raw.get("firmware")),
        "src": provenance,
    }


def _walk_verbose(devices: list[Any], artifact: str, find: Any) -> tuple[list, list]:
    """v1.x verbose: Devices are subsystems; v2.x: Devices are hosts holding Subsystems."""
    subsystems = []
    for host in devices:
        host = _lower_keys(host)
        subsystems += host.get("subsystems", []) if "subsystems" in host else [host]
    controllers: list[dict[str, Any]] = []
    namespaces: list[dict[str, Any]] = []
    for subsystem in subsystems:
        subsystem = _lower_keys(subsystem)
        for ctrl_raw in subsystem.get("controllers") or []:
            if not isinstance(ctrl_raw, dict):
                continue
            number, line = find(json_key("Controller", str(_lower_keys(ctrl_raw).get("controller"))))
            controller = _verbose_controller(ctrl_raw, subsystem, src(artifact, number, line))
            controllers.append(controller)
            for ns_raw in _lower_keys(ctrl_raw).get("namespaces") or []:
                if isinstance(ns_raw, dict):
                    number, line = find(json_key("NameSpace"))
                    namespaces.append(_namespace(ns_raw, controller, src(artifact, number, line)))
        # shared (multipath) namespaces hang under the subsystem, not a controller
        shared_owner = {"subsystem": text_or_none(subsystem.get("subsystem"))}
        for ns_raw in subsystem.get("namespaces") or []:
            if isinstance(ns_raw, dict):
                number, line = find(json_key("NameSpace"))
                namespaces.append(_namespace(ns_raw, shared_owner, src(artifact, number, line)))
    return namespaces, controllers


def parse_list(text: str, artifact: str) -> Section:
    if nvme_list_text.is_text(text):  # `nvme list` as printed
        return nvme_list_text.parse(text, artifact)
    document, _ = load_pasted_json(text, "nvme list -o json")
    devices = _lower_keys(document).get("devices")
    if not isinstance(devices, list):
        raise ParseError("JSON without a 'Devices' list (expected `nvme list -o json`)")
    devices = [item for item in devices if isinstance(item, dict)]
    find = line_finder(text)
    verbose = any({"subsystems", "controllers"} & set(_lower_keys(item)) for item in devices)
    if verbose:
        namespaces, controllers = _walk_verbose(devices, artifact, find)
        return {"layout": "verbose", "namespaces": namespaces, "controllers": controllers}
    namespaces = []
    for raw in devices:
        number, line = find(json_key("DevicePath"))
        namespaces.append(_namespace(raw, None, src(artifact, number, line)))
    return {"layout": "simple", "namespaces": namespaces, "controllers": []}


def recognise_list(text: str) -> bool:
    head = "\n".join(head_lines(text, 100))
    if nvme_list_text.is_text(head):
        return True
    return bool(re.search(r'"Devices"\s*:', head)) and bool(
        re.search(r'"(DevicePath|Subsystems|SubsystemNQN)"\s*:', head)
    )


# ---------------------------------------------------------------------------------------------------
# nvme list-subsys: JSON


def _json_path(raw: Any, subsystem: dict[str, Any], provenance: dict, nsid: int | None = None) -> dict:
    raw = _lower_keys(raw)
    address = text_or_none(raw.get("address"))
    name = text_or_none(raw.get("name")) or text_or_none(raw.get("controller"))
    return {
        "name": name if name != "(null)" else None,
        "subsystem": subsystem["name"],
        "subsystem_nqn": subsystem["nqn"],
        "transport": text_or_none(raw.get("transport")),
        "address": address,
        **split_address(address),
        "state": text_or_none(raw.get("state")),
        "ana_state": text_or_none(raw.get("anastate")),
        "nsid": nsid,
        "src": provenance,
    }


def _json_subsystem(raw: dict[str, Any], host_nqn: str | None, provenance: dict) -> dict[str, Any]:
    return {
        "name": text_or_none(raw.get("name")),
        "nqn": text_or_none(raw.get("nqn")),
        "iopolicy": text_or_none(raw.get("iopolicy")),
        "type": text_or_none(raw.get("type")),
        "model": text_or_none(raw.get("model")),
        "host_nqn": host_nqn,
        "src": provenance,
    }


def _subsystem_entries(document: Any) -> list[tuple[str | None, dict[str, Any]]]:
    """(host NQN, subsystem object) pairs from the 1.x object or the 2.x array of hosts."""
    hosts = document if isinstance(document, list) else [document]
    entries = []
    for host in hosts:
        host = _lower_keys(host)
        host_nqn = text_or_none(host.get("hostnqn"))
        for subsystem in host.get("subsystems") or []:
            if isinstance(subsystem, dict):
                entries.append((host_nqn, _lower_keys(subsystem)))
    return entries


def _parse_subsys_json(text: str, artifact: str) -> Section:
    document, _ = load_pasted_json(text, "nvme list-subsys -o json")
    entries = _subsystem_entries(document)
    if not entries and not (isinstance(document, list) and not document):
        raise ParseError("JSON without 'Subsystems' (expected `nvme list-subsys -o json`)")
    find = line_finder(text)
    subsystems: list[dict[str, Any]] = []
    paths: list[dict[str, Any]] = []
    for host_nqn, raw in entries:
        if "name" not in raw and "paths" in raw and subsystems:
            # nvme-cli <= 1.8.1 bug: the Paths of the previous subsystem as a separate element
            owner = subsystems[-1]
        else:
            number, line = find(json_key("Name", str(raw.get("name"))))
            owner = _json_subsystem(raw, host_nqn, src(artifact, number, line))
            subsystems.append(owner)
        for path in raw.get("paths") or []:
            number, line = find(json_key("Name") + "|" + json_key("Controller"))
            paths.append(_json_path(path, owner, src(artifact, number, line)))
        for namespace in raw.get("namespaces") or []:
            namespace = _lower_keys(namespace)
            for path in namespace.get("paths") or []:
                number, line = find(json_key("Name") + "|" + json_key("Controller"))
                paths.append(
                    _json_path(path, owner, src(artifact, number, line), to_int(namespace.get("nsid")))
                )
    return _with_counts(subsystems, paths)


# ---------------------------------------------------------------------------------------------------
# nvme list-subsys / show-topology: text

_SUBSYS_LINE = lazy_compile(r"^(?P<name>nvme-subsys\d+)\s+-\s+NQN=(?P<nqn>(?:.*\S)?)\s*$")
_NS_LINE = lazy_compile(r"^\s*\+-\s*ns(?: id)?\s+(?P<nsid>\d+)\s*$")  # "ns id 1" (2.2), "ns 1" (later)
_PATH_LINE = lazy_compile(
    r"^\s*\+-\s*(?P<name>\S+)\s+(?P<transport>" + "|".join(_TRANSPORTS) + r")\s+(?P<rest>.*)$"
)
_KEY_VALUE_TEXT = lazy_compile(r"^(hostnqn|iopolicy)=(.*)$", re.IGNORECASE)


def _split_path_rest(rest: str) -> tuple[str, str | None, str | None]:
    """``traddr=…,trsvcid=… live optimized`` -> (address, state, ana_state).

    1.x separates address parts with spaces, so the state is found from the END of the line.
    """
    words = rest.split()
    ana_state = words.pop() if words and words[-1] in _ANA_STATES else None
    state = words.pop() if words and words[-1] in _STATES else None
    if state == "(null)":  # nvme-cli 2.0-rc printed a path in 'connecting' as (null)
        state = None
    return " ".join(words), state, ana_state


def _parse_subsys_text(text: str, artifact: str) -> Section:
    subsystems: list[dict[str, Any]] = []
    paths: list[dict[str, Any]] = []
    nsid: int | None = None
    for number, line in strip_prompt_lines(text):
        if match := _SUBSYS_LINE.match(line.strip()):
            subsystems.append(
                {
                    "name": match["name"],
                    "nqn": match["nqn"] or None,
                    "iopolicy": None,
                    "type": None,
                    "model": None,
                    "host_nqn": None,
                    "src": src(artifact, number, line),
                }
            )
            nsid = None
        elif (match := _KEY_VALUE_TEXT.match(line.strip())) and subsystems:
            subsystems[-1]["iopolicy" if match[1].lower() == "iopolicy" else "host_nqn"] = match[2].strip()
        elif match := _NS_LINE.match(line):
            nsid = int(match["nsid"])
        elif (match := _PATH_LINE.match(line)) and subsystems:
            address, state, ana_state = _split_path_rest(match["rest"])
            path = _json_path(
                {"name": match["name"], "transport": match["transport"], "address": address},
                subsystems[-1],
                src(artifact, number, line),
                nsid,
            )
            paths.append(path | {"state": state, "ana_state": ana_state})
    if not subsystems:
        raise ParseError("no 'nvme-subsysN - NQN=…' lines (expected `nvme list-subsys` output)")
    return _with_counts(subsystems, paths)


def _with_counts(subsystems: list[dict[str, Any]], paths: list[dict[str, Any]]) -> Section:
    # The paths grouped by subsystem name in one pass (a scan of every path for each subsystem
    # was quadratic: 10k subsystems of one path each took 16 s).
    controllers: dict[Any, set[Any]] = {}
    live: dict[Any, set[Any]] = {}
    for path in paths:
        controller = path["name"] or path["address"]
        controllers.setdefault(path["subsystem"], set()).add(controller)
        if path["state"] == "live":
            live.setdefault(path["subsystem"], set()).add(controller)
    for subsystem in subsystems:
        subsystem["path_count"] = len(controllers.get(subsystem["name"], ()))
        subsystem["live_path_count"] = len(live.get(subsystem["name"], ()))
    return {"subsystems": subsystems, "paths": paths}


def parse_subsys(text: str, artifact: str) -> Section:
    starts_json = any(line.lstrip().startswith(("{", "[")) for line in head_lines(text, 20))
    return _parse_subsys_json(text, artifact) if starts_json else _parse_subsys_text(text, artifact)


def recognise_subsys(text: str) -> bool:
    head = "\n".join(head_lines(text, 100))
    if re.search(r'"Subsystems"\s*:', head) and re.search(r'"(NQN|Paths)"\s*:', head):
        return not re.search(r'"Devices"\s*:', head)
    return any(_SUBSYS_LINE.match(line.strip()) for line in head.split("\n"))


# ---------------------------------------------------------------------------------------------------
# nvme smart-log -o json

_WARNING_BITS = {  # NVMe base spec, SMART log byte 0; object keys of nvme-cli -H / 2.11-2.12
    "available_spare": (0, "available_spare"),
    "temperature": (1, "temp_threshold"),
    "reliability_degraded": (2, "reliability_degraded"),
    "read_only": (3, "ro"),
    "volatile_backup_failed": (4, "vmbu_failed"),
    "pmr_read_only": (5, "pmr_ro"),
}


def _critical_warning(value: Any) -> tuple[int | None, dict[str, bool | None]]:
    """The int (1.x, 2.13+) or the object form (``-H``, 2.11/2.12) -> (value, named flags)."""
    if isinstance(value, dict):
        fields = _lower_keys(value)
        number = to_int(fields.get("value"))
        flags = {}
        for flag, (bit, key) in _WARNING_BITS.items():
            if key in fields and to_int(fields[key]) is not None:
                flags[flag] = to_int(fields[key]) != 0
            else:
                flags[flag] = bool(number >> bit & 1) if number is not None else None
        return number, flags
    number = to_int(value)
    return number, {
        flag: (bool(number >> bit & 1) if number is not None else None)
        for flag, (bit, _) in _WARNING_BITS.items()
    }


def _kelvin_to_celsius(value: Any) -> int | None:
    kelvin = to_int(value)
    return kelvin - 273 if kelvin is not None and kelvin > 0 else None


def _smart_entry(device: str | None, raw: Any, error: str | None, provenance: dict) -> dict[str, Any]:
    fields = _lower_keys(raw)
    number, flags = _critical_warning(fields.get("critical_warning"))
    if raw is not None and "critical_warning" not in fields and error is None:
        error = "no critical_warning key"
    units_read, units_written = (
        to_int(fields.get("data_units_read")),
        to_int(fields.get("data_units_written")),
    )
    return {
        "device": device,
        "temperature_c": _kelvin_to_celsius(fields.get("temperature")),
        "critical_warning": number,
        "warnings": flags,
        "avail_spare_pct": to_int(fields.get("avail_spare")),
        "spare_thresh_pct": to_int(fields.get("spare_thresh")),
        "percent_used": to_int(fields.get("percent_used")),
        "media_errors": to_int(fields.get("media_errors")),
        "num_err_log_entries": to_int(fields.get("num_err_log_entries")),
        "power_on_hours": to_int(fields.get("power_on_hours")),
        "unsafe_shutdowns": to_int(fields.get("unsafe_shutdowns")),
        "warning_temp_time_min": to_int(fields.get("warning_temp_time")),
        "critical_comp_time_min": to_int(fields.get("critical_comp_time")),
        # host-controlled thermal management: transitions into throttling at T1 / T2
        "thm_temp1_trans_count": to_int(fields.get("thm_temp1_trans_count")),
        "thm_temp2_trans_count": to_int(fields.get("thm_temp2_trans_count")),
        # data units are thousands of 512-byte blocks
        "data_read_bytes": units_read * 512000 if units_read is not None else None,
        "data_written_bytes": units_written * 512000 if units_written is not None else None,
        "error": error,
        "src": provenance,
    }


def parse_smart(text: str, artifact: str) -> Section:
    if not text.lstrip().startswith(("{", "[")) and nvme_kv_text.is_smart_text(text):
        return {
            "devices": [
                _smart_entry(device, fields, None, src(artifact, number, line))
                for device, fields, number, line in nvme_kv_text.smart_logs(text)
            ]
        }
    find = line_finder(text)
    devices = []
    for device, raw, error in _per_device_documents(text, "nvme smart-log -o json", "critical_warning"):
        number, line = _device_line(find, device, "critical_warning")
        devices.append(_smart_entry(device, raw, error, src(artifact, number, line)))
    return {"devices": devices}


def combine_smart(sections: Sequence[Section]) -> Section:
    """SMART logs of one host's drives given one file each (a sos report keeps one per
    namespace): every device once, the first file's entry kept."""
    return _first_per_device(sections, "devices")


def _first_per_device(sections: Sequence[Section], key: str) -> Section:
    """The entries under ``key`` of several outputs, each device once (the first file's: two
    namespaces of one controller give it twice); entries naming no device all kept."""
    entries: list[dict[str, Any]] = []
    seen: set[str] = set()
    for section in sections:
        for entry in section[key]:
            name = str(entry.get("device"))
            if entry.get("device") is None or name not in seen:
                entries.append(entry)
                seen.add(name)
    return {key: entries}


def recognise_smart(text: str) -> bool:
    head = "\n".join(head_lines(text, 100))
    return bool(
        re.search(r'"critical_warning"\s*:', head)
        and re.search(r'"(temperature|avail_spare)"\s*:', head, re.I)
    ) or nvme_kv_text.is_smart_text(text)


# ---------------------------------------------------------------------------------------------------
# nvme id-ctrl -o json


def _nvme_version(value: Any) -> str | None:
    """``ver`` 66048 = 0x10200 = NVMe 1.2.0."""
    number = to_int(value)
    if not number:
        return None
    return f"{number >> 16}.{number >> 8 & 0xFF}.{number & 0xFF}"


def _id_ctrl_entry(device: str | None, raw: Any, error: str | None, provenance: dict) -> dict[str, Any]:
    fields = _lower_keys(raw)
    cmic = to_int(fields.get("cmic"))
    vwc = to_int(fields.get("vwc"))
    return {
        "device": device,
        "model": text_or_none(fields.get("mn")),
        "serial": text_or_none(fields.get("sn")),
        "firmware": text_or_none(fields.get("fr")),
        "subnqn": text_or_none(fields.get("subnqn")),
        "vid": to_int(fields.get("vid")),
        "cntlid": to_int(fields.get("cntlid")),
        "version": _nvme_version(fields.get("ver")),
        "mdts": to_int(fields.get("mdts")),
        "kas": to_int(fields.get("kas")),
        "cmic": cmic,
        "multi_controller": bool(cmic & 0b10) if cmic is not None else None,
        "anacap": to_int(fields.get("anacap")),
        "anatt": to_int(fields.get("anatt")),
        "volatile_write_cache": bool(vwc & 1) if vwc is not None else None,
        # the drive's own warning / critical composite temperatures (Kelvin in id-ctrl; 0: not reported)
        "wctemp_c": _kelvin_to_celsius(fields.get("wctemp")),
        "cctemp_c": _kelvin_to_celsius(fields.get("cctemp")),
        "error": error if raw is not None or error else "no output",
        "src": provenance,
    }


def parse_id_ctrl(text: str, artifact: str) -> Section:
    named = _device_in_sos_name(artifact)  # the output itself names no device
    if not text.lstrip().startswith(("{", "[")) and nvme_kv_text.is_id_ctrl_text(text):
        return {
            "controllers": [
                _id_ctrl_entry(device or named, fields, None, src(artifact, number, line))
                for device, fields, number, line in nvme_kv_text.id_ctrl_blocks(text)
            ]
        }
    find = line_finder(text)
    controllers = []
    for device, raw, error in _per_device_documents(text, "nvme id-ctrl -o json", "mn"):
        number, line = _device_line(find, device, "vid")
        controllers.append(_id_ctrl_entry(device or named, raw, error, src(artifact, number, line)))
    return {"controllers": controllers}


def _device_in_sos_name(artifact: str) -> str | None:
    """The controller of a sos report's ``nvme id-ctrl`` file: sos names an output after its
    command line, ``/`` as ``.`` and spaces as ``_`` (``nvme id-ctrl -H /dev/nvme0n1`` is
    ``nvme_id-ctrl_-H_.dev.nvme0n1``). None for any other name: no device is guessed."""
    base = artifact.rpartition("/")[2]
    device = base.rpartition("_.dev.")[2] if base.startswith("nvme_id-ctrl_") else ""
    return nvme_kv_text.controller_of(device) if _DEVICE_NAME.match(device) else None


def combine_id_ctrl(sections: Sequence[Section]) -> Section:
    """Identify-controller outputs given one file each (a sos report keeps one per namespace):
    every controller once, the first file's entry kept."""
    return _first_per_device(sections, "controllers")


def recognise_id_ctrl(text: str) -> bool:
    head = "\n".join(head_lines(text, 100))
    return all(re.search(json_key(key), head) for key in ("vid", "sn", "mn", "fr")) or (
        nvme_kv_text.is_id_ctrl_text(text)
    )


# ---------------------------------------------------------------------------------------------------
# nvme id-ns (text and JSON)

_ID_NS_HEADER = lazy_compile(r"^NVME Identify Namespace (?P<nsid>\d+|0x[0-9a-fA-F]+):\s*$")
_ID_NS_COMMAND = lazy_compile(r"\bnvme\s+id-ns\s+(?:\S+\s+)*?/dev/(?P<device>nvme\d+n\d+)\b")
_LBAF_TEXT = lazy_compile(
    r"^lbaf\s+(?P<index>\d+)\s*:\s*ms:(?P<ms>\d+)\s+lbads:(?P<lbads>\d+)\s+rp:\S+(?P<in_use>\s+\(in use\))?"
)
_ID_NS_FIELD = lazy_compile(r"^(?P<key>flbas|dps|nguid|eui64|nsze)\s*:\s*(?P<value>\S+)\s*$")


def _id_ns_entry(
    device: str | None, fields: dict[str, Any], formats: list[dict[str, Any]], provenance: dict
) -> dict[str, Any]:
    flbas = to_int(fields.get("flbas"))
    index = (flbas & 0xF) | ((flbas & 0x60) >> 1) if flbas is not None else None
    marked = [f for f in formats if f.get("in_use")]
    in_use = marked[0] if marked else next((f for f in formats if f["index"] == index), None)
    dps = to_int(fields.get("dps"))
    return {
        "device": device,
        "nsid": to_int(fields.get("nsid")),
        "flbas": flbas,
        "format": in_use["index"] if in_use else index,
        "lba_bytes": in_use["lba_bytes"] if in_use else None,
        "metadata_bytes": in_use["metadata_bytes"] if in_use else None,
        "extended_lba": bool(flbas & 0x10) if flbas is not None else None,
        "pi_type": dps & 0x7 if dps is not None else None,
        "formats": formats,
        "nguid": text_or_none(fields.get("nguid")),
        "src": provenance,
    }


def _parse_id_ns_text(text: str, artifact: str) -> Section:
    namespaces: list[dict[str, Any]] = []
    current: tuple[str | None, dict[str, Any], list[dict[str, Any]], dict] | None = None
    named: str | None = None
    for number, line in numbered_lines(text):
        stripped = line.strip()
        if called := _ID_NS_COMMAND.search(stripped):
            named = called["device"]
        if header := _ID_NS_HEADER.match(stripped):
            if current:
                namespaces.append(_id_ns_entry(*current))
            current = (named, {"nsid": to_int(header["nsid"])}, [], src(artifact, number, line))
            named = None
        elif current and (lbaf := _LBAF_TEXT.match(stripped)):
            current[2].append(_format(lbaf["index"], lbaf["lbads"], lbaf["ms"], bool(lbaf["in_use"])))
            if lbaf["in_use"]:
                current = (current[0], current[1], current[2], src(artifact, number, line))
        elif current and (field := _ID_NS_FIELD.match(stripped)):
            current[1].setdefault(field["key"], field["value"])
    if current:
        namespaces.append(_id_ns_entry(*current))
    if not namespaces:
        raise ParseError("no 'NVME Identify Namespace N:' block (expected `nvme id-ns` output)")
    return {"namespaces": namespaces}


def _format(index: Any, lbads: Any, ms: Any, in_use: bool) -> dict[str, Any]:
    shift = to_int(lbads)
    return {
        "index": to_int(index),
        "lba_bytes": 1 << shift if shift is not None and 0 < shift < 32 else None,
        "metadata_bytes": to_int(ms),
        "in_use": in_use,
    }


def parse_id_ns(text: str, artifact: str) -> Section:
    if not text.lstrip().startswith(("{", "[")):
        return _parse_id_ns_text(text, artifact)
    find = line_finder(text)
    namespaces = []
    for device, raw, error in _per_device_documents(text, "nvme id-ns -o json", "lbafs"):
        fields = _lower_keys(raw)
        lbafs = [_lower_keys(f) for f in fields.get("lbafs") or [] if isinstance(f, dict)]
        formats = [
            _format(f.get("lbaf", n), f.get("ds"), f.get("ms"), bool(to_int(f.get("in_use"))))
            for n, f in enumerate(lbafs)
        ]
        number, line = _device_line(find, device, "flbas")
        namespaces.append(
            _id_ns_entry(device, fields, formats, src(artifact, number, line)) | {"error": error}
        )
    return {"namespaces": namespaces}


def recognise_id_ns(text: str) -> bool:
    head = "\n".join(head_lines(text, 100))
    if any(_ID_NS_HEADER.match(line.strip()) for line in head.split("\n")):
        return True
    return '"lbafs"' in head and '"flbas"' in head  # the keys, quoted as JSON quotes them


# ---------------------------------------------------------------------------------------------------
# nvme discover (text and JSON)

_DISCOVERY_ENTRY = lazy_compile(r"^=+\s*Discovery Log Entry\s+(\d+)\s*=+$")
_DISCOVERY_HEADER = lazy_compile(r"Discovery Log Number of Records\s+(\d+),\s*Generation counter\s+(\d+)")
_RECORD_KEYS = ("trtype", "adrfam", "subtype", "treq", "portid", "trsvcid", "subnqn", "traddr", "sectype")


def _record(fields: dict[str, Any], provenance: dict) -> dict[str, Any]:
    fields = _lower_keys(fields)
    record: dict[str, Any] = {key: text_or_none(fields.get(key)) for key in _RECORD_KEYS}
    record["portid"] = to_int(fields.get("portid"))
    record["src"] = provenance
    return record


def _parse_discover_json(text: str, artifact: str) -> Section:
    document, _ = load_pasted_json(text, "nvme discover -o json")
    fields = _lower_keys(document)
    if not isinstance(fields.get("records"), list):
        raise ParseError("JSON without 'records' (expected `nvme discover -o json`)")
    find = line_finder(text)
    records = []
    for raw in fields["records"]:
        if isinstance(raw, dict):
            number, line = find(json_key("trtype"))
            records.append(_record(raw, src(artifact, number, line)))
    return {
        "device": text_or_none(fields.get("device")),
        "genctr": to_int(fields.get("genctr")),
        "records": records,
    }


def _parse_discover_text(text: str, artifact: str) -> Section:
    records: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    start: tuple[int, str] = (1, "")
    genctr = None
    for number, line in strip_prompt_lines(text):
        stripped = line.strip()
        if header := _DISCOVERY_HEADER.search(stripped):
            genctr = int(header[2])
        elif _DISCOVERY_ENTRY.match(stripped):
            if current is not None:
                records.append(_record(current, src(artifact, *start)))
            current, start = {}, (number, line)
        elif current is not None and ":" in stripped:
            key, _, value = stripped.partition(":")
            current[key.strip().lower()] = value.strip()
    if current is not None:
        records.append(_record(current, src(artifact, *start)))
    if not records and genctr is None:
        raise ParseError("no 'Discovery Log Entry' blocks (expected `nvme discover` output)")
    return {"device": None, "genctr": genctr, "records": records}


def parse_discover(text: str, artifact: str) -> Section:
    starts_json = any(line.lstrip().startswith("{") for line in head_lines(text, 20))
    return _parse_discover_json(text, artifact) if starts_json else _parse_discover_text(text, artifact)


def recognise_discover(text: str) -> bool:
    head = "\n".join(head_lines(text, 100))
    if "Discovery Log Number of Records" in head or "Discovery Log Entry" in head:
        return True
    return bool(re.search(r'"records"\s*:', head) and re.search(r'"trtype"\s*:', head))


# ---------------------------------------------------------------------------------------------------

PROBES: tuple[Probe, ...] = (
    Probe(
        section="nvme_list",
        title="NVMe namespaces as nvme-cli lists them (model, serial, firmware, size)",
        sources=(Source("cmd/nvme-list.json", argv=("nvme", "list", "-o", "json"), needs_root=True),),
        parse=parse_list,
        recognise=recognise_list,
        paste_hint="`nvme list -o json`",
    ),
    Probe(
        section="nvme_subsys",
        title="NVMe subsystems and their controller paths (transport, address, state, ANA state)",
        sources=(
            Source("cmd/nvme-list-subsys.json", argv=("nvme", "list-subsys", "-o", "json")),
            Source("cmd/nvme-list-subsys.txt", argv=("nvme", "list-subsys")),
        ),
        parse=parse_subsys,
        recognise=recognise_subsys,
        paste_hint="`nvme list-subsys -o json` (or `nvme list-subsys`, `nvme show-topology`)",
    ),
    Probe(
        section="nvme_smart",
        title="NVMe SMART / health log per controller (critical warnings, spare, wear, media errors)",
        sources=(
            Source(
                "cmd/nvme-smart-log.json",
                reader=per_controller_reader("smart-log"),
                timeout=60.0,
                needs_root=True,
            ),
        ),
        parse=parse_smart,
        recognise=recognise_smart,
        combine=combine_smart,
        paste_hint="`nvme smart-log /dev/nvme0 -o json` (one per controller; the text output reads too)",
    ),
    Probe(
        section="nvme_id_ctrl",
        title="NVMe identify-controller per controller (model, serial, firmware, NQN, ANA/multipath caps)",
        sources=(
            Source(
                "cmd/nvme-id-ctrl.json",
                reader=per_controller_reader("id-ctrl"),
                timeout=60.0,
                needs_root=True,
            ),
        ),
        parse=parse_id_ctrl,
        recognise=recognise_id_ctrl,
        combine=combine_id_ctrl,
        paste_hint="`nvme id-ctrl /dev/nvme0 -o json`",
    ),
    Probe(
        section="nvme_id_ns",
        title="NVMe identify-namespace (LBA format in use: block size, metadata, protection information)",
        sources=(),  # paste only for now: the namespaces are known at capture time, as for id-ctrl
        parse=parse_id_ns,
        recognise=recognise_id_ns,
        paste_hint="`nvme id-ns /dev/nvme0n1` (or `-o json`)",
    ),
    Probe(
        # no capture source: discovery connects to a remote discovery controller (not read-only)
        section="nvme_discover",
        title="NVMe-oF discovery log entries (what a target offers: transport, address, port, NQN)",
        sources=(),  # paste only: `nvme discover` connects to a remote target, so it is never run
        parse=parse_discover,
        recognise=recognise_discover,
        paste_hint="`nvme discover -t <tcp|rdma> -a <target> -o json`",
    ),
)
