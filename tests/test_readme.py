"""The README's first steps work in the order they are read (issue 12)."""

from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def test_first_two_commands_are_install_and_check_then_the_tests() -> None:
    blocks = re.findall(r"```sh\n(.*?)```", README, re.S)
    assert blocks[:2] == [
        "python3 -m pip install . && gdsdoctor check\n",
        "python3 -m pip install '.[test]' && python3 -m pytest\n",
    ]


def test_debian_venv_hint_comes_before_the_command_that_needs_it() -> None:
    assert README.index("python3 -m venv .venv") < README.index("python3 -m pip install . && gdsdoctor check")


def test_json_key_list_names_every_top_level_key() -> None:
    schema = json.loads((REPO / "src" / "gdsdoctor" / "schemas" / "report.schema.json").read_text())
    section = README[README.index("### JSON report") : README.index("## How it works")]
    assert [key for key in schema["properties"] if f"`{key}`" not in section] == []


def test_debian_package_list_is_what_ci_installs() -> None:
    ci = (REPO / ".ci" / "run").read_text()
    installed = re.search(r"--no-install-recommends \\\n\s*(.*?) >/dev/null", ci)
    assert installed
    packages = installed[1].split()
    intro = README[: README.index("## Use")]
    assert packages and [p for p in packages if p not in intro] == []


# One screen: 24 lines of 100 columns. A paragraph, list item or table cell longer than that
# cannot be read without scrolling back (docs/architecture.md's capture cell was 2,268 characters).
SCREEN_LINES, SCREEN_CHARACTERS = 24, 24 * 100


def _blocks(markdown: str) -> list[str]:
    """The paragraphs, list items and table cells of a Markdown text (code blocks left out)."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    blocks: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        lines = paragraph.splitlines()
        if all(line.startswith("|") for line in lines if line.strip()):
            blocks += [cell.strip() for line in lines for cell in line.strip().strip("|").split(" | ")]
        else:
            blocks += re.split(r"\n(?=\s*(?:[-*]|\d+\.) )", paragraph)
    return blocks


def test_the_readme_stays_short_with_its_two_commands_first() -> None:
    assert len(README.splitlines()) <= 170
    first_block = README.index("```sh")
    assert README[:first_block].count("\n\n") <= 3  # before them: the title, the summary, the venv hint


def test_every_paragraph_and_table_cell_of_the_docs_fits_a_screen() -> None:
    too_long = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        for block in _blocks(path.read_text()):
            if len(block.splitlines()) > SCREEN_LINES or len(block) > SCREEN_CHARACTERS:
                too_long.append((path.relative_to(REPO).as_posix(), len(block), block[:60]))
    assert too_long == []


def test_a_long_table_cell_is_found() -> None:
    cell = "word " * 600
    assert max(map(len, _blocks(f"| a | b |\n| --- | --- |\n| x | {cell} |\n"))) > SCREEN_CHARACTERS
