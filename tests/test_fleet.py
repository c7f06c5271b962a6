"""The fleet program on options of round numbers whose optimum is worked out by hand, one test
per purchasing input: availability, budgets, whole instances (and TP within an instance), N+1,
a minimum replica count, max_configurations with size buckets, and a daily profile with a
reserved base. Each test shows the constraint changing the answer, and checks the program
against the closed form (fleet.single_plan) where one configuration is allowed.

Candidates are built directly (as tests/test_optimize.py does): a rate in requests/s per replica
and a price in USD per GPU-hour, so every figure below is arithmetic on round numbers.
"""

from __future__ import annotations

import math

import pytest

from sizer.candidates import Config, Evaluated
from sizer.catalog import Price, load_catalog
from sizer.fleet import (
    FleetProblem,
    Offer,
    Option,
    SizeRange,
    device_offers,
    dominated,
    offer_fits,
    replicas_needed,
    single_plan,
    slots_per_replica,
)
from sizer.optimize import _infeasible_error, build_program, constraint_groups, run_program
from sizer.purchasing import Constraints

from .conftest import ROOT

TINY = ROOT / "tests" / "data" / "tiny_catalog"
WHOLE = SizeRange(lo_pct=0.0, hi_pct=100.0)


def _price(device: str, usd: float, provider: str = "p", kind: str = "on_demand") -> Price:
    return Price(device=device, provider=provider, kind=kind, usd_per_gpu_hour=usd, price_date="2026-01-01", source="test")


def _cand(device: str, tp: int, rate_rps: float, usd: float = 1.0, kv: str = "bf16") -> Evaluated:
    return Evaluated(
        config=Config(device=device, tp=tp, pp=1, kv_dtype=kv, weight_dtype="bf16"),
        stage="feasible" if rate_rps > 0 else "latency",
        reason=None if rate_rps > 0 else "test: cannot serve",
        price=_price(device, usd),
        max_rate_rps=rate_rps,
        binding="tpot",
    )


def _option(device: str, tp: int, usd_per_gpu_hour: float, rates: tuple[float, ...], *, instance_gpus: int = 1, provider: str = "p", reserved_usd: float | None = None, reserved_instance_gpus: int = 1) -> Option:
    """An option whose replicas take `tp` GPUs and serve rates[r] req/s on size range r."""
    cands = tuple(_cand(device, tp, r, usd_per_gpu_hour) if r > 0 else None for r in rates)
    hourly = Offer(price=_price(device, usd_per_gpu_hour, provider), instance_gpus=instance_gpus, role="hourly") if usd_per_gpu_hour else None
    reserved = None
    if reserved_usd is not None:
        reserved = Offer(price=_price(device, reserved_usd, provider, "reserved_1y"), instance_gpus=reserved_instance_gpus, role="reserved")
    return Option(candidates=cands, hourly=hourly, reserved=reserved)


def _problem(options, demand, *, k: int = 1, ranges=(WHOLE,), **constraints) -> FleetProblem:
    return FleetProblem(
        workload=None,
        options=tuple(options),
        ranges=tuple(ranges),
        range_workloads=(),
        demand_rps=tuple(demand),
        max_configurations=k,
        constraints=Constraints(**constraints),
    )


def _solve(problem: FleetProblem):
    solution = run_program(build_program(problem))
    assert solution is not None, "the program is infeasible"
    return solution


def _fleet(problem: FleetProblem, solution) -> dict[tuple[str, int], int]:
    """{(device, range): replicas in the first hour}."""
    out: dict[tuple[str, int], int] = {}
    for p in solution.pools:
        key = (p.option.device, p.range_index)
        out[key] = out.get(key, 0) + p.running[0]
    return out


def _closed_form_best(problem: FleetProblem) -> float:
    return min(sp.cost_usd_per_horizon for sp in (single_plan(o, problem) for o in problem.options) if sp.feasible)


# ------------------------------------------------------------------------------------------------
# availability
# ------------------------------------------------------------------------------------------------


