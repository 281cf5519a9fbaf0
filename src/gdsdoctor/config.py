"""The site config: one YAML file every diagnosing command reads, so that units run by NPD,
Slurm or a Prometheus timer need no flags.

Which file: ``--site-config FILE`` when given; else ``$GDSDOCTOR_CONFIG`` when set (a file
that must exist); else ``/etc/gdsdoctor/config.yaml`` when it exists; ``--no-config`` reads
none of the default ones. Keys::

    checkpoint:            # the checkpoint job, as --params/--preset/--interval/--budget/--gpus
      params: 70B
    acknowledge:           # known findings a site has decided to live with, for a while
      - id: nvme-io-timeouts          # a cause id, or a glob (nvmeof-*)
        device: nvme3                  # optional: only when the evidence names it (glob)
        mount: /scratch                # optional: only when the evidence names it or a path below
        host: gpu0[0-4]*               # optional: only on these hosts (glob of the host name)
        reason: RMA open, ticket 4711  # required: shown beside the finding
        until: 2026-03-31              # optional: it expires after that day (a warning then)
    node:                  # what this node is meant to use; wins over what the evidence shows
      gds: required        # required | optional | unused (also nvmeof, storage_rdma)
    status:
      count_scopes: [node, shared]   # the finding scopes that set the status (default [node])

A key gdsdoctor does not know is an error naming the closest known key (``parms: 70B`` would
otherwise leave the job unjudged), and a YAML error gives its line and column. Acknowledging is
the one way to silence a built-in cause: a site rule reusing its id is refused.
"""

from __future__ import annotations

import datetime as dt
import difflib
import os
from pathlib import Path
from typing import Any

from gdsdoctor.compat import iso_date
from gdsdoctor.errors import UserError

DEFAULT_PATH = Path("/etc/gdsdoctor/config.yaml")
ENV_VAR = "GDSDOCTOR_CONFIG"
TOP_KEYS = ("checkpoint", "acknowledge", "node", "status")
# The capabilities a node may state (facts/derived/intent.py) and what it may say of each.
NODE_KEYS = ("gds", "nvmeof", "storage_rdma")
NODE_VALUES = ("required", "optional", "unused")
STATUS_KEYS = ("count_scopes",)
SCOPES = ("node", "shared", "job")
JOB_KEYS = (
    "params",
    "preset",
    "interval",
    "budget",
    "gpus",
    "checkpoints_kept",
    "gpus_per_node",
    "async_buffers",
    "save",
    "memlock",
)
ACK_KEYS = ("id", "device", "mount", "host", "reason", "until")


def config_path(site_config: Path | None, no_config: bool = False) -> Path | None:
    """The file to read: ``--site-config``, else ``$GDSDOCTOR_CONFIG``, else the default file
    when it exists; None with ``no_config`` and no ``--site-config``, or when there is none."""
    if site_config is not None:
        return site_config
    if no_config:
        return None
    named = os.environ.get(ENV_VAR)
    if named:
        return Path(named)  # named on purpose: it must exist (read_config says so)
    return DEFAULT_PATH if DEFAULT_PATH.is_file() else None


def read_config(path: Path | None) -> dict[str, Any]:
    """The checked config of ``path`` (``{}`` for None): ``checkpoint`` (a dict) and
    ``acknowledge`` (a list of dicts with ``until`` as a date or None)."""
    if path is None:
        return {}
    document = _load_yaml(path)
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise UserError(f"{path}: expected a mapping with the keys {', '.join(f'`{k}:`' for k in TOP_KEYS)}")
    _known_keys(path, "", document, TOP_KEYS)
    config: dict[str, Any] = {}
    if "checkpoint" in document:
        config["checkpoint"] = _job(path, document["checkpoint"])
    if "acknowledge" in document:
        config["acknowledge"] = _acknowledgements(path, document["acknowledge"])
    if "node" in document:
        config["node"] = _node(path, document["node"])
    if "status" in document:
        config["status"] = _status(path, document["status"])
    return config


