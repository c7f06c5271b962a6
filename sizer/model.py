"""Model architecture: import of a Hugging Face `config.json`, parameter counts, and the
per-GPU weight shard under tensor and pipeline parallelism.

The single source of truth for *how many parameters live where*. Units: parameters are
counts (int); bytes only appear when a dtype is applied (`weight_bytes_per_gpu`).

Field names are Hugging Face's own (`num_key_value_heads`, `kv_lora_rank`, ...), so a model
can be pasted from its `config.json`. Unknown keys are ignored; a missing required key is a
clear error naming it.

Parameter groups and how each is sharded across a tensor-parallel group of size `tp`
(vLLM's layer classes: Column/RowParallelLinear split, ReplicatedLinear does not, and
QKVParallelLinear replicates KV heads when num_key_value_heads < tp):

    group            per layer                                      sharding
    attention        q, o projections (+ biases, q/k norms)         / tp (by query heads)
    attention_kv     k, v projections                               ceil(kv_heads / tp) heads per GPU
    attention_rep    MLA q_a / kv_a down-projections and norms      replicated
    mlp              dense gated MLP: 3 * hidden * intermediate     / tp
    experts          routed experts: E * 3 * hidden * moe_inter     / tp (expert weights are TP-sharded)
    shared_experts   shared experts (DeepSeek, Qwen2-MoE)           / tp
    router           gate: hidden * E                               replicated, never quantised
    norms            2 * hidden                                      replicated, never quantised
and, outside the layers, `embedding` (vocab-parallel, / tp), `lm_head` (/ tp, absent when
tied) and the final norm. Pipeline parallelism gives each stage a contiguous run of layers,
the first stage the embedding and the last the lm_head (vLLM `get_pp_indices`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from .errors import FieldTypeError, FieldValueError, InputFileError
from .schema import read_document
from .units import DTYPE_BYTES, GB, ceil_div, normalise_dtype

# Groups a weight quantisation scheme may apply to. Embeddings, lm_head, router and norms stay
# in the activation dtype (vLLM and ModelOpt leave them unquantised by default).
LINEAR_GROUPS = frozenset({"attention", "attention_kv", "attention_rep", "mlp", "experts", "shared_experts"})
SIXTEEN_BIT = "bf16"


@dataclass(frozen=True, slots=True, kw_only=True)
class QuantScheme:
    """How a checkpoint stores its weights: one format applied to a set of parameter groups."""

    dtype: str  # key of units.DTYPE_BYTES
    groups: frozenset[str]  # subset of LINEAR_GROUPS the format applies to
    bytes_per_param: float  # including block / group scales
    origin: str  # where it was read: "config.json quantization_config (fp8)", ...
    excluded: frozenset[tuple[int, str]] = frozenset()  # (layer, group) pairs left in 16 bits

    def applies(self, group: str, layer: int) -> bool:
        return group in self.groups and (layer, group) not in self.excluded


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelArch:
    """A decoder-only transformer as described by its config.json."""

    name: str
    source: str
    hf_id: str | None
    model_type: str
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int  # as the config gives it (the rotary cache's rows)
    tie_word_embeddings: bool
    torch_dtype: str
    # attention variants
    attention_bias: bool = False
    o_proj_bias: bool = False
    qk_norm: bool = False
    kv_lora_rank: int = 0  # > 0 means multi-head latent attention (MLA)
    q_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    rotary_dim: int = 0
    # per-layer attention kind: "full", "sliding", or "linear" (a Gated DeltaNet layer: a fixed
    # recurrent state per sequence instead of a KV cache, Qwen3-Next and Qwen3.5)
    layer_types: tuple[str, ...] = ()
    sliding_window: int = 0
    attention_chunk_size: int = 0  # > 0: the "sliding" layers are chunked local attention (Llama 4), window = chunk
    attn_output_gate: bool = False  # a sigmoid gate on the attention output: q_proj is twice as wide (Qwen3-Next, Qwen3.5)
    # Gated DeltaNet ("linear" layers): heads and head sizes of keys and values, the causal
    # convolution's kernel, and the dtype the recurrent state is kept in (config mamba_ssm_dtype)
    linear_key_heads: int = 0
    linear_value_heads: int = 0
    linear_key_head_dim: int = 0
    linear_value_head_dim: int = 0
    linear_conv_kernel: int = 0
    linear_state_dtype: str = "bf16"
    # mixture of experts
    num_experts: int = 0
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = 0
    shared_experts_intermediate_size: int = 0
    shared_expert_gate: bool = False  # a sigmoid gate on the shared expert's output (hidden -> 1: Qwen2-MoE, Qwen3-Next, Qwen3.5)
    moe_layers: tuple[bool, ...] = ()  # per layer: MoE (True) or dense MLP (False)
    expert_bias: bool = False
    router_bias: bool = False
    attention_sinks: bool = False
    # checkpoint format
    quant: QuantScheme | None = None
    kv_cache_quant: str | None = None  # a KV dtype the checkpoint ships scales for
    # a quantization_config sizer has no format for ("hqq", "awq 3-bit", ...; "" for none): its
    # weights are sized at 16 bits (quant None) and the checkpoint is served as it is, never
    # quantised again at load time (EnginePolicy.online_quantisation)
    unmodelled_quant: str = ""
    mtp_layers: int = 0  # multi-token-prediction layers, not loaded unless speculative decoding uses them
    multimodal: bool = False
    gated_mlp: bool = True  # gate/up/down (SwiGLU, GeGLU); False: fc1/fc2 (Phi-2, GPT-NeoX, StarCoder2)
    mlp_bias: bool = False
    vision_params: float = 0.0  # vision tower + projector, loaded on the first pipeline stage
    # one image at the size that gives the most features (vision_item): pixels of one tile side,
    # tiles per image, LM tokens per image; 0 where the config does not say
    vision_image_size: int = 0
    vision_item_tiles: int = 1
    vision_item_tokens: int = 0
    published_params: float | None = None
    published_params_source: str | None = None
    notes: tuple[str, ...] = field(default=())
    # the longest sequence (prompt + output) the engine serves: vLLM's derived max_model_len, the
    # positions scaled by rope_scaling (context_limit); 0 where none was derived: max_position_embeddings
    context_limit_tokens: int = 0
    context_limit_basis: str = ""  # how it was derived, in words ("" unscaled)
    # rows of each rotary cos/sin cache vLLM's get_rope builds (rope_cache_rows); () where none was
    # derived: one of max_position_embeddings rows
    rope_cache_rows: tuple[int, ...] = ()
    # config.json fields that change memory or speed and that the model above leaves out
    # (unmodelled_fields): each a sentence naming the field, its value and what sizer assumes
    warnings: tuple[str, ...] = field(default=())

    # -- derived ---------------------------------------------------------------------------
    @property
    def max_context_tokens(self) -> int:
        """The longest sequence (prompt + output) the model serves: max_position_embeddings scaled
        as rope_scaling says (context_limit), vLLM's derived max_model_len."""
        return self.context_limit_tokens or self.max_position_embeddings

    @property
    def context_words(self) -> str:
        """The model's context limit and where it comes from, for messages:
        "max_position_embeddings 131,072", or "131,072 positions (original_max_position_embeddings
        32,768 x rope_scaling yarn factor 4; max_position_embeddings 32,768)"."""
        if self.context_limit_basis:
            return f"{self.max_context_tokens:,} positions ({self.context_limit_basis})"
        return f"max_position_embeddings {self.max_context_tokens:,}"

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def attention_kind(self) -> str:
        if self.is_mla:
            return "MLA"
        if self.num_key_value_heads == self.num_attention_heads:
            return "MHA"
        if self.num_key_value_heads == 1:
            return "MQA"
        return "GQA"

    @property
    def native_weight_dtype(self) -> str:
        """The format the checkpoint's (largest) weights are stored in."""
        return self.quant.dtype if self.quant is not None else SIXTEEN_BIT

    @property
    def num_sliding_layers(self) -> int:
        return sum(1 for t in self.layer_types if t == "sliding")

    @property
    def num_linear_layers(self) -> int:
        """Gated DeltaNet layers: a recurrent state per sequence, no KV cache."""
        return sum(1 for t in self.layer_types if t == "linear")

    @property
    def num_kv_layers(self) -> int:
        """Layers that hold a KV cache (softmax attention, full or sliding)."""
        return self.num_hidden_layers - self.num_linear_layers

    @property
    def linear_conv_dim(self) -> int:
        """Channels of a Gated DeltaNet layer's causal convolution: queries, keys and values."""
        return 2 * self.linear_key_heads * self.linear_key_head_dim + self.linear_value_heads * self.linear_value_head_dim

    def linear_state_elements(self, tp: int = 1) -> tuple[float, float]:
        """(convolution state, recurrent state) elements one sequence keeps in one Gated DeltaNet
        layer on one GPU of a TP group of `tp`: the last kernel - 1 inputs of the convolution's
        channels, and a key_dim x value_dim matrix per value head; both split by heads over TP
        (vLLM MambaStateShapeCalculator.gated_delta_net_state_shape; SGLang's Mamba2 cache params)."""
        conv = (self.linear_conv_kernel - 1) * self.linear_conv_dim / tp
        recurrent = self.linear_value_heads / tp * self.linear_key_head_dim * self.linear_value_head_dim
        return conv, recurrent

    # -- parameter counts (whole model) ------------------------------------------------------
    def layer_params(self, layer: int, tp: int = 1) -> dict[str, float]:
        """Parameters of decoder layer `layer` held by one GPU of a TP group of size `tp`, by group."""
        h = self.hidden_size
        heads_per_gpu = self.num_attention_heads / tp
        out: dict[str, float] = {}
        if self.layer_types and self.layer_types[layer] == "linear":
            # Gated DeltaNet (transformers Qwen3NextGatedDeltaNet): in_proj_qkvz (queries, keys,
            # values and the output gate z), in_proj_ba (two scalars a value head), out_proj; all
            # split by heads over TP. The depthwise convolution, A_log, dt_bias and the gated norm
            # are small and stay unquantised.
            key_dim = self.linear_key_heads * self.linear_key_head_dim
            value_dim = self.linear_value_heads * self.linear_value_head_dim
            out["attention"] = (h * (2 * key_dim + 2 * value_dim) + h * 2 * self.linear_value_heads + value_dim * h) / tp
            out["norms"] = (self.linear_conv_dim * self.linear_conv_kernel + 2 * self.linear_value_heads) / tp + self.linear_value_head_dim
        elif self.is_mla:
            qk_head = self.qk_nope_head_dim + self.qk_rope_head_dim
            if self.q_lora_rank:
                rep = h * self.q_lora_rank + self.q_lora_rank  # q_a_proj + q_a_layernorm
                q = self.q_lora_rank * heads_per_gpu * qk_head  # q_b_proj
            else:
                rep = 0.0
                q = h * heads_per_gpu * qk_head  # q_proj
            rep += h * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank  # kv_a_proj_with_mqa + norm
            kv_b = self.kv_lora_rank * heads_per_gpu * (self.qk_nope_head_dim + self.v_head_dim)
            o = heads_per_gpu * self.v_head_dim * h
            out["attention"] = q + kv_b + o
            out["attention_rep"] = rep
        else:
            d = self.head_dim
            kv_heads_per_gpu = ceil_div(self.num_key_value_heads, tp)
            q_o = (3 if self.attn_output_gate else 2) * h * heads_per_gpu * d  # q (and its gate) and o
            if self.attention_bias:
                q_o += heads_per_gpu * d
            if self.o_proj_bias:
                q_o += h  # a row-parallel layer keeps its whole bias on every rank
            if self.attention_sinks:
                q_o += heads_per_gpu
            kv = 2 * h * kv_heads_per_gpu * d
            if self.attention_bias:
                kv += 2 * kv_heads_per_gpu * d
            out["attention"] = q_o
            out["attention_kv"] = kv
            if self.qk_norm:
                out["norms"] = 2 * d
        if self.moe_layers and self.moe_layers[layer]:
            e, mi = self.num_experts, self.moe_intermediate_size
            experts = e * 3 * h * mi
            if self.expert_bias:
                experts += e * (2 * mi + h)
            out["experts"] = experts / tp
            out["router"] = h * e + (e if self.router_bias else 0)
            if self.shared_experts_intermediate_size:
                out["shared_experts"] = 3 * h * self.shared_experts_intermediate_size / tp
                if self.shared_expert_gate:
                    out["router"] += h  # replicated, unquantised, like the router
        else:
            i = self.intermediate_size
            mlp = (3 if self.gated_mlp else 2) * h * i
            if self.mlp_bias:
                mlp += (2 if self.gated_mlp else 1) * i + h * tp  # column biases split, the row bias whole on every rank
            out["mlp"] = mlp / tp
        out["norms"] = out.get("norms", 0.0) + 2 * h
        return out

    def embedding_params(self, tp: int = 1) -> float:
        return self.vocab_size * self.hidden_size / tp

    def lm_head_params(self, tp: int = 1) -> float:
        return 0.0 if self.tie_word_embeddings else self.vocab_size * self.hidden_size / tp

    def total_params(self) -> float:
        """All parameters of the served model (MTP layers excluded; a vision tower included)."""
        layers = sum(sum(self.layer_params(i).values()) for i in range(self.num_hidden_layers))
        return layers + self.embedding_params() + self.lm_head_params() + self.hidden_size + self.vision_params

    def active_params_per_token(self) -> float:
        """Parameters a token passes through: all but the routed experts it is not sent to."""
        total = 0.0
        for i in range(self.num_hidden_layers):
            groups = self.layer_params(i)
            experts = groups.pop("experts", 0.0)
            total += sum(groups.values())
            if experts:
                total += experts * self.num_experts_per_tok / self.num_experts
        return total + self.hidden_size + self.lm_head_params() + (self.embedding_params() if self.tie_word_embeddings else 0.0)

    # -- pipeline stages -------------------------------------------------------------------
    def stage_layers(self, pp: int) -> list[range]:
        """Layer indices held by each pipeline stage (vLLM get_pp_indices: even split, the
        remainder added from the second-to-last stage backwards, sparing the last stage,
        which also holds the lm_head)."""
        n = self.num_hidden_layers
        sizes = [n // pp] * pp
        for i in range(2, n % pp + 2):
            sizes[-i] += 1
        out, start = [], 0
        for size in sizes:
            out.append(range(start, start + size))
            start += size
        return out


# ---------------------------------------------------------------------------------------------
# Weight bytes
# ---------------------------------------------------------------------------------------------


MXFP4_MOE_ORIGIN = "mxfp4 on the routed experts, the other layers 16-bit, as MXFP4 checkpoints of MoE models store them"
"""How an MoE model's MXFP4 weights are sized where its own checkpoint is in another format: the
routed experts in MXFP4, attention, shared experts, dense layers and embeddings in 16 bits. That
is how the MXFP4 checkpoints of MoE models are stored: gpt-oss natively (vLLM's Mxfp4Config
quantises the fused-MoE experts only) and AMD's Quark conversions, whose vLLM startup logs on
MI355X show it (ajith-sirra-amd/InferenceMAX_Rocm_Team@59882861 results/*/server.log, vLLM 0.21
and 0.22: amd/MiniMax-M2.5-MXFP4 at TP 1 "Model loading took 118.75 GiB", 118.63 so sized and
114.90 with MXFP4 on every linear layer; amd/Kimi-K2.5-MXFP4 at TP 4 132.45 GiB, 132.49 so sized;
tests/test_vllm_logs.py)."""


def weight_scheme(model: ModelArch, weight_dtype: str) -> QuantScheme:
    """The quantisation scheme for serving `model` with weights in `weight_dtype`.

    The checkpoint's own scheme when `weight_dtype` is its native format; MXFP4 on an MoE model's
    routed experts only (MXFP4_MOE_ORIGIN); otherwise the format applied to every linear group
    (online quantisation such as vLLM `--quantization fp8`, or a converted checkpoint)."""
    if model.quant is not None and weight_dtype == model.quant.dtype:
        return model.quant
    if weight_dtype in ("bf16", "fp16"):
        return QuantScheme(dtype=weight_dtype, groups=frozenset(), bytes_per_param=DTYPE_BYTES[weight_dtype], origin="16-bit")
    if weight_dtype == "mxfp4" and model.is_moe:
        return QuantScheme(
            dtype=weight_dtype,
            groups=frozenset({"experts"}),
            bytes_per_param=DTYPE_BYTES[weight_dtype],
            origin=MXFP4_MOE_ORIGIN,
        )
    note = nvfp4_moe_note(model, weight_dtype)
    return QuantScheme(
        dtype=weight_dtype,
        groups=LINEAR_GROUPS,
        bytes_per_param=DTYPE_BYTES[weight_dtype],
        origin=f"{weight_dtype} on all linear layers" + (f"; {note}" if note else ""),
    )


def nvfp4_moe_note(model: ModelArch, weight_dtype: str) -> str | None:
    """What sizing an MoE model in nvfp4 on every linear layer leaves out: NVIDIA's NVFP4
    checkpoints of MoE models (TensorRT Model Optimizer) keep attention in 16 bits, all of it in
    nvidia/DeepSeek-R1-FP4 and its q/kv projections in -FP4-v2 ("additionally quantizes the wo
    module in attention layers", the v2 model card); nvidia/GLM-4.7-NVFP4's hf_quant_config.json
    excludes every self_attn module. None for a dense model, another format, or a checkpoint
    already in nvfp4 (its own scheme is read)."""
    if weight_dtype != "nvfp4" or not model.is_moe or (model.quant is not None and model.quant.dtype == "nvfp4"):
        return None
    attention = sum(v for i in range(model.num_hidden_layers) for k, v in model.layer_params(i).items() if k.startswith("attention"))
    extra_gb = attention * (DTYPE_BYTES["bf16"] - DTYPE_BYTES["nvfp4"]) / GB
    return (
        f"NVIDIA's NVFP4 checkpoints of MoE models keep attention (or its q/kv projections) in BF16: up to {extra_gb:,.1f} GB more weights "
        f"a replica than sized here ({attention / 1e9:,.2f}B attention parameters); give the checkpoint's folder (config.json and "
        "hf_quant_config.json) as the model to size its own scheme"
    )


def group_bytes(groups: Mapping[str, float], scheme: QuantScheme, layer: int, expert_scale: float = 1.0) -> float:
    """Bytes of one layer's parameter groups under `scheme`; routed experts scaled by
    `expert_scale` (an engine's padding of expert weights)."""
    total = 0.0
    for name, params in groups.items():
        per = scheme.bytes_per_param if scheme.applies(name, layer) else DTYPE_BYTES[SIXTEEN_BIT]
        total += params * per * (expert_scale if name == "experts" else 1.0)
    return total


@dataclass(frozen=True, slots=True, kw_only=True)
class StageWeights:
    """Weight bytes on one GPU of one pipeline stage."""

    stage: int
    layers: int
    layer_bytes: float
    embedding_bytes: float
    lm_head_bytes: float

    @property
    def total_bytes(self) -> float:
        return self.layer_bytes + self.embedding_bytes + self.lm_head_bytes


def layer_classes(model: ModelArch, scheme: QuantScheme) -> Callable[[int], tuple[bool, int]]:
    """A key per decoder layer, equal for layers with the same parameter groups in the same formats:
    a layer differs from another only by being MoE or dense, and by the scheme's per-layer
    exclusions (an excluded layer is a class of its own). Per-layer sums compute each class once."""
    excluded = {i for i, _ in getattr(scheme, "excluded", ())}
    return lambda i: (bool(model.moe_layers and model.moe_layers[i]), i if i in excluded else -1)


@lru_cache(maxsize=1024)
def stage_weights(
    model: ModelArch, tp: int, pp: int, weight_dtype: str, expert_scale: float = 1.0, vision_replicated: bool = False
) -> tuple[StageWeights, ...]:
    """Weight bytes per GPU for every pipeline stage, at TP degree `tp` (cached: every device of a
    search shares them).

    Routed experts are split across the TP group (or, identically in bytes, across an expert-
    parallel group of the same size: E / ep whole experts instead of every expert / tp). The vision
    tower is split across the TP group too, unless `vision_replicated` (an engine that builds it of
    plain, unsharded layers: every rank holds all of it)."""
    scheme = weight_scheme(model, weight_dtype)
    sixteen = DTYPE_BYTES[SIXTEEN_BIT]
    out = []
    key_of = layer_classes(model, scheme)
    alike: dict[tuple[bool, int], float] = {}

    def layer_bytes_of(i: int) -> float:
        key = key_of(i)
        if key not in alike:
            alike[key] = group_bytes(model.layer_params(i, tp), scheme, i, expert_scale)
        return alike[key]

    for s, layers in enumerate(model.stage_layers(pp)):
        layer_bytes = sum(layer_bytes_of(i) for i in layers)
        emb = (model.embedding_params(tp) + model.vision_params / (1 if vision_replicated else tp)) * sixteen if s == 0 else 0.0
        head = 0.0
        if s == pp - 1:
            # The last stage holds the final norm and the lm_head; a tied lm_head on a different
            # stage than the embedding needs its own copy of the embedding matrix.
            head = model.hidden_size * sixteen
            if model.tie_word_embeddings:
                head += model.embedding_params(tp) * sixteen if pp > 1 else 0.0
            else:
                head += model.lm_head_params(tp) * sixteen
        out.append(StageWeights(stage=s, layers=len(layers), layer_bytes=layer_bytes, embedding_bytes=emb, lm_head_bytes=head))
    return tuple(out)


def weight_bytes_per_gpu(model: ModelArch, tp: int, pp: int, weight_dtype: str, expert_scale: float = 1.0) -> float:
    """Weight bytes on the most loaded GPU (the binding stage), at TP `tp` and PP `pp`."""
    return max(s.total_bytes for s in stage_weights(model, tp, pp, weight_dtype, expert_scale))


def total_weight_bytes(model: ModelArch, weight_dtype: str) -> float:
    """Weight bytes of the whole model in `weight_dtype` (one copy, no parallelism)."""
    return stage_weights(model, 1, 1, weight_dtype)[0].total_bytes


# ---------------------------------------------------------------------------------------------
# config.json import
# ---------------------------------------------------------------------------------------------

_REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")

# What transformers (and vLLM, which builds its config with it) takes for a field a model type's
# config.json leaves out. Google's Gemma 3 checkpoints (google/gemma-3-{4b,12b,27b}-it) give no
# vocab_size, max_position_embeddings or sliding_window_pattern in text_config: the class
# defaults decide them. Only fields that change memory or speed; a field the config gives wins.
TRANSFORMERS_DEFAULTS: dict[str, tuple[str, dict[str, Any]]] = {
    "gemma3_text": (
        "transformers models/gemma3/configuration_gemma3.py Gemma3TextConfig.__init__ (layer_types from "
        "sliding_window_pattern, default 6: every 6th layer full)",
        {
            "vocab_size": 262_208,
            "max_position_embeddings": 131_072,
            "head_dim": 256,
            "num_key_value_heads": 4,
            "sliding_window": 4096,
            "sliding_window_pattern": 6,
            "tie_word_embeddings": True,
        },
    ),
}


# Model types whose config.json spells the shape in GPT-2's or MPT's names: transformers reads them
# through each config class's attribute_map (GPT2Config, GPTBigCodeConfig, GPTJConfig, BloomConfig,
# FalconConfig, MptConfig), and sizer through this table: (the standard name, the type's own names).
ATTRIBUTE_NAMES: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "gpt2": (("hidden_size", ("n_embd",)), ("num_hidden_layers", ("n_layer",)), ("num_attention_heads", ("n_head",)), ("max_position_embeddings", ("n_positions",)), ("intermediate_size", ("n_inner",))),
    "gpt_bigcode": (("hidden_size", ("n_embd",)), ("num_hidden_layers", ("n_layer",)), ("num_attention_heads", ("n_head",)), ("max_position_embeddings", ("n_positions",)), ("intermediate_size", ("n_inner",))),
    "gptj": (("hidden_size", ("n_embd",)), ("num_hidden_layers", ("n_layer",)), ("num_attention_heads", ("n_head",)), ("max_position_embeddings", ("n_positions",)), ("intermediate_size", ("n_inner",))),
    "bloom": (("hidden_size", ("n_embed",)), ("num_hidden_layers", ("n_layer",)), ("num_attention_heads", ("n_head",))),
    "falcon": (("num_hidden_layers", ("n_layer",)), ("num_attention_heads", ("n_head",)), ("intermediate_size", ("ffn_hidden_size",))),
    "mpt": (("hidden_size", ("d_model",)), ("num_hidden_layers", ("n_layers",)), ("num_attention_heads", ("n_heads",)), ("max_position_embeddings", ("max_seq_len",))),
    # OPTConfig: fc1/fc2 are ffn_dim wide (vLLM opt.py OPTDecoderLayer: ColumnParallelLinear(embed_dim, config.ffn_dim))
    "opt": (("intermediate_size", ("ffn_dim",)),),
    # ChatGLM / GLM-4 (THUDM's ChatGLMConfig, vLLM chatglm.py): num_layers, ffn_hidden_size (the gated
    # dense_h_to_4h is 2 x ffn_hidden_size), padded_vocab_size for the embedding and output layer,
    # seq_length, kv_channels; KV heads multi_query_group_num when multi_query_attention
    "chatglm": (("num_hidden_layers", ("num_layers",)), ("intermediate_size", ("ffn_hidden_size",)), ("vocab_size", ("padded_vocab_size",)), ("max_position_embeddings", ("seq_length",)), ("head_dim", ("kv_channels",))),
    # DBRX (transformers DbrxConfig attribute_map; vLLM dbrx.py): d_model, n_layers, n_heads, max_seq_len;
    # KV heads and the experts in the nested attn_config / ffn_config (read in _standard_names)
    "dbrx": (("hidden_size", ("d_model",)), ("num_hidden_layers", ("n_layers",)), ("num_attention_heads", ("n_heads",)), ("max_position_embeddings", ("max_seq_len",))),
}

