"""The user's own error ranks first (issue 20, class 7): when the input holds what the
application, cuFile or gdsio printed, the causes that answer it (their evidence cites it, or
they explain a cause whose evidence does) come before platform causes that explain none of it,
whatever their severity; the status, the worst severity, is unchanged.

Each scenario puts a real error output next to a real platform sample of another public source
that fires a cause the error has nothing to do with (the files are the fixtures' own, whose
sources their expect.yaml names); the near-misses are the platform samples alone, and an error
output that no cause answers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gdsdoctor.pipeline import analyze_paths
from tests.conftest import REPO

FIXTURES = REPO / "fixtures"
# (the user's error, the platform sample, the cause answering the error, the platform's cause)
SCENARIOS = [
    (  # KvikIO #283: a container in compatibility mode; a RAID1 member lost (kernel log)
        "cases/kvikio-283-docker-compat-mode/files/single-node-io.txt",
        "md-raid1-disk-failure/files/dmesg.txt",
        "gds-compat-mode-in-use",
        "md-array-member-failed",
    ),
    (  # gds-nvidia-fs #57: gdsio's I/O fails under a translating IOMMU; too little space for the job
        "app-gdsio-io-failed/files/gdsio.txt",
        "capacity-below-checkpoint/files",
        "iommu-translating-gds",
        "capacity-below-checkpoint-size",
    ),
    (  # darkflow #1196: PermissionError on the checkpoint; a read-only mount elsewhere
        "ckpt-eacces/files/darkflow-1196--eacces-checkpoint.log",
        "fs-read-only-checkpoint/files/proc-mounts.txt",
        "checkpoint-permission-denied",
        "fs-read-only",
    ),
]
JOB = {"params": "70B"}  # what capacity-below-checkpoint needs to fire


def _inputs(tmp_path: Path, *relative: str) -> list[Path]:
    """The samples copied under names of their own (two fixtures may both hold a dmesg.txt)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    copies = []
    for index, name in enumerate(relative):
        source = FIXTURES / name
        for path in sorted(source.iterdir()) if source.is_dir() else [source]:
            copy = tmp_path / f"{index}-{path.name}"
            shutil.copyfile(path, copy)
            copies.append(copy)
    return copies


def _roots(report: dict) -> list[dict]:
    return [f for f in report["findings"] if not f["explained_by"]]


@pytest.mark.parametrize("error, platform, answer, other", SCENARIOS, ids=[s[2] for s in SCENARIOS])
def test_the_cause_of_the_users_error_ranks_first(
    tmp_path: Path, error: str, platform: str, answer: str, other: str
) -> None:
    alone = analyze_paths(_inputs(tmp_path / "alone", platform), job=JOB).report
    assert _roots(alone)[0]["id"] == other  # the near-miss: without the error, the platform first
    both = analyze_paths(_inputs(tmp_path / "both", error, platform), job=JOB).report
    roots = _roots(both)
    assert [roots[0]["id"], roots[0]["answers"]] == [answer, [f"0-{Path(error).name}"]]
    later = {r["id"]: r for r in roots[1:]}
    assert other in later and "answers" not in later[other]
    # where it stands, not how sure it is: the same certainty and status as without the other file
    only_error = analyze_paths(_inputs(tmp_path / "error", error), job=JOB).report
    assert roots[0]["certainty"] == _roots(only_error)[0]["certainty"]
    assert both["summary"]["status"] == max(
        alone["summary"]["status"], only_error["summary"]["status"], key=["OK", "WARNING", "CRITICAL"].index
    )


def test_a_cause_explaining_the_cause_that_cites_the_error_answers_it_too(tmp_path: Path) -> None:
    """PyTorch #10577's EIO on write beside a kernel log where the NVMe controller is removed:
    the controller failure cites the kernel log only, but it explains the write error the
    traceback shows, so it is the answer, and says which file it answers."""
    report = analyze_paths(_inputs(tmp_path, "ckpt-eio-with-nvme-removed/files")).report
    first = _roots(report)[0]
    assert first["id"] == "nvme-controller-failed"
    assert first["answers"] == ["0-pytorch-10577--write-fd-eio.log"]
    assert not any(e["artifact"] == first["answers"][0] for e in first["evidence"])


def test_an_error_no_cause_answers_changes_no_order(tmp_path: Path) -> None:
    """LLaMA-Factory #7396: a NCCL watchdog during training, no save: nothing answers it, so the
    platform sample's causes keep their own order."""
    error = "ckpt-watchdog-training-no-save/files/llamafactory-7396--watchdog-training-allreduce.log"
    platform = "capacity-below-checkpoint/files"
    alone = analyze_paths(_inputs(tmp_path / "alone", platform), job=JOB).report
    both = analyze_paths(_inputs(tmp_path / "both", error, platform), job=JOB).report
    assert [f["id"] for f in both["findings"]] == [f["id"] for f in alone["findings"]]
    assert not any("answers" in f for f in both["findings"])


