"""Where the knife-edge rule's share sits: for every candidate of every shipped workload, the
ratio of its largest rate at confidence Q to its largest rate at 0.5, around
candidates.CONFIDENCE_EDGE_SHARE. The README and the constant's docstring quote the gap this
prints (at 0.9: ratios at most 0.041, then none below 0.102).

    python benchmarks/confidence_edges.py [--confidence 0.9] [--window 0.2]

Both searches run without the rule (the share set to 0 here), so a candidate the rule would
refuse is measured too; a candidate with no rate at Q (a zero-load latency past a bound) is
counted apart. Prints every ratio below --window, and the largest below the share and the
smallest at or above it.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sizer.candidates as candidates  # noqa: E402
from sizer.catalog import load_catalog  # noqa: E402
from sizer.workload import load_workload  # noqa: E402


def ratios(q: float) -> tuple[list[tuple[float, str, str]], int]:
    """(rate at q / rate at 0.5, workload, configuration) for every candidate with a rate at both,
    and the number with a rate at 0.5 but none at q."""
    share, candidates.CONFIDENCE_EDGE_SHARE = candidates.CONFIDENCE_EDGE_SHARE, 0.0
    try:
        catalog = load_catalog(ROOT / "catalogs")
        out, none_at_q = [], 0
        for path in sorted((ROOT / "workloads").glob("*.yaml")):
            w = load_workload(path, catalog)
            rates = []
            for conf in (0.5, q):
                at = replace(w, slo=replace(w.slo, confidence=conf))
                rates.append({e.config.label(): e.max_rate_rps for e in candidates.evaluate_candidates(at, catalog) if e.feasible})
            for label, r50 in rates[0].items():
                rq = rates[1].get(label)
                if rq is None:
                    none_at_q += 1
                else:
                    out.append((rq / r50, path.stem, label))
        return sorted(out), none_at_q
    finally:
        candidates.CONFIDENCE_EDGE_SHARE = share


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--confidence", type=float, default=0.9)
    ap.add_argument("--window", type=float, default=0.2)
    args = ap.parse_args(argv)
    share = candidates.CONFIDENCE_EDGE_SHARE
    found, none_at_q = ratios(args.confidence)
    print(f"confidence {args.confidence:g}: {len(found)} candidates with a rate at both, {none_at_q} with none at {args.confidence:g}; share {share:g}")
    for ratio, workload, label in found:
        if ratio < args.window:
            print(f"  {ratio:.4f}  {'refused' if ratio < share else 'planned'}  {workload}  {label}")
    below = [r for r, *_ in found if r < share]
    above = [r for r, *_ in found if r >= share]
    print(f"largest below the share: {max(below):.4f}" if below else "none below the share")
    print(f"smallest at or above it: {min(above):.4f}" if above else "none at or above it")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
