"""The integer program: which configurations, how many replicas of each in every hour, paid how,
serving which request sizes, at the least cost; and the Plan assembled from its solution.

Sets
    O       options o: a feasible configuration (device, TP, PP, KV dtype, weight dtype) with the
            offer its hourly replicas are paid at and, for pricing.kind mixed, the offer its
            reserved replicas are paid at (fleet.py); options another option dominates on the
            same offers are left out (fleet.dominated: the optimum is unchanged)
    R       size ranges r: 0 = every request; with search.size_buckets, one range per bucket of
            the prompt-length distribution, share s_r of the requests (fleet.size_ranges)
    H       hours h: one steady hour, or the 24 hours of traffic.profile
    F       offers f rented in whole instances of G_f GPUs (gpus_per_instance > 1; an offer of
            G = 1 is paid per GPU directly). An option is on an offer only when one instance holds
            its replica (G >= tp pp), or, with constraints.allow_cross_node, when it is a
            cross-node candidate spanning instances of exactly G GPUs (fleet.offers_for)
Parameters
    a_or    requests/s one replica of o serves on range r's traffic within every TTFT/TPOT bound
            and the memory ceiling (queueing.max_rate; 0: it cannot serve r)
    D_h     demand in hour h, requests/s
    g_o     GPUs per replica (tp x pp); q_of GPUs of instance slots one replica takes on f
    p_o     USD per GPU-hour of o's hourly offer; p'_o of its reserved offer
    A_d     GPUs of device d available (constraints.available_gpus)
    k       most distinct options (search.max_configurations)
    M_orh   max(ceil(D_h s_r / a_or) + [N+1], min_replicas): more replicas are never needed
Variables
    x_orh in Z>=0   replicas of o on range r paid by the hour in hour h
    z_or  in Z>=0   reserved replicas of o on range r, present (and paid) every hour
    n_orh = z_or + x_orh                        replicas running in hour h
    l_orh >= 0      requests/s routed to pool (o, r) in hour h (only when R has buckets)
    y_o   in {0,1}  option o is used
    u_orh in {0,1}  pool (o, r) runs in hour h (N+1 only; y_o when one hour and one range)
    i_fh, i'_f in Z>=0   instances of f rented by the hour in hour h / reserved
Cost of hour h
    C_h = sum_{hourly per-GPU offers} g_o p_o x_orh + sum_{reserved per-GPU offers} g_o p'_o z_or
        + sum_{hourly instance offers} G_f p_f i_fh + sum_{reserved instance offers} G_f p'_f i'_f
Objective
    minimise  sum_h C_h + eps sum_h GPUs_h        eps = 1e-6 $/GPU-hour: among equal costs, fewer GPUs
Constraints (each named)
    demand[_hH]             R = {0}: sum_o a_o n_oh >= D_h
    demand_bB_hH            buckets: l_o0h + sum_o l_obh / s_b = D_h for every bucket b (a pool on
                            range r carries each of its buckets in proportion s_b / s_r)
    serve[_bB][_hH]         sum of n_orh over the pools that can carry the hour's (bucket's) demand
                            >= 1 where that demand is > 0 (however small)
    capacity_O_rR_hH        l_orh <= a_or n_orh
    use_O...                x_orh <= M_orh y_o,  z_or <= max_h M_orh y_o
    configurations          sum_o y_o <= k
    n_plus_1_O..._hH        losing one replica of any running pool, its range still has capacity:
                            sum_o a_or n_orh - a_o'r u_o'rh >= (D_h, or sum_o l_orh) for every o'
    alive_O_rR_hH           n_orh <= M_orh u_orh
    instances_F_hH          sum_{o on f} q_of x_orh <= G_f i_fh  (and instances_reserved_F for z)
    available_gpus_D[_hH]   GPUs of device d rented in hour h (whole instances counted whole) <= A_d
    budget_usd_per_hour[_hH]  C_h <= constraints.budget_usd_per_hour
    budget_usd_per_month    sum_h C_h x (730 / |H|) <= constraints.budget_usd_per_month
    min_replicas[_hH]       sum_or n_orh >= constraints.min_replicas

Latency is non-linear in the plan, so it is enforced before the program, through a_or. With one
configuration (k = 1), one range and no constraints the program separates by option: min over o of
the cost of ceil(D / a_o) replicas; fleet.single_plan is that closed form under every constraint
(it gives the best plan on each other device and the best single configuration, against which a
mix's saving is reported), and the tests check it against the program. Cost per million output
tokens = USD over the horizon / (3600 x sum_h D_h x E[output tokens]) x 1e6: for a steady
workload, the seeds' $/hour / (3600 x tokens/s) x 1e6.
"""

from __future__ import annotations

import math
import re
import time
import warnings
from dataclasses import dataclass, field, replace
from datetime import date

import pulp

from .candidates import Evaluated, load_point
from .catalog import Catalog, Price
from .engines import engine_policy
from .deadline import Deadline, as_deadline
from .errors import LINE_CHARACTERS, InfeasibleError, SolverError, reason_lines
from .fleet import (
    FleetProblem,
    Offer,
    Option,
    SinglePlan,
    SizeRange,
    best_single_plans,
    cheapest,
    dominated,
    single_plan,
)
from .fleet import build_problem as build_fleet_problem
from .memory import KvFormat
from .purchasing import HOURS_PER_DAY, HOURS_PER_MONTH, Constraints
from .units import MILLION, SECONDS_PER_HOUR
from .workload import Workload

TIE_BREAK_USD_PER_GPU_HOUR = 1e-6
# The share of the time left the plan's own program may take: a program the solver cannot prove
# optimal takes all it is given, and the rest of the command (constraint re-solves, break-even,
# the evidence's rate searches) needs some of the limit too.
MAIN_SOLVE_SHARE = 0.8
NOT_COMPUTED = "not computed within --time-limit-s"
DEFAULT_TIME_LIMIT_S = 30.0


def usd_per_million_tokens(cost_usd_per_hour: float, tokens_per_s: float) -> float:
    """The seeds' cost per token, per million tokens: $/hour / (3600 x tokens/s) x 1e6."""
    return cost_usd_per_hour / (SECONDS_PER_HOUR * tokens_per_s) * MILLION


# ------------------------------------------------------------------------------------------------
# records
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Deployment:
    """One pool of the plan (or the best alternative on another device): one configuration on
    one size range, its replicas over the hours and how they are paid."""

    candidate: Evaluated  # evaluated on the pool's size range; price = the hourly offer's (or the reserved one's)
    replicas: int  # in the peak hour
    load_rps_per_replica: float  # in the hour where replicas are most loaded
    ttft_p99_s: float  # at the workload's slo.confidence, as the pool was sized (the model's own estimate at 0.5)
    tpot_p99_s: float
    running_batch_mean: float
    cost_usd_per_hour: float  # mean over the hours (the steady hour, or the day / 24)
    cost_usd_per_million_tokens: float  # this pool's cost over the workload's output tokens
    throughput_tokens_per_s: float  # output tokens/s one replica sustains at its largest load within the SLOs
    launch_command: str
    size_range: str = "all"
    size_share: float = 1.0
    reserved_replicas: int = 0
    hourly_replicas: tuple[int, ...] = ()  # per hour; () when every replica is reserved
    reserved_price: Price | None = None
    instance_gpus: int = 1  # GPUs per rented instance of the hourly (or reserved) offer
    kv_headroom_fraction: float = 0.0  # 1 - p99 running batch / sequences the pool admits, at the load
    instance_note: str | None = None  # the device's cheapest offer cannot hold the replica: which one is used instead
    evidence: object | None = None  # evidence.DeploymentEvidence: rows behind it, error bands (sizer solve)
    ttft_p99_s_model: float | None = None  # the model's own estimate (confidence 0.5); None: ttft_p99_s is it
    tpot_p99_s_model: float | None = None

    @property
    def price(self) -> Price:
        return self.candidate.price

    @property
    def gpus(self) -> int:
        return self.replicas * self.candidate.config.gpus

    @property
    def on_demand_peak_replicas(self) -> int:
        return max(self.hourly_replicas) if self.hourly_replicas else 0

    @property
    def cost_usd_per_day(self) -> float:
        return self.cost_usd_per_hour * HOURS_PER_DAY


@dataclass(frozen=True, slots=True, kw_only=True)
class Rejected:
    device: str
    reason: str
    stage: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HourRow:
    hour: int
    requests_per_s: float
    replicas: int
    reserved_replicas: int
    on_demand_replicas: int
    gpus: int
    cost_usd: float


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceUse:
    """Whole instances rented from one offer, and the GPUs in them no replica uses."""

    device: str
    provider: str
    kind: str
    instance_gpus: int
    usd_per_instance_hour: float
    instances: int  # in the peak hour
    idle_gpus: int  # in the peak hour
    idle_cost_usd_per_hour: float  # mean over the hours


