"""Live capture: run every probe's sources on this host, in parallel, under a global deadline.

Each probe tries its sources in order until one is captured ``ok``. Commands are killed at
their own timeout (see runner); the global deadline bounds the whole run even if something
blocks in a way we cannot kill (a read stuck on a dead mount): we stop waiting and report it.

``--host-root`` names whose host is read. Files and readers are read under it. Commands report
the running kernel (dmesg, nvme, lspci, lsmod) or this mount namespace (df, findmnt): they run
only when the root is this kernel's (``/``, or a root whose ``proc/sys/kernel/random/boot_id``
is this kernel's boot id: a container given the host's root). For another machine's root or a
dump, a command runs only pointed at that root (``Source.root_argv``: ``lsblk --sysroot``);
the others are recorded missing with "not run: the root is another host", so nothing of this
host is mixed into that one's facts.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gdsdoctor import DEFAULT_DEADLINE_S
from gdsdoctor.capture.capture import HOST_TREES, PRODUCED_ELSEWHERE, Capture
from gdsdoctor.capture.runner import MAX_OUTPUT_BYTES, kill_groups, run_command
from gdsdoctor.errors import SourceFailed, Unavailable, UserError
from gdsdoctor.model import Artifact, ArtifactStatus
from gdsdoctor.probes import PROBES, lustre_path, path_stat, target
from gdsdoctor.probes.base import Probe, Source
from gdsdoctor.probes.host_io import read_in_root, read_regular_file, resolve_in_root, same_kernel
from gdsdoctor.signals import join_within

Parse = Callable[[Probe, list[Artifact]], Any]


def capture_live(
    host_root: Path = Path("/"),
    target_path: str | None = None,
    probes: Sequence[Probe] = PROBES,
    deadline_s: float = DEFAULT_DEADLINE_S,
) -> Capture:
    """Capture every probe on this host (or the host mounted at ``host_root``)."""
    return LiveCapture(host_root, target_path, probes, deadline_s).finish()


class LiveCapture:
    """Every probe's sources captured in its own thread, started at construction; ``finish``
    waits for them until the deadline.

    With ``parse``, each probe thread also parses what it captured, while other probes still
    run: ``parsed`` maps a section to the artifacts parsed and the result. Whoever uses a result
    checks that the capture still holds those very artifacts (a probe past the deadline, an
    artifact added later, or two sources writing one name, of which the capture keeps the last,
    is parsed again from the capture).
    """

    def __init__(
        self,
        host_root: Path = Path("/"),
        target_path: str | None = None,
        probes: Sequence[Probe] = PROBES,
        deadline_s: float = DEFAULT_DEADLINE_S,
        parse: Parse | None = None,
    ) -> None:
        absent = host_root_gaps(host_root)  # raises UserError for a root that is no host's
        self.selected = [probe for probe in probes if probe.sources]  # paste-only probes have nothing to run
        if target_path:
            self.selected.append(target.probe_for(target_path))
            self.selected.append(path_stat.probe_for(target_path))
            self.selected.extend(lustre_path.probes_for(target_path))
        self.capture = Capture(origin="live", host=host_summary(host_root), label=os.uname().nodename)
        self.capture.options = {"host_root": str(host_root), "target_path": target_path}
        if absent:
            self.capture.options["absent_trees"] = absent  # the run is partial (report/partial.py)
            self.capture.notes.append(root_gaps_note(host_root, absent))
        self.same_kernel = same_kernel(host_root)
        self.parsed: dict[str, tuple[tuple[Artifact, ...], Any]] = {}
        self.deadline_s = deadline_s
        self._parse = parse
        self._results: dict[str, list[Artifact]] = {}
        self._end = time.monotonic() + deadline_s
        self._threads = [
            threading.Thread(target=self._run_probe, args=(probe, host_root), daemon=True)
            for probe in self.selected
        ]
        for thread in self._threads:
            thread.start()

    def finish(self) -> Capture:
        for thread in self._threads:
            join_within(thread, self._end - time.monotonic())
        if any(thread.is_alive() for thread in self._threads):
            kill_groups()  # the deadline passed: what still runs is abandoned, and killed
        for probe in self.selected:
            attempted = self._results.get(probe.section)
            if not attempted:
                attempted = [_deadline_artifact(probe.sources[0], self.deadline_s)]
            for artifact in attempted:
                self.capture.add(probe.section, artifact)
            self.capture.assignments[probe.section] = [a.name for a in attempted]
        return self.capture

    def _run_probe(self, probe: Probe, host_root: Path) -> None:
        attempted: list[Artifact] = []
        for source in probe.sources:
            artifact = capture_source(source, host_root, self.same_kernel)
            attempted.append(artifact)
            if artifact.status is ArtifactStatus.OK:
                break
        self._results[probe.section] = attempted
        if self._parse is not None:
            # A failure here must not print a thread's traceback: the section is then parsed
            # again from the capture, where errors are reported as the section's status.
            with contextlib.suppress(Exception):
                self.parsed[probe.section] = (tuple(attempted), self._parse(probe, attempted))


def host_root_gaps(host_root: Path) -> list[str]:
    """The trees of a host's / (proc/, sys/, etc/) that ``host_root`` lacks. A root with none of
    them is no host's (an empty directory where a DaemonSet forgot to mount the host, a typo):
    every reader would find nothing and the run would look healthy, so it is refused."""
    if not host_root.is_dir():  # every reader would find nothing: a typo, not a host
        problem = "not a directory" if host_root.exists() else "no such directory"
        raise UserError(f"--host-root {host_root}: {problem}")
    absent = [name for name in HOST_TREES if not (host_root / name).is_dir()]
    if len(absent) == len(HOST_TREES):
        raise UserError(f"--host-root {host_root} has no proc/, sys/ or etc/: is the host's / mounted there?")
    return absent


def root_gaps_note(host_root: Path, absent: Sequence[str]) -> str:
    """What a root holding only some of a host's trees leaves unread, for the report."""
    trees = " or ".join(f"{name}/" for name in absent)
    return f"--host-root {host_root} has no {trees}: what lives there was not read (mount the host's whole /)"