# Falcon's first checkpoints (tiiuae/falcon-7b, -40b before their in-library conversion) say
# model_type "RefinedWebModel" / "RefinedWeb": vLLM reads them with its own RWConfig
# (vllm/transformers_utils/configs/falcon.py: n_layer, n_head, n_head_kv as num_kv_heads, 1 when
# absent; new_decoder_architecture forced on at hidden_size 8,192, "Hack for falcon-40b") and builds
# FalconForCausalLM, whose KV heads are num_kv_heads under new_decoder_architecture, else 1 under
# multi_query, else every head (vllm/model_executor/models/falcon.py FalconAttention).
_REFINED_WEB_TYPES = ("RefinedWeb", "RefinedWebModel")

# Model types whose transformers config class ties the lm_head to the embeddings when the
# config.json leaves tie_word_embeddings out (PretrainedConfig's default, True, not overridden),
# and whose vLLM model reads config.tie_word_embeddings or always ties. A config that gives the
# field wins. Without this a Command-R config (which gives none) was sized with an untied lm_head:
# 256,000 x 12,288 = 3.1B parameters (6.3 GB) more than CohereForAI/c4ai-command-r-plus's 103.8B.
TIED_BY_DEFAULT: dict[str, str] = {
    "cohere": "transformers CohereConfig(tie_word_embeddings=True); vLLM commandr.py has no lm_head (logits from embed_tokens)",
    "cohere2": "transformers Cohere2Config(tie_word_embeddings=True); vLLM commandr.py has no lm_head (logits from embed_tokens)",
    "starcoder2": "transformers Starcoder2Config(tie_word_embeddings=True); vLLM starcoder2.py: lm_head = embed_tokens when tied",
    "gemma": "transformers GemmaConfig(tie_word_embeddings=True); vLLM gemma.py always ties",
    "gemma2": "transformers Gemma2Config(tie_word_embeddings=True); vLLM gemma2.py always ties",
}


