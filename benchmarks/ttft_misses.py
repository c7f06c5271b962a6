"""What the TTFT misses have in common: every scoring run whose mean TTFT the model puts more than
50 % off (or calls saturated), sorted into the first of a few classes its own record puts it in,
with the same count among the fit runs and, for the harness-rate class, the contrast with the
other sources at the same output rates; then the model's bias against a closed loop's clients, by
harness and engine (a bias that moves with the load is a mechanism missing, a flat one is not);
and how much of the scoring runs' error is each configuration's own level (the median over its
sweep of loads) against its shape over the load (each run less that median).

    python benchmarks/ttft_misses.py            # the classes, counts and a few runs of each
    python benchmarks/ttft_misses.py --list     # every miss, one line each

Classes (the first that applies):
  bound run           an MLPerf Server or Interactive run (Poisson arrivals at the edge of its
                      p99 bounds; predicted there, validate.bound_latencies_s)
  disaggregated       prefill and decode on separate workers (by engine)
  decode off too      the run's measured TPOT is more than 1.5x off the model's as well: the
                      replica did not run as recorded (a layout, a cap or a harness the row does
                      not give), so its first token is off for the same reason
  gap, > 8k tok/s     aiconfigurator's gap-analysis runs streaming more than 8,000 output tokens/s
                      per replica (measured clients / TPOT), where the other sources at those
                      rates show no excess
  gap, low load       aiconfigurator's gap-analysis runs of 16 clients or fewer measured slower
                      than predicted
  slow at low load    other runs of 16 clients or fewer measured more than twice the prediction
  over / under        the rest, by whether the model is above or below the measurement

Each run counts once (measurements.copies). Prints the classes in order; --list prints each miss.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sizer import validate as V  # noqa: E402
from sizer.catalog import load_catalog  # noqa: E402
from sizer.measurements import AIC_GAP_SOURCE, INFERENCEX_SOURCE  # noqa: E402

MISS = 50.0  # percent: issue 13 asks for a p90 of 50 %
HARNESS_TOKENS_PER_S = 8000.0
LOW_LOAD_CLIENTS = 16.0
DECODE_OFF = 1.5
MIN_SWEEP = 3  # runs of one configuration (measurements.MeasuredRow.config_key) to call it a sweep


def source_kind(row) -> str:
    """The harness a run came from, by the source patterns sizer itself reads them with."""
    if AIC_GAP_SOURCE.search(row.source or ""):
        return "aiconfigurator gap analysis"
    if INFERENCEX_SOURCE.search(row.source or ""):
        return "InferenceX"
    if (row.dataset or "").lower().startswith("mlperf-"):
        return "MLPerf"
    return "other"


def tokens_per_s(r) -> float | None:
    """Output tokens/s of one replica from the run's own clients and TPOT (a closed loop)."""
    if r.row.kind != "concurrency" or not r.row.concurrency or not r.row.tpot_ms:
        return None
    return r.row.concurrency / (r.row.tpot_ms / 1000.0)


