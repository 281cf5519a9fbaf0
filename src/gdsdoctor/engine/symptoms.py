"""The differential's table: symptoms a job's output shows without their cause, each with the
causes that produce it (``symptoms:`` in a rule file, rules/symptoms.yaml; docs/rules.md
"Symptoms and their candidates").

A symptom is a condition over the facts (an NCCL watchdog timeout, a save that failed without an
errno, a rank killed with SIGKILL); its candidates are cause ids of the catalogue, each with the
one command or file that settles it and the facts sections that decide it (read and healthy:
the candidate is ruled out). This module parses and lints the table; engine/differential.py
judges it over the evaluated causes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from jmespath.exceptions import JMESPathError

from gdsdoctor.engine.command_shape import state_change
from gdsdoctor.engine.functions import compile_expression, expression_problems

Location = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Candidate:
    cause: str  # a cause id of the catalogue
    settle: str  # the one read-only command (or file) that settles it
    decided_by: tuple[str, ...]  # facts sections: one read whole and the cause clear → ruled out
    # the deciding fact itself, when a section read is not enough (the log read, and it times a save)
    decided_when: str | None = None


@dataclass(frozen=True, slots=True)
class Symptom:
    id: str
    title: str
    when: str  # JMESPath over the facts: truthy = the symptom is in the input
    says: str
    explanation: str
    candidates: tuple[Candidate, ...]
    evidence: str | None = None  # the lines cited (default: the when)
    scope: str = "job"
    file: str = ""
    line: int = 0


def symptoms_of(document: dict[str, Any], file: str, lines: dict[Location, int]) -> list[Symptom]:
    """The ``symptoms:`` of one rule file (already valid against the schema)."""
    return [
        Symptom(
            id=raw["id"],
            title=raw["title"],
            when=raw["when"],
            says=raw["says"],
            explanation=raw["explanation"].strip(),
            candidates=tuple(
                Candidate(c["cause"], c["settle"], tuple(c["decided_by"]), c.get("decided_when"))
                for c in raw["candidates"]
            ),
            evidence=raw.get("evidence", raw["when"]) or None,
            scope=raw.get("scope", "job"),
            file=file,
            line=lines.get(("symptoms", i), 0),
        )
        for i, raw in enumerate(document.get("symptoms") or [])
    ]


def symptom_from_record(record: dict[str, Any], rules_dir: str) -> Symptom:
    """A symptom of the wheel's built rules (``dataclasses.asdict`` of one, its file relative)."""
    fields = dict(record)
    fields["file"] = os.path.join(rules_dir, record["file"])
    fields["candidates"] = tuple(
        Candidate(c["cause"], c["settle"], tuple(c["decided_by"]), c.get("decided_when"))
        for c in record["candidates"]
    )
    return Symptom(**fields)


def symptom_expressions(symptom: Symptom) -> list[str]:
    candidates = [c.decided_when for c in symptom.candidates]
    return [e for e in (symptom.when, symptom.evidence, *candidates) if e]


def symptom_problems(
    symptoms: Sequence[Symptom], cause_ids: Iterable[str], known_sections: set[str]
) -> list[tuple[str, int, str]]:
    """``(file, line, message)`` for every problem of the table: an unknown candidate cause (the
    table must name what the catalogue holds), an unknown section, an expression that does not
    compile, a settling command that changes the host, a duplicate id."""
    known = set(cause_ids)
    problems: list[tuple[str, int, str]] = []
    seen: set[str] = set()
    for symptom in symptoms:

        def say(message: str, s: Symptom = symptom) -> None:
            problems.append((s.file, s.line, f"symptom {s.id}: {message}"))

        if symptom.id in seen:
            say("duplicate symptom id")
        seen.add(symptom.id)
        for expression in symptom_expressions(symptom):
            try:
                compiled = compile_expression(expression)
            except JMESPathError as error:
                say(f"expression does not compile: {str(error).splitlines()[0]}")
                continue
            for problem in expression_problems(compiled):
                say(problem)
        for candidate in symptom.candidates:
            if candidate.cause not in known:
                say(f"candidate {candidate.cause!r} is not a cause of the catalogue")
            for section in candidate.decided_by:
                if known_sections and section not in known_sections:
                    say(f"candidate {candidate.cause}: unknown facts section {section!r}")
            change = state_change(candidate.settle)
            if change:
                say(f"candidate {candidate.cause}: settle must only read ({change})")
        causes = [c.cause for c in symptom.candidates]
        if len(set(causes)) < len(causes):
            say("a candidate is listed twice")
    return problems
