"""The probe registry: every source gdsdoctor reads, in one explicit list (no discovery magic)."""

from __future__ import annotations

from gdsdoctor.errors import ParseError
from gdsdoctor.probes import (
    app_log,
    beegfs_layout,
    beegfs_quota,
    bench,
    blkid,
    cli_errors,
    cufile,
    dmesg,
    ext4_options,
    fs,
    fs_targets,
    fstab,
    gdscheck,
    gpfs,
    gpu,
    ip_addr,
    job_env,
    losetup,
    lsblk,
    lustre_path,
    meminfo,
    modules,
    mounts,
    nvidia_fs,
    nvme_cli,
    nvme_host,
    nvme_sysfs,
    path_stat,
    pci,
    rdma,
    roce_gids,
    system,
    target,
    udev,
    watch,
)
from gdsdoctor.probes.base import Probe, Source

PROBES: tuple[Probe, ...] = (
    modules.PROBE,
    mounts.PROBE,
    fstab.PROBE,
    *system.PROBES,
    *dmesg.PROBES,
    *gdscheck.PROBES,
    *cufile.PROBES,
    job_env.PROBE,
    *nvidia_fs.PROBES,
    *lsblk.PROBES,
    *blkid.PROBES,
    *losetup.PROBES,
    *nvme_cli.PROBES,
    *nvme_sysfs.PROBES,
    *nvme_host.PROBES,
    *fs.PROBES,
    *ext4_options.PROBES,
    *fs_targets.PROBES,
    beegfs_quota.PROBE,
    beegfs_layout.PROBE,
    gpfs.PROBE,
    *meminfo.PROBES,
    *pci.PROBES,
    *gpu.PROBES,
    *rdma.PROBES,
    *ip_addr.PROBES,
    *roce_gids.PROBES,
    *bench.PROBES,
    *app_log.PROBES,
    *cli_errors.PROBES,
    *udev.PROBES,
    *watch.PROBES,
)

# What an analysis parses: the probes above, and the checkpoint path's when one is named.
ANALYSED_PROBES: tuple[Probe, ...] = (*PROBES, target.PROBE, path_stat.PROBE, *lustre_path.PROBES)
BY_SECTION: dict[str, Probe] = {probe.section: probe for probe in ANALYSED_PROBES}

__all__ = ["ANALYSED_PROBES", "BY_SECTION", "PROBES", "ParseError", "Probe", "Source"]
