"""The Python API, for notebooks, runbooks and automation. Stable: tests/test_api.py pins it.

    >>> import gdsdoctor.api as gd
    >>> report = gd.analyze_texts({"mounts": "/dev/nvme1n1 /mnt/ckpt ext4 rw,data=journal 0 0\\n"},
    ...                           path="/mnt/ckpt")
    >>> report.status, report.exit_code, [f["id"] for f in report.findings]
    ('WARNING', 1, ['ext4-data-journal'])
    >>> print(report.render("markdown"))  # doctest: +SKIP

Every function returns a :class:`Report`: ``.data`` is the JSON document of ``--format json``
(schema ``schemas/report.schema.json``), and ``.render(fmt)`` draws it in any CLI format.
Errors the user can fix (an unreadable bundle, an unknown format) raise a :class:`UserError`, a
:class:`GdsdoctorError` (the root of gdsdoctor.errors): catch that.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gdsdoctor import pipeline
from gdsdoctor.capture.detect import capture_texts
from gdsdoctor.errors import GdsdoctorError, UserError
from gdsdoctor.facts.event_clock import parse_since
from gdsdoctor.facts.job import validate
from gdsdoctor.report.render import FORMATS, render

__all__ = [
    "FORMATS",
    "GdsdoctorError",
    "Report",
    "analyze",
    "analyze_fleet",
    "analyze_texts",
    "check",
    "diff",
]

PathLike = str | Path


@dataclass(frozen=True, slots=True)
class Report:
    """One node's diagnosis. ``data`` is the report document (the same as ``--format json``)."""

    data: dict[str, Any]
    facts: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def status(self) -> str:
        """``OK``, ``WARNING``, ``CRITICAL`` or ``UNKNOWN``."""
        return str(self.data["summary"]["status"])

    @property
    def exit_code(self) -> int:
        """What ``gdsdoctor check`` would exit with: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN."""
        return int(self.data["summary"]["exit_code"])

    @property
    def reason(self) -> str:
        return str(self.data["summary"]["reason"])

    @property
    def findings(self) -> list[dict[str, Any]]:
        """Fired causes in rank order (root causes first, each followed by what it explains)."""
        return list(self.data["findings"])

    @property
    def inconclusive(self) -> list[dict[str, Any]]:
        """Causes that could not be evaluated, with the facts they miss and how to collect them."""
        return list(self.data["inconclusive"])

    def render(self, fmt: str = "text", verbose: bool = False) -> str:
        """The report as ``gdsdoctor --format FMT`` prints it (one of :data:`FORMATS`)."""
        if fmt not in FORMATS:
            raise UserError(f"unknown format {fmt!r}; one of: {', '.join(FORMATS)}")
        return render(self.data, fmt, verbose)

    @classmethod
    def from_json(cls, document: str | Mapping[str, Any]) -> Report:
        """A report saved with ``--format json`` (to render it in another format later)."""
        data = json.loads(document) if isinstance(document, str) else dict(document)
        if not isinstance(data, dict) or "summary" not in data or "findings" not in data:
            raise UserError("not a gdsdoctor report document")
        return cls(data)


def check(
    path: PathLike | None = None,
    host_root: PathLike = "/",
    rules_dirs: Sequence[PathLike] = (),
    deadline_s: float = 60.0,
    job: Mapping[str, Any] | None = None,
    since: str | None = None,
    site: Mapping[str, Any] | None = None,
) -> Report:
    """Diagnose this host (read-only), like ``gdsdoctor check [--path PATH] [--since WHEN]``.

    ``job`` describes the checkpoint like ``--params/--preset/--interval/--budget/--gpus``:
    ``{"params": "70B", "interval": "30m"}``; ``site`` holds the site config's ``node:`` and
    ``status:`` (``{"node": {"gds": "required"}}``, docs/site-config.md).
    """
    checked, stated = _job(job), _site(site)
    return _run(
        lambda: pipeline.check(
            Path(host_root),
            _str(path),
            _paths(rules_dirs),
            deadline_s,
            checked,
            since=_since(since),
            site=stated,
        )
    )