def _standard_names(cfg: dict[str, Any], notes: list[str], aliases: dict[str, str] | None = None) -> dict[str, Any]:
    """`cfg` with ATTRIBUTE_NAMES' fields under their standard names, and what those classes derive
    when a field is absent: the MLP 4 x hidden (GPT-2, GPT-J, StarCoder's n_inner null; Bloom;
    Falcon; MPT's expansion_ratio, default 4), the KV heads (GPTBigCode multi_query, default true:
    1; Falcon: num_kv_heads with new_decoder_architecture, else 1 with multi_query (default true),
    else all heads; MPT attn_config.kv_n_heads), tied embeddings (the classes' default true, GPT-J's
    false). Said in `notes`; each field read under another name is put in `aliases` (standard name:
    the file's), so an error names the field the user wrote."""
    model_type = str(cfg.get("model_type"))
    said = []
    aliases = {} if aliases is None else aliases
    if model_type in _REFINED_WEB_TYPES:
        cfg = {**cfg, "model_type": "falcon"}
        if cfg.get("num_kv_heads") is None:
            if cfg.get("n_head_kv") is not None:
                aliases["num_key_value_heads"] = "n_head_kv"
            cfg["num_kv_heads"] = cfg.pop("n_head_kv", None) or 1
        if cfg.get("hidden_size") == 8192:
            cfg["new_decoder_architecture"] = True
        said.append(f"model_type {model_type!r} read as falcon (vLLM's RWConfig: n_head_kv as num_kv_heads{', new_decoder_architecture at hidden_size 8,192' if cfg.get('hidden_size') == 8192 else ''})")
        model_type = "falcon"
    if model_type not in ATTRIBUTE_NAMES and cfg.get("tie_word_embeddings") is None and model_type in TIED_BY_DEFAULT:
        cfg = {**cfg, "tie_word_embeddings": True}
        notes.append(f"tie_word_embeddings: not in the config; true, as {TIED_BY_DEFAULT[model_type]}")
    if model_type == "qwen" and isinstance(cfg.get("intermediate_size"), int) and not isinstance(cfg.get("intermediate_size"), bool) and cfg["intermediate_size"] >= 2:
        # (a value below 2 is left as the file gives it, for the range check to name as written)
        # Qwen (1.x, QWenLMHeadModel): w1 and w2 are intermediate_size // 2 wide (QWenMLP's
        # ff_dim_in = config.intermediate_size // 2 in Qwen's modeling_qwen.py, and vLLM qwen.py
        # QWenMLP(config.hidden_size, config.intermediate_size // 2)); its heads are kv_channels wide
        # and c_attn has a bias. Qwen-1.8B: 11,008 -> 5,504, 1.84B parameters as published, not 2.65B.
        cfg = {**cfg, "intermediate_size": cfg["intermediate_size"] // 2, "attention_bias": True}
        if cfg.get("head_dim") is None and cfg.get("kv_channels") is not None:
            cfg["head_dim"] = cfg.pop("kv_channels")
            aliases["head_dim"] = "kv_channels"
        notes.append(f"qwen: intermediate_size {cfg['intermediate_size']:,} (the config's half: QWenMLP's w1/w2 width), c_attn bias")
    names = ATTRIBUTE_NAMES.get(model_type)
    if names is None:
        if said:
            notes.append("; ".join(said))
        return cfg
    out = dict(cfg)
    for std, own in names:
        if out.get(std) is None:
            for key in own:
                if out.get(key) is not None:
                    out[std] = out.pop(key)  # read under its standard name (not "a field sizer does not read")
                    said.append(f"{key} as {std}")
                    aliases[std] = key
                    break
    hidden, heads = out.get("hidden_size"), out.get("num_attention_heads")
    if out.get("intermediate_size") is None and model_type != "dbrx" and isinstance(hidden, int) and not isinstance(hidden, bool):
        ratio = out.get("expansion_ratio", 4) if model_type == "mpt" else 4
        if isinstance(ratio, (int, float)) and not isinstance(ratio, bool) and ratio > 0:
            out["intermediate_size"] = int(ratio * hidden)
            said.append(f"intermediate_size {out['intermediate_size']:,} ({ratio:g} x hidden)")
    if out.get("num_key_value_heads") is None and isinstance(heads, int) and not isinstance(heads, bool):
        kv = None
        if model_type == "gpt_bigcode":
            kv = 1 if out.get("multi_query", True) else heads
        elif model_type == "falcon":
            if out.get("new_decoder_architecture") and out.get("num_kv_heads") is not None:
                aliases.setdefault("num_key_value_heads", "num_kv_heads")
            kv = out.pop("num_kv_heads", None) if out.get("new_decoder_architecture") else (1 if out.get("multi_query", True) else heads)
            out.pop("num_kv_heads", None)  # FalconAttention ignores it without new_decoder_architecture
            kv = heads if kv is None else kv
        elif model_type in ("mpt", "dbrx") and isinstance(out.get("attn_config"), Mapping):
            kv = out["attn_config"].get("kv_n_heads")
            aliases["num_key_value_heads"] = "attn_config.kv_n_heads"
        elif model_type == "chatglm":
            # THUDM's configuration_chatglm.py ChatGLMConfig: multi_query_attention=False,
            # multi_query_group_num=1 (vLLM chatglm.py: total_num_kv_heads = multi_query_group_num
            # if multi_query_attention else num_attention_heads)
            kv = out.pop("multi_query_group_num", None) if out.get("multi_query_attention") else heads
            if out.get("multi_query_attention"):
                aliases["num_key_value_heads"] = "multi_query_group_num"
                if kv is None:
                    kv = 1
                    said.append("multi_query_group_num 1 (not in the config: ChatGLMConfig's default)")
        if kv is not None:
            out["num_key_value_heads"] = kv
            said.append(f"num_key_value_heads {kv}")
    if model_type == "dbrx" and isinstance(out.get("ffn_config"), Mapping):
        # DbrxFFNConfig: every layer is MoE, moe_num_experts experts of ffn_hidden_size, moe_top_k per token
        ffn = out["ffn_config"]
        for std, key in (("num_local_experts", "moe_num_experts"), ("num_experts_per_tok", "moe_top_k"), ("moe_intermediate_size", "ffn_hidden_size")):
            if out.get(std) is None and ffn.get(key) is not None:
                out[std] = ffn[key]
                said.append(f"ffn_config.{key} as {std}")
                aliases[std] = f"ffn_config.{key}"
    if model_type == "chatglm" and out.get("add_qkv_bias"):
        out["attention_bias"] = True
    if out.get("tie_word_embeddings") is None:
        # the config classes' defaults: GPT-J, DBRX and ChatGLM untied, the others PretrainedConfig's True
        out["tie_word_embeddings"] = model_type not in ("gptj", "dbrx", "chatglm")
    if said:
        notes.append(f"{model_type}: {', '.join(said)} (transformers' attribute_map and defaults of its config class)")
    return out


# Architectures sizer cannot size: their serving memory is not (only) a KV cache of softmax
# attention per token, or they do not generate with a decoder. Each refused in one line naming the
# field that says so, instead of a figure sized as a decoder-only transformer (a BERT config was
# sized as a 12-layer decoder; Jamba-v0.1 as 32 attention + MoE layers: 92B parameters and 131,072
# KV bytes a token, where it has 52B and 4 attention layers, 16,384 bytes, beside 28 Mamba layers'
# fixed state per sequence).
ENCODER_ONLY_TYPES = frozenset({"bert", "roberta", "xlm-roberta", "distilbert", "albert", "camembert", "deberta", "deberta-v2", "electra", "modernbert", "nomic_bert", "mpnet", "xlm"})
ENCODER_DECODER_TYPES = frozenset({"t5", "mt5", "umt5", "longt5", "switch_transformers", "bart", "mbart", "pegasus", "pegasus_x", "marian", "m2m_100", "nllb-moe", "whisper", "prophetnet", "led", "blenderbot", "seamless_m4t", "seamless_m4t_v2", "speech_to_text"})
STATE_SPACE_TYPES = frozenset({"mamba", "mamba2", "falcon_mamba", "rwkv", "rwkv5", "rwkv6", "rwkv7", "xlstm", "recurrent_gemma"})
# Fields that place state-space (Mamba) or lightning-attention layers beside attention layers
HYBRID_FIELDS = ("hybrid_override_pattern", "layers_block_type", "attn_layer_period", "attn_type_list", "mamba_d_state", "mamba_num_heads", "ssm_state_size", "mamba_d_ssm")


def refuse_unsizable(cfg: Mapping[str, Any], outer: Mapping[str, Any] | None, where: str) -> None:
    """Raise FieldValueError, one line naming the file and field, for a config whose architecture
    sizer cannot size: encoder-only (BERT: no decoder, no KV cache), encoder-decoder (T5, Whisper:
    an encoder pass and a cross-attention cache per request), state-space or recurrent models
    (Mamba, RWKV: a fixed state per sequence), hybrids of those with attention (Jamba, Zamba,
    Falcon-H1, Nemotron-H, Bamba) and MiniMax-01's lightning attention. Gated DeltaNet layers
    (Qwen3-Next, Qwen3.5: linear_num_value_heads beside linear_attention layer_types) are modelled."""
    for where_cfg in (outer, cfg):
        if where_cfg is None:
            continue
        model_type = str(where_cfg.get("model_type", ""))
        what = None
        if model_type in ENCODER_ONLY_TYPES:
            what = "an encoder-only model (no decoder, no KV cache; vLLM serves it for embeddings or classification)"
        elif model_type in ENCODER_DECODER_TYPES or where_cfg.get("is_encoder_decoder") is True:
            field = "model_type" if model_type in ENCODER_DECODER_TYPES else "is_encoder_decoder"
            raise FieldValueError(
                f"{where}: {field}: {model_type!r} is an encoder-decoder model (an encoder pass and a cross-attention cache per request); "
                "sizer sizes decoder-only transformers and cannot size it"
            )
        elif model_type in STATE_SPACE_TYPES:
            what = "a state-space / recurrent model (a fixed state per sequence, no KV cache)"
        if what:
            raise FieldValueError(f"{where}: model_type: {model_type!r} is {what}; sizer sizes decoder-only transformers' KV caches and cannot size it")
    for key in HYBRID_FIELDS:
        value = cfg.get(key)
        if key == "attn_type_list" and isinstance(value, list) and value and all(t == 1 and not isinstance(t, bool) for t in value):
            # MiniMax's per-layer list: 0 a lightning (linear) attention layer, 1 a softmax one (SGLang
            # configs/minimax_text_01 linear_layer_ids: attn_type == 0). MiniMax-M2/M2.5 configs carry
            # [1] * 62: every layer softmax attention, a decoder sizer sizes
            continue
        if _active(value):
            raise FieldValueError(
                f"{where}: {key}: state-space (Mamba) or lightning-attention layers beside attention layers (model_type {cfg.get('model_type')!r}): "
                "their fixed per-sequence state and weights are not modelled; sizer cannot size this hybrid"
            )
    types = cfg.get("layer_types")
    if isinstance(types, list) and "linear_attention" in [str(t) for t in types] and not _active(cfg.get("linear_num_value_heads")):
        raise FieldValueError(
            f"{where}: layer_types: linear_attention layers without linear_num_value_heads (model_type {cfg.get('model_type')!r}): "
            "not Gated DeltaNet (Qwen3-Next), the one linear attention sizer models (MiniMax-01's lightning attention is not); sizer cannot size it"
        )


def _with_type_defaults(cfg: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """`cfg` with its model type's TRANSFORMERS_DEFAULTS for the fields it leaves out (each said
    in `notes`). A Gemma 3 wrapper's text_config without a model_type is gemma3_text."""
    model_type = cfg.get("model_type")
    entry = TRANSFORMERS_DEFAULTS.get(str(model_type)) if model_type is not None else None
    if entry is None:
        return cfg
    source, defaults = entry
    missing = {k: v for k, v in defaults.items() if cfg.get(k) is None and not (k == "sliding_window_pattern" and cfg.get("layer_types"))}
    if not missing:
        return cfg
    notes.append(f"{', '.join(f'{k} {v:,}' if isinstance(v, int) and not isinstance(v, bool) else f'{k} {v}' for k, v in missing.items())}: not in the config; taken as transformers' defaults, as vLLM loads it ({source})")
    return {**cfg, **missing}


def resolve_config_path(path: Path) -> Path:
    """A config.json path, or a folder that holds one."""
    if path.is_dir():
        candidate = path / "config.json"
        if not candidate.is_file():
            raise InputFileError(f"{path}: folder holds no config.json")
        return candidate
    return path


def config_file_prefix(path: Path) -> str | None:
    """What a config file's name says of its model: None for `config.json` (the checkpoint folder's
    own file, named by its folder), else the name without `.json` and a trailing `config`
    (`deepseek-ai--DeepSeek-V3_config.json` -> `deepseek-ai--DeepSeek-V3`), the way configs are
    saved side by side outside their checkpoints."""
    if path.name.lower() == "config.json":
        return None
    stem = path.name[:-5] if path.name.lower().endswith(".json") else path.name
    stripped = re.sub(r"[._-]?config$", "", stem, flags=re.IGNORECASE)
    return stripped or stem


def quant_config_path(path: Path) -> Path:
    """The hf_quant_config.json read with the config file `path`: the sibling of that name beside
    config.json, or `<prefix>_hf_quant_config.json` beside `<prefix>_config.json`."""
    prefix = config_file_prefix(path)
    if prefix is None:
        return path.parent / "hf_quant_config.json"
    joiner = path.name[len(prefix) : len(path.name) - len("config.json")]  # "_", "-", "." or ""
    return path.parent / f"{prefix}{joiner}hf_quant_config.json"


def load_config_json(path: Path, *, name: str | None = None, label: str | None = None) -> ModelArch:
    """Read a Hugging Face config.json (and its hf_quant_config.json, if present: quant_config_path)."""
    path = resolve_config_path(Path(path))
    raw = read_document(path, label or str(path))
    quant_raw = None
    sibling = quant_config_path(path)
    if sibling.is_file():
        quant_raw = read_document(sibling)
    prefix = config_file_prefix(path)
    default = prefix if prefix is not None else (path.parent.name or path.stem)
    return arch_from_config(raw, name=name or default, source=label or str(path), hf_quant_config=quant_raw)


# The range of each size a config.json gives (others: 0 to 2^30). Beyond them no model has been
# published, and the arithmetic loses its meaning (a 10^7-layer model takes minutes to walk; a
# million heads is a typo). Lower bounds of 1: a size of zero divides.
_INT_RANGES: dict[str, tuple[int, int]] = {
    "hidden_size": (1, 2**20),
    "num_hidden_layers": (1, 1024),
    "num_attention_heads": (1, 2**14),
    "num_key_value_heads": (1, 2**14),
    "head_dim": (1, 2**13),
    "vocab_size": (1, 2**24),
    "intermediate_size": (0, 2**24),
    "intermediate_size_mlp": (0, 2**24),
    "moe_intermediate_size": (0, 2**24),
    "shared_expert_intermediate_size": (0, 2**24),
    "shared_intermediate_size": (0, 2**24),
    "num_local_experts": (0, 2**16),
    "num_experts": (0, 2**16),
    "n_routed_experts": (0, 2**16),
    "moe_num_experts": (0, 2**16),
    "n_shared_experts": (0, 2**10),
    "kv_lora_rank": (0, 2**16),
    "q_lora_rank": (0, 2**16),
    "qk_nope_head_dim": (0, 2**13),
    "qk_rope_head_dim": (0, 2**13),
    "v_head_dim": (0, 2**13),
    "rotary_dim": (0, 2**13),
    "num_nextn_predict_layers": (0, 1024),
    "sliding_window": (0, 2**30),
}


class _Where(str):
    """A config file's name for error messages, with the fields the file wrote under another name
    (_standard_names' aliases), so a message names the field as the user wrote it."""

    aliases: Mapping[str, str] = {}

    def __new__(cls, where: str, aliases: Mapping[str, str]):
        out = super().__new__(cls, where)
        out.aliases = dict(aliases)
        return out


def _field_name(key: str, where: str) -> str:
    alias = getattr(where, "aliases", {}).get(key)
    return f"{alias} (read as {key})" if alias else key


def _int(cfg: Mapping[str, Any], key: str, where: str, default: Any = None) -> int:
    value = cfg.get(key, default)
    if value is None:
        if default is None:
            raise FieldValueError(f"{where}: {_field_name(key, where)}: required field is missing")
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float) and not value.is_integer()):
        raise FieldTypeError(f"{where}: {_field_name(key, where)}: expected an integer, got {value!r}")
    lo, hi = _INT_RANGES.get(key, (0, 2**30))
    if value == default and value < lo:  # a default of 0 means "absent"
        return int(value)
    if not lo <= value <= hi:
        raise FieldValueError(f"{where}: {_field_name(key, where)}: expected an integer from {lo} to {hi:,}, got {value}")
    return int(value)


