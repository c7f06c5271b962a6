"""What a config.json says beyond the network's shape and sizer must not drop: a quantisation
format sizer has no model for, and the context the engine derives from it.

Each figure below is worked out by hand from the config given, or read from the vLLM source
named beside it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sizer.engines import VllmPolicy, engine_policy
from sizer.model import arch_from_config
from sizer.workload import load_workload

from .test_bad_input import assert_one_line_error, run_sizer

CONFIGS = Path(__file__).parent / "data" / "model_configs"


def _qwen3_8b(**changes) -> dict:
    cfg = json.loads((CONFIGS / "Qwen--Qwen3-8B_config.json").read_text())
    cfg.update(changes)
    return cfg


def _workload(model: str, extra: str = "", *, name: str = "limits", rate: float = 2, prompt: str = "{p50: 1000, p99: 4000}",
              output: str = "{p50: 200, p99: 800}", ttft_s: float = 2.0, tpot_s: float = 0.08) -> str:
    """A workload on one H100-SXM for `model` (a catalog name or ./folder), `extra` appended."""
    return (
        f"name: {name}\nmodel: {model}\ntraffic:\n  requests_per_s: {rate}\n  prompt_tokens: {prompt}\n  output_tokens: {output}\n"
        f"slo:\n  ttft_s: {{p99: {ttft_s}}}\n  tpot_s: {{p99: {tpot_s}}}\nsearch:\n  devices: [H100-SXM]\n  tp: [1]\n  pp: [1]\n{extra}"
    )


# ------------------------------------------------------------------------------------------------
# 1. a quantization_config sizer does not model
# ------------------------------------------------------------------------------------------------

UNMODELLED = [
    ({"quant_method": "hqq", "nbits": 4, "group_size": 64}, "hqq", "quant_method 'hqq' not modelled"),
    ({"quant_method": "aqlm", "in_group_size": 8, "nbits_per_codebook": 16, "num_codebooks": 1}, "aqlm", "quant_method 'aqlm' not modelled"),
    ({"quant_method": "eetq", "weights": "int8"}, "eetq", "quant_method 'eetq' not modelled"),
    ({"quant_method": "torchao", "quant_type": {"default": {"_type": "Int4WeightOnlyConfig"}}}, "torchao", "quant_method 'torchao' not modelled"),
    ({"quant_method": "awq", "bits": 3, "group_size": 128}, "awq 3-bit", "quant_method 'awq' with bits 3 not modelled"),
]


@pytest.mark.parametrize("qc,method,said", UNMODELLED, ids=[u[1] for u in UNMODELLED])
def test_an_unmodelled_quantization_config_is_a_warning_not_a_silent_16_bits(qc, method, said):
    """Before, the note "... not modelled: weights counted at 16 bits" went to ModelArch.notes,
    which nothing prints: the checkpoint was sized as a 16-bit one without a word."""
    m = arch_from_config(_qwen3_8b(quantization_config=qc), name="q", source="test")
    assert m.quant is None and m.native_weight_dtype == "bf16" and m.unmodelled_quant == method
    assert any(said in w and "weights counted at 16 bits" in w for w in m.warnings), m.warnings


def test_an_unmodelled_checkpoint_is_served_as_it_is_never_quantised_again(catalog, tmp_path):
    """A checkpoint quantised in a format sizer does not model is searched in its own weights
    only (sized at 16 bits), as an AWQ checkpoint is searched in its int4 only: the default
    search drops vLLM's load-time FP8, and a plan given fp8 anyway gets no --quantization fp8,
    which vLLM refuses beside the config's own quant_method (ModelConfig._verify_quantization,
    vllm-project/vllm@18ec6629253632af0a384f2ffbb8c6b28af322e7:vllm/config/model.py)."""
    (tmp_path / "hqq").mkdir()
    (tmp_path / "hqq" / "config.json").write_text(json.dumps(_qwen3_8b(quantization_config={"quant_method": "hqq", "nbits": 4, "group_size": 64})))
    (tmp_path / "awq").mkdir()
    (tmp_path / "awq" / "config.json").write_text(json.dumps(_qwen3_8b(quantization_config={"quant_method": "awq", "bits": 4, "group_size": 128})))
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "config.json").write_text(json.dumps(_qwen3_8b()))

    def workload(folder, extra=""):
        path = tmp_path / f"{folder}.yaml"
        path.write_text(_workload(f"./{folder}", extra))
        return load_workload(path, catalog)

    assert workload("plain").search.weight_dtypes == ("bf16", "fp8")  # a 16-bit checkpoint: its own and load-time FP8
    assert workload("awq").search.weight_dtypes == ("int4",)  # a known pre-quantised one: its own only
    hqq = workload("hqq")
    assert hqq.search.weight_dtypes == ("bf16",)
    assert any("quant_method 'hqq' not modelled" in w for w in hqq.warnings)
    vllm = VllmPolicy()
    assert vllm.online_quantisation(workload("plain").model, "fp8")
    assert not vllm.online_quantisation(hqq.model, "fp8")
    given = workload("hqq", "  weight_dtypes: [bf16, fp8]\n").model
    for engine in ("vllm", "sglang"):
        policy = engine_policy(engine)
        assert not policy.online_quantisation(given, "fp8")
        assert "(hqq, sized as bf16)" in policy.checkpoint_note(given, "fp8")


def test_the_unmodelled_quantisation_warning_reaches_explain_solve_and_compare(tmp_path):
    (tmp_path / "hqq").mkdir()
    (tmp_path / "hqq" / "config.json").write_text(json.dumps(_qwen3_8b(quantization_config={"quant_method": "hqq", "nbits": 4, "group_size": 64})))
    (tmp_path / "w.yaml").write_text(_workload("./hqq"))
    said = "quant_method 'hqq' not modelled: weights counted at 16 bits"
    runs = {
        "explain": ("explain", "--model", "./hqq", "--device", "H100-SXM", "--format", "json"),
        "solve": ("solve", "w.yaml", "--format", "json"),
        "compare": ("compare", "w.yaml", "--format", "json"),
    }
    for command, args in runs.items():
        proc = run_sizer(*args, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert said in proc.stderr, (command, proc.stderr)
        out = json.loads(proc.stdout)
        assert any(said in w for w in out["warnings"]), (command, out["warnings"])
        launches = re.findall(r"vllm serve [^\"]*", proc.stdout)
        assert not any("--quantization" in line for line in launches), (command, launches)
        assert launches or command == "compare"  # compare's rows carry no launch line


def test_modelopt_quantization_config_in_config_json_is_read_as_hf_quant_config_json_is():
    """ModelOpt writes its format into config.json's quantization_config too: flat
    ({"quant_method": "modelopt", "quant_algo": "FP8", "ignore": [...]}) or nested as in
    hf_quant_config.json; vLLM's ModelOptQuantConfigBase.from_config reads both
    (vllm-project/vllm@c9a59901113ccfe729e9c2be54062abee99b37f7:vllm/model_executor/layers/quantization/modelopt.py).
    Before, both were counted at 16 bits. nvidia/Llama-3.1-70B-Instruct-FP8's own
    hf_quant_config.json (FP8 weights and KV, lm_head excluded), moved into config.json, gives the
    same weights to the byte as the sibling file; an algo vLLM has no method for is a warning."""
    from sizer.model import load_config_json, total_weight_bytes

    path = CONFIGS / "nvidia--Llama-3.1-70B-Instruct-FP8_config.json"
    sibling = load_config_json(path)
    hf_quant = json.loads((CONFIGS / "nvidia--Llama-3.1-70B-Instruct-FP8_hf_quant_config.json").read_text())
    cfg = json.loads(path.read_text())
    flat = {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "ignore": ["lm_head"]}
    for qc in (flat, hf_quant):
        m = arch_from_config({**cfg, "quantization_config": qc}, name="m", source="test")
        assert m.native_weight_dtype == "fp8" and m.kv_cache_quant == "fp8" and not m.unmodelled_quant
        assert total_weight_bytes(m, "fp8") == total_weight_bytes(sibling, "fp8")
    odd = arch_from_config({**cfg, "quantization_config": {"quant_method": "modelopt", "quant_algo": "W4A8_MXFP4_FP8"}}, name="m", source="test")
    assert odd.quant is None and odd.unmodelled_quant == "modelopt W4A8_MXFP4_FP8"
    assert any("modelopt quant_algo 'W4A8_MXFP4_FP8' not modelled" in w for w in odd.warnings)


# ------------------------------------------------------------------------------------------------
# 2. rope_scaling lengthens the context vLLM serves
# ------------------------------------------------------------------------------------------------

# huggingface.co/Qwen/Qwen2.5-7B-Instruct config.json (7,615,616,512 parameters: the model card's
# 7.61B), and the rope_scaling its model card tells users to add "for supported frameworks" to
# serve 131,072 tokens ("Processing Long Texts").
QWEN25_7B = {
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645,
    "hidden_act": "silu", "hidden_size": 3584, "initializer_range": 0.02, "intermediate_size": 18944,
    "max_position_embeddings": 32768, "max_window_layers": 28, "model_type": "qwen2", "num_attention_heads": 28,
    "num_hidden_layers": 28, "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "sliding_window": 131072, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.43.1",
    "use_cache": True, "use_sliding_window": False, "vocab_size": 152064,
}  # fmt: skip
QWEN_YARN = {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"}

def _long(model: str, extra: str = "") -> str:
    """p99 prompts of 60,000 tokens: beyond a 32,768-token context, within YaRN's x4."""
    return _workload(model, extra, name="long", rate=0.5, prompt="{p50: 20000, p99: 60000}", output="{p50: 300, p99: 1000}", ttft_s=30.0, tpot_s=0.1)


