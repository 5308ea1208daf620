"""Progress of a long command's stages on stderr (``costsim report``, ``costsim optimize``), so
no stage of a minute or more passes in silence; stdout keeps only the command's answer.

On a terminal each stage shows a live bar (what it does, done of total, elapsed, time left) that
gives way, when the stage ends, to one line saying what it did and how long it took. Elsewhere
(piped, a log, CI) there is no bar: one line when a stage starts, one every ``PIPED_EVERY_S`` while it
runs, and one when it ends. ``quiet``:
nothing at all.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from costsim.present.formats import count, number

PIPED_EVERY_S = 30.0  # seconds between the lines a piped stage prints while it runs

Step = Callable[..., None]
"""``step(done, total=None)``: ``done`` items of the stage finished, of ``total`` (None: unchanged)."""


def progress_columns(counted: bool = True) -> tuple:
    """The sweep's bar (``costsim sweep``): spinner, description, bar, done/total, elapsed, ETA;
    a stage with nothing to count: spinner, description, elapsed."""
    if not counted:
        return SpinnerColumn(), TextColumn("{task.description}", markup=False), TimeElapsedColumn()
    return (SpinnerColumn(), TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())


def ended(what: str, done: int | None, unit: str, seconds: float) -> str:
    """The line a stage leaves: "simulating 3 replications: 3 runs in 2.1 s" (``unit`` in the
    plural, "1 run" for one; no count when ``done`` is None: a stage with nothing to count)."""
    did = "" if done is None else f"{count(done)} {unit[:-1] if done == 1 and unit.endswith('s') else unit} in "
    return f"{what}: {did}{number(seconds, 1, 's')}"


class Stages:
    """The stages of one command, told on ``console`` (the CLI's stderr); see the module."""

    def __init__(self, console: Console, quiet: bool = False):
        self.console = console
        self.quiet = quiet

    def _say(self, text: str) -> None:
        self.console.print(Text(text), highlight=False, soft_wrap=True)

    @contextmanager
    def stage(self, what: str, total: int | None = None, unit: str = "simulations",
              counted: bool = True) -> Iterator[Step]:
        """A stage named ``what`` (its bar's text and its lines) of ``total`` items (None: not
        known yet, told by ``step``); yields ``step(done, total=None)``. When it ends normally,
        one line says how many ``unit`` it did (leave out with ``counted=False``) and how long it
        took; an error or Ctrl-C ends it without that line."""
        state: dict = {"done": 0, "total": total}
        if self.quiet:
            yield lambda done, total=None: None
            return
        start = time.monotonic()
        live = self.console.is_terminal
        bar = Progress(*progress_columns(counted), console=self.console, transient=True) if live else None
        task = bar.add_task(what, total=total) if bar is not None else None
        if bar is None:
            self._say(f"{what} …")
        else:
            bar.start()

        def step(done: int, total: int | None = None) -> None:
            state["done"] = done
            if total is not None:
                state["total"] = total
            if bar is not None and task is not None:  # a bar always has its task
                bar.update(task, completed=done, total=total)  # total None: rich keeps the one it has
            elif (now := time.monotonic()) - state.get("said", start) >= PIPED_EVERY_S:
                # Piped: a line now and then, so a log shows a long stage moving.
                state["said"] = now
                of = state.get("total")
                self._say(f"{what}: {count(done)}{'' if of is None else ' of ' + count(of)} {unit} so far, "
                          f"{number(now - start, 0, 's')}")

        try:
            yield step
        finally:
            if bar is not None:
                bar.stop()
        self._say(ended(what, state["done"] if counted else None, unit, time.monotonic() - start))


def counting(simulate: Callable, step: Step) -> Callable:
    """``simulate`` that tells ``step(n)`` after its ``n``-th call (the flip search's runs, whose
    number is not known beforehand)."""
    calls = [0]

    def counted(*args, **kwargs):
        out = simulate(*args, **kwargs)
        calls[0] += 1
        step(calls[0])
        return out

    return counted


__all__ = ["Stages", "Step", "counting", "ended", "progress_columns"]
