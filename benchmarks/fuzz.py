"""Generated inputs against sizer at scale: tests/fuzz_cases.py's generators and invariants over N
cases, on every core, each case in a worker process with a timeout (a case past it, 45 s by default: sizer's
default --time-limit-s of 30 s and a margin, is a hang: its worker is killed and replaced).

    python benchmarks/fuzz.py --n 10000 --seed 1 [--time-budget-s 0] [--workers 2] [--case-timeout-s 30]

Prints the outcomes per input kind, one reproducer per distinct failure (its files and command
lines; `--show SEED` prints any case), and as its last line

    tracebacks=0 hangs=0 violations=0 nondeterministic=0

Case i of a run is generated from seed S * 1_000_003 + i, so a run is reproducible and two runs
with different seeds draw different cases. --time-budget-s (default 35 s; 0: none) stops
starting cases when it is spent, and stops the cases under way 4 s later (not counted as hangs);
the summary says how many of N ran. (A pre-stop hook runs `--n 150` under `timeout 45`.)
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fuzz_cases import command_timeout_s, generate, run_case  # noqa: E402

FAILURES = ("traceback", "hang", "violation", "nondeterministic")
GRACE_S = 4.0  # after the time budget, how long the cases under way may still finish


def case_seed(seed: int, i: int) -> int:
    return seed * 1_000_003 + i


def worker(conn) -> None:
    """Run the cases sent on `conn` one by one, in a fresh folder each; send back the outcome."""
    import sizer.cli  # noqa: F401 - import once, before the first case's clock starts

    os.environ.pop("SIZER_CATALOG_DIR", None)
    while True:
        seed = conn.recv()
        if seed is None:
            return
        start = time.monotonic()
        try:
            case = generate(seed)
            with tempfile.TemporaryDirectory(prefix="sizer-fuzz-") as folder:
                outcome, detail = run_case(case, Path(folder))
            kind = case.kind
        except BaseException as exc:  # noqa: BLE001 - a failure of the harness itself is a traceback too
            outcome, detail, kind = "traceback", f"harness: {type(exc).__name__}: {exc}", "?"
        conn.send((seed, kind, outcome, detail, time.monotonic() - start))


class Slot:
    """A worker process and the case it is running."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.start()

    def start(self) -> None:
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=worker, args=(child,), daemon=True)
        self.proc.start()
        self.seed = None
        self.since = 0.0

    def send(self, seed: int, timeout_s: float) -> None:
        self.seed, self.since = seed, time.monotonic()
        case = generate(seed)  # each command of the case has the timeout (a sweep: per point), a repeat too
        per = [command_timeout_s(a, timeout_s) for a in case.argv]
        self.timeout_s = sum(per) + (per[0] if case.repeat and per else 0.0)
        self.conn.send(seed)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.join()
        self.start()


