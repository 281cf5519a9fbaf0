"""Acknowledgements: findings a site has decided to live with (the site config's
``acknowledge:``, gdsdoctor/config.py), set apart from the ones that judge the node.

An acknowledgement matches a ranked finding when its ``id`` (a cause id or a glob) matches the
cause, its ``host`` (a glob) the host name, and its ``device`` and ``mount`` are named by the
finding's evidence (a device by its name or /dev path, a mount by its mount point or a path
below it). A matched root takes the symptoms folded under it along. Acknowledged findings are
shown with the reason and counted apart; they never set the status or the exit code. Past its
``until`` day an acknowledgement no longer applies: its finding counts again, and the report
warns that it expired (a forgotten acknowledgement must not hide a problem for ever).
"""

from __future__ import annotations

import datetime as dt
import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gdsdoctor.engine.rank import RankedFinding, evidence_words
from gdsdoctor.errors import UserError

Acknowledgement = dict[str, Any]


@dataclass(slots=True)
class Acknowledged:
    """The findings that still judge the node, those set apart (each with the acknowledgement
    that matched), and the expired acknowledgements (each with whether its finding fired)."""

    kept: list[RankedFinding] = field(default_factory=list)
    set_apart: list[tuple[RankedFinding, Acknowledgement]] = field(default_factory=list)
    expired: list[tuple[Acknowledgement, bool]] = field(default_factory=list)


def acknowledge(
    ranked: Sequence[RankedFinding],
    acknowledgements: Sequence[Acknowledgement],
    host: str,
    known_ids: Sequence[str] = (),
    today: dt.date | None = None,
) -> Acknowledged:
    """Split ``ranked`` by ``acknowledgements`` (checked: an id that names no cause is an error)."""
    _check_ids(acknowledgements, known_ids)
    today = today or dt.date.today()
    active = [a for a in acknowledgements if a.get("until") is None or a["until"] >= today]
    done = Acknowledged()
    root_ack: dict[str, Acknowledgement] = {}
    for finding in ranked:
        match = root_ack.get(finding.explained_by or "") or _match(finding, active, host)
        if match is None:
            done.kept.append(finding)
            continue
        done.set_apart.append((finding, match))
        if not finding.explained_by:
            root_ack[finding.result.cause.id] = match
    for ack in acknowledgements:
        if ack not in active:
            fired = any(_match(finding, [ack], host) for finding in ranked)
            done.expired.append((ack, fired))
    return done


def _match(
    finding: RankedFinding, acknowledgements: Sequence[Acknowledgement], host: str
) -> Acknowledgement | None:
    cause_id = finding.result.cause.id
    words: set[str] | None = None
    for ack in acknowledgements:
        if not fnmatch.fnmatchcase(cause_id, ack["id"]):
            continue
        if ack.get("host") and not fnmatch.fnmatchcase(host, ack["host"]):
            continue
        if ack.get("device") or ack.get("mount"):
            words = evidence_words(finding.result) if words is None else words
            if ack.get("device") and not _names_device(words, ack["device"]):
                continue
            if ack.get("mount") and not _names_mount(words, ack["mount"]):
                continue
        return ack
    return None


def _names_device(words: set[str], device: str) -> bool:
    wanted = device.removeprefix("/dev/")
    return any(fnmatch.fnmatchcase(word.removeprefix("/dev/"), wanted) for word in words)


def _names_mount(words: set[str], mount: str) -> bool:
    point = mount.rstrip("/") or "/"
    return any(word == point or word.startswith(point + "/") for word in words)


def _check_ids(acknowledgements: Sequence[Acknowledgement], known_ids: Sequence[str]) -> None:
    """An id that is no glob and names no cause is a typo that would acknowledge nothing."""
    if not known_ids:
        return
    import difflib

    for index, ack in enumerate(acknowledgements):
        pattern = ack["id"]
        if any(c in pattern for c in "*?[") or pattern in known_ids:
            continue
        close = difflib.get_close_matches(pattern, known_ids, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise UserError(f"acknowledge[{index}].id {pattern!r}: no such cause{hint}")


def describe(ack: Acknowledgement) -> dict[str, Any]:
    """An acknowledgement as the report shows it (JSON: the date as YYYY-MM-DD)."""
    until = ack.get("until")
    shown = {k: ack[k] for k in ("id", "device", "mount", "host") if ack.get(k)}
    return {**shown, "reason": ack["reason"], "until": until.isoformat() if until else None}
