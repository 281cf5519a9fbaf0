"""The Python API is a contract for notebooks and automation: names, signatures and the shape
of what they return are pinned here, so a change to them is a deliberate one."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

import gdsdoctor.api as gd
from gdsdoctor.capture.bundle import write_bundle
from gdsdoctor.capture.detect import capture_files
from tests.conftest import validate_report, write_tree

JOURNAL = "/dev/nvme1n1 /mnt/ckpt ext4 rw,noatime,data=journal 0 0\n"
LSMOD = "Module                  Size  Used by\nnvidia_fs             1000  0\nnvidia              1000  1 nvidia_fs\n"


def test_public_names_and_signatures_are_stable() -> None:
    assert set(gd.__all__) == {
        "FORMATS",
        "GdsdoctorError",
        "Report",
        "analyze",
        "analyze_fleet",
        "analyze_texts",
        "check",
        "diff",
    }
    assert gd.FORMATS == (
        "text",
        "json",
        "markdown",
        "junit",
        "prometheus",
        "prometheus-fired",
        "oneline",
        "slurm",
        "html",
    )
    signatures = {
        name: list(inspect.signature(getattr(gd, name)).parameters)
        for name in ("check", "analyze", "analyze_texts", "analyze_fleet", "diff")
    }
    assert signatures == {
        # site (the site config's node: and status:, issue 31) was added last: positions unchanged
        "check": ["path", "host_root", "rules_dirs", "deadline_s", "job", "since", "site"],
        "analyze": ["paths", "path", "rules_dirs", "job", "deadline_s", "since", "site"],
        "analyze_texts": ["texts", "path", "rules_dirs", "job"],
        "analyze_fleet": ["paths", "path", "rules_dirs", "jobs", "job"],
        "diff": ["before", "after", "path", "rules_dirs", "job", "site"],
    }
    for name in ("status", "exit_code", "reason", "findings", "inconclusive"):
        assert isinstance(inspect.getattr_static(gd.Report, name), property)
    assert list(inspect.signature(gd.Report.render).parameters) == ["self", "fmt", "verbose"]
    for name in gd.__all__:
        item = getattr(gd, name)
        assert not callable(item) or item.__doc__, f"{name} is undocumented"


def test_analyze_texts_recognises_by_content_not_name() -> None:
    report = gd.analyze_texts({"gdscheck": JOURNAL, "whatever": LSMOD}, path="/mnt/ckpt")
    validate_report(report.data)
    assert report.status == "WARNING" and report.exit_code == 1
    assert [f["id"] for f in report.findings] == ["ext4-data-journal"]
    evidence = report.findings[0]["evidence"]
    assert {"text": JOURNAL.strip(), "artifact": "gdscheck", "line": 1} == {
        k: evidence[1][k] for k in ("text", "artifact", "line")
    }
    assert report.data["source"] == {
        "kind": "files",
        "label": "gdscheck, whatever",
        "target_path": "/mnt/ckpt",
        "notes": [],
    }
    assert report.facts["modules"]["status"] == "ok"


def test_analyze_texts_list_bytes_and_unrecognised() -> None:
    report = gd.analyze_texts([JOURNAL.encode(), "hello\n", JOURNAL])
    assert report.data["source"]["notes"][0].startswith("text-2: not recognised")
    assert report.data["source"]["notes"][1].startswith("text-3: read with text-1 as one")
    assert gd.analyze_texts({"x": "nothing to see\n"}).status == "UNKNOWN"


def test_analyze_paths_and_bundle_agree_with_texts(tmp_path: Path) -> None:
    write_tree(tmp_path, {"mounts.txt": JOURNAL})
    from_file = gd.analyze(tmp_path / "mounts.txt", path="/mnt/ckpt")
    from_str = gd.analyze([str(tmp_path / "mounts.txt")], path="/mnt/ckpt")
    bundle = write_bundle(capture_files([tmp_path / "mounts.txt"]), tmp_path / "node.tar.gz")
    from_bundle = gd.analyze(bundle, path="/mnt/ckpt")
    assert from_file.findings == from_str.findings == from_bundle.findings
    assert from_file.findings[0]["id"] == "ext4-data-journal"


def test_render_every_format_and_roundtrip_from_json() -> None:
    report = gd.analyze_texts({"mounts": JOURNAL}, path="/mnt/ckpt")
    rendered = {fmt: report.render(fmt) for fmt in gd.FORMATS}
    assert json.loads(rendered["json"]) == report.data
    assert "**WARNING**" in rendered["markdown"] and "```sh" in rendered["markdown"]
    assert rendered["oneline"].startswith("ext4-data-journal WARNING")
    assert "<testsuites" in rendered["junit"] and "gdsdoctor_status 1" in rendered["prometheus"]
    assert rendered["text"].rstrip().splitlines()[-1].startswith("Status: WARNING")
    again = gd.Report.from_json(rendered["json"])
    assert again.data == report.data and again.render("markdown") == rendered["markdown"]
    with pytest.raises(gd.GdsdoctorError, match="unknown format"):
        report.render("yaml")
    with pytest.raises(gd.GdsdoctorError):
        gd.Report.from_json("{}")


def test_errors_are_gdsdoctor_errors(tmp_path: Path) -> None:
    (tmp_path / "bad.tar.gz").write_bytes(b"not a tarball")
    with pytest.raises(gd.GdsdoctorError, match=r"not a readable tar\.gz bundle"):
        gd.analyze(tmp_path / "bad.tar.gz")
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "broken.yaml").write_text("causes: [{id: x}]\n")
    with pytest.raises(gd.GdsdoctorError, match=r"broken\.yaml"):
        gd.analyze_texts([JOURNAL], rules_dirs=[tmp_path / "rules"])


def test_check_this_host() -> None:
    report = gd.check(deadline_s=30)
    validate_report(report.data)
    assert report.data["source"]["kind"] == "live" and report.exit_code in (0, 1, 2, 3)


def test_runbook_example_runs() -> None:
    """docs/runbook.md's Python block runs as written (with its inputs in place)."""
    runbook = (Path(__file__).resolve().parents[1] / "docs" / "runbook.md").read_text()
    code = runbook.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, object] = {
        "TICKET_TEXTS": {"mounts": JOURNAL, "lsmod": LSMOD},
        "CHECKPOINT_DIR": "/mnt/ckpt",
    }
    exec(compile(code, "docs/runbook.md", "exec"), namespace)
    assert "ext4-data-journal" in str(namespace["markdown"])  # readable: only specials are escaped


def test_version_does_not_import_the_engine() -> None:
    """Start-up stays fast: `--version` imports neither the capture layer nor the rules; and
    `analyze` of one bundle, which imports the fleet module to tell a fleet apart, does not
    import multiprocessing (docs/performance.md)."""
    import subprocess
    import sys

    code = (
        "import sys, gdsdoctor.cli as c; print(sorted(m for m in sys.modules if m.startswith(("
        "'gdsdoctor.capture', 'gdsdoctor.engine', 'jsonschema', 'rich'))));"
        "import gdsdoctor.commands.fleet, gdsdoctor.pipeline;"
        "print(sorted(m for m in sys.modules if m.startswith(('multiprocessing', 'concurrent'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.split("\n")[:2] == ["[]", "[]"]


def test_job_is_checked_and_reaches_the_facts() -> None:
    report = gd.analyze_texts({"mounts": JOURNAL}, path="/mnt/ckpt", job={"params": "70B", "interval": "30m"})
    assert report.facts["job"]["status"] == "ok"
    with pytest.raises(gd.GdsdoctorError):
        gd.analyze_texts({"mounts": JOURNAL}, job={"params": "seventy"})
