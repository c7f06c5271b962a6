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
from .memory import (
    EngineKvReport,
    KvFormat,
    MemoryBreakdown,
    StageKv,
    binding_stage,
    blocks_for,
    kv_bytes_per_token_per_layer,
    linear_state_bytes_per_layer,
    linear_state_parts,
    paged_breakdown,
    stage_kv,
)
from .model import ModelArch, stage_weights
from .units import GGUF_TYPE_NAMES, GIB, LLAMACPP_CACHE_TYPES, LLAMACPP_WEIGHT_DTYPES, MIB, WEIGHT_DTYPES, ceil_div

SIXTEEN = ("bf16", "fp16")  # the 16-bit weight formats: one checkpoint serves either


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineOverrides:
    """What a workload (or `sizer explain`) sets; None means the engine's default."""

    memory_fraction: float | None = None
    block_size_tokens: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    n_parallel: int | None = None
    flashinfer_installed: bool | None = None  # vLLM: None = as `pip install vllm` of that release leaves it
    radix_cache: bool | None = None  # SGLang's prefix (radix) cache; False: --disable-radix-cache. None: on, its default

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
            flashinfer_installed=self.flashinfer_installed,
            radix_cache=pick(self.radix_cache, True),
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
    flashinfer_installed: bool | None = None
    radix_cache: bool = True
    kv_unified: bool = False  # llama.cpp: one cache shared by the slots (-np auto), not a stream each
    data_parallel_size: int = 1  # vLLM --data-parallel-size (explain): a dense model's engine cores, each sized as one


def flag_number(x: float) -> str:
    """A launch line's float as the engine will parse it back to the same value: `:g` where its
    six digits are exact (0.9, 0.836), else every digit. SGLang 0.4.6's own mem_fraction_static
    on a GPU over 80 GiB is (gpu_mem - 13 GiB) / gpu_mem, 0.9322916... on MI300X; printed
    0.932292, the pasted line profiled a pool 68 KB larger than the plan's (and a user's
    gpu_memory_utilization 0.9123456 launched as 0.912346)."""
    short = f"{x:g}"
    return short if float(short) == x else repr(float(x))


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
    vendors: tuple[str, ...] | None = None  # GPU vendors (gpus.yaml `vendor`) the engine runs on; None: every one in the catalog
    length_flag = ""  # the launch line's flag for the longest request it admits
    modelled_releases: tuple[str, str] | None = None  # (oldest, newest) release whose rules were read; None: not by release
    # Budget tokens one decoding sequence takes in a step's token budget (max_num_batched_tokens):
    # vLLM's V1 scheduler takes each running request's new tokens from token_budget, TensorRT-LLM's
    # max_num_tokens is the "maximum number of batched input tokens", context and generation: 1.
    # SGLang's chunked_prefill_size bounds prefill batches only, decode runs beside them: 0.
    budget_counts_decode = 1.0

    def version_warning(self, version: str | None) -> str | None:
        """A release outside modelled_releases: the rules of the nearest one apply, and that is said."""
        if version is None or self.modelled_releases is None:
            return None
        oldest, newest = self.modelled_releases
        v = _version_tuple(version)
        if v > _version_tuple(newest) and v[: len(_version_tuple(newest))] != _version_tuple(newest):
            return f"{self.label} {version} is newer than the newest release whose memory rules sizer read ({newest}): {newest}'s rules are used"
        if v < _version_tuple(oldest):
            return f"{self.label} {version} is older than the oldest release whose memory rules sizer read ({oldest}): {oldest}'s rules are used"
        return None

    def device_reason(self, gpu: Gpu) -> str | None:
        """Why the engine cannot run on the device at all (None: it can)."""
        if self.vendors is not None and gpu.vendor not in self.vendors:
            return f"{self.label} runs on {' and '.join(v.upper() for v in self.vendors)} GPUs only; {gpu.name} is {gpu.vendor.upper()}'s"
        return None

    # the weight formats (units.WEIGHT_DTYPES names) the engine loads: every one but llama.cpp's GGUF block types
    weight_formats: tuple[str, ...] = tuple(d for d in WEIGHT_DTYPES if d not in ("q8_0", "q4_0"))

    def weight_reason(self, weight_dtype: str, model: ModelArch | None = None) -> str | None:
        """Why the engine cannot serve weights in `weight_dtype` (of `model`, where given), or None."""
        if weight_dtype in self.weight_formats:
            return None
        if weight_dtype in GGUF_TYPE_NAMES:
            return f"{weight_dtype} is a GGUF block type (llama.cpp's); {self.label} serves {', '.join(self.weight_formats)}"
        return f"{self.label} has no {weight_dtype} weights (it serves {', '.join(self.weight_formats)})"

    def kv_reason(self, gpu: Gpu, kv: KvFormat) -> str | None:
        for part in {kv.k, kv.v}:
            if part not in self.kv_formats:
                return f"{self.label} has no {part!r} KV cache (it offers {', '.join(self.kv_formats)})"
        if "fp8" in (kv.k, kv.v) and not gpu.supports("fp8"):
            return f"{gpu.name} has no FP8 support (fp8_dense_tflops absent in the catalog): fp8 KV cache unsupported"
        return None

    def parallelism_reason(self, tp: int, pp: int) -> str | None:
        return None

    def linear_state_bytes(self, model: ModelArch, tp: int) -> float:
        """One sequence's state in one Gated DeltaNet layer on one GPU, in the dtypes the engine
        keeps it in: the convolution state in 16 bits, the recurrent state in the config's
        mamba_ssm_dtype (vLLM mamba_ssm_cache_dtype "auto", SGLang's mamba2_state_dtype)."""
        return linear_state_bytes_per_layer(model, tp)

    def stage_kv(self, model: ModelArch, kv: KvFormat, tp: int, pp: int, settings: EngineSettings | None = None) -> list[StageKv]:
        """What a sequence holds in the engine's KV pool on each stage: its KV per token and, where
        the engine keeps Gated DeltaNet states in the same pool, their state."""
        return stage_kv(model, kv, tp, pp, self.linear_state_bytes(model, tp))

    # weight formats the engine quantises a 16-bit checkpoint to at load time (a flag on its line)
    online_weight_dtypes: tuple[str, ...] = ()

    def checkpoint_note(self, model: ModelArch, weight_dtype: str) -> str:
        """A shell comment for the launch line of weights the checkpoint does not hold and the
        engine cannot make at load time: the plan was sized for a checkpoint in that format (the
        line still names the one the model came from), or "" when the line serves what was sized.
        A 16-bit checkpoint serves bf16 or fp16 alike."""
        native = model.native_weight_dtype
        if weight_dtype == native or (weight_dtype in SIXTEEN and native in SIXTEEN) or self.online_quantisation(model, weight_dtype):
            return ""
        name = model.hf_id or model.name
        online = f"{self.label} serves the weights its checkpoint holds"
        if self.online_weight_dtypes:
            online = f"the one load-time quantisation this line writes is {self.label}'s --quantization {', '.join(self.online_weight_dtypes)} of a 16-bit checkpoint"
        held = f"{model.unmodelled_quant}, sized as {native}" if model.unmodelled_quant else native
        return f"  # weights {weight_dtype}: sized for {name} in {weight_dtype}, which this checkpoint ({held}) is not: serve such a checkpoint in its place ({online})"

    def online_quantisation(self, model: ModelArch, weight_dtype: str) -> bool:
        """True where the launch line's --quantization flag makes the weights from a 16-bit checkpoint.
        Never for a checkpoint already quantised in a format sizer does not model (ModelArch.unmodelled_quant,
        sized at 16 bits): vLLM refuses a --quantization beside the config's own quant_method
        (ModelConfig._verify_quantization, vllm-project/vllm@18ec6629253632af0a384f2ffbb8c6b28af322e7:vllm/config/model.py),
        as it does for the AWQ, GPTQ and FP8 checkpoints whose own format is modelled."""
        native = model.native_weight_dtype
        return weight_dtype != native and native in SIXTEEN and not model.unmodelled_quant and weight_dtype in self.online_weight_dtypes

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
    @classmethod
    def rotary_cache_rows(cls, model: ModelArch) -> tuple[int, ...]:
        """Rows of each rotary cos/sin cache the engine builds: one per distinct rope, as vLLM's
        get_rope does and SGLang's copy of it (model.rope_cache_rows: a scaled rope's cache runs to
        the scaled length; Gemma 3 keeps a local and a global one)."""
        return model.rope_cache_rows or (model.max_position_embeddings,)

    @classmethod
    def rotary_cache_bytes(cls, model: ModelArch) -> float:
        """The rotary embeddings' cos/sin caches: [rows, rotary_dim] each, in the model dtype, one
        per distinct rope. For Llama-3.1-8B: 131072 x 128 x 2 B = 32 MiB, the difference between
        8,030,261,248 params x 2 B (14.957 GiB) and vLLM's logged "Loading model weights took
        14.9888 GB" (vllm#10517)."""
        return float(sum(cls.rotary_cache_rows(model)) * model.rotary_dim * 2)

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
        activation,
        overhead: float,
        hybrid_groups=False,
        expert_scale: float = 1.0,
        vision_replicated: bool = False,
        notes: tuple[str, ...] = (),
        cuda_graph=0.0,
        detail=(),
        state_pool_of=None,
    ) -> list[MemoryBreakdown]:
        """One breakdown per pipeline stage: `pool_of(weights_bytes, stage_kv)` is the engine's
        pool rule, `budget_of(weights_bytes)` the memory it lets itself use, `state_pool_of(weights_bytes,
        stage_kv)` a state pool of its own beside the KV pool (SGLang's Gated DeltaNet slots). `activation`,
        `cuda_graph` and `detail` are numbers (every stage alike) or functions of the stage index."""
        out = []
        per_stage = lambda x, s: x(s) if callable(x) else x  # noqa: E731
        stages = zip(stage_weights(model, tp, pp, weight_dtype, expert_scale, vision_replicated), self.stage_kv(model, kv, tp, pp, settings))
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
                    activation_bytes=per_stage(activation, s),
                    overhead_bytes=overhead,
                    cuda_graph_bytes=per_stage(cuda_graph, s),
                    detail=tuple(per_stage(detail, s)),
                    pool_bytes=pool_of(w.total_bytes, kvs) if not callable(activation) else pool_of(w.total_bytes, kvs, s),
                    block_size_tokens=settings.block_size_tokens,
                    context_tokens=context_tokens,
                    max_model_len=settings.max_model_len,
                    hybrid_groups=hybrid_groups,
                    notes=notes,
                    state_pool=state_pool_of(w.total_bytes, kvs) if state_pool_of is not None else (0, 0.0, 0, 0.0),
                )
            )
        return out


