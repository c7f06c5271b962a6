"""Queueing formulas (sizer/queueing.py) against closed forms from queueing theory, and the
benchmark loops against Little's law. Sources: Kleinrock, Queueing Systems vol. 1 (1975):
M/D/1 mean wait rho S / (2 (1 - rho)) (Pollaczek-Khinchine, eq. 5.86) and M/M/1 wait
distribution P(W > x) = rho exp(-(mu - lambda) x) (eq. 3.28)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sizer.efficiency import Factors, table_from_factors
from sizer.perf import build_step_model
from sizer.queueing import (
    Demand,
    Limits,
    _compound_delay_cdfs,
    _pk_wait_cdf,
    closed_loop,
    evaluate_load,
    SEARCH_MARGIN,
    max_rate,
    offline,
)
from sizer.workload import LengthDist


def _mean_from_cdf(edges: np.ndarray, cdf: np.ndarray) -> float:
    pmf = np.diff(np.concatenate([[0.0], cdf]))
    centres = edges - (edges[1] - edges[0]) / 2
    return float((pmf * np.maximum(centres, 0)).sum())


def test_pollaczek_khinchine_wait_of_md1():
    """M/D/1, service 0.1 s, rho 0.6: E[W] = 0.6 x 0.1 / (2 x 0.4) = 0.075 s; P(W = 0) = 0.4."""
    edges, cdf = _pk_wait_cdf(np.array([0.6]), np.array([[0.1]]), np.array([1.0]))
    assert _mean_from_cdf(edges[0], cdf[0]) == pytest.approx(0.075, rel=0.02)
    assert cdf[0][0] == pytest.approx(0.4, abs=0.01)


def test_pollaczek_khinchine_tail_of_mm1():
    """M/M/1 with mean service 0.1 s at rho 0.5 (mu 10, lambda 5): P(W > x) = 0.5 exp(-5 x);
    exponential service as 400 equal-probability quantile points."""
    q = (np.arange(400) + 0.5) / 400
    service = -0.1 * np.log(1 - q)
    edges, cdf = _pk_wait_cdf(np.array([0.5]), service[None, :], np.full(400, 1 / 400))
    for x in (0.1, 0.3, 0.6):
        assert 1 - np.interp(x, edges[0], cdf[0]) == pytest.approx(0.5 * math.exp(-5 * x), abs=0.01)


def _delay_cdf(lam, t, o, jump, sd=0.0):
    h, cdf = _compound_delay_cdfs(np.array([lam]), np.array([t]), np.array([o]), np.array([[jump]]), np.array([1.0]), np.array([sd]))
    return h[0, 0] * (np.arange(cdf.shape[2]) + 0.5), cdf[0, 0]  # CDF at each bin's upper edge


def test_compound_poisson_delay_mean_and_variance():
    """X = sum of Poisson(m) jumps of 0.2 s: E[X] = 0.2 m, Var[X] = 0.04 m. Per output length O the
    grid holds X / O; with lam t O = m = 5 prompts per life and O = 100: mean 0.01, sd 0.00447."""
    edges, cdf = _delay_cdf(2.5, 0.02, 100.0, 0.2)
    pmf = np.diff(np.concatenate([[0.0], cdf]))
    x = edges - (edges[1] - edges[0]) / 2  # bin centres
    mean = (pmf * x).sum()
    var = (pmf * x**2).sum() - mean**2
    # each jump's mass is split between the two bins around it: the mean is exact, not within a bin
    assert mean == pytest.approx(0.2 * 5 / 100, rel=1e-3)
    assert math.sqrt(var) == pytest.approx(math.sqrt(0.04 * 5) / 100, rel=0.02)


def test_compound_poisson_delay_with_batch_noise():
    """The same sum plus the running batch's normal noise, sd 0.002 s per token: Var[Y] =
    0.04 x 5 / 100^2 + 0.002^2 = 2.4e-5, sd 0.00490; the mean stays 0.01 (the noise's negative
    side, 2.6 sd below zero from 0.01 / sqrt(...) and folded onto the first bin, moves it by
    under 1e-4). The FFT's circle is the horizon plus room for 6 sd of noise below zero."""
    edges, cdf = _delay_cdf(2.5, 0.02, 100.0, 0.2, sd=0.002)
    pmf = np.diff(np.concatenate([[0.0], cdf]))
    x = edges - (edges[1] - edges[0]) / 2
    mean = (pmf * x).sum()
    assert cdf[-1] == pytest.approx(1.0, abs=1e-9)
    assert mean == pytest.approx(0.01, abs=1e-4)
    assert math.sqrt((pmf * x**2).sum() - mean**2) == pytest.approx(math.sqrt(2.4e-5), rel=0.03)


def test_fft_circles_have_small_prime_factors():
    from sizer.queueing import _DELAY_BINS, _FFT_LADDER

    for n in _FFT_LADDER:
        m = int(n)
        for p in (2, 3, 5):
            while m % p == 0:
                m //= p
        assert m == 1, n
    assert _FFT_LADDER.max() == 2 * _DELAY_BINS  # room for noise down to minus the whole horizon


def test_compound_poisson_delay_cdf_is_the_poisson_count_cdf():
    """Equal jumps of 0.2 s, m = 1.5 x 0.02 x 100 = 3 per life, O = 100: Y = X / O = 0.002 N with
    N ~ Poisson(3), so between the atoms the CDF is Poisson's: P(N <= 2) = 17 e^-3 / 2 = 0.42319,
    P(N <= 7) = 0.98810 (sum of 3^k e^-3 / k!). The jump, 0.2 / (0.002-wide grid) on no bin boundary,
    is where rounding each jump to its nearest bin put the atoms a bin off."""
    edges, cdf = _delay_cdf(1.5, 0.02, 100.0, 0.2)
    poisson_cdf = lambda n: sum(3**k * math.exp(-3) / math.factorial(k) for k in range(n + 1))  # noqa: E731
    for y, n in ((0.005, 2), (0.015, 7)):
        assert np.interp(y, edges, cdf) == pytest.approx(poisson_cdf(n), abs=1e-3)
    # the mixture quantile over one O: the 0.99 quantile lies between the atoms of N = 7 and N = 8
    from sizer.queueing import _mixture_quantile

    h, c = _compound_delay_cdfs(np.array([1.5]), np.array([0.02]), np.array([100.0]), np.array([[0.2]]), np.array([1.0]), np.array([0.0]))
    q = float(_mixture_quantile((h, c), np.array([1.0]), 0.99)[0])
    assert 0.014 <= q <= 0.016 + h[0, 0]


@pytest.fixture(scope="module")
def chat_step(catalog):
    return build_step_model([(catalog.model("llama-3.1-70b"), catalog.gpu("H100-SXM"), 2, 1, "fp8", "fp8")], engine="vllm")


def _demand(ttft=(), tpot=()):
    return Demand(
        prompt=LengthDist(percentiles=((50.0, 1200.0), (90.0, 3000.0), (99.0, 6000.0))),
        output=LengthDist(percentiles=((50.0, 250.0), (90.0, 600.0), (99.0, 1200.0))),
        ttft_s=ttft,
        tpot_s=tpot,
    )


