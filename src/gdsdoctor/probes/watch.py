"""The timeline `gdsdoctor watch --record` keeps in its bundle, as a facts section (``watch``).

Only the probe is declared here; the parser (:mod:`gdsdoctor.probes.watch_timeline`: phases,
limiters) is imported when a timeline is parsed, so a `check` without one pays nothing for it.
"""

from __future__ import annotations

from gdsdoctor.checkpoint.records import ARTIFACT, FORMAT
from gdsdoctor.probes.base import Probe, Section, Source


def parse(text: str, artifact: str) -> Section:
    from gdsdoctor.probes.watch_timeline import parse as parse_timeline

    return parse_timeline(text, artifact)


def recognise(text: str) -> bool:
    first = text.lstrip()[:4096].split("\n", 1)[0]
    return first.startswith("{") and f'"format":"{FORMAT}"' in first.replace(" ", "")


PROBES: tuple[Probe, ...] = (
    Probe(
        section="watch",
        title="write phases watched on the checkpoint path, from `gdsdoctor watch --record`",
        sources=(Source(ARTIFACT, how="gdsdoctor watch --path PATH --record FILE"),),
        parse=parse,
        recognise=recognise,
        paste_hint="the timeline of `gdsdoctor watch --record` (watch/timeline.jsonl)",
        tags=("throughput",),
    ),
)
