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

from .test_bad_input import run_sizer

CONFIGS = Path(__file__).parent / "data" / "model_configs"


def _qwen3_8b(**changes) -> dict:
    cfg = json.loads((CONFIGS / "Qwen--Qwen3-8B_config.json").read_text())
    cfg.update(changes)
    return cfg


WORKLOAD = """\
name: limits
model: {model}
traffic:
  requests_per_s: 2
  prompt_tokens: {{p50: 1000, p99: 4000}}
  output_tokens: {{p50: 200, p99: 800}}
slo:
  ttft_s: {{p99: 2.0}}
  tpot_s: {{p99: 0.08}}
search:
  devices: [H100-SXM]
  tp: [1]
  pp: [1]
{extra}"""


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
        path.write_text(WORKLOAD.format(model=f"./{folder}", extra=extra))
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
    (tmp_path / "w.yaml").write_text(WORKLOAD.format(model="./hqq", extra=""))
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
