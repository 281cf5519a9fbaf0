"""Which input lines are errors of the storage path: one classifier for every reader's lines.

The kernel log (dmesg, the journal), the job's own output and cufile.log each have readers that
turn the lines they know into events. This module answers a coarser question about *any* line:
is it an error, and of which part of the checkpoint's storage path (its *family*)? The report
then lists the error lines no fired cause cites (``report/unexplained.py``): a line the tool
does not understand must never leave a node OK.

A line is classified by its class, never by a sample's wording:

1. its **family** from who speaks: the kernel's subsystem prefix (``nvme nvme0:``, ``XFS (sda1):``,
   ``LustreError:``, ``nfs:``, ``mlx5_core 0000:…:``, ``NVRM:``, ``sd 2:0:0:0:``, ``ata3.00:``) or,
   in a job's output, the form of the message (a Python exception line, an errno, a launcher's
   exit code or signal, ``NCCL WARN``, a CUDA or cuFile error);
2. for the kernel families, an **error word** (``error``, ``fail``, ``timeout``, ``not
   responding``, ``rc = -107``, ``evicted``…); a line's level is not used, since journals and
   pastes give it unevenly (a healthy ``Ending clean mount`` at err) and a line must be judged
   the same in every form it comes in;
3. minus the **benign** lines: healthy lines of those families that carry an error word (a mount
   echoing ``errors=remount-ro``, ``Shutdown timeout set to 8 seconds``, an empty SATA port's
   ``link down``, a corrected PCIe error), each checked on healthy logs of several
   distributions (tests/probes/test_error_lines.py, tests/data/error_lines/SOURCES.md).

Lines of other subsystems (USB, ACPI, audio, Wi-Fi, Bluetooth, input, thermal, EDAC/MCE memory
errors, display DRM) have no family here and stay quiet whatever they say.

``classify(text)`` → ``(family, device)`` or None. ``HINTS`` are lower-case substrings one
of which every error line holds: the dmesg reader looks only at lines holding one (its gate).
"""
# ruff: noqa: E501  (one pattern a line reads better than a pattern cut to fit)

from __future__ import annotations

from functools import lru_cache
from typing import Any

from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.app_log_launch import launch_record
from gdsdoctor.probes.dmesg_kinds import NO_DATA_OPS

# Families, what each covers, and the input that would settle a line of it that no cause cites
# (shown beside the line in the report: a neighbouring cause exists, and this is what it reads).
SETTLE: dict[str, str] = {
    "nvme": "`nvme list -o json` and `cat /sys/class/nvme/*/state` (the nvme-device causes read them)",
    "block": "`lsblk -J -O` and `smartctl -a` on the device (which disk, and whether it is failing)",
    "filesystem": "`cat /proc/mounts` and the filesystem's own lines around it (`dmesg -T`)",
    "nfs": "`cat /proc/mounts` and `nfsstat -m` (is the checkpoint on that server; is it mounted hard)",
    "lustre": "`lctl dl` and `lfs check servers` (which targets the client lost)",
    "beegfs": "`beegfs-ctl --listnodes --nodetype=storage --reachable` (or `beegfs health` on v8)",
    "gpfs": "`mmhealth node show` and `mmdiag --network` (expels and lost connections)",
    "network-fs": "`cat /proc/mounts` (which filesystem the line is about) and its client's status",
    "rdma": "`ibv_devinfo -v` and `rdma link` (the port's state and link layer)",
    "pcie": "`lspci -vvv` for the device the line names (its link and AER status)",
    "iommu": "`cat /proc/cmdline` and `dmesg | grep -i -e DMAR -e IOMMU` (the IOMMU's mode)",
    "gpu": "`nvidia-smi -q` (the GPU's state, Xid and retired pages)",
    "cufile": "`gdscheck -p` and the cufile.json in effect",
    "hang": "the stack the task was blocked in (the lines after `blocked for more than`)",
    "traceback": "the whole traceback with the frame that wrote the file, and `df -h` on its path",
    "launcher": "`dmesg -T` around the exit (the OOM killer's `Killed process` line, or a signal's sender)",
    "nccl": "the kernel log of the same minutes (`dmesg -T`) and the job's save lines around the timeout",
}

