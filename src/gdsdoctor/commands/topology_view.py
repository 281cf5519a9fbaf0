"""`gdsdoctor topo`: the PCIe/NUMA layout of GPUs, NVMe drives and NICs, drawn from the facts.

What engineers otherwise piece together from ``nvidia-smi topo -m``, ``lspci -tv`` and sysfs:
NUMA nodes → root complexes → root ports → switches → GPUs, NVMe drives (namespaces, mounts) and
NICs, with link speed/width, each GPU's nearest drive and NIC, and the misplacements flagged
(across sockets, through the root complex, degraded links, ACS redirect on a bridge on the path,
a translating IOMMU). A model is built first (``build``), then drawn as a rich tree, plain text,
markdown or JSON; every string that came from the host is escaped before it reaches a screen.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gdsdoctor.capture.live import capture_live
from gdsdoctor.errors import UserError
from gdsdoctor.facts.derived.topology import RANK
from gdsdoctor.pipeline import analyze_capture, load_inputs
from gdsdoctor.probes import BY_SECTION
from gdsdoctor.report.escape import markdown_code_block, markdown_inline, one_line
from gdsdoctor.textwidth import status_lines, terminal_width, wrap

TOPOLOGY_SECTIONS = (
    "pci", "lspci", "lspci_tree", "nvidia_topo", "nvidia_smi", "iommu_groups", "numa", "nvme_sysfs",
    "lsblk", "mounts", "infiniband", "netdev", "cmdline", "dmesg", "gdscheck", "kernel",
)  # fmt: skip
# What topo draws from, for the line that says an input had nothing of it.
DRAWN_FROM = "sysfs, lspci -tv, lspci -vvv, nvidia-smi topo -m, nvidia-smi -q or the NVMe sysfs tree"
# The causes about placement and links: topo's exit code is the worst of those that fired, with
# the monitoring-plugin codes every diagnosing command uses (0 OK, 1 WARNING, 2 CRITICAL).
TOPOLOGY_CATEGORIES = ("pcie-link", "pcie-p2p", "numa", "platform-iommu")
EXIT_CODES = {"OK": 0, "WARNING": 1, "CRITICAL": 2}
KIND_NAMES = {"gpu": "GPU", "nvme": "NVMe", "nic": "NIC"}
WORDS = {"switch": "same PCIe switch", "root_port": "same root port",
         "root_complex": "through the root complex", "cross_root_complex": "across host bridges",
         "cross_socket": "across CPU sockets"}  # fmt: skip


@dataclass(slots=True)
class Node:
    label: str
    details: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)  # problems, highlighted
    children: list[Node] = field(default_factory=list)
    # host, socket, root_complex, root_port, switch, switch_port, gpu, nvme, nic, namespace: what a
    # picture draws it as (report/svg_topology.py)
    kind: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "kind": self.kind, "details": self.details, "flags": self.flags,
                "children": [c.to_dict() for c in self.children]}  # fmt: skip


@dataclass(slots=True)
class Topology:
    source: str | None
    root: Node
    gpus: list[dict[str, Any]]
    problems: list[str]
    # {status, exit_code, causes}: the topology causes that fired (set by topology_of).
    verdict: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "tree": self.root.to_dict(),
            "gpus": self.gpus,
            "problems": self.problems,
            "summary": self.verdict,
        }


# --- model ----------------------------------------------------------------------------------------


def build(facts: dict[str, Any]) -> Topology:
    derived = (facts.get("derived") or {}).get("topology") or {}
    devices = {d["bdf"]: d for d in derived.get("devices") or []}
    links = {link["bdf"]: link for link in derived.get("links") or []}
    on_path = {b["bdf"]: b for b in (derived.get("acs") or {}).get("on_path_bridges") or []}
    slow_nics = {n["bdf"]: n for n in derived.get("nic_pcie_bottleneck") or []}
    iommu = (derived.get("iommu") or {}).get("mode")
    source = derived.get("source")
    root = Node(f"host ({source_words(source, bool(devices))})", kind="host")
    root.details.append(f"IOMMU: {iommu or 'unknown'}")
    if iommu == "translated":
        root.flags.append("IOMMU translates DMA: GPUDirect P2P through a root complex fails or slows")
    if source is None and devices:  # an lspci -vvv of a few devices, no bridges: each on its own
        root.children = [
            endpoint_node(d, links.get(d["bdf"])) for d in devices.values() if d["kind"] in KIND_NAMES
        ]
    if source in ("pci", "lspci_tree", "lspci", "nvme_sysfs"):
        root.children = socket_nodes(devices, links, on_path)
        for node in walk(root):
            bdf = next((word for word in node.label.split() if word in slow_nics), None)
            if bdf:
                nic = slow_nics[bdf]
                node.flags.append(
                    f"{bdf}: PCIe {nic['link']} carries ~{nic['pcie_gbps']:g} Gb/s"
                    f" for a {nic['port_gbps']:g} Gb/s port"
                )
    gpus = [gpu_line(g) for g in derived.get("gpus") or []]
    problems = [flag for node in walk(root) for flag in node.flags]
    problems += [p for g in gpus for p in g["problems"]]
    return Topology(source, root, gpus, list(dict.fromkeys(problems)))


def source_words(source: str | None, devices_seen: bool = False) -> str:
    """Where the placement came from; without one, what would place the devices (never asking
    for the lspci -vvv that showed them)."""
    known = {
        "pci": "from sysfs",
        "lspci_tree": "from lspci -tv",
        "lspci": "from lspci -vvv bus numbers",
        "nvme_sysfs": "from the NVMe sysfs tree: drives only",
        "nvidia_topo": "from nvidia-smi topo -m: relations only",
    }
    if source in known:
        return known[str(source)]
    if devices_seen:  # an lspci -vvv without the bridges above its devices
        return "placement unknown: lspci -vvv shows these devices but no bridge; give sysfs or lspci -tv"
    return "placement unknown: give sysfs, lspci -tv, lspci -vvv or nvidia-smi topo -m"


def walk(node: Node) -> list[Node]:
    return [node] + [n for child in node.children for n in walk(child)]


def socket_nodes(
    devices: dict[str, dict[str, Any]], links: dict[str, dict[str, Any]], on_path: dict[str, dict[str, Any]]
) -> list[Node]:
    """NUMA node → root complex → bridges → endpoints; only bridges that lead to a GPU, drive or NIC."""
    endpoints = [d for d in devices.values() if d["kind"] in KIND_NAMES]
    complexes: dict[str, list[dict[str, Any]]] = {}
    for device in endpoints:
        complexes.setdefault(str(device["root_complex"]), []).append(device)
    sockets: dict[Any, Node] = {}
    for complex_name in sorted(complexes):
        members = complexes[complex_name]
        numa = next((d["numa_node"] for d in members if d["numa_node"] is not None), None)
        socket = sockets.setdefault(
            numa, Node(f"NUMA node {numa}" if numa is not None else "NUMA node unknown", kind="socket")
        )
        complex_node = Node(complex_name, kind="root_complex")
        socket.children.append(complex_node)
        for device in sorted(members, key=lambda d: d["upstream"] + [d["bdf"]]):
            parent = complex_node
            for depth, bridge in enumerate(device["upstream"]):
                parent = child(parent, bridge, lambda b=bridge, d=depth: bridge_node(b, d, devices, on_path))
            parent.children.append(endpoint_node(device, links.get(device["bdf"])))
    return [sockets[key] for key in sorted(sockets, key=lambda k: (k is None, k if k is not None else 0))]


def child(parent: Node, key: str, make: Any) -> Node:
    for existing in parent.children:
        if existing.label.split()[0] == key:
            return existing
    made = make()
    parent.children.append(made)
    return made


def bridge_node(bdf: str, depth: int, devices: dict[str, dict[str, Any]], on_path: dict[str, dict]) -> Node:
    found = devices.get(bdf) or {}
    role = "root port" if depth == 0 else ("switch port" if depth % 2 == 0 else "switch")
    name = short_name(found.get("lspci_name"))
    node = Node(f"{bdf} {role}" + (f" — {name}" if name else ""), kind=role.replace(" ", "_"))
    link = link_text(found.get("link") or {})
    if link:
        node.details.append(link)
    if bdf in on_path:
        count = len(on_path[bdf]["pairs"])
        node.flags.append(
            f"ACS redirect on {bdf}: {count} GPU↔NVMe/NIC path(s) through it go up to the root complex"
        )
    elif found.get("acs_redirect"):
        node.details.append("ACS redirect on (no GPU path through it)")
    return node


def endpoint_node(device: dict[str, Any], link: dict[str, Any] | None) -> Node:
    kind = KIND_NAMES[device["kind"]]
    name = f" {device['name']}" if device.get("name") else ""
    netdevs = f" [{', '.join(map(str, device['netdevs']))}]" if device.get("netdevs") else ""
    model = short_name(device.get("lspci_name")) or short_name(device.get("model"))
    node = Node(
        f"{kind}{name} {device['bdf']}{netdevs}" + (f" — {model}" if model else ""), kind=device["kind"]
    )
    text = link_text(device.get("link") or {})
    if text:
        node.details.append(text)
    if link and link.get("degraded"):
        node.flags.append(f"degraded link: {link['says']}")
    elif link and link.get("idle_downclock"):
        node.details.append("link slowed at idle (power saving, not a fault)")
    if device.get("subsystem"):
        node.details.append(f"subsystem {device['subsystem']}")
    for namespace in device.get("namespaces") or []:
        mounts = ", ".join(namespace["mountpoints"]) or "not mounted"
        size = f" {human_bytes(namespace['size_bytes'])}" if namespace.get("size_bytes") else ""
        via = f" (multipath, via {namespace['via']})" if namespace.get("via") else ""
        node.children.append(Node(f"{namespace['name']}{size}{via} → {mounts}", kind="namespace"))
    return node


def short_name(name: Any) -> str | None:
    """``PEX890xx PCIe Gen 5 Switch (rev b0) (prog-if 00 [Normal decode])`` without the tails."""
    if not name:
        return None
    return re.sub(r"(?<!\s)\s*\((rev [0-9a-f]+|prog-if [^)]*\))\)?", "", str(name)).strip() or None


def link_text(link: dict[str, Any]) -> str:
    speed, width = link.get("speed_gts"), link.get("width")
    if speed is None and width is None:
        return ""
    text = f"{fmt_speed(speed)} x{width if width is not None else '?'}"
    top_speed, top_width = link.get("max_speed_gts"), link.get("max_width")
    if (top_speed is not None and top_speed != speed) or (top_width is not None and top_width != width):
        text += f" (max {fmt_speed(top_speed)} x{top_width if top_width is not None else '?'})"
    return text


def fmt_speed(speed: Any) -> str:
    return "? GT/s" if speed is None else f"{speed:g} GT/s"


def human_bytes(size: Any) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return str(size)


def gpu_line(gpu: dict[str, Any]) -> dict[str, Any]:
    """One GPU's nearest drive and NIC, with the misplacements as problems."""
    entry: dict[str, Any] = {"gpu": gpu["gpu"], "numa_node": gpu.get("numa_node"), "problems": []}
    entry["bdf"] = gpu.get("bdf")
    for kind in ("nvme", "nic"):
        pair = gpu.get(f"nearest_{kind}")
        if pair is None:
            entry[kind] = None
            continue
        entry[kind] = f"{pair['other']} — {WORDS[pair['relation']]} ({pair['label']})"
        misplaced = pair["rank"] >= RANK["root_complex"]
        entry.setdefault("pairs", []).append(
            {
                "kind": kind,
                "other": pair["other"],
                "other_bdf": pair.get("other_bdf"),
                "label": pair["label"],
                "misplaced": misplaced,
            }
        )
        if misplaced:
            entry["problems"].append(f"{gpu['gpu']}: nearest {entry[kind]}".replace(" — ", " is ", 1))
    return entry


