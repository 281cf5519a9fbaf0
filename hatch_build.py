"""Build the parsed, linted rules into the wheel: ``gdsdoctor/rules.json``; and the man page,
``share/man/man1/gdsdoctor.1`` (written from the typer app: gdsdoctor/cli/manpage.py).

An installed ``gdsdoctor`` then loads its built-in rules with one ``json.loads`` (about 1 ms)
instead of parsing the YAML, linting it and compiling 500-odd JMESPath expressions (about
110 ms) at every run. Nothing generated is kept in the source tree: the file is written to a
temporary directory and force-included into the wheel. A source checkout or an editable
install has no such file and reads the YAML under ``rules/``, so an edited rule counts at once.
The build fails when the rules do not lint clean.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class BuiltRulesHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return
        sys.path.insert(0, str(Path(self.root) / "src"))
        from gdsdoctor.engine.rules import BUILT_RULES, lint_rule_set, rules_document
        from gdsdoctor.pipeline import KNOWN_SECTIONS

        rules_dir = Path(self.root) / "rules"
        found = lint_rule_set([rules_dir], KNOWN_SECTIONS)
        issues = found.issues
        if issues:
            listed = "\n".join(map(str, issues))
            raise RuntimeError(f"the rules under {rules_dir} do not lint clean:\n{listed}")
        self._temporary = tempfile.TemporaryDirectory(prefix="gdsdoctor-rules-")
        built = Path(self._temporary.name) / BUILT_RULES
        document = rules_document(rules_dir, found.causes, found.symptoms)
        built.write_text(json.dumps(document, separators=(",", ":")), encoding="utf-8")
        build_data["force_include"][str(built)] = f"gdsdoctor/{BUILT_RULES}"
        # The man page, from the command line itself: installed as PREFIX/share/man/man1/gdsdoctor.1.
        from gdsdoctor.cli.manpage import render

        page = Path(self._temporary.name) / "gdsdoctor.1"
        page.write_text(render(), encoding="ascii")
        build_data["shared_data"][str(page)] = "share/man/man1/gdsdoctor.1"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        temporary = getattr(self, "_temporary", None)
        if temporary is not None:
            temporary.cleanup()
