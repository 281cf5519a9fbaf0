"""Syslog and journalctl stamps in the month names of the locale that printed them
(gdsdoctor.syslog_time): the table is glibc's own (checked on its locale sources), and a
localized journal is read as the English one is: its clock, its host, its events' ages, and its
host name redacted.

The Chinese sample is a real one: the journal quoted in NVIDIA/open-gpu-kernel-modules#626
(tests/data/dmesg/SOURCES.md); the other locales' lines are that sample with the month glibc's
``%b`` gives in each (what journalctl's short format prints there).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gdsdoctor import syslog_time
from gdsdoctor.capture.redact import Redactor
from gdsdoctor.capture.unwrap import unwrap
from gdsdoctor.facts.event_clock import epoch_of
from gdsdoctor.pipeline import analyze_paths

LOCALES = Path("/usr/share/i18n/locales")
SAMPLE = Path(__file__).parent / "data" / "dmesg" / "journal-zh_CN-nvrm-api-mismatch.issue626.txt"


def _glibc_names(locale: str, key: str, depth: int = 0) -> list[str]:
    """The names under ``key`` (``abmon``, ``abday``) in a glibc locale source's LC_TIME,
    following its ``copy``."""
    text = (LOCALES / locale).read_text(encoding="utf-8", errors="replace")
    section = text.split("\nLC_TIME", 1)[1].split("\nEND LC_TIME", 1)[0]
    if (copied := re.search(r'^copy\s+"([^"]+)"', section, re.M)) and key not in section:
        assert depth < 5
        return _glibc_names(copied[1], key, depth + 1)
    entry = re.search(rf"^{key}\s+((?:.*/\n)*.*)$", section, re.M)
    assert entry, locale
    names = re.findall(r'"([^"]*)"', entry[1])
    return [re.sub(r"<U([0-9A-Fa-f]{4,8})>", lambda m: chr(int(m[1], 16)), n).strip() for n in names]


@pytest.mark.parametrize("locale", sorted(set(syslog_time.ABBREVIATIONS) - {"C"}))
def test_the_month_and_weekday_names_are_glibcs(locale: str) -> None:
    if not (LOCALES / locale).is_file():
        pytest.skip(
            "glibc's locale sources are not installed (Debian's locales package; .ci/run installs it)"
        )
    assert syslog_time.ABBREVIATIONS[locale].split() == _glibc_names(locale, "abmon")
    assert syslog_time.WEEKDAYS[locale].split() == _glibc_names(locale, "abday")
    assert set(syslog_time.WEEKDAYS) == set(syslog_time.ABBREVIATIONS)


def test_a_name_is_one_month_in_every_locale() -> None:
    months: dict[str, set[int]] = {}
    for names in syslog_time.ABBREVIATIONS.values():
        for number, name in enumerate(names.split(), start=1):
            months.setdefault(name, set()).add(number)
    assert {name: numbers for name, numbers in months.items() if len(numbers) > 1} == {}


# April 20 in each locale's journalctl short format: "%b %d %H:%M:%S" (ja/ko pad the month)
APRIL = {
    "C": "Apr",
    "de_DE": "Apr",
    "fr_FR": "avril",
    "ru_RU": "апр",
    "zh_CN": "4月",
    "ja_JP": " 4月",
    "ko_KR": " 4월",
}


@pytest.mark.parametrize("locale", sorted(APRIL))
def test_a_localized_stamp_has_the_english_ones_time(locale: str) -> None:
    assert epoch_of(f"{APRIL[locale]} 20 19:55:29") == epoch_of("Apr 20 19:55:29") is not None
    assert epoch_of(f"{APRIL[locale]} 31 19:55:29") is None  # April has 30 days


@pytest.mark.parametrize("locale", sorted(APRIL))
def test_a_localized_journal_reads_as_the_english_one(tmp_path: Path, locale: str) -> None:
    """Its clock, its host, its event: before, `4月 20 19:55:29 Reverier-Arch kernel: …` lost its
    time, its host was taken to be `4月`, and the event had no age."""
    english = SAMPLE.read_text().replace("4月 ", "Apr ")
    paste = tmp_path / "journal.txt"
    localized = english.replace("Apr ", APRIL[locale] + " ")
    paste.write_text(localized)
    ours, theirs = analyze_paths([paste]), analyze_paths([_written(tmp_path / "en.txt", english)])
    for analysis in (ours, theirs):
        assert analysis.facts["dmesg"]["format"] == "journal"
    assert [(e["kind"], e["message"], epoch_of(e["timestamp"])) for e in ours.facts["dmesg"]["events"]] == [
        (e["kind"], e["message"], epoch_of(e["timestamp"])) for e in theirs.facts["dmesg"]["events"]
    ]
    assert theirs.facts["dmesg"]["events"] and epoch_of(theirs.facts["dmesg"]["events"][0]["timestamp"])
    assert [f["id"] for f in ours.report["findings"]] == [f["id"] for f in theirs.report["findings"]]
    # the host the paste names (the one-host check reads it): the syslog field, not the month
    assert unwrap(localized)[0].identity["hostname"] == {"Reverier-Arch"}


def _written(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize("locale", sorted(APRIL))
def test_the_host_of_a_localized_journal_line_is_redacted(locale: str) -> None:
    line = f"{APRIL[locale]} 20 19:55:29 gpunode19 kernel: NVRM: API mismatch\n"
    redactor = Redactor()
    redactor.learn(line)
    assert "gpunode19" not in redactor.text(line)


def test_a_line_that_only_looks_like_a_stamp_is_no_time() -> None:
    for text in ("Foo 20 19:55:29 host kernel: x", "13月 20 19:55:29", "node1 20 19:55:29"):
        assert syslog_time.epoch(text) is None, text


# util-linux dmesg itself, run on this VM in four locales at one moment (the same 24 lines).
DMESG_T = {
    locale: SAMPLE.parent / f"dmesg-T.this-machine.{locale}.txt"
    for locale in ("C", "de_DE", "zh_CN", "ko_KR")
}


@pytest.mark.parametrize("locale", ["de_DE", "zh_CN", "ko_KR"])
def test_localized_dmesg_T_reads_as_the_c_locales(locale: str) -> None:
    """`[Di Dez  1 21:52:41 2026]`, `[二 12月  1 …]`, `[화 12월  1 …]`: before, no line was dated."""
    from gdsdoctor.probes.dmesg import parse

    ours, theirs = (parse(DMESG_T[name].read_text(), "dmesg.txt") for name in (locale, "C"))
    assert ours["format"] == theirs["format"] == "dmesg_T"
    assert len(theirs["events"]) == 6
    for mine, english in zip(ours["events"], theirs["events"], strict=True):
        assert (mine["kind"], mine["message"]) == (english["kind"], english["message"])
        assert epoch_of(mine["timestamp"]) == epoch_of(english["timestamp"]) is not None


def test_dmesg_e_with_a_decimal_comma_is_read() -> None:
    """`dmesg -e` in French: `[déc. 1 21:52]`, then `[  +0,041301]` for each next line."""
    from gdsdoctor.probes.dmesg import parse

    section = parse((SAMPLE.parent / "dmesg-e.this-machine.fr_FR.txt").read_text(), "dmesg.txt")
    assert section["format"] == "dmesg_H" and section["line_count"] == 30


def test_a_stamp_in_an_unknown_locale_leaves_the_line_undated_never_misread(tmp_path: Path) -> None:
    """Greek is not in the table: `Απρ 20 19:55:29 gpunode19 kernel: …` (glibc's el_GR) was
    rewritten as `Απρ kernel: …`, its clock dropped and `Απρ` taken for its host."""
    paste = _written(tmp_path / "journal.txt", SAMPLE.read_text().replace("4月 ", "Απρ "))
    analysis = analyze_paths([paste])
    assert "Απρ" not in unwrap(paste.read_text())[0].identity.get("hostname", set())
    events = analysis.facts["dmesg"]["events"]
    assert [e["kind"] for e in events] == ["nvrm_api_mismatch"]
    assert events[0]["src"]["text"].startswith("Απρ 20 19:55:29 Reverier-Arch kernel: NVRM: API mismatch")


# systemd's journalctl itself (252) on a journal file of this VM's kernel lines, in five locales
# and in -o short-full (tests/data/dmesg/SOURCES.md says how it was made).
JOURNAL = {
    locale: SAMPLE.parent / f"journalctl-short.this-machine.{locale}.txt"
    for locale in ("C", "de_DE", "ja_JP", "ko_KR", "zh_CN")
}
SHORT_FULL = SAMPLE.parent / "journalctl-short-full.this-machine.txt"


@pytest.mark.parametrize("locale", ["de_DE", "ja_JP", "ko_KR", "zh_CN"])
def test_real_localized_journalctl_reads_as_the_c_locales(locale: str) -> None:
    from gdsdoctor.probes.dmesg import parse

    ours, theirs = (parse(JOURNAL[name].read_text(), "journal.txt") for name in (locale, "C"))
    assert (
        ours["format"] == theirs["format"] == "journal" and ours["line_count"] == theirs["line_count"] == 11
    )
    assert [(e["kind"], e["message"], epoch_of(e["timestamp"])) for e in ours["events"]] == [
        (e["kind"], e["message"], epoch_of(e["timestamp"])) for e in theirs["events"]
    ]
    assert theirs["events"] and epoch_of(theirs["events"][0]["timestamp"]) is not None


def test_journalctl_short_full_is_read_with_its_year_and_zone() -> None:
    """`Tue 2026-12-01 21:52:41 UTC gpunode19 kernel: …`: systemd's own stamp, the same in every
    locale; it was read as a bare message, undated and its host unseen."""
    from gdsdoctor.probes.dmesg import parse

    section = parse(SHORT_FULL.read_text(), "journal.txt")
    assert section["format"] == "journal" and section["line_count"] == 11
    (event,) = section["events"]
    assert event["kind"] == "fs_shutdown" and event["message"].startswith("XFS (loop1): ")
    assert epoch_of(event["timestamp"]) == epoch_of("2026-12-01T21:52:41+00:00") + 1  # its own second
    assert epoch_of("Tue 2026-12-01 23:52:41 +02") == epoch_of("Tue 2026-12-01 21:52:41 UTC")
    line = SHORT_FULL.read_text().splitlines()[0] + "\n"
    redactor = Redactor()
    redactor.learn(line)
    assert "gpunode19" not in redactor.text(line)


@pytest.mark.parametrize("mode", ["short-unix", "short-delta"])
def test_journalctl_short_unix_and_short_delta_read_as_short_monotonic(mode: str) -> None:
    """`1796161961.000000 gpunode19 kernel: …` and `[ 7244.479107 <    0.016730 >] gpunode19
    kernel: …` (journalctl 252 on the same journal) were bare messages."""
    from gdsdoctor.probes.dmesg import parse, recognise

    text = (SAMPLE.parent / f"journalctl-{mode}.this-machine.txt").read_text()
    ours = parse(text, "journal.txt")
    mono = parse((SAMPLE.parent / "journalctl-short-monotonic.this-machine.txt").read_text(), "journal.txt")
    assert recognise(text) and ours["format"] == mono["format"] == "journal"
    assert [(e["kind"], e["message"]) for e in ours["events"]] == [
        (e["kind"], e["message"]) for e in mono["events"]
    ]
    (event,) = ours["events"]
    if mode == "short-unix":  # a wall clock: the journal's realtime stamp, as short-full prints it
        full = parse(SHORT_FULL.read_text(), "journal.txt")["events"][0]
        assert epoch_of(event["timestamp"]) == epoch_of(full["timestamp"]) is not None
    else:  # seconds since boot, as short-monotonic gives them
        assert event["monotonic_s"] == mono["events"][0]["monotonic_s"] is not None


def test_every_journalctl_mode_pasted_gives_the_same_diagnosis() -> None:
    """Through the paste reader (which rewrites syslog prefixes): short-unix's epoch was taken for
    the host, a different one on each line, and the paste refused as "more than one host"."""
    modes = sorted(SAMPLE.parent.glob("journalctl-*.this-machine*.txt"))
    assert len(modes) == 12
    diagnoses = {
        path.name: ([f["id"] for f in a.report["findings"]], [h["id"] for h in a.report["history"]])
        for path in modes
        for a in [analyze_paths([path])]
    }
    assert set(map(repr, diagnoses.values())) == {repr(([], ["fs-errors-or-shutdown"]))}, diagnoses


def test_json_pretty_records_are_read_on_their_message_lines() -> None:
    """`journalctl -o json-pretty`: a record over a dozen lines; each event cites the line of its
    MESSAGE, and a paste cut in the middle of a record keeps the records before it."""
    from gdsdoctor.probes.dmesg import parse, recognise

    text = (SAMPLE.parent / "journalctl-json-pretty.this-machine.txt").read_text()
    section = parse(text, "journal.json")
    assert recognise(text) and section["format"] == "journal" and section["line_count"] == 11
    (event,) = section["events"]
    line = text.split("\n")[event["src"]["line"] - 1]
    assert line == event["src"]["text"] and '"MESSAGE" : "XFS (loop1): Log I/O Error' in line
    cut = text[: text.index(event["src"]["text"])]  # the shutdown's record cut before its message
    assert parse(cut, "journal.json")["line_count"] == cut.count('"MESSAGE"') == 4  # the whole records
    for junk in ('{\n\t"MESSAGE" : 12\n}\n', '{\n\t"A" : [[[[\n'):
        assert not recognise(junk)


@pytest.mark.parametrize("mode", ["export", "verbose"])
def test_export_and_verbose_records_cite_their_message_line(mode: str) -> None:
    """The records are rewritten as dmesg lines for the reader; each stays on the line of its
    MESSAGE field (they were numbered in the rewritten text: line 5 for a MESSAGE on line 40)."""
    path = SAMPLE.parent / f"journalctl-{mode}.this-machine.txt"
    (event,) = analyze_paths([path]).facts["dmesg"]["history"]
    cited = path.read_text().split("\n")[event["src"]["line"] - 1]
    assert cited.strip().startswith("MESSAGE=XFS (loop1): Log I/O Error"), cited
    assert event["monotonic_s"] == 7244.498003


@pytest.mark.parametrize(
    "path", sorted(SAMPLE.parent.glob("journalctl-*.this-machine*.txt")), ids=lambda p: p.name
)
def test_the_host_of_every_journalctl_mode_is_redacted(tmp_path: Path, path: Path) -> None:
    """Each mode names the host its own way (a syslog field, `_HOSTNAME=`, `"_HOSTNAME" : …`)."""
    from gdsdoctor.capture.redact_io import redact_files

    paste = tmp_path / path.name
    paste.write_bytes(path.read_bytes())
    redact_files([paste])
    out = (tmp_path / f"{path.name}.redacted").read_text()
    assert "gpunode19" in path.read_text() and "gpunode19" not in out
