"""`sizer calibrate` (sizer/calibrate.py): the fit recovers factors it is shown, and writes a
table the loader reads back with each figure's provenance."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from sizer.calibrate import factor_value, fit, write_efficiency
from sizer.efficiency import Factors, efficiency_table, load_efficiency, table_from_factors
from sizer.measurements import Resolved, resolve, shipped_rows
from sizer.validate import build_setup, predict

TRUE_DEFAULT = Factors(
    hbm_bandwidth_fraction=0.8,
    expert_bandwidth_fraction=0.6,
    kv_bandwidth_fraction=0.7,
    compute_fraction=0.6,
    prefill_compute_fraction=0.7,
    attention_compute_fraction=0.4,
    link_bandwidth_fraction=0.82,
    burst_fraction=0.15,
    link_latency_s=15e-6,
    step_overhead_s=2e-3,
    sequence_overhead_s=15e-6,
    request_overhead_s=40e-3,
    prefill_layer_overhead_s=200e-6,
    admission_steps=2.0,
    attention_dp_prefill_factor=1.0,
)
# what the synthetic "world" changes per group: a device's HBM, an engine's step overhead
TRUE_OVERRIDES = {
    (("device", "H100-SXM"),): {"hbm_bandwidth_fraction": 0.7},
    (("device", "B200"),): {"hbm_bandwidth_fraction": 0.88},
    (("engine", "sglang"),): {"step_overhead_s": 4e-3},
}


@pytest.fixture(scope="module")
def sample(catalog):
    """Up to 10 agg closed-loop rows of each device x engine (three of each), dense models: their
    decode is mostly the dense weight stream, so a device's HBM efficiency is identifiable (with
    MoE rows it trades against the expert-bandwidth offset of the 4-bit formats only Blackwell
    runs)."""
    rows = [r for r in shipped_rows(catalog.root / "measurements") if r.mode == "agg" and r.kind == "concurrency"]
    out: list[Resolved] = []
    per: dict[tuple[str, str], int] = {}
    for row in sorted(rows, key=lambda r: r.row_id):
        res = resolve(row, catalog)
        if not isinstance(res, Resolved) or res.gpu.name not in ("H100-SXM", "H200-SXM", "B200") or res.model.is_moe:
            continue
        key = (res.gpu.name, res.row.engine)
        if per.get(key, 0) >= 10:
            continue
        per[key] = per.get(key, 0) + 1
        out.append(res)
    assert len(out) >= 50
    # measurements made by the true factors
    setup = build_setup(out, table_from_factors(TRUE_DEFAULT, TRUE_OVERRIDES))
    pred = predict(setup)
    synthetic = []
    for i, res in enumerate(out):
        row = replace(res.row, ttft_ms=float(pred.ttft_s[i] * 1000), tpot_ms=float(pred.tpot_s[i] * 1000), output_tokens_per_s=None)
        synthetic.append(replace(res, row=row))
    return synthetic


PRIOR = replace(TRUE_DEFAULT, hbm_bandwidth_fraction=0.6, step_overhead_s=5e-3, request_overhead_s=80e-3, compute_fraction=0.45, prefill_compute_fraction=0.45)


@pytest.fixture(scope="module")
def fitted(sample):
    # 5 iterations: the cost is 1.759, 0.5645, 0.4669, 0.46564, 0.4656351 after each, and the
    # 6th and 7th, where the fit stops by itself (three gains under 1e-5 in a row), move it by
    # 2.5e-7 together and took ~14 s (about 7 s an iteration on this project's 2-core machine)
    return fit(sample, PRIOR, max_iterations=5)


def _rms_log_tpot(sample, table) -> float:
    pred = predict(build_setup(sample, table))
    measured = np.array([r.row.tpot_ms for r in sample]) / 1000
    return float(np.sqrt(np.mean(np.log(pred.tpot_s / measured) ** 2)))


def test_fit_reproduces_the_measurements_it_was_given(fitted, sample):
    """The ridge and the prior weight shrink towards the prior, so the fit is close, not exact:
    within 5 % RMS on TPOT and 10 % on TTFT, from a prior several times further off."""
    assert fitted.rms_log_error["tpot"] < 0.05
    assert fitted.rms_log_error["ttft"] < 0.10
    assert _rms_log_tpot(sample, table_from_factors(PRIOR)) > 4 * fitted.rms_log_error["tpot"]


def test_fit_recovers_the_device_and_engine_factors(fitted):
    """Shrinkage pulls each device towards the shared value, so the order and the size of the
    gaps are what a fit of ~20 rows a device can promise: within 15 % of 0.70 / 0.80 / 0.88."""
    hbm = {d: factor_value(fitted, "hbm_bandwidth_fraction", {"device": d, "engine": "vllm"}) for d in ("H100-SXM", "B200", "H200-SXM")}
    assert hbm["H100-SXM"] == pytest.approx(0.7, rel=0.15)
    assert hbm["B200"] == pytest.approx(0.88, rel=0.15)
    assert hbm["H200-SXM"] == pytest.approx(0.8, rel=0.15)
    assert hbm["B200"] > hbm["H200-SXM"] > hbm["H100-SXM"]
    # the engine's step overhead trades against its other per-step and per-request terms; the
    # larger one still comes out larger, and near its value
    overhead = {e: factor_value(fitted, "step_overhead_s", {"engine": e}) for e in ("vllm", "sglang")}
    assert overhead["sglang"] > overhead["vllm"]
    assert overhead["sglang"] == pytest.approx(4e-3, rel=0.25)


@pytest.mark.parametrize("name", ["efficiency.json", "efficiency.yaml"])
def test_written_table_reads_back_with_provenance(fitted, sample, tmp_path, name):
    path = tmp_path / name
    combos = sorted({(r.gpu.name, r.row.engine, r.weight_dtype, "dense" if not r.model.is_moe else ("mla_moe" if r.model.is_mla else "moe")) for r in sample})
    write_efficiency(fitted, path, combos=combos, rows_total=len(sample), measurements="synthetic", fitted="2026-01-01")
    table = load_efficiency(path)
    assert table.fitted == "2026-01-01" and "fitted to the" in table.source
    f = table.factors("B200", "vllm", "fp8", "dense")
    assert f.hbm_bandwidth_fraction == pytest.approx(factor_value(fitted, "hbm_bandwidth_fraction", {"device": "B200", "engine": "vllm"}), rel=1e-3)
    assert any(e.rows > 0 and e.residual is not None for e in table.entries)
    # a device the fit never saw falls back to the engine's and the default's figures
    assert table.factors("MI300X", "vllm", "fp8", "dense").hbm_bandwidth_fraction == pytest.approx(table.factors("", "vllm", "", "").hbm_bandwidth_fraction)


def test_the_shipped_table_was_fitted_on_fit_rows_only(catalog):
    """Provenance in the file: rows counted are the fit rows of the split, never the scoring rows,
    each run once (a row repeating another's run, measurements.copies, is not fitted twice)."""
    from sizer.measurements import copies, shipped_split
    from sizer.validate import roofline_check

    rows, roles = shipped_split(catalog)
    resolved, _ = roofline_check([r for r in (resolve(x, catalog) for x in rows) if isinstance(r, Resolved)])
    repeated = copies([r.row for r in resolved])
    fit_rows = sum(1 for r in resolved if roles[r.row.row_id] == "fit" and r.row.row_id not in repeated)
    assert repeated and fit_rows < sum(1 for r in resolved if roles[r.row.row_id] == "fit")
    table = efficiency_table(catalog.root)
    assert f"fitted to the {fit_rows} fit rows" in table.source and f"{len(repeated)} of them copies" in table.source
    assert table.entries[0].rows == fit_rows
    assert np.isfinite(table.entries[0].residual)


@pytest.fixture(scope="module")
def small_catalog(tmp_path_factory, root):
    """The shipped catalogs with a measurement table of 24 rows (two sweeps of each of three
    H100/H200 configurations): small enough for a calibration in seconds."""
    import shutil

    base = tmp_path_factory.mktemp("cat") / "catalogs"
    shutil.copytree(root / "catalogs", base, ignore=shutil.ignore_patterns("measurements", "__pycache__"))
    (base / "measurements").mkdir()
    lines = (root / "catalogs" / "measurements" / "aiconfigurator_silicon_sample.csv").read_text().splitlines()
    header, body = lines[0], lines[1:]
    picked = [ln for ln in body if ",agg," in ln and ("llama" in ln.lower()) and ("h100_sxm" in ln or "h200_sxm" in ln)][:24]
    assert len(picked) >= 12
    (base / "measurements" / "sample.csv").write_text("\n".join([header, *picked]) + "\n")
    return base


def _calibrate(args, cwd):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "sizer", "calibrate", *args], capture_output=True, text=True, cwd=cwd)


