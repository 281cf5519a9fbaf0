"""nvidia-bug-report.log(.gz): the script's sections split across releases (2009, 2011, 2022
prologues), the ones gdsdoctor knows read by the same probes as a paste of the same outputs."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from gdsdoctor.capture import bundles, nvidia_bug_report
from gdsdoctor.errors import BundleError
from gdsdoctor.pipeline import analyze_paths

DATA = Path(__file__).parent / "data"
LOGS = DATA / "nvidia_bug_report"
RULE = "_" * 44
# (header as the script writes it, a real sample of that output)
SECTIONS = (
    ("*** /proc/driver/nvidia/./version", DATA / "device" / "proc-driver-nvidia-version.580-open.txt"),
    ("dmesg:", DATA / "dmesg" / "gdsnvfs-034-nvfs-proprietary-driver-gpl-symbols.dmesg.txt"),
    ("/usr/bin/nvidia-smi --query", DATA / "gpu" / "nvidia-smi-q.h100-hgx.535.161.08.gpu0.txt"),
)


def _log(prologue: str = "arch-2022-31831145") -> str:
    parts = [(LOGS / f"{prologue}.prologue.log").read_text()]
    for header, sample in SECTIONS:
        ls_line = f"*** ls: -r--r--r-- 1 root root 0 2022-10-27 20:48:33 -0300 {header[4:]}\n"
        metadata = ls_line if header.startswith("*** ") else "\n"
        parts.append(f"{RULE}\n\n{header}\n{metadata}{sample.read_text()}\n")
    parts.append(f"{RULE}\n\nEnd of NVIDIA bug report log file.\n")
    return "\n".join(parts)


def _ids(analysis) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(f["id"] for f in analysis.report["findings"])


def test_sections_across_script_releases() -> None:
    headers = {
        name: [h for _, h, _ in nvidia_bug_report.split_sections((LOGS / f"{name}.prologue.log").read_text())]
        for name in ("arch-2022-31831145", "ubuntu-2011-9611234", "ubuntu-2009-4401223")
    }
    assert "*** /etc/issue" in headers["ubuntu-2011-9611234"]
    assert "/etc/issue" in headers["ubuntu-2009-4401223"]  # the old scripts: the bare path
    assert "journalctl -b -0 _COMM=Xorg" in headers["arch-2022-31831145"]
    # a section's body starts after the `*** ls:` line, with the log's own line numbers
    text = (LOGS / "arch-2022-31831145.prologue.log").read_text()
    issue = next(s for s in nvidia_bug_report.split_sections(text) if s[1] == "*** /etc/issue")
    assert text.split("\n")[issue[0] - 1] == "Arch Linux \\r (\\l)"


def test_a_bug_report_reads_like_the_same_outputs_pasted(tmp_path: Path) -> None:
    log = tmp_path / "nvidia-bug-report.log"
    log.write_text(_log())
    assert bundles.kind(log) == "nvidia-bug-report"
    report = analyze_paths([log])
    pasted = analyze_paths([sample for _, sample in SECTIONS])
    assert _ids(report) == _ids(pasted) and _ids(report)
    for section in ("nvidia_driver", "dmesg", "nvidia_smi"):
        assert report.facts[section]["status"] == "ok", report.facts[section]
    assert report.report["source"]["kind"] == "nvidia-bug-report"
    assert report.report["host"] == {
        "hostname": "nomade007",
        "kernel": "6.0.1-arch2-1",
        "created": "2022-10-27T23:50:11Z",  # 08:50:11 PM -03
        "nvidia_bug_report_version": "31831145",
    }
    # evidence cites the line of the log itself
    driver = report.facts["nvidia_driver"]
    assert driver["artifact"] == "nvidia-bug-report.log: /proc/driver/nvidia/./version"
    line = next(r for r in _provenance(driver))
    assert log.read_text().split("\n")[line["line"] - 1] == line["text"]


def _provenance(value: object):  # type: ignore[no-untyped-def]
    if isinstance(value, dict):
        if {"artifact", "line", "text"} <= value.keys():
            yield value
        for item in value.values():
            yield from _provenance(item)
    elif isinstance(value, list):
        for item in value:
            yield from _provenance(item)


def test_gzipped_bug_report_and_old_prologues(tmp_path: Path) -> None:
    plain = tmp_path / "nvidia-bug-report.log"
    plain.write_text(_log("ubuntu-2011-9611234"))
    packed = tmp_path / "nvidia-bug-report.log.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert bundles.kind(packed) == "nvidia-bug-report"
    assert _ids(analyze_paths([packed])) == _ids(analyze_paths([plain]))
    host = analyze_paths([packed]).report["host"]
    assert host["hostname"] == "sharan-Aspire-5738"
    assert host["date_as_written"] == "Thu Jul 14 14:11:55 IST 2011"  # IST's offset is not certain
    assert "created" not in host


def test_a_bug_report_without_known_sections_is_one_line(tmp_path: Path) -> None:
    log = tmp_path / "nvidia-bug-report.log"
    log.write_text((LOGS / "ubuntu-2009-4401223.prologue.log").read_text())
    with pytest.raises(BundleError, match="none of the sections gdsdoctor reads"):
        bundles.read(log)


def test_a_bomb_named_like_a_bug_report_is_stopped(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(nvidia_bug_report, "MAX_LOG_BYTES", 1024 * 1024)
    head = _log().encode()
    packed = tmp_path / "nvidia-bug-report.log.gz"
    packed.write_bytes(gzip.compress(head + b"\n" * (4 * 1024 * 1024)))
    with pytest.raises(BundleError, match="decompresses to more than"):
        bundles.read(packed)


def test_a_log_of_blank_lines_costs_its_bytes_and_cites_its_own_line_numbers(tmp_path: Path) -> None:
    """Sections are found by offsets, never a list of the log's lines, and an artifact carries
    its first line number instead of blank lines standing in for the log before it: 1 Mi blank
    lines (the old reader held them as a list, ~80 bytes a line, and padded every section after
    them with as many newlines) cost what the log costs, and the evidence still cites the log's
    own line."""
    import tracemalloc

    blank = 1 << 20
    text = _log().replace(f"{RULE}\n\ndmesg:", "\n" * blank + f"{RULE}\n\ndmesg:", 1)
    tracemalloc.start()
    try:
        capture = nvidia_bug_report.capture_log("nvidia-bug-report.log", text, "x")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * len(text), peak  # the sections' bodies, never a list of lines
    path = tmp_path / "nvidia-bug-report.log"
    path.write_text(text)
    found = analyze_paths([path]).report
    cited = [
        e for f in found["findings"] for e in f["evidence"] if (e.get("artifact") or "").endswith("dmesg:")
    ]
    assert cited and all(text.split("\n")[e["line"] - 1].strip() == e["text"].strip() for e in cited)
    assert min(e["line"] for e in cited) > blank
    assert capture.artifacts["nvidia-bug-report.log: dmesg:"].first_line > blank


def test_a_log_without_any_section_rule_is_one_line(tmp_path: Path) -> None:
    """The prologue and no line of underscores (a log cut right after its start): one clear
    line, not the ValueError the old splitter raised on a log without separators."""
    path = tmp_path / "nvidia-bug-report.log"
    path.write_text((LOGS / "arch-2022-31831145.prologue.log").read_text().split(RULE)[1])
    assert nvidia_bug_report.START in path.read_text()
    assert nvidia_bug_report.split_sections(path.read_text()) == []
    with pytest.raises(BundleError, match="none of the sections gdsdoctor reads"):
        nvidia_bug_report.read_bug_report(path)


def test_the_lspci_section_of_current_scripts_is_read(tmp_path: Path) -> None:
    """Current scripts (the 390 driver's onwards at least) run `lspci -nnDvvvxxxx` (every device,
    its config space in hex): the section was not read, so a bug report's PCI devices, links and
    ACS were missing. Read now, as the same output pasted is."""
    sample = DATA / "pci" / "lspci-nnDvvvxxxx.this-machine-vm.txt"
    header = "/sbin/lspci -nnDvvvxxxx"
    prologue = (LOGS / "arch-2022-31831145.prologue.log").read_text()
    log = tmp_path / "nvidia-bug-report.log"
    log.write_text(f"{prologue}\n{RULE}\n\n{header}\n\n{sample.read_text()}\n{RULE}\n")
    report, pasted = analyze_paths([log]), analyze_paths([sample])
    assert report.capture.assignments["lspci"] == [f"nvidia-bug-report.log: {header}"]
    devices = [d["bdf"] for d in report.facts["lspci"]["devices"]]
    assert devices == [d["bdf"] for d in pasted.facts["lspci"]["devices"]] and len(devices) == 6
