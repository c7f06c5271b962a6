"""Measured serving results: reading them, and resolving each row to something the model can
predict (a catalog model, a catalog device, a parallel layout, weight and KV formats) or to the
reason it cannot.

Two sources, one record (MeasuredRow):

    CSV   the column format of aiconfigurator's silicon_sample.csv (../shared/reference/measured/):
          id, model_path, system, backend, backend_version, precision, mode (agg | disagg), isl, osl,
          batch_size, tp_size, pp_size, attention_dp_size, moe_tp_size, moe_ep_size, the prefill_* /
          decode_* layout columns of disaggregated rows, silicon_ttft_ms, silicon_tpot_ms (means, ms)
          and silicon_data_source. Optional extra columns: `concurrency` (overrides the rule below),
          `request_rate_rps` (a rate-based, open-loop measurement), `output_tokens_per_s`
          (a measured throughput), `kv_dtype`, `kind` (concurrency | rate | offline | batch; MLPerf's
          `server` and `interactive` read as rate; default: rate when `request_rate_rps` is given,
          batch when it is `inf`, else concurrency), `dataset` (a named length
          distribution of catalogs/datasets.yaml, e.g. `mlperf-llama2-70b`; then `isl`/`osl` may be
          empty), `replicas` (independent copies of the layout the measured system ran, e.g. 8 for
          8 x TP1 on eight GPUs: the system's rate, throughput, clients and samples/s are divided
          among them), `samples_per_s` (completed requests/s of the system: with a dataset and
          `output_tokens_per_s` it gives the measured output tokens per request), `ttft_p99_ms`,
          `tpot_p99_ms` (the run's p99s: a rate row's are scored against the planner's,
          validate.tail_latencies_s), `max_num_batched_tokens` (the engine's prompt-token budget per step, when the
          run set it), `max_num_seqs` (the most sequences one engine instance ran at once: the launch
          flag the source gives, or the engine's default where it launched without one; requests
          beyond it wait for a slot. Empty: not known, and the KV pool alone caps the batch, since
          harnesses commonly set it to the concurrency), `max_model_len` (the context the engine
          was launched with; empty: the engine's default, for vLLM the model's
          max_position_embeddings, which sets an old release's default step budget),
          `in_process` (yes: a benchmark that drove
          the engine without a server, kind batch or offline (gptSessionBenchmark,
          trtllm-bench, vLLM benchmark_latency / benchmark_throughput) or rate (an MLPerf LoadGen
          harness that hands requests to the engine in its own processes, as AMD's does); no
          per-request front-end overhead in its TTFT, and compiled_engine), `num_prompts` (kind concurrency: the requests
          the measured run sent, warm-up excluded, e.g. benchmark_serving's --num-prompts; with the
          clients it gives the requests each client sent, and so the share of them in the first
          wave, which arrives at once: queueing.wave_share. Empty: the harness default of ten a
          client, queueing.BENCHMARK_WAVES), `batcher_window_ms` and `prefill_group` (kind rate,
          aggregated, one of them a row: how the run's prompts reached a replica when not one by
          one. A harness that gathers the whole system's requests for the window and sends them
          to one replica at once, the replicas in turn (AMD's MLPerf v4.1 harness,
          --enable-batcher with --batcher-threshold); an engine that prefills only once the
          count of prompts wait (AMD's MLPerf v5.0 scheduler). queueing.prompt_groups: the wait
          and the group's prefill add to the row's TTFT), `notes`.
          Cells are read strictly: a number column holding text, a non-positive or infinite
          figure, or a layout size that is not a whole number >= 1 skips the row with the column
          and the value named. Empty, nan, NA, n/a, null, none and - are gaps (not measured); 0 in
          a layout column is aiconfigurator's "not set".
    YAML  catalogs/measurements/published.yaml: rows copied from ../shared/reference/throughput.yaml
          (MLPerf Offline/Server, trtllm-bench offline, batch-1 sweeps), each with source and quote.

What a row measures (`kind`):

    concurrency   a closed loop of N clients, each sending its next request when the last ends
                  (`batch_size` in the CSV). In attention-data-parallel layouts aiconfigurator's
                  batch_size counts requests per attention rank: N = batch_size x attention_dp_size
                  (in the shipped CSV this equals the `silicon_concurrency` of every such row).
    rate          an open loop of Poisson arrivals at `request_rate_rps` (MLPerf Server).
    offline       every request queued at once; only throughput is measured (MLPerf Offline,
                  trtllm-bench throughput). `concurrency`, when given, is the engine's cap on the
                  running batch (max_num_seqs, MLPerf gpu_batch_size).
    batch         one wave of N requests (`concurrency`) sent at once and measured to the last:
                  vLLM's benchmark_throughput / benchmark_latency (--num-prompts N, --batch-size N)
                  and benchmark_serving at an infinite request rate.

Rows that cannot be modelled are returned with a reason (Skipped), never dropped.
"""

from __future__ import annotations

import functools
import hashlib
import io
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from pathlib import Path

from .catalog import Catalog, Gpu, device_key
from .datasets import mlperf_benchmark_base, mlperf_dataset_name
from .engines import resolve_kv_dtype
from .errors import FieldValueError, InputError, InputFileError, SizerError, YamlSyntaxError
from .model import ModelArch
from .perf import Layout
from .schema import Fields, check_regular_file, decode_text, read_document
from .units import KV_DTYPES, normalise_dtype

if TYPE_CHECKING:
    from .workload import LengthDist

# Systems named in aiconfigurator's CSV -> catalog devices.
SYSTEMS = {
    "h100_sxm": "H100-SXM",
    "h200_sxm": "H200-SXM",
    "b200_sxm": "B200",
    "b300_sxm": "B300",
    "gb200": "GB200",
    "gb300": "GB300",
    "a100_sxm": "A100-80GB",
    "l40s": "L40S",
    "h20": "H20",
    "mi300x": "MI300X",
    "mi325x": "MI325X",
    "mi355x": "MI355X",
    "mi350x": "MI350X",
    "h100_pcie": "H100-PCIe",
    "h100_nvl": "H100-NVL",
    "l4": "L4",
    "a100_pcie": "A100-80GB-PCIe",
}

# Words of a system name that say its device is partitioned (a fraction of the chip per logical
# GPU: AMD's NPS2/NPS4 memory and DPX/QPX/CPX compute partitions): such a name names no catalog device.
_PARTITION_WORD = re.compile(r"nps[248]|[dqct]px", re.I)


def device_in_system_name(system: str, catalog: Catalog) -> Gpu | None:
    """The catalog device a whole system's name names, where the name is not a device's: MLPerf's
    submission folders and results-table system names (`8xMI355X_2xEPYC_9575F`,
    `R760xa_L40Sx4_TRT`, `DGX-H100_H100-SXM-80GBx8_TRT`, `Dell PowerEdge XE9680 (8x
    H100-SXM-80GB, TensorRT)`). The name is cut into words at underscores, hyphens, spaces,
    commas, slashes and parentheses, each word's count (`8x`, `x4`) dropped; the longest runs of
    consecutive words that name a catalog device (Catalog.gpu, joined by hyphens) decide. None when
    no run names one, when the longest name different devices, when a word says the device is
    partitioned, or when the run is a bare chip several devices share (`ESC8000A_E12_H100x8_TRT`
    ran H100 PCIe cards, `NC_H100_v5_TRT` H100 NVL: `H100` alone names neither)."""
    words = _system_words(system)
    if not words or any(_PARTITION_WORD.fullmatch(w) for w in words):
        return None
    chips: dict[str, int] = {}
    for g in catalog.gpus:
        chip = device_key(g.name.split("-")[0])
        chips[chip] = chips.get(chip, 0) + 1
    for n in range(len(words), 0, -1):
        found: dict[str, Gpu] = {}
        for i in range(len(words) - n + 1):
            run = "-".join(words[i : i + n])
            try:
                g = catalog.gpu(run)
            except SizerError:
                continue
            found[g.name] = None if chips.get(device_key(run), 0) > 1 else g
        if found:
            (g,) = found.values() if len(found) == 1 else (None,)
            return g
    return None


# Checkpoints whose architecture is a catalog model's: the weight format is the row's precision.
SAME_ARCHITECTURE = {
    "nvidia/deepseek-r1-nvfp4": "deepseek-r1",
    "nvidia/deepseek-v3.1-nvfp4": "deepseek-v3",
    "nvidia/llama-3.1-8b-instruct-fp8": "llama-3.1-8b",
    "nvidia/qwen3-32b-nvfp4": "qwen3-32b",
    "meta-llama/llama-3.1-70b": "llama-3.1-70b",
    "meta-llama/llama-3.3-70b-instruct": "llama-3.1-70b",
    "nvidia/llama-3.3-70b-instruct-fp8": "llama-3.1-70b",
    "nvidia/llama-3.3-70b-instruct-fp4": "llama-3.1-70b",
    "meta-llama/llama-3.1-8b-instruct": "llama-3.1-8b",
    # AMD's FP8 checkpoints with an FP8 KV-cache scale (Quark), as AMD's ROCm vLLM tables name them
    "amd/llama-3.1-70b-instruct-fp8-kv": "llama-3.1-70b",
    "amd/llama-3.1-405b-instruct-fp8-kv": "llama-3.1-405b",
}

# Architectures the step-time model does not describe, and why (model_type -> reason). Empty
# since Gated DeltaNet layers (Qwen3-Next, Qwen3.5) are modelled: their state in memory
# (engines.py) and in the step time (perf.py).
UNMODELLED: dict[str, str] = {}

ENGINES = ("vllm", "sglang", "trtllm")
# Other spellings of the engines a results table may give in its backend column (letters and
# digits only, lower case): MLPerf's system descriptions write "TensorRT-LLM" in `framework`.
ENGINE_SPELLINGS = {"tensorrtllm": "trtllm", "trtllm": "trtllm", "vllm": "vllm", "sglang": "sglang"}


def engine_name(backend: str) -> str:
    """The engine a backend cell names (ENGINES), or the cell lower-cased if it names none. A cell
    that says more than the engine (`vllm-rocm`, `ROCm vLLM 0.9`, MLPerf's software column
    `TensorRT 10.8, CUDA 12.8`, whose LLM harness is TensorRT-LLM's) names the one engine it
    mentions; a cell mentioning two names neither."""
    cell = backend.lower()
    squashed = re.sub(r"[^a-z0-9]", "", cell)
    if squashed in ENGINE_SPELLINGS:
        return ENGINE_SPELLINGS[squashed]
    found = {e for word, e in (("tensorrt", "trtllm"), ("trtllm", "trtllm"), ("vllm", "vllm"), ("sglang", "sglang")) if word in squashed}
    if re.search(r"(?<![a-z])trt(?![a-z])", cell):
        found.add("trtllm")
    return found.pop() if len(found) == 1 else cell

# KV-cache format when the measurement does not say (no kv_dtype column): each engine's default.
#   trtllm: KvCacheConfig dtype "auto" takes the checkpoint's kv_cache_quant_algo; NVIDIA's FP8 and
#           NVFP4 checkpoints (and TRT-LLM's FP8 recipes) ship FP8 KV -> fp8 for fp8/fp4 rows.
#   vllm:   --kv-cache-dtype auto = the model dtype (bf16).
#   sglang: --kv-cache-dtype auto = the model dtype (bf16).
DEFAULT_KV = {"trtllm": {"fp8": "fp8", "fp4": "fp8", "nvfp4": "fp8"}, "vllm": {}, "sglang": {}}

# A row's precision in an FP8 or FP4 format, however its source spelt the FP4 one (`fp4`, `nvfp4`,
# `mxfp4`: an MLPerf transcriber writes what the submission's README says).
FLOAT8_OR_4 = ("fp8", "fp4", "nvfp4", "mxfp4")

# Launch flags of the harness that measured a row, where the row does not record them. The
# aiconfigurator rows whose silicon_data_source is a dated export (source_file=YYYY-MM-DD.csv) or
# the database dump (db-dump/...) are InferenceX runs (their images, models and config ids are
# InferenceX's), launched by SemiAnalysisAI/InferenceX benchmarks/single_node/fixed_seq_len/*.sh
# (read @843c6254ff69b567f772f6a5fd97675af3d04431; the retired models' scripts under deprecated/).
# Those scripts set an FP8 KV cache on Blackwell (vLLM --kv-cache-dtype fp8, SGLang
# --kv-cache-dtype fp8_e4m3) and, in some, the prompt-token budget per step; the engines'
# defaults (DEFAULT_KV: bf16) would halve the KV pool and double the KV reads of those rows.
# Only unconditional flags are taken (a flag a script sets in one branch of ISL/TP only is not).
# Single-node aggregated rows only: the multi-node (disaggregated) recipes are not read here.
# InferenceX's own dashboard data, as copies of it name it: the InferenceX-app site's API fixtures
# (packages/app/cypress/fixtures/api/, captured from the production API) and run directories of
# official InferenceMAX runs (.../inferencemax/raw/run_<id>/agg_bmk.json): the AMD runners' rows
_DSR1 = ("deepseek-ai/deepseek-r1", "deepseek-ai/deepseek-v3")  # DeepSeek-R1 as InferenceX's exports name it, and V3 (the same network)
INFERENCEX_SOURCE = re.compile(r"db-dump/|source_file=20\d\d-\d\d-\d\d\.csv|InferenceX-app@[0-9a-f]+:packages/app/cypress/fixtures/api/|/inferencemax/raw/run_\d+/")
HARNESS_FLAGS: tuple[tuple[tuple[str, ...], tuple[str, ...], str, tuple[str, ...], dict], ...] = (
    # (model ids, systems, engine, precisions, flags); max_num_batched_tokens "2isl" = 2 x ISL
    # dsr1_fp8_b200.sh, dsr1_fp4_b200.sh, dsr1_fp8_b300.sh, dsr1_fp4_b300.sh: --kv-cache-dtype fp8_e4m3
    (_DSR1, ("b200_sxm", "b300_sxm"), "sglang", ("fp8", "fp4"), {"kv_dtype": "fp8"}),
    # dsr1_fp8_h200.sh: --chunked-prefill-size 32768 in both branches, KV in the model dtype
    (_DSR1, ("h200_sxm",), "sglang", ("fp8",), {"max_num_batched_tokens": 32768}),
    # deprecated/glm5_fp8_b200.sh, glm5_fp8_b300.sh, glm5_fp4_b200.sh: fp8_e4m3 KV, --chunked-prefill-size 32768
    (("zhipuai/glm-5",), ("b200_sxm", "b300_sxm"), "sglang", ("fp8", "fp4"), {"kv_dtype": "fp8", "max_num_batched_tokens": 32768}),
    # deprecated/minimaxm2.5_fp{8,4}_b{200,300}.sh: --kv-cache-dtype fp8 --max-num-batched-tokens $((ISL * 2))
    (("minimaxai/minimax-m2.5",), ("b200_sxm", "b300_sxm"), "vllm", ("fp8", "fp4"), {"kv_dtype": "fp8", "max_num_batched_tokens": "2isl"}),
    # deprecated/minimaxm2.5_fp8_h200.sh: --kv-cache-dtype fp8 (its token budget depends on the branch)
    (("minimaxai/minimax-m2.5",), ("h200_sxm",), "vllm", ("fp8",), {"kv_dtype": "fp8"}),
    # deprecated/kimik2.5_fp4_b200.sh, kimik2.5_fp4_b300.sh: --kv-cache-dtype fp8 (the INT4 scripts keep the default)
    (("moonshotai/kimi-k2.5",), ("b200_sxm", "b300_sxm"), "vllm", ("fp4",), {"kv_dtype": "fp8"}),
    # benchmarks/70b_fp8_{b200,h200,h100}_{docker,slurm}.sh, 70b_fp4_b200_docker.sh @9596d23d7 (2025-10-29, the
    # day the rows were measured and the scripts removed): config.yaml kv-cache-dtype fp8, max-num-batched-tokens 8192
    (("meta-llama/llama-3.1-70b",), ("b200_sxm", "h200_sxm", "h100_sxm"), "vllm", ("fp8", "fp4"), {"kv_dtype": "fp8", "max_num_batched_tokens": 8192}),
    # gptoss_fp4_h200_trt_slurm.sh (@e06929c70, 2025-11-02) and single_node/gptoss_fp4_h200_trt.sh (to @ebb48d4bc):
    # kv_cache_config dtype auto on openai/gpt-oss-120b, whose MXFP4 checkpoint sets no KV quantization: a BF16
    # cache, not DEFAULT_KV's FP8 of NVIDIA's quantized checkpoints (the B200 script sets dtype fp8)
    (("openai/gpt-oss-120b",), ("h200_sxm",), "trtllm", ("fp4",), {"kv_dtype": "bf16"}),
)


