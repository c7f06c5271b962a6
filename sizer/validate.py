"""`sizer validate`: the model against measured serving results, row by row, with its error.

For every row the model predicts what the row measured, under the benchmark the row describes
(sizer/measurements.py `kind`):

    concurrency   queueing.closed_loop: N clients, fixed isl/osl, ten waves of N (the harness's)
    rate          queueing.open_loop: Poisson arrivals at the measured rate (plus, where the row
                  says its prompts reached the replica in groups, queueing.prompt_groups)
    offline       queueing.offline: every request queued at once, throughput only
    batch         queueing.batch_wave: one wave of N requests sent at once
    disagg        prefill and decode on separate workers: TPOT from the decode workers' closed loop
                  with no prompt in their steps, TTFT from the prefill workers' queue plus the
                  KV-cache transfer over the link

and scores it: absolute percentage error |predicted - measured| / measured for mean TTFT, mean
TPOT and output-token throughput (measured, or derived from the measured means for a closed loop:
N x osl / (TTFT + (osl - 1) x TPOT)), then the median and 90th percentile over rows, overall and by
device, engine and model family.

Rows used to fit the efficiency factors (`sizer calibrate`) and rows used to score are disjoint:
measurements.split_roles assigns each configuration to one side, deterministically. The output
names each row's role and reports the two sides separately; the acceptance figures are the
scoring rows'.
"""

from __future__ import annotations

import collections
import math
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from .catalog import Catalog
from .errors import SizerError
from .efficiency import EfficiencyTable, efficiency_table
from .measurements import MeasuredRow, Resolved, Skipped, compiled_engine, copies, harness_flags, reserves_whole_output, resolve, system_name_words
from .perf import StepModel, build_step_model, stage_shape
from .queueing import BENCHMARK_WAVES, ContextHold, PromptGroups, RowLengths, batch_wave, closed_loop, offline, open_loop, open_loop_step_s, prompt_groups, wave_share
from .tables import Column, text_table
from .tables import to_json as tables_to_json
from .units import GIB

# Memory the runtime keeps outside weights and KV (activations of one step, CUDA graphs, NCCL
# buffers), per GPU, when sizing the KV pool of a measured deployment. vLLM logs ~1-3 GiB of
# activation peak and non-torch memory at 8,192 batched tokens (engines.py); 2 GiB sits in that range.
RUNTIME_RESERVE_BYTES = 2.0 * GIB

METRICS = ("ttft", "tpot", "throughput")


@dataclass(frozen=True, slots=True, kw_only=True)
class Setup:
    """Everything the prediction of a list of resolved rows needs, built once (arrays per row)."""

    resolved: tuple[Resolved, ...]
    step: StepModel  # decode (or aggregated) replica of each row
    prefill_step: StepModel | None  # prefill workers of disaggregated rows (same order; agg rows repeat `step`)
    kind: np.ndarray  # 0 concurrency, 1 rate, 2 offline, 3 disagg, 4 batch
    concurrency: np.ndarray
    rate_rps: np.ndarray
    isl: np.ndarray
    osl: np.ndarray
    capacity: np.ndarray  # sequences one replica (or decode worker) admits
    budget: np.ndarray  # prompt tokens per step (per attention rank)
    decode_workers: np.ndarray
    prefill_workers: np.ndarray
    kv_transfer_s: np.ndarray  # disagg: moving one prompt's KV from prefill to decode worker
    lengths: RowLengths | None = None  # per-row length moments (a dataset's distribution, or fixed isl/osl)
    hold: ContextHold | None = None  # per-row scheduler rules that hold a new prompt back (row_hold)
    # 1 where requests went through a serving front end (HTTP, tokenisation, the first scheduling
    # pass: StepModel.request_overhead_s), 0 for a benchmark that drove the engine in-process
    front_end: np.ndarray
    # requests each client of a concurrency row sent (the harness's waves of N; the first arrives at
    # once): queueing.BENCHMARK_WAVES unless measurements.harness_flags knows the row's own
    requests_per_client: np.ndarray
    # how a rate row's prompts reached its replica when not one by one (queueing.prompt_groups): the
    # harness window (seconds, 0: none) over the system's `replicas`, or the engine's count (1: none)
    replicas: np.ndarray
    batcher_window_s: np.ndarray
    prefill_group: np.ndarray

    @property
    def size(self) -> int:
        return len(self.resolved)

    def lengths_of(self, idx: np.ndarray | None = None) -> RowLengths:
        """The length moments of rows `idx` (every row when None): the rows' own (a dataset's
        distribution, or fixed isl/osl), else fixed isl/osl."""
        lengths = self.lengths if self.lengths is not None else RowLengths.fixed(self.isl, self.osl)
        return lengths if idx is None else lengths.take(np.asarray(idx, dtype=int))


_KINDS = {"concurrency": 0, "rate": 1, "offline": 2, "batch": 4}


def row_release(row) -> str | None:
    """The engine release whose defaults a row ran with: its `backend_version` where that names a
    release (0.6.3, 1.0.0rc3, nightly-..., whose digits order it after every numbered release), else
    None (the engine's default release): an empty cell, a label without digits (gpt-oss-dev), or an
    MLPerf label (mlperf-v4.1: a submitter's harness, which sets its own limits)."""
    from .engines import _version_tuple

    v = (row.engine_version or "").strip()
    if not v or v.lower().startswith("mlperf") or _version_tuple(v) == (0,):
        return None
    return v


def _engine_settings(res: Resolved, layout_tp: int):
    from .engines import EngineOverrides, engine_policy

    ctx = int(max(res.row.isl + res.row.osl, 1) if res.prompt is None else res.prompt.quantile(100) + (res.output.quantile(100) if res.output else res.row.osl))
    if res.row.max_model_len:  # the context the run was launched with
        ctx = res.row.max_model_len
    elif res.row.engine == "vllm" and res.model.max_context_tokens:
        # launched without --max-model-len: vLLM takes the model's own context (ModelConfig's
        # derived max_model_len), which sets V0's default step budget (engines.py)
        ctx = res.model.max_context_tokens
    # the memory fraction the row's harness launched with (measurements.harness_flags), else the engine's rule
    overrides = EngineOverrides(memory_fraction=harness_flags(res.row).get("memory_fraction"))
    # the defaults of the release the row ran (vLLM V0's 256 sequences and a budget of the context
    # where V1 takes 1,024 and 8,192 on a large GPU; SGLang's memory rule by release), not of the
    # release sizer plans for
    return engine_policy(res.row.engine).settings(res.gpu, res.model, layout_tp, version=row_release(res.row), overrides=overrides, max_model_len=ctx)


def kv_capacity_sequences(res: Resolved, layout=None) -> tuple[float, float]:
    """(sequences one replica admits, prompt tokens per step) for a resolved row. The budget is
    the row's (or its harness's) max_num_batched_tokens, else the engine's default, and at most
    the harness's SGLang --max-prefill-tokens.

    KV pool per GPU by the engine's rule (vLLM: fraction x total - weights - reserve; SGLang:
    fraction x total - weights; TRT-LLM: fraction x (total - weights - reserve)), fractions from
    engines.py; each attention rank holds its own sequences. A sequence is charged isl + osl
    tokens under TRT-LLM's default scheduler, which reserves the whole sequence
    (measurements.reserves_whole_output), and isl + osl/2 under vLLM, SGLang and NVIDIA's MLPerf
    harness (blocks grow with the output; running sequences are half-way on average)."""
    lay = layout or res.layout
    shape = stage_shape(res.model, lay.tp, lay.pp, res.weight_dtype, res.kv_dtype, lay.dp, lay.ep)
    settings = _engine_settings(res, lay.tp)
    usable = res.gpu.usable_memory_bytes
    weights = shape.dense_weight_bytes + shape.expert_weight_bytes
    f = settings.memory_fraction
    engine = res.row.engine
    state_cap = math.inf
    state = shape.state_bytes_per_sequence
    if engine == "trtllm":
        pool = f * (usable - weights - RUNTIME_RESERVE_BYTES)
    elif engine == "sglang":
        pool = f * usable - weights
        if shape.linear_layers:
            # SGLang's Gated DeltaNet state pool comes out of the same rest first (engines.py
            # SglangPolicy.state_pool): r / (1 + r) of it in slots, the running requests at most
            # slots // 3 with the radix cache on, slots with it off (--disable-radix-cache)
            from .engines import SglangPolicy

            flags = harness_flags(res.row)
            _, state_bytes, cap, _ = SglangPolicy().state_pool(
                res.model, lay.tp, pool, settings, shape.linear_layers,
                radix_cache=not flags.get("disable_radix_cache"), max_running=flags.get("max_num_seqs") or res.row.max_num_seqs,
            )
            state_cap = float(cap)
            pool, state = pool - state_bytes, 0.0
    else:
        pool = f * usable - weights - RUNTIME_RESERVE_BYTES
    lengths = row_lengths([res])
    held = float((lengths.reserve_ctx if reserves_whole_output(res.row) else lengths.ctx)[0])
    window = res.model.sliding_window
    full = shape.attention_layers_full
    sliding = shape.attention_layers_sliding
    per_seq = shape.kv_bytes_per_token_per_layer * (full * held + sliding * (min(held, window) if window else held)) + state
    seqs = min(max(pool, 0.0) / max(per_seq, 1.0), state_cap) * lay.dp
    budget = float(res.row.max_num_batched_tokens or settings.max_num_batched_tokens)
    prefill_cap = harness_flags(res.row).get("max_prefill_tokens")  # SGLang --max-prefill-tokens, under the chunk
    return float(min(seqs, running_cap(res))), min(budget, float(prefill_cap)) if prefill_cap else budget