# ---------------------------------------------------------------------------------------------
# vLLM
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VllmRelease:
    """What changed in vLLM V1's memory accounting from release to release, each read in that
    release's source (pip wheels of 0.8.0 ... 0.22.0, files named below).

    - `absolute_non_torch` (0.8): v1/worker/gpu_worker.py determine_available_memory subtracts the
      whole torch peak and every non-torch byte on the device (the CUDA context included); from 0.9
      it subtracts weights + the torch peak increase + the non-torch increase since the worker's
      baseline snapshot (utils memory_profiling).
    - `snapshot_after_dist_init` (0.11+): Worker.init_device takes that snapshot after
      init_worker_distributed_environment ("Initialize the distributed environment BEFORE taking
      memory snapshot"), so the communicators' buffers made at init are no longer charged; before
      0.11 they are part of the non-torch term.
    - `sampler`: the dummy sampler run's top-k/top-p path (v1/sample/ops/topk_topp_sampler.py):
      "sort" (PyTorch sort: 0.8; 0.9-0.11.0 without FlashInfer installed, as `pip install vllm`
      leaves it -- flashinfer-python is the wheel's optional extra "flashinfer" in 0.11.0's
      METADATA; 0.11.1-0.16), "triton" (apply_top_k_top_p_triton, 0.17-0.20, batches >= 8),
      "flashinfer" (VLLM_USE_FLASHINFER_SAMPLER on by default, 0.21+; 0.9-0.11.0 when installed, as in
      the project's Docker images: TopKTopPSampler.__init__ takes forward_cuda when
      `is_flashinfer_available` and the variable is unset).
    - `sampler_native_warmup` (0.21+): _dummy_sampler_run (v1/worker/gpu_model_runner.py, 0.21.0 and
      0.22.0 wheels) runs the sampler twice on the same logits: once as configured, then with a
      per-request generator "to warm forward_native", which TopKTopPSampler.forward_cuda hands to
      forward_native (FlashInfer takes no generators), i.e. apply_top_k_top_p: the Triton kernel for
      >= 8 rows, torch's sort below (v1/sample/ops/topk_topp_sampler.py). The profile's peak is the
      larger of the two calls, the native one. 0.20.0's _dummy_sampler_run calls the sampler once.
    - `model_runner_v2` (0.22+): VllmConfig.use_v2_model_runner (config/vllm.py, 0.22.0 wheel) is
      on by default for DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES = {"Qwen3ForCausalLM"} when the model is
      neither MoE nor quantized nor hybrid (and no --reasoning-parser, speculative method other than
      EAGLE/MTP, ... is set: _get_v2_model_runner_unsupported_features). That runner
      (v1/worker/gpu/model_runner.py) returns 0 from profile_cudagraph_memory, so no graph estimate is
      subtracted, and its _dummy_sampler_run samples a dummy InputBatch whose top-k / top-p are off
      (sample/states.py: top_k = vocab, top_p = 1.0): the fp32 copy of the logits
      (Sampler.apply_sampling_params) and the Gumbel argmax, no sort. VLLM_USE_V2_MODEL_RUNNER was
      "0" by default in 0.20 and 0.21 (envs.py).
    - `cuda_graphs_in_budget` (0.20+): VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to 1 and
      determine_available_memory subtracts profile_cudagraph_memory(); up to 0.19 graphs are captured
      after the KV cache is sized and come out of the 1 - gpu_memory_utilization headroom.
    - `rocm_graph_estimate` (0.26+): on ROCm the estimate is not made before 0.26: v1/worker/
      gpu_worker.py determine_available_memory calls profile_cudagraph_memory() only `if not
      current_platform.is_rocm()` (0.19.0 l. 380, 0.20.0 l. 381: "Skip on ROCm/HIP as graph pool
      handles and mem_get_info behave differently") or `if current_platform.is_cuda()` (0.21.0 l. 403,
      0.22.0 l. 409, 0.23.0 l. 421, 0.24.0 l. 449, 0.25.0 l. 479), and `cudagraph_memory_estimate`
      stays 0 ("On ROCm, cudagraph_memory_estimate is always 0 so this is a no-op", 0.22.0 l. 423);
      0.26.0 takes `is_cuda_alike()` (l. 502: "ROCm is included: #44825 moved the profiler to
      torch.accelerator.get_memory_info"). The MI355X logs agree: 0.21-0.24 print no "Estimated CUDA
      graph memory" line, 0.26 prints it (0.79 GiB) and its "equivalent to --gpu-memory-utilization"
      note.
    - `hybrid_tokens`: how _report_kv_cache_config turns blocks into "GPU KV cache size: N tokens"
      with several KV-cache groups: num_blocks // groups x block_size (0.9-0.20), int(max
      concurrency x max_model_len) (0.21+, and for a single group too: 0.21.0 / 0.22.0
      v1/core/kv_cache_utils.py _report_kv_cache_config). `group_prefer_max` (0.18+): the 1.5 x group-size rule.
    - `moe_modular` (0.14+): the unquantized and FP8 Triton fused-MoE methods run through
      FusedMoEModularKernel (unquantized_fused_moe_method.py / quantization/fp8.py `self.kernel`),
      whose workspaces come from the worker's WorkspaceManager (v1/worker/workspace.py
      get_simultaneous: one buffer that grows and is never freed), so the largest MoE layer's
      workspace is still held when the dummy sampler run peaks. Up to 0.13 fused_experts_impl
      (fused_moe.py) allocates its caches per call and frees them. MXFP4 (gpt-oss) takes the
      monolithic Triton path, without that workspace.
    - `moe_chunk_tokens`: VLLM_FUSED_MOE_CHUNK_SIZE, the tokens one fused-MoE call works on at a
      time (envs.py): 32,768 up to 0.11, 16,384 in 0.12-0.17; from 0.18 the modular kernel no longer
      chunks (FusedMoEKernel._fused_experts allocates for M_full).
    - `allreduce_fusion` (0.17+): the -O2 default enables fuse_allreduce_rms when TP > 1 on Hopper or
      Blackwell with FlashInfer installed (config/vllm.py enable_allreduce_rms_fusion; flashinfer-python
      is a hard requirement of the wheel from 0.17, 0.6.4 in 0.17.0's METADATA). Its FlashInfer
      workspace is created at the first compiled forward, after the memory snapshot, over
      torch.distributed (flashinfer_all_reduce.py TorchDistBackend), which brings up torch's own
      NCCL communicator then: the large TP term of the 0.19 logs. Up to 0.16 the pass is off at
      every optimisation level.
    - `post_snapshot_gib`: the non-torch increase at TP 1 (kernel modules and handles loaded at the
      first forward): 0.13 GiB in every H100 log of 0.11-0.17 (nine logs: llm-d-planner's
      empirical-vllm-memory-results 0.11.0-0.16 set, the version sweep's Qwen3-14B under 0.15, 0.16,
      0.17), 0.25 GiB from 0.18 (the sweep's 0.18 run and every 0.19 log). Measured, not read: the
      source does not state it, and what loads the extra 0.12 GiB in 0.18 is not traced.
    """

    version: tuple[int, ...]
    absolute_non_torch: bool
    snapshot_after_dist_init: bool
    sampler: str
    cuda_graphs_in_budget: bool
    hybrid_tokens: str
    group_prefer_max: float
    moe_modular: bool = False
    moe_chunk_tokens: int | None = None
    allreduce_fusion: bool = False
    post_snapshot_gib: float = 0.25
    rocm_graph_estimate: bool = False
    sampler_native_warmup: bool = False
    model_runner_v2: bool = False

    @classmethod
    def of(cls, version: str, *, flashinfer_installed: bool | None = None) -> "VllmRelease":
        v = _version_tuple(version)
        if v >= (0, 21):
            sampler = "flashinfer"
        elif v >= (0, 17):
            sampler = "triton"
        elif (0, 9) <= v < (0, 11, 1) and flashinfer_installed:
            sampler = "flashinfer"
        else:
            sampler = "sort"
        return cls(
            version=v,
            absolute_non_torch=v < (0, 9),
            snapshot_after_dist_init=v >= (0, 11),
            sampler=sampler,
            cuda_graphs_in_budget=v >= (0, 20),
            hybrid_tokens="concurrency" if v >= (0, 21) else "blocks_per_group" if v >= (0, 9) else "blocks",
            group_prefer_max=1.5 if v >= (0, 18) else 0.0,
            moe_modular=v >= (0, 14),
            moe_chunk_tokens=None if v >= (0, 18) else 16384 if v >= (0, 12) else 32768,
            allreduce_fusion=v >= (0, 17) and flashinfer_installed is not False,
            post_snapshot_gib=0.25 if v >= (0, 18) else 0.13,
            rocm_graph_estimate=v >= (0, 26),
            sampler_native_warmup=v >= (0, 21),
            model_runner_v2=v >= (0, 22),
        )

    def graph_estimate_logged(self, gpu: Gpu) -> bool:
        """Whether the worker makes (and logs) the estimate at all: from 0.19; on ROCm from 0.26."""
        return self.version >= (0, 19) and (gpu.vendor.lower() != "amd" or self.rocm_graph_estimate)

    def graph_estimate_subtracted(self, gpu: Gpu) -> bool:
        """Whether determine_available_memory subtracts the estimate it makes on `gpu`: from 0.20
        (cuda_graphs_in_budget)."""
        return self.cuda_graphs_in_budget and self.graph_estimate_logged(gpu)


# Streaming multiprocessors per device: the Triton top-k/top-p kernel keeps a [min(SMs, rows) x vocab]
# fp32 buffer (topk_topp_triton.py apply_top_k_top_p_triton: NUM_PROGRAMS = min(num_sm, batch_size)).
# NVIDIA architecture whitepapers: A100 108 SMs (Ampere GA100); H100 SXM5 132, H100 PCIe 114 (Hopper
# GH100); H200 and H20 as H100 SXM5's die (H20: 78 enabled); L40S 142 (AD102); L4 58 (AD104); A10G 80
# (GA102); RTX 4090 128; RTX 3090 82; B200 148 (two dies of 74). AMD CDNA3 whitepaper: MI300X/MI325X
# 304 CUs; CDNA4: MI355X 256 CUs, and MI350X, "the same silicon at 2200MHz" (stas00/ml-engineering
# compute/accelerator/README.md note 22), as many. Measured on the device: H200 NVL 132 ("NVIDIA H200 NVL, 143771 MiB,
# 132 SMs"), GH200 132 (clinfo on "NVIDIA GH200 480GB": "Compute Units | 132"), RTX PRO 6000 Blackwell
# Server Edition 188 (torch "multi_processor_count=188").
SM_COUNT = {
    "A100-40GB": 108, "A100-80GB": 108, "A100-80GB-PCIe": 108, "H100-SXM": 132, "H100-PCIe": 114, "H100-NVL": 132, "H200-SXM": 132,
    "H200-NVL": 132, "GH200-96GB": 132, "GH200-144GB": 132,
    "H20": 78, "L40S": 142, "L4": 58, "A10G": 80, "RTX-4090": 128, "RTX-3090": 82, "RTX-PRO-6000": 188, "B200": 148, "GB200": 148,
    "B300": 148, "GB300": 148, "MI300X": 304, "MI325X": 304, "MI355X": 256, "MI350X": 256,
}
# Name prefixes of the catalog's Hopper (sm_90) and later data-centre parts. GH200 is Hopper. Not
# RTX-PRO-6000 (sm_120): PyTorch's 32 MiB cuBLAS workspace default is for sm_90 ("const bool sm90 =
# ... major == 9 && ... minor == 0"), and its PCIe link keeps it off the NVSwitch path anyway.
HOPPER_OR_LATER = ("H100", "H200", "H20", "GH200", "B200", "B300", "GB200", "GB300")


def bridge_joins(gpu: Gpu | None, tp: int) -> bool:
    """True where an NVLink bridge joins all `tp` PCIe cards of a TP group (H100-NVL pairs, H200-NVL
    4-way bridges): their collectives run over NVLink P2P, as on an NVLink node, not over PCIe."""
    return gpu is not None and gpu.interconnect == "pcie" and bool(gpu.bridge_gpus) and 1 < tp <= gpu.bridge_gpus


