"""Progress of a batch on stderr as it happens: checks and submissions done, time spent, an estimate of what is left."""

import sys
import threading
import time

EVERY = 5.0  # seconds between lines when stderr is not a terminal


class Meter:
    """Counts judged checks; prints a line now and then (a terminal gets one line rewritten in place)."""

    def __init__(self, checks: int, submissions: int, show=None, expected: float | None = None):
        self.checks, self.submissions, self.done, self.expected = checks, submissions, 0, expected
        self.show = show if show is not None else (lambda line: print(line, file=sys.stderr, flush=True))
        self.tty = show is None and sys.stderr.isatty()
        self.start = self.last = time.monotonic()
        self.lock = threading.Lock()

    def line(self) -> str:
        """'grade: 12/120 checks of 60 submissions, 41 s elapsed, about 5 min left'."""
        elapsed = time.monotonic() - self.start
        left = estimate(elapsed, self.done, self.checks, self.expected)
        rest = "estimating" if left is None else f"about {_duration(left)} left"
        return f"grade: {self.done}/{self.checks} exercise checks of {self.submissions} submissions, {_duration(elapsed)} elapsed, {rest}"

    def tick(self) -> None:
        """One more check judged."""
        with self.lock:
            self.done += 1
            now = time.monotonic()
            if self.tty:
                sys.stderr.write("\r" + self.line())
                sys.stderr.flush()
            elif now - self.last >= EVERY or self.done == self.checks:
                self.last = now
                self.show(self.line())

    def finish(self) -> None:
        """End the terminal's progress line."""
        if self.tty and self.checks:
            sys.stderr.write("\n")


def estimate(elapsed: float, done: int, checks: int, expected: float | None) -> float | None:
    """Seconds left: the self-test's forecast (``expected`` seconds in all) at first, the rate seen so far as checks finish.

    The first checks of a run wait for the course's setup, so the rate alone overestimates at the start;
    the forecast, measured on the solutions just before, is weighed by the share of checks still to do.
    """
    if checks <= 0:
        return 0.0
    seen = elapsed / done * (checks - done) if done else None
    if expected is None:
        return seen
    forecast = max(expected - elapsed, 0.0)
    share = done / checks
    return forecast if seen is None else (1 - share) * forecast + share * seen


def _duration(seconds: float) -> str:
    """'41 s', '5 min', '1 h 3 min'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{int(seconds // 3600)} h {seconds % 3600 / 60:.0f} min"
