"""The fleet problem: what the integer program (optimize.py) chooses between, built from the
evaluated candidates, the price catalog and the workload's purchasing inputs; and the closed
form of the best fleet made of one configuration alone (alternatives, `sizer compare`, the
saving of a mix).

    size range      a slice of the prompt-length distribution between two percentiles
                    (search.size_buckets; the whole distribution is range 0). A replica
                    dedicated to a range is evaluated on that range's traffic alone: its own
                    length percentiles, its own percentile context, the same SLO percentiles
                    (if every pool meets P(TTFT > bound) <= 1 - q on its own traffic, the
                    mixture meets it too).
    offer           where a configuration's GPUs are rented: a price row of the catalog and
                    the machine it rents, G = gpus_per_instance GPUs in one host (or
                    constraints.instance_gpus), paid whole. A replica of tp x pp GPUs is placed
                    only on an instance holding all of them (G >= tp x pp: floor(G / (tp pp))
                    replicas an instance). With constraints.allow_cross_node a replica may
                    instead span ceil(tp pp / G) instances of a smaller offer: a candidate of its
                    own (Config.node_gpus = G) whose step time charges the inter-node link
                    (gpus.yaml network_gb_per_s) for the collectives and pipeline hops that
                    cross machines. G = 1 is billing per GPU.
    option          one configuration (device, tp, pp, KV dtype, weight dtype) with the offer its
                    hourly replicas are paid at and, for pricing.kind mixed, the offer its
                    reserved (committed) replicas are paid at; its largest per-replica rate in
                    each size range (queueing.max_rate through candidates.evaluate_candidates).

Units: requests/s, USD per hour, GPUs. Hours: one steady hour, or the 24 hours of a daily
profile. A month is 365/12 days (730 hours).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from statistics import NormalDist

import numpy as np

from .candidates import Evaluated, evaluate_candidates
from .catalog import Catalog, Price
from .purchasing import HOURS_PER_MONTH, Constraints
from .workload import LengthDist, Workload

_STD_NORMAL = NormalDist()
_GRID = (np.arange(4000) + 0.5) / 4000


# ------------------------------------------------------------------------------------------------
# size ranges
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SliceDist(LengthDist):
    """The lengths of a LengthDist between two of its percentiles, as a distribution of its own:
    quantile(q) = parent quantile(lo + (hi - lo) q / 100)."""

    parent: LengthDist
    lo_pct: float
    hi_pct: float

    def _parent_pct(self, percentile: float) -> float:
        return self.lo_pct + (self.hi_pct - self.lo_pct) * percentile / 100

    @property
    def mu(self) -> float:
        return self.parent.mu

    @property
    def sigma(self) -> float:
        return self.parent.sigma

    def quantile(self, percentile: float) -> float:
        return self.parent.quantile(self._parent_pct(percentile))

    def quantiles(self, percentiles: np.ndarray) -> np.ndarray:
        return self.parent.quantiles(self._parent_pct(np.asarray(percentiles, dtype=float)))

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n random lengths of the slice (inverse transform through the parent's quantiles), not
        of the whole parent."""
        return self.quantiles(rng.uniform(0.0, 100.0, n))

    @cached_property
    def _samples(self) -> np.ndarray:
        lo, hi = self.lo_pct / 100, self.hi_pct / 100
        z = np.array([_STD_NORMAL.inv_cdf(float(lo + (hi - lo) * g)) for g in _GRID])
        x = np.exp(self.parent.mu + self.parent.sigma * z)
        return np.minimum(x, self.parent.cap) if self.parent.cap else x


@dataclass(frozen=True, slots=True, kw_only=True)
class SizeRange:
    """Requests whose prompt length lies between two percentiles of the workload's distribution."""

    lo_pct: float
    hi_pct: float

    @property
    def share(self) -> float:
        return (self.hi_pct - self.lo_pct) / 100

    @property
    def whole(self) -> bool:
        return self.lo_pct <= 0 and self.hi_pct >= 100

    @property
    def label(self) -> str:
        return "all" if self.whole else f"p{self.lo_pct:g}-p{self.hi_pct:g}"