class VllmPolicy(EnginePolicy):
    """vLLM, V0 (before 0.8) and V1 rules; V1's terms by release (VllmRelease)."""

    name = "vllm"
    online_weight_dtypes = ("fp8",)  # --quantization fp8
    label = "vLLM"
    length_flag = "--max-model-len"
    fraction_name = "gpu_memory_utilization"
    default_version = "0.19"
    modelled_releases = ("0.2.4", "0.22")
    # --kv-cache-dtype: auto (the model dtype), fp8 (fp8_e4m3 / fp8_e5m2) (vllm/config/cache.py CacheDType)
    kv_formats = ("bf16", "fp16", "fp8")

    # V0, and V1 0.8 (absolute non-torch) on non-NVSwitch devices: non-torch memory measured in vLLM's own profiling logs: 0.35 GiB
    # (RTX 3090, TP=1, vllm#10517), 0.25 GiB (RTX 4090, TP=2, vllm#13061), 0.20 GiB (24 GB cards, vllm
    # PR #14447). TP > 1 adds NCCL and custom all-reduce buffers.
    NON_TORCH_BYTES_TP1 = 0.35 * GIB
    NON_TORCH_BYTES_PER_EXTRA_RANK_GROUP = 0.15 * GIB

    # V1 on H100 80GB, NVSwitch (SXM) systems. At init, before the snapshot (vLLM 0.19.0 debug logs,
    # llm-d-incubation/llm-d-planner@d3121e05 accuracy/results/v0.19.0/logs): "worker init memory
    # snapshot ... non_torch_memory=0.51GiB" at TP 1, 1.51 at TP 2, 1.53 at TP 4 (the CUDA context, then
    # the communicators init_worker_distributed_environment builds: PyNccl, custom all-reduce, symmetric
    # memory); charged only by releases that take the snapshot before distributed init (< 0.11).
    # After the snapshot, at TP >= 2 (VllmRelease.post_snapshot_gib holds the TP 1 part):
    # - with the all-reduce + RMSNorm fusion (0.17+, VllmRelease.allreduce_fusion): 1.82 GiB more at
    #   TP 2, 1.89 at TP 4 (0.19 logs: 2.06-2.11 and 2.13-2.21 GiB in all, less the 0.25 at TP 1; torch's
    #   NCCL communicator brought up by the fusion workspace's first collective, with its channel and
    #   NVLS buffers, and the workspace itself). Read from the Qwen2.5-7B TP 2 / TP 4 logs alone; the
    #   other 0.19 TP >= 2 logs (Llama-3.3-70B fp8 and w8a8, Qwen2.5-72B, Kimi-Dev-72B, Kimi-VL,
    #   Mistral-Small w8a8, and the held-out Llama-3.1-8B, Mixtral, gpt-oss-20b, Llama-4-Scout) check it.
    # - without it (0.11-0.16): 0.42 GiB at TP 2 (the empirical-vllm-memory-results H100 runs of
    #   llm-d-incubation/llm-d-planner@0282dcf6: non-torch 0.55 and 0.54 GiB at TP 2 against 0.13 and
    #   0.14 at TP 1, Llama-3.3-70B-FP8 and Qwen3-32B). No log at TP 4 or 8 in these releases: sizer
    #   takes the TP 2 figure (said so in the breakdown).
    V1_CONTEXT_BYTES = 0.51 * GIB
    # V0 on AMD Instinct under ROCm (measured on MI300X, CDNA3; no V0 log of another AMD part here). The
    # non-torch memory V0 charges is far larger than on CUDA. V0's rule for it changed twice (read in the
    # wheels' vllm/worker/worker.py determine_num_available_blocks):
    # - up to 0.6.3 (and the ROCm/vllm fork builds of late 2024 that lack PR #9352's "Memory profiling
    #   results" line): peak = init_gpu_memory - free after the profile, init_gpu_memory taken in
    #   init_device before init_worker_distributed_environment: everything that grew after the device
    #   was set up (communicators, libraries loaded at the first kernels, the profile);
    # - 0.6.4 (PR #9352): non_torch = device used - torch allocated after the profile: the HIP context
    #   and all else in use before the profile as well;
    # - 0.6.5 on (utils.memory_profiling): the non-torch increase over the baseline taken at init_device,
    #   as up to 0.6.3.
    # Growth after init (the first and third rules), MI300X logs of AUGMXNT/MI300-testing@032bd4da and
    # AUGMXNT/llm-tracker.info-vault@b56234c4 "MI300X Testing.md" (vLLM 0.6.3.dev114 and the fork's
    # 0.6.4.dev9, implied by their logged blocks less weights, KV and sizer's activation): 2.18 GiB
    # (Llama-2-7B TP 1) and 2.46 (Llama-3-8B TP 1), 3.80 (Mixtral-8x7B TP 2), 7.07 and 7.10 (Llama-2-7B
    # TP 8). hipBLASLt is 1.7 GiB of it: the same builds with TORCH_BLAS_PREFER_HIPBLASLT=0 give 0.46 at
    # TP 1 and 5.39 at TP 8 (its GEMM kernel libraries are loaded onto the device at the first GEMMs;
    # the rest grows with the RCCL peers: NCCL_MIN_NCHANNELS=112 adds 1.3 GiB at TP 8). TP 4: no log,
    # interpolated in log2(TP).
    # Whole device (0.6.4), the logged "non_torch_memory": 6.07 GiB at TP 1 (Llama-3.1-70B fp8, a ROCm
    # build of Dec 2024, llm-tracker.info-vault "_TOORG/vLLM MI300X vs H100.md") and 8.00 at TP 8 (the
    # driver rank; Llama-3.1-8B, 0.6.4.dev5, MI300-testing inference-vllm-vs-vllm-rocm.ipynb).
    ROCM_V0_GROWTH_GIB = {1: 2.3, 2: 3.8, 8: 7.1}
    ROCM_V0_WHOLE_DEVICE_GIB = {1: 6.07, 8: 8.00}
    # V1 (0.9-0.25) on AMD GPUs: the non-torch increase since the worker's snapshot (utils/mem_utils.py
    # MemorySnapshot.measure: free and total from current_platform.mem_get_info, i.e. torch.cuda.mem_get_info
    # on ROCm, 0.24.0 l. 146), as on CUDA, but ROCm's is far larger than the CUDA figures sizer took
    # (0.35 GiB at TP 1, 0.50 at TP 2, 0.65 beyond). Measured, not read: the source says which memory is
    # charged, not how much ROCm holds. The MI355X logs of AMD's InferenceX runs (tests/data/vllm_logs/
    # vllm_rocm_mi355x.yaml, vLLM 0.21 / 0.22, none of which subtracts a graph estimate on ROCm) give it as
    # gpu_memory_utilization x total - logged weights - logged KV - sizer's activation: 0.80, 1.27, 1.30,
    # 1.35 GiB at TP 1 (MiniMax-M2.5 FP8 and MXFP4), 3.71 and 4.18 at TP 2 (MiniMax-M2.5 FP8), 4.93-5.37 at
    # TP 4 (Kimi-K2.5 MXFP4); the medians, to 0.1 GiB, are the table. They agree with V0's growth on MI300X
    # (ROCM_V0_GROWTH_GIB: 3.8 at TP 2, 5.45 at TP 4 in log2(TP)), the same quantity, within 0.3 GiB at TP 2
    # and 4, and V0's TP 8 figure is taken for lack of a V1 log beyond TP 4. TP 1 is 1 GiB under V0's:
    # V0's includes hipBLASLt's kernel libraries (AMD_V0_AUDIT.md, mechanism 2). Checked outside these logs
    # (tests/data/vllm_logs/vllm_rocm_v1_audit.yaml): vLLM 0.24 on MI355X at TP 4 (Kimi-K2.7-Code, 5.66 GiB
    # from its logged activation) and 0.17.1 on 2 x MI300X (MiniMax-M2, tokens within 2 %). 0.26 reads free
    # memory through torch.accelerator.get_memory_info instead (mem_utils.py l. 146) and logs 2.78 GiB at TP 4
    # (same model and node): no rule is read for 0.26, which keeps the CUDA figures.
    ROCM_V1_GROWTH_GIB = {1: 1.3, 2: 3.9, 4: 5.2, 8: 7.1}
    V1_COMM_INIT_BYTES = 1.0 * GIB
    V1_COMM_LAZY_BYTES = {2: 1.82 * GIB, 4: 1.89 * GIB, 8: 1.96 * GIB}  # 8: extrapolated (+0.07 per doubling), no log
    V1_COMM_LAZY_NO_FUSION_BYTES = 0.42 * GIB  # measured at TP 2 only

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
            # vllm/engine/arg_utils.py EngineArgs.get_batch_defaults: GPUs with >= 70 GiB get
            # max_num_batched_tokens 8192 and max_num_seqs 1024 for the OpenAI API server; others 2048
            # and 256. Chunked prefill is always on in V1. From 0.9.0 an A100 is excluded ('"a100" not in
            # device_name', PR #17885: 0.9.0 arg_utils.py l. 1495, 0.10.2 l. 1669); 0.8.x has no such check
            # (0.8.5 arg_utils.py l. 1596: device_memory >= 70 GiB alone), so an 80 GB A100 takes 8192 / 1024.
            a100_excluded = _version_tuple(version) >= (0, 9) and "a100" in gpu.name.lower()
            large = gpu.usable_memory_bytes >= 70 * GIB and not a100_excluded
            seqs, tokens = (1024, 8192) if large else (256, 2048)
        else:
            # V0 SchedulerConfig: max_num_seqs 256; without chunked prefill the token budget is
            # max(max_model_len, 2048); chunked prefill is on by default above a 32K context
            # (arg_utils), with a budget of 512 in 0.6.x and 2048 from 0.7; a model with latent
            # attention (MLA) has it off in 0.7 ("MLA is enabled; forcing chunked prefill and
            # prefix caching to be disabled", VllmConfig in 0.7.1 and 0.7.3: vllm-project/vllm#13374)
            seqs = 256
            mla = model is not None and model.is_mla
            chunked = era in ("v0.6", "v0.7") and max_model_len > 32768 and not mla
            tokens = (512 if era == "v0.6" else 2048) if chunked else max(max_model_len, 2048)
        if overrides.max_num_seqs is None and overrides.max_num_batched_tokens is not None and _version_tuple(version) >= (0, 10, 1):
            # EngineArgs._set_default_args (engine/arg_utils.py): a defaulted max_num_seqs is lowered to a given
            # max_num_batched_tokens below it, from 0.10.1 ("self.max_num_seqs = min(default_max_num_seqs[usage_context],
            # self.max_num_batched_tokens or sys.maxsize)", 0.10.1 l. 1711, 0.10.2, 0.11.0; "if orig_max_num_seqs is None:
            # self.max_num_seqs = min(self.max_num_seqs, self.max_num_batched_tokens)", 0.15.0 l. 2016, 0.19.0 l. 2240,
            # 0.20.0 l. 2405, 0.21.0 l. 2443, 0.22.0 l. 2558); 0.9.0 and 0.10.0 set the default without it. SchedulerConfig
            # refuses max_num_batched_tokens < max_num_seqs, so the launch line's --max-num-seqs must be the lowered one
            seqs = min(seqs, overrides.max_num_batched_tokens)
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
        """The rotary cos/sin cache, loaded with the weights (vLLM's "Model loading took" counts it).
        V1's persistent input buffers and block tables are allocated before the profile's baseline and
        charged to no term (gpu_worker.py determine_available_memory): they sit in the headroom."""
        return self.rotary_cache_bytes(model)

    def activation_bytes(self, model: ModelArch, tp: int, max_num_batched_tokens: int, max_num_seqs: int, era: str = "v1") -> float:
        """Peak activation memory of vLLM V0's profiling run, per GPU (the driver rank, whose KV blocks
        bind: the executor takes the minimum over workers).

        The profiling forward pass pushes max_num_batched_tokens tokens through the model one layer at
        a time (activation_per_token_bytes); the sampler then runs on max_num_seqs rows of logits
        (v0_sampler_bytes). The two do not coexist, so the peak is the larger. V1: v1_activation."""
        layers_peak = max_num_batched_tokens * self.activation_per_token_bytes(model, tp)
        return float(max(layers_peak, self.v0_sampler_bytes(model, tp, max_num_batched_tokens, max_num_seqs)))

    def v0_sampler_bytes(self, model: ModelArch, tp: int, max_num_batched_tokens: int, max_num_seqs: int) -> float:
        """V0's profile run samples its max_num_seqs dummy prompts with SamplingParams(top_p=0.99,
        top_k=vocab - 1) "to reflect the accurate memory usage" (worker/model_runner.py profile_run,
        0.2-0.7), and V0's Sampler takes the PyTorch path unless VLLM_USE_FLASHINFER_SAMPLER is set
        (model_executor/layers/sampler.py: the variable defaults to False in 0.6.3/0.6.4, None in
        0.6.6/0.7.3): the logits (model dtype, the padded vocabulary, gathered to the driver),
        `logits.to(torch.float)` (4 B) and _apply_top_k_top_p's `logits.sort` (sorted values 4 B,
        int64 indices 8 B and the radix sort's alternate key/value buffers and input indices 20 B):
        38 B a logit at the sort, as V1's "sort" path (sampler_peak), beside the forward's last hidden
        states [max_num_batched_tokens x hidden]. Llama-3.1-70B fp8 with 4,096 sequences on MI300X:
        4,096 x 128,256 x 38 B + 32,768 x 8,192 x 2 B = 19.09 GiB, as logged ("peak_torch_memory=86.79GiB"
        less 67.70 of weights); Meta-Llama-3-8B with 256 at TP 1 and TP 2 on H100 logs 1.26 GiB at both
        (vllm-project/vllm PR #10511), 1.22 GiB of sampler and the 32 MiB cuBLAS workspace."""
        rows = min(max_num_seqs, max_num_batched_tokens)
        return float(rows * self.padded_vocab(model, tp) * 2 + rows * model.vocab_size * 36 + max_num_batched_tokens * model.hidden_size * 2)

    # -- V1 terms ----------------------------------------------------------------------------------
    @staticmethod
    def cublas_workspace_bytes(gpu: Gpu) -> float:
        """cuBLAS workspace, allocated through PyTorch's caching allocator at the profile's first GEMM
        (torch CUDABlas getCurrentCUDABlasHandle; default CUBLAS_WORKSPACE_CONFIG ":4096:8" = 32 MiB on
        Hopper and later, ":4096:2:16:8" = 8.1 MiB before): part of the logged torch peak increase."""
        return 32 * MIB if gpu.name.startswith(HOPPER_OR_LATER) else 8.125 * MIB

    @staticmethod
    def padded_vocab(model: ModelArch, tp: int) -> int:
        """ParallelLMHead pads the vocabulary to a multiple of 64 per rank (vocab_parallel_embedding.py
        DEFAULT_VOCAB_PADDING_SIZE, pad_vocab_size); the all-gathered logits carry the padding."""
        return ceil_div(ceil_div(model.vocab_size, 64) * 64, tp) * tp

    def sampler_peak(self, model: ModelArch, gpu: Gpu, tp: int, settings: EngineSettings, release: VllmRelease, *, v2: bool = False) -> tuple[float, str]:
        """The dummy sampler run (gpu_model_runner.py _dummy_sampler_run): min(max_num_seqs,
        max_num_batched_tokens) rows of full-vocabulary logits (LogitsProcessor all-gathers them at TP
        > 1: every rank holds [rows x vocab]), top-k and top-p on, on the last pipeline stage.
        Bytes per logit element held at the peak: the bf16 logits (2) and the sampler's fp32 copy (4),
        then by path: "sort" torch.sort's sorted values (4), int64 indices (8) and the radix sort's
        alternate key/value buffers and input indices (4 + 8 + 8): 38 B; "triton" probabilities (4) and
        the exponential noise random_sample draws (4): 14 B plus a [min(SMs, rows) x vocab] fp32
        buffer; "flashinfer" top_k_mask_logits' output (4) and its softmax (4): 14 B. The forward's
        hidden states (max_num_batched_tokens x hidden, bf16) and two [rows x hidden] copies are held.
        `v2`: the run of Model Runner V2 (uses_model_runner_v2)."""
        rows = min(settings.max_num_seqs, settings.max_num_batched_tokens)
        v, vpad, h = model.vocab_size, self.padded_vocab(model, tp), model.hidden_size
        if v2:
            # Model Runner V2 (0.22+, VllmRelease.model_runner_v2): the dummy batch has top-k / top-p off, so
            # the sampler holds the bf16 logits and their fp32 copy (4 B) only; the hidden states are not
            # re-drawn (no rand_like copy): [tokens + rows] x hidden held
            held = (settings.max_num_batched_tokens + rows) * h * 2
            return float(rows * vpad * 2 + rows * v * 4 + held), f"{rows} rows x {v:,} vocab, Model Runner V2: fp32 logits, no top-k/top-p (6 B per logit)"
        held = (settings.max_num_batched_tokens + 2 * rows) * h * 2

        def path_bytes(path: str) -> tuple[float, str]:
            if path == "triton" and rows < 8:
                path = "sort"  # apply_top_k_top_p: the Triton kernel for >= 8 rows only, torch's sort below
            if path == "sort":
                per, extra, how = 36, 0, "torch.sort path: 38 B per logit"
            elif path == "triton":
                sms = SM_COUNT.get(gpu.name, 132)
                per, extra = 12, min(1 << (min(sms, rows) - 1).bit_length(), sms) * v * 4
                how = f"Triton top-k/top-p: 14 B per logit + {min(sms, rows)} x vocab fp32 buffer"
            else:
                per, extra, how = 12, 0, "FlashInfer sampling: 14 B per logit"
            return float(rows * vpad * 2 + rows * v * per + extra + held), how

        total, how = path_bytes(release.sampler)
        if release.sampler_native_warmup:
            # 0.21+: the same logits sampled again with a generator, which takes forward_native
            native, native_how = path_bytes("triton")
            if native > total:
                total, how = native, f"{native_how} (the second, forward_native warm-up call of 0.21+; first call {how})"
        return total, f"{rows} rows x {v:,} vocab, {how}"

    @staticmethod
    def moe_workspace_bytes(model: ModelArch, tp: int, tokens: int, release: VllmRelease) -> float:
        """The fused-MoE layer's buffers for a batch of `tokens`, per GPU, with N = 2 x
        moe_intermediate / tp (gate and up), K = hidden, top-k routed copies of each token, 16-bit:

        - up to 0.13, fused_moe.py fused_experts_impl, per call: cache13 [M, top_k, max(N, K)] (the
          first and last GEMM's outputs share it), cache2 [M x top_k, N / 2] (the activated product),
          M = min(tokens, VLLM_FUSED_MOE_CHUNK_SIZE), and the [tokens, K] output;
        - 0.14+, TritonExperts.workspace_shapes through FusedMoEModularKernel._allocate_buffers:
          workspace13 [M, top_k, max(N / 2, K)] (the output reuses it when there is one chunk) and
          workspace2 [M, top_k, max(N, K)]; 0.14-0.17 chunk M as above, 0.18+ take every token.
        Qwen3-30B-A3B at 8,192 tokens under 0.19: 8,192 x 8 x (2,048 + 2,048) x 2 B = 512 MiB."""
        n = 2 * ceil_div(model.moe_intermediate_size, tp)
        k, h = model.num_experts_per_tok, model.hidden_size
        m = tokens if release.moe_chunk_tokens is None else min(tokens, release.moe_chunk_tokens)
        if not release.moe_modular:
            return float(m * k * (max(n, h) + n // 2) * 2 + tokens * h * 2)
        out = tokens * h * 2 if m < tokens else 0
        return float(m * k * (max(n // 2, h) + max(n, h)) * 2 + out)

    @staticmethod
    def moe_workspace_held(model: ModelArch, weight_dtype: str, release: VllmRelease) -> bool:
        """Whether the MoE workspace outlives the forward (VllmRelease.moe_modular): the unquantized
        and FP8 Triton experts from 0.14; not MXFP4's monolithic Triton path (gpt-oss: its 0.19 logs
        peak at the sampler run alone, 2.87 GiB at TP 2), nor models without routed experts."""
        return bool(model.is_moe and release.moe_modular and weight_dtype in ("bf16", "fp16", "fp8"))

    @staticmethod
    def vision_profile_held_bytes(model: ModelArch, settings: EngineSettings) -> tuple[float, str]:
        """What the encoder profile leaves allocated through the text forward and the sampler run
        (gpu_model_runner.py profile_run: `batched_dummy_mm_inputs` stays alive until it returns, the
        encoder outputs sit in encoder_cache until cleared). Items = encoder budget // tokens per item
        (multimodal/encoder_budget.py _get_max_items; budget = max(max_num_batched_tokens, tokens per
        item)); the pixel values are cast to the model dtype by the processor (multimodal/processing/
        context.py _postprocess_output), 2 B; the outputs are text-width embeddings. Gemma-3 at 8,192
        tokens: 32 images x 3 x 896^2 x 2 B = 0.14 GiB of pixels and 8,192 x hidden x 2 B of outputs.
        Where the config gives no image geometry, one token budget of outputs and no pixels."""
        t, h = settings.max_num_batched_tokens, model.hidden_size
        per = model.vision_item_tokens
        if not per or not model.vision_image_size:
            return float(t * h * 2), "vision encoder outputs"
        items = max(t, per) // per
        pixels = items * model.vision_item_tiles * 3 * model.vision_image_size**2 * 2
        outputs = items * per * h * 2
        return float(pixels + outputs), f"{items} dummy images held (pixels and encoder outputs)"

    def forward_peak(self, model: ModelArch, tp: int, settings: EngineSettings, weight_dtype: str, stage: int,
                     release: VllmRelease | None = None) -> tuple[float, str]:
        """The profile forward pass of max_num_batched_tokens tokens (compiled, piecewise), per GPU.
        Per token, the largest layer's live tensors: a dense gated MLP's gate/up output and activated
        product (3 x intermediate / tp; 2 x for fc1/fc2 MLPs) beside four hidden-width tensors (the
        residual, the normed input, the attention output and the piece's carried output); with
        dynamic activation quantisation (w8a8 / fp8 weights) the 8-bit copy of the down projection's
        input. A fused-MoE layer holds its buffers (moe_workspace_bytes), the same four hidden-width
        tensors and the shared expert's MLP. A multimodal model's profile first runs the vision
        encoder and holds its outputs (about one token budget of text-width embeddings) on the first
        stage. Checked against vLLM 0.19's logged torch peaks of CodeLlama-7B and Granite-3.1-8B
        (forward-bound) and Mixtral-8x7B at TP 2."""
        release = release or VllmRelease.of(settings.version)
        t = settings.max_num_batched_tokens
        h = model.hidden_size
        i = ceil_div(model.intermediate_size, tp) if model.intermediate_size else 0
        quant_act = weight_dtype in ("fp8", "int8")
        dense = ((3 if model.gated_mlp else 2) * i + 4 * h) * 2 + (i if quant_act else 0)
        total = t * dense if not model.is_moe or not all(model.moe_layers) else 0
        how = f"{t:,} tokens x {dense / 1024:,.1f} KiB (dense MLP)"
        if model.is_moe:
            moe = self.moe_workspace_bytes(model, tp, t, release) + t * 4 * h * 2
            if model.shared_experts_intermediate_size:
                moe += t * 3 * ceil_div(model.shared_experts_intermediate_size, tp) * 2
            if moe > total:
                total, how = moe, f"{t:,} tokens through a fused-MoE layer ({moe / GIB:.2f} GiB: its buffers, the hidden states, the shared expert)"
        if model.vision_params and stage == 0:
            held, held_how = self.vision_profile_held_bytes(model, settings)
            total += held
            how += f" + {held_how}"
        return float(total), how

    def v1_non_torch(self, gpu: Gpu, tp: int, pp: int, release: VllmRelease, dp: int = 1) -> tuple[float, str]:
        # An NVLink node (SXM boards of 4 or 8 GPUs joined by NVLink / NVSwitch: A100, H100, B200 ...):
        # the TP group's collectives run over NVLink P2P (custom all-reduce on, NCCL's P2P transport),
        # the setting of the H100 logs the communicator terms below were measured on. The all-reduce +
        # RMSNorm fusion (its workspace is most of V1_COMM_LAZY_BYTES) runs on compute capability 9.0 /
        # 10.x only (config/vllm.py enable_allreduce_rms_fusion, 0.19): an A100 node takes the figure
        # measured without it. No A100 log checks that extrapolation. PCIe cards whose NVLink bridge
        # joins the whole TP group (H100-NVL pairs, H200-NVL 4-way) count as such a group too: custom
        # all-reduce runs over the bridge (its "more than two PCIe-only GPUs" rule does not apply), as
        # SGLang's pcie_only reads them. No bridged-card log checks that either.
        nvlink_node = gpu.vendor.lower() == "nvidia" and (
            (gpu.gpus_per_node >= 4 and gpu.interconnect == "nvlink") or bridge_joins(gpu, tp)  # custom all-reduce stays on
        )
        fusion_capable = gpu.name.startswith(HOPPER_OR_LATER)
        fusion_on = self.allreduce_fusion_on(gpu, tp, pp, release, dp)
        ranks = tp * pp
        if gpu.vendor.lower() == "amd" and (0, 9) <= release.version < (0, 26):
            total = self.v1_rocm_non_torch(tp)
            return total, (f"ROCm's non-torch increase after the snapshot at tp={tp}: {total / GIB:.2f} GiB "
                           "(measured in vLLM 0.21/0.22 MI355X logs; ROCM_V1_GROWTH_GIB)")
        # (AMD devices otherwise keep the V0-era figures: 0.8 and 0.26+ have no ROCm rule here)
        if not nvlink_node and (release.absolute_non_torch or gpu.vendor.lower() != "nvidia"):
            # 0.8: every non-torch byte on the device, the CUDA context included (gpu_worker.py
            # determine_available_memory: mem_get_info total - free - torch allocated), as V0 measured it
            total = self.NON_TORCH_BYTES_TP1 + (0 if ranks == 1 else self.NON_TORCH_BYTES_PER_EXTRA_RANK_GROUP * (1 + (ranks > 2)))
            return total, f"context growth and communicators at tp={tp} pp={pp} (PCIe / NVLink-bridge figures, V0 logs)"
        if not nvlink_node:
            # From 0.9 the term is the increase since the worker's snapshot (utils memory_profiling against
            # Worker.init_snapshot, taken after the CUDA context exists), as on an H100 node: the kernels and
            # cuBLAS handles loaded at the first forward (post_snapshot_gib). The NVLink node's communicator
            # terms do not arise here: custom all-reduce is off on more than two PCIe-only GPUs
            # (distributed/device_communicators/custom_all_reduce.py, 0.10.2 l. 143), NCCL's NVLink SHARP
            # buffers need an NVSwitch, and the all-reduce + RMSNorm fusion is enabled on compute capability
            # 9.0 / 10.x only (config/vllm.py enable_allreduce_rms_fusion, 0.19). vLLM 0.10.2 on 8 x L40S
            # (TP 8, PCIe) logs 0.17-0.21 GiB of non-torch memory; the V0 figures gave 0.65.
            total = release.post_snapshot_gib * GIB
            return total, (f"{release.post_snapshot_gib:.2f} GiB kernels/cuBLAS after the snapshot; no NVLink "
                           f"communicator buffers at tp={tp} pp={pp} (PCIe)")
        total = release.post_snapshot_gib * GIB
        parts = [f"{release.post_snapshot_gib:.2f} GiB kernels/cuBLAS after the snapshot"]
        if tp > 1:
            # Pipeline stages exchange activations over the PyNccl communicator made at init
            # (parallel_state.py GroupCoordinator.send_tensor_dict -> device_communicator.send); only
            # the TP group's collectives add memory after the snapshot (0.19 PP=2 / PP=4 logs: 0.07 GiB).
            if fusion_on:
                lazy = self.V1_COMM_LAZY_BYTES.get(tp) or self.V1_COMM_LAZY_BYTES[8]
                parts.append(f"{lazy / GIB:.2f} GiB torch's NCCL communicator and the all-reduce fusion workspace over {tp} TP ranks")
            else:
                lazy = self.V1_COMM_LAZY_NO_FUSION_BYTES
                why = "" if fusion_capable else f"; no all-reduce fusion on {gpu.name}, H100's figure without it, no {gpu.name} log"
                if fusion_capable and release.allreduce_fusion and not fusion_on:
                    why = f"; the all-reduce fusion is off at pp={pp} dp={dp} before 0.21, or on {gpu.name} before 0.19"
                parts.append(f"{lazy / GIB:.2f} GiB first collectives over {tp} TP ranks (measured at TP 2{why})")
            total += lazy
        for size in (tp, pp):
            if size > 1 and not release.snapshot_after_dist_init:
                total += self.V1_COMM_INIT_BYTES
                parts.append(f"1.00 GiB communicators made at init for {size} ranks (snapshot before distributed init, < 0.11)")
        if release.absolute_non_torch:
            total += self.V1_CONTEXT_BYTES
            parts.append("0.51 GiB CUDA context (0.8: all non-torch memory)")
        return total, "; ".join(parts)

    @staticmethod
    def allreduce_fusion_on(gpu: Gpu, tp: int, pp: int, release: VllmRelease, dp: int = 1) -> bool:
        """Whether the all-reduce + RMSNorm fusion (VllmRelease.allreduce_fusion) runs: config/vllm.py
        enable_allreduce_rms_fusion, TP > 1 on CUDA with FlashInfer and compute capability 9.0 or 10.x, and
        - 0.17.0-0.20.0: `data_parallel_size == 1 and pipeline_parallel_size == 1` ("tp-dp combination broken",
          vllm-project/vllm#34458; "tp-pp combination broken", vllm-project/vllm#35426), dropped in 0.21.0 (read in the 0.17.0, 0.18.0, 0.19.0, 0.20.0, 0.21.0 and 0.22.0 wheels);
        - 0.17.0 and 0.18.0 test `is_device_capability(100)`, 10.0 exactly: B300 / GB300 (10.3) qualify from 0.19's
          `is_device_capability_family(100)`."""
        if tp <= 1 or not release.allreduce_fusion or not gpu.name.startswith(HOPPER_OR_LATER):
            return False
        if (pp > 1 or dp > 1) and release.version < (0, 21):
            return False
        if gpu.name.startswith(("B300", "GB300")) and release.version < (0, 19):
            return False
        return True

    def makes_graph_estimate(self, model: ModelArch, gpu: Gpu, weight_dtype: str, release: VllmRelease) -> bool:
        """Whether the worker makes (and logs) a CUDA-graph estimate for `model` on `gpu`: V1 from 0.19, on
        ROCm from 0.26 (VllmRelease.graph_estimate_logged), not under Model Runner V2, whose
        profile_cudagraph_memory returns 0 (v1/worker/gpu/model_runner.py, 0.22.0). From 0.20 the estimate
        comes out of the KV budget (VllmRelease.cuda_graphs_in_budget)."""
        return release.graph_estimate_logged(gpu) and not self.uses_model_runner_v2(model, weight_dtype, release)

    @staticmethod
    def uses_model_runner_v2(model: ModelArch, weight_dtype: str, release: VllmRelease) -> bool:
        """Whether vLLM runs the model on Model Runner V2 by default (VllmRelease.model_runner_v2): a
        Qwen3ForCausalLM (model_type "qwen3": dense, no vision tower, no linear-attention layers) served in
        its 16-bit checkpoint dtype without --quantization (VllmConfig._is_default_v2_model_runner_model:
        `not model_config.is_moe and not model_config.is_quantized`). sizer's launch line sets no
        --reasoning-parser, which would keep the V1 runner (its "reasoning budget enforcement" is unsupported)."""
        return bool(
            release.model_runner_v2
            and model.model_type == "qwen3"
            and not model.is_moe
            and not model.vision_params
            and not model.num_linear_layers
            and weight_dtype in SIXTEEN
            and model.native_weight_dtype in SIXTEEN
            and not model.unmodelled_quant
        )

    # profile_cudagraph_memory's per-capture figures that the source cannot give (they are what
    # torch.cuda.mem_get_info reports around a capture), measured from vLLM's own logged estimates
    # (tests/data/vllm_logs/vllm_graph_estimates.yaml; in-sample and held-out errors in GRAPHS_AUDIT.md):
    # - the first PIECEWISE capture of the largest size: GRAPH_FIRST_BASE_BYTES plus the forward's activation
    #   at that many tokens (forward_peak's per-token figure); the base is the median of the logged first
    #   captures less that activation over the 40 0.19 H100 runs of vllm_v019_h100_memory.yaml ("Estimated
    #   PIECEWISE CUDA graph memory: X MiB first-capture + (n-1) x Y MiB per-graph", DEBUG);
    # - every further capture: GRAPH_PER_CAPTURE_LAYER_BYTES per decoder layer on the stage (the graph's
    #   kernel nodes grow with the layers; the same 40 runs' per-graph figures), CUDA; on ROCm (HIP graphs,
    #   0.26+) GRAPH_PER_CAPTURE_LAYER_BYTES_ROCM, measured from two of the MI355X 0.26 logs (seqs 8 and 40;
    #   five more check it).
    GRAPH_FIRST_BASE_BYTES = 75 * MIB
    GRAPH_PER_CAPTURE_LAYER_BYTES = 0.18 * MIB
    GRAPH_PER_CAPTURE_LAYER_BYTES_ROCM = 1.7 * MIB
    # - with custom all-reduce off (more than two PCIe-only GPUs: distributed/device_communicators/custom_all_reduce.py),
    #   the TP all-reduces are NCCL calls captured into every graph, two a layer (attention and MLP / MoE outputs):
    #   GRAPH_PER_NCCL_COLLECTIVE_BYTES each, measured from the A100 PCIe TP 4 logs (vllm_graph_estimates.yaml source M:
    #   1.17 GiB where the rest of the mechanism gives 0.53); the DP 2 x TP 2 logs (source D: 1.87 / 2.04 GiB) check it.
    GRAPH_PER_NCCL_COLLECTIVE_BYTES = 0.13 * MIB
    # vLLM's FlashAttention-3 backends bound the KV splits of a captured FULL graph
    # (AttentionConfig.flash_attn_max_num_splits_for_cuda_graph = 32, config/attention.py 0.20.0-0.22.0)
    FA3_GRAPH_SPLITS = 32

    @staticmethod
    def cudagraph_capture_sizes(model: ModelArch, settings: EngineSettings, release: VllmRelease,
                                max_capture_size: int | None = None) -> tuple[int, ...]:
        """compilation_config.cudagraph_capture_sizes by default (config/vllm.py VllmConfig._set_cudagraph_sizes,
        0.20.0-0.22.0 wheels; the 0.19 logs print the same list): the largest size is --max-cudagraph-capture-size
        (`max_capture_size`) or min(max_num_seqs x 2, 512) -- gpt-oss's 1,024 unless either is set
        (model_executor/models/config.py GptOssForCausalLMConfig.verify_and_update_config) --, capped at
        max_num_batched_tokens; the sizes are 1, 2, 4, every 8 below 256, every 16 from 256; from 0.21 the
        token budget itself is added when it is at most the largest size and off-stride. (No speculative
        decoding: its decode_query_len would multiply max_num_seqs.)"""
        largest = max_capture_size
        if largest is None:
            largest = 1024 if model.model_type == "gpt_oss" else min(settings.max_num_seqs * 2, 512)
        largest = min(largest, settings.max_num_batched_tokens)
        sizes = {s for s in (1, 2, 4) if s <= largest}
        sizes.update(range(8, min(largest + 1, 256), 8))
        sizes.update(range(256, largest + 1, 16))
        if release.version >= (0, 21) and settings.max_num_batched_tokens <= largest:
            sizes.add(settings.max_num_batched_tokens)
        return tuple(sorted(sizes))

    @classmethod
    def cudagraph_captures(cls, model: ModelArch, settings: EngineSettings, release: VllmRelease,
                           max_capture_size: int | None = None) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(PIECEWISE sizes, FULL sizes) that profile_cudagraph_memory captures (cudagraph_dispatcher.py
        initialize_cudagraph_keys / get_capture_descs, 0.20.0-0.22.0): under the default FULL_AND_PIECEWISE
        every capture size gets a PIECEWISE graph (mixed batches) and the sizes up to max_num_seqs a FULL one
        (uniform decode batches). Chunked local attention (Llama 4) supports no full graph
        (AttentionCGSupport.NEVER): vLLM falls back to PIECEWISE only, as its 0.19 log says."""
        sizes = cls.cudagraph_capture_sizes(model, settings, release, max_capture_size)
        full = () if model.attention_chunk_size else tuple(s for s in sizes if s <= settings.max_num_seqs)
        return sizes, full

    @classmethod
    def fa3_split_accumulator_bytes(cls, model: ModelArch, gpu: Gpu, tp: int, weight_dtype: str, tokens: int) -> tuple[float, str]:
        """The FULL graph's first capture with FlashAttention 3: FlashAttentionMetadataBuilder (v1/attention/
        backends/flash_attn.py, and flashattn_mla.py for MLA, 0.20.0-0.22.0) passes num_splits =
        flash_attn_max_num_splits_for_cuda_graph (32) when capturing, "the intermediate buffers of size
        [num_splits, num_heads, num_tokens, head_size] are allocated": fp32 partial outputs and their log-sum-exp,
        head_size the value width (kv_lora_rank for MLA), at the largest FULL size. FA3 is the backend on
        compute capability 9.x only (platforms/cuda.py _get_backend_priorities: FLASHINFER / FLASHINFER_MLA first
        on 10.x; FlashAttention 2 elsewhere, without the bound), not for fp32 models (TRITON_ATTN; sizer serves none), nor for Gemma 3's
        multimodal prefix (use_mm_prefix: "partial multimodal token full attention not supported", TRITON_ATTN);
        with attention sinks (gpt-oss) the 0.19 log's first FULL capture is 8 MiB: no such buffer (logged, not
        traced in FA3's source)."""
        if gpu.family != "hopper" or not tokens:
            return 0.0, "no FlashAttention-3 split buffers"
        if model.attention_sinks or (model.model_type.startswith("gemma3") and model.vision_params):
            return 0.0, "no FlashAttention-3 split buffers"
        heads = ceil_div(model.num_attention_heads, tp)
        width = model.kv_lora_rank if model.is_mla else (model.v_head_dim or model.head_dim)
        total = cls.FA3_GRAPH_SPLITS * heads * tokens * (width + 1) * 4
        return float(total), f"FlashAttention-3 split buffers: 32 splits x {heads} heads x {tokens} tokens x {width} fp32"

    @staticmethod
    def nccl_collectives_in_graphs(gpu: Gpu, tp: int) -> bool:
        """Whether the TP all-reduces are NCCL calls inside the captured graphs: vLLM's custom all-reduce (captured
        as its own kernel) is off on more than two PCIe-only GPUs ("Custom allreduce is disabled because it's not
        supported on more than two PCIe-only GPUs", custom_all_reduce.py); on an NVLink node or a bridged group it stays
        on (v1_non_torch's NVLink rule)."""
        nvlink = (gpu.gpus_per_node >= 4 and gpu.interconnect == "nvlink") or bridge_joins(gpu, tp)
        return gpu.vendor.lower() == "nvidia" and tp > 2 and not nvlink

    def cuda_graph_estimate(self, model: ModelArch, gpu: Gpu, tp: int, pp: int, stage: int, settings: EngineSettings,
                            weight_dtype: str, release: VllmRelease, *, max_capture_size: int | None = None) -> tuple[float, str]:
        """profile_cudagraph_memory (v1/worker/gpu_model_runner.py; 0.19 by its logs, 0.20.0-0.22.0 wheels read):
        for each mode (PIECEWISE, FULL) it captures the largest size and the next, each measured by
        torch.cuda.mem_get_info; first_capture = the first, per_graph = max(the second, 1 MiB); the estimate is
        max(first_capture over the modes) + sum over the modes of per_graph x (captures - 1) ("FULL and PIECEWISE
        graphs share the global pool ... Take the max"). Here: the first PIECEWISE capture is
        GRAPH_FIRST_BASE_BYTES + the forward's activation at the largest size, the
        first FULL capture FlashAttention 3's split buffers (fa3_split_accumulator_bytes), every further capture
        GRAPH_PER_CAPTURE_LAYER_BYTES(_ROCM) per layer on the stage (measured: see the constants)."""
        pw, full = self.cudagraph_captures(model, settings, release, max_capture_size)
        if not pw:
            return 0.0, "no CUDA graphs"
        layers = len(model.stage_layers(pp)[stage])
        act, _ = self.forward_peak(model, tp, replace(settings, max_num_batched_tokens=pw[-1]), weight_dtype, -1, release)
        first_pw = self.GRAPH_FIRST_BASE_BYTES + act
        first_full, full_how = self.fa3_split_accumulator_bytes(model, gpu, tp, weight_dtype, full[-1] if full else 0)
        per_layer = self.GRAPH_PER_CAPTURE_LAYER_BYTES_ROCM if gpu.vendor.lower() == "amd" else self.GRAPH_PER_CAPTURE_LAYER_BYTES
        nccl = 2 * layers if self.nccl_collectives_in_graphs(gpu, tp) else 0
        per_graph = max(per_layer * layers + nccl * self.GRAPH_PER_NCCL_COLLECTIVE_BYTES, MIB)
        increments = (len(pw) - 1) + (len(full) - 1 if full else 0)
        total = max(first_pw, first_full) + per_graph * increments
        how = (f"PIECEWISE={len(pw)} (largest={pw[-1]}), FULL={len(full)}" + (f" (largest={full[-1]})" if full else "")
               + f": first capture {max(first_pw, first_full) / MIB:.0f} MiB ("
               + (full_how if first_full > first_pw else f"{pw[-1]} tokens' activations") + f") + {increments} x "
               + f"{per_graph / MIB:.1f} MiB ({layers} layers" + (f", {nccl} NCCL all-reduces captured" if nccl else "") + ")")
        return float(total), how

    def cuda_graph_estimate_bytes(self, model: ModelArch, gpu: Gpu, tp: int, pp: int, settings: EngineSettings,
                                  weight_dtype: str, release: VllmRelease, *, stage: int | None = None,
                                  max_capture_size: int | None = None) -> float:
        """cuda_graph_estimate's bytes, on `stage` (default: the stage of the most layers)."""
        if stage is None:
            rows = model.stage_layers(pp)
            stage = max(range(pp), key=lambda s: len(rows[s]))
        return self.cuda_graph_estimate(model, gpu, tp, pp, stage, settings, weight_dtype, release, max_capture_size=max_capture_size)[0]

    def linear_state_dtypes(self, model: ModelArch, version: str) -> tuple[str, str]:
        """(convolution, recurrent) state dtypes of vLLM's Gated DeltaNet cache, --mamba-cache-dtype
        and --mamba-ssm-cache-dtype at "auto" (model_executor/layers/mamba/mamba_utils.py, read in
        the 0.11-0.34 wheels): the model's dtype for both up to 0.16; from 0.17 the recurrent state in
        the config's mamba_ssm_dtype for Qwen3.5 (its config class maps "auto" to it), the model's
        dtype for Qwen3-Next."""
        sixteen = model.torch_dtype if model.torch_dtype in ("bf16", "fp16") else "bf16"
        if _version_tuple(version) >= (0, 17) and model.model_type.startswith("qwen3_5"):
            return sixteen, model.linear_state_dtype
        return sixteen, sixteen

    def hybrid_block_tokens(self, model: ModelArch, kv: KvFormat, tp: int, version: str, block: int) -> int:
        """vLLM's attention block for a model with Gated DeltaNet layers: the smallest multiple of
        the alignment (16, or the --block-size given, if larger) whose page (tokens x one layer's KV
        bytes a token) covers one sequence's state in one layer (HybridAttentionMambaModelConfig,
        0.11-0.18 models/config.py; _align_hybrid_block_size, 0.20+ platforms/interface.py). vLLM's own
        comments give 544 tokens for Qwen3-Next at TP 1 (bf16 KV and state) and 1,056 for a Qwen3.5
        of 32 value heads (its float32 state)."""
        conv, ssm = self.linear_state_dtypes(model, version)
        state = linear_state_bytes_per_layer(model, tp, ssm, conv)
        per_token = kv_bytes_per_token_per_layer(model, kv, tp)
        align = max(16, block)
        return align * ceil_div(math.ceil(state), int(align * per_token)) if per_token else block

    def stage_kv(self, model: ModelArch, kv: KvFormat, tp: int, pp: int, settings: EngineSettings | None = None) -> list[StageKv]:
        """Gated DeltaNet states share vLLM's pool, one page a layer, padded to the attention page
        (hybrid_block_tokens at the settings' release and --block-size)."""
        if not model.num_linear_layers:
            return stage_kv(model, kv, tp, pp)
        version = settings.version if settings is not None else self.default_version
        tokens = self.hybrid_block_tokens(model, kv, tp, version, settings.block_size_tokens if settings is not None else 16)
        return stage_kv(model, kv, tp, pp, tokens * kv_bytes_per_token_per_layer(model, kv, tp))

    def breakdown(self, model, gpu, *, tp, pp, weight_dtype, kv, settings, context_tokens):
        era = self.era(settings.version)
        if model.num_linear_layers and era == "v1":
            settings = replace(settings, block_size_tokens=self.hybrid_block_tokens(model, kv, tp, settings.version, settings.block_size_tokens))
        if era != "v1":
            return self._v0_breakdown(model, gpu, tp=tp, pp=pp, weight_dtype=weight_dtype, kv=kv, settings=settings, context_tokens=context_tokens)
        release = VllmRelease.of(settings.version, flashinfer_installed=settings.flashinfer_installed)
        budget = math.ceil(gpu.usable_memory_bytes * settings.memory_fraction)  # v1/worker/utils.py request_memory
        buffers = self.runtime_buffer_bytes(model, settings)
        non_torch, non_torch_how = self.v1_non_torch(gpu, tp, pp, release, settings.data_parallel_size)
        cublas = self.cublas_workspace_bytes(gpu)
        v2 = self.uses_model_runner_v2(model, weight_dtype, release)
        estimate_graphs = release.cuda_graphs_in_budget and self.makes_graph_estimate(model, gpu, weight_dtype, release)
        graphs = [self.cuda_graph_estimate(model, gpu, tp, pp, s, settings, weight_dtype, release) if estimate_graphs else (0.0, "")
                  for s in range(pp)]
        terms = {}
        for s in range(pp):
            fwd, fwd_how = self.forward_peak(model, tp, settings, weight_dtype, s, release)
            detail = [("forward pass", fwd_how, fwd)]
            peak = fwd
            if s == pp - 1:
                samp, samp_how = self.sampler_peak(model, gpu, tp, settings, release, v2=v2)
                if model.vision_params and s == 0:
                    held, held_how = self.vision_profile_held_bytes(model, settings)
                    samp += held
                    samp_how += f"; {held_how}"
                if self.moe_workspace_held(model, weight_dtype, release):
                    # the WorkspaceManager's buffer, grown by the forward's MoE layers, is never freed
                    held_ws = self.moe_workspace_bytes(model, tp, settings.max_num_batched_tokens, release)
                    samp += held_ws
                    samp_how += f"; the fused-MoE workspace still held ({held_ws / GIB:.2f} GiB, vLLM >= 0.14)"
                detail.append(("dummy sampler run", samp_how, samp))
                peak = max(peak, samp)
            detail.append(("cuBLAS workspace", "allocated at the first GEMM", cublas))
            detail.append(("non-torch increase", non_torch_how, non_torch))
            terms[s] = (peak + cublas, tuple(detail))
        rule = f"{gpu.name} total x {self.fraction_name}"
        stages = self.stage_breakdowns(
            model, gpu, tp=tp, pp=pp, weight_dtype=weight_dtype, kv=kv, settings=settings, context_tokens=context_tokens,
            pool_of=lambda weights, _kv, s: budget - weights - buffers - terms[s][0] - non_torch - graphs[s][0],
            budget_of=lambda _weights: budget,
            budget_rule=rule, buffers=buffers, activation=lambda s: terms[s][0], overhead=non_torch,
            hybrid_groups=EngineKvReport(
                hybrid=True,
                prefer_max_within=release.group_prefer_max,
                tokens_rule=release.hybrid_tokens,
                max_num_batched_tokens=settings.max_num_batched_tokens,
                attention_chunk_size=model.attention_chunk_size,
            ),
            expert_scale=self.expert_scale(model, weight_dtype, era),
            vision_replicated=self.vision_tower_replicated(model, release),
            cuda_graph=lambda s: graphs[s][0], detail=lambda s: terms[s][1],
            notes=(
                f"vLLM {settings.version}: "
                + ("Model Runner V2 (its default for Qwen3ForCausalLM): no CUDA-graph estimate, no top-k/top-p in the dummy sampler run; " if v2 else "")
                + f"sampler path {release.sampler}; FlashInfer "
                + ("installed" if settings.flashinfer_installed else "not installed" if settings.flashinfer_installed is False
                   else "as the release's pip wheel leaves it (" + ("installed" if release.version >= (0, 17) else "not installed") + ")")
                + (f"; TP all-reduce fusion {'on' if self.allreduce_fusion_on(gpu, tp, pp, release, settings.data_parallel_size) else 'off'}" if tp > 1 else "")
                + ("; fused-MoE workspace held through the sampler run" if self.moe_workspace_held(model, weight_dtype, release) else "")
                + ("; loaded in Mistral's format: its vision tower whole on every TP rank" if tp > 1 and self.vision_tower_replicated(model, release) else ""),
            ),
        )
        return binding_stage(stages)

    def runtime_overhead_bytes(self, tp: int, era: str = "v1") -> float:
        """V0 non-torch memory per GPU (CUDA context share, NCCL and all-reduce buffers): grows with TP.
        vLLM before 0.6 did not subtract it (peak = torch.cuda.max_memory_allocated())."""
        if era == "v0-early":
            return 0.0
        extra = 0 if tp == 1 else self.NON_TORCH_BYTES_PER_EXTRA_RANK_GROUP * (1 + (tp > 2))
        return self.NON_TORCH_BYTES_TP1 + extra

    def v0_rocm_non_torch(self, gpu: Gpu, tp: int, version: str) -> float:
        """V0's non-torch term on an AMD GPU (ROCM_V0_GROWTH_GIB, ROCM_V0_WHOLE_DEVICE_GIB): the growth
        after init up to 0.6.3 and from 0.6.5, the whole device's non-torch memory in 0.6.4; by TP, in
        log2(TP) between the measured sizes, the largest measured beyond them."""
        v = _version_tuple(version)
        table = self.ROCM_V0_WHOLE_DEVICE_GIB if (0, 6, 4) <= v < (0, 6, 5) else self.ROCM_V0_GROWTH_GIB
        return self._by_tp(table, tp)

    def v1_rocm_non_torch(self, tp: int) -> float:
        """V1's non-torch increase on an AMD GPU, 0.9-0.25 (ROCM_V1_GROWTH_GIB), by TP as V0's."""
        return self._by_tp(self.ROCM_V1_GROWTH_GIB, tp)

    @staticmethod
    def _by_tp(table: dict[int, float], tp: int) -> float:
        """A measured per-TP figure (GiB) in bytes: in log2(TP) between the measured sizes, the
        largest measured beyond them."""
        sizes = sorted(table)
        x = math.log2(max(tp, 1))
        if tp >= sizes[-1]:
            return table[sizes[-1]] * GIB
        lo = max(s for s in sizes if s <= tp)
        hi = min(s for s in sizes if s >= tp)
        if lo == hi:
            return table[lo] * GIB
        f = (x - math.log2(lo)) / (math.log2(hi) - math.log2(lo))
        return (table[lo] + f * (table[hi] - table[lo])) * GIB

    @staticmethod
    def vision_tower_replicated(model: ModelArch, release: VllmRelease) -> bool:
        """Whether every TP rank holds the whole vision tower: a Mistral AI repo (mistralai/...) ships
        params.json and consolidated*.safetensors beside its HF files, and from 0.12 config_format
        "auto" takes the Mistral format first when params.json is there (transformers_utils/config.py
        get_config; 0.11.2 still took config.json first; vllm-project/vllm PR #28659). That format loads
        PixtralForConditionalGeneration, whose VisionTransformer, PatchMerger and VisionLanguageAdapter
        are plain nn.Linear (models/pixtral.py FeedForward, Attention: not TP-sharded), where the HF
        format's Mistral3ForConditionalGeneration shards PixtralHFVisionModel (QKVParallelLinear,
        MergedColumnParallelLinear). vLLM 0.19 logs of Mistral-Small-3.1-24B at TP 2 and 4 load 22.80
        and 11.86 GiB, its whole 0.82 GiB tower on each rank; RedHatAI's HF-only w8a8 copy shards it."""
        return bool(
            model.vision_params
            and release.version >= (0, 12)
            and (model.hf_id or "").lower().startswith("mistralai/")
        )

    @staticmethod
    def expert_scale(model: ModelArch, weight_dtype: str, era: str) -> float:
        """vLLM's MXFP4 fused-MoE weights are padded for its kernels: the hidden dimension is
        rounded up to a multiple of 256 (vllm/model_executor/layers/quantization/mxfp4.py, e.g.
        gpt-oss's 2,880 -> 3,072), which is why gpt-oss-120b logs 64.38 GiB, not 60.7."""
        if era == "v1" and weight_dtype == "mxfp4" and model.is_moe and model.quant is not None and model.quant.dtype == "mxfp4":
            return math.ceil(model.hidden_size / 256) * 256 / model.hidden_size
        return 1.0

    def _v0_breakdown(self, model, gpu, *, tp, pp, weight_dtype, kv, settings, context_tokens):
        era = self.era(settings.version)
        budget = gpu.usable_memory_bytes * settings.memory_fraction
        buffers = self.runtime_buffer_bytes(model, settings)
        activation = self.activation_bytes(model, tp, settings.max_num_batched_tokens, settings.max_num_seqs, era)
        if gpu.vendor == "nvidia" and era != "v0-early":
            activation += self.cublas_workspace_bytes(gpu)  # the torch peak counts it (0.6.4+: allocated_bytes.all.peak)
        overhead = self.v0_rocm_non_torch(gpu, tp, settings.version) if gpu.vendor == "amd" else self.runtime_overhead_bytes(tp, era)
        # (the ROCm term above is the growth after init, which V0 charges up to 0.6.3 on either vendor)
        rule = f"{gpu.name} total x {self.fraction_name}" + (" (vLLM < 0.6: non-torch memory not subtracted)" if era == "v0-early" and not overhead else "")
        stages = self.stage_breakdowns(
            model, gpu, tp=tp, pp=pp, weight_dtype=weight_dtype, kv=kv, settings=settings, context_tokens=context_tokens,
            pool_of=lambda weights, _kv: budget - weights - buffers - activation - overhead,
            budget_of=lambda _weights: budget,
            budget_rule=rule, buffers=buffers, activation=activation, overhead=overhead,
            hybrid_groups=False, expert_scale=self.expert_scale(model, weight_dtype, era),
        )
        return binding_stage(stages)

    def launch_command(self, model, *, tp, pp, kv, weight_dtype, settings, max_num_seqs):
        args = ["vllm", "serve", model.hf_id or model.name]
        args += ["--tensor-parallel-size", str(tp), "--pipeline-parallel-size", str(pp)]
        if self.online_quantisation(model, weight_dtype):
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
            flag_number(settings.memory_fraction),
            "--block-size",
            str(settings.block_size_tokens),
        ]
        return shlex.join(args) + self.checkpoint_note(model, weight_dtype)


# ---------------------------------------------------------------------------------------------
# SGLang
# ---------------------------------------------------------------------------------------------


class SglangPolicy(EnginePolicy):
    """SGLang: a static fraction of the memory free at start holds weights and the KV pool."""

    name = "sglang"
    online_weight_dtypes = ("fp8",)  # --quantization fp8
    label = "SGLang"
    length_flag = "--context-length"
    budget_counts_decode = 0.0  # chunked_prefill_size: prompt tokens only
    fraction_name = "mem_fraction_static"
    default_version = "0.5.5"
    modelled_releases = ("0.4", "0.5.5")
    # --kv-cache-dtype: auto, fp8_e5m2, fp8_e4m3 (sglang/srt/server_args.py)
    kv_formats = ("bf16", "fp16", "fp8")

    # Memory in use when the weights start loading: the CUDA context and the communicators that
    # torch.distributed, NCCL and custom all-reduce set up, growing with the number of TP peers.
    # SGLang logs it: "Load weight begin. avail mem=137.29 GB" on 8 x H200 (sgl-project/sglang
    # PR #11716), i.e. 139.80 - 137.29 = 2.51 GiB in use at TP 8. With a 0.5 GiB CUDA context at
    # TP 1 that is (2.51 - 0.5) / 7 = 0.287 GiB per peer.
    INIT_BYTES_TP1 = 0.5 * GIB
    INIT_BYTES_PER_PEER = 0.287 * GIB
    # On AMD's CDNA 4 (MI355X, MI350X: gfx950) under ROCm the same memory is far larger. SGLang
    # logs it when its communicators are up, before the weights: "Init torch distributed ends. ...
    # mem usage=8.18 GB" at TP 2 and "8.82 GB" at TP 4 (SGLang's GB are GiB) in AMD's InferenceX
    # runs on MI355X (ajith-sirra-amd/InferenceMAX_Rocm_Team@598828615e7701f3f4f8ac5b1da2dbb49fe11460
    # results/0604/glm5.1-fp4-mi355x-sglang-agentic-hicache/*/server.log and
    # results/0603_sa/qwen3.5-fp8-mi355x-sglang-agentic-hicache/*/server.log): 0.32 GiB per peer,
    # as on CUDA, over 7.86 GiB at TP 1. What holds the 7.9 GiB is not traced (the HIP runtime and
    # AITER's kernels are in by then). CDNA 3 (MI300X, MI325X) has no such log here and keeps the
    # CUDA figures.
    INIT_BYTES_TP1_CDNA4 = 7.86 * GIB
    INIT_BYTES_PER_PEER_CDNA4 = 0.32 * GIB
    # Over PCIe the per-peer figure above does not apply. SGLang turns its custom all-reduce off on
    # more than two PCIe-only GPUs and where peer access fails (distributed/device_communicators/
    # custom_all_reduce.py: "not supported on more than two PCIe-only GPUs", _can_p2p; 0.4.3.post4 to
    # 0.5.9) and NCCL's NVLink SHARP buffers stay off (entrypoints/engine.py sets NCCL_NVLS_ENABLE from
    # --enable-nccl-nvls, default off), which leaves one NCCL communicator over PCIe. Its logged cost
    # does not grow with the peers: "Init torch distributed ends. mem usage=0.26 GB" at TP 2 on RTX 4090
    # (sgl-project/sglang#16920) and 0.13 GB at TP 4 on L4 (didier-durand/llms-in-clouds docs/sglang.md).
    # sizer takes the larger, 0.26 GiB, once, at any TP > 1.
    INIT_BYTES_COMM_PCIE = 0.26 * GIB

    @staticmethod
    def default_fraction(gpu: Gpu, model: ModelArch | None, tp: int, pp: int, version: str) -> tuple[float, int, str]:
        """SGLang's own mem_fraction_static and chunked_prefill_size when not given
        (sglang/srt/server_args.py, read in the wheels of 0.4.7, 0.4.8-0.5.2 and 0.5.3-0.5.5).
        gpu_mem is nvidia-smi's memory.total in MiB (utils.get_nvgpu_memory_capacity); sizer takes
        the catalog's memory_gib x 1024 (H100: 81,920 against nvidia-smi's 81,559: 0.001 in the fraction).

        - up to 0.4.5 (__post_init__): 0.88 at TP 1, 0.87 at 2, 0.85 at 4, 0.81 at 8, 0.79 at 16 on every
          GPU (the wheels of 0.4.1.post7, 0.4.3.post4, 0.4.4, 0.4.5). Chunk 2048 under 25,000 MB, else 8192.
        - 0.4.6: that by-TP rule on GPUs of <= 81,920 MiB; larger GPUs (gpu_mem - 13 GiB) / gpu_mem.
        - 0.4.7: by TP x PP on GPUs of <= 81,920 MiB, else 0.88; then on CUDA GPUs over 180,000 MiB 0.79,
          and on GPUs over 96 GiB min(f + 48 GiB x (1 - f) / gpu_mem, (gpu_mem - 18 GiB) / gpu_mem). Chunk
          16384 over 180,000 MiB.
        - 0.4.8-0.5.2: reserved = (2.8 + tp x pp / 10) GiB under 35 GiB, (9.5 + tp x pp / 2) GiB under
          90, (12 + tp x pp / 2) under 160, 32 GiB above; fraction = round((gpu_mem - reserved) / gpu_mem, 3).
        - 0.5.3+ (_handle_gpu_memory_settings): chunked_prefill_size and cuda_graph_max_bs by memory
          class (2048/8 under 20 GiB, 2048/24 (80 at TP >= 4) under 35, 4096/32 (160) under 60,
          8192/256 (512) under 160, 16384/512 above); reserved = 512 + max(chunk, 2048) x 1.5 +
          cuda_graph_max_bs x 2 + tp x pp / 8 x 1024 MiB, at least 10 GiB on GPUs over 60 GiB.
        - 0.5.10+: the piecewise CUDA graph of the prefill is on by default (0.5.9 had
          enable_piecewise_cuda_graph False, 0.5.10 disable_piecewise_cuda_graph False) and reserves 8 MiB
          per capture size (4..32 by 4, 48..256 by 16, 288..512 by 32, 576..1024 by 64, 1280..4096 by 256,
          then by 512 up to the chunk: 58 sizes at 8192, 74 at 16384), 1.5 GiB on an MLA model, before the
          10 GiB floor (server_args.py _handle_gpu_memory_settings; 0.5.20+ arg_groups/memory_hook.py
          reserve_for_graph_mb). It stays off (_handle_piecewise_cuda_graph) on ROCm, with PP > 1, for
          multimodal models and for Qwen3-Next, DeepSeek-V3.2, GLM-5 (DSA), Ling-2.5 and LLaDA.
        - 0.4.10+: multimodal models scale it by 0.95 x (1 - 0.1 x (vit layers x width^2 / (24 x 1024^2) - 1)),
          that factor held within [0.8, 1.05] (adjust_mem_fraction_for_vlm); sizer has no vision width
          and applies 0.95 (a ViT of about 24 x 1024^2) when the model is multimodal."""
        v = _version_tuple(version)
        mem = gpu.memory_bytes / 2**20
        p = tp * pp
        if v < (0, 4, 8):
            chunk = 2048 if mem < 25_000 else 8192

            def by_size(n: int) -> float:
                return 0.79 if n >= 16 else 0.81 if n >= 8 else 0.85 if n >= 4 else 0.87 if n >= 2 else 0.88

            if v < (0, 4, 6) or (v < (0, 4, 7) and mem <= 81920):
                f = by_size(tp)
                rule = "SGLang <= 0.4.6: by TP size"
            elif v < (0, 4, 7):
                f = (mem - 13 * 1024) / mem
                rule = "SGLang 0.4.6: (gpu_mem - 13 GiB) / gpu_mem"
            else:
                f = by_size(p) if mem <= 81920 else 0.88
                rule = "SGLang 0.4.7: by TP x PP size"
                if mem > 180_000 and gpu.vendor.lower() == "nvidia":
                    f, chunk = 0.79, 16384
                    rule = "SGLang 0.4.7: 0.79 on CUDA GPUs over 180,000 MiB"
                elif mem > 96 * 1024:
                    f = min(f + 48 * 1024 * (1 - f) / mem, (mem - 18 * 1024) / mem)
                    rule = "SGLang 0.4.7: min(0.88 + 48 GiB x 0.12 / gpu_mem, (gpu_mem - 18 GiB) / gpu_mem)"
        elif v < (0, 5, 3):
            chunk = 2048 if mem < 25_000 else 8192
            reserved = (2.8 + p / 10 if mem < 35 * 1024 else 9.5 + p / 2 if mem < 90 * 1024 else 12 + p / 2 if mem < 160 * 1024 else 32) * 1024
            f = round((mem - reserved) / mem, 3)
            rule = f"SGLang 0.4.8-0.5.2: (gpu_mem - {reserved / 1024:g} GiB reserved) / gpu_mem"
        else:
            if mem < 20 * 1024:
                chunk, cg = 2048, 8
            elif mem < 35 * 1024:
                chunk, cg = 2048, 24 if tp < 4 else 80
            elif mem < 60 * 1024:
                chunk, cg = 4096, 32 if tp < 4 else 160
            elif mem < 160 * 1024:
                chunk, cg = 8192, 256 if tp < 4 else 512
            else:
                chunk, cg = 16384, 512
            reserved = 512 + max(chunk, 2048) * 1.5 + cg * 2 + p / 8 * 1024
            piecewise = SglangPolicy.piecewise_graph_reserve_mib(gpu, model, pp, chunk, version)
            reserved += piecewise
            if mem > 60 * 1024:
                reserved = max(reserved, 10 * 1024)
            f = round((mem - reserved) / mem, 3)
            rule = f"SGLang 0.5.3+: (gpu_mem - {reserved:,.0f} MiB reserved for a {chunk}-token chunk and graphs to batch {cg}"
            rule += f", {piecewise:,.0f} MiB for the prefill's piecewise graphs) / gpu_mem" if piecewise else ") / gpu_mem"
        if v >= (0, 4, 10) and model is not None and (model.multimodal or model.vision_params):
            f *= 0.95
            rule += "; x 0.95 for a multimodal model"
        return f, chunk, rule

    # Architectures SGLang keeps off the piecewise CUDA graph (configs/model_config.py
    # piecewise_cuda_graph_disabled_model_archs, 0.5.10; DeepSeek-V3.2's DSA by is_deepseek_nsa), by model_type
    PIECEWISE_GRAPH_OFF_MODEL_TYPES = ("qwen3_next", "deepseek_v32", "glm_moe_dsa", "bailing_moe_v2_5", "llada")

    @staticmethod
    def piecewise_capture_sizes(max_tokens: int) -> list[int]:
        """The prefill token counts SGLang captures piecewise graphs for, up to the chunk
        (server_args.py _generate_piecewise_cuda_graph_tokens, 0.5.10-0.5.12)."""
        sizes = [*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *range(576, 1025, 64), *range(1280, 4097, 256),
                 *range(4608, max_tokens + 1, 512)]
        return [n for n in sizes if n <= max_tokens]

    @staticmethod
    def piecewise_graph_reserve_mib(gpu: Gpu, model: ModelArch | None, pp: int, chunk: int, version: str) -> float:
        """MiB the default mem_fraction_static sets aside for the piecewise CUDA graphs of the prefill:
        8 MiB per capture size (1.5 GiB on an MLA model) from 0.5.10, where the graph is on by default; 0
        where SGLang turns it off (ROCm, PP > 1, multimodal models, the listed architectures)."""
        if _version_tuple(version) < (0, 5, 10) or gpu.vendor.lower() != "nvidia" or pp > 1:
            return 0.0
        if model is not None and (model.multimodal or model.vision_params or model.model_type in SglangPolicy.PIECEWISE_GRAPH_OFF_MODEL_TYPES):
            return 0.0
        if model is not None and model.is_mla:
            return 1.5 * 1024
        return 8.0 * len(SglangPolicy.piecewise_capture_sizes(chunk))

    def settings(self, gpu, model, tp, *, version, overrides, max_model_len):
        version = version or self.default_version
        fraction, chunk, _ = self.default_fraction(gpu, model, tp, 1, version)
        return overrides.resolve(
            engine=self.name,
            version=version,
            max_model_len=max_model_len,
            memory_fraction=fraction,
            block_size_tokens=1,  # page_size 1: a token-granular pool
            max_num_seqs=4096,  # max_running_requests: bounded by the pool
            max_num_batched_tokens=chunk,
        )

    # Gated DeltaNet models (Qwen3-Next, Qwen3.5): SGLang keeps each request's convolution and
    # recurrent state in a pool of its own, of S slots, before the KV pool (sglang 0.5.12.post1
    # model_executor/model_runner_kv_cache_mixin.py handle_max_mamba_cache, _resolve_max_num_reqs;
    # 0.5.6 profile_max_num_token): with the radix cache on (the default) the slots take
    # r / (1 + r) of what the static fraction leaves after the weights, r = --mamba-full-memory-ratio
    # (0.9), S = floor(rest x r / (1 + r) / state per request); the KV pool is the rest less S x
    # state, and max_running_requests is at most S // 3 (the no_buffer scheduler's ratio). Up to
    # 0.5.3 there was no split: the radix cache was off for such models and S = --max-running-requests,
    # else 512. The MambaRadixCache that brought the split (sgl-project/sglang PR #11214) merged on
    # 2025-10-13, after 0.5.3; sizer applies the split from 0.5.4. Checked against 41 logs of AMD's
    # Qwen3.5-397B-A17B-FP8 runs at TP 4 on MI355X (tests/test_hybrid_linear.py).
    MAMBA_FULL_MEMORY_RATIO = 0.9
    MAMBA_RUNNING_RATIO = 3

    def state_pool(
        self, model: ModelArch, tp: int, rest_bytes: float, settings: EngineSettings, stage_linear_layers: int,
        radix_cache: bool = True, max_running: int | None = None,
    ) -> tuple[int, float, int, float]:
        """(slots, their bytes, the running-request cap, the convolution states' bytes) of SGLang's
        Gated DeltaNet state pool on a stage whose KV and state share `rest_bytes`; zeros for a
        model without such layers. `radix_cache` False is --disable-radix-cache: with
        --max-running-requests (`max_running`) the slots are that many, and the cap is the slots."""
        if not stage_linear_layers or rest_bytes <= 0:
            return 0, 0.0, 0, 0.0
        per_request = stage_linear_layers * self.linear_state_bytes(model, tp)
        conv_share = linear_state_parts(model, tp)[0] * stage_linear_layers / per_request
        if _version_tuple(settings.version) < (0, 5, 4):
            slots = max_running or (settings.max_num_seqs if settings.max_num_seqs < 4096 else 512)
            cap = slots
        elif not radix_cache and max_running:
            slots = cap = int(max_running)
        else:
            r = self.MAMBA_FULL_MEMORY_RATIO
            slots = int(rest_bytes * r / (1 + r) // per_request)
            cap = slots // (self.MAMBA_RUNNING_RATIO if radix_cache else 1)
        return slots, slots * per_request, cap, slots * per_request * conv_share

    @staticmethod
    def states_follow_running_cap(settings: EngineSettings | None) -> bool:
        """True where the Gated DeltaNet slots are the running-request cap sizer's own launch line
        sets (--disable-radix-cache, no --max-running-requests given): each running sequence then
        takes its state out of what would be the KV pool, as in vLLM's shared pool."""
        return (
            settings is not None and not settings.radix_cache and settings.max_num_seqs >= 4096
            and _version_tuple(settings.version) >= (0, 5, 4)
        )

    def stage_kv(self, model: ModelArch, kv: KvFormat, tp: int, pp: int, settings: EngineSettings | None = None) -> list[StageKv]:
        """SGLang's KV pool holds KV only: the Gated DeltaNet states have their own (state_pool),
        except where the slots follow the running cap the plan sets (states_follow_running_cap)."""
        if self.states_follow_running_cap(settings):
            return stage_kv(model, kv, tp, pp, self.linear_state_bytes(model, tp))
        return stage_kv(model, kv, tp, pp, 0.0)

    @staticmethod
    def pcie_only(gpu: Gpu | None, tp: int) -> bool:
        """True where the TP group talks over PCIe alone: a PCIe card whose NVLink bridge, if any,
        does not join all `tp` GPUs (SGLang's is_full_nvlink asks NVML for NVLink between every pair)."""
        return gpu is not None and gpu.interconnect == "pcie" and not bridge_joins(gpu, tp)

    @staticmethod
    def rest_memory_bytes(free_at_start: float, free_after_weights: float, fraction: float) -> float:
        """SGLang's memory for the KV pool (model_runner.py profile_max_num_token): rest_memory =
        the memory free after the weights load - the memory free when they started loading x
        (1 - mem_fraction_static). Its log prints both: "Load weight begin. avail mem=X GB" and
        "Load weight end. ... avail mem=Y GB" (GiB)."""
        return free_after_weights - free_at_start * (1 - fraction)

    def init_bytes(self, tp: int, gpu: Gpu | None = None) -> float:
        if gpu is not None and gpu.family == "cdna4":
            return self.INIT_BYTES_TP1_CDNA4 + self.INIT_BYTES_PER_PEER_CDNA4 * (tp - 1)
        if tp > 1 and self.pcie_only(gpu, tp):
            return self.INIT_BYTES_TP1 + self.INIT_BYTES_COMM_PCIE
        return self.INIT_BYTES_TP1 + self.INIT_BYTES_PER_PEER * (tp - 1)

    def breakdown(self, model, gpu, *, tp, pp, weight_dtype, kv, settings, context_tokens):
        init = self.init_bytes(tp, gpu)
        free_at_start = gpu.usable_memory_bytes - init
        f = settings.memory_fraction
        reserve = free_at_start * (1 - f)  # activations, CUDA graphs: the non-static part
        buffers = self.rotary_cache_bytes(model)
        given = settings.max_num_seqs if settings.max_num_seqs < 4096 else None
        shared = self.states_follow_running_cap(settings)

        def rest(weights: float) -> float:
            return self.rest_memory_bytes(free_at_start, free_at_start - weights - buffers, f)

        def states(weights: float, kvs: StageKv) -> tuple[int, float, int, float]:
            if shared:  # the slots are the launch line's --max-running-requests: each sequence's state is in stage_kv
                return 0, 0.0, 0, 0.0
            return self.state_pool(model, tp, rest(weights), settings, kvs.linear_layers, radix_cache=settings.radix_cache, max_running=given)

        def pool(weights: float, kvs: StageKv) -> float:
            # less the Gated DeltaNet state pool where the model has one
            return rest(weights) - states(weights, kvs)[1]

        stages = self.stage_breakdowns(
            model, gpu, tp=tp, pp=pp, weight_dtype=weight_dtype, kv=kv, settings=settings, context_tokens=context_tokens,
            pool_of=pool,
            state_pool_of=states,
            budget_of=lambda _weights: free_at_start * f,
            budget_rule=f"(total - {'HIP context and RCCL' if gpu.vendor.lower() == 'amd' else 'CUDA context and NCCL'} at start) x {self.fraction_name}; the rest ({reserve / GIB:.2f} GiB) reserved for activations and CUDA graphs",
            buffers=buffers, activation=0.0, overhead=init,
            notes=("activations come out of the (1 - mem_fraction_static) reserve, not the pool",),
        )
        return binding_stage(stages)

    def launch_command(self, model, *, tp, pp, kv, weight_dtype, settings, max_num_seqs):
        args = ["python3", "-m", "sglang.launch_server", "--model-path", model.hf_id or model.name]
        args += ["--tp", str(tp)]
        if pp > 1:
            args += ["--pp-size", str(pp)]
        if self.online_quantisation(model, weight_dtype):
            args += ["--quantization", "fp8"]
        if kv.k == "fp8":
            args += ["--kv-cache-dtype", "fp8_e4m3"]
        args += [
            "--context-length",
            str(settings.max_model_len),
            "--mem-fraction-static",
            flag_number(settings.memory_fraction),
            "--max-running-requests",
            str(max_num_seqs),
            "--chunked-prefill-size",
            str(settings.max_num_batched_tokens),
        ]
        if settings.block_size_tokens != 1:
            args += ["--page-size", str(settings.block_size_tokens)]
        if model.num_linear_layers and not settings.radix_cache:
            # Gated DeltaNet states: as many as --max-running-requests, not half the memory for radix-cached ones
            args += ["--disable-radix-cache"]
        return shlex.join(args) + self.checkpoint_note(model, weight_dtype)


# ---------------------------------------------------------------------------------------------
# TensorRT-LLM
# ---------------------------------------------------------------------------------------------


class TrtllmPolicy(EnginePolicy):
    """TensorRT-LLM: free_gpu_memory_fraction of what the profiled peak leaves, in whole blocks.

    The rule, per release (NVIDIA/TensorRT-LLM; files named where each part is used):

    - PyTorch backend (trtllm-serve's default from 1.0; 0.17-0.21 with --backend pytorch),
      tensorrt_llm/_torch/pyexecutor/_util.py: after the weights load, dummy context requests of
      max_num_tokens tokens in all (each at most max_seq_len - 1; 0.17/0.18: max_seq_len) run once;
      peak = torch's allocated peak + what is used outside torch (mem_get_info), and
      available = (device total - peak [+ the temporary KV cache the run held: 0.19+]) x fraction,
      i.e. fraction x (total - weights - activation peak - non-torch memory). The CUDA graphs, on
      by default from 1.0 (llm_args.py cuda_graph_config = CudaGraphConfig()), are captured by the
      warm-up before the run, so their pool is inside the peak. 1.0+ logs it as "Estimated max
      memory in KV cache"; max_tokens = int(available // kv bytes per token).
    - The KV cache manager then allocates ceil(max_tokens / tokens_per_block) blocks
      (resource_manager.py KVCacheManager.calculate_max_num_blocks: math.ceil; the C++
      kvCacheManager.cpp calculateMaxNumBlocks: tc::ceilDiv(maxTokens, tokensPerBlock)): the pool
      is max_tokens rounded UP to whole blocks, which "[MemUsageChange] Allocated X GiB for max
      tokens in paged KV cache (N)" prints (N = blocks x tokens_per_block).
    - TensorRT-engine backend (0.x, cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp
      calculateMaxNumBlocks): maxTokens = int(fraction x free memory / bytes per token), free
      after the engine's weights, its execution context (the activation TensorRT sized at build
      time) and the runtime and decoder buffers, logged as "Memory usage when calculating max
      tokens in paged kv cache: total: T GiB, available: A GiB"; the same ceil to blocks.
    - A pool smaller than max_seq_len does not stop it: the attention window and max_seq_len are
      lowered to the whole blocks the pool holds (resource_manager.py
      get_max_atten_window_upper_bound; "Adjusted max_seq_len to N")."""

    name = "trtllm"
    label = "TensorRT-LLM"
    length_flag = "--max_seq_len"
    fraction_name = "free_gpu_memory_fraction"
    default_version = "1.0"
    # KvCacheConfig dtype: auto, fp8, int8 (and nvfp4 on Blackwell)
    kv_formats = ("bf16", "fp16", "fp8", "int8")
    # "TensorRT LLM supports the full spectrum of NVIDIA GPU architectures: Blackwell ..., Hopper
    # ..., Ada Lovelace ..., Ampere: A100" (nvidia.github.io/TensorRT-LLM/supported-hardware.html):
    # CUDA kernels, no ROCm build. Before, a TensorRT-LLM workload could be planned on MI300X
    vendors = ("nvidia",)
    # Memory outside torch (CUDA context, cuBLAS/NCCL/all-reduce workspaces, the free part of the
    # CUDA-graph pools) and what the warm-up leaves allocated inside it (graph outputs, sampler
    # buffers): measured by the engine at start-up (_util.py "Memory used outside torch"; the graphs
    # are captured before the profiling run), no figure in its source and no discrete-GPU log with
    # the breakdown (TRTLLM_AUDIT.md "Outside torch"); sizer's estimate, not a rule
    INIT_BYTES = 0.6 * GIB
    DEFAULT_TOKENS_PER_BLOCK = 32  # KvCacheConfig.tokens_per_block
    OVERLAP_SCHEDULER = True  # TorchLlmArgs.disable_overlap_scheduler defaults to False

    @classmethod
    def rotary_cache_rows(cls, model: ModelArch) -> tuple[int, ...]:
        """TensorRT-LLM builds its rotary tables its own way (not vLLM's get_rope): one table of
        max_position_embeddings rows is counted, as before; a few MiB either way."""
        return (model.max_position_embeddings,)

    @staticmethod
    def available_kv_bytes(total_bytes: float, peak_bytes: float, tmp_kv_bytes: float, fraction: float) -> float:
        """The PyTorch backend's KV memory (_util.py KvCacheCreator, 0.19+): fraction x (device total -
        the profiling run's peak, torch's and outside it + the temporary KV that peak held); the log's
        "available KV cache memory when calculating max tokens" and, from 1.0, "Estimated max memory in
        KV cache"."""
        return fraction * (total_bytes - peak_bytes + tmp_kv_bytes)

    @staticmethod
    def pool_tokens(available_bytes: float, bytes_per_token: float, tokens_per_block: int) -> int:
        """The tokens TensorRT-LLM's pool holds for `available_bytes` of KV memory:
        max_tokens = int(available // bytes per token) (_util.py configure_kv_cache_capacity; the
        C++ calculateMaxNumBlocks casts fraction x free / bytes per token to an int), then
        ceil(max_tokens / tokens_per_block) blocks (resource_manager.py calculate_max_num_blocks
        math.ceil; kvCacheManager.cpp tc::ceilDiv): rounded up, not down, to whole blocks."""
        if available_bytes <= 0 or bytes_per_token <= 0:
            return 0
        max_tokens = int(available_bytes // bytes_per_token)
        return ceil_div(max_tokens, tokens_per_block) * tokens_per_block

    @classmethod
    def estimation_tokens(cls, settings: EngineSettings, overlap_scheduler: bool | None = None) -> int:
        """The temporary KV cache the profiling run holds (0.19+: KvCacheCreator._get_token_num_for_estimation):
        dummy requests of max_num_tokens tokens in all, each at most max_seq_len - 1
        (_create_dummy_context_requests), each with one generated token more (two with the overlap
        scheduler, on by default), each rounded up to whole blocks. The figure is added back to the
        available memory, so it moves no pool; it is what the log's "tmp kv_mem" and the first
        "Allocated ... (N)" line print."""
        overlap = cls.OVERLAP_SCHEDULER if overlap_scheduler is None else overlap_scheduler
        extra = 2 if overlap else 1
        tpb = settings.block_size_tokens
        per_request = cls.dummy_request_size(settings)
        blocks, remaining = 0, settings.max_num_batched_tokens
        while remaining > 0:
            n = min(per_request, remaining)
            blocks += ceil_div(n + extra, tpb)
            remaining -= n
        return blocks * tpb

    PROFILES_WITH_KV_SINCE = (0, 19)

    @classmethod
    def profiles_with_kv(cls, version: str) -> bool:
        """0.19+: the profiling run holds a temporary KV cache (added back to the available memory)
        and cuts its dummy requests at max_seq_len - 1 (_util.py _create_dummy_context_requests);
        0.17/0.18 profile without a KV cache, with requests of up to max_seq_len
        (create_dummy_context_request)."""
        return _version_tuple(version) >= cls.PROFILES_WITH_KV_SINCE

    @classmethod
    def dummy_request_tokens(cls, settings: EngineSettings) -> int:
        """The longest dummy context request of the profiling run (profiles_with_kv)."""
        return max(settings.max_model_len - (1 if cls.profiles_with_kv(settings.version) else 0), 1)

    @classmethod
    def dummy_request_size(cls, settings: EngineSettings) -> int:
        """The tokens of each full dummy request: max_num_tokens cut at dummy_request_tokens."""
        return max(min(settings.max_num_batched_tokens, cls.dummy_request_tokens(settings)), 1)

    @classmethod
    def dummy_requests(cls, settings: EngineSettings) -> int:
        """How many dummy context requests the profiling run sends: max_num_tokens in pieces of at
        most dummy_request_tokens."""
        return ceil_div(settings.max_num_batched_tokens, cls.dummy_request_size(settings))

    @staticmethod
    def seq_len_cap(pool_tokens: int, tokens_per_block: int) -> int:
        """The max_seq_len TensorRT-LLM falls back to when its pool is shorter than max_seq_len:
        the whole blocks the pool holds (resource_manager.py get_max_atten_window_upper_bound,
        beam width 1, no sink tokens)."""
        return (pool_tokens // tokens_per_block) * tokens_per_block

    def settings(self, gpu, model, tp, *, version, overrides, max_model_len):
        # tensorrt_llm/llmapi/llm_args.py: KvCacheConfig.free_gpu_memory_fraction 0.9,
        # tokens_per_block 32; BaseLlmArgs max_batch_size 2048, max_num_tokens 8192.
        return overrides.resolve(
            engine=self.name,
            version=version or self.default_version,
            max_model_len=max_model_len,
            memory_fraction=0.9,
            block_size_tokens=self.DEFAULT_TOKENS_PER_BLOCK,
            max_num_seqs=2048,
            max_num_batched_tokens=8192,
        )

    def breakdown(self, model, gpu, *, tp, pp, weight_dtype, kv, settings, context_tokens):
        buffers = self.rotary_cache_bytes(model)
        activation = settings.max_num_batched_tokens * self.activation_per_token_bytes(model, tp)
        overhead = self.INIT_BYTES + (0.1 * GIB) * (tp - 1)
        f = settings.memory_fraction
        tpb = settings.block_size_tokens

        def free(weights: float) -> float:
            # device total - (peak - the temporary KV): the weights, the profiling run's activation
            # peak and what is used outside torch
            return gpu.usable_memory_bytes - weights - buffers - activation - overhead

        def pool(weights: float, kvs) -> float:
            # fraction x free, as whole tokens, rounded up to whole blocks: what is allocated (sizer's
            # peak holds no temporary KV, so none is added back)
            available = self.available_kv_bytes(gpu.usable_memory_bytes, gpu.usable_memory_bytes - free(weights), 0.0, f)
            return float(self.pool_tokens(available, kvs.bytes_per_token, tpb) * kvs.bytes_per_token)

        stages = self.stage_breakdowns(
            model, gpu, tp=tp, pp=pp, weight_dtype=weight_dtype, kv=kv, settings=settings, context_tokens=context_tokens,
            pool_of=pool,
            budget_of=lambda weights: gpu.usable_memory_bytes - (1 - f) * max(free(weights), 0.0),
            budget_rule=(
                f"{self.fraction_name} x (device total - the profiled peak: weights, activations of the "
                f"max_num_tokens run, memory outside torch), as int(tokens) rounded up to whole blocks"
            ),
            buffers=buffers, activation=activation, overhead=overhead,
        )
        # the engine's "Estimated max memory in KV cache" is the memory before the rounding
        stages = [replace(m, engine_available_kv_bytes=max(f * free(m.weights_bytes_per_gpu), 0.0)) for m in stages]
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
            flag_number(settings.memory_fraction),
        ]
        # trtllm-serve has no KV-dtype or block-size flag: --extra_llm_api_options takes a YAML file
        # of LLM API arguments (KvCacheConfig.dtype, .tokens_per_block, default 32), which the line
        # writes first; without the block size there, a plan sized on the workload's 16-token blocks
        # ran on 32-token ones (A100 tp=8: 1,438,208 tokens logged against the plan's 1,438,224)
        config = []
        if kv.k in ("fp8", "int8"):
            config.append(f"dtype: {kv.k}")
        if settings.block_size_tokens != self.DEFAULT_TOKENS_PER_BLOCK:
            config.append(f"tokens_per_block: {settings.block_size_tokens}")
        options = ""
        if config:
            name = f"kv_cache_{kv.k}.yaml" if kv.k in ("fp8", "int8") else "kv_cache_config.yaml"
            options = f"echo {shlex.quote('kv_cache_config: {' + ', '.join(config) + '}')} > {name} && "
            args += ["--extra_llm_api_options", name]
        return options + shlex.join(args) + self.checkpoint_note(model, weight_dtype)


# ---------------------------------------------------------------------------------------------
# llama.cpp
# ---------------------------------------------------------------------------------------------


class LlamaCppPolicy(EnginePolicy):
    """llama.cpp server: a fixed KV allocation of n_ctx cells, split across n_parallel slots."""

    name = "llamacpp"
    label = "llama.cpp"
    length_flag = "a slot's context, -c / -np"
    fraction_name = "memory"
    default_version = "b6000"
    kv_formats = LLAMACPP_CACHE_TYPES + ("fp16",)
    COMPUTE_BUFFER_TOKENS = 512  # n_ubatch default (common/common.h): logits and activations of one micro-batch
    INIT_BYTES = 0.3 * GIB  # CUDA context

    weight_formats = LLAMACPP_WEIGHT_DTYPES
    # what llama.cpp offers in place of a format it has no GGUF type for
    _WEIGHT_INSTEAD = {
        "fp8": "GGUF has no FP8 type (FP8 weights are an open pull request, ggml-org/llama.cpp#27512); its 8-bit type is q8_0",
        "int8": "its 8-bit GGUF type is q8_0 (32 int8 weights and an fp16 scale a block: 8.5 bits a weight)",
        "int4": "its 4-bit GGUF types sized here are q4_0 (32 4-bit weights and an fp16 scale a block: 4.5 bits a weight) and mxfp4",
    }

    def weight_reason(self, weight_dtype, model=None):
        if weight_dtype == "mxfp4" and model is not None and model.native_weight_dtype != "mxfp4":
            return (
                f"llama.cpp's MXFP4 GGUF files are converted from MXFP4 checkpoints (gpt-oss), and {model.name}'s is "
                f"{model.native_weight_dtype}: its GGUF types sized here are q8_0, q4_0, f16 and bf16"
            )
        if weight_dtype in self.weight_formats:
            return None
        instead = self._WEIGHT_INSTEAD.get(weight_dtype, f"it has no {weight_dtype} GGUF type sized here")
        names = ", ".join(f"{d} ({GGUF_TYPE_NAMES[d]})" for d in self.weight_formats)
        return f"llama.cpp serves GGUF weights: {names}; {instead}"

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
        # llama-server: -np (n_parallel) slots split -c (n_ctx) cells, n_ctx / n_parallel each,
        # when -np is given (its unified cache is on only for -np auto, or --kv-unified); sizer
        # gives each slot the admitted context, so n_ctx = n_parallel x max_model_len, and its plans
        # set -np (candidates._slots_as_launched). Without one: 4 slots (llama-server's auto since
        # ggml-org/llama.cpp#16736, 2025-10, where they share one unified cache; 1 before), block
        # size 1 (cells are per token), n_batch 2048.
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
            kv_unified=not (overrides.n_parallel or overrides.max_num_seqs),
        )

    # Sliding-window layers keep their own, smaller cache (llama_kv_cache_iswa, ggml-org/llama.cpp
    # #13194, merged 2025-05-20; sizer takes b5450 as the first release with it): GGML_PAD(min(
    # cells a stream, n_swa x (unified ? slots : 1) + n_ubatch), 256) cells in each stream (a slot
    # each when -np is given; one when the cache is unified), unless --swa-full
    # (src/llama-kv-cache-iswa.cpp@02c28f533ebba3e4ea944fc4a0719a012b3e7097).
    SWA_CACHE_SINCE = (5450,)
    SWA_PAD_CELLS = 256

    def cache_cells(self, model: ModelArch, settings: EngineSettings) -> tuple[int, int]:
        """(cells of the full-attention layers' cache, cells of the sliding-window layers'): n_ctx
        for both before the SWA cache, and for a model without sliding layers."""
        cells = settings.n_parallel * settings.max_model_len
        if not model.sliding_window or _version_tuple(settings.version) < self.SWA_CACHE_SINCE:
            return cells, cells
        streams, per_stream = (1, cells) if settings.kv_unified else (settings.n_parallel, settings.max_model_len)
        want = model.sliding_window * (settings.n_parallel if settings.kv_unified else 1) + self.COMPUTE_BUFFER_TOKENS
        return cells, streams * ceil_div(min(per_stream, want), self.SWA_PAD_CELLS) * self.SWA_PAD_CELLS

    def breakdown(self, model, gpu, *, tp, pp, weight_dtype, kv, settings, context_tokens):
        cells, swa_cells = self.cache_cells(model, settings)
        compute = self.COMPUTE_BUFFER_TOKENS * (model.vocab_size + 4 * model.hidden_size) * 4  # fp32 logits + activations

        def cache(kvs) -> float:
            return cells * kvs.full_bytes_per_token + swa_cells * kvs.sliding_bytes_per_token

        def pool(weights: float, kvs) -> float:
            # the whole cache is allocated at start; if it does not fit, only what fits is shown
            return min(cache(kvs), gpu.usable_memory_bytes - weights - compute - self.INIT_BYTES)

        stages = self.stage_breakdowns(
            model, gpu, tp=tp, pp=pp, weight_dtype=weight_dtype, kv=kv, settings=settings, context_tokens=context_tokens,
            pool_of=pool,
            budget_of=lambda _weights: gpu.usable_memory_bytes,
            budget_rule=f"all of it: weights + compute buffer + n_ctx ({cells:,}) cells must fit",
            buffers=compute, activation=0.0, overhead=self.INIT_BYTES,
            notes=(f"fixed allocation: {settings.n_parallel} slots x {settings.max_model_len:,} cells"
                   + (f"; sliding-window layers {swa_cells:,} cells" if swa_cells < cells else ""),),
        )
        out = []
        for m, kvs in zip(stages, self.stage_kv(model, kv, tp, pp, settings)):
            # the slots are the concurrency: a pool that holds them all admits exactly n_parallel
            fits = m.kv_pool_bytes_per_gpu >= cache(kvs) * (1 - 1e-12)
            slots = settings.n_parallel if fits and context_tokens <= settings.max_model_len else 0
            # the cache is cells, one a token, whatever a sliding layer keeps of them
            held = cells if fits else int(m.kv_pool_bytes_per_gpu // max(cache(kvs) / cells, 1e-30))
            out.append(replace(m, max_concurrency=min(m.max_concurrency, slots), engine_max_concurrency=float(slots),
                               kv_blocks_per_gpu=held, kv_tokens=held, engine_gpu_blocks=held, engine_kv_tokens=held))
        return binding_stage(out)

    def launch_command(self, model, *, tp, pp, kv, weight_dtype, settings, max_num_seqs):
        args = ["llama-server", "-m", self.gguf_file(model, weight_dtype), "-c", str(settings.n_parallel * settings.max_model_len)]
        args += ["-np", str(settings.n_parallel), "-ngl", "999"]
        if pp > 1:
            args += ["--split-mode", "layer", "--tensor-split", ",".join(["1"] * pp)]
        args += ["--cache-type-k", "f16" if kv.k == "fp16" else kv.k, "--cache-type-v", "f16" if kv.v == "fp16" else kv.v]
        if kv.v != "f16" and kv.v != "fp16":
            args += ["--flash-attn", "on"]  # a quantised V cache needs flash attention in llama.cpp
        return shlex.join(args) + self.checkpoint_note(model, weight_dtype)

    @staticmethod
    def gguf_file(model, weight_dtype: str) -> str:
        """The GGUF file the line serves, named by custom after the model and its file type."""
        return f"{model.name}-{GGUF_TYPE_NAMES.get(weight_dtype, weight_dtype.upper())}.gguf"

    def checkpoint_note(self, model, weight_dtype):
        """How to make the GGUF file the line names: llama.cpp serves GGUF files only, so every
        plan names one made from the checkpoint. convert_hf_to_gguf.py writes f16, bf16 and q8_0
        itself (--outtype; it dequantises an FP8 checkpoint on the way) and keeps a checkpoint's
        MXFP4 experts; q4_0 is llama-quantize's work on such a file."""
        name = model.hf_id or model.name
        target = self.gguf_file(model, weight_dtype)
        if weight_dtype == "q4_0":
            how = f"convert_hf_to_gguf.py {name} --outtype f16, then llama-quantize <that file> {target} Q4_0"
        elif weight_dtype == "mxfp4":
            how = f"convert_hf_to_gguf.py {name} --outfile {target} (the checkpoint's MXFP4 experts stay MXFP4)"
        else:
            how = f"convert_hf_to_gguf.py {name} --outtype {'f16' if weight_dtype == 'fp16' else weight_dtype} --outfile {target}"
        return f"  # {target}: {how}"


ENGINES: dict[str, EnginePolicy] = {p.name: p for p in (VllmPolicy(), SglangPolicy(), TrtllmPolicy(), LlamaCppPolicy())}


def resolve_kv_dtype(kv: str, model: ModelArch) -> str:
    """`auto` as vLLM's and SGLang's --kv-cache-dtype default means the model's dtype (vllm/config/cache.py
    CacheDType "auto"; sglang server_args kv_cache_dtype "auto"): the checkpoint's torch_dtype, a float32
    checkpoint served in bf16 as vLLM's dtype="auto" does for it on GPUs with bf16. Any other value is
    returned unchanged (K/V pairs resolved part by part)."""
    parts = str(kv).split("/")
    if "auto" not in parts:
        return kv
    native = model.torch_dtype if model.torch_dtype in SIXTEEN else "bf16"
    return "/".join(native if p == "auto" else p for p in parts)


def budget_counts_decode(engine: str) -> float:
    """EnginePolicy.budget_counts_decode of `engine` (1 for an engine sizer has no policy for)."""
    policy = ENGINES.get(str(engine).lower())
    return policy.budget_counts_decode if policy is not None else 1.0


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
