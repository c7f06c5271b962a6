"""Generated inputs for sizer and the invariants its answers must keep: one generator per input
kind (workloads, constraints, traces, price files, config.json files, measurement files, every
command's flags),
bad and valid, and relations between pairs of runs. Used by tests/test_properties.py (a few
dozen cases, drawn by hypothesis) and benchmarks/fuzz.py (thousands, on every core).

A case is the files it writes and the command lines it runs (`sizer` argv, run in-process
through sizer.cli.main). Its outcome is one of

    ok              exit 0 and every invariant holds
    refused         a documented exit code (2-10), one "error: " line on stderr per error
                    (one, but for a price file's several bad rows), nothing on stdout
    traceback       an exception escaped main, or exit 70 (an internal error)
    violation       an invariant failed (the message says which)
    nondeterministic  the same command gave different bytes
    hang            (benchmarks/fuzz.py) no answer within its per-case timeout

Invariants checked where they apply (`check_*` below):
  - a plan's deployments and alternatives: load per replica <= its max rate, and the reported
    p99 TTFT / TPOT within the workload's p99 bounds; the replicas carry the demand
    (sum of replicas x max rate >= the peak demand, each size range its share);
  - JSON output is strict JSON (no NaN / Infinity); the same argv gives the same bytes;
  - a command given --time-limit-s T returns within T x 1.1 + 2 s (start-up and output);
  - doubling the demand, adding a constraint that restricts (available_gpus, the budgets,
    min_replicas, redundancy: not instance_gpus, which redefines an offer and may make it
    cheaper), removing a device never lower the cost; lowering a
    price never raises it (sweep --price-scale); loosening an SLO never raises it, where no
    candidate's max rate fell by more than the rate search's tolerance (see check_loosen);
  - fp8 KV never admits fewer sequences than bf16 (explain);
  - validate --measurements returns every row of the file, modelled or skipped with a reason, and
    no negative figure.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import random
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTED_EXIT_CODES = {0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}  # 11: simulate's plan misses its SLO
INTERNAL = 70
# models small enough to evaluate quickly, of every architecture the catalog holds
MODELS = ["llama-3.1-8b", "qwen3-8b", "gpt-oss-20b", "qwen3-30b-a3b", "llama-3.1-70b", "mixtral-8x7b", "qwen3-235b-a22b", "deepseek-v3", "llama-3.1-70b-fp8"]
DEVICES = ["H100-SXM", "H200-SXM", "A100-80GB", "L40S", "MI300X", "RTX-4090", "L4", "B200", "A10G", "A100-80GB-PCIe"]
BAD_VALUES = [float("nan"), float("inf"), -1, 0, -1e308, 1e308, "x", "", [], {}, None, True, [1, "a"], {"p50": "x"}, 10**30, 1e-300, "1e5", 2**63, 10**400, " ", "\u00e9\u4e2d"]
ENGINES = ["vllm", "sglang", "trtllm", "llamacpp"]


@dataclass
class Run:
    argv: list[str]
    code: int
    out: str
    err: str
    wall_s: float
    escaped: str | None = None  # the traceback of an exception that escaped main


@dataclass
class Case:
    kind: str
    files: dict[str, str] = field(default_factory=dict)
    argv: list[list[str]] = field(default_factory=list)  # one or more commands ({dir} = the case's folder)
    relation: str | None = None  # how the commands' answers must relate (check_relation)
    repeat: bool = False  # run argv[0] twice: same bytes
    seed: int = 0

    def describe(self) -> str:
        lines = [f"kind: {self.kind}" + (f", relation: {self.relation}" if self.relation else "")]
        for name, text in self.files.items():
            shown = text if len(text) < 1500 else text[:1500] + f"... ({len(text)} characters)"
            lines.append(f"--- {name}\n{shown}")
        lines += ["$ sizer " + " ".join(a) for a in self.argv]
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# generators
# ------------------------------------------------------------------------------------------------


def _y(value) -> str:
    """A value as YAML flow text (JSON is YAML; NaN and inf in YAML's spelling)."""
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value)
        mantissa, _, exponent = text.partition("e")
        if exponent and "." not in mantissa:  # YAML 1.1 reads 1e-300 as a string, 1.0e-300 as a number
            text = f"{mantissa}.0e{exponent}"
        return text
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_y(k)}: {_y(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_y(v) for v in value) + "]"
    return json.dumps(value)


def to_yaml(doc: dict) -> str:
    return "".join(f"{_y(k)}: {_y(v)}\n" for k, v in doc.items())


def _loguniform(rng: random.Random, lo: float, hi: float) -> float:
    return float(f"{math.exp(rng.uniform(math.log(lo), math.log(hi))):.4g}")


def _lengths(rng: random.Random, lo: float, hi: float):
    if rng.random() < 0.3:
        return int(_loguniform(rng, lo, hi))
    keys = sorted(rng.sample(["p50", "p90", "p95", "p99"], rng.randint(1, 3)), key=lambda k: float(k[1:]))
    base = _loguniform(rng, lo, hi / 4)
    out, v = {}, base
    for k in keys:
        out[k] = int(v)
        v *= rng.uniform(1.0, 3.0)
    if rng.random() < 0.15:
        out["max"] = int(v * 2)
    return out


def valid_workload(rng: random.Random) -> dict:
    """A workload sizer should answer (a plan, or a reasoned exit 9): small searches, so that a
    case takes about a second."""
    w: dict = {"model": rng.choice(MODELS)}
    traffic: dict = {"prompt_tokens": _lengths(rng, 20, 8000), "output_tokens": _lengths(rng, 2, 2000)}
    if rng.random() < 0.2:
        peak = _loguniform(rng, 0.05, 200)
        traffic["profile"] = [float(f"{peak * rng.uniform(0.05, 1.0):.4g}") for _ in range(23)] + [peak]
        rng.shuffle(traffic["profile"])
    else:
        traffic["requests_per_s"] = _loguniform(rng, 0.01, 300)
    if rng.random() < 0.05:  # a named dataset's length distributions (catalogs/datasets.yaml)
        traffic.pop("prompt_tokens")
        traffic.pop("output_tokens")
        traffic["dataset"] = rng.choice(["mlperf-llama2-70b", "mlperf-mixtral-8x7b", "mlperf-llama3.1-8b", "mlperf-llama3.1-405b", "mlperf-deepseek-r1"])
    w["traffic"] = traffic
    if rng.random() < 0.85:
        slo: dict = {}
        if rng.random() < 0.8:
            slo["ttft_s"] = _loguniform(rng, 0.1, 20) if rng.random() < 0.5 else {"p99": _loguniform(rng, 0.1, 20)}
        if rng.random() < 0.8:
            slo["tpot_s"] = _loguniform(rng, 0.01, 0.5) if rng.random() < 0.5 else {"p90": _loguniform(rng, 0.01, 0.2), "p99": _loguniform(rng, 0.2, 0.5)}
        if rng.random() < 0.1:
            slo["confidence"] = rng.choice([0.1, 0.5, 0.8, 0.95])
        w["slo"] = slo
    search: dict = {"devices": rng.sample(DEVICES, rng.randint(1, 3))}
    if rng.random() < 0.7:
        search["tp"] = sorted(rng.sample([1, 2, 4, 8], rng.randint(1, 2)))
    search["pp"] = [1] if rng.random() < 0.8 else [1, 2]
    if rng.random() < 0.5:
        search["kv_dtypes"] = rng.sample(["bf16", "fp8"], rng.randint(1, 2))
    if rng.random() < 0.15:
        search["max_configurations"] = 2
        if rng.random() < 0.5:
            search["size_buckets"] = rng.choice([[50], [50, 90], 2])
    w["search"] = search
    if rng.random() < 0.3:
        w["constraints"] = constraints(rng, search["devices"])
    if rng.random() < 0.2:
        w["pricing"] = {"kind": rng.choice(["on_demand", "reserved_1y", "spot", "mixed"])}
    if rng.random() < 0.15:
        memory: dict = rng.choice(
            [
                {"context_percentile": rng.choice([90, 95, 99.9])},
                {"admission": rng.choice(["declared", "growth"])},
                {"max_num_seqs": rng.randint(1, 512)},
                {"gpu_memory_utilization": rng.choice([0.5, 0.8, 0.95])},
                {"speculative_tokens": rng.randint(0, 8)},
                {"shared_prefix_tokens": rng.randint(0, 500)},
            ]
        )
        w["memory"] = memory
    if rng.random() < 0.1 and "gpu_memory_utilization" not in w.get("memory", {}):
        w["engine"] = rng.choice(["sglang", "trtllm"])
    return w


RESTRICTING = ["available_gpus", "budget_usd_per_hour", "budget_usd_per_month", "min_replicas", "redundancy"]


def constraints(rng: random.Random, devices: list[str], restricting_only: bool = False) -> dict:
    """A constraints section. `restricting_only`: none that redefines an offer (instance_gpus sets
    the instance size a device is rented in, overriding prices.yaml: a smaller instance can make
    a plan cheaper, so it is no constraint that "never lowers the cost")."""
    c: dict = {}
    keys = RESTRICTING if restricting_only else [*RESTRICTING, "instance_gpus"]
    pick = rng.sample(keys, rng.randint(1, 2))
    for key in pick:
        if key == "available_gpus":
            c[key] = {d: rng.choice([1, 4, 8, 16, 64]) for d in rng.sample(devices, 1)}
        elif key == "budget_usd_per_hour":
            c[key] = _loguniform(rng, 1, 500)
        elif key == "budget_usd_per_month":
            c[key] = _loguniform(rng, 1000, 500_000)
        elif key == "min_replicas":
            c[key] = rng.randint(1, 6)
        elif key == "redundancy":
            c[key] = "n_plus_1"
        else:
            c[key] = {rng.choice(devices): rng.choice([1, 2, 8])}
    return c


def _paths(doc: dict, prefix: tuple = ()) -> list[tuple]:
    out = []
    for k, v in doc.items():
        out.append(prefix + (k,))
        if isinstance(v, dict):
            out += _paths(v, prefix + (k,))
    return out


def corrupt(rng: random.Random, doc: dict) -> dict:
    """The document with one leaf given a bad value, a key misspelt, or a required key removed."""
    doc = json.loads(json.dumps(doc, allow_nan=True))
    paths = _paths(doc)
    path = rng.choice(paths)
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    what = rng.random()
    if what < 0.6:
        parent[path[-1]] = rng.choice(BAD_VALUES)
    elif what < 0.8:
        parent[path[-1] + rng.choice(["x", "_s", "s"])] = parent.pop(path[-1])
    else:
        parent.pop(path[-1])
    return doc


def workload_case(rng: random.Random) -> Case:
    w = valid_workload(rng)
    bad = rng.random() < 0.35
    if bad:
        w = corrupt(rng, w)
    argv = ["solve", "{dir}/w.yaml", "--format", rng.choice(["json", "json", "table", "csv", "markdown"])]
    if rng.random() < 0.25:
        argv += ["--time-limit-s", str(rng.choice([0.5, 1, 3, 10]))]
    return Case(kind="workload-bad" if bad else "workload", files={"w.yaml": to_yaml(w)}, argv=[argv], repeat=rng.random() < 0.1)


def yaml_text_case(rng: random.Random) -> Case:
    """Text that is not a plain workload: syntax errors, duplicate keys, aliases, bombs, binary."""
    choice = rng.randrange(8)
    base = to_yaml(valid_workload(rng))
    if choice == 0:
        text = base + "traffic: {requests_per_s: 1}\n"  # duplicate top-level key
    elif choice == 1:
        levels, width = rng.randint(3, 9), rng.randint(3, 12)
        lines = ["a0: &a0 [" + ", ".join(["x"] * width) + "]"]
        lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
        text = "\n".join(lines) + f"\ndescription: *a{levels - 1}\n" + base
    elif choice == 2:
        text = "model: &m [*m]\n"
    elif choice == 3:
        cut = rng.randrange(max(len(base), 1))
        text = base[:cut] + rng.choice(["{", "[", ": :", "\t", "'", "&", "*x", "%", "!!python/object:os.system"]) + base[cut:]
    elif choice == 4:
        text = "".join(chr(rng.randrange(1, 0x3000)) for _ in range(rng.randint(0, 200)))
    elif choice == 5:
        text = rng.choice(["", "null\n", "[1, 2]\n", "42\n", "'x'\n", "---\n---\n"])
    elif choice == 6:
        text = base + "x: !!binary aGVsbG8=\n"
    else:
        text = base.replace("model:", "model: &mm", 1) + "name: *mm\n"
    return Case(kind="yaml-text", files={"w.yaml": text}, argv=[["solve", "{dir}/w.yaml", "--format", "json"]])


def _timestamp(rng: random.Random, t: float) -> str:
    r = rng.random()
    if r < 0.02:
        return rng.choice(["nan", "inf", "-inf", "1e13", "-1e300", "", "x", "2024-13-40T99:00:00", "1e400"])
    if r < 0.3:
        import datetime as _dt

        return (_dt.datetime(2025, 1, 1) + _dt.timedelta(seconds=t)).isoformat() + rng.choice(["", "Z", "+02:00"])
    return f"{1_700_000_000 + t:.3f}"


def trace_case(rng: random.Random) -> Case:
    n = rng.randint(0, 400)
    span = rng.choice([3600 * 23, 86400, 86400 * 2.5, 86400 * 30, 86400 * 400])
    cols = ["timestamp"] + [c for c in ("prompt_tokens", "output_tokens") if rng.random() < 0.5]
    rows = [",".join(cols)]
    for _ in range(n):
        t = rng.uniform(0, span)
        cells = [_timestamp(rng, t)]
        for c in cols[1:]:
            cells.append(rng.choice([str(rng.randint(1, 5000))] * 30 + ["0", "-3", "nan", "inf", "", "x", "1e12", "2.5"]))
        rows.append(",".join(cells))
    if rng.random() < 0.05:
        rows.insert(rng.randint(0, len(rows)), rng.choice(["a,b,c,d", "\x00", '"unterminated', ""]))
    w = valid_workload(rng)
    w["traffic"].pop("requests_per_s", None)
    w["traffic"].pop("profile", None)
    w["traffic"]["trace"] = "t.csv"
    for c in cols[1:]:
        w["traffic"].pop(c, None)
    files = {"t.csv": "\n".join(rows) + "\n", "w.yaml": to_yaml(w)}
    argv = [["solve", "{dir}/w.yaml", "--format", "json"]]
    if rng.random() < 0.3:
        argv = [["simulate", "{dir}/w.yaml", "--trace", "{dir}/t.csv", "--duration-s", str(rng.choice([10, 60])), "--format", "json", "--plan", "H100-SXM,1,1,bf16,bf16"]]
        files["w.yaml"] = to_yaml({"model": "llama-3.1-8b", "traffic": {"requests_per_s": 2, "prompt_tokens": 200, "output_tokens": 50}})
    return Case(kind="trace", files=files, argv=argv)


BASE_CONFIG = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16",
}
CONFIG_EXTRAS = {
    "head_dim": [128, 0, -1, 10**7],
    "partial_rotary_factor": [0.5, float("nan"), float("inf"), 2, "x"],
    "sliding_window": [4096, float("nan"), -5, "x", None],
    "layer_types": [["sliding_attention", "full_attention"] * 16, "x", [1], (["linear_attention"] * 3 + ["full_attention"]) * 8],
    # Gated DeltaNet (Qwen3-Next, Qwen3.5): heads, sizes, the interval rule and the state's dtype
    "linear_num_key_heads": [16, 0, -1, "x"],
    "linear_num_value_heads": [32, 3, 10**6],
    "linear_key_head_dim": [128, 0],
    "linear_value_head_dim": [128, "x"],
    "linear_conv_kernel_dim": [4, 0, 10**7],
    "full_attention_interval": [4, 0, -1, "x"],
    "mamba_ssm_dtype": ["float32", "int8", 5],
    "num_local_experts": [8, 0, -2, 10**6],
    "num_experts_per_tok": [2, 0, "x", 10**6],
    "moe_intermediate_size": [1024, 0],
    "kv_lora_rank": [512, 0, "x"],
    "qk_rope_head_dim": [64, 0],
    "v_head_dim": [128, 0],
    "quantization_config": [
        {"quant_method": "fp8", "weight_block_size": [128, 128]},
        {"quant_method": "fp8", "weight_block_size": "x"},
        {"quant_method": "awq", "bits": "four"},
        {"quant_method": "gptq", "bits": 8, "group_size": -1},
        {"quant_method": "mxfp4"},
        {"quant_method": "compressed-tensors", "format": "float-quantized", "kv_cache_scheme": {"num_bits": 8}},
        {"quant_method": "quark", "global_quant_config": {"weight": {"dtype": "fp4", "group_size": 32}}, "exclude": ["lm_head", "*self_attn*"]},
        {"quant_method": "quark", "global_quant_config": {"weight": [{"dtype": "fp8_e4m3"}, {"dtype": "int4"}]}, "export": {"kv_cache_group": [{"x": 1}]}},
        {"quant_method": "quark", "global_quant_config": "x", "layer_quant_config": [1]},
        {"quant_method": "quark", "layer_quant_config": {"*experts*": {"weight": 5}}},
        {"quant_method": 5},
        "garbage",
        [1, 2],
    ],
    "text_config": [{"hidden_size": 2048}, "x"],
    "tie_word_embeddings": [True, "x"],
    "mlp_only_layers": [[0, 1], 5, "x"],
    "sliding_window_pattern": [6, 0, "x"],
    "torch_dtype": ["float16", "float8", 5, None],
}


