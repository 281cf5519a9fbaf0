"""The first hour of a new user (issue 25): contracts automation can trust and output a person
reads. Each test here failed on the code before the change it covers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gdsdoctor import cli
from gdsdoctor.pipeline import analyze_paths
from tests.conftest import REPO

FIXTURES = REPO / "fixtures"


@pytest.mark.parametrize(
    ("pasted", "about"),
    [
        (FIXTURES / "ext4-journal-checkpoint/files/proc-mounts.txt", {"filesystem", "mount-options"}),
        (FIXTURES / "gds-cufile-json-misconfigured/files/cufile.json", {"gds-config"}),
    ],
    ids=["mounts", "cufile.json"],
)
def test_inconclusive_causes_begin_with_what_the_paste_is_about(pasted: Path, about: set[str]) -> None:
    """A pasted /proc/mounts leaves filesystem causes open first, not capacity, WSL or containers."""
    report = analyze_paths([pasted]).report
    categories = [item["category"] for item in report["inconclusive"]]
    first_other = next(i for i, c in enumerate(categories) if c not in about)
    assert first_other > 0 and all(c not in about for c in categories[first_other:])


def test_inconclusive_text_names_each_way_to_settle_with_its_causes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cli.run(["analyze", str(FIXTURES / "ext4-journal-checkpoint/files/proc-mounts.txt")])
    section = capsys.readouterr().out.split("Inconclusive:")[1]
    lines = [line.strip() for line in section.splitlines()[1:] if line.strip()]
    assert lines[0].startswith("run dmesg or journalctl") and "→ fs-errors-or-shutdown" in lines[0]
    assert lines[-2].startswith("… ") and "more cause(s)" in lines[-2]  # under the causes, not commands


def test_rules_lint_problems_exit_1_and_unreadable_input_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "x.yaml").write_text("causes:\n  - id: Bad_Id\n")
    assert cli.run(["rules", "lint", str(tmp_path)]) == 1  # found problems, as CI expects of a linter
    assert cli.run(["rules", "lint", str(tmp_path / "nope")]) == 3
    assert cli.run(["rules", "lint"]) == 0


def test_redact_that_writes_nothing_fails_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "folder").mkdir()
    code = cli.run(["redact", str(tmp_path / "folder")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 3 and len(err) == 1 and err[0].startswith("gdsdoctor: nothing redacted: ")
    assert list(tmp_path.iterdir()) == [tmp_path / "folder"]  # no private map of nothing
    (tmp_path / "paste.txt").write_text("host node-17 10.1.2.3\n")
    assert cli.run(["redact", str(tmp_path / "folder"), str(tmp_path / "paste.txt")]) == 0


def test_topo_of_an_unrecognized_file_is_one_line_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "readme.txt").write_text("Nothing to see here.\n")
    code = cli.run(["topo", str(tmp_path / "readme.txt")])
    captured = capsys.readouterr()
    assert code == 3 and captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert "no device to draw" in captured.err and "Problems" not in captured.err


def test_topo_never_asks_for_the_lspci_it_was_given(capsys: pytest.CaptureFixture[str]) -> None:
    lspci = REPO / "tests/data/pci/lspci-vvv.gpu-idle-link-downgraded-2.5GT.rtx6000ada.stelline.txt"
    assert cli.run(["topo", str(lspci), "--format", "text"]) == 0
    out = capsys.readouterr().out
    head = out.splitlines()[0]
    assert "lspci -vvv shows these devices" in head and "give sysfs or lspci -tv" in head
    assert "GPU 0000:01:00.0 — NVIDIA Corporation AD102GL" in out  # drawn, with its link
    assert out.splitlines()[-1] == "Status: OK (exit 0) — no placement or link cause fired"


@pytest.mark.parametrize(
    ("bundle", "code", "causes"),
    [
        ("topo-sysfs-degraded-links", 1, {"pcie-link-width-degraded", "pcie-link-speed-degraded"}),
        ("topo-sysfs-two-socket-iommu", 2, {"iommu-translating-p2p-cross-root-complex"}),
        ("topo-sysfs-two-socket-balanced", 0, set()),
    ],
)
def test_topo_exits_as_the_diagnosing_commands(
    bundle: str, code: int, causes: set[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.run(["topo", str(FIXTURES / bundle / "bundle"), "--format", "json"]) == code
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert summary["exit_code"] == code and causes <= set(summary["causes"])
