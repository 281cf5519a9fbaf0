"""What a new user meets in the first ten minutes on the command line (issue 12), and shell
completion. Each behaviour here was wrong before: a typo read as an empty report, an internal
error, a silent directory, exit 3 from a closed pipe, an ignored misspelt site-config key."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_tree
from tests.test_cli import PROC_MOUNTS, gdsdoctor

MISSING = "/nonexistent/gdsdoctor-input"


def one_line_exit_3(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 3, result.stderr
    assert result.stdout == "" and len(result.stderr.splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


@pytest.mark.parametrize(
    "args",
    [["analyze", MISSING], ["topo", MISSING], ["explain", "ext4-data-journal", MISSING], ["redact", MISSING]],
    ids=lambda args: args[0],
)
def test_an_input_that_does_not_exist_is_one_line(args: list[str]) -> None:
    one_line_exit_3(gdsdoctor(*args), f"{MISSING}: no such file or directory")


def test_redact_into_a_missing_directory_creates_it_and_a_file_there_is_one_line(tmp_path: Path) -> None:
    write_tree(tmp_path, {"mounts.txt": PROC_MOUNTS, "taken": "a file\n"})
    result = gdsdoctor("redact", "--output-dir", str(tmp_path / "new" / "dir"), str(tmp_path / "mounts.txt"))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "new" / "dir").iterdir()) == [
        "mounts.txt.redacted",
        "redaction-map.json",
    ]
    result = gdsdoctor("redact", "--output-dir", str(tmp_path / "taken"), str(tmp_path / "mounts.txt"))
    one_line_exit_3(result, "cannot create")


def test_collect_refuses_a_file_name_that_is_not_a_bundle(tmp_path: Path) -> None:
    """`-o x.json` used to become a directory x.json/ silently."""
    one_line_exit_3(gdsdoctor("collect", "-o", str(tmp_path / "x.json")), "NAME.tar.gz or a directory")
    assert not (tmp_path / "x.json").exists()


def test_collect_names_a_missing_parent(tmp_path: Path) -> None:
    result = gdsdoctor("collect", "-o", str(tmp_path / "no" / "such" / "node.tar.gz"))
    one_line_exit_3(result, f"the directory {tmp_path / 'no' / 'such'} does not exist")
    assert ".partial" not in result.stderr


def test_probes_json_lists_what_each_probe_runs_or_reads() -> None:
    result = gdsdoctor("probes", "--format", "json")
    assert result.returncode == 0, result.stderr
    probes = json.loads(result.stdout)
    modules = next(p for p in probes if any(s["reads"] == "/proc/modules" for s in p["sources"]))
    assert any(s["runs"] == "lsmod" for s in modules["sources"])
    assert {type(p["needs_root"]) for p in probes} == {bool}
    assert any(p["needs_root"] for p in probes) and not all(p["needs_root"] for p in probes)


def test_a_reader_that_stops_early_is_not_an_error() -> None:
    """`estimate … --format json | head -1` exited 3 in 4 of 6 runs: a closed pipe is not an error."""
    command = [sys.executable, "-m", "gdsdoctor", "estimate", "--params", "70B", "--throughput", "1GB/s"]
    for _ in range(4):
        writer = subprocess.Popen(
            [*command, "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert writer.stdout is not None and writer.stderr is not None
        assert writer.stdout.readline().strip() == b"{"  # like head -1: read one line, then go away
        writer.stdout.close()
        assert writer.wait(timeout=60) == 0
        assert writer.stderr.read() == b""


def test_site_config_names_an_unknown_key_and_the_closest_known(tmp_path: Path) -> None:
    (tmp_path / "site.yaml").write_text("checkpoint:\n  parms: 70B\n")
    result = gdsdoctor("analyze", "--site-config", str(tmp_path / "site.yaml"), str(tmp_path / "site.yaml"))
    one_line_exit_3(result, "checkpoint.parms", "did you mean params?")


def test_site_config_yaml_error_gives_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "site.yaml").write_text("checkpoint:\n  params: 70B\n  budget: [2%\n")
    result = gdsdoctor("check", "--site-config", str(tmp_path / "site.yaml"))
    one_line_exit_3(result, f"{tmp_path / 'site.yaml'}:4:1: not valid YAML")


# typer detects the user's shell from the parent processes; this switch (typer's own, for tests)
# makes `--show-completion SHELL` / `--install-completion SHELL` take the shell named instead.
NAMED_SHELL = {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}


def test_bash_completion_script_completes_commands(tmp_path: Path) -> None:
    script = gdsdoctor("--show-completion", "bash", env=NAMED_SHELL)
    assert (
        script.returncode == 0 and "complete -o default -F _gdsdoctor_completion gdsdoctor" in script.stdout
    )
    (tmp_path / "gdsdoctor").write_text(f'#!/bin/sh\nexec {sys.executable} -m gdsdoctor "$@"\n')
    (tmp_path / "gdsdoctor").chmod(0o755)
    (tmp_path / "completion.bash").write_text(script.stdout)
    words = f"source {tmp_path}/completion.bash; COMP_WORDS=(gdsdoctor ru); COMP_CWORD=1"
    asked = subprocess.run(
        ["bash", "-c", f'{words}; _gdsdoctor_completion gdsdoctor; echo "${{COMPREPLY[@]}}"'],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"},
    )
    assert asked.stdout.split() == ["rules"], asked.stderr


@pytest.mark.parametrize(
    ("shell", "marker"), [("zsh", "#compdef gdsdoctor"), ("fish", "complete --command gdsdoctor")]
)
def test_other_shells_get_a_completion_script(shell: str, marker: str) -> None:
    script = gdsdoctor("--show-completion", shell, env=NAMED_SHELL)
    assert script.returncode == 0 and marker in script.stdout
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed: its syntax check is left out")
    checked = subprocess.run([shell, "-n"], input=script.stdout, capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr


def test_install_completion_writes_only_the_shell_configuration(tmp_path: Path) -> None:
    """The one command that writes outside its outputs (SECURITY.md), because the user asks it to."""
    home = tmp_path / "home"
    home.mkdir()
    result = gdsdoctor("--install-completion", "bash", env={**NAMED_SHELL, "HOME": str(home)})
    assert result.returncode == 0, result.stderr
    written = sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())
    assert written == [".bash_completions/gdsdoctor.sh", ".bashrc"]
    assert "_gdsdoctor_completion" in (home / ".bash_completions/gdsdoctor.sh").read_text()


def test_no_command_with_completion_asked_is_not_the_usage_error() -> None:
    """The completion script calls gdsdoctor with no words (only its environment variable)."""
    result = gdsdoctor(
        env={"_GDSDOCTOR_COMPLETE": "complete_bash", "COMP_WORDS": "gdsdoctor ch", "COMP_CWORD": "1"}
    )
    assert result.returncode == 0 and result.stdout.split() == ["check"]