def test_calibrate_starts_from_a_fixed_prior_and_writes_beside_not_over_the_catalog(small_catalog, tmp_path):
    """Two runs on the same rows write the same bytes (the prior is PRIOR_FACTORS, never the
    table being replaced); the default output is ./efficiency.json, the catalog's own table is
    untouched unless --in-place."""
    shipped = (small_catalog / "efficiency.json").read_bytes()
    args = ["--catalog", str(small_catalog), "--max-iterations", "2", "--fitted", "2026-01-01"]
    first = _calibrate(args, tmp_path)
    assert first.returncode == 0, first.stderr
    assert "fit-row residuals got no weight" in first.stdout  # the robust loss's report (outlier_lines)
    out = tmp_path / "efficiency.json"
    one = out.read_bytes()
    assert (small_catalog / "efficiency.json").read_bytes() == shipped
    # a second run, now with the first run's table in place as the catalog's: same bytes
    (small_catalog / "efficiency.json").write_bytes(one)
    second = _calibrate(args + ["--output", str(tmp_path / "again.json")], tmp_path)
    assert second.returncode == 0, second.stderr
    assert (tmp_path / "again.json").read_bytes() == one
    (small_catalog / "efficiency.json").write_bytes(shipped)
    in_place = _calibrate(args + ["--in-place"], tmp_path)
    assert in_place.returncode == 0 and (small_catalog / "efficiency.json").read_bytes() == one
    both = _calibrate(args + ["--in-place", "--output", "x.json"], tmp_path)
    assert both.returncode == 2 and "not both" in both.stderr
    (small_catalog / "efficiency.json").write_bytes(shipped)