# InferenceX's client draws every request's prompt and output length uniformly from
# [int(0.8 L), L] (utils/bench_serving/benchmark_serving.py sample_uniform: randint(int(L x
# range_ratio), L + 1), RANDOM_RANGE_RATIO 0.8 in .github/workflows/benchmark-tmpl.yml and
# benchmark-multinode-tmpl.yml): its "1024x1024" rows ran prompts and outputs of 819-1024 tokens,
# 922 on average, not 1024.
INFERENCEX_RANGE_RATIO = 0.8


# An MLPerf submission that quantises its weights to FP8 or FP4 quantises its KV cache to FP8 with
# them: NVIDIA's TensorRT-LLM harness and AMD's vLLM one (`--kv-cache-dtype fp8` on the FP8-KV
# checkpoints), and their partners' copies. 143 of the 147 shipped MLPerf runs say so in their code;
# the other four (Red Hat's vLLM and Dell's TensorRT-LLM L40S runs) kept FP16 and their rows say so.
MLPERF_QUANTIZED_FLAGS = {"kv_dtype": "fp8"}


def harness_flags(row: "MeasuredRow") -> dict:
    """The conditions the row's harness set (script_flags), and the requests each client sent
    where the row gives the run's `num_prompts` (`requests_per_client`, num_prompts / clients;
    the row's own figure over any harness rule)."""
    out = script_flags(row)
    if row.num_prompts and row.concurrency and row.kind == "concurrency":
        out["requests_per_client"] = row.num_prompts / row.concurrency
    return out


def script_flags(row: "MeasuredRow") -> dict:
    """The conditions the row's harness set and the row does not record: InferenceX's length
    range (`range_ratio`, aggregated and disaggregated rows) and launch flags (HARNESS_FLAGS and,
    for TRT-LLM, trtllm_script_flags: aggregated rows); the launch settings aiconfigurator's
    generator writes, for the rows of aiconfigurator's own gap analysis (aic_generator_flags); an
    MLPerf submission's FP8 KV cache beside FP8 or FP4 weights (MLPERF_QUANTIZED_FLAGS)."""
    if AIC_GAP_SOURCE.search(row.source or ""):
        return aic_generator_flags(row)
    if (row.dataset or "").strip().lower().startswith("mlperf-") and row.precision in FLOAT8_OR_4:
        return dict(MLPERF_QUANTIZED_FLAGS)
    if not INFERENCEX_SOURCE.search(row.source or ""):
        return {}
    out: dict = {"range_ratio": INFERENCEX_RANGE_RATIO}
    if row.mode != "agg":
        cap = inferencex_decode_cap(row)
        if cap:
            out["max_num_seqs"] = cap
        return out
    model, system = row.model_id.strip().lower(), row.system.strip().lower()
    for models, systems, engine, precisions, flags in HARNESS_FLAGS:
        if model in models and system in systems and row.engine == engine and row.precision in precisions:
            out.update(flags)
            if out.get("max_num_batched_tokens") == "2isl":
                out["max_num_batched_tokens"] = 2 * row.isl
            break
    waves = inferencex_requests_per_client(row)
    if waves:
        out["requests_per_client"] = waves
    if row.engine == "trtllm":
        out.update(trtllm_script_flags(row))
    elif row.engine == "sglang":
        out.update(sglang_script_flags(row))
        out.update(qwen35_script_flags(row))
    return out


_QWEN35 = ("qwen/qwen3.5-397b-a17b", "qwen/qwen3.5-397b-a17b-fp8", "nvidia/qwen3.5-397b-a17b-nvfp4")


def qwen35_script_flags(row: "MeasuredRow") -> dict:
    """The launch flags of InferenceX's SGLang scripts for Qwen3.5-397B-A17B on B200, B300 and
    H200, each read at the last commit before the row was measured (SemiAnalysisAI/InferenceX:
    qwen3.5_bf16_b200.sh @9dc87a68c and @c21776093, qwen3.5_fp4_b200.sh @48d35c480,
    qwen3.5_fp8_b200.sh @6a5dad463, qwen3.5_bf16_b300.sh @32274d6c1, qwen3.5_fp4_b300.sh
    @8acbd08b7, qwen3.5_fp8_b300.sh @c0f62a2ef, qwen3.5_fp8_h200.sh @f65d6b4b1). Every one runs
    `--disable-radix-cache`, so SGLang's Gated DeltaNet slots are its --max-running-requests; the
    FP8 and FP4 ones `--kv-cache-dtype fp8_e4m3 --mamba-ssm-dtype bfloat16` (the recurrent state
    in 16 bits, not the config's float32). Then:

        bf16 B200/B300           --mem-fraction-static 0.82 --max-running-requests 128 --chunked-prefill-size 32768
        fp4 B200                 0.85, 128, 32768          fp4 B300   0.8, 128, 32768
        fp8 B200 (from 03-24)    0.82, 128, 32768          fp8 B300   0.8, $CONC, 16384
        fp8 H200                 0.8, 128, 16384
        --scheduler-recv-interval 30 at CONC >= 16, else 10 (B200 and B300; 10 on B300 FP8; unset on H200)

    Rows the scripts cannot explain are refused by inferencex_run_reason."""
    if row.model_id.strip().lower() not in _QWEN35 or row.mode != "agg":
        return {}
    system, precision = row.system.strip().lower(), row.precision
    conc = row.concurrency or 0.0
    flags: dict = {"disable_radix_cache": True}
    if precision in ("fp8", "fp4"):
        flags.update(kv_dtype="fp8", mamba_ssm_dtype="bf16")
    if system == "h200_sxm":
        flags.update(memory_fraction=0.8, max_num_seqs=128, max_num_batched_tokens=16384)
        return flags
    recv = 30 if conc >= 16 else 10
    if precision == "fp8" and system == "b300_sxm":
        flags.update(memory_fraction=0.8, max_num_batched_tokens=16384, recv_interval=10)
        if conc:
            flags["max_num_seqs"] = int(conc)
        return flags
    fraction = {"bf16": 0.82, "fp8": 0.82, "fp4": 0.85 if system == "b200_sxm" else 0.8}.get(precision, 0.82)
    flags.update(memory_fraction=fraction, max_num_seqs=128, max_num_batched_tokens=32768, recv_interval=recv)
    return flags


def inferencex_run_reason(row: "MeasuredRow") -> str | None:
    """Why an InferenceX row is not the run its labels say, where the scripts and configs of its
    day show it (SemiAnalysisAI/InferenceX .github/configs/nvidia-master.yaml), or None."""
    if row.model_id.strip().lower() not in _QWEN35 or not INFERENCEX_SOURCE.search(row.source or ""):
        return None
    system, day = row.system.strip().lower(), measured_on(row)
    if system == "b200_sxm" and row.precision == "fp8" and row.tp == 4 and max(row.moe_ep, 1) == 1 and day == "2026-03-20":
        return ("on 2026-03-20 InferenceX's one Qwen3.5 FP8 B200 config at TP 4 without expert parallelism was its MTP one "
                "(qwen3.5_fp8_b200_mtp.sh @35d4bb367: EAGLE, 4 draft tokens): speculative decoding is not modelled")
    if system == "b300_sxm" and day and day < "2026-04-15":
        return (f"measured {day}, before InferenceX had any Qwen3.5 B300 config (the first, 2026-04-15/17): its layouts and image are "
                "those of that day's B200 configs, so the device is not known")
    return None


# InferenceX's disaggregated TensorRT-LLM points, as .github/configs/nvidia-master.yaml listed them
# between 2025-11-15 and 2026-05-15 (every commit of the file; SemiAnalysisAI/InferenceX @843c6254):
# one line per (config, lengths, spec decoding, concurrency, worker layout) with the srt-slurm recipe
# it ran and the decode batch its file name carries (`..._tep8_batch32_...`), and the commits between
# which the point was listed. Read by inferencex_decode_cap.
INFERENCEX_RECIPES = "inferencex_disagg_recipes.csv"
# the config names' model prefix -> the model ids InferenceX's exports give those rows
_RECIPE_MODELS = {"dsr1": _DSR1, "kimik2.5": ("moonshotai/kimi-k2.5",)}
# runner name prefix (gb200, b200-multinode-slurm, ...) -> the exports' system
_RECIPE_RUNNERS = (("gb200", "gb200"), ("gb300", "gb300"), ("b200", "b200_sxm"), ("b300", "b300_sxm"), ("h200", "h200_sxm"), ("h100", "h100_sxm"))


@functools.lru_cache(maxsize=1)
def inferencex_recipes() -> tuple[dict, ...]:
    """The rows of INFERENCEX_RECIPES: the catalog directory's copy, else the one shipped with sizer
    (installed as sizer/catalogs, or catalogs/ in a checkout), so a user's own catalog
    ($SIZER_CATALOG_DIR) need not carry it; none when neither exists."""
    import csv as _csv

    from .catalog import default_catalog_dir

    here = Path(__file__).resolve().parent
    for base in (default_catalog_dir(), here / "catalogs", here.parent / "catalogs"):
        path = base / INFERENCEX_RECIPES
        if path.is_file():
            break
    else:
        return ()
    out = []
    with path.open(newline="", encoding="utf-8") as f:
        for r in _csv.DictReader(f):
            out.append(
                {
                    "model": r["config"].split("-")[0],
                    "system": next((sys for pre, sys in _RECIPE_RUNNERS if r["runner"].startswith(pre)), ""),
                    "precision": r["precision"],
                    "key": (float(r["isl"]), float(r["osl"]), float(r["concurrency"]), int(r["prefill_workers"]), int(r["prefill_tp"]), r["prefill_dp_attn"] == "yes",
                            int(r["decode_workers"]), int(r["decode_tp"]), r["decode_dp_attn"] == "yes"),
                    "batch": int(r["decode_batch_per_rank"]) if r["decode_batch_per_rank"] else None,
                    "from": r["first_seen"].split()[0],
                    "until": r["gone_from"],
                }
            )
    return tuple(out)


def inferencex_decode_cap(row: "MeasuredRow") -> float | None:
    """The running-request cap of each decode worker of an InferenceX disaggregated TensorRT-LLM
    row whose decode workers run without attention DP (TP or TEP): the batch its srt-slurm recipe's
    file name carries, which is the decode worker's max_batch_size (ishandhanani/srt-slurm
    recipes/trtllm/gb200-fp4/8k1k/mtp/ctx1_gen4_tep8_batch4_eplb0_mtp3.yaml @46d030c5: decode
    max_batch_size 4). With attention DP the name's batch is per worker in one recipe family
    (b200-fp8/8k1k/stp/ctx1_gen1_dep8_batch128_eplb0_mtp0_128.yaml @e71238b3: max_batch_size 16 on
    each of 8 ranks) and per rank in another (gb200-fp4 `dep32_batch4` at 180 clients), so those
    rows get no cap. The row is matched to the master config's points listed on the day it was
    measured by model, system, precision, lengths, concurrency and both workers' count, size and
    attention DP; None when no point matches, when the matching points' recipes disagree (a
    speculative-decoding and a plain recipe of the same layout with different batches: the export
    does not say which ran), or when a recipe's name carries no batch. A row whose clients exceed
    its decode workers' caps waits for a slot (validate._disagg)."""
    if row.mode != "disagg" or row.engine != "trtllm" or row.prefill is None or row.decode is None or not row.concurrency:
        return None
    if row.decode.layout.dp > 1:
        return None  # attention DP: the recipe name's batch is per worker in some families, per rank in others
    date = measured_on(row)
    if not date:
        return None
    model, system = row.model_id.strip().lower(), row.system.strip().lower()
    p, d = row.prefill, row.decode
    d_ranks = max(d.layout.tp, d.layout.dp)
    key = (row.isl, row.osl, row.concurrency, p.workers, max(p.layout.tp, p.layout.dp), p.layout.dp > 1, d.workers, d_ranks, d.layout.dp > 1)
    caps = {
        e["batch"]
        for e in inferencex_recipes()
        if model in _RECIPE_MODELS.get(e["model"], ()) and e["system"] == system and e["precision"] == row.precision and e["key"] == key
        and e["from"] <= date and (not e["until"] or date <= e["until"])
    }
    if len(caps) != 1:
        return None
    cap = caps.pop()
    return float(cap) if cap else None


