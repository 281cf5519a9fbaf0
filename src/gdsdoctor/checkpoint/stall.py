"""The checkpoint stall model: how long a synchronous checkpoint pauses the GPUs, and what it costs.

    T_stall = checkpoint_bytes / B_eff + t_fsync

* ``checkpoint_bytes`` = parameters × bytes saved per parameter, summed over components
  (weights, fp32 master copy, Adam moments, gradients). What is saved varies, which is why
  0.98 TB, 1.12 TB and 1.26 TB are all quoted for "70B with AdamW"; each is a preset here:

  ======================  ======  =====================================================  =========
  preset                  B/param  components                                           70B
  ======================  ======  =====================================================  =========
  bf16-adamw (default)    14      bf16 weights 2 + fp32 master 4 + Adam m 4 + v 4        0.98 TB
  bf16-adamw-bf16grads    16      the above + bf16 grads 2 (ZeRO paper's "16Ψ")          1.12 TB
  fp32-adamw-grads        16      fp32 weights 4 + fp32 grads 4 + Adam m 4 + v 4         1.12 TB
  bf16-adamw-grads        18      bf16-adamw + fp32 grads 4                              1.26 TB
  fp32-adamw              12      fp32 weights 4 + Adam m 4 + v 4                        0.84 TB
  bf16-weights / fp32-weights  2 / 4   weights only (inference export)                  0.14 / 0.28 TB
  ======================  ======  =====================================================  =========

* The checkpoint interval is the wall-clock period between checkpoint starts, so the share of
  wall time lost is ``T_stall / interval`` (the textbook "hourly, about a quarter of the time":
  933 s / 3600 s = 26 %). GPU-hours lost per day = GPUs × 24 h × that share.
* Tiered storage: the scratch tier takes the synchronous write (it sets the stall), then an
  asynchronous flush copies the checkpoint to the archive tier; it must finish in the window
  ``interval − T_stall`` before the next checkpoint starts. The archive tier binds when it does
  not; otherwise the scratch tier binds (it alone sets the stall) and the report gives headroom.
* Units: every input unit says its system (``GB/s`` is SI, 10⁹ B/s; ``GiB/s`` is IEC, 2³⁰ B/s;
  ``Gbit/s``/``Gb/s``/``Gbps`` are SI bits). Output is SI unless ``units="iec"``, and says so.

Entry points: :func:`run` (strings in, as from a CLI) and :func:`compute` (numbers in). Bad input
raises :class:`EstimateError` with a one-line message. :func:`rows` is the single list of
output rows that :func:`to_dict`, :func:`render_text` and :func:`render_markdown` all render.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from gdsdoctor.errors import EstimateError
from gdsdoctor.patterns import lazy_compile

Units = Literal["si", "iec"]

SECONDS_PER_DAY = 86400.0


# --- components and presets --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Component:
    name: str
    bytes_per_param: float
    description: str


_COMPONENTS = {
    c.name: c
    for c in (
        Component("weights_bf16", 2, "bf16 model weights"),
        Component("weights_fp32", 4, "fp32 model weights"),
        Component("master_fp32", 4, "fp32 master weights"),
        Component("adam_m_fp32", 4, "Adam momentum (m), fp32"),
        Component("adam_v_fp32", 4, "Adam variance (v), fp32"),
        Component("grads_bf16", 2, "bf16 gradients"),
        Component("grads_fp32", 4, "fp32 gradients"),
    )
}


def _preset(*names: str) -> tuple[Component, ...]:
    return tuple(_COMPONENTS[name] for name in names)


_ADAMW_MIXED = ("weights_bf16", "master_fp32", "adam_m_fp32", "adam_v_fp32")
PRESETS: dict[str, tuple[Component, ...]] = {
    "bf16-adamw": _preset(*_ADAMW_MIXED),
    "bf16-adamw-bf16grads": _preset(*_ADAMW_MIXED, "grads_bf16"),
    "bf16-adamw-grads": _preset(*_ADAMW_MIXED, "grads_fp32"),
    "fp32-adamw": _preset("weights_fp32", "adam_m_fp32", "adam_v_fp32"),
    "fp32-adamw-grads": _preset("weights_fp32", "grads_fp32", "adam_m_fp32", "adam_v_fp32"),
    "bf16-weights": _preset("weights_bf16"),
    "fp32-weights": _preset("weights_fp32"),
}
DEFAULT_PRESET = "bf16-adamw"  # what DeepSpeed/Megatron save by default: no gradients


def components_for(preset: str | None, overrides: Iterable[str] = ()) -> tuple[Component, ...]:
    """The preset's components with ``name=bytes`` overrides applied (``=0`` drops one)."""
    if preset is not None and preset not in PRESETS:
        raise EstimateError(f"unknown preset {preset!r} (known: {', '.join(PRESETS)})")
    components = {c.name: c for c in PRESETS[preset]} if preset else {}
    for spec in overrides:
        name, value = _parse_override(spec)
        if value == 0:
            components.pop(name, None)
            continue
        known = components.get(name) or _COMPONENTS.get(name)
        components[name] = Component(name, value, known.description if known else "user-specified")
    if not components:
        raise EstimateError("nothing is saved: give a preset or at least one component (name=bytes)")
    return tuple(components.values())


