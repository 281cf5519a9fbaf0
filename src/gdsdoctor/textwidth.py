"""Fitting plain text to the terminal, for every output a person reads (reports, tables, trees,
notes, error lines): lines wrap at word boundaries only (a word, a path or a URL is never cut),
prose stops near 100 columns however wide the terminal, and a table that cannot fit becomes a
list (each row's first cell on its line, the rest indented under it).

The width is ``COLUMNS`` when set, else the terminal's, else 100 (a pipe or a file).
"""

from __future__ import annotations

import os
import shutil
import textwrap
from collections.abc import Sequence

DEFAULT_WIDTH = 100  # output that goes to a file or a pipe, with no COLUMNS set
MIN_WIDTH = 30
PROSE_MAX = 100  # a line of prose longer than this is hard to read, whatever the terminal
LAST_COLUMN_MIN = 24  # a table wraps its last column only if it keeps at least this much room


def terminal_width() -> int:
    """The width to wrap at: ``COLUMNS`` when set, else the terminal's, else 100 (a pipe)."""
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() else shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    return max(MIN_WIDTH, width) if width > 0 else DEFAULT_WIDTH


def prose_width(width: int | None = None) -> int:
    return min(width or terminal_width(), PROSE_MAX)


def wrap(text: str, width: int, indent: str = "", subsequent: str | None = None) -> list[str]:
    """``text`` in lines of at most ``width`` columns, broken between words only: a word longer
    than the line (a URL, a path) stands alone on its line, whole."""
    lines = textwrap.wrap(
        text,
        width=max(width, len(indent) + 1),
        initial_indent=indent,
        subsequent_indent=indent if subsequent is None else subsequent,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return lines or [indent.rstrip()]


def fit_lines(lines: Sequence[str], width: int, hanging: int = 4) -> list[str]:
    """Plain indented lines (a rule, an explanation) fitted to ``width``: each wrapped between
    words, its continuation indented ``hanging`` columns more than the line itself. A command
    (``$ ...``) and a line with a URL stay whole: they are copied, not read."""
    fitted: list[str] = []
    for line in lines:
        body = line.lstrip(" ")
        if len(line) <= width or body.startswith("$ ") or "://" in line:
            fitted.append(line)
            continue
        indent = line[: len(line) - len(body)]
        fitted += wrap(body, width, indent, indent + " " * hanging)
    return fitted


def table(rows: Sequence[Sequence[str]], width: int | None = None, gap: str = "  ") -> list[str]:
    """Rows in aligned columns when they fit in ``width`` (the last column wrapped in its own
    column when only it is too long), else as a list: the first cell on its line, the other
    cells after it, indented and wrapped. A row whose first cell is empty continues the one
    above it (a fallback, a second source)."""
    width = width or terminal_width()
    if not rows:
        return []
    count = max(len(row) for row in rows)
    cells = [[*row, *[""] * (count - len(row))] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(count - 1)]
    fixed = sum(widths) + len(gap) * (count - 1)
    if fixed + max(len(row[-1]) for row in cells) <= width or width - fixed >= LAST_COLUMN_MIN:
        lines = []
        for row in cells:
            head = gap.join(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)) + gap
            if not row[-1]:
                lines.append(head.rstrip())
                continue
            body = wrap(row[-1], width - fixed) if fixed + len(row[-1]) > width else [row[-1]]
            lines.append(head + body[0])
            lines += [" " * fixed + more for more in body[1:]]
        return lines
    lines = []
    for row in cells:
        if row[0].strip():
            lines.append(row[0].rstrip())
        rest = gap.join(cell for cell in row[1:] if cell)
        if rest:
            lines += wrap(rest, width, indent="    ")
    return lines