# aiconfigurator's gap analysis (silicon_data_source .../aic-auto-gap-analysis/data/<system>/<engine>/
# <release>/<model>.csv) measures the configurations aiconfigurator picks, deployed under Dynamo.
AIC_GAP_SOURCE = re.compile(r"/aic-auto-gap-analysis/")


def aic_generator_flags(row: "MeasuredRow") -> dict:
    """The launch settings aiconfigurator's config generator writes for an aggregated worker of
    batch size bs (per attention rank) at the row's ISL, read in ai-dynamo/aiconfigurator: the TRT-LLM
    generator from the first public commit (efcae124c, 2025-08-11, src/aiconfigurator/cli/backends/
    trtllm.py and templates/trtllm/dynamo/extra_engine_args.1.0.0rc3.yaml.j2) through the rule plugins
    (generator/rule_plugin/{trtllm,sglang,vllm}.rule and benchmark/*.rule, 95ddf241a 2025-12-04 to
    b5369e1fb 2026-03-09, with backend_templates/sglang/cli_args.{0.5.1.post1,0.5.6.post2,0.5.8}.j2
    and vllm/cli_args.0.12.0.j2), unchanged over that span:

    TRT-LLM   max_num_tokens = bs + ISL + 1500 (a whole prompt and the decoding batch in one step;
              enable_chunked_prefill false), kv_cache_config.free_gpu_memory_fraction 0.80 (the
              template's default: nothing in the generator sets it)
    SGLang    --max-prefill-tokens ISL + 1500 and --enable-mixed-chunk: the decoding sequences
              share a step's prompt-token budget (scheduler: rem_input_tokens = max_prefill_tokens
              - running batch); --chunked-prefill-size is not written (the release's default)
    vLLM      --max-num-batched-tokens bs + ISL + 1500

    The running-request caps it writes (max_batch_size, --max-running-requests, --max-num-seqs =
    bs) equal each rank's share of the row's concurrency, so they never bind a closed loop and are
    not returned. That these rows ran the generator's settings is an inference: the gap analysis
    compares aiconfigurator's estimates with deployments of the configurations it generates; the
    rows record neither flag. For DeepSeek with MTP the generator writes bs x (1 + nextn) + ISL +
    1500; the rows do not say whether MTP ran, and bs + ISL + 1500 is taken.

    Returned keys: max_num_batched_tokens, max_prefill_tokens, mixed_chunk, memory_fraction."""
    if row.mode != "agg" or not row.isl:
        return {}
    bs = (row.concurrency or 0.0) / max(row.attention_dp, 1)
    if row.engine == "trtllm":
        return {"max_num_batched_tokens": bs + row.isl + 1500, "memory_fraction": 0.80}
    if row.engine == "sglang":
        return {"max_prefill_tokens": row.isl + 1500, "mixed_chunk": True}
    if row.engine == "vllm":
        return {"max_num_batched_tokens": bs + row.isl + 1500}
    return {}


def compiled_engine(row: "MeasuredRow") -> bool:
    """Whether the row's engine ran its network compiled, where sizer's step model takes prefill
    to run eagerly (perf.eager_prefill; `prefill_layer_overhead_s` is the eager host time): a
    TensorRT-LLM release before 1.0 driven in-process. Such a benchmark (gptSessionBenchmark,
    trtllm-bench) runs a TensorRT engine built by trtllm-build, the only runtime of those releases
    (the PyTorch flow was an opt-in preview until 1.0 made it the default), e.g. the perf overview
    of release 0.9.0 (docs/source/performance/perf-overview.md: `trtllm-build ... --context_fmha
    enable --gpt_attention_plugin float16`, then gptSessionBenchmark). A served row's release label
    may be a Dynamo runtime's (0.5.1-0.8.1 in InferenceX's exports), not TensorRT-LLM's, so served
    rows are left to perf.eager_prefill's rule."""
    if row.engine != "trtllm" or not row.in_process:
        return False
    m = re.match(r"v?(\d+)\.", (row.engine_version or "").strip().lower())
    return m is not None and int(m.group(1)) < 1


def reserves_whole_output(row: "MeasuredRow") -> bool:
    """Whether the row's TensorRT-LLM scheduler charged a sequence its whole output from the start:
    TensorRT-LLM's default capacity scheduler policy, GUARANTEED_NO_EVICT, admits a request only
    once blocks for its prompt and its whole output are free. NVIDIA's MLPerf harness, which every
    TensorRT-LLM MLPerf submitter runs (rows labelled `mlperf-*`: resolve gives that label to every
    row measured on an MLPerf dataset, through mlperf_release), launches MAX_UTILIZATION instead,
    which allocates blocks as the output grows (pausing a request when they run out), so its
    sequences are charged like vLLM's, half their output on average: v4.1's C++ harness defaults
    `--trtllm_batch_sched_policy` to max_util and its llama2-70b harness.py passes no other
    (mlcommons/inference_results_v4.1@198fc467: closed/NVIDIA/code/harness/harness_llm/main_llm.cc,
    closed/NVIDIA/code/llama2-70b/tensorrt/harness.py); v5.0's and v6.0's configs set
    `'batch_scheduler_policy': 'max_util'` in their trtllm_runtime_flags (v5.0's llama2-70b
    GPUBaseConfig, closed/Dell/configs/llama2-70b/__init__.py in ntuhpc/mlperf_inference_results_v5.0;
    v6.0's RTX PRO 6000 llama2-70b configs). Every other TensorRT-LLM row: the engine's default."""
    if row.engine != "trtllm":
        return False
    from .efficiency import version_label

    return version_label(row.engine_version, row.engine) != "mlperf"  # the harness label, as mlperf_release reads it


def sglang_script_flags(row: "MeasuredRow") -> dict:
    """The settings of InferenceX's SGLang launch scripts for DeepSeek-R1 on B200 that depend on
    the row's concurrency, layout or date (SemiAnalysisAI/InferenceX, read @843c6254; the
    unconditional FP8 KV cache is in HARNESS_FLAGS):

    dsr1_fp8_b200{,_docker,_slurm}.sh   from 6be2c6997 (2025-09-23): `--scheduler-recv-interval` 30 at
                                        CONC >= 16, else 10; `--max-running-requests 128
                                        --mem-fraction-static 0.82 --chunked-prefill-size 32768`. From
                                        64af5a771 (2026-01-21) that is the TP=8 branch; TP=4 runs
                                        `--max-running-requests 32 --mem-fraction-static 0.95
                                        --chunked-prefill-size 8192 --scheduler-recv-interval 10`
    dsr1_fp4_b200{,_docker,_slurm}.sh   `--scheduler-recv-interval` 30 at CONC >= 16, else 10;
                                        `--max-running-requests 256 --mem-fraction-static 0.85
                                        --chunked-prefill-size 16384` (without attention DP, the only
                                        branch until 94d496862, 2026-06-23)

    The scripts set the running-request cap (with --cuda-graph-max-bs) "as the maximum concurrency",
    and the workflow's search space stays within it (.github/configs/nvidia-master.yaml
    dsr1-fp8-b200-sglang @12ba0ae07, 2026-03-25: CONC 4-64 at TP 8). A row run at a higher
    concurrency was launched some other way: its cap is not known, and the KV pool decides. (The
    six such rows, CONC 256 and 512 at TP 8, ran 239-491 sequences at once by their own throughput
    x TPOT, where a cap of 128 would have held them to 128.)

    Returned keys: recv_interval (queueing.ContextHold), max_num_seqs (the running-request cap),
    memory_fraction, max_num_batched_tokens."""
    model, system = row.model_id.strip().lower(), row.system.strip().lower()
    if model in (*_DSR1, "deepseek-ai/deepseek-r1-0528") and system in ("mi300x", "mi325x", "mi355x") and max(row.attention_dp, 1) == 1:
        return amd_sglang_script_flags(row)
    if model not in _DSR1 or system != "b200_sxm" or max(row.attention_dp, 1) > 1:
        return {}
    conc = row.concurrency or 0.0
    recv = 30 if conc >= 16 else 10
    if row.precision == "fp8":
        if row.tp == 4 and measured_on(row) >= "2026-01-21":
            flags = {"recv_interval": 10, "max_num_seqs": 32, "memory_fraction": 0.95, "max_num_batched_tokens": 8192}
        else:
            flags = {"recv_interval": recv, "max_num_seqs": 128, "memory_fraction": 0.82, "max_num_batched_tokens": 32768}
    elif row.precision == "fp4":
        flags = {"recv_interval": recv, "max_num_seqs": 256, "memory_fraction": 0.85, "max_num_batched_tokens": 16384}
    else:
        return {}
    if conc > flags["max_num_seqs"]:
        del flags["max_num_seqs"]  # beyond the concurrency the script was written for: another launch
    return flags


_MEASURED_ON = re.compile(r"measured=(\d{4}-\d{2}-\d{2})")


def amd_sglang_script_flags(row: "MeasuredRow") -> dict:
    """The decode-step hold of InferenceX's SGLang scripts for DeepSeek-R1 on AMD's runners
    (dsr1_fp8_mi300x, dsr1_fp8_mi325x, dsr1_fp8_mi355x, dsr1_fp4_mi355x and their _docker / _slurm
    forerunners; SemiAnalysisAI/InferenceX, the history read @843c6254): every version launches
    `--num-continuous-decode-steps 4`, dsr1_fp8_mi355x.sh 8 from a2180b61c (2026-05-03, PR #1243).
    SGLang then runs that many decode steps back to back before its scheduler takes new requests
    (server_args: "may also increase time-to-first-token latency"): a prompt arriving mid-stretch
    waits for its end, the hold queueing.ContextHold reads as `recv_interval` (new requests taken
    every R decode steps). The scripts' KV dtype and prefill chunk changed by date and concurrency:
    those are the rows' own kv_dtype and max_num_batched_tokens columns, with the commits in notes.

    Returned key: recv_interval."""
    late = row.system.strip().lower() == "mi355x" and row.precision == "fp8" and measured_on(row) >= "2026-05-03"
    return {"recv_interval": 8 if late else 4}


def measured_on(row: "MeasuredRow") -> str:
    """The date a row was measured (YYYY-MM-DD, from `measured=` in its source), or ""."""
    m = _MEASURED_ON.search(row.source or "")
    return m.group(1) if m else ""


_MEASURED_BETWEEN = re.compile(r"run between those dated (\d{4}-\d{2}-\d{2}) and (\d{4}-\d{2}-\d{2})")


def measured_within(row: "MeasuredRow") -> tuple[str, str]:
    """The first and last day the row can have been measured: its `measured=` date twice, or the
    dates its source brackets an undated run with ("run between those dated A and B": the dated
    runs of the same export before and after it), or ("", "") when the source says neither."""
    day = measured_on(row)
    if day:
        return day, day
    m = _MEASURED_BETWEEN.search(row.source or "")
    return (m.group(1), m.group(2)) if m else ("", "")


# InferenceX's requests per client (`--num-prompts` over `--max-concurrency`): CONC x 10 in every
# script (benchmarks/*.sh, SemiAnalysisAI/InferenceX), except that from 15b7c00b0 (2025-10-06
# 23:58 UTC, PR #89) to d053ae24e (2026-01-21 17:53 UTC, PR #480, which made every script send
# CONC x 10 after 2 x CONC warm-up requests) runners/launch_mi355x-amd.sh, the one MI355X runner,
# set NUM_PROMPTS for DeepSeek-R1 (amd/DeepSeek-R1-0528-MXFP4-Preview, deepseek-ai/DeepSeek-R1-0528)
# to CONC x 20 at OSL 8192 and CONC x 50 otherwise, which its scripts passed on. The B200 runners
# launch_b200-nvd.sh and launch_b200-dgxc.sh set the same rule, but B200 runs also went to
# launch_b200-nb.sh and launch_b200-nv.sh, whose scripts sent CONC x 10, and the exports do not
# say which runner a run took: those rows keep ten. Days of the two commits are not in the window
# (a run that day may precede or follow the merge).
_MI355X_DSR1_WAVES = ("2025-10-07", "2026-01-20")


def inferencex_requests_per_client(row: "MeasuredRow") -> float | None:
    """The requests each client of an InferenceX concurrency row sent (the harness's waves,
    queueing.BENCHMARK_WAVES when None): 50, or 20 at OSL 8192, for DeepSeek-R1 on the MI355X
    runner between _MI355X_DSR1_WAVES (both days included), when the row's dates lie wholly
    inside that window."""
    model = row.model_id.strip().lower()
    if row.system.strip().lower() != "mi355x" or model.removesuffix("-0528") not in _DSR1 or row.mode != "agg":
        return None
    first, last = measured_within(row)
    if not first or first < _MI355X_DSR1_WAVES[0] or last > _MI355X_DSR1_WAVES[1]:
        return None
    return 20.0 if row.osl == 8192 else 50.0


# InferenceX's runs before d053ae24e (2026-01-21 17:53 UTC, PR #480) sent no warm-up request: the
# first wave met a cold engine. On B200 under SGLang that cost a stall of about 70 s: of the 121
# aggregated DeepSeek-R1 points the InferenceX-app site's API fixtures hold for B200 SGLang up to
# 2026-01-20 (vngcloud/InferenceX-app@7fe6d62a packages/app/cypress/fixtures/api/benchmarks.json
# and benchmarks-history.json, 2025-11-02 to 2026-01-13), 67 have a p99 TTFT of 69-94 s beside a
# median of 0.14-1.7 s (a first wave held ~70 s: the mean of a run of ten waves rises by ~7 s); of
# the 75 after it, none at those loads (the ten above 40 s are runs of 512 clients whose median is
# 30-199 s: memory waits). B200 TensorRT-LLM (0 of 139), H200 SGLang (0 of 45) and the AMD SGLang
# runners (0 of 200) show no such stall before the warm-up. A row's mean alone cannot say whether
# its run met the stall, so every B200 SGLang row of that span leaves its mean TTFT out.
_COLD_START_UNTIL = "2026-01-21"


def inferencex_cold_start(row: "MeasuredRow") -> str | None:
    """Why an InferenceX row's mean TTFT is not its serving's: a B200 SGLang aggregated run that
    may have been measured before InferenceX sent warm-up requests (_COLD_START_UNTIL, the merge
    day included), whose first wave could meet a ~70 s cold start; None otherwise."""
    if not INFERENCEX_SOURCE.search(row.source or "") or row.engine != "sglang" or row.mode != "agg":
        return None
    if row.system.strip().lower() != "b200_sxm":
        return None
    first, last = measured_within(row)
    if not last or last > _COLD_START_UNTIL:
        return None
    return (f"measured {first if first == last else first + ' to ' + last}, before InferenceX's warm-up requests (2026-01-21): "
            "B200 SGLang runs then met a ~70 s cold start in the first wave in 67 of 121 points (p99 TTFT 69-94 s), "
            "which decides a run's mean TTFT")


