"""Rendering: a Plan, a comparison, a sweep or an Explanation as plain data (dicts), then as a
terminal table, JSON, CSV or Markdown (written here: no `tabulate`, no pandas on the solve path).

`plan_to_dict` and `explanation_to_dict` are the JSON contract; the table and CSV renderings are
built from the same dicts, so the three formats never disagree. Output is deterministic: the same
input gives byte-identical JSON (keys in a fixed order, floats rounded to fixed digits).
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

from .errors import reason_lines
from .optimize import Deployment, Plan, launch_max_num_seqs
from .tables import RATE, Column, cell, csv_table, markdown_table, render_rows, text_table
from .tables import to_json as _to_json
from .units import GIB

if TYPE_CHECKING:  # `sizer solve` renders without loading explain (or compare, below)
    from .explain import Explanation

_MONEY_DIGITS = 6
_TIME_DIGITS = 6


def _r(x: float, digits: int = 6) -> float:
    return float(round(float(x), digits))


def _r_opt(x: float | None, digits: int = 6) -> float | None:
    return None if x is None else _r(x, digits)


# ---------------------------------------------------------------------------------------------
# plan
# ---------------------------------------------------------------------------------------------


def _admission_fields(e) -> dict[str, Any]:
    """The engine's own figures and the three admission bounds, side by side (residency.py)."""
    m, a = e.memory, getattr(e, "admission", None)
    out: dict[str, Any] = {
        "engine": m.engine,
        "engine_version": m.engine_version,
        "engine_gpu_blocks": m.engine_gpu_blocks,
        "engine_kv_tokens": m.engine_kv_tokens,
        "activation_bytes_per_gpu": int(round(m.activation_bytes_per_gpu)),
        "runtime_overhead_bytes_per_gpu": int(round(m.runtime_overhead_bytes_per_gpu)),
    }
    if a is not None:
        out.update(
            {
                "admission": a.policy,
                "max_concurrency_percentile": a.max_concurrency_percentile,
                "max_concurrency_declared": a.max_concurrency_declared,
                "max_concurrency_growth": a.max_concurrency_growth,
                "overflow_probability": a.overflow_probability,
                "mean_running_context_tokens": _r(a.mean_running_context_tokens, 3),
                "expected_kv_bytes_per_sequence_per_gpu": int(round(a.mean_running_kv_bytes_per_gpu)),
                "shared_prefix_saved_bytes_per_gpu": int(round(a.shared_prefix_saved_bytes_per_gpu)),
                "binding_tenant": a.binding_tenant,
            }
        )
    return out


def deployment_to_dict(d: Deployment, with_cost_per_token: bool = True, as_of=None) -> dict[str, Any]:
    e = d.candidate
    m = e.memory
    concurrency = getattr(e, "max_concurrency", None)
    out: dict[str, Any] = {
        "device": e.config.device,
        "tp": e.config.tp,
        "pp": e.config.pp,
        "kv_dtype": e.config.kv_dtype,
        "weight_dtype": e.config.weight_dtype,
        "size_range": d.size_range,
        "size_share": _r(d.size_share, 6),
        "replicas": d.replicas,
        "reserved_replicas": d.reserved_replicas,
        "on_demand_peak_replicas": d.on_demand_peak_replicas,
        "gpus": d.gpus,
        "max_concurrency": int(concurrency if concurrency is not None else m.max_concurrency),
        "max_num_seqs": int(launch_max_num_seqs(e)),  # the launch line's cap: the table's "max seqs"
        "kv_bytes_per_token": int(round(m.kv_bytes_per_token)),
        "kv_bytes_per_token_per_gpu": int(round(m.kv_bytes_per_token_per_gpu)),
        "kv_pool_bytes_per_gpu": int(round(m.kv_pool_bytes_per_gpu)),
        "kv_tokens": m.kv_tokens,
        "weights_bytes_per_gpu": int(round(m.weights_bytes_per_gpu)),
        **_admission_fields(e),
        "throughput_tokens_per_s": _r(d.throughput_tokens_per_s, 3),
        "max_rate_rps_per_replica": _r(e.max_rate_rps, 6),
        "load_rps_per_replica": _r(d.load_rps_per_replica, 6),
        "ttft_p99_s": _r(d.ttft_p99_s, _TIME_DIGITS),
        "tpot_p99_s": _r(d.tpot_p99_s, _TIME_DIGITS),
        "ttft_p99_s_model": _r(d.ttft_p99_s if d.ttft_p99_s_model is None else d.ttft_p99_s_model, _TIME_DIGITS),
        "tpot_p99_s_model": _r(d.tpot_p99_s if d.tpot_p99_s_model is None else d.tpot_p99_s_model, _TIME_DIGITS),
        "kv_headroom_fraction": _r(d.kv_headroom_fraction, 6),
        "binding": e.binding,
        "cost_usd_per_hour": _r(d.cost_usd_per_hour, _MONEY_DIGITS),
        "cost_usd_per_day": _r(d.cost_usd_per_day, _MONEY_DIGITS),
        "usd_per_gpu_hour": e.price.usd_per_gpu_hour,
        "provider": e.price.provider,
        "pricing": e.price.kind,
        "price_plan": e.price.plan,
        "price_date": e.price.price_date,
        "price_source": e.price.source,
        "price_source_kind": e.price.source_kind,
        "price_age_days": None if as_of is None else e.price.age_days(as_of),
        "instance": e.price.instance,
        "instance_gpus": int(d.instance_gpus),
        "instance_note": d.instance_note,
        "node_gpus": e.config.node_gpus or None,
        "reserved_usd_per_gpu_hour": d.reserved_price.usd_per_gpu_hour if d.reserved_price else None,
        "reserved_provider": d.reserved_price.provider if d.reserved_price else None,
        "reserved_pricing": d.reserved_price.kind if d.reserved_price else None,
        "reserved_price_source_kind": d.reserved_price.source_kind if d.reserved_price else None,
        "reserved_price_age_days": d.reserved_price.age_days(as_of) if d.reserved_price and as_of is not None else None,
        "hourly_replicas": list(d.hourly_replicas) if len(d.hourly_replicas) > 1 else None,
        **_factors_fields(e),
        "launch_command": d.launch_command,
    }
    if with_cost_per_token:
        out["cost_usd_per_million_tokens"] = _r(d.cost_usd_per_million_tokens, _MONEY_DIGITS)
    if d.evidence is not None:
        out.update(deployment_evidence_fields(d.evidence))
    return out


def deployment_evidence_fields(x) -> dict[str, Any]:
    """A deployment's evidence (sizer/evidence.py DeploymentEvidence) as the JSON contract's keys."""
    return {
        "evidence": x.evidence.as_dict(),
        "max_rate_rps_per_replica_p10": _r_opt(x.max_rate_rps_p10, 6),
        "max_rate_rps_per_replica_p90": _r_opt(x.max_rate_rps_p90, 6),
        "max_rate_rps_per_replica_at_p50": _r_opt(x.max_rate_rps_at_p50, 6),
        "cost_usd_per_hour_p10": _r_opt(x.cost_usd_per_hour_p10, _MONEY_DIGITS),
        "cost_usd_per_hour_p90": _r_opt(x.cost_usd_per_hour_p90, _MONEY_DIGITS),
        "confidence_factors": {"tpot": _r(x.confidence_factors[0], 6), "ttft": _r(x.confidence_factors[1], 6)},
        "confidence_tail_rows": {"tpot": _r_opt(x.confidence_tail_rows[0], 2), "ttft": _r_opt(x.confidence_tail_rows[1], 2)},
    }


