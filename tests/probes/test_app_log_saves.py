"""The save durations a job's log states (probes/app_log_saves.py), on real logs of three
frameworks, and the near misses that time nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor.probes.app_log_saves import saves, timer_line
from gdsdoctor.probes.base import numbered_lines

DATA = Path(__file__).resolve().parents[1] / "data" / "app_log_saves"


@pytest.mark.parametrize(
    ("name", "seconds", "how", "line"),
    [
        ("megatron-hyperpod-resiliency--save-checkpoint-timer.log", 81.612, "timer", 5),  # the max, in ms
        ("torchtitan-newcomputebench--finished-saving-then-sigabrt.log", 5.53, "timer", 3),
        # the first start line to the last rank's "is ready now!" (not the first rank's, 0 s)
        ("megatron-deepspeed-llm-action--torch-checkpoint-ready.log", 5.953, "lines", 22),
    ],
)
def test_each_frameworks_save_is_timed(name: str, seconds: float, how: str, line: int) -> None:
    found = saves(numbered_lines((DATA / name).read_text()), name)
    assert [(s["seconds"], s["how"], s["src"]["line"]) for s in found] == [(seconds, how, line)]


def test_lines_without_timestamps_or_timer_time_nothing() -> None:
    text = (DATA / "megatron-hyperpod-resiliency--save-checkpoint-timer.log").read_text()
    untimed = "\n".join(line for line in text.splitlines() if "save-checkpoint" not in line)
    assert saves(numbered_lines(untimed), "x") == []  # "saving …"/"successfully saved" carry no time
    assert not timer_line("  load-checkpoint ................................: (17352.38, 17353.07)")
    assert timer_line("    save-checkpoint ................................: 18512.90")


def test_a_start_without_an_end_is_not_a_save() -> None:
    lines = [
        (1, "[INFO|trainer.py:2926] 2023-10-19 09:48:54,430 >> Saving model checkpoint to out/checkpoint-10"),
        (
            2,
            "[INFO|configuration_utils.py:458] 2023-10-19 09:48:55,234 >> Configuration saved in out/config.json",
        ),
    ]
    assert saves(lines, "x") == []