def _number(cfg: Mapping[str, Any], key: str, where: str, gt: float, le: float) -> float | None:
    """An optional finite number in (gt, le]; None when absent (or null)."""
    value = cfg.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FieldTypeError(f"{where}: {key}: expected a number, got {value!r}")
    if not gt < value <= le:  # NaN fails too
        raise FieldValueError(f"{where}: {key}: expected a number > {gt:g} and <= {le:g}, got {value}")
    return float(value)


# The keys vLLM reads a model's length from, and its length where a config gives none:
# _get_and_verify_max_len (vllm-project/vllm@18ec6629253632af0a384f2ffbb8c6b28af322e7:
# vllm/config/model.py) takes the smallest of LENGTH_KEYS the config gives, model_max_length over
# them where set, else "Assuming the model's maximum length is 2048" with a warning. transformers'
# LlamaConfig defaults max_position_embeddings to 2048 too
# (huggingface/transformers@4bdeeced9ce971bed8cca7ab203c3b70cffab4ca:src/transformers/models/llama/configuration_llama.py).
LENGTH_KEYS = (
    "max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
    "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len",
)  # fmt: skip
VLLM_DEFAULT_MAX_LEN_TOKENS = 2048


def _positions(cfg: Mapping[str, Any], where: str) -> tuple[int, str]:
    """The model's positions as vLLM reads them (LENGTH_KEYS: the smallest given, model_max_length
    over them), and a warning where the config gives none and vLLM's default of 2,048 is taken
    ("" otherwise). Before rope scaling (context_limit)."""
    given = {key: _int(cfg, key, where, 0) for key in LENGTH_KEYS}
    given = {key: value for key, value in given.items() if value}
    if given.get("model_max_length"):
        return given["model_max_length"], ""
    if given:
        return min(given.values()), ""
    return VLLM_DEFAULT_MAX_LEN_TOKENS, (
        f"max_position_embeddings: not in the config, nor any other length vLLM reads ({', '.join(LENGTH_KEYS[1:])}): "
        f"the context taken as {VLLM_DEFAULT_MAX_LEN_TOKENS:,} tokens, vLLM's default for such a config (\"Assuming the model's maximum length is 2048\") "
        "and transformers' LlamaConfig default; a model type whose transformers config class defaults otherwise serves that length: "
        "give max_position_embeddings"
    )


# rope types whose `factor` does not lengthen the context: their max_position_embeddings already
# is the scaled one (Llama 3.1: 131,072 with factor 8 on 8,192); "su" is longrope's old name
_UNSCALED_ROPE_TYPES = ("su", "longrope", "llama3")


def context_limit(cfg: Mapping[str, Any], positions: int, model_type: str, where: str) -> tuple[int, str]:
    """The longest sequence vLLM serves `cfg` at: (tokens, how, in words; "" when it is `positions`,
    the config's max_position_embeddings).

    vLLM's _get_and_verify_max_len (vllm-project/vllm@18ec6629253632af0a384f2ffbb8c6b28af322e7:
    vllm/config/model.py): unless the model type is a Gemma 3 (its 128K already scaled), every rope
    type but su, longrope and llama3 multiplies the length by the rope's `factor` (default 1.0:
    "default" and mrope have none), and yarn multiplies original_max_position_embeddings instead
    of max_position_embeddings; with rope parameters per layer type (transformers v5) the last
    factor counts. The legacy key `type` reads as `rope_type` (patch_rope_scaling_dict,
    vllm-project/vllm@e23031f0761f0614b463af01210cfbfc6f281b4a:vllm/transformers_utils/config.py).
    Qwen2.5-7B with Qwen's {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}:
    32,768 x 4 = 131,072."""
    params, _ = _rope_entries(cfg)
    if not params or "gemma3" in model_type:
        return positions, ""
    base, base_words, factor, kind = positions, f"max_position_embeddings {positions:,}", 1.0, ""
    for name, rp in params:
        rope_type = _rope_type(rp)
        if rope_type in _UNSCALED_ROPE_TYPES:
            continue
        if rp.get("factor") is not None:
            factor = _rope_factor(rp, name, where)
            kind = f"{name} {rope_type} factor {rp['factor']:g}"
        if rope_type == "yarn":
            original = _rope_original(rp, name, where)
            if original is not None:
                base, base_words = original, f"original_max_position_embeddings {original:,}"
    tokens = int(base * factor)
    if tokens == positions:  # DeepSeek-V3's 4,096 x 40, gpt-oss's 4,096 x 32: the positions given
        return positions, ""
    scaled = f"{base_words} x {kind}" if kind else base_words
    return tokens, scaled if base_words.startswith("max_position_embeddings") else f"{scaled}; max_position_embeddings {positions:,}"


def rope_cache_rows(cfg: Mapping[str, Any], positions: int, where: str) -> tuple[int, ...]:
    """Rows of each rotary cos/sin cache vLLM builds for `cfg`: one per distinct rope (get_rope keeps
    one instance per parameter set, vllm/model_executor/layers/rotary_embedding/__init__.py), each
    [rows, rotary_dim] in the model dtype (base.py: cache.to(dtype)). The rows by rope type:

    - linear and dynamic: max_position_embeddings x factor (linear_scaling_rope.py,
      dynamic_ntk_scaling_rope.py: "the maximum length after applying the rope scaling");
    - yarn and deepseek_yarn: original_max_position_embeddings x factor, rounded up
      (yarn_scaling_rope.py; DeepSeek-V3: 4,096 x 40 = its 163,840 positions);
    - longrope (su): the short cache of original_max_position_embeddings rows (the config's own
      field first, as Phi-3 gives it, then the rope's) and the long one of max_position_embeddings,
      concatenated (phi3_long_rope_scaled_rope.py);
    - default, llama3, mrope and the rest: max_position_embeddings.

    Gemma 3's sliding-window layers use their own default rope at rope_local_base_freq (the
    checkpoint's rope_scaling is the global layers'), as do rope_parameters given per layer type.
    Gemma-3-4B: 131,072 rows for the local rope and 131,072 x 8 for the global linear one, x 256
    x 2 B = 576 MiB, where one unscaled cache was 64 MiB: vLLM 0.19 logs "Model loading took 8.58
    GiB" against 8.07 for the parameters and that one cache (tests/test_vllm_logs.py)."""
    entries, per_layer = _rope_entries(cfg)
    entries = entries or [("rope_scaling", {})]  # no rope parameters: one default rope
    local = cfg.get("rope_local_base_freq")
    if local is not None and not per_layer:
        entries.append(("rope_local_base_freq", {"rope_type": "default", "rope_theta": local}))
    rows: list[int] = []
    seen: list[Mapping[str, Any]] = []
    for name, rp in entries:
        if rp in seen:  # one get_rope instance per parameter set
            continue
        seen.append(rp)
        rope_type = _rope_type(rp)
        factor = _rope_factor(rp, name, where) if rope_type in ("linear", "dynamic", "yarn", "deepseek_yarn") else 1.0
        original = _rope_original(rp, name, where) or positions
        if rope_type in ("linear", "dynamic"):
            rows.append(int(positions * factor))
        elif rope_type in ("yarn", "deepseek_yarn"):
            rows.append(math.ceil(original * factor))
        elif rope_type in ("longrope", "su"):
            # Phi-3 keeps its pretrained length outside the rope (config.original_max_position_embeddings
            # 4,096 beside max_position_embeddings 131,072), and transformers' rope validation gives
            # that top-level figure priority when it fills rope_parameters, which get_rope reads
            top = _rope_original(cfg, "config", where)
            rows.append((top or original) + positions)
        else:
            rows.append(positions)
    return tuple(rows)


