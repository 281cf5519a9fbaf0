"""NVIDIA GPUs: ``nvidia-smi -q`` (PCI link, BAR1) and ``nvidia-smi topo -m`` (GPU↔NIC/NVMe placement).

Section ``nvidia_smi`` (``nvidia-smi -q``; 4-space indented ``Key<spaces>: value`` blocks)::

    GPU 00000000:19:00.0
        Product Name                          : NVIDIA H100 80GB HBM3

``{"driver_version", "cuda_version", "attached_gpus", "gpus": [gpu]}``, a gpu being ``{bus_id
("0000:19:00.0", sysfs form), product_name, uuid, persistence_mode (bool|None), mig_mode, link_gen_current,
link_gen_max, link_gen_device_max, link_gen_host_max, link_width_current, link_width_max (int|None),
pcie_replays, bar1_total_mib, bar1_used_mib, bar1_total_bytes, bar1_used_bytes, fb_total_mib, src}``.

Section ``nvidia_topo`` (``nvidia-smi topo -m``; every layout: old ``mlx5_N`` columns, ``NICn`` columns with a
``NIC Legend``, optional ``CPU Affinity`` / ``NUMA Affinity`` / ``GPU NUMA ID`` columns, NVMe matrices,
ANSI escapes stripped)::

    GPU0     X      NV18    NV18   ...  PIX     NODE  ...  0-47,96-143     0               N/A

``{"columns": [label], "has_cpu_affinity", "has_numa_affinity", "has_gpu_numa_id" (bool), "legend": {"NIC0":
"mlx5_0"}, "gpus": [{name, index, cpu_affinity, numa_affinity (int|None), gpu_numa_id (int|None), links:
{label: relation}, best_nic, best_nic_relation, best_nic_rank, src}], "nics": [{name, device (None when
no legend names it), links, src}], "nvmes": [...], "gpu_nic": [{gpu, nic, device, relation, rank, src}],
"gpu_nvme": [same with nvme]}``, and ``input_cut`` when the matrix had more than MAX_TOPO_DEVICES rows
or columns (only those are read). ``rank`` orders relations best→worst as NVIDIA's GDS tools
do: PIX 0, PXB 1, PHB 2, NODE 3, SYS 4, SOC 5 (None for NV#/X/unknown).
"""

from __future__ import annotations

import re
from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes import nvidia_smi_failures, nvidia_smi_text
from gdsdoctor.probes.base import Probe, Section, Source, head_lines, numbered_lines, src
from gdsdoctor.probes.gpu_records import Q_FIELDS, new_gpu, normalise_bus_id

# --- nvidia-smi -q ------------------------------------------------------------------------------

_Q_KEY = lazy_compile(r"^( *)(\S(?:[^:]*[^:\s])?)\s*(?::\s?(.*))?$")
_GPU_HEADER = lazy_compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_NUMBER = lazy_compile(r"^(\d+)")
_Q_TEXT = {"product_name", "uuid", "mig_mode", "bus_id"}
_Q_TOP = {
    "Driver Version": "driver_version",
    "CUDA Version": "cuda_version",
    "Attached GPUs": "attached_gpus",
}
MIB = 1 << 20


def q_value(field: str, value: str) -> Any:
    value = value.strip()
    if value in ("", "N/A", "[N/A]", "Unknown", "[Unknown Error]"):
        return None
    if field == "bus_id":
        return normalise_bus_id(value)
    if field == "persistence_mode":
        return {"Enabled": True, "Disabled": False}.get(value)
    if field in _Q_TEXT:
        return value
    number = _NUMBER.match(value)
    return int(number[1]) if number else None


def finish_gpu(gpu: dict[str, Any]) -> dict[str, Any]:
    for which in ("total", "used"):
        mib = gpu[f"bar1_{which}_mib"]
        gpu[f"bar1_{which}_bytes"] = None if mib is None else mib * MIB
    return gpu


