"""The checkpoint stall model against hand-computed values."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gdsdoctor.checkpoint import estimate_report as report
from gdsdoctor.checkpoint import stall as estimate
from gdsdoctor.errors import EstimateError


def textbook(**overrides: object) -> estimate.Estimate:
    """70B, 16 B/param (≈1.12 TB), 1.2 GB/s, hourly, 64 GPUs."""
    arguments: dict = {"preset": "bf16-adamw-bf16grads", "gpus": 64, "interval": "1h"}
    arguments.update(overrides)
    return estimate.run("70B", arguments.pop("throughput", "1.2GB/s"), **arguments)


# --- the textbook case ---------------------------------------------------------------------


def test_textbook_case_size_stall_share_and_gpu_hours() -> None:
    result = textbook()
    assert result.total_bytes == 1_120_000_000_000  # 70e9 × 16 B
    assert result.write_s == pytest.approx(933.333, rel=1e-5)  # 1.12e12 / 1.2e9
    assert result.stall_s > 15 * 60  # "stalls 64 GPUs for over 15 minutes"
    assert result.wall_fraction == pytest.approx(933.333 / 3600, rel=1e-5)  # 25.9 %, "about a quarter"
    assert 0.25 < result.wall_fraction < 0.27
    assert result.gpu_hours_lost_per_day == pytest.approx(64 * 24 * 933.333 / 3600, rel=1e-5)  # 398.2
    assert not result.stall_exceeds_interval


@pytest.mark.parametrize(
    ("preset", "terabytes", "per_param"),
    [
        ("bf16-adamw", 0.98, 14),
        ("bf16-adamw-bf16grads", 1.12, 16),
        ("fp32-adamw-grads", 1.12, 16),
        ("bf16-adamw-grads", 1.26, 18),
        ("fp32-adamw", 0.84, 12),
        ("bf16-weights", 0.14, 2),
        ("fp32-weights", 0.28, 4),
    ],
)
def test_presets_reproduce_the_quoted_sizes(preset: str, terabytes: float, per_param: int) -> None:
    result = estimate.run("70B", "1GB/s", preset=preset)
    assert result.total_bytes == pytest.approx(terabytes * 1e12)
    assert result.bytes_per_param == per_param


def test_default_preset_is_bf16_adamw_without_gradients() -> None:
    result = estimate.run("70B", "1GB/s")
    assert estimate.DEFAULT_PRESET == "bf16-adamw"
    assert [c.name for c, _ in result.component_bytes] == [
        "weights_bf16",
        "master_fp32",
        "adam_m_fp32",
        "adam_v_fp32",
    ]
    assert [size for _, size in result.component_bytes] == [140e9, 280e9, 280e9, 280e9]


def test_component_overrides_change_add_and_drop() -> None:
    result = estimate.run("1B", "1GB/s", components=["grads_fp32=4", "adam_v_fp32=0", "extra=1.5"])
    sizes = {c.name: size for c, size in result.component_bytes}
    assert sizes == {
        "weights_bf16": 2e9,
        "master_fp32": 4e9,
        "adam_m_fp32": 4e9,
        "grads_fp32": 4e9,
        "extra": 1.5e9,
    }
    assert result.total_bytes == 15.5e9


def test_explicit_components_without_preset() -> None:
    result = estimate.run("10B", "1GB/s", preset=None, components=["state=10"])
    assert result.total_bytes == 100e9
    assert result.write_s == pytest.approx(100)


def test_fsync_adds_to_stall() -> None:
    result = estimate.run("1B", "2GB/s", preset="fp32-weights", fsync="500ms")
    assert result.write_s == pytest.approx(2.0)  # 4 GB / 2 GB/s
    assert result.stall_s == pytest.approx(2.5)


def test_stall_longer_than_interval_is_capped_and_flagged() -> None:
    result = textbook(interval="10min", throughput="1GB/s")  # 1120 s > 600 s
    assert result.stall_exceeds_interval
    assert result.wall_fraction == 1.0
    assert result.gpu_hours_lost_per_day == pytest.approx(64 * 24)
    assert any("longer than the interval" in note for note in result.notes)


# --- budget and tiers ------------------------------------------------------------------------


def test_budget_gives_required_throughput() -> None:
    result = textbook(budget="2%", fsync="30s")
    assert result.budget is not None
    assert result.budget.max_stall_s == pytest.approx(72.0)  # 2 % of 3600 s
    assert not result.budget.met
    # 1.12e12 B must be written in 72 s − 30 s fsync = 42 s
    assert result.budget.required_bytes_per_s == pytest.approx(1.12e12 / 42)


def test_budget_met_and_budget_impossible() -> None:
    met = estimate.run("1B", "10GB/s", preset="bf16-weights", budget="0.02")
    assert met.budget is not None and met.budget.met  # 0.2 s stall ≤ 72 s
    impossible = estimate.run("1B", "10GB/s", preset="bf16-weights", budget="1%", fsync="40s")
    assert impossible.budget is not None
    assert impossible.budget.required_bytes_per_s is None  # 40 s fsync > 36 s budget
    assert "impossible" in report.render_text(impossible)


def test_tiers_scratch_binds_when_archive_keeps_up() -> None:
    # 1.12 TB to scratch at 10 GB/s = 112 s; flush at 1 GB/s = 1120 s; window 3600 − 112 = 3488 s
    result = textbook(throughput="10GB/s", archive_throughput="1GB/s")
    assert result.tiers is not None
    assert result.stall_s == pytest.approx(112)
    assert result.tiers.flush_s == pytest.approx(1120)
    assert result.tiers.window_s == pytest.approx(3488)
    assert result.tiers.headroom_s == pytest.approx(2368)
    assert result.tiers.binding == "scratch"
    assert result.tiers.required_archive_bytes_per_s == pytest.approx(1.12e12 / 3488)


def test_tiers_archive_binds_when_flush_misses_the_next_checkpoint() -> None:
    # flush at 250 MB/s = 4480 s > 3488 s window
    result = textbook(throughput="10GB/s", archive_throughput="250MB/s")
    assert result.tiers is not None
    assert result.tiers.binding == "archive"
    assert result.tiers.headroom_s == pytest.approx(3488 - 4480)
    assert "archive (flush does not finish" in report.render_text(result)


# --- renderers -------------------------------------------------------------------------------


def test_renderers_share_one_row_list() -> None:
    result = textbook(budget="2%", archive_throughput="400Gbit/s")
    all_rows = report.rows(result)
    text, markdown = report.render_text(result), report.render_markdown(result)
    document = report.to_dict(result)
    words = " ".join(text.split())  # a long value wraps onto an indented line at a narrow width
    for row in all_rows:
        assert row.text in words
        assert row.text.replace("|", "/") in markdown
        assert document[row.section][row.key] == row.value  # type: ignore[index]
    json.dumps(document)  # JSON-able


def test_text_states_numbers_units_and_assumptions() -> None:
    text = report.render_text(textbook())
    assert "1.12 TB" in text
    assert "933 s (15.6 min)" in text
    assert "25.9%" in text
    assert "398.2" in text
    assert "Units: SI (1 GB = 10^9 bytes)." in text
    assert "16 bytes/parameter" in text
    assert "grads_bf16 2" in text


def test_iec_rendering_says_so() -> None:
    result = textbook()
    text = report.render_text(result, units="iec")
    assert "1.02 TiB" in text  # 1.12e12 / 2^40
    assert "1.12 GiB/s" in text  # 1.2e9 / 2^30
    assert "Units: IEC" in text
    assert report.to_dict(result, units="iec")["units"] == "IEC"


def test_markdown_has_sections_and_tables() -> None:
    markdown = report.render_markdown(textbook(budget="2%"))
    assert "### Checkpoint size" in markdown
    assert "### Stall budget" in markdown
    assert "| total checkpoint | 1.12 TB |" in markdown


def test_measured_throughput_as_float_bytes_per_second() -> None:
    result = estimate.run("70B", 1.2e9, preset="bf16-adamw-bf16grads")
    assert result.write_s == pytest.approx(933.333, rel=1e-5)


# --- unit parsing ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("70B", 70_000_000_000),
        ("70b", 70_000_000_000),
        ("405b", 405_000_000_000),
        ("7e10", 70_000_000_000),
        ("1.5T", 1_500_000_000_000),
        ("350M", 350_000_000),
        ("1.5M", 1_500_000),
        (" 8 B ", 8_000_000_000),
        ("70_000_000_000", 70_000_000_000),
    ],
)
def test_parse_params(text: str, count: int) -> None:
    assert estimate.parse_params(text) == count


@pytest.mark.parametrize(
    ("text", "rate", "system"),
    [
        ("1.2GB/s", 1.2e9, "SI"),
        ("1200MB/s", 1.2e9, "SI"),
        ("1.2 GB/s", 1.2e9, "SI"),
        ("12GiB/s", 12 * 2**30, "IEC"),
        ("512MiB/s", 512 * 2**20, "IEC"),
        ("400Gbit/s", 50e9 * 0.9, "SI"),  # a line rate: × 0.9 goodput
        ("400Gb/s", 50e9 * 0.9, "SI"),
        ("400Gbps", 50e9 * 0.9, "SI"),
        ("100 Gbits/s", 12.5e9 * 0.9, "SI"),
        ("1200MBps", 1.2e9, "SI"),
        ("1 TB/sec", 1e12, "SI"),
        ("800kB/s", 800e3, "SI"),
        ("1Gibit/s", 2**30 / 8 * 0.9, "IEC"),
        ("5e9B/s", 5e9, "SI"),
        ("3 bytes/s", 3, "SI"),
    ],
)
def test_parse_throughput(text: str, rate: float, system: str) -> None:
    parsed = estimate.parse_throughput(text)
    assert parsed.bytes_per_s == pytest.approx(rate)
    assert parsed.system == system


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30),
        ("500ms", 0.5),
        ("1h", 3600),
        ("15min", 900),
        ("15m", 900),
        ("1h30m", 5400),
        ("2d", 172800),
        ("0.5 h", 1800),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert estimate.parse_duration(text) == pytest.approx(seconds)


def test_zero_fsync_is_allowed_but_zero_interval_is_not() -> None:
    assert estimate.parse_duration("0", allow_zero=True) == 0
    assert estimate.parse_duration("0s", allow_zero=True) == 0
    with pytest.raises(EstimateError, match="must be positive"):
        estimate.parse_duration("0s")


@pytest.mark.parametrize(("text", "fraction"), [("2%", 0.02), ("0.02", 0.02), ("0.5 %", 0.005), ("50%", 0.5)])
def test_parse_fraction(text: str, fraction: float) -> None:
    assert estimate.parse_fraction(text) == pytest.approx(fraction)


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: estimate.parse_params("-70B"), "must be positive"),
        (lambda: estimate.parse_params("0"), "must be positive"),
        (lambda: estimate.parse_params("70X"), "unknown suffix"),
        (lambda: estimate.parse_params("seventy"), "cannot read"),
        (lambda: estimate.parse_params(""), "cannot read"),
        (lambda: estimate.parse_params("0.1"), "below 1M"),
        (lambda: estimate.parse_params("inf"), "cannot read"),
        (lambda: estimate.parse_throughput("1.2"), "no unit"),
        (lambda: estimate.parse_throughput("1.2GB"), "unknown unit"),
        (lambda: estimate.parse_throughput("1.2 furlongs/s"), "unknown unit"),
        (lambda: estimate.parse_throughput("0GB/s"), "must be positive"),
        (lambda: estimate.parse_throughput("-1GB/s"), "must be positive"),
        (lambda: estimate.parse_throughput("fast"), "cannot read"),
        (lambda: estimate.parse_duration("-5s"), "must not be negative"),
        (lambda: estimate.parse_duration("5"), "no unit"),
        (lambda: estimate.parse_duration("5 fortnights"), "unknown unit"),
        (lambda: estimate.parse_duration("soon"), "cannot read"),
        (lambda: estimate.parse_duration(""), "empty"),
        (lambda: estimate.parse_fraction("2"), "ambiguous"),
        (lambda: estimate.parse_fraction("0%"), "between 0 and 100%"),
        (lambda: estimate.parse_fraction("150%"), "between 0 and 100%"),
        (lambda: estimate.parse_fraction("-1%"), "between 0 and 100%"),
        (lambda: estimate.parse_count("0"), "whole number"),
        (lambda: estimate.parse_count("2.5"), "whole number"),
        (lambda: estimate.parse_count("-3"), "whole number"),
        (lambda: estimate.run("70B", "1GB/s", preset="adam-ish"), "unknown preset"),
        (lambda: estimate.run("70B", "1GB/s", components=["grads"]), "not name=bytes"),
        (lambda: estimate.run("70B", "1GB/s", components=["grads=-4"]), "must not be negative"),
        (lambda: estimate.run("70B", "1GB/s", components=["total=4"]), "not name=bytes"),
        (lambda: estimate.run("70B", "1GB/s", preset=None), "nothing is saved"),
        (
            lambda: estimate.run("70B", "1GB/s", preset="bf16-weights", components=["weights_bf16=0"]),
            "nothing",
        ),
        (lambda: estimate.run("70B", 0.0), "must be positive"),
        (lambda: estimate.run("70B", float("nan")), "must be positive"),
        (lambda: estimate.run("70B", "1GB/s", gpus=0), "whole number"),
    ],
)
def test_bad_input_raises_one_line_error(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(EstimateError, match=message) as info:
        call()
    assert "\n" not in str(info.value)


@given(st.text(max_size=30))
def test_parsers_raise_only_estimate_error(text: str) -> None:
    for parse in (
        estimate.parse_params,
        estimate.parse_throughput,
        estimate.parse_duration,
        estimate.parse_fraction,
        estimate.parse_count,
    ):
        try:
            parse(text)
        except EstimateError as error:
            assert "\n" not in str(error)
