"""Which save a checkpoint error happened in, and the path it wrote (read by ``app_log_ckpt``).

A traceback names the framework's save by its frames: the file of the package and the function.
One table maps a frame to its framework, whatever the version prints around it; the outermost
framework frame is the save the job called (``framework``, ``function``), the innermost the one
that wrote (``writer``). Real frames (tests/data/app_log_save/SOURCES.md)::

    File ".../transformers/trainer.py", line 2356, in _save_checkpoint
    File ".../deepspeed/runtime/engine.py", line 3111, in save_checkpoint
    File ".../lightning/pytorch/trainer/trainer.py", line 1365, in save_checkpoint
    File ".../megatron/training/checkpointing.py", line 390, in save_checkpoint
    File ".../torch/distributed/checkpoint/filesystem.py", line 374, in _write_files_from_queue
    File ".../torch/serialization.py", line 628, in save

The path a save wrote, when the error's line does not name one, is in the frameworks' own log lines
before it: ``Saving model checkpoint to out/checkpoint-500`` (transformers' Trainer), ``saving
checkpoint at iteration 100 to /ckpt`` (Megatron), ``[Torch] Saving /ckpt/global_step10/….pt...``
(DeepSpeed), ``saving model to '/ckpt/epoch=0.ckpt'`` (Lightning), ``Saving current state to ckpt``
(accelerate).

``save``: ``{framework, function, writer, path}``, framework one of ``dcp``, ``torch.save``,
``safetensors``, ``transformers``, ``accelerate``, ``lightning``, ``deepspeed``, ``megatron``, ``peft``.
"""

from __future__ import annotations

import re
from typing import Any

from gdsdoctor.patterns import lazy_compile

_FRAME = lazy_compile(r'\bFile "(?P<file>[^"\n]{1,500})", line \d{1,7}, in (?P<func>[\w<>.]{1,80})')
# (framework, the package's path in a frame's file); the function must be a save or a write
_PACKAGES = (
    ("dcp", lazy_compile(r"/torch/distributed/checkpoint/")),
    ("torch.save", lazy_compile(r"/torch/serialization\.py$")),
    ("safetensors", lazy_compile(r"/safetensors/")),
    ("transformers", lazy_compile(r"/transformers/")),
    ("accelerate", lazy_compile(r"/accelerate/")),
    ("lightning", lazy_compile(r"/(?:pytorch_)?lightning(?:_fabric)?/")),
    ("deepspeed", lazy_compile(r"/deepspeed/")),
    ("megatron", lazy_compile(r"/megatron/")),
    ("peft", lazy_compile(r"/peft/")),
)
_SAVE_FUNCTION = lazy_compile(r"save|write|persist|checkpoint", re.IGNORECASE)
_SAVING_TO = lazy_compile(
    r"\b[Ss]av(?:ing|ed?)\b[^\n]{0,80}?\b(?:to|in|into)\s+['\"]?(?P<path>[\w~.=@+-]{0,200}/[\w~./=@+-]{1,300}?)"
    r"['\"]?(?:\.{2,3})?(?:\s|$|,)"
    r"|\[Torch\] Saving (?P<ds>[^\s]{1,500}?)\.{0,3}\s*$"
)


def frame_framework(line: str) -> tuple[str, str] | None:
    """``(framework, function)`` of a traceback frame line inside a framework's save, else None."""
    match = _FRAME.search(line)
    if not match or not _SAVE_FUNCTION.search(match["func"]):
        return None
    path = match["file"].replace("\\", "/")
    framework = next((name for name, package in _PACKAGES if package.search(path)), None)
    return (framework, match["func"]) if framework else None


def save_frame(frames: list[str]) -> dict[str, Any] | None:
    """The save the traceback's frames (outermost first) show, or None."""
    found = [hit for frame in frames if (hit := frame_framework(frame))]
    if not found:
        return None
    return {"framework": found[0][0], "function": found[0][1], "writer": found[-1][0], "path": None}


def saving_path(line: str) -> str | None:
    """The path a framework's "Saving … to PATH" log line names, or None."""
    if "av" not in line:
        return None
    match = _SAVING_TO.search(line)
    if not match:
        return None
    return (match["path"] or match["ds"]).rstrip(".")
