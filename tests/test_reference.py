"""The first latency model against published measurements: offline output throughput of
TensorRT-LLM's `trtllm-bench` (max load, synthetic fixed ISL/OSL, FP8 weights and KV, free-memory
fraction 0.95), from NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md
@00f37686aa854010d68bcbd0f4ab000221541ca6 (copied in the project's ../shared/reference/throughput.yaml).

These rows were looked at while choosing the catalog's first-order efficiency factors, so this is
a sanity bound (every row within -40 % / +40 %, the median within 15 %), not an independent score.
"""

from __future__ import annotations

import statistics

import pytest

from sizer.candidates import evaluate_candidates
from sizer.workload import load_workload

ROWS = [
    # model, device, tp, isl, osl, measured output tokens/s
    ("llama-3.1-8b", "H100-SXM", 1, 128, 128, 28312),
    ("llama-3.1-8b", "H100-SXM", 1, 1000, 1000, 15220),
    ("llama-3.1-8b", "H100-SXM", 1, 2048, 2048, 9305),
    ("llama-3.1-8b", "H200-SXM", 1, 1000, 1000, 17744),
    ("llama-3.1-8b", "H200-SXM", 1, 20000, 2000, 1804),
    ("llama-3.1-70b", "H100-SXM", 2, 128, 128, 6378),  # Llama-3.3-70B: same architecture as 3.1-70B
    ("llama-3.1-70b", "H100-SXM", 2, 1000, 1000, 4205),
    ("llama-3.1-70b", "H200-SXM", 1, 1000, 1000, 2909),
    ("llama-3.1-70b", "H200-SXM", 1, 2048, 2048, 2003),
    ("llama-3.1-405b", "H100-SXM", 8, 1000, 1000, 2919),
    ("llama-3.1-405b", "H200-SXM", 8, 1000, 1000, 3330),
    ("qwen3-235b-a22b", "H100-SXM", 8, 1000, 1000, 14898),
    ("qwen3-235b-a22b", "H200-SXM", 8, 2048, 2048, 16672),
]


def _predicted(catalog, tmp_path, model, device, tp, isl, osl):
    path = tmp_path / f"{model}-{device}-{tp}-{isl}-{osl}.yaml"
    path.write_text(
        f"model: {model}\n"
        f"traffic: {{requests_per_s: 1, prompt_tokens: {isl}, output_tokens: {osl}}}\n"
        "memory: {gpu_memory_utilization: 0.95, max_num_seqs: 2048, max_num_batched_tokens: 8192}\n"
        f"search: {{devices: [{device}], tp: [{tp}], pp: [1], kv_dtypes: [fp8], weight_dtypes: [fp8]}}\n"
    )
    (e,) = evaluate_candidates(load_workload(path, catalog), catalog)
    assert e.feasible, e.reason
    return e.max_rate_rps * osl


def test_offline_throughput_within_bounds(catalog, tmp_path):
    ratios = []
    for model, device, tp, isl, osl, measured in ROWS:
        ratio = _predicted(catalog, tmp_path, model, device, tp, isl, osl) / measured
        assert 0.6 <= ratio <= 1.4, (model, device, tp, isl, osl, ratio)
        ratios.append(ratio)
    assert statistics.median(ratios) == pytest.approx(1.0, abs=0.15)
