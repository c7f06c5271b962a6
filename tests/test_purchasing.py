"""The workload's purchasing inputs (sizer/purchasing.py): traffic.profile and traffic.trace,
constraints, pricing and search.size_buckets. Values read as given; bad values refused with one
line naming the file and the field, and the documented exit code; the older spellings
search.pricing / search.provider keep their meaning, and giving both spellings is refused."""

from __future__ import annotations

import pytest

from sizer.errors import FieldTypeError, FieldValueError, UnknownKeyError, UnknownNameError
from sizer.purchasing import HOURS_PER_MONTH, Constraints
from sizer.workload import load_workload

from .test_bad_input import assert_one_line_error, run_sizer

BASE = """\
model: llama-3.1-8b
traffic:
  {traffic}
  prompt_tokens: {{p50: 1000, p99: 2000}}
  output_tokens: {{p50: 200, p99: 400}}
search:
  devices: [H100-SXM]
  tp: [1]
  pp: [1]
{extra}"""

PROFILE = "[4, 3, 3, 3, 4, 6, 9, 12, 14, 15, 16, 16, 15, 15, 16, 16, 15, 14, 12, 10, 8, 7, 6, 5]"


def _write(tmp_path, traffic="requests_per_s: 2", extra="", name="w.yaml"):
    p = tmp_path / name
    p.write_text(BASE.format(traffic=traffic, extra=extra))
    return p


def test_defaults_leave_the_steady_single_configuration_problem(catalog, tmp_path):
    w = load_workload(_write(tmp_path), catalog)
    assert w.traffic.profile_rps == ()
    assert w.constraints == Constraints()
    assert (w.search.pricing, w.search.provider, w.search.reserved_pricing) == ("on_demand", "any", None)
    assert w.search.max_configurations == 1 and w.search.size_buckets == ()
    assert HOURS_PER_MONTH == pytest.approx(730.0)  # 24 x 365 / 12


def test_profile_sets_the_peak_rate(catalog, tmp_path):
    w = load_workload(_write(tmp_path, traffic=f"profile: {PROFILE}"), catalog)
    assert len(w.traffic.profile_rps) == 24 and w.traffic.profile_rps[10] == 16.0
    assert w.traffic.requests_per_s == 16.0  # the peak hour
    # an explicit rate equal to the peak is accepted
    w = load_workload(_write(tmp_path, traffic=f"requests_per_s: 16\n  profile: {PROFILE}"), catalog)
    assert w.traffic.requests_per_s == 16.0


@pytest.mark.parametrize(
    "traffic, error, needle",
    [
        ("profile: [1, 2, 3]", FieldValueError, "expected 24 hourly request rates"),
        ("profile: 5", FieldTypeError, "expected a list of 24 hourly request rates"),
        ("profile: [" + ", ".join(["1"] * 23) + ", -1]", FieldValueError, "traffic.profile[23]: expected a number >= 0"),
        ("profile: [" + ", ".join(["0"] * 24) + "]", FieldValueError, "every hour is zero"),
        ("profile: [" + ", ".join(["1"] * 23) + ", x]", FieldTypeError, "traffic.profile[23]: expected a number"),
        (f"requests_per_s: 12\n  profile: {PROFILE}", FieldValueError, "differs from the daily profile's peak (16)"),
        (f"profile: {PROFILE}\n  trace: t.csv", FieldValueError, "give traffic.profile or traffic.trace, not both"),
    ],
)
def test_bad_profiles(catalog, tmp_path, traffic, error, needle):
    with pytest.raises(error) as info:
        load_workload(_write(tmp_path, traffic=traffic), catalog)
    assert needle in str(info.value) and "w.yaml" in str(info.value)


