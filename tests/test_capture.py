"""Live capture, bundles and pasted files: the same findings whichever door the data comes in by."""

from __future__ import annotations

import dataclasses
import json
import tarfile
import time
from pathlib import Path

import pytest

from gdsdoctor.capture.bundle import read_bundle, write_bundle
from gdsdoctor.capture.detect import capture_files
from gdsdoctor.capture.live import capture_live
from gdsdoctor.capture.runner import run_command
from gdsdoctor.errors import BundleError
from gdsdoctor.model import ArtifactStatus
from gdsdoctor.pipeline import analyze_capture, analyze_paths, check
from tests.conftest import THIS_KERNEL, fake_binary, write_tree

PROC_MOUNTS = (
    "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\n"
    "/dev/nvme0n1p2 / ext4 rw,relatime 0 0\n"
    "/dev/nvme1n1 /mnt/ckpt ext4 rw,noatime 0 0\n"
    "/dev/md0 /mnt/data\\040set xfs rw,noatime 0 0\n"
)
PROC_MODULES = (
    "nvidia_uvm 1388544 0 - Live 0xffffffffc2a00000 (POE)\n"
    "nvidia 56737792 1 nvidia_uvm, Live 0xffffffffc0600000 (POE)\n"
    "nvme 53248 3 - Live 0xffffffffc04e4000\n"
)


def _host(tmp_path: Path) -> Path:
    # this kernel's root (its boot id): the fake commands on PATH run for it
    files = {**THIS_KERNEL, "proc/mounts": PROC_MOUNTS, "proc/modules": PROC_MODULES}
    return write_tree(tmp_path / "host", files)


def _findings(analysis) -> list[tuple]:  # type: ignore[no-untyped-def]
    return [
        (f["id"], f["certainty"], f["explained_by"], json.dumps(f["evidence"]))
        for f in analysis.report["findings"]
    ]


def test_check_reads_host_root_and_finds_causes(tmp_path: Path, isolated_path: Path) -> None:
    analysis = check(_host(tmp_path), site={"node": {"gds": "required"}})  # a node meant for GDS
    ids = [f["id"] for f in analysis.report["findings"]]
    assert "nvidia-fs-not-loaded" in ids and "ext4-data-mode-not-explicit" in ids
    assert analysis.report["summary"]["status"] == "CRITICAL" and analysis.exit_code == 2
    mounts = analysis.facts["mounts"]["mounts"]
    assert mounts[3]["mountpoint"] == "/mnt/data set"  # octal escape decoded
    evidence = next(f for f in analysis.report["findings"] if f["id"] == "ext4-data-mode-not-explicit")[
        "evidence"
    ]
    assert {k: evidence[1][k] for k in ("artifact", "line")} == {"artifact": "proc/mounts", "line": 3}


@pytest.mark.parametrize("suffix", ["bundle.tar.gz", "bundle-dir"])
def test_analyze_of_collect_equals_check(tmp_path: Path, isolated_path: Path, suffix: str) -> None:
    host = _host(tmp_path)
    fake_binary(isolated_path, "gdscheck", "echo 'garbage that is not gdscheck output'; exit 0")
    live = check(host)
    bundle = write_bundle(capture_live(host), tmp_path / suffix)
    offline = analyze_paths([bundle])
    assert _findings(offline) == _findings(live)
    assert offline.report["inconclusive"] == live.report["inconclusive"]
    assert offline.report["summary"] == live.report["summary"]
    assert offline.facts == live.facts


