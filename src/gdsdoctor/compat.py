"""What Python 3.11 added that gdsdoctor uses, written once so that 3.10 gives the same answers.

gdsdoctor runs on the node's own interpreter (Ubuntu 22.04, the DGX OS 6 base, ships 3.10):
``requires-python >=3.10``. Three things differ:

- ``enum.StrEnum`` and ``datetime.UTC`` are 3.11 names (the same objects are built here);
- ``datetime.fromisoformat`` reads only its own output on 3.10 (``+00:00``, 3 or 6 fraction
  digits) and most of ISO 8601 from 3.11 (``+0100``, ``Z``, ``,5``, 9 digits): a log's stamp
  would be read on one and not the other. ``iso_datetime`` reads one grammar on every version:
  the stamps logs write (``dmesg --time-format=iso``'s ``2026-12-01T10:00:00,123456+0100``,
  RFC 3339's ``Z``, journalctl's ``short-iso``), and nothing else.
"""

from __future__ import annotations

import datetime as dt
import enum
import ipaddress
import re
from typing import Any

UTC = dt.timezone.utc

if hasattr(enum, "StrEnum"):
    StrEnum = enum.StrEnum
else:  # 3.10: what 3.11's StrEnum is (str() and format() give the value)

    class StrEnum(str, enum.Enum):  # type: ignore[no-redef]
        __str__ = str.__str__
        __format__ = str.__format__

        @staticmethod
        def _generate_next_value_(name: str, start: int, count: int, last_values: list[Any]) -> str:
            return name.lower()


# Date, then optionally a time (T or a space), fraction (. or ,) and zone (Z, +HH, +HHMM, +HH:MM).
_ISO = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)"
    r"(?:[T ](\d\d):(\d\d)(?::(\d\d)(?:[.,](\d{1,9}))?)?"
    r"(?:([Zz])|([+-])(\d\d)(?::?(\d\d))?)?)?"
)


def iso_datetime(text: str) -> dt.datetime:
    """An ISO 8601 stamp as a log writes it; ValueError for anything else (on every version)."""
    match = _ISO.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not an ISO 8601 time: {text!r}")
    year, month, day, hour, minute, second, fraction, zulu, sign, zone_h, zone_m = match.groups()
    zone = None
    if zulu:
        zone = UTC
    elif sign:
        offset = dt.timedelta(hours=int(zone_h), minutes=int(zone_m or 0))
        zone = dt.timezone(-offset if sign == "-" else offset)
    return dt.datetime(
        int(year),
        int(month),
        int(day),
        int(hour or 0),
        int(minute or 0),
        int(second or 0),
        int((fraction or "0").ljust(6, "0")[:6]),
        tzinfo=zone,
    )


def iso_date(text: str) -> dt.date:
    """``YYYY-MM-DD`` and nothing else (3.11's ``date.fromisoformat`` also takes ``20260331``)."""
    if not re.fullmatch(r"\d{4}-\d\d-\d\d", text):
        raise ValueError(f"not a date: {text!r}")
    return dt.date(int(text[:4]), int(text[5:7]), int(text[8:10]))


def ipv6_text(address: ipaddress.IPv6Address, exploded: bool = False) -> str:
    """An IPv6 address in hex groups, as sysfs and show_gids print a GID: 3.13 writes an
    IPv4-mapped one (``::ffff:172.19.0.60``) dotted in ``str()`` and ``.exploded``, older ones
    ``::ffff:ac13:3c``; this is the hex form on every version."""
    groups = [(int(address) >> shift) & 0xFFFF for shift in range(112, -1, -16)]
    if exploded:
        return ":".join(f"{group:04x}" for group in groups)
    if address.ipv4_mapped is None:
        return address.compressed  # no dotted part on any version
    return f"::ffff:{groups[6]:x}:{groups[7]:x}"
