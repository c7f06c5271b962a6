"""One configuration's memory, derived step by step as the seeds derive it, as data.

`explain_config` returns an Explanation: the MemoryBreakdown of the binding pipeline stage plus
the derivation as (label, formula, value) lines, so the CLI can print it and tests can read it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .candidates import parallelism_reason
from .catalog import Gpu
from .engines import EngineDefaults, engine_policy
from .errors import FieldValueError
from .memory import MemoryBreakdown, memory_breakdown
from .model import ModelArch, weight_scheme
from .units import DTYPE_BYTES, GIB, KV_DTYPES, MIB, WEIGHT_DTYPES, ceil_div


@dataclass(frozen=True, slots=True, kw_only=True)
class Line:
    label: str
    formula: str
    value: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Explanation:
    model: ModelArch
    gpu: Gpu
    tp: int
    pp: int
    kv_dtype: str
    weight_dtype: str
    engine: str
    engine_defaults: EngineDefaults
    memory: MemoryBreakdown
    lines: tuple[Line, ...]
    launch_command: str


def _gib(x: float) -> str:
    return f"{x / GIB:,.2f} GiB"


def explain_config(
    model: ModelArch,
    gpu: Gpu,
    *,
    tp: int,
    pp: int,
    kv_dtype: str,
    weight_dtype: str | None = None,
    context_tokens: int | None = None,
    gpu_memory_utilization: float | None = None,
    block_size_tokens: int | None = None,
    max_num_seqs: int | None = None,
    max_num_batched_tokens: int | None = None,
    engine: str = "vllm",
) -> Explanation:
    """Memory of `model` on `gpu` at TP `tp`, PP `pp`, with the given KV and weight formats."""
    if kv_dtype not in KV_DTYPES:
        raise FieldValueError(f"--kv-dtype: expected one of {', '.join(KV_DTYPES)}, got {kv_dtype!r}")
    weight_dtype = weight_dtype or model.native_weight_dtype
    if weight_dtype not in WEIGHT_DTYPES:
        raise FieldValueError(f"--weight-dtype: expected one of {', '.join(WEIGHT_DTYPES)}, got {weight_dtype!r}")
    for name, value in (
        ("--tp", tp),
        ("--pp", pp),
        ("--context-tokens", context_tokens),
        ("--block-size", block_size_tokens),
        ("--max-num-seqs", max_num_seqs),
        ("--max-num-batched-tokens", max_num_batched_tokens),
    ):
        if value is not None and value < 1:
            raise FieldValueError(f"{name}: expected an integer >= 1, got {value}")
    problem = parallelism_reason(model, gpu, tp, pp)
    if problem:
        raise FieldValueError(f"--tp/--pp: {problem}")
    if gpu_memory_utilization is not None and not 0 < gpu_memory_utilization <= 1:
        raise FieldValueError(f"--gpu-memory-utilization: expected a number > 0 and <= 1, got {gpu_memory_utilization:g}")
    policy = engine_policy(engine)
    d = policy.defaults(gpu)
    eng = EngineDefaults(
        max_num_seqs=max_num_seqs if max_num_seqs is not None else d.max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens if max_num_batched_tokens is not None else d.max_num_batched_tokens,
        block_size_tokens=block_size_tokens if block_size_tokens is not None else d.block_size_tokens,
        gpu_memory_utilization=gpu_memory_utilization if gpu_memory_utilization is not None else d.gpu_memory_utilization,
    )
    context = context_tokens if context_tokens is not None else model.max_position_embeddings
    activation = policy.activation_bytes(model, tp, eng.max_num_batched_tokens, eng.max_num_seqs)
    buffers = policy.runtime_buffer_bytes(model)
    overhead = policy.runtime_overhead_bytes(tp)
    m = memory_breakdown(
        model,
        usable_memory_bytes=gpu.usable_memory_bytes,
        gpu_memory_utilization=eng.gpu_memory_utilization,
        tp=tp,
        pp=pp,
        kv_dtype=kv_dtype,
        weight_dtype=weight_dtype,
        block_size_tokens=eng.block_size_tokens,
        context_tokens=context,
        activation_bytes=activation,
        runtime_buffer_bytes=buffers,
        runtime_overhead_bytes=overhead,
    )
    b = DTYPE_BYTES[kv_dtype]
    layers = len(model.stage_layers(pp)[m.stage])
    scheme = weight_scheme(model, weight_dtype)
    if model.is_mla:
        kv_whole = f"{model.num_hidden_layers} layers x ({model.kv_lora_rank} kv_lora_rank + {model.qk_rope_head_dim} qk_rope_head_dim) x {b:g} B"
        kv_gpu = f"{layers} layers on stage {m.stage} x ({model.kv_lora_rank} + {model.qk_rope_head_dim}) x {b:g} B (MLA latent, replicated across TP)"
    else:
        heads_gpu = ceil_div(model.num_key_value_heads, tp)
        kv_whole = f"2 x {model.num_hidden_layers} layers x {model.num_key_value_heads} KV heads x {model.head_dim} head_dim x {b:g} B"
        rep = " (heads replicated: kv_heads < tp)" if model.num_key_value_heads < tp else ""
        kv_gpu = f"2 x {layers} layers on stage {m.stage} x ceil({model.num_key_value_heads}/{tp}) = {heads_gpu} heads x {model.head_dim} x {b:g} B{rep}"
    lines = [
        Line(label="usable memory per GPU", formula=f"{gpu.name}: total the runtime reports", value=_gib(m.usable_memory_bytes)),
        Line(
            label="budget",
            formula=f"x gpu_memory_utilization {m.gpu_memory_utilization:g}",
            value=_gib(m.budget_bytes),
        ),
        Line(
            label="- weights",
            formula=f"stage {m.stage} of {pp}, tp={tp}, {weight_dtype} ({scheme.origin}); {model.total_params() / 1e9:.2f}B params in all",
            value=_gib(m.weights_bytes_per_gpu),
        ),
        Line(
            label="- runtime buffers",
            formula=f"rotary cos/sin cache {model.max_position_embeddings} x {model.rotary_dim} x 2 B",
            value=_gib(m.runtime_buffer_bytes_per_gpu),
        ),
        Line(
            label="- activation peak",
            formula=f"profiling pass of {eng.max_num_batched_tokens} tokens / sampler of {eng.max_num_seqs} sequences",
            value=_gib(m.activation_bytes_per_gpu),
        ),
        Line(label="- non-torch overhead", formula=f"CUDA/NCCL buffers at tp={tp}", value=_gib(m.runtime_overhead_bytes_per_gpu)),
        Line(label="= KV pool per GPU", formula="budget - weights - buffers - activations - overhead", value=_gib(m.kv_pool_bytes_per_gpu)),
        Line(label="KV bytes per token (model)", formula=kv_whole, value=f"{m.kv_bytes_per_token:,.0f} B"),
        Line(label="KV bytes per token per GPU", formula=kv_gpu, value=f"{m.kv_bytes_per_token_per_gpu:,.0f} B"),
        Line(
            label="block",
            formula=f"{m.block_size_tokens} tokens x {m.kv_bytes_per_token_per_gpu:,.0f} B",
            value=f"{m.block_bytes_per_gpu / MIB:,.3f} MiB",
        ),
        Line(label="KV blocks per GPU", formula="floor(pool / block)", value=f"{m.kv_blocks_per_gpu:,}"),
        Line(label="KV tokens per replica", formula=f"blocks x {m.block_size_tokens}", value=f"{m.kv_tokens:,}"),
        Line(
            label="blocks per sequence",
            formula=f"ceil({m.context_tokens:,} tokens / {m.block_size_tokens})",
            value=f"{m.blocks_per_sequence:,}",
        ),
    ]
    if model.sliding_window:
        lines.append(
            Line(
                label="sliding-window layers",
                formula=f"{model.num_sliding_layers} of {model.num_hidden_layers} layers keep at most {model.sliding_window} tokens",
                value=f"{m.sequence_bytes_per_gpu / MIB:,.1f} MiB per sequence",
            )
        )
    lines.append(
        Line(
            label="max concurrency",
            formula=f"floor(pool / {m.sequence_bytes_per_gpu / MIB:,.1f} MiB per {m.context_tokens:,}-token sequence)",
            value=f"{m.max_concurrency:,}",
        )
    )
    cmd = policy.launch_command(
        model,
        tp=tp,
        pp=pp,
        kv_dtype=kv_dtype,
        weight_dtype=weight_dtype,
        max_model_len=context,
        max_num_seqs=eng.max_num_seqs,
        gpu_memory_utilization=eng.gpu_memory_utilization,
        block_size_tokens=eng.block_size_tokens,
    )
    return Explanation(
        model=model,
        gpu=gpu,
        tp=tp,
        pp=pp,
        kv_dtype=kv_dtype,
        weight_dtype=weight_dtype,
        engine=engine,
        engine_defaults=eng,
        memory=m,
        lines=tuple(lines),
        launch_command=cmd,
    )
