"""The driver's own answer to "why is there no GPU" (issue 20, class 3: sources that say the answer):
nvidia-smi's failure messages and the kernel's NVRM lines, on real outputs from several public
sources (tests/data/gpu/SOURCES.md, tests/data/dmesg/SOURCES.md), become the cause they name, lead
the report over the GDS causes they make moot, and stay quiet on healthy outputs of the same shape.
No GPU node is at hand: each is tested on captured outputs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gdsdoctor.capture.runner import run_command
from gdsdoctor.facts.section import section_from
from gdsdoctor.pipeline import analyze_paths
from gdsdoctor.probes import dmesg, gpu, nvidia_smi_failures
from tests.conftest import REPO

DATA = Path(__file__).resolve().parents[1] / "data"
FAILURES = DATA / "gpu" / "failures"
DMESG = DATA / "dmesg"


def _report(*paths: Path) -> dict:
    return analyze_paths(list(paths), None).report


def _findings(*paths: Path) -> dict[str, dict]:
    return {f["id"]: f for f in _report(*paths)["findings"]}


def _pasted(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- nvidia-smi's messages, as drivers 390 to 610 word them -------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that "
         "the latest NVIDIA driver is installed and running.", {"kind": "driver_unreachable"}),
        ("Failed to initialize NVML: Driver/library version mismatch", {"kind": "version_mismatch"}),
        ("Failed to initialize NVML: Unknown Error", {"kind": "nvml_failed", "reason": "Unknown Error"}),
        ("No devices were found", {"kind": "no_devices"}),
        ("Unable to determine the device handle for GPU1: 0000:34:00.0: Unknown Error",
         {"kind": "gpu_lost", "index": 1, "bus_id": "0000:34:00.0", "reason": "Unknown Error"}),
        ("Unable to determine the device handle for GPU0000:08:00.0: Unknown Error",
         {"kind": "gpu_lost", "bus_id": "0000:08:00.0", "reason": "Unknown Error"}),
        ("Unable to determine the device handle for GPU 0: Unknown Error",
         {"kind": "gpu_lost", "index": 0, "reason": "Unknown Error"}),
        ("Unable to determine the device handle for GPU0000:CB:00.0: Unknown Error",
         {"kind": "gpu_lost", "bus_id": "0000:cb:00.0", "reason": "Unknown Error"}),
    ],
)  # fmt: skip
def test_each_failure_line_is_read_with_what_it_names(line: str, expected: dict) -> None:
    (failure,) = nvidia_smi_failures.read(line + "\n", "nvidia-smi.txt")
    assert {key: failure.get(key) for key in expected} == expected
    assert failure["src"]["line"] == 1


def test_the_library_version_line_completes_a_version_mismatch() -> None:
    text = (FAILURES / "nvidia-smi.version-mismatch.fedora-dnf-update-580.txt").read_text()
    section = gpu.parse_nvidia_smi(text, "nvidia-smi.txt")
    assert section["format"] == "failure" and section["gpus"] == []
    assert [(f["kind"], f.get("library_version")) for f in section["failures"]] == [
        ("version_mismatch", "580.126")
    ]


def test_a_lost_gpu_beside_the_table_of_the_others_keeps_both() -> None:
    """Driver 610's header (KMD / CUDA UMD Version) is read, the three GPUs it still lists too."""
    section = gpu.parse_nvidia_smi(
        (FAILURES / "nvidia-smi.gpu-lost-one-of-four.610-kmd-header.txt").read_text(), "nvidia-smi.txt"
    )
    assert section["format"] == "table"
    assert (section["driver_version"], section["cuda_version"]) == ("610.57.04", "13.3")
    assert [g["bus_id"] for g in section["gpus"]] == ["0000:16:00.0", "0000:ac:00.0", "0000:ca:00.0"]
    assert [(f["kind"], f["bus_id"]) for f in section["failures"]] == [("gpu_lost", "0000:34:00.0")]


@pytest.mark.parametrize(
    ("sample", "cause"),
    [
        ("nvidia-smi.driver-unreachable.renya-kujirada-docker-k8s.txt", "nvidia-driver-not-running"),
        ("nvidia-smi.driver-unreachable.after-lambda-stack-reboot.txt", "nvidia-driver-not-running"),
        ("nvidia-smi.version-mismatch.chaelin0722-blog.txt", "nvidia-driver-not-running"),
        ("nvidia-smi.version-mismatch.fedora-dnf-update-580.txt", "nvidia-driver-not-running"),
        ("nvidia-smi.no-devices.slurm-job-without-gres.txt", "no-gpu-visible"),
        ("nvidia-smi.no-devices.rminitadapter-vbios.txt", "no-gpu-visible"),
        ("nvidia-smi.gpu-lost-one-of-four.610-kmd-header.txt", "gpu-fell-off-the-bus"),
        ("nvidia-smi.library-missing.docker-gpus-all-cuda-11.8.txt", "nvidia-driver-not-running"),
        ("nvidia-smi.library-missing.k8s-node-display-unclaimed.txt", "nvidia-driver-not-running"),
    ],
)
def test_a_pasted_nvidia_smi_failure_is_the_first_finding_never_ok(sample: str, cause: str) -> None:
    report = _report(FAILURES / sample)
    first = report["findings"][0]
    assert (first["id"], first["severity"]) == (cause, "critical")
    failure = nvidia_smi_failures.read((FAILURES / sample).read_text(), sample)[0]
    cited = [(e["artifact"], e["line"]) for e in first["evidence"] if e.get("line")]
    assert (sample, failure["src"]["line"]) in cited  # the evidence is the failure line itself
    assert failure["text"] in report["node"]["gpus"]["unreachable"]  # the header says it, not "no GPU found"


