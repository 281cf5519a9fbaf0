"""Small helpers shared by the block-device and NVMe parsers (lsblk, nvme_cli, nvme_sysfs, fs).

All pure: they look at text or values, never at the host.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gdsdoctor.probes.base import ParseError

_HUMAN_SIZE = re.compile(r"^\s*(\d+(?:[.,]\d+)?)\s*([BKMGTPE]?)(?:i?B)?\s*$", re.IGNORECASE)
_POWERS = {"": 0, "B": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}


def load_json(text: str, what: str) -> tuple[Any, int]:
    """Parse JSON that may follow a pasted ``$ command`` line; returns (value, lines skipped).

    Only the lines before the first ``{`` or ``[`` line are skipped, so provenance line
    numbers stay those of the pasted text.
    """
    lines = text.split("\n")
    for skipped, line in enumerate(lines[:20]):
        if line.lstrip().startswith(("{", "[")):
            body = "\n".join(lines[skipped:])
            try:
                return json.loads(body), skipped
            except RecursionError:
                raise ParseError(f"JSON nested too deeply ({what})") from None
            except ValueError as error:
                repaired = close_truncated_json(body)
                if repaired is not None:
                    return repaired, skipped
                raise ParseError(f"not valid JSON ({what}): {str(error)[:120]}") from None
    raise ParseError(f"no JSON document found (expected {what})")


def close_truncated_json(body: str) -> Any | None:
    """A JSON document cut short (a paste that stops mid-array) closed as far as it got, or None.

    Tracks open strings/brackets, drops a dangling ``,`` or ``"key":`` and appends the closers.
    """
    stack: list[str] = []
    in_string = escaped = False
    for char in body:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]" and (not stack or stack.pop() != char):
            return None
    if not stack:
        return None
    candidate = body + ('"' if in_string else "")
    candidate = re.sub(r'(,\s*("(?:[^"\\]|\\.)*"\s*:?)?|"(?:[^"\\]|\\.)*"\s*:|:)\s*$', "", candidate.rstrip())
    try:
        return json.loads(candidate + "".join(reversed(stack)))
    except (ValueError, RecursionError):
        return None


def line_finder(text: str) -> Any:
    """A function ``find(regex, default) -> (line_no, line)`` scanning forward through ``text``.

    JSON objects are printed in document order, so searching forward from the previous hit
    finds the line of each object in turn (the cheap way to give JSON items a line number).
    """
    lines = text.split("\n")
    position = 0

    def find(pattern: str, default: int = 1) -> tuple[int, str]:
        nonlocal position
        regex = re.compile(pattern)
        for index in range(position, len(lines)):
            if regex.search(lines[index]):
                position = index + 1
                return index + 1, lines[index]
        default = max(1, min(default, len(lines)))
        return default, lines[default - 1]

    return find


def json_key(name: str, value: str | int | None = None) -> str:
    """Regex for a JSON member ``"name": value`` in any nvme-cli/lsblk spacing style."""
    if value is None:
        return rf'"{re.escape(name)}"\s*:'
    if isinstance(value, int):
        return rf'"{re.escape(name)}"\s*:\s*{value}\b'
    return rf'"{re.escape(name)}"\s*:\s*"{re.escape(value)}"'


def to_bool(value: Any) -> bool | None:
    """lsblk/sysfs booleans: true/false, 1/0, "1"/"0", "Y"/"N"; anything else is unknown."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0 if value in (0, 1) else None
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("1", "y", "yes", "true"):
            return True
        if lowered in ("0", "n", "no", "false"):
            return False
    return None


def to_int(value: Any) -> int | None:
    """An int from an int or a decimal/hex string; None for anything else (incl. bools, floats)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        stripped = value.strip()
        try:
            return int(stripped, 16) if stripped.lower().startswith("0x") else int(stripped)
        except ValueError:
            return None
    return None


def size_bytes(value: Any) -> tuple[int | None, bool]:
    """(bytes, exact) from 512110190592, "512110190592" or lsblk's human "1.8T" (binary units).

    Human sizes are rounded by lsblk, so they come back with ``exact`` False. Negative
    numbers (nvme-cli 2.1/2.2 int32 overflow) are unknown.
    """
    number = to_int(value)
    if number is not None:
        return (number, True) if number >= 0 else (None, False)
    if isinstance(value, float) and value >= 0:
        return int(value), True
    if isinstance(value, str):
        match = _HUMAN_SIZE.match(value)
        if match:
            mantissa = float(match[1].replace(",", "."))
            return int(mantissa * 1024 ** _POWERS[match[2].upper()]), False
    return None, False


def text_or_none(value: Any) -> str | None:
    """Strip padded strings (nvme serials/models); empty or non-string means unknown."""
    if value is None or isinstance(value, (dict, list)):
        return None
    stripped = str(value).strip()
    return stripped or None


def split_address(address: str | None) -> dict[str, str | None]:
    """NVMe controller address: a PCIe BDF, or ``traddr=…,trsvcid=…[,host_traddr=…][,src_addr=…]``.

    Accepts nvme-cli 1.x's space-separated form too. Unknown parts are None.
    """
    parts: dict[str, str | None] = {
        "traddr": None,
        "trsvcid": None,
        "host_traddr": None,
        "host_iface": None,
        "src_addr": None,
        "pci_bdf": None,
    }
    if not address or not address.strip():
        return parts
    if "=" not in address:
        parts["traddr"] = address.strip()
        if re.fullmatch(r"[0-9a-fA-F]{4,}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]", address.strip()):
            parts["pci_bdf"] = address.strip()
        return parts
    for piece in re.split(r"[,\s]+", address.strip()):
        key, sep, value = piece.partition("=")
        if sep and key in parts:
            parts[key] = value or None
    return parts


def strip_prompt_lines(text: str) -> list[tuple[int, str]]:
    """Numbered lines without ``$ cmd``/``# cmd`` prompt lines and ``#`` comments (pastes)."""
    kept = []
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if stripped.startswith(("$ ", "# ")) or stripped == "#" or stripped.startswith("#"):
            continue
        kept.append((number, line))
    return kept