VALID_LINEAR = {"linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4}

# Other config classes' names and the architectures sizer refuses (sizer/model.py _standard_names,
# refuse_unsizable; tests/data/ARCH_AUDIT.md): trimmed published shapes, then their own fields varied
FAMILY_CONFIGS = [
    {"model_type": "RefinedWeb", "hidden_size": 8192, "n_head": 128, "n_head_kv": 8, "n_layer": 60, "vocab_size": 65024, "torch_dtype": "bfloat16"},
    {"model_type": "RefinedWebModel", "hidden_size": 4544, "n_head": 71, "n_layer": 32, "multi_query": True, "vocab_size": 65024},
    {"model_type": "chatglm", "hidden_size": 4096, "num_attention_heads": 32, "num_layers": 28, "padded_vocab_size": 65024, "seq_length": 8192,
     "ffn_hidden_size": 13696, "kv_channels": 128, "multi_query_attention": True, "multi_query_group_num": 2, "add_qkv_bias": True},
    {"model_type": "dbrx", "d_model": 6144, "n_heads": 48, "n_layers": 40, "max_seq_len": 32768, "vocab_size": 100352,
     "attn_config": {"kv_n_heads": 8}, "ffn_config": {"moe_num_experts": 16, "moe_top_k": 4, "ffn_hidden_size": 10752}},
    {"model_type": "qwen", "hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 24, "vocab_size": 151936,
     "intermediate_size": 11008, "kv_channels": 128, "max_position_embeddings": 8192},
    {"model_type": "opt", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32, "ffn_dim": 16384, "vocab_size": 50272,
     "max_position_embeddings": 2048},
    {"model_type": "cohere", "hidden_size": 8192, "num_attention_heads": 64, "num_key_value_heads": 64, "num_hidden_layers": 40,
     "intermediate_size": 22528, "vocab_size": 256000, "max_position_embeddings": 8192},
    {"model_type": "minimax_m2", "hidden_size": 3072, "num_attention_heads": 48, "num_key_value_heads": 8, "num_hidden_layers": 62,
     "intermediate_size": 1536, "num_local_experts": 256, "num_experts_per_tok": 8, "vocab_size": 200064, "head_dim": 128,
     "attn_type_list": [1] * 62},
    {"model_type": "bert", "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12, "intermediate_size": 3072, "vocab_size": 30522},
    {"model_type": "t5", "d_model": 512, "num_heads": 8, "num_layers": 6, "d_ff": 2048, "vocab_size": 32128, "is_encoder_decoder": True},
    {"model_type": "mamba", "hidden_size": 2560, "num_hidden_layers": 64, "state_size": 16, "vocab_size": 50280},
    {"model_type": "jamba", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
     "intermediate_size": 14336, "vocab_size": 65536, "attn_layer_period": 8, "attn_layer_offset": 4, "mamba_d_state": 16},
]
FAMILY_EXTRAS = {
    "n_head_kv": [8, 0, -1, "x", None],
    "multi_query_group_num": [2, 0, 64, "x", None],
    "attn_config": [{"kv_n_heads": 8}, {"kv_n_heads": "x"}, "x", [1]],
    "ffn_config": [{"moe_num_experts": "16", "moe_top_k": 4, "ffn_hidden_size": 10752}, {"moe_top_k": 0}, "x"],
    "kv_channels": [128, "x", -4],
    "intermediate_size": [1, -4, 11007, True],
    "ffn_dim": [0, "x"],
    "attn_type_list": [[1] * 62, [0, 1] * 31, "x", []],
    "is_encoder_decoder": [True, False, "x"],
    "tie_word_embeddings": [None, False],
    "num_layers": ["28", 0],
}


def config_case(rng: random.Random) -> Case:
    if rng.random() < 0.3:
        cfg = json.loads(json.dumps(rng.choice(FAMILY_CONFIGS)))
        for key in rng.sample(sorted(FAMILY_EXTRAS), rng.randint(0, 2)):
            cfg[key] = rng.choice(FAMILY_EXTRAS[key])
    else:
        cfg = dict(BASE_CONFIG)
    for key in rng.sample(sorted(CONFIG_EXTRAS), rng.randint(0, 3)):
        cfg[key] = rng.choice(CONFIG_EXTRAS[key])
    hybrid = isinstance(cfg.get("layer_types"), list) and "linear_attention" in cfg["layer_types"]
    if (hybrid or cfg.get("full_attention_interval") == 4) and rng.random() < 0.7:
        # a Gated DeltaNet model whole (Qwen3-Next's head sizes), so the hybrid memory paths run
        for key, value in VALID_LINEAR.items():
            cfg.setdefault(key, value)
    if rng.random() < 0.3:
        key = rng.choice(sorted(BASE_CONFIG))
        cfg[key] = rng.choice(BAD_VALUES)
    if rng.random() < 0.1:
        cfg.pop(rng.choice(sorted(cfg)))
    text = json.dumps(cfg, allow_nan=True)
    files = {"m/config.json": text}
    if rng.random() < 0.1:
        files["m/hf_quant_config.json"] = rng.choice(['{"quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}', "[1]", '{"x": 1}', "{bad json"])
    if rng.random() < 0.5:
        argv = ["explain", "--model", "{dir}/m", "--device", rng.choice(DEVICES), "--tp", str(rng.choice([1, 2, 4])), "--context-tokens", str(rng.choice([100, 4096, 10**6])), "--format", "json"]
    else:
        files["w.yaml"] = to_yaml({"model": "m", "traffic": {"requests_per_s": _loguniform(rng, 0.1, 50), "prompt_tokens": 500, "output_tokens": 100}, "search": {"devices": rng.sample(DEVICES, 2), "tp": [1, 2]}})
        argv = ["solve", "{dir}/w.yaml", "--format", "json"]
    return Case(kind="config.json", files=files, argv=[argv])


def prices_case(rng: random.Random) -> Case:
    """A catalog folder whose prices.yaml has one entry changed (the rest linked to the shipped one)."""
    text = (ROOT / "catalogs" / "prices.yaml").read_text(encoding="utf-8")
    import yaml

    doc = yaml.safe_load(text)
    entries = doc["prices"]
    i = rng.randrange(len(entries))
    e = entries[i]
    key = rng.choice(sorted(e))
    r = rng.random()
    if r < 0.5:
        e[key] = rng.choice(BAD_VALUES)
    elif r < 0.7:
        e.pop(key)
    elif r < 0.85:
        e["usd_per_gpu_hour"] = rng.choice([0.0001, 1e6, 0.01, 1000])
    else:
        entries.append(dict(e))  # the same offer twice
    files = {"cat/prices.yaml": json.dumps(doc, allow_nan=True)}
    w = valid_workload(rng)
    files["w.yaml"] = to_yaml(w)
    cmd = rng.choice([["solve", "{dir}/w.yaml", "--format", "json"], ["compare", "{dir}/w.yaml", "--format", "json"], ["catalog", "prices", "--format", "json"]])
    return Case(kind="prices", files=files, argv=[cmd + ["--catalog", "{dir}/cat"]])

USER_PRICE_FIELDS = {
    "device": ["H100-SXM", "L40S", "MI300X", "NoSuchGPU", "NVIDIA H100 80GB HBM3", ""],
    "provider": ["me", "aws", "", " "],
    "kind": ["on_demand", "spot", "reserved_1y", "reserved_3y", "monthly"],
    "usd_per_gpu_hour": [0.5, 2.0, 1e-300, 1e300, 0, -1, "1e-3"],
    "price_date": ["2026-11-01", "3000-01-01", "1900-01-01", "2026-02-30", "2026-11"],
    "gpus_per_instance": [1, 8, [1, 8], [8, 8], 0, 3],
    "instance": ["p5.48xlarge", ""],
}


def user_prices_case(rng: random.Random) -> Case:
    """The user's own price file (--prices, pricing.files): rows of good and bad fields, an offer
    given twice, instance prices, dates after --as-of."""
    rows = []
    for _ in range(rng.randint(1, 4)):
        row = {"device": rng.choice(["H100-SXM", "L40S", "MI300X"]), "provider": "me", "kind": "on_demand", "usd_per_gpu_hour": float(f"{rng.uniform(0.3, 5):.3g}")}
        for key in rng.sample(sorted(USER_PRICE_FIELDS), rng.randint(0, 2)):
            row[key] = rng.choice(USER_PRICE_FIELDS[key])
        if rng.random() < 0.15:
            row.pop("usd_per_gpu_hour")
            row["usd_per_instance_hour"] = rng.choice([8.0, 30.0, 0])
            row["gpus_per_instance"] = rng.choice([8, 1, [1, 8]])
        if rng.random() < 0.1:
            row[rng.choice(["usd_per_gpu_hr", "devices", "provder", "source_kind"])] = rng.choice([1, "user", "provider_page"])
        rows.append(row)
    if rng.random() < 0.15:
        rows.append(dict(rows[0]))
    text = to_yaml({"prices": rows}) if rng.random() < 0.9 else rng.choice(["prices: 5\n", "", "[1]\n", "prices: [{}]\n"])
    w = valid_workload(rng)
    w["search"]["devices"] = sorted(set(w["search"]["devices"]) | {rows[0]["device"] if rows[0].get("device") in DEVICES else "H100-SXM"})
    files = {"p.yaml": text}
    as_of = ["--as-of", rng.choice(["2026-12-02", "2020-01-01", "2026-02-30"])] if rng.random() < 0.5 else []
    if rng.random() < 0.5:
        files["w.yaml"] = to_yaml(w)
        argv = ["solve", "{dir}/w.yaml", "--prices", "{dir}/p.yaml", "--format", rng.choice(["json", "table"]), *as_of]
    else:
        w["pricing"] = {**w.get("pricing", {}), "files": rng.choice([["p.yaml"], ["p.yaml", "p.yaml"], ["missing.yaml"], "p.yaml"])}
        files["w.yaml"] = to_yaml(w)
        argv = [rng.choice(["solve", "compare"]), "{dir}/w.yaml", "--format", "json", *as_of]
    return Case(kind="user-prices", files=files, argv=[argv], repeat=rng.random() < 0.1)


def gpus_case(rng: random.Random) -> Case:
    """A catalog folder whose gpus.yaml has one device's field changed (the rest linked to the shipped one)."""
    import yaml

    doc = yaml.safe_load((ROOT / "catalogs" / "gpus.yaml").read_text(encoding="utf-8"))
    entry = rng.choice(doc["gpus"])
    key = rng.choice(sorted(k for k in entry if k != "sources"))
    r = rng.random()
    if r < 0.6:
        entry[key] = rng.choice(BAD_VALUES)
    elif r < 0.8:
        entry.pop(key)
    elif r < 0.9 and isinstance(entry[key], (int, float)) and not isinstance(entry[key], bool):
        entry[key] = entry[key] * rng.choice([1e-6, 0.01, 100, 1e6])
    else:
        entry["aliases"] = [*entry.get("aliases", []), rng.choice(["", " ", "H100-SXM", "a\nb"])]
    files = {"cat/gpus.yaml": json.dumps(doc, allow_nan=True), "w.yaml": to_yaml(valid_workload(rng))}
    cmd = rng.choice([["solve", "{dir}/w.yaml", "--format", "json"], ["compare", "{dir}/w.yaml", "--format", "json"], ["catalog", "gpus", "--format", "json"],
                      ["explain", "--model", "llama-3.1-8b", "--device", entry.get("name", "H100-SXM") if isinstance(entry.get("name"), str) else "H100-SXM", "--format", "json"]])
    return Case(kind="gpus", files=files, argv=[cmd + ["--catalog", "{dir}/cat"]])


MEASUREMENT_CELLS = ["", "nan", "NA", "-1", "0", "-0", "2.5", "1e308", "1e-300", "inf", "-inf", "x", " 8 ", "\u00e9\u4e2d", "1,5", "99999999999999999999", "0x10", "1e5"]
MEASUREMENT_TEXT = {
    "system": ["h100_sxm", "mi300x", "mi355x", "l40s", "AMD Instinct MI300X", "NVIDIA H100 80GB HBM3", "nosuch", "", "A100"],
    "backend": ["vllm", "sglang", "trtllm", "VLLM", "tgi", ""],
    "precision": ["fp8", "bf16", "fp4", "fp16", "int4", "mxfp4", "nvfp4", "", "int8"],
    "kv_dtype": ["fp8", "bf16", "", "fp4", "auto"],
    "mode": ["agg", "disagg", "AGG", "", "split"],
    "kind": ["concurrency", "rate", "offline", "batch", "server", "Interactive", "", "singlestream"],
    "dataset": ["mlperf-llama2-70b", "mlperf-deepseek-r1", "mlperf-llama3.1-8b", "", "nosuch"],
    "model_path": ["meta-llama/Llama-2-70b-chat-hf", "meta-llama/Llama-3.1-8B-Instruct", "deepseek-ai/DeepSeek-R1", "nosuch/model", "", "mistralai/Mixtral-8x7B-Instruct-v0.1"],
    "backend_version": ["0.10.0", "", "x", "1.1.0rc2", "mlperf-v5.0", "0.9.0"],
    "in_process": ["yes", "no", "YES", "true", "", "maybe"],
}


def measurements_case(rng: random.Random) -> Case:
    """A user's measurement CSV (validate --measurements): rows drawn from the shipped tables with
    cells replaced by gaps, text, negative, huge, tiny and fractional figures, unknown devices,
    models, kinds and datasets, a column dropped; every row must come back modelled or skipped."""
    import csv

    folder = ROOT / "catalogs" / "measurements"
    name = rng.choice(["public_serving.csv", "aiconfigurator_silicon_sample.csv"])
    with open(folder / name, newline="", encoding="utf-8") as fh:
        table = list(csv.DictReader(fh))
    columns = list(table[0])
    rows = [dict(r) for r in rng.sample(table, rng.randint(1, 6))]
    for row in rows:
        for col in rng.sample(columns, rng.randint(0, 3)):
            if col in ("id", "silicon_data_source", "notes"):
                continue
            row[col] = rng.choice(MEASUREMENT_TEXT[col]) if col in MEASUREMENT_TEXT and rng.random() < 0.7 else rng.choice(MEASUREMENT_CELLS)
    if rng.random() < 0.1:
        rows.append(dict(rows[0]))  # the same run twice
    if rng.random() < 0.08:
        columns.remove(rng.choice(columns))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    fmt = rng.choice(["json", "table", "csv"])
    argv = ["validate", "--measurements", "{dir}/m.csv", "--format", fmt, "--rows", rng.choice(["all", "skipped", "none", "score"])]
    return Case(kind="measurements", files={"m.csv": buf.getvalue()}, argv=[argv], repeat=rng.random() < 0.1)


def _flag_value(rng: random.Random, good: list[str]) -> str:
    return rng.choice(good) if rng.random() < 0.8 else rng.choice(["nan", "inf", "-1", "0", "1e308", "x", "", "1:2", "1:2:0", "1,,2", "-0", "1e-300", "99999999999999999999"])


def flags_case(rng: random.Random) -> Case:
    """Every command with random flags, good and bad values."""
    command = rng.choice(["solve", "compare", "sweep", "explain", "simulate", "catalog", "validate", "unknown"])
    w = valid_workload(rng)
    files = {"w.yaml": to_yaml(w)}
    if command == "solve":
        argv = ["solve", "{dir}/w.yaml", "--format", rng.choice(["json", "table", "csv", "markdown", "xml"])]
        if rng.random() < 0.5:
            argv += ["--time-limit-s", _flag_value(rng, ["0.3", "1", "5"])]
        if rng.random() < 0.2:
            argv += ["--write-lp", rng.choice(["{dir}/p.lp", "{dir}/no/p.lp", "{dir}"])]
        if rng.random() < 0.2:
            argv += ["--confidence", _flag_value(rng, ["0.1", "0.5", "0.9", "0.99"])]
        if rng.random() < 0.1:
            argv += ["--as-of", rng.choice(["2026-12-02", "1999-01-01", "2026-13-01", "x"])]
        if rng.random() < 0.2:
            argv += ["--output", rng.choice(["{dir}/o.txt", "{dir}/missing/o.txt", "{dir}"])]
    elif command == "compare":
        argv = ["compare", "{dir}/w.yaml", "--format", rng.choice(["json", "table", "markdown"]), "--sort", rng.choice(["cost", "gpus", "ttft", "headroom", "bogus"])]
        if rng.random() < 0.3:
            argv.append("--per-provider")
        if rng.random() < 0.2:
            argv += ["--confidence", _flag_value(rng, ["0.1", "0.5", "0.9", "0.99"])]
    elif command == "sweep":
        option, good = rng.choice(
            [
                ("--requests-per-s", ["1,2", "0.5:4:3", "10"]),
                ("--scale", ["0.5,2", "1:3:3"]),
                ("--price-scale", ["0.5,1", "0.8:1.2:3"]),
                ("--ttft-p99-s", ["0.5,2", "1:4:3"]),
                ("--tpot-p99-s", ["0.03,0.1", "0.05:0.2:3"]),
                ("--context-percentile", ["90,99", "95"]),
                ("--confidence", ["0.5,0.9", "0.6:0.95:3"]),
            ]
        )
        argv = ["sweep", "{dir}/w.yaml", option, _flag_value(rng, good), "--quiet", "--format", rng.choice(["json", "csv", "table"])]
        if option == "--price-scale" and rng.random() < 0.5:
            argv += ["--price-device", rng.choice(w["search"]["devices"] + ["NoSuchGPU"])]
        if rng.random() < 0.4:
            argv += ["--time-limit-s", _flag_value(rng, ["1", "5", "20"])]
    elif command == "explain":
        argv = ["explain", "--model", rng.choice(MODELS + ["no-such-model", "x" * 300, "~nosuchuser/m", "a\x01b"]), "--device", rng.choice(DEVICES + ["NoSuchGPU"]), "--format", "json"]
        for flag, good in [("--tp", ["1", "2", "8"]), ("--pp", ["1", "2"]), ("--kv-dtype", ["bf16", "fp8", "int4"]), ("--context-tokens", ["128", "8192", "131072"]),
                           ("--gpu-memory-utilization", ["0.5", "0.9"]), ("--block-size", ["1", "16", "32"]), ("--max-num-seqs", ["1", "256"]), ("--engine", ["vllm", "sglang", "trtllm", "llamacpp"]),
                           ("--speculative-tokens", ["0", "4"]), ("--shared-prefix-tokens", ["0", "1000"]), ("--weight-dtype", ["bf16", "fp8", "int4"]), ("--max-model-len", ["4096", "100"]),
                           ("--engine-version", ["0.11.0", "0.19", "0.5.5", "9.9"]), ("--kv-cache-dtype", ["auto", "fp8_e4m3", "fp8"]), ("--quantization", ["fp8", "awq", "none"]),
                           # SGLang's and trtllm-serve's spellings (refused under another --engine)
                           ("--context-length", ["4096", "100"]), ("--page-size", ["1", "16"]), ("--chunked-prefill-size", ["8192"]), ("--tp-size", ["2"]),
                           ("--tp_size", ["1", "2"]), ("--max_batch_size", ["64"]), ("--max_seq_len", ["8192"]), ("--kv_cache_free_gpu_memory_fraction", ["0.9", "1.5"]),
                           ("--backend", ["pytorch", "tensorrt"]), ("--extra_llm_api_options", ["{dir}/o.yaml", "{dir}/missing.yaml"]),
                           # llama-server's (refused without --engine llamacpp)
                           ("-m", ["llama-3.1-8b-Q8_0.gguf", "qwen3-8b-BF16.gguf", "x.gguf", "llama-3.1-8b-Q9_9.gguf"]), ("-c", ["16384", "2"]), ("-np", ["4", "64"]),
                           ("-ngl", ["999", "3"]), ("--cache-type-k", ["q8_0", "q4_0", "fp8"]), ("--cache-type-v", ["f16", "q4_0"]), ("--flash-attn", ["on", "off", "maybe"]),
                           ("--split-mode", ["layer", "row"]), ("--tensor-split", ["1,1", "3,1", "a"])]:
            if rng.random() < (0.25 if not flag.startswith(("--context-length", "--page-size", "--chunked", "--tp-size", "--tp_", "--max_", "--kv_cache", "--backend", "--extra", "-m", "-c", "-np", "-ngl", "--cache-type", "--flash", "--split", "--tensor-split")) else 0.08):
                argv += [flag, _flag_value(rng, good)]
        files["o.yaml"] = rng.choice([
            "kv_cache_config: {dtype: fp8}\n", "kv_cache_config: {dtype: fp8, tokens_per_block: 16, enable_block_reuse: false}\n",
            "kv_cache_config: {free_gpu_memory_fraction: 2}\n", "kv_cache_config: [1]\n", "- a\n", "", "cuda_graph_config: {max_batch_size: 8}\n",
            "kv_cache_config: {dtype: 7}\n", "kv_cache_config: {tokens_per_block: 0}\n", "{{{\n",
        ])
    elif command == "simulate":
        files["w.yaml"] = to_yaml({"model": rng.choice(["llama-3.1-8b", "qwen3-8b"]), "traffic": {"requests_per_s": _loguniform(rng, 0.5, 20), "prompt_tokens": _lengths(rng, 50, 2000), "output_tokens": _lengths(rng, 5, 300)}})
        argv = ["simulate", "{dir}/w.yaml", "--plan", rng.choice(["H100-SXM,1,1,bf16,bf16", "L40S,1,1,fp8,fp8", "H100-SXM,0,1,bf16,bf16", "H100-SXM,1,1,bf16", "X,1,1,bf16,bf16", "H100-SXM,1,1,bf16,zz"]),
                "--duration-s", _flag_value(rng, ["5", "20", "60"]), "--format", rng.choice(["json", "table"]), "--seed", _flag_value(rng, ["0", "7"])]
        if rng.random() < 0.3:
            argv += ["--replicas", _flag_value(rng, ["1", "3"])]
    elif command == "catalog":
        argv = ["catalog", rng.choice(["gpus", "prices", "models", "nothing"]), "--format", rng.choice(["json", "table"])]
    elif command == "validate":
        rows = [
            "model_path,system,backend,backend_version,precision,mode,isl,osl,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms",
        ]
        for _ in range(rng.randint(0, 5)):
            rows.append(",".join([rng.choice(["meta-llama/Llama-3.1-8B", "x", ""]), rng.choice(["h100_sxm", "b200_sxm", "zz"]), rng.choice(["vllm", "trtllm", "sglang", "?"]), "0.10", rng.choice(["fp8", "bf16", "q"]),
                                  rng.choice(["aggregated", "x"]), _flag_value(rng, ["1024"]), _flag_value(rng, ["128"]), _flag_value(rng, ["8"]), _flag_value(rng, ["1", "2"]), "1", "1", "1", "1", _flag_value(rng, ["50"]), _flag_value(rng, ["10"])]))
        files["m.csv"] = "\n".join(rows) + "\n"
        argv = ["validate", "--measurements", "{dir}/m.csv", "--format", rng.choice(["json", "table", "csv"]), "--rows", rng.choice(["all", "none"])]
    else:
        argv = [rng.choice(["sovle", "--version", "--help", "solve --help", ""])]
        argv = [a for a in " ".join(argv).split(" ") if a]
    return Case(kind=f"flags-{command}", files=files, argv=[argv], repeat=rng.random() < 0.15)


def relation_case(rng: random.Random) -> Case:
    """Two commands whose answers must relate (check_relation)."""
    w = valid_workload(rng)
    w.pop("constraints", None)
    relation = rng.choice(["double_demand", "add_constraint", "remove_device", "lower_price", "loosen_slo", "fp8_kv", "raise_confidence", "paste_launch", "compare_rows"])
    files = {"a.yaml": to_yaml(w)}
    solve_a = ["solve", "{dir}/a.yaml", "--format", "json"]
    if relation == "double_demand":
        b = json.loads(json.dumps(w))
        t = b["traffic"]
        if "profile" in t:
            t["profile"] = [2 * x for x in t["profile"]]
        else:
            t["requests_per_s"] = 2 * t["requests_per_s"]
        files["b.yaml"] = to_yaml(b)
        argv = [solve_a, ["solve", "{dir}/b.yaml", "--format", "json"]]
    elif relation == "add_constraint":
        b = json.loads(json.dumps(w))
        b["constraints"] = constraints(rng, b["search"]["devices"], restricting_only=True)
        files["b.yaml"] = to_yaml(b)
        argv = [solve_a, ["solve", "{dir}/b.yaml", "--format", "json"]]
    elif relation == "remove_device":
        w["search"]["devices"] = rng.sample(DEVICES, rng.randint(2, 3))
        files["a.yaml"] = to_yaml(w)
        b = json.loads(json.dumps(w))
        b["search"]["devices"].pop(rng.randrange(len(b["search"]["devices"])))
        files["b.yaml"] = to_yaml(b)
        argv = [solve_a, ["solve", "{dir}/b.yaml", "--format", "json"]]
    elif relation == "lower_price":
        scale = rng.choice(["0.5,1", "0.9,1", "0.25,1"])
        argv = [["sweep", "{dir}/a.yaml", "--price-scale", scale, "--quiet", "--format", "json"] + (["--price-device", rng.choice(w["search"]["devices"])] if rng.random() < 0.5 else [])]
    elif relation == "raise_confidence":  # SLOs held at a higher quantile of the model's error: never a cheaper plan
        low, high = sorted(rng.sample(["0.1", "0.5", "0.75", "0.9", "0.99"], 2), key=float)
        argv = [solve_a + ["--confidence", low], solve_a + ["--confidence", high]]
    elif relation == "paste_launch":  # each launch line solve prints, pasted into explain (check_relation runs it)
        argv = [solve_a]
    elif relation == "compare_rows":  # compare's row of a device is solve's best fleet on it
        argv = [solve_a, ["compare", "{dir}/a.yaml", "--format", "json"]]
    elif relation == "loosen_slo":
        lo = _loguniform(rng, 0.02, 0.2)
        argv = [["sweep", "{dir}/a.yaml", "--tpot-p99-s", f"{lo:g},{lo * rng.choice([1.5, 2, 4]):g}", "--quiet", "--format", "json"]]
    else:
        device = rng.choice(["H100-SXM", "H200-SXM", "MI300X", "L40S", "B200"])
        common = ["--model", rng.choice(MODELS), "--device", device, "--tp", rng.choice(["1", "2", "4", "8"]), "--context-tokens", str(rng.choice([512, 4096, 32768])), "--format", "json"]
        argv = [["explain", *common, "--kv-dtype", "bf16"], ["explain", *common, "--kv-dtype", "fp8"]]
    return Case(kind="relation", files=files, argv=argv, relation=relation)


GENERATORS = {
    "measurements": measurements_case,
    "user_prices": user_prices_case,
    "gpus": gpus_case,
    "workload": workload_case,
    "yaml": yaml_text_case,
    "trace": trace_case,
    "config": config_case,
    "prices": prices_case,
    "flags": flags_case,
    "relation": relation_case,
}
WEIGHTS = {"workload": 30, "yaml": 6, "trace": 8, "config": 10, "prices": 6, "user_prices": 5, "gpus": 4, "flags": 25, "relation": 15, "measurements": 6}


def generate(seed: int, kind: str | None = None) -> Case:
    """The case of a seed (and of a kind, or one drawn by WEIGHTS)."""
    rng = random.Random(seed)
    if kind is None:
        kind = rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()))[0]
    case = GENERATORS[kind](rng)
    case.seed = seed
    return case