def test_available_gpus_moves_load_to_another_device():
    # X: 1 GPU per replica at $2/GPU-hour, 1 req/s; Y: 1 GPU at $3, 1 req/s; demand 10 req/s.
    # Free: 10 x X = $20/hour. With 6 X GPUs available and two configurations: 6 X + 4 Y =
    # $12 + $12 = $24. With one configuration X alone cannot (10 > 6): 10 x Y = $30.
    x, y = _option("X", 1, 2.0, (1.0,)), _option("Y", 1, 3.0, (1.0,))
    free = _solve(_problem([x, y], [10.0], k=2))
    assert _fleet(None, free) == {("X", 0): 10} and free.cost_usd_per_horizon == pytest.approx(20.0)
    limited = _problem([x, y], [10.0], k=2, available_gpus=(("X", 6),))
    sol = _solve(limited)
    assert _fleet(limited, sol) == {("X", 0): 6, ("Y", 0): 4}
    assert sol.cost_usd_per_horizon == pytest.approx(24.0)
    single = _problem([x, y], [10.0], k=1, available_gpus=(("X", 6),))
    sol = _solve(single)
    assert _fleet(single, sol) == {("Y", 0): 10} and sol.cost_usd_per_horizon == pytest.approx(30.0)
    # the closed form agrees and says why X alone cannot
    sp = single_plan(x, single)
    assert not sp.feasible and "needs 10 X GPUs > 6 available" in sp.reason
    assert _closed_form_best(single) == pytest.approx(30.0)


def test_infeasible_program_names_the_conflicting_constraints():
    # As above with one configuration and a $25/hour budget: X alone needs 10 GPUs (> 6), Y alone
    # costs $30 (> $25). Without the availability X costs $20; without the budget Y costs $30;
    # with two configurations 6 X + 4 Y cost $24: each of the three is part of the conflict.
    x, y = _option("X", 1, 2.0, (1.0,)), _option("Y", 1, 3.0, (1.0,))
    problem = _problem([x, y], [10.0], k=1, available_gpus=(("X", 6),), budget_usd_per_hour=25.0)
    assert run_program(build_program(problem)) is None
    err = _infeasible_error(problem, problem.options, 30)
    names = [name for name, _ in err.reasons]
    assert names == [
        "constraints.available_gpus.X (6 GPUs)",
        "constraints.budget_usd_per_hour ($25.00)",
        "search.max_configurations (1)",
    ]
    texts = dict(err.reasons)
    assert "$20.00/hour" in texts["constraints.available_gpus.X (6 GPUs)"]
    assert "$30.00/hour" in texts["constraints.budget_usd_per_hour ($25.00)"]
    assert "$24.00/hour" in texts["search.max_configurations (1)"]
    assert err.exit_code == 9


def test_a_lone_infeasible_constraint_is_named_alone():
    # One option, 2 GPUs per replica, 1 req/s, demand 5: 10 GPUs needed, 8 available. Only the
    # availability conflicts with the demand; min_replicas 2 plays no part.
    x = _option("X", 2, 1.0, (1.0,))
    problem = _problem([x], [5.0], available_gpus=(("X", 8),), min_replicas=2)
    assert constraint_groups(problem, problem.options) == ["available_gpus:X", "min_replicas"]
    err = _infeasible_error(problem, problem.options, 30)
    assert [n for n, _ in err.reasons] == ["constraints.available_gpus.X (8 GPUs)"]
    assert "still infeasible" not in str(err)
    # the constraint named once, its value with it (it was repeated inside the parentheses)
    assert str(err).endswith(": constraints.available_gpus.X (8 GPUs) conflicts with the demand (without it the cheapest plan costs $10.00/hour)")


# ------------------------------------------------------------------------------------------------
# budgets
# ------------------------------------------------------------------------------------------------


def test_two_conflicts_each_named_when_relaxing_one_leaves_the_other():
    # One option, 1 GPU at $2/hour serving 1 req/s; demand 10: 10 GPUs, $20/hour. Six GPUs
    # available and a $15 budget: each alone conflicts with the demand, so relaxing one leaves the
    # plan infeasible. The deletion filter finds one of them; the message must name both
    # (issue 14: "infeasibility names every constraint in the conflicting set").
    x = _option("X", 1, 2.0, (1.0,))
    problem = _problem([x], [10.0], available_gpus=(("X", 6),), budget_usd_per_hour=15.0)
    err = _infeasible_error(problem, problem.options, 30)
    assert [n for n, _ in err.reasons] == ["constraints.budget_usd_per_hour ($15.00)", "constraints.available_gpus.X (6 GPUs)"]
    assert all(text == "still infeasible without it alone" for _, text in err.reasons)
    assert "relax one of each: constraints.budget_usd_per_hour; constraints.available_gpus.X" in str(err)
    assert "conflict with the demand (constraints.budget_usd_per_hour: still infeasible without it alone; constraints.available_gpus.X: still" in str(err)


