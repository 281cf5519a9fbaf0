"""unwrap rules wrappers out by C tests on the whole text before it looks at a paste's lines (no
fence without ``` or ~~~, no prompt without $ # %, no section header without its bars at a line
start, no quoting without a `>` after a line's blanks: docs/performance.md); with every gate
open it must give the same parts."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gdsdoctor.capture import unwrap

LINES = [
    "[  519.201025] nvme nvme0: I/O 39 QID 3 timeout, aborting",
    "e820: update [mem 0x1000-0x2000] usable ==> reserved",
    "> [  1.000000] EXT4-fs (nvme0n1p1): mounted filesystem",
    "  > > quoted twice",
    ">",
    "$ dmesg -T",
    "[root@node1 ~]# cat /proc/mounts",
    "# lsmod",
    "100% done",
    "=== lsmod ===",
    "   ---- cat /proc/mounts ----",
    "==> /var/log/syslog <==",
    "```",
    "~~~ text",
    "```bash",
    "`nvme0n1 259:0 0 1.8T 0 disk`",
    "Jan  2 10:00:00 node1 kernel: XFS (dm-4): metadata I/O error",
    "",
    "   ",
    "\t",
    "plain text, nothing wrapped",
]


def _open_gates(monkeypatch: pytest.MonkeyPatch) -> None:
    always = re.compile("")
    monkeypatch.setattr(unwrap, "_FENCE_MARKS", ("",))
    monkeypatch.setattr(unwrap, "_PROMPT_MARKS", ("",))
    monkeypatch.setattr(unwrap, "_SECTION_FIRST", always)
    monkeypatch.setattr(unwrap, "_QUOTED_FIRST", always)


@given(st.lists(st.sampled_from(LINES), max_size=25), st.sampled_from(["\n", "\r\n"]), st.booleans())
@settings(max_examples=300, deadline=None)
def test_unwrap_gives_the_same_parts_with_every_gate_open(
    lines: list[str], newline: str, inside: bool
) -> None:
    text = newline.join(lines)
    gated = unwrap.unwrap(text, inside_fences=inside)
    with pytest.MonkeyPatch.context() as monkeypatch:
        _open_gates(monkeypatch)
        assert unwrap.unwrap(text, inside_fences=inside) == gated
