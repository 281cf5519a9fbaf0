"""A job's tracebacks read whole (read by ``app_log``): a checkpoint load or resume that found a part
missing, and a save or load that failed in the framework's own code with no I/O error.

A line-by-line reader sees ``AssertionError`` or ``ValueError: …`` and cannot say what failed; the
frames above it can. Each exception line (the last line of a traceback, ``[rankN]:`` prefixes and a
logger's prefix before them allowed) is read with the traceback that ends at it: its frames (CPython's
``File "…", line N, in f`` and IPython's ``File PATH:N, in f(…)``) and their source lines. Real
tracebacks (tests/data/app_log_resume/SOURCES.md)::

    File ".../transformers/trainer.py", line 2128, in _load_from_checkpoint
  ValueError: Can't find a valid checkpoint at /finetune-sft/outputs-sft-v2/checkpoint-32500
  FileNotFoundError: Metadata file (named _METADATA) does not exist at gs://…/gemma2-2b-pt
  [rank11]: FileNotFoundError: No such file or directory: "/tmp/…/unet/diffusion_pytorch_model.safetensors"
    File ".../transformers/trainer.py", line 1283, in _rotate_checkpoints
  TypeError: 'str' object does not support item assignment

Kinds (``app_log.errors[]``):

- ``ckpt_resume_missing``: loading a checkpoint found a part of it missing — a file not found under a
  loader's frames (``torch.load``, safetensors, DCP's ``read_metadata``, a ``load_checkpoint``/
  ``load_state``/``resume`` function) or in a loader's own words: transformers' ``Can't find a valid
  checkpoint at``, Megatron's ``… is not a distributed checkpoint``, orbax's ``Metadata file (named
  _METADATA) does not exist``, DeepSpeed's ``assert len(self.ckpt_list) > 0`` (no model-states file of
  the tag). ``ckpt.resume``: ``{path, member, role, rank, loader}``; ``role`` is ``metadata`` (DCP's
  ``.metadata``, ``metadata.json``, ``_METADATA``, ``common.pt``: written once, by the coordinating
  rank), ``pointer`` (DeepSpeed's ``latest``, Megatron's ``latest_checkpointed_iteration.txt``: also one
  rank's), ``shard`` (a rank's own file) or ``checkpoint`` (the loader found none it knows);
- ``framework_error``: an exception of a class the operating system never raises (TypeError,
  AttributeError, KeyError, IndexError, NameError, ImportError, NotImplementedError, AssertionError,
  ValueError, PicklingError; on a load only those of a call that does not fit its callee) in a traceback
  through a checkpoint save or load (a save or load frame, a
  source line calling one, or the message naming one). ``ckpt.failure``: ``{exception, op ("save"|
  "load"), framework, api_change}``; ``api_change`` when the message is how Python reports a call that
  no longer fits its callee (unexpected keyword, wrong number of arguments, no attribute, cannot import).

An errno line another reader already made an error of (``[Errno 2]``: ``errno_error``) becomes
``ckpt_resume_missing`` when its traceback loads a checkpoint; an I/O error keeps its own kind.
"""

from __future__ import annotations

import re
from typing import Any

from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.app_log_save import frame_framework
from gdsdoctor.probes.base import src