# --- the kernel's subsystems on the storage path (the message's start, as printk prefixes it) ---
_KERNEL_FAMILIES = (
    (
        "nvme",
        r"^(?:nvme|nvme_core|nvme_tcp|nvme_rdma|nvme_fc|nvme_fabrics|nvmet\w{0,10}) (?P<device>[\w:.-]{1,40})?"
        r"|^(?P<ns>nvme\d{1,4}(?:c\d{1,4})?n\d{1,4}(?:p\d{1,3})?):",
    ),
    ("pcie", r"^(?:pcieport|pci) \S{1,20}: (?:AER|DPC|pciehp)|\bAER: |PCIe Bus Error|^DPC:"),
    (
        "block",
        r"^sd \d{1,4}:\d{1,4}:\d{1,4}:\d{1,6}: \[(?P<sd>sd[a-z]{1,4})\]"
        r"|^(?:blk_update_request|print_req_error|end_request|blk_\w{1,30}|Buffer I/O error|(?:critical )?"
        r"(?:medium|target|I/O|space allocation|nexus|protection|transport|timeout|BLK_STS_\w{1,20}) error, dev "
        r"(?P<dev>[\w-]{1,32})|sd \d{1,4}:\d{1,4}:\d{1,4}:\d{1,6}:|scsi \d{1,4}:\d|scsi host\d{1,4}:|ata\d{1,3}(?:\.\d\d)?:"
        r"|device-mapper:|md/raid\d{0,2}:|md: |raid\d{1,2}:|bcache:|multipathd?:|dm-\d{1,5}:|(?:sd|vd|xvd)[a-z]{1,4}\d{0,3}:)"
        r"|\bI/O error, dev (?P<dev2>[\w-]{1,32})",
    ),
    (
        "filesystem",
        r"^(?:XFS|EXT[234]-fs|EXT4|ext4|BTRFS|JBD2|jbd2|ZFS|zfs|F2FS-fs|overlayfs|SQUASHFS|fuse|"
        r"Filesystem \"|Aborting journal|xfs_|ext4_)",
    ),
    ("nfs", r"^(?:nfs|NFS|nfs4|NFSv4|nfsd|NFSD|pnfs|RPC|rpc|rpcrdma|lockd|sunrpc|xs_tcp|svc)\w{0,20}:?"),
    (
        "lustre",
        r"^(?:Lustre|LustreError|LNet|LNetError|LNetWarning)\b|\b(?:ptlrpc|ldlm|osc|mdc|lov|lmv|o2iblnd|ksocklnd)_\w{1,40}\(",
    ),
    ("beegfs", r"(?i)^beegfs\b|\bbeegfs_\w{1,40}"),
    ("gpfs", r"^(?:mmfs\w{0,10}|GPFS|mmfsd)\b"),
    ("network-fs", r"^(?:libceph|ceph|rbd|wekafs\w{0,10}|cifs|CIFS|smb2?|orangefs|lizardfs|glusterfs)\b"),
    (
        "rdma",
        r"^(?:mlx[45]_(?:core|ib|en)|infiniband|ib_\w{1,20}|rdma_\w{1,20}|irdma|bnxt_re|qedr|hfi1|efa|ice)\b"
        r"|^(?:mlx[45]_\d{1,3}|ib[p\d]\w{0,20}|rxe\d{0,3}):",
    ),
    ("iommu", r"^(?:DMAR|AMD-Vi|arm-smmu\S{0,10}|iommu)\b.{0,80}\b(?:fault|Event logged|IO_PAGE_FAULT)"),
    (
        "gpu",
        # the kernel modules' prefixes, then a colon or a blank (not user-space tools: nvidia-container-cli)
        r"^(?:NVRM|nvidia(?:[-_](?:fs|peermem|uvm|modeset|nvlink|drm))?|nvidia-nvswitch\d{0,3}|nv_peer_mem|gdrdrv)(?=[:\s])",
    ),
    ("hang", r"\bblocked for more than \d{1,6} seconds"),
)
_KERNEL = tuple((family, lazy_compile(pattern)) for family, pattern in _KERNEL_FAMILIES)
KERNEL_FAMILIES = frozenset(family for family, _ in _KERNEL_FAMILIES)

