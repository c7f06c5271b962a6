"""Step-time model: the time of one engine step of a replica (decode, prefill, or both mixed), for
many candidate configurations at once (numpy arrays, one element per candidate).
Units: seconds, bytes, FLOPs, tokens.

A replica is `tp x dp x pp` GPUs (Layout): attention tensor-parallel over `tp`, data-parallel over
`dp` attention ranks (DeepSeek-style attention DP), `pp` pipeline stages; the routed experts of a
MoE layer are spread over the `tp x dp` GPUs of a stage, `ep` of them holding whole experts (expert
parallelism) and each expert split `tp x dp / ep` ways. Every achieved rate is a datasheet figure
times a named efficiency factor (sizer/efficiency.py, fitted by sizer/calibrate.py).

Decode step of B sequences at mean context c (pp microbatches of B/pp, each crossing every stage;
per data-parallel rank b = B / (pp dp) sequences; T = B / pp tokens through each MoE layer):

    t_mem   = dense weight bytes / (HBM x hbm_bandwidth_fraction)
            + expert bytes x P(touched) / (HBM x expert_bandwidth_fraction)
              P(touched) = 1 - (1 - top_k / E)^T          only the experts a batch routes to are read
            + b x KV bytes(c) / (HBM x kv_bandwidth_fraction)          sliding layers capped at the window
    t_comp  = (b x dense FLOPs/token + T x expert FLOPs/token / (tp dp)) / (peak x compute_fraction)
            + b x attention FLOPs(c) / (bf16 peak x attention_compute_fraction)
    t_comm  = TP all-reduces (2 per layer; 1 when the MLP is a MoE with DP or EP) over the link:
              latency + 2 (tp-1)/tp x b x hidden x 2 B / (link x link_bandwidth_fraction)
              (link: gpus.yaml link_gb_per_s, or bridge_gb_per_s for a replica within one
              NVLink-bridged group of PCIe cards, Gpu.link_for)
            + expert-parallel all-to-all (dispatch + combine per MoE layer) when dp or ep > 1:
              latency + (tokens per GPU) x top_k x hidden x 2 B x (G-1)/G / achieved link
    stage   = max(t_mem, t_comp) + t_comm
    step    = pp x stage + (pp-1) point-to-point sends + step_overhead + b x sequence_overhead

A replica spanning machines of G GPUs (Layout.node_gpus, constraints.allow_cross_node) sends what
crosses machines over the inter-node link (gpus.yaml network_gb_per_s, per GPU, at the same
link_bandwidth_fraction and latency): the TP all-reduces when tp > G (the ring runs at its slowest
hop), the all-to-all when tp x dp > G, and ceil(tp pp / G) - 1 of the pipeline hops (all of them
when tp > G).

Prefill of one prompt of P tokens (through every stage; PP does not shorten it):

    FLOPs   = P x (dense + expert FLOPs/token) + P^2 / 2 x causal attention FLOPs/token^2
    time    = max(FLOPs / achieved peak, every weight byte once / achieved HBM) + all-reduces of
              P x hidden activations + p2p + step overhead

Mixed steps (chunked prefill, or in-flight batching of whole prompts): when prompt tokens arrive
at a rate r (tokens/s) and share steps with decode, a step lasts

    t = max(t_mem + R, (t_comp + R) / (1 - r x c_p))      c_p: compute seconds per prompt token,
                                                           R: communication and overheads
i.e. prompt FLOPs hide under the weight reads of a memory-bound step, and stretch a compute-bound
one in proportion to their share.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from .catalog import Gpu
from .efficiency import FACTORS, EfficiencyTable, Factors, architecture_of, efficiency_table
from .engines import budget_counts_decode
from .memory import kv_bytes_per_token_per_layer, linear_state_bytes_per_layer
from .model import ModelArch, layer_classes, stage_weights, weight_scheme
from .units import COMPUTE_FIELD, DTYPE_BYTES

ACT_BYTES = DTYPE_BYTES["bf16"]  # activations travel in 16-bit


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """How one replica's GPUs are arranged. GPUs = tp x dp x pp."""

    tp: int = 1
    pp: int = 1
    dp: int = 1  # attention data-parallel ranks (each holds its own sequences' KV)
    ep: int = 1  # expert-parallel degree inside the tp x dp MoE group
    node_gpus: int = 0  # 0: every GPU in one machine; G: the replica spans machines of G GPUs (inter-node link)

    @property
    def gpus(self) -> int:
        return self.tp * self.dp * self.pp

    @property
    def moe_group(self) -> int:
        return self.tp * self.dp

    def label(self) -> str:
        parts = [f"tp={self.tp}"]
        if self.dp > 1:
            parts.append(f"dp={self.dp}")
        if self.ep > 1:
            parts.append(f"ep={self.ep}")
        if self.pp > 1:
            parts.append(f"pp={self.pp}")
        return " ".join(parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class StageShape:
    """Device-independent numbers of the binding (largest) pipeline stage, per GPU."""

    layers: int
    attention_layers_full: int
    attention_layers_sliding: int
    moe_layers: int  # MoE layers on the binding stage
    total_moe_layers: int
    dense_weight_bytes: float  # everything but routed experts, incl. embedding / lm_head on edge stages
    expert_weight_bytes: float  # this GPU's share of the stage's routed experts
    dense_flops_per_token: float  # 2 x non-expert parameters on this GPU (+ lm_head on the last stage)
    expert_flops_per_token: float  # 2 x routed parameters one token passes through on the stage, whole (not per GPU)
    total_dense_flops_per_token: float  # summed over all stages
    total_expert_flops_per_token: float
    attn_flops_per_ctx_token: float  # decode: per query token, per context token, all layers of the stage, this GPU
    total_prefill_attn_flops_per_ctx_token: float  # prefill (unabsorbed MLA), all layers, this GPU
    kv_bytes_per_token_per_layer: float  # this GPU
    all_dense_weight_bytes: float  # summed over stages, one GPU's share of each
    all_expert_weight_bytes: float
    dense_compute_format: str  # the format the non-expert GEMMs compute in
    expert_compute_format: str
    linear_layers: int = 0  # Gated DeltaNet layers on the binding stage
    state_bytes_per_sequence: float = 0.0  # one sequence's recurrent and convolution state on them, this GPU
    linear_flops_per_token: float = 0.0  # the delta rule's FLOPs per token on the binding stage, this GPU
    total_linear_flops_per_token: float = 0.0  # summed over all stages


def _kv_format(kv_dtype: str):
    """A KV label as candidates carry it: "fp8", or "q8_0/q4_0" (llama.cpp's K and V types)."""
    if "/" in kv_dtype:
        from .memory import KvFormat

        k, v = kv_dtype.split("/", 1)
        return KvFormat(k, v)
    return kv_dtype


def _format_of(weight_dtype: str, applies: bool) -> str:
    return COMPUTE_FIELD.get(weight_dtype, "bf16") if applies else "bf16"


@lru_cache(maxsize=8192)
def stage_shape(model: ModelArch, tp: int, pp: int, weight_dtype: str, kv_dtype: str, dp: int = 1, ep: int = 1) -> StageShape:
    scheme = weight_scheme(model, weight_dtype)
    stages = stage_weights(model, tp, pp, weight_dtype)
    binding = max(range(pp), key=lambda s: stages[s].total_bytes)
    layer_ranges = model.stage_layers(pp)
    group = tp * dp

    def per(name: str, layer: int) -> float:
        applies = scheme.applies(name, layer) if hasattr(scheme, "applies") else name in scheme.groups
        return scheme.bytes_per_param if applies else DTYPE_BYTES["bf16"]

    def layer(i: int) -> tuple[float, float, float, float, int]:
        dense = experts = dense_flops = expert_flops = 0.0
        moe = 0
        for name, params in model.layer_params(i, tp).items():
            if name == "experts":
                whole = params * tp  # layer_params splits experts by tp: undo, then spread over the group
                experts += whole * per(name, i) / group
                expert_flops += 2 * whole * model.num_experts_per_tok / model.num_experts
                moe += 1
            else:
                dense += params * per(name, i)
                dense_flops += 2 * params
        return dense, experts, dense_flops, expert_flops, moe

    key_of = layer_classes(model, scheme)  # layers alike are computed once
    alike: dict[tuple[bool, int], tuple[float, float, float, float, int]] = {}

    def split(layers: range) -> tuple[float, float, float, float, int]:
        total = [0.0, 0.0, 0.0, 0.0, 0]
        for i in layers:
            key = key_of(i)
            figures = alike.get(key)
            if figures is None:
                figures = alike[key] = layer(i)
            for k in range(5):
                total[k] += figures[k]
        return total[0], total[1], total[2], total[3], int(total[4])

    heads_per_gpu = model.num_attention_heads / tp
    if model.is_mla:
        # decode runs absorbed MLA: scores and values in the latent space (kv_lora_rank + rope)
        decode_dim = model.kv_lora_rank + model.qk_rope_head_dim
        qk = model.qk_nope_head_dim + model.qk_rope_head_dim
        prefill_per_head = 2 * qk + 2 * model.v_head_dim  # prefill: full heads, QK^T over qk dims, PV over v
    else:
        decode_dim = model.head_dim
        prefill_per_head = 4 * model.head_dim
    decode_attn = 4 * heads_per_gpu * decode_dim  # QK^T and PV, 2 FLOPs per multiply-add each

    lm_head_flops = 2 * model.vocab_size * model.hidden_size / tp
    parts = [split(r) for r in layer_ranges]
    d, e, dfl, efl, moe = parts[binding]
    edge = stages[binding].embedding_bytes + stages[binding].lm_head_bytes
    all_edges = sum(s.embedding_bytes + s.lm_head_bytes for s in stages)
    sliding = sum(1 for i in layer_ranges[binding] if model.layer_types[i] == "sliding")
    linear = sum(1 for i in layer_ranges[binding] if model.layer_types[i] == "linear")
    attention_layers = len(layer_ranges[binding]) - linear
    dense_applies = any(g in scheme.groups for g in ("attention", "mlp"))
    # Gated DeltaNet per token and value head: the state's decay, the delta update (S k, an outer
    # product) and the output S q, each dk x dv multiply-adds: 8 dk dv FLOPs (the chunked prefill
    # form does the same work in chunk-sized matrix products)
    delta_rule = 8 * model.linear_key_head_dim * model.linear_value_head_dim * model.linear_value_heads / tp
    return StageShape(
        layers=len(layer_ranges[binding]),
        attention_layers_full=attention_layers - sliding,
        attention_layers_sliding=sliding,
        moe_layers=moe,
        total_moe_layers=sum(p[4] for p in parts),
        dense_weight_bytes=d + edge,
        expert_weight_bytes=e,
        dense_flops_per_token=dfl + (lm_head_flops if binding == pp - 1 else 0.0),
        expert_flops_per_token=efl,
        total_dense_flops_per_token=sum(p[2] for p in parts) + lm_head_flops,
        total_expert_flops_per_token=sum(p[3] for p in parts),
        attn_flops_per_ctx_token=decode_attn * attention_layers,
        total_prefill_attn_flops_per_ctx_token=prefill_per_head * heads_per_gpu * model.num_kv_layers,
        kv_bytes_per_token_per_layer=kv_bytes_per_token_per_layer(model, _kv_format(kv_dtype), tp),
        all_dense_weight_bytes=sum(p[0] for p in parts) + all_edges,
        all_expert_weight_bytes=sum(p[1] for p in parts),
        dense_compute_format=_format_of(weight_dtype, dense_applies),
        expert_compute_format=_format_of(weight_dtype, "experts" in scheme.groups),
        linear_layers=linear,
        state_bytes_per_sequence=linear * linear_state_bytes_per_layer(model, tp),
        linear_flops_per_token=delta_rule * linear,
        total_linear_flops_per_token=delta_rule * model.num_linear_layers,
    )


def compute_flops_per_s(gpu: Gpu, weight_dtype: str) -> float:
    """Dense peak FLOP/s for the format this weight dtype computes in on `gpu`; bf16 when the
    device lacks the format (weight-only formats dequantise to bf16)."""
    return _peak(gpu, COMPUTE_FIELD.get(weight_dtype, "bf16"))


def _peak(gpu: Gpu, fmt: str) -> float:
    value = gpu.dense_flops_per_s.get(fmt)
    return float(value if value is not None else gpu.dense_flops_per_s["bf16"])


# Per-candidate arrays; the factor arrays are named after the efficiency factors.
_SHAPE_FIELDS = (
    "tp",
    "pp",
    "dp",
    "ep",
    "hidden",
    "layers",
    "total_layers",
    "full_layers",
    "sliding_layers",
    "sliding_window",
    "moe_layers",
    "total_moe_layers",
    "dense_weight_bytes",
    "expert_weight_bytes",
    "num_experts",
    "top_k",
    "dense_flops_per_token",
    "expert_flops_per_token",
    "total_dense_flops_per_token",
    "total_expert_flops_per_token",
    "attn_flops_per_ctx",
    "total_prefill_attn_flops_per_ctx",
    "kv_bytes_per_token_per_layer",
    "state_bytes_per_sequence",
    "linear_flops_per_token",
    "total_linear_flops_per_token",
    "all_dense_weight_bytes",
    "all_expert_weight_bytes",
    "hbm_peak_bytes_per_s",
    "dense_peak_flops_per_s",
    "expert_peak_flops_per_s",
    "bf16_peak_flops_per_s",
    "link_peak_bytes_per_s",
    "node_gpus",
    "network_peak_bytes_per_s",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class StepModel:
    """Arrays of per-candidate parameters; every method broadcasts over candidates."""

    tp: np.ndarray
    pp: np.ndarray
    dp: np.ndarray
    ep: np.ndarray
    hidden: np.ndarray
    layers: np.ndarray  # on the binding stage
    total_layers: np.ndarray
    full_layers: np.ndarray
    sliding_layers: np.ndarray
    sliding_window: np.ndarray
    moe_layers: np.ndarray
    total_moe_layers: np.ndarray
    dense_weight_bytes: np.ndarray
    expert_weight_bytes: np.ndarray
    num_experts: np.ndarray
    top_k: np.ndarray
    dense_flops_per_token: np.ndarray
    expert_flops_per_token: np.ndarray
    total_dense_flops_per_token: np.ndarray
    total_expert_flops_per_token: np.ndarray
    attn_flops_per_ctx: np.ndarray
    total_prefill_attn_flops_per_ctx: np.ndarray
    kv_bytes_per_token_per_layer: np.ndarray
    state_bytes_per_sequence: np.ndarray  # Gated DeltaNet state one sequence reads and writes each step, binding stage
    linear_flops_per_token: np.ndarray  # the delta rule's FLOPs per token, binding stage
    total_linear_flops_per_token: np.ndarray
    all_dense_weight_bytes: np.ndarray
    all_expert_weight_bytes: np.ndarray
    hbm_peak_bytes_per_s: np.ndarray
    dense_peak_flops_per_s: np.ndarray
    expert_peak_flops_per_s: np.ndarray
    bf16_peak_flops_per_s: np.ndarray
    link_peak_bytes_per_s: np.ndarray
    node_gpus: np.ndarray  # 0: one machine; G: machines of G GPUs, crossed over the inter-node link
    network_peak_bytes_per_s: np.ndarray  # inter-node link per GPU (gpus.yaml network_gb_per_s)
    eager_prefill: np.ndarray  # 1 where a step carrying prompt tokens runs its layers eagerly, 0 for a compiled engine
    budget_decode_tokens: np.ndarray  # budget tokens a decoding sequence takes in a step (engines.budget_counts_decode)
    overlap_scheduler: np.ndarray  # 1 where the engine returns a prompt's first token one step late (overlap_scheduler)
    # efficiency factors (sizer/efficiency.py), one value per candidate
    hbm_bandwidth_fraction: np.ndarray
    expert_bandwidth_fraction: np.ndarray
    kv_bandwidth_fraction: np.ndarray
    compute_fraction: np.ndarray
    prefill_compute_fraction: np.ndarray
    attention_compute_fraction: np.ndarray
    link_bandwidth_fraction: np.ndarray
    burst_fraction: np.ndarray
    link_latency_s: np.ndarray
    step_overhead_s: np.ndarray
    sequence_overhead_s: np.ndarray
    request_overhead_s: np.ndarray
    prefill_layer_overhead_s: np.ndarray
    admission_steps: np.ndarray
    attention_dp_prefill_factor: np.ndarray

    @property
    def size(self) -> int:
        return int(self.tp.shape[0])

    def take(self, index: np.ndarray | list[int]) -> "StepModel":
        idx = np.asarray(index)
        return StepModel(**{name: getattr(self, name)[idx] for name in self.__dataclass_fields__})

    def column(self) -> "StepModel":
        """The same candidates as a column (every array of shape (C, 1)), so that every method,
        all of them elementwise, broadcasts over a second axis: (C, K) arguments give (C, K) times."""
        return StepModel(**{name: getattr(self, name)[:, None] for name in self.__dataclass_fields__})

    def with_factors(self, **arrays: np.ndarray) -> "StepModel":
        """The same candidates under other efficiency factors (used by the calibration)."""
        return replace(self, **{k: np.broadcast_to(np.asarray(v, dtype=float), self.tp.shape).copy() for k, v in arrays.items()})

    # -- achieved rates ----------------------------------------------------------------------
    @property
    def _dense_bw(self) -> np.ndarray:
        return self.hbm_peak_bytes_per_s * self.hbm_bandwidth_fraction

    @property
    def _expert_bw(self) -> np.ndarray:
        return self.hbm_peak_bytes_per_s * self.expert_bandwidth_fraction

    @property
    def _kv_bw(self) -> np.ndarray:
        return self.hbm_peak_bytes_per_s * self.kv_bandwidth_fraction

    @property
    def _link_bw(self) -> np.ndarray:
        return self.link_peak_bytes_per_s * self.link_bandwidth_fraction

    @property
    def _eager_layers_s(self) -> np.ndarray:
        """Host time of a step carrying prompt tokens, every layer run eagerly (0 where compiled:
        eager_prefill)."""
        return self.total_layers * self.prefill_layer_overhead_s * self.eager_prefill

    @property
    def _tp_bw(self) -> np.ndarray:
        """The TP ring's bandwidth: the intra-node link, or the inter-node link where the TP group
        spans machines (the ring runs at its slowest hop)."""
        cross = (self.node_gpus > 0) & (self.tp > self.node_gpus)
        return np.where(cross, self.network_peak_bytes_per_s * self.link_bandwidth_fraction, self._link_bw)

    @property
    def _moe_bw(self) -> np.ndarray:
        cross = (self.node_gpus > 0) & (self.tp * self.dp > self.node_gpus)
        return np.where(cross, self.network_peak_bytes_per_s * self.link_bandwidth_fraction, self._link_bw)

    @property
    def _crossing_hops(self) -> np.ndarray:
        """Pipeline hops between machines: every hop when a stage spans machines (tp > G), else
        one less than the machines the replica fills, ceil(tp pp / G) - 1; 0 in one machine."""
        g = np.maximum(self.node_gpus, 1)
        spread = np.where(self.tp > g, self.pp - 1, np.ceil(self.tp * self.pp / g) - 1)
        return np.where(self.node_gpus > 0, np.minimum(spread, self.pp - 1), 0.0)

    @property
    def _attn_flops(self) -> np.ndarray:
        return self.bf16_peak_flops_per_s * self.attention_compute_fraction

    @property
    def _prefill_fraction(self) -> np.ndarray:
        """The GEMM fraction of prompt tokens that share steps: prefill_compute_fraction, times
        attention_dp_prefill_factor where the replica runs attention data-parallel (dp > 1). A
        prompt alone (prefill_s) takes prefill_compute_fraction: it has no spread to be uneven."""
        return self.prefill_compute_fraction * np.where(self.dp > 1, self.attention_dp_prefill_factor, 1.0)

    @property
    def _moe_comm(self) -> np.ndarray:
        """True where MoE layers exchange tokens by all-to-all (attention DP or expert parallelism)."""
        return (self.num_experts > 0) & ((self.dp > 1) | (self.ep > 1))

    # -- pieces ------------------------------------------------------------------------------
    def _tp_allreduce_s(self, tokens: np.ndarray, layers: np.ndarray, moe_layers: np.ndarray) -> np.ndarray:
        """Ring all-reduces over TP of tokens x hidden 16-bit activations: after attention and
        after the MLP of every layer, except MoE layers whose tokens move by all-to-all instead."""
        tp = self.tp
        ring = np.where(tp > 1, 2 * (tp - 1) / tp, 0.0)
        per = np.where(tp > 1, self.link_latency_s, 0.0) + ring * tokens * self.hidden * ACT_BYTES / self._tp_bw
        count = 2 * layers - np.where(self._moe_comm, moe_layers, 0.0)
        return count * per

    def _alltoall_s(self, tokens_per_gpu: np.ndarray, moe_layers: np.ndarray) -> np.ndarray:
        """Expert-parallel dispatch and combine of each MoE layer (top_k copies of each token)."""
        g = self.tp * self.dp
        share = np.where(g > 1, (g - 1) / np.maximum(g, 1), 0.0)
        per = self.link_latency_s + tokens_per_gpu * self.top_k * self.hidden * ACT_BYTES * share / self._moe_bw
        return np.where(self._moe_comm, 2 * moe_layers * per, 0.0)

    def _p2p_s(self, tokens: np.ndarray) -> np.ndarray:
        """Pipeline sends of `tokens` activations: hops inside a machine over the intra-node link,
        hops between machines (a replica spanning instances) over the inter-node one."""
        data = tokens * self.hidden * ACT_BYTES
        cross = self._crossing_hops
        net = np.where(self.node_gpus > 0, self.network_peak_bytes_per_s * self.link_bandwidth_fraction, self._link_bw)
        hop = self.link_latency_s + data / self._link_bw
        return (self.pp - 1) * hop + cross * (data / net - data / self._link_bw)

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
    def _stage_parts(self, micro: np.ndarray, context: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(weight-read time, GEMM time, attention time, communication time) of one microbatch of
        `micro` sequences on the binding stage. GEMMs stream the weights: the two overlap (a
        roofline, max of the two). Decode attention is its own kernel reading the KV cache:
        max(KV bytes / achieved bandwidth, attention FLOPs / achieved peak), after the GEMMs."""
        b = micro / self.dp  # sequences per attention rank
        kv_ctx = self._kv_context(context)
        t_weights = self.dense_weight_bytes / self._dense_bw + self.expert_weight_bytes * self._expert_fraction(micro) / self._expert_bw
        t_gemm = b * self.dense_flops_per_token / (self.dense_peak_flops_per_s * self.compute_fraction) + micro * self.expert_flops_per_token / (
            self.tp * self.dp
        ) / (self.expert_peak_flops_per_s * self.compute_fraction)
        kv_layers = self.full_layers + self.sliding_layers
        attn_ctx = np.where(kv_layers > 0, kv_ctx / np.maximum(kv_layers, 1), 0.0)
        # Gated DeltaNet layers read and write each sequence's state once a step, beside the KV reads
        t_attn = np.maximum(
            b * (kv_ctx * self.kv_bytes_per_token_per_layer + 2 * self.state_bytes_per_sequence) / self._kv_bw,
            b * (self.attn_flops_per_ctx * attn_ctx + self.linear_flops_per_token) / self._attn_flops,
        )
        t_comm = self._tp_allreduce_s(b, self.layers, self.moe_layers) + self._alltoall_s(micro / (self.tp * self.dp), self.moe_layers)
        return t_weights, t_gemm, t_attn, t_comm

    def stage_decode_s(self, batch: np.ndarray, context: np.ndarray) -> np.ndarray:
        """One decode step of `batch` sequences at mean `context` tokens on the binding stage."""
        t_w, t_g, t_a, t_comm = self._stage_parts(np.asarray(batch, dtype=float), context)
        return np.maximum(t_w, t_g) + t_a + t_comm

    def step_parts(self, batch: np.ndarray, context: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(weight-read time, GEMM time, the rest) of one decode step of the whole replica: the
        step is max(weights, GEMMs) + rest; rest holds attention, communication and overheads."""
        batch = np.maximum(np.asarray(batch, dtype=float), 1.0)
        micro = np.maximum(batch / self.pp, 1.0)
        t_w, t_g, t_a, t_comm = self._stage_parts(micro, context)
        rest = self.pp * (t_a + t_comm) + self._p2p_s(micro) + self.step_overhead_s + self.sequence_overhead_s * batch / self.dp
        return self.pp * t_w, self.pp * t_g, rest

    def weights_with_prompt_s(self, batch: np.ndarray, prompt_tokens: np.ndarray) -> np.ndarray:
        """Weight-read time of a step of `batch` decoding sequences that also carries
        `prompt_tokens` prompt tokens: the routed experts read are those any of the step's tokens
        picks (_expert_fraction of the decoding tokens and the prompt's together, per pipeline
        microbatch), so a step carrying a prompt reads the experts the prompt alone would
        (prefill_s), where the decoding batch alone may touch a few. Dense models: the decode
        step's."""
        batch = np.maximum(np.asarray(batch, dtype=float), 1.0)
        micro = np.maximum(batch / self.pp, 1.0) + np.asarray(prompt_tokens, dtype=float) / self.pp
        return self.pp * (self.dense_weight_bytes / self._dense_bw + self.expert_weight_bytes * self._expert_fraction(micro) / self._expert_bw)

    def decode_parts(self, batch: np.ndarray, context: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Alias of step_parts (weights, GEMMs, rest)."""
        return self.step_parts(batch, context)

    def decode_step_s(self, batch: np.ndarray, context: np.ndarray) -> np.ndarray:
        """Time between output tokens of a running batch of `batch` sequences (no prefill mixed in)."""
        t_w, t_g, rest = self.step_parts(batch, context)
        return np.maximum(t_w, t_g) + rest

    # -- prefill -------------------------------------------------------------------------------
    def prefill_s(self, prompt_tokens: np.ndarray) -> np.ndarray:
        """Time to prefill one prompt alone, through every stage (PP does not shorten it)."""
        p = np.asarray(prompt_tokens, dtype=float)
        weights = self.all_dense_weight_bytes / self._dense_bw + self.all_expert_weight_bytes * self._expert_fraction(p) / self._expert_bw
        # a prompt alone runs on one attention rank: no uneven spread over ranks to wait for, so
        # not attention_dp_prefill_factor (the ranks' imbalance where prompts share steps)
        fraction = self.prefill_compute_fraction
        gemm = p * (
            self.total_dense_flops_per_token / (self.dense_peak_flops_per_s * fraction)
            + self.total_expert_flops_per_token / (self.tp * self.dp) / (self.expert_peak_flops_per_s * fraction)
        )
        t = np.maximum(gemm, weights) + (0.5 * self.total_prefill_attn_flops_per_ctx * p * p + self.total_linear_flops_per_token * p) / self._attn_flops
        comm = self._tp_allreduce_s(p, self.total_layers, self.total_moe_layers) + self._alltoall_s(p / (self.tp * self.dp), self.total_moe_layers)
        return t + comm + self._p2p_s(p) + self.step_overhead_s + self._eager_layers_s

    def prefill_token_parts(self, mean_prompt_tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Replica seconds per prompt token when prefill shares steps with decode, split into
        (GEMM time, which overlaps the step's weight reads, and the rest: attention at half the
        prompt length and the activations' communication without latency terms). With attention
        DP the dense and attention part runs on one rank while the others do their own: 1/dp."""
        p = np.asarray(mean_prompt_tokens, dtype=float)
        fraction = self._prefill_fraction
        dense = self.total_dense_flops_per_token / (self.dense_peak_flops_per_s * fraction)
        attn = (0.5 * self.total_prefill_attn_flops_per_ctx * p + self.total_linear_flops_per_token) / self._attn_flops
        expert = self.total_expert_flops_per_token / (self.tp * self.dp) / (self.expert_peak_flops_per_s * fraction)
        ring = np.where(self.tp > 1, 2 * (self.tp - 1) / self.tp, 0.0)
        count = 2 * self.total_layers - np.where(self._moe_comm, self.total_moe_layers, 0.0)
        comm = count * ring * self.hidden * ACT_BYTES / self._tp_bw
        g = self.tp * self.dp
        a2a = np.where(self._moe_comm, 2 * self.total_moe_layers * self.top_k * self.hidden * ACT_BYTES * (g - 1) / np.maximum(g, 1) / g / self._moe_bw, 0.0)
        return dense / self.dp + expert, (attn + comm) / self.dp + a2a

    def prefill_per_token_s(self, mean_prompt_tokens: np.ndarray) -> np.ndarray:
        """Marginal replica time per prompt token when prefill shares steps with decode."""
        gemm, other = self.prefill_token_parts(mean_prompt_tokens)
        return gemm + other

    # -- mixed steps ---------------------------------------------------------------------------
    def mixed_parts(self, batch: np.ndarray, context: np.ndarray, prompt_tokens: np.ndarray, mean_prompt_tokens: np.ndarray) -> np.ndarray:
        """One step of `batch` decoding sequences and `prompt_tokens` prompt tokens (of prompts of
        the given mean length): max(weights, decode GEMMs + prompt GEMMs) + rest + prompt attention
        + the eager-prefill layer overhead, in proportion to the prompts the step carries (at most
        one full overhead per step)."""
        _, t_g, rest = self.step_parts(batch, context)
        c_g, c_o = self.prefill_token_parts(mean_prompt_tokens)
        x = np.asarray(prompt_tokens, dtype=float)
        t_w = self.weights_with_prompt_s(batch, x)
        prompts = np.minimum(x / np.maximum(np.asarray(mean_prompt_tokens, dtype=float), 1.0), 1.0)
        eager = prompts * self._eager_layers_s / self.pp
        return np.maximum(t_w, t_g + x * c_g) + rest + x * c_o + eager

    def mixed_step_s(self, batch: np.ndarray, context: np.ndarray, prompt_rate_tokens_per_s: np.ndarray, mean_prompt_tokens: np.ndarray) -> np.ndarray:
        """Mean step time of `batch` decoding sequences when prompt tokens arrive at the given rate
        and share the steps. A step t carries r t prompt tokens, so t = max(t_w, t_g + r t c_g) +
        rest + r t c_o; its fixed point is the larger of the two linear pieces' fixed points:
        max((t_w + rest) / (1 - r c_o), (t_g + rest) / (1 - r (c_g + c_o))); inf when prefill alone
        saturates the replica."""
        t_w, t_g, rest = self.step_parts(batch, context)
        c_g, c_o = self.prefill_token_parts(mean_prompt_tokens)
        r = np.asarray(prompt_rate_tokens_per_s, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            a = np.where(r * c_o < 1, (t_w + rest) / np.maximum(1 - r * c_o, 1e-12), np.inf)
            b = np.where(r * (c_g + c_o) < 1, (t_g + rest) / np.maximum(1 - r * (c_g + c_o), 1e-12), np.inf)
        return np.maximum(a, b)


    def lumpy_step(
        self,
        batch: np.ndarray,
        context: np.ndarray,
        prompt_rate_rps: np.ndarray,
        mean_prompt_tokens: np.ndarray,
        budget_tokens: np.ndarray,
        iterations: int = 100,
        prompt_parts: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Mean step time when whole prompts arrive at `prompt_rate_rps` (Poisson) and share
        steps with `batch` decoding sequences; prompts are not spread evenly over steps: a step
        carries prompt tokens with probability p and then X1 of them,

            x  = rate x t x E[P]               prompt tokens per step on average
            p  = max(p_chain, x / budget)      p_chain = q0 / (q0 + 1 - q1), q = 1 - exp(-rate f)
            X1 = x / p                         (at most the step's token budget)
            t  = (1 - p) f(0) + p f(X1)        f = mixed_parts: max(weights, GEMMs) + rest

        p_chain is the stationary share of the two-state chain in which a step with prompts
        (lasting f(X1)) draws the next one with q1 and a step without (f(0)) with q0; until
        2026-12-04 it was 1 - exp(-rate t), the share at the mean step, which overstates it
        (tests/test_perf.py: 37 % of steps where the step process has 33.7 %).

        which is longer than f(x) because f is convex in the prompt tokens (a memory-bound step
        hides a few prompt tokens; a whole prompt makes it compute-bound). The right side g(t) grows
        with t and lies between f(0) and f(budget), which bracket the fixed point; regula falsi
        (Illinois) closes the bracket to 1e-12 of t in at most `iterations` evaluations of g (ten
        damped iterations from the fluid step, the method before 2026-12-03, stopped up to 77 %
        short of the fixed point near a replica's capacity, about 1 % at the shipped plans' largest
        rates). Returns (t, p, f(0), f(X1)); t is inf where prefill saturates the replica (the
        fluid step, mixed_step_s, is)."""
        rate = np.asarray(prompt_rate_rps, dtype=float)
        mp = np.asarray(mean_prompt_tokens, dtype=float)
        budget = np.maximum(np.asarray(budget_tokens, dtype=float), 1.0)
        t_w, t_g, rest = self.step_parts(batch, context)
        c_g, c_o = prompt_parts if prompt_parts is not None else self.prefill_token_parts(mp)
        per_layer = self._eager_layers_s / self.pp

        def f(x: np.ndarray) -> np.ndarray:
            prompts = np.minimum(x / np.maximum(mp, 1.0), 1.0)
            return np.maximum(self.weights_with_prompt_s(batch, x), t_g + x * c_g) + rest + x * c_o + prompts * per_layer

        r = rate * mp
        ok = (r * c_o < 1) & (r * (c_g + c_o) < 1)  # the fluid step (mixed_step_s) is finite: prefill does not saturate
        f0 = f(np.zeros_like(rate * t_w))

        stay = np.exp(-rate * f0)  # P(no prompt arrives during a step without one)
        q0 = -np.expm1(-rate * f0)

        def parts(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            x = rate * t * mp
            # Whether a step carries a prompt depends on the step before it: a step with prompts
            # lasts f1 and draws the next with probability q1 = 1 - exp(-rate f1), one without lasts
            # f0 and draws q0. The chain's stationary share p = q0 / (q0 + 1 - q1), with f1 = f0 +
            # (t - f0) / p for a mean step t: p solves p (q0 + exp(-rate f0 - a / p)) = q0, a =
            # rate (t - f0), whose left side grows and is convex in p. The share at the mean step,
            # 1 - exp(-rate t), is never below it (Jensen: E[1 - exp(-rate d)] < 1 - exp(-rate
            # E[d])), so Newton from there closes on it from above; each element stops once its
            # step is below 1e-15 of it (its figure does not depend on the others').
            a = rate * np.maximum(t - f0, 0.0)
            p = np.maximum(-np.expm1(-rate * t), 1e-300)
            open_ = np.broadcast_to(q0 > 0, p.shape).copy()  # no arrivals at all: no prompt steps
            for _ in range(_CHAIN_NEWTON):
                e = stay * np.exp(-a / p)
                step = (p * (q0 + e) - q0) / (q0 + e * (1 + a / p))
                open_ &= step > _CHAIN_REL * p
                if not open_.any():
                    break
                p = np.where(open_, np.maximum(p - step, 1e-300), p)
            p = np.minimum(np.maximum(np.maximum(p, x / budget), 1e-12), 1.0)
            return p, f(np.minimum(x / p, budget))

        def excess(t: np.ndarray) -> np.ndarray:  # g(t) - t, g the step the arrivals during t make
            p, f1 = parts(t)
            return (1 - p) * f0 + p * f1 - t

        # g grows with t and lies in [f(0), f(budget)] (p <= 1; a step carries at most the budget),
        # so the fixed point is bracketed there; regula falsi with the Illinois rule closes on it
        lo, hi = f0, np.maximum(f0, f(np.broadcast_to(budget, f0.shape).astype(float)))
        e_lo, e_hi = excess(lo), excess(hi)
        side = np.zeros(f0.shape, dtype=int)  # the end the last step kept: -1 lo, +1 hi
        for _ in range(iterations):
            # closed: the bracket is narrow, or an end is the fixed point itself (no arrivals: g = f(0))
            # (an element, once closed, stays as it is: its figure does not depend on the others')
            open_ = ~((hi - lo <= _LUMPY_REL * hi) | (np.minimum(np.abs(e_lo), np.abs(e_hi)) <= _LUMPY_REL * lo)) & np.isfinite(hi - lo)
            if not np.any(open_):
                break
            with np.errstate(divide="ignore", invalid="ignore"):
                t = np.where(e_lo - e_hi > 0, lo + e_lo * (hi - lo) / (e_lo - e_hi), 0.5 * (lo + hi))
            t = np.clip(t, lo, hi)
            e = excess(t)
            up = open_ & (e >= 0)  # the root lies above t
            down = open_ & (e < 0)
            e_hi = np.where(up & (side == 1), 0.5 * e_hi, e_hi)  # Illinois: the end kept twice counts half
            e_lo = np.where(down & (side == -1), 0.5 * e_lo, e_lo)
            lo, e_lo = np.where(up, t, lo), np.where(up, e, e_lo)
            hi, e_hi = np.where(down, t, hi), np.where(down, e, e_hi)
            side = np.where(up, 1, np.where(down, -1, side))
        t = np.where(np.abs(e_lo) <= np.abs(e_hi), lo, hi)
        p, f1 = parts(t)
        return np.where(ok, t, np.inf), p, f0, f1


_LUMPY_REL = 1e-12  # lumpy_step closes its bracket to this share of the step
_CHAIN_NEWTON = 30  # at most this many Newton steps for lumpy_step's prompt-carrying share (9 at worst on 400,000 random loads)
_CHAIN_REL = 1e-15  # ... each stopping once its step is below this share of it


def _factor_values(table: EfficiencyTable, gpu: Gpu, engine: str, weight_dtype: str, model: ModelArch, version: str) -> Factors:
    return table.factors(gpu.name, engine, weight_dtype, architecture_of(model), version, gpu.vendor)


def eager_prefill(engine: str, version: str) -> float:
    """Whether a step that carries prompt tokens pays the per-layer host overhead of eager
    execution (`prefill_layer_overhead_s`): 1, except TensorRT-LLM under MLPerf submitters'
    harnesses (release `mlperf`), 0: their networks run compiled. Llama-2-70B and Mixtral run as
    TensorRT engines built by the harness (`trtllm_build_flags`, e.g. gbeezybez/
    inference_results_v6.0@232fbf90: closed/Dell/configs/XE7740_H200_NVL_141GBx8/Offline/
    llama2-70b.py), Llama-3.1-8B through TensorRT-LLM's PyTorch flow under torch.compile with a
    full graph and piecewise CUDA graphs over the mixed steps' token counts (`torch_compile_config:
    enable_fullgraph, enable_piecewise_cuda_graph, capture_num_tokens` 512-2,816, same tree:
    Offline/llama3_1-8b.py and ASUSTeK's RTX PRO 6000 configs). Fitted as eager, the MLPerf rows
    took 0.36-0.62 ms a layer (11.6 ms a step for Llama-3.1-8B on an RTX PRO 6000, whose Server
    and Offline rows put the whole fixed part of a step near 5 ms), and the step at a Server run's
    own batch came out 6-32 % slow."""
    from .efficiency import version_label

    return 0.0 if str(engine).lower() == "trtllm" and version_label(version, engine) == "mlperf" else 1.0


def overlap_scheduler(engine: str, version: str) -> float:
    """Whether the engine runs an overlap scheduler, which launches step n+1 before it processes
    step n's results, so that a prompt's first token reaches the client one step after the step
    that computed it: 1 for TensorRT-LLM's PyTorch executor ("The optimization introduces one
    extra decoding step ... Enabled by default. To disable, set `disable_overlap_scheduler=True`",
    NVIDIA/TensorRT-LLM@8237b7d6:docs/source/torch/features/overlap_scheduler.md) and for SGLang
    (on by default since sgl-project/sglang#2067, 2024-11: "we delayed the processing of the first
    batch in favor of launching the kernels for the next batch first"); 0 for vLLM, whose V1
    async scheduling waits on step n's own output, and for TensorRT-LLM under MLPerf submitters'
    harnesses (release `mlperf`: the C++ executor of engines the harness builds) and the perf
    overview's gptSessionBenchmark (release `gpt`). Which step comes next is the queue's business
    (queueing._steady)."""
    from .efficiency import version_label

    eng = str(engine).lower()
    if eng == "trtllm":
        return 0.0 if version_label(version, engine) in ("mlperf", "gpt") else 1.0
    return 1.0 if eng == "sglang" else 0.0


def build_step_model(
    rows: list[tuple],
    *,
    engine: str | list[str] = "vllm",
    efficiency: EfficiencyTable | None = None,
    engine_version: str | None | list[str | None] = None,
) -> StepModel:
    """Stack candidates into one StepModel.

    Each row is (model, gpu, tp, pp, weight_dtype, kv_dtype) or, with a layout,
    (model, gpu, Layout, weight_dtype, kv_dtype). `engine` names the serving engine of every row
    (or one per row); the efficiency factors are those of `efficiency` (default: the shipped
    catalogs/efficiency.json) for each row's device, engine (and its release, `engine_version`,
    when given), weight format and model architecture."""
    table = efficiency if efficiency is not None else efficiency_table()
    engines = [engine] * len(rows) if isinstance(engine, str) else list(engine)
    versions = list(engine_version) if isinstance(engine_version, (list, tuple)) else [engine_version] * len(rows)
    cols: dict[str, list[float]] = {name: [] for name in StepModel.__dataclass_fields__}
    for row, eng, version in zip(rows, engines, versions):
        if len(row) == 6:
            model, gpu, tp, pp, wd, kd = row
            layout = Layout(tp=tp, pp=pp)
        else:
            model, gpu, layout, wd, kd = row
        s = stage_shape(model, layout.tp, layout.pp, wd, kd, layout.dp, layout.ep)
        values = {
            "tp": layout.tp,
            "pp": layout.pp,
            "dp": layout.dp,
            "ep": layout.ep,
            "hidden": model.hidden_size,
            "layers": s.layers,
            "total_layers": model.num_hidden_layers,
            "full_layers": s.attention_layers_full,
            "sliding_layers": s.attention_layers_sliding,
            "sliding_window": model.sliding_window,
            "moe_layers": s.moe_layers,
            "total_moe_layers": s.total_moe_layers,
            "dense_weight_bytes": s.dense_weight_bytes,
            "expert_weight_bytes": s.expert_weight_bytes,
            "num_experts": model.num_experts,
            "top_k": model.num_experts_per_tok,
            "dense_flops_per_token": s.dense_flops_per_token,
            "expert_flops_per_token": s.expert_flops_per_token,
            "total_dense_flops_per_token": s.total_dense_flops_per_token,
            "total_expert_flops_per_token": s.total_expert_flops_per_token,
            "attn_flops_per_ctx": s.attn_flops_per_ctx_token,
            "total_prefill_attn_flops_per_ctx": s.total_prefill_attn_flops_per_ctx_token,
            "kv_bytes_per_token_per_layer": s.kv_bytes_per_token_per_layer,
            "state_bytes_per_sequence": s.state_bytes_per_sequence,
            "linear_flops_per_token": s.linear_flops_per_token,
            "total_linear_flops_per_token": s.total_linear_flops_per_token,
            "all_dense_weight_bytes": s.all_dense_weight_bytes,
            "all_expert_weight_bytes": s.all_expert_weight_bytes,
            "hbm_peak_bytes_per_s": gpu.hbm_bytes_per_s,
            "dense_peak_flops_per_s": _peak(gpu, s.dense_compute_format),
            "expert_peak_flops_per_s": _peak(gpu, s.expert_compute_format),
            "bf16_peak_flops_per_s": _peak(gpu, "bf16"),
            "link_peak_bytes_per_s": gpu.link_for(layout.gpus),
            "node_gpus": layout.node_gpus,
            "network_peak_bytes_per_s": gpu.network_bytes_per_s or gpu.link_bytes_per_s,
            "eager_prefill": eager_prefill(eng, version or ""),
            "budget_decode_tokens": budget_counts_decode(eng),
            "overlap_scheduler": overlap_scheduler(eng, version or ""),
        }
        values.update(_factor_values(table, gpu, eng, wd, model, version or "").as_dict())
        for name, value in values.items():
            cols[name].append(float(value))
    return StepModel(**{name: np.asarray(v, dtype=float) for name, v in cols.items()})
