"""The job's own output, one reader per family (issue 32 item 1): launchers' bad exits decoded
(gdsdoctor.probes.app_log_launch), Rust's io errors read for their errno, and a Python logging
time prefix no longer taken for a kernel log. Real lines: tests/data/app_log_launch and
tests/data/app_log_ckpt (SOURCES.md of each)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor.capture.detect import recognise
from gdsdoctor.pipeline import analyze_paths
from gdsdoctor.probes import app_log, error_lines
from gdsdoctor.probes.app_log_launch import launch_record

DATA = Path(__file__).resolve().parents[1] / "data"
LAUNCH = DATA / "app_log_launch"


@pytest.mark.parametrize(
    ("name", "line", "launcher", "code", "signal", "what"),
    [
        ("deepspeed-5302--return-code-1-after-save.log", 3, "deepspeed", 1, None, "exit"),
        ("torchrun-cppo-6--root-cause-sigkill.log", 13, "torchrun", -9, 9, "signal"),
        ("torchrun-robomamba-10--glog-exitcode-9.log", 1, "torchrun", -9, 9, "signal"),
        ("torchrun-colossalai-3514--sigterm-fanout-exitcode-9.log", 4, "torchrun", -9, 9, "signal"),
        ("torchrun-chinese-vicuna-113--exitcode-1.log", 1, "torchrun", 1, None, "exit"),
        ("slurm-knet-30--oom-kill-step-cancelled.log", 2, "slurm", None, None, "oom"),
        ("slurm-arjunausers-48--task-killed.log", 1, "slurm", None, 9, "signal"),
        ("slurm-snakemake-371--oom-kill-out-of-memory.log", 1, "slurm", None, None, "oom"),
    ],
)
def test_each_launchers_bad_exit_is_decoded(
    name: str, line: int, launcher: str, code: int | None, signal: int | None, what: str
) -> None:
    text = (LAUNCH / name).read_text()
    record = launch_record(text.split("\n")[line - 1])
    assert record is not None
    assert (record["launcher"], record["code"], record["signal"], record["what"]) == (
        launcher,
        code,
        signal,
        what,
    )
    assert record["signal_name"] == ({9: "SIGKILL"}.get(signal) if signal else None)
    assert app_log.recognise_app_log(text)


@pytest.mark.parametrize(
    "line",
    [
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 812914 closing signal SIGTERM",
        "srun: launch/slurm: _step_signal: Terminating StepId=9411285.0",
        "srun: Force Terminated StepId=120.0",
        "[2023-04-14 13:11:27,879] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 13266",
        "[2024-01-02 10:00:00,000] [INFO] [launch.py:347:main] Process 4242 exits successfully.",
        "torch.distributed.elastic.multiprocessing.api:failed (exitcode: 0) local_rank: 0",
    ],
)
def test_a_launchers_healthy_or_follow_on_line_is_no_bad_exit(line: str) -> None:
    assert launch_record(line) is None


def test_a_python_logging_time_prefix_is_not_a_kernel_log() -> None:
    """DeepSpeed's launcher lines (`[2023-04-14 13:11:27,885] [ERROR] …`) were read as `dmesg -T`."""
    text = (DATA / "error_lines" / "deepspeed-3232--launcher-return-code-9.log").read_text()
    probe = recognise(text)
    assert probe is not None and probe.section == "app_log"


@pytest.mark.parametrize(
    ("name", "kind", "errno"),
    [
        ("llamafactory-5155--safetensors-enospc.log", "ckpt_enospc", 28),
        ("comfyui-modelquantizer-4--safetensors-enospc-temp.log", "ckpt_enospc", 28),
    ],
)
def test_rusts_io_error_is_read_for_its_errno(name: str, kind: str, errno: int) -> None:
    text = (DATA / "app_log_ckpt" / name).read_text()
    errors = [e for e in app_log.parse_app_log(text, name)["errors"] if e["kind"] == kind]
    assert errors and errors[0]["ckpt"]["errno"] == errno and errors[0]["source"] == "rust"


def test_an_errno_no_cause_reads_is_an_unexplained_line() -> None:
    # ENOTCONN from Lightning's atomic save (a FUSE mount gone): no cause reads it from a job's log
    # (safetensors' EOPNOTSUPP, used here before, is now checkpoint-mount-lacks-operation's)
    report = analyze_paths([DATA / "app_log_save" / "piper-311--lightning-atomic-save-enotconn.log"]).report
    assert report["summary"]["status"] == "UNKNOWN"
    assert [u["line"] for u in report["unexplained"]] == [8]


@pytest.mark.parametrize(
    ("line", "launcher", "signal"),
    [
        # ZhehengJiangLancaster/AMVUR #2: torchrun's root-cause block pasted through a lowercasing OCR
        ("traceback : signal 9 (SIGKILL) received by PID 36071", "torchrun", 9),
        # ArjunaCluster/ArjunaUsers #52: the batch script's shell reporting its killed python
        (
            "/var/spool/slurmd/job00191/slurm_script: line 28:  8156 Killed                  python3 main.py",
            "shell",
            9,
        ),
    ],
)
def test_lines_gathered_after_the_reader_was_built(line: str, launcher: str, signal: int) -> None:
    record = launch_record(line)
    assert record is not None and (record["launcher"], record["signal"]) == (launcher, signal)


def test_a_warning_naming_an_errno_is_still_an_error_line() -> None:
    # Plachtaa/VITS-fast-fine-tuning #397: joblib's warning of a full /dev/shm before the OSError
    line = (
        "/root/miniconda3/envs/vits/lib/python3.8/site-packages/joblib/_multiprocessing_helpers.py:46: "
        "UserWarning: [Errno 28] No space left on device.  joblib will operate in serial mode"
    )
    assert error_lines.classify(line) == ("traceback", None)
    assert (
        error_lines.classify("/usr/lib/python3/dist-packages/a.py:3: UserWarning: NumPy is too old") is None
    )
