"""One bad input is one clear line, never a lost fleet (fourth round): a fleet worker killed by
the kernel, an interrupted fleet run, impossible clocks, rule files and site configs lint cannot
read, a watch whose interval outlasts its duration, and a hard link out of a folder of pastes."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from gdsdoctor.capture.bundle import write_bundle
from gdsdoctor.capture.capture import Capture
from gdsdoctor.commands import fleet
from gdsdoctor.commands.fleet_workers import KILLED
from gdsdoctor.model import Artifact, ArtifactStatus
from gdsdoctor.pipeline import analyze_paths
from tests.conftest import REPO

MOUNTS = b"/dev/nvme0n1 /mnt/ckpt ext4 rw,data=journal 0 0\n"


def small_bundle(where: Path, host: str) -> Path:
    capture = Capture(origin="live", host={"hostname": host}, label=host)
    capture.add("mounts", Artifact("proc/mounts", ArtifactStatus.OK, MOUNTS, source="/proc/mounts"))
    return write_bundle(capture, where / f"{host}.tar.gz")


def analyse_or_die(task: fleet.Task) -> dict:
    """A worker the kernel kills on one bundle (its analysis took the node's memory)."""
    if task[0].name.startswith("oom"):
        os.kill(os.getpid(), signal.SIGKILL)
    return fleet.node_record(*task)


# --- item 11: a worker killed, an interrupted fleet --------------------------------------------


def test_a_worker_killed_on_one_bundle_loses_that_bundle_only(tmp_path: Path, monkeypatch) -> None:
    bundles = [small_bundle(tmp_path, name) for name in ("gpu01", "gpu02", "oom03", "gpu04", "gpu05")]
    monkeypatch.setattr(fleet, "_analyse_one", analyse_or_die)
    summary = fleet.analyse_fleet(bundles, jobs=2)
    nodes = {node["name"]: node for node in summary["nodes"]}
    assert sorted(nodes) == ["gpu01", "gpu02", "gpu04", "gpu05", "oom03.tar.gz"]
    assert (nodes["oom03.tar.gz"]["status"], nodes["oom03.tar.gz"]["error"]) == ("UNKNOWN", KILLED)
    for name in ("gpu01", "gpu02", "gpu04", "gpu05"):
        assert nodes[name]["findings"] == ["ext4-data-journal"], nodes[name]


SLOW_FLEET = """
import sys, time
from gdsdoctor.commands import fleet

def slow(task):
    time.sleep(60)

fleet._analyse_one = slow
from gdsdoctor.cli.app import main
sys.argv = ["gdsdoctor", "analyze", "--fleet", "-j", "2", *sys.argv[1:]]
main()
"""


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(p) for p in (task / "children").read_text().split()]
    return found


def test_sigterm_stops_a_fleet_s_workers_at_once(tmp_path: Path) -> None:
    bundles = [str(small_bundle(tmp_path, f"gpu0{n}")) for n in range(4)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen(
        [sys.executable, "-c", SLOW_FLEET, *bundles], env=env, cwd=REPO, stderr=subprocess.PIPE, text=True
    )
    workers: list[int] = []
    for _ in range(300):  # until both workers run a bundle
        time.sleep(0.1)
        workers = [p for p in _children(process.pid) if Path(f"/proc/{p}").exists()]
        if len(workers) >= 2:
            break
    assert len(workers) >= 2, "no workers started"
    time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=20)  # today's: waits for the bundles (60 s here)
    assert process.returncode == 3 and "interrupted" in err
    time.sleep(0.2)
    alive = [p for p in workers if Path(f"/proc/{p}").exists() and "Z" not in _state(p)]
    assert alive == []


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return "Z"


# --- item 12: impossible clocks ----------------------------------------------------------------------

DMESG = b"[  100.000000] nvme nvme0: I/O 1 QID 2 timeout, aborting\n[  200.000000] nvme nvme0: resetting controller\n"


@pytest.mark.parametrize("clock", ["nan", "inf", "1e20", "-62135596800", "253402300799"])
def test_an_impossible_capture_clock_is_unknown_with_a_note(tmp_path: Path, clock: str) -> None:
    capture = Capture(
        origin="live",
        host={"hostname": "gpu01", "captured_at_epoch": clock, "uptime_s": "300"},
        label="gpu01",
    )
    capture.add("dmesg", Artifact("cmd/dmesg.txt", ArtifactStatus.OK, DMESG, source="dmesg"))
    report = analyze_paths([write_bundle(capture, tmp_path / "clock.tar.gz")]).report
    assert any(
        f"the capture's clock ({clock}) is not a possible time" in n for n in report["source"]["notes"]
    )
    assert report["summary"]["status"] == "CRITICAL"  # the timeouts are still judged