def test_the_fit_names_each_measurement_it_gave_no_weight(sample):
    """A fit row whose TTFT is 20x what the model gives it (log 3.0, beyond REJECT = 1.2) pulls no
    factor: the result names it (row id, metric, predicted / measured about 1/20), and
    `sizer calibrate` prints it, so a user's measurement the fit ignored is not lost silently. One
    1,000x off sits at the fit's clip (log 4: a factor 55) and is printed as at least that far off.
    The other rows, made by the model itself, are not among the outliers."""
    from sizer.calibrate import outlier_lines

    bad, worse = sample[7], sample[11]
    scale = {id(bad): 20.0, id(worse): 1000.0}
    corrupted = [replace(r, row=replace(r.row, ttft_ms=r.row.ttft_ms * scale[id(r)])) if id(r) in scale else r for r in sample]
    result = fit(corrupted, PRIOR, max_iterations=2)
    # (the rows' throughput is derived from their TTFT and TPOT: the 1,000x row's is off too)
    assert {(o.row_id, o.metric) for o in result.outliers if o.rejected} == {(worse.row.row_id, "ttft"), (worse.row.row_id, "throughput"), (bad.row.row_id, "ttft")}
    dropped = [o for o in result.outliers if o.rejected and o.metric == "ttft"]
    assert [o.row_id for o in dropped] == [worse.row.row_id, bad.row.row_id]
    assert dropped[0].log_error == -4.0 and dropped[0].margin == pytest.approx(2.8)
    assert math.exp(dropped[1].log_error) == pytest.approx(1 / 20, rel=0.5)
    assert dropped[1].margin == pytest.approx(-dropped[1].log_error - 1.2, abs=1e-9)
    assert result.residuals == sum(1 for r in sample for v in (r.row.tpot_ms, r.row.ttft_ms, r.row.throughput_tokens_per_s) if v)
    lines = outlier_lines(result)
    assert lines[0].startswith(f"robust loss: 3 of {result.residuals:,} fit-row residuals got no weight, on 2 rows")
    assert "a factor 3.3 on TPOT, 3.3 on TTFT, 5.5 on throughput" in lines[0]
    assert ["no", "weight", "ttft", "predicted", "/", "measured", "<=0.0183", worse.row.row_id] in [line.split() for line in lines[1:]]
    assert ["no", "weight", "ttft", "predicted", "/", "measured", f"{math.exp(dropped[1].log_error):.3g}", bad.row.row_id] in [line.split() for line in lines[1:]]


