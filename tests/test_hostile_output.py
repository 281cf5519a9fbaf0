"""What a bundle says ends up on a terminal, in a ticket and in commands pasted into a root
shell: markup, escape sequences and shell syntax from the facts must arrive inert."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from gdsdoctor.engine.evaluate import render_command
from gdsdoctor.pipeline import analyze_paths
from gdsdoctor.report.escape import markdown_inline, visible
from gdsdoctor.report.json_report import render_json
from gdsdoctor.report.markdown import render_markdown
from gdsdoctor.report.text import render_text

# Raw bytes in a pasted /proc/mounts: the parser keeps them in the mountpoint and the line.
HOSTILE_MOUNTPOINTS = [
    "/mnt/[red]ALERT[/red]",
    "/mnt/[bold\\040red]B",  # octal-escaped space, as /proc/mounts writes it
    "/mnt/a\x1b[2J\x1b[H\x1b]0;owned\x07b",
    "/mnt/over\\015write",  # a carriage return, octal-escaped
    "/mnt/`reboot`",
    "/mnt/$(reboot)",
    "/mnt/a|b|c",
    "/mnt/[click](https://evil.example/x)",
    "/mnt/<script>alert(1)</script>",
    "/mnt/\u202eflip",
    "/mnt/csi\x9b31m",
    "/mnt/;rm",
]
ESC_SEQUENCES = ["\x1b[2J", "\x1b[H", "\x1b]0;", "\x07", "\r", "\u202e", "\x9b"]


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("hostile")
    lines = [f"/dev/nvme{i}n1 {m} ext4 rw,data=journal 0 0" for i, m in enumerate(HOSTILE_MOUNTPOINTS)]
    (folder / "mounts.txt").write_bytes("\n".join(lines).encode() + b"\n")
    (folder / "[click](https:evil.example)\x1b[2J.txt").write_text("not a known output\n")
    paths = sorted(folder.iterdir())
    report = analyze_paths(paths).report
    assert [f["id"] for f in report["findings"]] == ["ext4-data-journal"]
    return report


def _injected(output: str) -> list[str]:
    return [seq for seq in ESC_SEQUENCES if seq in output]


@pytest.mark.parametrize("color", [False, True])
def test_terminal_shows_markup_and_escapes_inert(hostile_report: dict, color: bool) -> None:
    output = render_text(hostile_report, color=color, verbose=True, width=300)
    assert _injected(output) == []
    assert "[red]ALERT[/red]" in output and "[bold red]B" in output  # literal, not a style
    assert "\\x1b[2J" in output and "\\x0d" in output and "\\u202e" in output and "\\x9b" in output
    if color:  # the only escape sequences are rich's own colours (SGR)
        assert re.sub(r"\x1b\[[0-9;]*m", "", output).count("\x1b") == 0


def test_markdown_keeps_links_html_and_tables_inert(hostile_report: dict) -> None:
    """Rendered by a CommonMark parser (as GitHub does): nothing from the facts becomes a link,
    HTML or a table, and what the facts said arrives as text or verbatim code."""
    output = render_markdown(hostile_report, verbose=True)
    assert _injected(output) == []
    tokens = list(_walk(MarkdownIt("commonmark").enable("table").parse(output)))
    kinds = {token.type for token in tokens}
    assert not kinds & {"link_open", "html_inline", "html_block", "table_open", "image"}
    texts = [t.content for t in tokens if t.type == "text"]
    note = next(text for text in texts if "not recognised" in text)
    assert "[click](https:evil.example)" in note and "\\x1b" in note  # shown literally: no link
    codes = {t.content for t in tokens if t.type == "code_inline"}
    assert "/dev/nvme8n1 /mnt/<script>alert(1)</script> ext4 rw,data=journal 0 0" in codes
    assert "/dev/nvme4n1 /mnt/`reboot` ext4 rw,data=journal 0 0" in codes  # verbatim, backticks kept
    fences = "".join(t.content for t in tokens if t.type == "fence")
    assert "grep -n -- '/mnt/`reboot`' /etc/fstab" in fences


def _walk(tokens: list[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        yield from _walk(token.children or [])


def test_json_escapes_every_control_character(hostile_report: dict) -> None:
    output = render_json(hostile_report)
    assert _injected(output) == [] and output.isascii()
    assert json.loads(output) == hostile_report


def test_remediation_from_hostile_facts_is_quoted_or_withheld(hostile_report: dict) -> None:
    commands = [step["command"] for step in hostile_report["findings"][0]["remediation"]]
    assert "grep -n -- '/mnt/$(reboot)' /etc/fstab" in commands
    assert "grep -n -- '/mnt/`reboot`' /etc/fstab" in commands
    assert "grep -n -- '/mnt/;rm' /etc/fstab" in commands
    assert "grep -n -- '/mnt/[bold red]B' /etc/fstab" in commands
    withheld = [c for c in commands if c.startswith("# withheld")]
    assert len(withheld) == 4  # ESC, CR, U+202E, C1 CSI: cannot be made safe to paste
    assert all(c == "# withheld: grep … (mountpoints unknown or unsafe to paste)" for c in withheld)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("/mnt/$(reboot)", "ls '/mnt/$(reboot)'"),
        ("`id`", "ls '`id`'"),
        ("a; rm -rf /", "ls 'a; rm -rf /'"),
        ("it's", "ls 'it'\"'\"'s'"),
        ("*", "ls '*'"),
        ("~root", "ls '~root'"),
        ("a\nb", None),
        ("a\x00b", None),
        ("a\rb", None),
        ("\x1b[2J", None),
        ("x\u202etxt.sh", None),
        ("zero\u200bwidth", None),
        ("csi\x9b", None),
        ("line\u2028sep", None),
        ("-a", None),
        ("--all", None),
        (None, "ls <x>"),  # not found: a placeholder the shell refuses to run
        ({"a": 1}, None),
    ],
)
def test_render_command_quotes_or_withholds(value: object, expected: str | None) -> None:
    [command] = render_command("ls {x}", {"x": value})
    assert command == (expected or "# withheld: ls … (x unknown or unsafe to paste)")


def test_option_like_values_are_fine_after_end_of_options() -> None:
    assert render_command("grep -n -- {x} /etc/fstab", {"x": "-a"}) == ["grep -n -- -a /etc/fstab"]
    assert render_command("umount {x} -- {y}", {"x": "-a", "y": "-b"})[0].startswith("# withheld")
    assert render_command("ls {x}", {"x": ["/ok", "-bad", "/also ok"]}) == [
        "ls /ok",
        "# withheld: ls … (x unknown or unsafe to paste)",
        "ls '/also ok'",
    ]


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_value_is_one_inert_argument_or_withheld(value: str) -> None:
    [command] = render_command("ls -l -- {x} /tmp", {"x": value})
    if command.startswith("# withheld"):
        return
    assert shlex.split(command) == ["ls", "-l", "--", value, "/tmp"]
    assert visible(command) == command  # nothing that a terminal would interpret


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_visible_and_markdown_inline_leave_nothing_live(value: str) -> None:
    shown = visible(value)
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", shown)
    inline = markdown_inline(value)
    assert "\n" not in inline
    assert not re.search(r"(?<!\\)[\[\]<>`|]", inline.replace("\\\\", ""))


def test_cli_markdown_of_hostile_files(tmp_path: Path) -> None:
    from tests.test_cli import gdsdoctor

    (tmp_path / "m.txt").write_bytes(b"/dev/x /mnt/a\x1b[2Jb ext4 rw,data=journal 0 0\n")
    for fmt in ("text", "markdown", "json"):
        result = gdsdoctor("analyze", str(tmp_path / "m.txt"), "--format", fmt)
        assert result.returncode == 1 and "\x1b[2J" not in result.stdout, fmt


def test_markdown_inline_blocks_block_syntax() -> None:
    assert markdown_inline("=== x") == "\\=== x"  # no setext heading underline
    assert markdown_inline("# title") == "\\# title" and markdown_inline("1. item") == "1\\. item"
    assert markdown_inline("a\nb|c") == "a b\\|c"


HOSTILE_LABEL = '<script>alert(1)</script>"><img src=x onerror=alert(2)>\x1b[2J'


class _Tags(HTMLParser):
    """Every element and attribute of a page, as a browser's parser would see them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_html_keeps_markup_from_the_facts_inert(hostile_report: dict) -> None:
    """Autoescaped text and self-escaping pictures: nothing from the facts becomes an element, an
    attribute, a link or a script, in the report or in the SVG pictures (hostile labels, device
    names, event messages)."""
    pytest.importorskip("jinja2")
    from gdsdoctor.report.html import render_html

    node = {
        "label": HOSTILE_LABEL,
        "kind": "gpu",
        "details": [HOSTILE_LABEL],
        "flags": [HOSTILE_LABEL],
        "children": [],
    }
    topology = {
        "tree": {"label": HOSTILE_LABEL, "kind": "host", "details": [], "flags": [], "children": [
            {"label": HOSTILE_LABEL, "kind": "socket", "details": [], "flags": [], "children": [node]}]},
        "gpus": [{"gpu": HOSTILE_LABEL, "bdf": HOSTILE_LABEL, "pairs": []}],
        "problems": [HOSTILE_LABEL],
        "summary": {"status": "WARNING", "causes": [HOSTILE_LABEL]},
    }  # fmt: skip
    event = {"t": 2.0, "kind": HOSTILE_LABEL, "device": HOSTILE_LABEL, "message": HOSTILE_LABEL}
    phase = {
        "start": 1.0, "end": 3.0, "bytes": 1, "bytes_per_s": 1.0, "io": {"mode": HOSTILE_LABEL},
        "collapses": [], "events": [event], "queue_depth": None,
        "limiters": [{"kind": "kernel_errors", "at": 2.0, "says": HOSTILE_LABEL}],
        "series": [{"t": 1.0, "bytes_per_s": 0, "errors": 0}, {"t": 2.0, "bytes_per_s": 5, "errors": 1},
                   {"t": 3.0, "bytes_per_s": 0, "errors": 0, "devices": {HOSTILE_LABEL: 3}}],
    }  # fmt: skip
    watch = {"path": HOSTILE_LABEL, "fstype": HOSTILE_LABEL, "device": HOSTILE_LABEL, "phases": [phase]}
    output = render_html(hostile_report, {"topology": topology, "watch": watch}, verbose=True)
    assert _injected(output) == []
    parsed = _Tags()
    parsed.feed(output)
    names = {tag for tag, _ in parsed.tags}
    assert not names & {"script", "img", "iframe", "object", "embed", "link", "base", "form"}
    attributes = [(name, value or "") for _, attrs in parsed.tags for name, value in attrs.items()]
    assert not [name for name, _ in attributes if name.startswith("on")]
    hrefs = [value for name, value in attributes if name in ("href", "src", "xlink:href")]
    assert all(h.startswith(("#", "https://", "http://")) for h in hrefs), hrefs
    text = "".join(parsed.text)
    assert "<script>alert(1)</script>" in text and "/mnt/<script>alert(1)</script>" in text  # shown as text
    assert "\\x1b[2J" in text
