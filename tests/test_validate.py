"""`sizer validate`: reading measurements, the fit/score split, the predictions against the
shipped table (acceptance figures of issue 4), and the user's own measurements."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from dataclasses import replace

from sizer.measurements import EXPORT_LAYOUT_BASIS, read_csv, resolve, shipped_rows, shipped_split, split_roles, Resolved, Skipped
from sizer.validate import report_dict, summary, to_json, validate_rows, validate_shipped

SMALL = "tests/data/measured_small.csv"


@pytest.fixture(scope="module")
def shipped(catalog):
    return validate_shipped(catalog)


def test_concurrency_counts_every_attention_rank(root):
    """aiconfigurator's batch_size counts requests per attention-DP rank: the MiniMax row
    minimaxm2_5_b300_vllm_fp8_agg_1024x1024_c64... has batch 64, dp 1 -> 64; rows with dp 4 and
    batch 128 ran 512 clients (their silicon_concurrency)."""
    rows = {r.row_id: r for r in read_csv(root / "catalogs" / "measurements" / "aiconfigurator_silicon_sample.csv")}
    assert rows["minimaxm2_5_b300_vllm_fp8_agg_1024x1024_c64_cfg733"].concurrency == 64
    dp_rows = [r for r in rows.values() if r.mode == "agg" and r.attention_dp > 1 and "silicon_concurrency=" in r.source]
    assert dp_rows
    for r in dp_rows:
        stated = float(r.source.split("silicon_concurrency=")[1].split(";")[0])
        assert r.concurrency == stated, r.row_id


def test_throughput_of_a_closed_loop_row_is_derived_from_its_means(root):
    """N x osl / (TTFT + (osl - 1) TPOT): 64 x 1024 / (0.129051 + 1023 x 0.0144957) s = 4,381 tokens/s."""
    r = next(x for x in read_csv(root / SMALL) if x.row_id.startswith("minimaxm2_5"))
    assert r.throughput_tokens_per_s == pytest.approx(64 * 1024 / (0.1290508975616831 + 1023 * 0.014495721370341455), rel=1e-9)


def test_split_is_deterministic_disjoint_by_configuration_and_stratified(catalog):
    rows, roles = shipped_split(catalog)
    assert roles == split_roles(list(reversed(rows)))  # order does not matter
    by_config: dict[str, set[str]] = {}
    for r in rows:
        by_config.setdefault(r.config_key, set()).add(roles[r.row_id])
    assert all(len(v) == 1 for v in by_config.values())  # a sweep is never split
    strata = {(r.family, r.system.lower(), r.engine) for r in rows}
    scored = {(r.family, r.system.lower(), r.engine) for r in rows if roles[r.row_id] == "score"}
    assert strata == scored  # every model family / system / engine appears in scoring


def test_rows_it_cannot_model_are_skipped_with_a_reason(catalog, root):
    out = [resolve(r, catalog) for r in read_csv(root / SMALL)]
    skipped = {s.row.row_id: s.reason for s in out if isinstance(s, Skipped)}
    assert "not in the model catalog" in skipped["my_own_run_1"]
    assert sum(isinstance(r, Resolved) for r in out) == 4
    # tp 16 on an 8-GPU B200 from another source than aiconfigurator's export of InferenceX runs:
    # cross-node parallelism, not modelled
    row = next(r for r in read_csv(root / SMALL) if r.row_id.endswith("cfg615"))
    own = replace(row, source="my lab, 2026-04-01", row_id="mine")
    assert "16 GPUs per stage span more than the 8-GPU NVLink domain" in resolve(own, catalog).reason


def _export_row(row_id: str, tp: int, dp: int, moe_tp: int, moe_ep: int, source: str = "db-dump/2026-04-27; config_id=201", system: str = "b200_sxm"):
    from sizer.measurements import MeasuredRow

    return MeasuredRow(
        row_id=row_id, source=source, origin="t", model_id="deepseek-ai/DeepSeek-V3", system=system, engine="sglang", engine_version="0.5.9",
        precision="fp4", mode="agg", kind="concurrency", isl=1024, osl=1024, concurrency=8, tp=tp, attention_dp=dp, moe_tp=moe_tp, moe_ep=moe_ep,
        ttft_ms=200.0, tpot_ms=9.0,
    )


@pytest.mark.parametrize(
    "recorded, read",
    [
        # InferenceX's tp8 ep8 as aiconfigurator's export wrote it; its 2026-03-25 table has the same
        # run (2026_03_25_deepseek_r1_b200_sxm_sglang_fp4_agg_1024x1024_c32_tp8_0_ep8_0, figure for
        # figure dsr1_b200_sglang_fp4_agg_1024x1024_c32_cfg201) as tp 8 / moe_tp 1 / moe_ep 8
        ((64, 1, 8, 8), (8, 1, 1, 8)),
        ((16, 1, 4, 4), (4, 1, 1, 4)),  # tp4 ep4: dsr1_b200_sglang_fp4_agg_8192x1024_c4_cfg202 = ..._c4_tp4_0_ep4_0_311 (4 / 1 / 1 / 4)
        ((1, 64, 8, 8), (1, 8, 1, 8)),  # attention DP: dsr1_b200_trtllm_fp4_agg_1024x1024_c256_cfg191 = ..._c256_tp8_0_ep8_0 (1 / 8 / 1 / 8)
        ((4, 4, 1, 16), (4, 1, 1, 4)),  # vLLM's tp4 ep4 (the 2026-03-25 table: 4 / 1 / 1 / 4)
        ((32, 1, 8, 4), (8, 1, 2, 4)),  # tp8 ep4: experts in 4 groups, each over 2 GPUs
    ],
)
def test_aiconfigurators_export_of_a_single_node_inferencex_run_is_read_as_the_run(catalog, recorded, read):
    got = resolve(_export_row("dsr1_b200_sglang_fp4_agg_1024x1024_c32_cfg201", *recorded), catalog)
    assert isinstance(got, Resolved), got
    assert (got.row.tp, got.row.attention_dp, got.row.moe_tp, got.row.moe_ep) == read
    assert (got.layout.tp, got.layout.dp, got.layout.ep) == (read[0], read[1], read[3])
    assert got.row.layout_basis == EXPORT_LAYOUT_BASIS


def test_a_run_exported_twice_is_read_once_with_its_sweep(catalog):
    # the database dump repeats the 2026-04-06 table's MiniMax-M2.5 tp2 ep2 runs figure for figure
    # under an id that names no layout (minimaxm2_5_b200_vllm_fp8_agg_1024x1024_c32_cfg690 =
    # 2026_04_06_..._c32_tp2_ep2_1384): read like its twin, and so is the point of the same sweep
    # that has no twin (cfg690 at 512 clients), so that neither the run nor the sweep is split
    from sizer.measurements import copies, read_layouts

    src = "db-dump/2026-04-27; config_id=690"
    named = replace(_export_row("2026_04_06_m_c32_tp2_ep2_1384", 2, 2, 1, 4, source="source_file=2026-04-06.csv"), model_id="MiniMaxAI/MiniMax-M2.5", engine="vllm", precision="fp8")
    dump = replace(named, row_id="m_c32_cfg690", source=src)
    alone = replace(dump, row_id="m_c512_cfg690", concurrency=512, ttft_ms=900.0, tpot_ms=47.0)
    other = replace(dump, row_id="m_c32_cfg1", source="db-dump/2026-04-27; config_id=1", tp=4, attention_dp=1, moe_tp=2, moe_ep=2)
    read = read_layouts([named, dump, alone, other], catalog)
    assert [(r.tp, r.attention_dp, r.moe_tp, r.moe_ep) for r in read[:3]] == [(2, 1, 1, 2)] * 3
    assert all(r.layout_basis == EXPORT_LAYOUT_BASIS for r in read[:3])
    assert (read[3].tp, read[3].moe_ep, read[3].layout_basis) == (4, 2, "")  # its own sweep, named by nothing
    assert copies(read) == {"m_c32_cfg690": "2026_04_06_m_c32_tp2_ep2_1384"}
    report = validate_rows([named, dump, alone], catalog)
    assert {r.row.row_id: r.row.tp for r in report.results} == {"2026_04_06_m_c32_tp2_ep2_1384": 2, "m_c32_cfg690": 2, "m_c512_cfg690": 2}


def test_the_export_reading_needs_evidence(catalog):
    # within the NVLink domain a recorded 4 / 1 / 2 / 2 may be a real tp 4 with two expert groups:
    # read as tp2 ep2 only where the row's id names InferenceX's layout
    as_recorded = resolve(_export_row("qwen3_5_b300_sglang_fp4_agg_8192x1024_c32_cfg736", 4, 1, 2, 2), catalog)
    assert (as_recorded.row.tp, as_recorded.row.moe_ep, as_recorded.row.layout_basis) == (4, 2, "")
    named = resolve(_export_row("2026_04_06_gpt_oss_120b_h200_sxm_trtllm_fp4_agg_8192x1024_c4_tp2_ep2_931", 4, 1, 2, 2, source="source_file=2026-04-06.csv; model=DeepSeek-R1"), catalog)
    assert (named.row.tp, named.row.attention_dp, named.row.moe_tp, named.row.moe_ep) == (2, 1, 1, 2)
    # an id that names another layout than the export pattern gives: the recorded one stands
    other = resolve(_export_row("2026_04_06_x_tp16_ep4_1", 64, 1, 8, 8, source="source_file=2026-04-06.csv"), catalog)
    assert isinstance(other, Skipped) and "NVLink domain" in other.reason
    # a GB200 NVL72 rack holds 64 GPUs in one domain: the recorded layout stands
    rack = resolve(_export_row("dsr1_gb200_sglang_fp4_agg_1024x1024_c32_cfg1", 64, 1, 8, 8, system="gb200"), catalog)
    assert (rack.row.layout_basis, rack.row.tp, rack.row.moe_tp) == ("", 64, 8)


def test_acceptance_on_the_scoring_rows(shipped):
    """Issue 4's bars on rows never used in the fit: TPOT and output throughput median <= 15 %,
    TTFT median <= 25 %; p90 of TPOT and throughput within the figures the closing note reports."""
    s = summary(shipped, "score")["overall"]
    assert s["n"] > 1000
    assert s["tpot_median_ape"] <= 15.0
    assert s["throughput_median_ape"] <= 15.0
    assert s["ttft_median_ape"] <= 25.0
    assert s["tpot_p90_ape"] <= 35.0
    assert s["throughput_p90_ape"] <= 35.0


def test_dense_and_moe_are_both_scored(shipped):
    by = summary(shipped, "score")["by_architecture"]
    assert by["dense"]["n"] > 200 and by["moe"]["n"] > 400
    for arch in ("dense", "moe"):
        assert by[arch]["tpot_median_ape"] <= 15.0, arch


def test_fit_and_score_rows_are_reported_separately(shipped):
    d = report_dict(shipped)
    assert d["roles"]["fit"] > 500 and d["roles"]["score"] > 500
    assert {r["role"] for r in d["rows"]} == {"fit", "score"}
    # a run exported twice (the same figures under another file or label) counts once
    copies = {role: sum(1 for r in d["rows"] if r["role"] == role and r["copy_of"]) for role in ("fit", "score")}
    assert copies["score"] > 0 and d["summary"]["copies"] == copies["score"]
    assert d["summary"]["n"] == d["roles"]["score"] - copies["score"]
    assert d["fit_summary"]["n"] == d["roles"]["fit"] - copies["fit"]
    role = {r["id"]: r["role"] for r in d["rows"]}
    assert all(role[r["copy_of"]] == r["role"] for r in d["rows"] if r["copy_of"])  # never fitted under one label, scored under another


def test_user_measurements_json_contract_and_determinism(root):
    cmd = [sys.executable, "-m", "sizer", "validate", "--measurements", str(root / SMALL), "--format", "json"]
    first = subprocess.run(cmd, capture_output=True, text=True, cwd=root)
    second = subprocess.run(cmd, capture_output=True, text=True, cwd=root)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout  # byte-identical
    d = json.loads(first.stdout)
    assert set(d["summary"]) >= {"n", "skipped", "tpot_median_ape", "tpot_p90_ape", "ttft_median_ape", "ttft_p90_ape", "throughput_median_ape"}
    assert d["summary"]["n"] == 4 and d["summary"]["skipped"] == 1
    row = d["rows"][0]
    assert {"measured_ttft_ms", "predicted_ttft_ms", "measured_tpot_ms", "predicted_tpot_ms", "measured_tokens_per_s", "predicted_tokens_per_s", "layout_from"} <= set(row)
    assert {s["id"] for s in d["skipped"]} == {"my_own_run_1"}
    # aiconfigurator's export of InferenceX's Qwen3.5 tp4 ep4 (recorded tp 16 / moe_tp 4 / moe_ep 4 on
    # an 8-GPU B200) is read as the run had it, and says so
    read = {r["id"]: (r["layout"], r["layout_from"]) for r in d["rows"]}
    assert read["qwen3_5_b200_sglang_fp8_agg_1024x1024_c16_cfg615"] == ("tp=4 ep=4", "aiconfigurator export: GPUs x expert-parallel size")
    assert read["minimaxm2_5_b300_vllm_fp8_agg_1024x1024_c64_cfg733"][1] is None
    assert all(r["role"] == "score" for r in d["rows"])


def test_missing_column_is_one_line_with_the_file_and_column(tmp_path, root):
    bad = tmp_path / "mine.csv"
    bad.write_text("id,model_path,system,backend,isl,osl,silicon_ttft_ms\nx,meta-llama/Llama-3.1-70B,h100_sxm,vllm,100,100,50\n")
    run = subprocess.run([sys.executable, "-m", "sizer", "validate", "--measurements", str(bad)], capture_output=True, text=True, cwd=root)
    assert run.returncode == 7
    assert run.stderr.strip() == f"error: {bad}: column 'precision': required column is missing (expected aiconfigurator's silicon_sample.csv columns: model_path, system, backend, precision, isl, osl (or dataset), ...; README.md, '`sizer validate` and `sizer calibrate`', 'Your own results', lists them all)"
    assert "../shared" not in run.stderr  # a folder outside the repository, which users do not have
    missing = subprocess.run([sys.executable, "-m", "sizer", "validate", "--measurements", str(tmp_path / "nope.csv")], capture_output=True, text=True, cwd=root)
    assert missing.returncode == 3 and "file not found" in missing.stderr and "Traceback" not in missing.stderr


def test_a_row_with_a_bad_value_is_skipped_not_dropped(tmp_path, catalog):
    p = tmp_path / "m.csv"
    p.write_text(
        "id,model_path,system,backend,precision,isl,osl,batch_size,tp_size,silicon_ttft_ms,silicon_tpot_ms\n"
        "a,meta-llama/Llama-3.1-70B,h200_sxm,vllm,fp8,1024,1024,8,2,150,14\n"
        "b,meta-llama/Llama-3.1-70B,h200_sxm,vllm,fp8,lots,1024,8,2,150,14\n"
        "c,meta-llama/Llama-3.1-70B,h200_sxm,tgi,fp8,1024,1024,8,2,150,14\n"
    )
    report = validate_rows(read_csv(p), catalog)
    assert [r.row.row_id for r in report.results] == ["a"]
    reasons = {s.row.row_id: s.reason for s in report.skipped}
    assert reasons["b"] == "isl: expected a number, got 'lots'" and "engine 'tgi' not modelled" in reasons["c"]


CELL_HEAD = "id,model_path,system,backend,precision,kind,isl,osl,concurrency,request_rate_rps,tp_size,replicas,max_num_batched_tokens,output_tokens_per_s,samples_per_s,silicon_ttft_ms,silicon_tpot_ms\n"
GOOD_CELLS = {"kind": "concurrency", "isl": "1024", "osl": "256", "concurrency": "8", "request_rate_rps": "", "tp_size": "2", "replicas": "1",
              "max_num_batched_tokens": "8192", "output_tokens_per_s": "900", "samples_per_s": "", "silicon_ttft_ms": "150", "silicon_tpot_ms": "14"}


def _cell_row(**cells) -> str:
    c = {**GOOD_CELLS, **cells}
    return ",".join(["r", "meta-llama/Llama-3.1-70B", "h200_sxm", "vllm", "fp8"] + [c[k] for k in GOOD_CELLS]) + "\n"


@pytest.mark.parametrize(
    "cells, reason",
    [
        ({"output_tokens_per_s": "-5"}, "output_tokens_per_s: expected a positive number, got '-5'"),
        ({"output_tokens_per_s": "fast"}, "output_tokens_per_s: expected a number, got 'fast'"),
        ({"samples_per_s": "0"}, "samples_per_s: expected a positive number, got '0'"),
        ({"silicon_tpot_ms": "inf"}, "silicon_tpot_ms: expected a positive number, got 'inf'"),
        ({"max_num_batched_tokens": "-8192"}, "max_num_batched_tokens: expected a positive number, got '-8192'"),
        ({"tp_size": "2.5"}, "tp_size: expected a whole number >= 1, got '2.5'"),
        ({"tp_size": "-2"}, "tp_size: expected a whole number >= 1, got '-2'"),
        ({"tp_size": "two"}, "tp_size: expected a whole number >= 1, got 'two'"),
        ({"replicas": "0"}, "replicas: expected a whole number >= 1, got '0'"),
        ({"concurrency": "-8"}, "concurrency: expected a positive number, got '-8'"),
        ({"kind": "rate", "concurrency": "", "request_rate_rps": "inf"}, "request_rate_rps: an infinite rate sends every request at once, which is kind batch, not rate"),
        ({"kind": "multistream"}, "kind: expected one of concurrency, rate, offline, batch (or MLPerf's server, interactive, singlestream), got 'multistream'"),
        ({"kind": "singlestream"}, "concurrency: SingleStream runs one query at a time (concurrency 1), got '8'"),
    ],
)
def test_a_cell_that_is_not_what_its_column_means_skips_the_row_with_the_column_named(tmp_path, catalog, cells, reason):
    # A lenient read dropped such cells: a throughput of -5 was scored as "no figure" and its TPOT
    # printed as -3.9e95 ms, a budget of -5 tokens a step made a 50 s TTFT, tp_size 2.5 ran as tp=1.
    p = tmp_path / "m.csv"
    p.write_text(CELL_HEAD + _cell_row() + _cell_row(**cells).replace("r,", "bad,", 1))
    report = validate_rows(read_csv(p), catalog)
    assert [r.row.row_id for r in report.results] == ["r"]
    assert [(s.row.row_id, s.reason) for s in report.skipped] == [("bad", reason)]


@pytest.mark.parametrize("cells", [{"output_tokens_per_s": "nan"}, {"output_tokens_per_s": "NA"}, {"samples_per_s": "null"}, {"max_num_batched_tokens": ""}, {"tp_size": "0", "silicon_tpot_ms": "30"}])
def test_a_gap_in_a_cell_is_not_measured_not_an_error(tmp_path, catalog, cells):
    # pandas and spreadsheets write a gap as nan, NA or null; aiconfigurator's CSV writes 0 for a
    # layout size it does not set
    p = tmp_path / "m.csv"
    p.write_text(CELL_HEAD + _cell_row(**cells))
    report = validate_rows(read_csv(p), catalog)
    assert [r.row.row_id for r in report.results] == ["r"] and not report.skipped


def test_a_kv_format_or_a_layout_the_model_cannot_hold_is_skipped_not_a_crash(tmp_path, catalog):
    # Found by benchmarks/fuzz.py's measurement files (cases 1056, 1083, 1021): kv_dtype fp4 was a
    # KeyError in the KV arithmetic, pp_size 1e20 an OverflowError splitting 80 layers
    head = "id,model_path,system,backend,precision,kv_dtype,isl,osl,concurrency,tp_size,pp_size,silicon_ttft_ms,silicon_tpot_ms\n"
    p = tmp_path / "m.csv"
    p.write_text(
        head
        + "auto,meta-llama/Llama-3.1-70B,h200_sxm,vllm,fp8,auto,1024,256,8,2,1,150,14\n"
        + "fp4kv,meta-llama/Llama-3.1-70B,h200_sxm,vllm,fp8,fp4,1024,256,8,2,1,150,14\n"
        + "deep,meta-llama/Llama-3.1-70B,h200_sxm,vllm,fp8,fp8,1024,256,8,2,1e20,150,14\n"
        + "stages,meta-llama/Llama-3.1-70B,h200_sxm,vllm,fp8,fp8,1024,256,8,1,81,150,14\n"
    )
    report = validate_rows(read_csv(p), catalog)
    # vLLM's and SGLang's `auto` is the checkpoint's dtype: Llama-3.1-70B's bfloat16
    assert [(r.row.row_id, r.kv_dtype) for r in report.results] == [("auto", "bf16")]
    assert {s.row.row_id: s.reason for s in report.skipped} == {
        "fp4kv": "kv_dtype 'fp4' not modelled (expected one of bf16, fp16, fp8, int8, int4 or auto)",
        "deep": "pp=100000000000000000000 pipeline stages for 80 layers: a stage needs at least one",
        "stages": "pp=81 pipeline stages for 80 layers: a stage needs at least one",
    }


def test_mlperf_scenario_names_are_read_as_their_loops(tmp_path, catalog):
    # MLPerf's Server and Interactive scenarios are Poisson arrivals at a rate; an infinite rate
    # (vLLM's --request-rate inf) sends every request at once: kind batch
    p = tmp_path / "m.csv"
    p.write_text(
        CELL_HEAD
        + _cell_row(kind="Server", concurrency="", request_rate_rps="2").replace("r,", "server,", 1)
        + _cell_row(kind="interactive", concurrency="", request_rate_rps="2").replace("r,", "interactive,", 1)
        + _cell_row(kind="", request_rate_rps="inf").replace("r,", "infinite,", 1)
    )
    kinds = {r.row.row_id: r.row.kind for r in report_rows(validate_rows(read_csv(p), catalog))}
    assert kinds == {"server": "rate", "interactive": "rate", "infinite": "batch"}


def report_rows(report):
    assert not report.skipped, report.skipped
    return report.results


def test_rate_based_rows_use_the_open_loop(tmp_path, catalog):
    """A row with request_rate_rps is a Poisson open loop: higher rate, higher latency."""
    p = tmp_path / "rate.csv"
    head = "id,model_path,system,backend,precision,isl,osl,tp_size,request_rate_rps,silicon_ttft_ms,silicon_tpot_ms\n"
    p.write_text(head + "lo,meta-llama/Llama-3.1-70B,h200_sxm,vllm,fp8,1024,256,2,0.5,100,15\nhi,meta-llama/Llama-3.1-70B,h200_sxm,vllm,fp8,1024,256,2,4,100,15\n")
    report = validate_rows(read_csv(p), catalog)
    lo, hi = report.results
    assert lo.row.kind == "rate" and hi.row.kind == "rate"
    assert hi.predicted_tpot_ms > lo.predicted_tpot_ms and hi.predicted_ttft_ms > lo.predicted_ttft_ms
    assert hi.predicted_tokens_per_s == pytest.approx(4 * 256, rel=1e-6)  # an open loop delivers its offered load


def test_inferencex_rows_are_read_with_their_harness(catalog):
    """An aiconfigurator row exported from InferenceX (source_file=YYYY-MM-DD.csv) runs its
    client's lengths, uniform in [int(0.8 L), L] (SemiAnalysisAI/InferenceX
    utils/bench_serving/benchmark_serving.py sample_uniform, RANDOM_RANGE_RATIO 0.8): a 1024-token
    row averages (819 + 1024) / 2 = 921.5 tokens; and its launch script's flags
    (deprecated/minimaxm2.5_fp8_b200.sh: --kv-cache-dtype fp8 --max-num-batched-tokens
    $((ISL * 2))). The same row from another source keeps the engine's defaults and fixed lengths."""
    from sizer.measurements import MeasuredRow, Resolved, resolve

    def row(source):
        return MeasuredRow(
            row_id="x", source=source, origin="t", model_id="MiniMaxAI/MiniMax-M2.5", system="b200_sxm", engine="vllm",
            engine_version="0.19.0", precision="fp8", mode="agg", kind="concurrency", isl=1024.0, osl=1024.0,
            concurrency=16.0, tp=2, ttft_ms=100.0, tpot_ms=10.0,
        )

    ix = resolve(row("source_file=2026-03-25.csv; model=MiniMax-M2.5; silicon_concurrency=16"), catalog)
    other = resolve(row("some other benchmark"), catalog)
    assert isinstance(ix, Resolved) and isinstance(other, Resolved)
    assert ix.kv_dtype == "fp8" and other.kv_dtype == "bf16"
    assert ix.row.max_num_batched_tokens == 2048 and other.row.max_num_batched_tokens is None
    assert ix.prompt.mean == pytest.approx(921.5, rel=1e-3) and ix.output.mean == pytest.approx(921.5, rel=1e-3)
    assert ix.prompt.quantile(0) == 819 and ix.prompt.quantile(100) == 1024
    assert other.prompt is None


