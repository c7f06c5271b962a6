"""Named length distributions of benchmark datasets (catalogs/datasets.yaml): the prompt and output
lengths of every sample of a dataset a public benchmark serves, as a quantile table.

A measurement row names one in its `dataset` column (MLPerf rows: `mlperf-llama2-70b`,
`mlperf-mixtral-8x7b`, `mlperf-llama3.1-8b`, `mlperf-llama3.1-405b`, `mlperf-deepseek-r1`) instead
of fixed `isl`/`osl`; a workload names one as `traffic.dataset:` instead of `prompt_tokens` /
`output_tokens`.

A table (percentile -> tokens, 0 and 100 included) is read as a piecewise-linear quantile
function: quantile(q) interpolates between the table's points, moments come from it on the same
fine grid the log-normal LengthDist uses. Such a distribution is a LengthDist (the queueing model
and the memory model take it unchanged); its `mu`/`sigma` are the log-normal fitted to the table's
inner percentiles, which nothing but a summary reads: the simulator draws lengths from the table
itself (EmpiricalDist.draw).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

from .errors import FieldValueError, InputFileError, UnknownNameError
from .schema import Fields, read_document
from .workload import _GRID, LengthDist

_ENTRY_KEYS = ("description", "samples", "prompt_tokens", "output_tokens", "latency_bounds", "notes")
_DIST_KEYS = ("mean", "percentiles", "source")
_BOUND_KEYS = ("ttft_p99_ms", "tpot_p99_ms")
SCENARIOS = ("server", "interactive")  # MLPerf's names for Poisson arrivals at a rate, under its two sets of bounds


@dataclass(frozen=True, kw_only=True)
class EmpiricalDist(LengthDist):
    """A length distribution given by its quantile table ((percentile, tokens), ...), 0 and 100 included."""

    table: tuple[tuple[float, float], ...]

    @property
    def _pcts(self) -> np.ndarray:
        return np.array([p for p, _ in self.table], dtype=float)

    @property
    def _values(self) -> np.ndarray:
        return np.array([v for _, v in self.table], dtype=float)

    def quantile(self, percentile: float) -> float:
        return float(np.interp(percentile, self._pcts, self._values))

    def quantiles(self, percentiles: np.ndarray) -> np.ndarray:
        return np.interp(np.asarray(percentiles, dtype=float), self._pcts, self._values)

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n random lengths by the table's own quantile function (inverse transform), not the
        log-normal fitted to it: on mlperf-llama2-70b that fit has mean prompt 180 and output 345
        tokens where the table has 223 and 294."""
        return self.quantiles(rng.uniform(0.0, 100.0, n))

    @cached_property
    def _samples(self) -> np.ndarray:
        return np.interp(_GRID * 100.0, self._pcts, self._values)

    def scaled_to_mean(self, mean_tokens: float) -> "EmpiricalDist":
        """The same shape with its lengths scaled so that the mean is `mean_tokens`, never beyond the
        table's largest length (a generation cap such as max_tokens): lengths the scaling would push
        past it stay at it, and the others are scaled further until the mean is reached (or every
        length is at the cap)."""
        cap = float(self._values.max())
        target = min(float(mean_tokens), cap)
        factor = target / max(self.mean, 1e-9)
        values = self._values
        for _ in range(30):
            trial = np.minimum(values * factor, cap)
            grid_mean = float(np.interp(_GRID * 100.0, self._pcts, trial).mean())
            if abs(grid_mean - target) <= 1e-6 * target:
                break
            factor *= target / max(grid_mean, 1e-9)
        return make_empirical(tuple((p, float(v)) for p, v in zip(self._pcts, np.minimum(values * factor, cap))))


def make_empirical(table: tuple[tuple[float, float], ...]) -> EmpiricalDist:
    """An EmpiricalDist from its table; the log-normal fields (`percentiles`, `cap`) from its inner points."""
    inner = tuple((p, max(v, 1.0)) for p, v in table if 0.0 < p < 100.0)
    return EmpiricalDist(percentiles=inner, cap=float(max(v for _, v in table)), table=table)


