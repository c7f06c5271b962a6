"""`sizer calibrate`: fit the named efficiency factors (sizer/efficiency.py) to measured serving
results and write them, with their provenance, to catalogs/efficiency.json.

The model of each factor f for a row on device d, engine e, weight format w:

    f(d, e, w) = link( theta_f + sum over the factor's levels L of delta_{f,L}[row's key at L] )

    link       logistic for fractions (kept in (0, 1)), exp for times and step counts
    levels     which groupings may move the factor (LEVELS below): a device's HBM, an engine's
               scheduler overhead, a weight format's GEMM efficiency, a device x engine pair ...

theta starts at a fixed prior, PRIOR_FACTORS below (never the table being replaced: two runs on
the same rows give the same bytes, and re-running does not drift); the deltas start at 0 and are
shrunk towards 0 by a ridge penalty (`RIDGE` per squared unit of log/logit), so a group with few
rows stays near its parents: a hierarchical (partial-pooling) estimate. The global values are
pulled towards the prior with weight `PRIOR`.

Objective: robust least squares on log(predicted / measured) of mean TPOT, mean TTFT and
output-token throughput over the fit rows, and on TTFT's no-queue floor where it lies above the
measured mean (`FLOOR_WEIGHT`) (weights `METRIC_WEIGHTS`; Huber loss with knee
`HUBER` in log units, no weight beyond `REJECT`, by iteratively reweighting), plus the ridge. Minimised by
Levenberg-Marquardt with a finite-difference Jacobian. Every row depends on exactly one
delta of each (factor, level) group, so one perturbed prediction per group fills that group's
columns: about 30 predictions per iteration, whatever the number of groups' members.

Only the fit rows of measurements.split_roles are used; the scoring rows never are.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import yaml

from .efficiency import COUNTS, FACTORS, FRACTIONS, TIMES, _TIME_KEYS, EfficiencyTable, Factors, architecture_of, version_label
from .measurements import Resolved, copies, resolve, shipped_split
from .validate import Setup, build_setup, measured_batch_step_s, predict, roofline_check, ttft_floor_s

# Which groupings may move each factor (beyond its global value).
D, E, W, A, V, X = "device", "engine", "weight_dtype", "architecture", "engine_version", "vendor"
_GEMM_LEVELS = ((X,), (D,), (E,), (W,), (A,), (W, A), (X, E), (D, E), (E, V), (D, E, V))
LEVELS: dict[str, tuple[tuple[str, ...], ...]] = {
    # (X,), (X, E): a vendor's devices share a software stack (ROCm and its vLLM and SGLang builds
    # against CUDA's) and what their datasheets count as peak; the global values are otherwise
    # NVIDIA's, fitted on 886 of the 953 fit rows: MI300X's vLLM FP8 dense GEMMs ran at 0.18-0.30
    # of its datasheet peak where H100-SXM's ran at 0.72, so an AMD device with no rows of its own
    # (MI325X, MI355X) was predicted at NVIDIA's efficiency (MI325X's four MLPerf v5.0 Offline
    # rows 27-40 % high; with the vendor level 16 % low, though never fitted to them). A vendor offset
    # and a device offset on the same rows share the move under the ridge: an AMD device without
    # rows takes the vendor's part of MI300X's offsets, not all of them (a sibling's offsets taken
    # whole predicted measured NVIDIA devices worse than the global values: H100-SXM from H200-SXM's,
    # TPOT median error 19 -> 37 %; MI325X from MI300X's, 30 % low)
    # No architecture-family level (gpus.yaml `family`: hopper, ada, cdna3 ...), though B200 and
    # GB200, the same silicon, fit prefill GEMM fractions apart (SGLang 0.19 / 0.48): three refits
    # of 2026-12-04 tried one, scored on the scoring rows (TTFT median / p90 %, 16.9 / 58.5 without)
    # and on the few-row devices whose families have no other rows to lend (L40S's TTFT median 18 %,
    # H100-NVL's 24 %, A100's throughput 9 %, MI350X's TTFT 20 %):
    #   family in place of vendor, every level                16.8 / 57.5; L40S 31, NVL 31, A100 12, MI350X 27
    #   family beside vendor, where the vendor is             17.1 / 59.7; L40S 26, NVL 30, A100 13, MI300X 18 -> 43
    #   beside vendor, fractions only (not the overheads)     16.5 / 57.5; L40S 22, NVL 27, A100 11, MI350X 22
    # A few-row device's own offsets and its vendor's predict it better than offsets shared with
    # its family's many-row siblings (H100-NVL and -PCIe with H100-SXM and H200-SXM); the second
    # also moved two MI300X DeepSeek-R1 fit rows past REJECT and their seven scoring rows from 9 to
    # 68 % TTFT error. The overall gains are the size of a change the fit does not need (README's
    # harness level, not kept, moved TTFT by 0.2 / 1.0 points)
    # (D, E, V): a device's software releases differ (ROCm vLLM 0.6 against 0.10 on MI300X) beyond
    # what the engine's release does on other devices; the offset of a release measured on a device
    # is that device's, and a release not measured there falls back to the nearest measured one
    # (efficiency.release_for), not to the average over the device's releases
    "hbm_bandwidth_fraction": ((X,), (D,), (E,), (X, E), (D, E), (D, E, V)),
    "expert_bandwidth_fraction": ((E,), (W,), (X, E), (D, E)),
    "kv_bandwidth_fraction": ((E,), (X,), (D,)),
    # an engine's release changes its GEMM and attention kernels too (ROCm vLLM 0.6 against 0.4 and
    # 0.7 on MI300X: the same device and engine a factor of several apart in prefill)
    # (A,), (W, A): a dense model's GEMMs are a few large matrices; an MoE's are grouped GEMMs over
    # experts that each see a fraction of the step's tokens (and MLA's attention runs other kernels):
    # one GEMM efficiency for both made the fit trade dense prefill against MoE prefill (Llama-3.1-70B
    # TTFT 40-80 % high on every engine and device while the MoE rows sat at their median)
    "compute_fraction": _GEMM_LEVELS,
    # prompt tokens' GEMMs apart from decode's (efficiency.py), grouped alike: without the release
    # levels the fit put MI300X's 2025-release prefill slowness on the device, every release
    "prefill_compute_fraction": _GEMM_LEVELS,
    "attention_compute_fraction": ((E,), (X,), (D,), (A,), (E, V), (D, E, V)),
    "link_bandwidth_fraction": (),  # not fitted: FIXED below
    "link_latency_s": ((E,),),
    "step_overhead_s": ((E,), (X, E), (D, E), (E, V), (D, E, V)),
    "sequence_overhead_s": ((E,),),
    "request_overhead_s": ((E,), (X, E), (D, E), (E, A), (E, V), (D, E, V)),
    "prefill_layer_overhead_s": ((E,), (X, E), (D, E), (E, A), (E, V), (D, E, V)),
    "admission_steps": ((E,), (E, V)),
    # prompt GEMMs under attention DP against an even spread over the ranks (efficiency.py): per
    # engine, and per architecture within it (MLA's attention runs other kernels)
    "attention_dp_prefill_factor": ((E,), (E, A)),
    # (E, V): whether a closed loop's clients stay in waves is the scheduler's doing, and releases
    # differ: aiconfigurator's SGLang 0.5.1 sweep of Qwen3-32B on H100 (fixed lengths) measured
    # 2.4 s and 8.9 s of mean TTFT at 128 clients, what a wave of 128 prompts queued behind one
    # another gives (16 and 64 prefill steps), where its SGLang 0.5.6 sweep of Llama-3.1-8B on
    # H200 measured under a second at 128-352 clients; one share for the engine made the fit give
    # 0.5.1 a request overhead of 0.8 s (its 16-client rows then 2-4x too slow); per release, 0.5.1
    # takes a share of 0.59 and 0.13 s (catalogs/efficiency.json of 2026-12-05)
    "burst_fraction": ((E,), (E, V)),
}
# Factors measured directly elsewhere, kept at the prior's value (the default entry) instead of
# fitted: serving data constrain them only weakly and the fit would trade them against others.
#   link_bandwidth_fraction: NCCL's effective NVLink bandwidth is ~370 GB/s of the 450 GB/s line
#   rate with protocol overhead, 0.82 (NVIDIA/nccl-tests#212, comment by NCCL maintainer sjeaugey).
FIXED = ("link_bandwidth_fraction",)
METRIC_WEIGHTS = {"tpot": 1.0, "ttft": 1.0, "throughput": 0.5}
# The floor of a row's TTFT: what its request would take with nothing ahead of it (the request
# overhead, the prompt prefilled alone, the KV transfer: validate.ttft_floor_s). A mean TTFT
# measured below it says the floor is too high, whatever the queueing on top; one measured above
# it says nothing (queues, waves, one-time costs in the window). So each fit row that measured
# TTFT adds a one-sided residual, log(floor / measured) where positive, never rejected: without
# it the fit set GB300's disaggregated TRT-LLM request overhead at 0.92 s, pulled up by rows of
# 4-10 s at 4-36 clients beside a row of 0.55 s at 4 clients (the fit's own), and scoring rows of
# the same layouts measured 0.24-0.55 s against a floor of 1.03-1.29 s; of the scoring runs whose
# TTFT the model over-predicted by more than 50 %, 41 of 90 measured under the floor.
FLOOR_WEIGHT = 1.0
HUBER = 0.25  # log units (about 28 %): larger residuals count linearly, not quadratically
# log units (a factor 3.3): larger residuals get no weight at all (a redescending M-estimate). The fit
# rows hold means no mechanism of the model produces: InferenceX's DeepSeek-R1 FP4 SGLang sweep of
# 2025-11-10 measured 7-9 s mean TTFT for 1k prompts at 32-128 clients (under 1 s at 16) with normal
# TPOT, its GB200/GB300 disaggregated sweeps 5-25 s at 3-7 clients beside 0.2-0.5 s rows of the same
# layouts: one-time costs (JIT compilation, first KV-transfer connections) inside the measured
# window. Under Huber alone such rows set GB300's disaggregated request overhead at its 1 s bound
# and over-predicted the same layouts' normal rows up to 4x.
REJECT = 1.2
RIDGE = 0.5  # penalty per squared delta (log/logit units), against a sum over ~1,000 rows
PRIOR = 0.5  # penalty per squared move of a global value from its prior
BOUNDS = {  # physical limits of the global values (link space is applied to these)
    "link_latency_s": (1e-6, 1e-3),
    "step_overhead_s": (1e-4, 0.1),
    "sequence_overhead_s": (1e-7, 1e-3),
    "request_overhead_s": (1e-3, 1.0),
    "prefill_layer_overhead_s": (1e-6, 1e-2),
    "admission_steps": (0.5, 4.0),
    "attention_dp_prefill_factor": (0.25, 8.0),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Loss:
    """The fit's objective: Huber knee and rejection point (log units), each metric's weight, the
    TTFT floor's weight and the ridge on the offsets. The defaults are the shipped table's;
    benchmarks/fit_sensitivity.py refits under others."""

    huber: float = HUBER
    reject: float = REJECT
    tpot: float = METRIC_WEIGHTS["tpot"]
    ttft: float = METRIC_WEIGHTS["ttft"]
    throughput: float = METRIC_WEIGHTS["throughput"]
    floor: float = FLOOR_WEIGHT
    ridge: float = RIDGE

    def weight(self, metric: str) -> float:
        return {"tpot": self.tpot, "ttft": self.ttft, "throughput": self.throughput, "floor": self.floor}[metric]

    def describe(self) -> str:
        return (
            f"robust (Huber, knee {self.huber:g} log units, no weight beyond {self.reject:g}) Levenberg-Marquardt on log(predicted/measured) of mean TPOT "
            f"(weight {self.tpot:g}), mean TTFT ({self.ttft:g}) and output throughput ({self.throughput:g}), and TTFT's no-queue floor where above the measurement ({self.floor:g}, never rejected)"
        )


PRIOR_FACTORS = Factors(
    # Round figures, each what a first reading of public measurements gives, fixed in code so that
    # the fit starts from the same point whatever table it replaces:
    hbm_bandwidth_fraction=0.8,  # streaming reads reach ~80 % of HBM peak (STREAM-like GEMV on H100/MI300X)
    expert_bandwidth_fraction=0.7,  # grouped expert GEMMs read less efficiently than one dense GEMM
    kv_bandwidth_fraction=0.9,  # paged-attention decode kernels stream KV near peak
    compute_fraction=0.5,  # large GEMMs at about half the dense datasheet peak
    prefill_compute_fraction=0.5,  # the same prior: the fit decides whether prompt GEMMs differ
    attention_compute_fraction=0.4,  # flash-attention prefill at ~40 % of the bf16 peak
    link_bandwidth_fraction=0.82,  # NCCL ~370 of 450 GB/s NVLink 4 (nvidia/nccl-tests#212); not fitted (FIXED)
    burst_fraction=0.1,  # 1 / BENCHMARK_WAVES (queueing.py): the first of ten waves arrives at once
    link_latency_s=20e-6,  # one small all-reduce, ~10-30 us
    step_overhead_s=3e-3,  # scheduling, launch gaps and sampling per engine step, a few ms
    sequence_overhead_s=5e-6,  # host bookkeeping per running sequence per step
    request_overhead_s=0.1,  # HTTP, tokenisation and the first scheduling pass, ~0.1 s
    prefill_layer_overhead_s=5e-4,  # eager prefill launches per layer
    admission_steps=1.0,  # a new request joins the step after the one under way
    attention_dp_prefill_factor=1.0,  # no difference until the rows say otherwise
)


def _to_link(name: str, value: float) -> float:
    if name in FRACTIONS:
        v = min(max(value, 1e-4), 1 - 1e-4)
        return math.log(v / (1 - v))
    return math.log(max(value, 1e-12))


def _from_link(name: str, x: np.ndarray) -> np.ndarray:
    if name in FRACTIONS:
        return 1.0 / (1.0 + np.exp(-x))
    return np.exp(x)


def _key(res: Resolved, level: tuple[str, ...]) -> tuple[str, ...]:
    values = {
        D: res.gpu.name,
        E: res.row.engine,
        W: res.weight_dtype,
        A: architecture_of(res.model),
        V: version_label(res.row.engine_version, res.row.engine),
        X: res.gpu.vendor,
    }
    return tuple(values[k] for k in level)


# How close to the rejection point a residual is reported as at risk (log units, on the loss's
# weighted residual): a change elsewhere in the fit moves a residual this much, and across the point
# its weight jumps between 0 and HUBER / REJECT. The family-level refit of 2026-12-04 moved two
# MI300X DeepSeek-R1 vLLM 0.7 fit rows from inside to 1.21 (past 1.2): their group's prefill
# fraction went 0.0098 -> 0.0223 and its seven scoring rows' TTFT error from 9 to 68 %.
NEAR_REJECT = 0.1
# A residual's log error is clipped to +-this (a factor 55), and a prediction with no finite value
# (an open loop saturated at a rate row's rate) counts as +this: one row cannot take the fit over.
LOG_ERROR_CLIP = 4.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Outlier:
    """A fit row's residual at or near the loss's rejection point, at the fit's final factors."""

    row_id: str
    metric: str  # tpot, ttft or throughput
    log_error: float  # log(predicted / measured)
    margin: float  # |weighted residual| - rejection point: > 0 no weight (rejected), else within NEAR_REJECT of it

    @property
    def rejected(self) -> bool:
        return self.margin > 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Group:
    factor: str
    level: tuple[str, ...]
    members: tuple[tuple[str, ...], ...]  # the keys seen in the fit rows
    first: int  # index of the first member's parameter
    row_member: np.ndarray  # per fit row: index into members


