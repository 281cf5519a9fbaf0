"""An ENOSPC, EDQUOT or EIO line counts for the checkpoint only when its path (or its
traceback's writing frame) is under the checkpoint path, or when no path is named and a save
marker is (issue 31 item 9); /dev/shm, /tmp and a data loader's shared memory are named as such.

Real lines: tests/data/app_log_ckpt (SOURCES.md); the tracebacks built here around the real
``OSError: [Errno 28] No space left on device`` line of YuanGongND/ast #30 differ only in the
path their writing frame names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gdsdoctor.pipeline import analyze_paths

DATA = Path(__file__).resolve().parents[1] / "data" / "app_log_ckpt"
ENOSPC = "OSError: [Errno 28] No space left on device"


def _traceback(frame: str, error: str = ENOSPC) -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "/home/ubuntu/ast_conv/src/traintest.py", line 220, in train\n'
        f"    {frame}\n"
        '  File "/usr/lib/python3.10/site-packages/torch/serialization.py", line 499, in _save\n'
        "    zip_file.write_record(name, storage.data_ptr(), num_bytes)\n"
        f"{error}\n"
    )


def _analyse(tmp_path: Path, text: str, target: str | None = None) -> dict[str, Any]:
    (tmp_path / "train.log").write_text(text)
    analysis = analyze_paths([tmp_path / "train.log"], target)
    return {"report": analysis.report, "placed": analysis.facts["derived"]["checkpoint_errors"]}


def _ids(report: dict[str, Any]) -> set[str]:
    return {f["id"] for f in report["findings"]}


@pytest.mark.parametrize(
    ("frame", "where"),
    [
        ('torch.save(state, "/dev/shm/ckpt/model.pt")', "shm"),
        ("torch.save(state, '/tmp/ckpt/model.pt')", "tmp"),
        ('torch.save(state, "/mnt/ckpt/step-10/model.pt")', "checkpoint"),  # a save marker, no --path
    ],
)
def test_the_writing_frame_places_the_error(tmp_path: Path, frame: str, where: str) -> None:
    found = _analyse(tmp_path, _traceback(frame))
    assert [(p["where"], p["for_checkpoint"]) for p in found["placed"]] == [(where, where == "checkpoint")]
    ids = _ids(found["report"])
    assert ("checkpoint-write-out-of-space" in ids) == (where == "checkpoint")
    assert ("job-scratch-space-full" in ids) == (where != "checkpoint")


def test_a_path_outside_the_checkpoint_path_is_not_the_checkpoints(tmp_path: Path) -> None:
    frame = 'torch.save(state, "/home/u/cache/features.pt")'
    found = _analyse(tmp_path, _traceback(frame), target="/mnt/ckpt")
    assert found["placed"][0]["where"] == "elsewhere"
    assert "checkpoint-write-out-of-space" not in _ids(found["report"])
    assert found["report"]["summary"]["status"] != "OK"  # not health either: the line is listed
    inside = _analyse(tmp_path, _traceback('torch.save(state, "/mnt/ckpt/step-10/model.pt")'), "/mnt/ckpt")
    assert inside["placed"][0]["where"] == "checkpoint"
    assert "checkpoint-write-out-of-space" in _ids(inside["report"])


def test_a_bare_enospc_without_a_save_marker_is_not_checkpoint_enospc(tmp_path: Path) -> None:
    found = _analyse(tmp_path, f"{ENOSPC}\n")
    assert found["placed"][0]["where"] == "unknown"
    report = found["report"]
    assert "checkpoint-write-out-of-space" not in _ids(report)
    assert report["summary"]["status"] == "UNKNOWN"  # unexplained, with what would settle it
    assert report["unexplained"][0]["family"] == "traceback"


def test_a_containers_dev_shm_enospc_is_a_warning_naming_shm_size() -> None:
    report = analyze_paths([DATA / "hopsworks-1557--torch-shm-enospc.log"]).report
    finding = next(f for f in report["findings"] if f["id"] == "job-scratch-space-full")
    assert finding["severity"] == "warning" and "--shm-size" in finding["fix"]
    assert "/dev/shm" in finding["evidence"][0]["text"]
    assert "checkpoint-write-out-of-space" not in _ids(report)
    assert report["summary"]["status"] == "WARNING"


def test_the_real_torch_save_enospc_still_counts_for_the_checkpoint() -> None:
    report = analyze_paths([DATA / "ast-30--torch-save-enospc.log"]).report
    assert "checkpoint-write-out-of-space" in _ids(report)
