"""Shared test helpers. Every report built in-process during the suite is validated against
the published JSON Schema (an autouse fixture wraps the report builder)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
import tarfile
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import hypothesis
import jsonschema
import pytest

from gdsdoctor.capture.capture import Capture
from gdsdoctor.capture.detect import PasteReader
from gdsdoctor.report import build

# No per-example deadline in any property test (they inherit this profile where their own
# settings leave it out): a shared or loaded machine made a 2 ms example take 260 ms and
# hypothesis fail it as flaky. Time is measured in scripts/benchmark.py, never in tests.
hypothesis.settings.register_profile("gdsdoctor", deadline=None)
hypothesis.settings.load_profile("gdsdoctor")

REPORT_SCHEMA = json.loads(resources.files("gdsdoctor").joinpath("schemas/report.schema.json").read_text())
REPORT_VALIDATOR = jsonschema.Draft202012Validator(REPORT_SCHEMA)
REPO = Path(__file__).resolve().parents[1]
SHARED_REFERENCE = REPO.parent / "shared" / "reference"


# Digests of the reports validated so far in this process. Many tests analyse the same inputs
# (every fixture is analysed by several modules): a report equal to one already validated is not
# validated again. repr, unlike JSON, tells a tuple from a list and 1 from 1.0 or True.
_VALID_REPORTS: set[bytes] = set()


# The report's arrays of objects (every cause's verdict, the findings, the probes…) have their
# items validated one by one, each distinct item once per process: reports repeat most of their
# items from one to the next, and jsonschema's cost is per node (~28 ms a report, twice the
# analysis that built it). The same verdict as validating the whole report: JSON Schema judges
# array items independently, and this schema has no uniqueItems, contains or unevaluatedItems
# (checked below); the rest of the report is validated with those items left open.
_ITEM_ARRAYS = tuple(
    name
    for name, spec in REPORT_SCHEMA["properties"].items()
    if spec.get("type") == "array" and isinstance(spec.get("items"), dict)
)
assert not any(
    word in json.dumps(REPORT_SCHEMA) for word in ("uniqueItems", '"contains"', "unevaluatedItems")
)
_SHELL_VALIDATOR = jsonschema.Draft202012Validator(
    {
        **REPORT_SCHEMA,
        "properties": {
            name: ({**spec, "items": {}} if name in _ITEM_ARRAYS else spec)
            for name, spec in REPORT_SCHEMA["properties"].items()
        },
    }
)
_ITEM_VALIDATORS = {
    name: jsonschema.Draft202012Validator(
        {"$defs": REPORT_SCHEMA["$defs"], **REPORT_SCHEMA["properties"][name]["items"]}
    )
    for name in _ITEM_ARRAYS
}
_VALID_ITEMS: set[tuple[str, bytes]] = set()


def validate_report(report: dict) -> None:
    digest = hashlib.sha256(repr(report).encode()).digest()
    if digest in _VALID_REPORTS:
        return
    _SHELL_VALIDATOR.validate(report)
    for name in _ITEM_ARRAYS:
        for item in report.get(name) or ():
            key = (name, hashlib.sha256(repr(item).encode()).digest())
            if key not in _VALID_ITEMS:
                _ITEM_VALIDATORS[name].validate(item)
                _VALID_ITEMS.add(key)
    _VALID_REPORTS.add(digest)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` (pyproject.toml's addopts): one pytest-xdist worker more than the CPUs this
    process may run on. Much of the suite waits rather than computes (deadlines, hung probes
    on purpose, fio at a set rate, the watch's ticks), and a waiting worker leaves its CPU to
    the extra one: on 2 CPUs, 3 workers took ~80 s where 2 took ~90 s. PYTEST_XDIST_AUTO_NUM_WORKERS
    still decides when it is set (xdist's own hook reads it)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cpus + 1


@pytest.fixture(autouse=True)
def _every_report_validates(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict]]:
    built: list[dict] = []
    original = build.build_report

    def validating_build(*args, **kwargs):  # type: ignore[no-untyped-def]
        report = original(*args, **kwargs)
        validate_report(report)
        built.append(report)
        return report

    # The pipeline imports build_report where it uses it: the module attribute is what it gets.
    monkeypatch.setattr(build, "build_report", validating_build)
    yield built


@pytest.fixture(autouse=True, scope="session")
def _only_the_tools_on_path() -> Iterator[None]:
    """Captures look for tools in /usr/sbin and /sbin after PATH (capture/runner.py); tests put
    fake tools on PATH and must find only those (subprocesses inherit the emptied list)."""
    before = os.environ.get("GDSDOCTOR_SBIN_DIRS")
    os.environ["GDSDOCTOR_SBIN_DIRS"] = ""
    yield
    if before is None:
        os.environ.pop("GDSDOCTOR_SBIN_DIRS", None)
    else:
        os.environ["GDSDOCTOR_SBIN_DIRS"] = before


@pytest.fixture(autouse=True, scope="session")
def _no_site_config_of_this_machine() -> Iterator[None]:
    """Every diagnosing command reads the default site config (gdsdoctor/config.py): in the
    suite that is the empty /dev/null (readable by the users tests drop to), never this
    machine's /etc/gdsdoctor; subprocesses inherit it. Tests of the config set their own."""
    before = os.environ.get("GDSDOCTOR_CONFIG")
    os.environ["GDSDOCTOR_CONFIG"] = os.devnull
    yield
    if before is None:
        os.environ.pop("GDSDOCTOR_CONFIG", None)
    else:
        os.environ["GDSDOCTOR_CONFIG"] = before


