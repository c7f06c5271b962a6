"""vLLM's own startup logs, entry by entry: sizer's prediction of the KV tokens vLLM logs ("GPU KV cache
size: N tokens", per replica) against every log of tests/data/vllm_logs/ (copies of the project's shared
reference and further logs of the same public sweep held out from every derivation).

Every entry is predicted from its model's config.json (tests/data/vllm_logs/configs, or the catalog), the
device catalog's H100-SXM (79.19 GiB, as the logs' "total_memory") and the run's own arguments, under the
rule of the release the log names. Within 2 %, or a measured reason: a separate expectation stating the
measured error and what accounts for it, never a wider bound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sizer.engines import EngineOverrides, configuration_breakdown, resolve_kv_dtype
from sizer.model import arch_from_config, load_config_json
from sizer.units import GIB

DATA = Path(__file__).resolve().parent / "data" / "vllm_logs"
SHARED = yaml.safe_load((DATA / "vllm_v019_h100_memory.yaml").read_text())["entries"]
HELDOUT = yaml.safe_load((DATA / "vllm_v019_h100_heldout.yaml").read_text())["entries"]


def _config(model_id: str):
    name = model_id.replace("/", "--") + "_config.json"
    path = next(p for p in (DATA / "configs").iterdir() if p.name.lower() == name.lower())
    return arch_from_config(json.loads(path.read_text()), name=model_id, source=str(path))


def _shared(entry, catalog, *, weights_gib: float | None = None):
    """sizer's breakdown of one shared log; `weights_gib` replaces sizer's weights by the logged ones."""
    model = _config(entry["model"])
    a = entry["args"]
    tp, pp = a.get("tensor_parallel_size", 1), a.get("pipeline_parallel_size", 1)
    wd = model.native_weight_dtype
    if entry["dtype"] == "float16" and wd == "bf16":
        wd = "fp16"
    kv = "fp8" if entry["kv_cache_dtype"] == "fp8" else "auto"
    kv = kv if kv != "auto" else ("fp16" if entry["dtype"] == "float16" else "auto")
    from sizer.engines import resolve_kv_dtype

    version = entry["vllm"].lstrip("v")
    _, m = configuration_breakdown(
        model, catalog.gpu("H100-SXM"), engine="vllm", version=version, tp=tp, pp=pp, weight_dtype=wd,
        kv=resolve_kv_dtype(kv, model), context_tokens=a["max_model_len"], max_model_len=a["max_model_len"],
        overrides=EngineOverrides(memory_fraction=a["gpu_memory_utilization"]),
    )
    if weights_gib is not None:
        # the same rule on the logged weights: the pool shrinks by what sizer's weights fall short, and the
        # engine's tokens (whole blocks, per group for a hybrid model) with it
        pool = m.kv_pool_bytes_per_gpu + (m.weights_bytes_per_gpu + m.runtime_buffer_bytes_per_gpu) - weights_gib * GIB
        return m, int(m.engine_kv_tokens * pool / m.kv_pool_bytes_per_gpu)
    return m, m.engine_kv_tokens


def _logged_kv_gib(entry) -> float:
    return next(w["available_kv_cache_gib"] for w in entry["workers"] if w["available_kv_cache_gib"] is not None)


# Logs sizer does not reproduce within 2 %, each with its measured error (sizer / logged - 1, tokens) and what
# the log itself shows accounts for it. Weights are the config's parameters at 16 bits plus the rotary cache.
MEASURED = {
    "qwen-qwen2-5-72b-instruc--h100-80gb--tp2pp1dp1--8192": (
        +0.0345,
        "weights: sizer 67.72 GiB per GPU against the logged 67.80 (the config's 36.4B parameters per rank x 2 B + 8 MiB "
        "of rotary cache); on a 3.04 GiB pool those 0.08 GiB alone are +2.6 %. Qwen2 checkpoints log 0.02-0.07 GiB more "
        "than their parameters at every size here (7B: 14.25 against 14.19), a load-time allocation sizer does not know.",
        67.80,
    ),
    "moonshotai-kimi-dev-72b--h100-80gb--tp2pp1dp1--8192": (
        +0.0340,
        "weights: sizer 67.75 GiB against the logged 67.82 (Qwen2.5-72B architecture, as above); 0.07 GiB of a 3.02 GiB pool.",
        67.82,
    ),
}


@pytest.mark.parametrize("entry", [e for e in SHARED if e["id"] not in MEASURED], ids=lambda e: e["id"])
def test_shared_vllm_019_log_within_two_percent(entry, catalog):
    m, tokens = _shared(entry, catalog)
    logged = entry["gpu_kv_cache_tokens"]
    err = tokens / logged - 1
    assert abs(err) < 0.02, (
        f"{entry['source']}: sizer {tokens:,} tokens vs logged {logged:,} ({err:+.2%}); "
        f"pool {m.engine_available_kv_bytes / GIB:.2f} vs {_logged_kv_gib(entry)} GiB"
    )


@pytest.mark.parametrize("entry_id", sorted(MEASURED))
def test_shared_vllm_019_log_with_measured_reason(entry_id, catalog):
    entry = next(e for e in SHARED if e["id"] == entry_id)
    measured, reason, logged_weights = MEASURED[entry_id]
    m, tokens = _shared(entry, catalog)
    logged = entry["gpu_kv_cache_tokens"]
    # the miss is what was measured, no more (source: entry["source"])
    assert tokens / logged - 1 == pytest.approx(measured, abs=0.0025), reason
    # and the reason accounts for it: the same rule on the logged weights lands within 2 %
    _, corrected = _shared(entry, catalog, weights_gib=logged_weights)
    assert abs(corrected / logged - 1) < 0.02, reason
    assert (m.weights_bytes_per_gpu + m.runtime_buffer_bytes_per_gpu) / GIB < logged_weights - 0.05


def _heldout(entry, catalog):
    spec = entry["model"]
    if spec.endswith(".json"):
        folder = DATA / "configs" if (DATA / "configs" / spec).is_file() else Path(__file__).resolve().parent / "data" / "model_configs"
        model = load_config_json(folder / spec)
    else:
        model = catalog.model(spec)
    _, m = configuration_breakdown(
        model, catalog.gpu("H100-SXM"), engine="vllm", version=entry.get("vllm", "0.19.0"), tp=entry["tp"], pp=entry["pp"], weight_dtype=entry["weights"],
        kv=entry["kv"], context_tokens=entry["max_model_len"], max_model_len=entry["max_model_len"],
        overrides=EngineOverrides(memory_fraction=entry["util"]),
    )
    return m


@pytest.mark.parametrize("entry", HELDOUT, ids=lambda e: e["id"])
def test_heldout_vllm_019_log_within_two_percent(entry, catalog):
    m = _heldout(entry, catalog)
    err = m.engine_kv_tokens / entry["tokens"] - 1
    assert abs(err) < 0.02, f"{entry['id']}: sizer {m.engine_kv_tokens:,} vs logged {entry['tokens']:,} ({err:+.2%})"


# --- other releases (tests/data/vllm_logs/vllm_other_releases.yaml) ---------------------------------

OTHER = yaml.safe_load((DATA / "vllm_other_releases.yaml").read_text())["entries"]


def _other(entry, catalog, *, version: str | None = None):
    spec = entry["model"]
    if spec.endswith(".json"):
        folder = DATA / "configs" if (DATA / "configs" / spec).is_file() else Path(__file__).resolve().parent / "data" / "model_configs"
        model = load_config_json(folder / spec)
    else:
        model = catalog.model(spec)
    _, m = configuration_breakdown(
        model, catalog.gpu("H100-SXM"), engine="vllm", version=version or entry["vllm"], tp=entry["tp"], pp=1, weight_dtype=entry["weights"],
        kv=resolve_kv_dtype("auto", model), context_tokens=entry["max_model_len"], max_model_len=entry["max_model_len"],
        overrides=EngineOverrides(memory_fraction=entry["util"], block_size_tokens=entry["block_size"], flashinfer_installed=entry.get("flashinfer_installed")),
    )
    return m


# Logs of other releases sizer does not reproduce within 2 %: the measured error (pool GiB, sizer / logged - 1) and
# what the log shows accounts for it.
OTHER_MEASURED = {
    "a-gpt-oss-120b-tp1-16000": (
        -0.0346,
        "weights: sizer 64.51 GiB against the logged 64.38, 0.13 GiB of a 3.33 GiB pool (0.95 of one H100). The MXFP4 experts are sized with their hidden dimension padded to 3,072 (the Marlin path's "
        "rule); the Triton path this H100 run takes pads only the scales (triton_kernels hopper_scale.py), which "
        "would give about 60.9 GiB: the 3.5 GiB between that and the logged figure is not traced to the source.",
        64.38,
    ),
}


# Activation terms sizer does not reproduce within 0.05 GiB, held at their measured miss (sizer - logged, GiB).
# (Until 2026-12-06 this entry's activation went unchecked: `... or entry.get("flashinfer_installed")`.)
OTHER_ACTIVATION_MEASURED = {
    "b-mistral-small-3.2-tp1-16000": (
        -0.157,
        "vLLM 0.11.0 with FlashInfer installed logs a 2.12 GiB peak; sizer's FlashInfer-sampler rule gives 1.96 GiB. The "
        "0.16 GiB it misses is not traced to the source (the model is multimodal, Mistral3ForConditionalGeneration, and "
        "sizer counts no profiling of its vision encoder); the pool stays within 2 % (sizer 28.38 GiB, logged 28.20).",
    ),
}


@pytest.mark.parametrize("entry", [e for e in OTHER if e["id"] not in OTHER_MEASURED], ids=lambda e: e["id"])
def test_other_release_log_within_two_percent(entry, catalog):
    m = _other(entry, catalog)
    err = m.engine_available_kv_bytes / GIB / entry["kv_gib"] - 1
    assert abs(err) < 0.02, f"{entry['id']} (vLLM {entry['vllm']}): sizer {m.engine_available_kv_bytes / GIB:.2f} vs logged {entry['kv_gib']} GiB ({err:+.2%})"
    if "tokens" in entry:
        err = m.engine_kv_tokens / entry["tokens"] - 1
        assert abs(err) < 0.02, f"{entry['id']}: sizer {m.engine_kv_tokens:,} vs logged {entry['tokens']:,} tokens ({err:+.2%})"
    # each term as logged, within 0.05 GiB (weights within 0.1): the pool is right for the right reasons
    if entry["id"] in OTHER_ACTIVATION_MEASURED:
        miss_gib, reason = OTHER_ACTIVATION_MEASURED[entry["id"]]
        assert m.activation_bytes_per_gpu / GIB - entry["activation_gib"] == pytest.approx(miss_gib, abs=0.01), reason
    else:
        assert m.activation_bytes_per_gpu / GIB == pytest.approx(entry["activation_gib"], abs=0.05)
    assert m.runtime_overhead_bytes_per_gpu / GIB == pytest.approx(entry["non_torch_gib"], abs=0.05)
    assert (m.weights_bytes_per_gpu + m.runtime_buffer_bytes_per_gpu) / GIB == pytest.approx(entry["weights_gib"], abs=0.1)


@pytest.mark.parametrize("entry_id", sorted(OTHER_MEASURED))
def test_other_release_log_with_measured_reason(entry_id, catalog):
    entry = next(e for e in OTHER if e["id"] == entry_id)
    measured, reason, logged_weights = OTHER_MEASURED[entry_id]
    m = _other(entry, catalog)
    assert m.engine_available_kv_bytes / GIB / entry["kv_gib"] - 1 == pytest.approx(measured, abs=0.0025), reason
    # the same rule on the logged weights lands within 2 %
    pool = (m.budget_bytes - m.activation_bytes_per_gpu - m.runtime_overhead_bytes_per_gpu - m.cuda_graph_bytes_per_gpu) / GIB - logged_weights
    assert abs(pool / entry["kv_gib"] - 1) < 0.02, reason
    assert (m.weights_bytes_per_gpu + m.runtime_buffer_bytes_per_gpu) / GIB > logged_weights + 0.1, reason


def test_releases_0_11_1_to_0_16_predict_the_undated_set_alike(catalog):
    # Source A does not name its release; its figures place it in 0.11.1-0.16 (see the data file). Every release of
    # that range gives the same pool for every entry, so the tag does not matter; 0.11.0 (its Docker image samples with
    # FlashInfer) and 0.17 (Triton sampling, all-reduce fusion) do not.
    for entry in (e for e in OTHER if e["source"] == "A" and e["id"] not in OTHER_MEASURED):
        pools = {v: round(_other(entry, catalog, version=v).engine_available_kv_bytes / GIB, 2) for v in ("0.11.2", "0.12.0", "0.13.0", "0.14.1", "0.16.0")}
        assert len(set(pools.values())) == 1, (entry["id"], pools)
        assert round(_other(entry, catalog, version="0.17.0").engine_available_kv_bytes / GIB, 2) != pools["0.14.1"]


def test_sampler_path_change_between_016_and_017_as_logged(catalog):
    # Qwen3-14B on one H100, the same sweep under three releases: the pool grows by 3.40 GiB from 0.16
    # (sort path, 38 B per logit) to 0.17 (Triton, 14 B + the [132 x vocab] buffer): 1,024 x 151,936 x 24 B
    # - 132 x 151,936 x 4 B = 3.40 GiB. The logs show it, and sizer's pools under the two releases differ by it.
    runs = {e["vllm"]: e for e in HELDOUT if e["id"].startswith("qwen3-14b-vllm")}
    by_hand = (1024 * 151936 * 24 - 132 * 151936 * 4) / GIB
    assert runs["0.17.0"]["kv_gib"] - runs["0.16.0"]["kv_gib"] == pytest.approx(by_hand, abs=0.01)
    sizer_pools = {v: _heldout(runs[v], catalog).engine_available_kv_bytes / GIB for v in ("0.16.0", "0.17.0")}
    assert sizer_pools["0.17.0"] - sizer_pools["0.16.0"] == pytest.approx(by_hand, abs=0.01)


def test_terms_match_the_logged_terms_where_derived(catalog):
    # Qwen2.5-7B at TP 2 (the log the TP 2 non-torch term is read from) and CodeLlama-7B (forward-bound):
    # each logged term within 0.05 GiB.
    qwen = next(e for e in SHARED if e["id"] == "qwen-qwen2-5-7b-instruct--h100-80gb--tp2pp1dp1--8192")
    m, _ = _shared(qwen, catalog)
    w = qwen["workers"][0]
    assert m.activation_bytes_per_gpu / GIB == pytest.approx(w["activation_gib"], abs=0.05)
    assert m.runtime_overhead_bytes_per_gpu / GIB == pytest.approx(w["non_torch_gib"], abs=0.05)
    llama = next(e for e in SHARED if e["id"].startswith("codellama"))
    m, _ = _shared(llama, catalog)
    assert m.activation_bytes_per_gpu / GIB == pytest.approx(llama["workers"][0]["activation_gib"], abs=0.05)


def test_every_shared_log_is_in_a_table():
    ids = [e["id"] for e in SHARED]
    assert len(ids) == 40 and len(set(ids)) == 40
    assert set(MEASURED) <= set(ids)


# --- the rule's parts by release, worked by hand --------------------------------------------------


def test_sampler_path_by_release(catalog):
    # Qwen2.5-7B, H100, defaults (1,024 rows, 8,192-token budget): logits 1,024 x 152,064.
    # held: hidden states (8,192 + 2 x 1,024) x 3,584 x 2 B = 73,400,320 B.
    # sort (0.14, topk_topp_sampler.py apply_top_k_top_p -> logits.sort): 38 B per element
    #   = 1,024 x 152,064 x 38 = 5,917,114,368 B.
    # Triton (0.19, apply_top_k_top_p_triton): 14 B per element + 132 x 152,064 x 4 B = 2,179,989,504 + 80,289,792.
    # FlashInfer (0.21, on by default): 14 B per element, no buffer -- but 0.21's _dummy_sampler_run samples the same
    # logits again with a generator (forward_native: the Triton path), so the peak is the Triton figure
    # (V020_AUDIT.md; test_sampler_warm_up_from_0_21_takes_the_native_path).
    from sizer.engines import VllmPolicy, VllmRelease

    model = _config("Qwen/Qwen2.5-7B-Instruct")
    gpu = catalog.gpu("H100-SXM")
    p = VllmPolicy()
    held = 73_400_320
    for version, expected in (("0.14.1", 5_917_114_368), ("0.19.0", 2_179_989_504 + 80_289_792), ("0.21.0", 2_179_989_504 + 80_289_792)):
        settings = p.settings(gpu, model, 1, version=version, overrides=EngineOverrides(), max_model_len=8192)
        got, _ = p.sampler_peak(model, gpu, 1, settings, VllmRelease.of(version))
        assert got == expected + held, version
    # 0.9-0.11.0: FlashInfer only when installed (a pip install leaves it out: the sort path)
    assert VllmRelease.of("0.10.2").sampler == "sort"
    assert VllmRelease.of("0.10.2", flashinfer_installed=True).sampler == "flashinfer"
    assert VllmRelease.of("0.11.2", flashinfer_installed=True).sampler == "sort"  # opt-in from 0.11.1


def test_release_moves_snapshot_and_cuda_graphs(catalog):
    # Llama-3.1-8B TP 2 on H100, non-torch increase after the snapshot, worked by hand from VllmRelease:
    # 0.10 (snapshot before distributed init): 0.13 kernels + 0.42 first collectives + 1.00 communicators made at init;
    # 0.14 (snapshot after it, no all-reduce fusion): 0.13 + 0.42 = 0.55 GiB (source A's TP 2 logs: 0.55, 0.54);
    # 0.19 (fusion on by default from 0.17; 0.25 from 0.18): 0.25 + 1.82 = 2.07 GiB (the held-out 0.19 log: 2.07);
    # 0.20 subtracts its CUDA-graph estimate from the budget: 51 PIECEWISE + 51 FULL captures (max_num_seqs 1,024), the
    # first FULL one FlashAttention 3's split buffers (32 x 16 heads x 512 tokens x 129 x 4 B = 129 MiB, above the first
    # PIECEWISE one, 75 MiB + 512 x 75,776 B = 112 MiB), then 100 x 0.18 MiB x 32 layers: 0.69 GiB.
    model, gpu = catalog.model("llama-3.1-8b"), catalog.gpu("H100-SXM")

    def mb(version, tp=2):
        return configuration_breakdown(model, gpu, engine="vllm", version=version, tp=tp, pp=1, weight_dtype="bf16", kv="bf16",
                                       context_tokens=8192, max_model_len=8192, overrides=EngineOverrides(memory_fraction=0.95))[1]

    m10, m14, m19, m20 = mb("0.10.2"), mb("0.14.1"), mb("0.19.0"), mb("0.20.0")
    assert m10.runtime_overhead_bytes_per_gpu == pytest.approx((0.13 + 0.42 + 1.00) * GIB)
    assert m14.runtime_overhead_bytes_per_gpu == pytest.approx(0.55 * GIB)
    assert m19.runtime_overhead_bytes_per_gpu == pytest.approx(2.07 * GIB)
    assert mb("0.17.0").runtime_overhead_bytes_per_gpu == pytest.approx((0.13 + 1.82) * GIB)
    assert mb("0.14.1", tp=1).runtime_overhead_bytes_per_gpu == pytest.approx(0.13 * GIB)
    assert mb("0.18.0", tp=1).runtime_overhead_bytes_per_gpu == pytest.approx(0.25 * GIB)
    assert m19.cuda_graph_bytes_per_gpu == 0
    assert m20.cuda_graph_bytes_per_gpu == pytest.approx(32 * 16 * 512 * 129 * 4 + 100 * 0.18 * 32 * 2**20)
    assert m19.kv_pool_bytes_per_gpu - m20.kv_pool_bytes_per_gpu == pytest.approx(m20.cuda_graph_bytes_per_gpu)
    # 0.8: every non-torch byte, the CUDA context (0.51 GiB on H100) included
    assert mb("0.8.5").runtime_overhead_bytes_per_gpu - m10.runtime_overhead_bytes_per_gpu == pytest.approx(0.51 * GIB)
    # a 0.17+ install without FlashInfer (not the wheel's default) has no fusion: the pre-0.17 TP term
    no_fi = configuration_breakdown(model, gpu, engine="vllm", version="0.19.0", tp=2, pp=1, weight_dtype="bf16", kv="bf16", context_tokens=8192,
                                    max_model_len=8192, overrides=EngineOverrides(memory_fraction=0.95, flashinfer_installed=False))[1]
    assert no_fi.runtime_overhead_bytes_per_gpu == pytest.approx((0.25 + 0.42) * GIB)


def test_moe_workspace_is_held_through_the_sampler_run_from_0_14(catalog):
    # Qwen3-30B-A3B, one H100, 8,192 tokens: N = 2 x 768, K = 2,048, top-8.
    # 0.14+ (FusedMoEModularKernel via the WorkspaceManager): workspace13 8,192 x 8 x max(768, 2,048) and workspace2
    #   8,192 x 8 x max(1,536, 2,048), 2 B each = 536,870,912 B, still allocated when the sampler run peaks.
    # 0.13 (fused_experts_impl, per call): cache13 8,192 x 8 x 2,048 + cache2 8,192 x 8 x 768 + output 8,192 x 2,048,
    #   2 B = 402,653,184 B, freed before the sampler runs.
    from sizer.engines import VllmPolicy, VllmRelease

    model = catalog.model("qwen3-30b-a3b")
    p = VllmPolicy()
    assert p.moe_workspace_bytes(model, 1, 8192, VllmRelease.of("0.19.0")) == 536_870_912
    assert p.moe_workspace_bytes(model, 1, 8192, VllmRelease.of("0.13.0")) == 402_653_184
    # 0.14-0.17 chunk at 16,384 tokens: a 32,768-token budget keeps 16,384 tokens of workspace and a separate output
    assert p.moe_workspace_bytes(model, 1, 32768, VllmRelease.of("0.16.0")) == 16384 * 8 * 4096 * 2 + 32768 * 2048 * 2
    assert p.moe_workspace_bytes(model, 1, 32768, VllmRelease.of("0.19.0")) == 32768 * 8 * 4096 * 2
    gpu = catalog.gpu("H100-SXM")
    s19 = p.settings(gpu, model, 1, version="0.19.0", overrides=EngineOverrides(), max_model_len=8192)
    s13 = p.settings(gpu, model, 1, version="0.13.0", overrides=EngineOverrides(), max_model_len=8192)
    from sizer.memory import KvFormat

    m19 = p.breakdown(model, gpu, tp=1, pp=1, weight_dtype="bf16", kv=KvFormat.of("bf16"), settings=s19, context_tokens=8192)
    m13 = p.breakdown(model, gpu, tp=1, pp=1, weight_dtype="bf16", kv=KvFormat.of("bf16"), settings=s13, context_tokens=8192)
    samp19 = next(v for k, _, v in m19.detail if k == "dummy sampler run")
    sampler_alone, _ = p.sampler_peak(model, gpu, 1, s19, VllmRelease.of("0.19.0"))
    assert samp19 == sampler_alone + 536_870_912
    # the held-out 0.19 log: torch peak increase 2.68 GiB (sizer: that sum + 32 MiB cuBLAS)
    assert m19.activation_bytes_per_gpu / GIB == pytest.approx(2.68, abs=0.02)
    assert next(v for k, _, v in m13.detail if k == "dummy sampler run") == p.sampler_peak(model, gpu, 1, s13, VllmRelease.of("0.13.0"))[0]
    # MXFP4 (gpt-oss) runs the monolithic Triton path: nothing held
    assert not p.moe_workspace_held(catalog.model("gpt-oss-20b"), "mxfp4", VllmRelease.of("0.19.0"))


def test_vision_profile_holds_the_dummy_images(catalog):
    # Gemma-3-27B at 8,192 tokens: 8,192 // 256 = 32 images of 3 x 896^2 pixels in bf16 = 154,140,672 B, and their
    # 8,192 x 5,376 x 2 B outputs; Llama-4-Scout: 8,192 // 2,448 = 3 images of 17 tiles of 336^2.
    from sizer.engines import VllmPolicy

    p = VllmPolicy()
    gemma = _config("google/gemma-3-27b-it")
    s = p.settings(catalog.gpu("H100-SXM"), gemma, 1, version="0.19.0", overrides=EngineOverrides(), max_model_len=8192)
    held, _ = p.vision_profile_held_bytes(gemma, s)
    assert held == 32 * 3 * 896**2 * 2 + 8192 * 5376 * 2
    scout = load_config_json(DATA / "configs" / "meta-llama--Llama-4-Scout-17B-16E-Instruct_config.json")
    assert (scout.vision_item_tiles, scout.vision_item_tokens) == (17, 2448)
    held, _ = p.vision_profile_held_bytes(scout, s)
    assert held == 3 * 17 * 3 * 336**2 * 2 + 3 * 2448 * 5120 * 2


def test_pipeline_stages_run_the_sampler_on_the_last_only(catalog):
    model, gpu = catalog.model("llama-3.1-8b"), catalog.gpu("H100-SXM")
    from sizer.engines import VllmPolicy

    from sizer.memory import KvFormat

    p = VllmPolicy()
    settings = p.settings(gpu, model, 1, version="0.19.0", overrides=EngineOverrides(memory_fraction=0.95), max_model_len=8192)
    m = p.breakdown(model, gpu, tp=1, pp=2, weight_dtype="bf16", kv=KvFormat.of("bf16"), settings=settings, context_tokens=8192)
    # the binding stage is the last (its lm_head and the sampler's 1.9 GiB); only it runs the sampler, and
    # no TP collective means no lazy communicator: 0.25 GiB non-torch (the held-out PP logs: 0.07)
    assert m.stage == 1 and [t for t, _, _ in m.detail][:2] == ["forward pass", "dummy sampler run"]
    assert m.runtime_overhead_bytes_per_gpu == pytest.approx(0.25 * GIB)


def test_chunked_local_attention_caps_the_request(catalog):
    # Llama 4: RoPE layers attend within 8,192-token chunks; vLLM's ChunkedLocalAttentionSpec charges a request
    # cdiv(min(chunk + max_num_batched_tokens, L), 16) blocks: at L = 131,072, 1,024 blocks, not 8,192.
    model = load_config_json(Path(__file__).resolve().parent / "data" / "model_configs" / "meta-llama--Llama-4-Scout-17B-16E-Instruct_config.json")
    assert model.attention_chunk_size == 8192 and model.layer_types.count("full") == 12
    _, m = configuration_breakdown(model, catalog.gpu("H200-SXM"), engine="vllm", version="0.19.0", tp=4, pp=1, weight_dtype="bf16", kv="bf16",
                                   context_tokens=131072, max_model_len=131072)
    assert m.engine_kv_groups == 4  # 36 chunked layers in 3 groups of 12, 12 global layers in one
    assert m.engine_max_concurrency == pytest.approx(m.engine_gpu_blocks / (8192 + 3 * 1024))


def test_auto_kv_dtype_is_the_checkpoint_dtype(catalog, tmp_path):
    from click.testing import CliRunner

    from sizer.cli import cli
    from sizer.workload import load_workload

    out = CliRunner().invoke(cli, ["explain", "--model", "llama-3.1-8b", "--device", "H100-SXM", "--kv-dtype", "auto", "--context-tokens", "8192",
                                   "--engine-version", "0.19.0", "--gpu-memory-utilization", "0.95"])
    assert out.exit_code == 0, out.output
    # the release's own lines, with the figures of the held-out log meta-llama-llama-3-1-8b---h100-80gb--tp1pp1dp1--8192
    assert "Available KV cache memory: 58.11 GiB" in out.output
    assert "GPU KV cache size: 476,000 tokens" in out.output
    assert "KV dtype auto" in out.output
    p = tmp_path / "w.yaml"
    p.write_text("model: llama-3.1-8b\ntraffic: {requests_per_s: 1, prompt_tokens: 100, output_tokens: 10}\nsearch: {kv_dtypes: [auto, fp8]}\n")
    assert load_workload(p, catalog).search.kv_dtypes == ("bf16", "fp8")


def test_flashinfer_installed_reaches_the_rule_from_the_workload(catalog, tmp_path):
    # vLLM 0.11.0 with FlashInfer installed samples with it (14 B per logit), without it with the sort (38 B):
    # Llama-3.1-8B, 1,024 rows x 128,256 vocab x 24 B = 2.94 GiB less activation with it.
    from sizer.candidates import engine_overrides
    from sizer.workload import load_workload

    p = tmp_path / "w.yaml"
    p.write_text('model: llama-3.1-8b\nengine_version: "0.11.0"\ntraffic: {requests_per_s: 1, prompt_tokens: 100, output_tokens: 10}\n'
                 "memory: {flashinfer_installed: true}\n")
    w = load_workload(p, catalog)
    assert w.memory.flashinfer_installed is True
    model, gpu = catalog.model("llama-3.1-8b"), catalog.gpu("H100-SXM")

    def act(overrides):
        return configuration_breakdown(model, gpu, engine="vllm", version="0.11.0", tp=1, pp=1, weight_dtype="bf16", kv="bf16",
                                       context_tokens=8192, max_model_len=8192, overrides=overrides)[1].activation_bytes_per_gpu

    assert act(EngineOverrides()) - act(engine_overrides(w)) == pytest.approx(1024 * 128256 * 24)


# ---------------------------------------------------------------------------------------------
# AMD Instinct MI355X (ROCm, AITER): vLLM 0.21 and 0.22 logs of AMD's InferenceX runs
# ---------------------------------------------------------------------------------------------

ROCM = yaml.safe_load((DATA / "vllm_rocm_mi355x.yaml").read_text())["entries"]


def _rocm(entry, catalog, weight_dtype: str | None = None):
    model = catalog.model(entry["model"])
    _, m = configuration_breakdown(
        model, catalog.gpu("MI355X"), engine="vllm", version=entry["vllm"], tp=entry["tp"], pp=1, weight_dtype=weight_dtype or entry["weights"],
        kv=resolve_kv_dtype("fp8", model), context_tokens=entry["max_model_len"], max_model_len=entry["max_model_len"],
        overrides=EngineOverrides(
            memory_fraction=entry["util"], block_size_tokens=entry["block_size"], max_num_seqs=entry["max_num_seqs"], max_num_batched_tokens=8192
        ),
    )
    return m


@pytest.mark.parametrize("entry", ROCM, ids=lambda e: e["id"])
def test_mi355x_log_weights(entry, catalog):
    """"Model loading took" on MI355X within 0.5 %: FP8 MiniMax-M2.5 from its own checkpoint's config, and AMD's Quark
    MXFP4 conversions of two MoE models with MXFP4 on the routed experts only (model.MXFP4_MOE_ORIGIN)."""
    m = _rocm(entry, catalog)
    sized = (m.weights_bytes_per_gpu + m.runtime_buffer_bytes_per_gpu) / GIB
    assert sized == pytest.approx(entry["weights_gib"], rel=0.005), f"{entry['id']}: sizer {sized:.2f} vs logged {entry['weights_gib']} GiB"


def test_mxfp4_on_every_linear_layer_would_miss_amds_moe_checkpoints(catalog):
    """The rule the MI355X logs decide: AMD's amd/MiniMax-M2.5-MXFP4 loads 118.75 GiB on one GPU. MXFP4 on the routed
    experts with the other layers in BF16 gives 118.63 (sizer); MXFP4 on every linear layer would give 114.90, 3.2 %
    short, and 3.7 GiB more KV pool than the GPU has."""
    from dataclasses import replace

    from sizer.model import LINEAR_GROUPS, MXFP4_MOE_ORIGIN, weight_bytes_per_gpu, weight_scheme

    entry = next(e for e in ROCM if e["id"] == "minimax-m2.5-mxfp4-tp1-seqs1")
    model = catalog.model("minimax-m2.5")
    scheme = weight_scheme(model, "mxfp4")
    assert scheme.groups == frozenset({"experts"}) and scheme.origin == MXFP4_MOE_ORIGIN
    assert weight_bytes_per_gpu(model, 1, 1, "mxfp4") / GIB == pytest.approx(118.63, abs=0.01)
    everywhere = replace(model, quant=replace(scheme, groups=LINEAR_GROUPS))
    assert weight_bytes_per_gpu(everywhere, 1, 1, "mxfp4") / GIB == pytest.approx(114.90, abs=0.01)
    assert weight_bytes_per_gpu(everywhere, 1, 1, "mxfp4") / GIB / entry["weights_gib"] - 1 < -0.03
    # a dense model's MXFP4 (AMD's MLPerf llama2-70b) stays on every linear layer
    assert weight_scheme(catalog.model("llama-2-70b"), "mxfp4").groups == LINEAR_GROUPS


def _pool_off_by(m, entry, measured: float, reason: str) -> None:
    """sizer's KV pool off the logged one by the error measured (sizer / logged - 1), no more."""
    assert m.engine_available_kv_bytes / GIB / entry["kv_gib"] - 1 == pytest.approx(measured, abs=0.0025), reason


