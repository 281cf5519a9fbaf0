"""Prose that quotes outputs inline (issue 20, class 5): a ticket or an issue thread is read for the
code it quotes, with the paste's own line numbers, on real threads (tests/data/prose/SOURCES.md);
a request to run commands quotes no output and stays unread.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor.capture.unwrap import Part, inline_code
from gdsdoctor.pipeline import analyze_paths

PROSE = Path(__file__).resolve().parent / "data" / "prose"


def test_a_line_becomes_the_code_it_quotes_and_the_numbering_stays() -> None:
    text = "Run `nvidia-smi` please.\n\nIt prints `No devices were found` and then `sudo mount -o ro /dev/x /y` fails.\n"
    quoted = inline_code(Part(text))
    assert quoted is not None
    # a one-word span names a command (it quotes nothing); the longest span of a line is its code,
    # a command written as the prompt it was typed at
    assert quoted.text.split("\n") == ["", "", "$ sudo mount -o ro /dev/x /y", ""]
    assert inline_code(Part("no code here\nat all\n")) is None


@pytest.mark.parametrize(
    ("sample", "cause", "lines"),
    [
        # the command quoted in the prose gives the options of the mount error fenced below it
        ("azure-docs-55705.xfs-nobarrier-inline-mount.md", "xfs-nobarrier-rejected", [3, 6]),
        # nvidia-container-cli's own words for the NVML mismatch, quoted in an issue's description
        ("gpu-operator-898.container-cli-nvml-mismatch.md", "nvidia-driver-not-running", [2]),
        ("openclaw-issues-summary.nvml-mismatch.md", "nvidia-driver-not-running", [5]),
        # an issue form: the output pasted bare under its heading, read as a paragraph of its own
        ("tinygrad-ogkm-47.issue-form-bare-output.md", "nvidia-driver-not-running", [19]),
    ],
)
def test_an_output_quoted_inline_is_read_where_the_paste_has_it(
    sample: str, cause: str, lines: list[int]
) -> None:
    report = analyze_paths([PROSE / sample], None).report
    first = report["findings"][0]
    assert first["id"] == cause
    cited = sorted({e["line"] for e in first["evidence"] if e.get("line")})
    assert cited == lines


def test_a_request_to_run_commands_quotes_no_output_and_is_not_read() -> None:
    report = analyze_paths([PROSE / "ticket-commands-to-run.near-miss.md"], None).report
    assert report["summary"]["status"] == "UNKNOWN"
    assert any("not recognised" in note for note in report["source"]["notes"])


def test_a_paragraph_a_lenient_reader_claims_is_prose_when_its_reading_explains_half() -> None:
    """A maintainer's comment ("name: In the p2p mode, … peer-to-peer DMA …") looks like a bare
    kernel message to the kernel-log reader; as a paragraph of two lines of which it explains one,
    it stays prose (the fixture's file, copied from fastsafetensors #7)."""
    from tests.conftest import REPO

    notes = REPO / "fixtures" / "cases" / "fastsafetensors-003-gds-load-slower-than-safetensors" / "files"
    report = analyze_paths([notes / "maintainer-notes.txt"], None).report
    assert report["summary"]["status"] == "UNKNOWN"


def test_paragraphs_are_read_one_by_one_only_in_a_text_a_person_wrote() -> None:
    """The paragraph reading is bounded: a text over MAX_BLOCKS_CHARS (a log, an attack) or of one
    paragraph is not split; a ticket's paragraphs keep their first lines."""
    from gdsdoctor.capture.unwrap import MAX_BLOCKS_CHARS, text_blocks

    ticket = "## Terminal output\n\nnvidia-smi\nNo devices were found\n\nThanks\n"
    assert [(b.first_line, b.text) for b in text_blocks(ticket)] == [
        (3, "nvidia-smi\nNo devices were found"),
        (6, "Thanks"),
    ]
    assert text_blocks("one paragraph\nof two lines\n") == []
    assert text_blocks(("word " * 20 + "\n\n") * (MAX_BLOCKS_CHARS // 100)) == []
