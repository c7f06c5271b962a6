"""Serving-engine policies: how an engine divides GPU memory, its defaults, and its launch flags.

Each rule lives here once. Today: vLLM (V1 engine, `vllm serve`).

vLLM's memory rule (vllm/v1/worker/gpu_worker.py determine_available_memory, and the startup
log line "Available KV cache memory"):

    KV cache = total GPU memory x gpu_memory_utilization
               - model weights (and the buffers loaded with them)
               - peak activation memory of a profiling forward pass with max_num_batched_tokens
               - non-torch memory (CUDA context share, NCCL and custom all-reduce buffers, cuBLAS workspace)

The first-order estimates of the activation peak and the non-torch memory below are checked
against the measured terms vLLM prints ("peak_torch_memory", "non_torch_memory", "PyTorch
activation peak memory") in tests/test_engines.py, each with its log source.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from .catalog import Gpu
from .model import ModelArch
from .units import GIB, ceil_div


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineDefaults:
    max_num_seqs: int
    max_num_batched_tokens: int
    block_size_tokens: int
    gpu_memory_utilization: float


class VllmPolicy:
    """vLLM V1 (`vllm serve`) memory accounting and launch flags."""

    name = "vllm"

    # Non-torch memory measured in vLLM's own profiling logs on single-GPU and TP=2 runs:
    # 0.35 GiB (RTX 3090, TP=1, vllm#10517), 0.25 GiB (RTX 4090, TP=2, vllm#13061),
    # 0.20 GiB (24 GB cards, vllm PR #14447). TP > 1 adds NCCL and custom all-reduce buffers.
    NON_TORCH_BYTES_TP1 = 0.35 * GIB
    NON_TORCH_BYTES_PER_EXTRA_RANK_GROUP = 0.15 * GIB

    def defaults(self, gpu: Gpu) -> EngineDefaults:
        """vLLM's own defaults for `vllm serve` on this device.

        vllm/engine/arg_utils.py EngineArgs.get_batch_defaults: GPUs with >= 70 GiB that are not
        A100 get max_num_batched_tokens 8192 and max_num_seqs 1024 for the OpenAI API server;
        others 2048 and 256. gpu_memory_utilization 0.9 and block_size 16 are the CacheConfig
        defaults."""
        large = gpu.usable_memory_bytes >= 70 * GIB and "a100" not in gpu.name.lower()
        return EngineDefaults(
            max_num_seqs=1024 if large else 256,
            max_num_batched_tokens=8192 if large else 2048,
            block_size_tokens=16,
            gpu_memory_utilization=0.9,
        )

    def runtime_buffer_bytes(self, model: ModelArch) -> float:
        """Buffers loaded with the weights and counted in vLLM's "Model loading took X GiB".

        The rotary embedding's cos/sin cache: [max_position_embeddings, rotary_dim] in the model
        dtype, one shared instance (vLLM's get_rope caches it). For Llama-3.1-8B this is
        131072 x 128 x 2 B = 32 MiB, the difference between 8,030,261,248 params x 2 B
        (14.957 GiB) and the logged 14.9888 GiB (vllm#10517)."""
        return float(model.max_position_embeddings * model.rotary_dim * 2)

    def activation_bytes(self, model: ModelArch, tp: int, max_num_batched_tokens: int, max_num_seqs: int) -> float:
        """Peak activation memory of vLLM's profiling run, per GPU.

        The profiling forward pass pushes max_num_batched_tokens tokens through one layer at a time;
        the peak is inside the MLP, which holds the residual stream and hidden states (about three
        hidden-size bf16 vectors per token) and the gate/up output plus the activated product
        (three intermediate/tp bf16 vectors per token). For MoE layers the fused kernel holds the
        same per routed copy of the token (top_k copies, moe_intermediate/tp wide). The sampler's
        dummy run then holds fp32 logits for max_num_seqs rows; the two do not coexist, so the
        peak is the larger. Checked against the logged 2.07 GiB activation peak of Llama-3.1-8B
        profiled at 20,000 tokens (vllm#10517: peak_torch 17.06 GiB - weights 14.99 GiB)."""
        h = model.hidden_size
        if model.is_moe:
            inter = max(
                model.intermediate_size if not all(model.moe_layers) else 0,
                model.num_experts_per_tok * model.moe_intermediate_size + model.shared_experts_intermediate_size,
            )
        else:
            inter = model.intermediate_size
        per_token = 2 * (3 * h + 3 * ceil_div(inter, tp))
        layers_peak = max_num_batched_tokens * per_token
        logits_peak = max_num_seqs * ceil_div(model.vocab_size, tp) * 4 * 2  # fp32 logits and probabilities
        return float(max(layers_peak, logits_peak))

    def runtime_overhead_bytes(self, tp: int) -> float:
        """Non-torch memory per GPU: grows with TP (communication buffers)."""
        extra = 0 if tp == 1 else self.NON_TORCH_BYTES_PER_EXTRA_RANK_GROUP * (1 + (tp > 2))
        return self.NON_TORCH_BYTES_TP1 + extra

    def launch_command(
        self,
        model: ModelArch,
        *,
        tp: int,
        pp: int,
        kv_dtype: str,
        weight_dtype: str,
        max_model_len: int,
        max_num_seqs: int,
        gpu_memory_utilization: float,
        block_size_tokens: int,
    ) -> str:
        """The `vllm serve` command for this configuration."""
        args = ["vllm", "serve", model.hf_id or model.name]
        args += ["--tensor-parallel-size", str(tp), "--pipeline-parallel-size", str(pp)]
        if weight_dtype != model.native_weight_dtype and weight_dtype in ("fp8",):
            args += ["--quantization", "fp8"]  # online dynamic FP8 quantisation of a 16-bit checkpoint
        if kv_dtype == "fp8":
            args += ["--kv-cache-dtype", "fp8"]
        args += [
            "--max-model-len",
            str(max_model_len),
            "--max-num-seqs",
            str(max_num_seqs),
            "--gpu-memory-utilization",
            f"{gpu_memory_utilization:g}",
            "--block-size",
            str(block_size_tokens),
        ]
        return shlex.join(args)


ENGINES = {"vllm": VllmPolicy()}


def engine_policy(name: str) -> VllmPolicy:
    return ENGINES[name]
