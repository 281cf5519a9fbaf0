"""`gdsdoctor topo --format svg`, and the topology picture of the HTML report: the PCIe/NUMA tree
of ``topo --format json`` (commands/topology_view.py builds it) drawn as boxes.

Each socket (NUMA node) is a panel; inside it the root complexes, root ports, switches and their
GPUs, NVMe drives and NICs go down as an indented tree, one row per device (a tree laid out
sideways would need ~120 px per leaf: 5,000 px for 8 GPUs, 8 NICs and 16 drives; rows stay
readable at any count). The link's speed and width are written on the edge that leads to a device.
What is wrong is coloured, with a legend: a device or bridge with a problem in red, its problem
under it; a degraded link's edge amber and dashed; a GPU whose nearest drive or NIC is through the
root complex or across sockets is tied to it by a red dashed line in the right margin, named by
its ``nvidia-smi topo -m`` relation (NODE, SYS).
"""

from __future__ import annotations

import re
from typing import Any

from gdsdoctor.report.svg import (
    AMBER,
    INK,
    MUTED,
    RED,
    RED_FILL,
    document,
    esc,
    line,
    rect,
    text,
    text_width,
)

PAD = 16
INDENT = 96  # px per level: room for "32 GT/s x16" on the edge
BOX_H = 24
GAP = 8
FLAG_H = 15
LANE = 18  # px between the margin lines of misplaced pairs
LABEL_LIMIT = 72  # characters of a box's label (the full text is the box's tooltip)
KINDS = {  # kind: (stroke, fill, legend)
    "gpu": ("#2e7d32", "#e8f5e9", "GPU"),
    "nvme": ("#1565c0", "#e3f2fd", "NVMe drive"),
    "nic": ("#6a1b9a", "#f3e5f5", "NIC"),
    "root_port": ("#546e7a", "#eceff1", "root port / switch"),
    "switch": ("#546e7a", "#eceff1", ""),
    "switch_port": ("#546e7a", "#eceff1", ""),
    "root_complex": ("#37474f", "#cfd8dc", "root complex"),
    "namespace": ("#90a4ae", "#ffffff", "namespace → mount"),
}
NEAREST = "GPU's nearest drive/NIC off its switch (NODE, SYS)"
_LINK = re.compile(r"^[\d.?]+ GT/s x[\d?]+")
_BDF = re.compile(r"\b[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]\b")


class _Row:
    __slots__ = ("depth", "h", "marked", "node", "parent", "w", "x", "y")

    def __init__(self, node: dict[str, Any], depth: int, parent: _Row | None) -> None:
        self.node, self.depth, self.parent = node, depth, parent
        self.x = self.y = self.w = 0.0
        self.marked = False  # one end of a misplaced GPU pair
        self.h = BOX_H + GAP + FLAG_H * len(node.get("flags") or [])


def render_svg(topology: dict[str, Any]) -> str:
    """The picture of a ``topo --format json`` document, as a standalone SVG."""
    root = _fold(topology.get("tree") or {})
    body: list[str] = []
    y = PAD
    body.append(text(PAD, y + 14, root.get("label", "host"), 15, INK, weight="bold"))
    details = "; ".join(str(d) for d in root.get("details") or [])
    body.append(text(PAD + text_width(root.get("label", "host"), 15) + 12, y + 14, details, 12, MUTED))
    y += 26
    for flag in root.get("flags") or []:
        body.append(text(PAD, y + 12, f"! {flag}", 12, RED, weight="bold"))
        y += 18
    y += 4
    legend, y, legend_right = _legend(y)
    body += legend
    panels, rows, y = _panels(root, y + 8)
    right = max((r.x + r.w + _detail_width(r) for r in rows), default=PAD + 300)
    arcs, lanes_right = _misplaced(topology.get("gpus") or [], rows, right + 24)
    footer = _footer_lines(topology)
    width = max(lanes_right, right, legend_right, *(PAD + text_width(t, 12) for t, _c in footer)) + PAD
    for top, bottom, title in panels:
        body.append(rect(PAD, top, width - 2 * PAD, bottom - top, "#f8fafc", "#bcccdc", rx=8))
        body.append(text(PAD + 12, top + 19, title, 13, INK, weight="bold"))
    body += [part for r in rows for part in _draw(r)]
    body += arcs
    y += 6
    for words, colour in footer:
        body.append(
            text(PAD, y + 14, words, 12, colour, weight="bold" if words.startswith("Status") else "normal")
        )
        y += 20
    label = f"PCIe topology: {sum(1 for r in rows if r.node.get('kind') in ('gpu', 'nvme', 'nic'))} devices"
    return document(max(width, 640), y + PAD, body, "gdsdoctor topo", label)


