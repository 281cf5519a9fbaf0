"""Reading the quantities `estimate` and the job description take: counts, sizes, rates, durations.

Every unit says its system (``GB/s`` is SI, 10⁹ B/s; ``GiB/s`` is IEC, 2³⁰ B/s; ``Gbit/s``/``Gb/s``/
``Gbps`` are SI bits). Typos a user makes are refused with a line that says what was read:

* a parameter count below one million (``70`` is seventy parameters: "did you mean 70B?");
* ``1.2gb/s``: a lower-case ``b`` is a bit and a lower-case ``g`` no SI prefix, so the rate is
  ambiguous (gigabits or gigabytes?); written ``1.2GB/s`` (bytes) or ``1.2Gbit/s`` (bits) it reads.

A rate given in bits is a line rate: what a link signals, not what a checkpoint write moves. It is
read as bytes × ``GOODPUT`` (0.9: RoCE/IB framing, headers and protocol overhead of a large
streaming write), and the output says so.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from gdsdoctor.errors import EstimateError
from gdsdoctor.patterns import lazy_compile

Units = Literal["si", "iec"]

GOODPUT = 0.9  # share of a link's line rate a large streaming write moves (RoCE v2 / IB framing, headers)
MIN_PARAMS = 1_000_000  # below this a count is a typo (`--params 70` for 70B), not a model

_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"


def _number(text: str, *, what: str) -> float:
    cleaned = text.strip().replace("_", "")
    if not re.fullmatch(_NUMBER, cleaned):
        raise EstimateError(f"{what}: {text.strip()!r} is not a number")
    value = float(cleaned)
    if not math.isfinite(value):
        raise EstimateError(f"{what}: {text.strip()!r} is not a finite number")
    return value


def _split_quantity(text: str, *, what: str) -> tuple[float, str]:
    match = re.fullmatch(rf"\s*({_NUMBER})\s*(.*?)\s*", text.replace("_", ""))
    if not match:
        raise EstimateError(f"{what}: cannot read {text.strip()!r}")
    value = float(match[1])
    if not math.isfinite(value):
        raise EstimateError(f"{what}: {text.strip()!r} is not a finite number")
    return value, match[2]


def _positive(value: float, text: str, *, what: str) -> float:
    if value <= 0:
        raise EstimateError(f"{what} must be positive: {text.strip()!r}")
    return value


_PARAM_SUFFIX = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


def parse_params(text: str) -> int:
    """Parameter count: ``70B``, ``7e10``, ``1.5T``, ``405b``, ``350M`` (B = billion, not bytes)."""
    value, suffix = _split_quantity(text, what="parameter count")
    scale = _PARAM_SUFFIX.get(suffix.lower())
    if scale is None:
        raise EstimateError(f"parameter count {text.strip()!r}: unknown suffix {suffix!r} (use K, M, B or T)")
    count = round(_positive(value, text, what="parameter count") * scale)
    if count < MIN_PARAMS:
        raise EstimateError(
            f"parameter count {text.strip()!r} is {count:,} parameters, below 1M: did you mean {value:g}B?"
        )
    return count


@dataclass(frozen=True, slots=True)
class Throughput:
    bytes_per_s: float  # what a write moves: a line rate's bytes × GOODPUT
    text: str  # as the user wrote it
    system: Literal["SI", "IEC"]  # what the input's prefix meant
    line_rate_bytes_per_s: float | None = None  # the input was a line rate (bits): its bytes before GOODPUT

    def describe(self) -> str:
        return f"{self.text} ({self.system}, {self.bytes_per_s:.4g} B/s)"


_PREFIX_POWER = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_RATE_UNIT = lazy_compile(
    r"(?P<prefix>[kmgtp]?)(?P<iec>i?)(?P<what>bytes?|bits?|b)(?:/s|/sec|ps)", re.IGNORECASE
)


def parse_throughput(text: str) -> Throughput:
    """``1.2GB/s``, ``1200MB/s`` (SI bytes), ``12GiB/s`` (IEC), ``400Gbit/s``, ``400Gb/s``, ``400Gbps``.

    Case matters only for b/B: ``b`` is a bit, ``B`` a byte (``MBps`` is bytes, ``Mbps`` bits). A rate
    in bits is a line rate and is read × GOODPUT; ``1.2gb/s`` (lower-case prefix and b) is refused.
    """
    value, unit = _split_quantity(text, what="throughput")
    unit = unit.replace(" ", "")
    match = _RATE_UNIT.fullmatch(unit)
    if not unit:
        raise EstimateError(f"throughput {text.strip()!r} has no unit (e.g. 1.2GB/s, 12GiB/s, 400Gbit/s)")
    if not match:
        raise EstimateError(f"throughput {text.strip()!r}: unknown unit {unit!r} (e.g. GB/s, GiB/s, Gbit/s)")
    what, prefix = match["what"], match["prefix"]
    if what == "b" and prefix in ("m", "g", "t", "p"):
        raise EstimateError(
            f"throughput {text.strip()!r} is ambiguous: a lower-case b is a bit ({value:g}{prefix}b/s "
            f"would be {value / 8:g} {prefix.upper()}B/s); write {value:g}{prefix.upper()}B/s for bytes "
            f"or {value:g}{prefix.upper()}bit/s for bits"
        )
    is_bits = what.lower().startswith("bit") or what == "b"
    iec = bool(match["iec"])
    base = 1024 if iec else 1000
    scale = base ** _PREFIX_POWER[prefix.lower()] / (8 if is_bits else 1)
    rate = _positive(value, text, what="throughput") * scale
    system: Literal["SI", "IEC"] = "IEC" if iec else "SI"
    if is_bits:
        return Throughput(rate * GOODPUT, text.strip(), system, line_rate_bytes_per_s=rate)
    return Throughput(rate, text.strip(), system)


_SIZE_UNIT = lazy_compile(r"(?P<prefix>[kmgtp]?)(?P<iec>i?)b?", re.IGNORECASE)


def parse_size(text: str) -> int:
    """A size in bytes: ``4GiB`` (IEC), ``512MB`` (SI), ``1T``, ``65536`` (plain bytes)."""
    value, unit = _split_quantity(text, what="size")
    match = _SIZE_UNIT.fullmatch(unit.replace(" ", ""))
    if not match or unit.endswith("bit"):
        raise EstimateError(f"size {text.strip()!r}: unknown unit {unit!r} (e.g. 512MB, 4GiB)")
    base = 1024 if match["iec"] else 1000
    return round(_positive(value, text, what="size") * base ** _PREFIX_POWER[match["prefix"].lower()])


def bytes_per_s(rate: float, text: str = "") -> Throughput:
    """A throughput already in bytes/s (e.g. measured by ``gdsdoctor bench``)."""
    if not math.isfinite(rate) or rate <= 0:
        raise EstimateError(f"throughput must be positive: {rate!r}")
    return Throughput(rate, text or f"{rate:.4g} B/s", "SI")


_DURATION_UNIT = {
    "ms": 1e-3,
    "s": 1.0,
    "sec": 1.0,
    "secs": 1.0,
    "m": 60.0,
    "min": 60.0,
    "mins": 60.0,
    "h": 3600.0,
    "hr": 3600.0,
    "hrs": 3600.0,
    "d": 86400.0,
    "day": 86400.0,
    "days": 86400.0,
}
_DURATION_PART = lazy_compile(r"(?<!\s)\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)")


def parse_duration(text: str, *, allow_zero: bool = False, what: str = "duration") -> float:
    """Seconds from ``30s``, ``500ms``, ``15min``/``15m``, ``1h``, ``1h30m``, ``2d`` (``0`` if allowed)."""
    stripped = text.strip()
    if allow_zero and re.fullmatch(r"0*(?!0)\.?0*", stripped) and stripped:
        return 0.0
    if stripped.startswith("-"):
        raise EstimateError(f"{what} must not be negative: {stripped!r}")
    total, position = 0.0, 0
    while position < len(stripped):
        match = _DURATION_PART.match(stripped, position)
        if not match or match.end() == position:
            raise EstimateError(f"{what}: cannot read {stripped!r} (e.g. 30s, 500ms, 15min, 1h)")
        unit = match[2].lower()
        if not unit:
            raise EstimateError(f"{what} {stripped!r} has no unit (e.g. 30s, 15min, 1h)")
        if unit not in _DURATION_UNIT:
            raise EstimateError(f"{what} {stripped!r}: unknown unit {match[2]!r} (ms, s, min, h, d)")
        total += float(match[1]) * _DURATION_UNIT[unit]
        position = match.end()
    if not stripped:
        raise EstimateError(f"{what} is empty")
    if total == 0 and not allow_zero:
        raise EstimateError(f"{what} must be positive: {stripped!r}")
    return total


def parse_fraction(text: str, *, what: str = "stall budget") -> float:
    """``2%`` or ``0.02`` → 0.02; must lie strictly between 0 and 1."""
    stripped = text.strip()
    percent = stripped.endswith("%")
    value = _number(stripped.rstrip("%"), what=what)
    if not percent and value >= 1:
        raise EstimateError(f"{what} {stripped!r} is ambiguous: write {value:g}% or a fraction such as 0.02")
    fraction = value / 100 if percent else value
    if not 0 < fraction < 1:
        raise EstimateError(f"{what} must be between 0 and 100%: {stripped!r}")
    return fraction


def parse_count(text: str | int, *, what: str = "GPU count") -> int:
    value = _number(str(text), what=what)
    if value != int(value) or value < 1:
        raise EstimateError(f"{what} must be a whole number ≥ 1: {str(text).strip()!r}")
    return int(value)


# --- output of quantities ---------------------------------------------------------------------

_SI = ((1e15, "PB"), (1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"))
_IEC = ((2**50, "PiB"), (2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))


def format_bytes(size: float, units: Units = "si") -> str:
    for scale, name in _SI if units == "si" else _IEC:
        if abs(size) >= scale:
            return f"{size / scale:.3g} {name}" if size / scale < 100 else f"{size / scale:.0f} {name}"
    return f"{size:.0f} B"


def format_rate(rate: float, units: Units = "si") -> str:
    return format_bytes(rate, units) + "/s"


# --- quantities as a command line takes them (a suggested `gdsdoctor estimate` reads as typed) ----


def params_argument(count: float) -> str:
    """``70B`` for 70,000,000,000 (the largest suffix :func:`parse_params` takes, 6 digits at most)."""
    for suffix, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6)):
        if count >= scale:
            return f"{count / scale:.6g}{suffix}"
    return f"{count:.0f}"


def rate_argument(rate: float) -> str:
    """``1.62GB/s``: the rate as the report prints it (SI, 3 digits), without the space."""
    return format_rate(rate).replace(" ", "")


def fraction_argument(fraction: float) -> str:
    """``2%`` for 0.02."""
    return f"{fraction * 100:.6g}%"


def format_duration(seconds: float) -> str:
    if seconds == 0:
        return "0 s"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds:.0f} s ({seconds / 60:.1f} min)"
    return f"{seconds:.0f} s ({seconds / 3600:.2f} h)"
