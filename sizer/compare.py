"""`sizer compare`: one row per device (or per device and provider) with the best fleet made of a
single configuration on it, under the workload's traffic, SLOs and purchasing constraints, or
the reason it cannot serve; and the cost-latency Pareto front of every feasible configuration.

A row's plan is fleet.single_plan's closed form (the program's answer when only that device, one
configuration, may be used): replicas per hour, reserved and hourly, whole instances, budgets and
availability included. Units: USD per hour / per day / per million output tokens, seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .candidates import Evaluated, evaluate_candidates, load_point
from .catalog import Catalog
from .errors import InputError
from .fleet import FleetProblem, SinglePlan, build_options, build_problem, closest, single_plan
from .optimize import Deployment, build_deployments, check_context, device_rejections, single_spec, usd_per_million_tokens
from .workload import Workload

# The fields of a device's row beyond device / provider / feasible / reason (None where it cannot serve)
ROW_KEYS = (
    "tp",
    "pp",
    "kv_dtype",
    "weight_dtype",
    "replicas",
    "reserved_replicas",
    "on_demand_peak_replicas",
    "gpus",
    "instance_gpus",
    "usd_per_gpu_hour",
    "cost_usd_per_hour",
    "cost_usd_per_day",
    "cost_usd_per_million_tokens",
    "max_rate_rps_per_replica",
    "load_rps_per_replica",
    "ttft_p99_s",
    "tpot_p99_s",
    "max_concurrency",
    "kv_headroom_fraction",
    "binding",
)

SORT_KEYS = ("cost", "cost_per_hour", "device", "provider", "gpus", "ttft", "tpot", "headroom")


@dataclass(frozen=True, slots=True, kw_only=True)
class CompareRow:
    device: str
    provider: str | None  # the provider(s) of the best offer; several when their plans cost the same
    feasible: bool
    reason: str | None
    deployment: Deployment | None = None
    cost_usd_per_day: float | None = None
    evidence: object | None = None  # evidence.Evidence: the measured rows behind the device's speed


# Where a feasible row's price and speed come from (None on an infeasible row); JSON and CSV
PROVENANCE_KEYS = ("price_date", "price_source", "price_source_kind", "price_age_days")


@dataclass(frozen=True, slots=True, kw_only=True)
class ParetoPoint:
    """One feasible configuration as a fleet of its own: its cost and its latency at its load."""

    label: str
    device: str
    cost_usd_per_million_tokens: float
    ttft_p99_s: float
    tpot_p99_s: float
    on_front: bool


@dataclass(frozen=True, kw_only=True)
class Comparison:
    workload: Workload
    rows: tuple[CompareRow, ...]
    problem: FleetProblem | None = None


def _row_from(problem: FleetProblem, catalog: Catalog, sp: SinglePlan, providers: list[str]) -> CompareRow | SinglePlan:
    """An infeasible row now; a feasible plan is returned as is, its Deployment built with the
    others in one batch (_finish)."""
    if not sp.feasible:
        return CompareRow(device=sp.option.device, provider=", ".join(providers) or None, feasible=False, reason=f"{sp.option.config.label()} alone: {sp.reason}")
    return (sp, providers)


def _finish(problem: FleetProblem, catalog: Catalog, rows: list) -> list[CompareRow]:
    from .efficiency import architecture_of, efficiency_table
    from .candidates import demand_of
    from .evidence import basis_of, error_model, evidence_of, measured_devices, measured_prompt_tokens, measured_running_sequences

    pending = [r for r in rows if isinstance(r, tuple)]
    built = iter(build_deployments(catalog, [single_spec(problem, sp) for sp, _ in pending]))
    model = error_model(catalog)
    table = efficiency_table(catalog.root)
    measured = measured_devices(table)
    arch = architecture_of(problem.workload.model)
    engine = problem.workload.engine
    prompts = measured_prompt_tokens(catalog)
    running = measured_running_sequences(catalog)
    p99 = float(demand_of(problem.workload).prompt.quantile(99.0))
    out = []
    for r in rows:
        if isinstance(r, CompareRow):
            out.append(r)
            continue
        sp, providers = r
        deployment = next(built)
        out.append(
            CompareRow(
                device=sp.option.device,
                provider=", ".join(providers),
                feasible=True,
                reason=None,
                deployment=deployment,
                cost_usd_per_day=sp.cost_usd_per_hour * 24,
                evidence=evidence_of(
                    model, sp.option.device, engine, basis_of(sp.option.device, measured), architecture=arch, table=table,
                    prompt_tokens_p99=p99, prompts=prompts, running_sequences_mean=deployment.running_batch_mean, running=running,
                ),
            )
        )
    return out


def compare(
    workload: Workload,
    catalog: Catalog,
    evaluated: list[Evaluated] | None = None,
    *,
    per_provider: bool = False,
) -> Comparison:
    """The best single-configuration fleet on every device of the search (per provider too when
    `per_provider`: providers whose plans cost the same share a row), infeasible devices last."""
    from .workload import priced_catalog

    check_context(workload)
    catalog = priced_catalog(workload, catalog)
    if evaluated is None:
        evaluated = evaluate_candidates(workload, catalog)
    # one configuration per fleet: no size split
    from dataclasses import replace

    whole = replace(workload, search=replace(workload.search, size_buckets=()))
    problem = build_problem(whole, catalog, evaluated)
    rejected = {r.device: r for r in device_rejections(evaluated, workload.search.devices)}
    rows: list = []
    for device in workload.search.devices:
        if device in rejected:
            rows.append(CompareRow(device=device, provider=None, feasible=False, reason=rejected[device].reason))
            continue
        if not per_provider:
            best = closest([single_plan(o, problem) for o in problem.options if o.device == device])
            if best is None:
                rows.append(_no_offer(device, workload))
            else:
                rows.append(_row_from(problem, catalog, best, _used_providers(best) if best.feasible else []))
            continue
        by_cost: dict[float | None, tuple[SinglePlan, list[str]]] = {}
        for provider in _providers(catalog, device, workload):
            options = [o for o in build_options(whole, catalog, [list(evaluated)], provider=provider) if o.device == device]
            best = closest([single_plan(o, problem) for o in options])
            if best is None:
                continue
            if not best.feasible:
                by_cost.setdefault(None, (best, []))[1].append(provider)
                continue
            key = round(best.cost_usd_per_horizon, 6)
            if key in by_cost:
                by_cost[key][1].append(provider)
            else:
                by_cost[key] = (best, [provider])
        if not by_cost:
            rows.append(_no_offer(device, workload))
        for key in sorted(by_cost, key=lambda k: (k is None, k or 0.0)):
            sp, providers = by_cost[key]
            rows.append(_row_from(problem, catalog, sp, providers))
    return Comparison(workload=workload, rows=tuple(_finish(problem, catalog, rows)), problem=problem)


def _used_providers(sp: SinglePlan) -> list[str]:
    """The providers whose GPUs the fleet rents: the reserved offer's when it commits to a replica,
    the hourly offer's when some hour rents one. Under mixed pricing an option carries both
    offers, and a fleet that buys no reserved replica rents nothing from the reserved offer's
    provider: naming it made compare's row say `aws, runpod` where solve's plan of the same
    fleet said `runpod`."""
    used = []
    if sp.option.reserved is not None and sp.reserved_replicas > 0:
        used.append(sp.option.reserved.price.provider)
    if sp.option.hourly is not None and any(n > 0 for n in sp.hourly_replicas):
        used.append(sp.option.hourly.price.provider)
    return sorted(set(used or (f.price.provider for f in sp.option.offers)))


def _no_offer(device: str, workload: Workload) -> CompareRow:
    return CompareRow(
        device=device,
        provider=None,
        feasible=False,
        reason="no feasible configuration fits an offer (a TP group larger than the rented instance; see constraints.allow_cross_node)",
    )


def _providers(catalog: Catalog, device: str, workload: Workload) -> list[str]:
    s = workload.search
    kinds = [k for k in (s.pricing, s.reserved_pricing) if k]
    names = {p.provider for k in kinds for p in catalog.prices_for(device, provider=s.provider, kind=k)}
    return sorted(names)


# ------------------------------------------------------------------------------------------------
# rows as data, sorting
# ------------------------------------------------------------------------------------------------


def row_to_dict(row: CompareRow, as_of=None) -> dict:
    """A row as plain data; `as_of` (a date) gives its price's age in days."""
    d = row.deployment
    out: dict = {"device": row.device, "provider": row.provider, "feasible": row.feasible}
    if d is None:
        out.update({k: None for k in ROW_KEYS})
        out["reason"] = row.reason
        out.update({k: None for k in PROVENANCE_KEYS})
        out["evidence"] = None
        return out
    e = d.candidate
    concurrency = getattr(e, "max_concurrency", None)
    out.update(
        {
            "tp": e.config.tp,
            "pp": e.config.pp,
            "kv_dtype": e.config.kv_dtype,
            "weight_dtype": e.config.weight_dtype,
            "replicas": d.replicas,
            "reserved_replicas": d.reserved_replicas,
            "on_demand_peak_replicas": d.on_demand_peak_replicas,
            "gpus": d.gpus,
            "instance_gpus": d.instance_gpus,
            "usd_per_gpu_hour": e.price.usd_per_gpu_hour,
            "cost_usd_per_hour": round(d.cost_usd_per_hour, 6),
            "cost_usd_per_day": round(d.cost_usd_per_day, 6),
            "cost_usd_per_million_tokens": round(d.cost_usd_per_million_tokens, 6),
            "max_rate_rps_per_replica": round(e.max_rate_rps, 6),
            "load_rps_per_replica": round(d.load_rps_per_replica, 6),
            "ttft_p99_s": round(d.ttft_p99_s, 6),
            "tpot_p99_s": round(d.tpot_p99_s, 6),
            "max_concurrency": int(concurrency if concurrency is not None else e.memory.max_concurrency),
            "kv_headroom_fraction": round(d.kv_headroom_fraction, 6),
            "binding": e.binding,
            "reason": None,
            "price_date": e.price.price_date,
            "price_source": e.price.source,
            "price_source_kind": e.price.source_kind,
            "price_age_days": None if as_of is None else e.price.age_days(as_of),
            "evidence": row.evidence.as_dict() if row.evidence is not None else None,
        }
    )
    return out


