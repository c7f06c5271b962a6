"""From a per-replica arrival rate to TTFT and TPOT percentiles, and the largest rate a replica
takes within the SLOs; and the benchmark loops (closed loop of N clients, open loop, offline)
`sizer validate` predicts. Vectorised over candidates (numpy arrays, one element per candidate).

Open loop (what `sizer solve` sizes for), per replica at Poisson arrival rate lambda (requests/s),
prompt lengths P and output lengths O from the workload's distributions:

  step             t = perf.StepModel.mixed_step_s(N, c, lambda E[P], E[P]): the mean step with
                   N sequences decoding and prompt tokens arriving at lambda E[P] per second
                   (chunked prefill shares every step with decode)
  running batch    N = lambda x E[O] x t(N)            Little's law on the decode phase (bisection)
  context          c = E[P] + E[O^2] / (2 E[O])        mean context of a *running* sequence:
                                                       size-biased, long outputs live longer
  TPOT             a request's TPOT averages the steps of its life: mean t; around it the running
                   batch fluctuates (Poisson, M/G/inf: variance N, through the step's slope
                   dt/dN) and the prompts prefilled during its O steps add a compound-Poisson
                   delay of variance lambda t E[S^2] / O (S = P x c_p, c_p seconds per prompt
                   token). TPOT_q is the q-quantile of the mixture over O of these normals:
                   short outputs have the widest spread.
  TTFT             admission (admission_steps x t) + request overhead + the FCFS wait W for the
                   prompt-token budget + the prompt's own chunks S(P) = ceil(P / b) mixed steps
                   (b = token budget - N). W is the M/G/1 (Pollaczek-Khinchine) wait of a server
                   pushing b prompt tokens per full step: E[W] = lambda E[X^2] / (2 (1 - rho)),
                   X = P x t_full / b, rho = lambda E[X]; P(W > w) ~ rho exp(-rho w / E[W]).
                   TTFT_q solves P(TTFT <= x) = q over the prompt-length mix (W independent of
                   P under FCFS): the quantile of the sum, not the sum of quantiles.

Feasible at lambda when the prefill share and rho are < 1, every TTFT/TPOT bound holds, and the
p99 of the running batch fits both the memory ceiling (sequences admitted at the percentile
context) and the engine's max_num_seqs. Every check grows with lambda, so the largest feasible
rate is found by bisection.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from .perf import StepModel
from .workload import LengthDist

_Z = {key: NormalDist().inv_cdf(p / 100) for key, p in {"p50": 50, "p90": 90, "p95": 95, "p99": 99}.items()}
_PCT = {"p50": 0.50, "p90": 0.90, "p95": 0.95, "p99": 0.99}
BATCH_TAIL = "p99"  # percentile of the running batch held against memory and max_num_seqs


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

    @property
    def running_context_variance(self) -> float:
        """Variance of the context of a running sequence: prompt P plus U x O, U uniform on [0, 1]
        (how far through its output it is), O size-biased (long outputs are running longer)."""
        o = np.asarray(self.output.samples(), dtype=float)
        p = self.prompt
        e_o, e_o2, e_o3 = o.mean(), (o**2).mean(), (o**3).mean()
        mean = p.mean + e_o2 / (2 * e_o)
        second = p.mean_square + p.mean * e_o2 / e_o + e_o3 / (3 * e_o)
        return max(second - mean**2, 0.0)

    def prompt_points(self, n: int = 64) -> np.ndarray:
        grid = (np.arange(n) + 0.5) / n * 100
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




# Probability cells of the length grids: even in the body, finer in the tail, where the p99 of
# TTFT and TPOT is made (the longest 1 % of prompts, and what queues behind them).
_EDGES = np.concatenate([np.linspace(0.0, 0.95, 20), [0.97, 0.98, 0.99, 0.995, 0.998, 0.999, 0.9995, 0.9998, 0.9999, 0.99995, 0.99999, 1.0]])
_STATE_EDGES = np.array([0.0, 0.25, 0.5, 0.75, 0.9, 0.97, 0.99, 0.998, 1.0])


@lru_cache(maxsize=256)
def _weighted_points(dist: LengthDist, edges: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Quantile points of a length distribution at the middle of each probability cell, and the
    cells' probabilities (cached; read-only)."""
    e = np.asarray(edges)
    mid = 0.5 * (e[:-1] + e[1:])
    points = np.array([dist.quantile(float(q) * 100) for q in mid])
    weights = np.diff(e)
    points.flags.writeable = False
    weights.flags.writeable = False
    return points, weights