# --- the kernel's NVRM lines ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sample", "cause"),
    [
        ("dmesg-nvrm-api-mismatch.kernel-390-client-415.txt", "nvidia-driver-not-running"),
        ("dmesg-T-nvrm-api-mismatch.container-toolkit-535.txt", "nvidia-driver-not-running"),
        ("syslog-nvrm-api-mismatch.intrepid-185.txt", "nvidia-driver-not-running"),
        ("dmesg-nvrm-rminitadapter-failed.vbios-580.txt", "gpu-fell-off-the-bus"),
        ("nvrm-xid79.gpud-xid-examples.txt", "gpu-fell-off-the-bus"),
        ("nvrm-fallen-off-bus.two-line.vfio-passthrough-2080ti.txt", "gpu-fell-off-the-bus"),
        ("nvrm-fallen-off-bus.one-line.vm-passthrough-1080ti.txt", "gpu-fell-off-the-bus"),
    ],
)
def test_the_kernel_log_names_the_driver_or_gpu_failure(sample: str, cause: str) -> None:
    first = _report(DMESG / sample)["findings"][0]
    assert (first["id"], first["severity"]) == (cause, "critical")
    cited = [e for e in first["evidence"] if e.get("artifact") == sample and e.get("line")]
    assert cited and all("NVRM" in e["text"] for e in cited)  # the driver's own lines, with their numbers


def test_the_api_mismatch_names_the_libraries_release() -> None:
    found = _findings(DMESG / "dmesg-T-nvrm-api-mismatch.container-toolkit-535.txt")
    assert any("535.171.04" in e["text"] for e in found["nvidia-driver-not-running"]["evidence"])


# --- what must stay quiet ----------------------------------------------------------------------------

_GPU_CAUSES = {"nvidia-driver-not-running", "gpu-fell-off-the-bus", "no-gpu-visible"}


@pytest.mark.parametrize(
    "sample",
    [
        DATA / "gpu" / "nvidia-smi.txt",
        DATA / "gpu" / "nvidia-smi.gpud-e2e-mock-a10.550.txt",
        DATA / "gpu" / "nvidia-smi-L.insights-core-a100-pcie.txt",
        DATA / "gpu" / "nvidia-smi-q.h100-hgx.535.161.08.gpu0.txt",
        DMESG / "talos-node-prefixed-vllm-xid.txt",  # Xid 62 and 45: not a GPU gone from the bus
    ],
)
def test_healthy_outputs_of_the_same_shape_raise_none_of_them(sample: Path) -> None:
    assert not _GPU_CAUSES & set(_findings(sample))


def test_an_unsupported_gpu_message_is_not_a_gpu_lost() -> None:
    line = (
        "NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1f95) installed in this system is not "
        "supported by the NVIDIA 535.54.03 driver release."
    )
    assert dmesg.classify(line) is None  # no failure kind at all: the GPU is there, unsupported


def test_an_api_mismatch_of_an_earlier_boot_is_not_the_node_now(tmp_path: Path) -> None:
    earlier = (DMESG / "dmesg-nvrm-api-mismatch.kernel-390-client-415.txt").read_text()
    now = "[    1.000000] Linux version 6.8.0-45-generic (buildd@lcy02-amd64-115)\n[    2.000000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.05\n"
    log = _pasted(tmp_path, "dmesg.txt", earlier + "-- Reboot --\n" + now)
    found = _findings(log, DATA / "gpu" / "nvidia-smi.gpud-e2e-mock-a10.550.txt")
    assert "nvidia-driver-not-running" not in found
    assert "nvidia-driver-not-running" in _findings(
        _pasted(tmp_path, "now.txt", earlier)
    )  # this boot's would


# --- ranking: the GPU comes before what needs it ---------------------------------------------------


