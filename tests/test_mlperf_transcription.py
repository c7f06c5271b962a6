"""A user's measurement file transcribed from MLPerf summaries the way people write them: MLPerf's
own benchmark names, the FP4 format's several spellings, a system's name where the device goes, a
software cell holding a comma, a system total without its `replicas`. Each is read as the run it
was, or skipped or warned about, never silently read as another run.

The figures are AMD's MLPerf Inference v5.0 8 x MI325X llama2-70b Offline run (33,928.1 tokens/s,
the shipped table's row) and scaled copies of it; they only carry the rows through the reader."""

from __future__ import annotations

import json

import pytest

from sizer.measurements import Resolved, Skipped, read_csv, resolve
from sizer.validate import build_setup, predict

HEADER = "id,model_path,system,backend,backend_version,precision,kv_dtype,kind,dataset,tp_size,replicas,output_tokens_per_s\n"


def _resolved(tmp_path, catalog, body: str) -> dict:
    path = tmp_path / "mine.csv"
    path.write_text(HEADER + body)
    return {r.row.row_id: r for r in (resolve(x, catalog) for x in read_csv(path))}


def test_mlperfs_bare_benchmark_names_are_read_as_mlperf_runs(tmp_path, catalog):
    """MLPerf names four benchmarks without an accuracy suffix (llama3.1-8b, mixtral-8x7b,
    llama3.1-405b, deepseek-r1: README "Datasets"). Such a name in `dataset` gave the MLPerf
    lengths but not the MLPerf reading (its harness's release label and FP8 KV cache): 3,422
    against 4,883 tokens/s a GPU for the same run. Read by either name, the row is the same run:
    its dataset is named `mlperf-*`, its KV cache FP8, its prediction identical."""
    body = "".join(
        f"{name},meta-llama/Llama-3.1-8B-Instruct,mi300x,vllm,0.9.2,fp8,,offline,{ds},1,8,48000\n"
        for name, ds in (("bare", "llama3.1-8b"), ("named", "mlperf-llama3.1-8b"), ("suffixed", "llama3.1-8b-99"))
    )
    res = _resolved(tmp_path, catalog, body)
    assert all(isinstance(r, Resolved) for r in res.values())
    assert {k: r.row.dataset for k, r in res.items()} == dict.fromkeys(res, "mlperf-llama3.1-8b")
    assert {k: r.kv_dtype for k, r in res.items()} == dict.fromkeys(res, "fp8")
    assert {r.row.engine_version for r in res.values()} == {"mlperf-0.9.2"}
    pred = predict(build_setup(list(res.values())))
    assert pred.output_tokens_per_s[0] == pred.output_tokens_per_s[1] == pred.output_tokens_per_s[2]


def test_a_catalogs_own_dataset_of_a_bare_name_is_not_taken_for_mlperfs(tmp_path, catalog):
    """The bare name is MLPerf's only where the catalog holds no dataset of that name: a user's
    catalog with its own `llama3.1-8b` lengths keeps them, and the row is no MLPerf run."""
    import shutil

    import yaml

    root = tmp_path / "cat"
    shutil.copytree(catalog.root, root)
    path = root / "datasets.yaml"
    doc = yaml.safe_load(path.read_text())
    mine = dict(doc["datasets"]["mlperf-llama3.1-8b"])
    mine.pop("latency_bounds", None)
    doc["datasets"]["llama3.1-8b"] = mine
    path.write_text(yaml.safe_dump(doc))
    from sizer.catalog import load_catalog

    own = load_catalog(root)
    (res,) = _resolved(tmp_path, own, "bare,meta-llama/Llama-3.1-8B-Instruct,mi300x,vllm,0.9.2,fp8,,offline,llama3.1-8b,1,8,48000\n").values()
    assert isinstance(res, Resolved) and res.row.dataset == "llama3.1-8b" and res.kv_dtype == "bf16"


