"""`gdsdoctor watch` on the command line: the JSON stream, signals, recording, errors, the view."""

from __future__ import annotations

import io
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from gdsdoctor.cli.app import run as run_cli
from gdsdoctor.watch import devices
from gdsdoctor.watch.session import Options, State, _wait_until, start, stop_on_signals
from gdsdoctor.watch.view import phase_line, renderable
from tests.conftest import validate_report

COMMAND = [sys.executable, "-m", "gdsdoctor", "watch"]


def lines_of(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_json_stream_is_samples_then_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = run_cli(
        ["watch", "--path", str(tmp_path), "--every", "0.2s", "--duration", "0.5s", "--format", "json"]
    )
    records = lines_of(capsys.readouterr().out)
    kinds = [r["type"] for r in records]
    # a loaded host may take fewer samples in the half second than an idle one (the first and the
    # last are always taken)
    assert (
        kinds[:2] == ["header", "sample"] and kinds[-2:] == ["end", "report"] and kinds.count("sample") >= 2
    )
    report = records[-1]
    validate_report({k: v for k, v in report.items() if k != "type"})
    assert code == report["summary"]["exit_code"]  # the host's own state (a normal collect) counts too
    # nothing here writes; other work on the host's disk may, and then a phase comes first
    if "phase" not in kinds:
        assert not [f for f in report["findings"] if f["id"].startswith("watch-")]
    assert records[-2]["reason"] == "duration"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--duration", "1s", "--until-idle"], "not both"),
        (["--every", "often"], "--every"),
        (["--every", "10ms"], "at least 0.1s"),
        (["--path", "/no/such/dir"], "no such file or directory"),
        (["--format", "xml"], "--help"),
        (["--params", "seventy"], "parameter count"),
        (["--record", "/no/such/dir/rec.tar.gz"], "does not exist"),
        (["--record", "rec.json"], "--record rec.json: a bundle is NAME.tar.gz or a directory"),
    ],
)
def test_bad_options_are_one_line_exit_3(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        run_cli(["watch", "--duration", "1s", *args] if "--duration" not in args else ["watch", *args]) == 3
    )
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_watch_with_the_report_so_far(sig: signal.Signals, tmp_path: Path) -> None:
    process = subprocess.Popen(
        [*COMMAND, "--path", str(tmp_path), "--every", "0.2s", "--format", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert json.loads(process.stdout.readline())["type"] == "header"
        first = process.stdout.readline()  # the first sample: the watch is running
        assert json.loads(first)["type"] == "sample"
        process.send_signal(sig)
        rest, err = process.communicate(timeout=20)
    finally:
        process.kill()  # a watch that failed the test must not outlive it
        process.wait()
    records = lines_of(rest)
    assert records[-2]["type"] == "end" and records[-2]["reason"] == "interrupted"
    assert records[-1]["type"] == "report"
    assert process.returncode == records[-1]["summary"]["exit_code"], err
    assert "Traceback" not in err


def test_record_then_analyze_gives_the_same_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = tmp_path / "rec.tar.gz"
    umask = os.umask(0)  # the recording is its owner's alone whatever the umask
    try:
        code = run_cli(
            [
                "watch",
                "--path",
                str(tmp_path),
                "--every",
                "0.2s",
                "--duration",
                "0.4s",
                "--format",
                "json",
                "--record",
                str(bundle),
                "--params",
                "1B",
            ]
        )
    finally:
        os.umask(umask)
    assert stat.S_IMODE(bundle.stat().st_mode) == 0o600
    watched = lines_of(capsys.readouterr().out)[-1]
    again = run_cli(["analyze", str(bundle), "--format", "json"])
    replayed = json.loads(capsys.readouterr().out)
    assert code == again
    assert [f["id"] for f in replayed["findings"]] == [f["id"] for f in watched["findings"]]
    watch_probe = next(p for p in replayed["probes"] if p["name"] == "watch")
    assert watch_probe["status"] == "ok"
    # the recorded job (--params 1B) is judged again: every cause ends as it did live
    outcomes = {c["id"]: c["outcome"] for c in watched["causes"]}
    assert {c["id"]: c["outcome"] for c in replayed["causes"]} == outcomes
    assert outcomes["capacity-below-checkpoint-size"] == "clear"  # judged with the job, not inconclusive
    # a job given to analyze overrides the recorded one: 1000T parameters do not fit
    run_cli(["analyze", str(bundle), "--format", "json", "--params", "1000T"])
    overridden = {c["id"]: c["outcome"] for c in json.loads(capsys.readouterr().out)["causes"]}
    assert overridden["capacity-below-checkpoint-size"] == "fired"


def test_text_output_off_a_terminal_ends_with_the_report(tmp_path: Path) -> None:
    result = subprocess.run(
        [*COMMAND, "--path", str(tmp_path), "--every", "0.2s", "--duration", "0.4s"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode in (0, 1, 2), result.stderr  # the host's state decides which
    assert f"(exit {result.returncode})" in result.stdout.splitlines()[-1]
    # how it ends, once, under the header (no live view to show it off a terminal)
    [ending] = [line for line in result.stdout.splitlines() if line.startswith("elapsed ")]
    assert ending == "elapsed 0:00 · ends in 0:00 (--duration) · Ctrl-C ends it with the report"


def test_the_live_view_draws_devices_phase_and_events(tmp_path: Path) -> None:
    from rich.console import Console

    state, reader, _followers = start(Options(str(tmp_path)))
    state.add_sample(reader.sample())
    state.add_sample(reader.sample())
    state.add_event(
        {
            "type": "event",
            "t": time.time(),
            "source": "kmsg",
            "kind": "nvme_reset",
            "device": "nvme1",
            "message": "nvme nvme1: resetting controller \x1b[31m",
        }
    )
    console = Console(file=io.StringIO(), width=120, force_terminal=False)
    console.print(renderable(state))
    drawn = console.file.getvalue()
    # the host's own disk decides whether the two samples saw a write (CI's did, under a loaded
    # suite): the view draws whichever phase the state holds
    phase = phase_line(state.phases[-1]) if state.phases else "no write phase yet"
    assert "gdsdoctor watch" in drawn and phase in drawn
    assert "elapsed 0:0" in drawn and "Ctrl-C ends it with the report" in drawn
    assert "nvme_reset nvme1" in drawn and "\x1b[31m" not in drawn
    top = state.head["devices"]["top"]
    assert top is None or top in drawn


def test_the_live_view_before_any_sample_says_no_write_phase_yet(tmp_path: Path) -> None:
    from rich.console import Console

    state, _reader, _followers = start(Options(str(tmp_path)))
    console = Console(file=io.StringIO(), width=120, force_terminal=False)
    console.print(renderable(state))
    assert "no write phase yet" in console.file.getvalue()


def test_under_a_host_root_events_are_not_followed_and_it_says_so(tmp_path: Path) -> None:
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/mountinfo").write_text("20 1 0:50 / / rw - tmpfs none rw\n")
    state, reader, followers = start(Options("/", host_root=tmp_path))
    assert followers == []
    assert any("only on the host itself" in n for n in state.head["notes"])
    sample = reader.sample()
    assert "disks" not in sample  # a tmpfs: no block device to sample
    assert any("no block device" in n for n in state.head["notes"])


def make_sysfs(root: Path, links: dict[str, str]) -> None:
    for link, target in links.items():
        path = root / link
        path.parent.mkdir(parents=True, exist_ok=True)
        (root / target).mkdir(parents=True, exist_ok=True)
        path.symlink_to(root / target)


def test_devices_resolve_through_partition_dm_md_and_multipath(tmp_path: Path) -> None:
    """XFS on dm-0 over md0 over nvme0n1p1 + nvme1n1 (a multipath head with two paths)."""
    devices_dir = "sys/devices/virtual/block"
    make_sysfs(
        tmp_path,
        {
            "sys/dev/block/253:0": f"{devices_dir}/dm-0",
            "sys/class/block/dm-0": f"{devices_dir}/dm-0",
            f"{devices_dir}/dm-0/slaves/md0": f"{devices_dir}/md0",
            "sys/class/block/md0": f"{devices_dir}/md0",
            f"{devices_dir}/md0/slaves/nvme0n1p1": "sys/devices/pci/nvme/nvme0/nvme0n1/nvme0n1p1",
            "sys/class/block/nvme0n1p1": "sys/devices/pci/nvme/nvme0/nvme0n1/nvme0n1p1",
            "sys/class/block/nvme0n1": "sys/devices/pci/nvme/nvme0/nvme0n1",
            "sys/class/block/nvme0n1/device": "sys/devices/pci/nvme/nvme0",
            f"{devices_dir}/md0/slaves/nvme1n1": "sys/devices/virtual/nvme-subsystem/nvme-subsys1/nvme1n1",
            "sys/class/block/nvme1n1": "sys/devices/virtual/nvme-subsystem/nvme-subsys1/nvme1n1",
            "sys/class/block/nvme1n1/multipath/nvme1c1n1": "sys/devices/fabric/nvme1/nvme1c1n1",
            "sys/class/block/nvme1n1/multipath/nvme1c2n1": "sys/devices/fabric/nvme2/nvme1c2n1",
        },
    )
    (tmp_path / "sys/class/block/nvme0n1p1/partition").write_text("1\n")
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/mountinfo").write_text("40 1 253:0 / /ckpt rw - xfs /dev/mapper/vg-ckpt rw\n")
    found = devices.resolve("/ckpt/step-100", tmp_path)
    assert found["top"] == "dm-0" and found["members"] == ["md0"]
    assert found["below"] == ["md0", "nvme0n1p1", "nvme0n1", "nvme1n1", "nvme1c1n1", "nvme1c2n1"]
    assert found["controllers"] == ["nvme0", "nvme1", "nvme2"]


def test_not_root_degrades_and_says_what_it_cannot_read() -> None:
    if os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists():
        pytest.skip("needs root to drop to nobody with setpriv")
    unusable = _why_nobody_cannot_import_gdsdoctor()
    if unusable:
        pytest.skip(f"gdsdoctor cannot be imported as nobody here: {unusable}")
    with tempfile.TemporaryDirectory() as name:  # under /tmp: pytest's own tmp_path is root's only
        Path(name).chmod(0o755)
        result = _watch_as_nobody(Path(name))
    records = lines_of(result.stdout)
    assert records[-1]["type"] == "report", result.stderr
    notes = records[0]["notes"]
    assert any(note.startswith("not root") for note in notes)
    if Path("/proc/sys/kernel/dmesg_restrict").read_text().strip() == "1":
        assert any("/dev/kmsg permission denied" in note for note in notes)
    assert result.returncode == records[-1]["summary"]["exit_code"]


def _why_nobody_cannot_import_gdsdoctor() -> str:
    """Empty when nobody can import the installed gdsdoctor; else what Python said. An
    interpreter under a private home, or packages installed under umask 077 (seen in CI: "No
    module named gdsdoctor"), are the machine's limits, not watch's."""
    result = subprocess.run(
        [*_AS_NOBODY, sys.executable, "-c", "import gdsdoctor.cli"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    return "" if result.returncode == 0 else (result.stderr.strip().splitlines() or ["?"])[-1]


_AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def _watch_as_nobody(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *_AS_NOBODY,
            *COMMAND,
            "--path",
            str(tmp_path),
            "--every",
            "0.2s",
            "--duration",
            "0.4s",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": "/nonexistent"},
    )


def test_a_phase_is_streamed_once_it_ends_with_its_limiters() -> None:
    from gdsdoctor.watch.session import _emit_ended_phases
    from tests.test_watch_phases import event, head, samples

    state = State(head())
    emitted: list[dict] = []
    for index, sample in enumerate(samples([500, 500, 500, 500, 0, 0, 0, 0])):
        sample.pop("line")
        state.add_sample(sample)
        if index == 2:
            reset = event("nvme_reset", "nvme1", 2.0)
            reset.pop("line")
            state.add_event(reset)
        _emit_ended_phases(state, lambda record, _state: emitted.append(record))
        if index < 7:
            assert emitted == []  # still writing, or not yet 3 s below
    [phase] = emitted
    assert phase["type"] == "phase" and not phase["ongoing"]
    assert [lim["kind"] for lim in phase["limiters"]] == ["controller_reset"]


def test_the_live_view_says_elapsed_time_how_it_ends_and_the_projected_stall() -> None:
    from gdsdoctor.watch.view import ending_line, stall_line
    from tests.test_watch_phases import head, samples

    job = {"params": "70B", "budget": "5%"}
    state = State({**head(), "job": job}, until_idle=True)
    assert stall_line(state) == "--params 70B: the projected stall comes with the first write phase"
    series = samples([500, 500, 500, 500, 0, 0, 0, 0])  # 500 MB/s for 4 s, then idle
    for sample in series[:3]:
        sample.pop("line")
        state.add_sample(sample)
    t = state.samples[-1]["t"]
    assert (
        ending_line(state, t)
        == "elapsed 0:02 · --until-idle: ends 30 s after this write · Ctrl-C ends it with the report"
    )
    for sample in series[3:]:
        sample.pop("line")
        state.add_sample(sample)
    end = state.phases[-1]["end"]
    assert "ends in 20 s unless a write starts (--until-idle)" in ending_line(state, end + 10)
    projected = stall_line(state)
    assert projected is not None and projected.startswith(
        "projected: the 980 GB checkpoint of 70B parameters"
    )
    assert projected.endswith("(54.4% of wall time, budget 5.0%): OVER the budget")  # 980 GB at 500 MB/s
    timed = State(head(), duration_s=300)
    timed.add_sample({"type": "sample", "t": 1000.0})
    assert (
        ending_line(timed, 1075.0)
        == "elapsed 1:15 · ends in 3:45 (--duration) · Ctrl-C ends it with the report"
    )
    assert stall_line(timed) is None  # no job, no projection


def test_until_idle_ends_the_watch_after_the_idle_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gdsdoctor.checkpoint import phases
    from gdsdoctor.watch.session import watch

    monkeypatch.setattr(phases, "IDLE_END_S", 0.5)
    kinds: list[str] = []  # without --until-idle nothing would end this watch: the reason says idle
    _state, reason = watch(
        Options(str(tmp_path), every_s=0.1, until_idle=True), lambda r, _s: kinds.append(r["type"])
    )
    assert reason == "idle" and kinds[0] == "header" and "sample" in kinds


def test_idle_time_counts_from_the_last_phase_or_the_start() -> None:
    from gdsdoctor.checkpoint.phases import idle_for

    assert idle_for([], started=100.0, now=130.0) == 30.0
    assert idle_for([{"ongoing": False, "end": 120.0}], started=100.0, now=130.0) == 10.0
    assert idle_for([{"ongoing": True, "end": 129.0}], started=100.0, now=130.0) == 0.0


def test_a_signal_during_the_wait_between_ticks_takes_no_lock() -> None:
    """The old handler set a threading.Event: a signal landing while the main thread held that
    event's lock (inside ``wait``) deadlocked the watch (seen: one run in ~6 hung for 20 s)."""
    busy = threading.Event()
    with stop_on_signals() as received, busy._cond:  # the lock a handler must never need
        os.kill(os.getpid(), signal.SIGTERM)
        deadline = time.monotonic() + 2
        while not received and time.monotonic() < deadline:
            time.sleep(0.01)
    assert received == [signal.SIGTERM]
    waits: list[float] = []  # a signal already received ends the wait at once: no wait at all
    tick = threading.Event()
    tick.wait = lambda timeout=None: waits.append(timeout) or False  # type: ignore[method-assign]
    _wait_until(time.monotonic() + 5, tick, received)
    assert waits == []