def test_trace_gives_hourly_rates_and_lengths(catalog, tmp_path):
    # 48 hours of arrivals from epoch 0 (00:00 UTC): at hour h of each day, h + 1 requests, spread
    # over the hour; the span [first, last arrival] covers each hour of the day twice except a
    # sliver at the very end, so rate[h] = 2 (h + 1) / 7200 s for every hour but the last.
    rows = ["timestamp,prompt_tokens,output_tokens"]
    for day in range(2):
        for h in range(24):
            for i in range(h + 1):
                t = day * 86400 + h * 3600 + i * 3600 / (h + 1)
                rows.append(f"{t},{100 * (i + 1)},{50}")
    (tmp_path / "trace.csv").write_text("\n".join(rows) + "\n")
    w = load_workload(_write_with_trace(tmp_path), catalog)
    profile = w.traffic.profile_rps
    for h in range(23):
        assert profile[h] == pytest.approx(2 * (h + 1) / 7200), h
    # hour 23: 48 arrivals; exposure = 3600 s of day one + (last arrival - 23:00 of day two)
    last = 86400 + 23 * 3600 + 23 * 3600 / 24
    assert profile[23] == pytest.approx(48 / (3600 + last - (86400 + 23 * 3600)))
    assert w.traffic.requests_per_s == max(profile)
    # lengths: every output is 50 tokens; prompts are 100 x (1..h+1)
    assert w.traffic.output_tokens.quantile(99) == 50
    assert w.traffic.prompt_tokens.cap == 2400.0


def _write_with_trace(tmp_path):
    p = tmp_path / "trace-w.yaml"
    p.write_text(
        "model: llama-3.1-8b\n"
        "traffic:\n  trace: trace.csv\n"
        "search: {devices: [H100-SXM], tp: [1], pp: [1]}\n"
    )
    return p


def test_trace_shorter_than_a_day_is_a_sample_not_a_profile(catalog, tmp_path):
    """Three arrivals 3,600 s apart span two hours: no hourly profile (was: refused), a sample
    whose rate is 2 arrivals after the first / 7,200 s (issue 14)."""
    (tmp_path / "trace.csv").write_text("timestamp\n0\n3600\n7200\n")
    p = tmp_path / "t.yaml"
    p.write_text(BASE.format(traffic="trace: trace.csv", extra=""))
    w = load_workload(p, catalog)
    assert w.traffic.profile_rps == () and w.traffic.trace.kind == "sample"
    assert w.traffic.requests_per_s == pytest.approx(2 / 7200)


def test_trace_lengths_and_yaml_lengths_together_are_refused(catalog, tmp_path):
    rows = ["timestamp,prompt_tokens"] + [f"{h * 3600 + 1},{100}" for h in range(25)]
    (tmp_path / "trace.csv").write_text("\n".join(rows) + "\n")
    p = tmp_path / "t.yaml"
    p.write_text(BASE.format(traffic="trace: trace.csv", extra=""))
    with pytest.raises(FieldValueError) as info:
        load_workload(p, catalog)
    assert "traffic.prompt_tokens: also given by the trace's prompt_tokens column" in str(info.value)


def test_constraints_are_read_with_canonical_device_names(catalog, tmp_path):
    extra = (
        "constraints:\n"
        "  available_gpus: {h100: 32, H200-SXM: 16}\n"
        "  budget_usd_per_hour: 400\n"
        "  budget_usd_per_month: 250000\n"
        "  min_replicas: 2\n"
        "  redundancy: n_plus_1\n"
        "  allow_cross_node: true\n"
        "  instance_gpus: {H100-SXM: 8}\n"
    )
    w = load_workload(_write(tmp_path, extra=extra), catalog)
    c = w.constraints
    assert c.available_gpus == (("H100-SXM", 32), ("H200-SXM", 16))
    assert (c.budget_usd_per_hour, c.budget_usd_per_month, c.min_replicas) == (400.0, 250000.0, 2)
    assert c.n_plus_1 and c.allow_cross_node and c.instance_size("H100-SXM") == 8


@pytest.mark.parametrize(
    "extra, error, needle",
    [
        ("constraints: {availabel_gpus: {H100-SXM: 1}}", UnknownKeyError, "did you mean 'available_gpus'"),
        ("constraints: {available_gpus: {H10: 1}}", UnknownNameError, "constraints.available_gpus.H10: unknown device"),
        ("constraints: {available_gpus: {H100-SXM: -1}}", FieldValueError, "constraints.available_gpus.H100-SXM: expected an integer >= 0"),
        ("constraints: {budget_usd_per_hour: 0}", FieldValueError, "constraints.budget_usd_per_hour: expected a number > 0"),
        ("constraints: {redundancy: n_plus_2}", FieldValueError, "constraints.redundancy: expected one of none, n_plus_1"),
        ("constraints: {min_replicas: 0}", FieldValueError, "constraints.min_replicas: expected an integer >= 1"),
        ("constraints: {allow_cross_node: yes please}", FieldTypeError, "constraints.allow_cross_node: expected true or false"),
        ("pricing: {kind: mixd}", FieldValueError, "pricing.kind: expected one of on_demand, reserved_1y, reserved_3y, spot, mixed"),
        ("pricing: {provider: awz}", UnknownNameError, "pricing.provider: unknown provider 'awz' (did you mean 'aws'?)"),
        ("pricing: {kind: spot, reserved_kind: reserved_1y}", FieldValueError, "pricing.reserved_kind: applies to kind mixed only"),
        ("search2: {}", UnknownKeyError, "unknown key 'search2'"),
    ],
)
def test_bad_purchasing_inputs(catalog, tmp_path, extra, error, needle):
    with pytest.raises(error) as info:
        load_workload(_write(tmp_path, extra=extra), catalog)
    assert needle in str(info.value), str(info.value)


