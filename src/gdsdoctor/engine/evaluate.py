"""Evaluate every cause over the facts: not applicable, inconclusive, or fired with a certainty.

Per cause, in order:

1. ``applies_when`` false → *not applicable* (e.g. GDS causes on a host with no NVIDIA stack);
   null (the facts cannot tell) does not skip the cause, unless the derived fact it reads is
   ``derived.undecided`` (its sources were looked for and not read): then *inconclusive*;
   then a cause about a capability (``uses: [gds]``) that the node does not use
   (``derived.intent``: inferred from the evidence or stated by the site config) → *not
   applicable*; a signal with ``uses`` is left out where the node does not use its capability;
2. a required section not ``ok`` → *inconclusive*, with what is missing and how to collect it,
   unless signals marked ``stands_alone`` (a symptom read from a pasted log, which needs no
   other source to be seen) hold with enough certainty: only they are evaluated then, and the
   cause fires as they say;
3. otherwise each signal's ``when`` is evaluated; the certainties of the signals that hold
   combine with the MYCIN rule (``a + b·(1−a)`` for two confirming signals, the symmetric
   forms for disconfirming and mixed ones), and the cause *fires* when the combined
   certainty reaches ``min_certainty`` (default 0.2);
4. a fired cause with ``severity_at_most`` takes the severity that expression gives when it is
   lower than the cause's own (``"warning"`` or ``"info"``; null or anything else keeps it):
   what a finding is worth depends on the device it names (a loop device, a boot disk), which
   the derived facts tell (``derived.devices.ceiling``). The result then carries the cause with
   that severity, so ranking and the report see one severity.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from jmespath.exceptions import JMESPathError

from gdsdoctor.compat import StrEnum
from gdsdoctor.engine.functions import truthy
from gdsdoctor.engine.query import FactQuery
from gdsdoctor.engine.rules import PLACEHOLDER, Cause, Signal, Step, fill
from gdsdoctor.facts.derived.intent import not_used
from gdsdoctor.patterns import lazy_compile

MAX_EVIDENCE_PER_SIGNAL = 12
# Below this combined certainty a critical finding is a candidate (WARNING at most): even odds.
# Calibrated on the project's real cases and fixtures, never on one sample (docs/rules.md).
CERTAINTY_FLOOR = 0.5
SCOPES = ("node", "shared", "job")  # what a finding is about (docs/rules.md, Status)
# Characters that must never reach a terminal or a pasted command as they are: C0/C1 controls
# (ANSI escapes, CR, NUL; some terminals read \x9b as CSI) and invisible or reordering format
# characters (bidi overrides and isolates, zero-width, line/paragraph separators, BOM) that
# make a line look different from what a shell would run. Also used by report/escape.py.
UNSAFE_CHARACTERS = (
    "\x00-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)  # every Cc, Cf, Zl and Zp character (Unicode 15; a test checks this Python's tables)
_UNSAFE = lazy_compile(f"[{UNSAFE_CHARACTERS}]")


class Outcome(StrEnum):
    FIRED = "fired"
    CLEAR = "clear"  # evaluated, did not fire
    INCONCLUSIVE = "inconclusive"
    NOT_APPLICABLE = "not_applicable"


@dataclass(frozen=True, slots=True)
class Evidence:
    text: str
    artifact: str | None = None
    line: int | None = None
    signal: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "artifact": self.artifact, "line": self.line, "signal": self.signal}


@dataclass(frozen=True, slots=True)
class SignalResult:
    signal: Signal
    held: bool
    error: str = ""


@dataclass(slots=True)
class CauseResult:
    """How one cause came out; a fired one gets its evidence and remediation afterwards."""

    cause: Cause
    outcome: Outcome
    certainty: float = 0.0
    signals: list[SignalResult] = field(default_factory=list)
    missing: list[dict[str, str]] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    remediation: list[Step] = field(default_factory=list)  # the commands filled with the facts' values
    verify: list[str] = field(default_factory=list)
    # {"from": severity, "reason": why} when --path capped it (engine/rank.narrow)
    narrowed: dict[str, str] | None = None
    scope: str = "node"  # what the finding is about (the cause's scope, or its scope_from)
    candidate: bool = False  # critical below CERTAINTY_FLOOR: caps the status at WARNING
    confirm: list[str] = field(default_factory=list)  # what would confirm a candidate
    not_used: tuple[str, ...] = ()  # not applicable: the capabilities the node does not use

    def __repr__(self) -> str:
        return f"CauseResult({self.cause.id!r}, {self.outcome!r}, certainty={self.certainty})"


def combine(a: float, b: float) -> float:
    """MYCIN certainty-factor combination of two certainties in [-1, 1]."""
    if a >= 0 and b >= 0:
        return a + b * (1 - a)
    if a < 0 and b < 0:
        return a + b * (1 + a)
    return (a + b) / (1 - min(abs(a), abs(b)))


def combined_certainty(results: Sequence[SignalResult]) -> float:
    """MYCIN combination of the held signals; boost signals count only beside a held
    non-boost positive signal (context never fires a cause on its own)."""
    held = [r.signal for r in results if r.held]
    if not any(s.certainty > 0 and not s.boost for s in held):
        held = [s for s in held if not s.boost]
    certainty = 0.0
    for signal in held:
        certainty = combine(certainty, signal.certainty)
    return certainty


def evaluate(
    causes: Sequence[Cause], facts: dict[str, Any], how_to_collect: dict[str, str]
) -> list[CauseResult]:
    query = FactQuery(facts)  # one for all the causes: they share its indexes of the event lists
    return [evaluate_cause(cause, facts, how_to_collect, query) for cause in causes]


def evaluate_cause(
    cause: Cause, facts: dict[str, Any], how_to_collect: dict[str, str], query: FactQuery | None = None
) -> CauseResult:
    """One cause over ``facts`` (``query``: a query of those same facts, to share)."""
    query = query or FactQuery(facts)
    if cause.applies_when:
        applies = _applicability(cause.applies_when, query)
        if applies is False:
            return CauseResult(cause, Outcome.NOT_APPLICABLE)
        undecided = _undecided(cause, facts, how_to_collect) if applies is None else []
        if undecided:  # blind to whether it applies: never set aside as not used either
            return CauseResult(cause, Outcome.INCONCLUSIVE, missing=undecided)
    intent = (facts.get("derived") or {}).get("intent") or {}
    unused = not_used(intent, cause.uses)
    if unused:
        return CauseResult(cause, Outcome.NOT_APPLICABLE, not_used=tuple(unused))
    if any(not_used(intent, s.uses) for s in cause.signals):
        cause = replace(cause, signals=tuple(s for s in cause.signals if not not_used(intent, s.uses)))
    missing = _missing(cause, facts, how_to_collect)
    signals = [s for s in cause.signals if s.stands_alone] if missing else cause.signals
    results = [_signal(signal, query) for signal in signals]
    certainty = combined_certainty(results)
    fired = certainty >= cause.min_certainty
    if missing and not fired:
        return CauseResult(cause, Outcome.INCONCLUSIVE, missing=missing)
    if not fired and (cut := _read_in_part(cause, facts, how_to_collect)):
        return CauseResult(cause, Outcome.INCONCLUSIVE, missing=cut)
    outcome = CauseResult(cause, Outcome.FIRED if fired else Outcome.CLEAR, round(certainty, 4), results)
    if fired:
        outcome.cause = cause = _capped(cause, query)
        values = _vars(cause, query)
        outcome.evidence = _distinct(
            e
            for r in results
            if r.held and r.signal.certainty > 0
            for e in _evidence(r.signal, query, values)
        )
        outcome.remediation = [
            replace(step, cmd=line, note=fill_text(step.note, values))
            for step in cause.remediation
            for line in render_command(step.cmd, values)
        ]
        outcome.verify = [line for template in cause.verify for line in render_command(template, values)]
        outcome.scope = _scope(cause, query)
        if cause.severity == "critical" and certainty < CERTAINTY_FLOOR:
            outcome.candidate = True
            outcome.confirm = _confirm(cause, results, _unread(cause, facts, how_to_collect), values)
    return outcome


def _scope(cause: Cause, query: FactQuery) -> str:
    """The cause's scope, or the one its ``scope_from`` gives (null or anything else keeps it)."""
    if not cause.scope_from:
        return cause.scope
    try:
        scope = query.search(cause.scope_from)
    except JMESPathError:
        return cause.scope
    return scope if scope in SCOPES else cause.scope


