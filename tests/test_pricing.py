"""Prices a buyer can act on (issue 11): instance shapes, provenance and age, the user's own
price files, provider selection, the plan on first-party prices, and the break-even price. Every
cost below is worked out by hand from the catalog row or the test's own round numbers."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from datetime import date
from types import SimpleNamespace

import pytest

from sizer.catalog import Price, load_catalog, load_prices
from sizer.errors import InfeasibleError, UnknownNameError
from sizer.fleet import Offer, Option, single_plan
from sizer.optimize import _break_even, build_program, run_program, solve
from sizer.perf import Layout, build_step_model
from sizer.report import plan_to_dict, render_plan
from sizer.workload import load_workload, priced_catalog

from .conftest import ROOT
from .test_fleet import _cand, _option, _problem, _solve

AS_OF = date(2026, 12, 1)


def _workload(tmp_path, body: str, name: str = "w.yaml"):
    path = tmp_path / name
    path.write_text(
        "model: llama-3.1-8b\n"
        "traffic: {requests_per_s: 0.5, prompt_tokens: {p50: 500, p99: 2000}, output_tokens: {p50: 100, p99: 400}}\n"
        "slo: {ttft_s: {p99: 5.0}, tpot_s: {p99: 0.2}}\n" + body
    )
    return path


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sizer", *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


# ------------------------------------------------------------------------------------------------
# 1. instance shapes are physical
# ------------------------------------------------------------------------------------------------


def test_an_l40s_tp8_replica_on_aws_is_priced_on_the_instance_that_holds_it(tmp_path, catalog):
    # prices.yaml (AWS on-demand, us-east-1, read 2026-10-10 by ewyluda/gpu-price-index):
    # g6e.xlarge 1 x L40S $1.861/h; g6e.12xlarge 4 x L40S $10.4926/h ($2.6232/GPU); g6e.48xlarge
    # 8 x L40S $30.1312/h = $3.7664 per GPU. One tp=8 replica needs the 48xlarge:
    # 8 x 3.7664 = $30.1312 per hour (before issue 11: 8 x 1.861 = $14.888 on the one-GPU VM).
    path = _workload(tmp_path, "search: {devices: [L40S], tp: [8], pp: [1], kv_dtypes: [bf16], weight_dtypes: [bf16]}\npricing: {provider: aws}\n")
    plan = solve(load_workload(path, catalog), catalog, as_of=AS_OF)
    (d,) = plan.deployments
    assert d.replicas == 1 and d.instance_gpus == 8
    assert plan.cost_usd_per_hour == pytest.approx(30.1312, abs=1e-6)
    assert d.instance_note == "L40S tp=8: aws g6e.xlarge holds 1 GPU; g6e.48xlarge ($3.766/GPU-h) used"
    assert "instance  L40S tp=8: aws g6e.xlarge holds 1 GPU; g6e.48xlarge ($3.766/GPU-h) used" in render_plan(plan, "table")


def test_a_group_no_instance_holds_is_rejected_naming_the_shape_unless_it_may_span_machines(tmp_path, catalog):
    # Nebius's H100 rows rent one GPU (its page gives the smallest rental only): the cheaper is
    # $3.85 per GPU-hour ("on-demand (price displayed when read)"). tp=2 does not fit one machine.
    body = "search: {devices: [H100-SXM], tp: [2], pp: [1], kv_dtypes: [bf16], weight_dtypes: [bf16]}\npricing: {provider: nebius}\n"
    with pytest.raises(InfeasibleError, match=r"H100-SXM tp=2 needs 2 GPUs in one machine, on_demand offers at most 1 \(nebius on-demand \(price displayed when read\)\)"):
        solve(load_workload(_workload(tmp_path, body), catalog), catalog, as_of=AS_OF)
    # allow_cross_node: the replica spans two one-GPU instances, 2 x $3.85 = $7.70 per hour
    plan = solve(load_workload(_workload(tmp_path, body + "constraints: {allow_cross_node: true}\n", "x.yaml"), catalog), catalog, as_of=AS_OF)
    (d,) = plan.deployments
    assert d.candidate.config.node_gpus == 1 and d.instance_gpus == 1 and d.replicas == 1
    assert plan.cost_usd_per_hour == pytest.approx(2 * 3.85)
    assert plan_to_dict(plan)["deployments"][0]["node_gpus"] == 1


def test_the_step_model_charges_the_inter_node_link_for_what_crosses_machines(catalog):
    # Llama-3.1-8B: 32 layers, hidden 4096. H100-SXM: NVLink 450 GB/s, network 50 GB/s per GPU
    # (gpus.yaml network_gb_per_s, Azure ND H100 v5: 400 Gb/s InfiniBand per GPU), both at the
    # same link_bandwidth_fraction f. A tp=2 decode step of one sequence makes 2 x 32 = 64 ring
    # all-reduces of 2 (tp-1)/tp x 1 token x 4096 x 2 B = 8,192 B; across two machines each takes
    # 8,192 / (50e9 f) instead of 8,192 / (450e9 f) s. A pp=2 replica over two machines sends its
    # one pipeline hop (8,192 B) over the network the same way.
    model, gpu = catalog.model("llama-3.1-8b"), catalog.gpu("H100-SXM")
    rows = [(model, gpu, Layout(tp=2), "bf16", "bf16"), (model, gpu, Layout(tp=2, node_gpus=1), "bf16", "bf16"),
            (model, gpu, Layout(pp=2), "bf16", "bf16"), (model, gpu, Layout(pp=2, node_gpus=1), "bf16", "bf16")]
    step = build_step_model(rows)
    t = step.decode_step_s(1.0, 1000.0)
    f = step.link_bandwidth_fraction
    per = 8192 * (1 / (50e9 * f) - 1 / (450e9 * f))
    assert t[1] - t[0] == pytest.approx(64 * per[0], rel=1e-9)
    assert t[3] - t[2] == pytest.approx(per[2], rel=1e-9)  # one crossing hop of 1 x 4096 x 2 B
    # tp=2 on 2-GPU machines (node_gpus = 2) crosses nothing: the same as one machine
    assert build_step_model([(model, gpu, Layout(tp=2, node_gpus=2), "bf16", "bf16")]).decode_step_s(1.0, 1000.0)[0] == pytest.approx(t[0])


# ------------------------------------------------------------------------------------------------
# 2. provenance and age
# ------------------------------------------------------------------------------------------------


def test_price_ages_count_to_as_of(tmp_path, catalog):
    do = next(p for p in catalog.prices if p.device == "MI300X" and p.provider == "digitalocean" and p.instance == "gpu-mi300x1-192gb")
    assert do.source_kind == "provider_page" and do.age_days(AS_OF) == 55  # 2026-10-07 -> 12-01: 24 + 30 + 1
    azure = next(p for p in catalog.prices if p.device == "H100-SXM" and p.provider == "azure")
    assert azure.source_kind == "provider_page" and azure.age_days(AS_OF) == 52  # 2026-10-10 -> 12-01: 21 + 30 + 1
    # a date known to the month only counts from the 1st: "2026-11" -> 30 days
    month = tmp_path / "month.yaml"
    month.write_text("prices:\n  - {device: H100-SXM, provider: x, kind: on_demand, usd_per_gpu_hour: 3.0, price_date: '2026-11'}\n")
    assert load_prices(month, catalog.gpus, user=True)[0].age_days(AS_OF) == 30
    # the safe rule where the source states no machine size: Crusoe's H100 page prices per GPU-hour
    crusoe = next(p for p in catalog.prices if p.device == "H100-SXM" and p.provider == "crusoe")
    assert crusoe.gpus_per_instance == 1 and crusoe.gpus_per_instance_assumed
    # and where a source names the machine: Crusoe's MI300X is the 8-GPU mi300x-192gb-ib.8x
    crusoe = next(p for p in catalog.prices if p.device == "MI300X" and p.provider == "crusoe")
    assert crusoe.gpus_per_instance == 8 and not crusoe.gpus_per_instance_assumed


def test_provider_any_uses_first_party_rows_by_default_and_named_providers_every_row(tmp_path, catalog):
    def kinds(body):
        w = load_workload(_workload(tmp_path, body), catalog)
        return w, priced_catalog(w, catalog)

    w, cat = kinds("")
    assert w.search.min_source_kind == "provider_page" and {p.source_kind for p in cat.prices} == {"provider_page"}
    _, cat = kinds("pricing: {min_source_kind: marketplace}\n")
    assert {"akash", "vast"} <= {p.provider for p in cat.prices} and "secondary" in {p.source_kind for p in cat.prices}
    w, cat = kinds("pricing: {providers: [akash, aws]}\n")
    assert w.search.min_source_kind == "marketplace" and {p.provider for p in cat.prices} == {"akash", "aws"}
    _, cat = kinds("pricing: {exclude_providers: [runpod, aws]}\n")
    assert not {"runpod", "aws"} & {p.provider for p in cat.prices}
    with pytest.raises(UnknownNameError, match=r"w\.yaml: pricing\.providers\[1\]: unknown provider 'gpc' \(did you mean 'gcp'\?\)"):
        kinds("pricing: {providers: [aws, gpc]}\n")


def test_a_plan_on_a_marketplace_price_is_flagged_with_the_first_party_plan_beside_it(tmp_path, catalog):
    # B200 tp=1: akash "starting at" $5.00 (marketplace) vs RunPod Community $5.98 (provider page).
    # One replica serves 0.5 req/s: the plan costs $5.00 per hour, the first-party one $5.98.
    body = "search: {devices: [B200], tp: [1], pp: [1], kv_dtypes: [fp8], weight_dtypes: [fp8]}\npricing: {min_source_kind: marketplace}\n"
    plan = solve(load_workload(_workload(tmp_path, body), catalog), catalog, as_of=AS_OF)
    assert plan.cost_usd_per_hour == pytest.approx(5.00) and plan.deployments[0].price.provider == "akash"
    assert plan.first_party is not None and plan.first_party.cost_usd_per_hour == pytest.approx(5.98)
    assert plan.first_party.deployments[0].price.provider == "runpod"
    data = plan_to_dict(plan)
    assert data["deployments"][0]["price_source_kind"] == "marketplace" and data["deployments"][0]["price_age_days"] == 72
    assert any("marketplace price, not the provider's own" in t for t in data["price_warnings"])
    table = render_plan(plan, "table")
    assert "market 72d !" in table and "FIRST-PARTY $5.98/hour" in table
    # the same run on first-party prices only (the default) has nothing beside it
    first = solve(load_workload(_workload(tmp_path, body.replace("marketplace", "provider_page"), "fp.yaml"), catalog), catalog, as_of=AS_OF)
    assert first.cost_usd_per_hour == pytest.approx(5.98) and first.first_party is None


def test_json_is_reproducible_with_as_of_and_old_prices_are_flagged(tmp_path):
    # daily-llama-3.1-8b-aws plans L40S on AWS: on-demand g6e.xlarge re-read 2026-10-10 (52 days
    # before 2026-12-01), reserved_1y read 2026-08-26 (97 days: > 90, flagged)
    args = ("solve", "workloads/daily-llama-3.1-8b-aws.yaml", "--as-of", "2026-12-01", "--format", "json")
    a, b = _cli(*args), _cli(*args)
    assert a.returncode == 0, a.stderr
    assert a.stdout == b.stdout
    data = json.loads(a.stdout)
    d = data["deployments"][0]
    assert data["as_of"] == "2026-12-01" and d["price_age_days"] == 52 and d["reserved_price_age_days"] == 97
    assert any("(aws reserved_1y) was read 2026-08-26, 97 days before 2026-12-01: older than 90 days" in t for t in data["price_warnings"])


# ------------------------------------------------------------------------------------------------
# 4. the user's prices
# ------------------------------------------------------------------------------------------------


def test_a_users_price_file_overlays_the_catalog(tmp_path, catalog):
    # A negotiated DigitalOcean MI300X rate replaces the catalog's row (same device, provider,
    # kind and instance); a private 8 x H100 node at $16 per instance-hour is added ($2/GPU-h).
    prices = tmp_path / "mine.yaml"
    prices.write_text(
        "prices:\n"
        "  - {device: MI300X, provider: digitalocean, kind: on_demand, instance: gpu-mi300x1-192gb, usd_per_gpu_hour: 1.80}\n"
        "  - {device: H100-SXM, provider: mycloud, kind: on_demand, usd_per_instance_hour: 16.0, gpus_per_instance: 8, price_date: '2026-11-20'}\n"
    )
    rows = load_prices(prices, catalog.gpus, user=True)
    assert [(p.usd_per_gpu_hour, p.source_kind, p.gpus_per_instance) for p in rows] == [(1.80, "user", 1), (2.0, "user", 8)]
    mine = catalog.with_prices(rows)
    do = [p for p in mine.prices if p.device == "MI300X" and p.provider == "digitalocean"]
    # the 1-GPU droplet is replaced; the 8-GPU droplet (another instance) stays the catalog's
    assert sorted((p.instance, p.usd_per_gpu_hour, p.source_kind, p.age_days(AS_OF)) for p in do) == [
        ("gpu-mi300x1-192gb", 1.80, "user", None),
        ("gpu-mi300x8-1536gb", 2.59, "provider_page", 58),
    ]
    assert len(mine.prices) == len(catalog.prices) + 1
    # pricing.files, relative to the workload, and pricing.providers: [mycloud]: one tp=2 replica
    # takes a 2-GPU slot of one whole 8-GPU instance: $16.00 per hour, 6 GPUs idle ($12.00)
    (tmp_path / "sub").mkdir()
    body = "search: {devices: [H100-SXM], tp: [2], pp: [1], kv_dtypes: [fp8], weight_dtypes: [fp8]}\npricing: {providers: [mycloud], files: [../mine.yaml]}\n"
    path = _workload(tmp_path / "sub", body)
    plan = solve(load_workload(path, catalog), catalog, as_of=AS_OF)
    assert plan.cost_usd_per_hour == pytest.approx(16.0)
    assert plan.deployments[0].price.source_kind == "user" and plan.deployments[0].instance_gpus == 8
    assert plan.instances[0].idle_gpus == 6 and plan.instances[0].idle_cost_usd_per_hour == pytest.approx(12.0)


def test_a_users_price_row_says_which_catalog_rows_it_replaced(tmp_path, catalog, root):
    """A user's H100-SXM RunPod on-demand row with no instance, $1.00/GPU-h, replaces the
    catalog's eight (Community and Secure Cloud at 1, 2, 4 and 8 GPUs: the same device, provider,
    kind and no instance), so chat's tp=2 replicas find no 2-GPU RunPod machine and the plan
    moves to H200, $28.72/hour against $21.52 with the catalog's prices: a lower price gives a
    dearer plan. It did so without a word; the warning names the rows replaced and the cause."""
    from sizer.catalog import load_price_files

    prices = tmp_path / "p.yaml"
    prices.write_text("prices:\n  - {device: H100-SXM, provider: runpod, kind: on_demand, usd_per_gpu_hour: 1.0, price_date: 2026-11-20}\n")
    laid = load_price_files(catalog, [prices])
    (note,) = laid.price_notes
    assert note.startswith(f"{prices}: H100-SXM runpod on_demand ($1/GPU-h, 1 GPU an instance) replaces 8 catalog rows with the same device, provider, kind and instance: ")
    assert "Community Cloud (2 GPUs, $2.69/GPU-h)" in note and "Secure Cloud (8 GPUs, $3.99/GPU-h)" in note
    assert note.endswith("; at 1 GPU an instance it holds no replica of more (give gpus_per_instance, or an instance per size)")
    w = load_workload(root / "workloads" / "chat-llama-3.1-70b.yaml", laid)
    assert note in w.warnings
    assert solve(w, laid, as_of=AS_OF).cost_usd_per_hour == pytest.approx(28.72)
    # a row adding an offer replaces nothing, and says nothing
    prices.write_text("prices:\n  - {device: H100-SXM, provider: mycloud, kind: on_demand, usd_per_gpu_hour: 2.0, gpus_per_instance: 8}\n")
    assert load_price_files(catalog, [prices]).price_notes == ()


def test_a_bad_price_file_is_refused_one_line_per_bad_row_and_nothing_is_solved(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "prices:\n"
        "  - {device: H100SXM, provider: x, kind: on_demand, usd_per_gpu_hour: 2.0}\n"
        "  - {device: H100-SXM, provider: x, kind: on_demand, usd_per_gpu_hour: 2.0}\n"
        "  - {device: H100-SXM, provider: x, kind: on_demand, usd_per_gpu_hour: -1}\n"
        "  - {device: L40S, provider: x, usd_per_gpu_hour: 1.0}\n"
        "  - {device: L40S, provider: x, kind: on_demand, usd_per_instance_hour: 8.0}\n"
    )
    run = _cli("solve", "workloads/chat-llama-3.1-70b.yaml", "--prices", str(bad))
    assert run.returncode == 8 and run.stdout == ""  # the first bad row's: an unknown device
    lines = run.stderr.splitlines()
    assert len(lines) == 4 and all(line.startswith(f"error: {bad}: prices[") for line in lines)
    assert "prices[0].device: unknown device 'H100SXM' (did you mean 'H100-SXM'?)" in lines[0]
    assert "prices[2].usd_per_gpu_hour: expected a number > 0, got -1" in lines[1]
    assert "prices[3].kind: required field is missing" in lines[2]
    assert "prices[4].gpus_per_instance: usd_per_instance_hour needs the GPUs of that one instance" in lines[3]
    assert "Traceback" not in run.stderr


def test_catalog_prices_lists_shape_provenance_and_age():
    run = _cli("catalog", "prices", "--as-of", "2026-12-01")
    assert run.returncode == 0, run.stderr
    header = run.stdout.splitlines()[0].split()
    assert header == ["device", "provider", "kind", "$/GPU-h", "instance", "GPUs/inst", "source_kind", "date", "age"]
    row = next(line.split() for line in run.stdout.splitlines() if "digitalocean" in line)
    assert row == ["MI300X", "digitalocean", "on_demand", "2.59", "gpu-mi300x1-192gb", "1", "provider_page", "2026-10-07", "55d"]
    assert any(line.split()[:2] == ["H100-SXM", "crusoe"] and "1*" in line.split() for line in run.stdout.splitlines())
    data = json.loads(_cli("catalog", "prices", "--as-of", "2026-12-01", "--format", "json").stdout)
    do = next(r for r in data if r["provider"] == "digitalocean")
    for key in ("source", "quote", "notes", "source_kind", "gpus_per_instance", "gpus_per_instance_assumed", "instance", "age_days", "usd_per_instance_hour", "region"):
        assert key in do
    assert do["age_days"] == 55 and do["quote"].startswith('{ "gpu": "AMD MI300X"')


# ------------------------------------------------------------------------------------------------
# 5. break-even
# ------------------------------------------------------------------------------------------------


def _deployment(option, reserved_price=None, hourly=(1,)):
    c = option.candidates[0]
    price = (option.hourly or option.reserved).price
    return SimpleNamespace(candidate=SimpleNamespace(config=c.config, price=price), reserved_price=reserved_price, hourly_replicas=hourly)


def test_break_even_of_a_single_configuration():
    # X: 1 GPU at $2, 1 req/s; Y: 2 GPUs at $1.50, 3 req/s; demand 5 req/s.
    #   X alone: 5 x 1 x $2 = $10.   Y alone: 2 replicas x 2 GPUs x $1.50 = $6 -> the plan.
    #   Y wins while 4 GPU-hours x p < $10: p < $2.50; then X.
    x, y = _option("X", 1, 2.0, (1.0,)), _option("Y", 2, 1.5, (3.0,))
    problem = _problem([x, y], [5.0])
    plans = [single_plan(o, problem) for o in problem.options]
    solution = run_program(build_program(problem, (y,)))
    assert solution.cost_usd_per_horizon == pytest.approx(6.0)
    price, device, reserved = _break_even(problem, problem.options, plans, solution, [_deployment(y)], None)
    assert price == pytest.approx(2.50) and device == "X" and reserved is None


def test_break_even_of_a_mixed_fleet_scales_its_main_device_only():
    # X: 1 GPU $2, 1 req/s; Y: 1 GPU $3, 1 req/s; demand 10 req/s; only 6 X GPUs; two configurations:
    #   plan 6 X ($12) + 4 Y ($12) = $24; the main pool is X. Without X: 10 Y = $30.
    #   6 p + $12 = $30 -> p = $3.00.
    x, y = _option("X", 1, 2.0, (1.0,)), _option("Y", 1, 3.0, (1.0,))
    problem = _problem([x, y], [10.0], k=2, available_gpus=(("X", 6),))
    solution = _solve(problem)
    assert solution.cost_usd_per_horizon == pytest.approx(24.0)
    plans = [single_plan(o, problem) for o in problem.options]
    price, device, _ = _break_even(problem, problem.options, plans, solution, [_deployment(x), _deployment(y)], None)
    assert price == pytest.approx(3.00) and device == "Y"


def test_break_even_of_a_daily_profile_uses_the_days_cost_and_scales_reserved_too():
    # Two hours at 2 and 1 req/s. X: 1 GPU, 1 req/s, $2 by the hour or $1.20 reserved; Y: 1 GPU,
    # 1 req/s, $2.50 by the hour only.
    #   X: 1 reserved (paid both hours, $2.40) + 1 by the hour in hour 0 ($2) = $4.40 (0 reserved:
    #   $6; 2 reserved: $4.80). Y: 3 replica-hours x $2.50 = $7.50.
    #   s = 7.50 / 4.40 = 1.7045: X wins while it costs under $3.41 by the hour ($2.05 reserved).
    x = _option("X", 1, 2.0, (1.0,), reserved_usd=1.2)
    y = _option("Y", 1, 2.5, (1.0,))
    problem = _problem([x, y], [2.0, 1.0])
    plans = [single_plan(o, problem) for o in problem.options]
    assert plans[0].cost_usd_per_horizon == pytest.approx(4.40) and plans[1].cost_usd_per_horizon == pytest.approx(7.50)
    solution = run_program(build_program(problem, (x,)))
    reserved_price = x.reserved.price
    price, device, reserved = _break_even(problem, problem.options, plans, solution, [_deployment(x, reserved_price, (1, 0))], None)
    assert price == pytest.approx(2.0 * 7.5 / 4.4) and reserved == pytest.approx(1.2 * 7.5 / 4.4) and device == "Y"
    assert f"{price:.2f}" == "3.41" and f"{reserved:.2f}" == "2.05"


def test_break_even_is_printed_under_plan(tmp_path, catalog):
    # chat-llama-3.1-70b: 4 x H100-SXM tp=2 (RunPod Community $2.69/GPU-h: $21.52/hour, as the test above
    # says) against the best other device, 4 x H200-SXM tp=2 (RunPod Community $3.59, prices.yaml: $28.72).
    # The printed price is the H200 plan's cost over the H100 plan's GPUs: $28.72 / 8 = $3.59 a GPU-hour.
    plan = solve(load_workload(ROOT / "workloads" / "chat-llama-3.1-70b.yaml", catalog), catalog, as_of=AS_OF)
    alt = plan.alternatives[0]
    gpus = sum(d.gpus for d in plan.deployments)
    assert (plan.deployments[0].candidate.config.device, gpus, plan.cost_usd_per_hour) == ("H100-SXM", 8, pytest.approx(4 * 2 * 2.69))
    assert (alt.candidate.config.device, alt.gpus, alt.cost_usd_per_hour) == ("H200-SXM", 8, pytest.approx(4 * 2 * 3.59))
    assert plan.break_even_usd_per_gpu_hour == pytest.approx(4 * 2 * 3.59 / 8)
    assert plan.break_even_device == alt.candidate.config.device
    line = f"BREAK-EVEN {plan.deployments[0].candidate.config.device} wins while it costs under ${plan.break_even_usd_per_gpu_hour:,.2f}/GPU-h; then {plan.break_even_device}"
    assert line in render_plan(plan, "table")
    assert not math.isnan(plan_to_dict(plan)["break_even_usd_per_gpu_hour"])


def test_an_alternatives_instance_shape_is_printed_under_the_table_that_shows_it(root, catalog):
    # api-llama-3.1-8b's plan is RTX-4090 tp=1; its L4 alternative (tp=2) sits on AWS's 8-GPU
    # g6.48xlarge because g6.xlarge holds one GPU: that line was printed beside the plan's launch
    # line, above the table that first names L4
    plan = solve(load_workload(root / "workloads" / "api-llama-3.1-8b.yaml", catalog), catalog, as_of=AS_OF)
    notes = [a.instance_note for a in plan.alternatives if a.instance_note]
    assert notes and not any(d.instance_note for d in plan.deployments)
    text = render_plan(plan, "table")
    head, tail = text.split("\nBEST ON OTHER DEVICES\n")
    for note in notes:
        assert f"instance  {note}" in tail and note not in head
