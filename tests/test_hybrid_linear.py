"""Gated DeltaNet ("linear_attention") layers: Qwen3-Next and Qwen3.5 keep a fixed recurrent state
per sequence in 3 of every 4 layers and a KV cache in the rest. Parameters, state sizes, and the
two engines' pools, each checked against a figure worked out by hand from the engine's source or
read in a public log (sources named per test)."""

from __future__ import annotations

import pytest

from sizer.engines import EngineSettings, SglangPolicy, VllmPolicy
from sizer.explain import engine_log_lines, explain_config
from sizer.memory import EngineKvReport, KvFormat, linear_state_bytes_per_layer, paged_breakdown, stage_kv
from sizer.model import arch_from_config
from sizer.perf import stage_shape
from sizer.units import GIB

# Qwen3-Next-80B-A3B's architecture (Qwen/Qwen3-Coder-Next config.json, the same network): 48
# layers, every 4th full attention (full_attention_interval), the others Gated DeltaNet
QWEN3_NEXT = {
    "model_type": "qwen3_next",
    "hidden_size": 2048,
    "num_hidden_layers": 48,
    "vocab_size": 151936,
    "head_dim": 256,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "num_experts": 512,
    "num_experts_per_tok": 10,
    "intermediate_size": 5120,
    "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512,
    "linear_num_key_heads": 16,
    "linear_key_head_dim": 128,
    "linear_num_value_heads": 32,
    "linear_value_head_dim": 128,
    "linear_conv_kernel_dim": 4,
    "full_attention_interval": 4,
    "tie_word_embeddings": False,
    "max_position_embeddings": 262144,
    "torch_dtype": "bfloat16",
}


@pytest.fixture(scope="module")
def qwen3_next():
    return arch_from_config(QWEN3_NEXT, name="qwen3-next-80b-a3b", source="test")


@pytest.fixture(scope="module")
def qwen35(catalog):
    return catalog.model("qwen3.5-397b-a17b")


def test_layers_are_read_from_layer_types_or_the_interval(qwen3_next, qwen35):
    assert (qwen35.num_linear_layers, qwen35.num_kv_layers) == (45, 15)
    assert qwen35.layer_types[3] == "full" and qwen35.layer_types[0] == "linear"
    assert (qwen3_next.num_linear_layers, qwen3_next.num_kv_layers) == (36, 12)
    assert [i for i, t in enumerate(qwen3_next.layer_types) if t == "full"][:3] == [3, 7, 11]
    assert not any("linear" in w or "attn_output_gate" in w for w in qwen35.warnings)


def test_gated_deltanet_parameters_add_up_to_the_published_total(qwen3_next):
    """Qwen/Qwen3-Coder-Next's safetensors hold 79,674,391,296 parameters (MTP layer excluded), as a
    public parameter-count test of this config quotes the Hub's figure. By hand, per Gated DeltaNet
    layer: in_proj_qkvz 2048 x (2 x 2048 + 2 x 4096) + in_proj_ba 2048 x 64 + out_proj 4096 x 2048
    = 33,685,504, conv1d 8192 x 4, A_log and dt_bias 32 each, the gated norm 128; per full layer
    q and its output gate 2048 x 8192, k and v 2048 x 512 each, o 4096 x 2048; per layer 512
    experts x 3 x 2048 x 512, the shared expert 3 x 2048 x 512 and its gate 2048, the router
    2048 x 512; embeddings and the untied lm_head 151,936 x 2048 each."""
    assert qwen3_next.total_params() == 79_674_391_296
    assert qwen3_next.layer_params(0)["attention"] == 2048 * (2 * 2048 + 2 * 4096) + 2048 * 64 + 4096 * 2048
    assert qwen3_next.layer_params(3)["attention"] == 2048 * 8192 + 4096 * 2048


def test_state_per_sequence_is_sglangs_figure(qwen35, qwen3_next):
    """SGLang's mamba_cache_per_req (configs/mamba_utils.py, 0.5.12.post1), worked by hand: per
    layer the convolution keeps (kernel - 1) x (2 x 16 x 128 + V x 128) / tp values in bf16 and the
    recurrent state V / tp x 128 x 128 in fp32 (mamba_ssm_dtype). Qwen3.5-397B (V = 64) at TP 4:
    45 x (18,432 + 1,048,576) = 48,015,360 B; Qwen3-Next (V = 32) at TP 4: 36 x (12,288 + 524,288)
    = 19,316,736 B."""
    assert 45 * linear_state_bytes_per_layer(qwen35, 4) == 48_015_360
    assert 36 * linear_state_bytes_per_layer(qwen3_next, 4, "fp32") == 19_316_736
    (kvs,) = stage_kv(qwen35, KvFormat.of("bf16"), 4, 1)
    assert (kvs.full_layers, kvs.linear_layers, kvs.bytes_per_token) == (15, 45, 15 * 2 * 256 * 2)  # one KV head a GPU at TP 4
    assert kvs.state_bytes_per_sequence == 48_015_360


