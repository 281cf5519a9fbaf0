from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from gds_samples import KINDS, others, read
from hypothesis import given, settings
from hypothesis import strategies as st

from gdsdoctor.errors import ParseError
from gdsdoctor.probes import cufile
from tests.conftest import this_kernels_root

CONFIG = """{
    // "logging": {"dir": "commented out"},
    "logging": {
        "dir": "http://not-a-comment//x", /* block
        comment */ "level": "INFO",
    },
    "properties": {
        "allow_compat_mode": false,
        "rdma_dev_addr_list": [ "172.16.8.88", ],
        "use_pci_p2pdma": true
    },
    "fs": { "lustre": { "mount_table": { "/mnt/l": { "rdma_dev_addr_list": [] } } } },
    "my_extension": 1,
}
"""


# --- cufile.json -----------------------------------------------------------------------------


def test_comments_and_trailing_commas_are_removed_outside_strings() -> None:
    stripped = cufile.strip_json_comments(CONFIG)
    assert stripped.count("\n") == CONFIG.count("\n")
    assert "http://not-a-comment//x" in stripped
    assert json.loads(stripped)["logging"]["level"] == "INFO"
    assert cufile.strip_json_comments('{"a": "x,}"}') == '{"a": "x,}"}'
    assert cufile.strip_json_comments('{"a": "q\\"//"}') == '{"a": "q\\"//"}'


def test_effective_config_with_defaults() -> None:
    facts = cufile.parse_cufile_json(CONFIG, "etc/cufile.json")
    config = facts["config"]
    assert config["properties.allow_compat_mode"] is False
    assert config["properties.use_pci_p2pdma"] is True
    assert config["properties.rdma_dev_addr_list"] == ["172.16.8.88"]
    assert config["logging.dir"] == "http://not-a-comment//x"
    assert config["properties.force_compat_mode"] is False  # default
    assert config["properties.max_device_pinned_mem_size_kb"] == 33554432  # default
    assert config["fs.lustre.mount_table"] == {"/mnt/l": {"rdma_dev_addr_list": []}}
    assert "properties.max_direct_io_size_kb" not in facts["explicit"]
    assert "properties.allow_compat_mode" in facts["explicit"]
    assert facts["unknown_keys"] == ["fs.lustre.mount_table", "my_extension"]
    item = next(i for i in facts["items"] if i["key"] == "properties.allow_compat_mode")
    assert item["default"] is True
    assert item["src"]["line"] == 8
    level = next(i for i in facts["items"] if i["key"] == "logging.level")
    assert level["src"]["line"] == 5
    assert facts["partial"] is False
    assert facts["file"]["path"] is None


def test_reader_wrapper_records_the_file_in_effect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/cufile.json").write_text('{"properties": {"use_pci_p2pdma": true}}')
    (tmp_path / "opt").mkdir()
    (tmp_path / "opt/my.json").write_text('{"properties": {"allow_compat_mode": false}}')
    this_kernels_root(tmp_path)  # the variable is this process's: it applies to this kernel's root only
    monkeypatch.delenv("CUFILE_ENV_PATH_JSON", raising=False)
    facts = cufile.parse_cufile_json(cufile.read_cufile_json(tmp_path).decode(), "a")
    assert facts["file"] == {"path": "/etc/cufile.json", "selected_by": "default", "exists": True}
    assert facts["config"]["properties.use_pci_p2pdma"] is True
    monkeypatch.setenv("CUFILE_ENV_PATH_JSON", "/opt/my.json")
    facts = cufile.parse_cufile_json(cufile.read_cufile_json(tmp_path).decode(), "a")
    assert facts["file"]["selected_by"] == "CUFILE_ENV_PATH_JSON"
    assert facts["config"]["properties.allow_compat_mode"] is False
    assert facts["config"]["properties.use_pci_p2pdma"] is False
    monkeypatch.setenv("CUFILE_ENV_PATH_JSON", "/missing.json")
    facts = cufile.parse_cufile_json(cufile.read_cufile_json(tmp_path).decode(), "a")
    assert facts["file"]["exists"] is False
    assert facts["explicit"] == []
    assert facts["config"] == cufile.DEFAULTS


