"""The ticket sets kept for measuring on unseen tickets are well formed (not how well they score).

A ticket set (tests/data/tickets_fresh_13) is data for scripts/ticket_score.py and
scripts/recognition_score.py --cases: each case needs pasted files, the answer the thread
established and the kind of each file, and a SOURCES.md line naming its public thread. What the
tool makes of the set today is measured by those scripts and reported, never asserted here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

DATA = Path(__file__).resolve().parent / "data"
SETS = [DATA / "tickets_fresh_13"]
EXPECTED = DATA / "recognition-expected.txt"


def _known_kinds() -> set[str]:
    kinds = {"none"}
    for line in EXPECTED.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            kinds.add(line.split()[1])
    return kinds - {"-", "?"}


def _cases(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.glob("*/expect.yaml"))


@pytest.mark.parametrize("root", SETS, ids=lambda p: p.name)
def test_every_case_has_files_an_answer_and_a_kind_per_file(root: Path) -> None:
    known = _known_kinds()
    assert len(_cases(root)) >= 25
    for case in _cases(root):
        expect = yaml.safe_load((case / "expect.yaml").read_text())
        assert bool(expect.get("top")) != (expect.get("answer") == "not-storage"), case.name
        files = sorted(p.name for p in (case / "files").iterdir())
        assert files, case.name
        kinds = expect.get("kinds") or {}
        assert sorted(kinds) == files, case.name
        assert set(kinds.values()) <= known, (case.name, set(kinds.values()) - known)


@pytest.mark.parametrize("root", SETS, ids=lambda p: p.name)
def test_every_case_names_its_public_thread(root: Path) -> None:
    sources = (root / "SOURCES.md").read_text()
    for case in _cases(root):
        line = next((ln for ln in sources.splitlines() if ln.startswith(f"- `{case.name}/`")), "")
        assert "https://" in line, case.name