def test_outliers_are_judged_on_the_losss_weighted_residual():
    """Rejection compares |log error| x sqrt(metric weight) with REJECT (calibrate.fit's IRLS): at
    throughput's weight 0.5 a log error of 1.5 (a factor 4.5) keeps its weight, where a TTFT one
    of 1.5 loses it (1.5 > 1.2), and a TTFT one of 1.15 is reported as near (within NEAR_REJECT =
    0.1 of 1.2). A floor's residual is never rejected, however large."""
    from types import SimpleNamespace

    from sizer.calibrate import Loss, _outliers

    metric = np.array(["throughput", "ttft", "ttft", "tpot", "floor"])
    prob = SimpleNamespace(
        loss=Loss(),
        res_metric=metric,
        res_weight=np.array([0.5, 1.0, 1.0, 1.0, 1.0]),
        res_row=np.arange(5),
        fit=[SimpleNamespace(row=SimpleNamespace(row_id=f"r{i}")) for i in range(5)],
    )
    out, rejectable = _outliers(prob, np.array([1.5, -1.5, 1.15, 0.3, 3.0]))
    assert rejectable == 4
    assert [(o.row_id, o.metric, o.rejected) for o in out] == [("r1", "ttft", True), ("r2", "ttft", False)]
    assert [o.margin for o in out] == pytest.approx([0.3, -0.05])


def test_robust_weights_reject_gross_outliers():
    """IRLS weights (calibrate._huber_weights): 1 within the Huber knee (0.25 log units), knee / |r|
    beyond it (0.25 / 0.5 = 0.5 at a residual of 0.5), and 0 beyond REJECT = 1.2 (a factor 3.3):
    InferenceX's 2025-11-10 DeepSeek-R1 FP4 SGLang rows of 7-9 s TTFT for 1k prompts (under 1 s at
    16 clients, TPOT normal) pull no factor."""
    from sizer.calibrate import REJECT, _huber_weights

    assert REJECT == 1.2
    w = _huber_weights(np.array([0.1, -0.5, 1.0, -1.3, 3.0]))
    assert w == pytest.approx([1.0, 0.5, 0.25, 0.0, 0.0])


def test_the_loss_is_a_parameter_whose_defaults_are_the_shipped_tables(root):
    """calibrate.Loss carries the knee, the rejection point and the metric weights into the fit
    (benchmarks/fit_sensitivity.py refits under others): at its defaults the method line reads
    what catalogs/efficiency.json records, and other values move the IRLS weights as worked by
    hand: knee 0.5 keeps full weight at a residual of 0.5 and gives 0.5 / 0.8 = 0.625 at 0.8;
    reject 0.7 drops a residual of 0.8 (a factor 2.2) that the shipped 1.2 keeps at 0.25 / 0.8."""
    import json

    from sizer.calibrate import Loss, _huber_weights

    shipped = json.loads((root / "catalogs" / "efficiency.json").read_text())["method"]
    assert shipped.startswith(Loss().describe() + "; hierarchical offsets")
    r = np.array([0.5, -0.8, 1.0])
    assert _huber_weights(r) == pytest.approx([0.5, 0.3125, 0.25])
    assert _huber_weights(r, huber=0.5, reject=1.2) == pytest.approx([1.0, 0.625, 0.5])
    assert _huber_weights(r, huber=0.25, reject=0.7) == pytest.approx([0.5, 0.0, 0.0])
    loss = Loss(reject=0.9, ttft=2.0)
    assert (loss.weight("ttft"), loss.weight("tpot"), loss.weight("throughput")) == (2.0, 1.0, 0.5)
    assert "no weight beyond 0.9" in loss.describe() and "mean TTFT (2)" in loss.describe()


