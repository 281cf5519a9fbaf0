"""The recognition score over every pasted sample and fixture file (scripts/recognition_score.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "recognition_score.py"


@pytest.fixture(scope="module")
def score_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("recognition_score", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def scored(score_module):  # type: ignore[no-untyped-def]
    return score_module.score()


def test_every_file_has_an_expected_kind(scored) -> None:  # type: ignore[no-untyped-def]
    assert [s.path for s in scored if s.expected == "?"] == []
    assert len(scored) > 400


def test_no_file_is_read_as_the_wrong_kind_and_nearly_all_are_read(  # type: ignore[no-untyped-def]
    scored, score_module
) -> None:
    bad = [(s.path, s.expected, s.read_as) for s in scored if s.outcome in ("wrong", "false-read")]
    assert bad == []
    assert score_module.totals(scored)["right_share"] >= 0.98


def test_outcomes(score_module) -> None:  # type: ignore[no-untyped-def]
    assert score_module.outcome("lsblk", ["lsblk", "os_release"]) == "right"
    assert score_module.outcome("lsblk", ["os_release"]) == "wrong"
    assert score_module.outcome("lsblk", []) == "missed"
    assert score_module.outcome("none", ["app_log"]) == "false-read"
    rules = [("*/files/x.txt", "a"), ("*mounts*", "mounts")]
    assert score_module.expected_kind("fixtures/x/files/proc-mounts.txt", rules) == "mounts"


def test_the_script_prints_its_totals(score_module, scored, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # the scores the other tests judged, not a second scoring of every file (5 s)
    monkeypatch.setattr(score_module, "score", lambda *args, **kwargs: scored)
    assert score_module.main([]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith(f"{len(scored)} files scored")