TRACEBACK_WINDOW = 80  # lines above an exception searched for its traceback
# a logger's prefix, then torchrun's per-rank prefix: "host [stderr] [rank11]: …", "[rank9]: …"
_RANK_PREFIX = lazy_compile(r"^.{0,200}?\[rank(?P<rank>\d{1,6})\]:\s?")
# DCP's CheckpointException lists each rank's traceback under this header
_RANK_HEADER = lazy_compile(r"Traceback \(most recent call last\): \(RANK (?P<rank>\d{1,6})\)")
_TRACEBACK_START = lazy_compile(r"Traceback \(most recent call last\)")
_FRAME = lazy_compile(r'^\s*File "(?P<file>[^"\n]{1,500})", line \d{1,7}, in (?P<func>[\w<>.]{1,80})')
_IPYTHON_FRAME = lazy_compile(
    r"^\s*File (?P<file>[~/\\\w.:-][^\s,]{0,500}):\d{1,7}, in (?P<func>[\w<>.]{1,80})"
)
_EXCEPTION = lazy_compile(
    r"^(?P<exc>(?:[a-z_]\w{0,40}\.){0,8}(?P<cls>[A-Z]\w{0,60}(?:Error|Exception)))(?::\s?(?P<msg>.{0,1000}))?$"
)
# classes the operating system never raises: a program's own mistake (an unpickling error is not
# one: it is what a load says of a file's bytes, a truncated or malformed checkpoint)
_PROGRAMMING = frozenset(
    (
        "TypeError", "AttributeError", "KeyError", "IndexError", "NameError", "UnboundLocalError",
        "ImportError", "ModuleNotFoundError", "NotImplementedError", "AssertionError", "ValueError",
        "RecursionError", "PicklingError",
    )
)  # fmt: skip
# on a load, only the classes of a call that does not fit its callee: a KeyError, ValueError or
# assertion there may be what a loader says of a checkpoint that is incomplete or of another layout
_PROGRAMMING_AT_LOAD = frozenset(
    ("TypeError", "AttributeError", "NameError", "UnboundLocalError", "ImportError", "ModuleNotFoundError",
     "NotImplementedError", "RecursionError")
)  # fmt: skip
_IO_WORDS = lazy_compile(r"\[Errno \d|\(os error \d|\bOs \{ code|Input/output error|No space left", re.I)
_LOAD_FUNCTION = lazy_compile(r"load|resume|restore|from_pretrained|safe_open|read_metadata", re.I)
_SAVE_CALL = lazy_compile(r"(?:\.|\b)(?:save\w{0,40}|\w{0,40}_save\w{0,20})\(|\bsave_checkpoint\b", re.I)
# the message names the save or load it failed in: "Trainer._save_checkpoint() takes 3 positional
# arguments…", "'Whisper' object has no attribute 'save_checkpoint'"
_NAMED_CALL = lazy_compile(
    r"\b(?:\w{1,60}\.)?(?P<func>_{0,2}(?:save|load)\w{0,40})\(\)"
    r"|\battribute '(?P<attr>_{0,2}(?:save|load)\w{0,40})'"
)
_SAVE_FUNCTION = lazy_compile(r"(?:^|[._])_{0,2}save|checkpoint_save|persist", re.I)
# the loaders' own words for "the checkpoint I was told to load is not (all) there"
_LOADER_MESSAGE = lazy_compile(
    r"Can't find a valid checkpoint at (?P<hf>\S{1,500})"  # transformers' Trainer
    r"|No valid checkpoint found in output directory \((?P<hf_dir>[^)\n]{1,500})\)"  # its get_last_checkpoint
    # torch.distributed.checkpoint's FileSystemReader, where it wraps the .metadata it did not find
    r"|'(?P<dcp>[^'\n]{1,500})' is not a distributed checkpoint folder"
    r"|(?<!\S)(?P<mg>\S{1,500}) is not a distributed checkpoint(?! folder)"  # Megatron's dist_checkpointing
    r"|Checkpoint directory (?P<mg_dir>\S{1,500}) does not exist"  # Megatron's, a step the tracker names
    r"|Metadata file \(named (?P<orbax_name>\w{1,40})\) does not exist at (?P<orbax>\S{1,500})"  # orbax
)
# each message's group: (loader, the member it misses, its role)
_LOADER_GROUPS = {
    "hf": ("transformers", None, "checkpoint"),
    "hf_dir": ("transformers", None, "checkpoint"),
    "dcp": ("dcp", ".metadata", "metadata"),
    "mg": ("megatron", "metadata.json", "metadata"),
    "mg_dir": ("megatron", None, "checkpoint"),
    "orbax": ("orbax", None, "metadata"),
}
_MISSING_PATH = lazy_compile(
    r"No such file or directory: (?:'(?P<q1>[^'\n]{1,500})'|\"(?P<q2>[^\"\n]{1,500})\")"
)
_CKPT_LIST = lazy_compile(r"assert len\(self\.ckpt_list\) > 0|\bin check_ckpt_list\b")  # DeepSpeed
# a path that names a checkpoint: its directory or one of its files
_CHECKPOINT_PATH = lazy_compile(
    r"checkpoint|ckpt|global_step\d|iter_\d{3,}|step[_-]?\d|\.distcp$|_model_states\.pt$|_optim_states\.pt$"
    r"|\.safetensors$|pytorch_model\w{0,30}\.bin$|/latest$|latest_checkpointed_iteration\.txt$",
    re.I,
)
_ROLES = (
    ("metadata", lazy_compile(r"(?:^|[/\\])(?:\.metadata|metadata\.json|_METADATA|common\.pt)$")),
    ("pointer", lazy_compile(r"(?:^|[/\\])(?:latest|latest_universal|latest_checkpointed_iteration\.txt)$")),
)
_API_CHANGE = lazy_compile(
    r"got an unexpected keyword argument|takes \d{1,3} positional arguments? but \d{1,3} (?:were|was) given"
    r"|got multiple values for argument|missing \d{1,3} required (?:positional|keyword)"
    r"|has no attribute|cannot import name|No module named"
)
# the framework a frame's file belongs to (the save/load frames say which)
_PACKAGES = (
    ("dcp", lazy_compile(r"[/\\]torch[/\\]distributed[/\\]checkpoint[/\\]")),
    ("transformers", lazy_compile(r"[/\\]transformers[/\\]")),
    ("accelerate", lazy_compile(r"[/\\]accelerate[/\\]")),
    ("deepspeed", lazy_compile(r"[/\\]deepspeed[/\\]")),
    ("lightning", lazy_compile(r"[/\\](?:pytorch_)?lightning(?:_fabric)?[/\\]")),
    ("megatron", lazy_compile(r"[/\\]megatron[/\\]")),
    ("safetensors", lazy_compile(r"[/\\]safetensors[/\\]")),
    ("diffusers", lazy_compile(r"[/\\]diffusers[/\\]")),
    ("peft", lazy_compile(r"[/\\]peft[/\\]")),
    ("mmengine", lazy_compile(r"[/\\]mmengine[/\\]")),
    ("torch", lazy_compile(r"[/\\]torch[/\\]")),
)
# PyTorch's ProcessGroupWrapper (TORCH_DISTRIBUTED_DEBUG=DETAIL) checks each collective's fingerprint
# across ranks before running it: "Detected mismatch between collectives on ranks. Rank 1 is running
# collective: CollectiveFingerPrint(SequenceNumber=485, OpType=ALLREDUCE, …), but Rank 0 is running
# collective: CollectiveFingerPrint(SequenceNumber=485, OpType=BROADCAST, …)"
_MISMATCH = lazy_compile(
    r"Detected mismatch between collectives on ranks\. Rank (?P<rank>\d{1,6}) is running (?:inconsistent )?"
    r"collective: CollectiveFingerPrint\((?P<print>[^)]{0,400})"
)
_MISMATCH_OTHER = lazy_compile(
    r"but Rank (?P<rank>\d{1,6}) is running collective: (?:CollectiveFingerPrint\((?P<print>[^)]{0,400})"
    r"|(?P<op>[A-Z_]{2,40}))"
)
_OP_TYPE = lazy_compile(r"OpType=(?P<op>[A-Z_]{2,40})")
_SEQUENCE = lazy_compile(r"SequenceNumber=(?P<seq>\d{1,12})")
_CHECKPOINT_FRAME = lazy_compile(r"checkpoint|save", re.I)
_ANY_FUNCTION = lazy_compile(r".")
_PATH_PARTS = lazy_compile(r"[/\\]+")
_HINTS = ("Error", "Exception", "mismatch between collectives")  # the check's line may follow any prefix


