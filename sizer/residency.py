"""Admission: how many sequences a KV pool is allowed to hold, under the seeds' three policies,
with speculative decoding, prefix sharing and per-tenant quotas. Bytes and tokens.

Policies (seed 000, "Dividing the pool"; seed 001, "The three ways the budget is wasted"):

    declared     every sequence charged the declared maximum (max_model_len): never preempts,
                 wastes the difference whenever a sequence stops early
    percentile   every sequence charged prompt + output at the workload's percentile (default):
                 the conservative reading of the budget, with the tail above it as headroom
    growth       sequences grow block by block; the batch is the largest for which the running
                 batch's KV overflows the pool with probability at most `overflow_probability`
                 (default 1 %), preemption covering the rest

Residency over time is size-biased (seed 001: "counting block-occupancy by token-steps rather
than by request"): a running sequence is a random *token-step*, so its request is drawn with
probability proportional to its output length, and its age is uniform over that output. A
running sequence's context is prompt + age; the mean of that, not of requests, fills the pool.
The growth bound treats the running batch's KV as a sum of independent residencies and uses the
normal approximation of that sum: B mu + z sqrt(B) sigma <= pool.

Speculative decoding reserves k extra positions per sequence (seed 000, "Edge cases"). A shared
prefix of S tokens (a system prompt) is held once: its floor(S / block) full blocks are shared by
reference count, and the block holding the divergence is copied on write, so each sequence keeps
its own copy of that partial block (seed 001, "Paging the cache"). A per-tenant quota binds
before the pool does (seed 000): a tenant with share s of the traffic and quota q of the pool
admits at most q x pool / (s x per-sequence bytes) sequences in all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from .memory import MemoryBreakdown, StageKv, blocks_for, sequence_bytes_on_stage
from .workload import AdmissionPolicy, LengthDist, Tenant  # noqa: F401  (re-exported)

_GRID_POINTS = 32


@dataclass(frozen=True, slots=True, kw_only=True)
class Admission:
    """Sequences the pool admits under each policy, and the one admission uses."""

    policy: str
    context_tokens: int  # admitted context per sequence at the percentile, speculative positions included
    max_concurrency_percentile: int
    max_concurrency_declared: int
    max_concurrency_growth: int
    overflow_probability: float
    mean_running_context_tokens: float  # size-biased
    mean_running_kv_bytes_per_gpu: float  # per running sequence, in whole blocks
    shared_prefix_blocks: int
    shared_prefix_saved_bytes_per_gpu: float  # at the admitted concurrency, versus no sharing
    binding_tenant: str | None
    max_concurrency: int

    def for_policy(self, policy: str) -> int:
        return {
            "percentile": self.max_concurrency_percentile,
            "declared": self.max_concurrency_declared,
            "growth": self.max_concurrency_growth,
        }[policy]


def _private_bytes(kv: StageKv, tokens: int, block: int, window: int, shared_blocks: int) -> float:
    """Bytes a sequence holds that nobody else does: its own blocks, minus the full-attention
    blocks of the shared prefix (sliding layers keep only their window, so share nothing old)."""
    own = sequence_bytes_on_stage(kv, tokens, block, window)
    shared = min(shared_blocks, blocks_for(tokens, block)) * block * kv.full_bytes_per_token
    return own - shared


@lru_cache(maxsize=64)
def running_context_samples(prompt: LengthDist, output: LengthDist, points: int = _GRID_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Contexts of a running sequence (prompt + age) on a deterministic grid, with weights
    (cached: every candidate of a workload shares them; the arrays are read-only).

    The request is drawn size-biased by output length; the age is uniform over its output."""
    grid = (np.arange(points) + 0.5) / points * 100
    p = np.array([prompt.quantile(float(q)) for q in grid])
    o = np.array([output.quantile(float(q)) for q in grid])
    ages = (np.arange(points) + 0.5) / points  # fraction of the output produced so far
    ctx = p[:, None, None] + o[None, :, None] * ages[None, None, :]
    weights = np.broadcast_to(o[None, :, None], ctx.shape).astype(float)
    ctx, weights = ctx.ravel(), (weights / weights.sum()).ravel()
    ctx.flags.writeable = False
    weights.flags.writeable = False
    return ctx, weights