def analyze(
    paths: PathLike | Sequence[PathLike],
    path: PathLike | None = None,
    rules_dirs: Sequence[PathLike] = (),
    job: Mapping[str, Any] | None = None,
    deadline_s: float = 60.0,
    since: str | None = None,
    site: Mapping[str, Any] | None = None,
) -> Report:
    """Analyse one bundle (``.tar.gz`` or directory) or pasted output files, like ``gdsdoctor analyze``,
    within ``deadline_s`` seconds in all (called from the main thread; past it, a DeadlineError
    naming the step not finished); pasted files (a fifo fed by a slow writer among them) are read
    for at most half of it. ``site``: as for :func:`check`."""
    inputs = _paths([paths] if isinstance(paths, str | Path) else paths)
    checked, stated = _job(job), _site(site)
    return _run(
        lambda: pipeline.analyze_paths(
            inputs, _str(path), _paths(rules_dirs), checked, deadline_s, since=_since(since), site=stated
        )
    )


def analyze_texts(
    texts: Mapping[str, str | bytes] | Sequence[str | bytes],
    path: PathLike | None = None,
    rules_dirs: Sequence[PathLike] = (),
    job: Mapping[str, Any] | None = None,
) -> Report:
    """Analyse command outputs held in memory (pasted into a notebook or read from a ticket).

    ``texts`` is ``{"name": text}`` or a list of texts; each is recognised by its content, never
    by its name (the name labels it in evidence lines). Unrecognised texts become notes.
    """
    named = (
        texts.items() if isinstance(texts, Mapping) else ((f"text-{i}", t) for i, t in enumerate(texts, 1))
    )
    capture = capture_texts(
        (name, content.encode() if isinstance(content, str) else bytes(content)) for name, content in named
    )
    if path is not None:
        capture.options["target_path"] = str(path)
    checked = _job(job)
    if checked:
        capture.options["job"] = checked
    return _run(lambda: pipeline.analyze_capture(capture, _paths(rules_dirs)))


def analyze_fleet(
    paths: Sequence[PathLike],
    path: PathLike | None = None,
    rules_dirs: Sequence[PathLike] = (),
    jobs: int | None = None,
    job: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Analyse many bundles in parallel; the fleet summary of ``analyze --format json``."""
    from gdsdoctor.commands import fleet

    inputs = fleet.expand_inputs([str(p) for p in paths])
    checked = _job(job)
    try:
        return fleet.analyse_fleet(inputs, _str(path), _paths(rules_dirs), jobs, job=checked)
    except GdsdoctorError:
        raise
    except ValueError as error:
        raise UserError(str(error)) from None


def diff(
    before: PathLike,
    after: PathLike,
    path: PathLike | None = None,
    rules_dirs: Sequence[PathLike] = (),
    job: Mapping[str, Any] | None = None,
    site: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Two captures of one node compared, before and after a change: the document of ``diff
    --format json`` (``schemas/diff.schema.json``: findings resolved, new, changed, unchanged,
    the facts that changed, ``summary.exit_code``). Two hosts raise a UserError."""
    from gdsdoctor.commands.diff import diff_paths

    return diff_paths(Path(before), Path(after), _str(path), _paths(rules_dirs), _job(job), site=_site(site))


def _run(analyse: Any) -> Report:
    analysis = analyse()  # a user-fixable problem raises a UserError, a GdsdoctorError
    return Report(analysis.report, analysis.facts)


def _job(job: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The checkpoint job, checked as the CLI checks it (a bad value is a GdsdoctorError)."""
    if not job:
        return None
    checked = {str(k): v for k, v in job.items()}
    validate(checked)  # a bad value raises EstimateError, a GdsdoctorError
    return checked


def _site(site: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The site config's ``node:`` and ``status:``, checked as a file's are (a UserError)."""
    from gdsdoctor.config import statements

    return statements(dict(site), "site") if site else None


def _paths(values: Iterable[PathLike]) -> list[Path]:
    return [Path(v) for v in values]


def _str(value: PathLike | None) -> str | None:
    return None if value is None else str(value)


def _since(since: str | None) -> str | None:
    """``since`` checked as the CLI checks ``--since`` (a bad value is a GdsdoctorError)."""
    if since is None:
        return None
    parse_since(since)
    return since.strip()