def running_cap(res: Resolved) -> float:
    """The most sequences one engine instance of the row runs at once (the rest wait for a slot),
    as its source states it: the cap the row's harness script set (measurements.harness_flags:
    SGLang --max-running-requests), the row's own `max_num_seqs` (a launch flag its source gives,
    or the engine's default where the source launched without one), an Offline row's
    concurrency (MLPerf's gpu_batch_size / max_num_seqs); inf where the source says nothing: the
    engine's default is not assumed, since harnesses set their own (InferenceX passes
    --max-num-seqs $CONC)."""
    row = res.row
    cap = harness_flags(row).get("max_num_seqs") or row.max_num_seqs
    if cap:
        return float(cap)
    if row.kind == "offline" and row.concurrency:
        return float(row.concurrency)
    return math.inf


def row_lengths(resolved: list[Resolved]) -> RowLengths:
    """The length moments of each row: its dataset's distributions, else its fixed isl/osl."""
    return RowLengths.of([r.prompt for r in resolved], [r.output for r in resolved], [r.row.isl for r in resolved], [r.row.osl for r in resolved])


def row_hold(resolved: list[Resolved]) -> ContextHold:
    """The launch settings of each row's harness that hold a new prompt back for whole steps
    (measurements.harness_flags: TRT-LLM batch waiting and attention-DP balancing, SGLang's
    scheduler receive interval), as queueing.ContextHold arrays; rows without any hold 0."""
    cols: dict[str, list[float]] = {k: [] for k in ("wait_iters", "wait_tokens", "adp_iters", "adp_extra_iters", "adp_ranks", "recv_interval")}
    for res in resolved:
        f = harness_flags(res.row)
        cols["wait_iters"].append(float(f.get("batch_wait_iters", 0)))
        cols["wait_tokens"].append(float(f.get("batch_wait_tokens", 0)))
        cols["adp_iters"].append(float(f.get("adp_balance_iters", 0)))
        cols["adp_extra_iters"].append(float(f.get("adp_batching_iters", 0)))
        cols["adp_ranks"].append(float(res.layout.dp))
        cols["recv_interval"].append(float(f.get("recv_interval", 0)))
    return ContextHold(**{k: np.asarray(v, dtype=float) for k, v in cols.items()})


def build_setup(resolved: list[Resolved], efficiency: EfficiencyTable | None = None) -> Setup:
    """Stack resolved rows into arrays and step models (one pass, reused by the calibration)."""
    table = efficiency if efficiency is not None else efficiency_table()
    rows_step = []
    rows_prefill = []
    engines = []
    kind, conc, rate, isl, osl, cap, budget, dw, pw, xfer, front, waves = ([] for _ in range(12))
    for res in resolved:
        r = res.row
        rows_step.append((res.model, res.gpu, res.layout, res.weight_dtype, res.kv_dtype))
        rows_prefill.append((res.model, res.gpu, res.prefill_layout or res.layout, res.weight_dtype, res.kv_dtype))
        engines.append(r.engine)
        seqs, tokens = kv_capacity_sequences(res)
        cap.append(seqs)
        budget.append(tokens)
        kind.append(3 if r.mode == "disagg" else _KINDS[r.kind])
        conc.append(r.concurrency or 0.0)
        rate.append(r.request_rate_rps or 0.0)
        isl.append(res.prompt.mean if res.prompt is not None else r.isl)
        osl.append(res.output.mean if res.output is not None else r.osl)
        dw.append(float(res.decode_workers or 1))
        pw.append(float(res.prefill_workers or 1))
        front.append(0.0 if r.in_process else 1.0)
        waves.append(float(harness_flags(r).get("requests_per_client", BENCHMARK_WAVES)))
        if r.mode == "disagg":
            shape = stage_shape(res.model, res.layout.tp, res.layout.pp, res.weight_dtype, res.kv_dtype, res.layout.dp, res.layout.ep)
            kv_bytes = r.isl * shape.kv_bytes_per_token_per_layer * res.model.num_kv_layers + shape.state_bytes_per_sequence
            xfer.append(kv_bytes / (res.gpu.link_bytes_per_s * res.prefill_layout.gpus))
        else:
            xfer.append(0.0)
    versions = [res.row.engine_version for res in resolved]
    step = build_step_model(rows_step, engine=engines, efficiency=table, engine_version=versions)
    prefill_step = build_step_model(rows_prefill, engine=engines, efficiency=table, engine_version=versions)
    compiled = np.array([compiled_engine(res.row) for res in resolved], dtype=bool)
    if compiled.any():  # a compiled network pays no eager per-layer prefill overhead (measurements.compiled_engine)
        # ... and runs TensorRT-LLM's C++ executor, not the PyTorch one's overlap scheduler
        step = replace(step, eager_prefill=np.where(compiled, 0.0, step.eager_prefill), overlap_scheduler=np.where(compiled, 0.0, step.overlap_scheduler))
        prefill_step = replace(prefill_step, eager_prefill=np.where(compiled, 0.0, prefill_step.eager_prefill), overlap_scheduler=np.where(compiled, 0.0, prefill_step.overlap_scheduler))
    mixed = np.array([bool(harness_flags(res.row).get("mixed_chunk")) for res in resolved], dtype=bool)
    if mixed.any():  # SGLang --enable-mixed-chunk: each decoding sequence takes a token of the step's prompt budget
        step = replace(step, budget_decode_tokens=np.where(mixed, 1.0, step.budget_decode_tokens))
        prefill_step = replace(prefill_step, budget_decode_tokens=np.where(mixed, 1.0, prefill_step.budget_decode_tokens))
    f = lambda x: np.asarray(x, dtype=float)  # noqa: E731
    return Setup(
        resolved=tuple(resolved),
        step=step,
        prefill_step=prefill_step,
        kind=np.asarray(kind, dtype=int),
        concurrency=f(conc),
        rate_rps=f(rate),
        isl=f(isl),
        osl=f(osl),
        capacity=f(cap),
        budget=f(budget),
        decode_workers=f(dw),
        prefill_workers=f(pw),
        kv_transfer_s=f(xfer),
        lengths=row_lengths(resolved),
        hold=row_hold(resolved),
        front_end=f(front),
        requests_per_client=f(waves),
        replicas=f([res.row.replicas for res in resolved]),
        batcher_window_s=f([(res.row.batcher_window_ms or 0.0) / 1000.0 for res in resolved]),
        prefill_group=f([res.row.prefill_group or 1 for res in resolved]),
    )


def row_groups(setup: Setup, idx: np.ndarray, step: StepModel, rate_rps: np.ndarray) -> PromptGroups:
    """queueing.prompt_groups for rows `idx` of `setup` under `step` (the rows' own), at `rate_rps`
    per replica (the measured rate, or the model's edge for a bound run)."""
    idx = np.asarray(idx, dtype=int)
    lengths = setup.lengths_of(idx)
    return prompt_groups(step, rate_rps, setup.replicas[idx], lengths, setup.budget[idx], setup.batcher_window_s[idx], setup.prefill_group[idx])


@dataclass(frozen=True, slots=True, kw_only=True)
class Predicted:
    """Predicted means per row (arrays): seconds, and output tokens/s of the whole deployment."""

    ttft_s: np.ndarray
    tpot_s: np.ndarray
    output_tokens_per_s: np.ndarray


def predict(setup: Setup, step: StepModel | None = None, prefill_step: StepModel | None = None) -> Predicted:
    """Predictions for every row of `setup` (optionally under other factors: the calibration)."""
    step = step if step is not None else setup.step
    pstep = prefill_step if prefill_step is not None else setup.prefill_step
    n = setup.size
    ttft = np.full(n, np.nan)
    tpot = np.full(n, np.nan)
    thr = np.full(n, np.nan)

    lengths = setup.lengths_of()
    dist = lengths.points.shape[1] > 1
    for kind in (0, 1, 2, 4):
        rows = np.flatnonzero(setup.kind == kind)
        # rows with a dataset's distribution and rows of fixed lengths apart: the latter need one
        # prompt-length point, not the quadrature's sixteen
        groups = [rows[(lengths.points[rows] != lengths.points[rows][:, :1]).any(axis=1)], rows[~(lengths.points[rows] != lengths.points[rows][:, :1]).any(axis=1)]] if dist else [rows]
        for idx in groups:
            if not idx.size:
                continue
            s = step.take(idx)
            L = lengths.take(idx)
            if L.points.shape[1] > 1 and (L.points == L.points[:, :1]).all():
                L = RowLengths(**{**{k: getattr(L, k) for k in ("isl", "osl", "isl_sq", "isl_attn", "ctx", "reserve_ctx")}, "points": L.points[:, :1]})
            isl, osl, cap, bud = setup.isl[idx], setup.osl[idx], setup.capacity[idx], setup.budget[idx]
            if kind == 0:
                out = closed_loop(s, setup.concurrency[idx], isl, osl, cap, bud, lengths=L, hold=None if setup.hold is None else setup.hold.take(idx), requests_per_client=setup.requests_per_client[idx])
            elif kind == 1:
                out = open_loop(s, setup.rate_rps[idx], isl, osl, bud, lengths=L)
                out = replace(out, ttft_s=out.ttft_s + row_groups(setup, idx, s, setup.rate_rps[idx]).mean_s)
            elif kind == 2:
                out = offline(s, isl, osl, cap, bud, lengths=L)
            else:
                out = batch_wave(s, setup.concurrency[idx], isl, osl, cap, bud, lengths=L)
            # an in-process benchmark's requests skip the serving front end and its overhead
            ttft[idx] = out.ttft_s - (1.0 - setup.front_end[idx]) * s.request_overhead_s
            tpot[idx], thr[idx] = out.tpot_s, out.output_tokens_per_s
    idx = np.flatnonzero(setup.kind == 3)
    if idx.size:
        out_t, out_p, out_r = _disagg(setup, idx, step.take(idx), pstep.take(idx))
        ttft[idx], tpot[idx], thr[idx] = out_t, out_p, out_r
    return Predicted(ttft_s=ttft, tpot_s=tpot, output_tokens_per_s=thr)