_SORT_FIELD = {
    "cost": ("cost_usd_per_million_tokens", False),
    "cost_per_hour": ("cost_usd_per_hour", False),
    "device": ("device", False),
    "provider": ("provider", False),
    "gpus": ("gpus", False),
    "ttft": ("ttft_p99_s", False),
    "tpot": ("tpot_p99_s", False),
    "headroom": ("kv_headroom_fraction", True),
}


def comparison_rows(comparison: Comparison, sort: str = "cost", as_of=None) -> list[dict]:
    """The rows as plain dicts, feasible ones sorted by `sort` (ties: device order), then the
    infeasible ones in the search's device order; `as_of` (a date) gives each price's age."""
    if sort not in _SORT_FIELD:
        raise InputError(f"--sort: expected one of {', '.join(SORT_KEYS)}, got {sort!r}")
    field, descending = _SORT_FIELD[sort]
    rows = [row_to_dict(r, as_of) for r in comparison.rows]
    order = {d: i for i, d in enumerate(comparison.workload.search.devices)}
    feasible = [r for r in rows if r["feasible"]]
    infeasible = [r for r in rows if not r["feasible"]]

    def key(r: dict):
        v = r[field]
        if isinstance(v, str):
            primary = v
        else:
            primary = -v if descending else v
        return (primary, order.get(r["device"], len(order)), r["provider"] or "")

    feasible.sort(key=key)
    infeasible.sort(key=lambda r: (order.get(r["device"], len(order)), r["provider"] or ""))
    return feasible + infeasible