def test_pricing_both_spellings_refused_older_spelling_kept(catalog, tmp_path):
    p = tmp_path / "w.yaml"
    p.write_text(BASE.format(traffic="requests_per_s: 2", extra="").replace("  pp: [1]\n", "  pp: [1]\n  pricing: spot\n  provider: aws\n"))
    w = load_workload(p, catalog)
    assert (w.search.pricing, w.search.provider) == ("spot", "aws")
    p.write_text(p.read_text() + "pricing: {kind: on_demand}\n")
    with pytest.raises(FieldValueError) as info:
        load_workload(p, catalog)
    assert "pricing.kind: also given as search.pricing" in str(info.value)


def test_mixed_pricing_prices_candidates_on_demand_with_a_reserved_base(catalog, tmp_path):
    w = load_workload(_write(tmp_path, extra="pricing: {kind: mixed, provider: aws}"), catalog)
    assert (w.search.pricing, w.search.reserved_pricing, w.search.provider) == ("on_demand", "reserved_1y", "aws")
    w = load_workload(_write(tmp_path, extra="pricing: {kind: mixed, reserved_kind: reserved_3y}"), catalog)
    assert w.search.reserved_pricing == "reserved_3y"


@pytest.mark.parametrize(
    "value, expected",
    [
        (None, (50.0, 90.0)),  # the default with two configurations
        ("[]", ()),
        ("[25, 75]", (25.0, 75.0)),
        ("4", (25.0, 50.0, 75.0)),
    ],
)
def test_size_buckets(catalog, tmp_path, value, expected):
    extra = ""
    p = tmp_path / "w.yaml"
    text = BASE.format(traffic="requests_per_s: 2", extra=extra).replace("  pp: [1]\n", "  pp: [1]\n  max_configurations: 2\n")
    if value is not None:
        text = text.replace("  max_configurations: 2\n", f"  max_configurations: 2\n  size_buckets: {value}\n")
    p.write_text(text)
    assert load_workload(p, catalog).search.size_buckets == expected


@pytest.mark.parametrize(
    "value, needle",
    [("[90, 50]", "percentiles must increase"), ("[0, 50]", "expected a percentile > 0 and < 100"), ("fifty", "expected a list of prompt-length percentiles")],
)
def test_bad_size_buckets(catalog, tmp_path, value, needle):
    p = tmp_path / "w.yaml"
    p.write_text(BASE.format(traffic="requests_per_s: 2", extra="").replace("  pp: [1]\n", f"  pp: [1]\n  size_buckets: {value}\n"))
    with pytest.raises((FieldValueError, FieldTypeError)) as info:
        load_workload(p, catalog)
    assert needle in str(info.value) and "search.size_buckets" in str(info.value)


def test_cli_reports_a_bad_constraint_in_one_line(tmp_path):
    p = _write(tmp_path, extra="constraints: {available_gpus: {H100-SXM: 1.5}}")
    proc = run_sizer("solve", p, cwd=tmp_path)
    assert_one_line_error(proc, 6, f"error: {p}: constraints.available_gpus.H100-SXM: ", "expected an integer")
    proc = run_sizer("compare", p, cwd=tmp_path)
    assert_one_line_error(proc, 6, f"error: {p}: constraints.available_gpus.H100-SXM: ")
    p = _write(tmp_path, traffic="profile: [1, 2]", name="p.yaml")
    proc = run_sizer("sweep", p, "--scale", "1,2", cwd=tmp_path)
    assert_one_line_error(proc, 7, f"error: {p}: traffic.profile: ", "expected 24 hourly request rates")
