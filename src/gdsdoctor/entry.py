"""The process entry point: the `gdsdoctor` script and ``python -m gdsdoctor``."""

from __future__ import annotations

import sys
from typing import NoReturn

from gdsdoctor import collector


def main() -> NoReturn:
    """Run the command line as the whole process. For `check` and `analyze` (one report, then
    exit) the garbage collector is held from here, before the command line's own imports,
    which are most of what it would otherwise walk again and again (gdsdoctor.collector)."""
    if sys.argv[1:2] in (["check"], ["analyze"]):
        collector.hold()
    from gdsdoctor.cli import main as command_line  # after the hold: the hold is for its imports

    command_line()