class _Traceback:
    """The exception line and the traceback above it: frames ``(file, function)`` and source lines."""

    def __init__(self, line: str, window: list[str]) -> None:
        self.rank = _rank_of(line, window)
        body = _RANK_PREFIX.sub("", line).strip()
        match = _EXCEPTION.match(body)
        self.cls = match["cls"] if match else ""
        self.message = (match["msg"] or "") if match else ""
        self.frames: list[tuple[str, str]] = []
        self.sources: list[str] = []
        for text in _traceback_above(window):
            text = _RANK_PREFIX.sub("", text)
            frame = _FRAME.search(text) or _IPYTHON_FRAME.search(text)
            if frame:
                self.frames.append((frame["file"], frame["func"]))
            elif text.strip() and not _TRACEBACK_START.search(text):
                self.sources.append(text.strip())

    def framework(self, wanted: Any) -> str | None:
        """The package of the outermost frame whose function matches ``wanted``."""
        for file, func in self.frames:
            if wanted.search(func):
                found = next((name for name, pattern in _PACKAGES if pattern.search(file)), None)
                if found:
                    return found
        return None


def _rank_of(line: str, window: list[str]) -> int | None:
    if match := _RANK_PREFIX.match(line):
        return int(match["rank"])
    header = next((m for text in reversed(window) if (m := _RANK_HEADER.search(text))), None)
    return int(header["rank"]) if header else None


