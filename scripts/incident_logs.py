"""Kernel logs of a node during and after a storage incident, of any size, for measuring how the
work grows with the log (scripts/benchmark.py, tests/test_growth.py).

Every line has the shape of a real kernel line of the test data (tests/data/dmesg/: the NVMe
timeouts, aborts, resets and queues-back of ``journal-gentoo-nvme-timeouts-reset-queues-then-polled``,
the I/O errors of ``dmesg-nvme-io-error-status-ext4-journal-abort``, a filesystem mounted
anew, an AER recovery); only the numbers change from line to line (as they do in a real storm:
command ids, sectors, LBAs, timestamps). Between incidents, the quiet lines a healthy boot
logs (``dmesg-t.this-machine-healthy-vm``). Deterministic: the same arguments give the same text.
"""

from __future__ import annotations

CONTROLLERS = 8

# One incident of controller {c}: what a failing NVMe drive logs, and its recovery (the queues
# back) and a remount of its filesystem. Each entry: (seconds after the previous line, message).
_INCIDENT = (
    (0.5, "nvme nvme{c}: I/O {n} (I/O Cmd) QID {q} timeout, aborting"),
    (0.1, "nvme nvme{c}: I/O {m} (I/O Cmd) QID {q} timeout, aborting"),
    (2.0, "nvme nvme{c}: Abort status: 0x0"),
    (28.0, "nvme nvme{c}: I/O {n} QID {q} timeout, reset controller"),
    (0.1, "nvme{c}n1: I/O Cmd(0x2) @ LBA {lba}, 104 blocks, I/O Error (sct 0x3 / sc 0x71)"),
    (0.1, "I/O error, dev nvme{c}n1, sector {lba} op 0x0:(READ) flags 0x80700 phys_seg 13 prio class 2"),
    (0.1, "I/O error, dev nvme{c}n1, sector {sector} op 0x1:(WRITE) flags 0x4000 phys_seg 128 prio class 0"),
    (0.1, "nvme nvme{c}: 64/0/0 default/read/poll queues"),
    (1.0, "pcieport 0000:{bus:02x}:01.0: AER: Corrected error received: 0000:{bus:02x}:00.0"),
    (0.1, "nvme 0000:{bus:02x}:00.0: AER: device recovery successful"),
    (5.0, "EXT4-fs (nvme{c}n1p1): mounted filesystem with ordered data mode. Quota mode: none."),
)
# Quiet lines of a healthy boot (no event, no marker, no error line).
_QUIET = (
    "kvm-clock: using sched offset of {n} cycles",
    "clocksource: tsc: mask: 0xffffffffffffffff max_cycles: 0x{sector:x}, max_idle_ns: {lba} ns",
    "e820: update [mem 0x{sector:08x}-0x{lba:08x}] usable ==> reserved",
    "ACPI: Reserving FACP table memory at [mem 0x{n:x}-0x{m:x}]",
    'audit: type=1400 audit({n}.{q:03d}:{m}): apparmor="STATUS" operation="profile_load"',
    "IPv6: ADDRCONF(NETDEV_CHANGE): eth{q}: link becomes ready",
    "systemd[1]: Started Session {n} of User root.",
    "TCP: request_sock_TCP: Possible SYN flooding on port {m}. Sending cookies.",
)


def incident_log(lines: int, event_share: float = 0.1, quiet_s: float = 0.25) -> str:
    """A kernel log of ``lines`` lines (``dmesg`` form, ``[seconds] message``), about
    ``event_share`` of them lines of an incident (events and the markers that end them), the rest
    quiet, ``quiet_s`` seconds apart. Incidents go round the ``CONTROLLERS`` drives in turn."""
    out = []
    clock = 1.0
    incidents = 0
    step = 0  # 1 + the line of the current incident to write next; 0 between incidents
    owed = 0.0  # incident lines owed at this share
    for number in range(lines):
        values = _values(number, incidents)
        owed += event_share
        if step == 0 and owed >= len(_INCIDENT):  # an incident's lines come together
            owed -= len(_INCIDENT)
            step = 1
        if step:
            delay, message = _INCIDENT[step - 1]
            step = (step + 1) % (len(_INCIDENT) + 1)
            incidents += step == 0
        else:
            delay, message = quiet_s, _QUIET[number % len(_QUIET)]
        clock += delay
        out.append(f"[{clock:12.6f}] {message.format(**values)}\n")
    return "".join(out)


def _values(number: int, incident: int) -> dict[str, int]:
    controller = incident % CONTROLLERS
    return {
        "c": controller,
        "bus": 0x40 + controller,
        "n": (number * 7919) % 1024,
        "m": (number * 104729) % 1024,
        "q": number % 32 + 1,
        "lba": (number * 2654435761) % 2**31,
        "sector": (number * 40503) % 2**32,
    }


def events_log(events: int) -> str:
    """A log with about ``events`` kernel events, half its lines quiet: a node of a fleet
    after an incident."""
    per_incident = 8  # events among an incident's 11 lines (the others end them)
    return incident_log(2 * events * len(_INCIDENT) // per_incident, event_share=0.5)


if __name__ == "__main__":  # a sample, to look at: python3 scripts/incident_logs.py 40
    import sys

    count = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    sys.stdout.write(incident_log(count, event_share=0.5))