def test_yarn_rope_scaling_serves_original_positions_times_factor(catalog, tmp_path):
    """vLLM's _get_and_verify_max_len (vllm-project/vllm@18ec6629253632af0a384f2ffbb8c6b28af322e7:
    vllm/config/model.py): yarn's derived length is original_max_position_embeddings x factor,
    32,768 x 4 = 131,072, so a p99 prompt of 60,000 (+ 1,000 output) is served. Before, the
    config's 32,768 positions made the workload infeasible (exit 9). The raw
    max_position_embeddings stays as given."""
    from sizer.errors import InfeasibleError
    from sizer.optimize import check_context

    m = arch_from_config({**QWEN25_7B, "rope_scaling": QWEN_YARN}, name="qwen2.5-7b", source="test")
    assert m.total_params() == 7_615_616_512
    assert m.max_position_embeddings == 32_768 and m.max_context_tokens == 32_768 * 4 == 131_072
    assert "original_max_position_embeddings 32,768 x rope_scaling yarn factor 4" in m.context_words

    for name, rope in (("yarn", QWEN_YARN), ("plain", None)):
        cfg = dict(QWEN25_7B, **({"rope_scaling": rope} if rope else {}))
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(cfg))
        (tmp_path / f"{name}.yaml").write_text(_long(f"./{name}"))
    w = load_workload(tmp_path / "yarn.yaml", catalog)
    assert w.context_tokens == 61_000
    check_context(w)  # fits 131,072
    assert 61_000 <= w.max_model_len <= 131_072
    with pytest.raises(InfeasibleError, match=r"exceeds qwen2.5-7b's context|exceeds plain's context"):
        check_context(load_workload(tmp_path / "plain.yaml", catalog))


