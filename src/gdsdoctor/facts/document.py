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

from collections.abc import Mapping, Sequence
from typing import Any

from gdsdoctor.capture.capture import Capture
from gdsdoctor.deadline import doing
from gdsdoctor.errors import UserError
from gdsdoctor.facts import event_clock, lifecycle
from gdsdoctor.facts.derived import derive
from gdsdoctor.facts.derived.checkpoint_path import missing_note
from gdsdoctor.facts.job import job_section, memlock_section, save_section
from gdsdoctor.facts.section import section_from
from gdsdoctor.model import Artifact
from gdsdoctor.probes import ANALYSED_PROBES
from gdsdoctor.probes.base import Probe

Facts = dict[str, Any]


def build_facts(
    capture: Capture,
    probes: Sequence[Probe] = ANALYSED_PROBES,
    parsed: Mapping[str, tuple[Sequence[Artifact], Facts]] | None = None,
) -> Facts:
    """The facts of ``capture``. ``parsed`` holds sections parsed earlier (by the live capture's
    probe threads) with the artifacts they came from; one is used only while the capture still
    holds those very artifacts (parsers are pure: the same artifacts give the same section)."""
    facts: Facts = {probe.section: _section(probe, capture, parsed or {}) for probe in probes}
    facts["job"] = job_section(capture.options.get("job"))
    facts["job_save"] = save_section(facts["job"])  # the job's own save mode and memlock, never gdsdoctor's
    facts["job_memlock"] = memlock_section(facts["job"], facts)
    target_path = capture.options.get("target_path")
    if target_path:
        facts["target"]["path"] = target_path
    # before the derived facts: they, like the rules, judge the kernel events of the node as it is now
    doing("judging the kernel events")
    clock = event_clock.capture_clock(capture.host, capture.options)
    if clock.get("note") and clock["note"] not in capture.notes:
        capture.notes.append(clock["note"])
    lifecycle.judge(facts, clock, _since(capture))
    doing("deriving facts")
    facts["derived"] = derive(facts, target_path, capture.options.get("node"))
    if (note := missing_note(facts)) and note not in capture.notes:
        capture.notes.append(note)  # the report says what was diagnosed in the path's place
    return facts


def _since(capture: Capture) -> dict[str, Any] | None:
    """``--since`` as the command line or the bundle's manifest gave it (the CLI has refused a
    bad value already; a bundle's is untrusted: a bad one is a note, not a stop)."""
    given = capture.options.get("since")
    if not isinstance(given, str) or not given:
        return None
    try:
        return event_clock.parse_since(given)
    except UserError as error:
        capture.notes.append(f"since: {error}; every event judged")
        return None


def _section(probe: Probe, capture: Capture, parsed: Mapping[str, tuple[Sequence[Artifact], Facts]]) -> Facts:
    held = held_artifacts(probe, capture)
    earlier = parsed.get(probe.section)
    if earlier is not None and _same_objects(earlier[0], held):
        return earlier[1]
    return section_from(probe, held)


def held_artifacts(probe: Probe, capture: Capture) -> list[Artifact]:
    names = capture.assignments.get(probe.section) or []
    return [capture.artifacts[n] for n in names if n in capture.artifacts]


def _same_objects(these: Sequence[Artifact], those: Sequence[Artifact]) -> bool:
    return len(these) == len(those) and all(a is b for a, b in zip(these, those, strict=True))
