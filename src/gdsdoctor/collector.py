"""The garbage collector held while a one-report command starts (docs/performance.md).

What `check` and `analyze` allocate until their rules are loaded is mostly the program itself:
the modules, classes and functions of the analysis stages, and the 155 causes with the syntax
trees of their 940 expressions. All of it lives until the process exits, and none of it is
garbage, yet the collector walks it again at each of its collections while it is being built
(16 ms of a 255 ms sos report analysis, a sixth of what gdsdoctor itself adds to the
interpreter). So the process entry point holds the collector for those two commands, and once
the rules are loaded it moves everything alive into the permanent generation (``gc.freeze``,
made for this) and lets the collector run again, for the analysis's own garbage only.

Only the process entry point holds it (``gdsdoctor.cli.main``): a program calling ``run`` or the
pipeline (the tests, a fleet worker started without it) keeps its collector as it was, and
``loaded`` is then a no-op. A command that fails before its rules are loaded ends the process
with the collector still held, which costs nothing: nothing is left to collect for.
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