def _fold(node: dict[str, Any]) -> dict[str, Any]:
    """The tree with two kinds of rows folded into their neighbours, so that an 8-GPU node stays a
    page, not four: a switch port (or root port) leading to a single device and with no problem of
    its own is drawn as the device's edge (its address in the device's details), and a drive's
    namespaces without problems are written beside the drive."""
    children = [_fold(c) for c in node.get("children") or []]
    folded = []
    for child in children:
        kids = child.get("children") or []
        if (
            child.get("kind") in ("switch_port", "root_port")
            and len(kids) == 1
            and kids[0].get("kind") in ("gpu", "nvme", "nic")
            and not child.get("flags")
        ):
            port = str(child.get("label", "")).split(" ")[0]
            device = dict(kids[0])
            device["details"] = [*(device.get("details") or []), f"via {port}"]
            folded.append(device)
        elif child.get("kind") == "root_complex" and len(kids) == 1 and kids[0].get("kind") == "root_port":
            port = kids[0]  # a host bridge with one root port: one row
            folded.append({**port, "label": f"{child.get('label')} › {port.get('label')}"})
        else:
            folded.append(child)
    names = [
        c for c in folded if c.get("kind") == "namespace" and not c.get("flags") and not c.get("children")
    ]
    if node.get("kind") == "nvme" and names:
        node = {**node, "details": [*(node.get("details") or []), *(str(c.get("label")) for c in names)]}
        folded = [c for c in folded if not any(c is n for n in names)]
    return {**node, "children": folded}


def _legend(y: float) -> tuple[list[str], float, float]:
    parts, x = [], PAD
    for kind in ("gpu", "nvme", "nic", "root_port", "root_complex"):
        stroke, fill, name = KINDS[kind]
        parts += [rect(x, y, 14, 12, fill, stroke, rx=2), text(x + 19, y + 10, name, 11, MUTED)]
        x += 19 + text_width(name, 11) + 16
    parts += [
        rect(x, y, 14, 12, RED_FILL, RED, rx=2, stroke_width=2),
        text(x + 19, y + 10, "has a problem", 11, RED),
    ]
    x += 19 + text_width("has a problem", 11) + 16
    parts += [
        line(x, y + 6, x + 24, y + 6, AMBER, 2, "5 3"),
        text(x + 29, y + 10, "degraded link", 11, AMBER),
    ]
    x += 29 + text_width("degraded link", 11) + 16
    parts += [
        line(x, y + 6, x + 24, y + 6, RED, 1.5, "6 3"),
        text(x + 29, y + 10, NEAREST, 11, RED),
    ]
    return parts, y + 22, x + 29 + text_width(NEAREST, 11)


def _panels(root: dict[str, Any], y: float) -> tuple[list[tuple[float, float, str]], list[_Row], float]:
    """One panel per socket (the devices of no socket in one of their own); the rows inside."""
    groups: list[tuple[str, list[dict[str, Any]]]] = []
    loose = [c for c in root.get("children") or [] if c.get("kind") != "socket"]
    for child in root.get("children") or []:
        if child.get("kind") == "socket":
            groups.append((str(child.get("label")), child.get("children") or []))
    if loose:
        groups.append(("placement unknown", loose))
    panels: list[tuple[float, float, str]] = []  # top, bottom, title: drawn once the width is known
    rows: list[_Row] = []
    for title, children in groups:
        top = y
        y += 28
        for node in children:
            y = _place(node, 0, None, y, rows)
        panels.append((top, y + 4, title))
        y += 16
    return panels, rows, y


def _place(node: dict[str, Any], depth: int, parent: _Row | None, y: float, rows: list[_Row]) -> float:
    row = _Row(node, depth, parent)
    row.x, row.y = PAD + 14 + depth * INDENT, y
    row.w = text_width(_label(node), 12) + 16
    rows.append(row)
    y += row.h
    for child in node.get("children") or []:
        y = _place(child, depth + 1, row, y, rows)
    return y


def _label(node: dict[str, Any]) -> str:
    label = str(node.get("label", ""))
    return label if len(label) <= LABEL_LIMIT else label[: LABEL_LIMIT - 1] + "…"


def _link(node: dict[str, Any]) -> str | None:
    """The link's speed and width as trained ("16 GT/s x4"), drawn on the edge to the device."""
    return next((match[0] for d in node.get("details") or [] if (match := _LINK.match(str(d)))), None)


def _rest(node: dict[str, Any]) -> str:
    """The details not drawn on the edge: other details, and a link's "(max …)" or idle note."""
    parts = []
    for detail in node.get("details") or []:
        match = _LINK.match(str(detail))
        rest = str(detail)[match.end() :].strip(" ;") if match else str(detail)
        if rest:
            parts.append(rest)
    return "; ".join(parts)


def _right(row: _Row) -> float:
    rest = _rest(row.node)
    return row.x + row.w + (text_width(rest, 11) + 12 if rest else 2)