def trtllm_script_flags(row: "MeasuredRow") -> dict:
    """The scheduler settings of InferenceX's TRT-LLM launch scripts, which depend on the row's
    lengths, concurrency, layout and (for the DeepSeek-R1 scripts) the date the row was measured
    (SemiAnalysisAI/InferenceX, the scripts' history read @843c6254ff69b567f772f6a5fd97675af3d04431):

    Llama-3.1-70B   benchmarks/70b_fp8_b200_trt_{docker,slurm}.sh, 70b_fp4_b200_trt_{docker,slurm}.sh,
                    70b_fp8_h200_trt_slurm.sh @9596d23d7 (2025-10-29, the day the rows were measured;
                    the scripts were removed that day): `--max_num_tokens 16384`, and for ISL = OSL
                    = 1024 at TP < 8 `batch_wait_timeout_iters: 20`, `batch_wait_max_tokens_ratio: 0.9`
    DeepSeek-R1/V3  dsr1_fp{8,4}_{b200,h200}_trt*.sh: `--max_num_tokens` = (CONC + ISL + 64 + 63)
                    // 64 x 64, at least 8192 from 64af5a771 (2026-01-21); `free_gpu_memory_fraction:
                    0.8`; with attention DP
                    `attention_dp_config: {enable_balance: true, timeout_iters: 60,
                    batching_wait_iters: 0}` (every version since ec90f3fe7, 2025-09-18); dsr1_fp8_b200_trt.sh
                    from ec7bafaae (2026-01-29): ISL = OSL = 1024 at CONC >= 64 `batch_wait_timeout_iters:
                    40`, `batch_wait_max_tokens_ratio: 0.8`
    gpt-oss-120b    gptoss_fp4_{b200,h200}_trt*.sh (2025-09-19 to 2026-04-13): `--max_num_tokens 20000`,
                    `free_gpu_memory_fraction: 0.85`;
                    with attention DP (B200) `attention_dp_config: {enable_balance: true}`, whose other
                    fields keep their defaults, timeout_iters 50 and batching_wait_iters 10
                    (tensorrt_llm/llmapi/llm_args.py AttentionDpConfig)

    Returned keys: max_num_batched_tokens (the scheduler's max_num_tokens), memory_fraction, batch_wait_iters and
    batch_wait_tokens (ratio x max_num_tokens), adp_balance_iters, adp_batching_iters (see
    queueing.ContextHold)."""
    model, system = row.model_id.strip().lower(), row.system.strip().lower()
    conc = row.concurrency or 0.0
    dp = max(row.attention_dp, 1)
    out: dict = {}
    if model == "meta-llama/llama-3.1-70b" and system in ("b200_sxm", "h200_sxm"):
        out["max_num_batched_tokens"] = 16384
        if row.isl == 1024 and row.osl == 1024 and row.tp < 8:
            out.update(batch_wait_iters=20, batch_wait_tokens=0.9 * 16384)
    elif model in _DSR1 and system in ("b200_sxm", "h200_sxm"):
        date = measured_on(row)
        tokens = (conc + row.isl + 64 + 63) // 64 * 64
        if date >= "2026-01-21":
            tokens = max(tokens, 8192)
        out["max_num_batched_tokens"] = tokens
        out["memory_fraction"] = 0.8
        if dp > 1:
            out.update(adp_balance_iters=60, adp_batching_iters=0)
        elif system == "b200_sxm" and row.precision == "fp8" and date >= "2026-01-29" and row.isl == 1024 and row.osl == 1024 and conc >= 64:
            out.update(batch_wait_iters=40, batch_wait_tokens=0.8 * tokens)
    elif model == "openai/gpt-oss-120b" and system in ("b200_sxm", "h200_sxm"):
        out["max_num_batched_tokens"] = 20000
        out["memory_fraction"] = 0.85
        if dp > 1:
            out.update(adp_balance_iters=50, adp_batching_iters=10)
    return out


# The engine release of InferenceX rows exported without one (backend_version empty): the image its
# workflow ran on the day the row was measured. (engine, model ids, systems, precisions, [(first day,
# release), ...] in date order), from SemiAnalysisAI/InferenceX: .github/workflows/70b-tmpl.yml
# @9596d23d7 (2025-10-29), gptoss-tmpl.yml and dsr1-tmpl.yml @e06929c70 (2025-11-02), then
# .github/configs/nvidia-master.yaml (the day's last commit: 7daaa8bb3 2025-11-10, 189ae51cc
# 2025-11-18, 06667a51e 2025-12-02, 25506e87c 2025-12-05), and d8fe8f73e (2025-11-10: SGLang
# v0.5.3rc1 -> v0.5.5). Without it the rows shared one release-less offset with every other source
# that names no release (public vLLM runs, MLPerf), whatever they ran.
INFERENCEX_RELEASES: tuple[tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[tuple[str, str], ...]], ...] = (
    ("vllm", ("meta-llama/llama-3.1-70b",), ("b200_sxm", "h200_sxm", "h100_sxm"), ("fp8", "fp4"), (("2025-10-01", "0.10.2"),)),
    ("trtllm", ("meta-llama/llama-3.1-70b",), ("b200_sxm", "h200_sxm"), ("fp8", "fp4"), (("2025-10-01", "1.1.0rc2.post2"),)),
    ("vllm", ("openai/gpt-oss-120b",), ("b200_sxm", "h200_sxm", "h100_sxm"), ("fp4",), (("2025-10-01", "0.10.2"), ("2025-11-03", "0.11.0"), ("2025-12-05", "0.11.2"))),
    ("trtllm", ("openai/gpt-oss-120b",), ("b200_sxm",), ("fp4",), (("2025-10-01", "1.2.0rc0.post1"), ("2025-12-02", "1.2.0rc2"))),
    ("trtllm", ("openai/gpt-oss-120b",), ("h200_sxm",), ("fp4",), (("2025-10-01", "gpt-oss-dev"),)),
    ("trtllm", _DSR1, ("b200_sxm", "h200_sxm"), ("fp8", "fp4"), (("2025-10-01", "1.1.0rc2.post2"),)),
    ("sglang", _DSR1, ("b200_sxm",), ("fp8", "fp4"), (("2025-10-01", "0.5.3rc1"), ("2025-11-10", "0.5.5"))),
)


def inferencex_release(row: "MeasuredRow") -> str:
    """The engine release an InferenceX row without backend_version ran (INFERENCEX_RELEASES, by
    the day it was measured), or "" when the row names one, is from elsewhere, or is not listed."""
    if row.engine_version or not INFERENCEX_SOURCE.search(row.source or ""):
        return ""
    day = measured_on(row)
    model, system = row.model_id.strip().lower(), row.system.strip().lower()
    for engine, models, systems, precisions, releases in INFERENCEX_RELEASES:
        if row.engine == engine and model in models and system in systems and row.precision in precisions and day:
            found = [release for first, release in releases if day >= first]
            return found[-1] if found else ""
    return ""


def _uniform_lengths(length: float, ratio: float):
    """Lengths drawn uniformly from [ratio x length, length] (a quantile table: linear between)."""
    from .datasets import make_empirical

    lo = float(int(length * ratio))
    return make_empirical(((0.0, lo), (50.0, (lo + length) / 2), (100.0, float(length))))


# Measurement precision -> weight format (the model's own checkpoint format when it is that precision).
PRECISIONS = {"fp8": "fp8", "fp4": "nvfp4", "int4": "int4", "bf16": "bf16", "fp16": "fp16", "nvfp4": "nvfp4", "mxfp4": "mxfp4"}

# aiconfigurator's quant-mode columns (gemm_quant_mode, moe_quant_mode: its GEMMQuantMode and
# MoEQuantMode names, ai-dynamo/aiconfigurator@032de3f7 src/aiconfigurator/sdk/common.py, and the
# float16 of its earlier releases) -> (the bits a weight is stored in, the precision sizer reads it
# as). fp8_block is FP8 with block scales, fp8_static with a static one; w4afp8 and
# w4a8_mxfp4_mxfp8 store 4-bit weights and compute in FP8; int4_wo and w4a16_mxfp4 are weight-only.
QUANT_MODES = {
    "bfloat16": (16, "bf16"),
    "float16": (16, "fp16"),
    "fp8": (8, "fp8"),
    "fp8_block": (8, "fp8"),
    "fp8_static": (8, "fp8"),
    "fp8_ootb": (8, "fp8"),
    "int8_wo": (8, ""),
    "sq": (8, ""),
    "int4_wo": (4, "int4"),
    "w4afp8": (4, ""),
    "nvfp4": (4, "fp4"),
    "w4a16_mxfp4": (4, "mxfp4"),
    "w4a8_mxfp4_mxfp8": (4, ""),
}
_PRECISION_BITS = {"bf16": 16, "fp16": 16, "fp8": 8, "fp4": 4, "nvfp4": 4, "mxfp4": 4, "int4": 4}


def _precision_of_quant_modes(gemm: str, moe: str) -> str:
    """The precision a row without one stores its weights in, by its quant-mode columns: the GEMM
    mode's, where the expert mode (if any) stores the same bits; "" (the checkpoint's own format)
    where the two differ (gpt-oss: BF16 attention, MXFP4 experts) or a mode has no sizer precision."""
    g, m = QUANT_MODES.get(gemm), QUANT_MODES.get(moe)
    if g is None or (moe and (m is None or m[0] != g[0])):
        return ""
    return g[1]

_CONCURRENCY_IN_SOURCE = re.compile(r"silicon_concurrency=(\d+)")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerLayout:
    """One kind of worker of a disaggregated deployment."""

    workers: int
    layout: Layout
    batch_size: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class MeasuredRow:
    """One measurement, as given (lengths in tokens, latencies in ms as measured)."""

    row_id: str
    source: str
    origin: str  # the file it came from
    model_id: str
    system: str
    engine: str
    engine_version: str
    precision: str
    mode: str  # agg | disagg
    kind: str  # concurrency | rate | offline | batch
    isl: float  # fixed prompt tokens (0 when `dataset` gives the distribution)
    osl: float
    concurrency: float | None = None
    request_rate_rps: float | None = None
    tp: int = 1
    pp: int = 1
    attention_dp: int = 1
    moe_tp: int = 0
    moe_ep: int = 0
    prefill: WorkerLayout | None = None
    decode: WorkerLayout | None = None
    kv_dtype: str | None = None
    ttft_ms: float | None = None  # mean
    tpot_ms: float | None = None  # mean
    ttft_p99_ms: float | None = None
    tpot_p99_ms: float | None = None
    output_tokens_per_s: float | None = None  # measured, when the source gives it (per replica)
    invalid: str | None = None  # a reason the row could not even be read
    dataset: str | None = None  # a named length distribution (catalogs/datasets.yaml) instead of isl/osl
    replicas: int = 1  # copies of the layout in the measured system (figures here are per replica)
    samples_per_s: float | None = None  # completed requests/s (per replica), when the source gives it
    max_num_batched_tokens: float | None = None  # the engine's prompt-token budget per step, when the source gives it
    max_num_seqs: int | None = None  # the running-sequence cap one engine instance was launched with, when the source gives it
    max_model_len: int | None = None  # the context the engine was launched with (--max-model-len), when the source gives it
    scenario: str = ""  # MLPerf's scenario when the kind column names it (server, interactive): the bounds its rate was the largest within
    in_process: bool = False  # driven in-process (gptSessionBenchmark, vLLM benchmark_latency): no serving front end, no per-request overhead
    moe_quant_mode: str = ""  # aiconfigurator's moe_quant_mode, when the source gives it: the experts' storage (QUANT_MODES)
    throughput_basis: str = ""  # "samples_per_s" when output_tokens_per_s is completed requests/s x output tokens a request (the source gives requests/s only); "" = given
    rate_basis: str = ""  # where request_rate_rps came from when the source gives none: "samples_per_s", or "output_tokens_per_s" (over the dataset's mean output); "" = given
    num_prompts: float | None = None  # requests the closed loop sent (per replica), when the source gives them: with the clients, the requests each sent
    batcher_window_ms: float | None = None  # kind rate: the harness gathers the system's requests this long, then sends them to one replica (queueing.prompt_groups)
    prefill_group: int | None = None  # kind rate: the engine prefills only once this many prompts wait (queueing.prompt_groups)
    ttft_left_out: str = ""  # why the source's mean TTFT is not scored (resolve; it and the throughput it implies are then None)
    layout_basis: str = ""  # how read_layouts read tp / attention_dp / moe_tp / moe_ep when not as recorded (EXPORT_LAYOUT_BASIS); "" = as recorded

    @property
    def throughput_tokens_per_s(self) -> float | None:
        """Output tokens/s of the measured deployment: the measured figure, else the closed loop's
        N x osl / (TTFT + (osl - 1) x TPOT) from the measured means."""
        if self.output_tokens_per_s is not None:
            return self.output_tokens_per_s
        if self.kind == "concurrency" and self.concurrency and self.ttft_ms and self.tpot_ms and self.osl > 0:
            return self.concurrency * self.osl / ((self.ttft_ms + (self.osl - 1) * self.tpot_ms) / 1000.0)
        return None

    @property
    def config_key(self) -> str:
        """The configuration the row measures, without its load: rows of one sweep share it."""
        lay = f"{self.tp}/{self.pp}/{self.attention_dp}/{self.moe_tp}/{self.moe_ep}"
        if self.mode == "disagg" and self.prefill and self.decode:
            lay = f"p{self.prefill.workers}x{self.prefill.layout.label()}/d{self.decode.workers}x{self.decode.layout.label()}"
        lengths = [self.dataset.lower()] if self.dataset else [f"{self.isl:g}", f"{self.osl:g}"]
        if self.replicas > 1:
            lay += f"x{self.replicas}"
        kind = self.kind + ("/in-process" if self.in_process else "")
        return "|".join([self.model_id.lower(), self.system.lower(), self.engine, self.precision, self.mode, kind, lay, *lengths])

    @property
    def measured_output_tokens_per_request(self) -> float | None:
        """Output tokens per completed request as measured (tokens/s over requests/s), when both are given."""
        if self.output_tokens_per_s and self.samples_per_s and not self.throughput_basis:
            return self.output_tokens_per_s / self.samples_per_s
        return None

    @property
    def family(self) -> str:
        """The model family a row belongs to (for stratifying the split and reporting)."""
        return self.model_id.split("/")[-1].lower()


