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
  933 s / 3600 s = 26 %). GPU-hours lost per day = GPUs × 24 h × that share. When the interval is
  read as training time between saves ("every hour of training") the share is
  ``T_stall / (interval + T_stall)`` (933 / 4533 = 20.6 %): both are printed; the budget uses the
  first.
* ``t_fsync`` (the close/fsync/metadata tail) defaults to 0, which is optimistic on a shared or
  parallel filesystem: the output says so unless ``--fsync`` is given.
* Several nodes and asynchronous saves: :mod:`gdsdoctor.checkpoint.async_save` (the storage rate is
  the smallest of the aggregate, nodes × per-node and the target's ceiling; an async save stalls
  for the device-to-host copy and must persist within the interval and fit in host memory).
* Tiered storage: the scratch tier takes the synchronous write (it sets the stall), then an
  asynchronous flush copies the checkpoint to the archive tier; it must finish in the window
  ``interval − T_stall`` before the next checkpoint starts. The archive tier binds when it does
  not; otherwise the scratch tier binds (it alone sets the stall) and the report gives headroom.
* Units: every input unit says its system (``GB/s`` is SI, 10⁹ B/s; ``GiB/s`` is IEC, 2³⁰ B/s;
  ``Gbit/s``/``Gb/s``/``Gbps`` are SI bits, a line rate read × 0.9 goodput; see
  :mod:`gdsdoctor.checkpoint.units`). Output is SI unless ``units="iec"``, and says so.

Entry points: :func:`run` (strings in, as from a CLI) and :func:`compute` (numbers in). Bad input
raises :class:`EstimateError` with a one-line message. What is printed is rendered a layer above,
in :mod:`gdsdoctor.checkpoint.estimate_report` (the model knows nothing of its renderers).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from gdsdoctor.checkpoint import async_save
from gdsdoctor.checkpoint.async_save import AsyncSave, Layout, Storage
from gdsdoctor.checkpoint.presets import COMPONENTS, DEFAULT_PRESET, PRESET_PARTS
from gdsdoctor.checkpoint.units import (
    GOODPUT,
    Throughput,
    Units,
    _number,
    bytes_per_s,
    format_bytes,
    format_duration,
    format_rate,
    parse_count,
    parse_duration,
    parse_fraction,
    parse_params,
    parse_size,
    parse_throughput,
    rate_argument,
)
from gdsdoctor.errors import EstimateError

__all__ = [
    "DEFAULT_PRESET",
    "PRESETS",
    "Estimate",
    "EstimateError",
    "Inputs",
    "Throughput",
    "Units",
    "bytes_per_s",
    "components_for",
    "compute",
    "format_bytes",
    "format_duration",
    "format_rate",
    "parse_count",
    "parse_duration",
    "parse_fraction",
    "parse_params",
    "parse_size",
    "parse_throughput",
    "rate_argument",
    "run",
]  # fmt: skip

SECONDS_PER_DAY = 86400.0


# --- components and presets --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Component:
    name: str
    bytes_per_param: float
    description: str


_COMPONENTS = {name: Component(name, size, text) for name, (size, text) in COMPONENTS.items()}
PRESETS: dict[str, tuple[Component, ...]] = {
    preset: tuple(_COMPONENTS[name] for name in parts) for preset, parts in PRESET_PARTS.items()
}


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


# --- the model ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Inputs:
    params: int
    preset: str | None
    components: tuple[Component, ...]
    throughput: Throughput  # the rate the whole checkpoint is written at (the tier of the synchronous write)
    fsync_s: float = 0.0
    interval_s: float = 3600.0
    gpus: int = 1
    budget_fraction: float | None = None
    archive: Throughput | None = None
    fsync_given: bool = True  # False: the 0 s default (optimistic on shared filesystems)
    layout: Layout | None = None  # several nodes (--nodes, --gpus-per-node)
    storage: Storage | None = None  # how the rate was found (aggregate, per-node × nodes, target ceiling)
    rates: tuple[Throughput, ...] = ()  # every rate as given (for the line-rate note)
    asynchronous: AsyncOptions | None = None


