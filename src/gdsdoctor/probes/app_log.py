"""Application output pasted into a ticket that carries cuFile, gdsio or RDMA errors (paste only).

DALI, kvikio, vLLM/fastsafetensors, PyTorch, cudf, gdsio/gdsio_verify and the cufile samples
print cuFile failures in their own words: ``cuFile error (5033): NVFS driver initialization
error``, ``cuFileBufRegister returned an error = 5016``, ``CU_FILE_INTERNAL_ERROR``, kvikio's
``WARNING - cuFile compat mode`` banner, ``write failed : Input/output error``. The error codes
are the CUfileOpError enum (CUFILEOP_BASE_ERR 5000 + n, gds-matrix §8); names and numbers map
both ways, so a log with only one of them still yields both.

gdsio prints its own IO failures (``write io failed of type 1 size: 16777216 , ret: 0``, ``Error: IO
failed stopping traffic, fd :274 ret:-5 errno :22``); NCCL and UCX print the RDMA failures under a
GPUDirect job (``NCCL WARN NET/IB : Got completion … with error 4 … vendor err 81``, ``UCX  ERROR
ibv_create_cq() failed: Cannot allocate memory``): ``app_log_rdma`` reads those.

Section ``app_log``:

- ``errors[]``: ``{code (int|None), name (CU_FILE_*|None), kind, api (cuFile or verbs call|None),
  text, src, source ("app"|"gdsio"|"nccl"|"ucx"), ret (int|None: gdsio's ret), errno (int|None:
  gdsio's errno; 5 for "Input/output error"), rdma (None, or the NCCL/UCX record of
  ``app_log_rdma``)}`` — one per line with a cuFile error or failure, a gdsio IO failure, an
  NCCL/UCX RDMA error;
- ``error_lines[]``: ``{family, device, kind, src}`` — every line that is an error of the storage
  path (gdsdoctor.probes.error_lines): the errors above and the lines no kind reads (a traceback's
  exception, a launcher's exit code, ``NCCL WARN``); the report lists those no cause cites;
- ``codes`` (sorted ints), ``names`` (CU_FILE_* names), ``kinds`` (sorted kinds);
- ``compat_mode``: True when the application says it runs in compat mode (kvikio banner,
  ``GDS driver | N/A (Compatibility Mode)``), else None (silence proves nothing);
- ``compat[]``: the lines saying so (``{text, src}``);
- ``kvikio``: kvikio benchmark header ``{gpu_name, bar1_total_bytes, gds_driver (version
  string or None), config_path, directory, src}`` or None;
- ``gpus[]``: GPU names the output shows (``{name, bar1_total_bytes, src}``);
- ``operator``: GPU Operator nvidia-fs container failures ``[{text, src}]``;
- ``memlock``: the locked-memory limit the log states (UCX "(current: 64 kbytes)", ``ulimit -a``)
  ``{soft_bytes, soft_unlimited, src}``, else None;
- ``gid_settings``: the RoCE GID indexes the log says were set (``app_log_rdma.gid_settings``).

Kinds: ``driver_not_initialized`` (5001), ``platform_not_supported`` (5007),
``io_not_supported`` (5008), ``device_not_supported`` (5009), ``nvfs_driver_error`` (5010),
``mapping_size`` (5016), ``memory_not_registered`` (5024), ``internal_error`` (5030),
``nvfs_setup_error`` (5033), ``io_disabled`` (5034), ``pinning_failed`` (5036), ``cufile_error``
(any other code), ``buf_register_failed``, ``handle_register_failed``, ``io_failed`` (a read/write
on the GDS path failed: EIO, ``cuFileRead returned error``, gdsio's ``io failed … ret: -5``),
``operator_nvidia_fs_ctr_failed``, ``compat_mode`` (the application says it runs in compat mode),
and the RDMA kinds of ``app_log_rdma``: ``rdma_local_protection_error``, ``rdma_retry_exceeded``,
``rdma_completion_error``, ``rdma_enomem``, ``rdma_verbs_failed``, and GDRCopy's of ``app_log_gdr``:
``gdrdrv_too_old``, ``gdr_pin_failed``; the checkpoint kinds of
``app_log_ckpt`` and ``launcher_exit`` (``app_log_launch``: a launcher's bad exit, its code and
signal decoded, in the error's ``launch``).

Sample lines: ``cuFile error (5033): NVFS driver initialization error``,
``gds_device_buffer.cufile_register: cuFileBufRegister returned an error = 5016``.
"""