def test_probe_threads_parse_and_facts_reuse_only_what_the_capture_still_holds(tmp_path: Path) -> None:
    from gdsdoctor.capture.live import LiveCapture
    from gdsdoctor.facts.document import build_facts
    from gdsdoctor.facts.section import section_from
    from gdsdoctor.model import Artifact
    from gdsdoctor.probes import BY_SECTION

    host = write_tree(tmp_path / "host", {"proc/cmdline": "BOOT_IMAGE=/vmlinuz iommu=pt\n"})
    calls: list[str] = []
    original = BY_SECTION["cmdline"].parse

    def counting(text: str, name: str) -> dict:
        calls.append(text)
        return original(text, name)

    probe = dataclasses.replace(BY_SECTION["cmdline"], parse=counting)
    live = LiveCapture(host, probes=[probe], parse=section_from)
    capture = live.finish()
    assert len(calls) == 1 and "cmdline" in live.parsed  # parsed in the probe's thread
    facts = build_facts(capture, [probe], live.parsed)
    assert len(calls) == 1 and facts["cmdline"] == section_from(probe, [capture.artifacts["proc/cmdline"]])
    # replaced after the capture (as check --bench adds its result): parsed again, not reused
    capture.add("cmdline", Artifact("proc/cmdline", ArtifactStatus.OK, b"BOOT_IMAGE=/vmlinuz iommu=off\n"))
    facts = build_facts(capture, [probe], live.parsed)
    assert calls[-1].endswith("iommu=off\n") and facts["cmdline"] != live.parsed["cmdline"][1]


def test_bundle_manifest_records_every_artifact(tmp_path: Path, isolated_path: Path) -> None:
    bundle = write_bundle(capture_live(_host(tmp_path)), tmp_path / "b")
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["format"] == "gdsdoctor.bundle" and manifest["format_version"] == 1
    by_name = {a["name"]: a for a in manifest["artifacts"]}
    assert by_name["proc/mounts"]["status"] == "ok" and by_name["proc/mounts"]["size"] == len(PROC_MOUNTS)
    assert by_name["proc/modules"]["status"] == "ok"
    assert "cmd/lsmod.txt" not in by_name  # the fallback runs only when the preferred source fails


def test_partial_bundle_is_analysed_with_what_is_there(tmp_path: Path, isolated_path: Path) -> None:
    bundle = write_bundle(capture_live(_host(tmp_path)), tmp_path / "b")
    (bundle / "proc" / "modules").unlink()
    analysis = analyze_paths([bundle])
    assert analysis.facts["modules"]["status"] == "missing"
    assert "nvidia-fs-not-loaded" in {i["id"] for i in analysis.report["inconclusive"]}


def test_bundle_refuses_unsafe_members(tmp_path: Path) -> None:
    archive = tmp_path / "evil.tar.gz"
    manifest = {
        "format": "gdsdoctor.bundle",
        "format_version": 1,
        "artifacts": [{"name": "../etc/passwd", "status": "ok"}],
    }
    with tarfile.open(archive, "w:gz") as tar:
        for name, data in {
            "manifest.json": json.dumps(manifest).encode(),
            "../etc/passwd": b"root:x:0:0",
        }.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            import io

            tar.addfile(info, io.BytesIO(data))
    capture = read_bundle(archive)
    assert capture.artifacts == {}
    assert any("unsafe artifact name" in note for note in capture.notes)


def test_bundle_errors_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "notabundle.tar.gz").write_bytes(b"\x1f\x8bthis is not gzip")
    with pytest.raises(BundleError, match=r"not a readable tar\.gz bundle"):
        read_bundle(tmp_path / "notabundle.tar.gz")
    newer = tmp_path / "newer"
    write_tree(newer, {"manifest.json": json.dumps({"format": "gdsdoctor.bundle", "format_version": 99})})
    with pytest.raises(BundleError, match=r"newer than this gdsdoctor reads"):
        read_bundle(newer)


def test_pasted_files_are_recognised_by_content(tmp_path: Path) -> None:
    files = write_tree(
        tmp_path,
        {
            "a.txt": PROC_MOUNTS,
            "b.log": "Module                  Size  Used by\nnvidia_fs  262144  0\n",
            "c.txt": "hello\n",
        },
    )
    capture = capture_files([files / "a.txt", files / "b.log", files / "c.txt", files / "missing.txt"])
    assert capture.assignments == {"mounts": ["a.txt"], "modules": ["b.log"]}
    assert any(
        n == f"{files / 'c.txt'}: not recognised — `gdsdoctor probes` lists what is read"
        for n in capture.notes
    )
    assert any(n == f"{files / 'missing.txt'}: no such file" for n in capture.notes)
    analysis = analyze_capture(capture)
    assert "nvidia-fs-not-loaded" not in [f["id"] for f in analysis.report["findings"]]