def parse_nvidia_smi_q(text: str, artifact: str) -> Section:
    top: dict[str, Any] = dict.fromkeys(_Q_TOP.values())
    gpus: list[dict[str, Any]] = []
    stack: list[str] = []
    for number, raw in numbered_lines(text):
        line = raw.expandtabs(4).rstrip()
        header = _GPU_HEADER.match(line)
        if header:
            gpus.append(new_gpu(header[1], src(artifact, number, raw)))
            stack = []
            continue
        match = _Q_KEY.match(line)
        if not match:
            continue
        level, key, value = len(match[1]) // 4, match[2], match[3]
        stack = [*stack[: max(level - 1, 0)], key]
        if level == 0 and key in _Q_TOP and value is not None:
            top[_Q_TOP[key]] = q_value("count", value) if key == "Attached GPUs" else value.strip() or None
        elif gpus and level >= 1 and value is not None and (field := Q_FIELDS.get(tuple(stack))):
            gpus[-1][field] = q_value(field, value)
    if not gpus and top["driver_version"] is None:
        raise ParseError("no `GPU 0000xxxx:bb:dd.f` blocks (expected `nvidia-smi -q` output)")
    return {**top, "gpus": [finish_gpu(gpu) for gpu in gpus]}


def recognise_nvidia_smi_q(text: str) -> bool:
    head = head_lines(text, 100)
    has_log = any("==NVSMI LOG==" in line for line in head)
    has_gpu = any(_GPU_HEADER.match(line.rstrip()) for line in head)
    has_keys = any(
        line.strip().startswith(("Driver Version", "Product Name")) and " : " in line for line in head
    )
    return (has_log or has_gpu) and has_keys


# --- nvidia-smi topo -m -------------------------------------------------------------------------

_ANSI = lazy_compile(r"\x1b\[[0-9;]*[A-Za-z]")
_LABEL = lazy_compile(r"^(GPU\d+|NIC\d+|NVMe\d+|mlx5_\w+|mlx4_\w+|[a-z]+\d*_\w+)$")
_LEGEND = lazy_compile(r"^\s*((?:NIC|NVMe)\d+):\s*(\S+)\s*$")
_RELATION = lazy_compile(r"^(X|SYS|NODE|PHB|PXB|PIX|SOC|NV\d+|N/A)$")
_TRAILERS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
RANK = {"PIX": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4, "SOC": 5}
# Devices (rows, and columns of each row) read from a matrix: a node has a few dozen. Each cell
# becomes a link and each GPU x NIC cell a pair of facts (~1 KB): an 800 x 800 matrix (2.5 MiB)
# took 250 MiB, and a 64 MiB one would take GBs; the report says when a matrix was cut.
MAX_TOPO_DEVICES = 256


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def topo_header(line: str) -> tuple[list[str], list[str]] | None:
    """Device columns and trailing affinity columns of a matrix header line, else None."""
    trailers = [name for name in _TRAILERS if name in line]
    first = min((line.index(name) for name in trailers), default=len(line))
    columns = line[:first].split()
    if not columns or not all(_LABEL.match(column) for column in columns):
        return None
    return columns, trailers