def _pool_and_tokens_within_two_percent(m, entry, where: str) -> None:
    """The logged KV pool (GiB) and KV tokens of `entry`, each within 2 % of sizer's `m`."""
    err = m.engine_available_kv_bytes / GIB / entry["kv_gib"] - 1
    assert abs(err) < 0.02, f"{where}: sizer {m.engine_available_kv_bytes / GIB:.2f} vs logged {entry['kv_gib']} GiB ({err:+.2%})"
    err = m.engine_kv_tokens / entry["tokens"] - 1
    assert abs(err) < 0.02, f"{where}: sizer {m.engine_kv_tokens:,} vs logged {entry['tokens']:,} tokens ({err:+.2%})"


@pytest.mark.parametrize("entry", ROCM, ids=lambda e: e["id"])
def test_mi355x_log_pool_within_two_percent(entry, catalog):
    """In-sample since the ROCm V1 audit (ROCM_V1_AUDIT.md): these logs are the ones VllmPolicy.ROCM_V1_GROWTH_GIB
    was measured from. Before it, Kimi-K2.5 at TP 4 was held at +2.5-2.85 % (put down to its vision encoder); the
    miss was ROCm's non-torch memory, offset in the MiniMax rows by a CUDA-graph estimate vLLM 0.21/0.22 do not
    make on ROCm."""
    _pool_and_tokens_within_two_percent(_rocm(entry, catalog), entry, entry["id"])


