"""Prometheus text exposition format for node_exporter's textfile collector.

Run ``gdsdoctor check --output prometheus=/var/lib/node_exporter/textfile/gdsdoctor.prom``
from a timer; node_exporter reads every ``*.prom`` file in that directory at each scrape.
The file is written atomically (``report.files.write_atomic``: a hidden temporary file in the
same directory, then a rename), so a scrape never reads half a file.

Metrics (all gauges; see integrations/prometheus/gdsdoctor-alerts.yaml for alerts on them):

- ``gdsdoctor_status`` 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (the exit code before --fail-on);
- ``gdsdoctor_cause_state{id,category,severity}`` 0 clear, 1 fired, 2 inconclusive, 3 not applicable,
  4 fired but acknowledged in the site config (alerts on ``== 1`` leave it alone);
- ``gdsdoctor_cause_certainty{id,category,severity}`` combined certainty of evaluated causes
  (negative: evidence against), absent for causes that could not be evaluated;
- ``gdsdoctor_findings{severity}``, ``gdsdoctor_inconclusive_causes``;
- ``gdsdoctor_probe_ok{probe,status}`` 1 when the source was read and parsed, else 0;
- ``gdsdoctor_partial`` 1 when the run could not read what its critical causes need (the kernel
  log denied to a non-root user, PCIe capabilities hidden: report/partial.py), else 0, and
  ``gdsdoctor_source_not_read{source,status}`` 1 for each such source; a partial run that found
  nothing is ``gdsdoctor_status`` 3, never 0;
- ``gdsdoctor_last_run_timestamp_seconds`` and ``gdsdoctor_info{version,source}``.

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
ACKNOWLEDGED_STATE = 4

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


def render_prometheus(report: dict[str, Any], now: float | None = None) -> str:
    causes = verdicts(report)
    summary = report["summary"]

    def cause_labels(v: Verdict) -> dict[str, str]:
        return {"id": v.id, "category": v.category, "severity": v.severity}

    lines = [
        *metric(
            "gdsdoctor_status",
            "Node status: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.",
            [({}, STATUS_VALUE[summary["status"]])],
        ),
        *metric(
            "gdsdoctor_cause_state",
            "Per cause: 0 clear, 1 fired, 2 inconclusive (facts missing), 3 not applicable, 4 acknowledged.",
            [
                (cause_labels(v), ACKNOWLEDGED_STATE if v.acknowledged else STATE_VALUE[v.outcome])
                for v in causes
            ],
        ),
        *metric(
            "gdsdoctor_cause_certainty",
            "Combined certainty of each evaluated cause (negative: evidence against it).",
            [(cause_labels(v), v.certainty) for v in causes if v.certainty is not None],
        ),
        *metric(
            "gdsdoctor_findings",
            "Fired causes by severity.",
            [({"severity": s}, summary["counts"].get(s, 0)) for s in ("critical", "warning", "info")],
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
        *metric(
            "gdsdoctor_source_not_read",
            "Sources a partial run could not read (denied, hidden, missing); see the how in --format json.",
            [
                ({"source": item["source"], "status": item["status"]}, 1)
                for item in (summary.get("partial") or {}).get("not_read", [])
            ],
        ),
        *metric(
            "gdsdoctor_info",
            "gdsdoctor version and what was analysed.",
            [({"version": report["tool"]["version"], "source": report["source"]["kind"]}, 1)],
        ),
        *metric(
            "gdsdoctor_last_run_timestamp_seconds",
            "When this file was written (Unix time).",
            [({}, round(time.time() if now is None else now, 3))],
        ),
    ]
    return "\n".join(lines) + "\n"