# ------------------------------------------------------------------------------------------------
# the cost-latency Pareto front
# ------------------------------------------------------------------------------------------------


def pareto_front(points: list[tuple[float, float]]) -> list[bool]:
    """For (cost, latency) pairs, True where no other point is at least as good in both and
    better in one."""
    out = []
    for i, (c, t) in enumerate(points):
        dominated = any((c2 <= c and t2 <= t) and (c2 < c or t2 < t) for j, (c2, t2) in enumerate(points) if j != i)
        out.append(not dominated)
    return out


def pareto_points(comparison: Comparison, catalog: Catalog) -> list[ParetoPoint]:
    """Every feasible option of the comparison's problem as a single-configuration fleet (its
    cheapest offer): $ per million output tokens against TPOT p99 at the fleet's peak load per
    replica; on_front marks the (cost, TPOT p99) Pareto front."""
    problem = comparison.problem
    if problem is None:
        return []
    best: dict = {}
    for o in problem.options:
        sp = single_plan(o, problem)
        if not sp.feasible:
            continue
        cur = best.get(o.config)
        if cur is None or sp.cost_usd_per_horizon < cur.cost_usd_per_horizon:
            best[o.config] = sp
    plans = list(best.values())
    if not plans:
        return []
    peak = max(problem.demand_rps)
    loads = [peak / sp.replicas_by_hour[int(np.argmax(problem.demand_rps))] for sp in plans]
    cands = [sp.option.candidates[0] for sp in plans]
    point = load_point(problem.range_workloads[0], catalog, cands, loads)
    tokens_per_s = sum(problem.demand_rps) / problem.hours * problem.workload.traffic.output_tokens.mean
    costs = [usd_per_million_tokens(sp.cost_usd_per_hour, tokens_per_s) for sp in plans]
    tpot = [float(x) for x in point.tpot_s["p99"]]
    ttft = [float(x) for x in point.ttft_s["p99"]]
    front = pareto_front(list(zip(costs, tpot)))
    out = [
        ParetoPoint(label=sp.option.config.label(), device=sp.option.device, cost_usd_per_million_tokens=c, ttft_p99_s=a, tpot_p99_s=b, on_front=f)
        for sp, c, a, b, f in zip(plans, costs, ttft, tpot, front)
    ]
    out.sort(key=lambda p: (p.cost_usd_per_million_tokens, p.tpot_p99_s, p.label))
    return out
