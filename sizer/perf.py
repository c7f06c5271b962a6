"""Step-time model: prefill time of a prompt and decode step time of a batch, per replica.

A roofline with named efficiency factors from the GPU catalog (`efficiency:` in gpus.yaml),
evaluated for many candidate configurations at once (numpy arrays, one element per candidate).
Units: seconds, bytes, FLOPs.

Decode step of a microbatch of b sequences on one pipeline stage:

    t_mem   = (weight bytes read + b x mean context x KV bytes/token/GPU) / (HBM bandwidth x hbm_fraction)
              weight bytes read = non-expert shard + expert shard x P(expert touched by the batch)
              P(expert touched) = 1 - (1 - top_k / E)^b                 (MoE: only routed experts are read)
    t_flops = b x (2 x active params/GPU + 4 x layers x heads/GPU x head_dim x context) / (peak x compute_fraction)
    t_comm  = 2 all-reduces per layer x (latency + 2 (tp-1)/tp x b x hidden x 2 B / (link x link_fraction))
    t_stage = max(t_mem, t_flops) + t_comm

With pipeline parallelism the batch B runs as pp microbatches of B/pp, each crossing every stage:
time per output token = pp x t_stage(B/pp) + (pp-1) x p2p + step overhead.

Prefill of a prompt of P tokens: 2 x active params x P FLOPs plus causal attention
(2 x layers x heads x head_dim x P^2), compute bound at any realistic P, plus the same
all-reduces on P x hidden activations, plus one read of the weights.

This is the first, documented model; efficiency factors are catalog fields so that a calibration
can replace them without touching code.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .catalog import Gpu
from .model import ModelArch, stage_weights, weight_scheme
from .memory import kv_bytes_per_token_per_layer
from .units import COMPUTE_FIELD, DTYPE_BYTES

ACT_BYTES = DTYPE_BYTES["bf16"]  # activations travel in 16-bit


@dataclass(frozen=True, slots=True, kw_only=True)
class StageShape:
    """Device-independent numbers of the binding (largest) pipeline stage, per GPU."""

    layers: int
    attention_layers_full: int
    attention_layers_sliding: int
    dense_weight_bytes: float  # everything but routed experts, incl. embedding / lm_head on edge stages
    expert_weight_bytes: float  # all routed experts of the stage on this GPU
    flops_per_token: float  # 2 x active parameters on this GPU (routed experts at top_k / E)
    total_flops_per_token: float  # summed over all stages (one token through the whole model)
    attn_flops_per_ctx_token: float  # per token, per context token, all layers of the stage
    total_attn_flops_per_ctx_token: float
    kv_bytes_per_token: float  # this GPU, one layer, times layers separately below
    kv_bytes_per_token_per_layer: float
    all_weight_bytes: float  # summed over stages, one GPU's share of each


@lru_cache(maxsize=4096)
def stage_shape(model: ModelArch, tp: int, pp: int, weight_dtype: str, kv_dtype: str) -> StageShape:
    scheme = weight_scheme(model, weight_dtype)
    stages = stage_weights(model, tp, pp, weight_dtype)
    binding = max(range(pp), key=lambda s: stages[s].total_bytes)
    layer_ranges = model.stage_layers(pp)

    def split(layers: range) -> tuple[float, float, float]:
        dense = experts = flops = 0.0
        for i in layers:
            for name, params in model.layer_params(i, tp).items():
                per = scheme.bytes_per_param if name in scheme.groups else DTYPE_BYTES["bf16"]
                if name == "experts":
                    experts += params * per
                    flops += 2 * params * model.num_experts_per_tok / model.num_experts
                else:
                    dense += params * per
                    flops += 2 * params
        return dense, experts, flops

    heads_per_gpu = model.num_attention_heads / tp
    if model.is_mla:
        attn_dim = model.kv_lora_rank + model.qk_rope_head_dim  # absorbed MLA: scores and values in latent space
    else:
        attn_dim = model.head_dim
    per_layer_attn = 4 * heads_per_gpu * attn_dim  # QK^T and PV, 2 FLOPs per multiply-add each

    d, e, fl = split(layer_ranges[binding])
    edge = stages[binding].embedding_bytes + stages[binding].lm_head_bytes
    lm_head_flops = 2 * model.vocab_size * model.hidden_size / tp
    total_flops = sum(split(r)[2] for r in layer_ranges) + lm_head_flops
    sliding = sum(1 for i in layer_ranges[binding] if model.layer_types[i] == "sliding")
    return StageShape(
        layers=len(layer_ranges[binding]),
        attention_layers_full=len(layer_ranges[binding]) - sliding,
        attention_layers_sliding=sliding,
        dense_weight_bytes=d + edge,
        expert_weight_bytes=e,
        flops_per_token=fl + (lm_head_flops if binding == pp - 1 else 0.0),
        total_flops_per_token=total_flops,
        attn_flops_per_ctx_token=per_layer_attn * len(layer_ranges[binding]),
        total_attn_flops_per_ctx_token=per_layer_attn * model.num_hidden_layers,
        kv_bytes_per_token=kv_bytes_per_token_per_layer(model, kv_dtype, tp) * len(layer_ranges[binding]),
        kv_bytes_per_token_per_layer=kv_bytes_per_token_per_layer(model, kv_dtype, tp),
        all_weight_bytes=sum(s.total_bytes for s in stages),
    )


def compute_flops_per_s(gpu: Gpu, weight_dtype: str) -> float:
    """Dense peak FLOP/s for the format this weight dtype computes in on `gpu`; bf16 when the
    device lacks the format (weight-only formats dequantise to bf16)."""
    fmt = COMPUTE_FIELD.get(weight_dtype, "bf16")
    value = gpu.dense_flops_per_s.get(fmt)
    return float(value if value is not None else gpu.dense_flops_per_s["bf16"])


@dataclass(frozen=True, slots=True, kw_only=True)
class StepModel:
    """Arrays of per-candidate parameters; every method broadcasts over candidates."""

    tp: np.ndarray
    pp: np.ndarray
    hidden: np.ndarray
    layers: np.ndarray  # on the binding stage
    total_layers: np.ndarray
    full_layers: np.ndarray
    sliding_layers: np.ndarray
    sliding_window: np.ndarray
    dense_weight_bytes: np.ndarray
    expert_weight_bytes: np.ndarray
    num_experts: np.ndarray
    top_k: np.ndarray
    flops_per_token: np.ndarray
    total_flops_per_token: np.ndarray
    attn_flops_per_ctx: np.ndarray
    total_attn_flops_per_ctx: np.ndarray
    kv_bytes_per_token_per_layer: np.ndarray
    all_weight_bytes: np.ndarray
    hbm_bytes_per_s: np.ndarray  # achieved (datasheet x efficiency)
    flops_per_s: np.ndarray  # achieved
    link_bytes_per_s: np.ndarray  # achieved
    link_latency_s: np.ndarray
    step_overhead_s: np.ndarray

    @property
    def size(self) -> int:
        return int(self.tp.shape[0])

    def take(self, index: np.ndarray | list[int]) -> "StepModel":
        idx = np.asarray(index)
        return StepModel(**{name: getattr(self, name)[idx] for name in self.__dataclass_fields__})

    # -- pieces ------------------------------------------------------------------------------
    def _allreduce_s(self, tokens: np.ndarray, layers: np.ndarray) -> np.ndarray:
        """Two ring all-reduces per layer of tokens x hidden 16-bit activations, over TP."""
        tp = self.tp
        ring = np.where(tp > 1, 2 * (tp - 1) / tp, 0.0)
        per = np.where(tp > 1, self.link_latency_s, 0.0) + ring * tokens * self.hidden * ACT_BYTES / self.link_bytes_per_s
        return 2 * layers * per

    def _p2p_s(self, tokens: np.ndarray) -> np.ndarray:
        hop = self.link_latency_s + tokens * self.hidden * ACT_BYTES / self.link_bytes_per_s
        return (self.pp - 1) * hop

    def _expert_fraction(self, tokens: np.ndarray) -> np.ndarray:
        """Expected fraction of a layer's routed experts a batch of `tokens` tokens touches."""
        with np.errstate(divide="ignore", invalid="ignore"):
            miss = np.where(self.num_experts > 0, 1 - self.top_k / np.maximum(self.num_experts, 1), 1.0)
        return np.where(self.num_experts > 0, 1 - miss ** np.maximum(tokens, 0), 0.0)

    def _kv_context(self, context: np.ndarray) -> np.ndarray:
        """Context tokens read per layer, sliding layers capped at their window, summed over the stage."""
        capped = np.where(self.sliding_window > 0, np.minimum(context, self.sliding_window), context)
        return self.full_layers * context + self.sliding_layers * capped

    # -- decode --------------------------------------------------------------------------------
    def stage_decode_s(self, batch: np.ndarray, context: np.ndarray) -> np.ndarray:
        """One decode step of `batch` sequences at mean `context` tokens on the binding stage."""
        batch = np.asarray(batch, dtype=float)
        weights = self.dense_weight_bytes + self.expert_weight_bytes * self._expert_fraction(batch)
        kv = batch * self._kv_context(context) * self.kv_bytes_per_token_per_layer
        t_mem = (weights + kv) / self.hbm_bytes_per_s
        attn_ctx = np.where(self.layers > 0, self._kv_context(context) / np.maximum(self.layers, 1), 0.0)
        t_flops = batch * (self.flops_per_token + self.attn_flops_per_ctx * attn_ctx) / self.flops_per_s
        return np.maximum(t_mem, t_flops) + self._allreduce_s(batch, self.layers)

    def decode_step_s(self, batch: np.ndarray, context: np.ndarray) -> np.ndarray:
        """Time between output tokens of a running batch of `batch` sequences (no prefill mixed in)."""
        batch = np.maximum(np.asarray(batch, dtype=float), 1.0)
        micro = np.maximum(batch / self.pp, 1.0)
        return self.pp * self.stage_decode_s(micro, context) + self._p2p_s(micro) + self.step_overhead_s

    # -- prefill -------------------------------------------------------------------------------
    def prefill_s(self, prompt_tokens: np.ndarray) -> np.ndarray:
        """Time to prefill one prompt alone, through every stage (PP does not shorten it)."""
        p = np.asarray(prompt_tokens, dtype=float)
        flops = p * self.total_flops_per_token + 0.5 * self.total_attn_flops_per_ctx * p * p
        t = np.maximum(flops / self.flops_per_s, self.all_weight_bytes / self.hbm_bytes_per_s)
        return t + self._allreduce_s(p, self.total_layers) + self._p2p_s(p) + self.step_overhead_s

    def prefill_per_token_s(self, mean_prompt_tokens: np.ndarray) -> np.ndarray:
        """Marginal GPU time per prompt token when prefill shares steps with decode (chunked)."""
        p = np.asarray(mean_prompt_tokens, dtype=float)
        flops = self.total_flops_per_token + 0.5 * self.total_attn_flops_per_ctx * p
        comm = self._allreduce_s(np.ones_like(p), self.total_layers) - np.where(self.tp > 1, 2 * self.total_layers * self.link_latency_s, 0.0)
        return flops / self.flops_per_s + comm


