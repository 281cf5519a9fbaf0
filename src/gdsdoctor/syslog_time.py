"""The wall clock at the start of a syslog or journalctl line, ``Jan  2 10:00:00``, in the month
names of whatever locale printed it.

rsyslog's RFC 3164 stamp is always English, but journalctl's short format is the locale's
``%b %d %H:%M:%S``: a support engineer gets ``Mär 20 19:55:29``, ``avril 20 …``, ``4月 20 …``
or `` 4월 20 …`` (Korean and Japanese pad the month to two places with a space) from a node
whose owner reads German, French, Chinese or Korean. A reader that knows only English months
takes such a line for a message and its first word for the host. One table of glibc's month
abbreviations serves every reader of these lines (the kernel log, the paste unwrapper, the
event clock, redaction); a test compares it with glibc's own, where the locales can be built.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

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
MONTH_NUMBERS: dict[str, int] = {
    name: number for names in ABBREVIATIONS.values() for number, name in enumerate(names.split(), start=1)
}
_MONTH = "|".join(re.escape(name) for name in sorted(MONTH_NUMBERS, key=len, reverse=True))
# The regular expression of a stamp (its seconds' fraction and what follows are the reader's);
# a line may start with the pad of a one-digit CJK month: the readers allow one space first.
STAMP = rf"(?:{_MONTH}) [ \d]?\d \d\d:\d\d:\d\d"
_PARTS = re.compile(rf"^\s?({_MONTH}) +(\d{{1,2}}) (\d\d):(\d\d):(\d\d)")


def epoch(text: str) -> float | None:
    """A stamp's seconds as if in the year 2000, UTC (syslog gives no year and no zone: only
    differences within one log are sure); None when ``text`` does not start with one."""
    m = _PARTS.match(text)
    if m is None:
        return None
    try:
        when = datetime(2000, MONTH_NUMBERS[m[1]], *(int(part) for part in m.groups()[1:]), tzinfo=UTC)
    except ValueError:  # Feb 30, 25:00:00
        return None
    return when.timestamp()
