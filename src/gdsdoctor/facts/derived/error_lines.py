"""``derived.error_lines``: the input lines that are errors of the storage path now.

Each reader marks its error lines (gdsdoctor.probes.error_lines: the kernel log's ``dmesg.error_lines``,
the job's ``app_log.error_lines``, cufile.log's ERROR entries); the kernel log's are already
judged by the lifecycle (this boot, within ``--since``, not an event now history). Errors on a
removable disk (a USB stick or card reader: the ``scsi_attach`` events name them) are off the
path and left out, and so is a hung task whose stack never enters storage code
(``derived.devices.hung_storage_tasks`` says which are storage's). Each item: ``{artifact,
line, text, family, device, kind, section, age_s}``.

The report lists the ones no fired cause cites as *unexplained* (report/unexplained.py).
"""

from __future__ import annotations

from typing import Any

MAX_LINES = 2000


def derive(facts: dict[str, Any], derived: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    dmesg = _ok(facts, "dmesg")
    removable = _removable(dmesg)
    hung = _hung_in_storage(derived)
    for line in _items(dmesg.get("error_lines")):
        if line.get("current_boot") is False or line.get("device") in removable:
            continue
        if line.get("family") == "hang" and _at(line) not in hung:
            continue  # a task hung outside storage code (its stack says so: derived.devices)
        found.append(_item(line, "dmesg"))
    for line in _items(_ok(facts, "app_log").get("error_lines")):
        found.append(_item(line, "app_log"))
    for entry in _items(_ok(facts, "cufile_log").get("entries")):
        if str(entry.get("level") or "").upper() == "ERROR":
            found.append(_item({**entry, "family": "cufile"}, "cufile_log"))
    return found[-MAX_LINES:]


def _item(line: dict[str, Any], section: str) -> dict[str, Any]:
    src = line.get("src") if isinstance(line.get("src"), dict) else {}
    return {
        "artifact": src.get("artifact"),
        "line": src.get("line"),
        "text": str(src.get("text") or "").strip()[:300],
        "family": line.get("family"),
        "device": line.get("device"),
        "kind": line.get("kind"),
        "section": section,
        "age_s": line.get("age_s"),
    }


def _hung_in_storage(derived: dict[str, Any]) -> set[tuple[Any, Any]]:
    devices = derived.get("devices") if isinstance(derived.get("devices"), dict) else {}
    return {_at(task) for task in _items(devices.get("hung_storage_tasks"))}


def _at(item: dict[str, Any]) -> tuple[Any, Any]:
    src = item.get("src") if isinstance(item.get("src"), dict) else {}
    return src.get("artifact"), src.get("line")


def _removable(dmesg: dict[str, Any]) -> set[str]:
    """Disks the kernel log says are removable media or behind a USB bridge."""
    names = set()
    for event in _items(dmesg.get("events")) + _items(dmesg.get("history")):
        if event.get("kind") == "scsi_attach" and isinstance(event.get("device"), str):
            names.add(event["device"])
    return names


def _ok(facts: dict[str, Any], name: str) -> dict[str, Any]:
    section = facts.get(name)
    return section if isinstance(section, dict) and section.get("status") == "ok" else {}


def _items(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