def _parse_override(spec: str) -> tuple[str, float]:
    name, sep, value = spec.partition("=")
    name = name.strip()
    if not sep or not re.fullmatch(r"[A-Za-z][\w-]*", name) or name == "total":
        raise EstimateError(f"component override {spec!r} is not name=bytes (e.g. grads_fp32=4)")
    number = _number(value, what=f"bytes per parameter for {name}")
    if number < 0:
        raise EstimateError(f"bytes per parameter for {name} must not be negative: {value.strip()!r}")
    return name, number


# --- input parsing ------------------------------------------------------------------------------

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
    if count < 1:
        raise EstimateError(f"parameter count must be at least 1: {text.strip()!r}")
    return count


@dataclass(frozen=True, slots=True)
class Throughput:
    bytes_per_s: float
    text: str  # as the user wrote it
    system: Literal["SI", "IEC"]  # what the input's prefix meant

    def describe(self) -> str:
        return f"{self.text} ({self.system}, {self.bytes_per_s:.4g} B/s)"


_PREFIX_POWER = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_RATE_UNIT = lazy_compile(
    r"(?P<prefix>[kmgtp]?)(?P<iec>i?)(?P<what>bytes?|bits?|b)(?:/s|/sec|ps)", re.IGNORECASE
)


def parse_throughput(text: str) -> Throughput:
    """``1.2GB/s``, ``1200MB/s`` (SI bytes), ``12GiB/s`` (IEC), ``400Gbit/s``, ``400Gb/s``, ``400Gbps``.

    Case matters only for b/B: ``b`` is a bit, ``B`` a byte (``MBps`` is bytes, ``Mbps`` bits).
    """
    value, unit = _split_quantity(text, what="throughput")
    unit = unit.replace(" ", "")
    match = _RATE_UNIT.fullmatch(unit)
    if not unit:
        raise EstimateError(f"throughput {text.strip()!r} has no unit (e.g. 1.2GB/s, 12GiB/s, 400Gbit/s)")
    if not match:
        raise EstimateError(f"throughput {text.strip()!r}: unknown unit {unit!r} (e.g. GB/s, GiB/s, Gbit/s)")
    what = match["what"]
    is_bits = what.lower().startswith("bit") or what == "b"
    iec = bool(match["iec"])
    base = 1024 if iec else 1000
    scale = base ** _PREFIX_POWER[match["prefix"].lower()] / (8 if is_bits else 1)
    rate = _positive(value, text, what="throughput") * scale
    return Throughput(rate, text.strip(), "IEC" if iec else "SI")


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
_DURATION_PART = lazy_compile(r"\s*(\d+\.?\d*|\.\d+)\s*([a-zA-Z]*)")


def parse_duration(text: str, *, allow_zero: bool = False, what: str = "duration") -> float:
    """Seconds from ``30s``, ``500ms``, ``15min``/``15m``, ``1h``, ``1h30m``, ``2d`` (``0`` if allowed)."""
    stripped = text.strip()
    if allow_zero and re.fullmatch(r"0*\.?0*", stripped) and stripped:
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


