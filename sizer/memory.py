"""Memory: the seeds' arithmetic, exact. KV bytes per token, blocks, how many sequences fit, and
the MemoryBreakdown every engine policy fills in. All quantities in bytes and tokens.

The chain, per GPU, as `sizer explain` prints it (the pool rule itself is the engine's, engines.py):

    KV pool       = the engine's budget - weights shard - buffers - activation peak - overhead
    block bytes   = block_size_tokens x KV bytes per token on this GPU
    blocks        = floor(pool / block bytes)
    KV tokens     = blocks x block_size_tokens          (per replica: every GPU holds its share of every token)
    concurrency   = floor(pool / bytes one sequence holds at the admitted context, in whole blocks)

KV bytes per token (seed 000: L x 2 x H_kv x d x b):
    whole model   2 x layers x kv_heads x head_dim x elem_bytes            (MHA / GQA / MQA)
                  layers x (kv_lora_rank + qk_rope_head_dim) x elem_bytes   (MLA: one latent, no K/V pair)
    one GPU       the layers of its pipeline stage, ceil(kv_heads / tp) heads: heads are replicated,
                  not split, when kv_heads < tp; the MLA latent is replicated on every TP rank.
    K and V may be stored in different formats (llama.cpp --cache-type-k / --cache-type-v); scaled
    formats (int4, GGML q4_0 / q8_0 ...) count their scales.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import ModelArch
from .units import DTYPE_BYTES, ceil_div, kv_element_bytes

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
# KV formats and per-token bytes
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KvFormat:
    """Storage format of keys and of values (the same for every engine but llama.cpp)."""

    k: str
    v: str

    @classmethod
    def of(cls, kv: "str | KvFormat") -> "KvFormat":
        """A KvFormat from itself, a single format ("fp8") or a K/V pair label ("q8_0/q4_0")."""
        if isinstance(kv, KvFormat):
            return kv
        k, _, v = str(kv).partition("/")
        return cls(k, v or k)

    @property
    def label(self) -> str:
        return self.k if self.k == self.v else f"{self.k}/{self.v}"


def kv_bytes_per_token_per_layer(model: ModelArch, kv: str | KvFormat, tp: int = 1) -> float:
    """KV bytes one attention layer stores per token on one GPU of a TP group of size `tp`."""
    fmt = KvFormat.of(kv)
    if model.is_mla:
        # The compressed latent and the decoupled RoPE key, one copy per token, replicated across TP.
        return (model.kv_lora_rank + model.qk_rope_head_dim) * kv_element_bytes(fmt.k, model.kv_lora_rank)
    heads = ceil_div(model.num_key_value_heads, tp)
    d = model.head_dim
    return heads * d * (kv_element_bytes(fmt.k, d) + kv_element_bytes(fmt.v, d))


def model_kv_bytes_per_token(model: ModelArch, kv: str | KvFormat) -> float:
    """Whole-model KV bytes per token (one copy, every attention layer, no parallelism; Gated
    DeltaNet layers hold a state per sequence instead, linear_state_bytes_per_layer)."""
    return model.num_kv_layers * kv_bytes_per_token_per_layer(model, kv, 1)


def linear_state_bytes_per_layer(model: ModelArch, tp: int = 1, recurrent_dtype: str | None = None, conv_dtype: str | None = None) -> float:
    """Bytes one sequence's state takes in one Gated DeltaNet layer on one GPU of a TP group of
    `tp`: the convolution state in `conv_dtype` and the recurrent state in `recurrent_dtype`
    (defaults: the model's dtype, and the config's mamba_ssm_dtype). 0 for a model without such
    layers."""
    return sum(linear_state_parts(model, tp, recurrent_dtype, conv_dtype))


def linear_state_parts(model: ModelArch, tp: int = 1, recurrent_dtype: str | None = None, conv_dtype: str | None = None) -> tuple[float, float]:
    """(convolution, recurrent) state bytes of linear_state_bytes_per_layer; (0, 0) without such layers."""
    if not model.num_linear_layers:
        return 0.0, 0.0
    conv, recurrent = model.linear_state_elements(tp)
    conv_bytes = DTYPE_BYTES[conv_dtype or (model.torch_dtype if model.torch_dtype in ("fp32", "fp16") else "bf16")]
    return conv * conv_bytes, recurrent * DTYPE_BYTES[recurrent_dtype or model.linear_state_dtype]


@dataclass(frozen=True, slots=True, kw_only=True)
class StageKv:
    """KV bytes per token on one GPU of one pipeline stage, split by layer kind."""

    full_layers: int
    sliding_layers: int
    bytes_per_token_per_layer: float
    linear_layers: int = 0  # Gated DeltaNet layers: no KV, a fixed state per sequence
    state_bytes_per_layer: float = 0.0  # one sequence's state in one of them, this GPU

    @property
    def state_bytes_per_sequence(self) -> float:
        return self.linear_layers * self.state_bytes_per_layer

    @property
    def full_bytes_per_token(self) -> float:
        return self.full_layers * self.bytes_per_token_per_layer

    @property
    def sliding_bytes_per_token(self) -> float:
        return self.sliding_layers * self.bytes_per_token_per_layer

    @property
    def bytes_per_token(self) -> float:
        return self.full_bytes_per_token + self.sliding_bytes_per_token


def stage_kv(model: ModelArch, kv: str | KvFormat, tp: int, pp: int, state_bytes_per_layer: float | None = None) -> list[StageKv]:
    """KV per token of each pipeline stage's layers; Gated DeltaNet layers counted apart, with
    `state_bytes_per_layer` (default linear_state_bytes_per_layer at the model's dtypes)."""
    per_layer = kv_bytes_per_token_per_layer(model, kv, tp)
    state = linear_state_bytes_per_layer(model, tp) if state_bytes_per_layer is None else state_bytes_per_layer
    out = []
    for layers in model.stage_layers(pp):
        sliding = sum(1 for i in layers if model.layer_types[i] == "sliding")
        linear = sum(1 for i in layers if model.layer_types[i] == "linear")
        out.append(
            StageKv(
                full_layers=len(layers) - sliding - linear,
                sliding_layers=sliding,
                bytes_per_token_per_layer=per_layer,
                linear_layers=linear,
                state_bytes_per_layer=state if linear else 0.0,
            )
        )
    return out


def sequence_bytes_on_stage(kv: StageKv, context_tokens: int, block_size_tokens: int, sliding_window: int) -> float:
    """Bytes one sequence of `context_tokens` holds on one GPU, in whole blocks. Sliding-window
    layers keep at most the window (plus the partly filled block at each end); Gated DeltaNet
    layers their fixed state, whatever the length."""
    blocks = blocks_for(context_tokens, block_size_tokens)
    sliding_blocks = min(blocks, blocks_for(sliding_window, block_size_tokens) + 1) if sliding_window else blocks
    return block_size_tokens * (blocks * kv.full_bytes_per_token + sliding_blocks * kv.sliding_bytes_per_token) + kv.state_bytes_per_sequence


def hybrid_group_layers(kv: StageKv, prefer_max_within: float = 0.0) -> int:
    """Layers per KV-cache group under vLLM's hybrid allocator (v1/core/kv_cache_utils.py
    _get_kv_cache_groups_uniform_page_size): groups hold equal numbers of layers, as many as the rarer
    layer kind has; every block id is a page in one tensor per group slot, so the pool divides into
    blocks of (group size x page) bytes. From vLLM 0.18, when the commoner kind has fewer than 1.5 x
    the rarer's layers, the group is as large as the commoner kind (the rarer padded):
    `prefer_max_within` = 1.5 then. Gated DeltaNet layers are a kind of their own (MambaSpec)."""
    kinds = [n for n in (kv.full_layers, kv.sliding_layers, kv.linear_layers) if n]
    if len(kinds) > 1:
        small, large = min(kinds), max(kinds)
        if prefer_max_within and large < small * prefer_max_within:
            return large
        return small
    return sum(kinds)


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineKvReport:
    """How the engine itself turns its pool into the figures it logs (vLLM V1's hybrid KV manager).

    `prefer_max_within`: group-size rule (hybrid_group_layers). `tokens_rule`: "blocks" (tokens =
    blocks x block size, V0 and V1 with one group), "blocks_per_group" (vLLM 0.9-0.20 with several
    groups: num_blocks // groups x block size), "concurrency" (vLLM 0.21+: int(max concurrency x
    max_model_len)). `max_num_batched_tokens`: the prefill chunk the V1 specs add to a window."""

    hybrid: bool = False
    prefer_max_within: float = 0.0
    tokens_rule: str = "blocks"
    max_num_batched_tokens: int = 0
    attention_chunk_size: int = 0


# --------------------------------------------------------------------------------------------
# The breakdown every engine fills in
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryBreakdown:
    """Per-GPU memory of one configuration under one engine, on the binding pipeline stage.

    Bytes unless named. `kv_tokens` counts every layer's KV for every token (the conservative,
    engine-independent figure); `engine_kv_tokens`, `engine_gpu_blocks` and
    `engine_available_kv_bytes` are the figures the engine itself logs."""

    engine: str
    engine_version: str
    stage: int
    usable_memory_bytes: float
    memory_fraction: float  # gpu_memory_utilization / mem_fraction_static / free_gpu_memory_fraction
    memory_fraction_name: str
    budget_bytes: float
    budget_rule: str
    weights_bytes_per_gpu: float
    runtime_buffer_bytes_per_gpu: float
    activation_bytes_per_gpu: float
    runtime_overhead_bytes_per_gpu: float
    kv_pool_bytes_per_gpu: float
    kv_bytes_per_token: float  # whole model, one copy
    kv_bytes_per_token_per_gpu: float
    kv_format: str
    block_size_tokens: int
    block_bytes_per_gpu: float
    kv_blocks_per_gpu: int
    kv_tokens: int  # per replica
    context_tokens: int
    max_model_len: int
    blocks_per_sequence: int
    sequence_bytes_per_gpu: float
    max_concurrency: int  # sequences of context_tokens the pool holds
    engine_gpu_blocks: int
    engine_kv_tokens: int
    engine_available_kv_bytes: float
    engine_max_concurrency: float  # the engine's "maximum concurrency for max_model_len tokens"
    sliding_window: int = 0
    cuda_graph_bytes_per_gpu: float = 0.0  # subtracted from the budget (vLLM >= 0.20), else 0
    engine_kv_groups: int = 1
    # SGLang keeps Gated DeltaNet states in a pool of their own: its slots, the bytes they take,
    # and the running-request cap it derives from them (0: no such pool)
    state_slots: int = 0
    state_pool_bytes_per_gpu: float = 0.0
    running_cap: int = 0
    state_conv_bytes_per_gpu: float = 0.0  # the convolution states' part of state_pool_bytes_per_gpu
    detail: tuple[tuple[str, str, float], ...] = ()  # (term, how it is made, bytes): the activation and non-torch parts
    notes: tuple[str, ...] = ()

    @property
    def fits(self) -> bool:
        return self.kv_pool_bytes_per_gpu > 0 and self.max_concurrency >= 1

    @property
    def used_bytes(self) -> float:
        return (
            self.weights_bytes_per_gpu
            + self.runtime_buffer_bytes_per_gpu
            + self.activation_bytes_per_gpu
            + self.runtime_overhead_bytes_per_gpu
            + self.cuda_graph_bytes_per_gpu
        )


def paged_breakdown(
    model: ModelArch,
    *,
    engine: str,
    engine_version: str,
    stage: int,
    kv: StageKv,
    kv_format: KvFormat,
    usable_memory_bytes: float,
    memory_fraction: float,
    memory_fraction_name: str,
    budget_bytes: float,
    budget_rule: str,
    weights_bytes: float,
    buffer_bytes: float,
    activation_bytes: float,
    overhead_bytes: float,
    pool_bytes: float,
    block_size_tokens: int,
    context_tokens: int,
    max_model_len: int,
    hybrid_groups: bool | EngineKvReport,
    cuda_graph_bytes: float = 0.0,
    detail: tuple[tuple[str, str, float], ...] = (),
    notes: tuple[str, ...] = (),
    state_pool: tuple[int, float, int, float] = (0, 0.0, 0, 0.0),
) -> MemoryBreakdown:
    """Blocks, tokens and concurrency of a paged pool of `pool_bytes` on one GPU.

    `hybrid_groups`: how the engine reports its pool (EngineKvReport); True is vLLM V1 as of 0.9-0.17,
    False every block holding every layer of the token."""
    report = hybrid_groups if isinstance(hybrid_groups, EngineKvReport) else EngineKvReport(hybrid=bool(hybrid_groups), tokens_rule="blocks_per_group" if hybrid_groups else "blocks")
    block_bytes = block_size_tokens * kv.bytes_per_token
    blocks = int(pool_bytes // block_bytes) if pool_bytes > 0 and block_bytes > 0 else 0
    seq_bytes = sequence_bytes_on_stage(kv, context_tokens, block_size_tokens, model.sliding_window)
    concurrency = int(pool_bytes // seq_bytes) if pool_bytes > 0 and seq_bytes > 0 else 0
    slots, state_bytes, running_cap, conv_bytes = state_pool
    groups = 1
    if report.hybrid and kv.linear_layers and (kv.full_layers or kv.sliding_layers):
        # vLLM V1 with Gated DeltaNet layers (MambaSpec): the attention block is sized so its page
        # covers one sequence's state in one layer, and the state's page is padded to it (the
        # policy's stage_kv: state_bytes_per_layer = that page); layers form groups of the rarer
        # kind's size; a sequence takes cdiv(L, block) blocks in each attention group and one in each
        # Gated DeltaNet group (prefix caching off: get_max_concurrency_for_kv_cache_config)
        group = hybrid_group_layers(kv, report.prefer_max_within)
        page_bytes = block_size_tokens * kv.bytes_per_token_per_layer
        engine_blocks = int(pool_bytes // (group * page_bytes)) if pool_bytes > 0 and page_bytes > 0 else 0
        attention_groups = ceil_div(kv.full_layers + kv.sliding_layers, group)
        state_groups = ceil_div(kv.linear_layers, group)
        groups = attention_groups + state_groups
        need = attention_groups * blocks_for(max_model_len, block_size_tokens) + state_groups
        engine_concurrency = engine_blocks / need if need else 0.0
        if report.tokens_rule == "concurrency":
            engine_tokens = int(engine_concurrency * max_model_len)
        else:
            engine_tokens = engine_blocks // groups * block_size_tokens
        blocks = engine_blocks
        per_sequence_blocks = attention_groups * blocks_for(context_tokens, block_size_tokens) + state_groups
        concurrency = engine_blocks // per_sequence_blocks if per_sequence_blocks else 0
    elif report.hybrid and kv.full_layers and kv.sliding_layers:
        # vLLM V1 (kv_cache_utils.py get_kv_cache_config_from_groups): blocks of group-size pages;
        # max concurrency = blocks / the blocks one request of max_model_len may need in every group
        # (get_max_concurrency_for_kv_cache_config): a full layer cdiv(L, bs) pages, a sliding one
        # cdiv(min(window - 1 + max_num_batched_tokens, L), bs) + 1 (SlidingWindowSpec), a chunked
        # local one cdiv(min(chunk + max_num_batched_tokens, L), bs) (ChunkedLocalAttentionSpec).
        group = hybrid_group_layers(kv, report.prefer_max_within)
        page_bytes = block_size_tokens * kv.bytes_per_token_per_layer
        engine_blocks = int(pool_bytes // (group * page_bytes)) if pool_bytes > 0 else 0
        full_groups = ceil_div(kv.full_layers, group)
        sliding_groups = ceil_div(kv.sliding_layers, group)
        groups = full_groups + sliding_groups
        t = report.max_num_batched_tokens or max_model_len
        if report.attention_chunk_size:
            local_blocks = blocks_for(min(report.attention_chunk_size + t, max_model_len), block_size_tokens)
        else:
            local_blocks = blocks_for(min(model.sliding_window - 1 + t, max_model_len), block_size_tokens) + 1
        need = full_groups * blocks_for(max_model_len, block_size_tokens) + sliding_groups * local_blocks
        engine_concurrency = engine_blocks / need if need else 0.0
        if report.tokens_rule == "concurrency":
            engine_tokens = int(engine_concurrency * max_model_len)
        else:
            engine_tokens = engine_blocks // groups * block_size_tokens
    else:
        engine_blocks = blocks
        engine_tokens = blocks * block_size_tokens
        if report.tokens_rule in ("blocks_per_group", "concurrency") and max_model_len:
            engine_concurrency = engine_blocks / blocks_for(max_model_len, block_size_tokens)  # V1: whole blocks per request
            if report.tokens_rule == "concurrency":
                # vLLM 0.21+ logs int(max concurrency x max_model_len) for every layout, one group included
                # (v1/core/kv_cache_utils.py _report_kv_cache_config, 0.21.0 and 0.22.0 wheels): fewer tokens than
                # the blocks hold when max_model_len is not a whole number of blocks
                engine_tokens = int(engine_concurrency * max_model_len)
        else:
            engine_concurrency = engine_tokens / max_model_len if max_model_len else 0.0
    if running_cap:  # an engine's own cap on running sequences (SGLang's Gated DeltaNet slots)
        concurrency = min(concurrency, running_cap)
    return MemoryBreakdown(
        engine=engine,
        engine_version=engine_version,
        stage=stage,
        usable_memory_bytes=usable_memory_bytes,
        memory_fraction=memory_fraction,
        memory_fraction_name=memory_fraction_name,
        budget_bytes=budget_bytes,
        budget_rule=budget_rule,
        weights_bytes_per_gpu=weights_bytes,
        runtime_buffer_bytes_per_gpu=buffer_bytes,
        activation_bytes_per_gpu=activation_bytes,
        runtime_overhead_bytes_per_gpu=overhead_bytes,
        kv_pool_bytes_per_gpu=pool_bytes,
        kv_bytes_per_token=model_kv_bytes_per_token(model, kv_format),
        kv_bytes_per_token_per_gpu=kv.bytes_per_token,
        kv_format=kv_format.label,
        block_size_tokens=block_size_tokens,
        block_bytes_per_gpu=block_bytes,
        kv_blocks_per_gpu=blocks,
        kv_tokens=blocks * block_size_tokens,
        context_tokens=context_tokens,
        max_model_len=max_model_len,
        blocks_per_sequence=blocks_for(context_tokens, block_size_tokens),
        sequence_bytes_per_gpu=seq_bytes,
        max_concurrency=concurrency,
        engine_gpu_blocks=engine_blocks,
        engine_kv_tokens=engine_tokens,
        engine_available_kv_bytes=max(pool_bytes, 0.0),
        engine_max_concurrency=engine_concurrency,
        sliding_window=model.sliding_window,
        cuda_graph_bytes_per_gpu=cuda_graph_bytes,
        engine_kv_groups=groups,
        state_slots=slots,
        state_pool_bytes_per_gpu=state_bytes,
        running_cap=running_cap,
        state_conv_bytes_per_gpu=conv_bytes,
        detail=detail,
        notes=notes,
    )


def binding_stage(breakdowns: list[MemoryBreakdown]) -> MemoryBreakdown:
    """The stage with the fewest sequences (then blocks, then pool): engines size every stage's
    pool alike and take the minimum over workers."""
    return min(breakdowns, key=lambda m: (m.max_concurrency, m.kv_blocks_per_gpu, m.kv_pool_bytes_per_gpu, m.stage))