def test_hourly_budget_flattens_the_day_with_more_reserved_replicas():
    # One option, 1 req/s per replica, reserved $1/hour, on-demand $2/hour. Demand 1 req/s for 23
    # hours and 3 req/s for one. Reserving z: 24 z + 2 x (3 - z) in the peak hour + 2 x (1 - z)+ x 23.
    #   z=1: 24 + 4 = $28/day (peak hour $1 + $4 = $5)   z=2: 48 + 2 = $50 (peak hour $4)   z=3: $72
    # Cheapest: z=1. With budget_usd_per_hour 4 the peak hour must cost <= $4: z=2, $50/day.
    o = _option("X", 1, 2.0, (1.0,), reserved_usd=1.0)
    demand = [1.0] * 23 + [3.0]
    free = _solve(_problem([o], demand))
    assert free.pools[0].reserved == 1 and free.cost_usd_per_horizon == pytest.approx(28.0)
    capped = _problem([o], demand, budget_usd_per_hour=4.0)
    sol = _solve(capped)
    assert sol.pools[0].reserved == 2 and sol.cost_usd_per_horizon == pytest.approx(50.0)
    assert max(sol.cost_usd_by_hour) == pytest.approx(4.0)
    sp = single_plan(o, capped)
    assert sp.reserved_replicas == 2 and sp.cost_usd_per_horizon == pytest.approx(50.0)


def test_monthly_budget_below_the_cheapest_plan_is_infeasible_and_says_by_how_much():
    # 10 replicas x $2 = $20/hour = $20 x 730 = $14,600/month; a $14,000 budget cannot be met.
    x = _option("X", 1, 2.0, (1.0,))
    ok = _problem([x], [10.0], budget_usd_per_month=14_600.0)
    assert _solve(ok).cost_usd_per_horizon == pytest.approx(20.0)
    tight = _problem([x], [10.0], budget_usd_per_month=14_000.0)
    err = _infeasible_error(tight, tight.options, 30)
    assert [n for n, _ in err.reasons] == ["constraints.budget_usd_per_month ($14,000)"]
    assert "$20.00/hour" in str(err)
    sp = single_plan(x, tight)
    assert not sp.feasible and "costs $14,600/month > budget $14,000/month" in sp.reason


# ------------------------------------------------------------------------------------------------
# whole instances
# ------------------------------------------------------------------------------------------------


def test_whole_instances_are_paid_whole_and_a_mix_fills_the_remainder():
    # A: tp=2 replicas on 8-GPU instances at $1/GPU-hour ($8 per instance-hour), 1 req/s each.
    # B: the same configuration billed per GPU at $1.5. Demand 5 req/s = 5 replicas = 10 GPUs.
    #   A alone: ceil(10 / 8) = 2 instances = $16.   B alone: 10 GPUs x $1.5 = $15 -> B.
    #   Two configurations: 4 replicas on one instance ($8) + 1 on B (2 x $1.5 = $3) = $11.
    a = _option("X", 2, 1.0, (1.0,), instance_gpus=8, provider="nodes")
    b = _option("X", 2, 1.5, (1.0,), provider="flex")
    one = _problem([a, b], [5.0], k=1)
    sol = _solve(one)
    assert sol.cost_usd_per_horizon == pytest.approx(15.0) and sol.pools[0].option is b
    assert single_plan(a, one).cost_usd_per_horizon == pytest.approx(16.0)
    assert single_plan(a, one).gpus_by_hour == (16,)  # two whole instances rented
    two = _problem([a, b], [5.0], k=2)
    sol = _solve(two)
    assert sol.cost_usd_per_horizon == pytest.approx(11.0)
    by_option = {p.option.hourly.price.provider: p.running[0] for p in sol.pools}
    assert by_option == {"nodes": 4, "flex": 1}
    (offer, _, hourly), = [i for i in sol.instances if any(hourly for hourly in i[2])]
    assert offer.instance_gpus == 8 and hourly == (1,)


