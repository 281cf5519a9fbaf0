"""Pure text helpers shared by the probe parsers: they look at text or values, never at the host.

- ``load_pasted_json`` / ``close_truncated_json``: JSON a user pasted (maybe after a ``$ command``
  line, maybe cut short); ``OutsideJsonStrings``: the characters of a JSON text outside strings.
- ``load_reader_json`` / ``reader_items``: the strict JSON object a reader wrote, and its item lists;
  ``json_bytes``: what a reader returns (``indent=1``, one member per line, so a parser can point
  provenance at the line where an object's name appears).
- ``line_finder`` / ``json_key`` / ``provenance_finder``: a line number for an item of a JSON document.
- ``to_int`` / ``to_bool`` / ``size_bytes`` / ``text_or_none``: value conversions.
- ``split_address`` (NVMe controller addresses), ``strip_prompt_lines`` (pastes).

Reading the host is :mod:`gdsdoctor.probes.host_io`.

>>> size_bytes("1.5G"), size_bytes("512")  # (bytes, exact): a human size is rounded
((1610612736, False), (512, True))
>>> to_int("0x10"), to_bool("yes"), to_bool("maybe")
(16, True, None)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import numbered_lines, src

# -------------------------------------------------------------------------------------------------
# parsers: JSON, provenance and values (pure)

_HUMAN_SIZE = lazy_compile(r"^\s*(\d+(?:[.,]\d+)?)\s*(?!\s)([BKMGTPE]?)(?:i?B)?\s*$", re.IGNORECASE)
# What a truncated JSON may end in that cannot be closed: a comma (and a key), a key, a colon.
_DANGLING_END = lazy_compile(r'(,\s*(?!\s)("(?:[^"\\]|\\.)*"\s*(?!\s):?)?|"(?:[^"\\]|\\.)*"\s*:|:)\s*$')
_POWERS = {"": 0, "B": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}


def load_pasted_json(text: str, what: str) -> tuple[Any, int]:
    """Parse JSON that may follow a pasted ``$ command`` line; returns (value, lines skipped).

    Only the lines before the first ``{`` or ``[`` line are skipped, so provenance line
    numbers stay those of the pasted text.
    """
    offset = 0
    for skipped in range(20):  # the first 20 lines, cut from the text (never a list of all of them)
        end = text.find("\n", offset)
        if text[offset : end if end != -1 else len(text)].lstrip().startswith(("{", "[")):
            body = text[offset:]
            try:
                return json.loads(body), skipped
            except RecursionError:
                raise ParseError(f"JSON nested too deeply ({what})") from None
            except ValueError as error:
                repaired = close_truncated_json(body)
                if repaired is not None:
                    return repaired, skipped
                raise ParseError(f"not valid JSON ({what}): {str(error)[:120]}") from None
        if end == -1:
            break
        offset = end + 1
    raise ParseError(f"no JSON document found (expected {what})")


class OutsideJsonStrings:
    """Iterates ``(index, char)`` over the characters of a JSON text that stand outside its strings.

    A string's quotes count as inside. After the loop, ``in_string`` says whether the text ended
    inside an unclosed string (a paste cut short mid-value).
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.in_string = False

    def __iter__(self) -> Iterator[tuple[int, str]]:
        escaped = False
        for index, char in enumerate(self.text):
            if self.in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    self.in_string = False
            elif char == '"':
                self.in_string = True
            else:
                yield index, char


def close_truncated_json(body: str) -> Any | None:
    """A JSON document cut short (a paste that stops mid-array) closed as far as it got, or None.

    Tracks open strings/brackets, drops a dangling ``,`` or ``"key":`` and appends the closers.
    """
    stack: list[str] = []
    scan = OutsideJsonStrings(body)
    for _, char in scan:
        if char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]" and (not stack or stack.pop() != char):
            return None
    if not stack:
        return None
    candidate = body + ('"' if scan.in_string else "")
    candidate = _DANGLING_END.sub("", candidate.rstrip())
    try:
        return json.loads(candidate + "".join(reversed(stack)))
    except (ValueError, RecursionError):
        return None


_FINDER_CHUNK = 1 << 16  # characters a finder rules out with one search before it looks line by line


def line_finder(text: str) -> Any:
    """A function ``find(regex, default) -> (line_no, line)`` scanning forward through ``text``.

    JSON objects are printed in document order, so searching forward from the previous hit
    finds the line of each object in turn (the cheap way to give JSON items a line number).
    A hit moves the start forward, so all hits together visit each line once; a miss visits the
    rest of the text and moves nothing, so misses (items printed in another order, or a hostile
    document of 100k items none of which is found) would make the search quadratic. Misses share
    a budget of a few passes over the text: past it, a miss gives ``default`` at once (only a
    line number of provenance is lost, never a fact), and the whole search stays linear. Lines
    are cut from the text as they are visited, never held as a list (JSON may hold millions of
    newlines between its tokens), and a stretch of text with no match at all (searched at once,
    ``^``/``$`` at line ends) is passed without looking at its lines one by one.
    """
    start = [1, 0]  # the number and offset of the first line not yet passed by a hit
    miss_budget = 4 * (len(text) + 1) + 100_000  # in characters passed

    def find(pattern: str, default: int = 1) -> tuple[int, str]:
        nonlocal miss_budget
        regex, anywhere = re.compile(pattern), re.compile(pattern, re.MULTILINE)
        number, offset = start
        while offset <= len(text) and miss_budget > offset - start[1]:
            cut = text.find("\n", offset + _FINDER_CHUNK)
            cut = len(text) if cut == -1 else cut
            first = anywhere.search(text, offset, cut)
            if first is None:  # no line of this stretch can match: pass it whole
                number, offset = number + text.count("\n", offset, cut) + 1, cut + 1
                continue
            line_start = text.rfind("\n", offset, first.start()) + 1 or offset
            number += text.count("\n", offset, line_start)
            offset = line_start
            while offset <= cut:  # no line before the first match's can match
                end = text.find("\n", offset, cut)
                end = cut if end == -1 else end
                line = text[offset:end]
                if regex.search(line):
                    start[:] = [number + 1, end + 1]
                    return number, line
                number, offset = number + 1, end + 1
        miss_budget -= min(offset, len(text) + 1) - start[1]
        return _line_at(text, default)

    return find


def _line_at(text: str, number: int) -> tuple[int, str]:
    """(number, line) for the ``number``-th line of ``text`` (1-based), clamped to its lines."""
    offset, current = 0, 1
    while current < number and (cut := text.find("\n", offset)) != -1:
        offset, current = cut + 1, current + 1
    end = text.find("\n", offset)
    return current, text[offset : end if end != -1 else len(text)]


def json_key(name: str, value: str | int | None = None) -> str:
    """Regex for a JSON member ``"name": value`` in any nvme-cli/lsblk spacing style."""
    if value is None:
        return rf'"{re.escape(name)}"\s*:'
    if isinstance(value, int):
        return rf'"{re.escape(name)}"\s*:\s*{value}\b'
    return rf'"{re.escape(name)}"\s*:\s*"{re.escape(value)}"'


def to_bool(value: Any) -> bool | None:
    """lsblk/sysfs/cuFile booleans: true/false, 1/0, "1"/"0", "Y"/"N", "on"/"off"; anything else
    is unknown."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0 if value in (0, 1) else None
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("1", "y", "yes", "true", "on"):
            return True
        if lowered in ("0", "n", "no", "false", "off"):
            return False
    return None


def to_int(value: Any) -> int | None:
    """An int from an int or a decimal/0x-hex string (sysfs, lsblk, nvme-cli); None for anything else.

    Bools and floats are None too: a JSON ``true`` or ``1.5`` is not a count.
    """
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


# A count with its locale's digit grouping (``df --block-size="'1"``, smartctl's counters): "1,234,567"
# (en), "1.234.567" (de, es, it), "1'234'567" (de_CH), "1 234 567" with a no-break or thin space (fr, ru,
# sv). One separator throughout; a dot needs two groups ("1.234" is a decimal in most of the world).
_GROUPED = lazy_compile(r"^\d{1,3}(?P<sep>[,.'\u2019\u00a0\u202f\u2009])\d{3}(?:(?P=sep)\d{3}){0,6}$")


_SPACE_GROUPS = lazy_compile(r"(?<=\d)[\u00a0\u202f\u2009](?=\d{3}(?!\d))")


def joined_digit_groups(text: str) -> str:
    """``text`` with a locale's no-break or thin space between digit groups made an apostrophe (one
    character for one): a table's columns split on blanks, and Python's ``\\s`` matches those spaces."""
    return _SPACE_GROUPS.sub("'", text) if any(ch in text for ch in "\u00a0\u202f\u2009") else text


def grouped_int(value: str) -> int | None:
    """The integer a digit-grouped number says, or None (a plain integer is ``to_int``'s)."""
    match = _GROUPED.match(value.strip())
    if match is None or (match["sep"] == "." and value.count(".") < 2):
        return None
    groups = value.strip().split(match["sep"])
    if match["sep"] == "." and len(groups) == 4 and all(int(g) <= 255 for g in groups):
        return None  # a dotted IPv4 address, not a count
    return int("".join(groups))


def size_bytes(value: Any) -> tuple[int | None, bool]:
    """(bytes, exact) from 512110190592, "512110190592" or lsblk's human "1.8T" (binary units).

    Human sizes are rounded by lsblk, so they come back with ``exact`` False. Negative
    numbers (nvme-cli 2.1/2.2 int32 overflow) are unknown.
    """
    number = to_int(value)
    if number is None and isinstance(value, str):
        number = grouped_int(value)
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
        if re.fullmatch(r"^[0-9a-fA-F]{4,}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]", address.strip()):
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


def json_bytes(obj: Any) -> bytes:
    return json.dumps(obj, indent=1).encode()


def load_reader_json(text: str, reader: str) -> dict[str, Any]:
    """The JSON object the ``reader`` reader wrote (tagged ``"reader": reader``); else a ParseError."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise ParseError(f"not the JSON the {reader} reader writes ({error.__class__.__name__})") from None
    if not isinstance(data, dict):
        raise ParseError(f"not the JSON object the {reader} reader writes")
    if data.get("reader") != reader:
        raise ParseError(f'not the {reader} reader\'s JSON (no "reader": "{reader}")')
    return data


def reader_items(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The objects of the list ``data[key]`` (anything else in it, or no list, is skipped)."""
    items = data.get(key)
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def provenance_finder(text: str, artifact: str, key: str) -> Callable[[str], dict[str, Any]]:
    """A function mapping a value of ``key`` to the src of the first line ``"key": value``.
    The lines holding the key are indexed once (a search per value was quadratic)."""
    first_line: dict[str, tuple[int, str]] = {}
    opener = json.dumps(key) + ": "
    top = (1, "")
    for number, line in numbered_lines(text):
        if number == 1:
            top = (1, line)
        at = line.find(opener)
        while at != -1:
            start = at + len(opener)
            value = _json_string_at(line, start)
            if value is not None and value not in first_line:
                first_line[value] = (number, line)
            at = line.find(opener, start)

    def find(value: str) -> dict[str, Any]:
        return src(artifact, *first_line.get(json.dumps(value), top))

    return find


JSON_STRING = lazy_compile(r'"(?:[^"\\]|\\.)*"')


def _json_string_at(line: str, start: int) -> str | None:
    """The JSON string literal (quotes included, as written) that starts at ``line[start]``."""
    match = JSON_STRING.match(line, start)
    return match[0] if match else None