def _with_evidence_cells(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Deployment rows with the table's two evidence cells (not JSON keys): the band of the
    largest rate, and where the device's speed comes from (evidence.Evidence.short)."""
    out = []
    for r in rows:
        e = r.get("evidence")
        if e is None:
            out.append(r)
            continue
        lo, hi = r["max_rate_rps_per_replica_p10"], r["max_rate_rps_per_replica_p90"]
        out.append({**r, "max_rate_band": None if lo is None else f"{cell(lo, RATE)}-{cell(hi, RATE)}", "evidence_short": evidence_short(e)})
    return out


def evidence_short(e: dict[str, Any] | None) -> str | None:
    """The table's evidence cell: the scoring rows of the device under the engine ('79 rows'), of
    the device under other engines ('6 rows, other engine'), or 'datasheet' (global factors); on a
    measured device none of whose fit rows runs a model of this kind, ', other models' after it
    (its factors for this kind are composed, not fitted: evidence.architecture_fit_rows)."""
    if e is None:
        return None

    def rows_(n: int) -> str:
        return f"{n} row" + ("" if n == 1 else "s")

    if e["basis"] != "measured":
        return "datasheet"
    cell = rows_(e["device_engine_rows"]) if e["device_engine_rows"] else f"{rows_(e['device_rows'])}, other engine"
    cell += ", other models" if e.get("device_architecture_fit_rows") == 0 else ""
    cell += ", longer prompts" if e.get("prompts_beyond_measured") else ""
    return cell + (", larger batch" if e.get("running_beyond_measured") else "")


def extrapolation_lines(rows: list[dict[str, Any]], engine: str) -> list[str]:
    """One line per deployment whose p99 prompt is longer than any measured on its device
    (evidence.measured_prompt_tokens): its prefill and TTFT are the fitted factors carried past
    the lengths they were fitted on; and one per deployment whose replicas run a larger batch than
    any measured there (evidence.measured_running_sequences): its step, past the batches."""
    from .engines import engine_policy

    label = engine_policy(engine).label

    def times(ratio: float) -> str:  # 1.02x, not 1.0x: just past the measured is still past it
        return f"{ratio:.2f}x" if ratio < 1.095 else f"{ratio:.1f}x"

    def where(d: dict[str, Any], scope: str) -> str:
        return f"{d['device']} under {label}" if scope == "device+engine" else f"{d['device']} (under another engine; none under {label})"

    out = []
    for d in rows:
        e = d.get("evidence") or {}
        ratio = e.get("prompts_beyond_measured")
        if ratio:
            out.append(
                f"evidence  {d['device']} tp={d['tp']}: the p99 prompt, {e['prompt_tokens_p99']:,.0f} tokens, is {times(ratio)} the longest measured on "
                f"{where(d, e['measured_prompt_scope'])}, {e['measured_prompt_tokens_max']:,.0f}: its prefill and TTFT extrapolate the fitted factors past the lengths they were fitted on"
            )
        ratio = e.get("running_beyond_measured")
        if ratio:
            out.append(
                f"evidence  {d['device']} tp={d['tp']}: a replica runs {e['running_sequences_mean']:,.0f} sequences at once at the peak (mean), {times(ratio)} the largest batch measured on one replica of "
                f"{where(d, e['measured_running_scope'])}, {e['measured_running_sequences_max']:,.0f}: its step time extrapolates the fitted factors past the batches they were fitted on"
            )
    return out


def plan_assessment_fields(plan: Plan) -> dict[str, Any]:
    """The plan's cost band, confidence and p50 sizing (sizer/evidence.py PlanAssessment)."""
    a = plan.assessment
    if a is None:
        return {}

    def resized(x) -> dict[str, Any] | None:
        if x is None:
            return None
        return {"cost_usd_per_hour": _r_opt(x.cost_usd_per_hour, _MONEY_DIGITS), "gpus": x.gpus, "reason": x.reason}

    gpus = max((h.gpus for h in plan.schedule), default=sum(d.gpus for d in plan.deployments))
    out: dict[str, Any] = {
        "confidence": a.confidence,
        "cost_usd_per_hour_p10": _r_opt(a.cost_p10.cost_usd_per_hour, _MONEY_DIGITS),
        "cost_usd_per_hour_p90": _r_opt(a.cost_p90.cost_usd_per_hour, _MONEY_DIGITS),
        "gpus_p10": a.cost_p10.gpus,
        "gpus_p90": a.cost_p90.gpus,
        "cost_band_note": a.cost_p90.reason or a.cost_p10.reason,
        "confidence_cost": None,
        "at_p50": None,
        "error_model": {"scoring_rows": a.residual_rows, "source": a.residual_source, "band": "p10-p90 of log(measured / predicted) on held-out scoring rows"},
    }
    if a.baseline is not None:
        b = a.baseline
        out["confidence_cost"] = {
            "baseline_confidence": 0.5,
            "baseline_gpus": b.gpus,
            "baseline_cost_usd_per_hour": _r_opt(b.cost_usd_per_hour, _MONEY_DIGITS),
            "extra_gpus": None if b.gpus is None else gpus - b.gpus,
            "extra_cost_usd_per_hour": None if b.cost_usd_per_hour is None else _r(plan.cost_usd_per_hour - b.cost_usd_per_hour, _MONEY_DIGITS),
            "reason": b.reason,
        }
    if a.at_p50 is not None:
        p = resized(a.at_p50)
        p["p99_extra_gpus_fraction"] = None if not a.at_p50.gpus else _r(gpus / a.at_p50.gpus - 1, 6)
        out["at_p50"] = p
    return out


def _factors_fields(e) -> dict[str, Any]:
    """Which release's fitted efficiency factors a deployment's speed rests on
    (efficiency.EfficiencyTable.basis): `factors_release` (the release used: the deployment's own
    when fit rows of it exist on that device and engine, else the nearest measured there),
    `factors_release_requested` (the engine release of the launch line), `factors_release_rows`
    (fit rows of that device, engine and release) and `factors_entry` (the most specific entry
    giving the compute fraction, with its fit rows)."""
    basis = getattr(e, "factors_basis", None)
    if not basis:
        return {"factors_release": None, "factors_release_requested": None, "factors_release_rows": 0, "factors_entry": None}
    entry = ", ".join(f"{k}={v}" for k, v in basis["entry"].items()) or "default"
    return {
        "factors_release": basis["release"] or None,
        "factors_release_requested": basis["requested_release"] or None,
        "factors_release_rows": basis["release_rows"],
        "factors_entry": f"{entry} ({basis['entry_rows']} fit rows)",
    }


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    w = plan.workload
    model = w.model
    c = w.constraints
    gpus = max((h.gpus for h in plan.schedule), default=sum(d.gpus for d in plan.deployments))
    out: dict[str, Any] = {
        "status": plan.status,
        "workload": {
            "name": w.name,
            "path": w.path,
            "model": model.name,
            "model_params": int(round(model.total_params())),
            "engine": w.engine,
            "requests_per_s": w.traffic.requests_per_s,
            "profile_requests_per_s": list(w.traffic.profile_rps) or None,
            "mean_prompt_tokens": _r(w.traffic.prompt_tokens.mean, 3),
            "mean_output_tokens": _r(w.traffic.output_tokens.mean, 3),
            "context_percentile": w.memory.context_percentile,
            "context_tokens": w.context_tokens,
            "max_model_len": w.max_model_len,
            "max_model_len_basis": w.max_model_len_basis,
            "refused_fraction": _r(w.refused_fraction, 8),
            "trace": w.traffic.trace.to_dict() if w.traffic.trace is not None else None,
            "output_tokens_per_s": _r(plan.output_tokens_per_s, 3),
            "slo": {"ttft_s": dict(w.slo.ttft_s), "tpot_s": dict(w.slo.tpot_s)},
            "pricing": {
                "provider": plan.provider,
                "providers": list(w.search.providers) if w.search.providers is not None else None,
                "exclude_providers": list(w.search.exclude_providers),
                "min_source_kind": w.search.min_source_kind,
                "files": list(w.search.price_files),
                "kind": plan.pricing_kind,
                "reserved_kind": w.search.reserved_pricing,
            },
            "max_configurations": w.search.max_configurations,
            "size_buckets": list(w.search.size_buckets),
            "constraints": {
                "available_gpus": dict(c.available_gpus),
                "budget_usd_per_hour": c.budget_usd_per_hour,
                "budget_usd_per_month": c.budget_usd_per_month,
                "min_replicas": c.min_replicas,
                "redundancy": c.redundancy,
                "allow_cross_node": c.allow_cross_node,
                "instance_gpus": dict(c.instance_gpus),
            },
        },
        "cost_usd_per_hour": _r(plan.cost_usd_per_hour, _MONEY_DIGITS),
        "cost_usd_per_million_tokens": _r(plan.cost_usd_per_million_tokens, _MONEY_DIGITS),
        "cost_usd_per_day": _r(plan.cost_usd_per_day, _MONEY_DIGITS),
        "cost_usd_per_month": _r(plan.cost_usd_per_month, _MONEY_DIGITS),
        "peak_cost_usd_per_hour": _r(plan.peak_cost_usd_per_hour, _MONEY_DIGITS),
        "gpus": gpus,
        "reserved_replicas": plan.reserved_replicas,
        "on_demand_peak_replicas": plan.on_demand_peak_replicas,
        "mix_saving_vs_single_fraction": _r_opt(plan.mix_saving_vs_single_fraction, 6),
        "best_single_cost_usd_per_hour": _r_opt(plan.best_single_cost_usd_per_hour, _MONEY_DIGITS),
        "binding": plan.binding,
        "why": plan.why,
        "as_of": plan.as_of.isoformat() if plan.as_of else None,
        "break_even_usd_per_gpu_hour": _r_opt(plan.break_even_usd_per_gpu_hour, _MONEY_DIGITS),
        "break_even_device": plan.break_even_device,
        "break_even_reserved_usd_per_gpu_hour": _r_opt(plan.break_even_reserved_usd_per_gpu_hour, _MONEY_DIGITS),
        "price_warnings": list(plan.price_warnings),
        "first_party_plan": _first_party_dict(plan),
        "deployments": [deployment_to_dict(d, as_of=plan.as_of) for d in plan.deployments],
        "alternatives": [deployment_to_dict(d, as_of=plan.as_of) for d in plan.alternatives],
        "rejected": [{"device": r.device, "stage": r.stage, "reason": r.reason} for r in plan.rejected],
        "constraints": [
            {"name": r.name, "value": r.value, "binding": r.binding, "cost_without_usd_per_hour": _r_opt(r.cost_without_usd_per_hour, _MONEY_DIGITS), "note": r.note}
            for r in plan.constraints
        ],
        "instances": [
            {
                "device": i.device,
                "provider": i.provider,
                "pricing": i.kind,
                "instance_gpus": i.instance_gpus,
                "usd_per_instance_hour": _r(i.usd_per_instance_hour, _MONEY_DIGITS),
                "instances": i.instances,
                "idle_gpus": i.idle_gpus,
                "idle_cost_usd_per_hour": _r(i.idle_cost_usd_per_hour, _MONEY_DIGITS),
            }
            for i in plan.instances
        ],
        "size_ranges": [{"range": s.label, "share": _r(s.share, 6)} for s in plan.size_ranges],
        "schedule": [
            {
                "hour": h.hour,
                "requests_per_s": h.requests_per_s,
                "replicas": h.replicas,
                "reserved_replicas": h.reserved_replicas,
                "on_demand_replicas": h.on_demand_replicas,
                "gpus": h.gpus,
                "cost_usd": _r(h.cost_usd, _MONEY_DIGITS),
            }
            for h in plan.schedule
        ],
        "solver": plan.solver,
        "time_limit_s": plan.time_limit_s,
        "candidates_evaluated": plan.candidates_evaluated,
        "candidates_feasible": plan.candidates_feasible,
        "options_in_program": plan.options_in_program,
        "warnings": list(w.warnings),
    }
    out.update(plan_assessment_fields(plan))
    return out


def _first_party_dict(plan: Plan) -> dict[str, Any] | None:
    fp = plan.first_party
    if fp is None:
        return None
    if not fp.deployments:
        return {"feasible": False, "cost_usd_per_hour": None, "cost_usd_per_million_tokens": None, "deployments": []}
    return {
        "feasible": True,
        "cost_usd_per_hour": _r(fp.cost_usd_per_hour, _MONEY_DIGITS),
        "cost_usd_per_million_tokens": _r(fp.cost_usd_per_million_tokens, _MONEY_DIGITS),
        "deployments": [deployment_to_dict(d, as_of=plan.as_of) for d in fp.deployments],
    }


_SHORT_KIND = {"provider_page": "page", "secondary": "secondary", "marketplace": "market", "user": "user"}


def price_cell(d: dict[str, Any]) -> str:
    """The table's price column: where the price was read and its age, '!' when a buyer should
    check it first (not first-party, or older than 90 days)."""
    kind = d.get("price_source_kind")
    age = d.get("price_age_days")
    flag = kind not in ("provider_page", "user") or (age is not None and (age > 90 or age < 0))
    text = _SHORT_KIND.get(kind, str(kind)) + (f" {age}d" if age is not None else "")
    return text + (" !" if flag else "")


def to_json(data: Any) -> str:
    """Strict JSON (tables.to_json): a figure that is not finite (a latency unbounded at a
    saturated load) is null, as the README's contract says."""
    return _to_json(data)


_TABLE_COLUMNS: list[Column] = [
    ("device", "device", ""),
    ("tp", "tp", ""),
    ("pp", "pp", ""),
    ("kv_dtype", "kv", ""),
    ("weight_dtype", "weights", ""),
    ("replicas", "replicas", ""),
    ("gpus", "gpus", ""),
    ("usd_per_gpu_hour", "$/GPU-h", "{:.2f}"),
    ("provider", "provider", ""),
    ("instance_gpus", "GPUs/inst", ""),
    ("price_cell", "price", ""),
    ("cost_usd_per_hour", "$/hour", "{:,.2f}"),
    ("cost_usd_per_million_tokens", "$/M tok", "{:,.3f}"),
    ("load_rps_per_replica", "req/s/rep", RATE),
    ("max_rate_rps_per_replica", "max req/s/rep", RATE),
    ("ttft_p99_s", "TTFT p99 s", "{:.3f}"),
    ("tpot_p99_s", "TPOT p99 s", "{:.4f}"),
    ("max_num_seqs", "max seqs", ""),
    ("binding", "binds", ""),
]
# with evidence (sizer solve): the rows behind the device's speed, the 80 % band of the max rate
_EVIDENCE_COLUMNS: list[Column] = [
    ("max_rate_band", "p10-p90 req/s", ""),
    ("evidence_short", "evidence", ""),
]
_SIZE_COLUMN: Column = ("size_range", "prompts", "")
_RESERVED_COLUMNS: list[Column] = [
    ("reserved_replicas", "reserved", ""),
    ("on_demand_peak_replicas", "on-demand peak", ""),
    ("reserved_usd_per_gpu_hour", "reserved $/GPU-h", "{:.2f}"),
]


def _plan_columns(plan: Plan) -> list[Column]:
    cols = list(_TABLE_COLUMNS)
    if len(plan.size_ranges) > 1:
        cols.insert(5, _SIZE_COLUMN)
    if plan.reserved_replicas or plan.pricing_kind == "mixed" or plan.schedule:
        i = cols.index(("replicas", "replicas", "")) + 1
        cols[i:i] = _RESERVED_COLUMNS
    if plan.assessment is not None:
        cols += _EVIDENCE_COLUMNS
    return cols


_SCHEDULE_COLUMNS: list[Column] = [
    ("hour", "hour", ""),
    ("requests_per_s", "req/s", "{:g}"),
    ("replicas", "replicas", ""),
    ("reserved_replicas", "reserved", ""),
    ("on_demand_replicas", "on-demand", ""),
    ("gpus", "gpus", ""),
    ("cost_usd", "$", "{:,.2f}"),
]
_CONSTRAINT_COLUMNS: list[Column] = [
    ("name", "constraint", ""),
    ("value", "value", ""),
    ("binding", "binds", ""),
    ("cost_without_usd_per_hour", "$/hour without it", "{:,.2f}"),
    ("note", "note", ""),
]
_INSTANCE_COLUMNS: list[Column] = [
    ("device", "device", ""),
    ("provider", "provider", ""),
    ("pricing", "pricing", ""),
    ("instance_gpus", "GPUs/instance", ""),
    ("instances", "instances", ""),
    ("idle_gpus", "idle GPUs", ""),
    ("idle_cost_usd_per_hour", "idle $/hour", "{:,.2f}"),
]


def _plan_header(plan: Plan, data: dict[str, Any]) -> list[str]:
    w = data["workload"]
    model = plan.workload.model
    slo = ", ".join(
        [f"TTFT {k} <= {v:g} s" for k, v in w["slo"]["ttft_s"].items()] + [f"TPOT {k} <= {v:g} s" for k, v in w["slo"]["tpot_s"].items()]
    )
    moe = f", MoE {model.num_experts} experts top-{model.num_experts_per_tok}" if model.is_moe else ""
    lines = [
        f"workload  {w['name']} ({w['path']})",
        f"model     {model.name}{_as_given(plan.workload)}: {model.total_params() / 1e9:.1f}B params, {model.attention_kind}, {model.num_hidden_layers} layers{moe}",
    ]
    profile = plan.workload.traffic.profile_rps
    rate = f"{w['requests_per_s']:.4g} req/s"
    if profile:
        rate = f"daily profile {min(profile):.4g}-{max(profile):.4g} req/s (mean {sum(profile) / len(profile):.3g})"
    lines.append(
        f"traffic   {rate}, mean prompt {w['mean_prompt_tokens']:,.0f} / output {w['mean_output_tokens']:,.0f} tokens, "
        f"p{w['context_percentile']:g} context {w['context_tokens']:,} tokens; SLO {slo or 'none'}"
    )
    trace = plan.workload.traffic.trace
    if trace is not None:
        lines.append("trace     " + "\n          ".join(trace.describe()))
    lines.append(f"admits    {admission_line(plan.workload)}")
    pricing = w["pricing"]
    kind = pricing["kind"] + (f" ({pricing['reserved_kind']} base + on_demand by the hour)" if pricing["kind"] == "mixed" else "")
    who = "provider " + (", ".join(pricing["providers"]) if pricing["providers"] else "any")
    if pricing["exclude_providers"]:
        who += f" less {', '.join(pricing['exclude_providers'])}"
    sources = {"provider_page": "first-party prices only", "user": "your own prices only", "secondary": "first-party and secondary prices",
               "marketplace": "every price"}[pricing["min_source_kind"]]
    files = f"; your prices: {', '.join(pricing['files'])}" if pricing["files"] else ""
    lines.append(f"pricing   {kind}, {who}, {sources} (min_source_kind {pricing['min_source_kind']}){files}; ages to {data['as_of']}")
    given = [f"{r.name.split('.', 1)[1]} {r.value}" for r in plan.constraints]
    if given:
        lines.append(f"limits    {'; '.join(given)}")
    return lines


def _as_given(w) -> str:
    """' (as <id>)' when the workload named the model otherwise than the catalog does."""
    spec = str(w.model_spec)
    return "" if spec.lower() in (w.model.name.lower(), (w.model.hf_id or "").lower()) and spec.lower() == w.model.name.lower() else f" (as {spec})"


def admission_line(w) -> str:
    """What the launch line's longest request admits, in words: every request, or all but a share
    (the workload's engine refuses the longer ones); and whence."""
    from .engines import engine_policy

    policy = engine_policy(w.engine)
    refused = w.refused_fraction
    head = "every request" if refused <= 0 else f"all but {refused * 100:.2g} % of requests ({policy.label} refuses longer ones)"
    flag = policy.length_flag
    return f"{head}: prompt + output up to {w.max_model_len:,} tokens ({flag}), {w.max_model_len_basis}"


def _plan_summary(plan: Plan, data: dict[str, Any]) -> list[str]:
    status = plan.solver if plan.status == "optimal" else f"{plan.solver}, {plan.status}: time limit {plan.time_limit_s:g} s reached before the proof of optimality"
    mean = " (mean over the day)" if plan.schedule else ""
    lines = [
        f"PLAN      ${data['cost_usd_per_hour']:,.2f}/hour{mean}   ${data['cost_usd_per_million_tokens']:,.3f} per million output tokens   "
        f"{data['gpus']} GPUs   ({plan.candidates_feasible} of {plan.candidates_evaluated} candidates feasible; {status})"
    ]
    if plan.schedule or plan.reserved_replicas:
        lines.append(
            f"DAY       ${data['cost_usd_per_day']:,.2f}/day   ${data['cost_usd_per_month']:,.0f}/month   reserved base {plan.reserved_replicas} replica(s), "
            f"on-demand peak {plan.on_demand_peak_replicas}   dearest hour ${data['peak_cost_usd_per_hour']:,.2f}"
        )
    if plan.workload.search.max_configurations > 1:
        saving = data["mix_saving_vs_single_fraction"]
        if saving is None:
            lines.append("MIX       no single configuration satisfies the constraints on its own")
        else:
            lines.append(
                f"MIX       {saving * 100:.1f}% cheaper than the best single configuration (${data['best_single_cost_usd_per_hour']:,.2f}/hour)"
            )
    lines += _assessment_lines(plan, data)
    return lines


def _assessment_lines(plan: Plan, data: dict[str, Any]) -> list[str]:
    """BAND, CONFIDENCE and SIZING: how sure the plan is, what a confidence costs, and which
    sizing is the conservative one (sizer/evidence.py)."""
    if plan.assessment is None:
        return []
    lines = []
    lo, hi = data["cost_usd_per_hour_p10"], data["cost_usd_per_hour_p90"]
    n = data["error_model"]["scoring_rows"]
    if n:
        dear = f"${hi:,.2f}/hour ({data['gpus_p90']} GPUs)" if hi is not None else f"no plan ({data['cost_band_note']})"
        cheap = f"${lo:,.2f}/hour ({data['gpus_p10']} GPUs)" if lo is not None else "-"
        lines.append(f"BAND      80 % band of the cost {cheap} to {dear}: the model's p10-p90 error on {n:,} held-out measured rows; per deployment: p10-p90 req/s")
    else:
        lines.append("BAND      none: the catalog has no scoring measurement rows to take the model's error from")
    c = data["confidence_cost"]
    if c is not None:
        if c["baseline_gpus"] is None:
            lines.append(f"CONFIDENCE {data['confidence']:g}: no plan at 0.5 to compare ({c['reason']})")
        else:
            lines.append(
                f"CONFIDENCE {data['confidence']:g}: {c['extra_gpus']:+d} GPUs, {'+' if c['extra_cost_usd_per_hour'] >= 0 else '-'}${abs(c['extra_cost_usd_per_hour']):,.2f}/h "
                f"against the 0.5 plan ({c['baseline_gpus']} GPUs, ${c['baseline_cost_usd_per_hour']:,.2f}/h): SLOs sized to hold at the "
                f"{data['confidence']:g} quantile of the model's error"
            )
    if data.get("confidence", 0.5) != 0.5:
        lines.append(_model_estimate_line(plan, data))
        thin = _thin_tails(data)
        if thin:
            lines.append(thin)
    p = data["at_p50"]
    if p is not None and p["gpus"]:
        pct = "/".join(sorted({k for k, _ in (*plan.workload.slo.ttft_s, *plan.workload.slo.tpot_s)}))
        head = f"SIZING    on {pct} TTFT and TPOT under Poisson arrivals, the conservative figure"
        if p["gpus"] == data["gpus"] and p["cost_usd_per_hour"] == data["cost_usd_per_hour"]:
            lines.append(f"{head}; with the same bounds on the median the plan is the same (what binds is not the latency tail)")
        else:
            lines.append(
                f"{head}: with the same bounds on the median (as sizers on means at a fixed batch do, NVIDIA's aiconfigurator among them) "
                f"{p['gpus']} GPUs, ${p['cost_usd_per_hour']:,.2f}/h; this plan takes {p['p99_extra_gpus_fraction'] * 100:+.0f} % GPUs for the tail"
            )
    return lines


def _thin_tails(data: dict[str, Any]) -> str | None:
    """Under CONFIDENCE: the deployments whose factor at the confidence rests on fewer than
    evidence.TAIL_ROWS_MIN rows' worth of its error distribution's tail (an extrapolation)."""
    from .evidence import TAIL_ROWS_MIN

    parts = []
    for d in data["deployments"]:
        tail, factors = d.get("confidence_tail_rows") or {}, d.get("confidence_factors") or {}
        for metric, label in (("ttft", "TTFT"), ("tpot", "step")):
            n = tail.get(metric)
            if n is not None and n < TAIL_ROWS_MIN:
                parts.append(f"{d['device']} tp={d['tp']} {label} x{factors[metric]:.2f} on {n:.1f}")
    if not parts:
        return None
    return (
        f"          thin tail: at {data['confidence']:g} these factors rest on fewer than {TAIL_ROWS_MIN:g} rows' worth of the measured error "
        f"beyond them (JSON confidence_tail_rows), an extrapolation from the most extreme rows: " + "; ".join(parts)
    )


def _model_estimate_line(plan: Plan, data: dict[str, Any]) -> str:
    """At a confidence other than 0.5: the table's p99s are those the pools were sized at; the
    model's own estimates beside them, and whether they break a bound (below 0.5 they may: such a
    plan bets that the model is pessimistic)."""
    slo = plan.workload.slo
    bound = {"TTFT": dict(slo.ttft_s).get("p99"), "TPOT": dict(slo.tpot_s).get("p99")}
    parts, over = [], []
    for d in data["deployments"]:
        figures = {"TTFT": d["ttft_p99_s_model"], "TPOT": d["tpot_p99_s_model"]}  # None: unbounded (a queue that never drains)
        shown = {m: "unbounded" if v is None else f"{v:.3f} s" for m, v in figures.items()}
        parts.append(f"{d['device']} tp={d['tp']}: " + ", ".join(f"{m} p99 {t}" for m, t in shown.items()))
        over += [f"{d['device']} {m} {shown[m]} > {bound[m]:g} s" for m, v in figures.items() if bound[m] is not None and (v is None or v > bound[m] * (1 + 1e-9))]
    line = f"          the table's TTFT/TPOT p99 are at confidence {data['confidence']:g}; the model's own estimates (JSON *_p99_s_model): " + "; ".join(parts)
    if over:
        line += f". Over the SLO by the model's own estimate: {', '.join(over)} (a plan below 0.5 bets that the model is pessimistic)"
    return line


def _price_lines(plan: Plan, data: dict[str, Any]) -> list[str]:
    """Under PLAN: the break-even price, the prices to check first, the plan on first-party
    prices when it differs, and instances larger than the cheapest offer."""
    lines = []
    if data["break_even_usd_per_gpu_hour"] is not None:
        main = data["deployments"][0]
        reserved = data["break_even_reserved_usd_per_gpu_hour"]
        extra = f" on demand (${reserved:,.2f} reserved)" if reserved is not None else ""
        lines.append(f"BREAK-EVEN {main['device']} wins while it costs under ${data['break_even_usd_per_gpu_hour']:,.2f}/GPU-h{extra}; then {data['break_even_device']}")
    for text in data["price_warnings"]:
        lines.append(f"CHECK     {text}")
    fp = data["first_party_plan"]
    if fp is not None:
        if not fp["feasible"]:
            lines.append("FIRST-PARTY no plan on first-party prices alone")
        else:
            parts = ", ".join(f"{d['replicas']} x {d['device']} tp={d['tp']} pp={d['pp']} ({d['provider']} ${d['usd_per_gpu_hour']:.2f}/GPU-h)" for d in fp["deployments"])
            lines.append(f"FIRST-PARTY ${fp['cost_usd_per_hour']:,.2f}/hour  ${fp['cost_usd_per_million_tokens']:,.3f}/M tok: {parts}")
    return lines


def _with_price_cells(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "price_cell": price_cell(r)} for r in rows]


