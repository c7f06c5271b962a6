"""`sizer explain` reproduces the seeds' per-token and per-sequence numbers and its own chain adds up."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sizer.explain import explain_config
from sizer.memory import max_concurrent_sequences
from sizer.units import GIB, KIB, MIB

from .conftest import ROOT


def _explain(*args: str) -> dict:
    run = subprocess.run(
        [sys.executable, "-m", "sizer", "explain", *args, "--format", "json"], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_seed004_llama2_70b_on_four_gpus():
    # seed 004: Llama-2-70B 320 KiB per token (327,680 B); 1.25 GiB per 4,096-token sequence.
    # With tp=4 each GPU holds 8 / 4 = 2 KV heads: 80 KiB per token, 320 MiB per sequence.
    x = _explain("--model", "llama-2-70b", "--device", "A100-80GB", "--tp", "4", "--kv-dtype", "fp16", "--context-tokens", "4096")
    assert x["kv_bytes_per_token"] == 327_680
    assert x["kv_bytes_per_token_per_gpu"] == 81_920
    assert x["kv_bytes_per_token"] * 4096 == 1.25 * GIB
    assert x["blocks_per_sequence"] == 256
    blocks = x["kv_pool_bytes_per_gpu"] // (16 * 81_920)
    assert x["kv_blocks_per_gpu"] == blocks
    assert x["kv_tokens"] == blocks * 16
    assert x["max_concurrency"] == blocks // 256
    # the seed's 160 GB pool over four GPUs is 40 GiB per GPU: 128 sequences
    assert max_concurrent_sequences(40 * GIB, 256 * 16 * 81_920) == 128


def test_kv_dtype_default_is_the_engines_own():
    # vLLM's, SGLang's and TensorRT-LLM's default KV cache dtype is "auto", the checkpoint's own:
    # llama-2-70b's config.json has torch_dtype float16, so its default cache is fp16 (it was
    # bf16 whatever the checkpoint). llama.cpp's --cache-type-k/-v default is f16.
    for engine in ("vllm", "sglang", "trtllm"):
        x = _explain("--model", "llama-2-70b", "--device", "A100-80GB", "--tp", "4", "--engine", engine)
        assert x["kv_dtype"] == "fp16", engine
    assert _explain("--model", "llama-3.1-8b", "--device", "H100-SXM", "--engine", "llamacpp")["kv_dtype"] == "f16"


def test_seed000_shape_on_llama_3_1_8b():
    # seed 000: 128 KiB per token; 512 MiB for a 4,096-token sequence
    x = _explain("--model", "llama-3.1-8b", "--device", "H100-SXM", "--context-tokens", "4096")
    assert x["kv_bytes_per_token"] == x["kv_bytes_per_token_per_gpu"] == 128 * KIB
    assert x["blocks_per_sequence"] * 16 * x["kv_bytes_per_token_per_gpu"] == 512 * MIB
    budget = x["usable_memory_bytes"] * 0.9
    parts = x["weights_bytes_per_gpu"] + x["runtime_buffer_bytes_per_gpu"] + x["activation_bytes_per_gpu"] + x["runtime_overhead_bytes_per_gpu"]
    assert x["kv_pool_bytes_per_gpu"] == pytest.approx(budget - parts, abs=2)


def test_fp8_kv_doubles_blocks(catalog):
    m, gpu = catalog.model("llama-3.1-70b"), catalog.gpu("H100-SXM")
    bf16 = explain_config(m, gpu, tp=4, pp=1, kv_dtype="bf16", weight_dtype="bf16", context_tokens=8192)
    fp8 = explain_config(m, gpu, tp=4, pp=1, kv_dtype="fp8", weight_dtype="bf16", context_tokens=8192)
    assert fp8.memory.kv_pool_bytes_per_gpu == bf16.memory.kv_pool_bytes_per_gpu
    assert fp8.memory.kv_blocks_per_gpu in (2 * bf16.memory.kv_blocks_per_gpu, 2 * bf16.memory.kv_blocks_per_gpu + 1)


def test_more_tp_means_fewer_weight_bytes_per_gpu(catalog):
    m, gpu = catalog.model("llama-3.1-70b"), catalog.gpu("H100-SXM")
    w = [explain_config(m, gpu, tp=tp, pp=1, kv_dtype="bf16").memory.weights_bytes_per_gpu for tp in (1, 2, 4, 8)]
    assert w == sorted(w, reverse=True)


def test_sliding_window_layers_cap_the_sequence(catalog):
    # gpt-oss-120b: 18 of 36 layers attend to 128 tokens; at 64k context the sliding layers hold
    # (ceil(128/16) + 1) blocks instead of 4,096: per-sequence bytes are about half of all-full.
    m, gpu = catalog.model("gpt-oss-120b"), catalog.gpu("H100-SXM")
    x = explain_config(m, gpu, tp=1, pp=1, kv_dtype="bf16", context_tokens=65_536)
    per_layer = 2 * 8 * 64 * 2
    full = 18 * per_layer * 65_536
    sliding = 18 * per_layer * 16 * (128 // 16 + 1)
    assert x.memory.sequence_bytes_per_gpu == full + sliding
    assert "sliding-window layers" in [line.label for line in x.lines]


def test_explain_table_prints_each_line():
    run = subprocess.run(
        [sys.executable, "-m", "sizer", "explain", "--model", "llama-3.1-70b", "--device", "H100-SXM", "--tp", "4", "--kv-dtype", "fp8"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    for label in ("budget", "- weights", "= KV pool per GPU", "KV blocks per GPU", "max concurrency", "launch  vllm serve"):
        assert label in run.stdout


@pytest.mark.parametrize(
    "engine, version, said",
    [
        ("vllm", "0.23", "vLLM 0.23 is newer than the newest release whose memory rules sizer read (0.22): 0.22's rules are used"),
        ("vllm", "0.1", "vLLM 0.1 is older than the oldest release whose memory rules sizer read (0.2.4): 0.2.4's rules are used"),
        ("sglang", "0.3", "SGLang 0.3 is older than the oldest release whose memory rules sizer read (0.4): 0.4's rules are used"),
        ("vllm", "0.22.1", None),
        ("vllm", "0.19", None),
    ],
)
def test_a_release_outside_the_ones_read_is_said(engine, version, said):
    # --engine-version 99.0 ran on the newest rules without a word.
    from sizer.engines import engine_policy

    assert engine_policy(engine).version_warning(version) == said


def test_the_runtime_overhead_line_names_the_vendors_runtime(catalog):
    """On an AMD device the context and collectives are HIP's and RCCL's (ROCm), not CUDA's and
    NCCL's: the line names what the user's own logs show."""
    m = catalog.model("llama-3.1-70b")
    for device, words in (("MI300X", "HIP context, RCCL"), ("H100-SXM", "CUDA context, NCCL")):
        e = explain_config(m, catalog.gpu(device), tp=4, pp=1, kv_dtype="fp8", weight_dtype="bf16", context_tokens=8192)
        line = next(x for x in e.lines if x.label == "- runtime overhead")
        assert line.formula.startswith(words)


def test_vllm_data_and_expert_parallel_flags_of_a_pasted_launch_line():
    """vLLM's --data-parallel-size / --enable-expert-parallel were "No such option" (exit 2). A dense model's DP engine
    cores are independent replicas (vLLM docs, data parallel deployment: weights replicated per rank), so its figures
    are one replica's, said in a warning. A MoE model's experts span the tp x dp GPUs of the DP group (FusedMoE over
    the DP group): yecohn/moe-bench's Qwen3-30B-A3B at TP 2 x DP 2 on 4 x A100 PCIe logs 14.96 GiB of weights a GPU
    where one TP-2 instance holds 28.5 (tests/data/vllm_logs/vllm_v020_plus_audit.yaml), a layout sizer does not size:
    refused in one line, exit 7."""
    def run(*args):
        return subprocess.run([sys.executable, "-m", "sizer", "explain", *args, "--format", "json"], capture_output=True, text=True, cwd=ROOT, timeout=60)

    one = _explain("--model", "llama-3.1-8b", "--device", "H100-SXM")
    dense = run("--model", "llama-3.1-8b", "--device", "H100-SXM", "--data-parallel-size", "4")
    assert dense.returncode == 0, dense.stderr
    x = json.loads(dense.stdout)
    assert x["kv_tokens"] == one["kv_tokens"] and x["weights_bytes_per_gpu"] == one["weights_bytes_per_gpu"]
    assert any("4 independent replicas of tp=1" in w for w in x["warnings"])
    moe = run("--model", "qwen3-30b-a3b", "--device", "A100-80GB", "--tp", "2", "-dp", "2")
    assert moe.returncode == 7
    assert moe.stderr.strip().splitlines() == [
        "error: --data-parallel-size 2: qwen3-30b-a3b is a mixture of experts, whose experts vLLM spreads over the tp x dp = 4 GPUs of "
        "the data-parallel group; sizer sizes one engine instance of tp x pp GPUs and does not size that layout "
        "(give --data-parallel-size 1 for one instance's figures)"
    ]
    ep = run("--model", "qwen3-30b-a3b", "--device", "A100-80GB", "--tp", "2", "--enable-expert-parallel")
    assert ep.returncode == 0 and json.loads(ep.stdout)["kv_tokens"] == _explain("--model", "qwen3-30b-a3b", "--device", "A100-80GB", "--tp", "2")["kv_tokens"]
    uneven = run("--model", "tests/data/vllm_logs/configs/Qwen--Qwen1.5-MoE-A2.7B_config.json", "--device", "H100-SXM", "--tp", "8", "--enable-expert-parallel")
    # 60 experts over 8 ranks: up to ceil(60 / 8) = 8 whole experts a rank where sizer counts 7.5
    assert uneven.returncode == 0, uneven.stderr
    assert any("up to 8 whole experts where sizer counts 7.5" in w for w in json.loads(uneven.stdout)["warnings"])
    assert run("--model", "qwen3-30b-a3b", "--device", "A100-80GB", "--engine", "sglang", "-dp", "2").returncode == 2


def test_data_parallel_size_below_one_is_refused():
    """--data-parallel-size 0 (or -2) was taken as no data parallelism, the figures printed with exit 0: vLLM's
    data_parallel_size counts engine cores, and none is no deployment. Refused as --tp 0 is, exit 7."""
    for value in ("0", "-2"):
        r = subprocess.run([sys.executable, "-m", "sizer", "explain", "--model", "llama-3.1-8b", "--device", "H100-SXM", "-dp", value],
                           capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert r.returncode == 7
        assert r.stderr.strip().splitlines() == [f"error: --data-parallel-size: expected an integer >= 1, got {value}"]


def test_vllm_token_budget_below_max_num_seqs():
    """vLLM's SchedulerConfig refuses max_num_batched_tokens < max_num_seqs (config/scheduler.py, 0.17.0-0.22.0 wheels:
    "must be greater than or equal to max_num_seqs"); explain printed the figures and a launch line of
    --max-num-seqs 1024 --max-num-batched-tokens 256 that vLLM does not start. From 0.20 a defaulted max_num_seqs is
    lowered to the given budget (engine/arg_utils.py _set_default_args, 0.20.0-0.22.0: min(max_num_seqs,
    max_num_batched_tokens)), so the line carries --max-num-seqs 256; given both, or before 0.10.1, refused (exit 7).
    The lowering is older than 0.20: 0.10.1 (arg_utils.py l. 1711: min(default_max_num_seqs[usage_context],
    max_num_batched_tokens or sys.maxsize)) to 0.19.0 (l. 2240) lower it too; 0.9.0 and 0.10.0 do not, and refuse."""
    def run(*args):
        return subprocess.run([sys.executable, "-m", "sizer", "explain", "--model", "llama-3.1-8b", "--device", "H100-SXM", *args],
                              capture_output=True, text=True, cwd=ROOT, timeout=60)

    lowered = run("--max-num-batched-tokens", "256", "--engine-version", "0.22", "--format", "json")
    assert lowered.returncode == 0, lowered.stderr
    assert "--max-num-seqs 256 --max-num-batched-tokens 256" in json.loads(lowered.stdout)["launch_command"]
    both = run("--max-num-batched-tokens", "256", "--max-num-seqs", "300", "--engine-version", "0.22")
    assert both.returncode == 7
    assert both.stderr.strip().splitlines() == [
        "error: --max-num-batched-tokens 256 is below --max-num-seqs 300: vLLM refuses a launch line with both "
        "(SchedulerConfig: max_num_batched_tokens must be greater than or equal to max_num_seqs)"
    ]
    for version in ("0.19", "0.10.1"):
        lowered = run("--max-num-batched-tokens", "256", "--engine-version", version, "--format", "json")
        assert lowered.returncode == 0, lowered.stderr
        assert "--max-num-seqs 256 --max-num-batched-tokens 256" in json.loads(lowered.stdout)["launch_command"]
    old = run("--max-num-batched-tokens", "256", "--engine-version", "0.10.0")
    assert old.returncode == 7 and "max_num_seqs 1024, vLLM 0.10.0's default here" in old.stderr, old.stderr
    assert run("--max-num-batched-tokens", "2048", "--max-num-seqs", "2048", "--engine-version", "0.22").returncode == 0


def test_data_parallel_turns_the_allreduce_fusion_off_before_0_21():
    """enable_allreduce_rms_fusion (config/vllm.py, 0.17.0-0.20.0 wheels) requires `data_parallel_size == 1` ("tp-dp
    combination broken", vllm-project/vllm#34458), as it requires pipeline_parallel_size == 1; 0.21.0 drops both. A
    pasted `-tp 4 -dp 2` on H100 under 0.20 was sized with the fusion's workspace (1.89 GiB over 4 TP ranks) that its
    engine cores do not allocate; from 0.21 they do."""
    def nt(version, dp):
        x = _explain("--model", "llama-3.1-70b", "--device", "H100-SXM", "--tp", "4", "--max-model-len", "8192",
                     "--engine-version", version, "--data-parallel-size", str(dp))
        return next(line for line in x["lines"] if line["label"].strip() == "non-torch increase")

    assert "all-reduce fusion workspace" in nt("0.20", 1)["formula"]
    off = nt("0.20", 2)
    assert "all-reduce fusion workspace" not in off["formula"] and "fusion is off at pp=1 dp=2 before 0.21" in off["formula"]
    assert off["value"] == "0.67 GiB"  # 0.25 kernels/cuBLAS + 0.42 first collectives (V1_COMM_LAZY_NO_FUSION_BYTES)
    assert nt("0.21", 2) == nt("0.21", 1)