@dataclass(frozen=True, slots=True, kw_only=True)
class Resolved:
    """A row resolved to what the model needs."""

    row: MeasuredRow
    model: ModelArch
    model_name: str
    gpu: Gpu
    layout: Layout
    weight_dtype: str
    kv_dtype: str
    prefill_layout: Layout | None = None
    prefill_workers: int = 0
    decode_workers: int = 0
    prompt: "LengthDist | None" = None  # the dataset's prompt lengths (None: fixed row.isl)
    output: "LengthDist | None" = None  # its output lengths, scaled to the measured tokens per request
    # A rate row on a dataset whose benchmark bounds its latencies (MLPerf Server, Interactive):
    # (TTFT p99 s, TPOT p99 s) its rate was the largest within (the source: the dataset's bounds_source)
    latency_bounds_s: tuple[float, float] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Skipped:
    row: MeasuredRow
    reason: str


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------

_REQUIRED = ("model_path", "system", "backend", "precision")
_LENGTHS = ("isl", "osl")
KINDS = ("concurrency", "rate", "offline", "batch")
_TTFT = ("silicon_ttft_ms", "ttft_ms")
_TPOT = ("silicon_tpot_ms", "tpot_ms")
# The columns of a measurement CSV sizer reads (_csv_row, _worker; tests check the list against
# their code), and `notes`, free text for people. A column outside it is reported, never read.
_ROW_COLUMNS = (
    "id", "silicon_data_source", "source", "model_path", "system", "backend", "backend_version", "precision",
    "gemm_quant_mode", "moe_quant_mode", "kv_dtype", "mode", "kind", "dataset", "isl", "osl", "batch_size",
    "concurrency", "request_rate_rps", "replicas", "tp_size", "pp_size", "attention_dp_size", "moe_tp_size",
    "moe_ep_size", "max_num_batched_tokens", "max_num_seqs", "max_model_len", "in_process", "num_prompts",
    "batcher_window_ms", "prefill_group",
    "output_tokens_per_s", "samples_per_s", "ttft_p99_ms", "tpot_p99_ms", *_TTFT, *_TPOT, "notes",
)  # fmt: skip
_WORKER_COLUMNS = ("num_workers", "tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size", "batch_size")
KNOWN_COLUMNS = frozenset(_ROW_COLUMNS) | {f"{side}_{c}" for side in ("prefill", "decode") for c in _WORKER_COLUMNS}


def column_warnings(path: Path | str) -> list[str]:
    """One line for each column of the CSV at `path` that sizer does not read (KNOWN_COLUMNS),
    with the known column its name is closest to: a figure under a misspelt or foreign header
    (`num_gpus`, `ttft_mean_ms`) would otherwise be dropped without a word. Empty when the header
    cannot be read (read_csv says why)."""
    import csv
    import difflib

    try:
        header = next(csv.reader(io.StringIO(decode_text(Path(path).read_bytes(), str(path), "CSV"), newline="")), [])
    except (OSError, InputError, csv.Error):
        return []
    out = []
    names = [col.strip() for col in header]
    for aliases, what in ((_TTFT, "the mean TTFT"), (_TPOT, "the mean TPOT")):
        given = [a for a in aliases if a in names]
        if len(given) > 1:
            out.append(f"{path}: columns {' and '.join(repr(a) for a in given)} both give {what}: {given[0]!r} is read, {', '.join(repr(a) for a in given[1:])} ignored")
    for col in header:
        name = col.strip()
        if not name or name in KNOWN_COLUMNS or name.startswith("Unnamed"):
            continue
        # 0.7: a misspelling (silicon_ttft_msec, samples_per_sec, concurency: 0.93-0.95) or a
        # unit suffix (ttft_mean_ms -> ttft_ms, 0.74) is named; another quantity is not (num_gpus
        # is 0.63 like num_prompts, which it does not mean)
        close = difflib.get_close_matches(name.lower(), sorted(KNOWN_COLUMNS), n=1, cutoff=0.7)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        out.append(f"{path}: column {name!r} is not one sizer reads: its values are ignored{hint}")
    return out


def _num(value) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


# What a cell may hold for "not measured" (pandas, spreadsheets and Python write these for a gap).
_MISSING = frozenset({"", "nan", "na", "n/a", "none", "null", "-"})
# MLPerf scenario names read as the kind of benchmark they run: Server and Interactive are Poisson
# arrivals at a rate (Interactive with tighter latency bounds), the same loop as `rate`; SingleStream
# (below) is a closed loop of one.
KIND_ALIASES = {"server": "rate", "interactive": "rate", "singlestream": "concurrency"}
# MLPerf's SingleStream (the edge scenario, llama3.1-8b-edge): LoadGen issues one query and the next
# when it completes: a closed loop of one client on one replica. (A kind cell is read in lower case
# without separators: Single-Stream, single_stream.)
SINGLE_STREAM = "singlestream"
# what a benchmark without a server can measure: requests sent at once, or sent at a rate by a load
# generator in the same process (MLPerf's LoadGen harnesses: AMD's drives vLLM's engine through
# queues, queue_llm.py / harness_llm, with no HTTP front end)
IN_PROCESS_KINDS = ("batch", "offline", "rate")


def in_process_conflict(kind: str) -> str | None:
    """Why a row of `kind` cannot be in-process (None if it can): both readers' message."""
    if kind in IN_PROCESS_KINDS:
        return None
    return f"an in-process benchmark sends its requests at once (kind batch or offline) or at a rate from its own load generator (kind rate), not kind {kind}"


MAX_PREFILL_GROUP = 256  # queueing.prompt_groups sums a group's arrivals term by term (_POISSON_TERMS)


def _grouping_conflict(kind: str, mode: str, window_ms: float | None, group: int | None) -> str | None:
    """Why a row cannot carry a prompt-grouping rule (batcher_window_ms, prefill_group; None if it
    can): both readers' message. They describe how an open loop's prompts reach an aggregated
    replica (queueing.prompt_groups): one rule a row."""
    if window_ms is None and group is None:
        return None
    col = "batcher_window_ms" if window_ms is not None else "prefill_group"
    if group is not None and group > MAX_PREFILL_GROUP:
        return f"prefill_group: expected a whole number from 1 to {MAX_PREFILL_GROUP}, got {group}"
    if window_ms is not None and group is not None:
        return "batcher_window_ms and prefill_group: one grouping rule a row (a harness window or an engine count), not both"
    if kind != "rate":
        return f"{col}: read on kind rate only (how an open loop's prompts reach a replica), not on kind {kind}"
    if mode != "agg":
        return f"{col}: read on aggregated rows only, not on mode {mode}"
    return None


class _Cells:
    """One CSV record's cells, read strictly: a cell that holds something other than what its
    column means (text in a number column, a negative count, 2.5 GPUs) makes the row invalid with
    the column and the value named, where a lenient read would have dropped the figure silently.
    The first such reason is kept (`invalid`)."""

    def __init__(self, rec: dict):
        self.rec = rec
        self.invalid: str | None = None

    def text(self, col: str) -> str:
        value = self.rec.get(col, "")
        return "" if value is None else str(value).strip()

    def bad(self, reason: str) -> None:
        self.invalid = self.invalid or reason

    def missing(self, col: str) -> bool:
        return self.text(col).lower() in _MISSING

    def number(self, col: str, *, infinite_ok: bool = False) -> float | None:
        """A positive finite number, or None for an empty cell (`infinite_ok`: inf is read as None too)."""
        if self.missing(col):
            return None
        s = self.text(col)
        try:
            x = float(s)
        except ValueError:
            self.bad(f"{col}: expected a number, got {s!r}")
            return None
        if infinite_ok and math.isinf(x) and x > 0:
            return None
        if not math.isfinite(x) or x <= 0:
            self.bad(f"{col}: expected a positive number, got {s!r}")
            return None
        return x

    def flag(self, col: str) -> bool:
        """yes/true/1 or no/false/0; an empty cell is no."""
        if self.missing(col):
            return False
        s = self.text(col).lower()
        if s in ("yes", "true", "1"):
            return True
        if s in ("no", "false", "0"):
            return False
        self.bad(f"{col}: expected yes or no, got {self.text(col)!r}")
        return False

    def whole(self, col: str, default: int, *, zero_unset: bool = True) -> int:
        """A whole number >= 1; an empty cell, or 0 (aiconfigurator's "not set") where
        `zero_unset`, gives `default`."""
        if self.missing(col):
            return default
        s = self.text(col)
        x = _num(s)  # None: not a finite number
        if x == 0 and zero_unset:
            return default
        if x is None or x < 1 or x != int(x):
            self.bad(f"{col}: expected a whole number >= 1, got {s!r}")
            return default
        return int(x)


def read_csv(path: Path | str) -> list[MeasuredRow]:
    """Rows of a CSV in the column format of ../shared/reference/measured/ (see the module
    docstring). A missing required column is an error naming the file and the column; a row with
    a bad value is kept, with the reason in `invalid`, and so is a row with more cells than the
    header (a value holding an unquoted comma, as MLPerf's `TensorRT 10.11, CUDA 12.9`), wherever
    it stands in the file: its first cells are read under the header's columns."""
    path = Path(path)
    label = str(path)
    check_regular_file(path, label)
    if not path.is_file():
        raise InputFileError(f"{label}: is a directory, expected a CSV file" if path.is_dir() else f"{label}: file not found")
    header, records = _csv_records(path, label)
    if not header:
        raise YamlSyntaxError(f"{label}: not a readable CSV: no header line")
    cols = set(header)
    if len(header) == 1:
        sep = next((c for c in (";", "\t", "|") if c in str(header[0])), None)
        if sep is not None:
            raise YamlSyntaxError(f"{label}: not comma-separated: its header is one column holding {sep!r} (save it as CSV with commas)")
    for col in _REQUIRED + (() if "dataset" in cols else _LENGTHS):
        if col not in cols:
            raise FieldValueError(
                f"{label}: column {col!r}: required column is missing (expected aiconfigurator's silicon_sample.csv columns: "
                f"{', '.join(_REQUIRED + _LENGTHS)} (or dataset), ...; README.md, '`sizer validate` and `sizer calibrate`', "
                "'Your own results', lists them all)"
            )
    ttft_col = next((c for c in _TTFT if c in cols), None)
    tpot_col = next((c for c in _TPOT if c in cols), None)
    if ttft_col is None and tpot_col is None and "output_tokens_per_s" not in cols:
        raise FieldValueError(f"{label}: column 'silicon_ttft_ms': no measured latency (silicon_ttft_ms / silicon_tpot_ms) or output_tokens_per_s column")
    rows = []
    for i, cells in enumerate(records):
        rec = dict(zip(header, cells + [""] * (len(header) - len(cells))))
        row = _csv_row(rec, i, label, ttft_col, tpot_col)
        if len(cells) > len(header):  # the reason, before what its shifted cells then say
            from dataclasses import replace as _replace

            row = _replace(row, invalid=f"{len(cells)} cells where the header has {len(header)}: a value holding an unquoted comma?")
        rows.append(row)
    return rows


