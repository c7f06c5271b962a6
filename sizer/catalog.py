"""Catalogs: GPUs, prices and models, loaded from YAML once and converted to SI units here.

    catalogs/gpus.yaml       one entry per device; units in key names (memory_gib, hbm_gb_per_s,
                             bf16_dense_tflops, link_gb_per_s); every figure has a `sources:` entry
    catalogs/efficiency.json the step-time model's efficiency factors, fitted by `sizer calibrate`
                             (efficiency.py reads it)
    catalogs/prices.yaml     USD per GPU-hour per device, provider and pricing kind, dated and sourced,
                             with the instance it is rented in (gpus_per_instance) and where the
                             figure was read (source_kind); a user's price files overlay it
    catalogs/models/*.yaml   Hugging Face config.json contents under `config:`, with name, aliases, source

After loading, every quantity is in base units: bytes, bytes/s, FLOP/s, seconds, USD/hour.
A device's format is *unsupported* when its dense-throughput field is absent; that absence is
kept (None), never turned into zero.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
import difflib
import hashlib
import re
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import FieldValueError, InputError, InputFileError, UnknownNameError, did_you_mean, is_name
from .model import ModelArch, arch_from_config, config_file_prefix, load_config_json
from .schema import MAX_DOCUMENT_BYTES, Fields, check_regular_file, read_document
from .units import GB, GIB, TERA

PRICING_KINDS = ("on_demand", "reserved_1y", "reserved_3y", "spot")
# Where a price was read, weakest first (pricing.min_source_kind keeps the kinds from one upward):
#   marketplace    a "starting at" listing or a median of offers on a marketplace (Akash, Vast)
#   secondary      a third party's statement of the price (article, research note, summary table),
#                  which may round, paraphrase, average or misdate it
#   provider_page  the provider's own figure: its price page, pricing API or price list, read there
#                  or from a verbatim machine copy of it that names the page (a transcription whose
#                  price text was found verbatim on the page, a catalog generated from the API)
#   user           the user's own price file (--prices, pricing.files): a negotiated rate
SOURCE_KINDS = ("marketplace", "secondary", "provider_page", "user")
FIRST_PARTY_KINDS = ("provider_page", "user")

# Words in the names nvidia-smi and rocm-smi print that do not tell devices apart: the vendor,
# the product line, the memory type, AMD's OAM form factor and VF (a virtual function in a VM),
# NVIDIA's AC (a power variant of B300).
_DEVICE_NOISE = frozenset({"nvidia", "amd", "instinct", "tesla", "hbm3", "hbm3e", "hbm2e", "oam", "vf", "ac", "gpu", "corporation"})
# Words of the names MLPerf submissions give an AMD accelerator that say it ran whole, not which
# it is: one memory partition (NPS1), one compute partition (SPX), and its rated board power
# (750W) -- `AMD Instinct MI300X-NPS1-SPX-192GB-750W` (mlcommons/inference_results_v4.1
# closed/AMD/systems/1xMI300X_2xEPYC-9374F.json, accelerator_model_name) is an MI300X-192GB. A
# partitioned device (NPS4, DPX, QPX, CPX: a fraction of the chip per logical GPU) keeps the
# word, and so matches no catalog device rather than the whole chip.
_DEVICE_SETTING = re.compile(r"nps1|spx|\d+w")


def device_key(name: str) -> str:
    """A device name reduced to what tells devices apart: lower case, the words of _DEVICE_NOISE
    and the partition and power words of _DEVICE_SETTING dropped, no separators
    (`NVIDIA H100 80GB HBM3` -> `h10080gb`, the key of alias H100-80GB)."""
    words = [w for w in re.split(r"[^a-z0-9]+", str(name).lower()) if w and w not in _DEVICE_NOISE and not _DEVICE_SETTING.fullmatch(w)]
    return "".join(words)


# Words of a model id that do not change the architecture: tuning variants and the `Meta-` prefix.
_MODEL_VARIANTS = frozenset({"instruct", "chat", "hf", "it", "base", "meta", "sft", "dpo", "rlhf"})


def model_key(name: str) -> str:
    """A model id reduced to its architecture: the organisation, the words of _MODEL_VARIANTS,
    versions such as v0.1 and dates such as 2507 dropped, lower case, no separators
    (`meta-llama/Meta-Llama-3.1-8B-Instruct` -> `llama3.18b`)."""
    return "".join(_model_words(name))


def _model_words(name: str) -> list[str]:
    base = str(name).strip().lower().rsplit("/", 1)[-1]
    words = [w for w in re.split(r"[-_\s]+", base) if w]
    kept = [w for w in words if w not in _MODEL_VARIANTS and not re.fullmatch(r"v\d+\.\d+|\d{4}", w)]
    return kept or words


def _model_sizes(name: str) -> frozenset[str]:
    """The size words of a model id: 8b, 70b, 8x7b, a22b."""
    return frozenset(w for w in _model_words(name) if re.fullmatch(r"(\d+x)?\d+(\.\d+)?[bm]|a\d+(\.\d+)?b", w))
INTERCONNECTS = ("nvlink", "infinity_fabric", "pcie")
COMPUTE_FORMATS = ("bf16", "fp8", "int8", "fp4")


@dataclass(frozen=True, slots=True, kw_only=True)
class Gpu:
    name: str
    aliases: tuple[str, ...]
    vendor: str
    family: str = ""  # architecture generation (hopper, cdna3, ...): the error model's family group
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
    network_bytes_per_s: float | None = None  # inter-node (scale-out) link per GPU, per direction; None: not in the catalog
    bridge_bytes_per_s: float | None = None  # NVLink bridge joining `bridge_gpus` PCIe cards, per direction, per GPU
    bridge_gpus: int | None = None

    def link_for(self, replica_gpus: int) -> float:
        """The link a replica of `replica_gpus` GPUs exchanges activations over (bytes/s, per
        direction, per GPU): the NVLink bridge when the replica fits within one bridged group of
        cards (H100 NVL's pairs), else the machine's link."""
        if self.bridge_bytes_per_s is not None and self.bridge_gpus is not None and 1 < replica_gpus <= self.bridge_gpus:
            return self.bridge_bytes_per_s
        return self.link_bytes_per_s

    def supports(self, compute_format: str) -> bool:
        return self.dense_flops_per_s.get(compute_format) is not None

    @property
    def fp4_format(self) -> str:
        """The 4-bit weight format its FP4 tensor cores take: NVFP4 (16-value blocks, FP8 E4M3
        scales) is NVIDIA's Blackwell format; off NVIDIA FP4 is OCP MXFP4 (32-value blocks, E8M0
        scales), what AMD's Quark quantises to for MI355X."""
        return "nvfp4" if self.vendor == "nvidia" else "mxfp4"