@dataclass(frozen=True, slots=True, kw_only=True)
class FitResult:
    table: EfficiencyTable
    theta: dict[str, float]  # global values, link space
    deltas: dict[tuple[str, tuple[str, ...]], dict[tuple[str, ...], float]]
    rows_fit: int
    iterations: int
    cost: float
    rms_log_error: dict[str, float]
    entry_rows: dict[tuple, int]
    entry_residual: dict[tuple, float]
    full_rows: dict[tuple, int] = None  # (device, engine, weight, architecture, release) -> fit rows
    vendors: dict[str, str] = None  # device -> vendor, of the fit rows
    loss: "Loss | None" = None  # the robust loss the fit ran under (None: the defaults)
    # fit rows' residuals beyond the rejection point (no weight: the fit ignored them) or within
    # NEAR_REJECT of it, by row and metric; the floors, never rejected, are not among them
    outliers: tuple[Outlier, ...] = ()
    residuals: int = 0  # the fit's residuals that can be rejected (TPOT, TTFT, throughput)


class _Problem:
    """The fit rows, their step models and the parameter layout."""

    def __init__(self, fit: list[Resolved], prior: Factors, loss: Loss = Loss()):
        self.fit = fit
        self.loss = loss
        self.setup: Setup = build_setup(fit)
        self.prior = prior
        self.names = list(FACTORS)
        self.groups: list[Group] = []
        n = len(self.names)
        for name in self.names:
            for level in LEVELS[name]:
                keys = [_key(r, level) for r in fit]
                members = tuple(sorted(set(keys)))
                index = {m: i for i, m in enumerate(members)}
                self.groups.append(
                    Group(factor=name, level=level, members=members, first=n, row_member=np.array([index[k] for k in keys], dtype=int))
                )
                n += len(members)
        self.size = n
        self.theta0 = np.zeros(n)
        for i, name in enumerate(self.names):
            self.theta0[i] = _to_link(name, getattr(prior, name))
        # residual layout: (metric, row index, measured log value, weight)
        rows, metric, target, weight = [], [], [], []
        for i, res in enumerate(fit):
            r = res.row
            for m, measured in (("tpot", r.tpot_ms), ("ttft", r.ttft_ms), ("throughput", r.throughput_tokens_per_s)):
                if measured is not None and measured > 0:
                    rows.append(i)
                    metric.append(m)
                    target.append(math.log(measured / (1000.0 if m != "throughput" else 1.0)))
                    weight.append(loss.weight(m))
        # The no-queue floor of each row that measured TTFT (FLOOR_WEIGHT): one residual more.
        for i, res in enumerate(fit):
            if res.row.ttft_ms and res.row.ttft_ms > 0:
                rows.append(i)
                metric.append("floor")
                target.append(math.log(res.row.ttft_ms / 1000.0))
                weight.append(loss.floor)
        self.res_row = np.array(rows, dtype=int)
        self.res_metric = np.array(metric)
        self.res_target = np.array(target)
        self.res_weight = np.array(weight)
        # Rate rows (MLPerf Server, Interactive) fit their TPOT by the step at the running batch
        # they measured, D = rate x (E[O] - 1) x TPOT (Little's law on their own figures), as
        # their error bands are built (validate.rate_row_steps_s): near a replica's capacity,
        # where submitters run, the TPOT at the rate carries the population the model solves
        # for, which turns a step a few per cent slow into a saturated replica and no gradient.
        self.rate_idx = np.array([i for i, res in enumerate(fit) if self.setup.kind[i] == 1 and res.row.tpot_ms], dtype=int)

    def factor_arrays(self, p: np.ndarray) -> dict[str, np.ndarray]:
        n_rows = len(self.fit)
        x = {name: np.full(n_rows, p[i]) for i, name in enumerate(self.names)}
        for g in self.groups:
            x[g.factor] = x[g.factor] + p[g.first + g.row_member]
        out = {}
        for name in self.names:
            v = _from_link(name, x[name])
            if name in BOUNDS:
                lo, hi = BOUNDS[name]
                v = np.clip(v, lo, hi)
            out[name] = v
        return out

    def residuals(self, p: np.ndarray) -> np.ndarray:
        """The weighted residuals the fit minimises (log_errors x sqrt(weight))."""
        return self.log_errors(p) * np.sqrt(self.res_weight)

    def log_errors(self, p: np.ndarray) -> np.ndarray:
        """Each residual's log(predicted / measured), unweighted (the floor's one-sided)."""
        arrays = self.factor_arrays(p)
        step = self.setup.step.with_factors(**arrays)
        pstep = self.setup.prefill_step.with_factors(**arrays)
        pred = predict(self.setup, step, pstep)
        tpot = pred.tpot_s
        if self.rate_idx.size:
            k = self.rate_idx
            tpot = tpot.copy()
            tpot[k] = measured_batch_step_s(self.setup, k, step)
        values = {"tpot": tpot, "ttft": pred.ttft_s, "throughput": pred.output_tokens_per_s, "floor": ttft_floor_s(self.setup, step, pstep)}
        out = np.empty(self.res_row.shape[0])
        for m, arr in values.items():
            sel = self.res_metric == m
            v = arr[self.res_row[sel]]
            with np.errstate(divide="ignore", invalid="ignore"):
                lr = np.log(np.where(np.isfinite(v) & (v > 0), v, np.nan)) - self.res_target[sel]
            lr = np.where(np.isfinite(lr), np.clip(lr, -LOG_ERROR_CLIP, LOG_ERROR_CLIP), LOG_ERROR_CLIP)
            out[sel] = np.maximum(lr, 0.0) if m == "floor" else lr  # a floor under the measurement costs nothing
        return out

    def penalty_weights(self) -> np.ndarray:
        w = np.full(self.size, self.loss.ridge)
        w[: len(self.names)] = PRIOR
        for i, name in enumerate(self.names):
            if name in FIXED:
                w[i] = 1e9  # pinned at the prior
        return w

    def jacobian(self, p: np.ndarray, r0: np.ndarray, eps: float = 1e-3) -> np.ndarray:
        J = np.zeros((r0.shape[0], self.size))
        for i, name in enumerate(self.names):
            if name in FIXED:
                continue
            q = p.copy()
            q[i] += eps
            J[:, i] = (self.residuals(q) - r0) / eps
        for g in self.groups:
            q = p.copy()
            q[g.first : g.first + len(g.members)] += eps
            d = (self.residuals(q) - r0) / eps
            member_of_res = g.row_member[self.res_row]
            J[np.arange(r0.shape[0]), g.first + member_of_res] = d
        return J


