"""Serving-engine policies: how each engine divides GPU memory, its own defaults, and its launch
command. Each rule lives here once; the arithmetic they share (blocks, concurrency) is memory.py's.

    vLLM      KV = total x gpu_memory_utilization - weights - activation peak - non-torch memory
              (vllm/v1/worker/gpu_worker.py determine_available_memory; V0 worker.py before 0.8;
              before 0.6 the non-torch term was not subtracted). CUDA graphs are captured after the
              KV cache is sized and come out of the 1 - utilisation slack. Blocks of block_size (16).
    SGLang    KV = free memory after weights - free memory at start x (1 - mem_fraction_static)
              (sglang/srt/model_executor/model_runner.py profile_max_num_token); token-granular pool.
    TRT-LLM   KV = free_gpu_memory_fraction x memory free after weights, runtime and activations
              (KvCacheConfig.free_gpu_memory_fraction, default 0.9); blocks of tokens_per_block (32).
    llama.cpp KV = n_ctx x n_parallel cells of fixed size, K and V in their own cache types
              (llama-server -c / -np / --cache-type-k / --cache-type-v), allocated at start.

Every engine's defaults are the engine's own, each with its source in a comment.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, replace

from .catalog import Gpu
from .errors import FieldValueError
from .memory import KvFormat, MemoryBreakdown, binding_stage, blocks_for, paged_breakdown, stage_kv
from .model import ModelArch, stage_weights
from .units import GIB, LLAMACPP_CACHE_TYPES, ceil_div


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineOverrides:
    """What a workload (or `sizer explain`) sets; None means the engine's default."""

    memory_fraction: float | None = None
    block_size_tokens: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    n_parallel: int | None = None

    def resolve(
        self, *, engine: str, version: str, max_model_len: int, memory_fraction: float, block_size_tokens: int, max_num_seqs: int, max_num_batched_tokens: int
    ) -> "EngineSettings":
        """The settings: each value the workload gave, else the engine's default passed here."""

        def pick(given, default):
            return default if given is None else given

        return EngineSettings(
            engine=engine,
            version=version,
            memory_fraction=pick(self.memory_fraction, memory_fraction),
            block_size_tokens=pick(self.block_size_tokens, block_size_tokens),
            max_num_seqs=pick(self.max_num_seqs, max_num_seqs),
            max_num_batched_tokens=pick(self.max_num_batched_tokens, max_num_batched_tokens),
            max_model_len=max_model_len,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineSettings:
    """An engine's settings for one configuration, defaults resolved."""

    engine: str
    version: str
    memory_fraction: float
    block_size_tokens: int
    max_num_seqs: int
    max_num_batched_tokens: int
    max_model_len: int
    n_parallel: int = 1


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for p in str(version).lstrip("v").split("."):
        digits = "".join(ch for ch in p if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts) or (0,)


class EnginePolicy:
    """Base of the engine policies; subclasses implement the memory rule and the command."""

    name = ""
    label = ""
    fraction_name = ""
    default_version = ""
    kv_formats: tuple[str, ...] = ()

    def kv_reason(self, gpu: Gpu, kv: KvFormat) -> str | None:
        for part in {kv.k, kv.v}:
            if part not in self.kv_formats:
                return f"{self.label} has no {part!r} KV cache (it offers {', '.join(self.kv_formats)})"
        if "fp8" in (kv.k, kv.v) and not gpu.supports("fp8"):
            return f"{gpu.name} has no FP8 support (fp8_dense_tflops absent in the catalog): fp8 KV cache unsupported"
        return None

    def parallelism_reason(self, tp: int, pp: int) -> str | None:
        return None

    def settings(self, gpu: Gpu, model: ModelArch, tp: int, *, version: str | None, overrides: EngineOverrides, max_model_len: int) -> EngineSettings:
        raise NotImplementedError

    def breakdown(
        self,
        model: ModelArch,
        gpu: Gpu,
        *,
        tp: int,
        pp: int,
        weight_dtype: str,
        kv: KvFormat,
        settings: EngineSettings,
        context_tokens: int,
    ) -> MemoryBreakdown:
        raise NotImplementedError

    def launch_command(
        self, model: ModelArch, *, tp: int, pp: int, kv: KvFormat, weight_dtype: str, settings: EngineSettings, max_num_seqs: int
    ) -> str:
        raise NotImplementedError

    # -- shared pieces -------------------------------------------------------------------------
    @staticmethod
    def rotary_cache_bytes(model: ModelArch) -> float:
        """The rotary embedding's cos/sin cache: [max_position_embeddings, rotary_dim] in the model
        dtype, one shared instance (vLLM's get_rope caches it; SGLang adapted the same class). For
        Llama-3.1-8B: 131072 x 128 x 2 B = 32 MiB, the difference between 8,030,261,248 params x 2 B
        (14.957 GiB) and vLLM's logged "Loading model weights took 14.9888 GB" (vllm#10517)."""
        return float(model.max_position_embeddings * model.rotary_dim * 2)

    @staticmethod
    def activation_per_token_bytes(model: ModelArch, tp: int) -> float:
        """Peak activation bytes per batched token inside one layer, 16-bit activations.

        Dense MLP: the residual stream and hidden states (3 x hidden) plus gate/up output and the
        activated product (3 x intermediate / tp). Fused MoE: per routed copy of the token (top_k),
        the gate/up output, the activated product and the down output (3 x moe_intermediate / tp +
        hidden), as the fused-MoE kernel's three intermediate caches hold. Checked against the logged
        activation peaks of Llama-3.1-8B (2.07 GiB at 20,000 tokens, 2.99 GiB at 29,000: vllm#10517)."""
        h = model.hidden_size
        dense = 3 * h + 3 * ceil_div(model.intermediate_size, tp) if model.intermediate_size else 0
        if not model.is_moe:
            return 2.0 * dense
        moe = 3 * h + model.num_experts_per_tok * (3 * ceil_div(model.moe_intermediate_size, tp) + h)
        if model.shared_experts_intermediate_size:
            moe += 3 * ceil_div(model.shared_experts_intermediate_size, tp)
        has_dense = not all(model.moe_layers)
        return 2.0 * max(moe, dense if has_dense else 0)

    def stage_breakdowns(
        self,
        model: ModelArch,
        gpu: Gpu,
        *,
        tp: int,
        pp: int,
        weight_dtype: str,
        kv: KvFormat,
        settings: EngineSettings,
        context_tokens: int,
        pool_of,
        budget_of,
        budget_rule: str,
        buffers: float,
        activation: float,
        overhead: float,
        hybrid_groups: bool = False,
        expert_scale: float = 1.0,
        notes: tuple[str, ...] = (),
    ) -> list[MemoryBreakdown]:
        """One breakdown per pipeline stage: `pool_of(weights_bytes, stage_kv)` is the engine's
        pool rule, `budget_of(weights_bytes)` the memory it lets itself use."""
        out = []
        stages = zip(stage_weights(model, tp, pp, weight_dtype, expert_scale), stage_kv(model, kv, tp, pp))
        for s, (w, kvs) in enumerate(stages):
            out.append(
                paged_breakdown(
                    model,
                    engine=self.name,
                    engine_version=settings.version,
                    stage=s,
                    kv=kvs,
                    kv_format=kv,
                    usable_memory_bytes=gpu.usable_memory_bytes,
                    memory_fraction=settings.memory_fraction,
                    memory_fraction_name=self.fraction_name,
                    budget_bytes=budget_of(w.total_bytes),
                    budget_rule=budget_rule,
                    weights_bytes=w.total_bytes,
                    buffer_bytes=buffers,
                    activation_bytes=activation,
                    overhead_bytes=overhead,
                    pool_bytes=pool_of(w.total_bytes, kvs),
                    block_size_tokens=settings.block_size_tokens,
                    context_tokens=context_tokens,
                    max_model_len=settings.max_model_len,
                    hybrid_groups=hybrid_groups,
                    notes=notes,
                )
            )
        return out


# ---------------------------------------------------------------------------------------------
# vLLM
# ---------------------------------------------------------------------------------------------


class VllmPolicy(EnginePolicy):
    """vLLM, V0 (before 0.8) and V1 rules."""

    name = "vllm"
    label = "vLLM"
    fraction_name = "gpu_memory_utilization"
    default_version = "0.14"
    # --kv-cache-dtype: auto (the model dtype), fp8 (fp8_e4m3 / fp8_e5m2) (vllm/config/cache.py CacheDType)
    kv_formats = ("bf16", "fp16", "fp8")

    # Non-torch memory measured in vLLM's own profiling logs: 0.35 GiB (RTX 3090, TP=1, vllm#10517),
    # 0.25 GiB (RTX 4090, TP=2, vllm#13061), 0.20 GiB (24 GB cards, vllm PR #14447). TP > 1 adds NCCL
    # and custom all-reduce buffers.
    NON_TORCH_BYTES_TP1 = 0.35 * GIB
    NON_TORCH_BYTES_PER_EXTRA_RANK_GROUP = 0.15 * GIB

    def era(self, version: str) -> str:
        v = _version_tuple(version)
        if v < (0, 6):
            return "v0-early"
        if v < (0, 7):
            return "v0.6"
        if v < (0, 8):
            return "v0.7"
        return "v1"

    n_parallel: int = 1
    def settings(self, gpu: Gpu, model: ModelArch | None, tp: int, *, version: str | None, overrides: EngineOverrides, max_model_len: int) -> EngineSettings:
        version = version or self.default_version
        era = self.era(version)
        if era == "v1":
            # vllm/engine/arg_utils.py EngineArgs.get_batch_defaults: GPUs with >= 70 GiB that are not
            # A100 get max_num_batched_tokens 8192 and max_num_seqs 1024 for the OpenAI API server;
            # others 2048 and 256. Chunked prefill is always on in V1.
            large = gpu.usable_memory_bytes >= 70 * GIB and "a100" not in gpu.name.lower()
            seqs, tokens = (1024, 8192) if large else (256, 2048)
        else:
            # V0 SchedulerConfig: max_num_seqs 256; without chunked prefill the token budget is
            # max(max_model_len, 2048); chunked prefill is on by default above a 32K context
            # (arg_utils), with a budget of 512 in 0.6.x and 2048 from 0.7.
            seqs = 256
            chunked = era in ("v0.6", "v0.7") and max_model_len > 32768
            tokens = (512 if era == "v0.6" else 2048) if chunked else max(max_model_len, 2048)
        return overrides.resolve(
            engine=self.name,
            version=version,
            max_model_len=max_model_len,
            memory_fraction=0.9,  # CacheConfig default
            block_size_tokens=16,  # CacheConfig block_size default on CUDA
            max_num_seqs=seqs,
            max_num_batched_tokens=tokens,
        )

    def runtime_buffer_bytes(self, model: ModelArch, settings: EngineSettings | None = None) -> float:
        """Rotary cache, and in V1 the persistent block tables (int32 [max_num_seqs, blocks per request])."""
        total = self.rotary_cache_bytes(model)
        if settings is not None and self.era(settings.version) == "v1" and settings.max_model_len:
            total += settings.max_num_seqs * blocks_for(settings.max_model_len, settings.block_size_tokens) * 4
        return total

    def activation_bytes(self, model: ModelArch, tp: int, max_num_batched_tokens: int, max_num_seqs: int, era: str = "v1") -> float:
        """Peak activation memory of vLLM's profiling run, per GPU.

        The profiling forward pass pushes max_num_batched_tokens tokens through the model one layer at
        a time (activation_per_token_bytes); the sampler's dummy run then holds the logits of
        max_num_seqs rows (fp32 in V1's sampler, the model dtype in V0). The two do not coexist, so
        the peak is the larger: Llama-3.1-8B profiled at 512 tokens with 256 sequences peaks at the
        logits, 256 x 128,256 x 2 B = 0.061 GiB, as logged (0.06 GiB: vllm#10517, 35k run)."""
        layers_peak = max_num_batched_tokens * self.activation_per_token_bytes(model, tp)
        logit_bytes = 4 if era == "v1" else 2
        logits_peak = max_num_seqs * model.vocab_size * logit_bytes
        return float(max(layers_peak, logits_peak))

    def runtime_overhead_bytes(self, tp: int, era: str = "v1") -> float:
        """Non-torch memory per GPU (CUDA context share, NCCL and all-reduce buffers): grows with TP.
        vLLM before 0.6 did not subtract it (peak = torch.cuda.max_memory_allocated())."""
        if era == "v0-early":
            return 0.0
        extra = 0 if tp == 1 else self.NON_TORCH_BYTES_PER_EXTRA_RANK_GROUP * (1 + (tp > 2))
        return self.NON_TORCH_BYTES_TP1 + extra

    @staticmethod
    def expert_scale(model: ModelArch, weight_dtype: str, era: str) -> float:
        """vLLM's MXFP4 fused-MoE weights are padded for its kernels: the hidden dimension is
        rounded up to a multiple of 256 (vllm/model_executor/layers/quantization/mxfp4.py, e.g.
        gpt-oss's 2,880 -> 3,072), which is why gpt-oss-120b logs 64.38 GiB, not 60.7."""
        if era == "v1" and weight_dtype == "mxfp4" and model.is_moe and model.quant is not None and model.quant.dtype == "mxfp4":
            return math.ceil(model.hidden_size / 256) * 256 / model.hidden_size
        return 1.0

    def breakdown(self, model, gpu, *, tp, pp, weight_dtype, kv, settings, context_tokens):
        era = self.era(settings.version)
        budget = gpu.usable_memory_bytes * settings.memory_fraction
        buffers = self.runtime_buffer_bytes(model, settings)
        activation = self.activation_bytes(model, tp, settings.max_num_batched_tokens, settings.max_num_seqs, era)
        overhead = self.runtime_overhead_bytes(tp, era)
        rule = f"{gpu.name} total x {self.fraction_name}" + (" (vLLM < 0.6: non-torch memory not subtracted)" if era == "v0-early" else "")
        stages = self.stage_breakdowns(
            model, gpu, tp=tp, pp=pp, weight_dtype=weight_dtype, kv=kv, settings=settings, context_tokens=context_tokens,
            pool_of=lambda weights, _kv: budget - weights - buffers - activation - overhead,
            budget_of=lambda _weights: budget,
            budget_rule=rule, buffers=buffers, activation=activation, overhead=overhead,
            hybrid_groups=era == "v1", expert_scale=self.expert_scale(model, weight_dtype, era),
        )
        return binding_stage(stages)

    def launch_command(self, model, *, tp, pp, kv, weight_dtype, settings, max_num_seqs):
        args = ["vllm", "serve", model.hf_id or model.name]
        args += ["--tensor-parallel-size", str(tp), "--pipeline-parallel-size", str(pp)]
        if weight_dtype != model.native_weight_dtype and weight_dtype == "fp8":
            args += ["--quantization", "fp8"]  # online dynamic FP8 quantisation of a 16-bit checkpoint
        if kv.k == "fp8":
            args += ["--kv-cache-dtype", "fp8"]
        args += [
            "--max-model-len",
            str(settings.max_model_len),
            "--max-num-seqs",
            str(max_num_seqs),
            "--max-num-batched-tokens",
            str(settings.max_num_batched_tokens),
            "--gpu-memory-utilization",
            f"{settings.memory_fraction:g}",
            "--block-size",
            str(settings.block_size_tokens),
        ]
        return shlex.join(args)


# ---------------------------------------------------------------------------------------------
# SGLang
# ---------------------------------------------------------------------------------------------


class SglangPolicy(EnginePolicy):
    """SGLang: a static fraction of the memory free at start holds weights and the KV pool."""

    name = "sglang"
    label = "SGLang"
    fraction_name = "mem_fraction_static"
    default_version = "0.5"
    # --kv-cache-dtype: auto, fp8_e5m2, fp8_e4m3 (sglang/srt/server_args.py)
    kv_formats = ("bf16", "fp16", "fp8")

    # Memory in use when the weights start loading: the CUDA context and the communicators that
    # torch.distributed, NCCL and custom all-reduce set up, growing with the number of TP peers.
    # SGLang logs it: "Load weight begin. avail mem=137.29 GB" on 8 x H200 (sgl-project/sglang
    # PR #11716), i.e. 139.80 - 137.29 = 2.51 GiB in use at TP 8. With a 0.5 GiB CUDA context at
    # TP 1 that is (2.51 - 0.5) / 7 = 0.287 GiB per peer.
    INIT_BYTES_TP1 = 0.5 * GIB
    INIT_BYTES_PER_PEER = 0.287 * GIB

    def settings(self, gpu, model, tp, *, version, overrides, max_model_len):
        # sglang/srt/server_args.py __post_init__: mem_fraction_static by TP size (0.88 at TP 1,
        # 0.87 at 2, 0.85 at 4, 0.81 at 8, 0.79 at 16); chunked_prefill_size 8192, or 2048 on GPUs
        # under 25,000 MB; page_size 1 (token-granular pool).
        default_fraction = 0.79 if tp >= 16 else 0.81 if tp >= 8 else 0.85 if tp >= 4 else 0.87 if tp >= 2 else 0.88
        chunk = 2048 if gpu.memory_bytes / 2**20 < 25_000 else 8192
        return overrides.resolve(
            engine=self.name,
            version=version or self.default_version,
            max_model_len=max_model_len,
            memory_fraction=default_fraction,
            block_size_tokens=1,
            max_num_seqs=4096,  # max_running_requests: bounded by the pool
            max_num_batched_tokens=chunk,
        )

    def init_bytes(self, tp: int) -> float:
        return self.INIT_BYTES_TP1 + self.INIT_BYTES_PER_PEER * (tp - 1)

    def breakdown(self, model, gpu, *, tp, pp, weight_dtype, kv, settings, context_tokens):
        init = self.init_bytes(tp)
        free_at_start = gpu.usable_memory_bytes - init
        f = settings.memory_fraction
        reserve = free_at_start * (1 - f)  # activations, CUDA graphs: the non-static part
        buffers = self.rotary_cache_bytes(model)
        stages = self.stage_breakdowns(
            model, gpu, tp=tp, pp=pp, weight_dtype=weight_dtype, kv=kv, settings=settings, context_tokens=context_tokens,
            # rest_memory = free after loading - free at start x (1 - mem_fraction_static)
            pool_of=lambda weights, _kv: free_at_start - weights - buffers - reserve,
            budget_of=lambda _weights: free_at_start * f,
            budget_rule=f"(total - CUDA context and NCCL at start) x {self.fraction_name}; the rest ({reserve / GIB:.2f} GiB) reserved for activations and CUDA graphs",
            buffers=buffers, activation=0.0, overhead=init,
            notes=("activations come out of the (1 - mem_fraction_static) reserve, not the pool",),
        )
        return binding_stage(stages)

    def launch_command(self, model, *, tp, pp, kv, weight_dtype, settings, max_num_seqs):
        args = ["python3", "-m", "sglang.launch_server", "--model-path", model.hf_id or model.name]
        args += ["--tp", str(tp)]
        if pp > 1:
            args += ["--pp-size", str(pp)]
        if weight_dtype != model.native_weight_dtype and weight_dtype == "fp8":
            args += ["--quantization", "fp8"]
        if kv.k == "fp8":
            args += ["--kv-cache-dtype", "fp8_e4m3"]
        args += [
            "--context-length",
            str(settings.max_model_len),
            "--mem-fraction-static",
            f"{settings.memory_fraction:g}",
            "--max-running-requests",
            str(max_num_seqs),
            "--chunked-prefill-size",
            str(settings.max_num_batched_tokens),
        ]
        if settings.block_size_tokens != 1:
            args += ["--page-size", str(settings.block_size_tokens)]
        return shlex.join(args)


# ---------------------------------------------------------------------------------------------
# TensorRT-LLM
# ---------------------------------------------------------------------------------------------


class TrtllmPolicy(EnginePolicy):
    """TensorRT-LLM (trtllm-serve, PyTorch backend): a fraction of the memory left free."""

    name = "trtllm"
    label = "TensorRT-LLM"
    fraction_name = "free_gpu_memory_fraction"
    default_version = "1.0"
    # KvCacheConfig dtype: auto, fp8, int8 (and nvfp4 on Blackwell)
    kv_formats = ("bf16", "fp16", "fp8", "int8")
    INIT_BYTES = 0.6 * GIB  # CUDA context and runtime workspace (cuBLAS, NCCL) before the KV pool

    def settings(self, gpu, model, tp, *, version, overrides, max_model_len):
        # tensorrt_llm/llmapi/llm_args.py: KvCacheConfig.free_gpu_memory_fraction 0.9,
        # tokens_per_block 32; BaseLlmArgs max_batch_size 2048, max_num_tokens 8192.
        return overrides.resolve(
            engine=self.name,
            version=version or self.default_version,
            max_model_len=max_model_len,
            memory_fraction=0.9,
            block_size_tokens=32,
            max_num_seqs=2048,
            max_num_batched_tokens=8192,
        )

    def breakdown(self, model, gpu, *, tp, pp, weight_dtype, kv, settings, context_tokens):
        buffers = self.rotary_cache_bytes(model)
        activation = settings.max_num_batched_tokens * self.activation_per_token_bytes(model, tp)
        overhead = self.INIT_BYTES + (0.1 * GIB) * (tp - 1)
        f = settings.memory_fraction

        def free(weights: float) -> float:
            return gpu.usable_memory_bytes - weights - buffers - activation - overhead

        stages = self.stage_breakdowns(
            model, gpu, tp=tp, pp=pp, weight_dtype=weight_dtype, kv=kv, settings=settings, context_tokens=context_tokens,
            pool_of=lambda weights, _kv: f * free(weights),
            budget_of=lambda weights: gpu.usable_memory_bytes - (1 - f) * max(free(weights), 0.0),
            budget_rule=f"weights, activations and runtime first; then {self.fraction_name} x what is left",
            buffers=buffers, activation=activation, overhead=overhead,
        )
        return binding_stage(stages)

    def launch_command(self, model, *, tp, pp, kv, weight_dtype, settings, max_num_seqs):
        args = ["trtllm-serve", model.hf_id or model.name, "--backend", "pytorch"]
        args += ["--tp_size", str(tp), "--pp_size", str(pp)]
        args += [
            "--max_batch_size",
            str(max_num_seqs),
            "--max_num_tokens",
            str(settings.max_num_batched_tokens),
            "--max_seq_len",
            str(settings.max_model_len),
            "--kv_cache_free_gpu_memory_fraction",
            f"{settings.memory_fraction:g}",
        ]
        if kv.k in ("fp8", "int8"):
            args += ["--extra_llm_api_options", f"kv_cache_dtype={kv.k}"]
        return shlex.join(args)


# ---------------------------------------------------------------------------------------------
# llama.cpp
# ---------------------------------------------------------------------------------------------


class LlamaCppPolicy(EnginePolicy):
    """llama.cpp server: a fixed KV allocation of n_ctx cells, split across n_parallel slots."""

    name = "llamacpp"
    label = "llama.cpp"
    fraction_name = "memory"
    default_version = "b6000"
    kv_formats = LLAMACPP_CACHE_TYPES + ("fp16",)
    COMPUTE_BUFFER_TOKENS = 512  # n_ubatch default (common/common.h): logits and activations of one micro-batch
    INIT_BYTES = 0.3 * GIB  # CUDA context

    def kv_reason(self, gpu, kv):
        for part in (kv.k, kv.v):
            if part not in self.kv_formats:
                return f"llama.cpp has no {part} cache type (it offers {', '.join(LLAMACPP_CACHE_TYPES)})"
        return None

    def parallelism_reason(self, tp, pp):
        if tp > 1:
            return f"tp={tp}: llama.cpp splits a model across GPUs by layers (--split-mode layer, sizer's pp), not by tensor parallelism"
        return None

    def settings(self, gpu, model, tp, *, version, overrides, max_model_len):
        # llama-server: -np (n_parallel) slots share -c (n_ctx) cells; sizer gives each slot the
        # admitted context, so n_ctx = n_parallel x max_model_len. Default n_parallel 4 (server
        # "auto" since b5000-era builds), block size 1 (cells are per token), n_batch 2048.
        n_parallel = overrides.n_parallel or overrides.max_num_seqs or 4
        return EngineSettings(
            engine=self.name,
            version=version or self.default_version,
            memory_fraction=1.0,
            block_size_tokens=1,
            max_num_seqs=n_parallel,
            max_num_batched_tokens=overrides.max_num_batched_tokens or 2048,
            max_model_len=max_model_len,
            n_parallel=n_parallel,
        )

    def breakdown(self, model, gpu, *, tp, pp, weight_dtype, kv, settings, context_tokens):
        cells = settings.n_parallel * settings.max_model_len
        compute = self.COMPUTE_BUFFER_TOKENS * (model.vocab_size + 4 * model.hidden_size) * 4  # fp32 logits + activations

        def pool(weights: float, kvs) -> float:
            # the whole cache is allocated at start; if it does not fit, only what fits is shown
            return min(cells * kvs.bytes_per_token, gpu.usable_memory_bytes - weights - compute - self.INIT_BYTES)

        stages = self.stage_breakdowns(
            model, gpu, tp=tp, pp=pp, weight_dtype=weight_dtype, kv=kv, settings=settings, context_tokens=context_tokens,
            pool_of=pool,
            budget_of=lambda _weights: gpu.usable_memory_bytes,
            budget_rule=f"all of it: weights + compute buffer + n_ctx ({cells:,}) cells must fit",
            buffers=compute, activation=0.0, overhead=self.INIT_BYTES,
            notes=(f"fixed allocation: {settings.n_parallel} slots x {settings.max_model_len:,} cells",),
        )
        out = []
        for m in stages:
            # the slots are the concurrency: a pool that holds them all admits exactly n_parallel
            fits = m.kv_pool_bytes_per_gpu >= cells * m.kv_bytes_per_token_per_gpu
            slots = settings.n_parallel if fits and context_tokens <= settings.max_model_len else 0
            out.append(replace(m, max_concurrency=min(m.max_concurrency, slots), engine_max_concurrency=float(slots)))
        return binding_stage(out)

    def launch_command(self, model, *, tp, pp, kv, weight_dtype, settings, max_num_seqs):
        args = ["llama-server", "-m", f"{model.name}.gguf", "-c", str(settings.n_parallel * settings.max_model_len)]
        args += ["-np", str(settings.n_parallel), "-ngl", "999"]
        if pp > 1:
            args += ["--split-mode", "layer", "--tensor-split", ",".join(["1"] * pp)]
        args += ["--cache-type-k", "f16" if kv.k == "fp16" else kv.k, "--cache-type-v", "f16" if kv.v == "fp16" else kv.v]
        if kv.v != "f16" and kv.v != "fp16":
            args += ["--flash-attn", "on"]  # a quantised V cache needs flash attention in llama.cpp
        return shlex.join(args)


ENGINES: dict[str, EnginePolicy] = {p.name: p for p in (VllmPolicy(), SglangPolicy(), TrtllmPolicy(), LlamaCppPolicy())}


def engine_policy(name: str) -> EnginePolicy:
    if name not in ENGINES:
        raise FieldValueError(f"engine: expected one of {', '.join(ENGINES)}, got {name!r}")
    return ENGINES[name]


def configuration_breakdown(
    model: ModelArch,
    gpu: Gpu,
    *,
    engine: str,
    version: str | None,
    tp: int,
    pp: int,
    weight_dtype: str,
    kv: str | KvFormat,
    context_tokens: int,
    max_model_len: int,
    overrides: EngineOverrides = EngineOverrides(),
) -> tuple[EngineSettings, MemoryBreakdown]:
    """Resolve the engine's settings and compute the memory breakdown of one configuration."""
    policy = engine_policy(engine)
    settings = policy.settings(gpu, model, tp, version=version, overrides=overrides, max_model_len=max_model_len)
    return settings, policy.breakdown(
        model, gpu, tp=tp, pp=pp, weight_dtype=weight_dtype, kv=KvFormat.of(kv), settings=settings, context_tokens=context_tokens
    )
