"""The checkpoint job's own errors: Python tracebacks and framework messages (read by ``app_log``).

Pure line classifiers, one error dict per failing line (the ``app_log.errors[]`` shape with
``source`` "python"|"torch"|"nccl"|"launcher"|"kernel" and a ``ckpt`` record). Real lines they read::

    OSError: [Errno 28] No space left on device
    OSError: [Errno 122] Disk quota exceeded: 'out/intermediate.ntw'
    RuntimeError: write(): fd 29 failed with Input/output error
    RuntimeError: [enforce fail at inline_container.cc:445] . PytorchStreamWriter failed writing file
        data/176: file write failed
    RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory
    RuntimeError: unexpected EOF, expected 3302200 more bytes. The file might be corrupted.
    torch.distributed.checkpoint.api.CheckpointException: CheckpointException ranks:dict_keys([0, 1])
    [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=28956, OpType=ALLREDUCE, …
        Timeout(ms)=600000) ran for 600058 milliseconds before timing out.
    [856341.770960] Out of memory: Killed process 410126 (python) total-vm:79905000kB, anon-rss:…

Kinds:

- errno kinds from ``[Errno N]`` (OSError, IOError, PermissionError …), Rust's io error
  (safetensors: ``IoError(Os { code: 28, kind: StorageFull, … })``, ``… (os error 28)``) or the C
  library's message in a torch ``write(): fd N failed with …``: ``ckpt_enospc`` (28),
  ``ckpt_edquot`` (122), ``ckpt_eio`` (5), ``ckpt_estale`` (116), ``ckpt_erofs`` (30),
  ``ckpt_eacces`` (13); the path the error names (``: '/ckpt/step-10/model.pt'``) when it names one;
- ``ckpt_write_failed``: torch's zip writer failed without saying why (``PytorchStreamWriter failed
  writing file …``, ``unexpected pos N vs M``: the file ended short of what was written);
- ``ckpt_truncated``: a checkpoint that does not load (``unexpected EOF, expected N more bytes``,
  ``failed finding central directory``): written short by an earlier save that failed or was killed,
  or copied incompletely;
- ``ckpt_dcp_failed``: ``torch.distributed.checkpoint`` raised ``CheckpointException`` (its ranks'
  own errors follow it in the traceback and are read as their own kinds);
- ``collective_timeout``: ProcessGroupNCCL's watchdog timed a collective out (the op, the timeout);
- ``oom_killed``: the kernel's OOM killer killed a process (its pid and command), or the launcher says
  a rank died of SIGKILL (``Killed``, ``exitcode -9``, ``Signals.SIGKILL``);
- ``gpu_oom``: the GPU's memory was exhausted (not the host's): PyTorch's caching allocator
  (``torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total
  capacity of …``, before 2.1 ``… (GPU 1; 39.59 GiB total capacity; …)``, and FSDP's ``Failed to
  clone() tensor … Error: CUDA out of memory``), the CUDA runtime and driver (``CUDA error: out of
  memory``, ``CUDA_ERROR_OUT_OF_MEMORY``, ``cudaErrorMemoryAllocation``), NCCL (``Cuda failure 2
  'out of memory'``), XLA (``RESOURCE_EXHAUSTED: Out of memory while trying to allocate``); ``ckpt``
  gives the ``gpu`` and the ``request`` (``"2.00 GiB"``) when the line says them;
- ``cufile_interrupted``: a cuFile read/write returned -512 (ERESTARTSYS): the writer was signalled
  mid-I/O (killed, interrupted, timed out), not a storage fault (the kernel's own line, ``nvidia-fs:write
  IO failed :-512``, is a kernel-log event).

``ckpt``: ``{errno (int|None), path (str|None), op (collective type|None), timeout_ms (int|None),
pid (int|None), process (str|None), gpu (int|None), request (str|None), scratch
("shm"|"data_loader"|"tmp"|None)}``; an ENOSPC, EDQUOT or EIO error also gets ``frame_path``
(the path its traceback's writing frame names, when its own line names none) and ``scratch``
from that path or the frames (Python's
multiprocessing, torch.multiprocessing, the DataLoader: shared memory), which
derived.checkpoint_errors places.

``save_context(lines)`` says which lines sit inside a checkpoint save: a save is named (``Saving
checkpoint``, ``save_checkpoint``, ``torch.save``, ``dcp.save``/``async_save``, a frame of
``serialization.py``'s ``save`` or ``torch/distributed/checkpoint``) within ``SAVE_WINDOW`` lines before
the error; ``async`` says whether the log names an asynchronous save.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.app_log_save import save_frame, saving_path
from gdsdoctor.probes.base import src

ERRNO_KINDS = {28: "ckpt_enospc", 122: "ckpt_edquot", 5: "ckpt_eio", 116: "ckpt_estale", 30: "ckpt_erofs",
               13: "ckpt_eacces"}  # fmt: skip
# strerror(3) texts of those errnos (glibc), for lines that print the message without the number
_ERRNO_BY_MESSAGE = (
    ("No space left on device", 28),
    ("Disk quota exceeded", 122),
    ("Input/output error", 5),
    ("Stale file handle", 116),
    ("Stale NFS file handle", 116),
    ("Read-only file system", 30),
    ("Permission denied", 13),
)
_PY_ERRNO = lazy_compile(
    r"(?:\b(?P<exc>[A-Z]\w{0,40}Error|(?<![\w.])[\w.]{0,80}\.\w{0,40}Error): )?"
    r"\[Errno (?P<errno>\d{1,4})\] (?P<msg>[^:\n]{1,80})"
    r"(?:: '(?P<path>[^'\n]{1,500})')?"
)
# Rust's std::io::Error as safetensors and other Rust extensions print it: the Debug form
# "IoError(Os { code: 28, kind: StorageFull, message: \"No space left on device\" })" and the
# Display form "No space left on device (os error 28)"
_RUST_ERRNO = lazy_compile(
    r"\bOs \{ code: (?P<errno>\d{1,4}), kind: \w{1,40}|\(os error (?P<errno2>\d{1,4})\)"
)
_TORCH_WRITE = lazy_compile(
    r"\b(?:write|pwrite|fsync|open)\(\): fd \d{1,9} failed with (?P<msg>[A-Z][\w/ ]{2,40})"
)
# torch.multiprocessing's shared-memory files (shm_open: /dev/shm/torch_…) as its error names them:
# "unable to write to file </torch_739_144252761_4>: No space left on device (28)"
_TORCH_SHM_WRITE = lazy_compile(
    r"\bunable to write to file <(?P<path>/torch_[^>\s]{1,80})>"
    r"(?:: (?P<msg>[A-Z][\w/ ]{2,40}) \((?P<errno>\d{1,4})\))?"
)
_STREAM_WRITER = lazy_compile(
    r"PytorchStreamWriter failed writing (?:file )?(?P<record>\S{1,200})"
    r"|\bunexpected pos \d{1,20} vs \d{1,20}"
)
# torch's writer failing to open its file, or torch.save's check of the parent directory (no errno):
# "File /ckpt/step-10/model.pt cannot be opened.", "Parent directory /ckpt/step-10 does not exist."
_OPEN_FAILED = lazy_compile(
    r"\bFile (?P<path>\S{1,500}) cannot be opened\.|\bParent directory (?P<parent>\S{1,500}) does not exist\."
)
# CUDA's errors as frameworks print them (other than out of memory: ``gpu_oom``): the runtime's text
# (torch's "CUDA error: an illegal memory access was encountered"), an enum's name (cudaError_t,
# CUresult), cuBLAS's status
_CUDA_ERROR = lazy_compile(
    r"\bCUDA (?:driver )?error: (?P<text>[a-z][\w ,'-]{2,100}?)(?:\.|\n|$| at | when | in |\s{2})"
    r"|\b(?P<name>cudaError(?!Memory)[A-Z]\w{2,40}|CUDA_ERROR_(?!OUT_OF_MEMORY)[A-Z_]{3,40}"
    r"|CUBLAS_STATUS_(?!SUCCESS)[A-Z_]{3,30})\b"
)
_TRUNCATED = lazy_compile(
    r"\bunexpected EOF(?:, expected \d{1,20} more bytes)?\. The file might be corrupted"
    r"|PytorchStreamReader failed reading zip archive: failed finding central directory"
)
_DCP = lazy_compile(
    r"\btorch\.distributed\.checkpoint\.api\.CheckpointException\b|^\s*CheckpointException ranks:"
)
_OOM_KILL = lazy_compile(
    r"\b(?:Memory cgroup out of memory|Out of memory): Killed process "
    r"(?P<pid>\d{1,10}) \((?P<comm>[^)\n]{1,64})\)"
)
# what a launcher prints when a rank died of SIGKILL (the OOM killer's signal; also `kill -9`, a scheduler)
_SIGKILL = lazy_compile(
    r"^\s*Killed\s*$|\bexitcode\s*:\s*-9\b|\bSignals\.SIGKILL\b|\breturn code = -9\b"
    r"|\bexit(?:ed)? with (?:signal|code) -?9\b"
)
# GPU memory exhausted, in the words of PyTorch's caching allocator (c10/cuda/CUDACachingAllocator.cpp),
# the CUDA runtime/driver (cudaErrorMemoryAllocation = 2, CUDA_ERROR_OUT_OF_MEMORY), NCCL (CUDACHECK's
# "Cuda failure %d '%s'") and XLA's allocator
_GPU_OOM = lazy_compile(
    r"\bCUDA out of memory\.|\bCUDA error: out of memory\b|\bCuda failure (?:2 )?'out of memory'"
    r"|\bCUDA_ERROR_OUT_OF_MEMORY\b|\bcudaErrorMemoryAllocation\b"
    r"|\bRESOURCE_EXHAUSTED: Out of memory while trying to allocate\b"
)
_GPU_OOM_REQUEST = lazy_compile(r"\bTried to allocate (?P<request>\d{1,9}(?:\.\d{1,3})? [KMGTPE]iB)")
_GPU_OOM_GPU = lazy_compile(r"\bGPU (?P<gpu>\d{1,3})(?:;| has a total capacity)")
# the application's side of ERESTARTSYS (the kernel's `nvidia-fs:write IO failed :-512` is a dmesg event)
_ERESTARTSYS = lazy_compile(r"\bcuFile(?:Read|Write)\w{0,10}\b[^\n]{0,80}?-512\b")
_SAVE_MARKER = lazy_compile(
    # a traceback frame of a function that saves (fsdp_save_ckpt, save_model_and_optimizer_sharded,
    # safe_save_model_for_hf_trainer) and FSDP gathering a full state dict (its module; the warning
    # its state-dict hooks print when a gathered tensor cannot be copied)
    r"\", line \d{1,6}, in \w{0,40}save\w{0,40}|fsdp/_state_dict_utils\.py"
    r"|Failed to clone\(\) tensor with name|state_dict entry could point to invalid memory|"
    r"\bSaving (?:model )?checkpoint|\bsave_checkpoint\b|\btorch\.save\(|\bdcp\.(?:async_)?save\b"
    r"|\basync_save\b|serialization\.py\", line \d{1,6}, in (?:save|_save)\b"
    r"|torch/distributed/checkpoint/|\bcheckpoint_hook\b"
    r"|\bstaging if async\b|\bsave_pretrained\b|\b_save_checkpoint\b"
    r"|\bmegatron[./]core[./]dist_checkpointing\b",  # Megatron's checkpoint package, as logger or frame
    re.IGNORECASE,
)
_ASYNC_MARKER = lazy_compile(
    r"\basync_save\b|\basync[ _-]checkpoint|--async-save\b|\bAsyncCallsQueue\b|\bstaging if async\b"
    r"|\basync_with_pinned_mem\b|\bpersistent[ _-]ckpt[ _-]worker\b",
    re.IGNORECASE,
)
SAVE_WINDOW = 400  # lines: a traceback of a deep framework stack, or a watchdog's frames, stays within it
_HINTS = ("Errno", "os error", "Os { code", "failed with", "unable to write to file", "Pytorch", "unexpected",
          "CheckpointException", "Watchdog", "Killed", "-9", "SIGKILL", "-512", "out of memory",
          "OUT_OF_MEMORY", "MemoryAllocation", "Out of memory", "cannot be opened",
          "does not exist", "CUDA", "cudaError", "CUBLAS")  # fmt: skip


def _record(**fields: Any) -> dict[str, Any]:
    keys = (
        "errno",
        "path",
        "op",
        "timeout_ms",
        "pid",
        "process",
        "gpu",
        "request",
        "scratch",
        "why",
        "cuda_error",
    )
    return {key: fields.get(key) for key in keys}


def _error(
    kind: str, source: str, ckpt: dict[str, Any], line_no: int, line: str, artifact: str
) -> dict[str, Any]:
    return {"code": None, "name": None, "kind": kind, "api": None, "text": line.strip()[:500],
            "src": src(artifact, line_no, line), "source": source, "ret": None, "errno": ckpt["errno"],
            "rdma": None, "ckpt": ckpt}  # fmt: skip


def _errno_of_message(message: str) -> int | None:
    return next((number for text, number in _ERRNO_BY_MESSAGE if message.startswith(text)), None)


def _errno_error(line: str) -> tuple[str, str, dict[str, Any]] | None:
    # an errno without a kind of its own (ENOTCONN from a FUSE mount gone, EOPNOTSUPP) is still the
    # job's error, with its path and save: ``errno_error``
    if match := _PY_ERRNO.search(line):
        errno = int(match["errno"])
        return ERRNO_KINDS.get(errno, "errno_error"), "python", _record(errno=errno, path=match["path"])
    if match := _RUST_ERRNO.search(line):
        errno = int(match["errno"] or match["errno2"])
        return ERRNO_KINDS.get(errno, "errno_error"), "rust", _record(errno=errno)
    if match := _TORCH_SHM_WRITE.search(line):
        errno = int(match["errno"]) if match["errno"] else _errno_of_message(match["msg"] or "")
        kind = ERRNO_KINDS.get(errno) if errno else None
        return (kind, "torch", _record(errno=errno, path=match["path"], scratch="shm")) if kind else None
    if match := _TORCH_WRITE.search(line):
        errno = _errno_of_message(match["msg"])
        kind = ERRNO_KINDS.get(errno) if errno else None
        return (kind, "torch", _record(errno=errno)) if kind else None
    return None


def _framework_error(line: str) -> tuple[str, str, dict[str, Any]] | None:
    if _STREAM_WRITER.search(line):
        return "ckpt_write_failed", "torch", _record(why="write")
    if match := _OPEN_FAILED.search(line):
        why = "open" if match["path"] else "no_parent"
        return "ckpt_write_failed", "torch", _record(path=match["path"] or match["parent"], why=why)
    if _TRUNCATED.search(line):
        return "ckpt_truncated", "torch", _record()
    if _DCP.search(line):
        return "ckpt_dcp_failed", "torch", _record()
    return None


def _gpu_error(line: str) -> tuple[str, str, dict[str, Any]] | None:
    if not _GPU_OOM.search(line):
        if match := _CUDA_ERROR.search(line):
            return "cuda_error", "cuda", _record(cuda_error=(match["name"] or match["text"]).strip())
        return None
    request, gpu = _GPU_OOM_REQUEST.search(line), _GPU_OOM_GPU.search(line)
    source = "nccl" if "Cuda failure" in line else "torch"
    return (
        "gpu_oom",
        source,
        _record(gpu=int(gpu["gpu"]) if gpu else None, request=request and request["request"]),
    )


def _kill_error(line: str) -> tuple[str, str, dict[str, Any]] | None:
    if match := _OOM_KILL.search(line):
        return "oom_killed", "kernel", _record(pid=int(match["pid"]), process=match["comm"])
    if _SIGKILL.search(line):
        return "oom_killed", "launcher", _record()
    if _ERESTARTSYS.search(line):
        return "cufile_interrupted", "app", _record(errno=512)
    return None


def checkpoint_error(line_no: int, line: str, artifact: str) -> dict[str, Any] | None:
    """The checkpoint-path error one line reports, or None."""
    if not any(hint in line for hint in _HINTS):
        return None  # most lines of a training log: no pattern needs to run
    found = _errno_error(line) or _framework_error(line) or _gpu_error(line) or _kill_error(line)
    return _error(found[0], found[1], found[2], line_no, line, artifact) if found else None


def signature(line: str) -> bool:
    """A line this module makes an error of (what makes a text an application log)."""
    return checkpoint_error(0, line, "") is not None


def save_context(
    lines: Iterable[tuple[int, str]], errors: list[dict[str, Any]], artifact: str
) -> dict[str, Any]:
    """Mark each checkpoint error made inside a save (``during_save``); say whether the log saves
    asynchronously. ``lines`` are the numbered lines the errors came from."""
    marks = [number for number, line in lines if _SAVE_MARKER.search(line)]
    for error in errors:
        if error.get("ckpt") is None:
            continue
        at = error["src"].get("line") if isinstance(error.get("src"), dict) else None
        error["ckpt"]["during_save"] = (
            any(at - SAVE_WINDOW <= mark <= at for mark in marks) if isinstance(at, int) else None
        )
    _place(lines, errors)
    marked = [src(artifact, number, line) for number, line in lines if _ASYNC_MARKER.search(line)][:5]
    return {"saving": bool(marks), "async": bool(marked), "async_lines": marked}


# Where an errno error happened, when its line does not say: the traceback above it. A path
# literal in the frame that wrote (``torch.save(sd, "/dev/shm/x.pt")``, ``open('/tmp/a', 'wb')``)
# and frames of the code that writes to shared memory (Python's multiprocessing semaphores and
# queues, torch.multiprocessing's tensor sharing, the DataLoader's workers: all in /dev/shm).
TRACEBACK_WINDOW = 80  # lines above the error searched for its traceback's frames
_TRACEBACK_START = lazy_compile(r"Traceback \(most recent call last\)")
_PATH_LITERAL = lazy_compile(r"""(?<![\w.])['"](?P<path>/[^'"\s%{}]{1,300})['"]""")
_FRAME_LINE = lazy_compile(r'^\s*(?:\[rank\d{1,6}\]:\s*)?File "')
_DATA_LOADER_FRAME = lazy_compile(r"torch/utils/data/|\bDataLoader worker\b")
_SHM_FRAME = lazy_compile(
    r"multiprocessing/(?:synchronize|queues|heap|shared_memory|reduction)\.py|torch/multiprocessing/"
    r"|\b_share_(?:fd|filename)\w{0,10}\b|\bSemLock\b|/dev/shm\b"
)
_SHM_PATH = lazy_compile(r"^/dev/shm(?:/|$)|^/torch_")
_TMP_PATH = lazy_compile(r"^/(?:var/)?tmp(?:/|$)")
_PLACED_ERRNOS = (28, 122, 5)


def scratch_of(path: str | None, frames: list[str]) -> str | None:
    """``shm``, ``data_loader`` or ``tmp`` when the path or the frames that wrote place a write on
    the job's scratch space rather than on its checkpoint; None otherwise."""
    if path and _SHM_PATH.search(path):
        return "shm"
    if path and _TMP_PATH.search(path):
        return "tmp"
    if any(_DATA_LOADER_FRAME.search(frame) for frame in frames):
        return "data_loader"
    if not path and any(_SHM_FRAME.search(frame) for frame in frames):
        return "shm"
    return None


