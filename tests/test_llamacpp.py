"""llama.cpp plans: GGUF weight types and as many slots as the GPU holds.

llama.cpp serves GGUF files, whose weight types are ggml's (ggml/include/ggml.h enum ggml_type:
F16, BF16, Q8_0, Q4_0, ..., MXFP4); there is no FP8 type (ggml-org/llama.cpp#27512, open). Its
server allocates n_ctx = -np slots x a slot's context cells at start and runs at most -np
sequences (LLAMA_MAX_SEQ, src/llama-cparams.h: 64 before ggml-org/llama.cpp#15916, 256 after)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from sizer.candidates import LLAMACPP_MAX_SLOTS, evaluate_candidates
from sizer.engines import EngineOverrides, LlamaCppPolicy, configuration_breakdown
from sizer.errors import FieldValueError
from sizer.explain import explain_config
from sizer.memory import KvFormat
from sizer.model import total_weight_bytes
from sizer.workload import load_workload
from sizer.units import GIB
from tests.test_bad_input import assert_one_line_error, run_sizer
from tests.test_first_hour import _explain_json

WORKLOAD = """\
name: lc
model: {model}
engine: llamacpp
traffic:
  requests_per_s: 2
  prompt_tokens: 1000
  output_tokens: 200
slo:
  ttft_s: {{p99: 5}}
  tpot_s: {{p99: 0.2}}
memory:
  max_model_len: 4096
