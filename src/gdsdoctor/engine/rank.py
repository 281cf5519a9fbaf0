"""Ranking: root causes first with their symptoms folded under them, then severity × certainty.

1. A fired cause that another fired cause ``explains`` (directly or through a chain) is a
   symptom: it is folded under the highest-ranked cause that explains it, but only where the
   two are about one device stack (``derived.device_stacks``: a loop device and the filesystem
   its image is on, a namespace and its controller, a partition and its disk) or one of them
   names no device (a host-wide cause): a full backing store on an unrelated loop device
   explains no shutdown on the checkpoint's drive, and both then stand as causes.
2. With ``--path`` (a ``focus`` from ``derived.path_focus``), root causes whose evidence
   names only other mounts (their mount points or files under them) or other devices the host
   lists, never the filesystem holding the path (its mount point, a file under it, its device
   or a device below it), come after every other cause (and ``narrow``, run before ranking,
   caps them at WARNING): a GPFS mount elsewhere never outranks an ext4 journal abort on
   the checkpoint filesystem, or a host-wide problem (nvidia-fs not loaded) that the
   checkpoint path meets too.
3. With ``--path``, then by severity (critical, warning, info) and, within a severity, causes
   on the path's filesystem before host-wide ones: severity stays first so that a critical
   host-wide cause (nvidia-fs not loaded) is never put below an info mount option on the path.
4. Where the input holds the user's own error (what the application, its I/O library or the
   benchmark printed: the ``app_log``, ``cufile_log`` and ``gdsio`` sections), root causes
   that answer it come first: those whose evidence cites a line of those files, or that
   explain (directly or through a chain) a fired cause that does. The question a pasted error
   asks is "why this error"; a platform cause that explains none of it (a NUMA placement, low
   free space elsewhere) comes after, whatever its severity, and the status, the worst
   severity, is unchanged. Certainty is not touched: this is where a finding stands, not how
   sure it is. Among those, where a cufile.log holds several attempts one after the other (the
   processes of one attempt overlap in time; a later attempt starts after all of them ended),
   causes that answer the last attempt's errors come first: an error the user's rerun no longer
   shows is one that the rerun went past.
5. Then by ``weight(severity) × certainty`` (critical 3, warning 2, info 1), highest first;
   ties by id, so the order is deterministic.
6. Each root is followed by its folded symptoms, in the same order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gdsdoctor.engine.evaluate import CauseResult, Outcome
from gdsdoctor.patterns import lazy_compile

SEVERITY_WEIGHT = {"critical": 3, "warning": 2, "info": 1}
# The sections holding the user's own error (point 4 of the module's docstring).
ERROR_SECTIONS = ("app_log", "cufile_log", "gdsio")


@dataclass(frozen=True, slots=True)
class RankedFinding:
    result: CauseResult
    explained_by: str | None = None
    explains: tuple[str, ...] = ()
    answers: tuple[str, ...] = ()  # the files of the user's own error it answers (point 4)


ON_PATH, NO_MOUNT, ELSEWHERE = 0, 1, 2
# What separates names in an evidence line: "(device nvme1n1):", "on=/mnt/ckpt,".
_JOURNAL_SUFFIX = lazy_compile(r"(?<=\d)-\d+$")
_SEPARATORS = lazy_compile(r"[\s()\[\]{}<>,;:=\"'`]+")


def score(result: CauseResult) -> tuple[float, int, str]:
    weight = SEVERITY_WEIGHT[result.cause.severity]
    return (-weight * result.certainty, -weight, result.cause.id)


def place(result: CauseResult, focus: Mapping[str, Any] | None) -> int:
    """Where a finding stands relative to ``--path``: on its filesystem, about no mount, or
    about other mounts only (ON_PATH without a focus: nothing to tell apart)."""
    if not focus:
        return ON_PATH
    words = evidence_words(result)
    names, point = set(focus.get("names") or ()), str(focus.get("mountpoint") or "")
    if words & names or (point != "/" and any(w.startswith(point.rstrip("/") + "/") for w in words)):
        return ON_PATH
    if _named_elsewhere(words, focus):
        return ELSEWHERE
    return NO_MOUNT


def _named_elsewhere(words: set[str], focus: Mapping[str, Any]) -> list[str]:
    """The words naming other data mounts (their points or paths below) or other devices."""
    elsewhere = [str(p) for p in focus.get("elsewhere") or ()]
    devices = set(focus.get("elsewhere_names") or ())
    return sorted(w for w in words if w in devices or any(w == p or w.startswith(p + "/") for p in elsewhere))


NARROWED_TO = "warning"


def narrow(results: Sequence[CauseResult], focus: Mapping[str, Any] | None) -> None:
    """With ``--path``: a critical fired cause whose evidence names other devices or mounts and
    nothing of the checkpoint path's storage stack is capped at WARNING, and says why
    (``narrowed``): a failing disk elsewhere is worth a look, not a page about the checkpoint.
    The path's own stack, and what names no device (a host-wide cause), keep their severity."""
    if not focus:
        return
    for result in results:
        if result.outcome is not Outcome.FIRED or result.cause.severity != "critical":
            continue
        if place(result, focus) != ELSEWHERE:
            continue
        named = _named_elsewhere(evidence_words(result), focus)
        devices = [n for n in named if not n.startswith("/") or n.startswith("/dev/")]
        what = "device" if devices else "mount"
        shown = ", ".join(dict.fromkeys(n.removeprefix("/dev/") for n in (devices or named)))
        on = f" ({focus['device']})" if focus.get("device") else ""
        result.narrowed = {
            "from": result.cause.severity,
            "reason": f"not the checkpoint's {what}: {shown}; --path is on {focus['mountpoint']}{on}",
        }
        result.cause = replace(result.cause, severity=NARROWED_TO)


