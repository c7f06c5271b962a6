"""How sure a plan is: the measured rows behind each device, the model's error on rows it was not
fitted to, error bands on a deployment's largest rate and a plan's cost, and the error factors a
plan sized at a chosen confidence holds its SLOs under. The single source of truth for *how far
off the latency model may be*, in log ratios (measured / predicted, dimensionless).

Residuals. `sizer validate` predicts every scoring row of the shipped measurement table (rows the
efficiency factors were never fitted to: measurements.split_roles) and keeps, per row and metric
(mean TPOT, mean TTFT, output throughput), the log ratio e = log(measured / predicted), twice:

    measured    under the fitted efficiency table as it stands (the device's own offsets included)
    global      under the same table without any entry naming a device: the error of a device whose
                speed is its datasheet figures times the global factors (what every device without
                fit rows gets). Global factors are the vendor's entries where its devices have fit
                rows (efficiency.py's vendor scope: AMD's hold the vendor's part of MI300X's
                offsets), else the device-neutral ones. For a vendor with one measured device
                (MI300X) its global residuals are partly in-sample, since its own fit rows made the
                vendor's offsets; MI325X's rows, of a device with no fit rows, are the out-of-sample
                check (16 % median error on four MLPerf v5.0 Offline rows, 27-40 % before)

They are computed once per catalog (residual_table: the stored catalogs/residuals.json when its
fingerprint matches the catalog's files, else a user cache, else computed and cached there).

Groups. A deployment (device d, engine e) takes its errors from a chain of nested groups of
scoring rows, most specific first:

    device+engine   rows of d under e
    device          rows of d
    family          rows of d's architecture family (gpus.yaml `family`: hopper, blackwell, ...)
    vendor          rows of d's vendor (gpus.yaml `vendor`)
    all             every scoring row

A level with no rows, or with the same rows as the level before it, is left out. The residual
column is `measured` when the device has efficiency entries fitted on its own rows (basis
"measured") and `global` otherwise (basis "datasheet x global factors").

Shrinkage. The error distribution of a level j with c_j configurations (sweeps; rows of one sweep
are not independent) is a mixture:

    P_j = w_j Emp_j + (1 - w_j) P_{j+1},    w_j = c_j / (c_j + PRIOR_CONFIGURATIONS),    P_last = Emp_all

Emp_j puts equal weight on each of the level's rows. A group with few configurations leans on the
wider pooled errors of its parents; a large one on its own. Quantiles are of that weighted
distribution: the smallest residual whose cumulative weight reaches the probability
(weighted_quantile).

A device and engine with no row at all is a group never seen: its bias is unknown. Its
distribution is then, per level, the rows' within-group errors (each less its device+engine
group's median) about the level's mean group bias, each group alike, mixed over the levels as
above and spread by a normal of sd = sd(group medians) x sqrt(1 + 1/G), the predictive spread of
one more of G groups (normal_mixture_quantile). Left one device out at a time, bands built this
way covered 78 % of the device's rows on the six devices measured before issue 13a's rows (83 %
with them), where the plain pooled errors covered 68 %.

Bands. The 80 % band of a figure predicted as x is [x exp(q_0.1), x exp(q_0.9)] of its metric's
distribution. On a deployment's largest rate the errors act as a time stretch: the replica's steps
take k = exp(q(e_tpot)) as long as predicted (TPOT at a given running batch is off by exactly the
step's error), and its TTFT is off by k_f = exp(q(e_ttft)); the largest rate is then the model's
search with every step time x k and the TTFT bound held against TTFT x k_f / k (queueing.Limits's
scales). The low end of the rate (p10) takes both errors at their 0.9 quantile, the high end (p90)
at 0.1; taking the two metrics at the same quantile treats their errors as moving together.

Confidence. A plan at confidence q holds its SLOs under the same stretch at the q quantile
(confidence_factors): 1 at q = 0.5 (the model's own estimate), never below 1 above it, never above
1 below it.

Coverage. validate's interval_coverage is the share of scoring-row figures (a row's TPOT, TTFT and
throughput each count once) inside the 80 % band built without the row's own configuration
(leave one configuration out: the band never sees the sweep it is scored on), and for devices
with no rows of their own, each device's rows under global factors against a band built without
that device (held_out_coverage).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

METRICS = ("tpot", "ttft", "throughput")
BASES = ("measured", "global")
BASIS_LABEL = {"measured": "measured", "global": "datasheet x global factors"}
LEVELS = ("device+engine", "device", "family", "vendor", "all")
PRIOR_CONFIGURATIONS = 5.0
"""Configurations a group needs to weigh as much as its parent (w = c / (c + 5))."""
BAND = (0.1, 0.9)
BAND_TOLERANCE = 0.02  # relative precision of the rates at a band's ends (the model's own search: 0.01)
RESIDUALS_VERSION = 4  # bump when the residuals' definition changes: stored files then no longer match (3: prompt_tokens_max; 4: running_sequences_max)
RESIDUALS_FILE = "residuals.json"
_DIGITS = 6


# ---------------------------------------------------------------------------------------------
# the residual table
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ResidualRow:
    """One scoring row's log errors, log(measured / predicted), per metric; None where the row
    does not measure the metric (or the model gives no figure)."""

    row_id: str
    config: str  # the configuration (sweep) the row belongs to
    device: str
    engine: str
    measured: tuple[float | None, float | None, float | None]  # tpot, ttft, throughput
    global_: tuple[float | None, float | None, float | None]

    def errors(self, basis: str) -> tuple[float | None, float | None, float | None]:
        return self.measured if basis == "measured" else self.global_


@dataclass(frozen=True, slots=True, kw_only=True)
class ResidualTable:
    """The scoring rows' residuals of a catalog, and where they came from."""

    rows: tuple[ResidualRow, ...]
    fingerprint: str
    source: str  # the efficiency table and measurements they were computed with
    computed: str = ""  # "stored" (the catalog's residuals.json), "cache" or "now"
    # (device, engine, tokens): the longest prompt among the modelled rows, fit and scoring (measured_extents)
    prompt_tokens_max: tuple[tuple[str, str, float], ...] = ()
    # (device, engine, sequences): the most sequences one replica ran at once among the same rows (measured_running)
    running_sequences_max: tuple[tuple[str, str, float], ...] = ()

    def __len__(self) -> int:
        return len(self.rows)