@dataclass(frozen=True, slots=True, kw_only=True)
class Dataset:
    """A benchmark dataset's lengths: prompt and output tokens per request."""

    name: str
    description: str
    samples: int
    prompt: EmpiricalDist
    output: EmpiricalDist
    prompt_source: str
    output_source: str
    # The p99 latency bounds (TTFT ms, TPOT ms) a run on this dataset is held to, by scenario
    # (MLPerf's Server and Interactive: a valid run's rate is the largest its submitter found
    # within them); empty where the benchmark sets none.
    latency_bounds: tuple[tuple[str, float, float], ...] = ()
    bounds_source: str = ""

    def bounds_ms(self, scenario: str) -> tuple[float, float] | None:
        """(TTFT p99 ms, TPOT p99 ms) of `scenario` (server, interactive), or None."""
        for name, ttft, tpot in self.latency_bounds:
            if name == scenario:
                return ttft, tpot
        return None


def _bounds(f: Fields) -> tuple[tuple[tuple[str, float, float], ...], str]:
    """The entry's `latency_bounds`: scenario -> {ttft_p99_ms, tpot_p99_ms}, plus their `source`."""
    if "latency_bounds" not in f.raw:
        return (), ""
    sub = f.sub("latency_bounds", default_empty=False)
    out = []
    for name in sub.raw:
        if name == "source":
            continue
        if name not in SCENARIOS:
            raise sub.fail_value(str(name), f"unknown scenario; expected one of {', '.join(SCENARIOS)} (or source)")
        b = sub.sub(name, default_empty=False)
        b.check_keys(_BOUND_KEYS)
        out.append((str(name), b.number("ttft_p99_ms", gt=0), b.number("tpot_p99_ms", gt=0)))
    return tuple(out), sub.string("source", "")


def _dist(f: Fields, key: str) -> tuple[EmpiricalDist, str]:
    sub = f.sub(key, default_empty=False)
    sub.check_keys(_DIST_KEYS)
    raw = sub.raw.get("percentiles")
    where = f"{sub.file}: {key}.percentiles"
    if not isinstance(raw, dict) or not raw:
        raise FieldValueError(f"{where}: expected a mapping percentile -> tokens, 0 and 100 included")
    try:
        table = tuple(sorted((float(p), float(v)) for p, v in raw.items()))
    except (TypeError, ValueError):
        raise FieldValueError(f"{where}: expected numbers (percentile: tokens)") from None
    if table[0][0] != 0.0 or table[-1][0] != 100.0:
        raise FieldValueError(f"{where}: the table must run from percentile 0 to 100")
    for (p0, v0), (p1, v1) in zip(table, table[1:]):
        if v1 < v0:
            raise FieldValueError(f"{where}: {p1:g}: {v1:g} tokens is below {p0:g}: {v0:g}; lengths must not decrease")
    if table[0][1] < 1:
        raise FieldValueError(f"{where}: 0: expected lengths >= 1 token, got {table[0][1]:g}")
    sub.number("mean", None, gt=0)
    return make_empirical(table), sub.string("source", "")


@lru_cache(maxsize=8)
def _load(path: str, mtime_ns: int) -> dict[str, Dataset]:
    label = path
    doc = Fields(read_document(Path(path), label), label)
    doc.check_keys(("datasets", "source", "notes"))
    raw = doc.raw.get("datasets")
    if not isinstance(raw, dict) or not raw:
        raise FieldValueError(f"{label}: datasets: expected a mapping of dataset names to their lengths")
    out = {}
    for name, _ in raw.items():
        f = Fields(raw[name], label, f"datasets.{name}")
        f.check_keys(_ENTRY_KEYS)
        prompt, ps = _dist(f, "prompt_tokens")
        output, os_ = _dist(f, "output_tokens")
        bounds, bounds_source = _bounds(f)
        out[str(name).lower()] = Dataset(
            name=str(name),
            description=f.string("description", ""),
            samples=f.integer("samples", 0, ge=0),
            prompt=prompt,
            output=output,
            prompt_source=ps,
            output_source=os_,
            latency_bounds=bounds,
            bounds_source=bounds_source,
        )
    return out