def evidence_words(result: CauseResult) -> set[str]:
    """The names a finding's evidence holds (devices, mount points, paths), each as a name:
    what ranking by ``--path`` and acknowledgements by device or mount compare."""
    return {_device_word(w) for e in result.evidence for w in _SEPARATORS.split(e.text) if w}


def _device_word(word: str) -> str:
    """A word as a name: no sentence full stop; a JBD2 journal named after its partition
    ("nvme0n1p1-8") is that partition."""
    word = word.rstrip(".")
    return _JOURNAL_SUFFIX.sub("", word) if not word.startswith("/") else word


def error_artifacts(facts: Mapping[str, Any]) -> frozenset[str]:
    """The artifacts the user's own error was read from (``ERROR_SECTIONS`` parsed from them)."""
    sections = (facts.get(name) for name in ERROR_SECTIONS)
    return frozenset(
        str(s["artifact"])
        for s in sections
        if isinstance(s, dict) and s.get("status") == "ok" and s.get("artifact")
    )


def answering(
    results: Sequence[CauseResult], errors: frozenset[str], stacks: Stacks | None = None
) -> dict[str, tuple[str, ...]]:
    """Fired causes that answer the user's error, with the files of it they answer: those
    whose evidence cites one of ``errors``, and those that explain, directly or through a
    chain, a fired cause whose evidence does (on one device stack: ``Stacks``)."""
    fired = {r.cause.id: r for r in results if r.outcome is Outcome.FIRED}
    cited = {i: [e.artifact for e in r.evidence if e.artifact in errors] for i, r in fired.items()}
    answers = {}
    for cause_id in fired:
        files = [f for c in (cause_id, *_explained_closure(cause_id, fired, stacks)) for f in cited[c]]
        if files:
            answers[cause_id] = tuple(str(f) for f in dict.fromkeys(files))
    return answers


def last_attempt_lines(facts: Mapping[str, Any]) -> frozenset[tuple[str, int]]:
    """The (artifact, line) of a cufile.log's last attempt, when it holds more than one: its
    processes, by pid, grouped into attempts that do not overlap in time (the ranks of one job
    write at once; a rerun starts after they all ended); empty for a log of one attempt."""
    section = facts.get("cufile_log")
    if not isinstance(section, dict) or section.get("status") != "ok":
        return frozenset()
    spans: dict[int, list[str]] = {}
    for entry in section.get("entries") or []:
        pid, stamp = entry.get("pid"), entry.get("timestamp")
        if isinstance(pid, int) and isinstance(stamp, str):
            first_last = spans.setdefault(pid, [stamp, stamp])
            first_last[0], first_last[1] = min(first_last[0], stamp), max(first_last[1], stamp)
    order = sorted(spans, key=lambda pid: spans[pid][0])
    start, ended = 0, ""
    for index, pid in enumerate(order):
        if index and spans[pid][0] > ended:
            start = index  # every process before it had ended: a new attempt begins
        ended = max(ended, spans[pid][1])
    if start == 0:
        return frozenset()
    last = set(order[start:])
    return frozenset(
        (str(e["src"]["artifact"]), int(e["src"]["line"]))
        for e in section.get("entries") or []
        if e.get("pid") in last and isinstance(e.get("src"), dict)
    )


def _answering_lines(
    results: Sequence[CauseResult], lines: frozenset[tuple[str, int]], stacks: Stacks | None
) -> set[str]:
    """Fired causes whose evidence cites one of ``lines``, or that explain one that does."""
    fired = {r.cause.id: r for r in results if r.outcome is Outcome.FIRED}
    citing = {i for i, r in fired.items() if any((e.artifact, e.line) in lines for e in r.evidence)}
    return {i for i in fired if i in citing or citing.intersection(_explained_closure(i, fired, stacks))}