@pytest.fixture(autouse=True, scope="session")
def _private_runtime_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Command locks (capture/command_lock.py) go to a directory of the test session, never to
    the machine's /run (subprocesses inherit it through the environment)."""
    before = os.environ.get("GDSDOCTOR_RUNTIME_DIR")
    os.environ["GDSDOCTOR_RUNTIME_DIR"] = str(tmp_path_factory.mktemp("run"))
    yield
    if before is None:
        os.environ.pop("GDSDOCTOR_RUNTIME_DIR", None)
    else:
        os.environ["GDSDOCTOR_RUNTIME_DIR"] = before


# A host root that is this kernel's (a container given the host's /): its commands run
# (capture/live.py runs commands only for this kernel's root or pointed at another root).
THIS_KERNEL = {"proc/sys/kernel/random/boot_id": Path("/proc/sys/kernel/random/boot_id").read_text()}


def this_kernels_root(root: Path) -> Path:
    """``root`` made a view of this kernel's root (its boot id): live captures run commands for it."""
    return write_tree(root, THIS_KERNEL)


@pytest.fixture(autouse=True, scope="session")
def _no_inherited_terminal_size() -> None:
    """Text reports wrap at ``COLUMNS`` when it is set, else at 100 off a terminal. pytest imports
    readline at start-up, and GNU readline writes LINES and COLUMNS (80x24 without a terminal)
    into the C environment: subprocesses inherited them, and pytest-xdist's workers start with
    them in ``os.environ``. Tests that want a width set ``COLUMNS`` themselves."""
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)
        os.unsetenv(name)  # also when only the C environment holds it (os.environ never saw it)


@pytest.fixture(autouse=True, scope="session")
def _subprocess_bytecode_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Where the environment says not to write bytecode (PYTHONDONTWRITEBYTECODE), every
    ``python -m gdsdoctor`` a test starts compiled the package anew (~0.15 s of CPU each, over
    a hundred of them): they share a bytecode cache in the test session's temporary directory
    instead (PYTHONPYCACHEPREFIX), never written beside the sources."""
    if not sys.flags.dont_write_bytecode:
        yield
        return
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # xdist: one per run
    before = {name: os.environ.get(name) for name in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(shared / "pycache")
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def write_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return root


def unpack_dump(archive: Path, into: Path) -> Path:
    """Unpack a sysfs dump (libnvme's, util-linux's) as any user can: such dumps list some files
    twice, the second time as a hard link to itself, and writing the link over the read-only
    (0444) file it names works only as root. The first entry of each name is kept."""
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        seen: set[str] = set()
        members = []
        for member in tar.getmembers():
            if member.name in seen or (member.islnk() and member.linkname == member.name):
                continue
            seen.add(member.name)
            members.append(member)
        # our own test data: extracted as it is (3.14's default 'data' filter would refuse the
        # dumps' links out of the tree); Pythons before the filter (Debian's 3.11.2) take no argument
        trusted = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}
        tar.extractall(into, members=members, **trusted)
    return into


def read_paste(path: Path) -> Capture:
    """One pasted file read as `analyze` reads it (decoded, unwrapped, each part to its reader)."""
    capture = Capture("files")
    reader = PasteReader(capture)
    reader.add(path.name, path.read_bytes(), path.name)
    reader.finish()
    return capture


def fake_binary(bindir: Path, name: str, script: str) -> Path:
    """A fake command on PATH (a shell script) for capture tests."""
    bindir.mkdir(parents=True, exist_ok=True)
    path = bindir / name
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def isolated_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH holding only a fresh directory of fake binaries (plus nothing else), so live
    capture is deterministic: real commands on this machine are not run."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", str(bindir))
    return bindir


@pytest.fixture
def sh_available() -> str:
    for candidate in ("/bin/sh", "/usr/bin/sh"):
        if os.path.exists(candidate):
            return candidate
    pytest.skip("no /bin/sh")
