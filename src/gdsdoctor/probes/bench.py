"""Throughput measurements: fio JSON and gdsio text, as ``gdsdoctor bench`` stores them or as pasted.

Neither is captured live: ``gdsdoctor bench`` runs fio or gdsio and stores the raw output as the
artifact ``bench/fio.json`` or ``bench/gdsio.txt``. The sources therefore name only the artifact
(no command, no path, no reader); a bundle or a paste supplies the text.

Section ``fio`` (``fio --output-format=json``, fio 2.x to 3.x; fio's text output, read by
``fio_text``, gives the same jobs with ``"format": "text"``)::

    version      "fio-3.20"
    jobs         [{name, groupid, error, ioengine, direct, rw, block_size_bytes, numjobs, iodepth,
                   cuda_io, gpu_dev_ids, gds, runtime_ms,
                   read:  {bytes_per_s, iops, io_bytes, runtime_ms, lat_mean_ns, clat_p99_ns},
                   write: {...same...}, src}]
    aggregate    {read_bytes_per_s, write_bytes_per_s, read_iops, write_iops}  (None: no such I/O)
    gds          any job used ioengine=libcufile with cuda_io=cufile

Units are normalised across versions: ``bw_bytes`` (fio ≥ 3.2) or ``bw`` KiB/s × 1024;
``lat_ns`` (≥ 3.0) or ``lat`` µs × 1000; ``io_bytes`` was KiB before fio 2.21. Latencies that fio
did not measure (``gtod_reduce=1``, N = 0) are None. Aggregates sum the jobs of one reporting
group (they run concurrently) and take the best group (groups run one after another).

Section ``gdsio`` (one line per run)::

    IoType: READ XferType: GPUD Threads: 8 DataSetSize: 818796544/4096000(KiB) IOSize: 1024(KiB)
    Throughput: 6.524658 GiB/sec, Avg_Latency: 1197.370995 usecs ops: 799606 total_time 119.679102 secs

    runs     [{io_type, xfer_type, threads, io_depth, dataset_done_bytes, dataset_total_bytes,
               io_size_bytes, throughput_bytes_per_s, throughput_gib_per_s, avg_latency_us, ops,
               total_time_s, command, src}]
    best     [{io_type, xfer_type, throughput_bytes_per_s, runs}]  (best run per io_type × xfer_type)
    errors   [{text, src}]  (gdsio error lines, e.g. "file register error: ...")

A run pasted as a fragment (``Throughput: 2.31 GiB/sec, Avg_Latency: 81215.06 usecs`` only) keeps
its throughput and latency with the other fields None. ``command`` is the last gdsio command line
seen before the run (for humans: gdsio's own output is more reliable than its command line).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, Source, head_lines, numbered_lines, src
from gdsdoctor.probes.fio_text import looks_like_fio_text, read_text

GIB = 2**30
KIB = 1024

# --- fio ---------------------------------------------------------------------------------------

_FIO_VERSION = lazy_compile(r"fio-(\d+)\.(\d+)")
_JOBNAME_LINE = lazy_compile(r'"jobname"\s*:')
_FIO_SIZE = lazy_compile(r"^\s*(\d+(?:\.\d+)?)\s*(?!\s)([kmgtp]?)(i?)(b?)\s*", re.IGNORECASE)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def _json_start(text: str) -> tuple[int, int]:
    """Offset and 0-based line index of the JSON object (fio may print banner lines first)."""
    offset = 0
    for index, line in enumerate(text.split("\n")):
        if line.lstrip().startswith("{"):
            return offset + len(line) - len(line.lstrip()), index
        offset += len(line) + 1
    raise ParseError("no JSON object (expected `fio --output-format=json` output)")


def _load_fio(text: str) -> tuple[dict[str, Any], int]:
    offset, first_line = _json_start(text)
    try:
        document, _ = json.JSONDecoder().raw_decode(text, offset)
    except (ValueError, RecursionError) as error:
        raise ParseError(f"fio JSON does not parse (truncated?): {str(error)[:80]}", first_line + 1) from None
    if not isinstance(document, dict) or not ("jobs" in document or "client_stats" in document):
        raise ParseError("JSON without fio's `jobs` list (not fio --output-format=json)", first_line + 1)
    return document, first_line


def _version(document: dict[str, Any]) -> tuple[str | None, tuple[int, int]]:
    raw = document.get("fio version")
    text = raw if isinstance(raw, str) else None
    match = _FIO_VERSION.search(text or "")
    # Unknown version: assume a modern fio (the unit traps only concern fio < 3).
    return text, (int(match[1]), int(match[2])) if match else (3, 99)


def _number(value: Any) -> float | None:
    """A finite number from fio's JSON (numbers, or strings in option dicts), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def fio_size(value: Any, kb_base: int = 1024) -> int | None:
    """fio size option (``1M``, ``4k``, ``128KiB``, ``1M,512K`` → first) in bytes; None for ranges.

    fio's default ``kb_base=1024`` inverts the standards for compatibility: ``4k``/``4KB`` are
    4096 bytes and ``4KiB`` is 4000; with ``kb_base=1000`` it is the other way round.
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value) if math.isfinite(value) and value >= 0 else None
    if not isinstance(value, str):
        return None
    first = value.split(",")[0].split(":")[0]
    match = _FIO_SIZE.fullmatch(first)
    if not match:
        return None
    iec_letters = bool(match[3])
    base = (1000 if iec_letters else 1024) if kb_base == 1024 else (1024 if iec_letters else 1000)
    return int(float(match[1]) * base ** _POWERS[match[2].lower()])


def _options(document: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    glob = document.get("global options")
    if isinstance(glob, list) and glob and isinstance(glob[0], dict):  # fio-plot accepts a 1-list
        glob = glob[0]
    for options in (glob, job.get("job options")):
        if isinstance(options, dict):
            merged.update(options)
    return merged


def _latency_ns(section: dict[str, Any], key: str, old: bool) -> float | None:
    stats = section.get(f"{key}_ns") if not old else section.get(key)
    if not isinstance(stats, dict):
        stats, old = section.get(key), True  # fio < 3.0 wrote µs under the bare name
    if not isinstance(stats, dict) or _number(stats.get("N")) == 0:
        return None
    mean = _number(stats.get("mean"))
    return None if mean is None else mean * (1000 if old else 1)


def _p99_ns(section: dict[str, Any], old: bool) -> float | None:
    stats = section.get("clat" if old else "clat_ns")
    percentiles = stats.get("percentile") if isinstance(stats, dict) else None
    if not isinstance(percentiles, dict):
        return None
    value = next((_number(v) for k, v in percentiles.items() if str(k).startswith("99.00")), None)
    return None if not value else value * (1000 if old else 1)


def _direction(section: Any, version: tuple[int, int]) -> dict[str, Any]:
    section = section if isinstance(section, dict) else {}
    rate = _number(section.get("bw_bytes"))
    if rate is None:
        kib = _number(section.get("bw"))
        rate = None if kib is None else kib * KIB
    io = _number(section.get("io_bytes"))
    if io is not None and "io_kbytes" not in section and version < (2, 21):
        io *= KIB  # before fio-2.21 io_bytes held KiB
    old = version < (3, 0)
    iops, runtime = _number(section.get("iops")), _number(section.get("runtime"))
    return {
        "bytes_per_s": rate,
        "iops": iops,
        "io_bytes": None if io is None else int(io),
        "runtime_ms": None if runtime is None else int(runtime),
        "lat_mean_ns": _latency_ns(section, "lat", old),
        "clat_p99_ns": _p99_ns(section, old),
    }


def _flag(value: Any) -> bool | None:
    number = _number(value)
    return None if number is None else number != 0


def _job(document: dict[str, Any], job: dict[str, Any], version: tuple[int, int], where: dict) -> dict:
    options = _options(document, job)
    kb_base = 1000 if str(options.get("kb_base")) == "1000" else 1024
    direct = _flag(options.get("direct"))
    if direct is None:
        buffered = _flag(options.get("buffered"))
        direct = (not buffered) if buffered is not None else False  # fio's default is buffered I/O
    engine = options.get("ioengine") if isinstance(options.get("ioengine"), str) else None
    cuda_io = options.get("cuda_io") if isinstance(options.get("cuda_io"), str) else None
    numjobs, iodepth, runtime = (_number(options.get("numjobs")), _number(options.get("iodepth")),
                                 _number(job.get("job_runtime")))  # fmt: skip
    return {
        "name": str(job.get("jobname", "")),
        "hostname": job.get("hostname") if isinstance(job.get("hostname"), str) else None,
        "groupid": _int_or_none(job.get("groupid")),
        "error": _int_or_none(job.get("error")),
        "ioengine": engine,
        "direct": direct,
        "rw": options.get("rw") or options.get("readwrite") or None,
        "block_size_bytes": fio_size(options.get("bs", options.get("blocksize", "4k")), kb_base),
        "numjobs": int(numjobs) if numjobs else 1,
        "iodepth": int(iodepth) if iodepth else 1,
        "cuda_io": cuda_io,
        "gpu_dev_ids": options.get("gpu_dev_ids") if isinstance(options.get("gpu_dev_ids"), str) else None,
        "gds": engine == "libcufile" and cuda_io != "posix",
        "runtime_ms": None if runtime is None else int(runtime),
        "read": _direction(job.get("read"), version),
        "write": _direction(job.get("write"), version),
        "src": where,
    }


def _int_or_none(value: Any) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


def _aggregate(jobs: list[dict[str, Any]]) -> dict[str, float | None]:
    """Sum within a reporting group (concurrent jobs), best group (groups run in sequence)."""
    result: dict[str, float | None] = {}
    for direction in ("read", "write"):
        for metric, key in (("bytes_per_s", f"{direction}_bytes_per_s"), ("iops", f"{direction}_iops")):
            groups: dict[Any, float] = {}
            for job in jobs:
                value = job[direction][metric]
                if job["name"] != "All clients" and value and (job[direction]["io_bytes"] or 0) > 0:
                    groups[job["groupid"]] = groups.get(job["groupid"], 0.0) + value
            result[key] = max(groups.values()) if groups else None
    return result


def parse_fio(text: str, artifact: str) -> Section:
    if not _has_json_line(text) and looks_like_fio_text(text):
        return _fio_text_section(text, artifact)
    document, first_line = _load_fio(text)
    version_text, version = _version(document)
    raw_jobs = document.get("jobs") if "jobs" in document else document.get("client_stats")
    if not isinstance(raw_jobs, list):
        raise ParseError("fio JSON `jobs` is not a list", first_line + 1)
    lines = text.split("\n")
    job_lines = [i for i, line in enumerate(lines) if i >= first_line and _JOBNAME_LINE.search(line)]
    jobs = []
    for index, job in enumerate(item for item in raw_jobs if isinstance(item, dict)):
        line = job_lines[index] if index < len(job_lines) else first_line
        jobs.append(_job(document, job, version, src(artifact, line + 1, lines[line])))
    if not jobs:
        raise ParseError("fio JSON has no jobs", first_line + 1)
    return {
        "version": version_text,
        "jobs": jobs,
        "aggregate": _aggregate(jobs),
        "gds": any(job["gds"] for job in jobs),
    }


def _fio_text_section(text: str, artifact: str) -> Section:
    version, jobs = read_text(text, artifact)
    if not jobs:
        raise ParseError("no fio result (`NAME: (groupid=…)` blocks or `Run status group` lines with I/O)")
    return {
        "version": version,
        "format": "text",
        "jobs": jobs,
        "aggregate": _aggregate(jobs),
        "gds": any(job["gds"] for job in jobs),
    }


def _has_json_line(text: str) -> bool:
    return any(line.lstrip().startswith("{") for line in head_lines(text, 2000))


def recognise_fio(text: str) -> bool:
    head = "\n".join(head_lines(text, 100))
    return ('"fio version"' in head and "{" in head) or looks_like_fio_text(text)


# --- gdsio -------------------------------------------------------------------------------------

# A value is one word without a colon (READ, RANDWRITE; GPUD, CPU_GPU): `\S+` ran to the end of a
# line of "IoType:IoType:…" from each of them and back (109 KiB: 16.5 s).
_GDSIO_RUN = lazy_compile(
    r"IoType:\s*(?P<io_type>[^\s:]{1,64})\s+XferType:\s*(?P<xfer_type>[^\s:]{1,64})\s+Threads:\s*(?P<threads>\d+)"
    r"(?:\s+IoDepth:\s*(?P<io_depth>\d+))?"
    r"\s+DataSetSize:\s*(?P<done>\d+)/(?P<total>\d+)\s*\(KiB\)\s+IOSize:\s*(?P<io_size>\d+)\s*\(KiB\)"
    r"\s+(?P<rest>Throughput:.*)"
)
_GDSIO_RESULT = lazy_compile(
    r"Throughput:\s*(?P<gib>\d+(?:\.\d+)?)\s*GiB/sec,?\s*Avg_Latency:\s*(?P<lat>\d+(?:\.\d+)?)\s*usecs"
    r"(?:\s+ops:\s*(?P<ops>\d+))?(?:\s+total_time\s+(?P<time>\d+(?:\.\d+)?)\s*secs)?"
)
_GDSIO_COMMAND = lazy_compile(r"(?:^|[\s/`'\"])gdsio\s+\S")
# "file register error: …", "write io failed … ret: -5"; not a bare heading such as "Error Output:".
# Searched in two steps (the first "error", then a colon with text after it): `error.*:\s*\S`
# tried every "error" of a line against the rest of it (a 109 KiB line: over 15 s).
_ERROR_WORD = lazy_compile(r"\berror\b", re.IGNORECASE)
_COLON_TEXT = lazy_compile(r":\s*\S")
_FAILED_WORD = lazy_compile(r"\bfailed\b", re.IGNORECASE)


def _gdsio_error(line: str) -> bool:
    first = _ERROR_WORD.search(line)
    return bool(first and _COLON_TEXT.search(line, first.end())) or bool(_FAILED_WORD.search(line))


def _gdsio_run(line: str, command: str | None, where: dict) -> dict[str, Any] | None:
    full = _GDSIO_RUN.search(line)
    result = _GDSIO_RESULT.search(full["rest"] if full else line)
    if not result:
        return None
    gib = float(result["gib"])

    def field(name: str, scale: int = 1) -> int | None:
        return int(full[name]) * scale if full and full[name] is not None else None

    return {
        "io_type": full["io_type"] if full else None,
        "xfer_type": full["xfer_type"] if full else None,
        "threads": field("threads"),
        "io_depth": field("io_depth"),
        "dataset_done_bytes": field("done", KIB),
        "dataset_total_bytes": field("total", KIB),
        "io_size_bytes": field("io_size", KIB),
        "throughput_bytes_per_s": gib * GIB,
        "throughput_gib_per_s": gib,
        "avg_latency_us": float(result["lat"]),
        "ops": int(result["ops"]) if result["ops"] else None,
        "total_time_s": float(result["time"]) if result["time"] else None,
        "command": command,
        "inferred": False,
        "src": where,
    }


def _best(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    best: dict[tuple[str, str], dict[str, Any]] = {}
    for run in runs:
        if run["io_type"] is None or run["xfer_type"] is None or run["inferred"]:
            continue
        key = (run["io_type"], run["xfer_type"])
        entry = best.setdefault(key, {"io_type": key[0], "xfer_type": key[1], "throughput_bytes_per_s": 0.0,
                                      "runs": 0})  # fmt: skip
        entry["runs"] += 1
        entry["throughput_bytes_per_s"] = max(entry["throughput_bytes_per_s"], run["throughput_bytes_per_s"])
    return list(best.values())


# A pasted fragment (`Throughput: … GiB/sec` alone) says neither I/O nor transfer type: take them from the
# text before it — an XferType name in the lines since the previous result, else the gdsio command's -x/-I.
_XFER_BY_FLAG = {"0": "GPUD", "1": "CPUONLY", "2": "CPU_GPU", "5": "GPUD_ASYNC", "6": "GPU_BATCH"}
_IO_BY_FLAG = {"0": "READ", "1": "WRITE", "2": "RANDREAD", "3": "RANDWRITE"}
_XFER_NAME = lazy_compile(r"\b(GPUD_ASYNC|GPU_BATCH|GPUD|CPU_GPU|CPUONLY)\b")
_X_FLAG = lazy_compile(r"\s-x\s*([0-9])(?![\w.])")
_I_FLAG = lazy_compile(r"\s-I\s*([0-3])(?![\w.])")
_IO_WORD = lazy_compile(r"\b(rand(?:om)?\s*)?(read|write)\b", re.IGNORECASE)


def _infer_fragment(run: dict[str, Any], context: list[str], command: str | None) -> None:
    """Fill a fragment's io_type/xfer_type from what was pasted before it (``inferred`` says so)."""
    if run["io_type"] is not None or run["xfer_type"] is not None:
        return
    text = " ".join(context)
    names = _XFER_NAME.findall(text)
    flag = _X_FLAG.search(" " + (command or ""))
    xfer = names[-1] if names else _XFER_BY_FLAG.get(flag[1]) if flag else None
    io_flag = _I_FLAG.search(" " + (command or ""))
    io_type = _IO_BY_FLAG.get(io_flag[1]) if io_flag else None
    if io_type is None and (word := _IO_WORD.search(text)):
        io_type = ("RAND" if word[1] else "") + word[2].upper()
    if xfer and io_type:
        run.update(io_type=io_type, xfer_type=xfer, inferred=True)


