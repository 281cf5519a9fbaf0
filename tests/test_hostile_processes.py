"""Hostile processes and interrupted runs: SIGTERM or SIGHUP in the middle of a check, a
collect or a bench, probes that daemonise or stay stuck from an earlier run, commands that
fail in ways a fallback must not hide. Nothing outlives gdsdoctor, nothing is left half-written,
and the report names what really happened.

The signal tests run the pipeline in a child interpreter that does what the command line does
at start and on its way out (``signals.install_signal_handlers``, then ``runner.kill_running``
before leaving with ``os._exit``), so the signal reaches a process of its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gdsdoctor.capture.live import capture_live
from gdsdoctor.model import ArtifactStatus
from gdsdoctor.probes import PROBES
from tests.conftest import REPO, fake_binary, write_tree
from tests.test_hostile_hosts import PROC_MOUNTS, alive, pids, wait_dead

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


# --- 5. SIGTERM / SIGHUP leave no probe behind ------------------------------------------------


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
    host = write_tree(tmp_path / "host", {"proc/mounts": PROC_MOUNTS})
    record = tmp_path / "pids"
    hanging_probes(isolated_path, record)
    out = tmp_path / "out.tar.gz"
    body = {
        "check": f"from gdsdoctor.pipeline import check\ncheck(Path({str(host)!r}), deadline_s=60)",
        "collect": (
            "from gdsdoctor.capture.live import capture_live\n"
            "from gdsdoctor.capture.bundle import write_bundle\n"
            f"write_bundle(capture_live(Path({str(host)!r}), deadline_s=60), Path({str(out)!r}))"
        ),
    }[command]
    process = start_guarded(body, isolated_path, tmp_path)
    wait_for_lines(record, HANGING_RUNS)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=10)
    assert (process.returncode, stderr) == (3, "gdsdoctor: interrupted\n")
    assert wait_dead(pids(record)), "a probe outlived the interrupted run"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "host", "pids"]  # no bundle, no temp


def test_a_probe_that_daemonises_dies_with_the_run(tmp_path: Path, isolated_path: Path) -> None:
    """`setsid -f` takes a process out of the probe's session and group: killing the group
    missed it, and it outlived even a normal run."""
    host = write_tree(tmp_path / "host", {"proc/mounts": PROC_MOUNTS})
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


def test_a_probe_still_alive_from_an_earlier_run_is_reported_not_started_again(
    tmp_path: Path, isolated_path: Path
) -> None:
    """A probe stuck in the kernel survives SIGKILL; the next run must not pile another copy on
    it. Stand-in for the stuck copy: a child the first run's `nvme list` left behind (a library
    caller does not adopt or kill those), which inherits what the command held."""
    host = write_tree(tmp_path / "host", {"proc/mounts": PROC_MOUNTS})
    starts, survivor = tmp_path / "starts", tmp_path / "survivor"
    fake_binary(
        isolated_path,
        "nvme",
        f'echo "$*" >> {starts}; [ "$1" = list ] || exit 0\n'
        f"/usr/bin/setsid -f /bin/sh -c 'echo $$ > {survivor}; exec /bin/sleep 30'\necho '{{}}'",
    )
    nvme_list = tuple(p for p in PROBES if p.section == "nvme_list")
    capture_live(host, probes=nvme_list, deadline_s=20)
    wait_for_lines(survivor, 1)
    [stuck] = pids(survivor)
    try:
        artifact = capture_live(host, probes=nvme_list, deadline_s=20).artifacts["cmd/nvme-list.json"]
        assert artifact.status is ArtifactStatus.TIMEOUT
        state = Path(f"/proc/{stuck}/stat").read_text().rsplit(")", 1)[1].split()[0]
        assert artifact.detail == (
            f"an earlier run's `nvme list -o json` is still running (pid {stuck}, {state} state); "
            "not started again"
        )
        assert starts.read_text().splitlines() == ["list -o json"]  # the second run started none
    finally:
        os.kill(stuck, signal.SIGKILL)
    assert wait_dead([stuck])
    again = capture_live(host, probes=nvme_list, deadline_s=20).artifacts["cmd/nvme-list.json"]
    assert again.status is ArtifactStatus.OK  # the lock went with its last holder
    assert not alive(stuck)


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
    body = f"from gdsdoctor import bench\nbench.run(Path({str(measured)!r}), 64 * 2**20, 60, engine='cpu-direct')"
    process = start_guarded(body, isolated_path, tmp_path)
    wait_for_lines(record, 1)
    [scratch] = measured.iterdir()
    assert scratch.name.startswith(".gdsdoctor-bench-") and (scratch / "gdsdoctor.0.0").exists()
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=20)
    assert (process.returncode, stderr) == (3, "gdsdoctor: interrupted\n")
    assert wait_dead(pids(record)), "fio outlived the interrupted bench"
    assert list(measured.iterdir()) == []
