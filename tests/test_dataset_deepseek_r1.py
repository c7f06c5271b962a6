"""The named distribution `mlperf-deepseek-r1` (catalogs/datasets.yaml): MLPerf Inference
DeepSeek-R1's 4,388 samples, read through sizer's loader, named by a workload and by a
measurement row."""

from __future__ import annotations

import pytest

from sizer.datasets import dataset, load_datasets
from sizer.measurements import Resolved, read_csv, resolve
from sizer.workload import load_workload

NAME = "mlperf-deepseek-r1"


def test_the_deepseek_r1_dataset_is_shipped_with_the_figures_of_its_samples():
    """Counted by hand from openshift-psap/performance-dashboard@71007029fb5bced1d79808e7e64dc4c2af82ea55:
    mlperf-data/summaries/deepseek-r1.csv (4,388 rows of mlperf_deepseek_r1_dataset_4388_fp8_eval.pkl;
    percentiles as numpy's default linear interpolation, rounded, the convention that reproduces
    mlperf-llama2-70b's prompt table from llama2-70b-99.csv):
    prompts mean 803.8 tokens, p50 902 (901.5), p99 1,432, max 3,140;
    outputs (the reference lengths capped at MAX_OSL 20,000) mean 3,886.2 tokens, equal to the
    README's 'mean-output-tok-len': 3886.2274, p50 2,194, p97.5 18,216, p99 and max 20,000
    (83 of the 4,388 samples reach the cap; uncapped the mean is 4,043.4 and the max 32,768).
    The table read as a quantile function keeps each mean within 1 %."""
    known = load_datasets()
    assert NAME in known
    d = known[NAME]
    assert d.samples == 4388 and "4,388" in d.description
    assert d.prompt.mean == pytest.approx(803.8, rel=0.01)
    assert d.output.mean == pytest.approx(3886.2, rel=0.01)
    assert d.prompt.quantile(0) == 52 and d.prompt.quantile(50) == 902
    assert d.prompt.quantile(99) == 1432 and d.prompt.quantile(100) == 3140
    assert d.output.quantile(0) == 209 and d.output.quantile(50) == 2194 and d.output.quantile(97.5) == 18216
    # the benchmark's max output length (language/deepseek-r1/utils/backend_registry.py MAX_OSL)
    assert d.output.quantile(99) == 20000 and d.output.quantile(100) == 20000
    assert "deepseek-r1.csv" in d.prompt_source and "deepseek-r1.csv" in d.output_source
    assert "MAX_OSL" in d.output_source and "3886.2274" in d.output_source
    # names are case-insensitive, as for the other four
    assert dataset("MLPerf-DeepSeek-R1") is d


def test_a_workload_names_the_deepseek_r1_dataset(tmp_path, catalog):
    w = tmp_path / "w.yaml"
    w.write_text(f"model: deepseek-r1\ntraffic:\n  requests_per_s: 1\n  dataset: {NAME}\nslo: {{ttft_s: 2, tpot_s: 0.08}}\n")
    work = load_workload(w, catalog)
    assert work.traffic.prompt_tokens.mean == pytest.approx(803.8, rel=0.01)
    assert work.traffic.output_tokens.mean == pytest.approx(3886.2, rel=0.01)
    assert work.traffic.output_tokens.quantile(100) == 20000


def test_a_measurement_row_names_the_deepseek_r1_dataset(tmp_path, catalog):
    """Illustrative rows (not a published run): one 8 x MI300X TP8 system. Without samples/s the
    row reads the dataset's lengths as they are; with output_tokens_per_s 9,000 and samples_per_s
    2 the outputs are rescaled to the 4,500 tokens per request that run generated, never beyond
    the 20,000-token cap."""
    path = tmp_path / "ds.csv"
    path.write_text(
        "id,model_path,system,backend,precision,kind,dataset,isl,osl,tp_size,replicas,output_tokens_per_s,samples_per_s\n"
        f"plain,deepseek-ai/DeepSeek-R1,mi300x,vllm,fp8,offline,{NAME},,,8,1,9000,\n"
        f"scaled,deepseek-ai/DeepSeek-R1,mi300x,vllm,fp8,offline,{NAME},,,8,1,9000,2\n"
    )
    plain, scaled = read_csv(path)
    assert plain.invalid is None and plain.dataset == NAME
    res = resolve(plain, catalog)
    assert isinstance(res, Resolved) and res.layout.tp == 8
    assert res.prompt.mean == pytest.approx(803.8, rel=0.01)
    assert res.output.mean == pytest.approx(3886.2, rel=0.01)
    res = resolve(scaled, catalog)
    assert isinstance(res, Resolved)
    assert scaled.measured_output_tokens_per_request == pytest.approx(4500.0)
    assert res.output.mean == pytest.approx(4500.0, rel=1e-3)
    assert res.output.quantile(100) == pytest.approx(20000.0)
