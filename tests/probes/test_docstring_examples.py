"""The probes' docstring examples run: their module docstrings document the facts' shapes
(docs/facts/index.md points to them), so an example that no longer holds is a wrong document.

Run through ``doctest`` on the imported modules rather than pytest's ``--doctest-modules`` over
``src/``: CI installs the package (not editable), and collecting ``src/gdsdoctor/probes/*.py``
beside the installed copy is an import-file mismatch."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import gdsdoctor.probes

MODULES = sorted(m.name for m in pkgutil.iter_modules(gdsdoctor.probes.__path__, "gdsdoctor.probes."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed"


def test_the_documented_shapes_have_examples() -> None:
    attempted = {
        name: doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS).attempted
        for name in ("gdsdoctor.probes.mounts", "gdsdoctor.probes.dmesg", "gdsdoctor.probes.text")
    }
    assert all(count > 0 for count in attempted.values()), attempted