def ttft_floor_s(setup: Setup, step: StepModel | None = None, prefill_step: StepModel | None = None) -> np.ndarray:
    """The least TTFT each row's requests can have: the request overhead and the mean prompt
    prefilled alone (perf.StepModel.prefill_s, at the mean length: under a distribution's mean
    prefill, attention being convex in the length), plus the KV transfer of a disaggregated row.
    No queue, wave or held step is in it: a measured mean below it says the floor is too high
    (what the calibration's one-sided residual reads)."""
    step = step if step is not None else setup.step
    pstep = prefill_step if prefill_step is not None else setup.prefill_step
    dis = setup.kind == 3
    agg = step.prefill_s(setup.isl) + setup.front_end * step.request_overhead_s
    split = pstep.prefill_s(setup.isl) + pstep.request_overhead_s + setup.kv_transfer_s
    return np.where(dis, split, agg)


def rate_row_steps_s(rows: list[MeasuredRow], catalog: Catalog, efficiency: EfficiencyTable) -> dict[str, float]:
    """For each rate row (Poisson arrivals: MLPerf Server and Interactive) that measured TPOT: the
    model's step at the running batch the row itself implies, row id -> seconds. Little's law on
    the decode phase gives that batch from the row's own figures, D = rate x (E[O] - 1) x TPOT;
    queueing.open_loop_step_s is the step there. Its error against the measured TPOT is the error
    of the step time alone, where open_loop's TPOT at the rate also carries the population the
    model solves for, which near a replica's capacity (where MLPerf submitters run) multiplies a
    step error many times (evidence.compute_residuals)."""
    resolved = [r for r in (resolve(x, catalog) for x in rows if x.kind == "rate" and x.mode == "agg" and x.tpot_ms) if isinstance(r, Resolved)]
    if not resolved:
        return {}
    setup = build_setup(resolved, efficiency)
    t = measured_batch_step_s(setup, np.arange(setup.size))
    return {res.row.row_id: float(t[i]) for i, res in enumerate(resolved) if math.isfinite(t[i]) and t[i] > 0}


def bounded_rates_rps(setup: Setup) -> dict[int, float]:
    """For each rate row of `setup` with latency bounds (Resolved.latency_bounds_s: an MLPerf
    Server or Interactive run, whose rate is the largest its submitter found within the
    benchmark's p99 TTFT and TPOT bounds), row index -> the model's largest rate per replica within
    the same bounds: queueing.max_rate, the search the planner sizes every replica with, on the
    row's own length distributions, KV pool, running-sequence cap and token budget.

    The row's rate is what its harness sent, so the model's throughput at that rate is the rate
    times the output length whatever the model (an error of about 1 %, the output length's, that
    says nothing of the model's speed). What such a run measures of the system is the rate itself:
    the largest it sustains within the bounds. So the row's predicted throughput is the model's
    largest rate within them, and its throughput error is the error of the figure a plan is sized
    by (a replica's largest rate within its SLO bounds). Its TTFT and TPOT are predicted at that
    rate too (bound_latencies_s), so the three figures describe one operating point."""
    from .queueing import max_rate

    out: dict[int, float] = {}
    for i, res in enumerate(setup.resolved):
        if setup.kind[i] != 1 or res.latency_bounds_s is None or res.prompt is None or res.output is None:
            continue
        demand, limits = bound_run_checks(setup, i)
        out[i] = float(max_rate(setup.step.take(np.array([i])), demand, limits).max_rate_rps[0])
    return out


def bound_run_checks(setup: Setup, i: int):
    """(queueing.Demand, queueing.Limits) of bound run `i` of `setup`: its length distributions
    and p99 TTFT and TPOT bounds, its KV pool, running-sequence cap and token budget."""
    ttft_s, tpot_s = setup.resolved[i].latency_bounds_s
    return row_checks(setup, i, (("p99", ttft_s),), (("p99", tpot_s),))


def row_checks(setup: Setup, i: int, ttft_s: tuple = (), tpot_s: tuple = ()):
    """(queueing.Demand, queueing.Limits) of row `i` of `setup`, as the planner describes a
    deployment: the row's length distributions (its dataset's, or its fixed isl and osl), the
    latency bounds given (percentile key, seconds), its KV pool, running-sequence cap and token
    budget."""
    from .queueing import Demand, Limits
    from .workload import LengthDist

    res = setup.resolved[i]
    prompt = res.prompt if res.prompt is not None else LengthDist(percentiles=((50.0, float(setup.isl[i])),))
    output = res.output if res.output is not None else LengthDist(percentiles=((50.0, float(setup.osl[i])),))
    demand = Demand(prompt=prompt, output=output, ttft_s=ttft_s, tpot_s=tpot_s)
    seqs = max(float(setup.capacity[i]), 1.0)
    limits = Limits(
        max_concurrency=np.array([seqs]),
        max_num_seqs=np.array([min(seqs, running_cap(res))]),
        max_num_batched_tokens=np.array([setup.budget[i]]),
    )
    return demand, limits


def bound_latencies_s(setup: Setup, bounded: dict[int, float]) -> dict[int, tuple[float, float]]:
    """For each bound run (bounded_rates_rps: row index -> the model's largest rate per replica
    within the run's p99 bounds), row index -> (mean TTFT, mean TPOT) in seconds of the open loop
    at that rate: the model's figures at the edge of the same bounds, where the run itself sat.

    A submitter runs at the largest rate its system sustains within the bounds, so the run's
    TTFT and TPOT are those of a replica at its edge. At the submitted rate the model is at its
    own edge only if its largest rate is that rate: a model 9 % fast (B200 llama2-70b Server,
    v4.1: 43.3 req/s against 39.6) puts the run a tenth inside its edge and its TPOT at a sixth of
    the measured (21 against 132 ms); one a few per cent slow calls the run saturated (an infinite
    error). Both come of the step error (the rate's error, reported by summary.bounded_rate) and
    say nothing new about the latencies. At its own edge the model's error is its error at the
    edge. Rows whose largest rate is 0 (no rate within the bounds), or whose open loop there is
    not finite (none of the 68 shipped: max_rate only returns rates it found stable), keep the
    figures at the submitted rate; the figures at the submitted rate stay in each row's JSON
    (`predicted_ttft_ms_at_rate`, `predicted_tpot_ms_at_rate`)."""
    from .queueing import open_loop

    idx = np.array([i for i, r in sorted(bounded.items()) if r > 0], dtype=int)
    if not idx.size:
        return {}
    rate = np.array([bounded[i] for i in idx])
    lengths = setup.lengths_of(idx)
    step = setup.step.take(idx)
    out = open_loop(step, rate, setup.isl[idx], setup.osl[idx], setup.budget[idx], lengths=lengths)
    ttft = out.ttft_s + row_groups(setup, idx, step, rate).mean_s - (1.0 - setup.front_end[idx]) * step.request_overhead_s
    return {int(i): (float(a), float(b)) for i, a, b in zip(idx, ttft, out.tpot_s) if math.isfinite(a) and math.isfinite(b)}


def tail_latencies_s(setup: Setup, rates: dict[int, float]) -> dict[int, tuple[float, float]]:
    """For rate rows of `setup` (Poisson arrivals, aggregated serving; row index -> the rate per
    replica its means are predicted at), row index -> (p99 TTFT, p99 TPOT) in seconds: the
    planner's own percentiles (queueing.evaluate_load, what `sizer solve` holds against an SLO and
    prints as "TTFT p99" and "TPOT p99") for the row's deployment, lengths and limits at that rate;
    inf where the model calls the rate saturated. A benchmark without a front end (in-process)
    has its TTFT without the request overhead, as in the means (bound_latencies_s)."""
    from .queueing import evaluate_load

    out: dict[int, tuple[float, float]] = {}
    for i, rate in sorted(rates.items()):
        if setup.kind[i] != 1 or not rate > 0:
            continue
        demand, limits = row_checks(setup, i)
        step = setup.step.take(np.array([i]))
        point = evaluate_load(step, np.array([float(rate)]), demand, limits)
        p99 = point.ttft_s["p99"]
        groups = row_groups(setup, np.array([i]), step, np.array([float(rate)]))
        if groups.mean_s[0] > 0 and np.isfinite(p99[0]):  # the grouped open loop's p99 (PromptGroups.p99_s)
            lengths = setup.lengths_of(np.array([i]))
            mean = open_loop(step, np.array([float(rate)]), setup.isl[[i]], setup.osl[[i]], setup.budget[[i]], lengths=lengths).ttft_s
            p99 = groups.p99_s(mean, p99)
        ttft = float(p99[0]) - (1.0 - float(setup.front_end[i])) * float(step.request_overhead_s[0])
        out[int(i)] = (ttft, float(point.tpot_s["p99"][0]))
    return out


def measured_batch_step_s(setup: Setup, idx: np.ndarray, step: StepModel | None = None) -> np.ndarray:
    """The step time of rows `idx` of `setup` (rate rows that measured TPOT) at the running batch
    each row implies, D = rate x (E[O] - 1) x TPOT, under `step` (default the setup's; the
    calibration passes the factors it is trying): what rate_row_steps_s reports and what the fit
    compares a rate row's TPOT with."""
    idx = np.asarray(idx, dtype=int)
    lengths = setup.lengths_of(idx)
    tpot_s = np.array([setup.resolved[i].row.tpot_ms / 1000.0 for i in idx])
    decoding = setup.rate_rps[idx] * np.maximum(lengths.osl - 1, 1.0) * tpot_s
    return open_loop_step_s((step if step is not None else setup.step).take(idx), decoding, setup.budget[idx], lengths)


