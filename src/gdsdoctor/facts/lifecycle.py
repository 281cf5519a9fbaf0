"""Events and state: each kernel event judged against what came after it (the *lifecycle*).

A kernel event is evidence about an object at a time, not about the node now. Each storage,
NVMe and PCIe event is attached to its object:

- ``filesystem`` — a filesystem instance on a device (``loop0``; a JBD2 journal ``loop0-8`` is its
  partition's), from its mount to its unmount: ``fs_shutdown``, ``fs_error``;
- ``block`` — a block device as attached: ``blk_io_error``, ``nvme_status_error``,
  ``backing_store_full``, ``scsi_sense``, a ``capacity_to_zero`` of a device that is not an NVMe
  namespace;
- ``nvme`` — an NVMe controller (``nvme0``; a namespace or path names its controller): timeouts,
  aborts, resets, reconnects, Connects the target refused, keep-alive and transport errors, ANA
  path failures, a namespace dropping to capacity 0;
- ``pcie`` — a PCI function (its address): AER errors;
- ``netfs`` — a network or parallel filesystem's server as its client names it: an NFS server
  (``nfs_client``), a Lustre target and the LNet NID it is reached at (``lustre_client``), a
  BeeGFS node (``beegfs_client``).

and judged against what the log and the captured state say about that object afterwards
(the markers are the section's ``lifecycle`` list, see probes/dmesg_kinds.py):

- a later mount (``Mounting V5 Filesystem``, ``mounted filesystem``, ``re-mounted … r/w``) or
  unmount of the device ends the filesystem instance; a device attached anew (``detected
  capacity change from 0 to N``, ``Attached SCSI disk``, a removable one's ``scsi_attach``)
  ends both the device and its filesystem; a loop device the block listing no longer shows is
  detached;
- an NVMe controller with its I/O queues again (``N/M/K default/read/poll queues``, ``creating
  N I/O queues``), ``Successfully reconnected``, a path ``ANA group N: optimized``, or a new
  controller for the same subsystem NQN has recovered; one whose sysfs state is not ``live``
  now has not, whatever the log says; a PCI function with ``AER: device recovery
  successful`` has recovered; an NFS server that answers again (``nfs: server X OK``) or a
  Lustre target whose connection was restored (``Connection restored to T (at NID)``) has
  recovered (both the target and its NID);
- ``--since`` (``capture.options["since"]``): every event before it.

Such an event is *history*: moved from ``dmesg.events`` to ``dmesg.history`` with ``history``
(``reason``, ``object``, ``marker``: the line that ended it; the summary and kinds are counted
again without it, the whole log's kept in ``whole_log``), so rules — which read ``dmesg.events`` and the
derived facts built from it — judge the node as it is now. An event after the recovery is
current again, and an object that recovered ``FLAP_RECOVERIES`` times within ``FLAP_WINDOW_S``
is flapping: all its events stay current (repetition is evidence). Events of no object (an Xid,
a kernel BUG) are judged by ``--since`` alone.

Every event (current or history) gets its age (``age_s``, ``at``: ISO wall time, ``clock``):
from the capture's clock when it was recorded (``capture.host`` ``uptime_s``/``captured_at``:
a live check, a bundle), else before the log's own last line (a pasted log), else from wall
stamps (``dmesg -T``, syslog: these drift after a suspend, and ``clock`` says so). The section
gets ``clock`` (what ages are measured from) and ``objects`` (per object: events now and in
history, recoveries, the newest event's age, events in the last hour).

Longer than 600 lines because the objects, their markers, the recovery's judgement and the
error lines judged with their objects are one model: split, each part would need the others'
markers and state.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Any

from gdsdoctor.facts.event_clock import Clock, epoch_of, iso
from gdsdoctor.patterns import lazy_compile

FLAP_RECOVERIES = 3  # recoveries of one object within the window: it is flapping, not recovered
FLAP_WINDOW_S = 3600.0
RECENT_WINDOW_S = 3600.0  # "N in the last hour"
# A controller or function that came back is recovered only once it has been seen well for this
# long: an I/O issued right after a reset times out only after nvme_core.io_timeout (30 s) and an
# admin command after ADMIN_TIMEOUT (60 s, drivers/nvme/host/nvme.h), so a log that ends sooner
# after the marker cannot show whether the reset held.
SETTLE_S = 60.0
SETTLED_OBJECTS = frozenset(("nvme", "pcie"))  # whose recovery must hold SETTLE_S to count
FS_KINDS = frozenset(("fs_shutdown", "fs_error"))
BLOCK_KINDS = frozenset(("blk_io_error", "nvme_status_error", "backing_store_full", "scsi_sense"))
NVME_KINDS = frozenset(
    ("nvme_timeout", "nvme_abort", "nvme_reset", "nvmeof_reconnect", "nvmeof_keepalive",
     "nvmeof_transport_error", "nvme_ana", "nvmeof_connect_refused")
)  # fmt: skip
NETFS_KINDS = frozenset(("nfs_client", "lustre_client", "beegfs_client"))
LIVE_ANA_STATES = frozenset(("optimized", "non-optimized"))
_JOURNAL_SUFFIX = lazy_compile(r"^(.*\d)-\d+$")  # "loop0-8": the journal of loop0
_NVME_NAME = lazy_compile(r"^nvme(?P<subsys>\d+)(?:c(?P<ctrl>\d+))?(?:n\d+(?:p\d+)?)?$")
_NAMESPACE = lazy_compile(r"^nvme\d+(?:c\d+)?n\d+(?:p\d+)?$")
_LOOP = lazy_compile(r"^(?P<loop>loop\d+)(?:p\d+)?$")
_NQN = lazy_compile(r'NQN[:=]? "?(?P<nqn>nqn\.[^",\s]+)')
# a Lustre client's import of a target: "fsname-OST0001-osc-ffff88…" is target "fsname-OST0001"'s
_LUSTRE_IMPORT = lazy_compile(
    r"^(?P<target>[\w.-]{1,120}?)-(?:osc|mdc|lwp)-(?:[0-9a-fA-F]{1,16}|MDT[0-9a-fA-F]{4})$"
)


# ---------------------------------------------------------------------------------------------
# Objects and markers
# ---------------------------------------------------------------------------------------------


def controller_of(device: str) -> str | None:
    """The NVMe controller a device name is or lies on: ``nvme0n1p2`` → ``nvme0``; a multipath
    path ``nvme0c1n1`` is controller ``nvme1``'s."""
    m = _NVME_NAME.match(device)
    if not m:
        return None
    return f"nvme{m['ctrl']}" if m["ctrl"] is not None else f"nvme{m['subsys']}"