def _points(dist: LengthDist, edges: np.ndarray = _EDGES) -> tuple[np.ndarray, np.ndarray]:
    return _weighted_points(dist, tuple(float(x) for x in edges))


def _running_batch(step: StepModel, lam: np.ndarray, mean_out: float, ctx: float, mean_p: float, budget: np.ndarray, prompt_parts) -> tuple[np.ndarray, np.ndarray]:
    """Solve N = lam E[O] t(N), t the lumpy mean step (perf.StepModel.lumpy_step), by bisection on
    log N. Returns (N, converged)."""
    lo = np.full(lam.shape, np.log(1e-3))
    hi = np.full(lam.shape, np.log(1e6))

    def excess(log_n: np.ndarray) -> np.ndarray:
        n = np.exp(log_n)
        t = step.lumpy_step(np.maximum(n, 1.0), ctx, lam, mean_p, budget - n, prompt_parts=prompt_parts)[0]
        with np.errstate(invalid="ignore"):
            return lam * mean_out * t - n

    ok = excess(hi) < 0
    for _ in range(36):
        mid = 0.5 * (lo + hi)
        above = excess(mid) > 0
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
    return np.exp(hi), ok


def _block_s(step: StepModel, batch: np.ndarray, ctx: float, tokens: np.ndarray, chunk: np.ndarray, mean_p: np.ndarray) -> np.ndarray:
    """Time to push `tokens` prompt tokens through steps of at most `chunk` prompt tokens, with
    `batch` sequences decoding: full steps, then the remainder's step."""
    full = np.floor(tokens / chunk)
    rest = tokens - full * chunk
    t_full = step.mixed_parts(batch, ctx, chunk, mean_p)
    t_rest = np.where(rest > 0, step.mixed_parts(batch, ctx, rest, mean_p), 0.0)
    return np.where(tokens > 0, full * t_full + t_rest, step.mixed_parts(batch, ctx, np.zeros_like(tokens), mean_p))


_BINS = 512


def _grid_pmf(values: np.ndarray, weights: np.ndarray, h: np.ndarray) -> np.ndarray:
    """(C, BINS) probability masses of point masses `values` (C, K) with `weights` (K,) on
    grids of bin width h (C,), mass beyond the grid in the last bin."""
    idx = np.clip(np.rint(values / h[:, None]).astype(int), 0, _BINS - 1)
    pmf = np.zeros((values.shape[0], _BINS))
    np.add.at(pmf, (np.repeat(np.arange(values.shape[0]), values.shape[1]), idx.ravel()), np.broadcast_to(weights, values.shape).ravel())
    return pmf