LIMITS = Limits(max_concurrency=np.array([400.0]), max_num_seqs=np.array([1024.0]), max_num_batched_tokens=np.array([8192.0]))


def test_open_loop_percentiles_grow_with_load_and_are_ordered(chat_step):
    d = _demand(ttft=(("p90", 2.0),), tpot=(("p95", 0.1),))
    low = evaluate_load(chat_step, np.array([0.5]), d, LIMITS)
    high = evaluate_load(chat_step, np.array([4.0]), d, LIMITS)
    for point in (low, high):
        assert point.ttft_s["p50"][0] <= point.ttft_s["p90"][0] <= point.ttft_s["p99"][0]
        assert point.tpot_s["p50"][0] <= point.tpot_s["p95"][0] <= point.tpot_s["p99"][0]
    assert high.ttft_s["p99"][0] > low.ttft_s["p99"][0]
    assert high.tpot_s["p99"][0] > low.tpot_s["p99"][0]
    assert high.running_mean[0] > low.running_mean[0]


def test_open_loop_littles_law(chat_step):
    """The decode population N solves N = lambda E[O] t(N): check it at the solution."""
    d = _demand()
    lam = 3.0
    point = evaluate_load(chat_step, np.array([lam]), d, LIMITS)
    n = point.decoding_mean[0]
    t = chat_step.lumpy_step(np.array([n]), d.mean_running_context, np.array([lam]), np.array([d.prompt.mean]), np.array([8192.0 - n]),
                             prompt_parts=chat_step.prefill_token_parts(np.array([d.prompt.size_biased_mean])))[0][0]
    assert n == pytest.approx(lam * d.output.mean * t, rel=1e-3)


def test_max_rate_stops_where_the_bound_binds(chat_step):
    d = _demand(ttft=(("p99", 2.0),), tpot=(("p99", 0.045),))
    cap = max_rate(chat_step, d, LIMITS)
    rate = cap.max_rate_rps[0]
    assert rate > 0
    bound = {"ttft": 2.0, "tpot": 0.045}[cap.binding[0]]
    at_max = evaluate_load(chat_step, np.array([rate]), d, LIMITS)
    value = (at_max.ttft_s if cap.binding[0] == "ttft" else at_max.tpot_s)["p99"][0]
    assert value == pytest.approx(bound, rel=0.02)
    above = evaluate_load(chat_step, np.array([rate * 1.05]), d, LIMITS)
    assert above.ttft_s["p99"][0] > 2.0 or above.tpot_s["p99"][0] > 0.045


def test_max_rate_is_feasible_and_the_tolerance_above_it_is_not(catalog):
    """The search's contract for every candidate at once (three devices, TP 2 to 8, two weight
    formats: rates from 0.3 to 11 requests/s, some bound by TTFT, some by TPOT or memory, four
    serving none): the rate returned passes every check, and 1 % above it fails one."""
    from sizer.queueing import feasible

    model = catalog.model("llama-3.1-70b")
    rows = [(model, catalog.gpu(g), tp, 1, wd, "fp8") for g in ("H100-SXM", "A100-80GB", "L40S") for tp in (2, 4, 8) for wd in ("bf16", "fp8")]
    rows = [r for r in rows if not (r[1].name == "A100-80GB" and r[4] == "fp8")]
    step = build_step_model(rows, engine="vllm")
    n = step.size
    limits = Limits(
        max_concurrency=np.linspace(40.0, 600.0, n),
        max_num_seqs=np.full(n, 256.0),
        max_num_batched_tokens=np.full(n, 8192.0),
    )
    d = _demand(ttft=(("p99", 2.0),), tpot=(("p99", 0.05),))
    cap = max_rate(step, d, limits)
    rate = cap.max_rate_rps
    assert (rate > 0).sum() >= n // 2
    served = rate > 0
    assert feasible(evaluate_load(step, np.where(served, rate, 1e-9), d, limits), d, limits)[served].all()
    # the search keeps SEARCH_MARGIN of each bound in hand: 1 % above the rate fails the bounds
    # less that margin (the ones searched against)
    tight = _demand(ttft=(("p99", 2.0 * (1 - SEARCH_MARGIN)),), tpot=(("p99", 0.05 * (1 - SEARCH_MARGIN)),))
    assert not feasible(evaluate_load(step, np.where(served, rate * 1.01, 1e-9), tight, limits), tight, limits)[served].any()
    assert {"ttft", "tpot", "memory"} & set(cap.binding)


def test_closed_loop_satisfies_littles_law(chat_step):
    """N clients = completion rate x (TTFT + (osl - 1) TPOT) when all are admitted."""
    n = np.array([8.0, 64.0])
    out = closed_loop(chat_step.take([0, 0]), n, np.array([1024.0, 1024.0]), np.array([512.0, 512.0]), np.array([1e4, 1e4]), np.array([8192.0, 8192.0]))
    cycle = out.ttft_s + 511 * out.tpot_s
    assert out.rate_rps * cycle == pytest.approx(n, rel=1e-3)
    assert out.tpot_s[1] > out.tpot_s[0]


def test_closed_loop_clients_beyond_memory_wait_their_turn(chat_step):
    """With room for 16 sequences, 64 clients: 48 wait, for (64 - 16) / rate seconds."""
    out = closed_loop(chat_step, np.array([64.0]), np.array([1024.0]), np.array([512.0]), np.array([16.0]), np.array([8192.0]))
    assert out.admitted[0] == 16
    assert out.memory_wait_s[0] == pytest.approx(48 / out.rate_rps[0], rel=1e-9)
    assert out.rate_rps[0] * (out.ttft_s[0] + 511 * out.tpot_s[0]) == pytest.approx(64, rel=1e-3)


def test_offline_runs_at_the_memory_ceiling(chat_step):
    """Offline throughput is the closed loop at as many clients as fit, without the wave burst."""
    out = offline(chat_step, np.array([1000.0]), np.array([1000.0]), np.array([200.0]), np.array([8192.0]))
    assert out.admitted[0] == 200
    assert out.output_tokens_per_s[0] == pytest.approx(out.rate_rps[0] * 1000)


def test_idealised_factors_give_the_roofline(catalog):
    """With every fraction 1 and no overhead, one request alone: TTFT = half the decode step under
    way when it arrives + its prefill step (weights hidden under the prompt's GEMMs), TPOT = the
    weight reads: the roofline."""
    ideal = Factors(
        hbm_bandwidth_fraction=1.0, expert_bandwidth_fraction=1.0, kv_bandwidth_fraction=1.0, compute_fraction=1.0, prefill_compute_fraction=1.0,
        attention_compute_fraction=1.0, link_bandwidth_fraction=1.0, burst_fraction=0.0, link_latency_s=0.0, step_overhead_s=0.0,
        sequence_overhead_s=0.0, request_overhead_s=0.0, prefill_layer_overhead_s=0.0, admission_steps=0.0, attention_dp_prefill_factor=1.0,
    )
    step = build_step_model([(catalog.model("llama-3.1-8b"), catalog.gpu("H100-SXM"), 1, 1, "bf16", "bf16")], efficiency=table_from_factors(ideal))
    d = Demand(prompt=LengthDist(percentiles=((50.0, 1000.0),)), output=LengthDist(percentiles=((50.0, 200.0),)), ttft_s=(), tpot_s=())
    point = evaluate_load(step, np.array([1e-4]), d, Limits(max_concurrency=np.array([10.0]), max_num_seqs=np.array([256.0]), max_num_batched_tokens=np.array([8192.0])))
    decode = float(step.decode_step_s(np.array([1.0]), np.array([1100.0]))[0])
    assert point.tpot_s["p50"][0] == pytest.approx(decode, rel=0.01)
    own = float(step.mixed_parts(np.array([1.0]), np.array([1100.0]), np.array([1000.0]), np.array([1000.0]))[0])
    assert point.ttft_s["p50"][0] == pytest.approx(own + 0.5 * decode, rel=0.01)


