"""`sizer solve` stops the rate search early for candidates that cannot be their device's cheapest
plan (candidates.evaluate_candidates(prune=True)); the plan it prints must be the plan of the full
search, figure for figure, on every shipped workload."""

from __future__ import annotations

import json

import pytest

from sizer.candidates import evaluate_candidates, prunable
from sizer.optimize import plan
from sizer.report import plan_to_dict
from sizer.workload import load_workload

from .conftest import WORKLOADS


@pytest.mark.parametrize("path", WORKLOADS, ids=[p.stem for p in WORKLOADS])
def test_pruned_search_gives_the_full_search_plan(path, catalog):
    w = load_workload(path, catalog)
    full = evaluate_candidates(w, catalog)
    pruned = evaluate_candidates(w, catalog, prune=True)
    assert [e.config for e in pruned] == [e.config for e in full]
    assert [e.stage for e in pruned] == [e.stage for e in full]  # feasibility is decided before any pruning
    stopped = [e for e in pruned if not e.rate_exact]
    if prunable(w):
        assert stopped, "the search should stop early somewhere on a shipped workload"
    else:
        assert not stopped
    exact = {e.config: e.max_rate_rps for e in full}
    for e in stopped:
        assert 0 < e.max_rate_rps <= exact[e.config] * (1 + 1e-12)  # a rate it serves, never more than the largest
    a = json.dumps(plan_to_dict(plan(w, catalog, full)), sort_keys=True)
    b = json.dumps(plan_to_dict(plan(w, catalog, pruned)), sort_keys=True)
    assert a == b
