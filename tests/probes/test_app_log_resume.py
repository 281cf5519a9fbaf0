"""Tracebacks read whole (probes/app_log_resume.py): a checkpoint load that found a part missing, in
five loaders' words (transformers, orbax, accelerate → torch.load, safetensors under diffusers, a
job's own loader), and a save that failed in code, in four forms (CPython frames, IPython frames,
a rank-prefixed line, a torch ``__getattr__``); the near misses keep their own kinds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gdsdoctor.errors import ParseError
from gdsdoctor.probes.app_log import parse_app_log, recognise_app_log
from gdsdoctor.probes.app_log_resume import traceback_errors
from gdsdoctor.probes.base import numbered_lines

DATA = Path(__file__).resolve().parents[1] / "data" / "app_log_resume"
CKPT = Path(__file__).resolve().parents[1] / "data" / "app_log_ckpt"


def _errors(name: str, data: Path = DATA) -> list[dict[str, Any]]:
    text = (data / name).read_text()
    assert recognise_app_log(text), name
    return parse_app_log(text, name)["errors"]


@pytest.mark.parametrize(
    ("name", "line", "role", "member", "rank", "loader"),
    [
        ("medicalgpt-91--trainer-cant-find-valid-checkpoint.log", 8, "checkpoint", None, None, "transformers"),
        ("transformers-26186--fsdp-sharded-cant-find-valid-checkpoint.log", 3, "checkpoint", None, None, "transformers"),
        ("isaac-gr00t-353--metadata-json-missing.log", 10, "metadata", "metadata.json", None, None),
        ("gemma-161--orbax-metadata-missing.log", 1, "metadata", "_METADATA", None, "orbax"),
        ("kohya-ss-2046--accelerate-load-state-enoent.log", 18, "shard", "pytorch_model.bin", None, "accelerate"),
        ("milabench-281--rank11-safetensors-missing.log", 6, "shard", "diffusion_pytorch_model.safetensors", 11,
         "diffusers"),
        ("composer-2326--node1-composer-states-missing.log", 1, "shard", "composer_states.pt", None, None),
    ],
)  # fmt: skip
def test_each_loaders_missing_part_is_a_resume_error(
    name: str, line: int, role: str, member: str | None, rank: int | None, loader: str | None
) -> None:
    found = [e for e in _errors(name) if e["kind"] == "ckpt_resume_missing"]
    assert [e["src"]["line"] for e in found] == [line]
    resume = found[0]["ckpt"]["resume"]
    assert (resume["role"], resume["member"], resume["rank"], resume["loader"]) == (
        role,
        member,
        rank,
        loader,
    )


def test_an_errno_line_of_a_load_changes_kind_in_place_and_keeps_its_errno() -> None:
    (error,) = _errors("isaac-gr00t-353--metadata-json-missing.log")
    assert error["kind"] == "ckpt_resume_missing" and error["ckpt"]["errno"] == 2
    assert error["ckpt"]["resume"]["path"].endswith("/experiment_cfg/metadata.json")


@pytest.mark.parametrize(
    ("name", "line", "exception", "framework", "api_change"),
    [
        ("transformers-7880--typeerror-rotate-checkpoints.log", 8, "TypeError", "transformers", False),
        ("transformers-11738--typeerror-save-checkpoint-metrics.log", 9, "TypeError", "transformers", True),
        (
            "icefall-1725--attributeerror-save-checkpoint.log",
            13,
            "AttributeError",
            "torch",
            True,
        ),  # job's call
        (
            "firefly-24--ipython-attributeerror-save-checkpoint.log",
            9,
            "AttributeError",
            None,
            True,
        ),  # IPython
        ("lmms-finetune-65--rank-typeerror-save-checkpoint.log", 1, "TypeError", None, True),  # message only
        ("phi3-vision-finetune-39--typeerror-save-checkpoint-metrics.log", 1, "TypeError", None, True),
        ("chatglm3-1293--attributeerror-no-save-checkpoint.log", 1, "AttributeError", None, True),
    ],
)
def test_a_programming_error_through_a_save_is_a_framework_error(
    name: str, line: int, exception: str, framework: str | None, api_change: bool
) -> None:
    found = [e for e in _errors(name) if e["kind"] == "framework_error"]
    assert [e["src"]["line"] for e in found] == [line]
    failure = found[0]["ckpt"]["failure"]
    assert (failure["exception"], failure["op"], failure["framework"], failure["api_change"]) == (
        exception,
        "save",
        framework,
        api_change,
    )


@pytest.mark.parametrize(
    "name",
    [
        "flagembedding-1583--attributeerror-no-save-in-sight.log",
        "axolotl-1092--attributeerror-no-save-named.log",
    ],
)
def test_a_programming_error_with_no_save_in_sight_is_not_read(name: str) -> None:
    text = (DATA / name).read_text()
    assert not recognise_app_log(text)
    with pytest.raises(ParseError):
        parse_app_log(text, "x")


def test_a_bare_errno_line_without_its_exception_or_frames_stays_an_errno() -> None:
    # transpeeder #28: nothing says a load raised it (no class, no frames): not guessed from the path
    assert [e["kind"] for e in _errors("transpeeder-28--bare-errno-optim-states.log")] == ["errno_error"]


def test_a_saves_enoent_is_not_a_resume() -> None:
    kinds = [e["kind"] for e in _errors("llamafactory-1860--save-rename-enoent-interleaved.log")]
    assert kinds == ["errno_error"]


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("ast-30--torch-save-enospc.log", "ckpt_enospc"),  # an OSError on torch.save's path
        ("llamafactory-1223--streamwriter-file-write-failed.log", "ckpt_write_failed"),
        ("simpletuner-1880--dcp-checkpoint-exception.log", "ckpt_dcp_failed"),
    ],
)
def test_io_errors_of_a_save_keep_their_kinds(name: str, kind: str) -> None:
    kinds = {e["kind"] for e in _errors(name, CKPT)}
    assert kind in kinds
    assert not kinds & {"framework_error", "ckpt_resume_missing"}


def test_an_io_error_chained_under_a_programming_error_keeps_both_readings() -> None:
    # two real tracebacks one after the other (ast #30's ENOSPC, then transformers #7880's TypeError):
    # each is read with its own frames; the rule weighs them (framework-error-not-storage's counter)
    text = (CKPT / "ast-30--torch-save-enospc.log").read_text() + "\n"
    text += (DATA / "transformers-7880--typeerror-rotate-checkpoints.log").read_text()
    kinds = [e["kind"] for e in parse_app_log(text, "x")["errors"]]
    assert "ckpt_enospc" in kinds and kinds[-1] == "framework_error"


def test_dcp_rank_headers_name_the_rank_of_a_missing_part() -> None:
    # torch.distributed.checkpoint's CheckpointException lists each rank's traceback under a
    # "(RANK N)" header; the line of DeepSpeed's assert names no rank: the header does
    lines = numbered_lines(
        "Traceback (most recent call last): (RANK 3)\n"
        '  File "/usr/lib/python3/site-packages/torch/distributed/checkpoint/filesystem.py", line 1, in read_metadata\n'
        '    with self.fs.create_stream(path, "rb") as metadata_file:\n'
        "FileNotFoundError: [Errno 2] No such file or directory: '/local/ckpt/step-100/.metadata'\n"
    )
    errors: list[dict[str, Any]] = []
    traceback_errors(lines, errors, "x")
    (error,) = errors
    assert error["ckpt"]["resume"] == {"path": "/local/ckpt/step-100/.metadata", "member": ".metadata",
                                       "role": "metadata", "rank": 3, "loader": "dcp"}  # fmt: skip


@pytest.mark.parametrize(
    ("line", "loader", "member", "role"),
    [
        # the loaders' own format strings, as their sources raise them (no pasted sample found):
        # Megatron's dist_checkpointing/serialization.py (load, load_common)
        ("megatron.core.dist_checkpointing.core.CheckpointingException: /ckpt/iter_0000100 is not a "
         "distributed checkpoint", "megatron", "metadata.json", "metadata"),
        ("megatron.core.dist_checkpointing.core.CheckpointingException: Checkpoint directory "
         "/ckpt/iter_0000100 does not exist", "megatron", None, "checkpoint"),
        # torch.distributed.checkpoint FileSystemReader.read_metadata's wrapping of the missing .metadata
        ("FileNotFoundError: '/ckpt/step-100' is not a distributed checkpoint folder.", "dcp", ".metadata",
         "metadata"),
    ],
)  # fmt: skip
def test_the_loaders_own_words_for_a_missing_part(
    line: str, loader: str, member: str | None, role: str
) -> None:
    errors: list[dict[str, Any]] = []
    traceback_errors(numbered_lines(line + "\n"), errors, "x")
    (error,) = errors
    resume = error["ckpt"]["resume"]
    assert (resume["loader"], resume["member"], resume["role"]) == (loader, member, role)
    assert resume["path"] in ("/ckpt/iter_0000100", "/ckpt/step-100")


def test_deepspeeds_assert_on_an_empty_tag_is_a_missing_part() -> None:
    # DeepSpeed's state_dict_factory.py check_ckpt_list, in a traceback as CPython prints it (the
    # assert's source line above a bare AssertionError): the tag `latest` names has no model states
    lines = numbered_lines(
        '[rank1]:   File "/opt/conda/lib/python3.11/site-packages/deepspeed/runtime/state_dict_factory.py",'
        " line 168, in check_ckpt_list\n"
        "[rank1]:     assert len(self.ckpt_list) > 0\n"
        "[rank1]: AssertionError\n"
    )
    errors: list[dict[str, Any]] = []
    traceback_errors(lines, errors, "x")
    (error,) = errors
    assert error["kind"] == "ckpt_resume_missing"
    assert error["ckpt"]["resume"]["loader"] == "deepspeed" and error["ckpt"]["resume"]["rank"] == 1


def test_a_load_failing_on_the_files_bytes_is_not_a_framework_error() -> None:
    # H3 #11: torch.load's UnpicklingError on a malformed download is the file's content, not the code
    text = (DATA / "h3-11--unpickling-invalid-load-key.log").read_text()
    assert recognise_app_log(text)  # the loader's frames make it a job's log
    kinds = [e["kind"] for e in parse_app_log(text, "x")["errors"]]
    assert "framework_error" not in kinds


@pytest.mark.parametrize(
    ("name", "ranks", "ops", "differs", "in_save"),
    [
        ("speechbrain-2401--collective-mismatch-during-checkpointing.log", [1, 0], ["ALLREDUCE", "BROADCAST"], "op",
         False),
        # cut where the thread's excerpt ends: the other rank not shown; called from the checkpoint callback
        ("lightning-19045--ddp-modelcheckpoint-broadcast-mismatch.log", [2, None], ["BROADCAST", None], None, True),
        ("ms-swift-9443--collective-shape-mismatch.log", [1, 0], ["ALLREDUCE", "ALLREDUCE"], "shape", False),
        # PyTorch printed rank 7's fingerprint without its comma: "SequenceNumber=0OpType=REDUCE"
        ("simpletuner-2712--collective-mismatch-sequence.log", [0, 7], ["ALLGATHER", "REDUCE"], "op", False),
        # behind a logger's prefix without the word "Error" before the check's message
        ("simpletuner-2712--circuit-breaker-prefix-mismatch.log", [1, 7], ["ALLGATHER", "REDUCE"], "op", False),
        ("pytorch-148976--barrier-sequence-mismatch.log", [1, 2], ["BARRIER", "BARRIER"], "sequence", False),
    ],
)  # fmt: skip
def test_pytorchs_collective_check_names_the_ranks_and_what_differs(
    name: str, ranks: list, ops: list, differs: str | None, in_save: bool
) -> None:
    (error,) = [e for e in _errors(name) if e["kind"] == "collective_mismatch"]
    mismatch = error["ckpt"]["mismatch"]
    assert (mismatch["ranks"], mismatch["ops"], mismatch["differs"], mismatch["in_save"]) == (
        ranks,
        ops,
        differs,
        in_save,
    )


def test_a_traceback_the_paste_ends_inside_is_an_error_line_nothing_explains() -> None:
    """DeepSpeed #7650's log stops in the frames of `save_checkpoint`, before its exception: it
    raised, and what it was is not in the input. The header is an error line (UNKNOWN, never OK);
    the same frames followed by their exception line add none."""
    from gdsdoctor.pipeline import analyze_paths
    from gdsdoctor.probes.app_log_resume import cut_traceback

    path = DATA / "deepspeed-7650--save-checkpoint-traceback-cut.log"
    text = path.read_text()
    header = cut_traceback(numbered_lines(text))
    assert header is not None and "Traceback (most recent call last)" in header[1]
    report = analyze_paths([path]).report
    assert report["summary"]["status"] == "UNKNOWN"
    assert [u["line"] for u in report["unexplained"]] == [header[0]]
    whole = text.rstrip("\n") + "\n[rank0]: IndexError: list index out of range\n"
    assert cut_traceback(numbered_lines(whole)) is None
    chained = (
        whole
        + "\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n"
    )
    assert cut_traceback(numbered_lines(chained)) is None  # a header with no frames is no traceback yet