@dataclass(frozen=True, slots=True, kw_only=True)
class ConstraintReport:
    """A purchasing constraint, and what it costs: the plan's cost without it (re-solved)."""

    name: str  # e.g. "constraints.available_gpus.H100-SXM"
    value: str
    binding: bool
    cost_without_usd_per_hour: float | None  # None: still infeasible, or not computed (note says which)
    note: str | None = None  # NOT_COMPUTED: the command's --time-limit-s ran out before this re-solve


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    status: str  # "optimal", or "feasible" (time limit reached before the proof of optimality)
    workload: Workload
    demand_rps: float  # the peak hour's
    output_tokens_per_s: float  # the peak hour's
    cost_usd_per_hour: float  # mean over the day (= the steady hour's cost without a profile)
    cost_usd_per_million_tokens: float  # effective: the day's cost over the day's output tokens
    deployments: tuple[Deployment, ...]
    alternatives: tuple[Deployment, ...]
    rejected: tuple[Rejected, ...]
    binding: str
    why: str
    solver: str
    candidates_evaluated: int
    candidates_feasible: int
    cost_usd_per_day: float = 0.0
    cost_usd_per_month: float = 0.0
    peak_cost_usd_per_hour: float = 0.0
    reserved_replicas: int = 0
    on_demand_peak_replicas: int = 0
    mix_saving_vs_single_fraction: float | None = 0.0  # None: no single configuration satisfies the constraints
    best_single_cost_usd_per_hour: float | None = None
    pricing_kind: str = "on_demand"
    provider: str = "any"
    schedule: tuple[HourRow, ...] = ()  # per hour, with a daily profile
    instances: tuple[InstanceUse, ...] = ()
    constraints: tuple[ConstraintReport, ...] = ()
    size_ranges: tuple[SizeRange, ...] = ()
    time_limit_s: float = DEFAULT_TIME_LIMIT_S
    options_in_program: int = 0
    as_of: date | None = None  # the date price ages are counted to
    break_even_usd_per_gpu_hour: float | None = None  # the plan's device's $/GPU-h at which the best plan without it costs the same
    break_even_device: str | None = None  # the device of that plan
    break_even_reserved_usd_per_gpu_hour: float | None = None  # mixed pricing: the reserved price at the same scale
    first_party: "FirstPartyPlan | None" = None  # the best plan on first-party prices, when the plan's own differ
    price_warnings: tuple[str, ...] = ()
    problem: FleetProblem | None = field(default=None, repr=False, compare=False)
    assessment: object | None = None  # evidence.PlanAssessment: cost band, confidence, p50 sizing (sizer solve)


PRICE_STALE_DAYS = 90  # a price older than this is flagged


@dataclass(frozen=True, slots=True, kw_only=True)
class FirstPartyPlan:
    """The best plan on first-party prices only (provider_page or user rows), for comparison."""

    cost_usd_per_hour: float
    cost_usd_per_million_tokens: float
    deployments: tuple[Deployment, ...]


# ------------------------------------------------------------------------------------------------
# the solver
# ------------------------------------------------------------------------------------------------


def _make_solver(msg: bool = False, time_limit_s: float | None = DEFAULT_TIME_LIMIT_S, warm_start: bool = False) -> tuple[pulp.LpSolver, str]:
    """The one place a solver is named. HiGHS when highspy is installed, else PuLP's bundled CBC
    (given the variables' initial values as a first incumbent when `warm_start`)."""
    highs = pulp.HiGHS(msg=msg, timeLimit=time_limit_s)
    if highs.available():
        return highs, "HiGHS"
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PULP_CBC_CMD is deprecated", category=DeprecationWarning)
        return pulp.PULP_CBC_CMD(msg=msg, timeLimit=time_limit_s, warmStart=warm_start), "CBC"


def solver_outcome(status: int, sol_status: int) -> str:
    """'optimal', 'feasible' (stopped, e.g. on the time limit, with a solution not proven
    optimal), 'infeasible', or the solver's own status text for anything else."""
    if sol_status == pulp.LpSolutionIntegerFeasible:
        return "feasible"
    if status == pulp.LpStatusOptimal and sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionNoSolutionFound):
        return "optimal"
    if status == pulp.LpStatusInfeasible or sol_status == pulp.LpSolutionInfeasible:
        return "infeasible"
    return pulp.LpStatus.get(status, str(status)).lower()


# ------------------------------------------------------------------------------------------------
# building the program
# ------------------------------------------------------------------------------------------------


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")


@dataclass(kw_only=True)
class FleetProgram:
    """The PuLP problem and its variables, indexed as in the module docstring."""

    prob: pulp.LpProblem
    problem: FleetProblem
    options: tuple[Option, ...]
    hourly: dict[tuple[int, int, int], pulp.LpVariable]
    reserved: dict[tuple[int, int], pulp.LpVariable]
    load: dict[tuple[int, int, int], pulp.LpVariable]
    use: dict[int, pulp.LpVariable]
    instances_hourly: dict[tuple[int, int], pulp.LpVariable]
    instances_reserved: dict[int, pulp.LpVariable]
    node_offers: list[Offer]
    groups: dict[str, list[str]]  # constraint group -> names of its constraints in the program
    alive: dict[tuple[int, int, int], pulp.LpVariable] = field(default_factory=dict)
    started: bool = False  # initial values set (set_start): the solver is warm-started


CONSTRAINT_GROUPS = ("available_gpus", "budget_usd_per_hour", "budget_usd_per_month", "min_replicas", "redundancy", "max_configurations")


def constraint_groups(problem: FleetProblem, options: tuple[Option, ...]) -> list[str]:
    """The groups of purchasing constraints the program holds, in a fixed order:
    'available_gpus:<device>' per listed device in the search, the budgets, min_replicas,
    redundancy, and max_configurations when it can bind."""
    c = problem.constraints
    devices = {o.device for o in options}
    out = [f"available_gpus:{d}" for d, _ in c.available_gpus if d in devices]
    if c.budget_usd_per_hour is not None:
        out.append("budget_usd_per_hour")
    if c.budget_usd_per_month is not None:
        out.append("budget_usd_per_month")
    if c.min_replicas:
        out.append("min_replicas")
    if c.n_plus_1:
        out.append("redundancy")
    if problem.max_configurations < len(options):
        out.append("max_configurations")
    return out


