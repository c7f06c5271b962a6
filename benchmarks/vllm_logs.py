"""sizer's KV pool against vLLM's own startup logs, entry by entry, per release: the table of the
memory issue's closing note. The same predictions tests/test_vllm_logs.py asserts (its helpers are
reused, so the two cannot drift apart).

    python benchmarks/vllm_logs.py            # Markdown: one row per log, then a summary per set

Shared, held-out and audit 0.19 sets (the audit: 17 further runs of the shared sweep, 2026-12-06): KV tokens ("GPU KV cache size: N tokens"); other releases and the
MI355X (ROCm) set: the pool in GiB ("Available KV cache memory"). TensorRT-LLM set
(tests/data/vllm_logs/trtllm_startup_logs.yaml, audit TRTLLM_AUDIT.md): tokens of "[MemUsageChange] Allocated X GiB
for max tokens in paged KV cache (N)" (end to end where the log's GPU is in the catalog, else sizer's rule on
the log's own available memory), or the allocation line's GiB. SGLang audit set (2026-12-06): KV tokens per GPU
("KV Cache is allocated. #tokens", under each log's release, GPU, TP and mem_fraction_static).
The V0 set (vLLM 0.6.x on MI300X under ROCm and on H100, tests/data/vllm_logs/AMD_V0_AUDIT.md): KV blocks per
GPU ("# GPU blocks: N"), or the KV GiB where the log gives no blocks.
NVIDIA GPUs other than the H100 (L40S, B200: the 2026-12-06 NVIDIA audit, tests/data/vllm_logs/NVIDIA_AUDIT.md):
the pool in GiB, or tokens where the log gives only those.
ROCm V1 audit (tests/data/vllm_logs/ROCM_V1_AUDIT.md): vLLM 0.17.1 on 2 x MI300X in tokens; vLLM 0.24 / 0.26 on MI355X
(Kimi-K2.7-Code, not in the catalog) as the pool rebuilt from the logged weights and activation with sizer's non-torch
term and graph estimate. SGLang on AMD (the same audit): tokens ("KV Cache is allocated. #tokens").
vLLM 0.20+ audit (tests/data/vllm_logs/vllm_v020_plus_audit.yaml, V020_AUDIT.md): KV tokens per replica ("GPU KV cache
size: N tokens") of the 0.20+ logs found, under sizer's one-TP-group model.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sizer.catalog import load_catalog  # noqa: E402
from sizer.units import GIB  # noqa: E402
from tests.test_vllm_logs import (  # noqa: E402
    AUDIT, AUDIT_MEASURED, HELDOUT, MEASURED, NVIDIA, NVIDIA_MEASURED, OTHER, OTHER_MEASURED, ROCM, SGLANG_MEASURED, SHARED,
    V0AMD, V0AMD_MEASURED, V020, V020_MEASURED, _audit, _heldout, _nvidia, _other, _rocm, _sglang, _sglang_pool_entries, _shared, _v0amd, _v020,
)


def main() -> int:
    catalog = load_catalog()
    rows = []  # (set, release, id, unit, logged, predicted, error, reason)
    for e in SHARED:
        _, tokens = _shared(e, catalog)
        rows.append(("shared 0.19", e["vllm"].lstrip("v"), e["id"], "tokens", e["gpu_kv_cache_tokens"], tokens, "measured" if e["id"] in MEASURED else ""))
    for e in HELDOUT:
        m = _heldout(e, catalog)
        rows.append(("held out", e.get("vllm", "0.19.0"), e["id"], "tokens", e["tokens"], m.engine_kv_tokens, ""))
    for e in AUDIT:
        m = _audit(e, catalog)
        rows.append(("audit 0.19", "0.19.0", e["id"], "tokens", e["tokens"], m.engine_kv_tokens, "measured" if e["id"] in AUDIT_MEASURED else ""))
    for e in OTHER:
        m = _other(e, catalog)
        rows.append(("other releases", e["vllm"], e["id"], "GiB", e["kv_gib"], round(m.engine_available_kv_bytes / GIB, 2), "measured" if e["id"] in OTHER_MEASURED else ""))
    for e in ROCM:
        m = _rocm(e, catalog)
        rows.append(("MI355X (ROCm)", e["vllm"], e["id"], "GiB", e["kv_gib"], round(m.engine_available_kv_bytes / GIB, 2), "fit (ROCm V1 non-torch)"))
    from tests.test_trtllm_memory import trtllm_rows

    for i, rel, backend, unit, logged, pred, note in trtllm_rows(catalog):
        rows.append((f"TensorRT-LLM ({backend})", rel, i, unit, logged, pred, note))
    for e in _sglang_pool_entries():
        _, m = _sglang(e, catalog)
        rows.append(("SGLang audit", e["release"], e["id"], "tokens", e["tokens"], m.engine_kv_tokens, "measured" if e["id"] in SGLANG_MEASURED else ""))
    for e in V0AMD:
        m = _v0amd(e, catalog)
        note = "measured" if e["id"] in V0AMD_MEASURED else ""
        if "gpu_blocks" in e:
            rows.append(("V0 MI300X / H100", e["vllm"], e["id"], "blocks", e["gpu_blocks"], m.engine_gpu_blocks, note))
        elif "kv_gib" in e:
            rows.append(("V0 MI300X / H100", e["vllm"], e["id"], "GiB", e["kv_gib"], round(m.engine_available_kv_bytes / GIB, 2), note))
    for e in NVIDIA:
        m = _nvidia(e, catalog)
        if "kv_gib" in e:
            rows.append((f"NVIDIA {e['gpu']}", e["vllm"], e["id"], "GiB", e["kv_gib"], round(m.engine_available_kv_bytes / GIB, 2), "measured" if e["id"] in NVIDIA_MEASURED else ""))
        else:  # the log gives tokens only
            rows.append((f"NVIDIA {e['gpu']}", e["vllm"], e["id"], "tokens", e["tokens"], m.engine_kv_tokens, "measured" if e["id"] in NVIDIA_MEASURED else ""))
    # vLLM V1 on AMD outside the MI355X InferenceX set (tests/data/vllm_logs/ROCM_V1_AUDIT.md): MI300X in tokens;
    # the MI355X Kimi-K2.7-Code runs (no catalog config) as their pool rebuilt from the logged weights and activation
    # with sizer's non-torch term and graph estimate
    from sizer.engines import VllmPolicy, VllmRelease
    from tests.test_vllm_logs import ROCMV1, _kimi_k27_pool_gib, _rocmv1, kimi_k27_graph_estimate_gib

    for e in (x for x in ROCMV1 if x.get("engine") != "sglang"):
        if e["src"] == "R":
            m = _rocmv1(e, catalog)
            rows.append(("ROCm V1 audit", e["vllm"], e["id"], "tokens", e["tokens"], m.engine_kv_tokens, ""))
            continue
        gpu, release = catalog.gpu(e["gpu"]), VllmRelease.of(e["vllm"])
        nt = VllmPolicy().v1_non_torch(gpu, e["tp"], 1, release)[0] / GIB
        # sizer's graph estimate on the catalog's Kimi-K2.5 (Kimi-K2.7's shapes: 61 layers) at the run's max_num_seqs
        graph = kimi_k27_graph_estimate_gib(e, catalog) if release.graph_estimate_subtracted(gpu) else 0.0
        pool = _kimi_k27_pool_gib(e, nt, graph)
        rows.append(("ROCm V1 audit", e["vllm"], e["id"], "GiB", e["kv_gib"], round(pool, 2), "non-torch term only" + (", measured (0.26)" if e["vllm"] == "0.26.0" else "")))
    from tests.test_vllm_logs import ROCM_SGLANG_HELD, _rocm_sglang

    for e in (x for x in ROCMV1 if x.get("engine") == "sglang"):
        _, m = _rocm_sglang(e, catalog)
        rows.append(("SGLang on AMD", e["release"], e["id"], "tokens", e["tokens"], m.engine_kv_tokens, "measured" if e["id"] in ROCM_SGLANG_HELD else ""))
    for e in V020:
        m = _v020(e, catalog)
        rows.append(("vLLM 0.20+ audit", e["vllm"], e["id"], "tokens", e["tokens"], m.engine_kv_tokens, "measured" if e["id"] in V020_MEASURED else ""))
    # vLLM's own CUDA-graph estimate ("Estimated CUDA graph memory"), every log that prints it (GRAPHS_AUDIT.md)
    from tests.test_vllm_graphs import GRAPHS, MEASURED as GRAPHS_MEASURED, _estimate

    for e in GRAPHS:
        est, _ = _estimate(e, catalog)
        note = ("measured" if e["id"] in GRAPHS_MEASURED else "") + (" (in sample)" if e["sample"] == "fit" else "")
        rows.append(("vLLM graph estimate", e["vllm"], e["id"], "GiB", e["estimate_gib"], round(est, 2), note.strip()))
    print("| set | release | log | unit | logged | sizer | error | |")
    print("|---|---|---|---|---:|---:|---:|---|")
    for s, rel, i, unit, logged, pred, note in rows:
        fmt = "{:,}" if unit in ("tokens", "blocks") else "{:.2f}"
        print(f"| {s} | {rel} | {i} | {unit} | {fmt.format(logged)} | {fmt.format(pred)} | {pred / logged - 1:+.2%} | {note} |")
    print()
    print("| set | logs | within 2 % | median abs error | largest |")
    print("|---|---:|---:|---:|---:|")
    for s in dict.fromkeys(r[0] for r in rows if r[0] != "vLLM graph estimate"):
        errs = [abs(r[5] / r[4] - 1) for r in rows if r[0] == s]
        print(f"| {s} | {len(errs)} | {sum(x < 0.02 for x in errs)} | {statistics.median(errs):.2%} | {max(errs):.2%} |")
    # the graph estimate is one term of the budget (0.3-3 GiB): its error counts in GiB, as the pool's does
    # (tests/test_vllm_graphs.py holds 0.30 GiB), not as a share of the term
    errs = [abs(r[5] - r[4]) for r in rows if r[0] == "vLLM graph estimate"]
    print()
    print("| term | logs | within 0.30 GiB | median abs error | largest |")
    print("|---|---:|---:|---:|---:|")
    print(f"| vLLM graph estimate | {len(errs)} | {sum(x <= 0.30 for x in errs)} | {statistics.median(errs):.2f} GiB | {max(errs):.2f} GiB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