GEMMA_3 = [e for e in SHARED if "gemma-3-" in e["id"]]


@pytest.mark.parametrize("entry", GEMMA_3, ids=lambda e: e["id"])
def test_gemma_3_counts_its_local_rope_and_its_global_rope_at_the_scaled_length(entry, catalog):
    """Gemma 3's global layers use rope_scaling linear factor 8 and its sliding layers a default
    rope at rope_local_base_freq: vLLM builds two caches, 131,072 x 8 and 131,072 rows
    (LinearScalingRotaryEmbedding: max_position_embeddings x factor). With one unscaled cache
    sizer put the 4B, 12B and 27B pools +0.82, +1.18 and +1.71 % above these logs (the 4B's
    "Model loading took 8.58 GiB" against 8.07 counted); with both, within 0.5 %."""
    m, tokens = _shared(entry, catalog)
    rotary_dim = _config(entry["model"]).rotary_dim
    assert m.runtime_buffer_bytes_per_gpu >= (131072 * 8 + 131072) * rotary_dim * 2
    assert abs(tokens / entry["gpu_kv_cache_tokens"] - 1) < 0.005, entry["source"]


# ---------------------------------------------------------------------------------------------
# Further runs of the 0.19 H100 sweep (tests/data/vllm_logs/vllm_v019_h100_audit.yaml): other TP degrees of
# the same models, from the sweep's run records
# ---------------------------------------------------------------------------------------------

AUDIT = yaml.safe_load((DATA / "vllm_v019_h100_audit.yaml").read_text())["entries"]
AUDIT_SOURCE = "llm-d-incubation/llm-d-planner@cb666596283a96db2b66e72c79f773add871020f accuracy/results/v0.19.0/runs/{}.json"

# Runs sizer does not reproduce within 2 %: the measured error of the pool (sizer / logged - 1) and what the
# record shows of it.
AUDIT_MEASURED = {
    "redhatai-llama-3-3-70b-i--h100-80gb--tp1pp1dp1--8192": (
        +0.0420,
        "weights within 0.02 GiB (sizer 67.70, logged 67.72); the 0.21 GiB sizer leaves over on a 5.01 GiB pool is in the "
        "profiled peak (the record gives no activation figure: 75.23 - 67.72 - 5.01 = 2.50 GiB of activation and non-torch "
        "memory, sizer 2.06 + 0.25). The same checkpoint at TP 2 and 4 is within 0.2 %; what the TP 1 w8a8 forward holds "
        "beyond sizer's rule (about 24 KiB a token of the 8,192-token budget) is not traced.",
    ),
}


def _audit(entry, catalog):
    return _heldout(dict(entry, pp=1, kv=resolve_kv_dtype("auto", _audit_model(entry, catalog)), max_model_len=8192, util=0.95), catalog)


def _audit_model(entry, catalog):
    spec = entry["model"]
    return load_config_json(DATA / "configs" / spec) if spec.endswith(".json") else catalog.model(spec)


@pytest.mark.parametrize("entry", [e for e in AUDIT if e["id"] not in AUDIT_MEASURED], ids=lambda e: e["id"])
def test_audit_run_within_two_percent(entry, catalog):
    _pool_and_tokens_within_two_percent(_audit(entry, catalog), entry, AUDIT_SOURCE.format(entry["id"]))


@pytest.mark.parametrize("entry_id", sorted(AUDIT_MEASURED))
def test_audit_run_with_measured_reason(entry_id, catalog):
    entry = next(e for e in AUDIT if e["id"] == entry_id)
    measured, reason = AUDIT_MEASURED[entry_id]
    m = _audit(entry, catalog)
    _pool_off_by(m, entry, measured, reason)
    assert (m.weights_bytes_per_gpu + m.runtime_buffer_bytes_per_gpu) / GIB == pytest.approx(entry["weights_gib"], abs=0.05), reason



@pytest.mark.parametrize("tp", [2, 4])
def test_mistral_format_load_holds_the_whole_vision_tower_on_every_rank(tp, catalog):
    """vLLM >= 0.12 loads a mistralai/ repo in Mistral's format (params.json first: transformers_utils/config.py
    get_config), as PixtralForConditionalGeneration, whose vision encoder and adapter are plain nn.Linear:
    Mistral-Small-3.1-24B's 439M-parameter tower (0.82 GiB) whole on each TP rank. The sweep's runs log
    22.80 GiB at TP 2 and 11.86 at TP 4 (sources: AUDIT_SOURCE); the tower split across ranks gave 22.39 and
    11.21. The HF-format copy (RedHatAI's w8a8, Mistral3ForConditionalGeneration) shards it, and vLLM 0.11
    took config.json first."""
    entry = next(e for e in AUDIT if e["id"] == f"mistralai-mistral-small---h100-80gb--tp{tp}pp1dp1--8192")
    m = _audit(entry, catalog)
    weights = (m.weights_bytes_per_gpu + m.runtime_buffer_bytes_per_gpu) / GIB
    assert weights == pytest.approx(entry["weights_gib"], abs=0.05), AUDIT_SOURCE.format(entry["id"])
    model = _audit_model(entry, catalog)
    assert model.hf_id == "mistralai/Mistral-Small-3.1-24B-Instruct-2503"
    from sizer.engines import VllmPolicy, VllmRelease

    assert VllmPolicy.vision_tower_replicated(model, VllmRelease.of("0.12.0"))
    assert not VllmPolicy.vision_tower_replicated(model, VllmRelease.of("0.11.2"))
    redhat = _config("RedHatAI/Mistral-Small-3.1-24B-Instruct-2503-quantized.w8a8")
    assert not VllmPolicy.vision_tower_replicated(redhat, VllmRelease.of("0.19.0"))
    older = configuration_breakdown(model, catalog.gpu("H100-SXM"), engine="vllm", version="0.11.2", tp=tp, pp=1, weight_dtype="bf16",
                                    kv="bf16", context_tokens=8192, max_model_len=8192, overrides=EngineOverrides(memory_fraction=0.95))[1]
    assert m.weights_bytes_per_gpu - older.weights_bytes_per_gpu == pytest.approx(model.vision_params * 2 * (1 - 1 / tp))


# ---------------------------------------------------------------------------------------------
# SGLang startup logs sizer had not seen (tests/data/vllm_logs/sglang_startup_audit.yaml; SGLANG_AUDIT.md):
# "KV Cache is allocated. #tokens" per GPU under each log's own release, GPU, TP and mem_fraction_static
# ---------------------------------------------------------------------------------------------