def test_exp_i_is_complex_exp():
    """The compound-Poisson characteristic function is exponentiated by float32 sine and cosine of
    the phase reduced in float64 (queueing._exp_i): against numpy's complex exp, phases to 1e4
    radians and moduli from 1 down to e^-700."""
    from sizer.queueing import _exp_i

    rng = np.random.default_rng(3)
    re = -rng.random(100_000) * 700
    im = (rng.random(100_000) - 0.5) * 2e4
    got = _exp_i(re, im)
    want = np.exp(re + 1j * im)
    assert np.abs(got - want).max() < 1e-6
    assert got.dtype == np.complex128


def test_mean_rate_bound_is_the_occupancy_root(chat_step):
    """Without a TPOT bound, queueing.mean_rate_bound is where a Poisson running batch's p99 tail
    would reach the pool (an upper bound on the root: the batch's own law is wider than Poisson):
    N + 2.3263 sqrt(N) = 400 gives sqrt(N) = (-2.3263 + sqrt(2.3263^2 + 1600)) / 2 =
    18.871, N = 356.1 sequences (worked by hand).

    The bound is searched on a grid in log(rate) to a cell of 20.72 / 31^3 = 6.96e-4 (three rounds
    of 31 intervals over 1e-9 to 1 of saturation) and returns the cell's upper end, where the
    check first fails: the root lies in (bound e^-6.96e-4, bound]. The running batch there, N
    solving N = rate E[O] t(N) (evaluate_load's own solver), must therefore bracket 356.1. The
    bracket is narrow in rate but not in N: near the pool the step grows almost as fast as the
    batch (t ~ N^0.8 for this 70B on two H100s), so N moves 15-20 times as fast as the rate, and
    the cell spans about 1.2 % of N. The gap between the two step models is that cell, not a
    tolerance: a fixed 1 % held only while the fitted factors kept the step's elasticity low."""
    from sizer.queueing import _running_batch, mean_rate_bound

    d = _demand()
    saturation = 1.0 / (d.prompt.mean * chat_step.prefill_per_token_s(np.array([d.prompt.mean])))
    bound = mean_rate_bound(chat_step, d, LIMITS, saturation)
    point = evaluate_load(chat_step, bound, d, LIMITS)
    cell = 20.72 / 31**3
    parts = chat_step.prefill_token_parts(np.full(1, d.prompt.size_biased_mean))
    column = chat_step.column()
    budget = np.array([8192.0])
    n_lo = _running_batch(column, bound * math.exp(-cell), d.output.mean, d.mean_running_context, d.prompt.mean, budget, parts)[0][0]
    n_hi = _running_batch(column, bound, d.output.mean, d.mean_running_context, d.prompt.mean, budget, parts)[0][0]
    assert point.decoding_mean[0] == pytest.approx(n_hi, rel=1e-9)  # the same solver
    # the root solver's own precision: 2e-5 in log N
    assert n_lo * (1 - 2e-5) <= 356.1 <= n_hi * (1 + 2e-5)
    z = 2.3263
    # the batch's own tail (wider than Poisson: evaluate_load) is past the pool there: a bound
    assert n_lo + z * math.sqrt(n_lo) <= 400.0 * (1 + 1e-4) and point.running_tail[0] >= 400.0 * (1 - 1e-4)
    assert n_hi / n_lo - 1 < 0.05  # the cell is narrow in N too (1.2 % under the shipped table)


@pytest.fixture(scope="module")
def eighteen(catalog):
    """Eighteen candidates of Llama-3.1-70B (three devices, TP 2 to 8, two weight formats) with
    pools from 40 to 600 sequences, under TTFT p99 <= 2 s and TPOT p99 <= 50 ms."""
    model = catalog.model("llama-3.1-70b")
    rows = [(model, catalog.gpu(g), tp, 1, wd, "fp8") for g in ("H100-SXM", "A100-80GB", "L40S") for tp in (2, 4, 8) for wd in ("bf16", "fp8")]
    step = build_step_model(rows, engine="vllm")
    n = step.size
    limits = Limits(max_concurrency=np.linspace(40.0, 600.0, n), max_num_seqs=np.full(n, 256.0), max_num_batched_tokens=np.full(n, 8192.0))
    return step, limits, _demand(ttft=(("p99", 2.0),), tpot=(("p99", 0.05),))


def test_mean_rate_bound_is_never_below_the_largest_rate(eighteen):
    """The rate search's first probes sit at mean_rate_bound and 0.8 of it: the bound holds the
    occupancy check exactly and the TPOT bound on the mean step, which TPOT's p99 exceeds, so no
    candidate's largest rate lies above it."""
    from sizer.queueing import mean_rate_bound

    step, limits, d = eighteen
    n = step.size
    saturation = 1.0 / (d.prompt.mean * step.prefill_per_token_s(np.full(n, d.prompt.mean)))
    bound = mean_rate_bound(step, d, limits, saturation)
    rate = max_rate(step, d, limits).max_rate_rps
    assert (rate > 0).sum() >= n // 2
    assert (rate <= bound * 1.001).all()
    assert (rate >= 0.5 * bound)[rate > 0].any()  # and it is near the roots, not merely above them


def test_a_candidates_figures_do_not_depend_on_the_others(eighteen):
    """Candidates are evaluated together, in blocks and by FFT circle: each one's latencies must be
    those it has evaluated alone, to the bit (else a search's answer would depend on its space)."""
    step, limits, d = eighteen
    n = step.size
    rates = np.geomspace(0.01, 5.0, n)  # FFT circles of 576 and 640 bins among them
    together = evaluate_load(step, rates, d, limits)
    for i in range(n):
        one = Limits(max_concurrency=limits.max_concurrency[[i]], max_num_seqs=limits.max_num_seqs[[i]], max_num_batched_tokens=limits.max_num_batched_tokens[[i]])
        alone = evaluate_load(step.take([i]), rates[[i]], d, one)
        for key in ("p50", "p99"):
            # to the bit, and a candidate past saturation (inf, or NaN) is so together as alone
            assert np.array_equal(alone.tpot_s[key][:1], together.tpot_s[key][i : i + 1], equal_nan=True), (i, key)
            assert np.array_equal(alone.ttft_s[key][:1], together.ttft_s[key][i : i + 1], equal_nan=True), (i, key)