from __future__ import annotations

import re
from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes import error_lines
from gdsdoctor.probes.app_log_ckpt import checkpoint_error, save_context
from gdsdoctor.probes.app_log_ckpt import signature as checkpoint_signature
from gdsdoctor.probes.app_log_gdr import gdr_error
from gdsdoctor.probes.app_log_gdr import signature as gdr_signature
from gdsdoctor.probes.app_log_launch import launch_record, launcher_error
from gdsdoctor.probes.app_log_nccl import nccl_error
from gdsdoctor.probes.app_log_rdma import gid_settings, memlock_hint, rdma_error
from gdsdoctor.probes.app_log_rdma import signature as rdma_signature
from gdsdoctor.probes.app_log_resume import cut_traceback, traceback_errors
from gdsdoctor.probes.app_log_resume import signature as resume_signature
from gdsdoctor.probes.app_log_saves import saves, timer_line
from gdsdoctor.probes.base import Probe, head_lines, numbered_lines, src

# CUfileOpError: CU_FILE_<NAME> = 5000 + n (there is no 5032).
CODES: dict[int, str] = {
    5001: "CU_FILE_DRIVER_NOT_INITIALIZED",
    5002: "CU_FILE_DRIVER_INVALID_PROPS",
    5003: "CU_FILE_DRIVER_UNSUPPORTED_LIMIT",
    5004: "CU_FILE_DRIVER_VERSION_MISMATCH",
    5005: "CU_FILE_DRIVER_VERSION_READ_ERROR",
    5006: "CU_FILE_DRIVER_CLOSING",
    5007: "CU_FILE_PLATFORM_NOT_SUPPORTED",
    5008: "CU_FILE_IO_NOT_SUPPORTED",
    5009: "CU_FILE_DEVICE_NOT_SUPPORTED",
    5010: "CU_FILE_NVFS_DRIVER_ERROR",
    5011: "CU_FILE_CUDA_DRIVER_ERROR",
    5012: "CU_FILE_CUDA_POINTER_INVALID",
    5013: "CU_FILE_CUDA_MEMORY_TYPE_INVALID",
    5014: "CU_FILE_CUDA_POINTER_RANGE_ERROR",
    5015: "CU_FILE_CUDA_CONTEXT_MISMATCH",
    5016: "CU_FILE_INVALID_MAPPING_SIZE",
    5017: "CU_FILE_INVALID_MAPPING_RANGE",
    5018: "CU_FILE_INVALID_FILE_TYPE",
    5019: "CU_FILE_INVALID_FILE_OPEN_FLAG",
    5020: "CU_FILE_DIO_NOT_SET",
    5021: "CU_FILE_EXPECTED_FILE_MODE",
    5022: "CU_FILE_INVALID_VALUE",
    5023: "CU_FILE_MEMORY_ALREADY_REGISTERED",
    5024: "CU_FILE_MEMORY_NOT_REGISTERED",
    5025: "CU_FILE_PERMISSION_DENIED",
    5026: "CU_FILE_DRIVER_ALREADY_OPEN",
    5027: "CU_FILE_HANDLE_NOT_REGISTERED",
    5028: "CU_FILE_HANDLE_ALREADY_REGISTERED",
    5029: "CU_FILE_DEVICE_NOT_FOUND",
    5030: "CU_FILE_INTERNAL_ERROR",
    5031: "CU_FILE_GETNEWFD_FAILED",
    5033: "CU_FILE_NVFS_SETUP_ERROR",
    5034: "CU_FILE_IO_DISABLED",
    5035: "CU_FILE_BATCH_SUBMIT_FAILED",
    5036: "CU_FILE_GPU_MEMORY_PINNING_FAILED",
    5037: "CU_FILE_BATCH_FULL",
    5038: "CU_FILE_ASYNC_NOT_SUPPORTED",
}
BY_NAME = {name: code for code, name in CODES.items()}
KIND_BY_CODE = {
    5001: "driver_not_initialized",
    5007: "platform_not_supported",
    5008: "io_not_supported",
    5009: "device_not_supported",
    5010: "nvfs_driver_error",
    5016: "mapping_size",
    5024: "memory_not_registered",
    5030: "internal_error",
    5033: "nvfs_setup_error",
    5034: "io_disabled",
    5036: "pinning_failed",
}
# The error strings libcufile's cuFileGetErrorString prints (apps print them without the code).
CODE_BY_MESSAGE = (
    (lazy_compile(r"NVFS driver initialization error", re.I), 5033),
    (lazy_compile(r"access beyond maximum pinned size", re.I), 5016),
    (lazy_compile(r"GPUDirect Storage not supported on current file", re.I), 5008),
    (lazy_compile(r"GPUDirect Storage disabled by config", re.I), 5034),
    (lazy_compile(r"device pointer lookup failure", re.I), 5024),
    (lazy_compile(r"driver not initialized", re.I), 5001),
    (lazy_compile(r"\binternal error\b", re.I), 5030),
)
_CODE_NEAR_CUFILE = lazy_compile(
    r"cufile[^\n]{0,100}?(?:error|returned|failed)[^\n]{0,40}?\b(50[0-3]\d)\b", re.I
)
_CU_FILE_NAME = lazy_compile(r"\b(CU_FILE_[A-Z_]+)\b")
_API = lazy_compile(
    r"\b(cuFile(?:BufRegister|BufDeregister|HandleRegister|DriverOpen|Read|Write|BatchIO\w*))\b"
)
_CUFILE_FAILURE = lazy_compile(
    r"(?:cuFile error|CUFile [\w ]{0,30}failed|cuFile\w* (?:returned (?:an )?error|failed|error)|"
    r"CUFile\w* failed|buffer deregister failed|file register error)",
    re.I,
)
_IO_ERROR = lazy_compile(
    r"\b(?:write|read) failed\s*:\s*Input/output error|cuFile(?:Read|Write) returned error"
)
_KVIKIO_COMPAT = lazy_compile(
    r"WARNING - cuFile compat mode|GDS not enabled|\bN/A \(Compatibility Mode\)|"
    r"(?:running|runs|fall(?:ing)? back|fallback) (?:in|to) (?:cuFile )?compat(?:ibility)? mode|"
    r"compat(?:ibility)? mode (?:is )?(?:enabled|on)\b",
    re.I,
)
_KVIKIO_FIELD = lazy_compile(
    r"^\s*(GPU|BAR1 Memory Total|GDS driver|GDS config\.json|directory)\s*\|\s*(.*?)\s*$"
)
_SIZE = lazy_compile(r"(?<![\d.])([\d.]+)\s*(KiB|MiB|GiB|TiB|KB|MB|GB|TB)\b", re.I)
_OPERATOR_CTR = lazy_compile(r"nvidia-fs-ctr")
_OPERATOR_FAIL = lazy_compile(r"CrashLoopBackOff|exit(?: code)?:?\s*127\b|Exit Code:\s*127", re.I)
_CUFILE_LOG_LINE = lazy_compile(r"\[pid=\d+ tid=\d+\]")
# gdsio's own failure lines (lower-case "io failed", unlike nvidia-fs's kernel "write IO failed :-512"):
# "write io failed of type 1 size: 16777216 , ret: 0", "failed to submit io of type 1 ret: -5",
# "Error: IO failed stopping traffic, fd :274 ret:-5 errno :22", "io failed :ret :-5 errno :22, …"
_GDSIO_IO_FAILED = lazy_compile(
    r"\b(?:read|write) io failed\b|\bfailed to submit io\b|\bIO failed stopping traffic\b"
    r"|^\s*io failed :ret\b"
)
# an errno as Python (`[Errno 95]`) and Rust (`(os error 95)`, `Os { code: 95, …`) print one: a job's
# output whatever the errno (the error-line classifier lists those no cause reads)
_ANY_ERRNO = lazy_compile(r"\[Errno \d{1,4}\]|\(os error \d{1,4}\)|\bOs \{ code: \d{1,4}")
_RET = lazy_compile(r"\bret\s*:\s*(-?\d+)")
_ERRNO = lazy_compile(r"\berrno\s*:\s*(\d+)")
_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
RECOGNISE_LINES = 200


