"""The latency model against published offline throughput: TensorRT-LLM's `trtllm-bench` (max
load, synthetic fixed ISL/OSL, FP8/FP4 weights, free-memory fraction 0.95), from
NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md @00f37686aa854010d68bcbd0f4ab000221541ca6
(copied in the project's ../shared/reference/throughput.yaml and shipped as rows of
catalogs/measurements/published.yaml, each with its quote).

Predicted as what they are: every request queued at once (queueing.offline), under TensorRT-LLM's
factors. Some of these rows are fit rows of the calibration (the split is by configuration), so
this is a sanity bound on a second benchmark kind, not an independent score: every row within
-40 % / +40 %, the median within 15 %."""

from __future__ import annotations

import statistics

import pytest

from sizer.measurements import read_published
from sizer.validate import validate_rows


def test_offline_throughput_within_bounds(catalog):
    rows = [r for r in read_published(catalog.root / "measurements" / "published.yaml") if r.row_id.startswith("trtllm-perf-overview")]
    assert len(rows) == 17
    report = validate_rows(rows, catalog)
    assert not report.skipped
    ratios = []
    for r in report.results:
        assert r.row.kind == "offline" and r.row.engine == "trtllm"
        ratio = r.predicted_tokens_per_s / r.row.output_tokens_per_s
        assert 0.6 <= ratio <= 1.4, (r.row.row_id, ratio)
        ratios.append(ratio)
    assert statistics.median(ratios) == pytest.approx(1.0, abs=0.15)
