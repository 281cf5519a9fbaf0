"""One engine, two front doors: live capture and offline inputs run the same analysis.

``check`` = capture live → analyse; ``analyze`` = read a bundle or pasted files → analyse.
Both go capture → facts → evaluate → rank → report, so ``analyze(collect())`` equals
``check()`` on the same host state.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gdsdoctor import DEFAULT_DEADLINE_S, collector
from gdsdoctor.capture.capture import Capture
from gdsdoctor.capture.detect import capture_files
from gdsdoctor.capture.live import LiveCapture
from gdsdoctor.deadline import DeadlinePassed, analysis_deadline, doing
from gdsdoctor.errors import DeadlineError, ParseError, UserError
from gdsdoctor.model import Artifact, ArtifactStatus
from gdsdoctor.probes import ANALYSED_PROBES, path_stat, target

# The analysis stages (facts, engine, report) are imported where they are used: `check`
# imports them while its probes run rather than before starting them.
if TYPE_CHECKING:
    from gdsdoctor.engine.evaluate import CauseResult
    from gdsdoctor.engine.rank import RankedFinding
    from gdsdoctor.engine.rules import Cause, RuleSet
    from gdsdoctor.engine.symptoms import Symptom

# Of `analyze --deadline`, what reading pasted files may take (a fifo fed slowly is given up
# then); the rest is for parsing and analysing what was read.
READING_SHARE = 0.5

KNOWN_SECTIONS = frozenset(
    {p.section for p in ANALYSED_PROBES} | {"derived", "job", "job_save", "job_memlock"}
)
HOW_TO_COLLECT = {p.section: p.how_to_collect() for p in ANALYSED_PROBES} | {
    "job": "pass `--params 70B` (with --preset/--interval/--budget/--gpus as needed)",
    "job_save": "pass `--async` or `--sync` (how the job saves its checkpoints)",
    "job_memlock": "pass `--memlock` with the job's own `ulimit -l` (unlimited, 64KiB…), or paste "
    "`grep locked /proc/<pid>/limits` of the training process",
}


@dataclass(frozen=True, slots=True)
class Analysis:
    capture: Capture
    facts: dict[str, Any]
    results: list[CauseResult]
    ranked: list[RankedFinding]
    report: dict[str, Any]
    history: list[RankedFinding] = field(default_factory=list)  # findings the node recovered from

    @property
    def exit_code(self) -> int:
        return int(self.report["summary"]["exit_code"])


def rules(rules_dirs: Sequence[Path] = ()) -> list[Cause]:
    """The rules, loaded and checked once per process for as long as no rule file changes
    (a fleet run analyses hundreds of bundles; validating YAML for each costs more than the
    analysis itself). Loaded, they are the last of what a one-report process keeps until it exits
    (gdsdoctor.collector)."""
    causes = list(_loaded_rules(tuple(rules_dirs), _rule_files_state(rules_dirs)).causes)
    collector.loaded()
    return causes


def symptom_table(rules_dirs: Sequence[Path] = ()) -> list[Symptom]:
    """The differential's symptoms (engine/symptoms.py), loaded with the rules, cached with them."""
    return list(_loaded_rules(tuple(rules_dirs), _rule_files_state(rules_dirs)).symptoms)


def _rule_files_state(rules_dirs: Sequence[Path]) -> tuple[tuple[str, int, int], ...]:
    from gdsdoctor.engine.rules import builtin_rules_dir, rule_files

    state = []
    for file in rule_files([builtin_rules_dir(), *rules_dirs]):
        try:
            info = file.stat()
        except OSError:
            state.append((str(file), -1, -1))  # load_rules reports it
            continue
        state.append((str(file), info.st_mtime_ns, info.st_size))
    return tuple(state)


@lru_cache(maxsize=8)
def _loaded_rules(rules_dirs: tuple[Path, ...], _state: tuple[tuple[str, int, int], ...]) -> RuleSet:
    from gdsdoctor.engine.rules import load_rule_set

    return load_rule_set(rules_dirs, KNOWN_SECTIONS)


