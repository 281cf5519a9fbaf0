"""df in another language (issue 20, class 5): coreutils translates df's titles into some 40
languages, never its shape. The reader finds the header by the rows under it and the block size
by the number in the size title, and reads what the C locale's df gives, in every language this
machine's coreutils catalogs hold (this machine's own df, run for real), and in public pastes."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from blockfuzz import read

from gdsdoctor.probes import fs

CATALOGS = sorted(p.parts[-3] for p in Path("/usr/share/locale").glob("*/LC_MESSAGES/coreutils.mo"))
# -k: 1K blocks, -T: with types, -hT: human sizes, -i: inodes, -P -B1: POSIX titles (no "%" title)
OPTIONS = [("-k",), ("-T",), ("-hT",), ("-i",), ("-P", "-B1"), ("-BM",)]


def _df(language: str, options: tuple[str, ...], points: tuple[str, ...] = ()) -> str:
    env = {**os.environ, "LC_ALL": "C.UTF-8", "LANGUAGE": language}
    argv = ["df", *options, *points]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=30).stdout


def _stable_points() -> tuple[str, ...]:
    """The host's mounts that other tests do not come and go on (loop devices, temporary
    directories): each language's df is compared with the C locale's on these."""
    section = fs.parse_df(_df("C", ("-P",)), "df.txt")
    temporary = tempfile.gettempdir().rstrip("/") + "/"
    return tuple(
        e["mountpoint"]
        for e in section["filesystems"]
        if not e["source"].startswith("/dev/loop") and not (e["mountpoint"] + "/").startswith(temporary)
    )


def _table(text: str) -> list[tuple]:
    section = fs.parse_df(text, "df.txt")
    # the totals and the types; used/avail move between two runs of df on a live machine
    return [section["counts"]] + [
        (e["mountpoint"], e["fstype"], e["size_bytes"]) for e in section["filesystems"]
    ]


def _title(text: str) -> list[str]:
    return text.split("\n", 1)[0].split()


@pytest.mark.skipif(
    shutil.which("df") is None or not CATALOGS, reason="no df or no coreutils translations here"
)
@pytest.mark.parametrize("options", OPTIONS, ids=[" ".join(o) for o in OPTIONS])
def test_real_df_reads_alike_in_every_language_of_this_machine(options: tuple[str, ...]) -> None:
    points = _stable_points()
    english = _df("C", options, points)
    expected = _table(english)
    assert len(expected) > 2
    outputs = {language: _df(language, options, points) for language in CATALOGS}
    translated = {language: text for language, text in outputs.items() if _title(text) != _title(english)}
    if not translated:
        pytest.skip("this machine's df prints the same titles in every language (no catalog in use)")
    misread = {}
    for language, text in translated.items():
        if not fs.recognise_df(text) or _table(text) != expected:
            misread[language] = text.split("\n", 1)[0]
    assert not misread
    assert expected[0] == ("inodes" if "-i" in options else "bytes")


@pytest.mark.parametrize(
    "name, language_rows",
    [
        ("df-k.de.oracle-xe-ubuntu-notes.txt", ("/", None, 65791532 * 1024, 16)),
        ("df-T.ja.centos-xfs-notes.txt", ("/", "xfs", 121047300 * 1024, 79)),
        ("df.ru.nvme-dualboot-notes.txt", ("/windows", None, 473999996 * 1024, 68)),
        ("df-BM.ja.almalinux-notes.txt", ("/home", None, 274047 * 2**20, 2)),
    ],
)
def test_public_pastes_of_translated_df(name: str, language_rows: tuple) -> None:
    text = read("fs", name)
    assert fs.recognise_df(text)
    section = fs.parse_df(text, name)
    mountpoint, fstype, size, use = language_rows
    entry = section["by_mountpoint"][mountpoint]
    assert (entry["fstype"], entry["size_bytes"], entry["use_pct"], section["counts"]) == (
        fstype,
        size,
        use,
        "bytes",
    )
    assert entry["src"]["line"] == next(
        i for i, line in enumerate(text.splitlines(), 1) if line.endswith(mountpoint)
    )


@pytest.mark.parametrize(
    "text",
    [
        # `lfs df`: df's row shape under a table of OSTs (read by its own reader, never as df)
        "UUID                   1K-blocks        Used   Available Use% Mounted on\n"
        "lustre-MDT0000_UUID      2210560       35520     1975040   2% /mnt/lustre[MDT:0]\n",
        # a prose line above a table-like line: not a header
        "see /etc/fstab for the mounts\n/dev/sda1 100 50 50 50% /\n",
        # one row of df's shape with nothing above it
        "/dev/sda1 100 50 50 50% /\n",
    ],
    ids=["lfs-df", "path-in-prose", "no-header"],
)
def test_near_misses_are_not_a_translated_df(text: str) -> None:
    assert not fs.recognise_df(text)