def cut_traceback(lines: list[tuple[int, str]]) -> tuple[int, str] | None:
    """The header line of a traceback the input ends inside of: ``Traceback (most recent call
    last)`` followed only by its frames and their source lines to the end (the paste stopped
    before the exception). Something raised, and what it was is not in the input: an error
    line that nothing can explain, never a healthy log."""
    header, frames = None, 0
    for number, line in lines:
        body = _RANK_PREFIX.sub("", line)
        if _TRACEBACK_START.search(body):
            header, frames = (number, line), 0
        elif header is not None and body.strip():
            if _FRAME.match(body) or _IPYTHON_FRAME.match(body):
                frames += 1
            elif not body[:1].isspace():
                header = None  # the exception line (or anything else the traceback ends with)
    return header if header is not None and frames else None


def _traceback_above(window: list[str]) -> list[str]:
    """The lines from the last ``Traceback (most recent call last)`` header (or the whole window)."""
    starts = [i for i, text in enumerate(window) if _TRACEBACK_START.search(text)]
    return window[starts[-1] :] if starts else window


def _role(path: str | None) -> str:
    if not path:
        return "checkpoint"
    return next((role for role, pattern in _ROLES if pattern.search(path.rstrip("/\\"))), "shard")


def _missing(tb: _Traceback) -> dict[str, Any] | None:
    """The resume record when the traceback is a checkpoint load that found a part missing."""
    if said := _LOADER_MESSAGE.search(tb.message):
        group = next(name for name in _LOADER_GROUPS if said[name])
        loader, member, role = _LOADER_GROUPS[group]
        return _resume(said[group].rstrip(".,"), member or said["orbax_name"], role, tb, loader)
    if tb.cls == "AssertionError" and _deepspeed_found_no_files(tb):
        return _resume(None, "mp_rank_*_model_states.pt", "shard", tb, "deepspeed")
    found = _MISSING_PATH.search(tb.message)
    if tb.cls != "FileNotFoundError" or not found:
        return None
    path = found["q1"] or found["q2"]
    # the innermost frame that loads or saves says which one failed: a save's ENOENT is the save's
    innermost = _innermost_load_or_save(tb)
    loading = bool(_LOAD_FUNCTION.search(innermost))
    if (innermost and not loading) or (not loading and not _CHECKPOINT_PATH.search(path)):
        return None  # a file not found that no loader looked for: another reader's errno line
    return _resume(path, _member(path), _role(path), tb, tb.framework(_LOAD_FUNCTION))


def _deepspeed_found_no_files(tb: _Traceback) -> bool:
    """DeepSpeed's state-dict loader asserting that the tag has model-states files (check_ckpt_list)."""
    return any(_CKPT_LIST.search(text) for text in [*tb.sources, *(func for _, func in tb.frames)])


def _innermost_load_or_save(tb: _Traceback) -> str:
    functions = [func for _, func in reversed(tb.frames)]
    return next((f for f in functions if _LOAD_FUNCTION.search(f) or _SAVE_FUNCTION.search(f)), "")


def _member(path: str) -> str:
    return _PATH_PARTS.split(path.rstrip("/\\"))[-1]


def _resume(
    path: str | None, member: str | None, role: str, tb: _Traceback, loader: str | None
) -> dict[str, Any]:
    return {"path": path, "member": member, "role": role, "rank": tb.rank, "loader": loader}


def _failure(tb: _Traceback) -> dict[str, Any] | None:
    """The failure record when a programming error ends a traceback through a save or a load."""
    if tb.cls not in _PROGRAMMING or _IO_WORDS.search(tb.message):
        return None
    saving = [frame_framework(f'File "{file}", line 1, in {func}') for file, func in tb.frames]
    save_framework = next((hit[0] for hit in saving if hit), None)
    named = _NAMED_CALL.search(tb.message)
    said = (named["func"] or named["attr"]) if named else ""
    op = None
    if (
        save_framework
        or any(_SAVE_FUNCTION.search(func) for _, func in tb.frames)
        or any(_SAVE_CALL.search(s) for s in tb.sources)
        or "save" in said
    ):
        op = "save"
    elif tb.framework(_LOAD_FUNCTION) or "load" in said:
        op = "load"
    if op is None or (op == "load" and tb.cls not in _PROGRAMMING_AT_LOAD):
        return None
    framework = save_framework or tb.framework(_LOAD_FUNCTION if op == "load" else _ANY_FUNCTION)
    api_change = bool(_API_CHANGE.search(tb.message))
    return {"exception": tb.cls, "op": op, "framework": framework, "api_change": api_change}


