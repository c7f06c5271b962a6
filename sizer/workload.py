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
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from .catalog import LOCAL_ID_NOTE, FILE_NAME_ID_NOTE, Catalog, resolve_model, served_id_warnings, user_path
from .errors import FieldTypeError, FieldValueError, InputFileError, is_name, is_release, printable
from .model import ModelArch, nvfp4_moe_note
from .purchasing import Constraints, parse_constraints, parse_pricing, parse_profile, parse_size_buckets
from .schema import Fields, read_document
from .traces import TraceSummary
from .units import KV_DTYPES, WEIGHT_DTYPES, normalise_dtype

_STD_NORMAL = NormalDist()
PERCENTILE_KEYS = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p99.9": 99.9}
SLO_PERCENTILES = ("p50", "p90", "p95", "p99")
_GRID = (np.arange(4000) + 0.5) / 4000  # quantile grid for moments
# The range of a request rate (requests/s): a peak below a request every 11.6 days, or any hour
# above a billion requests a second, is no traffic a fleet is sized for, and beyond it the
# figures lose their meaning (integer replicas past 2^53, cost per token past float range).
MIN_REQUESTS_PER_S = 1e-6
MAX_REQUESTS_PER_S = 1e9
MAX_LENGTH_TOKENS = 1e9  # a prompt or output length percentile, tokens


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

    def quantiles(self, percentiles: np.ndarray) -> np.ndarray:
        """Lengths at an array of percentiles (0-100): the fitted log-normal's, capped."""
        z = np.array([_STD_NORMAL.inv_cdf(min(max(float(p) / 100, 1e-9), 1 - 1e-9)) for p in np.ravel(percentiles)])
        x = np.exp(self.mu + self.sigma * z).reshape(np.shape(percentiles))
        return np.minimum(x, self.cap) if self.cap else x

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n random lengths (tokens, not rounded) of this distribution: the log-normal's, capped; a
        single given length as is. Subclasses whose quantiles are not the log-normal's draw by
        their own quantile function (EmpiricalDist, fleet.SliceDist)."""
        if self.sigma == 0.0:
            return np.full(n, self.quantile(50.0))
        x = np.exp(self.mu + self.sigma * rng.standard_normal(n))
        return np.minimum(x, self.cap) if self.cap else x

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
    requests_per_s: float  # with a daily profile: its peak hour
    prompt_tokens: LengthDist
    output_tokens: LengthDist
    profile_rps: tuple[float, ...] = ()  # 24 hourly rates (traffic.profile or a trace); () = steady
    trace: TraceSummary | None = None  # traffic.trace: what the trace gave (a daily profile or a sample)
    trace_file: str | None = None  # the trace's resolved path, for `sizer simulate` to replay
    trace_time_unit: str | None = None  # traffic.trace.time_unit, when given


# The default --max-model-len admits this share of requests when a length has no declared max:
# prompt + output at the 99.99th percentile of their sum under the fitted distributions.
ADMIT_PERCENTILE = 99.99


# The standard-normal grid refused_fraction integrates over: +-6 sd (the quantile functions clip
# there, at probabilities of 1e-9) in steps of 0.0025 sd, with the trapezoid rule's weights of the
# normal density, normalised. Equal-probability points (LengthDist.samples) put 1/4,000 of the
# mass on each, too coarse where the share asked for is 1/10,000: the output's tail beyond its
# 99.99th percentile was one point (DeepSeek-V3's reasoning lengths: 22,941 tokens admitted 99.987 %).
_TAIL_Z = np.linspace(-6.0, 6.0, 4801)
_TAIL_PCT = np.array([100.0 * _STD_NORMAL.cdf(float(z)) for z in _TAIL_Z])
_TAIL_W = np.exp(-0.5 * _TAIL_Z**2) * np.where((_TAIL_Z == _TAIL_Z[0]) | (_TAIL_Z == _TAIL_Z[-1]), 0.5, 1.0)
_TAIL_W = _TAIL_W / _TAIL_W.sum()


@lru_cache(maxsize=256)
def _tail_table(dist: LengthDist) -> np.ndarray:
    """The distribution's lengths at _TAIL_PCT (its own quantile function: log-normal, empirical
    table or slice alike)."""
    return np.maximum.accumulate(np.asarray(dist.quantiles(_TAIL_PCT), dtype=float))


@lru_cache(maxsize=256)
def refused_fraction(prompt: LengthDist, output: LengthDist, max_len: float) -> float:
    """Share of requests whose prompt + output exceeds `max_len` tokens (the engine refuses the
    prompt, or cuts the output short), prompt and output lengths independent:
    E_output[P(prompt > max_len - output)], integrated over the output's quantile function on a
    normal grid (_TAIL_Z) fine enough in its tails for shares of 1e-4; the prompt's survival read
    from its own quantile table on the same grid."""
    rest = max_len - _tail_table(output)
    return float(np.clip(np.dot(_TAIL_W, _survival(prompt, rest)), 0.0, 1.0))


def _survival(dist: LengthDist, x: np.ndarray) -> np.ndarray:
    """P(length > x) for each x: exact for the fitted log-normal (capped), else read from the
    distribution's quantile table on _TAIL_PCT (an empirical table, a slice)."""
    x = np.asarray(x, dtype=float)
    if type(dist) is LengthDist and dist.sigma > 0.0:
        with np.errstate(divide="ignore"):
            z = (np.log(np.maximum(x, 1e-300)) - dist.mu) / dist.sigma
        s = 0.5 * np.vectorize(math.erfc)(z / math.sqrt(2))
        s = np.where(x <= 0, 1.0, s)
        return np.where(x >= dist.cap, 0.0, s) if dist.cap else s
    table = _tail_table(dist)
    if float(np.ptp(table)) == 0.0:  # one length
        return (table[0] > x).astype(float)
    cdf = np.interp(x, table, _TAIL_PCT / 100.0, left=0.0, right=1.0)
    return np.where(x <= 0, 1.0, np.where(x >= table[-1], 0.0, 1.0 - cdf))