def build_program(problem: FleetProblem, options: tuple[Option, ...] | None = None, drop: frozenset[str] = frozenset()) -> FleetProgram:
    """The program of the module docstring over `options` (default: the problem's), leaving out
    the constraint groups in `drop` (used to find which constraints conflict or bind)."""
    opts = tuple(problem.options if options is None else options)
    c = problem.constraints
    hours = range(problem.hours)
    nr = len(problem.ranges)
    simple = problem.hours == 1 and nr == 1
    n1 = c.n_plus_1 and "redundancy" not in drop
    min_rep = c.min_replicas if "min_replicas" not in drop else 0
    groups: dict[str, list[str]] = {}

    def add(constraint, name: str, group: str | None = None) -> None:
        prob.addConstraint(constraint, name)
        if group:
            groups.setdefault(group, []).append(name)

    def hs(h: int) -> str:
        return "" if problem.hours == 1 else f"_h{h:02d}"

    def ps(o: int, r: int) -> str:
        return f"{o}" if nr == 1 else f"{o}_r{r}"

    prob = pulp.LpProblem("sizer_fleet", pulp.LpMinimize)
    pools = [(o, r) for o in range(len(opts)) for r in range(nr) if opts[o].rate(r) > 0]

    def bound(o: int, r: int, h: int) -> int:
        d = problem.demand_rps[h] * problem.ranges[r].share
        n = max(math.ceil(d / opts[o].rate(r) - 1e-9), 1) + (1 if n1 else 0) if d > 0 else 0
        return max(n, min_rep)

    hourly: dict[tuple[int, int, int], pulp.LpVariable] = {}
    reserved: dict[tuple[int, int], pulp.LpVariable] = {}
    for o, r in pools:
        if opts[o].reserved is not None:
            reserved[o, r] = prob.add_variable(f"reserved_{ps(o, r)}", lowBound=0, upBound=max(bound(o, r, h) for h in hours), cat="Integer")
        if opts[o].hourly is not None:
            for h in hours:
                hourly[o, r, h] = prob.add_variable(f"replicas_{ps(o, r)}{hs(h)}", lowBound=0, upBound=bound(o, r, h), cat="Integer")
    use = {o: prob.add_variable(f"use_{o}", cat="Binary") for o in sorted({o for o, _ in pools})}

    def running(o: int, r: int, h: int):
        terms = []
        if (o, r) in reserved:
            terms.append(reserved[o, r])
        if (o, r, h) in hourly:
            terms.append(hourly[o, r, h])
        return pulp.lpSum(terms)

    # instances of whole-instance offers, shared by every pool on the offer
    node_offers: list[Offer] = []
    for o in sorted(use):
        for f in opts[o].offers:
            if f.whole_instances and all(f.key != g.key for g in node_offers):
                node_offers.append(f)
    instances_hourly: dict[tuple[int, int], pulp.LpVariable] = {}
    instances_reserved: dict[int, pulp.LpVariable] = {}
    for fi, f in enumerate(node_offers):
        name = f"{fi}_{_safe(f.price.device)}_{_safe(f.price.provider)}_{f.instance_gpus}"
        if f.role == "reserved":
            instances_reserved[fi] = prob.add_variable(f"instances_reserved_{name}", lowBound=0, cat="Integer")
            members = [(o, r) for o, r in reserved if opts[o].reserved.key == f.key]
            add(
                pulp.lpSum(problem.slots(opts[o], f) * reserved[o, r] for o, r in members) <= f.instance_gpus * instances_reserved[fi],
                f"instances_reserved_{name}",
            )
        else:
            for h in hours:
                instances_hourly[fi, h] = prob.add_variable(f"instances_{name}{hs(h)}", lowBound=0, cat="Integer")
                members = [(o, r) for o, r in pools if (o, r, h) in hourly and opts[o].hourly.key == f.key]
                add(
                    pulp.lpSum(problem.slots(opts[o], f) * hourly[o, r, h] for o, r in members) <= f.instance_gpus * instances_hourly[fi, h],
                    f"instances_{name}{hs(h)}",
                )
    node_index = {f.key: fi for fi, f in enumerate(node_offers)}

    # cost and rented GPUs per hour, per device
    cost_by_hour = []
    gpus_by_hour_device: list[dict[str, list]] = []
    for h in hours:
        cost_terms, gpu_terms = [], {}
        for o, r in pools:
            opt = opts[o]
            if (o, r) in reserved and not opt.reserved.whole_instances:
                cost_terms.append(opt.gpus * opt.reserved.usd_per_gpu_hour * reserved[o, r])
                gpu_terms.setdefault(opt.device, []).append(opt.gpus * reserved[o, r])
            if (o, r, h) in hourly and not opt.hourly.whole_instances:
                cost_terms.append(opt.gpus * opt.hourly.usd_per_gpu_hour * hourly[o, r, h])
                gpu_terms.setdefault(opt.device, []).append(opt.gpus * hourly[o, r, h])
        for fi, f in enumerate(node_offers):
            var = instances_reserved[fi] if f.role == "reserved" else instances_hourly[fi, h]
            cost_terms.append(f.usd_per_instance_hour * var)
            gpu_terms.setdefault(f.price.device, []).append(f.instance_gpus * var)
        cost_by_hour.append(pulp.lpSum(cost_terms))
        gpus_by_hour_device.append(gpu_terms)
    prob += pulp.lpSum(cost_by_hour) + TIE_BREAK_USD_PER_GPU_HOUR * pulp.lpSum(
        t for per_device in gpus_by_hour_device for terms in per_device.values() for t in terms
    )

    # demand; and at least one replica where there is any ("serve": exact, replicas are integers):
    # a demand far below a replica's rate would otherwise pass as met by a fraction of a replica
    # within the solver's integer tolerance (1e-6 of a replica of 1,000 req/s is 1e-3 req/s)
    load: dict[tuple[int, int, int], pulp.LpVariable] = {}
    for h in hours:
        d = problem.demand_rps[h]
        if nr == 1:
            add(pulp.lpSum(opts[o].rate(0) * running(o, 0, h) for o, r in pools) >= d, "demand" if simple else f"demand{hs(h)}")
            if d > 0:
                add(pulp.lpSum(running(o, 0, h) for o, r in pools) >= 1, f"serve{hs(h)}")
            continue
        for o, r in pools:
            load[o, r, h] = prob.add_variable(f"load_{ps(o, r)}{hs(h)}", lowBound=0)
            add(load[o, r, h] <= opts[o].rate(r) * running(o, r, h), f"capacity_{ps(o, r)}{hs(h)}")
        for b in range(1, nr):
            terms = [load[o, r, h] * (1.0 / problem.ranges[r].share) for o, r in pools if r in (0, b)]
            add(pulp.lpSum(terms) == d, f"demand_b{b}{hs(h)}")
            if d * problem.ranges[b].share > 0:
                add(pulp.lpSum(running(o, r, h) for o, r in pools if r in (0, b)) >= 1, f"serve_b{b}{hs(h)}")

    # each option's replicas only when it is used; at most k options
    for o, r in pools:
        for h in hours:
            if (o, r, h) in hourly:
                add(hourly[o, r, h] <= bound(o, r, h) * use[o], f"use_{o}" if simple and opts[o].reserved is None else f"use_{ps(o, r)}{hs(h)}")
        if (o, r) in reserved:
            add(reserved[o, r] <= max(bound(o, r, h) for h in hours) * use[o], f"use_reserved_{ps(o, r)}")
    if "max_configurations" not in drop and problem.max_configurations < len(use):
        add(pulp.lpSum(use.values()) <= problem.max_configurations, "configurations", "max_configurations")

    # N+1: the loss of any one running replica leaves its range's demand covered
    alive_vars: dict[tuple[int, int, int], pulp.LpVariable] = {}
    if n1:
        for h in hours:
            for r in range(nr):
                members = [(o, rr) for o, rr in pools if rr == r]
                if not members:
                    continue
                capacity = pulp.lpSum(opts[o].rate(r) * running(o, r, h) for o, _ in members)
                need = problem.demand_rps[h] if nr == 1 else pulp.lpSum(load[o, r, h] for o, _ in members)
                for o, _ in members:
                    if simple and opts[o].reserved is None:
                        alive = use[o]
                    else:
                        alive = alive_vars[o, r, h] = prob.add_variable(f"alive_{ps(o, r)}{hs(h)}", cat="Binary")
                        add(running(o, r, h) <= bound(o, r, h) * alive, f"alive_{ps(o, r)}{hs(h)}", "redundancy")
                    add(capacity - opts[o].rate(r) * alive >= need, f"n_plus_1_{ps(o, r)}{hs(h)}", "redundancy")

    # purchasing constraints
    for device, available in c.available_gpus:
        group = f"available_gpus:{device}"
        if group in drop or not any(opts[o].device == device for o in use):
            continue
        for h in hours:
            terms = gpus_by_hour_device[h].get(device, [])
            add(pulp.lpSum(terms) <= available, f"available_gpus_{_safe(device)}{hs(h)}", group)
    if c.budget_usd_per_hour is not None and "budget_usd_per_hour" not in drop:
        for h in hours:
            add(cost_by_hour[h] <= c.budget_usd_per_hour, f"budget_usd_per_hour{hs(h)}", "budget_usd_per_hour")
    if c.budget_usd_per_month is not None and "budget_usd_per_month" not in drop:
        add(pulp.lpSum(cost_by_hour) <= c.budget_usd_per_month * problem.months_per_horizon, "budget_usd_per_month", "budget_usd_per_month")
    if min_rep:
        for h in hours:
            add(pulp.lpSum(running(o, r, h) for o, r in pools) >= min_rep, f"min_replicas{hs(h)}", "min_replicas")

    return FleetProgram(
        prob=prob,
        problem=problem,
        options=opts,
        hourly=hourly,
        reserved=reserved,
        load=load,
        use=use,
        instances_hourly=instances_hourly,
        instances_reserved=instances_reserved,
        node_offers=node_offers,
        groups=groups,
        alive=alive_vars,
    )


# ------------------------------------------------------------------------------------------------
# solving
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Pool:
    option: Option
    range_index: int
    reserved: int
    hourly: tuple[int, ...]  # per hour (zeros when the option has no hourly offer)
    load_rps: tuple[float, ...]  # per hour

    @property
    def running(self) -> tuple[int, ...]:
        return tuple(self.reserved + x for x in self.hourly)


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetSolution:
    status: str  # "optimal" or "feasible"
    solver: str
    pools: tuple[Pool, ...]
    cost_usd_by_hour: tuple[float, ...]
    instances: tuple[tuple[Offer, int, tuple[int, ...]], ...]  # (offer, reserved instances, hourly instances per hour)

    @property
    def cost_usd_per_horizon(self) -> float:
        return sum(self.cost_usd_by_hour)


def _value(v) -> float:
    x = v.value() if hasattr(v, "value") else v
    return float(x or 0.0)


def set_start(program: FleetProgram, pools: list[Pool] | tuple[Pool, ...]) -> bool:
    """Give the solver a feasible first solution (a single-configuration plan, or the plan a
    relaxed program started from): every variable's initial value. False, and no start, when a
    pool's option is not in the program or the solution is not feasible in it: the replica bounds
    M_orh of a program without min_replicas or redundancy are below the replicas a plan made
    under them holds, and a start outside the bounds is no start at all (PuLP refuses it)."""
    problem, opts = program.problem, program.options
    index = {id(o): i for i, o in enumerate(opts)}
    if any(id(p.option) not in index for p in pools):
        return False
    for v in program.prob.variables():
        v.setInitialValue(0)
    if not _set_start_values(program, pools, index):
        for v in program.prob.variables():
            v.varValue = None
        program.started = False
        return False
    program.started = True
    return True


def _set_start_values(program: FleetProgram, pools, index: dict[int, int]) -> bool:
    """The initial values of set_start; False when one is out of its variable's bounds or the
    values break a constraint of the program."""
    problem, opts = program.problem, program.options

    def put(var, value) -> bool:
        return var.setInitialValue(value, check=False)
    hours = range(problem.hours)
    by_pool = {(index[id(p.option)], p.range_index): p for p in pools}
    ok = True
    for (o, r), p in by_pool.items():
        ok &= put(program.use[o], 1)
        if (o, r) in program.reserved:
            ok &= put(program.reserved[o, r], p.reserved)
        for h in hours:
            if (o, r, h) in program.hourly:
                ok &= put(program.hourly[o, r, h], p.hourly[h])
            if (o, r, h) in program.load:
                ok &= put(program.load[o, r, h], p.load_rps[h])
            alive = program.alive.get((o, r, h))
            if alive is not None:
                ok &= put(alive, 1 if p.running[h] > 0 else 0)
    for fi, f in enumerate(program.node_offers):
        def used(h: int) -> float:
            total = 0.0
            for (o, r), p in by_pool.items():
                offer = opts[o].reserved if f.role == "reserved" else opts[o].hourly
                if offer is not None and offer.key == f.key:
                    total += (p.reserved if f.role == "reserved" else p.hourly[h]) * problem.slots(opts[o], offer)
            return total

        if f.role == "reserved":
            ok &= put(program.instances_reserved[fi], math.ceil(used(0) / f.instance_gpus - 1e-9))
        else:
            for h in hours:
                ok &= put(program.instances_hourly[fi, h], math.ceil(used(h) / f.instance_gpus - 1e-9))
    return ok and program.prob.valid(eps=1e-6)


def single_pools(problem: FleetProblem, sp: SinglePlan) -> list[Pool]:
    """A single-configuration plan as the pools of a solution (every request size, range 0)."""
    return [
        Pool(
            option=sp.option,
            range_index=0,
            reserved=sp.reserved_replicas,
            hourly=sp.hourly_replicas,
            load_rps=tuple(problem.demand_rps),
        )
    ]