# what makes a line of those families an error (the kernel's own words for a failure)
_ERROR_WORDS = lazy_compile(
    r"(?i)\b(?:errors?|err|fail(?:s|ed|ure|ing)?|timed? ?out|timeouts?|not responding|abort(?:s|ed|ing)?"
    r"|reset(?:ting)? (?:controller|adapter|link|bus|device|target)|hard resetting|lost|evict(?:ed|ing|ion)?"
    r"|expel(?:led|ling)?|refused|unreachable|corrupt(?:ed|ion)?|denied|unable|cannot|can't|couldn't"
    r"|invalid|fault|panic|shut(?:ting)? ?down|read-only|disconnect(?:ed|ing)?|offline|degraded|dead|hung"
    r"|stuck|not ready|removing|unrecover(?:ed|able)|critical|fallen off|rc = -\d{1,4}|status -\d{1,4}"
    r"|blocked for more|bad|no space left|exceeded|Xid|rectify the problem)\b"
)

# Healthy lines of those families with an error word (each seen on healthy logs; SOURCES.md).
_BENIGN = lazy_compile(
    r"errors=(?:remount-ro|continue|panic)"  # a mount echoing its options
    r"|Shutdown timeout set to \d"  # nvme: the controller's RTD3 time
    r"|SATA link down \(SStatus [04] "  # an empty SATA port
    r"|\bAER: (?:Corrected error|Multiple Corrected error)|severity=Corrected"  # corrected by the link
    r"|module verification failed: signature"  # an unsigned out-of-tree module (nvidia, lustre)
    r"|\bI/O error, dev (?:fd|sr)\d|Buffer I/O error on dev(?:ice)? (?:fd|sr)\d"  # floppy, optical drive
    # an optional command the device lacks (no data moved; the kernel falls back: dmesg_kinds)
    rf"|operation not supported error, dev \S{{1,40}} sector \d{{1,20}} op 0x[0-9a-f]{{1,4}}:\((?:{NO_DATA_OPS})\)"
    r"|ata\d{1,3}(?:\.\d\d)?: (?:ACPI cmd .{1,80}(?:filtered out|rejected by device)|failed to resume link"
    r" \(SControl 0\)|limiting SATA link speed)"
    r"|\bdisabling ANA support\b"  # nvme: a controller without ANA (a local drive)
    r"|\bmissing or invalid SUBNQN field"  # nvme: a controller that reports no NQN (core.c quirk)
    r"|\berror status/mask=|^\S{1,30} [0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]: {2,}\[ ?\d{1,2}\] "  # AER report details
    r"|nvidia-nvlink: Nvlink Core is being initialized|NVRM: (?:loading|GPU at PCI)"
    r"|\bAMD-Vi: (?:Interrupt remapping|IOMMU performance)|\bDMAR: .{0,40}(?:enabled|Firmware Bug)"
    r"|LNet: Added LNI|Lustre: Lustre: Build Version"
    r"|\bpreferred (?:NUMA|timeout)|\berror handling\b|\bReporting errors\b|\berror (?:recovery|injection) "
    r"(?:disabled|enabled|support)|\bwith error[- ]correct|\bError Record Serialization|\bRAS: "
    r"|\bmlx5_core \S{1,16}: (?:E-Switch|mlx5_pcie_event|firmware version|Port module event: module \d{1,3}, Cable plugged)"
    r"|\bib\w{0,20}: (?:Link is Down|link becomes ready)"
)