# --- renderers ------------------------------------------------------------------------------------


def render_text(topology: Topology) -> str:
    lines = [one_line(topology.root.label)]
    width = terminal_width()
    lines += [ln for d in topology.root.details for ln in wrap(one_line(d), width, "  ", "    ")]
    lines += [ln for flag in topology.root.flags for ln in wrap(f"! {one_line(flag)}", width, "  ", "    ")]
    for index, node in enumerate(topology.root.children):
        lines += tree_lines(node, "", index == len(topology.root.children) - 1)
    lines += ["", "GPUs (nearest NVMe / NIC):"]
    lines += [ln for line in gpu_texts(topology) for ln in wrap(one_line(line), width, "  ", "    ")]
    lines += [] if topology.gpus else ["  (no GPU found)"]
    lines += ["", "Problems:"]
    lines += [ln for p in topology.problems for ln in wrap(f"! {one_line(p)}", width, "  ", "    ")] or [
        "  none seen"
    ]
    if topology.verdict:
        lines += ["", *status_lines(status_line(topology.verdict))]
    return "\n".join(lines) + "\n"


def status_line(verdict: dict[str, Any]) -> str:
    """The last line, as `check` ends: the status, the exit code and the causes that set it."""
    causes = ", ".join(verdict["causes"]) or "no placement or link cause fired"
    return f"Status: {verdict['status']} (exit {verdict['exit_code']}) — {one_line(causes)}"


