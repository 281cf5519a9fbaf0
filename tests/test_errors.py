"""One exception tree: every error gdsdoctor raises on purpose is a GdsdoctorError, and the ones a
user can fix are UserErrors (the CLI's one line and exit 3, the API's documented exception)."""

import pytest

from gdsdoctor import errors
from gdsdoctor.engine.rules import RuleError
from gdsdoctor.signals import Interrupted


@pytest.mark.parametrize(
    "error", [errors.BundleError, errors.EstimateError, errors.BenchError, RuleError, errors.UserError]
)
def test_user_fixable_errors_are_user_errors(error: type[Exception]) -> None:
    assert issubclass(error, errors.UserError)
    assert issubclass(error, errors.GdsdoctorError)


@pytest.mark.parametrize("error", [errors.ParseError, errors.Unavailable])
def test_internal_errors_are_rooted_but_not_user_errors(error: type[Exception]) -> None:
    assert issubclass(error, errors.GdsdoctorError)
    assert not issubclass(error, errors.UserError)


def test_interrupt_stays_a_keyboard_interrupt() -> None:
    assert issubclass(Interrupted, KeyboardInterrupt)
    assert not issubclass(Interrupted, errors.GdsdoctorError)


def test_parse_error_names_its_line() -> None:
    error = errors.ParseError("bad header", line=3)
    assert (str(error), error.reason, error.line) == ("line 3: bad header", "bad header", 3)
