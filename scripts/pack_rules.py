"""Rebuild the pre-parsed pack of the built-in rules (src/gdsdoctor/engine/builtin_rules.pack.json).

Run after editing anything under rules/: until then the YAML is parsed at every run (correct,
~90 ms slower), and tests/test_rules_pack.py fails to remind you.

    python3 scripts/pack_rules.py
"""

from __future__ import annotations

import sys

from gdsdoctor.engine.rules import builtin_rules_dir, lint_paths, rule_files
from gdsdoctor.engine.rules_pack import PACK_FILE, build_pack, write_pack
from gdsdoctor.pipeline import KNOWN_SECTIONS


def main() -> int:
    rules_dir = builtin_rules_dir()
    causes, issues = lint_paths([rules_dir], KNOWN_SECTIONS)
    if issues:
        print("\n".join(map(str, issues)), file=sys.stderr)
        print("pack_rules: the built-in rules have lint issues; no pack written", file=sys.stderr)
        return 1
    write_pack(build_pack(rules_dir, rule_files([rules_dir]), causes))
    print(f"{PACK_FILE}: {len(causes)} causes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
