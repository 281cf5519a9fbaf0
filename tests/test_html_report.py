"""The pictures and the HTML report, from real fixtures: `topo --format svg`, the checkpoint timeline
of a watch recording, and `--format html` opened in a real headless Chromium (Debian's
``chromium``; skipped without it): the page loads with no console error and no request, shows
every finding id of the JSON report, and nothing sticks out at 1280 px or 390 px. One browser
serves the module; the screenshots are kept under pytest's temporary directory (their paths
printed) for a person to look at."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from gdsdoctor.cli.diagnose import pictures_of
from gdsdoctor.commands.topology_view import build, verdict
from gdsdoctor.pipeline import analyze_paths
from gdsdoctor.report.html import render_html
from gdsdoctor.report.svg_timeline import render_svg as timeline_svg
from gdsdoctor.report.svg_topology import render_svg as topology_svg
from tests import chromium

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
SVG = "{http://www.w3.org/2000/svg}"
WIDTHS = (1280, 390)


def _analysis(name: str) -> Any:
    folder = FIXTURES / name
    return analyze_paths([folder / "bundle" if (folder / "bundle").exists() else folder / "files"])


def _topology(analysis: Any) -> dict[str, Any]:
    topology = build(analysis.facts)
    topology.verdict = verdict(analysis.report["findings"])
    return topology.to_dict()


@pytest.fixture(scope="module")
def eight_gpus(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """8 GPUs, 8 NICs and 16 drives on two sockets, two drives trained at x2 (tests/topology_trees.py)."""
    sys.path.insert(0, str(ROOT / "tests"))
    import topology_trees

    bundle = topology_trees.build_bundle(
        "eight-gpus", topology_trees.eight_gpus, {}, tmp_path_factory.mktemp("f")
    )
    return analyze_paths([bundle])


def _svg(text: str) -> ET.Element:
    return ET.fromstring(text)  # well-formed XML, or this raises


def _texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def test_topology_svg_draws_eight_gpus_eight_nics_sixteen_drives_on_two_sockets(eight_gpus: Any) -> None:
    root = _svg(topology_svg(_topology(eight_gpus)))
    texts = _texts(root)
    assert sum(t.startswith("GPU ") for t in texts) == 8
    assert sum(t.startswith("NIC ") for t in texts) == 8
    assert sum(t.startswith("NVMe nvme") for t in texts) == 16
    assert {"NUMA node 0", "NUMA node 1"} <= set(texts)
    assert texts.count("16 GT/s x2") == 2  # the degraded links, on their edges
    amber = [
        e
        for e in root.iter(f"{SVG}line")
        if e.get("stroke-dasharray") == "5 3" and e.get("stroke-width") == "2"
    ]
    assert len(amber) == 3  # the two degraded edges and the legend's sample
    assert int(root.get("width", "0")) <= 1280  # fits a laptop screen's width


def test_topology_svg_marks_cross_socket_pairs_and_the_iommu() -> None:
    analysis = _analysis("topo-sysfs-two-socket-iommu")
    root = _svg(topology_svg(_topology(analysis)))
    pairs = [p for p in root.iter(f"{SVG}path") if p.get("stroke-dasharray") == "6 3"]
    assert len(pairs) == 2  # GPU 0000:9a:00.0 to nvme0 and to mlx5_0, across sockets
    assert all("0000:9a:00.0" in (p.findtext(f"{SVG}title") or "") for p in pairs)
    assert any(t.startswith("! IOMMU translates DMA") for t in _texts(root))
    red_boxes = [
        r for r in root.iter(f"{SVG}rect") if r.get("stroke") == "#c62828" and r.get("stroke-width") == "2"
    ]
    assert len(red_boxes) >= 3  # the GPU and both its far ends (and the legend's sample)
    healthy = _svg(topology_svg(_topology(_analysis("topo-sysfs-two-socket-balanced"))))
    assert not [p for p in healthy.iter(f"{SVG}path") if p.get("stroke-dasharray") == "6 3"]


def test_timeline_svg_shades_the_phase_and_names_the_collapse_and_its_cause() -> None:
    watch = _analysis("watch-md-nvme-reset").facts["watch"]
    root = _svg(timeline_svg(watch))
    texts = _texts(root)
    assert any(t.startswith("phase 1 · ") for t in texts)
    assert any(t.startswith("collapse: ") for t in texts)
    assert "controller reset" in texts  # the limiter at its time
    legend = {"md0 (written)", "nvme0n1", "nvme1n1"}
    assert legend <= set(texts)  # a line per device
    failed = _svg(timeline_svg(_analysis("watch-xfs-enospc").facts["watch"]))
    assert any("blk_io_error" in (g.findtext(f"{SVG}title") or "") for g in failed.iter(f"{SVG}g"))
    assert list(failed.iter(f"{SVG}circle"))  # the sample that counted the kernel's errors
    empty = _svg(timeline_svg({"phases": [], "path": "/ckpt"}))
    assert "no write phase was recorded" in _texts(empty)


def test_cli_topo_svg_and_html_without_the_extra(tmp_path: Path) -> None:
    """`topo --format svg` needs nothing more; `--format html` without Jinja2 is one line, exit 3."""
    import subprocess

    bundle = str(FIXTURES / "topo-sysfs-degraded-links" / "bundle")
    svg = subprocess.run(
        [sys.executable, "-m", "gdsdoctor", "topo", bundle, "--format", "svg"], capture_output=True, text=True
    )
    assert svg.returncode == 1 and _svg(svg.stdout).tag == f"{SVG}svg"
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "jinja2.py").write_text("raise ImportError('not installed')\n")
    env = {"PYTHONPATH": f"{hidden}:{ROOT / 'src'}", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "gdsdoctor", "analyze", bundle, "--format", "html"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 3 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "gdsdoctor: --format html needs the optional extra: pip install 'gdsdoctor[html]' (Jinja2)"
    ]


# --- in a real browser --------------------------------------------------------------------------
# One test, so that pytest-xdist never splits it across workers: one browser launch in the suite.


def _pages(folder: Path, eight_gpus: Any) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Each page as `analyze --format html` writes it, with the report it was made from."""
    analyses = {
        "two-socket-iommu": _analysis("topo-sysfs-two-socket-iommu"),
        "degraded-links": _analysis("topo-sysfs-degraded-links"),
        "watch-md-nvme-reset": _analysis("watch-md-nvme-reset"),
        "eight-gpus": eight_gpus,
    }
    found = {}
    for name, analysis in analyses.items():
        page = folder / f"{name}.html"
        page.write_text(render_html(analysis.report, pictures_of(analysis.report, analysis.facts)))
        found[name] = (page, analysis.report)
    return found


