"""Events and state (gdsdoctor.facts.lifecycle): an event whose object was re-created or
recovered afterwards is history; one after the recovery is current; ages come from the
capture's clock, the log's end or its wall stamps; --since puts earlier events in history.

Real kernel logs of tests/data/dmesg (sources in its SOURCES.md): this VM's loop devices
(ext4 journal aborts, an XFS shut down, repaired and mounted again, a loop name reused by a new
XFS) and public ones where the failure comes after the mount and must stay current (Talos,
Qubes, a kvdo thread). The NVMe-oF fixtures (fixtures/nvmeof-*) hold the reconnect cases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gdsdoctor.capture.capture import Capture
from gdsdoctor.errors import UserError
from gdsdoctor.facts import event_clock, lifecycle
from gdsdoctor.model import Artifact, ArtifactStatus
from gdsdoctor.pipeline import analyze_capture, analyze_paths
from gdsdoctor.probes import dmesg
from gdsdoctor.watch.events import kernel_event

DATA = Path(__file__).resolve().parents[1] / "data" / "dmesg"
SHUTDOWN = "fs-errors-or-shutdown"


def _report(name: str, since: str | None = None) -> dict[str, Any]:
    return analyze_paths([DATA / name], since=since).report


def _ids(items: list[dict[str, Any]]) -> list[str]:
    return [item["id"] for item in items]


def test_a_shutdown_before_a_later_clean_mount_is_history_in_a_pasted_log() -> None:
    report = _report("dmesg.this-machine-loop-ext4-abort-xfs-shutdown-remounted.txt")
    assert SHUTDOWN not in _ids(report["findings"])
    past = next(h for h in report["history"] if h["id"] == SHUTDOWN)
    assert past["severity"] == "info"  # a loop device with no block listing: info even when current
    assert past["history_reason"].startswith("before the current mount: mounted")
    assert past["age"].endswith("before the log's last line")  # a paste has no capture clock
    shutdown = next(e for e in past["evidence"] if "Shutting down filesystem" in e["text"])
    assert shutdown["age_s"] == pytest.approx(380.598727 - 380.047632, abs=1e-3)
    # the full backing store of loop1 stays: nothing after it re-created loop1 (only its XFS was unmounted)
    blk = next(f for f in report["findings"] if f["id"] == "backing-store-full")
    quoted = " ".join(e["text"] for e in blk["evidence"])
    assert "dev loop1" in quoted and "dev loop0" not in quoted
    assert report["events"]["clock"] == "log_end" and report["events"]["history_events"] >= 5


def test_an_ext4_abort_on_a_loop_name_reused_by_a_new_xfs_is_history() -> None:
    report = _report("dmesg.this-machine-loop-ext4-abort-reused-by-xfs.txt")
    assert SHUTDOWN not in _ids(report["findings"]) and SHUTDOWN in _ids(report["history"])
    assert report["summary"]["status"] != "CRITICAL"
    past = next(h for h in report["history"] if h["id"] == SHUTDOWN)
    assert past["history_reason"].startswith("before the current mount")
    assert report["summary"]["counts"]["history"] == len(report["history"])


@pytest.mark.parametrize(
    "name",
    [
        "dmesg-talos-xfs-mounted-then-log-error-shutdown.txt",  # shut down a month after its mount
        "journal-qubes-xfs-shutdown-during-mount-recovery.txt",  # during the mount's recovery
        "journal-kvdo-xfs-log-mount-failed-after-mounting.txt",  # the mount failed
    ],
)
def test_a_failure_after_the_mount_stays_current(name: str) -> None:
    report = _report(name)
    assert SHUTDOWN in _ids(report["findings"]) and SHUTDOWN not in _ids(report["history"])


def test_wall_stamps_give_ages_and_since_an_iso_time() -> None:
    report = _report("dmesg-talos-xfs-mounted-then-log-error-shutdown.txt")
    assert report["events"]["clock"] == "wall"
    finding = next(f for f in report["findings"] if f["id"] == SHUTDOWN)
    assert all(
        e.get("at", "").startswith("2024-05-13T15:13:11") for e in finding["evidence"] if "XFS" in e["text"]
    )
    before = _report("dmesg-talos-xfs-mounted-then-log-error-shutdown.txt", since="2024-05-01T00:00:00Z")
    assert SHUTDOWN in _ids(before["findings"])  # after the --since time: current
    after = _report("dmesg-talos-xfs-mounted-then-log-error-shutdown.txt", since="2024-05-14T00:00:00Z")
    assert SHUTDOWN not in _ids(after["findings"]) and SHUTDOWN in _ids(after["history"])
    assert next(h for h in after["history"] if h["id"] == SHUTDOWN)["history_reason"] == (
        "before --since 2024-05-14T00:00:00Z"
    )
    assert after["events"]["since"] == "2024-05-14T00:00:00Z"


def test_since_a_duration_counts_back_from_the_log_end_of_a_paste() -> None:
    # loop1's full backing store, some 220 s before the log's last line, is current without --since
    name = "dmesg.this-machine-loop-ext4-abort-xfs-shutdown-remounted.txt"
    assert "backing-store-full" in _ids(_report(name, since="10m")["findings"])
    later = _report(name, since="1m")
    assert "backing-store-full" not in _ids(later["findings"])
    past = next(h for h in later["history"] if h["id"] == "backing-store-full")
    assert {e.get("history") for e in past["evidence"] if "dev loop1" in e["text"]} == {"before --since 1m"}


@pytest.mark.parametrize(
    ("given", "key", "value"),
    [("10m", "seconds", 600.0), ("2s", "seconds", 2.0), ("1.5h", "seconds", 5400.0), ("2d", "seconds", 172800.0), ("1h30m", "seconds", 5400.0), ("0s", "seconds", 0.0),
     ("2026-01-31T08:00:00Z", "epoch", 1769846400.0), ("2026-01-31T09:00:00+01:00", "epoch", 1769846400.0),
     ("2026-01-31T08:00:00", "epoch", 1769846400.0)],
)  # fmt: skip
def test_parse_since(given: str, key: str, value: float) -> None:
    assert event_clock.parse_since(given)[key] == value


@pytest.mark.parametrize("given", ["10x", "", "yesterday", "-5m", "2026-13-01"])
def test_a_bad_since_is_the_users_error(given: str) -> None:
    with pytest.raises(UserError, match="--since"):
        event_clock.parse_since(given)


def _capture(log: str, host: dict[str, str] | None = None, **sections: str) -> Capture:
    capture = Capture("live", host=host or {}, label="test")
    capture.add("dmesg", Artifact("cmd/dmesg.txt", ArtifactStatus.OK, log.encode()))
    for section, text in sections.items():
        capture.add(section, Artifact(f"{section}.txt", ArtifactStatus.OK, text.encode()))
    return capture


RESET = """\
[ 1000.000000] nvme nvme0: I/O 12 QID 3 timeout, reset controller
[ 1030.500000] nvme nvme0: 16/0/0 default/read/poll queues
[ 1095.000000] systemd-journald[412]: Data hash table of /var/log/journal/system.journal has a fill level at 75.0
"""


def test_the_capture_clock_dates_events_in_wall_time() -> None:
    host = {"captured_at_epoch": "1800000000.000", "uptime_s": "1600.0"}
    facts = analyze_capture(_capture(RESET, host)).facts
    event = facts["dmesg"]["history"][0]
    assert event["age_s"] == 600.0 and event["at"] == "2027-01-15T07:50:00Z"
    assert facts["dmesg"]["clock"]["basis"] == "capture"
    assert event["history"]["reason"] == "the controller came back with its I/O queues 9 min ago"


def test_a_failure_after_the_recovery_is_current_and_so_are_the_hours_before_it() -> None:
    soon = analyze_capture(
        _capture(RESET + "[ 1100.000000] nvme nvme0: I/O 40 QID 2 timeout, aborting\n")
    ).facts
    assert soon["dmesg"]["history"] == []  # the reset 100 s earlier did not hold
    assert [e["src"]["line"] for e in soon["dmesg"]["events"]] == [1, 4]
    late = analyze_capture(
        _capture(RESET + "[ 9000.000000] nvme nvme0: I/O 40 QID 2 timeout, aborting\n")
    ).facts
    assert [e["src"]["line"] for e in late["dmesg"]["history"]] == [1]  # two hours apart: recovered then
    assert [e["src"]["line"] for e in late["dmesg"]["events"]] == [4]
    (controller,) = late["dmesg"]["objects"]
    assert controller["name"] == "nvme0" and (controller["current"], controller["history"]) == (1, 1)


def test_a_controller_that_keeps_resetting_is_flapping_and_stays_current() -> None:
    cycles = "".join(
        f"[ {1000 + 300 * n}.000000] nvme nvme0: I/O {n} QID 3 timeout, reset controller\n"
        f"[ {1030 + 300 * n}.000000] nvme nvme0: 16/0/0 default/read/poll queues\n"
        for n in range(lifecycle.FLAP_RECOVERIES)
    )
    facts = analyze_capture(_capture(cycles)).facts
    assert facts["dmesg"]["history"] == [] and len(facts["dmesg"]["events"]) == lifecycle.FLAP_RECOVERIES


def test_a_controller_not_live_now_is_not_recovered_whatever_the_log_says() -> None:
    facts: dict[str, Any] = {
        "dmesg": {"status": "ok", **dmesg.parse(RESET, "cmd/dmesg.txt")},
        "nvme_sysfs": {"status": "ok", "controllers": [{"name": "nvme0", "state": "resetting"}]},
    }
    lifecycle.judge(facts, {}, None)
    assert facts["dmesg"]["history"] == [] and len(facts["dmesg"]["events"]) == 1
    facts["dmesg"] = {"status": "ok", **dmesg.parse(RESET, "cmd/dmesg.txt")}
    facts["nvme_sysfs"]["controllers"][0]["state"] = "live"
    lifecycle.judge(facts, {}, None)
    assert len(facts["dmesg"]["history"]) == 1


def test_a_new_controller_for_the_same_subsystem_recovers_a_removed_one() -> None:
    log = """\
