"""What limited a write phase (pure): each limiter looks at the samples and events of the phase's
window and says, with a time, why the checkpoint was no faster.

A device slower than its siblings, a path lost or failed over, a controller reset, kernel I/O
errors, GDS counters flat while bytes flow (compat fallback), queues saturated, RDMA errors or a
link down, throughput flat at a known line rate, writes going through the page cache.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable
from typing import Any

from gdsdoctor.checkpoint.phases import clock, rate_text, size_text
from gdsdoctor.checkpoint.records import RDMA_ERROR_COUNTERS

EVENT_MARGIN_S = 3.0  # an event this close before a phase, or after its end, belongs to it
RESET_KINDS = {"nvme_reset"}
PATH_KINDS = {
    "nvme_ana",
    "nvmeof_keepalive",
    "nvmeof_reconnect",
    "nvmeof_transport_error",
    "capacity_to_zero",
    "udev_remove",
}
FAILURE_KINDS = {
    "blk_io_error",
    "backing_store_full",
    "fs_error",
    "fs_shutdown",
    "nvme_timeout",
    "nvme_status_error",
    "nvme_abort",
    "hung_task",
    "pcie_aer",
}
SLOW_SIBLING_RATIO = 0.5
SLOW_SIBLING_MIN_S = 2.0
SATURATED_SHARE = 0.5  # of the phase's samples with writes in flight at the queue depth
LINE_RATE_BAND = (0.90, 1.05)
FLAT_SPREAD = 0.10  # coefficient of variation of the phase's rates
PAGE_CACHE_SHARE = 0.20  # dirty + writeback growth, as a share of the phase's bytes (writers unseen)
PAGE_CACHE_MIN_BYTES = 64 * 2**20

Window = dict[str, Any]  # {"phase", "samples", "after", "events", "devices", "static"}


def window(
    phase: dict[str, Any],
    samples: list[dict[str, Any]],
    events: list[dict[str, Any]],
    resolved: dict[str, Any],
    static: dict[str, Any],
) -> Window:
    """The phase with what happened during it (events from a little before to a little after)."""
    inside = [s for s in samples if phase["start"] <= s["t"] <= phase["end"]]
    after = next((s for s in samples if s["t"] > phase["end"]), None)  # counts taken during the phase
    near = [e for e in events if phase["start"] - EVENT_MARGIN_S <= e["t"] <= phase["end"] + EVENT_MARGIN_S]
    devices = {
        d for d in [resolved.get("top"), *resolved.get("below", []), *resolved.get("controllers", [])] if d
    }
    return {
        "phase": phase,
        "samples": inside,
        "after": after,
        "events": near,
        "devices": devices,
        "resolved": resolved,
        "static": static,
    }


def limiters(win: Window) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for check in CHECKS:
        found.extend(check(win))
    return sorted(found, key=lambda limiter: limiter["at"])


def _limiter(kind: str, at: float, line: int, says: str, **more: Any) -> dict[str, Any]:
    return {"kind": kind, "at": at, "says": f"at {clock(at)} {says}", "line": line, **more}


def on_device(event: dict[str, Any], devices: set[str]) -> bool:
    """The event names one of the phase's devices (a partition's name holds its disk's)."""
    device = event.get("device") or ""
    return any(device == d or device.startswith(d + "p") for d in devices)


def event_phrase(event: dict[str, Any]) -> str:
    device, kind = event.get("device") or "a device", event["kind"]
    if kind == "nvme_reset":
        return f"{device} reset its controller"
    if kind == "udev_remove":
        return f"{device} was removed (udev)"
    return f"{device} logged {kind.replace('_', ' ')}: {event.get('message', '')[:160]}"


def _events(win: Window, kinds: set[str], kind: str) -> list[dict[str, Any]]:
    return [
        _limiter(
            kind, e["t"], int(e.get("line", 0)), event_phrase(e), event_kind=e["kind"], device=e.get("device")
        )
        for e in win["events"]
        if e["kind"] in kinds and on_device(e, win["devices"])
    ]


def controller_reset(win: Window) -> list[dict[str, Any]]:
    return _events(win, RESET_KINDS, "controller_reset") + _state_changes(
        win, "ctrl", "live", "controller_reset"
    )


def path_lost(win: Window) -> list[dict[str, Any]]:
    return _events(win, PATH_KINDS, "path_lost") + _state_changes(win, "ana", "optimized", "path_lost")


def kernel_errors(win: Window) -> list[dict[str, Any]]:
    return _events(win, FAILURE_KINDS, "kernel_errors")


def _state_changes(win: Window, key: str, good: str, kind: str) -> list[dict[str, Any]]:
    """The first sample at which a controller (``ctrl``) or path (``ana``) left its good state."""
    found, seen = [], set()
    for sample in win["samples"]:
        for name, state in (sample.get(key) or {}).items():
            if state != good and name not in seen:
                seen.add(name)
                what = "controller" if key == "ctrl" else "path"
                found.append(
                    _limiter(
                        kind,
                        sample["t"],
                        int(sample.get("line", 0)),
                        f"{what} {name} was {state}",
                        device=name,
                    )
                )
    return found


