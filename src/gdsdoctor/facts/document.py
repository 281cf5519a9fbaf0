"""Parse a capture into the facts document.

Every probe gets a section, whatever happened: ``{"status": "ok", "artifact": ..., ...}``
when a source was captured and parsed, otherwise a status with a one-line ``detail``:

- ``missing`` / ``denied`` / ``timeout`` / ``error``: the capture status of the preferred source;
- ``unparsable``: captured, but not the expected format (the parser's reason);
- ``not_collected``: this capture has no artifact for it (a partial bundle, pasted files).

Parsers are pure, so the document depends only on the artifacts: the live and the offline
paths give the same facts for the same artifacts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gdsdoctor.capture.capture import Capture
from gdsdoctor.facts.derive import derive
from gdsdoctor.facts.job import job_section
from gdsdoctor.model import Artifact, ArtifactStatus
from gdsdoctor.probes import PROBES, target
from gdsdoctor.probes.base import ParseError, Probe

Facts = dict[str, Any]
ANALYSED_PROBES: tuple[Probe, ...] = (*PROBES, target.PROBE)


def build_facts(capture: Capture, probes: Sequence[Probe] = ANALYSED_PROBES) -> Facts:
    facts: Facts = {probe.section: section_for(probe, capture) for probe in probes}
    facts["job"] = job_section(capture.options.get("job"))
    target_path = capture.options.get("target_path")
    if target_path:
        facts["target"]["path"] = target_path
    facts["derived"] = derive(facts, target_path)
    return facts


def section_for(probe: Probe, capture: Capture) -> dict[str, Any]:
    names = capture.assignments.get(probe.section) or []
    artifacts = [capture.artifacts[n] for n in names if n in capture.artifacts]
    if not artifacts:
        return {
            "status": "not_collected",
            "detail": f"not in this capture; collect with {probe.how_to_collect()}",
        }
    for artifact in artifacts:
        if artifact.status is ArtifactStatus.OK:
            return _parsed(probe, artifact)
    first = artifacts[0]
    return {"status": str(first.status), "artifact": first.name, "detail": first.detail}


def _parsed(probe: Probe, artifact: Artifact) -> dict[str, Any]:
    try:
        parsed = probe.parse(artifact.text, artifact.name)
    except ParseError as error:
        return {"status": "unparsable", "artifact": artifact.name, "detail": str(error)}
    except Exception as error:  # a parser bug is reported, never raised
        detail = f"parser failed: {type(error).__name__}: {error}"
        return {"status": "error", "artifact": artifact.name, "detail": detail[:300]}
    return {**parsed, "status": "ok", "artifact": artifact.name}
