"""Fitting plain text to the terminal, for every output a person reads (reports, tables, trees,
notes, error lines): lines wrap at word boundaries only (a word, a path or a URL is never cut),
prose stops near 100 columns however wide the terminal, and a table that cannot fit becomes a
list (each row's first cell on its line, the rest indented under it).

The width is ``COLUMNS`` when set, else the terminal's, else 100 (a pipe or a file). A status
line (the last line, which a script may read with ``| tail -1``) is one line on a pipe, and
wraps like prose when a width was asked for (a terminal, or ``COLUMNS``).
"""

from __future__ import annotations

import os
import shutil
import textwrap
from collections.abc import Sequence

DEFAULT_WIDTH = 100  # output that goes to a file or a pipe, with no COLUMNS set
MIN_WIDTH = 30
PROSE_MAX = 100  # a line of prose longer than this is hard to read, whatever the terminal
TABLE_MAX = 120  # a table row: its aligned columns, then prose in the last one
LAST_COLUMN_MIN = 24  # a table wraps its last column only if it keeps at least this much room


def terminal_width() -> int:
    """The width to wrap at: ``COLUMNS`` when set, else the terminal's, else 100 (a pipe)."""
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() else shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    return max(MIN_WIDTH, width) if width > 0 else DEFAULT_WIDTH


def width_was_asked() -> bool:
    """Whether a person set the width (``COLUMNS``) or reads a terminal, rather than a pipe."""
    if os.environ.get("COLUMNS", "").isdigit():
        return True
    try:
        return os.isatty(1)
    except OSError:
        return False


def status_lines(line: str, width: int | None = None) -> list[str]:
    """The status line: whole on a pipe (``| tail -1`` reads all of it), else wrapped between
    words at the prose width, the lines after the first indented."""
    if width is None and not width_was_asked():
        return [line]
    return wrap(line, prose_width(width), "", "  ")


def shell_words(command: str) -> list[str]:
    """``command`` cut at the spaces a shell splits on (outside quotes and after no backslash),
    each piece as written: joined by spaces they give the command back."""
    words, start, quote, escaped = [], 0, "", False
    for index, char in enumerate(command):
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == " ":
            if index > start:
                words.append(command[start:index])
            start = index + 1
    if start < len(command):
        words.append(command[start:])
    return words


def fold_command(command: str, room: int) -> list[str]:
    """A command too long for ``room`` columns as lines a shell reads as the same command: broken
    between words outside quotes, each line but the last ending in `` \\``. A word longer than
    the room (a quoted kernel command line) stands whole on its line: cut, it would not run."""
    if len(command) <= room:
        return [command]
    lines = [""]
    for word in shell_words(command):
        if lines[-1] and len(lines[-1]) + 1 + len(word) + 2 > room:
            lines.append("")
        lines[-1] = f"{lines[-1]} {word}" if lines[-1] else word
    return [line + " \\" for line in lines[:-1]] + lines[-1:]


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
    # the last column is prose: on a wide terminal a row stops near TABLE_MAX, as prose does
    width = min(width, max(TABLE_MAX, fixed + LAST_COLUMN_MIN))
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
