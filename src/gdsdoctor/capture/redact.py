"""Redaction: make a capture safe to attach to a public ticket, without changing the diagnosis.

Two passes over every text of a capture (artifact bytes, sources, details, host summary,
options), so that an identifier learned in one artifact is replaced in all of them:

1. *learn*: identifiers that only their context gives away are collected as literals: serial
   numbers (``sn :``, ``"SerialNumber":``, an ``SN``/``SERIAL`` table column), host names (the
   host summary, ``hostname`` keys, NFS/CIFS/Lustre servers in mount sources), WWNs, NGUIDs;
2. *replace*: one combined expression finds the literals and every identifier with a shape
   (IPv4/IPv6 addresses, MACs and other colon/dash hex strings, IB GUIDs and GIDs, UUIDs, NQNs,
   EUI/NAA/WWIDs, ``/home/NAME``, ``user=NAME``) and hands each to one :class:`Mapper`.

The mapper owns consistency: the same original always gets the same replacement, different
originals never share one, and a replacement keeps the format (an IPv4 address stays an IPv4
address, an NQN an NQN, a 20-character serial 20 characters, so tables keep their columns).
IPv4 and IPv6 networks are mapped bit by bit from a random key with a prefix-preserving
function: two addresses share an n-bit prefix after redaction exactly when they did before,
so subnet relations hold; private, link-local and documentation blocks stay in their block,
and the host byte of an IPv4 address (``.1``, ``.255``) is kept. Loopback, unspecified,
multicast and reserved addresses (netmasks) and all-zero identifiers are not identifying
and are kept. Dotted numbers after ``version``/``release``/``driver``/``firmware`` are
versions, not addresses.

The private map (original → replacement) is returned to the caller, who writes it next to
the bundle, never into it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import hmac
import ipaddress
import json
import os
import re
import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gdsdoctor.capture.capture import Capture
from gdsdoctor.capture.detect import read_pasted
from gdsdoctor.errors import UserError
from gdsdoctor.outputs import write_new_bytes
from gdsdoctor.patterns import lazy_compile

HEX = "0123456789abcdef"
_KEPT_HOSTNAMES = frozenset(
    "localhost localhost.localdomain localdomain ip6-localhost ip6-loopback none unknown (none) "
    "linux kernel nvidia nvme root server host node gpu".split()
)
# Well-known NQN naming authorities (vendors): kept, a site's own domain is not.
_PUBLIC_NQN_DOMAINS = frozenset(
    "org.nvmexpress io.spdk com.dell com.netapp com.purestorage com.vastdata com.ibm com.hpe com.nvidia "
    "com.redhat org.linux-nvme com.weka com.ddn com.samsung com.kioxia com.intel com.huawei "
    "com.pure com.hitachi com.lightbitslabs com.mellanox com.broadcom com.marvell".split()
)
_JUNK_VALUES = frozenset(
    {
        "n/a",
        "none",
        "null",
        "unknown",
        "not specified",
        "default string",
        "to be filled by o.e.m.",
        "ffffffff",
    }
)

# Keys and labels whose value is an identifier (JSON ``"key": "value"``, text ``key : value``).
_ID_KEYS = {
    "serial": "serial",
    "sn": "serial",
    "serial_number": "serial",
    "serialnumber": "serial",
    "serial number": "serial",
    "device serial number": "serial",
    "wwn": "hexid",
    "id_serial_short": "serial",  # udev (E:ID_SERIAL_SHORT=…): ID_SERIAL and by-id links embed it
    "id_serial": "serial",  # learned when it has no space (SCSI: 3<naa>), else the short one covers it
    "id_wwn": "hexid",
    "id_wwn_with_extension": "hexid",
    "wwid": "hexid",
    "nguid": "hexid",
    "eui64": "hexid",
    "hostname": "hostname",
    "host_name": "hostname",
    "host name": "hostname",
    "static hostname": "hostname",
    "nodename": "hostname",
    "node_name": "hostname",
}
_KEY_NAMES = "|".join(sorted((re.escape(k) for k in _ID_KEYS), key=len, reverse=True))
_JSON_ID = lazy_compile(rf'"(?P<key>(?i:{_KEY_NAMES}))"\s*:\s*"(?P<value>[^"\n]{{1,200}})"')
_TEXT_ID = lazy_compile(
    rf"^[ \t]*(?:E:[ \t]?)?(?P<key>(?i:{_KEY_NAMES}))[ \t]*[:=][ \t]*(?P<value>\S[^\n]*?)[ \t]*$", re.M
)
_MOUNT_SERVER = lazy_compile(r"^(?P<value>[A-Za-z][A-Za-z0-9.\-]*):/(?!/)", re.M)  # server:/export
_CIFS_SERVER = lazy_compile(r"(?<![\w/:])//(?P<value>[A-Za-z][A-Za-z0-9.\-]*)/")  # //server/share, not URLs
_LUSTRE_SERVER = lazy_compile(r"(?<![\w.\-])(?P<value>[A-Za-z][A-Za-z0-9.\-]*)@(?:tcp|o2ib|rdma)\d*")
_COLUMN_KEYS = {
    "SN": "serial",
    "SERIAL": "serial",
    "Serial": "serial",
    "WWN": "hexid",
    "HOSTNAME": "hostname",
}
_VERSION_CONTEXT = lazy_compile(r"(?i)(version|release|driver|firmware|\bfw|\bver|\bv)[\s:=]*$")

_SHAPES = [
    ("nqn", r"nqn\.\d{4}[-.]\d{2}\.[A-Za-z0-9][A-Za-z0-9.\-]*(?::[^\s\"',;<>()\[\]{}]*)?"),
    (
        "uuid",
        r"(?=[0-9A-Fa-f]{8}-)(?:(?<=GPU-)|(?<=MIG-)|(?<![\w-]))[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}(?![\w-])",
    ),
    ("wwid", r"(?<![\w.])(?:eui|naa|t10)\.[0-9A-Fa-f]{8,32}(?![\w])"),
    ("nvmewwid", r"(?<![\w.])nvme\.[0-9A-Fa-f]{4}-[0-9A-Fa-f]+-[0-9A-Fa-f]+-[0-9A-Fa-f]{8}(?![\w])"),
    # The dotted tail first: `::ffff:10.1.2.3` must not stop at `::ffff:10`.
    ("colonhex", r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,19}(?:\d+\.\d+\.\d+\.\d+|[0-9A-Fa-f]{1,4})?(?![\w:])"),
    ("dashhex", r"(?<![\w-])(?:[0-9A-Fa-f]{2}-){5,19}[0-9A-Fa-f]{2}(?![\w-])"),
    ("ipv4", r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)"),
    ("guid0x", r"(?<![\w])0x[0-9A-Fa-f]{16}(?![\w])"),
    ("hex32", r"(?<![\w])[0-9a-fA-F]{32}(?![\w])"),
    ("home", r"(?<=/home/)[A-Za-z_][A-Za-z0-9_.\-]{0,31}(?=[/\s\"':,]|$)"),
    ("userkv", r"(?<==)(?:(?<=\buser=)|(?<=\busername=))[A-Za-z_][\w.\-]{0,31}"),
]
_KEPT_USERS = frozenset({"root", "nobody", "admin", "user"})


@dataclass(slots=True)
class Mapper:
    """Original → replacement, per kind, consistent and one-to-one, from a random key."""

    key: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    maps: dict[str, dict[str, str]] = field(default_factory=dict)
    _taken: dict[str, set[str]] = field(default_factory=dict)
    _bits: dict[tuple[str, int, int], int] = field(default_factory=dict)

    def get(self, kind: str, original: str, make: Callable[[str, int], str]) -> str:
        """The replacement for ``original``; ``make(original, attempt)`` proposes one."""
        known = self.maps.setdefault(kind, {})
        if original in known:
            return known[original]
        taken = self._taken.setdefault(kind, set())
        for attempt in range(1000):
            candidate = make(original, attempt)
            if candidate not in taken and candidate != original:
                break
        known[original] = candidate
        taken.add(candidate)
        return candidate

    def digest(self, *parts: object) -> bytes:
        return hmac.new(self.key, "\x00".join(map(str, parts)).encode(), hashlib.sha256).digest()

    def hex_like(self, kind: str, original: str) -> str:
        """Every hex digit replaced (case and separators kept); all-zero values are kept."""
        prefix = original[:2] if original[:2].lower() == "0x" else ""
        body = original[len(prefix) :]
        if not body.strip("0:-.") or body.lower().strip(":-") == "ff" * 6 or not body.strip("f:-"):
            return original

        def make(text: str, attempt: int) -> str:
            stream = iter(b"".join(self.digest(kind, text, attempt, n) for n in range(1 + len(text) // 32)))
            digits = (HEX[next(stream) % 16] for _ in iter(int, 1))
            return prefix + "".join(_same_case(next(digits), c) if c.lower() in HEX else c for c in body)

        return self.get(kind, original, make)

    def prefix_bits(self, family: str, value: int, width: int, keep: int, stop: int) -> int:
        """Bits ``keep``..``stop`` of ``value`` flipped by a keyed function of the bits above:
        prefix-preserving (equal n-bit prefixes stay equal, different ones stay different)."""
        result = value
        for bit in range(keep, stop):
            prefix = value >> (width - bit)
            cache = (family, bit, prefix)
            if cache not in self._bits:
                self._bits[cache] = self.digest(family, bit, prefix)[0] & 1
            if self._bits[cache]:
                result ^= 1 << (width - 1 - bit)
        return result


# Special-purpose blocks keep their prefix (a private address stays private, link-local stays
# link-local); other addresses keep their first byte (two where it is shared with a block), so
# that no address can be mapped into a block, and the mapping stays one-to-one.
_V4_BLOCKS = [
    ipaddress.ip_network(n)
    for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16")
]
_V4_SHARED_FIRST_BYTES = frozenset({100, 169, 172, 192})
_V6_BLOCKS = [ipaddress.ip_network(n) for n in ("fe80::/10", "fec0::/10", "fc00::/7", "2001:db8::/32")]


def v4_kept_bits(address: ipaddress.IPv4Address) -> int:
    block = next((b.prefixlen for b in _V4_BLOCKS if address in b), None)
    if block is not None:
        return block
    return 16 if int(address) >> 24 in _V4_SHARED_FIRST_BYTES else 8


def v6_kept_bits(address: ipaddress.IPv6Address) -> int:
    if address in _V6_BLOCKS[0]:
        return 64  # link-local (and IB GID) prefix fe80::/64
    return next((b.prefixlen for b in _V6_BLOCKS if address in b), 16)


@dataclass(slots=True)
class Redactor:
    mapper: Mapper = field(default_factory=Mapper)
    literals: dict[str, str] = field(default_factory=dict)  # learned value -> kind
    _lower: dict[str, str] = field(default_factory=dict)  # the same, by lower-case value
    _pattern: re.Pattern[str] | None = None

    # --- pass 1 ---------------------------------------------------------------------------

    def learn(self, text: str) -> None:
        for match in _JSON_ID.finditer(text):
            self._learn(_ID_KEYS[match["key"].lower()], match["value"])
        for match in _TEXT_ID.finditer(text):
            self._learn(_ID_KEYS[match["key"].lower()], match["value"])
        for finder in (_MOUNT_SERVER, _CIFS_SERVER, _LUSTRE_SERVER):
            for match in finder.finditer(text):
                self._learn("hostname", match["value"])
        self._learn_columns(text)
        self._pattern = None

    def learn_hostname(self, name: str) -> None:
        self._learn("hostname", name)

    def _learn(self, kind: str, value: str) -> None:
        value = value.strip()
        if len(value) < 4 or value.lower() in _JUNK_VALUES or not value.strip("0-:. "):
            return
        if kind == "hostname":
            if (
                value.lower() in _KEPT_HOSTNAMES
                or _looks_like_address(value)
                or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.\-]*", value)
            ):
                return
            if "." in value:  # the short name alone is the same host
                self._learn("hostname", value.split(".", 1)[0])
        elif kind == "serial" and (" " in value or not any(c.isdecimal() for c in value)):
            return  # "Samsung SSD" is a model, "disk" a word: neither is a serial
        elif kind == "hexid" and not re.fullmatch(r"(0x)?[0-9A-Fa-f:\-]{8,}", value):
            return  # eui./naa./nvme. forms are found by their shape
        self.literals.setdefault(value, kind)
        self._lower[value.lower()] = kind

    def _learn_columns(self, text: str) -> None:
        """Values under an ``SN``/``SERIAL`` header in a table (``nvme list``, ``lsblk -o``)."""
        lines = text.split("\n")[:5000]
        for number, header in enumerate(lines):
            tokens = list(re.finditer(r"\S+", header))
            columns = [(m.start(), _COLUMN_KEYS[m[0]]) for m in tokens if m[0] in _COLUMN_KEYS]
            ruled = number + 1 < len(lines) and lines[number + 1].strip().startswith("---")
            all_caps = len(tokens) >= 3 and all(re.fullmatch(r"[A-Z][A-Z:%\-]*", m[0]) for m in tokens)
            if not columns or not (ruled or all_caps):
                continue
            for line in lines[number + 1 : number + 2000]:
                for start, kind in columns:
                    if len(line) > start and not line[start - 1 : start].strip():
                        token = re.match(r"[^\s-]\S*", line[start:])
                        if token:
                            self._learn(kind, token[0])

    # --- pass 2 ---------------------------------------------------------------------------

    def pattern(self) -> re.Pattern[str]:
        if self._pattern is None:
            alternatives = []
            if self.literals:
                names = sorted(self.literals, key=len, reverse=True)
                literal = "|".join(re.escape(n) for n in names)
                alternatives.append(rf"(?P<literal>(?<![A-Za-z0-9])(?i:{literal})(?![A-Za-z0-9]))")
            alternatives += [f"(?P<{name}>{expression})" for name, expression in _SHAPES]
            self._pattern = re.compile("|".join(alternatives), re.M)
        return self._pattern

    def text(self, text: str) -> str:
        return self.pattern().sub(self._replace, text)

    def data(self, data: bytes) -> bytes:
        """Bytes as text (undecodable bytes kept as they are), redacted, and back; UTF-16 with a
        byte-order mark stays UTF-16 in the same byte order (an odd last byte is kept)."""
        for bom, codec in ((b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
            if data.startswith(bom):
                body = data[2 : len(data) - (len(data) % 2)]
                text = self.text(body.decode(codec, errors="surrogatepass"))
                return bom + text.encode(codec, errors="surrogatepass") + data[2 + len(body) :]
        return self.text(data.decode("utf-8", errors="surrogateescape")).encode(
            "utf-8", errors="surrogateescape"
        )

    def _replace(self, match: re.Match[str]) -> str:
        kind, value = match.lastgroup or "", match[0]
        if kind == "literal":
            return self._literal(self._lower.get(value.lower(), "serial"), value)
        handler = getattr(self, f"_{kind}")
        return handler(value, match)

    def _literal(self, kind: str, value: str) -> str:
        if kind == "hostname":
            return self.hostname(value)
        if kind == "hexid":
            return self.mapper.hex_like("hexid", value)
        return self.mapper.get("serial", value, self._serial_like)

    def _serial_like(self, original: str, attempt: int) -> str:
        """Same length, so fixed-width tables keep their columns: ``S4EWNX0R1234`` → ``X00000000001``."""
        number = len(self.mapper.maps.get("serial", {})) + attempt + 1
        text = f"X{number:0{len(original) - 1}d}"
        return (
            text
            if len(text) == len(original)
            else self.mapper.digest(original, attempt).hex()[: len(original)]
        )

    def hostname(self, value: str) -> str:
        short, dot, domain = value.lower().partition(".")
        host = self.mapper.get("hostname", short, self._counted("hostname", "host{}"))
        if not dot:
            return host
        return f"{host}.{self.mapper.get('domain', domain, self._counted('domain', 'domain{}.example'))}"

    def _counted(self, kind: str, template: str) -> Callable[[str, int], str]:
        return lambda _, attempt: template.format(len(self.mapper.maps.get(kind, {})) + attempt + 1)

    def _nqn(self, value: str, match: re.Match[str]) -> str:
        head, colon, rest = value.partition(":")
        if not colon or value == "nqn.2014-08.org.nvmexpress.discovery":
            return value
        date, domain = re.fullmatch(r"nqn\.(\d{4}[-.]\d{2})\.(.*)", head).groups()  # type: ignore[union-attr]
        if domain not in _PUBLIC_NQN_DOMAINS:
            domain = "com.example"
        head = f"nqn.{date}.{domain}"
        if rest.lower().startswith("uuid:") and _UUID.fullmatch(rest[5:]):
            return f"{head}:uuid:{self._uuid(rest[5:], None)}"
        return f"{head}:{self.mapper.get('nqn', rest, self._counted('nqn', 'redacted-{:04d}'))}"

    def _uuid(self, value: str, match: re.Match[str] | None) -> str:
        mapped = self.mapper.hex_like("uuid", value.lower())
        return mapped.upper() if value.isupper() else mapped

    def _wwid(self, value: str, match: re.Match[str]) -> str:
        prefix, _, digits = value.partition(".")
        return f"{prefix}.{self.mapper.hex_like('hexid', digits)}"

    def _nvmewwid(self, value: str, match: re.Match[str]) -> str:
        prefix, vendor, serial, model, nsid = re.split(r"[.\-]", value)
        return f"{prefix}.{vendor}-{self.mapper.hex_like('hexid', serial)}-{model}-{nsid}"

    def _colonhex(self, value: str, match: re.Match[str]) -> str:
        groups = value.split(":")
        if len(groups) == 6 and all(len(g) == 2 for g in groups):
            return self.mapper.hex_like("mac", value)
        if len(groups) == 4 and all(len(g) == 4 for g in groups):  # ibv_devinfo node_guid
            return self._guid(value)
        if len(groups) >= 8 and all(len(g) == 2 for g in groups):  # IPoIB hardware address
            return self.mapper.hex_like("mac", value)
        try:
            address = ipaddress.IPv6Address(value)
        except ValueError:
            return value
        return self._ipv6(value, address)

    def _dashhex(self, value: str, match: re.Match[str]) -> str:
        return self.mapper.hex_like("mac", value)

    def _guid(self, value: str) -> str:
        """A 64-bit GUID in any notation: mapped by value, so ``0x0002c9030001`` in ibstat and
        ``0002:c903:0001`` in ibv_devinfo and a GID's low half stay the same GUID."""
        prefix = value[:2] if value[:2].lower() == "0x" else ""
        body = value[len(prefix) :]
        digits = "".join(c for c in body.lower() if c in HEX)
        mapped = iter(self.mapper.hex_like("guid", digits))
        return prefix + "".join(_same_case(next(mapped), c) if c.lower() in HEX else c for c in body)

    def _guid0x(self, value: str, match: re.Match[str]) -> str:
        text = match.string
        end = text.find("\n", match.end())
        line = text[text.rfind("\n", 0, match.start()) + 1 : end if end >= 0 else len(text)]
        return self._guid(value) if "guid" in line.lower() else value  # else: a kernel address

    def _hex32(self, value: str, match: re.Match[str]) -> str:
        return self.mapper.hex_like("hexid", value)

    def _home(self, value: str, match: re.Match[str]) -> str:
        return self._user(value)

    def _userkv(self, value: str, match: re.Match[str]) -> str:
        return self._user(value)

    def _user(self, value: str) -> str:
        if value in _KEPT_USERS:
            return value
        return self.mapper.get("user", value, self._counted("user", "user{}"))

    def _ipv4(self, value: str, match: re.Match[str]) -> str:
        before = match.string[max(0, match.start() - 24) : match.start()]
        if _VERSION_CONTEXT.search(before):
            return value
        try:
            address = ipaddress.IPv4Address(value)
        except ValueError:
            return value
        return str(self._map_v4(address))

    def _map_v4(self, address: ipaddress.IPv4Address) -> ipaddress.IPv4Address:
        if address.is_loopback or address.is_unspecified or address.is_multicast or address.is_reserved:
            return address
        mapped = self.mapper.prefix_bits("v4", int(address), 32, v4_kept_bits(address), 24)
        text = str(ipaddress.IPv4Address(mapped))
        self.mapper.maps.setdefault("ipv4", {})[str(address)] = text
        return ipaddress.IPv4Address(mapped)

    def _ipv6(self, value: str, address: ipaddress.IPv6Address) -> str:
        if address.is_loopback or address.is_unspecified or address.is_multicast:
            return value
        if address.ipv4_mapped is not None:
            inner = self._map_v4(address.ipv4_mapped)
            if "." in value:  # dotted form: keep it, whatever the prefix's spelling
                text = value[: value.rfind(":") + 1] + str(inner)
                self.mapper.maps.setdefault("ipv6", {})[value] = text
                return text
            mapped = ipaddress.IPv6Address(int(address) & ~0xFFFFFFFF | int(inner))
        else:
            high = self.mapper.prefix_bits("v6", int(address) >> 64, 64, v6_kept_bits(address), 64)
            low = int(address) & (2**64 - 1)
            low = int(self.mapper.hex_like("guid", f"{low:016x}"), 16) if low else 0
            mapped = ipaddress.IPv6Address((high << 64) | low)
        text = mapped.exploded if len(value) == 39 else str(mapped)
        text = text.upper() if value.isupper() else text
        self.mapper.maps.setdefault("ipv6", {})[value] = text
        return text