def _rope_entries(cfg: Mapping[str, Any]) -> tuple[list[tuple[str, Mapping[str, Any]]], bool]:
    """The rope parameter sets a config gives, each with its field name, and whether they are per
    layer type: rope_scaling (or transformers v5's rope_parameters) as one set, or one per layer
    type when every value is a set of its own; [] when it gives none."""
    key = "rope_scaling" if isinstance(cfg.get("rope_scaling"), Mapping) else "rope_parameters"
    rope = cfg.get(key)
    if not isinstance(rope, Mapping) or not rope:
        return [], False
    if all(isinstance(v, Mapping) for v in rope.values()):
        return [(f"{key}.{k}", v) for k, v in rope.items()], True
    return [(key, rope)], False


def _rope_type(rp: Mapping[str, Any]) -> str:
    """A rope's type; the legacy key `type` reads as `rope_type` (patch_rope_scaling_dict)."""
    return str(rp.get("rope_type") or rp.get("type") or "default")


def _rope_factor(rp: Mapping[str, Any], name: str, where: str) -> float:
    """A rope's `factor` (1.0 when absent), checked."""
    value = rp.get("factor")
    if value is None:
        return 1.0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FieldTypeError(f"{where}: {name}.factor: expected a number (the rope's length multiplier), got {_short(value)}")
    if not 0 < value <= 2**20:  # NaN fails too
        raise FieldValueError(f"{where}: {name}.factor: expected a number > 0 and <= {2**20:,} (the rope's length multiplier), got {value}")
    return float(value)


def _rope_original(rp: Mapping[str, Any], name: str, where: str) -> int | None:
    """A rope's original_max_position_embeddings, checked; None when absent."""
    original = rp.get("original_max_position_embeddings")
    if original is None:
        return None
    if isinstance(original, bool) or not isinstance(original, int):
        raise FieldTypeError(f"{where}: {name}.original_max_position_embeddings: expected an integer, got {_short(original)}")
    if not 0 < original <= 2**30:
        raise FieldValueError(f"{where}: {name}.original_max_position_embeddings: expected an integer from 1 to {2**30:,}, got {original}")
    return original


def _int_list(cfg: Mapping[str, Any], key: str, where: str) -> list[int]:
    """An optional list of integers >= 0 (layer indices); [] when absent."""
    value = cfg.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in value):
        raise FieldTypeError(f"{where}: {key}: expected a list of integers >= 0, got {value!r}")
    return value


# ---------------------------------------------------------------------------------------------
# config.json fields the model leaves out
# ---------------------------------------------------------------------------------------------

# Fields arch_from_config reads (above): the architecture sizer models.
READ_FIELDS = frozenset(
    {
        "_name_or_path", "attention_bias", "decoder_sparse_step", "dtype", "experts_per_token", "first_k_dense_replace",
        "head_dim", "hidden_size", "interleave_moe_layer_step", "intermediate_size", "intermediate_size_mlp",
        "kv_lora_rank", "layer_types", "max_position_embeddings", "max_sequence_length", "max_window_layers",
        "n_positions", "max_seq_len", "seq_length", "model_max_length", "max_target_positions", "max_seq_length", "seq_len",
        "mlp_only_layers", "model_type", "moe_intermediate_size", "moe_layer_freq", "moe_num_experts", "moe_topk",
        "n_routed_experts", "n_shared_experts", "num_attention_heads", "num_experts", "num_experts_per_tok",
        "num_experts_per_token", "num_hidden_layers", "num_key_value_heads", "num_local_experts",
        "num_nextn_predict_layers", "partial_rotary_factor", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
        "quantization_config", "rope_parameters", "rope_scaling", "rotary_dim", "shared_expert_intermediate_size", "shared_intermediate_size",
        "sliding_window", "sliding_window_pattern", "text_config", "tie_word_embeddings", "top_k_experts",
        "attention_chunk_size", "no_rope_layer_interval", "vision_config",
        "torch_dtype", "use_qk_norm", "use_sliding_window", "v_head_dim", "vocab_size",
    }
)  # fmt: skip

# Fields that change neither the memory nor the speed of serving: token ids, training and
# generation settings, numerics of the same computation, bookkeeping.
NO_EFFECT_FIELDS = frozenset(
    {
        "architectures", "auto_map", "transformers_version", "initializer_range", "hidden_act", "hidden_activation",
        "use_cache", "rope_theta", "rope_interleave", "indexer_rope_interleave",
        "router_aux_loss_coef", "aux_loss_alpha", "seq_aux", "norm_topk_prob", "routed_scaling_factor", "scoring_func",
        "topk_method", "n_group", "topk_group", "ep_size", "pretraining_tp", "tokenizer_class", "temperature", "top_p",
        "top_k", "num_beams", "do_sample", "max_length", "min_length", "repetition_penalty", "length_penalty",
        "no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences",
        "diversity_penalty", "num_beam_groups", "typical_p", "early_stopping", "exponential_decay_length_penalty",
        "suppress_tokens", "begin_suppress_tokens", "torchscript", "use_bfloat16", "tf_legacy_loss", "id2label",
        "label2id", "problem_type", "finetuning_task", "prefix", "task_specific_params", "is_decoder",
        "add_cross_attention", "cross_attention_hidden_size", "tie_encoder_decoder", "pruned_heads",
        "chunk_size_feed_forward", "remove_invalid_values", "ignore_index", "final_logit_softcapping",
        "attn_logit_softcapping", "query_pre_attn_scalar", "swiglu_limit", "qk_norm_type", "mlp_bias",
        "use_routing_bias", "initial_context_length", "mamba_ssm_dtype", "use_bidirectional_attention",
        "vision_soft_tokens_per_image", "use_unified_vision_chunk", "video_placeholder", "mtp_transformer_layers",
        "num_mtp_modules", "use_mtp", "mtp_num_hidden_layers", "mtp_use_dedicated_embeddings", "qk_head_dim",
        "vocab_size_per_layer_input", "rope_local_base_freq", "rope_type", "original_max_position_embeddings",
        "router_jitter_noise", "output_router_logits", "embedding_multiplier", "residual_multiplier",
        "logits_scaling", "attention_multiplier", "head_dim_original", "bos_token", "eos_token",
        "layer_norm_epsilon", "layer_norm_eps", "rms_norm_eps", "norm_eps", "use_return_dict",
        "_attn_implementation", "_attn_implementation_autoset", "attn_implementation", "keys_to_ignore_at_inference",
        "use_scaled_rope", "no_rope_layers", "nope_layer_interval", "attn_temperature_tuning", "floor_scale",
        "attn_scale", "router_z_loss_coef", "moe_aux_loss_coeff", "num_nextn_predict_layers_skip", "producer",
        "quantization", "max_window_layers_original", "output_attentions", "output_hidden_states", "output_scores",
        "return_dict", "return_dict_in_generate", "is_encoder_decoder_original",
    }
)  # fmt: skip
_NO_EFFECT_PATTERN = re.compile(r"(_token_ids?$|_token_index$|_token$|dropout|_eps$|^forced_|_id$|_ids$|penalty$|init|loss|jitter)")
# Names that usually describe the network's shape: a field like this that sizer neither reads
# nor knows to be harmless is named in a warning.
_SHAPE_PATTERN = re.compile(r"(head|layer|expert|window|chunk|kv|attention|attn|hidden|intermediate|mlp|moe|ffn|lora|mamba|ssm|conv|state|dim|size|num_|^n_)")


def _active(value: Any) -> bool:
    return value not in (None, False, 0, "", [], {}) and not (isinstance(value, float) and value == 0.0)


def _fmt_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"{value:,}" if isinstance(value, int) else f"{value:g}"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, Mapping):
        return "a section"
    return repr(value)


