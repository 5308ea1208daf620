"""The task queue (``costsim.runs.taskqueue``): wanted work before guesses, a dropped guess never
started in this process and its lane freed on a pool, and a pool closed without waiting for a
guess nobody wants."""

from __future__ import annotations

import time

import pytest

from costsim.runs.executors import open_executor
from costsim.runs.taskqueue import Failed, TaskQueue
from costsim.scenario import ScenarioError


def test_in_process_the_most_urgent_runs_first_and_a_dropped_task_never_runs():
    ran: list[str] = []

    def fn(name: str) -> str:
        ran.append(name)
        return name.upper()

    with open_executor("local", 1) as lanes:
        queue = TaskQueue(lanes, fn)
        queue.put("guess", "guess", priority=1)
        queue.put("a", "a")
        queue.put("b", "b")
        assert queue.next() == ("a", "A")
        queue.put("c", "c", priority=0)
        queue.urge("guess", 0)  # now wanted: in the order it was put, before b and c
        assert queue.next() == ("guess", "GUESS") and queue.next() == ("b", "B")
        queue.put("other", "other", priority=1)
        queue.drop("other")
        assert queue.next() == ("c", "C") and len(queue) == 0
    assert ran == ["a", "guess", "b", "c"] and queue.started == 4
    with pytest.raises(LookupError):
        queue.next()


def test_a_tasks_error_comes_back_with_its_key_and_a_key_is_queued_once():
    def fail(x):
        raise ScenarioError("s", [])

    with open_executor("local", 1) as lanes:
        queue = TaskQueue(lanes, fail)
        queue.put(1, 1)
        with pytest.raises(ValueError, match="queued already"):
            queue.put(1, 1)
        key, outcome = queue.next()
        assert key == 1 and isinstance(outcome, Failed) and isinstance(outcome.error, ScenarioError)


def nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@pytest.mark.slow
def test_on_a_pool_guesses_take_idle_lanes_only_and_a_dropped_running_guess_is_not_waited_for():
    t0 = time.perf_counter()
    with open_executor("processes", 2) as lanes:
        queue = TaskQueue(lanes, nap)
        queue.put("wanted", 0.5)
        queue.put("guess", 600.0, priority=1)  # the second lane is idle: the guess takes it
        queue.put("later", 0.1, priority=2)
        assert queue.next() == ("wanted", 0.5)
        assert queue.started == 2
        queue.drop("guess")  # running: dropped, its lane held until the pool closes
        assert queue.next() == ("later", 0.1) and len(queue) == 0
    # the pool stopped the guess rather than wait ten minutes (a loaded machine may take a minute
    # or two to start and stop a pool)
    assert time.perf_counter() - t0 < 180