def tree_lines(node: Node, prefix: str, last: bool, width: int | None = None) -> list[str]:
    """The node and its children, each label wrapped under its own branch at the width."""
    width = width or terminal_width()
    branch, below = ("└── ", "    ") if last else ("├── ", "│   ")
    text = one_line(node.label)
    if node.details:
        text += "  " + "; ".join(one_line(d) for d in node.details)
    lines = wrap(text, width, prefix + branch, prefix + below + ("│   " if node.children else "    "))
    for flag in node.flags:
        lines += wrap(f"! {one_line(flag)}", width, f"{prefix}{below}  ", f"{prefix}{below}    ")
    for index, child_node in enumerate(node.children):
        lines += tree_lines(child_node, prefix + below, index == len(node.children) - 1, width)
    return lines


def gpu_texts(topology: Topology) -> list[str]:
    texts = []
    for gpu in topology.gpus:
        numa = gpu["numa_node"] if gpu["numa_node"] is not None else "?"
        texts.append(f"{gpu['gpu']} (NUMA {numa}): {gpu['nvme'] or 'no NVMe'}; {gpu['nic'] or 'no NIC'}")
    return texts


def render_markdown(topology: Topology) -> str:
    tree = render_text(Topology(topology.source, topology.root, [], [])).split("\n\nGPUs")[0]
    parts = ["## PCIe topology", "", markdown_code_block(tree.rstrip("\n").split("\n")), "", "## GPUs", ""]
    parts += [f"- {markdown_inline(line)}" for line in gpu_texts(topology)] or ["- no GPU found"]
    parts += ["", "## Problems", ""]
    parts += [f"- **{markdown_inline(p)}**" for p in topology.problems] or ["- none seen"]
    if topology.verdict:
        parts += ["", markdown_inline(status_line(topology.verdict))]
    return "\n".join(parts) + "\n"