def test_replicas_sit_in_one_machine_unless_cross_node_candidates_span_them():
    # Issue 11: a replica of tp x pp GPUs goes only on an instance holding all of them. 1-GPU,
    # 4-GPU and 8-GPU offers at $1/GPU-hour:
    #   tp=8 fits neither the 4-GPU nor the 1-GPU instance (the old "per GPU in any count" rule let
    #   the 1-GPU offer hold it); tp=4, and tp=2 pp=2, fit the 4-GPU one; tp=4 pp=2 does not.
    #   A cross-node candidate (node_gpus = G) goes only on instances of exactly G GPUs, and only
    #   when it needs more than one of them.
    quad = Offer(price=_price("X", 1.0), instance_gpus=4, role="hourly")
    per_gpu = Offer(price=_price("X", 1.0), instance_gpus=1, role="hourly")
    node = Offer(price=_price("X", 1.0), instance_gpus=8, role="hourly")
    assert not offer_fits(quad, 8) and not offer_fits(per_gpu, 8) and offer_fits(node, 8)
    assert offer_fits(quad, 4) and offer_fits(quad, 2, 2) and not offer_fits(quad, 4, 2)
    assert offer_fits(per_gpu, 8, 1, node_gpus=1) and offer_fits(quad, 8, 1, node_gpus=4)
    assert not offer_fits(node, 8, 1, node_gpus=8) and not offer_fits(quad, 8, 1, node_gpus=1)
    # slots: tp=4 on 4 GPUs -> 4; tp=3 on 8 -> 8 / floor(8/3) = 4 (two replicas an instance);
    # tp=3 pp=2 (6 GPUs) on 8 -> 8 (one replica an instance); tp=2 pp=2 on 8 -> 4;
    # spanning: tp=8 over 4-GPU instances -> 2 instances = 8; tp=3 over 1-GPU -> 3
    assert slots_per_replica(quad, 4) == 4
    assert slots_per_replica(node, 3) == 4
    assert slots_per_replica(node, 3, 2) == 8
    assert slots_per_replica(node, 2, 2) == 4
    assert slots_per_replica(quad, 8, 1, node_gpus=4) == 8
    assert slots_per_replica(per_gpu, 3, 1, node_gpus=1) == 3
    # 3 replicas of tp=3 on 8-GPU instances: 2 per instance -> 2 instances -> $16 per hour
    o = Option(candidates=(_cand("X", 3, 1.0),), hourly=node, reserved=None)
    assert single_plan(o, _problem([o], [3.0])).cost_usd_per_horizon == pytest.approx(16.0)
    # 3 replicas of tp=8 spanning 4-GPU instances: 2 instances each -> 6 x $4 = $24 per hour
    span = Evaluated(
        config=Config(device="X", tp=8, pp=1, kv_dtype="bf16", weight_dtype="bf16", node_gpus=4),
        stage="feasible", reason=None, price=_price("X", 1.0), max_rate_rps=1.0, binding="tpot",
    )
    o = Option(candidates=(span,), hourly=quad, reserved=None)
    sp = single_plan(o, _problem([o], [3.0], allow_cross_node=True))
    assert sp.cost_usd_per_horizon == pytest.approx(24.0) and sp.gpus_by_hour == (24,)


def test_offers_for_a_shape_drop_the_instances_a_smaller_one_beats():
    # RunPod-style row [1, 2, 4, 8] at $2.69 and a Lambda-style 8-GPU offer at $2.50:
    #   tp=1 -> the 1-GPU instance ($2.69) and the 8-GPU $2.50 one (cheaper per GPU, kept);
    #   tp=2 -> 2-GPU at $2.69 (4- and 8-GPU at $2.69 are beaten by it), and the $2.50 8-GPU one;
    #   tp=8 -> only 8-GPU instances, the $2.69 one beaten by nothing smaller: both kept.
    from sizer.fleet import offers_for

    sizes = [Offer(price=_price("X", 2.69, "runpod"), instance_gpus=g, role="hourly") for g in (1, 2, 4, 8)]
    lam = Offer(price=_price("X", 2.50, "lambda"), instance_gpus=8, role="hourly")
    got = lambda tp: sorted((o.price.provider, o.instance_gpus) for o in offers_for(sizes + [lam], tp))  # noqa: E731
    assert got(1) == [("lambda", 8), ("runpod", 1)]
    assert got(2) == [("lambda", 8), ("runpod", 2)]
    assert got(8) == [("lambda", 8), ("runpod", 8)]


def test_offers_from_the_tiny_catalog():
    # BIG on demand: flex $2 per GPU, nodes $1.5 in 8-GPU instances, dear $1.75 in 8-GPU
    # instances (dominated by nodes), quads $1.6 in 4-GPU instances (kept: cheaper per GPU than
    # flex, smaller instances than nodes). constraints.instance_gpus forces every offer to 8.
    catalog = load_catalog(TINY)
    offers = device_offers(catalog, "BIG", provider="any", kind="on_demand", role="hourly", constraints=Constraints())
    assert [(o.price.provider, o.instance_gpus, o.usd_per_gpu_hour) for o in offers] == [("flex", 1, 2.0), ("quads", 4, 1.6), ("nodes", 8, 1.5)]
    forced = device_offers(catalog, "BIG", provider="any", kind="on_demand", role="hourly", constraints=Constraints(instance_gpus=(("BIG", 8),)))
    assert [(o.price.provider, o.instance_gpus) for o in forced] == [("nodes", 8)]
    assert offers[2].usd_per_instance_hour == pytest.approx(12.0)
    small = device_offers(catalog, "SMALL", provider="any", kind="reserved_1y", role="reserved", constraints=Constraints())
    assert [(o.price.provider, o.instance_gpus, o.usd_per_gpu_hour) for o in small] == [("flex", 1, 0.3)]


