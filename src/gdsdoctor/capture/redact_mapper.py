"""The redaction map: original -> replacement, per kind, consistent and one-to-one, made from
a random key (gdsdoctor.capture.redact finds the identifiers; this says what each becomes).

IPv4 and IPv6 addresses are mapped bit by bit with a keyed prefix-preserving function, and
which leading bits an address keeps (its special-purpose block's prefix, else its first byte)
is decided here too, so that no address is mapped into or out of a block.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

HEX = "0123456789abcdef"


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
            return prefix + "".join(same_case(next(digits), c) if c.lower() in HEX else c for c in body)

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


def same_case(digit: str, like: str) -> str:
    return digit.upper() if like.isupper() else digit


# Addresses are mapped by a keyed bijection, not picked: one may map to itself by chance, and
# an IPv6 address has several spellings (each a key) with one replacement.
_DERIVED_KINDS = frozenset({"ipv4", "ipv6"})


def check_pairs(kind: str, pairs: dict[str, str]) -> None:
    """A map whose entry keeps an original (``gpunode19 → gpunode19``) or gives one pseudonym to
    two originals would publish the name, or make two servers one: refused, never used."""
    if kind in _DERIVED_KINDS:
        return
    same = next((original for original, pseudonym in pairs.items() if original == pseudonym), None)
    if same is not None:
        raise ValueError(f"its {kind} entry {same!r} maps to itself")
    seen: dict[str, str] = {}
    for original, pseudonym in pairs.items():
        if pseudonym in seen:
            raise ValueError(f"its {kind} entries {seen[pseudonym]!r} and {original!r} share one pseudonym")
        seen[pseudonym] = original


def literal_trie(names: Iterable[str]) -> str:
    """One expression matching each of ``names`` (case-insensitive), the longest first, as a
    trie: ``host(?:0(?:1|2))``. An alternation of the names themselves is tried name by name at
    every position of the text (20,000 learned host names: 49 s for a mount table); the trie
    costs one branch per character of the longest match, whatever the number of names."""
    root: dict[str, dict] = {}
    for name in names:
        node = root
        for char in name.lower():
            node = node.setdefault(char, {})
        node[""] = {}
    return _trie_expression(root)


def _trie_expression(node: dict[str, dict]) -> str:
    branches = []
    for char, child in sorted(node.items()):
        if not char:
            continue
        chain = re.escape(char)
        while len(child) == 1 and "" not in child:  # a run with no fork: one literal, no group
            ((char, child),) = child.items()
            chain += re.escape(char)
        branches.append(chain + _trie_expression(child))
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    return f"(?:{body})?" if "" in node else body  # greedy: the longer name first