def test_inferencex_gpt_oss_on_h200_trtllm_keeps_a_bf16_kv_cache(catalog):
    """InferenceX's gptoss_fp4_h200_trt scripts (@e06929c70 to @ebb48d4bc) set kv_cache_config dtype
    auto on openai/gpt-oss-120b, whose MXFP4 checkpoint carries no KV quantization: BF16 KV, 2 x 8
    heads x 64 x 2 bytes = 2,048 bytes a token a layer. The B200 script sets dtype fp8, which is
    also what an FP4 TensorRT-LLM row gets without a harness (DEFAULT_KV: NVIDIA's checkpoints)."""
    from sizer.measurements import Resolved, resolve
    from sizer.perf import stage_shape

    h200 = resolve(_ix_row("openai/gpt-oss-120b", "h200_sxm", "trtllm", "fp4", tp=1, date="2025-12-15"), catalog)
    b200 = resolve(_ix_row("openai/gpt-oss-120b", "b200_sxm", "trtllm", "fp4", tp=1, date="2025-12-15"), catalog)
    assert isinstance(h200, Resolved) and isinstance(b200, Resolved)
    assert (h200.kv_dtype, b200.kv_dtype) == ("bf16", "fp8")
    assert stage_shape(h200.model, 1, 1, h200.weight_dtype, h200.kv_dtype, 1, 1).kv_bytes_per_token_per_layer == 2 * 8 * 64 * 2


# The device families of issue 13 that MLPerf v5.1 is kept aside to check (A100, L40S, L4, H100-PCIe, H100-NVL).
ISSUE13_DEVICES = {"A100-80GB", "A100-40GB", "L40S", "L4", "H100-PCIe", "H100-NVL"}


def test_every_public_serving_row_resolves(catalog, root):
    """Each row of public_serving.csv was added because the model can describe it: none is skipped."""
    rows = read_csv(root / "catalogs" / "measurements" / "public_serving.csv")
    skipped = [(r.row_id, res.reason) for r in rows if isinstance(res := resolve(r, catalog), Skipped)]
    assert not skipped


def test_issue13_families_are_scored(catalog):
    """Issue 13: at least 10 rows on A100 / L40S / L4 / H100-PCIe / H100-NVL are held out (role score)
    by the unchanged split rule, A100 among them."""
    rows, roles = shipped_split(catalog)
    scored: dict[str, int] = {}
    for r in rows:
        res = resolve(r, catalog)
        if isinstance(res, Resolved) and res.gpu.name in ISSUE13_DEVICES and roles[r.row_id] == "score":
            scored[res.gpu.name] = scored.get(res.gpu.name, 0) + 1
    assert sum(scored.values()) >= 10, scored
    assert scored.get("A100-80GB", 0) >= 1 and scored.get("L40S", 0) >= 1, scored


def test_issue13_rows_match_their_sources(root):
    """Figures checked by hand against the files cited in silicon_data_source / notes."""
    rows = {r.row_id: r for r in read_csv(root / "catalogs" / "measurements" / "public_serving.csv")}
    # mlcommons/inference_results_v4.0 closed/NVIDIA/results/H100-NVL-94GBx8_TRT/llama2-70b-99.9/Offline:
    # 'Samples per second: 51.7527', 'Tokens per second: 15085.7'; configs H100_NVL_94GB_TP2x4 (4 x TP2)
    nvl = rows["mlperf-v4.0-nvidia-h100-nvl-94gbx8_trt-llama2-70b-offline"]
    assert (nvl.tp, nvl.replicas) == (2, 4)
    assert nvl.output_tokens_per_s == pytest.approx(15085.7 / 4) and nvl.samples_per_s == pytest.approx(51.7527 / 4)
    # Cisco's own v5.0 config C245M8_H100NVL_94GBX2: tensor_parallelism 1 on 2 GPUs (2 x TP1)
    for rid in ("mlperf-v5.0-5.0-0009-cisco-h100nvl-llama2-70b-offline", "mlperf-v5.0-cisco-c245m8_h100nvl_94gbx2_trt-llama2-70b-server"):
        assert (rows[rid].tp, rows[rid].replicas) == (1, 2)
    # QCT v5.0 llama2-70b Offline: 'PP2' class, tensor_parallelism 1, pipeline_parallelism 2, max_num_tokens 1024
    qct = rows["mlperf-v5.0-quanta_cloud_technology-d54u_3u_h100_pcie_80gbx4_trt-llama2-70b-offline"]
    assert (qct.tp, qct.pp, qct.replicas, qct.max_num_batched_tokens) == (1, 2, 2, 1024)
    # TensorRT-LLM 0.9.0 perf overview, 'A100 GPUs (FP16)': '| LLaMA 70B | 1024 | 4 | 128 | 128 | 686 |'
    # (out tok/s/GPU): the TP4 engine's 2,744 tokens/s, one wave of 1,024 requests
    a100 = rows["trtllm-0.9.0-perf-overview-llama-2-70b-a100_sxm-tp4-bs1024-128x128"]
    assert (a100.kind, a100.concurrency, a100.tp, a100.isl, a100.osl, a100.precision) == ("batch", 1024, 4, 128, 128, "fp16")
    assert a100.output_tokens_per_s == pytest.approx(686 * 4)


