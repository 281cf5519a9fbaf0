"""Kernel and tool lines quoted inside prose (issue 32 item 2): the quoted line read as its own
line, not the sentence around it. Real samples: tests/data/quoted_lines/SOURCES.md; near misses
(prose that names a word like "timeout", a quoted message of no storage subsystem) stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor.capture.quoted import quoted_line, unquote_lines
from gdsdoctor.probes import dmesg
from tests.conftest import read_paste

QUOTED = Path(__file__).resolve().parent / "data" / "quoted_lines"


def _kernel_events(path: Path) -> list[dict]:
    capture = read_paste(path)
    assert list(capture.assignments) == ["dmesg"]
    text = capture.artifacts[capture.assignments["dmesg"][0]].text
    return dmesg.parse(text, "x")["events"]


@pytest.mark.parametrize(
    ("name", "line", "message"),
    [
        ("backticked-in-sentence.open-vm-tools-579.txt", 3, "nvme nvme0: I/O 34 QID 13 timeout, aborting"),
        ("double-quoted-two-in-a-sentence.clearlinux-2121.txt", 17, "nvme nvme0: Abort status: 0x0"),
        ("dmesg-reports-quoted.lkml-2003-12-26-atapi.txt", 11, "end_request: I/O error, dev hdc, sector 0"),
    ],
)
def test_the_quoted_line_is_read_as_its_own_line(name: str, line: str, message: str) -> None:
    events = [e for e in _kernel_events(QUOTED / name) if e["src"]["line"] == line]
    assert events and all(e["message"] == message for e in events)
    assert all(e["src"]["text"] == message for e in events)  # the sentence around it is gone


def test_a_timeout_quoted_in_a_sentence_is_a_timeout_on_its_device() -> None:
    events = _kernel_events(QUOTED / "backticked-in-sentence.open-vm-tools-579.txt")
    assert [(e["kind"], e["device"]) for e in events] == [("nvme_timeout", "nvme0")]


def test_the_bare_lines_beside_a_quoting_sentence_stay_read() -> None:
    events = _kernel_events(QUOTED / "double-quoted-two-in-a-sentence.clearlinux-2121.txt")
    assert {e["src"]["line"] for e in events if e["kind"] == "nvme_timeout"} == {4, 6}


def test_a_line_quoted_in_a_paragraph_of_prose_is_read_alone() -> None:
    """A mail of prose whose one kernel line is quoted: nothing else in it is an output."""
    events = _kernel_events(QUOTED / "dmesg-reports-quoted.lkml-2003-12-26-atapi.txt")
    assert [(e["kind"], e["device"]) for e in events] == [("blk_io_error", "hdc")]


@pytest.mark.parametrize(
    "name",
    [
        "prose-timeout-no-kernel-line.nccl-340.txt",
        "dmesg-says-quoted-usb-not-storage.linux-usb-2021-05-18.txt",
    ],
)
def test_prose_without_a_quoted_storage_line_stays_quiet(name: str) -> None:
    assert not read_paste(QUOTED / name).assignments


@pytest.mark.parametrize(
    ("line", "quoted"),
    [
        ("dmesg shows: nvme nvme0: I/O 12 QID 3 timeout, aborting", "nvme nvme0: I/O 12 QID 3 timeout, aborting"),
        ("the job died with `OSError: [Errno 28] No space left on device` on rank 3", "OSError: [Errno 28] No space left on device"),
        ("we see \u201cXFS (nvme0n1): log I/O error -5\u201d right after", "XFS (nvme0n1): log I/O error -5"),
        ("then `[ 88.1] nvme nvme1: I/O 7 QID 0 timeout, reset controller` repeats", "[ 88.1] nvme nvme1: I/O 7 QID 0 timeout, reset controller"),
        ('[Result: dmesg shows "nvme nvme2: I/O 5 QID 1 timeout, aborting" after it]', "nvme nvme2: I/O 5 QID 1 timeout, aborting"),
    ],
)  # fmt: skip
def test_forms_of_quoting(line: str, quoted: str) -> None:
    assert quoted_line(line) == quoted


@pytest.mark.parametrize(
    "line",
    [
        "nvme nvme0: I/O 12 QID 3 timeout, aborting",  # a kernel line itself
        'EXT4-fs (sda1): mounted filesystem with ordered data mode. Opts: "errors=remount-ro"',
        '{"MESSAGE":"nvme nvme0: I/O 12 QID 3 timeout, aborting","_HOSTNAME":"n1"}',  # a journal record
        '[  12.3] audit: comm="nvme nvme0: I/O 12 QID 3 timeout" res=1',  # a log line with a time
        '["nvme nvme0: I/O 12 QID 3 timeout, aborting", "nvme nvme0: Abort status: 0x0"]',  # a list
        'look for "blk_update_request: I/O error, dev <disk>, sector N" in the log',  # a template
        "we see `nvme nvme0: I/O tag ... timeout, aborting` sometimes",  # an elision
        'we get a "timeout while saving the checkpoint" and the job stalls',  # no subsystem
        "torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9)",  # a logger's name
        "srun: error: node1: task 0: Killed",  # a program's prefix, no prose
        '"nvme nvme0: I/O 12 QID 3 timeout, aborting"',  # quoted alone: no prose around it
    ],
)
def test_what_quotes_no_line_stays_as_it_is(line: str) -> None:
    assert quoted_line(line) is None


def test_a_captured_log_is_never_read_for_quotes() -> None:
    """Quoting is what a person writes: a log larger than a ticket is left as it is."""
    line = "then `nvme nvme0: I/O 12 QID 3 timeout, aborting` again"
    lines = [line] * 4000  # ~230 KiB: a ticket's size at most
    removed: list[str] = []
    assert unquote_lines([*lines, *lines], removed) == ([*lines, *lines], set())
    assert unquote_lines(lines, removed)[1] == set(range(4000))