def _unread(cause: Cause, facts: dict[str, Any], how_to_collect: dict[str, str]) -> list[str]:
    """How to collect the sources of the cause's ``requires`` that were not read (an alternative
    left out counts too: another source may show what the one read could not)."""
    sections = [s for r in cause.requires for s in ((r,) if isinstance(r, str) else r)]
    return [
        how_to_collect[s]
        for s in dict.fromkeys(sections)
        if _section_status(facts, s) != "ok" and how_to_collect.get(s)
    ]


def _confirm(
    cause: Cause, results: Sequence[SignalResult], unread: Sequence[str], values: dict[str, Any]
) -> list[str]:
    """What would confirm a candidate: the sources its ``requires`` name that were not read
    (how to collect them), then what the signals that did not hold look for."""
    wanted = list(unread[:2])
    wanted += [
        "not seen: " + fill_text(r.signal.says, values)
        for r in results
        if not r.held and r.signal.certainty > 0 and not r.signal.boost
    ]
    if not wanted and cause.collect:
        wanted.append(cause.collect)
    return list(dict.fromkeys(wanted))[:4]


SEVERITY_ORDER = ("info", "warning", "critical")


def _capped(cause: Cause, query: FactQuery) -> Cause:
    """The cause at the severity its ``severity_at_most`` allows (never raised above its own)."""
    if not cause.severity_at_most:
        return cause
    try:
        ceiling = query.search(cause.severity_at_most)
    except JMESPathError:
        return cause
    if ceiling in SEVERITY_ORDER and SEVERITY_ORDER.index(ceiling) < SEVERITY_ORDER.index(cause.severity):
        return replace(cause, severity=ceiling)
    return cause


