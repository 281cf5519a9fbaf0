"""The report as a sequence of neutral blocks, so that every human-readable format says the
same things in the same order and differs only in how it draws them.

Block kinds: ``Heading`` (a section), ``Title`` (the head of one item in a section: a
finding), ``Line`` (styled spans), ``Bullet`` (an indented item of styled spans) and
``Commands`` (copy-pasteable shell lines). Styles are names
(``critical``, ``warning``, ``info``, ``ok``, ``unknown``, ``bold``, ``dim``, ``code`` (a verbatim
line), ``command`` (a command named in prose), ``link``) that each renderer maps to its own means.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gdsdoctor.capture.capture import PRODUCED_ELSEWHERE
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.report.node import summary_lines

Span = tuple[str, str]  # (text, style name or "")


@dataclass(frozen=True, slots=True)
class Heading:
    text: str


@dataclass(frozen=True, slots=True)
class Title:
    """The head of one item of a section (a finding): a line on a terminal, a heading in Markdown."""

    spans: tuple[Span, ...]


@dataclass(frozen=True, slots=True)
class Line:
    spans: tuple[Span, ...]
    whole: bool = False  # never wrapped (the status line: a script reads the last line)


@dataclass(frozen=True, slots=True)
class Bullet:
    spans: tuple[Span, ...]
    indent: int = 1


@dataclass(frozen=True, slots=True)
class Commands:
    lines: tuple[str, ...]
    indent: int = 2


Block = Heading | Title | Line | Bullet | Commands
_BACKTICKED = lazy_compile(r"`([^`]+)`")
# What a command does to the host, said before it (a ``read`` command is shown bare).
EFFECT_LABELS = {
    "live": "LIVE CHANGE (lost at reboot)",
    "persistent": "PERSISTENT (writes configuration)",
    "disruptive": "DISRUPTIVE (interrupts I/O or jobs)",
    "reboot": "NEEDS A REBOOT",
    "destroys-data": "DESTROYS DATA (printed commented out: what it erases does not come back)",
    "": "EFFECT NOT STATED (a report of schema 1.0: read the command first)",
}
STATUS_STYLE = {"OK": "ok", "WARNING": "warning", "CRITICAL": "critical", "UNKNOWN": "unknown"}


def outline(report: dict[str, Any], verbose: bool = False, quiet: bool = False) -> Iterator[Block]:
    """The report's blocks; ``quiet``: one line per root cause found and per critical finding
    (a critical symptom folded under another cause is never hidden), then the status line."""
    if quiet:
        for finding in report["findings"]:
            if not finding["explained_by"] or finding["severity"] == "critical":
                under = f"  (explained by {finding['explained_by']})" if finding["explained_by"] else ""
                # Whole: a script reads one finding a line.
                yield Line((*_severity_spans(finding)[:3], ("  " + finding["title"] + under, "")), whole=True)
        for symptom in report.get("differential") or []:
            said = f"  {symptom['id']}  {_symptom_state(symptom)}"
            yield Line((("SYMPTOM", "unknown"), (said, "")), whole=True)
        if report.get("unexplained"):
            yield Line((("UNEXPLAINED", "unknown"), (f"  {_unexplained_count(report)}", "")), whole=True)
        yield _status_line(report)
        return
    yield from _header(report)
    yield from _notice(report)
    yield from _partial(report)
    yield from _node(report)
    yield from _probes(report, verbose)
    yield from _not_used(report)
    yield from _findings(report)
    yield from _differential(report)
    yield from _unexplained(report)
    yield from _acknowledged(report)
    yield from _history(report)
    yield from _inconclusive(report, verbose)
    yield from _notes(report)
    yield _status_line(report)


SOURCE_KINDS = {
    "live": "live check of host",  # "live check: vm" read as "a VM was detected" (vm: the host name)
    "bundle": "bundle",
    "files": "pasted files",
    "sos": "sos report",
    "nvidia-bug-report": "nvidia-bug-report log",
}
FOREIGN_KINDS = ("sos", "nvidia-bug-report")


def _header(report: dict[str, Any]) -> Iterator[Block]:
    source = report["source"]
    where = SOURCE_KINDS.get(source["kind"], source["kind"])
    spans: list[Span] = [
        (f"gdsdoctor {report['tool']['version']}", "bold"),
        (f" — {where}{'' if source['kind'] == 'live' else ':'} ", ""),
        (source["label"], ""),
    ]
    if source["kind"] in FOREIGN_KINDS:  # another tool's bundle: its own header names the host
        host = report["host"]
        for key, label in (("hostname", "host"), ("created", "captured")):
            if host.get(key):
                spans += [(f"  {label}: ", "dim"), (host[key], "")]
    if source.get("target_path"):
        spans += [("  path: ", "dim"), (source["target_path"], "code")]
    yield Line(tuple(spans))


def _node(report: dict[str, Any]) -> Iterator[Block]:
    """The node in a few lines (GPUs, GDS, NVMe, the checkpoint filesystem, virtualization)."""
    node = report.get("node") or {}
    if any(value is not None for value in node.values()):  # nothing known: the notice says so
        for line in summary_lines(node):
            label, _, value = line.partition(": ")
            yield Bullet(((label + ": ", "dim"), (value, "")))


def _notice(report: dict[str, Any]) -> Iterator[Block]:
    """What the reader must know before anything else (nothing read, no GPU), at the top."""
    notice = report["summary"].get("notice")
    if notice:
        yield Line(((notice[0].upper() + notice[1:], STATUS_STYLE[report["summary"]["status"]]),))


def _not_used(report: dict[str, Any]) -> Iterator[Block]:
    """One line per capability the node does not use (intent): its causes are not applicable."""
    for item in report["summary"].get("not_used") or []:
        yield Line(prose_spans(item["line"]))


def _partial(report: dict[str, Any]) -> Iterator[Block]:
    """A run blind to what its critical causes need says so before anything else (report/partial.py)."""
    blind = report["summary"].get("partial")
    if not blind:
        return
    yield Line((("Partial run: ", "unknown"), ("what the critical causes need was not all read", "")))
    for item in blind["not_read"]:
        yield Bullet(
            ((item["source"], "bold"), (f" {item['status']}", "warning"), (f": {item['detail']}", "dim"))
        )
    for how in dict.fromkeys(item["how"] for item in blind["not_read"]):
        yield Bullet((("To read it: ", "bold"), (how, "")))


def could_read(probe: dict[str, Any]) -> bool:
    """Whether this capture could have read the source: not one only pasted (``not_collected``)
    nor one another command produces (fio's result: ``gdsdoctor bench``)."""
    return probe["status"] != "not_collected" and probe["detail"] != PRODUCED_ELSEWHERE


def _probes(report: dict[str, Any], verbose: bool) -> Iterator[Block]:
    probes = report["probes"]
    ok = sum(1 for p in probes if p["status"] == "ok")
    if report["source"]["kind"] == "files":
        yield Line(((f"Sources read: {ok} (pasted)", "dim"),))
    else:
        yield Line(((f"Sources read: {ok} of {sum(1 for p in probes if could_read(p))}", "dim"),))
    for probe in probes:
        if probe["status"] != "ok" and (verbose or probe["status"] not in ("not_collected", "missing")):
            detail = _dim(prose_spans(f": {probe['detail']}"))
            yield Bullet(((probe["name"], "bold"), (f" {probe['status']}", "warning"), *detail))


# The sections of the findings by scope (docs/rules.md, Status): this node's first.
SCOPE_HEADINGS = {
    "shared": "Shared: {n} finding(s) of a filesystem, target or fabric that many nodes see",
    "job": "Job: {n} finding(s) of one job or user",
}


def _findings(report: dict[str, Any]) -> Iterator[Block]:
    findings = report["findings"]
    node = [f for f in findings if f.get("scope", "node") == "node" or f["explained_by"]]
    roots_node = [f for f in node if not f["explained_by"]]
    if not roots_node:
        yield Heading(_no_finding_heading(report["summary"]))
    else:
        yield Heading("Findings (root causes first)")
    number = 0
    for scope in ("node", "shared", "job"):
        roots = [f for f in findings if not f["explained_by"] and f.get("scope", "node") == scope]
        if roots and scope != "node":
            counted = "counted in the status" if roots[0].get("counted") else "not counted in the status"
            yield Heading(SCOPE_HEADINGS[scope].format(n=len(roots)) + f" ({counted})")
        for finding in roots:
            number += 1
            yield from _finding(finding, f"{number}.")
            verified = list(finding.get("verify", []))  # each verify command once under its root
            for symptom in findings:
                if symptom["explained_by"] == finding["id"]:
                    yield from _symptom(symptom, verified)


def _no_finding_heading(summary: dict[str, Any]) -> str:
    """Say "No problem found" only when causes were checked and the facts showed what they cover."""
    if summary.get("partial"):
        return "No problem found in what could be read (a partial run: see above)"
    if summary["status"] == "UNKNOWN" and summary["counts"].get("unexplained"):
        return "No finding, but error lines that no cause explains (below): not a healthy node"
    if summary["status"] == "UNKNOWN":
        return "No cause could be checked"
    if summary["counts"].get("shared") or summary["counts"].get("job"):
        return "No problem of this node found (see the shared and job findings below)"
    if summary.get("notice"):  # said at the top: no GPU, so only some causes apply
        checked = summary["counts"]["fired"] + summary["counts"]["clear"]
        return f"No problem found in the {checked} cause(s) that apply"
    return "No problem found"


def _severity_spans(finding: dict[str, Any]) -> tuple[Span, ...]:
    """Severity, id, certainty and category; a candidate and a finding of another scope than
    the node's say so after the category (the status line counts them apart)."""
    tags = " candidate" if finding.get("candidate") else ""
    tags += f" {finding['scope']}" if finding.get("scope", "node") != "node" else ""
    return (
        (finding["severity"].upper(), finding["severity"]),
        ("  ", ""),
        (finding["id"], "bold"),
        (f"  certainty {finding['certainty']:.2f}  [{finding['category']}]{tags}", "dim"),
    )


def _finding(finding: dict[str, Any], number: str) -> Iterator[Block]:
    yield Title(((number + " ", "bold"), *_severity_spans(finding)))
    yield Bullet(((finding["title"], "bold"),))
    if finding.get("narrowed"):
        narrowed = finding["narrowed"]
        capped = f"{narrowed['from']} → {finding['severity']}, {narrowed['reason']}"
        yield Bullet((("Capped: ", "bold"), (capped, "")))
    if finding.get("candidate"):
        confirm = "; ".join(finding.get("confirm") or []) or "more evidence of the same"
        yield Bullet(
            (("Candidate: ", "bold"), ("below the certainty floor, WARNING at most; to confirm: ", ""))
        )
        yield Bullet(prose_spans(confirm), indent=2)
    if finding.get("answers"):
        yield Bullet((("Answers the error in ", "bold"), (", ".join(finding["answers"]), "")))
    yield Bullet(prose_spans(finding["explanation"]))
    yield Bullet((("Evidence:", "bold"),))
    yield from _evidence(finding["evidence"])
    if finding["fix"]:
        yield Bullet((("Fix: ", "bold"), *prose_spans(finding["fix"])))
    yield from remediation_blocks(finding["remediation"], finding.get("verify", []))
    for reference in finding["references"]:
        yield Bullet((("see ", "dim"), (reference, "link")), indent=2)


def _evidence(evidence_lines: list[dict[str, Any]], indent: int = 2) -> Iterator[Block]:
    for evidence in evidence_lines:
        where = f"{evidence['artifact']}:{evidence['line']}" if evidence.get("artifact") else ""
        age: tuple[Span, ...] = ((f"  ({evidence['age']})", "dim"),) if evidence.get("age") else ()
        if where:
            yield Bullet(((where + "  ", "dim"), (evidence["text"], "code"), *age), indent=indent)
        else:
            yield Bullet(((evidence["text"], ""), *age), indent=indent)


UNEXPLAINED_SHOWN = 10


CANDIDATE_STATES = {
    "confirmed": ("CONFIRMED", "critical"),
    "suspected": ("SUSPECTED", "warning"),
    "open": ("OPEN", "unknown"),
    "ruled_out": ("RULED OUT", "dim"),
}


def _symptom_state(symptom: dict[str, Any]) -> str:
    states = [c["state"] for c in symptom.get("candidates") or []]
    if symptom.get("state") == "explained":
        return "explained by a confirmed candidate"
    if symptom.get("state") == "unexplained":
        return f"every one of its {len(states)} known candidates ruled out"
    left = sum(1 for s in states if s in ("open", "suspected"))
    return f"{left} candidate(s) to settle, {states.count('ruled_out')} ruled out"


def _differential(report: dict[str, Any]) -> Iterator[Block]:
    """Each symptom with its candidate causes, ranked by what the input already rules out
    (engine/differential.py): the state of each, why, and the one command that settles it."""
    symptoms = report.get("differential") or []
    if not symptoms:
        return
    yield Heading(f"Symptoms and their candidate causes ({len(symptoms)}; one not explained is never OK)")
    for symptom in symptoms:
        yield Title(((symptom["title"], "bold"), (f"  [{symptom['id']}]  {_symptom_state(symptom)}", "dim")))
        yield Bullet(prose_spans(symptom["says"]))
        yield from _evidence(symptom.get("evidence") or [])
        for candidate in symptom.get("candidates") or []:
            label, style = CANDIDATE_STATES.get(candidate["state"], (candidate["state"], ""))
            yield Bullet(
                ((label, style), ("  ", ""), (candidate["cause"], "bold"), (f"  {candidate['why']}", "dim"))
            )
            if candidate["state"] in ("open", "suspected"):
                yield Bullet((("settle with: ", "dim"), (candidate["settle"], "command")), indent=2)


def _unexplained_count(report: dict[str, Any]) -> str:
    return f"{len(report['unexplained'])} error line(s) not explained by any finding"


def _unexplained(report: dict[str, Any]) -> Iterator[Block]:
    """Error lines of the storage path no finding cites (report/unexplained.py): each with its
    file:line, the part of the path it is about, and what would settle it."""
    lines = report.get("unexplained") or []
    if not lines:
        return
    yield Heading(f"Unexplained: {_unexplained_count(report)} (an OK status becomes UNKNOWN)")
    settled: set[str] = set()
    for item in lines[:UNEXPLAINED_SHOWN]:
        yield Bullet(
            (
                (f"{item['artifact']}:{item['line']}  ", "dim"),
                (f"[{item['family']}]  ", "bold"),
                (str(item.get("text") or ""), "code"),
            )
        )
        if item.get("settle") and item["settle"] not in settled:  # once per family
            settled.add(item["settle"])
            yield Bullet((("would settle it: ", "dim"), *prose_spans(item["settle"])), indent=2)
    if len(lines) > UNEXPLAINED_SHOWN:
        yield Bullet(((f"… {len(lines) - UNEXPLAINED_SHOWN} more (--format json lists them all)", "dim"),))


def _history(report: dict[str, Any]) -> Iterator[Block]:
    """Findings of events the node has since recovered from: what happened, not what is."""
    everything = report.get("history") or []
    history = [h for h in everything if not h.get("explained_by")]
    if not history:
        return
    yield Heading(
        f"History: {len(everything)} finding(s) of events since recovered (not counted in the status)"
    )
    for item in history:
        age = f", {item['age']}" if item.get("age") else ""
        now = "; also current on other events (see Findings)" if item.get("also_now") else ""
        yield Line(
            (
                ("INFO", "info"),
                ("  ", ""),
                (item["id"], "bold"),
                (f"  was {item['was_severity']}{age}{now}  [{item['category']}]", "dim"),
            )
        )
        yield Bullet(((item["title"], ""),))
        yield Bullet((("History: ", "bold"), (item["history_reason"], "")))
        yield from _evidence(item["evidence"][:4])
        for symptom in everything:
            if symptom.get("explained_by") == item["id"]:
                yield Bullet(
                    (
                        ("↳ explains ", "dim"),
                        (symptom["id"], "bold"),
                        (f"  was {symptom['was_severity']}", "dim"),
                    ),
                    indent=2,
                )
                # its own events (a device's older I/O errors), as a current symptom's are shown
                yield from _evidence(symptom["evidence"][:4], indent=3)


def steps_of(remediation: list[Any]) -> list[dict[str, Any]]:
    """A finding's remediation items; a report of schema 1.0 (``Report.from_json``) has bare
    command strings, whose effect nobody stated."""
    return [{"command": s, "effect": "", "note": ""} if isinstance(s, str) else s for s in remediation]


def shown_command(step: dict[str, Any]) -> str:
    """The command as printed: one that destroys data is commented out, so that a paste of the
    whole block runs everything else and erases nothing."""
    return f"# {step['command']}" if step["effect"] == "destroys-data" else step["command"]


def effect_marker(step: dict[str, Any]) -> str:
    """The words said before a command that changes the host ('' for a read)."""
    if step["effect"] == "read":
        return ""
    label = EFFECT_LABELS.get(step["effect"], EFFECT_LABELS[""])
    return f"{label} — {step['note']}" if step.get("note") else label


def remediation_blocks(steps: list[dict[str, Any]], verify: list[str]) -> Iterator[Block]:
    """The commands in order: read ones grouped, each other one after its marker and note; then
    the commands that show the fix took."""
    reads: list[str] = []
    for step in steps_of(steps):
        marker = effect_marker(step)
        if not marker and not step.get("note"):
            reads.append(step["command"])
            continue
        if reads:
            yield Commands(tuple(reads))
            reads = []
        style = "critical" if step["effect"] == "destroys-data" else "warning"
        yield Bullet((("⚠ " + marker, style),) if marker else ((step["note"], "dim"),), indent=2)
        yield Commands((shown_command(step),))
    if reads:
        yield Commands(tuple(reads))
    if verify:
        yield Bullet((("Verify after the fix:", "bold"),), indent=2)
        yield Commands(tuple(verify))


def command_lines(steps: list[dict[str, Any]], verify: list[str], indent: str = "  ") -> list[str]:
    """The same as plain lines (JUnit bodies, the catalogue): a marker is a shell comment."""
    lines: list[str] = []
    for step in steps_of(steps):
        marker = effect_marker(step) or step.get("note", "")
        if marker:
            lines.append(f"{indent}# {marker}")
        lines.append(f"{indent}$ {shown_command(step)}")
    if verify:
        lines += [f"{indent}# verify after the fix:", *(f"{indent}$ {command}" for command in verify)]
    return lines


def _symptom(symptom: dict[str, Any], verified: list[str]) -> Iterator[Block]:
    """A cause folded under its root: its fix is the root's, but its own ``verify`` commands (those
    the root's do not repeat) show that it went with that fix."""
    yield Bullet((("↳ explains ", "dim"), *_severity_spans(symptom)), indent=2)
    yield Bullet(((symptom["title"], ""),), indent=3)
    for evidence in symptom["evidence"][:4]:
        where = f"{evidence['artifact']}:{evidence['line']}  " if evidence.get("artifact") else ""
        yield Bullet(((where, "dim"), (evidence["text"], "code" if where else "")), indent=3)
    own = [command for command in symptom.get("verify", []) if command not in verified]
    verified += own
    if own:
        yield Bullet((("Verify it went with the fix:", "bold"),), indent=3)
        yield Commands(tuple(own), indent=3)


def _acknowledged(report: dict[str, Any]) -> Iterator[Block]:
    """Findings the site config acknowledges (not counted in the status), then the expired
    acknowledgements, whose findings count again."""
    items = report.get("acknowledged") or []
    if items:
        yield Heading(f"Acknowledged: {len(items)} finding(s), not counted in the status")
        for item in items:
            finding, ack = item["finding"], item["acknowledgement"]
            until = f" (until {ack['until']})" if ack.get("until") else ""
            yield Bullet((*_severity_spans(finding), (f" — {finding['title']}", "")))
            yield Bullet((("acknowledged: ", "bold"), (ack["reason"] + until, "")), indent=2)
    for item in report.get("expired_acknowledgements") or []:
        ack = item["acknowledgement"]
        counted = (
            "it fired and counts again"
            if item["fired"]
            else "it did not fire: remove it from the site config"
        )
        yield Line(
            (
                ("Acknowledgement expired: ", "warning"),
                (ack["id"], "bold"),
                (f" (until {ack['until']}: {ack['reason']}); {counted}", ""),
            )
        )


def _inconclusive(report: dict[str, Any], verbose: bool) -> Iterator[Block]:
    """One bullet per way to settle causes (a command to run, a file to paste) with the causes it
    settles, so the reader sees what each command is for. The causes come in the report's order
    (those whose input was partly read first), so the first bullets are about what was given."""
    items = report["inconclusive"]
    if not items:
        return
    yield Heading(f"Inconclusive: {len(items)} cause(s) could not be checked")
    settles: dict[str, list[str]] = {}
    for item in items:
        for how in dict.fromkeys(_how_to_settle(m) for m in item["missing"]):
            settles.setdefault(how, []).append(item["id"])
    shown = list(settles.items()) if verbose else list(settles.items())[:MAX_WAYS_SHOWN]
    for how, ids in shown:
        names = ", ".join(ids if verbose else ids[:MAX_IDS_SHOWN])
        more = "" if verbose or len(ids) <= MAX_IDS_SHOWN else f" (+{len(ids) - MAX_IDS_SHOWN})"
        yield Bullet((*prose_spans(how), (" → ", "dim"), (names, "bold"), (more, "dim")))
    settled = {i for _, ids in shown for i in ids}
    left = [item for item in items if item["id"] not in settled]
    if left:
        ways = len(settles) - len(shown)
        more = f"… {len(left)} more cause(s), {ways} more way(s) to settle them (--verbose lists all)"
        yield Bullet(((more, "dim"),))


MAX_WAYS_SHOWN = 8
MAX_IDS_SHOWN = 4


def _how_to_settle(missing: dict[str, str]) -> str:
    return missing["collect"] or f"the {missing['section']} section ({missing['status']})"


def _dim(spans: tuple[Span, ...]) -> tuple[Span, ...]:
    return tuple((text, style or "dim") for text, style in spans)


def prose_spans(text: str) -> tuple[Span, ...]:
    """Prose whose `backticked` parts are commands: those become ``command`` spans (a code span
    in Markdown, where escaping them would show the backticks)."""
    spans: list[Span] = []
    for number, part in enumerate(_BACKTICKED.split(text)):
        if part:
            spans.append((part, "command" if number % 2 else ""))
    return tuple(spans)


def _notes(report: dict[str, Any]) -> Iterator[Block]:
    if report["source"]["notes"]:
        yield Heading("Notes on the input")
        for note in report["source"]["notes"]:
            yield Bullet(((note, ""),))


def _status_line(report: dict[str, Any]) -> Block:
    summary = report["summary"]
    return Line(
        (
            ("Status: ", "bold"),
            (summary["status"], STATUS_STYLE[summary["status"]]),
            (f" (exit {summary['exit_code']}) — {summary['reason']}", ""),
        ),
        whole=True,
    )