# --- the model ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Inputs:
    params: int
    preset: str | None
    components: tuple[Component, ...]
    throughput: Throughput  # the tier that takes the synchronous write
    fsync_s: float = 0.0
    interval_s: float = 3600.0
    gpus: int = 1
    budget_fraction: float | None = None
    archive: Throughput | None = None


@dataclass(frozen=True, slots=True)
class Budget:
    fraction: float
    max_stall_s: float
    met: bool
    required_bytes_per_s: float | None  # None: fsync alone exceeds the budget


@dataclass(frozen=True, slots=True)
class Tiers:
    flush_s: float  # archive copy time
    window_s: float  # interval − stall: time the flush has before the next checkpoint
    headroom_s: float  # window − flush (negative: the flush does not keep up)
    binding: Literal["scratch", "archive"]
    required_archive_bytes_per_s: float | None  # None when there is no window at all


@dataclass(frozen=True, slots=True)
class Estimate:
    inputs: Inputs
    component_bytes: tuple[tuple[Component, int], ...]
    total_bytes: int
    bytes_per_param: float
    write_s: float
    stall_s: float
    wall_fraction: float  # of wall time lost to stalls, capped at 1
    stall_exceeds_interval: bool
    gpu_hours_lost_per_day: float
    budget: Budget | None
    tiers: Tiers | None
    notes: tuple[str, ...]


def compute(inputs: Inputs) -> Estimate:
    """The model itself, on validated numbers (see :func:`run` for strings)."""
    component_bytes = tuple((c, round(inputs.params * c.bytes_per_param)) for c in inputs.components)
    total = sum(size for _, size in component_bytes)
    if total <= 0:
        raise EstimateError("the checkpoint has no bytes: every component is zero")
    write_s = total / inputs.throughput.bytes_per_s
    stall_s = write_s + inputs.fsync_s
    exceeds = stall_s >= inputs.interval_s
    fraction = min(1.0, stall_s / inputs.interval_s)
    notes = [
        f"Checkpoint = {inputs.params:,} parameters × {total / inputs.params:g} bytes/parameter "
        f"({_preset_phrase(inputs)}).",
        "Share of wall time lost = stall / interval (the period between checkpoint starts).",
    ]
    if exceeds:
        notes.append(
            "The stall is longer than the interval: checkpoints would never stop (share capped at 100%)."
        )
    return Estimate(
        inputs=inputs,
        component_bytes=component_bytes,
        total_bytes=total,
        bytes_per_param=total / inputs.params,
        write_s=write_s,
        stall_s=stall_s,
        wall_fraction=fraction,
        stall_exceeds_interval=exceeds,
        gpu_hours_lost_per_day=inputs.gpus * 24.0 * fraction,
        budget=_budget(inputs, total, stall_s),
        tiers=_tiers(inputs, total, stall_s),
        notes=tuple(notes),
    )


def _preset_phrase(inputs: Inputs) -> str:
    parts = " + ".join(f"{c.name} {c.bytes_per_param:g}" for c in inputs.components)
    return f"preset {inputs.preset}: {parts}" if inputs.preset else parts


def _budget(inputs: Inputs, total: int, stall_s: float) -> Budget | None:
    if inputs.budget_fraction is None:
        return None
    max_stall = inputs.budget_fraction * inputs.interval_s
    write_window = max_stall - inputs.fsync_s
    required = total / write_window if write_window > 0 else None
    return Budget(inputs.budget_fraction, max_stall, stall_s <= max_stall, required)


def _tiers(inputs: Inputs, total: int, stall_s: float) -> Tiers | None:
    if inputs.archive is None:
        return None
    flush = total / inputs.archive.bytes_per_s
    window = inputs.interval_s - stall_s
    headroom = window - flush
    return Tiers(
        flush_s=flush,
        window_s=window,
        headroom_s=headroom,
        binding="archive" if headroom < 0 else "scratch",
        required_archive_bytes_per_s=total / window if window > 0 else None,
    )


