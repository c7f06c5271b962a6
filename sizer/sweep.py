"""`sizer sweep`: the plan and its cost at each value of one parameter, the best single-
configuration cost on every device at each value, and where the choice of hardware flips.

Parameters (one per sweep):
    requests_per_s       the steady rate (a daily profile is scaled so that its peak is the value)
    scale                multiplies the traffic (rate, or every hour of the profile)
    price_scale          multiplies the price of every GPU-hour (or of one device's: `device`)
    ttft_p99_s           the TTFT p99 bound, seconds
    tpot_p99_s           the TPOT p99 bound, seconds
    context_percentile   the percentile of prompt + output lengths sequences are admitted against
    confidence           slo.confidence: the quantile of the model's error every pool is sized to
                         hold its SLOs at (0.5: the model's own estimate), what more certainty costs

Traffic and price sweeps evaluate the candidates once (a replica's largest rate does not depend
on the fleet's demand, nor on prices) and solve the program at each point; SLO, context and
confidence sweeps re-evaluate at each point. The library never prints: `progress(done, total, value)` is called
after each point.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from .candidates import evaluate_candidates
from .catalog import Catalog
from .deadline import Deadline
from .errors import InfeasibleError, InputError, SolverError
from .fleet import best_single_plans, build_problem, evaluate_ranges, single_plan, size_ranges
from .optimize import DEFAULT_TIME_LIMIT_S, Plan, at_confidence, check_context, plan
from .workload import MAX_REQUESTS_PER_S, MIN_REQUESTS_PER_S, Workload

PARAMETERS = ("requests_per_s", "scale", "price_scale", "ttft_p99_s", "tpot_p99_s", "context_percentile", "confidence")
_UNITS = {
    "requests_per_s": "req/s",
    "scale": "x traffic",
    "price_scale": "x price",
    "ttft_p99_s": "s",
    "tpot_p99_s": "s",
    "context_percentile": "percentile",
    "confidence": "quantile",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepPoint:
    value: float
    status: str  # "optimal", "feasible" (time limit), "infeasible", or "time_limit" (no plan within it, or not run)
    plan: Plan | None
    reason: str | None
    device_costs_usd_per_hour: tuple[tuple[str, float | None], ...]  # best single-configuration fleet per device

    @property
    def hardware(self) -> str:
        """The plan's devices (the choice whose flips are reported)."""
        if self.plan is None:
            return "none"
        return " + ".join(sorted({d.candidate.config.device for d in self.plan.deployments}))

    @property
    def configuration(self) -> str:
        if self.plan is None:
            return "none"
        return " + ".join(
            f"{d.replicas} x {d.candidate.config.label()}" + ("" if d.size_range == "all" else f" [{d.size_range}]") for d in self.plan.deployments
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Flip:
    """Between two consecutive points the plan's hardware changes."""

    before: float
    after: float
    from_hardware: str
    to_hardware: str


@dataclass(frozen=True, kw_only=True)
class SweepResult:
    workload: Workload
    parameter: str
    device: str | None  # price_scale of one device only
    points: tuple[SweepPoint, ...]

    @property
    def unit(self) -> str:
        return _UNITS[self.parameter]

    @property
    def flips(self) -> tuple[Flip, ...]:
        out = []
        run = [p for p in self.points if p.status != "time_limit"]  # points not run tell no choice
        for a, b in zip(run, run[1:]):
            if a.hardware != b.hardware:
                out.append(Flip(before=a.value, after=b.value, from_hardware=a.hardware, to_hardware=b.hardware))
        return tuple(out)


MAX_POINTS = 1000  # points of one sweep: each is a solve


class ValuesError(InputError):
    """A sweep's value list that is not one: no list or start:stop:count, or an item that is no
    finite number (the CLI refuses it as a usage error: its option was mistyped). `detail` is the
    message without the option."""

    def __init__(self, option: str, detail: str):
        super().__init__(f"{option}: {detail}")
        self.option, self.detail = option, detail


def parse_values(text: str, option: str) -> tuple[float, ...]:
    """'1,2,5,10' (a list) or 'a:b:n' (n evenly spaced values from a to b inclusive), finite
    numbers, at most MAX_POINTS of them."""
    text = text.strip()
    try:
        if ":" in text:
            parts = text.split(":")
            if len(parts) != 3:
                raise ValueError
            a, b, n = float(parts[0]), float(parts[1]), int(parts[2])
            if n < 1:
                raise ValueError
            values = (a,) if n == 1 else None
        elif not text:
            raise ValueError
        else:  # every item a number: an empty one (0.5,,1) is refused, not dropped
            n, items = 0, text.split(",")
            for i, item in enumerate(items, 1):
                if not item.strip():
                    raise ValuesError(option, f"expected a number at item {i} of {len(items)} in {text!r}, got nothing (two commas in a row, or one at an end)")
                try:
                    float(item)
                except ValueError:
                    raise ValuesError(option, f"expected a number at item {i} of {len(items)} in {text!r}, got {item.strip()!r}") from None
            values = tuple(float(x) for x in items)
    except ValuesError:
        raise
    except ValueError:
        raise ValuesError(option, f"expected a list such as 1,2,5,10 or start:stop:count such as 0.5:4:8, got {text!r}") from None
    if ":" in text and not (math.isfinite(a) and math.isfinite(b)):  # 1:nan:1 too, whose stop is read but not used
        raise ValuesError(option, f"expected finite numbers, got {text!r}")
    if n > MAX_POINTS:
        raise InputError(f"{option}: expected at most {MAX_POINTS} points, got {n}")
    if values is None:
        values = tuple(a + (b - a) * i / (n - 1) for i in range(n))
    for v in values:
        if not math.isfinite(v):
            raise ValuesError(option, f"expected finite numbers, got {v:g} in {text!r}")
    if len(values) > MAX_POINTS:
        raise InputError(f"{option}: expected at most {MAX_POINTS} points, got {len(values)}")
    return values


# How far a multiplier may take a price: a GPU-hour from 1e-9 to 1e9 times its catalog price.
MAX_PRICE_SCALE = 1e9


def _check(parameter: str, values: tuple[float, ...], option: str, workload: Workload) -> None:
    """Each value in its range, before any work: percentiles in (0, 100); rates, scaled traffic
    and latency bounds > 0, traffic within the workload's rate range (workload.py)."""
    peak = workload.traffic.requests_per_s
    for v in values:
        if not math.isfinite(v):
            raise InputError(f"{option}: expected finite numbers, got {v:g}")
        if parameter == "context_percentile":
            if not 0 < v < 100:
                raise InputError(f"{option}: expected percentiles > 0 and < 100, got {v:g}")
            continue
        if parameter == "confidence":
            if not 0 < v < 1:
                raise InputError(f"{option}: expected numbers between 0 and 1 (0 < Q < 1), got {v:g}")
            continue
        if v <= 0:
            raise InputError(f"{option}: expected values > 0, got {v:g}")
        if parameter in ("requests_per_s", "scale"):
            rate = v if parameter == "requests_per_s" else v * peak
            if not MIN_REQUESTS_PER_S <= rate <= MAX_REQUESTS_PER_S:
                what = f"{v:g} req/s" if parameter == "requests_per_s" else f"{v:g} x {peak:g} = {rate:g} req/s at the peak"
                raise InputError(f"{option}: {what}; expected a peak rate from {MIN_REQUESTS_PER_S:g} to {MAX_REQUESTS_PER_S:g} req/s")
        elif parameter == "price_scale" and not 1 / MAX_PRICE_SCALE <= v <= MAX_PRICE_SCALE:
            raise InputError(f"{option}: expected multipliers from {1 / MAX_PRICE_SCALE:g} to {MAX_PRICE_SCALE:g}, got {v:g}")


def _traffic(workload: Workload, parameter: str, value: float) -> Workload:
    t = workload.traffic
    if parameter == "requests_per_s":
        factor = value / t.requests_per_s
    else:
        factor = value
    profile = tuple(r * factor for r in t.profile_rps)
    return replace(workload, traffic=replace(t, requests_per_s=t.requests_per_s * factor, profile_rps=profile))


def _with_slo(workload: Workload, key: str, value: float) -> Workload:
    bounds = dict(getattr(workload.slo, key))
    bounds["p99"] = value
    ordered = tuple((k, bounds[k]) for k in ("p50", "p90", "p95", "p99") if k in bounds)
    return replace(workload, slo=replace(workload.slo, **{key: ordered}))


def _scaled_catalog(catalog: Catalog, factor: float, device: str | None) -> Catalog:
    prices = tuple(
        replace(p, usd_per_gpu_hour=p.usd_per_gpu_hour * factor) if device is None or p.device == device else p for p in catalog.prices
    )
    return replace(catalog, prices=prices)


def sweep(
    workload: Workload,
    catalog: Catalog,
    parameter: str,
    values: tuple[float, ...],
    *,
    device: str | None = None,
    progress: Callable[[int, int, float], None] | None = None,
    time_limit_s: float | None = DEFAULT_TIME_LIMIT_S,
    option: str = "",
    deadline: Deadline | None = None,
) -> SweepResult:
    """Plan the workload at each value of `parameter`. `time_limit_s` bounds each point; a
    `deadline` bounds the whole sweep (points it does not reach: status "time_limit")."""
    if parameter not in PARAMETERS:
        raise InputError(f"sweep parameter: expected one of {', '.join(PARAMETERS)}, got {parameter!r}")
    _check(parameter, values, option or f"--{parameter.replace('_', '-')}", workload)
    from .workload import priced_catalog

    if device is not None:
        device = catalog.gpu(device, where="--price-device: ").name
    check_context(workload)
    catalog = priced_catalog(workload, catalog)
    reuse = parameter in ("requests_per_s", "scale", "price_scale")
    evaluated = by_range = None
    if reuse:
        evaluated = evaluate_candidates(workload, catalog, deadline=deadline)
        by_range = evaluate_ranges(workload, catalog, evaluated, size_ranges(workload.search.size_buckets), deadline=deadline)
    points = []
    for i, value in enumerate(values):
        if deadline is not None and deadline.expired():
            points.append(SweepPoint(value=value, status="time_limit", plan=None, reason=f"not run: --time-limit-s {deadline.seconds:g} reached", device_costs_usd_per_hour=()))
            continue
        w, cat = workload, catalog
        if parameter in ("requests_per_s", "scale"):
            w = _traffic(workload, parameter, value)
        elif parameter == "price_scale":
            cat = _scaled_catalog(catalog, value, device)
        elif parameter == "ttft_p99_s":
            w = _with_slo(workload, "ttft_s", value)
        elif parameter == "tpot_p99_s":
            w = _with_slo(workload, "tpot_s", value)
        elif parameter == "confidence":
            w = replace(workload, slo=replace(workload.slo, confidence=value))
        else:
            w = replace(workload, memory=replace(workload.memory, context_percentile=value))
        points.append(_point(w, cat, value, evaluated, by_range, time_limit_s, deadline))
        if progress is not None:
            progress(i + 1, len(values), value)
    return SweepResult(workload=workload, parameter=parameter, device=device, points=tuple(points))


def _point(w: Workload, catalog: Catalog, value: float, evaluated, by_range, time_limit_s, sweep_deadline: Deadline | None) -> SweepPoint:
    """One point within its own time limit, or what is left of the sweep's deadline if sooner."""
    costs: tuple[tuple[str, float | None], ...] = ()
    ev = None
    left = None if sweep_deadline is None else sweep_deadline.remaining_s()
    deadline = Deadline(time_limit_s if left is None else min(left, time_limit_s or left))
    try:
        check_context(w)
        ev = evaluated if evaluated is not None else evaluate_candidates(w, catalog, deadline=deadline)
        problem = build_problem(w, catalog, ev, by_range=by_range, deadline=deadline)
        devices = w.search.devices
        plans = [single_plan(o, problem) for o in problem.options]
        singles = best_single_plans(problem, plans=plans)
        costs = tuple((d, singles[d].cost_usd_per_hour if d in singles and singles[d].feasible else None) for d in devices)
        p = plan(w, catalog, ev, time_limit_s=time_limit_s, problem=problem, analyse_constraints=False, alternatives=False, single_plans=plans, deadline=deadline)
    except InfeasibleError as exc:
        if w.slo.confidence != 0.5 and ev is not None:
            exc = at_confidence(exc, w, ev)
        return SweepPoint(value=value, status="infeasible", plan=None, reason=str(exc), device_costs_usd_per_hour=costs)
    except SolverError as exc:
        return SweepPoint(value=value, status="time_limit", plan=None, reason=str(exc), device_costs_usd_per_hour=costs)
    return SweepPoint(value=value, status=p.status, plan=p, reason=None, device_costs_usd_per_hour=costs)


def point_to_dict(result: SweepResult, point: SweepPoint) -> dict:
    p = point.plan
    out = {
        result.parameter: round(point.value, 9),
        "status": point.status,
        "hardware": point.hardware,
        "configuration": point.configuration,
        # (for a sweep of requests_per_s this key is the swept one: the value where there is no plan)
        "requests_per_s": p.demand_rps if p is not None else (point.value if result.parameter == "requests_per_s" else None),
        "gpus": None if p is None else max((h.gpus for h in p.schedule), default=sum(d.gpus for d in p.deployments)),
        "cost_usd_per_hour": None if p is None else round(p.cost_usd_per_hour, 6),
        "cost_usd_per_day": None if p is None else round(p.cost_usd_per_day, 6),
        "cost_usd_per_million_tokens": None if p is None else round(p.cost_usd_per_million_tokens, 6),
        "mix_saving_vs_single_fraction": None if p is None or p.mix_saving_vs_single_fraction is None else round(p.mix_saving_vs_single_fraction, 6),
        "reserved_replicas": None if p is None else p.reserved_replicas,
        "on_demand_peak_replicas": None if p is None else p.on_demand_peak_replicas,
        "device_cost_usd_per_hour": {d: (None if c is None else round(c, 6)) for d, c in point.device_costs_usd_per_hour},
        "reason": point.reason,
    }
    return out


def sweep_to_dict(result: SweepResult) -> dict:
    return {
        "workload": result.workload.name,
        "parameter": result.parameter,
        "unit": result.unit,
        "price_device": result.device,
        "points": [point_to_dict(result, p) for p in result.points],
        "warnings": list(result.workload.warnings),
        "flips": [
            {"before": round(f.before, 9), "after": round(f.after, 9), "from": f.from_hardware, "to": f.to_hardware} for f in result.flips
        ],
    }