def test_a_device_entry_composes_its_vendors_offset_and_the_vendor_entries_serve_unseen_devices(fitted, sample, tmp_path):
    """The vendor level (X, and X x engine) moves a factor for every device of the vendor; a device's
    own entry is theta + vendor + device + engine + ... offsets (composed by hand here from the
    fit's deltas, logistic link), and a device the fit never saw, of the same vendor (L4: nvidia),
    takes the written vendor entries: theta + vendor + engine offsets, without any device's."""
    import math

    name = "hbm_bandwidth_fraction"
    d = fitted.deltas
    x = fitted.theta[name] + d[(name, ("vendor",))][("nvidia",)] + d[(name, ("device",))][("B200",)] + d[(name, ("engine",))][("vllm",)]
    x += d[(name, ("vendor", "engine"))][("nvidia", "vllm")] + d[(name, ("device", "engine"))][("B200", "vllm")]
    assert factor_value(fitted, name, {"device": "B200", "engine": "vllm"}) == pytest.approx(1 / (1 + math.exp(-x)), rel=1e-9)
    y = fitted.theta[name] + d[(name, ("vendor",))][("nvidia",)] + d[(name, ("engine",))][("vllm",)] + d[(name, ("vendor", "engine"))][("nvidia", "vllm")]
    path = tmp_path / "efficiency.json"
    combos = sorted({(r.gpu.name, r.row.engine, r.weight_dtype, "dense") for r in sample})
    write_efficiency(fitted, path, combos=combos, rows_total=len(sample), measurements="synthetic", fitted="2026-01-01")
    table = load_efficiency(path)
    assert any(dict(e.match).get("vendor") == "nvidia" for e in table.entries)
    f = table.factors("L4", "vllm", "fp8", "dense", vendor="nvidia")
    assert f.hbm_bandwidth_fraction == pytest.approx(1 / (1 + math.exp(-y)), rel=1e-3)
    assert table.basis("L4", "vllm", "fp8", "dense", vendor="nvidia")["scope"] == "vendor"
    # without its vendor it is the device-neutral value: theta + engine
    z = fitted.theta[name] + d[(name, ("engine",))][("vllm",)]
    assert table.factors("L4", "vllm", "fp8", "dense").hbm_bandwidth_fraction == pytest.approx(1 / (1 + math.exp(-z)), rel=1e-3)


def test_a_device_without_fit_rows_gets_no_entries_of_its_own(fitted, sample, tmp_path):
    """A device in the table's combinations (a scoring row's) with no fit rows: its own entries
    would hold nothing of its own and only the formats measured on it, so none are written; it
    takes its vendor's, which cover every architecture an engine ran (MI325X's DeepSeek-V3 plan
    ran at a dense model's GEMM efficiency through its dense-only rows-0 entries)."""
    path = tmp_path / "efficiency.json"
    combos = sorted({(r.gpu.name, r.row.engine, r.weight_dtype, "dense") for r in sample}) + [("L40S", "vllm", "fp8", "moe")]
    write_efficiency(fitted, path, combos=combos, rows_total=len(sample), measurements="synthetic", fitted="2026-01-01")
    table = load_efficiency(path)
    assert not any(dict(e.match).get("device") == "L40S" for e in table.entries)
    assert any(dict(e.match).get("device") == "B200" for e in table.entries)
    assert table.scope("L40S", "nvidia") == ("vendor", "nvidia")
    # vLLM ran an MoE (on L40S): the vendor's entry for it serves every weight format (a format's
    # offset, fitted beside the devices that run it, is not the vendor's: calibrate.write_efficiency)
    for w in {r.weight_dtype for r in sample if r.row.engine == "vllm"} | {"nvfp4"}:
        entry = table.basis("L40S", "vllm", w, "moe", vendor="nvidia")["entry"]
        assert entry == {"vendor": "nvidia", "engine": "vllm", "architecture": "moe"}