def parse_gdsio(text: str, artifact: str) -> Section:
    runs, errors, command = [], [], None
    context: list[str] = []  # the lines since the previous result
    for number, line in numbered_lines(text):
        where = src(artifact, number, line)
        run = _gdsio_run(line, command, where)
        if run:
            _infer_fragment(run, context, command)
            runs.append(run)
            context = []
            continue
        context.append(line)
        if _GDSIO_COMMAND.search(line):
            command = line.strip()[:500]
        elif _gdsio_error(line):
            errors.append({"text": line.strip()[:500], "src": where})
    if not runs and not (errors and command):
        raise ParseError("no gdsio result lines (expected `IoType: … Throughput: … GiB/sec …`)")
    return {"runs": runs, "best": _best(runs), "errors": errors}


def recognise_gdsio(text: str) -> bool:
    head = head_lines(text, 100)
    if any(_GDSIO_RUN.search(line) or _GDSIO_RESULT.search(line) for line in head):
        return True
    has_command = any(_GDSIO_COMMAND.search(line) and "gdsio -" in line for line in head)
    return has_command and any("file register error" in line or "io failed" in line for line in head)


PROBES: tuple[Probe, ...] = (
    Probe(
        section="fio",
        title="fio benchmark result (JSON or text), from `gdsdoctor bench` or pasted",
        sources=(Source("bench/fio.json", how="gdsdoctor bench PATH"),),
        parse=parse_fio,
        recognise=recognise_fio,
        paste_hint="the output of `fio --output-format=json …` (or fio's text output)",
        tags=("bench", "throughput"),
    ),
    Probe(
        section="gdsio",
        title="gdsio benchmark result lines, from `gdsdoctor bench` or pasted",
        sources=(Source("bench/gdsio.txt", how="gdsdoctor bench PATH"),),
        parse=parse_gdsio,
        recognise=recognise_gdsio,
        paste_hint="the output of `gdsio …` (the `IoType: … Throughput: …` lines), with the command",
        tags=("bench", "throughput", "gds"),
    ),
)