# ------------------------------------------------------------------------------------------------
# running
# ------------------------------------------------------------------------------------------------


def write_files(case: Case, folder: Path) -> None:
    for name, text in case.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
    if any(n.startswith("cat/") for n in case.files):
        shipped = ROOT / "catalogs"
        for name in ("gpus.yaml", "prices.yaml", "models", "efficiency.json", "measurements", "datasets.yaml"):
            target = folder / "cat" / name
            if not target.exists():
                target.symlink_to(shipped / name)


def run_main(argv: list[str]) -> Run:
    """sizer.cli.main in this process, its output captured."""
    from sizer.cli import main

    out, err = io.StringIO(), io.StringIO()
    start = time.monotonic()
    code, escaped = 0, None
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # a warning printed once per process would hide in a long run
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException:  # noqa: BLE001 - the point is to see it
                escaped = traceback.format_exc()
                code = -1
    return Run(argv=argv, code=code, out=out.getvalue(), err=err.getvalue(), wall_s=time.monotonic() - start, escaped=escaped)


def run_case(case: Case, folder: Path) -> tuple[str, str]:
    """Run every command of a case in `folder`; (outcome, detail)."""
    write_files(case, folder)
    runs = []
    for argv in case.argv:
        args = [a.replace("{dir}", str(folder)) for a in argv]
        r = run_main(args)
        runs.append(r)
        outcome = classify(r)
        if outcome[0] != "ok":
            return outcome
        problem = check_run(r)
        if problem:
            return "violation", problem
    if case.repeat and runs and runs[0].code == 0:
        again = run_main(runs[0].argv)
        limit = _time_limit(runs[0].argv)
        # a run the deadline may have cut (a plan not proven optimal, a constraint not re-solved,
        # exit 10) depends on the machine's speed: the same bytes are owed where neither run came
        # near its limit
        near = limit is not None and max(runs[0].wall_s, again.wall_s) >= 0.5 * limit
        if again.out != runs[0].out and not near:
            return "nondeterministic", f"two runs of the same command differ ({len(runs[0].out)} and {len(again.out)} characters)"
    if case.relation:
        problem = check_relation(case.relation, runs, folder)
        if problem:
            return "violation", problem
    return ("ok" if all(r.code == 0 for r in runs) else "refused"), ""


