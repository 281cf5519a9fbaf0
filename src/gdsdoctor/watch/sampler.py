"""One sample of the counters that say how the checkpoint is being written.

Each source is read under ``root`` and parsed by a pure function of its text (tested on recorded
files): /proc/diskstats, /sys/block/*/inflight, /proc/meminfo, nvidia-fs statistics, NVMe
controller and ANA states, RDMA port counters, NFS client statistics and the filesystem's used
bytes. A source that cannot be read is left out of the sample and named once in ``unreadable``:
the timeline then says what was not measured, never that it was zero.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

from gdsdoctor.checkpoint.records import RDMA_ERROR_COUNTERS
from gdsdoctor.watch.open_writes import OpenWrites
from gdsdoctor.watch.writers import Writers

SECTOR = 512
# /proc/diskstats columns after the name (Documentation/admin-guide/iostats.rst), the ones kept.
_DISK_FIELDS = {
    "reads": 0,
    "read_sectors": 2,
    "writes": 4,
    "write_sectors": 6,
    "write_ms": 7,
    "in_flight": 8,
    "io_ms": 9,
}
_NVFS_RATE = re.compile(r"^(Reads|Writes)\s*:\s*n=(\d+)\s+ok=(\d+)\s+err=(\d+)", re.M)
_NVFS_MIB = re.compile(r"^(?:Reads|Writes)\s*:.*?\b(read|write)MiB=(\d+)", re.M)
RDMA_COUNTERS = ("port_xmit_data", "port_rcv_data", *RDMA_ERROR_COUNTERS)


def parse_diskstats(text: str, names: set[str]) -> dict[str, dict[str, int]]:
    """The kept counters of the devices in ``names`` (bytes for sectors)."""
    disks: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 14 or fields[2] not in names:
            continue
        try:
            values = [int(v) for v in fields[3:14]]
        except ValueError:
            continue
        row = {key: values[index] for key, index in _DISK_FIELDS.items()}
        row["read_bytes"] = row.pop("read_sectors") * SECTOR
        row["write_bytes"] = row.pop("write_sectors") * SECTOR
        disks[fields[2]] = row
    return disks


def parse_inflight(text: str) -> tuple[int, int] | None:
    """/sys/block/X/inflight: reads and writes in flight."""
    fields = text.split()
    return (int(fields[0]), int(fields[1])) if len(fields) == 2 and all(f.isdigit() for f in fields) else None


def parse_meminfo(text: str) -> dict[str, int]:
    """Dirty and Writeback in bytes: data written through the page cache, not yet on the device."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("Dirty", "Writeback"):
            number = value.split()
            if number and number[0].isdigit():
                found[key.lower() + "_bytes"] = int(number[0]) * 1024
    return found


_BDI_KEYS = {
    "BdiDirtied": "dirtied_bytes",
    "BdiWritten": "written_bytes",
    "BdiWriteback": "writeback_bytes",
    "BdiReclaimable": "reclaimable_bytes",
}


def parse_bdi_stats(text: str) -> dict[str, int]:
    """One device's own page-cache counters (``/sys/kernel/debug/bdi/MAJ:MIN/stats``, kB): the
    pages dirtied on it and written back from it since boot, and those dirty or under writeback
    now. Unlike /proc/meminfo's Dirty, they count this device alone: a loop device's backing file,
    or another disk's writes, do not move them.

    >>> parse_bdi_stats("BdiWriteback:   64 kB\\nBdiDirtied:   1864 kB\\nBdiWritten:  1536 kB\\n")
    {'writeback_bytes': 65536, 'dirtied_bytes': 1908736, 'written_bytes': 1572864}
    """
    found: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in _BDI_KEYS and (number := value.split()) and number[0].isdigit():
            found[_BDI_KEYS[key.strip()]] = int(number[0]) * 1024
    return found


def bdi_stats_path(resolved: dict[str, Any]) -> str | None:
    """Where the device of the checkpoint's filesystem keeps its page-cache counters (its
    MAJ:MIN, that of the filesystem's own block device), or None without a block device."""
    dev = str(resolved.get("dev") or "")
    major, colon, minor = dev.partition(":")
    if not resolved.get("top") or not (colon and major.isdigit() and minor.isdigit()):
        return None
    return f"sys/kernel/debug/bdi/{dev}/stats"


def bdi_note(resolved: dict[str, Any], root: Path = Path("/")) -> str | None:
    """Said once in the header when the device's page-cache counters cannot be read (debugfs not
    mounted, or not root): direct and buffered writes are then told apart from the writers' open
    files alone, or from the host's Dirty and Writeback."""
    relative = bdi_stats_path(resolved)
    if relative is None:
        return None
    try:
        (root / relative).read_text()
    except OSError as error:
        return (
            f"/{relative}: {error.strerror or type(error).__name__} (debugfs, root): the device's own "
            "page-cache counters are not read; direct and buffered writes are told from the writers' "
            "open files, else from the whole host's Dirty and Writeback"
        )
    return None


