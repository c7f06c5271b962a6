"""The step-time model (sizer/perf.py) against numbers worked out by hand.

Every test builds the step model under an efficiency table whose factors are round (fractions 1,
no overheads) or stated, so the arithmetic in each docstring is the whole of the prediction.
Datasheet figures are the catalog's: H100-SXM 3,350 GB/s HBM, 989.4 TFLOP/s bf16 dense, 1,978.9
fp8, 450 GB/s NVLink per direction."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sizer.efficiency import Factors, table_from_factors
from sizer.perf import Layout, build_step_model, stage_shape

IDEAL = Factors(
    hbm_bandwidth_fraction=1.0,
    expert_bandwidth_fraction=1.0,
    kv_bandwidth_fraction=1.0,
    compute_fraction=1.0,
    prefill_compute_fraction=1.0,
    attention_compute_fraction=1.0,
    link_bandwidth_fraction=1.0,
    burst_fraction=0.1,
    link_latency_s=0.0,
    step_overhead_s=0.0,
    sequence_overhead_s=0.0,
    request_overhead_s=0.0,
    prefill_layer_overhead_s=0.0,
    attention_dp_prefill_factor=1.0,
    admission_steps=0.0,
)


# Llama-3.1-8B's GEMM FLOPs per token, worked from its config.json (hidden 4,096, intermediate 14,336,
# 32 layers, 32 query / 8 KV heads of 128, vocab 128,256): a layer's projections are q 4,096 x 4,096
# + k, v 2 x 4,096 x 1,024 + o 4,096 x 4,096 + gate, up, down 3 x 4,096 x 14,336 = 218,103,808
# parameters, and its two RMSNorms 2 x 4,096; 32 layers of that plus lm_head 128,256 x 4,096 =
# 525,336,576 (the input embedding is a lookup, no FLOPs) is 7,504,920,576 parameters, 2 FLOPs each.
LLAMA_8B_GEMM_FLOPS_PER_TOKEN = 2 * (32 * (218_103_808 + 2 * 4_096) + 128_256 * 4_096)
assert LLAMA_8B_GEMM_FLOPS_PER_TOKEN == 15_009_841_152


def _step(catalog, model, device, tp=1, pp=1, wd="bf16", kv="bf16", factors=IDEAL, layout=None):
    table = table_from_factors(factors)
    row = (catalog.model(model), catalog.gpu(device), layout, wd, kv) if layout else (catalog.model(model), catalog.gpu(device), tp, pp, wd, kv)
    return build_step_model([row], efficiency=table)


def test_decode_of_one_sequence_reads_every_weight_once(catalog):
    """Llama-3.1-8B, bf16, one H100, batch 1, empty context: the step is the weight bytes over
    the HBM bandwidth. 8,030,261,248 parameters (vllm#10517 logs 14.9888 GiB with the rotary
    cache; model.py counts them) x 2 B = 16.06 GB / 3.35 TB/s = 4.794 ms."""
    step = _step(catalog, "llama-3.1-8b", "H100-SXM")
    t = float(step.decode_step_s(np.array([1.0]), np.array([0.0]))[0])
    assert t == pytest.approx(8_030_261_248 * 2 / 3.35e12, rel=2e-3)


def test_kv_reads_grow_with_batch_and_context(catalog):
    """Adding 64 sequences of 2,000 tokens adds their KV reads: Llama-3.1-8B has 32 layers x 8 KV
    heads x 128 x 2 (K and V) x 2 B = 131,072 B per token, so 64 x 2,000 x 131,072 B = 16.78 GB
    over 3.35 TB/s = 5.008 ms on top of the weights (compute stays below: 64 x 16 GFLOP ~ 1 ms)."""
    step = _step(catalog, "llama-3.1-8b", "H100-SXM")
    t1 = float(step.decode_step_s(np.array([64.0]), np.array([2000.0]))[0])
    t0 = float(step.decode_step_s(np.array([64.0]), np.array([0.0]))[0])
    assert t1 - t0 == pytest.approx(64 * 2000 * 131072 / 3.35e12, rel=1e-3)


def test_large_batch_becomes_compute_bound(catalog):
    """At 4,096 sequences the GEMMs (2 x 7.5B non-embedding params x 4,096 tokens ~ 62 TFLOP, at
    989.4 TFLOP/s: 63 ms) outlast the weight reads (4.8 ms): the step is the compute time."""
    step = _step(catalog, "llama-3.1-8b", "H100-SXM")
    s = stage_shape(catalog.model("llama-3.1-8b"), 1, 1, "bf16", "bf16")
    assert s.dense_flops_per_token == LLAMA_8B_GEMM_FLOPS_PER_TOKEN  # one GPU holds every layer and lm_head
    t = float(step.decode_step_s(np.array([4096.0]), np.array([0.0]))[0])
    assert t == pytest.approx(4096 * LLAMA_8B_GEMM_FLOPS_PER_TOKEN / 989.4e12, rel=1e-3)
    assert 60e-3 < t < 70e-3


def test_moe_decode_reads_only_the_experts_a_batch_touches(catalog):
    """Qwen3-235B-A22B: 128 experts, top-8. One token reads 8/128 = 6.25 % of the experts; 64
    tokens 1 - (120/128)^64 = 98.41 %."""
    step = _step(catalog, "qwen3-235b-a22b", "H200-SXM", tp=8, wd="fp8", kv="fp8")
    frac = step._expert_fraction(np.array([1.0, 64.0]))
    assert frac[0] == pytest.approx(8 / 128)
    assert frac[1] == pytest.approx(1 - (120 / 128) ** 64)


def test_expert_parallel_layout_spreads_the_experts_over_every_gpu(catalog):
    """DeepSeek-R1 on 8 GPUs as attention-DP 8 x EP 8 holds 1/8 of the routed experts per GPU,
    as TP 8 does; but its attention is not split (tp=1): more dense bytes per GPU."""
    model = catalog.model("deepseek-r1")
    tp8 = stage_shape(model, 8, 1, "fp8", "fp8")
    dep = stage_shape(model, 1, 1, "fp8", "fp8", 8, 8)
    assert dep.expert_weight_bytes == pytest.approx(tp8.expert_weight_bytes, rel=1e-9)
    assert dep.dense_weight_bytes > 4 * tp8.dense_weight_bytes


def test_prefill_is_gemm_flops_plus_causal_attention(catalog):
    """A 1,000-token prompt on Llama-3.1-8B, bf16, one H100: 2 x params-per-token x 1,000 FLOPs
    for the GEMMs plus causal attention 4 x 32 heads x 128 x 32 layers x 1,000^2 / 2 =
    262 GFLOP, all at 989.4 TFLOP/s."""
    step = _step(catalog, "llama-3.1-8b", "H100-SXM")
    s = stage_shape(catalog.model("llama-3.1-8b"), 1, 1, "bf16", "bf16")
    assert s.total_dense_flops_per_token == LLAMA_8B_GEMM_FLOPS_PER_TOKEN
    p = 1000.0
    attention = 4 * 32 * 128 * 32 * p * p / 2
    expected = (LLAMA_8B_GEMM_FLOPS_PER_TOKEN * p + attention) / 989.4e12
    assert float(step.prefill_s(np.array([p]))[0]) == pytest.approx(expected, rel=1e-6)
    assert attention == pytest.approx(262.144e9)


def test_prompt_gemms_run_at_their_own_fraction_of_peak(catalog):
    """prefill_compute_fraction divides the GEMM FLOPs of prompt tokens, compute_fraction those of
    a decode step: the same 1,000-token prompt as above with prompt GEMMs at 0.5 of peak takes
    2 x params-per-token x 1,000 / (989.4 TFLOP/s x 0.5) + the same 262 GFLOP of attention at
    989.4 TFLOP/s; a batch-512 decode step's GEMMs are unchanged."""
    half = Factors(**{**IDEAL.as_dict(), "prefill_compute_fraction": 0.5})
    step = _step(catalog, "llama-3.1-8b", "H100-SXM", factors=half)
    ideal = _step(catalog, "llama-3.1-8b", "H100-SXM")
    p = 1000.0
    attention = 4 * 32 * 128 * 32 * p * p / 2
    expected = (LLAMA_8B_GEMM_FLOPS_PER_TOKEN * p / 0.5 + attention) / 989.4e12
    assert float(step.prefill_s(np.array([p]))[0]) == pytest.approx(expected, rel=1e-6)
    gemm, _ = step.prefill_token_parts(np.array([p]))
    assert float(gemm[0]) == pytest.approx(LLAMA_8B_GEMM_FLOPS_PER_TOKEN / (989.4e12 * 0.5), rel=1e-9)
    b, c = np.array([512.0]), np.array([1500.0])
    assert step.decode_step_s(b, c)[0] == ideal.decode_step_s(b, c)[0]


