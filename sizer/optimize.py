"""The integer program: choose configurations and replica counts that serve the demand at the
least cost per hour (hence per token, the demand being fixed).

Sets
    C       feasible candidates c = (device, TP, PP, KV dtype, weight dtype): they fit in memory and
            meet the latency bounds at some load (candidates.py)
Parameters
    p_c     USD per replica-hour = USD per GPU-hour of the device x GPUs per replica (tp x pp)
    r_c     requests/s one replica serves within every TTFT/TPOT bound and the memory ceiling
            (queueing.max_rate)
    g_c     GPUs per replica
    D       demand, requests/s (traffic.requests_per_s)
    k       most distinct configurations in the fleet (search.max_configurations, default 1)
    M_c     ceil(D / r_c): more replicas of c are never needed
Variables
    x_c in Z>=0     replicas of configuration c
    y_c in {0, 1}   configuration c is used
Objective
    minimise  sum_c p_c x_c + eps sum_c g_c x_c        eps = 1e-6 $/GPU-hour: among equal costs, fewer GPUs
Constraints
    demand:           sum_c r_c x_c >= D
    use_c:            x_c <= M_c y_c                      (for every c)
    configurations:   sum_c y_c <= k

Latency is non-linear in the plan, so it is enforced before the program, through r_c. With k = 1
the program separates by configuration (min over c of p_c ceil(D / r_c)); the best plan on each
other device is that minimum over the device's candidates, which the tests check against the
program itself. Cost per million output tokens = USD per hour / (3600 x D x E[output tokens]) x 1e6,
the seeds' cost per token.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import pulp

from .candidates import Evaluated, load_point
from .catalog import Catalog
from .engines import engine_policy
from .errors import InfeasibleError, SolverError
from .units import MILLION, SECONDS_PER_HOUR
from .workload import Workload

TIE_BREAK_USD_PER_GPU_HOUR = 1e-6


def usd_per_million_tokens(cost_usd_per_hour: float, tokens_per_s: float) -> float:
    """The seeds' cost per token, per million tokens: $/hour / (3600 x tokens/s) x 1e6."""
    return cost_usd_per_hour / (SECONDS_PER_HOUR * tokens_per_s) * MILLION


@dataclass(frozen=True, slots=True, kw_only=True)
class Deployment:
    """One configuration of the plan (or the best alternative on another device)."""

    candidate: Evaluated
    replicas: int
    load_rps_per_replica: float
    ttft_p99_s: float
    tpot_p99_s: float
    running_batch_mean: float
    cost_usd_per_hour: float
    cost_usd_per_million_tokens: float
    throughput_tokens_per_s: float  # output tokens/s one replica sustains at its largest load within the SLOs
    launch_command: str

    @property
    def gpus(self) -> int:
        return self.replicas * self.candidate.config.gpus


@dataclass(frozen=True, slots=True, kw_only=True)
class Rejected:
    device: str
    reason: str
    stage: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    status: str
    workload: Workload
    demand_rps: float
    output_tokens_per_s: float
    cost_usd_per_hour: float
    cost_usd_per_million_tokens: float
    deployments: tuple[Deployment, ...]
    alternatives: tuple[Deployment, ...]
    rejected: tuple[Rejected, ...]
    binding: str
    why: str
    solver: str
    candidates_evaluated: int
    candidates_feasible: int


def _make_solver(msg: bool = False, time_limit_s: float | None = 30.0) -> tuple[pulp.LpSolver, str]:
    """The one place a solver is named. HiGHS when highspy is installed, else PuLP's bundled CBC."""
    highs = pulp.HiGHS(msg=msg, timeLimit=time_limit_s)
    if highs.available():
        return highs, "HiGHS"
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PULP_CBC_CMD is deprecated", category=DeprecationWarning)
        return pulp.PULP_CBC_CMD(msg=msg, timeLimit=time_limit_s), "CBC"


def build_problem(feasible: list[Evaluated], demand_rps: float, max_configurations: int) -> tuple[pulp.LpProblem, dict[int, pulp.LpVariable]]:
    """The program of the module docstring over `feasible` (indexed by position)."""
    prob = pulp.LpProblem("sizer_min_cost", pulp.LpMinimize)
    x = {i: prob.add_variable(f"replicas_{i}", lowBound=0, cat="Integer") for i in range(len(feasible))}
    y = {i: prob.add_variable(f"use_{i}", cat="Binary") for i in range(len(feasible))}
    prob += pulp.lpSum(
        (e.usd_per_replica_hour + TIE_BREAK_USD_PER_GPU_HOUR * e.config.gpus) * x[i] for i, e in enumerate(feasible)
    )
    prob += (pulp.lpSum(e.max_rate_rps * x[i] for i, e in enumerate(feasible)) >= demand_rps, "demand")
    for i, e in enumerate(feasible):
        prob += (x[i] <= math.ceil(demand_rps / e.max_rate_rps) * y[i], f"use_{i}")
    prob += (pulp.lpSum(y.values()) <= max_configurations, "configurations")
    return prob, x


