"""What ``nvidia-smi`` prints when it cannot show the GPUs: the driver's own answer to "why is
there no GPU", read into ``nvidia_smi.failures`` (``[{kind, text, src, …}]``) beside whatever GPUs
the same output still lists.

nvidia-smi's exit code is NVML's return code and its message names the failure (the wordings of
drivers 390 to 610, from public reports; tests/data/gpu/SOURCES.md):

- ``driver_unreachable``: ``NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA
  driver`` (no kernel module serves /dev/nvidiactl: not built for this kernel, refused, not loaded);
- ``version_mismatch``: ``Failed to initialize NVML: Driver/library version mismatch`` (the
  user-space libraries were upgraded and the old kernel module still runs), with the library's
  version from the ``NVML library version: 580.126`` line that follows on newer drivers
  (nvidia-container-cli: ``nvml error: driver/library version mismatch``);
- ``library_missing``: ``NVIDIA-SMI couldn't find libnvidia-ml.so library in your system`` (the
  driver's user-space library is not installed or not on the loader's path: a container started
  without the NVIDIA runtime, a login that lacks the library path);
- ``nvml_failed``: ``Failed to initialize NVML: <reason>`` otherwise (``Unknown Error`` in a
  container whose device cgroup lost the GPUs, ``Insufficient Permissions``);
- ``no_devices``: ``No devices were found`` (the driver runs and sees no GPU it can use: none given
  to this job or container, or the GPU failed to initialise);
- ``gpu_lost``: ``Unable to determine the device handle for GPU…: <reason>`` (one GPU, named by
  its index and/or bus id, unreachable: ``Unknown Error``, ``GPU is lost``), the other GPUs' table
  following.
"""

from __future__ import annotations

import re
from typing import Any

from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import head_lines, numbered_lines, src
from gdsdoctor.probes.gpu_records import normalise_bus_id

_BUS = r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]"
_FAILURES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "driver_unreachable",
        lazy_compile(r"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA"),
    ),
    ("library_missing", lazy_compile(r"NVIDIA-SMI couldn't find libnvidia-ml\.so library")),
    # nvidia-container-cli says it in its own words: "nvml error: driver/library version mismatch"
    (
        "version_mismatch",
        lazy_compile(r"(?:Failed to initialize NVML|nvml error): Driver/library version mismatch", re.I),
    ),
    ("nvml_failed", lazy_compile(r"Failed to initialize NVML: (?P<reason>\S.*)")),
    ("no_devices", lazy_compile(r"^\s*No devices were found\s*$")),
    (
        "gpu_lost",
        lazy_compile(
            # "for GPU0000:08:00.0: …", "for GPU1: 0000:34:00.0: …", "for GPU 0: …"
            rf"Unable to determine the device handle for (?:GPU|gpu)\s*"
            rf"(?:(?P<bus>{_BUS})|(?P<index>\d+)(?::\s*(?P<bus_after>{_BUS}))?)?:?\s*(?P<reason>.*)"
        ),
    ),
)
_LIBRARY_VERSION = lazy_compile(r"^\s*NVML library version:\s*(?P<version>\d+\.\d+(?:\.\d+)?)\s*$")
_EMPTY_PROMPT = lazy_compile(r"^(?:[\w.-]+@[\w.-]+(?::\S*)?)?[$#%]$")
# the second line nvidia-smi prints after a library it cannot find: advice, part of the message
_LIBRARY_ADVICE = lazy_compile(r"^\s*Please also try adding directory that contains libnvidia-ml\.so")
# Only the first lines are looked at: the message is what nvidia-smi prints first (or alone).
_HEAD_LINES = 60


def read(text: str, artifact: str) -> list[dict[str, Any]]:
    """The failure lines of an nvidia-smi output, each with its provenance."""
    found: list[dict[str, Any]] = []
    for number, line in numbered_lines(text):
        if number > _HEAD_LINES:
            break
        if (version := _LIBRARY_VERSION.match(line)) and found and found[-1]["kind"] == "version_mismatch":
            found[-1]["library_version"] = version["version"]
            found[-1]["library_src"] = src(artifact, number, line)
            continue
        failure = _failure(line)
        if failure is not None:
            found.append({**failure, "text": line.strip(), "src": src(artifact, number, line)})
    return found


def _failure(line: str) -> dict[str, Any] | None:
    for kind, pattern in _FAILURES:
        match = pattern.search(line)
        if match is None:
            continue
        # the reason as printed, its trailing blanks cut here (a pattern that skips them backtracks)
        groups = {key: value.strip() for key, value in match.groupdict().items() if value and value.strip()}
        if bus := groups.pop("bus", None) or groups.pop("bus_after", None):
            groups["bus_id"] = normalise_bus_id(bus)
        if "index" in groups:
            groups["index"] = int(groups["index"])
        return {"kind": kind, **groups}
    return None


def only_failures(text: str) -> bool:
    """True when the output's meaningful lines are all failure messages (what nvidia-smi prints
    when it shows no GPU): a shell prompt with the command before them is allowed."""
    lines = [line for line in head_lines(text, _HEAD_LINES) if line.strip()]
    if not lines or len(text) > 4096:
        return False
    meaningful = [
        line
        for line in lines
        if not _is_prompt(line) and not _LIBRARY_VERSION.match(line) and not _LIBRARY_ADVICE.match(line)
    ]
    return bool(meaningful) and all(_failure(line) is not None for line in meaningful)


def _is_prompt(line: str) -> bool:
    """``$ nvidia-smi -a``, ``root@host:~# nvidia-smi``: the command typed before its output, or
    the empty prompt after it (``$``, ``user@host:~$``)."""
    stripped = line.strip()
    if _EMPTY_PROMPT.match(stripped):
        return True
    return "nvidia-smi" in stripped and _failure(stripped) is None
