"""The integer program on candidates whose optimum is worked out by hand, and its agreement
with the closed form (k = 1) on the shipped workloads."""

from __future__ import annotations

import math
import time
from types import SimpleNamespace

import pulp
import pytest

from sizer.candidates import Config, Evaluated, evaluate_candidates
from sizer.catalog import Price
from sizer.deadline import Deadline
from sizer.errors import InfeasibleError, SolverError
from sizer.optimize import best_single, build_problem, run_program, solve_program, usd_per_million_tokens
from sizer.workload import load_workload

from .conftest import WORKLOADS


def _cand(device: str, gpus: int, usd_per_gpu_hour: float, rate_rps: float) -> Evaluated:
    price = Price(device=device, provider="p", kind="on_demand", usd_per_gpu_hour=usd_per_gpu_hour, price_date="2026-01-01", source="test")
    return Evaluated(
        config=Config(device=device, tp=gpus, pp=1, kv_dtype="bf16", weight_dtype="bf16"),
        stage="feasible",
        reason=None,
        price=price,
        max_rate_rps=rate_rps,
        binding="tpot",
    )


def test_cheapest_single_configuration():
    # A: $10/replica-hour, 3 req/s; B: $18/replica-hour, 5 req/s; demand 10 req/s.
    # A alone: ceil(10/3) = 4 replicas = $40; B alone: ceil(10/5) = 2 replicas = $36 -> B.
    a, b = _cand("A", 1, 10.0, 3.0), _cand("B", 2, 9.0, 5.0)
    replicas, _ = solve_program([a, b], 10.0, 1)
    assert replicas == {1: 2}
    assert best_single([a, b], 10.0) == (b, 2)


def test_a_mix_wins_when_two_configurations_are_allowed():
    # demand 8: A alone 3 x $10 = $30; B alone 2 x $18 = $36; one of each serves 3 + 5 = 8 for $28.
    a, b = _cand("A", 1, 10.0, 3.0), _cand("B", 2, 9.0, 5.0)
    single, _ = solve_program([a, b], 8.0, 1)
    assert single == {0: 3}
    mixed, _ = solve_program([a, b], 8.0, 2)
    assert mixed == {0: 1, 1: 1}


def test_ties_go_to_fewer_gpus():
    # Same $/hour and rate; C uses 2 GPUs per replica, D uses 1: the tie-break picks D.
    c, d = _cand("C", 2, 5.0, 4.0), _cand("D", 1, 10.0, 4.0)
    replicas, _ = solve_program([c, d], 4.0, 1)
    assert replicas == {1: 1}


def test_constraints_are_named():
    a, b = _cand("A", 1, 10.0, 3.0), _cand("B", 2, 9.0, 5.0)
    prob, _ = build_problem([a, b], 10.0, 1)
    for name in ("demand", "configurations", "use_0", "use_1"):
        assert prob.get_constraint_by_name(name) is not None, name


def test_cost_per_million_tokens_is_the_seeds_formula():
    # $36/hour serving 1,000 output tokens/s: 36 / 3600 / 1000 x 1e6 = $10 per million
    assert usd_per_million_tokens(36.0, 1000.0) == pytest.approx(10.0)


@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: p.stem)
def test_program_agrees_with_closed_form_on_shipped_workloads(catalog, path):
    w = load_workload(path, catalog)
    feasible = [e for e in evaluate_candidates(w, catalog) if e.feasible]
    replicas, _ = solve_program(feasible, w.traffic.requests_per_s, 1)
    (i, n), = replicas.items()
    program_cost = n * feasible[i].usd_per_replica_hour
    best, m = best_single(feasible, w.traffic.requests_per_s)
    assert program_cost == pytest.approx(m * best.usd_per_replica_hour, rel=1e-9)
    assert n == math.ceil(w.traffic.requests_per_s / feasible[i].max_rate_rps - 1e-9)


def test_no_feasible_candidate_is_infeasible(catalog, tmp_path):
    from sizer.optimize import solve

    p = tmp_path / "w.yaml"
    p.write_text(
        "model: llama-3.1-405b\n"
        "traffic: {requests_per_s: 1, prompt_tokens: 1000, output_tokens: 100}\n"
        "search: {devices: [L4], tp: [1], pp: [1]}\n"
    )
    with pytest.raises(InfeasibleError) as info:
        solve(load_workload(p, catalog), catalog)
    assert "L4" in str(info.value) and "GiB" in str(info.value)
    assert info.value.reasons and info.value.reasons[0][0] == "L4"


