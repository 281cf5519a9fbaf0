"""The first hour of a new user (issue 25): contracts automation can trust and output a person
reads. Each test here failed on the code before the change it covers."""

from __future__ import annotations

import contextlib
import io
import json
import re
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


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("r.json", "json"),
        ("node.prom", "prometheus"),
        ("r.xml", "junit"),
        ("r.md", "markdown"),
        ("r.txt", "text"),
    ],
)
def test_output_format_follows_the_extension(tmp_path: Path, name: str, kind: str) -> None:
    mounts = FIXTURES / "ext4-journal-checkpoint/files/proc-mounts.txt"
    assert cli.run(["analyze", str(mounts), "-o", str(tmp_path / name)]) == 1
    written = (tmp_path / name).read_text()
    looks = {
        "json": lambda t: json.loads(t)["summary"]["status"] == "WARNING",
        "prometheus": lambda t: "gdsdoctor_status 1" in t,
        "junit": lambda t: t.startswith("<?xml") and "<testsuite" in t,
        "markdown": lambda t: "## Findings" in t,
        "text": lambda t: t.startswith("gdsdoctor ") and "Findings" in t,
    }
    assert looks[kind](written), written[:200]


def test_output_with_an_unknown_extension_is_one_line_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mounts = FIXTURES / "ext4-journal-checkpoint/files/proc-mounts.txt"
    assert cli.run(["analyze", str(mounts), "-o", str(tmp_path / "r.yaml")]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "FORMAT=PATH" in err[0] and ".prom" in err[0]


def test_fleet_merge_help_example_works(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bundles = [
        str(FIXTURES / n / "bundle") for n in ("topo-sysfs-degraded-links", "h200-node-without-nvidia-fs")
    ]
    cli.run(["analyze", *bundles, "-o", str(tmp_path / "shard.json")])
    assert cli.run(["fleet", "merge", "--help"]) == 0
    helped = capsys.readouterr().out
    assert "-o fleet.json" in " ".join(helped.split())
    code = cli.run(["fleet", "merge", str(tmp_path / "shard.json"), "-o", str(tmp_path / "fleet.json")])
    assert code == 1 and json.loads((tmp_path / "fleet.json").read_text())["summary"]["nodes"] == 2


def test_quiet_prints_the_findings_and_the_status(capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted(str(p) for p in (FIXTURES / "gds-cufile-json-misconfigured/files").iterdir())
    assert cli.run(["analyze", *files, "--quiet"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines[:-1]] == [
        "cufile-direct-io-size-invalid", "cufile-denylist-disables-gds",
        "gds-compat-forced-per-filesystem", "cufile-pinned-memory-limit-low",
    ]  # fmt: skip
    assert all(line.startswith("WARNING  ") for line in lines[:-1])
    assert lines[-1].startswith("Status: WARNING (exit 1)")


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["rules", "show", "fs-errors"], "fs-errors-or-shutdown"),
        (
            ["explain", "ext4-data-jornal", str(FIXTURES / "ext4-journal-checkpoint/files/proc-mounts.txt")],
            "ext4-data-journal",
        ),
    ],
)
def test_a_mistyped_cause_id_gets_a_suggestion(
    argv: list[str], suggestion: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.run(argv) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"(did you mean {suggestion}" in err[0]


def _complete(words: str) -> list[str]:
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        "_GDSDOCTOR_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1)),
    }
    run = subprocess.run(
        [sys.executable, "-m", "gdsdoctor"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    return run.stdout.split()


def test_shell_completion_offers_cause_ids_presets_and_formats() -> None:
    assert "fs-errors-or-shutdown" in _complete("gdsdoctor rules show fs-err")
    assert "bf16-adamw" in _complete("gdsdoctor check --preset bf16")
    assert {"json", "prometheus", "junit"} <= set(_complete("gdsdoctor check --format "))


def _helps(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Every command's --help at 200 columns, rendered in-process (as the CLI renders it)."""
    import contextlib
    import io

    commands = ["", "check", "analyze", "collect", "redact", "explain", "topo", "probes", "estimate", "bench",
                "watch", "rules list", "rules show", "rules lint", "fleet merge"]  # fmt: skip
    monkeypatch.setenv("COLUMNS", "200")
    found = {}
    for command in commands:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert cli.run([*command.split(), "--help"]) == 0, command
        found[command or "gdsdoctor"] = out.getvalue()
    return found


def test_help_is_consistent(monkeypatch: pytest.MonkeyPatch) -> None:
    """American spelling (the command is `analyze`), one metavar style (NAMES, not typer's
    <str>), each default stated once, --bench-size's limits stated."""
    import re

    helps = _helps(monkeypatch)
    for command, text in helps.items():
        assert not re.search(r"(?i)\b(analys(e|ed|es|ing)|summaris|recognis|behaviour|colour)", text), command
        options = [
            line for line in text.splitlines() if re.match(r"^│ [* ] *--", line) or line.startswith("│ --")
        ]
        assert options, command if command not in ("gdsdoctor",) else "ok"
        for line in options:
            assert not re.search(r"<(str|int|float|text|integer)>", line), (command, line)
        rows = " ".join(text.split())
        for row in rows.split("│ --")[1:]:
            assert not ("(default" in row and "[default:" in row), (command, row[:120])
    check = " ".join(helps["check"].split())
    assert "64 MiB to 8 GiB" in check and "half the free space" in check


def test_explain_shows_a_lowered_severity(capsys: pytest.CaptureFixture[str]) -> None:
    """Polled completions (the interrupt lost, the I/O done) cap nvme-io-timeouts below critical:
    explain says so, as the report does."""
    log = REPO / "tests/data/device_judgement/nvme-completion-polled.log"
    assert cli.run(["explain", "nvme-io-timeouts", str(log)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("severity:"))
    assert "lowered from critical by derived.devices.ceiling.nvme_timeouts" in line
    report = analyze_paths([log]).report
    assert {f["id"]: f["severity"] for f in report["findings"]}["nvme-io-timeouts"] in line


def _run(argv: list[str], columns: int) -> str:
    """The command's stdout at ``columns`` (COLUMNS is read at each run, as the terminal's is)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COLUMNS", str(columns))
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            cli.run(argv)
    return buffer.getvalue()


_GLYPHS = set("│├└─ ")
WIDE_OUTPUTS = {
    "probes": ["probes"],
    "rules list": ["rules", "list"],
    "rules show": ["rules", "show", "nvme-io-timeouts"],
    "topo": ["topo", str(FIXTURES / "topo-sysfs-two-socket-iommu/bundle"), "--format", "text"],
    "report": ["analyze", str(FIXTURES / "h200-node-checkpoint-path-on-root-ext4/bundle")],
    "fleet": [
        "analyze",
        str(FIXTURES / "topo-sysfs-degraded-links/bundle"),
        str(FIXTURES / "h200-node-without-nvidia-fs/bundle"),
    ],
    "estimate": ["estimate", "--params", "70B", "--throughput", "2GB/s", "--budget", "5%"],
}


def _words(text: str) -> list[str]:
    """The words, less the tree's glyphs and the `` \\`` that continues a command on the next line."""
    return [word for word in text.split() if not set(word) <= _GLYPHS and word != "\\"]


def _fits(line: str, columns: int) -> bool:
    """A line fits, or it is one that must stay whole: a URL, or a line holding one word longer
    than the room its indentation leaves (a path; a command's quoted argument, which a shell
    could not read cut). The status line wraps too (at an asked width: COLUMNS here), and a long
    command is continued on the next line with `` \\``."""
    if len(line) <= columns or "http" in line:
        return True
    indent = len(line) - len(line.lstrip(" │├└─"))
    return max(len(word) for word in line.split()) > columns - indent - 4


_WIDE: dict[str, str] = {}


def _wide(name: str) -> str:
    """The output at 400 columns, once for both narrow widths (the fleet runs take a second)."""
    if name not in _WIDE:
        _WIDE[name] = _run(WIDE_OUTPUTS[name], 400)
    return _WIDE[name]


@pytest.mark.parametrize("columns", [60, 80])
@pytest.mark.parametrize("name", sorted(WIDE_OUTPUTS))
def test_every_human_output_fits_the_terminal_without_cutting_a_word(name: str, columns: int) -> None:
    """Each line fits (or must stay whole), and the words are those of a 400-column run in the
    same order: none was cut in two, none lost."""
    narrow, wide = _run(WIDE_OUTPUTS[name], columns), _wide(name)
    assert narrow.strip()
    assert [line for line in narrow.splitlines() if not _fits(line, columns)] == [], name
    assert _words(narrow) == _words(wide), name
    urls = [word for word in _words(wide) if word.startswith(("http://", "https://"))]
    assert all(url in narrow.split() for url in urls)  # each URL whole on one line


def test_a_table_that_cannot_fit_becomes_a_list() -> None:
    rows = _run(WIDE_OUTPUTS["estimate"], 60).splitlines()
    assert rows[1:3] == ["  parameters", "      70,000,000,000 (70B)"]  # label, then its value under it
    table = _run(WIDE_OUTPUTS["estimate"], 80).splitlines()
    assert table[1].split() == ["parameters", "70,000,000,000", "(70B)"]  # one row, aligned


@pytest.mark.parametrize("name", ["report", "estimate", "rules show"])
def test_prose_stops_near_100_columns_on_a_wide_terminal(name: str) -> None:
    text = _run(WIDE_OUTPUTS[name], 200)
    # URLs, commands and file paths stay whole, so their lines may run past the prose width (a
    # rule's "defined in:" path is as long as the checkout's location makes it).
    prose = [
        line
        for line in text.splitlines()
        if "http" not in line
        and "$ " not in line
        and not any(w.startswith("/") for w in line.split())
        and not line.startswith("Status: ")  # whole, as _fits says: a script reads the last line
    ]
    assert max(len(line) for line in prose) <= 100
    assert max(len(line) for line in prose) > 80  # it does use the width it has
    assert max(len(line) for line in _run(["probes"], 200).splitlines()) <= 200


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _on_a_terminal(argv: list[str], columns: int) -> tuple[int, str]:
    """Run gdsdoctor with stdout and stderr on a pseudo-terminal of ``columns`` (no COLUMNS set:
    the width comes from the terminal itself); the exit code and the screen, style codes removed."""
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import sys
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    command = [sys.executable, "-m", "gdsdoctor", *argv]
    with subprocess.Popen(command, stdin=follower, stdout=follower, stderr=follower, env=env) as process:
        os.close(follower)
        chunks = []
        with contextlib.suppress(OSError):  # EIO once the child closed its end
            while chunk := os.read(leader, 65536):
                chunks.append(chunk)
        code = process.wait(timeout=60)
    os.close(leader)
    return code, _ANSI.sub("", b"".join(chunks).decode()).replace("\r\n", "\n")


def test_a_pseudo_terminal_sets_the_width_and_stderr_wraps_between_words(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """What is drawn on a 60-column terminal fits it; an error line on a terminal wraps between
    words, while the same line to a pipe stays one line for scripts."""
    code, screen = _on_a_terminal(WIDE_OUTPUTS["estimate"][:], 60)
    assert code == 1 and "  parameters\n      70,000,000,000 (70B)" in screen  # the list a table becomes
    assert [line for line in screen.splitlines() if not _fits(line, 60)] == []
    assert max(len(line) for line in screen.splitlines()) > 50
    bad = ["analyze", str(FIXTURES / "gds-nvfs-healthy/files"), "-o", "/nonexistent/r.bogus"]
    code, on_tty = _on_a_terminal(bad, 60)
    assert code == 3 and len(on_tty.splitlines()) > 2
    assert all(len(line) <= 60 for line in on_tty.splitlines())
    assert cli.run(bad) == 3
    piped = capsys.readouterr().err
    assert len(piped.splitlines()) == 1 and len(piped) > 120
    assert on_tty.split() == piped.split()  # the same words, none cut


def test_the_node_comes_first(capsys: pytest.CaptureFixture[str]) -> None:
    bundle = FIXTURES / "h200-node-checkpoint-path-on-root-ext4/bundle"
    assert cli.run(["analyze", str(bundle), "--path", "/tmp"]) == 0  # no GDS in use there (issue 31)
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    start = next(i for i, x in enumerate(lines) if x.startswith("GPUs: "))
    node = lines[start : lines.index(next(x for x in lines if x.startswith("Sources read")))]
    assert start <= 2  # under the header, before the sources and the findings
    assert node[:2] == [
        "GPUs: 1 × NVIDIA H200, driver 580.159.04",
        "GDS: nvidia-fs not loaded; mode compat-only",
    ]
    assert "Checkpoint filesystem: / (ext4 on /dev/vda)" in node and node[-1] == "Virtualization: unknown"
    report = analyze_paths([bundle], "/tmp").report
    assert report["node"]["gpus"] == {"count": 1, "models": ["NVIDIA H200"], "driver": "580.159.04"}


NODE_LINES = {
    # a local drive and two NVMe-oF (RDMA) controllers in sysfs, nvidia-fs loaded
    "nvmeof-sysfs-rdma-healthy/files": [
        "GDS: nvidia-fs loaded; mode nvfs",
        "NVMe: 1 local (3.2TB NVMe Gen4 U.2 SSD V); NVMe-oF controllers: 2 (rdma)",
    ],
    # nvme-cli list-subsys of four FC paths: it lists PCIe subsystems too, so "0 local" is read
    "nvmeof-list-subsys-fc-ana/files": ["NVMe: 0 local; NVMe-oF controllers: 4 (fc)"],
    # a PCIe drive in list-subsys only (no sysfs): counted, its model unknown
    "nvme-list-subsys-json-pcie/files": ["NVMe: 1 local; NVMe-oF controllers: 0"],
    # the PCI tree: two GPUs without nvidia-smi, the drive named from sysfs
    "topo-sysfs-two-socket-iommu/bundle": ["GPUs: 2", "NVMe: 1 local (Micron_7450); NVMe-oF controllers: 0"],
    "gds-container-with-nvidia-fs-devices/bundle": ["GPUs: unknown", "Virtualization: docker"],
    # a pasted gdscheck -p: GDS known, nothing about drives (no NVMe line rather than "0")
    "gds-gdscheck-1.16-nvfs/files": ["GPUs: unknown", "GDS: nvidia-fs loaded 2.27; mode nvfs"],
}


@pytest.mark.parametrize("fixture", sorted(NODE_LINES))
def test_the_node_summary_of_real_captures(fixture: str) -> None:
    from gdsdoctor.report.text import render_text

    report = analyze_paths([FIXTURES / fixture]).report
    text = render_text(report, width=200).splitlines()
    node = [line.strip() for line in text[1 : next(i for i, x in enumerate(text) if x.startswith("Sources"))]]
    assert set(NODE_LINES[fixture]) <= set(node), node
    if fixture.startswith("gds-gdscheck"):
        assert not any(line.startswith("NVMe") for line in node)  # unknown, not said as zero
        assert report["node"]["nvme"] is None


def test_a_live_check_names_the_host_as_a_host() -> None:
    from gdsdoctor.report.text import render_text

    report = analyze_paths([FIXTURES / "ext4-journal-checkpoint/files/proc-mounts.txt"]).report
    report["source"] |= {"kind": "live", "label": "vm"}
    assert render_text(report).splitlines()[0] == "gdsdoctor 0.1.0 — live check of host vm"
    nothing = analyze_paths([FIXTURES / "ext4-journal-checkpoint/files/proc-mounts.txt"]).report["node"]
    assert nothing["gpus"] is None and nothing["virtualization"] is None  # unknown, not "none"


@pytest.mark.parametrize("name", ["report", "fleet", "rules show", "estimate", "probes"])
def test_prose_stops_at_100_columns_on_a_wide_terminal(name: str) -> None:
    """At 200 columns prose lines reached 141-197 columns (a status line, a probe's "run `…`"
    line, a table's description column). Prose stops at 100 columns, a table row at 120; only
    what is quoted or copied may use the width: a log line quoted as evidence (``file:line
    text``), a command, a URL."""
    from gdsdoctor.textwidth import TABLE_MAX

    argv = WIDE_OUTPUTS[name] + (["-v"] if name == "report" else [])
    quoted = re.compile(r"^\s+(?:\S+:\d+  |\$ |see http)")
    lines = _run(argv, 200).splitlines()
    continued = {n + 1 for n, line in enumerate(lines) if line.endswith(" \\")}  # a command goes on
    prose = [line for n, line in enumerate(lines) if not quoted.match(line) and n not in continued]
    assert [line for line in prose if len(line) > TABLE_MAX and _fits(line, TABLE_MAX) is False] == [], name
