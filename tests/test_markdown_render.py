"""The Markdown report as a ticket or a GitHub comment shows it: parsed by a CommonMark parser
(markdown-it-py, the parser of the Python Markdown ecosystem) and checked for its structure,
not its bytes. A finding, a list, a fence or the status line that merges into its neighbour
reads fine in the source and breaks once rendered."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from gdsdoctor.commands import fleet
from gdsdoctor.pipeline import analyze_paths
from gdsdoctor.report.markdown import render_markdown
from tests.conftest import REPO

FIXTURES = REPO / "fixtures"
# Several findings, a symptom folded under its cause, remediation and references; pasted files.
REPORTS = [
    [FIXTURES / "topo-sysfs-degraded-links/bundle"],
    [FIXTURES / "h200-node-checkpoint-path-on-root-ext4/bundle"],
    sorted((FIXTURES / "gds-cufile-json-misconfigured/files").iterdir()),
]


def _parse(markdown: str) -> list[Token]:
    return MarkdownIt("commonmark").parse(markdown)


def _inline(tokens: list[Token], index: int) -> str:
    """The text a reader sees in the block that opens at ``index`` (a heading or a paragraph)."""
    inline = next(t for t in tokens[index:] if t.type == "inline")
    return "".join(t.content for t in _walk(inline.children or []) if t.type in ("text", "code_inline"))


def _walk(tokens: list[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        yield from _walk(token.children or [])


@pytest.fixture(scope="module", params=REPORTS, ids=lambda paths: paths[0].parent.name)
def report(request: pytest.FixtureRequest) -> dict:
    return analyze_paths(request.param).report


def test_one_heading_per_finding_and_symptoms_stay_inside(report: dict) -> None:
    tokens = _parse(render_markdown(report))
    titles = [_inline(tokens, i) for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == "h3"]
    roots = [f for f in report["findings"] if not f["explained_by"]]
    assert len(titles) == len(roots) >= 1
    for number, (title, finding) in enumerate(zip(titles, roots, strict=True), 1):
        assert title.startswith(f"{number}. {finding['severity'].upper()}  {finding['id']}")
    symptoms = [f["id"] for f in report["findings"] if f["explained_by"]]
    list_text = " ".join(t.content for t in _walk(tokens) if t.type == "text" and t.level > 0)
    for symptom in symptoms:  # folded: inside its cause's list, never a heading of its own
        assert symptom not in " ".join(titles) and symptom in " ".join(
            t.content for t in _walk(tokens) if t.type in ("text", "code_inline")
        )
    assert list_text


def _sections(tokens: list[Token]) -> list[list[Token]]:
    """The tokens under each ``###`` heading (one finding each), up to the next heading."""
    sections: list[list[Token]] = []
    for token in tokens:
        if token.type == "heading_open":
            sections.append([])
        elif sections and token.type != "heading_close":
            sections[-1].append(token)
    return sections[1 : 1 + sum(1 for t in tokens if t.tag == "h3" and t.type == "heading_open")]


def test_fences_stay_inside_their_list_and_hold_the_commands(report: dict) -> None:
    tokens = _parse(render_markdown(report))
    roots = [f for f in report["findings"] if not f["explained_by"]]
    sections = _sections(tokens)
    assert len(sections) == len(roots)
    fenced = 0
    for section, finding in zip(sections, roots, strict=True):
        # One list per finding: a fence at column 0 would end it and start another after it.
        assert sum(1 for t in section if t.type == "bullet_list_open" and t.level == 0) == 1
        fences = [i for i, t in enumerate(section) if t.type == "fence"]
        if not finding["remediation"]:
            continue
        fenced += 1
        # the commands in order (a marked one in a fence of its own after its marker), then verify
        held = [line for i in fences for line in section[i].content.splitlines()]
        assert held == [step["command"] for step in finding["remediation"]] + finding["verify"]
        assert all(section[i].info == "sh" and section[i].level > 0 for i in fences)  # inside the Fix item
        after = " ".join(t.content for t in _walk(section[fences[-1] :]) if t.type == "text")
        assert all(reference in after for reference in finding["references"])  # still in the list
    assert fenced >= 1


def test_commands_in_prose_are_code_spans_and_nothing_shows_backticks(report: dict) -> None:
    tokens = list(_walk(_parse(render_markdown(report, verbose=True))))
    texts = [t.content for t in tokens if t.type == "text"]
    assert not [text for text in texts if "`" in text]  # no escaped backtick left in prose
    codes = {t.content for t in tokens if t.type == "code_inline"}
    collects = {m["collect"] for i in report["inconclusive"] for m in i["missing"] if "`" in m["collect"]}
    assert collects
    for collect in collects:
        for command in collect.split("`")[1::2]:
            assert command in codes, command


def test_the_status_is_a_paragraph_of_its_own(report: dict) -> None:
    tokens = _parse(render_markdown(report))
    last = max(i for i, t in enumerate(tokens) if t.type == "paragraph_open")
    assert tokens[last].level == 0 and tokens[last - 1].type in ("paragraph_close", "bullet_list_close")
    assert _inline(tokens, last).startswith(f"Status: {report['summary']['status']} (exit")
    assert tokens[-1].type == "paragraph_close"


def test_inconclusive_causes_sit_with_what_settles_them(report: dict) -> None:
    markdown = render_markdown(report, verbose=True)
    tokens = _parse(markdown)
    start = next(
        i for i, t in enumerate(tokens) if t.type == "inline" and t.content.startswith("Inconclusive")
    )
    items = []
    for token in tokens[start + 1 :]:
        if token.type == "heading_open" or (token.type == "paragraph_open" and token.level == 0):
            break
        if token.type == "inline":
            items.append(
                "".join(t.content for t in _walk(token.children or []) if t.type in ("text", "code_inline"))
            )
    listed = " ".join(items)
    for cause in report["inconclusive"]:  # verbose: every cause under one of the ways
        assert cause["id"] in listed
    assert all(" → " in item for item in items)


def test_fleet_summary_renders_as_sections_and_a_status_paragraph(tmp_path: Path) -> None:
    bundles = [
        FIXTURES / name / "bundle" for name in ("topo-sysfs-degraded-links", "topo-sysfs-two-socket-iommu")
    ]
    summary = fleet.analyse_fleet(bundles, jobs=1)
    tokens = _parse(fleet.render(summary, "markdown"))
    headings = [_inline(tokens, i) for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings[0].startswith("Causes") and headings[1].startswith("Nodes grouped")
    last = max(i for i, t in enumerate(tokens) if t.type == "paragraph_open")
    assert tokens[last].level == 0 and _inline(tokens, last).startswith("Fleet status: ")


def test_a_folded_cause_shows_its_own_verify_commands_in_text_and_markdown() -> None:
    """A cause folded under its root has the root's fix; the commands that show it went with that
    fix are its own (those the root or an earlier folded cause already lists are not repeated)."""
    from gdsdoctor.report.text import render_text

    report = analyze_paths(sorted((FIXTURES / "gds-nvidia-fs-dkms-other-kernel" / "files").iterdir())).report
    folded = [f for f in report["findings"] if f["explained_by"]]
    assert folded and all(f["verify"] for f in folded)
    text, markdown = render_text(report), render_markdown(report)
    for rendered in (text, markdown):
        assert rendered.count("Verify it went with the fix:") == len(folded)
        assert rendered.count("cat /proc/driver/nvidia-fs/version") == 1
    after = text[text.index("↳ explains CRITICAL  nvidia-fs-not-built-for-kernel") :]
    assert after.index("Verify it went with the fix:") < after.index("$ dkms status nvidia-fs")
