"""fio's normal text output, as pasted into tickets: the jobs its JSON would give.

fio 3.x::

    seq_write: (g=0): rw=write, bs=(R) 8192B-8192B, (W) 8192B-8192B, (T) 8192B-8192B, ioengine=libaio, …
    fio-3.35
    seq_write: (groupid=0, jobs=8): err= 0: pid=171908: Thu Sep  5 03:52:31 2024
      write: IOPS=76.8k, BW=600MiB/s (629MB/s)(176GiB/300001msec); 0 zone resets
         lat (usec): min=25, max=9880, avg=415.63, stdev=101.22
        clat percentiles (usec):
         | 99.00th=[  930], 99.50th=[ 1012], ...

fio 2.x prints ``write: io=255624KB, bw=19933KB/s, iops=2491 , runt= 12824msec``, its K/M/G
being powers of 1024; fio 3.x prints its own unit first (``MiB``, or ``MB`` = 10^6 under
``kb_base=1000``). A paste of the summary alone (``Run status group 0 (all jobs):`` and its
``WRITE: bw=…`` lines) gives one job per group, named after it.

A paste indented as a whole (quoted in a ticket) reads alike. Not in the text, so None:
``direct`` (never guessed: buffered I/O is then not inferred), ``cuda_io``, ``gpu_dev_ids``,
``hostname``. ``numjobs`` is the block's ``jobs=N``.
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import head_lines, numbered_lines, src

_HEADER = lazy_compile(
    r"^\s*(?P<name>\S[^:]*?): \(g=(?P<group>\d+)\): rw=(?P<rw>\w+), bs=(?P<bs>.*?), "
    r"ioengine=(?P<engine>[\w.-]+), iodepth=(?P<depth>\d+)"
)
_VERSION = lazy_compile(r"^fio-\d+\.\d\S*$")
_RESULT = lazy_compile(
    r"^\s*(?P<name>\S[^:]*?): \(groupid=(?P<group>\d+), jobs=(?P<jobs>\d+)\): err=\s*(?P<err>-?\d+)"
)
_DIRECTION = lazy_compile(
    r"^\s+(?P<dir>read|write|trim)\s*: IOPS=(?P<iops>\d+(?:\.\d+)?[kMG]?), "
    r"BW=(?P<bw>\d+(?:\.\d+)?)(?P<bwu>[kKMGTP]?i?B)/s(?: \([^)]*\))?"
    r"\((?P<io>\d+(?:\.\d+)?)(?P<iou>[kKMGTP]?i?B)/(?P<runtime>\d+)msec\)"
)
_OLD_DIRECTION = lazy_compile(
    r"^\s+(?P<dir>read|write|trim)\s*: io=(?P<io>\d+(?:\.\d+)?)(?P<iou>[KMGTP]?B), "
    r"bw=(?P<bw>\d+(?:\.\d+)?)(?P<bwu>[KMGTP]?B)/s, iops=(?P<iops>\d+(?:\.\d+)?)\s*, "
    r"runt=\s*(?P<runtime>\d+)msec"
)
_LAT = lazy_compile(r"^\s+lat \((?P<unit>[num]sec)\): min=.*?avg=\s*(?P<avg>\d+(?:\.\d+)?)")
_PERCENTILES = lazy_compile(r"^\s+clat percentiles \((?P<unit>[num]sec)\):")
_P99 = lazy_compile(r"99\.00th=\[\s*(?P<value>\d+)\]")
_GROUP = lazy_compile(r"^\s*Run status group (?P<group>\d+) \(all jobs\):")
_GROUP_LINE = lazy_compile(
    r"^\s+(?P<dir>READ|WRITE|TRIM): bw=(?P<bw>\d+(?:\.\d+)?)(?P<bwu>[kKMGTP]?i?B)/s[^=]*"
    r"io=(?P<io>\d+(?:\.\d+)?)(?P<iou>[kKMGTP]?i?B)[^=]*run=\d+-(?P<runtime>\d+)msec"
)
_OLD_GROUP_LINE = lazy_compile(
    r"^\s+(?P<dir>READ|WRITE|TRIM): io=(?P<io>\d+(?:\.\d+)?)(?P<iou>[KMGTP]?B), "
    r"aggrb=(?P<bw>\d+(?:\.\d+)?)(?P<bwu>[KMGTP]?B)/s.*?maxt=\s*(?P<runtime>\d+)msec"
)
_SIZE = lazy_compile(r"(?P<n>\d+(?:\.\d+)?)(?P<unit>[kKMGTP]?)i?B?")
_POWERS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5}
_SCALE = {"k": 1e3, "M": 1e6, "G": 1e9}
_NS_PER = {"nsec": 1, "usec": 1_000, "msec": 1_000_000}


def looks_like_fio_text(text: str) -> bool:
    """A result block, or a run-status summary line, within the first lines."""
    return any(
        _RESULT.match(line) or _GROUP_LINE.match(line) or _OLD_GROUP_LINE.match(line)
        for line in head_lines(text, 400)
    )


def read_text(text: str, artifact: str) -> tuple[str | None, list[dict[str, Any]]]:
    """fio's version line (None if not pasted) and its jobs, in the JSON parser's shape."""
    headers: dict[str, dict[str, Any]] = {}
    jobs: list[_JobBlock] = []
    groups: list[dict[str, Any]] = []
    version = None
    for number, line in numbered_lines(text):
        if version is None and _VERSION.match(line.strip()):
            version = line.strip()
        elif header := _HEADER.match(line):
            headers.setdefault(header["name"], header.groupdict())
        elif result := _RESULT.match(line):
            jobs.append(_JobBlock(_job(result, headers.get(result["name"]), src(artifact, number, line))))
        elif group := _GROUP.match(line):
            groups.append(_job_of_group(int(group["group"]), src(artifact, number, line)))
        elif groups and (summary := _one_of(line, _GROUP_LINE, _OLD_GROUP_LINE)):
            match, old = summary
            groups[-1][match["dir"].lower()] = _direction(match, old)
        elif jobs:
            jobs[-1].read(line)
    return version, [block.job for block in jobs] or [g for g in groups if _has_io(g)]


def _one_of(line: str, new: Any, old: Any) -> tuple[Any, bool] | None:
    """The match of fio 3's form of a line or of fio 2's, and whether it is fio 2's."""
    if match := new.match(line):
        return match, False
    if match := old.match(line):
        return match, True
    return None


