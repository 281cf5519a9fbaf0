"""Prometheus text exposition format for node_exporter's textfile collector, in two modes.

Run ``gdsdoctor check --output prometheus-fired=/var/lib/node_exporter/textfile/gdsdoctor.prom``
from a timer; node_exporter reads every ``*.prom`` file in that directory at each scrape.
The file is written atomically (``report.files.write_atomic``: a hidden temporary file in the
same directory, then a rename), so a scrape never reads half a file.

``prometheus-fired`` (:func:`render_prometheus_fired`) writes what the alert rules read and no
more: ``gdsdoctor_status``, one ``gdsdoctor_cause_state`` series per cause that fired (values 1,
4, 5, 6 below), ``gdsdoctor_source_not_read`` for a partial run, the run's duration and its
time. A healthy node is four series, where the full mode writes one or two per known cause
(about 290 a node): every time series costs the Prometheus server memory, per node, scrape after
scrape, so a fleet's monitoring asks for the few that say something.

``prometheus`` (:func:`render_prometheus`), the full mode, writes every cause's state and
certainty, the probes and the intent, for those who chart them. Its metrics (all gauges; see
integrations/prometheus/gdsdoctor-alerts.yaml for alerts on them):

- ``gdsdoctor_status`` 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (the exit code before --fail-on);
- ``gdsdoctor_cause_state{id,category,severity,scope}`` 0 clear, 1 fired, 2 inconclusive, 3 not
  applicable, 4 fired but acknowledged in the site config, 5 fired as a candidate (critical below
  the certainty floor: WARNING at most), 6 fired in a scope the status does not count (``scope``
  shared or job); alerts on ``== 1`` see only what sets the node's status (docs/rules.md, Status);
- ``gdsdoctor_cause_certainty{id,category,severity}`` combined certainty of evaluated causes
  (negative: evidence against), absent for causes that could not be evaluated;
- ``gdsdoctor_findings{severity}`` (the findings that count), ``gdsdoctor_inconclusive_causes``;
- ``gdsdoctor_findings_not_counted{scope}``: shared and job findings, and critical candidates
  (``scope="candidates"``), none of which sets the status by default;
- ``gdsdoctor_intent{capability,state,by}`` 1: whether the node uses GDS, NVMe-oF, RDMA for
  storage (derived from the evidence, or stated by the site config);
- ``gdsdoctor_probe_ok{probe,status}`` 1 when the source was read and parsed, else 0;
- ``gdsdoctor_partial`` 1 when the run could not read what its critical causes need (the kernel
  log denied to a non-root user, PCIe capabilities hidden: report/partial.py), else 0, and
  ``gdsdoctor_source_not_read{source,status}`` 1 for each such source; a partial run that found
  nothing is ``gdsdoctor_status`` 3, never 0;
- ``gdsdoctor_last_run_timestamp_seconds``, ``gdsdoctor_run_duration_seconds`` (from the command's
  start to the report: capture and analysis; written when the caller measured it, as the command
  line does) and ``gdsdoctor_info{version,source}``.

Label values are escaped as the exposition format requires (backslash, double quote, newline);
HELP text escapes backslash and newline.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from gdsdoctor.report.verdicts import Verdict, verdicts

STATUS_VALUE = {"OK": 0, "WARNING": 1, "CRITICAL": 2, "UNKNOWN": 3}
STATE_VALUE = {"clear": 0, "fired": 1, "inconclusive": 2, "not_applicable": 3}
ACKNOWLEDGED_STATE, CANDIDATE_STATE, NOT_COUNTED_STATE = 4, 5, 6

Sample = tuple[dict[str, str], float]


def label_value(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def help_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


def metric(name: str, help_: str, samples: Iterable[Sample]) -> list[str]:
    lines = [f"# HELP {name} {help_text(help_)}", f"# TYPE {name} gauge"]
    for labels, value in samples:
        rendered = ",".join(f'{key}="{label_value(val)}"' for key, val in labels.items())
        lines.append(f"{name}{{{rendered}}} {_number(value)}" if rendered else f"{name} {_number(value)}")
    return lines


def _state(verdict: Verdict) -> int:
    """A cause's gauge value: what it says of the node's status, as the module's docstring lists."""
    if verdict.acknowledged:
        return ACKNOWLEDGED_STATE
    if verdict.outcome == "fired" and not verdict.counted:
        return NOT_COUNTED_STATE
    if verdict.outcome == "fired" and verdict.candidate:
        return CANDIDATE_STATE
    return STATE_VALUE[verdict.outcome]