def build_step_model(rows: list[tuple[ModelArch, Gpu, int, int, str, str]]) -> StepModel:
    """Stack (model, gpu, tp, pp, weight_dtype, kv_dtype) rows into one StepModel."""
    cols: dict[str, list[float]] = {name: [] for name in StepModel.__dataclass_fields__}
    for model, gpu, tp, pp, wd, kd in rows:
        s = stage_shape(model, tp, pp, wd, kd)
        eff = gpu.efficiency
        values = {
            "tp": tp,
            "pp": pp,
            "hidden": model.hidden_size,
            "layers": s.layers,
            "total_layers": model.num_hidden_layers,
            "full_layers": s.attention_layers_full,
            "sliding_layers": s.attention_layers_sliding,
            "sliding_window": model.sliding_window,
            "dense_weight_bytes": s.dense_weight_bytes,
            "expert_weight_bytes": s.expert_weight_bytes,
            "num_experts": model.num_experts,
            "top_k": model.num_experts_per_tok,
            "flops_per_token": s.flops_per_token,
            "total_flops_per_token": s.total_flops_per_token,
            "attn_flops_per_ctx": s.attn_flops_per_ctx_token,
            "total_attn_flops_per_ctx": s.total_attn_flops_per_ctx_token,
            "kv_bytes_per_token_per_layer": s.kv_bytes_per_token_per_layer,
            "all_weight_bytes": s.all_weight_bytes,
            "hbm_bytes_per_s": gpu.hbm_bytes_per_s * eff.hbm_bandwidth_fraction,
            "flops_per_s": compute_flops_per_s(gpu, wd) * eff.compute_fraction,
            "link_bytes_per_s": gpu.link_bytes_per_s * eff.link_bandwidth_fraction,
            "link_latency_s": eff.link_latency_s,
            "step_overhead_s": eff.step_overhead_s,
        }
        for name, value in values.items():
            cols[name].append(float(value))
    return StepModel(**{name: np.asarray(values, dtype=float) for name, values in cols.items()})
