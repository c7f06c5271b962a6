"""Wall time of `sizer solve` on every shipped workload: the median of N runs of the command as a
user runs it (a fresh process each time, imports included), and of the library call alone, split
into evaluating the candidates (memory, latency, capacity) and the program (options, integer
program, alternatives, the constraints' re-solves).

    python benchmarks/solve_time.py [--runs 5]

Prints one row per workload with the plan it found, so the figures and the plans can be quoted
together.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sizer.candidates import evaluate_candidates  # noqa: E402
from sizer.catalog import load_catalog  # noqa: E402
from sizer.optimize import plan as plan_program  # noqa: E402
from sizer.optimize import solve  # noqa: E402
from sizer.workload import load_workload  # noqa: E402


def _import_seconds(runs: int) -> float:
    """Median wall time of a Python process that only imports the CLI (interpreter start included)."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import sizer.cli"], check=True, cwd=ROOT)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    startup = _import_seconds(args.runs)
    print(
        f"start-up (median `python -c 'import sizer.cli'`): {startup:.3f} s"
        + (" with PYTHONDONTWRITEBYTECODE set: every run compiles sizer's modules" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "")
    )
    print(f"{'workload':28s} {'cli median s':>12s} {'lib median s':>12s} {'evaluate s':>10s} {'program s':>9s}  plan")
    for path in sorted((ROOT / "workloads").glob("*.yaml")):
        cli_times = []
        out = ""
        for _ in range(args.runs):
            t = time.perf_counter()
            run = subprocess.run([sys.executable, "-m", "sizer", "solve", str(path), "--format", "json"], capture_output=True, text=True, cwd=ROOT)
            cli_times.append(time.perf_counter() - t)
            if run.returncode != 0:
                raise SystemExit(f"{path.name}: exit {run.returncode}: {run.stderr.strip()}")
            out = run.stdout
        lib_times, eval_times, program_times = [], [], []
        for _ in range(args.runs):
            t = time.perf_counter()
            catalog = load_catalog(ROOT / "catalogs")
            solve(load_workload(path, catalog), catalog)
            lib_times.append(time.perf_counter() - t)
            w = load_workload(path, catalog)
            t = time.perf_counter()
            evaluated = evaluate_candidates(w, catalog)
            eval_times.append(time.perf_counter() - t)
            t = time.perf_counter()
            plan_program(w, catalog, evaluated)
            program_times.append(time.perf_counter() - t)
        data = json.loads(out)
        plan = "; ".join(
            f"{d['replicas']} x {d['device']} tp={d['tp']} pp={d['pp']} kv={d['kv_dtype']} w={d['weight_dtype']}" for d in data["deployments"]
        )
        print(
            f"{path.stem:28s} {statistics.median(cli_times):12.3f} {statistics.median(lib_times):12.3f} "
            f"{statistics.median(eval_times):10.3f} {statistics.median(program_times):9.3f}  "
            f"{plan}; ${data['cost_usd_per_hour']:.2f}/h; ${data['cost_usd_per_million_tokens']:.3f}/M tokens"
            + (f"; ${data['cost_usd_per_day']:,.2f}/day, reserved {data['reserved_replicas']}, on-demand peak {data['on_demand_peak_replicas']}" if data["schedule"] else "")
        )


if __name__ == "__main__":
    main()
