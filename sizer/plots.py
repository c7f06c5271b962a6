"""Plots: cost against a swept parameter per device, the cost-latency Pareto front of the
candidates, and the per-GPU memory of the chosen plan. Written as PNG, SVG, or HTML (the SVG
inline in a page).

matplotlib is an optional extra (`pip install 'sizer[plot]'`), imported only when a plot is
asked for; without it a SizerError says how to install it. Units: USD, seconds, GiB.
"""

from __future__ import annotations

import html
import io
from pathlib import Path

from .errors import InputError, SizerError
from .units import GIB

PLOT_SUFFIXES = (".png", ".svg", ".html")
MISSING_MATPLOTLIB = "plotting needs matplotlib: pip install 'sizer[plot]'"


def check_plot_path(path: str | Path, option: str = "--plot") -> None:
    """Refuse a file the plots cannot be written as, before any work."""
    suffix = Path(path).suffix.lower()
    if suffix not in PLOT_SUFFIXES:
        raise InputError(f"{option}: expected a file ending {', '.join(PLOT_SUFFIXES)}, got {str(path)!r}")


def pyplot():
    """matplotlib.pyplot on the non-interactive Agg backend, or a SizerError saying how to get it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SizerError(MISSING_MATPLOTLIB) from None
    plt.rcParams["svg.hashsalt"] = "sizer"  # stable element ids: the same plot gives the same SVG
    return plt


def _save(fig, path: str | Path, title: str) -> None:
    plt = pyplot()
    path = Path(path)
    suffix = path.suffix.lower()
    try:
        if suffix == ".html":
            buf = io.StringIO()
            fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight")
            page = (
                "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>"
                + html.escape(title)
                + "</title></head>\n<body>\n"
                + buf.getvalue()
                + "\n</body></html>\n"
            )
            path.write_text(page, encoding="utf-8")
        elif suffix == ".svg":
            fig.savefig(path, format="svg", metadata={"Date": None}, bbox_inches="tight")
        else:
            fig.savefig(path, format="png", dpi=120, bbox_inches="tight")
    finally:
        plt.close(fig)


def plot_sweep(result, path: str | Path) -> None:
    """Cost ($/hour, mean over the day with a profile) of the best single-configuration fleet on
    each device, and of the plan, against the swept parameter; flips of the plan's hardware as
    dotted lines."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    xs = [p.value for p in result.points]
    devices = list(result.workload.search.devices)
    for device in devices:
        ys = []
        for p in result.points:
            costs = dict(p.device_costs_usd_per_hour)
            ys.append(costs.get(device))
        if any(y is not None for y in ys):
            ax.plot(xs, [float("nan") if y is None else y for y in ys], marker="o", markersize=3, linewidth=1, label=device)
    plan_y = [float("nan") if p.plan is None else p.plan.cost_usd_per_hour for p in result.points]
    ax.plot(xs, plan_y, color="black", linewidth=2.5, label="plan (cheapest fleet)")
    for f in result.flips:
        ax.axvline((f.before + f.after) / 2, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel(f"{result.parameter} ({result.unit})")
    ax.set_ylabel("USD per hour" + (" (mean over the day)" if result.workload.traffic.profile_rps else ""))
    ax.set_yscale("log")  # devices differ by orders of magnitude
    ax.set_title(f"{result.workload.name}: cost against {result.parameter}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    _save(fig, path, f"sizer sweep: {result.workload.name}")


def plot_pareto(points, path: str | Path, title: str) -> None:
    """$ per million output tokens against TPOT p99 for every feasible configuration (as a fleet
    of its own), coloured by device; the Pareto front joined by a line."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    devices = sorted({p.device for p in points})
    for device in devices:
        mine = [p for p in points if p.device == device]
        ax.scatter([p.tpot_p99_s * 1000 for p in mine], [p.cost_usd_per_million_tokens for p in mine], s=14, label=device, alpha=0.7)
    front = sorted((p for p in points if p.on_front), key=lambda p: p.tpot_p99_s)
    if front:
        ax.plot([p.tpot_p99_s * 1000 for p in front], [p.cost_usd_per_million_tokens for p in front], color="black", linewidth=1.5, label="Pareto front")
    ax.set_xlabel("TPOT p99 at the fleet's load (ms)")
    ax.set_ylabel("USD per million output tokens")
    ax.set_yscale("log")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    _save(fig, path, title)


def memory_parts(deployment) -> list[tuple[str, float]]:
    """Per-GPU memory of a deployment, GiB, in stack order: weights, runtime buffers, activation
    peak, non-torch overhead, the KV the p99 running batch uses at the plan's load, KV free, and
    what the engine leaves unused (usable - budget)."""
    m = deployment.candidate.memory
    pool = float(m.kv_pool_bytes_per_gpu)
    used_kv = pool * min(max(1 - deployment.kv_headroom_fraction, 0.0), 1.0)
    parts = [
        ("weights", float(m.weights_bytes_per_gpu)),
        ("runtime buffers", float(getattr(m, "runtime_buffer_bytes_per_gpu", 0.0))),
        ("activation peak", float(getattr(m, "activation_bytes_per_gpu", 0.0))),
        ("non-torch overhead", float(getattr(m, "runtime_overhead_bytes_per_gpu", 0.0))),
        ("KV in use (p99 batch)", used_kv),
        ("KV free", pool - used_kv),
        ("outside the budget", float(m.usable_memory_bytes) - float(m.budget_bytes)),
    ]
    return [(name, value / GIB) for name, value in parts]


def plot_memory(plan, path: str | Path) -> None:
    """One stacked bar per deployment of the plan: the memory of one of its GPUs."""
    plt = pyplot()
    rows = list(plan.deployments)
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.8 * len(rows)))
    labels = [f"{d.replicas} x {d.candidate.config.label()}" + ("" if d.size_range == "all" else f" [{d.size_range}]") for d in rows]
    names = [n for n, _ in memory_parts(rows[0])]
    lefts = [0.0] * len(rows)
    for k, name in enumerate(names):
        widths = [memory_parts(d)[k][1] for d in rows]
        ax.barh(labels, widths, left=lefts, label=name)
        lefts = [a + b for a, b in zip(lefts, widths)]
    ax.set_xlabel("GiB per GPU")
    ax.set_title(f"{plan.workload.name}: memory of one GPU of each deployment")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=4)
    ax.invert_yaxis()
    _save(fig, path, f"sizer plan: {plan.workload.name}")