def netfs_names(item: dict[str, Any]) -> list[str]:
    """The names a network filesystem event or marker gives its server: the host or LNet NID
    first (every Lustre recovery line names it: "Connection restored to T (at NID)"), then the
    Lustre target (named, or read from the client's import name: an eviction names no NID)."""
    details = _details(item)
    names = []
    target = details.get("target")
    if not target and isinstance(details.get("client"), str):
        m = _LUSTRE_IMPORT.match(details["client"])
        target = m["target"] if m else None
    for name in (details.get("server"), target):
        if isinstance(name, str) and name.strip() and name.strip() not in names:
            names.append(name.strip())
    return names


def object_of(event: dict[str, Any]) -> tuple[str, str] | None:
    """The object an event is about, as (type, name); None when it names none."""
    kind, device = event.get("kind"), event.get("device")
    if kind in NETFS_KINDS:
        names = netfs_names(event)
        return ("netfs", names[0]) if names else None
    if not isinstance(device, str) or not device:
        return None
    if kind in FS_KINDS:
        return "filesystem", _JOURNAL_SUFFIX.sub(r"\1", device)
    if kind == "nvme_ana" and str(_details(event).get("state", "")).lower() in LIVE_ANA_STATES:
        return None  # a path coming back: a marker, not a failure
    if kind in NVME_KINDS or (kind == "capacity_to_zero" and _NAMESPACE.match(device)):
        controller = controller_of(device)
        return ("nvme", controller) if controller else None
    if kind in BLOCK_KINDS or kind == "capacity_to_zero":
        return "block", device
    if kind == "pcie_aer":
        return "pcie", device
    return None


def owner_of(obj: tuple[str, str]) -> tuple[str, str]:
    """The object whose recovery ends ``obj``'s events: an NVMe namespace's block errors (``I/O
    error, dev nvme0n1``, a status error on it) are its controller's incident, and end with the
    controller's recovery, not before; any other object is its own."""
    if obj[0] == "block" and _NAMESPACE.match(obj[1]):
        controller = controller_of(obj[1])
        return ("nvme", controller) if controller else obj
    return obj