def _distinct(evidence: Iterable[Evidence]) -> list[Evidence]:
    """Evidence lines in order, each once: two signals often cite the same log line."""
    seen: set[tuple[str, str | None, int | None]] = set()
    kept = []
    for item in evidence:
        if (item.text, item.artifact, item.line) not in seen:
            seen.add((item.text, item.artifact, item.line))
            kept.append(item)
    return kept


def _applicability(expression: str, query: FactQuery) -> bool | None:
    """True/False when the facts say; None when they cannot (e.g. nothing showed whether a GPU
    is present): an unknown applicability is checked, never silently skipped."""
    try:
        value = query.search(expression)
    except JMESPathError:
        return None
    return None if value is None else truthy(value)


def _undecided(cause: Cause, facts: dict[str, Any], how_to_collect: dict[str, str]) -> list[dict[str, str]]:
    """The sources missing to tell whether the cause applies, when its ``applies_when`` reads a
    derived fact whose sources were looked for and not read (``derived.undecided``)."""
    undecided = (facts.get("derived") or {}).get("undecided") or {}
    sections = [
        section
        for name, sources in undecided.items()
        if f"derived.{name}" in cause.applies_when
        for section in sources
    ]
    return [_missing_entry(cause, facts, how_to_collect, section) for section in dict.fromkeys(sections)]


def _signal(signal: Signal, query: FactQuery) -> SignalResult:
    try:
        return SignalResult(signal, truthy(query.search(signal.when)))
    except JMESPathError as error:  # e.g. a function given null: the signal cannot hold
        return SignalResult(signal, False, str(error).splitlines()[0])


def _missing(cause: Cause, facts: dict[str, Any], how_to_collect: dict[str, str]) -> list[dict[str, str]]:
    missing = []
    for requirement in cause.requires:
        options = (requirement,) if isinstance(requirement, str) else requirement
        if any(_section_status(facts, s) == "ok" for s in options):
            continue
        missing += [_missing_entry(cause, facts, how_to_collect, section) for section in options]
    return missing


def _read_in_part(
    cause: Cause, facts: dict[str, Any], how_to_collect: dict[str, str]
) -> list[dict[str, str]]:
    """The required sections its parser read only in part (``input_cut``: a mount table past its
    first 10,000 entries, a kernel log's events cut in the middle): what was not read may hold
    what the cause looks for, so a cause that found nothing there is not clear (blindness is not
    health). A requirement of several sources is read in part only when none of those read was
    read whole (any of them suffices, as for ``requires``). A cause that fired stands."""
    cut = []
    for requirement in cause.requires:
        options = (requirement,) if isinstance(requirement, str) else requirement
        read = [s for s in options if _section_status(facts, s) == "ok"]
        parts = [s for s in read if isinstance(facts[s].get("input_cut"), str)]
        if parts and len(parts) == len(read):
            cut += [
                {
                    "section": section,
                    "status": "cut",
                    "detail": facts[section]["input_cut"],
                    "collect": _read_less(section, facts[section]["input_cut"], how_to_collect),
                }
                for section in parts
            ]
    return cut


def _read_less(section: str, cut: str, how_to_collect: dict[str, str]) -> str:
    """What settles a cause whose source was read only in part: the same command (or file) again,
    on only the part that matters, which then fits whole (the same output again would be cut the
    same way)."""
    how = how_to_collect.get(section) or f"paste the {section} output"
    again = "again on less: the part about the checkpoint path or the failure's time"
    return f"{how} {again} ({section} was read only in part: {cut})"


