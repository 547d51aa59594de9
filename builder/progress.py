"""Progress of long commands on stderr: the stage, the item (edition and language), the time spent and what is left.

On a terminal a tqdm bar; otherwise (CI logs, pipes) one plain line per step, at most one every ``every`` seconds.
The estimate of what is left comes from the items done so far, or from ``seconds_each`` before the first one ends.
"""

import sys
import threading
import time


def duration(seconds: float) -> str:
    """``seconds`` in words a person reads at a glance: 42 s, 3 min 5 s, 1 h 12 min."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


class Progress:
    """Counts the items of one stage; ``step(label)`` before each, ``close()`` (or ``with``) at the end."""

    def __init__(self, stage: str, total: int, *, unit: str = "notebook", seconds_each: float | None = None,
                 every: float = 0.0, stream=None):
        self.stage, self.total, self.unit, self.seconds_each, self.every = stage, total, unit, seconds_each, every
        self.stream = stream or sys.stderr
        self.start = time.perf_counter()
        self.done, self.last_print, self.lock = 0, float("-inf"), threading.Lock()
        self.bar = self._bar() if total > 1 else None

    def _bar(self):
        """A tqdm bar when stderr is a terminal; None otherwise."""
        if not getattr(self.stream, "isatty", lambda: False)():
            return None
        from tqdm import tqdm

        return tqdm(total=self.total, desc=self.stage, unit=self.unit, file=self.stream, dynamic_ncols=True)

    def left(self) -> float | None:
        """Seconds still expected: the mean so far times the items left, or ``seconds_each`` before any is done."""
        each = (time.perf_counter() - self.start) / self.done if self.done else self.seconds_each
        return None if each is None else each * (self.total - self.done)

    def step(self, label: str) -> None:
        """Say that item ``label`` starts now (counting the one before it as done)."""
        if self.bar is not None:
            self.bar.update(self.done - self.bar.n)
            self.bar.set_postfix_str(label)
        elif time.perf_counter() - self.last_print >= self.every or self.done == 0:
            self.last_print = time.perf_counter()
            left = self.left()
            estimate = f", about {duration(left)} left" if left is not None else ""
            print(f"{self.stage} {self.done + 1}/{self.total} {label}: {duration(time.perf_counter() - self.start)} "
                  f"elapsed{estimate}", file=self.stream, flush=True)
        self.done += 1

    def finished(self, label: str) -> None:
        """Say that item ``label`` is done (for items that run side by side and end in any order; thread-safe)."""
        with self.lock:
            self._finished(label)

    def _finished(self, label: str) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(self.done - self.bar.n)
            self.bar.set_postfix_str(label)
        elif time.perf_counter() - self.last_print >= self.every or self.done == self.total:
            self.last_print = time.perf_counter()
            left = self.left()
            estimate = f", about {duration(left)} left" if left is not None and self.done < self.total else ""
            print(f"{self.stage} {self.done}/{self.total} done (last: {label}): {duration(time.perf_counter() - self.start)} "
                  f"elapsed{estimate}", file=self.stream, flush=True)

    def close(self) -> None:
        """The stage is over: its total time."""
        if self.bar is not None:
            self.bar.update(self.total - self.bar.n)
            self.bar.close()
        print(f"{self.stage}: {self.done} {self.unit}(s) in {duration(time.perf_counter() - self.start)}", file=self.stream, flush=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