_RHO_MAX = 0.999  # the prefill pool's busiest share in its M/D/1 wait (its queue is finite: the clients are)
_RATE_REL = 1e-12  # _disagg bisects the rate to this share of itself


def _disagg(setup: Setup, idx: np.ndarray, dstep: StepModel, pstep: StepModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Disaggregated serving, closed loop of N clients.

    Decode: N / decode_workers sequences per decode worker, steps with no prompt in them (the
    closed loop with an isl-token context and no prefill work). Prefill: a prompt alone takes
    prefill_s; a worker busy with many prompts (batched in its steps, one per attention rank and
    more) spends isl x prefill_per_token_s worker-seconds on each. Completions arrive at rate r;
    the prefill pool is an M/D/c queue approximated by M/D/1 with c-fold service rate; TTFT = wait +
    prefill + KV transfer. A share of prompts (queueing.wave_share: burst_fraction, by the
    requests each client sent) arrive in a wave of N, queued over the prefill workers.

    The rate solves N = r x (TTFT(r) + (E[O]-1) TPOT), whose right side grows with r: bisection on
    r below the prefill pool's capacity, workers / work (a fixed-point iteration of the same
    equation alternates between two values once the pool is busy: 21 of the 179 shipped
    disaggregated rows did, and their TTFT was whichever the iteration count's parity picked).
    Where even that capacity leaves the clients unserved the pool is saturated: it completes
    prompts at its capacity and the clients beyond wait in its queue (Little's law: TTFT =
    N / r - (E[O]-1) TPOT). N counts the clients the decode workers' slots admit (their KV pools,
    their running caps); the others wait for a slot, (N_all - N) / r (the closed loop's rule,
    queueing.closed_loop), and are not also counted in the loop."""
    n = setup.concurrency[idx]
    isl, osl = setup.isl[idx], setup.osl[idx]
    workers_d = setup.decode_workers[idx]
    workers_p = setup.prefill_workers[idx]
    per_worker = np.maximum(n / workers_d, 1.0)
    steps = np.maximum(osl - 1, 1.0)
    ctx = isl + osl / 2
    capacity = setup.capacity[idx]
    admitted = np.minimum(per_worker, np.maximum(np.floor(capacity), 1.0))
    t_mem, t_comp, rest = dstep.decode_parts(admitted, ctx)
    tpot = np.maximum(t_mem, t_comp) + rest
    latency = pstep.prefill_s(isl)  # one prompt alone, start to first token
    work = isl * pstep.prefill_per_token_s(isl)  # worker-seconds per prompt when prompts share steps (all attention ranks busy)
    xfer = setup.kv_transfer_s[idx]
    floor = latency + xfer + pstep.request_overhead_s
    burst = (n / workers_p + 1) / 2 * work + latency
    share = wave_share(pstep.burst_fraction, setup.requests_per_client[idx])
    # the clients the decode workers' slots admit cycle through the loop; the rest wait for a slot
    looping = np.minimum(n, admitted * workers_d)

    def ttft_at(rate):
        rho = np.minimum(rate * work / workers_p, _RHO_MAX)
        steady = rho / (2 * (1 - rho)) * work / workers_p + floor
        return steady + np.maximum(burst - steady, 0.0) * share

    # the rate's bracket: 0 and the smaller of the pool's capacity and the clients' cycle at the floor
    lo = np.zeros_like(n)
    hi = np.minimum(_RHO_MAX * workers_p / np.maximum(work, 1e-12), looping / (floor + steps * tpot))
    saturated = hi * (ttft_at(hi) + steps * tpot) < looping
    for _ in range(100):
        if np.all(hi - lo <= _RATE_REL * hi):
            break
        mid = 0.5 * (lo + hi)
        over = mid * (ttft_at(mid) + steps * tpot) > looping
        hi = np.where(over, mid, hi)
        lo = np.where(over, lo, mid)
    rate = np.where(saturated, hi, lo)
    ttft = np.where(saturated, looping / np.maximum(rate, 1e-12) - steps * tpot, ttft_at(rate))
    memory_wait = (n - looping) / np.maximum(rate, 1e-12)  # Little's law on the waiting room
    return ttft + memory_wait, tpot, rate * osl


# ---------------------------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RowResult:
    row: MeasuredRow
    role: str  # fit | score
    model: str
    device: str
    layout: str
    weight_dtype: str
    kv_dtype: str
    moe: bool
    predicted_ttft_ms: float | None
    predicted_tpot_ms: float | None
    predicted_tokens_per_s: float | None
    copy_of: str | None = None  # the id of an earlier row reporting the same run (measurements.copies): scored once, there
    # A rate row run at the largest rate within stated p99 bounds (MLPerf Server, Interactive): the
    # model's largest rate within the same bounds (queueing.max_rate, the planner's own search),
    # whose tokens/s is the row's predicted throughput
    predicted_max_rate_rps: float | None = None
    latency_bounds_ms: tuple[float, float] | None = None
    # such a run's TTFT and TPOT are predicted at that largest rate (bound_latencies_s); these are
    # the model's figures at the rate the run was submitted at (inf where it calls it saturated)
    predicted_ttft_ms_at_rate: float | None = None
    predicted_tpot_ms_at_rate: float | None = None
    # ... and at EDGE_SHARE of the model's largest rate: how far the figures at the edge move for
    # a rate error of that size (edge_sensitivity)
    predicted_ttft_ms_below_edge: float | None = None
    predicted_tpot_ms_below_edge: float | None = None
    # A rate row's p99 TTFT and TPOT at the rate its means are predicted at (tail_latencies_s: the
    # planner's percentiles; inf where it calls the rate saturated), where the row measured a p99
    predicted_ttft_p99_ms: float | None = None
    predicted_tpot_p99_ms: float | None = None
    # A rate row whose prompts reached its replica in groups (batcher_window_ms, prefill_group): the
    # part of its predicted mean TTFT the grouping adds (queueing.prompt_groups: the wait for the
    # group to leave and its other prompts' prefill), at the rate that mean is predicted at
    predicted_ttft_grouping_ms: float | None = None

    def measured(self, metric: str) -> float | None:
        return {"ttft": self.row.ttft_ms, "tpot": self.row.tpot_ms, "throughput": self.row.throughput_tokens_per_s}[metric]

    def ape(self, metric: str) -> float | None:
        """|predicted - measured| / measured in percent; None where the row measured nothing of
        the metric; infinite where it did and the model has no finite figure (a load it calls
        saturated): a miss, counted in the percentiles, not left out of them."""
        measured = self.measured(metric)
        if measured is None or measured <= 0:
            return None
        predicted = {"ttft": self.predicted_ttft_ms, "tpot": self.predicted_tpot_ms, "throughput": self.predicted_tokens_per_s}[metric]
        if predicted is None or not math.isfinite(predicted):
            return math.inf
        return abs(predicted - measured) / measured * 100.0

    def p99_ape(self, metric: str) -> float | None:
        """As `ape`, for the p99 of TTFT or TPOT (`metric` ttft or tpot): None where the row
        measured no p99 of it or the model gives none for its kind of run (tail_latencies_s)."""
        measured = {"ttft": self.row.ttft_p99_ms, "tpot": self.row.tpot_p99_ms}[metric]
        predicted = {"ttft": self.predicted_ttft_p99_ms, "tpot": self.predicted_tpot_p99_ms}[metric]
        if measured is None or measured <= 0 or predicted is None:
            return None
        if not math.isfinite(predicted):
            return math.inf
        return abs(predicted - measured) / measured * 100.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    results: tuple[RowResult, ...]
    skipped: tuple[Skipped, ...]
    efficiency_source: str
    measurements: str
    roles_used: bool  # False for a user's own file: every row is scored
    coverage: dict | None = None  # interval coverage of the 80 % error bands (with_coverage)
    warnings: tuple[str, ...] = ()  # about the measurement file (measurements.column_warnings)


def _finite(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def _load_label(row) -> str:
    """The load a row was measured under, in its benchmark's terms."""
    if row.kind == "rate" and row.request_rate_rps is not None:
        return f"{row.request_rate_rps:g} req/s"
    if row.kind == "offline":
        return "every request queued at once" + (f", at most {row.concurrency:g} running" if row.concurrency else "")
    if row.concurrency is not None:
        return f"{row.concurrency:g} {'requests at once' if row.kind == 'batch' else 'clients'}"
    return row.kind


