"""How the scoring rows' errors depend on the fit's robust loss: each setting refits the
efficiency factors to the shipped fit rows (sizer calibrate, into a temporary table) and scores
the shipped scoring rows with them (sizer validate), so no setting sees the rows it is scored on.

    python benchmarks/fit_sensitivity.py                      # the shipped loss and three others
    python benchmarks/fit_sensitivity.py --setting reject=0.9 --setting reject=0.9,ttft=2

A setting names any of huber, reject (log units), tpot, ttft, throughput (metric weights), floor
(the TTFT floor's weight; 0 turns it off) and ridge (penalty per squared offset); the rest keep
sizer/calibrate.py's defaults (Loss). One refit takes 2-4 minutes on one core.
Prints per setting: TPOT, TTFT and throughput median / p90 absolute percentage error of the
scoring rows (band coverage is left out: the bands are built from the shipped residuals). Choosing a
setting by these figures would tune on the scoring rows: the script measures, it does not choose.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sizer.calibrate import Loss, calibrate_shipped  # noqa: E402
from sizer.catalog import load_catalog  # noqa: E402
from sizer.efficiency import load_efficiency  # noqa: E402
from sizer.validate import summary, validate_shipped  # noqa: E402

DEFAULT_SETTINGS = ("", "reject=0.7", "reject=0.9", "reject=0.9,ttft=2")
FIELDS = ("huber", "reject", "tpot", "ttft", "throughput", "floor", "ridge")


def parse_setting(text: str) -> Loss:
    """'reject=0.9,ttft=2' -> Loss(reject=0.9, ttft=2.0); '' -> the defaults."""
    changes = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, _, value = part.partition("=")
        if key not in FIELDS:
            raise SystemExit(f"--setting {text!r}: unknown field {key!r}; expected one of {', '.join(FIELDS)}")
        try:
            changes[key] = float(value)
        except ValueError:
            raise SystemExit(f"--setting {text!r}: {key} expects a number, got {value!r}") from None
    return replace(Loss(), **changes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setting", action="append", default=None, help="e.g. reject=0.9,ttft=2 (repeatable; '' is the shipped loss)")
    parser.add_argument("--max-iterations", type=int, default=40)
    args = parser.parse_args()
    catalog = load_catalog(ROOT / "catalogs")
    settings = args.setting if args.setting is not None else list(DEFAULT_SETTINGS)
    print(f"{'setting':22s} {'TPOT med':>8s} {'p90':>6s} {'TTFT med':>8s} {'p90':>6s} {'thr med':>7s} {'p90':>6s} {'iters':>5s} {'s':>5s}")
    for text in settings:
        loss = parse_setting(text)
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "efficiency.json"
            result, _ = calibrate_shipped(catalog, output=out, max_iterations=args.max_iterations, fitted="2026-12-01", loss=loss)
            report = validate_shipped(catalog, efficiency=load_efficiency(out))
        s = summary(report)["overall"]
        print(
            f"{text or 'shipped':22s} {s['tpot_median_ape']:8.2f} {s['tpot_p90_ape']:6.2f} {s['ttft_median_ape']:8.2f} {s['ttft_p90_ape']:6.2f} "
            f"{s['throughput_median_ape']:7.2f} {s['throughput_p90_ape']:6.2f} {result.iterations:5d} {time.perf_counter() - start:5.0f}"
        )


if __name__ == "__main__":
    main()