# --- the job's own output (any reader's lines: a job's log is sometimes read as a kernel log) ---
_JOB_FAMILIES = (
    # launchers: their exit codes and signals are app_log_launch's (``launch_record``, tried first)
    ("launcher", r"\bChildFailedError\b|\bSignals\.SIG[A-Z]{2,6}\b|^\s*Killed\s*$"),
    # NCCL's and ProcessGroupNCCL's failures
    (
        "nccl",
        r"\bNCCL (?:WARN|ABORT)\b|\bWatchdog caught collective operation timeout|\bnccl(?:System|Internal"
        r"|UnhandledCuda|Remote|InvalidUsage)Error\b|\bNCCL error\b|\bProcessGroupNCCL\b.{0,200}\btimeout",
    ),
    # cuFile and GDS as an application prints them
    (
        "cufile",
        r"\bcuFile(?:\w{0,30})? (?:error|failed|returned (?:an )?error)|\bCU_FILE_[A-Z_]{4,40}\b"
        r"(?<!CU_FILE_SUCCESS)|\[pid=\d{1,9} tid=\d{1,9}\] ERROR ",
    ),
    # Python: an exception line (the last line of a traceback), an errno, Rust's io errors
    (
        "traceback",
        r"^\s*(?:\[rank\d{1,6}\]:\s*)?(?:[a-z_]\w{0,40}\.){0,8}[A-Z]\w{0,60}(?:Error|Exception|Failure)"
        r"(?::\s|$)|\[Errno \d{1,4}\]|\(os error \d{1,4}\)|\bIoError\(Os \{ code: \d{1,4}",
    ),
    # CUDA errors as frameworks print them
    (
        "gpu",
        r"\bCUDA error: |\bcudaError[A-Z]\w{2,40}\b|\bCUDA out of memory\b|\bCUBLAS_STATUS_(?!SUCCESS)\w{3,30}",
    ),
    # RDMA libraries' errors in a job's output
    ("rdma", r"\bUCX\s+(?:ERROR|FATAL)\b|\bibv_\w{2,30}(?:\(\))? failed\b"),
)
_JOB = tuple((family, lazy_compile(pattern)) for family, pattern in _JOB_FAMILIES)

# Healthy lines of a job's output that look like errors (an exception's *name* in prose, a
# launcher saying a rank exited well, NCCL warnings about its own optional plugins).
_JOB_BENIGN = lazy_compile(
    r"\bNCCL WARN (?:NET/Plugin|Could not find|Failed to open libibverbs)"
    r"|\bexitcode\s*:\s*0\b|\bwarnings?\.warn\(|\bDeprecationWarning\b|\bUserWarning\b|\bFutureWarning\b"
)

# Lower-case substrings one of which every error line holds (the dmesg reader's gate).
HINTS: tuple[str, ...] = (
    "err", "fail", "timed out", "timeout", "not responding", "abort", "reset", "lost", "evict", "expel",
    "refused", "unreachable", "corrupt", "denied", "unable", "cannot", "can't", "couldn't", "invalid",
    "fault", "panic", "shut", "read-only", "disconnect", "offline", "degraded", "dead", "hung", "stuck",
    "not ready", "removing", "unrecover", "critical", "fallen off", "rc = -", "status -", "blocked for more",
    "bad", "no space", "exceeded", "xid", "rectify", "return code", "exitcode", "signals.sig", "killed", "warn",
    "exception", "os error", "ioerror", "cuda", "cu_file", "cufile", "nccl", "ucx", "ibv_",
)  # fmt: skip

MAX_CHARS = 2000  # bounds the work on garbage lines