[ 500.000000] nvme nvme1: new ctrl: NQN "nqn.2014-08.org.nvmexpress:uuid:5a1c", addr 10.0.0.2:4420
[ 900.000000] nvme nvme1: failed to connect socket: -111
[ 960.000000] nvme nvme1: Removing ctrl: NQN "nqn.2014-08.org.nvmexpress:uuid:5a1c"
[ 990.000000] nvme nvme2: new ctrl: NQN "nqn.2014-08.org.nvmexpress:uuid:5a1c", addr 10.0.0.2:4420
[1200.000000] systemd[1]: Started Daily apt download activities.
"""
    facts = analyze_capture(_capture(log)).facts
    assert facts["dmesg"]["events"] == [] and len(facts["dmesg"]["history"]) == 2


def test_a_loop_device_the_block_listing_no_longer_shows_is_detached() -> None:
    log = "[  157.560179] critical space allocation error, dev loop1, sector 198736 op 0x1:(WRITE) flags 0x8800\n"
    lsblk = '{"blockdevices": [{"name": "vda", "maj:min": "254:0", "type": "disk", "size": "256G"}]}'
    facts = analyze_capture(_capture(log, lsblk=lsblk)).facts
    assert facts["dmesg"]["events"] == []
    assert facts["dmesg"]["history"][0]["history"]["reason"].startswith("loop1 is not attached now")
    attached = lsblk.replace('"vda"', '"loop1"')
    assert len(analyze_capture(_capture(log, lsblk=attached)).facts["dmesg"]["events"]) == 1


def test_the_summary_and_kinds_count_only_current_events() -> None:
    section = analyze_capture(_capture(RESET)).facts["dmesg"]
    assert section["summary"] == [] and section["kinds"] == [] and section["current_boot_kinds"] == []
    assert [g["kind"] for g in section["whole_log"]["summary"]] == ["nvme_timeout"]


def test_with_history_puts_every_event_back_in_log_order() -> None:
    facts = analyze_capture(
        _capture(RESET + "[ 1100.000000] nvme nvme0: I/O 40 QID 2 timeout, aborting\n")
    ).facts
    whole = lifecycle.with_history(facts)
    assert [e["src"]["line"] for e in whole["dmesg"]["events"]] == [1, 4]
    assert "derived" not in whole and whole["dmesg"]["summary"][0]["count"] == 2


@pytest.mark.parametrize(
    ("device", "controller"),
    [("nvme0", "nvme0"), ("nvme0n1", "nvme0"), ("nvme0n1p2", "nvme0"), ("nvme0c1n1", "nvme1"), ("sda", None)],
)
def test_controller_of(device: str, controller: str | None) -> None:
    assert lifecycle.controller_of(device) == controller


def test_the_parsed_section_is_not_changed_so_a_second_analysis_judges_alike() -> None:
    capture = _capture(RESET)
    parsed = {
        "dmesg": (
            [capture.artifacts["cmd/dmesg.txt"]],
            {"status": "ok", **dmesg.parse(RESET, "cmd/dmesg.txt")},
        )
    }
    first = analyze_capture(capture, (), parsed).facts["dmesg"]
    second = analyze_capture(capture, (), parsed).facts["dmesg"]
    assert len(first["history"]) == len(second["history"]) == 1
    assert len(parsed["dmesg"][1]["events"]) == 1 and "age_s" not in parsed["dmesg"][1]["events"][0]


def test_a_marker_is_no_failure_to_watch_nor_to_recognition() -> None:
    mount = "XFS (loop0): Mounting V5 Filesystem a24c9434-7867-4448-9949-b7458d29ea2d"
    assert kernel_event(f"5,3973,380034313,-;{mount}", 1000.0, 400.0) is None
    assert kernel_event("3,3974,380047632,-;XFS (loop0): Filesystem has been shut down", 1000.0, 400.0)
    assert not dmesg.recognise(f"{mount}\nsome prose around it\nand more prose\n")


def test_since_lists_the_older_errors_of_a_device_under_the_history_that_explains_them() -> None:
    """`--since` moved a device's older filesystem and I/O errors to History, where the text
    showed only "↳ explains fs-errors-or-shutdown": the errors themselves were not listed, as a
    current symptom's are. They are now, in text and Markdown."""
    from gdsdoctor.report.markdown import render_markdown
    from gdsdoctor.report.text import render_text

    report = _report("dmesg.this-machine-loop-ext4-abort-xfs-shutdown-remounted.txt", since="1m")
    folded = [h for h in report["history"] if h.get("explained_by")]
    assert folded, report["history"]
    for rendered in (render_text(report, width=200), render_markdown(report)):
        history = rendered[rendered.index("History:") :]
        for symptom in folded:
            after = history[history.index("explains") :]
            after = after[after.index(symptom["id"]) :]
            assert symptom["evidence"][-1]["text"][:40] in after, symptom["id"]


