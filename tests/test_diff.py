"""``gdsdoctor diff BEFORE AFTER``: two real bundles of a loop-mounted XFS before and after a
shutdown and its repair (root only), real fixtures before and after a fix (resolved, new,
changed, unchanged, the facts side by side), the exit rules of docs/usage.md, two hosts refused,
and `analyze` of two captures of one host (never a fleet)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from gdsdoctor.capture.bundle import write_bundle
from gdsdoctor.capture.live import capture_live
from gdsdoctor.cli.app import run
from gdsdoctor.commands.diff import compare, diff_paths, render
from gdsdoctor.errors import UserError
from gdsdoctor.model import decode_text
from gdsdoctor.pipeline import analyze_paths
from tests.loopfs import loop_device, skip_unless_root_with

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SOS = Path(__file__).parent / "data" / "sos"
SCHEMA = json.loads(resources.files("gdsdoctor").joinpath("schemas/diff.schema.json").read_text())
SHUTDOWN = "fs-errors-or-shutdown"
# weka's cuFile section before and after the fix: RDMA addresses listed, nvidia_peermem loaded
NOT_CONFIGURED, CONFIGURED = (
    FIXTURES / "gds-wekafs-rdma-not-configured",
    FIXTURES / "gds-wekafs-rdma-configured",
)
FIXED = {"rdma-dev-addr-list-empty", "nvidia-peermem-not-loaded", "gds-compat-forced-per-filesystem"}


def _diff(before: Path, after: Path, **kwargs: Any) -> dict[str, Any]:
    document = diff_paths(before, after, **kwargs)
    jsonschema.validate(document, SCHEMA)
    return document


def _ids(rows: list[dict[str, Any]]) -> set[str]:
    return {row["id"] for row in rows}


# --- real fixtures: a fix and its undoing ---------------------------------------------------


def test_a_fix_resolves_its_findings_and_shows_the_facts_it_moved() -> None:
    document = _diff(NOT_CONFIGURED, CONFIGURED)
    findings = document["findings"]
    assert _ids(findings["resolved"]) >= FIXED
    assert not findings["new"] and not document["summary"]["worse"]
    facts = {(row["fact"], row["key"]): (row["before"], row["after"]) for row in document["facts"]}
    # side by side: the cuFile key the fix set, and the module it loaded
    cufile = {key: values for (fact, key), values in facts.items() if fact == "cufile.json"}
    assert any("rdma_dev_addr_list" in key for key in cufile), facts
    assert facts[("modules", "nvidia_peermem")] == (None, "nvidia_peermem")
    after = analyze_paths([CONFIGURED]).report["summary"]
    assert document["summary"]["exit_code"] == after["exit_code"]  # AFTER's, nothing worse
    text = render(document, "text")
    assert "Resolved (" in text and "nvidia-peermem-not-loaded" in text
    assert text.rstrip().splitlines()[-1].startswith("Diff status: ")
    assert "Resolved (" in render(document, "markdown")


def test_the_python_api_gives_the_same_document() -> None:
    import gdsdoctor.api as gd

    document = gd.diff(NOT_CONFIGURED, CONFIGURED)
    jsonschema.validate(document, SCHEMA)
    assert _ids(document["findings"]["resolved"]) >= FIXED
    with pytest.raises(gd.GdsdoctorError):
        gd.diff(NOT_CONFIGURED, FIXTURES / "no-such-fixture")


def test_the_change_undone_is_worse_and_says_why() -> None:
    document = _diff(CONFIGURED, NOT_CONFIGURED)
    assert _ids(document["findings"]["new"]) >= FIXED and not document["findings"]["resolved"]
    summary = document["summary"]
    assert summary["worse"] and any("nvidia-peermem-not-loaded" in why for why in summary["worse_because"])
    assert summary["exit_code"] >= 1
    assert summary["exit_code"] == max(analyze_paths([NOT_CONFIGURED]).report["summary"]["exit_code"], 1)


def test_one_capture_against_itself_is_all_unchanged() -> None:
    fixture = FIXTURES / "capacity-low-free"
    document = _diff(fixture, fixture)
    report = analyze_paths([fixture]).report
    assert _ids(document["findings"]["unchanged"]) == {f["id"] for f in report["findings"]} != set()
    assert not (document["findings"]["resolved"] or document["findings"]["new"] or document["facts"])
    assert document["summary"] == {
        "status": report["summary"]["status"],
        "exit_code": report["summary"]["exit_code"],
        "worse": False,
        "worse_because": [],
        "not_judged_after": [],
    }


def test_a_shared_finding_appearing_is_listed_and_counts_only_where_the_site_counts_it() -> None:
    """The status contract: a full OST (shared scope) is new in AFTER, listed, and makes nothing
    worse; a site that counts shared findings makes it count (docs/rules.md "Status")."""
    before, after = FIXTURES / "capacity-plenty", FIXTURES / "capacity-one-ost-full-shared"
    listed = _diff(before, after)
    [full] = [f for f in listed["findings"]["new"] if f["id"] == "capacity-target-full"]
    assert full["scope"] == "shared" and full["counted"] is False
    assert not listed["summary"]["worse"] and listed["summary"]["exit_code"] == 0
    site = {"status": {"count_scopes": ["node", "shared"]}}
    counted = _diff(before, after, site=site)
    assert counted["summary"]["worse"] and "new" in counted["summary"]["worse_because"][0]
    assert counted["summary"]["exit_code"] >= 1


def test_a_finding_whose_count_changed_is_changed_and_worse_when_it_now_counts() -> None:
    shared = FIXTURES / "capacity-one-ost-full-shared"
    before = analyze_paths([shared])
    after = analyze_paths([shared], site={"status": {"count_scopes": ["node", "shared"]}})
    document = compare(before, after, "before", "after")
    [row] = document["findings"]["changed"]
    assert row["id"] == "capacity-target-full" and (row["before"]["counted"], row["after"]["counted"]) == (
        False,
        True,
    )
    assert document["summary"]["worse"] and "not counted ->" in document["summary"]["worse_because"][0]
    back = compare(after, before, "after", "before")
    assert not back["summary"]["worse"] and back["summary"]["exit_code"] == 0


def test_two_hosts_are_refused_in_one_line(tmp_path: Path) -> None:
    other = tmp_path / "sosreport-compute5"
    shutil.copytree(SOS / "hotsos-openstack", other)
    (other / "etc" / "hostname").write_text("compute5\n")
    with pytest.raises(
        UserError, match=r"host compute4 and .* host compute5: diff compares two captures of one node"
    ):
        diff_paths(SOS / "hotsos-openstack", other)
    assert run(["diff", str(SOS / "hotsos-openstack"), str(other)]) == 3


# --- real bundles of a loop-mounted XFS, shut down then repaired -------------------------------


@pytest.fixture(scope="module")
def xfs_bundles(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str, str]:
    """(before, after, mount point, device): ``collect --path`` of a loop XFS shut down, then of
    the same filesystem repaired (``xfs_repair -L``) and mounted again with ``noatime``. The
    kernel log is this machine's; the lines about other loop devices (tests running at once
    on other workers shut theirs down too) are left out of both bundles, so that the diff is
    about this filesystem."""
    skip_unless_root_with("xfs_io", "xfs_repair", "mkfs.xfs", "dmesg")
    where = tmp_path_factory.mktemp("diff-xfs")
    point = where / "ckpt"
    point.mkdir()
    with loop_device("xfs", where / "xfs.img", 320 << 20) as device:
        _run("mount", device, str(point))
        try:
            (point / "checkpoint").write_bytes(b"x" * 4096)
            _run("sync")
            _run("xfs_io", "-x", "-c", "shutdown", str(point))
            before = _bundle(device, str(point), where / "before.tar.gz")
        finally:
            _run("umount", str(point))
        _run("xfs_repair", "-L", device)  # a shutdown leaves a dirty log
        _run("mount", "-o", "noatime", device, str(point))
        try:
            (point / "after").write_bytes(b"ok")  # writes work again
            after = _bundle(device, str(point), where / "after.tar.gz")
        finally:
            _run("umount", str(point))
    return before, after, str(point), device


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=120)


def _bundle(device: str, point: str, output: Path) -> Path:
    capture = capture_live(target_path=point)
    mine = device.removeprefix("/dev/")
    for name in capture.assignments.get("dmesg", []):
        artifact = capture.artifacts[name]
        lines = decode_text(artifact.data).split("\n")
        kept = [line for line in lines if all(m == mine for m in re.findall(r"\bloop\d+", line))]
        capture.artifacts[name] = dataclasses.replace(artifact, data="\n".join(kept).encode())
    return write_bundle(capture, output)


def test_diff_of_real_bundles_before_and_after_an_xfs_repair(
    xfs_bundles: tuple[Path, Path, str, str],
) -> None:
    before, after, point, _ = xfs_bundles
    broken = analyze_paths([before], point).report
    assert SHUTDOWN in {f["id"] for f in broken["findings"]} and broken["summary"]["status"] == "CRITICAL"
    repaired = analyze_paths([after], point).report
    assert SHUTDOWN not in {f["id"] for f in repaired["findings"]}
    document = _diff(before, after, target_path=point)
    [resolved] = [f for f in document["findings"]["resolved"] if f["id"] == SHUTDOWN]
    assert resolved["severity"] == "critical" and resolved["in_history"] is True  # recovered since
    assert not [f for f in document["findings"]["new"] if f["counted"] and f["severity"] != "info"]
    # the mount options side by side: mounted again with noatime
    [options] = [row for row in document["facts"] if row["fact"] == "mount options" and row["key"] == point]
    assert "noatime" in options["after"] and "noatime" not in options["before"]
    assert document["host"] == os.uname().nodename
    summary = document["summary"]
    assert summary["exit_code"] == (
        max(repaired["summary"]["exit_code"], 1) if summary["worse"] else repaired["summary"]["exit_code"]
    )
    # and back: the shutdown is new, and worse
    back = _diff(after, before, target_path=point)
    assert SHUTDOWN in _ids(back["findings"]["new"]) and back["summary"]["worse"]
    assert back["summary"]["exit_code"] == 2 and "status " in back["summary"]["worse_because"][-1]


def test_the_diff_command_on_real_bundles(xfs_bundles: tuple[Path, Path, str, str]) -> None:
    """One real process: `gdsdoctor diff --format json`, its exit code the document's."""
    before, after, point, _ = xfs_bundles
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gdsdoctor",
            "diff",
            str(after),
            str(before),
            "--path",
            point,
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    document = json.loads(done.stdout)
    jsonschema.validate(document, SCHEMA)
    assert done.returncode == document["summary"]["exit_code"] == 2, done.stderr
    assert SHUTDOWN in _ids(document["findings"]["new"])


