"""Efficiency factors of the step-time model: named, per device, engine and weight format, fitted
by `sizer calibrate` (sizer/calibrate.py) and kept with their provenance in
`catalogs/efficiency.json`. The single source of truth for *how far below its datasheet a device
runs* in serving; sizer/perf.py turns them into seconds.

The factors (dimensionless fractions of a datasheet figure unless suffixed):

    hbm_bandwidth_fraction      achieved / datasheet HBM bandwidth streaming dense weights in decode
    expert_bandwidth_fraction   the same for routed-expert weights (grouped GEMMs over the experts a
                                batch touches read less efficiently than one dense GEMM)
    kv_bandwidth_fraction       the same for the paged KV reads of decode attention
    compute_fraction            achieved / dense peak of the weight format in a decode step's GEMMs
                                (tens to hundreds of rows: one per running sequence)
    prefill_compute_fraction    the same for the GEMMs of prompt tokens (thousands of rows a step):
                                larger GEMMs fill the tensor cores' tiles and waves better; one
                                fraction for both made the fit trade prefill against decode (TTFT
                                of DeepSeek-R1 8k prompts on GB200/B200 1.6-2x high at 3-8 clients
                                while TPOT sat at its median)
    attention_compute_fraction  achieved / bf16 dense peak in prefill attention (QK^T and PV)
    link_bandwidth_fraction     achieved / datasheet per-direction link bandwidth in collectives
    link_latency_s              fixed time of one collective (all-reduce, all-to-all, p2p send)
    step_overhead_s             fixed time of one engine step: scheduling, launch gaps, sampling
    sequence_overhead_s         time per running sequence per step (CPU-side bookkeeping,
                                sampling, detokenisation), per data-parallel rank
    request_overhead_s          time per request outside the GPU (HTTP, tokenisation, the first
                                scheduling pass), added to TTFT
    prefill_layer_overhead_s    time per model layer of a step that carries prompt tokens: prefill
                                runs eagerly (decode steps replay CUDA graphs), so each layer's
                                kernel launches and MoE routing bookkeeping cost host time; not
                                paid where the network runs compiled (perf.eager_prefill:
                                TensorRT-LLM under MLPerf harnesses)
    attention_dp_prefill_factor how fast a prompt's GEMMs run under attention data parallelism
                                (dp > 1) against prefill_compute_fraction (1 where dp = 1); per
                                engine and architecture. Where prompts share steps the model
                                spreads their dense and attention work evenly over the dp ranks;
                                the ranks meet at every MoE layer's all-to-all, so a step runs at
                                the pace of the rank holding the most prompt tokens. Fitted at
                                0.33-0.75 (catalogs/efficiency.json of 2026-12-05: vLLM's GQA MoE
                                0.33, vLLM 0.47, TensorRT-LLM 0.54-0.65, SGLang 0.71-0.75): slower
                                than an even spread on every engine. A prompt alone
                                (perf.StepModel.prefill_s) runs on one rank with nothing to
                                spread, and does not take it (when it did, the fit put SGLang's
                                MLA-MoE at 1.25)
    admission_steps             engine steps a new request waits before its prompt joins a step
                                (the scheduler decides the next step while the current one runs,
                                and outputs are processed a step behind: about 1-3 steps;
                                fitted at 0.69-1.01 since a wave's first tokens come at the end
                                of their prompts' steps, which took some of the wait it held)
    burst_fraction              in a closed-loop benchmark (N clients, fixed lengths), the share of
                                requests that queue behind a whole wave of N prompts arriving at
                                once: 1/10 if only the first of the harness's ten waves did; more
                                when fixed output lengths keep later waves bunched, as a scheduler
                                that prefills a whole wave before decoding any of it does (fitted
                                per engine and release: SGLang 0.5.1's is 0.59). The share at ten
                                requests per client: a run of W per client has 10 / W of it
                                (queueing.closed_loop, measurements.inferencex_requests_per_client)

The file holds a list of entries. Each entry has `match` (any of `device`, `vendor`, `engine`,
`weight_dtype`, `architecture`, `engine_version`; an empty match is the default) and a value for
some of the factors. `architecture` is the model's kernel class (architecture_of): `dense`
(softmax attention, dense MLP), `moe` (routed experts) or `mla_moe` (multi-head latent attention
and routed experts). `engine_version` is the engine's release as major.minor, SGLang 0.x as major.minor.patch (version_label:
"0.19.0" -> "0.19", "1.2.0rc6.post3" -> "1.2"); releases differ most in host-side overheads.
For a (device, engine, weight_dtype, architecture, engine_version) every factor is taken from the
most specific entry that matches and gives it: more match keys win; between equally specific
entries device > vendor > engine > weight_dtype > architecture > engine_version.
Whose entries a lookup sees besides those naming neither a device nor a vendor (scope): the
device's when some entry names it; else, for a device with no entry of its own (MI355X, L4), its
vendor's (gpus.yaml `vendor`: AMD's entries hold the vendor's part of MI300X's offsets, fitted on
its rows, where the device-neutral ones rest mostly on NVIDIA's rows); else none. A device's own
entries already hold its vendor's offsets (sizer calibrate composes them), so the two never mix.
A release the table holds no entry for on that device (or, in the vendor scope, on the vendor's
devices) and engine is looked up as the nearest release that has fit rows there (release_for:
the newest measured release not after it, else the oldest after it), so a workload on a current release takes the factors fitted on the device's
most recent measured software, never silently the release-neutral average of older rows; which
release was used is reported (basis).
The default entry must give every factor. Each entry also carries its provenance (`rows`: the
measurement rows whose fit produced it, `fitted`: the date, `residual`: the fit's RMS log error on
those rows), which the loader keeps for reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from pathlib import Path

from .errors import FieldValueError
from .schema import Fields, read_document

FRACTIONS = (
    "hbm_bandwidth_fraction",
    "expert_bandwidth_fraction",
    "kv_bandwidth_fraction",
    "compute_fraction",
    "prefill_compute_fraction",
    "attention_compute_fraction",
    "link_bandwidth_fraction",
    "burst_fraction",
)
TIMES = ("link_latency_s", "step_overhead_s", "sequence_overhead_s", "request_overhead_s", "prefill_layer_overhead_s")
COUNTS = ("admission_steps", "attention_dp_prefill_factor")
# Times are written in the file in microseconds or milliseconds (units in the key), read into seconds.
_TIME_KEYS = {
    "link_latency_s": ("link_latency_us", 1e-6),
    "step_overhead_s": ("step_overhead_ms", 1e-3),
    "sequence_overhead_s": ("sequence_overhead_us", 1e-6),
    "request_overhead_s": ("request_overhead_ms", 1e-3),
    "prefill_layer_overhead_s": ("prefill_layer_overhead_us", 1e-6),
}
FACTORS = FRACTIONS + TIMES + COUNTS
MATCH_KEYS = ("device", "vendor", "engine", "weight_dtype", "architecture", "engine_version")
ARCHITECTURES = ("dense", "moe", "mla_moe")


def version_label(version: str | None, engine: str = "") -> str:
    """An engine release as the table matches it: major.minor ("0.19.0" -> "0.19"), or the first
    word of a non-numeric tag ("nightly-dev-2026..." -> "nightly"); "" when unknown.

    SGLang's 0.x releases keep their patch number ("0.5.9" -> "0.5.9", "0.5.5.post2" -> "0.5.5"):
    its 0.5 series ran from 0.5.0 (August 2025) to 0.5.10 (April 2026) and each patch release is a
    feature release (new scheduler defaults, kernels, overlap scheduling); measured under one label,
    InferenceX's DeepSeek-R1 B200 rows on 0.5.5 (2025-11) and on 0.5.9 (2026-03) shared an offset
    about 250 ms of request overhead apart at four clients."""
    import re

    v = str(version or "").strip().lower().lstrip("v")
    if str(engine or "").strip().lower() == "sglang":
        m = re.match(r"(0)\.(\d+)\.(\d+)", v)
        if m:
            return f"0.{int(m.group(2))}.{int(m.group(3))}"
    m = re.match(r"(\d+)\.(\d+)", v)
    if m:
        return f"{int(m.group(1))}.{int(m.group(2))}"
    return v.split("-")[0] if v else ""


def architecture_of(model) -> str:
    """The kernel class of a model (a ModelArch): dense, moe or mla_moe."""
    if model.is_moe:
        return "mla_moe" if model.is_mla else "moe"
    return "dense"


@dataclass(frozen=True, slots=True, kw_only=True)
class Factors:
    """One complete set of efficiency factors (see the module docstring for each)."""

    hbm_bandwidth_fraction: float
    expert_bandwidth_fraction: float
    kv_bandwidth_fraction: float
    compute_fraction: float
    prefill_compute_fraction: float
    attention_compute_fraction: float
    link_bandwidth_fraction: float
    burst_fraction: float
    link_latency_s: float
    step_overhead_s: float
    sequence_overhead_s: float
    request_overhead_s: float
    prefill_layer_overhead_s: float
    admission_steps: float
    attention_dp_prefill_factor: float

    def as_dict(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One entry of the efficiency table: where it applies, the factors it gives, where they came from."""

    match: tuple[tuple[str, str], ...]  # sorted (key, value) pairs; () = the default
    values: tuple[tuple[str, float], ...]  # factor name -> value, in seconds for times
    rows: int = 0
    residual: float | None = None

    @property
    def specificity(self) -> tuple[int, ...]:
        keys = dict(self.match)
        return (len(keys), *(int(k in keys) for k in MATCH_KEYS))

    def matches(self, want: dict[str, str]) -> bool:
        """Whether the entry applies to a lookup (its keys as _wanted gives them)."""
        return all(want[k] == v for k, v in _normalised(self.match))


