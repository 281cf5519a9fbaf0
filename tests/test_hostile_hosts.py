"""Hostile hosts: commands that hang, spew, ignore SIGTERM, leave grandchildren holding their
output or die oddly; no root, no /proc/modules, no pyudev, a container's --host-root. Each gives
a report that says what it could not see, in bounded time, and the host is never changed."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gdsdoctor.capture import runner
from gdsdoctor.capture.runner import run_command
from gdsdoctor.model import ArtifactStatus
from tests.conftest import REPO, THIS_KERNEL, fake_binary, validate_report, write_tree

PROC_MOUNTS = "/dev/nvme1n1 /mnt/ckpt ext4 rw,noatime,data=journal 0 0\n"
PROC_MODULES = "nvidia 56737792 1 nvidia_uvm, Live 0xffffffffc0600000 (POE)\n"


def alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def wait_dead(numbers: list[int], within: float = 30.0) -> bool:
    """Whether they all died: at once when they were killed (the bound is a guard, not a figure)."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not any(alive(p) for p in numbers):
            return True
        time.sleep(0.05)
    return False


# --- the runner -----------------------------------------------------------------------------


def test_sleeping_command_times_out_and_its_group_dies(tmp_path: Path, isolated_path: Path) -> None:
    record = tmp_path / "pids"
    script = f"trap '' TERM; /bin/sleep 30 & echo $! >> {record}; echo $$ >> {record}; echo partial; wait"
    artifact = run_command("cmd/hang.txt", [str(fake_binary(isolated_path, "hang", script))], timeout=0.5)
    assert (artifact.status, artifact.detail, artifact.data) == (
        ArtifactStatus.TIMEOUT,
        "killed after 0.5s",
        b"partial\n",
    )
    assert wait_dead(pids(record))