def test_analyze_of_two_captures_of_one_host_reads_the_newest(
    xfs_bundles: tuple[Path, Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Not a fleet (no "cloned image" of one host NQN twice): the newest capture is analysed,
    and a note names `diff`. The order given does not matter."""
    before, after, point, _ = xfs_bundles
    newest = analyze_paths([after], point).report
    code = run(["analyze", str(after), str(before), "--path", point, "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == newest["summary"]["exit_code"]
    assert "nodes" not in report and report["findings"] == newest["findings"]
    [note] = [n for n in report["source"]["notes"] if "captures of host" in n]
    assert f"this is the newest, {after}" in note and f"gdsdoctor diff {before} {after}" in note


def test_a_finding_after_cannot_judge_is_not_resolved() -> None:
    # BEFORE: a shut-down XFS seen in stat's EIO; AFTER: stat answers, and no kernel log says
    # whether the filesystem is still shut down. The path failure is resolved (judged clear);
    # the filesystem cause is not judged, never "resolved" (blindness is not a fix).
    document = _diff(
        FIXTURES / "checkpoint-path-eio-xfs-shutdown",
        FIXTURES / "checkpoint-path-answers",
    )
    assert "checkpoint-path-fails" in _ids(document["findings"]["resolved"])
    assert SHUTDOWN not in _ids(document["findings"]["resolved"])
    assert SHUTDOWN in _ids(document["findings"]["unjudged"])
    shown = render(document, "text")
    assert "Fired in BEFORE, not judged in AFTER (its capture lacks the data) (1)" in shown
    # AFTER alone is OK, but it cannot show the critical fixed: the diff is UNKNOWN, never OK
    assert document["after"]["status"] == "OK"
    assert (document["summary"]["status"], document["summary"]["exit_code"]) == ("UNKNOWN", 3)
    assert document["summary"]["not_judged_after"] == [f"{SHUTDOWN} (critical)"]
    assert f"AFTER cannot judge {SHUTDOWN} (critical)" in shown.splitlines()[-1]


def test_a_new_info_finding_is_listed_and_not_worse() -> None:
    # An info finding sets no status (docs/rules.md "Status"): a GPU application's Xid is new
    # in AFTER, listed, and the node that stays OK exits 0.
    document = _diff(FIXTURES / "capacity-plenty", FIXTURES / "gpu-xid-application-error-not-storage")
    [xid] = [f for f in document["findings"]["new"] if f["id"] == "gpu-xid-not-storage"]
    assert xid["severity"] == "info" and xid["counted"] is True
    assert document["summary"] == {**document["summary"], "worse": False, "exit_code": 0}


def test_the_html_diff_sets_before_beside_after_and_escapes_the_input() -> None:
    pytest.importorskip("jinja2")
    document = _diff(NOT_CONFIGURED, CONFIGURED)
    document["findings"]["resolved"][0]["title"] = "<script>alert(1)</script>"
    page = render(document, "html")
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    for row in document["findings"]["resolved"]:
        assert f'<td class="id">{row["id"]}</td>' in page
    assert "<th>BEFORE</th><th>AFTER</th>" in page and "resolved" in page
    assert "['172.16.8.11', '172.16.8.12']" in page.replace("&#39;", "'")  # a fact side by side
