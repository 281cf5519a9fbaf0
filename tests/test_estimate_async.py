"""`estimate` for the way checkpoints are written now: several nodes, line rates, asynchronous saves,
both definitions of loss, and the typos it refuses. Numbers against worked examples written here."""

from __future__ import annotations

import json

import pytest

from gdsdoctor.checkpoint import async_save
from gdsdoctor.checkpoint import estimate_report as report
from gdsdoctor.checkpoint import stall as estimate
from gdsdoctor.checkpoint.presets import PRESET_PARTS, preset_names
from gdsdoctor.errors import EstimateError
from tests.test_cli import gdsdoctor

SIXTEEN = {"preset": "bf16-adamw-bf16grads", "gpus": 64, "interval": "1h"}


def test_the_70b_examples_default_and_16_bytes() -> None:
    default = estimate.run("70B", "1.2GB/s", gpus=64)
    assert default.bytes_per_param == 14 and default.total_bytes == 980e9  # bf16 + fp32 master + m + v
    sixteen = estimate.run("70B", "1.2GB/s", **SIXTEEN)
    assert sixteen.total_bytes == 1.12e12
    assert sixteen.stall_s == pytest.approx(933.33, abs=0.01)  # 1.12e12 / 1.2e9
    assert round(sixteen.wall_fraction * 100, 1) == 25.9  # 933 / 3600, between checkpoint starts
    assert round(sixteen.wall_fraction_of_training * 100, 1) == 20.6  # 933 / (3600 + 933)
    assert round(sixteen.gpu_hours_lost_per_day, 1) == 398.2  # 64 × 24 × 0.259


def test_both_loss_definitions_are_printed_and_the_budget_says_which_it_uses() -> None:
    text = report.render_text(estimate.run("70B", "1.2GB/s", budget="2%", **SIXTEEN))
    assert "25.9%" in text and "20.6% (stall / (interval + stall))" in text
    assert "budget applies to" in text and "between checkpoint starts" in text
    document = report.to_dict(estimate.run("70B", "1.2GB/s", **SIXTEEN))
    assert document["cost"]["wall_time_lost_fraction_of_training"] == pytest.approx(
        933.333 / 4533.333, rel=1e-4
    )


def test_a_line_rate_gets_the_goodput_factor_and_says_so() -> None:
    result = estimate.run("70B", "400Gbit/s", **SIXTEEN)
    assert result.inputs.throughput.bytes_per_s == 45e9  # 400e9 / 8 × 0.9
    assert result.stall_s == pytest.approx(1.12e12 / 45e9)  # 24.9 s, not the 22.4 s of the raw line rate
    assert any("line rate" in note and "0.9" in note for note in result.notes)
    assert not any("line rate" in note for note in estimate.run("70B", "45GB/s", **SIXTEEN).notes)


def test_several_nodes_per_node_rate_and_the_target_ceiling() -> None:
    # 8 nodes × one 400G NIC each: 8 × 45 GB/s = 360 GB/s, unless the target absorbs less
    spread = estimate.run(
        "70B", None, preset="bf16-adamw-bf16grads", nodes=8, per_node_throughput="400Gbit/s"
    )
    assert spread.inputs.gpus == 64 and spread.inputs.throughput.bytes_per_s == 360e9
    assert spread.stall_s == pytest.approx(1.12e12 / 360e9)  # 3.1 s
    capped = estimate.run(
        "70B",
        None,
        preset="bf16-adamw-bf16grads",
        nodes=8,
        per_node_throughput="400Gbit/s",
        target_ceiling="100GB/s",
    )
    assert capped.inputs.storage.binding == "target ceiling" and capped.stall_s == pytest.approx(11.2)
    assert "bound by: target ceiling" in report.render_text(capped)
    with pytest.raises(EstimateError, match="do not divide"):
        estimate.run("70B", "1GB/s", gpus=60, nodes=8)
    with pytest.raises(EstimateError, match="no write rate"):
        estimate.run("70B", None)


def test_fsync_zero_is_said_to_be_optimistic() -> None:
    assert any("optimistic" in note for note in estimate.run("70B", "1GB/s").notes)
    assert not any("optimistic" in note for note in estimate.run("70B", "1GB/s", fsync="20s").notes)


