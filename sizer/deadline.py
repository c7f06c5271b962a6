"""The time a whole command may take (`--time-limit-s`): one deadline, set when the command
starts and passed down to every stage that can take long (the rate search of the candidates,
each solve of the integer program, the re-solves that tell which constraints bind or conflict),
so that the limit bounds the command, not each solver call. Seconds, on the monotonic clock.
"""

from __future__ import annotations

import time

from .errors import SolverError

MIN_SOLVER_S = 0.05  # the least a solver is started with: below it, the deadline has passed


class Deadline:
    """A point in time (time.monotonic) a command must be done by; None: no limit."""

    def __init__(self, seconds: float | None):
        self.seconds = seconds
        self._end = None if seconds is None else time.monotonic() + seconds

    def remaining_s(self) -> float | None:
        """Seconds left (never below 0), or None without a limit."""
        return None if self._end is None else max(self._end - time.monotonic(), 0.0)

    def expired(self) -> bool:
        left = self.remaining_s()
        return left is not None and left < MIN_SOLVER_S

    def solver_limit_s(self, what: str) -> float | None:
        """The time limit to give one solver call: what is left, or a SolverError (exit 10) when
        too little is left to start one."""
        if self.expired():
            raise self.error(what)
        return self.remaining_s()

    def share(self, fraction: float) -> "Deadline":
        """A deadline `fraction` of the time left from now (no limit stays no limit): the main
        program's solve leaves the rest to what follows it (the evidence, break-even, re-solves)."""
        left = self.remaining_s()
        part = Deadline(None if left is None else left * fraction)
        part.seconds = self.seconds  # messages name the limit the user gave, not the share's
        return part

    def check(self, what: str) -> None:
        """SolverError (exit 10) when the deadline has passed."""
        if self._end is not None and time.monotonic() >= self._end:
            raise self.error(what)

    def error(self, what: str) -> SolverError:
        return SolverError(f"--time-limit-s {self.seconds:g}: the time limit was reached before {what} finished")


def as_deadline(time_limit_s: float | None, deadline: Deadline | None) -> Deadline:
    """The deadline given, or a new one of `time_limit_s` from now."""
    return deadline if deadline is not None else Deadline(time_limit_s)
