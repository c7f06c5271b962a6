"""Memory: the seeds' arithmetic, exact. KV bytes per token, the pool left after weights and
working set, blocks, and how many sequences fit. All quantities in bytes and tokens.

The chain, per GPU, as `sizer explain` prints it:

    budget        = usable memory x gpu_memory_utilization            (vLLM: fraction of total)
    kv pool       = budget - weights shard - runtime buffers - activation peak - non-torch overhead
    block bytes   = block_size_tokens x KV bytes per token on this GPU
    blocks        = floor(pool / block bytes)
    KV tokens     = blocks x block_size_tokens                          (per replica: every GPU holds
                                                                        its share of every token)
    concurrency   = floor(blocks / ceil(context / block_size_tokens))

KV bytes per token (seed 000: L x 2 x H_kv x d x b):
    whole model   2 x layers x kv_heads x head_dim x elem_bytes          (MHA / GQA / MQA)
                  layers x (kv_lora_rank + qk_rope_head_dim) x elem_bytes (MLA: one latent, no K/V pair)
    one GPU       the layers of its pipeline stage, ceil(kv_heads / tp) heads: heads are replicated,
                  not split, when kv_heads < tp; the MLA latent is replicated on every TP rank.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import ModelArch, stage_weights
from .units import DTYPE_BYTES, ceil_div

# --------------------------------------------------------------------------------------------
# Seed formulas (pure, scalar)
# --------------------------------------------------------------------------------------------


def kv_bytes_per_token(layers: int, kv_heads: int, head_dim: int, elem_bytes: float) -> float:
    """Seed 000: L x 2 x H_k x d x b, keys and values for one token across all layers."""
    return layers * 2 * kv_heads * head_dim * elem_bytes


def sequence_kv_bytes(bytes_per_token: float, tokens: int) -> float:
    """Seed 004: bytes one sequence holds at `tokens` tokens of context."""
    return bytes_per_token * tokens


def batch_kv_bytes(bytes_per_token: float, tokens: int, batch: int) -> float:
    """Seed 004: total cache bytes = bytes per token x context length x batch size."""
    return bytes_per_token * tokens * batch


def blocks_for(tokens: int, block_size_tokens: int) -> int:
    """Blocks a sequence of `tokens` tokens occupies: ceil(tokens / block size) (seed 001)."""
    return ceil_div(int(tokens), int(block_size_tokens))


def admissions(pool_bytes: float, bytes_per_token: float, max_len_tokens: int, block_bytes: float) -> int:
    """Seed 000: sequences a pool admits when each is charged its maximum length in whole blocks."""
    seq_bytes = bytes_per_token * max_len_tokens
    blocks = -(-seq_bytes // block_bytes)  # ceiling division
    return int(pool_bytes // (blocks * block_bytes))


def max_concurrent_sequences(free_bytes: float, sequence_bytes: float) -> int:
    """Seed 001/004: floor(M / S), the hard ceiling on resident sequences."""
    if sequence_bytes <= 0:
        raise ValueError("sequence_bytes must be > 0")
    return int(free_bytes // sequence_bytes)


def block_table_bytes(tokens: int, block_size_tokens: int, entry_bytes: int = 4) -> int:
    """Seed 001: one 4-byte entry per block: a 32,768-token sequence at 16 tokens/block is 8 KiB."""
    return blocks_for(tokens, block_size_tokens) * entry_bytes


def kv_growth_bytes_per_step(bytes_per_token: float, batch: int) -> float:
    """Seed 000: each decode step appends one token per running sequence."""
    return bytes_per_token * batch


# --------------------------------------------------------------------------------------------
# Model-level KV accounting
# --------------------------------------------------------------------------------------------


def kv_bytes_per_token_per_layer(model: ModelArch, kv_dtype: str, tp: int = 1) -> float:
    """KV bytes one attention layer stores per token on one GPU of a TP group of size `tp`."""
    b = DTYPE_BYTES[kv_dtype]
    if model.is_mla:
        # The compressed latent and the decoupled RoPE key, one copy per token, replicated across TP.
        return (model.kv_lora_rank + model.qk_rope_head_dim) * b
    return 2 * ceil_div(model.num_key_value_heads, tp) * model.head_dim * b


def model_kv_bytes_per_token(model: ModelArch, kv_dtype: str) -> float:
    """Whole-model KV bytes per token (one copy, all layers, no parallelism)."""
    return model.num_hidden_layers * kv_bytes_per_token_per_layer(model, kv_dtype, 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class StageKv:
    """KV bytes per token on one GPU of one pipeline stage, split by layer kind."""

    full_bytes_per_token: float
    sliding_bytes_per_token: float

    @property
    def bytes_per_token(self) -> float:
        return self.full_bytes_per_token + self.sliding_bytes_per_token


def stage_kv(model: ModelArch, kv_dtype: str, tp: int, pp: int) -> list[StageKv]:
    per_layer = kv_bytes_per_token_per_layer(model, kv_dtype, tp)
    out = []
    for layers in model.stage_layers(pp):
        sliding = sum(1 for i in layers if model.layer_types[i] == "sliding")
        out.append(StageKv(full_bytes_per_token=(len(layers) - sliding) * per_layer, sliding_bytes_per_token=sliding * per_layer))
    return out


def sequence_bytes_on_stage(kv: StageKv, context_tokens: int, block_size_tokens: int, sliding_window: int) -> float:
    """Bytes one sequence of `context_tokens` holds on one GPU, in whole blocks. Sliding-window
    layers keep at most the window (plus the partly filled block at each end)."""
    blocks = blocks_for(context_tokens, block_size_tokens)
    sliding_blocks = min(blocks, blocks_for(sliding_window, block_size_tokens) + 1) if sliding_window else blocks
    return block_size_tokens * (blocks * kv.full_bytes_per_token + sliding_blocks * kv.sliding_bytes_per_token)


# --------------------------------------------------------------------------------------------
# A configuration's full breakdown
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryBreakdown:
    """Per-GPU memory of one configuration, on the binding pipeline stage. Bytes unless named."""

    stage: int  # the pipeline stage with the fewest blocks (the one that binds)
    usable_memory_bytes: float
    gpu_memory_utilization: float
    budget_bytes: float
    weights_bytes_per_gpu: float
    runtime_buffer_bytes_per_gpu: float
    activation_bytes_per_gpu: float
    runtime_overhead_bytes_per_gpu: float
    kv_pool_bytes_per_gpu: float
    kv_bytes_per_token: float  # whole model, one copy
    kv_bytes_per_token_per_gpu: float
    block_size_tokens: int
    block_bytes_per_gpu: float
    kv_blocks_per_gpu: int
    kv_tokens: int  # per replica
    context_tokens: int
    blocks_per_sequence: int
    sequence_bytes_per_gpu: float
    max_concurrency: int
    sliding_window: int = 0

    @property
    def fits(self) -> bool:
        return self.kv_pool_bytes_per_gpu > 0 and self.max_concurrency >= 1


def memory_breakdown(
    model: ModelArch,
    *,
    usable_memory_bytes: float,
    gpu_memory_utilization: float,
    tp: int,
    pp: int,
    kv_dtype: str,
    weight_dtype: str,
    block_size_tokens: int,
    context_tokens: int,
    activation_bytes: float,
    runtime_buffer_bytes: float,
    runtime_overhead_bytes: float,
) -> MemoryBreakdown:
    """The seeds' chain for one configuration; every stage computed, the binding one returned.

    `activation_bytes`, `runtime_buffer_bytes` and `runtime_overhead_bytes` come from the serving
    engine's policy (engines.py): they are the engine's rule, not the seeds'."""
    budget = usable_memory_bytes * gpu_memory_utilization
    weights = stage_weights(model, tp, pp, weight_dtype)
    kvs = stage_kv(model, kv_dtype, tp, pp)
    best: MemoryBreakdown | None = None
    for s, (w, kv) in enumerate(zip(weights, kvs)):
        pool = budget - w.total_bytes - runtime_buffer_bytes - activation_bytes - runtime_overhead_bytes
        block_bytes = block_size_tokens * kv.bytes_per_token
        blocks = int(pool // block_bytes) if pool > 0 and block_bytes > 0 else 0
        seq_bytes = sequence_bytes_on_stage(kv, context_tokens, block_size_tokens, model.sliding_window)
        concurrency = int(pool // seq_bytes) if pool > 0 and seq_bytes > 0 else 0
        candidate = MemoryBreakdown(
            stage=s,
            usable_memory_bytes=usable_memory_bytes,
            gpu_memory_utilization=gpu_memory_utilization,
            budget_bytes=budget,
            weights_bytes_per_gpu=w.total_bytes,
            runtime_buffer_bytes_per_gpu=runtime_buffer_bytes,
            activation_bytes_per_gpu=activation_bytes,
            runtime_overhead_bytes_per_gpu=runtime_overhead_bytes,
            kv_pool_bytes_per_gpu=pool,
            kv_bytes_per_token=model_kv_bytes_per_token(model, kv_dtype),
            kv_bytes_per_token_per_gpu=kv.bytes_per_token,
            block_size_tokens=block_size_tokens,
            block_bytes_per_gpu=block_bytes,
            kv_blocks_per_gpu=blocks,
            kv_tokens=blocks * block_size_tokens,
            context_tokens=context_tokens,
            blocks_per_sequence=blocks_for(context_tokens, block_size_tokens),
            sequence_bytes_per_gpu=seq_bytes,
            max_concurrency=concurrency,
            sliding_window=model.sliding_window,
        )
        if best is None or (candidate.max_concurrency, candidate.kv_blocks_per_gpu, -candidate.kv_pool_bytes_per_gpu) < (
            best.max_concurrency,
            best.kv_blocks_per_gpu,
            -best.kv_pool_bytes_per_gpu,
        ):
            best = candidate
    assert best is not None  # pp >= 1 always gives one stage
    return best
