"""What `estimate` prints: one list of rows (:func:`rows`) that the JSON, text and markdown renderers walk.

Each row has a section (its heading, and the JSON object its value goes in), a snake_case key with the
unit in its name, a label, the machine value (bytes, seconds, fractions) and the text a person reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from gdsdoctor.checkpoint.stall import Budget, Estimate, Inputs  # the model, a layer below
from gdsdoctor.checkpoint.units import Throughput, Units, format_bytes, format_duration, format_rate
from gdsdoctor.textwidth import prose_width, table, terminal_width, wrap


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
    "cluster": "Nodes and storage",
    "async": "Asynchronous save",
}


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
        Row(
            "inputs",
            "fsync_s",
            "fsync / metadata time",
            inputs.fsync_s,
            format_duration(inputs.fsync_s) + ("" if inputs.fsync_given else " (default: optimistic)"),
        ),
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
        Row("cost", "wall_time_lost_fraction", "share of wall time lost (budget's)", lost,
            f"{lost:.1%}" + (" (stall ≥ interval)" if estimate.stall_exceeds_interval else "")),
        Row("cost", "wall_time_lost_fraction_of_training", "share lost, interval as training time",
            estimate.wall_fraction_of_training,
            f"{estimate.wall_fraction_of_training:.1%} (stall / (interval + stall))"),
        Row("cost", "gpu_hours_lost_per_day", "GPU-hours lost per day", estimate.gpu_hours_lost_per_day,
            f"{estimate.gpu_hours_lost_per_day:,.1f} (of {inputs.gpus * 24:,})"),
    ]  # fmt: skip
    return (
        out
        + _cluster_rows(inputs, units)
        + _async_rows(estimate, units)
        + _budget_rows(estimate.budget, units)
        + _tier_rows(estimate, units)
    )


def _cluster_rows(inputs: Inputs, units: Units) -> list[Row]:
    lay, found = inputs.layout, inputs.storage
    if lay is None:
        return []
    out = [
        Row("cluster", "nodes", "nodes", lay.nodes, str(lay.nodes)),
        Row("cluster", "gpus_per_node", "GPUs per node", lay.gpus_per_node, str(lay.gpus_per_node)),
    ]
    if found is None:
        return out
    if found.per_node_bytes_per_s is not None:
        out.append(Row("cluster", "per_node_bytes_per_s", "write rate per node", found.per_node_bytes_per_s,
                       f"{format_rate(found.per_node_bytes_per_s, units)} × {lay.nodes} nodes"))  # fmt: skip
    if found.ceiling_bytes_per_s is not None:
        out.append(Row("cluster", "target_ceiling_bytes_per_s", "target ceiling", found.ceiling_bytes_per_s,
                       format_rate(found.ceiling_bytes_per_s, units)))  # fmt: skip
    out.append(Row("cluster", "storage_bytes_per_s", "checkpoint write rate", found.bytes_per_s,
                   f"{format_rate(found.bytes_per_s, units)} (bound by: {found.binding})"))  # fmt: skip
    return out


def _async_rows(estimate: Estimate, units: Units) -> list[Row]:
    saved = estimate.async_save
    if saved is None:
        return []
    copy = f"{format_rate(saved.node_copy_bytes_per_s, units)} per node (bound by: {saved.copy_binding})"
    ahead = saved.headroom_s >= 0
    fits_text = (
        f"{'yes' if ahead else 'NO'}, headroom {'' if ahead else '−'}{format_duration(abs(saved.headroom_s))}"
    )
    needed = saved.host_mem_needed_bytes
    fits = {None: "not given (--host-mem)", True: "yes", False: "NO"}[saved.host_mem_fits]
    host = format_bytes(saved.host_mem_bytes, units) if saved.host_mem_bytes is not None else "not given"
    return [
        Row("async", "shard_per_gpu_bytes", "shard per GPU", saved.shard_per_gpu_bytes,
            format_bytes(saved.shard_per_gpu_bytes, units)),
        Row("async", "shard_per_node_bytes", "shard per node", saved.shard_per_node_bytes,
            format_bytes(saved.shard_per_node_bytes, units)),
        Row("async", "d2h_bytes_per_s", "D2H copy rate per GPU", saved.d2h_bytes_per_s,
            format_rate(saved.d2h_bytes_per_s, units)),
        Row("async", "node_copy_bytes_per_s", "host copy rate", saved.node_copy_bytes_per_s, copy),
        _seconds("async", "stall_s", "GPU stall (D2H copy)", saved.stall_s),
        Row("async", "wall_time_lost_fraction", "share of wall time lost (budget's)",
            min(1.0, saved.stall_s / estimate.inputs.interval_s),
            f"{min(1.0, saved.stall_s / estimate.inputs.interval_s):.2%}"),
        _seconds("async", "persist_s", "persist to storage (+ fsync)", saved.persist_s),
        Row("async", "window_s", "window before next save", saved.window_s,
            format_duration(max(0.0, saved.window_s))),
        Row("async", "persist_fits", "persist fits the interval", saved.headroom_s >= 0, fits_text),
        Row("async", "host_mem_needed_bytes", "host memory per node", needed,
            f"{format_bytes(needed, units)} (shard per node × {saved.buffers} buffers)"),
        Row("async", "host_mem_bytes", "node memory", saved.host_mem_bytes, host),
        Row("async", "host_mem_fits", "staging fits in memory", saved.host_mem_fits, fits),
    ]  # fmt: skip


def _budget_rows(budget: Budget | None, units: Units) -> list[Row]:
    if budget is None:
        return []
    required = budget.required_bytes_per_s
    needed_label = (
        "host copy rate needed per node" if budget.applies_to == "D2H copy" else "throughput needed"
    )
    return [
        Row("budget", "fraction", "budget (share of wall time)", budget.fraction, f"{budget.fraction:.2%}"),
        Row("budget", "applies_to", "budget applies to", budget.applies_to,
            f"the {budget.applies_to} stall, as stall / interval between checkpoint starts"),
        _seconds("budget", "max_stall_s", "longest stall allowed", budget.max_stall_s),
        Row("budget", "met", "budget met", budget.met, "yes" if budget.met else "NO"),
        Row("budget", "required_bytes_per_s", needed_label, required,
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
    document["status"] = {"exit_code": 0 if estimate.ok else 1, "says": status_line(estimate, units)}
    return document


def render_text(estimate: Estimate, units: Units = "si", width: int | None = None) -> str:
    """Sections of aligned label/value rows (one alignment for all; a list where the terminal is
    too narrow for it), then the notes wrapped between words at the prose width."""
    all_rows = rows(estimate, units)
    width = prose_width(width or terminal_width())  # the values are words; a log line is not among them
    label_width = max(len(row.label) for row in all_rows)
    lines: list[str] = []
    for section, section_rows in _grouped(all_rows):
        lines += ["", SECTION_TITLES[section]] if lines else [SECTION_TITLES[section]]
        cells = [(row.label.ljust(label_width), row.text) for row in section_rows]
        lines += [f"  {line}" for line in table(cells, width - 2)]
    lines.append("")
    for note in (*estimate.notes, _units_note(units)):
        lines += wrap(note, width)
    return "\n".join(lines) + "\n"


def render_markdown(estimate: Estimate, units: Units = "si") -> str:
    lines: list[str] = []
    for section, section_rows in _grouped(rows(estimate, units)):
        lines += [f"### {SECTION_TITLES[section]}", "", "| | |", "|---|---|"]
        lines += [f"| {row.label} | {row.text.replace('|', '/')} |" for row in section_rows]
        lines.append("")
    lines += [f"- {note}" for note in (*estimate.notes, _units_note(units))]
    return "\n".join(lines) + "\n"


def status_line(estimate: Estimate, units: Units = "si") -> str:
    """The last line: the exit code and why, so that an exit 1 in a script or CI log says which
    limit was missed (the budget, the asynchronous persist's window, the staging memory)."""
    missed = []
    budget, saved = estimate.budget, estimate.async_save
    if budget is not None and not budget.met:
        needed = budget.required_bytes_per_s
        missed.append(
            f"the {budget.applies_to} stalls {estimate.wall_fraction:.1%} of wall time, over the "
            f"{budget.fraction:.2%} budget ("
            + (f"{format_rate(needed, units)} needed" if needed else "fsync alone exceeds it")
            + ")"
        )
    if saved is not None and saved.headroom_s < 0:
        missed.append(
            f"the asynchronous persist takes {format_duration(saved.persist_s)}, longer than the "
            f"{format_duration(saved.window_s)} before the next save"
        )
    if saved is not None and saved.host_mem_fits is False:
        missed.append(
            f"the staging needs {format_bytes(saved.host_mem_needed_bytes, units)} a node, more than "
            f"--host-mem {format_bytes(saved.host_mem_bytes or 0, units)}"
        )
    if missed:
        return "Status: exit 1: " + "; ".join(missed)
    stalled = f"Status: exit 0: {estimate.wall_fraction:.1%} of wall time stalled"
    if budget is None:
        return f"{stalled}; no --budget given to judge it"
    return f"{stalled}, within the {budget.fraction:.2%} budget"


def _grouped(all_rows: list[Row]) -> list[tuple[str, list[Row]]]:
    groups: dict[str, list[Row]] = {}
    for row in all_rows:
        groups.setdefault(row.section, []).append(row)
    return list(groups.items())