def run_program(program: FleetProgram, time_limit_s: float | Deadline | None = DEFAULT_TIME_LIMIT_S, what: str = "the sizing program") -> FleetSolution | None:
    """Solve within `time_limit_s` (seconds, or what is left of a command's Deadline); None when
    the program is infeasible. SolverError for any other non-optimal status without a solution,
    and when the deadline has passed before the solver could start."""
    given = time_limit_s.seconds if isinstance(time_limit_s, Deadline) else time_limit_s
    if isinstance(time_limit_s, Deadline):
        time_limit_s = time_limit_s.solver_limit_s(what)
    limit = f" within --time-limit-s {given:g}" if given else ""
    solver, name = _make_solver(time_limit_s=time_limit_s, warm_start=program.started)
    started = time.monotonic()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        try:
            status = program.prob.solve(solver)
        except pulp.PulpSolverError as exc:
            # CBC given a fraction of a second can exit before it writes a solution file
            raise SolverError(f"{name} exited without a result{limit} for {what} (no solution file; `sizer --debug` shows PuLP's message)") from exc
    outcome = solver_outcome(status, program.prob.sol_status)
    if outcome == "infeasible":
        if program.prob.sol_status != pulp.LpSolutionInfeasible and time_limit_s and time.monotonic() - started >= time_limit_s:
            # CBC stopped on its time limit writes 'Integer infeasible' (status infeasible, no
            # solution) even for a program with a feasible first incumbent: a stop, not a proof
            raise SolverError(f"{name} reached the time limit{limit} with neither a plan nor a proof that none exists, for {what}")
        return None
    if outcome not in ("optimal", "feasible"):
        raise SolverError(f"{name} found no plan{limit}: status {outcome!r} for {what}")
    return _extract(program, outcome, name)


def _extract(program: FleetProgram, outcome: str, solver: str) -> FleetSolution:
    problem, opts = program.problem, program.options
    hours = range(problem.hours)
    pools = []
    for o, r in sorted({(o, r) for o, r, _ in program.hourly} | set(program.reserved)):
        z = int(round(_value(program.reserved.get((o, r), 0))))
        x = tuple(int(round(_value(program.hourly.get((o, r, h), 0)))) for h in hours)
        if z == 0 and not any(x):
            continue
        pools.append((o, r, z, x))
    # loads: the program's routing on buckets; else each hour's demand split in proportion to capacity
    out = []
    for o, r, z, x in pools:
        if program.load:
            loads = tuple(_value(program.load[o, r, h]) for h in hours)
        else:
            loads = []
            for h in hours:
                total = sum(opts[oo].rate(0) * (zz + xx[h]) for oo, _, zz, xx in pools)
                loads.append(problem.demand_rps[h] * opts[o].rate(0) * (z + x[h]) / total if total > 0 else 0.0)
            loads = tuple(loads)
        out.append(Pool(option=opts[o], range_index=r, reserved=z, hourly=x, load_rps=loads))
    instances = []
    for fi, f in enumerate(program.node_offers):
        if f.role == "reserved":
            n = int(round(_value(program.instances_reserved[fi])))
            instances.append((f, n, tuple(0 for _ in hours)))
        else:
            instances.append((f, 0, tuple(int(round(_value(program.instances_hourly[fi, h]))) for h in hours)))
    cost = tuple(_cost_of_hour(problem, out, instances, h) for h in hours)
    return FleetSolution(status=outcome, solver=solver, pools=tuple(out), cost_usd_by_hour=cost, instances=tuple(instances))


def _cost_of_hour(problem: FleetProblem, pools: list[Pool], instances, h: int) -> float:
    """C_h recomputed from the integer solution (not the solver's floating objective)."""
    total = 0.0
    for p in pools:
        opt = p.option
        if opt.reserved is not None and not opt.reserved.whole_instances:
            total += p.reserved * opt.gpus * opt.reserved.usd_per_gpu_hour
        if opt.hourly is not None and not opt.hourly.whole_instances:
            total += p.hourly[h] * opt.gpus * opt.hourly.usd_per_gpu_hour
    for f, reserved, hourly in instances:
        total += (reserved if f.role == "reserved" else hourly[h]) * f.usd_per_instance_hour
    return total


def program_options(problem: FleetProblem) -> tuple[Option, ...]:
    """The options the program is built over: the problem's, less the dominated ones."""
    drop = dominated(problem.options, len(problem.ranges), problem)
    return tuple(o for i, o in enumerate(problem.options) if i not in drop)


# ------------------------------------------------------------------------------------------------
# the simple program of a list of candidates (kept for tests and library users)
# ------------------------------------------------------------------------------------------------


def _simple_problem(feasible: list[Evaluated], demand_rps: float, max_configurations: int, constraints: Constraints | None = None) -> FleetProblem:
    options = tuple(
        Option(candidates=(e,), hourly=Offer(price=e.price, instance_gpus=1, role="hourly"), reserved=None) for e in feasible
    )
    from .fleet import SizeRange as _Range

    return FleetProblem(
        workload=None,
        options=options,
        ranges=(_Range(lo_pct=0.0, hi_pct=100.0),),
        range_workloads=(),
        demand_rps=(demand_rps,),
        max_configurations=max_configurations,
        constraints=constraints or Constraints(),
    )


def build_problem(feasible: list[Evaluated], demand_rps: float, max_configurations: int) -> tuple[pulp.LpProblem, dict[int, pulp.LpVariable]]:
    """The program over `feasible` (indexed by position), one steady hour, every request size,
    each candidate billed per GPU at its own price. Returns the problem and the replica variables."""
    program = build_program(_simple_problem(feasible, demand_rps, max_configurations))
    return program.prob, {o: program.hourly[o, 0, 0] for o, _, _ in program.hourly}


def solve_program(feasible: list[Evaluated], demand_rps: float, max_configurations: int) -> tuple[dict[int, int], str]:
    """Solve the program of build_problem; return replicas per candidate index and the solver's name."""
    program = build_program(_simple_problem(feasible, demand_rps, max_configurations))
    solution = run_program(program)
    if solution is None:
        raise InfeasibleError("the integer program is infeasible")
    index = {id(o): i for i, o in enumerate(program.options)}
    return {index[id(p.option)]: p.hourly[0] for p in solution.pools}, solution.solver


def best_single(feasible: list[Evaluated], demand_rps: float) -> tuple[Evaluated, int] | None:
    """min over c of p_c ceil(D / r_c), ties to fewer GPUs then to the search order."""
    best = None
    for e in feasible:
        n = math.ceil(demand_rps / e.max_rate_rps - 1e-9)
        key = (round(n * e.usd_per_replica_hour, 9), n * e.config.gpus)
        if best is None or key < best[0]:
            best = (key, e, n)
    return None if best is None else (best[1], best[2])


# ------------------------------------------------------------------------------------------------
# infeasibility and binding constraints
# ------------------------------------------------------------------------------------------------


def constraint_label(problem: FleetProblem, group: str) -> str:
    c = problem.constraints
    if group.startswith("available_gpus:"):
        device = group.split(":", 1)[1]
        return f"constraints.available_gpus.{device} ({c.available(device)} GPUs)"
    if group == "budget_usd_per_hour":
        return f"constraints.budget_usd_per_hour (${c.budget_usd_per_hour:,.2f})"
    if group == "budget_usd_per_month":
        return f"constraints.budget_usd_per_month (${c.budget_usd_per_month:,.0f})"
    if group == "min_replicas":
        return f"constraints.min_replicas ({c.min_replicas})"
    if group == "redundancy":
        return f"constraints.redundancy ({c.redundancy})"
    return f"search.max_configurations ({problem.max_configurations})"


def _infeasible_without(problem: FleetProblem, options: tuple[Option, ...], drop: frozenset[str], deadline: Deadline) -> bool | None:
    """Whether the program stays infeasible with the groups in `drop` left out; None when the
    deadline leaves no time to tell (or the solver stops without an answer)."""
    if deadline.expired():
        return None
    try:
        return run_program(build_program(problem, options, drop), deadline, "the search for the conflicting constraints") is None
    except SolverError:
        return None


def conflicting_constraints(
    problem: FleetProblem, options: tuple[Option, ...], time_limit_s: float | Deadline | None, keep_out: frozenset[str] = frozenset()
) -> tuple[list[str], bool]:
    """A smallest set of constraint groups that together with the demand admit no plan, the
    groups in `keep_out` left out (deletion filter: drop each group in turn; keep it out when the
    rest stay infeasible). Returns (the set, whether it is proven smallest: False when the
    deadline stopped the filter, and the set is then a conflicting one, not reduced further)."""
    deadline = time_limit_s if isinstance(time_limit_s, Deadline) else Deadline(time_limit_s)
    groups = [g for g in constraint_groups(problem, options) if g not in keep_out]
    conflict = list(groups)
    for g in groups:
        trial = [x for x in conflict if x != g]
        infeasible = _infeasible_without(problem, options, keep_out | frozenset(x for x in groups if x not in trial), deadline)
        if infeasible is None:
            return conflict, False
        if infeasible:
            conflict = trial
    return conflict, True


def conflict_sets(problem: FleetProblem, options: tuple[Option, ...], deadline: Deadline) -> tuple[list[list[str]], bool]:
    """Every constraint that must be relaxed for a plan to exist: a smallest conflicting set, then
    with it left out another, until the rest admit a plan (relaxing one constraint of one set
    leaves the others infeasible: each set must give). Returns (the sets, whether each is proven
    smallest and the rest proven feasible within the deadline)."""
    sets: list[list[str]] = []
    out: frozenset[str] = frozenset()
    complete = True
    while True:
        conflict, proven = conflicting_constraints(problem, options, deadline, out)
        if not conflict:
            break
        sets.append(conflict)
        complete &= proven
        out |= frozenset(conflict)
        if not proven:
            break
        if _infeasible_without(problem, options, out, deadline) is not True:  # the rest admit a plan (or no time to tell)
            complete &= not deadline.expired()
            break
    return sets, complete


