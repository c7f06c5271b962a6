"""The same figure reached along two commands' paths agrees (benchmarks/consistency.py runs these
relations over every shipped workload and generated variants; each test here is one disagreement
it found, on a small case)."""

from __future__ import annotations

from datetime import date

import pytest

from sizer.compare import compare, comparison_rows
from sizer.optimize import solve
from sizer.report import plan_to_dict
from sizer.workload import load_workload

AS_OF = date(2026, 12, 1)


def test_compare_names_the_provider_whose_gpus_the_fleet_rents(catalog):
    """Mixed pricing: A100-80GB's reserved offer is AWS's ($2.18/GPU-h a year), its on-demand one
    RunPod's ($1.39); 2 replicas at 1 req/s commit to no reserved replica, so the fleet rents from
    RunPod only. solve said `runpod`; compare's row said `aws, runpod` (every offer of the
    option, the unused reserved one included)."""
    w = load_workload(
        {
            "model": "llama-3.1-8b",
            "traffic": {"requests_per_s": 1, "prompt_tokens": {"p50": 800, "p99": 6000}, "output_tokens": {"p50": 200, "p99": 1000}},
            "slo": {"ttft_s": 1.0, "tpot_s": 0.05},
            "search": {"devices": ["A100-80GB"], "tp": [1], "pp": [1], "kv_dtypes": ["bf16"], "weight_dtypes": ["bf16"]},
            "pricing": {"kind": "mixed"},
        },
        catalog,
    )
    (d,) = plan_to_dict(solve(w, catalog, as_of=AS_OF))["deployments"]
    (row,) = comparison_rows(compare(w, catalog), as_of=AS_OF)
    assert d["reserved_replicas"] == row["reserved_replicas"] == 0
    assert d["reserved_provider"] == "aws"  # the offer was there, and not taken
    assert row["provider"] == d["provider"] == "runpod"
    assert (row["cost_usd_per_hour"], row["price_date"]) == (d["cost_usd_per_hour"], d["price_date"])


def test_the_fuzz_plan_check_sees_replicas_short_of_the_demand():
    """tests/fuzz_cases.check_plan: a plan's replicas carry its demand. A plan without size
    buckets lists one size range (`all`), and the check returned early on any range listed, so
    it checked no plan; chat's plan (4 x H100-SXM tp=2 at 3 of their 3.12 req/s) cut to 3
    replicas falls short of its 12 req/s."""
    import copy

    from tests.fuzz_cases import check_plan

    d = {"device": "H100-SXM", "tp": 2, "pp": 1, "kv_dtype": "fp8", "weight_dtype": "fp8", "size_range": "all", "replicas": 4,
         "max_rate_rps_per_replica": 3.124994, "load_rps_per_replica": 3.0, "ttft_p99_s": 1.280468, "tpot_p99_s": 0.054044}
    plan = {"workload": {"requests_per_s": 12.0, "slo": {"ttft_s": {"p99": 2.0}, "tpot_s": {"p99": 0.06}}},
            "deployments": [d], "alternatives": [], "size_ranges": [{"range": "all", "share": 1.0}]}
    assert check_plan(plan) is None
    short = copy.deepcopy(plan)
    short["deployments"][0]["replicas"] = 3
    assert "< the demand 12" in check_plan(short)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm", "llamacpp"])
def test_launch_lines_paste_into_explain_and_compare_rows_are_solves_fleets(engine, tmp_path):
    """The fuzz relations paste_launch and compare_rows (tests/fuzz_cases.py) on one small
    workload per engine: every launch line solve prints, pasted into explain with its device,
    gives the plan's KV pool, tokens, weights, --max-num-seqs, --max-model-len and the sequences
    the pool holds at the percentile context; compare's row of each device is solve's fleet there
    (replicas, GPUs, cost, provider, price and its date)."""
    import yaml

    from tests.fuzz_cases import Case, run_case

    w = {
        "model": "llama-3.1-8b",
        "engine": engine,
        "traffic": {"requests_per_s": 4, "prompt_tokens": {"p50": 800, "p99": 4000}, "output_tokens": {"p50": 200, "p99": 800}},
        "slo": {"ttft_s": 2.0, "tpot_s": 0.06},
        "search": {"devices": ["H100-SXM", "L40S", "A100-80GB"], "tp": [1, 2], "pp": [1]},
        "memory": {"shared_prefix_tokens": 200} if engine in ("vllm", "sglang") else {},
    }
    for relation, argv in (("paste_launch", [["solve", "{dir}/a.yaml", "--format", "json"]]),
                           ("compare_rows", [["solve", "{dir}/a.yaml", "--format", "json"], ["compare", "{dir}/a.yaml", "--format", "json"]])):
        case = Case(kind="relation", files={"a.yaml": yaml.safe_dump(w)}, argv=argv, relation=relation)
        folder = tmp_path / relation
        folder.mkdir()
        assert run_case(case, folder) == ("ok", ""), relation


