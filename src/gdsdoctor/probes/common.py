"""Helpers shared by the probe modules: one place for what several parsers and readers need.

Parsers (pure, they look at text or values, never at the host):
- ``load_pasted_json`` / ``close_truncated_json``: JSON a user pasted (maybe after a ``$ command``
  line, maybe cut short); ``OutsideJsonStrings``: the characters of a JSON text outside strings.
- ``load_reader_json`` / ``reader_items``: the strict JSON object a reader wrote, and its item lists.
- ``line_finder`` / ``json_key`` / ``provenance_finder``: a line number for an item of a JSON document.
- ``to_int`` / ``to_bool`` / ``size_bytes`` / ``text_or_none``: value conversions.
- ``split_address`` (NVMe controller addresses), ``strip_prompt_lines`` (pastes).

Readers (I/O under ``host_root``; they never reach anything outside it, and never raise but a
PermissionError where a caller asks for it, so that the capture says denied, not "nothing there"):
- ``resolve_in_root`` / ``real_inside`` / ``child_inside`` / ``within``: a path with its links
  resolved inside the root, as ``openat2(RESOLVE_IN_ROOT)`` does (an absolute link starts again
  at the root, ``..`` stops at it), so nothing outside the root is ever reached.
- ``attrs_inside`` / ``attrs_of_real`` / ``list_inside``: the attributes and the names of a sysfs
  directory, read only inside the root; ``read_under_root`` (a whole file), ``read_attr`` (one
  sysfs attribute at a path already checked), ``read_in_root`` / ``read_regular`` /
  ``open_regular`` (regular files only, opened without blocking), ``link_name``, ``list_dir``,
  ``bdfs_in``.
- ``json_bytes``: what a reader returns (``indent=1``, one member per line, so a parser can point
  provenance at the line where an object's name appears); ``MISSING`` when its tree is absent.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import ParseError, numbered_lines, src

# -------------------------------------------------------------------------------------------------
# parsers: JSON, provenance and values (pure)

_HUMAN_SIZE = lazy_compile(r"^\s*(\d+(?:[.,]\d+)?)\s*([BKMGTPE]?)(?:i?B)?\s*$", re.IGNORECASE)
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
    candidate = re.sub(r'(,\s*("(?:[^"\\]|\\.)*"\s*:?)?|"(?:[^"\\]|\\.)*"\s*:|:)\s*$', "", candidate.rstrip())
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


# -------------------------------------------------------------------------------------------------
# readers: sysfs files under the host root (I/O, never raise)

# What a reader returns when its tree is absent: the capture records the source as "missing"
# (unknown), so rules stay inconclusive instead of reading "zero devices".
MISSING = b""
BDF = lazy_compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
_MAX_ATTR = 65536  # sysfs attributes are one page at most; bigger means it is not sysfs


def open_regular(path: Path | str, follow: bool = True) -> int:
    """A blocking descriptor of a regular file; OSError when it cannot be opened or is not a
    regular file. Opened without blocking and checked with fstat first: a fifo, socket or
    device planted in a host root (sysfs attributes and /proc, /etc files are regular files)
    would otherwise block the reader until the capture's deadline. ``follow`` False refuses a
    link as the last component (``resolve_in_root`` has resolved them all)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    descriptor = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(0, "not a regular file")
        os.set_blocking(descriptor, True)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def read_regular_file(path: Path | str, limit: int, follow: bool = True) -> bytes:
    """At most ``limit`` bytes of a regular file (``open_regular``); OSError when it cannot."""
    descriptor = open_regular(path, follow)
    try:
        chunks, left = [], limit
        while left > 0 and (chunk := os.read(descriptor, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def read_regular(path: Path | str, limit: int, follow: bool = True) -> bytes | None:
    """``read_regular_file``, None instead of an error (readers never raise)."""
    try:
        return read_regular_file(path, limit, follow)
    except (OSError, ValueError):
        return None


def read_attr(path: Path | str) -> str | None:
    """The stripped text of one sysfs attribute, or None when it is missing, unreadable or not a
    regular file. It follows links: readers reach it through ``attrs_inside``, which checks them."""
    data = read_regular(path, _MAX_ATTR)
    return data.decode("utf-8", "replace").strip() if data is not None else None


def link_name(path: Path) -> str | None:
    """The last component of a symlink's target (``driver`` → ``nvme``), not followed; or None."""
    try:
        return os.path.basename(os.readlink(path).rstrip("/")) or None
    except (OSError, ValueError):
        return None


def within(real_root: str, real_path: str) -> bool:
    """Whether ``real_path`` is ``real_root`` or below it (both already resolved with realpath)."""
    return real_path == real_root or real_path.startswith(real_root.rstrip("/") + "/")


def real_inside(real_root: str, path: Path | str) -> str | None:
    """``path``, named below ``real_root`` (the host root, already a realpath: readers resolve
    it once, not once per device), with every link resolved inside that root
    (``resolve_in_root``: the one way every host file and sysfs path is resolved); None when it
    is missing or not named below the root."""
    path = os.fspath(path)
    if not within(real_root, path):
        return None
    real = resolve_in_root(real_root, path[len(real_root) :])
    return real if real is not None and os.path.lexists(real) else None


def child_inside(real_root: str, real_directory: str, name: str) -> str | None:
    """``name`` in a directory already resolved inside ``real_root``: the path itself, or, for a
    link, where it leads inside the root (opening the link would let the kernel follow an
    absolute target out of it). Only a link of its own can lead elsewhere, so one lstat does
    what a walk of every component (sysfs paths run through links) would."""
    path = os.path.join(real_directory, name)
    return real_inside(real_root, path) if os.path.islink(path) else path


def attrs_inside(real_root: str, directory: Path | str | None, names: Iterable[str]) -> dict[str, str | None]:
    """The attributes ``names`` of a sysfs directory (see ``read_attr``), None for each one
    missing or reached only through a link out of ``real_root``. The directory is resolved
    once, not once per attribute."""
    real = real_inside(real_root, directory) if directory is not None else None
    return attrs_of_real(real_root, real, names)


def attrs_of_real(
    real_root: str, real_directory: Path | str | None, names: Iterable[str]
) -> dict[str, str | None]:
    """``attrs_inside`` for a directory already resolved inside ``real_root`` (or None)."""
    found: dict[str, str | None] = {}
    for name in names:
        path = child_inside(real_root, str(real_directory), name) if real_directory is not None else None
        found[name] = read_attr(path) if path is not None else None
    return found


def list_inside(real_root: str, directory: Path | str | None, *, raise_denied: bool = False) -> list[str]:
    """The sorted names in a directory; empty when it is missing or leads out of ``real_root``.
    ``raise_denied``: see ``list_dir``."""
    real = real_inside(real_root, directory) if directory is not None else None
    return list_dir(real, raise_denied=raise_denied) if real is not None else []


_MAX_LINKS = 40  # symlinks followed in one path, as the kernel's ELOOP limit


def resolve_in_root(real_root: str, path: str) -> str | None:
    """``path`` (as the host sees it, e.g. ``/etc/os-release``) resolved under ``real_root`` the
    way ``openat2(RESOLVE_IN_ROOT)`` does: an absolute link starts again at the root and ``..``
    never climbs above it, so ``/etc/os-release -> /usr/lib/os-release`` reads the host root's
    copy, and nothing outside the root is ever reached. Each component is looked at with lstat,
    one at a time; None after too many links or on an unreadable component."""
    pending = [part for part in reversed(path.split("/")) if part not in ("", ".")]
    resolved: list[str] = []
    links = 0
    try:
        while pending:
            part = pending.pop()
            if part == "..":
                if resolved:
                    resolved.pop()
                continue
            candidate = os.path.join(real_root, *resolved, part)
            if not os.path.islink(candidate):
                resolved.append(part)
                continue
            links += 1
            if links > _MAX_LINKS:
                return None
            target = os.readlink(candidate)
            if target.startswith("/"):
                resolved = []
            pending.extend(part for part in reversed(target.split("/")) if part not in ("", "."))
    except (OSError, ValueError):
        return None
    return os.path.join(real_root, *resolved)


def read_in_root(host_root: Path | str, path: str, limit: int, *, raise_denied: bool = False) -> bytes | None:
    """At most ``limit`` bytes of the regular file ``path`` of the host mounted at ``host_root``
    (links resolved inside it: ``resolve_in_root``); None when missing, unreadable or not a
    regular file. The last component is opened with O_NOFOLLOW, so a link swapped in after
    the walk is refused rather than followed. ``raise_denied``: a file there that cannot be
    read raises PermissionError (the capture then says denied) instead of reading as absent."""
    try:
        root = os.path.realpath(host_root)
    except (OSError, ValueError):
        return None
    real = resolve_in_root(root, path)
    if real is None:
        return None
    try:
        return read_regular_file(real, limit, follow=False)
    except PermissionError:
        if raise_denied:
            raise
        return None
    except (OSError, ValueError):
        return None


def read_under_root(
    host_root: Path, path: str, limit: int = 16 * 1024 * 1024, *, raise_denied: bool = False
) -> str | None:
    """Text of the file ``path`` under host_root (``read_in_root``); None when it cannot be read."""
    data = read_in_root(host_root, path, limit, raise_denied=raise_denied)
    return data.decode("utf-8", "replace") if data is not None else None


def list_dir(path: Path | str, *, raise_denied: bool = False) -> list[str]:
    """The sorted names in a directory; empty when it is missing or unreadable. ``raise_denied``: an
    unreadable directory raises PermissionError instead (a reader's top directory: the capture
    then says denied, not "no devices")."""
    try:
        return sorted(os.listdir(path))
    except PermissionError:
        if raise_denied:
            raise
        return []
    except (OSError, ValueError):
        return []


def bdfs_in(path: Path | str) -> list[str]:
    """The PCI addresses along a resolved device path, outermost first."""
    return [part for part in str(path).split("/") if BDF.match(part)]


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