def _compound_delay_cdfs(lam, t, outs, jump, w, sd_batch):
    """CDFs of X / O for every output length O (outs, (O,)): X compound Poisson with mean count
    lam x O x t and jumps `jump` (C, K) of probabilities `w`, plus normal noise of sd sd_batch x O.
    Returns (edges (C, BINS), cdf (C, O, BINS)) on per-candidate grids of X / O."""
    c = lam.shape[0]
    m = lam[:, None] * t[:, None] * outs[None, :]  # (C, O) prompts per life
    ej = (jump * w).sum(axis=1)
    ej2 = (jump**2 * w).sum(axis=1)
    jmax = jump.max(axis=1)
    # horizon for X / O: the worst O (shortest life has the largest spread per token)
    mean_x = m * ej[:, None] / outs[None, :]
    sd_x = np.sqrt(m * ej2[:, None]) / outs[None, :]
    horizon = np.max(mean_x + 10 * sd_x + 2 * jmax[:, None] / outs[None, :], axis=1) + 6 * sd_batch + 1e-9
    h_y = horizon / _BINS  # bin of X / O
    edges = h_y[:, None] * (np.arange(_BINS)[None, :] + 0.5)
    n_fft = 2 * _BINS  # support beyond twice the horizon is negligible (checked: identical rates on the shipped workloads)
    omega = 2 * np.pi * np.fft.rfftfreq(n_fft)  # per bin
    cdf = np.empty((c, outs.shape[0], _BINS))
    for j, o in enumerate(outs):
        h_x = h_y * o  # bin of X for this O
        pmf_j = np.zeros((c, n_fft))
        idx = np.clip(np.rint(jump / h_x[:, None]).astype(int), 0, n_fft - 1)
        np.add.at(pmf_j, (np.repeat(np.arange(c), jump.shape[1]), idx.ravel()), np.broadcast_to(w, jump.shape).ravel())
        phi = np.fft.rfft(pmf_j, axis=1)
        sigma_bins = sd_batch * o / np.maximum(h_x, 1e-300)
        gen = np.exp(m[:, j : j + 1] * (phi - 1.0)) * np.exp(-0.5 * (omega[None, :] * sigma_bins[:, None]) ** 2)
        pmf = np.fft.irfft(gen, n=n_fft, axis=1)
        # noise may push mass below zero: fold the wrapped negative side back onto the first bin
        neg = pmf[:, n_fft // 2 :].sum(axis=1)
        pmf = np.maximum(pmf[:, :_BINS], 0.0)
        pmf[:, 0] += np.maximum(neg, 0.0)
        cdf[:, j, :] = np.minimum(np.cumsum(pmf, axis=1), 1.0)
    return edges, cdf


def _mixture_quantile(grid, weights: np.ndarray, q: float) -> np.ndarray:
    """q-quantile of the mixture (weights over axis 1) of the CDFs on the candidates' grids."""
    edges, cdf = grid
    mix = (cdf * weights[None, :, None]).sum(axis=1)  # (C, BINS)
    idx = np.argmax(mix >= q, axis=1)
    reached = mix[np.arange(mix.shape[0]), idx] >= q
    return np.where(reached, edges[np.arange(mix.shape[0]), idx], edges[:, -1])


def _pk_wait_cdf(rho: np.ndarray, service: np.ndarray, w: np.ndarray):
    """M/G/1 virtual waiting time (Pollaczek-Khinchine): W = sum of a geometric(rho) number of
    equilibrium residuals of the service S (point masses `service` (C, K), probabilities w).
    Returns (edges (C, BINS), cdf (C, BINS)) on per-candidate grids."""
    c = rho.shape[0]
    r = np.clip(rho, 0.0, 0.999)
    es = (service * w).sum(axis=1)
    es2 = (service**2 * w).sum(axis=1)
    ew = np.where(r < 1, r * es2 / (2 * np.maximum(es, 1e-300) * (1 - r)), 0.0)
    horizon = 12 * ew + 2 * service.max(axis=1) + 1e-9
    h = horizon / _BINS
    n_fft = 2 * _BINS  # support beyond twice the horizon is negligible (checked: identical rates on the shipped workloads)
    x = h[:, None] * np.arange(n_fft)[None, :]  # bin left edges
    # residual density (1 - F_S(x)) / E[S], integrated over each bin
    upper = x + h[:, None]
    mass = np.zeros((c, n_fft))
    for k in range(service.shape[1]):
        sk = service[:, k : k + 1]
        mass += w[k] * np.clip(np.minimum(sk, upper) - x, 0.0, None)
    mass = mass / np.maximum(es, 1e-300)[:, None]
    phi = np.fft.rfft(mass, axis=1)
    gen = (1 - r)[:, None] / (1 - r[:, None] * phi)
    pmf = np.maximum(np.fft.irfft(gen, n=n_fft, axis=1)[:, :_BINS], 0.0)
    edges = h[:, None] * (np.arange(_BINS)[None, :] + 1.0)
    return edges, np.minimum(np.cumsum(pmf, axis=1), 1.0)


def _shifted_quantile(edges: np.ndarray, cdf: np.ndarray, shift: np.ndarray, w: np.ndarray, q: float, iterations: int = 40) -> np.ndarray:
    """q-quantile of shift_k + W over k (probabilities w), W with CDF `cdf` on `edges` (C, BINS)."""
    c = edges.shape[0]

    # edges are uniform per candidate (h, 2h, ..., BINS h): interpolate by index arithmetic
    h = edges[:, :1]
    rows = np.arange(c)[:, None]
    last = edges.shape[1] - 1

    def wcdf(y: np.ndarray) -> np.ndarray:  # y (C, K)
        pos = y / h - 1.0
        i0 = np.clip(np.floor(pos).astype(int), 0, last - 1)
        frac = np.clip(pos - i0, 0.0, 1.0)
        val = cdf[rows, i0] + frac * (cdf[rows, i0 + 1] - cdf[rows, i0])
        return np.where(pos < 0, 0.0, np.where(pos > last, 1.0, val))

    def mix(x: np.ndarray) -> np.ndarray:
        return (wcdf(x[:, None] - shift) * w[None, :]).sum(axis=1)

    lo = shift.min(axis=1)
    hi = shift.max(axis=1) + edges[:, -1] + 1e-9
    return _bisect_quantile(mix, lo, hi, q, iterations)


def _bisect_quantile(cdf, lo: np.ndarray, hi: np.ndarray, q: float, iterations: int = 40) -> np.ndarray:
    """x with cdf(x) = q, per candidate, by bisection on [lo, hi] (cdf non-decreasing)."""
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        below = cdf(mid) < q
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return hi


def _phi(z: np.ndarray) -> np.ndarray:
    """Standard normal CDF, vectorised."""
    return 0.5 * (1.0 + _erf(z / np.sqrt(2.0)))


def _erf(x: np.ndarray) -> np.ndarray:
    """Error function (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7), vectorised."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-a * a)
    return sign * y


def evaluate_load(step: StepModel, lam: np.ndarray, demand: Demand, limits: Limits, slo_only: bool = False) -> LoadPoint:
    """TTFT and TPOT percentiles of every candidate at per-replica rate `lam` (requests/s).

    `slo_only`: compute only the percentiles the SLOs name (what feasibility needs), not the p50
    and p99 reported beside them."""
    lam = np.asarray(lam, dtype=float)
    mean_p = demand.prompt.mean
    mean_o = demand.output.mean
    ctx = demand.mean_running_context
    budget = np.asarray(limits.max_num_batched_tokens, dtype=float) * np.ones_like(lam)
    mp = np.full(lam.shape, mean_p)
    # attention is quadratic in the prompt: per prompt token it is paid at the size-biased mean
    # length E[P^2] / E[P] (a token is more likely to sit in a long prompt), GEMMs per token alike
    parts = step.prefill_token_parts(np.full(lam.shape, demand.prompt.size_biased_mean))
    n, converged = _running_batch(step, lam, mean_o, ctx, mean_p, budget, parts)
    n = np.maximum(n, 0.0)
    nb = np.maximum(n, 1.0)
    chunk = np.maximum(budget - n, 1.0)  # prompt tokens a step can take
    t, p_step, f0, f1 = step.lumpy_step(nb, ctx, lam, mp, chunk, prompt_parts=parts)
    c_p = parts[0] + parts[1]
    u = lam * mean_p * c_p  # share of replica time spent on prompts
    tail = n + _Z[BATCH_TAIL] * np.sqrt(n)
    reported = () if slo_only else ("p50", "p99")
    ttft_keys = sorted({*reported, *(k for k, _ in demand.ttft_s)}, key=lambda k: _PCT[k])
    tpot_keys = sorted({*reported, *(k for k, _ in demand.tpot_s)}, key=lambda k: _PCT[k])
    finite = np.isfinite(t)

    # Each prompt occupies the replica for its block (its steps, decode included); beyond the
    # decode steps it displaces, it delays every running sequence by J(P).
    points, point_w = _points(demand.prompt)  # (K,)
    t_ok = np.where(finite, t, 0.0)
    block = np.stack([_block_s(step, nb, ctx, np.full(lam.shape, pk), chunk, np.full(lam.shape, pk)) for pk in points], axis=1)  # (C, K), attention at each prompt's own length
    steps_in = np.ceil(points[None, :] / chunk[:, None])
    alone = np.maximum(block - steps_in * f0[:, None], 0.0)  # (C, K) delay a prompt alone adds to decoders
    # Prompts arriving close together share steps (and the decode work in them), so the stand-alone
    # delays overstate what prompts add: keep their (heavy-tailed) shape, scale them to the step
    # composition of perf.StepModel.lumpy_step, where prompts add p (f1 - f0) / t of the time.
    with np.errstate(divide="ignore", invalid="ignore"):
        added = np.where(finite & (t_ok > 0), p_step * np.maximum(f1 - f0, 0.0) / np.maximum(t_ok, 1e-300), 0.0)
        e_alone = (alone * point_w[None, :]).sum(axis=1)
        jump = alone * np.where(lam * e_alone > 0, added / np.maximum(lam * e_alone, 1e-300), 1.0)[:, None]

    # --- TPOT: a request's decode steps plus the prompts that arrive during its life ---------------
    # TPOT(O) = f0 + X / O, X = sum of J over the Poisson(lam O t) prompts arriving during its O
    # steps (compound Poisson, on a time grid by FFT), blurred by the running batch's Poisson
    # fluctuation through the step's slope dt/dN; TPOT_q is the q-quantile of the mixture over O.
    d = np.maximum(0.05 * n, 1.0)
    t_up = step.lumpy_step(n + d, ctx, lam, mp, chunk, prompt_parts=parts)[0]
    t_dn = step.lumpy_step(np.maximum(n - d, 1.0), ctx, lam, mp, chunk, prompt_parts=parts)[0]
    slope = np.where(np.isfinite(t_up) & np.isfinite(t_dn), (t_up - t_dn) / ((n + d) - np.maximum(n - d, 1.0)), 0.0)
    # ... and so does the KV-read load through which sequences are running: sum of N contexts,
    # each a prompt plus part of a (size-biased) output, variance N Var(context), through the
    # step's slope in context dt/d(sum of contexts)
    dc = max(0.05 * ctx, 1.0)
    t_cu = step.lumpy_step(nb, ctx + dc, lam, mp, chunk, prompt_parts=parts)[0]
    t_cd = step.lumpy_step(nb, max(ctx - dc, 1.0), lam, mp, chunk, prompt_parts=parts)[0]
    slope_ctx = np.where(np.isfinite(t_cu) & np.isfinite(t_cd), (t_cu - t_cd) / ((ctx + dc) - max(ctx - dc, 1.0)) / nb, 0.0)
    sd_batch = np.sqrt(slope**2 * n + slope_ctx**2 * n * demand.running_context_variance)
    outs, out_w = _points(demand.output)
    outs = np.maximum(outs - 1, 1.0)  # steps after the first token
    base_tpot = np.where(finite, t - lam * t_ok * (jump * point_w[None, :]).sum(axis=1), 0.0)  # the mean step less what prompts add
    tpot_grid = _compound_delay_cdfs(lam, t_ok, outs, jump, point_w, sd_batch)  # (edges (C, G+1), cdf (C, O, G+1)) of X / O
    # Prompts that arrive during a request's life lengthen it, and a longer life admits more of
    # them: the life is an M/G/1 busy period started by the decode work, not a fixed window. Same
    # mean; variance larger by 1 / (1 - rho_J)^2 (busy period: w lam E[J^2] / (1 - rho_J)^3 against
    # the compound Poisson's w lam E[J^2] / (1 - rho_J)), rho_J = lam E[J] = `added`.
    mean_delay = lam * t_ok * (jump * point_w[None, :]).sum(axis=1)
    spread = 1.0 / np.maximum(1.0 - np.where(finite, added, 0.0), 0.05)
    tpot = {}
    for key in tpot_keys:
        q = _mixture_quantile(tpot_grid, out_w, _PCT[key])
        q = mean_delay + (q - mean_delay) * spread
        tpot[key] = np.where(finite, base_tpot + np.maximum(q, 0.0), np.inf)

    # --- TTFT: FCFS behind the prompt tokens already there, then the prompt's own chunks ---------
    # Chunked prefill is a token server: each step takes up to `chunk` prompt tokens, in arrival
    # order, a full step lasting t_full(P) (attention at the prompt's length). A prompt of P tokens
    # occupies it for S(P) = P t_full(P) / chunk; the work ahead of an arrival is the M/G/1 virtual
    # wait W (Pollaczek-Khinchine: a geometric(rho) number of residuals of S, on a time grid by
    # FFT), rho = lam E[S]. Then the prompt's own steps: full ones, and a last step that also
    # takes the prompts which arrived since its first began, up to the budget. An idle server still
    # finishes the decode step under way (mean f0 / 2). TTFT = admission (admission_steps x t) +
    # request overhead + W + own; TTFT_q is the q-quantile of the mixture over prompt lengths.
    fixed = step.admission_steps * t_ok + step.request_overhead_s + 0.5 * f0
    t_full = np.stack([step.mixed_parts(nb, ctx, chunk, np.full(lam.shape, pk)) for pk in points], axis=1)  # (C, K)
    service_tok = points[None, :] * t_full / chunk[:, None]
    rho = lam * (service_tok * point_w[None, :]).sum(axis=1)
    rho = np.where(finite, rho, np.inf)
    own = np.empty_like(block)
    for k, pk in enumerate(points):
        n_own = np.ceil(pk / chunk)
        rem = pk - (n_own - 1) * chunk
        joined = lam * mean_p * ((n_own - 1) * t_full[:, k] + 0.5 * t_ok)
        last = step.mixed_parts(nb, ctx, np.minimum(chunk, rem + joined), np.full(lam.shape, pk))
        own[:, k] = (n_own - 1) * t_full[:, k] + last
    wait_edges, wait_cdf = _pk_wait_cdf(np.where(np.isfinite(rho), np.minimum(rho, 0.999), 0.999), service_tok, point_w)
    ttft = {}
    for key in ttft_keys:
        q = _shifted_quantile(wait_edges, wait_cdf, fixed[:, None] + own, point_w, _PCT[key])
        ttft[key] = np.where((rho < 1) & finite, q, np.inf)

    stable = converged & (u < 1) & (rho < 1) & finite
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


def slack(point: LoadPoint, demand: Demand, limits: Limits) -> np.ndarray:
    """log of the worst ratio of a measure to its bound (<= 0: every check holds), per candidate.
    An unstable replica counts as a ratio of e (log 1): past every bound, but finite, so that the
    root finder below can still draw a secant through it."""
    worst = np.maximum(point.running_tail / np.maximum(limits.max_concurrency, 1e-9), point.running_tail / np.maximum(limits.max_num_seqs, 1e-9))
    for key, bound in demand.ttft_s:
        worst = np.maximum(worst, point.ttft_s[key] / bound)
    for key, bound in demand.tpot_s:
        worst = np.maximum(worst, point.tpot_s[key] / bound)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(np.maximum(worst, 1e-12))
    out = np.where(np.isfinite(out), out, 1.0)
    return np.where(point.stable, np.minimum(out, 1.0), 1.0)


def max_rate(step: StepModel, demand: Demand, limits: Limits, tolerance: float = 0.01) -> Capacity:
    """Bisection on log(rate) for every candidate at once, to a relative `tolerance`.

    The rate lies between a trickle (1e-9 of prefill saturation) and prefill saturation; one
    probe at 1e-3 of saturation picks the band, then bisection narrows it. (False position on
    `slack` was tried: the slack is clipped where a replica turns unstable, and the secants
    converged more slowly than halving.)"""
    mean_p = demand.prompt.mean
    c_p = step.prefill_per_token_s(np.full(step.size, mean_p))
    hi = 1.0 / (mean_p * c_p)  # prefill alone saturates the GPU
    lo = hi * 1e-9
    at_zero = evaluate_load(step, lo, demand, limits)
    zero_v = violations(at_zero, demand, limits)
    ok0 = feasible(at_zero, demand, limits)
    probe = hi * 1e-3
    ok_probe = feasible(evaluate_load(step, probe, demand, limits, slo_only=True), demand, limits)
    log_lo = np.where(ok_probe, np.log(probe), np.log(lo))
    log_hi = np.where(ok_probe, np.log(hi), np.log(probe))
    width = float(np.max(log_hi - log_lo))
    iterations = int(np.ceil(np.log2(max(width, 1e-12) / np.log1p(tolerance))))
    for _ in range(iterations):
        mid = 0.5 * (log_lo + log_hi)
        ok = feasible(evaluate_load(step, np.exp(mid), demand, limits, slo_only=True), demand, limits)
        log_lo = np.where(ok, mid, log_lo)
        log_hi = np.where(ok, log_hi, mid)
    rate = np.where(ok0, np.exp(log_lo), 0.0)
    at_max = evaluate_load(step, np.maximum(rate, lo), demand, limits)
    above = violations(evaluate_load(step, np.maximum(rate, lo) * 1.02, demand, limits, slo_only=True), demand, limits)
    binding = []
    for i in range(step.size):
        names = [name for name in CHECKS if above[name][i]]
        binding.append(names[0] if names else "compute")
    return Capacity(max_rate_rps=rate, binding=binding, at_max=at_max, at_zero=at_zero, zero_violations=zero_v)


# ---------------------------------------------------------------------------------------------
# Benchmarks as they are run: a closed loop of N clients, an open loop at a rate, offline
# ---------------------------------------------------------------------------------------------

BENCHMARK_WAVES = 10.0
"""Requests per client in a concurrency benchmark: the InferenceMAX/InferenceX harness sends
`--num-prompts $((CONC * 10))` at `--max-concurrency $CONC` (SemiAnalysisAI/InferenceX benchmark
scripts), so one measured run is ten waves of N requests, the first of which arrives at once.
Its reciprocal is the prior of the `burst_fraction` efficiency factor."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopResult:
    """Mean latencies and throughput of each row (arrays), seconds and tokens/s per replica."""

    ttft_s: np.ndarray
    tpot_s: np.ndarray
    output_tokens_per_s: np.ndarray
    rate_rps: np.ndarray
    decoding: np.ndarray  # mean sequences in decode
    admitted: np.ndarray  # sequences the replica holds at once (the rest wait for KV memory)
    memory_wait_s: np.ndarray


def _steady(step: StepModel, decoding: np.ndarray, isl: np.ndarray, osl: np.ndarray, budget: np.ndarray):
    """Steady state with `decoding` sequences in decode and a prompt of `isl` tokens prefilled for
    each one that finishes. Returns (step time = TPOT, completion rate, prefill seconds per prompt,
    wait + own prefill of a prompt arriving at a random time).

    Prompts per step m = D / (osl - 1); a step carries prompt tokens with probability
    p = max(1 - exp(-m), m isl / budget) and then m isl / p of them (perf.StepModel.lumpy_step's
    composition, with the arrivals per step known)."""
    ctx = isl + osl / 2  # a decoding sequence is on average half-way through its output
    steps = np.maximum(osl - 1, 1.0)
    m = decoding / steps
    x = m * isl
    b = np.maximum(budget, 1.0)
    p = np.clip(np.maximum(1 - np.exp(-m), x / b), 1e-12, 1.0)
    f0 = step.mixed_parts(decoding, ctx, np.zeros_like(x), isl)
    f1 = step.mixed_parts(decoding, ctx, np.minimum(x / p, b), isl)
    t = (1 - p) * f0 + p * f1
    rate = decoding / (steps * t)
    pf = isl * step.prefill_per_token_s(isl)  # replica seconds of prompt work per request
    chunks = np.ceil(isl / b)
    own = chunks * step.mixed_parts(decoding, ctx, np.minimum(x + isl / chunks, np.maximum(b, isl / chunks)), isl)
    rho = np.minimum(rate * pf, 0.999)
    # admission: the scheduler takes a new request into a step `admission_steps` steps after it
    # arrives (the step under way, and the one already being planned); then the prompts ahead (M/D/1)
    wait = step.admission_steps * t + rho / (2 * (1 - rho)) * pf
    return t, rate, pf, wait + own


def closed_loop(
    step: StepModel,
    concurrency: np.ndarray,
    isl: np.ndarray,
    osl: np.ndarray,
    capacity: np.ndarray,
    budget: np.ndarray,
    burst: bool = True,
    iterations: int = 60,
) -> LoopResult:
    """Means of a closed-loop benchmark: N clients, fixed isl/osl, each sending its next request
    when the last completes (burst=False: no wave arrives at once, as when every request is
    queued from the start).

    The replica holds n = min(N, capacity) sequences (capacity: what its KV pool admits); the rest
    wait for memory. With D sequences decoding, a step lasts t(D) (perf.StepModel.decode_parts,
    plus the compute of the D/(osl-1) prompts prefilled per step), the replica completes
    r = D / ((osl-1) t) requests/s, a prompt arriving at a random time waits for the step under way
    and the prompts ahead (M/D/1) and is prefilled in ceil(isl / budget) steps. A share
    `burst_fraction` of requests belongs to waves that arrive at once: their prompts queue one
    behind another, (n + 1)/2 prompts' prefill on average. D solves n = r x (TTFT + (osl-1) t) (bisection; both sides grow with D). Clients
    beyond n wait (N - n)/r for memory (Little's law on the waiting room)."""
    n_clients = np.asarray(concurrency, dtype=float)
    isl = np.asarray(isl, dtype=float)
    osl = np.asarray(osl, dtype=float)
    admitted = np.maximum(np.minimum(n_clients, np.floor(capacity)), 1.0)
    share = step.burst_fraction if burst else np.zeros_like(n_clients)
    steps = np.maximum(osl - 1, 1.0)
    # The first wave: prompts prefilled back to back in steps of `budget` prompt tokens.
    full = np.minimum(budget, isl * admitted)
    per_prompt_burst = step.mixed_parts(np.ones_like(n_clients), isl, full, isl) * isl / np.maximum(full, 1.0)
    t1_w, t1_g, rest1 = step.step_parts(np.ones_like(n_clients), isl)

    def ttft_of(decoding):
        t, rate, pf, ttft_steady = _steady(step, decoding, isl, osl, budget)
        burst_ttft = (admitted + 1) / 2 * per_prompt_burst + np.maximum(t1_w, t1_g) + rest1
        ttft = ttft_steady + np.maximum(burst_ttft - ttft_steady, 0.0) * share + step.request_overhead_s
        return t, rate, ttft

    lo = np.zeros_like(admitted)
    hi = admitted.copy()
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        t, rate, ttft = ttft_of(mid)
        over = rate * (ttft + steps * t) > admitted
        hi = np.where(over, mid, hi)
        lo = np.where(over, lo, mid)
    decoding = 0.5 * (lo + hi)
    t, rate, ttft = ttft_of(decoding)
    memory_wait = np.where(n_clients > admitted, (n_clients - admitted) / np.maximum(rate, 1e-12), 0.0)
    return LoopResult(
        ttft_s=ttft + memory_wait,
        tpot_s=t,
        output_tokens_per_s=rate * osl,
        rate_rps=rate,
        decoding=decoding,
        admitted=admitted,
        memory_wait_s=memory_wait,
    )


def open_loop(step: StepModel, rate_rps: np.ndarray, isl: np.ndarray, osl: np.ndarray, budget: np.ndarray, iterations: int = 60) -> LoopResult:
    """Means under Poisson arrivals at `rate_rps` with fixed isl/osl (MLPerf Server): the decode
    population D solves D = rate x (osl-1) x t(D) (bisection); TTFT as in the closed loop's steady
    state. Rows the rate saturates get inf."""
    lam = np.asarray(rate_rps, dtype=float)
    isl = np.asarray(isl, dtype=float)
    osl = np.asarray(osl, dtype=float)
    steps = np.maximum(osl - 1, 1.0)
    lo = np.zeros_like(lam)
    hi = np.full_like(lam, 1e6)
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        t, rate, _, _ = _steady(step, mid, isl, osl, budget)
        over = rate > lam  # D large enough to complete faster than arrivals
        hi = np.where(over, mid, hi)
        lo = np.where(over, lo, mid)
    decoding = 0.5 * (lo + hi)
    t, rate, pf, ttft = _steady(step, decoding, isl, osl, budget)
    ok = (rate >= lam * 0.999) & (lam * pf < 1)
    ttft = np.where(ok, ttft + step.request_overhead_s, np.inf)
    return LoopResult(
        ttft_s=ttft,
        tpot_s=np.where(ok, t, np.inf),
        output_tokens_per_s=np.where(ok, lam * osl, rate * osl),
        rate_rps=lam,
        decoding=decoding,
        admitted=decoding,
        memory_wait_s=np.zeros_like(lam),
    )


def offline(step: StepModel, isl: np.ndarray, osl: np.ndarray, capacity: np.ndarray, budget: np.ndarray) -> LoopResult:
    """Throughput with every request queued at once (MLPerf Offline, trtllm-bench): a closed loop
    of as many clients as the replica admits, with no first-wave burst."""
    return closed_loop(step, np.floor(np.maximum(capacity, 1.0)), isl, osl, capacity, budget, burst=False)
