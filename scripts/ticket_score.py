#!/usr/bin/env python3
"""Right cause first, on real tickets: each case is a folder with ``files/`` (what the reporter
pasted) and ``expect.yaml`` naming the cause the thread established (``top: [id]``, the first
one counts; several ids accepted as ``top: [a, b]`` are alternatives; a case naming only
``fires`` counts those) or ``answer: not-storage``
(the thread placed the failure elsewhere: a framework, a scheduler, the compute fabric).

    python scripts/ticket_score.py fixtures/cases            # the cases the catalogue grew from
    python scripts/ticket_score.py tests/data/tickets_fresh_13   # 27 tickets it was not built from
    python scripts/ticket_score.py DIR --json                # one JSON line per case

Per case: ``first`` — the report's first root finding is the established cause (for
``not-storage``: a finding whose title says "Not the storage path"); ``candidate`` — or, when the
input shows a symptom without its cause, the established cause is the differential's first
candidate not ruled out (what an engineer's first reply would ask to settle).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from gdsdoctor.pipeline import analyze_paths  # noqa: E402

NOT_STORAGE = "not-storage"


def _inputs(case: Path) -> list[Path]:
    if (case / "bundle").is_dir():
        return [case / "bundle"]
    return sorted(p for p in (case / "files").iterdir() if p.is_file())


def score(case: Path) -> dict[str, object]:
    expect = yaml.safe_load((case / "expect.yaml").read_text()) or {}
    wanted = [NOT_STORAGE] if expect.get("answer") == NOT_STORAGE else list(expect.get("top") or [])
    wanted = wanted or list(expect.get("fires") or [])  # a case that names what fires, not its rank
    if not wanted:
        return {"case": case.name, "judged": False}
    try:
        report = analyze_paths(_inputs(case), expect.get("path"), job=expect.get("job")).report
    except Exception as error:  # a case the tool refuses is a miss, said as such
        return {"case": case.name, "judged": True, "wanted": wanted, "first": None, "right_first": False,
                "right_candidate": False, "error": str(error)[:200]}  # fmt: skip
    roots = [f for f in report["findings"] if not f["explained_by"]]
    first = roots[0]["id"] if roots else None
    if wanted == [NOT_STORAGE]:
        right_first = bool(roots) and roots[0]["title"].startswith("Not the storage path")
    else:
        right_first = first in wanted
    candidates = [
        c["cause"]
        for s in report.get("differential") or []
        for c in s["candidates"]
        if c["state"] != "ruled_out"
    ][:1]
    return {
        "case": case.name,
        "judged": True,
        "wanted": wanted,
        "first": first,
        "status": report["summary"]["status"],
        "right_first": right_first,
        "right_candidate": right_first or bool(set(candidates) & set(wanted)),
        "candidate": candidates[0] if candidates else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", type=Path, help="a folder of cases (each with files/ and expect.yaml)")
    parser.add_argument("--json", action="store_true", help="one JSON line per case")
    args = parser.parse_args()
    cases = sorted(p.parent for p in args.cases.glob("*/expect.yaml"))
    scored = [score(case) for case in cases]
    results = [r for r in scored if r["judged"]]
    for result in results:
        if args.json:
            print(json.dumps(result))
        else:
            mark = "first" if result["right_first"] else "cand." if result["right_candidate"] else "MISS"
            print(f"{mark:6} {result['case']}: wanted {result['wanted']}, first {result['first']}")
    first = sum(1 for r in results if r["right_first"])
    either = sum(1 for r in results if r["right_candidate"])
    print(
        f"{len(scored)} cases, {len(results)} judged: right cause first {first}, "
        f"first or the first candidate left open {either}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