def test_the_text_report_names_the_error_a_finding_answers(tmp_path: Path) -> None:
    from gdsdoctor.report.text import render_text

    error, platform, answer, _ = SCENARIOS[0]
    report = analyze_paths(_inputs(tmp_path, error, platform)).report
    text = render_text(report)
    first = text.index(answer)
    assert "Answers the error in 0-single-node-io.txt" in text[first : first + 400]


def test_the_one_line_reason_names_what_sets_the_status(tmp_path: Path) -> None:
    """Slurm's drain reason and node-problem-detector's message name the cause of the status
    (the worst severity, in rank order within it), even where the answer to the pasted error,
    of a lower severity, ranks first in the report."""
    from gdsdoctor.report.oneline import npd_result, oneline

    error, platform, answer, other = SCENARIOS[0]
    report = analyze_paths(_inputs(tmp_path, error, platform)).report
    assert _roots(report)[0]["id"] == answer and report["summary"]["status"] == "CRITICAL"
    assert oneline(report).startswith(f"{other} CRITICAL") and answer in oneline(report)
    code, message = npd_result(report)
    assert code == 1 and message.startswith(other)


# --- a cufile.log of several attempts: the last one's errors first -------------------------------

CUFILE = REPO / "tests" / "data" / "cufile"


@pytest.mark.parametrize(
    ("sample", "last_lines"),
    [
        ("gdsnvfs-019--cufile.log", 3),  # two samples in one log (pid 41294 at 16:20:37, 41337 at 16:20:53)
        ("gdsnvfs-062--cufile.log", 2),  # pid 48882 at 07:45, pid 57637 at 08:00
        ("tinygrad-051--cufile.log", 2),  # pid 44990 at 14:59:16, pid 45020 at 14:59:31
        ("gdsnvfs-031--cufile.log.excerpt", 2),  # seven processes over six days, the last one's 2 lines
    ],
)
def test_the_last_attempt_of_a_cufile_log_is_the_processes_after_all_others_ended(
    sample: str, last_lines: int
) -> None:
    from gdsdoctor.engine.rank import last_attempt_lines
    from gdsdoctor.probes.cufile import parse_cufile_log

    section = {**parse_cufile_log((CUFILE / sample).read_text(), sample), "status": "ok"}
    lines = last_attempt_lines({"cufile_log": section})
    last_pid = max(section["entries"], key=lambda e: e["timestamp"])["pid"]
    assert lines == {(sample, e["src"]["line"]) for e in section["entries"] if e["pid"] == last_pid}
    assert len(lines) == last_lines


def test_processes_that_overlap_in_time_are_one_attempt() -> None:
    """Eight ranks of one job write to one log at once: no rank is a later attempt (built from the
    two processes of gdsnvfs-062's real log, the second moved into the first's second)."""
    from gdsdoctor.engine.rank import last_attempt_lines
    from gdsdoctor.probes.cufile import parse_cufile_log

    text = (CUFILE / "gdsnvfs-062--cufile.log").read_text().replace("08:00:30:92", "07:45:35:135")
    section = {**parse_cufile_log(text, "cufile.log"), "status": "ok"}
    assert len(section["pids"]) == 2
    assert last_attempt_lines({"cufile_log": section}) == frozenset()


@pytest.mark.parametrize(
    ("second_attempt_at", "first"),
    [
        ("08:00:30:92", "fs-device-mapper-or-loop"),  # as logged: /dev/dm-0 refused in the rerun
        ("07:30:30:92", "fs-virtual-no-block-device"),  # the same lines, dm-0 refused before
    ],
)
def test_the_cause_of_the_last_attempt_ranks_first(
    tmp_path: Path, second_attempt_at: str, first: str
) -> None:
    """gds-nvidia-fs #62: an anonymous device (0:53) refused at 07:45, then /dev/dm-0 at 08:00;
    the known cause is the device-mapper one. Moving the dm-0 attempt before the other turns the
    order round: the ranking follows the attempts, not the causes."""
    text = (CUFILE / "gdsnvfs-062--cufile.log").read_text().replace("08:00:30:92", second_attempt_at)
    log = tmp_path / "cufile.log"
    log.write_text(text)
    roots = [f["id"] for f in analyze_paths([log], None).report["findings"] if not f["explained_by"]]
    assert roots[0] == first
    assert {"fs-device-mapper-or-loop", "fs-virtual-no-block-device"} <= set(roots)


def test_a_log_of_days_of_attempts_leads_with_what_the_last_one_hit() -> None:
    """gds-nvidia-fs #31 (Rocky 8.6): the user's log holds six days of attempts: cuInit found no
    device on the 5th, nvidia-fs was not loaded on the 6th and 7th, and the last run hit "NVMe
    Driver not registered with nvidia-fs" (the thread's subject). That one ranks first; the
    earlier attempts' causes stay in the report."""
    log = CUFILE / "gdsnvfs-031--cufile.log.excerpt"
    roots = [f["id"] for f in analyze_paths([log], None).report["findings"] if not f["explained_by"]]
    assert roots[0] == "nvme-not-registered-with-nvidia-fs"
    assert {"cufile-cuda-init-failed", "nvidia-fs-not-loaded"} <= set(roots)