class _StoppedProb:
    """A program whose solve behaves as CBC did near a command's deadline (fuzz-found, test
    test_a_plan_the_solver_cannot_prove_in_time_is_still_reported_within_the_limit at
    --time-limit-s 3.6-3.8): it takes `seconds` and ends with `status`/`sol_status`, or raises."""

    def __init__(self, seconds, status=pulp.LpStatusInfeasible, sol_status=pulp.LpSolutionNoSolutionFound, error=None):
        self.seconds, self.status, self.sol_status, self.error = seconds, status, sol_status, error

    def solve(self, solver):
        time.sleep(self.seconds)
        if self.error:
            raise pulp.PulpSolverError(self.error)
        return self.status


def test_a_solver_stopped_at_its_limit_is_no_proof_of_infeasibility():
    """CBC given 0.10 s for the main program of a gpt-oss-20b mixed fleet (with a feasible first
    incumbent) wrote 'Integer infeasible' after 0.24 s: PuLP's status infeasible, no solution.
    sizer took it for a proof and said the workload's max_configurations conflicts with the
    demand (exit 9). At or past the time limit it is a stop (SolverError, exit 10, naming the
    user's --time-limit-s); before it, an answer (None); a proof (sol_status infeasible) is one
    whenever it comes; and CBC exiting without a solution file is a SolverError, not a crash."""
    stop = SimpleNamespace(prob=_StoppedProb(0.1), started=True)
    with pytest.raises(SolverError, match=r"CBC reached the time limit within --time-limit-s 4 with neither a plan nor a proof"):
        run_program(stop, Deadline(4).share(0.02))
    assert run_program(SimpleNamespace(prob=_StoppedProb(0.0), started=False), 10.0) is None
    proof = SimpleNamespace(prob=_StoppedProb(0.06, sol_status=pulp.LpSolutionInfeasible), started=False)
    assert run_program(proof, 0.05) is None
    crashed = SimpleNamespace(prob=_StoppedProb(0.0, error="Pulp: Error while trying to execute, use msg=True for more details/x/cbc"), started=False)
    with pytest.raises(SolverError, match=r"CBC exited without a result within --time-limit-s 2 for the sizing program \(no solution file"):
        run_program(crashed, 2.0)


def test_a_shared_deadline_names_the_users_limit():
    """The main program's solve gets a share of what is left; when that share has run out its
    error said '--time-limit-s 0', a limit nobody gave."""
    part = Deadline(3).share(0.0)
    assert part.expired()
    assert str(part.error("the sizing program")) == "--time-limit-s 3: the time limit was reached before the sizing program finished"


def test_a_passed_deadline_stops_the_candidates_checks_not_only_their_rate_search(catalog, tmp_path):
    """--time-limit-s bounds the whole command: a search of thousands of configurations (tp 1-64
    x pp 1-32 on every device: 111 s under a 5 s limit) spent its time in the memory and format
    checks before the rate search, where the only deadline check was. A deadline already passed
    stops them at once, naming them."""
    from sizer.candidates import evaluate_candidates
    from sizer.deadline import Deadline
    from sizer.errors import SolverError
    from sizer.workload import load_workload

    path = tmp_path / "wide.yaml"
    path.write_text(
        "model: llama-3.1-8b\ntraffic: {requests_per_s: 5, prompt_tokens: 100, output_tokens: 100}\n"
        f"search: {{tp: [{', '.join(map(str, range(1, 65)))}], pp: [{', '.join(map(str, range(1, 33)))}]}}\n"
    )
    w = load_workload(path, catalog)
    gone = Deadline(0.0)
    with pytest.raises(SolverError, match=r"before the memory and format checks of the candidates finished"):
        evaluate_candidates(w, catalog, deadline=gone)


def test_an_unservable_devices_reason_is_its_furthest_candidates_first_among_equals(catalog, tmp_path):
    """device_rejections names, per device with no feasible candidate, the candidate that got
    furthest, the first in search order among equals (its index in the list, not a search through
    the list per candidate, which made the step quadratic in the search's size)."""
    from sizer.candidates import Evaluated, enumerate_configs
    from sizer.optimize import device_rejections
    from sizer.workload import load_workload

    path = tmp_path / "w.yaml"
    path.write_text("model: llama-3.1-8b\ntraffic: {requests_per_s: 5, prompt_tokens: 100, output_tokens: 100}\nsearch: {devices: [L4], tp: [1, 2], pp: [1]}\n")
    w = load_workload(path, catalog)
    cfgs = [c for c in enumerate_configs(w) if c.tp == 2 and c.kv_dtype == "fp8"]  # equal but for the weights
    assert len(cfgs) >= 2
    rows = [Evaluated(config=c, stage="parallelism", reason=f"reason {i}") for i, c in enumerate(cfgs)]
    (r,) = device_rejections(rows, ("L4",))
    assert r.reason == f"{cfgs[0].label()}: reason 0"
    (r,) = device_rejections(rows[::-1], ("L4",))
    assert r.reason == f"{cfgs[-1].label()}: reason {len(cfgs) - 1}"
