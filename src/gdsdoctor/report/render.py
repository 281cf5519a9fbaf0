"""Pick a renderer by format name: the one dispatch the CLI and the Python API share.

Renderers are imported on use, so that a run pays only for the format it prints (rich is
the slowest import and only the text format needs it).
"""

from __future__ import annotations

from typing import Any

FORMATS = ("text", "json", "markdown", "junit", "prometheus", "prometheus-fired", "oneline", "slurm", "html")
MACHINE_FORMATS = frozenset({"json", "junit", "prometheus", "prometheus-fired", "oneline", "slurm"})


def render(
    report: dict[str, Any],
    fmt: str,
    verbose: bool = False,
    color: bool = False,
    quiet: bool = False,
    run_s: float | None = None,
    pictures: dict[str, Any] | None = None,
) -> str:
    """The report in ``fmt`` (one of :data:`FORMATS`), as the text to print or write; ``quiet``:
    text and markdown give only the findings and the status; ``run_s``: how long the run took,
    for the Prometheus formats' gdsdoctor_run_duration_seconds; ``pictures``: what html draws
    beside the report (``topology``, ``watch``: report/html.py), the other formats ignore them."""
    if fmt == "json":
        from gdsdoctor.report.json_report import render_json

        return render_json(report)
    if fmt == "markdown":
        from gdsdoctor.report.markdown import render_markdown

        return render_markdown(report, verbose, quiet)
    if fmt == "junit":
        from gdsdoctor.report.junit import render_junit

        return render_junit(report)
    if fmt == "prometheus":
        from gdsdoctor.report.prometheus import render_prometheus

        return render_prometheus(report, run_s=run_s)
    if fmt == "prometheus-fired":
        from gdsdoctor.report.prometheus import render_prometheus_fired

        return render_prometheus_fired(report, run_s=run_s)
    if fmt == "slurm":
        from gdsdoctor.report.oneline import render_slurm_reason

        return render_slurm_reason(report)
    if fmt == "oneline":
        from gdsdoctor.report.oneline import render_oneline

        return render_oneline(report)
    if fmt == "html":
        from gdsdoctor.report.html import render_html

        return render_html(report, pictures, verbose)
    if fmt == "text":
        from gdsdoctor.report.text import render_text

        return render_text(report, color=color, verbose=verbose, quiet=quiet)
    raise ValueError(f"unknown format {fmt!r}; one of: {', '.join(FORMATS)}")