def test_reader_does_not_follow_links_out_of_host_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text('{"properties": {"max_direct_io_size_kb": 1}}')
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc/cufile.json").symlink_to(outside)
    monkeypatch.delenv("CUFILE_ENV_PATH_JSON", raising=False)
    # resolved inside the root as the host sees it (RESOLVE_IN_ROOT): a dangling link there, so
    # absent, as cuFile on that host finds it; this machine's file is never read
    facts = cufile.parse_cufile_json(cufile.read_cufile_json(root).decode(), "a")
    assert facts["file"]["exists"] is False and facts["config"] == cufile.DEFAULTS
    (root / outside.relative_to("/")).parent.mkdir(parents=True)
    (root / outside.relative_to("/")).write_text('{"properties": {"max_direct_io_size_kb": 2}}')
    inside = cufile.parse_cufile_json(cufile.read_cufile_json(root).decode(), "a")
    assert inside["config"]["properties.max_direct_io_size_kb"] == 2  # the host root's copy


def test_pasted_excerpt_is_read_leniently() -> None:
    facts = cufile.parse_cufile_json(read("cufile/pgstrom-913--cufile.json.excerpt"), "paste")
    assert facts["partial"] is True
    assert facts["explicit"] == ["properties.use_pci_p2pdma"]
    assert facts["config"]["properties.use_pci_p2pdma"] is True
    assert facts["items"][0]["src"]["line"] == 4


def test_cufile_json_rejects_non_json() -> None:
    with pytest.raises(ParseError):
        cufile.parse_cufile_json("not json at all", "x")
    with pytest.raises(ParseError):
        cufile.parse_cufile_json("[1, 2]", "x")


# --- environment -----------------------------------------------------------------------------


def test_env_reader_and_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUFILE_ALLOW_COMPAT_MODE", "false")
    monkeypatch.setenv("KVIKIO_COMPAT_MODE", "ON")
    monkeypatch.setenv("CUFILE_ENV_PATH_JSON", "/opt/c.json")
    monkeypatch.setenv("UNRELATED", "x")
    facts = cufile.parse_cufile_env(cufile.read_cufile_env(Path("/")).decode(), "env/cufile.json")
    assert facts["vars"]["KVIKIO_COMPAT_MODE"] == "ON"
    assert "UNRELATED" not in facts["vars"]
    assert facts["allow_compat_mode"] is False
    assert facts["force_compat_mode"] is None
    assert facts["config_path"] == "/opt/c.json"


def test_env_paste() -> None:
    text = "$ env | grep CUFILE\nCUFILE_FORCE_COMPAT_MODE=true\n"
    text += "export CUFILE_USE_PCIP2PDMA='1'\nCUFILE_LOGGING_LEVEL=TRACE\n"
    assert cufile.recognise_cufile_env(text)
    facts = cufile.parse_cufile_env(text, "paste")
    assert facts["force_compat_mode"] is True
    assert facts["use_pci_p2pdma"] is True
    assert facts["logging_level"] == "TRACE"
    assert facts["items"][1]["src"]["line"] == 3
    with pytest.raises(ParseError):
        cufile.parse_cufile_env("PATH=/usr/bin\n", "paste")


# --- cufile.log ------------------------------------------------------------------------------


def log(name: str) -> dict:
    return cufile.parse_cufile_log(read(f"cufile/{name}"), "logs/cufile.log")


def test_nvme_not_registered_log() -> None:
    facts = log("tinygrad-051--cufile.log")
    assert facts["counts"]["by_kind"]["nvme_not_registered"] == 4
    assert facts["counts"]["by_kind"]["file_checks_failed"] == 1
    assert facts["pids"] == [44990, 45020]
    first = facts["entries"][0]
    assert first["timestamp"] == "2026-04-06T14:59:16.997"
    assert (first["level"], first["component"], first["code_line"]) == ("ERROR", "cufio-fs", 204)
    assert first["message"] == "NVMe Driver not registered with nvidia-fs!!!"
    assert first["src"]["line"] == 1
    volume = facts["volumes"][0]
    assert volume["devname"] == "/dev/nvme0n1p2"
    assert volume["fs_type"] == "ext4"
    assert volume["ext4_journal_mode"] == "ordered"
    assert volume["pci_bridge"] == "0000:00:01.2"
    assert volume["numa_node"] == -1
    assert volume["src"]["line"] == 3


