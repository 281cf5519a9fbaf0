"""The kernel log's event kinds: (kind, hints, patterns), in priority order; the first pattern
that matches a message wins. Named groups become event details; group "device" (if any) names
the device. Patterns follow the kernel's wording across versions (see docs/facts/dmesg.md), not
one sample.

The speed device, as data beside the patterns it guards: a message is tried against a kind's
patterns only when its lower-cased text holds one of the kind's *hints*. The log's lines holding
no hint at all are not classified, and the hints present are looked for in the log's distinct
words (gdsdoctor.probes.dmesg). Each is kept because it measurably pays on a long log
(docs/performance.md, scripts/dmesg_gates.py). tests/probes/test_dmesg.py checks that every
pattern holds a hint of its kind, and that the gated answer equals trying every pattern on every
line of every test and fixture log.
"""
# ruff: noqa: E501  (one pattern a line reads better than a pattern cut to fit)

from __future__ import annotations

# The block layer's operations that move no data (REQ_OP_* names as blk_op_str prints them)
NO_DATA_OPS = r"WRITE_ZEROES|DISCARD|SECURE_ERASE|WRITE_SAME|ZONE_[A-Z_]{2,20}"
_ERRNO = r"\(?(?P<errno>-\d+)\)?"
_TIMEOUT_ACTION = r"(?P<action>aborting|reset controller|disable controller|completion polled)"

# The code of the storage path, as call-trace frames name it: functions of built-in code (local
# filesystems, block, NFS/RPC, Ceph, FUSE, writeback) and the modules of storage drivers and of
# network and parallel filesystems.
_STORAGE_FUNCTION = (
    r"_*(?:nvme|xfs|ext4|jbd2|btrfs|nvfs|md|raid\d*|dm|bcache|blk_mq|nfs|nfs4|nfsd|nfsd4|pnfs|rpc|xprt|ceph|"
    r"rbd|fuse)_\w*|wb_writeback|writeback_sb_inodes|wb_wait_for_completion|balance_dirty_pages\w*|"
    r"filemap_write_and_wait\w*|_*filemap_fdatawait\w*|folio_wait_writeback|wait_on_page_writeback|"
    r"sync_inodes_sb|submit_bio_wait|request_wait_answer|FhgfsOps\w*"
)
_STORAGE_MODULE = (
    r"nvme\w*|xfs|ext4|jbd2|btrfs|zfs|spl|nvidia_fs|md_mod|raid\w+|dm_\w+|bcache|nfs|nfsv[34]|nfsd|"
    r"nfs_layout_\w+|blocklayoutdriver|sunrpc|rpcrdma|lnet|ptlrpc|osc|mdc|lov|lmv|mgc|lustre|obdclass|"
    r"ko2iblnd|ksocklnd|beegfs|mmfs26|mmfslinux|wekafsio|wekafsgw|ceph|libceph|rbd|fuse"
)