def test_ttft_wait_has_its_atom_at_zero():
    """TTFT's quantile is of shift + W, W the M/G/1 wait, which is 0 with probability 1 - rho.
    Prompts whose own parts take 1, 2 and 3 s (probabilities 0.5, 0.4, 0.1) at rho = 1e-6: the
    0.85-quantile is 2 s and the 0.95- and 0.99-quantiles 3 s (worked by hand: W is almost surely
    0). Reading W's CDF as 0 below its first grid edge added that edge (here 1/64 s) to each."""
    from sizer.queueing import _shifted_quantile

    rho = np.array([1e-6])
    edges, cdf = _pk_wait_cdf(rho, np.array([[0.5, 4.0]]), np.array([0.9, 0.1]))
    assert edges[0, 0] == pytest.approx(1 / 64, rel=1e-3)  # horizon 2 x 4 s over 512 bins
    shift, w = np.array([[1.0, 2.0, 3.0]]), np.array([0.5, 0.4, 0.1])
    for q, want in ((0.85, 2.0), (0.95, 3.0), (0.99, 3.0)):
        assert _shifted_quantile(edges, cdf, shift, w, q, atom=1.0 - rho)[0] == pytest.approx(want, abs=1e-4)


def test_uniform_phase_waits_add_to_ttft_as_worked_by_hand():
    """An arrival's phase in the admission cycle (uniform on [0, A), A = 2 admission_steps x t)
    and in the step under way (uniform on [0, B), B = the decode step) add to its TTFT: at rho ~ 0
    (W almost surely 0), one prompt whose own parts take 1 s, A = 0.3 s and B = 0.1 s, TTFT is
    1 + U[0, A) + U[0, B). The sum of the two uniforms (A >= B) is flat at 1 / A on [B, A], with
    triangular ends; by hand:
        median  (A + B) / 2                                         = 0.2 s  -> 1.2 s
        q >= 1 - B / (2 A): P(S > s) = (A + B - s)^2 / (2 A B), so s = A + B - sqrt(2 A B (1 - q))
        0.9     0.4 - sqrt(0.006)  = 0.322540 s -> 1.322540 s
        0.99    0.4 - sqrt(0.0006) = 0.375505 s -> 1.375505 s
    and the mean is kept: 1 + A / 2 + B / 2 = 1.2 s, as when the two waits were their means."""
    from sizer.queueing import _shifted_quantile

    rho = np.array([1e-6])
    a, b = np.array([0.3]), np.array([0.1])
    edges, cdf = _pk_wait_cdf(rho, np.array([[0.01]]), np.array([1.0]), uniform_s=(a, b))
    shift, w = np.array([[1.0]]), np.array([1.0])
    h = edges[0, 0]
    assert h < 1e-3  # (2 x 0.01 + 0.4) s over 512 bins
    for q, want in ((0.5, 1.2), (0.9, 1.322540), (0.99, 1.375505)):
        assert _shifted_quantile(edges, cdf, shift, w, q, atom=np.zeros(1))[0] == pytest.approx(want, abs=1.5 * h)
    assert 1.0 + _mean_from_cdf(edges[0], cdf[0]) == pytest.approx(1.2, abs=1.5 * h)


def test_uniform_transform_keeps_the_mean_and_the_mass():
    """The lattice law of a uniform on [0, L) bins keeps mass 1 and mean L / 2 exactly (each bin
    split between its ends about its own mean) and is never negative: L = 10 (ten whole bins),
    10.5 and 3.7 (a partial last bin), 0.3 (under one bin) and 0 (all at 0)."""
    from sizer.queueing import _uniform_transform

    for length in (10.0, 10.5, 3.7, 0.3, 0.0):
        pmf = np.fft.irfft(_uniform_transform(np.array([length]), 64), n=64, axis=1)[0]
        assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
        assert (pmf * np.arange(64)).sum() == pytest.approx(length / 2, abs=1e-12)
        assert pmf.min() > -1e-12
    whole = np.fft.irfft(_uniform_transform(np.array([10.0]), 64), n=64, axis=1)[0]
    assert whole[:11] == pytest.approx([0.05] + [0.1] * 9 + [0.05], abs=1e-12)  # half a bin's share at each end


# ---------------------------------------------------------------------------------------------
# The running batch's law and the wait for a --max-num-seqs slot
# ---------------------------------------------------------------------------------------------


def _erlang_c(c: int, a: float) -> float:
    """Erlang C by the Erlang B recursion B_k = a B_{k-1} / (k + a B_{k-1}), C = c B / (c - a (1 - B))."""
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return c * b / (c - a * (1 - b))


def test_erlang_c_worked_by_hand():
    """M/M/2 at a = 1: C = (a^2 / 2! x 2 / (2 - 1)) / (1 + a + a^2 / 2! x 2 / (2 - 1)) = 1 / 3;
    M/M/10 at a = 7 (Erlang B recursion): B = 0.07874, C = 10 B / (10 - 7 (1 - B)) = 0.22173."""
    assert _erlang_c(2, 1.0) == pytest.approx(1 / 3, rel=1e-12)
    assert _erlang_c(10, 7.0) == pytest.approx(0.22173, abs=5e-6)


@pytest.mark.parametrize("c,a", [(2, 1.0), (10, 7.0), (20, 15.0), (71, 52.0), (100, 80.0)])
def test_slot_wait_is_erlang_c_for_a_poisson_batch(c, a):
    """A batch whose free law is Poisson (variance = mean = a, the step constant: M/M/c with unit
    mean service, lam = a) waits for a slot with Erlang C's probability and, once waiting, for
    1 / (c - a) on average (Kleinrock vol. 1, eq. 3.40 and 3.43). The law is read as a shifted
    gamma with Poisson's first three moments, so P_w is Erlang C to within 1 %."""
    from sizer.queueing import _slot_wait

    p, w = _slot_wait(np.array([a]), np.array([a]), np.array([float(c)]), np.array([a]), np.array([a]), np.array([0.0]), np.array([0.01]))
    assert p[0] == pytest.approx(_erlang_c(c, a), rel=0.01)
    assert w[0] == pytest.approx(1 / (c - a), rel=1e-9)


def test_slot_wait_unstable_at_the_cap():
    """A batch whose mean reaches the cap never drains: the wait is infinite."""
    from sizer.queueing import _slot_wait

    p, w = _slot_wait(np.array([60.0]), np.array([90.0]), np.array([60.0]), np.array([3.0]), np.array([60.0]), np.array([0.0]), np.array([0.01]))
    assert math.isinf(w[0]) and p[0] == 1.0


def test_batch_tail_of_a_poisson_batch():
    """With variance = mean the batch's law has Poisson's skewness: its p99 is Poisson's. Poisson(52)'s
    p99, summed term by term here: 69 (P(N <= 68) = 0.9862, P(N <= 69) = 0.9901)."""
    from sizer.queueing import _gamma_quantile

    pmf = [math.exp(-52.0)]
    for k in range(1, 120):
        pmf.append(pmf[-1] * 52.0 / k)
    cdf = np.cumsum(pmf)
    p99 = int(np.searchsorted(cdf, 0.99))
    assert p99 == 69
    assert _gamma_quantile(np.array([52.0]), np.array([52.0]), 2.3263)[0] == pytest.approx(p99, abs=1.0)