def _detail_width(row: _Row) -> float:
    rest = _rest(row.node)
    flags = max((text_width(f"! {f}", 11) for f in row.node.get("flags") or []), default=0)
    return max(text_width(rest, 11) + 10 if rest else 0, flags + 22 - row.w)


def _draw(row: _Row) -> list[str]:
    node, parts = row.node, []
    kind = str(node.get("kind") or "")
    stroke, fill, _ = KINDS.get(kind, (MUTED, "#ffffff", ""))
    flags = [str(f) for f in node.get("flags") or []]
    if row.parent is not None:
        trunk = row.parent.x + 14
        mid = row.y + BOX_H / 2
        degraded = any(f.startswith("degraded link") for f in flags)
        colour, dash, weight = (AMBER, "5 3", 2.0) if degraded else (MUTED, "", 1.0)
        parts.append(line(trunk, row.parent.y + BOX_H, trunk, mid, MUTED))
        parts.append(line(trunk, mid, row.x, mid, colour, weight, dash))
        if (link := _link(node)) is not None:
            parts.append(text(trunk + 6, mid - 4, link, 10, AMBER if degraded else MUTED, limit=16))
    problem = bool(flags) or row.marked
    parts.append(
        f"<g><title>{esc(node.get('label', ''))}</title>"
        + rect(
            row.x,
            row.y,
            row.w,
            BOX_H,
            RED_FILL if problem else fill,
            RED if problem else stroke,
            rx=4,
            stroke_width=2 if problem else 1,
        )
        + text(row.x + 8, row.y + 16, _label(node), 12, INK, weight="bold" if kind == "gpu" else "normal")
        + "</g>"
    )
    if rest := _rest(node):
        parts.append(text(row.x + row.w + 8, row.y + 16, rest, 11, MUTED))
    for index, flag in enumerate(flags):
        # Right of the trunk that leads on to the device's children (namespaces).
        parts.append(text(row.x + 22, row.y + BOX_H + 12 + index * FLAG_H, f"! {flag}", 11, RED))
    return parts


def _misplaced(gpus: list[dict[str, Any]], rows: list[_Row], lane_x: float) -> tuple[list[str], float]:
    """A red dashed line in the right margin from each GPU to a nearest drive or NIC that is not
    under the same root port or switch (through the root complex, or across sockets)."""
    by_word: dict[str, _Row] = {}
    for row in rows:
        if row.node.get("kind") in ("gpu", "nvme", "nic"):
            for word in str(row.node.get("label", "")).split():
                by_word.setdefault(word, row)
    parts: list[str] = []
    x = lane_x
    for gpu in gpus:
        here = by_word.get(str(gpu.get("bdf"))) or by_word.get(str(gpu.get("gpu", "")).split()[-1])
        for pair in gpu.get("pairs") or []:
            there = by_word.get(str(pair.get("other_bdf"))) or by_word.get(str(pair.get("other")))
            if not pair.get("misplaced") or here is None or there is None:
                continue
            here.marked = there.marked = True
            y1, y2 = here.y + BOX_H / 2, there.y + BOX_H / 2
            start, end = _right(here), _right(there)  # past the details written beside the box
            said = f"{gpu.get('gpu')} → {pair.get('other')}: {pair.get('label')}"
            parts.append(
                f'<path d="M{start:.1f},{y1:.1f} H{x:.1f} V{y2:.1f} H{end:.1f}" '
                f'fill="none" stroke="{RED}" stroke-width="1.5" stroke-dasharray="6 3">'
                f"<title>{esc(said)}</title></path>"
            )
            parts.append(text(x + 3, (y1 + y2) / 2, pair.get("label", ""), 10, RED, limit=8))
            x += LANE + 10
    return parts, x


def _footer_lines(topology: dict[str, Any]) -> list[tuple[str, str]]:
    """The status, the GPUs' relations where only they are known, and the problems."""
    lines: list[tuple[str, str]] = []
    summary = topology.get("summary") or {}
    if summary:
        causes = ", ".join(str(c) for c in summary.get("causes") or []) or "no placement or link cause fired"
        colour = {"CRITICAL": RED, "WARNING": AMBER}.get(str(summary.get("status")), "#2e7d32")
        lines.append((f"Status: {summary.get('status')} — {causes}", colour))
    gpus = topology.get("gpus") or []
    if not (topology.get("tree") or {}).get("children") and gpus:  # relations only (nvidia-smi topo -m)
        for gpu in gpus:
            pairs = "; ".join(str(gpu.get(k)) for k in ("nvme", "nic") if gpu.get(k))
            lines.append((f"{gpu.get('gpu')}: {pairs or 'no drive or NIC seen'}", INK))
    lines += [(f"! {problem}", RED) for problem in topology.get("problems") or []]
    return lines
