"""gdsdoctor.compat: what 3.11 added, the same on 3.10 (issue 33, item 1)."""

from __future__ import annotations

import datetime as dt
import enum

import pytest

from gdsdoctor.compat import UTC, StrEnum, iso_date, iso_datetime


@pytest.mark.parametrize(
    ("stamp", "expected"),
    [
        # dmesg --time-format=iso (util-linux): a comma and an offset without a colon
        ("2026-12-01T10:00:00,123456+0100", dt.datetime(2026, 12, 1, 9, 0, 0, 123456, tzinfo=UTC)),
        ("2026-12-01T10:00:00Z", dt.datetime(2026, 12, 1, 10, tzinfo=UTC)),  # RFC 3339
        ("2026-12-01T10:00:00.123456789+00:00", dt.datetime(2026, 12, 1, 10, 0, 0, 123456, tzinfo=UTC)),
        ("2026-12-01 10:00:00-05:30", dt.datetime(2026, 12, 1, 15, 30, tzinfo=UTC)),
        ("2026-12-01T10:00", dt.datetime(2026, 12, 1, 10)),
        ("2026-12-01", dt.datetime(2026, 12, 1)),
    ],
)
def test_iso_datetime_reads_the_stamps_logs_write(stamp: str, expected: dt.datetime) -> None:
    assert iso_datetime(stamp) == expected
    assert (iso_datetime(stamp).tzinfo is None) == (expected.tzinfo is None)


@pytest.mark.parametrize("text", ["2026-W01-2", "20261201", "2026-12-01T25:00:00", "yesterday", "2026-13-01"])
def test_iso_datetime_refuses_the_rest_on_every_version(text: str) -> None:
    with pytest.raises(ValueError):
        iso_datetime(text)


def test_iso_date_is_the_dashed_form_only() -> None:
    assert iso_date("2026-03-31") == dt.date(2026, 3, 31)
    for text in ("20260331", "2026-3-31", "2026-02-30"):
        with pytest.raises(ValueError):
            iso_date(text)


def test_str_enum_gives_its_value() -> None:
    class Colour(StrEnum):
        RED = "red"
        GREEN = enum.auto()

    assert str(Colour.RED) == "red" and f"{Colour.RED}" == "red" and Colour.RED == "red"
    assert Colour.GREEN == "green"


def test_ipv6_text_is_hex_groups_on_every_version() -> None:
    """3.13 writes an IPv4-mapped address dotted (a RoCE v2 GID read ::ffff:172.19.0.60 there and
    ::ffff:ac13:3c before): sysfs's hex form on every version."""
    import ipaddress

    from gdsdoctor.compat import ipv6_text

    mapped = ipaddress.IPv6Address("::ffff:172.19.0.60")
    assert ipv6_text(mapped, exploded=True) == "0000:0000:0000:0000:0000:ffff:ac13:003c"
    assert ipv6_text(mapped) == "::ffff:ac13:3c"
    link = ipaddress.IPv6Address("fe80::248a:703:9c:2e2a")
    assert ipv6_text(link) == "fe80::248a:703:9c:2e2a"
    assert ipv6_text(link, exploded=True) == "fe80:0000:0000:0000:248a:0703:009c:2e2a"