def _huber_weights(r: np.ndarray, huber: float = HUBER, reject: float = REJECT, keep: np.ndarray | None = None) -> np.ndarray:
    """IRLS weights of the robust loss: Huber (1 within HUBER, HUBER / |r| beyond), and 0 beyond
    REJECT: a residual of more than a factor e^REJECT is a measurement the model's mechanisms cannot
    produce for the stated configuration, and it pulls no factor. Residuals marked in `keep` (the
    floors: one-time costs only add to a measured mean TTFT, so a mean below its floor, however far,
    says the floor is wrong) are never rejected."""
    a = np.abs(r)
    w = np.where(a <= huber, 1.0, huber / np.maximum(a, 1e-12))
    rejected = a > reject if keep is None else (a > reject) & ~keep
    return np.where(rejected, 0.0, w)


def fit(fit_rows: list[Resolved], prior: Factors, *, max_iterations: int = 40, tolerance: float = 1e-5, progress=None, loss: Loss = Loss()) -> FitResult:
    """Fit the factors to `fit_rows` (resolved measurements) starting from `prior`, under `loss`."""
    prob = _Problem(fit_rows, prior, loss)
    p = prob.theta0.copy()
    pw = prob.penalty_weights()

    def cost(q: np.ndarray, w: np.ndarray) -> float:
        r = prob.residuals(q)
        return float(np.sum(w * r * r) + np.sum(pw * (q - prob.theta0) ** 2))

    mu = 1e-2
    floors = prob.res_metric == "floor"  # never rejected (FLOOR_WEIGHT)
    r = prob.residuals(p)
    w = _huber_weights(r, loss.huber, loss.reject, floors)
    c = cost(p, w)
    it = 0
    small = 0  # consecutive iterations that improved the cost by less than `tolerance`
    for it in range(1, max_iterations + 1):
        J = prob.jacobian(p, r)
        JW = J * w[:, None]
        A = J.T @ JW + np.diag(pw)
        g = J.T @ (w * r) + pw * (p - prob.theta0)
        improved = False
        for _ in range(12):
            step = np.linalg.solve(A + mu * np.diag(np.diag(A) + 1e-9), -g)
            q = p + np.clip(step, -2.0, 2.0)
            c_new = cost(q, w)
            if c_new < c:
                improved = True
                break
            mu *= 4.0
        if not improved:
            break
        rel = (c - c_new) / max(c, 1e-12)
        p = q
        r = prob.residuals(p)
        w = _huber_weights(r, loss.huber, loss.reject, floors)  # reweight (IRLS), then re-measure the cost under the new weights
        c = cost(p, w)
        mu = max(mu / 3.0, 1e-6)
        if progress:
            progress(it, c)
        # A step taken after the damping rose is short by construction, so one small gain is not
        # convergence: stop after three in a row (a single one stopped the fit of 2026-12-03 at cost
        # 72.72 in 10 iterations; on the same rows its continuation reached 72.53 in 20)
        small = small + 1 if rel < tolerance else 0
        if small >= 3:
            break
    return _result(prob, p, it, c)


