"""One short line: the reason a scheduler puts on a drained node, or a node-problem-detector message.

``ext4-data-journal WARNING 0.90: ext4 data=journal on the checkpoint mount (+1: nvidia-fs-not-loaded)``

It starts with the top root cause's id, so that ``sinfo -R`` (which shows only the first 20
characters of the reason: its default format is ``%20E``) still says what is wrong. Slurm's
scontrol(1) (22.05) documents no maximum length for ``Reason=``, but a reason longer than a
terminal line is unreadable in ``scontrol show node`` and NHC logs, so it is capped at
:data:`SLURM_REASON_MAX` characters. Plain ASCII (no newline, no control character): it is
passed on a command line and stored in slurmctld's state.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from gdsdoctor.report.escape import one_line

SLURM_REASON_MAX = 100
# node-problem-detector custom plugins: the message is cut at the plugin config's
# ``max_output_length``, 80 by default (pkg/custompluginmonitor/types: defaultMaxOutputLength).
NPD_OUTPUT_MAX = 80


# Our own messages' punctuation, spelled in ASCII: a Slurm drain reason "not recognised ?
# `gdsdoctor probes` lists …" reads as a question.
_ASCII_SPELLING = str.maketrans(
    {"—": "-", "–": "-", "…": "...", "→": "->", "‘": "'", "’": "'", "“": '"', "”": '"'}
)


def ascii_line(text: object) -> str:
    """Printable ASCII on one line: our punctuation spelled in ASCII, accented letters without
    their accents (``é`` → ``e``), anything else shown as ``?``."""
    flat = unicodedata.normalize("NFKD", one_line(text).translate(_ASCII_SPELLING))
    return "".join(c if " " <= c <= "~" else "?" for c in flat if not unicodedata.combining(c))


_SEVERITY_FIRST = ("critical", "warning")


def render_oneline(report: dict[str, Any], limit: int = SLURM_REASON_MAX) -> str:
    return fit(oneline(report), limit) + "\n"


def oneline(report: dict[str, Any]) -> str:
    summary = report["summary"]
    roots = [f for f in report["findings"] if not f["explained_by"] and f["severity"] != "info"]
    roots = [f for f in roots if f.get("counted", True)]  # shared and job findings never drain
    if not roots:
        return ascii_line(f"{summary['status']}: {summary['reason']}")
    # The line names what sets the status: the worst severity first, in rank order within it (a
    # warning that answers a pasted error ranks above a critical elsewhere in the report, but a
    # drain reason or a node condition names the critical one); a critical candidate counts as
    # a warning, and says it is one.
    roots.sort(key=lambda f: _SEVERITY_FIRST.index(_counts_as(f)))
    top, others = roots[0], roots[1:]
    label = "CANDIDATE" if top.get("candidate") else top["severity"].upper()
    line = f"{top['id']} {label} {top['certainty']:.2f}"
    if summary.get("partial"):  # before the title: a cut line must still say the run was blind somewhere
        line += " (partial: " + ",".join(i["source"] for i in summary["partial"]["not_read"]) + " not read)"
    line += f": {top['title']}"
    if others:
        line += f" (+{len(others)}: {','.join(f['id'] for f in others)})"
    return ascii_line(line)


def _counts_as(finding: dict[str, Any]) -> str:
    """The severity a finding counts as in the status: a critical candidate as a warning."""
    return (
        "warning" if finding.get("candidate") and finding["severity"] == "critical" else finding["severity"]
    )


def fit(line: str, limit: int) -> str:
    """At most ``limit`` characters, cut at the end with ``...`` so a reader sees it was cut."""
    return line if len(line) <= limit else line[: max(0, limit - 3)].rstrip() + "..."


# node-problem-detector custom plugin exit codes (pkg/custompluginmonitor/types: OK, NonOK, Unknown).
NPD_OK, NPD_PROBLEM, NPD_UNKNOWN = 0, 1, 2


def npd_result(report: dict[str, Any], limit: int = NPD_OUTPUT_MAX) -> tuple[int, str]:
    """Exit code and message for node-problem-detector: UNKNOWN → unknown, a failing exit code
    (after --fail-on) → problem, else OK. The message fits NPD's default output length."""
    summary = report["summary"]
    if summary["status"] == "UNKNOWN":
        code = NPD_UNKNOWN
    else:
        code = NPD_PROBLEM if summary["exit_code"] != 0 else NPD_OK
    return code, fit(oneline(report), limit)