def fingerprint(catalog_root: Path | str) -> str:
    """SHA-256 over every file the residuals depend on: the measurement table, the efficiency
    table, the GPU catalog and the model catalog (names and bytes), and RESIDUALS_VERSION."""
    root = Path(catalog_root)
    h = hashlib.sha256(f"sizer residuals v{RESIDUALS_VERSION}\n".encode())
    files: list[Path] = []
    mdir = root / "measurements"
    if mdir.is_dir():
        files += sorted(p for p in mdir.iterdir() if p.is_file() and p.suffix in (".csv", ".yaml", ".yml", ".json"))
    for name in ("efficiency.json", "efficiency.yaml", "gpus.yaml"):
        if (root / name).is_file():
            files.append(root / name)
    mods = root / "models"
    if mods.is_dir():
        files += sorted(p for p in mods.iterdir() if p.is_file() and p.suffix in (".yaml", ".yml", ".json"))
    for p in files:
        h.update(str(p.relative_to(root)).encode() + b"\0")
        h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def _r(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else round(float(x), _DIGITS)


def _log_error(measured: float | None, predicted: float | None) -> float | None:
    if measured is None or predicted is None or not math.isfinite(predicted) or predicted <= 0 or measured <= 0:
        return None
    return _r(math.log(measured / predicted))


def _errors(result, rate_steps_s: dict[str, float] | None = None) -> tuple[float | None, float | None, float | None]:
    """A scoring row's log errors (TPOT, TTFT, throughput). A rate row (Poisson arrivals: MLPerf
    Server, Interactive) keeps its throughput error, which for a run at the largest rate within
    its bounds is the model's largest rate within them against the run's (validate.bounded_rates_rps:
    the figure the bands act on); its TPOT error is the step's at the running
    batch the row implies (validate.rate_row_steps_s), and it has no TTFT error: the bands stretch
    every step by the TPOT error, and an open loop's TPOT and TTFT at its rate carry the model's
    population too, which near a replica's capacity multiplies a step error many times (the 68
    MLPerf Server and Interactive rows of the shipped table, 2026-12-03: 15 saturated at their
    rate and the rest 0.13x-3.58x the measured TPOT, the step at their own running batch 4.1 % /
    19 % off at the median / p90)."""
    r = result.row
    if r.kind == "rate" and rate_steps_s is not None:
        step = rate_steps_s.get(r.row_id)
        return (
            _log_error(r.tpot_ms, step * 1000.0 if step is not None else None),
            None,
            _log_error(r.throughput_tokens_per_s, result.predicted_tokens_per_s),
        )
    return (
        _log_error(r.tpot_ms, result.predicted_tpot_ms),
        _log_error(r.ttft_ms, result.predicted_ttft_ms),
        _log_error(r.throughput_tokens_per_s, result.predicted_tokens_per_s),
    )


def config_id(config_key: str) -> str:
    """A short, stable name of a configuration (the first 12 hex digits of its key's SHA-256)."""
    return hashlib.sha256(config_key.encode("utf-8")).hexdigest()[:12]


def global_table(table):
    """The efficiency table without any entry naming a device: datasheet x global factors (its
    vendor's entries, if any, else the device-neutral ones), what a device with no entry gets."""
    from dataclasses import replace

    entries = tuple(e for e in table.entries if "device" not in dict(e.match))
    return replace(table, entries=entries, path="", source=f"{table.path or 'efficiency table'} without device entries")


def compute_residuals(catalog, rows=None, roles=None, efficiency=None) -> ResidualTable:
    """Predict the scoring rows (default: the shipped table's, split by split_roles) under the
    catalog's efficiency table and under its global factors alone; their log errors."""
    from .efficiency import efficiency_table
    from .measurements import copies, shipped_split
    from .validate import rate_row_steps_s, validate_rows

    table = efficiency if efficiency is not None else efficiency_table(catalog.root)
    if rows is None:
        mdir = Path(catalog.root) / "measurements"
        rows, roles = shipped_split(catalog, mdir) if mdir.is_dir() else ([], {})
    prompts, running = measured_extents(rows, catalog)
    score = [r for r in rows if roles is None or roles.get(r.row_id) == "score"]
    repeated = copies(score)  # a run exported twice is one scoring figure, not two
    score = [r for r in score if r.row_id not in repeated]
    a = validate_rows(score, catalog, efficiency=table)
    gtable = global_table(table)
    b = validate_rows(score, catalog, efficiency=gtable)
    steps_a = rate_row_steps_s(score, catalog, table)
    steps_b = rate_row_steps_s(score, catalog, gtable)
    by_id = {r.row.row_id: r for r in b.results}
    out = []
    for r in a.results:
        g = by_id.get(r.row.row_id)
        out.append(
            ResidualRow(
                row_id=r.row.row_id,
                config=config_id(r.row.config_key),
                device=r.device,
                engine=r.row.engine,
                measured=_errors(r, steps_a),
                global_=_errors(g, steps_b) if g is not None else (None, None, None),
            )
        )
    out.sort(key=lambda x: x.row_id)
    eff = Path(table.path).name if table.path else "an in-memory efficiency table"
    source = f"{eff} (fitted {table.fitted or '?'}) on the {len(out)} scoring rows of measurements/"
    return ResidualTable(rows=tuple(out), fingerprint=fingerprint(catalog.root), source=source, computed="now", prompt_tokens_max=prompts, running_sequences_max=running)


def residuals_to_json(table: ResidualTable) -> str:
    """The stored form (deterministic: rows by id, residuals to six decimals)."""
    doc = {
        "note": "Written by `sizer validate --write-residuals` (or `sizer calibrate`): log(measured / predicted) of the scoring rows; edit by re-running it.",
        "version": RESIDUALS_VERSION,
        "fingerprint": table.fingerprint,
        "source": table.source,
        "metrics": list(METRICS),
        "rows": [[r.row_id, r.config, r.device, r.engine, list(r.measured), list(r.global_)] for r in table.rows],
        "prompt_tokens_max": [[d, e, round(t, 1)] for d, e, t in table.prompt_tokens_max],
        "running_sequences_max": [[d, e, round(n, 1)] for d, e, n in table.running_sequences_max],
    }
    return json.dumps(doc, indent=None, separators=(",", ":"), ensure_ascii=False) + "\n"


def residuals_from_json(text: str, computed: str) -> ResidualTable | None:
    try:
        doc = json.loads(text)
        rows = tuple(
            ResidualRow(row_id=str(i), config=str(c), device=str(d), engine=str(e), measured=tuple(m), global_=tuple(g))  # type: ignore[arg-type]
            for i, c, d, e, m, g in doc["rows"]
        )
        prompts = tuple((str(d), str(e), float(t)) for d, e, t in doc["prompt_tokens_max"])
        running = tuple((str(d), str(e), float(n)) for d, e, n in doc["running_sequences_max"])
        return ResidualTable(rows=rows, fingerprint=str(doc["fingerprint"]), source=str(doc["source"]), computed=computed, prompt_tokens_max=prompts, running_sequences_max=running)
    except (ValueError, KeyError, TypeError):
        return None


def _cache_dir() -> Path | None:
    """Where computed residuals of catalogs other than the shipped state are kept:
    $SIZER_CACHE_DIR, else $XDG_CACHE_HOME/sizer, else ~/.cache/sizer ("" disables)."""
    env = os.environ.get("SIZER_CACHE_DIR")
    if env is not None:
        return Path(env) if env else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sizer"


_TABLES: dict[tuple[str, str], ResidualTable] = {}


def residual_table(catalog) -> ResidualTable:
    """The catalog's residuals: its stored residuals.json when the fingerprint matches, else a
    cached copy for this fingerprint, else computed now (a few seconds) and cached (memoised per
    catalog directory and fingerprint within a process)."""
    fp = fingerprint(catalog.root)
    key = (str(Path(catalog.root).resolve()), fp)
    if key not in _TABLES:
        _TABLES[key] = _load_or_compute(key[0], fp, catalog)
    return _TABLES[key]


def _read_stored(path: Path, computed: str) -> ResidualTable | None:
    """A stored or cached residual file, or None when it cannot be read as one (not UTF-8,
    unreadable, another format): then the residuals are computed again, as for a miss."""
    try:
        return residuals_from_json(path.read_text(encoding="utf-8"), computed)
    except (OSError, UnicodeDecodeError):
        return None


def _load_or_compute(root: str, fp: str, catalog) -> ResidualTable:
    stored = Path(root) / RESIDUALS_FILE
    if stored.is_file():
        t = _read_stored(stored, "stored")
        if t is not None and t.fingerprint == fp:
            return t
    cache = _cache_dir()
    cached = cache / f"residuals-{fp[:24]}.json" if cache is not None else None
    if cached is not None and cached.is_file():
        t = _read_stored(cached, "cache")
        if t is not None and t.fingerprint == fp:
            return t
    t = compute_residuals(catalog)
    if cached is not None:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(residuals_to_json(t), encoding="utf-8")
            tmp.replace(cached)
        except OSError:
            pass  # an unwritable cache only costs the next run the same computation
    return t


def write_residuals(catalog, path: Path | str | None = None) -> tuple[ResidualTable, Path]:
    """Compute the catalog's residuals and store them (default: <catalog>/residuals.json)."""
    t = compute_residuals(catalog)
    target = Path(path) if path is not None else Path(catalog.root) / RESIDUALS_FILE
    try:
        target.write_text(residuals_to_json(t), encoding="utf-8")
    except OSError as exc:
        from .errors import InputFileError

        raise InputFileError(f"{target}: cannot write the residuals: {exc.strerror or exc}") from None
    _TABLES.clear()
    _MODELS.clear()
    return t, target


# ---------------------------------------------------------------------------------------------
# groups, shrinkage and quantiles
# ---------------------------------------------------------------------------------------------


def weighted_quantile(values: np.ndarray, weights: np.ndarray, p: float) -> float:
    """The smallest value whose cumulative weight (values in increasing order, weights
    normalised to 1) reaches p: the quantile of a discrete distribution, exact (no interpolation).
    Ties in cumulative weight are met at p - 1e-12, so p = 0.5 over two equal weights gives the
    lower value."""
    v = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    keep = w > 0
    v, w = v[keep], w[keep]
    if not v.size:
        return math.nan
    order = np.argsort(v, kind="stable")
    v, w = v[order], w[order]
    cum = np.cumsum(w) / w.sum()
    i = int(np.searchsorted(cum, p - 1e-12, side="left"))
    return float(v[min(i, v.size - 1)])


@dataclass(frozen=True, slots=True, kw_only=True)
class Level:
    name: str  # one of LEVELS
    label: str  # e.g. "H100-SXM vllm"
    mask: np.ndarray  # rows of the table in the group
    configurations: int


def mixture_weights(levels: list[Level], n: int, prior: float = PRIOR_CONFIGURATIONS) -> np.ndarray:
    """Row weights of the shrunk distribution of the most specific level (module docstring):
    P_j = w_j Emp_j + (1 - w_j) P_{j+1}, w_j = c_j / (c_j + prior), the last level's P its Emp
    (each level's rows alike within it)."""
    weights = np.zeros(n)
    remaining = 1.0
    for i, lev in enumerate(levels):
        rows = int(lev.mask.sum())
        if not rows:
            continue
        w = 1.0 if i == len(levels) - 1 else lev.configurations / (lev.configurations + prior)
        weights[lev.mask] += remaining * w / rows
        remaining *= 1.0 - w
    return weights


class ErrorModel:
    """Grouped residuals of one catalog, ready for lookups (immutable after construction)."""

    def __init__(self, table: ResidualTable, families: dict[str, tuple[str, str]] | None = None):
        self.table = table
        self._memo: dict[tuple, Distribution | None] = {}
        self._masks: dict[tuple[str, str], np.ndarray] = {}
        self._codes: dict[str, np.ndarray] = {}
        rows = table.rows
        self.n = len(rows)
        self.families = dict(families or {})  # device -> (family, vendor)
        fam = self.families
        self.device = np.array([r.device for r in rows], dtype=object)
        self._devices = frozenset(r.device for r in rows)
        self.engine = np.array([r.engine for r in rows], dtype=object)
        self.family = np.array([fam.get(r.device, ("", ""))[0] for r in rows], dtype=object)
        self.vendor = np.array([fam.get(r.device, ("", ""))[1] for r in rows], dtype=object)
        self.group = np.array([f"{r.device}|{r.engine}" for r in rows], dtype=object)
        names = sorted(set(self.group))
        self.group_id = np.array([names.index(g) for g in self.group], dtype=int) if names else np.zeros(0, dtype=int)
        configs = sorted({r.config for r in rows})
        index = {c: i for i, c in enumerate(configs)}
        self.config = np.array([index[r.config] for r in rows], dtype=int)
        self.values = {
            basis: np.array([[np.nan if x is None else float(x) for x in r.errors(basis)] for r in rows], dtype=float).reshape(self.n, len(METRICS))
            for basis in BASES
        }

    def _is(self, column: str, value: str) -> np.ndarray:
        """Rows whose `column` (device, engine, family, vendor) is `value`: integer codes compared,
        memoised (object arrays compared string by string cost a millisecond a lookup)."""
        key = (column, value)
        if key not in self._masks:
            values = getattr(self, column)
            names = sorted(set(values.tolist()))
            codes = self._codes.setdefault(column, np.searchsorted(np.array(names, dtype=object), values) if names else np.zeros(0, dtype=int))
            self._masks[key] = codes == names.index(value) if value in names else np.zeros(self.n, dtype=bool)
        return self._masks[key]

    def _key(self, device: str, engine: str, basis: str, metric: str) -> tuple:
        """Memo key of a lookup: a device with no rows has the distribution of its family and
        vendor, whichever device it is."""
        if device in self._devices:
            return (device, engine, basis, metric)
        return ("", self.families.get(device, ("", "")), engine, basis, metric)

    def levels(self, device: str, engine: str, keep: np.ndarray | None = None) -> list[Level]:
        """The nested groups of (device, engine) among the rows in `keep` (default all), most
        specific first, without empty levels or levels with the same rows as the one before."""
        family, vendor = self.families.get(device, ("", ""))
        keep = np.ones(self.n, dtype=bool) if keep is None else keep
        none = np.zeros(self.n, dtype=bool)
        d = self._is("device", device)
        specs = [
            ("device+engine", f"{device} {engine}", d & self._is("engine", engine)),
            ("device", f"{device}, other engines", d),
            ("family", f"{family} family", self._is("family", family) if family else none),
            ("vendor", f"{vendor} devices", self._is("vendor", vendor) if vendor else none),
            ("all", "all devices", np.ones(self.n, dtype=bool)),
        ]
        out: list[Level] = []
        for name, label, mask in specs:
            mask = mask & keep
            if not mask.any() or (out and np.array_equal(mask, out[-1].mask)):
                continue
            configurations = int(np.count_nonzero(np.bincount(self.config[mask])))
            out.append(Level(name=name, label=label, mask=mask, configurations=configurations))
        return out

    def distribution(self, device: str, engine: str, basis: str, metric: str, exclude: np.ndarray | None = None) -> Distribution | None:
        """The error distribution of (device, engine) for one metric (memoised without `exclude`)."""
        if exclude is not None:
            return self._distribution(device, engine, basis, metric, exclude)
        key = self._key(device, engine, basis, metric)
        if key not in self._memo:
            self._memo[key] = self._distribution(device, engine, basis, metric, None)
        return self._memo[key]

    def _distribution(self, device: str, engine: str, basis: str, metric: str, exclude: np.ndarray | None = None) -> Distribution | None:
        """The error distribution of (device, engine) for one metric, from the rows not in
        `exclude` (module docstring): the shrunk mixture of its groups' residuals when
        device+engine has rows; else the levels' within-group residuals about each level's mean
        group bias, spread by the groups' biases (a group never seen). None: no row measures it."""
        col = self.values[basis][:, METRICS.index(metric)]
        has = np.isfinite(col) if exclude is None else np.isfinite(col) & ~exclude
        if not has.any():
            return None
        levels = self.levels(device, engine, has)
        if levels[0].name == "device+engine":
            return Distribution(points=np.where(has, col, 0.0), weights=mixture_weights(levels, self.n), sigma=0.0, levels=tuple(levels))
        med = np.full(self.n, np.nan)  # each row's group median (its group's bias)
        bias_of: dict[int, float] = {}
        for g in np.unique(self.group_id[has]):
            m = has & (self.group_id == g)
            med[m] = float(np.median(col[m]))
            bias_of[int(g)] = float(med[m][0])
        # the spread of a new group's bias from the G groups seen like it: sd x sqrt(1 + 1/G), over
        # the groups of the most specific level holding two or more (the device's family, else its
        # vendor, else all devices): a vendor's devices under global factors err alike (AMD's ROCm
        # rows far from NVIDIA-fitted factors, NVIDIA's near them), and one spread over both made
        # every NVIDIA device's band as wide as AMD's (held-out coverage 0.90 for an 80 % band)
        biases: list[float] = []
        for lev in levels:
            biases = [bias_of[int(g)] for g in np.unique(self.group_id[lev.mask])]
            if len(biases) > 1:
                break
        g_count = len(biases)
        sigma = float(np.std(biases, ddof=1) * math.sqrt(1.0 + 1.0 / g_count)) if g_count > 1 else 0.0
        points, weights = [], []
        remaining = 1.0
        for i, lev in enumerate(levels):
            w = 1.0 if i == len(levels) - 1 else lev.configurations / (lev.configurations + PRIOR_CONFIGURATIONS)
            idx = np.flatnonzero(lev.mask)
            names, inverse, counts = np.unique(self.group_id[idx], return_inverse=True, return_counts=True)
            level_bias = float(np.mean([med[idx][inverse == j][0] for j in range(len(names))]))
            points.append(level_bias + col[idx] - med[idx])
            weights.append(remaining * w / (len(names) * counts[inverse]))  # each group alike
            remaining *= 1.0 - w
        return Distribution(points=np.concatenate(points), weights=np.concatenate(weights), sigma=sigma, levels=tuple(levels))

    def quantile(self, device: str, engine: str, basis: str, metric: str, p: float, exclude: np.ndarray | None = None) -> float | None:
        if exclude is None:
            key = (*self._key(device, engine, basis, metric), p)
            if key not in self._memo:
                d = self.distribution(device, engine, basis, metric)
                self._memo[key] = None if d is None else d.quantile(p)
            return self._memo[key]
        d = self.distribution(device, engine, basis, metric, exclude)
        return None if d is None else d.quantile(p)


@dataclass(frozen=True, slots=True, kw_only=True)
class Distribution:
    """Weighted points, each spread by a normal of sd `sigma` (0: the points alone)."""

    points: np.ndarray
    weights: np.ndarray
    sigma: float
    levels: tuple[Level, ...] = ()

    def quantile(self, p: float) -> float:
        if self.sigma <= 0:
            return weighted_quantile(self.points, self.weights, p)
        return normal_mixture_quantile(self.points, self.weights, self.sigma, p)


def normal_mixture_quantile(points: np.ndarray, weights: np.ndarray, sigma: float, p: float) -> float:
    """x with sum_i w_i Phi((x - c_i) / sigma) = p (weights normalised), by bisection to 1e-7."""
    from .queueing import _phi

    keep = np.asarray(weights, dtype=float) > 0
    c = np.asarray(points, dtype=float)[keep]
    w = np.asarray(weights, dtype=float)[keep]
    w = w / w.sum()
    lo, hi = float(c.min() - 10 * sigma), float(c.max() + 10 * sigma)
    while hi - lo > 1e-7:
        mid = 0.5 * (lo + hi)
        if float(np.sum(w * _phi((mid - c) / sigma))) < p:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def families(catalog) -> dict[str, tuple[str, str]]:
    """Device -> (family, vendor) from the GPU catalog."""
    return {g.name: (getattr(g, "family", "") or "", g.vendor or "") for g in catalog.gpus}


_MODELS: dict[tuple[str, str], ErrorModel] = {}


def error_model(catalog) -> ErrorModel:
    """The catalog's grouped residuals (built once per catalog directory and fingerprint)."""
    t = residual_table(catalog)
    key = (str(Path(catalog.root).resolve()), t.fingerprint)
    if key not in _MODELS:
        _MODELS[key] = ErrorModel(t, families(catalog))
    return _MODELS[key]


def measured_devices(table) -> frozenset[str]:
    """Devices whose efficiency factors were fitted on their own rows: an entry of the table names
    the device and was fitted on at least one row (sizer calibrate's `rows`)."""
    out = set()
    for e in table.entries:
        device = dict(e.match).get("device")
        if device and e.rows > 0:
            out.add(device.lower())
    return frozenset(out)


def basis_of(device: str, measured: frozenset[str]) -> str:
    """'measured' when the device's factors were fitted on its rows, else 'global'."""
    return "measured" if device.lower() in measured else "global"


# ---------------------------------------------------------------------------------------------
# evidence, bands and confidence factors of one device under one engine
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """The measured rows behind a device's speed and the model's error on the nearest group."""

    basis: str  # "measured" or "datasheet x global factors"
    device_rows: int  # scoring rows of the device
    device_engine_rows: int  # ... of the device under the engine
    group: str  # the nearest group with rows: device+engine, device, family, vendor or all
    group_label: str
    group_rows: int
    tpot_median_ape: float | None  # percent, over the group's rows
    ttft_median_ape: float | None
    throughput_median_ape: float | None
    architecture: str = ""  # the model's kind as the factors are fitted: dense, moe, mla_moe (efficiency.architecture_of)
    device_architecture_fit_rows: int | None = None  # fit rows of the device with a model of that kind (any engine, format)
    prompt_tokens_p99: float | None = None  # the deployment's own p99 prompt (its request-size range's traffic)
    measured_prompt_tokens_max: float | None = None  # the longest prompt measured on the device (measured_prompt_tokens)
    measured_prompt_scope: str | None = None  # "device+engine", "device" (under other engines) or None: none measured
    running_sequences_mean: float | None = None  # the deployment's mean running batch a replica, at its peak load
    measured_running_sequences_max: float | None = None  # the most sequences one replica ran at once on the device (measured_running_sequences)
    measured_running_scope: str | None = None  # as measured_prompt_scope

    def _beyond(self, plan: float | None, measured: float | None) -> float | None:
        """plan / measured where above 1 on a measured device (an extrapolation), else None."""
        if self.basis != BASIS_LABEL["measured"] or not plan or not measured:
            return None
        ratio = plan / measured
        return ratio if ratio > 1.0 else None

    @property
    def prompts_beyond_measured(self) -> float | None:
        """The p99 prompt over the longest measured, where above 1 (an extrapolation), else None."""
        return self._beyond(self.prompt_tokens_p99, self.measured_prompt_tokens_max)

    @property
    def running_beyond_measured(self) -> float | None:
        """The mean running batch over the most sequences measured at once, where above 1, else None."""
        return self._beyond(self.running_sequences_mean, self.measured_running_sequences_max)

    def as_dict(self) -> dict:
        return {
            "basis": self.basis,
            "device_rows": self.device_rows,
            "device_engine_rows": self.device_engine_rows,
            "architecture": self.architecture or None,
            "device_architecture_fit_rows": self.device_architecture_fit_rows,
            "prompt_tokens_p99": _round(self.prompt_tokens_p99, 0),
            "measured_prompt_tokens_max": _round(self.measured_prompt_tokens_max, 0),
            "measured_prompt_scope": self.measured_prompt_scope,
            "prompts_beyond_measured": _round(self.prompts_beyond_measured, 2),
            "running_sequences_mean": _round(self.running_sequences_mean, 1),
            "measured_running_sequences_max": _round(self.measured_running_sequences_max, 0),
            "measured_running_scope": self.measured_running_scope,
            "running_beyond_measured": _round(self.running_beyond_measured, 2),
            "group": self.group,
            "group_label": self.group_label,
            "group_rows": self.group_rows,
            "tpot_median_ape": _round(self.tpot_median_ape, 2),
            "ttft_median_ape": _round(self.ttft_median_ape, 2),
            "throughput_median_ape": _round(self.throughput_median_ape, 2),
        }


def _round(x: float | None, nd: int) -> float | None:
    return None if x is None or not math.isfinite(x) else round(float(x), nd)


def architecture_fit_rows(table, device: str, architecture: str) -> int:
    """Fit rows of `device` running a model of `architecture` (dense, moe, mla_moe), under any
    engine and weight format: the `rows` of the efficiency table's (device, engine, weight_dtype,
    architecture) entries, summed (sizer calibrate counts each fit row in exactly one of them).
    0 on a measured device: its factors for this kind of model compose the device's offsets, fitted
    on other kinds, with the kind's offsets, fitted on other devices (a GQA MoE on MI300X: no
    MI300X row runs one), so the figure rests on that composition, not on a measurement."""
    want = device.lower()
    total = 0
    for e in table.entries:
        m = dict(e.match)
        if set(m) == {"device", "engine", "weight_dtype", "architecture"} and m["device"].lower() == want and m["architecture"] == architecture:
            total += e.rows
    return total


def measured_running(res) -> float | None:
    """The batch one replica of a modelled row (measurements.Resolved) ran, the sequences it held
    at once, as the row's own conditions and figures state it, or None where they do not:

    - a closed loop (kind concurrency) or a static batch (kind batch): its clients (its batch),
      each with a request in the replica at every moment;
    - Poisson arrivals (kind rate): Little's law on the row's measured figures, requests a second
      x (mean TTFT + (mean output - 1) x mean TPOT), where it measured both latencies;
    - offline: the sequences it could run at once, the fewer of its running-sequence cap (its
      concurrency: MLPerf's gpu_batch_size, --max-num-seqs) and its KV pool's
      (validate.kv_capacity_sequences: the one figure here of sizer's own, an offline run fills it);
    - disaggregated serving: None (its decode workers' batch is not the aggregated replica's)."""
    row = res.row
    if row.mode == "disagg":
        return None
    if row.kind in ("concurrency", "batch"):
        return float(row.concurrency) if row.concurrency else None
    if row.kind == "rate":
        if not (row.request_rate_rps and row.ttft_ms and row.tpot_ms):
            return None
        out = res.output.mean if res.output is not None else row.osl
        return float(row.request_rate_rps) * (row.ttft_ms + max(out - 1.0, 0.0) * row.tpot_ms) / 1000.0
    if row.kind == "offline":
        from .validate import kv_capacity_sequences

        seqs, _ = kv_capacity_sequences(res)
        most = min(row.concurrency or math.inf, seqs)
        return float(most) if math.isfinite(most) else None
    return None


def measured_extents(rows, catalog) -> tuple[tuple[tuple[str, str, float], ...], tuple[tuple[str, str, float], ...]]:
    """(prompts, running) for every device and engine the measurement `rows` ran, each a sorted
    tuple of (device, engine, figure) for the stored residuals: the longest prompt and the most
    sequences one replica ran at once (measured_running) among the rows sizer models
    (measurements.resolve: fit and scoring rows alike; a row it skips fitted nothing and counts
    for nothing). A prompt is read as the model reads the row's lengths: its prompts' 99th
    percentile (a named dataset's, a harness's length range's), else its fixed isl."""
    from .measurements import Resolved, resolve

    prompts: dict[tuple[str, str], float] = {}
    running: dict[tuple[str, str], float] = {}
    for row in rows:
        if row.invalid:
            continue
        res = resolve(row, catalog)
        if not isinstance(res, Resolved):
            continue
        key = (res.gpu.name, row.engine)
        tokens = float(res.prompt.quantile(99.0)) if res.prompt is not None else float(row.isl or 0.0)
        if tokens > 0:
            prompts[key] = max(prompts.get(key, 0.0), tokens)
        seqs = measured_running(res)
        if seqs is not None and seqs > 0:
            running[key] = max(running.get(key, 0.0), seqs)
    return tuple((d, e, t) for (d, e), t in sorted(prompts.items())), tuple((d, e, n) for (d, e), n in sorted(running.items()))


def _with_any_engine(entries) -> dict[tuple[str, str], float]:
    """(device, engine) -> figure, and (device, "") -> the largest under any engine."""
    out: dict[tuple[str, str], float] = {}
    for device, engine, value in entries:
        out[(device, engine)] = value
        out[(device, "")] = max(out.get((device, ""), 0.0), value)
    return out


def measured_prompt_tokens(catalog) -> dict[tuple[str, str], float]:
    """(device, engine) -> the longest prompt measured on that device under that engine
    (measured_extents over the catalog's measurement table, stored with its residuals), and
    (device, "") -> the longest under any engine. The fitted factors describe the prefill of those
    lengths; a plan's prompts longer than them carry the factors past them (attention grows with
    the square of the prompt), and the evidence says so (Evidence.prompts_beyond_measured)."""
    return _with_any_engine(residual_table(catalog).prompt_tokens_max)


def measured_running_sequences(catalog) -> dict[tuple[str, str], float]:
    """(device, engine) -> the most sequences one replica ran at once on that device under that
    engine (measured_running over the catalog's measurement table, stored with its residuals), and
    (device, "") -> the most under any engine. The fitted step describes batches up to that size;
    a plan whose replicas run a larger batch carries it past them (a decode step's GEMMs leave
    the bandwidth-bound regime as the batch grows; the KV it reads grows with it), and the
    evidence says so (Evidence.running_beyond_measured)."""
    return _with_any_engine(residual_table(catalog).running_sequences_max)


def _nearest_measured(values: dict | None, device: str, engine: str) -> tuple[float | None, str | None]:
    """The device's figure under the engine, else under any engine, and which ("device+engine",
    "device"); (None, None) where neither was measured."""
    if values is None:
        return None, None
    if (device, engine) in values:
        return values[(device, engine)], "device+engine"
    if (device, "") in values:
        return values[(device, "")], "device"
    return None, None


def evidence_of(
    model: ErrorModel,
    device: str,
    engine: str,
    basis: str,
    *,
    architecture: str = "",
    table=None,
    prompt_tokens_p99: float | None = None,
    prompts: dict | None = None,
    running_sequences_mean: float | None = None,
    running: dict | None = None,
) -> Evidence:
    """Counts of the device's scoring rows, and the median absolute percentage errors of TPOT,
    TTFT and throughput over the nearest group with rows (device+engine, device, family, vendor,
    all), under the device's basis. APE = |predicted - measured| / measured = |exp(-e) - 1|.
    With the model's `architecture` and the efficiency `table`: the device's fit rows of that kind
    (architecture_fit_rows). With the deployment's p99 prompt and `prompts`
    (measured_prompt_tokens): the longest prompt measured on the device under the engine, else
    under any engine (`measured_prompt_scope` says which). With the deployment's mean running batch
    and `running` (measured_running_sequences): the most sequences measured at once on one replica
    of the device, likewise."""
    d = model._is("device", device)
    levels = model.levels(device, engine)
    ape: dict[str, float | None] = {m: None for m in METRICS}
    group, label, rows = "none", "no scoring rows", 0
    if levels:
        lev = levels[0]
        group, label, rows = lev.name, lev.label if lev.name != "device" else device, int(lev.mask.sum())
        for k, m in enumerate(METRICS):
            e = model.values[basis][lev.mask, k]
            e = e[np.isfinite(e)]
            ape[m] = float(np.percentile(np.abs(np.exp(-e) - 1.0) * 100.0, 50, method="linear")) if e.size else None
    longest, scope = _nearest_measured(prompts, device, engine)
    most, running_scope = _nearest_measured(running, device, engine)
    return Evidence(
        basis=BASIS_LABEL[basis],
        device_rows=int(d.sum()),
        device_engine_rows=int((d & model._is("engine", engine)).sum()),
        group=group,
        group_label=label,
        group_rows=rows,
        tpot_median_ape=ape["tpot"],
        ttft_median_ape=ape["ttft"],
        throughput_median_ape=ape["throughput"],
        architecture=architecture,
        device_architecture_fit_rows=architecture_fit_rows(table, device, architecture) if table is not None and architecture else None,
        prompt_tokens_p99=prompt_tokens_p99,
        measured_prompt_tokens_max=longest,
        measured_prompt_scope=scope,
        running_sequences_mean=running_sequences_mean,
        measured_running_sequences_max=most,
        measured_running_scope=running_scope,
    )


def _nearness(d: Distribution | None) -> int:
    """How specific a distribution's nearest level is (0: device+engine; larger: further)."""
    return LEVELS.index(d.levels[0].name) if d is not None and d.levels else len(LEVELS)


def _step_distribution(model: ErrorModel, device: str, engine: str, basis: str) -> tuple[str | None, Distribution | None]:
    """The metric a step's error is read from, and its distribution: output throughput where its
    rows are nearer the device than TPOT's (error_factors), else TPOT; (None, None) with neither."""
    dt = model.distribution(device, engine, basis, "tpot")
    dr = model.distribution(device, engine, basis, "throughput")
    if dr is not None and _nearness(dr) < _nearness(dt):
        return "throughput", dr
    return ("tpot", dt) if dt is not None else (None, None)


def error_factors(model: ErrorModel, device: str, engine: str, basis: str, p: float) -> tuple[float, float] | None:
    """(k_tpot, k_ttft) = exp(p quantile of the log error of TPOT, of TTFT): the step time and the
    TTFT are k times the predicted ones at that quantile. The step's error comes from output
    throughput instead where its rows are nearer the device than TPOT's (throughput-only rows,
    such as MLPerf Offline's): a step k times as long gives 1/k the throughput, so k =
    exp(-(1 - p) quantile of the throughput error). None when no row measures any."""
    metric, _ = _step_distribution(model, device, engine, basis)
    if metric == "throughput":
        k = math.exp(-model.quantile(device, engine, basis, "throughput", 1.0 - p))
    elif metric == "tpot":
        k = math.exp(model.quantile(device, engine, basis, "tpot", p))
    else:
        k = None
    qf = model.quantile(device, engine, basis, "ttft", p)
    if k is None and qf is None:
        return None
    return (k if k is not None else 1.0, math.exp(qf) if qf is not None else 1.0)


def confidence_factors(model: ErrorModel, device: str, engine: str, basis: str, q: float) -> tuple[float, float]:
    """The factors a plan at confidence q holds its SLOs under: 1 at q = 0.5 (the model's own
    estimate, today's plan); above 0.5, exp(q quantile) but never below 1 (asking for more
    confidence never relaxes a bound); below 0.5, exp(q quantile) but never above 1."""
    if q == 0.5:
        return (1.0, 1.0)
    f = error_factors(model, device, engine, basis, q) or (1.0, 1.0)
    clamp = max if q > 0.5 else min
    return (clamp(1.0, f[0]), clamp(1.0, f[1]))


TAIL_ROWS_MIN = 3.0
"""A confidence's quantile with fewer rows' worth of weight beyond it than this (Kish's effective
number of rows of the error distribution, (sum w)^2 / sum w^2, times the tail's share, 1 - q above
0.5 and q below) is not read from the rows but from the one or two most extreme of them: the
factor is said to be an extrapolation (JSON `confidence_tail_rows`, the CONFIDENCE line). At 0.99
H100-SXM's vLLM TTFT factor is x72 on about one row's worth of its tail, where at 0.98 it is x6."""


def _effective_rows(d: Distribution | None) -> float | None:
    if d is None:
        return None
    w = np.asarray(d.weights, dtype=float)
    w = w[w > 0]
    return float(w.sum() ** 2 / np.sum(w**2)) if w.size else None


def confidence_tail_rows(model: ErrorModel, device: str, engine: str, basis: str, q: float) -> tuple[float | None, float | None]:
    """(TPOT, TTFT): the rows' worth of weight beyond the q quantile each confidence factor is read
    at (confidence_factors; the step's from output throughput where error_factors takes it from
    there), Kish's effective rows of its distribution x (1 - q) above 0.5, x q below; None at 0.5
    or where no row measures it. Below TAIL_ROWS_MIN the factor is an extrapolation."""
    if q == 0.5:
        return (None, None)
    share = 1.0 - q if q > 0.5 else q
    _, step = _step_distribution(model, device, engine, basis)
    out = []
    for d in (step, model.distribution(device, engine, basis, "ttft")):
        n = _effective_rows(d)
        out.append(None if n is None else n * share)
    return (out[0], out[1])


# ---------------------------------------------------------------------------------------------
# rates under an error: the step model stretched in time
# ---------------------------------------------------------------------------------------------

_RATES = ("hbm_peak_bytes_per_s", "dense_peak_flops_per_s", "expert_peak_flops_per_s", "bf16_peak_flops_per_s", "link_peak_bytes_per_s")
_TIMES = ("link_latency_s", "step_overhead_s", "sequence_overhead_s", "request_overhead_s", "prefill_layer_overhead_s")


def stretched(step, k: np.ndarray):
    """The step model with every time k times as long (per candidate): each datasheet rate / k,
    each fixed time x k. The queueing model has no time scale of its own, so a replica of the
    stretched model serves exactly 1/k of the rate at the same running batch, its TTFT and TPOT
    k times as long."""
    from dataclasses import replace

    k = np.asarray(k, dtype=float)
    changes = {name: getattr(step, name) / k for name in _RATES}
    changes.update({name: getattr(step, name) * k for name in _TIMES})
    return replace(step, **changes)


def rates_under(workload, catalog, candidates: list, k_tpot: np.ndarray, k_ttft: np.ndarray, demand=None, at_median: np.ndarray | None = None, deadline=None) -> np.ndarray:
    """The largest rate of each candidate (Evaluated, feasible) when its steps take k_tpot times
    as long as predicted and its TTFT is k_ttft times the prediction at the same running batch:
    the stretched step model, its TTFT held at k_ttft / k_tpot of the stretched one.

    `at_median` (a boolean per candidate) holds those candidates' bounds at p50 instead of their
    percentiles (at_p50), the others' as given, in the same search: the demand carries both, each
    candidate's checks of the other's keys scaled by 0 (not checked). Only for a workload whose
    bounds do not already name p50."""
    from .candidates import demand_of, step_model_of
    from .queueing import Limits, max_rate

    if not candidates:
        return np.zeros(0)
    step = step_model_of(workload, catalog, candidates)
    k_tpot = np.asarray(k_tpot, dtype=float)
    k_ttft = np.asarray(k_ttft, dtype=float)
    demand = demand if demand is not None else demand_of(workload)
    ttft_scale, tpot_scale = k_ttft / k_tpot, None
    if at_median is not None and np.any(at_median):
        median = np.asarray(at_median, dtype=bool)
        p50 = at_p50(demand)
        given = np.where(median, 0.0, 1.0)  # the given percentiles: not checked for the median rows
        ttft_scale = {**{k: ttft_scale * given for k, _ in demand.ttft_s}, **{k: ttft_scale * median for k, _ in p50.ttft_s}}
        tpot_scale = {**{k: given for k, _ in demand.tpot_s}, **{k: median.astype(float) for k, _ in p50.tpot_s}}
        from dataclasses import replace

        demand = replace(demand, ttft_s=(*demand.ttft_s, *p50.ttft_s), tpot_s=(*demand.tpot_s, *p50.tpot_s))
    limits = Limits(
        max_concurrency=np.array([e.max_concurrency for e in candidates], dtype=float),
        max_num_seqs=np.array([e.engine.max_num_seqs for e in candidates], dtype=float),
        max_num_batched_tokens=np.array([e.engine.max_num_batched_tokens for e in candidates], dtype=float),
        ttft_scale=ttft_scale,
        tpot_scale=tpot_scale,
    )
    return max_rate(stretched(step, k_tpot), demand, limits, tolerance=BAND_TOLERANCE, deadline=deadline).max_rate_rps


def at_p50(demand):
    """The same bounds held at the median (p50) instead of their percentiles."""
    from dataclasses import replace

    def p50(bounds):
        return (("p50", min(b for _, b in bounds)),) if bounds else ()

    return replace(demand, ttft_s=p50(demand.ttft_s), tpot_s=p50(demand.tpot_s))


def confidence_scales(workload, catalog, devices: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per candidate device, (k_tpot, k_ttft) of the workload's slo.confidence (confidence_factors)."""
    from .efficiency import efficiency_table

    q = workload.slo.confidence
    model = error_model(catalog)
    if not model.n:
        from .errors import FieldValueError

        raise FieldValueError(
            f"{workload.path}: slo.confidence: {q:g} needs the model's error on measured rows, and the catalog "
            f"{catalog.root} has no scoring measurement rows (catalogs/measurements/)"
        )
    measured = measured_devices(efficiency_table(catalog.root))
    memo: dict[str, tuple[float, float]] = {}
    for d in devices:
        if d not in memo:
            memo[d] = confidence_factors(model, d, workload.engine, basis_of(d, measured), q)
    return np.array([memo[d][0] for d in devices]), np.array([memo[d][1] for d in devices])


# ---------------------------------------------------------------------------------------------
# coverage: how often a measurement falls inside its band (sizer validate)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Coverage:
    inside: dict[str, int]
    total: dict[str, int]

    @property
    def overall(self) -> float | None:
        t = sum(self.total.values())
        return sum(self.inside.values()) / t if t else None

    def by_metric(self) -> dict[str, float | None]:
        return {m: (self.inside[m] / self.total[m] if self.total[m] else None) for m in METRICS}


def _cover(model: ErrorModel, units: np.ndarray, basis_by_device: dict[str, str], use_basis: str | None = None) -> Coverage:
    """Every row's figures against the band built without the rows of its unit (configuration,
    or device): leave one unit out."""
    inside = {m: 0 for m in METRICS}
    total = {m: 0 for m in METRICS}
    for u in np.unique(units):
        out = units == u
        for g in sorted(set(model.group[out])):
            device, engine = g.split("|", 1)
            basis = use_basis or basis_by_device.get(device, "global")
            rows = out & (model.group == g)
            for k, m in enumerate(METRICS):
                x = model.values[basis][rows, k]
                x = x[np.isfinite(x)]
                if not x.size:
                    continue
                d = model.distribution(device, engine, basis, m, out)
                if d is None:
                    continue
                lo, hi = d.quantile(BAND[0]), d.quantile(BAND[1])
                inside[m] += int(np.sum((x >= lo) & (x <= hi)))
                total[m] += int(x.size)
    return Coverage(inside=inside, total=total)


def held_out_coverage(model: ErrorModel, measured: frozenset[str]) -> tuple[Coverage, Coverage]:
    """(leave one configuration out, each row under its device's basis; leave one device out
    under global factors, as for a device with no rows of its own)."""
    basis = {d: basis_of(d, measured) for d in set(model.device)}
    return _cover(model, model.config, basis), _cover(model, model.device.astype(str), basis, use_basis="global")


def coverage_of(model: ErrorModel, results, measured: frozenset[str], rate_steps_s: dict[str, float] | None = None) -> Coverage:
    """Coverage of rows the residual table need not hold (a user's own measurements): each row's
    figures against the band of its device and engine, built without any row of the same
    configuration; a rate row by its step at the batch it measured, as in the residual table
    (`rate_steps_s`: validate.rate_row_steps_s of the rows); a copy of another row's run
    (`copy_of`) not counted again."""
    inside = {m: 0 for m in METRICS}
    total = {m: 0 for m in METRICS}
    configs = {r.config: i for i, r in enumerate(model.table.rows)}
    for r in results:
        if r.copy_of:  # a run given twice is one figure, as in every other statistic
            continue
        basis = basis_of(r.device, measured)
        errs = _errors(r, rate_steps_s)
        key = config_id(r.row.config_key)
        same = model.config == model.config[configs[key]] if key in configs else None
        for k, m in enumerate(METRICS):
            if errs[k] is None:
                continue
            d = model.distribution(r.device, r.row.engine, basis, m, same)
            if d is None:
                continue
            total[m] += 1
            inside[m] += int(d.quantile(BAND[0]) <= errs[k] <= d.quantile(BAND[1]))
    return Coverage(inside=inside, total=total)


# ---------------------------------------------------------------------------------------------
# a plan's assessment: evidence and bands per deployment, the cost band, the p50 and 0.5 plans
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DeploymentEvidence:
    """What stands behind one deployment's figures (sizer solve's JSON `evidence` and bands)."""

    evidence: Evidence
    max_rate_rps_p10: float | None  # the 80 % band of the replica's largest rate
    max_rate_rps_p90: float | None
    max_rate_rps_at_p50: float | None  # the largest rate with the SLO bounds held at the median
    confidence_factors: tuple[float, float]  # (TPOT, TTFT) the rate was sized under (1, 1 at 0.5)
    confidence_tail_rows: tuple[float | None, float | None] = (None, None)  # rows' worth beyond each factor's quantile
    cost_usd_per_hour_p10: float | None = None  # this deployment's plan's cost at the band's ends
    cost_usd_per_hour_p90: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Resized:
    """The plan's own configurations re-sized at other per-replica rates."""

    cost_usd_per_hour: float | None  # None: the constraints cannot be met at those rates
    gpus: int | None
    reason: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanAssessment:
    confidence: float
    cost_p10: Resized  # the plan's configurations at every pool's p90 rate (the cheap end)
    cost_p90: Resized  # ... at every pool's p10 rate (the dear end)
    at_p50: Resized | None  # ... at every pool's rate with the SLO bounds held at p50 (None: the SLOs are at p50)
    baseline: Resized | None  # the plan at confidence 0.5 (None when this plan is it)
    residual_rows: int
    residual_source: str
    residual_state: str  # stored, cache or now


def _deployment_workload(plan, d):
    problem = plan.problem
    for r, rng in enumerate(problem.ranges):
        if rng.label == d.size_range:
            return r, problem.range_workloads[r]
    return 0, plan.workload


def _option_of(plan, d):
    """The fleet option a deployment was built from (its configuration and offers)."""
    e = d.candidate
    for o in plan.problem.options:
        offer = o.hourly or o.reserved
        if o.config != e.config or offer.price != e.price or offer.instance_gpus != d.instance_gpus:
            continue
        if (o.reserved.price if o.reserved is not None else None) != d.reserved_price:
            continue
        return o
    return None


def resize(plan, ratios: dict[tuple[int, int], float], options: list, deadline=None) -> Resized:
    """The cost and peak GPUs of the plan's own options with each (option, range) rate multiplied
    by its ratio (an option's ranges without one take its first): fleet.single_plan for a
    single-configuration plan on every request size, else the program over those options."""
    from dataclasses import replace

    from .fleet import Option, single_plan

    problem = plan.problem
    scaled = []
    for oi, o in enumerate(options):
        first = next((v for (i, _), v in sorted(ratios.items()) if i == oi), 1.0)
        cands = tuple(
            None if c is None else replace(c, max_rate_rps=c.max_rate_rps * ratios.get((oi, r), first))
            for r, c in enumerate(o.candidates)
        )
        scaled.append(Option(candidates=cands, hourly=o.hourly, reserved=o.reserved))
    if len(scaled) == 1 and problem.max_configurations == 1 and not problem.split:
        sp = single_plan(scaled[0], problem)
        if not sp.feasible:
            return Resized(cost_usd_per_hour=None, gpus=None, reason=sp.reason)
        return Resized(cost_usd_per_hour=sp.cost_usd_per_hour, gpus=sp.peak_replicas * scaled[0].gpus)
    from .optimize import build_program, run_program

    solution = run_program(build_program(problem, tuple(scaled)), deadline if deadline is not None else plan.time_limit_s or None)
    if solution is None:
        return Resized(cost_usd_per_hour=None, gpus=None, reason="the purchasing constraints cannot be met at the band's rates")
    gpus = max(sum(p.running[h] * p.option.gpus for p in solution.pools) for h in range(problem.hours))
    return Resized(cost_usd_per_hour=solution.cost_usd_per_horizon / problem.hours, gpus=gpus)


def assess(plan, catalog, *, baseline=None, deadline=None):
    """The plan with its evidence: per deployment and alternative, the rows behind it and the
    model's error on its nearest group, the 80 % band of its largest rate and its largest rate with
    the bounds held at p50; the plan's cost band and its cost at p50; and, at a confidence other
    than 0.5, the plan at 0.5 (`baseline(workload at 0.5)`, re-solved) to say what the confidence
    costs."""
    from dataclasses import replace

    from .candidates import below_edge_share, demand_of
    from .efficiency import architecture_of, efficiency_table
    from .fleet import single_plan

    w = plan.workload
    engine = w.engine
    model = error_model(catalog)
    table = efficiency_table(catalog.root)
    measured = measured_devices(table)
    rows = list(plan.deployments) + list(plan.alternatives)
    n = len(rows)
    basis = [basis_of(d.candidate.config.device, measured) for d in rows]
    arch = architecture_of(w.model)
    prompts = measured_prompt_tokens(catalog)
    running = measured_running_sequences(catalog)
    p99 = [float(demand_of(_deployment_workload(plan, d)[1]).prompt.quantile(99.0)) for d in rows]
    ev = [
        evidence_of(model, d.candidate.config.device, engine, b, architecture=arch, table=table, prompt_tokens_p99=q, prompts=prompts, running_sequences_mean=d.running_batch_mean, running=running)
        for d, b, q in zip(rows, basis, p99)
    ]
    lo = [error_factors(model, d.candidate.config.device, engine, b, BAND[1]) if model.n else None for d, b in zip(rows, basis)]
    hi = [error_factors(model, d.candidate.config.device, engine, b, BAND[0]) if model.n else None for d, b in zip(rows, basis)]
    conf = [confidence_factors(model, d.candidate.config.device, engine, b, w.slo.confidence) if model.n else (1.0, 1.0) for d, b in zip(rows, basis)]
    tails = [confidence_tail_rows(model, d.candidate.config.device, engine, b, w.slo.confidence) if model.n else (None, None) for d, b in zip(rows, basis)]
    rate_lo, rate_hi, rate_p50 = [None] * n, [None] * n, [None] * n
    p50_differs = any(k != "p50" for k, _ in (*w.slo.ttft_s, *w.slo.tpot_s))
    groups: dict[int, list[int]] = {}
    for i, d in enumerate(rows):
        groups.setdefault(_deployment_workload(plan, d)[0], []).append(i)
    for r, members in sorted(groups.items()):
        rw = plan.problem.range_workloads[r] if plan.problem is not None else w
        banded = [i for i in members if lo[i] is not None]
        # one search: each banded candidate at both ends of its band, then (the SLOs not on p50
        # already) each candidate with the bounds on the median, at the plan's own confidence
        cands = [rows[i].candidate for i in banded] * 2
        k_t = [lo[i][0] for i in banded] + [hi[i][0] for i in banded]
        k_f = [lo[i][1] for i in banded] + [hi[i][1] for i in banded]
        median = [False] * len(cands)
        if p50_differs:
            cands += [rows[i].candidate for i in members]
            k_t += [conf[i][0] for i in members]
            k_f += [conf[i][1] for i in members]
            median += [True] * len(members)
        both = p50_differs and banded and not any(k == "p50" for k, _ in (*rw.slo.ttft_s, *rw.slo.tpot_s))
        if both or not p50_differs:
            got = rates_under(rw, catalog, cands, np.array(k_t), np.array(k_f), at_median=np.array(median) if p50_differs else None, deadline=deadline)
        else:  # bounds that name p50 already, or nothing to band: two searches
            b = 2 * len(banded)
            got = np.concatenate([
                rates_under(rw, catalog, cands[:b], np.array(k_t[:b]), np.array(k_f[:b]), deadline=deadline),
                rates_under(rw, catalog, cands[b:], np.array(k_t[b:]), np.array(k_f[b:]), demand=at_p50(demand_of(rw)), deadline=deadline),
            ])
        for j, i in enumerate(banded):
            rate_lo[i], rate_hi[i] = float(got[j]), float(got[len(banded) + j])
        if p50_differs:
            for j, i in enumerate(members):
                # a rate that holds the bounds at p99 holds them at p50 (p50 <= p99): never below
                # the plan's own rate, whatever the searches' tolerances
                rate_p50[i] = max(float(got[2 * len(banded) + j]), rows[i].candidate.max_rate_rps)

    # the plan's own options re-sized at each band end, and at p50
    k_plan = len(plan.deployments)
    options = []
    index = {}
    for i, d in enumerate(plan.deployments):
        o = _option_of(plan, d)
        if o is None:
            options = None
            break
        index[i] = next((j for j, x in enumerate(options) if x is o), None)
        if index[i] is None:
            options.append(o)
            index[i] = len(options) - 1

    def plan_at(rates, end: str = "") -> Resized | None:
        if options is None or any(rates[i] is None for i in range(k_plan)):
            return None
        dead = [rows[i].candidate.config.label() for i in range(k_plan) if rates[i] <= 0]
        if dead:
            return Resized(cost_usd_per_hour=None, gpus=None, reason=f"at the model's {end} error {', '.join(dead)} misses the SLOs even at a trickle of load")
        edge = [i for i in range(k_plan) if below_edge_share(rates[i], rows[i].candidate.max_rate_rps)]
        if edge:  # as a plan at that confidence would refuse it (candidates.CONFIDENCE_EDGE_SHARE)
            said = ", ".join(
                f"{rows[i].candidate.config.label()} ({rates[i]:.3g} req/s, {rates[i] / rows[i].candidate.max_rate_rps:.1%} of its {rows[i].candidate.max_rate_rps:.3g})"
                for i in edge
            )
            return Resized(cost_usd_per_hour=None, gpus=None, reason=f"at the model's {end} error {said} holds the SLOs only at a trickle: measure before sizing on it")
        ratios = {(index[i], _deployment_workload(plan, d)[0]): rates[i] / d.candidate.max_rate_rps for i, d in enumerate(plan.deployments)}
        return resize(plan, ratios, options, deadline)

    cost_p10, cost_p90 = plan_at(rate_hi, "p10"), plan_at(rate_lo, "p90")
    at_p50_plan = plan_at(rate_p50) if p50_differs else None

    # alternatives: each a single-configuration plan of its own
    alt_cost: dict[int, tuple[float | None, float | None]] = {}
    for i in range(k_plan, n):
        d = rows[i]
        o = _option_of(plan, d)
        if o is None or rate_lo[i] is None:
            continue
        ends = []
        for rate in (rate_hi[i], rate_lo[i]):
            if below_edge_share(rate, d.candidate.max_rate_rps):
                ends.append(None)
                continue
            scaled = replace(o, candidates=tuple(None if c is None else replace(c, max_rate_rps=c.max_rate_rps * rate / d.candidate.max_rate_rps) for c in o.candidates))
            sp = single_plan(scaled, plan.problem)
            ends.append(sp.cost_usd_per_hour if sp.feasible else None)
        alt_cost[i] = (ends[0], ends[1])
    single = k_plan == 1
    out = []
    for i, d in enumerate(rows):
        c10, c90 = alt_cost.get(i, (None, None))
        if i < k_plan and single:
            c10 = cost_p10.cost_usd_per_hour if cost_p10 else None
            c90 = cost_p90.cost_usd_per_hour if cost_p90 else None
        out.append(
            replace(
                d,
                evidence=DeploymentEvidence(
                    evidence=ev[i],
                    max_rate_rps_p10=rate_lo[i],
                    max_rate_rps_p90=rate_hi[i],
                    max_rate_rps_at_p50=rate_p50[i],
                    confidence_factors=conf[i],
                    confidence_tail_rows=tails[i],
                    cost_usd_per_hour_p10=c10,
                    cost_usd_per_hour_p90=c90,
                ),
            )
        )
    base = None
    if baseline is not None and w.slo.confidence != 0.5:
        from .errors import SizerError

        w05 = replace(w, slo=replace(w.slo, confidence=0.5))
        try:
            p05 = baseline(w05)
            gpus = max((h.gpus for h in p05.schedule), default=sum(x.gpus for x in p05.deployments))
            base = Resized(cost_usd_per_hour=p05.cost_usd_per_hour, gpus=gpus)
        except SizerError as exc:  # the 0.5 plan's own failure, reported as such
            base = Resized(cost_usd_per_hour=None, gpus=None, reason=str(exc))
    assessment = PlanAssessment(
        confidence=w.slo.confidence,
        cost_p10=cost_p10 or Resized(cost_usd_per_hour=None, gpus=None, reason="no error data"),
        cost_p90=cost_p90 or Resized(cost_usd_per_hour=None, gpus=None, reason="no error data"),
        at_p50=at_p50_plan,
        baseline=base,
        residual_rows=model.n,
        residual_source=model.table.source,
        residual_state=model.table.computed,
    )
    return replace(plan, deployments=tuple(out[:k_plan]), alternatives=tuple(out[k_plan:]), assessment=assessment)
