"""One configuration's memory, derived step by step as the seeds derive it, as data.

`explain_config` returns an Explanation: the MemoryBreakdown of the binding pipeline stage plus
the derivation as (label, formula, value) lines, so the CLI can print it and tests can read it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from .candidates import parallelism_reason
from .catalog import Gpu, served_id_warnings
from .engines import EngineOverrides, EngineSettings, SglangPolicy, TrtllmPolicy, VllmRelease, _version_tuple, engine_policy, resolve_kv_dtype
from .errors import FieldValueError
from .memory import KvFormat, MemoryBreakdown
from .model import ModelArch, weight_scheme
from .residency import Admission, admission
from .units import GIB, MIB, WEIGHT_DTYPES, ceil_div, kv_element_bytes
from .workload import AdmissionPolicy


@dataclass(frozen=True, slots=True, kw_only=True)
class Line:
    label: str
    formula: str
    value: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Explanation:
    model: ModelArch
    gpu: Gpu
    tp: int
    pp: int
    kv_dtype: str
    weight_dtype: str
    engine: str
    engine_defaults: EngineSettings
    memory: MemoryBreakdown
    admission: Admission
    lines: tuple[Line, ...]
    launch_command: str
    warnings: tuple[str, ...] = ()
    engine_log: tuple[str, ...] = ()  # the startup lines the engine release itself prints, with sizer's figures
    requested_kv_dtype: str = ""


# vLLM's --quantization methods and the weight format each implies (None: the checkpoint's own,
# read from its quantization_config).
QUANTIZATION_WEIGHTS: dict[str, str | None] = {
    "fp8": "fp8",
    "fbgemm_fp8": "fp8",
    "ptpc_fp8": "fp8",
    "awq": "int4",
    "awq_marlin": "int4",
    "gptq": "int4",
    "gptq_marlin": "int4",
    "marlin": "int4",
    "mxfp4": "mxfp4",
    "modelopt_fp4": "nvfp4",
    "nvfp4": "nvfp4",
    "compressed-tensors": None,
    "compressed_tensors": None,
    "modelopt": None,
}


def weight_dtype_of_quantization(method: str, model: ModelArch) -> str:
    """The weight format vLLM's `--quantization METHOD` runs `model` in."""
    key = str(method).strip().lower()
    if key not in QUANTIZATION_WEIGHTS:
        raise FieldValueError(f"--quantization: expected one of {', '.join(QUANTIZATION_WEIGHTS)}, got {method!r}")
    return QUANTIZATION_WEIGHTS[key] or model.native_weight_dtype


# trtllm-serve's --extra_llm_api_options file: the LLM API arguments its memory rule reads
# (tensorrt_llm/llmapi/llm_args.py KvCacheConfig: dtype, free_gpu_memory_fraction, tokens_per_block)
_KV_CACHE_CONFIG_READ = {"dtype": "kv_dtype", "free_gpu_memory_fraction": "memory_fraction", "tokens_per_block": "block_size"}


def trtllm_api_options(path) -> dict:
    """What sizer's TensorRT-LLM rule reads from an --extra_llm_api_options YAML file:
    {"kv_dtype", "memory_fraction", "block_size"} (None where the file does not set them) and
    "warnings" naming every key it does not read (nothing in the file is dropped silently). A
    file that is not a mapping, or a value of the wrong type, is a one-line error naming the
    file and the field."""
    from .errors import FieldTypeError
    from .schema import read_document

    label = f"--extra_llm_api_options {path}"
    doc = read_document(path, label)
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise FieldTypeError(f"{label}: expected a mapping of LLM API arguments (such as kv_cache_config: {{dtype: fp8}}), got {type(doc).__name__}")
    out: dict = {"kv_dtype": None, "memory_fraction": None, "block_size": None}
    unread = [str(k) for k in doc if k != "kv_cache_config"]
    kv = doc.get("kv_cache_config")
    if kv is not None:
        if not isinstance(kv, dict):
            raise FieldTypeError(f"{label}: kv_cache_config: expected a mapping, got {type(kv).__name__}")
        unread += [f"kv_cache_config.{k}" for k in kv if k not in _KV_CACHE_CONFIG_READ]
        dtype = kv.get("dtype")
        if dtype is not None:
            if not isinstance(dtype, str):
                raise FieldTypeError(f"{label}: kv_cache_config.dtype: expected a string such as fp8 or auto, got {dtype!r}")
            out["kv_dtype"] = dtype
        fraction = kv.get("free_gpu_memory_fraction")
        if fraction is not None:
            if isinstance(fraction, bool) or not isinstance(fraction, (int, float)):
                raise FieldTypeError(f"{label}: kv_cache_config.free_gpu_memory_fraction: expected a number, got {fraction!r}")
            if not 0 < fraction <= 1:
                raise FieldValueError(f"{label}: kv_cache_config.free_gpu_memory_fraction: expected a number > 0 and <= 1, got {fraction:g}")
            out["memory_fraction"] = float(fraction)
        block = kv.get("tokens_per_block")
        if block is not None:
            if isinstance(block, bool) or not isinstance(block, int):
                raise FieldTypeError(f"{label}: kv_cache_config.tokens_per_block: expected an integer, got {block!r}")
            if block < 1:
                raise FieldValueError(f"{label}: kv_cache_config.tokens_per_block: expected an integer >= 1, got {block}")
            out["block_size"] = block
    out["warnings"] = (f"{label}: {', '.join(unread)} not read: sizer's TensorRT-LLM memory rule reads kv_cache_config's dtype, "
                       "free_gpu_memory_fraction and tokens_per_block",) if unread else ()
    return out


