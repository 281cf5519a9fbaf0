"""Which GPUs this process may see: the variables a scheduler or a container runtime sets
(``CUDA_VISIBLE_DEVICES``, ``NVIDIA_VISIBLE_DEVICES``, Slurm's job and GPU variables), read from
gdsdoctor's own environment, or from a pasted ``env | grep …``.

A job or a container that was given no GPU sees none while the node's GPUs are fine: "no GPU
visible" is then the job's, not the node's, and automation must not drain the node for it.

Section ``job_env``::

    {variables: [{name, value, src}], in_job: bool (a Slurm job: SLURM_JOB_ID set),
     job_id: str | None, job_gpus: str | None (SLURM_JOB_GPUS / SLURM_STEP_GPUS /
     SLURM_GPUS_ON_NODE, the first set), hides_gpus: [name] (a visibility variable set to
     "", "-1", "none" or "void": no GPU for CUDA or for the container runtime)}
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from gdsdoctor.errors import ParseError
from gdsdoctor.probes.base import Probe, Section, Source, head_lines
from gdsdoctor.probes.cufile import env_line, env_variables

NAMES = (
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "SLURM_JOB_ID",
    "SLURM_JOB_GPUS",
    "SLURM_STEP_GPUS",
    "SLURM_GPUS_ON_NODE",
)
_VISIBILITY = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")
_NONE_VISIBLE = frozenset({"", "-1", "none", "void"})  # CUDA's and nvidia-container-runtime's
_JOB_GPUS = ("SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "SLURM_GPUS_ON_NODE")
_WANTED = frozenset(NAMES)


def read_job_env(host_root: Path) -> bytes:
    del host_root  # this process's environment, not a host tree's
    return json.dumps({name: os.environ[name] for name in NAMES if name in os.environ}).encode()


def parse(text: str, artifact: str) -> Section:
    variables, captured = env_variables(text, artifact, _WANTED.__contains__)
    if not variables and not captured:
        raise ParseError(f"no {', '.join(NAMES[:2])} or SLURM_* lines (expected `env | grep …` NAME=value)")
    values = {v["name"]: v["value"] for v in variables}
    return {
        "variables": variables,
        "in_job": "SLURM_JOB_ID" in values,
        "job_id": values.get("SLURM_JOB_ID"),
        "job_gpus": next((values[name] for name in _JOB_GPUS if values.get(name)), None),
        "hides_gpus": [
            name for name in _VISIBILITY if name in values and values[name].lower() in _NONE_VISIBLE
        ],
    }


def recognise(text: str) -> bool:
    lines = [line for line in head_lines(text, 50) if line.strip()]
    return bool(lines) and all(env_line(line, _WANTED.__contains__) for line in lines)


PROBE = Probe(
    section="job_env",
    title="GPUs this process may see (CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES, Slurm job)",
    sources=(
        Source(
            "env/job.json",
            reader=read_job_env,
            how="env | grep -E '^(CUDA|NVIDIA)_VISIBLE_DEVICES=|^SLURM_(JOB_ID|JOB_GPUS|STEP_GPUS|GPUS_ON_NODE)='",  # noqa: E501
            this_process=True,
        ),
    ),
    parse=parse,
    recognise=recognise,
    paste_hint="`env | grep -E '^(CUDA|NVIDIA)_VISIBLE_DEVICES=|^SLURM_'`",
    tags=("gpu",),
)
