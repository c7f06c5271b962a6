"""Wall time of `sizer simulate` on every shipped workload: a 10-minute window (600 s of
arrivals) of one replica of each deployment of the solved plan, the simulation alone (the solve
that finds the plan is timed apart), median of N runs with different seeds; and the same through
the command line as a user runs it (a fresh process, imports and the solve included).

    python benchmarks/simulate_time.py [--runs 3] [--duration-s 600]

Prints one row per replica kind: requests simulated, engine steps, and the seconds.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sizer.catalog import load_catalog  # noqa: E402
from sizer.simulate import plan_replicas, poisson_arrivals, simulate_replica  # noqa: E402
from sizer.workload import load_workload  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration-s", type=float, default=600.0)
    args = parser.parse_args()
    catalog = load_catalog(ROOT / "catalogs")
    print(f"{'workload':28s} {'replica':44s} {'req/s':>7s} {'requests':>9s} {'steps':>8s} {'solve s':>8s} {'sim s':>7s} {'cli s':>7s}")
    for path in sorted((ROOT / "workloads").glob("*.yaml")):
        w = load_workload(path, catalog)
        t0 = time.perf_counter()
        specs = plan_replicas(w, catalog)
        solve_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        run = subprocess.run(
            [sys.executable, "-m", "sizer", "simulate", str(path), "--duration-s", f"{args.duration_s:g}", "--format", "json"],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        cli_s = time.perf_counter() - t1
        if run.returncode not in (0, 11):  # 11: a bound missed, a verdict, not a failure to time
            raise SystemExit(f"{path.name}: exit {run.returncode}: {run.stderr.strip()}")
        for spec in specs:
            times, steps, requests = [], 0, 0
            for seed in range(args.runs):
                arrivals = poisson_arrivals(spec.rate_rps, args.duration_s, w.traffic.prompt_tokens, w.traffic.output_tokens, seed)
                t = time.perf_counter()
                result = simulate_replica(spec, arrivals, duration_s=args.duration_s)
                times.append(time.perf_counter() - t)
                steps, requests = result.steps, len(arrivals.time_s)
            print(
                f"{path.stem:28s} {spec.label:44s} {spec.rate_rps:7.3g} {requests:9,d} {steps:8,d} {solve_s:8.1f} "
                f"{statistics.median(times):7.2f} {cli_s:7.1f}"
            )


if __name__ == "__main__":
    main()