def _missing_entry(
    cause: Cause, facts: dict[str, Any], how_to_collect: dict[str, str], section: str
) -> dict[str, str]:
    return {
        "section": section,
        "status": _section_status(facts, section),
        "detail": str((facts.get(section) or {}).get("detail", "")),
        "collect": cause.collect or how_to_collect.get(section, ""),
    }


def _section_status(facts: dict[str, Any], section: str) -> str:
    value = facts.get(section)
    if section == "derived":
        return "ok"
    return str(value.get("status", "unknown")) if isinstance(value, dict) else "not_collected"


def _vars(cause: Cause, query: FactQuery) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, expression in cause.vars.items():
        try:
            values[name] = query.search(expression)
        except JMESPathError:
            values[name] = None
    return values


def _evidence(signal: Signal, query: FactQuery, values: dict[str, Any]) -> list[Evidence]:
    says = fill_text(signal.says, values)
    lines: list[Evidence] = []
    if signal.evidence:
        try:
            found = query.search(signal.evidence)
        except JMESPathError:
            found = None
        for record in _provenance(found):
            lines.append(
                Evidence(
                    str(record.get("text", "")).strip(),
                    str(record["artifact"]),
                    _int(record.get("line")),
                    signal.id,
                )
            )
            if len(lines) >= MAX_EVIDENCE_PER_SIGNAL:
                break
    return [Evidence(says, None, None, signal.id), *lines]


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _provenance(value: Any) -> list[dict[str, Any]]:
    """Every provenance record (``{"artifact", "line", "text"}``) inside a search result."""
    found: list[dict[str, Any]] = []
    stack = [value]
    while stack and len(found) < MAX_EVIDENCE_PER_SIGNAL:
        current = stack.pop(0)
        if isinstance(current, dict):
            if "artifact" in current and "line" in current and "text" in current:
                found.append(current)
            elif isinstance(current.get("src"), dict):
                stack.insert(0, current["src"])
            else:
                stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return found


def _safe_to_paste(value: Any, options_ended: bool) -> bool:
    if value is None or isinstance(value, list | dict):
        return False
    text = str(value)
    return not _UNSAFE.search(text) and (options_ended or not text.startswith("-"))


def _after_end_of_options(template: str, name: str) -> bool:
    """True when ``--`` comes before ``{name}``: the command reads it as an operand, never an option."""
    end = template.find(" -- ")
    return end >= 0 and end < template.find("{" + name + "}")


def fill_text(template: str, values: dict[str, Any]) -> str:
    """Fill ``{name}`` in prose; values are shown, not executed (renderers escape them)."""
    return fill(template, lambda m: _display(values.get(m[1])))


def _display(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(_display(v) for v in value) or "(none)"
    return "(unknown)" if value is None else str(value)


def render_command(template: str, values: dict[str, Any]) -> list[str]:
    """Fill a command template with shell-quoted values; one command per element of a list value
    (lists of the same length go together, element by element: a controller's address and port).

    Quoting makes ``$(…)``, backticks, ``;`` and globs inert. A value the facts do not have
    (null) becomes an ``<name>`` placeholder, which the shell refuses to run (a redirect from a
    missing file, then one with no target) until the operator fills it in. A value that quoting
    cannot make safe to paste into a root shell is withheld (the command becomes a comment
    saying so): control or invisible characters (see ``UNSAFE_CHARACTERS``), lists and
    objects where one value belongs, and values starting with ``-``, which the command would
    read as an option (a mountpoint ``-a``), unless the template ends the options with ``--``
    before it.
    """
    names = PLACEHOLDER.findall(template)
    list_names = [n for n in names if isinstance(values.get(n), list)]
    rows: list[dict[str, Any]] = [values]
    if list_names:
        first = values[list_names[0]]
        together = [n for n in list_names if len(values[n]) == len(first)]
        rows = [{**values, **{n: values[n][i] for n in together}} for i in range(len(first))]
    commands = []
    for row in rows:
        bad = [
            n
            for n in names
            if row.get(n) is not None and not _safe_to_paste(row[n], _after_end_of_options(template, n))
        ]
        if bad:
            names_text = ", ".join(sorted(set(bad)))
            commands.append(f"# withheld: {template.split()[0]} … ({names_text} unknown or unsafe to paste)")
            continue
        commands.append(fill(template, lambda m, r=row: _pasteable(r.get(m[1]), m[1])))
    return commands


def _pasteable(value: Any, name: str) -> str:
    """A value shell-quoted, or the ``<name>`` placeholder for one the facts do not have."""
    return f"<{name}>" if value is None else shlex.quote(str(value))