def test_batch_variance_of_a_symmetric_queue():
    """Without prefill stalls, the batch is a symmetric queue in token-steps: pi(n) proportional
    to prod_{k <= n} lam E[O] t(k) / k (Kelly 1979, ch. 3), here t(k) = 20 ms + 0.2 ms x k,
    lam E[O] = 5 x 200 = 1,000 steps' worth a second. Its variance, summed from the product form
    here, against _running_batch_law's n / (1 - e), e = n t'(n) / t(n) at the mean n."""
    from sizer.queueing import _running_batch_law

    lam, mean_o = 5.0, 200.0
    k = np.arange(1, 2000, dtype=float)
    t = 0.020 + 0.0002 * k
    log_pi = np.concatenate([[0.0], np.cumsum(np.log(lam * mean_o * t / k))])
    pi = np.exp(log_pi - log_pi.max())
    pi /= pi.sum()
    n_all = np.arange(pi.size)
    mean = float((pi * n_all).sum())
    var = float((pi * (n_all - mean) ** 2).sum())
    # Little's law at the mean: n = lam E[O] t(n) -> n = 20 / (1 - 0.2) = 25
    n = lam * mean_o * 0.020 / (1 - lam * mean_o * 0.0002)
    assert mean == pytest.approx(n, rel=0.02)
    d = Demand(prompt=LengthDist(percentiles=((50.0, 100.0),)), output=LengthDist(percentiles=((50.0, 200.0),)), ttft_s=(), tpot_s=())
    one = np.ones(1)
    m, v = _running_batch_law(one * n, one * (0.020 + 0.0002 * n), one * 0.0002, one * lam, np.zeros((1, 1)), np.ones(1), one * 0.0, one * 0.02, one * 0.0, d, one > 0)
    assert m[0] == pytest.approx(n)
    assert v[0] == pytest.approx(var, rel=0.03)


def test_pair_min_mean_by_hand():
    """E[min(O - 1, O' - 1)] of a fixed 200-token output is 199; of two equally likely lengths
    {100, 300} (approximated by a log-normal with no spread at each): min is 99 unless both are
    300, 1/4 of the time: here the fixed case."""
    from sizer.queueing import _pair_min_mean

    assert _pair_min_mean(LengthDist(percentiles=((50.0, 200.0),))) == pytest.approx(199.0)


def test_refused_prompts_weigh_nothing():
    """Prompts the engine refuses (prompt + output > max_model_len) get no weight: with outputs of
    exactly 100 tokens and max_model_len 2,100, every prompt cell above 2,000 tokens is dropped and
    the rest renormalised."""
    from sizer.queueing import _admitted_prompt_points

    prompt = LengthDist(percentiles=((50.0, 1000.0), (99.0, 4000.0)))
    output = LengthDist(percentiles=((50.0, 100.0),))
    points, w = _admitted_prompt_points(prompt, output, 2100.0)
    assert w[points > 2000].sum() == 0.0 and w.sum() == pytest.approx(1.0)
    _, w_all = _admitted_prompt_points(prompt, output, 0.0)
    kept = points <= 2000
    assert w[kept] == pytest.approx(w_all[kept] / w_all[kept].sum())


def test_slot_wait_enters_ttft(chat_step):
    """The same replica with a cap the batch reaches (its p99 above it) and with one it never
    reaches: the capped TTFT p99 is longer, the uncapped one carries no slot wait."""
    d = _demand()
    lam = np.array([3.0])
    free = evaluate_load(chat_step, lam, d, LIMITS)
    capped_limits = Limits(max_concurrency=np.array([400.0]), max_num_seqs=np.array([float(round(free.running_mean[0] + 4))]), max_num_batched_tokens=np.array([8192.0]))
    capped = evaluate_load(chat_step, lam, d, capped_limits)
    assert free.slot_wait_probability[0] < 1e-6
    assert capped.slot_wait_probability[0] > 0.05
    assert capped.ttft_s["p99"][0] > free.ttft_s["p99"][0] + capped.slot_wait_mean_s[0] * 0.5
    assert capped.tpot_s["p99"][0] == free.tpot_s["p99"][0]


def _hold(n=1, **kw):
    from sizer.queueing import ContextHold

    base = {k: np.zeros(n) for k in ("wait_iters", "wait_tokens", "adp_iters", "adp_extra_iters", "recv_interval")}
    base["adp_ranks"] = np.ones(n)
    base.update({k: np.asarray(v, dtype=float) for k, v in kw.items()})
    return ContextHold(**base)


def test_trtllm_batch_waiting_hold_by_hand():
    """TRT-LLM batch waiting (tensorrt_llm/_torch/pyexecutor/py_executor.py PyExecutor._waiting_requests):
    context requests wait while generation runs, until batch_wait_timeout_iters steps pass or the
    step's tokens reach batch_wait_max_tokens_ratio x max_num_tokens. Worked by hand, Poisson
    arrivals at a per step into a window opened by the first:
    - no other arrival (a -> 0): the prompt waits the whole timeout, K = 20 steps;
    - threshold out of reach, a = 0.125, K = 20: (K + a K^2 / 2) / (1 + a K) = 45 / 3.5 = 12.857;
    - the next arrival reaches it (wait_tokens - decoding = 2 prompts), a = 0.1, K = 20: the window
      lasts E[L] = (1 - e^-2) / 0.1 = 8.647 steps, 1 + 0.1 E[L] prompts share it: 8.647 / 1.8647 = 4.637."""
    from sizer.queueing import hold_steps

    h = _hold(3, wait_iters=[20, 20, 20], wait_tokens=[1e5, 1e5, 2048 + 8])
    a = np.array([1e-9, 0.125, 0.1])
    got = hold_steps(h, a, decoding=np.array([4.0, 8.0, 8.0]), clients=np.array([4.0, 8.0, 8.0]), isl=np.array([1024.0] * 3))
    assert got == pytest.approx([20.0, 45 / 3.5, (1 - math.exp(-2)) / 0.1 / (1 + (1 - math.exp(-2)))], rel=2e-3)
    # a single prompt that alone reaches the threshold is not held
    one = hold_steps(_hold(wait_iters=[20], wait_tokens=[1000]), np.array([0.1]), np.array([8.0]), np.array([8.0]), np.array([1024.0]))
    assert one[0] == 0.0


def test_trtllm_attention_dp_balance_hold_by_hand():
    """TRT-LLM attention-DP balancing (PyExecutor._balance_adp_requests, attention_dp_config
    enable_balance): contexts wait until every rank has one, or timeout_iters steps. Two ranks,
    a = 0.1 arrivals per step, 0.05 to each, timeout 60, no batching wait: the other rank stays
    empty for s steps with probability e^(-0.05 s), so E[L] = (1 - e^-3) / 0.05 = 19.004 and the
    arrivals on the first's own rank while it waits add integral of 0.05 s e^(-0.05 s) over [0, 60)
    = 20 (1 - 4 e^-3) = 16.017 prompt-steps; per prompt (19.004 + 16.017) / (1 + 0.1 x 19.004)
    = 12.074 steps. A loop whose ranks can run out of generation requests (clients < 2 ranks) is
    not held (the balancer schedules at once)."""
    from sizer.queueing import hold_steps

    h = _hold(2, adp_iters=[60, 60], adp_ranks=[2, 2])
    got = hold_steps(h, np.array([0.1, 0.1]), np.array([16.0, 2.0]), np.array([16.0, 3.0]), np.array([1024.0, 1024.0]))
    e_l = (1 - math.exp(-3)) / 0.05
    area = 20 * (1 - 4 * math.exp(-3))
    assert got[0] == pytest.approx((e_l + area) / (1 + 0.1 * e_l), rel=2e-3)
    assert got[1] == 0.0