def _signature(line: str) -> bool:
    return bool(
        _CODE_NEAR_CUFILE.search(line)
        or _CU_FILE_NAME.search(line)
        or _CUFILE_FAILURE.search(line)
        or _IO_ERROR.search(line)
        or _KVIKIO_COMPAT.search(line)
        or (_OPERATOR_CTR.search(line) and _OPERATOR_FAIL.search(line))
        or _GDSIO_IO_FAILED.search(line)
        or rdma_signature(line)
        or nccl_error(0, line, "", benign=error_lines.job_benign(line)) is not None
        or checkpoint_signature(line)
        or resume_signature(line)
        or gdr_signature(line)
        or launch_record(line) is not None
        or _ANY_ERRNO.search(line)
        or timer_line(line)
    )


def recognise_app_log(text: str) -> bool:
    """An application's output with a cuFile failure or compat banner, not a cufile.log."""
    lines = head_lines(text, RECOGNISE_LINES)
    if any(_CUFILE_LOG_LINE.search(line) for line in lines):
        return False
    return any(_signature(line) for line in lines)


def _size_bytes(text: str) -> int | None:
    match = _SIZE.search(text)
    if not match:
        return None
    return int(float(match[1]) * _UNITS[match[2][0].lower()])


def _code_of(line: str) -> int | None:
    match = _CODE_NEAR_CUFILE.search(line)
    if match and int(match[1]) in CODES:
        return int(match[1])
    name = _CU_FILE_NAME.search(line)
    if name and name[1] in BY_NAME:
        return BY_NAME[name[1]]
    for pattern, code in CODE_BY_MESSAGE:
        if pattern.search(line):
            return code
    return None


