"""Property-based tests (hypothesis): generated workloads, constraints, traces, price files,
config.json files and every command's flags, bad and valid (tests/fuzz_cases.py), each run
through sizer's entry point. No exception escapes main; every refusal is one line with a
documented exit code; a command given --time-limit-s returns within it; a plan keeps its own
bounds and carries its demand; the same input gives the same bytes; and pairs of runs relate
as they must (more demand, a constraint more or a device less never lower the cost, a lower
price or a looser SLO never raise it, fp8 KV admits no fewer sequences than bf16, each launch
line solve prints pasted into explain gives the plan's pool, compare's row of a device is
solve's fleet there).

Derandomized, so CI draws the same cases every run; benchmarks/fuzz.py runs the same generators
over thousands of seeds."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz_cases import GENERATORS, generate, run_case

SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow], database=None)
INPUT_KINDS = sorted(k for k in GENERATORS if k != "relation")


def _run(seed: int, kind: str) -> None:
    case = generate(seed, kind)
    with tempfile.TemporaryDirectory(prefix="sizer-prop-") as folder:
        outcome, detail = run_case(case, Path(folder))
    assert outcome in ("ok", "refused"), f"{outcome}: {detail}\n{case.describe()}"


@settings(max_examples=45, **SETTINGS)
@given(seed=st.integers(min_value=0, max_value=2**32), kind=st.sampled_from(INPUT_KINDS))
def test_generated_inputs_are_answered_or_refused_in_one_line(seed, kind):
    _run(seed, kind)


@settings(max_examples=14, **SETTINGS)
@given(seed=st.integers(min_value=0, max_value=2**32))
def test_related_runs_keep_their_invariants(seed):
    _run(seed, "relation")
