"""Catalogs: GPUs, prices and models, loaded from YAML once and converted to SI units here.

    catalogs/gpus.yaml       one entry per device; units in key names (memory_gib, hbm_gb_per_s,
                             bf16_dense_tflops, link_gb_per_s); every figure has a `sources:` entry
    catalogs/efficiency.json the step-time model's efficiency factors, fitted by `sizer calibrate`
                             (efficiency.py reads it)
    catalogs/prices.yaml     USD per GPU-hour per device, provider and pricing kind, dated and sourced
    catalogs/models/*.yaml   Hugging Face config.json contents under `config:`, with name, aliases, source

After loading, every quantity is in base units: bytes, bytes/s, FLOP/s, seconds, USD/hour.
A device's format is *unsupported* when its dense-throughput field is absent; that absence is
kept (None), never turned into zero.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import FieldValueError, InputFileError, UnknownNameError, did_you_mean
from .model import ModelArch, arch_from_config, load_config_json
from .schema import Fields, read_document
from .units import GB, GIB, TERA

PRICING_KINDS = ("on_demand", "reserved_1y", "reserved_3y", "spot")
INTERCONNECTS = ("nvlink", "infinity_fabric", "pcie")
COMPUTE_FORMATS = ("bf16", "fp8", "int8", "fp4")


@dataclass(frozen=True, slots=True, kw_only=True)
class Gpu:
    name: str
    aliases: tuple[str, ...]
    vendor: str
    memory_bytes: float  # physical capacity
    usable_memory_bytes: float  # what the runtime reports as total; the engine's utilisation applies to it
    hbm_bytes_per_s: float
    dense_flops_per_s: Mapping[str, float | None]  # bf16 / fp8 / int8 / fp4 -> FLOP/s, None = unsupported
    interconnect: str
    link_bytes_per_s: float  # intra-node, per direction, per GPU
    gpus_per_node: int
    tdp_w: float | None
    sources: Mapping[str, str] = field(default_factory=dict)
    nvlink_domain_gpus: int | None = None  # GPUs one NVLink domain joins when larger than a node (NVL72 racks)

    def supports(self, compute_format: str) -> bool:
        return self.dense_flops_per_s.get(compute_format) is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class Price:
    device: str
    provider: str
    kind: str
    usd_per_gpu_hour: float
    price_date: str
    source: str
    plan: str | None = None
    instance: str | None = None
    gpus_per_instance: int | None = None
    region: str | None = None

    @property
    def label(self) -> str:
        plan = f" {self.plan}" if self.plan else ""
        return f"{self.provider}{plan} {self.kind} ({self.price_date})"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelEntry:
    name: str
    aliases: tuple[str, ...]
    path: Path
    hf_id: str | None


@dataclass(frozen=True)
class Catalog:
    root: Path
    gpus: tuple[Gpu, ...]
    prices: tuple[Price, ...]
    models: tuple[ModelEntry, ...]

    # -- GPUs ------------------------------------------------------------------------------
    @cached_property
    def _gpu_index(self) -> dict[str, Gpu]:
        index: dict[str, Gpu] = {}
        for gpu in self.gpus:
            for key in (gpu.name, *gpu.aliases):
                index[key.lower()] = gpu
        return index

    def gpu(self, name: str, where: str = "") -> Gpu:
        """The GPU called `name` (or one of its aliases), case-insensitive."""
        found = self._gpu_index.get(str(name).lower())
        if found is None:
            names = [g.name for g in self.gpus]
            raise UnknownNameError(
                f"{where}unknown device {name!r}{did_you_mean(name, [*names, *(a for g in self.gpus for a in g.aliases)])}; "
                f"the catalog has: {', '.join(names)}"
            )
        return found

    # -- prices ----------------------------------------------------------------------------
    def prices_for(self, device: str, *, provider: str = "any", kind: str = "on_demand") -> list[Price]:
        """Prices of `device` for `provider` ('any' for all) and pricing `kind`, cheapest first."""
        rows = [
            p
            for p in self.prices
            if p.device == device and p.kind == kind and (provider == "any" or p.provider == provider)
        ]
        return sorted(rows, key=lambda p: (p.usd_per_gpu_hour, p.provider, p.plan or ""))

    def providers(self) -> list[str]:
        return sorted({p.provider for p in self.prices})

    # -- models ----------------------------------------------------------------------------
    @cached_property
    def _model_index(self) -> dict[str, ModelEntry]:
        index: dict[str, ModelEntry] = {}
        for entry in self.models:
            for key in (entry.name, *entry.aliases, *((entry.hf_id,) if entry.hf_id else ())):
                index[key.lower()] = entry
        return index

    def model_names(self) -> list[str]:
        return [m.name for m in self.models]

    def find_model(self, name: str) -> ModelEntry | None:
        return self._model_index.get(str(name).lower())

    def model(self, name: str, where: str = "") -> ModelArch:
        """The model called `name` in the catalog (name, alias or Hugging Face id)."""
        entry = self.find_model(name)
        if entry is None:
            raise UnknownNameError(
                f"{where}unknown model {name!r}{did_you_mean(name, [*self.model_names(), *(a for m in self.models for a in m.aliases)])}; "
                f"the catalog has: {', '.join(self.model_names())}; or give a path to a config.json"
            )
        return load_model_entry(entry.path)


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------


def default_catalog_dir() -> Path:
    """$SIZER_CATALOG_DIR, else the catalogs shipped with the package."""
    env = os.environ.get("SIZER_CATALOG_DIR")
    if env:
        return Path(env)
    try:
        shipped = Path(str(resources.files("sizer.catalogs")))
        if (shipped / "gpus.yaml").is_file():
            return shipped
    except (ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parent.parent / "catalogs"


_GPU_KEYS = (
    "name",
    "aliases",
    "vendor",
    "memory_gib",
    "usable_memory_gib",
    "hbm_gb_per_s",
    "bf16_dense_tflops",
    "fp8_dense_tflops",
    "int8_dense_tops",
    "fp4_dense_tflops",
    "interconnect",
    "link_gb_per_s",
    "gpus_per_node",
    "nvlink_domain_gpus",
    "tdp_w",
    "sources",
    "notes",
)
_NUMERIC_GPU_KEYS = tuple(
    k for k in _GPU_KEYS if k.endswith(("_gib", "_per_s", "_tflops", "_tops")) or k in ("gpus_per_node", "nvlink_domain_gpus", "tdp_w")
)


def load_gpus(path: Path) -> tuple[Gpu, ...]:
    doc = Fields(read_document(path), str(path))
    doc.check_keys(("gpus",))
    entries = doc.raw.get("gpus")
    if not isinstance(entries, list) or not entries:
        raise FieldValueError(f"{path}: gpus: expected a non-empty list of devices")
    gpus: list[Gpu] = []
    seen: dict[str, str] = {}
    for i, raw in enumerate(entries):
        f = Fields(raw, str(path), f"gpus[{i}]")
        name = f.string("name")
        f = Fields(raw, str(path), f"gpus[{i}] {name!r}")
        f.check_keys(_GPU_KEYS)
        aliases = f.string_list("aliases", ())
        for key in (name, *aliases):
            if key.lower() in seen:
                raise f.fail_value("aliases", f"{key!r} already names {seen[key.lower()]!r}")
            seen[key.lower()] = name
        sources = f.sub("sources")
        for key in _NUMERIC_GPU_KEYS:
            if f.has(key) and not sources.has(key):
                raise f.fail_value(f"sources.{key}", "every figure needs a source: add one")
        interconnect = f.string("interconnect", choices=INTERCONNECTS)
        flops = {
            "bf16": f.number("bf16_dense_tflops", gt=0) * TERA,
            "fp8": f.number("fp8_dense_tflops", None, gt=0),
            "int8": f.number("int8_dense_tops", None, gt=0),
            "fp4": f.number("fp4_dense_tflops", None, gt=0),
        }
        flops = {k: (v * TERA if (k != "bf16" and v is not None) else v) for k, v in flops.items()}
        memory_gib = f.number("memory_gib", gt=0)
        usable_gib = f.number("usable_memory_gib", gt=0)
        if usable_gib > memory_gib * 1.0001:
            raise f.fail_value("usable_memory_gib", f"expected <= memory_gib ({memory_gib:g}), got {usable_gib:g}")
        gpus.append(
            Gpu(
                name=name,
                aliases=aliases,
                vendor=f.string("vendor", choices=("nvidia", "amd", "intel", "google", "other")),
                memory_bytes=memory_gib * GIB,
                usable_memory_bytes=usable_gib * GIB,
                hbm_bytes_per_s=f.number("hbm_gb_per_s", gt=0) * GB,
                dense_flops_per_s=flops,
                interconnect=interconnect,
                link_bytes_per_s=f.number("link_gb_per_s", gt=0) * GB,
                gpus_per_node=f.integer("gpus_per_node", ge=1),
                nvlink_domain_gpus=f.integer("nvlink_domain_gpus", None, ge=1),
                tdp_w=f.number("tdp_w", None, gt=0),
                sources={str(k): str(v) for k, v in sources.raw.items()},
            )
        )
    return tuple(gpus)


_PRICE_KEYS = (
    "device",
    "provider",
    "kind",
    "usd_per_gpu_hour",
    "plan",
    "instance",
    "gpus_per_instance",
    "region",
    "price_date",
    "source",
    "quote",
    "notes",
)


def load_prices(path: Path, gpus: tuple[Gpu, ...]) -> tuple[Price, ...]:
    doc = Fields(read_document(path), str(path))
    doc.check_keys(("prices",))
    entries = doc.raw.get("prices")
    if not isinstance(entries, list) or not entries:
        raise FieldValueError(f"{path}: prices: expected a non-empty list of prices")
    names = {g.name for g in gpus}
    out = []
    for i, raw in enumerate(entries):
        f = Fields(raw, str(path), f"prices[{i}]")
        f.check_keys(_PRICE_KEYS)
        device = f.string("device")
        if device not in names:
            raise UnknownNameError(f"{path}: prices[{i}].device: unknown device {device!r}{did_you_mean(device, names)}")
        date = f.raw.get("price_date")
        if date is None:
            raise f.fail_value("price_date", "required field is missing")
        out.append(
            Price(
                device=device,
                provider=f.string("provider"),
                kind=f.string("kind", choices=PRICING_KINDS),
                usd_per_gpu_hour=f.number("usd_per_gpu_hour", gt=0),
                price_date=str(date),
                source=f.string("source"),
                plan=f.string("plan", None),
                instance=f.string("instance", None),
                gpus_per_instance=f.integer("gpus_per_instance", None, ge=1),
                region=f.string("region", None),
            )
        )
    return tuple(out)


_MODEL_KEYS = (
    "name",
    "aliases",
    "hf_id",
    "source",
    "published_params",
    "published_params_source",
    "config",
    "hf_quant_config",
    "hf_quant_config_source",
    "notes",
)


def _model_entry(path: Path) -> ModelEntry:
    f = Fields(read_document(path), str(path))
    f.check_keys(_MODEL_KEYS)
    f.string("source")
    if not isinstance(f.raw.get("config"), Mapping):
        raise f.fail_value("config", "expected the config.json contents as a mapping")
    return ModelEntry(name=f.string("name"), aliases=f.string_list("aliases", ()), path=path, hf_id=f.string("hf_id", None))


def load_model_entry(path: Path) -> ModelArch:
    """A model from a catalog entry (catalogs/models/*.yaml)."""
    f = Fields(read_document(path), str(path))
    f.check_keys(_MODEL_KEYS)
    return arch_from_config(
        f.raw["config"],
        name=f.string("name"),
        source=f"{path}",
        hf_id=f.string("hf_id", None),
        hf_quant_config=f.raw.get("hf_quant_config"),
        published_params=f.number("published_params", None, gt=0),
        published_params_source=f.string("published_params_source", None),
    )


def load_catalog(root: Path | None = None) -> Catalog:
    """Load gpus.yaml, prices.yaml and models/*.yaml from `root` (default: the shipped catalogs)."""
    root = Path(root) if root is not None else default_catalog_dir()
    if not root.is_dir():
        raise InputFileError(f"{root}: catalog directory not found")
    gpus = load_gpus(root / "gpus.yaml")
    prices = load_prices(root / "prices.yaml", gpus)
    model_dir = root / "models"
    models = tuple(_model_entry(p) for p in sorted(model_dir.glob("*.yaml"))) if model_dir.is_dir() else ()
    return Catalog(root=root, gpus=gpus, prices=prices, models=models)


def user_path(spec: str) -> Path:
    """A path as the user wrote it, `~` expanded where it names a home directory (kept as
    written where it names no user this system knows)."""
    try:
        return Path(spec).expanduser()
    except RuntimeError:
        return Path(spec)


def _exists(path: Path) -> bool:
    """Whether a path exists; False for a name no file system could hold (longer than the
    system's limit, or with a NUL byte), which is then looked up as a model name."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def resolve_model(spec: str, catalog: Catalog, *, base_dir: Path | None = None, where: str = "") -> ModelArch:
    """A model named in the catalog, or a path (absolute, or relative to `base_dir`) to a
    config.json or a folder holding one."""
    entry = catalog.find_model(spec)
    if entry is not None:
        return load_model_entry(entry.path)
    path = user_path(spec)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    exists = _exists(path)
    looks_like_path = spec.endswith(".json") or "/" in spec or os.sep in spec or exists
    if looks_like_path and exists:
        if path.is_dir() and not (path / "config.json").is_file():
            raise InputFileError(f"{where}folder {path} holds no config.json")
        return load_config_json(path, label=str(path))
    if looks_like_path and (spec.endswith(".json") or spec.startswith((".", "/", "~"))):
        raise InputFileError(f"{where}no such config.json: {path}")
    return catalog.model(spec, where)