# ------------------------------------------------------------------------------------------------
# N+1 and minimum replicas
# ------------------------------------------------------------------------------------------------


def test_n_plus_1_changes_the_cheapest_configuration():
    # A: $10/replica-hour, 3 req/s; B: $18/replica-hour (2 GPUs x $9), 5 req/s; demand 10.
    #   plain: A ceil(10/3) = 4 -> $40; B 2 -> $36: B.
    #   N+1:   A needs 3 (n - 1) >= 10 -> 5 -> $50; B needs 5 (n - 1) >= 10 -> 3 -> $54: A.
    a, b = _option("A", 1, 10.0, (3.0,)), _option("B", 2, 9.0, (5.0,))
    assert _fleet(None, _solve(_problem([a, b], [10.0]))) == {("B", 0): 2}
    n1 = _problem([a, b], [10.0], redundancy="n_plus_1")
    sol = _solve(n1)
    assert _fleet(n1, sol) == {("A", 0): 5} and sol.cost_usd_per_horizon == pytest.approx(50.0)
    assert replicas_needed(10.0, 3.0, n1.constraints) == 5 and replicas_needed(10.0, 5.0, n1.constraints) == 3
    assert _closed_form_best(n1) == pytest.approx(50.0)


def test_n_plus_1_with_two_configurations_counts_the_loss_of_either_kind():
    # A: 4 req/s at $10; B: 1 req/s at $3; demand 8, two configurations, N+1.
    #   A alone: 4 (n - 1) >= 8 -> 3 x $10 = $30.  B alone: n - 1 >= 8 -> 9 x $3 = $27.
    #   1 A + k B: losing A leaves k >= 8 -> $10 + $24 = $34;  2 A + k B: losing an A leaves
    #   4 + k >= 8 -> k = 4: $20 + $12 = $32. Cheapest: 9 x B = $27.
    # Without N+1: 2 x A = $20.
    a, b = _option("A", 1, 10.0, (4.0,)), _option("B", 1, 3.0, (1.0,))
    assert _solve(_problem([a, b], [8.0], k=2)).cost_usd_per_horizon == pytest.approx(20.0)
    sol = _solve(_problem([a, b], [8.0], k=2, redundancy="n_plus_1"))
    assert _fleet(None, sol) == {("B", 0): 9} and sol.cost_usd_per_horizon == pytest.approx(27.0)


def test_min_replicas_favours_smaller_replicas():
    # A: 10 req/s at $10; B: 3 req/s at $4; demand 9.  A x 1 = $10 < B x 3 = $12: A.
    # min_replicas 3: A x 3 = $30 > B x 3 = $12: B.
    a, b = _option("A", 1, 10.0, (10.0,)), _option("B", 1, 4.0, (3.0,))
    assert _fleet(None, _solve(_problem([a, b], [9.0]))) == {("A", 0): 1}
    three = _problem([a, b], [9.0], min_replicas=3)
    sol = _solve(three)
    assert _fleet(three, sol) == {("B", 0): 3} and sol.cost_usd_per_horizon == pytest.approx(12.0)
    assert _closed_form_best(three) == pytest.approx(12.0)


# ------------------------------------------------------------------------------------------------
# mixed fleets by request size
# ------------------------------------------------------------------------------------------------