def test_spewing_command_is_cut_at_the_cap_while_reading(
    isolated_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spew = fake_binary(isolated_path, "spew", "exec /bin/cat /dev/zero")
    artifact = run_command("cmd/spew.txt", [str(spew)], timeout=20)
    # killed at the cap (the detail says so), not at the timeout (it would say "killed after 20s")
    assert artifact.status is ArtifactStatus.ERROR and len(artifact.data) == runner.MAX_OUTPUT_BYTES
    assert artifact.detail.startswith(f"stdout exceeded {runner.MAX_OUTPUT_BYTES} bytes; killed")
    monkeypatch.setattr(runner, "MAX_STDERR_BYTES", 1000)
    noisy = fake_binary(isolated_path, "noisy", "echo ok; exec /bin/cat /dev/zero >&2")
    artifact = run_command("cmd/noisy.txt", [str(noisy)], timeout=20)
    assert (artifact.status, artifact.data) == (ArtifactStatus.ERROR, b"ok\n")
    assert artifact.detail.startswith("stderr exceeded 1000 bytes")


def test_memory_stays_bounded_while_reading_a_spew(
    isolated_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tracemalloc

    monkeypatch.setattr(runner, "MAX_OUTPUT_BYTES", 2 * 1024 * 1024)
    spew = fake_binary(isolated_path, "spew", "exec /bin/cat /dev/zero")
    tracemalloc.start()
    try:
        run_command("cmd/spew.txt", [str(spew)], timeout=20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024


def test_grandchild_holding_stdout_does_not_hold_us(tmp_path: Path, isolated_path: Path) -> None:
    record = tmp_path / "pids"
    script = f"/bin/sleep 30 & echo $! >> {record}; echo done; exit 0"
    artifact = run_command("cmd/x.txt", [str(fake_binary(isolated_path, "daemonish", script))], timeout=20)
    # held by the grandchild, the run would have ended at the timeout (20 s < the sleep's 30 s): TIMEOUT
    assert (artifact.status, artifact.data, artifact.exit_code) == (ArtifactStatus.OK, b"done\n", 0)
    assert wait_dead(pids(record))  # same process group: killed with it


def test_grandchild_in_its_own_session_does_not_hold_us(tmp_path: Path, isolated_path: Path) -> None:
    if not Path("/usr/bin/setsid").exists():
        pytest.skip("no setsid")
    record = tmp_path / "pids"
    # held by the escaped grandchild, the run would end at the timeout (20 s < its 60 s): TIMEOUT
    script = f"/usr/bin/setsid /bin/sh -c 'echo $$ >> {record}; exec /bin/sleep 60' & echo done"
    try:
        artifact = run_command("cmd/x.txt", [str(fake_binary(isolated_path, "escapes", script))], timeout=20)
        assert (artifact.status, artifact.data) == (ArtifactStatus.OK, b"done\n")
    finally:
        for pid in pids(record):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_command_that_closes_stdout_and_hangs_times_out(isolated_path: Path) -> None:
    script = "echo early; exec >&- 2>&-; /bin/sleep 30"
    artifact = run_command("cmd/x.txt", [str(fake_binary(isolated_path, "closer", script))], timeout=0.5)
    assert (artifact.status, artifact.data) == (ArtifactStatus.TIMEOUT, b"early\n")


@pytest.mark.parametrize(
    ("script", "status", "code", "detail"),
    [
        ("kill -SEGV $$", ArtifactStatus.ERROR, -11, "killed by signal SIGSEGV"),
        ("kill -KILL $$", ArtifactStatus.ERROR, -9, "killed by signal SIGKILL"),
        ("exit 255", ArtifactStatus.ERROR, 255, "exit status 255"),
        ("echo 'nvme: Permission denied' >&2; exit 1", ArtifactStatus.DENIED, 1, "nvme: Permission denied"),
        ("printf '\\377\\376\\000binary'; exit 0", ArtifactStatus.OK, 0, ""),
    ],
)
def test_odd_exits(isolated_path: Path, script: str, status: ArtifactStatus, code: int, detail: str) -> None:
    artifact = run_command("cmd/x.txt", [str(fake_binary(isolated_path, "odd", script))], timeout=5)
    assert (artifact.status, artifact.exit_code, artifact.detail) == (status, code, detail)


def test_commands_that_cannot_start(isolated_path: Path) -> None:
    not_executable = isolated_path / "plain"
    not_executable.write_text("echo hi\n")
    no_shebang = isolated_path / "noshebang"
    no_shebang.write_bytes(b"\x00\x01garbage")
    no_shebang.chmod(0o755)
    denied = run_command("a", [str(not_executable)], timeout=2)
    odd = run_command("b", [str(no_shebang)], timeout=2)
    nul = run_command("c", ["ls\x00x"], timeout=2)
    assert denied.status is ArtifactStatus.DENIED and odd.status is ArtifactStatus.ERROR
    assert nul.status is ArtifactStatus.ERROR and "Exec format error" in odd.detail


# --- the whole check ------------------------------------------------------------------------


def cli(
    *args: str, env: dict[str, str], cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gdsdoctor", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(REPO / "src"), **env},
        cwd=cwd,
    )


def check_report(host: Path, isolated_path: Path) -> dict:
    """`gdsdoctor check --host-root HOST --format json` with only the fake commands on PATH."""
    result = cli(
        "check",
        "--host-root",
        str(host),
        "--format",
        "json",
        "--deadline",
        "20",
        env={"PATH": str(isolated_path)},
    )
    return json.loads(result.stdout)


def test_check_with_hanging_probe_returns_at_the_deadline(tmp_path: Path, isolated_path: Path) -> None:
    """No /proc/modules under the host root, so `lsmod` runs, and hangs ignoring SIGTERM with a
    grandchild holding its output: check returns at its deadline, says so, and leaves nothing."""
    host = write_tree(tmp_path / "host", {**THIS_KERNEL, "proc/mounts": PROC_MOUNTS})
    record = tmp_path / "pids"
    fake_binary(isolated_path, "lsmod", f"trap '' TERM; /bin/sleep 60 & echo $! $$ >> {record}; wait")
    result = cli(
        "check",
        "--host-root",
        str(host),
        "--deadline",
        "3",
        "--format",
        "json",
        env={"PATH": str(isolated_path)},
    )
    report = json.loads(result.stdout)
    validate_report(report)
    modules = next(p for p in report["probes"] if p["name"] == "modules")
    assert modules["status"] == "timeout" and "global deadline (3s)" in modules["detail"]
    assert "Traceback" not in result.stderr
    assert wait_dead(pids(record)), "the hung command outlived gdsdoctor"


def test_no_proc_modules_and_no_commands_say_what_is_missing(tmp_path: Path, isolated_path: Path) -> None:
    host = write_tree(tmp_path / "host", {**THIS_KERNEL, "proc/mounts": PROC_MOUNTS})
    report = check_report(host, isolated_path)
    statuses = {p["name"]: (p["status"], p["detail"]) for p in report["probes"]}
    assert statuses["modules"] == ("missing", "/proc/modules does not exist")
    assert statuses["mounts"][0] == "ok"
    assert "ext4-data-journal" in [f["id"] for f in report["findings"]]


def test_container_host_root_is_read_not_the_real_host(tmp_path: Path, isolated_path: Path) -> None:
    host = write_tree(
        tmp_path / "host",
        {
            "proc/mounts": "/dev/nvme7n1 /very/distinctive ext4 rw,data=journal 0 0\n",
            "proc/modules": PROC_MODULES,
            "sys/class/nvme/.keep": "",
            "sys/bus/pci/devices/.keep": "",
        },
    )
    report = check_report(host, isolated_path)
    finding = next(f for f in report["findings"] if f["id"] == "ext4-data-journal")
    assert any("/very/distinctive" in e["text"] for e in finding["evidence"])
    assert report["host"]["host_root"] == str(host)


def test_without_pyudev(tmp_path: Path, isolated_path: Path) -> None:
    host = write_tree(
        tmp_path / "host", {**THIS_KERNEL, "proc/mounts": PROC_MOUNTS, "proc/modules": PROC_MODULES}
    )
    code = (
        "import sys; sys.modules['pyudev'] = None; sys.argv = ['gdsdoctor', 'check', '--host-root', "
        f"{str(host)!r}, '--format', 'json', '--deadline', '20']; from gdsdoctor.cli import main; main()"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO / "src"), "PATH": str(isolated_path)},
    )
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    validate_report(json.loads(result.stdout))


@pytest.fixture
def world_readable_tmp() -> Iterator[Path]:
    """A temporary directory another user can traverse (pytest's tmp_path is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="gdsdoctor-nobody-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_not_root(world_readable_tmp: Path, isolated_path: Path) -> None:
    """As user nobody (privileges dropped after the imports, since this interpreter may live
    under /root): unreadable files are `denied`, the report is valid, no traceback."""
    host = write_tree(world_readable_tmp / "host", {"proc/mounts": PROC_MOUNTS, "proc/modules": PROC_MODULES})
    for path in (host, host / "proc"):
        path.chmod(0o755)
    (host / "proc" / "mounts").chmod(0o644)
    (host / "proc" / "modules").chmod(0o000)
    drop = "os.setgroups([]); os.setgid(65534); os.setuid(65534)" if os.geteuid() == 0 else "pass"
    code = (  # everything imported and the rules loaded first: the interpreter's files may be unreadable to nobody
        "import os, sys, importlib.readers; from gdsdoctor.pipeline import check, rules; rules(); "
        "import gdsdoctor.facts.document, gdsdoctor.facts.section, gdsdoctor.engine.evaluate, "
        "gdsdoctor.engine.rank, gdsdoctor.report.build; "
        "from gdsdoctor.report.json_report import render_json; "
        f"{drop}; report = check(__import__('pathlib').Path({str(host)!r}), deadline_s=30).report; "
        "sys.stdout.write(render_json(report))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=world_readable_tmp,
        env={**os.environ, "PYTHONPATH": str(REPO / "src"), "PATH": str(isolated_path) + ":/usr/bin:/bin"},
    )
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    report = json.loads(result.stdout)
    validate_report(report)
    statuses = {p["name"]: p["status"] for p in report["probes"]}
    if os.geteuid() == 0 or not os.access(host / "proc" / "modules", os.R_OK):
        assert statuses["modules"] in ("denied", "missing", "error")
        assert report["host"]["euid"] != "0"
    assert statuses["mounts"] == "ok"


def _snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    state = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        digest = (
            hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and not path.is_symlink() else ""
        )
        state[str(path.relative_to(root))] = (info.st_mtime_ns, info.st_mode, digest)
    return state


def test_check_and_collect_never_change_the_host(tmp_path: Path, isolated_path: Path) -> None:
    host = write_tree(
        tmp_path / "host",
        {
            "proc/mounts": PROC_MOUNTS,
            "proc/modules": PROC_MODULES,
            "etc/cufile.json": '{"logging": {"dir": "/var/log"}}',
            "etc/nvme/hostnqn": "nqn.2014-08.org.nvmexpress:uuid:0c8d3b6e-5b9a-4a34-9f4b-2d2c6d9a1f00\n",
            "sys/class/nvme/nvme0/serial": "S4EWNX0R123456\n",
            "sys/class/nvme/nvme0/model": "Samsung SSD\n",
        },
    )
    (host / "sys" / "class" / "link").symlink_to("nvme")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    fake_binary(isolated_path, "gdscheck", "echo 'GDS release version: 1.7.2.10'")
    before = _snapshot(host), _snapshot(cwd), _snapshot(isolated_path)
    env = {"PATH": str(isolated_path)}
    checked = cli("check", "--host-root", str(host), "--deadline", "20", env=env, cwd=cwd)
    collected = cli(
        "collect", "-o", "b.tar.gz", "--host-root", str(host), "--deadline", "20", env=env, cwd=cwd
    )
    assert checked.returncode in (0, 1, 2, 3) and collected.returncode == 0, collected.stderr
    after = _snapshot(host), _snapshot(cwd), _snapshot(isolated_path)
    assert after[0] == before[0] and after[2] == before[2]
    assert set(after[1]) - set(before[1]) == {"b.tar.gz"}  # the output file, nothing else


def test_dmesg_restricted_is_denied(tmp_path: Path, isolated_path: Path) -> None:
    """kernel.dmesg_restrict=1 for a non-root user: dmesg and journalctl refuse; the report says so."""
    host = write_tree(
        tmp_path / "host", {**THIS_KERNEL, "proc/mounts": PROC_MOUNTS, "proc/modules": PROC_MODULES}
    )
    refusal = "echo '{0}: read kernel buffer failed: Operation not permitted' >&2; exit 1"
    fake_binary(isolated_path, "dmesg", refusal.format("dmesg"))
    fake_binary(isolated_path, "journalctl", refusal.format("journalctl"))
    dmesg = next(p for p in check_report(host, isolated_path)["probes"] if p["name"] == "dmesg")
    assert dmesg["status"] == "denied" and "Operation not permitted" in dmesg["detail"]


def test_collect_to_a_read_only_place_is_one_line(tmp_path: Path, isolated_path: Path) -> None:
    host = write_tree(tmp_path / "host", {**THIS_KERNEL, "proc/mounts": PROC_MOUNTS})
    result = cli(
        "collect",
        "-o",
        "/proc/gdsdoctor-test.tar.gz",
        "--host-root",
        str(host),
        "--deadline",
        "10",
        env={"PATH": str(isolated_path)},
    )
    assert (
        result.returncode == 3 and "Traceback" not in result.stderr and "internal error" not in result.stderr
    )
    assert result.stderr.startswith("gdsdoctor: cannot write /proc/gdsdoctor-test.tar.gz: ")


SECRET = "SECRET-OUTSIDE-THE-HOST-ROOT"


def _sysfs_with_links_out(tmp_path: Path) -> Path:
    """A --host-root whose sysfs leads out of itself at every level a reader walks: attribute
    files, device directories, and the lists inside them, all linking to a secret tree."""
    from gdsdoctor.probes import nvme_sysfs, pci, rdma

    outside = tmp_path / "outside"
    outside.mkdir()
    names = {*pci.ATTRS, *rdma.IB_DEVICE_ATTRS, *rdma.IB_PORT_ATTRS, *nvme_sysfs.CONTROLLER_ATTRS}
    names |= {*nvme_sysfs.BLOCK_ATTRS, *nvme_sysfs.QUEUE_ATTRS, "mtu", "operstate", "speed", "type"}
    names |= {"cpulist", "distance", "meminfo", SECRET}
    for name in names:
        (outside / name).write_text(f"{SECRET}\n")
    host = tmp_path / "host"
    directories = {
        "sys/bus/pci/devices/0000:00:01.0": pci.ATTRS,
        "sys/kernel/iommu_groups/0": ("type",),
        "sys/devices/system/node/node0": ("cpulist", "distance", "meminfo"),
        "sys/class/infiniband/mlx5_0": rdma.IB_DEVICE_ATTRS,
        "sys/class/infiniband/mlx5_0/ports/1": rdma.IB_PORT_ATTRS,
        "sys/class/net/eth0": ("mtu", "operstate", "speed"),
        "sys/class/nvme/nvme0": nvme_sysfs.CONTROLLER_ATTRS,
        "sys/block/nvme0n1": nvme_sysfs.BLOCK_ATTRS,
        "sys/block/nvme0n1/queue": nvme_sysfs.QUEUE_ATTRS,
    }
    for directory, attributes in directories.items():  # every attribute a link out
        (host / directory).mkdir(parents=True)
        for name in attributes:
            (host / directory / name).symlink_to(outside / name)
    for link in (  # whole directories (and the lists in them) linking out
        "sys/bus/pci/devices/0000:00:02.0",
        "sys/kernel/iommu_groups/1",
        "sys/kernel/iommu_groups/0/devices",
        "sys/devices/system/node/node1",
        "sys/class/infiniband/mlx5_1",
        "sys/class/infiniband/mlx5_0/ports/2",
        "sys/class/infiniband/mlx5_0/ports/1/counters",
        "sys/class/infiniband/mlx5_0/ports/1/hw_counters",
        "sys/class/net/eth1",
        "sys/class/nvme/nvme1",
        "sys/block/nvme1n1",
        "sys/module/nvme_core/parameters",
    ):
        (host / link).parent.mkdir(parents=True, exist_ok=True)
        (host / link).symlink_to(outside)
    return host


def test_no_reader_reads_through_a_link_out_of_the_host_root(tmp_path: Path) -> None:
    from gdsdoctor.capture.live import _run_reader
    from gdsdoctor.probes import PROBES

    host = _sysfs_with_links_out(tmp_path)
    readers = [source for probe in PROBES for source in probe.sources if source.reader is not None]
    assert len(readers) > 10
    for source in readers:  # captured as check does: a reader may also say missing or denied
        artifact = _run_reader(source, host)
        assert SECRET.encode() not in artifact.data, source.artifact
