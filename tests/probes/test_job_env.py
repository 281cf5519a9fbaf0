"""The GPUs a job or container may see (issue 20: a verdict about the node, not the job): the
scheduler's and container runtime's variables, captured from this process or pasted, cap "no GPU
visible" at a warning where the job, not the node, was given no GPU. The nvidia-smi output is a
real one from a Slurm job started without --gres (tests/data/gpu/SOURCES.md); the variables are
the ones Slurm and nvidia-container-runtime document, with that job's id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gdsdoctor.errors import ParseError
from gdsdoctor.pipeline import analyze_paths
from gdsdoctor.probes import job_env

NO_DEVICES = (
    Path(__file__).resolve().parents[1]
    / "data"
    / "gpu"
    / "failures"
    / "nvidia-smi.no-devices.slurm-job-without-gres.txt"
)


def test_pasted_variables_are_read_with_their_lines() -> None:
    text = "SLURM_JOB_ID=1292779\nCUDA_VISIBLE_DEVICES=\nNVIDIA_VISIBLE_DEVICES=void\n"
    assert job_env.recognise(text)
    section = job_env.parse(text, "env.txt")
    assert (section["in_job"], section["job_id"], section["job_gpus"]) == (True, "1292779", None)
    assert section["hides_gpus"] == ["CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"]
    assert [v["src"]["line"] for v in section["variables"]] == [1, 2, 3]


def test_a_job_given_gpus_and_a_whole_env_dump() -> None:
    section = job_env.parse("SLURM_JOB_ID=7\nSLURM_JOB_GPUS=0,1\nCUDA_VISIBLE_DEVICES=0,1\n", "env.txt")
    assert (section["job_gpus"], section["hides_gpus"]) == ("0,1", [])
    assert not job_env.recognise("PATH=/usr/bin\nSLURM_JOB_ID=7\n")  # a whole `env`: not this paste
    with pytest.raises(ParseError):
        job_env.parse("PATH=/usr/bin\n", "env.txt")


def test_the_capture_is_this_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in job_env.NAMES:
        monkeypatch.delenv(name, raising=False)
    empty = job_env.parse(job_env.read_job_env(Path("/")).decode(), "env/job.json")
    assert (empty["variables"], empty["in_job"]) == ([], False)  # not in a job: an answer too
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("PATH", "/usr/bin")
    captured = json.loads(job_env.read_job_env(Path("/")))
    assert captured == {"SLURM_JOB_ID": "42"}  # only the names it reads, nothing else of the environment


@pytest.mark.parametrize(
    ("env", "severity"),
    [
        (None, "critical"),  # nothing says it is a job: the node shows no GPU
        ("SLURM_JOB_ID=1292779\n", "warning"),  # a Slurm job without GPUs
        ("NVIDIA_VISIBLE_DEVICES=void\n", "warning"),  # a container started without GPUs
        ("SLURM_JOB_ID=1292779\nSLURM_JOB_GPUS=0\n", "warning"),  # a job: the node is not judged by it
    ],
)
def test_no_gpu_in_a_job_is_the_job_s_not_a_node_to_drain(
    tmp_path: Path, env: str | None, severity: str
) -> None:
    paths = [NO_DEVICES]
    if env is not None:
        paths.append(tmp_path / "env.txt")
        paths[-1].write_text(env)
    found = {f["id"]: f for f in analyze_paths(paths, None).report["findings"]}
    assert found["no-gpu-visible"]["severity"] == severity