def plan_table(plan: Plan) -> str:
    data = plan_to_dict(plan)
    out = io.StringIO()
    out.write("\n".join(_plan_header(plan, data)) + "\n\n")
    out.write("\n".join(_plan_summary(plan, data)) + "\n")
    for line in _price_lines(plan, data):
        out.write(line + "\n")
    out.write(text_table(_with_evidence_cells(_with_price_cells(data["deployments"])), _plan_columns(plan)) + "\n")
    out.write(f"why       {plan.why}\n")
    for line in extrapolation_lines(data["deployments"], plan.workload.engine):
        out.write(line + "\n")
    for d in data["deployments"]:
        if d["instance_note"]:
            out.write(f"instance  {d['instance_note']}\n")
    for d in data["deployments"]:
        out.write(f"launch    {d['launch_command']}\n")
    if data["constraints"]:
        out.write("\nCONSTRAINTS\n" + text_table(data["constraints"], _CONSTRAINT_COLUMNS))
    if data["instances"]:
        out.write("\nINSTANCES (whole instances rented)\n" + text_table(data["instances"], _INSTANCE_COLUMNS))
    if data["schedule"]:
        out.write("\nSCHEDULE\n" + text_table(data["schedule"], _SCHEDULE_COLUMNS))
    if data["alternatives"]:
        out.write("\nBEST ON OTHER DEVICES\n")
        out.write(text_table(_with_evidence_cells(_with_price_cells(data["alternatives"])), _plan_columns(plan)))
        # an alternative's instance shape under the table that shows it, not beside the plan's launch line
        out.write("".join(f"instance  {d['instance_note']}\n" for d in data["alternatives"] if d["instance_note"]))
    if data["rejected"]:
        out.write("\nREJECTED\n")
        out.write("".join(line + "\n" for line in reason_lines((r["device"], r["reason"]) for r in data["rejected"])))
    return out.getvalue()