@dataclass(frozen=True, slots=True)
class AsyncOptions:
    d2h: Throughput  # per GPU
    host_copy: Throughput | None  # per node
    buffers: int
    host_mem_bytes: int | None  # per node


@dataclass(frozen=True, slots=True)
class Budget:
    fraction: float
    max_stall_s: float
    met: bool
    required_bytes_per_s: float | None  # None: fsync alone exceeds the budget
    applies_to: Literal["synchronous write", "D2H copy"] = "synchronous write"


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
    wall_fraction: float  # of wall time lost to stalls, capped at 1 (stall / interval between starts)
    stall_exceeds_interval: bool
    gpu_hours_lost_per_day: float
    budget: Budget | None
    tiers: Tiers | None
    notes: tuple[str, ...]
    wall_fraction_of_training: float = 0.0  # stall / (interval + stall): the interval read as training time
    async_save: AsyncSave | None = None

    @property
    def ok(self) -> bool:
        """The budget (when given) is met and an asynchronous save keeps up: exit 0, else 1."""
        budget_met = self.budget is None or self.budget.met
        return budget_met and (self.async_save is None or async_save.keeps_up(self.async_save))


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
    saved = _async(inputs, total)
    notes = _notes(inputs, total, exceeds, saved)
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
        budget=_budget(inputs, total, stall_s, saved),
        tiers=_tiers(inputs, total, stall_s),
        notes=tuple(notes),
        wall_fraction_of_training=stall_s / (inputs.interval_s + stall_s),
        async_save=saved,
    )


def _async(inputs: Inputs, total: int) -> AsyncSave | None:
    options = inputs.asynchronous
    if options is None:
        return None
    return async_save.compute(
        total,
        inputs.layout or async_save.layout(inputs.gpus, None, None),
        storage_bytes_per_s=inputs.throughput.bytes_per_s,
        fsync_s=inputs.fsync_s,
        interval_s=inputs.interval_s,
        d2h_bytes_per_s=options.d2h.bytes_per_s,
        host_copy_bytes_per_s=options.host_copy.bytes_per_s if options.host_copy else None,
        buffers=options.buffers,
        host_mem_bytes=options.host_mem_bytes,
    )


def _notes(inputs: Inputs, total: int, exceeds: bool, saved: AsyncSave | None) -> list[str]:
    notes = [
        f"Checkpoint = {inputs.params:,} parameters × {total / inputs.params:g} bytes/parameter "
        f"({_preset_phrase(inputs)}).",
        "Share of wall time lost = stall / interval (the period between checkpoint starts); if the interval "
        "is training time between saves, the share is stall / (interval + stall). The budget uses the first.",
    ]
    if exceeds:
        notes.append(
            "The stall is longer than the interval: checkpoints would never stop (share capped at 100%)."
        )
    lines = [rate for rate in (inputs.throughput, *inputs.rates) if rate.line_rate_bytes_per_s]
    for rate in dict.fromkeys(lines):
        notes.append(
            f"{rate.text} is a line rate: read as {format_rate(rate.bytes_per_s)} of checkpoint writes "
            f"(× {GOODPUT:g} goodput: framing, headers and protocol of a large streaming write)."
        )
    if not inputs.fsync_given:
        notes.append(
            "fsync / metadata time 0 s is optimistic: on a shared or parallel filesystem (NFS, Lustre, GPFS, "
            "WekaFS, BeeGFS) closing, fsyncing and committing the metadata of a save of thousands of files "
            "takes seconds to tens of seconds; give --fsync."
        )
    if saved is not None:
        notes.append(
            "Asynchronous save: the GPUs stall for the device-to-host copy of their shard; a background "
            "process then writes it from host memory (not through GDS) and must finish before the next save. "
            "'Stall per checkpoint' and 'Cost' are the same checkpoint saved synchronously, for comparison."
        )
    return notes


def _preset_phrase(inputs: Inputs) -> str:
    parts = " + ".join(f"{c.name} {c.bytes_per_param:g}" for c in inputs.components)
    return f"preset {inputs.preset}: {parts}" if inputs.preset else parts


