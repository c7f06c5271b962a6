"""Every shipped workload solves, through the command line, and its plan is internally consistent:
costs add up, capacity covers demand, latencies at the plan's load meet the SLOs, memory adds up,
and the JSON is byte-identical run to run."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from sizer.catalog import load_catalog
from sizer.fleet import replicas_needed
from sizer.optimize import solve
from sizer.report import plan_to_dict, render_plan
from sizer.workload import load_workload

from .conftest import ROOT, WORKLOADS

DEPLOYMENT_KEYS = {
    "instance_gpus",
    "price_source_kind",
    "price_age_days",
    "device",
    "tp",
    "pp",
    "kv_dtype",
    "weight_dtype",
    "replicas",
    "gpus",
    "max_concurrency",
    "kv_bytes_per_token",
    "kv_pool_bytes_per_gpu",
    "weights_bytes_per_gpu",
    "throughput_tokens_per_s",
    "ttft_p99_s",
    "tpot_p99_s",
    "cost_usd_per_hour",
}


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sizer", *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


@pytest.fixture(scope="module")
def plans():
    catalog = load_catalog(ROOT / "catalogs")
    out = {}
    for path in WORKLOADS:
        w = load_workload(path, catalog)
        out[path.stem] = (w, solve(w, catalog))
    return out


def test_there_are_at_least_four_workloads_covering_dense_moe_and_long_context(plans):
    assert len(plans) >= 4
    models = {w.model for w, _ in plans.values()}
    assert any(m.is_moe for m in models) and any(not m.is_moe for m in models)
    assert any(w.context_tokens >= 16_000 for w, _ in plans.values())


@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: p.stem)
def test_cli_solves_every_shipped_workload(path):
    run = _cli("solve", str(path.relative_to(ROOT)), "--format", "json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["status"] == "optimal"
    for key in ("cost_usd_per_hour", "cost_usd_per_million_tokens", "deployments", "alternatives", "rejected", "as_of",
                "break_even_usd_per_gpu_hour", "break_even_device", "price_warnings", "first_party_plan"):
        assert key in data
    for d in data["deployments"]:
        assert DEPLOYMENT_KEYS <= set(d)
    for d in data["alternatives"]:
        assert DEPLOYMENT_KEYS | {"cost_usd_per_million_tokens"} <= set(d)
    for r in data["rejected"]:
        assert set(r) >= {"device", "reason"} and r["reason"]
    # issue 13: every deployment and alternative says what stands behind it, and the plan how sure it is
    for d in data["deployments"] + data["alternatives"]:
        assert {"evidence", "max_rate_rps_per_replica_p10", "max_rate_rps_per_replica_p90", "max_rate_rps_per_replica_at_p50", "confidence_factors"} <= set(d)
        assert d["evidence"]["basis"] in ("measured", "datasheet x global factors")
    assert {"confidence", "cost_usd_per_hour_p10", "cost_usd_per_hour_p90", "at_p50", "confidence_cost", "error_model"} <= set(data)


def _paid_gpus_per_replica(d) -> float:
    """GPUs one replica is billed for: the whole replica (k = tp x pp GPUs) in one instance of G,
    floor(G / k) replicas an instance, a slot of G / floor(G / k); spanning instances (a
    cross-node candidate): ceil(k / G) whole instances."""
    e, g = d.candidate, d.instance_gpus
    k = e.config.tp * e.config.pp
    if e.config.node_gpus:
        return math.ceil(k / g) * g
    return g / (g // k)


@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: p.stem)
def test_every_replica_sits_in_an_instance_that_holds_it(plans, path):
    """Issue 11: every deployment and alternative reports an integer instance_gpus >= tp x pp
    (no shipped workload allows cross-node groups), and a price read, dated and classified."""
    w, plan = plans[path.stem]
    assert not w.constraints.allow_cross_node
    data = plan_to_dict(plan)
    for d in data["deployments"] + data["alternatives"]:
        assert isinstance(d["instance_gpus"], int) and d["instance_gpus"] >= d["tp"] * d["pp"], d["device"]
        assert d["price_source_kind"] in ("provider_page", "user") and isinstance(d["price_age_days"], int)
    assert data["as_of"] and "break_even_usd_per_gpu_hour" in data and "break_even_device" in data


@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: p.stem)
def test_plan_is_consistent(plans, path):
    """Costs add up (replica-hours x GPUs x price, reserved replicas paid every hour), capacity
    covers every hour's demand (with one replica lost under N+1), the GPUs stay within what is
    available, latencies at the plan's load meet the SLOs, and memory adds up."""
    w, plan = plans[path.stem]
    demand = w.traffic.profile_rps or (w.traffic.requests_per_s,)
    hours = len(demand)
    total = 0.0
    for d in plan.deployments:
        e = d.candidate
        hourly = d.hourly_replicas or ((0,) * hours if d.reserved_replicas else (d.replicas,) * hours)
        cost = 0.0
        for h in range(hours):
            cost += hourly[h] * _paid_gpus_per_replica(d) * e.price.usd_per_gpu_hour
            if d.reserved_replicas:
                cost += d.reserved_replicas * _paid_gpus_per_replica(d) * d.reserved_price.usd_per_gpu_hour
        assert d.cost_usd_per_hour == pytest.approx(cost / hours)
        assert d.replicas == max(d.reserved_replicas + x for x in hourly)
        total += d.cost_usd_per_hour
        # the plan's load per replica is within what a replica takes, and the SLOs hold there
        assert d.load_rps_per_replica <= e.max_rate_rps * (1 + 1e-9)
        for key, bound in w.slo.ttft_s:
            if key == "p99":
                assert d.ttft_p99_s <= bound * (1 + 1e-6)
        for key, bound in w.slo.tpot_s:
            if key == "p99":
                assert d.tpot_p99_s <= bound * (1 + 1e-6)
        # memory adds up: budget = weights + buffers + activations + overhead + pool
        m = e.memory
        parts = m.weights_bytes_per_gpu + m.runtime_buffer_bytes_per_gpu + m.activation_bytes_per_gpu
        assert parts + m.runtime_overhead_bytes_per_gpu + m.kv_pool_bytes_per_gpu == pytest.approx(m.budget_bytes)
        assert m.kv_blocks_per_gpu == int(m.kv_pool_bytes_per_gpu // m.block_bytes_per_gpu)
        assert m.max_concurrency >= 1
    idle = sum(i.idle_cost_usd_per_hour for i in plan.instances)
    assert plan.cost_usd_per_hour == pytest.approx(total + idle)
    assert plan.cost_usd_per_day == pytest.approx(24 * plan.cost_usd_per_hour)
    assert plan.cost_usd_per_month == pytest.approx(plan.cost_usd_per_day * 365 / 12)
    # capacity in every hour, with any one replica lost under N+1; GPUs within availability
    for h in range(hours):
        running = [(d, d.reserved_replicas + (d.hourly_replicas[h] if d.hourly_replicas else (0 if d.reserved_replicas else d.replicas))) for d in plan.deployments]
        capacity = sum(d.candidate.max_rate_rps * n for d, n in running)
        lost = max((d.candidate.max_rate_rps for d, n in running if n), default=0.0) if w.constraints.n_plus_1 else 0.0
        assert capacity - lost >= demand[h] * (1 - 1e-9), h
        for device, available in w.constraints.available_gpus:
            assert sum(d.candidate.config.gpus * n for d, n in running if d.candidate.config.device == device) <= available
        assert sum(n for _, n in running) >= w.constraints.min_replicas
    # effective cost per token: the day's cost over the day's output tokens
    tokens_per_day = sum(demand) * 3600 * w.traffic.output_tokens.mean * 24 / hours
    assert plan.cost_usd_per_million_tokens == pytest.approx(plan.cost_usd_per_day / tokens_per_day * 1e6)
    # no alternative (a single configuration on another device) is cheaper than the plan
    for alt in plan.alternatives:
        assert alt.cost_usd_per_hour >= plan.cost_usd_per_hour - 1e-9
        assert alt.replicas == replicas_needed(max(demand), alt.candidate.max_rate_rps, w.constraints)


@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: p.stem)
def test_every_device_in_the_search_is_planned_or_explained(plans, path):
    w, plan = plans[path.stem]
    seen = {d.candidate.config.device for d in plan.deployments + plan.alternatives} | {r.device for r in plan.rejected}
    assert seen == set(w.search.devices)


def test_json_is_byte_identical_run_to_run(plans):
    catalog = load_catalog(ROOT / "catalogs")
    path = WORKLOADS[0]
    first = render_plan(plans[path.stem][1], "json")
    w = load_workload(path, catalog)
    assert render_plan(solve(w, catalog), "json") == first


def test_csv_and_table_render(plans):
    _, plan = next(iter(plans.values()))
    csv = render_plan(plan, "csv")
    assert csv.splitlines()[0].startswith("role,device,tp,pp")
    assert sum(1 for line in csv.splitlines() if line.startswith("plan,")) == len(plan.deployments)
    table = render_plan(plan, "table")
    assert "PLAN" in table and "launch    vllm serve" in table
    assert plan_to_dict(plan)["deployments"][0]["launch_command"].startswith("vllm serve ")
