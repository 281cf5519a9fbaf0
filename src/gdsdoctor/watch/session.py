"""The watch loop: sample every tick, drain the event followers, show what happens, stop on
--duration, --until-idle or SIGINT/SIGTERM, then judge the timeline with the rules engine.

The analysis of the end is the same pure parse `analyze` runs on a recording: the timeline
is kept as the artifact ``watch/timeline.jsonl`` of a capture (with a normal collect when
recording), so the watch's report and `analyze FILE`'s agree.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from gdsdoctor import signals
from gdsdoctor.checkpoint import phases
from gdsdoctor.checkpoint.records import ARTIFACT
from gdsdoctor.errors import UserError
from gdsdoctor.model import Artifact, ArtifactStatus
from gdsdoctor.probes import watch_timeline
from gdsdoctor.watch import devices, sampler, timeline
from gdsdoctor.watch.events import KmsgFollower, UdevFollower

Emit = Callable[[dict[str, Any], "State"], None]


class Options(NamedTuple):
    path: str
    every_s: float = 1.0
    duration_s: float | None = None
    until_idle: bool = False
    record: Path | None = None
    job: dict[str, Any] | None = None
    host_root: Path = Path("/")
    rules_dirs: tuple[Path, ...] = ()


class State:
    """What the live view and the JSON stream see: the timeline so far (as its lines: a day at 1 s
    is ~35 MB of text, where the parsed samples would be several times that), the phases, the
    last two samples and the events."""

    def __init__(
        self, head: dict[str, Any], until_idle: bool = False, duration_s: float | None = None
    ) -> None:
        self.head = head
        self.until_idle, self.duration_s = until_idle, duration_s  # how it ends, for the view
        self.lines = [timeline.to_line(head)]
        self.samples: collections.deque[dict[str, Any]] = collections.deque(maxlen=2)
        self.events: collections.deque[dict[str, Any]] = collections.deque(maxlen=50)
        self.phases: list[dict[str, Any]] = []
        self.started: float | None = None  # time of the first sample
        self.reported = 0  # phases already emitted as ended
        self.top = head["devices"].get("top")
        self.finder = phases.PhaseFinder()
        self._last: phases.Mark | None = None

    def add_sample(self, sample: dict[str, Any]) -> None:
        sample["line"] = len(self.lines) + 1
        self.lines.append(timeline.to_line({k: v for k, v in sample.items() if k != "line"}))
        self.samples.append(sample)
        self.started = sample["t"] if self.started is None else self.started
        current = phases.mark(sample, self.top)
        if (interval := phases.between(self._last, current, sample["line"])) is not None:
            self.finder.add(interval)
            self.phases = self.finder.phases()
        self._last = current

    def add_event(self, event: dict[str, Any]) -> None:
        event["line"] = len(self.lines) + 1
        self.lines.append(timeline.to_line({k: v for k, v in event.items() if k != "line"}))
        self.events.append(event)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def start(options: Options) -> tuple[State, sampler.Sampler, list[Any]]:
    if not os.path.exists(options.host_root / options.path.lstrip("/")):
        raise UserError(f"--path {options.path}: no such file or directory")
    resolved = devices.resolve(options.path, options.host_root)
    followers: list[Any] = []
    notes = list(resolved["notes"])
    if options.host_root == Path("/"):
        followers = [KmsgFollower(), UdevFollower()]
        notes += [f.unavailable for f in followers if f.unavailable]
    else:
        notes.append(
            "kernel log and udev events are followed only on the host itself (not under --host-root)"
        )
    if (note := sampler.bdi_note(resolved, options.host_root)) is not None:
        notes.append(note)
    if os.geteuid() != 0:
        notes.append(
            "not root: some counters (nvidia-fs, /dev/kmsg) may be unreadable; they are listed as such"
        )
    head = timeline.header(
        resolved,
        sampler.static_facts(resolved, options.host_root),
        options.every_s,
        time.time(),
        options.job,
        notes,
    )
    state = State(head, options.until_idle, options.duration_s)
    return state, sampler.Sampler(resolved, options.host_root), followers


@contextlib.contextmanager
def stop_on_signals() -> Iterator[list[int]]:
    """SIGINT, SIGTERM and SIGHUP (a closed ssh session) end the watch at the next tick, with the
    report and the recording so far. The handler only
    appends to a list: setting a ``threading.Event`` there could deadlock, the signal landing while
    this same thread holds the event's lock inside ``wait``."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    for sig in previous:
        signal.signal(sig, lambda signum, _frame: received.append(signum))
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _wait_until(deadline: float, stop: threading.Event, received: list[int]) -> None:
    """Sleep until ``deadline`` (monotonic), or until told to stop by ``stop`` or a signal."""
    while not received and not stop.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            return
        stop.wait(min(left, signals.POLL_S))  # a signal ends the wait


