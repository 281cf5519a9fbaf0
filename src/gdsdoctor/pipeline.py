"""One engine, two front doors: live capture and offline inputs run the same analysis.

``check`` = capture live → analyse; ``analyze`` = read a bundle or pasted files → analyse.
Both go capture → facts → evaluate → rank → report, so ``analyze(collect())`` equals
``check()`` on the same host state.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from gdsdoctor.capture.bundle import BundleError, read_bundle
from gdsdoctor.capture.capture import Capture
from gdsdoctor.capture.detect import capture_files
from gdsdoctor.capture.live import DEFAULT_DEADLINE_S, capture_live
from gdsdoctor.engine.evaluate import CauseResult, evaluate
from gdsdoctor.engine.rank import RankedFinding, rank
from gdsdoctor.engine.rules import Cause, builtin_rules_dir, load_rules, rule_files
from gdsdoctor.facts.document import ANALYSED_PROBES, build_facts
from gdsdoctor.model import Artifact, ArtifactStatus, UserError
from gdsdoctor.probes import target
from gdsdoctor.report.build import build_report

KNOWN_SECTIONS = frozenset({p.section for p in ANALYSED_PROBES} | {"derived", "job"})
HOW_TO_COLLECT = {p.section: p.how_to_collect() for p in ANALYSED_PROBES} | {
    "job": "`--params 70B` (with --preset/--interval/--budget/--gpus as needed)"
}


@dataclass
class Analysis:
    capture: Capture
    facts: dict[str, Any]
    results: list[CauseResult]
    ranked: list[RankedFinding]
    report: dict[str, Any]

    @property
    def exit_code(self) -> int:
        return int(self.report["summary"]["exit_code"])


def rules(rules_dirs: Sequence[Path] = ()) -> list[Cause]:
    """The rules, loaded and checked once per process for as long as no rule file changes
    (a fleet run analyses hundreds of bundles; validating YAML for each costs more than the
    analysis itself)."""
    return list(_loaded_rules(tuple(rules_dirs), _rule_files_state(rules_dirs)))


def _rule_files_state(rules_dirs: Sequence[Path]) -> tuple[tuple[str, int, int], ...]:
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
def _loaded_rules(
    rules_dirs: tuple[Path, ...], _state: tuple[tuple[str, int, int], ...]
) -> tuple[Cause, ...]:
    return tuple(load_rules(rules_dirs, KNOWN_SECTIONS))


def _preload_rules(rules_dirs: Sequence[Path]) -> None:
    with contextlib.suppress(Exception):
        rules(rules_dirs)


def analyze_capture(capture: Capture, rules_dirs: Sequence[Path] = ()) -> Analysis:
    facts = build_facts(capture)
    results = evaluate(rules(rules_dirs), facts, HOW_TO_COLLECT)
    ranked = rank(results)
    return Analysis(capture, facts, results, ranked, build_report(capture, facts, results, ranked))


def check(
    host_root: Path = Path("/"),
    target_path: str | None = None,
    rules_dirs: Sequence[Path] = (),
    deadline_s: float = DEFAULT_DEADLINE_S,
    job: dict[str, Any] | None = None,
    bench: tuple[BenchProgress, int | None] | None = None,
) -> Analysis:
    """Capture this host and analyse it; ``job`` describes the checkpoint (``{"params": "70B"}``).

    With ``bench`` (a progress callback and a size in bytes or None for the default) and a
    ``target_path``, the checkpoint path is also measured (see :func:`add_bench`)."""
    # Capture waits on subprocesses and files; load the rules meanwhile (an error in them
    # surfaces below, when analyze_capture asks for the rules again).
    preload = threading.Thread(target=_preload_rules, args=(rules_dirs,), daemon=True)
    preload.start()
    capture = capture_live(host_root, target_path, deadline_s=deadline_s)
    preload.join()
    if job:
        capture.options["job"] = job
    if target_path:
        _require_target(capture, target_path)
        if bench is not None:
            add_bench(capture, target_path, *bench)
    return analyze_capture(capture, rules_dirs)


BenchProgress = Callable[[float, str], None]


def add_bench(capture: Capture, target_path: str, on_progress: BenchProgress, size_bytes: int | None) -> None:
    """Measure the checkpoint path (fio/gdsio in a temporary directory under it, removed
    afterwards: the one thing gdsdoctor writes on the host, and only when asked) and keep the
    raw result as an artifact, so the analysis and a bundle both carry it."""
    from gdsdoctor import bench

    try:
        result = bench.run(Path(target_path), size_bytes, on_progress=on_progress)
    except bench.BenchError as error:
        raise UserError(f"bench: {error}") from None
    section = "fio" if result.artifact.endswith(".json") else "gdsio"
    capture.add(
        section,
        Artifact(result.artifact, ArtifactStatus.OK, result.raw, source=f"gdsdoctor bench {target_path}"),
    )


def _require_target(capture: Capture, target_path: str) -> None:
    """A mistyped --path must not silently diagnose some other filesystem."""
    found = capture.artifacts.get(target.ARTIFACT)
    if found is not None and found.status is ArtifactStatus.ERROR and found.exit_code == 1:
        raise UserError(f"--path {target_path}: no such file or directory")


def is_bundle(path: Path) -> bool:
    if path.is_dir():
        return (path / "manifest.json").is_file() or any(path.glob("*/manifest.json"))
    return path.name.endswith((".tar.gz", ".tgz", ".tar"))


def load_inputs(
    paths: Sequence[Path], target_path: str | None = None, job: dict[str, Any] | None = None
) -> Capture:
    """A bundle (directory or archive) or any number of pasted text files of one host."""
    bundles = [p for p in paths if is_bundle(p)]
    if bundles and len(paths) > 1:
        raise BundleError("give either one bundle or several pasted files, not both")
    capture = read_bundle(bundles[0]) if bundles else capture_files(paths)
    if target_path:
        capture.options["target_path"] = target_path
    if job:
        capture.options["job"] = job
    return capture


def analyze_paths(
    paths: Sequence[Path],
    target_path: str | None = None,
    rules_dirs: Sequence[Path] = (),
    job: dict[str, Any] | None = None,
) -> Analysis:
    return analyze_capture(load_inputs(paths, target_path, job), rules_dirs)