def analyze_capture(
    capture: Capture,
    rules_dirs: Sequence[Path] = (),
    parsed: dict[str, Any] | None = None,
    acknowledgements: Sequence[dict[str, Any]] = (),
) -> Analysis:
    """Facts, evaluation, ranking and report of a capture (``parsed``: sections its probe
    threads already parsed; ``acknowledgements``: the site config's ``acknowledge:``, whose
    findings are set apart)."""
    from gdsdoctor.engine.differential import differential
    from gdsdoctor.engine.evaluate import evaluate
    from gdsdoctor.engine.rank import error_artifacts, last_attempt_lines, narrow, rank
    from gdsdoctor.facts.document import build_facts
    from gdsdoctor.report.build import build_report

    facts = build_facts(capture, ANALYSED_PROBES, parsed)
    causes = rules(rules_dirs)
    doing("evaluating the rules")
    results = evaluate(causes, facts, HOW_TO_COLLECT)
    focus = facts["derived"].get("path_focus")
    narrow(results, focus)  # --path: other devices' findings at most WARNING
    errors = error_artifacts(facts)  # the user's own error, whose causes rank first
    last_attempt = last_attempt_lines(facts)  # ...those of its last attempt before earlier ones
    stacks = facts["derived"].get("device_stacks")  # an explanation holds only on one device stack
    ranked = rank(results, focus, errors, last_attempt, stacks)
    doing("evaluating the rules over the kernel events now history")
    history = rank(history_results(causes, facts, results), focus, errors, last_attempt, stacks)
    acknowledged = None
    if acknowledgements:
        from gdsdoctor.engine.acknowledge import acknowledge

        host = str(capture.host.get("hostname") or capture.label)
        acknowledged = acknowledge(ranked, acknowledgements, host, [c.id for c in causes])
    judged = differential(symptom_table(rules_dirs), facts, results)  # symptoms and their candidates
    doing("building the report")
    report = build_report(capture, facts, results, ranked, acknowledged, history, judged)
    return Analysis(capture, facts, results, ranked, report, history)


def history_results(
    causes: Sequence[Cause], facts: dict[str, Any], results: Sequence[CauseResult]
) -> list[CauseResult]:
    """The causes that the whole kernel log fires with evidence among the events now history:
    what the node has recovered from (gdsdoctor.facts.lifecycle), whether or not the cause also
    fires now on other events. Evaluated again only when some event is history, over the same
    facts with those events put back."""
    from gdsdoctor.engine.evaluate import Outcome, evaluate
    from gdsdoctor.facts import lifecycle
    from gdsdoctor.facts.derived import derive

    past = (facts.get("dmesg") or {}).get("history")
    if not past:
        return []
    lines = {(e["src"].get("artifact"), e["src"].get("line")) for e in past if isinstance(e.get("src"), dict)}
    whole = lifecycle.with_history(facts)
    target_path, intent = (facts.get("target") or {}).get("path"), facts["derived"]["intent"]
    whole["derived"] = derive(whole, target_path, known_intent=intent)  # what it uses is not history
    return [
        r
        for r in evaluate(causes, whole, HOW_TO_COLLECT)
        if r.outcome is Outcome.FIRED and any((e.artifact, e.line) in lines for e in r.evidence)
    ]