def roofline_check(resolved: list[Resolved]) -> tuple[list[Resolved], list[Skipped]]:
    """Rows whose measured mean TPOT is below the roofline of their stated configuration are not
    what they say: the step model at 100 % of every datasheet figure with no overhead (a lower
    bound on any step) predicts a longer TPOT for that model, device, layout, formats and load.
    Speculative decoding, prefix caching, or another layout or batch than recorded can do that;
    sizer models none of them, so such rows are skipped with the numbers, in fitting and in
    scoring alike. So are closed-loop rows whose weights leave the engine's default memory rule
    no KV pool for one sequence (DeepSeek-V3 FP8 on a GB200 worker of tp=1 x dp=4: 179 GB of
    weights per GPU against SGLang's 0.85 x 186 GB): they ran with memory settings the row does not
    record, and the model would queue every client for memory."""
    from .efficiency import FACTORS, Factors, table_from_factors

    candidates = [r for r in resolved if r.row.tpot_ms is not None]
    if not candidates:
        return list(resolved), []
    ideal = {k: 1.0 for k in FACTORS}
    ideal.update(
        link_latency_s=0.0,
        step_overhead_s=0.0,
        sequence_overhead_s=0.0,
        request_overhead_s=0.0,
        prefill_layer_overhead_s=0.0,
        admission_steps=0.0,
        burst_fraction=0.0,
    )
    setup = build_setup(candidates, table_from_factors(Factors(**ideal)))
    floor_s = predict(setup).tpot_s
    below = {}
    for r, f in zip(candidates, floor_s):
        if np.isfinite(f) and r.row.tpot_ms / 1000.0 < f:
            below[r.row.row_id] = (
                f"measured TPOT {r.row.tpot_ms:.2f} ms is below {f * 1000:.2f} ms, the roofline of the stated configuration "
                f"({r.layout.label()}, {r.weight_dtype} weights, {r.kv_dtype} KV, {_load_label(r.row)}) at 100 % of the datasheet bandwidth and compute: "
                "speculative decoding, prefix caching or another layout than recorded"
            )
    # a layout whose weights leave the engine's memory rule no KV pool ran with memory settings the row
    # does not record (a larger fraction, CPU offload): the model would queue every client for memory
    for r in resolved:
        if r.row.row_id not in below and r.row.kind in ("concurrency", "batch") and kv_capacity_sequences(r)[0] < 1:
            below[r.row.row_id] = (
                f"no KV pool: {r.layout.label()} with {r.weight_dtype} weights leaves {r.row.engine}'s default memory rule room for "
                "less than one sequence of the row's lengths: the run's memory settings are not recorded"
            )
    keep = [r for r in resolved if r.row.row_id not in below]
    return keep, [Skipped(row=r.row, reason=below[r.row.row_id]) for r in resolved if r.row.row_id in below]


def validate_rows(rows: list[MeasuredRow], catalog: Catalog, *, efficiency: EfficiencyTable | None = None, roles: dict[str, str] | None = None, label: str = "") -> Report:
    """Predict and score `rows`. `roles` (row id -> fit/score) marks the fit/score split; without
    it every row is a scoring row (a user's own measurements, never used in the fit)."""
    from .measurements import read_layouts

    table = efficiency if efficiency is not None else efficiency_table(catalog.root)
    resolved: list[Resolved] = []
    skipped: list[Skipped] = []
    for row in read_layouts(rows, catalog):  # all together: a row repeating a read row's run is read with it
        r = resolve(row, catalog)
        (resolved if isinstance(r, Resolved) else skipped).append(r)
    resolved, below = roofline_check(resolved)
    skipped.extend(below)
    results: list[RowResult] = []
    if resolved:
        setup = build_setup(resolved, table)
        pred = predict(setup)
        bounded = bounded_rates_rps(setup)
        at_bound = bound_latencies_s(setup, bounded)
        below = bound_latencies_s(setup, {i: EDGE_SHARE * r for i, r in bounded.items() if i in at_bound})
        # the p99s of the rate rows that measured one, at the rate their means are predicted at
        logged = [i for i, res in enumerate(resolved) if res.row.kind == "rate" and (res.row.ttft_p99_ms or res.row.tpot_p99_ms)]
        tails = tail_latencies_s(setup, {i: bounded[i] if i in at_bound else float(setup.rate_rps[i]) for i in logged})
        copy_of = copies([res.row for res in resolved])
        grouped = np.flatnonzero((setup.kind == 1) & ((setup.batcher_window_s > 0) | (setup.prefill_group > 1)))
        grouping_s = {}
        if grouped.size:
            used = np.array([bounded[i] if i in at_bound else setup.rate_rps[i] for i in grouped])
            grouping_s = dict(zip(grouped.tolist(), row_groups(setup, grouped, setup.step.take(grouped), used).mean_s))
        for i, res in enumerate(resolved):
            ttft_s, tpot_s = at_bound.get(i, (pred.ttft_s[i], pred.tpot_s[i]))
            ttft_below, tpot_below = below.get(i, (None, None))
            ttft_p99, tpot_p99 = tails.get(i, (None, None))
            results.append(
                RowResult(
                    row=res.row,
                    role=(roles or {}).get(res.row.row_id, "score"),
                    model=res.model_name,
                    device=res.gpu.name,
                    layout=_layout_label(res),
                    weight_dtype=res.weight_dtype,
                    kv_dtype=res.kv_dtype,
                    moe=res.model.is_moe,
                    predicted_ttft_ms=_finite(ttft_s * 1000) if res.row.ttft_ms is not None or res.row.kind != "offline" else None,
                    predicted_tpot_ms=_finite(tpot_s * 1000),
                    predicted_tokens_per_s=_finite(bounded[i] * res.output.mean if i in bounded else pred.output_tokens_per_s[i]),
                    copy_of=copy_of.get(res.row.row_id),
                    predicted_max_rate_rps=_finite(bounded[i]) if i in bounded else None,
                    latency_bounds_ms=tuple(b * 1000.0 for b in res.latency_bounds_s) if i in bounded else None,
                    predicted_ttft_ms_at_rate=float(pred.ttft_s[i] * 1000) if i in at_bound else None,
                    predicted_tpot_ms_at_rate=float(pred.tpot_s[i] * 1000) if i in at_bound else None,
                    predicted_ttft_ms_below_edge=None if ttft_below is None else ttft_below * 1000,
                    predicted_tpot_ms_below_edge=None if tpot_below is None else tpot_below * 1000,
                    predicted_ttft_p99_ms=None if ttft_p99 is None or not res.row.ttft_p99_ms else ttft_p99 * 1000,
                    predicted_tpot_p99_ms=None if tpot_p99 is None or not res.row.tpot_p99_ms else tpot_p99 * 1000,
                    predicted_ttft_grouping_ms=float(grouping_s[i] * 1000) if i in grouping_s else None,
                )
            )
    source = f"{table.path} ({table.method}, fitted {table.fitted})" if table.path else "in-memory efficiency table"
    return Report(results=tuple(results), skipped=tuple(skipped), efficiency_source=source, measurements=label, roles_used=roles is not None)


# Words of a system's name that are its host CPUs, not its accelerators (`8xMI355X_2xEPYC_9575F`,
# `GB200-186GB_aarch64x4`): their counts are not the GPUs'.
_HOST_WORDS = re.compile(r"epyc|xeon|grace|aarch64|arm64|cpu|core", re.I)


def system_gpu_count(system: str) -> int | None:
    """The GPUs a whole system's name counts (`8xMI355X_2xEPYC_9575F` -> 8, `ESC8000A_..._96GBx8_TRT`
    -> 8, `8 x H100-NVL` -> 8), the host CPUs' counts left out; None where it counts none."""
    words = system_name_words(system)
    counts: list[tuple[int, str]] = []
    for i, w in enumerate(words):
        if m := re.fullmatch(r"(\d+)x([a-z].*)", w, flags=re.I):  # 8xMI355X
            counts.append((int(m.group(1)), m.group(2)))
        elif m := re.fullmatch(r"(.*[a-z0-9])x(\d+)", w, flags=re.I):  # 96GBx8, aarch64x4
            counts.append((int(m.group(2)), m.group(1)))
        elif (m := re.fullmatch(r"(\d+)x", w, flags=re.I)) and i + 1 < len(words):  # (8x H100-SXM-80GB, ...)
            counts.append((int(m.group(1)), words[i + 1]))
        elif w.isdigit() and i + 2 < len(words) and words[i + 1].lower() == "x":  # 8 x H100-NVL
            counts.append((int(w), words[i + 2]))
    counts = [n for n, word in counts if n > 0 and not _HOST_WORDS.search(word)]
    return max(counts) if counts else None


def row_warnings(report: Report, catalog: Catalog) -> list[str]:
    """One line for each of a user's modelled rows whose cells read as given but disagree with
    each other, the likely slips of transcribing a benchmark's summary (nothing is changed: the
    row is scored as written), and one for ids given to more than one row:

    replicas   the system's name counts G GPUs (system_gpu_count) and the row's layout times its
               `replicas` runs another number: an empty `replicas` on `8xMI355X` reads the system's
               whole rate and throughput as one TP1 copy's
    dataset    the row names an MLPerf dataset whose benchmark is another model's architecture than
               the row's (Llama-3.1-405B on mlperf-llama2-70b): the lengths are that benchmark's"""
    out = []
    ids = collections.Counter([r.row.row_id for r in report.results] + [s.row.row_id for s in report.skipped])
    twice = sorted(i for i, n in ids.items() if n > 1)
    if twice:
        out.append(
            f"{report.measurements or 'measurements'}: {len(twice)} id{'s' if len(twice) != 1 else ''} given to more than one row "
            f"({', '.join(repr(i) for i in twice[:5])}{', ...' if len(twice) > 5 else ''}): the rows are scored apart, but a row named by its id is not one row"
        )
    for r in report.results:
        row = r.row
        if row.mode != "agg" or r.copy_of:
            continue
        count = system_gpu_count(row.system)
        per_replica = max(row.tp, 1) * max(row.pp, 1)
        if count and per_replica * row.replicas != count:
            n = count // per_replica
            hint = f"; replicas {n} if the system ran {n} cop{'ies' if n != 1 else 'y'} of the layout" if count % per_replica == 0 else ""
            out.append(
                f"{report.measurements or 'measurements'}: row {row.row_id!r}: system {row.system!r} counts {count} GPUs, the row's layout "
                f"x replicas {per_replica} x {row.replicas} = {per_replica * row.replicas} (the system's rate and throughput are divided "
                f"among `replicas` copies{hint})"
            )
        if row.dataset and row.dataset.startswith("mlperf-"):
            from .datasets import mlperf_benchmark_base

            base = mlperf_benchmark_base(row.dataset.removeprefix("mlperf-"))
            entry = catalog.find_model(base) or catalog.match_model(base)
            if entry is not None and entry.name != r.model and _architecture(catalog, entry.name) != _architecture(catalog, r.model):
                out.append(
                    f"{report.measurements or 'measurements'}: row {row.row_id!r}: model {r.model} on dataset {row.dataset}, MLPerf's benchmark of "
                    f"{entry.name}: the row is read with that benchmark's lengths (and latency bounds)"
                )
    return out


