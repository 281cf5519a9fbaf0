"""JSON renderer: the report document as is (it is already the contract)."""

from __future__ import annotations

import json
from typing import Any


def render_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=False, ensure_ascii=True) + "\n"