def rank(
    results: Sequence[CauseResult],
    focus: Mapping[str, Any] | None = None,
    errors: frozenset[str] = frozenset(),
    last_attempt: frozenset[tuple[str, int]] = frozenset(),
    device_stacks: Mapping[str, Any] | None = None,
) -> list[RankedFinding]:
    """Fired causes in rank order; ``focus``: ``derived.path_focus`` (None without ``--path``);
    ``errors``: the artifacts holding the user's own error (``error_artifacts``);
    ``last_attempt``: the lines of a cufile.log's last attempt (``last_attempt_lines``);
    ``device_stacks``: ``derived.device_stacks`` (None: every explanation holds)."""
    stacks = Stacks(device_stacks) if device_stacks else None
    answers = answering(results, errors, stacks) if errors else {}
    latest = _answering_lines(results, last_attempt, stacks) if last_attempt else set()

    def key(result: CauseResult) -> tuple[bool, bool, bool, int, int, float, int, str]:
        unrelated = bool(answers) and result.cause.id not in answers
        earlier = bool(latest) and result.cause.id not in latest
        if not focus:
            return (False, unrelated, earlier, 0, ON_PATH, *score(result))
        where = place(result, focus)
        severity = -SEVERITY_WEIGHT[result.cause.severity]
        return (where == ELSEWHERE, unrelated, earlier, severity, where, *score(result))

    fired = sorted((r for r in results if r.outcome is Outcome.FIRED), key=key)
    by_id = {r.cause.id: r for r in fired}
    explained = {
        symptom
        for r in fired
        for symptom in _explained_closure(r.cause.id, by_id, stacks)
        if symptom != r.cause.id
    }
    ranked: list[RankedFinding] = []
    placed: set[str] = set()
    # Roots are the fired causes nothing else explains; a cycle of explanations leaves
    # causes unplaced, and the best-ranked of those then stands as a root too.
    candidates = [r for r in fired if r.cause.id not in explained] + [
        r for r in fired if r.cause.id in explained
    ]
    for root in candidates:
        if root.cause.id in placed:
            continue
        placed.add(root.cause.id)
        symptoms = sorted(
            (by_id[s] for s in _explained_closure(root.cause.id, by_id, stacks) if s not in placed), key=key
        )
        explains = tuple(s.cause.id for s in symptoms)
        ranked.append(RankedFinding(root, explains=explains, answers=answers.get(root.cause.id, ())))
        for symptom in symptoms:
            placed.add(symptom.cause.id)
            answered = answers.get(symptom.cause.id, ())
            ranked.append(RankedFinding(symptom, explained_by=root.cause.id, answers=answered))
    return ranked


def _explained_closure(
    cause_id: str, by_id: dict[str, CauseResult], stacks: Stacks | None = None
) -> list[str]:
    """Fired causes explained by ``cause_id``, directly or transitively (cycle-safe); with
    ``stacks``, each explanation only between findings on one device stack."""
    seen: list[str] = []
    edges = [(cause_id, symptom) for symptom in by_id[cause_id].cause.explains]
    while edges:
        by, current = edges.pop(0)
        if current not in by_id or current in seen or current == cause_id:
            continue
        if stacks is not None and not stacks.together(by_id[by], by_id[current]):
            continue
        seen.append(current)
        edges.extend((current, symptom) for symptom in by_id[current].cause.explains)
    return seen


class Stacks:
    """The devices the findings name, on their stacks (``derived.device_stacks``): two findings
    are about one stack when one names a device (or a mount point, or a path under one) that
    the other's is built on, or is, or when either names none (a host-wide cause explains a
    device's symptom). Devices side by side (two loop devices on one filesystem) are not."""

    def __init__(self, device_stacks: Mapping[str, Any]) -> None:
        below = device_stacks.get("below")
        self.below: dict[str, set[str]] = (
            {str(k): set(v) for k, v in below.items() if isinstance(v, list)}
            if isinstance(below, dict)
            else {}
        )
        mounts = device_stacks.get("mounts")
        self.mounts = sorted(mounts.items(), key=lambda m: -len(m[0])) if isinstance(mounts, dict) else []
        self._named: dict[str, frozenset[str]] = {}

    def named(self, result: CauseResult) -> frozenset[str]:
        """The devices ``result``'s evidence names (by name, /dev path, mount point or a path)."""
        cause_id = result.cause.id
        if cause_id not in self._named:
            self._named[cause_id] = frozenset(
                device for word in evidence_words(result) if (device := self._device_of(word)) is not None
            )
        return self._named[cause_id]

    def _device_of(self, word: str) -> str | None:
        name = word.removeprefix("/dev/").removeprefix("mapper/")
        if name in self.below:
            return name
        if word.startswith("/") and not word.startswith("/dev/"):
            return next(
                (str(d) for point, d in self.mounts if word == point or word.startswith(point + "/")), None
            )
        return None

    def together(self, a: CauseResult, b: CauseResult) -> bool:
        named_a, named_b = self.named(a), self.named(b)
        if not named_a or not named_b:
            return True
        below = self.below
        return any(x == y or y in below.get(x, ()) or x in below.get(y, ()) for x in named_a for y in named_b)
