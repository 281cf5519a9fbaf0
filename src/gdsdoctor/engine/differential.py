"""The differential: each symptom in the input with the causes that produce it, ranked by what
the rest of the input already rules out (docs/rules.md "Symptoms and their candidates").

A candidate is, from what the evaluation of its cause says:

- ``confirmed``: the cause fired at or above the certainty floor (its own finding carries it);
- ``suspected``: it fired below the floor (a candidate finding: what would confirm it is listed);
- ``open``: it did not fire, but none of the sections that decide it (``decided_by``) was read
  whole, or the cause was inconclusive: the command given settles it;
- ``ruled_out``: a section that decides it was read whole and the cause stayed clear (or it does
  not apply: the node does not use the capability it is about).

The symptom is ``explained`` when a candidate is confirmed; else ``open`` (candidates left to
settle, or only suspected) or ``unexplained`` (every known candidate ruled out). A symptom that
is not explained makes an OK status UNKNOWN and never raises it further: it drains no node by
itself (report/build.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jmespath.exceptions import JMESPathError

from gdsdoctor.engine.evaluate import CERTAINTY_FLOOR, CauseResult, Outcome
from gdsdoctor.engine.functions import truthy
from gdsdoctor.engine.query import FactQuery
from gdsdoctor.engine.symptoms import Candidate, Symptom

MAX_EVIDENCE = 6
STATE_ORDER = ("confirmed", "suspected", "open", "ruled_out")


def differential(
    symptoms: Sequence[Symptom], facts: dict[str, Any], results: Sequence[CauseResult]
) -> list[dict[str, Any]]:
    """Every symptom present in ``facts``, with its candidates judged from ``results``."""
    if not symptoms:
        return []
    query = FactQuery(facts)
    by_id = {r.cause.id: r for r in results}
    found = []
    for symptom in symptoms:
        try:
            present = truthy(query.search(symptom.when))
        except JMESPathError:
            present = False
        if present:
            found.append(_judged(symptom, query, facts, by_id))
    return found


def _judged(
    symptom: Symptom, query: FactQuery, facts: dict[str, Any], by_id: dict[str, CauseResult]
) -> dict[str, Any]:
    candidates = [_candidate(c, facts, by_id.get(c.cause), _decided(c, query)) for c in symptom.candidates]
    order = {state: i for i, state in enumerate(STATE_ORDER)}
    candidates.sort(key=lambda c: order[c["state"]])  # stable: the table's order within a state
    states = {c["state"] for c in candidates}
    state = "explained" if "confirmed" in states else "open" if states - {"ruled_out"} else "unexplained"
    return {
        "id": symptom.id,
        "title": symptom.title,
        "says": symptom.says,
        "scope": symptom.scope,
        "state": state,
        "evidence": _evidence(symptom, query),
        "candidates": candidates,
    }


def _decided(candidate: Candidate, query: FactQuery) -> bool:
    """Whether the candidate's deciding fact is in the input (always, without ``decided_when``)."""
    if not candidate.decided_when:
        return True
    try:
        return truthy(query.search(candidate.decided_when))
    except JMESPathError:
        return False


def _candidate(
    candidate: Candidate, facts: dict[str, Any], result: CauseResult | None, decided: bool
) -> dict[str, Any]:
    entry = {
        "cause": candidate.cause,
        "title": result.cause.title if result else candidate.cause,
        "settle": candidate.settle,
        "certainty": result.certainty if result else 0.0,
    }
    state, why = _state(candidate, facts, result, decided)
    return {**entry, "state": state, "why": why}


def _state(
    candidate: Candidate, facts: dict[str, Any], result: CauseResult | None, decided: bool
) -> tuple[str, str]:
    if result is None:  # a site's rules removed it: nothing judged it
        return "open", "not evaluated"
    if result.outcome is Outcome.FIRED:
        if result.certainty >= CERTAINTY_FLOOR:
            return "confirmed", f"fired at {result.certainty:.2f}"
        return "suspected", f"fired at {result.certainty:.2f}, below the certainty floor"
    read = [s for s in candidate.decided_by if _status(facts, s) == "ok"]
    whole = [s for s in read if not facts[s].get("input_cut")]
    if result.outcome is Outcome.NOT_APPLICABLE:
        used = ", ".join(result.not_used)
        return "ruled_out", (
            f"not applicable here (the node does not use {used})" if used else "not applicable here"
        )
    if result.outcome is Outcome.CLEAR and whole and decided:
        return "ruled_out", f"{', '.join(whole)} read: nothing of it there"
    if result.outcome is Outcome.CLEAR and whole:
        return "open", f"{', '.join(whole)} read, but not what would decide it"
    if not read:
        return "open", f"{' or '.join(candidate.decided_by)} not read"
    if not whole:
        return "open", f"{', '.join(read)} read only in part"
    missing = ", ".join(dict.fromkeys(m["section"] for m in result.missing)) or "its data"
    return "open", f"{missing} not read"


def _status(facts: dict[str, Any], section: str) -> str:
    value = facts.get(section)
    return str(value.get("status")) if isinstance(value, dict) else "not_collected"


def _evidence(symptom: Symptom, query: FactQuery) -> list[dict[str, Any]]:
    """The input lines that show the symptom (provenance records of its evidence expression)."""
    try:
        found = query.search(symptom.evidence or symptom.when)
    except JMESPathError:
        return []
    lines: list[dict[str, Any]] = []
    stack = [found]
    while stack and len(lines) < MAX_EVIDENCE:
        current = stack.pop(0)
        if isinstance(current, dict):
            if {"artifact", "line", "text"} <= current.keys():
                lines.append(
                    {"artifact": current["artifact"], "line": current["line"], "text": str(current["text"])}
                )
            elif isinstance(current.get("src"), dict):
                stack.insert(0, current["src"])
            else:
                stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return lines
