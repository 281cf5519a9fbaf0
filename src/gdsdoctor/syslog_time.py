"""The wall clocks of kernel log lines, in the month and weekday names of whatever locale
printed them: syslog's and journalctl's ``Jan  2 10:00:00``, ``dmesg -T``'s
``[Wed Apr  9 08:23:03 2025]`` and ``dmesg -e``'s ``[Apr  9 08:23]``.

rsyslog's RFC 3164 stamp is always English, but journalctl's short format is the locale's
``%b %d %H:%M:%S`` and util-linux dmesg's is its ``%a %b %e %H:%M:%S %Y``: a support engineer
gets ``Mär 20 19:55:29``, ``4月 20 …``, `` 4월 20 …`` (Korean and Japanese pad the month to two
places with a space) or ``[Di Dez  1 21:52:07 2026]`` from a node whose owner reads German,
Chinese or Korean. A reader that knows only English names takes such a line for a message and
its first word for the host. One table of glibc's abbreviations serves every reader of these
lines (the kernel log, the paste unwrapper, the event clock, redaction); a test compares it with
glibc's own locale sources.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from gdsdoctor.compat import UTC, iso_datetime

# glibc's %b, January to December, of the C locale and of widely used others.
ABBREVIATIONS = {
    "C": "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec",
    "de_DE": "Jan Feb Mär Apr Mai Jun Jul Aug Sep Okt Nov Dez",
    "fr_FR": "janv. févr. mars avril mai juin juil. août sept. oct. nov. déc.",
    "es_ES": "ene feb mar abr may jun jul ago sep oct nov dic",
    "it_IT": "gen feb mar apr mag giu lug ago set ott nov dic",
    "pt_BR": "jan fev mar abr mai jun jul ago set out nov dez",
    "nl_NL": "jan feb mrt apr mei jun jul aug sep okt nov dec",
    "sv_SE": "jan feb mar apr maj jun jul aug sep okt nov dec",
    "pl_PL": "sty lut mar kwi maj cze lip sie wrz paź lis gru",
    "cs_CZ": "led úno bře dub kvě čen čec srp zář říj lis pro",
    "tr_TR": "Oca Şub Mar Nis May Haz Tem Ağu Eyl Eki Kas Ara",
    "ru_RU": "янв фев мар апр мая июн июл авг сен окт ноя дек",
    "zh_CN": " ".join(f"{n}月" for n in range(1, 13)),
    "ja_JP": " ".join(f"{n}月" for n in range(1, 13)),  # printed " 1月": the pad is not the name's
    "ko_KR": " ".join(f"{n}월" for n in range(1, 13)),
}
# glibc's %a, Sunday to Saturday, of the same locales (matched, never needed as a number).
WEEKDAYS = {
    "C": "Sun Mon Tue Wed Thu Fri Sat",
    "de_DE": "So Mo Di Mi Do Fr Sa",
    "fr_FR": "dim. lun. mar. mer. jeu. ven. sam.",
    "es_ES": "dom lun mar mié jue vie sáb",
    "it_IT": "dom lun mar mer gio ven sab",
    "pt_BR": "dom seg ter qua qui sex sáb",
    "nl_NL": "zo ma di wo do vr za",
    "sv_SE": "sön mån tis ons tor fre lör",
    "pl_PL": "nie pon wto śro czw pią sob",
    "cs_CZ": "Ne Po Út St Čt Pá So",
    "tr_TR": "Paz Pzt Sal Çrş Prş Cum Cts",
    "ru_RU": "Вс Пн Вт Ср Чт Пт Сб",
    "zh_CN": "日 一 二 三 四 五 六",
    "ja_JP": "日 月 火 水 木 金 土",
    "ko_KR": "일 월 화 수 목 금 토",
}
MONTH_NUMBERS: dict[str, int] = {
    name: number for names in ABBREVIATIONS.values() for number, name in enumerate(names.split(), start=1)
}


def _alternatives(names: Iterable[str]) -> str:
    """Longest first: ``10月`` before ``1月``."""
    return "|".join(re.escape(name) for name in sorted(set(names), key=len, reverse=True))


_MONTH = _alternatives(MONTH_NUMBERS)
_WEEKDAY = _alternatives(name for names in WEEKDAYS.values() for name in names.split())
# Regular expressions of the stamps (what follows them is the reader's). A line may start with
# the pad of a one-digit CJK month: the readers allow one space first.
STAMP = rf"(?:{_MONTH}) [ \d]?\d \d\d:\d\d:\d\d"  # syslog, journalctl
DATED_STAMP = rf"(?:(?:{_WEEKDAY}) )?{STAMP}(?:[.,]\d+)? \d{{4}}"  # dmesg -T, ctime
SHORT_STAMP = rf"(?:{_MONTH}) ?[ \d]?\d \d\d:\d\d"  # dmesg -e (--time-format reltime)
# journalctl -o short-unix: seconds since the epoch
UNIX_STAMP = r"\d{9,12}\.\d{1,9}"
# journalctl -o short-full: systemd's own format, English whatever the locale, with its zone
FULL_STAMP = r"(?:Sun|Mon|Tue|Wed|Thu|Fri|Sat) \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? [A-Za-z0-9+-]{1,6}"
_FULL = re.compile(rf"^\s?{FULL_STAMP}")
_PARTS = re.compile(
    rf"^\s?(?:(?:{_WEEKDAY})\s+)?({_MONTH}) +(\d{{1,2}}) (\d\d):(\d\d):(\d\d)(?:[.,](\d+))?(?: (\d{{4}}))?"
)


def epoch(text: str) -> float | None:
    """The epoch seconds of a syslog, journalctl or ``dmesg -T`` stamp, read as UTC (a log does
    not say its zone: only differences are sure), in the year 2000 where the stamp gives none
    (syslog: differences within one log still hold); None when ``text`` does not start with
    one."""
    if full := _FULL.match(text):
        return _full_epoch(full)
    m = _PARTS.match(text)
    if m is None:
        return None
    month, day, hour, minute, second, fraction, year = m.groups()
    try:
        when = datetime(
            int(year or 2000), MONTH_NUMBERS[month], int(day), int(hour), int(minute), int(second), tzinfo=UTC
        )
    except ValueError:  # Feb 30, 25:00:00
        return None
    return when.timestamp() + (float(f"0.{fraction}") if fraction else 0.0)


def _full_epoch(match: re.Match[str]) -> float | None:
    """short-full's ``Tue 2026-12-01 21:52:41 UTC``: a numeric zone (``+03``, ``-0530``) is
    applied, a named one (``CET``) read as UTC, as a stamp without a zone is."""
    _, day, clock, zone = match[0].split()
    numeric = zone[0] in "+-" and zone[1:].isdigit() and len(zone) in (3, 5)
    offset = f"{zone[:3]}:{zone[3:] or '00'}" if numeric else "+00:00"
    try:
        return iso_datetime(f"{day}T{clock}{offset}").timestamp()
    except ValueError:
        return None