def _details(event: dict[str, Any]) -> dict[str, Any]:
    details = event.get("details")
    return details if isinstance(details, dict) else {}


def _line(event: dict[str, Any]) -> int:
    src = event.get("src")
    line = src.get("line") if isinstance(src, dict) else None
    return line if isinstance(line, int) else 0


class _Marker:
    """A line that ends or recovers objects: which ones, and how to say it."""

    __slots__ = ("event", "line", "objects", "position", "recovers", "says")

    def __init__(
        self, event: dict[str, Any], objects: list[tuple[str, str]], says: str, recovers: bool
    ) -> None:
        self.event, self.objects, self.says, self.recovers = event, objects, says, recovers
        self.line = _line(event)
        self.position = 0  # in the log's markers, in line order (set by _Markers)


class _Markers:
    """The log's markers in line order, and each object's markers found by the object: every
    event asks which markers end its object, and a scan of all markers for each event grew as
    events × markers (a 100k-line log: 3.2 s of 3.9 s judging; docs/performance.md)."""

    __slots__ = ("_by_object", "all")

    def __init__(self, markers: list[_Marker]) -> None:
        self.all = markers
        self._by_object: dict[tuple[str, str], list[_Marker]] = {}
        for position, marker in enumerate(markers):
            marker.position = position
            for obj in dict.fromkeys(marker.objects):  # a marker listing an object twice counts once
                self._by_object.setdefault(obj, []).append(marker)

    def of(self, obj: tuple[str, str]) -> list[_Marker]:
        """The markers that end or recover ``obj``, in line order."""
        return self._by_object.get(obj, [])


def _markers(section: dict[str, Any], nqns: dict[str, str]) -> list[_Marker]:
    """The lifecycle markers of the log, in line order, with the objects each ends."""
    found: list[_Marker] = []
    by_nqn: dict[str, list[str]] = {}  # the controllers of each subsystem, in the order nqns has them
    for controller, name in nqns.items():
        by_nqn.setdefault(name, []).append(controller)
    for marker in _dicts(section.get("lifecycle")):
        device, kind = str(marker.get("device") or ""), marker.get("kind")
        if not device:
            continue
        if kind == "fs_mounted":
            found.append(
                _Marker(marker, [("filesystem", device)], "before the current mount: mounted", False)
            )
        elif kind == "fs_unmounted":
            found.append(_Marker(marker, [("filesystem", device)], "the filesystem was unmounted", False))
        elif kind == "block_attached":
            ends = [("block", device), ("filesystem", device)]
            found.append(_Marker(marker, ends, f"{device} was attached anew", False))
        elif kind == "nvme_ready":
            nqn = _details(marker).get("nqn")
            same = [("nvme", c) for c in by_nqn.get(nqn, []) if c != device] if isinstance(nqn, str) else []
            found.append(
                _Marker(
                    marker, [("nvme", device), *same], "the controller came back with its I/O queues", True
                )
            )
        elif kind == "pcie_recovered":
            found.append(_Marker(marker, [("pcie", device)], "AER reported the device recovered", True))
    for marker in _dicts(section.get("lifecycle")):  # a network filesystem's server answers again
        if marker.get("kind") == "netfs_recovered" and (names := netfs_names(marker)):
            objects = [("netfs", name) for name in names]
            found.append(_Marker(marker, objects, f"{names[0]} answered again", True))
    for event in _dicts(section.get("events")):  # what the log already counts as events
        device = str(event.get("device") or "")
        if event.get("kind") == "scsi_attach" and device.startswith("sd"):  # a removable disk attached
            ends = [("block", device), ("filesystem", device)]
            found.append(_Marker(event, ends, f"{device} was attached anew", False))
            continue
        controller = controller_of(device) if device else None
        if not controller:
            continue
        if event.get("kind") == "nvmeof_reconnected":
            found.append(_Marker(event, [("nvme", controller)], "the controller reconnected", True))
        elif (
            event.get("kind") == "nvme_ana"
            and str(_details(event).get("state", "")).lower() in LIVE_ANA_STATES
        ):
            found.append(
                _Marker(event, [("nvme", controller)], "the path became live again (ANA optimized)", True)
            )
    return sorted(found, key=lambda m: m.line)