def parse_nvfs_stats(text: str) -> dict[str, int]:
    """GDS operation counts and bytes from /proc/driver/nvidia-fs/stats (rates and errors lines)."""
    found: dict[str, int] = {}
    for op, n, ok, err in _NVFS_RATE.findall(text):
        key = op.lower()
        found[f"{key}_ops"], found[f"{key}_ok"], found[f"{key}_errors"] = int(n), int(ok), int(err)
    for op, mib in _NVFS_MIB.findall(text):
        found[f"{op}_bytes"] = int(mib) * 2**20
    return found


def parse_mountstats(text: str, mount: str) -> dict[str, int]:
    """NFS client bytes written and WRITE operations for the mount at ``mount``
    (/proc/self/mountstats: the ``bytes:`` line and the per-op ``WRITE:`` line)."""
    inside = False
    found: dict[str, int] = {}
    for line in text.splitlines():
        if line.startswith("device "):
            inside = f" mounted on {mount} with fstype nfs" in line
            continue
        if not inside:
            continue
        fields = line.split()
        if fields[:1] == ["bytes:"] and len(fields) >= 7:
            # normal read, normal write, direct read, direct write, server read, server write
            found["buffered_write_bytes"] = int(fields[2])
            found["direct_write_bytes"] = int(fields[4])
            found["write_bytes"] = int(fields[6])  # what reached the server
        elif fields[:1] == ["WRITE:"] and len(fields) >= 2:
            found["writes"] = int(fields[1])
    return found


class Sampler:
    """Reads one sample of the devices of ``resolved`` (see ``devices.resolve``) under ``root``."""

    def __init__(self, resolved: dict[str, Any], root: Path = Path("/")) -> None:
        self.root = root
        self.resolved = resolved
        self.disks = [n for n in [resolved.get("top"), *resolved.get("below", [])] if n]
        self.unreadable: dict[str, str] = {}  # source -> why, once
        fstype = str(resolved.get("fstype") or "")
        # A network filesystem other than NFS: its writers' own accounting is the measure.
        self.writers = (
            Writers(resolved["mount"], root)
            if resolved.get("network") and not fstype.startswith("nfs")
            else None
        )
        # How the writers opened their files: the page cache's evidence for this filesystem alone.
        self.open_writes = OpenWrites(resolved["mount"], root) if resolved.get("mount") else None
        self._written: int | None = None  # the top device's bytes at the last sample
        self._bdi = bdi_stats_path(resolved)  # None once found unreadable (said in the header)

    def _read(self, relative: str) -> str | None:
        try:
            return (self.root / relative).read_text(errors="replace")
        except OSError as error:
            self.unreadable.setdefault("/" + relative, error.strerror or type(error).__name__)
            return None

    def sample(self) -> dict[str, Any]:
        sample: dict[str, Any] = {"type": "sample", "t": round(time.time(), 3)}
        if self.disks and (text := self._read("proc/diskstats")) is not None:
            disks = parse_diskstats(text, set(self.disks))
            for name, row in disks.items():
                inflight = self._optional(f"sys/class/block/{name}/inflight")
                if inflight is not None and (pair := parse_inflight(inflight)):
                    row["inflight_w"] = pair[1]
            sample["disks"] = disks
        if (text := self._read("proc/meminfo")) is not None:
            sample["mem"] = parse_meminfo(text)
        if self._bdi is not None:
            try:
                sample["bdi"] = parse_bdi_stats((self.root / self._bdi).read_text())
            except OSError:  # the header's note says so (bdi_note)
                self._bdi = None
        if (text := self._optional("proc/driver/nvidia-fs/stats")) is not None:
            sample["nvfs"] = parse_nvfs_stats(text)
        sample |= self._nvme_states()
        if rdma := self._rdma():
            sample["rdma"] = rdma
        nfs = str(self.resolved.get("fstype") or "").startswith("nfs")
        if nfs and (text := self._read("proc/self/mountstats")) is not None:
            sample["nfs"] = parse_mountstats(text, self.resolved["mount"])
        if (used := self._used_bytes()) is not None:
            sample["fs_used_bytes"] = used
        if self.writers is not None:
            sample["writers"] = self.writers.sample()
        if self.open_writes is not None:
            row = (sample.get("disks") or {}).get(self.resolved.get("top") or "") or {}
            written = row.get("write_bytes")
            writing = written is not None and self._written is not None and written > self._written
            self._written = written
            if (opened := self.open_writes.sample(writing)) is not None:
                sample["open_writes"] = opened
        return sample

    def _optional(self, relative: str) -> str | None:
        """A file that many hosts simply do not have (no nvidia-fs): absent is not a failure."""
        try:
            return (self.root / relative).read_text(errors="replace")
        except FileNotFoundError:
            return None
        except OSError as error:
            self.unreadable.setdefault("/" + relative, error.strerror or type(error).__name__)
            return None

    def _nvme_states(self) -> dict[str, Any]:
        states: dict[str, Any] = {}
        controllers = {
            c: s.strip()
            for c in self.resolved.get("controllers", [])
            if (s := self._optional(f"sys/class/nvme/{c}/state")) is not None
        }
        if controllers:
            states["ctrl"] = controllers
        ana = {
            n: s.strip()
            for n in self.disks
            if n.startswith("nvme") and (s := self._optional(f"sys/class/block/{n}/ana_state")) is not None
        }
        if ana:
            states["ana"] = ana
        return states

    def _rdma(self) -> dict[str, dict[str, int]]:
        ports: dict[str, dict[str, int]] = {}
        base = self.root / "sys/class/infiniband"
        try:
            hcas = sorted(os.listdir(base))
        except OSError:
            return ports
        for hca in hcas:
            try:
                numbers = sorted(os.listdir(base / hca / "ports"))
            except OSError:
                continue
            for port in numbers:
                counters = {}
                for name in RDMA_COUNTERS:
                    text = self._optional(f"sys/class/infiniband/{hca}/ports/{port}/counters/{name}")
                    if text is not None and text.strip().isdigit():
                        counters[name] = int(text)
                if counters:
                    ports[f"{hca}/{port}"] = counters
        return ports

    def _used_bytes(self) -> int | None:
        mount = self.resolved.get("mount")
        if not mount:
            return None
        try:
            info = os.statvfs(self.root / mount.lstrip("/"))
        except OSError as error:
            self.unreadable.setdefault(f"statvfs({mount})", error.strerror or type(error).__name__)
            return None
        return (info.f_blocks - info.f_bfree) * info.f_frsize