# A line a reader already made a failure event of is an error line of that event's family (the
# reader judged it); its healthy kinds (a module loaded, a marker, a trace frame) are not.
KIND_FAMILY: dict[str, str] = {
    **dict.fromkeys(("nvme_status_error", "nvme_timeout", "nvme_abort", "nvme_reset", "nvme_ana",
                     "nvmeof_no_transport", "nvmeof_host_identity", "nvmeof_keepalive",
                     "nvmeof_transport_error", "nvmeof_reconnect"), "nvme"),
    **dict.fromkeys(("blk_io_error", "scsi_sense", "backing_store_full", "capacity_to_zero", "md_failure"),
                    "block"),
    **dict.fromkeys(("fs_shutdown", "fs_error", "fs_mount_option_rejected"), "filesystem"),
    **dict.fromkeys(("nvidia_fs_error", "peermem_error", "nvrm_xid", "nvrm_api_mismatch", "nvrm_gpu_init_failed",
                     "nvrm_gpu_lost", "gpl_symbol_refusal", "module_symbol_mismatch", "pat_conflict"), "gpu"),
    # GDRCopy's own failures (app_log_gdr): its module gdrdrv is a GPU module, as its kernel lines are
    **dict.fromkeys(("gdrdrv_too_old", "gdr_pin_failed", "gdr_open_failed", "gdrcopy_tests_failed"), "gpu"),
    "pcie_aer": "pcie",
    "iommu_fault": "iommu",
    "hung_task": "hang",
    # app_log's kinds (its errors[]): the job's own failures
    **dict.fromkeys(("rdma_local_protection_error", "rdma_retry_exceeded", "rdma_completion_error",
                     "rdma_enomem", "rdma_verbs_failed"), "rdma"),
    **dict.fromkeys(("ckpt_enospc", "ckpt_edquot", "ckpt_eio", "ckpt_estale", "ckpt_erofs", "ckpt_eacces",
                     "ckpt_write_failed", "ckpt_truncated", "ckpt_dcp_failed", "errno_error"), "traceback"),
    **dict.fromkeys(("collective_timeout", "collective_hang", "nccl_warn", "nccl_cuda_failure", "nccl_error"),
                    "nccl"),
    "cuda_error": "gpu",
    "launcher_exit": "launcher",
}  # fmt: skip


def job_benign(line: str) -> bool:
    """A healthy line of a job's output that looks like an error (``_JOB_BENIGN``)."""
    return bool(_JOB_BENIGN.search(line))


def of_event(kind: str, details: dict[str, Any] | None = None) -> str | None:
    """The family of a reader's event kind when it is a failure, else None (a corrected PCIe
    error is the link's own correction, not a failure of the path)."""
    if kind == "pcie_aer":  # the report's header says its severity; its detail lines do not
        severity = str((details or {}).get("severity", "")).lower()
        return "pcie" if "uncorrect" in severity or "fatal" in severity else None
    return KIND_FAMILY.get(kind)


def classify(text: str) -> tuple[str, str | None] | None:
    """``(family, device)`` when ``text`` (a kernel message without its prefix, or a line of a
    job's output) is an error of the storage path, else None."""
    text = text.strip()[:MAX_CHARS]
    if not text:
        return None
    for family, pattern in _KERNEL:
        m = pattern.search(text)
        if m is None:
            continue
        if _BENIGN.search(text):
            return None
        if _ERROR_WORDS.search(text):
            return family, _device(m)
        return None
    if launch_record(text) is not None:  # a launcher's bad exit, decoded (app_log_launch)
        return "launcher", None
    for family, pattern in _JOB:
        if pattern.search(text):
            # a warning naming an errno is still the errno (joblib's "UserWarning: [Errno 28] …")
            benign = _JOB_BENIGN.search(text) and family != "traceback"
            return None if benign else (family, None)
    return None


def kernel_family(text: str, at_start: bool = False) -> str | None:
    """The storage-path kernel subsystem whose prefix ``text`` (a kernel message without its
    time) carries, error or not: what a line quoted in prose must name to be a kernel line.
    ``at_start``: only a subsystem named where the text begins (a sentence that quotes
    ``I/O error, dev sda`` further on is no kernel line itself)."""
    text = text.strip()[:MAX_CHARS]
    find = "match" if at_start else "search"
    return next((family for family, pattern in _KERNEL if getattr(pattern, find)(text)), None)


@lru_cache(maxsize=4096)
def classify_cached(text: str) -> tuple[str, str | None] | None:
    """``classify`` remembered: a log repeats its lines (a storm of one message)."""
    return classify(text)


def _device(m: object) -> str | None:
    groups = getattr(m, "groupdict", dict)()
    for key in ("ns", "sd", "dev", "dev2", "device"):
        value = groups.get(key)
        if value:
            return str(value).rstrip(":")
    return None


def has_hint(lowered: str) -> bool:
    """Whether a lower-cased line holds one of HINTS (the cheap test before ``classify``)."""
    return any(hint in lowered for hint in HINTS)