ANOTHER_HOST = "not run: the root is another host"


def capture_source(source: Source, host_root: Path, same_host: bool = True) -> Artifact:
    """Capture one source; never raises. ``same_host`` false: ``host_root`` is another
    machine's, so a command runs only as its ``root_argv``."""
    if not same_host and source.this_process:
        return Artifact(source.artifact, ArtifactStatus.MISSING, source=source.describe, detail=ANOTHER_HOST)
    if source.argv:
        argv = source.argv
        if not same_host:
            if not source.root_argv:
                return Artifact(
                    source.artifact, ArtifactStatus.MISSING, source=source.describe, detail=ANOTHER_HOST
                )
            root = os.path.realpath(host_root)
            argv = tuple(arg.replace("{root}", root) for arg in source.root_argv)
        return run_command(source.artifact, argv, source.timeout, dict(source.env), source.ok_exit_codes)
    if source.reader is not None:
        return _run_reader(source, host_root)
    if source.path:
        return read_host_file(source.artifact, host_root, source.path)
    return Artifact(source.artifact, ArtifactStatus.MISSING, detail=PRODUCED_ELSEWHERE)


def read_host_file(name: str, host_root: Path, path: str) -> Artifact:
    """A file of the host at ``host_root``: links resolved inside that root, never out of it
    (``resolve_in_root``), and only a regular file is read (a fifo would block the probe)."""
    started = time.monotonic()
    real = resolve_in_root(os.path.realpath(host_root), path)
    if real is None:
        return Artifact(name, ArtifactStatus.ERROR, source=path, detail=f"{path}: too many links")
    try:
        data = read_regular_file(real, MAX_OUTPUT_BYTES, follow=False)
    except FileNotFoundError:
        return Artifact(name, ArtifactStatus.MISSING, source=path, detail=f"{path} does not exist")
    except PermissionError:
        return Artifact(name, ArtifactStatus.DENIED, source=path, detail=f"{path}: permission denied")
    except OSError as error:
        return Artifact(name, ArtifactStatus.ERROR, source=path, detail=f"{path}: {error.strerror or error}")
    return Artifact(name, ArtifactStatus.OK, data, path, duration_s=time.monotonic() - started)


def _run_reader(source: Source, host_root: Path) -> Artifact:
    started = time.monotonic()
    try:
        data = source.reader(host_root)  # type: ignore[misc]
    except Unavailable as error:
        return Artifact(source.artifact, ArtifactStatus.MISSING, source=source.describe, detail=str(error))
    except PermissionError as error:
        return Artifact(source.artifact, ArtifactStatus.DENIED, source=source.describe, detail=str(error))
    except SourceFailed as error:
        return Artifact(source.artifact, ArtifactStatus.ERROR, source=source.describe, detail=str(error))
    except Exception as error:  # a reader bug must not sink the whole check
        detail = f"reader failed: {type(error).__name__}: {error}"
        return Artifact(source.artifact, ArtifactStatus.ERROR, source=source.describe, detail=detail)
    if not data:
        return Artifact(
            source.artifact, ArtifactStatus.MISSING, source=source.describe, detail="nothing to read"
        )
    return Artifact(
        source.artifact, ArtifactStatus.OK, data, source.describe, duration_s=time.monotonic() - started
    )


def _deadline_artifact(source: Source, deadline_s: float) -> Artifact:
    detail = f"still running at the global deadline ({deadline_s:g}s); abandoned"
    return Artifact(source.artifact, ArtifactStatus.TIMEOUT, source=source.describe, detail=detail)


def host_summary(host_root: Path) -> dict[str, str]:
    uname = os.uname()  # what platform.uname() and socket.gethostname() read, without importing them
    return {
        "hostname": uname.nodename,
        "kernel": uname.release,
        "machine": uname.machine,
        "host_root": str(host_root),
        "euid": str(os.geteuid()),
        **capture_clock(host_root),
    }


def capture_clock(host_root: Path) -> dict[str, str]:
    """The capture's own clock: the wall time now and the host's uptime now, read together, so
    that the kernel log's seconds-since-boot become ages (gdsdoctor.facts.lifecycle)."""
    found = {"captured_at_epoch": f"{time.time():.3f}"}
    raw = read_in_root(host_root, "/proc/uptime", 256)
    first = raw.split()[0] if raw else b""
    if first.replace(b".", b"", 1).isdigit():
        found["uptime_s"] = first.decode()
    return found