def render_json(topology: Topology) -> str:
    return json.dumps(topology.to_dict(), indent=2, default=str) + "\n"


def render_rich(topology: Topology, color: bool = True) -> str:
    from rich.console import Console
    from rich.markup import escape
    from rich.tree import Tree

    def label(node: Node) -> str:
        text = f"[bold]{escape(one_line(node.label))}[/]"
        if node.details:
            text += "  [dim]" + escape("; ".join(one_line(d) for d in node.details)) + "[/]"
        for flag in node.flags:
            text += f"\n[bold red]! {escape(one_line(flag))}[/]"
        return text

    def add(branch: Tree, node: Node) -> None:
        sub = branch.add(label(node))
        for child_node in node.children:
            add(sub, child_node)

    tree = Tree(label(topology.root))
    for node in topology.root.children:
        add(tree, node)
    console = Console(record=True, force_terminal=color, no_color=not color, width=terminal_width())
    with console.capture() as captured:
        console.print(tree)
        console.print("\n[bold]GPUs (nearest NVMe / NIC)[/]")
        for line in gpu_texts(topology) or ["(no GPU found)"]:
            console.print("  " + escape(one_line(line)))
        console.print("\n[bold]Problems[/]")
        for problem in topology.problems or []:
            console.print(f"  [bold red]! {escape(one_line(problem))}[/]")
        if not topology.problems:
            console.print("  [green]none seen[/]")
        if topology.verdict:
            console.print("\n" + escape("\n".join(status_lines(status_line(topology.verdict)))))
    return captured.get()


# --- entry point ----------------------------------------------------------------------------------


def topology_of(inputs: Sequence[Path], host_root: Path = Path("/")) -> Topology:
    """Facts from a bundle or pasted files, or from this host (only the topology probes), the
    tree drawn from them and the verdict of the placement and link causes. Inputs that show no
    device are an error (one line, exit 3): an empty tree would read as a healthy one."""
    if inputs:
        capture = load_inputs(inputs)
    else:
        capture = capture_live(
            host_root, probes=[BY_SECTION[s] for s in TOPOLOGY_SECTIONS if s in BY_SECTION]
        )
    analysis = analyze_capture(capture)
    topology = build(analysis.facts)
    if not topology.root.children and not topology.gpus:
        where = ", ".join(str(p) for p in inputs) if inputs else f"host root {host_root}"
        why = f" ({one_line(capture.notes[0].split('; ')[0])})" if capture.notes else ""
        raise UserError(f"{where}: no device to draw{why}; topo reads {DRAWN_FROM}")
    topology.verdict = verdict(analysis.report["findings"])
    return topology


def verdict(findings: list[dict[str, Any]]) -> dict[str, Any]:
    """The worst placement or link cause that fired: topo's status and exit code."""
    fired = [f for f in findings if f["category"] in TOPOLOGY_CATEGORIES and f["severity"] != "info"]
    severities = {f["severity"] for f in fired}
    status = "CRITICAL" if "critical" in severities else "WARNING" if severities else "OK"
    return {"status": status, "exit_code": EXIT_CODES[status], "causes": [f["id"] for f in fired]}


def render(topology: Topology, fmt: str, color: bool) -> str:
    if fmt == "svg":
        from gdsdoctor.report.svg_topology import render_svg

        return render_svg(topology.to_dict())
    if fmt == "json":
        return render_json(topology)
    if fmt == "markdown":
        return render_markdown(topology)
    if fmt == "text":
        return render_text(topology)
    return render_rich(topology, color)