def test_sglang_recv_interval_hold_by_hand():
    """SGLang --scheduler-recv-interval 30 (python/sglang/srt/managers/scheduler_recv_skipper.py):
    in decode-only stretches new requests are taken every 30 steps, so a prompt arriving at a
    random step waits (30 - 1) / 2 = 14.5 steps beyond the step boundary; interval 1 is no hold."""
    from sizer.queueing import hold_steps

    got = hold_steps(_hold(2, recv_interval=[30, 1]), np.array([0.2, 0.2]), np.array([8.0, 8.0]), np.array([8.0, 8.0]), np.array([512.0, 512.0]))
    assert got == pytest.approx([14.5, 0.0])


def test_closed_loop_adds_the_hold_to_steady_state_prompts(chat_step):
    """The hold is paid at the step time by the steady-state prompts only (the first wave finds
    no generation running): with a recv interval of 21 steps (10 steps' hold), TTFT grows by
    (1 - burst_fraction) x 10 x TPOT, to within the small shift of the loop's fixed point."""
    c = np.array([8.0])
    args = (c, np.array([1024.0]), np.array([256.0]), np.array([1e4]), np.array([8192.0]))
    base = closed_loop(chat_step, *args)
    held = closed_loop(chat_step, *args, hold=_hold(recv_interval=[21]))
    share = float(chat_step.burst_fraction[0])
    assert held.ttft_s[0] - base.ttft_s[0] == pytest.approx((1 - share) * 10 * held.tpot_s[0], rel=0.03)


def test_wave_share_by_requests_per_client():
    """burst_fraction is the share at ten requests a client: 0.25 at ten (and by default), 0.05 at
    fifty, and every request (1, not 2.5) at one."""
    from sizer.queueing import wave_share

    assert wave_share(np.array([0.25, 0.25, 0.25, 0.25]), np.array([10.0, 50.0, 1.0, 20.0])) == pytest.approx([0.25, 0.05, 1.0, 0.125])
    assert wave_share(np.array([0.25])) == pytest.approx([0.25])


def test_closed_loop_wave_share_follows_the_requests_each_client_sends(chat_step):
    """The bunched waves are the run's first few: at W requests per client their share is
    burst_fraction x 10 / W (InferenceX's MI355X DeepSeek-R1 runs sent 50 per client, the other
    scripts 10). TTFT's wave part, over the run without waves, shrinks fivefold from 10 to 50 (to
    within the small shift of the loop's fixed point); ten is the default; at one request per
    client every request is in the first wave: share 1, whatever burst_fraction, and the mean
    TTFT is the wave's: its N prompts of 2,048 tokens take k = 32 x 2,048 / 8,192 = 8 full steps
    of the 8,192-token budget, a prompt's first token comes at the end of the step that holds it,
    (8 + 1) / 2 = 4.5 steps on average (batch_wave's rule; the (N + 1) / 2 = 16.5 prompts' prefill
    of prompts served one by one would be 4.125 steps), plus the first step."""
    n, isl, osl = 32.0, 2048.0, 256.0
    args = (np.array([n]), np.array([isl]), np.array([osl]), np.array([1e4]), np.array([8192.0]))
    none = closed_loop(chat_step, *args, burst=False)
    default = closed_loop(chat_step, *args)
    ten = closed_loop(chat_step, *args, requests_per_client=np.array([10.0]))
    fifty = closed_loop(chat_step, *args, requests_per_client=np.array([50.0]))
    assert ten.ttft_s[0] == default.ttft_s[0]
    assert ten.ttft_s[0] - none.ttft_s[0] > 0.1  # a wave part worth measuring
    assert fifty.ttft_s[0] - none.ttft_s[0] == pytest.approx((ten.ttft_s[0] - none.ttft_s[0]) / 5, rel=0.03)
    one = closed_loop(chat_step, *args, requests_per_client=np.array([1.0]))
    full = np.minimum(8192.0, isl * n)
    ones = np.ones(1)
    full_step = chat_step.mixed_parts(ones, np.array([isl]), np.array([full]), np.array([isl]))
    per_prompt = full_step * isl / full
    t_w, t_g, rest = chat_step.step_parts(ones, np.array([isl]))
    wave = 4.5 * full_step + np.maximum(t_w, t_g) + rest + chat_step.request_overhead_s
    wave = wave + chat_step.overlap_scheduler * per_prompt  # an overlap scheduler's first token waits a step
    assert one.ttft_s[0] == pytest.approx(float(wave[0]), rel=1e-9)
    # a budget of 65,536 tokens holds the whole wave: one step, every first token at its end
    whole = closed_loop(chat_step, np.array([n]), np.array([isl]), np.array([osl]), np.array([1e4]), np.array([65536.0]), requests_per_client=np.array([1.0]))
    one_step = chat_step.mixed_parts(ones, np.array([isl]), np.array([65536.0]), np.array([isl]))
    wave = one_step + np.maximum(t_w, t_g) + rest + chat_step.request_overhead_s + chat_step.overlap_scheduler * one_step / n
    assert whole.ttft_s[0] == pytest.approx(float(wave[0]), rel=1e-9)


def test_offline_stops_where_the_step_budget_is_full_of_prompts(catalog):
    """When the engine counts a decode's token in the step budget (TRT-LLM max_num_tokens, vLLM
    max_num_batched_tokens), D decoding sequences leave b - D prompt tokens a step, and completing
    D / (E[O] - 1) prompts a step needs D E[I] / (E[O] - 1) of them: D stops at
    b / (1 + E[I] / (E[O] - 1)), worked by hand for MLPerf llama3.1-8b Offline on an H200 NVL
    (gbeezybez/inference_results_v6.0@232fbf90: closed/Dell/configs/XE7740_H200_NVL_141GBx8/Offline/
    llama3_1-8b.py, max_num_tokens 1536, gpu_batch_size 2048; E[I] 872, E[O] 128):
    1536 / (1 + 872 / 127) = 195.3 sequences, where the KV pool alone would hold 2,048.
    Throughput is then the prompt server's: (b - D) / (E[I] t) requests/s."""
    step = build_step_model([(catalog.model("llama-3.1-8b"), catalog.gpu("H200-NVL"), 1, 1, "fp8", "fp8")], engine="trtllm")
    isl, osl, cap, b = np.array([872.0]), np.array([128.0]), np.array([2048.0]), np.array([1536.0])
    counted = offline(step, isl, osl, cap, b, decode_tokens=1.0)
    free = offline(step, isl, osl, cap, b, decode_tokens=0.0)
    d_star = 1536.0 / (1.0 + 872.0 / 127.0)
    assert d_star == pytest.approx(195.3, abs=0.1)
    assert counted.decoding[0] == pytest.approx(d_star, rel=0.01)
    prompts_per_s = (1536.0 - counted.decoding[0]) / (872.0 * counted.tpot_s[0])
    assert counted.rate_rps[0] == pytest.approx(prompts_per_s, rel=0.01)
    # counting prompt tokens only (SGLang's chunked_prefill_size), the budget still caps them:
    # D stops at b (E[O] - 1) / E[I] = 1536 x 127 / 872 = 223.7, not at the 2,048 the pool holds
    assert free.decoding[0] == pytest.approx(1536.0 * 127.0 / 872.0, rel=0.01)
    # the clients the budget keeps out of decode wait for their prompt's turn (Little's law)
    assert counted.rate_rps[0] * (counted.ttft_s[0] + 127 * counted.tpot_s[0]) == pytest.approx(2048, rel=1e-3)


