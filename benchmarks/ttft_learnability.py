"""How much of the TTFT error on the aggregated closed-loop rows anything the rows record can
explain: a gradient-boosted correction of log(predicted / measured) TTFT, learned on the fit rows
from 13 features of each row and its prediction, applied to the scoring rows. If the scoring
rows' error barely moves, what is left is not a function of the recorded conditions (harness
warm-up, unrecorded settings, run-to-run spread), and no mechanism built on them will remove it.

    pip install scikit-learn        # an analysis tool here, not a dependency of sizer
    python benchmarks/ttft_learnability.py

Features: log clients, log prompt and output length, the prefill load (completions/s x replica
seconds per prompt), the KV pool's fill (clients / sequences it holds), the decoding share of the
admitted sequences, the prompt's prefill and one decode step each as a share of the predicted TTFT,
the predicted step over the one-sequence step, tp, dp, engine, architecture. Each run counts once
(measurements.copies). Prints the median / p90 APE before and after, on fit and scoring rows.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sizer import queueing as Q  # noqa: E402
from sizer import validate as V  # noqa: E402
from sizer.catalog import load_catalog  # noqa: E402
from sizer.measurements import Resolved, copies, resolve, shipped_split  # noqa: E402


def features() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(features, log error, is a fit row) of every aggregated closed-loop row with a TTFT."""
    cat = load_catalog()
    rows, roles = shipped_split(cat)
    res = [r for r in (resolve(x, cat) for x in rows) if isinstance(r, Resolved) and r.row.mode == "agg" and r.row.kind == "concurrency" and r.row.ttft_ms]
    res, _ = V.roofline_check(res)
    repeated = copies([r.row for r in res])
    res = [r for r in res if r.row.row_id not in repeated]
    setup = V.build_setup(res)
    s, L = setup.step, setup.lengths
    out = Q.closed_loop(s, setup.concurrency, setup.isl, setup.osl, setup.capacity, setup.budget, lengths=L, hold=setup.hold)
    pf = L.isl * s.prefill_per_token_s(L.isl_attn)
    t1 = s.decode_step_s(np.ones(len(res)), L.ctx)
    engines = sorted({r.row.engine for r in res})
    x = np.column_stack(
        [
            np.log(setup.concurrency),
            np.log(L.isl),
            np.log(L.osl),
            out.rate_rps * pf,
            setup.concurrency / np.maximum(setup.capacity, 1.0),
            out.decoding / out.admitted,
            pf / out.ttft_s,
            t1 / out.ttft_s,
            out.tpot_s / t1,
            [r.layout.tp for r in res],
            [r.layout.dp for r in res],
            [engines.index(r.row.engine) for r in res],
            [int(r.model.is_moe) for r in res],
        ]
    )
    err = np.log(out.ttft_s / np.array([r.row.ttft_ms / 1000.0 for r in res]))
    fit = np.array([roles[r.row.row_id] == "fit" for r in res])
    return x, err, fit


def _ape(log_err: np.ndarray) -> str:
    a = np.abs(np.exp(log_err) - 1.0) * 100.0
    return f"{np.median(a):.1f} % / {np.percentile(a, 90):.1f} %"


def main() -> None:
    try:
        from sklearn.ensemble import GradientBoostingRegressor
    except ImportError:
        sys.exit("needs scikit-learn: pip install scikit-learn")
    x, err, fit = features()
    model = GradientBoostingRegressor(loss="huber", n_estimators=200, max_depth=3, learning_rate=0.05, subsample=0.8, random_state=0)
    model.fit(x[fit], np.clip(err[fit], -1.2, 1.2))  # the calibration's own rejection of gross misses (calibrate.REJECT)
    corrected = err - model.predict(x)
    for name, m in (("fit rows (learned on)", fit), ("scoring rows", ~fit)):
        print(f"{name:24s} n={int(m.sum()):5d}  TTFT median / p90 APE  before {_ape(err[m])}  after {_ape(corrected[m])}")


if __name__ == "__main__":
    main()