def classify(r: Run) -> tuple[str, str]:
    """ok (exit 0, checked further) / refused / traceback, with what was wrong."""
    if r.escaped:
        return "traceback", r.escaped.strip().splitlines()[-1]
    if r.code == INTERNAL or "Traceback (most recent call last)" in r.err:
        return "traceback", r.err.strip().splitlines()[-1] if r.err.strip() else "exit 70"
    if r.code == 0:
        return "ok", ""
    if r.code not in DOCUMENTED_EXIT_CODES:
        return "violation", f"exit code {r.code} is not documented: {r.err.strip()[:200]}"
    if r.code == 11:  # simulate: the plan misses its SLO in simulation (an answer, with its FAIL line)
        return "refused", "simulate: FAIL"
    # one line per error (a price file with several bad rows: one line for each, README), after
    # any warnings about the inputs
    lines = [line for line in r.err.splitlines() if not line.startswith("warning: ")]
    if not lines or not all(line.startswith("error: ") for line in lines):
        return "violation", f"a refusal (exit {r.code}) is not 'error: ' lines only: {r.err[:300]!r}"
    if r.out:
        return "violation", f"a refusal (exit {r.code}) printed to stdout: {r.out[:200]!r}"
    return "refused", lines[0][:160]


def _time_limit(argv: list[str]) -> float | None:
    if "--time-limit-s" in argv:
        try:
            return float(argv[argv.index("--time-limit-s") + 1])
        except (IndexError, ValueError):
            return None
    return None


