"""Which reader a pasted text is for: every recogniser is asked, the best reading wins.

A recogniser only says "this could be mine"; two may claim one text (``lsblk -P`` and
``/etc/os-release`` are both ``KEY="value"`` lines). When more than one claims it, each claimant
parses the text and the one whose facts explain the most lines wins (lines explained: the distinct
line numbers in the provenance records of what it parsed); a tie keeps registry order. The
runner-up is named so the report can say the reading was ambiguous.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from gdsdoctor.probes.base import Probe, numbered_lines

AMBIGUOUS_WITHIN = 0.1  # a runner-up explaining this close a share of lines makes the reading ambiguous
WHOLE_READING = 0.5  # ...when it explains at least this share (logs read in part by two readers are not)


class Reading(NamedTuple):
    probe: Probe
    score: float  # share of the text's non-blank lines the parsed facts explain (1.0 when alone)


class Recognition(NamedTuple):
    best: Reading | None
    others: tuple[Reading, ...]  # the other claimants that parsed, best first

    @property
    def ambiguity(self) -> str:
        """Words naming a close runner-up ("" when the reading is clear)."""
        if self.best is None or not self.others:
            return ""
        runner = self.others[0]
        if runner.score < WHOLE_READING or self.best.score - runner.score > AMBIGUOUS_WITHIN:
            return ""
        return (
            f"read as {self.best.probe.paste_hint} ({self.best.score:.0%} of lines explained); "
            f"it could also be {runner.probe.paste_hint} ({runner.score:.0%})"
        )


def claimants(text: str, probes: Sequence[Probe]) -> list[Probe]:
    """Every probe whose recogniser claims the text, in registry order."""
    claimed = []
    for probe in probes:
        try:
            if probe.recognise is not None and probe.recognise(text):
                claimed.append(probe)
        except Exception:  # a recogniser bug must not stop the others
            continue
    return claimed


def recognise_text(text: str, probes: Sequence[Probe]) -> Recognition:
    """The best reading of ``text`` among ``probes`` and the other candidates."""
    if not text.strip():
        return Recognition(None, ())
    claimed = claimants(text, probes)
    if len(claimed) == 1:
        return Recognition(Reading(claimed[0], 1.0), ())
    readings = [Reading(probe, explained_share(probe, text)) for probe in claimed]
    ranked = sorted(readings, key=lambda r: -r.score)  # stable: ties keep registry order
    ranked = [r for r in ranked if r.score > 0] or ranked[:1]
    if not ranked:
        return Recognition(None, ())
    return Recognition(ranked[0], tuple(ranked[1:]))


def explained_share(probe: Probe, text: str) -> float:
    """The share of non-blank lines the probe's facts cite; 0 when it cannot parse the text. A
    parser that cites no lines at all (a one-value section) counts as explaining half."""
    try:
        section = probe.parse(text, "paste")
    except Exception:  # ParseError or a parser bug: this reading fails
        return 0.0
    filled = sum(1 for _, line in numbered_lines(text) if line.strip()) or 1
    cited = set(_cited_lines(section))
    return min(1.0, len(cited) / filled) if cited else 0.5


def _cited_lines(value: Any, depth: int = 0) -> Iterator[int]:
    """Line numbers of every provenance record (``{"artifact", "line", "text"}``) in a section."""
    if depth > 12:
        return
    if isinstance(value, dict):
        line = value.get("line")
        if isinstance(line, int) and "artifact" in value:
            yield line
            return
        for item in value.values():
            yield from _cited_lines(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            yield from _cited_lines(item, depth + 1)
