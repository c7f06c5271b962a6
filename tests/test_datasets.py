"""Named benchmark datasets (sizer/datasets.py, catalogs/datasets.yaml) and the measurement rows
that use them: MLPerf rows read with their dataset's length distribution and their system's
replicas, and the benchmark loops under a distribution of lengths."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from sizer.datasets import dataset, load_datasets, make_empirical
from sizer.errors import UnknownNameError
from sizer.measurements import Resolved, read_csv, resolve
from sizer.queueing import RowLengths, _steady, batch_wave, closed_loop, open_loop
from sizer.validate import build_setup, predict
from sizer.workload import load_workload

MLPERF = ("mlperf-llama2-70b", "mlperf-mixtral-8x7b", "mlperf-llama3.1-8b", "mlperf-llama3.1-405b")


def test_the_four_mlperf_datasets_are_shipped_with_their_published_means():
    """Means of every sample (openshift-psap/performance-dashboard mlperf-data/summaries/*.csv,
    the MLCommons dataset files' token lengths): llama2-70b prompts 222.3 tokens, mixtral-8x7b
    427.4 and outputs 144.8 (its README's tokens_per_sample 144.84), llama3.1-405b prompts 9,428.6
    and outputs 684.7 (README 684.68); llama2-70b's outputs scaled to the 294.45 tokens/sample its
    README gives, capped at max_new_tokens 1024 (mean 293.1). The table read as a quantile
    function keeps each mean within 1 %."""
    known = load_datasets()
    assert set(MLPERF) <= set(known)
    means = {
        "mlperf-llama2-70b": (222.3, 293.1),
        "mlperf-mixtral-8x7b": (427.4, 144.8),
        "mlperf-llama3.1-405b": (9428.6, 684.7),
    }
    for name, (prompt, output) in means.items():
        d = known[name]
        assert d.prompt.mean == pytest.approx(prompt, rel=0.01)
        assert d.output.mean == pytest.approx(output, rel=0.01)
    # percentiles as counted from the per-sample file: llama2-70b prompts p50 152, p99 791, max 1021
    llama2 = known["mlperf-llama2-70b"]
    assert llama2.prompt.quantile(50) == 152 and llama2.prompt.quantile(99) == 791 and llama2.prompt.quantile(100) == 1021
    # llama3.1-8b generates to its max_tokens 128 (reference run: 611 characters a summary)
    assert known["mlperf-llama3.1-8b"].output.quantile(100) == 128


def test_a_quantile_table_interpolates_and_rescales_under_its_cap():
    d = make_empirical(((0, 10.0), (50, 20.0), (100, 40.0)))
    assert d.quantile(25) == pytest.approx(15.0)
    assert d.quantile(75) == pytest.approx(30.0)
    # the mean of a piecewise-linear quantile function: (15 + 30) / 2 = 22.5
    assert d.mean == pytest.approx(22.5, rel=1e-3)
    up = d.scaled_to_mean(30.0)
    assert up.mean == pytest.approx(30.0, rel=1e-4)
    assert up.quantile(100) == pytest.approx(40.0)  # the cap (a generation limit) holds
    assert d.scaled_to_mean(1000.0).mean == pytest.approx(40.0, rel=1e-3)  # everything at the cap


def test_unknown_dataset_names_the_known_ones():
    with pytest.raises(UnknownNameError, match="did you mean 'mlperf-llama2-70b'"):
        dataset("mlperf-llama2-70")


def test_workload_traffic_dataset(tmp_path, catalog):
    w = tmp_path / "w.yaml"
    w.write_text("model: llama-2-70b\ntraffic:\n  requests_per_s: 3\n  dataset: mlperf-llama2-70b\nslo: {ttft_s: 2, tpot_s: 0.2}\n")
    work = load_workload(w, catalog)
    assert work.traffic.prompt_tokens.mean == pytest.approx(222.3, rel=0.01)
    assert work.traffic.output_tokens.quantile(100) == 1024
    # a length given next to the dataset replaces the dataset's
    w.write_text("model: llama-2-70b\ntraffic:\n  requests_per_s: 3\n  dataset: mlperf-llama2-70b\n  output_tokens: 100\n")
    assert load_workload(w, catalog).traffic.output_tokens.mean == pytest.approx(100)
    # both lengths given: the dataset would give nothing, and what the user wrote would be dropped
    # without a word (it was: planned on 100/100, the dataset ignored)
    w.write_text("model: llama-2-70b\ntraffic:\n  requests_per_s: 3\n  dataset: mlperf-llama2-70b\n  prompt_tokens: 100\n  output_tokens: 100\n")
    run = subprocess.run([sys.executable, "-m", "sizer", "solve", str(w)], capture_output=True, text=True)
    assert run.returncode == 7 and run.stderr.strip() == (
        f"error: {w}: traffic.dataset: mlperf-llama2-70b's prompt and output lengths are both replaced "
        "(traffic.prompt_tokens and traffic.output_tokens), so it gives nothing; drop it, or one of them"
    )
    w.write_text("model: llama-2-70b\ntraffic:\n  requests_per_s: 3\n  dataset: openorca\n")
    run = subprocess.run([sys.executable, "-m", "sizer", "solve", str(w)], capture_output=True, text=True)
    assert run.returncode == 8 and "traffic.dataset" in run.stderr and "unknown dataset 'openorca'" in run.stderr
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1


def _mlperf_csv(tmp_path, extra: str = "") -> list:
    path = tmp_path / "mine.csv"
    path.write_text(
        "id,model_path,system,backend,precision,kind,dataset,isl,osl,tp_size,replicas,request_rate_rps,output_tokens_per_s,samples_per_s,silicon_ttft_ms,silicon_tpot_ms\n"
        # MLPerf v4.1 AMD 8xMI300X Server: scheduled 73.66 samples/s, 21,028.23 tokens/s, 71.74 completed samples/s, 8 x TP1
        "srv,meta-llama/Llama-2-70b-chat-hf,mi300x,vllm,fp8,rate,mlperf-llama2-70b,,,1,8,73.66,21028.23,71.74,1006.33,143.10\n" + extra
    )
    return read_csv(path)


def test_a_system_of_replicas_is_read_per_replica_with_its_dataset(tmp_path, catalog):
    """The system's rate, throughput and samples/s are divided among its 8 replicas; isl/osl may
    be empty with a dataset; the output lengths are rescaled to the tokens this run generated per
    request (21,028.23 / 71.74 = 293.1)."""
    (row,) = _mlperf_csv(tmp_path)
    assert row.invalid is None and row.replicas == 8
    assert row.request_rate_rps == pytest.approx(73.66 / 8)
    assert row.output_tokens_per_s == pytest.approx(21028.23 / 8)
    assert row.measured_output_tokens_per_request == pytest.approx(21028.23 / 71.74)
    res = resolve(row, catalog)
    assert isinstance(res, Resolved) and res.layout.tp == 1
    assert res.output.mean == pytest.approx(21028.23 / 71.74, rel=1e-3)
    assert res.prompt.mean == pytest.approx(222.3, rel=0.01)
    pred = predict(build_setup([res]))
    # an unsaturated Poisson system completes what arrives: throughput = rate x E[O]
    assert pred.output_tokens_per_s[0] == pytest.approx(73.66 / 8 * res.output.mean, rel=1e-6)


def test_missing_lengths_without_a_dataset_are_a_skip_reason(tmp_path):
    rows = _mlperf_csv(tmp_path, "nolen,meta-llama/Llama-2-70b-chat-hf,mi300x,vllm,fp8,offline,,,,1,8,,23514.8,80.15,,\n")
    assert rows[1].invalid and "or a dataset" in rows[1].invalid


@pytest.fixture(scope="module")
def step(catalog):
    from sizer.perf import build_step_model

    return build_step_model([(catalog.model("llama-3.1-70b"), catalog.gpu("H100-SXM"), 2, 1, "fp8", "fp8")])


def test_a_degenerate_distribution_gives_the_fixed_length_loops(step):
    """RowLengths of a distribution whose every point is the same length is the fixed-length case."""
    one = make_empirical(((0, 1000.0), (100, 1000.0)))
    out = make_empirical(((0, 300.0), (100, 300.0)))
    dist = RowLengths.of([one], [out], [0.0], [0.0])
    fixed = RowLengths.fixed(np.array([1000.0]), np.array([300.0]))
    for name in ("isl", "osl", "isl_sq", "isl_attn", "ctx"):
        assert getattr(dist, name)[0] == pytest.approx(getattr(fixed, name)[0])
    a = open_loop(step, np.array([2.0]), np.array([1000.0]), np.array([300.0]), np.array([8192.0]), lengths=dist)
    b = open_loop(step, np.array([2.0]), np.array([1000.0]), np.array([300.0]), np.array([8192.0]))
    assert a.ttft_s[0] == pytest.approx(b.ttft_s[0], rel=1e-9) and a.tpot_s[0] == pytest.approx(b.tpot_s[0], rel=1e-9)


def test_spread_prompts_wait_longer_than_equal_ones_of_the_same_mean(step):
    """Pollaczek-Khinchine: at the same load, prompts of mixed lengths (E[I^2] > E[I]^2) queue longer.
    The load is half the largest rate the replica sustains with equal prompts (bisected here, so
    that a refit of the shipped factors cannot push it past saturation, where both are infinite)."""
    spread = make_empirical(((0, 100.0), (50, 600.0), (100, 3100.0)))
    fixed_len = np.array([spread.mean])
    budget = np.array([8192.0])
    lo, hi = 0.1, 100.0
    for _ in range(40):
        mid = (lo + hi) / 2
        finite = np.isfinite(open_loop(step, np.array([mid]), fixed_len, np.array([200.0]), budget).ttft_s[0])
        lo, hi = (mid, hi) if finite else (lo, mid)
    lam = np.array([lo / 2])
    a = open_loop(step, lam, fixed_len, np.array([200.0]), budget)
    b = open_loop(step, lam, fixed_len, np.array([200.0]), budget, lengths=RowLengths.of([spread], [None], fixed_len, [200.0]))
    assert np.isfinite(a.ttft_s[0]) and np.isfinite(b.ttft_s[0])
    assert b.ttft_s[0] > a.ttft_s[0]


def test_closed_loop_clients_do_not_queue_like_poisson_arrivals(step):
    """Kingman's G/G/1 wait: with Poisson arrivals (c_a^2 = 1) equal prompts wait
    rho / (2 (1 - rho)) x S; a closed loop's clients (c_a^2 = 0, equal prompts: c_s^2 = 0) wait for
    no prompt ahead, only the admission steps."""
    L = RowLengths.fixed(np.array([4096.0]), np.array([256.0]))
    d, budget = np.array([40.0]), np.array([8192.0])
    t, rate, pf, poisson = _steady(step, d, L, budget, arrival_scv=1.0)
    _, _, _, closed = _steady(step, d, L, budget, arrival_scv=0.0)
    rho = min(rate[0] * pf[0], 0.999)
    assert poisson[0] - closed[0] == pytest.approx(rho / (2 * (1 - rho)) * pf[0], rel=1e-9)


def test_batch_wave_by_hand(step):
    """One wave of 8 requests, 1,000-token prompts, 101 output tokens, budget 8,192: the 8,000
    prompt tokens take k = 1 step f (one full step of 8,000 prompt tokens); then 100 decode steps
    t(8) at context 1,000 + 50.5; TPOT = t (k - 1 = 0 later prefill steps); TTFT = f + request
    overhead; throughput = 8 x 101 / (f + 100 t): the prefill step emits each request's first
    token and the 100 decode steps the other 100 (not f + 100 t + f, as the model had it: one
    prefill step too many, which halved the throughput of TensorRT-LLM's 2,048 x 128 rows:
    Mixtral 8x7B on two A100s 332 tokens/s against 638 measured, 537 after the refit)."""
    out = batch_wave(step, np.array([8.0]), np.array([1000.0]), np.array([101.0]), np.array([1e4]), np.array([8192.0]))
    f = step.mixed_parts(np.array([1.0]), np.array([1000.0]), np.array([8000.0]), np.array([1000.0]))[0]
    tw, tg, rest = step.step_parts(np.array([8.0]), np.array([1000.0 + 50.5]))
    t = max(tw[0], tg[0]) + rest[0]
    assert out.tpot_s[0] == pytest.approx(t)
    assert out.ttft_s[0] == pytest.approx(f + step.request_overhead_s[0])
    assert out.output_tokens_per_s[0] == pytest.approx(8 * 101 / (f + 100 * t))
    # a wave larger than the pool runs in turns: half the earlier waves are waited for
    two = batch_wave(step, np.array([16.0]), np.array([1000.0]), np.array([101.0]), np.array([8.0]), np.array([8192.0]))
    assert two.ttft_s[0] == pytest.approx(out.ttft_s[0] + 0.5 * (f + 100 * t))


def test_a_later_prefill_stretches_the_tpot_of_the_wave(step):
    """With prompts that need several budget steps (64 x 8,000 tokens, budget 8,192: k = 63), the
    requests prefilled first decode in steps that also carry the rest. Worked by hand: K = k - 1
    = 62 prefill steps are left after the first request's first token, R ~ U[0, 62] for a
    request, all within its m = 200 output steps. Under vLLM (decoding sequences ride in every
    step) R of its output steps last f instead of t: TPOT = t + 31 (f - t) / 200. Under SGLang (a
    prefill batch runs alone while prompts wait) it decodes after them: t + 31 f / 200."""
    out = batch_wave(step, np.array([64.0]), np.array([8000.0]), np.array([201.0]), np.array([1e4]), np.array([8192.0]))
    tw, tg, rest = step.step_parts(np.array([64.0]), np.array([8000.0 + 100.5]))
    t = max(tw[0], tg[0]) + rest[0]
    f = step.mixed_parts(np.array([1.0]), np.array([8000.0]), np.array([8192.0]), np.array([8000.0]))[0]
    assert step.budget_decode_tokens[0] == 1.0  # vLLM's rule (engines.budget_counts_decode)
    assert out.tpot_s[0] == pytest.approx(t + 31 * (f - t) / 200)
    alone = replace(step, budget_decode_tokens=np.zeros(1))
    first = batch_wave(alone, np.array([64.0]), np.array([8000.0]), np.array([201.0]), np.array([1e4]), np.array([8192.0]))
    assert first.tpot_s[0] == pytest.approx(t + 31 * f / 200)


def test_a_request_that_ends_before_the_later_prefills_has_every_output_step_a_prefill_step(step):
    """dstack's vLLM 0.6.3 runs of 64 x 10,000-token prompts on 8 x MI300X (Llama-3.1-405B,
    launched without --max-model-len: 131,072, so chunked prefill with a budget of 512,
    engines.py) measured a mean TPOT of 589 ms while their TTFTs spread over 800 s: each request
    decodes its 112 steps beside the prompts still being prefilled, one chunk per step. Worked by
    hand on this step model: k = ceil(640,000 / 512) = 1,250 steps, a prompt spans
    own = 1,250 / 64 = 19.53 of them, K = 1,230.47 are left after the first request's first token,
    m = 112 output steps; R ~ U[0, K] exceeds m for most requests:
    E[min(R, m)] = m - m^2 / (2K) = 112 - 12,544 / 2,460.94 = 106.903, and
    TPOT = t + 106.903 (f - t) / 112, at most the prefill step f. Charging every later prefill step
    to the output (t + K/2 f / m, the prefill-first rule) would give ~5.5 f."""
    out = batch_wave(step, np.array([64.0]), np.array([10000.0]), np.array([113.0]), np.array([1e4]), np.array([512.0]))
    tw, tg, rest = step.step_parts(np.array([64.0]), np.array([10000.0 + 56.5]))
    t = max(tw[0], tg[0]) + rest[0]
    f = step.mixed_parts(np.array([1.0]), np.array([10000.0]), np.array([512.0]), np.array([10000.0]))[0]
    K = 1250 - 1250 / 64
    assert 112 - 112**2 / (2 * K) == pytest.approx(106.903, abs=1e-3)
    assert out.tpot_s[0] == pytest.approx(t + (112 - 112**2 / (2 * K)) * (f - t) / 112)
    assert t < out.tpot_s[0] <= f


def test_a_prompt_spanning_several_steps_waits_for_all_its_chunks(step):
    """A prompt longer than the budget is prefilled in several steps before its first token.
    Worked by hand: one request, 64,000-token prompt, budget 8,192: k = ceil(64,000 / 8,192) = 8
    chunks, all before its first token (TTFT = 8 f), and no later prompt shares its decode steps
    (TPOT = t(1)); dstack's 64k and 128k single-prompt vLLM runs on 8 x MI300X are rows of this
    shape. Two requests of 16,384 tokens, budget 8,192: k = 4; the first has its first token after
    step 2 and then decodes beside the second's 2 chunks, the second after step 4: mean TTFT
    (2 + 4) / 2 = 3 steps; K = 4 - 2 = 2 prefill steps are left after the first one's first token
    (R ~ U[0, 2]): mean TPOT t + 1 x (f - t) / 150, the decode riding in those steps (vLLM)."""
    one = batch_wave(step, np.array([1.0]), np.array([64000.0]), np.array([151.0]), np.array([1e4]), np.array([8192.0]))
    f = step.mixed_parts(np.array([1.0]), np.array([64000.0]), np.array([8192.0]), np.array([64000.0]))[0]
    tw, tg, rest = step.step_parts(np.array([1.0]), np.array([64000.0 + 75.5]))
    assert one.ttft_s[0] == pytest.approx(8 * f + step.request_overhead_s[0])
    assert one.tpot_s[0] == pytest.approx(max(tw[0], tg[0]) + rest[0])
    two = batch_wave(step, np.array([2.0]), np.array([16384.0]), np.array([151.0]), np.array([1e4]), np.array([8192.0]))
    f2 = step.mixed_parts(np.array([1.0]), np.array([16384.0]), np.array([8192.0]), np.array([16384.0]))[0]
    tw, tg, rest = step.step_parts(np.array([2.0]), np.array([16384.0 + 75.5]))
    assert two.ttft_s[0] == pytest.approx(3 * f2 + step.request_overhead_s[0])
    t2 = max(tw[0], tg[0]) + rest[0]
    assert two.tpot_s[0] == pytest.approx(t2 + 1 * (f2 - t2) / 150)


def test_closed_loop_takes_a_distribution(step):
    spread = make_empirical(((0, 100.0), (50, 600.0), (100, 3100.0)))
    L = RowLengths.of([spread], [None], [spread.mean], [300.0])
    out = closed_loop(step, np.array([32.0]), np.array([spread.mean]), np.array([300.0]), np.array([1e4]), np.array([8192.0]), lengths=L)
    assert np.isfinite(out.ttft_s).all() and out.output_tokens_per_s[0] > 0


def test_an_mlperf_run_is_fitted_and_predicted_as_its_harness_not_its_base_release(tmp_path, catalog):
    """An MLPerf submission runs its submitter's harness (AMD's tuned ROCm vLLM fork; NVIDIA's own
    TensorRT builds, labelled mlperf-v4.1 already), so a row on an `mlperf-*` dataset takes the
    release label "mlperf-<named>", which the efficiency table reads as "mlperf"
    (measurements.mlperf_release). Without it, AMD's MI300X Llama-2-70B Offline run (MLPerf v4.1:
    2,835-3,063 output tokens/s a GPU, TP1 x 8, whose harness is built on vLLM 0.4.3) named as vLLM
    0.10.1 took the offsets of AMD's TP 8 throughput tables of that release and was predicted at
    1,785 tokens/s a GPU (-40 %), and as 0.4.3 at 2,842: the label decided the answer. Under the
    factors fitted 2026-12-03 the row (FP8 KV, 2,048 clients a GPU) is predicted at about 2,320 under
    every label, 18 % below the lowest submission: within 20 %, where the wrong label was 37 % off."""
    from sizer.efficiency import version_label
    from sizer.measurements import mlperf_release

    head = "id,model_path,system,backend,backend_version,precision,kv_dtype,kind,dataset,isl,osl,concurrency,tp_size,replicas,output_tokens_per_s\n"
    body = "".join(
        f"off{v or 'none'},meta-llama/Llama-2-70b-chat-hf,mi300x,vllm,{v},fp8,fp8,offline,mlperf-llama2-70b,,,2048,1,8,23514.8\n"
        for v in ("0.4.3", "0.10.1", "")
    )
    body += "trt,meta-llama/Llama-2-70b-chat-hf,h100_sxm,trtllm,mlperf-v4.1,fp8,fp8,offline,mlperf-llama2-70b,,,,2,4,24000\n"
    body += "fixed,meta-llama/Llama-2-70b-chat-hf,mi300x,vllm,0.10.1,fp8,fp8,offline,,1024,1024,2048,1,8,23514.8\n"
    path = tmp_path / "mlperf.csv"
    path.write_text(head + body)
    rows = {r.row_id: r for r in read_csv(path)}
    assert mlperf_release(rows["off0.10.1"]) == "mlperf-0.10.1" and version_label("mlperf-0.10.1", "vllm") == "mlperf"
    assert mlperf_release(rows["offnone"]) == "mlperf"
    assert mlperf_release(rows["trt"]) == ""  # already labelled as the harness
    assert mlperf_release(rows["fixed"]) == ""  # not an MLPerf dataset: the release it names
    resolved = [resolve(rows[k], catalog) for k in ("off0.4.3", "off0.10.1", "offnone", "fixed")]
    assert resolved[0].row.engine_version == "mlperf-0.4.3" and resolved[3].row.engine_version == "0.10.1"
    pred = predict(build_setup(resolved[:3])).output_tokens_per_s
    assert pred[0] == pytest.approx(pred[1], rel=1e-9) and pred[0] == pytest.approx(pred[2], rel=1e-9)
    assert 0.8 * 2835 < pred[0] < 1.2 * 3063


def test_mlperf_latency_bounds_are_the_loadgen_configs():
    """The p99 bounds a valid Server / Interactive run holds, as MLCommons' LoadGen config sets
    them (mlcommons/inference@001712e9daf80386e0dda43f97b8f36981d792c4:loadgen/mlperf.conf, in ms):
    llama2-70b 2000 / 200 and -interactive 450 / 40; mixtral-8x7b 2000 / 200 (no interactive);
    llama3_1-405b 6000 / 175 and 4500 / 80; llama3_1-8b 2000 / 100 and 500 / 30; deepseek-r1
    2000 / 80 and 1500 / 15; `*.Server.target_latency_percentile = 99`."""
    known = load_datasets()
    expected = {
        "mlperf-llama2-70b": {"server": (2000, 200), "interactive": (450, 40)},
        "mlperf-mixtral-8x7b": {"server": (2000, 200), "interactive": None},
        "mlperf-llama3.1-405b": {"server": (6000, 175), "interactive": (4500, 80)},
        "mlperf-llama3.1-8b": {"server": (2000, 100), "interactive": (500, 30)},
        "mlperf-deepseek-r1": {"server": (2000, 80), "interactive": (1500, 15)},
    }
    for name, scenarios in expected.items():
        d = known[name]
        assert "loadgen/mlperf.conf" in d.bounds_source
        for scenario, bounds in scenarios.items():
            assert d.bounds_ms(scenario) == bounds, (name, scenario)


def test_a_rate_row_takes_its_scenarios_bounds(tmp_path, catalog):
    """kind interactive takes the Interactive bounds, server and a plain rate row on an MLPerf
    dataset the Server bounds; a rate row of fixed lengths (no benchmark bounds) takes none."""
    rows = _mlperf_csv(
        tmp_path,
        "int,meta-llama/Llama-2-70b-chat-hf,mi300x,vllm,fp8,interactive,mlperf-llama2-70b,,,1,8,40,,,300,30\n"
        "srv2,meta-llama/Llama-2-70b-chat-hf,mi300x,vllm,fp8,server,mlperf-llama2-70b,,,1,8,40,,,300,30\n"
        "plain,meta-llama/Llama-2-70b-chat-hf,mi300x,vllm,fp8,rate,,1024,256,1,1,2,,,300,30\n",
    )
    got = {r.row_id: (r.scenario, resolve(r, catalog).latency_bounds_s) for r in rows}
    assert got == {"srv": ("", (2.0, 0.2)), "int": ("interactive", (0.45, 0.04)), "srv2": ("server", (2.0, 0.2)), "plain": ("", None)}


def test_an_interactive_benchmark_filed_under_server_takes_the_interactive_bounds(tmp_path, catalog):
    """MLPerf v5.0 and v5.1 file llama2-70b-interactive-99 under the Server scenario (v6.0 under
    Interactive): a row whose source is such a result takes the Interactive bounds whatever its
    kind column says, unless that says interactive already; an -99 Server result the Server ones."""
    from dataclasses import replace

    (row,) = _mlperf_csv(tmp_path)
    base = "mlcommons/inference_results_v5.0@0:closed/X/results/SYS/{}/{}/performance/run_1/mlperf_log_summary.txt"
    cases = {
        ("llama2-70b-interactive-99", "Server", "server"): (0.45, 0.04),
        ("llama2-70b-99", "Interactive", ""): (0.45, 0.04),
        ("llama2-70b-99", "Server", "server"): (2.0, 0.2),
        ("llama2-70b-99.9", "Server", ""): (2.0, 0.2),
    }
    for (bench, scenario, kind), bounds in cases.items():
        r = replace(row, source=base.format(bench, scenario), scenario=kind)
        assert resolve(r, catalog).latency_bounds_s == bounds, (bench, scenario)


def test_a_bound_runs_throughput_is_the_models_largest_rate_within_its_bounds(tmp_path, catalog):
    """An MLPerf Server or Interactive run's rate is the largest its submitter found within the
    bounds, so its predicted throughput is the model's largest rate within the same bounds
    (queueing.max_rate, the planner's search) times the row's mean output, not its own rate times
    it (an open loop delivers whatever arrives). The model holds both p99 bounds at that rate and
    breaks one 5 % above it; the Interactive bounds (450 / 40 ms) allow less than the Server's."""
    from sizer.queueing import Demand, Limits, evaluate_load
    from sizer.validate import validate_rows, running_cap

    rows = _mlperf_csv(tmp_path, "int,meta-llama/Llama-2-70b-chat-hf,mi300x,vllm,fp8,interactive,mlperf-llama2-70b,,,1,8,73.66,21028.23,71.74,300,30\n")
    report = validate_rows(rows, catalog)
    srv, inter = (next(r for r in report.results if r.row.row_id == k) for k in ("srv", "int"))
    res = resolve(rows[0], catalog)
    assert srv.latency_bounds_ms == (2000.0, 200.0) and inter.latency_bounds_ms == (450.0, 40.0)
    assert srv.predicted_tokens_per_s == pytest.approx(srv.predicted_max_rate_rps * res.output.mean, rel=1e-9)
    assert srv.predicted_tokens_per_s != pytest.approx(73.66 / 8 * res.output.mean, rel=1e-3)
    assert 0 < inter.predicted_max_rate_rps < srv.predicted_max_rate_rps
    from sizer.validate import report_dict

    row = next(x for x in report_dict(report)["rows"] if x["id"] == "int")
    assert (row["ttft_bound_p99_ms"], row["tpot_bound_p99_ms"]) == (450.0, 40.0) and row["predicted_max_rate_rps"] == pytest.approx(inter.predicted_max_rate_rps, rel=1e-3)
    setup = build_setup([res])
    demand = Demand(prompt=res.prompt, output=res.output, ttft_s=(("p99", 2.0),), tpot_s=(("p99", 0.2),))
    seqs = setup.capacity[0]
    limits = Limits(max_concurrency=np.array([seqs]), max_num_seqs=np.array([min(seqs, running_cap(res))]), max_num_batched_tokens=setup.budget)
    at = evaluate_load(setup.step, np.array([srv.predicted_max_rate_rps]), demand, limits)
    assert at.ttft_s["p99"][0] <= 2.0 and at.tpot_s["p99"][0] <= 0.2
    above = evaluate_load(setup.step, np.array([1.05 * srv.predicted_max_rate_rps]), demand, limits)
    assert not (above.stable[0] and above.ttft_s["p99"][0] <= 2.0 and above.tpot_s["p99"][0] <= 0.2)


def test_a_bound_run_without_its_rate_takes_it_from_its_throughput(tmp_path, catalog):
    """MLPerf's results table gives a Server or Interactive run's tokens/s, not its scheduled rate.
    A row on a dataset with bounds may leave request_rate_rps empty: the rate is its completed
    samples/s where given (a valid run completes what it schedules: AMD's v4.1 8xMI300X Server,
    73.66 scheduled, 71.74 completed), else its tokens/s over the dataset's mean output
    (21,028.23 / 8 replicas / 293.8 = 8.95 req/s a replica, 73.66 / 8 = 9.21 scheduled). Its
    throughput is predicted as the model's largest rate within the bounds, as with the rate given;
    the JSON says where the rate came from. Without a dataset, or on one without bounds, the rate
    would only predict the measured throughput back: the row is refused with its reason."""
    from sizer.validate import report_dict, validate_rows

    given, sps, tok, nods = _mlperf_csv(
        tmp_path,
        "sps,meta-llama/Llama-2-70b-chat-hf,mi300x,vllm,fp8,server,mlperf-llama2-70b,,,1,8,,21028.23,71.74,,\n"
        "tok,meta-llama/Llama-2-70b-chat-hf,mi300x,vllm,fp8,server,mlperf-llama2-70b,,,1,8,,21028.23,,,\n"
        "nods,meta-llama/Llama-2-70b-chat-hf,mi300x,vllm,fp8,server,,222,293,1,8,,21028.23,71.74,,\n",
    )
    assert (given.rate_basis, sps.rate_basis, tok.rate_basis) == ("", "samples_per_s", "output_tokens_per_s")
    assert sps.request_rate_rps == pytest.approx(71.74 / 8) and sps.invalid is None
    assert tok.request_rate_rps is None and tok.invalid is None  # the dataset's mean output is read in resolve
    res = resolve(tok, catalog)
    assert res.output.mean == pytest.approx(293.8, abs=0.1)
    assert res.row.request_rate_rps == pytest.approx(21028.23 / 8 / res.output.mean) == pytest.approx(8.95, abs=0.01)
    assert nods.invalid == "kind rate: request_rate_rps missing (an MLPerf server or interactive run on a named dataset may give samples_per_s or output_tokens_per_s instead)"
    scheduled = replace(tok, row_id="scheduled", request_rate_rps=73.66 / 8, rate_basis="")  # the same run, its rate given
    report = validate_rows([given, sps, tok, scheduled], catalog)
    by = {r.row.row_id: r for r in report.results}
    assert by["tok"].predicted_max_rate_rps == pytest.approx(by["scheduled"].predicted_max_rate_rps, rel=1e-9)
    assert by["tok"].predicted_tokens_per_s == pytest.approx(by["scheduled"].predicted_tokens_per_s, rel=1e-9)
    assert by["sps"].predicted_max_rate_rps > 0  # read with the output rescaled to its 293.1 tokens a request
    rows = {x["id"]: x for x in report_dict(report)["rows"]}
    assert (rows["srv"]["request_rate_from"], rows["sps"]["request_rate_from"], rows["tok"]["request_rate_from"]) == (None, "samples_per_s", "output_tokens_per_s")
    plain = resolve(replace(tok, dataset=None, isl=222.0, osl=293.0), catalog)
    assert not isinstance(plain, Resolved) and "gives no server latency bounds" in plain.reason


def test_a_row_giving_requests_per_second_only_is_scored_on_the_tokens_they_carry(tmp_path, catalog):
    """A source may give completed requests/s and no tokens/s (MLPerf's summaries print both; a
    table may keep one). The measured throughput is then samples/s times the output tokens a
    request: the row's fixed osl, or its dataset's mean output. AMD's v5.0 8 x MI325X llama2-70b
    Offline by tokens/s (33,928.1) and by the samples/s they carry (33,928.1 / 293.8 = 115.48) is
    the same measurement and the same prediction; the JSON says which figure was derived. A row
    with neither (nor a latency) is refused with the two columns named."""
    from sizer.validate import report_dict, validate_rows

    mine = tmp_path / "mine.csv"
    mine.write_text(
        "id,model_path,system,backend,precision,kv_dtype,kind,dataset,isl,osl,concurrency,tp_size,replicas,output_tokens_per_s,samples_per_s\n"
        "tok,llama2-70b-99,mi325x,vllm,fp8,fp8,offline,mlperf-llama2-70b,,,,1,8,33928.1,\n"
        "sps,llama2-70b-99,mi325x,vllm,fp8,fp8,offline,mlperf-llama2-70b,,,,1,8,,115.48\n"
        "fixed,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,vllm,fp8,fp8,concurrency,,1000,200,16,1,1,,10\n"
        "none,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,vllm,fp8,fp8,concurrency,,1000,200,16,1,1,,\n"
    )
    tok, sps, fixed, none = read_csv(mine)
    assert none.invalid == "no measured TTFT, TPOT or throughput (output_tokens_per_s, or samples_per_s)"
    assert fixed.output_tokens_per_s == 10 * 200 and fixed.throughput_basis == "samples_per_s"
    assert sps.output_tokens_per_s is None and sps.measured_output_tokens_per_request is None
    res = resolve(sps, catalog)
    assert res.row.output_tokens_per_s == pytest.approx(115.48 / 8 * res.output.mean)
    assert res.row.output_tokens_per_s == pytest.approx(33928.1 / 8, rel=2e-4)
    report = validate_rows([tok, sps, fixed], catalog)
    by = {r.row.row_id: r for r in report.results}
    assert by["sps"].predicted_tokens_per_s == by["tok"].predicted_tokens_per_s
    assert by["sps"].ape("throughput") == pytest.approx(by["tok"].ape("throughput"), abs=0.05)
    rows = {x["id"]: x for x in report_dict(report)["rows"]}
    assert [rows[k]["measured_tokens_per_s_from"] for k in ("tok", "sps", "fixed")] == [None, "samples_per_s", "samples_per_s"]


def test_an_mlperf_benchmark_name_names_its_dataset_and_its_scenario(tmp_path, catalog):
    """A row may name its dataset as MLPerf names the benchmark (`llama2-70b-99.9`,
    `mlperf-llama3_1-8b-edge`, `llama2-70b-interactive-99`): the benchmark's dataset, read as an
    MLPerf submission (its release label and FP8 cache) like the row naming `mlperf-llama2-70b`.
    An `-interactive` benchmark in the dataset or model column is the Interactive scenario's
    (450 / 40 ms), whatever the kind column says: v5.0 and v5.1 file it under Server, where its
    Server bounds (2,000 / 200 ms) would let the model run the replica at twice the rate. Other
    names are left as given (and refused when no dataset has them); a bare `llama2-70b` is looked
    up as given first, then as MLPerf's."""
    from sizer.datasets import dataset, mlperf_dataset_name

    names = {
        "llama2-70b-99.9": "mlperf-llama2-70b",
        "mlperf-llama2-70b-99": "mlperf-llama2-70b",
        "llama2-70b-interactive-99": "mlperf-llama2-70b",
        "llama3_1-8b-edge": "mlperf-llama3.1-8b",
        "mlperf-llama3_1-405b": "mlperf-llama3.1-405b",
        "mixtral-8x7b-99": "mlperf-mixtral-8x7b",
        "deepseek-r1-interactive": "mlperf-deepseek-r1",
        "MLPerf-Llama2-70B": "mlperf-llama2-70b",
        "sharegpt": None,
        "llama2-70b-chat": None,
        "llama2-70b": None,  # no MLPerf word: a catalog's own dataset of that name comes first
    }
    assert {k: mlperf_dataset_name(k) for k in names} == names
    assert dataset("llama2-70b-99.9", catalog.root).name == "mlperf-llama2-70b"
    assert dataset("llama2-70b", catalog.root).name == "mlperf-llama2-70b"  # none of that name: MLPerf's
    head = "id,model_path,system,backend,precision,kind,dataset,tp_size,replicas,output_tokens_per_s\n"
    (tmp_path / "mine.csv").write_text(
        head
        + "ours,llama2-70b-99,mi325x,vllm,fp8,server,mlperf-llama2-70b,1,8,30724.51\n"
        + "bench,llama2-70b-99,mi325x,vllm,fp8,server,llama2-70b-99.9,1,8,30724.51\n"
        + "int_ds,llama2-70b-99,mi325x,vllm,fp8,server,llama2-70b-interactive-99,1,8,30724.51\n"
        + "int_model,llama2-70b-interactive-99,mi325x,vllm,fp8,server,mlperf-llama2-70b,1,8,30724.51\n"
    )
    ours, bench, int_ds, int_model = (resolve(r, catalog) for r in read_csv(tmp_path / "mine.csv"))
    assert bench.row.dataset == ours.row.dataset == "mlperf-llama2-70b" and bench.kv_dtype == ours.kv_dtype == "fp8"
    assert bench.row.engine_version == ours.row.engine_version and ours.row.engine_version.startswith("mlperf")
    assert ours.latency_bounds_s == bench.latency_bounds_s == (2.0, 0.2)
    assert int_ds.latency_bounds_s == int_model.latency_bounds_s == (0.45, 0.04)


def test_a_bound_runs_latencies_are_the_models_at_its_largest_rate(tmp_path, catalog):
    """A bound run's TTFT and TPOT are predicted where its throughput is: at the model's largest
    rate within the run's bounds (validate.bound_latencies_s), the open loop there (queueing.
    open_loop, the same call predict makes at the submitted rate). The figures at the submitted
    rate stay in the row (`predicted_*_at_rate`), equal to predict's. AMD 8xMI300X llama2-70b
    Server, v4.1: 9.21 req/s a replica submitted."""
    from sizer.queueing import open_loop
    from sizer.validate import bound_latencies_s, bounded_rates_rps, report_dict, validate_rows

    rows = _mlperf_csv(tmp_path)
    (srv,) = validate_rows(rows, catalog).results
    res = resolve(rows[0], catalog)
    setup = build_setup([res])
    edge = srv.predicted_max_rate_rps
    assert edge == pytest.approx(bounded_rates_rps(setup)[0], rel=1e-4)
    at_edge = open_loop(setup.step, np.array([edge]), setup.isl, setup.osl, setup.budget, lengths=setup.lengths)
    overhead = (1.0 - setup.front_end[0]) * setup.step.request_overhead_s[0]
    assert srv.predicted_ttft_ms == pytest.approx((at_edge.ttft_s[0] - overhead) * 1000, rel=1e-9)
    assert srv.predicted_tpot_ms == pytest.approx(at_edge.tpot_s[0] * 1000, rel=1e-9)
    # the mean TPOT at the edge is within the p99 bound the edge holds
    assert srv.predicted_tpot_ms <= 200.0
    at_rate = predict(setup)
    assert srv.predicted_ttft_ms_at_rate == pytest.approx(at_rate.ttft_s[0] * 1000, rel=1e-9)
    assert srv.predicted_tpot_ms_at_rate == pytest.approx(at_rate.tpot_s[0] * 1000, rel=1e-9)
    # the run's rate and the model's edge differ, so the two operating points do
    assert edge != pytest.approx(73.66 / 8, rel=0.01)
    assert (srv.predicted_tpot_ms > srv.predicted_tpot_ms_at_rate) == (edge > 73.66 / 8)
    (row,) = report_dict(validate_rows(rows, catalog))["rows"]
    assert row["predicted_tpot_ms_at_rate"] == pytest.approx(srv.predicted_tpot_ms_at_rate, abs=1e-4)
    # no rate within the bounds: the row keeps its figures at the submitted rate
    assert bound_latencies_s(setup, {0: 0.0}) == {}


def test_latency_bounds_of_an_unknown_scenario_are_one_clear_error(tmp_path):
    from sizer.errors import SizerError

    (tmp_path / "datasets.yaml").write_text(
        "datasets:\n  d:\n    prompt_tokens: {percentiles: {0: 10, 100: 20}}\n    output_tokens: {percentiles: {0: 10, 100: 20}}\n"
        "    latency_bounds:\n      offline: {ttft_p99_ms: 1, tpot_p99_ms: 1}\n"
    )
    with pytest.raises(SizerError) as err:
        load_datasets(tmp_path)
    assert "datasets.yaml: datasets.d.latency_bounds.offline: unknown scenario; expected one of server, interactive" in str(err.value)


def test_the_summary_scores_bound_runs_largest_rates_by_hand(tmp_path, catalog):
    """summary.bounded_rate over two bound runs submitted at 8 req/s a replica, the model's
    largest rates 10 and 6 (set by hand): 25 % off each (|10/8 - 1|, |6/8 - 1|), so median and
    p90 25 %; log ratios log 1.25 = +0.2231 and log 0.75 = -0.2877, median their mean -0.0323."""
    from dataclasses import replace

    from sizer.validate import Report, bounded_rates, report_dict, validate_rows

    rows = _mlperf_csv(tmp_path, "srv2,meta-llama/Llama-2-70b-chat-hf,mi300x,vllm,fp8,server,mlperf-llama2-70b,,,1,8,73.66,21028.23,71.74,1006.33,143.10\n")
    report = validate_rows(rows, catalog)
    a, b = (replace(r, row=replace(r.row, request_rate_rps=8.0), predicted_max_rate_rps=x, copy_of=None) for r, x in zip(report.results, (10.0, 6.0)))
    by_hand = Report(results=(a, b), skipped=(), efficiency_source="", measurements="", roles_used=False)
    got = bounded_rates(by_hand, None)
    sensitivity = got.pop("edge_sensitivity")
    assert got == {"n": 2, "median_ape": 25.0, "p90_ape": 25.0, "median_log_ratio": -0.0323}
    # the latencies' move at 95 % of the edge: with two runs, the median is the mean of the two moves
    moves = [abs(r.predicted_tpot_ms - r.predicted_tpot_ms_below_edge) / r.predicted_tpot_ms * 100 for r in (a, b)]
    assert sensitivity["rate_share"] == 0.95 and sensitivity["tpot_median_move_pct"] == pytest.approx(sum(moves) / 2, abs=0.05)
    assert report_dict(by_hand)["summary"]["bounded_rate"] == dict(got, edge_sensitivity=sensitivity)
    fixed = Report(results=(replace(a, predicted_max_rate_rps=None),), skipped=(), efficiency_source="", measurements="", roles_used=False)
    assert bounded_rates(fixed, None) is None


def test_an_mlperf_row_in_the_submissions_own_spellings_reads_as_the_shipped_one(tmp_path, catalog):
    """A row copied from an MLPerf submission as it spells things: the accelerator_model_name of
    its system description (`NVIDIA H100-SXM-80GB`, mlcommons/inference_results_v4.1
    closed/NVIDIA/systems/DGX-H100_H100-SXM-80GBx8_TRT.json), the framework `TensorRT-LLM` and the
    benchmark name `llama2-70b-99`, resolves to the same model, device and engine as the row in the
    catalog's own names: the same prediction."""
    from sizer.measurements import Resolved, resolve
    from sizer.validate import build_setup, predict

    header = "id,model_path,system,backend,precision,kind,dataset,isl,osl,tp_size,replicas,request_rate_rps,output_tokens_per_s,samples_per_s,silicon_ttft_ms,silicon_tpot_ms\n"
    # MLPerf v4.1 NVIDIA DGX-H100 8 x H100-SXM-80GB llama2-70b Server: 75.1 samples/s scheduled, TP2 x 4
    figures = ",fp8,rate,mlperf-llama2-70b,,,2,4,75.1,21588.35,74.41,275.92,154.96\n"
    (tmp_path / "mine.csv").write_text(
        header
        + "ours,meta-llama/Llama-2-70b-chat-hf,h100_sxm,trtllm" + figures
        + "theirs,llama2-70b-99,NVIDIA H100-SXM-80GB,TensorRT-LLM" + figures
    )
    ours, theirs = (resolve(r, catalog) for r in read_csv(tmp_path / "mine.csv"))
    assert isinstance(ours, Resolved) and isinstance(theirs, Resolved), theirs
    assert (theirs.model_name, theirs.gpu.name, theirs.row.engine) == (ours.model_name, ours.gpu.name, ours.row.engine) == ("llama-2-70b", "H100-SXM", "trtllm")
    pred = predict(build_setup([ours, theirs]))
    assert pred.tpot_s[0] == pred.tpot_s[1] and pred.ttft_s[0] == pred.ttft_s[1]


def test_an_mlperf_system_name_names_its_device_or_none(tmp_path, catalog):
    """A row may carry the submission's system name (its results folder, or the results table's
    `System`) where a device name belongs. The device is the longest run of the name's words that
    names one, counts dropped. On every MLPerf results folder the shipped rows come from (46) it is
    the row's own device or none, never another: a bare `H100` is refused (ASUSTeK's
    ESC8000A_E12_H100x8 ran H100 PCIe, Microsoft's NC_H100_v5 and ASUSTeK's ESC4000A_E12_4XH100
    H100 NVL), as is a partitioned chip; a row so named resolves as the same row named by device."""
    import re

    from sizer.measurements import SYSTEMS, device_in_system_name, shipped_rows

    folders: dict[str, set[str]] = {}
    for r in shipped_rows(catalog.root / "measurements"):
        m = re.search(r"/results/([^/]+)/", r.source or "")
        if m:
            folders.setdefault(m.group(1), set()).add(catalog.gpu(SYSTEMS.get(r.system.lower(), r.system)).name)
    got = {f: device_in_system_name(f, catalog) for f in folders}
    assert len(folders) >= 40 and all(len(d) == 1 for d in folders.values())
    wrong = {f: (g.name, folders[f]) for f, g in got.items() if g is not None and {g.name} != folders[f]}
    assert wrong == {}
    assert sum(g is not None for g in got.values()) >= len(folders) - 5
    by_hand = {
        "8xMI325X_2xEPYC_9575F": "MI325X",
        "DGX-H100_H100-SXM-80GBx8_TRT": "H100-SXM",
        "C245M8_H100NVL_94GBx2_TRT": "H100-NVL",
        "XE7745_L40Sx8_TRT": "L40S",
        "Dell PowerEdge XE9680 (8x H100-SXM-80GB, TensorRT)": "H100-SXM",
        "ThinkSystem_SR650_V3_L4x8": "L4",
        "GH200-144GB_aarch64x1_TRT": "GH200-144GB",
        "ESC8000A_E12_H100x8_TRT": None,
        "NC_H100_v5_TRT": None,
        "8xMI300X_NPS4_CPX": None,
        "H200_and_H100": None,
        "G893-ZX1-AAX2": None,
    }
    assert {k: (g.name if (g := device_in_system_name(k, catalog)) else None) for k in by_hand} == by_hand
    header = "id,model_path,system,backend,precision,kind,dataset,tp_size,replicas,output_tokens_per_s\n"
    (tmp_path / "mine.csv").write_text(header + "a,llama2-70b-99,8xMI325X_2xEPYC_9575F,vllm,fp8,offline,mlperf-llama2-70b,1,8,33928.1\n" + "b,llama2-70b-99,mi325x,vllm,fp8,offline,mlperf-llama2-70b,1,8,33928.1\n" + "c,llama2-70b-99,NC_H100_v5_TRT,vllm,fp8,offline,mlperf-llama2-70b,1,8,33928.1\n")
    a, b, c = (resolve(r, catalog) for r in read_csv(tmp_path / "mine.csv"))
    assert a.gpu.name == b.gpu.name == "MI325X"
    pred = predict(build_setup([a, b]))
    assert pred.output_tokens_per_s[0] == pred.output_tokens_per_s[1]
    assert not isinstance(c, Resolved) and c.reason == (
        "system 'NC_H100_v5_TRT' names a chip the GPU catalog holds as 3 devices (H100-NVL, H100-PCIe, H100-SXM), not which of them ran: "
        "write the device (its memory, bandwidth and links differ)"
    )


def test_an_mlperf_row_with_quantised_weights_and_no_kv_dtype_runs_an_fp8_cache(tmp_path, catalog):
    """MLPerf submitters quantise the KV cache to FP8 with FP8 or FP4 weights (143 of the 147
    shipped MLPerf runs say so): such a row without kv_dtype reads as FP8 KV, the same prediction
    as the row that states it (AMD's v5.0 8 x MI325X llama2-70b Offline, 33,928.1 tokens/s); a
    stated FP16 cache, BF16 weights and a row off MLPerf's datasets keep the engine's default."""
    import csv

    with open(catalog.root / "measurements" / "public_serving.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    mlperf = [r for r in rows if r["dataset"].startswith("mlperf-")]
    assert len(mlperf) >= 140
    stated = [r["kv_dtype"] for r in mlperf if r["precision"] in ("fp8", "fp4")]
    assert stated.count("fp8") >= 0.95 * len(stated) and set(stated) <= {"fp8", "fp16"}
    header = "id,model_path,system,backend,backend_version,precision,kv_dtype,kind,dataset,isl,osl,tp_size,replicas,output_tokens_per_s\n"
    body = "".join(
        f"{name},llama2-70b-99,{system},vllm,0.7,{precision},{kv},offline,{ds},{isl},{osl},1,8,33928.1\n"
        for name, system, precision, kv, ds, isl, osl in (
            ("given", "mi325x", "fp8", "fp8", "mlperf-llama2-70b", "", ""),
            ("empty", "mi325x", "fp8", "", "mlperf-llama2-70b", "", ""),
            ("fp4", "mi355x", "fp4", "", "mlperf-llama2-70b", "", ""),
            ("fp16", "mi325x", "fp8", "fp16", "mlperf-llama2-70b", "", ""),
            ("bf16", "mi325x", "bf16", "", "mlperf-llama2-70b", "", ""),
            ("fixed", "mi325x", "fp8", "", "", "222", "294"),
        )
    )
    (tmp_path / "mine.csv").write_text(header + body)
    res = {r.row.row_id: r for r in (resolve(x, catalog) for x in read_csv(tmp_path / "mine.csv"))}
    assert {k: r.kv_dtype for k, r in res.items()} == {"given": "fp8", "empty": "fp8", "fp4": "fp8", "fp16": "fp16", "bf16": "bf16", "fixed": "bf16"}
    pred = predict(build_setup([res["given"], res["empty"]]))
    assert pred.output_tokens_per_s[0] == pred.output_tokens_per_s[1]


def test_a_precision_in_the_engines_words_reads_as_sizers(tmp_path, catalog):
    """`bfloat16`, `float16`, `fp8_e4m3`, `AWQ` and `auto` (vLLM's --dtype / --quantization words)
    name bf16, fp16, fp8, int4 and the checkpoint's own format: a row is not skipped for its spelling."""
    header = "id,model_path,system,backend,precision,kind,isl,osl,concurrency,tp_size,silicon_ttft_ms,silicon_tpot_ms\n"
    cells = {"bfloat16": "bf16", "float16": "fp16", "FP8_E4M3": "fp8", "AWQ": "int4", "auto": ""}
    (tmp_path / "mine.csv").write_text(header + "".join(f"r{i},meta-llama/Llama-3.1-8B-Instruct,h100_sxm,vllm,{p},concurrency,1024,128,8,1,50,10\n" for i, p in enumerate(cells)))
    rows = read_csv(tmp_path / "mine.csv")
    assert [r.precision for r in rows] == list(cells.values())
    from sizer.measurements import Resolved, resolve

    assert [resolve(r, catalog).weight_dtype for r in rows] == ["bf16", "fp16", "fp8", "int4", "bf16"]


def test_an_mlperf_single_stream_row_is_a_closed_loop_of_one(tmp_path, catalog):
    """MLPerf's SingleStream (llama3.1-8b-edge) issues a query when the previous one completes:
    read as kind concurrency at 1, on one replica; the same prediction as the row written so. A
    SingleStream row claiming several queries at once or several replicas is skipped saying why."""
    from sizer.measurements import Resolved, resolve
    from sizer.validate import build_setup, predict

    header = "id,model_path,system,backend,precision,kind,dataset,isl,osl,concurrency,tp_size,replicas,silicon_ttft_ms,silicon_tpot_ms\n"
    body = (
        "ss,meta-llama/Llama-3.1-8B-Instruct,l40s,trtllm,fp8,SingleStream,mlperf-llama3.1-8b,,,,1,1,60,12\n"
        "c1,meta-llama/Llama-3.1-8B-Instruct,l40s,trtllm,fp8,concurrency,mlperf-llama3.1-8b,,,1,1,1,60,12\n"
        "bad,meta-llama/Llama-3.1-8B-Instruct,l40s,trtllm,fp8,SingleStream,mlperf-llama3.1-8b,,,4,1,1,60,12\n"
        "bad2,meta-llama/Llama-3.1-8B-Instruct,l40s,trtllm,fp8,singlestream,mlperf-llama3.1-8b,,,,1,8,60,12\n"
        "ss2,meta-llama/Llama-3.1-8B-Instruct,l40s,trtllm,fp8,Single-Stream,mlperf-llama3.1-8b,,,,1,1,60,12\n"
    )
    (tmp_path / "mine.csv").write_text(header + body)
    rows = {r.row_id: r for r in read_csv(tmp_path / "mine.csv")}
    for rid in ("ss", "ss2"):
        assert (rows[rid].kind, rows[rid].concurrency, rows[rid].invalid) == ("concurrency", 1.0, None)
    assert rows["bad"].invalid == "concurrency: SingleStream runs one query at a time (concurrency 1), got '4'"
    assert rows["bad2"].invalid == "replicas: SingleStream runs one query at a time, on one replica (replicas 1), got '8'"
    ss, c1 = resolve(rows["ss"], catalog), resolve(rows["c1"], catalog)
    assert isinstance(ss, Resolved) and isinstance(c1, Resolved)
    pred = predict(build_setup([ss, c1]))
    assert pred.ttft_s[0] == pred.ttft_s[1] and pred.tpot_s[0] == pred.tpot_s[1]
