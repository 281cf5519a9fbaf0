"""The garbage collector held while a one-report command starts (gdsdoctor.collector): held
by the process entry point (gdsdoctor.entry) for `check` and `analyze` only, from before the
command line's imports, released (the loaded program frozen) once the rules are loaded, and
never touched for a program that calls ``run`` or the pipeline itself. Each case runs in a
fresh interpreter, as the entry point does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"

# The entry point, with the process exit replaced by a line saying how the collector stands
# at the end of the command, and (for `replace_run`) the command replaced by that same line.
_STATE = "print('enabled' if gc.isenabled() else 'held', 'frozen' if gc.get_freeze_count() else 'unfrozen')"
_SETUP = (
    "import gc, sys; import gdsdoctor.cli.app as app; from gdsdoctor.entry import main;"
    f"app.exit_now = lambda code: {_STATE};"
    "sys.argv = ['gdsdoctor', *sys.argv[1:]];"
)


def _entry_point(*argv: str, replace_run: bool = False) -> str:
    code = _SETUP + (f"app.run = lambda argv: {_STATE} or 0;" if replace_run else "") + "main()"
    result = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120, check=False
    )
    return result.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("analyze", "held unfrozen"),
        ("check", "held unfrozen"),
        ("watch", "enabled unfrozen"),
        ("--version", "enabled unfrozen"),
    ],
)
def test_the_entry_point_holds_the_collector_for_one_report_commands_only(
    command: str, expected: str
) -> None:
    """watch runs for hours, collect and redact never load rules: they keep the collector."""
    assert _entry_point(command, replace_run=True) == expected


def test_an_analysis_collects_again_once_its_rules_are_loaded() -> None:
    """The real command: at its end the collector runs, over what was not frozen."""
    pasted = DATA / "dmesg" / "dmesg-nvme-data-transfer-error-blk-update-request.txt"
    assert _entry_point("analyze", str(pasted)) == "enabled frozen"


def test_a_command_that_fails_before_its_rules_load_ends_with_the_collector_held() -> None:
    """Nothing was loaded to freeze; the process ends at once (exit 3, one line)."""
    assert _entry_point("analyze", "/nonexistent/bundle.tar.gz") == "held unfrozen"


def test_a_program_calling_the_pipeline_keeps_its_collector() -> None:
    """The tests, the API, a fleet worker: ``loaded`` does nothing where nothing was held."""
    code = (
        "import gc; from gdsdoctor.pipeline import rules; rules();"
        "print(gc.isenabled(), gc.get_freeze_count())"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.split() == ["True", "0"]


def test_the_hold_comes_before_the_command_line_is_imported() -> None:
    """typer and rich are most of what the collector would walk: the script's own entry point
    (as pip writes it) holds it before importing them."""
    spy = (
        "import gc, sys\n"
        "class Spy:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'typer':\n"
        "            print('typer imported with the collector', 'running' if gc.isenabled() else 'held')\n"
        "sys.meta_path.insert(0, Spy())\n"
        "from importlib.metadata import entry_points\n"
        "(script,) = [e for e in entry_points(group='console_scripts') if e.name == 'gdsdoctor']\n"
        "sys.argv = ['gdsdoctor', *sys.argv[1:]]\n"
        "script.load()()\n"
    )
    for command, expected in (("analyze", "held"), ("--version", "running")):
        result = subprocess.run(
            [sys.executable, "-c", spy, command, "/nonexistent"], capture_output=True, text=True, timeout=120
        )
        assert f"typer imported with the collector {expected}" in result.stdout.splitlines()
