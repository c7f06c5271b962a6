"""`sizer compare`, `sizer sweep`, plots, `--write-lp` and `--time-limit-s`, end to end on small
search spaces of the shipped catalog. Numbers are checked against the closed form they must
equal: replicas = ceil(demand / a replica's largest rate), cost = replicas x GPUs x $/GPU-hour."""

from __future__ import annotations

import json
import math
import sys
from datetime import date

import pulp
import pytest

from sizer.candidates import evaluate_candidates
from sizer.compare import compare, comparison_rows, pareto_front, pareto_points
from sizer.errors import InputError, SizerError
from sizer.optimize import solve, solver_outcome
from sizer.report import markdown_table, render_comparison, text_table
from sizer.sweep import parse_values, sweep
from sizer.workload import load_workload

from .test_bad_input import assert_one_line_error, run_sizer
from .conftest import ROOT

SMALL = """\
name: small
model: llama-3.1-8b
traffic:
  requests_per_s: {rate}
  prompt_tokens: {{p50: 1000, p90: 2000, p99: 4000}}
  output_tokens: {{p50: 200, p90: 400, p99: 800}}
slo:
  ttft_s: {{p99: 1.0}}
  tpot_s: {{p99: 0.05}}
search:
  devices: [H100-SXM, L40S, A10G]
  tp: [1]
  pp: [1]
  kv_dtypes: [fp8]
  weight_dtypes: [fp8]
{extra}"""


@pytest.fixture(scope="module")
def small(catalog, tmp_path_factory):
    path = tmp_path_factory.mktemp("cmd") / "small.yaml"
    path.write_text(SMALL.format(rate=20, extra=""))
    w = load_workload(path, catalog)
    return path, w, evaluate_candidates(w, catalog)


def test_compare_json_has_one_object_per_device_with_the_closed_form_cost(catalog, small):
    path, w, evaluated = small
    comparison = compare(w, catalog, evaluated)
    data = json.loads(render_comparison(comparison, comparison_rows(comparison, as_of=date(2026, 12, 1)), "json", date(2026, 12, 1)))
    assert data["as_of"] == "2026-12-01" and data["workload"] == w.name and data["warnings"] == list(w.warnings)
    rows = data["rows"]
    assert [r["device"] for r in rows if r["feasible"]] and {r["device"] for r in rows} == set(w.search.devices)
    assert len(rows) == len(w.search.devices)
    by_device = {r["device"]: r for r in rows}
    # A10G has no FP8 tensor cores: fp8 weights are refused, and the row says why
    a10g = by_device["A10G"]
    assert a10g["feasible"] is False and "FP8" in a10g["reason"] and a10g["cost_usd_per_million_tokens"] is None
    for r in rows:
        if not r["feasible"]:
            continue
        e = next(e for e in evaluated if e.feasible and e.config.device == r["device"])
        n = math.ceil(20 / e.max_rate_rps - 1e-9)
        assert r["replicas"] == n
        assert r["cost_usd_per_hour"] == pytest.approx(n * r["usd_per_gpu_hour"], rel=1e-6)
        tokens_per_s = 20 * w.traffic.output_tokens.mean
        assert r["cost_usd_per_million_tokens"] == pytest.approx(r["cost_usd_per_hour"] / 3600 / tokens_per_s * 1e6, rel=1e-5)
        assert 0 <= r["kv_headroom_fraction"] <= 1 and r["ttft_p99_s"] <= 1.0 + 1e-6 and r["tpot_p99_s"] <= 0.05 + 1e-6
        assert r["reason"] is None
        # where the price comes from: the catalog row it was read from, aged to the as-of date
        price = next(p for p in catalog.prices_for(r["device"], provider=r["provider"], kind="on_demand") if p.usd_per_gpu_hour == r["usd_per_gpu_hour"])
        assert (r["price_source"], r["price_source_kind"], r["price_date"]) == (price.source, price.source_kind, price.price_date)
        y, m, *d = (int(x) for x in price.price_date.split("-"))
        assert r["price_age_days"] == (date(2026, 12, 1) - date(y, m, d[0] if d else 1)).days
        assert r["evidence"]["basis"] in ("measured", "datasheet x global factors") and r["evidence"]["device_rows"] >= r["evidence"]["device_engine_rows"] >= 0
    for r in rows:
        if not r["feasible"]:
            assert r["evidence"] is None and r["price_source"] is None
    # feasible rows first, cheapest first; the cheapest is `sizer solve`'s plan
    feasible = [r for r in rows if r["feasible"]]
    assert feasible == sorted(feasible, key=lambda r: r["cost_usd_per_million_tokens"])
    assert rows[-1]["device"] == "A10G"
    plan = solve(w, catalog)
    assert feasible[0]["cost_usd_per_hour"] == pytest.approx(plan.cost_usd_per_hour)
    # the same evidence as the plan's own deployment on that device (sizer solve's JSON)
    assert feasible[0]["evidence"] == plan.deployments[0].evidence.evidence.as_dict()


