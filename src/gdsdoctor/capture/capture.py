"""The result of any capture (live host, bundle, pasted files): artifacts plus what they are for."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gdsdoctor.model import Artifact

# The trees of a host's / that a --host-root must hold some of (capture/live.py); those it
# lacks are recorded in ``options["absent_trees"]``, carried by bundles, and make a run partial.
HOST_TREES = ("proc", "sys", "etc")
# The detail of a source no capture reads itself (fio's result: `gdsdoctor bench` makes it).
PRODUCED_ELSEWHERE = "produced only by another command"


@dataclass(slots=True)
class Capture:
    """Raw artifacts of one host and, for each facts section, which artifacts may feed it."""

    origin: str  # "live", "bundle", "files"
    artifacts: dict[str, Artifact] = field(default_factory=dict)
    # section -> artifact names in order of preference (the first ok one is parsed)
    assignments: dict[str, list[str]] = field(default_factory=dict)
    host: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)  # e.g. {"target_path": "/mnt/ckpt"}
    notes: list[str] = field(default_factory=list)  # what the user should know (unrecognised files…)
    label: str = ""  # what to call it in a report: host name, bundle path, file names

    def __repr__(self) -> str:
        return f"Capture({self.origin!r}, label={self.label!r}, {len(self.artifacts)} artifacts)"

    def add(self, section: str, artifact: Artifact) -> None:
        """Record ``artifact`` for ``section``. A new name is appended without a search of the
        section's list (80,000 sections of an nvidia-bug-report log searched it each: 54 s); a
        name seen before replaces its artifact and keeps its place."""
        new = artifact.name not in self.artifacts
        self.artifacts[artifact.name] = artifact
        names = self.assignments.setdefault(section, [])
        if new or artifact.name not in names:
            names.append(artifact.name)
