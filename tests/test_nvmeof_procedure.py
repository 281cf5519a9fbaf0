"""The NVMe-oF + GDS tier's procedure as a scenario (issue 23): discover, connect, gdscheck -p,
mount. Each step alone, healthy and failing, is a fixture; here the steps pasted together, with
the cause that must rank first and the line that must be its evidence."""

from __future__ import annotations

from pathlib import Path

from gdsdoctor.pipeline import analyze_paths

FIXTURES = Path(__file__).parents[1] / "fixtures"


def roots(case: str) -> list[dict]:
    analysis = analyze_paths([FIXTURES / case / "files"], None)
    return [f for f in analysis.report["findings"] if not f["explained_by"]]


def test_every_step_failing_together_ranks_the_missing_gds_path_first_with_its_row() -> None:
    found = roots("procedure-nvmeof-gds-tier-all-steps")
    assert [f["id"] for f in found[:2]] == [
        "nvmeof-rdma-not-registered-with-nvidia-fs",
        "xfs-nobarrier-rejected",
    ]
    lines = [e.get("text", "") for e in found[0]["evidence"] if isinstance(e, dict)]
    assert any("NVMeOF" in line and "Unsupported" in line for line in lines), lines
    assert any("rdma" in line and "live" in line for line in lines), lines


def test_the_healthy_procedure_raises_none_of_its_causes() -> None:
    ids = {f["id"] for f in roots("nvmeof-gds-nvmeof-supported-rdma-live")}
    assert not ids & {"nvmeof-rdma-not-registered-with-nvidia-fs", "xfs-nobarrier-rejected", "nvmeof-connect-failed",
                      "checkpoint-tier-not-mounted", "nvme-rdma-placeholder-module"}  # fmt: skip