SGLANG = yaml.safe_load((DATA / "sglang_startup_audit.yaml").read_text())["entries"]
SGLANG_SOURCES = {
    line.split(":", 1)[0].strip("# ").strip(): line.split(":", 1)[1].strip()
    for line in (DATA / "sglang_startup_audit.yaml").read_text().splitlines()
    if line.startswith("#   ") and ":" in line and not line.startswith("#    ")
}


def _sglang_model(entry, catalog):
    spec = entry["model"]
    return load_config_json(DATA / "configs" / spec) if spec.endswith(".json") else catalog.model(spec)


def _sglang(entry, catalog, *, version: str | None = None):
    """sizer's SGLang breakdown of one log: its release's rules, its GPU and TP, its mem_fraction_static where the
    launch line gives one (else the release's default, which the log's server_args then show), its context and chunk."""
    model = _sglang_model(entry, catalog)
    overrides = EngineOverrides(memory_fraction=entry["fraction"]) if entry.get("fraction_given") else EngineOverrides()
    return configuration_breakdown(
        model, catalog.gpu(entry["gpu"]), engine="sglang", version=version or entry["release"], tp=entry["tp"], pp=1,
        weight_dtype=entry["weights"], kv=resolve_kv_dtype("auto", model), context_tokens=entry["context"],
        max_model_len=entry["context"], overrides=overrides,
    )


def _sglang_err(entry, catalog, **kw) -> float:
    return _sglang(entry, catalog, **kw)[1].engine_kv_tokens / entry["tokens"] - 1


# Logs sizer does not reproduce within 2 %: the measured error (tokens, sizer / logged - 1) and what the log shows of it.
SGLANG_MEASURED = {
    "r1d-qwen7b-rtx3090-wsl-tp1": (
        +0.0813,
        "Docker on WSL2 (Windows): 23.58 - 22.76 = 0.82 GiB in use before the weights against sizer's 0.50 GiB CUDA context "
        "(the Windows host's share of the GPU, which SGLang counts as used): 0.32 x 0.88 = 0.28 GiB of a 5.64 GiB pool; SGLang's "
        "weights line is 0.17 GiB over sizer's weights: 0.45 GiB together, the 8 %.",
    ),
    "llama31-8b-24gb-windows-tp1": (
        +0.1493,
        "Docker Desktop on Windows: 23.64 - 22.39 = 1.25 GiB in use before the weights (sizer 0.50): the 0.75 GiB the Windows "
        "host holds is 0.66 GiB of the 0.879 static budget on a 4.66 GiB pool. The GPU is not named (a 24 GB GeForce).",
    ),
    "qwq-32b-4x-l4-tp4": (
        -0.0431,
        "PCIe, TP 4: the log holds 0.32 GiB before the weights (0.13 of it its own 'Init torch distributed' line), sizer "
        "0.50 + 0.26 = 0.76 GiB: L4's CUDA context is 0.19 GiB, not the 0.5 GiB sizer takes on every GPU (0.44 x 0.85 = "
        "0.37 GiB of a 2.84 GiB pool), while SGLang's weights line is 0.25 GiB over sizer's (+0.25). Was -22.3 % with the "
        "NVLink per-peer figure.",
    ),
}


def _sglang_pool_entries():
    return [e for e in SGLANG if "model" in e and e.get("fraction_given") is not None]


@pytest.mark.parametrize("entry", [e for e in _sglang_pool_entries() if e["id"] not in SGLANG_MEASURED], ids=lambda e: e["id"])
def test_sglang_startup_log_within_two_percent(entry, catalog):
    err = _sglang_err(entry, catalog)
    assert abs(err) < 0.02, f"{entry['id']} ({SGLANG_SOURCES[entry['source']]}): tokens off by {err:+.2%}"


@pytest.mark.parametrize("entry_id", sorted(SGLANG_MEASURED))
def test_sglang_startup_log_with_measured_reason(entry_id, catalog):
    entry = next(e for e in SGLANG if e["id"] == entry_id)
    measured, reason = SGLANG_MEASURED[entry_id]
    assert _sglang_err(entry, catalog) == pytest.approx(measured, abs=0.0025), reason


@pytest.mark.parametrize("entry", [e for e in SGLANG if "model" in e], ids=lambda e: e["id"])
def test_sglang_startup_log_weights(entry, catalog):
    """SGLang's "Load weight end ... mem usage" (free memory before less after) is at most 0.25 GiB over sizer's weights
    and rotary cache, never under: Qwen2 checkpoints log 0.17-0.25 GiB over their parameters (7B, 1.5B, QwQ-32B), Qwen3-14B
    0.19 at TP 4, Llama-3.1-8B 0.03-0.12, Qwen3 8B / 32B / 30B-A3B-FP8 0.01-0.11 (not traced: SGLANG_AUDIT.md)."""
    _, m = _sglang(entry, catalog)
    logged = entry.get("weights_gib", (entry.get("begin_gib") or 0) - (entry.get("end_gib") or 0))
    sized = (m.weights_bytes_per_gpu + m.runtime_buffer_bytes_per_gpu) / GIB
    assert -0.01 <= logged - sized <= 0.26, f"{entry['id']}: sizer {sized:.2f} vs logged {logged:.2f} GiB"


def test_sglang_fraction_the_logs_print_is_the_release_default(catalog):
    """Where the launch line sets no mem_fraction_static the log's server_args print the release's default, which sizer
    computes: 0.88 on one H100 up to 0.4.7 (the docs notebook of 2025-01), 0.879 on a 24 GiB card in 0.4.9, 0.83 on one
    H100 with the piecewise prefill graphs of 0.5.10+ (58 capture sizes at an 8,192-token chunk: 13,440 + 464 MiB)."""
    for entry in (e for e in _sglang_pool_entries() if not e["fraction_given"] and e["fraction"] is not None):
        settings, _ = _sglang(entry, catalog)
        assert settings.memory_fraction == pytest.approx(entry["fraction"], abs=0.0005), entry["id"]


def test_sglang_piecewise_graph_reserve_from_0_5_10(catalog):
    """From 0.5.10 the piecewise CUDA graph of the prefill is on by default and _handle_gpu_memory_settings reserves 8 MiB
    per capture size (server_args.py, 0.5.10-0.5.16; arg_groups/memory_hook.py reserve_for_graph_mb, 0.5.20). Qwen3-30B-A3B-FP8
    on one H100 logs mem_fraction_static=0.83 (h100-moe: (81,920 - 13,904) / 81,920) and Qwen3-8B on one B200 a pool that fits
    0.854 ((184,320 - 26,832) / 184,320, 74 sizes at 16,384: b200-q8); 0.5.9's rule gave 0.836 and 0.858, +2.2 % and +0.7 %."""
    from sizer.engines import SglangPolicy

    assert len(SglangPolicy.piecewise_capture_sizes(8192)) == 58 and len(SglangPolicy.piecewise_capture_sizes(16384)) == 74
    h100, b200 = catalog.gpu("H100-SXM"), catalog.gpu("B200")
    moe = catalog.model("qwen3-30b-a3b")
    assert SglangPolicy.default_fraction(h100, moe, 1, 1, "0.5.10")[0] == 0.830
    assert SglangPolicy.default_fraction(h100, moe, 1, 1, "0.5.9")[0] == 0.836
    assert SglangPolicy.default_fraction(b200, catalog.model("qwen3-8b"), 1, 1, "0.5.10")[0] == 0.854
    # off where SGLang turns the graph off: ROCm, PP > 1, a multimodal model; 1.5 GiB for MLA
    assert SglangPolicy.piecewise_graph_reserve_mib(catalog.gpu("MI300X"), moe, 1, 8192, "0.5.12") == 0
    assert SglangPolicy.piecewise_graph_reserve_mib(h100, moe, 2, 8192, "0.5.12") == 0
    assert SglangPolicy.piecewise_graph_reserve_mib(h100, catalog.model("kimi-k2.5"), 1, 8192, "0.5.12") == 0
    assert SglangPolicy.piecewise_graph_reserve_mib(h100, catalog.model("deepseek-r1"), 1, 8192, "0.5.12") == 1.5 * 1024
    for entry_id in ("qwen3-30b-a3b-fp8-h100-tp1", "qwen3-8b-b200-tp1"):
        entry = next(e for e in SGLANG if e["id"] == entry_id)
        assert abs(_sglang_err(entry, catalog)) < 0.01, SGLANG_SOURCES[entry["source"]]
        assert _sglang_err(entry, catalog, version="0.5.9") > _sglang_err(entry, catalog) + 0.003


def test_sglang_over_pcie_holds_one_communicator_not_a_per_peer_figure(catalog):
    """Before the weights SGLang holds the CUDA context and its communicators. On NVLink sizer scales the 8 x H200 log
    (2.51 GiB at TP 8, sgl-project/sglang#11716) per peer; over PCIe SGLang's custom all-reduce is off beyond two GPUs
    or without P2P (custom_all_reduce.py) and NCCL's NVLS is off (engine.py), and the logged 'Init torch distributed'
    cost does not grow with the peers: 0.26 GiB at TP 2 (2 x RTX 4090, #16920), 0.13 at TP 4 (4 x L4). Qwen3-14B on
    4 x RTX 4090 at TP 4 (4090x4, not used to set the figure) logs 0.56 GiB before the weights: sizer's per-peer 1.36
    GiB put its pool 3.9 % under, 0.76 GiB puts it within 0.3 %."""
    from sizer.engines import SglangPolicy

    p = SglangPolicy()
    rtx, l4 = catalog.gpu("RTX-4090"), catalog.gpu("L4")
    assert p.init_bytes(4, rtx) == p.init_bytes(2, rtx) == p.init_bytes(8, l4) == pytest.approx(0.76 * GIB)
    assert p.init_bytes(1, rtx) == p.init_bytes(1) == 0.5 * GIB
    assert p.init_bytes(8, catalog.gpu("H200-SXM")) == pytest.approx(2.509 * GIB)  # NVLink: as logged
    # H100 NVL: pairs joined by an NVLink bridge keep the NVLink figure at TP 2, not at TP 4
    nvl = catalog.gpu("H100-NVL")
    assert p.init_bytes(2, nvl) == p.init_bytes(2) and p.init_bytes(4, nvl) == pytest.approx(0.76 * GIB)
    entry = next(e for e in SGLANG if e["id"] == "qwen3-14b-4x-rtx4090-tp4")
    assert abs(_sglang_err(entry, catalog)) < 0.005, SGLANG_SOURCES[entry["source"]]
    per_peer = (p.INIT_BYTES_TP1 + p.INIT_BYTES_PER_PEER * 3) / GIB
    assert catalog.gpu("RTX-4090").usable_memory_bytes / GIB - entry["begin_gib"] < per_peer - 0.7


def test_sglang_default_fraction_before_0_4_8_by_release(catalog):
    """sglang/srt/server_args.py __post_init__, wheel by wheel: 0.4.1.post7-0.4.5 take 0.88 / 0.87 / 0.85 / 0.81 / 0.79 by
    TP on every GPU; 0.4.6 keeps that up to 81,920 MiB and takes (gpu_mem - 13 GiB) / gpu_mem above; 0.4.7 by TP x PP up to
    81,920 MiB, else 0.88, then 0.79 on CUDA GPUs over 180,000 MiB and min(f + 48 GiB x (1 - f) / gpu_mem, (gpu_mem - 18 GiB)
    / gpu_mem) over 96 GiB. sizer had 0.4.6's rule for every release up to 0.4.7 (H200: 0.908 where 0.4.5 takes 0.88 and
    0.4.7 0.872; B200: 0.928 where 0.4.7 takes 0.79)."""
    from sizer.engines import SglangPolicy

    h200, b200, h100 = catalog.gpu("H200-SXM"), catalog.gpu("B200"), catalog.gpu("H100-SXM")
    mem = h200.memory_bytes / 2**20

    def f(gpu, tp, version):
        return SglangPolicy.default_fraction(gpu, None, tp, 1, version)[0]

    assert f(h200, 1, "0.4.5") == 0.88 and f(h200, 8, "0.4.3.post4") == 0.81
    assert f(h200, 1, "0.4.6") == pytest.approx((mem - 13 * 1024) / mem)
    assert f(h200, 1, "0.4.7") == pytest.approx(min(0.88 + 48 * 1024 * 0.12 / mem, (mem - 18 * 1024) / mem)) == pytest.approx(0.8723, abs=1e-4)
    assert f(b200, 1, "0.4.7") == 0.79 and SglangPolicy.default_fraction(b200, None, 1, 1, "0.4.7")[1] == 16384
    assert [f(h100, tp, "0.4.7") for tp in (1, 2, 4, 8)] == [0.88, 0.87, 0.85, 0.81]
    # the docs notebook of 2025-01 (0.4.1.post7, one 80 GB GPU): "mem_fraction_static=0.88" and the pool it gives
    entry = next(e for e in SGLANG if e["id"] == "docs-jan25-llama31-8b-h100-tp1")
    assert entry["end_gib"] - entry["begin_gib"] * (1 - 0.88) == pytest.approx(entry["kv_gib"], abs=0.01)


def test_sglang_rule_reproduces_every_log_from_its_own_lines():
    """SGLang's rule (model_runner.py profile_max_num_token, 0.4.1-0.5.9): tokens = int((free after the weights - free before
    them x (1 - mem_fraction_static)) x 2^30) // bytes a token. On each log's own lines it lands within 0.2 % of the logged
    #tokens: what sizer misses is in its inputs (memory before the weights, weights), not the rule."""
    from sizer.engines import SglangPolicy

    for e in (x for x in _sglang_pool_entries() if x["fraction"] is not None):
        pool = SglangPolicy.rest_memory_bytes(e["begin_gib"] * GIB, e["end_gib"] * GIB, e["fraction"]) / GIB
        assert pool == pytest.approx(e["kv_gib"], rel=0.002, abs=0.006), e["id"]


