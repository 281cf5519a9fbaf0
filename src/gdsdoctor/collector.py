"""The garbage collector held while a one-report command starts (docs/performance.md).

What `check` and `analyze` allocate until their rules are loaded is mostly the program itself:
the modules, classes and functions of typer, rich and the analysis stages, and the causes with
the syntax trees of their expressions. All of it lives until the process exits and none of it
is garbage, yet the collector walks it again at each of its collections while it is being
built. So the process entry point (gdsdoctor.entry) holds the collector for those two
commands, before it imports the command line, and once the rules are loaded everything alive
is moved into the permanent generation (``gc.freeze``, made for this) and the collector runs
again, for the analysis's own garbage only.

Only the entry point holds it: a program calling ``run`` or the pipeline (the tests, the API,
a fleet worker) keeps its collector as it was, and ``loaded`` is then a no-op. A command that
fails before its rules are loaded ends the process with the collector still held, which costs
nothing: the process ends at once.
"""

from __future__ import annotations

import gc

_held = False


def hold() -> None:
    """Stop collecting until ``loaded`` (if the collector runs at all)."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def loaded() -> None:
    """The long-lived part of the process is built: freeze it, and collect again."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()