def _nqns(section: dict[str, Any]) -> dict[str, str]:
    """Controller → subsystem NQN, as the log names them (``new ctrl: NQN``, ``Removing ctrl: NQN``)."""
    found: dict[str, str] = {}
    for item in [*_dicts(section.get("lifecycle")), *_dicts(section.get("events"))]:
        device = controller_of(str(item.get("device") or ""))
        m = _NQN.search(str(item.get("message") or ""))
        if device and m:
            found[device] = m["nqn"]
    return found


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


# ---------------------------------------------------------------------------------------------
# State captured with the log
# ---------------------------------------------------------------------------------------------


class _State:
    """What the capture says about objects now: loop devices attached, controllers' states."""

    def __init__(self, facts: dict[str, Any]) -> None:
        lsblk = facts.get("lsblk") if isinstance(facts.get("lsblk"), dict) else {}
        by_name = lsblk.get("by_name") if lsblk.get("status") == "ok" else None
        self.block_names = set(by_name) if isinstance(by_name, dict) else None
        nvme = facts.get("nvme_sysfs") if isinstance(facts.get("nvme_sysfs"), dict) else {}
        self.controllers: dict[str, str] | None = None
        if nvme.get("status") == "ok":
            self.controllers = {
                str(c.get("name")): str(c.get("state") or "") for c in _dicts(nvme.get("controllers"))
            }

    def gone(self, obj: tuple[str, str]) -> str | None:
        """Why the object no longer exists now, or None. Only loop devices count: a disk or a
        controller that vanished may have died, and its errors are then the news."""
        kind, name = obj
        loop = _LOOP.match(name)  # loop0, or its partition loop0p1
        if kind in ("block", "filesystem") and loop and self.block_names is not None:
            attached = loop["loop"] in self.block_names
            return None if attached else f"{loop['loop']} is not attached now (no block listing shows it)"
        return None

    def live(self, obj: tuple[str, str]) -> bool:
        """Whether the capture shows the controller live now."""
        return obj[0] == "nvme" and bool(self.controllers) and (self.controllers or {}).get(obj[1]) == "live"

    def not_recovered(self, obj: tuple[str, str]) -> str | None:
        """Why the object is not well now whatever the log says, or None."""
        if obj[0] != "nvme" or self.controllers is None or not self.controllers:
            return None
        state = self.controllers.get(obj[1])
        if state is None:
            return None
        return None if state == "live" else f"controller {obj[1]} is {state!r} now"


# ---------------------------------------------------------------------------------------------
# The judgement
# ---------------------------------------------------------------------------------------------


def judge(facts: dict[str, Any], clock: dict[str, Any], since: dict[str, Any] | None) -> None:
    """Split ``facts["dmesg"]``'s events into the current ones and ``history`` (a new section in
    ``facts``; the parsed one is left as it was), and give every event its age. A section that is
    not ok is left as it is."""
    parsed = facts.get("dmesg")
    if not isinstance(parsed, dict) or parsed.get("status") != "ok":
        return
    # a new section of new event records: the parsed one may be shared (a live check's probe
    # threads parsed it, and a second analysis of the same capture must judge it afresh)
    section = facts["dmesg"] = dict(parsed)
    events = [dict(e) for e in _dicts(parsed.get("events"))]
    section["events"] = events
    timer = Clock(section, clock)
    for event in events:
        age, wall = timer.age(event)
        event["age_s"] = None if age is None else round(age, 3)
        event["at"] = iso(wall)
    state = _State(facts)
    markers = _Markers(_markers(section, _nqns(section)))
    endings = _Endings(markers, state, timer)
    verdicts = _lifecycle_verdicts(events, endings)
    _since_verdicts(events, verdicts, since, timer, clock)
    current, history = [], []
    for event in events:
        verdict = verdicts.get(id(event))
        if verdict is None:
            current.append(event)
        else:
            history.append({**event, "history": verdict})
    section["events"] = current
    section["history"] = history
    _judge_error_lines(section, parsed, history, since, timer, clock, endings)
    section["clock"] = {**timer.describe(), "since": since["given"] if since else None}
    section["objects"] = _objects(events, verdicts, markers)
    if history:
        section["whole_log"] = {key: section.get(key) for key in ("summary", "kinds", "current_boot_kinds")}
        _recount(section, history)


