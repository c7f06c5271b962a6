"""At which rate to predict a bound run's TTFT and TPOT: the model's edge (what `sizer validate`
does), or the run's own rate. A bound run (MLPerf Server, Interactive) reports the rate its
submitter found within p99 TTFT and TPOT bounds, and the mean TTFT and TPOT at that rate.

    python benchmarks/bound_rules.py                           # the shipped table, fit and score rows
    python benchmarks/bound_rules.py --measurements mine.csv   # a file of your own (every row scored)
    python benchmarks/bound_rules.py --list                    # every run, one line each

Rules, for a run at rate r whose model edge (validate.bounded_rates_rps: the model's largest rate
per replica within the run's bounds) is m:

    edge    at m, what validate scores: the run taken to sit at its system's edge, as the model's
            figures sit at the model's (validate.bound_latencies_s)
    rate    at r where r <= m, else at m: the model's speed taken as right, the run below its edge
    geo     at sqrt(r m) where r < m, else at m: halfway (in log) between the two readings

The model's latencies are steep near its edge (at 0.95 of it TTFT and TPOT move some 40 %:
`sizer validate`'s edge_sensitivity), so the rule matters as much as the step model. A rule
better on one metric and worse on the other is no better reading of the run: the three figures
(rate, TTFT, TPOT) describe one operating point. Each run counts once (measurements.copies).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sizer.calibrate import runs_of, shipped_runs  # noqa: E402
from sizer.catalog import load_catalog  # noqa: E402
from sizer.errors import SizerError  # noqa: E402
from sizer.measurements import Resolved, read_csv  # noqa: E402
from sizer.validate import bound_latencies_s, bounded_rates_rps, build_setup  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

RULES = {
    "edge": lambda r, m: m,
    "rate": lambda r, m: min(r, m),
    "geo": lambda r, m: math.sqrt(r * m) if r < m else m,
}


def bound_runs(catalog, measurements: Path | None) -> tuple[list[Resolved], dict[str, str]]:
    """The bound runs of the shipped table (with their fit / score roles) or of a user's file
    (every row a scoring row), resolved and past the roofline check, each run once."""
    if measurements is None:
        runs = shipped_runs(catalog)
    else:
        rows = read_csv(measurements)
        runs = runs_of(rows, catalog, {r.row_id: "score" for r in rows})
    bound = [r for r in runs.resolved if r.row.row_id not in runs.copy_of and r.latency_bounds_s is not None and r.row.kind == "rate"]
    return bound, runs.roles


def apes(runs: list[Resolved]) -> list[dict]:
    """Per run with a model edge: TTFT and TPOT APE (percent) under each rule."""
    if not runs:
        return []
    setup = build_setup(runs)
    edge = bounded_rates_rps(setup)
    per_rule = {name: bound_latencies_s(setup, {i: f(float(setup.rate_rps[i]), m) for i, m in edge.items() if m > 0}) for name, f in RULES.items()}
    out = []
    for i, res in enumerate(runs):
        if i not in per_rule["edge"]:
            continue
        row = res.row
        rec = {"id": row.row_id, "device": res.gpu.name, "engine": row.engine, "rate": float(setup.rate_rps[i]), "edge": edge[i]}
        for name, lat in per_rule.items():
            # a rate whose open loop has no finite figures (none of the shipped runs: every rule's
            # rate is at or below the edge, where max_rate found the loop stable) reads as the edge
            ttft_s, tpot_s = lat.get(i, per_rule["edge"][i])
            rec[f"{name}_ttft"] = abs(ttft_s * 1000 - row.ttft_ms) / row.ttft_ms * 100 if row.ttft_ms else None
            rec[f"{name}_tpot"] = abs(tpot_s * 1000 - row.tpot_ms) / row.tpot_ms * 100 if row.tpot_ms else None
        out.append(rec)
    return out


def summary_line(label: str, recs: list[dict]) -> str:
    parts = []
    for name in RULES:
        cells = []
        for metric in ("ttft", "tpot"):
            v = np.array([r[f"{name}_{metric}"] for r in recs if r[f"{name}_{metric}"] is not None])
            if not v.size:
                cells.append(f"{metric.upper()} -")
                continue
            cells.append(f"{metric.upper()} {np.percentile(v, 50):5.1f} / {np.percentile(v, 90):5.1f} ({int((v > 50).sum())} > 50)")
        parts.append(f"{name}: " + "  ".join(cells))
    return f"{label:10s} {len(recs):4d} runs   " + "   |   ".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--measurements", type=Path, default=None, help="a measurement CSV of your own (default: the shipped table)")
    ap.add_argument("--list", action="store_true", help="every run, one line each")
    args = ap.parse_args()
    catalog = load_catalog(ROOT / "catalogs")
    try:
        runs, roles = bound_runs(catalog, args.measurements)
    except SizerError as exc:  # a file that is not there or not a measurement table: one line
        sys.exit(f"error: {exc}")
    recs = apes(runs)
    for r in recs:
        r["role"] = roles.get(r["id"], "score")
    print("bound runs: APE of mean TTFT and TPOT, median / p90 % (runs beyond 50 %), by the rate they are predicted at")
    for role in ("fit", "score"):
        group = [r for r in recs if r["role"] == role]
        if group:
            print(summary_line(role, group))
    if args.list:
        print()
        for r in recs:
            cells = "  ".join(f"{n} {r[f'{n}_ttft'] or 0:5.0f}/{r[f'{n}_tpot'] or 0:4.0f}" for n in RULES)
            print(f"{r['id'][:64]:64s} {r['role']:5s} {r['device']:12s} {r['engine']:7s} rate {r['rate']:7.2f} edge {r['edge']:7.2f}  TTFT/TPOT APE  {cells}")


if __name__ == "__main__":
    main()
