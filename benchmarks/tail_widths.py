"""How wide the model's latency tails are against measured ones: at every MLPerf Server and
Interactive run (a run at the edge of its p99 TTFT and TPOT bounds that reports both the mean
and the p99 of each), the run's own p99 / mean against the model's p99 / mean at its edge.

    python benchmarks/tail_widths.py          # medians, overall and by engine and bound
    python benchmarks/tail_widths.py --list   # every run, one line each

The model's figures are evaluate_load's at the model's largest rate within the run's bounds
(validate.bounded_rates_rps, where validate predicts the run's throughput, TTFT and TPOT), on
the run's own length distributions, KV pool, running-sequence cap and token budget. The p99 is
the one a plan is sized by; the mean is the open loop's (validate.bound_latencies_s). Both
sides are per-request figures: MLPerf's LoadGen and the model take a request's TPOT as its decode
time over its output tokens after the first.

A model ratio above the measured one is a tail the model draws wider than the engine ran: a
plan sized on that p99 is conservative by about the ratio of the two (the mean being right);
below, the plan is optimistic there. Each run counts once (measurements.copies).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sizer.catalog import load_catalog  # noqa: E402
from sizer.calibrate import shipped_runs  # noqa: E402
from sizer.queueing import evaluate_load  # noqa: E402
from sizer.validate import bound_latencies_s, bound_run_checks, bounded_rates_rps, build_setup  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def widths(catalog_dir: Path) -> list[dict]:
    shipped = shipped_runs(load_catalog(catalog_dir))
    roles = shipped.roles
    runs = [
        r
        for r in shipped.resolved
        if r.latency_bounds_s is not None and r.row.row_id not in shipped.copy_of and r.row.tpot_ms and r.row.tpot_p99_ms and r.row.ttft_ms and r.row.ttft_p99_ms
    ]
    setup = build_setup(runs)
    edge = bounded_rates_rps(setup)
    means = bound_latencies_s(setup, edge)
    out = []
    for i, r in enumerate(runs):
        if edge.get(i, 0.0) <= 0 or i not in means:
            continue
        tpot_bound = r.latency_bounds_s[1]
        demand, limits = bound_run_checks(setup, i)
        point = evaluate_load(setup.step.take(np.array([i])), np.array([edge[i]]), demand, limits)
        ttft_mean, tpot_mean = means[i]
        row = r.row
        out.append(
            {
                "id": row.row_id,
                "role": roles.get(row.row_id, "score"),
                "engine": row.engine,
                "device": r.gpu.name,
                "bound": "interactive" if tpot_bound < 0.1 else "server",
                "tpot_measured": row.tpot_p99_ms / row.tpot_ms,
                "tpot_model": float(point.tpot_s["p99"][0]) / tpot_mean,
                "ttft_measured": row.ttft_p99_ms / row.ttft_ms,
                "ttft_model": float(point.ttft_s["p99"][0]) / ttft_mean,
                "tpot_mean_ms": (row.tpot_ms, tpot_mean * 1000),
                "ttft_mean_ms": (row.ttft_ms, ttft_mean * 1000),
            }
        )
    return out


def _line(label: str, group: list[dict]) -> str:
    med = lambda key: statistics.median(g[key] for g in group)  # noqa: E731
    wider = sum(1 for g in group if g["tpot_model"] > g["tpot_measured"])
    ttft_wider = sum(1 for g in group if g["ttft_model"] > g["ttft_measured"])
    return (
        f"{label:28s} {len(group):4d}   TPOT {med('tpot_measured'):5.2f} / {med('tpot_model'):5.2f}  model wider in {wider:3d}"
        f"   TTFT {med('ttft_measured'):5.2f} / {med('ttft_model'):5.2f}  model wider in {ttft_wider:3d}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="every run, one line each")
    args = ap.parse_args()
    runs = widths(ROOT / "catalogs")
    print("p99 / mean, measured / model (medians), at each bound run's edge")
    print(_line("all bound runs", runs))
    groups: dict[str, list[dict]] = defaultdict(list)
    for g in runs:
        groups[f"{g['engine']}, {g['bound']}"].append(g)
        groups[f"role {g['role']}"].append(g)
    for key in sorted(groups):
        print(_line(key, groups[key]))
    if args.list:
        print()
        for g in runs:
            print(
                f"{g['id'][:60]:60s} {g['role']:5s} {g['device']:12s} TPOT p99/mean {g['tpot_measured']:4.2f} / {g['tpot_model']:4.2f}"
                f" (means {g['tpot_mean_ms'][0]:6.1f} / {g['tpot_mean_ms'][1]:6.1f} ms)  TTFT {g['ttft_measured']:4.2f} / {g['ttft_model']:4.2f}"
            )


if __name__ == "__main__":
    main()