def command_timeout_s(argv: list[str], per_command_s: float) -> float:
    """How long a command may run before it counts as a hang: `per_command_s`, sizer's default
    time limit and a margin; a sweep without --time-limit-s has the default per point."""
    if argv and argv[0] == "sweep" and _time_limit(argv) is None:
        for option in ("--requests-per-s", "--scale", "--price-scale", "--ttft-p99-s", "--tpot-p99-s", "--context-percentile", "--confidence"):
            if option in argv and argv.index(option) + 1 < len(argv):
                text = argv[argv.index(option) + 1]
                try:
                    points = int(text.split(":")[2]) if text.count(":") == 2 else len([x for x in text.split(",") if x.strip()])
                except ValueError:
                    points = 1
                return per_command_s * max(1, min(points, 1000))
    return per_command_s


def check_run(r: Run) -> str | None:
    """Invariants of one successful command."""
    limit = _time_limit(r.argv)
    if limit is not None and math.isfinite(limit) and r.wall_s > limit * 1.1 + 2.0:
        return f"--time-limit-s {limit:g} but the command took {r.wall_s:.1f} s"
    if r.code != 0:
        return None
    if "--format" in r.argv and r.argv[r.argv.index("--format") + 1] == "json" and "--output" not in r.argv:
        try:
            data = json.loads(r.out, parse_constant=_refuse_constant)
        except ValueError as exc:
            return f"not strict JSON: {exc}"
        if r.argv[0] == "solve":
            return check_plan(data)
        if r.argv[0] == "validate" and "--measurements" in r.argv:
            return check_validate(data, Path(r.argv[r.argv.index("--measurements") + 1]))
    return None


