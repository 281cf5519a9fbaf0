"""The operator's own files (``--site-config``, the rule files of ``--rules-dir``): read as the
host-root readers read, and parsed as YAML without aliases.

A path given on the command line may be a fifo nobody writes to (an open would block for ever),
``/dev/zero`` (a read never ends) or a file of gigabytes: only a regular file is read, opened
``O_NONBLOCK`` and checked by ``fstat`` first, and never more than ``MAX_CONFIG_BYTES``. A YAML
alias lets 500 bytes stand for gigabytes once expanded ("billion laughs"): a configuration has
no use for them, so any alias is refused, whatever it expands to.
"""

from __future__ import annotations

import datetime
import os
import stat
from pathlib import Path
from typing import Any

from gdsdoctor.errors import UserError

MAX_CONFIG_BYTES = 1024 * 1024


def read_config_text(path: Path, what: str, limit: int = MAX_CONFIG_BYTES) -> str:
    """The text of a regular file of at most ``limit`` bytes (``MAX_CONFIG_BYTES``); anything
    else is a UserError (but ``/dev/null``, the usual way to say "no config": empty)."""
    if str(path) == os.devnull:
        return ""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise UserError(f"{path}: no such {what} file") from None
    except OSError as error:
        raise UserError(f"{path}: cannot read {what} ({error.strerror or type(error).__name__})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UserError(f"{path}: {what} is not a regular file")
        if info.st_size > limit:
            raise UserError(f"{path}: {what} is larger than {limit // 1024} KiB")
        chunks, size = [], 0
        while size <= limit and (chunk := os.read(fd, min(limit + 1 - size, 1 << 20))):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as error:
        raise UserError(f"{path}: cannot read {what} ({error.strerror or type(error).__name__})") from None
    finally:
        os.close(fd)
    if size > limit:  # it grew after fstat
        raise UserError(f"{path}: {what} is larger than {limit // 1024} KiB")
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{path}: {what} is not UTF-8 text") from None


class YamlAliasError(ValueError):
    """A YAML alias (``*name``), or a value no rule or setting can hold: refused in every file
    gdsdoctor loads, at its line, before anything is built (``_refuse_shapes``)."""

    def __init__(self, line: int, message: str = "YAML aliases (*name) are not allowed") -> None:
        super().__init__(message)
        self.line = line


# What a configuration never needs and what broke every run before: lists nested 990 deep
# (the recursive builders and validators: RecursionError), an integer of 5,000 digits (Python
# refuses to convert more than 4,300), .nan or .inf (a certainty of .nan passed every range
# check), a date that is none (2026-02-30: ValueError while building the document).
MAX_YAML_DEPTH = 64
MAX_INTEGER_DIGITS = 100
_INT_TAG, _FLOAT_TAG = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


def parse_yaml(text: str) -> tuple[Any, Any]:
    """(the node tree, for line numbers; the document built from it). Raises yaml.YAMLError on
    bad YAML and YamlAliasError on an alias or a value out of shape, before anything is built."""
    import yaml

    # libyaml when present: the pure-Python loader costs ~30x more.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:  # the pure-Python composer recurses once a level
            raise YamlAliasError(0, f"nested more than {MAX_YAML_DEPTH} levels deep") from None
        if node is not None:
            _refuse_shapes(node)
        return node, (loader.construct_document(node) if node is not None else None)
    finally:
        loader.dispose()


def _refuse_shapes(root: Any) -> None:
    """Walk the node tree once, without recursion: an alias is a node met twice (the composer
    shares it: walked once each, by identity, so a bomb costs its size in the file, not its
    expansion); nesting, integers, floats and dates are checked as ``MAX_YAML_DEPTH`` says."""
    import yaml

    seen: set[int] = set()
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        line = node.start_mark.line + 1
        if id(node) in seen:
            raise YamlAliasError(line)
        seen.add(id(node))
        if depth > MAX_YAML_DEPTH:
            raise YamlAliasError(line, f"nested more than {MAX_YAML_DEPTH} levels deep")
        if isinstance(node, yaml.SequenceNode):
            stack.extend((item, depth + 1) for item in node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend((item, depth + 1) for pair in node.value for item in pair)
        elif (problem := _scalar_problem(node.tag, str(node.value))) is not None:
            raise YamlAliasError(line, problem)


def _scalar_problem(tag: str, value: str) -> str | None:
    if tag == _INT_TAG and sum(c.isdigit() for c in value) > MAX_INTEGER_DIGITS:
        return f"an integer of more than {MAX_INTEGER_DIGITS} digits"
    if tag == _FLOAT_TAG and value.lstrip("+-").lower() in (".nan", ".inf"):
        return f"{value} is not a number a setting can hold"
    if tag == _TIMESTAMP_TAG:
        year, month, day = [*value.split("-", 2), "", ""][:3]
        try:  # YAML's dates are YYYY-M-D at least (2026-2-3 too), a time may follow the day
            datetime.date(int(year), int(month), int(day[:2].rstrip("Tt ")))
        except ValueError:
            return f"{value[:40]} is not a date"
    return None