def _error(line_no: int, line: str, artifact: str) -> dict[str, Any] | None:
    failure = _CUFILE_FAILURE.search(line) or _CU_FILE_NAME.search(line) or _CODE_NEAR_CUFILE.search(line)
    io_error = _IO_ERROR.search(line)
    if not failure and not io_error:
        return None
    code = _code_of(line) if failure else None
    api = _API.search(line)
    kind = KIND_BY_CODE.get(code, "cufile_error") if code else _kind_without_code(line, bool(io_error))
    return {
        "code": code,
        "name": CODES.get(code) if code else None,
        "kind": kind,
        "api": api[1] if api else None,
        "text": line.strip(),
        "src": src(artifact, line_no, line),
        "source": "app",
        "ret": None,
        "errno": 5 if "Input/output error" in line else None,
        "rdma": None,
        "ckpt": None,
    }


def _gdsio_error(line_no: int, line: str, artifact: str) -> dict[str, Any] | None:
    if not _GDSIO_IO_FAILED.search(line):
        return None
    ret, errno = _RET.search(line), _ERRNO.search(line)
    return {"code": None, "name": None, "kind": "io_failed", "api": None, "text": line.strip()[:500],
            "src": src(artifact, line_no, line), "source": "gdsio", "ret": int(ret[1]) if ret else None,
            "errno": int(errno[1]) if errno else None, "rdma": None, "ckpt": None}  # fmt: skip


def _line_error(line_no: int, line: str, artifact: str) -> dict[str, Any] | None:
    """The error one line reports: a cuFile failure, a gdsio IO failure, an NCCL/UCX RDMA error."""
    return (
        _error(line_no, line, artifact)
        or _gdsio_error(line_no, line, artifact)
        or gdr_error(line_no, line, artifact)
        or rdma_error(line_no, line, artifact)
        or nccl_error(line_no, line, artifact, benign=error_lines.job_benign(line))
        or checkpoint_error(line_no, line, artifact)
        or launcher_error(line_no, line, artifact)
    )


def _kind_without_code(line: str, io_error: bool) -> str:
    if io_error:
        return "io_failed"
    if re.search(r"BufRegister|buffer deregister", line):
        return "buf_register_failed"
    if re.search(r"HandleRegister|file register error|import failed", line, re.I):
        return "handle_register_failed"
    return "cufile_error"


def _kvikio(lines: list[tuple[int, str]], artifact: str) -> dict[str, Any] | None:
    fields: dict[str, str] = {}
    first: tuple[int, str] | None = None
    for line_no, line in lines:
        match = _KVIKIO_FIELD.match(line)
        if match:
            fields.setdefault(match[1], match[2])
            first = first or (line_no, line)
    if "GDS driver" not in fields or first is None:
        return None
    driver = fields["GDS driver"]
    version = re.search(r"(?<!\d)v?(\d+\.\d+(?:\.\d+)?)", driver)
    gpu = fields.get("GPU")
    return {
        "gpu_name": re.sub(r"(?<!\s)\s*\(dev #\d+\)\s*$", "", gpu) if gpu else None,
        "bar1_total_bytes": _size_bytes(fields.get("BAR1 Memory Total", "")),
        "gds_driver": version[1] if version and "N/A" not in driver else None,
        "config_path": fields.get("GDS config.json"),
        "directory": fields.get("directory"),
        "src": src(artifact, first[0], first[1]),
    }


