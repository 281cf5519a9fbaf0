"""The facts ``gdsdoctor diff`` puts side by side: what a fix or an upgrade on one node moves.

Each row of :data:`FACTS` names a fact and how to read it from the facts document: a single
value (the kernel release, the driver, nvidia-fs), a set (the loaded modules: those added and
removed are listed) or a mapping (a value per mount point, PCIe function, cufile.json key,
interface: each key whose value changed, appeared or went). Only sections read ``ok`` in both
captures are compared: a section one capture lacks (a paste beside a bundle, a sos report
without the plugin) is listed once in ``sections`` ("read only in BEFORE"), never as a change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Reader = Callable[[dict[str, Any]], Any]


def _section(facts: dict[str, Any], name: str) -> dict[str, Any] | None:
    section = facts.get(name)
    return section if isinstance(section, dict) and section.get("status") == "ok" else None


def _value(section: str, key: str) -> tuple[str, Reader]:
    return section, lambda s: s.get(key)


def _modules(section: dict[str, Any]) -> set[str]:
    return {str(name) for name in section.get("names") or []}


def _mounts(section: dict[str, Any]) -> dict[str, str]:
    """Each mount point's filesystem type and options; pseudo and system mounts left out (the
    data mounts ``derived.storage`` judges are read from the derived section)."""
    return {
        str(m["mountpoint"]): f"{m.get('fstype')} {m.get('options')}"
        for m in section.get("checkpoint_mounts") or []
        if isinstance(m, dict) and m.get("mountpoint")
    }


def _links(section: dict[str, Any]) -> dict[str, str]:
    """Each PCIe function's negotiated link (``lspci``'s LnkSta): width and speed."""
    links = {}
    for device in section.get("devices") or []:
        status = device.get("lnk_sta") if isinstance(device, dict) else None
        if isinstance(status, dict) and (status.get("width") or status.get("speed_gts")):
            links[str(device["bdf"])] = f"x{status.get('width')} {status.get('speed_gts')} GT/s"
    return links


def _cufile(section: dict[str, Any]) -> dict[str, str]:
    """The keys cufile.json sets, with their values (the defaults it leaves alone are not shown)."""
    config = section.get("config") or {}
    return {str(key): _text(config.get(key)) for key in section.get("explicit") or []}


def _mtus(section: dict[str, Any]) -> dict[str, str]:
    return {
        str(i["name"]): str(i.get("mtu"))
        for i in section.get("interfaces") or []
        if isinstance(i, dict) and i.get("name") and not i.get("virtual")
    }


def _io_timeout(section: dict[str, Any]) -> Any:
    core = section.get("nvme_core")
    return core.get("io_timeout_s") if isinstance(core, dict) else None


def _derived_storage(facts: dict[str, Any]) -> dict[str, Any] | None:
    derived = facts.get("derived")
    storage = derived.get("storage") if isinstance(derived, dict) else None
    return storage if isinstance(storage, dict) else None


# (label, section, reader, shape): shape "value", "set" or "map". "derived.storage" is read from
# the derived facts (always computed; compared only when both captures read the mount table).
FACTS: tuple[tuple[str, str, Reader, str], ...] = (
    ("kernel", *_value("kernel", "release"), "value"),
    ("OS", *_value("os_release", "pretty_name"), "value"),
    ("NVIDIA driver", *_value("nvidia_driver", "version"), "value"),
    ("nvidia-fs", *_value("nvidia_fs_version", "version"), "value"),
    ("kernel command line", *_value("cmdline", "raw"), "value"),
    ("NVMe I/O timeout (s)", "nvme_sysfs", _io_timeout, "value"),
    ("modules", "modules", _modules, "set"),
    ("mount options", "derived.storage", _mounts, "map"),
    ("PCIe link", "lspci", _links, "map"),
    ("cufile.json", "cufile_json", _cufile, "map"),
    ("MTU", "netdev", _mtus, "map"),
)


def _read(facts: dict[str, Any], section: str, reader: Reader) -> Any:
    if section == "derived.storage":
        found = _derived_storage(facts) if _section(facts, "mounts") else None
    else:
        found = _section(facts, section)
    return None if found is None else reader(found)


def changed(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """The facts that differ, one row each: ``{fact, key, before, after}`` (``key``: the mount
    point, PCIe function, cufile.json key or interface of a mapping; a module's name for a set,
    with ``before``/``after`` null where it was absent)."""
    rows: list[dict[str, Any]] = []
    for label, section, reader, shape in FACTS:
        old, new = _read(before, section, reader), _read(after, section, reader)
        if old is None or new is None or old == new:
            continue
        if shape == "value":
            rows.append({"fact": label, "key": None, "before": _text(old), "after": _text(new)})
        elif shape == "set":
            rows += [{"fact": label, "key": key, "before": None, "after": key} for key in sorted(new - old)]
            rows += [{"fact": label, "key": key, "before": key, "after": None} for key in sorted(old - new)]
        else:
            for key in sorted(old.keys() | new.keys()):
                if old.get(key) != new.get(key):
                    rows.append({"fact": label, "key": key, "before": old.get(key), "after": new.get(key)})
    return rows


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def sections_read_once(before: dict[str, Any], after: dict[str, Any]) -> dict[str, list[str]]:
    """The facts sections one capture read and the other did not (never compared)."""
    read = [{name for name in facts if _section(facts, name)} for facts in (before, after)]
    return {"only_before": sorted(read[0] - read[1]), "only_after": sorted(read[1] - read[0])}
