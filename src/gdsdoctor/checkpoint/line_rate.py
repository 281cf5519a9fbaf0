"""The line rate of a checkpoint path: its ceiling from PCIe generation × width per drive, drive
count and spec, NIC rate for NVMe-oF, and efficiencies (:func:`expected_throughput`); the
ceiling that fits each direction (:func:`ceilings`: a PCIe link is a *read* ceiling, a drive's
write rate comes from its measured baseline or write spec, an NVMe-oF namespace's from the NIC
line rate × goodput); and :func:`verdict`, which turns measured/expected into ok / degraded /
poor / suspect (thresholds below, from research/net-pci-notes.md §3.4).

Low in the tree: the facts (derived topology) and the ``bench`` command both use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gdsdoctor.errors import BenchError

PCIE_GT_PER_S = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
# Line encoding: 8b/10b up to Gen2, 128b/130b for Gen3-5, FLIT (242/256 payload) for Gen6 [verify].
PCIE_ENCODING = {1: 0.8, 2: 0.8, 3: 128 / 130, 4: 128 / 130, 5: 128 / 130, 6: 242 / 256}
PCIE_EFFICIENCY = 0.85  # TLP/DLLP overhead leaves ~85-90 % usable (net-pci-notes §3.1)
NETWORK_EFFICIENCY = 0.95  # IB/RoCE at MTU 4096; use 0.90 at MTU 1024/2048 (§3.4)

# Verdict thresholds on measured/expected (net-pci-notes §3.4, "calibrate with real runs").
OK_RATIO = 0.85  # ≥ this: ok
POOR_RATIO = 0.60  # < this: poor; in between: degraded
SUSPECT_RATIO = 1.05  # > this: faster than the path allows (page cache, zeros, wrong units)


def pcie_link_bytes_per_s(gen: int, width: int) -> float:
    """Raw per-direction PCIe bandwidth after line encoding (Gen4 x4 ≈ 7.88 GB/s)."""
    if gen not in PCIE_GT_PER_S:
        raise BenchError(f"unknown PCIe generation {gen} (1-6)")
    if width not in (1, 2, 4, 8, 16, 32):
        raise BenchError(f"PCIe width must be 1, 2, 4, 8, 16 or 32, not {width}")
    return PCIE_GT_PER_S[gen] * 1e9 / 8 * PCIE_ENCODING[gen] * width


@dataclass(frozen=True, slots=True)
class Expected:
    bytes_per_s: float
    limited_by: str  # "drives" or "network"
    components: dict[str, float]  # each component's ceiling in bytes/s


def expected_throughput(
    *,
    pcie_gen: int | None = None,
    pcie_width: int | None = None,
    drives: int = 1,
    drive_bytes_per_s: float | None = None,
    nic_gbit_s: float | None = None,
    nic_ports: int = 1,
    pcie_efficiency: float = PCIE_EFFICIENCY,
    network_efficiency: float = NETWORK_EFFICIENCY,
) -> Expected:
    """The path's ceiling.

    min(drives × min(PCIe link × efficiency, drive spec), NIC ports × rate × network efficiency).
    """
    if drives < 1 or nic_ports < 1:
        raise BenchError("drive and NIC port counts must be at least 1")
    if not (0 < pcie_efficiency <= 1 and 0 < network_efficiency <= 1):
        raise BenchError("efficiencies must be in (0, 1]")
    per_drive = []
    if pcie_gen is not None or pcie_width is not None:
        if pcie_gen is None or pcie_width is None:
            raise BenchError("give both PCIe generation and width")
        per_drive.append(pcie_link_bytes_per_s(pcie_gen, pcie_width) * pcie_efficiency)
    if drive_bytes_per_s is not None:
        if drive_bytes_per_s <= 0:
            raise BenchError("drive throughput must be positive")
        per_drive.append(drive_bytes_per_s)
    components: dict[str, float] = {}
    if per_drive:
        components["drives"] = drives * min(per_drive)
    if nic_gbit_s is not None:
        if nic_gbit_s <= 0:
            raise BenchError("NIC rate must be positive")
        components["network"] = nic_ports * nic_gbit_s * 1e9 / 8 * network_efficiency
    if not components:
        raise BenchError(
            "nothing to compute a line rate from: give PCIe gen/width, a drive spec or a NIC rate"
        )
    limited_by = min(components, key=components.__getitem__)
    return Expected(components[limited_by], limited_by, components)


@dataclass(frozen=True, slots=True)
class Ceiling:
    """What one direction can move: ``bytes_per_s`` (None: not known) and what it rests on."""

    bytes_per_s: float | None
    basis: str  # "link" | "write spec" | "baseline" | "network" | "none"
    label: str  # for the reader: "4 drives × PCIe link × 85 % (a read ceiling)"


def ceilings(
    *,
    link_bytes_per_s: float | None = None,
    drives: int = 1,
    write_bytes_per_s: float | None = None,
    write_basis: str = "write spec",
    nic_gbit_s: float | None = None,
) -> dict[str, Ceiling]:
    """The read and the write ceiling of a checkpoint path.

    ``link_bytes_per_s`` is the drives' PCIe links added up (before protocol efficiency).
    Local drives: read = links × 85 %; write = drives × the drive's write rate (its measured
    baseline or write spec), unknown without one: data-center NVMe writes sequentially at 40-70 % of
    its PCIe link (Gen4 x4 ≈ 7.9 GB/s, typical write specs 3.5-5 GB/s; vendor datasheets), so the
    link is no write ceiling. NVMe-oF (``nic_gbit_s``): the NIC line rate × GOODPUT (RoCE/IB framing
    and headers of a large streaming transfer) both ways, never above the local ceilings given."""
    read: Ceiling = Ceiling(None, "none", "no read ceiling known")
    write: Ceiling = Ceiling(None, "none", "no write ceiling known (no drive write spec or baseline)")
    if link_bytes_per_s:
        read = Ceiling(link_bytes_per_s * PCIE_EFFICIENCY, "link",
                       f"{drives} drive(s) × PCIe link × {PCIE_EFFICIENCY:.0%} (a read ceiling)")  # fmt: skip
    if write_bytes_per_s:
        write = Ceiling(
            drives * write_bytes_per_s, write_basis, f"{drives} drive(s) × the drive's {write_basis}"
        )
    if nic_gbit_s:
        from gdsdoctor.checkpoint.units import GOODPUT  # one goodput factor for estimate and line rates

        network = nic_gbit_s * 1e9 / 8 * GOODPUT
        label = f"NIC line rate {nic_gbit_s:g} Gb/s × {GOODPUT:g} goodput"
        read = (
            Ceiling(network, "network", label) if not read.bytes_per_s or network < read.bytes_per_s else read
        )
        write = (
            Ceiling(network, "network", label)
            if not write.bytes_per_s or network < write.bytes_per_s
            else write
        )
    return {"read": read, "write": write}


@dataclass(frozen=True, slots=True)
class Verdict:
    level: Literal["ok", "degraded", "poor", "suspect"]
    ratio: float
    reason: str


def verdict(measured_bytes_per_s: float, expected_bytes_per_s: float) -> Verdict:
    """ok ≥ 85 % of the ceiling; degraded 60-85 %; poor < 60 %; suspect > 105 % (cache, zeros, units)."""
    if expected_bytes_per_s <= 0 or measured_bytes_per_s < 0:
        raise BenchError("measured and expected throughput must be positive")
    ratio = measured_bytes_per_s / expected_bytes_per_s
    if ratio > SUSPECT_RATIO:
        return Verdict(
            "suspect", ratio, "faster than the path allows: page cache, compressible data, or wrong units"
        )
    if ratio >= OK_RATIO:
        return Verdict("ok", ratio, f"at least {OK_RATIO:.0%} of the expected line rate")
    if ratio >= POOR_RATIO:
        return Verdict(
            "degraded", ratio, f"between {POOR_RATIO:.0%} and {OK_RATIO:.0%} of the expected line rate"
        )
    return Verdict("poor", ratio, f"below {POOR_RATIO:.0%} of the expected line rate")