def test_compare_sorts_and_renders_csv_and_markdown_without_tabulate(catalog, small):
    _, w, evaluated = small
    comparison = compare(w, catalog, evaluated)
    by_gpus = comparison_rows(comparison, "gpus")
    gpus = [r["gpus"] for r in by_gpus if r["feasible"]]
    assert gpus == sorted(gpus)
    by_headroom = [r["kv_headroom_fraction"] for r in comparison_rows(comparison, "headroom") if r["feasible"]]
    assert by_headroom == sorted(by_headroom, reverse=True)
    with pytest.raises(InputError):
        comparison_rows(comparison, "price")
    csv_text = render_comparison(comparison, comparison_rows(comparison), "csv")
    header = csv_text.splitlines()[0].split(",")
    assert header[:3] == ["device", "provider", "feasible"] and "reason" in header and "kv_headroom_fraction" in header
    assert len(csv_text.splitlines()) == 1 + len(w.search.devices)
    md = render_comparison(comparison, comparison_rows(comparison), "markdown")
    table_lines = [line for line in md.splitlines() if line.startswith("|")]
    assert table_lines[1].startswith("|:---|") and "---:" in table_lines[1]
    assert "## Cannot serve" in md and "A10G" in md
    assert "tabulate" not in sys.modules


def test_markdown_and_text_tables_by_hand():
    rows = [{"a": "x|y", "n": 1.5}, {"a": "z", "n": None}]
    cols = [("a", "name", ""), ("n", "value", "{:.2f}")]
    assert markdown_table(rows, cols) == "| name | value |\n|:---|---:|\n| x\\|y | 1.50 |\n| z | - |\n"
    assert text_table(rows, cols) == "name  value\nx|y    1.50\nz         -\n"


def test_compare_per_provider_rows_share_a_row_when_plans_cost_the_same(catalog, small):
    _, w, evaluated = small
    comparison = compare(w, catalog, evaluated, per_provider=True)
    rows = [r for r in comparison_rows(comparison, "cost") if r["device"] == "H100-SXM" and r["feasible"]]
    providers = [p for r in rows for p in r["provider"].split(", ")]
    assert len(providers) == len(set(providers)) > 1
    costs = [r["cost_usd_per_hour"] for r in rows]
    assert costs == sorted(costs) and len(set(costs)) == len(costs)
    # one GPU per replica: per-GPU offers cost replicas x price; whole-instance offers (8-GPU
    # HGX nodes) cost ceil(replicas / G) instances x G x price
    for r in rows:
        g = r["instance_gpus"]
        gpus_paid = r["replicas"] if g == 1 else math.ceil(r["replicas"] / g) * g
        assert r["cost_usd_per_hour"] == pytest.approx(gpus_paid * r["usd_per_gpu_hour"], rel=1e-6)
    assert any(r["instance_gpus"] > 1 for r in rows) and any(r["instance_gpus"] == 1 for r in rows)


