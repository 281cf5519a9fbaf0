"""The ext4 options the kernel applies (/proc/fs/ext4/<dev>/options), read live and from pastes, on
real files captured on this VM (tests/data/fs/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor.errors import ParseError, Unavailable
from gdsdoctor.probes.ext4_options import parse_ext4_options, read_ext4_options, recognise_ext4_options

DATA = Path(__file__).resolve().parents[1] / "data" / "fs"
ORDERED = (DATA / "ext4-options.loop-journal-default-ordered.this-vm-6.18.txt").read_text()
JOURNAL = (DATA / "ext4-options.loop-data-journal-nobarrier.this-vm-6.18.txt").read_text()
NO_DATA_LINE = (DATA / "ext4-options.vda-root-no-data-line.this-vm-6.18.txt").read_text()


def test_the_default_mode_is_read_where_the_mount_table_leaves_it_out() -> None:
    [(device, entry)] = parse_ext4_options(ORDERED, "x")["devices"].items()
    assert (device, entry["data"], entry["barrier"], entry["nobarrier"]) == ("loop1", "ordered", True, False)
    assert entry["src"]["text"].endswith("options:data=ordered")
    journal = parse_ext4_options(JOURNAL, "x")["devices"]["loop1"]
    assert (journal["data"], journal["nobarrier"]) == ("journal", True)
    assert parse_ext4_options(NO_DATA_LINE, "x")["devices"]["vda"]["data"] is None


def test_pastes_are_recognised_and_other_text_is_not() -> None:
    assert recognise_ext4_options(ORDERED) and recognise_ext4_options(ORDERED + JOURNAL)
    assert not recognise_ext4_options("data=ordered\nbarrier\n")  # a bare cat names no device
    assert not recognise_ext4_options("/dev/loop1 /mnt ext4 rw,relatime 0 0\n")
    with pytest.raises(ParseError):
        parse_ext4_options("rw\n", "x")


def test_the_live_reader_writes_what_grep_prints(tmp_path: Path) -> None:
    options = tmp_path / "proc" / "fs" / "ext4" / "loop1" / "options"
    options.parent.mkdir(parents=True)
    options.write_text("".join(line.split(":", 1)[1] + "\n" for line in ORDERED.splitlines()))
    (tmp_path / "proc" / "fs" / "ext4" / "vda").mkdir()  # a device directory without its file
    assert read_ext4_options(tmp_path).decode() == ORDERED
    with pytest.raises(Unavailable):
        read_ext4_options(tmp_path / "elsewhere")