def plan_markdown(plan: Plan) -> str:
    data = plan_to_dict(plan)
    out = io.StringIO()
    out.write(f"# sizer plan: {data['workload']['name']}\n\n")
    for line in _plan_header(plan, data) + [""] + _plan_summary(plan, data) + _price_lines(plan, data):
        out.write(f"    {line}\n" if line else "\n")
    out.write("\n## Plan\n\n" + markdown_table(_with_evidence_cells(_with_price_cells(data["deployments"])), _plan_columns(plan)))
    out.write(f"\n{plan.why}\n")
    for line in extrapolation_lines(data["deployments"], plan.workload.engine):
        out.write(f"\n{line.removeprefix('evidence  ')}\n")
    out.write("\n```\n" + "\n".join(d["launch_command"] for d in data["deployments"]) + "\n```\n")
    for title, key, cols in (
        ("Constraints", "constraints", _CONSTRAINT_COLUMNS),
        ("Whole instances", "instances", _INSTANCE_COLUMNS),
        ("Schedule", "schedule", _SCHEDULE_COLUMNS),
        ("Best on other devices", "alternatives", _plan_columns(plan)),
    ):
        if data[key]:
            out.write(f"\n## {title}\n\n" + markdown_table(_with_evidence_cells(_with_price_cells(data[key])) if key == "alternatives" else data[key], cols))
    if data["rejected"]:
        out.write("\n## Rejected\n\n" + markdown_table(data["rejected"], [("device", "device", ""), ("reason", "reason", "")]))
    return out.getvalue()


