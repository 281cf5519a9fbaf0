"""Hostile inputs, third round, items 10, 12 and 13: what reaches the terminal and how a run ends.
Invisible format characters (Unicode category Cf: tag characters, U+206A-206F, U+FFF9-FFFB,
U+0600-0605) in a device name reached text, Markdown and JUnit raw and a remediation built from
one was printed; a Latin-1 or ASCII locale crashed the text renderers; a closed or full stdout
gave a traceback; SIGHUP ended ``watch`` without its recording."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from gdsdoctor.engine.evaluate import UNSAFE_CHARACTERS, render_command
from gdsdoctor.report.escape import visible

MOUNTS = "/dev/nvme1n1{tag} /mnt/ckpt ext4 rw,noatime,data=journal 0 0\n/dev/nvme0n1p2 / ext4 rw 0 0\n"
CF_SAMPLES = ["\U000e0041", "\U000e0020", "\u206a", "\u206f", "\ufff9", "\ufffb", "\u0600", "\u0605"]


def test_every_format_character_is_unsafe() -> None:
    """Every code point of categories Cc, Cf, Zl, Zp this Python knows is in the class that is
    escaped on screen and withholds a remediation (the bidi controls were; the tags were not)."""
    unsafe = {
        chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) in ("Cc", "Cf", "Zl", "Zp")
    }
    import re

    pattern = re.compile(f"[{UNSAFE_CHARACTERS}]")
    assert not [hex(ord(c)) for c in unsafe if not pattern.match(c)]


@pytest.mark.parametrize("char", CF_SAMPLES)
def test_a_format_character_is_shown_as_an_escape_and_withholds_the_command(char: str) -> None:
    shown = visible(f"nvme1n1{char}")
    assert char not in shown and ("\\u" in shown or "\\U" in shown)
    [command] = render_command("mount -o remount {device}", {"device": f"/dev/nvme1n1{char}"})
    assert command.startswith("# withheld") and char not in command


def _analyze(
    tmp_path: Path, fmt: str, env: dict[str, str] | None = None, **kwargs: object
) -> subprocess.CompletedProcess[bytes]:
    mounts = tmp_path / "mounts.txt"
    mounts.write_text(MOUNTS.format(tag="\U000e0041\u206a\ufff9\u0600"), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "gdsdoctor", "analyze", str(mounts), "--format", fmt],
        capture_output=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        **kwargs,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("fmt", ["text", "markdown", "junit"])
def test_format_characters_in_a_device_name_never_reach_the_output_raw(tmp_path: Path, fmt: str) -> None:
    result = _analyze(tmp_path, fmt)
    out = result.stdout.decode("utf-8")
    assert not [c for c in out if unicodedata.category(c) == "Cf"], out[:500]


@pytest.mark.parametrize("locale", ["en_US.ISO-8859-1", "C"])  # POSIX is glibc's other name for C
@pytest.mark.parametrize("fmt", ["text", "markdown", "junit"])
def test_a_non_utf8_locale_never_crashes_the_output(tmp_path: Path, fmt: str, locale: str) -> None:
    result = _analyze(tmp_path, fmt, env={"LC_ALL": locale, "PYTHONIOENCODING": "", "PYTHONUTF8": "0"})
    assert result.returncode in (0, 1, 2), result.stderr.decode(errors="replace")[-500:]
    assert b"Traceback" not in result.stderr and b"internal error" not in result.stderr
    assert b"ckpt" in result.stdout


def test_a_closed_stdout_is_one_line_and_exit_3(tmp_path: Path) -> None:
    result = _analyze(tmp_path, "text", stdout=None, pass_fds=(), preexec_fn=lambda: os.close(1))
    assert result.returncode == 3, result.stderr[-500:]
    assert result.stderr.count(b"\n") == 1 and b"stdout" in result.stderr, result.stderr


def test_a_full_stdout_is_one_line_and_exit_3(tmp_path: Path) -> None:
    with open("/dev/full", "wb") as full:
        mounts = tmp_path / "mounts.txt"
        mounts.write_text(MOUNTS.format(tag=""))
        result = subprocess.run(
            [sys.executable, "-m", "gdsdoctor", "analyze", str(mounts), "--format", "json"],
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    assert result.returncode == 3, result.stderr[-500:]
    assert result.stderr.count(b"\n") == 1 and b"stdout" in result.stderr, result.stderr


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM, signal.SIGINT])
def test_every_ending_signal_keeps_the_watch_recording(tmp_path: Path, sig: signal.Signals) -> None:
    record = tmp_path / "watch.tar.gz"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gdsdoctor",
            "watch",
            "--path",
            str(tmp_path),
            "--every",
            "0.2s",
            "--format",
            "json",
            "--record",
            str(record),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert json.loads(process.stdout.readline())["type"] == "header"
        assert json.loads(process.stdout.readline())["type"] == "sample"
        process.send_signal(sig)
        _, err = process.communicate(timeout=30)
    finally:
        process.kill()
        process.wait()
    assert record.is_file() and record.stat().st_size > 0, err
    assert "Traceback" not in err


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/null"])
def test_an_output_that_is_a_special_file_is_refused_and_left_alone(tmp_path: Path, kind: str) -> None:
    """The atomic rename swapped a fifo or a character device for a regular file (as root,
    ``--output json=/dev/null`` replaced the system's). A link in tmp_path stands for the
    device: the real one is never put at risk by the test."""
    target = tmp_path / "out"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/null")
    mounts = tmp_path / "mounts.txt"
    mounts.write_text(MOUNTS.format(tag=""))
    result = subprocess.run(
        [sys.executable, "-m", "gdsdoctor", "analyze", str(mounts), "--output", f"json={target}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 3 and result.stderr.count("\n") == 1, result.stderr
    assert "not a regular file" in result.stderr
    assert target.is_fifo() if kind == "fifo" else target.is_symlink()


def test_a_sparse_build_log_under_the_host_root_is_read_only_as_far_as_kept(tmp_path: Path) -> None:
    """Item 5: a 640 MiB sparse make.log was read whole (667 MiB) before 4 MiB were kept."""
    import tracemalloc

    from gdsdoctor.probes.nvidia_fs import read_build_log

    log = tmp_path / "var/lib/dkms/nvidia-fs/2.17.5/build/make.log"
    log.parent.mkdir(parents=True)
    with log.open("wb") as out:
        out.truncate(640 * 1024 * 1024)
    tracemalloc.start()
    try:
        data = read_build_log(tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(data) == 4 * 1024 * 1024
    assert peak < 16 * 1024 * 1024, peak