def test_a_mix_by_request_size_beats_the_best_single_configuration():
    # Buckets: prompts below / above the median, half the requests each. Demand 12 req/s:
    # 6 req/s of each size.
    #   A (big GPU, $10/replica-hour): 4 req/s on every size; 6 on short prompts; 3 on long ones.
    #   B (small GPU, $2/replica-hour): cannot serve the long prompts (nor so all sizes); 2 req/s
    #   on short prompts.
    # One configuration: A, ceil(12 / 4) = 3 -> $30 (or A split 1 short + 2 long -> $30).
    # Two configurations: short on B, ceil(6 / 2) = 3 -> $6; long on A, ceil(6 / 3) = 2 -> $20:
    # $26, a saving of 1 - 26/30 = 13.3 % against the best single configuration.
    ranges = (WHOLE, SizeRange(lo_pct=0.0, hi_pct=50.0), SizeRange(lo_pct=50.0, hi_pct=100.0))
    a = _option("A", 1, 10.0, (4.0, 6.0, 3.0))
    b = _option("B", 1, 2.0, (0.0, 2.0, 0.0))
    single = _problem([a, b], [12.0], k=1, ranges=ranges)
    assert _solve(single).cost_usd_per_horizon == pytest.approx(30.0)
    mix = _problem([a, b], [12.0], k=2, ranges=ranges)
    sol = _solve(mix)
    assert _fleet(mix, sol) == {("B", 1): 3, ("A", 2): 2}
    assert sol.cost_usd_per_horizon == pytest.approx(26.0)
    assert 1 - sol.cost_usd_per_horizon / _closed_form_best(mix) == pytest.approx(4 / 30)
    # each bucket's load is routed to the pools that serve it, within their capacity
    for p in sol.pools:
        assert p.load_rps[0] == pytest.approx(6.0)
        assert p.load_rps[0] <= p.option.rate(p.range_index) * p.running[0] + 1e-9


def test_buckets_can_be_served_when_no_configuration_serves_every_size():
    # A serves long prompts only (3 req/s, $10), B short ones only (2 req/s, $2); demand 12:
    # 6 req/s each: B x 3 ($6) + A x 2 ($20) = $26. With one configuration nothing serves.
    ranges = (WHOLE, SizeRange(lo_pct=0.0, hi_pct=50.0), SizeRange(lo_pct=50.0, hi_pct=100.0))
    a = _option("A", 1, 10.0, (0.0, 0.0, 3.0))
    b = _option("B", 1, 2.0, (0.0, 2.0, 0.0))
    assert run_program(build_program(_problem([a, b], [12.0], k=1, ranges=ranges))) is None
    sol = _solve(_problem([a, b], [12.0], k=2, ranges=ranges))
    assert sol.cost_usd_per_horizon == pytest.approx(26.0)
    assert not single_plan(a, _problem([a, b], [12.0], k=2, ranges=ranges)).feasible


def test_max_configurations_bounds_distinct_options():
    # demand 8: A (3 req/s, $10) alone 3 x $10 = $30; B (5 req/s, $18) alone 2 x $18 = $36;
    # one of each 3 + 5 = 8 for $28 only when two configurations are allowed.
    a, b = _option("A", 1, 10.0, (3.0,)), _option("B", 2, 9.0, (5.0,))
    assert _solve(_problem([a, b], [8.0], k=1)).cost_usd_per_horizon == pytest.approx(30.0)
    assert _solve(_problem([a, b], [8.0], k=2)).cost_usd_per_horizon == pytest.approx(28.0)


def test_dominated_options_are_left_out_without_changing_the_optimum():
    # On the same offer, C (2 GPUs, 2 req/s) is dominated by D (1 GPU, 2 req/s); E (2 GPUs,
    # 5 req/s) is not. The program over all three and over the survivors costs the same.
    c, d, e = _option("X", 2, 1.0, (2.0,)), _option("X", 1, 1.0, (2.0,)), _option("X", 2, 1.0, (5.0,))
    problem = _problem([c, d, e], [9.0], k=2)
    assert dominated(problem.options, 1, problem) == {0}
    full = _solve(problem).cost_usd_per_horizon
    pruned = run_program(build_program(problem, (d, e))).cost_usd_per_horizon
    # 2 E = 10 req/s for $4, or 1 E + 2 D = 9 req/s for $2 + $2 = $4; 5 D = $5.
    assert full == pytest.approx(pruned) == pytest.approx(4.0)


def test_equal_cost_fleets_go_to_the_one_with_more_headroom_per_gpu():
    """At 9 req/s on one $1/GPU-h offer: B (2 GPUs, 2.3 req/s) needs 4 replicas, A (1 GPU,
    1.2 req/s) 8: both $8/hour on 8 GPUs, but A carries 9.6 req/s against B's 9.2 (1.2 req/s per
    GPU against 1.15), so A is the fleet, though B comes first. Before, compare and the
    other-device rows took the earlier of equal-cost fleets (bf16 KV before fp8, tp=1 before
    tp=2) where solve's program keeps the one with more headroom (dominated): chat's H200-SXM row
    said 8 x tp=1 at 1.69 req/s each where 4 x tp=2 at 3.75 costs the same $28.72."""
    from sizer.fleet import cheapest, closest

    b, a = _option("X", 2, 1.0, (2.3,)), _option("X", 1, 1.0, (1.2,))
    problem = _problem([b, a], [9.0])
    plans = [single_plan(o, problem) for o in problem.options]
    assert [sp.cost_usd_per_horizon for sp in plans] == pytest.approx([8.0, 8.0])
    assert closest(plans).option is a and cheapest(plans).option is a
    # equal headroom per GPU: the earlier option, as before
    c, d = _option("X", 2, 1.0, (2.4,)), _option("X", 1, 1.0, (1.2,))
    problem = _problem([c, d], [9.0])
    assert closest([single_plan(o, problem) for o in problem.options]).option is c