def test_a_measured_device_takes_the_architectures_offset_where_it_has_no_rows_of_it(fitted, sample, tmp_path):
    """A device with fit rows running an architecture its engine ran only elsewhere gets its own
    (device, engine, format, architecture) entry, the fit's composition with the architecture's
    offset. Before, the lookup fell to (device, engine, format), which no architecture level
    applies to: Mixtral FP8 on MI300X under vLLM (measured there: dense and MLA-MoE) ran at the
    device's average over architectures. The synthetic fit has dense rows only, so the MoE
    offset is set here (-1 on the logit of the compute fraction)."""
    import math

    name = "compute_fraction"
    deltas = dict(fitted.deltas)
    deltas[(name, ("architecture",))] = {**deltas.get((name, ("architecture",)), {}), ("moe",): -1.0}
    result = replace(fitted, deltas=deltas)
    path = tmp_path / "efficiency.json"
    combos = sorted({(r.gpu.name, r.row.engine, r.weight_dtype, "dense") for r in sample}) + [("L40S", "vllm", "fp8", "moe")]
    write_efficiency(result, path, combos=combos, rows_total=len(sample), measurements="synthetic", fitted="2026-01-01")
    table = load_efficiency(path)
    w = next(r.weight_dtype for r in sample if r.gpu.name == "B200" and r.row.engine == "vllm")
    assert table.basis("B200", "vllm", w, "moe", vendor="nvidia")["entry"] == {"device": "B200", "engine": "vllm", "weight_dtype": w, "architecture": "moe"}
    moe = table.factors("B200", "vllm", w, "moe", vendor="nvidia").compute_fraction
    logit = lambda p: math.log(p / (1 - p))  # noqa: E731
    assert moe == pytest.approx(factor_value(result, name, {"device": "B200", "engine": "vllm", "weight_dtype": w, "architecture": "moe"}), rel=1e-3)
    # the fallback it replaces, (device, engine, format), holds every offset but the architecture's
    fallback = factor_value(result, name, {"device": "B200", "engine": "vllm", "weight_dtype": w})
    assert logit(moe) - logit(fallback) == pytest.approx(-1.0, abs=2e-3)
    # an engine that never ran an MoE gets no MoE entry: its lookup keeps the fallback
    assert not any(dict(e.match).get("engine") == "trtllm" and dict(e.match).get("architecture") == "moe" for e in table.entries)


def test_a_rate_rows_tpot_is_fitted_by_its_step_at_the_batch_it_measured(catalog):
    """The fit compares a rate row's (MLPerf Server, Interactive) TPOT with the step at the
    running batch the row itself implies, D = rate x (E[O] - 1) x TPOT, the same figure its error
    band takes (validate.rate_row_steps_s), not with the TPOT at the rate, whose solved population
    turns a step a few per cent slow into a saturated replica and a residual with no gradient.
    Its TTFT and throughput stay the predictions at the rate."""
    from sizer.calibrate import _Problem
    from sizer.validate import rate_row_steps_s

    rows = [r for r in shipped_rows(catalog.root / "measurements") if r.row_id.startswith("mlperf-v6.0-hpe-hpe_proliant_dl385_rtx_pro_6000")]
    resolved = [x for x in (resolve(r, catalog) for r in rows) if isinstance(x, Resolved)]
    rate = [x.row for x in resolved if x.row.kind == "rate" and x.row.tpot_ms]
    assert len(rate) >= 3 and len(resolved) > len(rate)
    prior = efficiency_table(catalog.root).default()
    prob = _Problem(resolved, prior)
    r = prob.log_errors(prob.theta0)  # at the prior: every row's factors are the default entry's
    arrays = prob.factor_arrays(prob.theta0)
    pred = predict(prob.setup, prob.setup.step.with_factors(**arrays), prob.setup.prefill_step.with_factors(**arrays))
    steps = rate_row_steps_s(rate, catalog, table_from_factors(prior))
    for i, res in enumerate(resolved):
        at = {m: k for k, (row, m) in enumerate(zip(prob.res_row, prob.res_metric)) if row == i}
        if res.row.kind == "rate" and res.row.tpot_ms:
            assert r[at["tpot"]] == pytest.approx(math.log(steps[res.row.row_id] * 1000.0 / res.row.tpot_ms), abs=1e-6), res.row.row_id
            assert r[at["throughput"]] == pytest.approx(math.log(pred.output_tokens_per_s[i] / res.row.throughput_tokens_per_s), abs=1e-6)
        elif "throughput" in at:
            assert r[at["throughput"]] == pytest.approx(math.log(pred.output_tokens_per_s[i] / res.row.throughput_tokens_per_s), abs=1e-6)