def plan_csv(plan: Plan) -> str:
    data = plan_to_dict(plan)
    rows = [{"role": "plan", **d} for d in data["deployments"]]
    rows += [{"role": "alternative", **d} for d in data["alternatives"]]
    rows += [{"role": "rejected", "device": r["device"], "reason": r["reason"]} for r in data["rejected"]]
    keys = ["role", *[k for k in data["deployments"][0] if k != "launch_command"], "reason", "launch_command"]
    return csv_table(rows, keys)


def render_plan(plan: Plan, fmt: str) -> str:
    if fmt == "json":
        return to_json(plan_to_dict(plan))
    if fmt == "csv":
        return plan_csv(plan)
    if fmt == "markdown":
        return plan_markdown(plan)
    return plan_table(plan)


# ---------------------------------------------------------------------------------------------
# explain
# ---------------------------------------------------------------------------------------------


def explanation_to_dict(x: Explanation) -> dict[str, Any]:
    m = x.memory
    a = x.admission
    return {
        "model": x.model.name,
        "device": x.gpu.name,
        "tp": x.tp,
        "pp": x.pp,
        "kv_dtype": x.kv_dtype,
        "weight_dtype": x.weight_dtype,
        "engine": x.engine,
        "engine_version": m.engine_version,
        "binding_stage": m.stage,
        "usable_memory_bytes": int(round(m.usable_memory_bytes)),
        m.memory_fraction_name: m.memory_fraction,
        "budget_bytes": int(round(m.budget_bytes)),
        "budget_rule": m.budget_rule,
        "weights_bytes_per_gpu": int(round(m.weights_bytes_per_gpu)),
        "runtime_buffer_bytes_per_gpu": int(round(m.runtime_buffer_bytes_per_gpu)),
        "activation_bytes_per_gpu": int(round(m.activation_bytes_per_gpu)),
        "runtime_overhead_bytes_per_gpu": int(round(m.runtime_overhead_bytes_per_gpu)),
        "kv_pool_bytes_per_gpu": int(round(m.kv_pool_bytes_per_gpu)),
        "kv_bytes_per_token": int(round(m.kv_bytes_per_token)),
        "kv_bytes_per_token_per_gpu": int(round(m.kv_bytes_per_token_per_gpu)),
        "block_size_tokens": m.block_size_tokens,
        "kv_blocks_per_gpu": m.kv_blocks_per_gpu,
        "kv_tokens": m.kv_tokens,
        "context_tokens": m.context_tokens,
        "max_model_len": m.max_model_len,
        "blocks_per_sequence": m.blocks_per_sequence,
        "max_concurrency": a.max_concurrency_percentile,
        "max_concurrency_declared": a.max_concurrency_declared,
        "shared_prefix_saved_bytes_per_gpu": int(round(a.shared_prefix_saved_bytes_per_gpu)),
        # what the engine itself logs at startup
        "gpu_blocks": m.engine_gpu_blocks,
        "kv_cache_tokens": m.engine_kv_tokens,
        "available_kv_cache_bytes": int(round(m.engine_available_kv_bytes)),
        "engine_max_concurrency": round(m.engine_max_concurrency, 4),
        "max_num_seqs": x.engine_defaults.max_num_seqs,
        "max_num_batched_tokens": x.engine_defaults.max_num_batched_tokens,
        "launch_command": x.launch_command,
        "warnings": list(x.warnings),
        "engine_log": list(x.engine_log),
        "cuda_graph_bytes_per_gpu": int(round(m.cuda_graph_bytes_per_gpu)),
        "memory_terms": [{"term": t, "how": h, "bytes": int(round(b))} for t, h, b in m.detail],
        "lines": [{"label": ln.label, "formula": ln.formula, "value": ln.value} for ln in x.lines],
    }