def test_attention_dp_prompt_gemms_take_their_own_factor(catalog):
    """attention_dp_prefill_factor scales the prompt GEMMs' fraction only where attention runs
    data-parallel: DeepSeek-V3 fp8 on eight H200 as tp=1 x dp=8 (experts over ep=8) at a factor of
    0.5 puts a prompt token's GEMM seconds at exactly twice the factor-1 figure, its attention and
    communication unchanged; the same model at tp=8 (dp 1) is untouched by the factor, and so is
    a prompt prefilled alone (prefill_s) at dp=8."""
    half = Factors(**{**IDEAL.as_dict(), "attention_dp_prefill_factor": 0.5})
    dp = Layout(tp=1, dp=8, ep=8)
    tp = Layout(tp=8, ep=8)
    p = np.array([4096.0])
    g1, o1 = _step(catalog, "deepseek-v3", "H200-SXM", wd="fp8", kv="fp8", layout=dp).prefill_token_parts(p)
    g2, o2 = _step(catalog, "deepseek-v3", "H200-SXM", wd="fp8", kv="fp8", layout=dp, factors=half).prefill_token_parts(p)
    assert float(g2[0]) == pytest.approx(2 * float(g1[0]), rel=1e-12) and float(o2[0]) == pytest.approx(float(o1[0]), rel=1e-12)
    a = _step(catalog, "deepseek-v3", "H200-SXM", wd="fp8", kv="fp8", layout=tp).prefill_s(p)
    b = _step(catalog, "deepseek-v3", "H200-SXM", wd="fp8", kv="fp8", layout=tp, factors=half).prefill_s(p)
    assert float(a[0]) == float(b[0])
    # a prompt alone runs on one attention rank, with no spread over ranks to be uneven: its
    # prefill_s does not take the factor (InferenceX's B200 FP8 disaggregated DeepSeek-R1, one
    # 8k prompt: 372 ms on a tp=1 x dp=8 prefill worker, 378 ms on a tp=8 one)
    a = _step(catalog, "deepseek-v3", "H200-SXM", wd="fp8", kv="fp8", layout=dp).prefill_s(p)
    b = _step(catalog, "deepseek-v3", "H200-SXM", wd="fp8", kv="fp8", layout=dp, factors=half).prefill_s(p)
    assert float(a[0]) == float(b[0])


