"""JUnit XML for node-acceptance CI: one testcase per cause, in the Jenkins/Ant schema
(``junit-10.xsd``, which the tests validate against).

- fired critical or warning → ``<failure type="critical|warning">`` with evidence, fix and commands;
- fired info → passed, with the finding in ``<system-out>``;
- fired in a scope the status does not count (a shared filesystem's, a job's: docs/rules.md,
  Status) → passed, with the finding and its scope in ``<system-out>``;
- clear → passed;
- inconclusive → ``<skipped>`` naming the missing facts and how to collect them;
- not applicable → ``<skipped message="not applicable">``;
- fired but acknowledged in the site config → ``<skipped>`` with the reason;
- an UNKNOWN run (bad input, nothing evaluated, blind to what its severe causes need) → one
  more testcase, ``gdsdoctor.run`` ``status``, with an ``<error>`` giving the reason: a CI job
  must not pass a node because every case was skipped.

Everything in the XML comes from the host or a stranger's bundle, so text is escaped by
ElementTree and characters XML 1.0 cannot carry at all (C0 controls but tab/newline, lone
surrogates, U+FFFE/U+FFFF) are shown as ``\\xNN`` instead of producing an unparsable file.
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from typing import Any

from gdsdoctor.patterns import lazy_compile
from gdsdoctor.report.escape import visible
from gdsdoctor.report.partial import describe
from gdsdoctor.report.verdicts import (
    CLEAR,
    FIRED,
    INCONCLUSIVE,
    Verdict,
    evidence_lines,
    missing_text,
    verdicts,
)

# Not allowed anywhere in an XML 1.0 document (Char production), plus C1 controls for readability.
_NOT_XML = lazy_compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: object) -> str:
    """Text safe for an XML 1.0 element or attribute (ElementTree does the ``&<>"`` part)."""
    shown = visible(text)  # control characters made visible, newlines and tabs kept
    return _NOT_XML.sub(
        lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", shown
    )


def render_junit(report: dict[str, Any], timestamp: float | None = None) -> str:
    cases = verdicts(report)
    host = report["host"].get("hostname") or report["source"]["label"]
    suite = ET.Element(
        "testsuite",
        {
            "name": "gdsdoctor",
            "tests": str(len(cases)),
            "failures": str(sum(1 for v in cases if v.fails)),
            "errors": "0",
            "skipped": str(sum(1 for v in cases if v.outcome not in (FIRED, CLEAR))),
            "time": "0.000",
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(timestamp)),
            "hostname": xml_text(host),
        },
    )
    properties = ET.SubElement(suite, "properties")
    summary = report["summary"]
    for name, value in (
        ("gdsdoctor.version", report["tool"]["version"]),
        ("source", report["source"]["label"]),
        ("status", summary["status"]),
        ("exit_code", summary["exit_code"]),
        ("reason", summary["reason"]),
        *([("partial", describe(summary["partial"]))] if summary.get("partial") else []),
    ):
        ET.SubElement(properties, "property", {"name": name, "value": xml_text(value)})
    for verdict in cases:
        suite.append(_testcase(verdict))
    if summary["status"] == "UNKNOWN":
        run = ET.SubElement(suite, "testcase", {"name": "status", "classname": "gdsdoctor.run", "time": "0"})
        ET.SubElement(run, "error", {"type": "UNKNOWN", "message": xml_text(summary["reason"])})
        suite.set("tests", str(len(cases) + 1))
        suite.set("errors", "1")
    root = ET.Element("testsuites", {"name": "gdsdoctor", "tests": suite.get("tests", "0")})
    root.set("failures", suite.get("failures", "0"))
    root.set("errors", suite.get("errors", "0"))
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _testcase(verdict: Verdict) -> ET.Element:
    case = ET.Element(
        "testcase",
        {"name": xml_text(verdict.id), "classname": xml_text(f"gdsdoctor.{verdict.category}"), "time": "0"},
    )
    if verdict.acknowledged is not None:
        ack = verdict.acknowledged
        until = f" until {ack['until']}" if ack.get("until") else ""
        ET.SubElement(case, "skipped", {"message": xml_text(f"acknowledged{until}: {ack['reason']}")})
    elif verdict.outcome == FIRED and verdict.finding is not None:
        body = xml_text("\n".join(evidence_lines(verdict.finding)))
        if verdict.fails:
            message = f"{verdict.title} (certainty {verdict.certainty or 0:.2f})"
            failure = ET.SubElement(case, "failure", {"type": verdict.severity, "message": xml_text(message)})
            failure.text = body
        elif not verdict.counted:  # a shared or job finding: listed, never failing this node
            label = f"{verdict.severity.upper()} ({verdict.scope}, not counted in the status)"
            ET.SubElement(case, "system-out").text = xml_text(f"{label} {verdict.title}\n{body}")
        else:
            ET.SubElement(case, "system-out").text = xml_text(f"INFO {verdict.title}\n{body}")
    elif verdict.outcome == INCONCLUSIVE:
        message = "inconclusive: needs " + (missing_text(verdict) or "facts that were not collected")
        ET.SubElement(case, "skipped", {"message": xml_text(message)})
    elif verdict.outcome != CLEAR:
        ET.SubElement(case, "skipped", {"message": "not applicable on this host"})
    return case