def test_every_spelling_of_fp4_runs_mlperfs_fp8_cache(tmp_path, catalog):
    """`fp4`, `nvfp4`, `MXFP4` name one FP4 precision (the device's format); with no kv_dtype an
    MLPerf row of any of them runs the FP8 KV cache submitters pair with quantised weights, where
    `nvfp4` and `MXFP4` read BF16 (13-16 % lower throughput). PyTorch's `fp8_e4m3fn` is FP8."""
    body = "".join(
        f"{name},meta-llama/Llama-2-70b-chat-hf,{system},{engine},{version},{precision},,offline,llama2-70b-99,1,8,99500\n"
        for name, system, engine, version, precision in (
            ("mi-fp4", "mi355x", "vllm", "0.9.2", "fp4"),
            ("mi-mxfp4", "mi355x", "vllm", "0.9.2", "MXFP4"),
            ("b-fp4", "b200_sxm", "trtllm", "mlperf-v5.1", "fp4"),
            ("b-nvfp4", "b200_sxm", "trtllm", "mlperf-v5.1", "nvfp4"),
            ("b-e4m3fn", "b200_sxm", "trtllm", "mlperf-v5.1", "fp8_e4m3fn"),
        )
    )
    res = _resolved(tmp_path, catalog, body)
    assert {k: (r.weight_dtype, r.kv_dtype) for k, r in res.items()} == {
        "mi-fp4": ("mxfp4", "fp8"),
        "mi-mxfp4": ("mxfp4", "fp8"),
        "b-fp4": ("nvfp4", "fp8"),
        "b-nvfp4": ("nvfp4", "fp8"),
        "b-e4m3fn": ("fp8", "fp8"),
    }
    pred = predict(build_setup([res["mi-fp4"], res["mi-mxfp4"], res["b-fp4"], res["b-nvfp4"]]))
    assert pred.output_tokens_per_s[0] == pred.output_tokens_per_s[1] and pred.output_tokens_per_s[2] == pred.output_tokens_per_s[3]


def test_a_chip_several_devices_share_is_refused_in_every_spelling(tmp_path, catalog):
    """`H200` is H200-SXM or H200-NVL, `H100` three devices: a workload may take the catalog's alias
    (the SXM part), a measurement may not, whose figures are its own device's (an H200-NVL run read
    as SXM is predicted 34 % faster: the Dell XE7740 llama3.1-8b Offline row). `8 x H200` and `H200`
    are refused alike, saying the chip is ambiguous; `8 x H200-SXM` names its device."""
    body = "".join(
        f"{name},meta-llama/Llama-2-70b-chat-hf,{system},trtllm,mlperf-v5.1,fp8,,offline,llama2-70b-99,1,8,33500\n"
        for name, system in (("bare", "H200"), ("counted", "8 x H200"), ("vendor", "NVIDIA H200"), ("h100", "H100"), ("sxm", "8 x H200-SXM"), ("tpu", "TPUv5e"))
    )
    res = _resolved(tmp_path, catalog, body)
    assert isinstance(res["sxm"], Resolved) and res["sxm"].gpu.name == "H200-SXM"
    for name in ("bare", "counted", "vendor"):
        assert isinstance(res[name], Skipped)
        assert res[name].reason.startswith(f"system {res[name].row.system!r} names a chip the GPU catalog holds as 2 devices (H200-NVL, H200-SXM)")
    assert "3 devices (H100-NVL, H100-PCIe, H100-SXM)" in res["h100"].reason
    assert res["tpu"].reason == "system 'TPUv5e' is not in the GPU catalog"


def test_an_unquoted_comma_in_any_row_skips_that_row_only(tmp_path, catalog):
    """MLPerf's software column (`TensorRT 10.11, CUDA 12.9`) pasted unquoted makes a record one
    cell longer than the header. Anywhere in the file (not only the first row), that row is
    skipped with the reason and the file's other rows are read: the whole file was refused
    ("Expected 13 fields in line 3, saw 14") when the row was not the first."""
    ok = "ok,meta-llama/Llama-2-70b-chat-hf,h200_sxm,trtllm,mlperf-v5.1,fp8,,offline,llama2-70b-99,1,8,33500\n"
    bad = "bad,meta-llama/Llama-2-70b-chat-hf,h200_sxm,TensorRT 10.11, CUDA 12.9,mlperf-v5.1,fp8,,offline,llama2-70b-99,1,8,33500\n"
    for body in (ok + bad, bad + ok, ok + bad + ok.replace("ok,", "ok2,")):
        res = _resolved(tmp_path, catalog, body)
        assert isinstance(res["ok"], Resolved)
        assert isinstance(res["bad"], Skipped) and res["bad"].reason == "13 cells where the header has 12: a value holding an unquoted comma?"


def test_a_header_naming_a_column_twice_is_refused(tmp_path):
    """Which of two `precision` cells a row means is unknown: the file is refused naming the column."""
    from sizer.errors import FieldValueError

    path = tmp_path / "mine.csv"
    path.write_text(HEADER.replace("kv_dtype", "precision") + "a,meta-llama/Llama-2-70b-chat-hf,h200_sxm,trtllm,,fp8,fp8,offline,llama2-70b-99,1,8,33500\n")
    with pytest.raises(FieldValueError, match=r"column 'precision': named twice in the header"):
        read_csv(path)


