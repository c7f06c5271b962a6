"""Wall time of `sizer solve` on every shipped workload: the median of N runs of the command as a
user runs it (a fresh process each time, imports included), and of the library call alone, split
into evaluating the candidates (memory, latency, capacity) and the program (options, integer
program, alternatives, the constraints' re-solves).

    python benchmarks/solve_time.py [--runs 5]

The command is timed two ways. "compiling": as this environment runs it; where
PYTHONDONTWRITEBYTECODE is set (this project's machines set it) every run compiles sizer's
modules from source, about 0.15-0.2 s. "bytecode": with sizer's bytecode cached, the state of any
install after its first run (Python writes __pycache__ on first import unless told not to, and
`pip install .` compiles at install): a compiled copy of the package in a temporary directory.
The two are alternated run by run, so that the machine's drifts fall on both alike.

Prints one row per workload with the plan it found, so the figures and the plans can be quoted
together.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sizer.candidates import evaluate_candidates  # noqa: E402
from sizer.catalog import load_catalog  # noqa: E402
from sizer.optimize import plan as plan_program  # noqa: E402
from sizer.optimize import solve  # noqa: E402
from sizer.workload import load_workload  # noqa: E402

PACKAGES = ("sizer", "catalogs")


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    """Wall time of one fresh process running `cmd`, and its standard output."""
    t = time.perf_counter()
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env)
    elapsed = time.perf_counter() - t
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {run.returncode}: {run.stderr.strip()}")
    return elapsed, run.stdout


def _interleaved(cmd: list[str], runs: int, cached: Path) -> tuple[float, float, str]:
    """Median wall times of `cmd` compiling (from the repository, as this environment runs it)
    and with bytecode cached (from a compiled copy of the package), the two alternated run by run
    so that the machine's drifts fall on both alike; and the last output."""
    env = dict(os.environ)
    cached_env = dict(env, PYTHONPATH=str(cached))
    cold, warm, out = [], [], ""
    for _ in range(runs):
        t, out = _run(cmd, ROOT, env)
        cold.append(t)
        warm.append(_run(cmd, cached, cached_env)[0])
    return statistics.median(cold), statistics.median(warm), out


def _compiled_copy(where: Path) -> Path:
    """sizer and its catalogs copied to `where` and compiled, as a first import (or `pip install .`)
    leaves them."""
    for package in PACKAGES:
        shutil.copytree(ROOT / package, where / package, ignore=shutil.ignore_patterns("__pycache__"))
        compileall.compile_dir(where / package, quiet=1)
    return where


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    compiling = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    paths = sorted((ROOT / "workloads").glob("*.yaml"))
    with tempfile.TemporaryDirectory() as tmp:
        cached = _compiled_copy(Path(tmp))
        start_compiling, start_cached, _ = _interleaved([sys.executable, "-c", "import sizer.cli"], args.runs, cached)
        cli = {p: _interleaved([sys.executable, "-m", "sizer", "solve", str(p), "--format", "json"], args.runs, cached) for p in paths}
    print(
        f"start-up (median `python -c 'import sizer.cli'`): {start_cached:.3f} s with bytecode cached, "
        f"{start_compiling:.3f} s " + ("compiling sizer every run (PYTHONDONTWRITEBYTECODE is set)" if compiling else "as this environment runs it")
    )
    print(f"{'workload':28s} {'cli bytecode':>12s} {'cli compiling':>13s} {'lib s':>6s} {'evaluate s':>10s} {'program s':>9s}  plan")
    for path in paths:
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
        cold, warm, out = cli[path]
        data = json.loads(out)
        plan = "; ".join(
            f"{d['replicas']} x {d['device']} tp={d['tp']} pp={d['pp']} kv={d['kv_dtype']} w={d['weight_dtype']}" for d in data["deployments"]
        )
        print(
            f"{path.stem:28s} {warm:12.3f} {cold:13.3f} {statistics.median(lib_times):6.3f} "
            f"{statistics.median(eval_times):10.3f} {statistics.median(program_times):9.3f}  "
            f"{plan}; ${data['cost_usd_per_hour']:.2f}/h; ${data['cost_usd_per_million_tokens']:.3f}/M tokens"
            + (f"; ${data['cost_usd_per_day']:,.2f}/day, reserved {data['reserved_replicas']}, on-demand peak {data['on_demand_peak_replicas']}" if data["schedule"] else "")
        )


if __name__ == "__main__":
    main()