def test_nothing_readable_is_unknown(tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text("not any known output\n")
    analysis = analyze_paths([tmp_path / "x.txt"])
    assert analysis.report["summary"]["status"] == "UNKNOWN" and analysis.exit_code == 3


def test_runner_kills_hung_command_group(tmp_path: Path, isolated_path: Path, sh_available: str) -> None:
    fake_binary(isolated_path, "hang", "/bin/sleep 30 & /bin/sleep 30")
    artifact = run_command("cmd/hang.txt", [str(isolated_path / "hang")], timeout=0.5)
    assert (artifact.status, artifact.detail) == (ArtifactStatus.TIMEOUT, "killed after 0.5s")
    missing = run_command("cmd/x", ["definitely-not-a-command-xyz"], timeout=1)
    assert missing.status is ArtifactStatus.MISSING and "command not found" in missing.detail
    failing = fake_binary(isolated_path, "fails", "echo partial; echo 'boom happened' >&2; exit 4")
    failed = run_command("cmd/f", [str(failing)], timeout=2)
    assert (failed.status, failed.exit_code, failed.detail, failed.data) == (
        ArtifactStatus.ERROR,
        4,
        "boom happened",
        b"partial\n",
    )


def test_check_with_hanging_probe_meets_deadline(
    tmp_path: Path, isolated_path: Path, sh_available: str
) -> None:
    fake_binary(isolated_path, "gdscheck", "/bin/sleep 60")
    analysis = check(_host(tmp_path), deadline_s=3)
    probes = {p["name"]: p for p in analysis.report["probes"]}
    if "gdscheck" in probes:  # the deadline that ended it is named, never a wait for the sleep
        assert probes["gdscheck"]["status"] == "timeout" and "3s" in probes["gdscheck"]["detail"]


def test_host_file_that_is_a_fifo_does_not_block(tmp_path: Path, isolated_path: Path) -> None:
    import os

    host = _host(tmp_path)
    (host / "proc" / "modules").unlink()
    os.mkfifo(host / "proc" / "modules")  # nobody ever writes: a plain open() would block forever
    analysis = check(host, deadline_s=20)  # a blocking open would end only at the deadline:
    assert analysis.facts["modules"]["status"] in ("error", "missing")  # a timeout, never an error


def test_commands_abandoned_at_the_deadline_are_killed(
    tmp_path: Path, isolated_path: Path, sh_available: str
) -> None:
    import os

    marker = tmp_path / "still-running"
    fake_binary(isolated_path, "gdscheck", f"/bin/sleep 2; /usr/bin/touch {marker}; /bin/sleep 30")
    check(_host(tmp_path), deadline_s=1)
    time.sleep(2.5)
    assert not marker.exists(), "a probe command outlived the deadline"
    assert os.environ["PATH"] == str(isolated_path)


def test_a_streamed_command_is_read_as_it_comes_and_killed_with_its_group(
    tmp_path: Path, isolated_path: Path, sh_available: str
) -> None:
    from gdsdoctor.capture import runner

    # prints a line, then would run on forever in a grandchild holding the pipe
    sleeper = tmp_path / "sleeper.pid"
    fake_binary(isolated_path, "chatty", f"/bin/sleep 30 & echo $! > {sleeper}; echo first; wait")
    with runner.streamed_output(["chatty"]) as process:
        assert process is not None and process.stdout is not None
        assert process.stdout.readline() == b"first\n"
        assert process.pid in runner._running
    assert process.returncode is not None  # ended with the block, not left to its sleep
    assert process.pid not in runner._running
    assert not _alive(int(sleeper.read_text()))  # the grandchild went with it
    with runner.streamed_output(["definitely-not-a-command-xyz"]) as missing:
        assert missing is None


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for its parent to reap it."""
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        if state == "Z":
            return False
        time.sleep(0.02)
    return True