# ---------------------------------------------------------------------------------------------
# vLLM V0 (0.6.x) on AMD Instinct MI300X under ROCm, and V0 on H100 (tests/data/vllm_logs/vllm_v0_amd_audit.yaml;
# the audit: tests/data/vllm_logs/AMD_V0_AUDIT.md)
# ---------------------------------------------------------------------------------------------

V0AMD = yaml.safe_load((DATA / "vllm_v0_amd_audit.yaml").read_text())["entries"]
V0AMD_SOURCES = {
    "A": "AUGMXNT/MI300-testing@032bd4da1080662667b9d5f77bacd6a579128c5f {}",
    "B": "AUGMXNT/llm-tracker.info-vault@b56234c471c29f4e766ebccb0a6fcdfaa2c79b82 {}",
    "C": "AUGMXNT/llm-tracker.info-vault@b56234c471c29f4e766ebccb0a6fcdfaa2c79b82 {}",
    "D": "{}",
}


def _v0amd_source(entry) -> str:
    return V0AMD_SOURCES[entry["source"]].format(entry["log"])


def _v0amd(entry, catalog):
    spec = entry["model"]
    model = load_config_json(DATA / "configs" / spec) if spec.endswith(".json") else catalog.model(spec)
    _, m = configuration_breakdown(
        model, catalog.gpu(entry["gpu"]), engine="vllm", version=entry["vllm"], tp=entry["tp"], pp=1, weight_dtype=entry["weights"],
        kv=entry["kv"], context_tokens=entry["max_model_len"], max_model_len=entry["max_model_len"],
        overrides=EngineOverrides(memory_fraction=entry["util"], block_size_tokens=16, max_num_seqs=entry["max_num_seqs"],
                                  max_num_batched_tokens=entry["max_num_batched_tokens"]),
    )
    return m


def _v0amd_error(m, entry) -> float:
    """sizer / logged - 1 of the KV blocks per GPU, or of the logged KV GiB where no block count is given."""
    if "gpu_blocks" in entry:
        return m.engine_gpu_blocks / entry["gpu_blocks"] - 1
    return m.engine_available_kv_bytes / GIB / entry["kv_gib"] - 1


# Logs sizer does not reproduce within 2 %: the measured error (sizer / logged - 1) and what the log shows of it.
V0AMD_MEASURED = {
    "b-llama31-405b-tp8-131k-no-hipblaslt": (
        +0.0951,
        "a 131,072-token profile on a 49.6 GiB pool: the blocks imply 11.8 GiB of activation and non-torch memory beyond "
        "sizer's 16.88 GiB forward, where the same build's Llama-2-7B TP 8 without hipBLASLt implies 5.4 GiB of non-torch. "
        "The other 131,072-token ROCm profiles also hold more than sizer's forward (Llama-3.1-8B TP 8 logs 5.34 GiB of "
        "activation against 4.31, one more 4,096-wide tensor a token; TP 1 implies about 2 GiB more); at 405B's width "
        "that is 4 GiB or more. Which tensor the ROCm long-prefill forward keeps is not traced.",
    ),
    "d-llama3-8b-h100-tp1": (
        +0.0266,
        "non-torch memory: the PR's build logs 1.79 GiB at TP 1 (3.58 at TP 2) on H100, where sizer takes 0.35 GiB (the "
        "24 GB-card V0 logs); activation (1.26 GiB) and weights (14.96) are as logged. The PR's own figures, printed by "
        "a build under review, are not traced further.",
    ),
}


@pytest.mark.parametrize("entry", [e for e in V0AMD if e["id"] not in V0AMD_MEASURED and ("gpu_blocks" in e or "kv_gib" in e)], ids=lambda e: e["id"])
def test_v0_amd_log_within_two_percent(entry, catalog):
    m = _v0amd(entry, catalog)
    err = _v0amd_error(m, entry)
    assert abs(err) < 0.02, f"{_v0amd_source(entry)} ({entry['id']}): sizer {m.engine_gpu_blocks:,} blocks, {err:+.2%}"


@pytest.mark.parametrize("entry_id", sorted(V0AMD_MEASURED))
def test_v0_amd_log_with_measured_reason(entry_id, catalog):
    entry = next(e for e in V0AMD if e["id"] == entry_id)
    measured, reason = V0AMD_MEASURED[entry_id]
    assert _v0amd_error(_v0amd(entry, catalog), entry) == pytest.approx(measured, abs=0.0025), reason


@pytest.mark.parametrize("entry", V0AMD, ids=lambda e: e["id"])
def test_v0_amd_log_weights(entry, catalog):
    m = _v0amd(entry, catalog)
    sized = (m.weights_bytes_per_gpu + m.runtime_buffer_bytes_per_gpu) / GIB
    # within 0.02 GiB: Llama-2-7B at TP 8 logs 0.017 GiB over its sharded parameters (1.5874 against 1.5703) in both
    # builds, at TP 1 it is exact (12.5523); what the TP 8 load adds is not traced
    assert sized == pytest.approx(entry["weights_gib"], abs=0.02), _v0amd_source(entry)


def test_v0_profile_run_sorts_the_sampled_logits(catalog):
    """V0's profile run samples max_num_seqs dummy prompts with top_p=0.99 and top_k=vocab - 1 (worker/model_runner.py
    profile_run, 0.6.3-0.7.3 wheels), and Sampler._apply_top_k_top_p sorts the fp32 logits unless
    VLLM_USE_FLASHINFER_SAMPLER is set: 38 B a logit at the sort (VllmPolicy.v0_sampler_bytes). sizer took 2 B a logit
    (the logits alone) and missed each of these logged activation peaks (torch peak less the weights)."""
    by_id = {e["id"]: e for e in V0AMD}
    # Llama-3.1-70B fp8 on MI300X with --max-num-seqs 4096 (source C): 4,096 x 128,256 x 38 B + the 32,768 x 8,192
    # bf16 hidden states = 19.09 GiB, as logged (peak_torch_memory 86.79 less 67.70); sizer had 6.75 (the forward)
    fp8 = by_id["c-llama31-70b-fp8-tp1-32k"]
    assert _v0amd(fp8, catalog).activation_bytes_per_gpu == pytest.approx(4096 * 128256 * 38 + 32768 * 8192 * 2)
    assert _v0amd(fp8, catalog).activation_bytes_per_gpu / GIB == pytest.approx(fp8["activation_gib"], abs=0.02), _v0amd_source(fp8)
    # 256 rows at TP 1 and TP 2 on H100 (source D: PR #10511) both log 1.26 GiB: the sampler, not the forward (0.84 and
    # 0.52 GiB at 8,192 tokens), with the 32 MiB cuBLAS workspace; MI300X's chunked 512-token run logs 1.19
    for i in ("d-llama3-8b-h100-tp1", "d-llama3-8b-h100-tp2", "a-llama31-8b-tp8-chunked-upstream-nccl112"):
        e = by_id[i]
        assert _v0amd(e, catalog).activation_bytes_per_gpu / GIB == pytest.approx(e["activation_gib"], abs=0.03), _v0amd_source(e)


def test_v0_rocm_non_torch_by_rule(catalog):
    """V0's non-torch term on MI300X by the release's rule (vllm/worker/worker.py determine_num_available_blocks):
    up to 0.6.3 and from 0.6.5 the growth after init_device, in 0.6.4 every non-torch byte on the device. The logged
    "non_torch_memory" of the two 0.6.4-rule logs: 6.07 GiB at TP 1 (source C), 8.00 at TP 8 (source A); the growth
    implied by the <= 0.6.3-rule logs: 2.18 and 2.46 at TP 1, 3.80 at TP 2, 7.07 and 7.10 at TP 8. sizer charged
    0.35 GiB at TP 1 and 0.65 at TP 8 (its CUDA figures), 1.2-6 % too much KV pool on every MI300X log."""
    by_id = {e["id"]: e for e in V0AMD}
    fp8, up8 = by_id["c-llama31-70b-fp8-tp1-32k"], by_id["a-llama31-8b-tp8-131k-upstream"]
    assert _v0amd(fp8, catalog).runtime_overhead_bytes_per_gpu / GIB == pytest.approx(fp8["non_torch_gib"], abs=0.01), _v0amd_source(fp8)
    assert _v0amd(up8, catalog).runtime_overhead_bytes_per_gpu / GIB == pytest.approx(up8["non_torch_gib"], abs=0.01), _v0amd_source(up8)
    from sizer.engines import VllmPolicy

    p, mi300x = VllmPolicy(), catalog.gpu("MI300X")
    assert [round(p.v0_rocm_non_torch(mi300x, tp, "0.6.3") / GIB, 2) for tp in (1, 2, 4, 8)] == [2.3, 3.8, 5.45, 7.1]
    assert p.v0_rocm_non_torch(mi300x, 8, "0.7.3") == p.v0_rocm_non_torch(mi300x, 8, "0.6.3")
    assert p.v0_rocm_non_torch(mi300x, 1, "0.6.4") > p.v0_rocm_non_torch(mi300x, 1, "0.6.5")
    # CUDA keeps its figures (the H100 log of source D: 0.35 GiB at TP 1); V1 on MI300X takes V1's own ROCm figure
    # (ROCM_V1_GROWTH_GIB, read from V1 logs: ROCM_V1_AUDIT.md), not V0's
    h100 = _v0amd(by_id["d-llama3-8b-h100-tp1"], catalog)
    assert h100.runtime_overhead_bytes_per_gpu / GIB == pytest.approx(0.35)
    v1 = configuration_breakdown(catalog.model("llama-3.1-8b"), mi300x, engine="vllm", version="0.19.0", tp=1, pp=1, weight_dtype="bf16",
                                 kv="bf16", context_tokens=8192, max_model_len=8192)[1]
    assert v1.runtime_overhead_bytes_per_gpu / GIB == pytest.approx(p.ROCM_V1_GROWTH_GIB[1])


def test_every_v0_amd_log_is_tabled():
    ids = [e["id"] for e in V0AMD]
    assert len(ids) == len(set(ids)) == 17
    assert set(V0AMD_MEASURED) <= set(ids)
    assert all(e["source"] in V0AMD_SOURCES for e in V0AMD)


# ---------------------------------------------------------------------------------------------
# NVIDIA GPUs other than the H100 (tests/data/vllm_logs/vllm_nvidia_other_gpus.yaml; NVIDIA_AUDIT.md)
# ---------------------------------------------------------------------------------------------

NVIDIA = yaml.safe_load((DATA / "vllm_nvidia_other_gpus.yaml").read_text())["entries"]
NVIDIA_SOURCES = {
    "L": "find_string index file id 38962983769 ('Hosting Qwen3-235B-A22B-Instruct-2507-FP8 on 8xL40S', vLLM 0.10.2)",
    "P": "https://github.com/vllm-project/vllm/pull/17122 (1 x L40S, Llama-3.1-8B-Instruct, V1 between 0.8.4 and 0.8.5)",
    "M": "yecohn/moe-bench@a0b56733034234022b5c384eb734e560a69d44e3 results/qwen3-a3b-4gpu-parallelism (4 x A100-PCIE-40GB, TP 4, main build after 0.20)",
}


def _nvidia(entry, catalog, *, version: str | None = None):
    """sizer's breakdown of one log: the run's own device total where the log prints it."""
    from dataclasses import replace

    spec = entry["model"]
    model = load_config_json(DATA / "configs" / spec) if spec.endswith(".json") else catalog.model(spec)
    gpu = catalog.gpu(entry["gpu"])
    if "total_gib" in entry:
        gpu = replace(gpu, usable_memory_bytes=entry["total_gib"] * GIB)
    _, m = configuration_breakdown(
        model, gpu, engine="vllm", version=version or entry["vllm"], tp=entry["tp"], pp=1, weight_dtype=entry["weights"],
        kv=resolve_kv_dtype(entry["kv"], model), context_tokens=entry["max_model_len"], max_model_len=entry["max_model_len"],
        overrides=EngineOverrides(
            memory_fraction=entry["util"], block_size_tokens=entry["block_size"], max_num_batched_tokens=entry.get("max_num_batched_tokens"),
            max_num_seqs=entry.get("max_num_seqs"), flashinfer_installed=entry.get("flashinfer_installed"),
        ),
    )
    return m