def size_ranges(cuts: tuple[float, ...]) -> tuple[SizeRange, ...]:
    """Range 0 is the whole distribution; then one range per bucket between consecutive cuts."""
    if not cuts:
        return (SizeRange(lo_pct=0.0, hi_pct=100.0),)
    edges = (0.0, *cuts, 100.0)
    return (SizeRange(lo_pct=0.0, hi_pct=100.0), *(SizeRange(lo_pct=a, hi_pct=b) for a, b in zip(edges, edges[1:])))


def range_workload(workload: Workload, r: SizeRange) -> Workload:
    """The workload restricted to one size range: same rate units, SLOs and memory policy;
    prompt lengths drawn from the slice."""
    if r.whole:
        return workload
    prompt = SliceDist(percentiles=(), parent=workload.traffic.prompt_tokens, lo_pct=r.lo_pct, hi_pct=r.hi_pct)
    return replace(
        workload,
        name=f"{workload.name} [{r.label} prompts]",
        traffic=replace(workload.traffic, prompt_tokens=prompt, requests_per_s=workload.traffic.requests_per_s * r.share),
    )


def evaluate_ranges(
    workload: Workload, catalog: Catalog, evaluated: list[Evaluated], ranges: tuple[SizeRange, ...], deadline=None
) -> list[list[Evaluated | None]]:
    """Per range, the candidates evaluated on that range's traffic, aligned with `evaluated`
    (the whole range). A range whose percentile context exceeds the model's window, or the
    workload's max_model_len, is served by no dedicated replica (None throughout). `deadline`
    (deadline.Deadline) bounds each range's rate search as it bounds the whole range's:
    SolverError when it passes."""
    out: list[list[Evaluated | None]] = [list(evaluated)]
    for r in ranges[1:]:
        w = range_workload(workload, r)
        too_long = w.context_tokens > workload.model.max_context_tokens or (
            workload.memory.max_model_len is not None and w.context_tokens > workload.memory.max_model_len
        )
        if too_long:
            out.append([None] * len(evaluated))
            continue
        by_config = {e.config: e for e in evaluate_candidates(w, catalog, deadline=deadline)}
        out.append([by_config.get(e.config) for e in evaluated])
    return out


# ------------------------------------------------------------------------------------------------
# offers and options
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Offer:
    """A price row and its billing unit: per GPU (instance_gpus 1) or whole instances of G GPUs."""

    price: Price
    instance_gpus: int
    role: str  # "hourly" (paid in the hours used) or "reserved" (paid every hour)

    @property
    def whole_instances(self) -> bool:
        return self.instance_gpus > 1

    @property
    def usd_per_gpu_hour(self) -> float:
        return self.price.usd_per_gpu_hour

    @property
    def usd_per_instance_hour(self) -> float:
        return self.price.usd_per_gpu_hour * self.instance_gpus

    @property
    def label(self) -> str:
        unit = f"{self.instance_gpus}-GPU instances" if self.whole_instances else "per GPU"
        return f"{self.price.label}, {unit}"

    @property
    def key(self) -> tuple:
        p = self.price
        return (p.device, p.provider, p.kind, p.plan or "", p.instance or "", p.price_date, self.instance_gpus, self.role)


def instance_size(price: Price, constraints: Constraints) -> int:
    """GPUs per rented instance: the workload's constraints.instance_gpus, else the catalog's
    gpus_per_instance (1 where its source does not say: the safe rule, prices.yaml)."""
    forced = constraints.instance_size(price.device)
    if forced is not None:
        return forced
    return max(int(price.gpus_per_instance or 1), 1)


def device_offers(catalog: Catalog, device: str, *, provider: str, kind: str, role: str, constraints: Constraints) -> list[Offer]:
    """The offers worth considering for a device: per instance size, the cheapest per GPU.
    Ordered by instance size. Which of them a replica may use depends on its shape
    (offers_for)."""
    best: dict[int, Offer] = {}
    for price in catalog.prices_for(device, provider=provider, kind=kind):  # cheapest first
        g = instance_size(price, constraints)
        if g not in best:
            best[g] = Offer(price=price, instance_gpus=g, role=role)
    return [best[g] for g in sorted(best)]