def solve_program(feasible: list[Evaluated], demand_rps: float, max_configurations: int) -> tuple[dict[int, int], str]:
    """Solve the program; return replicas per candidate index and the solver's name."""
    prob, x = build_problem(feasible, demand_rps, max_configurations)
    solver, name = _make_solver()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        status = prob.solve(solver)
    text = pulp.LpStatus.get(status, str(status))
    if text == "Infeasible":
        raise InfeasibleError("the integer program is infeasible")
    if text != "Optimal":
        raise SolverError(f"{name} returned status {text!r} for the sizing program")
    replicas = {i: int(round(v.value() or 0)) for i, v in x.items()}
    return {i: n for i, n in replicas.items() if n > 0}, name


def best_single(feasible: list[Evaluated], demand_rps: float) -> tuple[Evaluated, int] | None:
    """min over c of p_c ceil(D / r_c), ties to fewer GPUs then to the search order."""
    best = None
    for e in feasible:
        n = math.ceil(demand_rps / e.max_rate_rps - 1e-9)
        key = (round(n * e.usd_per_replica_hour, 9), n * e.config.gpus)
        if best is None or key < best[0]:
            best = (key, e, n)
    return None if best is None else (best[1], best[2])


_BINDING_TEXT = {
    "memory": "KV memory: the p99 running batch reaches the sequences the pool holds at the percentile context",
    "max_num_seqs": "max_num_seqs: the p99 running batch reaches the engine's sequence cap",
    "ttft": "TTFT bound: the prefill queue's tail reaches the TTFT percentile bound",
    "tpot": "TPOT bound: the step time of the p99 running batch reaches the TPOT percentile bound",
    "compute": "saturation: prefill and decode work fill the GPU",
}


def _deployment(workload: Workload, catalog: Catalog, e: Evaluated, replicas: int, load_rps: float) -> Deployment:
    point = load_point(workload, catalog, [e], [load_rps])
    cost = replicas * e.usd_per_replica_hour
    policy = engine_policy(workload.engine)
    cmd = policy.launch_command(
        workload.model,
        tp=e.config.tp,
        pp=e.config.pp,
        kv_dtype=e.config.kv_dtype,
        weight_dtype=e.config.weight_dtype,
        max_model_len=workload.max_model_len,
        # Capping the engine's sequence count at what the pool holds at the percentile context
        # makes vLLM admit against that percentile: no preemption below it.
        max_num_seqs=min(e.engine.max_num_seqs, e.memory.max_concurrency),
        gpu_memory_utilization=e.engine.gpu_memory_utilization,
        block_size_tokens=e.engine.block_size_tokens,
    )
    return Deployment(
        candidate=e,
        replicas=replicas,
        load_rps_per_replica=load_rps,
        ttft_p99_s=float(point.ttft_s["p99"][0]),
        tpot_p99_s=float(point.tpot_s["p99"][0]),
        running_batch_mean=float(point.running_mean[0]),
        cost_usd_per_hour=cost,
        cost_usd_per_million_tokens=usd_per_million_tokens(cost, workload.output_tokens_per_s),
        throughput_tokens_per_s=e.max_rate_rps * workload.traffic.output_tokens.mean,
        launch_command=cmd,
    )


def device_rejections(evaluated: list[Evaluated], devices: tuple[str, ...]) -> tuple[Rejected, ...]:
    """For each device with no feasible candidate, the reason of the candidate that got furthest
    (latest stage; then most GPUs; then the smallest formats, which need the least memory)."""
    out = []
    for device in devices:
        rows = [e for e in evaluated if e.config.device == device]
        if not rows or any(e.feasible for e in rows):
            continue
        furthest = max(
            rows,
            key=lambda e: (
                e.stage_rank,
                e.config.gpus if e.stage != "memory" else (e.memory.kv_pool_bytes_per_gpu if e.memory else 0.0),
                e.config.kv_dtype == "fp8",
                -rows.index(e),
            ),
        )
        out.append(Rejected(device=device, reason=f"{furthest.config.label()}: {furthest.reason}", stage=furthest.stage))
    return tuple(out)