def _infeasible_error(problem: FleetProblem, options: tuple[Option, ...], time_limit_s: float | Deadline | None) -> InfeasibleError:
    deadline = time_limit_s if isinstance(time_limit_s, Deadline) else Deadline(time_limit_s)
    sets, complete = conflict_sets(problem, options, deadline)
    w = problem.workload
    where = w.path if w is not None else "workload"
    peak = max(problem.demand_rps)
    demand = f"{peak:g} req/s" + (" at the peak hour" if problem.hours > 1 else "")
    if not sets:
        return InfeasibleError(f"{where}: the sizing program is infeasible for {demand}", ())
    conflict = [g for s in sets for g in s]
    reasons = []
    for g in conflict:
        relaxed = None
        if not deadline.expired():
            try:
                relaxed = run_program(build_program(problem, options, frozenset({g})), deadline, "the cost of relaxing each conflicting constraint")
                text = "still infeasible without it alone" if relaxed is None else f"without it the cheapest plan costs ${relaxed.cost_usd_per_horizon / problem.hours:,.2f}/hour"
            except SolverError:
                text = "its cost not computed within --time-limit-s"
        else:
            text = "its cost not computed within --time-limit-s"
        reasons.append((constraint_label(problem, g), text))
    names = " and ".join(r[0] for r in reasons)
    verb = "conflicts" if len(reasons) == 1 else "conflict"
    # each constraint's value is said once, in the names; the details name it short (one: not again)
    detail = reasons[0][1] if len(reasons) == 1 else "; ".join(f"{n.split(' (', 1)[0]}: {t}" for n, t in reasons)
    if len(sets) > 1:
        groups = "; ".join(" + ".join(constraint_label(problem, g).split(" (", 1)[0] for g in s) for s in sets)
        detail += f"; relax one of each: {groups}"
    if not complete:
        detail += "; the search for the smallest set stopped at --time-limit-s, so this set may hold more than it needs"
    return InfeasibleError(f"{where}: no plan serves {demand}: {names} {verb} with the demand ({detail})", tuple(reasons))


def binding_report(
    problem: FleetProblem, options: tuple[Option, ...], cost_usd_per_hour: float, time_limit_s: float | Deadline | None, start: tuple[Pool, ...] = ()
) -> tuple[ConstraintReport, ...]:
    """Each purchasing constraint the workload sets, re-solved without it: binding when the plan
    would cost less. (max_configurations is reported only when the workload sets it above 1.)
    Within the command's deadline: a constraint the time left does not reach is reported with
    note "not computed within --time-limit-s"."""
    deadline = time_limit_s if isinstance(time_limit_s, Deadline) else Deadline(time_limit_s)
    c = problem.constraints
    out = []
    for g in constraint_groups(problem, options):
        if g == "max_configurations":
            continue
        label = constraint_label(problem, g)
        name, value = label.split(" (", 1)
        program = build_program(problem, options, frozenset({g}))
        if start:
            set_start(program, start)  # the plan is feasible without the constraint too
        try:
            relaxed = None if deadline.expired() else run_program(program, deadline, f"the re-solve without {name}")
        except SolverError:
            relaxed = None
        if relaxed is None:
            # the plan is a solution without the constraint too: no answer means no time left
            out.append(ConstraintReport(name=name, value=value.rstrip(")"), binding=False, cost_without_usd_per_hour=None, note=NOT_COMPUTED))
            continue
        without = relaxed.cost_usd_per_horizon / problem.hours
        binding = without < cost_usd_per_hour * (1 - 1e-9) - 1e-9
        note = None if relaxed.status == "optimal" else "cost without it not proven optimal within --time-limit-s"
        out.append(ConstraintReport(name=name, value=value.rstrip(")"), binding=binding, cost_without_usd_per_hour=without, note=note))
    # constraints that shape the problem without a row of their own
    if c.allow_cross_node:
        out.append(ConstraintReport(name="constraints.allow_cross_node", value="true", binding=False, cost_without_usd_per_hour=None))
    for device, g in c.instance_gpus:
        out.append(ConstraintReport(name=f"constraints.instance_gpus.{device}", value=f"{g} GPUs", binding=False, cost_without_usd_per_hour=None))
    return tuple(out)


# ------------------------------------------------------------------------------------------------
# the plan
# ------------------------------------------------------------------------------------------------


_BINDING_TEXT = {
    "memory": "KV memory: the p99 running batch reaches the sequences the pool holds at the percentile context",
    "max_num_seqs": "max_num_seqs: the p99 running batch reaches the engine's sequence cap",
    "ttft": "TTFT bound: the prefill queue's tail reaches the TTFT percentile bound",
    "tpot": "TPOT bound: the step time of the p99 running batch reaches the TPOT percentile bound",
    "compute": "saturation: prefill and decode work fill the GPU",
}


def _concurrency(e: Evaluated) -> int:
    value = getattr(e, "max_concurrency", None)
    if value is None:
        value = e.memory.max_concurrency
    return int(value)


def launch_max_num_seqs(e: Evaluated) -> int:
    """The --max-num-seqs the launch line sets: the engine's cap, lowered to what admission lets
    the pool hold, so that the engine admits by the workload's policy (at the percentile
    context: no preemption below it). `sizer simulate` runs with the same figure."""
    return min(e.engine.max_num_seqs, _concurrency(e))


