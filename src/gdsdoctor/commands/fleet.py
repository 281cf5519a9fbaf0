"""Fleet analysis: many bundles at once, in parallel, summarised across nodes.

``gdsdoctor analyze bundles/`` (a directory of bundles, several bundles, or a glob) analyses
every bundle in its own process (bundles are independent) and summarises the fleet:

- each cause with the number and names of the nodes where it fired;
- each shared condition (a full OST: a finding of ``shared`` scope) once, with the nodes that
  see it (fleet_shared.py), apart from the per-cause list;
- nodes grouped by identical diagnosis (the same set of fired causes);
- outliers: nodes whose configuration differs from the majority's, for the keys in
  :data:`CONFIG_KEYS` (JMESPath over the facts; a node without the section has no value and
  is neither majority nor outlier).

The JSON summary is *mergeable*: it keeps one small record per node and everything else is
recomputed from those records, so ``gdsdoctor fleet merge a.json b.json`` over the shards of
a Slurm array job gives the same summary as one run over all bundles.

Captures of one host are never a fleet: when every bundle names one host, ``analyze`` reads
the newest (:func:`one_host`) and points at ``diff``; in a fleet of several hosts, two captures
of one host never make a shared identity (fleet_conflicts.py).

The fleet status is the worst node status, in the order CRITICAL > UNKNOWN > WARNING > OK
(Icinga's "worst state"): one unreadable bundle must not hide a critical node, and must not
look healthy either. A shared condition and a shared identity count once, at their severity:
they do not set any node's status, but they are the fleet's problem.
"""

from __future__ import annotations

import glob
import itertools
import json
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from jmespath.exceptions import JMESPathError

from gdsdoctor import DEFAULT_DEADLINE_S, FLEET_SCHEMA_VERSION, __version__
from gdsdoctor.capture.bundles import is_bundle
from gdsdoctor.commands import fleet_conflicts, fleet_names, fleet_shared
from gdsdoctor.commands.diff import captured_at
from gdsdoctor.engine.functions import search
from gdsdoctor.errors import BundleError, DeadlineError
from gdsdoctor.pipeline import analyze_paths, rules
from gdsdoctor.report.outline import STATUS_STYLE, Bullet, Heading, Line

FLEET_KIND = "gdsdoctor.fleet"
EXIT_CODES = {"OK": 0, "WARNING": 1, "CRITICAL": 2, "UNKNOWN": 3}
WORST_ORDER = ("OK", "WARNING", "UNKNOWN", "CRITICAL")  # later is worse
SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}

# Configuration that should be the same on every node of a fleet: name -> JMESPath over the
# facts (only sections read ``ok`` are visible). Lists are compared as sorted, joined text.
# Sections come from the probes (docs/facts/); add a line to compare one more setting.
CONFIG_KEYS: dict[str, str] = {
    "nvidia_fs_version": "nvidia_fs_version.version",
    "nvidia_driver_version": "nvidia_driver.version",
    "nvme_core_io_timeout_s": "nvme_sysfs.nvme_core.io_timeout_s",
    "mtu": "netdev.interfaces[?virtual != `true`].join('=', [name, to_string(mtu)])",
    "checkpoint_mount_options": (
        "derived.storage.checkpoint_mounts[].join(' ', [mountpoint, fstype, options])"
    ),
}
MIN_NODES_FOR_OUTLIERS = 3


# ---- which inputs are a fleet ------------------------------------------------------------


def expand_inputs(inputs: Sequence[str | Path]) -> list[Path]:
    """Arguments to paths: a glob pattern the shell did not expand is expanded here, and a
    directory that is not itself a bundle but holds bundles stands for those bundles."""
    paths: list[Path] = []
    for raw in inputs:
        text = str(raw)
        if not Path(text).exists() and glob.has_magic(text):
            paths.extend(Path(p) for p in sorted(glob.glob(text)))
            continue
        path = Path(text)
        children = bundles_in(path) if path.is_dir() and not is_bundle(path) else []
        paths.extend(children or [path])
    return paths


