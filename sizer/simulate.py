"""`sizer simulate`: a discrete-event simulation of one replica serving a request stream with
continuous batching over a paged KV cache, to check the analytic model (queueing.evaluate_load)
on a plan. Units: seconds, tokens, bytes.

The replica, step by step (vLLM V1's scheduler, chunked prefill, recompute preemption):

  1. arrivals join the waiting queue (FCFS; preempted requests go first) request_overhead_s after
     they arrive, at the scheduler's next admission: once a cycle of 2 x admission_steps mean
     steps (the analytic side's uniform admission wait, of mean admission_steps steps)
  2. every running sequence whose prompt is in the cache decodes one token; before it does, the
     KV pool must hold one more token for each: if it cannot, the most recently admitted running
     sequence is preempted (its blocks freed; it will recompute prompt + generated tokens)
  3. the remaining token budget (max_num_batched_tokens - decode tokens; the whole of it under
     SGLang, whose chunked_prefill_size counts prompt tokens only) goes to prompt chunks:
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

Arrivals: Poisson at the replica's rate with lengths drawn from the workload's length
distributions (its fitted log-normals, or a named dataset's own quantile table), or a trace (CSV
with `timestamp`, optional `prompt_tokens`, `output_tokens`: the workload trace format), each
arrival routed to this replica with probability 1 / replicas (a random router, under which each
replica of a Poisson stream sees a Poisson stream).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .catalog import Catalog
from .errors import FieldValueError, InfeasibleError
from .perf import StepModel
from .queueing import Demand, Limits, evaluate_load
from .tables import Column, text_table
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
    max_num_seqs: int  # as the plan's launch line sets it (optimize.launch_max_num_seqs)
    max_num_batched_tokens: int
    max_concurrency: int  # the analytic model's memory ceiling (sequences at the percentile context)
    max_model_len: int = 0  # a request whose prompt + output exceeds it is refused (0: none)
    launch_command: str = ""
    state_bytes_per_sequence: float = 0.0  # per GPU: Gated DeltaNet state a running sequence holds, whatever its length


@dataclass(frozen=True, slots=True, kw_only=True)
class Arrivals:
    time_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    source: str
    rate_rps: float | None = None  # the stream's mean rate at this replica, when it is not the plan's


@dataclass(frozen=True, slots=True, kw_only=True)
class SimResult:
    """Percentiles and occupancy of one simulated replica."""

    duration_s: float  # arrivals window
    warmup_s: float
    requests: int  # arrived in the measured window
    completed: int
    unfinished: int  # measured requests still running when the simulation stopped
    refused: int = 0  # measured requests longer (prompt + output) than max_model_len: the engine refuses them
    ttft_s: dict[str, float]
    tpot_s: dict[str, float]
    output_tokens_per_s: float
    # occupancy over the measured window (warm-up to the last arrival counted), time-weighted
    kv_utilization_mean: float  # of the pool on the binding stage
    kv_utilization_max: float
    running_mean: float  # sequences in the batch (decoding and prefilling)
    running_p99: float
    running_variance: float = 0.0
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
class SloCheck:
    """One bounded metric of the workload's SLO against the simulated percentile."""

    metric: str  # "ttft_p99", "tpot_p50", ...
    bound_s: float
    simulated_s: float

    @property
    def met(self) -> bool:
        return math.isfinite(self.simulated_s) and self.simulated_s <= self.bound_s