@dataclass(frozen=True, slots=True, kw_only=True)
class Price:
    """One offer: a device rented from a provider under a pricing kind, in instances of
    `gpus_per_instance` GPUs in one machine, at `usd_per_gpu_hour` per GPU (the instance costs
    gpus_per_instance x that)."""

    device: str
    provider: str
    kind: str
    usd_per_gpu_hour: float
    price_date: str | None  # YYYY-MM-DD or YYYY-MM (the date the source read it); None: a user row without one
    source: str
    plan: str | None = None
    instance: str | None = None
    gpus_per_instance: int = 1
    gpus_per_instance_assumed: bool = False  # the source does not say: 1 GPU, the safe rule (see prices.yaml)
    region: str | None = None
    source_kind: str = "provider_page"
    origin: str = ""  # the file the row was read from
    quote: str | None = None  # the source's own text
    notes: str | None = None

    @property
    def label(self) -> str:
        plan = f" {self.plan}" if self.plan else ""
        date = f" ({self.price_date})" if self.price_date else ""
        return f"{self.provider}{plan} {self.kind}{date}"

    @property
    def usd_per_instance_hour(self) -> float:
        return self.usd_per_gpu_hour * self.gpus_per_instance

    @property
    def instance_label(self) -> str:
        """How the instance is named in messages: its type, else its plan, else 'G-GPU instance'."""
        name = self.instance or self.plan
        return f"{self.provider} {name}" if name else f"{self.provider} {self.gpus_per_instance}-GPU instance"

    @property
    def first_party(self) -> bool:
        return self.source_kind in FIRST_PARTY_KINDS

    @property
    def overlay_key(self) -> tuple:
        """A user row replaces every shipped row with the same device, provider, kind and instance."""
        return (self.device, self.provider, self.kind, self.instance or "")

    @property
    def offer_key(self) -> tuple:
        """The same offer listed twice (the older is dropped)."""
        return (self.device, self.provider, self.kind, self.instance or "", self.plan or "", self.gpus_per_instance, self.region or "")

    def age_days(self, as_of: date) -> int | None:
        """Whole days from the price date to `as_of` (a YYYY-MM date counts from the month's
        first day: the oldest it can be). None without a date."""
        d = parse_price_date(self.price_date)
        return None if d is None else (as_of - d).days