def test_a_sos_report_whose_date_says_year_1_is_read(tmp_path: Path) -> None:
    top = "sosreport-gpu01-2026-01-01-aaaaaa"
    members = {
        "sos_commands/date/date_--utc": b"Mon Jan  1 00:05:00 UTC 0001\n",
        "sos_commands/host/uptime": b" 00:05:00 up 5 min,  0 users,  load average: 0.00, 0.00, 0.00\n",
        "sos_commands/kernel/dmesg": DMESG,
    }
    archive = tmp_path / f"{top}.tar.xz"
    with tarfile.open(archive, "w:xz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    report = analyze_paths([archive]).report
    assert report["summary"]["status"] == "CRITICAL"
    assert any("is not a possible time" in note for note in report["source"]["notes"]), report["source"]


# --- item 14: watch never waits past its duration ---------------------------------------------------


def test_watch_every_hour_for_a_second_ends_at_the_second(tmp_path: Path) -> None:
    import threading

    from gdsdoctor.watch.session import Options, watch

    stop, ended = threading.Event(), []
    options = Options(str(tmp_path), every_s=3600.0, duration_s=0.5)
    worker = threading.Thread(
        target=lambda: ended.append(watch(options, lambda *_: None, stop)[1]), daemon=True
    )
    worker.start()
    worker.join(30)  # today's: waits the hour
    stop.set()
    assert ended == ["duration"]


# --- item 15: a hard link in a folder of pastes --------------------------------------------------


def test_a_folder_of_pastes_leaves_out_hard_links_with_a_note(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(MOUNTS.replace(b"ext4", b"xfs"))
    folder = tmp_path / "pastes"
    folder.mkdir()
    (folder / "mounts.txt").write_bytes(MOUNTS)
    os.link(outside / "secret.txt", folder / "other-mounts.txt")
    analysis = analyze_paths([folder])
    notes = analysis.report["source"]["notes"]
    assert any("other-mounts.txt: a file with other hard links" in note for note in notes), notes
    assert "read as 1 pasted file(s)" in notes[0]
    assert all(
        a.source.endswith("mounts.txt") and "other" not in a.source
        for a in analysis.capture.artifacts.values()
    )


# --- item 13: rule files and site configs lint cannot read, evaluation cannot run ----------------

SITE_RULE = """causes:
  - id: site-x
    title: a site rule
    category: gpu
    severity: warning
    requires: [modules]
    explanation: A site rule of this test, long enough to pass the schema.
    min_certainty: 0.2
    signals:
      - {id: s, when: "WHEN", certainty: CERTAINTY, says: "x"}
"""


def _rule(when: str = "modules", certainty: str = "0.5") -> str:
    return SITE_RULE.replace("WHEN", when).replace("CERTAINTY", certainty)


RULE_CASES = {
    "invalid regex": (_rule("regex(to_string(modules), '[unclosed')"), "not a regular expression"),
    "too deep": (_rule("!" * 150 + "modules"), "nested more than 100"),
    "nan certainty": (_rule(certainty=".nan"), "not a number"),
    "5000 digits": (_rule(certainty="1" * 5000), "more than 100 digits"),
    "990 deep": (_rule() + "extra: " + "[" * 990 + "]" * 990 + "\n", "nested more than 64"),
}


@pytest.mark.parametrize("case", sorted(RULE_CASES))
def test_lint_refuses_what_evaluation_could_not_run_in_one_problem(tmp_path: Path, case: str) -> None:
    from gdsdoctor.engine.rules import lint_paths
    from gdsdoctor.probes import BY_SECTION

    text, words = RULE_CASES[case]
    (tmp_path / "site.yaml").write_text(text)
    _, issues = lint_paths([tmp_path], set(BY_SECTION))
    assert len(issues) == 1 and words in issues[0].message, issues
    assert issues[0].line >= 1


def test_a_near_miss_rule_passes_lint(tmp_path: Path) -> None:
    from gdsdoctor.engine.rules import lint_paths
    from gdsdoctor.probes import BY_SECTION

    (tmp_path / "site.yaml").write_text(
        _rule("regex(to_string(modules), '^nv[a-z]+$') && " + "!" * 20 + "modules")
    )
    assert lint_paths([tmp_path], set(BY_SECTION))[1] == []


def test_evaluation_contains_what_lint_cannot_foresee() -> None:
    """A pattern that comes from the facts, or a tree nested beyond the interpreter (the built
    rules carry their trees): the condition does not hold, the analysis goes on."""
    from gdsdoctor.engine.functions import JMESPathError, search

    with pytest.raises(JMESPathError, match="invalid regular expression"):
        search("regex(a, b)", {"a": "x", "b": "[unclosed"})
    deep = "!" * 3000 + "a"
    with pytest.raises(JMESPathError):
        search(deep, {"a": 1})


@pytest.mark.parametrize(
    ("value", "words"),
    [("2026-02-30", "is not a date"), (".nan", "not a number"), ("1" * 5000, "more than 100 digits")],
)
def test_a_site_config_value_no_setting_can_hold_is_one_line(tmp_path: Path, value: str, words: str) -> None:
    from gdsdoctor.config import read_config
    from gdsdoctor.errors import UserError

    config = tmp_path / "site.yaml"
    config.write_text(f"acknowledge:\n  - id: ext4-data-journal\n    reason: known\n    until: {value}\n")
    with pytest.raises(UserError, match=words):
        read_config(config)
    config.write_text("checkpoint:\n  params: 70B\nextra: " + "[" * 990 + "]" * 990 + "\n")
    with pytest.raises(UserError, match="nested more than 64"):
        read_config(config)
