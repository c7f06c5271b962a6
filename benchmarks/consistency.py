"""Cross-command consistency: the same figure reached along different paths must agree.

    python benchmarks/consistency.py [--seed 0] [--n 20] [--only-shipped] [--verbose]

For every shipped workload (workloads/*.yaml) and N workload variants generated from them
(deterministic for a --seed: another catalog model, lengths, rate, KV dtype, engine
vllm/sglang/trtllm where the workload allows, devices), it runs, in this process, as a user would:

- `sizer solve W --format json` and `--format table`;
- for the plan's deployments and every alternative: `sizer explain --device D` with the launch
  flags solve printed, parsed from its launch line as a user pastes them (the whole line after
  the model; trtllm-serve's options file written first), then again with `--context-tokens` of
  the workload's percentile context;
- `sizer compare W --format json` (one row per device);
- `sizer sweep W --requests-per-s R --format json` at the workload's own rate (not for a daily
  profile or a trace, whose rate a steady sweep point does not reproduce);
- `sizer simulate W --format json` (shipped workloads only: seconds each) for the launch flags;
- the Python API's plan_to_frame against solve's JSON;

and compares every figure two of them report: KV tokens per replica, KV pool per GPU, weights,
max concurrency and --max-num-seqs, --max-model-len, replicas, GPUs, rate per replica, cost per
hour and per million tokens, price and its date. Prints each disagreement, then a count by kind.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import random
import re
import shlex
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fuzz_cases import explain_argv, workload_flags  # noqa: E402 - the launch line as a user pastes it

AS_OF = "2026-12-01"
MODELS = ["llama-3.1-8b", "qwen3-8b", "qwen3-32b", "gpt-oss-20b", "gpt-oss-120b", "qwen3-30b-a3b", "llama-3.1-70b", "mixtral-8x7b", "llama-3.1-70b-fp8", "llama-2-13b"]
DEVICES = ["H100-SXM", "H200-SXM", "A100-80GB", "L40S", "MI300X", "B200", "A10G", "L4", "RTX-4090", "H100-PCIe"]


def run(argv: list[str]) -> tuple[int, str, str]:
    from sizer.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return code, out.getvalue(), err.getvalue()


# ------------------------------------------------------------------------------------------------
# workloads
# ------------------------------------------------------------------------------------------------


def variant(rng: random.Random, shipped: list[Path]) -> dict:
    base = yaml.safe_load(rng.choice(shipped).read_text())
    w = copy.deepcopy(base)
    w["name"] = "variant"
    w.pop("description", None)
    w.pop("constraints", None) if rng.random() < 0.7 else None
    w["model"] = rng.choice(MODELS)
    t = w["traffic"]
    if rng.random() < 0.6:
        p50 = int(rng.choice([100, 300, 800, 2000, 6000]))
        t["prompt_tokens"] = {"p50": p50, "p90": p50 * 2, "p99": p50 * rng.choice([3, 5, 8])}
        o50 = int(rng.choice([20, 100, 300, 1000]))
        t["output_tokens"] = {"p50": o50, "p90": o50 * 2, "p99": o50 * rng.choice([3, 5])}
    if "requests_per_s" in t or rng.random() < 0.7:
        t.pop("profile", None)
        t["requests_per_s"] = float(f"{rng.choice([0.3, 1, 3, 8, 20, 60]) * rng.uniform(0.7, 1.3):.3g}")
    s = w.setdefault("search", {})
    s["devices"] = rng.sample(DEVICES, rng.randint(2, 4))
    s["kv_dtypes"] = rng.choice([["bf16"], ["fp8"], ["bf16", "fp8"]])
    s.pop("max_configurations", None) if rng.random() < 0.5 else None
    if "max_configurations" not in s:
        s.pop("size_buckets", None)
    s["tp"] = sorted(rng.sample([1, 2, 4, 8], rng.randint(1, 3)))
    s["pp"] = [1] if rng.random() < 0.8 else [1, 2]
    engine = rng.choice(["vllm", "vllm", "vllm", "sglang", "trtllm", "llamacpp"])
    mem = w.setdefault("memory", {})
    if engine != "vllm":
        w["engine"] = engine
        mem.pop("gpu_memory_utilization", None)
        if engine == "trtllm":
            s["devices"] = [d for d in s["devices"] if not d.startswith("MI")] or ["H100-SXM", "L40S"]
        if engine == "llamacpp":
            s["kv_dtypes"] = rng.choice([["f16"], ["q8_0"], ["f16", "q8_0"]])
            s["pp"] = [1]
            s.pop("weight_dtypes", None)
    if rng.random() < 0.25:
        w["engine_version"] = rng.choice({"vllm": ["0.6.4", "0.10", "0.11.0", "0.17", "0.20"], "sglang": ["0.4.6", "0.5.5"], "trtllm": ["0.20", "1.0", "1.1"], "llamacpp": ["b6000"]}[engine])
    if engine != "llamacpp" and rng.random() < 0.3:
        s["weight_dtypes"] = rng.sample(["bf16", "fp8", "int4", "nvfp4", "mxfp4"], rng.randint(1, 2))
    if rng.random() < 0.3:
        mem["context_percentile"] = rng.choice([90, 95, 99.9])
    knobs = {
        "max_num_seqs": lambda: rng.choice([16, 64, 200]),
        "block_size_tokens": lambda: rng.choice([16, 32, 64]),
        "speculative_tokens": lambda: rng.choice([2, 4]),
        "shared_prefix_tokens": lambda: rng.choice([100, 1000]),
        "max_num_batched_tokens": lambda: rng.choice([2048, 4096, 16384]),
        "admission": lambda: rng.choice(["declared", "growth"]),
        "gpu_memory_utilization": lambda: rng.choice([0.8, 0.95]),
        "mem_fraction_static": lambda: rng.choice([0.8, 0.88]),
        "free_gpu_memory_fraction": lambda: rng.choice([0.8, 0.95]),
        "n_parallel": lambda: rng.choice([4, 16]),
    }
    fraction_key = {"vllm": "gpu_memory_utilization", "sglang": "mem_fraction_static", "trtllm": "free_gpu_memory_fraction"}.get(engine)
    for key in rng.sample(sorted(knobs), 2):
        if key in ("gpu_memory_utilization", "mem_fraction_static", "free_gpu_memory_fraction") and key != fraction_key:
            continue
        if key == "n_parallel" and engine != "llamacpp":
            continue
        if engine == "llamacpp" and key not in ("n_parallel", "speculative_tokens"):
            continue
        if rng.random() < 0.4:
            mem[key] = knobs[key]()
    if not mem:
        w.pop("memory")
    if rng.random() < 0.2:
        w.setdefault("slo", {})["confidence"] = rng.choice([0.3, 0.8, 0.9])
    if rng.random() < 0.2:
        w.setdefault("pricing", {})["kind"] = rng.choice(["spot", "reserved_1y", "mixed", "on_demand"])
    if w.get("pricing", {}).get("provider") and rng.random() < 0.5:
        w["pricing"].pop("provider")
    if w.get("constraints", {}).get("available_gpus"):
        w["constraints"]["available_gpus"] = {d: 16 for d in s["devices"][:2]}
    return w


# ------------------------------------------------------------------------------------------------
# the launch line, pasted
# ------------------------------------------------------------------------------------------------


def flag(argv: list[str], *names: str) -> str | None:
    for i, a in enumerate(argv):
        if a in names and i + 1 < len(argv):
            return argv[i + 1]
    return None


# ------------------------------------------------------------------------------------------------
# checks
# ------------------------------------------------------------------------------------------------


class Findings:
    def __init__(self) -> None:
        self.items: list[tuple[str, str, str]] = []  # (kind, case, detail)
        self.checked = 0  # figures compared

    def add(self, kind: str, case: str, detail: str) -> None:
        self.items.append((kind, case, detail))

    def same(self, kind: str, case: str, what: str, a, b, rel: float = 0.0) -> None:
        self.checked += 1
        if a is None and b is None:
            return
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
            if abs(a - b) <= rel * max(abs(a), abs(b)) + 1e-9:
                return
        elif a == b:
            return
        self.add(kind, case, f"{what}: {a!r} vs {b!r}")


def label(x: dict) -> str:
    return f"{x['device']} tp={x['tp']} pp={x['pp']} kv={x['kv_dtype']} w={x['weight_dtype']}"


def check_case(name: str, path: Path, f: Findings, folder: Path, simulate: bool, verbose: bool) -> str:
    code, out, err = run(["solve", str(path), "--format", "json", "--as-of", AS_OF])
    if code != 0:
        return f"solve exit {code}"
    plan = json.loads(out)
    w = plan["workload"]
    rows = [("plan", x) for x in plan["deployments"]] + [("alt", x) for x in plan["alternatives"]]
    # -- explain from the pasted launch line
    doc = yaml.safe_load(path.read_text())
    for role, x in rows:
        argv = explain_argv(x, folder) + workload_flags(doc)
        code, out, err = run([*argv, "--format", "json"])
        tag = f"{name} {role} {label(x)}"
        if code != 0:
            f.add("explain refuses the launch line", tag, f"exit {code}: {err.strip()[:300]} | {x['launch_command']}")
            continue
        e = json.loads(out)
        f.same("explain: kv_tokens", tag, "kv_tokens solve vs explain", x["kv_tokens"], e["kv_tokens"])
        f.same("explain: kv_pool_bytes_per_gpu", tag, "kv pool bytes solve vs explain", x["kv_pool_bytes_per_gpu"], e["kv_pool_bytes_per_gpu"])
        f.same("explain: weights_bytes_per_gpu", tag, "weights bytes solve vs explain", x["weights_bytes_per_gpu"], e["weights_bytes_per_gpu"])
        f.same("explain: kv_bytes_per_token_per_gpu", tag, "kv B/token/GPU solve vs explain", x["kv_bytes_per_token_per_gpu"], e["kv_bytes_per_token_per_gpu"])
        f.same("explain: kv_bytes_per_token", tag, "kv B/token solve vs explain", x["kv_bytes_per_token"], e["kv_bytes_per_token"])
        f.same("explain: max_num_seqs", tag, "max_num_seqs solve vs explain", x["max_num_seqs"], e.get("max_num_seqs"))
        whole = x.get("size_range", "all") == "all"  # a size bucket's pool launches with its bucket's lengths
        if whole:
            f.same("explain: max_model_len", tag, "max_model_len solve vs explain", w["max_model_len"], e.get("max_model_len"))
        for k in ("activation_bytes_per_gpu", "runtime_overhead_bytes_per_gpu"):
            if k in x and k in e:
                f.same(f"explain: {k}", tag, f"{k} solve vs explain", x[k], e[k])
        if "engine_gpu_blocks" in x and "gpu_blocks" in e:
            f.same("explain: engine gpu_blocks", tag, "engine blocks solve vs explain", x["engine_gpu_blocks"], e["gpu_blocks"])
        if "engine_kv_tokens" in x and "kv_cache_tokens" in e:
            f.same("explain: engine kv tokens", tag, "engine KV tokens solve vs explain", x["engine_kv_tokens"], e["kv_cache_tokens"])
        # the launch line explain prints for the same flags is solve's (same flags, same values)
        # at the percentile context: the pool's sequences
        if not whole:
            continue
        code2, out2, err2 = run([*argv, "--context-tokens", str(w["context_tokens"]), "--format", "json"])
        if code2 != 0:
            f.add("explain refuses --context-tokens", tag, f"exit {code2}: {err2.strip()[:300]}")
        else:
            e2 = json.loads(out2)
            admission = x.get("admission", "percentile")
            if admission == "percentile":
                f.same("explain: max_concurrency at percentile context", tag, f"max_concurrency at {w['context_tokens']} solve vs explain", x["max_concurrency"], e2["max_concurrency"])
            f.same("explain: kv_tokens (with --context-tokens)", tag, "kv_tokens", x["kv_tokens"], e2["kv_tokens"])
    # -- compare's row per device against the plan's / alternative's
    cmp_rows = {}
    code, out, err = run(["compare", str(path), "--format", "json", "--as-of", AS_OF])
    if code not in (0, 9):
        f.add("compare fails", name, f"exit {code}: {err.strip()[:300]}")
    elif code == 0:
        cmp_rows = {r["device"]: r for r in json.loads(out)["rows"]}
        for r in cmp_rows.values():
            if r["feasible"] and r.get("cost_usd_per_million_tokens") is not None and w.get("output_tokens_per_s"):
                per_m = r["cost_usd_per_hour"] / (3600 * w["output_tokens_per_s"]) * 1e6
                if not w.get("profile_requests_per_s"):  # a daily profile's $/M tok is the day's, not the peak's
                    # output_tokens_per_s is printed to 2 decimals: a relative 1e-4 is its rounding
                    f.same("compare: $/M tok = $/h / output tok/s", f"{name} {r['device']}", "$/M tok vs $/h over demand", per_m, r["cost_usd_per_million_tokens"], rel=1e-4)
        single = len(plan["deployments"]) == 1 and len(plan.get("size_ranges") or []) <= 1 and not plan["constraints"]
        candidates = [x for _, x in rows if _ != "plan" or single]
        for x in candidates:
            r = cmp_rows.get(x["device"])
            tag = f"{name} {label(x)}"
            if r is None:
                f.add("compare: device missing", tag, "solve reports it, compare has no row")
                continue
            if not r["feasible"]:
                f.add("compare: infeasible where solve has a plan", tag, r.get("reason") or "")
                continue
            for k in ("tp", "pp", "kv_dtype", "weight_dtype", "replicas", "gpus", "provider", "usd_per_gpu_hour", "cost_usd_per_hour",
                      "cost_usd_per_million_tokens", "max_rate_rps_per_replica", "load_rps_per_replica", "ttft_p99_s", "tpot_p99_s",
                      "max_concurrency", "kv_headroom_fraction", "binding", "price_date", "price_source", "price_source_kind", "price_age_days",
                      "instance_gpus", "cost_usd_per_day", "reserved_replicas", "on_demand_peak_replicas"):
                if k in r and k in x:
                    f.same(f"compare: {k}", tag, f"{k} solve vs compare", x[k], r[k])
            if "max_num_seqs" in r:
                f.same("compare: max_num_seqs", tag, "max_num_seqs solve vs compare", x["max_num_seqs"], r["max_num_seqs"])
        for dev, r in cmp_rows.items():
            if r["feasible"] and not any(x["device"] == dev for _, x in rows):
                f.add("compare: feasible where solve has no alternative", f"{name} {dev}", "")
    cmp_cost = {r["device"]: r["cost_usd_per_hour"] for r in cmp_rows.values() if r["feasible"]} if code == 0 else None
    # -- sweep at the workload's own rate
    steady = w.get("profile_requests_per_s") in (None, []) and not w.get("trace")
    if steady:
        code, out, err = run(["sweep", str(path), "--requests-per-s", repr(w["requests_per_s"]), "--format", "json", "--quiet"])
        if code != 0:
            f.add("sweep fails", name, f"exit {code}: {err.strip()[:300]}")
        else:
            (p,) = json.loads(out)["points"]
            if p["status"] != plan["status"]:
                f.add("sweep: status", name, f"solve {plan['status']} vs sweep {p['status']}")
            else:
                for k in ("cost_usd_per_hour", "cost_usd_per_million_tokens", "gpus", "cost_usd_per_day"):
                    f.same(f"sweep: {k}", name, f"{k} solve vs sweep", plan[k], p[k])
                conf = " + ".join(f"{d['replicas']} x {d['device']} tp={d['tp']} pp={d['pp']} kv={d['kv_dtype']} weights={d['weight_dtype']}" for d in plan["deployments"])
                f.same("sweep: configuration", name, "configuration solve vs sweep", conf, p["configuration"])
                devcost = {x["device"]: x["cost_usd_per_hour"] for x in plan["alternatives"]}
                if len(plan["deployments"]) == 1:  # a mix's devices have no single-device cost in the plan
                    devcost.setdefault(plan["deployments"][0]["device"], plan["cost_usd_per_hour"])
                for dev, c in (p.get("device_cost_usd_per_hour") or {}).items():
                    if cmp_cost is not None:
                        f.same("sweep vs compare: device cost", f"{name} {dev}", "device $/h compare vs sweep", cmp_cost.get(dev), c)
                    if len(plan["deployments"]) > 1:
                        continue  # a mix: each device's best single fleet is compare's, checked above
                    if dev in devcost:
                        if dev in devcost:
                            f.same("sweep: device cost", f"{name} {dev}", "device $/h solve vs sweep", devcost[dev], c)
                    elif c is not None:
                        f.add("sweep: device cost where solve has none", f"{name} {dev}", f"sweep ${c}/h")
    # -- sweep at the workload's own traffic (--scale 1: a daily profile too) and own confidence
    for extra in (["--scale", "1"], ["--confidence", repr(plan["confidence"])]):
        code, out, err = run(["sweep", str(path), *extra, "--format", "json", "--quiet"])
        what = f"sweep {' '.join(extra)}"
        if code != 0:
            f.add(f"{extra[0]} sweep fails", name, f"exit {code}: {err.strip()[:300]}")
            continue
        (p,) = json.loads(out)["points"]
        if p["status"] != plan["status"]:
            f.add(f"sweep {extra[0]}: status", name, f"solve {plan['status']} vs sweep {p['status']}")
            continue
        for k in ("cost_usd_per_hour", "cost_usd_per_million_tokens", "gpus", "cost_usd_per_day", "reserved_replicas", "on_demand_peak_replicas"):
            f.same(f"{what.split()[1]} sweep: {k}", name, f"{k} solve vs {what}", plan.get(k), p.get(k))
    # -- compare --per-provider: the row of the plan's device and provider
    code, out, err = run(["compare", str(path), "--per-provider", "--format", "json", "--as-of", AS_OF])
    if code == 0 and cmp_rows:
        for r in json.loads(out)["rows"]:
            best = cmp_rows.get(r["device"])
            if not r["feasible"] or best is None or not best["feasible"] or r["provider"] != best["provider"]:
                continue
            for k in ("cost_usd_per_hour", "replicas", "gpus", "tp", "pp", "kv_dtype", "weight_dtype", "price_date", "usd_per_gpu_hour", "max_concurrency"):
                f.same(f"compare --per-provider: {k}", f"{name} {r['device']} {r['provider']}", f"{k} compare vs --per-provider", best.get(k), r.get(k))
    # -- solve's table against its JSON (the plan's row and each alternative's)
    code, table, err = run(["solve", str(path), "--as-of", AS_OF])
    if code == 0:
        check_table(name, table, plan, f)
    # -- Python API
    try:
        check_api(name, path, plan, f)
    except Exception as exc:  # noqa: BLE001
        f.add("api fails", name, f"{type(exc).__name__}: {exc}")
    # -- simulate's configuration against the launch line
    if simulate and plan["status"] == "optimal":
        code, out, err = run(["simulate", str(path), "--format", "json", "--quiet", "--duration-s", "60"])
        if code in (0, 11):
            sims = [s["configuration"] for s in json.loads(out)["simulations"]]
            for s, x in zip(sims, plan["deployments"]):
                tag = f"{name} plan {label(x)}"
                argv = shlex.split(x["launch_command"].split("  # ")[0].split("&&")[-1])
                f.same("simulate: max_num_seqs", tag, "max_num_seqs solve vs simulate", x["max_num_seqs"], s.get("max_num_seqs"))
                f.same("simulate: max_model_len", tag, "max_model_len solve vs simulate", w["max_model_len"], s.get("max_model_len"))
                mbt = flag(argv, "--max-num-batched-tokens", "--chunked-prefill-size", "--max_num_tokens")
                if mbt is not None:
                    f.same("simulate: max_num_batched_tokens", tag, "batched tokens launch vs simulate", int(mbt), s.get("max_num_batched_tokens"))
                f.same("simulate: launch_command", tag, "launch line solve vs simulate", x["launch_command"], s.get("launch_command"))
                f.same("simulate: kv_pool_bytes_per_gpu", tag, "kv pool solve vs simulate", x["kv_pool_bytes_per_gpu"], s.get("kv_pool_bytes_per_gpu"))
                f.same("simulate: rate per replica", tag, "load per replica solve vs simulate", x["load_rps_per_replica"], s.get("rate_rps_per_replica"))
                f.same("simulate: replicas", tag, "replicas solve vs simulate", x["replicas"], s.get("replicas"))
        else:
            f.add("simulate fails", name, f"exit {code}: {err.strip()[:300]}")
    return "ok"


def _num(s: str) -> float:
    return float(s.replace(",", "").replace("$", ""))


def check_table(name: str, table: str, plan: dict, f: Findings) -> None:
    """The plan's rows and BEST ON OTHER DEVICES rows of solve's table carry the JSON's figures at
    their printed precision."""
    lines = table.splitlines()
    wanted = {"replicas": "replicas", "gpus": "gpus", "$/GPU-h": "usd_per_gpu_hour", "$/hour": "cost_usd_per_hour", "$/M tok": "cost_usd_per_million_tokens",
              "req/s/rep": "load_rps_per_replica", "max req/s/rep": "max_rate_rps_per_replica", "max seqs": "max_num_seqs", "TTFT p99 s": "ttft_p99_s",
              "TPOT p99 s": "tpot_p99_s", "provider": "provider", "GPUs/inst": "instance_gpus"}
    by_label = {}
    for x in plan["deployments"] + plan["alternatives"]:
        by_label.setdefault((x["device"], str(x["tp"]), str(x["pp"]), x["kv_dtype"], x["weight_dtype"]), []).append(x)
    cols: list[str] = []
    for line in lines:
        if line.startswith("device ") and "max seqs" in line:
            cols = re.split(r"\s{2,}", line.strip())
            continue
        if not line.strip() or not cols:
            cols = [] if not line.strip() else cols
            continue
        tokens = line.split()
        cells: dict[str, str] = {}
        i = 0
        for c in cols:
            if i >= len(tokens) or c == "evidence":
                break
            if c == "price":
                n = 3 if i + 2 < len(tokens) and tokens[i + 2] == "!" else 2
                cells[c] = " ".join(tokens[i:i + n])
                i += n
            else:
                cells[c] = tokens[i]
                i += 1
        key = tuple(cells.get(c, "") for c in ("device", "tp", "pp", "kv", "weights"))
        xs = by_label.get(key)
        if not xs:
            continue
        x = xs[0]
        for col, k in wanted.items():
            if col not in cells or x.get(k) is None:
                continue
            tok, ref = cells[col], x[k]
            if isinstance(ref, str):
                if tok != ref:
                    f.add(f"table: {col}", f"{name} {label(x)}", f"table {tok} vs JSON {ref}")
                continue
            try:
                val = _num(tok)
            except ValueError:
                f.add(f"table: {col}", f"{name} {label(x)}", f"table {tok!r} vs JSON {ref}")
                continue
            decimals = len(tok.split(".")[1]) if "." in tok else 0
            if abs(val - ref) > 0.5 * 10 ** -decimals + 1e-9:
                f.add(f"table: {col}", f"{name} {label(x)}", f"table {tok} vs JSON {ref}")
        if "price" in cells and x.get("price_age_days") is not None:
            m = re.search(r"(\d+)d", cells["price"])
            if not m or int(m.group(1)) != x["price_age_days"]:
                f.add("table: price age", f"{name} {label(x)}", f"table {cells['price']!r} vs JSON {x['price_age_days']} days")


def check_api(name: str, path: Path, plan: dict, f: Findings) -> None:
    import datetime

    import sizer

    catalog = sizer.load_catalog()
    w = sizer.load_workload(path, catalog)
    p = sizer.solve(w, catalog, as_of=datetime.date.fromisoformat(AS_OF)) if "as_of" in sizer.solve.__code__.co_varnames else sizer.solve(w, catalog)
    d = sizer.plan_to_dict(p)
    for k in ("cost_usd_per_hour", "cost_usd_per_million_tokens", "gpus"):
        f.same(f"api: {k}", name, f"{k} CLI vs plan_to_dict", plan[k], d[k])
    frame = sizer.plan_to_frame(p)
    rows = plan["deployments"] + plan["alternatives"]
    if len(frame) != len(rows):
        f.add("api: frame rows", name, f"{len(frame)} frame rows vs {len(rows)} in JSON")
        return
    for (_, fr), x in zip(frame.iterrows(), rows):
        for k in ("replicas", "gpus", "cost_usd_per_hour", "cost_usd_per_million_tokens", "kv_tokens", "max_num_seqs", "max_concurrency", "max_rate_rps_per_replica", "price_date", "usd_per_gpu_hour"):
            if k in fr.index:
                v = fr[k]
                v = v.item() if hasattr(v, "item") else v
                f.same(f"api frame: {k}", f"{name} {label(x)}", f"{k} JSON vs plan_to_frame", x[k], v, rel=1e-6)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=20, help="generated workload variants")
    ap.add_argument("--only-shipped", action="store_true")
    ap.add_argument("--no-simulate", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--keep", type=Path, help="write the generated variants to this folder (to reproduce one)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    shipped = sorted((ROOT / "workloads").glob("*.yaml"))
    f = Findings()
    outcomes = Counter()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sizer-consistency-") as tmp:
        folder = Path(tmp)
        cases: list[tuple[str, Path, bool]] = [(p.stem, p, not args.no_simulate) for p in shipped]
        if not args.only_shipped:
            for i in range(args.n):
                doc = variant(rng, shipped)
                p = folder / f"variant-{i}.yaml"
                p.write_text(yaml.safe_dump(doc, sort_keys=False))
                if args.keep:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    (args.keep / p.name).write_text(p.read_text())
                cases.append((f"variant-{i}", p, not args.no_simulate and i % 3 == 0))
        import os

        os.chdir(folder)  # trtllm-serve's options file is written where the line says
        for name, p, sim in cases:
            t0 = time.monotonic()
            before = len(f.items)
            try:
                outcome = check_case(name, p, f, folder, sim, args.verbose)
            except Exception as exc:  # noqa: BLE001 - the harness's own failure is a finding too
                import traceback

                outcome = "harness error"
                f.add("harness error", name, f"{type(exc).__name__}: {exc} {traceback.format_exc()[-600:]}")
            outcomes[outcome if not outcome.startswith("solve exit") else "solve refused/infeasible"] += 1
            print(f"{name}: {outcome}, {len(f.items) - before} disagreement(s), {time.monotonic() - t0:.1f} s", flush=True)
            if outcome.startswith("solve exit") and args.verbose:
                print("   ", p.read_text().replace("\n", " | "))
    print()
    for kind, case, detail in f.items:
        print(f"[{kind}] {case}: {detail}")
    print()
    print(f"cases {len(cases)} ({dict(outcomes)}), {time.monotonic() - start:.0f} s; figures compared {f.checked}; disagreements {len(f.items)}")
    for kind, n in sorted(Counter(k for k, _, _ in f.items).items(), key=lambda kv: -kv[1]):
        print(f"  {n:4d}  {kind}")


if __name__ == "__main__":
    main()