def test_open_loop_beyond_the_budgets_prompt_rate_is_saturated(catalog):
    """Poisson arrivals faster than the budget can prefill (rate E[I] > (b - D) / t at every D)
    have no steady state: inf, where counting no decode tokens in the budget serves them."""
    from sizer.queueing import open_loop

    step = build_step_model([(catalog.model("llama-3.1-8b"), catalog.gpu("H200-NVL"), 1, 1, "fp8", "fp8")], engine="trtllm")
    isl, osl, cap, b = np.array([872.0]), np.array([128.0]), np.array([2048.0]), np.array([1536.0])
    limit = offline(step, isl, osl, cap, b, decode_tokens=1.0).rate_rps[0]
    over = open_loop(step, np.array([1.05 * limit]), isl, osl, b, decode_tokens=1.0)
    under = open_loop(step, np.array([0.95 * limit]), isl, osl, b, decode_tokens=1.0)
    assert math.isinf(over.tpot_s[0]) and math.isinf(over.ttft_s[0])
    assert math.isfinite(under.tpot_s[0]) and math.isfinite(under.ttft_s[0])
    # near its limit the prompts queue: TTFT above the same replica's at half the load
    half = open_loop(step, np.array([0.5 * limit]), isl, osl, b, decode_tokens=1.0)
    assert under.ttft_s[0] > 1.2 * half.ttft_s[0]
    # the prompt-only budget (1,536 prompt tokens a step, not 1,536 - D) still serves 1.05 x
    assert math.isfinite(open_loop(step, np.array([1.05 * limit]), isl, osl, b, decode_tokens=0.0).tpot_s[0])


def test_the_engines_budget_rule_is_one_for_validate_solve_and_simulate(catalog):
    """engines.budget_counts_decode is carried by the step model (budget_decode_tokens): 1 for vLLM
    and TensorRT-LLM, 0 for SGLang, whose chunked_prefill_size counts prompt tokens only. The
    loops read it by default (the same figures as the explicit rule), and so does the solver's
    evaluate_load: where the decoding batch takes much of the budget, SGLang's step has the whole
    1,536 tokens for prompts and its TTFT is the shorter; the two models differ in nothing else."""
    from dataclasses import replace

    from sizer.engines import budget_counts_decode
    from sizer.queueing import open_loop

    assert (budget_counts_decode("vllm"), budget_counts_decode("trtllm"), budget_counts_decode("sglang"), budget_counts_decode("other")) == (1.0, 1.0, 0.0, 1.0)
    row = [(catalog.model("llama-3.1-8b"), catalog.gpu("H200-NVL"), 1, 1, "fp8", "fp8")]
    counted = build_step_model(row, engine="vllm")
    assert counted.budget_decode_tokens[0] == 1.0 and build_step_model(row, engine="sglang").budget_decode_tokens[0] == 0.0
    free = replace(counted, budget_decode_tokens=np.zeros(1))
    isl, osl, cap, b = np.array([872.0]), np.array([128.0]), np.array([2048.0]), np.array([1536.0])
    for step, rule in ((counted, 1.0), (free, 0.0)):
        assert offline(step, isl, osl, cap, b).rate_rps[0] == offline(step, isl, osl, cap, b, decode_tokens=rule).rate_rps[0]
        assert open_loop(step, np.array([5.0]), isl, osl, b).ttft_s[0] == open_loop(step, np.array([5.0]), isl, osl, b, decode_tokens=rule).ttft_s[0]
    d = _demand(ttft=(("p99", 10.0),))
    limits = Limits(max_concurrency=np.array([2048.0]), max_num_seqs=np.array([2048.0]), max_num_batched_tokens=np.array([1536.0]))
    # near the replica's capacity (1.5k-token prompts on average) the running batch takes a large
    # share of the 1,536 tokens a step: just below the largest rate (on a grid of 0.25 req/s) at
    # which the counted rule still has a steady state, its p99 TTFT is well above the prompt-only
    # budget's (1.72 against 1.34 s at 15 req/s under the fit of 2026-12-05; 1.28 against 1.12 s
    # at 16 under the one before: the place moves with the fitted speed, so the test finds it)
    def p99(step, rate):
        return float(evaluate_load(step, np.array([rate]), d, limits).ttft_s["p99"][0])

    rate = 4.0
    while rate < 40.0 and math.isfinite(p99(counted, rate + 0.25)):
        rate += 0.25
        assert math.isfinite(p99(free, rate))  # the prompt-only budget serves every load the counted one does
    assert rate < 40.0  # the replica saturates within the grid
    assert p99(free, rate) < 0.95 * p99(counted, rate), (rate, p99(free, rate), p99(counted, rate))