def unmodelled_fields(
    cfg: Mapping[str, Any], outer: Mapping[str, Any] | None = None, *, chunked_attention: bool = False, vision_counted: bool = False
) -> tuple[str, ...]:
    """Warnings, one per config.json field that changes memory or speed and that sizer's model
    leaves out, each naming the field, its value and what sizer assumes instead. `cfg` is the
    language model's config (text_config when there is one), `outer` the wrapper around it.

    Known fields are checked for whether they are in effect (Gemma 4's global_head_dim,
    num_global_key_value_heads, attention_k_eq_v, num_kv_shared_layers, enable_moe_block; an
    attention_chunk_size the layer rule above did not use; DeepSeek sparse attention's indexer; Qwen3-Next/3.5's linear-attention
    layers; vision towers sizer could not count and audio towers; a sliding window no layer rule
    applies to). Any other field sizer neither reads nor knows to be harmless, whose name
    suggests the network's shape and whose value is set, is named as not read."""
    out: list[str] = []
    head_dim = cfg.get("head_dim") or (cfg.get("hidden_size", 0) // max(int(cfg.get("num_attention_heads") or 1), 1))
    kv_heads = cfg.get("num_key_value_heads") or cfg.get("num_attention_heads")
    handled: set[str] = set()

    def warn(key: str, text: str) -> None:
        handled.add(key)
        out.append(f"{key} = {_fmt_value(cfg.get(key))}: {text}")

    v = cfg.get("global_head_dim")
    if _active(v) and v != head_dim:
        warn("global_head_dim", f"full-attention layers' head size, not modelled: every layer's KV is counted at head_dim {head_dim}")
    v = cfg.get("num_global_key_value_heads")
    if _active(v) and v != kv_heads:
        warn("num_global_key_value_heads", f"full-attention layers' KV heads, not modelled: every layer's KV is counted with num_key_value_heads {kv_heads}")
    if _active(cfg.get("attention_k_eq_v")):
        warn("attention_k_eq_v", "keys double as values (one cached tensor), not modelled: K and V are both counted")
    if _active(cfg.get("num_kv_shared_layers")):
        warn("num_kv_shared_layers", "layers that reuse an earlier layer's KV cache, not modelled: every layer's KV is counted")
    if _active(cfg.get("hidden_size_per_layer_input")):
        warn("hidden_size_per_layer_input", "per-layer input embeddings, not counted in the weights")
    if _active(cfg.get("use_double_wide_mlp")):
        warn("use_double_wide_mlp", "MLPs twice as wide on some layers, not modelled")
    if _active(cfg.get("enable_moe_block")):
        dense = cfg.get("intermediate_size")
        warn(
            "enable_moe_block",
            f"Gemma 4's MoE block layout is not modelled: the experts are counted, a dense MLP of intermediate_size {_fmt_value(dense)} beside them is not",
        )
    v = cfg.get("attention_chunk_size")
    if _active(v) and not chunked_attention:
        warn("attention_chunk_size", f"chunked local attention (KV held up to {_fmt_value(v)} tokens on those layers) beside layer_types, not modelled: layer_types decides")
    index = [k for k in ("index_topk", "index_n_heads", "index_head_dim") if _active(cfg.get(k))]
    if index:
        handled.update(("index_topk", "index_n_heads", "index_head_dim"))
        out.append(
            ", ".join(f"{k} = {_fmt_value(cfg[k])}" for k in index)
            + ": DeepSeek sparse attention's indexer (its key cache and top-k attention), not modelled: attention counted as dense"
        )
    for key in ("multi_query", "num_kv_heads", "n_head_kv", "num_key_value_groups"):
        if _active(cfg.get(key)) and cfg.get("num_key_value_heads") is None and str(cfg.get("model_type")) not in ATTRIBUTE_NAMES:
            warn(key, f"KV heads under a name sizer does not read: KV counted with num_key_value_heads = num_attention_heads ({kv_heads})")
    types = cfg.get("layer_types")
    if isinstance(types, list):
        other = sorted({str(t) for t in types if "sliding" not in str(t) and "full" not in str(t) and str(t) not in ("attention", "global", "linear_attention")})
        if other:
            n = sum(1 for t in types if str(t) in other)
            warn("layer_types", f"{n} of {len(types)} layers are {', '.join(other)} (no KV cache of that kind is modelled): counted as full attention")
    linear_read = (isinstance(types, list) and "linear_attention" in [str(t) for t in types]) or (
        _active(cfg.get("full_attention_interval")) and _active(cfg.get("linear_num_value_heads"))
    )
    for key in ("full_attention_interval", "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim"):
        if _active(cfg.get(key)) and not linear_read:
            warn(key, "linear-attention head sizes without layer_types naming linear_attention layers (or full_attention_interval): every layer counted as softmax attention")
            break
    for key in ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim", "full_attention_interval", "attn_output_gate"):
        handled.add(key)
    handled.add("attn_type_list")  # read by refuse_unsizable: here every layer softmax attention, as sized
    if _active(cfg.get("cross_attention_layers")):
        warn("cross_attention_layers", "cross-attention layers (image keys and values), not modelled")
    window = cfg.get("sliding_window")
    if isinstance(window, (int, float)) and not isinstance(window, bool) and window > 0 and cfg.get("use_sliding_window") is not False:
        known = isinstance(types, list) or cfg.get("sliding_window_pattern") or cfg.get("use_sliding_window") is True
        if not known and str(cfg.get("model_type")) not in ("gemma2", "mistral"):
            warn(
                "sliding_window",
                f"no layer_types or sliding_window_pattern says which layers slide (model_type {cfg.get('model_type')!r}): every layer holds the whole context",
            )
    handled.add("attention_chunk_size")
    for where in (outer, cfg):
        if where is None:
            continue
        for key in ("vision_config", "audio_config", "speech_config"):
            if _active(where.get(key)) and not (key == "vision_config" and vision_counted) and key not in handled:
                handled.add(key)
                out.append(f"{key} = a section: the {key.split('_')[0]} encoder's weights and activations are not counted")
    for key, value in cfg.items():
        if key in handled or key in READ_FIELDS or key in NO_EFFECT_FIELDS or _NO_EFFECT_PATTERN.search(key):
            continue
        if key.endswith("_config") and isinstance(value, Mapping):
            continue
        if _SHAPE_PATTERN.search(key) and _active(value):
            out.append(f"{key} = {_fmt_value(value)}: not read by sizer; if it changes the network's shape, memory and speed differ from the figures")
    return tuple(out)


def arch_from_config(
    raw: Any,
    *,
    name: str,
    source: str,
    hf_id: str | None = None,
    hf_quant_config: Any = None,
    published_params: float | None = None,
    published_params_source: str | None = None,
) -> ModelArch:
    """Build a ModelArch from the mapping of a config.json. Unknown keys are ignored."""
    where = source
    if not isinstance(raw, Mapping):
        raise FieldTypeError(f"{where}: expected a JSON object (a config.json), got {type(raw).__name__}")
    cfg: dict[str, Any] = dict(raw)
    outer: dict[str, Any] | None = None
    multimodal = False
    notes: list[str] = []
    vision_raw = cfg.get("vision_config")
    if isinstance(cfg.get("text_config"), Mapping):
        outer = cfg
        # Multimodal wrappers (Llama 4, Gemma 3/4, Kimi-K2.5) keep the language model in text_config;
        # the vision/audio towers are not counted.
        multimodal = True
        text = dict(cfg["text_config"])
        for key in ("quantization_config", "tie_word_embeddings", "torch_dtype", "dtype", "_name_or_path"):
            if key in cfg and key not in text:
                text[key] = cfg[key]
        if "model_type" not in text and str(outer.get("model_type")) == "gemma3":
            text["model_type"] = "gemma3_text"  # Gemma3Config's text_config class
        cfg = text
        notes.append("multimodal: language model from text_config")
    for part, label in ((outer, "model_type"), (cfg, "text_config.model_type" if outer is not None else "model_type")):
        # transformers' AutoConfig looks the class up by this string (CONFIG_MAPPING[model_type]):
        # a list or a number is not a model type, and read as none it would size a decoder silently
        if part is not None and part.get("model_type") is not None and not isinstance(part["model_type"], str):
            raise FieldTypeError(f"{where}: {label}: expected a string (transformers' model type, as 'llama'), got {part['model_type']!r}")
    refuse_unsizable(cfg, outer, where)
    n_notes = len(notes)
    aliases: dict[str, str] = {}
    cfg = _with_type_defaults(_standard_names(cfg, notes, aliases), notes)
    where = _Where(where, aliases)
    defaults_used = tuple(notes[n_notes:])  # said as a warning: figures not in the user's file
    for key in _REQUIRED:
        _int(cfg, key, where)

    hidden = _int(cfg, "hidden_size", where)
    layers = _int(cfg, "num_hidden_layers", where)
    heads = _int(cfg, "num_attention_heads", where)
    if heads == 0 or layers == 0 or hidden == 0:
        raise FieldValueError(f"{where}: hidden_size, num_hidden_layers and num_attention_heads must be > 0")
    kv_heads = _int(cfg, "num_key_value_heads", where, heads)
    if kv_heads > heads:
        raise FieldValueError(f"{where}: {_field_name('num_key_value_heads', where)}: expected at most num_attention_heads ({heads}), got {kv_heads}")
    head_dim = _int(cfg, "head_dim", where, max(hidden // heads, 1))
    model_type = str(cfg.get("model_type", "unknown"))

    # --- MoE -------------------------------------------------------------------------------
    num_experts = 0
    for key in ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"):
        if cfg.get(key):
            num_experts = _int(cfg, key, where)
            break
    topk = 0
    for key in ("num_experts_per_tok", "experts_per_token", "moe_topk", "num_experts_per_token", "top_k_experts"):
        if cfg.get(key):
            topk = _int(cfg, key, where)
            break
    if num_experts and not topk:
        raise FieldValueError(f"{where}: num_experts_per_tok: required for a mixture-of-experts model ({num_experts} experts)")
    intermediate = _int(cfg, "intermediate_size", where, 0)
    moe_inter = _int(cfg, "moe_intermediate_size", where, 0) or (intermediate if num_experts else 0)
    if not intermediate and not num_experts:
        raise FieldValueError(f"{where}: intermediate_size: required field is missing")
    if num_experts and not moe_inter:
        raise FieldValueError(f"{where}: moe_intermediate_size: required for a mixture-of-experts model")
    shared = 0
    if cfg.get("n_shared_experts"):
        shared = _int(cfg, "n_shared_experts", where) * moe_inter
    elif cfg.get("shared_expert_intermediate_size"):
        shared = _int(cfg, "shared_expert_intermediate_size", where)
    elif cfg.get("shared_intermediate_size"):
        shared = _int(cfg, "shared_intermediate_size", where)
    if model_type == "llama4_text" and num_experts:
        # Llama 4: every MoE layer also runs one shared expert as wide as a routed one; the dense
        # layers between MoE layers use intermediate_size_mlp.
        shared = moe_inter
        intermediate = _int(cfg, "intermediate_size_mlp", where, intermediate)
    moe_layers: tuple[bool, ...] = ()
    if num_experts:
        first_dense = _int(cfg, "first_k_dense_replace", where, 0)
        freq = _int(cfg, "moe_layer_freq", where, 1) or 1
        step = _int(cfg, "decoder_sparse_step", where, 0) or _int(cfg, "interleave_moe_layer_step", where, 1) or 1
        mlp_only = set(_int_list(cfg, "mlp_only_layers", where))
        moe_layers = tuple(
            i >= first_dense and (i - first_dense) % freq == 0 and (i + 1) % step == 0 and i not in mlp_only for i in range(layers)
        )

    # --- attention variants ------------------------------------------------------------------
    kv_lora = _int(cfg, "kv_lora_rank", where, 0)
    q_lora = _int(cfg, "q_lora_rank", where, 0) if kv_lora else 0
    nope = _int(cfg, "qk_nope_head_dim", where, 0)
    rope = _int(cfg, "qk_rope_head_dim", where, 0)
    v_head = _int(cfg, "v_head_dim", where, 0)
    if kv_lora and not (rope and v_head):
        raise FieldValueError(f"{where}: qk_rope_head_dim, v_head_dim: required for multi-head latent attention (kv_lora_rank given)")
    attention_bias = bool(cfg.get("attention_bias", False)) or model_type in ("qwen2", "qwen2_moe")
    o_bias = model_type == "gpt_oss" and bool(cfg.get("attention_bias", False))
    qk_norm = model_type in ("qwen3", "qwen3_moe", "qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "olmo2", "gemma3", "gemma3_text") or bool(cfg.get("use_qk_norm", False))
    rotary_dim = _int(cfg, "rotary_dim", where, 0) or (rope if kv_lora else head_dim)
    partial = _number(cfg, "partial_rotary_factor", where, gt=0.0, le=1.0)
    if partial is not None and not kv_lora and not cfg.get("rotary_dim"):
        rotary_dim = int(head_dim * partial)

    # --- sliding-window layers -------------------------------------------------------------------
    window = _int(cfg, "sliding_window", where, 0)
    raw_types = cfg.get("layer_types")
    interval = _int(cfg, "full_attention_interval", where, 0)
    if isinstance(raw_types, list) and len(raw_types) == layers:
        layer_types = tuple(_layer_kind(t) for t in raw_types)
    elif interval and cfg.get("linear_num_value_heads"):
        # Qwen3-Next without layer_types: every full_attention_interval-th layer is full attention,
        # the rest Gated DeltaNet (transformers Qwen3NextConfig)
        layer_types = tuple("full" if (i + 1) % interval == 0 else "linear" for i in range(layers))
    elif window and model_type == "gemma2":
        layer_types = tuple("sliding" if i % 2 == 0 else "full" for i in range(layers))
    elif window and cfg.get("sliding_window_pattern"):
        pattern = max(_int(cfg, "sliding_window_pattern", where), 1)
        layer_types = tuple("full" if (i + 1) % pattern == 0 else "sliding" for i in range(layers))
    elif window and cfg.get("use_sliding_window") is True:
        full_below = _int(cfg, "max_window_layers", where, 0)
        layer_types = tuple("full" if i < full_below else "sliding" for i in range(layers))
    elif window and model_type in ("mistral",) and cfg.get("use_sliding_window") is not False:
        layer_types = ("sliding",) * layers
    else:
        layer_types = ("full",) * layers
    chunk = _int(cfg, "attention_chunk_size", where, 0)
    if chunk and "sliding" not in layer_types:
        # Llama 4: layers with RoPE attend within chunks of attention_chunk_size tokens; every
        # no_rope_layer_interval-th layer (NoPE) attends globally (HF Llama4TextConfig no_rope_layers;
        # vLLM llama4.py Llama4Attention: use_chunked_local_attn = not nope and attention_chunk_size).
        rope_layers = cfg.get("no_rope_layers")
        if not (isinstance(rope_layers, list) and len(rope_layers) == layers):
            interval = _int(cfg, "no_rope_layer_interval", where, 4) or 4
            rope_layers = [int((i + 1) % interval != 0) for i in range(layers)]
        layer_types = tuple("sliding" if use_rope else "full" for use_rope in rope_layers)
        window = chunk
    else:
        chunk = 0
    if "sliding" not in layer_types:
        window = 0
        chunk = 0

    dtype_raw = cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16"
    torch_dtype = normalise_dtype(str(dtype_raw))
    linear: dict[str, Any] = {}
    if "linear" in layer_types:
        linear = {
            "linear_key_heads": _int(cfg, "linear_num_key_heads", where, 0),
            "linear_value_heads": _int(cfg, "linear_num_value_heads", where, 0),
            "linear_key_head_dim": _int(cfg, "linear_key_head_dim", where, 0),
            "linear_value_head_dim": _int(cfg, "linear_value_head_dim", where, 0),
            "linear_conv_kernel": _int(cfg, "linear_conv_kernel_dim", where, 4),
        }
        missing = [k for k, v in linear.items() if not v]
        if missing:
            names = {"linear_key_heads": "linear_num_key_heads", "linear_value_heads": "linear_num_value_heads", "linear_conv_kernel": "linear_conv_kernel_dim"}
            raise FieldValueError(f"{where}: {', '.join(names.get(k, k) for k in missing)}: required for Gated DeltaNet (linear_attention) layers, a positive integer")
        state = cfg.get("mamba_ssm_dtype")
        linear["linear_state_dtype"] = normalise_dtype(str(state)) if state else (torch_dtype if torch_dtype in ("fp32", "bf16", "fp16") else "bf16")
        if linear["linear_state_dtype"] not in ("fp32", "bf16", "fp16"):
            raise FieldValueError(f"{where}: mamba_ssm_dtype: expected float32, bfloat16 or float16, got {state!r}")
    quant, kv_quant, qnote = _parse_quantization(cfg.get("quantization_config"), hf_quant_config, where)
    unmodelled_quant = ""
    if qnote:
        # said as a warning: the checkpoint's weights are not sized in the format it stores them in
        defaults_used += (qnote.text,)
        unmodelled_quant = qnote.method
    positions, length_note = _positions(cfg, where)
    if length_note:
        defaults_used += (length_note,)
    limit, limit_basis = context_limit(cfg, positions, model_type, where)
    rope_rows = rope_cache_rows(cfg, positions, where)
    mtp = _int(cfg, "num_nextn_predict_layers", where, 0)
    vision = _vision_params(vision_raw, raw, hidden) if isinstance(vision_raw, Mapping) else 0.0
    if vision:
        notes.append(f"vision tower and projector: {vision / 1e6:,.0f}M parameters, 16-bit, on the first pipeline stage")
    gated = model_type not in _UNGATED_MLP
    if model_type == "gpt_oss":
        notes.append("attention sinks and expert biases counted")

    return ModelArch(
        name=name,
        source=source,
        hf_id=hf_id or (str(cfg["_name_or_path"]) if cfg.get("_name_or_path") and "/" in str(cfg["_name_or_path"]) and not str(cfg["_name_or_path"]).startswith("/") else None),
        model_type=model_type,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=intermediate,
        vocab_size=_int(cfg, "vocab_size", where),
        max_position_embeddings=positions,
        context_limit_tokens=limit,
        context_limit_basis=limit_basis,
        rope_cache_rows=rope_rows if rope_rows != (positions,) else (),
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        torch_dtype=torch_dtype,
        attention_bias=attention_bias,
        o_proj_bias=o_bias,
        qk_norm=qk_norm,
        kv_lora_rank=kv_lora,
        q_lora_rank=q_lora,
        qk_nope_head_dim=nope,
        qk_rope_head_dim=rope,
        v_head_dim=v_head,
        rotary_dim=rotary_dim,
        layer_types=layer_types,
        sliding_window=window,
        attention_chunk_size=chunk,
        attn_output_gate=bool(cfg.get("attn_output_gate", False)) or model_type == "qwen3_next",
        **linear,
        num_experts=num_experts,
        num_experts_per_tok=topk,
        moe_intermediate_size=moe_inter if num_experts else 0,
        shared_experts_intermediate_size=shared,
        shared_expert_gate=bool(shared) and model_type in ("qwen2_moe", "qwen3_next", "qwen3_5_moe", "qwen3_5_moe_text"),
        moe_layers=moe_layers,
        expert_bias=model_type == "gpt_oss",
        router_bias=model_type == "gpt_oss",
        attention_sinks=model_type == "gpt_oss",
        quant=quant,
        kv_cache_quant=kv_quant,
        unmodelled_quant=unmodelled_quant,
        mtp_layers=mtp,
        multimodal=multimodal,
        gated_mlp=gated,
        mlp_bias=bool(cfg.get("mlp_bias", False)) or not gated,
        vision_params=vision,
        **(_vision_item(vision_raw, raw) if vision and isinstance(vision_raw, Mapping) else {}),
        published_params=published_params,
        published_params_source=published_params_source,
        notes=tuple(notes),
        warnings=(*defaults_used, *unmodelled_fields(cfg, outer, chunked_attention=bool(chunk), vision_counted=bool(vision))),
    )


def _layer_kind(value: Any) -> str:
    """sizer's kind of a config.json layer_types entry: "sliding" (sliding_attention,
    chunked_attention ...), "linear" (linear_attention: Gated DeltaNet), else "full"."""
    text = str(value)
    if "sliding" in text:
        return "sliding"
    if text == "linear_attention":
        return "linear"
    return "full"


# Architectures whose MLP is two matrices (fc1, activation, fc2) with biases, not gate/up/down
# (vLLM's PhiMLP, GPTNeoXMLP, Starcoder2MLP, GPTBigCodeMLP ...).
_UNGATED_MLP = frozenset({"phi", "gpt_neox", "starcoder2", "gpt_bigcode", "gpt2", "gptj", "falcon", "opt", "bloom", "mpt"})


def _vision_item(vc: Mapping[str, Any], outer: Mapping[str, Any]) -> dict[str, int]:
    """The image vLLM's profile run feeds the vision encoder: the size with the most features
    (each model's get_image_size_with_most_features), as tiles of image_size^2 pixels and the LM
    tokens they become. Gemma-3: one 896^2 image, mm_tokens_per_image (256) tokens (gemma3_mm.py,
    pan-and-scan off by default). Llama 4: max_patches (16, image_processor_config, the HF
    processor's default) tiles plus the global one, each (image / patch)^2 x pixel_shuffle_ratio^2
    tokens (mllama4.py get_max_num_tiles, 16:1 image). Otherwise one image_size^2 image of
    (image / patch / spatial merge)^2 tokens (Pixtral: 1,540^2, 3,025 tokens)."""
    image = vc.get("image_size")
    patch = vc.get("patch_size") or 14
    if not isinstance(image, int) or image <= 0 or not isinstance(patch, int):
        return {}
    kind = str(outer.get("model_type", ""))
    tiles, side = 1, image // patch
    if kind == "gemma3" and isinstance(outer.get("mm_tokens_per_image"), int):
        tokens = int(outer["mm_tokens_per_image"])
    elif kind == "llama4":
        proc = outer.get("image_processor_config") if isinstance(outer.get("image_processor_config"), Mapping) else {}
        tiles = int(proc.get("max_patches", 16)) + (1 if proc.get("add_global_tile", True) else 0)
        ratio = vc.get("pixel_shuffle_ratio") or 0.5
        tokens = tiles * int(side * side * ratio * ratio)
    else:
        merge = outer.get("spatial_merge_size")
        merge = merge if isinstance(merge, int) and merge > 0 else 1
        tokens = (side // merge) ** 2
    return {"vision_image_size": image, "vision_item_tiles": tiles, "vision_item_tokens": tokens}


def _vision_params(vc: Mapping[str, Any], outer: Mapping[str, Any], text_hidden: int) -> float:
    """Parameters of a vision tower and its projector into the language model, from vision_config.

    A ViT: per layer attention (q, k, v, o with biases) and an MLP (fc1/fc2 with biases, or a gated
    SwiGLU without, as Pixtral), two norms; a patch embedding and, where learned, position
    embeddings. The projector (multi_modal_projector / mm_input_projection) maps the vision width,
    times the patches merged into one token, to the text width, with a second text-width layer
    where the architecture has one (LLaVA-NeXT, Mistral-3, Kimi-VL). Checked against vLLM's logged
    weights of Gemma-3, Mistral-Small-3.1, Granite-Vision and Kimi-VL (tests/test_vllm_logs.py)."""

    def num(*keys, default=0):
        for k in keys:
            v = vc.get(k)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
                return int(v)
        return default

    h = num("hidden_size", "width", "embed_dim")
    layers = num("num_hidden_layers", "depth", "num_layers")
    if not h or not layers:
        return 0.0
    i = num("intermediate_size", default=4 * h)
    patch = num("patch_size", default=14)
    channels = num("num_channels", "in_channels", default=3)
    vtype = str(vc.get("model_type", ""))
    gated = vtype == "pixtral"
    attn = 4 * h * h + (0 if gated else 4 * h)
    mlp = 3 * h * i if gated else 2 * h * i + i + h
    per_layer = attn + mlp + (2 * h if gated else 4 * h)
    total = layers * per_layer + channels * patch * patch * h + 2 * h
    image = num("image_size")
    if vtype.startswith(("siglip", "clip")) and image:
        total += (image // patch) ** 2 * h
    elif vtype == "llama4_vision_model" and image:
        total += ((image // patch) ** 2 + 1) * h + h  # positional_embedding_vlm (+ class token), class_embedding
    elif vc.get("init_pos_emb_height"):
        total += num("init_pos_emb_height") * num("init_pos_emb_width") * h
    kind = str(outer.get("model_type", ""))
    merge = outer.get("spatial_merge_size") or (2 if kind == "kimi_vl" else 1)
    merge = int(merge) ** 2 if isinstance(merge, int) else 4
    if kind == "gemma3":
        total += h * text_hidden + h  # mm_input_projection_weight and mm_soft_emb_norm
    elif kind == "mistral3":
        total += h * merge * h + h + h * text_hidden + text_hidden * text_hidden  # patch merger, norm, linear_1, linear_2
    elif kind == "kimi_vl":
        total += 2 * h * merge + (h * merge) ** 2 + h * merge * text_hidden  # pre-norm, linear_1, linear_2
    elif kind == "llama4":
        # vLLM mllama4.py: Llama4VisionPixelShuffleMLP (fc1: h / ratio^2 -> projector_input_dim, fc2: -> projector_output_dim,
        # no biases) and Llama4MultiModalProjector (vision_output_dim -> text hidden, no bias)
        ratio = vc.get("pixel_shuffle_ratio") or 0.5
        shuffled = int(round(h / (ratio * ratio)))
        p_in, p_out = num("projector_input_dim", default=h), num("projector_output_dim", default=h)
        total += shuffled * p_in + p_in * p_out + num("vision_output_dim", default=p_out) * text_hidden
    else:
        feature_layers = outer.get("vision_feature_layer")
        n = len(feature_layers) if isinstance(feature_layers, list) else 1
        total += h * n * text_hidden + text_hidden * text_hidden + 3 * text_hidden  # two-layer projector with biases, image_newline
    return float(total)


_ATTENTION = frozenset({"attention", "attention_kv", "attention_rep"})
_LAYER_PATTERN = re.compile(r"(?:^|\.)layers\.(\d+)(?:\.(.*))?$")


def _groups_named(rest: str) -> frozenset[str]:
    """Parameter groups a module path inside a layer names ("self_attn", "mlp", "mlp.experts", ...)."""
    if not rest:
        return LINEAR_GROUPS
    if "self_attn" in rest or rest == "attn" or rest.startswith("attn.") or ".attn" in rest:
        return _ATTENTION
    if "shared_expert" in rest:
        return frozenset({"shared_experts"})
    if "experts" in rest:
        return frozenset({"experts"})
    if rest in ("mlp", "block_sparse_moe", "feed_forward"):
        return frozenset({"mlp", "experts", "shared_experts"})
    if rest.startswith(("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")):
        return frozenset({"mlp"})
    return frozenset()  # norms, routers (mlp.gate): never quantised anyway


def _excluded_groups(patterns: Any) -> tuple[set[str], set[tuple[int, str]]]:
    """Groups a modules_to_not_convert / exclude_modules / ignore list leaves unquantised:
    (groups excluded in every layer, (layer, group) pairs excluded in one layer)."""
    everywhere: set[str] = set()
    per_layer: set[tuple[int, str]] = set()
    if not isinstance(patterns, list):
        return everywhere, per_layer
    for p in patterns:
        p = str(p).removesuffix(".weight")
        match = _LAYER_PATTERN.search(p)
        if match:
            for g in _groups_named(match.group(2) or ""):
                per_layer.add((int(match.group(1)), g))
            continue
        if "self_attn" in p or p.endswith(".attn") or ".attn." in p:
            everywhere |= _ATTENTION
        if "shared_expert" in p:
            everywhere.add("shared_experts")
        elif ".experts" in p:
            everywhere.add("experts")
    return everywhere, per_layer


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _quant_int(qc: Mapping[str, Any], keys: tuple[str, ...], default: int, where: str, allow_negative: bool = False) -> int:
    """An integer of quantization_config under the first of `keys` it has (bits, group size)."""
    for key in keys:
        value = qc.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or (value < 0 and not allow_negative):
            raise FieldTypeError(f"{where}: quantization_config.{key}: expected an integer, got {_short(value)}")
        return value or default
    return default


@dataclass(frozen=True, slots=True)
class QuantNote:
    """What sizing a checkpoint's quantization_config leaves out: `text` a sentence for the
    warnings; `method` the format sizer has no model for ("hqq", "awq 3-bit"), whose weights are
    then counted at 16 bits, or "" where the note qualifies a format that is modelled."""

    text: str
    method: str = ""


def _unmodelled(method: str, what: str | None = None) -> QuantNote:
    """The note for a quantization_config sizer has no format for (`method`, as the config says
    it; `what`, the words for it, by default its quant_method). The checkpoint is served as it
    is: vLLM refuses a --quantization other than the config's own quant_method ("Quantization
    method specified in the model config (...) does not match the quantization method specified
    in the `quantization` argument", ModelConfig._verify_quantization,
    vllm-project/vllm@18ec6629253632af0a384f2ffbb8c6b28af322e7:vllm/config/model.py), so no
    load-time FP8 of it is offered."""
    return QuantNote(
        text=f"{what or f'quantization_config quant_method {method!r}'} not modelled: weights counted at 16 bits (more than the checkpoint holds); "
        "served as the checkpoint is, no load-time --quantization fp8 offered (vLLM refuses one beside the config's own quant_method)",
        method=method,
    )


# ModelOpt's quant_algo and the format it stores the linear layers' weights in. vLLM's ModelOpt
# configs load FP8, FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO and NVFP4 (QUANT_ALGOS in
# vllm-project/vllm@c9a59901113ccfe729e9c2be54062abee99b37f7:vllm/model_executor/layers/quantization/modelopt.py);
# the AWQ and SmoothQuant algos are TensorRT-LLM's.
MODELOPT_ALGOS = {
    "FP8": "fp8",
    "FP8_PER_CHANNEL_PER_TOKEN": "fp8",
    "FP8_PB_WO": "fp8",
    "NVFP4": "nvfp4",
    "W4A16_AWQ": "int4",
    "W4A8_AWQ": "int4",
    "INT8_SQ": "int8",
}


def _parse_quantization(qc: Any, hf_quant: Any, where: str) -> tuple[QuantScheme | None, str | None, QuantNote | None]:
    """Weight format from config.json `quantization_config` or ModelOpt's hf_quant_config.json."""
    kv_quant = None

    def scheme(dtype: str, per: float, origin: str, everywhere: set[str], per_layer: set[tuple[int, str]], only: frozenset[str] = LINEAR_GROUPS) -> QuantScheme:
        return QuantScheme(
            dtype=dtype,
            groups=frozenset((only & LINEAR_GROUPS) - everywhere),
            bytes_per_param=per,
            origin=origin,
            excluded=frozenset(per_layer),
        )

    if hf_quant is not None and not (isinstance(hf_quant, Mapping) and isinstance(hf_quant.get("quantization"), Mapping)):
        raise FieldTypeError(f"{where}: hf_quant_config.json: expected an object with a 'quantization' object (ModelOpt's format), got {_short(hf_quant)}")
    def modelopt(q: Mapping, excluded: tuple[set[str], set[tuple[int, str]]], origin: str) -> tuple[str, str | None, QuantScheme | None]:
        """A ModelOpt block, wherever it is given: (its quant_algo, the KV format its
        kv_cache_quant_algo gives, the weights' scheme, None for an algo sizer has no format for)."""
        algo = str(q.get("quant_algo") or "").upper()
        kv = "fp8" if str(q.get("kv_cache_quant_algo") or "").upper() == "FP8" else kv_quant
        dtype = MODELOPT_ALGOS.get(algo)
        return algo, kv, (scheme(dtype, DTYPE_BYTES[dtype], f"{origin} {algo}", *excluded) if dtype else None)

    if isinstance(hf_quant, Mapping):
        q = hf_quant["quantization"]
        algo, kv_quant, found = modelopt(q, _excluded_groups(q.get("exclude_modules")), "hf_quant_config.json quant_algo")
        if found:
            return found, kv_quant, None
        if algo and not isinstance(qc, Mapping):
            return None, kv_quant, _unmodelled(f"modelopt {algo}", f"hf_quant_config.json quant_algo {algo!r}")
    if not isinstance(qc, Mapping):
        return None, kv_quant, None
    method = str(qc.get("quant_method") or "").lower()
    producer = qc.get("producer")
    if not method and isinstance(producer, Mapping) and producer.get("name") == "modelopt":
        method = "modelopt"  # vLLM ModelConfig._parse_quant_hf_config sets it so from the producer
    everywhere, per_layer = _excluded_groups(qc.get("modules_to_not_convert") or qc.get("ignore") or qc.get("ignored_layers"))
    if method in ("modelopt", "modelopt_fp4"):
        # ModelOpt's quantization_config in config.json: hf_quant_config.json's {"quantization": {...}}, or
        # flat ("compressed-tensors style": quant_algo, kv_cache_quant_algo, and the exclusions under
        # "ignore"), as vLLM's ModelOptQuantConfigBase.from_config reads both (modelopt.py, above)
        nested = qc.get("quantization")
        q = nested if isinstance(nested, Mapping) else qc
        excluded = _excluded_groups(nested.get("exclude_modules")) if isinstance(nested, Mapping) else (everywhere, per_layer)
        algo, kv_quant, found = modelopt(q, excluded, "config.json quantization_config modelopt")
        if found:
            return found, kv_quant, None
        return None, kv_quant, _unmodelled(f"modelopt {algo}", f"quantization_config modelopt quant_algo {algo!r}")
    if method in ("fp8", "fbgemm_fp8"):
        block = qc.get("weight_block_size")
        per = DTYPE_BYTES["fp8"]
        if block is not None and not (isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)):
            raise FieldTypeError(f"{where}: quantization_config.weight_block_size: expected two integers > 0 such as [128, 128], got {_short(block)}")
        if block is not None:
            per += 4.0 / (block[0] * block[1])  # one fp32 scale per block
        return scheme("fp8", per, f"config.json quantization_config {method}", everywhere, per_layer), kv_quant, None
    if method == "mxfp4":
        # vLLM's Mxfp4Config quantises fused-MoE expert weights only; linear layers stay 16-bit.
        return (
            scheme("mxfp4", DTYPE_BYTES["mxfp4"], "config.json quantization_config mxfp4", everywhere, per_layer, frozenset({"experts"})),
            kv_quant,
            None,
        )
    if method in ("awq", "gptq", "awq_marlin", "gptq_marlin"):
        bits = _quant_int(qc, ("bits", "w_bit"), 4, where)
        group = _quant_int(qc, ("group_size", "q_group_size"), 128, where, allow_negative=True)
        label = f"g{group}" if group > 0 else "per-channel"
        if group <= 0:  # per-channel (-1): one scale per output row, a vanishing share per weight
            group = 10**9
        if bits == 4:
            per = (group * 4 + 16 + 4) / group / 8  # 4-bit values + fp16 scale + 4-bit zero per group
            return scheme("int4", per, f"config.json quantization_config {method} {bits}-bit {label}", everywhere, per_layer), kv_quant, None
        if bits == 8:
            per = (group * 8 + 16) / group / 8
            return scheme("int8", per, f"config.json quantization_config {method} 8-bit {label}", everywhere, per_layer), kv_quant, None
        return None, kv_quant, _unmodelled(f"{method} {bits}-bit", f"quantization_config quant_method {method!r} with bits {bits}")
    if method == "compressed-tensors":
        fmt = str(qc.get("format") or "")
        dtype = {
            "float-quantized": "fp8",
            "naive-quantized": "int8",
            "int-quantized": "int8",
            "pack-quantized": "int4",
            "nvfp4-pack-quantized": "nvfp4",
            "mxfp4-pack-quantized": "mxfp4",
        }.get(fmt)
        kv_scheme = qc.get("kv_cache_scheme")
        if isinstance(kv_scheme, Mapping) and kv_scheme.get("num_bits") == 8:
            kv_quant = "fp8"
        if dtype:
            return scheme(dtype, DTYPE_BYTES[dtype], f"config.json compressed-tensors {fmt}", everywhere, per_layer), kv_quant, None
        return None, kv_quant, _unmodelled(f"compressed-tensors {fmt}", f"quantization_config compressed-tensors format {fmt!r}")
    if method == "bitsandbytes":
        dtype = "int4" if qc.get("load_in_4bit") else "int8"
        return scheme(dtype, DTYPE_BYTES[dtype], "config.json bitsandbytes", everywhere, per_layer), kv_quant, None
    if method == "quark":
        return _parse_quark(qc, where, scheme)
    if not method:
        # vLLM reads no quantisation from a config without quant_method (ModelConfig._verify_quantization: "" -> None)
        return None, kv_quant, QuantNote(text="quantization_config has no quant_method: weights counted at 16 bits, as vLLM loads them")
    return None, kv_quant, _unmodelled(method)


def _quark_weight(spec: Any, where: str, key: str) -> tuple[str, float, str] | None:
    """(sizer's format, bytes per parameter, as the config says it) of one Quark weight
    QuantizationSpec; None where it quantises nothing. A list is a progressive spec, its stages in
    order: the checkpoint stores the last (AMD's FP8-then-INT4 conversions store INT4)."""
    if isinstance(spec, list):
        spec = spec[-1] if spec else None
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        raise FieldTypeError(f"{where}: quantization_config.{key}: expected a Quark QuantizationSpec (an object with a dtype) or a list of them, got {_short(spec)}")
    dtype = str(spec.get("dtype") or "").lower()
    group = spec.get("group_size")
    group = group if isinstance(group, int) and not isinstance(group, bool) and group > 0 else None
    if dtype in ("fp4", "fp4_e2m1", "mx_fp4", "mxfp4"):
        return "mxfp4", DTYPE_BYTES["mxfp4"], f"{dtype} g{group or 32}"  # OCP MX: 32 values and one E8M0 scale
    if dtype.startswith("fp8"):
        return "fp8", DTYPE_BYTES["fp8"], dtype
    if dtype in ("int4", "uint4"):
        g = group or 10**9  # per-channel
        return "int4", (g * 4 + 16 + (4 if dtype == "uint4" else 0)) / g / 8, f"{dtype} g{group}" if group else f"{dtype} per-channel"
    if dtype in ("int8", "uint8"):
        return "int8", DTYPE_BYTES["int8"], dtype
    raise _QuarkUnmodelled(dtype or repr(spec))


class _QuarkUnmodelled(Exception):
    """A Quark weight dtype sizer has no format for (its name)."""


def _quark_pattern_groups(pattern: str) -> frozenset[str]:
    """Parameter groups a Quark layer pattern names ("*.mlp.experts.*", "*self_attn*", "lm_head")."""
    p = str(pattern).strip().strip("*").strip(".").removesuffix(".weight")
    match = _LAYER_PATTERN.search(p)
    rest = (match.group(2) or "") if match else p
    rest = rest.strip("*").strip(".")
    if not rest or rest == "lm_head" or rest.endswith("embed_tokens"):
        return frozenset() if rest else LINEAR_GROUPS
    return _groups_named(rest)


def _parse_quark(qc: Mapping[str, Any], where: str, scheme: Callable[..., QuantScheme]) -> tuple[QuantScheme | None, str | None, QuantNote | None]:
    """AMD Quark's quantization_config (`quant_method: quark`, vLLM's QuarkConfig): the weight format of
    `global_quant_config` on every linear layer, or of `layer_quant_config`'s patterns on the
    groups they name where nothing is global; `exclude` patterns leave groups in 16 bits (AMD's MXFP4
    conversions of MoE models exclude attention: MXFP4_MOE_ORIGIN's logs); `export.kv_cache_group`
    names the projections whose outputs are the KV cache, stored in their `output_tensors` format
    (FP8 in AMD's -FP8-KV checkpoints). One format a checkpoint: layer patterns in another format than
    the global one are not modelled (said in the note)."""
    origin = "config.json quantization_config quark"
    everywhere, per_layer = _excluded_groups(qc.get("exclude"))
    glob = qc.get("global_quant_config")
    if glob is not None and not isinstance(glob, Mapping):
        raise FieldTypeError(f"{where}: quantization_config.global_quant_config: expected an object, got {_short(glob)}")
    layers = qc.get("layer_quant_config") or {}
    if not isinstance(layers, Mapping):
        raise FieldTypeError(f"{where}: quantization_config.layer_quant_config: expected an object of patterns, got {_short(layers)}")
    kv_quant = None
    export = qc.get("export")
    kv_group = export.get("kv_cache_group") if isinstance(export, Mapping) else None
    if isinstance(kv_group, list) and kv_group:
        first = layers.get(kv_group[0]) if isinstance(kv_group[0], str) else None
        out = first.get("output_tensors") if isinstance(first, Mapping) else None
        out_dtype = str(out.get("dtype") or "").lower() if isinstance(out, Mapping) else "fp8"
        kv_quant = "fp8" if out_dtype.startswith("fp8") else None
    try:
        base = _quark_weight((glob or {}).get("weight"), where, "global_quant_config.weight")
        named = {}
        for pattern, cfg in layers.items():
            if not isinstance(cfg, Mapping):
                raise FieldTypeError(f"{where}: quantization_config.layer_quant_config.{pattern}: expected an object, got {_short(cfg)}")
            w = _quark_weight(cfg.get("weight"), where, f"layer_quant_config.{pattern}.weight")
            if w is not None:
                named[str(pattern)] = w
    except _QuarkUnmodelled as exc:
        return None, kv_quant, _unmodelled(f"quark {exc}", f"quantization_config quark weight dtype {exc}")
    note = None
    if base is not None:
        others = sorted({w[0] for w in named.values()} - {base[0]})
        if others:
            note = QuantNote(text=f"quantization_config quark: layer patterns in {', '.join(others)} beside the global {base[0]} are sized in {base[0]}")
        return scheme(base[0], base[1], f"{origin} {base[2]}", everywhere, per_layer), kv_quant, note
    if named:
        formats = {w[0] for w in named.values()}
        fmt = next(w for w in named.values() if w[0] == sorted(formats)[0])
        if len(formats) > 1:
            note = QuantNote(text=f"quantization_config quark: layer patterns in {', '.join(sorted(formats))}; all sized in {fmt[0]}")
        only = frozenset().union(*(_quark_pattern_groups(p) for p in named))
        return scheme(fmt[0], fmt[1], f"{origin} {fmt[2]} on {', '.join(sorted(named))}", everywhere, per_layer, only), kv_quant, note
    return None, kv_quant, None

