"""The node in a few words, for the top of a report (as ``nvidia-smi`` and ``gdscheck -p`` users
expect before any finding): its GPUs and driver, nvidia-fs and the GDS path, the NVMe drives and
NVMe-oF controllers, the checkpoint filesystem and its device, and virtualization.

Read from the facts the analysis already has; a value the facts do not show is None (shown as
"unknown"), never guessed: no GPU found and GPUs not looked for are different things.
"""

from __future__ import annotations

from typing import Any


def node_summary(facts: dict[str, Any]) -> dict[str, Any]:
    derived = facts.get("derived") or {}
    return {
        "gpus": _gpus(facts, derived),
        "gds": _gds(derived),
        "nvme": _nvme(facts, derived),
        "checkpoint_fs": _checkpoint_fs(derived),
        "virtualization": _virt(facts),
    }


def _ok(facts: dict[str, Any], name: str) -> dict[str, Any] | None:
    section = facts.get(name)
    return section if isinstance(section, dict) and section.get("status") == "ok" else None


def _gpus(facts: dict[str, Any], derived: dict[str, Any]) -> dict[str, Any] | None:
    smi = _ok(facts, "nvidia_smi")
    if smi:
        models = [str(g.get("product_name")) for g in smi.get("gpus") or [] if g.get("product_name")]
        count = len(smi.get("gpus") or []) or smi.get("attached_gpus")
        gpus = {"count": count, "models": sorted(set(models)), "driver": smi.get("driver_version")}
        failures = smi.get("failures") or []
        if failures:  # nvidia-smi's own words for what it could not show
            gpus["unreachable"] = str(failures[0].get("text"))[:200]
        return gpus
    counts = (derived.get("topology") or {}).get("counts") or {}
    if derived.get("nvidia_present") is False:
        return {"count": 0, "models": [], "driver": None}
    if counts.get("gpus"):
        return {"count": counts["gpus"], "models": [], "driver": None}
    return None


def _gds(derived: dict[str, Any]) -> dict[str, Any] | None:
    gds = derived.get("gds") or {}
    if not gds or (gds.get("nvidia_fs_loaded") is None and gds.get("path") is None):
        return None
    return {key: gds.get(key) for key in ("nvidia_fs_loaded", "nvidia_fs_version", "path")}


def _nvme(facts: dict[str, Any], derived: dict[str, Any]) -> dict[str, Any] | None:
    """Local (PCIe) controllers by name, from the PCI tree, sysfs and nvme-cli together (a drive
    seen by two sources counts once); NVMe-oF controllers from the derived storage view. A count
    is None when no source that would show it was read: "0" is only said when one was."""
    storage = derived.get("storage") or {}
    local: dict[str, str] = {}
    devices = [d for d in (derived.get("topology") or {}).get("devices") or [] if d.get("kind") == "nvme"]
    for number, device in enumerate(devices):
        local[str(device.get("name") or device.get("bdf") or number)] = str(
            device.get("model") or device.get("lspci_name") or ""
        )
    sysfs = _ok(facts, "nvme_sysfs") or {}
    subsys = _ok(facts, "nvme_subsys") or {}
    for controller in sysfs.get("controllers") or []:
        if isinstance(controller, dict) and controller.get("transport") == "pcie" and controller.get("name"):
            local[controller["name"]] = local.get(controller["name"]) or str(controller.get("model") or "")
    for path in subsys.get("paths") or []:
        if isinstance(path, dict) and path.get("transport") == "pcie" and path.get("name"):
            local.setdefault(path["name"], "")
    fabrics = storage.get("fabrics_controllers") or []
    read_local = bool(devices or sysfs or subsys or _ok(facts, "nvme_list") or _ok(facts, "lsblk"))
    if not read_local and storage.get("fabrics_present") is None:
        return None
    transports = sorted(
        {str(c.get("transport")) for c in fabrics if isinstance(c, dict) and c.get("transport")}
    )
    return {
        "local": len(local) if read_local else None,
        "models": sorted(set(local.values()) - {""}),
        "fabrics": len(fabrics) if storage.get("fabrics_present") is not None else None,
        "transports": transports,
    }


def _checkpoint_fs(derived: dict[str, Any]) -> dict[str, Any] | None:
    mount = derived.get("target_mount")
    if not isinstance(mount, dict) or not mount.get("mountpoint"):
        return None
    found = {key: mount.get(key) for key in ("mountpoint", "fstype", "device")}
    # what the header must say before anything: --path itself fails, or is not there
    failure, gone = derived.get("path_failure"), derived.get("path_missing")
    if isinstance(failure, dict):
        found["path"] = (
            "does not answer stat" if failure.get("hung") else f"fails stat with {failure.get('errno')}"
        )
    elif isinstance(gone, dict):
        found["path"] = f"does not exist: its nearest existing parent {gone.get('nearest')} is diagnosed"
    return found


def _virt(facts: dict[str, Any]) -> str | None:
    virt = _ok(facts, "virt")
    return str(virt["virt"]) if virt and virt.get("virt") else None


def summary_lines(node: dict[str, Any]) -> list[str]:
    """The summary as short lines: what a person reads before the findings."""
    gpus, gds, nvme, fs, virt = (
        node.get(k) for k in ("gpus", "gds", "nvme", "checkpoint_fs", "virtualization")
    )
    lines = []
    unreachable = f"nvidia-smi: {gpus['unreachable']}" if gpus and gpus.get("unreachable") else ""
    if gpus is None:
        lines.append("GPUs: unknown")
    elif not gpus["count"]:
        lines.append(f"GPUs: {unreachable or 'no NVIDIA GPU found'}")
    else:
        models = f" × {', '.join(gpus['models'])}" if gpus["models"] else ""
        driver = f", driver {gpus['driver']}" if gpus.get("driver") else ""
        lines.append(f"GPUs: {gpus['count']}{models}{driver}" + (f"; {unreachable}" if unreachable else ""))
    if gds is not None:
        loaded = {True: "loaded", False: "not loaded", None: "unknown"}[gds["nvidia_fs_loaded"]]
        version = f" {gds['nvidia_fs_version']}" if gds.get("nvidia_fs_version") else ""
        lines.append(f"GDS: nvidia-fs {loaded}{version}; mode {gds.get('path') or 'unknown'}")
    if nvme is not None:
        models = f" ({', '.join(nvme['models'])})" if nvme["models"] else ""
        local = "unknown" if nvme["local"] is None else str(nvme["local"])
        fabrics = "unknown" if nvme["fabrics"] is None else str(nvme["fabrics"])
        if nvme["transports"]:
            fabrics += f" ({', '.join(nvme['transports'])})"
        lines.append(f"NVMe: {local} local{models}; NVMe-oF controllers: {fabrics}")
    if fs is not None:
        where = f"{fs.get('fstype') or '?'} on {fs.get('device') or '?'}"
        said = f"; --path {fs['path']}" if fs.get("path") else ""
        lines.append(f"Checkpoint filesystem: {fs['mountpoint']} ({where}){said}")
    kind = {None: "unknown", "none": "none (bare metal)"}.get(virt, virt)
    lines.append(f"Virtualization: {kind}")
    return lines
