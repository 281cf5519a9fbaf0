"""Acknowledgements in the site config (issue 19 item 4): a known finding set apart with its
reason, never setting the exit code, until it expires; the default config file every
diagnosing command reads ($GDSDOCTOR_CONFIG here: the suite never reads /etc/gdsdoctor)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gdsdoctor import cli
from gdsdoctor.report.prometheus import render_prometheus
from tests.conftest import validate_report

REPO = Path(__file__).resolve().parents[1]
# ext4 data=journal on /mnt/ckpt: ext4-data-journal fires, WARNING (exit 1)
MOUNTS = str(REPO / "fixtures/ext4-journal-checkpoint/files/proc-mounts.txt")
JOURNAL = "ext4-data-journal"


def _config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    """``text`` as the default site config ($GDSDOCTOR_CONFIG)."""
    path = tmp_path / "config.yaml"
    path.write_text(text)
    monkeypatch.setenv("GDSDOCTOR_CONFIG", str(path))
    return path


def _analyze(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = cli.run(["analyze", MOUNTS, "--path", "/mnt/ckpt", "--format", "json", *args])
    report = json.loads(capsys.readouterr().out)
    validate_report(report)
    return code, report


def test_an_acknowledgement_in_the_default_config_sets_the_finding_apart_until_it_expires(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = _analyze(capsys)
    assert code == 1 and [f["id"] for f in report["findings"]] == [JOURNAL]

    ack = f"acknowledge:\n  - id: {JOURNAL}\n    mount: /mnt/ckpt\n    reason: journal mode on purpose (ticket 42)\n"
    _config(tmp_path, monkeypatch, ack + "    until: 2999-12-31\n")
    code, report = _analyze(capsys)
    assert code == 0 and report["summary"]["status"] == "OK" and report["findings"] == []
    [item] = report["acknowledged"]
    assert item["finding"]["id"] == JOURNAL and item["finding"]["severity"] == "warning"
    assert item["acknowledgement"] == {
        "id": JOURNAL,
        "mount": "/mnt/ckpt",
        "reason": "journal mode on purpose (ticket 42)",
        "until": "2999-12-31",
    }
    assert report["summary"]["counts"]["acknowledged"] == 1
    assert "1 acknowledged finding(s) not counted" in report["summary"]["reason"]
    cause = next(c for c in report["causes"] if c["id"] == JOURNAL)
    assert cause["outcome"] == "fired" and cause["acknowledged"] is True
    assert (
        f'gdsdoctor_cause_state{{id="{JOURNAL}",category="mount-options",severity="warning",scope="node"}} 4'
        in (render_prometheus(report))
    )
    cli.run(["analyze", MOUNTS, "--path", "/mnt/ckpt"])
    text = capsys.readouterr().out
    assert "Acknowledged: 1 finding(s), not counted in the status" in text
    assert "acknowledged: journal mode on purpose (ticket 42) (until 2999-12-31)" in text

    _config(tmp_path, monkeypatch, ack + "    until: 2020-01-31\n")  # past: it counts again
    code, report = _analyze(capsys)
    assert code == 1 and [f["id"] for f in report["findings"]] == [JOURNAL]
    assert report["acknowledged"] == []
    [expired] = report["expired_acknowledgements"]
    assert expired["fired"] is True and expired["acknowledgement"]["until"] == "2020-01-31"
    assert f"1 acknowledgement(s) expired ({JOURNAL})" in report["summary"]["reason"]
    cli.run(["analyze", MOUNTS, "--path", "/mnt/ckpt"])
    assert f"Acknowledgement expired: {JOURNAL} (until 2020-01-31" in capsys.readouterr().out


def test_no_config_ignores_the_default_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _config(tmp_path, monkeypatch, "acknowledge:\n  - id: 'ext4-*'\n    reason: known\n")
    assert _analyze(capsys)[0] == 0
    assert _analyze(capsys, "--no-config")[0] == 1


@pytest.mark.parametrize(
    ("entry", "kept"),
    [
        ("device: nvme1n1", False),  # the mount's device, named by the evidence
        ("device: /dev/nvme1n1", False),
        ("device: nvme9n1", True),  # another device: not this finding
        ("mount: /mnt/other", True),
        ("host: 'no-such-host-*'", True),
        ("host: '*'", False),
    ],
)
def test_an_acknowledgement_matches_only_its_device_mount_and_host(
    entry: str,
    kept: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _config(tmp_path, monkeypatch, f"acknowledge:\n  - id: {JOURNAL}\n    reason: known\n    {entry}\n")
    code, report = _analyze(capsys)
    assert (code == 1) is kept and bool(report["findings"]) is kept


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "acknowledge:\n  - id: x\n    reson: typo\n",
            "unknown key acknowledge[0].reson (did you mean reason?)",
        ),
        ("acknowlege: []\n", "unknown key acknowlege (did you mean acknowledge?)"),
        ("acknowledge:\n  - id: ext4-data-journal\n", "acknowledge[0].reason is required"),
        (
            "acknowledge:\n  - id: ext4-data-journl\n    reason: r\n",
            "no such cause (did you mean ext4-data-journal?)",
        ),
        (
            "acknowledge:\n  - id: x\n    reason: r\n    until: soon\n",
            "until 'soon': expected a date, YYYY-MM-DD",
        ),
        ("acknowledge:\n  - id: x\n    reason: [r\n", ":4:1: not valid YAML"),
        ("acknowledge: ext4-data-journal\n", "`acknowledge:` is a list of mappings"),
    ],
)
def test_a_bad_config_is_one_line_exit_3(
    text: str,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _config(tmp_path, monkeypatch, text)
    code = cli.run(["analyze", MOUNTS])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 3 and len(err) == 1 and message in err[0], err


def test_a_default_config_named_but_absent_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GDSDOCTOR_CONFIG", str(tmp_path / "nope.yaml"))
    assert cli.run(["check", "--no-config", "--host-root", "/nonexistent/x"]) == 3  # --no-config: not read
    assert "nope.yaml" not in capsys.readouterr().err
    assert cli.run(["analyze", MOUNTS]) == 3
    assert capsys.readouterr().err.strip() == f"gdsdoctor: {tmp_path / 'nope.yaml'}: no such site config file"


def test_a_site_rule_reusing_a_builtin_id_is_refused_and_points_at_acknowledging(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    builtin = (REPO / "rules" / "mount-options.yaml").read_text()
    (rules / "site.yaml").write_text(builtin)
    assert cli.run(["analyze", MOUNTS, "--rules-dir", str(rules)]) == 3
    err = capsys.readouterr().err
    assert "duplicate cause id" in err and "acknowledge it in the site config" in err
    shutil.rmtree(rules)


def test_an_acknowledged_root_takes_its_symptoms_along(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Media errors on a SATA disk explain the block I/O errors they cause: acknowledging the
    root sets its folded symptoms apart with it."""
    files = sorted(str(p) for p in (REPO / "fixtures/disk-sata-medium-error/files").iterdir())
    cli.run(["analyze", *files, "--format", "json"])
    before = json.loads(capsys.readouterr().out)
    root = next(f for f in before["findings"] if f["explains"])
    _config(tmp_path, monkeypatch, f"acknowledge:\n  - id: {root['id']}\n    reason: image rebuild pending\n")
    cli.run(["analyze", *files, "--format", "json"])
    after = json.loads(capsys.readouterr().out)
    validate_report(after)
    set_apart = [a["finding"]["id"] for a in after["acknowledged"]]
    assert set_apart[0] == root["id"] and set(root["explains"]) <= set(set_apart)
    assert not {f["id"] for f in after["findings"]} & set(set_apart)