def explanation_table(x: Explanation) -> str:
    out = io.StringIO()
    out.write(
        f"{x.model.name}{f' ({x.model.hf_id})' if x.model.hf_id else ''} on {x.gpu.name}: tp={x.tp} pp={x.pp}, KV {x.kv_dtype}, weights {x.weight_dtype}, engine {x.engine}\n\n"
    )
    width = max(len(ln.label) for ln in x.lines)
    vwidth = max(len(ln.value) for ln in x.lines)
    for ln in x.lines:
        out.write(f"  {ln.label:<{width}}  {ln.value:>{vwidth}}   {ln.formula}\n")
    if not x.memory.fits:
        out.write(f"\n  does not fit: KV pool {x.memory.kv_pool_bytes_per_gpu / GIB:.2f} GiB, max concurrency {x.memory.max_concurrency}\n")
    if x.engine_log:
        out.write(f"\n{x.engine} {x.memory.engine_version} would print (sizer's figures in its own lines):\n")
        for line in x.engine_log:
            out.write(f"  {line}\n")
    out.write(f"\nlaunch  {x.launch_command}\n")
    return out.getvalue()


def render_explanation(x: Explanation, fmt: str) -> str:
    if fmt == "json":
        return to_json(explanation_to_dict(x))
    if fmt == "csv":
        d = explanation_to_dict(x)
        d.pop("lines")
        return csv_table([d], list(d))
    return explanation_table(x)


# ---------------------------------------------------------------------------------------------
# catalog listings
# ---------------------------------------------------------------------------------------------