def _ix_row(model, system, engine, precision, *, isl=1024.0, osl=1024.0, conc=16.0, tp=8, dp=1, date="2026-03-25", version=""):
    from sizer.measurements import MeasuredRow

    return MeasuredRow(
        row_id="x", source=f"source_file=2026-04-06.csv; model=M; silicon_concurrency={conc:g}; measured={date}T00:00:00.000Z", origin="t",
        model_id=model, system=system, engine=engine, engine_version=version, precision=precision, mode="agg", kind="concurrency",
        isl=isl, osl=osl, concurrency=conc, tp=tp, attention_dp=dp, moe_ep=dp if dp > 1 else 0, ttft_ms=100.0, tpot_ms=10.0,
    )


def test_trtllm_inferencex_scripts_set_the_scheduler(catalog):
    """InferenceX's TRT-LLM scripts (SemiAnalysisAI/InferenceX): Llama-3.1-70B (70b_fp8_h200_trt_slurm.sh
    @9596d23d7) runs --max_num_tokens 16384 and, at 1k/1k below TP 8, batch waiting of 20 steps or
    0.9 x 16384 = 14,745.6 tokens; DeepSeek-R1 (dsr1_fp8_b200_trt.sh) runs --max_num_tokens
    (CONC + ISL + 127) // 64 x 64 = (64 + 1024 + 127) // 64 x 64 = 1,152 before 2026-01-21 and at
    least 8,192 after, attention-DP balancing with timeout_iters 60 and batching_wait_iters 0, and
    from 2026-01-29 batch waiting (40 steps, 0.8 x 8192 = 6,553.6 tokens) at 1k/1k, CONC >= 64;
    gpt-oss-120b (gptoss_fp4_b200_trt.sh) 20,000 tokens and the AttentionDpConfig defaults 50 and 10."""
    from sizer.measurements import Resolved, resolve, trtllm_script_flags
    from sizer.validate import build_setup

    llama = "meta-llama/Llama-3.1-70B"
    f = trtllm_script_flags(_ix_row(llama, "h200_sxm", "trtllm", "fp8", tp=4, date="2025-10-29"))
    assert f == {"max_num_batched_tokens": 16384, "batch_wait_iters": 20, "batch_wait_tokens": pytest.approx(14745.6)}
    assert trtllm_script_flags(_ix_row(llama, "h200_sxm", "trtllm", "fp8", tp=8, date="2025-10-29")) == {"max_num_batched_tokens": 16384}
    assert "batch_wait_iters" not in trtllm_script_flags(_ix_row(llama, "h200_sxm", "trtllm", "fp8", tp=4, osl=8192.0, date="2025-10-29"))
    ds = "deepseek-ai/DeepSeek-R1"
    early = trtllm_script_flags(_ix_row(ds, "b200_sxm", "trtllm", "fp8", conc=64, dp=8, tp=1, date="2025-11-02"))
    assert early == {"max_num_batched_tokens": 1152, "memory_fraction": 0.8, "adp_balance_iters": 60, "adp_batching_iters": 0}
    late = trtllm_script_flags(_ix_row(ds, "b200_sxm", "trtllm", "fp8", conc=64, date="2026-02-05"))
    assert late == {"max_num_batched_tokens": 8192, "memory_fraction": 0.8, "batch_wait_iters": 40, "batch_wait_tokens": pytest.approx(6553.6)}
    oss = trtllm_script_flags(_ix_row("openai/gpt-oss-120b", "b200_sxm", "trtllm", "fp4", dp=4, tp=1, conc=64, date="2025-12-17"))
    assert oss == {"max_num_batched_tokens": 20000, "memory_fraction": 0.85, "adp_balance_iters": 50, "adp_batching_iters": 10}
    # the same row from another harness sets nothing; the setup carries the holds per row
    rows = [_ix_row(llama, "h200_sxm", "trtllm", "fp8", tp=4, date="2025-10-29"), _ix_row(ds, "b200_sxm", "trtllm", "fp8", conc=64, dp=8, tp=1, date="2025-11-02")]
    res = [resolve(r, catalog) for r in rows]
    assert all(isinstance(r, Resolved) for r in res)
    assert res[0].row.max_num_batched_tokens == 16384
    setup = build_setup(res)
    assert list(setup.hold.wait_iters) == [20, 0] and list(setup.hold.adp_iters) == [0, 60] and list(setup.hold.adp_ranks) == [1, 8]
    assert list(setup.budget) == [16384, 1152]


def test_sglang_inferencex_scripts_cap_the_running_batch(catalog):
    """InferenceX's dsr1_fp8_b200.sh (SemiAnalysisAI/InferenceX@64af5a771 on): TP 4 runs
    --max-running-requests 32 --mem-fraction-static 0.95 --chunked-prefill-size 8192
    --scheduler-recv-interval 10; TP 8 --max-running-requests 128, interval 30 at CONC >= 16. The
    replica then admits at most 32 (128) sequences and takes new requests every 10 (30) steps.
    The cap is set "as the maximum concurrency" the script runs: a row above it (CONC 512) was
    launched another way, and its KV pool bounds it instead."""
    from sizer.measurements import Resolved, resolve, sglang_script_flags
    from sizer.validate import build_setup, kv_capacity_sequences

    ds = "deepseek-ai/DeepSeek-R1"
    tp4 = _ix_row(ds, "b200_sxm", "sglang", "fp8", isl=8192.0, tp=4, conc=32)
    tp8 = _ix_row(ds, "b200_sxm", "sglang", "fp8", conc=128)
    above = _ix_row(ds, "b200_sxm", "sglang", "fp8", isl=8192.0, conc=512)
    assert sglang_script_flags(tp4) == {"recv_interval": 10, "max_num_seqs": 32, "memory_fraction": 0.95, "max_num_batched_tokens": 8192}
    assert sglang_script_flags(tp8) == {"recv_interval": 30, "max_num_seqs": 128, "memory_fraction": 0.82, "max_num_batched_tokens": 32768}
    assert sglang_script_flags(above) == {"recv_interval": 30, "memory_fraction": 0.82, "max_num_batched_tokens": 32768}
    r4, r8, ra = resolve(tp4, catalog), resolve(tp8, catalog), resolve(above, catalog)
    assert isinstance(r4, Resolved) and isinstance(r8, Resolved) and isinstance(ra, Resolved)
    seqs4, budget4 = kv_capacity_sequences(r4)
    assert seqs4 == 32 and budget4 == 8192  # the 0.95 fraction leaves room for more than 32 sequences of 9k tokens
    assert kv_capacity_sequences(r8)[0] == 128
    # without the cap the pool decides: 0.82 x 191.51 GB usable - 85.14 GB of weights per GPU = 71.90 GB,
    # over (isl + osl / 2) x 0.9 (InferenceX's range ratio 0.8) = 7,833.6 tokens of FP8 MLA cache
    # at 576 x 61 = 35,136 bytes a token: 261 sequences (InferenceX's CONC 512 run: 239-260 running)
    assert kv_capacity_sequences(ra)[0] == pytest.approx((0.82 * 191.5126e9 - 85.1399e9) / (35_136 * 7_833.6), rel=1e-3)
    assert list(build_setup([r4, r8]).hold.recv_interval) == [10, 30]


def test_inferencex_mi355x_deepseek_runs_sent_more_requests_per_client(catalog):
    """SemiAnalysisAI/InferenceX runners/launch_mi355x-amd.sh from 15b7c00b0 (2025-10-06 23:58 UTC)
    to d053ae24e (2026-01-21): NUM_PROMPTS = CONC x 20 at OSL 8192 and CONC x 50 otherwise for
    DeepSeek-R1, CONC x 10 for other models and on other runners; from d053ae24e every script sends
    CONC x 10. A run the export dates only between two others ("run between those dated A and B")
    counts when both dates are inside the window; the two commits' own days do not (the merge's
    hour is not the run's)."""
    from sizer.measurements import MeasuredRow, harness_flags, inferencex_requests_per_client, resolve
    from sizer.validate import build_setup

    def mantile(first, last, osl=1024.0):
        src = f"gminneci/mantile@72ff84e:reconcile/sources/inferencemax/raw/run_1/agg_bmk.json (InferenceX run x; run between those dated {first} and {last} in the same export)"
        return MeasuredRow(row_id="x", source=src, origin="t", model_id="deepseek-ai/DeepSeek-R1-0528", system="mi355x", engine="sglang",
                           engine_version="0.5.7", precision="fp4", mode="agg", kind="concurrency", isl=8192.0, osl=osl, concurrency=64.0, tp=8,
                           ttft_ms=444.0, tpot_ms=32.6)

    ds = "deepseek-ai/DeepSeek-R1-0528"
    waves = inferencex_requests_per_client
    assert waves(_ix_row(ds, "mi355x", "sglang", "fp4", date="2025-12-14")) == 50
    assert waves(_ix_row(ds, "mi355x", "sglang", "fp8", osl=8192.0, date="2025-11-03")) == 20
    assert waves(mantile("2025-12-15", "2026-01-14")) == 50
    assert waves(mantile("2025-12-15", "2026-01-14", osl=8192.0)) == 20
    for outside in (_ix_row(ds, "mi355x", "sglang", "fp4", date="2025-10-06"), _ix_row(ds, "mi355x", "sglang", "fp4", date="2026-01-21"),
                    _ix_row(ds, "mi355x", "sglang", "fp4", date="2026-02-27"), mantile("2026-01-14", "2026-02-27"),
                    _ix_row("openai/gpt-oss-120b", "mi355x", "sglang", "fp4", date="2025-12-14"),
                    _ix_row(ds, "b200_sxm", "sglang", "fp4", date="2025-12-14"), _ix_row(ds, "mi300x", "sglang", "fp8", date="2025-12-14")):
        assert waves(outside) is None and "requests_per_client" not in harness_flags(outside)
    assert harness_flags(mantile("2025-12-15", "2026-01-14"))["requests_per_client"] == 50
    setup = build_setup([resolve(mantile("2025-12-15", "2026-01-14"), catalog), resolve(_ix_row(ds, "mi355x", "sglang", "fp4", date="2026-02-27"), catalog)])
    assert list(setup.requests_per_client) == [50.0, 10.0]


def test_inferencex_b200_sglang_runs_before_the_warm_up_leave_their_mean_ttft_out(catalog):
    """InferenceX sent no warm-up request before d053ae24e (2026-01-21); in the InferenceX-app
    fixtures (vngcloud/InferenceX-app@7fe6d62a) 67 of the 121 B200 SGLang DeepSeek-R1 points up to
    then carry a 69-94 s p99 TTFT beside a median under 2 s: a cold first wave, which in a run of ten
    waves puts ~7 s on the mean. Such a row's mean TTFT (and the throughput it implies where the
    source gives none) is left out with the reason; its TPOT is still scored. After the warm-up, on
    another device or engine, or outside InferenceX, nothing changes."""
    from dataclasses import replace

    from sizer.measurements import Resolved, inferencex_cold_start, resolve
    from sizer.validate import report_dict, validate_rows

    ds = "deepseek-ai/DeepSeek-R1-0528"
    cold = _ix_row(ds, "b200_sxm", "sglang", "fp4", conc=32.0, date="2025-11-10")
    assert "2025-11-10" in inferencex_cold_start(cold) and "~70 s cold start" in inferencex_cold_start(cold)
    assert inferencex_cold_start(_ix_row(ds, "b200_sxm", "sglang", "fp8", date="2026-01-21"))  # the merge's day: either side
    for warm in (_ix_row(ds, "b200_sxm", "sglang", "fp4", date="2026-01-22"), _ix_row(ds, "b200_sxm", "trtllm", "fp4", date="2025-11-10"),
                 _ix_row(ds, "h200_sxm", "sglang", "fp8", date="2025-11-10"), _ix_row(ds, "mi355x", "sglang", "fp4", date="2025-11-10"),
                 replace(cold, source="silicon_concurrency=32"), replace(cold, source="silicon_concurrency=32; measured=2025-11-10")):
        assert inferencex_cold_start(warm) is None
        res = resolve(warm, catalog)
        assert isinstance(res, Resolved) and res.row.ttft_ms == 100.0 and not res.row.ttft_left_out
    res = resolve(cold, catalog)
    assert isinstance(res, Resolved) and res.row.ttft_ms is None and res.row.ttft_p99_ms is None and res.row.tpot_ms == 10.0
    assert res.row.ttft_left_out == inferencex_cold_start(cold) and res.row.throughput_tokens_per_s is None
    d = report_dict(validate_rows([cold], catalog))
    row = d["rows"][0]
    assert row["measured_ttft_ms"] is None and row["ttft_ape"] is None and row["measured_tokens_per_s"] is None
    assert row["measured_ttft_left_out"] == res.row.ttft_left_out and row["tpot_ape"] is not None
    assert d["summary"]["ttft_left_out"] == 1
    # the table counts the rows by reason, each row's own date dropped: two days, one line
    from sizer.validate import render_table

    table = render_table(validate_rows([cold, _ix_row(ds, "b200_sxm", "sglang", "fp4", conc=32.0, date="2025-12-11")], catalog), rows="none")
    block = table.split("TTFT LEFT OUT (2 rows", 1)[1].splitlines()
    assert block[1:] == ["      2  " + inferencex_cold_start(cold).split(", ", 1)[1]]


def test_num_prompts_gives_the_requests_each_client_sent(tmp_path, catalog):
    """A closed loop that sent a fixed number of requests at every concurrency (dstack's DeepSeek-R1
    online runs: SGLang's bench_serving.py --num-prompts 500 at --max-concurrency 4-128,
    dstackai/benchmarks Deepseek-R1/README.md @7f37e669) sent 500 / N a client: 125 at four
    clients, 3.9 at 128. Its first wave, which arrives at once, is then 1/125 and 1/3.9 of its
    requests, not the harness default's tenth: the wave share (queueing.wave_share) follows. Read
    for kind concurrency only, and never fewer requests than clients."""
    from sizer.measurements import harness_flags, read_csv
    from sizer.queueing import wave_share
    from sizer.validate import build_setup

    head = "id,model_path,system,backend,precision,kind,isl,osl,concurrency,tp_size,num_prompts,silicon_ttft_ms,silicon_tpot_ms\n"
    p = tmp_path / "m.csv"
    p.write_text(
        head
        + "c4,meta-llama/Llama-3.1-70B,h200_sxm,vllm,fp8,concurrency,3200,800,4,8,500,900,20\n"
        + "c128,meta-llama/Llama-3.1-70B,h200_sxm,vllm,fp8,concurrency,3200,800,128,8,500,9000,40\n"
        + "none,meta-llama/Llama-3.1-70B,h200_sxm,vllm,fp8,concurrency,3200,800,128,8,,9000,40\n"
        + "few,meta-llama/Llama-3.1-70B,h200_sxm,vllm,fp8,concurrency,3200,800,128,8,100,9000,40\n"
        + "batch,meta-llama/Llama-3.1-70B,h200_sxm,vllm,fp8,batch,3200,800,128,8,500,9000,40\n"
    )
    rows = {r.row_id: r for r in read_csv(p)}
    assert harness_flags(rows["c4"])["requests_per_client"] == 125.0
    assert harness_flags(rows["c128"])["requests_per_client"] == pytest.approx(3.90625)
    assert "requests_per_client" not in harness_flags(rows["none"])
    assert rows["few"].invalid == "num_prompts: 100 requests for 128 clients (at least one a client expected)"
    assert rows["batch"].invalid == "num_prompts: read on kind concurrency only (the requests a closed loop's clients sent), not on kind batch"
    report = validate_rows([rows[k] for k in ("c4", "c128", "none")], catalog)
    setup = build_setup([resolve(rows[k], catalog) for k in ("c4", "c128", "none")])
    assert list(setup.requests_per_client) == [125.0, 3.90625, 10.0]
    # a burst fraction of 0.2 at ten a client: 0.016, 0.512 and 0.2 of the requests in the wave
    assert list(wave_share(np.full(3, 0.2), setup.requests_per_client)) == pytest.approx([0.016, 0.512, 0.2])
    assert len(report.results) == 3 and not report.skipped