def test_tensor_parallel_all_reduce_over_the_link(catalog):
    """Llama-3.1-70B at tp=8, one token: 2 ring all-reduces per layer x 80 layers, each moving
    2 (8-1)/8 x 8,192 x 2 B = 28,672 B per GPU over 450 GB/s, plus 10 us latency each:
    160 x (10 us + 63.7 ns) = 1.610 ms."""
    factors = Factors(**{**IDEAL.as_dict(), "link_latency_s": 10e-6})
    step = _step(catalog, "llama-3.1-70b", "H100-SXM", tp=8, factors=factors)
    t = float(step._tp_allreduce_s(np.array([1.0]), step.layers, step.moe_layers)[0])
    assert t == pytest.approx(160 * (10e-6 + 2 * 7 / 8 * 8192 * 2 / 450e9), rel=1e-9)


def test_h100_nvl_pairs_all_reduce_over_their_nvlink_bridge(catalog):
    """H100 NVL cards are NVLink-bridged in pairs ('NVLink 600 GB/s', 300 per direction; NVIDIA's
    MLPerf configs put each TP2 replica on a bridged pair, gpu_rank_map 0,3&1,2&...): Llama-2-70B
    at tp=2, 8,192 prompt tokens in a step, no latency: 160 all-reduces of 2 (2-1)/2 x 8,192 x
    8,192 x 2 B = 134.2 MB each over 300 GB/s = 71.58 ms; at tp=4 the ring leaves the pairs and
    runs over PCIe Gen5 (64 GB/s): 160 x 1.5 x 134.2 MB / 64 GB/s = 503.3 ms. Over PCIe the tp=2
    step would take 335.5 ms, the factor that made sizer's MLPerf H100 NVL TP2 predictions
    (TPOT 104 ms measured, 284 ms predicted on HPE's DL380a at 12 queries/s per replica) twice
    too slow."""
    nvl = catalog.gpu("H100-NVL")
    assert nvl.link_for(2) == pytest.approx(300e9) and nvl.link_for(4) == pytest.approx(64e9) and nvl.link_for(1) == pytest.approx(64e9)
    tokens = np.array([8192.0])
    tp2 = _step(catalog, "llama-2-70b", "H100-NVL", tp=2)
    tp4 = _step(catalog, "llama-2-70b", "H100-NVL", tp=4)
    assert float(tp2._tp_allreduce_s(tokens, tp2.layers, tp2.moe_layers)[0]) == pytest.approx(160 * 8192 * 8192 * 2 / 300e9, rel=1e-9)
    assert float(tp4._tp_allreduce_s(tokens, tp4.layers, tp4.moe_layers)[0]) == pytest.approx(160 * 1.5 * 8192 * 8192 * 2 / 64e9, rel=1e-9)
    assert catalog.gpu("H100-SXM").link_for(2) == pytest.approx(450e9)  # no bridge: the machine's link