def watch(options: Options, emit: Emit, stop: threading.Event | None = None) -> tuple[State, str]:
    """Sample until told to stop; returns the state and why it ended."""
    state, reader, followers = start(options)
    emit(state.head, state)
    stop = stop or threading.Event()
    began = time.monotonic()
    reason = "interrupted"
    with stop_on_signals() as received:
        tick = began
        while not stop.is_set() and not received:
            sample = reader.sample()
            state.add_sample(sample)
            emit(sample, state)
            for follower in followers:
                for event in follower.drain():
                    state.add_event(event)
                    emit(event, state)
            _emit_ended_phases(state, emit)
            if options.duration_s is not None and time.monotonic() - began >= options.duration_s:
                reason = "duration"
                break
            idle = phases.idle_for(state.phases, state.started or sample["t"], sample["t"])
            if options.until_idle and idle >= phases.IDLE_END_S:
                reason = "idle"
                break
            # The next tick; one missed (the host stalled us) is skipped, not caught up in a burst;
            # never past the duration (`--every 1h --duration 2s` ends after 2 s, with a last sample).
            tick = max(tick + options.every_s, time.monotonic())
            if options.duration_s is not None:
                tick = min(tick, began + options.duration_s)
            _wait_until(tick, stop, received)
    for follower in followers:
        with contextlib.suppress(Exception):
            getattr(follower, "close", lambda: None)()
    _emit_ended_phases(state, emit, final=True)
    unread = [f"{source}: {why}" for source, why in reader.unreadable.items()]
    end = {"type": "end", "t": round(time.time(), 3), "reason": reason, "unreadable": unread}
    state.lines.append(timeline.to_line(end))
    emit(end, state)
    return state, reason


def _emit_ended_phases(state: State, emit: Emit, final: bool = False) -> None:
    """Each phase once it has ended, analysed as the report will analyse it (limiters, events,
    collapses with what caused them): the timeline so far is parsed again, once a checkpoint.
    When the watch ends (``final``), the phases not yet told are told as they stand: a short write
    just before Ctrl-C or the end of --duration has not had its 3 quiet seconds, and is still a
    phase (``ongoing``)."""
    ended = len(state.phases) if final else sum(1 for p in state.phases if not p["ongoing"])
    if state.reported >= ended:
        return
    analysed = watch_timeline.parse(state.text(), ARTIFACT)["phases"]
    for phase in analysed[state.reported : ended]:
        emit({"type": "phase", **phase}, state)
    state.reported = ended


def timeline_artifact(state: State) -> Artifact:
    return Artifact(ARTIFACT, ArtifactStatus.OK, state.text().encode(), source="gdsdoctor watch")


def run(options: Options, emit: Emit, stop: threading.Event | None = None) -> tuple[State, Any]:
    """Watch, then judge: the state and the analysis (``pipeline.Analysis``) of a normal collect
    taken when the watch ends (its kernel log then holds what happened during the watch) plus the
    timeline, the analysis `check` would give with the watch's findings added. With ``record``
    the two are written as a bundle, which `gdsdoctor analyze` replays to the same findings."""
    from gdsdoctor.capture.live import LiveCapture
    from gdsdoctor.facts.section import section_from
    from gdsdoctor.pipeline import analyze_capture

    state, _reason = watch(options, emit, stop)
    live = LiveCapture(options.host_root, options.path, parse=section_from)
    capture = live.finish()
    if options.job:  # as `check --params` does: the job's other causes (space for it) are judged too
        capture.options["job"] = options.job
    capture.add("watch", timeline_artifact(state))
    if options.record is not None:
        from gdsdoctor.capture.bundle import write_bundle

        try:
            write_bundle(capture, options.record)
        except OSError as error:
            raise UserError(f"--record {options.record}: {error.strerror or error}") from None
    return state, analyze_capture(capture, options.rules_dirs, live.parsed)
