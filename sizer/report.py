"""Rendering: a Plan or an Explanation as plain data (dicts), then as a terminal table, JSON or CSV.

`plan_to_dict` and `explanation_to_dict` are the JSON contract; the table and CSV renderings are
built from the same dicts, so the three formats never disagree. Output is deterministic: the same
input gives byte-identical JSON (keys in a fixed order, floats rounded to fixed digits).
"""

from __future__ import annotations

import io
import json
from typing import Any

import pandas as pd

from .explain import Explanation
from .optimize import Deployment, Plan
from .units import GIB

_MONEY_DIGITS = 6
_TIME_DIGITS = 6


def _r(x: float, digits: int = 6) -> float:
    return float(round(float(x), digits))


def deployment_to_dict(d: Deployment, with_cost_per_token: bool = True) -> dict[str, Any]:
    e = d.candidate
    m = e.memory
    out: dict[str, Any] = {
        "device": e.config.device,
        "tp": e.config.tp,
        "pp": e.config.pp,
        "kv_dtype": e.config.kv_dtype,
        "weight_dtype": e.config.weight_dtype,
        "replicas": d.replicas,
        "gpus": d.gpus,
        "max_concurrency": m.max_concurrency,
        "kv_bytes_per_token": int(round(m.kv_bytes_per_token)),
        "kv_bytes_per_token_per_gpu": int(round(m.kv_bytes_per_token_per_gpu)),
        "kv_pool_bytes_per_gpu": int(round(m.kv_pool_bytes_per_gpu)),
        "kv_tokens": m.kv_tokens,
        "weights_bytes_per_gpu": int(round(m.weights_bytes_per_gpu)),
        "throughput_tokens_per_s": _r(d.throughput_tokens_per_s, 3),
        "max_rate_rps_per_replica": _r(e.max_rate_rps, 6),
        "load_rps_per_replica": _r(d.load_rps_per_replica, 6),
        "ttft_p99_s": _r(d.ttft_p99_s, _TIME_DIGITS),
        "tpot_p99_s": _r(d.tpot_p99_s, _TIME_DIGITS),
        "binding": e.binding,
        "cost_usd_per_hour": _r(d.cost_usd_per_hour, _MONEY_DIGITS),
        "usd_per_gpu_hour": e.price.usd_per_gpu_hour,
        "provider": e.price.provider,
        "pricing": e.price.kind,
        "price_plan": e.price.plan,
        "price_date": e.price.price_date,
        "price_source": e.price.source,
        "launch_command": d.launch_command,
    }
    if with_cost_per_token:
        out["cost_usd_per_million_tokens"] = _r(d.cost_usd_per_million_tokens, _MONEY_DIGITS)
    return out


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    w = plan.workload
    model = w.model
    return {
        "status": plan.status,
        "workload": {
            "name": w.name,
            "path": w.path,
            "model": model.name,
            "model_params": int(round(model.total_params())),
            "engine": w.engine,
            "requests_per_s": w.traffic.requests_per_s,
            "mean_prompt_tokens": _r(w.traffic.prompt_tokens.mean, 3),
            "mean_output_tokens": _r(w.traffic.output_tokens.mean, 3),
            "context_percentile": w.memory.context_percentile,
            "context_tokens": w.context_tokens,
            "output_tokens_per_s": _r(plan.output_tokens_per_s, 3),
            "slo": {"ttft_s": dict(w.slo.ttft_s), "tpot_s": dict(w.slo.tpot_s)},
        },
        "cost_usd_per_hour": _r(plan.cost_usd_per_hour, _MONEY_DIGITS),
        "cost_usd_per_million_tokens": _r(plan.cost_usd_per_million_tokens, _MONEY_DIGITS),
        "gpus": sum(d.gpus for d in plan.deployments),
        "binding": plan.binding,
        "why": plan.why,
        "deployments": [deployment_to_dict(d) for d in plan.deployments],
        "alternatives": [deployment_to_dict(d) for d in plan.alternatives],
        "rejected": [{"device": r.device, "stage": r.stage, "reason": r.reason} for r in plan.rejected],
        "solver": plan.solver,
        "candidates_evaluated": plan.candidates_evaluated,
        "candidates_feasible": plan.candidates_feasible,
    }


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


_TABLE_COLUMNS = [
    ("device", "device"),
    ("tp", "tp"),
    ("pp", "pp"),
    ("kv_dtype", "kv"),
    ("weight_dtype", "weights"),
    ("replicas", "replicas"),
    ("gpus", "gpus"),
    ("usd_per_gpu_hour", "$/GPU-h"),
    ("provider", "provider"),
    ("cost_usd_per_hour", "$/hour"),
    ("cost_usd_per_million_tokens", "$/M tok"),
    ("load_rps_per_replica", "req/s/rep"),
    ("max_rate_rps_per_replica", "max req/s/rep"),
    ("ttft_p99_s", "TTFT p99 s"),
    ("tpot_p99_s", "TPOT p99 s"),
    ("max_concurrency", "max seqs"),
    ("binding", "binds"),
]


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame([{label: r[key] for key, label in _TABLE_COLUMNS} for r in rows])
    for col, fmt in (
        ("$/GPU-h", "{:.2f}"),
        ("$/hour", "{:.2f}"),
        ("$/M tok", "{:.3f}"),
        ("req/s/rep", "{:.2f}"),
        ("max req/s/rep", "{:.2f}"),
        ("TTFT p99 s", "{:.3f}"),
        ("TPOT p99 s", "{:.4f}"),
    ):
        df[col] = df[col].map(fmt.format)
    return df


