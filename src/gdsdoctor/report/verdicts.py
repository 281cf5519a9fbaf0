"""Every cause of a report with its outcome, joined with its finding or its missing facts.

Per-cause formats (JUnit: one testcase per cause; Prometheus: one gauge per cause) and the
fleet summary all walk the same list, built here once from the report document alone, so
that a report read back from JSON renders exactly like a fresh one. Reports without the
``causes`` key (older 1.0 documents) still give their fired and inconclusive causes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gdsdoctor.report.outline import command_lines

FIRED, CLEAR, INCONCLUSIVE, NOT_APPLICABLE = "fired", "clear", "inconclusive", "not_applicable"
OUTCOMES = (FIRED, CLEAR, INCONCLUSIVE, NOT_APPLICABLE)


@dataclass(frozen=True, slots=True)
class Verdict:
    id: str
    title: str
    category: str
    severity: str
    outcome: str
    certainty: float | None  # None when the cause was not evaluated
    finding: dict[str, Any] | None = None  # the report's finding, when fired
    missing: tuple[dict[str, str], ...] = ()  # what to collect, when inconclusive
    acknowledged: dict[str, Any] | None = None  # the acknowledgement that set a fired cause apart
    scope: str = "node"  # the finding's scope when fired, else the cause's (docs/rules.md, Status)

    @property
    def counted(self) -> bool:
        """Whether a fired cause's finding sets the status (its scope counts; older reports: yes)."""
        return self.finding is None or bool(self.finding.get("counted", True))

    @property
    def candidate(self) -> bool:
        """A critical finding below the certainty floor (WARNING at most)."""
        return self.finding is not None and bool(self.finding.get("candidate"))

    @property
    def fails(self) -> bool:
        """Fired at a severity that makes the node unhealthy (info and acknowledged findings do
        not, nor those of a scope the status does not count: a shared target, a job)."""
        unhealthy = self.severity in ("critical", "warning") and self.counted
        return self.outcome == FIRED and unhealthy and not self.acknowledged


def verdicts(report: dict[str, Any]) -> list[Verdict]:
    findings = {f["id"]: f for f in report.get("findings", [])}
    acknowledged = {a["finding"]["id"]: a for a in report.get("acknowledged", [])}
    findings.update({cause_id: a["finding"] for cause_id, a in acknowledged.items()})
    missing = {i["id"]: tuple(i["missing"]) for i in report.get("inconclusive", [])}
    causes = report.get("causes")
    if causes is None:  # an older document: what it lists is all we know
        causes = [{**f, "outcome": FIRED} for f in report.get("findings", [])] + [
            {**i, "outcome": INCONCLUSIVE, "certainty": None} for i in report.get("inconclusive", [])
        ]
    return [
        Verdict(
            id=c["id"],
            title=c["title"],
            category=c["category"],
            severity=c["severity"],
            outcome=c["outcome"],
            certainty=c.get("certainty"),
            finding=findings.get(c["id"]),
            missing=missing.get(c["id"], ()),
            acknowledged=acknowledged[c["id"]]["acknowledgement"] if c["id"] in acknowledged else None,
            scope=str((findings.get(c["id"]) or c).get("scope", "node")),
        )
        for c in causes
    ]


def missing_text(verdict: Verdict) -> str:
    """What an inconclusive cause lacks, in one line: ``mounts (missing): run `cat …```."""
    parts = []
    for item in verdict.missing:
        part = f"{item['section']} ({item['status']})"
        if item.get("collect"):
            part += f": {item['collect']}"
        parts.append(part)
    return "; ".join(parts)


def evidence_lines(finding: dict[str, Any]) -> list[str]:
    """A finding's evidence, fix and commands as plain lines (for JUnit bodies and the like)."""
    lines = [finding["explanation"], "", "Evidence:"]
    for evidence in finding["evidence"]:
        where = f"{evidence['artifact']}:{evidence['line']}: " if evidence.get("artifact") else ""
        lines.append(f"  {where}{evidence['text']}")
    if finding["fix"]:
        lines += ["", f"Fix: {finding['fix']}"]
    if finding["remediation"] or finding.get("verify"):
        lines += ["", *command_lines(finding["remediation"], finding.get("verify", []))]
    if finding["explains"]:
        lines += ["", "Explains: " + ", ".join(finding["explains"])]
    return lines
