"""Property-based tests: no exception escapes any parser, recogniser, the bundle reader, the
pasted-file reader or the redactor, whatever the input. Every probe in the registry is covered
(probes that land later are picked up automatically). Example counts are kept moderate so the
whole file runs in well under a minute."""

from __future__ import annotations

import io
import json
import tarfile
import tempfile
from collections.abc import Iterator
from itertools import count
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gdsdoctor.capture.bundle import read_bundle
from gdsdoctor.capture.detect import capture_files
from gdsdoctor.capture.redact import Redactor
from gdsdoctor.errors import BundleError, ParseError
from gdsdoctor.facts.document import ANALYSED_PROBES
from gdsdoctor.pipeline import analyze_capture
from gdsdoctor.probes.base import Probe
from tests.conftest import REPO

PROBE_IDS = [f"{p.section}" for p in ANALYSED_PROBES]
CORPUS = [
    p.read_bytes()[:65536].decode("utf-8", errors="replace")
    for p in sorted((REPO / "tests" / "data").rglob("*"))
    if p.is_file() and not p.name.endswith(".xz")
] or ["/dev/nvme0n1 / ext4 rw 0 0\n"]
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_names = count()


@st.composite
def mutated_samples(draw: st.DrawFn) -> str:
    """A real output (any kind), cut short, with lines dropped, doubled or replaced."""
    lines = draw(st.sampled_from(CORPUS)).split("\n")
    for _ in range(draw(st.integers(0, 4))):
        if not lines:
            break
        index = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["drop", "double", "garble", "cut"]))
        if action == "drop":
            del lines[index]
        elif action == "double":
            lines.insert(index, lines[index])
        elif action == "garble":
            lines[index] = draw(st.text(max_size=80))
        else:
            lines[index] = lines[index][: draw(st.integers(0, len(lines[index])))]
    text = "\n".join(lines)
    return text[: draw(st.integers(0, len(text)))] if draw(st.booleans()) else text


def _parse_only_parse_error(probe: Probe, text: str) -> None:
    try:
        result = probe.parse(text, "fuzz/artifact")
    except ParseError:
        return
    assert isinstance(result, dict)


@pytest.mark.parametrize("probe", ANALYSED_PROBES, ids=PROBE_IDS)
@SETTINGS
@given(text=st.text())
def test_parse_and_recognise_never_raise_on_any_text(probe: Probe, text: str) -> None:
    _parse_only_parse_error(probe, text)
    if probe.recognise is not None:
        assert probe.recognise(text) in (True, False)


@pytest.mark.parametrize("probe", ANALYSED_PROBES, ids=PROBE_IDS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=mutated_samples())
def test_parse_and_recognise_never_raise_on_damaged_outputs(probe: Probe, text: str) -> None:
    _parse_only_parse_error(probe, text)
    if probe.recognise is not None:
        assert probe.recognise(text) in (True, False)


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder)


def _file(scratch: Path, data: bytes, suffix: str = ".txt") -> Path:
    path = scratch / f"f{next(_names)}{suffix}"
    path.write_bytes(data)
    return path


def _tar(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _read_and_analyse(path: Path) -> None:
    try:
        capture = read_bundle(path)
    except BundleError as error:
        assert "\n" not in str(error)
        return
    analyze_capture(capture)  # the report built from it validates against the schema


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=4096))
def test_bundle_reader_on_arbitrary_bytes(scratch: Path, data: bytes) -> None:
    _read_and_analyse(_file(scratch, data, ".tar.gz"))
    _read_and_analyse(_file(scratch, _tar({"manifest.json": data}), ".tar.gz"))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
ENTRY = st.fixed_dictionaries(
    {"name": st.sampled_from(["proc/mounts", "proc/modules", "../x", "/etc/passwd", "cmd/a.txt"]) | JSON},
    optional={"status": st.sampled_from(["ok", "missing", "denied", "timeout", "error"]) | JSON, "size": JSON,
              "sha256": JSON, "detail": JSON, "exit_code": JSON, "source": JSON},
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    artifacts=st.lists(ENTRY, max_size=5) | JSON,
    sections=st.dictionaries(
        st.sampled_from(["mounts", "modules", "x"]) | st.text(max_size=5), JSON, max_size=3
    )
    | JSON,
    host=JSON,
    options=JSON,
    contents=st.dictionaries(
        st.sampled_from(["proc/mounts", "proc/modules", "cmd/a.txt"]), st.binary(max_size=200)
    ),
)
def test_bundle_reader_on_arbitrary_manifests(
    scratch: Path, artifacts, sections, host, options, contents
) -> None:  # type: ignore[no-untyped-def]
    manifest = {
        "format": "gdsdoctor.bundle",
        "format_version": 1,
        "artifacts": artifacts,
        "sections": sections,
        "host": host,
        "options": options,
    }
    members = {"manifest.json": json.dumps(manifest).encode(), **contents}
    _read_and_analyse(_file(scratch, _tar(members), ".tar.gz"))


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=4096) | mutated_samples().map(str.encode))
def test_capture_files_on_arbitrary_bytes(scratch: Path, data: bytes) -> None:
    path = _file(scratch, data)
    capture = capture_files([path])
    # never lost: read (a paste of several commands gives one artifact a part, with notes on
    # its parts) or named in a note saying why not
    assert capture.artifacts or any(str(path) in note for note in capture.notes)
    assert all(name.split("#")[0] == path.name for name in capture.artifacts)


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=4096) | mutated_samples().map(str.encode))
def test_analysis_of_arbitrary_pasted_files(scratch: Path, data: bytes) -> None:
    analyze_capture(capture_files([_file(scratch, data)]))


@settings(max_examples=100, deadline=None)
@given(
    data=st.binary(max_size=2048)
    | mutated_samples().map(str.encode)
    | st.tuples(st.sampled_from([b"\xff\xfe", b"\xfe\xff"]), st.binary(max_size=200)).map(b"".join)
    | mutated_samples().map(lambda text: text.encode("utf-16"))
)
def test_redactor_on_arbitrary_bytes(data: bytes) -> None:
    redactor = Redactor()
    redactor.learn(data.decode("utf-8", errors="replace"))
    once = redactor.data(data)
    assert isinstance(once, bytes)
    assert redactor.data(once) is not None
