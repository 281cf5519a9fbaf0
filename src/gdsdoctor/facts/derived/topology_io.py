"""The IOMMU, the RDMA network and measured throughput, judged against the PCIe topology: the
``iommu``, ``arch``, ``roce_ports``, ``rdma_slow_ports``, ``roce_qos``, ``nic_pcie_bottleneck``,
``expected_throughput``, ``throughput`` and ``gds_vs_cpu`` keys of ``derived.topology`` (see
topology.py, which documents them and writes them)."""

from __future__ import annotations

from typing import Any

from gdsdoctor.facts.derived.access import items, num, obj, ok_section, strs, txt
from gdsdoctor.facts.derived.core import checkpoint_selection

GEN_BY_SPEED = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
GDS_SLOWER_RATIO = 0.9
DEFAULT_RDMA_DSCP = 26  # NVIDIA's RoCE default (priority 3)


def smaller(a: Any, b: Any) -> Any:
    known = [v for v in (a, b) if isinstance(v, int | float) and v > 0]
    return min(known) if known else None


# --- IOMMU ----------------------------------------------------------------------------------------


def iommu_state(facts: dict[str, Any]) -> dict[str, Any]:
    """The IOMMU mode from runtime evidence first (groups, kernel log), then gdscheck, then the cmdline."""
    votes = iommu_group_votes(facts) + dmesg_votes(facts) + gdscheck_votes(facts) + cmdline_votes(facts)
    mode = None
    for source in ("iommu_groups", "dmesg", "gdscheck", "cmdline"):
        modes = [v["mode"] for v in votes if v["source"] == source]
        if modes:
            mode = modes[-1]
            break
    if mode == "enabled":  # gdscheck only says on/off; passthrough comes from the cmdline
        mode = "passthrough" if any(v["mode"] == "passthrough" for v in votes) else "translated"
    return {"mode": mode, "votes": votes}


def vote(source: str, mode: str, says: str, src: Any) -> dict[str, Any]:
    return {"source": source, "mode": mode, "says": says, "src": src}


def iommu_group_votes(facts: dict[str, Any]) -> list[dict[str, Any]]:
    groups = ok_section(facts, "iommu_groups")
    if not groups:
        return []
    if not groups.get("present"):
        return [vote("iommu_groups", "disabled", "no IOMMU groups in /sys/kernel/iommu_groups", None)]
    types = [g for g in items(groups, "groups") if txt(g.get("type"))]
    translated = [g for g in types if g["type"] in ("DMA", "DMA-FQ")]
    if translated:
        return [vote("iommu_groups", "translated", f"{len(translated)} IOMMU groups translate DMA "
                     f"(type {translated[0]['type']})", translated[0].get("src"))]  # fmt: skip
    if types and all(g["type"] == "identity" for g in types):
        return [
            vote(
                "iommu_groups",
                "passthrough",
                "every IOMMU group is identity (passthrough)",
                types[0].get("src"),
            )
        ]
    return [vote("iommu_groups", "enabled", f"{groups.get('count')} IOMMU groups exist", None)]


def dmesg_votes(facts: dict[str, Any]) -> list[dict[str, Any]]:
    """The default domain type counts only where the log also shows an IOMMU driver at work: the kernel
    prints "Default domain type: Translated" on machines with no IOMMU at all (VMs without a vIOMMU)."""
    dmesg = ok_section(facts, "dmesg")
    events = [
        e for e in items(dmesg, "events") if e.get("kind") == "iommu_info" and e.get("current_boot", True)
    ]
    driver = [e for e in events if not set(obj(e.get("details"))) & {"domain_type", "policy"}]
    found = []
    for event in events if driver else []:
        domain = txt(obj(event.get("details")).get("domain_type"))
        if domain:
            mode = "passthrough" if str(domain).lower().startswith("pass") else "translated"
            found.append(vote("dmesg", mode, f"kernel: default domain type {domain}", event.get("src")))
    if not driver and dmesg.get("kernel_release"):
        src = events[0].get("src") if events else None
        found.append(vote("dmesg", "disabled", "the kernel log from boot shows no IOMMU driver", src))
    return found