search:
  devices: [{device}]
  tp: [1]
  pp: [1]
  kv_dtypes: [f16]
{weights}"""


def _workload(tmp_path: Path, model="llama-3.1-8b", device="L40S", weights="  weight_dtypes: [q8_0]\n") -> Path:
    path = tmp_path / "lc.yaml"
    path.write_text(WORKLOAD.format(model=model, device=device, weights=weights))
    return path


def test_q8_0_weights_are_34_bytes_per_32(catalog):
    # Llama-3.1-8B (config.json: hidden 4096, intermediate 14336, 32 heads, 8 KV heads, 32 layers):
    # linear weights a layer q 4096x4096 + k, v 4096x1024 + o 4096x4096 + gate, up, down 3x4096x14336
    # = 218,103,808; x 32 layers = 6,979,321,856, in Q8_0 blocks (32 int8 + an fp16 scale = 34 B a
    # block, ggml-common.h block_q8_0). The other 1,050,939,392 of its 8,030,261,248 parameters
    # (embeddings, lm_head, norms) are counted in 16 bits.
    linear = 32 * (4096 * 4096 * 2 + 4096 * 1024 * 2 + 3 * 4096 * 14336)
    assert linear == 6_979_321_856
    expected = linear * 34 / 32 + (8_030_261_248 - linear) * 2
    assert total_weight_bytes(catalog.model("llama-3.1-8b"), "q8_0") == expected == 9_517_408_256
    # Q4_0: 16 bytes of nibbles and an fp16 scale a block of 32 (block_q4_0)
    assert total_weight_bytes(catalog.model("llama-3.1-8b"), "q4_0") == linear * 18 / 32 + (8_030_261_248 - linear) * 2


def test_llamacpp_defaults_to_gguf_types(catalog, tmp_path):
    w = load_workload(_workload(tmp_path, weights=""), catalog)
    assert w.search.weight_dtypes == ("bf16", "q8_0")
    w = load_workload(_workload(tmp_path, model="gpt-oss-20b", weights=""), catalog)
    assert w.search.weight_dtypes == ("mxfp4",)  # gpt-oss's own MXFP4 experts, which convert_hf_to_gguf.py keeps


@pytest.mark.parametrize(
    "model, weights, needles",
    [
        ("llama-3.1-8b", "fp8", ["no FP8 type", "llama.cpp#27512", "q8_0"]),
        ("llama-3.1-8b", "int8", ["q8_0", "8.5 bits"]),
        ("llama-3.1-8b", "int4", ["q4_0", "4.5 bits"]),
        ("llama-3.1-8b", "mxfp4", ["MXFP4 checkpoints", "bf16"]),
        ("llama-3.1-8b", "nvfp4", ["no nvfp4 GGUF type"]),
    ],
)
def test_llamacpp_refuses_weights_it_has_no_gguf_type_for(tmp_path, model, weights, needles):
    path = _workload(tmp_path, model=model, weights=f"  weight_dtypes: [bf16, {weights}]\n")
    proc = run_sizer("solve", path, cwd=tmp_path)
    assert_one_line_error(proc, 7, f"error: {path}: search.weight_dtypes[1]", "llamacpp", *needles)


def test_other_engines_refuse_gguf_block_types(catalog, tmp_path):
    path = tmp_path / "v.yaml"
    path.write_text(WORKLOAD.format(model="llama-3.1-8b", device="L40S", weights="  weight_dtypes: [q8_0]\n").replace("engine: llamacpp", "engine: vllm").replace("kv_dtypes: [f16]", "kv_dtypes: [bf16]"))
    proc = run_sizer("solve", path, cwd=tmp_path)
    assert_one_line_error(proc, 7, f"error: {path}: search.weight_dtypes[0]", "GGUF block type", "vLLM")
    with pytest.raises(FieldValueError, match="no FP8 type"):
        explain_config(catalog.model("llama-3.1-8b"), catalog.gpu("L40S"), tp=1, pp=1, kv_dtype="f16", weight_dtype="fp8", engine="llamacpp")


def test_llamacpp_plan_fills_the_gpu_with_slots(catalog, tmp_path):
    """The plan's -np is the largest slot count whose fixed cache fits beside the weights, worked
    out here by hand (L40S, Q8_0 weights, llama-server's compute buffer and CUDA context), and one
    slot more does not fit."""
    path = _workload(tmp_path)
    path.write_text(path.read_text().replace("max_model_len: 4096", "max_model_len: 16384"))
    w = load_workload(path, catalog)
    [e] = [e for e in evaluate_candidates(w, catalog) if e.memory is not None and e.stage not in ("memory",)]
    m, s = e.memory, e.engine
    # f16 K and V: 2 x 32 layers x 8 heads x 128 x 2 B = 131,072 B a cell; a slot is 16,384 cells (2 GiB)
    assert m.kv_bytes_per_token_per_gpu == 131_072
    slot_bytes = 16384 * 131_072
    # free beside the weights, by hand: L40S's 44.52 GiB (catalog: deviceQuery's 47,803,596,800 B) less the Q8_0
    # weights (9,517,408,256 B, the test above), the compute buffer of one 512-token micro-batch (n_ubatch) of fp32
    # logits and activations, 512 x (128,256 + 4 x 4,096) x 4 B = 296,222,720 B, and the 0.3 GiB CUDA context
    # (LlamaCppPolicy.INIT_BYTES): 35.08 GiB, 17 slots of 2 GiB
    free = 44.52 * GIB - 9_517_408_256 - 512 * (128_256 + 4 * 4_096) * 4 - 0.3 * GIB
    assert m.weights_bytes_per_gpu == 9_517_408_256 and m.runtime_buffer_bytes_per_gpu == 296_222_720
    assert m.usable_memory_bytes - m.weights_bytes_per_gpu - m.runtime_buffer_bytes_per_gpu - m.runtime_overhead_bytes_per_gpu == pytest.approx(free)
    slots = min(int(free // slot_bytes), LLAMACPP_MAX_SLOTS)
    assert slots == 17
    assert s.n_parallel == s.max_num_seqs == m.max_concurrency == slots
    assert 4 < slots < LLAMACPP_MAX_SLOTS  # more than llama-server's default of 4, fewer than its ceiling
    _, more = configuration_breakdown(
        w.model, catalog.gpu("L40S"), engine="llamacpp", version=None, tp=1, pp=1, weight_dtype="q8_0", kv=KvFormat.of("f16"),
        context_tokens=w.admitted_context_tokens, max_model_len=16384, overrides=EngineOverrides(n_parallel=slots + 1),
    )
    assert more.max_concurrency < slots + 1  # one slot more does not fit
    line = LlamaCppPolicy().launch_command(w.model, tp=1, pp=1, kv=KvFormat.of("f16"), weight_dtype="q8_0", settings=s, max_num_seqs=slots)
    args = shlex.split(line.split("  #")[0])
    assert args[args.index("-np") + 1] == str(slots) and args[args.index("-c") + 1] == str(slots * 16384)
    assert args[args.index("-m") + 1] == "llama-3.1-8b-Q8_0.gguf"
    assert "convert_hf_to_gguf.py meta-llama/Llama-3.1-8B-Instruct --outtype q8_0" in line


def test_llamacpp_slots_stop_at_the_engine_ceiling(catalog, tmp_path):
    # a short context on an 80 GB GPU: far more slots fit than llama.cpp runs
    path = _workload(tmp_path, device="H100-SXM")
    path.write_text(path.read_text().replace("max_model_len: 4096", "max_model_len: 1536"))
    w = load_workload(path, catalog)
    [e] = [e for e in evaluate_candidates(w, catalog) if e.engine is not None and e.stage not in ("memory",)]
    assert e.engine.n_parallel == LLAMACPP_MAX_SLOTS == 64


def test_llamacpp_slots_set_by_the_workload_are_kept(catalog, tmp_path):
    path = _workload(tmp_path)
    path.write_text(path.read_text().replace("  max_model_len: 4096\n", "  max_model_len: 4096\n  n_parallel: 3\n"))
    w = load_workload(path, catalog)
    [e] = [e for e in evaluate_candidates(w, catalog) if e.engine is not None and e.stage not in ("memory",)]
    assert e.engine.n_parallel == 3


# --- llama-server's flags in `sizer explain` -----------------------------------------------------


def test_llamacpp_launch_lines_paste_into_explain(catalog, tmp_path):
    """Every llama.cpp candidate's launch line pastes into `sizer explain --engine llamacpp` as
    printed (-m <model>-<TYPE>.gguf, -c, -np, -ngl, --cache-type-k/-v, --flash-attn, and for a
    layer split --split-mode layer --tensor-split 1,1) and gives the candidate's slots and pool."""
    from sizer.optimize import _launch_command

    path = _workload(tmp_path, device="L4")
    text = path.read_text().replace("devices: [L4]", "devices: [L4, RTX-4090]").replace("pp: [1]", "pp: [1, 2]").replace("kv_dtypes: [f16]", "kv_dtypes: [f16, q8_0]")
    path.write_text(text.replace("  weight_dtypes: [q8_0]\n", "  weight_dtypes: [bf16, q8_0, q4_0]\n"))
    w = load_workload(path, catalog)
    placed = [e for e in evaluate_candidates(w, catalog) if e.memory is not None and e.stage != "memory"]
    assert len(placed) == 2 * 2 * 2 * 3 and {e.config.pp for e in placed} == {1, 2}
    for e in placed:
        line = _launch_command(w, e)
        argv = shlex.split(line.split("  # ")[0])
        assert argv[0] == "llama-server"
        got = _explain_json("--engine", "llamacpp", "--device", e.config.device, *argv[1:])
        assert (got["weight_dtype"], got["kv_pool_bytes_per_gpu"], got["max_concurrency"]) == (
            e.config.weight_dtype, e.memory.kv_pool_bytes_per_gpu, e.engine.n_parallel), line


def test_llamacpp_launch_line_of_a_config_json_model_pastes_with_its_config(catalog, tmp_path):
    """A model given as a config.json path: the plan's line names its GGUF file after the model's
    name (gemma-3-4b-it-Q8_0.gguf, from the id the config records), which no catalog resolves, so the
    line is pasted with `--model <the config>` as a vLLM line is; explain refused the two as
    contradicting ("-m gives model_spec google--gemma-3-4b-it, which contradicts the same option
    given as .../google--gemma-3-4b-it_config.json"). It now gives the candidate's pool; an -m
    named after another model is still refused."""
    from sizer.optimize import _launch_command

    config = Path(__file__).parent / "data" / "vllm_logs" / "configs" / "google--gemma-3-4b-it_config.json"
    path = _workload(tmp_path, model=str(config))
    w = load_workload(path, catalog)
    [e] = [e for e in evaluate_candidates(w, catalog) if e.memory is not None and e.stage != "memory"]
    argv = shlex.split(_launch_command(w, e).split("  # ")[0])
    # named after the Hugging Face id the config records (_name_or_path google/gemma-3-4b-it)
    assert argv[:3] == ["llama-server", "-m", "gemma-3-4b-it-Q8_0.gguf"] and w.model.hf_id == "google/gemma-3-4b-it"
    got = _explain_json("--engine", "llamacpp", "--device", e.config.device, "--model", str(config), *argv[1:])
    assert (got["weight_dtype"], got["kv_pool_bytes_per_gpu"], got["max_concurrency"]) == (e.config.weight_dtype, e.memory.kv_pool_bytes_per_gpu, e.engine.n_parallel)
    proc = run_sizer("explain", "--engine", "llamacpp", "--device", "L40S", "--model", config, "-m", "llama-3.1-8b-Q8_0.gguf", cwd=tmp_path)
    assert_one_line_error(proc, 2, "error: -m gives model_spec llama-3.1-8b, which contradicts the same option given as")


def test_llamacpp_explain_concurrency_is_at_most_the_slots():
    """llama-server serves -np sequences at most. gpt-oss-20b, -c 65536 -np 8 on an L40S, under a
    release before the sliding-window cache (b5000: every layer 65,536 cells, 3.00 GiB): 12 of its
    24 layers keep 128 tokens, so a sequence's cells come to 195 MiB and floor(3.00 GiB / 195 MiB)
    = 15; explain said "max concurrency at 8,192: 15" beside its own "maximum concurrency for
    8,192 tokens per request: 8.00x". A plan's admission is capped at the slots
    (candidates._cap_admission); explain is too."""
    got = _explain_json("--model", "gpt-oss-20b", "--device", "L40S", "--engine", "llamacpp", "-c", "65536", "-np", "8", "--engine-version", "b5000")
    assert got["kv_pool_bytes_per_gpu"] == 65536 * 24 * 2048
    assert got["engine_max_concurrency"] == 8.0 and got["max_concurrency"] == 8
    line = next(ln for ln in got["lines"] if ln["label"].startswith("max concurrency at"))
    assert line["value"] == "8" and line["formula"].endswith("at most the 8 slots (-np)")


def test_llamacpp_sliding_layers_keep_their_own_smaller_cache():
    """llama_kv_cache_iswa (ggml-org/llama.cpp#13194; src/llama-kv-cache-iswa.cpp): the full layers
    get n_ctx cells, the sliding-window ones GGML_PAD(min(a stream's cells, n_swa x (unified ?
    n_seq_max : 1) + n_ubatch), 256) a stream. gpt-oss-20b (24 layers, 12 sliding of 128 tokens; 8
    KV heads x 64 x 2 B x K and V = 2,048 B a layer and token), -c 65536 -np 8 (8 streams of 8,192):
    12 x 2,048 x 65,536 = 1.5 GiB for the full layers and 12 x 2,048 x 8 x pad256(128 + 512) =
    12 x 2,048 x 6,144 = 144 MiB for the sliding ones, 1.64 GiB where every layer's 65,536 cells
    were counted (3.00 GiB). Unified (-np not given: 4 slots, -c 32768): one stream of
    pad256(4 x 128 + 512) = 1,024 cells."""
    got = _explain_json("--model", "gpt-oss-20b", "--device", "L40S", "--engine", "llamacpp", "-c", "65536", "-np", "8")
    assert got["kv_pool_bytes_per_gpu"] == 12 * 2048 * 65536 + 12 * 2048 * 8 * 768
    assert got["kv_tokens"] == 65536 and got["max_concurrency"] == 8
    unified = _explain_json("--model", "gpt-oss-20b", "--device", "L40S", "--engine", "llamacpp", "-c", "32768")
    assert unified["kv_pool_bytes_per_gpu"] == 12 * 2048 * 32768 + 12 * 2048 * 1024


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["-np", "8"], 2, "-np/--parallel is llama-server's: add --engine llamacpp"),
        (["--engine", "llamacpp", "--n-parallel", "3", "-np", "8"], 2, "-np gives n_parallel 8, which contradicts the same option given as 3"),
        (["--engine", "llamacpp", "--weight-dtype", "bf16", "-m", "llama-3.1-8b-Q8_0.gguf"], 2, "contradicts the same option given as bf16"),
        (["--engine", "llamacpp", "-q", "fp8", "-m", "llama-3.1-8b-Q8_0.gguf"], 2, "give it or --quantization, not both"),
        (["--engine", "llamacpp", "-m", "llama-3.1-8b.gguf"], 7, "error: -m llama-3.1-8b.gguf: expected a GGUF file named <model>-<type>.gguf"),
        (["--engine", "llamacpp", "-m", "llama-3.1-8b-Q8_0.gguf", "-ngl", "20"], 7, "error: -ngl 20: llama-3.1-8b has 32 layers"),
        (["--engine", "llamacpp", "--split-mode", "row"], 7, "error: --split-mode row: sizer sizes llama.cpp's layer split"),
        (["--engine", "llamacpp", "--cache-type-v", "q8_0", "--flash-attn", "off"], 7, "error: --flash-attn off: llama.cpp quantises the V cache (q8_0) only with flash attention"),
        (["--engine", "llamacpp", "--tensor-split", "3,1"], 7, "error: --tensor-split 3,1: sizer sizes an even layer split"),
        (["--engine", "llamacpp", "-c", "2", "-np", "4"], 7, "error: -c 2: fewer cells than the 4 slots"),
    ],
)
def test_llama_server_flags_refused_with_one_line(tmp_path, args, code, message):
    base = [] if "-m" in args else ["--model", "llama-3.1-8b"]
    proc = run_sizer("explain", *base, "--device", "L40S", *args, cwd=tmp_path)
    if code == 2:  # click's usage error: its usage lines, then the one error line
        assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    else:
        assert_one_line_error(proc, code, message)  # the line starts with the flag and what is wrong with it


