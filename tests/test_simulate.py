"""`sizer simulate`: the discrete-event simulator's mechanics against hand-computed cases, its
KV accounting against the memory model, its inputs, and its agreement with the analytic model
on a plan."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from sizer.errors import FieldValueError
from sizer.memory import KvFormat, sequence_bytes_on_stage, stage_kv
from sizer.simulate import Arrivals, _seq_bytes, parse_plan, plan_replicas, poisson_arrivals, simulate_replica, trace_arrivals
from sizer.workload import LengthDist, load_workload


@pytest.fixture(scope="module")
def chat(catalog, root):
    return load_workload(root / "workloads" / "chat-llama-3.1-70b.yaml", catalog)


@pytest.fixture(scope="module")
def h100(chat, catalog):
    (spec,) = plan_replicas(chat, catalog, ["H100-SXM,2,1,fp8,fp8"], replicas=3)
    return spec


def _one(p: int, o: int, t: float = 1.0) -> Arrivals:
    return Arrivals(time_s=np.array([t]), prompt_tokens=np.array([p]), output_tokens=np.array([o]), source="test")


def test_a_lone_request_takes_its_prefill_step_then_one_decode_step_per_token(h100):
    """One request, 1,000-token prompt, 101 output tokens: it waits request_overhead_s (admission
    steps x the mean step, 0 before any step), is prefilled in one step, then each of its 100 later
    tokens takes a decode step of batch 1 at its growing context."""
    spec = h100
    result = simulate_replica(spec, _one(1000, 101), duration_s=10.0, max_drain_s=100.0)
    st = spec.step
    overhead = float(st.request_overhead_s[0])
    prefill = float(st.mixed_parts(np.array([1.0]), np.array([0.0]), np.array([1008.0]), np.array([992.0]))[0])  # the timer's buckets
    assert result.ttft_s["p50"] == pytest.approx(overhead + prefill, rel=0.02)
    decode = np.mean([float(st.mixed_parts(np.array([1.0]), np.array([(c // 32 + 0.5) * 32.0]), np.array([0.0]), np.array([32.0]))[0]) for c in range(1000, 1100)])
    assert result.tpot_s["p50"] == pytest.approx(decode, rel=0.01)
    assert result.completed == 1 and result.preemptions == 0


def test_an_overlap_scheduler_hands_the_first_and_last_tokens_over_one_step_late(h100):
    """TensorRT-LLM's and SGLang's overlap scheduler (perf.overlap_scheduler) processes a step's
    tokens after launching the next step: the lone request of the case above gets its first token
    after its first decode step (the step at a context of 1,000 tokens, batch 1), its last after
    the step that would follow it, which an idle engine does not run: TTFT grows by one decode step,
    the last token is not late and TPOT is 99/100 of the no-overlap run's."""
    plain = simulate_replica(h100, _one(1000, 101), duration_s=10.0, max_drain_s=100.0)
    spec = replace(h100, step=replace(h100.step, overlap_scheduler=np.ones(1)))
    late = simulate_replica(spec, _one(1000, 101), duration_s=10.0, max_drain_s=100.0)
    first_decode = float(h100.step.mixed_parts(np.array([1.0]), np.array([(1000 // 32 + 0.5) * 32.0]), np.array([0.0]), np.array([32.0]))[0])
    assert late.ttft_s["p50"] - plain.ttft_s["p50"] == pytest.approx(first_decode, rel=0.02)
    assert late.tpot_s["p50"] * 100 == pytest.approx(plain.tpot_s["p50"] * 100 - first_decode, rel=1e-6)
    assert late.completed == plain.completed == 1


def test_kv_accounting_is_the_memory_models(chat, h100):
    """Whole blocks per GPU, as memory.sequence_bytes_on_stage counts them (sliding layers capped)."""
    skv = stage_kv(chat.model, KvFormat.of("fp8"), 2, 1)[0]
    for ctx in (1, 16, 17, 1000, 7200):
        assert float(_seq_bytes(np.array([ctx]), h100)[0]) == pytest.approx(sequence_bytes_on_stage(skv, ctx, 16, 0))


def test_gpt_oss_sliding_layers_hold_at_most_the_window(catalog, root):
    w = load_workload(root / "workloads" / "agents-gpt-oss-120b.yaml", catalog)
    (spec,) = plan_replicas(w, catalog, ["H100-SXM,1,1,fp8,mxfp4"], replicas=5)
    skv = stage_kv(w.model, KvFormat.of("fp8"), 1, 1)[0]
    for ctx in (100, 128, 5000, 20000):
        assert float(_seq_bytes(np.array([ctx]), spec)[0]) == pytest.approx(sequence_bytes_on_stage(skv, ctx, spec.block_size_tokens, 128))
    # by hand: 2 (K, V) x 8 KV heads x 64 x 1 B (fp8) = 1,024 B a token a layer, 16-token blocks. At 20,000 tokens
    # the 18 full layers hold 1,250 blocks and the 18 sliding ones the 128-token window's 8 blocks + 1 partly
    # filled at each end; at 100 tokens both kinds hold the same 7 blocks.
    assert spec.block_size_tokens == 16
    assert float(_seq_bytes(np.array([20000]), spec)[0]) == 18 * 1250 * 16 * 1024 + 18 * (8 + 1) * 16 * 1024 == 371_294_208
    assert float(_seq_bytes(np.array([100]), spec)[0]) == 36 * 7 * 16 * 1024


def test_a_full_pool_preempts_and_every_request_still_completes(h100):
    """A pool for ~6 sequences of 2,600 tokens and 12 requests at once: the newest are preempted
    (recompute) when decoding needs a block, and all finish."""
    spec = replace(h100, pool_bytes=6 * 2600 * h100.full_bytes_per_token)
    arr = Arrivals(time_s=np.linspace(2.0, 2.1, 12), prompt_tokens=np.full(12, 2000), output_tokens=np.full(12, 600), source="test")
    result = simulate_replica(spec, arr, duration_s=10.0, max_drain_s=600.0)  # the first 1 s is warm-up
    assert result.preemptions > 0
    assert result.completed == 12 and result.unfinished == 0
    assert result.kv_utilization_max <= 1.0 + 1e-9


def test_max_num_seqs_caps_the_running_batch(h100):
    spec = replace(h100, max_num_seqs=4)
    arr = Arrivals(time_s=np.full(10, 2.0), prompt_tokens=np.full(10, 100), output_tokens=np.full(10, 50), source="test")
    result = simulate_replica(spec, arr, duration_s=10.0, max_drain_s=100.0)
    assert result.running_p99 <= 4 and result.completed == 10


def test_same_seed_same_result_and_lengths_follow_the_workload(chat, h100):
    t = chat.traffic
    a = poisson_arrivals(4.0, 300, t.prompt_tokens, t.output_tokens, 3)
    b = poisson_arrivals(4.0, 300, t.prompt_tokens, t.output_tokens, 3)
    assert np.array_equal(a.time_s, b.time_s) and np.array_equal(a.prompt_tokens, b.prompt_tokens)
    assert simulate_replica(h100, a, duration_s=300) == simulate_replica(h100, b, duration_s=300)
    big = poisson_arrivals(4.0, 20000, t.prompt_tokens, t.output_tokens, 4)
    assert len(big.time_s) == pytest.approx(80000, rel=0.02)
    assert np.median(big.prompt_tokens) == pytest.approx(1200, rel=0.03)  # the workload's p50
    fixed = LengthDist(percentiles=((50.0, 512.0),))
    assert set(poisson_arrivals(1.0, 100, fixed, fixed, 0).prompt_tokens.tolist()) == {512}


def test_a_dataset_workload_is_simulated_on_the_datasets_own_lengths():
    """A named dataset (traffic.dataset) is a quantile table; the simulator drew from the log-normal
    fitted to its inner percentiles instead: on mlperf-llama2-70b (catalogs/datasets.yaml, the
    OpenOrca lengths MLCommons publishes, table means 223.1 prompt / 293.8 output tokens) that fit
    has means of about 180 and 345, so a simulated MLPerf run served 19 % shorter prompts and 17 %
    longer answers than the analytic model it was checking."""
    from sizer.datasets import dataset
    from sizer.fleet import SliceDist

    d = dataset("mlperf-llama2-70b")
    a = poisson_arrivals(50.0, 4000, d.prompt, d.output, 5)  # about 200,000 requests
    assert d.prompt.mean == pytest.approx(223.1, abs=0.1) and d.output.mean == pytest.approx(293.8, abs=0.1)
    assert a.prompt_tokens.mean() == pytest.approx(d.prompt.mean, rel=0.01)
    assert a.output_tokens.mean() == pytest.approx(d.output.mean, rel=0.01)
    assert a.prompt_tokens.min() >= 48 and a.prompt_tokens.max() <= 1021  # the table's 0 and 100
    assert np.percentile(a.output_tokens, 50) == pytest.approx(256, rel=0.02)  # the table's p50
    # a fleet's size range draws from its slice of the lengths, not the whole distribution
    top = SliceDist(percentiles=(), parent=d.prompt, lo_pct=90.0, hi_pct=100.0)
    rng = np.random.default_rng(0)
    drawn = top.draw(20000, rng)
    assert drawn.min() >= 519 and drawn.max() <= 1021  # the table's p90 and p100
    lognormal = SliceDist(percentiles=(), parent=LengthDist(percentiles=((50.0, 1000.0), (90.0, 3000.0))), lo_pct=0.0, hi_pct=50.0)
    assert lognormal.draw(20000, rng).max() <= 1000.0 + 1e-9


def test_trace_arrivals_and_their_errors(tmp_path, chat):
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,prompt_tokens,output_tokens\n100,500,50\n101.5,600,60\n2026-01-01T00:00:05Z,700,70\n")
    arr = trace_arrivals(trace, 1e12, 1, chat.traffic.prompt_tokens, chat.traffic.output_tokens, 0)
    # the times span 56 years (a day or more): replayed from the start of the busiest hour of the
    # day, hour 0 (two arrivals), as recorded (no target rate)
    assert arr.time_s.tolist()[:2] == [100.0, 101.5] and arr.prompt_tokens.tolist()[:2] == [500, 600]
    assert "busiest hour, 00:00" in arr.source and "as recorded" in arr.source
    bad = tmp_path / "bad.csv"
    bad.write_text("timestamp,prompt_tokens\n1,many\n")
    with pytest.raises(FieldValueError, match=r"bad.csv: line 2: prompt_tokens: expected a number of tokens, got 'many'"):
        trace_arrivals(bad, 10, 1, chat.traffic.prompt_tokens, chat.traffic.output_tokens, 0)
    with pytest.raises(FieldValueError, match="--plan: expected device,tp,pp,kv,weights"):
        parse_plan("H100-SXM,2,fp8")
    # the KV dtype in vLLM's spellings, as explain reads it (fp8_e5m2 was "vLLM has no 'fp8_e5m2' KV cache", exit 9)
    assert parse_plan("H100-SXM,2,1,fp8_e5m2,fp8") == parse_plan("H100-SXM,2,1,FP8_E4M3,fp8") == ("H100-SXM", 2, 1, "fp8", "fp8")


def test_simulate_cli_json_is_deterministic(root):
    cmd = [sys.executable, "-m", "sizer", "simulate", "workloads/chat-llama-3.1-70b.yaml", "--plan", "H100-SXM,2,1,fp8,fp8", "--replicas", "3", "--duration-s", "120", "--seed", "5", "--format", "json"]
    first = subprocess.run(cmd, capture_output=True, text=True, cwd=root)
    second = subprocess.run(cmd, capture_output=True, text=True, cwd=root)
    assert first.returncode in (0, 11), first.stderr  # 11: the SLO is not met in simulation
    assert first.stdout == second.stdout
    d = json.loads(first.stdout)["simulations"][0]
    assert {"ttft_s", "tpot_s", "kv_utilization_mean", "preemptions", "agreement", "slo_checks", "passed", "verdict"} <= set(d)
    assert first.returncode == (0 if d["passed"] else 11)
    assert [c["metric"] for c in d["slo_checks"]] == ["ttft_p99", "tpot_p99"]
    assert [c["bound_s"] for c in d["slo_checks"]] == [2.0, 0.06]  # the workload's SLO
    assert {a["metric"] for a in d["agreement"]} >= {"ttft_p99", "tpot_p99"}
    bad = subprocess.run([sys.executable, "-m", "sizer", "simulate", "workloads/chat-llama-3.1-70b.yaml", "--plan", "H999,2,1,fp8,fp8"], capture_output=True, text=True, cwd=root)
    assert bad.returncode == 8 and "unknown device 'H999'" in bad.stderr and "Traceback" not in bad.stderr


def test_simulation_agrees_with_the_analytic_model_on_a_plan(chat, h100):
    """Chat's H100 tp=2 replica under the engine's default sequence cap (1,024, which the batch
    never reaches) at 0.65 of the load the analytic model saturates at (bisected, so that a refit of
    the shipped factors moves the load with the replica's capacity rather than past its knee; 0.65
    is where the shipped chat plan runs, 3.0 of 4.61 req/s), 12,000 s of arrivals (about 36,000
    requests, so that the p99 rests on some 360 of them): the simulated TTFT and TPOT p50 within
    5 % of queueing.evaluate_load's, the TPOT p99 within 15 %, the TTFT p99 within 20 %, and the
    simulated TTFT p99 not below the analytic one. evaluate_load takes the cap the simulated engine runs (ReplicaSpec.max_num_seqs,
    not the launch line's 61, which this load would overrun: its wait for a slot is
    tests/test_simulate_workloads.py's).

    Measured under the fit that put a wave's first tokens at the end of their prompts' steps
    (2026-12-05, the day's last; seeds 11, 1, 2): TTFT p99 +12.4, +13.2, +7.1 %, TPOT p99 +5.2,
    +3.4, +5.7 %, p50s within 2.3 %; over 36,000 s of arrivals seed 11 gives +6.9 % and seed 1
    +14.6 %. Under the fit before (which read InferenceX's requests per client) the same seeds gave
    +16.0, +15.7 and +11.1 % (12,000 s), +11.7 and +16.1 % (36,000 s): the analytic TTFT p99 is
    about 10-14 % optimistic here, and one window's p99 moves by 3-4 % from seed to seed, which a
    15 % bound did not leave room for (+10.3, +13.4 and +9.9 % under an earlier fit of that day). The analytic tail is the optimistic one, and more so near
    the knee: at 0.75 of saturation the TTFT p99 gap is +10 to +15 % over 12,000 s, and over 3,000 s
    windows (seeds 11, 1, 2, 3, 4) +15, +22, +15, +15 and +12 % (+7 to +20 % under the fit before),
    where this test ran one 3,000 s window of seed 11 at 0.75 until the refit put it at +15.3 %."""
    from sizer.simulate import analytic

    t = chat.traffic
    uncapped = replace(h100, max_num_seqs=1024)
    lo, hi = 0.5, 20.0
    for _ in range(30):
        mid = (lo + hi) / 2
        p = analytic(replace(uncapped, rate_rps=mid), chat)
        finite = all(math.isfinite(float(v[0])) for v in (*p.ttft_s.values(), *p.tpot_s.values()))
        lo, hi = (mid, hi) if finite else (lo, mid)
    assert 2.0 < lo < 10.0  # a 70B replica on two H100s: a few requests a second
    rate = 0.65 * lo
    loaded = replace(uncapped, rate_rps=rate)
    arr = poisson_arrivals(rate, 12_000, t.prompt_tokens, t.output_tokens, 11)
    result = simulate_replica(loaded, arr, duration_s=12_000)
    point = analytic(loaded, chat)
    for key, ttft_rel, tpot_rel in (("p50", 0.05, 0.05), ("p99", 0.20, 0.15)):
        assert result.ttft_s[key] == pytest.approx(point.ttft_s[key][0], rel=ttft_rel), key
        assert result.tpot_s[key] == pytest.approx(point.tpot_s[key][0], rel=tpot_rel), key
    assert result.ttft_s["p99"] >= point.ttft_s["p99"][0]  # the analytic tail is the optimistic one
    assert result.unfinished == 0 and math.isfinite(result.kv_utilization_mean)


def _flag(command: str, name: str) -> int:
    parts = command.split()
    return int(parts[parts.index(name) + 1])


def test_simulate_runs_the_configuration_the_plan_launches(chat, catalog, h100):
    """Issue 14: the simulated replica has the launch line's --max-num-seqs (the sequences the
    pool holds at the p99 context, not the engine's 1,024), --max-num-batched-tokens, --max-model-len and --block-size; the solved plan's
    replicas are simulated with its deployments' launch lines."""
    for flag, value in (
        ("--max-num-seqs", h100.max_num_seqs),
        ("--max-num-batched-tokens", h100.max_num_batched_tokens),
        ("--max-model-len", h100.max_model_len),
        ("--block-size", h100.block_size_tokens),
    ):
        assert _flag(h100.launch_command, flag) == value, flag
    assert h100.max_num_seqs == h100.max_concurrency < 1024 and h100.max_model_len == chat.max_model_len
    from sizer.optimize import solve

    plan = solve(chat, catalog)
    specs = plan_replicas(chat, catalog)
    assert [s.launch_command for s in specs] == [d.launch_command for d in plan.deployments]
    # the running batch never passes the launch line's cap
    arr = poisson_arrivals(h100.rate_rps, 300, chat.traffic.prompt_tokens, chat.traffic.output_tokens, 2)
    assert simulate_replica(h100, arr, duration_s=300).running_p99 <= h100.max_num_seqs


def test_a_request_longer_than_max_model_len_is_refused(h100):
    """vLLM refuses a request whose prompt + output exceeds --max-model-len: so does the replica."""
    spec = replace(h100, max_model_len=2000)
    arr = Arrivals(
        time_s=np.array([2.0, 2.5, 3.0]), prompt_tokens=np.array([1500, 1800, 100]), output_tokens=np.array([500, 201, 50]), source="test"
    )
    result = simulate_replica(spec, arr, duration_s=10.0, max_drain_s=100.0)
    assert result.requests == 3 and result.refused == 1 and result.completed == 2 and result.unfinished == 0


def test_slo_checks_and_the_verdict(chat, h100):
    """Every bound of the workload's SLO is checked against the simulated percentile: met when
    simulated <= bound; PASS only when all are met and no measured request is left running."""
    from sizer.simulate import SimResult, Simulation, slo_checks

    def result(ttft99: float, tpot99: float, unfinished: int = 0) -> SimResult:
        return SimResult(
            duration_s=100, warmup_s=10, requests=1000, completed=1000 - unfinished, unfinished=unfinished,
            ttft_s={"p50": 0.1, "p90": 0.2, "p95": 0.3, "p99": ttft99}, tpot_s={"p50": 0.01, "p90": 0.02, "p95": 0.03, "p99": tpot99},
            output_tokens_per_s=1.0, kv_utilization_mean=0.1, kv_utilization_max=0.2, running_mean=1.0, running_p99=2.0,
            preemptions=0, steps=10, simulated_s=100.0,
        )  # fmt: skip

    def sim(r: SimResult) -> Simulation:
        return Simulation(replica=h100, result=r, agreement=(), seed=0, arrivals="test", slo_checks=slo_checks(chat, r))

    ok = sim(result(1.9, 0.059))
    assert [(c.metric, c.bound_s, c.met) for c in ok.slo_checks] == [("ttft_p99", 2.0, True), ("tpot_p99", 0.06, True)]
    assert ok.passed and ok.verdict.startswith("PASS: every bound met")
    late = sim(result(2.5, 0.059))
    assert not late.passed and late.verdict.startswith("FAIL: ttft_p99 2.5 s > 2 s")
    stuck = sim(result(1.0, 0.05, unfinished=3))
    assert not stuck.passed and "3 of 1,000 measured requests still running" in stuck.verdict
    assert "rests on the slowest 10 of 1,000 requests" in ok.verdict
    # a window with no request at this replica (a trickle of traffic, more replicas than
    # requests): no percentile to judge, so neither PASS nor FAIL (it was FAIL, exit 11: "ttft_p99
    # nan s > 2 s ... the slowest 1 of 0 requests")
    empty = sim(replace(result(math.nan, math.nan), requests=0, completed=0))
    assert empty.passed is None and empty.verdict.startswith("NO VERDICT: the measured window held 0 requests at this replica and none completed")


def test_long_runs_report_progress(h100, chat):
    """simulate_replica calls progress(simulated_s, duration_s) every PROGRESS_EVERY_STEPS steps."""
    from sizer.simulate import PROGRESS_EVERY_STEPS

    calls = []
    arr = poisson_arrivals(h100.rate_rps, 300, chat.traffic.prompt_tokens, chat.traffic.output_tokens, 1)
    result = simulate_replica(h100, arr, duration_s=300, progress=lambda clock, total: calls.append((clock, total)))
    assert len(calls) == result.steps // PROGRESS_EVERY_STEPS > 0
    assert all(total == 300 for _, total in calls) and [c for c, _ in calls] == sorted(c for c, _ in calls)


def test_simulate_of_a_window_with_no_request_exits_0_with_no_verdict(tmp_path, root):
    """api's workload at 0.001 req/s (150 shipped): the 600 s window sends its replica no request. The
    command said FAIL and exited 11 (the plan misses its SLO); it misses nothing. It says NO
    VERDICT, `passed` null in the JSON, and exits 0."""
    import json

    from click.testing import CliRunner

    from sizer.cli import cli

    text = (root / "workloads" / "api-llama-3.1-8b.yaml").read_text()
    path = tmp_path / "trickle.yaml"
    path.write_text(text.replace("requests_per_s: 150", "requests_per_s: 0.001"))
    assert path.read_text() != text
    r = CliRunner().invoke(cli, ["simulate", str(path), "--format", "json", "-q"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    (sim,) = json.loads(r.stdout)["simulations"]
    assert sim["passed"] is None and sim["verdict"].startswith("NO VERDICT")
