"""Wall time of scoring the model against the shipped measurements, and of the fit's inner loop:

    python benchmarks/validate_time.py [--runs 3]

- `validate`: validate.validate_shipped on the shipped table (every row resolved to its model,
  device and layout, predicted, the bound runs' largest rates searched, the error bands' coverage),
  the library call behind `sizer validate`. Median of N runs in one process, after a first run
  that is reported apart (the first resolves each catalog model entry from its file; later runs
  find it parsed, as a test session or a second `sizer validate` in one process would).
- `predict (fit rows)`: one validate.predict over the fit rows, the call calibrate's
  Levenberg-Marquardt repeats for each factor and group of every Jacobian (about 80 times an
  iteration on the shipped table). Median of N x 5 calls.

Also prints the rows and the model entries parsed, so that the figures can be quoted together.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sizer import catalog as catalog_module  # noqa: E402
from sizer.catalog import load_catalog  # noqa: E402
from sizer.calibrate import shipped_runs  # noqa: E402
from sizer.validate import build_setup, predict, validate_shipped  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    cat = load_catalog(ROOT / "catalogs")

    t = time.perf_counter()
    report = validate_shipped(cat)
    first = time.perf_counter() - t
    parsed = len(catalog_module._MODEL_ENTRIES)
    times = []
    for _ in range(args.runs):
        t = time.perf_counter()
        validate_shipped(cat)
        times.append(time.perf_counter() - t)
    print(f"validate: {len(report.results)} rows modelled, {len(report.skipped)} skipped, {parsed} model entries parsed")
    print(f"  first run {first:.2f} s; then median {statistics.median(times):.2f} s of {args.runs} (min {min(times):.2f}, max {max(times):.2f})")

    fit_rows = shipped_runs(cat).fit_rows  # as calibrate.calibrate_shipped takes them
    setup = build_setup(fit_rows)
    calls = []
    for _ in range(args.runs * 5):
        t = time.perf_counter()
        predict(setup)
        calls.append(time.perf_counter() - t)
    print(f"predict (fit rows): {len(fit_rows)} rows, median {statistics.median(calls) * 1000:.0f} ms a call of {len(calls)} (min {min(calls) * 1000:.0f}, max {max(calls) * 1000:.0f})")


if __name__ == "__main__":
    main()