def _place(lines: Iterable[tuple[int, str]], errors: list[dict[str, Any]]) -> None:
    """Give each checkpoint error the save its traceback shows (``ckpt.save``: the framework's save
    frame and the path it wrote, app_log_save); each ENOSPC/EDQUOT/EIO error the path its
    traceback's writing frame names (``ckpt.frame_path``, when its own line names none) and
    ``ckpt.scratch``. A chained traceback below the error (``During handling of the above
    exception``) holds the frames that called the failed write: the save is completed from them."""
    wanted = {
        e["src"]["line"]: e
        for e in errors
        if isinstance(e.get("ckpt"), dict) and isinstance(e.get("src"), dict)
    }
    if not wanted:
        return
    window: list[tuple[int, str]] = []
    saving: tuple[int, str] | None = None  # the last "Saving … to PATH" line: (number, path)
    chains: list[_Chain] = []
    for number, line in lines:
        chains = [chain for chain in chains if chain.feed(number, line)]
        if number in wanted:
            frames = _traceback_above(window)
            recent = saving[1] if saving and number - saving[0] <= SAVE_WINDOW else None
            ckpt = wanted[number]["ckpt"]
            _place_one(ckpt, frames, line, recent)
            chains.append(_Chain(ckpt, number))
        if path := saving_path(line):
            saving = (number, path)
        window.append((number, line))
        if len(window) > TRACEBACK_WINDOW:
            window.pop(0)
    for chain in chains:
        chain.close()


