"""sos reports: a real one made on the test machine by Debian's `sosreport` (archive and
directory), a real tree from hotsos's test data, the same findings as `check` for what both
hold, and sos reports read as hostile as gdsdoctor bundles."""

from __future__ import annotations

import dataclasses
import fcntl
import io
import os
import pickle
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from gdsdoctor.capture import bundle, bundles, sos
from gdsdoctor.capture.capture import Capture
from gdsdoctor.capture.live import capture_live
from gdsdoctor.errors import BundleError
from gdsdoctor.model import ArtifactStatus
from gdsdoctor.pipeline import analyze_capture, analyze_paths
from gdsdoctor.probes import nvme_cli

DATA = Path(__file__).parent / "data" / "sos"
HOTSOS = DATA / "hotsos-openstack"
COREOS = DATA / "coreos-master1"
UDEV_DB = DATA.parent / "udev" / "export-db-oracle-sda.txt"
NUMACTL = DATA.parent / "pci" / "numactl-hardware.asus-esc8000a-e12.txt"
DKMS = Path(__file__).resolve().parents[1] / "fixtures" / "gds-nvfs-healthy" / "files" / "dkms-status.txt"
# The plugins holding what the probes read; the others cost seconds and give nothing here.
PLUGINS = "kernel,block,filesys,pci,nvme,host,date,release,memory,networking,systemd,devices,numa"
# What a sos report holds of each source a live check reads, by the file sos writes (the one the
# facts cite). Sections read only where this machine has them: ext4_options needs an ext4
# mount, nvme_discovery_conf /etc/nvme/discovery.conf, nvmf_autoconnect systemd's unit files.
SOS_FILES = {
    "meminfo": "proc/meminfo",
    "fstab": "etc/fstab",
    "df_i": "sos_commands/filesys/df_-ali_-x_autofs",
    "blkid": "sos_commands/block/blkid_-c_.dev.null",
    "ip_addr": "sos_commands/networking/ip_-d_address",
    "nvme_discovery_conf": "etc/nvme/discovery.conf",
    "nvmf_autoconnect": "sos_commands/systemd/systemctl_list-unit-files",
}