def test_llama_server_flags_read_as_sizers_own(catalog):
    """-c / -np is a slot's context, --cache-type-k/-v the K/V pair, --tensor-split's shares the
    layer split's GPUs, -m's file type the weights: the same explanation as sizer's own options."""
    ours = _explain_json("--model", "llama-3.1-8b", "--device", "L4", "--engine", "llamacpp", "--weight-dtype", "q4_0", "--n-parallel", "6",
                         "--max-model-len", "4096", "--kv-dtype", "q8_0/q4_0", "--pp", "2")
    line = _explain_json("--device", "L4", "--engine", "llamacpp", "-m", "llama-3.1-8b-Q4_0.gguf", "-np", "6", "-c", str(6 * 4096), "-ngl", "999",
                         "--cache-type-k", "q8_0", "--cache-type-v", "q4_0", "--flash-attn", "on", "--split-mode", "layer", "--tensor-split", "1,1")
    assert ours == line


def test_ctx_size_without_slots_is_read_with_a_warning(tmp_path):
    """-c without -np: llama-server's slots then depend on its build (1 before
    ggml-org/llama.cpp#16736, 4 sharing a unified cache since), so the reading is said."""
    proc = run_sizer("explain", "--model", "llama-3.1-8b", "--device", "L40S", "--engine", "llamacpp", "-c", "16384", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "-c 16384 without -np: read as 4 slots of 4,096 cells each" in proc.stderr and "llama.cpp#16736" in proc.stderr
    import json

    assert json.loads(proc.stdout)["max_model_len"] == 4096


def test_llamacpp_explain_runtime_buffers_name_no_rotary_cache():
    """llama.cpp builds no rotary cos/sin table (the rope is applied in ggml's kernels): its runtime
    buffer is the compute buffer alone (LlamaCppPolicy.breakdown: n_ubatch 512 x (vocab + 4 x
    hidden) x 4 B). explain's line named vLLM's rotary caches in it ("rotary cos/sin cache (1048576
    + 131072) x 256 x 2 B, llama.cpp compute buffer" for Gemma-3-4B: 576 MiB beside a value of
    0.52 GiB). gpt-oss-20b: 512 x (201,088 + 4 x 2,880) x 4 B."""
    got = _explain_json("--model", "gpt-oss-20b", "--device", "L40S", "--engine", "llamacpp", "-c", "8192", "-np", "1")
    line = next(ln for ln in got["lines"] if ln["label"] == "- runtime buffers")
    assert "rotary" not in line["formula"] and line["formula"].startswith("llama.cpp compute buffer")
    assert got["runtime_buffer_bytes_per_gpu"] == 512 * (201_088 + 4 * 2_880) * 4


def test_llamacpp_explain_names_the_unified_sliding_cache_rule():
    """Without -np, llama-server's 4 slots share one cache, whose sliding-window part is
    pad256(min(n_ctx, n_swa x slots + n_ubatch)) = pad256(4 x 128 + 512) = 1,024 cells for
    gpt-oss-20b (what the pool counts). explain's line gave the -np rule beside it, "min(slot
    cells, n_swa + n_ubatch) a slot", which reads 4 x 768 = 3,072."""
    got = _explain_json("--model", "gpt-oss-20b", "--device", "L40S", "--engine", "llamacpp", "-c", "32768")
    line = next(ln for ln in got["lines"] if ln["label"] == "KV blocks per GPU")
    assert "keep 1,024" in line["formula"] and "n_swa x slots + n_ubatch" in line["formula"] and "a slot," not in line["formula"]
    split = _explain_json("--model", "gpt-oss-20b", "--device", "L40S", "--engine", "llamacpp", "-c", "65536", "-np", "8")
    line = next(ln for ln in split["lines"] if ln["label"] == "KV blocks per GPU")
    assert "keep 6,144" in line["formula"] and "min(slot cells, n_swa + n_ubatch) a slot" in line["formula"]