@dataclass(frozen=True, slots=True, kw_only=True)
class Simulation:
    replica: ReplicaSpec
    result: SimResult
    agreement: tuple[Agreement, ...]
    seed: int
    arrivals: str
    slo_checks: tuple[SloCheck, ...] = ()
    rate_rps: float = 0.0  # the simulated stream's rate at this replica (the analytic model's too)

    @property
    def judged(self) -> bool:
        """Whether the window gave the SLO checks anything to judge: a measured request completed,
        or one was left running (an overload is a verdict). A replica sent no request in the
        window (a trickle of traffic, or more replicas than requests) has no percentile at all."""
        return self.result.completed > 0 or self.result.unfinished > 0 or not self.slo_checks

    @property
    def passed(self) -> bool | None:
        """Every bounded metric met, and every measured request served (none left running); None
        when the window held nothing to judge (judged)."""
        if not self.judged:
            return None
        return all(c.met for c in self.slo_checks) and self.result.unfinished == 0

    @property
    def verdict(self) -> str:
        """PASS or FAIL and why, in one line; what the percentiles rest on (NO VERDICT when the
        window held no request to judge)."""
        r = self.result
        if not self.judged:
            return (
                f"NO VERDICT: the measured window held {r.requests:,} request{'s' if r.requests != 1 else ''} at this replica and none completed, "
                "so no percentile to hold against the SLO (a longer --duration-s, or fewer replicas, gives it requests)"
            )
        why = [f"{c.metric} {c.simulated_s:.4g} s > {c.bound_s:g} s" for c in self.slo_checks if not c.met]
        if r.unfinished:
            why.append(f"{r.unfinished:,} of {r.requests:,} measured requests still running when the simulation stopped")
        if why:
            head = "FAIL: " + "; ".join(why)
        elif self.slo_checks:
            head = "PASS: every bound met (" + ", ".join(f"{c.metric} {c.simulated_s:.4g} <= {c.bound_s:g} s" for c in self.slo_checks) + ")"
        else:
            head = "NO SLO: the workload bounds no latency"
        return head + f"; a p99 here rests on the slowest {max(r.completed // 100, 1):,} of {r.completed:,} requests"


# ---------------------------------------------------------------------------------------------
# Arrivals
# ---------------------------------------------------------------------------------------------


def sample_lengths(dist: LengthDist, n: int, rng: np.random.Generator) -> np.ndarray:
    """n token lengths from a workload length distribution (LengthDist.draw: its fitted log-normal,
    capped, or a dataset's own quantile table; a single given length is used as is), whole
    tokens >= 1."""
    return np.maximum(np.rint(dist.draw(n, rng)), 1).astype(np.int64)


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


