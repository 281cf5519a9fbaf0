"""The result of any capture (live host, bundle, pasted files): artifacts plus what they are for."""

from __future__ import annotations

from typing import Any

from gdsdoctor.model import Artifact


class Capture:
    """Raw artifacts of one host and, for each facts section, which artifacts may feed it."""

    __slots__ = ("artifacts", "assignments", "host", "label", "notes", "options", "origin")

    def __init__(
        self,
        origin: str,  # "live", "bundle", "files"
        artifacts: dict[str, Artifact] | None = None,
        assignments: dict[str, list[str]] | None = None,
        host: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
        notes: list[str] | None = None,
        label: str = "",
    ) -> None:
        self.origin = origin
        self.artifacts = {} if artifacts is None else artifacts
        # section -> artifact names in order of preference (the first ok one is parsed)
        self.assignments = {} if assignments is None else assignments
        self.host = {} if host is None else host
        self.options = {} if options is None else options  # e.g. {"target_path": "/mnt/ckpt"}
        self.notes = [] if notes is None else notes  # what the user should know (unrecognised files…)
        self.label = label  # what to call it in a report: host name, bundle path, file names

    def __repr__(self) -> str:
        return f"Capture({self.origin!r}, label={self.label!r}, {len(self.artifacts)} artifacts)"

    def add(self, section: str, artifact: Artifact) -> None:
        self.artifacts[artifact.name] = artifact
        names = self.assignments.setdefault(section, [])
        if artifact.name not in names:
            names.append(artifact.name)
