"""From a per-replica arrival rate to TTFT and TPOT percentiles, and the largest rate a replica
takes within the SLOs. Vectorised over candidates (numpy arrays, one element per candidate).

The model, per replica at Poisson arrival rate lambda (requests/s):

  prefill share    u = lambda x E[prompt] x c_p        c_p: GPU seconds per prompt token (chunked
                                                        prefill shares each step with decode)
  running batch    N = lambda x E[output] x TPOT(N)    Little's law on the decode phase, solved by
                                                        bisection; TPOT(N) = decode_step(N) / (1 - u)
  batch tail       N_q = N + z_q sqrt(N)                Poisson (M/G/inf) approximation of the
                                                        number of running sequences
  context          mean context of a *running* sequence, size-biased by output length:
                   E[prompt] + E[output^2] / (2 E[output])   (long outputs live longer)
  TPOT_q           decode_step(N_q) / (1 - u)
  prefill service  S(P) = prefill(P) + (P / chunk) x decode_step(N)       chunk = token budget - N:
                   prompts share steps, each token paying its share of the decode work in the step
  TTFT_q           W_q + prefill(P_q) + ceil(P_q / chunk) x decode_step(N)   (the tagged prompt waits for
                   whole steps) with W the M/G/1 (Pollaczek-Khinchine) wait of the prefill queue,
                   E[W] = lambda E[S^2] / (2 (1 - rho)), rho = lambda E[S], and its tail
                   P(W > w) ~ rho exp(-rho w / E[W]); adding the two percentiles is conservative.

Feasible at lambda when u < 1, rho < 1, every TTFT/TPOT bound holds, and the p99 of the running
batch fits both the memory ceiling (sequences admitted at the percentile context) and the
engine's max_num_seqs. Every check grows with lambda, so the largest feasible rate is found by
bisection.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from .perf import StepModel
from .workload import LengthDist

_Z = {key: NormalDist().inv_cdf(p / 100) for key, p in {"p50": 50, "p90": 90, "p95": 95, "p99": 99}.items()}
_PCT = {"p50": 0.50, "p90": 0.90, "p95": 0.95, "p99": 0.99}
BATCH_TAIL = "p99"  # percentile of the running batch held against memory and max_num_seqs
_PROMPT_POINTS = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class Demand:
    """What the queueing model needs from a workload: the two length distributions and the SLOs."""

    prompt: LengthDist
    output: LengthDist
    ttft_s: tuple[tuple[str, float], ...]
    tpot_s: tuple[tuple[str, float], ...]

    @property
    def mean_running_context(self) -> float:
        o = self.output
        return self.prompt.mean + o.mean_square / (2 * o.mean)

    def prompt_points(self) -> np.ndarray:
        grid = (np.arange(_PROMPT_POINTS) + 0.5) / _PROMPT_POINTS * 100
        return np.array([self.prompt.quantile(float(p)) for p in grid])


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadPoint:
    """Latency and occupancy of each candidate at its rate (arrays over candidates)."""

    rate_rps: np.ndarray
    stable: np.ndarray
    prefill_share: np.ndarray
    prefill_rho: np.ndarray
    running_mean: np.ndarray
    running_tail: np.ndarray
    ttft_s: dict[str, np.ndarray]
    tpot_s: dict[str, np.ndarray]


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    max_concurrency: np.ndarray  # sequences the KV pool holds at the percentile context
    max_num_seqs: np.ndarray
    max_num_batched_tokens: np.ndarray


def _running_batch(step: StepModel, lam: np.ndarray, mean_out: float, ctx: float, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Solve N = lam E[O] TPOT(N) by bisection. Returns (N, converged)."""
    denom = np.maximum(1 - u, 1e-9)
    hi = np.full(lam.shape, 1e6)
    lo = np.zeros(lam.shape)

    def excess(n: np.ndarray) -> np.ndarray:
        return lam * mean_out * step.decode_step_s(n, ctx) / denom - n

    ok = excess(hi) < 0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        above = excess(mid) > 0
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
    return hi, ok