@lru_cache(maxsize=256)
def admitting_length(prompt: LengthDist, output: LengthDist, percentile: float = ADMIT_PERCENTILE) -> int:
    """The fewest tokens L with refused_fraction(L) <= 1 - percentile/100: the declared maxima
    added when both lengths have one (every request admitted), else a quantile of the sum."""
    if prompt.cap and output.cap:
        return int(math.ceil(prompt.cap) + math.ceil(output.cap))
    target = 1 - percentile / 100
    lo = int(max(prompt.quantile(percentile), output.quantile(percentile)))
    hi = int(math.ceil(prompt.quantile(100 - (100 - percentile) / 2)) + math.ceil(output.quantile(100 - (100 - percentile) / 2)))
    hi = max(hi, lo + 1)
    while refused_fraction(prompt, output, hi) > target:  # a safeguard: the bound above holds
        hi *= 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if refused_fraction(prompt, output, mid) > target:
            lo = mid
        else:
            hi = mid
    return hi


@dataclass(frozen=True, slots=True, kw_only=True)
class Slo:
    """Latency bounds, seconds, by percentile key ("p99" -> 2.0). Empty = unbounded."""

    ttft_s: tuple[tuple[str, float], ...] = ()
    tpot_s: tuple[tuple[str, float], ...] = ()
    # the quantile of the latency model's error the bounds must hold at (sizer/evidence.py);
    # 0.5 = the model's own estimate
    confidence: float = 0.5


@dataclass(frozen=True, slots=True, kw_only=True)
class Tenant:
    name: str
    share: float  # fraction of the traffic
    quota_fraction: float  # fraction of the KV pool it may hold


