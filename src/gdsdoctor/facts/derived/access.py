"""Reading the facts inside a derivation: a section only when it was read (``ok``), and each
field through a reader that checks its type, because facts come from bundles of any version and
from files a user pasted."""

from __future__ import annotations

from typing import Any


def ok_section(facts: dict[str, Any], section: str) -> dict[str, Any]:
    """The section when its status is ``ok``; else an empty dict (missing or failed sources)."""
    value = facts.get(section)
    return value if isinstance(value, dict) and value.get("status") == "ok" else {}


def items(section: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The dicts of a list field of ``section``."""
    return dicts(section.get(key))


def txt(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def num(value: Any) -> int | float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in as_list(value) if isinstance(item, dict)]


def strs(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
