"""Primed spares (``WorkerPool(primes=...)``): the first spares started each run their warm-up with
an argument of their own, carry ``(PRIMED, argument)`` as their tag until their owner renames it
(``retag``), and a call for the new tag takes that worker. Later spares warm up without one.

The workers run the targets below, importing this module by name (the ``targets`` fixture puts
this folder on their path)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from costsim.runs.isolated import Call, run_calls
from costsim.runs.workerpool import PRIMED, WorkerPool

HERE = Path(__file__).resolve().parent
ME = Path(__file__).stem


def remember(argument: str | None, child) -> None:
    child.kept("argument", lambda: [argument])


def argument(_payload: None, child) -> str | None:
    return child.kept("argument", lambda: ["never warmed"])[0]


@pytest.fixture(autouse=True)
def targets(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])))


def test_the_first_spares_are_primed_in_turn_and_taken_by_their_new_tags():
    pool = WorkerPool(capacity=4, spares=3, warm=f"{ME}:remember", primes=["0", "1"])
    try:
        pool.top_up()
        assert sorted(str(w.tag) for w in pool.idle) == sorted([str((PRIMED, "0")), str((PRIMED, "1")), "None"])
        pool.retag((PRIMED, "1"), 111)
        pool.retag((PRIMED, "0"), 100)
        assert sorted(str(w.tag) for w in pool.idle) == ["100", "111", "None"]
        pool.acquire(2, capacity=4, trim=False)
        workers = [pool.take(memory_bytes=None, tag=t) for t in (111, 100)]
        replies = run_calls([(w, Call(target=f"{ME}:argument")) for w in workers], limit_s=60)
        assert [r.result() for r in replies] == ["1", "0"]  # each seed on the worker primed for it
        for w in workers:
            w.close()
        pool.release(2)
        (plain,) = pool.idle
        pool.acquire(1, capacity=4, trim=False)
        taken = pool.take(memory_bytes=None, tag=None)
        (reply,) = run_calls([(taken, Call(target=f"{ME}:argument"))], limit_s=60)
        assert taken is plain and reply.result() is None  # warmed without an argument
        taken.close()
        pool.release(1)
        pool.top_up()  # the primes are spent: new spares warm up plainly
        assert all(w.tag is None for w in pool.idle)
    finally:
        pool.close()