# Logs sizer does not reproduce within 2 %: the measured error of the KV tokens (sizer / logged - 1) and what the log
# shows of it.
_B200_KIMI = (
    "Kimi-K2.5-NVFP4 on B200 under 0.22 (source B), the configuration AUDIT.md's mechanism 2 leaves: sizer's weights are "
    "short (135.89 GiB against the logged 139.53 at TP 4, 68.36 against 71.01 at TP 8; NVIDIA's NVFP4 MoE checkpoints keep "
    "attention in BF16, and this one's hf_quant_config.json is not public here), and the runs set "
    "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 (the log's own warning), so vLLM subtracted no graph estimate where sizer "
    "takes 0.09-0.23 GiB: its estimate at vLLM's default capture sizes (up to 2 x max_num_seqs; these runs' "
    "--max-cudagraph-capture-size 2048, with which vLLM logs 2.55 / 2.93-2.97 GiB, is no sizer setting). +1.5 to +1.7 % at "
    "TP 8, +16.8 to +17.1 % at TP 4, where the weights dominate. (The old fixed 1.25 GiB estimate offset part of the "
    "weights' miss: +0.3 % / +10.7 %.) The twelve runs differ in max_num_seqs (1-24) only and log the same pool within "
    "0.01 GiB; sizer's moves with the estimate only (the sampler's 1-24 rows are a few MiB)."
)
NVIDIA_MEASURED = {
    **{
        e["id"]: (+0.1695 if e["tp"] == 4 else +0.0161, _B200_KIMI, -3.64 if e["tp"] == 4 else -2.65)
        for e in NVIDIA if e["source"] == "B"
    },
    "l40s-llama-3.1-8b-tp1-0.8": (
        +0.2154,
        "weights as logged (sizer 14.99 GiB with the rotary cache, logged 14.9889), but 158,656 tokens are 19.37 GiB of "
        "KV where sizer's 0.8 rule leaves 23.54: 4.2 GiB more non-KV memory than the profile's terms (1.19 GiB sampler "
        "peak, 0.35 non-torch). 0.8's worker charges every byte in use on the device that torch did not allocate "
        "(v1/worker/gpu_worker.py determine_available_memory: mem_get_info total - free - torch allocated), another "
        "process's memory included (vllm-project/vllm PR #19312: 'V1's memory profiling incorrectly counts memory used by "
        "other processes'); the PR's run on a workstation L40S states neither that nor its entry point, so it is not traced.",
        0.0,
    ),
}


@pytest.mark.parametrize("entry", [e for e in NVIDIA if e["id"] not in NVIDIA_MEASURED], ids=lambda e: e["id"])
def test_nvidia_log_within_two_percent(entry, catalog):
    where = f"{entry['id']} ({NVIDIA_SOURCES[entry['source']]})"
    m = _nvidia(entry, catalog)
    _pool_and_tokens_within_two_percent(m, entry, where)
    # each logged term: the pool is right for the right reasons
    assert (m.weights_bytes_per_gpu + m.runtime_buffer_bytes_per_gpu) / GIB == pytest.approx(entry["weights_gib"], abs=0.05), where
    if "activation_gib" in entry:
        assert m.activation_bytes_per_gpu / GIB == pytest.approx(entry["activation_gib"], abs=0.05), where
    if "non_torch_gib" in entry:
        assert m.runtime_overhead_bytes_per_gpu / GIB == pytest.approx(entry["non_torch_gib"], abs=0.1), where
    if "rest_gib" in entry:
        # builds that log neither term apart (no DEBUG profiling line): what the budget leaves for the two together
        rest = (m.activation_bytes_per_gpu + m.runtime_overhead_bytes_per_gpu) / GIB
        assert rest == pytest.approx(entry["rest_gib"], abs=0.15), where


@pytest.mark.parametrize("entry_id", sorted(NVIDIA_MEASURED))
def test_nvidia_log_with_measured_reason(entry_id, catalog):
    entry = next(e for e in NVIDIA if e["id"] == entry_id)
    measured, reason, weights_miss_gib = NVIDIA_MEASURED[entry_id]
    m = _nvidia(entry, catalog)
    assert m.engine_kv_tokens / entry["tokens"] - 1 == pytest.approx(measured, abs=0.0025), reason
    # the weights are as logged, or off by the miss the reason names (sizer - logged, GiB)
    weights = (m.weights_bytes_per_gpu + m.runtime_buffer_bytes_per_gpu) / GIB
    assert weights - entry["weights_gib"] == pytest.approx(weights_miss_gib, abs=0.05), reason
    if entry["vllm"].startswith("0.8"):
        # one rule for every 0.8.x: the build between 0.8.4 and 0.8.5 is predicted alike under either tag
        assert _nvidia(entry, catalog, version="0.8.4").engine_kv_tokens == m.engine_kv_tokens


def test_b200_runs_differing_in_max_num_seqs_alone_log_one_pool(catalog):
    """Source B's twelve B200 runs (max_num_seqs 1-24, all else equal): the logged pools agree within 0.01 GiB per TP
    degree (the runs subtract no graph estimate: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0), and sizer's prediction moves
    with max_num_seqs by its graph estimate alone (more capture sizes), within 1 MiB otherwise."""
    for tp in (4, 8):
        runs = [e for e in NVIDIA if e["source"] == "B" and e["tp"] == tp]
        assert len(runs) == 6
        assert max(e["kv_gib"] for e in runs) - min(e["kv_gib"] for e in runs) <= 0.01
        without = [(m.engine_available_kv_bytes + m.cuda_graph_bytes_per_gpu) / GIB for m in (_nvidia(e, catalog) for e in runs)]
        assert max(without) - min(without) < 1 / 1024


def test_non_torch_on_pcie_gpus_is_the_increase_after_the_snapshot(catalog):
    """From 0.9 vLLM charges the non-torch memory that grew since the worker's snapshot (utils memory_profiling against
    Worker.init_snapshot): on an L40S node as on an H100 node, the kernels and cuBLAS handles of the first forward.
    vLLM 0.10.2 on 8 x L40S (PCIe, custom all-reduce off) logs 0.17-0.21 GiB (source L); sizer took the V0 era's
    absolute figures (0.35 GiB context included, + 0.15 per rank group: 0.65 GiB at TP 8) and put the pool 4 % low.
    0.8, which charges all non-torch memory on the device, keeps them."""
    entry = next(e for e in NVIDIA if e["id"] == "l40s-qwen3-235b-2507-fp8-tp8-ep-0.10.2")
    m = _nvidia(entry, catalog)
    assert m.runtime_overhead_bytes_per_gpu == pytest.approx(0.13 * GIB)
    assert m.runtime_overhead_bytes_per_gpu / GIB == pytest.approx(entry["non_torch_gib"], abs=0.1)
    # TP 1 on a PCIe card and on an H100 node now agree, release by release (0.18+: 0.25 GiB)
    model = catalog.model("llama-3.1-8b")
    for gpu in ("L40S", "A100-80GB", "RTX-4090", "L4", "A10G", "H100-PCIe"):
        for version, expected in (("0.14.1", 0.13), ("0.19.0", 0.25)):
            m = configuration_breakdown(model, catalog.gpu(gpu), engine="vllm", version=version, tp=1, pp=1, weight_dtype="bf16", kv="bf16",
                                        context_tokens=4096, max_model_len=4096, overrides=EngineOverrides())[1]
            assert m.runtime_overhead_bytes_per_gpu == pytest.approx(expected * GIB), (gpu, version)
    m08 = _nvidia(entry, catalog, version="0.8.5")
    assert m08.runtime_overhead_bytes_per_gpu == pytest.approx((0.35 + 0.15 * 2) * GIB)


def test_a100_takes_the_large_batch_defaults_before_0_9():
    """vllm/engine/arg_utils.py: GPUs of >= 70 GiB get max_num_batched_tokens 8192 and max_num_seqs 1024 for the API
    server. 0.9.0 added the A100 exclusion ('"a100" not in device_name', PR #17885; 0.9.0 arg_utils.py l. 1495); 0.8.5
    checks the memory alone (l. 1596), so an 80 GB A100 under 0.8 profiles 8,192 tokens and 1,024 sampler rows."""
    from sizer.catalog import load_catalog
    from sizer.engines import VllmPolicy

    cat = load_catalog()
    p = VllmPolicy()
    model = cat.model("llama-3.1-8b")
    for gpu, version, expected in (
        ("A100-80GB", "0.8.5", (1024, 8192)), ("A100-80GB-PCIe", "0.8.0", (1024, 8192)),
        ("A100-80GB", "0.9.0", (256, 2048)), ("A100-80GB", "0.19.0", (256, 2048)),
        ("A100-40GB", "0.8.5", (256, 2048)), ("H100-SXM", "0.8.5", (1024, 8192)), ("L40S", "0.8.5", (256, 2048)),
    ):
        s = p.settings(cat.gpu(gpu), model, 1, version=version, overrides=EngineOverrides(), max_model_len=8192)
        assert (s.max_num_seqs, s.max_num_batched_tokens) == expected, (gpu, version)


def test_an_a100_node_keeps_the_nvlink_communicators_without_the_fusion_workspace(catalog):
    """An A100 SXM node's TP group all-reduces over NVLink (custom all-reduce on, NCCL's P2P transport), as an H100
    node's does, so its collectives' memory is the H100 logs' figure without the all-reduce + RMSNorm fusion, which
    vLLM enables on compute capability 9.0 / 10.x only (config/vllm.py enable_allreduce_rms_fusion, 0.19): 0.25 +
    0.42 GiB at TP 8 under 0.19. A PCIe node (L40S, the 8 x L40S 0.10.2 log: 0.17-0.21 GiB) has none of it, an H100
    node the fusion's workspace too. The A100 figure is an extrapolation: no A100 TP > 1 V1 log has been found."""
    model = catalog.model("llama-3.1-70b")

    def overhead(gpu: str) -> float:
        m = configuration_breakdown(model, catalog.gpu(gpu), engine="vllm", version="0.19.0", tp=8, pp=1, weight_dtype="bf16", kv="bf16",
                                    context_tokens=4096, max_model_len=4096, overrides=EngineOverrides())[1]
        return m.runtime_overhead_bytes_per_gpu / GIB

    assert overhead("A100-80GB") == pytest.approx(0.25 + 0.42)
    assert overhead("L40S") == pytest.approx(0.25)
    assert overhead("H100-SXM") == pytest.approx(0.25 + 1.96)


def test_bridged_nvl_cards_count_as_an_nvlink_group_within_their_bridge(catalog):
    """H100-NVL cards come in NVLink-bridged pairs (gpus.yaml bridge_gpus 2), H200-NVL in 4-way bridges: a TP group
    within one bridge all-reduces over NVLink P2P (custom all-reduce's 'more than two PCIe-only GPUs' rule does not
    apply), so vLLM 0.19 charges it an H100 node's collective memory (fusion on: compute capability 9.0); a group wider
    than the bridge, or an unbridged H100-PCIe pair, talks over PCIe and has none. No bridged-card log checks it."""
    model = catalog.model("llama-3.1-8b")

    def overhead(gpu: str, tp: int) -> float:
        m = configuration_breakdown(model, catalog.gpu(gpu), engine="vllm", version="0.19.0", tp=tp, pp=1, weight_dtype="bf16", kv="bf16",
                                    context_tokens=4096, max_model_len=4096, overrides=EngineOverrides())[1]
        return m.runtime_overhead_bytes_per_gpu / GIB

    assert overhead("H100-NVL", 2) == pytest.approx(0.25 + 1.82)
    assert overhead("H200-NVL", 4) == pytest.approx(0.25 + 1.89)
    assert overhead("H100-NVL", 4) == pytest.approx(0.25)
    assert overhead("H100-PCIe", 2) == pytest.approx(0.25)


# ---------------------------------------------------------------------------------------------
# vLLM V1 on AMD outside the MI355X InferenceX set: MI300X (0.17.1), MI355X (0.24, 0.26)
# (tests/data/vllm_logs/vllm_rocm_v1_audit.yaml; ROCM_V1_AUDIT.md)
# ---------------------------------------------------------------------------------------------

ROCMV1 = yaml.safe_load((DATA / "vllm_rocm_v1_audit.yaml").read_text())["entries"]
ROCMV1_SOURCES = {
    "R": "https://github.com/vllm-project/recipes/pull/273 (2 x MI300X, vLLM 0.17.1 ROCm wheel, MiniMax-M2 TP 2)",
    "K": "SemiAnalysisAI/InferenceX@6c128cd22b0c4d1066a9fc70a6ec54eb21bd9343 (4 x MI355X, Kimi-K2.7-Code MXFP4, vLLM 0.24 / 0.26)",
    "V": "AUGMXNT/llm-tracker.info-vault@87b8a326141d6e57d3a2084340520befa7851c77 MI300X Testing.md (SGLang, 1 x MI300X)",
    "Q": "ajith-sirra-amd/InferenceMAX_Rocm_Team@598828615e7701f3f4f8ac5b1da2dbb49fe11460 results/0603_sa/qwen3.5-fp8-mi355x-sglang-agentic-hicache (SGLang 0.5.12.post1, 4 x MI355X)",
}


def _rocmv1(entry, catalog):
    """sizer's breakdown of a catalog model's log under the log's own conditions (source R)."""
    model = catalog.model(entry["model"])
    _, m = configuration_breakdown(
        model, catalog.gpu(entry["gpu"]), engine="vllm", version=entry["vllm"], tp=entry["tp"], pp=1, weight_dtype=model.native_weight_dtype,
        kv=resolve_kv_dtype(entry["kv"], model), context_tokens=entry["max_model_len"], max_model_len=entry["max_model_len"],
        overrides=EngineOverrides(memory_fraction=entry["util"], block_size_tokens=entry["block_size"]),
    )
    return m


def _kimi_k27_pool_gib(entry, non_torch_gib: float, graph_gib: float) -> float:
    """Source K's pool rebuilt from its own logged weights and activation (0.26's 2.19 GiB, the same model, TP and
    token budget), a non-torch term and a graph estimate: util x total - weights - activation - non-torch - graph."""
    return entry["util"] * entry["total_gib"] - entry["weights_gib"] - entry.get("activation_gib", 2.19) - non_torch_gib - graph_gib


def kimi_k27_graph_estimate_gib(entry, catalog) -> float:
    """sizer's CUDA-graph estimate for a source-K run: the catalog's Kimi-K2.5 (Kimi-K2.7-Code's shapes: 61 layers,
    MLA, 384 experts) at the run's TP, max_num_seqs and token budget (8,192), MXFP4 experts."""
    from sizer.engines import VllmPolicy, VllmRelease

    p, gpu, release = VllmPolicy(), catalog.gpu(entry["gpu"]), VllmRelease.of(entry["vllm"])
    model = catalog.model("kimi-k2.5")
    s = p.settings(gpu, model, entry["tp"], version=entry["vllm"], overrides=EngineOverrides(max_num_seqs=entry["max_num_seqs"], max_num_batched_tokens=8192), max_model_len=262144)
    return p.cuda_graph_estimate_bytes(model, gpu, entry["tp"], 1, s, "mxfp4", release) / GIB