def _result(prob: _Problem, p: np.ndarray, iterations: int, c: float) -> FitResult:
    theta = {name: float(p[i]) for i, name in enumerate(prob.names)}
    deltas: dict[tuple[str, tuple[str, ...]], dict[tuple[str, ...], float]] = {}
    for g in prob.groups:
        deltas[(g.factor, g.level)] = {m: float(p[g.first + j]) for j, m in enumerate(g.members)}
    r = prob.log_errors(p)
    rms = {m: float(np.sqrt(np.mean(r[prob.res_metric == m] ** 2))) if np.any(prob.res_metric == m) else float("nan") for m in METRIC_WEIGHTS}
    outliers, rejectable = _outliers(prob, r)
    # per-entry provenance: fit rows matching an entry, RMS of their TPOT/TTFT log errors
    per_row_sq = np.zeros(len(prob.fit))
    per_row_n = np.zeros(len(prob.fit))
    sel = np.isin(prob.res_metric, ("tpot", "ttft"))
    np.add.at(per_row_sq, prob.res_row[sel], r[sel] ** 2)
    np.add.at(per_row_n, prob.res_row[sel], 1)
    # rows that measured throughput only (MLPerf Offline, vLLM's benchmark_throughput): their throughput residual
    thr_only = (prob.res_metric == "throughput") & (per_row_n[prob.res_row] == 0)
    np.add.at(per_row_sq, prob.res_row[thr_only], r[thr_only] ** 2)
    np.add.at(per_row_n, prob.res_row[thr_only], 1)
    entry_rows: dict[tuple, int] = {}
    entry_sq: dict[tuple, float] = {}
    entry_n: dict[tuple, float] = {}
    for i, res in enumerate(prob.fit):
        for match in _matches_of(res):
            entry_rows[match] = entry_rows.get(match, 0) + 1
            entry_sq[match] = entry_sq.get(match, 0.0) + per_row_sq[i]
            entry_n[match] = entry_n.get(match, 0.0) + per_row_n[i]
    entry_residual = {k: math.sqrt(entry_sq[k] / entry_n[k]) for k in entry_rows if entry_n[k]}
    result = FitResult(
        table=EfficiencyTable(entries=()),
        theta=theta,
        deltas=deltas,
        rows_fit=len(prob.fit),
        iterations=iterations,
        cost=c,
        rms_log_error=rms,
        entry_rows=entry_rows,
        entry_residual=entry_residual,
        full_rows={
            (res.gpu.name, res.row.engine, res.weight_dtype, architecture_of(res.model), version_label(res.row.engine_version, res.row.engine)): 0 for res in prob.fit
        },
        vendors={res.gpu.name: res.gpu.vendor for res in prob.fit},
        loss=prob.loss,
        outliers=outliers,
        residuals=rejectable,
    )
    for res in prob.fit:
        key = (res.gpu.name, res.row.engine, res.weight_dtype, architecture_of(res.model), version_label(res.row.engine_version, res.row.engine))
        result.full_rows[key] += 1
    return result


