"""Hostile inputs for the readers, second round: what a host root, a bundle or a paste can do to
the code that reads it. Memory bounded by bytes (not lines), parsing linear in its input, no
blocking on a fifo, no link out of the host root, no recursion on a deep bundle, one time limit
for reading inputs, and the fleet's list of bundles it could not read."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gdsdoctor.capture.live import capture_source
from gdsdoctor.model import ArtifactStatus
from gdsdoctor.probes import PROBES
from tests.conftest import write_tree

SECRET = "secret-outside-the-host-root"
HOST_FILES = [source for probe in PROBES for source in probe.sources if source.path]
READERS = [source for probe in PROBES for source in probe.sources if source.reader is not None]


def _within(seconds: float, work: Callable[[], Any]) -> Any:
    """``work()`` in a thread: a regression that blocks fails the test instead of hanging it."""
    result: list[Any] = []
    worker = threading.Thread(target=lambda: result.append(work()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still blocked after {seconds} s"
    return result[0]


# --- item 3: a fifo under --host-root ---------------------------------------------------------


def _sysfs_of_fifos(host: Path) -> Path:
    """One nvme controller, namespace, net interface and PCI device whose attributes are all
    fifos (nobody ever writes to them: an open that blocks never returns)."""
    from gdsdoctor.probes import nvme_sysfs, pci

    directories = {
        "sys/bus/pci/devices/0000:00:01.0": pci.ATTRS,
        "sys/class/net/eth0": ("mtu", "operstate", "speed", "type", "address"),
        "sys/class/nvme/nvme0": nvme_sysfs.CONTROLLER_ATTRS,
        "sys/block/nvme0n1": nvme_sysfs.BLOCK_ATTRS,
        "sys/block/nvme0n1/queue": nvme_sysfs.QUEUE_ATTRS,
    }
    for directory, attributes in directories.items():
        (host / directory).mkdir(parents=True)
        for name in attributes:
            os.mkfifo(host / directory / name)
    return host


def test_a_fifo_under_the_host_root_does_not_block_a_sysfs_reader(tmp_path: Path) -> None:
    host = _sysfs_of_fifos(tmp_path / "host")
    started = time.monotonic()
    for source in READERS:
        artifact = _within(10, lambda source=source: capture_source(source, host))
        assert artifact.status in (ArtifactStatus.OK, ArtifactStatus.MISSING), source.artifact
    assert time.monotonic() - started < 10


def test_a_fifo_in_place_of_a_host_file_is_an_error_not_a_hang(tmp_path: Path) -> None:
    host = tmp_path / "host"
    for source in HOST_FILES:
        (host / source.path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(host / source.path.lstrip("/"))
    for source in HOST_FILES:
        artifact = _within(10, lambda source=source: capture_source(source, host))
        assert (artifact.status, artifact.detail) == (ArtifactStatus.ERROR, f"{source.path}: not a regular file")


# --- item 4: links in /proc and /etc resolve inside the host root ------------------------------


def test_host_files_never_follow_a_link_out_of_the_host_root(tmp_path: Path) -> None:
    outside = write_tree(tmp_path / "outside", {"secret": SECRET + "\n"})
    host = tmp_path / "host"
    for number, source in enumerate(HOST_FILES):
        link = host / source.path.lstrip("/")
        link.parent.mkdir(parents=True, exist_ok=True)
        depth = len(Path(source.path).parts) - 1
        # absolute, relative climbing out, and a link to a directory link that leads out
        kinds = [str(outside / "secret"), "../" * (depth + 2) + "outside/secret", f"/escape{number}/secret"]
        link.symlink_to(kinds[number % 3])
        (host / f"escape{number}").symlink_to(outside)
    for source in HOST_FILES:
        artifact = capture_source(source, host)
        assert SECRET.encode() not in artifact.data, source.path
        assert artifact.status is ArtifactStatus.MISSING, source.path


def test_an_absolute_link_inside_the_host_root_is_read_there(tmp_path: Path) -> None:
    """/etc/os-release -> /usr/lib/os-release (most distributions) reads the host root's copy,
    as openat2(RESOLVE_IN_ROOT) would; so does a relative link that climbs above the root."""
    host = write_tree(tmp_path / "host", {"usr/lib/os-release": 'ID=inside\n', "proc/self-cmdline": "root=x\n"})
    write_tree(tmp_path, {"usr/lib/os-release": "ID=outside\n"})
    (host / "etc").mkdir()
    (host / "etc/os-release").symlink_to("/usr/lib/os-release")
    (host / "proc/cmdline").symlink_to("../../../../../../../../proc/self-cmdline")
    os_release = next(s for s in HOST_FILES if s.path == "/etc/os-release")
    cmdline = next(s for s in HOST_FILES if s.path == "/proc/cmdline")
    assert capture_source(os_release, host).data == b"ID=inside\n"
    assert capture_source(cmdline, host).data == b"root=x\n"


def test_a_link_loop_under_the_host_root_is_an_error(tmp_path: Path) -> None:
    host = tmp_path / "host"
    (host / "etc").mkdir(parents=True)
    (host / "etc/os-release").symlink_to("/etc/loop")
    (host / "etc/loop").symlink_to("/etc/os-release")
    os_release = next(s for s in HOST_FILES if s.path == "/etc/os-release")
    artifact = capture_source(os_release, host)
    assert (artifact.status, artifact.detail) == (ArtifactStatus.ERROR, "/etc/os-release: too many links")