def test_pipeline_parallel_runs_pp_microbatches_over_every_stage(catalog):
    """pp=2 halves the layers per GPU; a batch of 2 runs as 2 microbatches of 1 through both
    stages, so the step is twice a stage's step plus one point-to-point send of a token's
    hidden state (4,096 x 2 B over 450 GB/s = 18.2 ns; no latency here)."""
    step = _step(catalog, "llama-3.1-8b", "H100-SXM", pp=2)
    stage = float(step.stage_decode_s(np.array([1.0]), np.array([0.0]))[0])
    assert float(step.decode_step_s(np.array([2.0]), np.array([0.0]))[0]) == pytest.approx(2 * stage + 4096 * 2 / 450e9, rel=1e-12)


def test_mixed_step_hides_a_few_prompt_tokens_under_the_weight_reads(catalog):
    """A memory-bound step (batch 1: 4.8 ms of weight reads, 16 GFLOP = 16 us of GEMM) takes 100
    prompt tokens' GEMMs (1.6 TFLOP, 1.6 ms) for free, but not their attention; 2,000 prompt
    tokens make it compute-bound: then the weight reads hide under the GEMMs instead."""
    step = _step(catalog, "llama-3.1-8b", "H100-SXM")
    one, zero = np.array([1.0]), np.array([0.0])
    base = float(step.mixed_parts(one, zero, zero, np.array([100.0]))[0])
    few = float(step.mixed_parts(one, zero, np.array([100.0]), np.array([100.0]))[0])
    gemm, other = step.prefill_token_parts(np.array([100.0]))
    assert few - base == pytest.approx(100 * float(other[0]), rel=1e-6)
    many = float(step.mixed_parts(one, zero, np.array([2000.0]), np.array([2000.0]))[0])
    t_w, t_g, rest = (float(v[0]) for v in step.step_parts(one, zero))
    g2, o2 = (float(v[0]) for v in step.prefill_token_parts(np.array([2000.0])))
    assert t_g + 2000 * g2 > t_w
    assert many == pytest.approx(t_g + 2000 * g2 + rest + 2000 * o2, rel=1e-9)


def test_lumpy_arrivals_make_the_mean_step_longer_than_the_fluid_one(catalog):
    """Jensen: the step is convex in its prompt tokens, so whole prompts arriving now and then
    cost more on average than the same tokens spread over every step."""
    step = _step(catalog, "llama-3.1-70b", "H100-SXM", tp=2, wd="fp8", kv="fp8")
    b, c, mp = np.array([40.0]), np.array([1500.0]), np.array([1500.0])
    fluid = float(step.mixed_step_s(b, c, np.array([4.0 * 1500]), mp)[0])
    lumpy = float(step.lumpy_step(b, c, np.array([4.0]), mp, np.array([8000.0]))[0][0])
    assert lumpy > fluid * 1.05


def test_calibrated_factors_are_read_per_device_engine_and_format(catalog):
    """The shipped table gives different factors to different engines (fitted), and every
    factor of every candidate is a finite positive number."""
    model = catalog.model("llama-3.1-70b")
    rows = [(model, catalog.gpu("H100-SXM"), 2, 1, "fp8", "fp8")] * 3
    step = build_step_model(rows, engine=["vllm", "sglang", "trtllm"])
    assert len(set(step.step_overhead_s.tolist())) == 3
    for name in ("hbm_bandwidth_fraction", "compute_fraction", "step_overhead_s", "request_overhead_s"):
        values = getattr(step, name)
        assert np.all(np.isfinite(values)) and np.all(values > 0), name
    assert np.all(step.hbm_bandwidth_fraction <= 1) and np.all(step.compute_fraction <= 1)


def test_layout_label_and_gpu_count():
    lay = Layout(tp=1, dp=8, ep=8)
    assert lay.gpus == 8 and lay.moe_group == 8
    assert lay.label() == "tp=1 dp=8 ep=8"
    assert math.isclose(Layout(tp=4, pp=2).gpus, 8)


