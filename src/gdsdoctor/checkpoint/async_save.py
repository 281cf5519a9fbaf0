"""Checkpoints written the way large jobs write them now: several nodes, and asynchronous saves.

Pure arithmetic on numbers (bytes, bytes/s, seconds); ``stall.run`` reads the strings and renders.

**Several nodes.** The checkpoint is sharded: each of ``nodes`` nodes writes ``total / nodes``. The
rate the whole checkpoint is written at is the smallest of what was given::

    B_storage = min(--throughput (aggregate), nodes × --per-node-throughput, --target-ceiling)

and the report names the one that binds (a target that absorbs 100 GB/s caps 8 nodes × 45 GB/s).

**Asynchronous saves** (PyTorch DCP ``async_save``, Megatron ``--async-save``, DeepSpeed's async
engines). The GPUs stall only for the device-to-host copy of their shard into (pinned) host memory;
a background process then persists it from host memory (that write does not use GDS)::

    shard_gpu  = total / gpus                   shard_node = total / nodes
    B_copy     = min(gpus_per_node × B_d2h, B_host)      (the GPUs of a node share its memory bandwidth)
    T_stall    = shard_node / B_copy            (= max(shard_gpu / B_d2h, shard_node / B_host))
    T_persist  = total / B_storage + t_fsync    must fit the window  interval − T_stall
    M_host     = shard_node × buffers           against --host-mem (each node's memory)

A persist that does not fit blocks the next save (or queues more host memory); a node without
``M_host`` of memory is OOM-killed during the save. ``B_d2h`` defaults to 25 GB/s per GPU (pinned
copies over PCIe Gen5 x16 measure 20-40 GB/s on H100), ``B_host`` to 200 GB/s per node (sustained
DRAM write bandwidth of a 2-socket server shared by its GPUs): both are inputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from gdsdoctor.errors import EstimateError

DEFAULT_D2H_BYTES_PER_S = 25e9  # per GPU: pinned device-to-host copy, PCIe Gen5 x16 (H100: 20-40 GB/s)
DEFAULT_HOST_COPY_BYTES_PER_S = 200e9  # per node: host memory bandwidth the GPUs' copies share
DEFAULT_GPUS_PER_NODE = 8
DEFAULT_BUFFERS = 2  # double buffering: the next save stages while the last persists

Binding = Literal["aggregate", "per-node", "target ceiling"]


@dataclass(frozen=True, slots=True)
class Layout:
    gpus: int
    nodes: int
    gpus_per_node: int


def layout(gpus: int | None, nodes: int | None, gpus_per_node: int | None) -> Layout:
    """GPUs, nodes and GPUs per node from what was given (any two decide the third)."""
    per_node = gpus_per_node or DEFAULT_GPUS_PER_NODE
    if nodes is None:
        total = gpus or 1
        return Layout(total, math.ceil(total / per_node), min(total, per_node))
    if gpus is None:
        return Layout(nodes * per_node, nodes, per_node)
    if gpus % nodes:
        raise EstimateError(
            f"{gpus} GPUs do not divide over {nodes} nodes: give --gpus-per-node or fix --gpus"
        )
    if gpus_per_node is not None and gpus != nodes * gpus_per_node:
        raise EstimateError(f"--gpus {gpus} is not --nodes {nodes} × --gpus-per-node {gpus_per_node}")
    return Layout(gpus, nodes, gpus // nodes)


@dataclass(frozen=True, slots=True)
class Storage:
    bytes_per_s: float
    binding: Binding
    per_node_bytes_per_s: float | None
    ceiling_bytes_per_s: float | None


def storage(aggregate: float | None, per_node: float | None, ceiling: float | None, nodes: int) -> Storage:
    """The rate the whole checkpoint is written at: the smallest of the rates given."""
    candidates: list[tuple[float, Binding]] = []
    if aggregate is not None:
        candidates.append((aggregate, "aggregate"))
    if per_node is not None:
        candidates.append((per_node * nodes, "per-node"))
    if not candidates:
        raise EstimateError("no write rate: give --throughput (aggregate) or --per-node-throughput")
    if ceiling is not None:
        candidates.append((ceiling, "target ceiling"))
    rate, binding = min(candidates, key=lambda c: c[0])
    return Storage(rate, binding, per_node, ceiling)


@dataclass(frozen=True, slots=True)
class AsyncSave:
    shard_per_gpu_bytes: float
    shard_per_node_bytes: float
    d2h_bytes_per_s: float  # per GPU
    host_copy_bytes_per_s: float | None  # per node (None: not limited)
    node_copy_bytes_per_s: float
    copy_binding: Literal["GPU link", "host memory"]
    stall_s: float  # the D2H copy: what the GPUs wait for
    persist_s: float  # the background write to storage (+ fsync)
    window_s: float  # interval − stall: the time the persist has before the next save
    headroom_s: float  # window − persist (negative: the persist does not keep up)
    buffers: int
    host_mem_needed_bytes: float  # per node
    host_mem_bytes: float | None  # per node, as given
    host_mem_fits: bool | None


def compute(
    total: float,
    lay: Layout,
    *,
    storage_bytes_per_s: float,
    fsync_s: float,
    interval_s: float,
    d2h_bytes_per_s: float = DEFAULT_D2H_BYTES_PER_S,
    host_copy_bytes_per_s: float | None = DEFAULT_HOST_COPY_BYTES_PER_S,
    buffers: int = DEFAULT_BUFFERS,
    host_mem_bytes: float | None = None,
) -> AsyncSave:
    shard_gpu = total / lay.gpus
    shard_node = shard_gpu * lay.gpus_per_node
    links = lay.gpus_per_node * d2h_bytes_per_s
    limited = host_copy_bytes_per_s is not None and host_copy_bytes_per_s <= links
    node_rate = host_copy_bytes_per_s if limited and host_copy_bytes_per_s else links
    stall = shard_node / node_rate
    persist = total / storage_bytes_per_s + fsync_s
    window = interval_s - stall
    needed = shard_node * buffers
    return AsyncSave(
        shard_per_gpu_bytes=shard_gpu,
        shard_per_node_bytes=shard_node,
        d2h_bytes_per_s=d2h_bytes_per_s,
        host_copy_bytes_per_s=host_copy_bytes_per_s,
        node_copy_bytes_per_s=node_rate,
        copy_binding="host memory" if limited else "GPU link",
        stall_s=stall,
        persist_s=persist,
        window_s=window,
        headroom_s=window - persist,
        buffers=buffers,
        host_mem_needed_bytes=needed,
        host_mem_bytes=host_mem_bytes,
        host_mem_fits=None if host_mem_bytes is None else needed <= host_mem_bytes,
    )


def keeps_up(result: AsyncSave) -> bool:
    """The persist finishes before the next save and every node holds its staging buffers."""
    return result.headroom_s >= 0 and result.host_mem_fits is not False