def gguf_file_type(path: str) -> tuple[str, str]:
    """(model, weight dtype) of a GGUF file named as llama.cpp's files are, <model>-<TYPE>.gguf
    (sizer's launch lines write them so: engines.LlamaCppPolicy.gguf_file). The file is not read:
    its name is all explain has of it."""
    from .units import GGUF_TYPE_NAMES

    name = Path(str(path)).name
    stem = name[: -len(".gguf")] if name.lower().endswith(".gguf") else ""
    model, _, kind = stem.rpartition("-")
    by_name = {v.lower(): k for k, v in GGUF_TYPE_NAMES.items()}
    if not model or kind.lower() not in by_name:
        raise FieldValueError(
            f"-m {path}: expected a GGUF file named <model>-<type>.gguf with the type one of {', '.join(GGUF_TYPE_NAMES.values())} "
            "(llama.cpp's file names, as sizer's launch lines write them), so that the model and its weight type are known"
        )
    return model, by_name[kind.lower()]


def llama_server_flags(*, ctx_size: int | None, parallel: int | None, cache_type_k: str | None, cache_type_v: str | None,
                       flash_attn: str | None, split_mode: str | None, tensor_split: str | None) -> dict:
    """What a llama-server line's flags (-c, -np, -ngl, --cache-type-k/-v, --flash-attn,
    --split-mode, --tensor-split) mean to sizer's llama.cpp rule: {"n_parallel", "max_model_len"
    (a slot's context, -c / -np: llama-server gives each slot n_ctx / n_parallel cells), "kv_dtype"
    (K/V), "pp" (the layer split's GPUs)}, None where not given, and "warnings". A value sizer's
    rule cannot size (a row split, a quantised V cache without flash attention, -c below -np) is
    a one-line error naming the flag (-ngl needs the model: check_gpu_layers)."""
    from .units import LLAMACPP_CACHE_TYPES

    out: dict = {"n_parallel": parallel, "max_model_len": None, "kv_dtype": None, "pp": None, "warnings": ()}
    if ctx_size is not None:
        slots = parallel if parallel is not None else 4  # llama-server's default slots, as the rule takes them (LlamaCppPolicy.settings)
        if ctx_size < slots:
            raise FieldValueError(f"-c {ctx_size}: fewer cells than the {slots} slots (-np) it is split among")
        out["max_model_len"] = ctx_size // slots
        if parallel is None:
            out["warnings"] = (
                f"-c {ctx_size} without -np: read as 4 slots of {ctx_size // 4:,} cells each; llama-server without -np runs 1 slot of all "
                "of them before ggml-org/llama.cpp#16736 (2025-10) and 4 sharing them in one unified cache since: give -np to size the line as it runs",
            )
    for flag, value in (("--cache-type-k", cache_type_k), ("--cache-type-v", cache_type_v)):
        if value is not None and value not in LLAMACPP_CACHE_TYPES:
            raise FieldValueError(f"{flag} {value}: expected one of {', '.join(LLAMACPP_CACHE_TYPES)}")
    if cache_type_k is not None or cache_type_v is not None:
        k, v = cache_type_k or "f16", cache_type_v or "f16"
        out["kv_dtype"] = k if k == v else f"{k}/{v}"
    if flash_attn is not None:
        if flash_attn not in ("on", "off", "auto"):
            raise FieldValueError(f"--flash-attn {flash_attn}: expected on, off or auto")
        if flash_attn == "off" and (cache_type_v or "f16") not in ("f16", "f32", "bf16"):
            raise FieldValueError(f"--flash-attn off: llama.cpp quantises the V cache ({cache_type_v}) only with flash attention")
    if split_mode is not None and split_mode not in ("layer", "none"):
        raise FieldValueError(f"--split-mode {split_mode}: sizer sizes llama.cpp's layer split (--split-mode layer, its pp) only")
    if tensor_split is not None:
        parts = [p.strip() for p in str(tensor_split).split(",")]
        try:
            shares = [float(p) for p in parts]
        except ValueError:
            shares = []
        if not shares or any(x <= 0 for x in shares) or len(set(shares)) != 1:
            raise FieldValueError(f"--tensor-split {tensor_split}: sizer sizes an even layer split, equal shares such as 1,1 (one a GPU)")
        if split_mode == "none" and len(shares) > 1:
            raise FieldValueError(f"--tensor-split {tensor_split}: --split-mode none keeps the model on one GPU")
        out["pp"] = len(shares)
    return out