def gdscheck_votes(facts: dict[str, Any]) -> list[dict[str, Any]]:
    gdscheck = ok_section(facts, "gdscheck")
    platform = obj(gdscheck.get("platform"))
    enabled = platform.get("iommu_enabled")
    if enabled is None:
        per_gpu = [
            g.get("iommu_enabled") for g in items(gdscheck, "gpus") if g.get("iommu_enabled") is not None
        ]
        enabled = any(per_gpu) if per_gpu else None
    if enabled is None:
        return []
    src = (platform.get("src") or {}).get("iommu_enabled") if isinstance(platform.get("src"), dict) else None
    return [
        vote(
            "gdscheck",
            "enabled" if enabled else "disabled",
            f"gdscheck: IOMMU {'enabled' if enabled else 'disabled'}",
            src,
        )
    ]


def cmdline_votes(facts: dict[str, Any]) -> list[dict[str, Any]]:
    cmdline = ok_section(facts, "cmdline")
    iommu = obj(cmdline.get("iommu"))
    src = cmdline.get("src")
    said = {k: str(v).lower() for k, v in iommu.items() if isinstance(v, str | bool) and k in
            ("intel_iommu", "amd_iommu", "iommu", "iommu_passthrough")}  # fmt: skip
    if "off" in (said.get("intel_iommu"), said.get("amd_iommu"), said.get("iommu")):
        return [vote("cmdline", "disabled", "kernel command line turns the IOMMU off", src)]
    if said.get("iommu") == "pt" or said.get("iommu_passthrough") in ("1", "on", "y"):
        return [
            vote("cmdline", "passthrough", "kernel command line asks for IOMMU passthrough (iommu=pt)", src)
        ]
    if said.get("intel_iommu", "").startswith("on") or said.get("iommu") in ("nopt", "force"):
        return [
            vote("cmdline", "translated", "kernel command line turns the IOMMU on without passthrough", src)
        ]
    return []


def arch(facts: dict[str, Any]) -> str | None:
    machine = txt(ok_section(facts, "kernel").get("machine"))
    if machine:
        return str(machine)
    gdscheck = ok_section(facts, "gdscheck")
    found = txt(obj(gdscheck.get("platform")).get("arch")) or txt(obj(gdscheck.get("header")).get("arch"))
    return str(found).split("(")[0] if found else None


# --- RDMA / RoCE ----------------------------------------------------------------------------------


def roce_ports(facts: dict[str, Any]) -> list[dict[str, Any]]:
    netdevs = {txt(n.get("name")): n for n in items(ok_section(facts, "netdev"), "interfaces")}
    found = []
    for port in items(ok_section(facts, "infiniband"), "ports"):
        if not port.get("active") or port.get("link_layer") != "Ethernet":
            continue
        names = [n for n in strs(port.get("netdevs")) if n in netdevs]
        mtu = num(netdevs[names[0]].get("mtu")) if names else None
        active_mtu = num(port.get("active_mtu"))
        low = (isinstance(active_mtu, int) and active_mtu < 4096) or (isinstance(mtu, int) and mtu < 4200)
        found.append(
            {"device": port.get("device"), "port": port.get("port"), "active_mtu": active_mtu,
             "netdev": names[0] if names else None, "netdev_mtu": mtu, "mtu_low": bool(low),
             "src": port.get("src")}
        )  # fmt: skip
    return found


def rdma_slow_ports(facts: dict[str, Any]) -> list[dict[str, Any]]:
    """Active ports running slower than the fastest active port of the same adapter model."""
    infiniband = ok_section(facts, "infiniband")
    model = {
        txt(d.get("name")): txt(d.get("hca_type")) or txt(d.get("board_id"))
        for d in items(infiniband, "devices")
    }
    active = [
        p
        for p in items(infiniband, "ports")
        if p.get("active") is True and num(p.get("rate_gbps")) is not None
    ]
    fastest: dict[Any, float] = {}
    for port in active:
        key = (model.get(txt(port.get("device"))), txt(port.get("link_layer")))
        fastest[key] = max(fastest.get(key, 0.0), float(port["rate_gbps"]))
    slow = []
    for port in active:
        best = fastest[(model.get(txt(port.get("device"))), txt(port.get("link_layer")))]
        if port["rate_gbps"] < best:
            slow.append({"device": port.get("device"), "port": port.get("port"),
                         "rate_gbps": port["rate_gbps"],
                         "expected_gbps": best, "src": port.get("src")})  # fmt: skip
    return slow