def test_transcription_slips_are_warned_about_and_a_copy_is_covered_once(tmp_path):
    """Rows that read as written but whose cells disagree get a warning line each (stderr and JSON
    `warnings`), and are scored as written:
    - `8xMI355X_2xEPYC_9575F` counts 8 GPUs; a TP1 row with `replicas` empty reads the system's
      throughput as one GPU's (the 99,500 tokens/s of a system of eight), a TP8 row with replicas 8
      claims 64 GPUs;
    - Llama-3.1-405B on mlperf-llama2-70b takes another benchmark's lengths;
    and a run given twice is one figure in interval_coverage, as in every other statistic."""
    path = tmp_path / "mine.csv"
    rows = (
        "norep,meta-llama/Llama-2-70b-chat-hf,8xMI355X_2xEPYC_9575F,vllm,0.9.2,fp4,,offline,llama2-70b-99,1,,99500\n"
        "tp8x8,meta-llama/Llama-2-70b-chat-hf,8xMI355X_2xEPYC_9575F,vllm,0.9.2,fp4,,offline,llama2-70b-99,8,8,99500\n"
        "good,meta-llama/Llama-2-70b-chat-hf,8xMI355X_2xEPYC_9575F,vllm,0.9.2,fp4,,offline,llama2-70b-99,1,8,99500\n"
        "again,meta-llama/Llama-2-70b-chat-hf,8xMI355X_2xEPYC_9575F,vllm,0.9.2,fp4,,offline,llama2-70b-99,1,8,99500\n"
        "other,meta-llama/Llama-3.1-405B-Instruct,mi355x,vllm,0.9.2,fp4,,offline,llama2-70b-99,8,1,9950\n"
        "same,meta-llama/Llama-3.1-405B-Instruct-FP8,mi355x,vllm,0.9.2,fp8,,offline,llama3.1-405b,8,1,9950\n"
    )
    path.write_text(HEADER + rows)
    from click.testing import CliRunner

    from sizer.cli import cli

    r = CliRunner().invoke(cli, ["validate", "--measurements", str(path), "--format", "json"], catch_exceptions=False)
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    lines = doc["warnings"]
    assert len(lines) == 3, lines
    assert lines[0] == (
        f"{path}: row 'norep': system '8xMI355X_2xEPYC_9575F' counts 8 GPUs, the row's layout x replicas 1 x 1 = 1 "
        "(the system's rate and throughput are divided among `replicas` copies; replicas 8 if the system ran 8 copies of the layout)"
    )
    assert "row 'tp8x8'" in lines[1] and "8 x 8 = 64" in lines[1] and "replicas 1 if the system ran 1 copy of the layout" in lines[1]
    assert lines[2] == f"{path}: row 'other': model llama-3.1-405b on dataset mlperf-llama2-70b, MLPerf's benchmark of llama-2-70b: the row is read with that benchmark's lengths (and latency bounds)"
    by_id = {x["id"]: x for x in doc["rows"]}
    assert by_id["again"]["copy_of"] == "good"
    assert doc["summary"]["copies"] == 1
    scored = [x for x in doc["rows"] if x["copy_of"] is None and x["throughput_ape"] is not None]
    assert doc["summary"]["interval_figures"] == len(scored)


@pytest.mark.parametrize(
    ("system", "count"),
    [
        ("8xMI355X_2xEPYC_9575F", 8),
        ("ESC8000A_E13P_RTX_PRO_6000_PCIE_96GBx8_TRT", 8),
        ("8 x H100-NVL", 8),
        ("Dell PowerEdge XE9680 (8x H100-SXM-80GB, TensorRT)", 8),
        ("C245M8_H100NVL_94GBx2_TRT", 2),
        ("87xMI355X_22xEPYC_9575F", 87),
        ("GB200-NVL72_GB200-186GB_aarch64x4_TRT", None),  # the host's count only
        ("mi355x", None),
    ],
)
def test_a_systems_name_counts_its_gpus_not_its_hosts(system, count):
    """MLPerf's system names count the accelerators (`8xMI355X`, `96GBx8`, `8x H100`) and the
    host CPUs (`2xEPYC`, `aarch64x4`): the GPUs' count is the one the replicas check reads."""
    from sizer.validate import system_gpu_count

    assert system_gpu_count(system) == count


