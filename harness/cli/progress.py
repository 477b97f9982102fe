"""A rich progress bar: done/total, ETA, errors and tokens so far."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from harness.run.log import ResultRecord


class RichProgress:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.errors = 0
        self.tokens = 0
        self._bar = Progress(
            TextColumn("[bold]verifying[/bold]"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[errors]} errors · {task.fields[tokens]} tokens"),
            console=self.console,
            disable=not self.console.is_terminal,
        )
        self._task = self._bar.add_task("run", total=0, errors=0, tokens=0)

    def start(self, total: int, done: int) -> None:
        self._bar.update(self._task, total=total, completed=done)
        self._bar.start()

    def advance(self, record: ResultRecord) -> None:
        self.errors += record.error is not None
        self.tokens += record.usage.total_tokens
        self._bar.update(self._task, advance=1, errors=self.errors, tokens=self.tokens)

    def stop(self) -> None:
        self._bar.stop()
