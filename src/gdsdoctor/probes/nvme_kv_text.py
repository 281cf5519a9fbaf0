"""nvme-cli's ``key : value`` outputs as printed (no ``-o json``), read into the fields its JSON
carries: ``nvme smart-log`` (also smartctl's NVMe health section) and ``nvme id-ctrl``.

``nvme smart-log``::

    Smart Log for NVME device:nvme0n1 namespace-id:ffffffff
    critical_warning                        : 0
    temperature                             : 48 C (321 Kelvin)
    available_spare                         : 100%
    data_units_read                         : 83,159,341
    Warning Temperature Time                : 0

Each log becomes ``(device, fields, line number, header line)``, ``fields`` keyed and valued as
``-o json`` would have them (``avail_spare``, ``temperature`` in Kelvin, plain integers), so one
function judges both. nvme-cli writes the keys in several ways across versions (``Data Units
Read``, ``data_units_read``), temperatures in C, °C or K, counters with thousands separators and
with a size after them (``1189327430 (608.94 TB)``). A log read from a namespace
(``device:nvme0n1``) is its controller's (``nvme0``). ``Additional Smart Log`` (vendor plugins) is
another format, not this one. ``smartctl -a /dev/nvme0`` prints the same log under ``SMART/Health
Information (NVMe Log 0x02)`` with its own names (``Media and Data Integrity Errors``,
``Temperature: 32 Celsius``): read alike.

``nvme id-ctrl``::

    NVME Identify Controller:
    vid       : 0x144d
    mn        : SAMSUNG MZVLB256HAHQ-000L7
    ver       : 0x10200

Its fields keep their JSON names and come as the text (``0x144d``; the JSON parser reads hex), the
device named by a pasted ``nvme id-ctrl /dev/nvme0`` line, else None (a sos report's file names it
in its own name: ``nvme_cli.parse_id_ctrl``).
"""

from __future__ import annotations

import re
from typing import Any

from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import head_lines, numbered_lines
from gdsdoctor.probes.text import grouped_int

# A block's header, naming its device (nvme smart-log) or not (smartctl's section, id-ctrl), and
# the command line before a block that names the device when its header does not.
_SMART_HEADER = lazy_compile(
    r"^(?:Smart Log for NVME device:\s*(?P<device>\S+)|SMART/Health Information \(NVMe Log 0x02)"
)
_SMART_COMMAND = lazy_compile(r"smartctl\s.*?/dev/(?P<device>nvme\d+(?:n\d+)?)\b")
_ID_CTRL_HEADER = lazy_compile(r"^NVME Identify Controller:\s*$")
_ID_CTRL_COMMAND = lazy_compile(r"\bnvme\s+id-ctrl\s+(?:\S+\s+)*?/dev/(?P<device>nvme\d+(?:n\d+)?)\b")
_FIELD = lazy_compile(r"^(?P<key>[A-Za-z](?:[\w .]*[\w.])?)\s*:\s*(?P<value>\S(?:.*\S)?)\s*$")
_NAMESPACE = lazy_compile(r"^(nvme\d+)n\d+(?:p\d+)?$")
_NUMBER = lazy_compile(
    r"^(0x[0-9a-fA-F]+|\d{1,3}(?:([,.'\u00a0\u202f\u2009])\d{3})(?:\2\d{3})*(?![\d.,])|\d[\d,]*)"
)
_TEMPERATURE = lazy_compile(
    r"^(?P<value>-?\d+)\s*(?:°\s*)?(?P<unit>[CK])\b(?:.*?\((?P<kelvin>\d+)\s*K)?", re.IGNORECASE
)
# the names nvme-cli's text gives, mapped to its JSON's
_JSON_KEY = {
    "available_spare": "avail_spare",
    "available_spare_threshold": "spare_thresh",
    "percentage_used": "percent_used",
    "warning_temperature_time": "warning_temp_time",
    "critical_composite_temperature_time": "critical_comp_time",
    "thermal_management_t1_trans_count": "thm_temp1_trans_count",
    "thermal_management_t2_trans_count": "thm_temp2_trans_count",
    # smartctl's names
    "media_and_data_integrity_errors": "media_errors",
    "error_information_log_entries": "num_err_log_entries",
    "warning_comp._temperature_time": "warning_temp_time",
    "critical_comp._temperature_time": "critical_comp_time",
}
Block = tuple[str | None, dict[str, Any], int, str]  # device, fields, line number, header line


def is_smart_text(text: str) -> bool:
    return _has_header(text, _SMART_HEADER)


def is_id_ctrl_text(text: str) -> bool:
    return _has_header(text, _ID_CTRL_HEADER)


def smart_logs(text: str) -> list[Block]:
    """Every ``Smart Log for NVME device:`` block of ``text``, and smartctl's NVMe health
    section, their fields under the JSON's names with the JSON's values."""
    logs = []
    for device, fields, number, line in _blocks(text, _SMART_HEADER, _SMART_COMMAND):
        values: dict[str, Any] = {}
        for printed, text_value in fields.items():
            key = re.sub(r"\s+", "_", printed.lower())
            key = _JSON_KEY.get(key, key)
            value = _kelvin(text_value) if key == "temperature" else _integer(text_value)
            if value is not None:
                values.setdefault(key, value)
        logs.append((device, values, number, line))
    return logs


def id_ctrl_blocks(text: str) -> list[Block]:
    """Every ``NVME Identify Controller:`` block, its fields as printed."""
    return _blocks(text, _ID_CTRL_HEADER, _ID_CTRL_COMMAND)


def _has_header(text: str, header: re.Pattern[str]) -> bool:
    return any(header.match(line.strip()) for line in head_lines(text, 400))


def _blocks(text: str, header: re.Pattern[str], command: re.Pattern[str]) -> list[Block]:
    """The ``key : value`` lines under each header line. A block's device is the one its header
    names (``device:nvme0n1``), else the one the command line just before it names, else None."""
    blocks: list[Block] = []
    named = None
    for number, line in numbered_lines(text):
        stripped = line.strip()
        if called := command.search(stripped):
            named = controller_of(called["device"])
        if opened := header.match(stripped):
            own = opened.groupdict().get("device")
            blocks.append((controller_of(own) if own else named, {}, number, line))
            named = None  # a command line names the block after it only
        elif blocks and (field := _FIELD.match(stripped)):
            blocks[-1][1].setdefault(field["key"], field["value"])
    return blocks


def controller_of(device: str) -> str:
    """The controller a namespace's output is (nvme0n1 -> nvme0); a controller's name as it is."""
    match = _NAMESPACE.match(device)
    return match[1] if match else device


def _integer(value: str) -> int | None:
    """``1,311``, ``0x01``, ``100%``, ``1189327430 (608.94 TB)`` → the integer; None otherwise."""
    match = _NUMBER.match(value)
    if not match:
        return None
    digits = match[1]
    if digits.lower().startswith("0x"):
        return int(digits, 16)
    grouped = grouped_int(digits)  # a locale's grouping: "31.459.208", "31 459 208"
    if grouped is not None:
        return grouped
    plain = re.match(r"\d[\d,]*", digits)
    return int(plain[0].replace(",", "")) if plain else None


def _kelvin(value: str) -> int | None:
    """``48 C (321 Kelvin)``, ``31 °C (304 K)``, ``315 K``, ``21 C`` → Kelvin, as the JSON gives."""
    match = _TEMPERATURE.match(value.replace("Kelvin", "K").replace("Celsius", "C"))
    if not match:
        return None
    if match["kelvin"]:
        return int(match["kelvin"])
    number = int(match["value"])
    return number if match["unit"].upper() == "K" else number + 273