def slow_sibling(win: Window) -> list[dict[str, Any]]:
    """A member of the stack (dm/md member, multipath path) writing at under half the median of its
    siblings for SLOW_SIBLING_MIN_S in a row: a drive that holds the whole stripe back."""
    members = win["resolved"].get("members", [])
    found: list[dict[str, Any]] = []
    runs: dict[str, list[tuple[float, float, float, float, int]]] = {m: [] for m in members}
    for before, after in itertools.pairwise(win["samples"]):
        rates = {m: r for m in members if (r := _rate_between(before, after, m)) is not None}
        for name in members:
            others = [r for n, r in rates.items() if n != name]
            median = statistics.median(others) if others else 0.0
            if name in rates and median > 0 and rates[name] < SLOW_SIBLING_RATIO * median:
                runs[name].append((before["t"], after["t"], rates[name], median, int(after.get("line", 0))))
                continue
            found += _slow_run(name, runs[name])
            runs[name] = []
    for name in members:
        found += _slow_run(name, runs[name])
    return found


def _rate_between(before: dict[str, Any], after: dict[str, Any], name: str) -> float | None:
    old, new = (before.get("disks") or {}).get(name), (after.get("disks") or {}).get(name)
    span = after["t"] - before["t"]
    if not isinstance(old, dict) or not isinstance(new, dict) or span <= 0:
        return None
    return max(0, int(new.get("write_bytes", 0)) - int(old.get("write_bytes", 0))) / span


def _slow_run(name: str, run: list[tuple[float, float, float, float, int]]) -> list[dict[str, Any]]:
    if not run or run[-1][1] - run[0][0] < SLOW_SIBLING_MIN_S:
        return []
    lasted = run[-1][1] - run[0][0]
    rate = statistics.mean(r[2] for r in run)
    others = statistics.mean(r[3] for r in run)
    says = f"{name} wrote {rate_text(rate)} for {lasted:g} s while its siblings wrote {rate_text(others)}"
    return [_limiter("slow_sibling", run[0][0], run[0][4], says, device=name)]


def _delta(samples: list[dict[str, Any]], get: Callable[[dict[str, Any]], Any]) -> int | None:
    values = [v for s in samples if isinstance(v := get(s), int)]
    return values[-1] - values[0] if len(values) >= 2 else None


def gds_flat(win: Window) -> list[dict[str, Any]]:
    """nvidia-fs counts no write while the device writes: the I/O went around GDS (compat mode)."""
    written = _delta(win["samples"], lambda s: (s.get("nvfs") or {}).get("write_bytes"))
    ops = _delta(win["samples"], lambda s: (s.get("nvfs") or {}).get("writes_ops"))
    if (written is None and ops is None) or (written or 0) > 0 or (ops or 0) > 0:
        return []
    phase = win["phase"]
    says = (
        f"nvidia-fs counted no GDS write while {size_text(phase['bytes'])} were written: the checkpoint "
        "went through the CPU (compat mode or a POSIX fallback)"
    )
    return [_limiter("gds_compat", phase["start"], phase["line"], says)]


def queue_saturated(win: Window) -> list[dict[str, Any]]:
    found = []
    for name, depth in (win["static"].get("queue_depth") or {}).items():
        inflight = [
            s["disks"][name].get("inflight_w") for s in win["samples"] if name in (s.get("disks") or {})
        ]
        inflight = [v for v in inflight if isinstance(v, int)]
        full = [v for v in inflight if v >= depth]
        if len(inflight) >= 2 and len(full) >= SATURATED_SHARE * len(inflight):
            says = f"{name} had {max(full)} writes in flight, at its queue depth ({depth}), most of the phase"
            found.append(
                _limiter("queue_saturated", win["phase"]["start"], win["phase"]["line"], says, device=name)
            )
    return found


def rdma_errors(win: Window) -> list[dict[str, Any]]:
    found = []
    ports = {p for s in win["samples"] for p in (s.get("rdma") or {})}
    for port in sorted(ports):
        for counter in RDMA_ERROR_COUNTERS:
            grew = _delta(
                win["samples"], lambda s, p=port, c=counter: ((s.get("rdma") or {}).get(p) or {}).get(c)
            )
            if grew:
                at = _first_change(win["samples"], port, counter)
                kind = "rdma_link_down" if counter == "link_downed" else "rdma_errors"
                found.append(
                    _limiter(
                        kind,
                        at,
                        win["phase"]["line"],
                        f"RDMA port {port} {counter} rose by {grew}",
                        device=port,
                    )
                )
    return found


def _first_change(samples: list[dict[str, Any]], port: str, counter: str) -> float:
    first = None
    for sample in samples:
        value = ((sample.get("rdma") or {}).get(port) or {}).get(counter)
        if first is None:
            first = value
        elif value != first:
            return float(sample["t"])
    return float(samples[0]["t"])