def test_an_overlap_scheduler_returns_the_first_token_one_step_late(catalog):
    """perf.overlap_scheduler: TensorRT-LLM's PyTorch executor and SGLang launch step n+1 before
    they process step n's tokens ("introduces one extra decoding step", TensorRT-LLM's
    docs/source/torch/features/overlap_scheduler.md), vLLM does not. Under Poisson arrivals the
    step after a prompt's is a mean step, so the mean TTFT grows by exactly the mean TPOT and
    nothing else moves; the solver's evaluate_load adds the same step. In a closed loop of fixed
    lengths the clients come back one behind another and the next step carries the next client's
    prompt: more than a mean step, about a step with one whole prompt in it; with one client there
    is no next prompt and the extra is a decode step."""
    from dataclasses import replace

    from sizer.perf import overlap_scheduler
    from sizer.queueing import open_loop

    assert (overlap_scheduler("trtllm", "1.2.0rc6"), overlap_scheduler("sglang", "0.5.9"), overlap_scheduler("vllm", "0.19.0")) == (1.0, 1.0, 0.0)
    assert overlap_scheduler("trtllm", "mlperf-v4.1") == 0.0  # NVIDIA's MLPerf harness: the C++ executor
    row = [(catalog.model("llama-3.1-8b"), catalog.gpu("H100-SXM"), 1, 1, "fp8", "fp8")]
    plain = build_step_model(row, engine="trtllm", engine_version="1.2.0")
    assert plain.overlap_scheduler[0] == 1.0 and build_step_model(row, engine="vllm").overlap_scheduler[0] == 0.0
    plain = replace(plain, overlap_scheduler=np.zeros(1))
    late = replace(plain, overlap_scheduler=np.ones(1))
    isl, osl, b = np.array([2048.0]), np.array([256.0]), np.array([8192.0])
    p, q = open_loop(plain, np.array([6.0]), isl, osl, b), open_loop(late, np.array([6.0]), isl, osl, b)
    assert q.ttft_s[0] - p.ttft_s[0] == pytest.approx(q.tpot_s[0], rel=1e-9)
    assert (q.tpot_s[0], q.decoding[0]) == (p.tpot_s[0], p.decoding[0])
    d = _demand(ttft=(("p99", 10.0),))
    limits = Limits(max_concurrency=np.array([2048.0]), max_num_seqs=np.array([2048.0]), max_num_batched_tokens=b)
    e0, e1 = evaluate_load(plain, np.array([6.0]), d, limits), evaluate_load(late, np.array([6.0]), d, limits)
    mean_step = e0.decoding_mean[0] / (6.0 * (d.output.mean - 1))  # Little's law on the decode phase
    assert e1.ttft_s["p99"][0] - e0.ttft_s["p99"][0] == pytest.approx(mean_step, rel=0.01)
    assert e1.decoding_mean[0] == e0.decoding_mean[0]
    cap = np.array([4096.0])
    for n in (1.0, 16.0):
        c0 = closed_loop(plain, np.array([n]), isl, osl, cap, b, burst=False)
        c1 = closed_loop(late, np.array([n]), isl, osl, cap, b, burst=False)
        extra = c1.ttft_s[0] - c0.ttft_s[0]
        prompt_step = plain.mixed_parts(c1.decoding, isl + osl / 2, isl, isl)[0]
        if n == 1.0:
            assert extra == pytest.approx(c1.tpot_s[0], rel=0.05) and extra < 0.5 * prompt_step
        else:
            assert extra == pytest.approx(prompt_step, rel=0.1) and extra > 2 * c1.tpot_s[0]


class _PerToken:
    """A step model stand-in for prompt_groups, which reads only the replica seconds per prompt
    token (perf.StepModel.prefill_per_token_s)."""

    def __init__(self, seconds_per_token: float):
        self.c = seconds_per_token

    def prefill_per_token_s(self, mean_prompt_tokens):
        return np.full(np.shape(mean_prompt_tokens), self.c)


def test_prompt_groups_harness_window_worked_by_hand():
    """AMD's MLPerf v4.1 harness (sync_sut.py batch_samples_loop, --batcher-threshold 0.3 s): eight
    replicas at 9 req/s each, 72 a second for the system, so a 0.3 s window gathers 21.6 requests
    and sends them to one replica. A request waits 0.15 s on average for its window to close
    (0.297 s at p99: uniform over the window). 200-token prompts at 0.1 ms a token, 20 ms each,
    fit one step of a 65,536-token budget: each waits for the other 20.6 prompts' prefill, 0.412 s.
    The group's size is Poisson(21.6): its p99 excess, z99 x sqrt(21.6) prompts, is 0.2162 s."""
    from sizer.queueing import RowLengths, prompt_groups

    L = RowLengths.fixed(np.array([200.0]), np.array([300.0]))
    g = prompt_groups(_PerToken(1e-4), np.array([9.0]), np.array([8.0]), L, np.array([65536.0]), np.array([0.3]), np.array([1.0]))
    assert g.size[0] == pytest.approx(21.6)
    assert g.fill_s[0] == pytest.approx(0.15)
    assert g.fill_p99_s[0] == pytest.approx(0.297)
    assert g.prefill_s[0] == pytest.approx(20.6 * 0.02)
    assert g.prefill_spread_s[0] == pytest.approx(2.3263479 * math.sqrt(21.6) * 0.02, rel=1e-6)
    assert g.mean_s[0] == pytest.approx(0.562)
    # p99: base mean 0.3 s and p99 0.7 s; excesses 0.4, 0.147, 0.2162 in quadrature
    spread = math.sqrt(0.4**2 + 0.147**2 + (2.3263479 * math.sqrt(21.6) * 0.02) ** 2)
    assert g.p99_s(np.array([0.3]), np.array([0.7]))[0] == pytest.approx(0.3 + 0.562 + spread, rel=1e-6)
    # a window that gathers 0.5 requests on average mostly sends each as it comes: half the wait
    g = prompt_groups(_PerToken(1e-4), np.array([0.5 / 2.4]), np.array([8.0]), L, np.array([65536.0]), np.array([0.3]), np.array([1.0]))
    assert g.size[0] == 1.0 and g.fill_s[0] == pytest.approx(0.075) and g.prefill_s[0] == 0.0


def test_prompt_groups_engine_count_worked_by_hand():
    """An engine that prefills once 13 prompts wait (AMD's MLPerf v5.0 vLLM scheduler,
    VLLM_LLAMA2_MLPERF_MIN_REQUIRE_PREFILL_QUERY 13), at 13 req/s: the j-th of a group waits for the
    13 - j after it, 12 / (2 x 13) = 0.4615 s on average. 13 prompts of 200 tokens in steps of 1,000
    tokens take k = 3 steps; batch_wave's rule puts a prompt's first token (3 + 1) / 2 = 2 steps in,
    2,000 tokens: the other prompts' share is 9 prompts' prefill. The fill's p99 is checked against
    the mixture by hand for a group of two (one waits Exp(rate), one not: P(wait > x) = e^-x / 2 at
    rate 1, 0.01 at x = ln 50) and against a simulation of groups of 13."""
    from sizer.queueing import RowLengths, prompt_groups

    L = RowLengths.fixed(np.array([200.0]), np.array([300.0]))
    g = prompt_groups(_PerToken(1e-4), np.array([13.0]), np.array([8.0]), L, np.array([1000.0]), np.array([0.0]), np.array([13.0]))
    assert g.size[0] == 13.0
    assert g.fill_s[0] == pytest.approx(12 / 26)
    assert g.prefill_s[0] == pytest.approx(9 * 0.02)
    assert g.prefill_spread_s[0] == 0.0  # a count rule's groups are all of 13
    two = prompt_groups(_PerToken(1e-4), np.array([1.0]), np.array([1.0]), L, np.array([65536.0]), np.array([0.0]), np.array([2.0]))
    assert two.fill_p99_s[0] == pytest.approx(math.log(50.0), rel=1e-9)
    assert two.prefill_s[0] == pytest.approx(0.02)  # one step: the other prompt's prefill
    rng = np.random.default_rng(7)
    gaps = rng.exponential(1 / 13.0, size=(200_000, 12))
    waits = np.concatenate([gaps[:, j:].sum(axis=1) for j in range(12)] + [np.zeros(200_000)])
    assert g.fill_p99_s[0] == pytest.approx(np.quantile(waits, 0.99), rel=0.01)
    # no rule: nothing added
    none = prompt_groups(_PerToken(1e-4), np.array([13.0]), np.array([8.0]), L, np.array([1000.0]), np.array([0.0]), np.array([1.0]))
    assert none.mean_s[0] == 0.0 and none.fill_p99_s[0] == 0.0 and none.size[0] == 1.0
