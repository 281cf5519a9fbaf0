"""The NCCL family in a job's output, one reader (read by ``app_log``): NCCL's own warnings,
the results NCCL returns as a framework prints them, ProcessGroupNCCL's watchdog and heartbeat,
and the waits vLLM reports while its workers do not answer.

Pure line classifiers, one error dict per failing line (the ``app_log.errors[]`` shape, with an
``nccl`` record). The completion and verbs errors of ``NET/IB`` lines are ``app_log_rdma``'s (that
reader runs first: it decodes the work-completion status); every other ``NCCL WARN`` line is read
here. Real lines (tests/data/app_log_nccl/SOURCES.md)::

    ng30903:3063028:3066152 [3] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'
    … n176-080-198:2657296:2658232 [0] include/alloc.h:102 NCCL WARN Cuda failure 1 'invalid argument'
    ng30903:3063025:3066048 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer …
      what():  NCCL error in: …/c10d/NCCLUtils.hpp:181, unhandled cuda error, NCCL version 21.0.3
    torch.distributed.DistBackendError: NCCL error in: …/ProcessGroupNCCL.cpp:1275, unhandled system error …
    [rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation
        timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168,
        Timeout(ms)=600000) ran for 600060 milliseconds before timing out.
    [rank6]:[E429 13:55:49.384372190 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank 6]
        ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring …
    [shm_broadcast.py:501] No available shared memory broadcast block found in 60 seconds. …
    TimeoutError: RPC call to execute_model timed out.

Kinds:

- ``nccl_warn``: an ``NCCL WARN``/``NCCL ABORT`` line no narrower kind reads (a socket closed by the
  peer, a proxy that failed, a bootstrap that timed out), except NCCL's notes about its own optional
  plugins (error_lines' benign list);
- ``nccl_cuda_failure``: NCCL's ``Cuda failure N 'text'`` (cudaError_t N; older NCCL prints the text
  alone); ``'out of memory'`` is ``gpu_oom`` (the GPU's memory, not the host's);
- ``nccl_error``: an ``ncclResult_t`` as PyTorch, CuPy or NCCL's tests print it (``NCCL error in: FILE,
  unhandled system error``, ``NCCL Error 1: unhandled cuda error``, ``ncclRemoteError: …``): ``result``
  is the enum's name (1 ncclUnhandledCudaError, 2 ncclSystemError, 3 ncclInternalError,
  4 ncclInvalidArgument, 5 ncclInvalidUsage, 6 ncclRemoteError), with the ``version`` NCCL printed;
- ``collective_timeout``: ProcessGroupNCCL's watchdog timed a collective out: ``op``, ``seq``,
  ``timeout_ms``, ``ran_ms``, ``numel_in``/``numel_out``, ``rank`` (also in ``ckpt.op`` and
  ``ckpt.timeout_ms``, where the checkpoint rules read them);
- ``collective_hang``: the process group or the engine stopped answering, not one collective timing
  out: the heartbeat monitor fired or the watchdog itself got stuck (``hang`` "heartbeat" |
  "watchdog_stuck", ``seconds``), or vLLM's RPC to its workers timed out (``hang`` "rpc_timeout",
  ``method``);
- ``distributed_wait``: vLLM's ``No available shared memory broadcast block found in N seconds``: a
  worker has not taken the last broadcast for N seconds — hanging, or compiling or quantising (vLLM's
  own words); ``seconds``. Not an error line by itself: the count of such lines is the wait.

``nccl``: ``{host, pid, cuda_dev, file (NCCL's source file:line), level (WARN|ABORT|None), message,
cuda_error (int|None), cuda_error_text, result, version, op, seq (int|None), numel_in, numel_out,
timeout_ms, ran_ms, rank (int|None), hang, seconds, method}``.
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import src

# NCCL's debug prefix (debug.cc): "HOST:PID:TID [CUDADEV] [FILE:LINE ]NCCL LEVEL message"
_HEADER = lazy_compile(
    r"(?<![\w.-])(?P<host>[\w.-]{1,64}):(?P<pid>\d{1,10}):(?P<tid>\d{1,10}) \[(?P<dev>\d{1,3})\] "
    r"(?:(?P<file>[\w./-]{1,120}:\d{1,6}) )?NCCL (?P<level>WARN|ABORT)\b ?(?P<msg>.{0,500})"
)
_LEVEL = lazy_compile(r"\bNCCL (?:WARN|ABORT)\b ?(?P<msg>.{0,500})")
# checks.h: WARN("Cuda failure %d '%s'", err, cudaGetErrorString(err)); before 2.19 without %d
_CUDA_FAILURE = lazy_compile(r"\bCuda failure (?:(?P<code>\d{1,4}) )?'(?P<text>[^'\n]{1,120})'")
# ncclGetErrorString's texts (src/init.cc) and the enum's names
_RESULT_NAMES = {
    1: "ncclUnhandledCudaError",
    2: "ncclSystemError",
    3: "ncclInternalError",
    4: "ncclInvalidArgument",
    5: "ncclInvalidUsage",
    6: "ncclRemoteError",
}
_RESULT_TEXTS = (
    ("unhandled cuda error", 1),
    ("unhandled system error", 2),
    ("internal error", 3),
    ("invalid argument", 4),
    ("invalid usage", 5),
    ("remote process exited or there was a network error", 6),
)
_RESULT = lazy_compile(
    r"\bNCCL error in: \S{1,300}?, (?P<text>[a-z][a-z ]{3,60}?)(?: - line \d{1,6})?(?: \(run with|,|\.|$)"
    r"|\bNCCL Error (?P<num>\d):? (?P<text2>[a-z][a-z ]{3,60}?)(?: \(run with|,|\.|$)"
    r"|\b(?P<name>nccl(?:UnhandledCuda|System|Internal|InvalidArgument|InvalidUsage|Remote)Error)\b"
)
_VERSION = lazy_compile(r"\bNCCL version (?P<version>\d{1,3}\.\d{1,3}\.\d{1,3})")
# ProcessGroupNCCL.cpp: "[Rank N] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=…,
# OpType=…[, NumelIn=…, NumelOut=…], Timeout(ms)=…) ran for N milliseconds before timing out."
_WATCHDOG = lazy_compile(r"Watchdog caught collective operation timeout: WorkNCCL\(")
_RANK = lazy_compile(r"\[(?:PG [^\]]{0,80}?)?Rank (?P<rank>\d{1,6})\]")
_WORK_FIELDS = {
    "seq": lazy_compile(r"\bSeqNum=(?P<v>\d{1,15})"),
    "op": lazy_compile(r"\bOpType=(?P<v>\w{1,40})"),
    "numel_in": lazy_compile(r"\bNumelIn=(?P<v>\d{1,15})"),
    "numel_out": lazy_compile(r"\bNumelOut=(?P<v>\d{1,15})"),
    "timeout_ms": lazy_compile(r"\bTimeout\(ms\)=(?P<v>\d{1,12})"),
    "ran_ms": lazy_compile(r"\bran for (?P<v>\d{1,15}) milliseconds"),
}
_STUCK = lazy_compile(r"\bwatchdog got stuck for (?P<seconds>\d{1,7}) seconds")
_HEARTBEAT = lazy_compile(r"\bHeartbeat monitor timed out!")
_RPC_TIMEOUT = lazy_compile(r"\bRPC call to (?P<method>\w{1,60}) timed out\b")
_SHM_WAIT = lazy_compile(
    r"\bNo available shared memory broadcast block found in (?P<seconds>\d{1,7}) seconds?"
)
_SOURCES = {"heartbeat": "torch", "watchdog_stuck": "torch", "rpc_timeout": "vllm",
            "shm_broadcast_wait": "vllm"}  # fmt: skip
_HINTS = ("NCCL", "nccl", "Watchdog", "watchdog", "Heartbeat", "RPC call", "shared memory broadcast")

_KEYS = ("host", "pid", "cuda_dev", "file", "level", "message", "cuda_error", "cuda_error_text", "result",
         "version", "op", "seq", "numel_in", "numel_out", "timeout_ms", "ran_ms", "rank", "hang", "seconds",
         "method")  # fmt: skip


def _record(line: str, **fields: Any) -> dict[str, Any]:
    record = dict.fromkeys(_KEYS)
    if header := _HEADER.search(line):
        record.update(host=header["host"], pid=int(header["pid"]), cuda_dev=int(header["dev"]),
                      file=header["file"], level=header["level"], message=header["msg"].strip())  # fmt: skip
    elif level := _LEVEL.search(line):
        record.update(level=level[0].split()[1], message=level["msg"].strip())
    if version := _VERSION.search(line):
        record["version"] = version["version"]
    if rank := _RANK.search(line):
        record["rank"] = int(rank["rank"])
    record.update(fields)
    return record


def _error(kind: str, nccl: dict[str, Any], ckpt: dict[str, Any] | None, source: str, line_no: int, line: str,
           artifact: str) -> dict[str, Any]:  # fmt: skip
    return {"code": None, "name": None, "kind": kind, "api": None, "text": line.strip()[:500],
            "src": src(artifact, line_no, line), "source": source, "ret": None, "errno": None,
            "rdma": None, "ckpt": ckpt, "nccl": nccl}  # fmt: skip


def _ckpt(**fields: Any) -> dict[str, Any]:
    """The ``ckpt`` record app_log_ckpt's kinds carry (the checkpoint rules read op and timeout)."""
    keys = ("errno", "path", "op", "timeout_ms", "pid", "process", "gpu", "request", "scratch")
    return {key: fields.get(key) for key in keys}


