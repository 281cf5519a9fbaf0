"""Redaction: make a capture safe to attach to a public ticket, without changing the diagnosis.

Two passes over every text of a capture (artifact bytes, sources, details, host summary,
options), so that an identifier learned in one artifact is replaced in all of them:

1. *learn*: identifiers that only their context gives away are collected as literals: serial
   numbers (``sn :``, ``"SerialNumber":``, an ``SN``/``SERIAL`` table column), host names (the
   host summary, ``hostname`` keys, NFS/CIFS/Lustre servers in mount sources), WWNs, NGUIDs;
2. *replace*: one combined expression finds the literals and every identifier with a shape
   (IPv4/IPv6 addresses, MACs and other colon/dash hex strings, IB GUIDs and GIDs, UUIDs, NQNs,
   EUI/NAA/WWIDs, ``/home/NAME``, ``user=NAME``) and hands each to one :class:`Mapper`.

The mapper (``redact_mapper``) owns consistency: the same original always gets the same replacement, different
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
the bundle, never into it (``redact_io``: files, bundles, sos reports and the map).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from gdsdoctor import compat, syslog_time
from gdsdoctor.capture.capture import Capture
from gdsdoctor.capture.redact_mapper import (
    HEX,
    Mapper,
    check_pairs,
    literal_trie,
    same_case,
    v4_kept_bits,
    v6_kept_bits,
)
from gdsdoctor.patterns import lazy_compile

MAP_FORMAT = "gdsdoctor.redaction-map"
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
# Shorter values are words as often as identifiers: not replaced everywhere (a host name still
# is where the text says a host is named: Redactor._short_hosts).
_MIN_LEARNED = 4
_JUNK_VALUES = frozenset(
    "n/a|none|null|unknown|not specified|default string|to be filled by o.e.m.|ffffffff".split("|")
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
    "_hostname": "hostname",  # the journal's field (export, verbose, json: `_HOSTNAME=`, `"_HOSTNAME"`)
}
_KEY_NAMES = "|".join(sorted((re.escape(k) for k in _ID_KEYS), key=len, reverse=True))
_JSON_ID = lazy_compile(rf'"(?P<key>(?i:{_KEY_NAMES}))"\s*:\s*"(?P<value>[^"\n]{{1,200}})"')
_TEXT_ID = lazy_compile(
    rf"^[ \t]*(?:E:[ \t]?)?(?P<key>(?i:{_KEY_NAMES}))[ \t]*[:=][ \t]*"
    r"(?P<value>\S(?:[^\n]*[^ \t\n])?)[ \t]*$",
    re.M,
)
# `lsblk -P` and udev-style `KEY="value"` pairs, anywhere on a line (`NAME="nvme0n1" SERIAL="…"`).
_PAIR_ID = lazy_compile(rf'(?<![\w.-])(?P<key>(?i:{_KEY_NAMES}))="(?P<value>[^"\n]{{1,200}})"')
_MOUNT_SERVER = lazy_compile(r"^(?P<value>[A-Za-z][A-Za-z0-9.\-]*):/(?!/)", re.M)  # server:/export
_CIFS_SERVER = lazy_compile(r"(?<![\w/:])//(?P<value>[A-Za-z][A-Za-z0-9.\-]*)/")  # //server/share, not URLs
_LUSTRE_SERVER = lazy_compile(r"(?<![\w.\-])(?P<value>[A-Za-z][A-Za-z0-9.\-]*)@(?:tcp|o2ib|rdma)\d*")
# Where a text names its host by position (each value one bounded token, so each is linear):
# a pasted `uname -a` (and nvidia-bug-report's `uname:` line), systemd's boot message, a shell
# prompt (`root@gpunode19:~#`, `[user@host dir]$`), the host field of a syslog line (BSD
# `Mmm dd hh:mm:ss HOST ident:` or RFC 3339), and NCCL's `HOST:PID:TID [GPU] NCCL` prefix.
_HOST_CONTEXTS = tuple(
    lazy_compile(expression, re.M)
    for expression in (
        r"^(?:uname: )?Linux (?!version )(?P<value>[A-Za-z0-9][A-Za-z0-9.\-]{0,252}) \d+\.\d+",
        r"Hostname set to <(?P<value>[A-Za-z0-9][A-Za-z0-9.\-]{0,252})>",
        r"(?<![\w.@-])\[?(?P<user>[A-Za-z_][\w.-]{0,31})@(?!(?:tcp|o2ib|rdma)\d*:)(?P<value>[A-Za-z][A-Za-z0-9.\-]{0,252})"
        r"(?=:[~/]| [~/\w.-]{0,64}\][#$])",
        rf"^ ?(?:{syslog_time.STAMP}|{syslog_time.FULL_STAMP}|{syslog_time.UNIX_STAMP}"
        r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?) "
        r"(?P<value>[A-Za-z][A-Za-z0-9.\-]{0,252}) [\w./()-]{1,64}(?:\[\d{1,10}\])?:",
        r"^(?P<value>[A-Za-z][A-Za-z0-9.\-]{0,252}):\d{1,10}:\d{1,10} \[\d{1,4}\] NCCL ",
        # RFC 5424 syslog: `<PRI>1 TIMESTAMP HOST APP …` (the PRI may be gone, the stamp `-`)
        r"^(?:<\d{1,3}>)?1 (?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)|-) "
        r"(?P<value>[A-Za-z][A-Za-z0-9.\-]{0,252}) ",
        # UCX `[SECONDS] [HOST:PID:TID]` and Open MPI `[HOST:PID]` line prefixes
        r"^(?:\[\d{1,12}\.\d{1,9}\] {1,8})?"
        r"\[(?P<value>[A-Za-z][A-Za-z0-9.\-]{0,252}):\d{1,10}(?::\d{1,10})?\]",
        # Slurm: `srun: error: HOST: task 3: …`, `slurmstepd: error: *** JOB 12 ON HOST CANCELLED`
        r"^srun: error: (?P<value>[A-Za-z][A-Za-z0-9.\-]{0,252}): task \d",
        r"\*\*\* (?:JOB|STEP) [\d.]{1,24} ON (?P<value>[A-Za-z][A-Za-z0-9.\-]{0,252}) CANCELLED",
        # the output of `hostname` (or `uname -n`) pasted after its prompt line
        r"^[^\n]{0,64}?[$#] (?:hostname(?: -[fsA])?|uname -n|cat /etc/hostname|hostnamectl hostname)"
        r"[ \t]*\n(?P<value>[A-Za-z][A-Za-z0-9.\-]{0,252})[ \t]*$",
        # journalctl -o short-monotonic / short-delta: `[ 7244.46] HOST kernel: …`
        r"^\[ *\d{1,10}\.\d{1,9}(?: *< *\d{1,10}\.\d{1,9} *>)? *\] "
        r"(?P<value>[A-Za-z][A-Za-z0-9.\-]{0,252}) kernel(?:\[\d{1,10}\])?: ",
    )
)
_COLUMN_KEYS = {
    "SN": "serial",
    "SERIAL": "serial",
    "Serial": "serial",
    "WWN": "hexid",
    "HOSTNAME": "hostname",
}
_VERSION_CONTEXT = lazy_compile(r"(?i)(version|release|driver|firmware|\bfw|\bver|\bv)[\s:=]*$")

_TLDS = tuple(
    "com net org edu gov mil io ai cloud biz local lan internal intranet corp localdomain example "
    "private de uk fr jp cn ca au nl se fi dk pl ru kr tw br cz sg hk".split()
)
# Domains of the software and vendors whose names appear in outputs (URLs, NQN authorities,
# driver banners): not identifying, kept with their sub-domains.
_PUBLIC_DOMAINS = frozenset(
    "nvidia.com kernel.org github.com redhat.com ubuntu.com canonical.com debian.org fedoraproject.org "
    "centos.org suse.com suse.de microsoft.com mellanox.com intel.com amd.com broadcom.com samsung.com "
    "kioxia.com micron.com wdc.com seagate.com python.org gnu.org freedesktop.org x.org kernel.dk "
    "example.com example.org example.net nvmexpress.org spdk.io linux-nvme.org ibm.com dell.com hpe.com "
    "netapp.com purestorage.com vastdata.com weka.io ddn.com lustre.org whamcloud.com openfabrics.org "
    "systemd.io ietf.org docs.rs pypi.org".split()
)

_SHAPES = [
    # NVMe DH-HMAC-CHAP and TLS keys (`nvme gen-dhchap-key`, `nvme gen-tls-key`): secrets, never
    # kept in the private map either
    ("nvmekey", r"(?<![\w-])(?:DHHC|NVMeTLSkey)-1:[0-9A-Fa-f]{2}:[A-Za-z0-9+/=]{4,512}:?"),
    ("nqn", r"nqn\.\d{4}[-.]\d{2}\.[A-Za-z0-9][A-Za-z0-9.\-]*(?::[^\s\"',;<>()\[\]{}]*)?"),
    (
        "uuid",
        r"(?=[0-9A-Fa-f]{8}-)(?:(?<=GPU-)|(?<=MIG-)|(?<![\w-]))[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}(?![\w-])",
    ),
    ("wwid", r"(?<![\w.])(?:eui|naa|t10)\.[0-9A-Fa-f]{8,32}(?![\w])"),
    ("nvmewwid", r"(?<![\w.])nvme\.[0-9A-Fa-f]{4}-[0-9A-Fa-f]+-[0-9A-Fa-f]+-[0-9A-Fa-f]{8}(?![\w])"),
    # The dotted tail first: `::ffff:10.1.2.3` must not stop at `::ffff:10`.
    # `inet6 addr:fe80::…` (net-tools' ifconfig) glues the address to its label.
    (
        "colonhex",
        r"(?:(?<=addr:)|(?<![\w:.]))(?:[0-9A-Fa-f]{0,4}:){2,19}(?:\d+\.\d+\.\d+\.\d+|[0-9A-Fa-f]{1,4})?(?![\w:])",
    ),
    # A MAC inside a predictable interface name (systemd: enx + the MAC's 12 hex digits).
    ("enxmac", r"(?<![\w])enx[0-9a-f]{12}(?![\w])"),
    ("dotmac", r"(?<![\w.])[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}(?![\w.])"),  # Cisco form
    ("dashhex", r"(?<![\w-])(?:[0-9A-Fa-f]{2}-){5,19}[0-9A-Fa-f]{2}(?![\w-])"),
    ("ipv4", r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)"),
    # A fully qualified name under a known top-level domain (a bare dotted word is not one:
    # file names, module names, sysctl keys); public vendors' domains are kept (_PUBLIC_DOMAINS).
    (
        "fqdn",
        r"(?<![\w.@/-])(?:[A-Za-z0-9][A-Za-z0-9-]{0,62}\.){1,8}(?i:" + "|".join(_TLDS) + r")(?![\w.-])",
    ),
    ("guid0x", r"(?<![\w])0x[0-9A-Fa-f]{16}(?![\w])"),
    ("hex32", r"(?<![\w])[0-9a-fA-F]{32}(?![\w])"),
    ("home", r"(?<=/home/)[A-Za-z_][A-Za-z0-9_.\-]{0,31}(?=[/\s\"':,]|$)"),
    ("userkv", r"(?<==)(?:(?<=\buser=)|(?<=\busername=))[A-Za-z_][\w.\-]{0,31}"),
]
_KEPT_USERS = frozenset({"root", "nobody", "admin", "user"})
_HOME_USER, _OPTION_USER = (lazy_compile(dict(_SHAPES)[kind]) for kind in ("home", "userkv"))


@dataclass(slots=True)
class Redactor:
    mapper: Mapper = field(default_factory=Mapper)
    literals: dict[str, str] = field(default_factory=dict)  # learned value -> kind
    _lower: dict[str, str] = field(default_factory=dict)  # the same, by lower-case value
    _guids: set[str] = field(default_factory=set)  # the digits of every GUID learned
    _short_hosts_seen: bool = False  # a host name too short to learn was met: _short_hosts has work
    _pattern: re.Pattern[str] | None = None

    # --- pass 1 ---------------------------------------------------------------------------

    def learn(self, text: str) -> None:
        for match in _JSON_ID.finditer(text):
            self._learn(_ID_KEYS[match["key"].lower()], match["value"])
        for finder in (_TEXT_ID, _PAIR_ID):
            for match in finder.finditer(text):
                self._learn(_ID_KEYS[match["key"].lower()], match["value"])
        for finder in (_MOUNT_SERVER, _CIFS_SERVER, _LUSTRE_SERVER, *_HOST_CONTEXTS):
            for match in finder.finditer(text):
                self._learn("hostname", match["value"])
                if "user" in finder.groupindex and match["user"] not in _KEPT_USERS:
                    self._learn("user", match["user"])
        self._learn_guids(text)
        for finder in (_HOME_USER, _OPTION_USER):  # a user named once is that user everywhere
            for match in finder.finditer(text):
                if match[0] not in _KEPT_USERS:
                    self._learn("user", match[0])
        self._learn_columns(text)
        self._pattern = None

    def learn_hostname(self, name: str) -> None:
        self._learn("hostname", name)

    def _learn(self, kind: str, value: str) -> None:
        value = value.strip()
        if (
            kind == "hostname"
            and len(value.partition(".")[0]) < _MIN_LEARNED
            and value.lower() not in _KEPT_HOSTNAMES
        ):
            self._short_hosts_seen = True
        if len(value) < _MIN_LEARNED or value.lower() in _JUNK_VALUES or not value.strip("0-:. "):
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

    def _learn_guids(self, text: str) -> None:
        """IB GUIDs by their digits: every ``xxxx:xxxx:xxxx:xxxx`` and every ``0x…`` on a line
        naming a GUID, so that the same GUID written bare (``0x0002c90300012345`` on a line that
        does not say ``guid``) is replaced too, not left beside its pseudonym."""
        for match in _GUID_SEEN.finditer(text):
            if match["colon"]:
                self._guids.add(match["colon"].replace(":", "").lower())
            elif "guid" in _line_of(match).lower():
                self._guids.add(match["hex"].lower())

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
                literal = literal_trie(self.literals)
                alternatives.append(rf"(?P<literal>(?<![A-Za-z0-9])(?i:{literal})(?![A-Za-z0-9]))")
            alternatives += [f"(?P<{name}>{expression})" for name, expression in _SHAPES]
            self._pattern = re.compile("|".join(alternatives), re.M)
        return self._pattern

    def text(self, text: str) -> str:
        return self._short_hosts(self.pattern().sub(self._replace, text))

    def _short_hosts(self, text: str) -> str:
        """Host names too short to replace everywhere (`vm`, `n1`: words and sysctl keys hold
        them, `vm.dirty_ratio`) replaced where the text itself says a host is named: a uname's
        node name, systemd's `Hostname set to <…>`, a prompt's `user@host`, a syslog line's host
        field. Longer names were learned from the same places and are replaced already. The
        contexts are searched again only where pass 1 met such a name (they are a pass over the
        text each: 0.3 s for a sos report's 5.4 MB symbol table)."""
        if not self._short_hosts_seen:
            return text
        for finder in _HOST_CONTEXTS:
            text = finder.sub(self._context_host, text)
        return text

    def _context_host(self, match: re.Match[str]) -> str:
        value = match["value"]
        if len(value.partition(".")[0]) >= _MIN_LEARNED or value.lower() in _KEPT_HOSTNAMES:
            return match[0]
        start, end = (at - match.start() for at in match.span("value"))
        return match[0][:start] + self.hostname(value) + match[0][end:]

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
            literal_kind = self._lower.get(value.lower(), "serial")
            if literal_kind in ("hostname", "user") and _not_a_host_here(match):
                return value
            return self._literal(literal_kind, value)
        handler = getattr(self, f"_{kind}")
        return handler(value, match)

    def _literal(self, kind: str, value: str) -> str:
        if kind == "hostname":
            return self.hostname(value)
        if kind == "user":
            return self._user(value)
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

    def _nvmekey(self, value: str, match: re.Match[str]) -> str:
        """The key's shape with other digits (derived, so one key stays one key in the copy)."""
        head, _, rest = value.removesuffix(":").rpartition(":")
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        digest = b"".join(self.mapper.digest("nvmekey", value, n) for n in range(1 + len(rest) // 32))
        body = "".join(alphabet[byte % 64] for byte in digest[: len(rest)])
        return f"{head}:{body}" + (":" if value.endswith(":") else "")

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
            return self._mac(value)
        if len(groups) == 4 and all(len(g) == 4 for g in groups):  # ibv_devinfo node_guid
            return self._guid(value)
        if len(groups) >= 8 and all(len(g) == 2 for g in groups):  # IPoIB hardware address
            return self._mac(value)
        try:
            address = ipaddress.IPv6Address(value)
        except ValueError:
            return value
        return self._ipv6(value, address)

    def _dashhex(self, value: str, match: re.Match[str]) -> str:
        return self._mac(value)

    def _enxmac(self, value: str, match: re.Match[str]) -> str:
        return "enx" + self._mac(value[3:])

    def _dotmac(self, value: str, match: re.Match[str]) -> str:
        return self._mac(value)

    def _mac(self, value: str) -> str:
        """A hardware address mapped by its digits, so that ``0C:42:A1:…``, ``0c-42-a1-…``,
        ``0c42.a1…`` and ``enx0c42a1…`` are one address with one pseudonym, each written back in
        its own spelling (separators and case)."""
        digits = "".join(c for c in value.lower() if c in HEX)
        mapped = iter(self.mapper.hex_like("mac", digits))
        spelled = "".join(next(mapped) if c.lower() in HEX else c for c in value)
        return spelled.upper() if value.upper() == value else spelled

    def _fqdn(self, value: str, match: re.Match[str]) -> str:
        name = value.lower()
        if any(name == domain or name.endswith("." + domain) for domain in _PUBLIC_DOMAINS):
            return value
        return self.hostname(value)

    def _guid(self, value: str) -> str:
        """A 64-bit GUID in any notation: mapped by value, so ``0x0002c9030001`` in ibstat and
        ``0002:c903:0001`` in ibv_devinfo and a GID's low half stay the same GUID."""
        prefix = value[:2] if value[:2].lower() == "0x" else ""
        body = value[len(prefix) :]
        digits = "".join(c for c in body.lower() if c in HEX)
        mapped = iter(self.mapper.hex_like("guid", digits))
        return prefix + "".join(same_case(next(mapped), c) if c.lower() in HEX else c for c in body)

    def _guid0x(self, value: str, match: re.Match[str]) -> str:
        digits = value[2:].lower()
        if digits in self._guids or digits in self.mapper.maps.get("guid", {}):
            return self._guid(value)
        return self._guid(value) if "guid" in _line_of(match).lower() else value  # else: an address

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
        text = compat.ipv6_text(mapped, exploded=len(value) == 39)  # hex groups on every Python
        text = text.upper() if value.isupper() else text
        self.mapper.maps.setdefault("ipv6", {})[value] = text
        return text


_UUID = lazy_compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")


_GUID_SEEN = lazy_compile(
    r"(?<![\w:])(?:0x(?P<hex>[0-9A-Fa-f]{16})|(?P<colon>[0-9A-Fa-f]{4}(?::[0-9A-Fa-f]{4}){3}))(?![\w:])"
)


def _line_of(match: re.Match[str]) -> str:
    text = match.string
    end = text.find("\n", match.end())
    return text[text.rfind("\n", 0, match.start()) + 1 : end if end >= 0 else len(text)]


def _not_a_host_here(match: re.Match[str]) -> bool:
    """A word spelled like a learned host name that is something else where it stands: a key
    (`data=journal` is the option, not a host called `data`); replacing it would change the
    diagnosis (`host1=journal` is no journal mode)."""
    return match.string[match.end() : match.end() + 1] == "="


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
    """The map to keep: every original and its replacement by kind, and the key that maps
    addresses (so that ``--map`` keeps a ticket's pseudonyms across runs)."""
    maps = {
        kind: dict(sorted(table.items())) for kind, table in sorted(redactor.mapper.maps.items()) if table
    }
    return {"format": MAP_FORMAT, "format_version": 1, "key": redactor.mapper.key.hex(), "maps": maps}


def redactor_from_map(mapping: dict[str, Any]) -> Redactor:
    """A redactor that goes on where a saved map left off: the same key (so addresses map as
    before) and every earlier replacement kept, new originals numbered after the old ones."""
    if mapping.get("format") != MAP_FORMAT or not isinstance(mapping.get("maps"), dict):
        raise ValueError("not a gdsdoctor redaction map")
    key = mapping.get("key")
    mapper = Mapper(key=bytes.fromhex(key)) if isinstance(key, str) and len(key) == 64 else Mapper()
    for kind, table in mapping["maps"].items():
        if isinstance(kind, str) and isinstance(table, dict):
            pairs = {str(k): str(v) for k, v in table.items() if isinstance(k, str) and isinstance(v, str)}
            check_pairs(kind, pairs)
            mapper.maps[kind] = pairs
            mapper._taken[kind] = set(pairs.values())
    redactor = Redactor(mapper=mapper)
    for name in mapper.maps.get("hostname", {}):
        redactor.learn_hostname(name)  # a host named in an earlier file is replaced in this one
    return redactor
