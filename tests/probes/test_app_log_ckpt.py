"""app_log_ckpt: the checkpoint job's own errors (real tracebacks and framework logs from public threads),
each read with the line it came from, and the causes it points to ranked with the node's facts."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor.pipeline import analyze_paths
from gdsdoctor.probes import app_log
from gdsdoctor.probes.app_log_ckpt import checkpoint_error

DATA = Path(__file__).resolve().parents[1] / "data"
CKPT = DATA / "app_log_ckpt"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

# sample → (kind, errno, path, the cause it fires)
SAMPLES = {
    "ast-30--torch-save-enospc.log": ("ckpt_enospc", 28, None, "checkpoint-write-out-of-space"),
    # a tool's intermediate file, no save marker: not the checkpoint's EDQUOT (issue 31 item 9)
    "hostg-7--edquot-lustre.log": ("ckpt_edquot", 122, "out/intermediate.ntw", None),
    "pytorch-10577--write-fd-eio.log": ("ckpt_eio", 5, None, "checkpoint-write-io-error"),
    "ms-swift-6695--estale.log": ("ckpt_estale", 116, None, "checkpoint-stale-file-handle"),
    "verl-3354--erofs-save-checkpoint.log": ("ckpt_erofs", 30, "/fsx", "checkpoint-filesystem-read-only"),
    "darkflow-1196--eacces-checkpoint.log": ("ckpt_eacces", 13, "./ckpt/checkpoint", "checkpoint-permission-denied"),
    "llamafactory-1223--streamwriter-file-write-failed.log": ("ckpt_write_failed", None, None, "checkpoint-save-failed"),
    "simpletuner-1880--dcp-checkpoint-exception.log": ("ckpt_dcp_failed", None, None, "checkpoint-save-failed"),
    "stable-diffusion-93--central-directory.log": ("ckpt_truncated", None, None, "checkpoint-truncated"),
    "nwpu-crowd-21--unexpected-eof.log": ("ckpt_truncated", None, None, "checkpoint-truncated"),
    "qwen-vl-135--deepspeed-killed-oom.log": ("oom_killed", None, None, "checkpoint-save-oom-killed"),
    "save-then-watchdog--llamafactory-1223-and-open-r1-160.log": (
        "collective_timeout", None, None, "checkpoint-collective-timeout-during-save"),
    "stanford-alpaca-65--fsdp-clone-cuda-oom.log": ("gpu_oom", None, None, "gpu-memory-exhausted-during-save"),
    "fastchat-256--fsdp-state-dict-cuda-oom.log": ("gpu_oom", None, None, "gpu-memory-exhausted-during-save"),
    "transformers-25100--fsdp-clone-cuda-oom.log": ("gpu_oom", None, None, "gpu-memory-exhausted-during-save"),
    "nccl-844--bootstrap-cuda-failure-oom.log": ("gpu_oom", None, None, "gpu-memory-exhausted-not-storage"),
}  # fmt: skip


def _findings(*paths: Path, job: dict | None = None) -> dict[str, dict]:
    report = analyze_paths(list(paths), None, job=job).report
    assert not report["source"]["notes"], report["source"]["notes"]
    return {f["id"]: f for f in report["findings"]}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_error_class_is_read_with_its_line(name: str) -> None:
    kind, errno, path, _ = SAMPLES[name]
    text = (CKPT / name).read_text()
    assert app_log.recognise_app_log(text)
    errors = [e for e in app_log.parse_app_log(text, name)["errors"] if e["kind"] == kind]
    assert errors, f"no {kind} in {name}"
    first = errors[0]
    assert first["ckpt"]["errno"] == errno and first["errno"] == errno
    assert first["ckpt"]["path"] == path
    line = text.split("\n")[first["src"]["line"] - 1]
    assert first["src"]["artifact"] == name and line.strip()[:200] in first["text"] + line


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_error_class_fires_the_cause_it_points_to(name: str) -> None:
    cause = SAMPLES[name][3]
    if cause is None:  # no cause claims it: listed as unexplained, never OK
        report = analyze_paths([CKPT / name], None).report
        assert report["summary"]["status"] == "UNKNOWN" and report["unexplained"][0]["artifact"] == name
        return
    finding = _findings(CKPT / name)[cause]
    cited = [e for e in finding["evidence"] if e.get("artifact")]
    assert cited and cited[0]["artifact"] == name, finding["evidence"]


def test_the_save_context_and_the_watchdog_near_miss() -> None:
    saving = app_log.parse_app_log(
        (CKPT / "save-then-watchdog--llamafactory-1223-and-open-r1-160.log").read_text(), "s"
    )
    assert {e["ckpt"]["op"] for e in saving["errors"]} == {"_ALLGATHER_BASE"}
    assert all(e["ckpt"]["during_save"] and e["ckpt"]["timeout_ms"] == 1800000 for e in saving["errors"])
    training = CKPT / "llamafactory-7396--watchdog-training-allreduce.log"
    parsed = app_log.parse_app_log(training.read_text(), "t")
    assert {e["kind"] for e in parsed["errors"]} == {"collective_timeout"}
    assert not any(e["ckpt"]["during_save"] for e in parsed["errors"])
    # a watchdog on a training all-reduce, with no save in sight, is not blamed on storage
    assert "checkpoint-collective-timeout-during-save" not in _findings(training)


def test_eio_with_nvme_resets_names_the_drive() -> None:
    kernel = DATA / "dmesg" / "dmesg-nvme-pcie-admin-timeout-removed.txt"
    found = _findings(CKPT / "pytorch-10577--write-fd-eio.log", kernel)
    assert found["checkpoint-write-io-error"]["explained_by"] == "nvme-controller-failed"
    says = " ".join(e["text"] for e in found["nvme-controller-failed"]["evidence"])
    assert "nvme" in says


def test_a_watchdog_during_a_save_on_a_slow_measured_path_names_the_stall() -> None:
    fio = FIXTURES / "throughput-fio-stall-over-budget" / "files" / "fio.json"
    log = CKPT / "save-then-watchdog--llamafactory-1223-and-open-r1-160.log"
    found = _findings(log, fio, job={"params": "70B", "budget": "2%", "gpus": 64})
    timeout = found["checkpoint-collective-timeout-during-save"]
    assert timeout["explained_by"] == "checkpoint-stall-over-budget"
    assert timeout["certainty"] > 0.5  # the save context and the slow path combined


def test_gpu_memory_is_told_from_host_memory_and_from_storage() -> None:
    # the GPU's memory, with what it asked for and where, never the OOM killer's kind
    saving = app_log.parse_app_log((CKPT / "stanford-alpaca-65--fsdp-clone-cuda-oom.log").read_text(), "s")
    (oom,) = saving["errors"]
    assert (oom["kind"], oom["ckpt"]["gpu"], oom["ckpt"]["request"], oom["ckpt"]["during_save"]) == (
        "gpu_oom", 1, "502.00 MiB", True,
    )  # fmt: skip
    during = _findings(CKPT / "stanford-alpaca-65--fsdp-clone-cuda-oom.log")
    assert during["gpu-memory-exhausted-during-save"]["severity"] == "warning"  # one job's: no drain
    assert "gpu-memory-exhausted-not-storage" not in during
    assert "checkpoint-save-oom-killed" not in during
    outside = _findings(CKPT / "nccl-844--bootstrap-cuda-failure-oom.log")
    assert outside["gpu-memory-exhausted-not-storage"]["severity"] == "info"  # an answer, not a status
    assert "gpu-memory-exhausted-during-save" not in outside


@pytest.mark.parametrize(
    "line",
    [
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "79.15 GiB of which 1.02 GiB is free.",
        "RuntimeError: CUDA error: out of memory",
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
        "17179869184 bytes.",
        "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY",
    ],
)
def test_gpu_memory_errors_in_each_allocators_words(line: str) -> None:
    error = checkpoint_error(1, line, "a")
    assert error is not None and error["kind"] == "gpu_oom"


def test_the_kernels_oom_kill_is_an_event_of_its_own() -> None:
    line = "[856341.770960] Out of memory: Killed process 410126 (python) total-vm:79905000kB, anon-rss:1kB"
    from gdsdoctor.probes import dmesg

    events = dmesg.parse(line + "\n", "dmesg.txt")["events"]
    assert [(e["kind"], e["details"]["pid"], e["details"]["comm"]) for e in events] == [
        ("oom_kill", 410126, "python")
    ]


def test_nvidia_fs_512_is_a_signal_not_a_storage_fault() -> None:
    found = _findings(CKPT / "gdsnvfs-26--nvidia-fs-write-512.log")
    assert list(found) == ["nvidia-fs-io-interrupted"]
    assert found["nvidia-fs-io-interrupted"]["severity"] == "info"


@pytest.mark.parametrize(
    "line",
    [
        "[INFO|trainer.py:2926] 2023-10-19 09:48:54,430 >> Saving model checkpoint to out/checkpoint-10",
        "checkpoint saved: step 100, 17.5 GB in 12.1 s (1.4 GB/s)",
        "os.makedirs(path, exist_ok=True)  # may raise OSError",
        "Killed 3 stale workers",
        "NCCL INFO Watchdog thread started",
        "torch.distributed.checkpoint: planning save for 8 ranks",
        "cuFileWrite returned 4194304 bytes",
        "max_split_size_mb: avoid fragmentation when CUDA out of memory errors are frequent?",  # no: prose
        "| 0  NVIDIA H100 80GB HBM3 | 71234MiB / 81559MiB | 98% Default |",
    ],
)
def test_healthy_lines_stay_quiet(line: str) -> None:
    assert checkpoint_error(1, line, "app.log") is None


def test_an_oom_kill_days_before_the_log_ends_is_history(tmp_path: Path) -> None:
    kill = "Out of memory: Killed process 410126 (python) total-vm:79905000kB, anon-rss:22957108kB"
    recent = tmp_path / "recent" / "dmesg.txt"
    old = tmp_path / "old" / "dmesg.txt"
    for path, end in ((recent, 856999.0), (old, 856341.77 + 3 * 86400)):
        path.parent.mkdir()
        path.write_text(f"[856341.770960] {kill}\n[{end:.6f}] EXT4-fs (nvme0n1p1): mounted filesystem\n")
    assert "checkpoint-save-oom-killed" in _findings(recent)
    assert "checkpoint-save-oom-killed" not in _findings(old)  # three days before the log's end