def _architecture(catalog: Catalog, name: str) -> tuple | None:
    """What makes two catalog models one network (a checkpoint's format aside)."""
    try:
        m = catalog.model(name)
    except SizerError:
        return None
    return (m.num_hidden_layers, m.hidden_size, m.num_attention_heads, m.num_key_value_heads, m.num_experts, m.intermediate_size)


def _layout_label(res: Resolved) -> str:
    if res.prefill_layout is not None:
        return f"prefill {res.prefill_workers}x[{res.prefill_layout.label()}] decode {res.decode_workers}x[{res.layout.label()}]"
    return res.layout.label()


def validate_shipped(catalog: Catalog, *, efficiency: EfficiencyTable | None = None) -> Report:
    """The shipped measurement table, split into fit and score rows."""
    from .measurements import shipped_split

    rows, roles = shipped_split(catalog)
    report = validate_rows(rows, catalog, efficiency=efficiency, roles=roles, label=str(catalog.root / "measurements"))
    return report if efficiency is not None else with_coverage(report, catalog)


def with_coverage(report: Report, catalog: Catalog) -> Report:
    """The report with the coverage of sizer's 80 % error bands (sizer/evidence.py), each row
    scored against a band built without it:

    shipped table   leave one configuration out over the scoring rows (each under its device's
                    basis), and leave one device out under global factors alone (as for a device
                    with no rows of its own)
    a user's file   every row against the band of its device and engine from the catalog's scoring
                    rows, less any of the row's own configuration"""
    from dataclasses import replace

    from .evidence import BAND, error_model, held_out_coverage, coverage_of, measured_devices

    model = error_model(catalog)
    measured = measured_devices(efficiency_table(catalog.root))
    if report.roles_used:
        loco, lodo = held_out_coverage(model, measured)
        cov = {
            "interval_coverage": _round(loco.overall, 4),
            "interval_coverage_by_metric": {m: _round(v, 4) for m, v in loco.by_metric().items()},
            "interval_coverage_held_out_devices": _round(lodo.overall, 4),
            "interval_coverage_held_out_devices_by_metric": {m: _round(v, 4) for m, v in lodo.by_metric().items()},
            "interval_figures": sum(loco.total.values()),
            "interval_method": (
                f"share of the scoring rows' figures (mean TPOT, mean TTFT, throughput; each counts once) inside the "
                f"{BAND[0]:g}-{BAND[1]:g} quantiles of the model's log error, the band built with the row's own configuration "
                "left out; held-out devices: each device's rows under global factors against a band built without the device; "
                "a rate row (Poisson arrivals) by its step at the running batch it measured, without TTFT"
            ),
        }
    else:
        steps = rate_row_steps_s([r.row for r in report.results], catalog, efficiency_table(catalog.root))
        c = coverage_of(model, report.results, measured, steps)
        cov = {
            "interval_coverage": _round(c.overall, 4),
            "interval_coverage_by_metric": {m: _round(v, 4) for m, v in c.by_metric().items()},
            "interval_figures": sum(c.total.values()),
            "interval_method": (
                f"share of these rows' figures inside the {BAND[0]:g}-{BAND[1]:g} quantiles of the model's log error for their "
                f"device and engine, from the catalog's {model.n:,} scoring rows (none of these rows' configurations among them); "
                "a rate row (Poisson arrivals) by its step at the running batch it measured, without TTFT"
            ),
        }
    return replace(report, coverage=cov)


def _pct(values: list[float], q: float) -> float | None:
    """The q-th percentile (linear interpolation); infinite where it falls on or next to an
    infinite value (numpy would give nan between two)."""
    if not values:
        return None
    v = np.sort(np.asarray(values, dtype=float))
    pos = q / 100.0 * (len(v) - 1)
    lo, hi = int(math.floor(pos)), int(math.ceil(pos))
    if not (math.isfinite(v[lo]) and math.isfinite(v[hi])):
        return math.inf
    return float(v[lo] + (v[hi] - v[lo]) * (pos - lo))


@dataclass(frozen=True, slots=True, kw_only=True)
class Stats:
    n: int
    median_ape: dict[str, float | None]
    p90_ape: dict[str, float | None]
    counts: dict[str, int]


def stats(results: Iterable[RowResult]) -> Stats:
    """Median and p90 APE per metric over `results`, each run once: a row that copies another
    (RowResult.copy_of) is left out, its original counts."""
    results = [r for r in results if r.copy_of is None]
    med, p90, counts = {}, {}, {}
    for m in METRICS:
        values = [a for a in (r.ape(m) for r in results) if a is not None]
        med[m] = _pct(values, 50)
        p90[m] = _pct(values, 90)
        counts[m] = len(values)
    return Stats(n=len(results), median_ape=med, p90_ape=p90, counts=counts)


def _conditions(r: RowResult) -> tuple:
    """What a measurement was taken under, as far as the row records it: rows equal here measured
    the same thing."""
    x = r.row
    return (r.model, r.device, x.engine.lower(), x.engine_version, r.weight_dtype, r.kv_dtype, x.mode, x.kind, r.layout, x.dataset or "", x.isl, x.osl, x.concurrency, x.request_rate_rps)


def repeatability(results: Iterable[RowResult]) -> dict:
    """How far the measurements disagree with themselves: rows of the same recorded conditions
    (model, device, engine and release, formats, layout, lengths, load) that report different
    figures, each distinct figure taken as a prediction of every other (APE |a - b| / b, both ways).
    A row copied from one source into another (the same figure twice) is one measurement, not a
    repeat. No model can be scored closer than this: it is the spread of what the rows leave
    unrecorded (run length, warm-up, harness, host)."""
    groups: dict[tuple, list[RowResult]] = {}
    for r in results:
        groups.setdefault(_conditions(r), []).append(r)
    out: dict[str, dict] = {}
    for m in METRICS:
        apes: list[float] = []
        n_groups = 0
        for rows in groups.values():
            values = {v for v in (r.measured(m) for r in rows) if v is not None and v > 0}
            if len(values) < 2:
                continue
            n_groups += 1
            apes.extend(abs(a - b) / b * 100.0 for a in values for b in values if a != b)
        out[m] = {"groups": n_groups, "pairs": len(apes), "median_ape": _round(_pct(apes, 50)), "p90_ape": _round(_pct(apes, 90))}
    return out


GROUPS = (
    ("device", lambda r: r.device),
    ("engine", lambda r: r.row.engine),
    ("model", lambda r: r.model),
    ("architecture", lambda r: "moe" if r.moe else "dense"),
    # the loop the row was measured under: closed loop of clients, Poisson rate (MLPerf Server,
    # Interactive), every request at once (offline, batch), disaggregated serving
    ("kind", lambda r: "disagg" if r.row.mode == "disagg" else r.row.kind),
)


def bounded_rates(report: Report, role: str | None = "score") -> dict | None:
    """The runs at the largest rate within their p99 bounds (MLPerf Server, Interactive) of `role`,
    each run once: the model's largest rate within the same bounds against the rate submitted.
    `n`, `median_ape` and `p90_ape` (percent) and `median_log_ratio` (log(model / submitted):
    above 0, the model would size a replica for more than the run sustained); None without such
    runs."""
    runs = [r for r in report.results if r.predicted_max_rate_rps is not None and r.copy_of is None and (role is None or r.role == role)]
    pairs = [(r.predicted_max_rate_rps, r.row.request_rate_rps) for r in runs if r.row.request_rate_rps]
    if not pairs:
        return None
    apes = [abs(p / m - 1.0) * 100.0 for p, m in pairs]
    logs = [math.log(p / m) if p > 0 else -math.inf for p, m in pairs]
    return {
        "n": len(pairs),
        "median_ape": _round(_pct(apes, 50)),
        "p90_ape": _round(_pct(apes, 90)),
        "median_log_ratio": _round(_pct(logs, 50), 4),
        "edge_sensitivity": edge_sensitivity(runs),
    }


def p99_errors(report: Report, role: str | None = "score") -> dict | None:
    """The model's p99 TTFT and TPOT (tail_latencies_s: the percentiles the planner sizes by)
    against the p99s the runs of `role` logged, each run once: `runs` with a p99 of the model's to
    score, and per metric `n`, `median_ape` and
    `p90_ape` (percent) and `median_log_ratio` (log(predicted / measured): above 0, sizer's p99 is
    above the measured, the conservative side); `not_modelled`: runs that logged a p99 the model
    has no percentile for (closed loops, batches, disaggregated serving: the planner's tail model
    is that of Poisson arrivals at one aggregated replica). None where no run logged a p99."""
    runs = [r for r in report.results if r.copy_of is None and (role is None or r.role == role) and (r.row.ttft_p99_ms or r.row.tpot_p99_ms)]
    if not runs:
        return None
    out: dict = {}
    for metric in ("ttft", "tpot"):
        pairs = [
            (getattr(r, f"predicted_{metric}_p99_ms"), getattr(r.row, f"{metric}_p99_ms"))
            for r in runs
            if getattr(r.row, f"{metric}_p99_ms") and getattr(r, f"predicted_{metric}_p99_ms") is not None
        ]
        apes = [r.p99_ape(metric) for r in runs if r.p99_ape(metric) is not None]
        logs = [math.log(p / m) if math.isfinite(p) and p > 0 else math.inf for p, m in pairs]
        out[metric] = {
            "n": len(pairs),
            "median_ape": _ape_figure(_pct(apes, 50)),
            "p90_ape": _ape_figure(_pct(apes, 90)),
            "median_log_ratio": _round(_pct(logs, 50), 4),
        }
    modelled = sum(1 for r in runs if r.predicted_ttft_p99_ms is not None or r.predicted_tpot_p99_ms is not None)
    out["runs"] = modelled
    out["not_modelled"] = len(runs) - modelled
    return out


