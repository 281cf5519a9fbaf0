"""The probe registry: every source gdsdoctor reads, in one explicit list (no discovery magic)."""

from __future__ import annotations

from gdsdoctor.probes import (
    bench,
    cufile,
    dmesg,
    fs,
    gdscheck,
    gpu,
    lsblk,
    modules,
    mounts,
    nvidia_fs,
    nvme_cli,
    nvme_sysfs,
    pci,
    rdma,
    system,
)
from gdsdoctor.probes.base import ParseError, Probe, Source

PROBES: tuple[Probe, ...] = (
    modules.PROBE,
    mounts.PROBE,
    *system.PROBES,
    *dmesg.PROBES,
    *gdscheck.PROBES,
    *cufile.PROBES,
    *nvidia_fs.PROBES,
    *lsblk.PROBES,
    *nvme_cli.PROBES,
    *nvme_sysfs.PROBES,
    *fs.PROBES,
    *pci.PROBES,
    *gpu.PROBES,
    *rdma.PROBES,
    *bench.PROBES,
)

BY_SECTION: dict[str, Probe] = {probe.section: probe for probe in PROBES}

__all__ = ["BY_SECTION", "PROBES", "ParseError", "Probe", "Source"]
