"""Absence is an answer (issue 19 item 6): what a host does not have makes causes not applicable
rather than inconclusive, and "Sources read: X of Y" counts only what this capture could read."""

from __future__ import annotations

from fakehost import FakeHost, analyze_fake_host
from pyfakefs.fake_filesystem import FakeFilesystem

from gdsdoctor.report.outline import Line, outline

ROOT = "/host"
RDMA_CAUSES = {
    "rdma-port-down",
    "rdma-port-reduced-rate",
    "roce-mtu-below-4096",
    "roce-no-pfc-on-rdma-priority",
    "roce-trust-pcp-on-l3-fabric",
    "roce-ecn-off-on-rdma-priority",
    "rdma-transport-retry-exceeded",
    "nic-pcie-slower-than-port",
}


def _report(fs: FakeFilesystem, host: FakeHost) -> dict:
    return analyze_fake_host(fs, ROOT).report


def _outcomes(report: dict) -> dict[str, str]:
    return {c["id"]: c["outcome"] for c in report["causes"]}


def _host(fs: FakeFilesystem) -> FakeHost:
    host = FakeHost(fs, root=ROOT)
    host.add_proc_basics()
    host.add_nvme("nvme0", "0000:18:00.0")
    host.add_mount("/dev/nvme0n1", "/mnt/ckpt", "xfs")
    return host


def test_a_host_without_rdma_devices_lists_the_rdma_causes_as_not_applicable(fs: FakeFilesystem) -> None:
    host = _host(fs)
    assert not host.path("/sys/class/infiniband").exists() and host.path("/sys/class").is_dir()
    report = _report(fs, host)
    outcomes = _outcomes(report)
    assert {cause: outcomes[cause] for cause in RDMA_CAUSES} == dict.fromkeys(RDMA_CAUSES, "not_applicable")
    asked = {m["collect"] for i in report["inconclusive"] for m in i["missing"]}
    assert not any("ibstat" in text or "/sys/class/infiniband" in text for text in asked)


def test_rdma_causes_are_judged_where_rdma_devices_are(fs: FakeFilesystem) -> None:
    host = _host(fs)
    host.add_nic("0000:3b:00.0", "eth0")
    outcomes = _outcomes(_report(fs, host))
    assert outcomes["rdma-port-down"] in ("clear", "fired")


def test_a_kernel_without_module_support_answers_from_sys_module(fs: FakeFilesystem) -> None:
    host = _host(fs)
    for name in ("nvme_core", "nvme_tcp", "xfs"):
        fs.create_dir(host.path(f"/sys/module/{name}/parameters"))
    assert not host.path("/proc/modules").exists()
    report = _report(fs, host)
    modules = next(p for p in report["probes"] if p["name"] == "modules")
    assert modules["status"] == "ok" and modules["artifact"] == "sys/module.json"
    assert _outcomes(report)["nvmeof-transport-module-missing"] in ("clear", "not_applicable")
    asked = {m["collect"] for i in report["inconclusive"] for m in i["missing"]}
    assert not any("lsmod" in text for text in asked)


def test_a_distribution_without_etc_default_grub_is_not_asked_for_it(fs: FakeFilesystem) -> None:
    host = _host(fs)
    assert not host.path("/etc/default/grub").exists()
    report = _report(fs, host)
    assert _outcomes(report)["iommu-boot-config-not-applied"] == "not_applicable"
    host.set_file("/etc/default/grub", 'GRUB_CMDLINE_LINUX="iommu=pt"\n')
    assert _outcomes(_report(fs, host))["iommu-boot-config-not-applied"] != "not_applicable"


def test_sources_read_counts_only_what_this_capture_could_read(fs: FakeFilesystem) -> None:
    report = _report(fs, _host(fs))
    [line] = [b for b in outline(report) if isinstance(b, Line) and "Sources read" in b.spans[0][0]]
    read, of = (int(n) for n in line.spans[0][0].removeprefix("Sources read: ").split(" of "))
    paste_only = {
        "app_log",
        "gds_stats",
        "mlnx_qos",
        "nvme_discover",
        "fio",
        "gdsio",
        "watch",
        "job",
        "target",
    }
    names = {p["name"] for p in report["probes"]}
    assert read == sum(1 for p in report["probes"] if p["status"] == "ok")
    assert of <= len(names - paste_only) < len(names)