def check_validate(report: dict, path: Path) -> str | None:
    """Every row of the file comes back, modelled or skipped (never dropped), and every predicted
    figure of a modelled row is positive (or null: not predicted)."""
    import csv

    with open(path, newline="", encoding="utf-8") as fh:
        given = sum(1 for _ in csv.DictReader(fh))
    back = len(report["rows"]) + len(report["skipped"])
    if back != given:
        return f"validate: {given} rows given, {len(report['rows'])} modelled + {len(report['skipped'])} skipped"
    for row in report["rows"]:
        for key in ("predicted_ttft_ms", "predicted_tpot_ms", "predicted_tokens_per_s", "measured_ttft_ms", "measured_tpot_ms", "measured_tokens_per_s"):
            if row.get(key) is not None and not row[key] >= 0:
                return f"validate: row {row['id']}: {key} = {row[key]}"
    return None


def _refuse_constant(name: str):
    raise ValueError(f"{name} in JSON output")


def check_plan(plan: dict) -> str | None:
    """A plan keeps its own bounds and carries its demand."""
    slo = plan["workload"]["slo"]
    ttft, tpot = slo["ttft_s"].get("p99"), slo["tpot_s"].get("p99")
    for where in ("deployments", "alternatives"):
        for d in plan[where]:
            label = f"{where[:-1]} {d['device']} tp={d['tp']} pp={d['pp']} kv={d['kv_dtype']} weights={d['weight_dtype']}"
            if d["load_rps_per_replica"] > d["max_rate_rps_per_replica"] * (1 + 1e-6) + 1e-9:
                return f"{label}: load {d['load_rps_per_replica']} req/s per replica > its max rate {d['max_rate_rps_per_replica']}"
            # the p99s at the plan's confidence, as it was sized (null: unbounded, a queue that never drains)
            if ttft is not None and (d["ttft_p99_s"] is None or d["ttft_p99_s"] > ttft * (1 + 1e-6)):
                return f"{label}: TTFT p99 {d['ttft_p99_s']} s > bound {ttft} s at {d['load_rps_per_replica']} req/s per replica (max {d['max_rate_rps_per_replica']})"
            if tpot is not None and (d["tpot_p99_s"] is None or d["tpot_p99_s"] > tpot * (1 + 1e-6)):
                return f"{label}: TPOT p99 {d['tpot_p99_s']} s > bound {tpot} s at {d['load_rps_per_replica']} req/s per replica (max {d['max_rate_rps_per_replica']})"
    demand = plan["workload"]["requests_per_s"]
    shares: dict[str, float] = {}
    for d in plan["deployments"]:
        shares[d["size_range"]] = shares.get(d["size_range"], 0.0) + d["replicas"] * d["max_rate_rps_per_replica"]
    if len(plan["size_ranges"]) > 1:
        return None  # buckets route loads between pools: the program's capacity rows hold it
    # (a plan without buckets has one range, `all`: `if plan["size_ranges"]` skipped this check on
    # every plan)
    if sum(shares.values()) < demand * (1 - 1e-6):
        return f"the plan's replicas carry {sum(shares.values()):g} req/s < the demand {demand:g}"
    return None