def _launch_command(workload: Workload, e: Evaluated) -> str:
    policy = engine_policy(workload.engine)
    return policy.launch_command(
        workload.model,
        tp=e.config.tp,
        pp=e.config.pp,
        kv=KvFormat.of(e.config.kv_dtype),
        weight_dtype=e.config.weight_dtype,
        settings=e.engine,
        max_num_seqs=launch_max_num_seqs(e),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class DeploymentSpec:
    """What a Deployment is built from; the latencies come in one batch per workload."""

    workload: Workload  # the pool's size range
    candidate: Evaluated
    replicas: int
    load_rps: float  # per replica
    cost_usd_per_hour: float | None = None
    size: SizeRange | None = None
    reserved_replicas: int = 0
    hourly_replicas: tuple[int, ...] = ()
    reserved_price: Price | None = None
    instance_gpus: int = 1
    tokens_per_s: float | None = None
    instance_note: str | None = None


def build_deployments(catalog: Catalog, specs: list[DeploymentSpec]) -> list[Deployment]:
    """Deployments of `specs`, the latency of each at its load from the queueing model, one
    vectorised evaluation per size-range workload (not one per deployment)."""
    groups: dict[int, list[int]] = {}
    for i, spec in enumerate(specs):
        groups.setdefault(id(spec.workload), []).append(i)
    at: dict[int, tuple] = {}
    for members in groups.values():
        w = specs[members[0]].workload
        cands, loads = [specs[i].candidate for i in members], [specs[i].load_rps for i in members]
        point = load_point(w, catalog, cands, loads)
        model = load_point(w, catalog, cands, loads, at_confidence=False) if w.slo.confidence != 0.5 else None
        for j, i in enumerate(members):
            at[i] = (point, j, model)
    return [_deployment_at(spec, *at[i]) for i, spec in enumerate(specs)]


def _deployment_at(spec: DeploymentSpec, point, j: int, model=None) -> Deployment:
    """`point`: the latencies at the workload's confidence; `model`: the model's own (None at 0.5)."""
    e, workload = spec.candidate, spec.workload
    cost = spec.replicas * e.usd_per_replica_hour if spec.cost_usd_per_hour is None else spec.cost_usd_per_hour
    concurrency = _concurrency(e)
    headroom = 1 - float(point.running_tail[j]) / concurrency if concurrency > 0 else 0.0
    return Deployment(
        candidate=e,
        replicas=spec.replicas,
        load_rps_per_replica=spec.load_rps,
        ttft_p99_s=float(point.ttft_s["p99"][j]),
        tpot_p99_s=float(point.tpot_s["p99"][j]),
        running_batch_mean=float(point.running_mean[j]),
        cost_usd_per_hour=cost,
        cost_usd_per_million_tokens=usd_per_million_tokens(cost, spec.tokens_per_s or workload.output_tokens_per_s),
        throughput_tokens_per_s=e.max_rate_rps * workload.traffic.output_tokens.mean,
        launch_command=_launch_command(workload, e),
        size_range=spec.size.label if spec.size else "all",
        size_share=spec.size.share if spec.size else 1.0,
        reserved_replicas=spec.reserved_replicas,
        hourly_replicas=spec.hourly_replicas,
        reserved_price=spec.reserved_price,
        instance_gpus=spec.instance_gpus,
        kv_headroom_fraction=headroom,
        instance_note=spec.instance_note,
        ttft_p99_s_model=None if model is None else float(model.ttft_s["p99"][j]),
        tpot_p99_s_model=None if model is None else float(model.tpot_s["p99"][j]),
    )


def _priced(option: Option, e: Evaluated) -> Evaluated:
    """The candidate with the price of the offer its replicas are paid at (the hourly one)."""
    offer = option.hourly or option.reserved
    return replace(e, price=offer.price) if e.price != offer.price else e


def _mean_tokens_per_s(problem: FleetProblem) -> float:
    w = problem.workload
    return sum(problem.demand_rps) / problem.hours * w.traffic.output_tokens.mean


def pool_spec(problem: FleetProblem, pool: Pool, idle_usd_per_hour: float = 0.0) -> DeploymentSpec:
    """A pool of the solution: latency at its most loaded hour, cost as the mean over the hours
    of its replicas' GPUs (instance slots on whole-instance offers) x price, plus
    `idle_usd_per_hour`: the idle GPUs of the whole instances it alone is placed on
    (_own_idle_usd_per_hour)."""
    opt, r = pool.option, pool.range_index
    running = pool.running
    per_replica = [pool.load_rps[h] / running[h] if running[h] else 0.0 for h in range(problem.hours)]
    hour = max(range(problem.hours), key=lambda h: (per_replica[h], -h))
    cost = 0.0
    for h in range(problem.hours):
        if opt.reserved is not None:
            cost += pool.reserved * problem.slots(opt, opt.reserved) * opt.reserved.usd_per_gpu_hour
        if opt.hourly is not None:
            cost += pool.hourly[h] * problem.slots(opt, opt.hourly) * opt.hourly.usd_per_gpu_hour
    return DeploymentSpec(
        workload=problem.range_workloads[r],
        candidate=_priced(opt, opt.candidates[r]),
        replicas=max(running),
        load_rps=per_replica[hour],
        cost_usd_per_hour=cost / problem.hours + idle_usd_per_hour,
        size=problem.ranges[r],
        reserved_replicas=pool.reserved,
        hourly_replicas=pool.hourly if opt.hourly is not None else (),
        reserved_price=opt.reserved.price if opt.reserved is not None else None,
        instance_gpus=(opt.hourly or opt.reserved).instance_gpus,
        tokens_per_s=_mean_tokens_per_s(problem),
        instance_note=_instance_note(problem, opt),
    )


def _instance_note(problem: FleetProblem, option: Option) -> str | None:
    """'L40S tp=8: aws g6e.xlarge holds 1 GPU; g6e.48xlarge ($3.766/GPU-h) used' when the
    device's cheapest offer per GPU (of the same role, anywhere in the problem) cannot hold the
    replica."""
    from .fleet import shape_note

    offer = option.hourly or option.reserved
    c = option.config
    offers = {o.key: o for opt in problem.options if opt.device == c.device for o in opt.offers}
    for o in getattr(problem, "device_offers", {}).get(c.device, ()):
        offers.setdefault(o.key, o)
    return shape_note(c.device, c.tp, c.pp, offer, list(offers.values()))


def single_spec(problem: FleetProblem, sp: SinglePlan) -> DeploymentSpec:
    """A single-option plan (closed form), loaded at its peak hour."""
    opt = sp.option
    running = sp.replicas_by_hour
    per_replica = [problem.demand_rps[h] / running[h] if running[h] else 0.0 for h in range(problem.hours)]
    hour = max(range(problem.hours), key=lambda h: (per_replica[h], -h))
    return DeploymentSpec(
        workload=problem.range_workloads[0],
        candidate=_priced(opt, opt.candidates[0]),
        replicas=sp.peak_replicas,
        load_rps=per_replica[hour],
        cost_usd_per_hour=sp.cost_usd_per_hour,
        size=problem.ranges[0],
        reserved_replicas=sp.reserved_replicas,
        hourly_replicas=sp.hourly_replicas if opt.hourly is not None else (),
        reserved_price=opt.reserved.price if opt.reserved is not None else None,
        instance_gpus=(opt.hourly or opt.reserved).instance_gpus,
        tokens_per_s=_mean_tokens_per_s(problem),
        instance_note=_joined_notes(_instance_note(problem, opt), _idle_note(sp)),
    )


def _joined_notes(shape: str | None, idle: str | None) -> str | None:
    """The instance notes of one deployment as one line, its device and shape said once."""
    if shape and idle:
        return f"{shape}; {idle.split(': ', 1)[1]}"
    return shape or idle


def _idle_note(sp: SinglePlan) -> str | None:
    """'MI325X tp=4: 3 replicas use 12 of the 16 GPUs of 2 whole 8-GPU instances (digitalocean GPU
    Droplet ...); the $/hour pays for the 4 idle' when whole instances leave GPUs of a
    single-option plan idle at its peak: its cost pays for the instances (fleet._rented), which
    the replica count times tp x pp does not show."""
    opt = sp.option
    offer = opt.hourly or opt.reserved
    c = opt.config
    per = c.tp * c.pp
    if not sp.gpus_by_hour or offer is None or offer.instance_gpus <= 1:
        return None
    idle = [g - n * per for g, n in zip(sp.gpus_by_hour, sp.replicas_by_hour)]
    h = max(range(len(idle)), key=lambda i: (sp.replicas_by_hour[i], -i))  # the peak hour
    if idle[h] <= 0:
        return None
    rented, used = sp.gpus_by_hour[h], sp.replicas_by_hour[h] * per
    shape = f"tp={c.tp}" + (f" pp={c.pp}" if c.pp > 1 else "")
    return (
        f"{c.device} {shape}: {sp.replicas_by_hour[h]} replica{'s' if sp.replicas_by_hour[h] != 1 else ''} use {used} of the {rented} GPUs "
        f"of {rented // offer.instance_gpus} whole {offer.instance_gpus}-GPU instances ({offer.price.instance_label}); the $/hour pays for "
        f"the {rented - used} idle"
    )


def single_deployment(problem: FleetProblem, catalog: Catalog, sp: SinglePlan) -> Deployment:
    return build_deployments(catalog, [single_spec(problem, sp)])[0]


def device_rejections(evaluated: list[Evaluated], devices: tuple[str, ...]) -> tuple[Rejected, ...]:
    """For each device with no feasible candidate, the reason of the candidate that got furthest
    (latest stage; then most GPUs; then the smallest formats, which need the least memory)."""
    by_device: dict[str, list[Evaluated]] = {}
    for e in evaluated:
        by_device.setdefault(e.config.device, []).append(e)
    out = []
    for device in devices:
        rows = by_device.get(device, [])
        if not rows or any(e.feasible for e in rows):
            continue
        # ties go to the first candidate (its index, not rows.index(e): a linear search per
        # candidate made this quadratic, minutes past --time-limit-s for a search of thousands)
        _, furthest = max(
            enumerate(rows),
            key=lambda ie: (
                ie[1].stage_rank,
                ie[1].config.gpus if ie[1].stage != "memory" else (ie[1].memory.kv_pool_bytes_per_gpu if ie[1].memory else 0.0),
                ie[1].config.kv_dtype == "fp8",
                -ie[0],
            ),
        )
        out.append(Rejected(device=device, reason=f"{furthest.config.label()}: {furthest.reason}", stage=furthest.stage))
    return tuple(out)


def _pricing_kind(workload: Workload) -> str:
    return "mixed" if workload.search.reserved_pricing else workload.search.pricing


def plan(
    workload: Workload,
    catalog: Catalog,
    evaluated: list[Evaluated],
    *,
    time_limit_s: float | None = DEFAULT_TIME_LIMIT_S,
    problem: FleetProblem | None = None,
    lp_path: str | None = None,
    analyse_constraints: bool = True,
    alternatives: bool = True,
    single_plans: list[SinglePlan] | None = None,
    as_of: date | None = None,
    first_party_catalog: Catalog | None = None,
    deadline: Deadline | None = None,
) -> Plan:
    """Solve the program over the feasible candidates and assemble the Plan. `problem` reuses a
    fleet problem built earlier (sweeps) and `single_plans` its options' single_plan; `lp_path`
    also writes the program (LP format). Without `analyse_constraints` no constraint is re-solved
    to tell whether it binds; without `alternatives` neither the other devices' plans, nor the
    break-even price, nor the plan on first-party prices are built. `as_of`: the date price ages
    are counted to (default today). `first_party_catalog`: the workload's prices restricted to
    first-party rows, for the plan on them when the plan's own prices are not all first-party.
    `deadline` (default: `time_limit_s` from now) bounds every solve and re-solve together."""
    deadline = as_deadline(time_limit_s, deadline)
    as_of = as_of or date.today()
    feasible = [e for e in evaluated if e.feasible]
    rejected = list(device_rejections(evaluated, workload.search.devices))

    def nothing_serves() -> InfeasibleError:
        reasons = tuple((r.device, r.reason) for r in rejected)
        split = " (nor do size buckets cover every request size)" if workload.search.size_buckets else ""
        head = f"{workload.path}: no configuration can serve this workload{split}"
        lines = reason_lines(reasons, width=LINE_CHARACTERS - len("error: "))  # the CLI prints each line after "error: "
        if len(lines) == 1:  # one device: one line
            return InfeasibleError(f"{head}. {lines[0].strip()}", reasons)
        return InfeasibleError("\n".join([f"{head}; per device, the configuration that came closest:", *lines]), reasons)

    # with size buckets, pools dedicated to each bucket may serve what no configuration serves whole
    if not feasible and not workload.search.size_buckets:
        raise nothing_serves()
    if problem is None:
        problem = build_fleet_problem(workload, catalog, evaluated, deadline=deadline)
    if not problem.options and not feasible:
        raise nothing_serves()
    if not problem.options:
        raise InfeasibleError(
            f"{workload.path}: no feasible configuration fits an offer: every feasible replica needs more GPUs in one machine than the "
            "rented instances hold (constraints.instance_gpus / gpus_per_instance in prices.yaml); set constraints.allow_cross_node: true "
            "to span machines, or give a larger instance with --prices",
            tuple((e.config.device, "replica larger than the rented instance") for e in feasible[:1]),
        )
    options = program_options(problem)
    plans = single_plans if single_plans is not None else [single_plan(o, problem) for o in problem.options]
    in_program = {id(o) for o in options}
    start = cheapest([sp for sp in plans if id(sp.option) in in_program])
    solve_options = options
    if problem.max_configurations == 1 and not problem.split and start is not None:
        # One configuration on every request size: the program separates by option, and its
        # optimum is the closed form's minimum (fleet.single_plan, checked against the full
        # program by the tests); only the options attaining it can be chosen.
        cost = {id(sp.option): sp.cost_usd_per_horizon for sp in plans if sp.feasible}
        limit = start.cost_usd_per_horizon * (1 + 1e-9) + 1e-9
        solve_options = tuple(o for o in options if cost.get(id(o), math.inf) <= limit)
    program = build_program(problem, solve_options)
    if lp_path:  # the whole program, every non-dominated option, for inspection
        (program if solve_options is options else build_program(problem, options)).prob.writeLP(lp_path)
    if start is not None:
        set_start(program, single_pools(problem, start))
    solution = run_program(program, deadline.share(MAIN_SOLVE_SHARE))
    if solution is None:
        if not feasible and run_program(build_program(problem, options, frozenset(constraint_groups(problem, options))), deadline) is None:
            raise nothing_serves()
        raise _infeasible_error(problem, options, deadline)

    hours = problem.hours
    cost_per_hour = solution.cost_usd_per_horizon / hours
    singles = best_single_plans(problem, plans=plans)
    alternative_specs = []
    chosen_devices = {p.option.device for p in solution.pools}
    for device in workload.search.devices if alternatives else ():
        if device in chosen_devices or device not in singles:
            continue
        sp = singles[device]
        if sp.feasible:
            alternative_specs.append(single_spec(problem, sp))
        elif not any(r.device == device for r in rejected):
            o = sp.option
            rejected.append(Rejected(device=device, reason=f"{o.config.label()} alone: {sp.reason}", stage="constraints"))
    rejected = [r for r in rejected if r.device not in chosen_devices]  # a device serving a size bucket only
    own_idle = _own_idle_usd_per_hour(problem, solution)
    built = build_deployments(catalog, [pool_spec(problem, p, own_idle[i]) for i, p in enumerate(solution.pools)] + alternative_specs)
    deployments, alternative_rows = built[: len(solution.pools)], built[len(solution.pools) :]
    deployments.sort(key=lambda d: (-d.cost_usd_per_hour, d.candidate.config.label(), d.size_range))

    best = cheapest(plans)
    saving = None
    if best is not None:
        saving = max(0.0, 1 - solution.cost_usd_per_horizon / best.cost_usd_per_horizon) if best.cost_usd_per_horizon > 0 else 0.0
        if saving < 1e-9:
            saving = 0.0

    alternative_rows.sort(key=lambda d: (d.cost_usd_per_hour, d.candidate.config.device))
    order = {d: i for i, d in enumerate(workload.search.devices)}
    rejected.sort(key=lambda r: order.get(r.device, len(order)))

    constraints = binding_report(problem, options, cost_per_hour, deadline, solution.pools) if analyse_constraints else ()
    schedule = ()
    instances = _instance_uses(problem, solution)
    idle_cost = sum(i.idle_cost_usd_per_hour for i in instances)
    if problem.hours > 1:
        schedule = tuple(
            HourRow(
                hour=h,
                requests_per_s=problem.demand_rps[h],
                replicas=sum(p.running[h] for p in solution.pools),
                reserved_replicas=sum(p.reserved for p in solution.pools),
                on_demand_replicas=sum(p.hourly[h] for p in solution.pools),
                gpus=sum(p.running[h] * p.option.gpus for p in solution.pools),
                cost_usd=solution.cost_usd_by_hour[h],
            )
            for h in range(hours)
        )
    tokens_per_s = _mean_tokens_per_s(problem)
    main = deployments[0]
    binding = main.candidate.binding or "compute"
    why = _why(problem, deployments, alternative_rows, constraints, cost_per_hour, saving, best, idle_cost)
    if not math.isclose(sum(d.cost_usd_per_hour for d in deployments) + idle_cost - sum(own_idle), cost_per_hour, rel_tol=1e-9, abs_tol=1e-9):
        raise SolverError("internal: the plan's cost does not add up over its pools")
    break_even = (None, None, None)
    first_party = None
    if alternatives:
        break_even = _break_even(problem, options, plans, solution, deployments, deadline)
        if first_party_catalog is not None and not all(d.price.first_party and (d.reserved_price is None or d.reserved_price.first_party) for d in deployments):
            first_party = _first_party_plan(workload, first_party_catalog, evaluated, deadline, cost_per_hour, deployments)
    warnings_ = _price_warnings(deployments, as_of)
    return Plan(
        as_of=as_of,
        break_even_usd_per_gpu_hour=break_even[0],
        break_even_device=break_even[1],
        break_even_reserved_usd_per_gpu_hour=break_even[2],
        first_party=first_party,
        price_warnings=warnings_,
        status=solution.status,
        workload=workload,
        demand_rps=max(problem.demand_rps),
        output_tokens_per_s=max(problem.demand_rps) * workload.traffic.output_tokens.mean,
        cost_usd_per_hour=cost_per_hour,
        cost_usd_per_million_tokens=usd_per_million_tokens(cost_per_hour, tokens_per_s),
        deployments=tuple(deployments),
        alternatives=tuple(alternative_rows),
        rejected=tuple(rejected),
        binding=binding,
        why=why,
        solver=solution.solver,
        candidates_evaluated=len(evaluated),
        candidates_feasible=len(feasible),
        cost_usd_per_day=cost_per_hour * HOURS_PER_DAY,
        cost_usd_per_month=cost_per_hour * HOURS_PER_MONTH,
        peak_cost_usd_per_hour=max(solution.cost_usd_by_hour),
        reserved_replicas=sum(p.reserved for p in solution.pools),
        on_demand_peak_replicas=max(sum(p.hourly[h] for p in solution.pools) for h in range(hours)),
        mix_saving_vs_single_fraction=saving,
        best_single_cost_usd_per_hour=None if best is None else best.cost_usd_per_hour,
        pricing_kind=_pricing_kind(workload),
        provider=workload.search.provider,
        schedule=schedule,
        instances=instances,
        constraints=constraints,
        size_ranges=problem.ranges,
        time_limit_s=time_limit_s or 0.0,
        options_in_program=len(solve_options),
        problem=problem,
    )


def _device_cost_usd_per_horizon(problem: FleetProblem, solution: FleetSolution, device: str) -> float:
    """What the solution pays for one device's GPUs over the horizon: its per-GPU pools and its
    whole instances (idle GPUs included)."""
    total = 0.0
    for h in range(problem.hours):
        for p in solution.pools:
            opt = p.option
            if opt.device != device:
                continue
            if opt.reserved is not None and not opt.reserved.whole_instances:
                total += p.reserved * problem.slots(opt, opt.reserved) * opt.reserved.usd_per_gpu_hour
            if opt.hourly is not None and not opt.hourly.whole_instances:
                total += p.hourly[h] * problem.slots(opt, opt.hourly) * opt.hourly.usd_per_gpu_hour
        for f, reserved, hourly in solution.instances:
            if f.price.device == device:
                total += (reserved if f.role == "reserved" else hourly[h]) * f.usd_per_instance_hour
    return total


def _break_even(problem: FleetProblem, options, plans, solution: FleetSolution, deployments, time_limit_s):
    """(break-even $/GPU-h, its device, the reserved $/GPU-h at the same scale): the price of the
    plan's device (its main pool's) at which the plan costs as much as the best plan without that
    device. Every price of the device scales by one factor s: the plan then costs
    s C_d + C_rest (C_d what it pays for the device's GPUs over the horizon, C_rest the rest of a
    mixed fleet), and the best plan without the device costs C_alt, so s* = (C_alt - C_rest) / C_d
    and the break-even price is s* x the main pool's $/GPU-h. A daily profile or a mixed fleet:
    the same on the day's cost. (None, None, None) when no plan without the device exists, or the
    command's deadline leaves no time to find it."""
    main = deployments[0]
    device = main.candidate.config.device
    c_d = _device_cost_usd_per_horizon(problem, solution, device)
    if c_d <= 0:
        return None, None, None
    c_rest = solution.cost_usd_per_horizon - c_d
    others = tuple(o for o in options if o.device != device)
    if not others:
        return None, None, None
    if problem.max_configurations == 1 and not problem.split:
        best = cheapest([sp for sp in plans if sp.option.device != device])
        if best is None:
            return None, None, None
        c_alt, alt_device = best.cost_usd_per_horizon, best.option.device
    else:
        deadline = time_limit_s if isinstance(time_limit_s, Deadline) else Deadline(time_limit_s)
        try:
            alt = None if deadline.expired() else run_program(build_program(problem, others), deadline, "the break-even re-solve")
        except SolverError:
            alt = None
        if alt is None or not alt.pools:
            return None, None, None
        c_alt = alt.cost_usd_per_horizon
        alt_device = max(
            {p.option.device for p in alt.pools}, key=lambda d: (_device_cost_usd_per_horizon(problem, alt, d), d)
        )
    scale = (c_alt - c_rest) / c_d
    price = main.candidate.price.usd_per_gpu_hour
    reserved = main.reserved_price.usd_per_gpu_hour * scale if main.reserved_price is not None and main.hourly_replicas else None
    if main.reserved_price is not None and not main.hourly_replicas:
        price = main.reserved_price.usd_per_gpu_hour
    return price * scale, alt_device, reserved


def _first_party_plan(workload, catalog, evaluated, time_limit_s, cost_per_hour, deployments) -> "FirstPartyPlan | None":
    """The best plan on first-party prices (provider_page and user rows), when it differs from the
    plan: same candidates, offers from `catalog`. None when it is the same plan or none exists, or
    the command's deadline (`time_limit_s`, a Deadline) leaves no time to find it."""
    deadline = time_limit_s if isinstance(time_limit_s, Deadline) else Deadline(time_limit_s)
    try:
        fp = plan(workload, catalog, evaluated, time_limit_s=deadline.seconds, analyse_constraints=False, alternatives=False, deadline=deadline)
    except InfeasibleError:
        return FirstPartyPlan(cost_usd_per_hour=math.inf, cost_usd_per_million_tokens=math.inf, deployments=())
    except SolverError:
        return None

    def shape(ds):
        return sorted((d.candidate.config, d.replicas, d.price.provider, round(d.cost_usd_per_hour, 6)) for d in ds)

    if shape(fp.deployments) == shape(deployments):
        return None
    return FirstPartyPlan(cost_usd_per_hour=fp.cost_usd_per_hour, cost_usd_per_million_tokens=fp.cost_usd_per_million_tokens, deployments=fp.deployments)


def _price_warnings(deployments, as_of: date) -> tuple[str, ...]:
    """One line per price of the plan a buyer should check first: not first-party, older than
    PRICE_STALE_DAYS at `as_of`, or dated after `as_of` (a typo, or --as-of set before it)."""
    out = []
    seen = set()
    for d in deployments:
        for price in (d.price, d.reserved_price):
            if price is None or price in seen:
                continue
            seen.add(price)
            what = f"{price.device} at ${price.usd_per_gpu_hour:.2f}/GPU-h ({price.provider} {price.kind})"
            if not price.first_party:
                out.append(f"{what} is a {price.source_kind} price, not the provider's own: check it before buying")
            age = price.age_days(as_of)
            if age is not None and age > PRICE_STALE_DAYS:
                out.append(f"{what} was read {price.price_date}, {age} days before {as_of.isoformat()}: older than {PRICE_STALE_DAYS} days")
            elif age is not None and age < 0:
                out.append(f"{what} is dated {price.price_date}, {-age} days after {as_of.isoformat()} (the date ages are counted to, --as-of): check its price_date")
    return tuple(out)


def _own_idle_usd_per_hour(problem: FleetProblem, solution: FleetSolution) -> list[float]:
    """Per pool of the solution, the mean $/hour of the idle GPUs of the whole instances only it
    is placed on (an offer no other pool uses): its fleet pays for them, as a device's best fleet
    under BEST ON OTHER DEVICES, compare's row and sweep's device cost count them (fleet._rented).
    Before, a plan's pool counted its replicas' GPUs only: 1 x H100-SXM tp=4 on AWS's 8-GPU
    p5.48xlarge was $27.52/hour in solve's plan row and $55.04 in compare's row and on the PLAN
    line. Idle GPUs of an instance two pools share stay the plan's (the INSTANCES table)."""
    out = [0.0] * len(solution.pools)
    for f, reserved, hourly in solution.instances:
        users = []
        for i, p in enumerate(solution.pools):
            offer = p.option.reserved if f.role == "reserved" else p.option.hourly
            if offer is not None and offer.key == f.key and (p.reserved if f.role == "reserved" else any(p.hourly)):
                users.append(i)
        if len(users) != 1:
            continue
        (i,) = users
        p = solution.pools[i]
        slots = problem.slots(p.option, f)
        idle = 0.0
        for h in range(problem.hours):
            instances = reserved if f.role == "reserved" else hourly[h]
            replicas = p.reserved if f.role == "reserved" else p.hourly[h]
            idle += instances * f.instance_gpus - replicas * slots
        out[i] += idle * f.usd_per_gpu_hour / problem.hours
    return out


def _instance_uses(problem: FleetProblem, solution: FleetSolution) -> tuple[InstanceUse, ...]:
    out = []
    for f, reserved, hourly in solution.instances:
        per_hour = [reserved if f.role == "reserved" else hourly[h] for h in range(problem.hours)]
        if not any(per_hour):
            continue
        used = []
        for h in range(problem.hours):
            slots = 0.0
            for p in solution.pools:
                offer = p.option.reserved if f.role == "reserved" else p.option.hourly
                if offer is not None and offer.key == f.key:
                    slots += (p.reserved if f.role == "reserved" else p.hourly[h]) * problem.slots(p.option, offer)
            used.append(slots)
        idle = [per_hour[h] * f.instance_gpus - used[h] for h in range(problem.hours)]
        peak_h = max(range(problem.hours), key=lambda h: (per_hour[h], -h))
        out.append(
            InstanceUse(
                device=f.price.device,
                provider=f.price.provider,
                kind=f.price.kind,
                instance_gpus=f.instance_gpus,
                usd_per_instance_hour=f.usd_per_instance_hour,
                instances=per_hour[peak_h],
                idle_gpus=int(round(idle[peak_h])),
                idle_cost_usd_per_hour=sum(idle) * f.usd_per_gpu_hour / problem.hours,
            )
        )
    return tuple(out)


def _why(problem, deployments, alternatives, constraints, cost_per_hour, saving, best, idle_cost) -> str:
    main = deployments[0]
    c = main.candidate
    binding = c.binding or "compute"
    paid = f"${c.price.usd_per_gpu_hour:.2f}/GPU-hour ({c.price.label})"
    if main.reserved_price is not None:
        paid = f"${main.reserved_price.usd_per_gpu_hour:.2f}/GPU-hour reserved ({main.reserved_price.label}) + {paid} by the hour"
    size = "" if main.size_range == "all" else f" for {main.size_range} prompts"
    why = f"{main.replicas} x {c.config.label()}{size} at {paid}: each replica takes {c.max_rate_rps:.2f} req/s before {_BINDING_TEXT[binding]}"
    total = sum(d.replicas for d in deployments)
    peak = max(problem.demand_rps)
    if len(deployments) > 1:  # the count is every pool's, not the first's: say which
        others = " + ".join(f"{d.replicas} x {d.candidate.config.label()}" + ("" if d.size_range == "all" else f" for {d.size_range} prompts") for d in deployments[1:])
        why += f"; with {others}, {total} replicas cover {peak:g} req/s"
    else:
        why += f"; {total} replica(s) cover {peak:g} req/s"
    why += " at the peak hour" if problem.hours > 1 else ""
    if len(deployments) > 1:
        why += f"; a mix of {len(deployments)} pools"
        if saving is not None and best is not None:
            why += f" saves {saving * 100:.1f}% against the best single configuration (${best.cost_usd_per_hour:,.2f}/hour)"
    binding_constraints = [r for r in constraints if r.binding]
    for r in binding_constraints:
        why += f"; {r.name} = {r.value} binds (without it ${r.cost_without_usd_per_hour:,.2f}/hour)"
    if idle_cost > 0:
        why += f"; whole instances leave GPUs idle (${idle_cost:,.2f}/hour)"
    if alternatives:
        nxt = alternatives[0]
        why += (
            f". Next best: {nxt.replicas} x {nxt.candidate.config.label()} at ${nxt.cost_usd_per_hour:.2f}/hour "
            f"(+{(nxt.cost_usd_per_hour / cost_per_hour - 1) * 100:.0f}%)"
        )
    return why


def solve(
    workload: Workload,
    catalog: Catalog,
    *,
    time_limit_s: float | None = DEFAULT_TIME_LIMIT_S,
    lp_path: str | None = None,
    as_of: date | None = None,
    deadline: Deadline | None = None,
) -> Plan:
    """Evaluate every candidate of the workload's search space and solve the program. The prices
    are the workload's (workload.priced_catalog: its price files over `catalog`, its providers and
    min_source_kind). Candidates that cannot be their device's cheapest plan stop their rate search
    early (evaluate_candidates' prune) -- under the first-party prices too, when the plan on them
    is to be built -- except when the whole program is written out (`lp_path`). `time_limit_s`
    bounds the whole of it (a `deadline` set earlier, by the command, takes its place)."""
    from .candidates import evaluate_candidates
    from .evidence import assess
    from .workload import priced_catalog

    deadline = as_deadline(time_limit_s, deadline)
    check_context(workload)
    priced = priced_catalog(workload, catalog)
    first_party = priced.restricted(min_source_kind="provider_page")
    first_party = None if first_party.prices == priced.prices else first_party
    views = (first_party,) if first_party is not None else ()

    def at_one_half(w: Workload) -> Plan:  # the same plan at confidence 0.5, to say what a confidence costs
        found = evaluate_candidates(w, priced, prune=True, price_views=views, deadline=deadline)
        return plan(w, priced, found, time_limit_s=time_limit_s, as_of=as_of, analyse_constraints=False, alternatives=False, deadline=deadline)

    evaluated = evaluate_candidates(workload, priced, prune=lp_path is None, price_views=views, deadline=deadline)
    try:
        result = plan(workload, priced, evaluated, time_limit_s=time_limit_s, lp_path=lp_path, as_of=as_of, first_party_catalog=first_party, deadline=deadline)
    except InfeasibleError as exc:
        if workload.slo.confidence == 0.5:
            raise
        raise at_confidence(exc, workload, evaluated) from None
    try:
        return assess(result, priced, baseline=at_one_half, deadline=deadline)  # the bands within the command's limit too
    except SolverError:  # the plan stands; only its evidence ran out of time
        return replace(result, why=result.why + ". Cost band and evidence not computed: --time-limit-s reached")


def at_confidence(exc: InfeasibleError, workload: Workload, evaluated: list[Evaluated]) -> InfeasibleError:
    """No plan at a slo.confidence other than 0.5: the error says so, and, where it names no
    device (a conflict of constraints), which devices have no configuration at that confidence
    and why (the knife-edge rule, a zero-load latency past a bound)."""
    q = workload.slo.confidence
    listed = {d for d, _ in exc.reasons}
    refused = [r for r in device_rejections(evaluated, workload.search.devices) if r.device not in listed]
    also = "".join(f"; {r.device} has no configuration at {q:g}: {r.reason}" for r in refused)
    return InfeasibleError(f"{exc} [sized at confidence {q:g}: every pool holds its SLOs at the {q:g} quantile of the latency model's error{also}]", exc.reasons)


def check_context(workload: Workload) -> None:
    """The percentile context must fit the model's own context window (max_position_embeddings as
    rope_scaling scales it: ModelArch.max_context_tokens)."""
    model = workload.model
    limit = model.max_context_tokens
    if workload.context_tokens > limit:
        raise InfeasibleError(
            f"{workload.path}: the p{workload.memory.context_percentile:g} context "
            f"({workload.context_tokens:,} tokens = prompt + output at that percentile) exceeds "
            f"{model.name}'s context ({model.context_words}); no configuration can serve it",
            tuple((d, f"context {workload.context_tokens:,} tokens > {model.context_words}") for d in workload.search.devices),
        )


def write_lp(workload: Workload, catalog: Catalog, path: str) -> None:
    """Write the program (LP format) for inspection."""
    from .candidates import evaluate_candidates
    from .workload import priced_catalog

    catalog = priced_catalog(workload, catalog)
    evaluated = evaluate_candidates(workload, catalog)
    if not any(e.feasible for e in evaluated):
        raise InfeasibleError(f"{workload.path}: no feasible candidate, no program to write")
    problem = build_fleet_problem(workload, catalog, evaluated)
    build_program(problem, program_options(problem)).prob.writeLP(path)