def test_the_html_report_in_chromium(tmp_path: Path, eight_gpus: Any) -> None:
    if chromium.binary() is None:
        pytest.skip("no chromium (Debian: apt-get install chromium)")
    browser = chromium.Browser(tmp_path / "profile")
    try:
        for name, (page, report) in _pages(tmp_path, eight_gpus).items():
            _check_page(browser, name, page, report)
        _check_diff_page(browser, tmp_path)
        _check_the_checks(browser, tmp_path)
    finally:
        browser.close()


def _check_page(browser: chromium.Browser, name: str, page: Path, report: dict[str, Any]) -> None:
    for width in WIDTHS:
        browser.open(page, width)
        assert browser.errors() == [], (name, width)
        assert browser.requests(page) == [], (name, width)
        layout = browser.evaluate(chromium.OVERFLOW_CHECK)
        assert layout["scrollWidth"] <= layout["width"] and layout["out"] == [], (name, width, layout)
        shown = browser.evaluate("document.body.innerText")
        missing = [f["id"] for f in report["findings"] if f["id"] not in shown]
        assert missing == [] and report["summary"]["status"] in shown, (name, width)
        assert not report["inconclusive"] or "Inconclusive:" in shown  # the list a reader acts on
        assert browser.evaluate("document.scripts.length") == 0
        pictures = browser.evaluate(
            "[...document.querySelectorAll('figure svg')].map(s => s.getBBox().width > 0)"
        )
        assert pictures and all(pictures), (name, width)
        shot = browser.screenshot(page.with_name(f"{name}-{width}.png"))
        assert shot.stat().st_size > 10_000
        print(f"screenshot: {shot}")


def _check_diff_page(browser: chromium.Browser, folder: Path) -> None:
    """`diff --format html`: BEFORE and AFTER side by side, every finding of either capture on
    the page, at both widths, with no error, request or overflow."""
    from gdsdoctor.commands.diff import diff_paths, render

    document = diff_paths(
        FIXTURES / "gds-wekafs-rdma-not-configured", FIXTURES / "gds-wekafs-rdma-configured"
    )
    page = folder / "diff.html"
    page.write_text(render(document, "html"))
    ids = [row["id"] for rows in document["findings"].values() for row in rows]
    for width in WIDTHS:
        browser.open(page, width)
        assert browser.errors() == [] and browser.requests(page) == [], width
        layout = browser.evaluate(chromium.OVERFLOW_CHECK)
        assert layout["scrollWidth"] <= layout["width"] and layout["out"] == [], (width, layout)
        shown = browser.evaluate("document.body.innerText")
        assert ids and [i for i in ids if i not in shown] == [] and "BEFORE" in shown and "AFTER" in shown
        print(f"screenshot: {browser.screenshot(page.with_name(f'diff-{width}.png'))}")


def _check_the_checks(browser: chromium.Browser, folder: Path) -> None:
    """A page that sticks out, asks for an image elsewhere and logs an error is caught by each
    check the report's pages pass. The image is asked of this machine's discard port: a test
    never sends a request off the machine."""
    page = folder / "bad.html"
    page.write_text(
        '<!DOCTYPE html><body><div style="width:2000px">wide</div>'
        '<img src="http://127.0.0.1:9/x.png"><script>console.error("boom")</script></body>'
    )
    browser.open(page, 390)
    assert any("boom" in error for error in browser.errors())
    assert browser.requests(page) == ["http://127.0.0.1:9/x.png"]
    layout = browser.evaluate(chromium.OVERFLOW_CHECK)
    assert layout["scrollWidth"] > layout["width"] and layout["out"]


def test_the_readmes_pictures_are_what_is_drawn_now() -> None:
    """docs/pictures/*.svg are made by scripts/pictures.py from fixtures; redrawn, they are equal."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import pictures

    for name, text in pictures.drawn().items():
        assert (ROOT / "docs" / "pictures" / name).read_text() == text, (
            f"run python3 scripts/pictures.py ({name})"
        )