def check_gpu_layers(model: ModelArch, gpu_layers: int | None) -> None:
    """-ngl: sizer sizes a model wholly on its GPUs, as -ngl 999 (or the layers and the output
    layer, layers + 1) puts it; fewer leaves layers on the CPU, whose memory and speed it does not size."""
    if gpu_layers is not None and gpu_layers < model.num_hidden_layers + 1:
        raise FieldValueError(
            f"-ngl {gpu_layers}: {model.name} has {model.num_hidden_layers} layers and an output layer; sizer sizes every one on the "
            f"GPUs (-ngl {model.num_hidden_layers + 1} or more, such as 999), not layers left on the CPU"
        )


def _blocks_formula(m, model: ModelArch, policy, settings) -> str:
    """How the blocks were counted: floor(pool / block), or llama.cpp's cells, with the sliding
    layers' smaller cache (LlamaCppPolicy.cache_cells) named."""
    if m.engine == "trtllm":
        return (f"ceil(max_tokens / {m.block_size_tokens}): TensorRT-LLM rounds up to whole blocks "
                "(KVCacheManager.calculate_max_num_blocks; kvCacheManager.cpp ceilDiv)")
    if m.engine != "llamacpp":
        return "floor(pool / block)"
    cells, swa = policy.cache_cells(model, settings)
    where = "-c, one cell a token" + ("" if m.kv_blocks_per_gpu == cells else f"; {cells:,} do not fit beside the weights, these do")
    if swa < cells:
        rule = (
            "one cache the slots share (-np not given): min(n_ctx, n_swa x slots + n_ubatch)"
            if settings.kv_unified
            else "min(slot cells, n_swa + n_ubatch) a slot"
        )
        return f"n_ctx cells ({where}); the sliding-window layers keep {swa:,} (llama_kv_cache_iswa: {rule}, padded to 256)"
    return f"n_ctx cells ({where})"


def _rope_rows_words(rows: tuple[int, ...]) -> str:
    """The rows of the rotary caches: "131072", or "(131072 + 1048576)" for two ropes."""
    return str(rows[0]) if len(rows) == 1 else "(" + " + ".join(str(r) for r in rows) + ")"


def _gib(x: float) -> str:
    return f"{x / GIB:,.2f} GiB"


def _g(x: float) -> str:
    """vLLM's format_gib: GiB rounded to two decimals, trailing zeros dropped (utils/mem_utils.py)."""
    return f"{round(x / GIB, 2):g}"


