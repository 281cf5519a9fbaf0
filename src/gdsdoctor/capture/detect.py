"""Loose files as pasted into a ticket: recognise each by its content, never by its name."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gdsdoctor.capture.capture import Capture
from gdsdoctor.model import Artifact, ArtifactStatus, decode_text
from gdsdoctor.probes import PROBES, target
from gdsdoctor.probes.base import Probe

MAX_PASTE_BYTES = 64 * 1024 * 1024
RECOGNISABLE: tuple[Probe, ...] = (*PROBES, target.PROBE)


def recognise(text: str, probes: Sequence[Probe] = RECOGNISABLE) -> Probe | None:
    """The first probe (in registry order) whose recogniser claims the text."""
    if not text.strip():
        return None
    for probe in probes:
        try:
            if probe.recognise is not None and probe.recognise(text):
                return probe
        except Exception:  # a recogniser bug must not stop the others
            continue
    return None


def expected_kinds(probes: Sequence[Probe] = RECOGNISABLE) -> str:
    return ", ".join(p.paste_hint for p in probes if p.recognise is not None and p.paste_hint)


def capture_files(paths: Sequence[Path]) -> Capture:
    """Recognise each file and assign it to its section; unrecognised files become notes."""
    capture = Capture(origin="files", label=", ".join(p.name for p in paths))
    for path in paths:
        data, problem = _read(path)
        if problem:
            capture.notes.append(f"{path}: {problem}")
            continue
        text = decode_text(data)
        probe = recognise(text)
        if probe is None:
            capture.notes.append(f"{path}: not recognised; expected one of: {expected_kinds()}")
            continue
        if probe.section in capture.assignments:
            first = capture.assignments[probe.section][0]
            capture.notes.append(
                f"{path}: another {probe.paste_hint} ({first}) was given first; this one is ignored"
            )
            continue
        name = _unique_name(path.name, capture)
        capture.add(probe.section, Artifact(name, ArtifactStatus.OK, data, source=str(path)))
    return capture


def _read(path: Path) -> tuple[bytes, str]:
    try:
        if path.is_dir():
            return b"", "is a directory (a bundle directory needs a manifest.json)"
        with open(path, "rb") as handle:
            data = handle.read(MAX_PASTE_BYTES + 1)
    except FileNotFoundError:
        return b"", "no such file"
    except PermissionError:
        return b"", "permission denied"
    except OSError as error:
        return b"", f"cannot read ({error.strerror or error})"
    if len(data) > MAX_PASTE_BYTES:
        return b"", f"larger than {MAX_PASTE_BYTES // (1024 * 1024)} MiB; not read"
    if not data.strip():
        return b"", "empty"
    if b"\x00" in data[:4096] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return b"", "binary data, not a text output"
    return data, ""


def _unique_name(name: str, capture: Capture) -> str:
    candidate, counter = name, 1
    while candidate in capture.artifacts:
        counter += 1
        candidate = f"{name}.{counter}"
    return candidate