def test_mlperf_tensorrt_builds_pay_no_eager_prefill_overhead(catalog):
    """A step carrying prompt tokens pays prefill_layer_overhead_s per layer where the engine runs
    its layers eagerly; TensorRT-LLM under an MLPerf harness (release `mlperf`) runs compiled
    (TensorRT engines; torch.compile with piecewise CUDA graphs: perf.eager_prefill), so a prompt
    alone there is exactly num_hidden_layers x that overhead faster than the same factors eager."""
    from sizer.perf import eager_prefill

    assert eager_prefill("trtllm", "mlperf-v4.1") == 0.0 and eager_prefill("trtllm", "mlperf") == 0.0
    assert eager_prefill("trtllm", "1.2.0rc6") == 1.0 and eager_prefill("vllm", "mlperf") == 1.0 and eager_prefill("sglang", "") == 1.0
    base = table_from_factors(Factors(
        hbm_bandwidth_fraction=0.8, expert_bandwidth_fraction=0.8, kv_bandwidth_fraction=0.9, compute_fraction=0.5, prefill_compute_fraction=0.5,
        attention_compute_fraction=0.4, link_bandwidth_fraction=0.8, burst_fraction=0.1, link_latency_s=1e-5, step_overhead_s=2e-3,
        sequence_overhead_s=5e-6, request_overhead_s=0.05, prefill_layer_overhead_s=4e-4, admission_steps=1.0, attention_dp_prefill_factor=1.0,
    ))
    row = [(catalog.model("llama-3.1-8b"), catalog.gpu("H100-SXM"), 1, 1, "fp8", "fp8")]
    eager = build_step_model(row, engine="trtllm", efficiency=base, engine_version="1.2.0")
    compiled = build_step_model(row, engine="trtllm", efficiency=base, engine_version="mlperf-v5.0")
    p = np.array([1000.0])
    assert eager.prefill_s(p)[0] - compiled.prefill_s(p)[0] == pytest.approx(32 * 4e-4, rel=1e-9)
    one, ctx = np.array([8.0]), np.array([1500.0])
    assert eager.mixed_parts(one, ctx, p, p)[0] - compiled.mixed_parts(one, ctx, p, p)[0] == pytest.approx(32 * 4e-4, rel=1e-9)
    # decode steps replay CUDA graphs under either: no difference
    assert eager.decode_step_s(one, ctx)[0] == compiled.decode_step_s(one, ctx)[0]


def test_a_step_carrying_a_prompt_reads_the_experts_the_prompt_picks(catalog):
    """Mixtral-8x7B (8 experts, top-2) on one H100, fp8: one decoding sequence alone reads 2/8 of
    each layer's routed experts; a step that also carries a 1,000-token prompt reads the experts
    any of its 1,001 tokens picks, 1 - (6/8)^1001 (all of them, to 1e-125), as the prompt alone
    does (prefill_s). The weight reads of the step are then the dense bytes plus every expert's,
    over the bandwidths: the decode step's expert term x 4. Under the old rule (the decoding
    batch's experts only) a prompt mixed into one sequence's step was predicted below the same
    prompt's prefill alone, and 7 of 2,109 shipped rows' TTFT below its own no-queue floor."""
    step = _step(catalog, "mixtral-8x7b", "H100-SXM", wd="fp8", kv="fp8")
    one, none, prompt = np.array([1.0]), np.array([0.0]), np.array([1000.0])
    t_w, _, _ = step.step_parts(one, none)
    assert step.weights_with_prompt_s(one, none)[0] == pytest.approx(t_w[0], rel=1e-12)
    dense = float(step.dense_weight_bytes[0] / step._dense_bw[0])
    expert_all = float(step.expert_weight_bytes[0] / step._expert_bw[0])
    assert t_w[0] == pytest.approx(dense + expert_all * 2 / 8, rel=1e-9)
    assert step.weights_with_prompt_s(one, prompt)[0] == pytest.approx(dense + expert_all * (1 - 0.75**1001), rel=1e-9)
    assert expert_all * 0.75 > 0.1 * dense  # the experts are most of Mixtral's bytes: the difference is not a rounding
    # the step with the prompt is no faster than the prompt alone
    assert step.mixed_parts(one, none, prompt, prompt)[0] >= step.prefill_s(prompt)[0]