GENTOO = DATA / "journal-gentoo-nvme-timeouts-reset-queues-then-polled.txt"  # SOURCES.md
NVME_CAUSES = {"nvme-io-timeouts", "nvme-controller-failed", "blk-io-errors"}


def _paste(log: str) -> Capture:
    capture = Capture("files", host={}, label="test")
    capture.add("dmesg", Artifact("dmesg.txt", ArtifactStatus.OK, log.encode()))
    return capture


def test_a_reset_whose_queues_line_ends_the_log_is_not_judged_recovered() -> None:
    # timeouts, aborts, a reset with the namespace's I/O errors, then "1/0/0 default/read/poll
    # queues" as the log's last line: nothing shows the controller well since (issue #31 item 5)
    facts = analyze_capture(_paste("".join(GENTOO.read_text().splitlines(keepends=True)[:14]))).facts
    assert facts["dmesg"]["history"] == []
    first = facts["dmesg"]["events"][0]
    assert "not yet seen well for 60 s" in first["recovery_unconfirmed"]
    report = analyze_capture(_paste("".join(GENTOO.read_text().splitlines(keepends=True)[:14]))).report
    assert set(_ids(report["findings"])) >= NVME_CAUSES and report["history"] == []


def test_a_reset_followed_by_more_timeouts_is_current() -> None:
    report = _report(GENTOO.name)  # the real log: a timeout 61 s after the queues came back
    assert set(_ids(report["findings"])) >= NVME_CAUSES and report["history"] == []


def test_a_recovery_that_held_puts_the_namespace_errors_in_history_with_the_controllers() -> None:
    # the same log going on ten quiet minutes after the queues line: the reset held, and the
    # namespace's block errors of that incident end with their controller (no lone blk-io-errors)
    later = (
        "Sep 12 12:48:00 [kernel] [  831.000000][ T1082] EXT4-fs (nvme0n1p4): re-mounted. Quota mode: none.\n"
    )
    text = "".join(GENTOO.read_text().splitlines(keepends=True)[:14]) + later
    report = analyze_capture(_paste(text)).report
    assert not NVME_CAUSES & set(_ids(report["findings"]))
    assert set(_ids(report["history"])) >= NVME_CAUSES
    past = next(h for h in report["history"] if h["id"] == "blk-io-errors")
    assert past["history_reason"].startswith("the controller came back with its I/O queues 10 min")
    assert past["age"] == "10 min before the log's last line"
