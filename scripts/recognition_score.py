#!/usr/bin/env python3
"""How well gdsdoctor recognises pasted files: every file under tests/data/ and fixtures/*/files/ is
read as `analyze` reads a pasted file (unwrapped, every reader asked), and compared with what it is
(tests/data/recognition-expected.txt).

    python scripts/recognition_score.py            # the totals and every file not read as expected
    python scripts/recognition_score.py --all      # every file and what it was read as
    python scripts/recognition_score.py --json     # the same as JSON
    python scripts/recognition_score.py --cases tests/data/tickets_fresh_13   # a ticket set (below)

Outcomes: ``right`` (read as its kind, maybe beside other outputs in the same paste), ``wrong``
(read, but not as its kind), ``missed`` (not read at all), ``right-none`` / ``false-read`` (a file no
reader should claim, left alone / claimed). Files marked ``-`` (not pastes) are not scored.

A ticket set kept for measuring on what the readers were not built from (``--cases DIR``: each case
a folder with ``files/`` and an ``expect.yaml`` whose ``kinds:`` names each file's kind, as for
scripts/ticket_score.py) is scored against those kinds instead; recognition-expected.txt leaves such
a set out of the totals above (``-``), so the suite's recognition test does not hold today's misses.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from gdsdoctor.capture.capture import Capture  # noqa: E402
from gdsdoctor.capture.detect import PasteReader  # noqa: E402
from gdsdoctor.errors import UserError  # noqa: E402

EXPECTATIONS = REPO / "tests" / "data" / "recognition-expected.txt"
ROOTS = ("tests/data", "fixtures")


@dataclass
class Scored:
    path: str
    expected: str  # a section, "none" or "?" (no rule matched)
    read_as: list[str]
    outcome: str


def expectations(path: Path = EXPECTATIONS) -> list[tuple[str, str]]:
    rules = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            pattern, expected = line.split()
            rules.append((pattern, expected))
    return rules


def expected_kind(relative: str, rules: list[tuple[str, str]]) -> str:
    """The kind of the first rule matching the path (a pattern with a "/") or the file name."""
    name = relative.rsplit("/", 1)[-1]
    for pattern, kind in rules:
        if fnmatch.fnmatch(relative if "/" in pattern else name, pattern):
            return kind
    return "?"


def pasted_files(repo: Path = REPO) -> list[Path]:
    files = [p for p in (repo / "tests" / "data").rglob("*") if p.is_file()]
    fixtures = (p for p in (repo / "fixtures").rglob("*") if p.is_file())
    files += [p for p in fixtures if "files" in p.relative_to(repo).parts]
    return sorted(files)


def read_as(path: Path) -> list[str]:
    """The sections the file is read into, as `analyze FILE` reads it alone."""
    capture = Capture("files")
    reader = PasteReader(capture)
    reader.add(path.name, path.read_bytes(), str(path))
    try:
        reader.finish()
    except UserError:  # several hosts inside one file: refused, so not read
        return []
    return sorted(capture.assignments)


def outcome(expected: str, sections: list[str]) -> str:
    if expected == "none":
        return "false-read" if sections else "right-none"
    if expected in sections:
        return "right"
    return "wrong" if sections else "missed"


def score(repo: Path = REPO) -> list[Scored]:
    rules = expectations(repo / "tests" / "data" / "recognition-expected.txt")
    scored = []
    for path in pasted_files(repo):
        relative = str(path.relative_to(repo))
        expected = expected_kind(relative, rules)
        if expected == "-":
            continue
        sections = read_as(path)
        scored.append(Scored(relative, expected, sections, outcome(expected, sections)))
    return scored


def score_cases(root: Path) -> list[Scored]:
    """Every file of every case under root against the kind its case's expect.yaml names."""
    import yaml  # only this mode reads YAML

    scored = []
    for expect in sorted(root.glob("*/expect.yaml")):
        kinds = (yaml.safe_load(expect.read_text()) or {}).get("kinds") or {}
        for path in sorted(p for p in (expect.parent / "files").iterdir() if p.is_file()):
            expected = kinds.get(path.name, "?")
            sections = read_as(path)
            relative = str(path.relative_to(root))
            scored.append(Scored(relative, expected, sections, outcome(expected, sections)))
    return scored


def totals(scored: list[Scored]) -> dict[str, object]:
    counts = Counter(s.outcome for s in scored)
    kinds = [s for s in scored if s.expected not in ("none", "?")]
    right = counts["right"]
    return {
        "files": len(scored),
        "outcomes": dict(sorted(counts.items())),
        "right_share": round(right / len(kinds), 4) if kinds else None,
        "unexpected": sum(1 for s in scored if s.expected == "?"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--all", action="store_true", help="every file, not only those not read right")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--cases", type=Path, help="score a ticket set by its expect.yaml kinds")
    args = parser.parse_args(argv)
    scored = score_cases(args.cases) if args.cases else score()
    summary = totals(scored)
    shown = [s for s in scored if args.all or s.outcome not in ("right", "right-none")]
    if args.json:
        print(json.dumps({"totals": summary, "files": [asdict(s) for s in shown]}, indent=2))
        return 0
    for s in shown:
        print(f"{s.outcome:11} {s.path}  expected {s.expected}, read as {', '.join(s.read_as) or 'nothing'}")
    share = summary["right_share"]
    print(
        f"{summary['files']} files scored: {summary['outcomes']}; read as their kind: {share:.1%}"
        if isinstance(share, float)
        else "no files"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