def test_ttft_floor_residual_is_one_sided_and_never_rejected(catalog):
    """Each fit row that measured TTFT (closed loop, open loop, disaggregated) adds a residual
    on its no-queue floor (validate.ttft_floor_s): log(floor / measured) where the floor is above
    the measured mean, 0 where it is below (queues and one-time costs only add). The IRLS weight
    of a floor residual is Huber's, never the rejection's 0: at 1.3 log units a TTFT residual
    weighs 0 and a floor residual 0.25 / 1.3. A row given a TTFT of 20 ms (under its floor by more
    than the rejection point) gets a positive floor residual of exactly log(floor / 0.020); the
    next row at 100 s, 0. (Residuals are clipped at 4 log units, a factor 55, like every other.)"""
    from sizer.calibrate import _Problem, _huber_weights
    from sizer.validate import ttft_floor_s

    rows = [r for r in shipped_rows(catalog.root / "measurements") if r.kind == "concurrency" and r.ttft_ms][:40]
    resolved = [x for x in (resolve(r, catalog) for r in rows) if isinstance(x, Resolved)]
    assert len(resolved) >= 20
    fast = replace(resolved[0], row=replace(resolved[0].row, ttft_ms=20.0))
    slow = replace(resolved[1], row=replace(resolved[1].row, ttft_ms=100_000.0))
    resolved = [fast, slow] + resolved[2:]
    prior = efficiency_table(catalog.root).default()
    prob = _Problem(resolved, prior)
    r = prob.log_errors(prob.theta0)
    arrays = prob.factor_arrays(prob.theta0)
    floor = ttft_floor_s(prob.setup, prob.setup.step.with_factors(**arrays), prob.setup.prefill_step.with_factors(**arrays))
    is_floor = prob.res_metric == "floor"
    assert is_floor.sum() == len(resolved)
    for k in np.flatnonzero(is_floor):
        i = prob.res_row[k]
        expected = min(max(math.log(floor[i] * 1000.0 / resolved[i].row.ttft_ms), 0.0), 4.0)
        assert r[k] == pytest.approx(expected, abs=1e-9)
    at = {prob.res_row[k]: k for k in np.flatnonzero(is_floor)}
    assert r[at[0]] == pytest.approx(math.log(floor[0] / 0.020)) and r[at[0]] > 1.2
    assert r[at[1]] == 0.0
    w = _huber_weights(np.array([1.3, 1.3]), keep=np.array([False, True]))
    assert w == pytest.approx([0.0, 0.25 / 1.3])


def test_the_ridge_and_the_floor_weight_are_fields_of_the_loss(catalog):
    """calibrate.Loss holds the ridge (penalty per squared offset; the shipped 0.5) and the TTFT
    floor's weight, so benchmarks/fit_sensitivity.py can vary them: the penalty weights are the
    ridge on every offset and PRIOR on the global values, and a floor weighted 0 weighs nothing
    in the fit while its log error is still reported unweighted."""
    from sizer.calibrate import PRIOR, RIDGE, Loss, _Problem

    assert Loss().ridge == RIDGE == 0.5 and Loss().floor == 1.0
    rows = [r for r in shipped_rows(catalog.root / "measurements") if r.kind == "concurrency" and r.ttft_ms][:10]
    resolved = [x for x in (resolve(r, catalog) for r in rows) if isinstance(x, Resolved)]
    prior = efficiency_table(catalog.root).default()
    prob = _Problem(resolved, prior, Loss(ridge=2.0, floor=0.0))
    w = prob.penalty_weights()
    n = len(prob.names)
    assert (w[n:] == 2.0).all() and all(w[i] in (PRIOR, 1e9) for i in range(n))
    floor = prob.res_metric == "floor"
    assert (prob.residuals(prob.theta0)[floor] == 0.0).all()
    assert np.isfinite(prob.log_errors(prob.theta0)).all()