def _watchdog(line: str) -> tuple[str, dict[str, Any], dict[str, Any] | None] | None:
    match = _WATCHDOG.search(line)
    if not match:
        return None
    work = line[match.end() :]
    fields = {}
    for key, pattern in _WORK_FIELDS.items():
        found = pattern.search(work)
        fields[key] = (found["v"] if key == "op" else int(found["v"])) if found else None
    nccl = _record(line, **fields)
    return "collective_timeout", nccl, _ckpt(op=fields["op"], timeout_ms=fields["timeout_ms"])


def _hang(line: str) -> tuple[str, dict[str, Any], dict[str, Any] | None] | None:
    if match := _STUCK.search(line):
        return "collective_hang", _record(line, hang="watchdog_stuck", seconds=int(match["seconds"])), None
    if _HEARTBEAT.search(line):
        return "collective_hang", _record(line, hang="heartbeat"), None
    if match := _RPC_TIMEOUT.search(line):
        return "collective_hang", _record(line, hang="rpc_timeout", method=match["method"]), None
    if match := _SHM_WAIT.search(line):
        seconds = int(match["seconds"])
        return "distributed_wait", _record(line, hang="shm_broadcast_wait", seconds=seconds), None
    return None


def _result(line: str) -> tuple[str, dict[str, Any], dict[str, Any] | None] | None:
    match = _RESULT.search(line)
    if not match:
        return None
    if match["name"]:
        name = match["name"]
    else:
        text = (match["text"] or match["text2"] or "").strip()
        number = int(match["num"]) if match["num"] else None
        number = number or next((n for t, n in _RESULT_TEXTS if text.startswith(t)), None)
        name = _RESULT_NAMES.get(number) if number else None
        if name is None:
            return None
    return "nccl_error", _record(line, result=name), None


