"""Generated documentation stays current: the probe list and the rule catalogue."""

from __future__ import annotations

from pathlib import Path

from gdsdoctor.commands.catalogue import render_catalogue
from gdsdoctor.commands.explain import probes_markdown
from gdsdoctor.pipeline import rules

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_probe_list_is_current() -> None:
    assert (DOCS / "probes.md").read_text() == probes_markdown(), (
        "docs/probes.md is stale: run `gdsdoctor probes --format markdown > docs/probes.md`"
    )


def test_rule_catalogue_is_current() -> None:
    assert (DOCS / "catalogue.md").read_text() == render_catalogue(rules(), "markdown"), (
        "docs/catalogue.md is stale: run `gdsdoctor rules list --format markdown > docs/catalogue.md`"
    )


def test_every_facts_section_is_documented() -> None:
    documented = " ".join(p.read_text() for p in (DOCS / "facts").glob("*.md"))
    from gdsdoctor.facts.document import ANALYSED_PROBES

    missing = [p.section for p in ANALYSED_PROBES if f"`{p.section}`" not in documented]
    assert missing == [], f"sections without a page in docs/facts/: {missing}"