def run(
    params: str,
    throughput: str | float,
    *,
    preset: str | None = DEFAULT_PRESET,
    components: Sequence[str] = (),
    fsync: str = "0s",
    interval: str = "1h",
    gpus: str | int = 1,
    budget: str | None = None,
    archive_throughput: str | float | None = None,
) -> Estimate:
    """Parse CLI-style strings and compute. A float throughput is taken as bytes/s (e.g. measured)."""
    inputs = Inputs(
        params=parse_params(params),
        preset=preset,
        components=components_for(preset, components),
        throughput=_throughput(throughput),
        fsync_s=parse_duration(fsync, allow_zero=True, what="fsync time"),
        interval_s=parse_duration(interval, what="checkpoint interval"),
        gpus=parse_count(gpus),
        budget_fraction=None if budget is None else parse_fraction(budget),
        archive=None if archive_throughput is None else _throughput(archive_throughput),
    )
    return compute(inputs)


def _throughput(value: str | float) -> Throughput:
    return parse_throughput(value) if isinstance(value, str) else bytes_per_s(float(value))


# --- output: one list of rows, three renderers ------------------------------------------------


@dataclass(frozen=True, slots=True)
class Row:
    section: str  # group heading key (also the JSON object the value goes in)
    key: str  # JSON key: snake_case with the unit in the name
    label: str  # human label
    value: float | int | str | bool | None  # machine value, in bytes, seconds, fractions
    text: str  # human rendering


SECTION_TITLES = {
    "inputs": "Inputs",
    "size": "Checkpoint size",
    "stall": "Stall per checkpoint",
    "cost": "Cost",
    "budget": "Stall budget",
    "tiers": "Tiered storage",
}

