"""Purchasing inputs of a workload: what may be bought, how it is paid, and how traffic varies
over the day. Read here, field by field, for workload.py; used by the fleet program (optimize.py).

    traffic.profile           24 hourly request rates (requests/s; hour 0 = 00:00-01:00)
    traffic.trace             a trace of arrivals (traces.py): a day or more gives the hourly
                              rates, less a sample's rate; its lengths when it has them
    constraints               available_gpus, budget_usd_per_hour | budget_usd_per_month,
                              min_replicas, redundancy, allow_cross_node, instance_gpus
    pricing                   provider(s) and kind (on_demand | reserved_1y | reserved_3y | spot |
                              mixed: a reserved base paid every hour plus on-demand replicas paid
                              in the hours they run); providers, exclude_providers,
                              min_source_kind and the user's own price files
    search.size_buckets       prompt-length percentiles at which the traffic is split for a mixed
                              fleet (default [50, 90] when search.max_configurations > 1)

Units: requests/s, USD per hour or per month, GPUs. The month is 365/12 days (730 hours).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from .errors import FieldTypeError, FieldValueError, InputFileError, printable
from .schema import Fields, type_name

HOURS_PER_DAY = 24
DAYS_PER_MONTH = 365 / 12  # 30.4167: a month of a 365-day year
HOURS_PER_MONTH = HOURS_PER_DAY * DAYS_PER_MONTH  # 730
REDUNDANCY = ("none", "n_plus_1")
PRICING_KIND_CHOICES = ("on_demand", "reserved_1y", "reserved_3y", "spot", "mixed")
RESERVED_KINDS = ("reserved_1y", "reserved_3y")
DEFAULT_SIZE_BUCKETS = (50.0, 90.0)

CONSTRAINT_KEYS = (
    "available_gpus",
    "budget_usd_per_hour",
    "budget_usd_per_month",
    "min_replicas",
    "redundancy",
    "allow_cross_node",
    "instance_gpus",
)
PRICING_KEYS = ("provider", "providers", "exclude_providers", "min_source_kind", "files", "kind", "reserved_kind")


@dataclass(frozen=True, slots=True, kw_only=True)
class Constraints:
    """Purchasing constraints; each becomes a named constraint of the program (optimize.py)."""

    available_gpus: tuple[tuple[str, int], ...] = ()  # (device, GPUs that can be rented at once)
    budget_usd_per_hour: float | None = None  # no hour of the day may cost more
    budget_usd_per_month: float | None = None  # the day's cost x 365/12
    min_replicas: int = 0  # at least this many replicas in every hour (0: no floor)
    redundancy: str = "none"  # "n_plus_1": capacity holds with any one replica lost
    allow_cross_node: bool = False  # a TP group may span rented instances
    instance_gpus: tuple[tuple[str, int], ...] = ()  # (device, GPUs per rented instance), overriding the catalog

    def available(self, device: str) -> int | None:
        return dict(self.available_gpus).get(device)

    def instance_size(self, device: str) -> int | None:
        return dict(self.instance_gpus).get(device)

    @property
    def n_plus_1(self) -> bool:
        return self.redundancy == "n_plus_1"

    @property
    def any(self) -> bool:
        return self != Constraints()


@dataclass(frozen=True, slots=True, kw_only=True)
class Pricing:
    provider: str = "any"
    kind: str = "on_demand"  # PRICING_KIND_CHOICES
    reserved_kind: str | None = None  # the committed base's kind when kind is "mixed"
    providers: tuple[str, ...] | None = None  # None: any provider
    exclude_providers: tuple[str, ...] = ()
    min_source_kind: str = "provider_page"
    files: tuple[str, ...] = ()  # the user's price files, resolved against the workload's folder

    @property
    def candidate_kind(self) -> str:
        """The catalog kind candidates are priced at: on-demand for a mixed fleet (its burst)."""
        return "on_demand" if self.kind == "mixed" else self.kind

    @property
    def hourly_kind(self) -> str | None:
        """The catalog kind of replicas paid by the hour (None when every replica is committed)."""
        if self.kind == "mixed":
            return "on_demand"
        return None if self.kind in RESERVED_KINDS else self.kind


# ------------------------------------------------------------------------------------------------
# parsing
# ------------------------------------------------------------------------------------------------


def parse_profile(t: Fields) -> tuple[float, ...]:
    """traffic.profile: 24 hourly rates >= 0, not all zero."""
    raw = t.raw.get("profile")
    where = f"{t.file}: {'.'.join(p for p in (t.path, 'profile') if p)}"
    if not isinstance(raw, list):
        raise FieldTypeError(f"{where}: expected a list of {HOURS_PER_DAY} hourly request rates (requests/s, hour 0 = 00:00-01:00), got {type_name(raw)}")
    if len(raw) != HOURS_PER_DAY:
        raise FieldValueError(f"{where}: expected {HOURS_PER_DAY} hourly request rates (hour 0 = 00:00-01:00), got {len(raw)}")
    out = []
    for i, v in enumerate(raw):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise FieldTypeError(f"{where}[{i}]: expected a number of requests/s, got {type_name(v)}")
        if not math.isfinite(v) or v < 0:
            raise FieldValueError(f"{where}[{i}]: expected a number >= 0, got {v:g}")
        out.append(float(v))
    if max(out) <= 0:
        raise FieldValueError(f"{where}: every hour is zero; expected at least one rate > 0")
    return tuple(out)


def parse_constraints(f: Fields, catalog) -> Constraints:
    """The `constraints:` section; device names resolve through the catalog (with did-you-mean)."""
    c = f.sub("constraints")
    c.check_keys(CONSTRAINT_KEYS)
    return Constraints(
        available_gpus=_device_counts(c, "available_gpus", catalog, ge=0),
        budget_usd_per_hour=c.number("budget_usd_per_hour", None, gt=0),
        budget_usd_per_month=c.number("budget_usd_per_month", None, gt=0),
        min_replicas=c.integer("min_replicas", None, ge=1) or 0,
        redundancy=c.string("redundancy", "none", choices=REDUNDANCY),
        allow_cross_node=c.boolean("allow_cross_node", False),
        instance_gpus=_device_counts(c, "instance_gpus", catalog, ge=1),
    )


def _device_counts(c: Fields, key: str, catalog, ge: int) -> tuple[tuple[str, int], ...]:
    if not c.has(key):
        return ()
    sub = c.sub(key)
    out: dict[str, int] = {}
    for name in sub.raw:
        device = catalog.gpu(str(name), where=f"{sub.file}: {sub.path}.{name}: ").name
        if device in out:
            raise sub.fail_value(str(name), f"{device} is given twice (as {name!r} and an alias)")
        out[device] = sub.integer(str(name), ge=ge)
    return tuple(sorted(out.items()))


def parse_pricing(f: Fields, sr: Fields, providers: list[str], base_dir: Path | None = None) -> Pricing:
    """Top-level `pricing:`, or the older `search.pricing` / `search.provider` (same meaning).
    Both spellings at once is refused rather than one silently winning.

    pricing.provider (one name, or any) and pricing.providers (a list) choose whose prices are
    used; pricing.exclude_providers leaves some out. pricing.min_source_kind keeps the rows read at
    that kind or better (catalog.SOURCE_KINDS): by default provider_page when the providers are
    `any` (first-party prices only: the provider's own page or API, or the user's), and
    marketplace (every row) when the workload names its providers. pricing.files: the user's own
    price files, relative to the workload; `providers` (the catalog's) already holds their rows'
    providers when the caller laid them over the catalog."""
    from .catalog import SOURCE_KINDS
    from .errors import UnknownNameError, did_you_mean

    p = f.sub("pricing")
    p.check_keys(PRICING_KEYS)
    for new, old in (("kind", "pricing"), ("provider", "provider")):
        if p.has(new) and sr.has(old):
            raise p.fail_value(new, f"also given as search.{old}; keep one (pricing.{new} is the current spelling)")
    if p.has("kind"):
        kind = p.string("kind", choices=PRICING_KIND_CHOICES)
    else:
        kind = sr.string("pricing", "on_demand", choices=tuple(k for k in PRICING_KIND_CHOICES if k != "mixed"))
    if p.has("provider") and p.has("providers"):
        raise p.fail_value("providers", "also given as pricing.provider; keep one (a list of one provider is fine)")
    if p.has("providers"):
        chosen, field = p.string_list("providers"), "pricing.providers"
    else:
        section, field = (p, "pricing.provider") if p.has("provider") else (sr, "search.provider")
        if isinstance(section.raw.get("provider"), list):
            raise FieldTypeError(f"{section.file}: {field}: expected one provider name, got a list (several: pricing.providers)")
        chosen = (section.string("provider", "any"),)
    if "any" in chosen:
        if len(chosen) > 1:
            raise p.fail_value("providers", f"'any' means every provider; list providers or give any, not both (got {list(chosen)})")
        named = None
    else:
        named = tuple(dict.fromkeys(chosen))
    excluded = p.string_list("exclude_providers", ())
    for where, names in ((field, named or ()), ("pricing.exclude_providers", excluded)):
        for i, name in enumerate(names):
            if name not in providers:
                idx = f"[{i}]" if where in ("pricing.providers", "pricing.exclude_providers") else ""
                raise UnknownNameError(
                    f"{f.file}: {where}{idx}: unknown provider {name!r}{did_you_mean(name, providers)}; the catalog has: any, {', '.join(providers)}"
                )
    if named is not None and excluded and set(named) <= set(excluded):
        raise p.fail_value("exclude_providers", f"excludes every provider named in {field}: no price would be left")
    min_kind = p.string("min_source_kind", "provider_page" if named is None else "marketplace", choices=SOURCE_KINDS)
    files: list[str] = []
    if p.has("files"):
        for i, name in enumerate(p.string_list("files")):
            path = Path(name).expanduser()
            if not path.is_absolute() and base_dir is not None:
                path = base_dir / path
            if not path.is_file():
                raise InputFileError(f"{f.file}: pricing.files[{i}]: no such price file: {printable(path)}")
            files.append(str(path))
    reserved = p.string("reserved_kind", None, choices=RESERVED_KINDS)
    if reserved is not None and kind != "mixed":
        raise p.fail_value("reserved_kind", f"applies to kind mixed only (kind is {kind})")
    if kind == "mixed":
        reserved = reserved or "reserved_1y"
    provider = named[0] if named is not None and len(named) == 1 else "any"
    return Pricing(
        provider=provider,
        kind=kind,
        reserved_kind=reserved,
        providers=named,
        exclude_providers=tuple(dict.fromkeys(excluded)),
        min_source_kind=min_kind,
        files=tuple(files),
    )


def parse_size_buckets(sr: Fields, max_configurations: int) -> tuple[float, ...]:
    """search.size_buckets: increasing prompt-length percentiles in (0, 100) at which to split,
    an integer N (N equal-probability buckets), or [] (no split)."""
    where = f"{sr.file}: {'.'.join(p for p in (sr.path, 'size_buckets') if p)}"
    if "size_buckets" not in sr.raw:
        return DEFAULT_SIZE_BUCKETS if max_configurations > 1 else ()
    raw = sr.raw["size_buckets"]
    if raw is None or raw == []:
        return ()
    if isinstance(raw, int) and not isinstance(raw, bool):
        if not 1 <= raw <= 20:
            raise FieldValueError(f"{where}: expected a number of buckets from 1 to 20, got {raw}")
        return tuple(100.0 * i / raw for i in range(1, raw))
    if not isinstance(raw, list):
        raise FieldTypeError(f"{where}: expected a list of prompt-length percentiles such as [50, 90], a number of buckets, or [], got {type_name(raw)}")
    out = []
    for i, v in enumerate(raw):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise FieldTypeError(f"{where}[{i}]: expected a percentile, got {type_name(v)}")
        if not 0 < v < 100:
            raise FieldValueError(f"{where}[{i}]: expected a percentile > 0 and < 100, got {v:g}")
        if out and v <= out[-1]:
            raise FieldValueError(f"{where}[{i}]: percentiles must increase ({v:g} after {out[-1]:g})")
        out.append(float(v))
    return tuple(out)