def _aic_row(engine, *, isl=2048.0, conc=64.0, tp=1, dp=1, mode="agg", source=None):
    from sizer.measurements import MeasuredRow

    path = f"source_file=/Users/x/projects/aic-auto-gap-analysis/data/h100_sxm/{engine}/1.0.0rc3/m.csv; silicon_concurrency={conc:g}"
    return MeasuredRow(
        row_id="x", source=source or path, origin="t", model_id="meta-llama/Llama-3.1-8B-Instruct", system="h100_sxm",
        engine=engine, engine_version="", precision="fp8", mode=mode, kind="concurrency", isl=isl, osl=256.0,
        concurrency=conc, tp=tp, attention_dp=dp, ttft_ms=100.0, tpot_ms=10.0,
    )


def test_aiconfigurator_gap_rows_run_the_generators_settings(catalog):
    """aiconfigurator's generator (ai-dynamo/aiconfigurator, cli/backends/trtllm.py @efcae124c and
    generator/rule_plugin/*.rule through b5369e1fb) writes for an aggregated worker of batch bs:
    TRT-LLM max_num_tokens = bs + ISL + 1500 and free_gpu_memory_fraction 0.80; SGLang
    --max-prefill-tokens ISL + 1500 with --enable-mixed-chunk; vLLM --max-num-batched-tokens
    bs + ISL + 1500. bs counts per attention rank. At ISL 2,048 and 64 clients: 3,612 tokens."""
    from dataclasses import replace

    from sizer.measurements import Resolved, aic_generator_flags, resolve
    from sizer.validate import build_setup, kv_capacity_sequences

    trt, sgl, vll = _aic_row("trtllm"), _aic_row("sglang"), _aic_row("vllm")
    assert aic_generator_flags(trt) == {"max_num_batched_tokens": 3612.0, "memory_fraction": 0.80}
    assert aic_generator_flags(sgl) == {"max_prefill_tokens": 3548.0, "mixed_chunk": True}
    assert aic_generator_flags(vll) == {"max_num_batched_tokens": 3612.0}
    assert aic_generator_flags(_aic_row("trtllm", conc=256.0, dp=8))["max_num_batched_tokens"] == 32 + 2048 + 1500
    assert aic_generator_flags(_aic_row("trtllm", mode="disagg")) == {}
    other = _aic_row("trtllm", source="silicon_concurrency=64")  # not the gap analysis: the engine's defaults
    rt, rs, ro = resolve(trt, catalog), resolve(sgl, catalog), resolve(other, catalog)
    assert isinstance(rt, Resolved) and isinstance(rs, Resolved) and isinstance(ro, Resolved)
    seqs_t, budget_t = kv_capacity_sequences(rt)
    seqs_o, budget_o = kv_capacity_sequences(ro)
    assert budget_t == 3612 and budget_o == 8192  # TRT-LLM's own max_num_tokens default
    # TRT-LLM's pool is fraction x (usable - weights - reserve): 0.80 against the default 0.90
    assert seqs_t / seqs_o == pytest.approx(0.80 / 0.90)
    # SGLang: the prompt budget is --max-prefill-tokens (under the 8,192-token chunk), and the
    # decoding sequences count against it (mixed chunk); without the harness they do not
    assert kv_capacity_sequences(rs)[1] == 3548
    plain = resolve(replace(sgl, source="silicon_concurrency=64"), catalog)
    setup = build_setup([rs, plain])
    assert list(setup.step.budget_decode_tokens) == [1.0, 0.0] and list(setup.budget) == [3548.0, 8192.0]


def test_inferencex_amd_rows_hold_prompts_for_the_scripts_decode_stretch(catalog):
    """InferenceX's AMD DeepSeek-R1 rows (the InferenceX-app site's API fixtures and run directories
    of official runs, catalogs/measurements/public_serving.csv `inferencex-amd-*`): the client's
    lengths are uniform in [int(0.8 L), L] as on NVIDIA's runners, and every SGLang script launches
    `--num-continuous-decode-steps 4` (dsr1_fp8_mi355x.sh: 8 from a2180b61c, 2026-05-03;
    SemiAnalysisAI/InferenceX @843c6254): a prompt waits out the decode stretch under way, the
    recv_interval hold. The KV dtype and prefill chunk the scripts set by date are the rows' own
    columns; the shipped rows carry them and their commits and an SGLang release each (the export's
    image, else the one InferenceX's workflow config named for that date), and resolve to the AMD
    parts with MXFP4 weights for fp4 (the device's FP4, Gpu.fp4_format)."""
    from sizer.measurements import MeasuredRow, Resolved, harness_flags, read_csv, resolve
    from sizer.catalog import default_catalog_dir

    def row(system, precision, date, source="vngcloud/InferenceX-app@7fe6d62ad57a3df061be692e86578c7111d880c7:packages/app/cypress/fixtures/api/benchmarks.json"):
        return MeasuredRow(
            row_id="x", source=f"{source} (InferenceX run 1; measured={date})", origin="t", model_id="deepseek-ai/DeepSeek-R1-0528",
            system=system, engine="sglang", engine_version="0.5.9", precision=precision, mode="agg", kind="concurrency",
            isl=1024.0, osl=1024.0, concurrency=16.0, tp=8, ttft_ms=100.0, tpot_ms=10.0, kv_dtype="fp8",
        )

    assert harness_flags(row("mi300x", "fp8", "2026-02-12")) == {"range_ratio": 0.8, "recv_interval": 4}
    assert harness_flags(row("mi355x", "fp8", "2026-05-02")) == {"range_ratio": 0.8, "recv_interval": 4}
    assert harness_flags(row("mi355x", "fp8", "2026-05-27")) == {"range_ratio": 0.8, "recv_interval": 8}
    assert harness_flags(row("mi355x", "fp4", "2026-05-27")) == {"range_ratio": 0.8, "recv_interval": 4}
    mantile = row("mi325x", "fp8", "", source="gminneci/mantile@72ff84ebfd56ee0b15bd17d7d49a70fbb4e50256:reconcile/sources/inferencemax/raw/run_20609406656/agg_bmk.json")
    assert harness_flags(mantile) == {"range_ratio": 0.8, "recv_interval": 4}
    assert harness_flags(row("mi300x", "fp8", "2026-02-12", source="some other benchmark")) == {}
    r = resolve(row("mi355x", "fp4", "2026-05-27"), catalog)
    assert isinstance(r, Resolved) and r.gpu.name == "MI355X" and r.weight_dtype == "mxfp4" and r.kv_dtype == "fp8"
    assert r.prompt.quantile(0) == 819 and r.prompt.quantile(100) == 1024

    shipped = [x for x in read_csv(default_catalog_dir() / "measurements" / "public_serving.csv") if x.row_id.startswith("inferencex-amd-")]
    assert len(shipped) == 317
    by_gpu = {}
    for x in shipped:
        res = resolve(x, catalog)
        assert isinstance(res, Resolved), x.row_id
        by_gpu[res.gpu.name] = by_gpu.get(res.gpu.name, 0) + 1
        assert harness_flags(x)["range_ratio"] == 0.8 and x.kv_dtype in ("bf16", "fp8") and x.max_num_batched_tokens in (32768, 131072, 196608)
        assert x.engine_version, x.row_id  # the export's image, else the workflow config's of the run's date
    assert by_gpu == {"MI300X": 63, "MI325X": 58, "MI355X": 196}


def test_mlperf_harness_charges_trtllm_sequences_half_their_output(catalog):
    """TensorRT-LLM's default scheduler (GUARANTEED_NO_EVICT) admits a request once blocks for its
    whole output are free, so a served row's sequence is charged isl + osl tokens. NVIDIA's MLPerf
    harness runs MAX_UTILIZATION, which grows the blocks with the output: v4.1's harness_llm
    defaults --trtllm_batch_sched_policy to max_util (mlcommons/inference_results_v4.1@198fc467:
    closed/NVIDIA/code/harness/harness_llm/main_llm.cc) and v5.0's llama2-70b GPUBaseConfig sets
    'batch_scheduler_policy': 'max_util' (closed/Dell/configs/llama2-70b/__init__.py). Its
    sequences are charged like vLLM's, isl + osl / 2. At 1,000 tokens in and 1,000 out, on the same
    pool: 2,000 against 1,500 tokens a sequence, 4/3 the sequences."""
    from dataclasses import replace

    from sizer.measurements import MeasuredRow, Resolved, reserves_whole_output, resolve
    from sizer.validate import kv_capacity_sequences

    served = MeasuredRow(
        row_id="x", source="t", origin="t", model_id="meta-llama/Llama-2-70b-chat-hf", system="h100_sxm",
        engine="trtllm", engine_version="1.0.0", precision="fp8", mode="agg", kind="concurrency", isl=1000.0, osl=1000.0,
        concurrency=64.0, tp=2, ttft_ms=100.0, tpot_ms=10.0,
    )
    mlperf = replace(served, engine_version="mlperf-v5.0")
    assert reserves_whole_output(served) and not reserves_whole_output(mlperf)
    assert not reserves_whole_output(replace(served, engine="vllm"))
    rs, rm = resolve(served, catalog), resolve(mlperf, catalog)
    assert isinstance(rs, Resolved) and isinstance(rm, Resolved)
    assert kv_capacity_sequences(rm)[0] / kv_capacity_sequences(rs)[0] == pytest.approx(2000 / 1500)
    # a row measured on an MLPerf dataset is an MLPerf harness's run whatever release it names:
    # resolve relabels it (measurements.mlperf_release), and the harness's rule follows
    on_dataset = resolve(replace(served, kind="offline", isl=None, osl=None, dataset="mlperf-llama2-70b"), catalog)
    assert isinstance(on_dataset, Resolved) and on_dataset.row.engine_version == "mlperf-1.0.0"
    assert not reserves_whole_output(on_dataset.row)


def _ix_disagg_row(conc, *, date="2026-03-23", decode_dp=1, source=None):
    from sizer.measurements import MeasuredRow, WorkerLayout
    from sizer.perf import Layout

    src = source or f"db-dump/2026-04-27; config_id=388; silicon_concurrency={conc:g}; measured={date}T00:00:00.000Z"
    decode = Layout(tp=1, dp=8, ep=8) if decode_dp > 1 else Layout(tp=8, ep=8)
    return MeasuredRow(
        row_id="x", source=src, origin="t", model_id="deepseek-ai/DeepSeek-V3", system="gb200", engine="trtllm",
        engine_version="0.8.1.post2", precision="fp4", mode="disagg", kind="concurrency", isl=1024.0, osl=1024.0,
        concurrency=conc, tp=1, ttft_ms=100.0, tpot_ms=10.0,
        prefill=WorkerLayout(workers=1, layout=Layout(tp=1, dp=4, ep=4), batch_size=1.0),
        decode=WorkerLayout(workers=4, layout=decode, batch_size=conc / 4),
    )


def test_inferencex_disaggregated_rows_wait_for_their_recipes_decode_slots(catalog, tmp_path):
    """InferenceX's nvidia-master.yaml ran DeepSeek-R1 FP4 on GB200, 1k/1k at 192 clients, with one
    attention-DP prefill worker of 4 GPUs and four TEP8 decode workers from the srt-slurm recipe
    ctx1_gen4_tep8_batch32_eplb0_mtp0.yaml: max_batch_size 32 a decode worker (the recipe family's
    ctx1_gen4_tep8_batch4_eplb0_mtp3.yaml reads `max_batch_size: 4`), so 4 x 32 = 128 run and 64
    wait. At 48 clients a speculative-decoding recipe (batch 8) and a plain one (batch 32) share the
    layout, and the export does not say which ran: no cap. Attention-DP decode workers get none
    (the name's batch is per worker in one recipe family, per rank in another), nor a day before
    the point was listed, nor a row from another source."""
    from dataclasses import replace

    import numpy as np

    from sizer.measurements import Resolved, harness_flags, inferencex_decode_cap, resolve
    from sizer.validate import build_setup, kv_capacity_sequences, predict

    row = _ix_disagg_row(192.0)
    assert inferencex_decode_cap(row) == 32.0 and harness_flags(row)["max_num_seqs"] == 32.0
    assert inferencex_decode_cap(_ix_disagg_row(48.0)) is None
    assert inferencex_decode_cap(_ix_disagg_row(192.0, decode_dp=8)) is None
    assert inferencex_decode_cap(_ix_disagg_row(192.0, date="2025-11-20")) is None
    assert "max_num_seqs" not in harness_flags(_ix_disagg_row(192.0, source="some other benchmark; measured=2026-03-23"))
    res = resolve(row, catalog)
    assert isinstance(res, Resolved) and kv_capacity_sequences(res)[0] == 32
    # a user's catalog directory without the recipes file still reads the shipped one
    from sizer.measurements import inferencex_recipes

    shipped = len(inferencex_recipes())
    inferencex_recipes.cache_clear()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("SIZER_CATALOG_DIR", str(tmp_path))
            assert len(inferencex_recipes()) == shipped == 683
    finally:
        inferencex_recipes.cache_clear()
    # the 16 clients a worker beyond its 32 slots wait for one (Little's law on the workers'
    # completions: (48 - 32) / (rate / 4)), which the same row without the cap does not pay
    setup = build_setup([res])
    capped, free = predict(setup), predict(replace(setup, capacity=np.array([1e9])))
    rate = 192.0 / (free.ttft_s[0] + (setup.osl[0] - 1) * free.tpot_s[0])
    assert 0.5 < (capped.ttft_s[0] - free.ttft_s[0]) / ((48 - 32) / (rate / 4)) < 2.0
    assert capped.tpot_s[0] < free.tpot_s[0]  # 32 sequences a step, not 48


def test_inferencex_rows_without_a_release_get_their_workflows_image(catalog):
    """An InferenceX row exported without backend_version ran the image its workflow named that
    day (SemiAnalysisAI/InferenceX .github/workflows/70b-tmpl.yml @9596d23d7: vllm/vllm-openai:v0.10.2;
    .github/configs/nvidia-master.yaml: gptoss-fp4-b200-trt release:1.2.0rc0.post1 on 2025-11-14,
    1.2.0rc2 from 06667a51e, 2025-12-02); a row naming its release, or from another source, keeps it."""
    from dataclasses import replace

    from sizer.measurements import inferencex_release, resolve

    llama = _ix_row("meta-llama/Llama-3.1-70B", "h200_sxm", "vllm", "fp8", date="2025-10-29")
    assert inferencex_release(llama) == "0.10.2" and resolve(llama, catalog).row.engine_version == "0.10.2"
    oss = _ix_row("openai/gpt-oss-120b", "b200_sxm", "trtllm", "fp4", date="2025-11-14")
    assert inferencex_release(oss) == "1.2.0rc0.post1"
    assert inferencex_release(replace(oss, source=oss.source.replace("2025-11-14", "2025-12-02"))) == "1.2.0rc2"
    assert inferencex_release(replace(oss, engine_version="1.2.0rc6")) == ""
    assert inferencex_release(replace(oss, source="dstackai/benchmarks measured=2025-11-14")) == ""