def numeric(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdecimal() else None


def topo_row(label: str, cells: list[str], columns: list[str], trailers: list[str]) -> dict[str, Any]:
    kept = zip(columns[:MAX_TOPO_DEVICES], cells, strict=False)
    links = {column: cell for column, cell in kept if column != label}
    extra = cells[len(columns) :]
    values = dict(zip(trailers, extra, strict=False))
    row: dict[str, Any] = {"name": label, "links": links}
    if label.startswith("GPU"):
        row |= {
            "index": int(label[3:]),
            "cpu_affinity": values.get("CPU Affinity")
            if values.get("CPU Affinity") not in (None, "N/A")
            else None,
            "numa_affinity": numeric(values.get("NUMA Affinity")),
            "gpu_numa_id": numeric(values.get("GPU NUMA ID")),
        }
    return row


def kind_of(label: str) -> str:
    if label.startswith("GPU"):
        return "gpus"
    return "nvmes" if label.startswith("NVMe") else "nics"


def pair_list(gpus: list[dict], others: list[dict], legend: dict[str, str], key: str) -> list[dict[str, Any]]:
    """Every GPU × NIC (or NVMe) relation, from the GPU's row or else from the other row.

    Linear in the matrix's cells: the other rows are indexed by name and by the GPUs they
    link to (a search of every other row for each GPU × column was cubic in the matrix's side:
    a 2.46 MiB matrix took 10 s)."""
    by_name = {other["name"]: other for other in others}
    linking: dict[str, list[str]] = {}  # GPU name -> the other rows that name it
    for other in others:
        for column in other["links"]:
            linking.setdefault(column, []).append(other["name"])
    pairs = []
    for gpu in gpus:
        own = [column for column in gpu["links"] if kind_of(column) == f"{key}s"]
        for name in sorted({*own, *linking.get(gpu["name"], ())}, key=_natural):
            other = by_name.get(name)
            relation = gpu["links"].get(name) or (other["links"].get(gpu["name"]) if other else None)
            if relation is None:
                continue
            source = gpu["src"] if name in gpu["links"] else other["src"]  # type: ignore[index]
            pairs.append(
                {"gpu": gpu["name"], key: name, "device": device_name(name, legend), "relation": relation,
                 "rank": RANK.get(relation), "src": source}
            )  # fmt: skip
    return pairs


def device_name(label: str, legend: dict[str, str]) -> str | None:
    """The OS name (``mlx5_0``, ``nvme0n1``) of a column: from the legend, or the label in old layouts."""
    if label in legend:
        return legend[label]
    return None if re.match(r"^(NIC|NVMe)\d+$", label) else label


def _natural(label: str) -> tuple[str, int]:
    digits = re.search(r"(?<!\d)(\d+)$", label)
    return (label[: digits.start()] if digits else label, int(digits[1]) if digits else -1)


def parse_nvidia_topo(text: str, artifact: str) -> Section:
    rows: dict[str, list[dict[str, Any]]] = {"gpus": [], "nics": [], "nvmes": []}
    legend: dict[str, str] = {}
    columns: dict[str, None] = {}  # in order of appearance, each once
    trailers: set[str] = set()
    header: tuple[list[str], list[str]] | None = None
    seen: dict[str, dict[str, Any]] = {}
    rows_cut = 0
    for number, raw in numbered_lines(text):
        line = strip_ansi(raw)
        if (found := topo_header(line)) is not None:
            header = found
            columns |= dict.fromkeys(found[0])
            trailers |= set(found[1])
            continue
        if (entry := _LEGEND.match(line)) is not None:
            legend[entry[1]] = entry[2]
            continue
        tokens = line.split()
        if header is None or len(tokens) < 2 or not _LABEL.match(tokens[0]) or not _RELATION.match(tokens[1]):
            continue
        if tokens[0] not in seen and len(seen) >= MAX_TOPO_DEVICES:
            rows_cut += 1
            continue
        row = topo_row(tokens[0], tokens[1:], *header)
        if (same := seen.get(row["name"])) is not None:  # a later matrix (NVMe columns) adds links
            same["links"] |= row["links"]
            continue
        row["src"] = src(artifact, number, raw)
        rows[kind_of(tokens[0])].append(row)
        seen[row["name"]] = row
    if not rows["gpus"]:
        raise ParseError("no GPU rows under a `GPU0 GPU1 …` header (expected `nvidia-smi topo -m` output)")
    for kind in ("nics", "nvmes"):
        for row in rows[kind]:
            row["device"] = device_name(row["name"], legend)
    nic_pairs = pair_list(rows["gpus"], rows["nics"], legend, "nic")
    ranked: dict[str, list[dict[str, Any]]] = {}
    for pair in nic_pairs:
        if pair["rank"] is not None:
            ranked.setdefault(pair["gpu"], []).append(pair)
    for gpu in rows["gpus"]:
        best = min(ranked.get(gpu["name"], ()), key=lambda pair: pair["rank"], default=None)
        gpu["best_nic"] = best["device"] or best["nic"] if best else None
        gpu["best_nic_relation"] = best["relation"] if best else None
        gpu["best_nic_rank"] = best["rank"] if best else None
    section: Section = {
        "columns": list(columns),
        "has_cpu_affinity": "CPU Affinity" in trailers,
        "has_numa_affinity": "NUMA Affinity" in trailers,
        "has_gpu_numa_id": "GPU NUMA ID" in trailers,
        "legend": legend,
        **rows,
        "gpu_nic": nic_pairs,
        "gpu_nvme": pair_list(rows["gpus"], rows["nvmes"], legend, "nvme"),
    }
    if rows_cut or len(columns) > MAX_TOPO_DEVICES:
        section["input_cut"] = (
            f"a matrix of {max(len(seen) + rows_cut, len(columns)):,} devices: only the first "
            f"{MAX_TOPO_DEVICES} rows and columns were read"
        )
    return section


def recognise_nvidia_topo(text: str) -> bool:
    lines = [strip_ansi(line) for line in head_lines(text, 100)]
    if not any(topo_header(line) for line in lines):
        return False
    rows = [line.split() for line in lines]
    return any(len(r) >= 2 and r[0] == "GPU0" and r[1] == "X" for r in rows)


def parse_nvidia_smi(text: str, artifact: str) -> Section:
    """``nvidia-smi -q``, or the table, ``-L`` list or ``--query-gpu`` CSV pasted instead; with
    ``failures``, the messages of a GPU (or the driver) it could not reach. An output that is only
    such messages is a section with no GPUs: nvidia-smi's answer, not an unreadable output."""
    failures = nvidia_smi_failures.read(text, artifact)
    if nvidia_smi_failures.only_failures(text):
        no_devices = any(f["kind"] == "no_devices" for f in failures)
        section: Section = {"driver_version": None, "cuda_version": None, "gpus": [], "format": "failure"}
        section["attached_gpus"] = 0 if no_devices else None
    elif nvidia_smi_text.layout_of(text):
        section = nvidia_smi_text.parse(text, artifact)
    else:
        section = parse_nvidia_smi_q(text, artifact)
    section["failures"] = failures
    return section


def recognise_nvidia_smi(text: str) -> bool:
    return (
        recognise_nvidia_smi_q(text)
        or nvidia_smi_text.layout_of(text) is not None
        or nvidia_smi_failures.only_failures(text)
    )


# nvidia-smi exits with NVML's return code (9: no driver, 15: a GPU lost, 18: version mismatch…)
# and prints why: the output is read whatever the exit code, and one that says nothing readable is
# reported as the command's failure, in its own words (facts/section.py).
_ANY_EXIT = tuple(range(256))


PROBES: tuple[Probe, ...] = (
    Probe(
        section="nvidia_smi",
        title="NVIDIA GPUs: driver/CUDA version, PCIe link generation/width, BAR1 size (nvidia-smi -q)",
        sources=(
            Source("cmd/nvidia-smi-q.txt", argv=("nvidia-smi", "-q"), timeout=60.0, ok_exit_codes=_ANY_EXIT),
        ),
        parse=parse_nvidia_smi,
        recognise=recognise_nvidia_smi,
        paste_hint="`nvidia-smi -q` (or `nvidia-smi`, `nvidia-smi -L`)",
        tags=("gpu", "pcie"),
    ),
    Probe(
        section="nvidia_topo",
        title="GPU↔NIC/NVMe PCIe relations (PIX/PXB/PHB/NODE/SYS) and NUMA affinity (nvidia-smi topo -m)",
        sources=(Source("cmd/nvidia-smi-topo-m.txt", argv=("nvidia-smi", "topo", "-m"), timeout=60.0),),
        parse=parse_nvidia_topo,
        recognise=recognise_nvidia_topo,
        paste_hint="`nvidia-smi topo -m`",
        tags=("gpu", "topology"),
    ),
)