def _outliers(prob: _Problem, log_errors: np.ndarray) -> tuple[tuple[Outlier, ...], int]:
    """The fit rows' residuals (`log_errors`, at the fit's final factors) that the robust loss gives
    no weight (beyond its rejection point) or that lie within NEAR_REJECT of it, each with its row
    id, metric and log error, the farthest first; and the number of residuals that can be rejected
    at all (the floors never are)."""
    reject = prob.loss.reject
    weighted = np.abs(log_errors * np.sqrt(prob.res_weight))  # what the loss weighs (prob.residuals)
    can = prob.res_metric != "floor"
    listed = np.flatnonzero(can & (weighted > reject - NEAR_REJECT))  # beyond the point, or near it
    out = [
        Outlier(row_id=prob.fit[prob.res_row[k]].row.row_id, metric=str(prob.res_metric[k]), log_error=float(log_errors[k]), margin=float(weighted[k] - reject))
        for k in listed
    ]
    return tuple(sorted(out, key=lambda o: (-o.margin, o.row_id, o.metric))), int(can.sum())


def outlier_lines(result: FitResult) -> list[str]:
    """What `sizer calibrate` reports of the robust loss: how many residuals of the fit rows it gave
    no weight (the fit ignored those measurements), and how many lie near that point; then each,
    by row id, metric and predicted / measured. A user's row the fit ignored is named, not lost."""
    loss = result.loss or Loss()
    dropped = [o for o in result.outliers if o.rejected]
    near = [o for o in result.outliers if not o.rejected]
    rows = len({o.row_id for o in dropped})
    metrics = (("tpot", "TPOT"), ("ttft", "TTFT"), ("throughput", "throughput"))
    factors = ", ".join(f"{math.exp(loss.reject / math.sqrt(loss.weight(m))):.1f} on {label}" for m, label in metrics if loss.weight(m) > 0)
    lines = [
        f"robust loss: {len(dropped):,} of {result.residuals:,} fit-row residuals got no weight, on {rows:,} rows (predicted / measured "
        f"beyond a factor {factors}: a measurement the model's mechanisms do not produce for the stated configuration); "
        f"{len(near):,} more lie within {NEAR_REJECT:g} log units of that point, where a change elsewhere in the fit can move them across it"
    ]
    for o in result.outliers:
        # a log error at the fit's clip (LOG_ERROR_CLIP) is at least that far off: an open loop
        # saturated at the row's rate has no finite TTFT at all
        bound = ">=" if o.log_error >= LOG_ERROR_CLIP else "<=" if o.log_error <= -LOG_ERROR_CLIP else ""
        ratio = f"{bound}{math.exp(o.log_error):.3g}"
        lines.append(f"  {'no weight' if o.rejected else 'near':<9}  {o.metric:<10}  predicted / measured {ratio:>8}  {o.row_id}")
    return lines