def datasets_path(catalog_root: Path | str | None = None) -> Path:
    if catalog_root is None:
        from .catalog import default_catalog_dir

        catalog_root = default_catalog_dir()
    return Path(catalog_root) / "datasets.yaml"


def load_datasets(catalog_root: Path | str | None = None) -> dict[str, Dataset]:
    """Every named dataset of a catalog directory (default: the shipped catalogs), by lower-case name."""
    path = datasets_path(catalog_root)
    if not path.is_file():
        from .catalog import default_catalog_dir

        path = datasets_path(default_catalog_dir())  # a user catalog without its own: the shipped names
        if not path.is_file():
            raise InputFileError(f"{path}: file not found (the named benchmark datasets)")
    return _load(str(path), path.stat().st_mtime_ns)


# MLPerf's benchmark names carry an accuracy target and a variant of the same samples
# (llama2-70b-99.9, llama2-70b-interactive-99, llama3_1-8b-edge; mlcommons/inference
# loadgen/mlperf.conf, the submissions' folders and the reference SUT_VLLM.py's --lg-model-name
# choices): the dataset, and the model, are the benchmark's.
_MLPERF_SUFFIX = re.compile(r"(?:-(?:99(?:\.9)?|interactive|edge|datacenter))+$")


# The MLPerf datasets catalogs/datasets.yaml ships: rows on them are read as MLPerf submissions.
MLPERF_DATASETS = ("mlperf-llama2-70b", "mlperf-mixtral-8x7b", "mlperf-llama3.1-8b", "mlperf-llama3.1-405b", "mlperf-deepseek-r1")


def mlperf_dataset_name(name: str) -> str | None:
    """The shipped MLPerf dataset a name means, by its own name or an MLPerf benchmark name that
    says it is one (`llama2-70b-99.9`, `mlperf-llama3_1-8b-edge` -> `mlperf-llama3.1-8b`); None for
    any other name, a bare `llama2-70b` included (a catalog may hold a dataset of that name;
    `dataset` falls back to MLPerf's only where it holds none)."""
    key = str(name).strip().lower()
    if key in MLPERF_DATASETS:
        return key
    marked = key.startswith("mlperf-") or _MLPERF_SUFFIX.search(key) or re.match(r"llama\d_\d", key)
    found = dataset_key(name)
    return found if marked and found in MLPERF_DATASETS else None


def mlperf_benchmark_base(name: str) -> str:
    """An MLPerf benchmark name without its accuracy target and variant, in sizer's spelling, lower
    case (`llama2-70b-interactive-99` -> `llama2-70b`, `llama3_1-8b-edge` -> `llama3.1-8b`): what
    names its dataset here and its model in a measurement row (measurements.checkpoint_architecture)."""
    base = _MLPERF_SUFFIX.sub("", str(name).strip().lower())
    return re.sub(r"^llama(\d)_(\d)", r"llama\1.\2", base)


def dataset_key(name: str) -> str:
    """A dataset name as the catalog keys it: lower case, and an MLPerf benchmark name
    (`llama2-70b-99.9`, `mlperf-llama3_1-8b-edge`) as its dataset (`mlperf-llama2-70b`,
    `mlperf-llama3.1-8b`)."""
    return "mlperf-" + mlperf_benchmark_base(str(name).strip().lower().removeprefix("mlperf-"))


def dataset(name: str, catalog_root: Path | str | None = None, where: str = "") -> Dataset:
    """The named dataset (also by an MLPerf benchmark name: dataset_key); an unknown name is an
    error listing the known ones (exit 8)."""
    known = load_datasets(catalog_root)
    found = known.get(str(name).strip().lower()) or known.get(dataset_key(name))
    if found is None:
        names = sorted(d.name for d in known.values())
        close = difflib.get_close_matches(str(name).lower(), [n.lower() for n in names], n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownNameError(f"{where}unknown dataset {name!r}{hint}; known: {', '.join(names)}")
    return found