def trace_arrivals(
    path: Path | str,
    duration_s: float,
    replicas: int,
    prompt: LengthDist,
    output: LengthDist,
    seed: int,
    *,
    target_rps: float | None = None,
    time_unit: str | None = None,
) -> Arrivals:
    """Arrivals of a trace (traces.py: CSV or JSON Lines, its columns by any usual name), each
    routed to this replica with probability 1 / replicas; missing lengths drawn from the
    workload's distributions.

    Which part, at what speed: a trace of a day or more replays from the start of its busiest
    hour of the day (the hour the plan sizes for), one shorter from its first arrival. With
    `target_rps` (the plan's load over all `replicas`), time is scaled so that the trace's rate
    (its peak hour's, or a sample's mean) becomes target_rps, and a trace shorter than the window
    is looped; without it the trace is replayed as recorded. `source` says which."""
    from .traces import read_trace_file, summarise

    path = Path(path)
    label = str(path)
    trace = read_trace_file(path, label, time_unit=time_unit)
    summary = summarise(trace)
    t = trace.time_s
    n_all = t.shape[0]
    prompts = trace.prompt_tokens if trace.prompt_tokens is not None else np.full(n_all, np.nan)
    outputs = trace.output_tokens if trace.output_tokens is not None else np.full(n_all, np.nan)
    if summary.kind == "daily":
        peak_hour = int(np.argmax(summary.profile_rps))
        hours = np.floor(t / 3600.0).astype(np.int64)
        first = int(np.flatnonzero(hours % 24 == peak_hour)[0])
        start = float(hours[first] * 3600.0)
        trace_rps = summary.profile_rps[peak_hour]
        what = f"trace {label} (a day or more) from its busiest hour, {peak_hour:02d}:00 ({trace_rps:.4g} req/s)"
    else:
        start = float(t[0])
        trace_rps = summary.mean_rps
        cv = f", inter-arrival CV {summary.interarrival_cv:.2f}" if math.isfinite(summary.interarrival_cv) else ""
        what = f"trace {label} (a {summary.span_text.replace(' ', '-')} sample, {trace_rps:.4g} req/s{cv})"
    scale = target_rps / trace_rps if target_rps else 1.0
    keep = t >= start
    rel = (t[keep] - start) / scale
    p_all, o_all = prompts[keep], outputs[keep]
    span = float(rel[-1]) if rel.size else 0.0
    loops = 0
    if target_rps and rel.size > 1 and span < duration_s:
        # loop the trace: each copy starts one mean gap after the last arrival of the one before
        period = span + span / max(rel.size - 1, 1)
        loops = int(math.ceil(duration_s / period)) - 1
        rel = np.concatenate([rel + k * period for k in range(loops + 1)])
        p_all = np.tile(p_all, loops + 1)
        o_all = np.tile(o_all, loops + 1)
    rng = np.random.default_rng(seed)
    window = rel <= duration_s
    routed = rng.uniform(size=rel.shape[0]) < 1.0 / max(replicas, 1)
    sel = window & routed
    p = p_all[sel]
    o = o_all[sel]
    p = np.where(np.isnan(p), sample_lengths(prompt, p.shape[0], rng), p)
    o = np.where(np.isnan(o), sample_lengths(output, o.shape[0], rng), o)
    arrivals_in_window = int(np.sum(window))
    if target_rps:
        how = f"replayed {scale:.3g}x as fast, to the plan's {target_rps:.4g} req/s" if abs(scale - 1) > 1e-9 else f"replayed at the plan's {target_rps:.4g} req/s"
        if loops:
            how += f", looped {loops} time(s) to fill {duration_s:g} s"
        rate = None
    else:
        rate = arrivals_in_window / duration_s / max(replicas, 1)
        how = f"replayed as recorded: {arrivals_in_window:,} arrivals in {duration_s:g} s, {arrivals_in_window / duration_s:.4g} req/s"
    return Arrivals(
        time_s=rel[sel],
        prompt_tokens=np.maximum(np.rint(p), 1).astype(np.int64),
        output_tokens=np.maximum(np.rint(o), 1).astype(np.int64),
        source=f"{what}, {how}" + (f"; 1 in {replicas} arrivals to this replica" if replicas > 1 else ""),
        rate_rps=rate,
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
    return bs * (blocks * spec.full_bytes_per_token + sliding * spec.sliding_bytes_per_token) + np.where(ctx > 0, spec.state_bytes_per_sequence, 0.0)


PROGRESS_EVERY_STEPS = 5000


def simulate_replica(
    spec: ReplicaSpec,
    arrivals: Arrivals,
    *,
    duration_s: float,
    max_drain_s: float | None = None,
    progress: Callable[[float, float], None] | None = None,
) -> SimResult:
    """Run the replica over the arrivals; statistics over requests arriving after the warm-up.
    A request longer (prompt + output) than spec.max_model_len is refused on arrival, as the
    engine refuses it. `progress(simulated_s, duration_s)` is called every few thousand steps."""
    n = arrivals.time_s.shape[0]
    arrive = arrivals.time_s
    prompt = arrivals.prompt_tokens.astype(np.int64)
    out_len = arrivals.output_tokens.astype(np.int64)
    warmup = min(60.0, 0.1 * duration_s)
    measured = arrive >= warmup
    refused = (prompt + out_len > spec.max_model_len) if spec.max_model_len else np.zeros(n, dtype=bool)
    target = prompt.copy()  # tokens to have in the cache before the next token (prompt + recomputed output)
    cached = np.zeros(n, dtype=np.int64)  # tokens in the KV cache
    generated = np.zeros(n, dtype=np.int64)
    first = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    timer = _StepTimer(spec.step)
    pool = spec.pool_bytes
    budget_total = spec.max_num_batched_tokens
    decode_tokens = int(spec.step.budget_decode_tokens[0])  # engines.budget_counts_decode: 0 for SGLang
    bs = spec.block_size_tokens
    full_bpt = spec.full_bytes_per_token
    sliding_bpt = spec.sliding_bytes_per_token
    sliding_cap = (-(-spec.sliding_window // bs) + 1) if spec.sliding_window else None

    def held(ctx: int) -> float:
        """Bytes one sequence of `ctx` cached tokens holds (scalar _seq_bytes)."""
        blocks = -(-ctx // bs)
        sl = min(blocks, sliding_cap) if sliding_cap is not None else blocks
        return bs * (blocks * full_bpt + sl * sliding_bpt) + (spec.state_bytes_per_sequence if ctx > 0 else 0.0)

    # a request reaches the scheduler request_overhead_s after it arrives, and joins the waiting
    # queue at the scheduler's next admission, once a cycle of 2 x admission_steps mean steps: a
    # wait uniform over the cycle for arrivals independent of it, of mean admission_steps steps
    # (the same efficiency factors and law as the analytic model, queueing.evaluate_load; the mean
    # step so far stands for the mean step)
    overhead = float(spec.step.request_overhead_s[0])
    admit_steps = float(spec.step.admission_steps[0])
    # an overlap scheduler hands a step's tokens to the client after the next step (perf.overlap_scheduler)
    late = bool(spec.step.overlap_scheduler[0])
    seen: list[int] = []  # first tokens computed in the step just run, returned after the next
    ended: list[int] = []  # ... and last tokens

    def hand_over() -> None:
        """The tokens held back reach the client now (the step after theirs has run, or none
        follows: an idle engine returns what it has)."""
        for r in seen:
            first[r] = clock
        for r in ended:
            finish[r] = clock
        seen.clear()
        ended.clear()
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
    run_time = 0.0
    run_hist: list[tuple[float, int]] = []
    drain = max_drain_s if max_drain_s is not None else max(2.0 * duration_s, 600.0)
    stop_at = duration_s + drain

    def rebuild() -> np.ndarray:
        pre = set(prefilling)
        return np.asarray([r for r in running if r not in pre], dtype=np.int64)

    while True:
        while next_arrival < n and arrive[next_arrival] <= clock:
            if not refused[next_arrival]:
                ready = arrive[next_arrival] + overhead
                cycle = 2.0 * admit_steps * mean_dt
                eligible[next_arrival] = math.ceil(ready / cycle) * cycle if cycle > 0 else ready
                pending.append(next_arrival)
            next_arrival += 1
        while pending and eligible[pending[0]] <= clock:
            waiting.append(pending.popleft())
        if not running and not waiting:
            hand_over()
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
        budget = budget_total - int(decoding.size) * decode_tokens
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
            hand_over()
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
        if warmup <= clock < duration_s:  # occupancy over the measured window only (not the ramp or the drain)
            kv_area += used / pool * dt
            kv_max = max(kv_max, used / pool)
            run_area += len(running) * dt
            run_time += dt
            run_hist.append((dt, len(running)))
        clock += dt
        hand_over()  # the previous step's first and last tokens
        mean_dt += (dt - mean_dt) / (steps + 1)
        steps += 1
        if progress is not None and steps % PROGRESS_EVERY_STEPS == 0:
            progress(clock, duration_s)
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
                    if late:
                        seen.append(r)
                    else:
                        first[r] = clock
                if generated[r] >= out_len[r]:
                    done = np.append(done, r)
        if done.size:
            gone = set(int(r) for r in done)
            for r in gone:
                if late:
                    ended.append(r)
                else:
                    finish[r] = clock
                used -= held(int(cached[r]))
            running = [r for r in running if r not in gone]
            changed = True
        if changed:
            decoding = rebuild()

    hand_over()
    window = measured & (arrive <= duration_s)
    sel = window & ~refused
    ttft = (first - arrive)[sel & ~np.isnan(first)]
    multi = sel & ~np.isnan(finish) & (out_len > 1)
    tpot = ((finish - first) / np.maximum(out_len - 1, 1))[multi]
    completed = int(np.sum(sel & ~np.isnan(finish)))
    span = max(clock - warmup, 1e-9)
    tokens = float(np.sum(out_len[sel & ~np.isnan(finish)]))
    running_p99 = _weighted_percentile(run_hist, 99.0)
    running_mean = run_area / max(run_time, 1e-9)
    running_variance = sum(dt * (k - running_mean) ** 2 for dt, k in run_hist) / max(run_time, 1e-9)
    return SimResult(
        duration_s=duration_s,
        warmup_s=warmup,
        requests=int(np.sum(window)),
        completed=completed,
        unfinished=int(np.sum(sel)) - completed,
        refused=int(np.sum(window & refused)),
        ttft_s={f"p{p:g}": _pct(ttft, p) for p in PERCENTILES},
        tpot_s={f"p{p:g}": _pct(tpot, p) for p in PERCENTILES},
        output_tokens_per_s=tokens / span,
        kv_utilization_mean=kv_area / max(run_time, 1e-9),
        kv_utilization_max=kv_max,
        running_mean=running_mean,
        running_variance=running_variance,
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
    kv = "/".join(normalise_dtype(p) for p in parts[3].split("/"))  # fp8_e4m3, fp8_e5m2: fp8, as explain reads them
    return parts[0], int(parts[1]), int(parts[2]), kv, weights


def replica_from_candidate(workload: Workload, catalog: Catalog, e, replicas: int, rate_rps: float) -> ReplicaSpec:
    """The simulator's view of an evaluated candidate (candidates.Evaluated) at a per-replica rate."""
    from .candidates import step_model_of
    from .engines import engine_policy
    from .memory import KvFormat
    from .optimize import _launch_command, launch_max_num_seqs

    cfg = e.config
    m = e.memory
    kv = KvFormat(*cfg.kv_dtype.split("/", 1)) if "/" in cfg.kv_dtype else KvFormat.of(cfg.kv_dtype)
    skv = engine_policy(m.engine).stage_kv(workload.model, kv, cfg.tp, cfg.pp, e.engine)[m.stage]
    step = step_model_of(workload, catalog, [e])
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
        max_num_seqs=int(launch_max_num_seqs(e)),
        max_num_batched_tokens=int(e.engine.max_num_batched_tokens),
        max_concurrency=int(e.max_concurrency),
        max_model_len=int(e.engine.max_model_len),
        launch_command=_launch_command(workload, e),
        state_bytes_per_sequence=float(skv.state_bytes_per_sequence),
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
        from .engines import resolve_kv_dtype

        kv = resolve_kv_dtype(kv, workload.model)  # vLLM's default `auto`: the checkpoint's dtype, as everywhere else
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
    demand = Demand(prompt=workload.traffic.prompt_tokens, output=workload.traffic.output_tokens, ttft_s=(), tpot_s=(), max_model_len=float(spec.max_model_len))
    limits = Limits(
        max_concurrency=np.array([float(spec.max_concurrency)]),
        max_num_seqs=np.array([float(spec.max_num_seqs)]),
        max_num_batched_tokens=np.array([float(spec.max_num_batched_tokens)]),
        slot_cap=np.array([float(spec.max_num_seqs)]),  # what the simulated engine runs at once
    )
    return evaluate_load(spec.step, np.array([spec.rate_rps]), demand, limits)


MAX_SIMULATED_REQUESTS = 1_000_000  # arrivals at the replica's load in one window


def slo_checks(workload: Workload, result: SimResult) -> tuple[SloCheck, ...]:
    """Every latency bound of the workload's SLO against the simulated percentile."""
    out = []
    for kind, bounds, values in (("ttft", workload.slo.ttft_s, result.ttft_s), ("tpot", workload.slo.tpot_s, result.tpot_s)):
        for key, bound in bounds:
            out.append(SloCheck(metric=f"{kind}_{key}", bound_s=float(bound), simulated_s=float(values.get(key, math.nan))))
    return tuple(out)


TRACE_RATES = ("plan", "recorded")


def simulate_workload(
    workload: Workload,
    catalog: Catalog,
    *,
    plans: list[str] | None = None,
    replicas: int | None = None,
    duration_s: float = 600.0,
    seed: int = 0,
    trace: Path | str | None = None,
    trace_rate: str = "plan",
    trace_time_unit: str | None = None,
    poisson: bool = False,
    progress: Callable[[str, float, float], None] | None = None,
) -> list[Simulation]:
    """Simulate every replica kind of a plan, check it against the workload's SLO and compare
    it with the analytic model at the same rate.

    Arrivals: `trace` (a file), else the workload's own traffic.trace, else Poisson at the
    replica's load (`poisson` forces Poisson). A trace is scaled to the plan's load
    (`trace_rate` "plan") or replayed as recorded ("recorded"; the analytic model is then
    evaluated at the recorded rate). `progress(label, simulated_s, duration_s)` reports long runs."""
    if not duration_s > 0:
        raise FieldValueError(f"--duration-s: expected a number > 0, got {duration_s:g}")
    if trace_rate not in TRACE_RATES:
        raise FieldValueError(f"--trace-rate: expected one of {', '.join(TRACE_RATES)}, got {trace_rate!r}")
    t = workload.traffic
    if trace is None and not poisson and t.trace_file:
        trace, trace_time_unit = t.trace_file, trace_time_unit or t.trace_time_unit
    if poisson:
        trace = None
    out = []
    for spec in plan_replicas(workload, catalog, plans, replicas):
        expected = spec.rate_rps * duration_s
        if (trace is None or trace_rate == "plan") and expected > MAX_SIMULATED_REQUESTS:
            raise FieldValueError(
                f"--duration-s: {duration_s:g} s at {spec.rate_rps:.4g} req/s per replica is {expected:,.0f} requests to simulate; "
                f"at most {MAX_SIMULATED_REQUESTS:,}: shorten the window"
            )
        if trace is not None:
            target = spec.rate_rps * spec.replicas if trace_rate == "plan" else None
            arr = trace_arrivals(trace, duration_s, spec.replicas, t.prompt_tokens, t.output_tokens, seed, target_rps=target, time_unit=trace_time_unit)
        else:
            arr = poisson_arrivals(spec.rate_rps, duration_s, t.prompt_tokens, t.output_tokens, seed)
        report = None if progress is None else (lambda clock, total, label=spec.label: progress(label, clock, total))
        result = simulate_replica(spec, arr, duration_s=duration_s, progress=report)
        rate = arr.rate_rps if arr.rate_rps is not None else spec.rate_rps
        point = analytic(replace(spec, rate_rps=rate) if rate != spec.rate_rps else spec, workload)
        agreement = (
            Agreement(metric="ttft_p99", analytic_s=float(point.ttft_s["p99"][0]), simulated_s=result.ttft_s["p99"]),
            Agreement(metric="tpot_p99", analytic_s=float(point.tpot_s["p99"][0]), simulated_s=result.tpot_s["p99"]),
            Agreement(metric="ttft_p50", analytic_s=float(point.ttft_s["p50"][0]), simulated_s=result.ttft_s["p50"]),
            Agreement(metric="tpot_p50", analytic_s=float(point.tpot_s["p50"][0]), simulated_s=result.tpot_s["p50"]),
        )
        out.append(
            Simulation(
                replica=spec, result=result, agreement=agreement, seed=seed, arrivals=arr.source, slo_checks=slo_checks(workload, result), rate_rps=rate
            )
        )
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
            "max_model_len": s.max_model_len,
            "block_size_tokens": s.block_size_tokens,
            "launch_command": s.launch_command,
        },
        "arrivals": sim.arrivals,
        "simulated_rate_rps_per_replica": rnd(sim.rate_rps or s.rate_rps),
        "seed": sim.seed,
        "duration_s": r.duration_s,
        "warmup_s": r.warmup_s,
        "requests": r.requests,
        "completed": r.completed,
        "unfinished": r.unfinished,
        "refused": r.refused,
        "ttft_s": {k: rnd(v) for k, v in r.ttft_s.items()},
        "tpot_s": {k: rnd(v) for k, v in r.tpot_s.items()},
        "output_tokens_per_s": rnd(r.output_tokens_per_s, 2),
        "kv_utilization_mean": rnd(r.kv_utilization_mean, 4),
        "kv_utilization_max": rnd(r.kv_utilization_max, 4),
        "running_mean": rnd(r.running_mean, 3),
        "running_p99": rnd(r.running_p99, 1),
        "running_variance": rnd(r.running_variance, 3),
        "preemptions": r.preemptions,
        "steps": r.steps,
        "simulated_s": rnd(r.simulated_s, 3),
        "slo_checks": [{"metric": c.metric, "bound_s": c.bound_s, "simulated_s": rnd(c.simulated_s), "met": c.met} for c in sim.slo_checks],
        "passed": sim.passed,
        "verdict": sim.verdict,
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


_AGREEMENT_COLUMNS: list[Column] = [
    ("metric", "vs analytic", ""),
    ("analytic_s", "analytic s", "{:.4f}"),
    ("simulated_s", "simulated s", "{:.4f}"),
    ("difference_fraction", "difference", "{:+.1%}"),
    ("within_15_percent", "within 15%", ""),
]
_SLO_COLUMNS: list[Column] = [
    ("metric", "SLO", ""),
    ("bound_s", "bound s", "{:g}"),
    ("simulated_s", "simulated s", "{:.4f}"),
    ("met", "met", ""),
]


def render_simulations(sims: list[Simulation], workload: Workload) -> str:
    """The simulations as text: per replica kind, the configuration run (the plan's launch
    line), the arrivals, the SLO checks and a PASS/FAIL line, the simulated percentiles next to
    the analytic model's, KV-pool use and preemptions."""
    out = [f"workload  {workload.name} ({workload.path})"]
    for sim in sims:
        d = simulation_dict(sim)
        c = d["configuration"]
        out.append("")
        out.append(
            f"replica   {c['device']} tp={c['tp']} pp={c['pp']} kv={c['kv_dtype']} weights={c['weight_dtype']}: "
            f"1 of {c['replicas']} replica(s) at {c['rate_rps_per_replica']:.4g} req/s; max_num_seqs {c['max_num_seqs']:,}, "
            f"max_num_batched_tokens {c['max_num_batched_tokens']:,}, max_model_len {c['max_model_len']:,}, block {c['block_size_tokens']}"
        )
        out.append(f"arrivals  {d['arrivals']}, seed {d['seed']}")
        refused = f", {d['refused']:,} refused (longer than max_model_len)" if d["refused"] else ""
        out.append(
            f"window    {d['duration_s']:g} s of arrivals, first {d['warmup_s']:g} s not counted; {d['requests']:,} requests measured, "
            f"{d['completed']:,} completed, {d['unfinished']:,} unfinished{refused}; {d['steps']:,} engine steps over {d['simulated_s']:,.1f} s"
        )
        out.append(
            f"KV pool   mean {d['kv_utilization_mean']:.1%} used, peak {d['kv_utilization_max']:.1%}; running batch mean {d['running_mean']:.1f}, "
            f"p99 {d['running_p99']:g}; preemptions {d['preemptions']:,}; {d['output_tokens_per_s']:,.0f} output tokens/s"
        )
        if d["slo_checks"]:
            out.append(text_table(d["slo_checks"], _SLO_COLUMNS).rstrip("\n"))
        out.append(d["verdict"])
        out.append("")
        out.append(text_table(d["agreement"], _AGREEMENT_COLUMNS).rstrip("\n"))
        pct = [{"metric": "TTFT s", **d["ttft_s"]}, {"metric": "TPOT s", **d["tpot_s"]}]
        out.append(text_table(pct, [("metric", "simulated", "")] + [(f"p{p:g}", f"p{p:g}", "{:.4f}") for p in PERCENTILES]).rstrip("\n"))
    return "\n".join(out) + "\n"