# fmt: off
RULES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("peermem_error", ("peermem", "peer_mem"), (
        r"(?i)\b(?:nvidia[-_]peermem|nv_peer_mem)\b.*(?:error|fail|unknown symbol|disagrees|invalid)",
    )),
    ("gpl_symbol_refusal", ("gpl-only", "unknown symbol"), (
        r"^(?:(?P<module>\w+): )?module using GPL-only symbols uses symbols (?:\S+ )?from proprietary "
        r"module (?P<provider>\w+)",
        r"^(?:(?P<module>\w+): )?Unknown symbol (?P<symbol>nvidia_p2p_\w+)",
    )),
    ("module_symbol_mismatch", ("symbol",), (
        r"^(?P<module>\w+): no symbol version for (?P<symbol>\w+)",
        r"^(?P<module>\w+): disagrees about version of symbol (?P<symbol>\w+)",
        r"^(?P<module>\w+): Unknown symbol (?P<symbol>\w+)",
    )),
    # GDRCopy's kernel module failing the NVIDIA driver's P2P interface (gdrdrv.c:
    # "nvidia_p2p_get_pages(va=%llx len=%lld p2p_token=%llx va_space=%x …) failed [ret = %d]")
    ("gdrdrv_error", ("gdrdrv",), (
        r"gdrdrv:(?:\w{1,40}:)?nvidia_p2p_get_pages\([^\n)]{0,200}\) failed \[ret = (?P<errno>-\d{1,4})\]",
    )),
    ("nvidia_fs_error", ("nvidia",), (
        r"(?i)nvidia[-_]fs:.*Incompatible page table version (?P<version>0x[0-9a-f]+)",
        r"(?i)nvidia[-_]fs:.*Error ret (?P<errno>-\d+) invoking (?P<call>\w+)",
        r"(?i)nvidia[-_]fs:\s*(?P<op>read|write) IO failed\s*:\s*(?P<errno>-\d+)",
        r"(?i)nvidia[-_]fs:.*rw_verify_area failed with (?P<errno>-\d+)",
        r"kernel BUG at \S*nvidia-fs",
        r"(?i)nvidia[-_]fs:.*(?:error|fail|incompatible|not set|cannot|invalid|not aligned|unable|bug)",
    )),
    ("nvidia_fs_loaded", ("registered correctly",), (
        r"nvidia[-_]fs: registered correctly with major number (?P<major>\d+)",
    )),
    ("nvrm_xid", ("xid",), (
        r"NVRM: Xid \((?:PCI:)?(?P<device>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?)\): (?P<xid>\d+)",
    )),
    # The NVIDIA driver's own account of a GPU it cannot serve (open-gpu-kernel-modules' wording,
    # drivers 177 to 580): its user-space libraries are another release than the module that runs
    # (the first line of a four-line message names the libraries' version); a GPU it could not
    # initialise; a GPU gone from the bus (one line, or the last line of the three-line form,
    # which names no device). An Xid 79 line is an nvrm_xid event (above), not one of these.
    ("nvrm_api_mismatch", ("api mismatch",), (
        r"NVRM: API mismatch: the client has the version (?P<client_version>\d+(?:\.\d+)+)",
    )),
    ("nvrm_gpu_init_failed", ("rminitadapter",), (
        r"NVRM: GPU (?P<device>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d): RmInitAdapter failed",
    )),
    ("nvrm_gpu_lost", ("fallen off the bus",), (
        r"NVRM: (?:The NVIDIA )?GPU (?:at PCI:)?(?P<device>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?)\b.*fallen off the bus",
        r"NVRM: .*fallen off the bus and is not responding to commands",
    )),
    ("nvme_status_error", ("sct ",), (
        r"^(?P<device>nvme\d+(?:c\d+)?n\d+): (?P<op>.+?)\(0x[0-9a-f]+\) @ LBA (?P<lba>\d+), (?P<blocks>\d+) "
        r"blocks, (?P<status>.+?) \(sct (?P<sct>0x[0-9a-f]+) / sc (?P<sc>0x[0-9a-f]+)\)",
        r"^(?:nvme (?P<device>nvme\d+): )?(?P<op>[\w /-]+?)\(0x[0-9a-f]+\),? (?P<status>.+?) "
        r"\(sct (?P<sct>0x[0-9a-f]+) / sc (?P<sc>0x[0-9a-f]+)\)",
    )),
    ("nvme_timeout", ("timeout",), (
        r"\bI/O (?:tag )?(?P<tag>\d+) (?:\([0-9a-fx]+\) )?(?:type \d+ )?(?:opcode (?P<opcode>0x[0-9a-f]+) "
        r"(?:\([^)]*\) )?)?QID (?P<qid>\d+) timeout(?:, " + _TIMEOUT_ACTION + ")?",
        r"queue (?P<qid>\d+): timeout (?:cid|request) (?P<cid>0x[0-9a-f]+(?![0-9a-f]))(?:.*?opcode (?P<opcode>0x[0-9a-f]+))?",
        r"\btimeout, " + _TIMEOUT_ACTION,
    )),
    ("nvme_abort", ("abort status",), (
        r"\bAbort status: (?P<status>0x[0-9a-f]+)",
    )),
    # nvme_fabrics found no transport registered under the name a connect asked for: the module
    # is not loaded, or a stand-in (MLNX_OFED's dummy nvme-rdma) registers none (fabrics.c)
    ("nvmeof_no_transport", ("no handler found",), (
        r"no handler found for transport (?P<transport>[\w-]{1,20})",
    )),
    # the kernel keeps one host ID per host NQN (fabrics.c nvmf_host_add): a connect that pairs
    # either with another is refused with EINVAL
    ("nvmeof_host_identity", ("found same host",), (
        r"found same hostnqn (?P<hostnqn>\S{1,223}) but different hostid (?P<hostid>[0-9a-fA-F-]{36})",
        r"found same hostid (?P<hostid>[0-9a-fA-F-]{36}) but different hostnqn (?P<hostnqn>\S{1,223})",
    )),
    ("nvmeof_keepalive", ("keep",), (
        r"failed nvme_keep_alive(?:_end_io)? error=(?P<status>-?\d+)",
        r"(?i)keep[- _]alive (?:failed|timeout|timed out)",
        r"keep_alive_tmo 0 won't execute",
    )),
    ("nvme_ana", ("path", "ana"), (
        r"no (?P<state>usable|available) path - (?:requeuing|failing) I/O",
        r"ANATT timeout",
        r"Failed to get ANA log",
        r"ANA log page size",
        r"disabling ANA support",
        r"ANA group \d+: (?P<state>[\w-]+)",
        r"(?i)path (?:is )?inaccessible",
    )),
    ("nvmeof_transport_error", ("cqe", "receive failed", "send request", "digest", "pdu"), (
        r"for CQE 0x\w+ failed with status (?P<status>.+?) \((?P<code>\d+)\)",
        r"receive failed: +(?P<errno>-?\d+)",
        r"failed to send request (?P<errno>-?\d+)",
        r"(?:header|data) digest error",
        r"bad pdu length returned",
    )),
    # The target answered the fabrics Connect command and refused it (drivers/nvme/host/fabrics.c
    # nvmf_log_connect_error; rdma.c nvme_rdma_conn_rejected; multipath.c): the host reached the
    # target, so it is not a network fault. The NVMe status is decoded from its number
    # (probes/nvme_status.py): "error wo/DNR bit: N" and a positive "ret=N" are statuses, not errnos.
    ("nvmeof_connect_refused", ("connect for subsystem", "connect invalid", "connect command failed",
                                "connect incompatible", "connect rejected", "invalid mnan", "failed to connect queue"), (
        r"Connect for subsystem (?P<subsysnqn>\S{1,223}) is not allowed, hostnqn: (?P<hostnqn>\S{1,223})",
        r"Connect Invalid Data Parameter, (?P<field>subsysnqn|hostnqn|cntlid)",
        r"Connect Invalid (?P<field>SQE) Parameter",
        r"Connect command failed, error wo/DNR bit: (?P<status>\d{1,5})",
        r"Connect command failed: (?P<reason>controller is busy or not available|host path error|authentication required)",
        r"Connect incompatible format: (?P<recfmt>\d{1,5})",
        r"Connect rejected: status (?P<cm_status>\d{1,3}) \((?P<cm_reason>[^)\n]{1,60})\)(?: nvme status (?P<status>\d{1,5}))?",
        r"Invalid MNAN value (?P<mnan>\d{1,10})",
        r"failed to connect queue: (?P<qid>\d{1,5}) ret=(?P<status>[1-9]\d{0,4})\b",
    )),
    ("nvmeof_reconnect", ("connect", "error recovery", "removing", "mr pool", "ctrl_loss", "ctrl loss", "rdma_resolve_addr", "address error", "route error"), (
        r"Reconnecting in (?P<delay_s>\d+) seconds",
        r"Failed reconnect attempt(?: (?P<attempt>\d+)(?:/(?P<max_attempts>\d+))?)?",
        r"failed to connect socket: " + _ERRNO,
        r"rdma connection establishment failed " + _ERRNO,
        # the host's own errors before the target answered (a negative number is an errno)
        r"Connect command failed, errno: (?P<errno>-\d{1,4})",
        r"failed to connect queue: \d+ ret=(?P<errno>-\d+)",
        r"rdma_resolve_addr wait failed " + _ERRNO,
        r"address error " + _ERRNO,
        r"route error " + _ERRNO,
        r"rdma_connect failed " + _ERRNO,
        r"failed to initialize (?:pi )?mr pool",
        r"starting error recovery",
        r"Removing controller(?: \((?P<errno>-?\d+)\))?",
        r"Removing ctrl: NQN",
        r"(?i)ctrl_loss",
        r"(?i)ctrl loss",
    )),
    ("nvmeof_reconnected", ("successfully reconnected",), (
        r"Successfully reconnected",
    )),
    ("nvme_reset", ("reset", "not ready", "probe failure", "identify controller"), (
        r"controller is down; will reset: CSTS=(?P<csts>0x[0-9a-f]+)",
        r"Device not ready; aborting (?:reset|initiali[sz]ation)(?:, CSTS=(?P<csts>0x[0-9a-f]+))?",
        r"Removing after probe failure status: (?P<errno>-?\d+)",
        r"frozen state error detected, reset controller",
        r"Identify Controller failed \((?P<errno>-?\d+)\)",
        r"Disabling device after reset failure",
        r"(?i)resetting controller",
        r"restart after slot reset",
    )),
    # Every loop device attached logs "capacity change from 0 to N": only a change to 0 is a hint.
    ("capacity_to_zero", ("to 0",), (
        r"^(?P<device>\S+): detected capacity change from \d+ to 0\b",
    )),
    ("fs_mount_option_rejected", ("barrier", "option", "parameter"), (
        r"(?i)\bnobarrier\b.*(?:deprecated|removed|ignor|unknown|invalid)",
        r"(?i)(?:unknown|unrecognized|bad) mount option",
        r"(?i)^(?:XFS|EXT4-fs|ext4|xfs|btrfs|BTRFS)\b.*(?:unknown|unrecognized) (?:option|parameter)",
    )),
    ("cmdline_option_rejected", ("unknown option", "unknown kernel command line"), (
        r"(?P<subsystem>AMD-Vi|PCI|DMAR|iommu|pci): Unknown option",
        r"Unknown kernel command line parameters \"(?P<params>[^\"]*)\"",
    )),
    ("fs_shutdown", ("shut", "corruption", "please umount", "aborting journal", "read-only"), (
        r"Filesystem has been shut down",
        r"Corruption (?:of in-memory data )?detected",
        r"xfs_do_force_shutdown\((?P<flags>0x[0-9a-f]+)\)",
        r"xfs_force_shutdown\((?P<device>[^,)\s]{1,64}),(?P<flags>0x[0-9a-f]+)\)",
        r"Shutting down filesystem",
        r"Please umount the filesystem",
        r"Aborting journal on device (?P<device>\S+?)(?:-\d+)?\.?$",
        r"Remounting filesystem read-only",
        r"(?i)ext4.*aborting journal",
    )),
    # Hints name the errors, not the filesystems: every mount and unmount logs "EXT4-fs" or "XFS".
    ("fs_error", (
        "ext4-fs error", "ext3-fs error", "error while writing superblock", "ext4_end_bio", "unwritten extents", "jbd2",
        "internal error", "metadata i/o error", "log i/o error", "metadata crc error",
        "metadata corruption", "xfs_log_force", "returned error", "btrfs",
    ), (
        r"EXT4-fs error",
        r"EXT3-fs error",
        r"EXT4-fs \((?P<device>[^)]+)\): I/O error while writing superblock",
        r"ext4_end_bio:.*I/O error",
        r"failed to convert unwritten extents",
        r"JBD2: (?:recovery failed|error loading journal|.*error)",
        r"XFS \((?P<device>[^)]+)\): (?:Internal error|metadata I/O error|log I/O error|Metadata CRC error"
        r"|Metadata corruption detected|xfs_log_force: error|.* returned error (?P<errno>-\d+))",
        # kernels before ~4.x print no device ("XFS: Internal error ...") or quote it first
        r"^XFS: (?:Internal error|metadata I/O error|log I/O error|Metadata CRC error|Metadata corruption detected)",
        r"^Filesystem \"(?P<device>[^\"]{1,64})\": XFS internal error",
        r"BTRFS (?:error|critical)",
    )),
    # BLK_STS_NOSPC: the device below (a thin pool, the file under a loop image, a thin-provisioned
    # LUN or NVMe namespace) has no space left to allocate; a dm-thin pool says so itself
    ("backing_store_full", ("space allocation", "out-of-data-space"), (
        r"critical space allocation error, dev (?P<device>[^,\s]+)",
        r"device-mapper: thin: (?P<pool>[\w:.-]{1,64}): switching pool to out-of-data-space",
    )),
    # BLK_STS_NOTSUPP on a command that moves no data (Write Zeroes, Discard, Write Same, Secure
    # Erase, zone management): the device lacks an optional command, the kernel stops sending it
    # and its callers fall back (blkdev_issue_zeroout writes zero pages; a filesystem stops
    # discarding), so nothing written is lost: not a failed I/O (block/blk-lib.c, blk-core.c)
    ("blk_op_unsupported", ("not supported error",), (
        r"operation not supported error, dev (?P<device>[^,\s]+), sector (?P<sector>\d+) "
        rf"op 0x[0-9a-f]+:\((?P<op>{NO_DATA_OPS})\)",
    )),
    ("blk_io_error", ("error, dev", "i/o error", "medium error"), (
        r"(?:\b(?P<caller>\w{1,40}): )?\b(?P<error>[\w/]{1,20}(?: [\w/]{1,20}){0,3}) error, "
        r"dev (?P<device>[^,\s]+), sector (?P<sector>\d+)"
        r"(?: op 0x[0-9a-f]+:\((?P<op>\w+)\))?",
        r"Buffer I/O error on dev(?:ice)? (?P<device>[^,\s]+)",
        r"(?i)critical medium error",
    )),
    # The SCSI sense data of a failed command (sd, sr, st; libata prints its errors this way too):
    # "sd 2:0:0:0: [sdb] tag#5 Sense Key : Medium Error [current]", "... Add. Sense: Unrecovered
    # read error", older kernels "ASC=0x11 ASCQ=0x4"; the H:C:T:L ties the device to its host.
    ("scsi_sense", ("sense key", "sense:", "ascq="), (
        r"^(?:sd|sr|st) (?P<hctl>\d+:\d+:\d+:\d+): \[(?P<device>sd[a-z]{1,4}|sr\d{1,4}|st\d{1,4})\] {1,2}"
        r"(?:tag#\d+ )?(?:[\w<> ]{1,30}: ){0,2}Sense Key ?: (?P<sense_key>[A-Za-z][A-Za-z ]{0,30}[a-z]|0x[0-9a-f]{1,2})",
        r"^(?:sd|sr|st) (?P<hctl>\d+:\d+:\d+:\d+): \[(?P<device>sd[a-z]{1,4}|sr\d{1,4}|st\d{1,4})\] {1,2}"
        r"(?:tag#\d+ )?(?:[\w<> ]{1,30}: ){0,2}Add\. Sense: (?P<asc>[^\n]{1,100})",
        r"^(?:sd|sr|st) (?P<hctl>\d+:\d+:\d+:\d+): \[(?P<device>sd[a-z]{1,4}|sr\d{1,4}|st\d{1,4})\] {1,2}"
        r"(?:tag#\d+ )?ASC=(?P<asc_code>0x[0-9a-f]{1,2}) ASCQ=(?P<ascq>0x[0-9a-f]{1,2})",
        # 2.6 kernels: "Current sda: sense key Medium Error", "sda: Current: sense key: Medium Error"
        r"^Current (?P<device>sd[a-z]{1,4}): sense key:? (?P<sense_key>[A-Za-z][A-Za-z ]{0,30}[a-z])",
        r"^(?P<device>sd[a-z]{1,4}): Current: sense key:? (?P<sense_key>[A-Za-z][A-Za-z ]{0,30}[a-z])",
    )),
    # What carries a SCSI disk: a USB bridge (usb-storage, uas) makes every sd on that host
    # removable media, as does the sd driver's own "Attached SCSI removable disk"
    ("scsi_attach", ("removable disk", "usb-storage", ": uas"), (
        r"^sd (?P<hctl>\d+:\d+:\d+:\d+): \[(?P<device>sd[a-z]{1,4})\] Attached SCSI (?P<media>removable disk)",
        r"^scsi host(?P<host>\d+): (?P<transport>usb-storage|uas)\b",
    )),
    ("pcie_aer", ("aer", "pcie bus error", "rxerr", "badtlp", "baddllp", "rollover", "timeout", "replaytimer", "advnonfatalerr", "acsviol", "cmplt", "malftlp", "ecrc", "unsupreq", "dlp", "sdes", "fcp", "poisontlp", "rxof"), (
        r"AER: (?P<severity>Corrected|Uncorrected|Multiple Corrected|Multiple Uncorrected)",
        r"PCIe Bus Error: severity=(?P<severity>[\w() -]+?),",
        r"AER: .*error",
        r"(?:^|:)\s*\[\s*\d+\]\s+(?P<error>RxErr|BadTLP|BadDLLP|Rollover|Timeout|ReplayTimer|AdvNonFatalErr|"
        r"ACSViol|CmpltTO|CmpltAbrt|UnxCmplt|MalfTLP|ECRC|UnsupReq|DLP|SDES|FCP|PoisonTLP|RxOF)",
    )),
    ("iommu_fault", ("dmar", "io_page_fault", "amd-vi", "smmu", "iommu fault"), (
        r"DMAR: DRHD: handling fault",
        r"DMAR: \[DMA (?:Read|Write)",
        r"IO_PAGE_FAULT",
        r"AMD-Vi: Event logged",
        r"(?i)arm-smmu.*(?:fault|unhandled context)",
        r"(?i)iommu fault",
    )),
    ("iommu_info", ("iommu: ", "iommu group", "dmar: ", "amd-vi: "), (
        r"iommu: Default domain type: (?P<domain_type>\w+)",
        r"DMAR: IOMMU enabled",
        r"DMAR: Intel\(R\) Virtualization Technology for Directed I/O",
        r"AMD-Vi: (?:IOMMU performance counters supported|Interrupt remapping enabled|Found IOMMU)",
        r"Adding to iommu group (?P<group>\d+)",
        r"iommu: DMA domain TLB invalidation policy: (?P<policy>\w+)",
    )),
    ("pat_conflict", ("x86/pat", "memtype"), (
        r"x86/PAT: .*conflicting memory types",
        r"memtype_reserve failed",
        r"x86/PAT: .*map pfn expected mapping type",
    )),
    ("p2pdma", ("p2p", "peer-to-peer"), (
        r"\bp2pdma\b",
        r"\bpci_p2pdma\w*",
        r"\bp2pmem\b",
        r"(?i)\bpeer-to-peer DMA",
    )),
    ("oom_kill", ("killed process",), (
        r"\b(?:Memory cgroup out of memory|Out of memory): Killed process (?P<pid>\d{1,10}) \((?P<comm>[^)\n]{1,64})\)",
    )),
    ("hung_task", ("blocked for more",), (
        r"task (?P<task>\S+) blocked for more than (?P<seconds>\d+) seconds",
    )),
    # the lockup detectors (kernel/watchdog.c, watchdog_perf.c): a CPU stuck in kernel code for
    # seconds without scheduling ("[watchdog: ]BUG: soft lockup - CPU#%d stuck for %us! [%s:%d]") or
    # with interrupts off ("Watchdog detected hard LOCKUP on cpu %d"); the trace after it says where
    ("soft_lockup", ("soft lockup", "hard lockup"), (
        r"BUG: soft lockup - CPU#(?P<cpu>\d{1,5}) stuck for (?P<seconds>\d{1,9})s! \[(?P<task>[^\]\n]{1,64})\]",
        r"Watchdog detected hard LOCKUP on cpu (?P<cpu>\d{1,5})",
    )),
    ("kernel_bug", ("kernel bug", "bug: ", "oops", "general protection", "warning: cpu"), (
        r"kernel BUG at ",
        r"^BUG: ",
        r"^Oops: ",
        r"^Internal error: Oops",  # arm, arm64
        r"general protection fault",
        r"^WARNING: CPU: \d+ PID",
    )),
    # md / dm-raid / multipath / bcache giving up on a member (the array runs degraded or stops)
    ("md_failure", ("md/raid", "md: ", "device-mapper: raid", "device-mapper: multipath", "bcache: "), (
        r"md/raid\d*:(?P<device>md\w+): (?P<failure>Disk failure on (?P<member>\S+?)),? disabling device",
        r"md/raid\d*:(?P<device>md\w+): (?P<failure>not enough operational devices|cannot start dirty "
        r"degraded array|Operation continuing on (?P<remaining>\d+) devices|read error not correctable"
        r"|unable to read|failed to (?:run|create) raid set|raid set \S+ not accessible)",
        r"md: (?P<device>md\w+): (?P<failure>(?:recovery|resync) interrupted)",
        r"device-mapper: raid: (?P<failure>Failed to read superblock|Failing raid device|.*failed)",
        r"device-mapper: multipath: (?P<failure>Failing path (?P<member>\S+?))\.?$",
        r"bcache: (?P<failure>.*(?:error on|disabling caching|IO error|failed))",
    )),
    # Clients of network and parallel filesystems losing their server (the filesystem many nodes
    # share, or this node's path to it). One kind per client; details name the server (a host,
    # an LNet NID) and, for Lustre, the target, so the lifecycle can end an outage at its recovery
    # line. Wording from the source, not from a sample:
    # - sunrpc (net/sunrpc/clnt.c, rpc_check_timeout): "%s: server %s not responding, still
    #   trying" (hard mounts retry for ever: the writer hangs) or ", timed out" (soft mounts: the
    #   I/O fails with EIO); %s is the RPC program (nfs, lockd, rpcbind, …);
    # - Lustre (lustre/ptlrpc/import.c, client.c; LNet's o2iblnd/socklnd): "%s: Connection to %.*s
    #   (at %s) was lost", "%s: This client was evicted by %.*s", "operation %s to node %s failed:
    #   rc = %d", ptlrpc_expire_one_request's "Request sent has timed out for slow reply|sent
    #   delay|failed due to network error", LNet's "Timed out tx" and "Timed out RDMA with NID";
    # - BeeGFS (client_module common/toolkit/MessagingTk.c): "Communication error: Node: %s",
    #   "Receive timed out from %s @ %s", "Receive failed from %s @ %s", "Unable to connect to: %s".
    ("nfs_client", ("not responding",), (
        r"^(?P<program>[\w-]{1,20}): server (?P<server>\S{1,255}) not responding, (?P<state>still trying|timed out)",
    )),
    ("lustre_client", ("was lost", "evicted", "expire_one_request", "timed out tx", "timed out rdma", "to node"), (
        r"(?<![\w.-])(?P<client>[\w.-]{1,120}): Connection to (?P<target>[\w.-]{1,120}) \(at (?P<server>[^)\s]{1,120})\) (?P<state>was lost)",
        r"(?<![\w.-])(?P<client>[\w.-]{1,120}): This client was (?P<state>evicted) by (?P<target>[\w.-]{1,120})",
        r"(?<![\w.-])(?P<client>[\w.-]{1,120}): operation (?P<op>\w{1,40}) to node (?P<server>[\w.@-]{1,120}) (?P<state>failed): rc = (?P<errno>-\d{1,4})",
        r"ptlrpc_expire_one_request\(\)\) @@@ Request sent has (?P<state>timed out for slow reply|timed out for sent delay|failed due to network error)"
        # "o250->MGC10.0.0.1@o2ib@10.0.0.1@o2ib:26/25": the import's name (an MGC's holds a NID) @ the NID
        r"(?:[^>\n]{0,300}->(?P<client>[\w.-]{1,120}(?:@\w{1,16})?)@(?P<server>[\w.-]{1,64}@\w{1,16}):\d)?",
        r"(?P<state>Timed out tx)(?: for (?P<server>[\w.-]{1,64}@\w{1,16}))?",
        r"(?P<state>Timed out RDMA) (?:with|to) (?P<server>[\w.-]{1,64}@\w{1,16})",
    )),
    ("beegfs_client", ("communication error", "receive timed out", "receive failed", "unable to connect"), (
        r"(?i:beegfs).{0,120}?(?P<state>Communication error): Node: (?P<server>[^(\n]{1,120}) \(comm result",
        r"(?i:beegfs).{0,120}?(?P<state>Receive timed out|Receive failed) from (?P<server>[^@\n]{1,120}) @ ",
        r"(?i:beegfs).{0,120}?(?P<state>Unable to connect) to: (?P<server>[^\n]{1,120})",
    )),
    # one frame of a call trace (or the RIP line) inside a storage module or function; the
    # derived facts tie frames to the hung-task report or oops they follow
    # Network and parallel filesystems are storage too (NFS/pNFS/RPC, Lustre, BeeGFS, GPFS, WekaFS,
    # Ceph/RBD, FUSE), and so is the page cache waiting on writeback. Frames come as "func+0x1/0x2
    # [module]" (a build id may follow the module), after "RIP: 0010:" or old kernels' "IP: " and
    # "[<ffffffffa03f2d5e>] ", or on 32-bit ARM as "[<80230d70>] (func) from [<…>] (caller+0x18/0x28)".
    ("storage_trace_frame", ("+0x",), (
        r"^\s*(?:RIP: [0-9a-f]{4}:|IP: |PC is at |LR is at )?(?:\[<[0-9a-f]{8,16}>\] )?(?:\? )?(?P<function>" + _STORAGE_FUNCTION + r")"
        r"\+0x[0-9a-f]+/0x[0-9a-f]+(?: \[(?P<module>\w+)(?: [0-9a-f]{20,64})?\])?",
        r"^\s*(?:RIP: [0-9a-f]{4}:|IP: |PC is at |LR is at )?(?:\[<[0-9a-f]{8,16}>\] )?(?:\? )?(?P<function>\w+)\+0x[0-9a-f]+/0x[0-9a-f]+ "
        r"\[(?P<module>" + _STORAGE_MODULE + r")(?: [0-9a-f]{20,64})?\]",
        r"^\s*\[<[0-9a-f]{8,16}>\] \((?P<function>" + _STORAGE_FUNCTION + r")\) from \[<[0-9a-f]{8,16}>\] "
        r"\(\w+\+0x[0-9a-f]+/0x[0-9a-f]+\)",
    )),
    # The system going down (kernel/reboot.c "reboot: Restarting system" / "Power down"; systemd's
    # shutdown binary logs to the kernel log once the journal is gone): not a failure, the moment
    # the NVMe-oF teardown is judged against (facts/derived/fabrics_teardown.py)
    ("system_shutdown", ("reboot:", "systemd-shutdown"), (
        r"^reboot: (?P<step>Restarting system|Power down|System halted)",
        r"^systemd-shutdown\[\d{1,7}\]: (?P<step>Syncing filesystems and block devices|Sending SIGTERM to remaining processes|Unmounting file systems|Detaching (?:loop|DM|MD) devices|Rebooting|Powering off)",
    )),
    # Lifecycle markers: what the kernel says when an object begins anew or recovers. They are
    # not events of a failure (the parser keeps them apart, in the section's ``lifecycle``):
    # gdsdoctor.facts.lifecycle judges the events before them as history.
    ("fs_mounted", ("mounting v", "mounted filesystem", "re-mounted", "first mount of filesystem"), (
        r"^XFS \((?P<device>[^)]+)\): Mounting V\d+ Filesystem(?: (?P<uuid>[0-9a-f-]{36}))?",
        r"^(?P<fstype>EXT[234])-fs \((?P<device>[^)]+)\): mounted filesystem(?: (?P<uuid>[0-9a-f-]{36}))?",
        r"^(?P<fstype>EXT[234])-fs \((?P<device>[^)]+)\): re-mounted(?: (?P<uuid>[0-9a-f-]{36}))? r/w",
        r"^BTRFS info \(device (?P<device>[^)\s]+)\): first mount of filesystem (?P<uuid>[0-9a-f-]{36})",
    )),
    ("fs_unmounted", ("unmounting filesystem",), (
        r"^XFS \((?P<device>[^)]+)\): Unmounting Filesystem(?: (?P<uuid>[0-9a-f-]{36}))?",
        r"^(?P<fstype>EXT[234])-fs \((?P<device>[^)]+)\): unmounting filesystem(?: (?P<uuid>[0-9a-f-]{36}))?",
    )),
    # a device that appears (a loop image attached, a disk probed): any earlier device of that name is gone
    ("block_attached", ("change from 0 to", "attached scsi"), (
        r"^(?P<device>[a-z][\w-]*): detected capacity change from 0 to [1-9]\d*",
        r"\[(?P<device>sd[a-z]+)\] Attached SCSI (?:removable )?disk",
    )),
    # an NVMe controller with its I/O queues: probed, reset done, or (fabrics) connected anew
    ("nvme_ready", ("default/read/poll", "i/o queues", "new ctrl"), (
        r"^nvme (?P<device>nvme\d+): (?:mapped )?\d+/\d+/\d+ default/read/poll queues",
        r"^nvme (?P<device>nvme\d+): creating \d+ I/O queues",
        r"^nvme (?P<device>nvme\d+): new ctrl: NQN \"(?P<nqn>[^\"]+)\"",
    )),
    # a network filesystem's server answering again (clnt.c call_decode: "%s: server %s OK"; Lustre
    # import.c: "%s: Connection restored to %.*s (at %s)")
    ("netfs_recovered", (" ok", "connection restored"), (
        r"^(?P<program>[\w-]{1,20}): server (?P<server>\S{1,255}) OK$",
        r"(?<![\w.-])(?P<client>[\w.-]{1,120}): Connection restored to (?P<target>[\w.@-]{1,120}) \(at (?P<server>[^)\s]{1,120})\)",
    )),
    ("pcie_recovered", ("recovery successful",), (
        r"(?P<device>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]): AER: device recovery successful",
    )),
)
# fmt: on

LIFECYCLE_KINDS = frozenset(
    ("fs_mounted", "fs_unmounted", "block_attached", "nvme_ready", "pcie_recovered", "netfs_recovered")
)