_PRICE_LIST_COLUMNS: list[Column] = [
    ("device", "device", ""),
    ("provider", "provider", ""),
    ("kind", "kind", ""),
    ("usd_per_gpu_hour", "$/GPU-h", "{:.4g}"),
    ("instance_text", "instance", ""),
    ("gpus_text", "GPUs/inst", ""),
    ("source_kind", "source_kind", ""),
    ("price_date", "date", ""),
    ("age_text", "age", ""),
]


def price_rows_table(rows: list[dict[str, Any]], as_of) -> str:
    """`sizer catalog prices`: one line per offer; '1*' marks the safe rule (the source does not
    say how many GPUs the machine holds), '!' an age over 90 days."""
    shown = []
    for r in rows:
        age = r["age_days"]
        shown.append(
            {
                **r,
                "instance_text": r["instance"] or r["plan"] or "-",
                "gpus_text": f"{r['gpus_per_instance']}{'*' if r['gpus_per_instance_assumed'] else ''}",
                "age_text": "-" if age is None else f"{age}d{' !' if age > 90 else ''}",
            }
        )
    note = f"\n{len(rows)} offers; ages to {as_of.isoformat()}; 1* = the source does not state the machine size (one GPU assumed); ! = older than 90 days\n"
    return text_table(shown, _PRICE_LIST_COLUMNS) + note


def catalog_rows(catalog, what: str, as_of=None) -> list[dict[str, Any]]:
    """Rows for `sizer catalog gpus|prices|models` (every field of a price row; its age in days
    to `as_of`)."""
    if what == "gpus":
        return [
            {
                "name": g.name,
                "memory_gib": round(g.memory_bytes / GIB, 2),
                "usable_memory_gib": round(g.usable_memory_bytes / GIB, 2),
                "hbm_gb_per_s": round(g.hbm_bytes_per_s / 1e9, 1),
                "bf16_dense_tflops": round(g.dense_flops_per_s["bf16"] / 1e12, 1),
                "fp8_dense_tflops": None if g.dense_flops_per_s["fp8"] is None else round(g.dense_flops_per_s["fp8"] / 1e12, 1),
                "interconnect": g.interconnect,
                "link_gb_per_s": round(g.link_bytes_per_s / 1e9, 1),
                "bridge": None if g.bridge_bytes_per_s is None else f"{g.bridge_gpus} x {g.bridge_bytes_per_s / 1e9:g} GB/s",
                "gpus_per_node": g.gpus_per_node,
                "network_gb_per_s": None if g.network_bytes_per_s is None else round(g.network_bytes_per_s / 1e9, 1),
            }
            for g in catalog.gpus
        ]
    if what == "prices":
        return [
            {
                "device": p.device,
                "provider": p.provider,
                "kind": p.kind,
                "usd_per_gpu_hour": p.usd_per_gpu_hour,
                "usd_per_instance_hour": _r(p.usd_per_instance_hour, _MONEY_DIGITS),
                "plan": p.plan,
                "instance": p.instance,
                "gpus_per_instance": p.gpus_per_instance,
                "gpus_per_instance_assumed": p.gpus_per_instance_assumed,
                "region": p.region,
                "source_kind": p.source_kind,
                "price_date": p.price_date,
                "age_days": None if as_of is None else p.age_days(as_of),
                "source": p.source,
                "quote": p.quote,
                "notes": p.notes,
                "file": p.origin,
            }
            for p in catalog.prices
        ]
    rows = []
    for entry in catalog.models:
        from .catalog import load_model_entry

        m = load_model_entry(entry.path)
        rows.append(
            {
                "name": m.name,
                "hf_id": m.hf_id,
                "params_b": round(m.total_params() / 1e9, 2),
                "active_params_b": round(m.active_params_per_token() / 1e9, 2),
                "attention": m.attention_kind,
                "layers": m.num_hidden_layers,
                "weights": m.native_weight_dtype,
                "max_position_embeddings": m.max_position_embeddings,
                "max_context_tokens": m.max_context_tokens,  # as rope_scaling scales it: what vLLM serves
            }
        )
    return rows


_CATALOG_COLUMNS: dict[str, list[Column]] = {
    "gpus": [
        ("name", "name", ""),
        ("memory_gib", "memory GiB", "{:g}"),
        ("usable_memory_gib", "usable GiB", "{:.2f}"),
        ("hbm_gb_per_s", "HBM GB/s", "{:,.0f}"),
        ("bf16_dense_tflops", "bf16 TFLOPS", "{:,.1f}"),
        ("fp8_dense_tflops", "fp8 TFLOPS", "{:,.1f}"),
        ("interconnect", "interconnect", ""),
        ("link_gb_per_s", "link GB/s", "{:,.0f}"),
        ("bridge", "bridge", ""),
        ("gpus_per_node", "GPUs/node", ""),
        ("network_gb_per_s", "network GB/s", "{:,.0f}"),
    ],
    "prices": [
        ("device", "device", ""),
        ("provider", "provider", ""),
        ("kind", "kind", ""),
        ("usd_per_gpu_hour", "$/GPU-h", "{:.2f}"),
        ("plan", "plan", ""),
        ("price_date", "date", ""),
    ],
    "models": [
        ("name", "name", ""),
        ("hf_id", "hf_id", ""),
        ("params_b", "params B", "{:,.2f}"),
        ("active_params_b", "active B", "{:,.2f}"),
        ("attention", "attention", ""),
        ("layers", "layers", ""),
        ("weights", "weights", ""),
        ("max_position_embeddings", "max positions", "{:,}"),
    ],
}


def render_catalog(catalog, what: str, fmt: str, as_of=None) -> str:
    """`sizer catalog gpus|prices|models` in any table format: JSON and CSV every field of the
    rows, the text table the columns below (prices: price_rows_table, with ages to `as_of`)."""
    rows = catalog_rows(catalog, what, as_of=as_of)
    if fmt == "table" and what == "prices":
        return price_rows_table(rows, as_of)
    if fmt == "csv":
        return csv_table(rows, list(rows[0]) if rows else [k for k, _, _ in _CATALOG_COLUMNS[what]])
    return render_rows(rows, _CATALOG_COLUMNS[what], fmt)


# ---------------------------------------------------------------------------------------------
# compare
# ---------------------------------------------------------------------------------------------

_COMPARE_COLUMNS: list[Column] = [
    ("device", "device", ""),
    ("provider", "provider", ""),
    ("tp", "tp", ""),
    ("pp", "pp", ""),
    ("kv_dtype", "kv", ""),
    ("weight_dtype", "weights", ""),
    ("replicas", "replicas", ""),
    ("gpus", "gpus", ""),
    ("cost_usd_per_million_tokens", "$/M tok", "{:,.3f}"),
    ("cost_usd_per_hour", "$/hour", "{:,.2f}"),
    ("ttft_p99_s", "TTFT p99 s", "{:.3f}"),
    ("tpot_p99_s", "TPOT p99 s", "{:.4f}"),
    ("kv_headroom_fraction", "KV headroom", "{:.0%}"),
    ("binding", "binds", ""),
]


def _compare_columns(comparison) -> list[Column]:
    cols = [*_COMPARE_COLUMNS, ("evidence_short", "evidence", "")]
    if comparison.workload.traffic.profile_rps or comparison.workload.search.reserved_pricing:
        cols[7:7] = [("reserved_replicas", "reserved", ""), ("on_demand_peak_replicas", "on-demand peak", "")]
        cols.insert(cols.index(("cost_usd_per_hour", "$/hour", "{:,.2f}")) + 1, ("cost_usd_per_day", "$/day", "{:,.2f}"))
    return cols