def check(
    host_root: Path = Path("/"),
    target_path: str | None = None,
    rules_dirs: Sequence[Path] = (),
    deadline_s: float = DEFAULT_DEADLINE_S,
    job: dict[str, Any] | None = None,
    bench: tuple[BenchProgress, int | None] | None = None,
    acknowledgements: Sequence[dict[str, Any]] = (),
    since: str | None = None,
    site: dict[str, Any] | None = None,
) -> Analysis:
    """Capture this host and analyse it; ``job`` describes the checkpoint (``{"params": "70B"}``),
    ``site`` is the site config (its ``node:`` and ``status:``, see ``apply_site``).

    With ``bench`` (a progress callback and a size in bytes or None for the default) and a
    ``target_path``, the checkpoint path is also measured (see :func:`add_bench`)."""
    from gdsdoctor.facts.section import section_from

    live = LiveCapture(host_root, target_path, deadline_s=deadline_s, parse=section_from)
    _prepare_analysis(rules_dirs)  # while the probes run
    capture = live.finish()
    if job:
        capture.options["job"] = job
    if since:
        capture.options["since"] = since
    apply_site(capture, site)
    if target_path:
        require_target(capture, target_path)
        if bench is not None and (problem := path_problem(capture)) is not None:
            if problem.endswith("ENOENT"):  # nothing to measure: the directory is not there
                raise UserError(f"--path {target_path}: no such file or directory (--bench measures it)")
            capture.notes.append(f"--bench: not run, --path {target_path} {problem}")
        elif bench is not None:
            add_bench(capture, target_path, *bench)
    return analyze_capture(capture, rules_dirs, live.parsed, acknowledgements)


def apply_site(capture: Capture, site: dict[str, Any] | None) -> None:
    """The site config's statements that the status contract reads, put on the capture: ``node:``
    (what the node is meant to use; facts/derived/intent.py) and ``status.count_scopes`` (the
    finding scopes that set the status; report/build.py)."""
    if not site:
        return
    if site.get("node"):
        capture.options["node"] = dict(site["node"])
    scopes = (site.get("status") or {}).get("count_scopes")
    if scopes:
        capture.options["count_scopes"] = list(scopes)


def _prepare_analysis(rules_dirs: Sequence[Path]) -> None:
    """Import the analysis stages and load the rules (docs/performance.md) while
    the capture threads wait on subprocesses, rather than after them. An error in the rules
    surfaces when analyze_capture asks for them again."""
    import gdsdoctor.engine.evaluate
    import gdsdoctor.facts.document
    import gdsdoctor.report.build  # noqa: F401

    with contextlib.suppress(Exception):
        rules(rules_dirs)


BenchProgress = Callable[[float, str], None]


def add_bench(capture: Capture, target_path: str, on_progress: BenchProgress, size_bytes: int | None) -> None:
    """Measure the checkpoint path (fio/gdsio in a temporary directory under it, removed
    afterwards: the one thing gdsdoctor writes on the host, and only when asked) and keep the
    raw result as an artifact, so the analysis and a bundle both carry it."""
    from gdsdoctor.commands import bench_run as bench

    try:
        result = bench.run(Path(target_path), size_bytes, on_progress=on_progress)
    except bench.BenchError as error:
        raise UserError(f"bench: {error}") from None
    section = "fio" if result.artifact.endswith(".json") else "gdsio"
    capture.add(
        section,
        Artifact(result.artifact, ArtifactStatus.OK, result.raw, source=f"gdsdoctor bench {target_path}"),
    )


def require_target(capture: Capture, target_path: str) -> None:
    """A mistyped --path must not silently diagnose some other filesystem. Where ``stat`` on the
    path was captured (probes/path_stat.py) it decides: a path that fails (EIO, ESTALE, a hang)
    is evidence the analysis judges, and one that does not exist is diagnosed through its
    nearest existing parent, which the report names. Without it (no ``stat``), findmnt's
    failure is all there is, and it says the path was not found."""
    if capture.artifacts.get(path_stat.ARTIFACT, _NOT_CAPTURED).status is ArtifactStatus.OK:
        return
    found = capture.artifacts.get(target.ARTIFACT)
    if found is not None and found.status is ArtifactStatus.ERROR and found.exit_code == 1:
        raise UserError(f"--path {target_path}: no such file or directory")


_NOT_CAPTURED = Artifact("", ArtifactStatus.MISSING)