def _mismatch(line: str, tb: _Traceback) -> dict[str, Any] | None:
    """The two ranks' collectives PyTorch's check compared, and what differs between them."""
    first = _MISMATCH.search(line)
    if first is None:
        return None
    other = _MISMATCH_OTHER.search(line, first.end())
    prints = [first["print"], (other["print"] or "") if other else ""]
    ops = [m["op"] if (m := _OP_TYPE.search(p)) else None for p in prints]
    if other and other["op"]:
        ops[1] = other["op"]
    seqs = [int(m["seq"]) if (m := _SEQUENCE.search(p)) else None for p in prints]
    differs = (
        "op" if None not in ops and ops[0] != ops[1]
        else "sequence" if None not in seqs and seqs[0] != seqs[1]
        else "shape" if other else None
    )  # fmt: skip
    in_save = any(_CHECKPOINT_FRAME.search(f"{file} {func}") for file, func in tb.frames)
    ranks = [int(first["rank"]), int(other["rank"]) if other else None]
    return {"ranks": ranks, "ops": ops, "sequences": seqs, "differs": differs, "in_save": in_save}


def _error(kind: str, line_no: int, line: str, artifact: str, **extra: Any) -> dict[str, Any]:
    ckpt = {"errno": None, "path": None, "op": None, "timeout_ms": None, "pid": None, "process": None,
            "gpu": None, "request": None, "scratch": None, "why": None, "cuda_error": None,
            **extra}  # fmt: skip
    return {"code": None, "name": None, "kind": kind, "api": None, "text": line.strip()[:500],
            "src": src(artifact, line_no, line), "source": "python", "ret": None, "errno": None,
            "rdma": None, "ckpt": ckpt}  # fmt: skip


def signature(line: str) -> bool:
    """A line that makes a text a job's log for this module: a loader's own message, a traceback frame
    of a framework's save or load, an exception naming a save or load call."""
    if _LOADER_MESSAGE.search(line) or frame_framework(line) or _MISMATCH.search(line):
        return True
    body = _RANK_PREFIX.sub("", line)
    frame = _FRAME.search(body) or _IPYTHON_FRAME.search(body)
    if frame and _SAVE_FUNCTION.search(frame["func"]):
        return True  # a save function's frame, the job's own or a framework's
    if frame and _LOAD_FUNCTION.search(frame["func"]) and any(p.search(frame["file"]) for _, p in _PACKAGES):
        return True
    exception = _EXCEPTION.match(body.strip()) if "Error" in line else None
    return bool(exception and _NAMED_CALL.search(exception["msg"] or ""))


def traceback_errors(lines: list[tuple[int, str]], errors: list[dict[str, Any]], artifact: str) -> None:
    """Read each exception line with its traceback: add the resume and framework errors the line-by-line
    readers did not make, and make an ``[Errno 2]`` ``errno_error`` of a checkpoint load a
    ``ckpt_resume_missing`` (in place, in line order)."""
    by_line = {e["src"]["line"]: e for e in errors if isinstance(e.get("src"), dict)}
    window: list[str] = []
    added: list[dict[str, Any]] = []
    for number, line in lines:
        if any(hint in line for hint in _HINTS) and (made := _read(number, line, window, by_line, artifact)):
            added.append(made)
        window.append(line)
        if len(window) > TRACEBACK_WINDOW:
            window.pop(0)
    if added:
        errors.extend(added)
        errors.sort(key=lambda e: e["src"]["line"] if isinstance(e.get("src"), dict) else 0)


def _read(
    number: int, line: str, window: list[str], by_line: dict[int, dict[str, Any]], artifact: str
) -> dict[str, Any] | None:
    if "Detected mismatch between collectives" in line and number not in by_line:
        mismatch = _mismatch(line, _Traceback(line, window))
        return _error("collective_mismatch", number, line, artifact, mismatch=mismatch) if mismatch else None
    if not _EXCEPTION.match(_RANK_PREFIX.sub("", line).strip()):
        return None
    known = by_line.get(number)
    if known is not None and known["kind"] != "errno_error":
        return None  # an I/O error, a GPU error…: its own reader's kind stands
    tb = _Traceback(line, window)
    if (resume := _missing(tb)) is not None:
        if known is not None:
            known["kind"] = "ckpt_resume_missing"
            known["ckpt"]["resume"] = resume
            return None
        return _error("ckpt_resume_missing", number, line, artifact, path=resume["path"], resume=resume)
    if known is None and (failure := _failure(tb)) is not None:
        return _error("framework_error", number, line, artifact, failure=failure)
    return None
