"""The plan of every shipped workload, as `sizer solve` prints it, in one Markdown table: the
README's "shipped workloads" table and the before/after tables of the closing notes come from here.

    python benchmarks/shipped_plans.py [--as-of 2026-12-01] [--confidence 0.9] [--save DIR] [--before DIR]

Each workload is solved by the command a user runs (`sizer solve W --format json --as-of D`, a
fresh process); with --confidence Q it is solved again at Q, and the table says what Q costs.
--save DIR keeps each JSON (DIR/<workload>.json); --before DIR, a directory saved so from an
earlier tree, adds the plan there and why the cost moved is left to the reader: the columns show
device, layout, replicas, $/hour and $ per million output tokens side by side.
"""

from __future__ import annotations

import argparse
import json
import re
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def solve_json(workload: Path, as_of: str, confidence: float | None = None) -> dict:
    argv = [sys.executable, "-m", "sizer", "solve", str(workload), "--format", "json", "--as-of", as_of]
    if confidence is not None:
        argv += ["--confidence", str(confidence)]
    env = {k: v for k, v in os.environ.items() if k != "SIZER_CATALOG_DIR"}
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
    if proc.returncode != 0:
        return {"status": f"exit {proc.returncode}", "error": proc.stderr.strip().splitlines()[:1]}
    return json.loads(proc.stdout)


def confidence_cost(c: dict | None) -> str:
    """What the confidence costs against the 0.5 plan, as the CONFIDENCE line says it."""
    if not c:
        return "-"
    if c.get("reason"):
        return f"no plan at 0.5 to compare ({c['reason']})"
    gpus, usd = c["extra_gpus"], c["extra_cost_usd_per_hour"]
    return f"{gpus:+d} GPU{'' if abs(gpus) == 1 else 's'}, {'+' if usd >= 0 else '-'}${abs(usd):,.2f}/h"


def failure_label(d: dict) -> str:
    """A failed solve in a cell: its exit code, the message's first clause, and the devices a
    confidence left without a configuration (the error's `X has no configuration at Q`)."""
    text = d["error"][0] if d.get("error") else ""
    text = text.removeprefix("error: ").split(": ", 1)[-1]  # less the workload's path
    head = re.sub(r" \([^()]*\)", "", text.split(" [", 1)[0])  # less every parenthesis
    refused = re.findall(r"; ([\w.-]+) has no configuration at ([\d.]+)", text)
    tail = f"; at {refused[0][1]} none on {', '.join(d for d, _ in refused)}" if refused else ""
    return f"no plan ({d.get('status', '?')}): {head}{tail}"


def plan_label(d: dict) -> str:
    if not d.get("deployments"):
        return failure_label(d)
    parts = []
    for x in d["deployments"]:
        shape = f"tp={x['tp']}" + (f" pp={x['pp']}" if x["pp"] > 1 else "")
        parts.append(f"{x['replicas']} x {x['device']} {shape}")
    return " + ".join(parts)


def evidence_label(d: dict) -> str:
    out = []
    for x in d.get("deployments", []):
        e = x.get("evidence")
        if not e:
            continue
        basis = "measured" if e["basis"] == "measured" else "datasheet"
        ttft = "-" if e["ttft_median_ape"] is None else f"{e['ttft_median_ape']:.1f} %"
        tpot = "-" if e["tpot_median_ape"] is None else f"{e['tpot_median_ape']:.1f} %"
        other = ", none of this model's kind" if e.get("basis") == "measured" and e.get("device_architecture_fit_rows") == 0 else ""
        out.append(f"{basis}, {e['group_label']} {e['group_rows']} row{'' if e['group_rows'] == 1 else 's'}{other}: {tpot} / {ttft}")
    return "; ".join(out) or "-"


def band_label(d: dict) -> str:
    out = []
    for x in d.get("deployments", []):
        lo, hi = x.get("max_rate_rps_per_replica_p10"), x.get("max_rate_rps_per_replica_p90")
        rate = f"{x['max_rate_rps_per_replica']:.2f}"
        out.append(rate if lo is None else f"{rate}: {lo:.2f}-{hi:.2f}")
    return "; ".join(out) or "-"


def money(x) -> str:
    return "no plan" if x is None else f"{x:,.2f}"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--as-of", default="2026-12-01")
    ap.add_argument("--confidence", type=float, default=None)
    ap.add_argument("--save", type=Path, default=None)
    ap.add_argument("--before", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
    head = ["workload", "plan", "$/h", "$/M tok", "evidence (nearest group: median APE TPOT / TTFT)", "max req/s per replica: p10-p90", "cost band $/h", "p99 sizing vs p50"]
    if args.confidence is not None:
        head.append(f"at {args.confidence:g}")
    if args.before:
        head[1:1] = ["before", "before $/h", "before $/M tok"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for w in sorted((ROOT / "workloads").glob("*.yaml")):
        d = solve_json(w.relative_to(ROOT), args.as_of)
        if args.save:
            (args.save / f"{w.stem}.json").write_text(json.dumps(d, indent=2, sort_keys=True) + "\n")
        p50 = d.get("at_p50") or {}
        extra = p50.get("p99_extra_gpus_fraction")
        row = [
            w.stem,
            plan_label(d),
            money(d.get("cost_usd_per_hour")),
            "-" if d.get("cost_usd_per_million_tokens") is None else f"{d['cost_usd_per_million_tokens']:.3f}",
            evidence_label(d),
            band_label(d),
            f"{money(d.get('cost_usd_per_hour_p10'))}-{money(d.get('cost_usd_per_hour_p90'))}" if d.get("deployments") else "-",
            "-" if extra is None else f"+{extra * 100:.0f} % GPUs",
        ]
        if args.confidence is not None:
            q = solve_json(w.relative_to(ROOT), args.as_of, args.confidence)
            row.append(f"{plan_label(q)}: {confidence_cost(q.get('confidence_cost'))}" if q.get("deployments") else plan_label(q))
        if args.before:
            path = args.before / f"{w.stem}.json"
            b = json.loads(path.read_text()) if path.exists() else {}
            row[1:1] = [plan_label(b) if b else "-", money(b.get("cost_usd_per_hour")), "-" if b.get("cost_usd_per_million_tokens") is None else f"{b['cost_usd_per_million_tokens']:.3f}"]
        print("| " + " | ".join(row) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
