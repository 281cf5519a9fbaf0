"""Fleet analysis over generated bundles: per-cause node lists, groups, outliers, merging
shards, the exit code, and the CLI's ways of naming many bundles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gdsdoctor.capture.bundle import write_bundle
from gdsdoctor.capture.capture import Capture
from gdsdoctor.commands import fleet
from gdsdoctor.model import Artifact, ArtifactStatus
from tests.test_cli import gdsdoctor

FLEET_SCHEMA = json.loads((Path(fleet.__file__).parents[1] / "schemas" / "fleet.schema.json").read_text())


def validate_fleet(summary: dict) -> dict:
    import jsonschema

    jsonschema.Draft202012Validator(FLEET_SCHEMA).validate(summary)
    return summary


LSMOD_GDS = "nvidia_fs 245760 0 - Live 0x0\nnvidia 56000000 1 nvidia_fs, Live 0x0\n"
LSMOD_NO_GDS = "nvidia 56000000 0 - Live 0x0\n"
# nvidia-fs installed through DKMS, beside an lsmod without it: GDS set up, the module not loaded
DKMS_NVIDIA_FS = "nvidia-fs/2.18.3, 6.5.0-17-generic, x86_64: installed\n"
ORDERED = "/dev/nvme1n1 /mnt/ckpt ext4 rw,noatime,data=ordered 0 0\n"
JOURNAL = "/dev/nvme1n1 /mnt/ckpt ext4 rw,noatime,data=journal 0 0\n"
RELATIME = "/dev/nvme1n1 /mnt/ckpt ext4 rw,relatime,data=ordered 0 0\n"


def node_capture(name: str, mounts: str, modules: str | None = LSMOD_GDS) -> Capture:
    capture = Capture(origin="live", host={"hostname": name}, label=name)
    capture.add("mounts", Artifact("proc/mounts", ArtifactStatus.OK, mounts.encode(), source="/proc/mounts"))
    if modules is not None:
        capture.add(
            "modules", Artifact("proc/modules", ArtifactStatus.OK, modules.encode(), source="/proc/modules")
        )
    if modules == LSMOD_NO_GDS:  # a node meant to use GDS (docs/rules.md, Status: intent)
        dkms = Artifact(
            "cmd/dkms-status.txt", ArtifactStatus.OK, DKMS_NVIDIA_FS.encode(), source="dkms status"
        )
        capture.add("dkms_status", dkms)
    return capture


def make_fleet(root: Path, nodes: dict[str, tuple[str, str | None]], archive: bool = True) -> list[Path]:
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, (mounts, modules) in nodes.items():
        target = root / (f"{name}.tar.gz" if archive else name)
        paths.append(write_bundle(node_capture(name, mounts, modules), target))
    return paths


FLEET = {
    "gpu001": (ORDERED, LSMOD_GDS),
    "gpu002": (ORDERED, LSMOD_GDS),
    "gpu003": (ORDERED, LSMOD_GDS),
    "gpu004": (JOURNAL, LSMOD_GDS),
    "gpu005": (RELATIME, LSMOD_NO_GDS),
}


@pytest.fixture
def bundles(tmp_path: Path) -> list[Path]:
    return make_fleet(tmp_path / "bundles", FLEET)


def test_summary_causes_groups_outliers(bundles: list[Path]) -> None:
    summary = validate_fleet(fleet.analyse_fleet(bundles, jobs=1))
    head = summary["summary"]
    assert head == {
        "nodes": 5,
        "status": "CRITICAL",
        "exit_code": 2,
        "by_status": {"OK": 3, "WARNING": 1, "CRITICAL": 1, "UNKNOWN": 0},
    }
    causes = {c["id"]: c for c in summary["causes"]}
    assert (
        causes["nvidia-fs-not-loaded"]["nodes"] == ["gpu005"]
        and causes["nvidia-fs-not-loaded"]["severity"] == "critical"
    )
    assert causes["ext4-data-journal"] == {**causes["ext4-data-journal"], "count": 1, "nodes": ["gpu004"]}
    assert summary["causes"][0]["id"] == "nvidia-fs-not-loaded"  # critical first
    groups = summary["groups"]
    assert [g["status"] for g in groups] == ["CRITICAL", "WARNING", "OK"]  # worst first
    assert groups[-1] == {
        "diagnosis": [],
        "status": "OK",
        "unreadable": False,
        "count": 3,
        "nodes": ["gpu001", "gpu002", "gpu003"],
    }
    assert sum(g["count"] for g in groups) == 5
    outliers = {o["key"]: o for o in summary["outliers"]}
    mounts = outliers["checkpoint_mount_options"]
    assert (
        mounts["majority"] == "/mnt/ckpt ext4 rw,noatime,data=ordered"
        and mounts["majority_count"] == 3
        and mounts["of"] == 5
    )
    assert [o["node"] for o in mounts["outliers"]] == ["gpu004", "gpu005"]
    assert "nvidia_fs_version" not in outliers  # no node has the section: no value, no outlier


def test_parallel_equals_serial(bundles: list[Path]) -> None:
    assert fleet.analyse_fleet(bundles, jobs=2) == fleet.analyse_fleet(bundles, jobs=1)


def test_merge_of_shards_equals_one_run(bundles: list[Path]) -> None:
    whole = fleet.analyse_fleet(bundles, jobs=1)
    shards = [fleet.analyse_fleet(bundles[:2], jobs=1), fleet.analyse_fleet(bundles[2:], jobs=1)]
    shards = [json.loads(json.dumps(s)) for s in shards]  # through JSON, as from files
    assert validate_fleet(fleet.merge(shards)) == whole
    assert fleet.merge([*shards, shards[0]]) == whole  # a shard merged twice counts once
    with pytest.raises(ValueError):
        fleet.merge([{"kind": "something else"}])


def test_unreadable_bundle_is_an_unknown_node_not_a_crash(tmp_path: Path, bundles: list[Path]) -> None:
    bad = tmp_path / "bundles" / "broken.tar.gz"
    bad.write_bytes(b"not a tar")
    summary = validate_fleet(fleet.analyse_fleet([*bundles, bad], jobs=1))
    node = next(n for n in summary["nodes"] if n["name"] == "broken.tar.gz")
    assert node["status"] == "UNKNOWN" and "not a readable tar.gz bundle" in node["error"]
    assert any(g["unreadable"] and g["nodes"] == ["broken.tar.gz"] for g in summary["groups"])
    assert summary["summary"]["status"] == "CRITICAL"  # CRITICAL outranks UNKNOWN
    warn_only = fleet.summarise([n for n in summary["nodes"] if n["status"] in ("OK", "WARNING", "UNKNOWN")])
    assert warn_only["summary"]["status"] == "UNKNOWN"  # UNKNOWN outranks WARNING


def test_duplicate_host_names_stay_apart(tmp_path: Path) -> None:
    first = make_fleet(tmp_path / "a", {"gpu001": (ORDERED, LSMOD_GDS)})
    second = make_fleet(tmp_path / "b", {"gpu001": (JOURNAL, LSMOD_GDS)})
    summary = fleet.analyse_fleet([*first, *second], jobs=1)
    assert sorted(n["name"] for n in summary["nodes"]) == [
        "gpu001 (a/gpu001.tar.gz)",
        "gpu001 (b/gpu001.tar.gz)",
    ]


def test_config_keys_tolerate_missing_sections_and_read_probe_shapes() -> None:
    facts = {
        "nvidia_fs_version": {"status": "ok", "version": "2.17.5"},
        "nvidia_driver": {"status": "missing"},
        "nvme_sysfs": {"status": "ok", "nvme_core": {"io_timeout_s": 30}},
        "netdev": {
            "status": "ok",
            "interfaces": [
                {"name": "ib0", "mtu": 4092, "virtual": False},
                {"name": "eth0", "mtu": 9000, "virtual": False},
                {"name": "lo", "mtu": 65536, "virtual": True},
            ],
        },
        "derived": {"storage": {"checkpoint_mounts": []}},
    }
    assert fleet.config_of(facts) == {
        "nvidia_fs_version": "2.17.5",
        "nvidia_driver_version": None,
        "nvme_core_io_timeout_s": "30",
        "mtu": "eth0=9000, ib0=4092",
        "checkpoint_mount_options": None,
    }
    assert set(fleet.config_of({})) == set(fleet.CONFIG_KEYS)
    assert all(
        v is None for v in fleet.config_of({"netdev": {"status": "ok", "interfaces": "junk"}}).values()
    )


def test_no_majority_means_no_outliers() -> None:
    nodes = [
        {
            "name": f"n{i}",
            "bundle": f"b{i}",
            "status": "OK",
            "findings": [],
            "inconclusive": [],
            "config": {"mtu": v},
            "error": None,
            "causes": {},
        }
        for i, v in enumerate(["1500", "1500", "9000", "9000"])
    ]
    assert fleet.summarise(nodes)["outliers"] == []


def test_expand_inputs(tmp_path: Path, bundles: list[Path]) -> None:
    directory = tmp_path / "bundles"
    assert fleet.expand_inputs([directory]) == sorted(bundles)
    assert fleet.expand_inputs([str(directory / "gpu00[12].tar.gz")]) == bundles[:2]
    single = make_fleet(tmp_path / "dirs", {"gpu009": (ORDERED, LSMOD_GDS)}, archive=False)[0]
    assert fleet.expand_inputs([single]) == [single]  # a bundle directory is one bundle
    assert fleet.is_fleet(bundles) and not fleet.is_fleet(bundles[:1])


def test_cli_fleet_text_json_exit_and_merge(tmp_path: Path, bundles: list[Path]) -> None:
    text = gdsdoctor("analyze", str(tmp_path / "bundles"), "-j", "2")
    assert text.returncode == 2, text.stderr
    assert "nvidia-fs-not-loaded" in text.stdout and "Fleet status: CRITICAL (exit 2)" in text.stdout
    assert "checkpoint_mount_options" in text.stdout
    one = gdsdoctor("analyze", str(bundles[0]), str(bundles[1]), "-f", "json")
    two = gdsdoctor(
        "analyze", str(tmp_path / "bundles" / "gpu00[345].tar.gz"), "-o", f"json={tmp_path / 'two.json'}"
    )
    assert one.returncode == 0 and two.returncode == 2 and two.stdout == ""
    validate_fleet(json.loads((tmp_path / "two.json").read_text()))
    assert (
        validate_fleet(fleet.apply_fail_on(json.loads(one.stdout), "critical"))["summary"]["fail_on"]
        == "critical"
    )
    assert two.stderr.strip().endswith("(CRITICAL, worst of 3 nodes: 1 OK, 1 WARNING, 1 CRITICAL)")
    (tmp_path / "one.json").write_text(one.stdout)
    merged = gdsdoctor("fleet", "merge", str(tmp_path / "one.json"), str(tmp_path / "two.json"), "-f", "json")
    assert merged.returncode == 2
    assert validate_fleet(json.loads(merged.stdout)) == fleet.analyse_fleet(bundles, jobs=1)
    tolerant = gdsdoctor("analyze", *(str(b) for b in bundles[:4]), "--fail-on", "critical", "-f", "markdown")
    assert tolerant.returncode == 0 and "ext4-data-journal" in tolerant.stdout


def test_cli_fleet_refuses_node_formats(bundles: list[Path]) -> None:
    result = gdsdoctor("analyze", *(str(b) for b in bundles), "-f", "junit")
    assert result.returncode == 3 and "a fleet summary is written as text, json, markdown" in result.stderr


# The benchmark's sections a smoke run covers, one run each so that they spread over the
# suite's workers (collect and sos make real sos reports, ~20 s: not smoke; install is skipped
# by --quick itself).
BENCHMARK_SECTIONS = ["check", "analyze", "rules", "watch", "regex", "hostile", "deadlines", "events"]
ALL_SECTIONS = [*BENCHMARK_SECTIONS, "collect", "sos", "install"]


@pytest.mark.parametrize("section", BENCHMARK_SECTIONS)
def test_benchmark_script_smoke_run(section: str) -> None:
    """scripts/benchmark.py runs each section end to end at small sizes (no timing is asserted)."""
    import subprocess
    import sys

    from tests.conftest import REPO

    skips = [arg for other in ALL_SECTIONS if other != section for arg in ("--skip", other)]
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "benchmark.py"), "--quick", *skips],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) >= 2, result.stdout  # the header and at least one measure
    if section == "analyze":
        assert any("fleet of 8 bundles" in row for row in rows)


def test_a_shared_condition_is_reported_once_with_the_nodes_that_see_it(tmp_path: Path) -> None:
    """Two clients of one Lustre whose OST6 is full (the real lfs df of
    fixtures/capacity-one-ost-full-shared) and one that does not mount it: the full OST is one
    row of ``shared`` with both nodes, in no node's own causes, and drains no node; it is the
    fleet's problem, so the fleet status says it once."""
    from tests.conftest import REPO

    lfs_df = (REPO / "fixtures" / "capacity-one-ost-full-shared" / "files").glob("*.txt")
    raw = next(lfs_df).read_bytes()
    paths = []
    for name in ("gpu001", "gpu002", "gpu003"):
        capture = node_capture(name, ORDERED)
        if name != "gpu003":
            capture.add("lfs_df", Artifact("cmd/lfs-df.txt", ArtifactStatus.OK, raw, source="lfs df"))
        paths.append(write_bundle(capture, tmp_path / f"{name}.tar.gz"))
    summary = validate_fleet(fleet.analyse_fleet(paths, jobs=1))
    (row,) = summary["shared"]
    assert (row["id"], row["count"], row["nodes"]) == ("capacity-target-full", 2, ["gpu001", "gpu002"])
    assert any("OST0006" in line for line in row["seen"])
    assert "capacity-target-full" not in {c["id"] for c in summary["causes"]}
    assert summary["summary"]["by_status"]["OK"] == 3 and summary["summary"]["status"] == "CRITICAL"
    text = fleet.render(summary, "text")
    assert text.count("capacity-target-full") == 1  # once, not once per node nor per group
    assert "Shared conditions (1, each reported once)" in text and "seen by 2/3 nodes" in text
    merged = fleet.merge([fleet.analyse_fleet(paths[:1], jobs=1), fleet.analyse_fleet(paths[1:], jobs=1)])
    assert json.loads(json.dumps(merged))["shared"] == summary["shared"]  # mergeable