def test_a_layout_without_a_kv_pool_is_skipped(catalog):
    """DeepSeek-V3 FP8 decode workers of tp=1 x dp=4 on GB200 (InferenceX's SGLang disaggregated
    sweep): the experts (~656 GB / 4) and each rank's dense weights fill a GPU past SGLang's default
    memory fraction, so the KV pool the model computes holds no sequence; the run used settings the
    row does not record and is skipped with that reason, not queued for memory (predicted 8-12 s
    against 0.5-1.4 s measured)."""
    from sizer.measurements import MeasuredRow, Resolved, WorkerLayout, resolve
    from sizer.perf import Layout
    from sizer.validate import kv_capacity_sequences, roofline_check

    row = MeasuredRow(
        row_id="d", source="source_file=2026-03-25.csv; measured=2025-12-01", origin="t", model_id="deepseek-ai/DeepSeek-V3", system="gb200",
        engine="sglang", engine_version="0.5.5.post2", precision="fp8", mode="disagg", kind="concurrency", isl=1024.0, osl=1024.0,
        concurrency=16.0, prefill=WorkerLayout(workers=1, layout=Layout(tp=1, dp=4), batch_size=None),
        decode=WorkerLayout(workers=4, layout=Layout(tp=1, dp=4), batch_size=4.0), ttft_ms=467.5, tpot_ms=10.1,
    )
    res = resolve(row, catalog)
    assert isinstance(res, Resolved) and kv_capacity_sequences(res)[0] < 1
    keep, skipped = roofline_check([res])
    assert keep == [] and skipped[0].reason.startswith("no KV pool: tp=1 dp=4 with fp8 weights")


def test_repeatability_takes_each_distinct_figure_as_a_prediction_of_the_others(tmp_path, catalog):
    """Hand-made repeats: three runs of one condition with TTFT 100, 150 and 200 ms (a fourth row
    copies the 100 ms run: one measurement, not a repeat) and a lone row of another concurrency.
    The six ordered pairs' APEs |a - b| / b: 50, 100, 33.3, 33.3, 50, 25 (%) -> median 41.67,
    p90 (linear) 75.0; TPOT 10, 10, 11 ms: pairs 10 and 9.09 -> median 9.55."""
    p = tmp_path / "repeats.csv"
    head = "id,model_path,system,backend,backend_version,precision,isl,osl,batch_size,tp_size,silicon_ttft_ms,silicon_tpot_ms\n"
    rows = [("a", 8, 100, 10), ("b", 8, 150, 10), ("c", 8, 200, 11), ("a-copy", 8, 100, 10), ("lone", 16, 120, 12)]
    p.write_text(head + "".join(f"{i},meta-llama/Llama-3.1-70B,h200_sxm,vllm,0.19.0,fp8,1024,1024,{c},2,{t},{o}\n" for i, c, t, o in rows))
    d = report_dict(validate_rows(read_csv(p), catalog))
    rep = d["repeatability"]
    assert rep["ttft"] == {"groups": 1, "pairs": 6, "median_ape": pytest.approx(41.67, abs=0.01), "p90_ape": pytest.approx(75.0, abs=0.01)}
    assert rep["tpot"]["pairs"] == 2 and rep["tpot"]["median_ape"] == pytest.approx((10.0 + 100 / 11) / 2, abs=0.01)
    # throughput derived from each row's means: distinct for a, b, c -> 6 pairs
    assert rep["throughput"]["groups"] == 1 and rep["throughput"]["pairs"] == 6


def test_shipped_measurements_report_their_own_repeatability(shipped):
    """The shipped table holds repeats (InferenceX sweeps re-run on other dates under the same
    release): the validate summary says how far they disagree, the floor under any model's error.
    Within a release they agree closely (TTFT p90 14 % over 224 pairs when written), so the
    model's TTFT misses are not the measurements' noise."""
    rep = report_dict(shipped)["repeatability"]
    assert rep["ttft"]["pairs"] > 100 and rep["ttft"]["groups"] > 30
    assert 0 < rep["ttft"]["median_ape"] < rep["ttft"]["p90_ape"]


def test_a_run_exported_twice_is_one_measurement(tmp_path, catalog):
    """Hand-made: a run exported under two labels (Llama-3.1-70B and a fine-tune of the same
    architecture, same system, layout, lengths, load and figures: one run) and a third row of
    another load. The copy counts once in the scoring (n 2, not 3), names its original, and the
    split never fits one label and scores the other."""
    p = tmp_path / "copies.csv"
    head = "id,model_path,system,backend,precision,isl,osl,batch_size,tp_size,silicon_ttft_ms,silicon_tpot_ms\n"
    p.write_text(
        head
        + "run,meta-llama/Llama-3.1-70B,h200_sxm,vllm,fp8,1024,1024,8,2,150,14\n"
        + "copy,meta-llama/Llama-3.1-70B-Instruct,h200_sxm,vllm,fp8,1024,1024,8,2,150,14\n"
        + "other,meta-llama/Llama-3.1-70B,h200_sxm,vllm,fp8,1024,1024,16,2,180,16\n"
    )
    rows = read_csv(p)
    report = validate_rows(rows, catalog)
    d = report_dict(report)
    assert {r["id"]: r["copy_of"] for r in d["rows"]} == {"run": None, "copy": "run", "other": None}
    assert d["summary"]["n"] == 2 and d["summary"]["copies"] == 1
    roles = split_roles(rows)
    assert roles["run"] == roles["copy"]


def test_a_measured_figure_the_model_calls_saturated_is_a_miss(tmp_path, catalog):
    """A row measured at a rate the model says one replica cannot carry (open loop far beyond its
    capacity: no finite latency) counts as an infinite error in the percentiles, not as a row left
    out: with it and one finite row, the median and p90 TTFT APE are infinite."""
    p = tmp_path / "sat.csv"
    head = "id,model_path,system,backend,precision,isl,osl,tp_size,request_rate_rps,silicon_ttft_ms,silicon_tpot_ms\n"
    p.write_text(head + "ok,meta-llama/Llama-3.1-70B,h200_sxm,vllm,fp8,1024,256,2,0.5,100,15\nflood,meta-llama/Llama-3.1-70B,h200_sxm,vllm,fp8,1024,256,2,5000,100,15\n")
    report = validate_rows(read_csv(p), catalog)
    flood = next(r for r in report.results if r.row.row_id == "flood")
    assert flood.predicted_ttft_ms is None and flood.ape("ttft") == float("inf")
    s = summary(report, None)["overall"]
    assert s["n"] == 2 and s["ttft_p90_ape"] == float("inf") and s["ttft_median_ape"] == float("inf")
    out = json.loads(to_json(report))
    assert out["summary"]["ttft_p90_ape"] is None  # the strict JSON writer: a figure that is not finite is null



def test_fp4_off_nvidia_is_mxfp4(tmp_path, catalog):
    """A measurement at precision fp4 is NVFP4 on NVIDIA (16-value blocks, FP8 scales: 0.5625 bytes
    a weight) and OCP MXFP4 elsewhere (32-value blocks, E8M0 scales: 0.53125 bytes), the format
    AMD's MI355X runs and AMD's Quark quantises to; on a device without FP4 tensor cores (MI300X)
    such a row is skipped with the reason. `sizer solve` likewise refuses nvfp4 weights on an AMD
    device and names the format it takes."""
    from sizer.candidates import format_reason

    p = tmp_path / "fp4.csv"
    head = "id,model_path,system,backend,precision,kind,isl,osl,batch_size,tp_size,silicon_ttft_ms,silicon_tpot_ms\n"
    p.write_text(
        head
        + "amd,meta-llama/Llama-3.1-70B,mi355x,vllm,fp4,concurrency,1024,1024,8,1,150,14\n"
        + "nv,meta-llama/Llama-3.1-70B,b200_sxm,vllm,fp4,concurrency,1024,1024,8,1,150,14\n"
        + "old,meta-llama/Llama-3.1-70B,mi300x,vllm,fp4,concurrency,1024,1024,8,1,150,14\n"
    )
    amd, nv, old = (resolve(r, catalog) for r in read_csv(p))
    assert amd.weight_dtype == "mxfp4" and nv.weight_dtype == "nvfp4"
    assert isinstance(old, Skipped) and "no FP4 tensor cores" in old.reason
    model = catalog.model("llama-3.1-70b")
    assert "OCP mxfp4" in format_reason(model, catalog.gpu("MI355X"), "fp8", "nvfp4")
    assert format_reason(model, catalog.gpu("MI355X"), "fp8", "mxfp4") is None
    assert format_reason(model, catalog.gpu("B200"), "fp8", "nvfp4") is None


def test_an_a100_pcie_row_is_read_on_the_pcie_card(tmp_path, catalog):
    """aiconfigurator names the 80 GB PCIe A100 `a100_pcie`: it is the PCIe card (1,935 GB/s HBM,
    PCIe Gen4 x16 at 32 GB/s a direction between cards: thundercompute's A100 table, glennklockwood's
    '32+32 GB/s PCIe Gen4'), not the SXM module (2,039 GB/s, NVLink 300 GB/s) it was read as before.
    The same tp=2 row predicts a slower step on it: its batch-1 step reads the weights at 1,935/2,039
    of the SXM's speed, and its prompts all-reduce over a link a tenth as fast. Compared under the
    global factors alone (evidence.global_table): the SXM A100 has fitted offsets of its own (its
    TensorRT-LLM rows), the PCIe card none, so under the shipped table the difference would be
    the fit's, not the datasheets'."""
    from sizer.efficiency import efficiency_table
    from sizer.evidence import global_table

    p = tmp_path / "a100.csv"
    head = "id,model_path,system,backend,precision,isl,osl,batch_size,tp_size,silicon_ttft_ms,silicon_tpot_ms\n"
    p.write_text(head + "pcie,meta-llama/Llama-3.1-8B,a100_pcie,vllm,bf16,4096,256,1,2,60,8\nsxm,meta-llama/Llama-3.1-8B,a100_sxm,vllm,bf16,4096,256,1,2,60,8\n")
    rows = read_csv(p)
    pcie, sxm = (resolve(r, catalog) for r in rows)
    assert pcie.gpu.name == "A100-80GB-PCIe" and sxm.gpu.name == "A100-80GB"
    assert pcie.gpu.hbm_bytes_per_s == pytest.approx(1935e9) and pcie.gpu.link_for(2) == pytest.approx(32e9)
    by_id = {r.row.row_id: r for r in validate_rows(rows, catalog, efficiency=global_table(efficiency_table(catalog.root))).results}
    assert by_id["pcie"].predicted_tpot_ms > by_id["sxm"].predicted_tpot_ms
    assert by_id["pcie"].predicted_ttft_ms > by_id["sxm"].predicted_ttft_ms


def test_a_dataset_row_reports_its_dataset_not_zero_lengths(tmp_path, catalog):
    """An MLPerf row gives its lengths as a dataset (isl/osl empty): the JSON row names the
    dataset with isl/osl null, and the table shows the dataset where fixed rows show isl/osl,
    never '0/0'."""
    p = tmp_path / "m.csv"
    p.write_text(
        "id,model_path,system,backend,precision,kind,dataset,isl,osl,tp_size,replicas,output_tokens_per_s\n"
        "off,meta-llama/Llama-2-70b-chat-hf,mi325x,vllm,fp8,offline,mlperf-llama2-70b,,,1,8,33928.1\n"
        "fix,meta-llama/Llama-2-70b-chat-hf,mi325x,vllm,fp8,offline,,1024,256,1,8,33928.1\n"
    )
    report = validate_rows(read_csv(p), catalog)
    rows = {r["id"]: r for r in report_dict(report)["rows"]}
    assert (rows["off"]["dataset"], rows["off"]["isl"], rows["off"]["osl"]) == ("mlperf-llama2-70b", None, None)
    assert (rows["fix"]["dataset"], rows["fix"]["isl"], rows["fix"]["osl"]) == (None, 1024, 256)
    from sizer.validate import render_table

    table = render_table(report, rows="all")
    off_line = next(line for line in table.splitlines() if line.startswith("off "))
    assert "mlperf-llama2-70b" in off_line and " 0/0 " not in off_line


def test_an_offline_row_below_the_roofline_says_its_load_in_offline_terms(tmp_path, catalog):
    # Found by benchmarks/fuzz.py's measurement files (case 3051): an Offline row with a measured
    # TPOT and no concurrency formatted None as its load, an internal error
    p = tmp_path / "m.csv"
    p.write_text(
        "id,model_path,system,backend,precision,kind,isl,osl,tp_size,output_tokens_per_s,silicon_tpot_ms\n"
        "fast,meta-llama/Llama-3.1-70B,h200_sxm,vllm,fp8,offline,1024,256,1,5000,1\n"
    )
    report = validate_rows(read_csv(p), catalog)
    (skipped,) = report.skipped
    assert skipped.reason.startswith("measured TPOT 1.00 ms is below ") and "every request queued at once) at 100 % of the datasheet" in skipped.reason


@pytest.mark.parametrize("sep", [";", "\t"])
def test_a_file_separated_by_another_character_says_so(tmp_path, root, sep):
    # a spreadsheet in a locale whose decimal mark is the comma saves ";"-separated "CSV": the
    # reader saw one column and said only that model_path was missing
    bad = tmp_path / "mine.csv"
    bad.write_text(sep.join(["model_path", "system", "backend", "precision", "isl", "osl", "silicon_ttft_ms"]) + "\n" + sep.join(["meta-llama/Llama-3.1-70B", "h100_sxm", "vllm", "fp8", "100", "100", "50"]) + "\n")
    run = subprocess.run([sys.executable, "-m", "sizer", "validate", "--measurements", str(bad)], capture_output=True, text=True, cwd=root)
    assert run.returncode == 4 and "Traceback" not in run.stderr  # a CSV that does not parse, as README's table says
    assert run.stderr.strip() == f"error: {bad}: not comma-separated: its header is one column holding {sep!r} (save it as CSV with commas)"


def test_published_rows_take_mlperf_scenario_names_too(tmp_path):
    from sizer.measurements import read_published

    p = tmp_path / "published.yaml"
    p.write_text(
        "rows:\n"
        "- {id: s, source: x, kind: server, model: meta-llama/Llama-2-70b-chat-hf, system: h100_sxm, engine: trtllm, precision: fp8,\n"
        "   dataset: mlperf-llama2-70b, request_rate_rps: 10, output_tokens_per_s: 2500}\n"
        "- {id: o, source: x, kind: offline, model: meta-llama/Llama-2-70b-chat-hf, system: h100_sxm, engine: trtllm, precision: fp8,\n"
        "   dataset: mlperf-llama2-70b, output_tokens_per_s: 3000}\n"
    )
    assert [(r.row_id, r.kind) for r in read_published(p)] == [("s", "rate"), ("o", "offline")]


