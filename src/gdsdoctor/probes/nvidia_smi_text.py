"""The other ``nvidia-smi`` outputs users paste instead of ``nvidia-smi -q``, read into the same
``nvidia_smi`` section (what they show; the rest stays None, never guessed):

- the default table (``nvidia-smi``), old and new layouts::

      | NVIDIA-SMI 550.127.05     Driver Version: 550.127.05     CUDA Version: 12.4     |
      |   0  NVIDIA A40                     On  |   00000000:4F:00.0 Off |          0 |
      |  0%   29C    P8             23W /  300W |       1MiB /  46068MiB |  0% Default |

- ``nvidia-smi -L``: ``GPU 0: NVIDIA A100-PCIE-40GB (UUID: GPU-6311…)`` (MIG lines below a GPU counted);
- ``nvidia-smi --query-gpu=… --format=csv`` with its header, or ``csv,noheader`` (fields then known
  by their shape: the index, a bus id, a ``GPU-`` uuid, a driver version, a name).

Each GPU also carries ``index`` (the nvidia-smi index) and the section ``format`` says which output
it was (``table``, ``list``, ``csv``).
"""

from __future__ import annotations

import csv
from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Section, head_lines, numbered_lines, src
from gdsdoctor.probes.gpu_records import new_gpu, normalise_bus_id

_TABLE_HEAD = lazy_compile(
    # "KMD Version" / "CUDA UMD Version" in the header of drivers 610 and later
    r"NVIDIA-SMI (?P<smi>\S+)\s+(?:Driver|KMD) Version: (?P<driver>\S+)"
    r"(?:\s+CUDA (?:UMD )?Version: (?P<cuda>[\d.]+|N/A))?"
)
_TABLE_GPU = lazy_compile(
    r"^\|\s+(?P<index>\d+)\s+(?P<name>\S(?:.*?\S)?)\s+(?P<persist>On|Off)\s*\|\s+"
    r"(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s"
)
_TABLE_MEMORY = lazy_compile(r"\|\s+\d+MiB\s*/\s*(?P<total>\d+)MiB\s+\|")
_LIST_GPU = lazy_compile(r"^GPU (?P<index>\d+): (?P<name>.+?) \(UUID: (?P<uuid>GPU-[0-9A-Fa-f-]+)\)\s*$")
_LIST_MIG = lazy_compile(r"^\s+MIG \S+\s+Device\s+\d+: \(UUID: MIG-")
_BUS = lazy_compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")
_UUID = lazy_compile(r"^GPU-[0-9A-Fa-f-]{8,}$")
_VERSION = lazy_compile(r"^\d{3}\.\d+(?:\.\d+)?$")
# --query-gpu field names (with a unit in brackets once printed) -> section field
_CSV_FIELDS = {
    "index": "index",
    "name": "product_name",
    "gpu_name": "product_name",
    "pci.bus_id": "bus_id",
    "gpu_bus_id": "bus_id",
    "uuid": "uuid",
    "gpu_uuid": "uuid",
    "driver_version": "driver_version",
    "memory.total": "fb_total_mib",
    "persistence_mode": "persistence_mode",
    "pcie.link.gen.current": "link_gen_current",
    "pcie.link.gen.max": "link_gen_max",
    "pcie.link.width.current": "link_width_current",
    "pcie.link.width.max": "link_width_max",
}


def layout_of(text: str) -> str | None:
    """``table``, ``list`` or ``csv`` when the text is one of these outputs, else None."""
    lines = [line for line in head_lines(text, 200) if line.strip()]
    if not lines:
        return None
    if any(_TABLE_HEAD.search(line) for line in lines[:20]) and any(_TABLE_GPU.match(line) for line in lines):
        return "table"
    listed = sum(1 for line in lines if _LIST_GPU.match(line) or _LIST_MIG.match(line))
    if listed and listed == len(lines):
        return "list"
    return "csv" if _csv_rows(lines) else None


def parse(text: str, artifact: str) -> Section:
    layout = layout_of(text)
    if layout is None:
        raise ParseError("not an nvidia-smi table, `nvidia-smi -L` list or `--query-gpu` CSV")
    section = {"table": _parse_table, "list": _parse_list, "csv": _parse_csv}[layout](text, artifact)
    section["format"] = layout
    section.setdefault("attached_gpus", len(section["gpus"]))
    return section


def _blank(index: int, source: dict[str, Any]) -> dict[str, Any]:
    gpu = new_gpu("", source)
    gpu["index"] = index
    return gpu