def test_buf_register_failure_log_with_sample_markers() -> None:
    facts = log("gdsnvfs-019--cufile.log")
    kinds = facts["counts"]["by_kind"]
    assert kinds["nvfs_handle_alloc_failed"] == 1
    assert kinds["buf_register_failed"] == 2
    assert kinds["buf_deregister_failed"] == 2
    assert kinds["nvme_not_registered"] == 2
    assert facts["volumes"][0]["numa_node"] == 1
    assert facts["volumes"][0]["ext4_journal_mode"] is None
    assert facts["entries"][-1]["timestamp"] == "2023-06-27T16:20:53.048"  # millis not zero-padded
    assert facts["truncated"] is True


def test_dm_device_log() -> None:
    facts = log("gdsnvfs-062--cufile.log")
    kinds = facts["counts"]["by_kind"]
    assert kinds["udev_device_error"] == 2
    assert kinds["compat_fallback"] == 1
    assert kinds["unsupported_block_device"] == 1
    assert kinds["mount_options_missing"] == 1
    assert kinds["internal_error"] == 1
    assert facts["counts"]["by_level"] == {"ERROR": 9, "NOTICE": 1}
    assert facts["entries"][0]["src"]["line"] == 1  # the first line has no leading space


def test_trace_log_shows_the_nvfs_path() -> None:
    facts = log("gdsnvfs-078--cufile.log")
    assert {"p2pdma_disabled_by_config", "p2pdma_not_supported", "gds_path_taken", "nvfs_io_submit"} <= set(
        facts["kinds"]
    )
    assert facts["counts"]["by_kind"]["library_loaded"] == 3
    assert facts["counts"]["by_level"]["TRACE"] >= 5
    submit = next(e for e in facts["entries"] if e["kind"] == "nvfs_io_submit")
    assert submit["component"] == "0"
    assert submit["tid"] == 21297


def test_bare_component_line() -> None:
    facts = log("cudf-13651--cufile.log")
    assert facts["kinds"] == ["compat_mode"]
    assert facts["entries"][0]["component"] == "cufio-drv"
    assert facts["entries"][0]["level"] is None


def test_udev_assertion_on_stdout() -> None:
    facts = log("kvikio-011--output.txt")
    assert facts["kinds"] == ["udev_assertion"]
    assert facts["entries"][0]["src"]["line"] == 2


def test_driver_not_loaded_line() -> None:
    text = " 22-09-2023 11:28:19:425 [pid=7 tid=7] ERROR  cufio-drv:716 nvidia-fs.ko driver not loaded\n"
    text += " 22-09-2023 11:28:19:425 [pid=7 tid=7] NOTICE  cufio-drv:720 running in compatible mode\n"
    text += " 22-09-2023 11:28:20:001 [pid=7 tid=7] ERROR  0:1072 Inc-bar-usage failed: size 524288000 rem\n"
    facts = cufile.parse_cufile_log(text, "x")
    assert facts["kinds"] == ["bar_exhausted", "compat_mode", "driver_not_loaded"]


def test_log_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "var").mkdir()
    (tmp_path / "var/app.log").write_text(" 01-01-2024 00:00:00:001 [pid=1 tid=1] ERROR  cufio:1 x\n")
    monkeypatch.setenv("CUFILE_LOGFILE_PATH", "/var/app.log")
    assert b"cufio:1" in cufile.read_cufile_log(tmp_path)
    monkeypatch.setenv("CUFILE_LOGFILE_PATH", "/nope.log")
    assert cufile.read_cufile_log(tmp_path) == b""
    assert cufile.parse_cufile_log("", "x")["counts"]["lines"] == 0


# --- gds_stats -------------------------------------------------------------------------------