def test_no_prediction_is_below_its_rows_no_queue_floor(catalog):
    """validate.ttft_floor_s is what a request takes with nothing ahead of it: the request
    overhead plus the prompt prefilled alone (plus the KV transfer, disaggregated). Every
    closed-loop, open-loop, batch-wave and disaggregated row's predicted TTFT is at least that:
    queues, waves and held steps only add. (Under the old mixed step, whose weight reads were the decoding
    batch's experts only, 7 of the 2,109 shipped rows were predicted 2-9 % under their floor:
    MiniMax-M2.5 on B200/B300 at 4 clients, gpt-oss-120b on one B200, DeepSeek-R1 at 1 client.)
    The floor is also hand-checked on one row: Llama-3.1-8B on one H100 has its own
    prefill_s(isl) + request overhead."""
    import numpy as np

    from sizer.validate import build_setup, predict, ttft_floor_s

    resolved = [x for x in (resolve(r, catalog) for r in shipped_rows(catalog.root / "measurements")) if isinstance(x, Resolved) and x.row.kind in ("concurrency", "rate", "batch")]
    assert len(resolved) > 2000 and any(x.row.mode == "disagg" for x in resolved)
    setup = build_setup(resolved)
    pred = predict(setup)
    floor = ttft_floor_s(setup)
    finite = np.isfinite(pred.ttft_s)
    assert finite.sum() > 2000
    assert (pred.ttft_s[finite] >= floor[finite] * (1 - 1e-9)).all()
    i = next(k for k, x in enumerate(resolved) if x.model.name == "llama-3.1-8b" and x.gpu.name == "H100-SXM" and x.row.mode == "agg")
    s = setup.step.take(np.array([i]))
    assert floor[i] == pytest.approx(s.prefill_s(setup.isl[[i]])[0] + s.request_overhead_s[0], rel=1e-12)


def test_a_stated_running_cap_makes_the_rest_of_a_wave_wait(tmp_path, catalog):
    """dstack's 'TGI vs vLLM on 8 x MI300X' runs (dstackai/benchmarks@06c957ab, amd/tgi_vs_vllm)
    launched `vllm serve` 0.6.3 without --max-num-seqs: V0's SchedulerConfig default of 256 held
    the running batch, so at 1,024 prompts sent at once the measured TPOT (436 ms) stayed near
    the 512-prompt run's (419 ms) where a model running all 1,024 together said 1,730 ms. With
    the cap stated, the 1,024-prompt wave is four waves of 256: each request decodes at the
    256-batch step (TPOT equal to the 256-prompt wave's) and waits for the waves before it, half
    of the three on average (queueing.batch_wave)."""
    from sizer.measurements import Resolved, resolve
    from sizer.validate import build_setup, predict

    head = "id,model_path,system,backend,backend_version,precision,kind,isl,osl,concurrency,tp_size,max_num_seqs,silicon_ttft_ms,silicon_tpot_ms\n"
    line = "{id},meta-llama/Llama-3.1-405B-Instruct,mi300x,vllm,0.6.3,bf16,batch,80,60,{n},8,{cap},5000,400\n"
    p = tmp_path / "m.csv"
    p.write_text(head + line.format(id="n256", n=256, cap="") + line.format(id="n1024", n=1024, cap=256) + line.format(id="free", n=1024, cap=""))
    rows = read_csv(p)
    assert [r.max_num_seqs for r in rows] == [None, 256, None]
    res = [resolve(r, catalog) for r in rows]
    assert all(isinstance(r, Resolved) for r in res)
    setup = build_setup(res)
    assert setup.capacity[1] == 256 and setup.capacity[2] > 256  # the KV pool alone holds more than 256
    out = predict(setup)
    tpot_256, tpot_capped, tpot_free = out.tpot_s
    assert tpot_capped == pytest.approx(tpot_256, rel=1e-12)
    assert tpot_free > 2 * tpot_capped  # all 1,024 in one batch: the step of a 4x larger batch
    # elapsed: one wave (plus the last prefill step) at 256, four at 1,024 -> one wave's duration
    elapsed_256, elapsed_1024 = 256 * 60 / out.output_tokens_per_s[0], 1024 * 60 / out.output_tokens_per_s[1]
    wave_s = (elapsed_1024 - elapsed_256) / 3
    assert wave_s > 0
    # TTFT: the 256-wave's, plus half of the three earlier waves
    assert out.ttft_s[1] - out.ttft_s[0] == pytest.approx(1.5 * wave_s, rel=1e-9)


def test_a_running_cap_that_is_not_a_whole_number_skips_the_row(tmp_path, catalog):
    p = tmp_path / "m.csv"
    p.write_text(CELL_HEAD.replace("\n", ",max_num_seqs\n") + _cell_row().replace("\n", ",\n") + _cell_row().replace("r,", "bad,", 1).replace("\n", ",2.5\n"))
    report = validate_rows(read_csv(p), catalog)
    assert [r.row.row_id for r in report.results] == ["r"]
    assert [(s.row.row_id, s.reason) for s in report.skipped] == [("bad", "max_num_seqs: expected a whole number >= 1, got '2.5'")]


def test_a_rows_engine_defaults_are_its_releases(tmp_path, catalog):
    """A row runs its own release's defaults, not those of the release sizer plans for. vLLM V0
    (0.6.3, vllm/config.py SchedulerConfig) budgets max(max_model_len, 2048) tokens a step without
    chunked prefill and turns chunked prefill on, with 512 tokens a step, above a 32K context
    (arg_utils.py); launched without --max-model-len it takes the model's own context, 131,072 for
    Llama-3.1-405B: 512. Launched with --max-model-len 20000 (the `max_model_len` column): no
    chunked prefill, 20,000. V1 (0.19, EngineArgs get_batch_defaults) budgets 8,192 on a GPU of
    70 GiB or more. An empty release, a label without digits and an MLPerf label take the
    engine's default release."""
    from sizer.measurements import resolve
    from sizer.validate import kv_capacity_sequences, row_release

    head = "id,model_path,system,backend,backend_version,precision,kind,isl,osl,concurrency,tp_size,max_model_len,silicon_ttft_ms,silicon_tpot_ms\n"
    line = "{v}{tag},meta-llama/Llama-3.1-405B-Instruct,mi300x,vllm,{v},bf16,batch,10000,122,8,8,{mml},50000,400\n"
    p = tmp_path / "m.csv"
    p.write_text(head + "".join(line.format(v=v, tag="", mml="") for v in ("0.6.3", "0.19.0", "", "gpt-oss-dev", "mlperf-v4.1")) + line.format(v="0.6.3", tag="-20k", mml=20000))
    rows = {r.row_id if r.engine_version else "empty": r for r in read_csv(p)}
    assert rows["0.6.3-20k"].max_model_len == 20000 and rows["0.6.3"].max_model_len is None
    budgets = {k: kv_capacity_sequences(resolve(r, catalog))[1] for k, r in rows.items()}
    assert budgets["0.6.3"] == 512
    assert budgets["0.6.3-20k"] == 20000
    assert budgets["0.19.0"] == 8192
    assert budgets["empty"] == budgets["gpt-oss-dev"] == budgets["mlperf-v4.1"] == 8192
    assert [row_release(rows[k]) for k in ("0.6.3", "0.19.0", "empty", "gpt-oss-dev", "mlperf-v4.1")] == ["0.6.3", "0.19.0", None, None, None]


def test_a_stated_context_the_row_does_not_fit_skips_it(tmp_path, catalog):
    """`max_model_len` is the context the run was launched with: a row whose prompt and output do
    not fit in it did not run its stated lengths (vLLM rejects a longer prompt and stops a sequence
    at the context), and a context beyond the model's own is one no engine launches; each is
    skipped with one line naming the figures. A row whose lengths fit is modelled."""
    head = "id,model_path,system,backend,backend_version,precision,kind,isl,osl,concurrency,tp_size,max_model_len,silicon_ttft_ms,silicon_tpot_ms\n"
    line = "{id},meta-llama/Llama-3.1-8B-Instruct,h100_sxm,vllm,0.6.3,bf16,concurrency,1000,100,8,1,{mml},100,10\n"
    p = tmp_path / "m.csv"
    p.write_text(head + line.format(id="short", mml=500) + line.format(id="huge", mml=200000) + line.format(id="fits", mml=1100))
    report = validate_rows(read_csv(p), catalog)
    assert [r.row.row_id for r in report.results] == ["fits"]
    reasons = {s.row.row_id: s.reason for s in report.skipped}
    assert reasons["short"].startswith("isl + osl = 1,100 tokens exceeds the context the run was launched with (max_model_len 500)")
    assert reasons["huge"].startswith("max_model_len 200,000 exceeds llama-3.1-8b's context, max_position_embeddings 131,072")


def test_vllm_0_7_turns_chunked_prefill_off_for_latent_attention(tmp_path, catalog):
    """vLLM 0.7 forces chunked prefill off for a model with multi-head latent attention ("MLA is
    enabled; forcing chunked prefill and prefix caching to be disabled", the 0.7.1 and 0.7.3
    startup logs quoted in vllm-project/vllm#13374 and vllm-ascend's): DeepSeek-R1 launched
    without --max-model-len (163,840, its max_position_embeddings) budgets the whole context a
    step, where Llama-3.1-405B on the same release (131,072) gets chunked prefill's 2,048."""
    from sizer.measurements import resolve
    from sizer.validate import kv_capacity_sequences

    head = "id,model_path,system,backend,backend_version,precision,kind,isl,osl,concurrency,tp_size,silicon_ttft_ms,silicon_tpot_ms\n"
    p = tmp_path / "m.csv"
    p.write_text(
        head
        + "r1,deepseek-ai/DeepSeek-R1,h200_sxm,vllm,0.7.3,fp8,concurrency,3200,800,8,8,1000,30\n"
        + "l405,meta-llama/Llama-3.1-405B-Instruct-FP8,h200_sxm,vllm,0.7.3,fp8,concurrency,3200,800,8,8,1000,30\n"
    )
    rows = {r.row_id: r for r in read_csv(p)}
    assert kv_capacity_sequences(resolve(rows["r1"], catalog))[1] == 163840
    assert kv_capacity_sequences(resolve(rows["l405"], catalog))[1] == 2048


def _first_token_csv(tmp_path, *lines: str):
    """Rows in the form of the shipped TensorRT-LLM 0.9.0 perf-overview first-token rows."""
    head = "id,model_path,system,backend,backend_version,precision,kv_dtype,kind,isl,osl,concurrency,tp_size,max_num_batched_tokens,in_process,silicon_ttft_ms\n"
    p = tmp_path / "m.csv"
    p.write_text(head + "".join(lines))
    return p


def test_in_process_is_read_as_yes_or_no_and_only_for_requests_sent_at_once_or_at_a_rate(tmp_path, catalog):
    p = _first_token_csv(
        tmp_path,
        "yes,meta-llama/Llama-2-7b-hf,a100_sxm,trtllm,0.9.0,fp16,fp16,batch,2048,1,1,1,2048,yes,132.4\n",
        "blank,meta-llama/Llama-2-7b-hf,a100_sxm,trtllm,0.9.0,fp16,fp16,batch,2048,1,1,1,2048,,132.4\n",
        "no,meta-llama/Llama-2-7b-hf,a100_sxm,trtllm,0.9.0,fp16,fp16,batch,2048,1,1,1,2048,No,132.4\n",
        "maybe,meta-llama/Llama-2-7b-hf,a100_sxm,trtllm,0.9.0,fp16,fp16,batch,2048,1,1,1,2048,maybe,132.4\n",
        "clients,meta-llama/Llama-2-7b-hf,a100_sxm,trtllm,0.9.0,fp16,fp16,concurrency,2048,128,8,1,2048,yes,132.4\n",
    )
    rate = tmp_path / "rate.csv"  # an MLPerf LoadGen harness handing requests to the engine in-process (AMD's)
    rate.write_text(
        "id,model_path,system,backend,precision,kind,isl,osl,request_rate_rps,tp_size,in_process,silicon_ttft_ms\n"
        "lg,meta-llama/Llama-2-70b-hf,mi300x,vllm,fp8,server,200,300,9,1,yes,400\n"
    )
    (lg,) = read_csv(rate)
    assert lg.in_process and lg.invalid is None and lg.kind == "rate"
    rows = {r.row_id: r for r in read_csv(p)}
    assert [rows[k].in_process for k in ("yes", "blank", "no")] == [True, False, False]
    assert rows["maybe"].invalid == "in_process: expected yes or no, got 'maybe'"
    assert rows["clients"].invalid == "in_process: an in-process benchmark sends its requests at once (kind batch or offline) or at a rate from its own load generator (kind rate), not kind concurrency"
    # the flag is part of the configuration: a served and an in-process sweep never share a group
    assert rows["yes"].config_key != rows["blank"].config_key


def test_published_yaml_in_process_on_a_closed_loop_is_an_error(tmp_path):
    from sizer.errors import FieldValueError
    from sizer.measurements import read_published

    p = tmp_path / "published.yaml"
    p.write_text(
        "rows:\n- {id: x, source: s, model: meta-llama/Llama-2-7b-hf, system: a100_sxm, engine: trtllm, precision: fp16,"
        " kind: concurrency, isl: 128, osl: 128, concurrency: 8, ttft_ms: 20, in_process: true}\n"
    )
    with pytest.raises(FieldValueError, match=r"rows\[0\]\.in_process: an in-process benchmark sends its requests at once \(kind batch or offline\) or at a rate from its own load generator \(kind rate\), not kind concurrency"):
        read_published(p)


def test_published_yaml_reads_prompt_grouping_on_rate_rows_only(tmp_path):
    """published.yaml takes `batcher_window_ms` and `prefill_group` as the CSV does: on a rate row,
    one of them; elsewhere an error naming the row and the field."""
    from sizer.errors import FieldValueError
    from sizer.measurements import read_published

    row = "- {id: x, source: s, model: meta-llama/Llama-2-70b-hf, system: mi300x, engine: vllm, precision: fp8, isl: 200, osl: 300, ttft_ms: 900, "
    p = tmp_path / "published.yaml"
    p.write_text("rows:\n" + row + "kind: server, request_rate_rps: 70, replicas: 8, batcher_window_ms: 300}\n" + row.replace("id: x", "id: y") + "kind: rate, request_rate_rps: 13, prefill_group: 13}\n")
    x, y = read_published(p)
    assert (x.batcher_window_ms, x.prefill_group, x.request_rate_rps) == (300.0, None, 8.75)
    assert (y.batcher_window_ms, y.prefill_group) == (None, 13)
    p.write_text("rows:\n" + row + "kind: concurrency, concurrency: 8, prefill_group: 13}\n")
    with pytest.raises(FieldValueError, match=r"rows\[0\]\.prefill_group: read on kind rate only \(how an open loop's prompts reach a replica\), not on kind concurrency"):
        read_published(p)
    p.write_text("rows:\n" + row + "kind: rate, request_rate_rps: 13, prefill_group: 0}\n")
    with pytest.raises(FieldValueError, match=r"rows\[0\]\.prefill_group"):
        read_published(p)