ADMISSION_POLICIES = ("percentile", "declared", "growth")


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmissionPolicy:
    """Which of the seeds' admission rules sizes the batch (residency.py), and its modifiers."""

    policy: str = "percentile"
    overflow_probability: float = 0.01
    speculative_tokens: int = 0
    shared_prefix_tokens: int = 0
    tenants: tuple[Tenant, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryPolicy:
    context_percentile: float = 99.0
    memory_fraction: float | None = None  # the engine's own knob: see MEMORY_FRACTION_KEYS; None = its default
    block_size_tokens: int | None = None  # None: the engine's default (vLLM 16, SGLang 1, TRT-LLM 32)
    max_num_seqs: int | None = None  # None: the engine's default
    max_num_batched_tokens: int | None = None  # None: the engine's default
    max_model_len: int | None = None  # None: the percentile context
    n_parallel: int | None = None  # llama.cpp slots
    cache_type_k: str | None = None  # llama.cpp
    cache_type_v: str | None = None  # llama.cpp
    flashinfer_installed: bool | None = None  # vLLM: None = as `pip install vllm` of that release leaves it
    admission: AdmissionPolicy = AdmissionPolicy()


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
    reserved_pricing: str | None = None  # pricing.kind mixed: the committed base's kind (pricing = on_demand burst)
    providers: tuple[str, ...] | None = None  # pricing.providers (None: any); `provider` is the one name, or "any"
    exclude_providers: tuple[str, ...] = ()
    min_source_kind: str = "provider_page"  # catalog.SOURCE_KINDS: rows read at this kind or better
    price_files: tuple[str, ...] = ()  # pricing.files, resolved
    size_buckets: tuple[float, ...] = ()  # prompt-length percentiles splitting the traffic for a mixed fleet


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
    engine_version: str | None = None
    description: str = ""
    constraints: Constraints = Constraints()
    extra: dict = field(default_factory=dict)
    price_notes: tuple[str, ...] = ()  # what the user's price rows (--prices, pricing.files) replaced

    @property
    def context_tokens(self) -> int:
        """Tokens one sequence is admitted against: prompt + output, each at the workload's
        context percentile q (a given percentile as given, else the fit's). Not a percentile of
        the sum: for independent lengths at most 2 (1 - q) of requests are longer (P(prompt >
        its q-quantile) + P(output > its q-quantile)), in practice fewer (chat at p99: 0.62 %);
        rag's prompt p99 given as 30,000 where its fit puts 31,219, 1.07 %."""
        p = self.memory.context_percentile
        return int(math.ceil(self.traffic.prompt_tokens.quantile(p)) + math.ceil(self.traffic.output_tokens.quantile(p)))

    @property
    def admitted_context_tokens(self) -> int:
        """The percentile context plus the positions speculative decoding reserves."""
        return self.context_tokens + self.memory.admission.speculative_tokens

    @property
    def max_model_len(self) -> int:
        """The engine's --max-model-len: memory.max_model_len as given, else the length that
        admits every request the workload can send (admitting_length: the declared maxima, or
        the 99.99th percentile of prompt + output), at least the admitted context, at most the
        model's context (max_context_tokens: max_position_embeddings as rope_scaling scales it),
        plus any speculative positions."""
        if self.memory.max_model_len is not None:
            return self.memory.max_model_len
        t = self.traffic
        length = admitting_length(t.prompt_tokens, t.output_tokens)
        length = min(length, int(self.model.max_context_tokens)) if self.model.max_context_tokens else length
        return max(length, self.context_tokens) + self.memory.admission.speculative_tokens

    @property
    def refused_fraction(self) -> float:
        """Share of requests longer (prompt + output) than max_model_len: refused by the engine,
        or their output cut short."""
        return refused_fraction(self.traffic.prompt_tokens, self.traffic.output_tokens, self.max_model_len - self.memory.admission.speculative_tokens)

    @property
    def max_model_len_basis(self) -> str:
        """Where max_model_len comes from, in words, for the plan's header."""
        if self.memory.max_model_len is not None:
            return "memory.max_model_len as given"
        t = self.traffic
        spec = f" + {self.memory.admission.speculative_tokens} speculative positions" if self.memory.admission.speculative_tokens else ""
        length = admitting_length(t.prompt_tokens, t.output_tokens)
        limit = self.model.max_context_tokens
        if limit and length > limit:
            return f"the model's context ({self.model.context_words}){spec}; the workload's requests reach {length:,}"
        if length < self.context_tokens:
            return f"the p{self.memory.context_percentile:g} context{spec}"
        source = "the trace's" if t.trace is not None else "the declared"
        if t.prompt_tokens.cap and t.output_tokens.cap:
            return f"{source} longest prompt ({t.prompt_tokens.cap:,.0f}) + longest output ({t.output_tokens.cap:,.0f}){spec}"
        return f"the {ADMIT_PERCENTILE:g}th percentile of the fitted lengths{spec}"

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the plan rests on that sizer does not model or cannot vouch for: config fields
        left out of the model, arrivals burstier than the Poisson process the analytic model
        assumes, percentiles from a small sample, requests the model's context refuses."""
        out = [f"{self.model.name}: {w}" for w in self.model.warnings]
        out.extend(served_id_warnings(self.model))
        out.extend(self.price_notes)
        from .engines import engine_policy

        note = nvfp4_moe_note(self.model, "nvfp4") if "nvfp4" in self.search.weight_dtypes else None
        if note:
            out.append(f"search.weight_dtypes: nvfp4 on {self.model.name} is sized as nvfp4 on every linear layer; {note}")
        stale = engine_policy(self.engine).version_warning(self.engine_version)
        if stale:
            out.append(f"engine_version: {stale}")
        tr = self.traffic.trace
        if tr is not None:
            out.extend(tr.warnings)
            if tr.interarrival_cv > 1.5:
                out.append(
                    f"{tr.path}: inter-arrival CV {tr.interarrival_cv:.2f}: arrivals burstier than the Poisson process the latency "
                    "percentiles assume (CV 1); queueing tails will be longer than planned: `sizer simulate` replays the trace"
                )
            if tr.requests < 1000 and (tr.prompt_tokens is not None or tr.output_tokens is not None):
                out.append(f"{tr.path}: length percentiles from {tr.requests:,} requests: the p99 rests on {max(tr.requests // 100, 1):,} of them")
        limit = self.model.max_context_tokens
        if limit and self.context_tokens <= limit <= self.max_model_len and self.refused_fraction > 0:  # (a context beyond it is an error)
            out.append(
                f"{self.refused_fraction:.3%} of requests are longer (prompt + output) than the model's {limit:,} positions: "
                "the engine refuses them"
            )
        return tuple(out)

    @property
    def output_tokens_per_s(self) -> float:
        return self.traffic.requests_per_s * self.traffic.output_tokens.mean

    @property
    def kv_formats(self) -> tuple[str, ...]:
        """KV formats to search, as labels ("fp8", or "q8_0/q4_0" for llama.cpp's K/V types)."""
        m = self.memory
        if m.cache_type_k or m.cache_type_v:
            k = m.cache_type_k or "f16"
            v = m.cache_type_v or "f16"
            return (k if k == v else f"{k}/{v}",)
        return self.search.kv_dtypes


_TOP_KEYS = ("name", "description", "model", "served_model_name", "engine", "engine_version", "traffic", "slo", "memory", "search", "constraints", "pricing")
_TRAFFIC_KEYS = ("requests_per_s", "prompt_tokens", "output_tokens", "dataset", "profile", "trace")
_LENGTH_KEYS = (*PERCENTILE_KEYS, "max")
_SLO_KEYS = ("ttft_s", "tpot_s", "confidence")
# Each engine's own name for the share of GPU memory it may use (vLLM --gpu-memory-utilization,
# SGLang --mem-fraction-static, TensorRT-LLM kv_cache_free_gpu_memory_fraction).
MEMORY_FRACTION_KEYS = {"vllm": "gpu_memory_utilization", "sglang": "mem_fraction_static", "trtllm": "free_gpu_memory_fraction"}
_MEMORY_KEYS = (
    "context_percentile",
    *MEMORY_FRACTION_KEYS.values(),
    "block_size_tokens",
    "max_num_seqs",
    "max_num_batched_tokens",
    "max_model_len",
    "n_parallel",
    "cache_type_k",
    "cache_type_v",
    "flashinfer_installed",
    "admission",
    "overflow_probability",
    "speculative_tokens",
    "shared_prefix_tokens",
    "tenants",
)
_SEARCH_KEYS = ("devices", "tp", "pp", "kv_dtypes", "weight_dtypes", "pricing", "provider", "max_configurations", "size_buckets")
ENGINES = ("vllm", "sglang", "trtllm", "llamacpp")


def _length(f: Fields, key: str) -> LengthDist:
    raw = f.raw.get(key)
    if raw is None:
        raise f.fail_value(key, "required field is missing (a number of tokens, or percentiles such as {p50: 1200, p99: 6000})")
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        value = f.number(key, ge=1, le=MAX_LENGTH_TOKENS)
        return LengthDist(percentiles=((50.0, value),))
    sub = f.sub(key)
    sub.check_keys(_LENGTH_KEYS)
    pts = []
    for name, pct in PERCENTILE_KEYS.items():
        if sub.has(name):
            pts.append((pct, sub.number(name, ge=1, le=MAX_LENGTH_TOKENS)))
    if not pts:
        raise f.fail_value(key, "expected at least one percentile (p50, p90, p95, p99, p99.9) or a number")
    for (p_lo, v_lo), (p_hi, v_hi) in zip(pts, pts[1:]):
        if v_hi < v_lo:
            raise sub.fail_value(_pkey(p_hi), f"p{p_hi:g} ({v_hi:g}) is below p{p_lo:g} ({v_lo:g}); percentiles must not decrease")
    cap = sub.number("max", None, ge=1, le=MAX_LENGTH_TOKENS)
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
    sub = f.sub(key, expected="a number of seconds (the p99 bound) or a mapping of percentiles to seconds such as {p99: 2.0}")
    sub.check_keys(SLO_PERCENTILES)
    out = tuple((k, sub.number(k, gt=0)) for k in SLO_PERCENTILES if sub.has(k))
    for (k_lo, v_lo), (k_hi, v_hi) in zip(out, out[1:]):
        if v_hi < v_lo:
            raise sub.fail_value(k_hi, f"{k_hi} bound ({v_hi:g} s) is below the {k_lo} bound ({v_lo:g} s)")
    return out


def _version(f: Fields) -> str | None:
    raw = f.raw.get("engine_version")
    if raw is None:
        return None
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        # YAML reads 0.10 as the number 0.1: a version must be quoted to keep its digits
        raise FieldTypeError(f"{f.file}: engine_version: expected a quoted string such as '0.10', got the number {raw!r}")
    if not isinstance(raw, str) or not any(ch.isdigit() for ch in raw):
        raise FieldTypeError(f"{f.file}: engine_version: expected a version such as '0.6.4' or '0.14', got {raw!r}")
    if not is_release(raw):
        raise FieldValueError(f"{f.file}: engine_version: expected a version such as '0.6.4', '0.14' or '1.1.0rc2.post2' (letters, digits and . + _ -), got {raw!r}")
    return raw


def _price_file_paths(f: Fields, base_dir: Path) -> list[Path]:
    """pricing.files, resolved against the workload's folder (checked again by parse_pricing)."""
    raw = f.raw.get("pricing")
    if not isinstance(raw, dict) or raw.get("files") is None:
        return []
    files = raw["files"]
    if isinstance(files, str):
        files = [files]
    if not isinstance(files, list):
        return []
    out = []
    for i, name in enumerate(files):
        if not isinstance(name, str):
            return []
        p = Path(name).expanduser()
        p = p if p.is_absolute() else base_dir / p
        if not p.is_file():
            raise InputFileError(f"{f.file}: pricing.files[{i}]: no such price file: {printable(p)}")
        out.append(p)
    return out


def priced_catalog(workload: Workload, catalog: Catalog, *, min_source_kind: str | None = None) -> Catalog:
    """The catalog whose prices the workload may use: its price files laid over the catalog,
    then only its providers, none it excludes, and rows read at its min_source_kind or better
    (or `min_source_kind`, e.g. provider_page for the plan on first-party prices). Idempotent."""
    from .catalog import load_price_files

    s = workload.search
    out = load_price_files(catalog, [Path(p) for p in s.price_files])
    return out.restricted(providers=s.providers, exclude=s.exclude_providers, min_source_kind=min_source_kind or s.min_source_kind)


def engine_context(model: ModelArch, engine: str) -> ModelArch:
    """The model as `engine` serves its context: the rope-scaled length (ModelArch.context_limit_tokens)
    is vLLM's derivation (_get_and_verify_max_len); SGLang's (get_context_length: no factor where
    rope_scaling gives original_max_position_embeddings) and TensorRT-LLM's (infer_max_seq_len:
    not for yarn) differ, and llama.cpp's is its own, so under them the unscaled
    max_position_embeddings is the limit, and a warning says what vLLM would serve."""
    if engine == "vllm" or not model.context_limit_tokens or model.context_limit_tokens == model.max_position_embeddings:
        return model
    note = (
        f"rope_scaling: vLLM serves {model.context_words}; {engine}'s own derivation of the context is not modelled, "
        f"so the unscaled max_position_embeddings {model.max_position_embeddings:,} is the limit here"
    )
    return replace(model, context_limit_tokens=0, context_limit_basis="", warnings=(*model.warnings, note))


def load_workload(source: Path | str | Mapping[str, Any], catalog: Catalog | None = None, *, base_dir: Path | str | None = None) -> Workload:
    """A workload, validated field by field: from a YAML file (a path), or from a dict of the
    same fields (`{"model": "llama-3.1-8b", "traffic": {...}}`), whose relative paths (a
    config.json, a trace) are read from `base_dir` (default: the working directory).
    `catalog` defaults to the shipped catalogs. Raises an InputError naming the field."""
    if catalog is None:
        from .catalog import load_catalog

        catalog = load_catalog()
    if isinstance(source, Mapping):
        label = str(source.get("name") or "<dict>") if isinstance(source.get("name"), str) else "<dict>"
        f = Fields(dict(source), label)
        stem = "workload"
        base_dir = Path(base_dir) if base_dir is not None else Path.cwd()
    elif isinstance(source, (str, Path)):
        path = Path(source)
        label = str(path)
        f = Fields(read_document(path, label), label)
        stem = path.stem
        base_dir = Path(base_dir) if base_dir is not None else path.parent
    else:
        raise FieldTypeError(f"load_workload: expected a path to a YAML file or a dict of its fields, got {type(source).__name__}")
    f.check_keys(_TOP_KEYS)

    model_spec = f.raw.get("model")
    if model_spec is None:
        raise f.fail_value("model", "required field is missing (a catalog model name, or a path to a config.json)")
    if not isinstance(model_spec, str):
        raise FieldTypeError(f"{label}: model: expected a string, got {model_spec!r}")
    model = resolve_model(model_spec, catalog, base_dir=base_dir, where=f"{label}: model: ")
    served = f.string("served_model_name", None)
    if served is not None and not is_name(served):
        raise f.fail_value("served_model_name", f"expected a model id or path (printable, not blank), got {served!r}")
    if served:
        model = replace(model, hf_id=served, notes=tuple(n for n in model.notes if n not in (LOCAL_ID_NOTE, FILE_NAME_ID_NOTE)))

    t = f.sub("traffic", default_empty=False)
    t.check_keys(_TRAFFIC_KEYS)
    traffic = _traffic(t, base_dir, catalog.root)

    s = f.sub("slo")
    s.check_keys(_SLO_KEYS)
    slo = Slo(ttft_s=_slo_bounds(s, "ttft_s"), tpot_s=_slo_bounds(s, "tpot_s"), confidence=s.number("confidence", 0.5, gt=0, lt=1))

    engine = f.string("engine", "vllm", choices=ENGINES)
    model = engine_context(model, engine)
    m = f.sub("memory")
    m.check_keys(_MEMORY_KEYS)
    fraction = None
    for eng, key in MEMORY_FRACTION_KEYS.items():
        if m.has(key):
            if eng != engine:
                right = MEMORY_FRACTION_KEYS.get(engine)
                hint = f"; for {engine} use memory.{right}" if right else f"; {engine} allocates a fixed KV cache (n_parallel x max_model_len)"
                raise m.fail_value(key, f"applies to engine {eng}, not {engine}{hint}")
            fraction = m.number(key, gt=0, le=1)
    for key in ("n_parallel", "cache_type_k", "cache_type_v"):
        if m.has(key) and engine != "llamacpp":
            raise m.fail_value(key, f"applies to engine llamacpp, not {engine}")
    from .units import LLAMACPP_CACHE_TYPES

    tenants = []
    raw_tenants = m.raw.get("tenants")
    if raw_tenants is not None:
        if not isinstance(raw_tenants, list) or not raw_tenants:
            raise FieldTypeError(f"{label}: memory.tenants: expected a list of {{name, share, quota_fraction}}")
        for i, raw in enumerate(raw_tenants):
            t = Fields(raw, label, f"memory.tenants[{i}]")
            t.check_keys(("name", "share", "quota_fraction"))
            tenants.append(Tenant(name=t.string("name"), share=t.number("share", gt=0, le=1), quota_fraction=t.number("quota_fraction", gt=0, le=1)))
        total_share = sum(t.share for t in tenants)
        if abs(total_share - 1) > 1e-6:
            raise m.fail_value("tenants", f"shares must add up to 1, got {total_share:g}")
    admission = AdmissionPolicy(
        policy=m.string("admission", "percentile", choices=ADMISSION_POLICIES),
        overflow_probability=m.number("overflow_probability", 0.01, gt=0, lt=0.5),
        speculative_tokens=m.integer("speculative_tokens", 0, ge=0),
        shared_prefix_tokens=m.integer("shared_prefix_tokens", 0, ge=0),
        tenants=tuple(tenants),
    )
    memory = MemoryPolicy(
        context_percentile=m.number("context_percentile", 99.0, gt=0, lt=100),
        memory_fraction=fraction,
        block_size_tokens=m.integer("block_size_tokens", None, ge=1),
        max_num_seqs=m.integer("max_num_seqs", None, ge=1),
        max_num_batched_tokens=m.integer("max_num_batched_tokens", None, ge=1),
        max_model_len=m.integer("max_model_len", None, ge=1),
        n_parallel=m.integer("n_parallel", None, ge=1),
        cache_type_k=m.string("cache_type_k", None, choices=LLAMACPP_CACHE_TYPES),
        cache_type_v=m.string("cache_type_v", None, choices=LLAMACPP_CACHE_TYPES),
        flashinfer_installed=m.boolean("flashinfer_installed", None),
        admission=admission,
    )
    if engine == "vllm" and memory.max_num_seqs and memory.max_num_batched_tokens and memory.max_num_batched_tokens < memory.max_num_seqs:
        # SchedulerConfig (vLLM config.py 0.9.0, config/scheduler.py 0.17-0.22): "max_num_batched_tokens (...) must be
        # greater than or equal to max_num_seqs (...)": a launch line with both does not start
        raise FieldValueError(
            f"{label}: memory.max_num_batched_tokens: {memory.max_num_batched_tokens} is below memory.max_num_seqs "
            f"{memory.max_num_seqs}; vLLM refuses to start with both (max_num_batched_tokens must be >= max_num_seqs)"
        )

    sr = f.sub("search")
    sr.check_keys(_SEARCH_KEYS)
    devices = sr.string_list("devices", tuple(g.name for g in catalog.gpus))
    canonical = []
    for i, d in enumerate(devices):
        canonical.append(catalog.gpu(d, where=f"{label}: search.devices[{i}]: ").name)
    native = model.native_weight_dtype
    # a 16-bit checkpoint: its own weights and vLLM's load-time FP8; a quantised one (in a format
    # sizer models or not: ModelArch.unmodelled_quant, whose warning says so) its own weights only
    default_weights = (native,) if native not in ("bf16", "fp16") or model.unmodelled_quant else ("bf16", "fp8")
    if engine == "llamacpp":  # GGUF files: the checkpoint's own MXFP4, else 16-bit and q8_0
        default_weights = ("mxfp4",) if native == "mxfp4" else ("bf16", "q8_0")
    from .units import LLAMACPP_CACHE_TYPES as _GGML

    kv_choices = _GGML if engine == "llamacpp" else KV_DTYPES
    kv_default = ("f16", "q8_0") if engine == "llamacpp" else ("bf16", "fp8")
    from .engines import engine_policy, resolve_kv_dtype

    # "auto" (vLLM's and SGLang's default --kv-cache-dtype) is the checkpoint's own dtype
    kv = tuple(x if engine == "llamacpp" else resolve_kv_dtype(normalise_dtype(x), model) for x in sr.string_list("kv_dtypes", kv_default))
    for i, x in enumerate(kv):
        if x not in kv_choices:
            raise FieldValueError(f"{label}: search.kv_dtypes[{i}]: expected one of {', '.join(kv_choices)}, got {x!r}")
    wd = tuple(normalise_dtype(x) for x in sr.string_list("weight_dtypes", default_weights))
    for i, x in enumerate(wd):
        if x not in WEIGHT_DTYPES:
            raise FieldValueError(f"{label}: search.weight_dtypes[{i}]: expected one of {', '.join(WEIGHT_DTYPES)}, got {x!r}")
        problem = engine_policy(engine).weight_reason(x, model)
        if problem:
            raise FieldValueError(f"{label}: search.weight_dtypes[{i}]: {x!r} under engine {engine}: {problem}")
    price_files = _price_file_paths(f, base_dir)
    overlay: tuple = ()
    price_notes = catalog.price_notes  # the --prices files'
    if price_files:
        from .catalog import load_price_files

        laid = load_price_files(catalog, price_files)
        overlay, price_notes = laid.prices, laid.price_notes
    pricing = parse_pricing(f, sr, sorted({p.provider for p in (*catalog.prices, *overlay)}), base_dir=base_dir)
    max_configurations = sr.integer("max_configurations", 1, ge=1)
    search = SearchSpace(
        devices=tuple(dict.fromkeys(canonical)),
        tp=tuple(sorted(set(sr.int_list("tp", (1, 2, 4, 8))))),
        pp=tuple(sorted(set(sr.int_list("pp", (1, 2, 4))))),
        kv_dtypes=tuple(dict.fromkeys(kv)),
        weight_dtypes=tuple(dict.fromkeys(wd)),
        pricing=pricing.candidate_kind,
        provider=pricing.provider,
        max_configurations=max_configurations,
        reserved_pricing=pricing.reserved_kind if pricing.kind == "mixed" else None,
        providers=pricing.providers,
        exclude_providers=pricing.exclude_providers,
        min_source_kind=pricing.min_source_kind,
        price_files=pricing.files,
        size_buckets=parse_size_buckets(sr, max_configurations),
    )
    workload = Workload(
        name=f.string("name", stem),
        path=label,
        model_spec=model_spec,
        model=model,
        traffic=traffic,
        slo=slo,
        memory=memory,
        search=search,
        engine=engine,
        engine_version=_version(f),
        description=f.string("description", ""),
        constraints=parse_constraints(f, catalog),
        price_notes=price_notes,
    )
    limit = model.max_context_tokens
    if memory.max_model_len is not None and limit and memory.max_model_len > limit:
        # vLLM's _get_and_verify_max_len refuses a --max-model-len above the model's derived length
        # ("User-specified max_model_len (...) is greater than the derived max_model_len ...", a
        # ValueError at start-up unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, whose own warning says RoPE
        # positions past it give nan: vllm-project/vllm@18ec6629253632af0a384f2ffbb8c6b28af322e7:
        # vllm/config/model.py); no plan is sized for a length the model has no positions for
        raise m.fail_value(
            "max_model_len",
            f"{memory.max_model_len:,} exceeds {model.name}'s context ({model.context_words}): expected at most {limit:,}; "
            + ("vLLM refuses a longer --max-model-len at start-up (unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: positions past the model's give nan under RoPE)"
             if engine == "vllm" else f"positions past the model's are none it was trained on, which {engine} serves at best with a warning"),
        )
    if memory.max_model_len is not None and memory.max_model_len < workload.context_tokens:
        raise m.fail_value(
            "max_model_len",
            f"{memory.max_model_len} is below the p{memory.context_percentile:g} context "
            f"({workload.context_tokens} tokens = prompt + output at that percentile)",
        )
    return workload


def _trace(t: Fields, base_dir: Path) -> tuple[TraceSummary, Path, str | None]:
    """traffic.trace: a path (relative to the workload's folder), or {path, time_unit}."""
    from .traces import TIME_UNITS, read_trace_file, summarise

    if isinstance(t.raw.get("trace"), dict):
        sub = t.sub("trace")
        sub.check_keys(("path", "time_unit"))
        spec = sub.string("path")
        unit = sub.string("time_unit", None, choices=tuple(TIME_UNITS))
    else:
        spec, unit = t.string("trace"), None
    trace_path = Path(spec).expanduser()
    if not trace_path.is_absolute():
        trace_path = base_dir / trace_path
    label = f"{t.file}: traffic.trace: {trace_path}"
    return summarise(read_trace_file(trace_path, label, time_unit=unit), path_label=spec), trace_path, unit


def _traffic(t: Fields, base_dir: Path, catalog_root: Path | None = None) -> Traffic:
    """traffic: a steady rate, or a daily profile (traffic.profile or a trace of a day or more)
    whose peak hour is the rate, or a trace shorter than a day (a sample: its mean rate, or
    requests_per_s when given); lengths from the file, from the trace's columns, or from a named
    dataset (traffic.dataset, catalogs/datasets.yaml), in that order of precedence per length."""
    if t.has("profile") and t.has("trace"):
        raise t.fail_value("trace", "give traffic.profile or traffic.trace, not both")
    profile: tuple[float, ...] = ()
    lengths: dict[str, LengthDist] = {}
    summary: TraceSummary | None = None
    trace_file: Path | None = None
    unit = None
    if t.has("profile"):
        profile = parse_profile(t)
    elif t.has("trace"):
        summary, trace_file, unit = _trace(t, base_dir)
        profile = summary.profile_rps
        columns = {"prompt_tokens": ("prompt", summary.prompt_tokens), "output_tokens": ("output", summary.output_tokens)}
        for key, (role, values) in columns.items():
            if values is not None and values.size:
                column = dict(summary.columns)[role]
                if t.has(key):
                    raise t.fail_value(key, f"also given by the trace's {column} column; give it in one place")
                pts = np.percentile(values, [50.0, 90.0, 99.0])
                lengths[key] = LengthDist(percentiles=tuple((p, float(v)) for p, v in zip((50.0, 90.0, 99.0), pts)), cap=float(values.max()))
            elif role in dict(summary.columns) and not t.has(key):  # the column is there, with no length in it
                column = dict(summary.columns)[role]
                raise t.fail_value(
                    key,
                    f"the trace's {column} column has no length above 0 ({summary.zero_lengths:,} zero and {summary.missing_lengths:,} blank lengths in the trace's length columns): "
                    f"give traffic.{key} (a number of tokens, or percentiles)",
                )
    if profile:
        peak = max(profile)
        if not MIN_REQUESTS_PER_S <= peak <= MAX_REQUESTS_PER_S:
            source = "trace's busiest hour" if t.has("trace") else "profile's peak"
            raise t.fail_value(
                "trace" if t.has("trace") else "profile",
                f"the {source} is {peak:g} req/s; expected a peak from {MIN_REQUESTS_PER_S:g} to {MAX_REQUESTS_PER_S:g} req/s",
            )
        if t.has("requests_per_s") and abs(t.number("requests_per_s", gt=0) - peak) > 1e-9 * peak:
            raise t.fail_value(
                "requests_per_s",
                f"{t.number('requests_per_s'):g} differs from the daily profile's peak ({peak:g}); "
                "with a profile, requests_per_s is its peak hour: omit it or make them agree",
            )
        rate = peak
    elif summary is not None and not t.has("requests_per_s"):
        rate = summary.mean_rps  # a sample: its mean rate
    else:
        rate = t.number("requests_per_s", gt=0)
        if not MIN_REQUESTS_PER_S <= rate <= MAX_REQUESTS_PER_S:
            raise t.fail_value("requests_per_s", f"expected a number from {MIN_REQUESTS_PER_S:g} to {MAX_REQUESTS_PER_S:g} req/s, got {rate:g}")
    if t.has("dataset"):
        from .datasets import dataset

        named = dataset(t.string("dataset"), catalog_root, where=f"{t.file}: traffic.dataset: ")
        replaced = [key for key in ("prompt_tokens", "output_tokens") if key in lengths or t.has(key)]
        if len(replaced) == 2:  # the dataset would give nothing: what the user wrote would be dropped
            by = " and ".join(f"the trace's {dict(summary.columns)[k.split('_')[0]]} column" if k in lengths and summary else f"traffic.{k}" for k in replaced)
            raise t.fail_value("dataset", f"{named.name}'s prompt and output lengths are both replaced ({by}), so it gives nothing; drop it, or one of them")
        for key, dist in (("prompt_tokens", named.prompt), ("output_tokens", named.output)):
            if key not in replaced:
                lengths[key] = dist
    return Traffic(
        requests_per_s=rate,
        prompt_tokens=lengths.get("prompt_tokens") or _length(t, "prompt_tokens"),
        output_tokens=lengths.get("output_tokens") or _length(t, "output_tokens"),
        profile_rps=profile,
        trace=summary,
        trace_file=str(trace_file) if trace_file else None,
        trace_time_unit=unit,
    )
