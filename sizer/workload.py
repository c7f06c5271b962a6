"""Workload: the traffic, its length distributions, the latency bounds, the memory policy and the
search space, read from a YAML file and validated field by field before any work.

Length distributions are given by percentiles (`{p50: 1200, p90: 3000, p99: 6000}`) or a single
number (every request the same length). Between and beyond the given percentiles lengths follow a
log-normal fitted to them (least squares on log-length against the normal quantile, anchored at
p50), optionally capped at `max`; a given percentile is always used exactly as given. Moments
(mean, mean square, the size-biased mean) come from the fitted quantile function on a fine grid,
so a cap is honoured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from statistics import NormalDist

import numpy as np

from .catalog import PRICING_KINDS, Catalog, resolve_model
from .errors import FieldTypeError, FieldValueError
from .model import ModelArch
from .schema import Fields, read_document
from .units import KV_DTYPES, WEIGHT_DTYPES, normalise_dtype

_STD_NORMAL = NormalDist()
PERCENTILE_KEYS = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p99.9": 99.9}
SLO_PERCENTILES = ("p50", "p90", "p95", "p99")
_GRID = (np.arange(4000) + 0.5) / 4000  # quantile grid for moments


@dataclass(frozen=True, kw_only=True)
class LengthDist:
    """A token-length distribution fitted to percentiles (log-normal), optionally capped."""

    percentiles: tuple[tuple[float, float], ...]  # ((50.0, 1200.0), (90.0, 3000.0), ...) as given
    cap: float | None = None

    @cached_property
    def _fit(self) -> tuple[float, float]:
        pts = dict(self.percentiles)
        if len(pts) == 1:
            (_, value), = pts.items()
            return math.log(value), 0.0
        mu = math.log(pts[50.0]) if 50.0 in pts else None
        zs = [_STD_NORMAL.inv_cdf(p / 100) for p in pts]
        logs = [math.log(v) for v in pts.values()]
        if mu is None:
            z_mean = sum(zs) / len(zs)
            l_mean = sum(logs) / len(logs)
            sxx = sum((z - z_mean) ** 2 for z in zs)
            sigma = sum((z - z_mean) * (l - l_mean) for z, l in zip(zs, logs)) / sxx if sxx else 0.0
            return l_mean - sigma * z_mean, max(sigma, 0.0)
        num = sum(z * (l - mu) for z, l in zip(zs, logs) if z != 0.0)
        den = sum(z * z for z in zs if z != 0.0)
        return mu, max(num / den, 0.0) if den else 0.0

    @property
    def mu(self) -> float:
        return self._fit[0]

    @property
    def sigma(self) -> float:
        return self._fit[1]

    def quantile(self, percentile: float) -> float:
        """Length at `percentile` (0-100): the given figure if the user gave it, else the fit."""
        for p, v in self.percentiles:
            if abs(p - percentile) < 1e-9:
                return v
        value = math.exp(self.mu + self.sigma * _STD_NORMAL.inv_cdf(min(max(percentile / 100, 1e-9), 1 - 1e-9)))
        return min(value, self.cap) if self.cap else value

    @cached_property
    def _samples(self) -> np.ndarray:
        z = np.array([_STD_NORMAL.inv_cdf(float(p)) for p in _GRID])
        x = np.exp(self.mu + self.sigma * z)
        return np.minimum(x, self.cap) if self.cap else x

    @property
    def mean(self) -> float:
        return float(self._samples.mean())

    @property
    def mean_square(self) -> float:
        return float((self._samples**2).mean())

    @property
    def size_biased_mean(self) -> float:
        """E[X^2] / E[X]: the mean length of the request a random *token* belongs to."""
        return self.mean_square / self.mean

    def samples(self) -> np.ndarray:
        """Equal-probability quantile points of the distribution (read-only view)."""
        view = self._samples.view()
        view.flags.writeable = False
        return view


@dataclass(frozen=True, slots=True, kw_only=True)
class Traffic:
    requests_per_s: float
    prompt_tokens: LengthDist
    output_tokens: LengthDist


@dataclass(frozen=True, slots=True, kw_only=True)
class Slo:
    """Latency bounds, seconds, by percentile key ("p99" -> 2.0). Empty = unbounded."""

    ttft_s: tuple[tuple[str, float], ...] = ()
    tpot_s: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryPolicy:
    context_percentile: float = 99.0
    gpu_memory_utilization: float = 0.9
    block_size_tokens: int = 16
    max_num_seqs: int | None = None  # None: the engine's default
    max_num_batched_tokens: int | None = None  # None: the engine's default
    max_model_len: int | None = None  # None: the percentile context, rounded up to a block


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchSpace:
    devices: tuple[str, ...]
    tp: tuple[int, ...] = (1, 2, 4, 8)
    pp: tuple[int, ...] = (1, 2, 4)
    kv_dtypes: tuple[str, ...] = ("bf16", "fp8")
    weight_dtypes: tuple[str, ...] = ("bf16", "fp8")
    pricing: str = "on_demand"
    provider: str = "any"
    max_configurations: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    name: str
    path: str
    model_spec: str
    model: ModelArch
    traffic: Traffic
    slo: Slo
    memory: MemoryPolicy
    search: SearchSpace
    engine: str = "vllm"
    description: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def context_tokens(self) -> int:
        """Tokens one sequence is admitted against: prompt + output, each at the workload's
        context percentile (an upper bound on the percentile of the sum)."""
        p = self.memory.context_percentile
        return int(math.ceil(self.traffic.prompt_tokens.quantile(p)) + math.ceil(self.traffic.output_tokens.quantile(p)))

    @property
    def max_model_len(self) -> int:
        if self.memory.max_model_len is not None:
            return self.memory.max_model_len
        return self.context_tokens

    @property
    def output_tokens_per_s(self) -> float:
        return self.traffic.requests_per_s * self.traffic.output_tokens.mean


_TOP_KEYS = ("name", "description", "model", "engine", "traffic", "slo", "memory", "search")
_TRAFFIC_KEYS = ("requests_per_s", "prompt_tokens", "output_tokens")
_LENGTH_KEYS = (*PERCENTILE_KEYS, "max")
_SLO_KEYS = ("ttft_s", "tpot_s")
_MEMORY_KEYS = (
    "context_percentile",
    "gpu_memory_utilization",
    "block_size_tokens",
    "max_num_seqs",
    "max_num_batched_tokens",
    "max_model_len",
)
_SEARCH_KEYS = ("devices", "tp", "pp", "kv_dtypes", "weight_dtypes", "pricing", "provider", "max_configurations")
ENGINES = ("vllm",)


def _length(f: Fields, key: str) -> LengthDist:
    raw = f.raw.get(key)
    if raw is None:
        raise f.fail_value(key, "required field is missing (a number of tokens, or percentiles such as {p50: 1200, p99: 6000})")
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        value = f.number(key, ge=1)
        return LengthDist(percentiles=((50.0, value),))
    sub = f.sub(key)
    sub.check_keys(_LENGTH_KEYS)
    pts = []
    for name, pct in PERCENTILE_KEYS.items():
        if sub.has(name):
            pts.append((pct, sub.number(name, ge=1)))
    if not pts:
        raise f.fail_value(key, "expected at least one percentile (p50, p90, p95, p99, p99.9) or a number")
    for (p_lo, v_lo), (p_hi, v_hi) in zip(pts, pts[1:]):
        if v_hi < v_lo:
            raise sub.fail_value(_pkey(p_hi), f"p{p_hi:g} ({v_hi:g}) is below p{p_lo:g} ({v_lo:g}); percentiles must not decrease")
    cap = sub.number("max", None, ge=1)
    if cap is not None and cap < pts[-1][1]:
        raise sub.fail_value("max", f"max ({cap:g}) is below p{pts[-1][0]:g} ({pts[-1][1]:g})")
    return LengthDist(percentiles=tuple(pts), cap=cap)


def _pkey(p: float) -> str:
    return next(k for k, v in PERCENTILE_KEYS.items() if v == p)


def _slo_bounds(f: Fields, key: str) -> tuple[tuple[str, float], ...]:
    raw = f.raw.get(key)
    if raw is None:
        return ()
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return (("p99", f.number(key, gt=0)),)
    sub = f.sub(key)
    sub.check_keys(SLO_PERCENTILES)
    out = tuple((k, sub.number(k, gt=0)) for k in SLO_PERCENTILES if sub.has(k))
    for (k_lo, v_lo), (k_hi, v_hi) in zip(out, out[1:]):
        if v_hi < v_lo:
            raise sub.fail_value(k_hi, f"{k_hi} bound ({v_hi:g} s) is below the {k_lo} bound ({v_lo:g} s)")
    return out


def load_workload(path: Path | str, catalog: Catalog) -> Workload:
    """Read and validate a workload file against `catalog`. Raises an InputError naming the field."""
    path = Path(path)
    label = str(path)
    f = Fields(read_document(path, label), label)
    f.check_keys(_TOP_KEYS)

    model_spec = f.raw.get("model")
    if model_spec is None:
        raise f.fail_value("model", "required field is missing (a catalog model name, or a path to a config.json)")
    if not isinstance(model_spec, str):
        raise FieldTypeError(f"{label}: model: expected a string, got {model_spec!r}")
    model = resolve_model(model_spec, catalog, base_dir=path.parent, where=f"{label}: model: ")

    t = f.sub("traffic", default_empty=False)
    t.check_keys(_TRAFFIC_KEYS)
    traffic = Traffic(
        requests_per_s=t.number("requests_per_s", gt=0),
        prompt_tokens=_length(t, "prompt_tokens"),
        output_tokens=_length(t, "output_tokens"),
    )

    s = f.sub("slo")
    s.check_keys(_SLO_KEYS)
    slo = Slo(ttft_s=_slo_bounds(s, "ttft_s"), tpot_s=_slo_bounds(s, "tpot_s"))

    m = f.sub("memory")
    m.check_keys(_MEMORY_KEYS)
    memory = MemoryPolicy(
        context_percentile=m.number("context_percentile", 99.0, gt=0, lt=100),
        gpu_memory_utilization=m.number("gpu_memory_utilization", 0.9, gt=0, le=1),
        block_size_tokens=m.integer("block_size_tokens", 16, ge=1),
        max_num_seqs=m.integer("max_num_seqs", None, ge=1),
        max_num_batched_tokens=m.integer("max_num_batched_tokens", None, ge=1),
        max_model_len=m.integer("max_model_len", None, ge=1),
    )

    sr = f.sub("search")
    sr.check_keys(_SEARCH_KEYS)
    devices = sr.string_list("devices", tuple(g.name for g in catalog.gpus))
    canonical = []
    for i, d in enumerate(devices):
        canonical.append(catalog.gpu(d, where=f"{label}: search.devices[{i}]: ").name)
    native = model.native_weight_dtype
    default_weights = (native,) if native not in ("bf16", "fp16") else ("bf16", "fp8")
    kv = tuple(normalise_dtype(x) for x in sr.string_list("kv_dtypes", ("bf16", "fp8")))
    for i, x in enumerate(kv):
        if x not in KV_DTYPES:
            raise FieldValueError(f"{label}: search.kv_dtypes[{i}]: expected one of {', '.join(KV_DTYPES)}, got {x!r}")
    wd = tuple(normalise_dtype(x) for x in sr.string_list("weight_dtypes", default_weights))
    for i, x in enumerate(wd):
        if x not in WEIGHT_DTYPES:
            raise FieldValueError(f"{label}: search.weight_dtypes[{i}]: expected one of {', '.join(WEIGHT_DTYPES)}, got {x!r}")
    provider = sr.string("provider", "any")
    providers = catalog.providers()
    if provider != "any" and provider not in providers:
        from .errors import UnknownNameError, did_you_mean

        raise UnknownNameError(
            f"{label}: search.provider: unknown provider {provider!r}{did_you_mean(provider, providers)}; "
            f"the catalog has: any, {', '.join(providers)}"
        )
    search = SearchSpace(
        devices=tuple(dict.fromkeys(canonical)),
        tp=tuple(sorted(set(sr.int_list("tp", (1, 2, 4, 8))))),
        pp=tuple(sorted(set(sr.int_list("pp", (1, 2, 4))))),
        kv_dtypes=tuple(dict.fromkeys(kv)),
        weight_dtypes=tuple(dict.fromkeys(wd)),
        pricing=sr.string("pricing", "on_demand", choices=PRICING_KINDS),
        provider=provider,
        max_configurations=sr.integer("max_configurations", 1, ge=1),
    )
    workload = Workload(
        name=f.string("name", path.stem),
        path=label,
        model_spec=model_spec,
        model=model,
        traffic=traffic,
        slo=slo,
        memory=memory,
        search=search,
        engine=f.string("engine", "vllm", choices=ENGINES),
        description=f.string("description", ""),
    )
    if memory.max_model_len is not None and memory.max_model_len < workload.context_tokens:
        raise m.fail_value(
            "max_model_len",
            f"{memory.max_model_len} is below the p{memory.context_percentile:g} context "
            f"({workload.context_tokens} tokens = prompt + output at that percentile)",
        )
    return workload