def plan_table(plan: Plan) -> str:
    data = plan_to_dict(plan)
    w = data["workload"]
    model = plan.workload.model
    slo = ", ".join(
        [f"TTFT {k} <= {v:g} s" for k, v in w["slo"]["ttft_s"].items()] + [f"TPOT {k} <= {v:g} s" for k, v in w["slo"]["tpot_s"].items()]
    )
    out = io.StringIO()
    out.write(f"workload  {w['name']} ({w['path']})\n")
    out.write(
        f"model     {model.name}: {model.total_params() / 1e9:.1f}B params, {model.attention_kind}, "
        f"{model.num_hidden_layers} layers{', MoE ' + str(model.num_experts) + ' experts top-' + str(model.num_experts_per_tok) if model.is_moe else ''}\n"
    )
    out.write(
        f"traffic   {w['requests_per_s']:g} req/s, mean prompt {w['mean_prompt_tokens']:,.0f} / output {w['mean_output_tokens']:,.0f} tokens, "
        f"p{w['context_percentile']:g} context {w['context_tokens']:,} tokens; SLO {slo or 'none'}\n\n"
    )
    out.write(
        f"PLAN      ${data['cost_usd_per_hour']:,.2f}/hour   ${data['cost_usd_per_million_tokens']:,.3f} per million output tokens   "
        f"{data['gpus']} GPUs   ({plan.candidates_feasible} of {plan.candidates_evaluated} candidates feasible; {plan.solver})\n"
    )
    out.write(_frame(data["deployments"]).to_string(index=False) + "\n\n")
    out.write(f"why       {plan.why}\n")
    for d in data["deployments"]:
        out.write(f"launch    {d['launch_command']}\n")
    if data["alternatives"]:
        out.write("\nBEST ON OTHER DEVICES\n")
        out.write(_frame(data["alternatives"]).to_string(index=False) + "\n")
    if data["rejected"]:
        out.write("\nREJECTED\n")
        for r in data["rejected"]:
            out.write(f"  {r['device']}: {r['reason']}\n")
    return out.getvalue()


def plan_csv(plan: Plan) -> str:
    data = plan_to_dict(plan)
    rows = [{"role": "plan", **d} for d in data["deployments"]]
    rows += [{"role": "alternative", **d} for d in data["alternatives"]]
    rows += [{"role": "rejected", "device": r["device"], "reason": r["reason"]} for r in data["rejected"]]
    columns = ["role", *[k for k in data["deployments"][0] if k != "launch_command"], "reason", "launch_command"]
    df = pd.DataFrame(rows, columns=columns)
    return df.to_csv(index=False, lineterminator="\n")


def render_plan(plan: Plan, fmt: str) -> str:
    if fmt == "json":
        return to_json(plan_to_dict(plan))
    if fmt == "csv":
        return plan_csv(plan)
    return plan_table(plan)


# ---------------------------------------------------------------------------------------------
# explain
# ---------------------------------------------------------------------------------------------


def explanation_to_dict(x: Explanation) -> dict[str, Any]:
    m = x.memory
    return {
        "model": x.model.name,
        "device": x.gpu.name,
        "tp": x.tp,
        "pp": x.pp,
        "kv_dtype": x.kv_dtype,
        "weight_dtype": x.weight_dtype,
        "engine": x.engine,
        "binding_stage": m.stage,
        "usable_memory_bytes": int(round(m.usable_memory_bytes)),
        "gpu_memory_utilization": m.gpu_memory_utilization,
        "budget_bytes": int(round(m.budget_bytes)),
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
        "blocks_per_sequence": m.blocks_per_sequence,
        "max_concurrency": m.max_concurrency,
        "max_num_seqs": x.engine_defaults.max_num_seqs,
        "max_num_batched_tokens": x.engine_defaults.max_num_batched_tokens,
        "launch_command": x.launch_command,
        "lines": [{"label": ln.label, "formula": ln.formula, "value": ln.value} for ln in x.lines],
    }


def explanation_table(x: Explanation) -> str:
    out = io.StringIO()
    out.write(
        f"{x.model.name} on {x.gpu.name}: tp={x.tp} pp={x.pp}, KV {x.kv_dtype}, weights {x.weight_dtype}, engine {x.engine}\n\n"
    )
    width = max(len(ln.label) for ln in x.lines)
    vwidth = max(len(ln.value) for ln in x.lines)
    for ln in x.lines:
        out.write(f"  {ln.label:<{width}}  {ln.value:>{vwidth}}   {ln.formula}\n")
    if not x.memory.fits:
        out.write(f"\n  does not fit: KV pool {x.memory.kv_pool_bytes_per_gpu / GIB:.2f} GiB, max concurrency {x.memory.max_concurrency}\n")
    out.write(f"\nlaunch  {x.launch_command}\n")
    return out.getvalue()


def render_explanation(x: Explanation, fmt: str) -> str:
    if fmt == "json":
        return to_json(explanation_to_dict(x))
    if fmt == "csv":
        d = explanation_to_dict(x)
        d.pop("lines")
        return pd.DataFrame([d]).to_csv(index=False, lineterminator="\n")
    return explanation_table(x)


# ---------------------------------------------------------------------------------------------
# catalog listings
# ---------------------------------------------------------------------------------------------


def catalog_rows(catalog, what: str) -> list[dict[str, Any]]:
    """Rows for `sizer catalog gpus|prices|models`."""
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
                "gpus_per_node": g.gpus_per_node,
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
                "plan": p.plan,
                "price_date": p.price_date,
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
            }
        )
    return rows
