"""Node names of a fleet summary: keys made from the host and the bundle file, afresh on every
summary, so that a merge of merges names nodes as one run would (commands/fleet.py)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any


def unique_names(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Node names are keys, made from the host and the bundle file, afresh on every summary
    (so a merge of merges names nodes as one run would): the host alone when it is unique,
    else ``host (bundle file)`` with as much of the bundle's path as tells them apart. The very
    same record twice (a shard merged twice) counts once."""
    distinct: dict[str, dict[str, Any]] = {}
    for node in nodes:
        node = {**node, "host": _host_of(node)}
        distinct.setdefault(_record_key(node), node)
    by_host: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for node in distinct.values():
        by_host[node["host"]].append(node)
    named = []
    for host, members in by_host.items():
        labels = _shortest_distinct_suffixes([str(n["bundle"]) for n in members])
        for node, label in zip(members, labels, strict=True):
            name = host if host and len(members) == 1 else f"{host} ({label})" if host else label
            named.append({**node, "name": name})
    return sorted(named, key=lambda n: (n["name"], n["bundle"]))


def _host_of(node: dict[str, Any]) -> str:
    """The host of a record; a summary from before records kept it had only the name, with
    ``#N`` counters appended to repeated hosts."""
    if "host" in node:
        return str(node["host"] or "")
    return "" if node.get("error") else _without_counters(str(node["name"]))


def _without_counters(name: str) -> str:
    """``gpu001#2#3`` -> ``gpu001`` (a loop, not ``(#\\d+)+$``: that is retried from every ``#``)."""
    head, mark, counter = name.rpartition("#")
    while mark and counter.isdecimal():
        name = head
        head, mark, counter = name.rpartition("#")
    return name


def _record_key(node: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in node.items() if k != "name"}, sort_keys=True, default=str)


def _shortest_distinct_suffixes(paths: list[str]) -> list[str]:
    """For each path, its last components, as few as tell it apart from the others."""
    parts = [Path(p).parts or (p,) for p in paths]
    for depth in range(1, max(len(p) for p in parts) + 1):
        labels = ["/".join(p[-depth:]) for p in parts]
        if len(set(labels)) == len(labels):
            return labels
    return [f"{label} #{i}" for i, label in enumerate(paths, start=1)]
