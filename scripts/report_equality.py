#!/usr/bin/env python3
"""Every supported interpreter gives the same answers: the JSON report of every fixture, made
under each Python named, compared.

    python3 scripts/report_equality.py PYTHON [PYTHON...]   # e.g. .venv310/bin/python /usr/bin/python3

Each PYTHON (an interpreter with gdsdoctor's dependencies: a virtual environment's) analyses
every fixture (``fixtures/*/``: real outputs of nodes in known states) from this checkout's
``src/`` and writes the reports (``--format json``'s document) to one file; the reports are then
compared fixture by fixture. Exit 0 when all are equal, 1 naming each fixture whose reports
differ and the first place they do (a Python older than 3.11.5 read a possessive pattern
differently: issue 33), 3 when an interpreter could not run. ``.ci/run`` runs it after the suite
under each interpreter; ``tests/test_report_equality.py`` with the interpreters in
``GDSDOCTOR_PYTHONS``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"


def cases() -> list[Path]:
    return sorted(p.parent for p in FIXTURES.rglob("expect.yaml"))


def _inputs(case: Path) -> list[Path]:
    if (case / "bundle").is_dir():
        return [case / "bundle"]
    return sorted(p for p in (case / "files").iterdir() if p.is_file())


def reports(selected: list[Path] | None = None) -> dict[str, Any]:
    """Each fixture's JSON report as this interpreter makes it (the fixture's --path and job
    options as its test gives them), by the fixture's name."""
    import yaml

    from gdsdoctor.pipeline import analyze_paths
    from gdsdoctor.report.json_report import render_json

    out = {}
    for case in selected or cases():
        expect = yaml.safe_load((case / "expect.yaml").read_text()) or {}
        analysis = analyze_paths(_inputs(case), expect.get("path"), job=expect.get("job"))
        out[str(case.relative_to(FIXTURES))] = json.loads(render_json(analysis.report))
    return out


def first_difference(left: Any, right: Any, where: str = "") -> str | None:
    """The JSON path of the first place two documents differ, with both values; None if equal."""
    if type(left) is not type(right):
        return f"{where or '.'}: {left!r:.80} / {right!r:.80}"
    if isinstance(left, dict):
        for key in sorted(set(left) | set(right)):
            if key not in left or key not in right:
                return f"{where}.{key}: only in the {'first' if key in left else 'second'}"
            if found := first_difference(left[key], right[key], f"{where}.{key}"):
                return found
        return None
    if isinstance(left, list):
        for index, (a, b) in enumerate(zip(left, right, strict=False)):
            if found := first_difference(a, b, f"{where}[{index}]"):
                return found
        return None if len(left) == len(right) else f"{where}: {len(left)} items / {len(right)}"
    return None if left == right else f"{where or '.'}: {left!r:.80} / {right!r:.80}"


def run_under(python: str, out: Path) -> str | None:
    """Write the reports made under ``python`` to ``out``; the error's last line, or None."""
    argv = [python, str(Path(__file__).resolve()), "--dump", str(out)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
    except OSError as error:
        return error.strerror or str(error)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        return lines[-1] if lines else f"exit {done.returncode}"
    return None


def compare(pythons: list[str]) -> tuple[list[str], list[str]]:
    """(errors, differences): an interpreter that could not run, a fixture whose reports differ
    between the first interpreter and another."""
    errors: list[str] = []
    found: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="gdsdoctor-equality-") as work:
        for index, python in enumerate(pythons):
            out = Path(work) / f"{index}.json"
            if error := run_under(python, out):
                errors.append(f"{python}: {error}")
            else:
                found[python] = json.loads(out.read_text())
    differences = []
    if found:
        first, *others = found
        for other in others:
            for case in sorted(set(found[first]) | set(found[other])):
                where = first_difference(found[first].get(case), found[other].get(case))
                if where:
                    differences.append(f"{case}: {first} / {other}: {where}")
    return errors, differences


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pythons", nargs="*", help="interpreters to compare (the first is the reference)")
    parser.add_argument("--dump", type=Path, help=argparse.SUPPRESS)  # run under each interpreter
    args = parser.parse_args(argv)
    if args.dump:
        sys.path.insert(0, str(REPO / "src"))
        args.dump.write_text(json.dumps(reports(), sort_keys=True))
        return 0
    if len(args.pythons) < 2:
        parser.error("name at least two interpreters")
    errors, differences = compare(args.pythons)
    for line in errors + differences:
        print(line)
    if errors:
        return 3
    verdict = "reports differ" if differences else "the same reports"
    print(f"{len(cases())} fixtures: {verdict} under {', '.join(args.pythons)}")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
