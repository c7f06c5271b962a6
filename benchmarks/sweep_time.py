"""Wall time of a 100-point `sizer sweep` (the command as a user runs it: a fresh process,
imports included), over traffic and over one device's price, on a shipped workload; and the
share of it spent evaluating candidates (once per sweep) against solving the program (once per
point).

    python benchmarks/sweep_time.py [--points 100] [--workload workloads/chat-llama-3.1-70b.yaml]

Prints one row per sweep with the flips it found, so the figures and the answers can be quoted
together.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sizer.candidates import evaluate_candidates  # noqa: E402
from sizer.catalog import load_catalog  # noqa: E402
from sizer.workload import load_workload  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100)
    parser.add_argument("--workload", default="workloads/chat-llama-3.1-70b.yaml")
    args = parser.parse_args()
    path = ROOT / args.workload
    catalog = load_catalog(ROOT / "catalogs")
    w = load_workload(path, catalog)
    t = time.perf_counter()
    evaluate_candidates(w, catalog)
    evaluate_s = time.perf_counter() - t
    winner = json.loads(
        subprocess.run([sys.executable, "-m", "sizer", "solve", str(path), "--format", "json"], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    )["deployments"][0]["device"]
    sweeps = [
        ("traffic", ["--scale", f"0.25:8:{args.points}"]),
        (f"{winner} price", ["--price-scale", f"0.5:8:{args.points}", "--price-device", winner]),
    ]
    print(f"{'sweep':24s} {'points':>6s} {'wall s':>8s} {'per point s':>12s}  evaluate once s  flips")
    for name, options in sweeps:
        t = time.perf_counter()
        run = subprocess.run(
            [sys.executable, "-m", "sizer", "sweep", str(path), *options, "--format", "json", "--quiet"], capture_output=True, text=True, cwd=ROOT
        )
        wall = time.perf_counter() - t
        if run.returncode != 0:
            raise SystemExit(f"{name}: exit {run.returncode}: {run.stderr.strip()}")
        data = json.loads(run.stdout)
        flips = "; ".join(f"{f['before']:.3g}->{f['after']:.3g}: {f['from']} -> {f['to']}" for f in data["flips"]) or "none"
        n = len(data["points"])
        print(f"{name:24s} {n:6d} {wall:8.2f} {wall / n:12.3f}  {evaluate_s:15.2f}  {flips}")


if __name__ == "__main__":
    main()
