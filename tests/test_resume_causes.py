"""The causes of a checkpoint that does not resume and of a save that failed in code (issue 32 items
4 and 6), judged on real job output: which one answers, which one stays quiet beside it, and that
none of them is counted in the node's status (job scope)."""

from __future__ import annotations

from pathlib import Path

from gdsdoctor.pipeline import analyze_paths

DATA = Path(__file__).resolve().parent / "data"
RESUME = DATA / "app_log_resume"
ENOSPC = DATA / "app_log_ckpt" / "ast-30--torch-save-enospc.log"


def _fired(paths: list[Path]) -> dict[str, dict]:
    report = analyze_paths(paths, None).report
    return {f["id"]: f for f in report["findings"]}


def _joined(tmp_path: Path, *parts: Path) -> Path:
    joined = tmp_path / "job.log"
    joined.write_text("\n".join(p.read_text() for p in parts))
    return joined


def test_an_io_error_in_the_same_log_keeps_the_framework_finding_quiet(tmp_path: Path) -> None:
    # ast #30's ENOSPC under torch.save, then transformers #7880's TypeError in the Trainer's save:
    # the storage cause answers; the programming error may be what handling the I/O error raised
    fired = _fired(
        [_joined(tmp_path, ENOSPC, RESUME / "transformers-7880--typeerror-rotate-checkpoints.log")]
    )
    assert "checkpoint-write-out-of-space" in fired
    assert "framework-error-not-storage" not in fired


def test_the_framework_finding_names_the_exception_and_is_not_counted() -> None:
    report = analyze_paths(
        [RESUME / "transformers-11738--typeerror-save-checkpoint-metrics.log"], None
    ).report
    (finding,) = [f for f in report["findings"] if f["id"] == "framework-error-not-storage"]
    assert finding["title"].startswith("Not the storage path")
    assert finding["scope"] == "job" and not finding["counted"]
    says = " ".join(e.get("text", "") for e in finding["evidence"])
    assert "TypeError" in says and "transformers" in says
    assert report["summary"]["status"] == "OK"


def test_rank_zero_missing_the_part_too_is_an_incomplete_checkpoint(tmp_path: Path) -> None:
    # the milabench #281 traceback of rank 11 beside the same traceback on rank 0: every node misses
    # the file, so the checkpoint (not a node's directory) lacks it
    rank11 = (RESUME / "milabench-281--rank11-safetensors-missing.log").read_text()
    both = tmp_path / "job.log"
    both.write_text(rank11.replace("[rank11]", "[rank0]") + "\n" + rank11)
    fired = _fired([both])
    assert "checkpoint-incomplete-at-resume" in fired
    assert "checkpoint-not-on-shared-storage" not in fired


def test_another_ranks_miss_folds_the_incomplete_finding_under_node_local_storage() -> None:
    report = analyze_paths([RESUME / "milabench-281--rank11-safetensors-missing.log"], None).report
    found = {f["id"]: f for f in report["findings"]}
    assert found["checkpoint-incomplete-at-resume"]["explained_by"] == "checkpoint-not-on-shared-storage"
    assert report["summary"]["status"] == "OK"  # a job's checkpoint layout drains no node


def test_a_save_cut_short_in_the_same_log_raises_the_incomplete_finding(tmp_path: Path) -> None:
    # ast #30's ENOSPC during torch.save, then Isaac-GR00T #353's load missing metadata.json: the
    # earlier save that failed is why the checkpoint lacks a part (boost), and the space is its own finding
    alone = _fired([RESUME / "isaac-gr00t-353--metadata-json-missing.log"])["checkpoint-incomplete-at-resume"]
    joined = _fired([_joined(tmp_path, ENOSPC, RESUME / "isaac-gr00t-353--metadata-json-missing.log")])
    assert "checkpoint-write-out-of-space" in joined
    assert joined["checkpoint-incomplete-at-resume"]["certainty"] > alone["certainty"]


def test_megatrons_metadata_missing_on_another_nodes_rank_is_node_local_storage(tmp_path: Path) -> None:
    # Megatron-LM #1530's case in the words dist_checkpointing raises (serialization.py's load): rank 8,
    # on the second node, finds no metadata.json (written by global rank 0 alone) in the step directory
    log = tmp_path / "job.log"
    log.write_text(
        "[rank8]: megatron.core.dist_checkpointing.core.CheckpointingException: /local/ckpt/iter_0000500 "
        "is not a distributed checkpoint\n"
    )
    fired = _fired([log])
    finding = fired["checkpoint-not-on-shared-storage"]
    assert finding["certainty"] > 0.6  # a part rank 0 alone writes, on a node-local path
    assert fired["checkpoint-incomplete-at-resume"]["explained_by"] == "checkpoint-not-on-shared-storage"
