"""What several commands share: inputs that must exist, sizes given on the command line, and
the progress bar of a measurement (``check --bench``, ``bench``)."""

import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path

from gdsdoctor.errors import UserError


def existing(paths: Sequence[Path]) -> list[Path]:
    """Inputs named on the command line must exist: a typo is one line, not an empty report."""
    for path in paths:
        if not path.exists():
            raise UserError(f"{path}: no such file or directory")
    return list(paths)


def size_of(text: str) -> int:
    from gdsdoctor.checkpoint.stall import parse_size

    return parse_size(text)


def progress_bar():  # type: ignore[no-untyped-def]
    """A progress callback drawing a bar on stderr when it is a terminal, silent otherwise."""
    if not sys.stderr.isatty():
        return contextlib.nullcontext(lambda fraction, message: None)
    from rich.console import Console
    from rich.progress import Progress

    @contextlib.contextmanager
    def bar():  # type: ignore[no-untyped-def]
        with Progress(console=Console(stderr=True), transient=True) as progress:
            task = progress.add_task("bench", total=1.0)

            def update(fraction: float, message: str) -> None:
                progress.update(task, completed=fraction, description=message[:60])

            yield update

    return bar()
