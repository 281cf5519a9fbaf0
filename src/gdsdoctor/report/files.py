"""Write report files atomically: a reader (node_exporter's textfile collector, a CI job, a
dashboard) sees the old file or the new one, never half of one (see ``gdsdoctor.outputs``)."""

from __future__ import annotations

from gdsdoctor.outputs import write_atomic

__all__ = ["write_atomic"]