def test_the_rope_scaled_context_is_vllms_alone(catalog, tmp_path):
    """The x4 is vLLM's derivation. SGLang's get_context_length applies no factor where
    rope_scaling gives original_max_position_embeddings, and TensorRT-LLM's infer_max_seq_len none
    for yarn: both serve Qwen2.5's 32,768 (launching 116,164 there is refused at start-up). Under
    any engine but vLLM the unscaled positions are the limit, said in a warning; the same
    60,000-token workload is infeasible there as it was before the rope rule."""
    from sizer.errors import InfeasibleError
    from sizer.optimize import check_context

    (tmp_path / "yarn").mkdir()
    (tmp_path / "yarn" / "config.json").write_text(json.dumps({**QWEN25_7B, "rope_scaling": QWEN_YARN}))
    for engine in ("sglang", "trtllm"):
        (tmp_path / f"{engine}.yaml").write_text(_long("./yarn", f"engine: {engine}\n"))
        w = load_workload(tmp_path / f"{engine}.yaml", catalog)
        assert w.model.max_context_tokens == 32_768
        assert any(x.endswith(f"{engine}'s own derivation of the context is not modelled, so the unscaled max_position_embeddings 32,768 is the limit here") for x in w.warnings)
        with pytest.raises(InfeasibleError, match="exceeds"):
            check_context(w)
    (tmp_path / "vllm.yaml").write_text(_long("./yarn", "engine: vllm\n"))
    assert load_workload(tmp_path / "vllm.yaml", catalog).model.max_context_tokens == 131_072