def test_a_version_mismatch_leads_and_folds_the_nvidia_fs_finding() -> None:
    """The old module still loaded (the fixture's lsmod), no nvidia_fs beside it, on a node the
    site says uses GDS (without the statement nothing shows GDS in use: issue 31, intent)."""
    lsmod = REPO / "fixtures" / "gpu-nvidia-smi-version-mismatch" / "files" / "lsmod.txt"
    paths = [FAILURES / "nvidia-smi.version-mismatch.fedora-dnf-update-580.txt", lsmod]
    report = analyze_paths(paths, None, site={"node": {"gds": "required"}}).report
    first = report["findings"][0]
    assert first["id"] == "nvidia-driver-not-running"
    assert "nvidia-fs-not-loaded" in first.get("explains", [])
    assert "nvidia-fs-not-loaded" not in {f["id"] for f in _report(*paths)["findings"]}


def test_no_nvidia_module_beside_a_failing_nvidia_smi_is_the_driver_down_not_a_cpu_node(
    tmp_path: Path,
) -> None:
    lsmod = _pasted(
        tmp_path,
        "lsmod.txt",
        "Module                  Size  Used by\nnvme                   61440  3\nnvme_core             200704  4 nvme\n",
    )
    report = _report(FAILURES / "nvidia-smi.driver-unreachable.renya-kujirada-docker-k8s.txt", lsmod)
    assert report["findings"][0]["id"] == "nvidia-driver-not-running"


def test_a_failing_nvidia_smi_on_a_node_whose_pci_list_has_no_nvidia_gpu_is_no_finding() -> None:
    """A CPU node of a fleet that shares one image: the driver's tools installed, no GPU on the
    bus (this VM's real lspci). No GPU cause applies; nothing to drain."""
    lspci = DATA / "pci" / "lspci-vmm.this-machine-vm.txt"
    report = _report(FAILURES / "nvidia-smi.driver-unreachable.renya-kujirada-docker-k8s.txt", lspci)
    assert not _GPU_CAUSES & {f["id"] for f in report["findings"]}
    assert report["summary"]["status"] != "CRITICAL"


def test_a_gdscheck_listing_no_gpu_leads_with_no_gpu_not_nvidia_fs(tmp_path: Path) -> None:
    """gdscheck -p on a host whose GPUs it cannot see: its GPU INFO lists none and it finds no
    supported GPU. Built from the GDS 0.9 sample (its one unsupported GPU's line removed) and the
    header without an nvidia_fs version: no public capture of such a host was found."""
    sample = (DATA / "gdscheck" / "gdscheck-p.gds-0.9-beta.gds-matrix.txt").read_text().splitlines()
    kept = [
        line
        for line in sample
        if "nvidia_fs version" not in line and "does not have supported arch" not in line
    ]
    report = _report(_pasted(tmp_path, "gdscheck.txt", "\n".join(kept) + "\n"))
    first = report["findings"][0]
    assert first["id"] == "no-gpu-visible"
    assert "nvidia-fs-not-loaded" in first.get("explains", [])
    assert "gpu-not-supported-for-gds" not in {f["id"] for f in report["findings"]}


# --- live: nvidia-smi's exit code does not hide its message ------------------------------------------

_PROBE = next(p for p in gpu.PROBES if p.section == "nvidia_smi")
_SOURCE = _PROBE.sources[0]


def _live(tmp_path: Path, text: str, code: int) -> dict:
    """The real runner on a real process that prints ``text`` and exits ``code`` (nvidia-smi itself
    is not on this machine), read as the nvidia_smi probe reads its command."""
    output = _pasted(tmp_path, "out.txt", text)
    artifact = run_command(
        _SOURCE.artifact, ["sh", "-c", f"cat {output}; exit {code}"], 10.0, {}, _SOURCE.ok_exit_codes
    )
    return section_from(_PROBE, [artifact])


def test_a_failing_nvidia_smi_is_read_in_its_own_words(tmp_path: Path) -> None:
    text = (FAILURES / "nvidia-smi.driver-unreachable.renya-kujirada-docker-k8s.txt").read_text()
    section = _live(tmp_path, text, 9)  # NVML_ERROR_DRIVER_NOT_LOADED
    assert section["status"] == "ok"
    assert [f["kind"] for f in section["failures"]] == ["driver_unreachable"]


def test_a_failing_nvidia_smi_that_says_nothing_readable_stays_a_failure(tmp_path: Path) -> None:
    section = _live(tmp_path, "something else went wrong\n", 255)
    assert section["status"] == "error"
    assert "exit 255" in section["detail"] and "something else went wrong" in section["detail"]


def test_a_container_without_the_driver_libraries_is_no_node_to_drain(tmp_path: Path) -> None:
    """libnvidia-ml.so not found in a container started without GPUs (NVIDIA_VISIBLE_DEVICES=void,
    nvidia-container-runtime's word for none): a warning; on the host, critical."""
    missing = FAILURES / "nvidia-smi.library-missing.docker-gpus-all-cuda-11.8.txt"
    env = _pasted(tmp_path, "env.txt", "NVIDIA_VISIBLE_DEVICES=void\n")
    assert _findings(missing, env)["nvidia-driver-not-running"]["severity"] == "warning"
    assert _findings(missing)["nvidia-driver-not-running"]["severity"] == "critical"
