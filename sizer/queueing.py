"""From a per-replica arrival rate to TTFT and TPOT percentiles, and the largest rate a replica
takes within the SLOs; and the benchmark loops (closed loop of N clients, open loop, offline)
`sizer validate` predicts. Vectorised over candidates (numpy arrays, one element per candidate).

Open loop (what `sizer solve` sizes for), per replica at Poisson arrival rate lambda (requests/s),
prompt lengths P and output lengths O from the workload's distributions:

  step             t = perf.StepModel.mixed_step_s(N, c, lambda E[P], E[P]): the mean step with
                   N sequences decoding and prompt tokens arriving at lambda E[P] per second
                   (chunked prefill shares every step with decode)
  running batch    N = lambda x E[O] x t(N)            Little's law on the decode phase (grid search)
  context          c = E[P] + E[O^2] / (2 E[O])        mean context of a *running* sequence:
                                                       size-biased, long outputs live longer
  TPOT             a request's TPOT averages the steps of its life: mean t; around it the running
                   batch fluctuates (Poisson, M/G/inf: variance N, through the step's slope
                   dt/dN) and the prompts prefilled during its O steps add a compound-Poisson
                   delay of variance lambda t E[S^2] / O (S = P x c_p, c_p seconds per prompt
                   token). TPOT_q is the q-quantile of the mixture over O (nine cells, even in
                   log O) of these delays, each on a time grid of its own by FFT: short outputs
                   have the widest spread.
  TTFT             admission (uniform on [0, 2 admission_steps x t), the arrival's phase in the
                   scheduler's admission cycle; plus the rest of the step under way, uniform on
                   [0, f0); one step more under an overlap scheduler, perf.overlap_scheduler) +
                   request overhead + the FCFS wait W for the prompt-token
                   budget + the prompt's own chunks S(P) = ceil(P / b) mixed steps
                   (b = token budget - N, or the whole budget where the engine's budget counts
                   prompt tokens only: engines.budget_counts_decode, SGLang). W is the M/G/1 (Pollaczek-Khinchine) wait of a server
                   pushing b prompt tokens per full step: E[W] = lambda E[X^2] / (2 (1 - rho)),
                   X = P x t_full / b, rho = lambda E[X]; P(W > w) ~ rho exp(-rho w / E[W]).
                   TTFT_q solves P(TTFT <= x) = q over the prompt-length mix (W independent of
                   P under FCFS): the quantile of the sum, not the sum of quantiles.

Feasible at lambda when the prefill share and rho are < 1, every TTFT/TPOT bound holds, and the
p99 of the running batch fits both the memory ceiling (sequences admitted at the percentile
context) and the engine's max_num_seqs. Every check grows with lambda, so the largest feasible
rate is a root, found by Brent's method (max_rate).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
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
    max_model_len: float = 0.0  # the engine refuses a request whose prompt + output exceeds it (0: none)

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

    @property
    def output_overlap_steps(self) -> float:
        """E[min(O - 1, O' - 1)] for two independent output lengths: the decode steps two
        requests' lives overlap when they start together, the integral of P(O - 1 > k)^2 over k
        (the running batch's shared-stall variance, evaluate_load)."""
        return _pair_min_mean(self.output)

    def prompt_points(self, n: int = 64) -> np.ndarray:
        grid = (np.arange(n) + 0.5) / n * 100
        return np.array([self.prompt.quantile(float(p)) for p in grid])


@lru_cache(maxsize=256)
def _pair_min_mean(dist: LengthDist) -> float:
    """E[min(X - 1, X' - 1)], X, X' independent draws of `dist`, over its equal-probability
    points x_0 <= ... <= x_{k-1}: the smaller of two draws is x_i with probability (2 (k - i) - 1) / k^2."""
    x = np.sort(np.maximum(np.asarray(dist.samples(), dtype=float) - 1.0, 0.0))
    k = x.shape[0]
    return float((x * (2 * (k - np.arange(k)) - 1)).sum() / k**2)


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadPoint:
    """Latency and occupancy of each candidate at its rate (arrays over candidates)."""

    rate_rps: np.ndarray
    stable: np.ndarray
    prefill_share: np.ndarray
    prefill_rho: np.ndarray
    decoding_mean: np.ndarray  # sequences decoding on average (Little's law on the decode phase)
    running_mean: np.ndarray  # sequences the engine runs (decoding and prefilling) on average
    running_tail: np.ndarray  # their BATCH_TAIL percentile, were there no cap
    running_variance: np.ndarray
    slot_wait_probability: np.ndarray  # P(an arrival finds every --max-num-seqs slot taken)
    slot_wait_mean_s: np.ndarray  # mean wait for a slot of an arrival that waits
    ttft_s: dict[str, np.ndarray]
    tpot_s: dict[str, np.ndarray]


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    max_concurrency: np.ndarray  # sequences the KV pool holds at the percentile context
    max_num_seqs: np.ndarray
    max_num_batched_tokens: np.ndarray
    # Per candidate, the factor the SLO checks multiply the predicted TTFT / TPOT by before
    # holding them against the bounds (a model error the plan must absorb: sizer/evidence.py):
    # one array for every percentile, or one per percentile key (0: that bound not checked);
    # None = 1 (the prediction as it is).
    ttft_scale: np.ndarray | dict[str, np.ndarray] | None = None
    tpot_scale: np.ndarray | dict[str, np.ndarray] | None = None
    # The sequences the engine runs at once, arrivals beyond waiting for a slot: None = what the
    # launch line sets, min(max_concurrency, max_num_seqs) (optimize.launch_max_num_seqs).
    slot_cap: np.ndarray | None = None


def _scale(scale, key: str):
    """The factor of one percentile key's check (Limits.ttft_scale / tpot_scale)."""
    if scale is None:
        return 1.0
    if isinstance(scale, dict):
        return scale.get(key, 1.0)
    return scale


def _take_scale(scale, idx: np.ndarray):
    if scale is None:
        return None
    if isinstance(scale, dict):
        return {k: np.asarray(v)[idx] for k, v in scale.items()}
    return np.asarray(scale)[idx]




# Probability cells of the length grids: even in the body, finer in the tail, where the p99 of
# TTFT and TPOT is made (the longest 1 % of prompts, and what queues behind them).
_EDGES = np.concatenate([np.linspace(0.0, 0.95, 20), [0.97, 0.98, 0.99, 0.995, 0.998, 0.999, 0.9995, 0.9998, 0.9999, 0.99995, 0.99999, 1.0]])
# Cells of the output-length mixture behind TPOT: even steps of the standard normal's z (of
# lengths that are lognormal, even steps of log length). Long outputs have the narrowest delay
# per token and matter least; nine cells give the max rates of 31 tail-refined cells and of 130
# fine ones within 1 % on the shipped workloads (2 % on one candidate; tests/test_queueing.py).
_OUTPUT_EDGES = np.array([0.0, *(NormalDist().cdf(z) for z in (-3.25, -2.5, -1.75, -1.0, -1 / 3, 1 / 3, 1.0, 1.75)), 1.0])


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


@lru_cache(maxsize=256)
def _admitted_prompt_points(prompt: LengthDist, output: LengthDist, max_model_len: float) -> tuple[np.ndarray, np.ndarray]:
    """The prompt cells of _points, each weighted by the share of its requests the engine admits
    (prompt + output <= max_model_len, output independent of prompt: its 4,000 equal-probability
    points), renormalised: what the replica serves. The refused requests (the plan states their
    share) are no one's wait: a 100k-token prompt the engine refuses stalls nothing."""
    points, weights = _points(prompt)
    if not max_model_len:
        return points, weights
    out = np.sort(np.asarray(output.samples(), dtype=float))
    admitted = np.searchsorted(out, max_model_len - points, side="right") / out.shape[0]
    w = weights * admitted
    if w.sum() <= 0:
        return points, weights
    w = w / w.sum()
    w.flags.writeable = False
    return points, w


def _running_batch(column: StepModel, lam: np.ndarray, mean_out: float, ctx: float, mean_p: float, budget: np.ndarray, prompt_parts) -> tuple[np.ndarray, np.ndarray]:
    """Solve N = lam E[O] t(N), t the lumpy mean step (perf.StepModel.lumpy_step), on log N in
    [1e-3, 1e6]: the excess lam E[O] t(N) - N on a grid of 32 points per candidate, then the same
    on the interval around its sign change, four times (31 intervals a round: 20.7 / 31^4 = 2e-5
    in log N, in four vectorised calls where bisection to that precision made 20), and the root
    of the straight line between the last interval's ends. `column`: the step model as a column
    (StepModel.column). Returns (N, converged)."""
    lam_c, budget_c = lam[:, None], budget[:, None]
    parts_c = (prompt_parts[0][:, None], prompt_parts[1][:, None])
    lo = np.full(lam.shape, np.log(1e-3))
    hi = np.full(lam.shape, np.log(1e6))
    grid = np.linspace(0.0, 1.0, _BATCH_GRID)
    rows = np.arange(lam.shape[0])
    converged = None
    e_lo, e_hi = np.zeros(lam.shape), np.zeros(lam.shape)
    for _ in range(4):
        log_n = lo[:, None] + (hi - lo)[:, None] * grid[None, :]  # (C, G)
        n = np.exp(log_n)
        t = column.lumpy_step(np.maximum(n, 1.0), ctx, lam_c, mean_p, budget_c - n * column.budget_decode_tokens, prompt_parts=parts_c)[0]
        with np.errstate(invalid="ignore"):
            excess = lam_c * mean_out * t - n
        above = excess > 0  # N too small: the batch grows
        if converged is None:
            converged = excess[:, -1] < 0  # a batch below 1e6 sequences balances the arrivals
        # the last grid point still above (the excess falls through zero once as N grows)
        k = np.clip(_BATCH_GRID - 1 - np.argmax(above[:, ::-1], axis=1), 0, _BATCH_GRID - 2)
        grows = above.any(axis=1)
        k = np.where(grows, k, 0)
        lo, e_lo = np.where(grows, log_n[rows, k], lo), np.where(grows, excess[rows, k], 0.0)
        hi, e_hi = log_n[rows, k + 1], excess[rows, k + 1]
    # the root on the straight line between the bracket's ends (in log N), where they straddle it
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where((e_lo > 0) & (e_hi <= 0), e_lo / (e_lo - e_hi), 1.0)
    return np.exp(lo + (hi - lo) * np.where(np.isfinite(share), np.clip(share, 0.0, 1.0), 1.0)), converged


_BATCH_GRID = 32


def _block_s(step: StepModel, batch: np.ndarray, ctx: float, tokens: np.ndarray, chunk: np.ndarray, mean_p: np.ndarray) -> np.ndarray:
    """Time to push `tokens` prompt tokens through steps of at most `chunk` prompt tokens, with
    `batch` sequences decoding: full steps, then the remainder's step."""
    full = np.floor(tokens / chunk)
    rest = tokens - full * chunk
    t_full = step.mixed_parts(batch, ctx, chunk, mean_p)
    t_rest = np.where(rest > 0, step.mixed_parts(batch, ctx, rest, mean_p), 0.0)
    return np.where(tokens > 0, full * t_full + t_rest, step.mixed_parts(batch, ctx, np.zeros_like(tokens), mean_p))


# Bins of the time grids: the M/G/1 wait W (TTFT), and the prompts' delay per output token (TPOT),
# each over its own horizon (checked against grids four times finer: max rates within 1 %).
_WAIT_BINS = 512
_DELAY_BINS = 512


def _compound_delay_cdfs(lam, t, outs, jump, w, sd_batch, backlog=None, extra_count=None):
    """CDFs of Y = X / O for every output length O (outs, (O,)): X compound Poisson with mean count
    lam x O x t (+ `extra_count` (C,)) and jumps `jump` (C, K) of probabilities `w`, plus normal
    noise of sd sd_batch x O, plus (where given) one independent delay `backlog` = (points (C, Q),
    probabilities (Q,)).
    Each (candidate, O) has a grid of its own, spanning its own Y (mean + 10 sd + two largest
    jumps): a common grid would be stretched by the shortest outputs (the widest Y) and resolve
    the long ones, whose Y is narrow, in a few bins.
    Returns (h (C, O) bin widths of Y, cdf (C, O, BINS) at Y = h x (i + 1/2)).

    Computed by FFT over blocks of _BLOCK candidates with the same circle (_delay_fft_length, of
    each candidate's own grid: a candidate's figures never depend on the others evaluated with
    it): the (block, O, circle) arrays pass through a dozen elementwise steps, each of which then
    works in cache (150 candidates: 40 to 50 ms against 63 to 73 ms on all at once, best of 30 on
    this project's 2-core machines)."""
    m, h_y = _delay_grid(lam, t, outs, jump, w, sd_batch, backlog, extra_count)
    lengths = _delay_fft_length(h_y, sd_batch)
    cdf = np.empty((lam.shape[0], outs.shape[0], _DELAY_BINS))
    for n_fft in _FFT_LADDER:  # (np.unique would import numpy.ma: 17 ms of a CLI run)
        same = np.flatnonzero(lengths == n_fft)
        for i in range(0, same.size, _BLOCK):
            b = same[i : i + _BLOCK]
            extra = None if backlog is None else (backlog[0][b], backlog[1])
            cdf[b] = _compound_delay_block(m[b], h_y[b], outs, jump[b], w, sd_batch[b], int(n_fft), extra)
    return h_y, cdf


_BLOCK = 16


def _delay_grid(lam, t, outs, jump, w, sd_batch, backlog=None, extra_count=None):
    """Prompts per life m = lam t O, and the bin width of each (candidate, O) grid of Y: its
    horizon (mean + 10 sd of the compound sum, two largest jumps, 6 sd of noise, the largest
    backlog) over the bins."""
    m = lam[:, None] * t[:, None] * outs[None, :]  # (C, O) prompts per life
    if extra_count is not None:
        m = m + extra_count[:, None]
    ej = (jump * w).sum(axis=1)
    ej2 = (jump**2 * w).sum(axis=1)
    jmax = jump.max(axis=1)
    mean_y = m * ej[:, None] / outs[None, :]
    sd_y = np.sqrt(m * ej2[:, None]) / outs[None, :]
    horizon = mean_y + 10 * sd_y + 2 * jmax[:, None] / outs[None, :] + 6 * sd_batch[:, None] + 1e-12  # (C, O)
    if backlog is not None:
        horizon = horizon + backlog[0].max(axis=1)[:, None] / outs[None, :]
    return m, horizon / _DELAY_BINS


def _delay_fft_length(h_y: np.ndarray, sd_batch: np.ndarray) -> np.ndarray:
    """Per candidate, the FFT's circle: the horizon, then room for the noise's negative side (6 sd
    on its finest grid, at least an eighth of the bins), which wraps round to the top and is
    folded back onto the first bin (mass beyond the horizon is negligible by its construction),
    the least of _FFT_LADDER that holds it."""
    pad = np.ceil(6 * (sd_batch[:, None] / h_y).max(axis=1)) + 1
    need = _DELAY_BINS + np.maximum(pad, _DELAY_BINS // 8)
    ladder = _FFT_LADDER
    return ladder[np.minimum(np.searchsorted(ladder, need), ladder.size - 1)]


# Circles of the horizon plus an eighth, a quarter, a half of it, or twice the bins: 576, 640,
# 768 and 1024 bins, of prime factors 2, 3 and 5 (pocketfft's fast lengths); a few sizes, so that
# candidates share blocks (a length of its own per candidate split them into small ones)
_FFT_LADDER = np.array([_DELAY_BINS * k // 8 for k in (9, 10, 12, 16)], dtype=np.int64)


def _grid_histogram(points, w, h_x, n_fft):
    """Point masses `points` (C, K) of probabilities `w` (K,) on each (candidate, O) grid of bin
    h_x (C, O): one histogram per row, each mass split between the two bins around it in
    proportion (keeps its mean exact). (C, O, n_fft)."""
    c, n_out = h_x.shape
    pos = np.minimum(points[:, None, :] / h_x[:, :, None], n_fft - 1.0)  # (C, O, K)
    lower = np.floor(pos)
    frac = pos - lower
    lower = lower.astype(np.int64)
    upper = np.minimum(lower + 1, n_fft - 1)
    rows = np.arange(c * n_out, dtype=np.int64).reshape(c, n_out, 1) * n_fft
    wk = np.broadcast_to(w, pos.shape)
    return np.bincount(
        np.concatenate([(rows + lower).ravel(), (rows + upper).ravel()]),
        weights=np.concatenate([(wk * (1 - frac)).ravel(), (wk * frac).ravel()]),
        minlength=c * n_out * n_fft,
    ).reshape(c, n_out, n_fft)


def _compound_delay_block(m, h_y, outs, jump, w, sd_batch, n_fft, backlog=None):
    """The CDFs of _compound_delay_cdfs for a block of candidates on FFT circles of n_fft bins."""
    omega = 2 * np.pi * np.fft.rfftfreq(n_fft)  # per bin
    # the jumps on each (candidate, O) grid of X = O x Y (bin h_y x O)
    h_x = h_y * outs[None, :]
    phi = np.fft.rfft(_grid_histogram(jump, w, h_x, n_fft), axis=2)
    # the characteristic function of the compound Poisson sum times the batch noise's (normal)
    z_re = m[:, :, None] * (phi.real - 1.0) + _log_noise_cf(omega, sd_batch[:, None] / h_y)
    cf = _exp_i(z_re, m[:, :, None] * phi.imag)
    if backlog is not None:  # ... times the backlog's
        cf *= np.fft.rfft(_grid_histogram(backlog[0], backlog[1], h_x, n_fft), axis=2)
    pmf = np.fft.irfft(cf, n=n_fft, axis=2)
    # noise may push mass below zero: fold the wrapped negative side back onto the first bin
    neg = pmf[:, :, _DELAY_BINS:].sum(axis=2)
    pmf = np.maximum(pmf[:, :, :_DELAY_BINS], 0.0)
    pmf[:, :, 0] += np.maximum(neg, 0.0)
    return np.minimum(np.cumsum(pmf, axis=2), 1.0)


_NOISE_WIDE_BINS = 3.0  # from this sd (in bins) on, the normal's own transform serves


def _log_noise_cf(omega: np.ndarray, sd_bins: np.ndarray) -> np.ndarray:
    """log of the batch noise's characteristic function on the grid, (C, O) sds -> (C, O, F).

    A normal's transform exp(-(omega sd)^2 / 2) is not small at the grid's Nyquist frequency
    when sd is under a few bins: cut there, it is the transform of a kernel that rings below zero
    (a normal of 0.47 bins put 2.5 % too much mass below the fourth prompt's delay once the negative
    lobes were clipped: a TPOT p99 of 0.0213 s where it is 0.0243 s, flickering between the two
    as the rate moved by 1 %; benchmarks/fuzz.py case 14002462). So under _NOISE_WIDE_BINS the
    noise is the normal sampled at whole bins (a kernel >= 0, mean 0, variance about sd^2), whose
    transform is its cosine sum; above, the two agree to e^-44."""
    sd = np.maximum(np.asarray(sd_bins, dtype=float), 0.0)[:, :, None]
    wide = -0.5 * (omega[None, None, :] * sd) ** 2
    narrow_rows = sd[:, :, 0] < _NOISE_WIDE_BINS
    if not narrow_rows.any():
        return wide
    reach = int(math.ceil(6 * _NOISE_WIDE_BINS)) + 1
    j = np.arange(1, reach + 1, dtype=float)
    s_n = np.maximum(sd[narrow_rows], 1e-12)  # (R, 1)
    k = np.exp(-0.5 * (j[None, :] / s_n) ** 2)  # (R, J) kernel at +-j, relative to the centre
    cf = (1.0 + 2.0 * (k[:, None, :] * np.cos(omega[None, :, None] * j[None, None, :])).sum(axis=2)) / (1.0 + 2.0 * k.sum(axis=1))[:, None]
    out = wide.copy()
    out[narrow_rows] = np.log(np.maximum(cf, 1e-300))
    return out


def _exp_i(re: np.ndarray, im: np.ndarray) -> np.ndarray:
    """exp(re + i im), complex128. numpy's complex exp, and its float64 sine and cosine, run one
    element at a time (25-70 ns here); its float32 sine and cosine are vectorised (about 1 ns). The
    phase is reduced to [-pi, pi] in float64 first, so float32 costs only its rounding there
    (|error| < 1e-6 per term, against CDFs read at 1e-3 and coarser). Terms of modulus below
    e^-40 = 4e-18 are left at zero: in the characteristic functions here they are most of the
    array (the high frequencies of a spread-out sum), and skipping them halves the time."""
    out = np.zeros(re.shape, dtype=np.complex128)
    live = np.flatnonzero(re > _NEGLIGIBLE_LOG)
    if not live.size:
        return out
    turns = im.ravel()[live] * (0.5 / np.pi)
    phase = ((turns - np.rint(turns)) * (2 * np.pi)).astype(np.float32)
    mod = np.exp(re.ravel()[live])
    flat = out.ravel()  # a view: out is contiguous
    flat.real[live] = mod * np.cos(phase)
    flat.imag[live] = mod * np.sin(phase)
    return out


_NEGLIGIBLE_LOG = -40.0


def _mixture_quantile(grid, weights: np.ndarray, q: float, offset: np.ndarray | None = None) -> np.ndarray:
    """q-quantile of the mixture (weights over O) of the per-O CDFs, each on its own grid
    (linear between bin centres), per candidate; each O's variable moved by `offset` (C, O)."""
    h, cdf = grid  # (C, O), (C, O, BINS)
    c, n_out, bins = cdf.shape
    flat = cdf.ravel()
    start = (np.arange(c * n_out) * bins).reshape(c, 1, n_out)  # each (candidate, O) row's offset in flat
    first = cdf[:, None, :, 0]
    h3 = h[:, None, :]
    shift = np.zeros((c, 1, n_out)) if offset is None else offset[:, None, :]

    def mix(y: np.ndarray) -> np.ndarray:  # y (C, G) -> (C, G)
        pos = (y[:, :, None] - shift) / h3 - 0.5
        i0 = np.minimum(np.fmax(np.floor(pos), 0), bins - 2).astype(np.int64)
        frac = np.minimum(np.maximum(pos - i0, 0.0), 1.0)
        i0 += start
        lo = flat.take(i0)
        val = lo + frac * (flat.take(i0 + 1) - lo)
        val = np.where(pos < 0, np.where(pos < -0.5, 0.0, first * (pos + 0.5) * 2), np.where(pos > bins - 1, 1.0, val))
        return val @ weights

    hi = (h * bins + shift[:, 0, :]).max(axis=1)
    return _bisect_quantile(mix, np.minimum(shift[:, 0, :].min(axis=1), 0.0), hi, q)


def _pk_wait_cdf(
    rho: np.ndarray,
    service: np.ndarray,
    w: np.ndarray,
    slot_p: np.ndarray | None = None,
    slot_mean: np.ndarray | None = None,
    uniform_s: tuple[np.ndarray, ...] = (),
):
    """M/G/1 virtual waiting time (Pollaczek-Khinchine): W = sum of a geometric(rho) number of
    equilibrium residuals of the service S (point masses `service` (C, K), probabilities w);
    plus, independent of it, the wait for a slot: 0, or with probability `slot_p` exponential of
    mean `slot_mean` (_slot_wait; on the grid, geometric of the same mean); plus, independent of
    both, one wait uniform on [0, u) for each array u (C,) of `uniform_s` (the phase of an arrival
    in the engine's step and admission cycles: evaluate_load).
    Returns (edges (C, BINS), cdf (C, BINS)) on per-candidate grids."""
    c = rho.shape[0]
    r = np.clip(rho, 0.0, 0.999)
    es = (service * w).sum(axis=1)
    es2 = (service**2 * w).sum(axis=1)
    ew = np.where(r < 1, r * es2 / (2 * np.maximum(es, 1e-300) * (1 - r)), 0.0)
    horizon = 12 * ew + 2 * service.max(axis=1) + 1e-9
    if slot_p is not None:
        # the slot wait's tail to where its mass falls below 1e-6
        sm = np.where(np.isfinite(slot_mean), slot_mean, 0.0)
        horizon = horizon + sm * np.maximum(np.log(np.maximum(slot_p, 1e-300) * 1e6), 0.0)
    uniforms = [np.where(np.isfinite(u), np.maximum(u, 0.0), 0.0) for u in uniform_s]
    for u in uniforms:
        horizon = horizon + u
    h = horizon / _WAIT_BINS
    n_fft = 2 * _WAIT_BINS  # support beyond twice the horizon is negligible (checked: identical rates on the shipped workloads)
    # residual density (1 - F_S(x)) / E[S] integrated over each bin [x_i, x_i + h): differences of
    # G(x) = E[min(S, x)] = sum over s_k <= x of w_k s_k + x (sum over s_k > x of w_k), at the grid
    # points x_i = i h; a point s_k counts from grid point ceil(s_k / h) on
    j = np.clip(np.ceil(service / h[:, None]), 0, n_fft + 1).astype(np.int64)  # (C, K)
    rows = np.arange(c, dtype=np.int64)[:, None] * (n_fft + 2)
    wk = np.broadcast_to(w, service.shape)
    below_w = np.cumsum(np.bincount((rows + j).ravel(), weights=wk.ravel(), minlength=c * (n_fft + 2)).reshape(c, n_fft + 2), axis=1)
    below_ws = np.cumsum(np.bincount((rows + j).ravel(), weights=(wk * service).ravel(), minlength=c * (n_fft + 2)).reshape(c, n_fft + 2), axis=1)
    below_ws2 = np.cumsum(np.bincount((rows + j).ravel(), weights=(wk * service**2).ravel(), minlength=c * (n_fft + 2)).reshape(c, n_fft + 2), axis=1)
    grid = h[:, None] * np.arange(n_fft + 1)[None, :]
    above = w.sum() - below_w[:, : n_fft + 1]
    g = grid * above + below_ws[:, : n_fft + 1]
    mass = np.diff(g, axis=1) / np.maximum(es, 1e-300)[:, None]
    # Each bin's mass goes to the two lattice points around its mean (i h and (i + 1) h, in
    # proportion), so that every residual keeps its mean: H(x) = integral of t (1 - F_S(t)) dt
    # = sum over s_k <= x of w_k s_k^2 / 2 + x^2 / 2 (sum over s_k > x of w_k). Put whole at the
    # bin's lower point instead, a residual shorter than a bin counted as 0, and in heavy traffic
    # (rho near 1: E[W] hundreds of times the service, bins wider than it) the sum of a thousand
    # residuals came out as 0: a TTFT p99 of 0.3 s where it is minutes, at a rate just above one
    # where it was 5 s (a plan reported TTFT p99 5.07 s against a bound of 2.4 s, issue 10).
    big_h = grid**2 / 2 * above + below_ws2[:, : n_fft + 1] / 2
    moment = np.diff(big_h, axis=1) / np.maximum(es, 1e-300)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(mass > 1e-300, moment / np.maximum(mass, 1e-300) / h[:, None] - np.arange(n_fft)[None, :], 0.0)
    u = np.clip(np.nan_to_num(u), 0.0, 1.0)
    lattice = mass * (1 - u)
    lattice[:, 1:] += (mass * u)[:, :-1]
    lattice[:, -1] += (mass * u)[:, -1]  # beyond the circle: negligible by the horizon's construction
    phi = np.fft.rfft(lattice, axis=1)
    gen = (1 - r)[:, None] / (1 - r[:, None] * phi)
    if slot_p is not None:
        g = np.where(np.isfinite(slot_mean), slot_mean, 0.0) / h
        keep = (g / (1.0 + g))[:, None]  # geometric on the lattice, mean g bins
        z = np.exp(-2j * np.pi * np.fft.rfftfreq(n_fft))[None, :]
        gen = gen * ((1 - slot_p)[:, None] + slot_p[:, None] * (1 - keep) / (1 - keep * z))
    for u in uniforms:
        gen = gen * _uniform_transform(u / h, n_fft)
    pmf = np.maximum(np.fft.irfft(gen, n=n_fft, axis=1)[:, :_WAIT_BINS], 0.0)
    edges = h[:, None] * (np.arange(_WAIT_BINS)[None, :] + 1.0)
    return edges, np.minimum(np.cumsum(pmf, axis=1), 1.0)


def _uniform_transform(length_bins: np.ndarray, n_fft: int) -> np.ndarray:
    """The transform (C, n_fft // 2 + 1, as numpy's rfft) of the uniform law on [0, L) bins,
    L = `length_bins` (C,), put on the lattice as _pk_wait_cdf puts the residuals: each bin's
    share goes to the two lattice points around the bin's own mean, in proportion, so that the
    lattice law keeps the mean L / 2. With m = floor(L) whole bins and a last one of width f:

        whole bins  k < m      1 / (2 L) at k and at k + 1:  (1 + z) (1 - z^m) / (2 L (1 - z))
        the last    f / L      (1 - f / 2) at m, f / 2 at m + 1

    z = exp(-i omega) at the transform's frequencies. L = 0 is the law at 0 (transform 1)."""
    length = np.clip(np.asarray(length_bins, dtype=float), 0.0, n_fft - 2.0)[:, None]
    whole = np.floor(length)
    frac = length - whole
    omega = 2 * np.pi * np.fft.rfftfreq(n_fft)[None, :]
    z = np.exp(-1j * omega)
    zm = np.exp(-1j * omega * whole)  # z^m: numpy's complex exp, one element at a time (_exp_i), so once
    # the geometric sum of z^k over k < m, m at omega = 0
    with np.errstate(divide="ignore", invalid="ignore"):
        geo = np.where(omega > 0, (1 - zm) / (1 - z), whole + 0j)
    safe = np.maximum(length, 1e-300)
    out = ((1 + z) * geo / 2 + frac * ((1 - frac / 2) * zm + frac / 2 * zm * z)) / safe
    return np.where(length > 1e-9, out, 1.0 + 0j)


def _wait_points(edges: np.ndarray, cdf: np.ndarray, atom: np.ndarray) -> np.ndarray:
    """The wait of _pk_wait_cdf at the middle of each probability cell of _EDGES, per candidate
    (C, Q): 0 below the atom P(W = 0), linear between the grid's edges (and from the atom at 0 to
    the first edge), as _shifted_quantile reads it."""
    mids = 0.5 * (_EDGES[:-1] + _EDGES[1:])  # (Q,)
    c, bins = cdf.shape
    below = (cdf[:, :, None] < mids[None, None, :]).sum(axis=1)  # (C, Q) edges whose CDF is below q
    i = np.minimum(below, bins - 1)
    rows = np.arange(c)[:, None]
    hi_x, hi_f = edges[rows, i], cdf[rows, i]
    lo_x = np.where(i > 0, edges[rows, np.maximum(i - 1, 0)], 0.0)
    lo_f = np.where(i > 0, cdf[rows, np.maximum(i - 1, 0)], atom[:, None])
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.clip((mids[None, :] - lo_f) / (hi_f - lo_f), 0.0, 1.0)
    x = lo_x + (hi_x - lo_x) * np.where(np.isfinite(share), share, 1.0)
    return np.where(mids[None, :] <= atom[:, None], 0.0, x)


def _shifted_quantile(edges: np.ndarray, cdf: np.ndarray, shift: np.ndarray, w: np.ndarray, q: float, atom: np.ndarray) -> np.ndarray:
    """q-quantile of shift_k + W over k (probabilities w), W with CDF `cdf` on `edges` (C, BINS)
    (h, 2h, ...) and P(W = 0) = `atom` (C,): the M/G/1 wait's 1 - rho, an arrival that finds no
    work. Between 0 and the first edge the CDF rises from the atom to cdf[0]. (Taking it as 0
    there, as this did before, added up to a bin to every TTFT: at the shipped plans' loads 0.1 to
    1.9 %, at zero load up to 0.24 s, 4.6 %, where the bin is set by the longest prompt's service;
    the largest rates of candidates bound by TTFT near zero load rose up to 3x with it gone.)"""
    c = edges.shape[0]

    # edges are uniform per candidate (h, 2h, ..., BINS h): interpolate by index arithmetic
    h = edges[:, :1, None]
    last = edges.shape[1] - 1
    flat = cdf.ravel()
    start = (np.arange(c) * edges.shape[1])[:, None, None]  # each candidate's offset in flat

    def mix(x: np.ndarray) -> np.ndarray:  # x (C, G) -> (C, G)
        pos = (x[:, :, None] - shift[:, None, :]) / h - 1.0
        i0 = np.minimum(np.fmax(np.floor(pos), 0), last - 1).astype(np.int64)
        frac = np.minimum(np.maximum(pos - i0, 0.0), 1.0)
        i0 += start
        lo = flat.take(i0)
        val = lo + frac * (flat.take(i0 + 1) - lo)
        rise = a0 + (first - a0) * (pos + 1.0)  # from the atom at W = 0 to the first edge
        return np.where(pos < -1.0, 0.0, np.where(pos < 0, rise, np.where(pos > last, 1.0, val))) @ w

    a0 = atom[:, None, None]
    first = cdf[:, :1, None]  # at the first edge, (C, 1, 1)
    lo = shift.min(axis=1)
    hi = shift.max(axis=1) + edges[:, -1] + 1e-9
    return _bisect_quantile(mix, lo, hi, q)


_QUANTILE_GRID = np.arange(1, 9) / 8


def _bisect_quantile(cdf, lo: np.ndarray, hi: np.ndarray, q: float, rounds: int = 7) -> np.ndarray:
    """The least x with cdf(x) >= q, per candidate: `cdf` (non-decreasing) read at 8 points across
    the bracket at once, the bracket narrowed to the step where it reaches q, `rounds` times (to
    (hi - lo) / 8^7 = 5e-7 of the span at 7: 56 readings, where 4 rounds of 32 took 128 to the
    same precision), then read off the straight line between the
    bracket's ends (the CDFs are linear between their grid points, so that the line is exact
    where the last bracket holds no kink of theirs, and within the bracket where it does: at a
    jump, such as the wait's atom at zero, a millionth of the span from it). Where cdf never
    reaches q, hi."""
    rows = np.arange(lo.shape[0])
    f_lo = np.zeros(lo.shape)
    f_hi = np.ones(lo.shape)
    for _ in range(rounds):
        x = lo[:, None] + (hi - lo)[:, None] * _QUANTILE_GRID[None, :]  # (C, 8)
        values = cdf(x)
        reached = values >= q
        j = np.where(reached.any(axis=1), np.argmax(reached, axis=1), _QUANTILE_GRID.size - 1)
        below = j > 0
        lo, f_lo = np.where(below, x[rows, np.maximum(j - 1, 0)], lo), np.where(below, values[rows, np.maximum(j - 1, 0)], f_lo)
        hi, f_hi = x[rows, j], values[rows, j]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(f_hi > f_lo, (q - f_lo) / (f_hi - f_lo), 1.0)
    return np.where(f_hi >= q, lo + (hi - lo) * np.clip(share, 0.0, 1.0), hi)


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


TRICKLE_FRACTION = 1e-9  # of prefill saturation: the lowest rate max_rate probes, and the one a replica at no load is evaluated at


def evaluate_load(step: StepModel, lam: np.ndarray, demand: Demand, limits: Limits, slo_only: bool = False) -> LoadPoint:
    """TTFT and TPOT percentiles of every candidate at per-replica rate `lam` (requests/s).

    `slo_only`: compute only the percentiles the SLOs name (what feasibility needs), not the p50
    and p99 reported beside them."""
    given = np.asarray(lam, dtype=float)
    mean_p = demand.prompt.mean
    # A replica at no load (a pool kept for min_replicas or N+1 carries 0 req/s) has the latency of
    # the limit rate -> 0: evaluated at the rate search's own trickle, 1e-9 of prefill saturation.
    # At exactly 0 the wait transform divides 0 by 0 (a TTFT p99 of 0.854 s where the trickle has
    # 0.347 s, over a bound the plan was sized within: fuzz seed 20261265787473).
    trickle = TRICKLE_FRACTION / (mean_p * step.prefill_per_token_s(np.full(step.size, mean_p)))
    lam = np.where(given > 0, given, trickle * np.ones_like(given))
    mean_o = demand.output.mean
    ctx = demand.mean_running_context
    budget = np.asarray(limits.max_num_batched_tokens, dtype=float) * np.ones_like(lam)
    mp = np.full(lam.shape, mean_p)
    # attention is quadratic in the prompt: per prompt token it is paid at the size-biased mean
    # length E[P^2] / E[P] (a token is more likely to sit in a long prompt), GEMMs per token alike
    parts = step.prefill_token_parts(np.full(lam.shape, demand.prompt.size_biased_mean))
    column = step.column()  # (C, 1) arrays: broadcasts over a second axis of batches or prompt lengths
    n, converged = _running_batch(column, lam, mean_o, ctx, mean_p, budget, parts)
    n = np.maximum(n, 0.0)
    nb = np.maximum(n, 1.0)
    chunk = np.maximum(budget - n * step.budget_decode_tokens, 1.0)  # prompt tokens a step can take
    # the mean step at the running batch, and (for TPOT's spread below) at the batch and the mean
    # context moved either side, in one call: five columns of batches and contexts
    d = np.maximum(0.05 * n, 1.0)
    dc = max(0.05 * ctx, 1.0)
    batches = np.stack([nb, n + d, np.maximum(n - d, 1.0), nb, nb], axis=1)
    contexts = np.array([ctx, ctx, ctx, ctx + dc, max(ctx - dc, 1.0)])[None, :]
    steps = column.lumpy_step(batches, contexts, lam[:, None], mp[:, None], chunk[:, None], prompt_parts=(parts[0][:, None], parts[1][:, None]))
    t, p_step, f0, f1 = (a[:, 0] for a in steps)
    t_up, t_dn, t_cu, t_cd = (steps[0][:, k] for k in range(1, 5))
    c_p = parts[0] + parts[1]
    u = lam * mean_p * c_p  # share of replica time spent on prompts
    reported = () if slo_only else ("p50", "p99")
    ttft_keys = sorted({*reported, *(k for k, _ in demand.ttft_s)}, key=lambda k: _PCT[k])
    tpot_keys = sorted({*reported, *(k for k, _ in demand.tpot_s)}, key=lambda k: _PCT[k])
    finite = np.isfinite(t)

    # Each prompt occupies the replica for its block (its steps, decode included); beyond the
    # decode steps it displaces, it delays every running sequence by J(P).
    points, point_w = _admitted_prompt_points(demand.prompt, demand.output, float(demand.max_model_len))  # (K,)
    t_ok = np.where(finite, t, 0.0)
    nb_c, chunk_c, pts = nb[:, None], chunk[:, None], points[None, :]
    block = _block_s(column, nb_c, ctx, pts, chunk_c, pts)  # (C, K), attention at each prompt's own length
    steps_in = np.ceil(points[None, :] / chunk[:, None])
    alone = np.maximum(block - steps_in * f0[:, None], 0.0)  # (C, K) delay a prompt alone adds to decoders
    # Prompts arriving close together share steps (and the decode work in them), so the stand-alone
    # delays overstate what prompts add: keep their (heavy-tailed) shape, scale them to the step
    # composition of perf.StepModel.lumpy_step, where prompts add p (f1 - f0) / t of the time.
    with np.errstate(divide="ignore", invalid="ignore"):
        added = np.where(finite & (t_ok > 0), p_step * np.maximum(f1 - f0, 0.0) / np.maximum(t_ok, 1e-300), 0.0)
        e_alone = (alone * point_w[None, :]).sum(axis=1)
        jump = alone * np.where(lam * e_alone > 0, added / np.maximum(lam * e_alone, 1e-300), 1.0)[:, None]

    # --- TPOT: a request's decode steps plus the prompts prefilled during its life --------------
    # TPOT(O) = f0 + X / O, X the prompts' delays during its O steps: those arriving during them
    # (a sum of J over Poisson(lam O t) prompts: compound Poisson, on a time grid by FFT), and the
    # prompt backlog it starts with (below); blurred by the running batch's fluctuation through
    # the step's slope dt/dN; TPOT_q is the q-quantile of the mixture over O.
    with np.errstate(invalid="ignore"):  # unstable candidates: inf - inf, discarded by the where
        slope = np.where(np.isfinite(t_up) & np.isfinite(t_dn), (t_up - t_dn) / ((n + d) - np.maximum(n - d, 1.0)), 0.0)
    # ... and so does the KV-read load through which sequences are running: sum of N contexts,
    # each a prompt plus part of a (size-biased) output, variance N Var(context), through the
    # step's slope in context dt/d(sum of contexts)
    with np.errstate(invalid="ignore"):
        slope_ctx = np.where(np.isfinite(t_cu) & np.isfinite(t_cd), (t_cu - t_cd) / ((ctx + dc) - max(ctx - dc, 1.0)) / nb, 0.0)
    sd_batch = np.sqrt(slope**2 * n + slope_ctx**2 * n * demand.running_context_variance)
    outs, out_w = _points(demand.output, _OUTPUT_EDGES)
    outs = np.maximum(outs - 1, 1.0)  # steps after the first token
    base_tpot = np.where(finite, t - lam * t_ok * (jump * point_w[None, :]).sum(axis=1), 0.0)  # the mean step less what prompts add
    mean_delay = lam * t_ok * (jump * point_w[None, :]).sum(axis=1)

    # --- TTFT: FCFS behind the prompt tokens already there, then the prompt's own chunks ---------
    # Chunked prefill is a token server: each step takes up to `chunk` prompt tokens, in arrival
    # order, a full step lasting t_full(P) (attention at the prompt's length). A prompt of P tokens
    # occupies it for S(P) = P t_full(P) / chunk; the work ahead of an arrival is the M/G/1 virtual
    # wait W (Pollaczek-Khinchine: a geometric(rho) number of residuals of S, on a time grid by
    # FFT), rho = lam E[S]. Then the prompt's own steps: full ones, and a last step that also
    # takes the prompts which arrived since its first began, up to the budget. An idle server still
    # finishes the decode step under way. TTFT = the phase waits (below) + request overhead + the
    # wait for a slot (below) + W + own; TTFT_q is the q-quantile of the mixture over prompt
    # lengths.
    # The phase waits: an arrival falls at a random point of the decode step under way, which it
    # waits out (uniform on [0, f0), mean f0 / 2), and of the scheduler's admission cycle, which
    # takes it admission_steps x t later on average: uniform on [0, 2 admission_steps x t), the
    # wait for the next admission of a scheduler that admits once a cycle of that length (vLLM
    # V0's --num-scheduler-steps k admits new requests once every k steps; AMD's MLPerf v6.0
    # harness once every VLLM_SUBSEQUENT_DECODE_STEPS + 1). Both were their means (a constant)
    # before: the same mean TTFT, with a p99 / mean of 1.68 against the 1.96 of 81 MLPerf Server
    # and Interactive runs at their edges, where the uniform waits give 1.93
    # (benchmarks/tail_widths.py).
    # an overlap scheduler returns the first token a (mean) step later (perf.overlap_scheduler)
    fixed = step.overlap_scheduler * t_ok + step.request_overhead_s
    phases = (np.where(finite, f0, 0.0), np.where(finite, 2.0 * step.admission_steps * t_ok, 0.0))
    t_full = column.mixed_parts(nb_c, ctx, chunk_c, pts)  # (C, K)
    service_tok = points[None, :] * t_full / chunk[:, None]
    rho = lam * (service_tok * point_w[None, :]).sum(axis=1)
    rho = np.where(finite, rho, np.inf)
    # the prompt's own steps: the full ones, then the last, which also takes what arrived since
    n_own = np.ceil(pts / chunk_c)
    rem = pts - (n_own - 1) * chunk_c
    joined = lam[:, None] * mean_p * ((n_own - 1) * t_full + 0.5 * t_ok[:, None])
    own = (n_own - 1) * t_full + column.mixed_parts(nb_c, ctx, np.minimum(chunk_c, rem + joined), pts)
    rho_w = np.where(np.isfinite(rho), np.minimum(rho, 0.999), 0.999)
    pk_edges, pk_cdf = _pk_wait_cdf(rho_w, service_tok, point_w)

    # The backlog a request starts decoding with: the prompts that arrived while it waited and
    # was prefilled queue behind it (FCFS), and are prefilled in its first steps, each a full
    # chunk step of which f0 / t_full is decode. The work an M/G/1 departure leaves behind is
    # distributed as the work an arrival finds (the queue it leaves equals in law the queue
    # arrivals see, Poisson arrivals seeing time averages), so the backlog is W again, here
    # independent of its own wait's draw. Each second of it delays the decoders 1 - f0 / t_full,
    # and the prompts arriving meanwhile add their own (1 / (1 - rho_J): a busy period started by
    # it). A request leaves a backlog behind it as well, the same in law: its mean comes off the
    # life (so that the mean step stays t; its spread is not added: at the end of a short life it
    # is mostly the backlog the life began with, not yet prefilled). (rag's shipped replica,
    # simulated: requests whose TTFT was above its p90 had twice the mean TPOT of the others.)
    decode_share = (service_tok * point_w[None, :] * np.where(t_full > 0, f0[:, None] / np.maximum(t_full, 1e-300), 1.0)).sum(axis=1) / np.maximum(
        (service_tok * point_w[None, :]).sum(axis=1), 1e-300
    )
    rho_j = np.clip(np.where(finite, added, 0.0), 0.0, 0.95)
    kappa = np.clip(1.0 - decode_share, 0.0, 1.0) / (1.0 - rho_j)
    # The backlog is the prompts that arrived during its sojourn T = W + own: compound Poisson
    # over a random window, which keeps its two moments as a compound Poisson over the mean
    # window E[T] (count lam E[T], the same jumps) plus the fluid rho (T - E[T]) (the law of total
    # variance: Var = lam E[T] E[J^2] + rho^2 Var(T)); a sojourn's tail is a long wait's.
    waits = _wait_points(pk_edges, pk_cdf, 1.0 - np.clip(rho_w, 0.0, 0.999))  # (C, Q)
    backlog_w = np.diff(_EDGES)
    mean_sojourn = (waits * backlog_w[None, :]).sum(axis=1) + (own * point_w[None, :]).sum(axis=1)
    backlog = waits * (rho_w * kappa)[:, None]  # (C, Q) seconds of delay: the fluid part
    backlog_mean = (backlog * backlog_w[None, :]).sum(axis=1)
    backlog_count = np.where(finite, lam * mean_sojourn, 0.0)
    # Prompts that arrive during a request's life lengthen it, and a longer life admits more of
    # them: the life is an M/G/1 busy period started by the decode work, not a fixed window. Same
    # mean; variance larger by 1 / (1 - rho_J)^2 (busy period: w lam E[J^2] / (1 - rho_J)^3 against
    # the compound Poisson's w lam E[J^2] / (1 - rho_J)), rho_J = lam E[J] = `added`: the sum's
    # deviation from its mean mu widened by s = 1 / (1 - rho_J), s (X - mu) + mu, which is the
    # compound sum of the jumps s J, moved by -(s - 1) mu.
    spread = 1.0 / np.maximum(1.0 - np.where(finite, added, 0.0), 0.05)
    tpot_grid = _compound_delay_cdfs(lam, t_ok, outs, jump * spread[:, None], point_w, sd_batch, (backlog, backlog_w), backlog_count)  # (h (C, O), cdf (C, O, BINS)) of X / O
    e_jump = (jump * point_w[None, :]).sum(axis=1)
    offset = -((spread - 1.0) * mean_delay)[:, None] - (backlog_mean + backlog_count * spread * e_jump)[:, None] / outs[None, :]
    tpot = {}
    for key in tpot_keys:
        q = _mixture_quantile(tpot_grid, out_w, _PCT[key], offset)
        tpot[key] = np.where(finite, base_tpot + np.maximum(q, 0.0), np.inf)

    # --- the running batch, and the wait for one of the launch line's --max-num-seqs slots ------
    if limits.slot_cap is not None:
        cap = np.asarray(limits.slot_cap, dtype=float) * np.ones_like(lam)
    else:
        cap = np.minimum(np.asarray(limits.max_concurrency, dtype=float), np.asarray(limits.max_num_seqs, dtype=float)) * np.ones_like(lam)
    batch = _running_batch_law(n, t_ok, slope, lam, jump, point_w, added, base_tpot, (own * point_w[None, :]).sum(axis=1), demand, finite)
    mean_batch, var_batch = batch
    tail = _gamma_quantile(mean_batch, var_batch, _Z[BATCH_TAIL])
    slot_p, slot_mean = _slot_wait(mean_batch, var_batch, cap, lam, n, slope, t_ok)
    wait_edges, wait_cdf = _pk_wait_cdf(rho_w, service_tok, point_w, slot_p, slot_mean, uniform_s=phases)
    ttft = {}
    # P(wait = 0): no work ahead, no slot to wait for, and no phase to wait out
    atom = np.where(phases[0] + phases[1] > 0, 0.0, (1.0 - np.clip(rho_w, 0.0, 0.999)) * (1.0 - slot_p))
    for key in ttft_keys:
        q = _shifted_quantile(wait_edges, wait_cdf, fixed[:, None] + own, point_w, _PCT[key], atom=atom)
        ttft[key] = np.where((rho < 1) & finite & np.isfinite(slot_mean), q, np.inf)

    stable = converged & (u < 1) & (rho < 1) & finite
    return LoadPoint(
        rate_rps=given,
        stable=stable,
        prefill_share=u,
        prefill_rho=rho,
        decoding_mean=n,
        running_mean=mean_batch,
        running_tail=tail,
        running_variance=var_batch,
        slot_wait_probability=slot_p,
        slot_wait_mean_s=slot_mean,
        ttft_s=ttft,
        tpot_s=tpot,
    )


def _running_batch_law(n, t, slope, lam, jump, w, added, base_step, own_s, demand: Demand, finite):
    """Mean and variance of the sequences the engine runs at once, were there no cap: the n
    decoding (Little's law) and the lam E[own prefill] still prefilling their prompts.

    Not Poisson. The batch is an infinite-server system whose servers all slow down together,
    which spreads it wider than its mean, in two ways:

    - the step lengthens with the batch (slope dt/dN): every sequence of a larger batch decodes
      more slowly, so departures grow less than in proportion. Residency counted in token-steps
      makes the batch a symmetric queue (Kelly, Reversibility and Stochastic Networks, 1979,
      ch. 3: each of n sequences served at 1 / (n t(n)) of the replica's n / t(n) tokens per
      second), whose occupancy is insensitive to the output-length law:
      pi(n) ~ prod_{k <= n} lam E[O] t(k) / k; about its mode the variance is
      n t / (t - n dt/dN) = n / (1 - e), e = n t'(n) / t the step's elasticity in the batch.
    - every prompt prefilled stalls every running sequence by its delay J (`jump`, as TPOT uses
      it): a sequence of age u is still running when its O - 1 steps of base time t_b outlast u
      less the stalls Pi(u) of the prompts that arrived since, O t_b > u - Pi(u). Linearised about
      Pi(u) = rho u (rho = lam E[J], `added`), each prompt arriving s ago adds
      lam J G((1 - rho) s) / (1 - rho) sequences, G(x) = P((O - 1) t_b > x): a shot noise over the
      Poisson prompts, of variance lam^3 E[J^2] I / (1 - rho)^3, I = integral of G^2 =
      t_b E[min(O - 1, O' - 1)], and covariance lam^2 E[J] I / (1 - rho)^2 with the count of the
      same arrivals, twice.

    Both amplify together (the slower departures of a larger batch act on the stalls' excess
    too): Var = (n + shared) / (1 - e) + the prefilling count's own Poisson variance. Measured
    against the simulator's stationary batch (tests/test_queueing.py) on the shipped plans."""
    e_j = (jump * w[None, :]).sum(axis=1)
    e_j2 = (jump**2 * w[None, :]).sum(axis=1)
    rho = np.clip(np.where(finite, added, 0.0), 0.0, 0.95)
    overlap_s = np.where(finite, base_step, 0.0) * demand.output_overlap_steps
    shared = 2 * lam**2 * e_j * overlap_s / (1 - rho) ** 2 + lam**3 * e_j2 * overlap_s / (1 - rho) ** 3
    with np.errstate(divide="ignore", invalid="ignore"):
        elasticity = np.where(finite & (t > 0), n * slope / np.maximum(t, 1e-300), 0.0)
    elasticity = np.clip(elasticity, 0.0, 0.95)
    prefilling = lam * np.where(finite, own_s, 0.0)
    mean = n + prefilling
    var = (n + shared) / (1 - elasticity) + prefilling
    return mean, np.maximum(var, mean)


def _batch_gamma(mean: np.ndarray, var: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(shape k, scale theta, shift) of the shifted gamma law with the batch's mean, variance and
    the skewness of a negative binomial of that mean and variance, (2 V - m) / (m sqrt V): a
    Poisson count whose mean is itself gamma-spread, as the batch's is (Poisson given the stalls
    and the batch's slow-down, which move its mean). V = m gives Poisson's skewness 1 / sqrt(m)
    (a plain gamma would give twice that, and twice the tail beyond the p99)."""
    m = np.maximum(mean, 1e-300)
    v = np.maximum(var, m)
    skew = np.maximum(2 * v - m, m) / (m * np.sqrt(v))
    k = 4.0 / skew**2
    theta = np.sqrt(v / k)
    return k, theta, m - k * theta


def _gamma_quantile(mean: np.ndarray, var: np.ndarray, z: float) -> np.ndarray:
    """The batch's quantile at standard normal z: the shifted gamma of _batch_gamma, read by
    Wilson and Hilferty's cube root (a gamma variable's cube root is nearly normal); 0 where the
    mean is 0."""
    k, theta, shift = _batch_gamma(mean, var)
    a = 1.0 / (9.0 * k)
    return np.where(mean > 0, np.maximum(shift + k * theta * np.maximum(1.0 - a + z * np.sqrt(a), 0.0) ** 3, 0.0), 0.0)


def _gamma_survival(mean: np.ndarray, var: np.ndarray, x: np.ndarray) -> np.ndarray:
    """P(N > x) of the law of _gamma_quantile."""
    k, theta, shift = _batch_gamma(mean, var)
    a = 1.0 / (9.0 * k)
    z = (np.cbrt(np.maximum(x - shift, 0.0) / (k * theta)) - (1.0 - a)) / np.sqrt(a)
    return np.where(mean > 0, 1.0 - _phi(z), 0.0)


def _slot_wait(mean, var, cap, lam, n, slope, t):
    """The wait for a slot when the engine runs at most `cap` sequences (--max-num-seqs): with
    probability P_w an arrival finds every slot taken, and then waits for Q + 1 to free, Q the
    requests queued before it. (P_w, mean wait of one that waits, seconds.)

    The batch held at c: below c it is the free batch (_running_batch_law's law, gamma, taken
    at whole numbers: P(N = k) = P(k - 1/2 < G <= k + 1/2)); at c it queues, as a birth-death
    chain whose arrivals (lam) meet departures at the rate the batch has at the cap, mu_c, so
    that the chain's mass at c and above is P(N = c) mu_c / (mu_c - lam). The drift there,
    mu_c - lam, is the free batch's pull back to its mean, kappa (c - m), with kappa = lam / V
    (the relaxation rate of an Ornstein-Uhlenbeck process of variance V driven at 2 lam: Var =
    2 lam / (2 kappa)): mu_c / (mu_c - lam) = V / (c - m) + 1 = E[Q] + 1, Q the queue of a
    waiting arrival. So P_w = P(N = c) (V / (c - m) + 1) / (P(N < c) + P(N = c) (V / (c - m) + 1)),
    and a waiting arrival waits for Q + 1 slots, freed at mu_c = lam (c / m) t(m) / t(c) a
    second: W | W > 0 has mean (V / (c - m) + 1) / mu_c. For Poisson M/M/c (V = m = lam / mu, t
    constant) the two are Erlang C's (C(c, a) = P(N = c) c / (c - a) over P(N < c) + the same,
    N Poisson(a), and 1 / (c mu - lam)): tests/test_queueing.py checks them against Erlang C
    worked by hand. Unstable (inf) where m >= c."""
    c = np.maximum(cap, 1.0)
    gap = c - mean
    below = 1.0 - _gamma_survival(mean, var, c - 0.5)  # P(N <= c - 1)
    at_cap = np.maximum(_gamma_survival(mean, var, c - 0.5) - _gamma_survival(mean, var, c + 0.5), 0.0)  # P(N = c)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        queue = np.where(gap > 0, var / np.maximum(gap, 1e-300) + 1.0, np.inf)  # E[Q] + 1 = mu_c / (mu_c - lam)
        p = np.where(np.isfinite(queue), at_cap * queue / np.maximum(below + at_cap * queue, 1e-300), 1.0)
        growth = np.where(t > 0, 1.0 + slope * np.maximum(c - n, 0.0) / np.maximum(t, 1e-300), 1.0)  # t(c) / t(m)
        mu_c = lam * c / np.maximum(mean, 1e-300) / growth
        w = np.where(np.isfinite(queue), queue / np.maximum(mu_c, 1e-300), np.inf)
    w = np.where(mean > 0, w, 0.0)
    return np.clip(np.where(mean > 0, p, 0.0), 0.0, 1.0), w


CHECKS = ("compute", "memory", "max_num_seqs", "ttft", "tpot")


def _scaled(values: np.ndarray, scale) -> np.ndarray:
    """A latency times its check's scale; 0 where the scale is 0 (that bound not checked), an
    unstable candidate's infinite latency included (inf x 0 would be NaN, with numpy's warning)."""
    scale = np.asarray(scale, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(scale == 0, 0.0, values * scale)


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
        out["ttft"] |= _scaled(point.ttft_s[key], _scale(limits.ttft_scale, key)) > bound
    for key, bound in demand.tpot_s:
        out["tpot"] |= _scaled(point.tpot_s[key], _scale(limits.tpot_scale, key)) > bound
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
    at_zero: LoadPoint  # at a trickle, where the first probe failed (NaN elsewhere: served at a higher rate)
    zero_violations: dict[str, np.ndarray]  # at a trickle (False where not evaluated)
    exact: np.ndarray  # False where the search stopped early (max_rate's `keep`): the rate is feasible, not the largest


def _excess(point: LoadPoint, demand: Demand, limits: Limits) -> np.ndarray:
    """How far each candidate is past its worst check, signed (<= 0 where every check holds, 1 where
    the replica is unstable), in the form that is nearly straight in the rate, so that a secant
    through two probes lands near the root:

    - occupancy (the running batch's tail against the KV pool and max_num_seqs) grows about in
      proportion to the rate: measure / bound - 1 (-1 at a trickle; capped at 1);
    - latencies grow like 1 / (1 - load): 1 - bound / measure falls about linearly with the rate
      up to saturation (where log(measure / bound) is flat at low rates and steep near it)."""
    occupancy = np.maximum(point.running_tail / np.maximum(limits.max_concurrency, 1e-9), point.running_tail / np.maximum(limits.max_num_seqs, 1e-9))
    latency = np.zeros(point.rate_rps.shape)
    for key, bound in demand.ttft_s:
        latency = np.maximum(latency, _scaled(point.ttft_s[key], _scale(limits.ttft_scale, key)) / bound)
    for key, bound in demand.tpot_s:
        latency = np.maximum(latency, _scaled(point.tpot_s[key], _scale(limits.tpot_scale, key)) / bound)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.maximum(occupancy - 1.0, 1.0 - 1.0 / latency)
    return np.where(np.isfinite(out), np.where(point.stable, out, np.maximum(out, 1.0)), 1.0)


def _scatter(point: LoadPoint | None, idx: np.ndarray, n: int, demand: Demand) -> LoadPoint:
    """A LoadPoint of `n` candidates holding `point`'s figures at `idx` (None: no candidate
    evaluated): NaN elsewhere, stable."""

    def spread(name: str, key: str | None = None) -> np.ndarray:
        fill = True if name == "stable" else np.nan
        out = np.full(n, fill, dtype=bool if name == "stable" else float)
        if point is not None:
            values = getattr(point, name)
            out[idx] = values if key is None else values[key]
        return out

    arrays = {f.name: spread(f.name) for f in fields(LoadPoint) if f.name not in ("ttft_s", "tpot_s")}
    return LoadPoint(
        **arrays,
        ttft_s={k: spread("ttft_s", k) for k, _ in demand.ttft_s},
        tpot_s={k: spread("tpot_s", k) for k, _ in demand.tpot_s},
    )


def _take_limits(limits: Limits, idx: np.ndarray) -> Limits:
    return Limits(
        max_concurrency=limits.max_concurrency[idx],
        max_num_seqs=limits.max_num_seqs[idx],
        max_num_batched_tokens=limits.max_num_batched_tokens[idx],
        ttft_scale=_take_scale(limits.ttft_scale, idx),
        tpot_scale=_take_scale(limits.tpot_scale, idx),
        slot_cap=None if limits.slot_cap is None else np.asarray(limits.slot_cap)[idx],
    )


def mean_rate_bound(step: StepModel, demand: Demand, limits: Limits, saturation_rps: np.ndarray) -> np.ndarray:
    """The largest rate (to a factor 1.0007) at which each candidate's running batch keeps its tail
    within the KV pool and max_num_seqs and its mean step within the tightest TPOT bound: the
    occupancy check exactly, and the mean of TPOT, which its upper percentiles exceed. From the
    mean step alone (perf.StepModel.lumpy_step, as evaluate_load's running batch), no percentile:
    a fraction of a load point's cost.

    Both hold below a rate and fail above it: the running batch N solves N = rate E[O] t(N), so
    N <= cap exactly when rate E[O] t(cap) <= cap; and the mean step is within B exactly when
    t(rate E[O] B) <= B. Searched on log(rate) from 1e-9 of `saturation_rps` to it."""
    ctx = demand.mean_running_context
    mean_o, mean_p = demand.output.mean, demand.prompt.mean
    column = step.column()
    c = step.size
    budget = np.asarray(limits.max_num_batched_tokens, dtype=float)[:, None]
    parts = step.prefill_token_parts(np.full(c, demand.prompt.size_biased_mean))
    parts_c = (parts[0][:, None], parts[1][:, None])
    z = _Z[BATCH_TAIL]
    cap = np.minimum(limits.max_concurrency, limits.max_num_seqs).astype(float)
    n_cap = (((-z + np.sqrt(z * z + 4 * np.maximum(cap, 0.0))) / 2) ** 2)[:, None]  # tail N + z sqrt(N) = cap
    tpot_bound = min((b for _, b in demand.tpot_s), default=np.inf)
    if limits.tpot_scale is not None and demand.tpot_s:  # per candidate: the tightest scaled bound
        with np.errstate(divide="ignore"):
            each = [b / np.broadcast_to(np.asarray(_scale(limits.tpot_scale, k), dtype=float), (c,)) for k, b in demand.tpot_s]
        tpot_bound = np.min(np.stack(each), axis=0)[:, None]

    def holds(rate: np.ndarray) -> np.ndarray:  # rate (C, G) -> (C, G)
        t = column.lumpy_step(np.maximum(n_cap, 1.0), ctx, rate, mean_p, budget - n_cap * column.budget_decode_tokens, prompt_parts=parts_c)[0]
        ok = rate * mean_o * t <= n_cap
        if np.any(np.isfinite(tpot_bound)):
            bound = np.where(np.isfinite(tpot_bound), tpot_bound, 0.0)  # no TPOT bound: that check holds
            n_b = rate * mean_o * bound
            ok &= (column.lumpy_step(np.maximum(n_b, 1.0), ctx, rate, mean_p, budget - n_b * column.budget_decode_tokens, prompt_parts=parts_c)[0] <= bound) | ~np.isfinite(tpot_bound)
        return ok

    lo = np.log(saturation_rps * 1e-9)
    hi = np.log(saturation_rps)
    grid = np.linspace(0.0, 1.0, _BATCH_GRID)
    rows = np.arange(c)
    for _ in range(3):  # the last grid point that holds, to 20.7 / 31^3 in log(rate)
        log_r = lo[:, None] + (hi - lo)[:, None] * grid[None, :]
        with np.errstate(over="ignore", invalid="ignore"):
            ok = holds(np.exp(log_r))
        k = np.where(ok.any(axis=1), _BATCH_GRID - 1 - np.argmax(ok[:, ::-1], axis=1), 0)
        lo, hi = log_r[rows, k], log_r[rows, np.minimum(k + 1, _BATCH_GRID - 1)]
    return np.exp(hi)


SEARCH_MARGIN = 1e-3
"""The share of each latency bound max_rate keeps in hand: above the percentiles' numerical jitter
from rate to rate (up to 3e-4 of the latency, measured), below anything a user would read."""

LADDER = np.concatenate((2.0 ** (-np.arange(1, 13) / 3.0), [1 / 32, 1 / 128, 1 / 1024]))
"""Fractions of a candidate's largest rate at which every load below it is checked (max_rate): steps
of 2^(1/3) down to 1/16, then coarser (a bump in a TPOT percentile spans a factor of 1.5 or more of
the rate: mixtral-8x7b on 2 x A100, fuzz case 20261261787935, passed at 0.25 and 0.5 of its largest
rate and failed between, at 0.28-0.45 of it)."""

FEW_STEPS_TOKENS = 64.0
"""Outputs of at most this many tokens at the median: a request's TPOT averages over so few steps
that the prompts stalling it are counted one by one, and its percentiles are a saw in the rate
(FINE_LADDER)."""

FINE_LADDER = np.concatenate((2.0 ** (-np.arange(1, 24) / 24.0), LADDER[2:]))
"""The ladder where outputs are short (FEW_STEPS_TOKENS): steps of 2^(1/24) (2.9 %) down to 1/2,
then LADDER's. A request of a few output tokens meets 0, 1, 2 ... prompt stalls; its TPOT
percentile jumps up where one more stall enters the tail and eases down after, in teeth about 2 %
of the rate wide: qwen3-8b on 4 x H200 under TensorRT-LLM with 4-8 output tokens (fuzz case
20261271786564) passed at its largest rate and at 2^(-1/3) of it and broke its TPOT p90 bound at
0.85-0.89 of it and its p99 bound at 0.944-0.975; steps of 2^(1/12) (5.9 %) missed a p90 tooth of
the same replica (97.1 req/s at its largest) under the factors refitted 2026-12-03 with
InferenceX's disaggregated recipes (tests/test_robustness.py, SHORT_OUTPUT_SAW). Only there: on
the shipped workloads (median outputs of 120-1,500 tokens) finer steps would cost 29 % more
evaluation (measured at 2^(1/12)) and find nothing."""

REFINE_BAND = 0.03
"""A ladder point whose worst check comes within this share of its bound (the excess 1 - bound /
latency above -REFINE_BAND), below the top, is a bump's shoulder: its peak is searched for."""

REFINE_BAND_FEW = 0.08
"""REFINE_BAND where outputs are short (FINE_LADDER): a saw's tooth rises further above the ladder
points either side of it (qwen3-8b on 4 x H200, 4-8 output tokens: a shoulder 3.3 % under the TPOT
p90 bound at 0.891 of the rate, a tooth 2.3 % over it at 0.842-0.861)."""

LADDER_PASSES = 3
"""Ladder checks of one candidate's rate at most, where outputs are short (FINE_LADDER): the first
finds a failing point and the search closes again below it, on a rate whose own ladder may reach a
tooth the first did not (qwen3-8b on 4 x H200, 4-8 output tokens: laddered at 57.3 req/s, closed
again on 48.5, whose TPOT p90 broke its bound at 0.846-0.868 of it). Elsewhere one pass: on the
shipped workloads three made a solve of moe-qwen3-235b 0.8 s slower (1.5 -> 2.3 s in a slow spell)
and changed no plan."""

REFINE_SCAN = 7
"""Evenly spaced points (in log rate) a bump's bracket is scanned at before its golden-section
search: the teeth of qwen3-8b's 4-8 token outputs on 4 x H200 (TensorRT-LLM) are 2 % of the rate
wide, and with the factors fitted 2026-12-03 the highest ladder shoulder (0.891 of the rate, 2.8 %
under its TPOT p90 bound) led golden section to the tooth beside the one over the bound
(0.846-0.868 of the rate); a bracket 0.841-0.944 wide scanned at 7 points is 1.5 % apart."""

REFINE_ROUNDS = 10
"""Golden-section evaluations per bump: the peak's rate to 0.618^8 of the interval between the
ladder's two neighbouring points (about 0.2 % of the rate at the ladder's 2^(1/3) steps)."""

FIRST_FRACTION = 0.8
"""The lower of the first two probes, as a fraction of mean_rate_bound: the largest rates of the
shipped workloads' candidates lie at 0.77 to 0.88 of it for the median candidate of each workload
(0.01 to 1.00 over all; never above), measured when this was written."""


def max_rate(
    step: StepModel,
    demand: Demand,
    limits: Limits,
    tolerance: float = 0.01,
    keep: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    deadline=None,
) -> Capacity:
    """The largest per-replica rate within every check, for every candidate, to a relative
    `tolerance`: the rate returned is feasible, and a rate at most `tolerance` above it is not.

    Every check grows with the rate, so feasibility holds below a root and fails above it. The root
    lies between a trickle (1e-9 of prefill saturation) and prefill saturation
    (unstable by definition). It is found by Brent's method (inverse quadratic interpolation,
    secant, bisection as a safeguard: R. P. Brent, Algorithms for Minimization without
    Derivatives, 1973, ch. 4) on the worst check's excess (_excess: in the form nearly straight in
    the rate), over the rate as a fraction of saturation. The first probes are at the rate bounding
    occupancy and the mean step (mean_rate_bound) and FIRST_FRACTION of it. Brent's last steps go
    at least the tolerance past the estimate, so the bracket closes: 2 to 5 probes on average,
    where bisection on log(rate) took 12 to 15. Each probe evaluates only the candidates still
    open. The rate returned is the highest probe found feasible; the check that binds is the first
    failing at the lowest probe found infeasible.

    `keep(feasible_rps, infeasible_rps)`, called after the first probes and each of the next two
    rounds with every candidate's bracket (a rate it serves, a rate it does not), returns the
    candidates worth the search to the tolerance; the others stop there, their rate the feasible
    end of their bracket (Capacity.exact False). (Later calls stopped no more candidates on the
    shipped workloads, and each costs a pricing of every open bracket.)

    Every load up to the rate returned must be served, not only the rate itself: a plan puts a
    replica at any load below it (demand / replicas, quieter hours). The TPOT percentiles are not
    monotone in the rate everywhere: on a MoE model with short outputs, the prompts arriving in a
    request's life each add a large delay at low load (a prompt makes a decode step read every
    expert) and a small one at high load (the batch reads them all anyway), so the tail of their
    sum falls while its mean rises, and a rate far above a failing one can pass; with outputs of a
    few tokens they are a saw (FINE_LADDER). So once a candidate's search has closed, its rate is
    checked at LADDER fractions of itself (FINE_LADDER's where outputs are short); where one
    fails, the search starts again between the highest passing point below the lowest failing
    one and that point, and where outputs are short the rate it then finds is checked the same
    way, up to LADDER_PASSES times (downward-closed to the ladder's resolution). Candidates `keep` stopped
    early are not checked; where any check fails, they are searched on (their brackets, priced
    against a rate that did not hold, no longer prove them beaten).

    The latency bounds are searched against with SEARCH_MARGIN: the percentiles are read off
    time grids whose bins move with the rate, so that where a latency is nearly flat in the rate
    it jitters by up to 3e-4 of itself from one rate to the next (measured: TPOT p99 of
    llama-3.1-70b on 4 x A100 with 2-token outputs, flat within 0.3 % over 12 % of the rate); a
    rate found just inside a bound would leave lower loads just outside it.

    `deadline` (deadline.Deadline): checked before every probe; SolverError when it has passed."""
    demand = replace(
        demand,
        ttft_s=tuple((k, b * (1 - SEARCH_MARGIN)) for k, b in demand.ttft_s),
        tpot_s=tuple((k, b * (1 - SEARCH_MARGIN)) for k, b in demand.tpot_s),
    )
    mean_p = demand.prompt.mean
    c_p = step.prefill_per_token_s(np.full(step.size, mean_p))
    hi = 1.0 / (mean_p * c_p)  # prefill alone saturates the GPU
    n = step.size
    # Brent's state, in fractions of saturation: b the iterate, c the contrapoint (f(b), f(c) of
    # opposite signs), a the previous iterate; d the last step, e the one before
    a, fa = np.full(n, TRICKLE_FRACTION), np.zeros(n)
    b, fb = np.minimum(mean_rate_bound(step, demand, limits, hi) / hi, 1.0), np.ones(n)
    c, fc = np.ones(n), np.ones(n)  # saturation
    top_ok, low_bad = np.full(n, TRICKLE_FRACTION), np.ones(n)  # highest feasible, lowest infeasible probe
    failing = {name: np.zeros(n, dtype=bool) for name in CHECKS}
    failing["compute"][:] = True  # at saturation

    def probe(idx: np.ndarray, x: np.ndarray) -> None:
        sub = _take_limits(limits, idx)
        point = evaluate_load(step.take(idx), hi[idx] * x, demand, sub, slo_only=True)
        v = violations(point, demand, sub)
        ok = ~np.any(np.stack(list(v.values())), axis=0)
        f = _excess(point, demand, sub)
        b[idx], fb[idx] = x, np.where(ok, np.minimum(f, 0.0), np.maximum(f, 1e-12))  # the sign follows the checks
        good, bad = idx[ok], idx[~ok]
        top_ok[good] = np.maximum(top_ok[good], x[ok])
        lower = x[~ok] < low_bad[bad]
        for name in CHECKS:
            failing[name][bad[lower]] = v[name][~ok][lower]
        low_bad[bad] = np.minimum(low_bad[bad], x[~ok])

    # The first round probes each candidate at FIRST_FRACTION of the rate bounding its occupancy
    # and mean step (mean_rate_bound; the root lies at or below it, at 0.8 of it for the median
    # candidate of the shipped workloads). Where that rate is served, so is a trickle (every check
    # grows with the rate), and the bound itself is probed next: a bracket from the start, and a
    # rate served and one not served for `keep` to prune by. Where it is not, a trickle (1e-9 of
    # saturation) is evaluated: a candidate that fails there serves nothing, and why is told from it.
    upper = b.copy()
    everyone = np.arange(n)
    probe(everyone, FIRST_FRACTION * upper)
    x_lo, f_lo = b.copy(), fb.copy()
    served = f_lo <= 0
    unserved = np.flatnonzero(~served)
    ok0 = served.copy()
    zero_v = {name: np.zeros(n, dtype=bool) for name in CHECKS}
    trickle = None
    if unserved.size:
        sub_limits = _take_limits(limits, unserved)
        trickle = evaluate_load(step.take(unserved), hi[unserved] * TRICKLE_FRACTION, demand, sub_limits, slo_only=True)
        ok0[unserved] = feasible(trickle, demand, sub_limits)
        fa[unserved] = np.minimum(_excess(trickle, demand, sub_limits), 0.0)
        for name, v in violations(trickle, demand, sub_limits).items():
            zero_v[name][unserved] = v
    at_zero = _scatter(trickle, unserved, n, demand)
    if served.any():
        probe(np.flatnonzero(served), upper[served])
    # served below: the iterate is the upper probe, the previous one the lower; not served: the
    # lower is the iterate, the trickle the previous one
    a, fa = np.where(served, x_lo, a), np.where(served, f_lo, fa)
    b, fb = np.where(served, b, x_lo), np.where(served, fb, f_lo)
    d = b - a
    e = d.copy()

    few = demand.output.quantile(50) <= FEW_STEPS_TOKENS  # a saw in the TPOT percentiles: finer steps, more passes

    def ladder(idx: np.ndarray) -> np.ndarray:
        """Check the candidates `idx` at LADDER fractions of their highest served rate; where a
        point fails, bracket again between the highest passing point below the lowest failing one
        (or a trickle) and that point. Where every point passes but the worst check comes within
        REFINE_BAND of its bound at a point below the top (a bump: the checks are not monotone
        there), the bump's peak is looked for between that point's neighbours by golden-section
        search (REFINE_ROUNDS evaluations), and a failing point found there brackets again the
        same way. Returns the candidates whose bracket was reset."""
        grid = np.concatenate(([1.0], FINE_LADDER if few else LADDER))  # descending; the top itself (served) at 0
        k = grid.size
        rows = np.repeat(idx, k)
        x = (top_ok[rows] * np.tile(grid, idx.size)).reshape(idx.size, k)
        sub = _take_limits(limits, rows)
        point = evaluate_load(step.take(rows), hi[rows] * x.ravel(), demand, sub, slo_only=True)
        v = {name: arr.reshape(idx.size, k) for name, arr in violations(point, demand, sub).items()}
        ok = ~np.any(np.stack(list(v.values())), axis=0)
        ok[:, 0] = True  # the top was found served; its re-evaluation only gives the bump's baseline
        f = _excess(point, demand, sub).reshape(idx.size, k)
        bad = ~ok.all(axis=1)
        j = k - 1 - np.argmax(~ok[:, ::-1], axis=1)  # the lowest failing point (the grid descends)
        fail_x = x[np.arange(idx.size), j]
        fail_f = f[np.arange(idx.size), j]
        fail_v = {name: arr[np.arange(idx.size), j] for name, arr in v.items()}
        below = j + 1 < k
        pass_x = np.where(below, x[np.arange(idx.size), np.minimum(j + 1, k - 1)], 1e-9)
        pass_f = np.where(below, np.minimum(f[np.arange(idx.size), np.minimum(j + 1, k - 1)], 0.0), 0.0)

        # bumps: every point passes, and a point below the top is a local maximum of the excess (no
        # lower than its neighbours; the top, where a latency binds, sits at about 0 itself) within
        # the band: the highest such point's neighbourhood is searched
        up = f[:, 1:] >= f[:, :-1]  # point i+1 no lower than the higher-rate point i
        down = np.concatenate((f[:, 1:-1] >= f[:, 2:], np.ones((idx.size, 1), dtype=bool)), axis=1)
        local = np.concatenate((np.zeros((idx.size, 1), dtype=bool), up & down), axis=1)
        if few and k > 2:
            # a saw's tooth can sit between the top and the point next to it, which the top (at
            # about 0, a latency binding there) always outranks: that point counts as a shoulder
            # when no lower than the point below it (qwen3-8b on 4 x H200, 4-8 output tokens, the
            # factors of 2026-12-05: a TPOT p90 tooth 0.6 % over its bound at 0.950-0.963 of the
            # rate, between ladder points at 0.972 and 0.944 that were 1.6 % and 4.7 % under it)
            local[:, 1] = down[:, 0]
        peak = np.where(local, f, -np.inf)
        m = np.argmax(peak, axis=1)
        near = ~bad & local.any(axis=1) & (peak[np.arange(idx.size), m] > -(REFINE_BAND_FEW if few else REFINE_BAND))
        if near.any():
            r = np.flatnonzero(near)
            mm = m[r]
            lo_x = np.where(mm + 1 < k, x[r, np.minimum(mm + 1, k - 1)], x[r, mm] * 1e-3)
            hi_x = x[r, mm - 1]
            best_pass = lo_x.copy()  # the highest point known to pass below a failure found
            found = np.zeros(r.size, dtype=bool)
            f_x, f_f = np.zeros(r.size), np.zeros(r.size)
            f_v = {name: np.zeros(r.size, dtype=bool) for name in CHECKS}
            # golden-section search for the maximum of the excess on log(rate) in [lo_x, hi_x]
            u, w_ = np.log(lo_x), np.log(hi_x)
            g = (np.sqrt(5.0) - 1.0) / 2.0

            def probe_bump(points: np.ndarray) -> np.ndarray:
                rr = idx[r]
                sub_b = _take_limits(limits, rr)
                xs = np.exp(points)
                pt = evaluate_load(step.take(rr), hi[rr] * xs, demand, sub_b, slo_only=True)
                vb = violations(pt, demand, sub_b)
                okb = ~np.any(np.stack(list(vb.values())), axis=0)
                fb_ = _excess(pt, demand, sub_b)
                # a first failure, or a lower one: the bracket closes on the lowest failing point found
                new = ~okb & (~found | (xs < f_x))
                f_x[new], f_f[new] = xs[new], np.maximum(fb_[new], 1e-12)
                for name in CHECKS:
                    f_v[name][new] = vb[name][new]
                found[:] |= ~okb
                return np.where(okb, fb_, np.inf)

            # teeth (a saw of few-token outputs) break golden section's one-peak premise: scan the
            # bracket evenly first, then search around the highest scan point
            grid_s = np.linspace(0.0, 1.0, REFINE_SCAN + 2)
            scan = u[:, None] + (w_ - u)[:, None] * grid_s[None, :]
            q_scan = np.full(scan.shape, -np.inf)
            for col in range(1, REFINE_SCAN + 1):
                q_scan[:, col] = probe_bump(scan[:, col])
            top = np.argmax(q_scan, axis=1)
            rows_r = np.arange(r.size)
            u, w_ = scan[rows_r, top - 1], scan[rows_r, top + 1]
            p1, p2 = w_ - g * (w_ - u), u + g * (w_ - u)
            q1, q2 = probe_bump(p1), probe_bump(p2)
            for _ in range(REFINE_ROUNDS - 2):
                left = q1 >= q2  # the peak lies in [u, p2]
                w_ = np.where(left, p2, w_)
                u = np.where(left, u, p1)
                p2n = np.where(left, p1, u + g * (w_ - u))
                p1n = np.where(left, w_ - g * (w_ - u), p2)
                q_new = probe_bump(np.where(left, p1n, p2n))
                q1, q2 = np.where(left, q_new, q2), np.where(left, q1, q_new)
                p1, p2 = p1n, p2n
                if found.all():
                    break
            if found.any():
                hit = r[found]
                bad[hit] = True
                fail_x[hit], fail_f[hit] = f_x[found], f_f[found]
                for name in CHECKS:
                    fail_v[name][hit] = f_v[name][found]
                # the highest passing point below it: the ladder's point under the bump
                pass_x[hit] = np.minimum(best_pass[found], f_x[found] / (1 + 0.1 * tolerance))
                pass_f[hit] = 0.0
        if not bad.any():
            return idx[:0]
        reset = idx[bad]
        rb = np.flatnonzero(bad)
        p_x, p_f = pass_x[rb], pass_f[rb]
        top_ok[reset], low_bad[reset] = p_x, fail_x[rb]
        for name in CHECKS:
            failing[name][reset] = fail_v[name][rb]
        a[reset], fa[reset] = p_x, p_f
        b[reset], fb[reset] = fail_x[rb], np.maximum(fail_f[rb], 1e-12)
        c[reset], fc[reset] = p_x, p_f
        d[reset] = e[reset] = b[reset] - a[reset]
        return reset

    frozen = np.zeros(n, dtype=bool)
    # ladder passes so far: candidates that serve nothing need none; where outputs are short (a
    # saw), a candidate whose ladder found a failing point is searched again below it and its new
    # top laddered again; elsewhere one pass (a bump is one peak, which the first pass brackets)
    passes = LADDER_PASSES if few else 1
    ladders = np.where(ok0, 0, passes)
    keep_rounds = 2 if keep is not None else -1
    for round_ in range(300):
        if deadline is not None:
            deadline.check("the rate search of the candidates")
        if round_ <= keep_rounds:
            frozen |= ok0 & (low_bad > top_ok * (1 + tolerance)) & ~np.asarray(keep(hi * top_ok, hi * low_bad), dtype=bool)
        open_ = ok0 & ~frozen & (low_bad > top_ok * (1 + tolerance))
        # Brent: keep the root between b and c, b the end with the smaller |f|
        same = np.sign(fb) == np.sign(fc)
        c, fc = np.where(same, a, c), np.where(same, fa, fc)
        d, e = np.where(same, b - a, d), np.where(same, b - a, e)
        swap = np.abs(fc) < np.abs(fb)
        a, fa = np.where(swap, b, a), np.where(swap, fb, fa)
        b, fb, c, fc = np.where(swap, c, b), np.where(swap, fc, fb), np.where(swap, b, c), np.where(swap, fb, fc)
        c, fc = np.where(swap, a, c), np.where(swap, fa, fc)
        idx = np.flatnonzero(open_)
        if not idx.size:
            todo = np.flatnonzero(ok0 & ~frozen & (ladders < passes))
            if not todo.size or not (demand.ttft_s or demand.tpot_s):
                break
            ladders[todo] += 1
            lowered = ladder(todo)
            if lowered.size and frozen.any():
                frozen[:] = False  # their brackets were priced against rates that do not hold
                keep_rounds = -1
            continue
        tol1 = 0.45 * tolerance * np.minimum(b, c)[idx]
        xm = 0.5 * (c[idx] - b[idx])
        ai, bi, ci, fai, fbi, fci, di, ei = a[idx], b[idx], c[idx], fa[idx], fb[idx], fc[idx], d[idx], e[idx]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            sr = fbi / fai
            secant = ai == ci
            qa, ra = fai / fci, fbi / fci
            p_ = np.where(secant, 2 * xm * sr, sr * (2 * xm * qa * (qa - ra) - (bi - ai) * (ra - 1)))
            q_ = np.where(secant, 1 - sr, (qa - 1) * (ra - 1) * (sr - 1))
            q_ = np.where(p_ > 0, -q_, q_)
            p_ = np.abs(p_)
            interpolate = (np.abs(ei) >= tol1) & (np.abs(fai) > np.abs(fbi))
            accept = interpolate & np.isfinite(p_ / q_) & (2 * p_ < np.minimum(3 * xm * q_ - np.abs(tol1 * q_), np.abs(ei * q_)))
            step_ = np.where(accept, p_ / q_, xm)
        e[idx] = np.where(accept, di, xm)
        d[idx] = step_
        a[idx], fa[idx] = bi, fbi
        x = bi + np.where(np.abs(step_) > tol1, step_, np.sign(xm) * tol1)
        probe(idx, np.clip(x, top_ok[idx] * (1 + 0.1 * tolerance), low_bad[idx] / (1 + 0.1 * tolerance)))

    rate = np.where(ok0, hi * top_ok, 0.0)
    binding = []
    for i in range(n):
        names = [name for name in CHECKS if failing[name][i]]
        binding.append(names[0] if names else "compute")
    exact = ~ok0 | (low_bad <= top_ok * (1 + tolerance))
    return Capacity(max_rate_rps=rate, binding=binding, at_zero=at_zero, zero_violations=zero_v, exact=exact)


# ---------------------------------------------------------------------------------------------
# Benchmarks as they are run: a closed loop of N clients, an open loop at a rate, offline
# ---------------------------------------------------------------------------------------------

BENCHMARK_WAVES = 10.0
"""Requests per client in a concurrency benchmark: the InferenceMAX/InferenceX harness sends
`--num-prompts $((CONC * 10))` at `--max-concurrency $CONC` (SemiAnalysisAI/InferenceX benchmark
scripts), so one measured run is ten waves of N requests, the first of which arrives at once.
Its reciprocal is the prior of the `burst_fraction` efficiency factor."""


def wave_share(burst_fraction: np.ndarray, requests_per_client: np.ndarray | float | None = None) -> np.ndarray:
    """The share of a closed loop's requests that queue behind a wave arriving at once:
    `burst_fraction` (the share at BENCHMARK_WAVES requests per client) x BENCHMARK_WAVES / W for a
    run of W requests per client (its bunched waves are the first few, whatever its length), at
    most 1; W = BENCHMARK_WAVES when None."""
    waves = BENCHMARK_WAVES if requests_per_client is None else np.asarray(requests_per_client, dtype=float)
    return np.minimum(np.asarray(burst_fraction, dtype=float) * BENCHMARK_WAVES / waves, 1.0)


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


QUADRATURE_POINTS = 16
"""Equal-probability points of a dataset's prompt-length distribution over which a request's own
prefill (its chunks' steps, its attention) is averaged: the mid-quantiles 1/32, 3/32, ... 31/32."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RowLengths:
    """The request lengths of each benchmark row (arrays over rows), as the loops use them.

    isl, osl      E[I], E[O]: mean prompt and output tokens per request
    isl_sq        E[I^2]: the second moment (the M/G/1 wait behind prompts of mixed lengths)
    isl_attn      E[I^2] / E[I]: the prompt length a prompt *token* belongs to on average (prefill
                  attention per token grows with its prompt's length)
    ctx           E[I] + E[O^2] / (2 E[O]): the mean context of a *decoding* sequence (token-step
                  weighted: long outputs decode for longer), prompt and output independent
    reserve_ctx   E[I] + E[O^2] / E[O]: the same with the whole output reserved (TRT-LLM)
    points        (rows, K) equal-probability prompt lengths (K = 1 for fixed lengths)

    Fixed lengths (isl, osl) give isl_sq = isl^2, isl_attn = isl, ctx = isl + osl / 2."""

    isl: np.ndarray
    osl: np.ndarray
    isl_sq: np.ndarray
    isl_attn: np.ndarray
    ctx: np.ndarray
    reserve_ctx: np.ndarray
    points: np.ndarray

    @classmethod
    def fixed(cls, isl, osl) -> "RowLengths":
        isl = np.asarray(isl, dtype=float)
        osl = np.asarray(osl, dtype=float)
        return cls(isl=isl, osl=osl, isl_sq=isl * isl, isl_attn=isl, ctx=isl + osl / 2, reserve_ctx=isl + osl, points=isl[:, None])

    @classmethod
    def of(cls, prompts: list, outputs: list, isl, osl) -> "RowLengths":
        """Rows with a prompt / output distribution (LengthDist) where given, else the fixed lengths."""
        isl = np.asarray(isl, dtype=float)
        osl = np.asarray(osl, dtype=float)
        if not any(p is not None or o is not None for p, o in zip(prompts, outputs)):
            return cls.fixed(isl, osl)
        k = QUADRATURE_POINTS
        q = (np.arange(k) + 0.5) / k * 100.0
        e_i, e_i2, e_o, e_o2 = (np.empty(len(isl)) for _ in range(4))
        pts = np.empty((len(isl), k))
        for r, (p, o) in enumerate(zip(prompts, outputs)):
            if p is not None:
                e_i[r], e_i2[r] = p.mean, p.mean_square
                pts[r] = [p.quantile(x) for x in q]
            else:
                e_i[r], e_i2[r], pts[r] = isl[r], isl[r] ** 2, isl[r]
            if o is not None:
                e_o[r], e_o2[r] = o.mean, o.mean_square
            else:
                e_o[r], e_o2[r] = osl[r], osl[r] ** 2
        return cls(isl=e_i, osl=e_o, isl_sq=e_i2, isl_attn=e_i2 / e_i, ctx=e_i + e_o2 / (2 * e_o), reserve_ctx=e_i + e_o2 / e_o, points=pts)

    def take(self, idx) -> "RowLengths":
        return RowLengths(**{f.name: getattr(self, f.name)[idx] for f in fields(self)})


# ---------------------------------------------------------------------------------------------
# Scheduler rules that hold a new prompt back for whole engine steps
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextHold:
    """Launch settings under which an engine keeps a newly arrived prompt out of the next steps
    on purpose (arrays over rows; 0 turns a rule off). Each holds the prompt for whole steps, so
    the hold is counted in steps and paid at the step time of the running batch.

    wait_iters, wait_tokens   TRT-LLM batch waiting (PyTorch backend, `batch_wait_timeout_iters`,
                              `batch_wait_max_tokens_ratio` x `max_num_tokens`):
                              tensorrt_llm/_torch/pyexecutor/py_executor.py PyExecutor._waiting_requests
                              (release 1.1 on) keeps every waiting context request out of the steps
                              while generation requests run, until the context and generation tokens
                              of the step reach wait_tokens or it has waited wait_iters steps
                              (the counter restarts once the contexts are scheduled); applied only
                              without attention DP (PyExecutor._schedule)
    adp_iters, adp_extra_iters, adp_ranks
                              TRT-LLM attention-DP balancing (`attention_dp_config.enable_balance`,
                              `timeout_iters`, `batching_wait_iters`): PyExecutor._balance_adp_requests
                              schedules context requests only once every attention-DP rank has one
                              (then after adp_extra_iters more steps), or after adp_iters steps of
                              waiting, or at once when some rank has no generation request
    recv_interval             SGLang `--scheduler-recv-interval R`: python/sglang/srt/managers/
                              scheduler_recv_skipper.py SchedulerRecvSkipper counts a decode step 1
                              and any other step 1000 and takes new requests from the tokenizer only
                              when the count reaches R: in decode-only stretches, every R steps
    """

    wait_iters: np.ndarray
    wait_tokens: np.ndarray
    adp_iters: np.ndarray
    adp_extra_iters: np.ndarray
    adp_ranks: np.ndarray
    recv_interval: np.ndarray

    @classmethod
    def none(cls, n: int) -> "ContextHold":
        z = np.zeros(n)
        return cls(wait_iters=z, wait_tokens=z, adp_iters=z, adp_extra_iters=z, adp_ranks=np.ones(n), recv_interval=z)

    def take(self, idx) -> "ContextHold":
        return ContextHold(**{f.name: np.asarray(getattr(self, f.name))[idx] for f in fields(self)})

    @property
    def any(self) -> bool:
        return bool((np.asarray(self.wait_iters) > 0).any() or (np.asarray(self.adp_iters) > 0).any() or (np.asarray(self.recv_interval) > 1).any())


_BISECT_REL = 1e-13  # closed_loop stops bisecting once every row's population is known to this share
_HOLD_GRID = 64  # midpoints over a window's length: the integrals of _window_hold
_POISSON_TERMS = 256  # arrivals a batch-waiting window may need at most (more: as many as that)


def _poisson_cdf(k: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """P(Poisson(mu) <= k) elementwise, k < _POISSON_TERMS (k < 0 gives 0), summed from the terms'
    logarithms up to the largest k asked (mu up to thousands without underflow)."""
    k = np.asarray(k, dtype=float)
    top = int(min(max(k.max(initial=-1.0), -1.0), _POISSON_TERMS - 1)) + 1
    if top <= 0:
        return np.zeros(np.broadcast_shapes(k.shape, np.shape(mu)))
    mu = np.maximum(np.asarray(mu, dtype=float), 1e-300)
    log_mu = np.log(mu)
    total = np.zeros(np.broadcast_shapes(k.shape, mu.shape))
    for j in range(top):
        total += np.where(k >= j, np.exp(j * log_mu - mu - _LOG_FACTORIAL[j]), 0.0)
    return total


_LOG_FACTORIAL = np.array([math.lgamma(j + 1.0) for j in range(_POISSON_TERMS)])


def _window_hold(a: np.ndarray, limit: np.ndarray, survival, count_alive) -> np.ndarray:
    """Mean steps a prompt waits in a holding window: the first arrival opens it, every prompt
    arriving before it closes joins it, and all of them are released when it closes. Arrivals are
    Poisson at `a` per step (a closed loop of many clients with spread-out output lengths); the
    window closes at L <= limit, with P(L > s) = survival(s) and E[N(s); L > s] = count_alive(s),
    N(s) the arrivals after the first by s. The first waits L, one arriving at s waits L - s:
    per window E[L] + E[integral over [0, L) of N(s) ds] = integral over [0, limit) of
    (survival + count_alive), over 1 + a E[L] prompts (Wald)."""
    u = (np.arange(_HOLD_GRID) + 0.5) / _HOLD_GRID
    s = np.asarray(limit, dtype=float)[:, None] * u[None, :]  # (R, G)
    alive = survival(s)
    length = alive.mean(axis=1) * limit
    area = count_alive(s).mean(axis=1) * limit
    return np.where(limit > 0, (length + area) / (1.0 + a * length), 0.0)


def hold_steps(hold: ContextHold, a: np.ndarray, decoding: np.ndarray, clients: np.ndarray, isl: np.ndarray) -> np.ndarray:
    """Mean whole steps a prompt arriving in steady state is held back by the rules of `hold`
    (ContextHold), with `a` prompts arriving per step, `decoding` generation requests in each
    step (their tokens count towards TRT-LLM's batch-waiting threshold), `clients` requests in
    the closed loop and prompts of `isl` tokens on average.

    batch waiting   the window closes after wait_iters steps or at the arrival that brings the
                    waiting prompts' tokens plus the decoding ones to wait_tokens (k more prompts:
                    k = ceil((wait_tokens - decoding) / isl) - 1; none held when k < 1):
                    P(L > s) = P(N(s) < k), E[N(s); L > s] = a s P(N(s) < k - 1)
    ADP balancing   the window closes adp_extra_iters steps after every one of the G = adp_ranks
                    ranks holds a prompt, if that happens within adp_iters steps, else at adp_iters.
                    A finished request's successor goes to the rank it left (TRT-LLM's router fills
                    the rank with the fewest active requests), so each rank's arrivals are Poisson at
                    a / G: the G - 1 other ranks are all covered by s with probability
                    C(s) = (1 - exp(-mu))^(G - 1), mu = a s / G, and E[N(s); covered] =
                    mu C + (G - 1) mu (1 - e^-mu)^(G - 2). Off when a rank can run out of
                    generation requests (clients < 2 G: the balancer then schedules at once)
    recv interval   an arrival in a stretch of R decode steps waits for its end: (R - 1) / 2 steps
                    more than the step boundary it waits for anyway (admission_steps)"""
    a = np.maximum(np.asarray(a, dtype=float), 1e-12)
    out = np.zeros_like(a)
    iters = np.asarray(hold.wait_iters, dtype=float)
    on = iters > 0
    if on.any():
        need = np.ceil(np.maximum(np.asarray(hold.wait_tokens, dtype=float) - decoding, 0.0) / np.maximum(isl, 1.0)) - 1.0
        k = np.minimum(need, _POISSON_TERMS - 1.0)
        live = on & (k >= 1)
        if live.any():
            ai, ki = a[live], k[live]
            w = _window_hold(
                ai,
                iters[live],
                lambda s: _poisson_cdf(ki[:, None] - 1, ai[:, None] * s),
                lambda s: ai[:, None] * s * _poisson_cdf(ki[:, None] - 2, ai[:, None] * s),
            )
            out[live] += w
    adp = np.asarray(hold.adp_iters, dtype=float)
    g = np.asarray(hold.adp_ranks, dtype=float)
    on = (adp > 0) & (g > 1) & (clients >= 2 * g)
    if on.any():
        ai, gi, k = a[on][:, None], g[on][:, None], adp[on][:, None]
        e = np.asarray(hold.adp_extra_iters, dtype=float)[on][:, None]

        def open_(b):  # (P(C > b), E[N(b); C > b]): not every rank covered by b
            mu = ai * b / gi
            c = (1.0 - np.exp(-mu)) ** (gi - 1.0)
            hit = mu * c + (gi - 1.0) * mu * (1.0 - np.exp(-mu)) ** (gi - 2.0)
            return 1.0 - c, ai * b - hit

        def parts(s):
            p, m = open_(np.maximum(s - e, 0.0))
            surv = np.where(s < e, 1.0, p)
            cnt = np.where(s < e, ai * s, m + ai * e * p)
            pk, mk = open_(k)
            late = s >= k  # past the timeout only windows whose ranks were covered before it stay open
            return np.where(late, surv - pk, surv), np.where(late, cnt - (mk + ai * (s - k) * pk), cnt)

        out[on] += _window_hold(ai[:, 0], (k + e)[:, 0], lambda s: parts(s)[0], lambda s: parts(s)[1])
    r = np.asarray(hold.recv_interval, dtype=float)
    out += np.where(r > 1, (r - 1.0) / 2.0, 0.0)
    return out


def _own_prefill_s(step: StepModel, decoding: np.ndarray, ctx: np.ndarray, x: np.ndarray, points: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Mean time from a prompt's first chunk to its first token: ceil(P / b) mixed steps, each with
    the decoding batch, the other prompts' tokens of the step (x) and the prompt's own chunk,
    averaged over the quadrature points P of the prompt length."""
    if points.shape[1] == 1:
        p = points[:, 0]
        chunks = np.ceil(p / b)
        return chunks * step.mixed_parts(decoding, ctx, np.minimum(x + p / chunks, np.maximum(b, p / chunks)), p)
    col = step.column()
    p = points
    bb = b[:, None]
    chunks = np.ceil(p / bb)
    own = chunks * col.mixed_parts(decoding[:, None], ctx[:, None], np.minimum(x[:, None] + p / chunks, np.maximum(bb, p / chunks)), p)
    return own.mean(axis=1)


def _steady(
    step: StepModel,
    decoding: np.ndarray,
    lengths: RowLengths,
    budget: np.ndarray,
    with_ttft: bool = True,
    arrival_scv: float = 1.0,
    decode_tokens: np.ndarray | float | None = None,
    train: np.ndarray | float = 0.0,
):
    """Steady state with `decoding` sequences in decode and a prompt prefilled for each one that
    finishes. Returns (step time = TPOT, completion rate, prefill seconds per prompt, wait + own
    prefill of a prompt arriving at a random time; None unless `with_ttft`).

    Prompts per step m = D / (E[O] - 1); a step carries prompt tokens with probability
    p = max(1 - exp(-m), m E[I] / budget) and then m E[I] / p of them (perf.StepModel.lumpy_step's
    composition, with the arrivals per step known). The wait behind the prompts ahead is the
    G/G/1 (Kingman) mean rho / (1 - rho) x (c_a^2 + c_s^2) / 2 x E[S], S = I x c (c the replica
    seconds per prompt token), c_s^2 = E[I^2] / E[I]^2 - 1 the prompt work's squared coefficient
    of variation and c_a^2 = `arrival_scv` the arrivals': 1 for Poisson arrivals (MLPerf Server;
    it is then the Pollaczek-Khinchine mean), 0 for a closed loop's clients, whose next prompts
    follow their completions, spaced as their own prompts were served.

    The step's token budget: where the engine counts a decoding sequence's token in it
    (`decode_tokens`, by default the step model's engine rule, engines.budget_counts_decode: 1 for
    vLLM's max_num_batched_tokens and TRT-LLM's max_num_tokens; 0 for SGLang's
    chunked_prefill_size, prompt tokens only), a step takes at most chunk = budget - D / dp prompt
    tokens (per attention rank; the solver's and the simulator's rule). A prompt then occupies the
    prompt server for at least E[I] / chunk steps: its service is max(compute, E[I] t / chunk),
    so a population whose prompts outrun the budget (x > chunk) queues them (rho -> 1) instead of
    completing faster than its prompts can be prefilled. (MLPerf llama3.1-8b Offline on an H200
    NVL, max_num_tokens 1536, E[I] 872: about 195 sequences decode beside 1,340 prompt tokens a
    step, not the 1,900 the KV pool holds.)

    Under an overlap scheduler (perf.overlap_scheduler) the first token reaches the client after
    the next step: with probability `train` the next prompt's step (closed_loop: clients that come
    back one behind another), else a mean step."""
    L = lengths
    ctx = L.ctx
    steps = np.maximum(L.osl - 1, 1.0)
    m = decoding / steps
    x = m * L.isl
    dec = step.budget_decode_tokens if decode_tokens is None else decode_tokens
    b = np.maximum(np.maximum(budget, 1.0) - decoding * dec / step.dp, 1.0)
    p = np.clip(np.maximum(1 - np.exp(-m), x / b), 1e-12, 1.0)
    f0 = step.mixed_parts(decoding, ctx, np.zeros_like(x), L.isl_attn)
    f1 = step.mixed_parts(decoding, ctx, np.minimum(x / p, b), L.isl_attn)
    t = (1 - p) * f0 + p * f1
    rate = decoding / (steps * t)
    # replica seconds of prompt work per request: its compute, or its share of the budget's steps
    pf = np.maximum(L.isl * step.prefill_per_token_s(L.isl_attn), L.isl * t / b)
    if not with_ttft:
        return t, rate, pf, None
    own = _own_prefill_s(step, decoding, ctx, x, L.points, b)
    rho = np.minimum(rate * pf, 0.999)
    # admission: the scheduler takes a new request into a step `admission_steps` steps after it
    # arrives (the step under way, and the one already being planned); then the prompts ahead (M/G/1)
    cs2 = np.maximum(L.isl_sq / np.maximum(L.isl * L.isl, 1e-9) - 1.0, 0.0)
    wait = step.admission_steps * t + rho / (1 - rho) * (arrival_scv + cs2) / 2 * pf
    wait = wait + step.overlap_scheduler * (train * f1 + (1.0 - train) * t)
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
    lengths: RowLengths | None = None,
    hold: ContextHold | None = None,
    decode_tokens: np.ndarray | float | None = None,
    requests_per_client: np.ndarray | float | None = None,
) -> LoopResult:
    """Means of a closed-loop benchmark: N clients, each sending its next request when the last
    completes (burst=False: no wave arrives at once, as when every request is queued from the
    start). Lengths: fixed isl/osl, or `lengths` (a dataset's distributions, RowLengths).
    `requests_per_client`: the harness's waves of N (BENCHMARK_WAVES when None).

    The replica holds n = min(N, capacity) sequences (capacity: what its KV pool admits); the rest
    wait for memory. With D sequences decoding, a step lasts t(D) (perf.StepModel.decode_parts,
    plus the compute of the D/(E[O]-1) prompts prefilled per step), the replica completes
    r = D / ((E[O]-1) t) requests/s, a prompt arriving at a random time waits for the step under
    way and the prompts ahead (M/G/1) and is prefilled in ceil(I / budget) steps. A share
    `burst_fraction` of requests belongs to waves that arrive at once: their prompts fill
    k = ceil(n E[I] / budget) full steps and each first token comes at the end of its prompt's
    step, (k + max(1, k / n)) / 2 steps on average (batch_wave's rule: (n + 1) / 2 prompts' prefill
    where a step holds a prompt or less, the whole wave's one step where it holds them all; a
    wave's p99 says which: InferenceX's SGLang DeepSeek-R1 FP4 runs on MI355X at 32 clients and a
    196,608-token budget, two steps, measured a p99 of 5.9 s where two steps give about 5 s and 32
    prompts served one by one 3.1 s); `burst_fraction` is the share at BENCHMARK_WAVES requests
    per client, and the bunched waves are the first few, whatever the run's length: a run of W
    requests per client has BENCHMARK_WAVES / W times the share (InferenceX's MI355X DeepSeek-R1
    runs of 50 per client: a mean TTFT of 0.44 s at 64 clients, 0.30 s median, where the first
    wave alone took 12-13 s, its p99 6.0 s, the 32nd slowest of its 64). D solves
    n = r x (TTFT + (E[O]-1) t) (bisection; both sides grow with D). Clients beyond n wait
    (N - n)/r for memory (Little's law on the waiting room). `hold`: scheduler rules that keep a
    steady-state prompt out of whole steps (ContextHold, hold_steps); the first wave is not held
    (no generation request runs yet, and an idle SGLang scheduler receives every loop).
    `decode_tokens`: budget tokens a decoding sequence takes (_steady); a population whose prompts
    the budget cannot prefill as fast as it completes them is not a steady state, so D stops where
    prompts fill the budget and the clients beyond it wait for their prompts' turn (Little's law:
    TTFT = n / r - (E[O]-1) t)."""
    L = lengths if lengths is not None else RowLengths.fixed(isl, osl)
    n_clients = np.asarray(concurrency, dtype=float)
    admitted = np.maximum(np.minimum(n_clients, np.floor(capacity)), 1.0)
    share = wave_share(step.burst_fraction, requests_per_client) if burst else np.zeros_like(n_clients)
    steps = np.maximum(L.osl - 1, 1.0)
    # The first wave: the n prompts take k = ceil(n E[I] / budget) full steps, each prompt's first
    # token at the end of the step that finishes it: (k + own) / 2 steps on average, own =
    # max(1, k / n) the steps of one prompt's chunks (batch_wave's rule): (n + 1) / 2 prompts'
    # prefill where a step holds a prompt or less, n prompts' (the whole wave's one step) where it
    # holds them all
    full = np.minimum(budget, L.isl * admitted)
    wave_step = step.mixed_parts(np.ones_like(n_clients), L.isl, full, L.isl_attn)
    per_prompt_burst = wave_step * L.isl / np.maximum(full, 1.0)
    wave_steps = np.ceil(L.isl * admitted / np.maximum(budget, 1.0))
    wave_wait = (wave_steps + np.maximum(1.0, wave_steps / admitted)) / 2 * wave_step
    t1_w, t1_g, rest1 = step.step_parts(np.ones_like(n_clients), L.isl)
    held = hold is not None and hold.any

    # Clients of fixed lengths come back one behind another: requests that start one step apart
    # decode through the same steps and finish one step apart, so each prompt's step is followed by
    # the next client's (a train, when there is a next client); lengths that vary scatter them.
    train = np.minimum(admitted - 1.0, 1.0) if L.points.shape[1] == 1 else np.zeros_like(admitted)

    def ttft_of(decoding):
        t, rate, pf, ttft_steady = _steady(step, decoding, L, budget, arrival_scv=0.0, decode_tokens=decode_tokens, train=train)
        ttft_steady = np.where(rate * pf < 1.0, ttft_steady, np.inf)  # prompts outrun the prompt server
        burst_ttft = wave_wait + np.maximum(t1_w, t1_g) + rest1
        # an overlap scheduler's first token waits for the next step: the next prompt's, in a wave
        burst_ttft = burst_ttft + step.overlap_scheduler * per_prompt_burst * np.minimum(admitted - 1.0, 1.0)
        ttft = ttft_steady + np.maximum(burst_ttft - ttft_steady, 0.0) * share + step.request_overhead_s
        if held:  # steady-state prompts only: D / (E[O] - 1) of them arrive per step
            ttft = ttft + (1.0 - share) * hold_steps(hold, decoding / steps, decoding, admitted, L.isl) * t
        return t, rate, ttft

    lo = np.zeros_like(admitted)
    hi = admitted.copy()
    for _ in range(iterations):
        if np.all(hi - lo <= _BISECT_REL * hi):
            break
        mid = 0.5 * (lo + hi)
        t, rate, ttft = ttft_of(mid)
        over = rate * (ttft + steps * t) > admitted
        hi = np.where(over, mid, hi)
        lo = np.where(over, lo, mid)
    decoding = lo  # the largest population found to hold (just below the prompt server's limit)
    t, rate, ttft = ttft_of(decoding)
    ttft = np.maximum(ttft, admitted / np.maximum(rate, 1e-12) - steps * t)
    memory_wait = np.where(n_clients > admitted, (n_clients - admitted) / np.maximum(rate, 1e-12), 0.0)
    return LoopResult(
        ttft_s=ttft + memory_wait,
        tpot_s=t,
        output_tokens_per_s=rate * L.osl,
        rate_rps=rate,
        decoding=decoding,
        admitted=admitted,
        memory_wait_s=memory_wait,
    )


@dataclass(frozen=True)
class PromptGroups:
    """What releasing prompts to a replica in groups adds to an open loop's TTFT (prompt_groups),
    per row: `size` the prompts of a group, `fill_s` / `fill_p99_s` the mean and p99 of a
    request's wait for its group to leave, `prefill_s` the mean prefill of the group's other
    prompts a request waits for beside its own, `prefill_spread_s` that prefill's p99 excess
    over its mean (the group's size varies under a window rule, not under a count rule)."""

    size: np.ndarray
    fill_s: np.ndarray
    fill_p99_s: np.ndarray
    prefill_s: np.ndarray
    prefill_spread_s: np.ndarray

    @property
    def mean_s(self) -> np.ndarray:
        """Mean TTFT added: the wait to leave, and the group's prefill."""
        return self.fill_s + self.prefill_s

    def p99_s(self, base_mean_s: np.ndarray, base_p99_s: np.ndarray) -> np.ndarray:
        """The p99 TTFT of a grouped open loop whose ungrouped mean and p99 are given: the means
        add, and the parts' excesses of p99 over mean add in quadrature (independent parts, a
        normal approximation: the sum of their p99s would put every part at its own tail at once)."""
        with np.errstate(over="ignore", invalid="ignore"):
            spread = np.hypot(np.hypot(np.maximum(base_p99_s - base_mean_s, 0.0), self.fill_p99_s - self.fill_s), self.prefill_spread_s)
        return base_mean_s + self.mean_s + spread


_Z99 = NormalDist().inv_cdf(0.99)


def _group_fill_p99_s(group: np.ndarray, rate: np.ndarray, q: float = 0.99) -> np.ndarray:
    """The q-quantile of a request's wait for its group of `group` prompts to fill, arrivals
    Poisson at `rate`: the j-th of a group waits for the group - j arrivals after it, Gamma(group
    - j, rate), each member equally likely, so P(wait > x) = mean over n = 0 .. group - 1 of
    P(Poisson(rate x) <= n - 1); bisected on x."""
    g = np.maximum(np.round(np.asarray(group, dtype=float)), 1.0)
    lam = np.maximum(np.asarray(rate, dtype=float), 1e-12)
    n_max = int(min(g.max(initial=1.0), _POISSON_TERMS))

    def survival(x: np.ndarray) -> np.ndarray:
        n = np.arange(n_max)[None, :]  # members' arrivals still to come
        tail = np.where(n >= 1, _poisson_cdf(np.broadcast_to(n - 1.0, (x.size, n_max)), (lam * x)[:, None]), 0.0)
        return np.where(n < g[:, None], tail, 0.0).sum(axis=1) / g

    lo = np.zeros_like(lam)
    hi = (g + 10.0 * np.sqrt(g)) / lam
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        over = survival(mid) > 1.0 - q
        lo = np.where(over, mid, lo)
        hi = np.where(over, hi, mid)
    return np.where(g > 1, 0.5 * (lo + hi), 0.0)


def prompt_groups(
    step: StepModel,
    rate_rps: np.ndarray,
    replicas: np.ndarray,
    lengths: RowLengths,
    budget: np.ndarray,
    window_s: np.ndarray,
    group: np.ndarray,
) -> PromptGroups:
    """Open-loop rows whose prompts reach a replica's prefill in groups, not one by one (rows with
    neither rule get zeros). Two rules a measurement can state:

    - a harness window (`window_s` > 0): the harness gathers the requests of the whole system
      (`rate_rps` per replica x `replicas`) for `window_s`, then sends them to one replica at once,
      the replicas in turn (AMD's MLPerf v4.1 vLLM harness, --enable-batcher: sync_sut.py's
      batch_samples_loop sends what arrived once --batcher-threshold, 0.3 s by default, has passed
      since the last send, to next_device_id's next replica: mlcommons/inference_results_v4.1
      @198fc467 closed/AMD/code/llama2-70b-99.9/VllmFp8). A request waits half a window on average
      (the whole one at most), and a group holds rate x replicas x window requests, Poisson;
    - an engine count (`group` > 1): the engine prefills only once `group` prompts wait, so the j-th
      of a group waits for the group - j after it, (group - 1) / (2 rate) on average.

    A group reaches the engine at once and its prompts are prefilled together: in one step where
    its tokens fit the step budget, so each waits for the whole group's prefill, (size - 1) x E[I]
    x c beside its own (c: the replica seconds per prompt token, perf.StepModel.prefill_per_token_s);
    else in k = ceil(size E[I] / budget) steps, each prompt's first token at the end of its step
    (batch_wave's rule, (k + max(1, k / size)) / 2 steps). The queue behind earlier groups is the
    open loop's own M/G/1 wait: a group of K prompts every K / rate seconds with K prompts' work has
    the same Kingman wait as single Poisson prompts (c_a^2 = 1 / K for a count rule, the work's
    c_s^2 / K)."""
    L = lengths
    lam = np.maximum(np.asarray(rate_rps, dtype=float), 1e-12)
    window = np.maximum(np.nan_to_num(np.asarray(window_s, dtype=float)), 0.0)
    count = np.maximum(np.nan_to_num(np.asarray(group, dtype=float)), 1.0)
    with np.errstate(over="ignore"):
        per_window = lam * np.asarray(replicas, dtype=float) * window  # requests a window gathers
    windowed = window > 0
    size = np.where(windowed, np.maximum(per_window, 1.0), count)
    # a window that gathers less than one request on average mostly sends a lone request as it
    # arrives (the window has passed since the last send): the wait in proportion
    busy = np.minimum(per_window, 1.0)
    fill = np.where(windowed, 0.5 * window * busy, (count - 1.0) / (2.0 * lam))
    fill_p99 = np.where(windowed, 0.99 * window * busy, _group_fill_p99_s(count, lam))
    per_prompt = L.isl * step.prefill_per_token_s(L.isl_attn)
    b = np.maximum(np.asarray(budget, dtype=float), 1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        tokens = size * L.isl
        k = np.ceil(tokens / b)
        steps = (k + np.maximum(1.0, k / size)) / 2  # the mean steps to a prompt's first token
        prefill = np.maximum(steps * np.minimum(b, tokens) / np.maximum(L.isl, 1.0) - 1.0, 0.0) * per_prompt
        share = np.where(k <= 1, 1.0, 0.5)  # the prompts of its group a request waits for
        # a window's group is Poisson(per_window): its p99 excess over the mean, z99 x sqrt(mean)
        spread = np.where(windowed, _Z99 * np.sqrt(per_window) * share * per_prompt, 0.0)
    # a group too large to count (an overflowing window x rate) takes for ever, not nan
    prefill = np.where(np.isfinite(size), prefill, np.inf)
    spread = np.where(np.isfinite(size), spread, np.inf)
    grouped = windowed | (count > 1)
    z = np.zeros_like(lam)
    return PromptGroups(
        size=np.where(grouped, size, 1.0),
        fill_s=np.where(grouped, fill, z),
        fill_p99_s=np.where(grouped, fill_p99, z),
        prefill_s=np.where(grouped, prefill, z),
        prefill_spread_s=np.where(grouped, spread, z),
    )


def open_loop_step_s(step: StepModel, decoding: np.ndarray, budget: np.ndarray, lengths: RowLengths, decode_tokens: np.ndarray | float | None = None) -> np.ndarray:
    """The step time (TPOT) of the open loop's steady state with `decoding` sequences in decode
    and a prompt prefilled for each one that finishes: what open_loop predicts at that population,
    without solving for the population a rate implies (evidence: an MLPerf Server row's step
    error at the running batch it measured)."""
    t, _, _, _ = _steady(step, np.asarray(decoding, dtype=float), lengths, budget, with_ttft=False, decode_tokens=decode_tokens)
    return t


def open_loop(
    step: StepModel,
    rate_rps: np.ndarray,
    isl: np.ndarray,
    osl: np.ndarray,
    budget: np.ndarray,
    iterations: int = 60,
    lengths: RowLengths | None = None,
    decode_tokens: np.ndarray | float | None = None,
) -> LoopResult:
    """Means under Poisson arrivals at `rate_rps` (MLPerf Server), fixed isl/osl or `lengths`: the
    decode population D solves D = rate x (E[O]-1) x t(D) (bisection); TTFT as in the closed
    loop's steady state. Rows the rate saturates get inf."""
    L = lengths if lengths is not None else RowLengths.fixed(isl, osl)
    lam = np.asarray(rate_rps, dtype=float)
    lo = np.zeros_like(lam)
    hi = np.full_like(lam, 1e6)
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        t, rate, _, _ = _steady(step, mid, L, budget, with_ttft=False, decode_tokens=decode_tokens)
        over = rate > lam  # D large enough to complete faster than arrivals
        hi = np.where(over, mid, hi)
        lo = np.where(over, lo, mid)
    decoding = 0.5 * (lo + hi)
    t, rate, pf, ttft = _steady(step, decoding, L, budget, decode_tokens=decode_tokens)
    ok = (rate >= lam * 0.999) & (lam * pf < 1)
    ttft = np.where(ok, ttft + step.request_overhead_s, np.inf)
    return LoopResult(
        ttft_s=ttft,
        tpot_s=np.where(ok, t, np.inf),
        output_tokens_per_s=np.where(ok, lam * L.osl, rate * L.osl),
        rate_rps=lam,
        decoding=decoding,
        admitted=decoding,
        memory_wait_s=np.zeros_like(lam),
    )


def offline(
    step: StepModel,
    isl: np.ndarray,
    osl: np.ndarray,
    capacity: np.ndarray,
    budget: np.ndarray,
    lengths: RowLengths | None = None,
    decode_tokens: np.ndarray | float | None = None,
) -> LoopResult:
    """Throughput with every request queued at once (MLPerf Offline, trtllm-bench): a closed loop
    of as many clients as the replica admits, with no first-wave burst."""
    return closed_loop(step, np.floor(np.maximum(capacity, 1.0)), isl, osl, capacity, budget, burst=False, lengths=lengths, decode_tokens=decode_tokens)


def batch_wave(
    step: StepModel, requests: np.ndarray, isl: np.ndarray, osl: np.ndarray, capacity: np.ndarray, budget: np.ndarray, lengths: RowLengths | None = None
) -> LoopResult:
    """One wave of N requests sent at once and measured to the last (vLLM benchmark_throughput
    --num-prompts N, benchmark_latency --batch-size N, benchmark_serving at an infinite rate).

    The replica admits n = min(N, capacity) at a time, in N / n waves. A wave's prompts,
    n x E[I] tokens, are prefilled in k = ceil(n E[I] / budget) full steps (one decoding sequence's
    weights, the step's prompt GEMMs and attention); then the wave decodes E[O] - 1 steps of
    t(n) at the mean running context. Prompts are prefilled in turn: the i-th of the wave has its
    first token after ceil(i k / n) of the k steps, on average s = (k + max(1, k / n)) / 2 steps
    ((k + 1) / 2 when a step holds whole prompts, k <= n; k (n + 1) / (2 n) when each prompt spans
    several steps, k > n: a request alone waits for all k of its chunks), plus half the earlier
    waves; throughput is N E[O] over the waves' time. A request whose prompt is prefilled early
    has R prefill steps left after its first token, R uniform on [0, K], K = k - max(1, k / n)
    (none for a request alone), and m = E[O] - 1 output steps:

        decode in every step (vLLM, TensorRT-LLM: decoding sequences ride in the prefill steps,
        their tokens counted in the budget, engines.budget_counts_decode = 1): its first min(R, m)
        output steps are prefill steps f instead of t, TPOT = t + E[min(R, m)] (f - t) / m, with
        E[min(R, m)] = K / 2 for K <= m, else m - m^2 / (2 K): a request whose decode ends
        before the prefills do has every output step a prefill step (TPOT = f)
        prefill first (SGLang: a prefill batch runs alone while prompts wait, budget_counts_decode
        = 0): it decodes after them, TPOT = t + (K / 2) f / m

    vLLM's V0 scheduler without chunked prefill runs prefills alone too; its budget (the model
    length) holds whole prompts, so K is small beside m and the two rules nearly agree."""
    L = lengths if lengths is not None else RowLengths.fixed(isl, osl)
    n_req = np.maximum(np.asarray(requests, dtype=float), 1.0)
    admitted = np.maximum(np.minimum(n_req, np.floor(capacity)), 1.0)
    waves = n_req / admitted
    b = np.maximum(budget, 1.0)
    tokens = admitted * L.isl
    k = np.ceil(tokens / b)
    full = np.minimum(b, tokens)
    prefill_step = step.mixed_parts(np.ones_like(n_req), L.isl, full, L.isl_attn)
    t_w, t_g, rest = step.step_parts(admitted, L.ctx)
    t = np.maximum(t_w, t_g) + rest
    wave_s = k * prefill_step + np.maximum(L.osl - 1, 0.0) * t
    own = np.maximum(1.0, k / admitted)  # steps of one prompt's chunks: 1 when a step holds whole prompts
    ttft = (k + own) / 2 * prefill_step + step.request_overhead_s + (waves - 1) / 2 * wave_s
    elapsed = waves * wave_s
    later = k - own  # K: prefill steps left after the first request's first token
    m = np.maximum(L.osl - 1, 1.0)
    overlap = np.where(later <= m, later / 2, m - m * m / (2 * np.maximum(later, 1e-12)))  # E[min(R, m)], R ~ U[0, K]
    riding = step.budget_decode_tokens > 0
    tpot = np.where(riding, t + overlap * np.maximum(prefill_step - t, 0.0) / m, t + later / 2 * prefill_step / m)
    return LoopResult(
        ttft_s=ttft,
        tpot_s=tpot,
        output_tokens_per_s=n_req * L.osl / elapsed,
        rate_rps=n_req / elapsed,
        decoding=admitted,
        admitted=admitted,
        memory_wait_s=(waves - 1) / 2 * wave_s,
    )