def statements(site: Any, where: str = "site") -> dict[str, Any]:
    """The ``node:`` and ``status:`` of a site config given as a mapping (the Python API's
    ``site=``), checked as a file's are."""
    if not site:
        return {}
    if not isinstance(site, dict):
        raise UserError(f"{where}: expected a mapping with `node:` and `status:`")
    _known_keys(Path(where), "", site, ("node", "status"))
    checked: dict[str, Any] = {}
    if "node" in site:
        checked["node"] = _node(Path(where), site["node"])
    if "status" in site:
        checked["status"] = _status(Path(where), site["status"])
    return checked


def _node(path: Path, node: Any) -> dict[str, str]:
    """``node:``: each capability stated as required, optional or unused."""
    if not isinstance(node, dict):
        raise UserError(f"{path}: expected a mapping `node:` with {', '.join(NODE_KEYS)}")
    _known_keys(path, "node.", node, NODE_KEYS)
    for key, value in node.items():
        if value not in NODE_VALUES:
            raise UserError(f"{path}: node.{key} {value!r}: expected one of {', '.join(NODE_VALUES)}")
    return {str(k): str(v) for k, v in node.items()}


def _status(path: Path, status: Any) -> dict[str, Any]:
    """``status:``: ``count_scopes``, the finding scopes that set the status (node always does)."""
    if not isinstance(status, dict):
        raise UserError(f"{path}: expected a mapping `status:` with {', '.join(STATUS_KEYS)}")
    _known_keys(path, "status.", status, STATUS_KEYS)
    scopes = status.get("count_scopes", ["node"])
    if not isinstance(scopes, list) or any(s not in SCOPES for s in scopes) or "node" not in scopes:
        raise UserError(
            f"{path}: status.count_scopes {scopes!r}: a list of {', '.join(SCOPES)} that holds node"
        )
    return {"count_scopes": list(dict.fromkeys(scopes))}


def _load_yaml(path: Path) -> Any:
    import yaml  # not imported by a run without a config file

    from gdsdoctor.config_files import YamlAliasError, parse_yaml, read_config_text

    text = read_config_text(path, "site config")  # a regular file of at most 1 MiB
    try:
        return parse_yaml(text)[1]
    except YamlAliasError as error:
        raise UserError(f"{path}:{error.line}: {error} in a site config") from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise UserError(f"{path}{where}: not valid YAML: {error.problem or error.context}") from None
    except FileNotFoundError:
        raise UserError(f"{path}: no such site config file") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise UserError(f"{path}: cannot read site config ({type(error).__name__})") from None


def _known_keys(path: Path, where: str, mapping: dict[Any, Any], known: tuple[str, ...]) -> None:
    for key in mapping:
        if str(key) not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise UserError(f"{path}: unknown key {where}{key}{hint}; known: {', '.join(known)}")


def _job(path: Path, job: Any) -> dict[str, Any]:
    if not isinstance(job, dict):
        raise UserError(f"{path}: expected a mapping `checkpoint:` with {', '.join(JOB_KEYS)}")
    _known_keys(path, "checkpoint.", job, JOB_KEYS)
    return {str(k): v for k, v in job.items()}


def _acknowledgements(path: Path, entries: Any) -> list[dict[str, Any]]:
    if not isinstance(entries, list):
        raise UserError(f"{path}: `acknowledge:` is a list of mappings (- id: CAUSE, reason: WHY)")
    checked = []
    for index, entry in enumerate(entries):
        where = f"acknowledge[{index}]"
        if not isinstance(entry, dict):
            raise UserError(f"{path}: {where} is a mapping (id: CAUSE, reason: WHY)")
        _known_keys(path, f"{where}.", entry, ACK_KEYS)
        for key in ("id", "reason"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise UserError(f"{path}: {where}.{key} is required (a string)")
        for key in ("device", "mount", "host"):
            if key in entry and not isinstance(entry[key], str):
                raise UserError(f"{path}: {where}.{key} is a string")
        checked.append(
            {**{k: entry.get(k) for k in ACK_KEYS}, "until": _date(path, where, entry.get("until"))}
        )
    return checked


def _date(path: Path, where: str, value: Any) -> dt.date | None:
    """``until``: a YAML date (2026-03-31) or the same as a string."""
    if value is None or (isinstance(value, dt.date) and not isinstance(value, dt.datetime)):
        return value
    if isinstance(value, dt.datetime):
        return value.date()
    try:
        return iso_date(str(value))
    except ValueError:
        raise UserError(f"{path}: {where}.until {value!r}: expected a date, YYYY-MM-DD") from None