def test_async_save_stall_persist_and_host_memory() -> None:
    """1.12 TB over 8 nodes × 8 GPUs: 17.5 GB per GPU, 140 GB per node. The 8 GPUs' copies (8 × 25
    GB/s) share the node's 200 GB/s: stall 140 / 200 = 0.7 s. The persist at 1.2 GB/s takes 933 s,
    within the hour; staging needs 2 × 140 = 280 GB per node."""
    result = estimate.run(
        "70B", "1.2GB/s", asynchronous=True, nodes=8, host_mem="2TB", budget="2%", **SIXTEEN
    )
    saved = result.async_save
    assert saved.shard_per_gpu_bytes == 17.5e9 and saved.shard_per_node_bytes == 140e9
    assert saved.stall_s == pytest.approx(0.7) and saved.copy_binding == "host memory"
    assert saved.persist_s == pytest.approx(933.33, abs=0.01) and saved.headroom_s > 2600
    assert saved.host_mem_needed_bytes == 280e9 and saved.host_mem_fits
    assert result.budget.applies_to == "D2H copy" and result.budget.met and result.ok
    text = report.render_text(result)
    assert (
        "GPU stall (D2H copy)" in text and "700 ms" in text and "280 GB (shard per node × 2 buffers)" in text
    )


def test_async_save_that_cannot_keep_up_or_fit() -> None:
    slow = estimate.run("70B", "200MB/s", asynchronous=True, nodes=8, **SIXTEEN)  # 5600 s > the hour
    assert slow.async_save.headroom_s < 0 and not slow.ok
    small = estimate.run("70B", "1.2GB/s", asynchronous=True, nodes=8, host_mem="256GB", **SIXTEEN)
    assert small.async_save.host_mem_fits is False and not small.ok
    one_link = async_save.compute(1.12e12, async_save.layout(64, 8, None), storage_bytes_per_s=1.2e9,
                                  fsync_s=0, interval_s=3600, host_copy_bytes_per_s=None)  # fmt: skip
    assert one_link.copy_binding == "GPU link" and one_link.stall_s == pytest.approx(17.5e9 / 25e9)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1.2gb/s", "ambiguous.*1.2GB/s for bytes or 1.2Gbit/s for bits"),
        ("400gbps", "ambiguous"),
        ("10mb/s", "ambiguous"),
    ],
)
def test_lower_case_rates_are_refused_as_ambiguous(text: str, message: str) -> None:
    with pytest.raises(EstimateError, match=message):
        estimate.parse_throughput(text)


def test_rates_that_say_their_unit_still_read() -> None:
    assert estimate.parse_throughput("1.2GB/s").bytes_per_s == 1.2e9
    assert estimate.parse_throughput("400Gbps").bytes_per_s == 45e9
    assert estimate.parse_throughput("100kbps").bytes_per_s == pytest.approx(100e3 / 8 * 0.9)


@pytest.mark.parametrize(
    ("text", "hint"), [("70", "70B"), ("405", "405B"), ("7.5", "7.5B"), ("350k", "350B")]
)
def test_a_parameter_count_below_a_million_is_a_typo(text: str, hint: str) -> None:
    with pytest.raises(EstimateError, match=f"did you mean {hint}\\?"):
        estimate.parse_params(text)
    assert estimate.parse_params("1M") == 1_000_000


def test_presets_are_listed_in_help_and_completed() -> None:
    helped = gdsdoctor("estimate", "--help", env={"COLUMNS": "300"})
    assert all(name in helped.stdout for name in PRESET_PARTS)
    assert preset_names("bf16-adamw-") == ["bf16-adamw-bf16grads", "bf16-adamw-grads"]
    completed = gdsdoctor(
        env={
            "_GDSDOCTOR_COMPLETE": "complete_bash",
            "COMP_WORDS": "gdsdoctor estimate --preset fp32",
            "COMP_CWORD": "3",
        }
    )
    assert completed.returncode == 0 and completed.stdout.split() == [
        "fp32-adamw",
        "fp32-adamw-grads",
        "fp32-weights",
    ]


def test_the_cli_exit_code_follows_the_budget_and_the_async_verdict() -> None:
    base = ("estimate", "--params", "70B", "--throughput", "1.2GB/s", "--gpus", "64")
    assert gdsdoctor(*base, "--budget", "2%").returncode == 1  # 817 s against 72 s
    assert gdsdoctor(*base, "--budget", "30%").returncode == 0
    assert gdsdoctor(*base).returncode == 0  # no budget: nothing missed
    async_ok = gdsdoctor(
        *base, "--async", "--nodes", "8", "--budget", "2%", "--host-mem", "2TB", "--format", "json"
    )
    assert async_ok.returncode == 0, async_ok.stdout
    assert json.loads(async_ok.stdout)["async"]["stall_s"] == pytest.approx(0.6125)  # 122.5 GB / 200 GB/s
    assert gdsdoctor(*base, "--async", "--nodes", "8", "--host-mem", "200GB").returncode == 1
    typo = gdsdoctor("estimate", "--params", "70", "--throughput", "1.2GB/s")
    assert typo.returncode == 3 and "did you mean 70B?" in typo.stderr + typo.stdout