# ------------------------------------------------------------------------------------------------
# daily profile, reserved base and on-demand burst
# ------------------------------------------------------------------------------------------------

# 16 hours at 1 req/s, 6 at 2, 2 at 3 (1 req/s per replica: that many replicas each hour)
PROFILE = [1.0] * 16 + [2.0] * 6 + [3.0] * 2


def test_reserved_base_and_on_demand_burst():
    # Reserved $1/replica-hour paid 24 hours; on demand $2.50 in the hours used. A replica level
    # used h hours a day is worth reserving when 24 x 1 < 2.5 h, h > 9.6: level 1 (24 h) yes,
    # level 2 (8 h) and 3 (2 h) no. z = 1: 24 + 2.5 x (6 x 1 + 2 x 2) = 24 + 25 = $49/day.
    #   z = 0: 2.5 x (16 + 12 + 6) = $85;  z = 2: 48 + 2.5 x 2 = $53;  z = 3: $72.
    o = _option("X", 1, 2.5, (1.0,), reserved_usd=1.0)
    problem = _problem([o], PROFILE)
    sol = _solve(problem)
    (pool,) = sol.pools
    assert pool.reserved == 1
    assert max(pool.hourly) == 2 and pool.hourly[:16] == (0,) * 16
    assert sol.cost_usd_per_horizon == pytest.approx(49.0)
    sp = single_plan(o, problem)
    assert (sp.reserved_replicas, sp.cost_usd_per_horizon) == (1, pytest.approx(49.0))
    # the month: $49 x 365 / 12 = $1,490.42; the mean hour $49 / 24
    assert sp.cost_usd_per_hour * 730 == pytest.approx(49 * 365 / 12)


def test_on_demand_only_and_reserved_only_days():
    # On demand only: pay replica-hours, 16 + 12 + 6 = 34 x $2.50 = $85. Reserved only: the peak
    # (3 replicas) every hour, 72 x $1 = $72.
    hourly = _option("X", 1, 2.5, (1.0,))
    reserved = _option("X", 1, 0.0, (1.0,), reserved_usd=1.0)
    assert reserved.hourly is None
    assert _solve(_problem([hourly], PROFILE)).cost_usd_per_horizon == pytest.approx(85.0)
    sol = _solve(_problem([reserved], PROFILE))
    assert sol.pools[0].reserved == 3 and sol.cost_usd_per_horizon == pytest.approx(72.0)


def test_reserved_whole_instances_with_on_demand_burst():
    # tp=2 replicas, 1 req/s each. Reserved in 8-GPU instances at $1/GPU-hour ($8/instance-hour)
    # and on demand per GPU at $3. Profile: 4 replicas for 20 hours, 6 for 4 hours.
    #   1 reserved instance (4 replicas) + 2 on-demand replicas (4 GPUs x $3 = $12) for 4 hours:
    #   24 x 8 + 4 x 12 = 192 + 48 = $240.   2 reserved instances: 24 x 16 = $384.
    #   none reserved: (20 x 8 + 4 x 12) GPU-hours x $3 = 208 x 3 = $624.
    o = _option("X", 2, 3.0, (1.0,), reserved_usd=1.0, reserved_instance_gpus=8)
    demand = [4.0] * 20 + [6.0] * 4
    problem = _problem([o], demand)
    sol = _solve(problem)
    assert sol.cost_usd_per_horizon == pytest.approx(240.0)
    assert sol.pools[0].reserved == 4 and max(sol.pools[0].hourly) == 2
    assert single_plan(o, problem).cost_usd_per_horizon == pytest.approx(240.0)


