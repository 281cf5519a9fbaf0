"""Hostile processes and interrupted runs: SIGTERM or SIGHUP in the middle of a check, a
collect or a bench, probes that daemonise or stay stuck from an earlier run, commands that
fail in ways a fallback must not hide. Nothing outlives gdsdoctor, nothing is left half-written,
and the report names what really happened.

The signal tests run the pipeline in a child interpreter that does what the command line does
at start and on its way out (``signals.install_signal_handlers``, then ``runner.kill_running``
before leaving with ``os._exit``), so the signal reaches a process of its own."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import signal
import stat
import subprocess
import sys
import tarfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gdsdoctor.capture import command_lock, redact_io
from gdsdoctor.capture.bundle import manifest_for, read_bundle, write_bundle
from gdsdoctor.capture.capture import Capture
from gdsdoctor.capture.live import capture_live
from gdsdoctor.capture.redact import Mapper, Redactor
from gdsdoctor.capture.redact_io import redact_files
from gdsdoctor.errors import UserError
from gdsdoctor.facts.section import section_from
from gdsdoctor.model import Artifact, ArtifactStatus
from gdsdoctor.probes import PROBES
from gdsdoctor.probes.base import Probe
from gdsdoctor.report.files import write_atomic
from tests.conftest import REPO, THIS_KERNEL, fake_binary, this_kernels_root, write_tree
from tests.test_hostile_hosts import PROC_MOUNTS, pids, wait_dead

HANGING_COMMANDS = ("nvme", "lspci", "dmesg", "df", "nvidia-smi")
HANGING_RUNS = 8  # nvme ×2 (list, list-subsys), lspci ×2, dmesg, df, nvidia-smi ×2

# What the command line does around a command: handlers at start, "interrupted" and exit 3
# on an interrupt, every command and leftover killed on the way out.
GUARDED = """\
import os, sys
from pathlib import Path
from gdsdoctor.signals import install_signal_handlers
install_signal_handlers()
from gdsdoctor.capture import runner
code = 0
try:
{body}
except KeyboardInterrupt:
    print("gdsdoctor: interrupted", file=sys.stderr)
    code = 3