def line_rate(win: Window, rates: list[float] | None = None) -> list[dict[str, Any]]:
    """Throughput flat at a known line rate: the link, not the storage, set the pace."""
    phase = win["phase"]
    rates = rates if rates is not None else phase.get("rates", [])
    if len(rates) < 3 or statistics.mean(rates) <= 0:
        return []
    spread = statistics.pstdev(rates) / statistics.mean(rates)
    found = []
    for name, limit in (win["static"].get("line_rates") or {}).items():
        low, high = LINE_RATE_BAND
        if spread <= FLAT_SPREAD and low * limit <= phase["bytes_per_s"] <= high * limit:
            says = (
                f"write throughput was flat at {rate_text(phase['bytes_per_s'])}, the line rate of {name} "
                f"({rate_text(limit)})"
            )
            found.append(_limiter("line_rate", phase["start"], phase["line"], says, link=name))
    return found


def page_cache(win: Window) -> list[dict[str, Any]]:
    """Buffered writes, not direct I/O, as :func:`io_mode` tells them."""
    mode = io_mode(win)
    if mode["mode"] != "buffered":
        return []
    phase = win["phase"]
    # ``writers``: what was seen of them (their files said buffered; unseen: the host's counter).
    seen = {"writers": "buffered", "device": "device", "host": "unseen"}
    return [_limiter("page_cache", phase["start"], phase["line"], mode["says"], writers=seen[mode["by"]])]


def io_mode(win: Window) -> dict[str, Any]:
    """How the phase's writes reached the device: ``direct``, ``buffered``, ``mixed`` or
    ``unknown``, ``by`` which evidence, and a sentence. The best evidence first: the writers' own
    files (``open_writes``: open for writing on the filesystem, with or without O_DIRECT); then
    the device's own page-cache counters (``bdi``: pages dirtied on this device alone); last the
    host's Dirty + Writeback, every device's, which says so, and which cannot tell at all when a
    device under the filesystem writes its backing file through the page cache (a loop device
    without direct I/O: its backing file's pages grow with every write, direct or not)."""
    phase = win["phase"]
    written = size_text(phase["bytes"])
    # A walk of the open files reports with the sample after the one that started it.
    counted = [*win["samples"], *([win["after"]] if win.get("after") else [])]
    opened = [o for s in counted if isinstance(o := s.get("open_writes"), dict)]
    direct = max((o.get("direct", 0) for o in opened), default=0)
    buffered = max((o.get("buffered", 0) for o in opened), default=0)
    host = _growth(win["samples"], "mem", ("dirty_bytes", "writeback_bytes"))
    grown = f"; dirty and writeback pages (the whole host's) grew by {size_text(host)}" if host else ""
    if buffered or direct:
        mode = "buffered" if not direct else "direct" if not buffered else "mixed"
        how = {"buffered": "without O_DIRECT", "direct": "with O_DIRECT", "mixed": "some with O_DIRECT"}
        says = (
            f"{buffered + direct} file(s) on the checkpoint filesystem were open for writing {how[mode]} "
            f"while {written} were written"
        )
        tail = {"buffered": f"{grown}: buffered I/O through the page cache", "direct": ": direct I/O"}
        return {"mode": mode, "by": "writers", "says": says + tail.get(mode, "")}
    device = phase_device(win)
    own = _growth(counted, "bdi", ("dirtied_bytes",))
    if own is not None:
        if own >= PAGE_CACHE_SHARE * phase["bytes"]:
            says = (
                f"{size_text(own)} of the {written} written were dirtied in {device}'s own page cache: "
                "buffered I/O through the page cache, not direct I/O"
            )
            return {"mode": "buffered", "by": "device", "says": says}
        says = f"{written} reached {device} with {size_text(own)} through its own page cache: direct I/O"
        return {"mode": "direct", "by": "device", "says": says}
    cached_below = [d for d in win["static"].get("buffered_below", []) if d in win["devices"]]
    if cached_below:
        says = (
            f"{', '.join(cached_below)} writes its backing file through the page cache: the host's "
            "Dirty and Writeback grow with every write, direct or not, and cannot tell"
        )
        return {"mode": "unknown", "by": "host", "says": says}
    if host is None or host < max(PAGE_CACHE_MIN_BYTES, PAGE_CACHE_SHARE * phase["bytes"]):
        return {"mode": "unknown", "by": None, "says": ""}
    says = (
        f"dirty and writeback pages grew by {size_text(host)} while {written} were "
        "written: buffered I/O through the page cache, not direct I/O (Dirty + Writeback count the "
        "whole host, every device; the writers' files were not seen)"
    )
    return {"mode": "buffered", "by": "host", "says": says}


def phase_device(win: Window) -> str:
    return str(win["resolved"].get("top") or "the device")


def _growth(samples: list[dict[str, Any]], section: str, keys: tuple[str, ...]) -> int | None:
    """How far the sum of ``keys`` of a section rose above its first value over the samples."""
    values = [sum(m.get(k, 0) for k in keys) for s in samples if isinstance(m := s.get(section), dict) and m]
    return max(values) - values[0] if len(values) >= 2 else None


CHECKS: tuple[Callable[[Window], list[dict[str, Any]]], ...] = (
    controller_reset,
    path_lost,
    kernel_errors,
    slow_sibling,
    gds_flat,
    queue_saturated,
    rdma_errors,
    line_rate,
    page_cache,
)