def test_compiled_engine_is_tensorrt_llm_before_1_0_driven_in_process():
    """gptSessionBenchmark and trtllm-bench of TensorRT-LLM 0.x run TensorRT engines (trtllm-build);
    a served row's 0.x label can be a Dynamo runtime's (InferenceX: ai-dynamo/tensorrtllm-runtime:0.8.1.post2)."""
    from dataclasses import replace

    from sizer.measurements import compiled_engine

    base = _ix_row("meta-llama/Llama-2-7b-hf", "a100_sxm", "trtllm", "fp16", version="0.9.0")
    inproc = replace(base, in_process=True, kind="batch")
    assert compiled_engine(inproc)
    assert not compiled_engine(base)  # served: the release label may be Dynamo's
    assert not compiled_engine(replace(inproc, engine_version="1.2.0rc6.post3"))  # 1.0+: the PyTorch flow by default
    assert not compiled_engine(replace(inproc, engine_version=""))  # release unknown
    assert not compiled_engine(replace(inproc, engine="vllm"))


def test_an_in_process_first_token_row_drops_the_request_and_eager_layer_overheads(tmp_path, catalog):
    """TensorRT-LLM 0.9.0 perf overview ('Low Latency' table 'A100 GPUs (FP16)': '| LLaMA 7B | 1 | 1 |
    2048 | 132.4 |', WhiteD2125/TensorRT-LLM@6ad7cf1b docs/source/performance/perf-overview.md): one
    2,048-token prompt, one output token, gptSessionBenchmark. Its TTFT is the prompt's prefill step
    alone: the served prediction of the same row less the step's request overhead (HTTP,
    tokenisation) and the eager per-layer host time of a prefill step (32 layers x
    prefill_layer_overhead_s), which a compiled TensorRT engine does not pay."""
    from sizer.validate import build_setup, predict

    p = _first_token_csv(
        tmp_path,
        "inproc,meta-llama/Llama-2-7b-hf,a100_sxm,trtllm,0.9.0,fp16,fp16,batch,2048,1,1,1,2048,yes,132.4\n",
        "served,meta-llama/Llama-2-7b-hf,a100_sxm,trtllm,0.9.0,fp16,fp16,batch,2048,1,1,1,2048,,132.4\n",
    )
    res = [resolve(r, catalog) for r in read_csv(p)]
    assert all(isinstance(r, Resolved) for r in res)
    setup = build_setup(res)
    ttft = predict(setup).ttft_s
    step = setup.step
    assert list(setup.front_end) == [0.0, 1.0] and list(step.eager_prefill) == [0.0, 1.0]
    layers = res[0].model.num_hidden_layers
    assert layers == 32
    overheads = step.request_overhead_s[1] + layers * step.prefill_layer_overhead_s[1]
    assert ttft[1] - ttft[0] == pytest.approx(overheads, rel=1e-9)
    assert overheads > 0.02  # tens of ms: the served row's figure would carry them against a 132 ms measurement


def test_a_disaggregated_closed_loop_holds_littles_law_at_every_load(catalog):
    """N clients of a disaggregated deployment cycle through TTFT + (E[O]-1) TPOT, so its rate r
    and figures hold N = r x (TTFT + (osl - 1) x TPOT) (Little's law) at every concurrency, and
    TTFT grows with N. Until 2026-12-03 the rate came of a fixed-point iteration that, once the
    prefill pool was busy, alternated between two values (DeepSeek-R1 FP8 on B200, SGLang, one
    tp=1 x dp=8 prefill worker at 288 clients: 19.5 s and 216 s) and returned whichever the 30th
    iteration held. Past the pool's capacity (workers / worker-seconds a prompt) the rate is that
    capacity and the clients beyond it wait in the prefill queue."""
    from dataclasses import replace

    import numpy as np

    from sizer.validate import build_setup, predict

    base = replace(_ix_disagg_row(8.0, source="hand-made; no recipe"), isl=8192.0, osl=1024.0)
    concurrency = [1.0, 4.0, 16.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 4096.0]
    resolved = [resolve(replace(base, concurrency=c), catalog) for c in concurrency]
    assert all(isinstance(r, Resolved) for r in resolved)
    setup = build_setup(resolved)
    p = predict(setup)
    rate = p.output_tokens_per_s / setup.osl
    cycle = rate * (p.ttft_s + (setup.osl - 1) * p.tpot_s)
    np.testing.assert_allclose(cycle, setup.concurrency, rtol=1e-6)
    assert np.all(np.diff(p.ttft_s) > 0)
    # the pool's capacity: one worker, isl x prefill_per_token_s worker-seconds a prompt
    capacity = 1.0 / (8192.0 * setup.prefill_step.prefill_per_token_s(setup.isl))
    assert rate[0] < 0.5 * capacity[0]  # one client: far below it
    assert rate[-1] == pytest.approx(0.999 * capacity[-1], rel=1e-6)  # 4,096 clients: at it


def _named_row(model_id, precision="fp8"):
    from sizer.measurements import MeasuredRow

    return MeasuredRow(
        row_id="x", source="s", origin="t", model_id=model_id, system="h100_sxm", engine="vllm", engine_version="",
        precision=precision, mode="agg", kind="concurrency", isl=512.0, osl=128.0, concurrency=8.0, tp=1, ttft_ms=100.0, tpot_ms=10.0,
    )


@pytest.mark.parametrize(
    "model_id, name",
    [
        # MLPerf's benchmark names (mlcommons/inference loadgen/mlperf.conf) and accuracy targets
        ("llama2-70b-99", "llama-2-70b"),
        ("llama2-70b-99.9", "llama-2-70b"),
        ("llama2-70b-interactive", "llama-2-70b"),
        ("llama3_1-8b", "llama-3.1-8b"),
        ("llama3_1-405b-interactive", "llama-3.1-405b"),
        # the Edge suite's llama3_1-8b-edge (the reference SUT_VLLM.py's --lg-model-name choices)
        ("llama3_1-8b-edge", "llama-3.1-8b"),
        ("deepseek-r1-interactive-99", "deepseek-r1"),
        # quantised checkpoints the submitters and vendors publish: the row's precision is the format
        ("amd/Llama-2-70b-chat-hf-FP8-KV", "llama-2-70b"),
        ("amd/Mixtral-8x7B-Instruct-v0.1-FP8-KV", "mixtral-8x7b"),
        ("nvidia/DeepSeek-R1-0528-FP4", "deepseek-r1"),
        ("amd/DeepSeek-R1-0528-MXFP4-Preview", "deepseek-r1"),
        ("RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8-dynamic", "llama-3.1-8b"),
        # a date tag (catalog.match_model)
        ("deepseek-ai/DeepSeek-R1-0528", "deepseek-r1"),
        # a catalogued FP8 checkpoint keeps its own entry
        ("Qwen/Qwen3-32B-FP8", "qwen3-32b-fp8"),
    ],
)
def test_a_rows_checkpoint_resolves_to_its_architecture(catalog, model_id, name):
    from sizer.measurements import Resolved, resolve

    res = resolve(_named_row(model_id), catalog)
    assert isinstance(res, Resolved), res
    assert res.model_name == name


def test_aiconfigurators_quant_mode_columns_are_read_not_dropped(tmp_path, catalog):
    """The silicon sample's gemm_quant_mode and moe_quant_mode (aiconfigurator's GEMMQuantMode and
    MoEQuantMode): a row without a precision takes the GEMM mode's where the expert mode stores the
    same bits (fp8 with fp8_block experts: FP8, the same prediction as the row that says fp8), the
    checkpoint's own format where they differ (gpt-oss: BF16 attention, MXFP4 experts); an MoE row
    whose experts are stored in other bits than its precision (w4afp8: 4-bit experts under FP8)
    is skipped with the reason, not sized with twice the expert bytes it streams."""
    from sizer.measurements import _precision_of_quant_modes
    from sizer.validate import build_setup, predict

    assert _precision_of_quant_modes("fp8", "fp8_block") == "fp8"
    assert _precision_of_quant_modes("nvfp4", "nvfp4") == "fp4"
    assert _precision_of_quant_modes("int4_wo", "") == "int4"
    assert _precision_of_quant_modes("bfloat16", "w4a16_mxfp4") == ""
    assert _precision_of_quant_modes("fp8", "w4afp8") == ""
    assert _precision_of_quant_modes("", "") == ""
    head = "id,silicon_data_source,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n"
    rest = ",agg,1024,1024,{g},{m},16,8,1,1,1,8,200,20\n"
    (tmp_path / "q.csv").write_text(
        head
        + "said,x,trtllm,1.0,deepseek-ai/DeepSeek-V3,h200_sxm,fp8" + rest.format(g="fp8", m="fp8_block")
        + "modes,x,trtllm,1.0,deepseek-ai/DeepSeek-V3,h200_sxm," + rest.format(g="fp8", m="fp8_block")
        + "w4a8,x,trtllm,1.0,deepseek-ai/DeepSeek-V3,h200_sxm,fp8" + rest.format(g="fp8", m="w4afp8")
        + "oss,x,trtllm,1.0,openai/gpt-oss-120b,h200_sxm," + rest.format(g="bfloat16", m="w4a16_mxfp4")
    )
    said, modes, w4a8, oss = (resolve(r, catalog) for r in read_csv(tmp_path / "q.csv"))
    assert modes.row.precision == "fp8" and modes.weight_dtype == said.weight_dtype == "fp8"
    pred = predict(build_setup([said, modes]))
    assert pred.tpot_s[0] == pred.tpot_s[1]
    assert isinstance(w4a8, Skipped) and w4a8.reason.startswith("moe_quant_mode 'w4afp8' stores the experts in 4 bits where the precision gives 8 (fp8)")
    assert oss.row.precision == "" and oss.weight_dtype == "mxfp4"


def test_a_quantised_checkpoint_without_a_precision_is_skipped_with_the_reason(catalog):
    """The format words dropped to find the architecture are not dropped silently: a row naming an
    FP8 checkpoint and no precision would otherwise be modelled at the model's own BF16."""
    from sizer.measurements import Skipped, resolve

    res = resolve(_named_row("amd/Llama-2-70b-chat-hf-FP8-KV", precision=""), catalog)
    assert isinstance(res, Skipped)
    assert res.reason == "model 'amd/Llama-2-70b-chat-hf-FP8-KV' is a checkpoint of llama-2-70b stored as FP8, but the row gives no precision (fill `precision`)"
    unknown = resolve(_named_row("Qwen/Qwen3-14B-FP8"), catalog)
    assert isinstance(unknown, Skipped) and "is not in the model catalog" in unknown.reason


def test_a_row_longer_than_its_models_context_is_skipped_with_the_reason(catalog):
    """isl + osl beyond max_position_embeddings (Llama-2-70B: 4,096) ran on no engine as recorded (a
    typo, or a rope-scaled launch the catalog model does not describe): skipped, not scored as a
    100 % miss."""
    from dataclasses import replace

    from sizer.measurements import Resolved, Skipped, resolve

    row = replace(_named_row("meta-llama/Llama-2-70b-chat-hf"), system="mi300x", isl=3072.0, osl=1024.0)
    assert isinstance(resolve(row, catalog), Resolved)  # 4,096 exactly: the whole context
    res = resolve(replace(row, osl=1025.0), catalog)
    assert isinstance(res, Skipped)
    assert res.reason.startswith("isl + osl = 4,097 tokens exceeds llama-2-70b's context, max_position_embeddings 4,096")


def test_a_row_with_more_cells_than_its_header_is_skipped_not_shifted(tmp_path):
    """pandas takes a data row's extra leading cells as an index, which shifts every value one
    column on (replicas read from output_tokens_per_s): the row is skipped with what is wrong."""
    from sizer.measurements import read_csv

    header = "id,model_path,system,backend,precision,kind,dataset,isl,osl,tp_size,replicas,request_rate_rps,output_tokens_per_s,samples_per_s,silicon_ttft_ms,silicon_tpot_ms\n"
    row = "srv,meta-llama/Llama-2-70b-chat-hf,mi300x,vllm,fp8,rate,mlperf-llama2-70b,,,1,8,73.66,21028.23,71.74,1006.33,143.10"
    path = tmp_path / "mine.csv"
    path.write_text(header + row + ",1,2\n")
    (only,) = read_csv(path)
    assert only.invalid == "18 cells where the header has 16: a value holding an unquoted comma?"
    assert only.replicas == 8 and only.request_rate_rps == pytest.approx(73.66 / 8)  # per replica, its own column
    path.write_text(header + row + "\n")
    assert read_csv(path)[0].invalid is None


def test_the_extra_cells_check_pairs_rows_across_blank_and_empty_lines(tmp_path):
    """Blank and whitespace-only lines (which pandas skips) and a line of commas alone (a row of
    empty cells, which it keeps) do not shift which row is told it has too many cells."""
    from sizer.measurements import read_csv

    header = "id,model_path,system,backend,precision,kind,dataset,isl,osl,tp_size,replicas,request_rate_rps,output_tokens_per_s,samples_per_s,silicon_ttft_ms,silicon_tpot_ms\n"
    row = "{},meta-llama/Llama-2-70b-chat-hf,mi300x,vllm,fp8,rate,mlperf-llama2-70b,,,1,8,73.66,21028.23,71.74,1006.33,143.10"
    path = tmp_path / "mine.csv"
    path.write_text(header + row.format("a") + ",x\n\n" + "," * 15 + "\n   \n" + row.format("b") + "\n")
    rows = {r.row_id: r for r in read_csv(path)}
    assert rows["a"].invalid == "17 cells where the header has 16: a value holding an unquoted comma?"
    assert rows["b"].invalid is None
    assert len(rows) == 3  # a, the empty row (its own reason), b


def test_a_bound_runs_latencies_are_also_given_below_its_edge_and_the_move_is_summarised(shipped):
    """Every bound run with figures at the model's largest rate also has them at EDGE_SHARE (95 %)
    of it; the queue and the running batch only shrink with the rate, so both latencies are lower
    there; and summary.bounded_rate.edge_sensitivity is the median of the runs' relative moves,
    recomputed here by hand from the rows."""
    import math
    import statistics

    from sizer.validate import EDGE_SHARE, bounded_rates

    runs = [r for r in shipped.results if r.predicted_max_rate_rps is not None and r.copy_of is None and r.role == "score"]
    assert EDGE_SHARE == 0.95 and len(runs) >= 30
    with_below = [r for r in runs if r.predicted_tpot_ms_below_edge is not None]
    assert len(with_below) >= len(runs) - 2  # only runs whose edge figures are not finite lack them
    for r in with_below:
        assert r.predicted_tpot_ms_below_edge <= r.predicted_tpot_ms * (1 + 1e-9), r.row.row_id
        assert r.predicted_ttft_ms_below_edge <= r.predicted_ttft_ms * (1 + 1e-9), r.row.row_id
    moves = sorted(abs(r.predicted_tpot_ms - r.predicted_tpot_ms_below_edge) / r.predicted_tpot_ms * 100 for r in with_below if math.isfinite(r.predicted_tpot_ms))
    e = bounded_rates(shipped, "score")["edge_sensitivity"]
    assert e["rate_share"] == 0.95
    # _pct's median: numpy's linear interpolation, as statistics.median on an even count
    assert e["tpot_median_move_pct"] == pytest.approx(statistics.median(moves), abs=0.05)
    assert e["tpot_median_move_pct"] > 5  # a 5 % rate error moves the figures at the edge by more than 5 %