def test_a_plan_pool_pays_for_the_idle_gpus_of_the_instances_it_alone_uses(catalog):
    """1 x H100-SXM tp=4 on AWS, whose H100-SXM comes as the 8-GPU p5.48xlarge ($6.88/GPU-h):
    the fleet rents the whole instance, $55.04/hour, as the PLAN line, compare's row and sweep's
    device cost say. solve's plan row said $27.52/hour and $0.480 per million tokens (its 4
    GPUs' share; the other 4 idle only in the INSTANCES table), where the same fleet as a best
    alternative, in compare or in sweep, costs $55.04."""
    from sizer.sweep import sweep, sweep_to_dict

    w = load_workload(
        {
            "model": "llama-3.1-8b",
            "traffic": {"requests_per_s": 10, "prompt_tokens": {"p50": 100, "p99": 300}, "output_tokens": {"p50": 300, "p99": 1500}},
            "slo": {"ttft_s": 1.0, "tpot_s": 0.05},
            "search": {"devices": ["H100-SXM"], "tp": [4], "pp": [1], "kv_dtypes": ["bf16"], "weight_dtypes": ["bf16"]},
            "pricing": {"provider": "aws"},
        },
        catalog,
    )
    plan = plan_to_dict(solve(w, catalog, as_of=AS_OF))
    (d,) = plan["deployments"]
    (i,) = plan["instances"]
    assert (d["replicas"], d["gpus"], d["instance_gpus"], i["idle_gpus"]) == (1, 4, 8, 4)
    assert d["cost_usd_per_hour"] == plan["cost_usd_per_hour"] == round(8 * d["usd_per_gpu_hour"], 6)
    assert d["cost_usd_per_million_tokens"] == plan["cost_usd_per_million_tokens"]
    (row,) = comparison_rows(compare(w, catalog), as_of=AS_OF)
    assert (row["cost_usd_per_hour"], row["cost_usd_per_million_tokens"]) == (d["cost_usd_per_hour"], d["cost_usd_per_million_tokens"])
    (point,) = sweep_to_dict(sweep(w, catalog, "requests_per_s", (10.0,)))["points"]
    assert point["device_cost_usd_per_hour"] == {"H100-SXM": d["cost_usd_per_hour"]}


def test_a_launch_lines_memory_fraction_parses_back_to_the_planned_one(tmp_path):
    """SGLang 0.4.6 sets mem_fraction_static to (gpu_mem - 13 GiB) / gpu_mem on GPUs over 80 GiB
    (sglang/srt/server_args.py __post_init__ of 0.4.6, engines.SGLangPolicy.default_fraction):
    0.93229166... on MI300X. The launch line printed 0.932292, and pasted into explain it gave a
    pool 68,431 B larger than the plan's; a vLLM utilisation given as 0.9123456 was launched as
    0.912346. The line now prints the value the plan was sized at (paste_launch relation)."""
    import yaml

    from sizer.engines import flag_number
    from tests.fuzz_cases import Case, run_case

    assert (flag_number(0.9), flag_number(0.836), flag_number(0.9123456)) == ("0.9", "0.836", "0.9123456")
    assert float(flag_number((192 * 1024 - 13 * 1024) / (192 * 1024))) == (192 * 1024 - 13 * 1024) / (192 * 1024)
    traffic = {"requests_per_s": 1, "prompt_tokens": {"p50": 800, "p99": 4000}, "output_tokens": {"p50": 200, "p99": 800}}
    for w in (
        {"model": "llama-3.1-8b", "engine": "sglang", "engine_version": "0.4.6", "traffic": traffic,
         "search": {"devices": ["MI300X"], "tp": [1], "pp": [1], "kv_dtypes": ["bf16"], "weight_dtypes": ["bf16"]}},
        {"model": "llama-3.1-8b", "traffic": traffic, "memory": {"gpu_memory_utilization": 0.9123456},
         "search": {"devices": ["H100-SXM"], "tp": [1], "pp": [1], "kv_dtypes": ["bf16"], "weight_dtypes": ["bf16"]}},
    ):
        folder = tmp_path / w["search"]["devices"][0]
        folder.mkdir()
        case = Case(kind="relation", files={"a.yaml": yaml.safe_dump(w)}, argv=[["solve", "{dir}/a.yaml", "--format", "json"]], relation="paste_launch")
        assert run_case(case, folder) == ("ok", ""), w