def path_problem(capture: Capture) -> str | None:
    """Why the captured ``stat`` of --path says it cannot be used (fails, hangs, does not
    exist), in words; None when it answered or was not captured."""
    found = capture.artifacts.get(path_stat.ARTIFACT, _NOT_CAPTURED)
    if found.status is not ArtifactStatus.OK:
        return None
    try:
        section = path_stat.parse(found.text, found.name)
    except ParseError:
        return None
    if section["exists"]:
        return None
    return (
        "did not answer stat"
        if section["hung"]
        else f"fails stat with {section['errno'] or section['error']}"
    )


def load_inputs(
    paths: Sequence[Path],
    target_path: str | None = None,
    job: dict[str, Any] | None = None,
    deadline_s: float = DEFAULT_DEADLINE_S,
    since: str | None = None,
) -> Capture:
    """A bundle (a gdsdoctor bundle, a sos report, an nvidia-bug-report log) or any number of
    pasted text files of one host, a folder of them standing for its files; pasted files are
    read within ``deadline_s`` seconds in all (see ``capture_files``)."""
    from gdsdoctor.capture import bundles as kinds  # tarfile: not for `check`
    from gdsdoctor.errors import BundleError

    found = {p: kinds.kind(p) for p in paths}  # each input's kind, asked once (capture/bundles.py)
    bundles = [p for p in paths if found[p]]
    if bundles and len(paths) > 1:
        raise BundleError("give either one bundle or several pasted files, not both")
    doing(f"reading {bundles[0] if bundles else 'the inputs'}")
    if bundles:
        capture = kinds.read(bundles[0], found[bundles[0]])
    else:
        left_out: list[str] = []  # hard links in a folder: named in the notes
        folders = {p: kinds.pasted_files(p, left_out) for p in paths if p.is_dir()}
        files = [f for p in paths for f in folders.get(p, [p])]
        shown = {f: f"{p.name}/{f.relative_to(p)}" for p, found in folders.items() for f in found}
        capture = capture_files(files, deadline_s, shown)
        if folders:
            capture.label = ", ".join(p.name for p in paths)
        capture.notes[:0] = [_folder_note(p, found) for p, found in folders.items()] + left_out
    if target_path:
        capture.options["target_path"] = target_path
    if job:  # over the one a `watch --record` bundle recorded, key by key (--budget alone keeps its params)
        capture.options["job"] = {**(capture.options.get("job") or {}), **job}
    if since:  # overrides the one a bundle's manifest recorded
        capture.options["since"] = since
    return capture


def _folder_note(folder: Path, files: list[Path]) -> str:
    if not files:
        return f"{folder}: an empty folder (no bundle, no pasted file)"
    return f"{folder}: a folder without a manifest, read as {len(files)} pasted file(s)"


def analyze_paths(
    paths: Sequence[Path],
    target_path: str | None = None,
    rules_dirs: Sequence[Path] = (),
    job: dict[str, Any] | None = None,
    deadline_s: float = DEFAULT_DEADLINE_S,
    acknowledgements: Sequence[dict[str, Any]] = (),
    since: str | None = None,
    site: dict[str, Any] | None = None,
) -> Analysis:
    """``analyze``: read the inputs, then analyse them, all within ``deadline_s`` seconds (pasted
    files are read for at most READING_SHARE of it, so what was read is still analysed); past
    it, a DeadlineError names the step not finished. Kernel events before ``since``
    (``--since``) are history."""
    try:
        with analysis_deadline(deadline_s):
            capture = load_inputs(paths, target_path, job, deadline_s * READING_SHARE, since)
            apply_site(capture, site)
            return analyze_capture(capture, rules_dirs, acknowledgements=acknowledgements)
    except DeadlinePassed as passed:
        raise DeadlineError(
            f"not diagnosed: the {deadline_s:g} s deadline passed while {passed} "
            "(a huge or hostile input? --deadline SECONDS gives it longer)"
        ) from None