_CHAINED = lazy_compile(
    r"During handling of the above exception, another exception occurred"
    r"|The above exception was the direct cause"
)
_EXCEPTION_LINE = lazy_compile(r"^(?:\[rank\d{1,6}\]:\s*)?[A-Za-z_][\w.]{0,120}(?::|$)")
CHAIN_GAP = 3  # lines between an exception and the chained traceback's header


class _Chain:
    """The traceback chained below an error, read as the lines come: its frames complete the save."""

    def __init__(self, ckpt: dict[str, Any], at: int) -> None:
        self.ckpt, self.at, self.collecting = ckpt, at, False
        self.frames: list[str] = []

    def feed(self, number: int, line: str) -> bool:
        """Read one more line; False once the chained traceback ended (or never began)."""
        if not self.collecting:
            self.collecting = bool(_CHAINED.search(line))
            return self.collecting or number - self.at <= CHAIN_GAP
        if (
            _FRAME_LINE.search(line)
            or line.startswith((" ", "\t"))
            or not line.strip()
            or _TRACEBACK_START.search(line)
        ):
            self.frames.append(line)
            return number - self.at <= TRACEBACK_WINDOW or self.close()
        if _EXCEPTION_LINE.search(line):
            return self.close()
        self.frames.append(line)
        return number - self.at <= TRACEBACK_WINDOW or self.close()

    def close(self) -> bool:
        outer = save_frame(self.frames)
        if outer is None:
            return False
        save = self.ckpt.get("save") or {"framework": None, "function": None, "writer": None, "path": None}
        save.update(
            framework=outer["framework"], function=outer["function"], writer=save["writer"] or outer["writer"]
        )
        self.ckpt["save"] = save
        return False


def _place_one(ckpt: dict[str, Any], frames: list[str], line: str, saving: str | None) -> None:
    code = [f for f in frames if not _FRAME_LINE.search(f)]  # the frames' source lines
    frame_path = next((m["path"] for f in reversed(code) if (m := _PATH_LITERAL.search(f))), None)
    save = save_frame(frames)
    if save is not None or saving is not None:
        save = save or {"framework": None, "function": None, "writer": None, "path": None}
        save["path"] = ckpt.get("path") or frame_path or saving
    ckpt["save"] = save
    if ckpt.get("errno") not in _PLACED_ERRNOS:
        return
    ckpt["frame_path"] = frame_path if not ckpt.get("path") else None
    ckpt["scratch"] = ckpt.get("scratch") or scratch_of(ckpt.get("path") or frame_path, [*frames, line])


def _traceback_above(window: list[tuple[int, str]]) -> list[str]:
    """The lines of the traceback that ends just above an error: from its last ``Traceback
    (most recent call last)`` line (or the whole window when none is in it)."""
    texts = [line for _, line in window]
    starts = [i for i, line in enumerate(texts) if _TRACEBACK_START.search(line)]
    return texts[starts[-1] :] if starts else texts