def _parse_table(text: str, artifact: str) -> Section:
    top: dict[str, Any] = {"driver_version": None, "cuda_version": None}
    gpus: list[dict[str, Any]] = []
    awaiting_memory: dict[str, Any] | None = None
    for number, line in numbered_lines(text):
        if head := _TABLE_HEAD.search(line):
            top["driver_version"] = head["driver"]
            top["cuda_version"] = head["cuda"] if head["cuda"] not in (None, "N/A") else None
        elif gpu_row := _TABLE_GPU.match(line):
            awaiting_memory = _blank(int(gpu_row["index"]), src(artifact, number, line))
            awaiting_memory |= {
                "product_name": gpu_row["name"].strip(),
                "persistence_mode": gpu_row["persist"] == "On",
                "bus_id": normalise_bus_id(gpu_row["bus"]),
            }
            gpus.append(awaiting_memory)
        elif awaiting_memory is not None and (memory := _TABLE_MEMORY.search(line)):
            awaiting_memory["fb_total_mib"] = int(memory["total"])
            awaiting_memory = None
    return {**top, "gpus": gpus}


def _parse_list(text: str, artifact: str) -> Section:
    gpus: list[dict[str, Any]] = []
    for number, line in numbered_lines(text):
        if row := _LIST_GPU.match(line):
            gpu = _blank(int(row["index"]), src(artifact, number, line))
            gpu |= {"product_name": row["name"].strip(), "uuid": row["uuid"], "mig_devices": 0}
            gpus.append(gpu)
        elif _LIST_MIG.match(line) and gpus:
            gpus[-1]["mig_devices"] += 1
    return {"driver_version": None, "cuda_version": None, "gpus": gpus}


def _csv_rows(lines: list[str]) -> list[list[str]]:
    """The CSV rows when the lines are ``--query-gpu`` output (header or not), else []."""
    try:
        cleaned = (line.replace("\r", " ") for line in lines)
        rows = [[cell.strip() for cell in row] for row in csv.reader(cleaned)]
    except csv.Error:  # a NUL, a stray quote: not an nvidia-smi CSV
        return []
    if not rows or len({len(row) for row in rows}) != 1 or len(rows[0]) < 2:
        return []
    body = rows[1:] if _csv_header(rows[0]) else rows
    if body and all(any(_BUS.match(c) or _UUID.match(c) for c in row) for row in body):
        return rows
    return []


def _csv_header(row: list[str]) -> list[str] | None:
    names = [cell.split(" [", 1)[0].strip().lower() for cell in row]
    named = any(name in _CSV_FIELDS for name in names)
    return names if named and not any(_BUS.match(cell) for cell in row) else None


def _parse_csv(text: str, artifact: str) -> Section:
    numbered = [(number, line) for number, line in numbered_lines(text) if line.strip()]
    rows = _csv_rows([line for _, line in numbered])
    header = _csv_header(rows[0])
    start = 1 if header else 0
    gpus: list[dict[str, Any]] = []
    driver = None
    for position, ((number, line), row) in enumerate(zip(numbered[start:], rows[start:], strict=True)):
        fields = _named_cells(header, row)
        index = _int(fields.get("index")) if "index" in fields else position
        gpu = _blank(index, src(artifact, number, line))
        for field, value in fields.items():
            if field != "index":
                gpu[field] = _csv_value(field, value)
        driver = driver or gpu.pop("driver_version", None)
        gpus.append(gpu)
    return {"driver_version": driver, "cuda_version": None, "gpus": gpus}


def _named_cells(header: list[str] | None, row: list[str]) -> dict[str, str]:
    """Each cell by the field it holds: by the header's names, or without one by its shape."""
    if header:
        pairs = zip(header, row, strict=True)
        return {_CSV_FIELDS[name]: cell for name, cell in pairs if name in _CSV_FIELDS}
    named: dict[str, str] = {}
    for position, cell in enumerate(row):
        if _BUS.match(cell):
            named["bus_id"] = cell
        elif _UUID.match(cell):
            named["uuid"] = cell
        elif _VERSION.match(cell):
            named.setdefault("driver_version", cell)
        elif position == 0 and cell.isdigit():
            named["index"] = cell
        elif any(c.isalpha() for c in cell) and "product_name" not in named and not cell.endswith("MiB"):
            named["product_name"] = cell
    return named


def _csv_value(field: str, value: str) -> Any:
    if value in ("", "N/A", "[N/A]", "[Not Supported]"):
        return None
    if field == "bus_id":
        return normalise_bus_id(value)
    if field == "persistence_mode":
        return {"Enabled": True, "Disabled": False}.get(value)
    if field in ("fb_total_mib",) or field.startswith("link_"):
        return _int(value.split()[0])
    return value


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.strip().isdigit() else None