def _cuda_failure(line: str) -> tuple[str, dict[str, Any], dict[str, Any] | None] | None:
    match = _CUDA_FAILURE.search(line)
    if not match:
        return None
    code = int(match["code"]) if match["code"] else None
    nccl = _record(line, cuda_error=code, cuda_error_text=match["text"])
    if match["text"] == "out of memory":  # cudaErrorMemoryAllocation (2): the GPU's memory
        return "gpu_oom", nccl, _ckpt(gpu=nccl["cuda_dev"])
    return "nccl_cuda_failure", nccl, None


def nccl_error(line_no: int, line: str, artifact: str, benign: bool = False) -> dict[str, Any] | None:
    """The NCCL-family error one line reports, or None. ``benign``: the line is one of NCCL's
    notes about its own optional plugins (error_lines' list): no ``nccl_warn`` of it."""
    if not any(hint in line for hint in _HINTS):
        return None
    found = _watchdog(line) or _hang(line) or _cuda_failure(line) or _result(line)
    if found is None and not benign and (_HEADER.search(line) or _LEVEL.search(line)):
        found = "nccl_warn", _record(line), None
    if found is None:
        return None
    kind, nccl, ckpt = found
    return _error(kind, nccl, ckpt, _SOURCES.get(nccl["hang"], "nccl"), line_no, line, artifact)