class _JobBlock:
    """The lines of one job's result block read into its job: the direction being read (its
    ``lat`` and percentile lines follow it) and whether a ``clat`` percentile table is open."""

    def __init__(self, job: dict[str, Any]) -> None:
        self.job = job
        self.current: dict[str, Any] | None = None
        self.percentiles_unit: str | None = None

    def read(self, line: str) -> None:
        if found := _one_of(line, _DIRECTION, _OLD_DIRECTION):
            match, old = found
            self.current = self.job[match["dir"]] = _direction(match, old)
            self.job["runtime_ms"] = max(self.job["runtime_ms"] or 0, self.current["runtime_ms"]) or None
            self.percentiles_unit = None
        elif self.current is None:
            return
        elif lat := _LAT.match(line):
            self.current["lat_mean_ns"] = float(lat["avg"]) * _NS_PER[lat["unit"]]
            self.percentiles_unit = None
        elif table := _PERCENTILES.match(line):
            self.percentiles_unit = table["unit"]
        elif self.percentiles_unit and (p99 := _P99.search(line)):
            self.current["clat_p99_ns"] = float(p99["value"]) * _NS_PER[self.percentiles_unit]
            self.percentiles_unit = None
        elif not line.lstrip().startswith("|"):
            self.percentiles_unit = None  # the table ended without a 99th percentile


def _job(result: Any, header: dict[str, Any] | None, where: dict[str, Any]) -> dict[str, Any]:
    header = header or {}
    engine = header.get("engine")
    return {
        "name": result["name"],
        "hostname": None,
        "groupid": int(result["group"]),
        "error": int(result["err"]),
        "ioengine": engine,
        "direct": None,
        "rw": header.get("rw"),
        "block_size_bytes": _block_size(header.get("bs"), header.get("rw")),
        "numjobs": int(result["jobs"]),
        "iodepth": int(header["depth"]) if header.get("depth") else None,
        "cuda_io": None,
        "gpu_dev_ids": None,
        "gds": engine == "libcufile",
        "runtime_ms": None,
        "read": _no_io(),
        "write": _no_io(),
        "src": where,
    }


def _job_of_group(group: int, where: dict[str, Any]) -> dict[str, Any]:
    job = _job({"name": f"group {group}", "group": group, "jobs": 1, "err": 0}, None, where)
    job["numjobs"] = None  # the summary does not say
    return job


def _no_io() -> dict[str, Any]:
    keys = ("bytes_per_s", "iops", "io_bytes", "runtime_ms", "lat_mean_ns", "clat_p99_ns")
    return dict.fromkeys(keys)


def _has_io(job: dict[str, Any]) -> bool:
    return any(job[d]["bytes_per_s"] for d in ("read", "write"))


def _direction(match: Any, old: bool) -> dict[str, Any]:
    found = match.groupdict()
    iops = found.get("iops")
    return {
        "bytes_per_s": _bytes(found["bw"], found["bwu"], old),
        "iops": _count(iops) if iops else None,
        "io_bytes": int(_bytes(found["io"], found["iou"], old)),
        "runtime_ms": int(found["runtime"]),
        "lat_mean_ns": None,
        "clat_p99_ns": None,
    }


def _bytes(number: str, unit: str, old: bool) -> float:
    """fio 2.x's K/M/G are powers of 1024; fio 3.x's KiB/MiB are, its kB/MB are of 1000."""
    letter = unit[:1].upper() if unit[:1].upper() in "KMGTP" else ""  # "B", or a garbled "iB"
    base = 1024 if old or "i" in unit else 1000
    return float(number) * base ** _POWERS[letter]


def _count(text: str) -> float:
    """``76.8k`` → 76800 (fio abbreviates IOPS with SI letters)."""
    if text[-1] in _SCALE:
        return float(text[:-1]) * _SCALE[text[-1]]
    return float(text)


def _block_size(bs: str | None, rw: str | None) -> int | None:
    """The block size of the job's main direction: ``(R) 8192B-8192B, (W) 1024KiB-1024KiB, …``
    (fio 3) or ``1M-1M/1M-1M/1M-1M`` (fio 2: read/write/trim), in bytes."""
    if not bs:
        return None
    parts = [p.strip() for p in (bs.split(",") if "(" in bs else bs.split("/"))]
    wanted = 1 if rw and "write" in rw and "read" not in rw and "rw" not in rw else 0
    part = parts[wanted] if wanted < len(parts) else parts[0]
    match = _SIZE.match(part.split(")")[-1].strip())
    if not match:
        return None
    base = 1024  # fio 2's K/M and fio 3's KiB/MiB alike
    return int(float(match["n"]) * base ** _POWERS[match["unit"].upper()])
