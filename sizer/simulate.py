"""`sizer simulate`: a discrete-event simulation of one replica serving a request stream with
continuous batching over a paged KV cache, to check the analytic model (queueing.evaluate_load)
on a plan. Units: seconds, tokens, bytes.

The replica, step by step (vLLM V1's scheduler, chunked prefill, recompute preemption):

  1. arrivals up to the current time join the waiting queue (FCFS; preempted requests go first)
  2. every running sequence whose prompt is in the cache decodes one token; before it does, the
     KV pool must hold one more token for each: if it cannot, the most recently admitted running
     sequence is preempted (its blocks freed; it will recompute prompt + generated tokens)
  3. the remaining token budget (max_num_batched_tokens - decode tokens) goes to prompt chunks:
     first the running sequences still prefilling, in admission order, then new requests from the
     waiting queue while max_num_seqs and the free KV blocks allow
  4. the step lasts perf.StepModel.mixed_parts(decoding sequences, their mean context, prompt
     tokens in the step, their prompts' mean length): the same step-time model as the analytic
     side, so the two differ only in queueing
  5. a sequence whose last prompt chunk ran produces its first token at the end of the step; one
     that has produced all its output tokens leaves and frees its blocks

KV accounting is the memory model's (memory.sequence_bytes_on_stage): whole blocks per GPU on the
binding stage, sliding-window layers capped at the window. Per request: TTFT = first token -
arrival; TPOT = (last token - first token) / (output tokens - 1). Requests arriving during the
warm-up (the first 10 % of the window, at most 60 s) are not counted.

Arrivals: Poisson at the replica's rate with lengths drawn from the workload's fitted length
distributions, or a trace (CSV with `timestamp`, optional `prompt_tokens`, `output_tokens`: the
workload trace format), each arrival routed to this replica with probability 1 / replicas (a random
router, under which each replica of a Poisson stream sees a Poisson stream).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .catalog import Catalog
from .errors import FieldValueError, InfeasibleError
from .perf import StepModel, build_step_model
from .queueing import Demand, Limits, evaluate_load
from .workload import LengthDist, Workload

PERCENTILES = (50.0, 90.0, 95.0, 99.0)
AGREEMENT_FRACTION = 0.15  # the bound on |simulated - analytic| / analytic for TTFT p99 and TPOT p99


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaSpec:
    """What the simulator needs about one replica of a plan."""

    label: str
    device: str
    tp: int
    pp: int
    kv_dtype: str
    weight_dtype: str
    replicas: int
    rate_rps: float  # arrivals per second at this replica
    step: StepModel  # one candidate
    pool_bytes: float  # KV pool per GPU on the binding stage
    full_bytes_per_token: float  # per GPU, all full-attention layers of the stage
    sliding_bytes_per_token: float
    sliding_window: int
    block_size_tokens: int
    max_num_seqs: int
    max_num_batched_tokens: int
    max_concurrency: int  # the analytic model's memory ceiling (sequences at the percentile context)


@dataclass(frozen=True, slots=True, kw_only=True)
class Arrivals:
    time_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SimResult:
    """Percentiles and occupancy of one simulated replica."""

    duration_s: float  # arrivals window
    warmup_s: float
    requests: int  # arrived in the measured window
    completed: int
    unfinished: int  # measured requests still running when the simulation stopped
    ttft_s: dict[str, float]
    tpot_s: dict[str, float]
    output_tokens_per_s: float
    kv_utilization_mean: float  # time-weighted, of the pool on the binding stage
    kv_utilization_max: float
    running_mean: float  # time-weighted sequences in the batch
    running_p99: float
    preemptions: int
    steps: int
    simulated_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Agreement:
    metric: str
    analytic_s: float
    simulated_s: float

    @property
    def difference_fraction(self) -> float:
        if not math.isfinite(self.analytic_s) or self.analytic_s <= 0:
            return math.inf
        return (self.simulated_s - self.analytic_s) / self.analytic_s

    @property
    def within_bound(self) -> bool:
        return abs(self.difference_fraction) <= AGREEMENT_FRACTION


@dataclass(frozen=True, slots=True, kw_only=True)
class Simulation:
    replica: ReplicaSpec
    result: SimResult
    agreement: tuple[Agreement, ...]
    seed: int
    arrivals: str


# ---------------------------------------------------------------------------------------------
# Arrivals
# ---------------------------------------------------------------------------------------------


def sample_lengths(dist: LengthDist, n: int, rng: np.random.Generator) -> np.ndarray:
    """n token lengths from a workload length distribution (its fitted log-normal, capped; a
    single given length is used as is), whole tokens >= 1."""
    if dist.sigma == 0.0:
        return np.full(n, max(int(round(dist.quantile(50.0))), 1), dtype=np.int64)
    x = np.exp(dist.mu + dist.sigma * rng.standard_normal(n))
    if dist.cap:
        x = np.minimum(x, dist.cap)
    return np.maximum(np.rint(x), 1).astype(np.int64)


def poisson_arrivals(rate_rps: float, duration_s: float, prompt: LengthDist, output: LengthDist, seed: int) -> Arrivals:
    rng = np.random.default_rng(seed)
    n = rng.poisson(rate_rps * duration_s)
    times = np.sort(rng.uniform(0.0, duration_s, n))
    return Arrivals(
        time_s=times,
        prompt_tokens=sample_lengths(prompt, n, rng),
        output_tokens=sample_lengths(output, n, rng),
        source=f"Poisson, {rate_rps:.4g} req/s",
    )


def trace_arrivals(path: Path | str, duration_s: float, replicas: int, prompt: LengthDist, output: LengthDist, seed: int) -> Arrivals:
    """Arrivals of a trace CSV (`timestamp` in epoch seconds or ISO 8601; optional `prompt_tokens`,
    `output_tokens`), from its first arrival for `duration_s`, each routed to this replica with
    probability 1 / replicas. Missing lengths are drawn from the workload's distributions."""
    from .purchasing import read_arrivals_csv

    path = Path(path)
    label = str(path)
    times, prompts, outputs = read_arrivals_csv(path, label, blank_lengths=True)
    prompts = prompts or [math.nan] * len(times)  # no column: every length drawn
    outputs = outputs or [math.nan] * len(times)
    t = np.asarray(times, dtype=float)
    order = np.argsort(t, kind="stable")
    t = t[order] - t[order][0]
    rng = np.random.default_rng(seed)
    keep = (t <= duration_s) & (rng.uniform(size=t.shape[0]) < 1.0 / max(replicas, 1))
    p = np.asarray(prompts, dtype=float)[order][keep]
    o = np.asarray(outputs, dtype=float)[order][keep]
    p = np.where(np.isnan(p), sample_lengths(prompt, p.shape[0], rng), p)
    o = np.where(np.isnan(o), sample_lengths(output, o.shape[0], rng), o)
    return Arrivals(
        time_s=t[keep],
        prompt_tokens=np.maximum(np.rint(p), 1).astype(np.int64),
        output_tokens=np.maximum(np.rint(o), 1).astype(np.int64),
        source=f"trace {label}" + (f", 1 in {replicas} arrivals" if replicas > 1 else ""),
    )


