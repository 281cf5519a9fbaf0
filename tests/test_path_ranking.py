"""`--path` ranks what concerns the checkpoint filesystem first; `explain` takes the path;
an evidence line is shown once per finding (issue 12, "the first ten minutes")."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gdsdoctor import pipeline
from gdsdoctor.commands.explain import explain_cause
from gdsdoctor.engine.evaluate import CauseResult, Evidence, Outcome
from gdsdoctor.engine.rank import ELSEWHERE, NO_MOUNT, ON_PATH, place, rank

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GPFS_MOUNTS = (FIXTURES / "fs-beegfs-gpfs-mounts-gpu" / "files" / "proc-mounts.txt").read_text()
CKPT_MOUNT = "/dev/nvme0n1p1 /mnt/ckpt ext4 rw,noatime,data=ordered 0 0\n"
JOURNAL_ABORT = "[ 4730.855458] Aborting journal on device nvme0n1p1-8.\n"


def _inputs(tmp_path: Path) -> list[Path]:
    (tmp_path / "proc-mounts.txt").write_text(GPFS_MOUNTS + CKPT_MOUNT)
    (tmp_path / "dmesg.txt").write_text(JOURNAL_ABORT)
    return [tmp_path / "proc-mounts.txt", tmp_path / "dmesg.txt"]


def _fired(cause_id: str, severity: str, certainty: float, evidence: list[str]) -> CauseResult:
    cause = next(c for c in pipeline.rules() if c.id == cause_id)
    cause = dataclasses.replace(cause, severity=severity, explains=())
    result = CauseResult(cause, Outcome.FIRED, certainty)
    result.evidence = [Evidence(text, "proc-mounts.txt", 1) for text in evidence]
    return result


def test_path_focus_names_the_checkpoint_filesystem_and_the_other_mounts(tmp_path: Path) -> None:
    analysis = pipeline.analyze_paths(_inputs(tmp_path), "/mnt/ckpt/step-1000")
    focus = analysis.facts["derived"]["path_focus"]
    assert focus["mountpoint"] == "/mnt/ckpt"
    assert {"/mnt/ckpt", "/dev/nvme0n1p1", "nvme0n1p1", "nvme0n1"} <= set(focus["names"])
    assert {"/mnt/nobackup", "/mnt/release", "/soft"} <= set(focus["elsewhere"])
    assert "/mnt/ckpt" not in focus["elsewhere"]
    assert pipeline.analyze_paths(_inputs(tmp_path)).facts["derived"]["path_focus"] is None


def test_causes_on_the_path_filesystem_outrank_causes_about_other_mounts(tmp_path: Path) -> None:
    focus = pipeline.analyze_paths(_inputs(tmp_path), "/mnt/ckpt/step-1000").facts["derived"]["path_focus"]
    gpfs = _fired("network-fs-over-tcp", "critical", 0.9, ["store04 /mnt/nobackup gpfs rw,relatime 0 0"])
    journal = _fired("fs-errors-or-shutdown", "warning", 0.3, [JOURNAL_ABORT.strip()])
    general = _fired("container-memlock-limit-low", "warning", 0.5, ["memlock soft limit is 65536 bytes"])
    unfocused = [f.result.cause.id for f in rank([gpfs, journal, general])]
    assert unfocused == ["network-fs-over-tcp", "container-memlock-limit-low", "fs-errors-or-shutdown"]
    focused = [f.result.cause.id for f in rank([gpfs, journal, general], focus)]
    # the GPFS mount elsewhere goes last; within a severity the checkpoint filesystem comes first
    assert focused == ["fs-errors-or-shutdown", "container-memlock-limit-low", "network-fs-over-tcp"]
    critical_host_wide = _fired("nvidia-fs-not-loaded", "critical", 0.3, ["lsmod: no nvidia_fs"])
    ranked = [f.result.cause.id for f in rank([journal, critical_host_wide], focus)]
    assert ranked == ["nvidia-fs-not-loaded", "fs-errors-or-shutdown"]  # severity stays first
    assert [place(r, focus) for r in (journal, general, gpfs)] == [ON_PATH, NO_MOUNT, ELSEWHERE]
    under_path = _fired("fs-read-only", "info", 0.2, ["cuFile: /mnt/ckpt/step-1000/model.pt read-only"])
    assert rank([gpfs, under_path], focus)[0].result.cause.id == "fs-read-only"


def test_duplicate_evidence_lines_are_dropped(tmp_path: Path) -> None:
    report = pipeline.analyze_paths(_inputs(tmp_path), "/mnt/ckpt/step-1000").report
    finding = next(f for f in report["findings"] if f["id"] == "fs-errors-or-shutdown")
    located = [(e["artifact"], e["line"], e["text"]) for e in finding["evidence"]]
    assert located.count(("dmesg.txt", 1, JOURNAL_ABORT.strip())) == 1
    assert len(located) == len(set(located))


def test_explain_takes_the_checkpoint_path(tmp_path: Path) -> None:
    inputs = _inputs(tmp_path)
    with_path = explain_cause("fs-errors-or-shutdown", inputs, (), path="/mnt/ckpt/step-1000")
    assert "[held] +0.20 on-checkpoint-device" in with_path
    assert "path: /mnt/ckpt/step-1000 (on /mnt/ckpt)" in with_path
    elsewhere = explain_cause("fs-errors-or-shutdown", inputs, (), path="/mnt/nobackup/run")
    assert "[not held] +0.20 on-checkpoint-device" in elsewhere
    assert "path: /mnt/nobackup/run (on /mnt/nobackup)" in elsewhere
    assert "path:" not in explain_cause("fs-errors-or-shutdown", inputs, ())


def test_explain_command_takes_path(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from gdsdoctor.cli import run

    inputs = [str(p) for p in _inputs(tmp_path)]
    assert run(["explain", "fs-errors-or-shutdown", *inputs, "--path", "/mnt/ckpt/step-1000"]) == 0
    assert "path: /mnt/ckpt/step-1000 (on /mnt/ckpt)" in capsys.readouterr().out
