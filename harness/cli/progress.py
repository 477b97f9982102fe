"""Run progress: a rich bar on a terminal; elsewhere (CI logs) one line per tenth done, with rate and ETA."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from harness.run.log import ResultRecord

STEPS = 10
"""A non-terminal gets a line each time another 1/STEPS of the run is done."""


class RichProgress:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.errors = 0
        self.tokens = 0
        self._lines = not self.console.is_terminal
        self._total = self._done = self._start_done = self._step = 0
        self._started = time.monotonic()
        self._bar = Progress(
            TextColumn("[bold]verifying[/bold]"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[errors]} errors · {task.fields[tokens]} tokens"),
            console=self.console,
            disable=self._lines,
        )
        self._task = self._bar.add_task("run", total=0, errors=0, tokens=0)

    def start(self, total: int, done: int) -> None:
        self._total, self._done, self._start_done = total, done, done
        self._step = step_of(done, total)
        self._started = time.monotonic()
        self._bar.update(self._task, total=total, completed=done)
        self._bar.start()
        if self._lines and total:
            self.console.print(f"verifying {total - done} units ({done} of {total} already done)", highlight=False)

    def advance(self, record: ResultRecord) -> None:
        self.errors += record.error is not None
        self.tokens += record.usage.total_tokens
        self._done += 1
        self._bar.update(self._task, advance=1, errors=self.errors, tokens=self.tokens)
        step = step_of(self._done, self._total)
        if self._lines and step > self._step:
            self._step = step
            line = progress_line(
                self._done, self._total, self._done - self._start_done, time.monotonic() - self._started, self.errors
            )
            self.console.print(line, highlight=False, markup=False)

    def stop(self) -> None:
        self._bar.stop()


def step_of(done: int, total: int) -> int:
    """How many whole tenths of `total` are done."""
    return done * STEPS // total if total else 0


def progress_line(done: int, total: int, new: int, elapsed: float, errors: int) -> str:
    """`verifying 97/969 (10%) · 12.1 units/s · ETA 1m12s · 0 errors`: the rate of this call's units."""
    rate = new / elapsed if elapsed > 0 else 0.0
    eta = f"{_duration((total - done) / rate)}" if rate > 0 else "unknown"
    return f"verifying {done}/{total} ({done * 100 // total}%) · {rate:.1f} units/s · ETA {eta} · {errors} errors"


def _duration(seconds: float) -> str:
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"