def bundles_in(directory: Path) -> list[Path]:
    try:
        return sorted(p for p in directory.iterdir() if is_bundle(p))
    except OSError:
        return []


def is_fleet(paths: Sequence[Path]) -> bool:
    """More than one bundle: analyse each on its own and summarise (unless they are all of one
    host: :func:`one_host`). Asked of the inputs until two are bundles: each question may
    decompress an archive's head (capture/bundles.kind)."""
    return next(itertools.islice((p for p in paths if is_bundle(p)), 1, None), None) is not None


def one_host(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The newest node record when every bundle of a fleet run names one host (captures of
    one node, before and after a change, are never a fleet: ``analyze`` reads the newest and
    ``diff`` compares them); None otherwise. A capture that does not say when it was taken
    counts as the oldest; among equals, the last given."""
    nodes = summary["nodes"]
    hosts = {str(node.get("host") or "").lower() for node in nodes}
    if len(nodes) < 2 or len(hosts) != 1 or "" in hosts:
        return None
    return max(enumerate(nodes), key=lambda item: (str(item[1].get("created") or ""), item[0]))[1]


# ---- one node ----------------------------------------------------------------------------


def config_of(facts: dict[str, Any], keys: dict[str, str] = CONFIG_KEYS) -> dict[str, str | None]:
    visible = {
        name: section
        for name, section in facts.items()
        if name == "derived" or (isinstance(section, dict) and section.get("status") == "ok")
    }
    config: dict[str, str | None] = {}
    for key, expression in keys.items():
        try:
            config[key] = _comparable(search(expression, visible))
        except (JMESPathError, TypeError, ValueError):
            config[key] = None
    return config


def _comparable(value: Any) -> str | None:
    if value is None or value == []:
        return None
    if isinstance(value, list):
        return ", ".join(sorted(str(v) for v in value))
    return str(value)


def node_record(
    path: Path,
    target_path: str | None = None,
    rules_dirs: Sequence[Path] = (),
    job: dict[str, Any] | None = None,
    deadline_s: float = DEFAULT_DEADLINE_S,
    site: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Analyse one bundle, within ``deadline_s`` (``--deadline``: each bundle's, so one slow to
    parse cannot stall the run), into the small record the fleet summary is computed from
    (``site``: the site config's ``node:`` and ``status:``, for every node). Never raises for a
    bad bundle: it becomes an UNKNOWN node with the error."""
    try:
        analysis = analyze_paths([path], target_path, rules_dirs, job, deadline_s, site=site)
    except (BundleError, DeadlineError) as error:
        return _failed_record(path, str(error))
    except Exception as error:  # a bug on one node must not sink the fleet run
        return _failed_record(path, f"internal error: {type(error).__name__}: {error}")
    report = analysis.report
    summary = report["summary"]
    host = report["host"].get("hostname") or ""
    return {
        "name": host or path.name,
        "host": host,
        "bundle": str(path),
        "created": captured_at(report),
        "status": summary["status"],
        "reason": summary["reason"],
        "findings": [f["id"] for f in report["findings"]],
        "inconclusive": [i["id"] for i in report["inconclusive"]],
        "config": config_of(analysis.facts),
        "identity": fleet_conflicts.identity_of(analysis.facts),
        "error": None,
        "causes": {
            f["id"]: {"title": f["title"], "severity": f["severity"], "category": f["category"]}
            for f in report["findings"]
        },
        "scopes": fleet_shared.scopes_of(report["findings"]),
        "subjects": fleet_shared.subjects_of(report["findings"]),
    }


def _failed_record(path: Path, error: str) -> dict[str, Any]:
    return {
        "name": path.name,
        "host": "",
        "bundle": str(path),
        "status": "UNKNOWN",
        "reason": error,
        "findings": [],
        "inconclusive": [],
        "config": {},
        "error": error,
        "causes": {},
    }


# ---- many nodes ---------------------------------------------------------------------------


def _warm(rules_dirs: Sequence[Path]) -> None:
    """Worker start: load and check the rules once per process, not once per bundle."""
    rules(rules_dirs)


Task = tuple[Path, str | None, tuple[Path, ...], dict[str, Any] | None, float, dict[str, Any] | None]


def _analyse_one(args: Task) -> dict[str, Any]:
    return node_record(*args)


def analyse_fleet(
    paths: Sequence[Path],
    target_path: str | None = None,
    rules_dirs: Sequence[Path] = (),
    jobs: int | None = None,
    progress: Callable[[int], None] | None = None,
    job: dict[str, Any] | None = None,
    deadline_s: float = DEFAULT_DEADLINE_S,
    site: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Analyse every bundle (in ``jobs`` processes; default: every core) into a fleet summary;
    ``job`` (the checkpoint job, as for ``check``) and ``site`` (the site config) apply to every
    node, ``deadline_s`` bounds each node's analysis."""
    tasks: list[Task] = [(Path(p), target_path, tuple(rules_dirs), job, deadline_s, site) for p in paths]
    workers = max(1, min(jobs or os.cpu_count() or 1, len(tasks)))
    _warm(rules_dirs)  # a rule error stops here, once, instead of in every worker
    records: list[dict[str, Any]] = []
    for record in _run(tasks, workers, rules_dirs):
        records.append(record)
        if progress:
            progress(1)
    return summarise(records)


def _run(tasks: list[Task], workers: int, rules_dirs: Sequence[Path]) -> Iterator[dict[str, Any]]:
    if workers == 1:
        yield from map(_analyse_one, tasks)
        return
    from gdsdoctor.commands.fleet_workers import run_pool  # multiprocessing: ~15 ms of imports

    yield from run_pool(tasks, workers, _analyse_one, _warm, (tuple(rules_dirs),), _failed_task)


def _failed_task(task: Task, why: str) -> dict[str, Any]:  # a worker killed on this bundle
    return _failed_record(task[0], why)


def summarise(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The fleet summary: node records (the mergeable part) and what is computed from them."""
    nodes = fleet_names.unique_names(list(records))
    catalogue: dict[str, dict[str, str]] = {}
    for node in nodes:
        catalogue.update(node.get("causes", {}))
    statuses = Counter(node["status"] for node in nodes)
    shared = fleet_conflicts.conflicts(nodes)
    conditions = fleet_shared.shared_conditions(nodes, catalogue)
    conflict_statuses = [fleet_conflicts.STATUS_OF[row["severity"]] for row in shared]
    conflict_statuses += [fleet_shared.STATUS_OF[row["severity"]] for row in conditions]
    worst = max(
        [node["status"] for node in nodes] + conflict_statuses, key=WORST_ORDER.index, default="UNKNOWN"
    )
    return {
        "kind": FLEET_KIND,
        "schema_version": FLEET_SCHEMA_VERSION,
        "tool": {"name": "gdsdoctor", "version": __version__},
        "summary": {
            "nodes": len(nodes),
            "status": worst,
            "exit_code": EXIT_CODES[worst],
            "by_status": {status: statuses.get(status, 0) for status in EXIT_CODES},
        },
        "causes": _causes(nodes, catalogue),
        "shared": conditions,
        "groups": _groups(nodes),
        "outliers": _outliers(nodes),
        "conflicts": shared,
        "nodes": nodes,
    }


def _causes(nodes: list[dict[str, Any]], catalogue: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    where: dict[str, list[str]] = defaultdict(list)
    for node in nodes:
        for cause in fleet_shared.own_findings(node):
            where[cause].append(node["name"])
    rows = [
        {
            "id": cause,
            **catalogue.get(cause, {"title": cause, "severity": "info", "category": "environment"}),
            "count": len(names),
            "nodes": names,
        }
        for cause, names in where.items()
    ]
    return sorted(rows, key=lambda r: (SEVERITY_ORDER.get(r["severity"], 3), -r["count"], r["id"]))


def _groups(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for node in nodes:
        key = ("error",) if node.get("error") else tuple(sorted(fleet_shared.own_findings(node)))
        groups[key].append(node)
    rows = [
        {
            "diagnosis": [] if key == ("error",) else list(key),
            "status": max((n["status"] for n in members), key=WORST_ORDER.index),
            "unreadable": key == ("error",),
            "count": len(members),
            "nodes": [n["name"] for n in members],
        }
        for key, members in groups.items()
    ]
    # worst first (CRITICAL, UNKNOWN, WARNING, OK), then the largest group
    return sorted(rows, key=lambda r: (-WORST_ORDER.index(r["status"]), -r["count"], r["diagnosis"]))


def _outliers(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per config key with a strict majority value: the nodes that differ from it."""
    rows = []
    keys = sorted({key for node in nodes for key in node.get("config", {})})
    for key in keys:
        values = {n["name"]: n["config"][key] for n in nodes if n.get("config", {}).get(key) is not None}
        if len(values) < MIN_NODES_FOR_OUTLIERS:
            continue
        majority, count = Counter(values.values()).most_common(1)[0]
        if count * 2 <= len(values):
            continue  # no majority: a split fleet, not outliers
        odd = [{"node": name, "value": value} for name, value in sorted(values.items()) if value != majority]
        if odd:
            rows.append(
                {
                    "key": key,
                    "majority": majority,
                    "majority_count": count,
                    "of": len(values),
                    "outliers": odd,
                }
            )
    return rows


# ---- merging shards -----------------------------------------------------------------------


def merge(summaries: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """One summary from several (e.g. one per Slurm array task): node records are pooled and
    everything else recomputed, so counts and node lists add up."""
    records: list[dict[str, Any]] = []
    for summary in summaries:
        if not isinstance(summary, dict) or summary.get("kind") != FLEET_KIND:
            raise ValueError(f"not a {FLEET_KIND} summary (make one with `analyze ... --format json`)")
        records.extend(summary.get("nodes", []))
    return summarise(records)


def apply_fail_on(summary: dict[str, Any], fail_on: str | None) -> dict[str, Any]:
    """``--fail-on critical``: a fleet whose worst node is WARNING exits 0 (as for one node)."""
    if fail_on == "critical" and summary["summary"]["status"] == "WARNING":
        return {**summary, "summary": {**summary["summary"], "exit_code": 0, "fail_on": fail_on}}
    if fail_on:
        return {**summary, "summary": {**summary["summary"], "fail_on": fail_on}}
    return summary


def exit_line(summary: dict[str, Any]) -> str:
    head = summary["summary"]
    counts = ", ".join(f"{n} {s}" for s, n in head["by_status"].items() if n)
    worst = f"worst of {plural(head['nodes'], 'node')}: {counts or 'none'}"
    return f"gdsdoctor: exit {head['exit_code']} ({head['status']}, {worst})"


# ---- rendering ----------------------------------------------------------------------------

FLEET_FORMATS = ("text", "json", "markdown")
MAX_NAMES_SHOWN = 8


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(names[:MAX_NAMES_SHOWN])
    return shown + (f" … (+{len(names) - MAX_NAMES_SHOWN})" if len(names) > MAX_NAMES_SHOWN else "")


def outline(summary: dict[str, Any], verbose: bool = False) -> Iterator[Any]:
    """The fleet summary as outline blocks, drawn by the text and Markdown renderers.
    ``verbose`` lists every unreadable bundle (otherwise the first few and how many more)."""
    head = summary["summary"]
    counts = ", ".join(f"{n} {s}" for s, n in head["by_status"].items() if n)
    yield Line(
        (
            (f"gdsdoctor {summary['tool']['version']}", "bold"),
            (f" — fleet of {plural(head['nodes'], 'node')}: {counts}", ""),
        )
    )
    yield Heading(f"Causes ({len(summary['causes'])} fired somewhere)")
    if not summary["causes"]:
        yield Bullet((("none fired on any node", "dim"),))
    for cause in summary["causes"]:
        yield Bullet(
            (
                (cause["severity"].upper(), cause["severity"]),
                ("  ", ""),
                (cause["id"], "bold"),
                (f"  {cause['count']}/{head['nodes']} nodes: ", ""),
                (_names(cause["nodes"]), "dim"),
            )
        )
    yield from fleet_shared.blocks(summary, _names)
    yield Heading(f"Nodes grouped by diagnosis ({plural(len(summary['groups']), 'group')}, worst first)")
    for group in summary["groups"]:
        what = "unreadable bundle" if group["unreadable"] else (", ".join(group["diagnosis"]) or "no finding")
        yield Bullet(
            (
                (f"{group['count']} × ", "bold"),
                (group["status"], STATUS_STYLE[group["status"]]),
                (f"  {what}: ", ""),
                (_names(group["nodes"]), "dim"),
            )
        )
    if summary["outliers"]:
        yield Heading("Outliers (configuration differs from the majority)")
        for row in summary["outliers"]:
            yield Bullet(
                (
                    (row["key"], "bold"),
                    (f"  majority {row['majority']!r} on {row['majority_count']}/{row['of']} nodes", "dim"),
                )
            )
            for odd in row["outliers"][:MAX_NAMES_SHOWN]:
                yield Bullet(((odd["node"], "warning"), (f"  {odd['value']!r}", "code")), indent=2)
            if len(row["outliers"]) > MAX_NAMES_SHOWN:
                more = len(row["outliers"]) - MAX_NAMES_SHOWN
                yield Bullet(((f"… and {more} more (--format json lists all)", "dim"),), indent=2)
    if summary.get("conflicts"):
        yield Heading("Shared identities (must differ between nodes)")
        for row in summary["conflicts"]:
            yield Bullet(
                (
                    (row["severity"].upper(), row["severity"]),
                    ("  ", ""),
                    (row["key"], "bold"),
                    (f"  {row['value']!r} on {row['count']} nodes: ", ""),
                    (_names(row["nodes"]), "dim"),
                )
            )
            yield Bullet(((row["meaning"], "dim"),), indent=2)
    errors = [n for n in summary["nodes"] if n.get("error")]
    if errors:
        yield Heading(f"Unreadable bundles ({len(errors)})")
        shown = errors if verbose else errors[:MAX_NAMES_SHOWN]
        for node in shown:
            yield Bullet(((node["bundle"], "bold"), (f": {node['error']}", "dim")))
        if len(errors) > len(shown):
            yield Bullet(((f"… and {len(errors) - len(shown)} more (-v lists all)", "dim"),))
    yield Line(
        (
            ("Fleet status: ", "bold"),
            (head["status"], STATUS_STYLE[head["status"]]),
            (f" (exit {head['exit_code']}) — worst of {plural(head['nodes'], 'node')}", ""),
            (" and their shared identities" if summary.get("conflicts") else "", ""),
            (" and shared conditions" if summary.get("shared") else "", ""),
        ),
        whole=True,  # the last line, whole: `| tail -1` gives the fleet status
    )


def render(summary: dict[str, Any], fmt: str, color: bool = False, verbose: bool = False) -> str:
    if fmt == "json":
        return json.dumps(summary, indent=2, ensure_ascii=True) + "\n"
    if fmt == "markdown":
        from gdsdoctor.report.markdown import render_markdown_blocks

        return render_markdown_blocks(outline(summary, verbose))
    if fmt == "text":
        from gdsdoctor.report.text import render_blocks

        return render_blocks(outline(summary, verbose), color=color)
    raise ValueError(f"a fleet summary renders as {', '.join(FLEET_FORMATS)}, not {fmt!r}")