def _line(artifact: str, line_no: int, line: str) -> dict[str, Any]:
    return {"text": line.strip(), "src": src(artifact, line_no, line)}


MAX_ERROR_LINES = 1000


def _error_lines(lines: Any, errors: list[dict[str, Any]], artifact: str) -> list[dict[str, Any]]:
    """The job's lines that are errors of the storage path (gdsdoctor.probes.error_lines): each
    error this reader made (its kind's family), and any other line the classifier places there
    (a traceback's exception, a launcher's exit code, ``NCCL WARN``)."""
    by_line = {e["src"]["line"]: e for e in errors if isinstance(e.get("src"), dict)}
    found: list[dict[str, Any]] = []
    for number, line in lines:
        error = by_line.get(number)
        family = error_lines.of_event(error["kind"]) if error else None
        if family is None and error_lines.has_hint(line.lower()):
            hit = error_lines.classify_cached(line)
            family = hit[0] if hit else None
        if family is not None:
            found.append({"family": family, "device": None, "kind": error["kind"] if error else None,
                          "src": error["src"] if error else src(artifact, number, line)})  # fmt: skip
    if (cut := cut_traceback(lines)) is not None:  # it raised; the paste stops before saying what
        found.append({"family": "traceback", "device": None, "kind": None, "src": src(artifact, *cut)})
    return found[-MAX_ERROR_LINES:]


def parse_app_log(text: str, artifact: str) -> dict[str, Any]:
    lines = numbered_lines(text)
    if not any(_signature(line) for _, line in lines):
        raise ParseError(
            "no cuFile error, cuFile error code, compat-mode message, gdsio IO failure, NCCL/UCX RDMA error,"
            " NCCL GID index setting or checkpoint error (OSError errno, PytorchStreamWriter,"
            " watchdog timeout, OOM kill)"
        )
    errors = [e for line_no, line in lines if (e := _line_error(line_no, line, artifact))]
    traceback_errors(lines, errors, artifact)  # tracebacks read whole: a resume, a framework's own error
    checkpoint = save_context(lines, errors, artifact)
    checkpoint["saves"] = saves(lines, artifact)  # how long each save took, in the job's words
    checkpoint["longest_save_s"] = max((x["seconds"] for x in checkpoint["saves"]), default=None)
    compat = [
        {"text": line.strip(), "src": src(artifact, n, line)}
        for n, line in lines
        if _KVIKIO_COMPAT.search(line)
    ]
    operator = [
        _line(artifact, n, line)
        for n, line in lines
        if _OPERATOR_CTR.search(line) and _OPERATOR_FAIL.search(line)
    ]
    kvikio = _kvikio(lines, artifact)
    gpus = []
    if kvikio and kvikio["gpu_name"]:
        gpus.append(
            {"name": kvikio["gpu_name"], "bar1_total_bytes": kvikio["bar1_total_bytes"], "src": kvikio["src"]}
        )
    kinds = {e["kind"] for e in errors}
    kinds |= {"operator_nvidia_fs_ctr_failed"} if operator else set()
    kinds |= {"compat_mode"} if compat else set()
    return {
        "errors": errors,
        "error_lines": _error_lines(lines, errors, artifact),
        "codes": sorted({e["code"] for e in errors if e["code"]}),
        "names": sorted({e["name"] for e in errors if e["name"]}),
        "kinds": sorted(kinds),
        "compat_mode": True if compat else None,
        "compat": compat,
        "kvikio": kvikio,
        "gpus": gpus,
        "operator": operator,
        "memlock": memlock_hint(lines, artifact),
        "gid_settings": gid_settings(lines, artifact),
        "checkpoint": checkpoint,
    }


PROBES: tuple[Probe, ...] = (
    Probe(
        section="app_log",
        title="application output with cuFile, gdsio or NCCL/UCX RDMA errors (DALI, kvikio, vLLM, PyTorch)",
        sources=(),  # the application's own output: paste only
        parse=parse_app_log,
        recognise=recognise_app_log,
        # the file to paste, named (a job's log), and the line to look for in it
        paste_hint="the application's output around the error: the job's log (Slurm's `slurm-JOBID.out`, "
        "`kubectl logs POD`) from before its `cuFile error (5033)` or `NCCL WARN …` line",
        tags=("gds",),
    ),
)