def test_gds_stats_two_dumps() -> None:
    facts = cufile.parse_gds_stats(read("cufile/gds_stats-l3.dgx2.nvidia-gds-config-guide.txt"), "paste")
    assert len(facts["dumps"]) == 2
    first, last = facts["dumps"]
    assert first["global"]["total_files"] == 8
    assert first["global"]["read_bandwidth_gibps"] == 6.32129
    assert first["global"]["total_read_bytes"] == 78193 * 1024 * 1024
    gpu2 = next(g for g in first["gpus"] if g["index"] == 2)
    assert gpu2["read"]["n"] == 78193
    assert gpu2["read"]["bw_gibps"] == 6.32129
    assert gpu2["read"]["util_pct"] == 797
    assert gpu2["buf_register"]["n"] == 8
    assert last["global"]["avg_read_latency_usec"] == 2036
    assert last["histogram"][1] == {**last["histogram"][1], "low": 4096, "high": 8192, "reads": 1279109}
    assert last["pools"][0]["buffers_used"] == 63
    assert facts["last"] is last


# --- recognisers and robustness --------------------------------------------------------------

RECOGNISERS = {
    "cufile_log": cufile.recognise_cufile_log,
    "cufile_json": cufile.recognise_cufile_json,
    "gds_stats": cufile.recognise_gds_stats,
}
PARSERS = (cufile.parse_cufile_json, cufile.parse_cufile_env, cufile.parse_cufile_log, cufile.parse_gds_stats)


@pytest.mark.parametrize(
    ("kind", "path"), [(k, p) for k in RECOGNISERS for p in KINDS[k]], ids=lambda v: getattr(v, "name", v)
)
def test_recognises_every_sample(kind: str, path: Path) -> None:
    assert RECOGNISERS[kind](path.read_text())


@pytest.mark.parametrize(
    ("kind", "path"), [(k, p) for k in RECOGNISERS for p in others(k)], ids=lambda v: getattr(v, "name", v)
)
def test_rejects_other_sources(kind: str, path: Path) -> None:
    assert not RECOGNISERS[kind](path.read_text())


def test_env_recogniser_rejects_samples() -> None:
    for path in others("cufile_env"):
        assert not cufile.recognise_cufile_env(path.read_text()), path.name


SAMPLES = [p for k in ("cufile_log", "cufile_json", "gds_stats") for p in KINDS[k]]


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(SAMPLES),
    st.integers(min_value=0, max_value=6000),
    st.lists(st.integers(min_value=0, max_value=60), max_size=8),
)
def test_never_crashes_on_mutated_samples(path: Path, cut: int, drops: list[int]) -> None:
    lines = path.read_text()[:cut].split("\n")
    text = "\n".join(line for i, line in enumerate(lines) if i not in drops)
    for parse in PARSERS:
        with contextlib.suppress(ParseError):
            parse(text, "x")


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
    )
)
def test_json_inputs_never_crash(document: object) -> None:
    text = json.dumps(document)
    for parse in PARSERS:
        with contextlib.suppress(ParseError):
            parse(text, "x")
    wrapped = json.dumps({"reader": "cufile_json", "path": document, "text": document})
    with contextlib.suppress(ParseError):
        cufile.parse_cufile_json(wrapped, "x")


def _strip_char_by_char(text: str) -> str:
    """The comment and trailing-comma blanking, written the slow obvious way (a loop over
    characters): the reference for the tokenizing implementation."""
    import re

    from gdsdoctor.probes.text import OutsideJsonStrings

    out, i, n, in_string = [], 0, len(text), False
    while i < n:
        char = text[i]
        if in_string:
            out.append(char)
            if char == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
            out.append(char)
        elif text.startswith("//", i) or text.startswith("/*", i):
            end = text.find("\n" if text[i + 1] == "/" else "*/", i + 2)
            end = n if end < 0 else end + (0 if text[i + 1] == "/" else 2)
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        else:
            out.append(char)
        i += 1
    stripped = "".join(out)
    chars = list(stripped)
    for index, char in OutsideJsonStrings(stripped):
        if char == "," and stripped[index + 1 :].lstrip()[:1] in ("}", "]"):
            chars[index] = " "
    return "".join(chars)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet='{}[],:"\\/*\n ab1é\t', max_size=60))
def test_comment_stripping_equals_a_character_loop(text: str) -> None:
    assert cufile.strip_json_comments(text) == _strip_char_by_char(text)
    assert len(cufile.strip_json_comments(text)) == len(text)


def test_comment_stripping_of_the_stock_config_keeps_lines() -> None:
    stripped = cufile.strip_json_comments(CONFIG)
    assert stripped == _strip_char_by_char(CONFIG)
    assert stripped.count("\n") == CONFIG.count("\n")
