"""Analytic against simulated, on the solved plan of every shipped workload: each deployment's
replica simulated as its launch line configures it (tests/test_simulate_workloads.py's setting:
Poisson arrivals at the replica's load, about 20,000 requests, 20,000 / rate seconds within
600-3,600 s), its TTFT and TPOT p99 next to the analytic model's (queueing.evaluate_load), the
difference, and whether the simulated replica meets the workload's SLO.

    python benchmarks/simulate_agreement.py [--seeds 7] [--workload NAME ...] [--as-of 2026-12-01]

Prints one row per replica kind and seed; with several seeds, the spread of the differences.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sizer.catalog import load_catalog  # noqa: E402
from sizer.simulate import analytic, plan_replicas, poisson_arrivals, simulate_replica, slo_checks  # noqa: E402
from sizer.workload import load_workload  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[7])
    parser.add_argument("--workload", nargs="*", default=None, help="workload names (stems); default every shipped one")
    parser.add_argument("--requests", type=float, default=20000.0)
    args = parser.parse_args()
    catalog = load_catalog(ROOT / "catalogs")
    head = f"{'workload':24s} {'replica':34s} {'req/s':>6s} {'seqs':>5s} {'seed':>4s} {'TTFT p99 an/sim s':>20s} {'diff':>7s} {'TPOT p99 an/sim ms':>19s} {'diff':>7s} {'batch an/sim p99':>16s} {'kv max':>6s} {'SLO':>4s} {'s':>5s}"
    print(head)
    for path in sorted((ROOT / "workloads").glob("*.yaml")):
        if args.workload and path.stem not in args.workload:
            continue
        w = load_workload(path, catalog)
        for spec in plan_replicas(w, catalog):
            point = analytic(spec, w)
            a_ttft, a_tpot = float(point.ttft_s["p99"][0]), float(point.tpot_s["p99"][0])
            for seed in args.seeds:
                duration = min(max(args.requests / spec.rate_rps, 600.0), 3600.0)
                arr = poisson_arrivals(spec.rate_rps, duration, w.traffic.prompt_tokens, w.traffic.output_tokens, seed)
                t0 = time.perf_counter()
                r = simulate_replica(spec, arr, duration_s=duration)
                el = time.perf_counter() - t0
                ok = all(c.met for c in slo_checks(w, r)) and r.unfinished == 0
                s_ttft, s_tpot = r.ttft_s["p99"], r.tpot_s["p99"]
                print(
                    f"{path.stem:24s} {spec.label:34s} {spec.rate_rps:6.3g} {spec.max_num_seqs:5d} {seed:4d} "
                    f"{a_ttft:9.3f} / {s_ttft:8.3f} {(s_ttft - a_ttft) / a_ttft:+7.1%} "
                    f"{a_tpot * 1e3:8.1f} / {s_tpot * 1e3:8.1f} {(s_tpot - a_tpot) / a_tpot:+7.1%} "
                    f"{float(point.running_tail[0]):7.1f}/{r.running_p99:7.0f} {r.kv_utilization_max:6.1%} {'PASS' if ok else 'FAIL':>4s} {el:5.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