def _budget(inputs: Inputs, total: int, stall_s: float, saved: AsyncSave | None) -> Budget | None:
    if inputs.budget_fraction is None:
        return None
    max_stall = inputs.budget_fraction * inputs.interval_s
    if saved is not None:  # the GPUs wait for the copy; the copy rate per node is what must rise
        required = saved.shard_per_node_bytes / max_stall
        return Budget(inputs.budget_fraction, max_stall, saved.stall_s <= max_stall, required, "D2H copy")
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
    throughput: str | float | None,
    *,
    preset: str | None = DEFAULT_PRESET,
    components: Sequence[str] = (),
    fsync: str | None = None,
    interval: str = "1h",
    gpus: str | int | None = None,
    budget: str | None = None,
    archive_throughput: str | float | None = None,
    nodes: str | int | None = None,
    gpus_per_node: str | int | None = None,
    per_node_throughput: str | None = None,
    target_ceiling: str | None = None,
    asynchronous: bool = False,
    d2h_rate: str | None = None,
    host_copy_limit: str | None = None,
    buffers: str | int | None = None,
    host_mem: str | None = None,
) -> Estimate:
    """Parse CLI-style strings and compute. A float throughput is taken as bytes/s (e.g. measured)."""
    count = parse_params(params)  # first: a typo in the count is the first thing to say
    several = nodes is not None or per_node_throughput is not None or target_ceiling is not None
    lay = async_save.layout(
        None if gpus is None else parse_count(gpus),
        None if nodes is None else parse_count(nodes, what="node count"),
        None if gpus_per_node is None else parse_count(gpus_per_node, what="GPUs per node"),
    )
    aggregate = None if throughput is None else _throughput(throughput)
    per_node = None if per_node_throughput is None else parse_throughput(per_node_throughput)
    ceiling = None if target_ceiling is None else parse_throughput(target_ceiling)
    found = async_save.storage(
        aggregate.bytes_per_s if aggregate else None,
        per_node.bytes_per_s if per_node else None,
        ceiling.bytes_per_s if ceiling else None,
        lay.nodes,
    )
    rate = aggregate if found.binding == "aggregate" and aggregate else bytes_per_s(found.bytes_per_s)
    inputs = Inputs(
        params=count,
        preset=preset,
        components=components_for(preset, components),
        throughput=rate,
        fsync_s=0.0 if fsync is None else parse_duration(fsync, allow_zero=True, what="fsync time"),
        interval_s=parse_duration(interval, what="checkpoint interval"),
        gpus=lay.gpus,
        budget_fraction=None if budget is None else parse_fraction(budget),
        archive=None if archive_throughput is None else _throughput(archive_throughput),
        fsync_given=fsync is not None,
        layout=lay if several or asynchronous else None,
        storage=found if several else None,
        rates=tuple(r for r in (aggregate, per_node, ceiling) if r is not None),
        asynchronous=_async_options(d2h_rate, host_copy_limit, buffers, host_mem) if asynchronous else None,
    )
    return compute(inputs)


def _async_options(
    d2h: str | None, limit: str | None, buffers: str | int | None, mem: str | None
) -> AsyncOptions:
    default_d2h = bytes_per_s(async_save.DEFAULT_D2H_BYTES_PER_S, "25GB/s (default)")
    default_limit = bytes_per_s(async_save.DEFAULT_HOST_COPY_BYTES_PER_S, "200GB/s (default)")
    unlimited = limit is not None and limit.strip().lower() in ("none", "0", "off")
    return AsyncOptions(
        d2h=parse_throughput(d2h) if d2h else default_d2h,
        host_copy=None if unlimited else (parse_throughput(limit) if limit else default_limit),
        buffers=async_save.DEFAULT_BUFFERS
        if buffers is None
        else parse_count(buffers, what="staging buffers"),
        host_mem_bytes=None if mem is None else parse_size(mem),
    )


def _throughput(value: str | float) -> Throughput:
    return parse_throughput(value) if isinstance(value, str) else bytes_per_s(float(value))