def _cost(r: Run) -> float | None:
    if r.code != 0:
        return None
    data = json.loads(r.out)
    return data["cost_usd_per_hour"] if data.get("status") == "optimal" else None


def check_relation(relation: str, runs: list[Run], folder: Path) -> str | None:
    tol = 1e-6
    if relation in ("double_demand", "add_constraint", "remove_device", "raise_confidence"):
        a, b = runs
        if a.code == 0 and b.code == 9:
            if relation == "double_demand" and json.loads(a.out)["status"] == "optimal":
                return None  # more demand may be infeasible (budget, availability, per-device limits)
            return None
        if a.code == 9 and b.code == 0 and relation != "double_demand":
            return f"{relation}: infeasible before, feasible after"
        if a.code == 9 and b.code == 0:
            return "double_demand: infeasible at the demand, feasible at twice it"
        ca, cb = _cost(a), _cost(b)
        if ca is not None and cb is not None and cb < ca * (1 - tol) - tol:
            return f"{relation}: cost fell from ${ca:.6f}/hour to ${cb:.6f}/hour"
        return None
    if relation in ("lower_price", "loosen_slo"):
        (r,) = runs
        if r.code != 0:
            return None
        points = json.loads(r.out)["points"]
        # price: the first value is the lower price; SLO: the second is the looser bound
        cheap, dear = (points[0], points[1]) if relation == "lower_price" else (points[1], points[0])
        if cheap["status"] == "infeasible" and dear["status"] == "optimal":
            return f"{relation}: infeasible at the {'lower price' if relation == 'lower_price' else 'looser bound'}, feasible otherwise"
        if cheap["status"] == dear["status"] == "optimal" and cheap["cost_usd_per_hour"] > dear["cost_usd_per_hour"] * (1 + tol) + tol:
            if relation == "loosen_slo" and check_loosen(folder / "a.yaml", r.argv):
                return None
            return f"{relation}: cost rose from ${dear['cost_usd_per_hour']}/hour to ${cheap['cost_usd_per_hour']}/hour"
        return None
    if relation == "paste_launch":
        return check_paste_launch(runs[0], folder)
    if relation == "compare_rows":
        return check_compare_rows(*runs)
    if relation == "fp8_kv":
        bf16, fp8 = runs
        if bf16.code == 0 and fp8.code == 0:
            a, b = json.loads(bf16.out)["max_concurrency"], json.loads(fp8.out)["max_concurrency"]
            if b < a:
                return f"fp8 KV admits {b} sequences, bf16 {a}"
        elif bf16.code == 0 and fp8.code not in (0, 7, 8, 9):
            return f"fp8 KV refused (exit {fp8.code}) where bf16 was served"
        return None
    return None