def _lifecycle_verdicts(events: list[dict[str, Any]], endings: _Endings) -> dict[int, dict[str, Any]]:
    verdicts: dict[int, dict[str, Any]] = {}
    markers, state, timer = endings.markers, endings.state, endings.timer
    flapping = _flapping(events, markers, timer)
    failing_again = _failing_again(events, markers)
    for event in events:
        obj = object_of(event)
        if obj is None:
            continue
        owner = owner_of(obj)
        if owner in flapping or state.not_recovered(owner):
            continue
        if _repeats(event, failing_again.get(owner, False)):
            continue  # the recovery did not hold: the failures before it are evidence again
        later = _ending_marker(event, obj, endings)
        if later is not None:
            marker_age, _ = timer.age(later.event)
            when = f" {timer.ago(marker_age)}" if marker_age is not None else " since"
            verdicts[id(event)] = {
                "reason": f"{later.says}{when}",
                "object": f"{owner[0]} {owner[1]}",
                "marker": later.event.get("src"),
            }
            continue
        gone = state.gone(obj)
        if gone:
            verdicts[id(event)] = {"reason": gone, "object": f"{obj[0]} {obj[1]}", "marker": None}
    return verdicts


def _ending_marker(event: dict[str, Any], obj: tuple[str, str], endings: _Endings) -> _Marker | None:
    """The newest marker after ``event`` that ends its object: a re-creation (a mount, a device
    attached anew) always does; a recovery (the controller's I/O queues back, AER recovery) only
    once it has held (``_held``). A recovery not yet seen to hold leaves the event current, and
    says so on the event (``recovery_unconfirmed``)."""
    line = _line(event)
    ending, newest = endings.newest(obj)
    if ending is not None and ending.line > line:
        return ending
    if newest is not None and newest.line > line:  # after the event, and not held
        age, _ = endings.timer.age(newest.event)
        seen = endings.timer.ago(age) if age is not None else "with no clock to tell since when"
        event["recovery_unconfirmed"] = (
            f"{newest.says} {seen}; not yet seen well for {SETTLE_S:.0f} s, so not judged recovered"
        )
    return None


class _Endings:
    """Which marker ends an event (``_ending_marker``), found once per object: the newest marker
    of the object (or its owner) that ends it whatever came before, and the newest of all. An
    event's ending is the first if it lies after the event; otherwise the second, if after the
    event, is a recovery not yet seen to hold."""

    def __init__(self, markers: _Markers, state: _State, timer: Clock) -> None:
        self.markers, self.state, self.timer = markers, state, timer
        self._newest: dict[tuple[str, str], tuple[_Marker | None, _Marker | None]] = {}

    def newest(self, obj: tuple[str, str]) -> tuple[_Marker | None, _Marker | None]:
        """(the newest marker that ends ``obj``'s events, the newest marker of ``obj`` at all)."""
        if obj not in self._newest:
            owner = owner_of(obj)
            ending: _Marker | None = None
            newest: _Marker | None = None
            for name in dict.fromkeys((obj, owner)):
                found = self.markers.of(name)
                if found and (newest is None or found[-1].position > newest.position):
                    newest = found[-1]
                for marker in reversed(found):
                    if not marker.recovers or _held(marker, owner, self.state, self.timer):
                        if ending is None or marker.position > ending.position:
                            ending = marker
                        break
            self._newest[obj] = (ending, newest)
        return self._newest[obj]


def _held(marker: _Marker, owner: tuple[str, str], state: _State, timer: Clock) -> bool:
    """Whether a recovery has held: the controller is live now (its sysfs state, read with the
    log), or the log or the capture goes on for SETTLE_S after the marker without a failure of
    the object (failures after it are ``_failing_again``'s)."""
    if state.live(owner):
        return True
    if owner[0] not in SETTLED_OBJECTS:  # a client's own "restored" (netfs) is its recovery
        return True
    age, _ = timer.age(marker.event)
    return age is not None and age >= SETTLE_S