def parse_price_date(text: str | None) -> date | None:
    """YYYY-MM-DD, or YYYY-MM (the first day of the month); None for None; ValueError otherwise."""
    if text is None:
        return None
    text = str(text)
    if len(text) == 7:
        return datetime.strptime(text, "%Y-%m").date()
    return datetime.strptime(text, "%Y-%m-%d").date()


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
    price_notes: tuple[str, ...] = ()  # what the user's price rows replaced (with_prices): warnings

    # -- GPUs ------------------------------------------------------------------------------
    @cached_property
    def _gpu_index(self) -> dict[str, Gpu]:
        index: dict[str, Gpu] = {}
        for gpu in self.gpus:
            for key in (gpu.name, *gpu.aliases):
                index[key.lower()] = gpu
        return index

    @cached_property
    def _gpu_keys(self) -> dict[str, Gpu | None]:
        """device_key of every name and alias; None where two devices would share a key."""
        index: dict[str, Gpu | None] = {}
        for gpu in self.gpus:
            for key in {device_key(k) for k in (gpu.name, *gpu.aliases)}:
                index[key] = gpu if index.get(key, gpu) is gpu else None
        return index

    def gpu(self, name: str, where: str = "") -> Gpu:
        """The GPU called `name`: its name or an alias, case-insensitive, or the name nvidia-smi or
        rocm-smi prints (`NVIDIA H100 80GB HBM3`, `AMD Instinct MI300X`: device_key)."""
        found = self._gpu_index.get(str(name).lower()) or self._gpu_keys.get(device_key(name))
        if found is None:
            names = [g.name for g in self.gpus]
            keys = {device_key(k): g.name for g in self.gpus for k in (g.name, *g.aliases)}
            key = device_key(name)
            chip = re.match(r"[a-z]+\d+", key)
            family = [k for k in keys if chip and k.startswith(chip.group(0))]
            close = difflib.get_close_matches(key, family, n=1, cutoff=0.0) if family else difflib.get_close_matches(key, list(keys), n=1, cutoff=0.6)
            hint = f" (did you mean '{keys[close[0]]}'?)" if close else ""
            raise UnknownNameError(
                f"{where}unknown device {name!r}{hint}; the catalog has: {', '.join(names)} "
                "(add a device to gpus.yaml, or give --catalog a folder with your own)"
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

    def with_prices(self, overlay: tuple[Price, ...] | list[Price], label: str = "") -> "Catalog":
        """This catalog with `overlay` laid over its prices: an overlay row replaces every row
        with the same device, provider, kind and instance (Price.overlay_key); the others are
        added. Laying the same rows again changes nothing. Each row that replaces rows other than
        itself is noted in `price_notes` (a row with no instance replaces every size and plan of
        its provider's offers, which may take a layout's instance away: a cheaper price can give a
        dearer plan)."""
        if not overlay:
            return self
        keys = {p.overlay_key for p in overlay}
        kept = [p for p in self.prices if p.overlay_key not in keys or p in overlay]
        added = [p for p in overlay if p not in kept]
        notes = list(self.price_notes)
        for p in overlay:
            gone = [q for q in self.prices if q.overlay_key == p.overlay_key and q not in overlay]
            if gone:
                what = ", ".join(f"{q.plan or q.instance or 'no plan'} ({q.gpus_per_instance} GPU{'s' if q.gpus_per_instance != 1 else ''}, ${q.usd_per_gpu_hour:g}/GPU-h)" for q in gone)
                notes.append(
                    f"{label + ': ' if label else ''}{p.device} {p.provider} {p.kind}{' ' + p.instance if p.instance else ''} "
                    f"(${p.usd_per_gpu_hour:g}/GPU-h, {p.gpus_per_instance} GPU{'s' if p.gpus_per_instance != 1 else ''} an instance) replaces "
                    f"{len(gone)} catalog row{'s' if len(gone) != 1 else ''} with the same device, provider, kind and instance: {what}"
                    + (
                        f"; at {p.gpus_per_instance} GPU{'s' if p.gpus_per_instance != 1 else ''} an instance it holds no replica of more "
                        f"(give gpus_per_instance, or an instance per size)"
                        if max(q.gpus_per_instance for q in gone) > p.gpus_per_instance
                        else ""
                    )
                )
        return replace(self, prices=tuple(kept + added), price_notes=tuple(dict.fromkeys(notes)))

    def restricted(self, *, providers: tuple[str, ...] | None = None, exclude: tuple[str, ...] = (), min_source_kind: str = "marketplace") -> "Catalog":
        """This catalog with only the prices of `providers` (None: all), none of `exclude`, and
        only rows read at `min_source_kind` or better (SOURCE_KINDS)."""
        floor = SOURCE_KINDS.index(min_source_kind)
        rows = tuple(
            p
            for p in self.prices
            if (providers is None or p.provider in providers) and p.provider not in exclude and SOURCE_KINDS.index(p.source_kind) >= floor
        )
        return self if rows == self.prices else replace(self, prices=rows)

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

    @cached_property
    def _model_keys(self) -> dict[str, list[ModelEntry]]:
        index: dict[str, list[ModelEntry]] = {}
        for entry in self.models:
            for key in {model_key(k) for k in (entry.name, *entry.aliases, *((entry.hf_id,) if entry.hf_id else ()))}:
                index.setdefault(key, [])
                if entry not in index[key]:
                    index[key].append(entry)
        return index

    def find_model(self, name: str) -> ModelEntry | None:
        """The catalog entry called `name` (name, alias or Hugging Face id, case-insensitive)."""
        return self._model_index.get(str(name).lower())

    def match_model(self, name: str) -> ModelEntry | None:
        """find_model, else the one entry whose model_key is the same: an id with or without its
        organisation, `Meta-`, `-Instruct`, `-chat`, `-hf`, `-it`, `-Base`, a v0.1 or a date
        (`meta-llama/Meta-Llama-3.1-8B` is llama-3.1-8b). None when no entry, or several, match."""
        found = self.find_model(name)
        if found is not None:
            return found
        entries = self._model_keys.get(model_key(name), [])
        return entries[0] if len(entries) == 1 else None

    def model(self, name: str, where: str = "") -> ModelArch:
        """The model called `name` in the catalog (match_model). A Hugging Face id that matches an
        entry only as a variant (base for instruct, ...) is the id the launch line serves."""
        entry = self.match_model(name)
        if entry is None:
            spellings = [k for m in self.models for k in (m.name, *m.aliases, *((m.hf_id,) if m.hf_id else ()))]
            keys = {model_key(k): m.name for m in self.models for k in (m.name, *m.aliases, *((m.hf_id,) if m.hf_id else ()))}
            key = model_key(name)
            # suggest only a model of the same size (qwen3-14b is not qwen3-8b)
            sizes = _model_sizes(name)
            same_size = [model_key(k) for k in spellings if _model_sizes(k) == sizes] if sizes else list(keys)
            close = difflib.get_close_matches(key, same_size, n=1, cutoff=0.6)
            several = self._model_keys.get(key, [])
            hint = f" (it could be any of {', '.join(e.name for e in several)})" if len(several) > 1 else (f" (did you mean '{keys[close[0]]}'?)" if close else "")
            raise UnknownNameError(
                f"{where}unknown model {name!r}{hint}; `sizer catalog models` lists the {len(self.models)} in the catalog; "
                "or give a path to the model's config.json (or its folder)"
            )
        model = load_model_entry(entry.path)
        if "/" in str(name) and str(name).lower() != (model.hf_id or "").lower():
            # a Hugging Face id of a catalogued architecture (another variant, a base model): the
            # launch line serves the id the user gave, not the catalog's
            model = replace(model, hf_id=str(name), notes=(*model.notes, f"{name} has the architecture of the catalog's {entry.name}"))
        return model


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
    "family",
    "memory_gib",
    "usable_memory_gib",
    "hbm_gb_per_s",
    "bf16_dense_tflops",
    "fp8_dense_tflops",
    "int8_dense_tops",
    "fp4_dense_tflops",
    "interconnect",
    "link_gb_per_s",
    "bridge_gb_per_s",
    "bridge_gpus",
    "gpus_per_node",
    "nvlink_domain_gpus",
    "network_gb_per_s",
    "tdp_w",
    "sources",
    "notes",
)
_NUMERIC_GPU_KEYS = tuple(
    k for k in _GPU_KEYS if k.endswith(("_gib", "_per_s", "_tflops", "_tops")) or k in ("gpus_per_node", "nvlink_domain_gpus", "bridge_gpus", "tdp_w")
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
            if not is_name(key):
                raise f.fail_value("name" if key is name else "aliases", f"expected a device name (printable, not blank), got {key!r}")
            if key.lower() in seen:
                raise f.fail_value("aliases", f"{key!r} already names {seen[key.lower()]!r}")
            seen[key.lower()] = name
        sources = f.sub("sources")
        for key in _NUMERIC_GPU_KEYS:
            if f.has(key) and not sources.has(key):
                raise f.fail_value(f"sources.{key}", "every figure needs a source: add one")
        interconnect = f.string("interconnect", choices=INTERCONNECTS)
        flops = {
            "bf16": f.number("bf16_dense_tflops", **FLOPS_RANGE) * TERA,
            "fp8": f.number("fp8_dense_tflops", None, **FLOPS_RANGE),
            "int8": f.number("int8_dense_tops", None, **FLOPS_RANGE),
            "fp4": f.number("fp4_dense_tflops", None, **FLOPS_RANGE),
        }
        flops = {k: (v * TERA if (k != "bf16" and v is not None) else v) for k, v in flops.items()}
        memory_gib = f.number("memory_gib", **MEMORY_GIB_RANGE)
        usable_gib = f.number("usable_memory_gib", **MEMORY_GIB_RANGE)
        if usable_gib > memory_gib * 1.0001:
            raise f.fail_value("usable_memory_gib", f"expected <= memory_gib ({memory_gib:g}), got {usable_gib:g}")
        bridge_gb = f.number("bridge_gb_per_s", None, **LINK_GB_PER_S_RANGE)
        bridge_gpus = f.integer("bridge_gpus", None, ge=2, le=100_000)
        if (bridge_gb is None) != (bridge_gpus is None):
            raise f.fail_value("bridge_gpus" if bridge_gpus is None else "bridge_gb_per_s", "bridge_gb_per_s and bridge_gpus go together: the bridge's bandwidth and how many cards it joins")
        gpus.append(
            Gpu(
                name=name,
                aliases=aliases,
                vendor=f.string("vendor", choices=("nvidia", "amd", "intel", "google", "other")),
                family=f.string("family", "").lower(),
                memory_bytes=memory_gib * GIB,
                usable_memory_bytes=usable_gib * GIB,
                hbm_bytes_per_s=f.number("hbm_gb_per_s", **BANDWIDTH_GB_PER_S_RANGE) * GB,
                dense_flops_per_s=flops,
                interconnect=interconnect,
                link_bytes_per_s=f.number("link_gb_per_s", **LINK_GB_PER_S_RANGE) * GB,
                gpus_per_node=f.integer("gpus_per_node", ge=1, le=100_000),
                nvlink_domain_gpus=f.integer("nvlink_domain_gpus", None, ge=1, le=100_000),
                network_bytes_per_s=(lambda v: None if v is None else v * GB)(f.number("network_gb_per_s", None, **LINK_GB_PER_S_RANGE)),
                bridge_bytes_per_s=None if bridge_gb is None else bridge_gb * GB,
                bridge_gpus=bridge_gpus,
                tdp_w=f.number("tdp_w", None, gt=0, le=1e6),
                sources={str(k): str(v) for k, v in sources.raw.items()},
            )
        )
    return tuple(gpus)


# A device's figures lie within these (three orders of magnitude around every accelerator in the
# catalog, L4 to B300): outside them a figure is a typo or a unit slip (TFLOPS given as FLOPS), and
# one of 1e-300 overflowed the latency model's arithmetic.
FLOPS_RANGE = {"ge": 0.1, "le": 1e6}  # dense TFLOPS (TOPS for int8)
MEMORY_GIB_RANGE = {"ge": 0.5, "le": 1e5}
BANDWIDTH_GB_PER_S_RANGE = {"ge": 10.0, "le": 1e6}  # HBM / GDDR
LINK_GB_PER_S_RANGE = {"ge": 0.1, "le": 1e6}  # NVLink / PCIe / network, per GPU

_PRICE_KEYS = (
    "device",
    "provider",
    "kind",
    "usd_per_gpu_hour",
    "usd_per_instance_hour",
    "plan",
    "instance",
    "gpus_per_instance",
    "region",
    "price_date",
    "source",
    "source_kind",
    "quote",
    "notes",
)


class PriceFileError(InputError):
    """A price file with bad rows: every bad row on its own line (file, row, field, what was
    expected); the exit code is the first bad row's."""

    def __init__(self, errors: list[InputError]):
        super().__init__("\n".join(str(e) for e in errors))
        self.errors = errors
        self.exit_code = errors[0].exit_code


def _price_rows(raw: Any, path: str, i: int, names: set[str], user: bool) -> list[Price]:
    """The Price rows of one entry (more than one when gpus_per_instance lists instance sizes)."""
    f = Fields(raw, path, f"prices[{i}]")
    f.check_keys(_PRICE_KEYS)
    device = f.string("device")
    if device not in names:
        raise UnknownNameError(f"{path}: prices[{i}].device: unknown device {device!r}{did_you_mean(device, names)}; the catalog has: {', '.join(sorted(names))}")
    date_raw = f.raw.get("price_date")
    if date_raw is None and not user:
        raise f.fail_value("price_date", "required field is missing (the date the source read the price, YYYY-MM-DD)")
    if date_raw is not None:
        try:
            parse_price_date(str(date_raw))
        except ValueError:
            raise f.fail_value("price_date", f"expected a date YYYY-MM-DD (or YYYY-MM), got {date_raw!r}") from None
    if user:
        kind_of_source = f.string("source_kind", "user", choices=("user",))
        source = f.string("source", f"user price file {path}")
    else:
        kind_of_source = f.string("source_kind", choices=SOURCE_KINDS)
        source = f.string("source")
    sizes_raw = f.raw.get("gpus_per_instance")
    assumed = sizes_raw is None
    if assumed:
        sizes = (1,)
    elif isinstance(sizes_raw, list):
        sizes = f.int_list("gpus_per_instance", ge=1)
        if len(set(sizes)) != len(sizes):
            raise f.fail_value("gpus_per_instance", f"expected distinct instance sizes, got {list(sizes)}")
    else:
        sizes = (f.integer("gpus_per_instance", ge=1),)
    if f.has("usd_per_gpu_hour") and f.has("usd_per_instance_hour"):
        raise f.fail_value("usd_per_instance_hour", "give usd_per_gpu_hour or usd_per_instance_hour, not both")
    if f.has("usd_per_instance_hour"):
        if assumed or len(sizes) != 1:
            raise f.fail_value("gpus_per_instance", "usd_per_instance_hour needs the GPUs of that one instance (an integer)")
        per_gpu = f.number("usd_per_instance_hour", gt=0) / sizes[0]
    elif f.has("usd_per_gpu_hour"):
        per_gpu = f.number("usd_per_gpu_hour", gt=0)
    else:
        raise f.fail_value("usd_per_gpu_hour", "required field is missing (or usd_per_instance_hour with gpus_per_instance)")
    provider = f.string("provider")
    if not provider.strip():
        raise f.fail_value("provider", "expected a provider name, got an empty string")
    base = Price(
        device=device,
        provider=provider,
        kind=f.string("kind", choices=PRICING_KINDS),
        usd_per_gpu_hour=per_gpu,
        price_date=None if date_raw is None else str(date_raw),
        source=source,
        plan=f.string("plan", None),
        instance=f.string("instance", None),
        gpus_per_instance=sizes[0],
        gpus_per_instance_assumed=assumed,
        region=f.string("region", None),
        source_kind=kind_of_source,
        origin=path,
        quote=f.string("quote", None),
        notes=f.string("notes", None),
    )
    return [replace(base, gpus_per_instance=g) for g in sizes]


def _newest(rows: list[Price]) -> list[Price]:
    """The same offer listed twice keeps the newer price date (the later row on a tie)."""
    best: dict[tuple, int] = {}
    for i, p in enumerate(rows):
        j = best.get(p.offer_key)
        if j is None or (parse_price_date(p.price_date) or date.min) >= (parse_price_date(rows[j].price_date) or date.min):
            best[p.offer_key] = i
    keep = set(best.values())
    return [p for i, p in enumerate(rows) if i in keep]


def load_prices(path: Path, gpus: tuple[Gpu, ...], *, user: bool = False) -> tuple[Price, ...]:
    """Price rows of a file (`prices:` list). Every bad row is reported, one line each, in one
    PriceFileError; nothing is returned from a file with a bad row. `user`: the user's own file
    (--prices, pricing.files): source_kind user, source and price_date optional, and an offer
    given twice refused (the shipped catalog keeps the newer of two, _newest)."""
    label = str(path)
    doc = Fields(read_document(path), label)
    doc.check_keys(("prices",))
    entries = doc.raw.get("prices")
    if not isinstance(entries, list) or not entries:
        raise FieldValueError(f"{label}: prices: expected a non-empty list of prices")
    names = {g.name for g in gpus}
    out: list[Price] = []
    errors: list[InputError] = []
    first: dict[tuple, int] = {}
    for i, raw in enumerate(entries):
        try:
            rows = _price_rows(raw, label, i, names, user)
        except InputError as exc:
            errors.append(exc)
            continue
        for row in rows:
            j = first.setdefault(row.offer_key, i)
            if user and j != i:  # the user's own file: which of the two is meant cannot be told
                errors.append(FieldValueError(f"{label}: prices[{i}]: the same offer as prices[{j}] ({row.device}, {row.provider}, {row.kind}, instance {row.instance or '-'}, {row.gpus_per_instance} GPU(s)): give it once"))
                break
        out.extend(rows)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise PriceFileError(errors)
    return tuple(_newest(out))


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


_MODEL_ENTRIES: dict[tuple[str, str], ModelArch] = {}


def load_model_entry(path: Path) -> ModelArch:
    """A model from a catalog entry (catalogs/models/*.yaml). Parsed once per content of the file
    (its path and the SHA-256 of its bytes, so an edit is always read): validating the shipped
    table resolves some 3,800 rows to a few dozen entries, and parsing each again was half of
    `sizer validate`'s time."""
    try:
        check_regular_file(path, str(path), MAX_DOCUMENT_BYTES)  # never read a pipe or a device
        key = (str(Path(path).resolve()), hashlib.sha256(Path(path).read_bytes()).hexdigest())
    except (InputError, OSError, ValueError):
        return _read_model_entry(path)  # its one-line error
    model = _MODEL_ENTRIES.get(key)
    if model is None:
        model = _MODEL_ENTRIES[key] = _read_model_entry(path)
    return model


def _read_model_entry(path: Path) -> ModelArch:
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


def load_price_files(catalog: Catalog, paths: list[Path] | tuple[Path, ...]) -> Catalog:
    """The catalog with the user's price files laid over it, in order (Catalog.with_prices)."""
    for path in paths:
        catalog = catalog.with_prices(load_prices(Path(path), catalog.gpus, user=True), label=str(path))
    return catalog


def load_catalog(root: Path | None = None) -> Catalog:
    """Load gpus.yaml, prices.yaml and models/*.yaml from `root` (default: the shipped catalogs)."""
    from_env = root is None and bool(os.environ.get("SIZER_CATALOG_DIR"))
    root = Path(root) if root is not None else default_catalog_dir()
    if not root.is_dir():
        where = f"SIZER_CATALOG_DIR={root} (the environment variable; unset it for the shipped catalogs)" if from_env else str(root)
        raise InputFileError(f"{where}: " + ("is a file, expected a catalog directory" if root.exists() else "catalog directory not found"))
    if from_env and not (root / "gpus.yaml").exists():
        raise InputFileError(f"SIZER_CATALOG_DIR={root} (the environment variable; unset it for the shipped catalogs): holds no gpus.yaml; expected a catalog directory (gpus.yaml, prices.yaml, models/)")
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


LOCAL_ID_NOTE = "served from its folder: no Hugging Face id in the config (_name_or_path)"
FILE_NAME_ID_NOTE = "served as its file name reads: no Hugging Face id in the config (_name_or_path), and a file not named config.json is no checkpoint folder"


def served_id_warnings(model: ModelArch, flag: str = "served_model_name") -> list[str]:
    """What the launch line serves when the config does not name its Hugging Face id."""
    if LOCAL_ID_NOTE in model.notes:
        return [f"the launch line serves {model.hf_id}, the folder of the config ({LOCAL_ID_NOTE.split(': ', 1)[1]}); set {flag} to the id or path the engine loads"]
    if FILE_NAME_ID_NOTE in model.notes:
        return [f"the launch line serves {model.hf_id}, as the config's file name reads ({FILE_NAME_ID_NOTE.split(': ', 1)[1]}); set {flag} to the id or path the engine loads"]
    return []


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
        model = load_config_json(path, label=str(path))
        if model.hf_id is not None:
            # named after the Hugging Face id the config records, not its file or folder
            model = replace(model, name=model.hf_id.split("/")[-1])
        prefix = None if path.is_dir() else config_file_prefix(path)
        if model.hf_id is None and prefix is None:
            # no Hugging Face id in the config (_name_or_path): the engine loads the folder itself
            folder = path if path.is_dir() else path.parent
            model = replace(model, hf_id=os.path.normpath(str(folder)), notes=(*model.notes, LOCAL_ID_NOTE))
        elif model.hf_id is None:
            # a config saved under another name than config.json: its folder is no checkpoint the
            # engine could load; the id is read from the name, `org--name` as the Hugging Face cache
            # spells `org/name` (models--org--name)
            guess = prefix.replace("--", "/", 1) if prefix.count("--") == 1 else prefix
            model = replace(model, hf_id=guess, notes=(*model.notes, FILE_NAME_ID_NOTE))
        return model
    if looks_like_path and (spec.endswith(".json") or spec.startswith((".", "/", "~"))):
        raise InputFileError(f"{where}no such config.json: {path}")
    return catalog.model(spec, where)