def test_rocm_v1_mi300x_log_within_two_percent(catalog):
    """2 x MI300X, vLLM 0.17.1 (source R): 497,600 tokens; sizer 490,336 (-1.5 %). Before the ROCm non-torch figure
    sizer gave 519,088 (+4.3 %): its CUDA figure, 0.50 GiB at TP 2, against ROCm's 3.9. Out of sample: the figure was
    read from the MI355X logs of vllm_rocm_mi355x.yaml only."""
    entry = next(e for e in ROCMV1 if e["src"] == "R")
    m = _rocmv1(entry, catalog)
    err = m.engine_kv_tokens / entry["tokens"] - 1
    assert abs(err) < 0.02, f"{ROCMV1_SOURCES['R']}: sizer {m.engine_kv_tokens:,} vs logged {entry['tokens']:,} ({err:+.2%})"
    assert m.runtime_overhead_bytes_per_gpu / GIB == pytest.approx(3.9)
    assert m.cuda_graph_bytes_per_gpu == 0  # 0.17: graphs come out of the headroom


@pytest.mark.parametrize("entry", [e for e in ROCMV1 if e["src"] == "K" and e["vllm"] == "0.24.0"], ids=lambda e: e["id"])
def test_rocm_v1_non_torch_checks_on_the_0_24_kimi_logs(entry, catalog):
    """vLLM 0.24 on MI355X at TP 4 (source K, not among the logs ROCM_V1_GROWTH_GIB was read from): sizer's ROCm
    non-torch figure at TP 4 (5.2 GiB) with the log's weights and activation gives its pool within 2 % (the implied
    figure is 5.23-5.66 GiB); the CUDA figure it replaced (0.65 GiB) gave +3.8 to +4.3 %. 0.24 makes no graph
    estimate on ROCm (gpu_worker.py l. 449 `is_cuda()`), and sizer subtracts none."""
    from sizer.engines import VllmPolicy, VllmRelease

    mi355x = catalog.gpu("MI355X")
    assert mi355x.usable_memory_bytes / GIB == pytest.approx(entry["total_gib"], abs=0.005)
    release = VllmRelease.of(entry["vllm"])
    assert not release.graph_estimate_subtracted(mi355x)
    nt, _ = VllmPolicy().v1_non_torch(mi355x, entry["tp"], 1, release)
    pool = _kimi_k27_pool_gib(entry, nt / GIB, 0.0)
    assert abs(pool / entry["kv_gib"] - 1) < 0.02, f"{entry['path']}: {pool:.2f} vs logged {entry['kv_gib']} GiB"
    assert _kimi_k27_pool_gib(entry, 0.65, 0.0) / entry["kv_gib"] - 1 > 0.035  # the CUDA figure's pool


@pytest.mark.parametrize("entry", [e for e in ROCMV1 if e["src"] == "K" and e["vllm"] == "0.26.0"], ids=lambda e: e["id"])
def test_rocm_0_26_logs_its_graph_estimate_and_a_smaller_non_torch_term(entry, catalog):
    """vLLM 0.26 on MI355X (source K) prints its terms: the pool is total x util - weights - activation - non-torch -
    the graph estimate, to 0.02 GiB, so 0.26 subtracts the estimate on ROCm (gpu_worker.py l. 502 `is_cuda_alike()`,
    PR #44825), as sizer's rule now says. Its non-torch term is 2.78-2.81 GiB at TP 4, not 0.24's 5.2-5.7: 0.26 reads
    free memory through torch.accelerator.get_memory_info (mem_utils.py l. 146) where 0.24 took torch.cuda.mem_get_info.
    sizer reads no rule for 0.26 (its newest modelled release is 0.22) and keeps the CUDA figure there, 0.65 GiB: a
    measured miss of 2.1 GiB on this term. Its graph estimate follows max_num_seqs as vLLM's does (0.79 GiB at 8
    sequences, 1.98 at 40; tests/test_vllm_graphs.py checks it)."""
    from sizer.engines import VllmPolicy, VllmRelease

    mi355x = catalog.gpu("MI355X")
    rebuilt = _kimi_k27_pool_gib(entry, entry["non_torch_gib"], entry["graph_estimate_gib"])
    assert rebuilt == pytest.approx(entry["kv_gib"], abs=0.02), entry["path"]
    release = VllmRelease.of(entry["vllm"])
    assert release.graph_estimate_subtracted(mi355x) and release.graph_estimate_logged(mi355x)
    nt, _ = VllmPolicy().v1_non_torch(mi355x, entry["tp"], 1, release)
    assert nt / GIB == pytest.approx(0.65)
    assert entry["non_torch_gib"] - nt / GIB == pytest.approx(2.15, abs=0.05)


def test_vllm_makes_no_cuda_graph_estimate_on_rocm_before_0_26(catalog):
    """gpu_worker.py determine_available_memory calls profile_cudagraph_memory() `if not current_platform.is_rocm()`
    (0.19.0 l. 380, 0.20.0 l. 381) or `if current_platform.is_cuda()` (0.21.0-0.25.0) and leaves the estimate 0 on
    ROCm; 0.26.0 takes `is_cuda_alike()`. sizer subtracted its 1.25-1.27 GiB estimate on MI355X under 0.21/0.22, which
    hid part of ROCm's non-torch memory in the MiniMax rows (vllm_rocm_mi355x.yaml: logged at TP 2 161.55 GiB, sizer
    163.68 before, 161.55 now). Its "would print" lines drop the "Estimated CUDA graph memory" line where vLLM does."""
    from sizer.engines import VllmRelease
    from sizer.explain import explain_config

    mi355x, h100 = catalog.gpu("MI355X"), catalog.gpu("H100-SXM")
    for version in ("0.20.0", "0.21.0", "0.22.0", "0.25.0"):
        assert not VllmRelease.of(version).graph_estimate_subtracted(mi355x), version
        assert VllmRelease.of(version).graph_estimate_subtracted(h100), version
    assert not VllmRelease.of("0.19.0").graph_estimate_logged(mi355x) and VllmRelease.of("0.19.0").graph_estimate_logged(h100)
    assert VllmRelease.of("0.26.0").graph_estimate_subtracted(mi355x)
    entry = next(e for e in ROCM if e["id"] == "minimax-m2.5-fp8-tp2-seqs1")
    m = _rocm(entry, catalog)
    assert m.cuda_graph_bytes_per_gpu == 0
    assert m.engine_available_kv_bytes / GIB == pytest.approx(entry["kv_gib"], rel=0.005)
    model = catalog.model("minimax-m2.5")
    amd = explain_config(model, mi355x, tp=2, pp=1, kv_dtype="fp8", weight_dtype="fp8", context_tokens=196608, engine="vllm", engine_version="0.22.0")
    nv = explain_config(model, catalog.gpu("B200"), tp=2, pp=1, kv_dtype="fp8", weight_dtype="fp8", context_tokens=196608, engine="vllm", engine_version="0.22.0")
    assert not any(x.startswith("Estimated CUDA graph memory") for x in amd.engine_log)
    assert any(x.startswith("Estimated CUDA graph memory") for x in nv.engine_log)


def test_rocm_v1_non_torch_by_tp(catalog):
    """ROCM_V1_GROWTH_GIB on every AMD GPU from 0.9 to 0.25: 1.3 / 3.9 / 5.2 / 7.1 GiB at TP 1 / 2 / 4 / 8 (log2
    between), read from the MI355X 0.21/0.22 logs (TP 1-4) and V0's TP 8 figure. 0.8 and 0.26+ keep the CUDA figures
    (no ROCm rule read for them); NVIDIA GPUs are untouched."""
    from sizer.engines import VllmPolicy, VllmRelease

    p = VllmPolicy()
    for gpu in ("MI300X", "MI325X", "MI355X"):
        g = catalog.gpu(gpu)
        got = [round(p.v1_non_torch(g, tp, 1, VllmRelease.of("0.19.0"))[0] / GIB, 2) for tp in (1, 2, 4, 8)]
        assert got == [1.3, 3.9, 5.2, 7.1], gpu
        assert p.v1_non_torch(g, 2, 1, VllmRelease.of("0.8.5"))[0] / GIB == pytest.approx(0.5)
        assert p.v1_non_torch(g, 4, 1, VllmRelease.of("0.26.0"))[0] / GIB == pytest.approx(0.65)
    assert p.v1_non_torch(catalog.gpu("L40S"), 2, 1, VllmRelease.of("0.19.0"))[0] / GIB == pytest.approx(0.25)


def _rocm_sglang(entry, catalog):
    """sizer's SGLang breakdown of one AMD log: the release's rules (sizer_release), its GPU, TP, fraction, context."""
    model = _sglang_model(entry, catalog)
    return configuration_breakdown(
        model, catalog.gpu(entry["gpu"]), engine="sglang", version=entry["sizer_release"], tp=entry["tp"], pp=1,
        weight_dtype=entry["weights"], kv=resolve_kv_dtype("auto", model), context_tokens=entry["context"], max_model_len=entry["context"],
        overrides=EngineOverrides(memory_fraction=entry["fraction"], max_num_seqs=entry.get("max_running_requests")),
    )


ROCM_SGLANG_HELD = {
    "q-sglang-qwen3.5-fp8-mi355x-tp4-n16-held": (
        +0.0618,
        "8.19 GiB less free at 'Load weight begin' (270.23 GiB) than the same configuration's other runs (278.42) after the "
        "same 'Init torch distributed ... mem usage=8.82 GB': memory another process held on the GPU when SGLang started, which "
        "SGLang's rule takes out of the pool (0.8 of it, and 1 - 0.8 of the rest) and sizer cannot know.",
    ),
}


@pytest.mark.parametrize("entry", [e for e in ROCMV1 if e.get("engine") == "sglang" and e["id"] not in ROCM_SGLANG_HELD], ids=lambda e: e["id"])
def test_rocm_sglang_log_within_two_percent(entry, catalog):
    """SGLang on MI300X (an October 2024 build, source V: +0.1 %, with the CUDA figure for the memory in use at start:
    0.5 GiB, logged 191.98 - 191.33 = 0.65) and 0.5.12.post1 on MI355X (source Q, the hybrid Qwen3.5: +0.6 %; its Gated
    DeltaNet state pool 1,376 slots against the logged 1,368). Weights: as logged within 0.05 GiB."""
    _, m = _rocm_sglang(entry, catalog)
    err = m.engine_kv_tokens / entry["tokens"] - 1
    assert abs(err) < 0.02, f"{entry['id']} ({ROCMV1_SOURCES[entry['src']]}): sizer {m.engine_kv_tokens:,} vs logged {entry['tokens']:,} ({err:+.2%})"
    logged_w = entry.get("weights_gib", entry["begin_gib"] - entry["end_gib"])
    assert (m.weights_bytes_per_gpu + m.runtime_buffer_bytes_per_gpu) / GIB == pytest.approx(logged_w, abs=0.05), entry["id"]
    if "mamba_slots" in entry:
        assert m.state_slots == pytest.approx(entry["mamba_slots"], rel=0.01)


@pytest.mark.parametrize("entry_id", sorted(ROCM_SGLANG_HELD))
def test_rocm_sglang_log_with_memory_held_before_start(entry_id, catalog):
    entry = next(e for e in ROCMV1 if e["id"] == entry_id)
    measured, reason = ROCM_SGLANG_HELD[entry_id]
    _, m = _rocm_sglang(entry, catalog)
    assert m.engine_kv_tokens / entry["tokens"] - 1 == pytest.approx(measured, abs=0.0025), reason
    twin = next(e for e in ROCMV1 if e["id"] == "q-sglang-qwen3.5-fp8-mi355x-tp4-n8")
    assert twin["begin_gib"] - entry["begin_gib"] == pytest.approx(8.19, abs=0.01), reason


def test_every_rocm_v1_audit_log_is_tabled():
    ids = [e["id"] for e in ROCMV1]
    assert len(ids) == len(set(ids)) == 12
    assert {e["src"] for e in ROCMV1} == set(ROCMV1_SOURCES)
    text = (DATA / "ROCM_V1_AUDIT.md").read_text()
    assert all(e["id"] in text for e in ROCMV1)


# ---------------------------------------------------------------------------------------------
# vLLM 0.20+ (tests/data/vllm_logs/vllm_v020_plus_audit.yaml; V020_AUDIT.md): each release's rules read in the 0.20.0,
# 0.21.0 and 0.22.0 wheels, and the 0.20+ logs found
# ---------------------------------------------------------------------------------------------

V020 = yaml.safe_load((DATA / "vllm_v020_plus_audit.yaml").read_text())["entries"]
V020_SOURCES = {
    "R": "find_string index file id 67126228976 (rerank_only_diagnostic_F3_no_rerank.ipynb: RTX PRO 6000, Qwen3-Reranker-8B, vLLM 0.20.0)",
    "D": "yecohn/moe-bench@a0b56733034234022b5c384eb734e560a69d44e3 results/qwen3-a3b-4gpu-parallelism (4 x A100-PCIE-40GB, TP 2 x DP 2, main build after 0.20)",
}


def _v020(entry, catalog):
    """sizer's breakdown of one log under its own conditions (one TP group: sizer has no data-parallel term)."""
    return _nvidia(entry, catalog)