def _judge_error_lines(
    section: dict[str, Any],
    parsed: dict[str, Any],
    history: list[dict[str, Any]],
    since: dict[str, Any] | None,
    timer: Clock,
    clock: dict[str, Any],
    endings: _Endings,
) -> None:
    """The error lines of the log (probes/error_lines.py) that say what the node is now: those of
    the current boot, not before ``--since``, not an event now history, and not a line about an
    object since re-created or recovered (``XFS (loop2): Please unmount the filesystem`` after
    its shutdown, the loop device detached since). History is not state: the others are counted
    (``error_lines_past``), not listed."""
    past = {_at(e) for e in history}
    now, earlier = [], 0
    for line in _dicts(parsed.get("error_lines")):
        line = dict(line)
        age, wall = timer.age(line)
        line["age_s"], line["at"] = (None if age is None else round(age, 3)), iso(wall)
        before = bool(since) and _before_since(line, since or {}, timer, clock)
        if not line.get("current_boot") or _at(line) in past or before or _ended(line, endings):
            earlier += 1
            continue
        now.append(line)
    section["error_lines"] = now
    section["error_lines_past"] = earlier


def _at(item: dict[str, Any]) -> tuple[Any, Any]:
    src = item.get("src") if isinstance(item.get("src"), dict) else {}
    return src.get("artifact"), src.get("line")


# an error line no kind reads stands for an event of its family's object (the object_of mapping)
_KIND_OF_FAMILY = {
    "filesystem": "fs_error",
    "block": "blk_io_error",
    "nvme": "nvme_timeout",
    "pcie": "pcie_aer",
}


def _ended(line: dict[str, Any], endings: _Endings) -> bool:
    """Whether a line that is no event is about an object since re-created, recovered or gone."""
    if line.get("kind") is not None or line.get("family") not in _KIND_OF_FAMILY:
        return False
    stand_in = {**line, "kind": _KIND_OF_FAMILY[str(line["family"])]}
    obj = object_of(stand_in)
    if obj is None:
        return False
    return _ending_marker(stand_in, obj, endings) is not None or endings.state.gone(obj) is not None


def _failing_again(events: list[dict[str, Any]], markers: _Markers) -> dict[tuple[str, str], float | None]:
    """Recovered objects (NVMe controllers, PCI functions) that failed again after their last
    recovery, with the age of that newest failure (None when the log has no clock): a failure
    after a recovery makes the same object's failures of the hour before it current again.
    Re-created objects (a new mount, a device attached anew) are new objects: no carry-over."""
    found: dict[tuple[str, str], float | None] = {}
    for event in events:
        obj = _owner(event)
        if obj is None or obj[0] not in ("nvme", "pcie"):
            continue
        line, ends = _line(event), markers.of(obj)  # in line order
        if not (ends and ends[-1].line > line):  # no recovery after it
            if not (ends and ends[0].line < line):
                continue  # never recovered: nothing to carry over
            age = event.get("age_s")
            found[obj] = (
                age if obj not in found or found[obj] is None or age is None else min(found[obj], age)
            )
    return found


def _owner(event: dict[str, Any]) -> tuple[str, str] | None:
    obj = object_of(event)
    return owner_of(obj) if obj is not None else None


def _repeats(event: dict[str, Any], newest_failure_age: float | bool | None) -> bool:
    """Whether an event of an object failing again lies within RECENT_WINDOW_S before its newest
    failure (``newest_failure_age`` False: the object is not failing again)."""
    if newest_failure_age is False:
        return False
    age = event.get("age_s")
    if age is None or newest_failure_age is None:
        return True  # no clock: every failure of the log counts
    return bool(age - newest_failure_age <= RECENT_WINDOW_S)


def _flapping(events: list[dict[str, Any]], markers: _Markers, timer: Clock) -> set[tuple[str, str]]:
    """Objects that failed and recovered FLAP_RECOVERIES times or more within FLAP_WINDOW_S of
    the newest: each recovery is real, the object is not well."""
    cycles: dict[tuple[str, str], list[float]] = {}
    by_object: dict[tuple[str, str], list[int]] = {}
    for event in events:
        obj = _owner(event)
        if obj is not None and obj[0] in ("nvme", "pcie"):
            by_object.setdefault(obj, []).append(_line(event))
    for obj, lines in by_object.items():
        lines.sort()
        last_seen = -1
        for marker in markers.of(obj):
            if not marker.recovers:
                continue
            after = bisect.bisect_right(lines, last_seen)  # the first failure since the last recovery
            if after < len(lines) and lines[after] < marker.line:  # failed, then recovered
                age, _ = timer.age(marker.event)
                cycles.setdefault(obj, []).append(age if age is not None else 0.0)
            last_seen = marker.line
    flapping = set()
    for obj, ages in cycles.items():
        if len(ages) >= FLAP_RECOVERIES and max(ages) - min(ages) <= FLAP_WINDOW_S:
            flapping.add(obj)
    return flapping