@lru_cache(maxsize=4096)
def _normalised(match: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """An entry's match as lookups are compared with it: lower case, a release as major.minor."""
    engine = dict(match).get("engine", "")
    return tuple((k, version_label(v, engine) if k == "engine_version" else v.lower()) for k, v in match)


def _wanted(device: str, engine: str, weight_dtype: str, architecture: str, engine_version: str, vendor: str = "") -> dict[str, str]:
    """A lookup's keys as entries are matched: lower case, the release as major.minor."""
    return {
        "device": device.lower(),
        "vendor": vendor.lower(),
        "engine": engine.lower(),
        "weight_dtype": weight_dtype.lower(),
        "architecture": architecture.lower(),
        "engine_version": version_label(engine_version, engine),
    }


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class EfficiencyTable:
    """The entries of the efficiency table and how they were obtained. Compared and hashed by
    identity (a table is immutable): the factor lookups are memoised per table, and hashing two
    hundred entries on every lookup cost more than the lookup."""

    entries: tuple[Entry, ...]
    source: str = ""
    fitted: str = ""
    method: str = ""
    path: str = ""
    notes: tuple[str, ...] = field(default=())

    def factors(self, device: str, engine: str, weight_dtype: str, architecture: str = "", engine_version: str = "", vendor: str = "") -> Factors:
        """Every factor for (device, engine, weight_dtype, architecture, engine_version) from the
        most specific entry giving it, among the device's entries or, for a device with none, its
        vendor's (memoised: a table is immutable)."""
        return _factors_cached(self, device, engine, weight_dtype, architecture, engine_version, vendor)

    def scope(self, device: str, vendor: str = "") -> tuple[str, str]:
        """Whose entries a lookup on `device` uses besides the device-neutral ones: ("device",
        name) when the table has entries naming the device, else ("vendor", vendor) when it has
        entries naming its vendor, else ("", "") (datasheet x global factors)."""
        return _scope(self, device.lower(), vendor.lower())

    def release_for(self, device: str, engine: str, engine_version: str = "", vendor: str = "") -> str:
        """The release whose entries a lookup on (device, engine, engine_version) uses: the release
        itself when the table has fit rows of it on that device and engine (or no device entries
        with a release at all), else the nearest measured one there (the newest not after it, else
        the oldest after it); "" for an unknown release. Non-numeric tags ("nightly") match only
        themselves. A device with no entries of its own uses its vendor's measured releases."""
        return _release_for(self, device.lower(), engine.lower(), version_label(engine_version, engine), vendor.lower())

    def basis(self, device: str, engine: str, weight_dtype: str, architecture: str = "", engine_version: str = "", vendor: str = "") -> dict:
        """Where a lookup's factors come from: whose entries (scope: the device's, its vendor's,
        or none), the release asked for and the release used, the most specific entry giving the
        compute fraction (its match and fit rows), and the fit rows of that device (or vendor)
        and engine at the release used."""
        asked = version_label(engine_version, engine)
        used = self.release_for(device, engine, engine_version, vendor)
        want = _wanted(device, engine, weight_dtype, architecture, used, vendor)
        level, name = _scope(self, want["device"], want["vendor"])
        entries = _for_device(self, want["device"], want["vendor"])
        ranked = sorted((e for e in entries if e.matches(want)), key=lambda e: e.specificity, reverse=True)
        top = next((e for e in ranked if any(n == "compute_fraction" for n, _ in e.values)), None)
        release_rows = sum(e.rows for e in entries if _release_of(e, level, name, want["engine"]) == used) if used else 0
        return {
            "scope": level or "global",
            "requested_release": asked,
            "release": used,
            "entry": dict(top.match) if top is not None else {},
            "entry_rows": top.rows if top is not None else 0,
            "release_rows": int(release_rows),
        }

    def _factors(self, device: str, engine: str, weight_dtype: str, architecture: str = "", engine_version: str = "", vendor: str = "") -> Factors:
        want = _wanted(device, engine, weight_dtype, architecture, engine_version, vendor)
        want["engine_version"] = _release_for(self, want["device"], want["engine"], want["engine_version"], want["vendor"])
        ranked = sorted(
            (e for e in _for_device(self, want["device"], want["vendor"]) if e.matches(want)),
            key=lambda e: e.specificity,
            reverse=True,
        )
        out: dict[str, float] = {}
        for entry in ranked:
            for name, value in entry.values:
                out.setdefault(name, value)
        missing = [n for n in FACTORS if n not in out]
        if missing:
            raise FieldValueError(f"{self.path or 'efficiency table'}: no default entry gives {', '.join(missing)}")
        return Factors(**out)

    def default(self) -> Factors:
        return self.factors("", "", "")


@lru_cache(maxsize=256)
def _scope(table: EfficiencyTable, device: str, vendor: str) -> tuple[str, str]:
    named = {(k, v) for e in table.entries for k, v in _normalised(e.match) if k in ("device", "vendor")}
    if device and ("device", device) in named:
        return ("device", device)
    if vendor and ("vendor", vendor) in named:
        return ("vendor", vendor)
    return ("", "")


@lru_cache(maxsize=256)
def _for_device(table: EfficiencyTable, device: str, vendor: str = "") -> tuple[Entry, ...]:
    """The entries that can match a lookup on `device` (lower case): those naming it and those
    naming neither a device nor a vendor, in the table's order; for a device no entry names, those
    naming its vendor instead of its own (a tenth of the table: a lookup compares fewer). A
    device's own entries already hold its vendor's offsets (sizer calibrate composes them)."""
    level, name = _scope(table, device, vendor)

    def keep(e: Entry) -> bool:
        m = dict(_normalised(e.match))
        if "device" in m:
            return level == "device" and m["device"] == name
        if "vendor" in m:
            return level == "vendor" and m["vendor"] == name
        return True

    return tuple(e for e in table.entries if keep(e))


def _release_of(e: Entry, level: str, name: str, engine: str) -> str:
    """The release of an entry naming the scope (the device or vendor `name`), the engine and a
    release, else "": each fit row of the scope falls in exactly one such entry (a device's by
    format and architecture, a vendor's by architecture), so their rows add up to the release's."""
    m = dict(_normalised(e.match))
    return m.get("engine_version", "") if level and m.get(level) == name and m.get("engine") == engine else ""


def _release_key(label: str) -> tuple[int, ...] | None:
    import re

    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?", label)
    return tuple(int(g) for g in m.groups() if g is not None) if m else None


@lru_cache(maxsize=1024)
def _measured_releases(table: EfficiencyTable, device: str, engine: str, vendor: str = "") -> tuple[str, ...]:
    """Releases with fit rows on (device, engine), or on the vendor's devices under the engine for
    a device with no entries of its own: those of the scope's full entries with rows > 0."""
    level, name = _scope(table, device, vendor)
    return tuple(sorted({r for e in _for_device(table, device, vendor) if e.rows > 0 and (r := _release_of(e, level, name, engine))}))


@lru_cache(maxsize=4096)
def _release_for(table: EfficiencyTable, device: str, engine: str, version: str, vendor: str = "") -> str:
    measured = _measured_releases(table, device, engine, vendor)
    if not version or not measured or version in measured:
        return version
    key = _release_key(version)
    if key is None:
        return version
    numeric = sorted((k, r) for r in measured if (k := _release_key(r)) is not None)
    if not numeric:
        return version
    before = [r for k, r in numeric if k <= key]
    return before[-1] if before else numeric[0][1]


def _entry(f: Fields, index: int) -> Entry:
    f.check_keys(("match", *FRACTIONS, *(k for k, _ in _TIME_KEYS.values()), *COUNTS, "rows", "residual", "notes"))
    m = f.sub("match")
    m.check_keys(MATCH_KEYS)
    match = tuple(sorted((k, m.string(k, choices=ARCHITECTURES) if k == "architecture" else m.string(k)) for k in MATCH_KEYS if m.has(k)))
    values: list[tuple[str, float]] = []
    for name in FRACTIONS:
        if f.has(name):
            values.append((name, f.number(name, gt=0, le=1)))
    for name, (key, scale) in _TIME_KEYS.items():
        if f.has(key):
            values.append((name, f.number(key, ge=0) * scale))
    for name in COUNTS:
        if f.has(name):
            values.append((name, f.number(name, ge=0)))
    if not values:
        raise f.fail_value("match", "the entry gives no factor")
    return Entry(
        match=match,
        values=tuple(values),
        rows=f.integer("rows", 0, ge=0),
        residual=f.number("residual", None, ge=0),
    )


def load_efficiency(path: Path | str) -> EfficiencyTable:
    """Read catalogs/efficiency.json, or a table of the same keys in YAML (schema.read_document:
    json, or yaml.safe_load)."""
    path = Path(path)
    label = str(path)
    doc = Fields(read_document(path, label), label)
    doc.check_keys(("source", "fitted", "method", "notes", "entries"))
    raw = doc.raw.get("entries")
    if not isinstance(raw, list) or not raw:
        raise FieldValueError(f"{label}: entries: expected a non-empty list of entries")
    entries = tuple(_entry(Fields(item, label, f"entries[{i}]"), i) for i, item in enumerate(raw))
    seen: dict[tuple, int] = {}
    for i, e in enumerate(entries):
        if e.match in seen:
            raise FieldValueError(f"{label}: entries[{i}].match: same match as entries[{seen[e.match]}]")
        seen[e.match] = i
    notes = doc.raw.get("notes") or ()
    table = EfficiencyTable(
        entries=entries,
        source=doc.string("source", ""),
        fitted=str(doc.raw.get("fitted") or ""),
        method=doc.string("method", ""),
        path=label,
        notes=tuple(str(n) for n in notes) if isinstance(notes, list) else (str(notes),),
    )
    table.default()  # the default entry must be complete
    return table


@lru_cache(maxsize=16)
def _cached(path: str, mtime_ns: int) -> EfficiencyTable:
    return load_efficiency(path)


def efficiency_table(catalog_root: Path | str | None = None) -> EfficiencyTable:
    """The efficiency table of a catalog directory (default: the shipped catalogs)."""
    if catalog_root is None:
        from .catalog import default_catalog_dir

        catalog_root = default_catalog_dir()
    path = efficiency_path(catalog_root)
    if not path.is_file():
        from .errors import InputFileError

        raise InputFileError(f"{path}: file not found (the calibrated efficiency factors; run `sizer calibrate` to write it)")
    return _cached(str(path), path.stat().st_mtime_ns)


def efficiency_path(catalog_root: Path | str) -> Path:
    """The catalog's efficiency table: efficiency.json as `sizer calibrate` writes it (JSON: read in
    milliseconds where the same table as YAML took a tenth of `sizer solve`), else an
    efficiency.yaml of the same keys."""
    root = Path(catalog_root)
    path = root / "efficiency.json"
    return path if path.is_file() or not (root / "efficiency.yaml").is_file() else root / "efficiency.yaml"


def table_from_factors(default: Factors, overrides: Mapping[tuple[tuple[str, str], ...], Mapping[str, float]] = {}) -> EfficiencyTable:
    """An in-memory table: `default` plus entries keyed by their match (used by the calibration)."""
    entries = [Entry(match=(), values=tuple(default.as_dict().items()))]
    for match, values in overrides.items():
        entries.append(Entry(match=tuple(sorted(match)), values=tuple(values.items())))
    return EfficiencyTable(entries=tuple(entries))


def with_factor(f: Factors, **changes: float) -> Factors:
    return replace(f, **changes)


@lru_cache(maxsize=4096)
def _factors_cached(table: EfficiencyTable, device: str, engine: str, weight_dtype: str, architecture: str, engine_version: str, vendor: str = "") -> Factors:
    return table._factors(device, engine, weight_dtype, architecture, engine_version, vendor)