def test_lumpy_steps_prompt_share_follows_the_step_before_it(catalog):
    """Prompts arrive in time, so a step carries one with a probability that depends on how long
    the step before it lasted: a step with prompts (f1) draws the next with q1 = 1 - exp(-rate f1),
    one without (f0) with q0 = 1 - exp(-rate f0), and the share of steps with prompts is the
    two-state chain's q0 / (q0 + 1 - q1). Llama-3.1-8B on one H100 (ideal factors), 32 sequences of
    1,000 tokens, prompts of 1,000 tokens arriving at 40/s, budget 8,192: checked against the step
    process itself (each step carries the prompts that arrived during the one before; 1,000,000
    steps, seed 1): a mean step of 11.99 ms with prompts in 33.7 % of steps (200,000 here). The share at the mean step,
    1 - exp(-rate t) (the rule before 2026-12-04), put prompts in 37 % of steps and the mean step
    3.1 % short (11.62 ms); the chain, 34.8 % and 11.88 ms, is within 1 %."""
    step = _step(catalog, "llama-3.1-8b", "H100-SXM")
    b, c, mp, budget, rate = np.array([32.0]), np.array([1000.0]), 1000.0, 8192.0, 40.0
    t, p, f0, f1 = (float(a[0]) for a in step.lumpy_step(b, c, np.array([rate]), np.array([mp]), np.array([budget])))
    q0, q1 = 1 - math.exp(-rate * f0), 1 - math.exp(-rate * f1)
    assert p == pytest.approx(q0 / (q0 + 1 - q1), rel=1e-9) and t == pytest.approx((1 - p) * f0 + p * f1, rel=1e-9)
    # the step process: n prompts of 1,000 tokens in a step (never beyond the budget here)
    f_n = step.mixed_parts(np.full(9, 32.0), np.full(9, 1000.0), np.minimum(np.arange(9) * mp, budget), np.full(9, mp))
    rng = np.random.default_rng(1)
    d, total, with_prompts, steps = float(f_n[0]), 0.0, 0, 200_000
    for _ in range(steps):
        n = min(int(rng.poisson(rate * d)), 8)
        d = float(f_n[n])
        total += d
        with_prompts += n > 0
    assert total / steps == pytest.approx(11.99e-3, rel=0.01) and with_prompts / steps == pytest.approx(0.337, abs=0.005)
    assert t == pytest.approx(11.99e-3, rel=0.015) and p == pytest.approx(0.337, abs=0.02)


def test_lumpy_step_is_its_fixed_point_near_a_replicas_capacity(catalog):
    """Prompts longer than the step's token budget (16,000 tokens against 2,048) fill every step
    that carries one: p = x / budget and X1 = budget, so the fixed point is linear,
    t = f(0) + (rate t E[P] / budget) (f(budget) - f(0)), i.e. t = f(0) / (1 - rate E[P]
    (f(budget) - f(0)) / budget). Llama-3.1-8B on one H100 (ideal factors), 32 sequences of 1,000
    tokens: f(0) = 6.046 ms and f(2,048) = 41.49 ms; at the rate where the denominator is 0.2
    (2.889 prompts/s) the step is 5 x f(0) = 30.23 ms. Ten damped iterations from the fluid step
    (16.9 ms), the method before 2026-12-03, stopped at 25.6 ms, 15 % short."""
    step = _step(catalog, "llama-3.1-8b", "H100-SXM")
    b, c, mp, budget = np.array([32.0]), np.array([1000.0]), np.array([16000.0]), np.array([2048.0])
    f0 = float(step.mixed_parts(b, c, np.array([0.0]), mp)[0])
    f_budget = float(step.mixed_parts(b, c, budget, mp)[0])
    assert f0 == pytest.approx(6.046e-3, rel=1e-3) and f_budget == pytest.approx(41.49e-3, rel=1e-3)
    for share in (0.5, 0.2):
        rate = (1 - share) * 2048.0 / (16000.0 * (f_budget - f0))
        t, p, g0, g1 = step.lumpy_step(b, c, np.array([rate]), mp, budget)
        assert float(t[0]) == pytest.approx(f0 / share, rel=1e-9)
        assert float(p[0]) == pytest.approx(rate * float(t[0]) * 16000.0 / 2048.0, rel=1e-9) and float(g1[0]) == pytest.approx(f_budget, rel=1e-12)
    # past the prompt server's capacity (the fluid step saturates) the step is infinite
    rate = 0.9 * 2048.0 / (16000.0 * (f_budget - f0))
    assert not np.isfinite(step.lumpy_step(b, c, np.array([rate]), mp, budget)[0][0])