def comparison_to_dict(comparison, rows: list[dict[str, Any]], as_of=None) -> dict[str, Any]:
    """`sizer compare --format json`: the workload, the date prices are aged to, its rows (one
    object per device, or per device and provider) and the warnings about the inputs."""
    w = comparison.workload
    return {
        "workload": w.name,
        "workload_path": str(w.path),
        "requests_per_s": w.traffic.requests_per_s,
        "confidence": w.slo.confidence,
        "as_of": as_of.isoformat() if as_of is not None else None,
        "rows": rows,
        "warnings": list(w.warnings),
    }


def render_comparison(comparison, rows: list[dict[str, Any]], fmt: str, as_of=None) -> str:
    """`sizer compare` output: JSON is an object holding the rows (comparison_to_dict); the table
    and Markdown add the reasons of the devices that cannot serve."""
    if fmt == "json":
        return to_json(comparison_to_dict(comparison, rows, as_of))
    if fmt == "csv":
        from .compare import PROVENANCE_KEYS, ROW_KEYS

        return csv_table(rows, ["device", "provider", "feasible", *ROW_KEYS, "reason", *PROVENANCE_KEYS])
    w = comparison.workload
    feasible = [{**r, "evidence_short": evidence_short(r.get("evidence"))} for r in rows if r["feasible"]]
    infeasible = [r for r in rows if not r["feasible"]]
    rate = f"{w.traffic.requests_per_s:g} req/s" + (" at the peak hour of the daily profile" if w.traffic.profile_rps else "")
    head = f"{w.name}: best single-configuration fleet per device for {rate}" + (
        f", every pool sized to hold its SLOs at the {w.slo.confidence:g} quantile of the model's error" if w.slo.confidence != 0.5 else ""
    )
    cols = _compare_columns(comparison)
    if fmt == "markdown":
        out = f"# {head}\n\n" + (markdown_table(feasible, cols) if feasible else "No device can serve this workload.\n")
        if infeasible:
            out += "\n## Cannot serve\n\n" + markdown_table(infeasible, [("device", "device", ""), ("provider", "provider", ""), ("reason", "reason", "")])
        return out
    out = head + "\n\n" + (text_table(feasible, cols) if feasible else "no device can serve this workload\n")
    if infeasible:
        who = [(f"{r['device']}{' (' + r['provider'] + ')' if r['provider'] else ''}", str(r["reason"] or "")) for r in infeasible]
        out += "\nCANNOT SERVE\n" + "".join(line + "\n" for line in reason_lines(who))
    return out


# ---------------------------------------------------------------------------------------------
# sweep
# ---------------------------------------------------------------------------------------------


def render_sweep(result, fmt: str) -> str:
    """`sizer sweep` output: one row per point (the plan, its cost, the best cost on each device)
    and the flips of the plan's hardware."""
    from .sweep import sweep_to_dict

    data = sweep_to_dict(result)
    if fmt == "json":
        return to_json(data)
    devices = list(result.workload.search.devices)
    rows = []
    for p in data["points"]:
        row = {k: v for k, v in p.items() if k != "device_cost_usd_per_hour"}
        for d in devices:
            row[f"{d} $/hour"] = p["device_cost_usd_per_hour"].get(d)
        rows.append(row)
    if fmt == "csv":
        keys = [result.parameter, "status", "hardware", "configuration", "requests_per_s", "gpus", "cost_usd_per_hour", "cost_usd_per_day"]
        keys += ["cost_usd_per_million_tokens", "reserved_replicas", "on_demand_peak_replicas", "mix_saving_vs_single_fraction"]
        keys += [f"{d} $/hour" for d in devices] + ["reason"]
        return csv_table(rows, keys)
    cols: list[Column] = [
        (result.parameter, f"{result.parameter} ({result.unit})", "{:g}"),
        ("hardware", "plan", ""),
        ("gpus", "gpus", ""),
        ("cost_usd_per_hour", "$/hour", "{:,.2f}"),
        ("cost_usd_per_million_tokens", "$/M tok", "{:,.3f}"),
    ]
    cols += [(f"{d} $/hour", f"{d} $/h", "{:,.2f}") for d in devices]
    flips = data["flips"]
    flip_lines = [f"between {f['before']:g} and {f['after']:g} {result.unit}: {f['from']} -> {f['to']}" for f in flips]
    title = f"{result.workload.name}: sweep of {result.parameter}" + (f" ({result.device} prices)" if result.device else "")
    if fmt == "markdown":
        out = f"# {title}\n\n" + markdown_table(rows, cols)
        out += "\n## Where the hardware flips\n\n" + ("".join(f"- {line}\n" for line in flip_lines) or "- nowhere in this range\n")
        out += "\n## Plans\n\n" + markdown_table(rows, [cols[0], ("configuration", "configuration", ""), ("status", "status", "")])
        return out
    out = title + "\n\n" + text_table(rows, cols)
    out += "\nFLIPS\n" + ("".join(f"  {line}\n" for line in flip_lines) or "  none: the same hardware at every point\n")
    out += "\nPLANS\n" + "".join(
        f"  {p[result.parameter]:g}: {p['configuration'] if p['status'] not in ('infeasible', 'time_limit') else p['status'] + ': ' + (p['reason'] or '')}\n" for p in data["points"]
    )
    return out


# ---------------------------------------------------------------------------------------------
# pandas DataFrames (the Python API; pandas is imported only here)
# ---------------------------------------------------------------------------------------------


def plan_to_frame(plan: Plan) -> "pd.DataFrame":  # noqa: F821
    """The plan as a pandas DataFrame: one row per deployment of the plan (`role` "plan") and
    per best plan on another device (`role` "alternative"), columns the keys of plan_to_dict's
    deployments (device, tp, pp, kv_dtype, weight_dtype, replicas, gpus, cost_usd_per_hour,
    cost_usd_per_million_tokens, ttft_p99_s, tpot_p99_s, binding, launch_command, ...)."""
    import pandas as pd

    data = plan_to_dict(plan)
    rows = [{"role": "plan", **d} for d in data["deployments"]] + [{"role": "alternative", **d} for d in data["alternatives"]]
    columns = ["role", *(data["deployments"][0] if data["deployments"] else {})]
    return pd.DataFrame(rows, columns=columns)


def comparison_to_frame(comparison, sort: str = "cost", as_of=None) -> "pd.DataFrame":  # noqa: F821
    """A comparison (compare.compare) as a pandas DataFrame: one row per device (or per device
    and provider), feasible rows first in `sort` order, then the devices that cannot serve with
    their `reason`; columns device, provider, feasible, the fields of compare.ROW_KEYS, reason,
    the price's provenance (compare.PROVENANCE_KEYS; its age counted to `as_of`, a date) and the
    evidence as `evidence_<key>` columns (basis, device_rows, ...; None where it cannot serve)."""
    import pandas as pd

    from .compare import PROVENANCE_KEYS, ROW_KEYS, comparison_rows
    from .evidence import Evidence

    keys = list(Evidence.__dataclass_fields__)
    rows = []
    for r in comparison_rows(comparison, sort, as_of):
        e = r.pop("evidence") or {}
        rows.append({**r, **{f"evidence_{k}": e.get(k) for k in keys}})
    columns = ["device", "provider", "feasible", *ROW_KEYS, "reason", *PROVENANCE_KEYS, *(f"evidence_{k}" for k in keys)]
    return pd.DataFrame(rows, columns=columns)