_UUID = lazy_compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")


def _same_case(digit: str, like: str) -> str:
    return digit.upper() if like.isupper() else digit


def _looks_like_address(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _all_texts(capture: Capture) -> Iterable[str]:
    for artifact in capture.artifacts.values():
        yield artifact.data.decode("utf-8", errors="replace")
        yield artifact.source
        yield artifact.detail
    yield from (str(v) for v in capture.host.values())
    yield from (str(v) for v in capture.options.values() if v)


def redact_capture(capture: Capture, redactor: Redactor | None = None) -> tuple[Capture, dict[str, Any]]:
    """A redacted copy of ``capture`` and the private map (kind → original → replacement)."""
    redactor = redactor or Redactor()
    if capture.host.get("hostname"):
        redactor.learn_hostname(str(capture.host["hostname"]))
    for text in _all_texts(capture):
        redactor.learn(text)
    host = {k: redactor.text(str(v)) for k, v in capture.host.items()}
    if capture.host.get("hostname"):  # even a name too short or common to replace everywhere
        host["hostname"] = redactor.hostname(str(capture.host["hostname"]))
    redacted = Capture(
        origin=capture.origin,
        host=host,
        options={k: redactor.text(v) if isinstance(v, str) else v for k, v in capture.options.items()},
        assignments={k: list(v) for k, v in capture.assignments.items()},
        notes=[redactor.text(n) for n in capture.notes],
        label=host["hostname"]
        if capture.label == capture.host.get("hostname")
        else redactor.text(capture.label),
    )
    for name, artifact in capture.artifacts.items():
        redacted.artifacts[name] = dataclasses.replace(
            artifact,
            data=redactor.data(artifact.data),
            source=redactor.text(artifact.source),
            detail=redactor.text(artifact.detail),
        )
    return redacted, private_map(redactor)


def private_map(redactor: Redactor) -> dict[str, Any]:
    maps = {
        kind: dict(sorted(table.items())) for kind, table in sorted(redactor.mapper.maps.items()) if table
    }
    return {"format": "gdsdoctor.redaction-map", "format_version": 1, "maps": maps}


def map_path_for(output: Path) -> Path:
    """Where the private map of a redacted bundle goes: next to it, never inside it."""
    return output.with_name(output.name.rstrip("/") + ".redaction-map.json")


def write_private_map(mapping: dict[str, Any], path: Path) -> None:
    """Create ``path`` (never over anything, not even a link) readable by its owner only,
    whole or not at all."""
    text = json.dumps(mapping, indent=2, sort_keys=True, ensure_ascii=True) + "\n"
    write_new_bytes(path, text.encode("ascii"), mode=0o600)


def write_redacted_bundle(capture: Capture, output: Path) -> Path:
    """Redact ``capture``, write it as a bundle at ``output`` and its private map beside it;
    returns the map's path. The map is created first (so an existing one refuses the run before
    anything is written) and removed again if the bundle cannot be written or the run is
    interrupted: a failed run leaves nothing that would block its retry."""
    from gdsdoctor.capture.bundle import write_bundle  # tarfile: not for `redact FILE`

    redacted, mapping = redact_capture(capture)
    map_path = map_path_for(output)
    write_private_map(mapping, map_path)
    try:
        write_bundle(redacted, output, redacted=True)
    except BaseException:
        with contextlib.suppress(OSError):
            map_path.unlink()
        raise
    return map_path


def redact_files(paths: Sequence[Path], output_dir: Path | None = None) -> list[str]:
    """Write a redacted copy of each pasted file (``NAME.redacted``) and one private map; the
    same identifier gets the same replacement in every file. Returns one line per file. Nothing
    is written through or over an existing name (a link included), and a failed or interrupted
    run removes what it wrote."""
    texts: dict[Path, bytes] = {}
    lines = []
    for path in paths:
        data, problem = read_pasted(path)
        if problem:
            lines.append(f"{path}: {problem}; skipped")
        else:
            texts[path] = data
    if lines and not texts:  # nothing to write: an error, not a run that "succeeded" doing nothing
        more = f" (and {len(lines) - 1} more file(s) skipped)" if len(lines) > 1 else ""
        raise UserError(f"nothing redacted: {lines[0].removesuffix('; skipped')}{more}")
    targets = {p: (output_dir or p.parent) / f"{p.name}.redacted" for p in texts}
    map_path = (output_dir or (paths[0].parent if paths else Path("."))) / "redaction-map.json"
    clashes = [t for t in [*targets.values(), map_path] if os.path.lexists(t)]
    if clashes:
        raise UserError(f"{clashes[0]} already exists; remove it or choose --output-dir")
    redactor = Redactor()
    for data in texts.values():
        redactor.learn(data.decode("utf-8", errors="replace"))
    written: list[Path] = []
    try:
        for path, data in texts.items():
            write_new_bytes(targets[path], redactor.data(data))
            written.append(targets[path])
            lines.append(f"{path}: redacted copy in {targets[path]}")
        if texts:
            write_private_map(private_map(redactor), map_path)
            lines.append(f"private map (keep it, never attach it): {map_path}")
    except BaseException as error:
        for done in written:
            with contextlib.suppress(OSError):
                done.unlink()
        if isinstance(error, OSError):
            raise UserError(f"cannot write {error.filename}: {error.strerror or error}") from None
        raise
    return lines
