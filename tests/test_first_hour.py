"""The first hour of a new user (issue 25): contracts automation can trust and output a person
reads. Each test here failed on the code before the change it covers."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor import cli
from gdsdoctor.pipeline import analyze_paths
from tests.conftest import REPO

FIXTURES = REPO / "fixtures"


@pytest.mark.parametrize(
    ("pasted", "about"),
    [
        (FIXTURES / "ext4-journal-checkpoint/files/proc-mounts.txt", {"filesystem", "mount-options"}),
        (FIXTURES / "gds-cufile-json-misconfigured/files/cufile.json", {"gds-config"}),
    ],
    ids=["mounts", "cufile.json"],
)
def test_inconclusive_causes_begin_with_what_the_paste_is_about(pasted: Path, about: set[str]) -> None:
    """A pasted /proc/mounts leaves filesystem causes open first, not capacity, WSL or containers."""
    report = analyze_paths([pasted]).report
    categories = [item["category"] for item in report["inconclusive"]]
    first_other = next(i for i, c in enumerate(categories) if c not in about)
    assert first_other > 0 and all(c not in about for c in categories[first_other:])


def test_inconclusive_text_names_each_way_to_settle_with_its_causes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cli.run(["analyze", str(FIXTURES / "ext4-journal-checkpoint/files/proc-mounts.txt")])
    section = capsys.readouterr().out.split("Inconclusive:")[1]
    lines = [line.strip() for line in section.splitlines()[1:] if line.strip()]
    assert lines[0].startswith("run dmesg or journalctl") and "→ fs-errors-or-shutdown" in lines[0]
    assert lines[-2].startswith("… ") and "more cause(s)" in lines[-2]  # under the causes, not commands