def offer_fits(offer: Offer, tp: int, pp: int = 1, node_gpus: int = 0) -> bool:
    """A replica of tp x pp GPUs sits in one instance (G >= tp pp); a cross-node candidate
    (node_gpus = G) goes only on instances of exactly G GPUs, and only when it needs more than one."""
    if node_gpus:
        return offer.instance_gpus == node_gpus and tp * pp > node_gpus
    return offer.instance_gpus >= tp * pp


def offers_for(offers: list[Offer], tp: int, pp: int = 1, node_gpus: int = 0) -> list[Offer]:
    """The offers a replica of this shape may be placed on, less those another fitting offer
    beats: a smaller instance whose size divides G and is as cheap per GPU packs at least as
    well (every slot it leaves idle the larger one leaves idle too)."""
    fit = [o for o in offers if offer_fits(o, tp, pp, node_gpus)]
    return [
        o
        for o in fit
        if not any(
            o2.instance_gpus < o.instance_gpus and o.instance_gpus % o2.instance_gpus == 0 and o2.usd_per_gpu_hour <= o.usd_per_gpu_hour for o2 in fit
        )
    ]


def slots_per_replica(offer: Offer, tp: int, pp: int = 1, node_gpus: int = 0) -> float:
    """GPUs of rented instances one replica takes when packed.

    In one machine (G >= tp pp = k): floor(G / k) replicas share an instance, a slot of
    G / floor(G / k) GPUs each (= k when k divides G), so one configuration needs
    ceil(replicas / floor(G / k)) instances. Across machines (node_gpus = G < k): ceil(k / G)
    whole instances. Packing mixed configurations by these slot sizes is exact when the sizes
    divide one another (powers of two, as in every catalog node)."""
    g, k = offer.instance_gpus, tp * pp
    if node_gpus or g < k:
        return float(math.ceil(k / g) * g)
    return g / (g // k)


def shape_reason(device: str, tp: int, pp: int, offers: list[Offer], kind: str) -> str:
    """Why no offer holds a replica: the shape, and the largest instance on offer."""
    shape = f"tp={tp}" + (f" pp={pp}" if pp > 1 else "")
    largest = max(offers, key=lambda o: (o.instance_gpus, -o.usd_per_gpu_hour))
    return (
        f"{device} {shape} needs {tp * pp} GPUs in one machine, {kind} offers at most {largest.instance_gpus} "
        f"({largest.price.instance_label}); see constraints.allow_cross_node or --prices"
    )


def shape_note(device: str, tp: int, pp: int, used: Offer, offers: list[Offer]) -> str | None:
    """When the device's cheapest offer per GPU cannot hold the replica and a larger instance is
    used instead: 'L40S tp=8: aws g6e.xlarge holds 1 GPU; g6e.48xlarge ($3.766/GPU-h) used'."""
    same = [o for o in offers if o.role == used.role]
    if not same:
        return None
    cheapest = min(same, key=lambda o: (o.usd_per_gpu_hour, o.instance_gpus))
    if cheapest.instance_gpus >= tp * pp or cheapest.usd_per_gpu_hour >= used.usd_per_gpu_hour:
        return None
    shape = f"tp={tp}" + (f" pp={pp}" if pp > 1 else "")
    held = f"{cheapest.instance_gpus} GPU" + ("s" if cheapest.instance_gpus != 1 else "")
    name = used.price.instance or used.price.plan or f"{used.instance_gpus}-GPU instance"
    if used.price.provider != cheapest.price.provider:
        name = f"{used.price.provider} {name}"
    return f"{device} {shape}: {cheapest.price.instance_label} holds {held}; {name} (${used.usd_per_gpu_hour:.3f}/GPU-h) used"


@dataclass(frozen=True, slots=True, kw_only=True)
class Option:
    """One configuration and the offers its replicas are paid at; its candidate per size range."""

    candidates: tuple[Evaluated | None, ...]  # per size range; None or infeasible: cannot serve it
    hourly: Offer | None
    reserved: Offer | None

    @property
    def base(self) -> Evaluated:
        return next(e for e in self.candidates if e is not None)

    @property
    def config(self):
        return self.base.config

    @property
    def gpus(self) -> int:
        return self.config.gpus

    @property
    def device(self) -> str:
        return self.config.device

    def rate(self, r: int) -> float:
        e = self.candidates[r]
        return e.max_rate_rps if e is not None and e.feasible else 0.0

    @property
    def offers(self) -> tuple[Offer, ...]:
        return tuple(o for o in (self.reserved, self.hourly) if o is not None)

    @property
    def label(self) -> str:
        parts = [self.config.label()]
        if self.reserved is not None:
            parts.append(f"reserved: {self.reserved.label}")
        if self.hourly is not None:
            parts.append(f"hourly: {self.hourly.label}")
        return "; ".join(parts)


@dataclass(frozen=True, kw_only=True)
class FleetProblem:
    """Everything the program needs, in requests/s, USD/hour and GPUs."""

    workload: Workload
    options: tuple[Option, ...]
    ranges: tuple[SizeRange, ...]  # [0] is the whole distribution
    range_workloads: tuple[Workload, ...]
    demand_rps: tuple[float, ...]  # per hour: one steady hour, or 24
    max_configurations: int
    constraints: Constraints
    device_offers: dict = field(default_factory=dict)  # device -> every offer of it (all instance sizes), for notes

    @property
    def hours(self) -> int:
        return len(self.demand_rps)

    @property
    def split(self) -> bool:
        return len(self.ranges) > 1

    @property
    def months_per_horizon(self) -> float:
        """Months in the horizon's cost: the horizon is the steady hour, or the day."""
        return self.hours / HOURS_PER_MONTH

    def slots(self, option: Option, offer: Offer) -> float:
        c = option.config
        return slots_per_replica(offer, c.tp, c.pp, getattr(c, "node_gpus", 0))


def demand_by_hour(workload: Workload) -> tuple[float, ...]:
    return workload.traffic.profile_rps or (workload.traffic.requests_per_s,)


def build_options(
    workload: Workload,
    catalog: Catalog,
    by_range: list[list[Evaluated | None]],
    *,
    provider: str | None = None,
) -> list[Option]:
    """Every (configuration, offer) pair that serves at least one size range. The offers come
    from `catalog` (so a sweep can scale prices) for the workload's provider (or `provider`)."""
    s = workload.search
    provider = provider or s.provider
    hourly_kind = None if s.reserved_pricing is None and s.pricing.startswith("reserved") else s.pricing
    reserved_kind = s.reserved_pricing or (s.pricing if s.pricing.startswith("reserved") else None)
    cache: dict[str, tuple[list[Offer], list[Offer]]] = {}
    out: list[Option] = []
    for i, base in enumerate(by_range[0]):
        cands = tuple(rows[i] if rows[i] is not None and rows[i].feasible else None for rows in by_range)
        if all(c is None for c in cands):
            continue
        device = base.config.device
        if device not in cache:
            hourly = device_offers(catalog, device, provider=provider, kind=hourly_kind, role="hourly", constraints=workload.constraints) if hourly_kind else []
            reserved = (
                device_offers(catalog, device, provider=provider, kind=reserved_kind, role="reserved", constraints=workload.constraints)
                if reserved_kind
                else []
            )
            cache[device] = (hourly, reserved)
        hourly, reserved = cache[device]
        cfg = base.config
        node = getattr(cfg, "node_gpus", 0)
        hourly_fit = offers_for(hourly, cfg.tp, cfg.pp, node)
        reserved_fit = offers_for(reserved, cfg.tp, cfg.pp, node)
        # with a reserved offer the reserved count may be 0: an hourly-only twin would be dominated
        if hourly_fit and reserved_fit:
            pairs = [(h, r) for h in hourly_fit for r in reserved_fit]
        else:
            pairs = [(h, None) for h in hourly_fit] + [(None, r) for r in reserved_fit]
        for h, r in pairs:
            out.append(Option(candidates=cands, hourly=h, reserved=r))
    return out


def build_problem(
    workload: Workload, catalog: Catalog, evaluated: list[Evaluated], *, by_range: list[list[Evaluated | None]] | None = None, deadline=None
) -> FleetProblem:
    """The fleet problem of a workload: options over its size ranges, its hourly demand and its
    constraints. `by_range` reuses an earlier evaluation of the size ranges; `deadline` bounds
    the evaluation of the others (evaluate_ranges)."""
    ranges = size_ranges(workload.search.size_buckets)
    if by_range is None:
        by_range = evaluate_ranges(workload, catalog, evaluated, ranges, deadline=deadline)
    s = workload.search
    offers = {}
    for device in s.devices:
        for kind, role in ((s.pricing, "hourly"), (s.reserved_pricing, "reserved")):
            if kind:
                offers.setdefault(device, []).extend(device_offers(catalog, device, provider=s.provider, kind=kind, role=role, constraints=workload.constraints))
    return FleetProblem(
        device_offers={d: tuple(v) for d, v in offers.items()},
        workload=workload,
        options=tuple(build_options(workload, catalog, by_range)),
        ranges=ranges,
        range_workloads=tuple(range_workload(workload, r) for r in ranges),
        demand_rps=demand_by_hour(workload),
        max_configurations=workload.search.max_configurations,
        constraints=workload.constraints,
    )


def dominated(options: tuple[Option, ...] | list[Option], ranges: int, problem: FleetProblem) -> set[int]:
    """Options the program never needs: on the same offers as another option that takes no more
    GPUs (nor instance slots) and serves at least the same rate in every size range; the earlier
    of equals is kept. Replacing a dominated option by its dominator keeps every constraint
    (demand, N+1, availability, budget, instances, configurations) and costs no more."""
    groups: dict[tuple, list[int]] = {}
    for i, o in enumerate(options):
        groups.setdefault((o.hourly.key if o.hourly else None, o.reserved.key if o.reserved else None), []).append(i)
    out: set[int] = set()
    for members in groups.values():
        for i in members:
            a = options[i]
            a_slots = [problem.slots(a, f) for f in a.offers]
            for j in members:
                if i == j or j in out:
                    continue
                b = options[j]
                if b.gpus > a.gpus or any(problem.slots(b, f) > s for f, s in zip(b.offers, a_slots)):
                    continue
                if any(b.rate(r) < a.rate(r) for r in range(ranges)):
                    continue
                equal = b.gpus == a.gpus and all(b.rate(r) == a.rate(r) for r in range(ranges))
                if equal and j > i:
                    continue
                out.add(i)
                break
    return out


# ------------------------------------------------------------------------------------------------
# one configuration alone: closed form
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SinglePlan:
    """The cheapest fleet made of one option serving every size (range 0), or why none exists."""

    option: Option
    feasible: bool
    reason: str | None
    reserved_replicas: int = 0
    hourly_replicas: tuple[int, ...] = ()  # per hour
    cost_usd_by_hour: tuple[float, ...] = ()
    gpus_by_hour: tuple[int, ...] = ()  # rented GPUs (whole instances counted whole)
    unconstrained_usd_per_horizon: float = float("inf")  # its cheapest plan were there no purchasing constraint

    @property
    def replicas_by_hour(self) -> tuple[int, ...]:
        return tuple(self.reserved_replicas + n for n in self.hourly_replicas)

    @property
    def peak_replicas(self) -> int:
        return max(self.replicas_by_hour)

    @property
    def cost_usd_per_horizon(self) -> float:
        return sum(self.cost_usd_by_hour)

    @property
    def cost_usd_per_hour(self) -> float:
        """Mean over the hours of the horizon."""
        return self.cost_usd_per_horizon / len(self.cost_usd_by_hour)

    @property
    def peak_gpus(self) -> int:
        return max(self.gpus_by_hour)


def replicas_needed(demand_rps: float, rate_rps: float, constraints: Constraints) -> int:
    """Replicas one configuration needs in an hour: ceil(D / r), at least one for any demand
    (however small: a rate of 1e-300 req/s still needs a replica), plus one under N+1 (capacity
    holds with any one replica lost: r (n - 1) >= D), at least constraints.min_replicas."""
    if demand_rps <= 0:
        n = 0
    else:
        n = max(math.ceil(demand_rps / rate_rps - 1e-9), 1) + (1 if constraints.n_plus_1 else 0)
    return max(n, constraints.min_replicas)


def _rented(n: np.ndarray, offer: Offer, slots: float) -> tuple[np.ndarray, np.ndarray]:
    """(USD per hour, rented GPUs) of n replicas on an offer: per GPU, or whole instances
    ceil(n x slots / G) packed with the slots of slots_per_replica."""
    if offer.whole_instances:
        g = offer.instance_gpus
        instances = np.ceil(n * slots / g - 1e-9)
        return instances * offer.usd_per_instance_hour, instances * g
    gpus = n * slots
    return gpus * offer.usd_per_gpu_hour, gpus


ENUMERATED_RESERVED_COUNTS = 4096  # up to this peak every reserved count is tried


def _reserved_counts(need: np.ndarray, peak: int, period: int) -> np.ndarray:
    """The reserved counts z worth trying for mixed pricing: every one of 0..peak when there are
    at most ENUMERATED_RESERVED_COUNTS; else those within `period` (the GPUs of an instance, the
    period of its whole-instance rounding in z) of 0, of peak and of every hour's need. Between
    two consecutive needs the cost is linear in z (the reserved price times z against the hourly
    price times the hours still above z) plus whole-instance rounding of that period, so its
    least value lies within one period of an end: the same optimum, without enumerating a peak of
    49 billion replicas (fuzz seed 20261264788382: 366 GiB asked for). A budget or availability
    limit can cut an interval inside, where no end lies: an even grid of ENUMERATED_RESERVED_COUNTS
    points over 0..peak is tried too, so the count chosen is then within peak / 4096 of the best."""
    if peak + 1 <= ENUMERATED_RESERVED_COUNTS:
        return np.arange(peak + 1, dtype=float)
    grid = np.round(np.linspace(0.0, float(peak), ENUMERATED_RESERVED_COUNTS))
    ends = np.unique(np.concatenate([[0.0, float(peak)], need]))
    offsets = np.arange(-period, period + 1, dtype=float)
    near = np.clip((ends[:, None] + offsets[None, :]).ravel(), 0.0, float(peak))
    return np.unique(np.concatenate([near, grid]))


def single_plan(option: Option, problem: FleetProblem) -> SinglePlan:
    """The cheapest way to serve every hour's demand with this option alone (range 0), under the
    constraints: replicas per hour from replicas_needed; the reserved count z (mixed pricing)
    chosen by enumerating 0..peak, hourly replicas max(0, need_h - z); availability, budgets."""
    rate = option.rate(0)
    c = problem.constraints
    if rate <= 0:
        return SinglePlan(option=option, feasible=False, reason="serves no traffic of the whole size range")
    need = np.array([replicas_needed(d, rate, c) for d in problem.demand_rps], dtype=float)
    peak = int(need.max())
    if option.reserved is not None and option.hourly is not None:
        z = _reserved_counts(need, peak, max(option.reserved.instance_gpus, option.hourly.instance_gpus))[:, None]  # candidate reserved counts
    elif option.reserved is not None:
        z = np.array([[float(peak)]])
    else:
        z = np.array([[0.0]])
    hourly_n = np.maximum(need[None, :] - z, 0.0)
    cost = np.zeros_like(hourly_n)
    gpus = np.zeros_like(hourly_n)
    if option.reserved is not None:
        rc, rg = _rented(z, option.reserved, problem.slots(option, option.reserved))
        cost = cost + rc
        gpus = gpus + rg
    if option.hourly is not None:
        hc, hg = _rented(hourly_n, option.hourly, problem.slots(option, option.hourly))
        cost = cost + hc
        gpus = gpus + hg
    ok = np.ones(z.shape[0], dtype=bool)
    reasons = []
    avail = c.available(option.device)
    if avail is not None:
        fits = (gpus <= avail + 1e-9).all(axis=1)
        if not fits.any():
            reasons.append(f"needs {int(gpus.max(axis=1).min())} {option.device} GPUs > {avail} available (constraints.available_gpus)")
        ok &= fits
    if c.budget_usd_per_hour is not None:
        fits = (cost <= c.budget_usd_per_hour + 1e-9).all(axis=1)
        if not fits.any():
            reasons.append(f"its dearest hour costs ${cost.max(axis=1).min():,.2f} > budget ${c.budget_usd_per_hour:,.2f}/hour (constraints.budget_usd_per_hour)")
        ok &= fits
    if c.budget_usd_per_month is not None:
        monthly = cost.sum(axis=1) / problem.months_per_horizon
        fits = monthly <= c.budget_usd_per_month + 1e-9
        if not fits.any():
            reasons.append(f"costs ${monthly.min():,.0f}/month > budget ${c.budget_usd_per_month:,.0f}/month (constraints.budget_usd_per_month)")
        ok &= fits
    if not ok.any():
        return SinglePlan(
            option=option,
            feasible=False,
            reason="; ".join(reasons) or "no count satisfies every constraint at once",
            unconstrained_usd_per_horizon=float(cost.sum(axis=1).min()),
        )
    total = np.where(ok, cost.sum(axis=1), np.inf)
    gpu_hours = gpus.sum(axis=1)
    best = min(np.flatnonzero(ok), key=lambda i: (round(float(total[i]), 9), float(gpu_hours[i])))
    return SinglePlan(
        option=option,
        feasible=True,
        reason=None,
        reserved_replicas=int(z[best, 0]),
        hourly_replicas=tuple(int(v) for v in hourly_n[best]),
        cost_usd_by_hour=tuple(float(v) for v in cost[best]),
        gpus_by_hour=tuple(int(round(v)) for v in gpus[best]),
    )


def best_single_plans(
    problem: FleetProblem, key: Callable[[Option], object] = lambda o: o.device, plans: list[SinglePlan] | None = None
) -> dict[object, SinglePlan]:
    """Per key (default: device), the cheapest feasible single-option plan; where none is
    feasible, the first option's infeasible plan (for its reason). `plans`: single_plan of every
    option of the problem, computed earlier."""
    out: dict[object, SinglePlan] = {}
    for sp in plans if plans is not None else [single_plan(o, problem) for o in problem.options]:
        option = sp.option
        k = key(option)
        cur = out.get(k)
        if cur is None or _better(sp, cur):
            out[k] = sp
    return out


def _better(a: SinglePlan, b: SinglePlan) -> bool:
    if a.feasible != b.feasible:
        return a.feasible
    if not a.feasible:  # the reason of the option the constraints rule out last
        return a.unconstrained_usd_per_horizon < b.unconstrained_usd_per_horizon
    # at equal cost and GPU-hours, the larger rate per GPU (the same fleet with more headroom: fp8
    # KV over bf16 on one layout, as dominated keeps for solve's program), so compare and the
    # other-device rows name the configuration solve would run on that device
    ka = (round(a.cost_usd_per_horizon, 9), sum(a.gpus_by_hour), -round(a.option.rate(0) / a.option.gpus, 9))
    kb = (round(b.cost_usd_per_horizon, 9), sum(b.gpus_by_hour), -round(b.option.rate(0) / b.option.gpus, 9))
    return ka < kb


def cheapest(plans: list[SinglePlan]) -> SinglePlan | None:
    """The cheapest feasible plan (ties: fewer GPU-hours, then the larger rate per GPU, then the
    earlier option)."""
    best = None
    for sp in plans:
        if sp.feasible and (best is None or _better(sp, best)):
            best = sp
    return best


def closest(plans: list[SinglePlan]) -> SinglePlan | None:
    """The cheapest feasible plan, else the infeasible one the constraints rule out last (the
    cheapest were there no purchasing constraint): its reason is the one to report."""
    best = None
    for sp in plans:
        if best is None or _better(sp, best):
            best = sp
    return best