def classify(r) -> str:
    row = r.row
    src = source_kind(row)
    if row.kind == "rate":
        return "bound run"
    if row.mode == "disagg":
        return f"disaggregated ({row.engine})"
    if row.tpot_ms and r.predicted_tpot_ms and max(row.tpot_ms / r.predicted_tpot_ms, r.predicted_tpot_ms / row.tpot_ms) > DECODE_OFF:
        return "decode off too"
    rate = tokens_per_s(r)
    if src.startswith("aiconfigurator") and rate is not None and rate > HARNESS_TOKENS_PER_S:
        return "gap, > 8k tok/s"
    under = r.predicted_ttft_ms is None or not math.isfinite(r.predicted_ttft_ms) or r.predicted_ttft_ms < row.ttft_ms
    low = row.concurrency is not None and row.concurrency <= LOW_LOAD_CLIENTS
    if src.startswith("aiconfigurator") and low and under:
        return "gap, low load"
    if low and r.predicted_ttft_ms and row.ttft_ms > 2 * r.predicted_ttft_ms:
        return "slow at low load"
    return f"{'under' if under else 'over'}-predicted ({row.engine}, {src})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="print every miss")
    args = ap.parse_args(argv)
    report = V.validate_shipped(load_catalog())
    runs = [r for r in report.results if r.copy_of is None and r.ape("ttft") is not None]
    by_role: dict[str, list] = defaultdict(list)
    for r in runs:
        by_role[r.role].append(r)
    score, fit = by_role["score"], by_role["fit"]
    misses = [r for r in score if r.ape("ttft") > MISS]
    fit_misses = [r for r in fit if r.ape("ttft") > MISS]
    allowed = int(len(score) * 0.10)
    print(f"scoring runs with a TTFT: {len(score)}; beyond {MISS:g} %: {len(misses)} (a p90 of {MISS:g} % allows {allowed})")
    print(f"fit runs with a TTFT: {len(fit)}; beyond {MISS:g} %: {len(fit_misses)}")
    classes = Counter(classify(r) for r in misses)
    fit_classes = Counter(classify(r) for r in fit_misses)
    print(f"\n{'class':55} {'score':>6} {'fit':>5}")
    for name, n in classes.most_common():
        print(f"{name:55} {n:6d} {fit_classes.get(name, 0):5d}")
    for name in sorted(set(fit_classes) - set(classes)):
        print(f"{name:55} {0:6d} {fit_classes[name]:5d}")

    # the harness-rate class against the other sources at the same per-replica output rates
    print("\nTTFT log(measured / predicted) of aggregated closed loops by output tokens/s a replica (all runs, median; share beyond +0.41 = 1.5x):")
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in runs:
        rate = tokens_per_s(r)
        if rate is None or r.row.mode != "agg" or not r.predicted_ttft_ms or not math.isfinite(r.predicted_ttft_ms):
            continue
        band = "<= 8k" if rate <= HARNESS_TOKENS_PER_S else "> 8k"
        groups[(source_kind(r.row), band)].append(math.log(r.row.ttft_ms / r.predicted_ttft_ms))
    for (src, band), v in sorted(groups.items()):
        if len(v) >= 5:
            print(f"  {src:30} {band:6} {len(v):5d} runs  median {statistics.median(v):+.2f}  beyond 1.5x {sum(x > 0.405 for x in v) / len(v):.2f}")

    # the model's bias against the load: a closed loop's clients, by harness and engine
    bins = ((8, "<=8"), (16, "9-16"), (32, "17-32"), (64, "33-64"), (math.inf, ">64"))
    print("\nTTFT log(measured / predicted) of aggregated closed loops by clients (fit and scoring runs, median and runs; harnesses and engines of 20 runs or more):")
    by_load: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        if r.row.kind != "concurrency" or r.row.mode != "agg" or not r.row.concurrency or not r.predicted_ttft_ms or not math.isfinite(r.predicted_ttft_ms):
            continue
        label = next(name for top, name in bins if r.row.concurrency <= top)
        by_load[(source_kind(r.row), r.row.engine)][label].append(math.log(r.row.ttft_ms / r.predicted_ttft_ms))
    print(f"  {'':30} {'':7}" + "".join(f"{name:>15}" for _, name in bins))
    for (src, engine), cells in sorted(by_load.items()):
        if sum(len(v) for v in cells.values()) < 20:
            continue
        row = "".join(f"{statistics.median(cells[name]):+9.2f} ({len(cells[name]):3d})" if cells.get(name) else f"{'-':>15}" for _, name in bins)
        print(f"  {src:30} {engine:7}{row}")

    # how much of the error is a configuration's own level, and how much its shape over the load
    print(f"\nTTFT log(measured / predicted) of scoring runs, between and within configurations (a sweep's runs; configurations of {MIN_SWEEP} runs or more):")
    sweeps: dict[str, list[float]] = defaultdict(list)
    for r in score:
        if r.predicted_ttft_ms and math.isfinite(r.predicted_ttft_ms):
            sweeps[r.row.config_key].append(math.log(r.row.ttft_ms / r.predicted_ttft_ms))
    level, within, runs_of_sweeps = [], [], 0
    for v in sweeps.values():
        if len(v) >= MIN_SWEEP:
            mid = statistics.median(v)
            level += [mid] * len(v)
            within += [x - mid for x in v]
            runs_of_sweeps += len(v)
    if level:
        ape = lambda e: abs(math.exp(-e) - 1.0) * 100.0  # noqa: E731
        print(f"  {sum(1 for v in sweeps.values() if len(v) >= MIN_SWEEP)} configurations, {runs_of_sweeps} runs: median |level| {statistics.median(abs(x) for x in level):.3f}, median |run - its level| {statistics.median(abs(x) for x in within):.3f}")
        print(f"  median APE of those runs {statistics.median(ape(a + b) for a, b in zip(level, within)):.1f} %; with each configuration's level taken out {statistics.median(ape(b) for b in within):.1f} %; with only its shape over the load taken out {statistics.median(ape(a) for a in level):.1f} %")

    if args.list:
        print()
        for r in sorted(misses, key=lambda r: (classify(r), -(r.ape("ttft") if math.isfinite(r.ape("ttft")) else 1e9))):
            p = r.predicted_ttft_ms
            print(
                f"{classify(r):40.40} {r.row.row_id[:60]:60} {r.device:12} {r.row.engine:6} {r.layout[:34]:34} "
                f"N={r.row.concurrency or 0:g} isl={r.row.isl or 0:g} osl={r.row.osl or 0:g} "
                f"TTFT {r.row.ttft_ms:,.0f} / {'inf' if p is None or not math.isfinite(p) else f'{p:,.0f}'} ms"
            )
    else:
        print("\n(--list prints every miss)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
