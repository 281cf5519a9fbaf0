"""Hostile inputs, third round, items 2 and 6: the operator's own files (``--site-config``,
``--rules-dir``) that are not what they seem. A YAML alias bomb of 500 bytes took 6.7 s and
655 MiB then MemoryError; a fifo hung; ``/dev/zero`` read 920 MiB. Each is now one line, exit 3,
at once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gdsdoctor.config_files import MAX_CONFIG_BYTES

SAMPLE = Path(__file__).parent / "data" / "cufile" / "gdsnvfs-019--cufile.log"


def _bomb(levels: int = 9) -> str:
    """Nine levels of nine aliases: 9**9 (387M) strings once expanded, 400 bytes as written."""
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + f"\ncheckpoint: *a{levels - 1}\n"


def _gdsdoctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gdsdoctor", *args], capture_output=True, text=True, timeout=30
    )


def _one_line(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 3, result.stderr[-500:]
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr[-500:]
    assert all(word in result.stderr for word in words), result.stderr


def _site_config_cases(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(_bomb())
    fifo = tmp_path / "site.yaml"
    os.mkfifo(fifo)
    big = tmp_path / "big.yaml"
    big.write_bytes(b"# " + b"x" * MAX_CONFIG_BYTES + b"\n")
    return {
        "alias bomb": (bomb, "aliases"),
        "fifo": (fifo, "not a regular file"),
        "/dev/zero": (Path("/dev/zero"), "not a regular file"),
        "over 1 MiB": (big, "larger than"),
    }


@pytest.mark.parametrize("case", ["alias bomb", "fifo", "/dev/zero", "over 1 MiB"])
def test_a_site_config_that_is_not_a_small_yaml_file_is_one_line(tmp_path: Path, case: str) -> None:
    path, words = _site_config_cases(tmp_path)[case]
    _one_line(_gdsdoctor("analyze", str(SAMPLE), "--site-config", str(path), "--format", "json"), words)


@pytest.mark.parametrize("case", ["alias bomb", "fifo"])
def test_a_rule_file_that_is_a_bomb_or_a_fifo_is_one_lint_problem(tmp_path: Path, case: str) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    if case == "fifo":
        os.mkfifo(rules / "site.yaml")
    else:
        (rules / "site.yaml").write_text("causes: []\n" + _bomb().replace("checkpoint", "extra"))
    result = _gdsdoctor("rules", "lint", str(rules))
    assert result.returncode != 0, result.stderr[-500:]
    assert "Traceback" not in result.stderr
    assert ("aliases" if case != "fifo" else "not a regular file") in result.stdout + result.stderr
    analysed = _gdsdoctor("analyze", str(SAMPLE), "--rules-dir", str(rules), "--format", "json")
    assert analysed.returncode == 3 and "Traceback" not in analysed.stderr, analysed.stderr[-500:]


def test_a_site_config_without_aliases_is_still_read(tmp_path: Path) -> None:
    config = tmp_path / "site.yaml"
    config.write_text("checkpoint:\n  params: 70B\n")
    result = _gdsdoctor("analyze", str(SAMPLE), "--site-config", str(config), "--format", "json")
    assert result.returncode in (0, 1, 2), result.stderr[-500:]
