"""A new user's first hour (issue 14, points 3, 4, 5, 7 and 8): vLLM's flag spellings on
`explain`, device names as nvidia-smi and rocm-smi print them, model ids with their variants,
one labelled concurrency figure per context; a --max-model-len that admits every request the
workload can send and the share it refuses; config.json fields sizer does not model named in
warnings; the launch line's model id; `--help` with examples and exit codes; the Python API."""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
from click.testing import CliRunner

import sizer
from sizer.catalog import device_key, model_key
from sizer.errors import FieldValueError
from sizer.cli import cli
from sizer.errors import UnknownNameError
from sizer.model import load_config_json
from sizer.workload import LengthDist, admitting_length, load_workload, refused_fraction

CONFIGS = Path(__file__).parent / "data" / "model_configs"


def _run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _explain_json(*args: str) -> dict:
    result = _run("explain", *args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# --- point 3: vLLM's spellings, device names, model ids, one concurrency figure per context ----


def test_explain_takes_vllm_flag_spellings():
    """The flags vLLM's launch line prints give the same explanation as sizer's own."""
    ours = _explain_json("--model", "llama-3.1-70b", "--device", "H100-SXM", "--tp", "4", "--pp", "1", "--kv-dtype", "fp8", "--weight-dtype", "fp8", "--max-num-seqs", "256")
    vllm = _explain_json(
        "--model", "llama-3.1-70b", "--device", "H100-SXM", "--tensor-parallel-size", "4", "--pipeline-parallel-size", "1",
        "--kv-cache-dtype", "fp8", "--quantization", "fp8", "--max-num-seqs", "256",
    )  # fmt: skip
    short = _explain_json("--model", "llama-3.1-70b", "--device", "H100-SXM", "-tp", "4", "-pp", "1", "--kv-cache-dtype", "fp8_e4m3", "-q", "fp8", "--max-num-seqs", "256")
    assert ours == vllm == short
    assert ours["tp"] == 4 and ours["weight_dtype"] == "fp8" and ours["kv_dtype"] == "fp8" and ours["max_num_seqs"] == 256
    # the launch line's flags, pasted back, explain the same configuration
    assert "--tensor-parallel-size 4" in ours["launch_command"] and "--kv-cache-dtype fp8" in ours["launch_command"]
    both = _run("explain", "--model", "llama-3.1-70b", "--device", "H100-SXM", "--weight-dtype", "fp8", "--quantization", "fp8")
    assert both.exit_code == 2 and "not both" in both.output


@pytest.mark.parametrize(
    "printed, device",
    [
        ("NVIDIA H100 80GB HBM3", "H100-SXM"),
        ("NVIDIA H100 PCIe", "H100-PCIe"),
        ("NVIDIA H100 NVL", "H100-NVL"),
        ("NVIDIA H200", "H200-SXM"),
        ("NVIDIA H200 NVL", "H200-NVL"),
        ("NVIDIA A100-SXM4-80GB", "A100-80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100-40GB"),
        ("NVIDIA A100 80GB PCIe", "A100-80GB-PCIe"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA A10G", "A10G"),
        ("NVIDIA GeForce RTX 4090", "RTX-4090"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000"),
        ("NVIDIA B200", "B200"),
        ("NVIDIA B300 SXM6 AC", "B300"),
        ("NVIDIA GB200", "GB200"),
        ("NVIDIA H20", "H20"),
        ("NVIDIA GH200 480GB", "GH200-96GB"),
        ("NVIDIA GH200 120GB", "GH200-96GB"),
        ("NVIDIA GH200 144G HBM3e", "GH200-144GB"),
        ("AMD Instinct MI300X", "MI300X"),
        ("AMD Instinct MI300X VF", "MI300X"),
        ("AMD Instinct MI325X", "MI325X"),
        ("AMD Instinct MI355X", "MI355X"),
        ("AMD Instinct MI350X", "MI350X"),
    ],
)
def test_device_names_as_nvidia_smi_and_rocm_smi_print_them(catalog, printed, device):
    assert catalog.gpu(printed).name == device


@pytest.mark.parametrize(
    "printed, suggestion",
    [
        ("NVIDIA A100-PCIE-40GB", "A100-80GB-PCIe"),
        ("NVIDIA A10", "A10G"),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX-PRO-6000"),
        ("Tesla T4", None),
    ],
)
def test_other_cards_are_not_taken_for_a_catalogued_one(catalog, printed, suggestion):
    """A 40 GB PCIe A100 (1,555 GB/s, 250 W, PCIe Gen4) is neither the 40 GB SXM module nor the
    80 GB PCIe card the catalog has: refused, with the closest name of the same chip suggested."""
    with pytest.raises(UnknownNameError) as info:
        catalog.gpu(printed)
    message = str(info.value)
    assert (f"did you mean '{suggestion}'?" in message) if suggestion else "did you mean" not in message


def test_device_key_by_hand():
    assert device_key("NVIDIA H100 80GB HBM3") == device_key("H100-80GB") == "h10080gb"
    assert device_key("AMD Instinct MI300X OAM") == "mi300x"


@pytest.mark.parametrize(
    "given, entry, served",
    [
        ("meta-llama/Meta-Llama-3.1-8B", "llama-3.1-8b", "meta-llama/Meta-Llama-3.1-8B"),
        ("meta-llama/Llama-3.1-8B", "llama-3.1-8b", "meta-llama/Llama-3.1-8B"),
        ("Meta-Llama-3.1-70B-Instruct", "llama-3.1-70b", "meta-llama/Llama-3.1-70B-Instruct"),
        ("meta-llama/Llama-2-7b-chat-hf", "llama-2-7b", "meta-llama/Llama-2-7b-chat-hf"),
        ("Qwen/Qwen3-8B-Base", "qwen3-8b", "Qwen/Qwen3-8B-Base"),
        ("Qwen/Qwen3-235B-A22B-Instruct-2507", "qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B-Instruct-2507"),
        ("mistralai/Mixtral-8x7B-v0.1", "mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1"),
        ("meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b", "meta-llama/Llama-3.1-70B-Instruct"),
    ],
)
def test_model_ids_with_or_without_their_variants(catalog, given, entry, served):
    """A Hugging Face id of a catalogued architecture resolves to it, and the launch line serves
    the id the user gave (a base model is not its instruct variant)."""
    model = catalog.model(given)
    assert model.name == entry and model.hf_id == served


@pytest.mark.parametrize("given, suggestion", [("llama-3-8b", "llama-3.1-8b"), ("llama-3.1-70", "llama-3.1-70b"), ("qwen3-14b", None), ("meta-llama/Llama-3.2-3B-Instruct", None)])
def test_unknown_models_are_suggested_only_at_the_same_size(catalog, given, suggestion):
    with pytest.raises(UnknownNameError) as info:
        catalog.model(given)
    message = str(info.value)
    assert (f"did you mean '{suggestion}'?" in message) if suggestion else "did you mean" not in message
    assert "sizer catalog models" in message


def test_model_key_by_hand():
    assert model_key("meta-llama/Meta-Llama-3.1-8B-Instruct") == model_key("llama-3.1-8b") == "llama3.18b"
    assert model_key("deepseek-ai/DeepSeek-V3-0324") == "deepseekv3"


def test_one_concurrency_figure_per_context_each_labelled():
    """--max-model-len 32768 without --context-tokens: the concurrency is at 32,768 tokens, the
    context vLLM logs its own figure for; both labelled with their context (issue 14: 7 at
    131,072 beside vLLM's 29.62x at 32,768)."""
    x = _explain_json("--model", "llama-3.1-70b", "--device", "H100-SXM", "--tp", "4", "--kv-dtype", "fp8", "--max-model-len", "32768")
    assert x["context_tokens"] == x["max_model_len"] == 32768
    assert x["max_concurrency"] == math.floor(x["engine_max_concurrency"])  # the same context: the same figure, whole
    labels = [ln["label"] for ln in x["lines"]]
    assert "max concurrency at 32,768" in labels
    logged = next(ln["formula"] for ln in x["lines"] if ln["label"] == "vLLM would log")
    assert "maximum concurrency for 32,768 tokens per request" in logged
    two = _explain_json("--model", "llama-3.1-70b", "--device", "H100-SXM", "--tp", "4", "--kv-dtype", "fp8", "--context-tokens", "7200", "--max-model-len", "32768")
    assert "max concurrency at 7,200" in [ln["label"] for ln in two["lines"]]
    refused = CliRunner().invoke(cli, ["explain", "--model", "llama-3.1-70b", "--device", "H100-SXM", "--context-tokens", "9000", "--max-model-len", "8192"])
    assert refused.exception.exit_code == 7 and "exceed --max-model-len 8,192" in str(refused.exception)


# --- point 4: --max-model-len admits every request the workload can send ----------------------


def test_refused_fraction_by_hand():
    """Prompt log-normal (p50 1,000, p90 3,000), output 200 tokens every time: the share longer
    than L is P(prompt > L - 200) = 1 - Phi((ln(L - 200) - ln 1000) / sigma), sigma = ln 3 / z90."""
    prompt = LengthDist(percentiles=((50.0, 1000.0), (90.0, 3000.0)))
    output = LengthDist(percentiles=((50.0, 200.0),))
    sigma = math.log(3) / NormalDist().inv_cdf(0.9)
    for length in (1200, 5000, 20000):
        expected = 1 - NormalDist().cdf((math.log(length - 200) - math.log(1000)) / sigma)
        assert refused_fraction(prompt, output, length) == pytest.approx(expected, rel=1e-9)
    # the default admits 99.99 %: the least L whose refused share is at most 1e-4
    length = admitting_length(prompt, output)
    assert refused_fraction(prompt, output, length) <= 1e-4 < refused_fraction(prompt, output, length - 1)
    # declared maxima: their sum, nothing refused
    capped = LengthDist(percentiles=((50.0, 1000.0), (90.0, 3000.0)), cap=8000.0)
    out_capped = LengthDist(percentiles=((50.0, 200.0), (99.0, 900.0)), cap=1000.0)
    assert admitting_length(capped, out_capped) == 9000 and refused_fraction(capped, out_capped, 9000) == 0.0


def test_the_admitted_share_holds_where_the_outputs_tail_decides_it(catalog, root):
    """reasoning-deepseek-v3: outputs (p50 1,500) outweigh prompts (p50 1,000), and the share longer
    than L is decided by the output's far tail. Integrated the other way round, over the prompt on
    a normal grid of 240,001 points to +-12 sd (E_prompt[P(output > L - prompt)], the two fitted
    log-normals), the launch line's L admits all but 1e-4 within 0.5 %; the 22,941 tokens an
    equal-probability grid of 4,000 output points gave refused 1.31e-4 (Monte Carlo on 2e8 draws:
    1.312e-4)."""
    w = load_workload(root / "workloads" / "reasoning-deepseek-v3.yaml", catalog)
    p, o = w.traffic.prompt_tokens, w.traffic.output_tokens
    z = np.linspace(-12.0, 12.0, 240_001)
    dens = np.exp(-0.5 * z**2)
    dens /= dens.sum()
    prompt = np.exp(p.mu + p.sigma * z)

    def refused(length: float) -> float:
        rest = length - prompt
        with np.errstate(divide="ignore"):
            zz = (np.log(np.maximum(rest, 1e-300)) - o.mu) / o.sigma
        surv = np.where(rest <= 0, 1.0, 0.5 * np.vectorize(math.erfc)(zz / math.sqrt(2)))
        return float(np.dot(dens, surv))

    assert w.max_model_len == 24032
    assert refused(w.max_model_len) == pytest.approx(1e-4, rel=0.005)
    assert refused(22941) == pytest.approx(1.31e-4, rel=0.01)
    assert refused_fraction(p, o, 22941) == pytest.approx(refused(22941), rel=0.005)


def test_the_plan_launches_a_max_model_len_that_admits_the_workload(catalog, root):
    """chat: p99 prompt + p99 output is 7,200 tokens, which 0.69 % of requests exceed; the launch
    line admits all but 0.01 %, and the plan says so."""
    from sizer.optimize import solve
    from sizer.report import plan_to_dict

    w = load_workload(root / "workloads" / "chat-llama-3.1-70b.yaml", catalog)
    t = w.traffic
    assert refused_fraction(t.prompt_tokens, t.output_tokens, w.context_tokens) > 0.005  # the old default refused this many
    assert w.max_model_len == admitting_length(t.prompt_tokens, t.output_tokens) > w.context_tokens
    assert w.refused_fraction == pytest.approx(1e-4, rel=0.05)
    d = plan_to_dict(solve(w, catalog))
    assert f"--max-model-len {w.max_model_len}" in d["deployments"][0]["launch_command"]
    assert d["workload"]["max_model_len"] == w.max_model_len and d["workload"]["refused_fraction"] == pytest.approx(1e-4, rel=0.05)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_the_admits_line_names_the_engine_and_the_flag_its_launch_line_sets(catalog, root, engine):
    """The `admits` line says which engine refuses the longer requests and by which flag, and the
    plan's launch line sets that flag to the length the line names (it said vLLM and
    --max-model-len under every engine)."""
    import yaml

    from sizer.optimize import solve
    from sizer.report import admission_line, plan_to_dict

    raw = yaml.safe_load((root / "workloads" / "chat-llama-3.1-70b.yaml").read_text())
    raw["engine"] = engine
    if engine != "vllm":
        del raw["memory"]["gpu_memory_utilization"]
    w = load_workload(raw, catalog)
    label, flag = {"vllm": ("vLLM", "--max-model-len"), "sglang": ("SGLang", "--context-length"), "trtllm": ("TensorRT-LLM", "--max_seq_len")}[engine]
    line = admission_line(w)
    assert f"({label} refuses longer ones)" in line and f"up to {w.max_model_len:,} tokens ({flag})" in line, line
    assert f"{flag} {w.max_model_len}" in plan_to_dict(solve(w, catalog))["deployments"][0]["launch_command"]


@pytest.mark.parametrize("name", ["chat-llama-3.1-70b", "agents-gpt-oss-120b"])
def test_the_plan_reports_the_pool_its_launch_line_gets(catalog, root, name):
    """Each vLLM launch line of a plan (its deployments and every device's best), its flags pasted
    into `sizer explain`, gives the pool the plan reports. vLLM's profiling pass samples
    --max-num-seqs rows of logits, and the launch line lowers that cap to what the pool holds, so
    the plan's pool is the one profiled at the launch line's cap (candidates._as_launched). Before,
    it was the pool at the default 1,024 sequences: 58 of the shipped workloads' 62 launch lines
    would log a larger pool than the plan said (chat's H100-SXM tp=2, 446,144 tokens against
    437,408)."""
    import shlex

    from sizer.optimize import solve
    from sizer.report import plan_to_dict

    w = load_workload(root / "workloads" / f"{name}.yaml", catalog)
    d = plan_to_dict(solve(w, catalog))
    takes = ("--tensor-parallel-size", "--pipeline-parallel-size", "--quantization", "--kv-cache-dtype", "--max-model-len",
             "--max-num-seqs", "--max-num-batched-tokens", "--gpu-memory-utilization", "--block-size")
    rows = d["deployments"] + d["alternatives"]
    assert len(rows) >= 4
    lowered = 0
    for x in rows:
        argv = shlex.split(x["launch_command"].split("&&")[-1])
        assert argv[:2] == ["vllm", "serve"]
        flags = [a for i, a in enumerate(argv) if (a in takes) or (i > 0 and argv[i - 1] in takes)]
        got = _explain_json("--model", argv[2], "--device", x["device"], *flags)
        assert (got["kv_tokens"], got["kv_pool_bytes_per_gpu"]) == (x["kv_tokens"], x["kv_pool_bytes_per_gpu"]), x["launch_command"]
        cap = got["max_num_seqs"]
        assert x["max_concurrency"] >= cap  # the cap it launches is one its own pool holds
        default = _explain_json("--model", argv[2], "--device", x["device"])["max_num_seqs"]  # vLLM's for the device
        if cap < default:
            lowered += 1
            # ... and the largest such: one sequence more, profiled at that cap, is more than the pool
            # holds at the workload's percentile context (before the bisection, gpt-oss-120b's RTX-4090
            # tp=4 launched 44 where 52 held)
            more = [str(cap + 1) if i > 0 and flags[i - 1] == "--max-num-seqs" else a for i, a in enumerate(flags)]
            above = _explain_json("--model", argv[2], "--device", x["device"], *more, "--context-tokens", str(w.context_tokens))
            assert above["max_concurrency"] < cap + 1, (x["launch_command"], above["max_concurrency"])
    assert lowered >= 2  # the case the rule is for: caps below vLLM's default


@pytest.mark.parametrize("engine", ["sglang", "trtllm"])
def test_sglang_and_trtllm_launch_lines_paste_into_explain(catalog, root, tmp_path, monkeypatch, engine):
    """An SGLang or TensorRT-LLM plan's launch lines paste into `sizer explain --engine E` as they
    are printed (SGLang's --model-path, --context-length, --page-size, --chunked-prefill-size ...;
    trtllm-serve's --tp_size, --max_batch_size, --max_seq_len, --extra_llm_api_options with the
    file the line writes first) and give the pool the plan reports. A TensorRT-LLM line serves the
    checkpoint it names, so its weight format is given as the plan's (the line's note says so)."""
    import re
    import shlex

    import yaml

    from sizer.optimize import solve
    from sizer.report import plan_to_dict

    raw = yaml.safe_load((root / "workloads" / "chat-llama-3.1-70b.yaml").read_text())
    raw["engine"] = engine
    del raw["memory"]["gpu_memory_utilization"]  # vLLM's; each engine's own default applies
    d = plan_to_dict(solve(load_workload(raw, catalog), catalog))
    monkeypatch.chdir(tmp_path)
    rows = d["deployments"] + d["alternatives"]
    assert len(rows) >= 4
    for x in rows:
        line = x["launch_command"].split("  # ")[0]
        if "&&" in line:  # trtllm-serve's options file, written first
            echo, line = line.split("&&")
            content, name = re.fullmatch(r"\s*echo '(.*)' > (\S+)\s*", echo).groups()
            (tmp_path / name).write_text(content)
        argv = shlex.split(line)
        if engine == "sglang":
            assert argv[:4] == ["python3", "-m", "sglang.launch_server", "--model-path"]
            args = argv[3:]
        else:
            assert argv[0] == "trtllm-serve"
            args = ["--model", argv[1], *argv[2:], "--weight-dtype", x["weight_dtype"]]
        got = _explain_json("--engine", engine, "--device", x["device"], *args)
        assert (got["kv_tokens"], got["kv_pool_bytes_per_gpu"]) == (x["kv_tokens"], x["kv_pool_bytes_per_gpu"]), x["launch_command"]


def test_other_engines_spellings_are_refused_under_another_engine():
    """An SGLang or trtllm-serve spelling given under another --engine is an error, not that flag
    read under the other engine's rule; so is one contradicting the same option in vLLM's spelling."""
    for args, message in (
        (["--context-length", "8192"], "--context-length is SGLang's spelling: add --engine sglang"),
        (["--max_batch_size", "64"], "--max_batch_size is TensorRT-LLM's spelling: add --engine trtllm"),
        (["--engine", "sglang", "--max_batch_size", "64"], "--max_batch_size is TensorRT-LLM's spelling"),
        (["--engine", "trtllm", "--tp", "4", "--tp_size", "2"], "--tp_size 2 contradicts the same option given as 4"),
        (["--engine", "trtllm", "--tp", "1", "--tp_size", "2"], "--tp_size 2 contradicts the same option given as 1"),  # 1 given, not the default
        (["--engine", "sglang", "--tp", "2", "--tp-size", "4"], "--tp-size 4 contradicts the same option given as 2"),
        (["--backend", "pytorch"], "--backend is trtllm-serve's: add --engine trtllm"),
    ):
        result = CliRunner().invoke(cli, ["explain", "--model", "llama-3.1-70b", "--device", "H100-SXM", *args])
        assert result.exit_code == 2 and message in result.output, (args, result.output)


def test_vllm_refuses_to_start_when_the_pool_cannot_hold_one_max_model_len_request(catalog, tmp_path):
    """vLLM's check_enough_kv_cache_memory: a candidate whose pool holds fewer than one
    max_model_len request is rejected, in numbers."""
    from sizer.candidates import evaluate_candidates

    p = tmp_path / "w.yaml"
    p.write_text(
        "model: llama-3.1-70b\ntraffic: {requests_per_s: 1, prompt_tokens: 1000, output_tokens: 100}\n"
        "memory: {max_model_len: 131072}\nsearch: {devices: [H100-SXM], tp: [2], pp: [1], kv_dtypes: [bf16], weight_dtypes: [bf16]}\n"
    )
    (e,) = evaluate_candidates(load_workload(p, catalog), catalog)
    assert e.stage == "memory" and "vLLM refuses to start" in e.reason and "131,072-token request" in e.reason


# --- point 5: fields sizer does not model, and the launch line's model id ---------------------


def test_gemma4_and_llama4_fields_sizer_does_not_model_are_named():
    gemma = load_config_json(CONFIGS / "google--gemma-4-26B-A4B_config.json")
    named = " | ".join(gemma.warnings)
    for field in ("global_head_dim = 512", "num_global_key_value_heads = 2", "attention_k_eq_v = true", "enable_moe_block"):
        assert field in named, field
    # Llama 4's chunked attention and Gemma 4's vision tower are modelled (issue 12): no warning;
    # Kimi-K2.5's vision tower is not counted, and says so
    llama4 = load_config_json(CONFIGS / "meta-llama--Llama-4-Scout-17B-16E-Instruct_config.json")
    assert llama4.attention_chunk_size == 8192 and llama4.warnings == ()
    assert not any(w.startswith("vision_config") for w in gemma.warnings) and gemma.vision_params > 0
    kimi = load_config_json(CONFIGS / "moonshotai--Kimi-K2.5_config.json")
    assert kimi.warnings == ("vision_config = a section: the vision encoder's weights and activations are not counted",)
    glm = load_config_json(CONFIGS / "zai-org--GLM-5_config.json")
    assert any("index_topk" in w and "sparse attention" in w for w in glm.warnings)
    # the architectures sizer models in full warn of nothing
    for name in ("meta-llama--Meta-Llama-3.1-70B_config.json", "deepseek-ai--DeepSeek-V3_config.json", "openai--gpt-oss-120b_config.json", "Qwen--Qwen3-235B-A22B_config.json",
                 "Qwen--Qwen3.5-397B-A17B_config.json"):
        assert load_config_json(CONFIGS / name).warnings == (), name


def _config(tmp_path: Path, name: str, **extra) -> Path:
    cfg = {
        "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072, "torch_dtype": "bfloat16",
    }  # fmt: skip
    cfg.update(extra)
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


def test_other_configs_fields_are_found_by_the_mechanism_not_a_list_of_models(tmp_path):
    """Phi-3's sliding window with no layer rule, Falcon's multi_query, Nemotron-H's hybrid
    pattern, an unknown shape field: each named; token ids and training settings are not."""
    phi3 = load_config_json(_config(tmp_path, "phi3", model_type="phi3", sliding_window=2047))
    assert any(w.startswith("sliding_window = 2,047") and "every layer holds the whole context" in w for w in phi3.warnings)
    falcon = load_config_json(_config(tmp_path, "falcon", model_type="falcon", multi_query=True, num_key_value_heads=None))
    assert falcon.num_key_value_heads == 1  # FalconConfig's multi_query: one KV head (model.ATTRIBUTE_NAMES), said
    assert any("num_key_value_heads 1" in w for w in falcon.warnings)
    custom = load_config_json(_config(tmp_path, "custom", model_type="custom", multi_query=True, num_key_value_heads=None))
    assert any(w.startswith("multi_query = true") for w in custom.warnings)  # a type sizer has no rule for: named
    with pytest.raises(FieldValueError, match=r"config\.json: hybrid_override_pattern: state-space \(Mamba\)"):
        load_config_json(_config(tmp_path, "nemotron", hybrid_override_pattern="M-M-M*-"))  # refused, not sized as attention layers
    odd = load_config_json(_config(tmp_path, "odd", num_memory_layers=4, bos_token_id=1, initializer_range=0.02, router_aux_loss_coef=0.1))
    assert [w.split(" = ")[0] for w in odd.warnings] == ["num_memory_layers"]


def test_warnings_reach_stderr_and_the_json(root, tmp_path):
    folder = tmp_path / "gemma"
    folder.mkdir()
    (folder / "config.json").write_text((CONFIGS / "google--gemma-4-26B-A4B_config.json").read_text())
    w = tmp_path / "w.yaml"
    w.write_text(
        "model: gemma\ntraffic: {requests_per_s: 1, prompt_tokens: 1000, output_tokens: 100}\n"
        "search: {devices: [H100-SXM], tp: [1], pp: [1], kv_dtypes: [bf16], weight_dtypes: [bf16]}\n"
    )
    result = _run("solve", str(w), "--format", "json")
    assert result.exit_code == 0, result.output
    d = json.loads(result.stdout)
    assert any("global_head_dim" in x for x in d["warnings"])
    assert all(f"warning: {x}" in result.stderr for x in d["warnings"])
    # no Hugging Face id in the config: the launch line serves the folder, and says so
    assert d["deployments"][0]["launch_command"].startswith(f"vllm serve {folder}")
    assert any("set served_model_name" in x for x in d["warnings"])
    named = tmp_path / "named.yaml"
    named.write_text(w.read_text() + "served_model_name: google/gemma-4-26B-A4B\n")
    d2 = json.loads(_run("solve", str(named), "--format", "json").stdout)
    assert d2["deployments"][0]["launch_command"].startswith("vllm serve google/gemma-4-26B-A4B ")
    assert not any("served_model_name" in x for x in d2["warnings"])


def test_a_config_name_or_path_gives_the_launch_id(tmp_path):
    folder = _config(tmp_path, "ckpt", _name_or_path="acme/Acme-8B-Instruct")
    assert load_config_json(folder).hf_id == "acme/Acme-8B-Instruct"


# --- point 7: --help ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["solve", "compare", "sweep", "explain", "catalog", "validate", "simulate"])
def test_help_has_examples_and_exit_codes(command):
    text = _run(command, "--help").output
    assert "Examples:" in text and "Exit codes:" in text and "11  simulate" in text
    assert f"sizer {command}" in text.split("Examples:", 1)[1]


def test_the_command_list_is_not_cut_mid_sentence():
    text = _run("--help").output
    commands = text.split("Commands:", 1)[1].split("Exit codes:", 1)[0]
    assert "..." not in commands and "Exit codes:" in text


# --- point 8: the Python API ---------------------------------------------------------------------


def test_load_workload_takes_a_dict_and_plans_become_dataframes(catalog):
    import pandas as pd

    w = load_workload(
        {
            "model": "llama-3.1-8b",
            "traffic": {"requests_per_s": 5, "prompt_tokens": {"p50": 500, "p99": 2000}, "output_tokens": 200},
            "slo": {"ttft_s": 1.0, "tpot_s": 0.05},
            "search": {"devices": ["H100-SXM", "L40S"], "tp": [1], "pp": [1]},
        },
        catalog,
    )
    assert w.name == "workload" and w.path == "<dict>" and w.traffic.requests_per_s == 5
    plan = sizer.solve(w, catalog)
    frame = sizer.plan_to_frame(plan)
    assert isinstance(frame, pd.DataFrame) and list(frame["role"]) == ["plan", "alternative"]
    assert {"device", "tp", "replicas", "cost_usd_per_hour", "launch_command"} <= set(frame.columns)
    assert frame.loc[0, "cost_usd_per_hour"] == pytest.approx(plan.cost_usd_per_hour)
    import datetime

    table = sizer.comparison_to_frame(sizer.compare(w, catalog), as_of=datetime.date(2026, 12, 1))
    assert list(table["device"]) == ["L40S", "H100-SXM"] and table["feasible"].all()
    # the price's provenance and the evidence ride along as columns (README, Python API)
    assert table["price_source"].notna().all() and (table["price_age_days"] >= 0).all()
    assert set(table["evidence_basis"]) <= {"measured", "datasheet x global factors"}
    with pytest.raises(sizer.InputError, match=r"<dict>: traffic: required section is missing"):
        load_workload({"model": "llama-3.1-8b"}, catalog)


def test_compare_and_sweep_stay_functions_once_their_modules_are_imported():
    """`sizer.compare` and `sizer.sweep` name functions of the API and the modules they live in:
    importing the module must not replace the function on the package."""
    import sizer.compare  # noqa: F401
    import sizer.sweep  # noqa: F401

    assert callable(sizer.compare) and callable(sizer.sweep)
    from sizer.compare import comparison_rows

    assert callable(comparison_rows)


def test_the_package_ships_py_typed(root):
    assert (Path(sizer.__file__).parent / "py.typed").is_file()
    assert '"sizer" = ["py.typed"]' in (root / "pyproject.toml").read_text()


def test_a_local_config_is_named_after_the_hugging_face_id_it_records(tmp_path, catalog):
    # a config.json downloaded beside the workload (the file Mistral-7B-Instruct-v0.3 publishes, its
    # `_name_or_path` included) was shown as model "config", its file's stem
    from sizer.catalog import resolve_model

    cfg = {"architectures": ["MistralForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 32768,
           "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "head_dim": 128,
           "torch_dtype": "bfloat16", "vocab_size": 32768, "_name_or_path": "mistralai/Mistral-7B-Instruct-v0.3"}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    model = resolve_model("./config.json", catalog, base_dir=tmp_path)
    assert model.name == "Mistral-7B-Instruct-v0.3" and model.hf_id == "mistralai/Mistral-7B-Instruct-v0.3"
    del cfg["_name_or_path"]
    (tmp_path / "mistral").mkdir()
    (tmp_path / "mistral" / "config.json").write_text(json.dumps(cfg))
    assert resolve_model("./mistral", catalog, base_dir=tmp_path).name == "mistral"  # no id: the folder's name, as before


def test_a_config_saved_under_its_models_name_is_named_and_served_as_that_name(tmp_path, catalog):
    # configs kept side by side outside their checkpoints (the project's shared reference keeps
    # nvidia--Llama-3.1-70B-Instruct-FP8_config.json beside its _hf_quant_config.json) were named
    # after their folder ("model_configs"), served from it, and read without their quantisation
    from sizer.catalog import resolve_model
    from sizer.model import config_file_prefix

    cfg = {"architectures": ["LlamaForCausalLM"], "hidden_size": 8192, "intermediate_size": 28672, "max_position_embeddings": 131072,
           "model_type": "llama", "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8,
           "torch_dtype": "bfloat16", "vocab_size": 128256}
    (tmp_path / "nvidia--Llama-3.1-70B-Instruct-FP8_config.json").write_text(json.dumps(cfg))
    (tmp_path / "nvidia--Llama-3.1-70B-Instruct-FP8_hf_quant_config.json").write_text(
        json.dumps({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": None}}))
    model = resolve_model("./nvidia--Llama-3.1-70B-Instruct-FP8_config.json", catalog, base_dir=tmp_path)
    assert model.name == "nvidia--Llama-3.1-70B-Instruct-FP8"
    assert model.hf_id == "nvidia/Llama-3.1-70B-Instruct-FP8"  # org--name: the Hugging Face cache's spelling of org/name
    assert model.native_weight_dtype == "fp8"  # its own hf_quant_config.json, found by the shared prefix
    w = load_workload({"model": str(tmp_path / "nvidia--Llama-3.1-70B-Instruct-FP8_config.json"), "traffic": {"requests_per_s": 1, "prompt_tokens": 100, "output_tokens": 100},
                       "slo": {"tpot_s": 0.1}}, catalog)
    assert any("as the config's file name reads" in x and "served_model_name" in x for x in w.warnings)
    assert [config_file_prefix(Path(n)) for n in ("config.json", "my-model.json", "phi-2-config.json", "x.config.json")] == [None, "my-model", "phi-2", "x"]
