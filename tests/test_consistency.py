"""The same figure reached along two commands' paths agrees (benchmarks/consistency.py runs these
relations over every shipped workload and generated variants; each test here is one disagreement
it found, on a small case)."""

from __future__ import annotations

from datetime import date

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
