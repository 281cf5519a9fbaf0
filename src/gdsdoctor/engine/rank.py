"""Ranking: root causes first with their symptoms folded under them, then severity × certainty.

1. A fired cause that another fired cause ``explains`` (directly or through a chain) is a
   symptom: it is folded under the highest-ranked cause that explains it.
2. Root causes are ordered by ``weight(severity) × certainty`` (critical 3, warning 2,
   info 1), highest first; ties by severity, then by id, so the order is deterministic.
3. Each root is followed by its folded symptoms, in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from gdsdoctor.engine.evaluate import CauseResult, Outcome

SEVERITY_WEIGHT = {"critical": 3, "warning": 2, "info": 1}


class RankedFinding(NamedTuple):
    result: CauseResult
    explained_by: str | None = None
    explains: tuple[str, ...] = ()


def score(result: CauseResult) -> tuple[float, int, str]:
    weight = SEVERITY_WEIGHT[result.cause.severity]
    return (-weight * result.certainty, -weight, result.cause.id)


def rank(results: Sequence[CauseResult]) -> list[RankedFinding]:
    fired = sorted((r for r in results if r.outcome is Outcome.FIRED), key=score)
    by_id = {r.cause.id: r for r in fired}
    explained = {
        symptom for r in fired for symptom in _explained_closure(r.cause.id, by_id) if symptom != r.cause.id
    }
    ranked: list[RankedFinding] = []
    placed: set[str] = set()
    # Roots are the fired causes nothing else explains; a cycle of explanations leaves
    # causes unplaced, and the best-ranked of those then stands as a root too.
    candidates = [r for r in fired if r.cause.id not in explained] + [
        r for r in fired if r.cause.id in explained
    ]
    for root in candidates:
        if root.cause.id in placed:
            continue
        placed.add(root.cause.id)
        symptoms = sorted(
            (by_id[s] for s in _explained_closure(root.cause.id, by_id) if s not in placed), key=score
        )
        ranked.append(RankedFinding(root, explains=tuple(s.cause.id for s in symptoms)))
        for symptom in symptoms:
            placed.add(symptom.cause.id)
            ranked.append(RankedFinding(symptom, explained_by=root.cause.id))
    return ranked


def _explained_closure(cause_id: str, by_id: dict[str, CauseResult]) -> list[str]:
    """Fired causes explained by ``cause_id``, directly or transitively (cycle-safe)."""
    seen: list[str] = []
    stack = list(by_id[cause_id].cause.explains)
    while stack:
        current = stack.pop(0)
        if current in by_id and current not in seen and current != cause_id:
            seen.append(current)
            stack.extend(by_id[current].cause.explains)
    return seen
