"""The job's own limits (issue 31 item 8): ``--params`` alone never makes a node WARNING. The async
stall model is judged only for a job said to save asynchronously (``--async``), against the job's
own locked-memory limit (``--memlock``, a pasted ``/proc/<pid>/limits`` of the training process,
the job's log, gdsdoctor's own limit only inside a Slurm job step); without them
``async-save-host-memory-short`` is inconclusive and says which flag to pass.

On this VM's own /proc/meminfo (the async fixtures' sample) and a real ``/proc/<pid>/limits``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gdsdoctor.api as gd
from gdsdoctor import cli
from gdsdoctor.facts.job import OWN_MEMLOCK, job_section, memlock_section, save_section

ASYNC = "async-save-host-memory-short"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MEMINFO = (FIXTURES / "async-save-host-memory-short" / "files" / "meminfo.txt").read_text()
LIMITS = Path("/proc/self/limits")


def _verdict(report: gd.Report) -> dict:
    return next(c for c in report.data["causes"] if c["id"] == ASYNC)


def test_params_alone_leaves_the_async_model_inconclusive_with_the_flags() -> None:
    report = gd.analyze_texts({"meminfo": MEMINFO}, job={"params": "70B", "gpus": 8})
    assert _verdict(report)["outcome"] == "inconclusive"
    assert ASYNC not in {f["id"] for f in report.findings} and report.status != "WARNING"
    [entry] = [i for i in report.data["inconclusive"] if i["id"] == ASYNC]
    asked = " ".join(m["collect"] for m in entry["missing"])
    assert "--async" in asked and "--sync" in asked and "--memlock" in asked


def test_sync_saves_stage_nothing_and_async_ones_are_judged() -> None:
    sync = gd.analyze_texts({"meminfo": MEMINFO}, job={"params": "70B", "gpus": 8, "save": "sync"})
    assert _verdict(sync)["outcome"] == "not_applicable"
    job = {"params": "70B", "gpus": 8, "save": "async", "memlock": "unlimited"}
    short = gd.analyze_texts({"meminfo": MEMINFO}, job=job)
    assert _verdict(short)["outcome"] == "fired"  # a job-scope finding: reported, the node's status its own


def test_the_training_process_limits_are_the_job_memlock() -> None:
    limits = LIMITS.read_text() if LIMITS.exists() else ""
    if "Max locked memory" not in limits:
        pytest.skip("no /proc/self/limits here")
    job = {"params": "1B", "gpus": 64, "save": "async"}
    report = gd.analyze_texts({"meminfo": MEMINFO, "limits": limits}, job=job)
    assert _verdict(report)["outcome"] in ("fired", "clear")  # judged: the pasted limits are the job's
    facts_memlock = memlock_section(job_section(job), {"memlock": {"status": "ok", "soft_bytes": 65536,
                                    "soft_unlimited": False, "src": {"artifact": "limits", "line": 9}}})  # fmt: skip
    assert facts_memlock["of"] == "pasted" and facts_memlock["soft_bytes"] == 65536


@pytest.mark.parametrize(("in_job", "judged"), [(True, True), (False, False)])
def test_gdsdoctors_own_limit_counts_only_inside_the_job(in_job: bool, judged: bool) -> None:
    own = {"status": "ok", "soft_bytes": 8 << 20, "soft_unlimited": False, "src": {"artifact": OWN_MEMLOCK}}
    facts = {"memlock": own, "job_env": {"status": "ok", "in_job": in_job}}
    section = memlock_section(job_section({"params": "7B", "gpus": 64}), facts)
    assert (section["status"] == "ok") == judged
    if not judged:
        assert "--memlock" in section["detail"]


def test_the_command_line_flags_and_a_bad_memlock(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo.txt"
    meminfo.write_text(MEMINFO)
    code = cli.run(
        [
            "analyze",
            str(meminfo),
            "--params",
            "70B",
            "--gpus",
            "8",
            "--async",
            "--memlock",
            "8GiB",
            "-f",
            "json",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == report["summary"]["exit_code"] and any(f["id"] == ASYNC for f in report["findings"])
    assert cli.run(["analyze", str(meminfo), "--params", "70B", "--memlock", "lots"]) == 3
    assert capsys.readouterr().err.strip() == "gdsdoctor: memlock 'lots': unlimited or a size (64KiB, 8GiB)"
    assert save_section(job_section({"params": "7B", "save": "sync"}))["mode"] == "sync"