def _csv_records(path: Path, label: str) -> tuple[list[str], list[list[str]]]:
    """(the header's column names, stripped of spaces around them, each further record's cells) of
    a CSV file, as the csv module splits them (RFC 4180 quoting; a UTF-8 byte-order mark dropped),
    less the empty and whitespace-only lines. A column name repeated in the header is an error:
    which of its cells a row means is unknown."""
    import csv

    limit = csv.field_size_limit()
    try:
        csv.field_size_limit(2**31 - 1)  # a long notes cell is a cell, not a broken file
        try:
            data = Path(path).read_bytes()
        except OSError as exc:  # unreadable (permissions): exit 3, as a missing file
            raise InputFileError(f"{label}: cannot read: {exc.strerror or exc}") from None
        fh = io.StringIO(decode_text(data, label, "not a readable CSV"), newline="")
        records = [rec for rec in csv.reader(fh) if rec and not (len(rec) == 1 and not rec[0].strip())]
        if records:
            fh.seek(0)
            _refuse_unclosed_quote(fh, label)
    except csv.Error as exc:  # a CSV that does not parse: exit 4, as YAML or JSON
        raise YamlSyntaxError(f"{label}: not a readable CSV: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    finally:
        csv.field_size_limit(limit)
    if not records:
        return [], []
    header = [name.strip() for name in records[0]]  # `id, model_path` and ` silicon_ttft_ms `: the names they show
    seen: set[str] = set()
    for name in header:
        if name in seen and name.strip():
            raise FieldValueError(f"{label}: column {name!r}: named twice in the header (which of its cells a row means is unknown)")
        seen.add(name)
    return header, records[1:]


def _refuse_unclosed_quote(fh, label: str) -> None:
    """A quote that opens a cell and is never closed: the csv module (not strict) reads the rest
    of the file into that cell without a word, or up to the next quote anywhere, rows and all.
    Its strict reader finds it: the data ends inside the cell, or the cell runs over lines to a
    quote that closes none. Another strict complaint on one line (a quote inside an unquoted
    cell, `"x"y`) is left to the lenient reading, which keeps such a cell as written."""
    import csv

    offset = 0  # lines read before the current reader: a one-line complaint is passed over, and the reading resumes after it
    while True:
        reader = csv.reader(fh, strict=True)
        start = offset + 1
        try:
            for _ in reader:
                start = offset + reader.line_num + 1
            return
        except csv.Error as exc:
            end = offset + reader.line_num
            if "unexpected end of data" in str(exc):
                raise YamlSyntaxError(f"{label}: not a readable CSV: line {start}: a quoted cell is never closed (its \" has no closing \")") from None
            if end > start:
                raise YamlSyntaxError(
                    f"{label}: not a readable CSV: line {start}: a quoted cell is never closed (its \" runs over lines {start}-{end} to a quote that closes no cell: {exc})"
                ) from None
            offset = end


def _precision_name(cell: str) -> str:
    """A precision cell in sizer's names (units.DTYPE_ALIASES: bfloat16 -> bf16, float16 -> fp16,
    fp8_e4m3 -> fp8, AWQ/GPTQ/W4A16 -> int4); `auto` (the engines' word for the checkpoint's own
    format) -> "", which _weight_dtype reads as the checkpoint's format."""
    name = normalise_dtype(cell)
    return "" if name == "auto" else name


def _csv_row(rec: dict, index: int, label: str, ttft_col: str | None, tpot_col: str | None) -> MeasuredRow:
    cells = _Cells(rec)
    get = cells.text
    row_id = get("id") or f"{Path(label).name}:{index + 2}"  # line number (header is line 1)
    mode = (get("mode") or "agg").lower()
    if mode not in ("agg", "disagg"):
        cells.bad(f"mode: expected agg or disagg, got {get('mode')!r}")
    engine = engine_name(get("backend"))
    dataset = get("dataset") or None
    if dataset:  # an MLPerf benchmark's name (llama2-70b-99.9) names its dataset
        dataset = mlperf_dataset_name(dataset) or dataset
    isl, osl = cells.number("isl"), cells.number("osl")
    if dataset is None and (isl is None or isl < 1 or osl is None or osl < 1):
        cells.bad(f"isl/osl: expected token counts >= 1 (or a dataset), got {get('isl')!r}/{get('osl')!r}")
    replicas = cells.whole("replicas", 1, zero_unset=False)
    rate = cells.number("request_rate_rps", infinite_ok=True)
    infinite_rate = get("request_rate_rps").lower() in ("inf", "+inf", "infinity")
    conc = cells.number("concurrency")
    dp = cells.whole("attention_dp_size", 1)
    given_kind = re.sub(r"[^a-z]", "", get("kind").lower())
    kind = KIND_ALIASES.get(given_kind, given_kind) or ("rate" if rate is not None else "batch" if infinite_rate else "concurrency")
    scenario = given_kind if given_kind in ("server", "interactive") else ""
    if kind == "rate" and any("-interactive" in get(c).lower() for c in ("dataset", "model_path")):
        scenario = "interactive"  # MLPerf's llama2-70b-interactive-99, filed under Server in v5.0 and v5.1
    if kind not in KINDS:
        cells.bad(f"kind: expected one of {', '.join(KINDS)} (or MLPerf's server, interactive, singlestream), got {get('kind')!r}")
    if given_kind == SINGLE_STREAM:
        if conc is None:
            conc = 1.0
        elif conc != 1:
            cells.bad(f"concurrency: SingleStream runs one query at a time (concurrency 1), got {get('concurrency')!r}")
        if replicas != 1:
            cells.bad(f"replicas: SingleStream runs one query at a time, on one replica (replicas 1), got {get('replicas')!r}")
    if infinite_rate and kind != "batch":
        cells.bad(f"request_rate_rps: an infinite rate sends every request at once, which is kind batch, not {kind}")
    if conc is None and kind in ("concurrency", "batch"):
        batch = cells.number("batch_size")
        if batch is not None:
            conc = batch * dp if mode == "agg" else batch
        elif cells.missing("batch_size"):
            m = _CONCURRENCY_IN_SOURCE.search(get("silicon_data_source"))
            conc = float(m.group(1)) if m else None
    if kind in ("concurrency", "batch") and conc is None:
        cells.bad("no concurrency: batch_size (or concurrency) missing and none in silicon_data_source")
    ttft = cells.number(ttft_col) if ttft_col else None
    tpot = cells.number(tpot_col) if tpot_col else None
    thr = cells.number("output_tokens_per_s")
    sps = cells.number("samples_per_s")
    rate_basis = ""
    if kind == "rate" and rate is None and dataset:
        # MLPerf's results table gives a Server or Interactive run's throughput, not its scheduled
        # rate: a valid run completes what it schedules, so samples/s is the rate, and tokens/s
        # over the dataset's mean output is (resolve, once the dataset is read)
        if sps is not None:
            rate, rate_basis = sps, "samples_per_s"
        elif thr is not None:
            rate_basis = "output_tokens_per_s"
    if kind == "rate" and rate is None and not rate_basis:
        cells.bad("kind rate: request_rate_rps missing" + ("" if dataset else " (an MLPerf server or interactive run on a named dataset may give samples_per_s or output_tokens_per_s instead)"))
    throughput_basis = ""
    if thr is None and sps is not None and (dataset or osl):
        # completed requests/s times the output tokens a request: fixed lengths here, a dataset's
        # mean output in resolve
        throughput_basis = "samples_per_s"
        if not dataset:
            thr = sps * osl
    if ttft is None and tpot is None and thr is None and not throughput_basis:
        cells.bad("no measured TTFT, TPOT or throughput (output_tokens_per_s, or samples_per_s)")
    per = lambda x: None if x is None else x / replicas  # noqa: E731  (system figures -> one replica)
    tp, pp = cells.whole("tp_size", 1), cells.whole("pp_size", 1)
    moe_tp, moe_ep = cells.whole("moe_tp_size", 0), cells.whole("moe_ep_size", 0)
    ttft_p99, tpot_p99 = cells.number("ttft_p99_ms"), cells.number("tpot_p99_ms")
    budget = cells.number("max_num_batched_tokens")
    seqs_cap = cells.whole("max_num_seqs", 0, zero_unset=False) or None  # empty: the source does not say
    model_len = cells.whole("max_model_len", 0, zero_unset=False) or None
    in_process = cells.flag("in_process")
    prompts = cells.number("num_prompts")
    if prompts is not None and kind != "concurrency":
        cells.bad(f"num_prompts: read on kind concurrency only (the requests a closed loop's clients sent), not on kind {kind}")
    elif prompts is not None and conc is not None and prompts < conc:
        cells.bad(f"num_prompts: {prompts:g} requests for {conc:g} clients (at least one a client expected)")
    if in_process and in_process_conflict(kind):
        cells.bad(f"in_process: {in_process_conflict(kind)}")
    window = cells.number("batcher_window_ms")
    group = cells.whole("prefill_group", 0, zero_unset=False) or None
    grouping = _grouping_conflict(kind, mode, window, group)
    if grouping:
        cells.bad(grouping)

    prefill = decode = None
    if mode == "disagg":
        prefill = _worker(cells, "prefill_")
        decode = _worker(cells, "decode_")
    return MeasuredRow(
        row_id=str(row_id),
        source=get("silicon_data_source") or get("source") or label,
        origin=label,
        model_id=get("model_path"),
        system=get("system"),
        engine=engine,
        engine_version=get("backend_version"),
        precision=_precision_name(get("precision")) or _precision_of_quant_modes(get("gemm_quant_mode").lower(), get("moe_quant_mode").lower()),
        mode=mode,
        kind=kind,
        isl=isl or 0.0,
        osl=osl or 0.0,
        concurrency=per(conc),
        request_rate_rps=per(rate),
        tp=tp,
        pp=pp,
        attention_dp=dp,
        moe_tp=moe_tp,
        moe_ep=moe_ep,
        prefill=prefill,
        decode=decode,
        kv_dtype=(get("kv_dtype").lower() or None),
        ttft_ms=ttft,
        tpot_ms=tpot,
        ttft_p99_ms=ttft_p99,
        tpot_p99_ms=tpot_p99,
        output_tokens_per_s=per(thr),
        invalid=cells.invalid,
        dataset=dataset,
        replicas=replicas,
        samples_per_s=per(sps),
        max_num_batched_tokens=budget,
        max_num_seqs=seqs_cap,
        max_model_len=model_len,
        scenario=scenario,
        in_process=in_process,
        num_prompts=per(prompts),
        batcher_window_ms=window,
        prefill_group=group,
        rate_basis=rate_basis,
        throughput_basis=throughput_basis,
        moe_quant_mode=get("moe_quant_mode").lower(),
    )


def _worker(cells: _Cells, prefix: str) -> WorkerLayout | None:
    workers = cells.whole(prefix + "num_workers", 0)
    tp = cells.whole(prefix + "tp_size", 0)
    dp = cells.whole(prefix + "attention_dp_size", 1)
    ep = cells.whole(prefix + "moe_ep_size", 1)
    pp = cells.whole(prefix + "pp_size", 1)
    batch = cells.number(prefix + "batch_size")
    if not workers or not tp:
        return None
    return WorkerLayout(workers=workers, layout=Layout(tp=tp, pp=pp, dp=dp, ep=ep), batch_size=batch)


_PUBLISHED_KEYS = (
    "id",
    "source",
    "quote",
    "benchmark",
    "model",
    "system",
    "engine",
    "precision",
    "kind",
    "isl",
    "osl",
    "tp",
    "pp",
    "replicas",
    "concurrency",
    "request_rate_rps",
    "output_tokens_per_s",
    "ttft_ms",
    "tpot_ms",
    "ttft_p99_ms",
    "tpot_p99_ms",
    "kv_dtype",
    "notes",
    "dataset",
    "samples_per_s",
    "engine_version",
    "max_num_seqs",
    "in_process",
    "batcher_window_ms",
    "prefill_group",
)


def read_published(path: Path | str) -> list[MeasuredRow]:
    """Rows of catalogs/measurements/published.yaml (each with `source` and `quote`)."""
    path = Path(path)
    label = str(path)
    doc = Fields(read_document(path, label), label)
    doc.check_keys(("rows", "source", "notes"))
    raw = doc.raw.get("rows")
    if not isinstance(raw, list):
        raise FieldValueError(f"{label}: rows: expected a list of measurements")
    out = []
    for i, item in enumerate(raw):
        f = Fields(item, label, f"rows[{i}]")
        f.check_keys(_PUBLISHED_KEYS)
        f.string("source")
        given_kind = f.string("kind", choices=(*KINDS, "server", "interactive"))
        kind = KIND_ALIASES.get(given_kind, given_kind)  # MLPerf's scenario names, as in the CSV
        replicas = f.integer("replicas", 1, ge=1)
        thr = f.number("output_tokens_per_s", None, gt=0)
        per = lambda x: None if x is None else x / replicas  # noqa: E731  (system figures -> one replica)
        dataset = f.string("dataset", None)
        has_lengths = f.number("isl", 0.0) > 0 and f.number("osl", 0.0) > 0
        in_process = f.boolean("in_process", False)
        if in_process and in_process_conflict(kind):
            raise FieldValueError(f"{label}: rows[{i}].in_process: {in_process_conflict(kind)}")
        window = f.number("batcher_window_ms", None, gt=0)
        group = f.integer("prefill_group", None, ge=1)
        grouping = _grouping_conflict(kind, "agg", window, group)
        if grouping:
            raise FieldValueError(f"{label}: rows[{i}].{grouping}")
        out.append(
            MeasuredRow(
                row_id=f.string("id"),
                source=f.string("source"),
                origin=label,
                model_id=f.string("model"),
                system=f.string("system"),
                engine=f.string("engine", choices=ENGINES),
                engine_version=str(f.raw.get("engine_version") or ""),
                precision=f.string("precision"),
                mode="agg",
                kind=kind,
                isl=f.number("isl", 0.0, ge=0),
                osl=f.number("osl", 0.0, ge=0),
                concurrency=per(f.number("concurrency", None, gt=0)),
                request_rate_rps=per(f.number("request_rate_rps", None, gt=0)),
                tp=f.integer("tp", 1, ge=1),
                pp=f.integer("pp", 1, ge=1),
                kv_dtype=f.string("kv_dtype", None),
                ttft_ms=f.number("ttft_ms", None, gt=0),
                tpot_ms=f.number("tpot_ms", None, gt=0),
                ttft_p99_ms=f.number("ttft_p99_ms", None, gt=0),
                tpot_p99_ms=f.number("tpot_p99_ms", None, gt=0),
                output_tokens_per_s=per(thr),
                invalid=None if has_lengths or dataset else "input/output lengths not given by the source (no isl/osl and no dataset)",
                dataset=dataset,
                replicas=replicas,
                samples_per_s=per(f.number("samples_per_s", None, gt=0)),
                max_num_seqs=f.integer("max_num_seqs", None, ge=1),
                scenario=given_kind if given_kind in ("server", "interactive") else "",
                in_process=in_process,
                batcher_window_ms=window,
                prefill_group=group,
            )
        )
    return out


def shipped_dir() -> Path:
    from .catalog import default_catalog_dir

    return default_catalog_dir() / "measurements"


def shipped_rows(root: Path | None = None) -> list[MeasuredRow]:
    """Every row of the shipped measurement table (catalogs/measurements/), as recorded."""
    root = Path(root) if root is not None else shipped_dir()
    rows: list[MeasuredRow] = []
    for csv in sorted(root.glob("*.csv")):
        rows.extend(read_csv(csv))
    for yml in sorted(root.glob("*.yaml")):
        if yml.name == "sources.yaml":
            continue
        rows.extend(read_published(yml))
    return rows


def shipped_split(catalog: Catalog, root: Path | None = None) -> tuple[list[MeasuredRow], dict[str, str]]:
    """The shipped table's rows (`root`, default the catalog's measurements/) with their layouts
    read (read_layouts), and each row's role (split_roles over them)."""
    rows = read_layouts(shipped_rows(root if root is not None else Path(catalog.root) / "measurements"), catalog)
    return rows, split_roles(rows)


def _catalog_gpu(system: str, catalog: Catalog) -> Gpu | None:
    """The catalog's GPU a row's `system` names (SYSTEMS' aliases, or a device named inside a
    system's name); None when none, and when the cell is only a chip several catalog devices
    share (`H100`, `8 x H200`: shared_chip), which a workload may take as the catalog's alias (the
    SXM part) but a measurement, whose figures are its own device's, may not."""
    if shared_chip(system, catalog):
        return None
    try:
        return catalog.gpu(SYSTEMS.get(system.lower(), system))
    except SizerError:
        return device_in_system_name(system, catalog)


def system_name_words(system: str) -> list[str]:
    """A system cell's words as written, counts included (`8xMI355X_2xEPYC_9575F` -> 8xMI355X,
    2xEPYC, 9575F): cut at underscores, hyphens, spaces, commas, slashes and parentheses."""
    return [w for w in re.split(r"[-_\s,/()]+", str(system)) if w]


def _system_words(system: str) -> list[str]:
    """A system cell's words (cut at underscores, hyphens, spaces, commas, slashes, parentheses),
    each word's count dropped (`8x`, `x4`, and `8 x` written apart)."""
    words = [re.sub(r"^\d+x(?=[a-z])|(?<=[a-z0-9])x\d+$|^\d+x$", "", w, flags=re.I) for w in system_name_words(system)]
    words = [w for w in words if w]
    out: list[str] = []
    for i, w in enumerate(words):
        counted = w.isdigit() and i + 1 < len(words) and words[i + 1].lower() == "x"
        if counted or (w.lower() == "x" and i and words[i - 1].isdigit()):
            continue  # `8 x H200`: a count (a number alone may be a name's: `RTX PRO 6000`)
        out.append(w)
    return out


def shared_chip(system: str, catalog: Catalog, anywhere: bool = False) -> tuple[str, ...]:
    """The catalog devices (two or more) whose chip a system cell names without saying which of
    them ran: the cell, counts and vendor words dropped, is that chip (`H100`, `8 x H200`, `NVIDIA
    H200`), or with `anywhere` one of its words is (`NC_H100_v5_TRT`); () otherwise."""
    chips: dict[str, list[str]] = {}
    for g in catalog.gpus:
        chip = device_key(g.name.split("-")[0])
        if any(c.isdigit() for c in chip):  # a chip's name (H100, A100, GH200), not a brand's (RTX)
            chips.setdefault(chip, []).append(g.name)
    words = _system_words(system)
    keys = [device_key(w) for w in words] if anywhere else [device_key("-".join(words))]
    for key in keys:
        if len(chips.get(key, ())) > 1:
            return tuple(sorted(chips[key]))
    return ()


def no_device_reason(system: str, catalog: Catalog) -> str:
    """Why a row's system names no catalog device: a chip several devices share (which one ran
    decides its memory, bandwidth and links), or none at all."""
    shared = shared_chip(system, catalog, anywhere=True)
    if shared:
        return (
            f"system {system!r} names a chip the GPU catalog holds as {len(shared)} devices ({', '.join(shared)}), not which of them ran: "
            "write the device (its memory, bandwidth and links differ)"
        )
    return f"system {system!r} is not in the GPU catalog"


def read_layouts(rows: list[MeasuredRow], catalog: Catalog) -> list[MeasuredRow]:
    """The rows with each layout read as its run had it where the source recorded another
    (export_layout: aiconfigurator's export of InferenceX runs); the others unchanged. A row
    whose system is not in the catalog stays as recorded (resolve skips it, saying so). A row
    that repeats a read row's run as recorded (measurement_key: the same layout, load and
    figures; the database dump beside the table whose ids name InferenceX's layout) is read as
    that row is, so that the two stay one run, and so is every row of a configuration (config_key,
    as recorded) one of whose rows was read: the other points of its sweep."""
    from dataclasses import replace as _replace

    reads: list[tuple[int, int, int, int] | None] = []
    for row in rows:
        gpu = _catalog_gpu(row.system, catalog)
        reads.append(None if gpu is None else export_layout(row, nvlink_domain(gpu)))
    keys = [measurement_key(row) for row in rows]
    twin = {key: read for key, read in zip(keys, reads) if read is not None and key is not None}
    reads = [read if read is not None or row.layout_basis else twin.get(key) for row, key, read in zip(rows, keys, reads)]
    by_config: dict[str, set] = {}
    for row, read in zip(rows, reads):
        if read is not None:
            by_config.setdefault(row.config_key, set()).add(read)
    out = []
    for row, read in zip(rows, reads):
        one = by_config.get(row.config_key, set())
        if read is None and not row.layout_basis and len(one) == 1:
            read = next(iter(one))
        out.append(row if read is None else _replace(row, tp=read[0], attention_dp=read[1], moe_tp=read[2], moe_ep=read[3], layout_basis=EXPORT_LAYOUT_BASIS))
    return out


# ---------------------------------------------------------------------------------------------
# Resolving a row to a model, a device and a layout
# ---------------------------------------------------------------------------------------------


# Words of a checkpoint's name that say how its weights were stored, not what the network is: the
# row's `precision` (and `kv_dtype`) carry the format, so `nvidia/DeepSeek-R1-0528-FP4` and
# `amd/Llama-2-70b-chat-hf-FP8-KV` are checkpoints of the catalog's deepseek-r1 and llama-2-70b.
_FORMAT_WORDS = frozenset(
    {"fp8", "fp4", "nvfp4", "mxfp4", "int4", "int8", "w4a16", "w8a8", "w4a8", "w8a16", "awq", "gptq", "quark", "kv", "dynamic", "static", "preview", "quantized"}
)


def checkpoint_architecture(model_id: str) -> tuple[str, tuple[str, ...]]:
    """(the name a row's checkpoint id has without its storage-format words (_FORMAT_WORDS) and,
    for an MLPerf benchmark name, without its accuracy target and scenario (llama2-70b-99.9 ->
    llama2-70b, llama3_1-8b -> llama3.1-8b), "" where nothing was dropped; the format words it
    dropped). Only the rows' resolution uses it (_model_for), where the row's precision says the
    format: never a workload's model."""
    base = model_id.strip().rsplit("/", 1)[-1]
    name = mlperf_benchmark_base(base)
    words = [w for w in re.split(r"[-_\s]+", name) if w]
    dropped = [w for w in words if _is_format_word(w)]
    kept = [w for w in words if not _is_format_word(w)]
    last_format = max((i for i, w in enumerate(words) if _is_format_word(w)), default=len(words))
    if len(kept) > 1 and re.fullmatch(r"v\d+", words[-1]) and last_format < len(words) - 1:
        kept.pop()  # the checkpoint's own version after its format (nvidia/DeepSeek-R1-0528-FP4-v2), not a model's (DeepSeek-V3-FP8)
    out = "-".join(kept)
    return (out if out and out != base.lower() else ""), tuple(dropped)


# A storage-format word with the tensor it applies to (AMD's MLPerf checkpoints,
# amd/Llama-2-70b-chat-hf-WMXFP4-AMXFP4-KVFP8-Scale-UINT8-SQ: weights MXFP4, activations MXFP4, KV
# FP8, UINT8 scales, SmoothQuant) or a quantisation method's.
_FORMAT_WORD = re.compile(r"(?:w|a|kv)?(?:fp8|fp4|nvfp4|mxfp4|int4|int8|uint8)|sq|smoothquant|scales?")


def _is_format_word(word: str) -> bool:
    return word in _FORMAT_WORDS or _FORMAT_WORD.fullmatch(word) is not None


def _model_for(row: MeasuredRow, catalog: Catalog) -> tuple[ModelArch, str] | str:
    key = row.model_id.strip()
    entry = catalog.find_model(key) or catalog.find_model(key.split("/")[-1])
    if entry is None and key.lower() not in SAME_ARCHITECTURE:
        # an id the catalog knows only up to its variant and date words (catalog.match_model), or
        # up to its storage format and MLPerf benchmark words (checkpoint_architecture)
        entry = catalog.match_model(key)
        base, dropped = checkpoint_architecture(key)
        if entry is None and base:
            entry = catalog.match_model(base)
            named = sorted(set(dropped) - {"kv", "preview", "dynamic", "static", "scale", "scales", "sq", "smoothquant", "uint8"})
            if entry is not None and named and not row.precision:
                return f"model {row.model_id!r} is a checkpoint of {entry.name} stored as {'/'.join(named).upper()}, but the row gives no precision (fill `precision`)"
    name = entry.name if entry else SAME_ARCHITECTURE.get(key.lower())
    if name is None:
        return f"model {row.model_id!r} is not in the model catalog (add its config.json under catalogs/models/)"
    try:
        return catalog.model(name), name
    except SizerError as exc:
        return f"model {row.model_id!r}: {exc}"


def _weight_dtype(model: ModelArch, precision: str, gpu: Gpu | None = None) -> str | None:
    if not precision:
        return model.native_weight_dtype  # no precision given: the checkpoint's own format
    wd = PRECISIONS.get(precision)
    if wd is None:
        return None
    native = model.native_weight_dtype
    if precision == "fp4" and native == "mxfp4":
        return "mxfp4"  # gpt-oss: the checkpoint's MXFP4 experts are its 4-bit format
    if precision == "fp4" and gpu is not None:
        return gpu.fp4_format  # the device's FP4: NVFP4 on NVIDIA, OCP MXFP4 elsewhere (Gpu.fp4_format)
    if precision == "int4" and native == "int4":
        return "int4"
    return wd


def nvlink_domain(gpu: Gpu) -> int:
    """GPUs one NVLink domain joins: the node, or the rack for NVL72 systems (GB200/GB300),
    whose NVSwitch trays join 72 GPUs (gpus.yaml sources of gpus_per_node)."""
    return getattr(gpu, "nvlink_domain_gpus", None) or gpu.gpus_per_node


# aiconfigurator's database export wrote some of InferenceX's layouts with the expert-parallel size
# multiplied into the GPU count: the run InferenceX names tp8 ep8 (eight GPUs, the experts spread
# over them) appears as tp_size 64 / moe_tp 8 / moe_ep 8, its attention-DP variant as
# attention_dp_size 64, and vLLM's tp4 ep4 as attention_dp_size 4 / moe_ep 16. The same runs, figure
# for figure, appear in the 2026-03-25 table as tp 8 / moe_tp 1 / moe_ep 8 (attention DP: 1 / 8 /
# 1 / 8; vLLM: 4 / 1 / 1 / 4): of the 272 shipped rows export_layout reads (read_layouts reads 5
# more with them: their twins and sweeps in the dump), 33 have such a twin
# (db-dump/2026-04-27 or source_file=2026-04-06.csv against source_file=2026-03-25.csv in
# catalogs/measurements/aiconfigurator_silicon_sample.csv) and all 33 twins record the layout it
# reads. Eight B200s cannot hold 64 GPUs' tensor parallelism, and InferenceX's configs of the day
# name the runs the export's smaller layouts come from: `{ tp: 2, ep: 2, dp-attn: true }` for
# gpt-oss-120b under TensorRT-LLM on B200 (recorded attention_dp 4 / moe_tp 2 / moe_ep 2) and
# `{ tp: 2, ep: 2 }` for MiniMax-M2.5 FP8 under vLLM on B200 (recorded tp 2 / attention_dp 2 /
# moe_ep 4), with no 4-GPU layout of either (.github/configs/nvidia-master.yaml @235b232d2,
# 2026-04-07).
EXPORT_LAYOUT_BASIS = "aiconfigurator export: GPUs x expert-parallel size"
_INFERENCEX_TAG = re.compile(r"_tp(\d+)(?:_0)?_ep(\d+)(?:_0)?_")


def export_layout(row: "MeasuredRow", domain: int) -> tuple[int, int, int, int] | None:
    """(tp, attention_dp, moe_tp, moe_ep) of the run an aggregated InferenceX row of aiconfigurator's
    export measured, where its recorded layout is the export's GPUs x EP one (above); None where
    the recorded layout stands. Read so only with evidence: the row's id names InferenceX's
    layout (`_tp8_ep8_`) and the recorded GPUs are its tp x ep, or the recorded layout spans more
    GPUs than the device's NVLink domain (`domain`) while the read one fits in it. The patterns:

        tp X*Y, attention_dp 1,   moe_tp X, moe_ep Y      ->  tp X, attention_dp 1, moe_tp X/Y, moe_ep Y
        tp 1,   attention_dp X*Y, moe_tp X, moe_ep Y      ->  tp 1, attention_dp X, moe_tp X/Y, moe_ep Y
        tp X,   attention_dp Y,   moe_tp 1, moe_ep X*Y    ->  tp X, attention_dp 1, moe_tp X/Y, moe_ep Y"""
    if row.layout_basis or row.mode != "agg" or row.pp != 1 or not INFERENCEX_SOURCE.search(row.source or ""):
        return None  # read already, or not the export's
    tp, dp, mt, me = row.tp, max(row.attention_dp, 1), row.moe_tp, row.moe_ep
    if mt > 1 and me > 1 and tp * dp == mt * me and min(tp, dp) == 1:
        gpus, ep, attention_dp = mt, me, dp > 1
    elif mt == 1 and tp > 1 and dp > 1 and me == tp * dp:
        gpus, ep, attention_dp = tp, dp, False
    else:
        return None
    if gpus % ep or gpus > domain:
        return None
    tag = _INFERENCEX_TAG.search(row.row_id)
    if tag:
        if (int(tag[1]), int(tag[2])) != (gpus, ep):
            return None
    elif tp * dp <= domain:
        return None  # a layout that fits the domain, with nothing naming another
    return (1, gpus, gpus // ep, ep) if attention_dp else (gpus, 1, gpus // ep, ep)


def _layout_reason(model: ModelArch, gpu: Gpu, lay: Layout, moe_tp: int, moe_ep: int) -> str | None:
    if lay.pp > model.num_hidden_layers:
        return f"pp={lay.pp} pipeline stages for {model.num_hidden_layers} layers: a stage needs at least one"
    if lay.tp * lay.dp > nvlink_domain(gpu):
        return (
            f"tp={lay.tp} x attention_dp={lay.dp} = {lay.tp * lay.dp} GPUs per stage span more than the "
            f"{nvlink_domain(gpu)}-GPU NVLink domain of {gpu.name}: cross-node tensor/expert parallelism is not modelled"
        )
    if model.num_attention_heads % lay.tp:
        return f"{model.num_attention_heads} attention heads not divisible by tp={lay.tp}"
    if model.num_linear_layers and (model.linear_key_heads % lay.tp or model.linear_value_heads % lay.tp):
        return f"{model.linear_key_heads} key and {model.linear_value_heads} value heads of the Gated DeltaNet layers: both must divide by tp={lay.tp}"
    if not model.is_mla and model.num_key_value_heads % lay.tp and lay.tp % model.num_key_value_heads:
        return f"{model.num_key_value_heads} KV heads and tp={lay.tp}: one must divide the other"
    if model.is_moe and moe_tp and moe_ep and moe_tp * moe_ep != lay.tp * lay.dp:
        return (
            f"inconsistent layout: moe_tp={moe_tp} x moe_ep={moe_ep} = {moe_tp * moe_ep} GPUs for the experts, "
            f"but tp={lay.tp} x attention_dp={lay.dp} = {lay.tp * lay.dp} GPUs per stage"
        )
    if model.is_moe and lay.ep > 1 and model.num_experts % lay.ep:
        return f"{model.num_experts} experts not divisible by moe_ep={lay.ep}"
    return None


# An MLPerf result's path names its benchmark and scenario:
# <division>/<submitter>/results/<system>/<benchmark>/<scenario>/performance/run_1/mlperf_log_summary.txt
_MLPERF_RESULT = re.compile(r"/results/[^/]+/([^/]+)/(Server|Interactive|Offline)/", re.IGNORECASE)


def rate_scenario(row: "MeasuredRow") -> str:
    """The scenario whose latency bounds a rate row ran under: interactive when its kind column says
    so, or when its source is an MLPerf result of an Interactive scenario or of an -interactive
    benchmark (v5.0 and v5.1 file llama2-70b-interactive-99 under the Server scenario, v6.0 under
    Interactive); else server (a plain rate or server row on an MLPerf dataset)."""
    if row.scenario == "interactive":
        return "interactive"
    m = _MLPERF_RESULT.search(row.source or "")
    if m and (m.group(2).lower() == "interactive" or "interactive" in m.group(1).lower()):
        return "interactive"
    return "server"


def _mlperf_dataset_named(row: MeasuredRow, catalog: Catalog) -> MeasuredRow:
    """The row with its dataset named as the MLPerf dataset (`mlperf-*`) it reads, where it names
    one otherwise: by MLPerf's benchmark name (`llama2-70b-99.9`) or by the bare name MLPerf gives
    four of its benchmarks (`llama3.1-8b`, `mixtral-8x7b`, `llama3.1-405b`, `deepseek-r1`: no
    accuracy suffix), which `datasets.dataset` reads as MLPerf's where the catalog holds no dataset
    of that name. Its lengths are then MLPerf's, and so is its run: what reads a row as an MLPerf
    submission (mlperf_release, script_flags: the harness's release label, its FP8 KV cache) reads
    the `mlperf-` name. A name the catalog does not know is left for resolve to report."""
    if not row.dataset:
        return row
    from dataclasses import replace as _replace

    from .datasets import MLPERF_DATASETS, dataset

    name = mlperf_dataset_name(row.dataset)
    if name is None:
        try:
            found = dataset(row.dataset, catalog.root).name
        except SizerError:
            return row
        name = found if found in MLPERF_DATASETS else None
    return row if name is None or name == row.dataset else _replace(row, dataset=name)


def mlperf_release(row: "MeasuredRow") -> str:
    """The release label under which a row measured on an MLPerf dataset (`mlperf-*`) is fitted
    and predicted: "mlperf-<the release it names>", which the efficiency table reads as "mlperf"
    (efficiency.version_label), or "" when the row is not an MLPerf run or already says so.

    An MLPerf submission runs its submitter's own harness: NVIDIA's TensorRT engine builds (rows
    labelled mlperf-v4.0/v4.1/v5.0 already), AMD's tuned ROCm vLLM fork with its own scheduler and
    kernels, Red Hat's vLLM configuration. Its speed is the harness's more than the base release's:
    under the vLLM release it names, AMD's MLPerf v4.1 MI300X rows (vLLM 0.4.3) were the only
    MI300X rows of that release, so a later MLPerf run naming vLLM 0.9 or 0.10 took the offsets
    of AMD's TP 8 throughput tables of those releases and was predicted at 1,785-1,953 output
    tokens/s a GPU for Llama-2-70B Offline (0.4.3: 2,842; measured 2,835-3,063), and its Server
    TPOT at minutes."""
    if not row.dataset or not row.dataset.strip().lower().startswith("mlperf-"):
        return ""
    from .efficiency import version_label

    named = row.engine_version.strip()
    if version_label(named, row.engine) == "mlperf":
        return ""  # already labelled as the harness (NVIDIA's mlperf-v4.1)
    return f"mlperf-{named}" if named else "mlperf"


def resolve(row: MeasuredRow, catalog: Catalog) -> Resolved | Skipped:
    """The model, device and layout of a row, or why it cannot be modelled."""
    if row.invalid:
        return Skipped(row=row, reason=row.invalid)
    row = _mlperf_dataset_named(row, catalog)
    release = inferencex_release(row) or mlperf_release(row)
    if release:
        from dataclasses import replace as _replace

        row = _replace(row, engine_version=release)
    if row.engine not in ENGINES:
        return Skipped(row=row, reason=f"engine {row.engine!r} not modelled (expected one of {', '.join(ENGINES)})")
    found = _model_for(row, catalog)
    if isinstance(found, str):
        return Skipped(row=row, reason=found)
    model, model_name = found
    if model.model_type in UNMODELLED:
        return Skipped(row=row, reason=f"{model_name}: {UNMODELLED[model.model_type]}")
    run_reason = inferencex_run_reason(row)
    if run_reason:
        return Skipped(row=row, reason=run_reason)
    cold = inferencex_cold_start(row)
    if cold and (row.ttft_ms is not None or row.ttft_p99_ms is not None):
        from dataclasses import replace as _replace

        row = _replace(row, ttft_ms=None, ttft_p99_ms=None, ttft_left_out=cold)
    prompt = output = None
    bounds = None
    if row.dataset:
        from .datasets import dataset

        try:
            named = dataset(row.dataset, catalog.root)
        except SizerError as exc:
            return Skipped(row=row, reason=f"dataset: {exc}")
        prompt, output = named.prompt, named.output
        per_request = row.measured_output_tokens_per_request
        if per_request:
            output = output.scaled_to_mean(per_request)  # the tokens this run generated per request
        if row.kind == "rate":
            ms = named.bounds_ms(rate_scenario(row))
            if ms is not None:
                bounds = (ms[0] / 1000.0, ms[1] / 1000.0)
        from dataclasses import replace as _replace

        if row.throughput_basis and row.output_tokens_per_s is None:
            row = _replace(row, output_tokens_per_s=row.samples_per_s * output.mean)
        if row.rate_basis == "output_tokens_per_s" and bounds is not None:
            row = _replace(row, request_rate_rps=row.output_tokens_per_s / output.mean)
    elif row.isl and row.osl and model.max_context_tokens and row.isl + row.osl > model.max_context_tokens:
        # no engine serves it: vLLM refuses a --max-model-len above the model's, TRT-LLM and SGLang
        # cap max_seq_len at it; the row's lengths are not what ran
        return Skipped(
            row=row,
            reason=f"isl + osl = {row.isl + row.osl:,.0f} tokens exceeds {model_name}'s context, {model.context_words} "
            "(a rope-scaled launch: add the model under catalogs/models/ with the rope_scaling it ran with)",
        )
    if row.rate_basis and bounds is None:
        # a rate taken from the run's own throughput predicts that throughput back, whatever the
        # model: only a run at the edge of its benchmark's bounds says something (validate.bounded_rates_rps)
        return Skipped(row=row, reason=f"kind rate: request_rate_rps missing, and {row.dataset or 'a row of fixed lengths'} gives no {rate_scenario(row)} latency bounds to read the run's throughput against")
    if row.max_model_len and model.max_context_tokens and row.max_model_len > model.max_context_tokens:
        return Skipped(
            row=row,
            reason=f"max_model_len {row.max_model_len:,} exceeds {model_name}'s context, {model.context_words} "
            "(engines refuse it; a rope-scaled launch: add the model under catalogs/models/ with the rope_scaling it ran with)",
        )
    if row.max_model_len and not row.dataset and row.isl and row.osl and row.isl + row.osl > row.max_model_len:
        # vLLM rejects a prompt longer than max_model_len and stops a sequence that reaches it
        return Skipped(
            row=row,
            reason=f"isl + osl = {row.isl + row.osl:,.0f} tokens exceeds the context the run was launched with (max_model_len {row.max_model_len:,}): "
            "the engine refuses or cuts such requests, so the row's lengths are not what ran",
        )
    ratio = harness_flags(row).get("range_ratio")
    if ratio and not row.dataset:
        prompt, output = _uniform_lengths(row.isl, ratio), _uniform_lengths(row.osl, ratio)
    gpu = _catalog_gpu(row.system, catalog)
    if gpu is None:
        return Skipped(row=row, reason=no_device_reason(row.system, catalog))
    wd = _weight_dtype(model, row.precision, gpu)
    if wd is None:
        return Skipped(row=row, reason=f"precision {row.precision!r} not modelled (expected one of {', '.join(PRECISIONS)})")
    expert_bits = QUANT_MODES.get(row.moe_quant_mode, (None,))[0]
    scheme_bits = _PRECISION_BITS.get(wd)
    if model.is_moe and expert_bits and scheme_bits and expert_bits != scheme_bits:
        # the experts hold most of an MoE model's bytes: read in the row's precision, a w4afp8
        # deployment's would be twice what it streams
        return Skipped(
            row=row,
            reason=f"moe_quant_mode {row.moe_quant_mode!r} stores the experts in {expert_bits} bits where the precision gives {scheme_bits} ({wd}): "
            "experts and dense layers in different formats are not modelled (fill precision with the experts' format to size them so)",
        )
    if wd in ("nvfp4", "mxfp4") and wd != model.native_weight_dtype and not gpu.supports("fp4"):
        return Skipped(row=row, reason=f"precision fp4 on {gpu.name}, which has no FP4 tensor cores in the catalog")
    harness = harness_flags(row)
    if harness.get("max_num_batched_tokens") and not row.max_num_batched_tokens:
        from dataclasses import replace as _replace

        row = _replace(row, max_num_batched_tokens=float(harness["max_num_batched_tokens"]))
    if harness.get("mamba_ssm_dtype") and model.num_linear_layers:
        # the harness's --mamba-ssm-dtype (SGLang; its env SGLANG_MAMBA_SSM_DTYPE) overrides the
        # config's: the recurrent state the run kept, in memory and in every step's reads
        from dataclasses import replace as _replace

        model = _replace(model, linear_state_dtype=harness["mamba_ssm_dtype"])
    kv = row.kv_dtype or harness.get("kv_dtype") or DEFAULT_KV.get(row.engine, {}).get(row.precision, "bf16")
    kv = resolve_kv_dtype("/".join(normalise_dtype(p) for p in kv.split("/")), model)  # `auto`: the model's dtype, as the engines read it
    if any(p not in KV_DTYPES for p in kv.split("/")):
        return Skipped(row=row, reason=f"kv_dtype {row.kv_dtype!r} not modelled (expected one of {', '.join(KV_DTYPES)} or auto)")
    if row.mode == "disagg":
        if row.prefill is None or row.decode is None:
            return Skipped(
                row=row,
                reason="disaggregated row without worker counts (prefill_num_workers / decode_num_workers): the split of the load between workers is unknown",
            )
        for part in (row.prefill, row.decode):
            reason = _layout_reason(model, gpu, part.layout, 0, 0)
            if reason:
                return Skipped(row=row, reason=reason)
        return Resolved(
            row=row,
            model=model,
            model_name=model_name,
            gpu=gpu,
            layout=row.decode.layout,
            weight_dtype=wd,
            kv_dtype=kv,
            prefill_layout=row.prefill.layout,
            prefill_workers=row.prefill.workers,
            decode_workers=row.decode.workers,
            prompt=prompt,
            output=output,
        )
    if row.mode != "agg":
        return Skipped(row=row, reason=f"mode {row.mode!r} not modelled (expected agg or disagg)")
    row = read_layouts([row], catalog)[0]
    dp = max(row.attention_dp, 1)
    ep = row.moe_ep if model.is_moe and row.moe_ep > 1 else 1
    lay = Layout(tp=row.tp, pp=row.pp, dp=dp, ep=ep)
    reason = _layout_reason(model, gpu, lay, row.moe_tp, row.moe_ep)
    if reason:
        return Skipped(row=row, reason=reason)
    return Resolved(
        row=row, model=model, model_name=model_name, gpu=gpu, layout=lay, weight_dtype=wd, kv_dtype=kv, prompt=prompt, output=output,
        latency_bounds_s=bounds,
    )


# ---------------------------------------------------------------------------------------------
# The fit / score split
# ---------------------------------------------------------------------------------------------


def _hash(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:12], 16)


def measurement_key(row: MeasuredRow) -> tuple | None:
    """What identifies one run, whichever file or label carried it: the system, engine, formats,
    mode, kind, layout, lengths and load, and the figures it measured (to 7 significant digits).
    The model's name is left out: one run is exported under the checkpoint it served and under
    its architecture's name (InferenceX's DeepSeek-R1 runs appear as deepseek-r1 in the
    2026-03-25 and 2026-04-06 exports and as DeepSeek-V3 in its database dump, every figure
    equal). None for a row that measured nothing."""
    figures = tuple(None if v is None else float(f"{v:.7g}") for v in (row.ttft_ms, row.tpot_ms, row.output_tokens_per_s))
    if all(v is None for v in figures):
        return None
    lay = (row.tp, row.pp, row.attention_dp, row.moe_tp, row.moe_ep, row.replicas)
    workers = tuple((w.workers, w.layout.label()) if w else None for w in (row.prefill, row.decode))
    return (row.system.lower(), row.engine, row.precision, row.mode, row.kind, lay, workers, (row.dataset or "").lower(), row.isl, row.osl, row.concurrency, row.request_rate_rps, figures)


def copies(rows: list[MeasuredRow]) -> dict[str, str]:
    """Row id -> the id of the first row (in the given order) that reports the same run
    (measurement_key), for every row that repeats an earlier one; copies are one measurement:
    scored once, fitted once, and always on the same side of the fit/score split."""
    first: dict[tuple, str] = {}
    out: dict[str, str] = {}
    for r in rows:
        key = measurement_key(r)
        if key is None:
            continue
        if key in first:
            out[r.row_id] = first[key]
        else:
            first[key] = r.row_id
    return out


def split_roles(rows: list[MeasuredRow]) -> dict[str, str]:
    """Row id -> "fit" or "score", deterministically.

    Rows are grouped into configurations (model, system, engine, precision, layout, lengths: the
    rows of one concurrency sweep), so a configuration is never partly fitted and partly scored;
    configurations that report the same run (copies, measurement_key) are one group, so no run is
    fitted under one label and scored under another. Within each stratum (model family, system,
    engine, of the group's first configuration in key order) the groups are ordered by a SHA-256
    hash of that configuration's key and alternate score, fit, score, ...: every stratum with any
    group appears in scoring, and one with two or more also in fitting. Give it the rows with
    their layouts read (read_layouts, shipped_split): a run whose source recorded another layout
    is then one configuration with the runs of the layout it had, and one group with its twin."""
    parent: dict[str, str] = {}

    def find(c: str) -> str:
        while parent.setdefault(c, c) != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    by_id = {r.row_id: r for r in rows}
    for rid, orig in copies(rows).items():
        a, b = find(by_id[rid].config_key), find(by_id[orig].config_key)
        if a != b:
            parent[max(a, b)] = min(a, b)
    stratum_of: dict[str, tuple[str, str, str]] = {}
    for r in sorted(rows, key=lambda r: r.config_key):
        stratum_of.setdefault(r.config_key, (r.family, r.system.lower(), r.engine))
    strata: dict[tuple[str, str, str], set[str]] = {}
    for c in stratum_of:
        root = find(c)
        strata.setdefault(stratum_of[root], set()).add(root)
    role_of_group: dict[str, str] = {}
    for key in sorted(strata):
        groups = sorted(strata[key], key=lambda c: (_hash(c), c))
        for i, c in enumerate(groups):
            role_of_group[c] = "score" if i % 2 == 0 else "fit"
    return {r.row_id: role_of_group[find(r.config_key)] for r in rows}
