"""The RDMA failures NCCL and UCX print in an application's output (read by ``app_log``).

Pure line classifiers, one error dict per failing line (the ``app_log.errors[]`` shape with
``source`` "nccl"|"ucx" and an ``rdma`` record). Real lines they read::

    H100-2:19989:20082 [1] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer
        fe80::966d:ae03:8b:df78%ib0<53249> with error 4, opcode 32564, len 32564, vendor err 81 (Send)
    mycl-g2:353236:353423 [6] transport/net_ib.cc:2244 NCCL WARN NET/IB: Got completion from peer
        192.168.3.5<53908> with status=12 opcode=129 len=1048576 vendor err 129 (Recv)
        localGid ::ffff:192.168.6.3 remoteGids::ffff:192.168.6.5 hca mlx5_10
    msm-h200-2:4016:4653 [7] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_create_cq failed with error
        Cannot allocate memory
    [1668693503.473099] [ampere:1188443:0]  ib_log.c:246  UCX  ERROR mlx5_0: ibv_create_cq() failed:
        Cannot allocate memory. Please set max locked memory (ulimit -l) to 'unlimited' (current: 64 kbytes)
    [compute001:31180:0:31180] ib_mlx5_log.c:143  Transport retry count exceeded on mlx5_0:1/RoCE
        (synd 0x15 vend 0x81 hw_synd 0/0)

Kinds (the work-completion status is ``enum ibv_wc_status``):

- ``rdma_local_protection_error``: status 4 (IBV_WC_LOC_PROT_ERR), UCX "Local protection error": the
  NIC could not access the buffer of a work request; with GPUDirect RDMA, usually PCIe ACS (or an
  IOMMU) between the NIC and the GPU (NCCL #928, #214, #660);
- ``rdma_retry_exceeded``: status 12 (IBV_WC_RETRY_EXC_ERR), UCX "Transport retry count exceeded",
  vendor syndrome 0x81: the peer never acknowledged (packet loss on the fabric, a link or the peer
  gone);
- ``rdma_completion_error``: any other completion status (5, flush, follows another error);
- ``rdma_enomem``: a verbs call (``ibv_reg_mr*``, ``ibv_create_cq``/``_qp``, NET/OFI memory
  registration) failed with "Cannot allocate memory": the locked-memory limit, at scale also the
  HCA's own resources;
- ``rdma_verbs_failed``: a verbs call failed otherwise (``Invalid argument``).

``rdma``: ``{status (int|None), opcode, vendor_err (int|None: the vendor syndrome's value; NCCL prints
it in decimal, UCX in hex: "vendor err 129" and "vend 0x81" are one syndrome),
device, port, link_layer ("RoCE"|"IB"|None: UCX names it; NCCL's IPv4-mapped GID ::ffff: is RoCE v2,
a peer on an ``%ib`` interface InfiniBand), peer, direction ("Send"|"Recv"|None), local_gid (NCCL's
``localGid``: the GID the queue pair used)}``.

``gid_settings(lines)``: the GID indexes the log says were set (NCCL's "NCCL_IB_GID_INDEX set by
environment to 3.", ``NCCL_IB_GID_INDEX=``/``UCX_IB_GID_INDEX=`` in a pasted command) as
``[{name, index, src}]``; NCCL's line alone makes a text an application log.

``memlock_hint(lines)``: the limit a log states (UCX "(current: 64 kbytes)", a pasted ``ulimit -a``
"max locked memory (kbytes, -l) 64") as ``{soft_bytes, soft_unlimited, src}``, else None.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import src

_NCCL = lazy_compile(r"\bNCCL (?:WARN|ABORT)\b")
_UCX = lazy_compile(r"\bUCX\s+(?:ERROR|WARN|FATAL)\b")
# UCX's fatal-error handler: `[host:pid:thread:tid] ib_mlx5_log.c:143  message` (no level word)
_UCX_FATAL = lazy_compile(r"^\s*\[?[\w.-]+:\d+\s*:\d+:\d+\]\s+\w+\.c:\d+\s")
_COMPLETION = lazy_compile(
    r"NET/IB\w*\s*:\s*Got completion(?: from peer (?P<peer>\S+))? with (?:error |status=)(?P<status>\d+),?"
    r" opcode[ =](?P<opcode>\d+),? len[ =]\d+,? vendor err (?P<vendor>\d+)(?: \((?P<dir>Send|Recv)\))?"
)
_LOCAL_GID = lazy_compile(r"\blocalGid\s+(\S+)")
_HCA = lazy_compile(r"\bhca\s+([A-Za-z][\w.-]*)\s*$")
_UCX_WC = lazy_compile(
    r"(?P<error>Transport retry count exceeded|Local protection error|Remote access error"
    r"|Remote operation error|Local QP operation error|RNR retry count exceeded|Work Request Flushed Error)"
    r"(?: on (?P<dev>[\w.-]+):(?P<port>\d+)/(?P<ll>RoCE|IB))?"
    r"(?:.*?\bvend 0x(?P<vendor>[0-9a-f]+))?",
    re.IGNORECASE,
)
_UCX_ERROR_ON = lazy_compile(r"\bError on (?P<dev>[\w.-]+):(?P<port>\d+)\b")
_UCX_STATUS = {"transport retry count exceeded": 12, "local protection error": 4, "remote access error": 10,
               "remote operation error": 11, "local qp operation error": 2, "rnr retry count exceeded": 13,
               "work request flushed error": 5}  # fmt: skip
_VERBS_ENOMEM = lazy_compile(
    r"\b(?P<api>ibv_\w+|mlx5dv_\w+|fi_mr_reg|register memory)\b.{0,100}?Cannot allocate memory"
)
_VERBS_FAILED = lazy_compile(
    r"(?:Call to (?P<nccl>ibv_\w+) failed with error (?P<why>[A-Z][\w ]+)"
    r"|(?P<ucx>ibv_\w+|mlx5dv_\w+)\([^)]*\) failed: (?P<ucx_why>[A-Z][\w ]+))"
)
_UCX_LIMIT = lazy_compile(
    r"max locked memory \(ulimit -l\) to 'unlimited' "
    r"\(current: (?P<value>\d+|unlimited) ?(?P<unit>kbytes|bytes)?\)"
)
_ULIMIT_A = lazy_compile(r"^\s*max locked memory\s+\(kbytes, -l\)\s+(?P<value>\d+|unlimited)\s*$")
_KINDS_BY_STATUS = {4: "rdma_local_protection_error", 12: "rdma_retry_exceeded"}
# NCCL's "NCCL INFO NCCL_IB_GID_INDEX set by environment to 3.", or the variable set in a pasted
# command (`export NCCL_IB_GID_INDEX=3`, `mpirun -x UCX_IB_GID_INDEX=1`)
_GID_SETTING = lazy_compile(
    r"\b(?P<name>NCCL_IB_GID_INDEX|UCX_IB_GID_INDEX)(?: set by environment to |=)(?P<value>\d{1,3})\b"
)
_NCCL_GID_ENV = lazy_compile(r"\bNCCL INFO NCCL_IB_GID_INDEX set by environment to \d")


def is_rdma_line(line: str) -> bool:
    """An NCCL warning or a UCX error line."""
    return bool(_NCCL.search(line) or _UCX.search(line) or _UCX_FATAL.match(line))


def signature(line: str) -> bool:
    """A line this module makes an error of, or NCCL's own report of a GID index set by the
    environment (what makes a text an application log)."""
    return rdma_error(0, line, "") is not None or bool(_NCCL_GID_ENV.search(line))


def gid_settings(lines: Iterable[tuple[int, str]], artifact: str) -> list[dict[str, Any]]:
    """The RoCE GID indexes the log says were set: ``{name, index, src}``, in order."""
    return [
        {"name": found["name"], "index": int(found["value"]), "src": src(artifact, line_no, line)}
        for line_no, line in lines
        for found in _GID_SETTING.finditer(line)
    ]


def _int(text: str | None, base: int = 10) -> int | None:
    return int(text, base) if text else None


def _record(**fields: Any) -> dict[str, Any]:
    keys = ("status", "opcode", "vendor_err", "device", "port", "link_layer", "peer", "direction",
            "local_gid")  # fmt: skip
    return {key: fields.get(key) for key in keys}


def _error(kind: str, api: str | None, source: str, rdma: dict[str, Any] | None, line_no: int, line: str,
           artifact: str) -> dict[str, Any]:  # fmt: skip
    return {"code": None, "name": None, "kind": kind, "api": api, "text": line.strip()[:500],
            "src": src(artifact, line_no, line), "source": source, "ret": None, "errno": None,
            "rdma": rdma, "ckpt": None}  # fmt: skip


def _link_layer(peer: str | None, line: str) -> str | None:
    gid = _LOCAL_GID.search(line)
    if gid and gid[1].lower().startswith("::ffff:"):
        return "RoCE"  # an IPv4-mapped GID: RoCE v2
    if peer and re.search(r"%ib\w*<", peer):
        return "IB"  # the peer's address is on an IPoIB interface
    return None


def _nccl_completion(line: str) -> tuple[str, dict[str, Any]] | None:
    match = _COMPLETION.search(line)
    if not match:
        return None
    status = int(match["status"])
    hca = _HCA.search(line)
    local = _LOCAL_GID.search(line)
    rdma = _record(status=status, opcode=int(match["opcode"]), vendor_err=int(match["vendor"]),
                   device=hca[1] if hca else None, link_layer=_link_layer(match["peer"], line),
                   peer=match["peer"], direction=match["dir"],
                   local_gid=local[1] if local else None)  # fmt: skip
    return _KINDS_BY_STATUS.get(status, "rdma_completion_error"), rdma


def _ucx_completion(line: str) -> tuple[str, dict[str, Any]] | None:
    match = _UCX_WC.search(line)
    if not match:
        return None
    status = _UCX_STATUS[match["error"].lower()]
    on = _UCX_ERROR_ON.search(line)  # older UCX: "Error on mlx5_3:1 QP 0xe6d7 wqe[7821]: Transport retry…"
    device = match["dev"] or (on["dev"] if on else None)
    port = match["port"] or (on["port"] if on else None)
    rdma = _record(status=status, vendor_err=_int(match["vendor"], 16), device=device, port=_int(port),
                   link_layer=match["ll"])  # fmt: skip
    return _KINDS_BY_STATUS.get(status, "rdma_completion_error"), rdma


def rdma_error(line_no: int, line: str, artifact: str) -> dict[str, Any] | None:
    """The error an NCCL/UCX line reports, or None (INFO lines, UCX debug output)."""
    if not is_rdma_line(line):
        return None
    source = "nccl" if _NCCL.search(line) else "ucx"
    found = _nccl_completion(line) if source == "nccl" else _ucx_completion(line)
    if found:
        return _error(found[0], None, source, found[1], line_no, line, artifact)
    if enomem := _VERBS_ENOMEM.search(line):
        device = re.search(r"\b(mlx\d_\w+|rxe\d+|bnxt_re\d+|irdma\d+)\b", line)
        rdma = _record(device=device[1] if device else None)
        return _error("rdma_enomem", enomem["api"], source, rdma, line_no, line, artifact)
    if failed := _VERBS_FAILED.search(line):
        return _error("rdma_verbs_failed", failed["nccl"] or failed["ucx"], source, _record(), line_no, line,
                      artifact)  # fmt: skip
    return None


def memlock_hint(lines: Iterable[tuple[int, str]], artifact: str) -> dict[str, Any] | None:
    """The locked-memory limit the log states, in bytes (the first statement)."""
    for line_no, line in lines:
        match = _UCX_LIMIT.search(line) or _ULIMIT_A.match(line)
        if not match:
            continue
        value = match["value"]
        unit = 1 if (match.groupdict().get("unit") or "kbytes") == "bytes" else 1024
        unlimited = value == "unlimited"
        return {"soft_bytes": None if unlimited else int(value) * unit, "soft_unlimited": unlimited,
                "src": src(artifact, line_no, line)}  # fmt: skip
    return None