def test_pareto_front_by_hand():
    # (cost, latency): (1, 5) and (2, 3) and (4, 1) trade off; (3, 4) is beaten by (2, 3);
    # (1, 6) by (1, 5).
    assert pareto_front([(1, 5), (2, 3), (3, 4), (4, 1), (1, 6)]) == [True, True, False, True, False]


def test_pareto_points_of_the_candidates(catalog, small):
    _, w, evaluated = small
    points = pareto_points(compare(w, catalog, evaluated), catalog)
    assert points and any(p.on_front for p in points)
    cheapest = min(points, key=lambda p: p.cost_usd_per_million_tokens)
    assert cheapest.on_front


def test_sweep_over_traffic_evaluates_once_and_reports_each_point(catalog, small, capsys):
    _, w, evaluated = small
    seen = []
    result = sweep(w, catalog, "requests_per_s", (5.0, 10.0, 40.0), progress=lambda done, total, v: seen.append((done, total, v)))
    assert seen == [(1, 3, 5.0), (2, 3, 10.0), (3, 3, 40.0)]
    assert capsys.readouterr() == ("", "")  # the library never prints
    costs = [p.plan.cost_usd_per_hour for p in result.points]
    assert costs == sorted(costs)
    best_rate = {e.config.device: e for e in evaluated if e.feasible}
    for point in result.points:
        d = point.plan.deployments[0]
        e = best_rate[d.candidate.config.device]
        assert d.replicas == math.ceil(point.value / e.max_rate_rps - 1e-9)
        cheapest_device = min(c for _, c in point.device_costs_usd_per_hour if c is not None)
        assert point.plan.cost_usd_per_hour == pytest.approx(cheapest_device)


def test_sweep_over_one_devices_price_finds_where_the_hardware_flips(catalog, small):
    _, w, _ = small
    base = sweep(w, catalog, "price_scale", (1.0,))
    winner = base.points[0].hardware
    result = sweep(w, catalog, "price_scale", (1.0, 100.0), device=winner)
    assert result.points[0].hardware == winner and result.points[1].hardware != winner
    (flip,) = result.flips
    assert (flip.before, flip.after, flip.from_hardware, flip.to_hardware) == (1.0, 100.0, winner, result.points[1].hardware)
    # the other devices' costs do not move with this device's price
    for (d0, c0), (d1, c1) in zip(result.points[0].device_costs_usd_per_hour, result.points[1].device_costs_usd_per_hour):
        if d0 != winner and c0 is not None:
            assert c1 == pytest.approx(c0)
        if d0 == winner:
            assert c1 == pytest.approx(100 * c0)


def test_sweep_over_the_tpot_bound_reevaluates_and_never_gets_dearer_as_it_loosens(catalog, small):
    # A looser bound admits every plan a tighter one admits: cost never rises. 1 ms is below any
    # decode step: infeasible, reported as such with its reason, not raised.
    _, w, _ = small
    result = sweep(w, catalog, "tpot_p99_s", (0.001, 0.03, 0.05, 0.2))
    first = result.points[0]
    assert first.status == "infeasible" and first.plan is None and "TPOT" in first.reason
    costs = [p.plan.cost_usd_per_hour for p in result.points[1:]]
    assert costs == sorted(costs, reverse=True)
    for p in result.points[1:]:
        assert all(d.tpot_p99_s <= p.value * (1 + 1e-6) for d in p.plan.deployments)


