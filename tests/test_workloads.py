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
from sizer.optimize import solve
from sizer.report import plan_to_dict, render_plan
from sizer.workload import load_workload

from .conftest import ROOT, WORKLOADS

DEPLOYMENT_KEYS = {
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
    for key in ("cost_usd_per_hour", "cost_usd_per_million_tokens", "deployments", "alternatives", "rejected"):
        assert key in data
    for d in data["deployments"]:
        assert DEPLOYMENT_KEYS <= set(d)
    for d in data["alternatives"]:
        assert DEPLOYMENT_KEYS | {"cost_usd_per_million_tokens"} <= set(d)
    for r in data["rejected"]:
        assert set(r) >= {"device", "reason"} and r["reason"]


@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: p.stem)
def test_plan_is_consistent(plans, path):
    w, plan = plans[path.stem]
    demand = w.traffic.requests_per_s
    total = 0.0
    capacity = 0.0
    for d in plan.deployments:
        e = d.candidate
        assert d.cost_usd_per_hour == pytest.approx(d.replicas * e.config.tp * e.config.pp * e.price.usd_per_gpu_hour)
        total += d.cost_usd_per_hour
        capacity += d.replicas * e.max_rate_rps
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
    assert plan.cost_usd_per_hour == pytest.approx(total)
    assert capacity >= demand * (1 - 1e-9)
    tokens_per_s = demand * w.traffic.output_tokens.mean
    assert plan.cost_usd_per_million_tokens == pytest.approx(plan.cost_usd_per_hour / 3600 / tokens_per_s * 1e6)
    # with one configuration, no alternative is cheaper than the plan
    for alt in plan.alternatives:
        assert alt.cost_usd_per_hour >= plan.cost_usd_per_hour - 1e-9
        assert alt.replicas == math.ceil(demand / alt.candidate.max_rate_rps - 1e-9)


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