def test_availability_holds_in_every_hour_of_a_profile():
    # X: $1 per replica-hour, 1 req/s, 2 GPUs available; Y: $2, 1 req/s. Profile 1 req/s for 12
    # hours and 3 for 12: X covers 1 (night) and 2 of 3 (day), Y the third in daytime:
    # 12 x 1 + 12 x (2 + 2) = $60/day. Without the limit: X only, 12 + 36 = $48.
    x, y = _option("X", 1, 1.0, (1.0,)), _option("Y", 1, 2.0, (1.0,))
    demand = [1.0] * 12 + [3.0] * 12
    assert _solve(_problem([x, y], demand, k=2)).cost_usd_per_horizon == pytest.approx(48.0)
    sol = _solve(_problem([x, y], demand, k=2, available_gpus=(("X", 2),)))
    assert sol.cost_usd_per_horizon == pytest.approx(60.0)


def test_program_and_closed_form_agree_with_one_configuration_under_every_constraint():
    # A handful of options and constraint sets: with k = 1 the program's optimum is the closed
    # form's minimum over options.
    opts = [
        _option("A", 1, 10.0, (3.0,), reserved_usd=6.0),
        _option("B", 2, 9.0, (5.0,)),
        _option("C", 2, 1.0, (1.0,), instance_gpus=8),
    ]
    cases = [
        dict(),
        dict(redundancy="n_plus_1"),
        dict(min_replicas=4),
        dict(available_gpus=(("B", 6),)),
        dict(redundancy="n_plus_1", available_gpus=(("A", 3),), min_replicas=2),
    ]
    for demand in ([10.0], PROFILE, [7.0] * 8 + [2.0] * 16):
        for kw in cases:
            problem = _problem(opts, demand, **kw)
            sol = run_program(build_program(problem))
            best = [sp for sp in (single_plan(o, problem) for o in opts) if sp.feasible]
            if sol is None:
                assert not best, (demand, kw)
                continue
            assert sol.cost_usd_per_horizon == pytest.approx(min(sp.cost_usd_per_horizon for sp in best)), (demand, kw)


def test_constraints_are_named_in_the_program():
    x, y = _option("X", 1, 2.0, (1.0,), reserved_usd=1.0), _option("Y", 1, 3.0, (1.0,), instance_gpus=8)
    problem = _problem(
        [x, y],
        PROFILE,
        k=1,
        available_gpus=(("X", 6),),
        budget_usd_per_hour=100.0,
        budget_usd_per_month=10_000.0,
        min_replicas=2,
        redundancy="n_plus_1",
    )
    prob = build_program(problem).prob
    for name in (
        "demand_h00",
        "demand_h23",
        "configurations",
        "available_gpus_X_h00",
        "budget_usd_per_hour_h12",
        "budget_usd_per_month",
        "min_replicas_h05",
        "n_plus_1_0_h00",
        "instances_0_Y_p_8_h00",  # Y's whole 8-GPU instances, offer 0
    ):
        assert prob.get_constraint_by_name(name) is not None, name
    assert math.isfinite(_solve(problem).cost_usd_per_horizon)


def test_mixed_pricing_tries_only_the_reserved_counts_that_can_be_best():
    # fuzz seed 20261264788382: an option with a near-zero rate needed 49 billion replicas, and the
    # reserved count was enumerated 0..peak (366 GiB). Above ENUMERATED_RESERVED_COUNTS, the counts
    # near 0, peak and each hour's need (within one instance's GPUs) and an even grid are tried.
    # By hand: cost(z) = z + 2 sum_h max(n_h - z, 0) over needs (10, 10, 10^7) falls with slope
    # 1 - 6 = -5 below 10 and 1 - 2 = -1 above, so it is least at z = 10^7 (cost 10^7).
    import numpy as np

    from sizer.fleet import ENUMERATED_RESERVED_COUNTS, _reserved_counts

    need = np.array([10.0, 10.0, 1e7])
    z = _reserved_counts(need, int(need.max()), 8)
    assert len(z) < 3 * 17 + ENUMERATED_RESERVED_COUNTS + 2
    assert {0.0, 10.0, 1e7, 2.0, 18.0} <= set(z.tolist())

    def cost(zs, needs, reserved=1.0, hourly=2.0):
        zs = np.asarray(zs, dtype=float)[:, None]
        return reserved * zs[:, 0] + hourly * np.maximum(needs[None, :] - zs, 0.0).sum(axis=1)

    assert z[np.argmin(cost(z, need))] == 1e7
    small = np.array([10.0, 10.0, 5000.0])  # beyond the enumeration limit too, and small enough to check every count
    every = np.arange(5001.0)
    cand = _reserved_counts(small, 5000, 8)
    for r, h in ((1.0, 2.0), (3.0, 2.0), (1.5, 1.0), (0.9, 1.0)):
        assert cost(cand, small, r, h).min() == cost(every, small, r, h).min()