def _matches_of(res: Resolved) -> list[tuple]:
    d, e, w, a, x = res.gpu.name, res.row.engine, res.weight_dtype, architecture_of(res.model), res.gpu.vendor
    v = version_label(res.row.engine_version, res.row.engine)
    return [
        (),
        (("engine", e),),
        (("device", d),),
        (("device", d), ("engine", e)),
        (("vendor", x),),
        (("vendor", x), ("engine", e)),
        (("vendor", x), ("engine", e), ("architecture", a)),
        (("vendor", x), ("engine", e), ("architecture", a), ("engine_version", v)),
        (("engine", e), ("architecture", a)),
        (("engine", e), ("engine_version", v)),
        (("engine", e), ("architecture", a), ("engine_version", v)),
        (("device", d), ("engine", e), ("weight_dtype", w)),
        (("device", d), ("engine", e), ("weight_dtype", w), ("architecture", a)),
        (("device", d), ("engine", e), ("weight_dtype", w), ("architecture", a), ("engine_version", v)),
    ]


def factor_value(result: FitResult, name: str, match: dict[str, str]) -> float | None:
    """The factor for an entry matching `match` (keys device/vendor/engine/weight_dtype/...): the
    global value plus every delta whose level's keys the match holds (a device's match holds its
    vendor: a device entry composes its vendor's offsets); None if no level of the factor
    applies to the match (so a less specific entry gives it)."""
    x = result.theta[name]
    used = not match
    if "device" in match and "vendor" not in match and match["device"] in (result.vendors or {}):
        match = {**match, "vendor": result.vendors[match["device"]]}
    for level in LEVELS[name]:
        if all(k in match for k in level):
            member = tuple(match[k] for k in level)
            delta = result.deltas[(name, level)].get(member)
            if delta is not None:
                x += delta
                used = True
    if not used:
        return None
    v = float(_from_link(name, np.array(x)))
    if name in BOUNDS:
        lo, hi = BOUNDS[name]
        v = min(max(v, lo), hi)
    return v


def _yaml_value(name: str, value: float) -> tuple[str, float]:
    if name in _TIME_KEYS:
        key, scale = _TIME_KEYS[name]
        return key, round(value / scale, 4)
    if name in COUNTS:
        return name, round(value, 4)
    return name, round(value, 5)