def workload_flags(doc: dict) -> list[str]:
    """What a workload says that no launch line carries, as explain's options: the engine's
    release (`engine_version`), a shared prompt prefix (prefix caching is on by default in vLLM
    and SGLang: no flag) and the positions speculative decoding reserves per sequence."""
    mem = doc.get("memory") or {}
    out = ["--engine-version", str(doc["engine_version"])] if doc.get("engine_version") else []
    if mem.get("shared_prefix_tokens"):
        out += ["--shared-prefix-tokens", str(mem["shared_prefix_tokens"])]
    if mem.get("speculative_tokens"):
        out += ["--speculative-tokens", str(mem["speculative_tokens"])]
    return out


def explain_argv(d: dict, folder: Path) -> list[str]:
    """The `sizer explain` command a user builds from a deployment's launch line: the whole line
    after the model, with the device (the line does not name it). trtllm-serve's options file is
    written where the line's `echo` writes it. A line that cannot make the plan's weights says so
    in a shell comment (`# weights int4: sized for ... in int4, which this checkpoint (bf16) is
    not: serve such a checkpoint in its place`); a user following it gives those weights
    (`--weight-dtype`), as one gives a TensorRT-LLM line's (it serves the checkpoint it names)."""
    import re
    import shlex

    line, _, note = d["launch_command"].partition("  # ")
    m = re.match(r"weights (\S+):", note)
    weights = ["--weight-dtype", m.group(1)] if m else []
    if "&&" in line:
        echo, line = line.split("&&", 1)
        content, name = re.fullmatch(r"\s*echo '(.*)' > (\S+)\s*", echo).groups()
        (folder / name).write_text(content)
        line = line.replace(name, str(folder / name))
    argv = shlex.split(line)
    if argv[:2] == ["vllm", "serve"]:
        return ["explain", "--device", d["device"], "--model", argv[2], *argv[3:], *weights]
    if argv[:3] == ["python3", "-m", "sglang.launch_server"]:
        return ["explain", "--engine", "sglang", "--device", d["device"], *argv[3:], *weights]
    if argv[0] == "trtllm-serve":
        return ["explain", "--engine", "trtllm", "--device", d["device"], "--model", argv[1], *argv[2:], "--weight-dtype", d["weight_dtype"]]
    if argv[0] == "llama-server":
        return ["explain", "--engine", "llamacpp", "--device", d["device"], *argv[1:], *weights]
    raise ValueError(f"a launch line of no known engine: {line}")


def check_paste_launch(solved: Run, folder: Path) -> str | None:
    """Every launch line of a plan (its deployments and each device's best), pasted into
    `sizer explain` with the device, gives the KV pool, tokens, weights and --max-num-seqs the
    plan reports, and at the workload's percentile context the sequences it says the pool holds."""
    if solved.code != 0:
        return None
    plan = json.loads(solved.out)
    import yaml

    doc = yaml.safe_load((folder / "a.yaml").read_text())
    context = plan["workload"]["context_tokens"]
    for d in plan["deployments"] + plan["alternatives"]:
        # a pool serving one size bucket launches with its bucket's lengths, not the workload's
        whole = d.get("size_range", "all") == "all"
        argv = explain_argv(d, folder) + workload_flags(doc) + (["--context-tokens", str(context)] if whole else []) + ["--format", "json"]
        r = run_main(argv)
        if r.code != 0:
            return f"paste_launch: explain refuses {d['launch_command']!r}: exit {r.code} {r.err.strip()[:200]}"
        e = json.loads(r.out)
        for key in ("kv_tokens", "kv_pool_bytes_per_gpu", "weights_bytes_per_gpu", "max_num_seqs"):
            if e.get(key) != d[key]:
                return f"paste_launch: {d['device']} tp={d['tp']}: {key} {d[key]} in solve, {e.get(key)} from explain of {d['launch_command']!r}"
        if not whole:
            continue
        if e.get("max_model_len") != plan["workload"]["max_model_len"]:
            return f"paste_launch: {d['device']}: max_model_len {plan['workload']['max_model_len']} in solve, {e.get('max_model_len')} from explain"
        if d.get("admission", "percentile") == "percentile" and e["max_concurrency"] != d["max_concurrency"]:
            return f"paste_launch: {d['device']} tp={d['tp']}: {d['max_concurrency']} sequences at {context} tokens in solve, {e['max_concurrency']} from explain"
    return None


COMPARE_KEYS = ("tp", "pp", "kv_dtype", "weight_dtype", "replicas", "gpus", "provider", "usd_per_gpu_hour", "cost_usd_per_hour",
                "cost_usd_per_million_tokens", "max_rate_rps_per_replica", "load_rps_per_replica", "max_concurrency", "price_date", "price_source")


def check_compare_rows(solved: Run, compared: Run) -> str | None:
    """compare's row of a device is the best single-configuration fleet on it: solve's
    alternative for that device, and solve's plan when it is one pool under no constraint."""
    if solved.code != 0 or compared.code != 0:
        return None if solved.code == compared.code or 0 not in (solved.code, compared.code) else f"compare_rows: solve exit {solved.code}, compare exit {compared.code}"
    plan, rows = json.loads(solved.out), {r["device"]: r for r in json.loads(compared.out)["rows"]}
    ds = list(plan["alternatives"])
    if len(plan["deployments"]) == 1 and len(plan["size_ranges"]) <= 1 and not plan["constraints"]:
        ds += plan["deployments"]
    for d in ds:
        r = rows.get(d["device"])
        if r is None or not r["feasible"]:
            return f"compare_rows: {d['device']}: solve has a fleet, compare {'no row' if r is None else 'none: ' + str(r['reason'])}"
        for key in COMPARE_KEYS:
            if r.get(key) != d.get(key):
                return f"compare_rows: {d['device']}: {key} {d.get(key)!r} in solve, {r.get(key)!r} in compare"
    return None


def check_loosen(path: Path, argv: list[str]) -> bool:
    """Whether a cost that rose with a looser TPOT bound is explained by the rate search's
    tolerance: the largest rate of each candidate is found to 1 % (queueing.max_rate), by a
    search of its own under each bound, so a candidate's rate under the looser bound may land up
    to 1 % below its rate under the tighter one, and a replica count flip with it. The exact
    invariant: no candidate feasible under the tighter bound is infeasible under the looser one,
    nor has a rate more than the tolerance (1 % and a hair) below it there. True when it holds
    (the cost rise is the tolerance's), False when some candidate breaks it (a defect)."""
    from dataclasses import replace

    from sizer.candidates import evaluate_candidates
    from sizer.catalog import load_catalog
    from sizer.workload import load_workload

    catalog = load_catalog(None)
    w = load_workload(path, catalog)
    values = [float(v) for v in argv[argv.index("--tpot-p99-s") + 1].split(",")]

    def rates(bound: float) -> dict:
        tp = dict(w.slo.tpot_s)
        tp["p99"] = bound
        ordered = tuple((k, tp[k]) for k in ("p50", "p90", "p95", "p99") if k in tp)
        ev = evaluate_candidates(replace(w, slo=replace(w.slo, tpot_s=ordered)), catalog)
        return {e.config: e.max_rate_rps for e in ev if e.feasible}

    tight, loose = rates(min(values)), rates(max(values))
    return all(loose.get(cfg, 0.0) >= r * (1 - 0.0105) for cfg, r in tight.items())
