"""Derived facts for the NVMe-oF tier's setup: boot mounts, failed mounts and the paths to each
subsystem (issue 23).

``derive(facts, derived)`` returns ``derived.fabrics`` (it reads ``derived.storage``):

- ``fstab_entries``: fstab's data entries (``fstab.data_entries``) with what sits under each
  (``transports``: the NVMe transports of the namespace its device names, ``fabrics``: true when
  one is NVMe-oF, null when the device cannot be tied to a controller: no controller listing, or
  a ``UUID=``/``LABEL=`` spec or ``/dev/disk/by-*`` link that no ``blkid`` output resolves);
  ``resolved_device``/``resolved_by`` ("blkid"): the device such a spec names.
- ``fstab_unmounted``: those entries whose mount point the mount table does not show (the
  mount failed or never ran: the mount point is then a bare directory of the filesystem
  below, usually ``/``), each with ``holds_path`` (--path lies under it; null without --path);
  [] unless both were read.
- ``fstab_fabrics_unordered``: entries on an NVMe-oF namespace without ``_netdev`` (systemd
  mounts them with the local filesystems, before the network and the connect);
  ``fstab_fabrics_fatal``: those without ``nofail`` (a target that is down stops the boot).
- ``mount_failures``: mount(8)'s failures of a pasted session (``cli_errors``), each with the
  options and type its command line or fstab entry gave: ``{mountpoint, holds_path, nofail,
  device, options, fstype, barrier_option, src}``; ``barrier_option``: the options hold
  ``barrier``/``nobarrier`` (XFS refuses them since 4.19).
- ``subsystems``: per NVMe-oF subsystem, from ``derived.storage.fabrics_controllers``:
  ``{name, transports, controllers, live, portals, live_portals, host_ifaces, src}``
  (``portals``: distinct ``traddr:trsvcid``; two controllers to one portal are no second path).
- ``single_portal``: subsystems whose live controllers all reach one portal (no failover when
  that port, its switch or the target controller behind it goes away).
- ``host_identity``: ``{hostnqn, hostid}`` of /etc/nvme (null when not read or absent),
  ``hostnqn_uuid`` (the UUID of a ``…:uuid:<uuid>`` host NQN, from which nvme-cli ≥ 2.7 derives a
  missing hostid; null for another form),
  ``files`` (each file's section status: ``ok``, ``missing``, …), ``connected_hostnqns`` and
  ``connected_hostids`` (what the live controllers were connected with: sysfs, list-subsys),
  ``mismatched`` (fabrics controllers connected with another host NQN than the file's).
- ``boot_targets``: what nvme-cli's connect-all (nvmf-autoconnect at boot) connects from: the
  lines of /etc/nvme/discovery.conf and the ports of /etc/nvme/config.json ``{transport, traddr,
  trsvcid, host_traddr, host_iface, source ("discovery.conf"|"config.json"), src}``;
  ``boot_uncovered``: live NVMe-oF controllers whose target address is in neither (they were
  connected by hand), [] unless both files were looked for (read, or absent) and one names a
  target. A discovery service on another address than the I/O ports would read as uncovered.
- ``local_fs_namespaces``: NVMe namespaces under a read-write data mount of a local (not
  cluster) filesystem, with their id (NGUID, else UUID, else WWID from sysfs):
  ``{mountpoint, fstype, namespace, id, fabrics, src}``. The same id on two nodes of a fleet
  is one namespace written by two kernels that do not know of each other (``gdsdoctor fleet``).
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.facts.derived import storage
from gdsdoctor.facts.derived.access import dicts, obj, ok_section

_BARRIER = ("barrier", "nobarrier")


def derive(facts: dict[str, Any], derived: dict[str, Any]) -> dict[str, Any]:
    entries = _fstab_entries(facts)
    fabrics_ctrls = dicts((derived.get("storage") or {}).get("fabrics_controllers"))
    subsystems = _subsystems(fabrics_ctrls)
    return {
        "fstab_entries": entries,
        "fstab_unmounted": _unmounted(facts, entries),
        "fstab_fabrics_unordered": [e for e in entries if e["fabrics"] and not e["netdev"]],
        "fstab_fabrics_fatal": [e for e in entries if e["fabrics"] and not e["nofail"]],
        "mount_failures": _mount_failures(facts, entries),
        "subsystems": subsystems,
        "single_portal": [s for s in subsystems if s["live"] and len(s["live_portals"]) == 1],
        "host_identity": _host_identity(facts, fabrics_ctrls),
        **_boot_connects(facts, fabrics_ctrls),
        "local_fs_namespaces": _local_fs_namespaces(facts, derived),
    }


def _fstab_entries(facts: dict[str, Any]) -> list[dict[str, Any]]:
    entries = dicts(ok_section(facts, "fstab").get("data_entries"))
    if not entries:
        return []
    context = storage.stack_context(facts)
    identities = _identities(facts)
    found = []
    for entry in entries:
        transports: list[str] = []
        device, by = _entry_device(entry, identities)
        if device:
            mount = {"device": device, "mountpoint": None, "fstype": entry.get("fstype")}
            view = context.stack_of(mount)
            transports = list(view.get("transports") or [])
        fabrics = any(t in storage.FABRICS for t in transports) if transports else None
        found.append({**entry, "transports": transports, "fabrics": fabrics, "resolved_device": device,
                      "resolved_by": by})  # fmt: skip
    return found


# fstab's identity specs and /dev/disk/by-* links, and the blkid field each names
_SPECS = {"UUID": "uuid", "LABEL": "label", "PARTUUID": "partuuid", "PARTLABEL": "partlabel"}
_BY_LINKS = {"/dev/disk/by-uuid/": "uuid", "/dev/disk/by-label/": "label",
             "/dev/disk/by-partuuid/": "partuuid", "/dev/disk/by-partlabel/": "partlabel"}  # fmt: skip


def _identities(facts: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(field, value) → the blkid device holding it (a UUID compared case-blind)."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for device in dicts(ok_section(facts, "blkid").get("devices")):
        for name in _SPECS.values():
            value = device.get(name)
            if isinstance(value, str) and value:
                found.setdefault((name, value.lower() if "uuid" in name else value), device)
    return found


def _entry_device(
    entry: dict[str, Any], identities: dict[tuple[str, str], dict[str, Any]]
) -> tuple[str | None, str | None]:
    """The device an fstab entry mounts: its own path, or the blkid device of its UUID=/LABEL=
    spec or /dev/disk/by-* link (None when blkid was not read or does not list it)."""
    spec = str(entry.get("spec") or "")
    key, sep, value = spec.partition("=")
    name = _SPECS.get(key.upper()) if sep else None
    if name is None:
        link = next((p for p in _BY_LINKS if spec.startswith(p)), None)
        name, value = (_BY_LINKS[link], spec[len(link) :]) if link else (None, "")
    if name is None:
        return (str(entry["device"]), None) if entry.get("device") else (None, None)
    value = value.strip('"')
    device = identities.get((name, value.lower() if "uuid" in name else value))
    return (str(device["device"]), "blkid") if device else (None, None)


def _unmounted(facts: dict[str, Any], entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    mounts = dicts(ok_section(facts, "mounts").get("mounts"))
    if not mounts or not entries:
        return []
    mounted = {str(m.get("mountpoint") or "").rstrip("/") or "/" for m in mounts}
    return [
        {**e, "holds_path": holds_path(facts, e.get("mountpoint"))}
        for e in entries
        if (str(e.get("mountpoint") or "").rstrip("/") or "/") not in mounted
    ]


def holds_path(facts: dict[str, Any], mountpoint: Any) -> bool | None:
    """Whether the checkpoint path (--path) lies under ``mountpoint``: what the job writes would
    land there once it is mounted; None without --path (every data mount may hold checkpoints)."""
    path = obj(facts.get("target")).get("path")
    if not path or not isinstance(mountpoint, str) or not mountpoint:
        return None
    point = mountpoint.rstrip("/") or "/"
    return str(path) == point or str(path).startswith(point if point == "/" else point + "/")


def _mount_failures(facts: dict[str, Any], entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    section = ok_section(facts, "cli_errors")
    commands = [c for c in dicts(section.get("commands")) if c.get("tool") == "mount"]
    failures = []
    for error in dicts(section.get("errors")):
        if error.get("tool") != "mount":
            continue
        point, device = error.get("mountpoint"), error.get("device")
        command = next(
            (c for c in reversed(commands) if c.get("mountpoint") == point or c.get("device") == device), None
        )
        entry = next((e for e in entries if e.get("mountpoint") == point or e.get("device") == device), None)
        options = [str(o) for o in (command or {}).get("options") or []]
        if entry and not options:  # `mount DIR` takes its options from fstab
            options = str(entry.get("options") or "").split(",")
        failures.append(
            {
                "mountpoint": point,
                "holds_path": holds_path(facts, point),
                "nofail": bool(entry and entry.get("nofail")),
                "device": device,
                "options": options,
                "fstype": (command or {}).get("fstype") or (entry or {}).get("fstype"),
                "barrier_option": any(o.split("=", 1)[0] in _BARRIER for o in options),
                "src": error.get("src"),
                "command_src": (command or {}).get("src"),  # the command line that gave the options
            }
        )
    return failures


def _subsystems(controllers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for controller in controllers:
        key = controller.get("subsystem") or controller.get("subsystem_nqn")
        if isinstance(key, str) and key:
            groups.setdefault(key, []).append(controller)
    found = []
    for name, members in sorted(groups.items()):
        live = [c for c in members if c.get("state") == "live"]
        found.append(
            {
                "name": name,
                "transports": sorted({str(c["transport"]) for c in members if c.get("transport")}),
                "controllers": [c.get("name") for c in members],
                "live": [c.get("name") for c in live],
                "portals": sorted({p for c in members if (p := _portal(c))}),
                "live_portals": sorted({p for c in live if (p := _portal(c))}),
                "host_ifaces": sorted({str(c["host_iface"]) for c in members if c.get("host_iface")}),
                "src": (live or members)[0].get("src"),
            }
        )
    return found


def _portal(controller: dict[str, Any]) -> str | None:
    traddr = controller.get("traddr")
    return f"{traddr}:{controller.get('trsvcid') or '?'}" if traddr else None


_LOCAL_FS = frozenset({"xfs", "ext4", "ext3", "ext2", "btrfs", "f2fs", "vfat", "exfat", "bcachefs"})


def _host_identity(facts: dict[str, Any], controllers: list[dict[str, Any]]) -> dict[str, Any]:
    hostnqn = ok_section(facts, "nvme_hostnqn").get("hostnqn")
    hostid = ok_section(facts, "nvme_hostid").get("hostid")
    sysfs = {c.get("name"): c for c in dicts(ok_section(facts, "nvme_sysfs").get("controllers"))}
    fabrics = [sysfs.get(c.get("name")) or c for c in controllers]
    cli_nqns = {s.get("host_nqn") for s in dicts(ok_section(facts, "nvme_subsys").get("subsystems"))}
    nqns = sorted({str(n) for n in [*(c.get("hostnqn") for c in fabrics), *cli_nqns] if n})
    ids = sorted({str(c["hostid"]).lower() for c in fabrics if c.get("hostid")})
    return {
        "hostnqn": hostnqn,
        "hostid": hostid,
        # nvme-cli 2.7 (libnvme 1.7, nvme_host_get_ids) takes a missing hostid from the host NQN's
        # uuid: form, so such a node connects with one stable identity without a hostid file
        "hostnqn_uuid": _uuid_of(hostnqn),
        "files": {name: _status(facts, f"nvme_{name}") for name in ("hostnqn", "hostid")},
        "connected_hostnqns": nqns,
        "connected_hostids": ids,
        "mismatched": [c for c in fabrics if hostnqn and c.get("hostnqn") and c.get("hostnqn") != hostnqn],
    }


def _uuid_of(hostnqn: Any) -> str | None:
    """The UUID of a ``nqn.2014-08.org.nvmexpress:uuid:<uuid>`` host NQN (libnvme's
    nvme_hostid_from_hostnqn: what follows ``uuid:``), else None."""
    if not isinstance(hostnqn, str) or "uuid:" not in hostnqn:
        return None
    value = hostnqn.split("uuid:", 1)[1].strip().lower()
    return value or None


_BOOT_FILES = (("nvme_discovery_conf", "discovery.conf"), ("nvme_config_json", "config.json"))
_TARGET_KEYS = ("transport", "traddr", "trsvcid", "host_traddr", "host_iface")


def _boot_connects(facts: dict[str, Any], controllers: list[dict[str, Any]]) -> dict[str, Any]:
    targets = [
        {**{key: entry.get(key) for key in _TARGET_KEYS}, "source": name, "src": entry.get("src")}
        for section, name in _BOOT_FILES
        for entry in dicts(ok_section(facts, section).get("entries"))
        if entry.get("traddr")
    ]
    looked = all(_status(facts, section) in ("ok", "missing") for section, _ in _BOOT_FILES)
    known = {str(t["traddr"]).lower() for t in targets}
    uncovered = [
        {"name": c.get("name"), "traddr": c.get("traddr"), "trsvcid": c.get("trsvcid"),
         "transport": c.get("transport"), "src": c.get("src")}
        for c in controllers
        if looked and known and c.get("state") == "live" and c.get("traddr")
        and str(c["traddr"]).lower() not in known
    ]  # fmt: skip
    return {"boot_targets": targets, "boot_uncovered": uncovered}


def _status(facts: dict[str, Any], section: str) -> str | None:
    value = facts.get(section)
    return value.get("status") if isinstance(value, dict) else None


def _local_fs_namespaces(facts: dict[str, Any], derived: dict[str, Any]) -> list[dict[str, Any]]:
    block = {b.get("name"): b for b in dicts(ok_section(facts, "nvme_sysfs").get("block"))}
    found = []
    for mount in dicts((derived.get("storage") or {}).get("checkpoint_mounts")):
        opts = mount.get("all_opts") or mount.get("opts") or {}
        if mount.get("fstype") not in _LOCAL_FS or (isinstance(opts, dict) and opts.get("ro")):
            continue
        controllers = dicts(mount.get("nvme_controllers"))
        for namespace in mount.get("nvme_namespaces") or []:
            ids = block.get(namespace) or {}
            ident = ids.get("nguid") or ids.get("uuid") or ids.get("wwid")
            if ident:
                found.append(
                    {
                        "mountpoint": mount.get("mountpoint"),
                        "fstype": mount.get("fstype"),
                        "namespace": namespace,
                        "id": ident,
                        "fabrics": any(c.get("fabrics") for c in controllers) if controllers else None,
                        "src": mount.get("src"),
                    }
                )
    return found