def write_efficiency(
    result: FitResult,
    path: Path | str,
    *,
    combos: list[tuple[str, ...]],
    rows_total: int,
    measurements: str,
    fitted: str | None = None,
    versions: list[tuple[str, str]] | None = None,
    copies: int = 0,
) -> str:
    """Write the fitted factors to `path` (efficiency.json; YAML when the name ends otherwise) and
    return the text.

    Entries: the default; one per engine, device, device x engine, engine x architecture,
    engine x release; one per (device,
    engine, weight format[, architecture[, release]]) in `combos` (every combination of the
    measurement table, the scoring rows' included: their values come from offsets fitted on fit
    rows only), and for a device with fit rows its (engine, format) at every architecture the
    engine ran on any device; and for each vendor with fit rows, one per vendor, vendor x engine, vendor x
    engine x architecture[ x release]: the entries a device with none of its own takes
    (efficiency.py); a device entry composes its vendor's offsets (factor_value). Each entry
    lists the factors some level of the entry's keys moves, with `rows` (fit rows it matches) and
    `residual` (RMS log error of their TPOT and TTFT)."""
    fitted = fitted or _dt.date.today().isoformat()
    # a device with no fit rows gets no entry of its own: its entries would hold no offset of
    # its own, only for the formats the table measured on it (MI325X: dense FP8, so its MLA-MoE
    # plan ran at a dense model's GEMM efficiency); its vendor's entries cover every format
    all_combos = sorted({c[:4] for c in combos})
    measured = {d for (d, *_), n in result.full_rows.items() if n}
    full_combos = [c for c in combos if len(c) == 5 and c[0] in measured]
    combos = sorted({c[:4] for c in combos if c[0] in measured})
    # a measured device's (engine, format) at every architecture its engine ran elsewhere: without
    # its own entry such a lookup fell to the (device, engine, format) entry, which holds no
    # architecture offset (no level of it applies), and ran an MoE at the device's average over
    # the architectures it was measured on with none of them: Mixtral-8x7B FP8 on MI300X under
    # vLLM (measured there: dense and MLA-MoE models only) took a compute fraction of 0.053, a
    # quarter of the dense models' 0.197 measured on the same device and engine
    engine_archs = sorted({(e, a) for _, e, _, a in all_combos})
    combos = sorted(set(combos) | {(d, e, w, a) for d, e, w, _ in combos for e2, a in engine_archs if e2 == e})
    matches: list[dict[str, str]] = [{}]
    engines = sorted({e for _, e, _, _ in all_combos})
    devices = sorted({d for d, _, _, _ in combos})
    matches += [{"engine": e} for e in engines]
    matches += [{"device": d} for d in devices]
    matches += [{"device": d, "engine": e} for d, e in sorted({(d, e) for d, e, _, _ in combos})]
    matches += [{"engine": e, "architecture": a} for e, a in engine_archs]
    matches += [{"engine": e, "engine_version": v} for e, v in sorted(versions or ()) if v]
    # engine x architecture x release: a device with no entry of its own (L4, A100 ...) takes the
    # release's offsets with the architecture's (an {engine, architecture} entry would otherwise
    # outrank the {engine, engine_version} one and drop the release)
    engine_releases: dict[str, set[str]] = {}
    for (_, e, _, _, v), n in result.full_rows.items():
        if v and n:
            engine_releases.setdefault(e, set()).add(v)
    matches += [
        {"engine": e, "architecture": a, "engine_version": v} for e, a in engine_archs for v in sorted(engine_releases.get(e, ()))
    ]
    matches += [{"device": d, "engine": e, "weight_dtype": w} for d, e, w in sorted({(d, e, w) for d, e, w, _ in combos})]
    matches += [{"device": d, "engine": e, "weight_dtype": w, "architecture": a} for d, e, w, a in sorted({c[:4] for c in combos})]
    # with the release: a factor some (engine, engine_version) level moves composes with the rest;
    # every (device, engine, format, architecture) at every release with fit rows on that device and
    # engine, so a lookup that falls back to the nearest measured release (efficiency.release_for)
    # finds its full entry
    fitted_releases: dict[tuple[str, str], set[str]] = {}
    for (d, e, w, a, v), n in result.full_rows.items():
        if v and n:
            fitted_releases.setdefault((d, e), set()).add(v)
    full = {c for c in full_combos or () if c[4]}
    full |= {(d, e, w, a, v) for d, e, w, a in combos for v in fitted_releases.get((d, e), ())}
    matches += [{"device": d, "engine": e, "weight_dtype": w, "architecture": a, "engine_version": v} for d, e, w, a, v in sorted(full)]
    # a vendor's entries, for its devices without entries of their own (efficiency.py): every
    # architecture an engine ran, at each release with fit rows on the vendor's devices under that
    # engine. Without the weight format: a format offset is fitted beside the device offsets of the
    # devices that run it (NVFP4: Blackwell's alone), so without them it carries part of theirs;
    # left out one at a time, GB300 and H100-NVL predicted from vendor entries with the format
    # came out worse than from the device-neutral ones (GB300 TTFT median 40 -> 59 %, p90 130 ->
    # 203 %; H100-NVL TPOT p90 70 -> 386 %), and as well without it (37 % / 121 %; 71 %)
    vendor_of = result.vendors or {}
    vendor_releases: dict[tuple[str, str], set[str]] = {}
    for (d, e, w, a, v), n in result.full_rows.items():
        if v and n:
            vendor_releases.setdefault((vendor_of[d], e), set()).add(v)
    for x in sorted(set(vendor_of.values())):
        matches += [{"vendor": x}]
        matches += [{"vendor": x, "engine": e} for e in engines]
        matches += [{"vendor": x, "engine": e, "architecture": a} for e, a in engine_archs]
        matches += [{"vendor": x, "engine": e, "architecture": a, "engine_version": v} for e, a in engine_archs for v in sorted(vendor_releases.get((x, e), ()))]
    entries = []
    for m in matches:
        values = {}
        for name in FACTORS:
            v = factor_value(result, name, m)
            if v is not None:
                k, val = _yaml_value(name, v)
                values[k] = val
        if not values:
            continue
        entry: dict = {"match": dict(m)}
        entry.update(values)
        entry["rows"] = result.entry_rows.get(_match_key(m), 0)
        if _match_key(m) in result.entry_residual:
            entry["residual"] = round(result.entry_residual[_match_key(m)], 4)
        entries.append(entry)
    doc = {
        "source": (
            f"sizer calibrate: fitted to the {result.rows_fit} fit rows of {measurements} "
            f"({rows_total} modelled rows"
            + (f", {copies} of them copies of another row's run, counted once" if copies else "")
            + f"; the other {rows_total - copies - result.rows_fit} are the scoring rows of `sizer validate`, never fitted)"
        ),
        "fitted": fitted,
        "method": (
            (result.loss or Loss()).describe()
            + "; hierarchical offsets by vendor, device, engine, "
            "weight format, architecture, engine release and their pairs (LEVELS in sizer/calibrate.py), "
            f"ridge {(result.loss or Loss()).ridge:g} per squared offset, prior weight {PRIOR}; {result.iterations} iterations; "
            + ", ".join(f"RMS log error {m} {v:.3f}" for m, v in result.rms_log_error.items())
        ),
        "notes": [
            "Times are in the unit their key names (link_latency_us, step_overhead_ms, sequence_overhead_us, request_overhead_ms).",
            "For a (device, engine, weight_dtype) each factor comes from the most specific entry that gives it (sizer/efficiency.py).",
            "rows: fit rows the entry matches; residual: their RMS log error (TPOT and TTFT; throughput for rows that measured only throughput). rows 0: values composed from offsets fitted on other rows.",
        ],
        "entries": entries,
    }
    if str(path).endswith(".json"):
        doc["notes"].insert(0, "Written by `sizer calibrate` (sizer/calibrate.py); edit by re-running it, not by hand.")
        text = json.dumps(doc, indent=1) + "\n"
    else:
        text = "# Written by `sizer calibrate` (sizer/calibrate.py); edit by re-running it, not by hand.\n" + yaml.safe_dump(doc, sort_keys=False, width=140)
    Path(path).write_text(text, encoding="utf-8")
    return text