def _since_verdicts(
    events: list[dict[str, Any]],
    verdicts: dict[int, dict[str, Any]],
    since: dict[str, Any] | None,
    timer: Clock,
    clock: dict[str, Any],
) -> None:
    if not since:
        return
    for event in events:
        if id(event) in verdicts:
            continue
        if _before_since(event, since, timer, clock):
            verdicts[id(event)] = {
                "reason": f"before --since {since['given']}",
                "object": " ".join(object_of(event) or ("", "")).strip() or None,
                "marker": None,
            }


def _before_since(event: dict[str, Any], since: dict[str, Any], timer: Clock, clock: dict[str, Any]) -> bool:
    age = event.get("age_s")
    wall = epoch_of(event["at"]) if isinstance(event.get("at"), str) else None
    # The capture's clock counts whole seconds: an event logged in the second the capture began
    # has age 0, and `--since 0s` (everything up to the capture) must include it.
    if "seconds" in since:
        if age is not None:
            return bool(age >= since["seconds"])
        uptime = clock.get("uptime_s")  # an earlier boot ended before the current one began
        return not event.get("current_boot") and uptime is not None and uptime > since["seconds"]
    if wall is not None:
        return bool(wall < since["epoch"])
    boot = timer.boot_epoch
    return not event.get("current_boot") and boot is not None and boot > since["epoch"]


def _objects(
    events: list[dict[str, Any]], verdicts: dict[int, dict[str, Any]], markers: _Markers
) -> list[dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for event in events:
        obj = object_of(event)
        if obj is None:
            continue
        entry = found.setdefault(
            obj,
            {"type": obj[0], "name": obj[1], "current": 0, "history": 0, "last_hour": 0,
             "newest_age_s": None, "recoveries": 0},
        )  # fmt: skip
        entry["history" if id(event) in verdicts else "current"] += 1
        age = event.get("age_s")
        if age is not None:
            entry["last_hour"] += age <= RECENT_WINDOW_S
            entry["newest_age_s"] = age if entry["newest_age_s"] is None else min(entry["newest_age_s"], age)
    for obj, entry in found.items():
        entry["recoveries"] = len(markers.of(obj))
    return sorted(found.values(), key=lambda e: (e["type"], e["name"]))


def _recount(section: dict[str, Any], history: Iterable[dict[str, Any]]) -> None:
    """The summary, kinds and current_boot_kinds without the events now in history."""
    gone: dict[tuple[Any, Any], list[int]] = {}
    for event in history:
        counts = gone.setdefault((event.get("kind"), event.get("device")), [0, 0])
        counts[0] += 1
        counts[1] += bool(event.get("current_boot"))
    current_by_group: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for event in _dicts(section.get("events")):
        current_by_group.setdefault((event.get("kind"), event.get("device")), []).append(event)
    summary = []
    for group in _dicts(section.get("summary")):
        key = (group.get("kind"), group.get("device"))
        if key not in gone:
            summary.append(group)
            continue
        count = int(group.get("count") or 0) - gone[key][0]
        if count <= 0:
            continue
        left = current_by_group.get(key, [])
        boot_count = max(0, int(group.get("current_boot_count") or 0) - gone[key][1])
        group = {**group, "count": count, "current_boot_count": boot_count}
        if left:
            first, last = left[0], left[-1]
            group.update(
                first_line=_line(first), first_timestamp=first.get("timestamp"), message=first.get("message"),
                src=first.get("src"), last_line=_line(last), last_timestamp=last.get("timestamp"),
            )  # fmt: skip
        summary.append(group)
    section["summary"] = summary
    section["kinds"] = sorted({str(g["kind"]) for g in summary})
    section["current_boot_kinds"] = sorted({str(g["kind"]) for g in summary if g.get("current_boot_count")})


def with_history(facts: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``facts`` whose ``dmesg`` holds every event again, history included (in log
    order), without ``derived``: what the node's log says, to find which findings moved to history."""
    section = facts.get("dmesg")
    whole = {k: v for k, v in facts.items() if k != "derived"}
    if not isinstance(section, dict) or not section.get("history"):
        return whole
    events = sorted([*_dicts(section.get("events")), *_dicts(section.get("history"))], key=_line)
    whole["dmesg"] = {**section, **(section.get("whole_log") or {}), "events": events, "history": []}
    return whole
