"""One short line: a node-problem-detector message (``--format oneline``, ``--npd``), or the
reason a scheduler puts on a drained node (``--format slurm``).

``ext4-data-journal WARNING 0.90: ext4 data=journal on the checkpoint mount (+1: nvidia-fs-not-loaded)``

It starts with the top root cause's id, so that a column cut short (``sinfo -R`` shows the first
20 characters of the reason: its default format is ``%20E``) still says what is wrong.

The drain reason is shorter: ``gdsdoctor: nvidia-fs-not-loaded (+2): nvidia-fs kernel module...``,
at most :data:`SLURM_REASON_MAX` characters, cut between words. Slurm's scontrol(1) documents no
maximum for ``Reason=``, but the reason is what an operator reads in ``sinfo -R``, ``scontrol
show node`` and slurmctld's log beside the node name and time, and a 111-character one that ends
``(+1:...`` names its second cause by half; the count of the other causes is enough there (the
node's report lists them). Plain ASCII (no newline, no control character): it is passed on a
command line and stored in slurmctld's state.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from gdsdoctor.report.escape import one_line

SLURM_REASON_MAX = 64
REASON_PREFIX = "gdsdoctor: "  # whose reason it is: a drained node's reason names the tool that set it
ONELINE_MAX = 100
# node-problem-detector custom plugins: the message is cut at the plugin config's
# ``max_output_length``, 80 by default (pkg/custompluginmonitor/types: defaultMaxOutputLength).
NPD_OUTPUT_MAX = 80


# Our own messages' punctuation, spelled in ASCII: a Slurm drain reason "not recognised ?
# `gdsdoctor probes` lists …" reads as a question.
_ASCII_SPELLING = str.maketrans(
    {"—": "-", "–": "-", "…": "...", "→": "->", "↔": "<->", "‘": "'", "’": "'", "“": '"', "”": '"'}
)


def ascii_line(text: object) -> str:
    """Printable ASCII on one line: our punctuation spelled in ASCII, accented letters without
    their accents (``é`` → ``e``), anything else shown as ``?``."""
    flat = unicodedata.normalize("NFKD", one_line(text).translate(_ASCII_SPELLING))
    return "".join(c if " " <= c <= "~" else "?" for c in flat if not unicodedata.combining(c))


_SEVERITY_FIRST = ("critical", "warning")


def render_oneline(report: dict[str, Any], limit: int = ONELINE_MAX) -> str:
    return fit(oneline(report), limit) + "\n"


def counted_roots(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The root causes that set the status, the one a line names first. The worst severity
    first, in rank order within it (a warning that answers a pasted error ranks above a critical
    elsewhere in the report, but a drain reason or a node condition names the critical one); a
    critical candidate counts as a warning. Shared and job findings never drain: left out."""
    roots = [f for f in report["findings"] if not f["explained_by"] and f["severity"] != "info"]
    roots = [f for f in roots if f.get("counted", True)]
    return sorted(roots, key=lambda f: _SEVERITY_FIRST.index(_counts_as(f)))  # stable: rank order kept


def oneline(report: dict[str, Any]) -> str:
    summary = report["summary"]
    roots = counted_roots(report)
    if not roots:
        return ascii_line(f"{summary['status']}: {summary['reason']}")
    top, others = roots[0], roots[1:]
    label = "CANDIDATE" if top.get("candidate") else top["severity"].upper()
    line = f"{top['id']} {label} {top['certainty']:.2f}"
    if summary.get("partial"):  # before the title: a cut line must still say the run was blind somewhere
        line += " (partial: " + ",".join(i["source"] for i in summary["partial"]["not_read"]) + " not read)"
    line += f": {top['title']}"
    if others:
        line += f" (+{len(others)}: {','.join(f['id'] for f in others)})"
    return ascii_line(line)


def render_slurm_reason(report: dict[str, Any], limit: int = SLURM_REASON_MAX) -> str:
    return slurm_reason(report, limit) + "\n"


def slurm_reason(report: dict[str, Any], limit: int = SLURM_REASON_MAX) -> str:
    """``gdsdoctor: TOP-ID (+N): title``, at most ``limit`` characters: the id of the cause that
    sets the status and how many others do, whole; then its title as far as it fits, cut between
    words. Without such a cause (UNKNOWN, or a status set by what no cause explains), the status
    and its reason, cut the same way."""
    roots = counted_roots(report)
    if not roots:
        summary = report["summary"]
        return cut_words(ascii_line(f"{REASON_PREFIX}{summary['status']}: {summary['reason']}"), limit)
    top = roots[0]
    head = ascii_line(REASON_PREFIX + top["id"])
    count = f" (+{len(roots) - 1})" if len(roots) > 1 else ""
    if len(head) + len(count) > limit:  # a site rule's long id: cut between its words, the count stays
        room = head[: max(0, limit - len(count) - 3)]
        cut = room.rfind("-")
        return (room[:cut] if cut > len(REASON_PREFIX) else room) + "..." + count
    return cut_words(f"{head}{count}: {ascii_line(top['title'])}", limit, keep=len(head) + len(count))


def cut_words(line: str, limit: int, keep: int = 0) -> str:
    """``line`` within ``limit`` characters, cut at the last space that leaves room for ``...``;
    its first ``keep`` characters stay whole: when not one word after them fits, they alone are
    the line (the separator after them dropped)."""
    if len(line) <= limit:
        return line
    room = line[: max(0, limit - 3)]
    kept = room[: max(0, room.rfind(" "))].rstrip(" -:;,")
    if len(kept) <= keep:
        return line[:keep] if keep else room + "..."  # no space at all: one long word, cut inside
    return kept + "..."


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
