"""The operator's own files (``--site-config``, the rule files of ``--rules-dir``): read as the
host-root readers read, and parsed as YAML without aliases.

A path given on the command line may be a fifo nobody writes to (an open would block for ever),
``/dev/zero`` (a read never ends) or a file of gigabytes: only a regular file is read, opened
``O_NONBLOCK`` and checked by ``fstat`` first, and never more than ``MAX_CONFIG_BYTES``. A YAML
alias lets 500 bytes stand for gigabytes once expanded ("billion laughs"): a configuration has
no use for them, so any alias is refused, whatever it expands to.
"""

from __future__ import annotations

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
    """A YAML alias (``*name``): refused in every file gdsdoctor loads."""

    def __init__(self, line: int) -> None:
        super().__init__("YAML aliases (*name) are not allowed")
        self.line = line


def parse_yaml(text: str) -> tuple[Any, Any]:
    """(the node tree, for line numbers; the document built from it). Raises yaml.YAMLError on
    bad YAML and YamlAliasError on an alias, before anything is expanded."""
    import yaml

    # libyaml when present: the pure-Python loader costs ~30x more.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        if node is not None:
            _refuse_aliases(node)
        return node, (loader.construct_document(node) if node is not None else None)
    finally:
        loader.dispose()


def _refuse_aliases(root: Any) -> None:
    """An alias is a node met twice in the tree (the composer shares it): walked once each, by
    identity, so a bomb costs its size in the file, not its expansion."""
    import yaml

    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            raise YamlAliasError(node.start_mark.line + 1)
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend(item for pair in node.value for item in pair)