@pytest.fixture(scope="module")
def real_sos(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Capture]:
    """A sos report of this machine (archive and its unpacked tree) and a live capture taken
    right before it, for comparing the two: made once for the whole run (~4.5 s), by the first
    xdist worker to need it, under a lock in the directory all workers' temporary directories
    share; the others read the same report and capture (read only: no test writes in them)."""
    if shutil.which("sos") is None:
        pytest.skip("Debian's sosreport package is not installed (.ci/run installs it)")
    if os.geteuid() != 0:
        pytest.skip("sos report runs as root only")
    shared = tmp_path_factory.getbasetemp()
    shared = shared.parent if os.environ.get("PYTEST_XDIST_WORKER") else shared
    made = shared / "real-sos.pickle"
    with open(shared / "real-sos.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not made.exists():
            made.write_bytes(pickle.dumps(_make_real_sos(shared / "real-sos")))
    result = pickle.loads(made.read_bytes())
    if isinstance(result, str):
        pytest.skip(result)
    return result


def _make_real_sos(where: Path) -> tuple[Path, Path, Capture] | str:
    """(archive, tree, live capture), or why sos could not make a report here."""
    where.mkdir()
    live = capture_live(Path("/"))
    done = subprocess.run(
        ["sos", "report", "--batch", "-q", "--tmp-dir", str(where), "-o", PLUGINS],
        capture_output=True,
        timeout=120,
        check=False,
    )
    archives = sorted(where.glob("sosreport-*.tar.*[!5]"))  # not the .md5 beside it
    if done.returncode != 0 or not archives:
        return f"sos report failed here ({done.returncode}): {done.stderr.decode()[-200:]}"
    tree = where / "tree"
    tree.mkdir()
    subprocess.run(["tar", "-xf", str(archives[0]), "-C", str(tree)], check=True)
    return archives[0], tree, live


def _ids(analysis) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return sorted((f["id"], f["severity"]) for f in analysis.report["findings"])


def test_real_sos_report_archive_and_directory_read_alike(real_sos: tuple[Path, Path, Capture]) -> None:
    archive, tree, live = real_sos
    assert bundles.kind(archive) == "sos" and bundles.kind(tree) == "sos"
    from_archive, from_tree = analyze_paths([archive]), analyze_paths([tree])
    assert from_archive.report["source"]["kind"] == "sos"
    assert _ids(from_archive) == _ids(from_tree)
    ok = {p: s.get("status") for p, s in from_archive.facts.items() if isinstance(s, dict)}
    for section in ("kernel", "cmdline", "mounts", "dmesg", "df", "lsblk", "lspci", "os_release"):
        assert ok[section] == "ok", (section, from_archive.facts[section])
    assert {p: s.get("status") for p, s in from_tree.facts.items() if isinstance(s, dict)} == ok
    host = from_archive.report["host"]
    assert host["hostname"] == os.uname().nodename
    assert host["kernel"] == os.uname().release
    assert host["created"].endswith("Z") and host["created"][:4].isdigit()
    # the event clock: the wall time and the uptime sos recorded (`date --utc`, `uptime`)
    assert from_archive.capture.options["created"] == host["created"]
    assert abs(float(host["uptime_s"]) - float(live.host["uptime_s"])) < 600
    # proc/mounts is a link in the report (-> self/mounts -> PID/mounts), resolved by name
    mounts = from_archive.capture.artifacts["proc/mounts"]
    assert mounts.status is ArtifactStatus.OK and "-> proc/" in mounts.source


def test_sos_report_gives_the_findings_check_gives_for_what_both_hold(
    real_sos: tuple[Path, Path, Capture],
) -> None:
    archive, _, live = real_sos
    report = bundles.read(archive)
    shared = _sections_both_read(live, report)
    assert {"kernel", "cmdline", "mounts", "df", "lsblk", "lspci"} <= shared
    shared -= _moved_between_the_captures(live, report)
    same_log = _same_kernel_log(live, report)
    if not same_log:
        shared.discard("dmesg")  # the kernel log moved on between the two captures (other tests)
    live_analysis = analyze_capture(_only(live, shared))
    sos_analysis = analyze_capture(_only(report, shared))
    assert _ids(sos_analysis) == _ids(live_analysis)
    for section in sorted(shared & {"cmdline", "os_release", "kallsyms"}):
        # the same file read the same way: equal facts but for provenance (artifact names)
        assert _facts(sos_analysis, section) == _facts(live_analysis, section), section


def _sections_both_read(live: Capture, report: Capture) -> set[str]:
    live_facts = analyze_capture(live).facts
    sos_facts = analyze_capture(report).facts
    return {
        name
        for name, section in sos_facts.items()
        if isinstance(section, dict)
        and section.get("status") == "ok"
        and live_facts.get(name, {}).get("status") == "ok"
    }


def _moved_between_the_captures(live: Capture, report: Capture) -> set[str]:
    """The sections whose mounts or devices changed between the live capture and sos's, seconds
    apart: other tests of the suite attach and mount loop devices meanwhile."""
    live_facts, sos_facts = analyze_capture(live).facts, analyze_capture(report).facts
    keys = {
        "mounts": ("mounts", "mountpoint"),
        "df": ("filesystems", "mountpoint"),
        "lsblk": ("devices", "name"),
    }
    moved = set()
    for section, (items, key) in keys.items():
        seen = [
            sorted(str(i.get(key)) for i in f.get(section, {}).get(items) or [])
            for f in (live_facts, sos_facts)
        ]
        if seen[0] != seen[1]:
            moved.add(section)
    return moved


def _same_kernel_log(live: Capture, report: Capture) -> bool:
    """Whether the report's kernel log is the live one (later lines allowed: sos ran after)."""
    live_log = next((live.artifacts[n] for n in live.assignments.get("dmesg", [])), None)
    sos_log = report.artifacts.get("sos_commands/kernel/dmesg")
    if live_log is None or sos_log is None:
        return False
    if sos_log.data.startswith(live_log.data):
        report.artifacts["sos_commands/kernel/dmesg"] = dataclasses.replace(sos_log, data=live_log.data)
        return True
    return False


def _only(capture: Capture, sections: set[str]) -> Capture:
    kept = Capture(origin=capture.origin, host=dict(capture.host), label=capture.label)
    kept.options = dict(capture.options)
    for section in sections:
        for name in capture.assignments.get(section, []):
            kept.add(section, capture.artifacts[name])
    return kept


def _facts(analysis, section: str) -> object:  # type: ignore[no-untyped-def]
    def strip(value: object) -> object:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("artifact", "source", "src")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(analysis.facts[section])


def test_hotsos_sos_tree_is_read_with_its_header() -> None:
    analysis = analyze_paths([HOTSOS])
    host = analysis.report["host"]
    assert host == {"hostname": "compute4", "kernel": "5.4.0-97-generic", "created": "2022-02-10T16:19:17Z"}
    status = {k: v["status"] for k, v in analysis.facts.items() if isinstance(v, dict) and "status" in v}
    assert status["kernel"] == status["df"] == status["lsblk"] == status["modules"] == "ok"
    assert analysis.facts["kernel"]["release"] == "5.4.0-97-generic"
    # each source is named by its path in the report
    assert analysis.facts["df"]["artifact"] == "sos_commands/filesys/df_-al_-x_autofs"
    assert "sos report: hotsos-openstack" not in analysis.report["source"]["label"]


def test_hotsos_tree_as_every_archive_kind(tmp_path: Path) -> None:
    expected = _ids(analyze_paths([HOTSOS]))
    for suffix, mode in ((".tar.xz", "w:xz"), (".tar.gz", "w:gz"), (".tar.bz2", "w:bz2")):
        archive = tmp_path / f"sosreport-compute4-2022-02-10-abcdef{suffix}"
        with tarfile.open(archive, mode) as tar:
            tar.add(HOTSOS, arcname="sosreport-compute4-2022-02-10-abcdef")
        assert bundles.kind(archive) == "sos"
        assert _ids(analyze_paths([archive])) == expected
    if shutil.which("zstd"):
        plain = tmp_path / "r.tar"
        with tarfile.open(plain, "w") as tar:
            tar.add(HOTSOS, arcname="sosreport-compute4")
        zst = tmp_path / "sosreport-compute4.tar.zst"
        subprocess.run(["zstd", "-q", "-o", str(zst), str(plain)], check=True)
        analysis = analyze_paths([zst])
        assert analysis.report["host"]["hostname"] == "compute4" and _ids(analysis) == expected


def test_split_modinfo_cuts_at_each_module() -> None:
    text = (
        "filename:       /lib/modules/6.1/kernel/nvme.ko\nname:           nvme\nlicense:        GPL\n"
        "filename:       /lib/modules/6.1/updates/dkms/nvidia.ko.xz\nlicense:        NVIDIA\n"
    )
    modules = sos.split_modinfo(text)
    assert list(modules) == ["nvme", "nvidia"]
    assert "NVIDIA" in modules["nvidia"] and "GPL" in modules["nvme"]
    assert sos.split_modinfo("modinfo: ERROR: Module nvme not found.\n") == {}


# --- hostile sos reports ------------------------------------------------------------------


def _sos_archive(path: Path, members: list[tarfile.TarInfo | tuple[str, bytes]]) -> Path:
    top = "sosreport-evil-2026-01-01-aaaaaa"
    with tarfile.open(path, "w:xz") as tar:
        for item in members:
            if isinstance(item, tarfile.TarInfo):
                item.name = f"{top}/{item.name}"
                tar.addfile(item)
                continue
            name, data = item
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


def test_links_in_a_sos_report_never_leave_it(tmp_path: Path) -> None:
    archive = _sos_archive(
        tmp_path / "sosreport-evil.tar.xz",
        [
            ("sos_commands/kernel/uname_-a", b"Linux evil 6.1.0 #1 SMP x86_64 GNU/Linux\n"),
            _link("proc/cmdline", "/etc/shadow"),  # absolute: the report's own etc/shadow, absent
            _link("proc/mounts", "../../../../../../etc/passwd"),  # climbs: stops at the top
            _link("etc/os-release", "etc/os-release"),  # a loop
            _link("proc/modules", "sos_commands/kernel/uname_-a", tarfile.LNKTYPE),
        ],
    )
    capture = bundles.read(archive)
    for name in ("proc/cmdline", "proc/mounts", "etc/os-release"):
        assert capture.artifacts[name].status is ArtifactStatus.MISSING, name
        assert capture.artifacts[name].data == b""
    assert b"root:" not in b"".join(a.data for a in capture.artifacts.values())
    assert capture.artifacts["proc/modules"].data.startswith(b"Linux evil")  # a hard link, by name


def test_devices_fifos_and_escaping_names_in_a_sos_report(tmp_path: Path) -> None:
    device = tarfile.TarInfo("proc/cmdline")
    device.type, device.devmajor, device.devminor = tarfile.CHRTYPE, 1, 5
    fifo = tarfile.TarInfo("etc/os-release")
    fifo.type = tarfile.FIFOTYPE
    archive = _sos_archive(
        tmp_path / "sosreport-evil.tar.xz",
        [("sos_commands/kernel/uname_-a", b"Linux evil 6.1.0 #1 SMP x86_64 GNU/Linux\n"), device, fifo],
    )
    capture = bundles.read(archive)
    assert "proc/cmdline" not in capture.artifacts and "etc/os-release" not in capture.artifacts
    assert any("ignored 2 member(s)" in note for note in capture.notes), capture.notes


def test_a_sos_report_of_many_members_costs_only_what_is_kept(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(sos, "SELECTION", dataclasses.replace(sos.SELECTION, max_headers=500))
    members: list = [("sos_commands/kernel/uname_-a", b"Linux evil 6.1.0 #1 SMP x86_64 GNU/Linux\n")]
    members += [(f"sys/block/x{n}/stat", b"0 " * 1000) for n in range(400)]
    capture = bundles.read(_sos_archive(tmp_path / "sosreport-many.tar.xz", members))
    assert list(capture.artifacts) == ["sos_commands/kernel/uname_-a"]
    members += [(f"sys/block/y{n}/stat", b"0") for n in range(200)]
    with pytest.raises(BundleError, match="more than 500 members"):
        bundles.read(_sos_archive(tmp_path / "sosreport-more.tar.xz", members))


def test_a_sos_bomb_is_stopped_by_bytes_decompressed(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(sos, "SELECTION", dataclasses.replace(sos.SELECTION, max_stream=4 * 1024 * 1024))
    members = [
        ("sos_commands/kernel/uname_-a", b"Linux evil 6.1.0 #1 SMP x86_64 GNU/Linux\n"),
        ("var/log/huge", b"\0" * (8 * 1024 * 1024)),  # not kept, but decompressed to be passed over
    ]
    with pytest.raises(BundleError, match="decompresses to more than"):
        bundles.read(_sos_archive(tmp_path / "sosreport-bomb.tar.xz", members))


def test_directory_sos_report_links_are_resolved_inside_it_only(tmp_path: Path) -> None:
    root = tmp_path / "sosreport-dir"
    (root / "sos_commands" / "kernel").mkdir(parents=True)
    (root / "proc" / "4242").mkdir(parents=True)
    (root / "sos_commands/kernel/uname_-a").write_text("Linux dirhost 6.1.0 #1 SMP x86_64 GNU/Linux\n")
    (root / "proc/4242/mounts").write_text("/dev/nvme0n1 /mnt/ckpt xfs rw,noatime 0 0\n")
    (root / "proc/self").symlink_to("4242")
    (root / "proc/mounts").symlink_to("self/mounts")
    outside = tmp_path / "secret"
    outside.write_text("root:x:0:0\n")
    (root / "proc/cmdline").symlink_to(outside)  # absolute, out of the report: its own name instead
    capture = bundles.read(root)
    assert capture.artifacts["proc/mounts"].data.startswith(b"/dev/nvme0n1")
    assert capture.artifacts["proc/cmdline"].status is ArtifactStatus.MISSING
    assert b"root:x" not in b"".join(a.data for a in capture.artifacts.values())


def test_an_archive_whose_mounts_sos_links_through_proc_self_is_read_once(
    tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """sos links proc/mounts -> self/mounts and proc/self -> PID; the PID directory comes first in
    its archive (sorted), so the first pass keeps every PID's mounts and mountinfo, and the archive
    is not decompressed again for them."""
    archive = _sos_archive(
        tmp_path / "sosreport-self.tar.xz",
        [
            ("proc/17/mountinfo", b"25 1 259:1 / / rw,relatime - xfs /dev/nvme0n1p1 rw\n"),
            ("proc/4242/mounts", b"/dev/nvme0n1 /mnt/ckpt xfs rw,noatime 0 0\n"),
            ("proc/4242/mountinfo", b"31 1 259:2 / /mnt/ckpt rw,noatime - xfs /dev/nvme0n1 rw\n"),
            _link("proc/mounts", "self/mounts"),
            _link("proc/self", "4242"),
        ],
    )
    passes = []
    real = bundle.read_members
    monkeypatch.setattr(bundle, "read_members", lambda *a, **k: passes.append(a) or real(*a, **k))
    capture = bundles.read(archive)
    assert len(passes) == 1
    assert capture.artifacts["proc/mounts"].data.startswith(b"/dev/nvme0n1 /mnt/ckpt")
    assert b"/mnt/ckpt" in capture.artifacts["proc/self/mountinfo"].data  # PID 4242's, not 17's


def test_a_sos_report_holding_nothing_we_read_is_one_line(tmp_path: Path) -> None:
    archive = _sos_archive(tmp_path / "sosreport-empty.tar.xz", [("sos_logs/sos.log", b"x\n")])
    with pytest.raises(BundleError, match="none of the files gdsdoctor reads"):
        bundles.read(archive)
    done = subprocess.run(
        ["gdsdoctor", "analyze", str(archive)], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 3 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_selection_reads_only_the_table(tmp_path: Path) -> None:
    assert sos.SELECTION.keeps("sosreport-x/proc/cmdline") and sos.SELECTION.keeps("proc/cmdline")
    assert not sos.SELECTION.keeps("var/log/journal/big")
    assert sos.SELECTION.enters("sos_commands") and not sos.SELECTION.enters("sys/devices")
    assert bundle.Members().links == {}


def test_a_command_that_failed_in_the_report_is_named_by_its_own_message() -> None:
    """sos keeps a failed command's output and writes its exit code into sos_reports/manifest.json
    (sos 4): an output that does not parse, of a command that exited non-zero, is the command's
    failure in the tool's own words (a real report of a VM without loadable modules or NVMe),
    not "unparsable"; a command that exited 0 is read as ever."""
    report = analyze_paths([DATA / "debian-vm-failed-commands"]).report
    probes = {p["name"]: p for p in report["probes"]}
    assert probes["modules"]["status"] == "error"
    assert probes["modules"]["detail"].startswith("the command failed (exit 1): libkmod: ERROR")
    assert (
        probes["nvme_list"]["detail"]
        == "the command failed (exit 1): Failed to scan topology: No such file or directory"
    )
    assert probes["kernel"]["status"] == "ok"


def test_return_codes_of_a_malformed_manifest_are_passed_over() -> None:
    members = bundle.Members()
    for raw in (
        b"[]",
        b'{"components": {"report": {"plugins": {"x": {"commands": [1, {"filepath": 2}]}}}}}',
        b"{",
    ):
        members.files[sos.SOS_MANIFEST] = raw
        assert sos.return_codes(members) == {}


def test_the_smart_log_of_each_drive_is_read_from_its_own_file(tmp_path: Path) -> None:
    """sos's nvme plugin writes `nvme smart-log /dev/nvmeXnY` once per namespace
    (`sos_commands/nvme/nvme_smart-log_.dev.nvme0n1`, sos/report/plugins/nvme.py): every file is
    read and the drives combined, each citing its own file. The logs are the real PM981 smart-log
    of tests/data/nvme_cli (prompt line dropped, as sos writes no prompt); the second is a copy
    renamed nvme1n1 with its critical_warning set to 0x4 (reliability degraded), edited."""
    sample = (
        Path(__file__).parent
        / "data"
        / "nvme_cli"
        / "nvme-smart-log-text.v1.14-samsung-pm981.opensource-com.txt"
    )
    healthy = sample.read_text().split("\n", 1)[1]
    degraded = healthy.replace("nvme0n1", "nvme1n1").replace("critical_warning : 0", "critical_warning : 0x4")
    tree = tmp_path / "sosreport-node-2026-12-01-abc"
    for name, text in {
        "sos_commands/kernel/uname_-a": "Linux node 6.8.0-45-generic #45-Ubuntu SMP x86_64 GNU/Linux\n",
        "sos_commands/nvme/nvme_smart-log_.dev.nvme0n1": healthy,
        "sos_commands/nvme/nvme_smart-log_.dev.nvme1n1": degraded,
    }.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text)
    analysis = analyze_paths([tree])
    smart = analysis.facts["nvme_smart"]
    assert [d["device"] for d in smart["devices"]] == ["nvme0", "nvme1"]  # by controller, as live
    assert [d["src"]["artifact"] for d in smart["devices"]] == [
        "sos_commands/nvme/nvme_smart-log_.dev.nvme0n1",
        "sos_commands/nvme/nvme_smart-log_.dev.nvme1n1",
    ]
    fired = {f["id"]: f for f in analysis.report["findings"]}
    cited = {e["artifact"] for f in fired.values() for e in f["evidence"] if e.get("artifact")}
    assert "sos_commands/nvme/nvme_smart-log_.dev.nvme1n1" in cited
    assert "sos_commands/nvme/nvme_smart-log_.dev.nvme0n1" not in cited


def test_each_drives_id_ctrl_is_named_by_its_file_in_either_layout(tmp_path: Path) -> None:
    """sos runs `nvme id-ctrl -H /dev/nvmeXnY` once per namespace and names each output after its
    command line (`nvme_id-ctrl_-H_.dev.nvme0n1`), beside the plugin's other outputs or, in some
    releases, in a sub-folder (`nvme_id-ctrl_-H/`, smart-logs in `nvme_fw_smart_error_logs/`). The
    output names no device: the file's name does, so each drive's thresholds pair with its own
    SMART log. Samples: a real `id-ctrl -H` (T-FORCE TM8FPL500G) and the real PM981 `id-ctrl` and
    `smart-log` of tests/data/nvme_cli, prompt lines dropped; the nvme1n1 smart-log is the PM981's
    renamed, edited."""
    samples = Path(__file__).parent / "data" / "nvme_cli"
    tforce = (samples / "nvme-id-ctrl-H-text.tforce-tm8fpl500g.k8s-homelab.txt").read_text()
    pm981 = (samples / "nvme-id-ctrl-text.v1.14-samsung-pm981.opensource-com.txt").read_text()
    smart = (samples / "nvme-smart-log-text.v1.14-samsung-pm981.opensource-com.txt").read_text()
    smart = smart.split("\n", 1)[1]
    nvme = "sos_commands/nvme/"
    files = {
        "sos_commands/kernel/uname_-a": "Linux node 6.8.0-45-generic #45-Ubuntu SMP x86_64 GNU/Linux\n",
        f"{nvme}nvme_id-ctrl_-H_.dev.nvme0n1": tforce,
        f"{nvme}nvme_id-ctrl_-H/nvme_id-ctrl_-H_.dev.nvme1n1": pm981.split("\n", 1)[1],
        f"{nvme}nvme_id-ctrl_-H/nvme_id-ctrl_-H_.dev.nvme1n2": pm981.split("\n", 1)[1],  # its 2nd namespace
        f"{nvme}nvme_fw_smart_error_logs/nvme_smart-log_.dev.nvme0n1": smart,
        f"{nvme}nvme_smart-log_.dev.nvme1n1": smart.replace("nvme0n1", "nvme1n1"),
    }
    tree = tmp_path / "sosreport-node-2026-12-01-abc"
    for name, text in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text)
    facts = analyze_paths([tree]).facts
    controllers = sorted(facts["nvme_id_ctrl"]["controllers"], key=lambda c: c["device"])
    assert [(c["device"], c["model"]) for c in controllers] == [
        ("nvme0", "T-FORCE TM8FPL500G"),
        ("nvme1", "SAMSUNG MZVLB256HAHQ-000L7"),
    ]
    assert [c["src"]["artifact"] for c in controllers] == [
        f"{nvme}nvme_id-ctrl_-H_.dev.nvme0n1",
        f"{nvme}nvme_id-ctrl_-H/nvme_id-ctrl_-H_.dev.nvme1n1",
    ]
    assert sorted(d["device"] for d in facts["nvme_smart"]["devices"]) == ["nvme0", "nvme1"]
    thermal = {t["device"]: t for t in facts["derived"]["nvme_thermal"]}
    assert thermal["nvme0"]["wctemp_c"] == 83  # the T-FORCE's own WCTEMP (356 K), paired by name
    assert thermal["nvme1"]["wctemp_c"] is None  # the PM981 excerpt stops before wctemp


def test_an_id_ctrl_output_naming_no_device_is_not_given_one() -> None:
    """A pasted `nvme id-ctrl -H` output, or a file whose name is not sos's spelling of the
    command line, names no device: none is guessed from the file name."""
    sample = (
        Path(__file__).parent / "data" / "nvme_cli" / "nvme-id-ctrl-H-text.tforce-tm8fpl500g.k8s-homelab.txt"
    )
    text = sample.read_text()
    for name in ("id-ctrl.txt", "nvme0-id-ctrl.txt", "sos_commands/nvme/nvme_id-ctrl_-H_.dev.sda"):
        (controller,) = nvme_cli.parse_id_ctrl(text, name)["controllers"]
        assert controller["device"] is None and controller["model"] == "T-FORCE TM8FPL500G"


def test_redacting_the_report_of_this_machine_leaves_no_uname_naming_it(
    real_sos: tuple[Path, Path, Capture], tmp_path: Path
) -> None:
    """Whatever this machine's name, short (`vm`: a word elsewhere, so not replaced everywhere)
    or long: no uname line of the redacted copy keeps it (the node name of `uname -a` is a host
    named, SECURITY.md), and the copy gives the report's findings. The report directory is
    redacted without its 5.4 MB symbol table, which holds no host name and took most of the
    test's time."""
    from gdsdoctor.capture.redact_io import redact_bundle

    _, tree, _ = real_sos
    (report,) = tree.iterdir()
    source = tmp_path / "in" / report.name
    shutil.copytree(
        report, source, symlinks=True, ignore=lambda d, names: ["kallsyms"] if d.endswith("/proc") else []
    )
    node = os.uname().nodename.split(".")[0]
    redact_bundle(source, tmp_path)
    (copy,) = tmp_path.glob("*.redacted.tar.gz")
    assert re.match(r"sosreport-host\d+-", copy.name), copy.name  # sos names its report after the host
    with tarfile.open(copy) as tar:
        assert {m.name.split("/")[0] for m in tar.getmembers()} == {
            copy.name.removesuffix(".redacted.tar.gz")
        }
        unames = [
            tar.extractfile(m).read().decode()  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isfile() and m.name.endswith(("/uname", "/uname_-a"))
        ]
    assert unames and all(re.match(r"Linux host\d+ ", u) for u in unames), unames
    assert not any(re.search(rf"\b{re.escape(node)}\b", u) for u in unames)
    assert _ids(analyze_paths([copy])) == _ids(analyze_paths([source]))  # the same diagnosis


# --- everything a sos report holds that a live check reads ----------------------------------


def test_the_real_report_is_read_for_each_source_check_reads(real_sos: tuple[Path, Path, Capture]) -> None:
    """Each source a live check read here and sos wrote is read from the report, and each fact
    cites the report's own file: before this, meminfo, fstab, df -i, blkid, ip addresses and
    /etc/nvme were "not in this capture" (12 of the 36 sources check read here; 20 now)."""
    archive, tree, live = real_sos
    (top,) = tree.iterdir()
    live_facts = analyze_capture(live).facts
    facts = analyze_capture(bundles.read(archive)).facts
    read_live = {name for name, section in live_facts.items() if _ok(section)}
    # blkid prints nothing on a machine whose only filesystems are the other tests' loop
    # devices, detached by the time sos runs: an empty file is not read (never as "none")
    held = {
        name: path
        for name, path in SOS_FILES.items()
        if (top / path).is_file() and (top / path).stat().st_size
    }
    expected = {name: path for name, path in held.items() if name in read_live}
    if "ext4_options" in read_live:
        expected["ext4_options"] = next(
            f"proc/fs/ext4/{device}/options" for device in sorted(live_facts["ext4_options"]["devices"])
        )
    assert {"meminfo", "fstab", "df_i", "ip_addr"} <= set(expected)
    for name, path in expected.items():
        assert _ok(facts[name]), (name, facts[name])
        assert facts[name]["artifact"] == path, name
    assert facts["meminfo"]["src"]["artifact"] == "proc/meminfo" and facts["meminfo"]["mem_total_bytes"] > 0
    # the same file read the same way: fstab's entries are the live ones (the provenance apart)
    assert _facts_of(facts, "fstab") == _facts_of(live_facts, "fstab")
    assert {i["name"] for i in facts["ip_addr"]["interfaces"]} == {
        i["name"] for i in live_facts["ip_addr"]["interfaces"]
    }
    assert facts["df_i"]["counts"] == "inodes" and facts["df_i"]["by_mountpoint"]["/"]["inodes"] > 0
    if "ext4_options" in expected:
        assert set(facts["ext4_options"]["devices"]) == set(live_facts["ext4_options"]["devices"])
    assert sum(_ok(facts.get(name)) for name in read_live) >= 18 + len(
        expected.keys() & {"blkid", "ext4_options"}
    )


def _ok(section: object) -> bool:
    return isinstance(section, dict) and section.get("status") == "ok"


def _facts_of(facts: dict, section: str) -> object:  # type: ignore[type-arg]
    def strip(value: object) -> object:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("artifact", "source", "src")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(facts[section])


def test_a_rhcos_report_of_sos_4_is_read_for_its_files() -> None:
    """A real sos 4 report of a Red Hat CoreOS node (its files as sos wrote them)."""
    facts = analyze_paths([COREOS]).facts
    assert facts["meminfo"]["artifact"] == "proc/meminfo" and _ok(facts["meminfo"])
    assert [e["mountpoint"] for e in facts["fstab"]["entries"]] == ["/", "/boot", "/boot/efi"]
    assert facts["fstab"]["entries"][0]["src"]["artifact"] == "etc/fstab"
    assert facts["df_i"]["by_mountpoint"]["/boot"]["inodes"] == 65536
    assert {d["device"] for d in facts["blkid"]["devices"]} >= {"/dev/sda2", "/dev/sda3"}
    eth0 = next(i for i in facts["ip_addr"]["interfaces"] if i["name"] == "eth0")
    assert [a["address"] for a in eth0["addresses"]] == ["172.16.1.10", "fe80::6f03:6200:832a:7582"]
    assert eth0["addresses"][0]["src"]["artifact"] == "sos_commands/networking/ip_-d_address"


def test_the_names_sos_3_and_newer_sos_4_releases_give_are_read(tmp_path: Path) -> None:
    """Where sos releases name a file differently, each name is read: sos 3's `ip address`
    and `df -ali`, newer sos 4's /etc/nvme/* copy, `losetup -a` and the kernel plugin's
    `dkms status`. The outputs are this machine's, made by the real commands."""
    tree = tmp_path / "sosreport-node-2026-12-01-abc"
    outputs = {
        "sos_commands/networking/ip_address": ["ip", "address"],
        "sos_commands/filesys/df_-ali": ["df", "-ali"],
    }
    for name, argv in outputs.items():
        if shutil.which(argv[0]) is None:
            pytest.skip(f"{argv[0]} is not installed")
        _put(tree, name, subprocess.run(argv, capture_output=True, check=True).stdout)
    hostnqn = (
        "nqn.2014-08.org.nvmexpress:uuid:3ee3a6a2-6d2b-4d7a-9b3a-0c1f4a6f2f11\n"  # nvme gen-hostnqn's form
    )
    _put(tree, "etc/nvme/hostnqn", hostnqn.encode())
    _put(tree, "etc/nvme/hostid", b"3ee3a6a2-6d2b-4d7a-9b3a-0c1f4a6f2f11\n")
    _put(
        tree, "etc/nvme/discovery.conf", b"-t tcp -a 192.0.2.10 -s 4420 --dhchap-secret=DHHC-1:00:c2VjcmV0:\n"
    )
    _put(tree, "sos_commands/block/losetup_-a", b"/dev/loop0: []: (/srv/images/ckpt.img)\n")
    # real outputs of the commands the devices, numa and kernel plugins run (tests/data, fixtures)
    _put(tree, "sos_commands/devices/udevadm_info_--export-db", (UDEV_DB).read_bytes())
    _put(tree, "sos_commands/numa/numactl_--hardware", NUMACTL.read_bytes())
    _put(tree, "sos_commands/kernel/dkms_status", DKMS.read_bytes())
    facts = analyze_paths([tree]).facts
    assert facts["ip_addr"]["artifact"] == "sos_commands/networking/ip_address"
    assert {i["name"] for i in facts["ip_addr"]["interfaces"]} >= {"lo"}
    assert facts["df_i"]["artifact"] == "sos_commands/filesys/df_-ali" and facts["df_i"]["counts"] == "inodes"
    assert facts["nvme_hostnqn"]["hostnqn"] == hostnqn.strip()
    assert facts["nvme_hostid"]["hostid"] == "3ee3a6a2-6d2b-4d7a-9b3a-0c1f4a6f2f11"
    [entry] = facts["nvme_discovery_conf"]["entries"]
    assert entry["traddr"] == "192.0.2.10" and "DHHC" not in entry["src"]["text"]  # the key is never shown
    assert facts["losetup"]["devices"][0]["back_file"] == "/srv/images/ckpt.img"
    for section, path in (
        ("udev", "sos_commands/devices/udevadm_info_--export-db"),
        ("numa", "sos_commands/numa/numactl_--hardware"),
        ("dkms_status", "sos_commands/kernel/dkms_status"),
    ):
        assert _ok(facts[section]) and facts[section]["artifact"] == path, (section, facts[section])


def test_ext4_options_of_each_device_file_read_as_one_section(tmp_path: Path) -> None:
    tree = tmp_path / "sosreport-node-2026-12-01-abc"
    _put(tree, "sos_commands/kernel/uname_-a", b"Linux node 6.1.0 #1 SMP x86_64 GNU/Linux\n")
    _put(tree, "proc/fs/ext4/nvme0n1p1/options", b"rw\nbsddf\nerrors=continue\ndata=writeback\n")
    _put(tree, "proc/fs/ext4/vda1/options", b"rw\ndata=ordered\nbarrier\n")
    section = analyze_paths([tree]).facts["ext4_options"]
    assert section["devices"]["nvme0n1p1"]["data"] == "writeback"
    assert section["devices"]["nvme0n1p1"]["src"] == {
        "artifact": "proc/fs/ext4/nvme0n1p1/options",
        "line": 4,
        "text": "data=writeback",
    }
    assert section["devices"]["vda1"]["barrier"] is True and section["devices"]["vda1"]["data"] == "ordered"


def _put(tree: Path, name: str, data: bytes) -> None:
    path = tree / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_diff_of_a_bundle_and_the_sos_report_of_this_machine(
    real_sos: tuple[Path, Path, Capture], tmp_path: Path
) -> None:
    """Two kinds of capture of one node: what both read is compared, what only the bundle read
    (sysfs, the job's environment) is listed once and never reported as a change."""
    from gdsdoctor.capture.bundle import write_bundle
    from gdsdoctor.commands.diff import diff_paths

    archive, _, live = real_sos
    bundle = write_bundle(live, tmp_path / "node.tar.gz")
    document = diff_paths(bundle, archive)
    assert document["host"] == os.uname().nodename and document["after"]["kind"] == "sos"
    assert {"pci", "udev"} & set(document["sections"]["only_before"])
    # every source the report read, the bundle read too: nothing is "only in AFTER" but what moved
    assert set(document["sections"]["only_after"]) <= {"blkid", "losetup"}, document["sections"]
    assert not [row for row in document["facts"] if row["fact"] in ("kernel", "OS", "kernel command line")]
