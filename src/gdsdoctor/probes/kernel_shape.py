"""Whether lines without any clock or prefix are kernel messages (``dmesg -t``, a healthy log).

A log with timestamps says what it is; ``dmesg -t`` (or a log cut from a ticket without its
stamps) does not, and a healthy one has no failure message to go by either. Kernel messages start
with the name of what printed them: a subsystem (``ACPI:``, ``PCI:``, ``x86/fpu:``), a driver and
its device (``nvme nvme0:``, ``pci 0000:00:01.0:``, ``EXT4-fs (nvme0n1p1):``) or the boot banner.
A text whose lines mostly start that way, several of them with a prefix only the kernel prints,
is a kernel log.
"""

from __future__ import annotations

from gdsdoctor.patterns import lazy_compile

# The first word(s) of kernel messages every boot prints, or storage/GPU drivers print.
_KERNEL_PREFIX = lazy_compile(
    r"^(?:Linux version |Command line: |Kernel command line: |BIOS-e820: |BIOS-provided |e820: |ACPI: |"
    r"ACPI BIOS |PCI: |pci \w{4}:|pci_bus \w{4}:|pcieport \w{4}:|x86/|DMI: |Hypervisor detected|tsc: |"
    r"clocksource: |Memory: |SLUB: |rcu: |NR_IRQS: |Console: |APIC: |smpboot: |smp: |CPU\d*: |"
    r"Freeing |Run /init|audit: |systemd\[1\]: |EXT4-fs |XFS \(|nvme nvme\d|nvme\d|usb \d|usbcore: |"
    r"scsi host\d|scsi \d|sd \d|ata\d|input: |NET: |TCP: |random: |Zone ranges|zone |"
    r"Dentry cache|Inode-cache|Mount-cache|devtmpfs: |clk: |Spectre|MDS: |Key type |Block layer |"
    r"io scheduler |Serial: |loop: |EDAC |microcode: |virtio|raid6: |xor: |iommu: |DMAR: |AMD-Vi: |"
    r"PCI-DMA: |software IO TLB|Trying to unpack|Unpacking |workingset: |fuse: |Btrfs |md: |md\d|"
    r"device-mapper: |NVRM: |nvidia|mlx5_core |infiniband |RPC: |NFS: |kvm-clock: |IOAPIC|"
    r"On node \d|Initmem |NODE_DATA|Early memory|Movable zone|TSC |CPU topo: |Faking a node|"
    r"No NUMA|last_pfn|RAMDISK: |Using GB pages|MTRR |NX \(|\[Firmware Bug\]|percpu: |pcpu-alloc: |"
    r"Built \d+ zonelists|LSM: |landlock: |Yama: |SELinux: |ftrace: |Dynamic Preempt|"
    r"Calibrating delay|pid_max: |Mount-cache|cblist_init|Performance Events|signal: |"
    r"devres|thermal|cpuidle: |hid|blk-mq|sched_clock: |Timer migration|printk: |"
    # what failing storage prints on every kernel generation (old ones without a clock)
    r"end_request: |blk_update_request: |print_req_error: |Buffer I/O error |SCSI error |sd[a-z]{1,4}: |"
    r"sr \d|INFO: task |Call Trace:|RIP: |BUG: |EXT3-fs |JBD2|XFS: |Filesystem \"|lockd: |nfs: )"
)
MIN_KERNEL_LINES = 3
KERNEL_SHARE = 0.5


def kernel_prefixed(line: str) -> bool:
    """The line (as given: no clock) starts the way kernel messages do."""
    return bool(_KERNEL_PREFIX.match(line.lstrip()))


def kernel_shaped(lines: list[str], events: int = 0) -> bool:
    """Most non-blank lines (as given: no clock) start like kernel messages, three at least;
    ``events``: lines known to be kernel events that do not start that way (they count too)."""
    filled = [line for line in lines if line.strip()]
    kernel = sum(1 for line in filled if kernel_prefixed(line)) + events
    return kernel >= MIN_KERNEL_LINES and kernel >= KERNEL_SHARE * len(filled)