def _cause_labels(v: Verdict) -> dict[str, str]:
    return {"id": v.id, "category": v.category, "severity": v.severity, "scope": v.scope}


def _status(summary: dict[str, Any]) -> list[str]:
    return metric(
        "gdsdoctor_status",
        "Node status: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.",
        [({}, STATUS_VALUE[summary["status"]])],
    )


def _cause_state(causes: Iterable[Verdict]) -> list[str]:
    return metric(
        "gdsdoctor_cause_state",
        "Per cause: 0 clear, 1 fired, 2 inconclusive (facts missing), 3 not applicable, "
        "4 acknowledged, 5 fired as a candidate (below the certainty floor), "
        "6 fired in a scope the status does not count.",
        [(_cause_labels(v), _state(v)) for v in causes],
    )


def _not_read(summary: dict[str, Any]) -> list[str]:
    return metric(
        "gdsdoctor_source_not_read",
        "Sources a partial run could not read (denied, hidden, missing); see the how in --format json.",
        [
            ({"source": item["source"], "status": item["status"]}, 1)
            for item in (summary.get("partial") or {}).get("not_read", [])
        ],
    )


def _run(now: float | None, run_s: float | None) -> list[str]:
    """When the file was written, and how long the run took (when the caller measured it)."""
    lines = []
    if run_s is not None:
        lines += metric(
            "gdsdoctor_run_duration_seconds",
            "How long the run took, from the command's start to the report (capture and analysis).",
            [({}, round(run_s, 3))],
        )
    return lines + metric(
        "gdsdoctor_last_run_timestamp_seconds",
        "When this file was written (Unix time).",
        [({}, round(time.time() if now is None else now, 3))],
    )


def render_prometheus_fired(
    report: dict[str, Any], now: float | None = None, run_s: float | None = None
) -> str:
    """The short mode: the status, the causes that fired (acknowledged, candidates and the scopes
    the status does not count included: the alert rules tell them apart by value), the sources a
    partial run could not read, the run's duration and time (see the module's docstring)."""
    summary = report["summary"]
    fired = [v for v in verdicts(report) if v.outcome == "fired" or v.acknowledged]
    lines = [*_status(summary), *_cause_state(fired), *_not_read(summary), *_run(now, run_s)]
    return "\n".join(lines) + "\n"


def render_prometheus(report: dict[str, Any], now: float | None = None, run_s: float | None = None) -> str:
    causes = verdicts(report)
    summary = report["summary"]
    lines = [
        *_status(summary),
        *_cause_state(causes),
        *metric(
            "gdsdoctor_cause_certainty",
            "Combined certainty of each evaluated cause (negative: evidence against it).",
            [(_cause_labels(v), v.certainty) for v in causes if v.certainty is not None],
        ),
        *metric(
            "gdsdoctor_findings",
            "Fired causes by severity.",
            [({"severity": s}, summary["counts"].get(s, 0)) for s in ("critical", "warning", "info")],
        ),
        *metric(
            "gdsdoctor_findings_not_counted",
            "Fired causes of a scope the status does not count (shared: a filesystem or target many "
            "nodes see; job: one job or user), and critical candidates below the certainty floor.",
            [({"scope": key}, summary["counts"].get(key, 0)) for key in ("shared", "job", "candidates")],
        ),
        *metric(
            "gdsdoctor_intent",
            "1 for what the node is meant to use, per capability: state used, unused or unknown.",
            [
                ({"capability": name, "state": value["state"], "by": value["by"]}, 1)
                for name, value in (report.get("intent") or {}).items()
                if isinstance(value, dict)
            ],
        ),
        *metric(
            "gdsdoctor_inconclusive_causes",
            "Causes that could not be evaluated for lack of data.",
            [({}, sum(1 for v in causes if v.outcome == "inconclusive"))],
        ),
        *metric(
            "gdsdoctor_probe_ok",
            "1 when the source was read and parsed; the status label says why not.",
            [({"probe": p["name"], "status": p["status"]}, p["status"] == "ok") for p in report["probes"]],
        ),
        *metric(
            "gdsdoctor_partial",
            "1 when the run could not read what its critical causes need (the status then is never OK).",
            [({}, 1 if summary.get("partial") else 0)],
        ),
        *_not_read(summary),
        *metric(
            "gdsdoctor_info",
            "gdsdoctor version and what was analysed.",
            [({"version": report["tool"]["version"], "source": report["source"]["kind"]}, 1)],
        ),
        *_run(now, run_s),
    ]
    return "\n".join(lines) + "\n"
