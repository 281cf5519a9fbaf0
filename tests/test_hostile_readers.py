"""Hostile inputs for the readers, second round: what a host root, a bundle or a paste can do to
the code that reads it. Memory bounded by bytes (not lines), parsing linear in its input, no
blocking on a fifo, no link out of the host root, no recursion on a deep bundle, one time limit
for reading inputs, and the fleet's list of bundles it could not read."""

from __future__ import annotations

import contextlib
import io
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

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
    for source in READERS:  # a reader that opened a fifo would block for ever: the guard ends it
        artifact = _within(60, lambda source=source: capture_source(source, host))
        assert artifact.status in (ArtifactStatus.OK, ArtifactStatus.MISSING), source.artifact


def test_a_fifo_in_place_of_a_host_file_is_an_error_not_a_hang(tmp_path: Path) -> None:
    host = tmp_path / "host"
    for source in HOST_FILES:
        (host / source.path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(host / source.path.lstrip("/"))
    for source in HOST_FILES:
        artifact = _within(10, lambda source=source: capture_source(source, host))
        assert (artifact.status, artifact.detail) == (
            ArtifactStatus.ERROR,
            f"{source.path}: not a regular file",
        )


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
    host = write_tree(
        tmp_path / "host", {"usr/lib/os-release": "ID=inside\n", "proc/self-cmdline": "root=x\n"}
    )
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


def test_sysfs_links_resolve_inside_the_host_root_like_host_files(tmp_path: Path) -> None:
    """One mechanism for every path under the root: a sysfs dump with absolute links (as `cp -a`
    of /sys makes) is read inside the root, and an attribute linking to a file outside reads
    nothing, never the outside file."""
    from gdsdoctor.probes.host_io import attrs_inside

    outside = write_tree(tmp_path / "outside", {"secret": SECRET})
    host = write_tree(tmp_path / "host", {"sys/devices/virtual/net/eth0/mtu": "9000\n"})
    (host / "sys/class/net").mkdir(parents=True)
    (host / "sys/class/net/eth0").symlink_to("/sys/devices/virtual/net/eth0")
    (host / "sys/devices/virtual/net/eth0/operstate").symlink_to(outside / "secret")
    root = os.path.realpath(host)
    assert attrs_inside(root, host / "sys/class/net/eth0", ["mtu", "operstate"]) == {
        "mtu": "9000",
        "operstate": None,
    }


# --- item 2: every parser linear in its input, by work counted -----------------------------------


def _work(parse: Callable[[str, str], Any], text: str) -> int:
    """Work done by ``parse(text)``: Python lines run plus C functions called (a line scan in
    Python shows as lines, one regex search per line as calls). Counted, not timed, so the
    test holds on a loaded machine."""
    import sys

    count = 0

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        count += 1
        return tracer

    def profiler(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        count += event == "c_call"

    sys.settrace(tracer)
    sys.setprofile(profiler)
    try:
        parse(text, "artifact")
    finally:
        sys.setprofile(None)
        sys.settrace(None)
    return count


def _json_items(head: str, items: list[str], tail: str) -> str:
    return head + ",\n".join(items) + tail


def _nvme_list(n: int) -> str:  # entries none of whose "DevicePath" can be found
    return _json_items(
        '{\n "Devices": [\n', [f'  {{\n   "NameSpace": {i}\n  }}' for i in range(n)], "\n ]\n}\n"
    )


def _nvme_subsys(n: int) -> str:  # paths whose "name" is in lower case: the search for "Name" misses
    paths = [f'    {{"name": "nvme{i}", "transport": "tcp"}}' for i in range(n)]
    return _json_items(
        '{\n "Subsystems": [{"Name": "nvme-subsys0", "NQN": "nqn.x", "Paths": [\n', paths, "]}]}\n"
    )


def _nvme_subsys_many(n: int) -> str:  # a subsystem per path: each subsystem counted every path
    subsystems = [
        f'  {{"Name": "nvme-subsys0", "NQN": "nqn.x", "Paths": [{{"Name": "nvme{i}", "State": "live"}}]}}'
        for i in range(n)
    ]
    return _json_items('{\n "Subsystems": [\n', subsystems, "\n ]\n}\n")


def _nvme_subsys_text(n: int) -> str:
    return "".join(
        f"nvme-subsys{i} - NQN=nqn.x{i}\n\\\n +- nvme{i} tcp traddr=10.0.0.1,trsvcid=4420 live\n"
        for i in range(n)
    )


def _topo(n: int) -> str:  # n GPU and n NIC rows under a short header: each pair looked up by name
    rows = [f"GPU{i}\tX\tSYS\tSYS\tPIX\t0-7\t0" for i in range(n)]
    rows += [f"NIC{i}\tSYS\tSYS\tX\tSYS" for i in range(n)]
    return "\tGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\n" + "\n".join(rows) + "\n"


def _lsblk(n: int) -> str:  # a name printed escaped: each search for it misses
    items = [f'  {{"name": "d\\u00e9v", "type": "disk", "size": {i}}}' for i in range(n)]
    return _json_items('{\n "blockdevices": [\n', items, "\n ]\n}\n")


def _pci(n: int) -> str:
    from gdsdoctor.probes.text import json_bytes

    devices = [{"bdf": f"0000:{i // 256:02x}:{i % 32:02x}.{i % 8}", "attrs": {}} for i in range(n)]
    return json_bytes({"reader": "pci", "devices": devices}).decode()


def _cufile_json(n: int) -> str:
    return "{\n" + ",\n".join(f'  "key{i}": {{ "leaf{i}": {i} }}' for i in range(n)) + "\n}\n"


def _cufile_nested(n: int) -> str:  # n objects one inside the other around n keys
    return (
        '{\n"allow_compat_mode": true,\n'
        + '"a": {\n' * n
        + ",\n".join(f'"k{i}": {i}' for i in range(n))
        + "\n}" * n
        + "\n}\n"
    )


def _cufile_nested_excerpt(n: int) -> str:  # the same, cut (read line by line)
    return _cufile_nested(n).replace('"k0": 0,', '"k0": 0,\n  ...')


def _derived(section: str, parse: Callable[[str, str], Any]) -> Callable[[str, str], Any]:
    """The parser, then the derived facts over its section alone (they joined the paths to each
    subsystem, the pairs to each GPU, by a scan per item: quadratic after linear parsers)."""
    from gdsdoctor.facts.derived import derive

    return lambda text, artifact: derive({section: {**parse(text, artifact), "status": "ok"}}, None)


def _linear_cases() -> list[tuple[str, Callable[[str, str], Any], Callable[[int], str]]]:
    from gdsdoctor.probes import cufile, gpu, lsblk, nvme_cli, pci

    return [
        ("nvme list", nvme_cli.parse_list, _nvme_list),
        ("nvme list-subsys", nvme_cli.parse_subsys, _nvme_subsys),
        ("nvme list-subsys, a subsystem a path", nvme_cli.parse_subsys, _nvme_subsys_many),
        ("nvme list-subsys text", nvme_cli.parse_subsys, _nvme_subsys_text),
        ("nvidia-smi topo -m", gpu.parse_nvidia_topo, lambda n: _topo(n // 8)),  # under the row cap
        ("lsblk -J", lsblk.parse, _lsblk),
        ("pci reader", pci.parse_pci, _pci),
        ("cufile.json", cufile.parse_cufile_json, _cufile_json),
        ("cufile.json nested", cufile.parse_cufile_json, _cufile_nested),
        ("cufile.json excerpt nested", cufile.parse_cufile_json, _cufile_nested_excerpt),
    ]


def test_json_parsers_do_linear_work() -> None:
    """Doubling the items at most about doubles the work (the line finders rescanned the rest
    of the text for every item they could not find: 100k nvme entries took 12 s, 400k 3 min)."""
    for name, parse, make in _linear_cases():
        small, large = _work(parse, make(400)), _work(parse, make(800))
        assert large < 2.4 * small, f"{name}: {small} -> {large} for twice the items"


def test_a_huge_topo_matrix_keeps_its_first_devices_and_says_so() -> None:
    """An 800 x 800 `nvidia-smi topo -m` (2.5 MiB) took 250 MiB of facts: rows and columns past
    MAX_TOPO_DEVICES are not read, and the report says the matrix was cut."""
    from gdsdoctor.probes import gpu

    section = gpu.parse_nvidia_topo(_topo(200), "topo")
    assert len(section["gpus"]) + len(section["nics"]) == gpu.MAX_TOPO_DEVICES
    assert section["input_cut"] == "a matrix of 400 devices: only the first 256 rows and columns were read"


def test_derived_facts_do_linear_work() -> None:
    """The same for the derived facts over a section (smaller: they cost more per item)."""
    from gdsdoctor.probes import gpu, nvme_cli

    for name, parse, make in (
        ("list-subsys", _derived("nvme_subsys", nvme_cli.parse_subsys), _nvme_subsys_many),
        ("topo -m", _derived("nvidia_topo", gpu.parse_nvidia_topo), lambda n: _topo(n * 2 // 5)),
    ):
        small, large = _work(parse, make(150)), _work(parse, make(300))
        assert large < 2.4 * small, f"{name}: {small} -> {large} for twice the items"


# --- fleet: every unreadable bundle, and archives compressed otherwise ---------------------------


def test_the_fleet_lists_every_unreadable_bundle_with_verbose(tmp_path: Path) -> None:
    from gdsdoctor.commands import fleet

    broken = []
    for number in range(20):
        broken.append(tmp_path / f"broken{number:02d}.tar.gz")
        broken[-1].write_bytes(b"not a tar")
    summary = fleet.analyse_fleet(broken, jobs=1)
    quiet = fleet.render(summary, "text")
    assert "Unreadable bundles (20)" in quiet
    assert sum(f"broken{n:02d}.tar.gz:" in quiet for n in range(20)) == fleet.MAX_NAMES_SHOWN
    assert f"… and {20 - fleet.MAX_NAMES_SHOWN} more (-v lists all)" in quiet
    for fmt in ("text", "markdown"):
        full = fleet.render(summary, fmt, verbose=True)
        assert all(f"broken{n:02d}.tar.gz" in full for n in range(20)), fmt
        assert "more (-v lists all)" not in full
    # and through the command line: -v reaches the fleet renderer
    from gdsdoctor.cli import run

    with contextlib.redirect_stdout(io.StringIO()) as shown, contextlib.redirect_stderr(io.StringIO()):
        run(["analyze", "--fleet", "-j", "1", "-v", *map(str, broken)])
    assert all(f"broken{n:02d}.tar.gz" in shown.getvalue() for n in range(20))


def _bundle_compressed(tmp_path: Path, suffix: str, mode: str) -> Path:
    import tarfile

    from gdsdoctor.capture.bundle import write_bundle
    from gdsdoctor.capture.capture import Capture
    from gdsdoctor.model import Artifact

    capture = Capture(origin="live", host={"hostname": "gpu001"}, label="gpu001")
    mounts = b"/dev/nvme1n1 /mnt/ckpt ext4 rw,noatime,data=journal 0 0\n"
    capture.add("mounts", Artifact("proc/mounts", ArtifactStatus.OK, mounts, source="/proc/mounts"))
    (tmp_path / "plain").mkdir(exist_ok=True)
    plain = write_bundle(capture, tmp_path / "plain" / f"gpu001{suffix}.tar.gz")
    target = tmp_path / "fleet" / f"gpu001{suffix}"
    target.parent.mkdir(exist_ok=True)
    with tarfile.open(plain) as source, tarfile.open(target, mode) as copy:
        for member in source.getmembers():
            copy.addfile(member, source.extractfile(member) if member.isfile() else None)
    return target


def test_bz2_and_xz_bundles_are_read_as_bundles_not_pasted_binary(tmp_path: Path) -> None:
    from gdsdoctor.commands import fleet
    from gdsdoctor.pipeline import analyze_paths

    paths = [_bundle_compressed(tmp_path, s, m) for s, m in ((".tar.bz2", "w:bz2"), (".tar.xz", "w:xz"))]
    for path in paths:
        analysis = analyze_paths([path])
        assert analysis.facts["mounts"]["status"] == "ok", path
        assert any(c["id"] == "ext4-data-journal" for c in analysis.report["causes"]), path
    assert fleet.is_fleet(paths) and fleet.bundles_in(tmp_path / "fleet") == sorted(paths)


# --- item 12: a directory bundle nested deep -----------------------------------------------------


def _deep_bundle(tmp_path: Path, depth: int) -> Path:
    """A bundle directory with a file ``depth`` levels down (made one level at a time: os.makedirs
    recurses too). The caller removes it with ``_remove`` (shutil.rmtree recurses as well)."""
    root = write_tree(
        tmp_path / "deep", {"manifest.json": '{"format": "gdsdoctor.bundle", "format_version": 1}'}
    )
    level = root
    for _ in range(depth):
        level = level / "d"
        level.mkdir()
    (level / "f").write_text("x")
    return root


def _remove(tree: Path) -> None:
    import subprocess

    subprocess.run(["rm", "-rf", str(tree)], check=True)


def _analyze_with_file_limit(bundle: Path, files: int) -> Any:
    import resource
    import subprocess
    import sys

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

    return subprocess.run(
        [sys.executable, "-m", "gdsdoctor", "analyze", str(bundle)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
    )


def test_a_directory_bundle_nested_deep_is_refused_in_one_line(tmp_path: Path) -> None:
    """1,000 levels gave "internal error: RecursionError"; 500 under `ulimit -n 256`, "Too many
    open files". Both are refused cleanly (exit 3, one line) without reading a level too many."""
    import pytest

    from gdsdoctor.capture.bundle import MAX_DIR_DEPTH, read_bundle
    from gdsdoctor.errors import BundleError

    deep = _deep_bundle(tmp_path, 1000)
    try:
        with pytest.raises(BundleError, match=rf"more than {MAX_DIR_DEPTH} directory levels"):
            read_bundle(deep)
        result = _analyze_with_file_limit(deep, 256)
    finally:
        _remove(deep)
    assert result.returncode == 3 and result.stderr.count("\n") == 1, result.stderr
    assert (
        f"more than {MAX_DIR_DEPTH} directory levels" in result.stderr
        and "internal error" not in result.stderr
    )


def test_a_directory_bundle_at_the_depth_limit_is_read(tmp_path: Path) -> None:
    from gdsdoctor.capture.bundle import MAX_DIR_DEPTH, read_bundle

    capture = read_bundle(_deep_bundle(tmp_path, MAX_DIR_DEPTH))
    assert capture.notes == [] or "directory levels" not in " ".join(capture.notes)


# --- item 13: one time limit for reading inputs --------------------------------------------------


def _trickle(fifo: Path, stop: threading.Event) -> threading.Thread:
    """A writer that never falls silent long enough to be given up: a byte every 0.2 s."""

    def write() -> None:
        try:
            with open(fifo, "wb", buffering=0) as out:
                while not stop.wait(0.2):
                    out.write(b"x")
        except OSError:  # the reader went away (EPIPE): what a writer sees when we stop
            pass

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return writer


def test_a_slow_writer_cannot_keep_analyze_reading(tmp_path: Path) -> None:
    """A fifo trickled into kept `analyze` reading for minutes: reading all inputs stops at half
    the deadline (the rest is for analysing), the fifo is a note (never its cut-off part as
    input) and the rest is analysed."""
    from gdsdoctor.pipeline import analyze_paths

    fifo, good = (
        tmp_path / "slow",
        write_tree(tmp_path, {"mounts": "/dev/nvme1n1 /mnt/ckpt ext4 rw 0 0\n"}) / "mounts",
    )
    os.mkfifo(fifo)
    stop = threading.Event()
    writer = _trickle(fifo, stop)
    try:  # the writer never stops by itself: only the deadline ends the reading (the notes say so)
        analysis = _within(60, lambda: analyze_paths([fifo, good], deadline_s=2))
    finally:
        stop.set()
        writer.join(5)
    notes = analysis.capture.notes
    assert f"{fifo}: still being written at the 1 s deadline for reading inputs; not read" in notes
    assert f"{good}: not read: the 1 s deadline for reading inputs had passed" in notes
    assert "mounts" not in analysis.capture.assignments


def test_analyze_deadline_option_bounds_reading(tmp_path: Path) -> None:
    """`analyze --deadline` is the same limit, from the command line (reading: half of it)."""
    from gdsdoctor.cli import run

    fifo = tmp_path / "slow"
    os.mkfifo(fifo)
    stop = threading.Event()
    writer = _trickle(fifo, stop)
    try:
        with contextlib.redirect_stdout(io.StringIO()) as shown, contextlib.redirect_stderr(io.StringIO()):
            code = _within(60, lambda: run(["analyze", str(fifo), "--deadline", "1", "-f", "json"]))
    finally:
        stop.set()
        writer.join(5)
    assert code == 3
    assert "still being written at the 0.5 s deadline" in shown.getvalue()


@pytest.fixture(scope="module")
def slow_to_parse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bundle whose one member is slow to parse, not to read: 100k subsystems in
    `nvme list-subsys -o json` (8 MiB; a provenance pattern compiled for each name: 3-10 s)."""
    from gdsdoctor.capture.bundle import write_bundle
    from gdsdoctor.capture.capture import Capture
    from gdsdoctor.model import Artifact

    item = '  {{"Name": "nvme-subsys{}", "NQN": "nqn.x", "Paths": [{{"Name": "nvme0", "State": "live"}}]}}'
    text = '{\n "Subsystems": [\n' + ",\n".join(item.format(i) for i in range(100_000)) + "\n ]\n}\n"
    capture = Capture(origin="live", host={"hostname": "gpu001"}, label="gpu001")
    name = "cmd/nvme-list-subsys.json"
    capture.add("nvme_subsys", Artifact(name, ArtifactStatus.OK, text.encode(), source=name))
    return write_bundle(capture, tmp_path_factory.mktemp("slow") / "node")  # a directory: no gzip


def test_the_deadline_covers_parsing(slow_to_parse: Path) -> None:
    """--deadline bounded reading only: a bundle slow to parse kept `analyze` (and a fleet run)
    busy for as long as its parsers took. Past the deadline the run ends UNKNOWN, in one line
    naming what was not finished, never a report of what happened to be parsed in time (how
    long the stop takes past the deadline is measured in scripts/benchmark.py, not asserted here:
    a loaded machine stretches it)."""
    from gdsdoctor.cli import run

    with (
        contextlib.redirect_stdout(io.StringIO()) as shown,
        contextlib.redirect_stderr(io.StringIO()) as said,
    ):
        code = run(["analyze", str(slow_to_parse), "--deadline", "1", "-f", "json"])  # SIGALRM: main thread
    assert code == 3
    line = (
        "gdsdoctor: not diagnosed: the 1 s deadline passed while parsing nvme_subsys "
        "(cmd/nvme-list-subsys.json) (a huge or hostile input? --deadline SECONDS gives it longer)\n"
    )
    assert said.getvalue() == line
    assert '"status": "UNKNOWN"' in shown.getvalue()


def test_the_deadline_bounds_each_bundle_of_a_fleet(slow_to_parse: Path) -> None:
    from gdsdoctor.commands.fleet import analyse_fleet

    summary = analyse_fleet([slow_to_parse], jobs=1, deadline_s=1)
    (node,) = summary["nodes"]
    assert node["status"] == "UNKNOWN"
    assert node["reason"].startswith("not diagnosed: the 1 s deadline passed while parsing nvme_subsys")


def test_inputs_read_before_the_deadline_are_analysed(tmp_path: Path) -> None:
    from gdsdoctor.pipeline import analyze_paths

    good = write_tree(tmp_path, {"mounts": "/dev/nvme1n1 /mnt/ckpt ext4 rw 0 0\n"}) / "mounts"
    analysis = analyze_paths([good], deadline_s=30)
    assert analysis.capture.assignments["mounts"] == ["mounts"]


# --- item 1: memory bounded by bytes, not lines ---------------------------------------------------

LINE_PARSED = {
    "dmesg": "cmd/dmesg.txt",
    "mounts": "proc/mounts",
    "mountinfo": "proc/self/mountinfo",
    "df": "cmd/df.txt",
    "lspci": "cmd/lspci-vvv.txt",
    "os_release": "etc/os-release",
    "cmdline": "proc/cmdline",
}
_ANALYSE_UNDER_LIMIT = """
import json, resource, sys
from pathlib import Path
limit = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from gdsdoctor.pipeline import analyze_paths
analysis = analyze_paths([Path(sys.argv[1])])
print(json.dumps({name: section.get("status") for name, section in analysis.facts.items()}))
"""


def _bundle_of(tmp_path: Path, data: bytes, sections: dict[str, str]) -> Path:
    from gdsdoctor.capture.bundle import write_bundle
    from gdsdoctor.capture.capture import Capture
    from gdsdoctor.model import Artifact

    capture = Capture(origin="live", host={"hostname": "gpu001"}, label="gpu001")
    for section, name in sections.items():
        capture.add(section, Artifact(name, ArtifactStatus.OK, data, source=name))
    return write_bundle(capture, tmp_path / "lines.tar.gz")


def test_a_million_newlines_per_artifact_parse_in_memory_bounded_by_bytes(tmp_path: Path) -> None:
    """1M newlines (1 MB) in each line-parsed artifact: a list of numbered lines costs ~100 bytes
    a line (each of these took ~100 MB, 20M newlines 2.3 GB); streamed, the analysis fits
    in 128 MiB of address space and every section gets a clear status, not a MemoryError
    (the 20M-newline measurements are in SECURITY.md)."""
    import json
    import subprocess
    import sys

    bundle = _bundle_of(tmp_path, b"\n" * 1_000_000, LINE_PARSED)
    result = subprocess.run(
        [sys.executable, "-c", _ANALYSE_UNDER_LIMIT, str(bundle), str(128 * 1024 * 1024)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-500:]
    statuses = json.loads(result.stdout)
    assert {statuses[name] for name in LINE_PARSED} <= {"ok", "unparsable"}, statuses
    assert statuses["mounts"] == "unparsable"  # no mount line: never an empty, healthy list


def test_an_event_storm_keeps_a_bounded_list_and_the_report_says_so(tmp_path: Path) -> None:
    from gdsdoctor.pipeline import analyze_paths
    from gdsdoctor.probes import dmesg

    storm = b"".join(
        b"[%9.6f] nvme nvme0: I/O 12 QID 3 timeout, aborting\n" % (i / 1000)
        for i in range(dmesg.MAX_EVENTS + 500)
    )
    analysis = analyze_paths([_bundle_of(tmp_path, storm, {"dmesg": "cmd/dmesg.txt"})])
    section = analysis.facts["dmesg"]
    assert len(section["events"]) == dmesg.MAX_EVENTS and section["events_dropped"] == 500
    assert section["summary"][0]["count"] == dmesg.MAX_EVENTS + 500
    assert section["events"][-1]["src"]["line"] == dmesg.MAX_EVENTS + 500
    assert f"dmesg: 500 of {dmesg.MAX_EVENTS + 500} kernel log events not kept" in " ".join(
        analysis.report["source"]["notes"]
    )


def _mount_tables(lines: int) -> dict[str, str]:
    return {
        "mounts": "/dev/nvme0n1 /mnt/ckpt ext4 rw,relatime 0 0\n" * lines,
        "mountinfo": "40 35 259:1 / /mnt/ckpt rw,relatime shared:1 - ext4 /dev/nvme0n1 rw\n" * lines,
        "df": "Filesystem Type 1B-blocks Used Available Capacity Mounted on\n"
        + "/dev/nvme0n1 ext4 1000000 1000 999000 1% /mnt/ckpt\n" * lines,
    }


def test_a_huge_mount_table_costs_the_memory_of_the_mounts_kept(monkeypatch: Any) -> None:
    """A 12 MiB mount table (190k mounts, 0.6 MiB in a bundle) took 585-674 MiB and 17-42 s:
    every mount became ~3 KB of facts and rule work. Past MAX_MOUNTS the lines are counted, not
    parsed: four times the lines cost no more memory (here with the cap at 500, so the test is
    quick; the whole analysis is measured in scripts/benchmark.py), and the report says so."""
    import tracemalloc

    from gdsdoctor.probes import fs, mounts

    monkeypatch.setattr(mounts, "MAX_MOUNTS", 500, raising=False)
    parsers = {"mounts": mounts.parse, "mountinfo": fs.parse_mountinfo, "df": fs.parse_df}
    small, large = _mount_tables(40_000), _mount_tables(160_000)  # past the MiB a text is split by
    for name, parse in parsers.items():
        peaks = []
        for text in (small[name], large[name]):
            tracemalloc.start()
            section = parse(text, name)
            peaks.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
            rows = section.get("mounts", section.get("filesystems"))
            assert len(rows) == 500, name
        assert peaks[1] < 1.2 * peaks[0], f"{name}: {peaks[0]} -> {peaks[1]} bytes for 4x the lines"
        assert section["input_cut"] == (
            f"only the first 500 entries of {name} were read; 159,500 lines after them were not "
            "(a mount there is not seen)"
        )


def test_the_line_finder_equals_a_scan_of_every_line(monkeypatch: Any) -> None:
    """The finder's shortcuts (lines cut as visited, stretches ruled out by one search) give
    what searching each line of ``text.split("\\n")`` in turn gives, stretch sizes included."""
    import random
    import re

    from gdsdoctor.probes import text as text_helpers

    def plain(text: str) -> Callable[[str, int], tuple[int, str]]:
        lines, position = text.split("\n"), [0]

        def find(pattern: str, default: int) -> tuple[int, str]:
            for index in range(position[0], len(lines)):
                if re.search(pattern, lines[index]):
                    position[0] = index + 1
                    return index + 1, lines[index]
            default = max(1, min(default, len(lines)))
            return default, lines[default - 1]

        return find

    patterns = ["a", "^b", "ab", "^$", "x", "c$", r"a\s*b", r"^\s*b", r"\bc\b", "b|c"]
    chance = random.Random(13)
    for chunk in (0, 1, 3, 1 << 16):
        monkeypatch.setattr(text_helpers, "_FINDER_CHUNK", chunk)
        for _ in range(400):
            text = "".join(chance.choice(["a", "b", "c", "\n", " "]) for _ in range(chance.randint(0, 30)))
            fast, slow = text_helpers.line_finder(text), plain(text)
            for _ in range(5):
                pattern, default = chance.choice(patterns), chance.randint(1, 4)
                assert fast(pattern, default) == slow(pattern, default), (chunk, text, pattern)


def test_a_cufile_log_storm_keeps_a_bounded_list_and_says_so() -> None:
    from gdsdoctor.probes import cufile

    line = " 27-06-2023 16:20:37:235 [pid=41294 tid=41294] ERROR  cufio:1185 cuFileBufRegister error\n"
    section = cufile.parse_cufile_log(line * (cufile.MAX_LOG_ENTRIES + 300), "cufile.log")
    assert len(section["entries"]) == cufile.MAX_LOG_ENTRIES
    assert section["counts"]["lines"] == cufile.MAX_LOG_ENTRIES + 300
    assert section["input_cut"].startswith("300 cufile.log entries or volume records not kept")
