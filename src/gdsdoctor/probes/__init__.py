"""The probe registry: every source gdsdoctor reads, in one explicit list (no discovery magic)."""

from __future__ import annotations

from gdsdoctor.probes import modules, mounts
from gdsdoctor.probes.base import ParseError, Probe, Source

PROBES: tuple[Probe, ...] = (
    modules.PROBE,
    mounts.PROBE,
)

BY_SECTION: dict[str, Probe] = {probe.section: probe for probe in PROBES}

__all__ = ["BY_SECTION", "PROBES", "ParseError", "Probe", "Source"]
