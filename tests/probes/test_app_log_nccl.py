"""The NCCL family read by one reader (issue 32 item 1): NCCL's warnings, its results as frameworks
print them, ProcessGroupNCCL's watchdog and heartbeat, vLLM's waits and RPC timeouts; and which
framework's save a checkpoint error happened in (app_log_save). Real lines:
tests/data/app_log_nccl and tests/data/app_log_save (SOURCES.md of each)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gdsdoctor.capture.detect import recognise
from gdsdoctor.probes import app_log
from gdsdoctor.probes.app_log_nccl import nccl_error
from gdsdoctor.probes.app_log_save import saving_path

DATA = Path(__file__).resolve().parents[1] / "data"
NCCL = DATA / "app_log_nccl"
SAVE = DATA / "app_log_save"


def _errors(path: Path) -> list[dict[str, Any]]:
    text = path.read_text()
    assert app_log.recognise_app_log(text)
    return app_log.parse_app_log(text, path.name)["errors"]


def _by_line(path: Path) -> dict[int, dict[str, Any]]:
    return {e["src"]["line"]: e for e in _errors(path)}


@pytest.mark.parametrize(
    ("name", "line", "kind", "fields"),
    [
        ("nccl-1235--socket-closed-cuda-failure-oom.log", 1, "nccl_warn",
         {"host": "ng30903", "cuda_dev": 0, "file": "misc/socket.cc:49", "level": "WARN"}),
        ("nccl-1235--socket-closed-cuda-failure-oom.log", 9, "gpu_oom",
         {"cuda_dev": 3, "cuda_error": None, "cuda_error_text": "out of memory"}),
        ("nccl-1283--ray-prefix-cuda-failure-invalid-argument.log", 4, "nccl_cuda_failure",
         {"host": "n176-080-198", "cuda_error": 1, "cuda_error_text": "invalid argument"}),
        ("nccl-1283--ray-prefix-cuda-failure-invalid-argument.log", 5, "nccl_error",
         {"result": "ncclUnhandledCudaError"}),
        ("metaseq-90--nccl-error-in-unhandled-cuda-error.log", 2, "nccl_error",
         {"result": "ncclUnhandledCudaError", "version": "21.0.3"}),
        ("nccl-1235--distbackenderror-remote-error.log", 1, "nccl_error",
         {"result": "ncclRemoteError", "version": "2.18.1"}),
        ("llamafactory-6269--watchdog-reduce-scatter.log", 3, "collective_timeout",
         {"op": "_REDUCE_SCATTER_BASE", "seq": 7753, "timeout_ms": 600000, "ran_ms": 600099, "rank": 4,
          "numel_in": 544997376}),
        ("pytorch-118369--watchdog-without-numel.log", 1, "collective_timeout",
         {"op": "ALLREDUCE", "seq": 96120, "timeout_ms": 1800000, "ran_ms": 25624887, "numel_in": None}),
        ("arctictraining-219--watchdog-stuck-480s.log", 1, "collective_hang",
         {"hang": "watchdog_stuck", "seconds": 480, "rank": 7}),
        ("vllm-46611--shm-wait-rpc-timeout.log", 1, "distributed_wait",
         {"hang": "shm_broadcast_wait", "seconds": 60}),
        ("vllm-46611--shm-wait-rpc-timeout.log", 3, "collective_hang",
         {"hang": "rpc_timeout", "method": "sample_tokens"}),
    ],
)  # fmt: skip
def test_each_nccl_family_line_is_read(name: str, line: int, kind: str, fields: dict[str, Any]) -> None:
    error = _by_line(NCCL / name)[line]
    assert error["kind"] == kind
    assert {key: error["nccl"][key] for key in fields} == fields


def test_the_watchdogs_collective_is_where_the_checkpoint_rules_read_it() -> None:
    error = _by_line(NCCL / "llamafactory-6269--watchdog-reduce-scatter.log")[1]
    assert (error["ckpt"]["op"], error["ckpt"]["timeout_ms"]) == ("_REDUCE_SCATTER_BASE", 600000)


def test_the_family_is_listed_as_error_lines_but_a_vllm_wait_alone_is_not() -> None:
    parsed = app_log.parse_app_log((NCCL / "vllm-46611--shm-wait-rpc-timeout.log").read_text(), "v")
    assert [(x["src"]["line"], x["family"]) for x in parsed["error_lines"]] == [(3, "nccl")]


def test_a_healthy_nccl_init_stays_quiet() -> None:
    text = (NCCL / "healthy-nccl-info--near-miss.log").read_text()
    assert not app_log.recognise_app_log(text)
    assert all(nccl_error(n, line, "h") is None for n, line in enumerate(text.split("\n"), 1))
    assert recognise(text) is None


@pytest.mark.parametrize(
    "line",
    [
        "gpu01:1234:1234 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation",
        "gpu01:1234:1301 [0] NCCL INFO misc/socket.cc:749 -> 6",
        "[rank0]:[W819 19:29:00.828498674 ProcessGroupNCCL.cpp:1168] Warning: WARNING: process group has NOT "
        "been destroyed before we destruct ProcessGroupNCCL.",
        "NCCL version 2.18.5+cuda12.2",
        "export NCCL_DEBUG=WARN",
    ],
)
def test_nccl_lines_that_are_no_failure(line: str) -> None:
    assert nccl_error(1, line, "x") is None


def test_an_nccl_plugin_note_is_no_warning_of_a_failure() -> None:
    line = "gpu01:1:1 [0] NCCL WARN NET/Plugin : Plugin load returned 2 : libnccl-net.so: cannot open shared object"
    assert nccl_error(1, line, "x", benign=True) is None


@pytest.mark.parametrize(
    ("name", "line", "framework", "function", "writer"),
    [
        (
            "moss-270--deepspeed-save-streamwriter-chained.log",
            6,
            "deepspeed",
            "save_checkpoint",
            "torch.save",
        ),
        (
            "chatglm-6b-1166--hf-trainer-deepspeed-frames.log",
            18,
            "deepspeed",
            "save_checkpoint",
            "torch.save",
        ),
        ("piper-311--lightning-atomic-save-enotconn.log", 8, "lightning", "atomic_save", "lightning"),
        ("dreambooth-45--torch-save-unexpected-pos-lightning.log", 18, "torch.save", "save", "torch.save"),
    ],
)
def test_the_save_frame_of_a_checkpoint_error(
    name: str, line: int, framework: str, function: str, writer: str
) -> None:
    save = _by_line(SAVE / name)[line]["ckpt"]["save"]
    assert (save["framework"], save["function"], save["writer"]) == (framework, function, writer)


def test_an_errno_without_a_kind_of_its_own_is_still_the_jobs_error() -> None:
    error = _by_line(SAVE / "piper-311--lightning-atomic-save-enotconn.log")[8]
    assert (error["kind"], error["errno"]) == ("errno_error", 107)


def test_an_error_outside_any_save_names_no_save() -> None:
    error = _by_line(SAVE / "naifu-35--eio-outside-save--near-miss.log")[8]
    assert error["kind"] == "ckpt_eio"
    assert error["ckpt"]["save"] is None
    assert error["ckpt"]["path"] == "/app/naifu555"


def test_the_path_a_save_wrote_from_the_frameworks_own_lines() -> None:
    lines = (SAVE / "transformers-21482--trainer-deepspeed-saving-lines.log").read_text().split("\n")
    assert [saving_path(line) for line in lines[:5]] == [
        "bennyD/checkpoint-500",
        "bennyD/checkpoint-500/config.json",
        "bennyD/checkpoint-500/pytorch_model.bin",
        "bennyD/checkpoint-500/pytorch_model.bin",
        "bennyD/checkpoint-500/pytorch_model.bin",
    ]
    assert saving_path("Saving checkpoint at 14 epochs") is None  # mmengine: no path


@pytest.mark.parametrize(
    ("line", "kind", "path", "why"),
    [
        ("RuntimeError: File /ckpt/step-10/model.pt cannot be opened.", "ckpt_write_failed", "/ckpt/step-10/model.pt",
         "open"),
        ("RuntimeError: Parent directory /ckpt/step-10 does not exist.", "ckpt_write_failed", "/ckpt/step-10",
         "no_parent"),
    ],
)  # fmt: skip
def test_a_writer_that_could_not_open_its_file(line: str, kind: str, path: str, why: str) -> None:
    error = app_log.parse_app_log(line, "x")["errors"][0]
    assert (error["kind"], error["ckpt"]["path"], error["ckpt"]["why"]) == (kind, path, why)


@pytest.mark.parametrize(
    ("line", "cuda_error"),
    [
        ("RuntimeError: CUDA error: an illegal memory access was encountered", "an illegal memory access was encountered"),
        ("torch.AcceleratorError: CUDA error: unknown error", "unknown error"),
        ("RuntimeError: CUDA driver error: device not ready", "device not ready"),
        ("cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorIllegalAddress: an illegal memory access",
         "cudaErrorIllegalAddress"),
        ("RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( handle)`",
         "CUBLAS_STATUS_EXECUTION_FAILED"),
    ],
)  # fmt: skip
def test_cuda_errors_as_frameworks_print_them(line: str, cuda_error: str) -> None:
    error = app_log.parse_app_log(line, "x")["errors"][0]
    assert (error["kind"], error["ckpt"]["cuda_error"]) == ("cuda_error", cuda_error)


def test_cuda_out_of_memory_stays_the_gpu_memory_kind() -> None:
    error = app_log.parse_app_log("RuntimeError: CUDA error: out of memory", "x")["errors"][0]
    assert error["kind"] == "gpu_oom"


def test_vllms_shared_memory_wait_is_no_error_line_by_itself() -> None:
    """vLLM's shm_broadcast.py prints it while a worker hangs *or* compiles or quantises (its own
    words): a wait to count, not a failure, so it has no error-line family (docs/facts/app_log.md);
    the RPC timeout that follows it in the same log is one (nccl)."""
    parsed = app_log.parse_app_log((NCCL / "vllm-46611--shm-wait-rpc-timeout.log").read_text(), "x")
    families = {line["kind"]: line["family"] for line in parsed["error_lines"]}
    assert "distributed_wait" not in families
    assert families.get("collective_hang") == "nccl"