_SI = ((1e15, "PB"), (1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"))
_IEC = ((2**50, "PiB"), (2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))


def format_bytes(size: float, units: Units = "si") -> str:
    for scale, name in _SI if units == "si" else _IEC:
        if abs(size) >= scale:
            return f"{size / scale:.3g} {name}" if size / scale < 100 else f"{size / scale:.0f} {name}"
    return f"{size:.0f} B"


def format_rate(rate: float, units: Units = "si") -> str:
    return format_bytes(rate, units) + "/s"


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


def _seconds(section: str, key: str, label: str, seconds: float) -> Row:
    return Row(section, key, label, seconds, format_duration(seconds))


def _input_rate(section: str, key: str, label: str, rate: Throughput, units: Units) -> Row:
    text = f"{format_rate(rate.bytes_per_s, units)} (input {rate.text}, {rate.system})"
    return Row(section, key, label, rate.bytes_per_s, text)


def rows(estimate: Estimate, units: Units = "si") -> list[Row]:
    """Everything the report says, once; every renderer walks this list."""
    inputs, lost = estimate.inputs, estimate.wall_fraction
    per_param = estimate.bytes_per_param
    out = [
        Row("inputs", "params", "parameters", inputs.params, f"{inputs.params:,} ({inputs.params / 1e9:g}B)"),
        Row("inputs", "preset", "preset", inputs.preset, inputs.preset or "(explicit components)"),
        _input_rate("inputs", "throughput_bytes_per_s", "write throughput", inputs.throughput, units),
        _seconds("inputs", "fsync_s", "fsync / metadata time", inputs.fsync_s),
        _seconds("inputs", "interval_s", "checkpoint interval", inputs.interval_s),
        Row("inputs", "gpus", "GPUs stalled", inputs.gpus, str(inputs.gpus)),
    ]
    out += [
        Row("size", f"{c.name}_bytes", c.description, size,
            f"{format_bytes(size, units)} ({c.bytes_per_param:g} B/param)")
        for c, size in estimate.component_bytes
    ]  # fmt: skip
    out += [
        Row("size", "bytes_per_param", "bytes per parameter", per_param, f"{per_param:g}"),
        Row("size", "total_bytes", "total checkpoint", estimate.total_bytes,
            format_bytes(estimate.total_bytes, units)),
        _seconds("stall", "write_s", "write time", estimate.write_s),
        _seconds("stall", "stall_s", "stall (write + fsync)", estimate.stall_s),
        Row("cost", "wall_time_lost_fraction", "share of wall time lost", lost,
            f"{lost:.1%}" + (" (stall ≥ interval)" if estimate.stall_exceeds_interval else "")),
        Row("cost", "gpu_hours_lost_per_day", "GPU-hours lost per day", estimate.gpu_hours_lost_per_day,
            f"{estimate.gpu_hours_lost_per_day:,.1f} (of {inputs.gpus * 24:,})"),
    ]  # fmt: skip
    return out + _budget_rows(estimate.budget, units) + _tier_rows(estimate, units)


def _budget_rows(budget: Budget | None, units: Units) -> list[Row]:
    if budget is None:
        return []
    required = budget.required_bytes_per_s
    return [
        Row("budget", "fraction", "budget (share of wall time)", budget.fraction, f"{budget.fraction:.2%}"),
        _seconds("budget", "max_stall_s", "longest stall allowed", budget.max_stall_s),
        Row("budget", "met", "budget met", budget.met, "yes" if budget.met else "NO"),
        Row("budget", "required_bytes_per_s", "throughput needed", required,
            format_rate(required, units) if required else "impossible: fsync time alone exceeds the budget"),
    ]  # fmt: skip


def _tier_rows(estimate: Estimate, units: Units) -> list[Row]:
    tiers, archive = estimate.tiers, estimate.inputs.archive
    if tiers is None or archive is None:
        return []
    required, headroom = tiers.required_archive_bytes_per_s, tiers.headroom_s
    return [
        _input_rate("tiers", "archive_bytes_per_s", "archive throughput", archive, units),
        _seconds("tiers", "flush_s", "async flush to archive", tiers.flush_s),
        Row("tiers", "window_s", "window before next checkpoint", tiers.window_s,
            format_duration(max(0.0, tiers.window_s))),
        Row("tiers", "headroom_s", "flush headroom", headroom,
            ("" if headroom >= 0 else "−") + format_duration(abs(headroom))),
        Row("tiers", "binding", "binding tier", tiers.binding,
            "scratch (sets the stall; archive keeps up)" if tiers.binding == "scratch"
            else "archive (flush does not finish before the next checkpoint)"),
        Row("tiers", "required_archive_bytes_per_s", "archive throughput needed", required,
            format_rate(required, units) if required else "impossible: no window left"),
    ]  # fmt: skip


def _units_note(units: Units) -> str:
    return "Units: SI (1 GB = 10^9 bytes)." if units == "si" else "Units: IEC (1 GiB = 2^30 bytes)."


def to_dict(estimate: Estimate, units: Units = "si") -> dict[str, object]:
    """JSON-able: ``{section: {key: value}}`` in bytes, seconds and fractions, plus notes."""
    document: dict[str, object] = {"units": units.upper()}
    for row in rows(estimate, units):
        section = document.setdefault(row.section, {})
        assert isinstance(section, dict)
        section[row.key] = row.value
    document["notes"] = [*estimate.notes, _units_note(units)]
    return document


def render_text(estimate: Estimate, units: Units = "si") -> str:
    all_rows = rows(estimate, units)
    width = max(len(row.label) for row in all_rows)
    lines: list[str] = []
    for section, section_rows in _grouped(all_rows):
        lines += ["", SECTION_TITLES[section]] if lines else [SECTION_TITLES[section]]
        lines += [f"  {row.label:<{width}}  {row.text}" for row in section_rows]
    lines += ["", *estimate.notes, _units_note(units)]
    return "\n".join(lines) + "\n"


def render_markdown(estimate: Estimate, units: Units = "si") -> str:
    lines: list[str] = []
    for section, section_rows in _grouped(rows(estimate, units)):
        lines += [f"### {SECTION_TITLES[section]}", "", "| | |", "|---|---|"]
        lines += [f"| {row.label} | {row.text.replace('|', '/')} |" for row in section_rows]
        lines.append("")
    lines += [f"- {note}" for note in (*estimate.notes, _units_note(units))]
    return "\n".join(lines) + "\n"


def _grouped(all_rows: list[Row]) -> list[tuple[str, list[Row]]]:
    groups: dict[str, list[Row]] = {}
    for row in all_rows:
        groups.setdefault(row.section, []).append(row)
    return list(groups.items())