@lru_cache(maxsize=256)
def _block_moments(prompt: LengthDist, output: LengthDist, k: int, block: int, window: int, shared_blocks: int):
    """Over the running contexts (running_context_samples, plus k speculative positions): the
    mean context; the means of A, the full-attention blocks a sequence holds privately (its blocks
    less the shared prefix's), and B, its sliding-window blocks; and (Var A, Cov AB, Var B). Shared
    by every candidate with the same block size, window and prefix (cached)."""
    ctx, w = running_context_samples(prompt, output)
    ctx = np.ceil(ctx) + k
    blocks = np.ceil(ctx / block)
    a = blocks - np.minimum(shared_blocks, blocks)
    b = np.minimum(blocks, math.ceil(window / block) + 1) if window else blocks
    ea, eb = float((a * w).sum()), float((b * w).sum())
    da, db = a - ea, b - eb
    cov = (float((w * da * da).sum()), float((w * da * db).sum()), float((w * db * db).sum()))  # Var A, Cov AB, Var B
    return float((ctx * w).sum()), (ea, eb), cov


def admission(
    m: MemoryBreakdown,
    kv: StageKv,
    *,
    policy: AdmissionPolicy,
    percentile_context_tokens: int,
    prompt: LengthDist | None = None,
    output: LengthDist | None = None,
) -> Admission:
    """Sequences the pool of `m` admits under each policy; `policy.policy` picks the one used."""
    block, window = m.block_size_tokens, m.sliding_window
    k = policy.speculative_tokens
    shared_blocks = policy.shared_prefix_tokens // block if policy.shared_prefix_tokens else 0
    shared_bytes = shared_blocks * block * kv.full_bytes_per_token
    pool = m.kv_pool_bytes_per_gpu - shared_bytes

    def bound(tokens: int) -> int:
        per = _private_bytes(kv, tokens, block, window, shared_blocks)
        return int(pool // per) if pool > 0 and per > 0 else 0

    context = percentile_context_tokens + k
    n_percentile = bound(context)
    n_declared = bound(m.max_model_len + k) if m.max_model_len else n_percentile

    mean_ctx = float(context)
    mean_bytes = _private_bytes(kv, context, block, window, shared_blocks)
    n_growth = n_percentile
    if prompt is not None and output is not None:
        mean_ctx, (ea, eb), (vaa, vab, vbb) = _block_moments(prompt, output, k, block, window, shared_blocks)
        # a sequence's private bytes are linear in its block counts: block x (A full + B sliding)
        full, sliding = kv.full_bytes_per_token, kv.sliding_bytes_per_token
        mu = block * (ea * full + eb * sliding) + kv.state_bytes_per_sequence
        sigma = block * math.sqrt(max(full * full * vaa + 2 * full * sliding * vab + sliding * sliding * vbb, 0.0))
        z = NormalDist().inv_cdf(1 - policy.overflow_probability)
        mean_bytes = mu
        if pool > 0 and mu > 0:
            s = (-z * sigma + math.sqrt((z * sigma) ** 2 + 4 * mu * pool)) / (2 * mu)
            n_growth = max(int(math.floor(s * s + 1e-9)), 0)
            # never below the percentile bound's guarantee for a single long sequence to fit
            if sequence_bytes_on_stage(kv, context, block, window) > m.kv_pool_bytes_per_gpu:
                n_growth = 0
        else:
            n_growth = 0

    chosen = {"percentile": n_percentile, "declared": n_declared, "growth": n_growth}[policy.policy]
    binding = None
    for t in policy.tenants:
        per = mean_bytes if policy.policy == "growth" else _private_bytes(
            kv, (m.max_model_len + k) if policy.policy == "declared" else context, block, window, shared_blocks
        )
        if per <= 0 or pool <= 0:
            continue
        cap = int(t.quota_fraction * pool // (t.share * per)) if t.share > 0 else chosen
        if cap < chosen:
            chosen, binding = cap, t.name
    saved = max(chosen - 1, 0) * shared_bytes
    return Admission(
        policy=policy.policy,
        context_tokens=context,
        max_concurrency_percentile=n_percentile,
        max_concurrency_declared=n_declared,
        max_concurrency_growth=n_growth,
        overflow_probability=policy.overflow_probability,
        mean_running_context_tokens=mean_ctx,
        mean_running_kv_bytes_per_gpu=mean_bytes,
        shared_prefix_blocks=shared_blocks,
        shared_prefix_saved_bytes_per_gpu=saved,
        binding_tenant=binding,
        max_concurrency=chosen,
    )