def test_a_checkpoint_named_by_its_tensors_formats_is_its_base_models(tmp_path, catalog):
    """AMD's MLPerf checkpoints name each tensor's format and the quantiser
    (`amd/Llama-2-70b-chat-hf-WMXFP4-AMXFP4-KVFP8-Scale-UINT8-SQ`: weights and activations MXFP4,
    KV FP8, UINT8 scales, SmoothQuant) and NVIDIA's a version after the format
    (`nvidia/DeepSeek-R1-0528-FP4-v2`): both are checkpoints of catalog models, the row's precision
    giving the format, where they read as models not in the catalog. A model's own version word
    (DeepSeek-V2) is not dropped."""
    from sizer.measurements import checkpoint_architecture

    body = (
        "amd,amd/Llama-2-70b-chat-hf-WMXFP4-AMXFP4-KVFP8-Scale-UINT8-SQ,mi355x,vllm,0.9.2,fp4,,offline,llama2-70b-99,1,8,99500\n"
        "nv,nvidia/DeepSeek-R1-0528-FP4-v2,b200_sxm,trtllm,mlperf-v5.1,fp4,,offline,deepseek-r1,8,1,9000\n"
        "none,amd/Llama-2-70b-chat-hf-WMXFP4-AMXFP4-KVFP8-Scale-UINT8-SQ,mi355x,vllm,0.9.2,,,offline,llama2-70b-99,1,8,99500\n"
    )
    res = _resolved(tmp_path, catalog, body)
    assert res["amd"].model_name == "llama-2-70b" and res["nv"].model_name == "deepseek-r1"
    assert isinstance(res["none"], Skipped) and "stored as AMXFP4/KVFP8/WMXFP4, but the row gives no precision" in res["none"].reason
    assert checkpoint_architecture("deepseek-ai/DeepSeek-V2") == ("", ())
    # a model's version before the format is the model's (it resolved so before, and must still)
    assert checkpoint_architecture("amd/DeepSeek-V3-MXFP4")[0] == "deepseek-v3"
    assert checkpoint_architecture("RedHatAI/DeepSeek-V3-FP8-dynamic")[0] == "deepseek-v3"


def test_a_header_with_spaces_around_its_names_and_two_ttft_columns(tmp_path):
    """`id, model_path, ...` (a space after each comma) and ` silicon_ttft_ms ` name the columns
    they show: read, not "required column is missing" or a TTFT silently empty. Two columns of
    the same figure (silicon_ttft_ms and ttft_ms) read the first and warn that the second is
    ignored."""
    from click.testing import CliRunner

    from sizer.cli import cli
    from sizer.measurements import column_warnings

    path = tmp_path / "spaced.csv"
    path.write_text(
        "id, model_path, system, backend, precision, isl, osl, concurrency, tp_size, silicon_ttft_ms , ttft_ms, silicon_tpot_ms\n"
        "a,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,vllm,fp8,1024,128,8,1,50,60,10\n"
    )
    (row,) = read_csv(path)
    assert row.invalid is None and row.ttft_ms == 50.0 and row.tpot_ms == 10.0
    assert column_warnings(path) == [f"{path}: columns 'silicon_ttft_ms' and 'ttft_ms' both give the mean TTFT: 'silicon_ttft_ms' is read, 'ttft_ms' ignored"]
    r = CliRunner().invoke(cli, ["validate", "--measurements", str(path), "--format", "json"], catch_exceptions=False)
    assert r.exit_code == 0 and json.loads(r.stdout)["rows"][0]["measured_ttft_ms"] == 50.0


def test_an_id_given_to_two_rows_is_warned_about(tmp_path):
    """Two rows of one file under one id are scored apart (they may be different runs), with a
    warning: a row named by its id (in `--rows`, in a note) is not one row."""
    from click.testing import CliRunner

    from sizer.cli import cli

    path = tmp_path / "twice.csv"
    body = "".join(
        f"{i},meta-llama/Llama-2-70b-chat-hf,mi355x,vllm,0.9.2,fp4,,offline,llama2-70b-99,1,8,{x}\n" for i, x in (("a", 99500), ("a", 88000), ("b", 77000))
    )
    path.write_text(HEADER + body)
    r = CliRunner().invoke(cli, ["validate", "--measurements", str(path), "--format", "json"], catch_exceptions=False)
    doc = json.loads(r.stdout)
    assert len(doc["rows"]) == 3
    assert doc["warnings"] == [f"{path}: 1 id given to more than one row ('a'): the rows are scored apart, but a row named by its id is not one row"]