def _match_key(m: dict[str, str]) -> tuple:
    order = ("device", "vendor", "engine", "weight_dtype", "architecture", "engine_version")
    return tuple((k, m[k]) for k in order if k in m)


__all__ = ["FitResult", "LEVELS", "Loss", "NEAR_REJECT", "Outlier", "PRIOR_FACTORS", "outlier_lines", "fit", "write_efficiency", "factor_value", "TIMES"]


@dataclass(frozen=True, slots=True)
class ShippedRuns:
    """The shipped measurement table resolved to models, devices and layouts and past the
    roofline check (validate.roofline_check), with each row's role (measurements.split_roles)
    and the rows that repeat another's run (measurements.copies: row id -> the one kept)."""

    resolved: list[Resolved]
    roles: dict[str, str]
    copy_of: dict[str, str]

    @property
    def fit_rows(self) -> list[Resolved]:
        """The rows the shipped factors are fitted to: fit rows, each run once."""
        return [r for r in self.resolved if self.roles[r.row.row_id] == "fit" and r.row.row_id not in self.copy_of]


def runs_of(rows, catalog, roles: dict[str, str]) -> ShippedRuns:
    """Measurement rows resolved against the catalog and past the roofline check, with their roles
    (row id -> fit / score) and the rows that repeat another's run (ShippedRuns)."""
    resolved = [r for r in (resolve(x, catalog) for x in rows) if isinstance(r, Resolved)]
    resolved, _ = roofline_check(resolved)
    return ShippedRuns(resolved=resolved, roles=roles, copy_of=copies([r.row for r in resolved]))


def shipped_runs(catalog) -> ShippedRuns:
    """The catalog's measurement table as calibrate_shipped fits it (ShippedRuns)."""
    rows, roles = shipped_split(catalog)
    return runs_of(rows, catalog, roles)


def calibrate_shipped(
    catalog, *, output: Path | str, max_iterations: int = 40, progress=None, fitted: str | None = None, prior: Factors | None = None, loss: Loss = Loss()
) -> tuple[FitResult, str]:
    """Fit the factors to the fit rows of the catalog's measurement table, starting from the fixed
    PRIOR_FACTORS (or `prior`), and write the table to `output` (efficiency.json, or YAML when the
    name ends otherwise). Returns the result and the file's text; the same rows give the same
    bytes (with the same `fitted` date)."""
    root = Path(catalog.root)
    runs = shipped_runs(catalog)
    resolved, copy_of = runs.resolved, runs.copy_of
    result = fit(runs.fit_rows, prior or PRIOR_FACTORS, max_iterations=max_iterations, progress=progress, loss=loss)
    combos = sorted({(r.gpu.name, r.row.engine, r.weight_dtype, architecture_of(r.model), version_label(r.row.engine_version, r.row.engine)) for r in resolved})
    versions = sorted({(r.row.engine, version_label(r.row.engine_version, r.row.engine)) for r in resolved})
    text = write_efficiency(
        result,
        output,
        combos=combos,
        versions=versions,
        rows_total=len(resolved),
        measurements=f"{root.name}/measurements" if root.name else "measurements",
        fitted=fitted,
        copies=len(copy_of),
    )
    return result, text
