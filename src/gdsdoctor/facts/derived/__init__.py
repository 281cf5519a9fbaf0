"""Derived facts: computed once in Python before the rules run, so that rules stay declarative.

``derive`` writes ``facts["derived"]``: the node-wide facts at its top (``core``:
``nvidia_present``, ``undecided``, ``target_mount``, ``path_focus``, ``checkpoint_stall``)
and one key per concern, each written by its own module, which documents its keys:

- ``derived.path_failure``, ``derived.path_missing`` (checkpoint_path.py): the ``--path`` that
  fails (EIO, ESTALE, ENOTCONN, a hang) on its mount and device, or does not exist;
- ``derived.gds`` (gds.py): the data path GDS can take, the cuFile configuration in effect,
  the GPUs it can use;
- ``derived.gates`` (gates.py): libcufile and kernel behaviour that changed at a known release,
  judged against the version the facts hold (or the assumption each gate names);
- ``derived.storage`` (storage.py): what sits under each checkpoint mount, NVMe-oF, free
  space, the kernel log sorted for storage;
- ``derived.fabrics`` (fabrics.py): the NVMe-oF tier's boot mounts (fstab), failed mounts of a
  pasted session, and the paths (portals, host interfaces) to each subsystem;
- ``derived.fabrics_locality`` (fabrics_locality.py): which NIC carries each NVMe-oF controller
  and where it sits against each GPU (the topology model's GPU × NIC pairs);
- ``derived.fabrics_teardown`` (fabrics_teardown.py): NVMe-oF controllers torn down after their
  network was gone (a disconnect or a shutdown without a route: the host's shutdown order);
- ``derived.roce_gids`` (roce_gids.py): the GID a configured index or an NVMe-oF RDMA source
  address names, against its RoCE version;
- ``derived.topology`` (topology.py): PCIe placement, links, AER/ACS/IOMMU, RDMA ports,
  throughput against line rate;
- ``derived.udev`` (udev.py): the device-mapper, md or loop layer under each checkpoint mount;
- ``derived.checkpoint_host`` (host_memory.py): whether the node can stage its shard of an
  asynchronous checkpoint in its available and lockable memory (null without a job);
- ``derived.nvme_thermal`` (nvme_thermal.py): each NVMe drive's temperature against its own
  WCTEMP/CCTEMP, with its throttling history;
- ``derived.netfs`` (netfs.py): the network and parallel filesystem servers the kernel log says a
  client lost, with the mounts they serve;
- ``derived.intent`` (intent.py): what the node is meant to use (GDS, NVMe-oF, RDMA for
  storage), from the evidence or the site config's ``node:``; the engine reads it for ``uses:``;
- ``derived.device_stacks`` (device_stacks.py): which block devices are one stack (a loop
  device and the filesystem its image is on, a namespace and its controller), for ranking;
- ``derived.checkpoint_errors`` (job_errors.py): the job's ENOSPC/EDQUOT/EIO errors placed on
  the checkpoint path, /dev/shm, /tmp, a data loader, elsewhere;
- ``derived.checkpoint_saves`` (job_saves.py): the job's saves as its log times them, against the
  process group's timeout and the stall budget;
- ``derived.error_lines`` (error_lines.py): the input lines that are errors of the storage path
  now (the report lists those no fired cause cites as unexplained);
- ``derived.devices`` (devices.py): each device a kernel message names judged by what it is and
  what it holds (its role and the severity its failures deserve), degraded links by role.

Names of the previous release (``derived.storage_free``) still work in rule expressions:
``aliases.py`` maps them to these.
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.facts.derived import (
    checkpoint_path,
    core,
    device_stacks,
    devices,
    error_lines,
    fabrics,
    fabrics_locality,
    fabrics_teardown,
    gates,
    gds,
    host_memory,
    intent,
    job_errors,
    job_saves,
    netfs,
    nvme_thermal,
    roce_gids,
    storage,
    topology,
    udev,
)


def derive(
    facts: dict[str, Any],
    target_path: str | None,
    stated: dict[str, Any] | None = None,
    known_intent: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The derived facts; ``stated``: the site config's ``node:`` (what the node is meant to use);
    ``known_intent``: ``derived.intent`` already derived (the history pass's, the node's now)."""
    derived = core.derive(facts, target_path)
    derived["path_failure"] = checkpoint_path.failure(facts, derived["target_mount"])
    derived["path_missing"] = checkpoint_path.missing(facts, derived["target_mount"])
    # In order: each concern sees the facts and the concerns before it (udev reads storage's mounts).
    derived["gds"] = gds.derive(facts, derived)
    derived["gates"] = gates.derive(facts, derived)
    derived["storage"] = storage.derive(facts, core.checkpoint_selection(facts, derived["target_mount"]))
    derived["fabrics"] = fabrics.derive(facts, derived)  # reads storage's NVMe-oF controllers
    derived["topology"] = topology.derive(facts, derived)
    derived["fabrics_locality"] = fabrics_locality.derive(facts, derived)  # storage's NVMe-oF x topology
    derived["roce_gids"] = roce_gids.derive(facts, derived)  # reads fabrics_locality's controllers
    derived["udev"] = udev.derive(facts, derived)
    derived["devices"] = devices.derive(facts, derived)  # judges what storage and topology found
    derived["device_stacks"] = device_stacks.derive(facts)
    derived["path_focus"] = core.path_focus(facts, derived)
    derived["checkpoint_host"] = host_memory.derive(facts)
    derived["nvme_thermal"] = nvme_thermal.derive(facts)
    derived["netfs"] = netfs.derive(facts)
    derived["fabrics_teardown"] = fabrics_teardown.derive(facts)
    # reads gds, storage and fabrics
    derived["intent"] = intent.derive(facts, derived, stated) if known_intent is None else known_intent
    derived["checkpoint_errors"] = job_errors.derive(facts, target_path)
    derived["checkpoint_saves"] = job_saves.derive(facts)
    derived["error_lines"] = error_lines.derive(facts, derived)  # reads devices' hung tasks
    return derived