EDGE_SHARE = 0.95
"""Where a bound run's latencies are also predicted (RowResult.predicted_*_below_edge): this share
of the model's largest rate, a rate error about the size of the largest rate's own (median 4.3 %
on the 36 scoring runs)."""


def edge_sensitivity(runs: list[RowResult]) -> dict | None:
    """How far a bound run's predicted TTFT and TPOT (at the model's largest rate within its
    bounds) move at EDGE_SHARE of that rate: the median over `runs` of |figure at the edge -
    figure below it| / figure at the edge, in percent. Near a replica's capacity the queue and the
    running batch grow steeply with the rate, so the latencies at the edge carry the rate's own
    error, amplified: what this says. None without such runs."""
    out: dict = {"rate_share": EDGE_SHARE}
    for metric, at, below in (("ttft", "predicted_ttft_ms", "predicted_ttft_ms_below_edge"), ("tpot", "predicted_tpot_ms", "predicted_tpot_ms_below_edge")):
        moves = [
            abs(getattr(r, at) - getattr(r, below)) / getattr(r, at) * 100.0
            for r in runs
            if getattr(r, below) is not None and getattr(r, at) and math.isfinite(getattr(r, at)) and math.isfinite(getattr(r, below))
        ]
        if not moves:
            return None
        out[f"{metric}_median_move_pct"] = _round(_pct(moves, 50), 1)
    return out


def summary(report: Report, role: str | None = "score") -> dict:
    """Median and p90 APE (percent) overall and by device, engine, model, dense/MoE and kind of run, for the
    rows of `role` (None: all rows)."""
    chosen = [r for r in report.results if role is None or r.role == role]
    out: dict = {"overall": _stats_dict(stats(chosen))}
    for name, key in GROUPS:
        groups: dict[str, list[RowResult]] = {}
        for r in chosen:
            groups.setdefault(key(r), []).append(r)
        out[f"by_{name}"] = {k: _stats_dict(stats(v)) for k, v in sorted(groups.items())}
    return out


def _round(x: float | None, nd: int = 2) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else round(float(x), nd)


def _ape_figure(x: float | None) -> float | None:
    """A percentile of APE as reported: rounded, infinite kept (the table prints inf, the JSON
    writer null)."""
    return x if x is not None and math.isinf(x) else _round(x)


def _stats_dict(s: Stats) -> dict:
    return {
        "n": s.n,
        "tpot_median_ape": _ape_figure(s.median_ape["tpot"]),
        "tpot_p90_ape": _ape_figure(s.p90_ape["tpot"]),
        "ttft_median_ape": _ape_figure(s.median_ape["ttft"]),
        "ttft_p90_ape": _ape_figure(s.p90_ape["ttft"]),
        "throughput_median_ape": _ape_figure(s.median_ape["throughput"]),
        "throughput_p90_ape": _ape_figure(s.p90_ape["throughput"]),
    }


def report_dict(report: Report) -> dict:
    """The JSON contract: `rows` (measured and predicted per row), `summary` (scoring rows:
    n, skipped, tpot/ttft median and p90 APE, throughput median and p90 APE), `by` groups,
    `fit_summary` (fit rows, shipped table only) and `skipped` (each with its reason)."""
    rows = []
    for r in report.results:
        rows.append(
            {
                "id": r.row.row_id,
                "role": r.role,
                "copy_of": r.copy_of,
                "model": r.model,
                "model_id": r.row.model_id,
                "device": r.device,
                "system": r.row.system,
                "engine": r.row.engine,
                "precision": r.row.precision,
                "weight_dtype": r.weight_dtype,
                "kv_dtype": r.kv_dtype,
                "mode": r.row.mode,
                "kind": r.row.kind,
                "layout": r.layout,
                "layout_from": r.row.layout_basis or None,
                "dataset": r.row.dataset,
                "isl": None if r.row.dataset else r.row.isl,
                "osl": None if r.row.dataset else r.row.osl,
                "concurrency": r.row.concurrency,
                "request_rate_rps": r.row.request_rate_rps,
                "request_rate_from": r.row.rate_basis or None,
                "measured_ttft_ms": _round(r.row.ttft_ms, 3),
                "measured_ttft_left_out": r.row.ttft_left_out or None,
                "predicted_ttft_ms": _round(r.predicted_ttft_ms, 3),
                "predicted_ttft_grouping_ms": _round(_finite(r.predicted_ttft_grouping_ms), 3),
                "measured_tpot_ms": _round(r.row.tpot_ms, 4),
                "predicted_tpot_ms": _round(r.predicted_tpot_ms, 4),
                "measured_tokens_per_s": _round(r.row.throughput_tokens_per_s, 2),
                "measured_tokens_per_s_from": r.row.throughput_basis or None,
                "predicted_tokens_per_s": _round(r.predicted_tokens_per_s, 2),
                "predicted_max_rate_rps": _round(r.predicted_max_rate_rps, 4),
                "ttft_bound_p99_ms": None if r.latency_bounds_ms is None else r.latency_bounds_ms[0],
                "tpot_bound_p99_ms": None if r.latency_bounds_ms is None else r.latency_bounds_ms[1],
                "predicted_ttft_ms_at_rate": _round(_finite(r.predicted_ttft_ms_at_rate), 3),
                "predicted_tpot_ms_at_rate": _round(_finite(r.predicted_tpot_ms_at_rate), 4),
                "predicted_ttft_ms_below_edge": _round(_finite(r.predicted_ttft_ms_below_edge), 3),
                "predicted_tpot_ms_below_edge": _round(_finite(r.predicted_tpot_ms_below_edge), 4),
                "ttft_ape": _round(r.ape("ttft")),
                "tpot_ape": _round(r.ape("tpot")),
                "throughput_ape": _round(r.ape("throughput")),
                "measured_ttft_p99_ms": _round(r.row.ttft_p99_ms, 3),
                "predicted_ttft_p99_ms": _round(_finite(r.predicted_ttft_p99_ms), 3),
                "ttft_p99_ape": _round(r.p99_ape("ttft")),
                "measured_tpot_p99_ms": _round(r.row.tpot_p99_ms, 4),
                "predicted_tpot_p99_ms": _round(_finite(r.predicted_tpot_p99_ms), 4),
                "tpot_p99_ape": _round(r.p99_ape("tpot")),
                "source": r.row.source,
            }
        )
    score = summary(report, "score")
    head = dict(score["overall"])
    head["skipped"] = len(report.skipped)
    head["copies"] = sum(1 for r in report.results if r.role == "score" and r.copy_of is not None)
    head["ttft_left_out"] = sum(1 for r in report.results if r.role == "score" and r.row.ttft_left_out)
    head["bounded_rate"] = bounded_rates(report, "score" if report.roles_used else None)
    head["p99"] = p99_errors(report, "score" if report.roles_used else None)
    if report.coverage is not None:
        head.update(report.coverage)
    out = {
        "measurements": report.measurements,
        "efficiency": report.efficiency_source,
        "summary": head,
        "by": {k: v for k, v in score.items() if k != "overall"},
        "rows": rows,
        "skipped": [{"id": s.row.row_id, "model_id": s.row.model_id, "system": s.row.system, "engine": s.row.engine, "reason": s.reason} for s in report.skipped],
    }
    out["warnings"] = list(report.warnings)
    out["repeatability"] = repeatability(report.results)
    if report.roles_used:
        out["fit_summary"] = summary(report, "fit")["overall"]
        out["roles"] = {"fit": sum(1 for r in report.results if r.role == "fit"), "score": sum(1 for r in report.results if r.role == "score")}
    return out


def to_json(report: Report) -> str:
    return tables_to_json(report_dict(report))



# ---------------------------------------------------------------------------------------------
# Rendering (the CLI prints what these return)
# ---------------------------------------------------------------------------------------------

_SUMMARY_COLUMNS: list[Column] = [
    ("group", "group", ""),
    ("n", "n", "{:,}"),
    ("tpot_median_ape", "TPOT med %", "{:.1f}"),
    ("tpot_p90_ape", "TPOT p90 %", "{:.1f}"),
    ("ttft_median_ape", "TTFT med %", "{:.1f}"),
    ("ttft_p90_ape", "TTFT p90 %", "{:.1f}"),
    ("throughput_median_ape", "thr med %", "{:.1f}"),
    ("throughput_p90_ape", "thr p90 %", "{:.1f}"),
]
_ROW_COLUMNS: list[Column] = [
    ("id", "id", ""),
    ("role", "role", ""),
    ("model", "model", ""),
    ("device", "device", ""),
    ("engine", "engine", ""),
    ("weight_dtype", "weights", ""),
    ("layout", "layout", ""),
    ("isl_osl", "isl/osl", ""),
    ("concurrency", "N", "{:g}"),
    ("measured_ttft_ms", "TTFT meas", "{:,.1f}"),
    ("predicted_ttft_ms", "TTFT pred", "{:,.1f}"),
    ("measured_tpot_ms", "TPOT meas", "{:,.2f}"),
    ("predicted_tpot_ms", "TPOT pred", "{:,.2f}"),
    ("measured_tokens_per_s", "thr meas", "{:,.0f}"),
    ("predicted_tokens_per_s", "thr pred", "{:,.0f}"),
    ("ttft_ape", "TTFT %", "{:,.1f}"),
    ("tpot_ape", "TPOT %", "{:,.1f}"),
    ("throughput_ape", "thr %", "{:,.1f}"),
]
_SKIP_COUNT_COLUMNS: list[Column] = [("n", "rows", "{:,}"), ("reason", "reason", "")]
_SKIPPED_COLUMNS: list[Column] = [("id", "id", ""), ("model_id", "model", ""), ("system", "system", ""), ("engine", "engine", ""), ("reason", "reason", "")]
ROW_CHOICES = ("all", "score", "fit", "skipped", "none")