def nic_pcie_bottleneck(facts: dict[str, Any], devices: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """NICs whose PCIe link carries less than their active network port (a 400 Gb/s port on Gen4 x16)."""
    rates: dict[str, float] = {}
    for port in items(ok_section(facts, "infiniband"), "ports"):
        if port.get("active") is True and num(port.get("rate_gbps")) is not None:
            rates[str(port.get("device"))] = max(
                rates.get(str(port.get("device")), 0.0), float(port["rate_gbps"])
            )
    found = []
    if rates:
        from gdsdoctor.checkpoint.line_rate import (  # start-up time: only if needed
            NETWORK_EFFICIENCY,
            expected_throughput,
        )
    for nic in (d for d in devices.values() if d["kind"] == "nic" and d["name"] in rates):
        gen, width = GEN_BY_SPEED.get(nic["link"]["speed_gts"]), nic["link"]["width"]
        if gen is None or not width:
            continue
        pcie_gbps = expected_throughput(pcie_gen=gen, pcie_width=width).bytes_per_s * 8 / 1e9
        port_gbps = rates[nic["name"]]
        if pcie_gbps < port_gbps * NETWORK_EFFICIENCY:
            found.append({"device": nic["name"], "bdf": nic["bdf"], "port_gbps": port_gbps,
                          "pcie_gbps": round(pcie_gbps, 1),
                          "link": f"{nic['link']['speed_gts']:g} GT/s x{width}",
                          "src": nic.get("link_src") or nic["src"]})  # fmt: skip
    return found


def roce_qos(facts: dict[str, Any]) -> dict[str, Any] | None:
    qos = ok_section(facts, "mlnx_qos")
    if not qos:
        return None
    tclass = num(qos.get("rdma_tclass"))
    dscp = int(tclass) >> 2 if tclass is not None and tclass >= 0 else DEFAULT_RDMA_DSCP
    priority = None
    if qos.get("trust") == "dscp":
        mapping = obj(qos.get("dscp2prio"))
        priority = next(
            (int(p) for p, codes in mapping.items() if isinstance(codes, list) and dscp in codes), None
        )
        priority = dscp >> 3 if priority is None and not mapping else priority
    pfc = qos.get("pfc_enabled_priorities")
    ecn = qos.get("ecn_rp_enabled_priorities")
    pfc = [p for p in pfc if num(p) is not None] if isinstance(pfc, list) else None
    ecn = [p for p in ecn if num(p) is not None] if isinstance(ecn, list) else None
    return {
        "trust": txt(qos.get("trust")),
        "rdma_dscp": dscp,
        "rdma_dscp_assumed": tclass is None or tclass < 0,
        "rdma_priority": priority,
        "pfc_priorities": pfc,
        "pfc_on_rdma_priority": (priority in pfc) if isinstance(pfc, list) and priority is not None else None,
        "ecn_on_rdma_priority": (priority in ecn) if isinstance(ecn, list) and priority is not None else None,
        "pfc_vector": pfc_vector(priority, pfc),
        "src": qos.get("src"),
    }


def pfc_vector(priority: int | None, enabled: list[Any] | None) -> str | None:
    """``mlnx_qos --pfc`` for the priorities enabled now plus the RDMA one (8 values, one per
    priority): a vector with only the RDMA priority would switch PFC off on the others."""
    if priority is None or enabled is None or not 0 <= priority <= 7:
        return None
    on = {int(p) for p in enabled if num(p) is not None} | {priority}
    return ",".join("1" if p in on else "0" for p in range(8))


# --- throughput -----------------------------------------------------------------------------------


def throughput(facts: dict[str, Any], derived: dict[str, Any], devices: dict[str, dict[str, Any]]) -> dict:
    expected = expected_rate(facts, derived, devices)
    judged = [judge(item, expected) for item in measurements(facts)] if expected else []
    return {"expected_throughput": expected, "throughput": [j for j in judged if j]}


def judge(item: dict[str, Any], expected: dict[str, Any]) -> dict[str, Any] | None:
    """A measurement against the ceiling of its direction. A write with no write ceiling is judged
    only for being faster than the read ceiling allows (``suspect``): below the link it says
    nothing, a healthy drive writes at 40-70 % of it (``level: unjudged``)."""
    from gdsdoctor.checkpoint.line_rate import SUSPECT_RATIO, verdict  # start-up time: only when judging

    direction = "write" if "write" in str(item["what"]).lower() else "read"
    ceiling, read = expected[direction], expected["read"]
    if ceiling["bytes_per_s"]:
        found = verdict(item["measured_bytes_per_s"], ceiling["bytes_per_s"])
        level, ratio, used = found.level, found.ratio, ceiling
    elif read["bytes_per_s"]:
        ratio = item["measured_bytes_per_s"] / read["bytes_per_s"]
        level, used = ("suspect" if ratio > SUSPECT_RATIO else "unjudged"), read
    else:
        return None
    return {**item, "direction": direction, "expected_bytes_per_s": used["bytes_per_s"],
            "ceiling": used["label"], "ceiling_basis": used["basis"], "ratio": round(ratio, 3),
            "level": level}  # fmt: skip


def expected_rate(
    facts: dict[str, Any], derived: dict[str, Any], devices: dict[str, dict[str, Any]]
) -> dict[str, Any] | None:
    """The read and write ceilings of the checkpoint path: the local NVMe drives under the
    checkpoint mount (PCIe links: a read ceiling), and for an NVMe-oF namespace the NIC's line
    rate × goodput (line_rate.ceilings)."""
    mounts = [
        m
        for m in [derived.get("target_mount"), *checkpoint_selection(facts, derived.get("target_mount"))]
        if isinstance(m, dict)
    ]
    points = {txt(m.get("mountpoint")) for m in mounts} - {None}
    drives = [d for d in devices.values() if d["kind"] == "nvme"
              and any(p in points for ns in d["namespaces"] for p in ns["mountpoints"])]  # fmt: skip
    links = [(GEN_BY_SPEED.get(rated(d, devices, "speed_gts")), rated(d, devices, "width")) for d in drives]
    nic = fabrics_nic_gbit_s(facts, derived, points)
    if (not drives or any(gen is None or not width for gen, width in links)) and not nic:
        return None
    from gdsdoctor.checkpoint.line_rate import (  # start-up time: only with drives
        BenchError,
        ceilings,
        pcie_link_bytes_per_s,
    )

    try:
        link = (
            sum(pcie_link_bytes_per_s(gen, width) for gen, width in links) if drives and nic is None else None
        )
    except BenchError:
        link = None
    if link is None and nic is None:
        return None
    found = ceilings(link_bytes_per_s=link, drives=max(len(drives), 1), nic_gbit_s=nic)
    read, write = found["read"], found["write"]
    limited_by = "network" if read.basis == "network" else "drives"
    return {"bytes_per_s": read.bytes_per_s, "limited_by": limited_by, "drives": [d["name"] for d in drives],
            "components": {limited_by: read.bytes_per_s},
            "read": _ceiling(read), "write": _ceiling(write)}  # fmt: skip


def _ceiling(found: Any) -> dict[str, Any]:
    return {"bytes_per_s": found.bytes_per_s, "basis": found.basis, "label": found.label}


def fabrics_nic_gbit_s(facts: dict[str, Any], derived: dict[str, Any], points: set[Any]) -> float | None:
    """The line rate of the NIC carrying an NVMe-oF checkpoint namespace: the fastest active RDMA
    port for RDMA, the fastest netdev that is up for TCP (which NIC carries which controller is not
    read here: the fastest one is the ceiling)."""
    transports = {
        str(t)
        for m in items(obj(derived.get("storage")), "checkpoint_mounts")
        if m.get("mountpoint") in points
        for t in strs(m.get("transports"))
    }
    rates: list[float] = []
    if "rdma" in transports:
        rates = [float(p["rate_gbps"]) for p in items(ok_section(facts, "infiniband"), "ports")
                 if p.get("active") is True and num(p.get("rate_gbps"))]  # fmt: skip
    if "tcp" in transports and not rates:
        rates = [float(n["speed_mbps"]) / 1000 for n in items(ok_section(facts, "netdev"), "interfaces")
                 if n.get("operstate") == "up" and num(n.get("speed_mbps"))]  # fmt: skip
    return max(rates) if rates else None


def best_gdsio_runs(facts: dict[str, Any]) -> list[dict[str, Any]]:
    """The fastest run per I/O type × transfer type (runs without both are fragments, left out)."""
    best: dict[tuple[Any, Any], dict[str, Any]] = {}
    for run in items(ok_section(facts, "gdsio"), "runs"):
        rate = num(run.get("throughput_bytes_per_s"))
        if txt(run.get("io_type")) is None or txt(run.get("xfer_type")) is None or rate is None:
            continue
        key = (run["io_type"], run["xfer_type"])
        if key not in best or rate > best[key]["throughput_bytes_per_s"]:
            best[key] = run
    return list(best.values())


def rated(found: dict[str, Any], devices: dict[str, dict[str, Any]], key: str) -> Any:
    """What the drive's link should run at (the most both ends support), else what it runs at."""
    parent = devices.get(found["upstream"][-1]) if found["upstream"] else None
    best = smaller(found["link"][f"max_{key}"], parent["link"][f"max_{key}"] if parent else None)
    return best or found["link"][key]


def measurements(facts: dict[str, Any]) -> list[dict[str, Any]]:
    found = [
        {"tool": "gdsio", "what": f"{run['io_type']} {run['xfer_type']}",
         "measured_bytes_per_s": run["throughput_bytes_per_s"], "src": run.get("src")}
        for run in best_gdsio_runs(facts)
        if run["throughput_bytes_per_s"] > 0
    ]  # fmt: skip
    fio = ok_section(facts, "fio")
    aggregate = obj(fio.get("aggregate"))
    jobs = items(fio, "jobs")
    for direction in ("read", "write"):
        rate = aggregate.get(f"{direction}_bytes_per_s")
        if isinstance(rate, int | float) and rate > 0:
            found.append({"tool": "fio", "what": direction, "measured_bytes_per_s": rate,
                          "src": jobs[0].get("src") if jobs else None})  # fmt: skip
    return found


GDS_XFER = ("GPUD", "GPUD_ASYNC", "GPU_BATCH")


def gds_vs_cpu(facts: dict[str, Any]) -> list[dict[str, Any]]:
    """GDS (gdsio GPUD, fio libcufile) slower than the CPU path of the same benchmark."""
    slower = []
    best = best_gdsio_runs(facts)
    for gds in (run for run in best if run["xfer_type"] in GDS_XFER):
        for cpu in (
            run for run in best if run["xfer_type"] == "CPU_GPU" and run["io_type"] == gds["io_type"]
        ):
            slower += compare("gdsio", gds["io_type"], gds["throughput_bytes_per_s"],
                              cpu["throughput_bytes_per_s"], gds.get("src"))  # fmt: skip
    jobs = items(ok_section(facts, "fio"), "jobs")
    for direction in ("read", "write"):
        gds = [rate_of(j, direction) for j in jobs if j.get("gds")]
        cpu = [rate_of(j, direction) for j in jobs if not j.get("gds")]
        src = next((j.get("src") for j in jobs if j.get("gds")), None)
        if max(gds, default=0) > 0 and max(cpu, default=0) > 0:
            slower += compare("fio", direction, max(gds), max(cpu), src)
    return slower


def rate_of(job: dict[str, Any], direction: str) -> float:
    value = obj(job.get(direction)).get("bytes_per_s")
    return float(value) if isinstance(value, int | float) else 0.0


def compare(tool: str, io_type: Any, gds_rate: float, cpu_rate: float, src: Any) -> list[dict[str, Any]]:
    ratio = gds_rate / cpu_rate if cpu_rate > 0 else 1.0
    if ratio >= GDS_SLOWER_RATIO:
        return []
    return [{"tool": tool, "io_type": io_type, "gds_bytes_per_s": gds_rate, "cpu_bytes_per_s": cpu_rate,
             "ratio": round(ratio, 3), "src": src}]  # fmt: skip
