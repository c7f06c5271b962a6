"""Candidates: every (device, TP, PP, KV dtype, weight dtype) in the search space, checked in
order, each either rejected with a reason in numbers or given its per-replica capacity.

Checks, in order (the `stage` a rejected candidate reached):

    0 parallelism   TP within one node; heads divisible by TP; KV heads divide or are divided by TP
    1 format        the device computes the weight format (FP8 needs FP8 tensor cores) and stores the KV format
    2 price         the catalog prices the device for the workload's provider and pricing kind
    3 memory        weights fit, a KV pool remains, one sequence at the percentile context fits
    4 instance      an offer holds the replica's tp x pp GPUs in one machine; with
                    constraints.allow_cross_node, also one variant per smaller instance size it
                    can span (node_gpus), where the device has an inter-node network figure
    5 latency       at a trickle of load the TTFT / TPOT bounds hold
    6 confidence    at a slo.confidence above 0.5, the largest rate is at least
                    CONFIDENCE_EDGE_SHARE of the rate at 0.5 (not a knife edge of the model's error)
    7 feasible      the largest per-replica rate within the SLOs is > 0
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .catalog import Catalog, Gpu, Price
from .engines import EngineOverrides, EngineSettings, engine_policy
from .memory import KvFormat, MemoryBreakdown
from .model import ModelArch
from .residency import Admission, admission
from .efficiency import efficiency_table
from .perf import build_step_model
from .queueing import SEARCH_MARGIN, Capacity, Demand, Limits, LoadPoint, evaluate_load, max_rate
from .units import GIB, REQUIRES_NATIVE
from .workload import Workload

STAGES = ("parallelism", "format", "price", "memory", "instance", "latency", "confidence", "feasible")


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    device: str
    tp: int
    pp: int
    kv_dtype: str
    weight_dtype: str
    node_gpus: int = 0  # 0: the replica sits in one machine; G: it spans instances of G GPUs (allow_cross_node)

    @property
    def gpus(self) -> int:
        return self.tp * self.pp

    def label(self) -> str:
        across = f" across {self.node_gpus}-GPU instances" if self.node_gpus else ""
        return f"{self.device} tp={self.tp} pp={self.pp} kv={self.kv_dtype} weights={self.weight_dtype}{across}"

    def layout(self):
        from .perf import Layout

        return Layout(tp=self.tp, pp=self.pp, node_gpus=self.node_gpus)


@dataclass(frozen=True, slots=True, kw_only=True)
class Evaluated:
    """One candidate after every check it reached."""

    config: Config
    stage: str  # one of STAGES: how far it got
    reason: str | None  # why it was rejected (None when feasible)
    price: Price | None = None
    memory: MemoryBreakdown | None = None
    engine: EngineSettings | None = None
    admission: Admission | None = None
    max_rate_rps: float = 0.0
    binding: str | None = None  # the check that stops the per-replica rate growing
    rate_exact: bool = True  # False: the search stopped early (a feasible rate, not the largest; evaluate_candidates' prune)
    factors_basis: dict | None = None  # efficiency.EfficiencyTable.basis of the factors its speed used

    @property
    def feasible(self) -> bool:
        return self.stage == "feasible"

    @property
    def max_concurrency(self) -> int:
        """Sequences admission lets the pool hold (the workload's admission policy)."""
        if self.admission is not None:
            return self.admission.max_concurrency
        return self.memory.max_concurrency if self.memory is not None else 0

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
    if model.num_linear_layers and (model.linear_key_heads % tp or model.linear_value_heads % tp):
        return f"{model.linear_key_heads} key and {model.linear_value_heads} value heads of the Gated DeltaNet layers: both must divide by tp={tp}"
    kv = model.num_key_value_heads
    if not model.is_mla and (kv % tp if kv >= tp else tp % kv):
        return f"{kv} KV heads and tp={tp}: one must divide the other"
    if pp > model.num_hidden_layers:
        return f"pp={pp} > {model.num_hidden_layers} layers"
    return None


def format_reason(model: ModelArch, gpu: Gpu, kv_dtype: str, weight_dtype: str, engine: str = "vllm") -> str | None:
    device = engine_policy(engine).device_reason(gpu) or engine_policy(engine).weight_reason(weight_dtype, model)
    if device:
        return device
    need = REQUIRES_NATIVE.get(weight_dtype)
    if need and not gpu.supports(need):
        return f"{gpu.name} has no {need.upper()} tensor cores ({need}_dense_tflops absent in the catalog): {weight_dtype} weights unsupported"
    if weight_dtype == "nvfp4" and gpu.fp4_format != "nvfp4":
        return f"{gpu.name}: nvfp4 is NVIDIA's FP4 format; its FP4 weights are OCP {gpu.fp4_format}"
    return engine_policy(engine).kv_reason(gpu, KvFormat.of(kv_dtype))


def memory_reason(m: MemoryBreakdown, tp: int, pp: int) -> str | None:
    where = f"at tp={tp} pp={pp}"
    if m.weights_bytes_per_gpu > m.budget_bytes:
        if m.engine == "vllm":
            return (
                f"weights {_gib(m.weights_bytes_per_gpu)} > {_gib(m.budget_bytes)} usable per GPU {where} "
                f"({m.memory_fraction:g} x {_gib(m.usable_memory_bytes)})"
            )
        return f"weights {_gib(m.weights_bytes_per_gpu)} > {_gib(m.budget_bytes)} usable per GPU {where} ({m.budget_rule})"
    if m.kv_pool_bytes_per_gpu <= 0:
        used = m.weights_bytes_per_gpu + m.runtime_buffer_bytes_per_gpu + m.activation_bytes_per_gpu + m.runtime_overhead_bytes_per_gpu
        return (
            f"no KV pool {where}: weights {_gib(m.weights_bytes_per_gpu)} + activations and runtime "
            f"{_gib(used - m.weights_bytes_per_gpu)} = {_gib(used)} >= {_gib(m.budget_bytes)} usable per GPU"
        )
    if m.max_concurrency < 1:
        if m.engine == "llamacpp" and m.sequence_bytes_per_gpu <= m.kv_pool_bytes_per_gpu:
            return f"the fixed llama.cpp cache ({m.notes[0] if m.notes else 'n_parallel x n_ctx'}) does not fit beside the weights {where}"
        return (
            f"one {m.context_tokens:,}-token sequence needs {_gib(m.sequence_bytes_per_gpu)} of KV per GPU {where}; "
            f"the pool holds {_gib(m.kv_pool_bytes_per_gpu)}"
        )
    if m.engine == "vllm" and m.max_model_len and m.engine_max_concurrency < 1:
        return max_model_len_reason(m, where)
    return None


def _past(value: float, bound: float) -> str:
    """How a latency at zero load fails its bound: above it, or within the share of it the rate
    search keeps in hand (queueing.SEARCH_MARGIN)."""
    if value > bound:
        return f"> {bound:g} s"
    return f"within {SEARCH_MARGIN:.1%} of {bound:g} s (the share of each bound the search keeps in hand)"


def max_model_len_reason(m: MemoryBreakdown, where: str = "") -> str:
    """vLLM refuses to start when its KV pool cannot hold one request of max_model_len tokens
    (vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory; V0 raised the same in
    raise_if_cache_size_invalid)."""
    need = m.kv_pool_bytes_per_gpu / m.engine_max_concurrency if m.engine_max_concurrency > 0 else math.inf
    return (
        f"vLLM refuses to start {where}: one {m.max_model_len:,}-token request (--max-model-len) needs {_gib(need)} of KV per GPU, "
        f"the pool holds {_gib(m.kv_pool_bytes_per_gpu)}"
    ).replace("  ", " ")


def _latency_reason(
    point: LoadPoint, i: int, workload: Workload, violations: dict[str, np.ndarray], m: MemoryBreakdown, max_num_seqs: int,
    scales: tuple[float, float] | None = None,
) -> str:
    # scales: (TTFT factor on the point's TTFT, step factor its times already carry) at slo.confidence;
    # the violations were found against the bounds less SEARCH_MARGIN, as max_rate searches
    at = "" if scales is None else f" at confidence {workload.slo.confidence:g} (the model's error: TTFT x{scales[0] * scales[1]:.2f}, TPOT x{scales[1]:.2f})"
    if violations["ttft"][i]:
        f = 1.0 if scales is None else scales[0]
        key, bound = next((k, b) for k, b in workload.slo.ttft_s if point.ttft_s[k][i] * f > b * (1 - SEARCH_MARGIN))
        p = workload.traffic.prompt_tokens.quantile(float(key[1:]))
        value = point.ttft_s[key][i] * f
        return f"TTFT {key} {value:.3f} s at zero load (prefill of the {p:,.0f}-token {key} prompt){at} {_past(value, bound)}"
    if violations["tpot"][i]:
        key, bound = next((k, b) for k, b in workload.slo.tpot_s if point.tpot_s[k][i] > b * (1 - SEARCH_MARGIN))
        value = point.tpot_s[key][i]
        return f"TPOT {key} {value:.4f} s at batch 1{at} {_past(value, bound)}"
    if violations["memory"][i]:
        return f"memory holds {m.max_concurrency} sequence(s) at {m.context_tokens:,} tokens; even a trickle of load needs more"
    if violations["max_num_seqs"][i]:
        return f"max_num_seqs {max_num_seqs} too small"
    return "prefill alone saturates the replica"


def engine_overrides(workload: Workload) -> EngineOverrides:
    m = workload.memory
    return EngineOverrides(
        memory_fraction=m.memory_fraction,
        block_size_tokens=m.block_size_tokens,
        max_num_seqs=m.max_num_seqs,
        max_num_batched_tokens=m.max_num_batched_tokens,
        n_parallel=m.n_parallel,
        flashinfer_installed=m.flashinfer_installed,
        # SGLang and a Gated DeltaNet model: the radix cache's states take half the memory (with it
        # on, 0.9 / 1.9 of the pool is state slots, a third of them running); off, unless the
        # workload shares a prompt prefix, so the slots are the plan's running cap
        radix_cache=None if m.admission.shared_prefix_tokens or not workload.model.num_linear_layers else False,
    )


def evaluate_candidates(workload: Workload, catalog: Catalog, *, prune: bool = False, price_views: tuple[Catalog, ...] = (), deadline=None) -> list[Evaluated]:
    """Check every configuration of the search space; compute capacity for those that pass.

    `prune` (sizer solve): where the plan is one configuration with no purchasing constraint,
    the rate search stops early for candidates that cannot be their device's cheapest plan even
    at the top of their rate bracket (see _cannot_win); their rate is then a feasible one, not
    the largest (rate_exact False), and no plan, alternative or saving is built from them.
    `price_views`: other price catalogs a plan will also be built on (the first-party prices): a
    candidate stops early only when it cannot win under any of them either.
    `deadline` (deadline.Deadline) bounds the checks and the rate search: SolverError when it passes."""
    model = workload.model
    policy = engine_policy(workload.engine)
    overrides = engine_overrides(workload)
    out: list[Evaluated | None] = []
    passing: list[tuple[int, Config, Gpu, MemoryBreakdown, EngineSettings, Price, Admission]] = []
    for i, cfg in enumerate(enumerate_configs(workload)):
        if deadline is not None and i % 256 == 0:
            deadline.check("the memory and format checks of the candidates")  # a search of thousands takes seconds here
        gpu = catalog.gpu(cfg.device)
        reason = parallelism_reason(model, gpu, cfg.tp, cfg.pp) or policy.parallelism_reason(cfg.tp, cfg.pp)
        if reason:
            out.append(Evaluated(config=cfg, stage="parallelism", reason=reason))
            continue
        reason = format_reason(model, gpu, cfg.kv_dtype, cfg.weight_dtype, workload.engine)
        if reason:
            out.append(Evaluated(config=cfg, stage="format", reason=reason))
            continue
        prices = catalog.prices_for(gpu.name, provider=workload.search.provider, kind=workload.search.pricing)
        if not prices and workload.search.reserved_pricing:
            prices = catalog.prices_for(gpu.name, provider=workload.search.provider, kind=workload.search.reserved_pricing)
        if not prices:
            out.append(Evaluated(config=cfg, stage="price", reason=f"no {workload.search.pricing} price for {gpu.name} from {_who(workload)} in prices.yaml"))
            continue
        kv = KvFormat.of(cfg.kv_dtype)
        settings = policy.settings(gpu, model, cfg.tp, version=workload.engine_version, overrides=overrides, max_model_len=workload.max_model_len)

        def memory_at(settings: EngineSettings) -> tuple[MemoryBreakdown, str | None, Admission | None]:
            m = policy.breakdown(
                model, gpu, tp=cfg.tp, pp=cfg.pp, weight_dtype=cfg.weight_dtype, kv=kv, settings=settings, context_tokens=workload.admitted_context_tokens
            )
            reason = memory_reason(m, cfg.tp, cfg.pp)
            if reason:
                return m, reason, None
            adm = admission(
                m,
                policy.stage_kv(model, kv, cfg.tp, cfg.pp, settings)[m.stage],
                policy=workload.memory.admission,
                percentile_context_tokens=workload.context_tokens,
                prompt=workload.traffic.prompt_tokens,
                output=workload.traffic.output_tokens,
            )
            if m.engine == "llamacpp":
                adm = _cap_admission(adm, m.max_concurrency)
            elif m.running_cap:  # SGLang's running-request cap from its Gated DeltaNet state slots
                adm = _cap_admission(adm, m.running_cap)
            return m, None, adm

        m, reason, adm = memory_at(settings)
        if not reason and m.engine == "vllm":
            m, settings, adm = _as_launched(memory_at, m, settings, adm)
        if m.engine == "llamacpp" and overrides.n_parallel is None and overrides.max_num_seqs is None:
            m, reason, adm, settings = _slots_as_launched(memory_at, (m, reason, adm), settings)
        if not reason:
            if adm.max_concurrency < 1:
                reason = (
                    f"admission ({adm.policy}) holds no sequence at tp={cfg.tp} pp={cfg.pp}"
                    + (f": tenant {adm.binding_tenant}'s quota binds" if adm.binding_tenant else "")
                )
        if reason:
            out.append(Evaluated(config=cfg, stage="memory", reason=reason, price=prices[0], memory=m, engine=settings, admission=adm))
            continue
        placements, reason = _placements(workload, catalog, gpu, cfg)
        if not placements:
            out.append(Evaluated(config=cfg, stage="instance", reason=reason, price=prices[0], memory=m, engine=settings, admission=adm))
            continue
        for placed, price in placements:
            out.append(None)
            passing.append((len(out) - 1, placed, gpu, m, settings, price, adm))

    if passing:
        step = build_step_model(
            [(model, gpu, cfg.layout(), cfg.weight_dtype, cfg.kv_dtype) for _, cfg, gpu, _, _, _, _ in passing],
            engine=workload.engine,
            efficiency=efficiency_table(catalog.root),
            # the release the memory rule used (the workload's, else the engine's default): its
            # factors, or the nearest release measured on the device (efficiency.release_for)
            engine_version=[settings.version for _, _, _, _, settings, _, _ in passing],
        )
        limits = Limits(
            max_concurrency=np.array([a.max_concurrency for *_, a in passing], dtype=float),
            max_num_seqs=np.array([e.max_num_seqs for _, _, _, _, e, _, _ in passing], dtype=float),
            max_num_batched_tokens=np.array([e.max_num_batched_tokens for _, _, _, _, e, _, _ in passing], dtype=float),
        )
        scales, unstretched = None, (step, limits)
        if workload.slo.confidence != 0.5:
            # sized so the SLOs hold at the confidence's quantile of the model's error for each
            # device (sizer/evidence.py): every step k times as long, TTFT at k_ttft / k of that
            from .evidence import confidence_scales, stretched

            k, k_ttft = confidence_scales(workload, catalog, [cfg.device for _, cfg, *_ in passing])
            step = stretched(step, k)
            limits = replace(limits, ttft_scale=k_ttft / k)
            scales = (k_ttft / k, k)
        keep = _cannot_win(workload, (catalog, *price_views), passing) if prune and prunable(workload) else None
        cap = max_rate(step, demand_of(workload), limits, keep=keep, deadline=deadline)
        median = _median_rates(workload, cap, *unstretched, deadline) if workload.slo.confidence > 0.5 else None
        for j, (slot, cfg, gpu, m, settings, price, adm) in enumerate(passing):
            out[slot] = _with_capacity(
                cfg, m, settings, price, adm, cap, j, workload, None if scales is None else (scales[0][j], scales[1][j]), catalog.root, gpu.vendor,
                median_rate_rps=None if median is None else median[j],
            )
    return [e for e in out if e is not None]


def _who(workload: Workload) -> str:
    s = workload.search
    if s.providers is None:
        who = "any provider"
    else:
        who = ("provider " if len(s.providers) == 1 else "providers ") + ", ".join(s.providers)
    if s.exclude_providers:
        who += f" (less {', '.join(s.exclude_providers)})"
    if s.min_source_kind != "marketplace":
        who += f" at source_kind {s.min_source_kind} or better (pricing.min_source_kind)"
    return who


def _placements(workload: Workload, catalog: Catalog, gpu: Gpu, cfg: Config) -> tuple[list[tuple[Config, Price]], str | None]:
    """Where a replica of this configuration can be rented: in one machine when an offer holds
    its tp x pp GPUs (the configuration itself, priced at the cheapest such offer per GPU); with
    constraints.allow_cross_node also spread over ceil(tp pp / G) instances of each smaller size G
    on offer (a variant with node_gpus = G), where the device has an inter-node network figure.
    None placed: the reason names the shape."""
    from .fleet import device_offers, offers_for, shape_reason

    s, c = workload.search, workload.constraints
    kinds = [k for k in (s.pricing, s.reserved_pricing) if k]
    offers = []
    for kind in kinds:
        offers += device_offers(catalog, gpu.name, provider=s.provider, kind=kind, role=kind, constraints=c)
    if not offers:
        return [], f"no {s.pricing} price for {gpu.name} from {_who(workload)} in prices.yaml"
    out: list[tuple[Config, Price]] = []
    inside = offers_for(offers, cfg.tp, cfg.pp)
    if inside:
        out.append((cfg, min(inside, key=lambda o: o.usd_per_gpu_hour).price))
    reason = None
    if c.allow_cross_node:
        smaller = sorted({o.instance_gpus for o in offers if o.instance_gpus < cfg.gpus})
        if smaller and gpu.network_bytes_per_s is None:
            reason = (
                f"{shape_reason(gpu.name, cfg.tp, cfg.pp, offers, kinds[0])}; spanning instances needs an inter-node network figure "
                f"for {gpu.name} (network_gb_per_s in gpus.yaml), which the catalog lacks"
            )
        elif gpu.network_bytes_per_s is not None:
            for g in smaller:
                spread = offers_for(offers, cfg.tp, cfg.pp, g)
                if spread:
                    out.append((replace(cfg, node_gpus=g), min(spread, key=lambda o: o.usd_per_gpu_hour).price))
    if not out:
        reason = reason or shape_reason(gpu.name, cfg.tp, cfg.pp, offers, kinds[0])
    return out, reason


def prunable(workload: Workload) -> bool:
    """The plan is one configuration on every request size with no purchasing constraint: then
    only each device's cheapest single-configuration plan is ever built (the plan, the other
    devices' best, the saving of a mix), and no constraint is re-solved without its bound."""
    s = workload.search
    return s.max_configurations == 1 and not s.size_buckets and not workload.constraints.any


def _cannot_win(workload: Workload, catalogs: tuple[Catalog, ...], passing: list):
    """max_rate's `keep` for a prunable workload: from every candidate's bracket (a rate it serves,
    one it does not), the cheapest single plan each device is sure of (fleet.single_plan at the
    rates served), and the candidates whose plan at the rates not served would still cost no more
    than that: those go on to the tolerance. A plan's cost never rises with the rate, so the rest
    cost more than their device's best whatever their largest rate is. With several price
    catalogs a candidate stops only when it is beaten under every one of them."""
    keeps = [_cannot_win_one(workload, c, passing) for c in catalogs]
    if len(keeps) == 1:
        return keeps[0]

    def keep(served_rps: np.ndarray, not_served_rps: np.ndarray) -> np.ndarray:
        out = keeps[0](served_rps, not_served_rps)
        for k in keeps[1:]:
            out = out | k(served_rps, not_served_rps)
        return out

    return keep


def _cannot_win_one(workload: Workload, catalog: Catalog, passing: list):
    from .fleet import build_problem, demand_by_hour, single_plan

    # rates below this would need more than 100,000 replicas: too far from a plan to price
    # (a single plan enumerates the reserved counts up to its peak); such candidates go on
    floor_rps = max(demand_by_hour(workload)) / 100_000

    configs = [cfg for _, cfg, *_ in passing]
    position = {cfg: i for i, cfg in enumerate(configs)}

    def plan_costs(indices: list[int], rates: np.ndarray) -> dict:
        """Cheapest single plan of each listed candidate at the given rates (over its offers)."""
        evaluated = [
            Evaluated(config=cfg, stage="feasible", reason=None, price=price, memory=m, engine=settings, admission=adm, max_rate_rps=float(rates[i]))
            for i, (_, cfg, _, m, settings, price, adm) in ((i, passing[i]) for i in indices)
        ]
        problem = build_problem(workload, catalog, evaluated)
        out: dict = {}
        for o in problem.options:
            sp = single_plan(o, problem)
            cost = sp.cost_usd_per_horizon if sp.feasible else math.inf
            out[o.config] = min(out.get(o.config, math.inf), cost)
        return out

    sure: dict = {}  # configuration -> (rate served, cheapest plan at it)
    beaten: set = set()  # stays beaten: the devices' sure costs only fall, the rates not served only fall

    def keep(served_rps: np.ndarray, not_served_rps: np.ndarray) -> np.ndarray:
        changed = [i for i, r in enumerate(served_rps) if r >= floor_rps and sure.get(configs[i], (None,))[0] != r]
        for cfg, cost in plan_costs(changed, served_rps).items():
            sure[cfg] = (served_rps[position[cfg]], cost)
        best: dict[str, float] = {}
        for cfg, (_, cost) in sure.items():
            best[cfg.device] = min(best.get(cfg.device, math.inf), cost)
        # a configuration is beaten when its cheapest plan at the rate it does not serve costs more
        # than its device's sure plan; one with no rate served above the floor yet goes on (stopped
        # there, its own plan would be priced at that rate)
        pending = [i for i, cfg in enumerate(configs) if cfg not in beaten and served_rps[i] >= floor_rps and not_served_rps[i] > served_rps[i]]
        for cfg, cost in plan_costs(pending, not_served_rps).items():
            if cost > best.get(cfg.device, math.inf) * (1 + 1e-9) + 1e-9:
                beaten.add(cfg)
        return np.array([cfg not in beaten or r < floor_rps for cfg, r in zip(configs, served_rps)], dtype=bool)

    return keep


def _cap_admission(adm: Admission, slots: int) -> Admission:
    """An engine that admits no more than its slots whatever the policy: llama.cpp (the cache is
    allocated per slot), SGLang's Gated DeltaNet state slots."""
    from dataclasses import replace

    return replace(adm, max_concurrency=min(adm.max_concurrency, slots))


def demand_of(workload: Workload) -> Demand:
    return Demand(
        prompt=workload.traffic.prompt_tokens,
        output=workload.traffic.output_tokens,
        ttft_s=workload.slo.ttft_s,
        tpot_s=workload.slo.tpot_s,
        max_model_len=float(workload.max_model_len),
    )


CONFIDENCE_EDGE_SHARE = 0.05
"""At a confidence above 0.5, a configuration whose largest rate falls below this share of its
rate at 0.5 (the model's own estimate) is refused, not planned. Its SLOs hold at the confidence's
quantile only at a trickle: the stretched zero-load latency sits just inside a bound, so the
replica count follows the last few per cent of slack, not the load, and a step of the error
quantile moves it tenfold. Limited's 0.9 plan took 360 A100 tp=8 replicas at 0.06 req/s each
(2,880 GPUs for 40 req/s) on the nine A100 rows' TTFT error, where a measurement of one A100
would settle it. On the eight shipped workloads at 0.9 the ratio of the two rates falls either
at or below 0.041 (such knife edges: A100 tp=8 for chat and limited 0.034, daily's L40S tp=2
0.039-0.041) or at or above 0.102 (api's L40S tp=2); the share lies in that gap
(benchmarks/confidence_edges.py prints them)."""


def below_edge_share(rate: float, estimate: float) -> bool:
    """A positive rate under CONFIDENCE_EDGE_SHARE of the model's own estimate (NaN: not judged):
    the SLOs hold there only at a trickle. Used by the rate search at a confidence and by the
    cost band's ends (evidence.assess)."""
    return 0 < rate < CONFIDENCE_EDGE_SHARE * estimate


def _median_rates(workload: Workload, cap: Capacity, step, limits: Limits, deadline) -> np.ndarray:
    """Per candidate, its largest rate at confidence 0.5 (the unstretched step and limits), for
    those whose rate at the workload's confidence is positive and exact; NaN for the rest (the
    rule of CONFIDENCE_EDGE_SHARE is not applied to a rate the search left as a lower bound)."""
    from .queueing import _take_limits

    out = np.full(len(cap.max_rate_rps), np.nan)
    idx = np.flatnonzero((np.asarray(cap.max_rate_rps) > 0) & np.asarray(cap.exact, dtype=bool))
    if idx.size:
        out[idx] = max_rate(step.take(idx), demand_of(workload), _take_limits(limits, idx), deadline=deadline).max_rate_rps
    return out


def _with_capacity(
    cfg: Config, m: MemoryBreakdown, engine: EngineSettings, price: Price, adm: Admission, cap: Capacity, j: int, workload: Workload,
    scales: tuple[float, float] | None = None, catalog_root=None, vendor: str = "", median_rate_rps: float | None = None,
) -> Evaluated:
    rate = float(cap.max_rate_rps[j])
    if rate <= 0:
        reason = _latency_reason(cap.at_zero, j, workload, cap.zero_violations, m, engine.max_num_seqs, scales)
        return Evaluated(config=cfg, stage="latency", reason=reason, price=price, memory=m, engine=engine, admission=adm)
    if median_rate_rps is not None and below_edge_share(rate, median_rate_rps):
        q = workload.slo.confidence
        at = "" if scales is None else f" (the model's error: TTFT x{scales[0] * scales[1]:.2f}, TPOT x{scales[1]:.2f})"
        reason = (
            f"at confidence {q:g}{at} within its bounds only up to {rate:.3g} req/s per replica ({cap.binding[j]} binds), "
            f"{rate / median_rate_rps:.1%} of the {median_rate_rps:.3g} req/s the model itself gives: below "
            f"{CONFIDENCE_EDGE_SHARE:.0%}, the bound lies inside the model's error for {cfg.device}, and a fleet sized on it "
            f"follows the error's tail, not the load; measure one {cfg.device} replica before sizing on it"
        )
        return Evaluated(config=cfg, stage="confidence", reason=reason, price=price, memory=m, engine=engine, admission=adm)
    peak = workload.traffic.requests_per_s
    if rate * MAX_REPLICAS_PER_POOL < peak:  # more replicas than any fleet sizer plans (a trickle per replica, or a flood of demand)
        reason = (
            f"within its bounds up to {rate:.3g} req/s per replica ({cap.binding[j]} binds): the {peak:g} req/s would take "
            f"{peak / rate:,.0f} replicas, more than the {MAX_REPLICAS_PER_POOL:,} one pool is planned with "
            f"({MAX_REPLICAS_PER_POOL:,} carry {rate * MAX_REPLICAS_PER_POOL:.3g} req/s)"
        )
        return Evaluated(config=cfg, stage="latency", reason=reason, price=price, memory=m, engine=engine, admission=adm)
    return Evaluated(
        config=cfg,
        stage="feasible",
        reason=None,
        price=price,
        memory=m,
        engine=engine,
        admission=adm,
        max_rate_rps=rate,
        binding=cap.binding[j],
        rate_exact=bool(cap.exact[j]),
        factors_basis=_factors_basis(catalog_root, cfg, engine, workload.model, vendor),
    )


MAX_REPLICAS_PER_POOL = 100_000
"""A configuration that would need more replicas than this to carry the workload's peak serves it
only at a trickle (a bound at its zero-load latency): it is refused with that reason, not planned
as 49 billion replicas (fuzz seed 20261264788382) with a break-even of $2.8 billion per GPU-hour."""


def _factors_basis(catalog_root, cfg: Config, engine: EngineSettings, model, vendor: str = "") -> dict | None:
    """efficiency.EfficiencyTable.basis for a feasible configuration (the evidence of its speed;
    `vendor`, the device's, names the entries a device with none of its own takes)."""
    from .efficiency import architecture_of

    if catalog_root is None:
        return None
    table = efficiency_table(catalog_root)
    return table.basis(cfg.device, engine.engine, cfg.weight_dtype, architecture_of(model), engine.version, vendor)


def _as_launched(memory_at, m: MemoryBreakdown, settings: EngineSettings, adm: Admission) -> tuple[MemoryBreakdown, EngineSettings, Admission]:
    """The memory of a vLLM candidate as its launch line runs it. The line lowers --max-num-seqs
    to the sequences the pool holds at the percentile context (optimize.launch_max_num_seqs), and
    vLLM's profiling pass samples that many rows of logits (gpu_model_runner._dummy_sampler_run;
    engines.VllmPolicy.activation_bytes): fewer rows, a smaller peak, a larger pool, which may hold
    a sequence or two more. So the cap and the pool are settled together: the largest cap S the
    pool profiled at S still holds (S <= its concurrency C(S); C only falls as S rises, so the caps
    that hold are 1 .. S*, and S* lies between the first cap, min(default, C(default)), and its
    own C: a bisection finds it). Before, the plan reported the pool profiled at
    the engine's default of 1024 sequences, which the launch line does not run: Llama-3.1-70B FP8
    on two H100s, 437,408 tokens where `vllm serve` with the plan's --max-num-seqs 60 logs 446,144
    (`sizer explain` with the same flags). `memory_at(settings)` is (breakdown, reason, admission)."""
    cap = settings.max_num_seqs
    lo = min(cap, int(adm.max_concurrency))
    if lo < 1 or lo == cap:  # holds nothing, or the default cap itself holds: the line runs the default
        return m, settings, adm

    def at(seqs: int):
        trial = replace(settings, max_num_seqs=seqs)
        tm, reason, tadm = memory_at(trial)
        return (tm, trial, tadm) if not reason and tadm.max_concurrency >= seqs else None

    best = at(lo)  # holds: a cap below the default only shrinks the profiling peak
    if best is None:
        return m, settings, adm
    return _largest_holding(at, lo, min(cap, int(best[2].max_concurrency)), best)


def _largest_holding(at, lo: int, hi: int, best):
    """Bisection for the largest n in lo..hi whose at(n) is not None, given that at(lo) (`best`)
    is not and that what holds is 1 .. n* (a prefix): returns at(n*)."""
    while lo < hi:  # invariant: lo holds, every n above hi does not
        mid = (lo + hi + 1) // 2
        got = at(mid)
        if got is None:
            hi = mid - 1
        else:
            lo, best = mid, got
    return best


# llama.cpp's ceiling on parallel sequences (src/llama-cparams.h LLAMA_MAX_SEQ): 64 until
# ggml-org/llama.cpp#15916 (merged 2025-09-10) raised it to 256. The lower one holds in every build.
LLAMACPP_MAX_SLOTS = 64


def _slots_as_launched(memory_at, got, settings: EngineSettings):
    """A llama.cpp candidate with as many slots (-np) as its memory holds, where the workload sets
    none. llama-server allocates n_ctx = slots x a slot's context cells at start and serves at most
    its slots at once; at its default of 4 a 24 GB card that holds twenty 8k-token slots of
    Llama-3.1-8B serves four, and the plan took five times the GPUs it needs. The slots that fit
    are 1 .. S* (each adds a slot's cells), capped at LLAMACPP_MAX_SLOTS: a bisection finds S*.
    `got` is memory_at's answer at the default; returned as (breakdown, reason, admission,
    settings), the default's own when not even one slot fits."""

    def at(slots: int):
        trial = replace(settings, n_parallel=slots, max_num_seqs=slots, kv_unified=False)  # the line sets -np: a stream a slot
        tm, reason, tadm = memory_at(trial)
        return (tm, reason, tadm, trial) if not reason and tadm is not None and tm.max_concurrency >= slots else None

    best = at(1)
    if best is None:
        return (*got, settings)
    return _largest_holding(at, 1, LLAMACPP_MAX_SLOTS, best)


def step_model_of(workload: Workload, catalog: Catalog, evaluated: list[Evaluated]):
    """The step model of evaluated candidates, under the factors their rate search used: each
    candidate's engine release (the one its memory rule used, whose factors are that release's or
    the nearest measured on the device: efficiency.release_for), not the workload's, which is
    None unless the workload names one. Every later look at a candidate (its latency at a load,
    its rate under a model error, the simulator's replica) goes through this, so that none reads
    a candidate under factors other than those it was sized with."""
    rows = [(workload.model, catalog.gpu(e.config.device), e.config.layout(), e.config.weight_dtype, e.config.kv_dtype) for e in evaluated]
    versions = [e.engine.version if e.engine is not None else workload.engine_version for e in evaluated]
    return build_step_model(rows, engine=workload.engine, efficiency=efficiency_table(catalog.root), engine_version=versions)


def load_point(workload: Workload, catalog: Catalog, evaluated: list[Evaluated], rates_rps: list[float], at_confidence: bool = True) -> LoadPoint:
    """Latency of the given feasible candidates at the given per-replica rates: at the workload's
    slo.confidence, as the candidates were sized (every step k times as long, TTFT at k_ttft of the
    prediction: evidence.confidence_scales), unless `at_confidence` is False (the model's own
    estimate; the same at the default 0.5)."""
    step = step_model_of(workload, catalog, evaluated)
    limits = Limits(
        max_concurrency=np.array([e.max_concurrency for e in evaluated], dtype=float),
        max_num_seqs=np.array([e.engine.max_num_seqs for e in evaluated], dtype=float),
        max_num_batched_tokens=np.array([e.engine.max_num_batched_tokens for e in evaluated], dtype=float),
    )
    rates = np.asarray(rates_rps, dtype=float)
    if not at_confidence or workload.slo.confidence == 0.5:
        return evaluate_load(step, rates, demand_of(workload), limits)
    from .evidence import confidence_scales, stretched

    k, k_ttft = confidence_scales(workload, catalog, [e.config.device for e in evaluated])
    point = evaluate_load(stretched(step, k), rates, demand_of(workload), limits)
    return replace(point, ttft_s={key: v * (k_ttft / k) for key, v in point.ttft_s.items()})