def static_facts(resolved: dict[str, Any], root: Path = Path("/")) -> dict[str, Any]:
    """What does not change during a watch: queue depths (nr_requests) of the devices, the line
    rates of their links (PCIe of NVMe controllers, RDMA port rates) and the loop devices that
    write their backing file through the page cache, for the limiters."""
    disks = [n for n in [resolved.get("top"), *resolved.get("below", [])] if n]
    depth = {}
    for name in disks:
        text = _text(root / f"sys/class/block/{name}/queue/nr_requests")
        if text and text.isdigit():
            depth[name] = int(text)
    rates: dict[str, float] = {}
    for controller in resolved.get("controllers", []):
        if (rate := pcie_rate(root / f"sys/class/nvme/{controller}/device")) is not None:
            rates[f"{controller} PCIe link"] = rate
    rates |= rdma_rates(root)
    # A loop device without direct I/O writes its backing file through the host's page cache.
    buffered = [n for n in disks if _text(root / f"sys/class/block/{n}/loop/dio") == "0"]
    return {"queue_depth": depth, "line_rates": rates, "buffered_below": buffered}


def _text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def pcie_rate(device: Path) -> float | None:
    """Bytes/s of the link of a PCI device from current_link_speed ("16.0 GT/s PCIe") × width."""
    from gdsdoctor.checkpoint.line_rate import PCIE_GT_PER_S, BenchError, pcie_link_bytes_per_s

    speed, width = _text(device / "current_link_speed"), _text(device / "current_link_width")
    if not speed or not width or not width.isdigit():
        return None
    match = re.match(r"^([\d.]+)\s*GT/s", speed)
    generation = next((g for g, gt in PCIE_GT_PER_S.items() if match and float(match[1]) == gt), None)
    try:
        return pcie_link_bytes_per_s(generation, int(width)) if generation else None
    except BenchError:
        return None


def rdma_rates(root: Path) -> dict[str, float]:
    """Bytes/s of each RDMA port from its ``rate`` file ("200 Gb/sec (4X HDR)")."""
    rates: dict[str, float] = {}
    base = root / "sys/class/infiniband"
    for rate_file in sorted(base.glob("*/ports/*/rate")) if base.is_dir() else []:
        match = re.match(r"^([\d.]+)\s*Gb/sec", _text(rate_file) or "")
        if match:
            rates[f"{rate_file.parts[-4]} port {rate_file.parts[-2]}"] = float(match[1]) * 1e9 / 8
    return rates
