"""Which failure signatures of the research notes lead to their causes.

Reads tests/data/signatures/signatures.yaml (one entry per signature written in
../shared/research/gds-matrix.md and net-pci-notes.md, each with its real or quoted line and its
candidate causes, most likely first), pastes each entry's lines as the file it names, and
says per signature: read as (the sections that parsed), the root causes found, and whether a
candidate fired (covered) and whether the first root cause is a candidate (ranked).

    python scripts/signature_coverage.py            # table + totals
    python scripts/signature_coverage.py --gaps     # only the signatures no cause reads
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

CATALOGUE = Path(__file__).resolve().parents[1] / "tests" / "data" / "signatures" / "signatures.yaml"


def signatures() -> list[dict[str, Any]]:
    return yaml.safe_load(CATALOGUE.read_text())["signatures"]


def judge(entry: dict[str, Any]) -> dict[str, Any]:
    """Analyse one signature's paste; what fired and whether its candidates are found."""
    from gdsdoctor.pipeline import analyze_paths

    with tempfile.TemporaryDirectory() as directory:
        paste = Path(directory) / entry["as"]
        paste.write_text("\n".join(entry["lines"]) + "\n")
        report = analyze_paths([paste], None).report
    fired = [f["id"] for f in report["findings"]]
    roots = [f["id"] for f in report["findings"] if not f["explained_by"]]
    read_as = sorted(p["name"] for p in report["probes"] if p["status"] == "ok")
    candidates = entry["causes"]
    return {
        "id": entry["id"],
        "read_as": read_as,
        "fired": fired,
        "roots": roots,
        "covered": any(c in fired for c in candidates),
        "ranked": bool(roots) and roots[0] in candidates,
        "gap": entry.get("gap"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gaps", action="store_true", help="list only signatures no candidate cause reads")
    args = parser.parse_args(argv)
    results = [judge(entry) for entry in signatures()]
    for result in results:
        if args.gaps and result["covered"]:
            continue
        mark = "ranked " if result["ranked"] else "covered" if result["covered"] else "GAP    "
        read_as = ",".join(result["read_as"]) or "-"
        print(f"{mark} {result['id']:<36} read as {read_as:<12} roots {result['roots'][:3]}")
        if result["gap"] and not result["covered"]:
            print(f"        known gap: {result['gap']}")
    covered = sum(r["covered"] for r in results)
    ranked = sum(r["ranked"] for r in results)
    print(f"{len(results)} signatures: {covered} lead to a candidate cause, {ranked} with one ranked first")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    sys.exit(main())
