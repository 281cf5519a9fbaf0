"""The exceptions gdsdoctor raises, in one tree rooted in :class:`GdsdoctorError`.

- :class:`UserError` and its branch are problems the user can fix (a bad input, an unknown id,
  an unreadable bundle, broken site rules, a bad checkpoint job, a benchmark that cannot run, an
  analysis past its ``--deadline``):
  the command line prints their one-line message and exits 3 (UNKNOWN); the API raises them as
  they are.
- :class:`ParseError`: a text is not the format a parser reads. Probes catch it and record the
  section as a parse error; it reaches no user as an exception.
- :class:`Unavailable`: a reader's source does not exist on this host; the capture records the
  source as missing.

``signals.Interrupted`` (Ctrl-C, SIGTERM, SIGHUP) stays a ``KeyboardInterrupt``, outside the tree.
The classes that were ``ValueError``/``RuntimeError`` before the tree keep that base too, so an
``except ValueError`` written against them still catches them.
"""

from __future__ import annotations

from collections.abc import Iterable


class GdsdoctorError(Exception):
    """The root of every exception gdsdoctor raises on purpose."""


class UserError(GdsdoctorError):
    """A problem the user can fix (bad input, unknown id): one line on stderr, exit 3."""


class BundleError(UserError, ValueError):
    """The bundle cannot be read at all (one line, for the user)."""


class EstimateError(UserError, ValueError):
    """Bad input for the checkpoint stall model; the message is one line, fit for the CLI (exit 3)."""


class BenchError(UserError, RuntimeError):
    """The benchmark cannot run or failed; the message is one line, fit for the CLI."""


class DeadlineError(UserError, TimeoutError):
    """``--deadline`` passed before the analysis was done; the message names the step left."""


class ParseError(GdsdoctorError, ValueError):
    """The text is not the format this parser reads (with the line where it went wrong)."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason if line is None else f"line {line}: {reason}")
        self.reason = reason
        self.line = line


class Unavailable(GdsdoctorError):
    """Raised by a reader whose source does not exist on this host (no libudev, say): the
    capture records the source as missing, with the message as the reason."""


class SourceFailed(GdsdoctorError):
    """Raised by a reader whose command ran and failed (``lfs quota`` refused): the capture
    records the source as an error, with the tool's own message as the reason."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean X?)`` for a mistyped name: the choices that begin with it or hold it
    (``fs-errors`` → ``fs-errors-or-shutdown``), else the closest spellings; empty when none is
    near."""
    import difflib

    known = sorted(set(choices))
    near = [c for c in known if c.startswith(word)] or [c for c in known if len(word) >= 3 and word in c]
    near = near or difflib.get_close_matches(word, known, n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(near[:2])}?)" if near else ""