# Measured errors of the KV tokens (sizer / logged - 1) and what the log shows of them.
_DP_MOE = (
    "Data parallel over a MoE model (source D, TP 2 x DP 2 on 4 x A100-PCIE-40GB): without expert parallelism vLLM "
    "flattens the experts' tensor parallelism over all DP x TP ranks (FusedMoEParallelConfig: tp_size = dp x tp), and "
    "with it spreads the experts over the same four ranks, so each GPU holds a quarter of the experts and half of "
    "the rest: 'Model loading took 14.96 GiB', where sizer, which sizes one TP group of 2, holds half of everything "
    "(28.46 GiB) and leaves a 2.95 GiB pool against the logged 15.22. On the logged weights sizer's pool is +8 % "
    "(16.45 GiB with the old 1.05 GiB graph estimate): vLLM's own graph estimate is 1.87 / 2.04 GiB against sizer's 0.53 "
    "(TP 2: custom all-reduce assumed on, but this machine 'lacks GPU P2P capability', so its all-reduces and the DP "
    "ranks' MoE token exchanges are NCCL calls captured in every graph: GRAPHS_AUDIT.md), "
    "and the logged activation + non-torch rest is 1.52 GiB against sizer's 1.10 (not traced; suspected: the MoE "
    "layers' buffers for the tokens the DP ranks exchange, and the DP group's communicators)."
)
V020_MEASURED = {
    "a100-pcie-40gb-qwen3-30b-a3b-tp2dp2-0.20.2dev": (-0.7718, _DP_MOE),
    "a100-pcie-40gb-qwen3-30b-a3b-tp2dp2-ep-0.20.2dev": (-0.7691, _DP_MOE),
}


@pytest.mark.parametrize("entry", [e for e in V020 if e["id"] not in V020_MEASURED], ids=lambda e: e["id"])
def test_v020_log_within_two_percent(entry, catalog):
    where = f"{entry['id']} ({V020_SOURCES[entry['source']]})"
    m = _v020(entry, catalog)
    _pool_and_tokens_within_two_percent(m, entry, where)
    assert (m.weights_bytes_per_gpu + m.runtime_buffer_bytes_per_gpu) / GIB == pytest.approx(entry["weights_gib"], abs=0.05), where


@pytest.mark.parametrize("entry_id", sorted(V020_MEASURED))
def test_v020_log_with_measured_reason(entry_id, catalog):
    entry = next(e for e in V020 if e["id"] == entry_id)
    measured, reason = V020_MEASURED[entry_id]
    m = _v020(entry, catalog)
    assert m.engine_kv_tokens / entry["tokens"] - 1 == pytest.approx(measured, abs=0.0025), reason
    # the weights the reason names: a quarter of the routed experts (DP x TP = 4 ranks), half of the rest (TP 2)
    model = catalog.model(entry["model"])
    experts_bytes = model.num_experts * 3 * model.hidden_size * model.moe_intermediate_size * sum(model.moe_layers) * 2
    tp_group_weights = (m.weights_bytes_per_gpu + m.runtime_buffer_bytes_per_gpu) / GIB
    assert tp_group_weights - experts_bytes / GIB * (1 / entry["tp"] - 1 / (entry["tp"] * entry["dp"])) == pytest.approx(entry["weights_gib"], abs=0.05), reason
    # and on the logged weights the pool is within the terms the reason names
    on_logged = m.engine_available_kv_bytes / GIB + tp_group_weights - entry["weights_gib"]
    graph_short = entry["cuda_graph_estimate_gib"] - m.cuda_graph_bytes_per_gpu / GIB
    rest_short = entry["rest_gib"] - (m.activation_bytes_per_gpu + m.runtime_overhead_bytes_per_gpu) / GIB
    assert on_logged - graph_short - rest_short == pytest.approx(entry["kv_gib"], abs=0.02), reason


def test_every_v020_log_is_tabled():
    ids = [e["id"] for e in V020]
    assert len(ids) == len(set(ids))
    assert set(V020_MEASURED) <= set(ids)
    assert all(e["source"] in V020_SOURCES for e in V020)


def test_sampler_warm_up_from_0_21_takes_the_native_path(catalog):
    """vLLM 0.21.0 / 0.22.0 v1/worker/gpu_model_runner.py _dummy_sampler_run samples the dummy logits twice: as configured
    (FlashInfer's top-k/top-p, on by default from 0.21), then with a per-request generator 'to warm forward_native',
    which forward_cuda hands to forward_native (v1/sample/ops/topk_topp_sampler.py): apply_top_k_top_p, the Triton kernel
    for >= 8 rows, torch's sort below. The profile's peak is the native call's; 0.20.0 samples once (Triton, its
    default). sizer took FlashInfer's smaller figure for 0.21+."""
    from sizer.engines import VllmPolicy, VllmRelease

    model, gpu, p = catalog.model("llama-3.1-8b"), catalog.gpu("H100-SXM"), VllmPolicy()
    v, vpad, h = model.vocab_size, p.padded_vocab(model, 1), model.hidden_size
    for seqs in (256, 1024):
        s = p.settings(gpu, model, 1, version="0.21.0", overrides=EngineOverrides(max_num_seqs=seqs), max_model_len=8192)
        held = (8192 + 2 * seqs) * h * 2
        flashinfer = seqs * vpad * 2 + seqs * v * 12 + held
        triton = flashinfer + 132 * v * 4  # and the Triton kernel's [min(132 SMs, rows) x vocab] fp32 buffer
        for version in ("0.21.0", "0.22.0"):
            got, how = p.sampler_peak(model, gpu, 1, s, VllmRelease.of(version))
            assert got == triton, (version, seqs, how)
        assert VllmRelease.of("0.21.0").sampler == "flashinfer" and VllmRelease.of("0.21.0").sampler_native_warmup
        assert not VllmRelease.of("0.20.0").sampler_native_warmup
    # fewer than 8 rows: apply_top_k_top_p sorts (0.17+, in the Triton era and in 0.21's warm-up alike): 38 B a logit
    s4 = p.settings(gpu, model, 1, version="0.21.0", overrides=EngineOverrides(max_num_seqs=4), max_model_len=8192)
    sort4 = 4 * vpad * 2 + 4 * v * 36 + (8192 + 8) * h * 2
    for version in ("0.19.0", "0.21.0"):
        assert p.sampler_peak(model, gpu, 1, s4, VllmRelease.of(version))[0] == sort4, version


def test_model_runner_v2_by_default_for_dense_qwen3_from_0_22(catalog):
    """vLLM 0.22.0 config/vllm.py: use_v2_model_runner defaults on for DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES =
    {"Qwen3ForCausalLM"} unless the model is MoE or quantized (VLLM_USE_V2_MODEL_RUNNER was "0" in 0.20.0 and 0.21.0
    envs.py). Model Runner V2 (v1/worker/gpu/model_runner.py) returns 0 from profile_cudagraph_memory, so nothing is
    taken from the budget for graphs, and its dummy sampler run has top-k / top-p off (sample/states.py: top_k = vocab,
    top_p = 1.0): the bf16 logits and their fp32 copy, 6 B a logit. sizer applied the V1 runner's rules."""
    from sizer.engines import VllmPolicy, VllmRelease

    p, gpu = VllmPolicy(), catalog.gpu("H100-SXM")
    qwen3, moe = catalog.model("qwen3-8b"), catalog.model("qwen3-30b-a3b")

    def mb(model, version, wd="bf16"):
        return configuration_breakdown(model, gpu, engine="vllm", version=version, tp=1, pp=1, weight_dtype=wd, kv="bf16",
                                       context_tokens=8192, max_model_len=8192, overrides=EngineOverrides(memory_fraction=0.9))[1]

    m21, m22 = mb(qwen3, "0.21.0"), mb(qwen3, "0.22.0")
    # 51 PIECEWISE + 51 FULL captures: FlashAttention 3's split buffers first (32 x 32 heads x 512 tokens x 129 x 4 B),
    # then 100 x 0.18 MiB x 36 layers
    assert m21.cuda_graph_bytes_per_gpu == pytest.approx(32 * 32 * 512 * 129 * 4 + 100 * 0.18 * 36 * 2**20)
    assert m22.cuda_graph_bytes_per_gpu == 0
    rows, v, vpad, h = 1024, qwen3.vocab_size, p.padded_vocab(qwen3, 1), qwen3.hidden_size
    sampler22 = next(b for k, _, b in m22.detail if k == "dummy sampler run")
    assert sampler22 == rows * vpad * 2 + rows * v * 4 + (8192 + rows) * h * 2
    # the MoE Qwen3, and the dense one under --quantization fp8, stay on the V1 runner
    assert mb(moe, "0.22.0").cuda_graph_bytes_per_gpu > 0
    assert mb(qwen3, "0.22.0", wd="fp8").cuda_graph_bytes_per_gpu > 0
    assert not p.uses_model_runner_v2(qwen3, "fp8", VllmRelease.of("0.22.0"))
    assert p.uses_model_runner_v2(qwen3, "bf16", VllmRelease.of("0.22.0")) and not p.uses_model_runner_v2(qwen3, "bf16", VllmRelease.of("0.21.0"))


def test_explain_prints_no_graph_estimate_line_under_model_runner_v2(catalog):
    """Model Runner V2's profile_cudagraph_memory returns 0 and logs nothing (0.22.0 v1/worker/gpu/model_runner.py),
    so `sizer explain`'s expected log has no 'Estimated CUDA graph memory' line for dense Qwen3 under 0.22; the V1 runner
    (0.21, or the MoE Qwen3 under 0.22) logs one."""
    from sizer.explain import explain_config

    def log(name, version):
        return explain_config(catalog.model(name), catalog.gpu("H100-SXM"), engine="vllm", engine_version=version, max_model_len=8192).engine_log

    assert not any(x.startswith("Estimated CUDA graph memory") for x in log("qwen3-8b", "0.22.0"))
    assert any(x.startswith("Estimated CUDA graph memory") for x in log("qwen3-8b", "0.21.0"))
    assert any(x.startswith("Estimated CUDA graph memory") for x in log("qwen3-30b-a3b", "0.22.0"))


def test_logged_kv_tokens_from_0_21_are_concurrency_times_max_model_len_for_one_group_too(catalog):
    """vLLM 0.21.0 / 0.22.0 v1/core/kv_cache_utils.py _report_kv_cache_config logs 'GPU KV cache size' as
    int(max_concurrency x max_model_len) for every layout, a single full-attention group included, where 0.20.0 logs
    num_blocks // groups x block_size. get_max_concurrency_for_kv_cache_config: num_blocks / cdiv(max_model_len,
    block_size). With max_model_len 1,000 and 16-token blocks a request takes 63 blocks (1,008 tokens): 0.21 logs
    1,000/1,008 of the blocks' tokens; at a whole number of blocks the two agree."""
    model, gpu = catalog.model("llama-3.1-8b"), catalog.gpu("H100-SXM")

    def mb(version, max_model_len):
        return configuration_breakdown(model, gpu, engine="vllm", version=version, tp=1, pp=1, weight_dtype="bf16", kv="bf16",
                                       context_tokens=max_model_len, max_model_len=max_model_len, overrides=EngineOverrides())[1]

    m20, m21 = mb("0.20.0", 1000), mb("0.21.0", 1000)
    assert m20.engine_kv_tokens == m20.engine_gpu_blocks * 16
    assert m21.engine_kv_tokens == int(m21.engine_gpu_blocks / 63 * 1000)
    assert m21.engine_kv_tokens < m21.engine_gpu_blocks * 16
    assert mb("0.21.0", 8192).engine_kv_tokens == mb("0.21.0", 8192).engine_gpu_blocks * 16


def test_allreduce_fusion_is_off_with_pipeline_stages_before_0_21(catalog):
    """config/vllm.py enable_allreduce_rms_fusion (0.17.0-0.20.0 wheels): `data_parallel_size == 1 and
    pipeline_parallel_size == 1` ("tp-pp combination broken", vllm-project/vllm#35426); 0.21.0 drops both. So TP 2 x PP 2
    on an H100 node under 0.19 / 0.20 has no fusion workspace or the NCCL communicator it brings up: the collectives'
    figure measured without it (0.42 GiB), where sizer charged the fusion's 1.82; 0.21 charges the fusion again. 0.17 and
    0.18 test capability 10.0 exactly, so B300 (10.3) has the fusion from 0.19 only."""
    from sizer.engines import VllmPolicy, VllmRelease

    model, h100 = catalog.model("llama-3.1-70b"), catalog.gpu("H100-SXM")

    def overhead(version, tp, pp, gpu=h100):
        m = configuration_breakdown(model, gpu, engine="vllm", version=version, tp=tp, pp=pp, weight_dtype="bf16", kv="bf16",
                                    context_tokens=4096, max_model_len=4096, overrides=EngineOverrides())[1]
        return m.runtime_overhead_bytes_per_gpu / GIB

    assert overhead("0.19.0", 2, 2) == pytest.approx(0.25 + 0.42)
    assert overhead("0.20.0", 2, 2) == pytest.approx(0.25 + 0.42)
    assert overhead("0.21.0", 2, 2) == pytest.approx(0.25 + 1.82)
    assert overhead("0.19.0", 2, 1) == pytest.approx(0.25 + 1.82)
    p = VllmPolicy()
    assert not p.allreduce_fusion_on(catalog.gpu("B300"), 2, 1, VllmRelease.of("0.18.0"))
    assert p.allreduce_fusion_on(catalog.gpu("B300"), 2, 1, VllmRelease.of("0.19.0"))
    assert p.allreduce_fusion_on(catalog.gpu("B200"), 2, 1, VllmRelease.of("0.18.0"))