def trtllm_log_lines(m: MemoryBreakdown, version: str, settings=None) -> tuple[str, ...]:
    """TensorRT-LLM's start-up lines about the KV pool, per release, with sizer's figures: the PyTorch
    backend's profiling line (tensorrt_llm/_torch/pyexecutor/_util.py: 0.17/0.18 "Peak memory ... available
    KV cache memory when calculating max tokens"; 0.19+ adds "fraction is set ..., kv size is ...", the
    device total and the temporary KV; 1.0+ "Estimated max memory in KV cache : X GiB", before it
    "Estimated max tokens in KV cache : N"), then each rank's KV cache manager (cpp/tensorrt_llm/
    batch_manager/kvCacheManager.cpp: "[MemUsageChange] Allocated %0.2f GiB for max tokens in paged KV
    cache (%d).", the primary pool's bytes over 1 << 30 and its blocks x tokens per block)."""
    v = _version_tuple(version)
    f = m.memory_fraction
    avail = m.engine_available_kv_bytes
    bpt = m.kv_bytes_per_token_per_gpu
    total = m.usable_memory_bytes
    with_kv = TrtllmPolicy.profiles_with_kv(version)
    tmp = TrtllmPolicy.estimation_tokens(settings) * bpt if settings is not None and with_kv else 0.0
    peak = total - (avail / f if f else 0.0) + tmp
    max_tokens = int(avail // bpt) if bpt else 0
    out = [
        f"[TRT-LLM] [I] Peak memory during memory usage profiling (torch + non-torch): {peak / GIB:.2f} GiB, available KV cache memory "
        f"when calculating max tokens: {avail / GIB:.2f} GiB"
        + (f", fraction is set {f:g}, kv size is {bpt:.0f}. device total memory {total / GIB:.2f} GiB, , tmp kv_mem {tmp / GIB:.2f} GiB" if with_kv else "")
    ]
    out.append(
        f"[TRT-LLM] [I] Estimated max memory in KV cache : {avail / GIB:.2f} GiB" if v >= (1, 0) else f"[TRT-LLM] [I] Estimated max tokens in KV cache : {max_tokens}"
    )
    out.append(f"[TensorRT-LLM][INFO] Number of tokens per block: {m.block_size_tokens}.")
    out.append(
        f"[TensorRT-LLM][INFO] [MemUsageChange] Allocated {m.engine_gpu_blocks * m.block_bytes_per_gpu / GIB:.2f} GiB for max tokens in paged KV cache "
        f"({m.engine_gpu_blocks * m.block_size_tokens})."
    )
    if settings is not None:
        seq = settings.max_model_len
        if m.engine_kv_tokens and m.engine_kv_tokens < seq:
            seq = TrtllmPolicy.seq_len_cap(m.engine_kv_tokens, m.block_size_tokens)
            out.append(f"[TRT-LLM] [W] Adjusted max_seq_len to {seq}")
        out.append(
            f"[TRT-LLM] [I] max_seq_len={seq}, max_num_requests={settings.max_num_seqs}, max_num_tokens={settings.max_num_batched_tokens}, "
            f"max_batch_size={settings.max_num_seqs}"
        )
    return tuple(out)


def engine_log_lines(
    m: MemoryBreakdown, engine: str, version: str, graph_estimate: float = 0.0, latent_kv: bool = False, settings=None
) -> tuple[str, ...]:
    """The startup lines `engine` at `version` prints about memory, with sizer's figures in them, in that
    release's own format (vLLM: gpu_model_runner.py load_model, gpu_worker.py determine_available_memory
    and MemoryProfilingResult.__repr__, gpu_model_runner.py profile_cudagraph_memory, kv_cache_utils.py
    _report_kv_cache_config; V0 worker.py and executor logs; SGLang model_runner.py and
    mem_cache/memory_pool.py; TensorRT-LLM batch_manager/kvCacheManager.cpp). llama.cpp gets none:
    its KV line's sequence count depends on the release's unified-cache default."""
    from .engines import VllmPolicy, VllmRelease, _version_tuple

    weights = m.weights_bytes_per_gpu + m.runtime_buffer_bytes_per_gpu
    if engine == "vllm" and VllmPolicy().era(version) == "v1":
        r = VllmRelease.of(version)
        v = r.version
        out = []
        if v >= (0, 13):
            out.append(f"Model loading took {_g(weights)} GiB memory and ... seconds")
        else:
            out.append(f"Model loading took {weights / GIB:.4f} GiB and ... seconds")
        non_kv = weights + m.activation_bytes_per_gpu + m.runtime_overhead_bytes_per_gpu
        if v >= (0, 9):
            out.append(
                f"Memory profiling takes ... seconds. Total non KV cache memory: {_g(non_kv)}GiB; torch peak memory increase: "
                f"{_g(m.activation_bytes_per_gpu)}GiB; non-torch forward increase memory: {_g(m.runtime_overhead_bytes_per_gpu)}GiB; "
                f"weights memory: {_g(weights)}GiB."
            )
        if v >= (0, 19) and graph_estimate:
            out.append(f"Estimated CUDA graph memory: {graph_estimate / GIB:.2f} GiB total"
                       + ("" if m.cuda_graph_bytes_per_gpu else "   (0.19: taken from the headroom, not from the KV budget)"))
        if v >= (0, 9):
            out.append(f"Available KV cache memory: {_g(m.engine_available_kv_bytes) if v >= (0, 15) else f'{m.engine_available_kv_bytes / GIB:.2f}'} GiB")
        out.append(f"GPU KV cache size: {m.engine_kv_tokens:,} tokens")
        out.append(f"Maximum concurrency for {m.max_model_len:,} tokens per request: {m.engine_max_concurrency:.2f}x")
        return tuple(out)
    if engine == "vllm":
        return (
            f"Loading model weights took {weights / GIB:.4f} GB",
            f"# GPU blocks: {m.engine_gpu_blocks}, # CPU blocks: ...",
            f"Maximum concurrency for {m.max_model_len} tokens per request: {m.engine_max_concurrency:.2f}x",
        )
    if engine == "sglang":
        # SGLang prints GB of 1024**3 bytes (mem_cache/memory_pool.py: GB = 1024 * 1024 * 1024), as
        # its weights line; MHATokenToKVPool gives K and V, MLATokenToKVPool the one latent buffer
        pool = m.engine_available_kv_bytes / GIB
        if latent_kv:  # a multi-head latent attention model's cache: one latent vector a token
            kv_line = f"KV Cache is allocated. #tokens: {m.engine_kv_tokens}, KV size: {pool:.2f} GB"
        else:
            kv_line = f"KV Cache is allocated. #tokens: {m.engine_kv_tokens}, K size: {pool / 2:.2f} GB, V size: {pool / 2:.2f} GB"
        if m.state_slots:  # MambaPool: S + 1 slots allocated (one padding slot), conv and recurrent state apart
            per = m.state_pool_bytes_per_gpu / m.state_slots
            conv_share = m.state_conv_bytes_per_gpu / m.state_pool_bytes_per_gpu
            mamba = (
                f"Mamba Cache is allocated. max_mamba_cache_size: {m.state_slots}, conv_state size: {(m.state_slots + 1) * per * conv_share / GIB:.2f} GB, "
                f"ssm_state size: {(m.state_slots + 1) * per * (1 - conv_share) / GIB:.2f} GB"
            )
            return (f"Load weight end. ... mem usage={weights / GIB:.2f} GB.", mamba, kv_line)
        return (f"Load weight end. ... mem usage={weights / GIB:.2f} GB.", kv_line)
    if engine == "trtllm":
        return trtllm_log_lines(m, version, settings)
    return ()


def explain_config(
    model: ModelArch,
    gpu: Gpu,
    *,
    tp: int = 1,
    pp: int = 1,
    kv_dtype: str = "bf16",
    weight_dtype: str | None = None,
    context_tokens: int | None = None,
    gpu_memory_utilization: float | None = None,
    block_size_tokens: int | None = None,
    max_num_seqs: int | None = None,
    max_num_batched_tokens: int | None = None,
    engine: str = "vllm",
    engine_version: str | None = None,
    max_model_len: int | None = None,
    n_parallel: int | None = None,
    speculative_tokens: int = 0,
    shared_prefix_tokens: int = 0,
    flashinfer_installed: bool | None = None,
    radix_cache: bool | None = None,
    data_parallel_size: int = 1,
) -> Explanation:
    """Memory of `model` on `gpu` at TP `tp`, PP `pp`, with the given KV and weight formats.

    `gpu_memory_utilization` is the engine's memory fraction (vLLM gpu_memory_utilization, SGLang
    mem_fraction_static, TensorRT-LLM free_gpu_memory_fraction). `flashinfer_installed` (vLLM): whether
    FlashInfer is installed (True in vLLM's Docker images; None: as `pip install vllm` of that release
    leaves it, which is with FlashInfer from 0.17 on). `radix_cache` (SGLang): False is
    --disable-radix-cache, which gives a Gated DeltaNet model's states as many slots as
    --max-running-requests (None: on, SGLang's default). `data_parallel_size` (vLLM, a dense model): the engine
    cores each sized as one; it turns off the all-reduce fusion before 0.21 (allreduce_fusion_on)."""
    policy = engine_policy(engine)
    requested_kv = kv_dtype
    kv_dtype = resolve_kv_dtype(kv_dtype, model) if engine != "llamacpp" else kv_dtype
    kv = KvFormat.of(kv_dtype)
    problem = policy.device_reason(gpu)
    if problem:
        raise FieldValueError(f"--engine {engine}: {problem}")
    problem = policy.kv_reason(gpu, kv)
    if problem:
        raise FieldValueError(f"--kv-dtype: {problem}")
    # default: the checkpoint's own format, or 16 bits where the engine has none such (llama.cpp
    # converts an FP8 checkpoint to a 16-bit GGUF file)
    weight_dtype = weight_dtype or ("bf16" if policy.weight_reason(model.native_weight_dtype, model) else model.native_weight_dtype)
    if weight_dtype not in WEIGHT_DTYPES:
        raise FieldValueError(f"--weight-dtype: expected one of {', '.join(WEIGHT_DTYPES)}, got {weight_dtype!r}")
    problem = policy.weight_reason(weight_dtype, model)
    if problem:
        raise FieldValueError(f"--weight-dtype {weight_dtype} under --engine {engine}: {problem}")
    for name, value in (
        ("--tp", tp),
        ("--pp", pp),
        ("--context-tokens", context_tokens),
        ("--block-size", block_size_tokens),
        ("--max-num-seqs", max_num_seqs),
        ("--max-num-batched-tokens", max_num_batched_tokens),
        ("--max-model-len", max_model_len),
        ("--n-parallel", n_parallel),
    ):
        if value is not None and value < 1:
            raise FieldValueError(f"{name}: expected an integer >= 1, got {value}")
    for name, value in (("--speculative-tokens", speculative_tokens), ("--shared-prefix-tokens", shared_prefix_tokens)):
        if value < 0:
            raise FieldValueError(f"{name}: expected an integer >= 0, got {value}")
    problem = parallelism_reason(model, gpu, tp, pp) or policy.parallelism_reason(tp, pp)
    if problem:
        raise FieldValueError(f"--tp/--pp: {problem}")
    if gpu_memory_utilization is not None and not 0 < gpu_memory_utilization <= 1:
        raise FieldValueError(f"--gpu-memory-utilization: expected a number > 0 and <= 1, got {gpu_memory_utilization:g}")
    # one context for the concurrency figures: the one given, else the engine's max_model_len,
    # else the model's whole window
    if context_tokens is None:
        context = max_model_len - speculative_tokens if max_model_len is not None else model.max_context_tokens
    else:
        context = context_tokens
    model_len = max_model_len if max_model_len is not None else context + speculative_tokens
    if context + speculative_tokens > model_len:
        raise FieldValueError(
            f"--context-tokens: {context:,}{f' + {speculative_tokens} speculative' if speculative_tokens else ''} tokens exceed --max-model-len {model_len:,}: "
            "the engine refuses a sequence that long"
        )
    warnings = [f"{model.name}: {w}" for w in model.warnings] + served_id_warnings(model, "--served-model-name")
    stale = policy.version_warning(engine_version)
    if stale:
        warnings.append(f"--engine-version: {stale}")
    if model.max_context_tokens and model_len > model.max_context_tokens:
        warnings.append(
            f"--max-model-len {model_len:,} exceeds {model.name}'s context ({model.context_words}): vLLM refuses it "
            "(unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1)"
        )
    overrides = EngineOverrides(
        memory_fraction=gpu_memory_utilization,
        block_size_tokens=block_size_tokens,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        n_parallel=n_parallel,
        flashinfer_installed=flashinfer_installed,
        radix_cache=radix_cache,
    )
    eng = policy.settings(gpu, model, tp, version=engine_version, overrides=overrides, max_model_len=model_len)
    if data_parallel_size != 1:
        eng = replace(eng, data_parallel_size=data_parallel_size)
    if engine == "vllm" and eng.max_num_batched_tokens < eng.max_num_seqs:
        # SchedulerConfig (config.py 0.9.0, config/scheduler.py 0.17.0-0.22.0 wheels; the same ValueError in 0.8.3's logs): "max_num_batched_tokens
        # (...) must be greater than or equal to max_num_seqs (...)": the engine does not start
        seqs = f"--max-num-seqs {eng.max_num_seqs}" if max_num_seqs is not None else (
            f"max_num_seqs {eng.max_num_seqs}, vLLM {eng.version}'s default here (sizer read its lowering to the token budget "
            "from 0.10.1: give --max-num-seqs)"
        )
        raise FieldValueError(
            f"--max-num-batched-tokens {eng.max_num_batched_tokens} is below {seqs}: vLLM refuses a launch line with both "
            "(SchedulerConfig: max_num_batched_tokens must be greater than or equal to max_num_seqs)"
        )
    m = policy.breakdown(model, gpu, tp=tp, pp=pp, weight_dtype=weight_dtype, kv=kv, settings=eng, context_tokens=context + speculative_tokens)
    kvs = policy.stage_kv(model, kv, tp, pp, eng)[m.stage]
    adm = admission(
        m,
        kvs,
        policy=AdmissionPolicy(speculative_tokens=speculative_tokens, shared_prefix_tokens=shared_prefix_tokens),
        percentile_context_tokens=context,
    )
    slots_cap = m.engine == "llamacpp" and adm.max_concurrency_percentile > m.max_concurrency
    if slots_cap:
        # llama-server runs its slots (-np) at most, whatever a sequence's cells (Gemma 3's
        # sliding layers hold 1,024 of them): capped as the plan's admission is
        # (candidates._cap_admission), not 106 sequences on a line of -np 19
        from dataclasses import replace as _replace

        adm = _replace(adm, max_concurrency=min(adm.max_concurrency, m.max_concurrency), max_concurrency_percentile=m.max_concurrency)
    layers = kvs.full_layers + kvs.sliding_layers  # the stage's layers that hold a KV cache
    hybrid = f" of {model.num_hidden_layers} (the rest Gated DeltaNet)" if model.num_linear_layers else ""
    scheme = weight_scheme(model, weight_dtype)
    if model.is_mla:
        b = kv_element_bytes(kv.k, model.kv_lora_rank)
        kv_whole = f"{model.num_kv_layers} layers x ({model.kv_lora_rank} kv_lora_rank + {model.qk_rope_head_dim} qk_rope_head_dim) x {b:g} B"
        kv_gpu = f"{layers} layers on stage {m.stage} x ({model.kv_lora_rank} + {model.qk_rope_head_dim}) x {b:g} B (MLA latent, replicated across TP)"
    else:
        d = model.head_dim
        bk, bv = kv_element_bytes(kv.k, d), kv_element_bytes(kv.v, d)
        elem = f"{bk:g} B" if bk == bv else f"({bk:g} B K + {bv:g} B V) / 2"
        heads_gpu = ceil_div(model.num_key_value_heads, tp)
        kv_whole = f"2 x {model.num_kv_layers} {'attention layers' if hybrid else 'layers'}{hybrid} x {model.num_key_value_heads} KV heads x {d} head_dim x {elem}"
        rep = " (heads replicated: kv_heads < tp)" if model.num_key_value_heads < tp else ""
        kv_gpu = f"2 x {layers} layers on stage {m.stage} x ceil({model.num_key_value_heads}/{tp}) = {heads_gpu} heads x {d} x {elem}{rep}"
    lines = [
        Line(label="usable memory per GPU", formula=f"{gpu.name}: total the runtime reports", value=_gib(m.usable_memory_bytes)),
        Line(label="budget", formula=f"{m.budget_rule} ({m.memory_fraction_name} {m.memory_fraction:g})", value=_gib(m.budget_bytes)),
        Line(
            label="- weights",
            formula=f"stage {m.stage} of {pp}, tp={tp}, {weight_dtype} ({scheme.origin}); {model.total_params() / 1e9:.2f}B params in all",
            value=_gib(m.weights_bytes_per_gpu),
        ),
        Line(
            label="- runtime buffers",
            # llama.cpp keeps no rotary cache (ggml applies the rope in its kernels): its buffer is
            # the compute buffer alone (LlamaCppPolicy.breakdown), not the 576 MiB of vLLM's tables
            formula=f"llama.cpp compute buffer: n_ubatch {policy.COMPUTE_BUFFER_TOKENS} x (vocab {model.vocab_size:,} + 4 x hidden {model.hidden_size:,}) x 4 B"
            if m.engine == "llamacpp"
            else f"rotary cos/sin cache {_rope_rows_words(policy.rotary_cache_rows(model))} x {model.rotary_dim} x 2 B"
            + (", block tables" if m.engine == "vllm" and m.runtime_buffer_bytes_per_gpu > policy.rotary_cache_bytes(model) else ""),
            value=_gib(m.runtime_buffer_bytes_per_gpu),
        ),
        Line(
            label="- activation peak",
            formula=(
                f"profiling run of max_num_tokens {eng.max_num_batched_tokens} tokens as {TrtllmPolicy.dummy_requests(eng)} dummy "
                f"request(s) of at most {TrtllmPolicy.dummy_request_tokens(eng):,} tokens "
                f"(max_seq_len{' - 1' if TrtllmPolicy.profiles_with_kv(eng.version) else ''}; torch's peak over the weights)"
                if m.engine == "trtllm"
                else f"profiling pass of {eng.max_num_batched_tokens} tokens / sampler of {min(eng.max_num_seqs, eng.max_num_batched_tokens)} sequences, the larger"
            )
            if m.activation_bytes_per_gpu
            else "inside the engine's reserve, not taken from the pool",
            value=_gib(m.activation_bytes_per_gpu),
        ),
        Line(
            label="- runtime overhead",
            formula=(
                f"HIP context, RCCL and workspaces at tp={tp}" if gpu.vendor == "amd"
                else f"memory outside torch at tp={tp} (CUDA context, NCCL, workspaces, the CUDA graphs' pool): measured by TensorRT-LLM at start-up, sizer's estimate"
                if m.engine == "trtllm"
                else f"CUDA context, NCCL and workspaces at tp={tp}"
            ),
            value=_gib(m.runtime_overhead_bytes_per_gpu),
        ),
        *[Line(label=f"    {term}", formula=how, value=_gib(value)) for term, how, value in m.detail],
        *(
            [Line(label="- CUDA graphs", formula="vLLM >= 0.20 subtracts its CUDA-graph estimate (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1)", value=_gib(m.cuda_graph_bytes_per_gpu))]
            if m.cuda_graph_bytes_per_gpu
            else []
        ),
        Line(label="= KV pool per GPU", formula=f"{engine_policy(m.engine).label} rule (engine {m.engine} {m.engine_version})", value=_gib(m.kv_pool_bytes_per_gpu)),
        Line(label="KV bytes per token (model)", formula=kv_whole, value=f"{m.kv_bytes_per_token:,.0f} B"),
        Line(label="KV bytes per token per GPU", formula=kv_gpu, value=f"{m.kv_bytes_per_token_per_gpu:,.0f} B"),
        Line(
            label="block",
            formula=f"{m.block_size_tokens} tokens x {m.kv_bytes_per_token_per_gpu:,.0f} B",
            value=f"{m.block_bytes_per_gpu / MIB:,.3f} MiB",
        ),
        *(
            [Line(
                label="available KV memory",
                formula=f"{m.memory_fraction_name} {m.memory_fraction:g} x (total - weights - activation - outside torch): "
                f"\"Estimated max memory in KV cache\"; max_tokens = int(it / {m.kv_bytes_per_token_per_gpu:,.0f} B) = "
                f"{int(m.engine_available_kv_bytes // m.kv_bytes_per_token_per_gpu) if m.kv_bytes_per_token_per_gpu else 0:,}",
                value=_gib(m.engine_available_kv_bytes),
            )]
            if m.engine == "trtllm"
            else []
        ),
        Line(label="KV blocks per GPU", formula=_blocks_formula(m, model, policy, eng), value=f"{m.kv_blocks_per_gpu:,}"),
        Line(label="KV tokens per replica", formula=f"blocks x {m.block_size_tokens}", value=f"{m.kv_tokens:,}"),
        Line(
            label="blocks per sequence",
            formula=f"ceil({m.context_tokens:,} tokens / {m.block_size_tokens})",
            value=f"{m.blocks_per_sequence:,}",
        ),
    ]
    if model.sliding_window:
        lines.append(
            Line(
                label="sliding-window layers",
                formula=f"{model.num_sliding_layers} of {model.num_hidden_layers} layers keep at most {model.sliding_window} tokens",
                value=f"{m.sequence_bytes_per_gpu / MIB:,.1f} MiB per sequence",
            )
        )
    if m.state_slots:
        per_request = m.state_pool_bytes_per_gpu / m.state_slots
        lines.append(
            Line(
                label="Gated DeltaNet state pool",
                formula=f"{m.state_slots:,} slots x {per_request / MIB:,.1f} MiB ({kvs.linear_layers} layers' convolution and recurrent state a request), "
                f"taken before the KV pool; running requests at most {m.running_cap:,} "
                + ("(the slots: --disable-radix-cache)" if m.running_cap == m.state_slots else f"(slots // {SglangPolicy.MAMBA_RUNNING_RATIO}: the radix cache's states)"),
                value=_gib(m.state_pool_bytes_per_gpu),
            )
        )
    elif kvs.linear_layers:
        conv, recurrent = model.linear_state_elements(tp)
        lines.append(
            Line(
                label="Gated DeltaNet state",
                formula=f"{kvs.linear_layers} layers x {kvs.state_bytes_per_layer:,.0f} B a sequence ({conv:,.0f} conv + {recurrent:,.0f} recurrent elements"
                + (f"; one {m.block_size_tokens}-token attention page, which vLLM sizes to hold it)" if m.engine == "vllm" else ")")
                + ", whatever its length",
                value=f"{kvs.state_bytes_per_sequence / MIB:,.1f} MiB per sequence",
            )
        )
    if speculative_tokens:
        lines.append(Line(label="speculative positions", formula=f"{speculative_tokens} proposals reserved per sequence", value=f"+{speculative_tokens} tokens"))
    if shared_prefix_tokens:
        lines.append(
            Line(
                label="shared prefix",
                formula=f"{adm.shared_prefix_blocks} full blocks of the {shared_prefix_tokens:,}-token prefix held once; the divergence block copied on write",
                value=f"{adm.shared_prefix_saved_bytes_per_gpu / MIB:,.1f} MiB saved",
            )
        )
    lines.append(
        Line(
            label=f"max concurrency at {m.context_tokens:,}",
            formula=f"floor(pool / {m.sequence_bytes_per_gpu / MIB:,.1f} MiB per {m.context_tokens:,}-token sequence)"
            + (f", at most the {m.running_cap:,} the state pool allows" if m.running_cap else "")
            + (f", at most the {m.max_concurrency:,} slots (-np)" if slots_cap and m.max_concurrency else ""),
            value=f"{min(adm.max_concurrency_percentile, m.running_cap) if m.running_cap else adm.max_concurrency_percentile:,}",
        )
    )
    if requested_kv != kv_dtype:
        lines.append(Line(label="KV dtype auto", formula=f"the checkpoint's dtype ({model.torch_dtype})", value=kv.label))
    if m.engine == "trtllm":
        if TrtllmPolicy.profiles_with_kv(eng.version):  # 0.17/0.18 profile without a KV cache (estimate_max_kv_cache_tokens)
            est = TrtllmPolicy.estimation_tokens(eng)
            lines.append(
                Line(
                    label="profiling KV (temporary)",
                    formula=f"{TrtllmPolicy.dummy_requests(eng)} dummy request(s), each + {2 if TrtllmPolicy.OVERLAP_SCHEDULER else 1} tokens"
                    f"{' (overlap scheduler)' if TrtllmPolicy.OVERLAP_SCHEDULER else ''}, "
                    f"in whole {m.block_size_tokens}-token blocks: {est:,} tokens, added back after the run",
                    value=_gib(est * m.kv_bytes_per_token_per_gpu),
                )
            )
        logged = (f"Allocated {m.engine_gpu_blocks * m.block_bytes_per_gpu / GIB:.2f} GiB for max tokens in paged KV cache "
                  f"({m.engine_kv_tokens:,}): {m.engine_gpu_blocks:,} blocks")
        if m.kv_pool_bytes_per_gpu > 0 and m.max_model_len and m.engine_kv_tokens < m.max_model_len:
            cap = TrtllmPolicy.seq_len_cap(m.engine_kv_tokens, m.block_size_tokens)
            warnings.append(
                f"the pool holds {m.engine_kv_tokens:,} tokens, fewer than --max_seq_len {m.max_model_len:,}: TensorRT-LLM starts anyway and "
                f"lowers the attention window and max_seq_len to {cap:,} (\"Adjusted max_seq_len to {cap}\"; "
                "resource_manager.py get_max_atten_window_upper_bound): longer requests are refused"
            )
    else:
        logged = (f"blocks {m.engine_gpu_blocks:,}; KV cache {m.engine_kv_tokens:,} tokens; "
                  f"maximum concurrency for {m.max_model_len:,} tokens per request: {m.engine_max_concurrency:.2f}x")
    lines.append(Line(label=f"{engine_policy(m.engine).label} would log", formula=logged, value=_gib(m.engine_available_kv_bytes)))
    if m.engine == "vllm" and m.fits and m.engine_max_concurrency < 1:
        from .candidates import max_model_len_reason

        warnings.append(max_model_len_reason(m) + ": lower --max-model-len")
    seqs = eng.max_num_seqs
    if m.engine == "sglang" and model.num_linear_layers and SglangPolicy.states_follow_running_cap(eng):
        # --disable-radix-cache with no cap given: SGLang makes a state slot for every running
        # request it may take, so the line caps them at the sequences the pool holds
        seqs = max(min(seqs, adm.max_concurrency_percentile), 1)
    cmd = policy.launch_command(model, tp=tp, pp=pp, kv=kv, weight_dtype=weight_dtype, settings=eng, max_num_seqs=seqs)
    logged_graphs = 0.0  # the estimate line where the worker makes one (makes_graph_estimate)
    if engine == "vllm":
        release = VllmRelease.of(eng.version)
        if policy.makes_graph_estimate(model, gpu, weight_dtype, release):
            logged_graphs = policy.cuda_graph_estimate_bytes(model, gpu, tp, pp, eng, weight_dtype, release)
    return Explanation(
        model=model,
        gpu=gpu,
        tp=tp,
        pp=pp,
        kv_dtype=kv.label,
        weight_dtype=weight_dtype,
        engine=engine,
        engine_defaults=eng,
        memory=m,
        admission=adm,
        lines=tuple(lines),
        launch_command=cmd,
        warnings=tuple(warnings),
        engine_log=engine_log_lines(
            m, engine, eng.version,
            logged_graphs,
            latent_kv=model.is_mla,
            settings=eng,
        ),
        requested_kv_dtype=requested_kv,
    )
