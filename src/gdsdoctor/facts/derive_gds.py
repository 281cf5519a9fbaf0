"""Derived facts for the gds domain (filled in by the gds rules work).

``derive(facts, derived)`` returns new keys for ``facts["derived"]``; it sees the facts and
what is derived so far (nvidia_present, target_mount, checkpoint_mounts).
"""

from __future__ import annotations

from typing import Any


def derive(facts: dict[str, Any], derived: dict[str, Any]) -> dict[str, Any]:
    return {}