def test_sglang_state_pool_takes_its_share_before_the_kv_pool():
    """sglang 0.5.12.post1 model_runner_kv_cache_mixin.py: with the radix cache on, the state slots
    take r / (1 + r) (r = 0.9) of what the static fraction leaves after the weights, the KV pool the
    rest. AMD's Qwen3.5-397B-A17B-FP8 run at TP 4 on MI355X (ajith-sirra-amd/InferenceMAX_Rocm_Team@
    598828615e7701f3f4f8ac5b1da2dbb49fe11460 results/0603_sa/qwen3.5-fp8-mi355x-sglang-agentic-hicache/
    ...conc16_offloadhicache...amds_05/server.log) logs "Mamba Cache is allocated. max_mamba_cache_size:
    1368" and "KV Cache is allocated. ... #tokens: 4756731, K size: 34.02 GB" (GiB). Its figures imply
    129.2195 GiB left after the weights; the rule on that gives both numbers."""
    settings = EngineSettings(engine="sglang", version="0.5.12", memory_fraction=0.8, block_size_tokens=1, max_num_seqs=4096, max_num_batched_tokens=16384, max_model_len=262144)
    model = arch_from_config(
        {**QWEN3_NEXT, "num_hidden_layers": 60, "linear_num_value_heads": 64, "hidden_size": 4096, "num_attention_heads": 32, "mamba_ssm_dtype": "float32"},
        name="qwen3.5-shape",
        source="test",
    )
    rest = 129.2195 * GIB
    slots, state_bytes, cap, conv = SglangPolicy().state_pool(model, 4, rest, settings, 45)
    assert slots == 1368 and cap == 1368 // 3
    assert conv / GIB == pytest.approx(1368 * 45 * 18_432 / GIB)
    assert int((rest - state_bytes) // 15_360) == pytest.approx(4_756_731, abs=2)
    # up to 0.5.3 the radix cache was off for these models: the slots are the running cap, else 512
    old = SglangPolicy().state_pool(model, 4, rest, _with(settings, version="0.5.3"), 45)
    assert old[0] == 512 and old[2] == 512


def _with(settings: EngineSettings, **kw) -> EngineSettings:
    from dataclasses import replace

    return replace(settings, **kw)


def test_sglang_pool_on_mi355x_within_one_percent_of_its_log(catalog, qwen35):
    """The whole rule from sizer's own start-up memory: the same log's 1,368 slots and 4,756,731 KV
    tokens. sizer's free memory at start is 0.87 GiB above the log's "Load weight begin. avail
    mem=278.29 GB" (its 8.82 GiB at TP 4 is the "Init torch distributed ends" figure; something
    takes 0.87 GiB between the two lines), which puts both 0.6 % over."""
    m = explain_config(
        qwen35, catalog.gpu("MI355X"), tp=4, pp=1, kv_dtype="bf16", weight_dtype="fp8", context_tokens=9216,
        gpu_memory_utilization=0.8, engine="sglang", engine_version="0.5.12", max_model_len=262144,
    ).memory
    assert m.weights_bytes_per_gpu / GIB == pytest.approx(93.35, rel=0.003)  # "Load weight end ... mem usage=93.35 GB"
    assert m.state_slots / 1368 - 1 == pytest.approx(0.0, abs=0.01)
    assert m.engine_kv_tokens / 4_756_731 - 1 == pytest.approx(0.0, abs=0.01)
    assert m.running_cap == m.state_slots // 3 and m.max_concurrency <= m.running_cap
    lines = engine_log_lines(m, "sglang", "0.5.12")
    assert any(x.startswith(f"Mamba Cache is allocated. max_mamba_cache_size: {m.state_slots}, conv_state size: 1.06 GB") for x in lines)


def test_vllm_block_covers_one_layers_state(qwen3_next):
    """vLLM sizes the attention block so one layer's page holds one sequence's state: the smallest
    multiple of 16 tokens with block x (per-token KV bytes of a layer) >= the state. vLLM's own
    comment gives 544 tokens for Qwen3-Next at its defaults (TP 1, bf16 KV and state): 16 x
    ceil((3 x 8192 x 2 + 32 x 128 x 128 x 2) / (16 x 2 x 2 x 256 x 2)) = 16 x ceil(1,097,728 / 32,768)
    = 544. vllm#26646 (Qwen3-Next at TP 2, FP8 KV, 0.11): 16 x ceil(548,864 / 8,192) = 1,072."""
    vllm = VllmPolicy()
    assert vllm.hybrid_block_tokens(qwen3_next, KvFormat.of("bf16"), 1, "0.19", 16) == 544
    assert vllm.hybrid_block_tokens(qwen3_next, KvFormat.of("fp8"), 2, "0.11", 16) == 1072
    # its 1,056 for Qwen3.5 of 32 value heads: from 0.17 the state in the config's float32,
    # 16 x ceil((3 x 8192 x 2 + 32 x 128 x 128 x 4) / 32,768) = 16 x 66; before, 16-bit: 544
    qwen35_small = arch_from_config({**QWEN3_NEXT, "model_type": "qwen3_5_moe_text", "mamba_ssm_dtype": "float32"}, name="q", source="test")
    assert vllm.hybrid_block_tokens(qwen35_small, KvFormat.of("bf16"), 1, "0.19", 16) == 1056
    assert vllm.hybrid_block_tokens(qwen35_small, KvFormat.of("bf16"), 1, "0.16", 16) == 544


def test_vllm_hybrid_pool_reports_as_its_log(qwen3_next):
    """vllm#26646's startup lines: "GPU KV cache size: 90,048 tokens" and "Maximum concurrency for
    215,040 tokens per request: 1.66x" from 339 blocks of 4 groups of 12 layers (12 full attention,
    36 Gated DeltaNet): tokens = 339 // 4 x 1,072 (kv_cache_utils.py, <= 0.20); concurrency = 339 /
    (ceil(215,040 / 1,072) + 3) = 339 / 204 (one state block in each of the 3 Gated DeltaNet groups)."""
    vllm = VllmPolicy()
    settings = EngineSettings(engine="vllm", version="0.11", memory_fraction=0.9, block_size_tokens=16, max_num_seqs=256, max_num_batched_tokens=8192, max_model_len=215040)
    (kvs,) = vllm.stage_kv(qwen3_next, KvFormat.of("fp8"), 2, 1, settings)
    page = 1072 * 512  # 1,072 tokens x one KV head x 256 x (K + V) x 1 B
    assert kvs.state_bytes_per_layer == page  # the state's page, padded to the attention page
    m = paged_breakdown(
        qwen3_next, engine="vllm", engine_version="0.11", stage=0, kv=kvs, kv_format=KvFormat.of("fp8"),
        usable_memory_bytes=80 * GIB, memory_fraction=0.9, memory_fraction_name="gpu_memory_utilization", budget_bytes=72 * GIB,
        budget_rule="", weights_bytes=0.0, buffer_bytes=0.0, activation_bytes=0.0, overhead_bytes=0.0,
        pool_bytes=339.5 * 12 * page, block_size_tokens=1072, context_tokens=8192, max_model_len=215040,
        hybrid_groups=EngineKvReport(hybrid=True, tokens_rule="blocks_per_group"),
    )
    assert m.engine_gpu_blocks == 339 and m.engine_kv_groups == 4
    assert m.engine_kv_tokens == 90_048
    assert round(m.engine_max_concurrency, 2) == 1.66
    assert m.max_concurrency == 339 // (8 + 3)  # 8 blocks of 1,072 tokens and 3 state blocks a sequence


def test_step_time_reads_each_sequences_state(qwen35):
    """Decode reads and writes each running sequence's state once a step, on top of the 15 attention
    layers' KV; Gated DeltaNet layers add no attention over the context."""
    s = stage_shape(qwen35, 4, 1, "fp8", "fp8")
    assert (s.attention_layers_full, s.linear_layers) == (15, 45)
    assert s.state_bytes_per_sequence == 48_015_360
    assert s.linear_flops_per_token == 45 * 8 * 128 * 128 * 64 / 4


def test_inferencex_qwen35_rows_run_as_their_scripts_launched(catalog):
    """InferenceX's Qwen3.5 SGLang scripts (measurements.qwen35_script_flags, each read at the last
    commit before the run): --disable-radix-cache everywhere, the FP8 and FP4 ones --mamba-ssm-dtype
    bfloat16, so the row's model keeps its recurrent state in 16 bits (half the config's float32).
    A run of 2026-03-20 labelled FP8 B200 TP 4 could only be the MTP config of that day, and B300
    runs before 2026-04-15 predate every B300 config: both are refused with the reason."""
    from sizer.measurements import Skipped, harness_flags, resolve, shipped_rows

    rows = [r for r in shipped_rows(catalog.root / "measurements") if r.model_id.lower().startswith("qwen/qwen3.5")]
    resolved = {r.row_id: resolve(r, catalog) for r in rows}
    fp8 = next(r for r in rows if r.precision == "fp8" and r.system == "b200_sxm" and r.tp == 8 and not isinstance(resolved[r.row_id], Skipped))
    flags = harness_flags(fp8)
    assert flags["disable_radix_cache"] and flags["mamba_ssm_dtype"] == "bf16" and flags["kv_dtype"] == "fp8"
    assert resolved[fp8.row_id].model.linear_state_dtype == "bf16"
    reasons = [x.reason for x in resolved.values() if isinstance(x, Skipped)]
    assert any("MTP" in x for x in reasons) and any("before InferenceX had any Qwen3.5 B300 config" in x for x in reasons)
    assert sum(not isinstance(x, Skipped) for x in resolved.values()) > 100


def test_sglang_plans_turn_the_radix_cache_off_so_every_state_slot_runs(catalog, qwen35, tmp_path):
    """With its radix cache on (SGLang's default) a Gated DeltaNet model's state slots take 0.9 / 1.9
    of the pool and at most a third of them run: for Qwen3.5-397B on MI355X at TP 4 (the log's
    settings) 458 running requests at most. `--disable-radix-cache --max-running-requests N` gives
    the states N slots and the KV pool the rest (sglang 0.5.12 handle_max_mamba_cache), so a plan
    launched so holds rest / (KV + state) sequences; sizer's SGLang launch line for such a model
    says so, unless the workload shares a prompt prefix (which the radix cache serves)."""
    from sizer.engines import EngineOverrides, SglangPolicy
    from sizer.units import GIB as _GIB

    mi355x = catalog.gpu("MI355X")
    common = dict(tp=4, pp=1, kv_dtype="bf16", weight_dtype="fp8", context_tokens=9216, gpu_memory_utilization=0.8, engine="sglang", engine_version="0.5.12", max_model_len=262144)
    on = explain_config(qwen35, mi355x, **common).memory
    off16 = explain_config(qwen35, mi355x, max_num_seqs=16, radix_cache=False, **common).memory
    rest = on.kv_pool_bytes_per_gpu + on.state_pool_bytes_per_gpu
    per = 48_015_360
    assert (off16.state_slots, off16.running_cap) == (16, 16)
    assert off16.kv_pool_bytes_per_gpu == pytest.approx(rest - 16 * per)
    # the plan's own line: no cap given, the states counted per running sequence in one pool
    policy = SglangPolicy()
    settings = policy.settings(mi355x, qwen35, 4, version="0.5.12", overrides=EngineOverrides(memory_fraction=0.8, radix_cache=False), max_model_len=262144)
    m = policy.breakdown(qwen35, mi355x, tp=4, pp=1, weight_dtype="fp8", kv=KvFormat.of("bf16"), settings=settings, context_tokens=9216)
    assert m.state_slots == 0 and m.kv_pool_bytes_per_gpu == pytest.approx(rest)
    assert m.max_concurrency == int(rest // (9216 * 15_360 + per)) > on.max_concurrency
    assert "--disable-radix-cache" in policy.launch_command(qwen35, tp=4, pp=1, kv=KvFormat.of("bf16"), weight_dtype="fp8", settings=settings, max_num_seqs=m.max_concurrency)
    # explain's line with the flag and no cap caps the running requests at what the pool holds:
    # SGLang would otherwise make a state slot for each of its default 4,096
    x = explain_config(qwen35, mi355x, radix_cache=False, **common)
    assert f"--max-running-requests {m.max_concurrency} " in x.launch_command and "--disable-radix-cache" in x.launch_command
    assert rest / _GIB == pytest.approx(129.9, abs=0.1)  # 0.6 % above the log's 129.2 GiB (test above)

    import yaml

    from sizer.optimize import solve
    from sizer.workload import load_workload

    for shared, expect in ((0, True), (2000, False)):
        spec = {"model": "qwen3.5-397b-a17b", "engine": "sglang", "traffic": {"requests_per_s": 2, "prompt_tokens": 2000, "output_tokens": 300},
                "search": {"devices": ["H200-SXM"], "tp": [8]}}
        if shared:
            spec["memory"] = {"shared_prefix_tokens": shared}
        path = tmp_path / f"w{shared}.yaml"
        path.write_text(yaml.safe_dump(spec))
        plan = solve(load_workload(path, catalog), catalog)
        assert ("--disable-radix-cache" in plan.deployments[0].launch_command) is expect, shared


def test_disable_radix_cache_is_an_sglang_flag(tmp_path):
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-m", "sizer", "explain", "--model", "qwen3.5-397b-a17b", "--device", "H200-SXM", "--tp", "8", "--disable-radix-cache"],
        capture_output=True, text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "--disable-radix-cache is SGLang's flag" in run.stderr