def test_sweep_over_the_confidence_reevaluates_and_never_gets_cheaper_as_it_rises(catalog, small):
    # Above 0.5 a factor only grows with Q (evidence.confidence_factors: a quantile of the same
    # errors), so each candidate's largest rate only falls and the cheapest plan only dearens;
    # each point is the plan `sizer solve --confidence Q` makes (the same program, re-evaluated).
    from dataclasses import replace

    _, w, _ = small
    result = sweep(w, catalog, "confidence", (0.5, 0.8, 0.9, 0.95))
    assert result.unit == "quantile" and [p.value for p in result.points] == [0.5, 0.8, 0.9, 0.95]
    costs = [p.plan.cost_usd_per_hour if p.plan is not None else math.inf for p in result.points]
    assert costs == sorted(costs) and costs[0] < math.inf
    for p in result.points:
        alone = solve(replace(w, slo=replace(w.slo, confidence=p.value)), catalog)
        assert p.plan is not None and alone.cost_usd_per_hour == pytest.approx(p.plan.cost_usd_per_hour)
    with pytest.raises(InputError, match="between 0 and 1"):
        sweep(w, catalog, "confidence", (0.5, 1.0), option="--confidence")


def test_a_confidence_sweeps_point_without_a_plan_says_which_devices_the_confidence_refused(catalog):
    # limited's GPUs are capped; at 0.9 its A100 pools hold the SLOs only at a trickle (as
    # `sizer solve --confidence 0.9` says, tests/test_evidence.py): the sweep's point says so too
    from sizer.workload import load_workload as load

    w = load(ROOT / "workloads" / "limited-llama-3.1-70b.yaml", catalog)
    (point,) = sweep(w, catalog, "confidence", (0.9,)).points
    assert point.status == "infeasible" and point.plan is None
    assert "[sized at confidence 0.9" in point.reason and "A100-80GB has no configuration at 0.9" in point.reason


def test_parse_sweep_values():
    assert parse_values("1,2,5", "--x") == (1.0, 2.0, 5.0)
    assert parse_values("0.5:4:8", "--scale") == (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0)
    for bad in ("", "a,b", "1:2", "1:2:0"):
        with pytest.raises(InputError) as info:
            parse_values(bad, "--scale")
        assert str(info.value).startswith("--scale: expected")