def test_known_columns_are_the_columns_the_reader_reads():
    """KNOWN_COLUMNS (what column_warnings stays silent on) is what _csv_row and _worker read: a
    column the code reads and the list leaves out would be reported as ignored, one the list keeps
    and no code reads would be dropped without a word."""
    import inspect
    import re

    from sizer import measurements as M

    src = inspect.getsource(M._csv_row) + inspect.getsource(M._worker)
    row = set(re.findall(r'(?:get|cells\.(?:text|number|whole|flag|missing))\(\s*"([a-z0-9_]+)"', src))
    worker = set(re.findall(r'prefix \+ "([a-z0-9_]+)"', src))
    read = row | {f"{side}_{c}" for side in ("prefill", "decode") for c in worker} | set(M._TTFT) | set(M._TPOT)
    assert read - M.KNOWN_COLUMNS == set()
    # listed without a reader in that code: free text, and the workers' moe_tp_size (their layout
    # is read from tp and ep), both columns of aiconfigurator's silicon sample
    assert M.KNOWN_COLUMNS - read == {"notes", "prefill_moe_tp_size", "decode_moe_tp_size"}


def test_a_column_sizer_does_not_read_is_reported_not_dropped(tmp_path, root):
    """A measurement file's column that sizer does not read is named on stderr and in the JSON's
    `warnings`, with the known column it is closest to; the shipped files' columns (aiconfigurator's
    silicon sample, the public serving table) raise none."""
    from sizer.measurements import column_warnings

    for shipped in ("aiconfigurator_silicon_sample.csv", "public_serving.csv"):
        assert column_warnings(root / "catalogs" / "measurements" / shipped) == []
    mine = tmp_path / "mine.csv"
    mine.write_text(
        "id,model_path,system,backend,precision,kind,dataset,tp_size,replicas,output_tokens_per_s,num_gpus,silicon_ttft_msec\n"
        "x,llama2-70b-99,mi325x,vllm,fp8,offline,mlperf-llama2-70b,1,8,33928.1,8,\n"
    )
    assert column_warnings(mine) == [
        f"{mine}: column 'num_gpus' is not one sizer reads: its values are ignored",
        f"{mine}: column 'silicon_ttft_msec' is not one sizer reads: its values are ignored (did you mean 'silicon_ttft_ms'?)",
    ]
    run = subprocess.run([sys.executable, "-m", "sizer", "validate", "--measurements", str(mine), "--format", "json"], capture_output=True, text=True, cwd=root)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["warnings"] == column_warnings(mine)
    assert run.stderr.splitlines() == [f"warning: {w}" for w in column_warnings(mine)]


@pytest.mark.parametrize(
    "cell, engine",
    [
        ("vLLM", "vllm"),
        ("TensorRT-LLM", "trtllm"),
        ("tensorrt_llm", "trtllm"),
        ("SGLang", "sglang"),
        # a cell that says more than the engine names the one engine it mentions
        ("vllm-rocm", "vllm"),
        ("ROCm vLLM 0.9", "vllm"),
        ("TensorRT 10.8, CUDA 12.8", "trtllm"),  # MLPerf's software column: NVIDIA's LLM harness is TensorRT-LLM's
        ("nvidia-trt", "trtllm"),
        ("dynamo-sglang", "sglang"),
        # two engines, or none, name none: the row is skipped saying the engine is not modelled
        ("vLLM, TensorRT", "vllm, tensorrt"),
        ("pytorch", "pytorch"),
        ("strtx", "strtx"),
    ],
)
def test_a_backend_cell_names_the_engine_it_mentions(cell, engine):
    from sizer.measurements import engine_name

    assert engine_name(cell) == engine


def test_the_p99_summary_scores_the_logged_p99s_by_hand(tmp_path, catalog):
    """summary.p99 over hand-set figures. Three rate runs logged TTFT p99s of 100, 200 and 400 ms
    and the model gives 120, 150 and 400: 20, 25 and 0 % off, so the median is 20 % and the p90
    24 % (numpy's linear rule: 0.9 x 2 = 1.8 of the way through 0, 20, 25). The log ratios are
    log 1.2 = +0.1823, log 0.75 = -0.2877 and 0, so the median is 0. Only the first logged a TPOT
    p99: 50 ms against 40 predicted, 25 % off, log 1.25 = +0.2231. A closed loop that logged a p99
    has no percentile in the model (the planner's tail model is Poisson arrivals): not_modelled 1."""
    from dataclasses import replace

    from sizer.validate import Report, p99_errors

    path = tmp_path / "mine.csv"
    path.write_text(
        "id,model_path,system,backend,precision,kind,isl,osl,concurrency,request_rate_rps,tp_size,silicon_ttft_ms,silicon_tpot_ms\n"
        "r,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,vllm,bf16,rate,1024,128,,4,1,45,9.5\n"
        "c,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,vllm,bf16,concurrency,1024,128,8,,1,45,9.5\n"
    )
    rate, closed = validate_rows(read_csv(path), catalog).results

    def run(name, ttft, tpot=None):
        (m_ttft, p_ttft), (m_tpot, p_tpot) = ttft, tpot or (None, None)
        return replace(rate, row=replace(rate.row, row_id=name, ttft_p99_ms=m_ttft, tpot_p99_ms=m_tpot), predicted_ttft_p99_ms=p_ttft, predicted_tpot_p99_ms=p_tpot)

    runs = (run("a", (100.0, 120.0), (40.0, 50.0)), run("b", (200.0, 150.0)), run("c", (400.0, 400.0)))
    looped = replace(closed, row=replace(closed.row, ttft_p99_ms=300.0))
    by_hand = Report(results=(*runs, looped), skipped=(), efficiency_source="", measurements="", roles_used=False)
    assert p99_errors(by_hand, None) == {
        "ttft": {"n": 3, "median_ape": 20.0, "p90_ape": 24.0, "median_log_ratio": 0.0},
        "tpot": {"n": 1, "median_ape": 25.0, "p90_ape": 25.0, "median_log_ratio": 0.2231},
        "runs": 3,
        "not_modelled": 1,
    }
    # a rate the model calls saturated is a miss (inf), as for the means, not a run left out
    saturated = replace(runs[1], predicted_ttft_p99_ms=math.inf)
    assert saturated.p99_ape("ttft") == math.inf
    assert p99_errors(replace(by_hand, results=(runs[0], saturated, runs[2])), None)["ttft"]["median_ape"] == 20.0
    assert p99_errors(replace(by_hand, results=(looped,)), None) == {
        "ttft": {"n": 0, "median_ape": None, "p90_ape": None, "median_log_ratio": None},
        "tpot": {"n": 0, "median_ape": None, "p90_ape": None, "median_log_ratio": None},
        "runs": 0,
        "not_modelled": 1,
    }
    assert p99_errors(replace(by_hand, results=(replace(closed, row=replace(closed.row, ttft_p99_ms=None)),)), None) is None


def test_a_rate_rows_p99_is_the_planners_percentile_at_the_rate_its_means_are_at(tmp_path, catalog):
    """A user's benchmark_serving-style runs (Poisson arrivals at a rate, fixed lengths) with the
    p99s they logged: each gets the planner's p99 TTFT and TPOT (queueing.evaluate_load, what
    sizer solve holds against an SLO) at its own rate, so the same deployment at 4 times the rate
    has the larger p99s; the JSON carries measured, predicted and their error side by side."""
    from sizer.efficiency import efficiency_table
    from sizer.queueing import evaluate_load
    from sizer.validate import build_setup, row_checks

    path = tmp_path / "mine.csv"
    path.write_text(
        "id,model_path,system,backend,backend_version,precision,kind,isl,osl,request_rate_rps,tp_size,silicon_ttft_ms,silicon_tpot_ms,ttft_p99_ms,tpot_p99_ms\n"
        "slow,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,vllm,0.10.1,bf16,rate,1024,128,4,1,45,9.5,120,14\n"
        "fast,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,vllm,0.10.1,bf16,rate,1024,128,16,1,60,12,,18\n"
    )
    rows = read_csv(path)
    report = validate_rows(rows, catalog)
    slow, fast = report.results
    resolved = [resolve(r, catalog) for r in rows]
    setup = build_setup(resolved, efficiency_table(catalog.root))
    demand, limits = row_checks(setup, 0)
    point = evaluate_load(setup.step.take(np.array([0])), np.array([4.0]), demand, limits)
    assert slow.predicted_ttft_p99_ms == pytest.approx(point.ttft_s["p99"][0] * 1000, rel=1e-12)
    assert slow.predicted_tpot_p99_ms == pytest.approx(point.tpot_s["p99"][0] * 1000, rel=1e-12)
    assert demand.prompt.quantile(99) == pytest.approx(1024) and demand.output.quantile(1) == pytest.approx(128)
    # four times the load: the longer queue and the larger running batch raise both tails
    assert fast.predicted_tpot_p99_ms > slow.predicted_tpot_p99_ms
    assert fast.predicted_ttft_p99_ms is None  # this run logged no TTFT p99: nothing to score it against
    row = {r["id"]: r for r in report_dict(report)["rows"]}["slow"]
    assert row["measured_ttft_p99_ms"] == 120.0 and row["measured_tpot_p99_ms"] == 14.0
    assert row["ttft_p99_ape"] == pytest.approx(abs(slow.predicted_ttft_p99_ms - 120.0) / 120.0 * 100, abs=0.006)
    assert row["tpot_p99_ape"] == pytest.approx(abs(slow.predicted_tpot_p99_ms - 14.0) / 14.0 * 100, abs=0.006)


def test_a_bound_runs_p99s_are_the_models_at_its_own_edge(shipped):
    """An MLPerf Server or Interactive run's means are predicted at the model's largest rate within
    the run's p99 bounds, and so are its p99s: there the planner holds both p99s within the bounds
    (the search keeps a margin; what binds may be the KV pool or the running cap instead). The measured p99s are the
    source's as the shipped table records them: HPE DL380a 4 x H100-NVL llama2-70b Server, MLPerf
    v4.1 (its row's silicon_data_source, a mlperf_log_summary.txt: 383.868 and 121.882 ms).

    A run whose harness sent its prompts in groups (batcher_window_ms, prefill_group: AMD's) has
    the grouping's TTFT on top, at the same edge: the edge is the planner's, found without it (a
    harness's condition, not a deployment's), and in these runs TPOT binds, as it bound the
    submissions (p99 TPOT 197-199 ms of 200 for AMD's v4.1 MI300X Server runs)."""
    from sizer.validate import render_table

    runs = [r for r in shipped.results if r.predicted_max_rate_rps and r.row.ttft_p99_ms and r.predicted_ttft_p99_ms is not None]
    assert len(runs) >= 70
    grouped = [r for r in runs if r.predicted_ttft_grouping_ms]
    assert len(grouped) == 8  # AMD's v4.1 MI300X and v5.0 MI325X Server runs
    for r in runs:
        ttft_bound, tpot_bound = r.latency_bounds_ms
        if not r.predicted_ttft_grouping_ms:
            assert r.predicted_ttft_p99_ms <= ttft_bound * (1 + 1e-9), r.row.row_id
        assert r.predicted_tpot_p99_ms <= tpot_bound * (1 + 1e-9), r.row.row_id
        assert r.predicted_tpot_p99_ms >= tpot_bound * 0.9 or not r.predicted_ttft_grouping_ms, r.row.row_id
    hpe = {r["id"]: r for r in report_dict(shipped)["rows"]}["mlperf-v4.1-hpe-hpe_proliant_dl380a_h100_nvl_94gbx4_trt-llama2-70b-server"]
    assert (hpe["measured_ttft_p99_ms"], hpe["measured_tpot_p99_ms"]) == (383.868, 121.882)
    summary_p99 = report_dict(shipped)["summary"]["p99"]
    assert summary_p99["ttft"]["n"] >= 30 and summary_p99["tpot"]["n"] >= 30
    assert summary_p99["not_modelled"] >= 20  # dstack's closed loops and batches logged p99s too
    text = render_table(shipped, rows="none")
    assert f"TTFT p99  {summary_p99['ttft']['n']} runs: median {summary_p99['ttft']['median_ape']:.1f} %" in text


def test_prompt_grouping_columns_are_read_and_refused_where_they_mean_nothing(tmp_path, catalog):
    """`batcher_window_ms` (a harness that gathers the system's requests and sends them to one
    replica) and `prefill_group` (an engine that prefills once that many prompts wait) describe how
    an aggregated open loop's prompts reach a replica: read on kind rate only, one of them a row,
    a group of at most 256 (queueing.prompt_groups sums its arrivals term by term). A grouped rate
    row's TTFT is the open loop's plus the grouping's (PromptGroups.mean_s)."""
    from sizer.queueing import RowLengths, open_loop, prompt_groups
    from sizer.validate import build_setup, predict

    head = "id,model_path,system,backend,precision,kind,isl,osl,request_rate_rps,concurrency,replicas,tp_size,batcher_window_ms,prefill_group,silicon_ttft_ms,silicon_tpot_ms\n"
    m = "meta-llama/Llama-3.1-70B,h200_sxm,vllm,fp8"
    p = tmp_path / "m.csv"
    p.write_text(
        head
        + f"win,{m},rate,1000,200,16,,4,2,300,,900,40\n"
        + f"count,{m},rate,1000,200,4,,1,2,,13,900,40\n"
        + f"plain,{m},rate,1000,200,4,,1,2,,,900,40\n"
        + f"both,{m},rate,1000,200,4,,1,2,300,13,900,40\n"
        + f"loop,{m},concurrency,1000,200,,8,1,2,300,,900,40\n"
        + f"big,{m},rate,1000,200,4,,1,2,,257,900,40\n"
    )
    rows = {r.row_id: r for r in read_csv(p)}
    assert rows["win"].batcher_window_ms == 300.0 and rows["win"].prefill_group is None
    assert rows["count"].prefill_group == 13 and rows["count"].batcher_window_ms is None
    assert rows["both"].invalid == "batcher_window_ms and prefill_group: one grouping rule a row (a harness window or an engine count), not both"
    assert rows["loop"].invalid == "batcher_window_ms: read on kind rate only (how an open loop's prompts reach a replica), not on kind concurrency"
    assert rows["big"].invalid == "prefill_group: expected a whole number from 1 to 256, got 257"
    keep = [resolve(rows[k], catalog) for k in ("win", "count", "plain")]
    setup = build_setup(keep)
    assert list(setup.batcher_window_s) == [0.3, 0.0, 0.0] and list(setup.prefill_group) == [1.0, 13.0, 1.0]
    assert list(setup.replicas) == [4.0, 1.0, 1.0] and list(setup.rate_rps) == [4.0, 4.0, 4.0]  # 16 req/s over 4 replicas
    pred = predict(setup)
    L = RowLengths.fixed(setup.isl, setup.osl)
    base = open_loop(setup.step, setup.rate_rps, setup.isl, setup.osl, setup.budget, lengths=L).ttft_s
    groups = prompt_groups(setup.step, setup.rate_rps, setup.replicas, L, setup.budget, setup.batcher_window_s, setup.prefill_group)
    # 16 req/s x 0.3 s: groups of 4.8, half a window's wait; 13 at 4 req/s: 1.5 s to fill on average
    assert groups.size[:2] == pytest.approx([4.8, 13.0]) and groups.fill_s[:2] == pytest.approx([0.15, 1.5])
    assert pred.ttft_s == pytest.approx(base + groups.mean_s, rel=1e-9)
    assert groups.mean_s[2] == 0.0 and groups.mean_s[0] > 0.15 and groups.mean_s[1] > 1.5