def test_llama3_longrope_and_gemma3_rope_scaling_do_not_multiply(catalog):
    """The same vLLM rule leaves su, longrope and llama3 unscaled: Llama-3.1's own config
    (rope_type llama3, factor 8, original_max_position_embeddings 8,192) serves its
    max_position_embeddings, 131,072, not 8 x 8,192 = 65,536 nor 8 x 131,072. Gemma 3 is skipped
    by model type (its 128K already scaled: google/gemma-3-27b-it's rope_scaling linear factor 8).
    dynamic and linear multiply max_position_embeddings: 32,768 x 2 = 65,536."""
    llama = catalog.model("llama-3.1-8b")
    assert llama.max_position_embeddings == 131_072 and llama.max_context_tokens == 131_072
    assert llama.context_words == "max_position_embeddings 131,072"
    longrope = {"type": "longrope", "long_factor": [1.0] * 48, "short_factor": [1.0] * 48, "factor": 32.0, "original_max_position_embeddings": 4096}
    assert arch_from_config({**QWEN25_7B, "rope_scaling": longrope}, name="m", source="t").max_context_tokens == 32_768
    gemma = {**QWEN25_7B, "model_type": "gemma3_text", "max_position_embeddings": 131_072, "rope_scaling": {"factor": 8.0, "rope_type": "linear"}}
    assert arch_from_config(gemma, name="m", source="t").max_context_tokens == 131_072
    for kind in ("dynamic", "linear"):
        m = arch_from_config({**QWEN25_7B, "rope_scaling": {"type": kind, "factor": 2.0}}, name="m", source="t")
        assert m.max_context_tokens == 65_536 and m.max_position_embeddings == 32_768
    # transformers v5 spells it rope_parameters, per layer type or not
    m = arch_from_config({**QWEN25_7B, "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768, "rope_theta": 1e6}}, name="m", source="t")
    assert m.max_context_tokens == 131_072
    m = arch_from_config({**QWEN25_7B, "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e6}}}, name="m", source="t")
    assert m.max_context_tokens == 32_768


@pytest.mark.parametrize(
    "rope, rows",
    [
        pytest.param(None, (), id="none: one cache of max_position_embeddings"),
        pytest.param(QWEN_YARN, (131_072,), id="yarn: 32,768 original x 4"),
        pytest.param({"type": "linear", "factor": 2.0}, (65_536,), id="linear: 32,768 x 2"),
        pytest.param({"type": "dynamic", "factor": 2.0}, (65_536,), id="dynamic: 32,768 x 2"),
        pytest.param({"type": "longrope", "long_factor": [1.0] * 64, "short_factor": [1.0] * 64, "original_max_position_embeddings": 4096}, (4096 + 32_768,), id="longrope: short 4,096 + long 32,768"),
        pytest.param({"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192, "low_freq_factor": 1.0, "high_freq_factor": 4.0}, (), id="llama3: unscaled"),
        pytest.param({"full_attention": {"rope_type": "linear", "factor": 8.0}, "sliding_attention": {"rope_type": "default"}}, (262_144, 32_768), id="per layer type: two"),
        pytest.param({"full_attention": {"rope_type": "default"}, "sliding_attention": {"rope_type": "default"}}, (), id="per layer type, one parameter set: one"),
    ],
)
def test_each_rope_cache_has_the_rows_vllm_builds(rope, rows):
    """vLLM's get_rope (vllm/model_executor/layers/rotary_embedding/): LinearScaling and
    DynamicNTKScaling cache max_position_embeddings x factor rows, YaRN
    original_max_position_embeddings x factor, Phi3LongRoPE the short and the long cache one after
    the other, the rest max_position_embeddings; one instance per distinct parameter set. () is the
    single cache of max_position_embeddings (32,768 here) rows."""
    key = "rope_parameters" if rope and "full_attention" in rope else "rope_scaling"
    m = arch_from_config({**QWEN25_7B, **({key: rope} if rope else {})}, name="m", source="t")
    assert m.rope_cache_rows == rows
    assert VllmPolicy.rotary_cache_bytes(m) == sum(rows or (32_768,)) * 128 * 2
    assert engine_policy("trtllm").rotary_cache_bytes(m) == 32_768 * 128 * 2  # its own tables: unchanged


def test_phi_3_longrope_short_cache_is_the_configs_original_length():
    """Phi-3 (microsoft/Phi-3.5-mini-instruct) gives original_max_position_embeddings 4,096 at the
    config's top level, beside max_position_embeddings 131,072, and a longrope rope_scaling without
    it; transformers' rope validation copies the top-level figure into the rope parameters, with
    priority, and vLLM's Phi3LongRoPE builds a short cache of 4,096 rows and a long one of 131,072.
    The rows were taken as 131,072 + 131,072 (the rope's own field absent: max_position_embeddings)."""
    rope = {"type": "longrope", "long_factor": [1.0] * 64, "short_factor": [1.0] * 64}
    m = arch_from_config({**QWEN25_7B, "max_position_embeddings": 131_072, "original_max_position_embeddings": 4096, "rope_scaling": rope}, name="m", source="t")
    assert m.rope_cache_rows == (4096 + 131_072,)
    assert VllmPolicy.rotary_cache_bytes(m) == (4096 + 131_072) * 128 * 2


def test_gemma_3_has_a_local_rope_beside_its_scaled_global_one():
    """google/gemma-3-4b-it: rope_scaling linear x 8 on 131,072 positions for the global layers,
    rope_local_base_freq 10,000 for the sliding ones: (131,072 x 8 + 131,072) x 256 x 2 B =
    576 MiB (tests/test_vllm_logs.py checks it against vLLM 0.19's logs)."""
    from sizer.model import load_config_json

    m = load_config_json(Path(__file__).resolve().parent / "data" / "vllm_logs" / "configs" / "google--gemma-3-4b-it_config.json")
    assert m.rope_cache_rows == (1_048_576, 131_072) and m.rotary_dim == 256
    assert VllmPolicy.rotary_cache_bytes(m) == 576 * 2**20


def test_a_bad_rope_factor_is_one_line_naming_the_field(tmp_path):
    cfg = dict(QWEN25_7B, rope_scaling={"type": "yarn", "factor": "four", "original_max_position_embeddings": 32768})
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    proc = run_sizer("explain", "--model", "config.json", "--device", "H100-SXM", cwd=tmp_path)
    assert_one_line_error(proc, 6, f"error: {tmp_path / 'config.json'}: rope_scaling.factor", "expected a number")


# ------------------------------------------------------------------------------------------------
# 3. a config that gives no length
# ------------------------------------------------------------------------------------------------


def test_a_config_without_a_length_takes_vllms_2048_and_says_so(tmp_path):
    """vLLM's _get_and_verify_max_len, where none of its length keys is in the config: "Assuming
    the model's maximum length is 2048" (default_max_len = 2048, with a warning;
    vllm-project/vllm@18ec6629253632af0a384f2ffbb8c6b28af322e7:vllm/config/model.py), also
    transformers' LlamaConfig default. Before, sizer took 4,096 without a word. Another of vLLM's
    length keys (ChatGLM's seq_length) is read as vLLM reads it, the smallest given counting."""
    cfg = {k: v for k, v in QWEN25_7B.items() if k != "max_position_embeddings"}
    m = arch_from_config(cfg, name="m", source="test")
    assert m.max_position_embeddings == 2_048 and m.max_context_tokens == 2_048
    assert any(w.startswith("max_position_embeddings: not in the config") and "2,048 tokens, vLLM's default" in w for w in m.warnings), m.warnings
    assert arch_from_config({**cfg, "seq_length": 32_768}, name="m", source="t").max_context_tokens == 32_768
    assert arch_from_config({**cfg, "seq_length": 32_768, "max_sequence_length": 8_192}, name="m", source="t").max_context_tokens == 8_192
    assert not arch_from_config({**cfg, "seq_length": 32_768}, name="m", source="t").warnings

    (tmp_path / "nolen").mkdir()
    (tmp_path / "nolen" / "config.json").write_text(json.dumps(cfg))
    proc = run_sizer("explain", "--model", "./nolen", "--device", "H100-SXM", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "2,048 tokens, vLLM's default" in proc.stderr
    out = json.loads(proc.stdout)
    assert any("2,048 tokens, vLLM's default" in w for w in out["warnings"])
    assert "--max-model-len 2048" in out["launch_command"]  # explain's default context: the model's


# ------------------------------------------------------------------------------------------------
# 4. memory.max_model_len beyond the model's context
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["solve", "compare", "simulate"])
def test_a_max_model_len_beyond_the_models_context_is_refused(command, tmp_path):
    """vLLM refuses a --max-model-len above the derived max_model_len at start-up ("User-specified
    max_model_len (...) is greater than the derived max_model_len", a ValueError unless
    VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: _get_and_verify_max_len,
    vllm-project/vllm@18ec6629253632af0a384f2ffbb8c6b28af322e7:vllm/config/model.py). Before, solve
    planned `--max-model-len 1000000` for llama-3.1-8b (131,072 positions) with a warning that
    0.000 % of requests were refused. Now it is a value out of range, exit 7, naming the file,
    memory.max_model_len and the model's 131,072."""
    (tmp_path / "w.yaml").write_text(_workload("llama-3.1-8b", "memory:\n  max_model_len: 1000000\n"))
    proc = run_sizer(command, "w.yaml", cwd=tmp_path)
    assert_one_line_error(proc, 7, "error: w.yaml: memory.max_model_len", "1,000,000 exceeds llama-3.1-8b's context", "at most 131,072", "vLLM refuses")


def test_max_model_len_is_checked_against_the_rope_scaled_context(catalog, tmp_path):
    """Qwen2.5-7B with YaRN factor 4 on 32,768 positions serves 131,072 (item 2): a
    max_model_len of 131,072 is taken as given, 131,073 refused naming the rope scaling."""
    from sizer.errors import FieldValueError

    (tmp_path / "yarn").mkdir()
    (tmp_path / "yarn" / "config.json").write_text(json.dumps({**QWEN25_7B, "rope_scaling": QWEN_YARN}))
    for length in (131_072, 131_073):
        (tmp_path / f"w{length}.yaml").write_text(_long("./yarn", f"memory:\n  max_model_len: {length}\n"))
    assert load_workload(tmp_path / "w131072.yaml", catalog).max_model_len == 131_072
    with pytest.raises(FieldValueError, match=r"memory\.max_model_len: 131,073 exceeds yarn's context \(131,072 positions \(original_max_position_embeddings 32,768 x rope_scaling yarn factor 4"):
        load_workload(tmp_path / "w131073.yaml", catalog)


@pytest.mark.parametrize("group, origin, bytes_per_param", [(128, "gptq 4-bit g128", (128 * 4 + 16 + 4) / 128 / 8), (-1, "gptq 4-bit per-channel", 0.5)])
def test_a_gptq_group_is_named_as_the_config_gives_it(group, origin, bytes_per_param):
    """GPTQ's group_size -1 is one scale per output channel (AutoGPTQ's BaseQuantizeConfig): the
    origin says "per-channel", not the stand-in group of 10**9 it is sized with (it printed
    "g1000000000"); 4-bit values with an fp16 scale and a 4-bit zero per group of 128 are
    (128 x 4 + 16 + 4) / 128 bits = 0.5195 bytes a weight, per channel 0.5 to 1e-8."""
    m = arch_from_config(_qwen3_8b(quantization_config={"quant_method": "gptq", "bits": 4, "group_size": group}), name="q", source="test")
    assert m.quant.origin == f"config.json quantization_config {origin}"
    assert m.quant.bytes_per_param == pytest.approx(bytes_per_param, abs=1e-8)