def _groups_table(groups: dict[str, dict]) -> str:
    return text_table([{"group": name, **st} for name, st in groups.items()], _SUMMARY_COLUMNS)


def skip_counts(report: Report) -> list[dict]:
    """The skipped rows counted by kind of reason, most frequent first."""
    counts: dict[str, int] = {}
    for s in report.skipped:
        kind = _reason_kind(s.reason)
        counts[kind] = counts.get(kind, 0) + 1
    return [{"n": n, "reason": reason} for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def render_table(report: Report, rows: str = "all") -> str:
    """The validation as text: summaries (scoring rows; fit rows for the shipped table), the
    skipped rows counted by reason, then the rows `rows` asks for one by one: all, score or fit
    (modelled rows), skipped (each skipped row and its reason) or none (the summary only)."""
    if rows not in ROW_CHOICES:
        raise ValueError(f"rows: expected one of {', '.join(ROW_CHOICES)}, got {rows!r}")
    d = report_dict(report)
    out = []
    roles = d.get("roles")
    head = f"measurements  {report.measurements}: {len(report.results):,} rows modelled"
    head += f" ({roles['fit']:,} fit, {roles['score']:,} score)" if roles else " (all scored: none was used to fit)"
    head += f", {len(report.skipped):,} skipped"
    n_copies = sum(1 for r in report.results if r.copy_of is not None)
    if n_copies:
        head += f"; {n_copies:,} repeat another row's run (the same figures under another file or label) and count once"
    out.append(head)
    # The path on a line of its own, the method wrapped under it: where the checkout lives must not move the line breaks.
    path, sep, method = report.efficiency_source.partition(" (")
    out.append(f"efficiency    {path}")
    if sep:
        out.append("\n".join(textwrap.wrap("(" + method, 100, initial_indent=" " * 14, subsequent_indent=" " * 14, break_on_hyphens=False)))
    out.append("error         absolute percentage error |predicted - measured| / measured: median and 90th percentile")
    bounded = sum(1 for r in report.results if r.predicted_max_rate_rps is not None)
    if bounded:
        out.append(
            f"bound runs    {bounded:,} MLPerf Server/Interactive runs: throughput predicted as the model's largest rate within "
            "their p99 bounds (catalogs/datasets.yaml latency_bounds), TTFT and TPOT at that rate"
        )
        b = bounded_rates(report, "score" if roles else None)
        if b is not None:
            signed = "" if b["median_log_ratio"] is None else f", model / submitted {math.exp(b['median_log_ratio']) - 1:+.1%} at the median"
            out.append(f"              largest rate against the submitted, {b['n']:,} {'scoring ' if roles else ''}runs: median {b['median_ape']:.1f} %, p90 {b['p90_ape']:.1f} %{signed}")
            e = b.get("edge_sensitivity")
            if e is not None:
                out.append(
                    f"              at {e['rate_share'] * 100:.0f} % of that rate the model's TTFT and TPOT move by a median {e['ttft_median_move_pct']:.0f} % and "
                    f"{e['tpot_median_move_pct']:.0f} %: the latencies at a run's edge carry the rate's own error, amplified"
                )
    out.append("")
    score = summary(report, "score")
    groups = {"overall": score["overall"]}
    for name, _ in GROUPS:
        for k, v in score[f"by_{name}"].items():
            groups[f"{name} {k}"] = v
    out.append("SCORING ROWS (never used to fit the efficiency factors)" if roles else "ROWS")
    out.append(_groups_table(groups).rstrip("\n"))
    tail = d["summary"]["p99"]
    if tail is not None:
        out.append("")
        out.append("P99 (the planner's TTFT and TPOT p99 under Poisson arrivals, what sizer solve holds against the SLO)")
        if tail["runs"]:
            out.append(f"  {tail['runs']:,} {'scoring ' if roles else ''}rate runs logged a p99, predicted at the rate of their means (an MLPerf run's: the model's largest within its bounds):")
            for metric in ("ttft", "tpot"):
                t = tail[metric]
                if t["n"]:
                    signed = "" if t["median_log_ratio"] is None else f", sizer / measured {math.exp(t['median_log_ratio']) - 1:+.1%} at the median"
                    out.append(f"  {metric.upper()} p99  {t['n']:,} runs: median {t['median_ape']:.1f} %, p90 {t['p90_ape']:.1f} %{signed}")
        if tail["not_modelled"]:
            out.append(f"  {tail['not_modelled']:,} runs logged a p99 the model has no percentile for (closed loops, batches, disaggregated serving)")
    if report.coverage is not None:
        c = report.coverage
        by = ", ".join(f"{m} {v:.2f}" for m, v in c["interval_coverage_by_metric"].items() if v is not None)
        out.append("")
        out.append("BANDS (80 %: the model's p10-p90 error, what sizer solve's bands use)")
        # (the line is formatted only where there is a figure: None has no :.3f)
        out.append(
            f"  interval_coverage {c['interval_coverage']:.3f} ({by}) over {c['interval_figures']:,} figures"
            if c["interval_coverage"] is not None
            else "  interval_coverage - (no figure to score)"
        )
        if "interval_coverage_held_out_devices" in c and c["interval_coverage_held_out_devices"] is not None:
            by_d = ", ".join(f"{m} {v:.2f}" for m, v in c["interval_coverage_held_out_devices_by_metric"].items() if v is not None)
            out.append(f"  held-out devices (global factors) {c['interval_coverage_held_out_devices']:.3f} ({by_d})")
        out.append(f"  how: {c['interval_method']}")
    rep = d["repeatability"]
    if any(v["pairs"] for v in rep.values()):
        out.append("")
        out.append("REPEATS (the measurements against themselves: rows of the same recorded conditions that report different figures)")
        for m, v in rep.items():
            if v["pairs"]:
                out.append(f"  {m:<10} median {v['median_ape']:.1f} %, p90 {v['p90_ape']:.1f} % over {v['pairs']:,} pairs in {v['groups']:,} groups")
        out.append("  how: each distinct figure taken as a prediction of the others; no model scores closer than the rows agree with themselves")
    if roles:
        out.append("")
        out.append("FIT ROWS (used by `sizer calibrate`; shown for comparison, not a score)")
        out.append(_groups_table({"overall": summary(report, "fit")["overall"]}).rstrip("\n"))
    if report.skipped:
        out.append("")
        hint = "" if rows == "skipped" else "; --rows skipped lists them"
        out.append(f"SKIPPED ({len(report.skipped):,} rows the model cannot describe, none dropped silently{hint})")
        out.append(text_table(skip_counts(report), _SKIP_COUNT_COLUMNS, indent="  ").rstrip("\n"))
    left_out = collections.Counter(_reason_kind(r.row.ttft_left_out) for r in report.results if r.row.ttft_left_out)
    if left_out:
        out.append("")
        out.append(f"TTFT LEFT OUT ({sum(left_out.values()):,} rows keep TPOT but not their mean TTFT, nor the throughput it implies; "
                   "`measured_ttft_left_out` in the JSON gives each row's reason)")
        for reason, n in sorted(left_out.items(), key=lambda kv: (-kv[1], kv[0])):
            out.append(f"  {n:>5,}  {reason}")
    if rows in ("all", "score", "fit"):
        chosen = [{**r, "isl_osl": r["dataset"] or f"{r['isl']:g}/{r['osl']:g}"} for r in d["rows"] if rows == "all" or r["role"] == rows]
        if chosen:
            out.append("")
            out.append("PER ROW (ms; tokens/s of the measured deployment)")
            out.append(text_table(chosen, _ROW_COLUMNS).rstrip("\n"))
    elif rows == "skipped" and report.skipped:
        out.append("")
        out.append("SKIPPED ROWS")
        out.append(text_table(d["skipped"], _SKIPPED_COLUMNS).rstrip("\n"))
    return "\n".join(out) + "\n"


_MEASURED_ON_PREFIX = re.compile(r"measured \d{4}-\d{2}-\d{2}( to \d{4}-\d{2}-\d{2})?, ")


def _reason_kind(reason: str) -> str:
    """A reason without its row-specific numbers, for counting (skipped rows, and rows whose mean
    TTFT is left out): a reason that opens with the row's measurement date counts without it."""
    dated = _MEASURED_ON_PREFIX.match(reason)
    if dated:
        return reason[dated.end() :]
    if reason.startswith("measured TPOT"):
        return "measured TPOT below the roofline of the stated configuration: speculative decoding, prefix caching or another layout than recorded"
    if reason.startswith("tp=") and "NVLink domain" in reason:
        return "tensor x attention-data parallelism spans more GPUs than one NVLink domain: cross-node parallelism not modelled"
    if " attention heads not divisible by tp=" in reason:
        return "attention heads not divisible by tp"
    if reason.startswith("inconsistent layout"):
        return "inconsistent layout: moe_tp x moe_ep differs from tp x attention_dp"
    if reason.startswith("no KV pool:"):
        return "no KV pool under the engine's default memory rule (weights fill it): the run's memory settings are not recorded"
    return reason.split(": ", 1)[0] if reason.startswith(("model ", "system ")) else reason