def test_cli_compare_and_sweep(small, tmp_path):
    path, _, _ = small
    proc = run_sizer("compare", path, "--format", "json", "--sort", "tpot", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["rows"]
    assert [r["device"] for r in rows][-1] == "A10G" and all({"device", "feasible", "cost_usd_per_million_tokens", "reason"} <= set(r) for r in rows)
    proc = run_sizer("sweep", path, "--requests-per-s", "5,40", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "FLIPS" in proc.stdout and "PLANS" in proc.stdout
    assert "sweep --requests-per-s: 2/2 points" in proc.stderr  # progress, on stderr only
    proc = run_sizer("sweep", path, "--requests-per-s", "5", "--quiet", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == ""
    assert json.loads(proc.stdout)["points"][0]["status"] == "optimal"
    proc = run_sizer("sweep", path, "--scale", "1", "--tpot-p99-s", "0.1", cwd=tmp_path)
    assert proc.returncode == 2 and "exactly one of" in proc.stderr
    proc = run_sizer("sweep", path, "--scale", "1:x:3", cwd=tmp_path)  # a mistyped list: usage, as any number option's
    assert_one_line_error(proc, 2, "error: Invalid value for '--scale': expected a list")


def test_cli_infeasible_constraints_exit_9_naming_them(tmp_path):
    p = tmp_path / "w.yaml"
    p.write_text(SMALL.format(rate=200, extra="constraints:\n  available_gpus: {H100-SXM: 1, L40S: 1}\n"))
    proc = run_sizer("solve", p, cwd=tmp_path)
    line = assert_one_line_error(proc, 9, f"error: {p}: no plan serves 200 req/s")
    assert "constraints.available_gpus.H100-SXM (1 GPUs)" in line and "constraints.available_gpus.L40S (1 GPUs)" in line


def test_cli_write_lp_and_time_limit(small, tmp_path):
    path, _, _ = small
    lp = tmp_path / "plan.lp"
    proc = run_sizer("solve", path, "--write-lp", lp, "--time-limit-s", "5", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["time_limit_s"] == 5 and data["status"] == "optimal"
    text = lp.read_text()
    assert "demand:" in text and "configurations:" in text and "use_0:" in text
    proc = run_sizer("solve", path, "--time-limit-s", "0", cwd=tmp_path)
    assert proc.returncode == 2


def test_solver_status_is_reported_as_what_it_is():
    # CBC stopped on the time limit with an incumbent: status Optimal, solution "integer feasible"
    assert solver_outcome(pulp.LpStatusOptimal, pulp.LpSolutionIntegerFeasible) == "feasible"
    assert solver_outcome(pulp.LpStatusOptimal, pulp.LpSolutionOptimal) == "optimal"
    assert solver_outcome(pulp.LpStatusInfeasible, pulp.LpSolutionNoSolutionFound) == "infeasible"
    assert solver_outcome(pulp.LpStatusNotSolved, pulp.LpSolutionNoSolutionFound) == "not solved"
    assert solver_outcome(pulp.LpStatusUnbounded, pulp.LpSolutionUnbounded) == "unbounded"


# ------------------------------------------------------------------------------------------------
# plots
# ------------------------------------------------------------------------------------------------


def test_missing_matplotlib_is_one_clear_error(catalog, small, monkeypatch, tmp_path):
    from sizer import plots

    _, w, _ = small
    plan = solve(w, catalog)
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
    with pytest.raises(SizerError) as info:
        plots.plot_memory(plan, tmp_path / "m.png")
    assert str(info.value) == "plotting needs matplotlib: pip install 'sizer[plot]'"
    assert info.value.exit_code == 1
    assert not (tmp_path / "m.png").exists()


def test_plots_are_written(catalog, small, tmp_path):
    """Each plot is a real PNG / SVG / HTML file. (matplotlib is in the [test] extra: this test used to take the
    refusal branch wherever it was missing, CI's install among them, so no plot was ever drawn there; the refusal
    is test_missing_matplotlib_is_one_clear_error's.)"""
    from sizer import plots

    _, w, evaluated = small
    plan = solve(w, catalog)
    result = sweep(w, catalog, "requests_per_s", (5.0, 20.0))
    points = pareto_points(compare(w, catalog, evaluated), catalog)
    jobs = [
        (lambda p: plots.plot_memory(plan, p), "memory.png"),
        (lambda p: plots.plot_sweep(result, p), "sweep.svg"),
        (lambda p: plots.plot_pareto(points, p, "pareto"), "pareto.html"),
    ]
    for job, name in jobs:
        target = tmp_path / name
        job(target)
        data = target.read_bytes()
        if name.endswith(".png"):
            assert data[:8] == b"\x89PNG\r\n\x1a\n"
        elif name.endswith(".svg"):
            assert b"<svg" in data[:2000]
        else:
            assert data.startswith(b"<!DOCTYPE html>") and b"<svg" in data


def test_memory_parts_add_up_to_the_usable_memory(catalog, small):
    from sizer.plots import memory_parts

    _, w, _ = small
    plan = solve(w, catalog)
    d = plan.deployments[0]
    parts = dict(memory_parts(d))
    assert sum(parts.values()) == pytest.approx(d.candidate.memory.usable_memory_bytes / 2**30, rel=1e-6)
    assert parts["KV in use (p99 batch)"] + parts["KV free"] == pytest.approx(d.candidate.memory.kv_pool_bytes_per_gpu / 2**30)


def test_cli_plot_refuses_an_unknown_suffix_before_any_work(small, tmp_path):
    path, _, _ = small
    proc = run_sizer("solve", path, "--plot", tmp_path / "x.pdf", cwd=tmp_path)
    assert_one_line_error(proc, 7, "error: --plot: expected a file ending .png, .svg, .html")


def test_devices_sharing_a_reason_are_spread_over_lines_within_the_width():
    """reason_lines keeps each line within its width by spreading the devices that share a reason
    over several lines (the catalog's unpriced devices once made one 214-character line); a lone
    device on its line is named in its reason again."""
    from sizer.errors import reason_lines

    reasons = [(f"DEV-{i}", f"tp=1 pp=1 kv=fp8 weights=fp8: no on_demand price for DEV-{i} in prices.yaml") for i in range(7)]
    lines = reason_lines(reasons, width=120)
    assert len(lines) > 1 and max(len(line) for line in lines) <= 120
    named = [n.strip() for line in lines for n in line.split(": ")[0].split(",")]
    assert named == [f"DEV-{i}" for i in range(7)]
    assert all(line.endswith("no on_demand price for the device in prices.yaml") or line.count("DEV-") == 2 for line in lines)
    assert reason_lines(reasons) == ["  " + ", ".join(d for d, _ in reasons) + ": tp=1 pp=1 kv=fp8 weights=fp8: no on_demand price for the device in prices.yaml"]


def test_cli_infeasible_reasons_one_line_per_device_within_200_characters(tmp_path):
    # issue 14 point 7: "no configuration can serve" once ran to 2,373 characters on one line. Now
    # one line per device (devices whose reasons differ only by name share a line), each within 200
    # characters here, including the instance-shape reason, the longest kind
    p = tmp_path / "w.yaml"
    p.write_text(
        "model: llama-3.1-405b\n"
        "traffic: {requests_per_s: 500, prompt_tokens: 100000, output_tokens: 500}\n"
        "slo: {ttft_s: {p99: 0.05}, tpot_s: {p99: 0.001}}\n"
    )
    proc = run_sizer("solve", p, cwd=tmp_path)
    assert proc.returncode == 9 and "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == f"error: {p}: no configuration can serve this workload; per device, the configuration that came closest:"
    assert any("needs 32 GPUs in one machine" in line for line in lines)  # the shape reason is among them
    devices = [line.split(":")[1].strip() for line in lines[1:] if line.startswith("error:   ")]
    assert len(devices) == len(set(devices)) >= 10
    assert max(len(line) for line in lines) <= 200, max(lines, key=len)


def test_table_max_seqs_is_the_launch_lines_max_num_seqs(tmp_path):
    """The README: "max seqs is the launch line's --max-num-seqs (the sequences the pool holds at
    the percentile context, or the engine's cap if lower)". Llama-3.1-8B FP8 with 1,200-token
    contexts on an A100-80GB: the pool holds far more than vLLM's cap there (256 sequences on an
    A100), so the launch line says 256; the table said the pool's figure (310 for api's A100-80GB,
    against a launch line of 256). Every row's cell, table and JSON, is the line's flag."""
    import re

    path = tmp_path / "cap.yaml"
    path.write_text(
        SMALL.format(rate=20, extra="").replace("[H100-SXM, L40S, A10G]", "[A100-80GB, H100-SXM]").replace(
            "kv_dtypes: [fp8]\n  weight_dtypes: [fp8]", "kv_dtypes: [bf16]\n  weight_dtypes: [bf16]"
        ).replace("{p50: 1000, p90: 2000, p99: 4000}", "{p50: 300, p90: 600, p99: 1000}").replace("{p50: 200, p90: 400, p99: 800}", "{p50: 50, p90: 100, p99: 200}")
    )
    proc = run_sizer("solve", path, "--as-of", "2026-12-01", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    rows = data["deployments"] + data["alternatives"]
    assert any(r["max_concurrency"] > r["max_num_seqs"] for r in rows)  # the case at issue: the pool holds more than the cap
    for r in rows:
        assert r["max_num_seqs"] == int(re.search(r"--max-num-seqs (\d+)", r["launch_command"]).group(1))
    table = run_sizer("solve", path, "--as-of", "2026-12-01", cwd=tmp_path).stdout.splitlines()
    for r in rows:
        i = next(i for i, line in enumerate(table) if line.startswith(r["device"] + " "))
        header = next(line for line in reversed(table[:i]) if line.startswith("device "))  # its own table's
        at = header.index("max seqs") + len("max seqs")
        assert table[i][:at].split()[-1] == str(r["max_num_seqs"])