# ---------------------------------------------------------------------------------------------
# The replica
# ---------------------------------------------------------------------------------------------


class _StepTimer:
    """Step times from the step model, memoised on (decoding sequences, context, prompt tokens,
    prompt length) rounded to the buckets below; the rounding moves a step by well under 1 %."""

    CONTEXT_BUCKET = 32
    PROMPT_BUCKET = 16
    LENGTH_BUCKET = 64

    def __init__(self, step: StepModel):
        self.step = step
        self.cache: dict[tuple[int, int, int, int], float] = {}

    def __call__(self, decoding: int, context: float, prompt_tokens: int, prompt_length: float) -> float:
        key = (
            decoding,
            int(context // self.CONTEXT_BUCKET),
            int(-(-prompt_tokens // self.PROMPT_BUCKET)),
            int(prompt_length // self.LENGTH_BUCKET),
        )
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        ctx = (key[1] + 0.5) * self.CONTEXT_BUCKET
        x = key[2] * self.PROMPT_BUCKET
        plen = max((key[3] + 0.5) * self.LENGTH_BUCKET, 1.0)
        value = float(self.step.mixed_parts(np.array([float(max(decoding, 1))]), np.array([ctx]), np.array([float(x)]), np.array([plen]))[0])
        self.cache[key] = value
        return value


def _seq_bytes(ctx: np.ndarray, spec: ReplicaSpec) -> np.ndarray:
    """Bytes per GPU that sequences of `ctx` cached tokens hold, in whole blocks (the rule of
    memory.sequence_bytes_on_stage, vectorised)."""
    bs = spec.block_size_tokens
    blocks = -(-ctx // bs)
    if spec.sliding_window:
        sliding = np.minimum(blocks, -(-spec.sliding_window // bs) + 1)
    else:
        sliding = blocks
    return bs * (blocks * spec.full_bytes_per_token + sliding * spec.sliding_bytes_per_token)


def simulate_replica(spec: ReplicaSpec, arrivals: Arrivals, *, duration_s: float, max_drain_s: float | None = None) -> SimResult:
    """Run the replica over the arrivals; statistics over requests arriving after the warm-up."""
    n = arrivals.time_s.shape[0]
    arrive = arrivals.time_s
    prompt = arrivals.prompt_tokens.astype(np.int64)
    out_len = arrivals.output_tokens.astype(np.int64)
    warmup = min(60.0, 0.1 * duration_s)
    measured = arrive >= warmup
    target = prompt.copy()  # tokens to have in the cache before the next token (prompt + recomputed output)
    cached = np.zeros(n, dtype=np.int64)  # tokens in the KV cache
    generated = np.zeros(n, dtype=np.int64)
    first = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    timer = _StepTimer(spec.step)
    pool = spec.pool_bytes
    budget_total = spec.max_num_batched_tokens
    bs = spec.block_size_tokens
    full_bpt = spec.full_bytes_per_token
    sliding_bpt = spec.sliding_bytes_per_token
    sliding_cap = (-(-spec.sliding_window // bs) + 1) if spec.sliding_window else None

    def held(ctx: int) -> float:
        """Bytes one sequence of `ctx` cached tokens holds (scalar _seq_bytes)."""
        blocks = -(-ctx // bs)
        sl = min(blocks, sliding_cap) if sliding_cap is not None else blocks
        return bs * (blocks * full_bpt + sl * sliding_bpt)

    # a request reaches the scheduler request_overhead_s after it arrives, and joins a step
    # admission_steps mean steps later (the same efficiency factors as the analytic model; the
    # mean step so far stands for the mean step)
    overhead = float(spec.step.request_overhead_s[0])
    admit_steps = float(spec.step.admission_steps[0])
    eligible = np.full(n, np.inf)
    pending: deque[int] = deque()  # arrived, not yet eligible
    mean_dt = 0.0
    waiting: deque[int] = deque()
    running: list[int] = []  # admission order
    prefilling: list[int] = []  # running sequences whose prompt (or recompute) is not yet cached, admission order
    decoding = np.zeros(0, dtype=np.int64)
    next_arrival = 0
    clock = 0.0
    used = 0.0
    preemptions = 0
    steps = 0
    kv_area = 0.0
    kv_max = 0.0
    run_area = 0.0
    run_hist: list[tuple[float, int]] = []
    drain = max_drain_s if max_drain_s is not None else max(2.0 * duration_s, 600.0)
    stop_at = duration_s + drain

    def rebuild() -> np.ndarray:
        pre = set(prefilling)
        return np.asarray([r for r in running if r not in pre], dtype=np.int64)

    while True:
        while next_arrival < n and arrive[next_arrival] <= clock:
            eligible[next_arrival] = arrive[next_arrival] + overhead + admit_steps * mean_dt
            pending.append(next_arrival)
            next_arrival += 1
        while pending and eligible[pending[0]] <= clock:
            waiting.append(pending.popleft())
        if not running and not waiting:
            upcoming = [float(eligible[pending[0]])] if pending else []
            if next_arrival < n:
                upcoming.append(float(arrive[next_arrival]))
            if not upcoming:
                break
            clock = max(clock, min(upcoming))
            continue
        if clock > stop_at:
            break
        # 2. room for one more token per decoding sequence, preempting the newest if needed
        grow = 0.0
        if decoding.size:
            c = cached[decoding]
            grow = float(np.count_nonzero(c % bs == 0)) * bs * full_bpt  # a new block where the last is full
            if sliding_bpt:
                grow = float(np.sum(_seq_bytes(c + 1, spec) - _seq_bytes(c, spec)))
            while used + grow > pool and running:
                victim = running.pop()
                used -= held(int(cached[victim]))
                cached[victim] = 0
                target[victim] = prompt[victim] + generated[victim]
                if victim in prefilling:
                    prefilling.remove(victim)
                waiting.appendleft(victim)
                preemptions += 1
                decoding = rebuild()
                c = cached[decoding]
                grow = float(np.sum(_seq_bytes(c + 1, spec) - _seq_bytes(c, spec))) if decoding.size else 0.0
        budget = budget_total - int(decoding.size)
        # 3. prompt chunks: running sequences still prefilling, then admissions
        chunks: list[tuple[int, int]] = []
        for r in prefilling:
            if budget <= 0:
                break
            k = min(int(target[r] - cached[r]), budget)
            extra = held(int(cached[r]) + k) - held(int(cached[r]))
            if used + grow + extra > pool:
                break
            chunks.append((r, k))
            grow += extra
            budget -= k
        while budget > 0 and waiting and len(running) < spec.max_num_seqs:
            r = waiting[0]
            k = min(int(target[r] - cached[r]), budget)
            extra = held(int(cached[r]) + k) - held(int(cached[r]))
            if used + grow + extra > pool:
                break
            waiting.popleft()
            running.append(r)
            prefilling.append(r)
            chunks.append((r, k))
            grow += extra
            budget -= k
        if not decoding.size and not chunks:
            # nothing fits: wait for the next arrival (an empty pool that cannot hold a prompt chunk
            # would stall forever; the memory check of the plan rules that out)
            upcoming = [float(eligible[pending[0]])] if pending else []
            if next_arrival < n:
                upcoming.append(float(arrive[next_arrival]))
            if upcoming and min(upcoming) > clock:
                clock = min(upcoming)
                continue
            break
        # 4. the step
        x = 0
        plen_sum = 0
        for r, k in chunks:
            x += k
            plen_sum += int(target[r])
        plen = plen_sum / len(chunks) if chunks else 0.0
        ctx = float(cached[decoding].mean()) if decoding.size else 0.0
        dt = timer(int(decoding.size), ctx, x, plen)
        used += grow
        kv_area += used / pool * dt
        kv_max = max(kv_max, used / pool)
        run_area += len(running) * dt
        run_hist.append((dt, len(running)))
        clock += dt
        mean_dt += (dt - mean_dt) / (steps + 1)
        steps += 1
        # 5. outcomes
        changed = False
        if decoding.size:
            cached[decoding] += 1
            generated[decoding] += 1
            done = decoding[generated[decoding] >= out_len[decoding]]
        else:
            done = decoding
        for r, k in chunks:
            cached[r] += k
            if cached[r] >= target[r]:
                prefilling.remove(r)
                changed = True
                if generated[r] == 0:
                    generated[r] = 1
                    first[r] = clock
                if generated[r] >= out_len[r]:
                    done = np.append(done, r)
        if done.size:
            gone = set(int(r) for r in done)
            for r in gone:
                finish[r] = clock
                used -= held(int(cached[r]))
            running = [r for r in running if r not in gone]
            changed = True
        if changed:
            decoding = rebuild()

    sel = measured & (arrive <= duration_s)
    ttft = (first - arrive)[sel & ~np.isnan(first)]
    multi = sel & ~np.isnan(finish) & (out_len > 1)
    tpot = ((finish - first) / np.maximum(out_len - 1, 1))[multi]
    completed = int(np.sum(sel & ~np.isnan(finish)))
    span = max(clock - warmup, 1e-9)
    tokens = float(np.sum(out_len[sel & ~np.isnan(finish)]))
    running_p99 = _weighted_percentile(run_hist, 99.0)
    return SimResult(
        duration_s=duration_s,
        warmup_s=warmup,
        requests=int(np.sum(sel)),
        completed=completed,
        unfinished=int(np.sum(sel)) - completed,
        ttft_s={f"p{p:g}": _pct(ttft, p) for p in PERCENTILES},
        tpot_s={f"p{p:g}": _pct(tpot, p) for p in PERCENTILES},
        output_tokens_per_s=tokens / span,
        kv_utilization_mean=kv_area / max(clock, 1e-9),
        kv_utilization_max=kv_max,
        running_mean=run_area / max(clock, 1e-9),
        running_p99=running_p99,
        preemptions=preemptions,
        steps=steps,
        simulated_s=clock,
    )


def _pct(values: np.ndarray, p: float) -> float:
    return float(np.percentile(values, p)) if values.size else math.nan


def _weighted_percentile(hist: list[tuple[float, int]], p: float) -> float:
    if not hist:
        return 0.0
    w = np.array([h[0] for h in hist])
    v = np.array([h[1] for h in hist], dtype=float)
    order = np.argsort(v, kind="stable")
    cum = np.cumsum(w[order]) / w.sum()
    return float(v[order][min(np.searchsorted(cum, p / 100.0), v.shape[0] - 1)])


# ---------------------------------------------------------------------------------------------
# Plans
# ---------------------------------------------------------------------------------------------


def parse_plan(text: str) -> tuple[str, int, int, str, str]:
    """`device,tp,pp,kv,weights` (as `sizer solve` prints a configuration)."""
    from .units import WEIGHT_DTYPES, normalise_dtype

    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 5 or not parts[1].isdigit() or not parts[2].isdigit() or int(parts[1]) < 1 or int(parts[2]) < 1:
        raise FieldValueError(f"--plan: expected device,tp,pp,kv,weights with tp and pp integers >= 1 (for example H100-SXM,2,1,fp8,fp8), got {text!r}")
    weights = normalise_dtype(parts[4])
    if weights not in WEIGHT_DTYPES:
        raise FieldValueError(f"--plan {text}: weights: expected one of {', '.join(WEIGHT_DTYPES)}, got {parts[4]!r}")
    return parts[0], int(parts[1]), int(parts[2]), parts[3], weights


def replica_from_candidate(workload: Workload, catalog: Catalog, e, replicas: int, rate_rps: float) -> ReplicaSpec:
    """The simulator's view of an evaluated candidate (candidates.Evaluated) at a per-replica rate."""
    from .efficiency import efficiency_table
    from .memory import KvFormat, stage_kv

    cfg = e.config
    gpu = catalog.gpu(cfg.device)
    m = e.memory
    kv = KvFormat(*cfg.kv_dtype.split("/", 1)) if "/" in cfg.kv_dtype else KvFormat.of(cfg.kv_dtype)
    skv = stage_kv(workload.model, kv, cfg.tp, cfg.pp)[m.stage]
    step = build_step_model(
        [(workload.model, gpu, cfg.tp, cfg.pp, cfg.weight_dtype, cfg.kv_dtype)],
        engine=workload.engine,
        efficiency=efficiency_table(catalog.root),
        engine_version=workload.engine_version,
    )
    return ReplicaSpec(
        label=cfg.label(),
        device=cfg.device,
        tp=cfg.tp,
        pp=cfg.pp,
        kv_dtype=cfg.kv_dtype,
        weight_dtype=cfg.weight_dtype,
        replicas=replicas,
        rate_rps=rate_rps,
        step=step,
        pool_bytes=float(m.kv_pool_bytes_per_gpu),
        full_bytes_per_token=float(skv.full_bytes_per_token),
        sliding_bytes_per_token=float(skv.sliding_bytes_per_token),
        sliding_window=int(workload.model.sliding_window),
        block_size_tokens=int(m.block_size_tokens),
        max_num_seqs=int(e.engine.max_num_seqs),
        max_num_batched_tokens=int(e.engine.max_num_batched_tokens),
        max_concurrency=int(e.max_concurrency),
    )


def plan_replicas(workload: Workload, catalog: Catalog, plans: list[str] | None = None, replicas: int | None = None) -> list[ReplicaSpec]:
    """The replicas to simulate: every deployment of the solved plan (default), or the named
    configurations with `replicas` replicas each (default: as many as the analytic model needs)."""
    from .candidates import evaluate_candidates

    if not plans:
        from .optimize import solve

        plan = solve(workload, catalog)
        return [replica_from_candidate(workload, catalog, d.candidate, d.replicas, d.load_rps_per_replica) for d in plan.deployments]
    out = []
    for text in plans:
        device, tp, pp, kv, wd = parse_plan(text)
        gpu = catalog.gpu(device, where="--plan: ")
        search = replace(workload.search, devices=(gpu.name,), tp=(tp,), pp=(pp,), kv_dtypes=(kv,), weight_dtypes=(wd,))
        found = [e for e in evaluate_candidates(replace(workload, search=search), catalog) if e.config.tp == tp and e.config.pp == pp]
        if not found:
            raise InfeasibleError(f"--plan {text}: not in the search space of {workload.path}")
        e = found[0]
        if e.memory is None or e.stage in ("parallelism", "format", "price", "memory"):
            raise InfeasibleError(f"--plan {text}: {e.reason}")
        n = replicas or (math.ceil(workload.traffic.requests_per_s / e.max_rate_rps - 1e-9) if e.max_rate_rps > 0 else 1)
        out.append(replica_from_candidate(workload, catalog, e, n, workload.traffic.requests_per_s / n))
    return out


def analytic(spec: ReplicaSpec, workload: Workload):
    """The analytic model (queueing.evaluate_load) of the same replica at the same rate."""
    demand = Demand(prompt=workload.traffic.prompt_tokens, output=workload.traffic.output_tokens, ttft_s=(), tpot_s=())
    limits = Limits(
        max_concurrency=np.array([float(spec.max_concurrency)]),
        max_num_seqs=np.array([float(spec.max_num_seqs)]),
        max_num_batched_tokens=np.array([float(spec.max_num_batched_tokens)]),
    )
    return evaluate_load(spec.step, np.array([spec.rate_rps]), demand, limits)


MAX_SIMULATED_REQUESTS = 1_000_000  # Poisson arrivals in one replica's window


def simulate_workload(
    workload: Workload,
    catalog: Catalog,
    *,
    plans: list[str] | None = None,
    replicas: int | None = None,
    duration_s: float = 600.0,
    seed: int = 0,
    trace: Path | str | None = None,
) -> list[Simulation]:
    """Simulate every replica kind of a plan and compare it with the analytic model."""
    if not duration_s > 0:
        raise FieldValueError(f"--duration-s: expected a number > 0, got {duration_s:g}")
    out = []
    for spec in plan_replicas(workload, catalog, plans, replicas):
        t = workload.traffic
        expected = spec.rate_rps * duration_s
        if trace is None and expected > MAX_SIMULATED_REQUESTS:
            raise FieldValueError(
                f"--duration-s: {duration_s:g} s at {spec.rate_rps:.4g} req/s per replica is {expected:,.0f} requests to simulate; "
                f"at most {MAX_SIMULATED_REQUESTS:,} (about a minute and a half of simulation per 100,000)"
            )
        if trace is not None:
            arr = trace_arrivals(trace, duration_s, spec.replicas, t.prompt_tokens, t.output_tokens, seed)
        else:
            arr = poisson_arrivals(spec.rate_rps, duration_s, t.prompt_tokens, t.output_tokens, seed)
        result = simulate_replica(spec, arr, duration_s=duration_s)
        point = analytic(spec, workload)
        agreement = (
            Agreement(metric="ttft_p99", analytic_s=float(point.ttft_s["p99"][0]), simulated_s=result.ttft_s["p99"]),
            Agreement(metric="tpot_p99", analytic_s=float(point.tpot_s["p99"][0]), simulated_s=result.tpot_s["p99"]),
            Agreement(metric="ttft_p50", analytic_s=float(point.ttft_s["p50"][0]), simulated_s=result.ttft_s["p50"]),
            Agreement(metric="tpot_p50", analytic_s=float(point.tpot_s["p50"][0]), simulated_s=result.tpot_s["p50"]),
        )
        out.append(Simulation(replica=spec, result=result, agreement=agreement, seed=seed, arrivals=arr.source))
    return out


def simulation_dict(sim: Simulation) -> dict:
    """Plain data for JSON (deterministic for a seed)."""
    r = sim.result
    s = sim.replica

    def rnd(x: float, nd: int = 6):
        return None if x is None or not math.isfinite(x) else round(float(x), nd)

    return {
        "configuration": {
            "device": s.device,
            "tp": s.tp,
            "pp": s.pp,
            "kv_dtype": s.kv_dtype,
            "weight_dtype": s.weight_dtype,
            "replicas": s.replicas,
            "rate_rps_per_replica": rnd(s.rate_rps),
            "kv_pool_bytes_per_gpu": rnd(s.pool_bytes, 0),
            "max_num_seqs": s.max_num_seqs,
            "max_num_batched_tokens": s.max_num_batched_tokens,
        },
        "arrivals": sim.arrivals,
        "seed": sim.seed,
        "duration_s": r.duration_s,
        "warmup_s": r.warmup_s,
        "requests": r.requests,
        "completed": r.completed,
        "unfinished": r.unfinished,
        "ttft_s": {k: rnd(v) for k, v in r.ttft_s.items()},
        "tpot_s": {k: rnd(v) for k, v in r.tpot_s.items()},
        "output_tokens_per_s": rnd(r.output_tokens_per_s, 2),
        "kv_utilization_mean": rnd(r.kv_utilization_mean, 4),
        "kv_utilization_max": rnd(r.kv_utilization_max, 4),
        "running_mean": rnd(r.running_mean, 3),
        "running_p99": rnd(r.running_p99, 1),
        "preemptions": r.preemptions,
        "steps": r.steps,
        "simulated_s": rnd(r.simulated_s, 3),
        "agreement": [
            {
                "metric": a.metric,
                "analytic_s": rnd(a.analytic_s),
                "simulated_s": rnd(a.simulated_s),
                "difference_fraction": rnd(a.difference_fraction, 4),
                "within_15_percent": a.within_bound,
            }
            for a in sim.agreement
        ],
    }


def render_simulations(sims: list[Simulation], workload: Workload) -> str:
    """The simulations as text: per replica kind, the simulated percentiles next to the analytic
    model's, KV-pool use and preemptions."""
    import pandas as pd

    out = [f"workload  {workload.name} ({workload.path})"]
    for sim in sims:
        d = simulation_dict(sim)
        c = d["configuration"]
        out.append("")
        out.append(
            f"replica   {c['device']} tp={c['tp']} pp={c['pp']} kv={c['kv_dtype']} weights={c['weight_dtype']}: "
            f"1 of {c['replicas']} replica(s), {c['rate_rps_per_replica']:.3g} req/s ({d['arrivals']}), seed {d['seed']}"
        )
        out.append(
            f"window    {d['duration_s']:g} s of arrivals, first {d['warmup_s']:g} s not counted; {d['requests']:,} requests measured, "
            f"{d['completed']:,} completed, {d['unfinished']:,} unfinished; {d['steps']:,} engine steps over {d['simulated_s']:,.1f} s"
        )
        out.append(
            f"KV pool   mean {d['kv_utilization_mean']:.1%} used, peak {d['kv_utilization_max']:.1%}; running batch mean {d['running_mean']:.1f}, "
            f"p99 {d['running_p99']:g}; preemptions {d['preemptions']:,}; {d['output_tokens_per_s']:,.0f} output tokens/s"
        )
        rows = []
        for a in d["agreement"]:
            diff = a["difference_fraction"]
            rows.append(
                {
                    "metric": a["metric"],
                    "analytic s": "-" if a["analytic_s"] is None else f"{a['analytic_s']:.4f}",
                    "simulated s": "-" if a["simulated_s"] is None else f"{a['simulated_s']:.4f}",
                    "difference": "-" if diff is None else f"{diff:+.1%}",
                    "within 15%": "yes" if a["within_15_percent"] else "no",
                }
            )
        out.append(pd.DataFrame(rows).to_string(index=False))
        pct = pd.DataFrame(
            [{"": "TTFT s", **{k: "-" if v is None else f"{v:.4f}" for k, v in d["ttft_s"].items()}}, {"": "TPOT s", **{k: "-" if v is None else f"{v:.4f}" for k, v in d["tpot_s"].items()}}]
        )
        out.append(pct.to_string(index=False))
    return "\n".join(out) + "\n"
