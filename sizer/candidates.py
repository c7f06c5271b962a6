"""Candidates: every (device, TP, PP, KV dtype, weight dtype) in the search space, checked in
order, each either rejected with a reason in numbers or given its per-replica capacity.

Checks, in order (the `stage` a rejected candidate reached):

    0 parallelism   TP within one node; heads divisible by TP; KV heads divide or are divided by TP
    1 format        the device computes the weight format (FP8 needs FP8 tensor cores) and stores the KV format
    2 price         the catalog prices the device for the workload's provider and pricing kind
    3 memory        weights fit, a KV pool remains, one sequence at the percentile context fits
    4 latency       at a trickle of load the TTFT / TPOT bounds hold
    5 feasible      the largest per-replica rate within the SLOs is > 0
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .catalog import Catalog, Gpu, Price
from .engines import EngineDefaults, engine_policy
from .memory import MemoryBreakdown, memory_breakdown
from .model import ModelArch
from .perf import build_step_model
from .queueing import Capacity, Demand, Limits, LoadPoint, evaluate_load, max_rate
from .units import DTYPE_BYTES, GIB, REQUIRES_NATIVE
from .workload import Workload

STAGES = ("parallelism", "format", "price", "memory", "latency", "feasible")


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    device: str
    tp: int
    pp: int
    kv_dtype: str
    weight_dtype: str

    @property
    def gpus(self) -> int:
        return self.tp * self.pp

    def label(self) -> str:
        return f"{self.device} tp={self.tp} pp={self.pp} kv={self.kv_dtype} weights={self.weight_dtype}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Evaluated:
    """One candidate after every check it reached."""

    config: Config
    stage: str  # one of STAGES: how far it got
    reason: str | None  # why it was rejected (None when feasible)
    price: Price | None = None
    memory: MemoryBreakdown | None = None
    engine: EngineDefaults | None = None
    max_rate_rps: float = 0.0
    binding: str | None = None  # the check that stops the per-replica rate growing
    tpot_at_max_s: float | None = None
    ttft_at_max_s: float | None = None

    @property
    def feasible(self) -> bool:
        return self.stage == "feasible"

    @property
    def usd_per_replica_hour(self) -> float:
        assert self.price is not None
        return self.price.usd_per_gpu_hour * self.config.gpus

    @property
    def stage_rank(self) -> int:
        return STAGES.index(self.stage)


def _gib(x: float) -> str:
    return f"{x / GIB:.1f} GiB"


def enumerate_configs(workload: Workload) -> list[Config]:
    """The search space in a fixed order (device, tp, pp, kv, weight): deterministic."""
    s = workload.search
    return [
        Config(device=d, tp=tp, pp=pp, kv_dtype=kv, weight_dtype=wd)
        for d in s.devices
        for tp in s.tp
        for pp in s.pp
        for kv in s.kv_dtypes
        for wd in s.weight_dtypes
    ]


def parallelism_reason(model: ModelArch, gpu: Gpu, tp: int, pp: int) -> str | None:
    if tp > gpu.gpus_per_node:
        return f"tp={tp} > {gpu.gpus_per_node} GPUs per {gpu.name} node (tensor parallelism stays within a node)"
    if model.num_attention_heads % tp:
        return f"{model.num_attention_heads} attention heads not divisible by tp={tp}"
    kv = model.num_key_value_heads
    if not model.is_mla and (kv % tp if kv >= tp else tp % kv):
        return f"{kv} KV heads and tp={tp}: one must divide the other"
    if pp > model.num_hidden_layers:
        return f"pp={pp} > {model.num_hidden_layers} layers"
    return None


def format_reason(model: ModelArch, gpu: Gpu, kv_dtype: str, weight_dtype: str) -> str | None:
    need = REQUIRES_NATIVE.get(weight_dtype)
    if need and not gpu.supports(need):
        return f"{gpu.name} has no {need.upper()} tensor cores ({need}_dense_tflops absent in the catalog): {weight_dtype} weights unsupported"
    if kv_dtype == "fp8" and not gpu.supports("fp8"):
        return f"{gpu.name} has no FP8 support ({'fp8'}_dense_tflops absent in the catalog): fp8 KV cache unsupported"
    return None


def memory_reason(m: MemoryBreakdown, tp: int, pp: int) -> str | None:
    where = f"at tp={tp} pp={pp}"
    if m.weights_bytes_per_gpu > m.budget_bytes:
        return (
            f"weights {_gib(m.weights_bytes_per_gpu)} > {_gib(m.budget_bytes)} usable per GPU {where} "
            f"({m.gpu_memory_utilization:g} x {_gib(m.usable_memory_bytes)})"
        )
    if m.kv_pool_bytes_per_gpu <= 0:
        used = m.weights_bytes_per_gpu + m.runtime_buffer_bytes_per_gpu + m.activation_bytes_per_gpu + m.runtime_overhead_bytes_per_gpu
        return (
            f"no KV pool {where}: weights {_gib(m.weights_bytes_per_gpu)} + activations and runtime "
            f"{_gib(used - m.weights_bytes_per_gpu)} = {_gib(used)} >= {_gib(m.budget_bytes)} usable per GPU"
        )
    if m.max_concurrency < 1:
        return (
            f"one {m.context_tokens:,}-token sequence needs {_gib(m.sequence_bytes_per_gpu)} of KV per GPU {where}; "
            f"the pool holds {_gib(m.kv_pool_bytes_per_gpu)}"
        )
    return None


def _latency_reason(point: LoadPoint, i: int, workload: Workload, violations: dict[str, np.ndarray], m: MemoryBreakdown, max_num_seqs: int) -> str:
    if violations["ttft"][i]:
        key, bound = next((k, b) for k, b in workload.slo.ttft_s if point.ttft_s[k][i] > b)
        p = workload.traffic.prompt_tokens.quantile(float(key[1:]))
        return f"TTFT {key} {point.ttft_s[key][i]:.3f} s at zero load (prefill of the {p:,.0f}-token {key} prompt) > {bound:g} s"
    if violations["tpot"][i]:
        key, bound = next((k, b) for k, b in workload.slo.tpot_s if point.tpot_s[k][i] > b)
        return f"TPOT {key} {point.tpot_s[key][i]:.4f} s at batch 1 > {bound:g} s"
    if violations["memory"][i]:
        return f"memory holds {m.max_concurrency} sequence(s) at {m.context_tokens:,} tokens; even a trickle of load needs more"
    if violations["max_num_seqs"][i]:
        return f"max_num_seqs {max_num_seqs} too small"
    return "prefill alone saturates the replica"


def evaluate_candidates(workload: Workload, catalog: Catalog) -> list[Evaluated]:
    """Check every configuration of the search space; compute capacity for those that pass."""
    model = workload.model
    policy = engine_policy(workload.engine)
    mem = workload.memory
    out: list[Evaluated | None] = []
    passing: list[tuple[int, Config, Gpu, MemoryBreakdown, EngineDefaults, Price]] = []
    for cfg in enumerate_configs(workload):
        gpu = catalog.gpu(cfg.device)
        reason = parallelism_reason(model, gpu, cfg.tp, cfg.pp)
        if reason:
            out.append(Evaluated(config=cfg, stage="parallelism", reason=reason))
            continue
        reason = format_reason(model, gpu, cfg.kv_dtype, cfg.weight_dtype)
        if reason:
            out.append(Evaluated(config=cfg, stage="format", reason=reason))
            continue
        prices = catalog.prices_for(gpu.name, provider=workload.search.provider, kind=workload.search.pricing)
        if not prices:
            who = "any provider" if workload.search.provider == "any" else f"provider {workload.search.provider}"
            out.append(
                Evaluated(config=cfg, stage="price", reason=f"no {workload.search.pricing} price for {gpu.name} from {who} in prices.yaml")
            )
            continue
        defaults = policy.defaults(gpu)
        engine = EngineDefaults(
            max_num_seqs=mem.max_num_seqs or defaults.max_num_seqs,
            max_num_batched_tokens=mem.max_num_batched_tokens or defaults.max_num_batched_tokens,
            block_size_tokens=mem.block_size_tokens,
            gpu_memory_utilization=mem.gpu_memory_utilization,
        )
        m = memory_breakdown(
            model,
            usable_memory_bytes=gpu.usable_memory_bytes,
            gpu_memory_utilization=engine.gpu_memory_utilization,
            tp=cfg.tp,
            pp=cfg.pp,
            kv_dtype=cfg.kv_dtype,
            weight_dtype=cfg.weight_dtype,
            block_size_tokens=engine.block_size_tokens,
            context_tokens=workload.context_tokens,
            activation_bytes=policy.activation_bytes(model, cfg.tp, engine.max_num_batched_tokens, engine.max_num_seqs),
            runtime_buffer_bytes=policy.runtime_buffer_bytes(model),
            runtime_overhead_bytes=policy.runtime_overhead_bytes(cfg.tp),
        )
        reason = memory_reason(m, cfg.tp, cfg.pp)
        if reason:
            out.append(Evaluated(config=cfg, stage="memory", reason=reason, price=prices[0], memory=m, engine=engine))
            continue
        out.append(None)
        passing.append((len(out) - 1, cfg, gpu, m, engine, prices[0]))

    if passing:
        step = build_step_model([(model, gpu, cfg.tp, cfg.pp, cfg.weight_dtype, cfg.kv_dtype) for _, cfg, gpu, _, _, _ in passing])
        limits = Limits(
            max_concurrency=np.array([m.max_concurrency for _, _, _, m, _, _ in passing], dtype=float),
            max_num_seqs=np.array([e.max_num_seqs for _, _, _, _, e, _ in passing], dtype=float),
            max_num_batched_tokens=np.array([e.max_num_batched_tokens for _, _, _, _, e, _ in passing], dtype=float),
        )
        cap = max_rate(step, demand_of(workload), limits)
        for j, (slot, cfg, gpu, m, engine, price) in enumerate(passing):
            out[slot] = _with_capacity(cfg, m, engine, price, cap, j, workload)
    return [e for e in out if e is not None]


def demand_of(workload: Workload) -> Demand:
    return Demand(
        prompt=workload.traffic.prompt_tokens,
        output=workload.traffic.output_tokens,
        ttft_s=workload.slo.ttft_s,
        tpot_s=workload.slo.tpot_s,
    )


def _with_capacity(cfg: Config, m: MemoryBreakdown, engine: EngineDefaults, price: Price, cap: Capacity, j: int, workload: Workload) -> Evaluated:
    rate = float(cap.max_rate_rps[j])
    if rate <= 0:
        reason = _latency_reason(cap.at_zero, j, workload, cap.zero_violations, m, engine.max_num_seqs)
        return Evaluated(config=cfg, stage="latency", reason=reason, price=price, memory=m, engine=engine)
    return Evaluated(
        config=cfg,
        stage="feasible",
        reason=None,
        price=price,
        memory=m,
        engine=engine,
        max_rate_rps=rate,
        binding=cap.binding[j],
        tpot_at_max_s=float(cap.at_max.tpot_s["p99"][j]),
        ttft_at_max_s=float(cap.at_max.ttft_s["p99"][j]),
    )


def load_point(workload: Workload, catalog: Catalog, evaluated: list[Evaluated], rates_rps: list[float]) -> LoadPoint:
    """Latency of the given feasible candidates at the given per-replica rates."""
    rows = []
    for e in evaluated:
        gpu = catalog.gpu(e.config.device)
        rows.append((workload.model, gpu, e.config.tp, e.config.pp, e.config.weight_dtype, e.config.kv_dtype))
    step = build_step_model(rows)
    limits = Limits(
        max_concurrency=np.array([e.memory.max_concurrency for e in evaluated], dtype=float),
        max_num_seqs=np.array([e.engine.max_num_seqs for e in evaluated], dtype=float),
        max_num_batched_tokens=np.array([e.engine.max_num_batched_tokens for e in evaluated], dtype=float),
    )
    return evaluate_load(step, np.asarray(rates_rps, dtype=float), demand_of(workload), limits)


def kv_elem_bytes(kv_dtype: str) -> float:
    return DTYPE_BYTES[kv_dtype]