def signature(outcome: str, detail: str) -> str:
    """What makes two failures the same: the message with its numbers and paths blanked."""
    text = re.sub(r"/tmp/[^ :'\"]+", "<path>", detail)
    text = re.sub(r"[-+]?\d+(\.\d+)?(e[-+]?\d+)?", "#", text)
    return f"{outcome}: {text[:160]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=150, help="cases to run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-budget-s", type=float, default=35.0, help=f"stop starting cases after this many seconds, and stop those under way {GRACE_S:g} s later (0: no budget)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--case-timeout-s", type=float, default=45.0, help="a command of a case running longer is a hang (the default --time-limit-s, 30 s, and a margin)")
    ap.add_argument("--progress", type=int, default=0, help="a line on stderr every this many cases (0: none)")
    ap.add_argument("--show", type=int, default=None, help="print the case of this case seed and exit")
    args = ap.parse_args(argv)
    if args.show is not None:
        print(generate(args.show).describe())
        return 0

    ctx = mp.get_context("fork" if sys.platform != "win32" else "spawn")
    slots = [Slot(ctx) for _ in range(max(args.workers, 1))]
    start = time.monotonic()
    pending = [case_seed(args.seed, i) for i in range(args.n)][::-1]
    counts: Counter = Counter()
    by_kind: dict[str, Counter] = defaultdict(Counter)
    reproducers: dict[str, tuple[int, str]] = {}
    walls: list[float] = []
    done = 0
    budget_hit = False
    unfinished: list[int] = []

    def record(seed: int, kind: str, outcome: str, detail: str, wall: float) -> None:
        nonlocal done
        done += 1
        if args.progress and done % args.progress == 0:
            failed = sum(counts[f] for f in FAILURES) + (outcome in FAILURES)
            print(f"{done} cases, {time.monotonic() - start:.0f} s, {failed} failed", file=sys.stderr, flush=True)
        counts[outcome] += 1
        by_kind[kind][outcome] += 1
        walls.append(wall)
        if outcome in FAILURES:
            reproducers.setdefault(signature(outcome, detail), (seed, detail))
            if args.progress:
                print(f"  {outcome} (case seed {seed}, {kind}): {detail[:300]}", file=sys.stderr, flush=True)

    while True:
        if args.time_budget_s and time.monotonic() - start > args.time_budget_s:
            budget_hit = True
            pending.clear()
        for s in slots:
            if s.seed is None and pending:
                s.send(pending.pop(), args.case_timeout_s)
        busy = [s for s in slots if s.seed is not None]
        if not busy:
            break
        if budget_hit and time.monotonic() - start > args.time_budget_s + GRACE_S:
            for s in busy:  # cut short by the budget, not hung: counted apart
                unfinished.append(s.seed)
                s.kill()
            break
        ready = mp.connection.wait([s.conn for s in busy], timeout=0.2)
        for s in busy:
            if s.conn in ready:
                try:
                    record(*s.conn.recv())
                except EOFError:  # the worker died (killed by the OS, say): a traceback-class failure
                    record(s.seed, "?", "traceback", "worker process died", time.monotonic() - s.since)
                    s.kill()
                    continue
                s.seed = None
            elif time.monotonic() - s.since > s.timeout_s:
                record(s.seed, generate(s.seed).kind, "hang", f"no answer within {s.timeout_s:g} s", time.monotonic() - s.since)
                s.kill()
    for s in slots:
        if s.proc.is_alive():
            s.conn.send(None)
            s.proc.join(timeout=5)
    wall = time.monotonic() - start

    print(f"sizer fuzz: seed {args.seed}, {done} of {args.n} cases in {wall:.1f} s on {len(slots)} workers"
          + (f" (time budget {args.time_budget_s:g} s reached" + (f"; {len(unfinished)} case(s) under way stopped, not counted" if unfinished else "") + ")" if budget_hit else ""))
    walls.sort()
    if walls:
        print(f"case time: median {walls[len(walls) // 2]:.2f} s, p99 {walls[min(len(walls) - 1, int(len(walls) * 0.99))]:.2f} s, max {walls[-1]:.2f} s")
    outcomes = ["ok", "refused", *FAILURES]
    print("kind".ljust(18) + "".join(o.rjust(17) for o in outcomes))
    for kind in sorted(by_kind):
        print(kind.ljust(18) + "".join(str(by_kind[kind][o]).rjust(17) for o in outcomes))
    print("all".ljust(18) + "".join(str(counts[o]).rjust(17) for o in outcomes))
    for sig, (seed, detail) in sorted(reproducers.items()):
        print(f"\n=== {sig}\n    {detail}\n    reproduce: python benchmarks/fuzz.py --show {seed}")
        print("    " + generate(seed).describe().replace("\n", "\n    "))
    print(f"tracebacks={counts['traceback']} hangs={counts['hang']} violations={counts['violation']} nondeterministic={counts['nondeterministic']}")
    return 1 if any(counts[f] for f in FAILURES) else 0


if __name__ == "__main__":
    sys.exit(main())
