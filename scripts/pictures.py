#!/usr/bin/env python3
"""The README's pictures, made from fixtures by the code that draws them, so they stay true.

    python3 scripts/pictures.py            # writes docs/pictures/*
    python3 scripts/pictures.py --check    # exit 1 when a committed SVG differs from what is drawn now

``topology.svg``: `gdsdoctor topo --format svg` of ``fixtures/topo-sysfs-two-socket-iommu`` (a GPU
alone on the second socket, the IOMMU translating); ``timeline.svg``: the checkpoint timeline of
``fixtures/watch-md-nvme-reset`` (a drive of an md RAID resetting mid-checkpoint);
``report.png``: the top of `gdsdoctor analyze … --format html` of the first fixture, as headless
Chromium shows it at 1280 px (made only where ``chromium`` is installed; not compared, a
browser's pixels differ between versions). ``tests/test_html_report.py`` runs ``--check``'s
comparison.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
OUT = REPO / "docs" / "pictures"
TOPOLOGY = "fixtures/topo-sysfs-two-socket-iommu/bundle"
WATCH = "fixtures/watch-md-nvme-reset/files"


def drawn() -> dict[str, str]:
    """Each SVG picture's name and text, drawn now."""
    from gdsdoctor.commands.topology_view import build, verdict
    from gdsdoctor.pipeline import analyze_paths
    from gdsdoctor.report.svg_timeline import render_svg as timeline_svg
    from gdsdoctor.report.svg_topology import render_svg as topology_svg

    topo = analyze_paths([REPO / TOPOLOGY])
    topology = build(topo.facts)
    topology.verdict = verdict(topo.report["findings"])
    watch = analyze_paths([REPO / WATCH]).facts["watch"]
    return {"topology.svg": topology_svg(topology.to_dict()), "timeline.svg": timeline_svg(watch)}


def screenshot(target: Path) -> bool:
    """The HTML report's first screen, as Chromium draws it (False without chromium)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        return False
    from gdsdoctor.cli.diagnose import pictures_of
    from gdsdoctor.pipeline import analyze_paths
    from gdsdoctor.report.html import render_html

    analysis = analyze_paths([Path(TOPOLOGY)])  # relative (main runs in the checkout): no path here
    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "report.html"
        page.write_text(render_html(analysis.report, pictures_of(analysis.report, analysis.facts)))
        argv = [browser, "--headless", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                f"--user-data-dir={folder}/profile", f"--screenshot={target}", "--window-size=1280,1300",
                page.as_uri()]  # fmt: skip
        if os.geteuid() == 0:
            argv.insert(1, "--no-sandbox")  # Chromium refuses its sandbox as root
        subprocess.run(argv, capture_output=True, timeout=120, check=True)
    return target.exists()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args()
    os.chdir(REPO)
    pictures = drawn()
    if args.check:
        stale = [name for name, text in pictures.items() if (OUT / name).read_text() != text]
        for name in stale:
            print(f"docs/pictures/{name} is not what is drawn now: run python3 scripts/pictures.py")
        return 1 if stale else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in pictures.items():
        (OUT / name).write_text(text)
        print(f"wrote docs/pictures/{name}")
    if screenshot(OUT / "report.png"):
        print("wrote docs/pictures/report.png")
    else:
        print("no chromium: docs/pictures/report.png not made", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
