"""One facts section from the artifacts captured for its probe.

Shared by the offline analysis (facts.document) and the live capture, whose probe threads parse
what they captured while other probes still run: parsers are pure, so both give the same
section for the same artifacts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gdsdoctor.deadline import doing
from gdsdoctor.errors import ParseError
from gdsdoctor.model import Artifact, ArtifactStatus, decode_text
from gdsdoctor.probes.base import Probe

RUN_AS_ROOT = "run as root"


def section_from(probe: Probe, artifacts: Sequence[Artifact]) -> dict[str, Any]:
    """The section of ``probe`` from its artifacts in order of preference: the first ``ok`` one
    that parses; else the first real failure, in that order: a source that ran and failed (timed
    out, was refused, died, printed nothing parsable) rather than one that is merely absent. A
    fallback that is missing or prints nothing usable must not hide why the preferred source
    failed (``dmesg`` killed by SIGSEGV, then ``journalctl -k`` with no entries: the report
    names the SIGSEGV). A permission failure says what to do about it: "denied: run as root"."""
    if not artifacts:
        return {
            "status": "not_collected",
            "detail": f"not in this capture; {probe.how_to_collect()}",
        }
    failures, read = [], []
    for artifact in artifacts:
        if artifact.status is not ArtifactStatus.OK:
            failures.append(
                {"status": str(artifact.status), "artifact": artifact.name, "detail": _detail(artifact)}
            )
            continue
        section = _parsed(probe, artifact)
        if section["status"] == "unparsable" and artifact.exit_code:
            section = _failed_command(artifact)
        if section["status"] == "ok" and probe.combine is None:
            return section
        (read if section["status"] == "ok" else failures).append(section)
    if read:
        return _combined(probe, read)
    return next((f for f in failures if f["status"] != ArtifactStatus.MISSING), failures[0])


def _combined(probe: Probe, sections: list[dict[str, Any]]) -> dict[str, Any]:
    """Several outputs of one kind read as one section (``Probe.combine``); it names the first
    artifact, and ``artifacts`` all of them."""
    if len(sections) == 1:
        return sections[0]
    assert probe.combine is not None
    combined = probe.combine(
        [{k: v for k, v in s.items() if k not in ("status", "artifact")} for s in sections]
    )
    return {
        **combined,
        "status": "ok",
        "artifact": sections[0]["artifact"],
        "artifacts": [s["artifact"] for s in sections],
    }


def _failed_command(artifact: Artifact) -> dict[str, Any]:
    """An output that does not parse, of a command that exited non-zero (a sos report keeps
    both): the tool's own message says why, not the parser."""
    head = decode_text(artifact.data[:4096])  # the first lines, never a copy of the whole output
    said = next((line.strip() for line in head.split("\n")[:20] if line.strip()), "")
    detail = f"the command failed (exit {artifact.exit_code})" + (f": {said}" if said else "")
    return {"status": "error", "artifact": artifact.name, "detail": detail[:300]}


def _detail(artifact: Artifact) -> str:
    """Why a source was not read; a permission failure says what to do about it."""
    if artifact.status is not ArtifactStatus.DENIED or RUN_AS_ROOT in artifact.detail:
        return artifact.detail
    return f"{RUN_AS_ROOT} ({artifact.detail})" if artifact.detail else RUN_AS_ROOT


def _parsed(probe: Probe, artifact: Artifact) -> dict[str, Any]:
    doing(f"parsing {probe.section} ({artifact.name})")
    try:
        parsed = probe.parse(artifact.text, artifact.name)
    except ParseError as error:
        return {"status": "unparsable", "artifact": artifact.name, "detail": str(error)}
    except Exception as error:  # a parser bug is reported, never raised
        detail = f"parser failed: {type(error).__name__}: {error}"
        return {"status": "error", "artifact": artifact.name, "detail": detail[:300]}
    if artifact.first_line != 1:
        _shift_lines(parsed, artifact.name, artifact.first_line - 1)
    return {**parsed, "status": "ok", "artifact": artifact.name}


def _shift_lines(parsed: Any, name: str, offset: int) -> None:
    """Provenance (``src``: artifact, line, text) of an artifact cut from a larger file, counted
    in that file: parsers count from 1. Each dict once (a section may hold one twice: by_name)."""
    seen: set[int] = set()
    stack = [parsed]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        values = item.values() if isinstance(item, dict) else item
        if isinstance(item, dict) and item.get("artifact") == name and "text" in item:
            line = item.get("line")
            if isinstance(line, int) and not isinstance(line, bool):
                item["line"] = line + offset
        stack.extend(v for v in values if isinstance(v, dict | list))