def plan(workload: Workload, catalog: Catalog, evaluated: list[Evaluated]) -> Plan:
    """Solve the program over the feasible candidates and assemble the Plan."""
    demand = workload.traffic.requests_per_s
    feasible = [e for e in evaluated if e.feasible]
    rejected = device_rejections(evaluated, workload.search.devices)
    if not feasible:
        reasons = tuple((r.device, r.reason) for r in rejected)
        lines = "; ".join(f"{d}: {r}" for d, r in reasons)
        raise InfeasibleError(f"{workload.path}: no configuration can serve this workload. {lines}", reasons)

    replicas, solver = solve_program(feasible, demand, workload.search.max_configurations)
    total_rate = sum(feasible[i].max_rate_rps * n for i, n in replicas.items())
    deployments = []
    for i in sorted(replicas):
        e, n = feasible[i], replicas[i]
        share = e.max_rate_rps * n / total_rate  # load split in proportion to capacity
        deployments.append(_deployment(workload, catalog, e, n, demand * share / n))
    deployments.sort(key=lambda d: (-d.cost_usd_per_hour, d.candidate.config.label()))
    cost = sum(d.cost_usd_per_hour for d in deployments)

    chosen_devices = {d.candidate.config.device for d in deployments}
    alternatives = []
    for device in workload.search.devices:
        if device in chosen_devices:
            continue
        best = best_single([e for e in feasible if e.config.device == device], demand)
        if best is not None:
            e, n = best
            alternatives.append(_deployment(workload, catalog, e, n, demand / n))
    alternatives.sort(key=lambda d: (d.cost_usd_per_hour, d.candidate.config.device))

    main = deployments[0]
    c = main.candidate
    binding = c.binding or "compute"
    why = (
        f"{main.replicas} x {c.config.label()} at ${c.price.usd_per_gpu_hour:.2f}/GPU-hour ({c.price.label}): "
        f"each replica takes {c.max_rate_rps:.2f} req/s before {_BINDING_TEXT[binding]}; "
        f"{sum(d.replicas for d in deployments)} replica(s) cover {demand:g} req/s"
    )
    if alternatives:
        nxt = alternatives[0]
        why += (
            f". Next best: {nxt.replicas} x {nxt.candidate.config.label()} at ${nxt.cost_usd_per_hour:.2f}/hour "
            f"(+{(nxt.cost_usd_per_hour / cost - 1) * 100:.0f}%)"
        )
    return Plan(
        status="optimal",
        workload=workload,
        demand_rps=demand,
        output_tokens_per_s=workload.output_tokens_per_s,
        cost_usd_per_hour=cost,
        cost_usd_per_million_tokens=usd_per_million_tokens(cost, workload.output_tokens_per_s),
        deployments=tuple(deployments),
        alternatives=tuple(alternatives),
        rejected=rejected,
        binding=binding,
        why=why,
        solver=solver,
        candidates_evaluated=len(evaluated),
        candidates_feasible=len(feasible),
    )



def solve(workload: Workload, catalog: Catalog) -> Plan:
    """Evaluate every candidate of the workload's search space and solve the program."""
    from .candidates import evaluate_candidates

    check_context(workload)
    return plan(workload, catalog, evaluate_candidates(workload, catalog))


def check_context(workload: Workload) -> None:
    """The percentile context must fit the model's own context window."""
    limit = workload.model.max_position_embeddings
    if workload.context_tokens > limit:
        raise InfeasibleError(
            f"{workload.path}: the p{workload.memory.context_percentile:g} context "
            f"({workload.context_tokens:,} tokens = prompt + output at that percentile) exceeds "
            f"{workload.model.name}'s max_position_embeddings ({limit:,}); no configuration can serve it",
            tuple((d, f"context {workload.context_tokens:,} tokens > max_position_embeddings {limit:,}") for d in workload.search.devices),
        )


def write_lp(workload: Workload, catalog: Catalog, path: str) -> None:
    """Write the program (LP format) for inspection."""
    from .candidates import evaluate_candidates

    feasible = [e for e in evaluate_candidates(workload, catalog) if e.feasible]
    if not feasible:
        raise InfeasibleError(f"{workload.path}: no feasible candidate, no program to write")
    prob, _ = build_problem(feasible, workload.traffic.requests_per_s, workload.search.max_configurations)
    prob.writeLP(path)