def evaluate_load(step: StepModel, lam: np.ndarray, demand: Demand, limits: Limits) -> LoadPoint:
    """TTFT and TPOT percentiles of every candidate at per-replica rate `lam` (requests/s)."""
    lam = np.asarray(lam, dtype=float)
    mean_p = demand.prompt.mean
    mean_o = demand.output.mean
    ctx = demand.mean_running_context
    u = lam * mean_p * step.prefill_per_token_s(np.full(lam.shape, mean_p))
    n, converged = _running_batch(step, lam, mean_o, ctx, u)
    denom = np.maximum(1 - u, 1e-9)
    tail = n + _Z[BATCH_TAIL] * np.sqrt(n)

    tpot = {}
    for key, _ in demand.tpot_s or (("p99", 0.0),):
        nq = np.maximum(n + _Z[key] * np.sqrt(n), 1.0)
        tpot[key] = step.decode_step_s(nq, ctx) / denom
    if "p99" not in tpot:
        tpot["p99"] = step.decode_step_s(np.maximum(tail, 1.0), ctx) / denom

    # Prefill queue: service time of each prompt point, per candidate -> (C, K)
    points = demand.prompt_points()
    chunk = np.maximum(limits.max_num_batched_tokens - n, 1.0)
    step_dec = step.decode_step_s(np.maximum(n, 1.0), ctx)
    # In the queue, prompts share steps: each prompt token also costs its share of a decode step.
    service = _broadcast_prefill(step, np.broadcast_to(points[None, :], (step.size, points.shape[0]))) + (
        points[None, :] / chunk[:, None]
    ) * step_dec[:, None]
    es = service.mean(axis=1)
    es2 = (service**2).mean(axis=1)
    rho = lam * es
    wait_mean = np.where(rho < 1, lam * es2 / (2 * np.maximum(1 - rho, 1e-9)), np.inf)
    ttft = {}
    for key, _ in demand.ttft_s or (("p99", 0.0),):
        q = _PCT[key]
        with np.errstate(divide="ignore", invalid="ignore"):
            wq = np.where(rho > 1 - q, wait_mean / np.maximum(rho, 1e-12) * np.log(np.maximum(rho, 1e-12) / (1 - q)), 0.0)
        p_q = np.array([demand.prompt.quantile(q * 100)])
        ttft[key] = wq + _prefill_service(step, p_q, chunk, step_dec)[:, 0]
    if "p99" not in ttft:
        with np.errstate(divide="ignore", invalid="ignore"):
            wq = np.where(rho > 0.01, wait_mean / np.maximum(rho, 1e-12) * np.log(np.maximum(rho, 1e-12) / 0.01), 0.0)
        ttft["p99"] = wq + _prefill_service(step, np.array([demand.prompt.quantile(99)]), chunk, step_dec)[:, 0]
    stable = converged & (u < 1) & (rho < 1)
    return LoadPoint(
        rate_rps=lam,
        stable=stable,
        prefill_share=u,
        prefill_rho=rho,
        running_mean=n,
        running_tail=tail,
        ttft_s=ttft,
        tpot_s=tpot,
    )


def _prefill_service(step: StepModel, prompts: np.ndarray, chunk: np.ndarray, step_dec: np.ndarray) -> np.ndarray:
    """Seconds from the start of a prompt's prefill to its first token: (C, K)."""
    c = step.size
    p = np.broadcast_to(prompts[None, :], (c, prompts.shape[0]))
    own = _broadcast_prefill(step, p)
    steps = np.ceil(p / chunk[:, None])
    return own + steps * step_dec[:, None]


def _broadcast_prefill(step: StepModel, p: np.ndarray) -> np.ndarray:
    cols = []
    for k in range(p.shape[1]):
        cols.append(step.prefill_s(p[:, k]))
    return np.stack(cols, axis=1)


CHECKS = ("compute", "memory", "max_num_seqs", "ttft", "tpot")


def violations(point: LoadPoint, demand: Demand, limits: Limits) -> dict[str, np.ndarray]:
    """Boolean arrays, one per check, True where the check fails."""
    out = {
        "compute": ~point.stable,
        "memory": point.running_tail > limits.max_concurrency,
        "max_num_seqs": point.running_tail > limits.max_num_seqs,
        "ttft": np.zeros(point.rate_rps.shape, dtype=bool),
        "tpot": np.zeros(point.rate_rps.shape, dtype=bool),
    }
    for key, bound in demand.ttft_s:
        out["ttft"] |= point.ttft_s[key] > bound
    for key, bound in demand.tpot_s:
        out["tpot"] |= point.tpot_s[key] > bound
    return out


def feasible(point: LoadPoint, demand: Demand, limits: Limits) -> np.ndarray:
    v = violations(point, demand, limits)
    bad = np.zeros(point.rate_rps.shape, dtype=bool)
    for arr in v.values():
        bad |= arr
    return ~bad


@dataclass(frozen=True, slots=True, kw_only=True)
class Capacity:
    """Largest per-replica rate within the SLOs and what stops it growing further."""

    max_rate_rps: np.ndarray  # 0 where even a trickle of load fails
    binding: list[str]  # per candidate: the first check that fails just above the max rate
    at_max: LoadPoint
    at_zero: LoadPoint
    zero_violations: dict[str, np.ndarray]


def max_rate(step: StepModel, demand: Demand, limits: Limits, iterations: int = 48) -> Capacity:
    """Bisection on log(rate) for every candidate at once."""
    mean_p = demand.prompt.mean
    c_p = step.prefill_per_token_s(np.full(step.size, mean_p))
    hi = 1.0 / (mean_p * c_p)  # prefill alone saturates the GPU
    lo = hi * 1e-9
    at_zero = evaluate_load(step, lo, demand, limits)
    zero_v = violations(at_zero, demand, limits)
    ok0 = feasible(at_zero, demand, limits)
    log_lo, log_hi = np.log(lo), np.log(hi)
    for _ in range(iterations):
        mid = 0.5 * (log_lo + log_hi)
        ok = feasible(evaluate_load(step, np.exp(mid), demand, limits), demand, limits)
        log_lo = np.where(ok, mid, log_lo)
        log_hi = np.where(ok, log_hi, mid)
    rate = np.where(ok0, np.exp(log_lo), 0.0)
    at_max = evaluate_load(step, np.maximum(rate, lo), demand, limits)
    above = violations(evaluate_load(step, np.maximum(rate, lo) * 1.02, demand, limits), demand, limits)
    binding = []
    for i in range(step.size):
        names = [name for name in CHECKS if above[name][i]]
        binding.append(names[0] if names else "compute")
    return Capacity(max_rate_rps=rate, binding=binding, at_max=at_max, at_zero=at_zero, zero_violations=zero_v)
