"""The clock of kernel events: their ages, and ``--since``.

An event's age is measured from the capture's own clock where it recorded one (a live check, a
bundle: the wall time and ``/proc/uptime`` read together, ``capture.host`` ``captured_at_epoch``
and ``uptime_s``), else back from the log's last line (a pasted log), else from the log's wall
stamps (``dmesg -T``, syslog, ISO), which drift after a suspend. ``--since`` is a duration before
the capture (``10m``) or an ISO 8601 time. Used by gdsdoctor.facts.lifecycle.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from gdsdoctor import syslog_time
from gdsdoctor.checkpoint.units import parse_duration
from gdsdoctor.compat import UTC, iso_datetime
from gdsdoctor.errors import EstimateError, UserError

# ---------------------------------------------------------------------------------------------
# --since
# ---------------------------------------------------------------------------------------------


def parse_since(value: str) -> dict[str, Any]:
    """``--since`` as ``{"given", "seconds"}`` (a duration before the capture: ``10m``, ``2s``,
    ``1.5h``, ``2d``) or ``{"given", "epoch"}`` (an ISO 8601 time; one without a zone is UTC).
    A value that is neither is the user's error (one line, exit 3)."""
    text = value.strip()
    try:  # the durations every other option takes (--interval, --fsync): 10m, 1h30m, 500ms
        return {"given": text, "seconds": parse_duration(text, allow_zero=True, what="--since")}
    except EstimateError:
        pass
    try:
        when = iso_datetime(text)
    except ValueError:
        raise UserError(
            f"--since {value!r}: not a duration (10m, 2s, 1h, 2d) nor an ISO 8601 time (2026-01-31T08:00:00Z)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return {"given": text, "epoch": when.timestamp()}


# ---------------------------------------------------------------------------------------------
# Clock
# ---------------------------------------------------------------------------------------------


def _number(value: Any) -> float | None:
    """A finite number, or None (a manifest's "nan" or "1e999" is no time)."""
    try:
        number = float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None
    return number if number is not None and math.isfinite(number) else None


# Wall clocks a capture can have had: from 1970 (an RTC that lost its battery restarts there or
# at 2000) to 2200. Year 1, year 9999 or 1e20 s are no clock: event times and ages from them
# would be nonsense, and datetime cannot even write some of them.
_EARLIEST, _LATEST = 0.0, 7_258_118_400.0  # 1970-01-01, 2200-01-01
_MAX_UPTIME_S = 100 * 365 * 86400.0


def plausible(epoch: float | None) -> float | None:
    """``epoch`` when a clock could show it, else None."""
    return epoch if epoch is not None and _EARLIEST <= epoch <= _LATEST else None


def capture_clock(host: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """What the capture recorded of its own time: ``captured_at`` (epoch seconds) and the
    host's ``uptime_s`` then (live capture, and bundles written since), or the bundle
    manifest's creation time alone. An impossible time is unknown, with ``note`` saying so."""
    given = host.get("captured_at_epoch")
    captured = plausible(_number(given))
    if captured is None and isinstance(options.get("created"), str):
        captured = epoch_of(options["created"])
    uptime = _number(host.get("uptime_s"))
    uptime = uptime if uptime is not None and 0 <= uptime <= _MAX_UPTIME_S else None
    clock: dict[str, Any] = {"captured_at": captured, "uptime_s": uptime}
    if given not in (None, "") and plausible(_number(given)) is None:
        clock["note"] = f"the capture's clock ({str(given)[:40]}) is not a possible time: ignored" + (
            "" if captured is not None else " (when events happened is unknown)"
        )
    return clock


def epoch_of(stamp: str) -> float | None:
    """A wall-clock stamp as a log writes it (ISO with or without a zone, ``dmesg -T``'s
    ``Wed Apr  9 08:23:03 2025``, syslog's ``Jan  2 10:00:00``) in epoch seconds; without a
    zone it is read as UTC (the log does not say its zone: only differences are sure)."""
    text = stamp.strip().replace(",", ".")
    try:
        when = iso_datetime(text)
    except ValueError:  # dmesg -T's or syslog's, in any locale's names (gdsdoctor.syslog_time)
        return plausible(syslog_time.epoch(text))
    try:
        return plausible((when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp())
    except (OverflowError, ValueError, OSError):  # year 1 minus a zone: before datetime's year 1
        return None


class Clock:
    """Ages of events: seconds before the capture (or before the log's last line)."""

    def __init__(self, section: dict[str, Any], clock: dict[str, Any]) -> None:
        self.captured_at = clock.get("captured_at")
        uptime = clock.get("uptime_s")
        last_mono = _number(section.get("last_monotonic_s"))
        last_wall = epoch_of(section["last_timestamp"]) if section.get("last_timestamp") else None
        if uptime is not None and section.get("format") != "dmesg_T":
            self.now_mono, self.basis = uptime, "capture"  # the capture's own uptime
        elif last_mono is not None:
            self.now_mono, self.basis = last_mono, "log_end"
        else:
            self.now_mono, self.basis = None, None
        self.now_wall = last_wall
        self.drifting = section.get("format") in ("dmesg_T", "mixed") and last_mono is None
        if self.basis is None and last_wall is not None:
            self.basis = "wall"
        boot = (self.captured_at - uptime) if self.captured_at is not None and uptime is not None else None
        self.boot_epoch = boot

    def describe(self) -> dict[str, Any]:
        return {
            "basis": self.basis,
            "captured_at": iso(self.captured_at),
            "boot_at": iso(self.boot_epoch),
            "drifting": self.drifting,
        }

    def ago(self, age_s: float) -> str:
        # what ``ago`` reads of the clock (describe() writes two times: a lifecycle verdict each)
        return ago(age_s, {"basis": self.basis, "drifting": self.drifting})

    def age(self, event: dict[str, Any]) -> tuple[float | None, float | None]:
        """(age in seconds, wall time in epoch seconds) of one event; None where unknown."""
        mono = _number(event.get("monotonic_s"))
        if mono is not None and event.get("current_boot") and self.now_mono is not None:
            age = max(0.0, self.now_mono - mono)
            wall = (
                self.captured_at - age if self.captured_at is not None and self.basis == "capture" else None
            )
            return age, wall
        stamp = event.get("timestamp")
        if mono is None and isinstance(stamp, str) and self.now_wall is not None:
            wall = epoch_of(stamp)
            if wall is not None:
                return max(0.0, self.now_wall - wall), wall
        return None, None


def iso(epoch: float | None) -> str | None:
    if plausible(epoch) is None:  # a clock of year 1 less an age, of 1e20 s: no time to write
        return None
    # 2026-01-31T08:00:00Z: isoformat's first 19 characters for the years plausible() lets through
    # (strftime wrote the same at ~4x the cost, once for every event and error line)
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")[:19] + "Z"  # type: ignore[arg-type]


def ago(age_s: float | None, clock: dict[str, Any]) -> str:
    """``12 min ago``, or ``12 min before the log's last line`` when that is what ages count
    from (``clock``: a section's ``clock``); "" when the age is unknown."""
    if age_s is None:
        return ""
    if clock.get("basis") == "capture":
        return f"{age_text(age_s)} ago"
    drift = " (dmesg -T clock: drifts after a suspend)" if clock.get("drifting") else ""
    return f"{age_text(age_s)} before the log's last line{drift}"


def age_text(age_s: float | None) -> str:
    """``12 min``, ``3 h``, ``2 d``: an age as a person says it."""
    if age_s is None:
        return "age unknown"
    if age_s < 90:
        return f"{age_s:.0f} s"
    if age_s < 5400:
        return f"{age_s / 60:.0f} min"
    if age_s < 172800:
        return f"{age_s / 3600:.1f} h"
    return f"{age_s / 86400:.0f} d"