runner.kill_running()
sys.stdout.flush(); sys.stderr.flush()
os._exit(code)
"""


def start_guarded(body: str, path: Path, cwd: Path) -> subprocess.Popen[str]:
    code = GUARDED.format(body=textwrap.indent(textwrap.dedent(body).strip(), "    "))
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO / "src"), "PATH": str(path)},
    )


def start_cli(args: list[str], path: Path, cwd: Path) -> subprocess.Popen[str]:
    """The real command line (`python -m gdsdoctor ARGS`), with only ``path`` on PATH."""
    return subprocess.Popen(
        [sys.executable, "-m", "gdsdoctor", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO / "src"), "PATH": str(path)},
        # A runner started under nohup hands its children SIGHUP ignored, and gdsdoctor rightly
        # keeps an ignored signal ignored (signals.py); these tests are about one delivered.
        preexec_fn=_hangup_delivered,
    )


def _hangup_delivered() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def wait_for_lines(record: Path, count: int, within: float = 15.0) -> None:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if record.exists() and len(record.read_text().splitlines()) >= count:
            return
        time.sleep(0.05)
    pytest.fail(f"only {record.read_text() if record.exists() else 'no'} lines in {record}")


def hanging_probes(bindir: Path, record: Path) -> None:
    """Commands that ignore SIGTERM, SIGHUP and SIGINT and hang with a child."""
    script = f"trap '' TERM HUP INT; /bin/sleep 60 & echo $! $$ >> {record}; wait"
    for name in HANGING_COMMANDS:
        fake_binary(bindir, name, script)


def quick(section: str, timeout: float = 0.5) -> Probe:
    """The probe of ``section`` with short command timeouts (a hang costs the test 0.5 s)."""
    probe = next(p for p in PROBES if p.section == section)
    return dataclasses.replace(
        probe, sources=tuple(dataclasses.replace(s, timeout=timeout) for s in probe.sources)
    )


# --- 5. SIGTERM / SIGHUP leave no probe behind ------------------------------------------------


def _run_with_hanging_probes(
    tmp_path: Path, isolated_path: Path, command: str
) -> tuple[subprocess.Popen[str], Path]:
    """`check` or `collect` of a host whose probes all hang, once every probe has started; and
    the file their PIDs are recorded in."""
    host = write_tree(tmp_path / "host", {**THIS_KERNEL, "proc/mounts": PROC_MOUNTS})
    record = tmp_path / "pids"
    hanging_probes(isolated_path, record)
    args = {
        "check": ["check", "--host-root", str(host), "--format", "json"],
        "collect": ["collect", "--host-root", str(host), "-o", str(tmp_path / "out.tar.gz")],
    }[command]
    process = start_cli(args, isolated_path, tmp_path)
    wait_for_lines(record, HANGING_RUNS)
    return process, record


@pytest.mark.parametrize(
    ("command", "signum"),
    [
        ("check", signal.SIGTERM),
        ("collect", signal.SIGHUP),
    ],
)
def test_a_signal_kills_every_probe_and_says_interrupted(
    tmp_path: Path, isolated_path: Path, command: str, signum: int
) -> None:
    """`timeout 2 gdsdoctor check` used to exit 124 leaving every hung probe under PID 1."""
    process, record = _run_with_hanging_probes(tmp_path, isolated_path, command)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=10)
    assert (process.returncode, stderr) == (3, "gdsdoctor: interrupted\n")
    assert wait_dead(pids(record)), "a probe outlived the interrupted run"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "host", "pids"]  # no bundle, no temp


def _signal_a_thread_other_than_main(pid: int, signum: int) -> None:
    """tgkill(2) to one of the process's other threads: the kernel may hand a signal sent to
    the process to any thread, and this makes that choice for the test."""
    import ctypes

    tid = next(int(t) for t in sorted(os.listdir(f"/proc/{pid}/task")) if int(t) != pid)
    sys_tgkill = {"x86_64": 234, "aarch64": 131}[os.uname().machine]
    assert ctypes.CDLL(None, use_errno=True).syscall(sys_tgkill, pid, tid, signum) == 0


@pytest.mark.parametrize("command", ["check", "collect"])
def test_a_signal_taken_by_a_probe_thread_still_ends_the_run_at_once(
    tmp_path: Path, isolated_path: Path, command: str
) -> None:
    """The main thread waited for the probe threads in one join as long as the deadline (60 s):
    a SIGHUP the kernel handed to a probe thread ran its handler only when that join ended, so
    `collect` went on for up to a minute after it (the test above failed so, now and then)."""
    process, record = _run_with_hanging_probes(tmp_path, isolated_path, command)
    _signal_a_thread_other_than_main(process.pid, signal.SIGHUP)
    # a run that waited for the capture's deadline (60 s) would outlast this guard (30 s)
    _, stderr = process.communicate(timeout=30)
    assert (process.returncode, stderr) == (3, "gdsdoctor: interrupted\n")
    assert wait_dead(pids(record)), "a probe outlived the interrupted run"


def test_a_probe_that_daemonises_dies_with_the_run(tmp_path: Path, isolated_path: Path) -> None:
    """`setsid -f` takes a process out of the probe's session and group: killing the group
    missed it, and it outlived even a normal run."""
    host = write_tree(tmp_path / "host", {**THIS_KERNEL, "proc/mounts": PROC_MOUNTS})
    record = tmp_path / "pids"
    escape = f"/usr/bin/setsid -f /bin/sh -c 'echo $$ >> {record}; exec /bin/sleep 100'"
    fake_binary(isolated_path, "lspci", f"{escape}; {escape}; echo done")
    body = f"from gdsdoctor.pipeline import check\ncheck(Path({str(host)!r}), deadline_s=30)"
    process = start_guarded(body, isolated_path, tmp_path)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    escaped = pids(record)
    assert len(escaped) == 4  # two per run, `lspci -vvv -D` and `lspci -tv`
    assert wait_dead(escaped), "a daemonised probe outlived gdsdoctor"


def nvme_leaving_a_child(bindir: Path, starts: Path, survivor: Path, lives_s: int) -> None:
    """`nvme list` that leaves a child behind for ``lives_s`` seconds (it inherits what the
    command held, as the command's own stuck copy would)."""
    fake_binary(
        bindir,
        "nvme",
        f'echo "$*" >> {starts}; [ "$1" = list ] || exit 0\n'
        f"/usr/bin/setsid -f /bin/sh -c 'echo $$ >> {survivor}; exec /bin/sleep {lives_s}'\necho '{{}}'",
    )


def test_a_probe_still_alive_from_an_earlier_run_is_reported_not_started_again(
    tmp_path: Path, isolated_path: Path
) -> None:
    """A probe stuck in the kernel survives SIGKILL; the next run must not pile another copy on
    it. Stand-in for the stuck copy: a child the first run's `nvme list` left behind (a library
    caller does not adopt or kill those), which never ends within the command's timeout."""
    starts, survivor = tmp_path / "starts", tmp_path / "survivor"
    nvme_leaving_a_child(isolated_path, starts, survivor, lives_s=30)
    nvme_list = (quick("nvme_list", timeout=1.0),)
    capture_live(this_kernels_root(tmp_path), probes=nvme_list, deadline_s=20)
    wait_for_lines(survivor, 1)
    [stuck] = pids(survivor)
    try:
        artifact = capture_live(this_kernels_root(tmp_path), probes=nvme_list, deadline_s=20).artifacts[
            "cmd/nvme-list.json"
        ]
        assert artifact.status is ArtifactStatus.TIMEOUT
        state = Path(f"/proc/{stuck}/stat").read_text().rsplit(")", 1)[1].split()[0]
        assert artifact.detail == (
            f"an earlier run's `nvme list -o json` is still running (pid {stuck}, {state} state); "
            "not started again"
        )
        assert starts.read_text().splitlines() == ["list -o json"]  # the second run started none
        os.kill(stuck, signal.SIGKILL)
        assert wait_dead([stuck])
        again = capture_live(this_kernels_root(tmp_path), probes=nvme_list, deadline_s=20).artifacts[
            "cmd/nvme-list.json"
        ]
        assert again.status is ArtifactStatus.OK  # the lock went with its last holder
        wait_for_lines(survivor, 2)  # its own survivor, killed below
    finally:
        for pid in pids(survivor):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_copy_stuck_in_the_kernel_is_reported_at_once(
    tmp_path: Path, isolated_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A holder in D state may never finish: no waiting for it (the scheduler state is the one
    thing faked here; a test cannot put a process in uninterruptible sleep at will)."""
    starts, survivor = tmp_path / "starts", tmp_path / "survivor"
    nvme_leaving_a_child(isolated_path, starts, survivor, lives_s=30)
    nvme_list = tuple(p for p in PROBES if p.section == "nvme_list")  # a 10 s timeout
    try:
        capture_live(this_kernels_root(tmp_path), probes=nvme_list, deadline_s=20)
        wait_for_lines(survivor, 1)
        asked: list[int | None] = []  # each poll of the lock asks the holder's state once
        monkeypatch.setattr(command_lock, "_state", lambda pid: asked.append(pid) or "D")
        artifact = capture_live(this_kernels_root(tmp_path), probes=nvme_list, deadline_s=20).artifacts[
            "cmd/nvme-list.json"
        ]
        assert len(asked) == 2  # one poll, then the message: no waiting for a stuck copy
        assert artifact.detail == (
            f"an earlier run's `nvme list -o json` is still running (pid {pids(survivor)[0]}, D state); "
            "not started again"
        )
    finally:
        for pid in pids(survivor):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_an_overlapping_runs_copy_that_finishes_is_waited_for(tmp_path: Path, isolated_path: Path) -> None:
    """Two checks overlapping are not an error: the second waits for the first's copy (within
    the command's timeout) and then runs its own."""
    starts, survivor = tmp_path / "starts", tmp_path / "survivor"
    nvme_leaving_a_child(isolated_path, starts, survivor, lives_s=1)
    nvme_list = tuple(p for p in PROBES if p.section == "nvme_list")
    capture_live(this_kernels_root(tmp_path), probes=nvme_list, deadline_s=20)
    artifact = capture_live(this_kernels_root(tmp_path), probes=nvme_list, deadline_s=20).artifacts[
        "cmd/nvme-list.json"
    ]
    assert artifact.status is ArtifactStatus.OK  # not "still running; not started again": it waited
    assert starts.read_text().splitlines() == ["list -o json", "list -o json"]


# --- 6. bench on SIGTERM ------------------------------------------------------------------------

FAKE_FIO = """\
case "$1" in --enghelp=*) exit 1;; esac
for argument; do case "$argument" in --directory=*) directory="${{argument#--directory=}}";; esac; done
/bin/dd if=/dev/zero of="$directory/gdsdoctor.0.0" bs=65536 count=16 2>/dev/null
echo $$ >> {record}
exec /bin/sleep 60
"""


def test_sigterm_during_bench_kills_fio_and_removes_its_scratch_directory(
    tmp_path: Path, isolated_path: Path
) -> None:
    """fio runs in a session of its own: SIGTERM used to leave it writing, and its scratch
    files (4 GiB by default) on the measured filesystem."""
    record, measured = tmp_path / "fio-pids", tmp_path / "ckpt"
    measured.mkdir()
    fake_binary(isolated_path, "fio", FAKE_FIO.format(record=record))
    body = f"from gdsdoctor.commands import bench_run as bench\nbench.run(Path({str(measured)!r}), 64 * 2**20, 60, engine='cpu-direct')"
    process = start_guarded(body, isolated_path, tmp_path)
    wait_for_lines(record, 1)
    [scratch] = measured.iterdir()
    assert scratch.name.startswith(".gdsdoctor-bench-") and (scratch / "gdsdoctor.0.0").exists()
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=20)
    assert (process.returncode, stderr) == (3, "gdsdoctor: interrupted\n")
    assert wait_dead(pids(record)), "fio outlived the interrupted bench"
    assert list(measured.iterdir()) == []


# --- 7. the bundle's temporary file -----------------------------------------------------------


def small_capture(payload: bytes = b"/dev/nvme1n1 /mnt/ckpt ext4 rw 0 0\n") -> Capture:
    capture = Capture("live", host={"hostname": "node-7"})
    capture.add("mounts", Artifact("proc/mounts", ArtifactStatus.OK, payload, "/proc/mounts"))
    return capture


def test_a_link_planted_at_the_temporary_name_is_not_followed(tmp_path: Path) -> None:
    """In a sticky directory another user could plant `NAME.tar.gz.partial` -> a file of
    root's, which `collect -o` then overwrote."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    output = tmp_path / "bundle.tar.gz"
    (tmp_path / "bundle.tar.gz.partial").symlink_to(victim)
    write_bundle(small_capture(), output)
    assert victim.read_text() == "precious\n"
    assert read_bundle(output).artifacts["proc/mounts"].status is ArtifactStatus.OK
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle.tar.gz", "bundle.tar.gz.partial", "victim"]


def test_a_bundle_is_never_written_through_or_over_a_link_at_its_name(tmp_path: Path) -> None:
    outside = tmp_path / "outside.tar.gz"
    output = tmp_path / "bundle.tar.gz"
    output.symlink_to(outside)  # dangling: `exists()` says no
    with pytest.raises(FileExistsError):
        write_bundle(small_capture(), output)
    assert not outside.exists() and output.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle.tar.gz"]


def test_the_gzip_header_names_the_bundle_not_the_temporary_file(tmp_path: Path) -> None:
    output = tmp_path / "node-7.tar.gz"
    write_bundle(small_capture(), output)
    header = output.read_bytes()[:64]
    assert header[3] & 0x08  # FNAME present
    assert header[10:].split(b"\0", 1)[0] == b"node-7.tar"  # what `gzip -dN` restores


def test_two_collects_to_one_name_never_leave_a_corrupt_bundle_reported_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both used to write one `.partial` file at once: one reported success over a corrupt or
    mixed archive. Now each writes its own temporary file; one wins, the other fails clearly."""
    output = tmp_path / "bundle.tar.gz"
    both_writing = threading.Barrier(2, timeout=10)
    original = tarfile.TarFile.addfile

    def addfile_together(self: tarfile.TarFile, *args: object, **kwargs: object) -> None:
        if getattr(self, "_seen_barrier", None) is None:
            self._seen_barrier = True  # type: ignore[attr-defined]
            both_writing.wait()
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tarfile.TarFile, "addfile", addfile_together)
    payloads = [os.urandom(3 * 2**20), os.urandom(3 * 2**20)]  # random: gzip cannot shrink them
    outcomes: dict[int, str] = {}

    def collect(index: int) -> None:
        try:
            write_bundle(small_capture(payloads[index]), output)
            outcomes[index] = "written"
        except OSError as error:
            outcomes[index] = f"{type(error).__name__}: {error}"

    threads = [threading.Thread(target=collect, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    winners = [i for i, outcome in outcomes.items() if outcome == "written"]
    assert len(winners) == 1, outcomes
    loser = outcomes[1 - winners[0]]
    assert loser.startswith("FileExistsError") and str(output) in loser
    assert read_bundle(output).artifacts["proc/mounts"].data == payloads[winners[0]]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle.tar.gz"]


@pytest.fixture
def tiny_filesystem(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs: a real ENOSPC (needs root and mount)."""
    mountpoint = tmp_path / "tiny"
    mountpoint.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k,mode=0755", "tmpfs", str(mountpoint)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.decode().strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", str(mountpoint)], check=False, capture_output=True)


def test_a_full_disk_leaves_nothing_behind(tiny_filesystem: Path) -> None:
    output = tiny_filesystem / "bundle.tar.gz"
    with pytest.raises(OSError) as raised:
        write_bundle(small_capture(os.urandom(2**20)), output)
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(output)
    assert list(tiny_filesystem.iterdir()) == []


def test_an_interrupt_while_writing_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # what SIGTERM raises once the handlers are installed

    monkeypatch.setattr(tarfile.TarFile, "addfile", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_bundle(small_capture(), tmp_path / "bundle.tar.gz")
    assert list(tmp_path.iterdir()) == []


# --- 8. redact never writes through a link ------------------------------------------------------


@pytest.mark.parametrize("planted", ["notes.txt.redacted", "redaction-map.json"])
def test_redact_refuses_a_dangling_link_at_an_output_name(tmp_path: Path, planted: str) -> None:
    """`exists()` follows links, so a dangling one looked free and the copy (or map) was written
    through it, creating a file wherever it pointed."""
    pasted = tmp_path / "notes.txt"
    pasted.write_text("inet 10.1.2.3/24 brd 10.1.2.255 scope global eth0\n")
    outside = tmp_path / "elsewhere" / "created"
    outside.parent.mkdir()
    (tmp_path / planted).symlink_to(outside)
    with pytest.raises(UserError, match=f"{planted} already exists"):
        redact_files([pasted])
    assert not outside.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "notes.txt", planted]


def test_a_failed_redact_removes_the_copies_it_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pasted = [tmp_path / "a.txt", tmp_path / "b.txt"]
    for path in pasted:
        path.write_text("inet 10.1.2.3/24 scope global eth0\n")

    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "redaction-map.json"))

    monkeypatch.setattr(redact_io, "write_private_map", disk_full)
    with pytest.raises(UserError, match=r"cannot write .*redaction-map\.json: No space left on device"):
        redact_files(pasted)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]  # a retry is not blocked


def test_a_report_output_replaces_a_link_at_its_name_never_its_target(tmp_path: Path) -> None:
    """`--output prometheus=PATH`: the rename replaces a link itself (held before this issue too)."""
    target = tmp_path / "root-owned"
    target.write_text("precious\n")
    output = tmp_path / "gdsdoctor.prom"
    output.symlink_to(target)
    write_atomic(output, "gdsdoctor_status 0\n")
    assert target.read_text() == "precious\n"
    assert not output.is_symlink() and output.read_text() == "gdsdoctor_status 0\n"


# --- 9. a failed collect --redact does not block its retry ----------------------------------------


def test_a_failed_redacted_collect_leaves_no_map_and_its_retry_succeeds(tiny_filesystem: Path) -> None:
    """The map was written first and stayed (0600, empty or not) when the bundle failed; the
    retry then refused because the map existed."""
    output = tiny_filesystem / "node.tar.gz"
    with pytest.raises(OSError) as raised:
        redact_io.write_redacted_bundle(small_capture(os.urandom(2**20)), output)
    assert raised.value.errno == errno.ENOSPC
    assert list(tiny_filesystem.iterdir()) == []
    map_path = redact_io.write_redacted_bundle(small_capture(), output)  # the retry, with room enough
    assert map_path == tiny_filesystem / "node.tar.gz.redaction-map.json"
    assert stat.S_IMODE(map_path.stat().st_mode) == 0o600
    assert json.loads(map_path.read_text())["maps"]["hostname"] == {
        "node-7": read_bundle(output).host["hostname"]
    }


# --- 10. IPv4-mapped IPv6 in dotted form ----------------------------------------------------------


@pytest.mark.parametrize(
    "written",
    [
        "::ffff:10.1.2.3",
        "0:0:0:0:0:ffff:10.1.2.3",
        "::FFFF:10.1.2.3",
        "0000:0000:0000:0000:0000:ffff:10.1.2.3",
    ],
)
def test_an_ipv4_mapped_address_in_dotted_form_maps_like_the_ipv4_inside(written: str) -> None:
    """`::ffff:10.1.2.3` became `::ffff:<mapped 10>.1.2.3` (three bytes in clear) and the long
    form was left as it was; SECURITY.md promises the IPv4 inside is mapped like itself."""
    redactor = Redactor(Mapper(key=b"issue-13".ljust(32, b"\0")))
    text = f"GID[  3]: {written}, RoCE v2\ninet 10.1.2.3/24 scope global eth0\n"
    redactor.learn(text)
    redacted = redactor.text(text)
    plain = redacted.split("inet ", 1)[1].split("/", 1)[0]
    prefix = written[: written.rfind(":") + 1]
    assert redacted.splitlines()[0] == f"GID[  3]: {prefix}{plain}, RoCE v2"
    assert plain != "10.1.2.3" and "1.2.3" not in redacted


# --- 11. a fallback does not hide why the first source failed -------------------------------------


def section_after_capture(probe: Probe, host: Path) -> tuple[dict, dict]:
    """The facts section as `check` makes it, and the manifest entries `collect` writes."""
    capture = capture_live(this_kernels_root(host), probes=(probe,), deadline_s=20)
    section = section_from(probe, [capture.artifacts[n] for n in capture.assignments[probe.section]])
    entries = {entry["name"]: entry for entry in manifest_for(capture)["artifacts"]}
    return section, entries


@pytest.mark.parametrize(
    ("script", "status", "detail"),
    [
        ("exec /bin/sleep 30", "timeout", "killed after 0.5s"),
        ("echo 'cuFile initialization failed' >&2; exit 3", "error", "cuFile initialization failed"),
    ],
)
def test_a_failing_gdscheck_on_path_is_reported_not_command_not_found(
    tmp_path: Path, isolated_path: Path, script: str, status: str, detail: str
) -> None:
    """Both gdscheck sources wrote `cmd/gdscheck-p.txt`: the missing CUDA-tools copy replaced
    the failed run, and the report said "command not found" for a gdscheck that hung."""
    assert not Path("/usr/local/cuda/gds/tools/gdscheck").exists()
    fake_binary(isolated_path, "gdscheck", script)
    section, entries = section_after_capture(quick("gdscheck"), tmp_path)
    assert (section["status"], section["detail"]) == (status, detail)
    assert entries["cmd/gdscheck-p.txt"]["status"] == status  # the bundle keeps the failed run
    assert entries["cmd/gds-tools-gdscheck-p.txt"]["status"] == "missing"


@pytest.mark.parametrize(
    ("script", "status", "detail"),
    [
        ("exec /bin/sleep 30", "timeout", "killed after 0.5s"),
        ("kill -SEGV $$", "error", "killed by signal SIGSEGV"),
    ],
)
def test_a_failed_dmesg_is_not_reported_as_the_fallbacks_unparsable_output(
    tmp_path: Path, isolated_path: Path, script: str, status: str, detail: str
) -> None:
    fake_binary(isolated_path, "dmesg", script)
    fake_binary(isolated_path, "journalctl", "echo '-- No entries --'")
    section, _ = section_after_capture(quick("dmesg"), tmp_path)
    assert (section["status"], section["artifact"], section["detail"]) == (status, "cmd/dmesg.txt", detail)


def test_a_missing_first_source_does_not_hide_the_fallbacks_failure(
    tmp_path: Path, isolated_path: Path
) -> None:
    fake_binary(isolated_path, "journalctl", "echo '-- No entries --'")  # no dmesg at all
    section, _ = section_after_capture(quick("dmesg"), tmp_path)
    assert (section["status"], section["artifact"]) == ("unparsable", "cmd/journalctl-k.txt")


def test_a_directory_bundle_never_writes_through_what_is_planted_in_it(tmp_path: Path) -> None:
    """`collect -o DIR` accepts an existing empty directory; in a shared place another user can
    plant links in it before or while we write (`cmd` -> a directory of root's, or
    `manifest.json` -> a file of root's). The bundle is built in a hidden directory beside it
    and renamed over the empty one: a directory someone filled is refused, nothing written in it."""
    victims = tmp_path / "victims"
    victims.mkdir()
    (victims / "precious").write_text("precious\n")
    capture = small_capture()
    capture.add("lsmod", Artifact("cmd/lsmod.txt", ArtifactStatus.OK, b"Module Size Used by\n", "lsmod"))
    for planted, target in [("cmd", victims), ("zz-last-file", victims / "precious")]:
        output = tmp_path / f"bundle-{planted}"
        output.mkdir()
        (output / planted).symlink_to(target)
        if planted == "zz-last-file":  # written last: everything written before it is removed
            capture.add("x", Artifact(planted, ArtifactStatus.OK, b"x\n", "x"))
        with pytest.raises(FileExistsError) as raised:  # built beside it: the rename finds it full
            write_bundle(capture, output)
        assert raised.value.filename == str(output)
        assert sorted(p.name for p in output.iterdir()) == [planted]
        assert sorted(p.name for p in victims.iterdir()) == ["precious"]
        assert (victims / "precious").read_text() == "precious\n"


def test_a_forked_worker_dies_of_the_signal_silently(tmp_path: Path, isolated_path: Path) -> None:
    """Fleet workers are forked with the handlers: SIGTERM (sent to the whole group by
    `timeout`) must end them as before, not print a KeyboardInterrupt traceback from each."""
    body = """
    import time
    worker = os.fork()
    if worker == 0:
        time.sleep(30)
        os._exit(0)
    time.sleep(0.2)
    os.kill(worker, 15)
    _, status = os.waitpid(worker, 0)
    print(os.WTERMSIG(status) if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}")
    """
    process = start_guarded(body, isolated_path, tmp_path)
    stdout, stderr = process.communicate(timeout=20)
    assert (process.returncode, stdout, stderr) == (0, "15\n", "")
