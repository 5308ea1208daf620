"""The one bounded child-process runner (``costsim.runs.isolated``) and the pool that owns warm
workers (``costsim.runs.workerpool``): a worker past its time limit or its memory limit is stopped
and says so, a CostsimError crosses back as the error it was, a cancel kills at once (the worker's
own processes too), progress restarts the clock, and a pool never runs more than its capacity.

The workers run the targets below, importing this module by name: the ``targets`` fixture puts
this folder on the workers' path (the tests' setting, not costsim's)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from costsim.errors import ArgumentError, CostsimError, Problem
from costsim.runs.isolated import (
    CHILD_MODULE,
    PARENT_ENV,
    Call,
    ReplyTooLarge,
    Worker,
    WorkerCancelled,
    WorkerFailed,
    WorkerOutOfMemory,
    WorkerTimedOut,
    run_calls,
)
from costsim.runs.workerpool import WorkerPool
from costsim.scenario import ScenarioError

pytestmark = pytest.mark.slow  # every test here starts worker processes

HERE = Path(__file__).resolve().parent
ME = Path(__file__).stem
MiB = 2**20


# ------------------------------------------------------------------ targets run in the workers


def sleep(seconds: float, child) -> str:
    time.sleep(seconds)
    return "slept"


def ticking(payload: tuple[int, float], child) -> int:
    """``count`` progress messages, ``every`` seconds apart."""
    count, every = payload
    for k in range(count):
        time.sleep(every)
        child.progress(k)
    return count


def allocate(nbytes: int, child) -> int:
    return len(bytearray(nbytes))


def killed(_payload: None, child) -> None:
    """What the kernel's out-of-memory killer does to a process: SIGKILL, no reply."""
    os.kill(os.getpid(), signal.SIGKILL)


def refuse(error: CostsimError, child) -> None:
    raise error


def crash(message: str, child) -> None:
    raise ValueError(message)


def sized(nbytes: int, child) -> bytes:
    return b"x" * nbytes


def count_calls(_payload: None, child) -> int:
    seen = child.kept("calls", list)
    seen.append(1)
    return len(seen)


def grandchild(_payload: None, child) -> int:
    """Start a process of the worker's own (a pool's worker would be one) and give its pid."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]).pid


def warm_mark(_payload: None, child) -> None:
    child.kept("warmed", list).append(1)


def warmed(_payload: None, child) -> bool:
    return bool(child.kept("warmed", list))


def call(name: str, payload=None, **settings) -> Call:
    return Call(target=f"{ME}:{name}", payload=payload, **settings)


@pytest.fixture(autouse=True)
def targets(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])))


@pytest.fixture
def worker():
    """A worker that has served one call: started, this module imported (the time limits below
    are about the work, not about starting Python)."""
    w = Worker()
    (reply,) = run_calls([(w, call("count_calls"))], limit_s=60)
    assert reply.result() == 1
    yield w
    w.close()


def gone(pid: int) -> bool:
    """The process has ended (reaped, or a zombie waiting for whoever inherited it)."""
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in state


# ------------------------------------------------------------------ limits


def test_a_worker_past_its_time_limit_is_killed_and_says_so(worker):
    start = time.monotonic()
    (reply,) = run_calls([(worker, call("sleep", 30.0))], limit_s=1.0)
    assert time.monotonic() - start < 5
    assert isinstance(reply.error, WorkerTimedOut) and "1 s" in str(reply.error)
    assert worker.returncode is not None and worker.returncode < 0  # killed by a signal, and reaped
    with pytest.raises(WorkerTimedOut):
        reply.result()
    assert not worker.reusable


def test_progress_restarts_the_clock(worker):
    seen = []
    (reply,) = run_calls([(worker, call("ticking", (6, 0.3)))], limit_s=1.0,
                         on_progress=lambda i, message: seen.append((i, message)))
    assert reply.result() == 6  # 1.8 s in all, never 1 s without a message
    assert seen == [(0, k) for k in range(6)]


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="RLIMIT_AS is enforced on Linux")
def test_a_worker_past_its_memory_limit_is_stopped_and_says_so(worker):
    (reply,) = run_calls([(worker, call("allocate", 16 * MiB, memory_bytes=512 * MiB))], limit_s=60)
    assert reply.result() == 16 * MiB  # within its limit
    assert worker.memory_bytes == 512 * MiB
    (reply,) = run_calls([(worker, call("allocate", 1024 * MiB, memory_bytes=512 * MiB))], limit_s=60)
    assert isinstance(reply.error, WorkerOutOfMemory) and "memory" in str(reply.error)
    with pytest.raises(WorkerOutOfMemory):
        reply.result()
    assert not worker.reusable  # a worker that ran out is not trusted with more work
    worker.close()
    assert worker.returncode is not None  # ended by its owner


def test_a_worker_killed_without_a_reply_says_it_ran_out_of_memory(worker):
    (reply,) = run_calls([(worker, call("killed"))], limit_s=30)
    assert isinstance(reply.error, WorkerOutOfMemory) and "signal 9" in str(reply.error)
    assert worker.returncode == -signal.SIGKILL and not worker.reusable


def test_a_reply_larger_than_allowed_is_refused_unread(worker):
    (reply,) = run_calls([(worker, call("sized", 100_000, max_reply_bytes=10_000))], limit_s=30)
    assert isinstance(reply.error, ReplyTooLarge) and reply.error.size_bytes > 100_000
    assert worker.returncode is not None  # it cannot serve again: ended


# ------------------------------------------------------------------ errors cross as they were


def test_a_scenario_error_arrives_as_a_scenario_error_with_the_same_problems(worker):
    sent = ScenarioError("jobs.csv", [Problem(("workload", "trace"), "no such column: gpus", 3, 7),
                                      Problem(("options", 0, "gpus"), "must be at least 1")])
    (reply,) = run_calls([(worker, call("refuse", sent))], limit_s=30)
    with pytest.raises(ScenarioError) as caught:
        reply.result()
    assert type(caught.value) is ScenarioError
    assert caught.value.source == "jobs.csv" and caught.value.problems == sent.problems
    assert str(caught.value) == str(sent)
    assert worker.reusable  # a refused input ran to its end: the worker serves again
    (reply,) = run_calls([(worker, call("refuse", ArgumentError("tornado", "inputs", "unknown input 'x'")))],
                         limit_s=30)
    assert type(reply.error) is ArgumentError and str(reply.error) == "tornado(): inputs: unknown input 'x'"


def test_a_bug_is_a_failure_with_its_traceback(worker):
    (reply,) = run_calls([(worker, call("crash", "boom"))], limit_s=30)
    assert isinstance(reply.error, WorkerFailed) and reply.error.message == "ValueError"
    assert "ValueError: boom" in reply.error.detail and "boom" not in str(reply.error)  # its words: no user text


def test_a_worker_serves_calls_in_turn_and_keeps_what_they_keep(worker):
    for expected in (2, 3, 4):  # the fixture's call was the first
        (reply,) = run_calls([(worker, call("count_calls"))], limit_s=30)
        assert reply.result() == expected
        assert worker.reply is None and worker.reusable  # the result handed over, none kept while it waits
    assert worker.runs == 4


def test_calls_run_side_by_side_in_order():
    workers = [Worker(), Worker()]
    try:
        run_calls([(w, call("count_calls")) for w in workers], limit_s=60)  # both started
        start = time.monotonic()
        replies = run_calls([(w, call("sleep", 1.0)) for w in workers], limit_s=30)
        assert [r.result() for r in replies] == ["slept", "slept"]
        assert time.monotonic() - start < 1.9  # at once, not one after the other
    finally:
        for w in workers:
            w.close()


# ------------------------------------------------------------------ cancelling


def test_cancel_stops_a_running_call_at_once(worker):
    timer = threading.Timer(0.5, worker.cancel)
    timer.start()
    start = time.monotonic()
    (reply,) = run_calls([(worker, call("sleep", 30.0))], limit_s=60)
    timer.join()
    assert time.monotonic() - start < 5
    assert isinstance(reply.error, WorkerCancelled)
    assert worker.returncode is not None and worker.returncode < 0


def test_leaving_early_kills_the_running_worker(worker):
    class Rerun(Exception):
        """What Streamlit raises from a callback to stop a script."""

    def interrupt(seconds: float) -> None:
        if seconds > 0.5:
            raise Rerun

    with pytest.raises(Rerun):
        run_calls([(worker, call("sleep", 30.0))], limit_s=60, on_wait=interrupt)
    assert worker.returncode is not None and worker.returncode < 0
    assert isinstance(worker.reply.error, WorkerCancelled)


def test_a_worker_leading_its_group_takes_its_processes_with_it():
    worker = Worker(own_group=True)
    (reply,) = run_calls([(worker, call("grandchild"))], limit_s=30)
    pid = reply.result()
    assert not gone(pid)
    worker.cancel()
    deadline = time.monotonic() + 5
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(pid)


def test_workers_run_the_installed_package_with_no_path_of_ours(monkeypatch):
    started = []
    real = subprocess.Popen

    def recording(*args, **kwargs):
        started.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", recording)
    Worker().close()
    ((args, kwargs),) = started
    assert args[0] == [sys.executable, "-m", CHILD_MODULE] == [sys.executable, "-m", "costsim.runs.isolated_child"]
    # The server's environment as it is (no PYTHONPATH built for it), and only its pid added.
    assert kwargs["env"] == {**os.environ, PARENT_ENV: str(os.getpid())}


# ------------------------------------------------------------------ the pool


def test_the_pool_keeps_warm_workers_within_its_capacity():
    pool = WorkerPool(capacity=2, spares=2, warm=f"{ME}:warm_mark", max_runs=2)
    try:
        pool.top_up()
        assert len(pool.idle) == 2 and pool.busy == 0
        pool.acquire(1, capacity=2, trim=False)
        worker = pool.take(memory_bytes=None, tag="a")
        assert len(pool.idle) == 1
        (reply,) = run_calls([(worker, call("warmed"))], limit_s=30)
        assert reply.result() is True  # it ran its warm-up before the call
        assert pool.keep(worker, tag="a") and pool.busy == 0 and worker in pool.idle
        pool.acquire(1, capacity=2, trim=False)
        assert pool.take(memory_bytes=None, tag="a") is worker  # the worker that holds "a" first
        run_calls([(worker, call("warmed"))], limit_s=30)
        assert not pool.keep(worker, tag="a")  # worn: two runs
        worker.close()
        pool.release(1)
        pool.acquire(2, capacity=2)  # work first: the idle spare is ended to make room
        assert pool.idle == () and pool.busy == 2
        waited = []
        blocker = threading.Timer(0.6, pool.release, args=(2,))
        blocker.start()
        pool.acquire(1, capacity=2, on_wait=waited.append, poll_s=0.1)  # waits until the work gives back
        blocker.join()
        assert waited and pool.busy == 1
        with pytest.raises(ValueError):
            pool.acquire(3, capacity=2)
    finally:
        pool.close()


def long_warm_up(seconds: str | None, child) -> None:
    """A warm-up (given its argument as text) that takes ``seconds``."""
    time.sleep(float(seconds or 60))


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_a_worker_ends_with_its_parent_even_in_the_middle_of_a_warm_up(how):
    """Its parent gone without clean-up (killed, or a SIGTERM whose default ends a process at
    once), a worker in a minute-long warm-up ends within a second or two, not when the warm-up
    would have ended and it found its stdin closed."""
    parent = subprocess.Popen(
        [sys.executable, "-c", "import time; from costsim.runs.isolated import Worker\n"
         f"w = Worker(warm='{ME}:long_warm_up', warm_arg='60'); print(w.pid, flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        pid = int(parent.stdout.readline())
        time.sleep(1.0)
        assert not gone(pid)
    finally:
        parent.send_signal(how)
        parent.wait(10)
    deadline = time.monotonic() + 10
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(pid) and time.monotonic() < deadline - 7  # within about 3 s, not a minute
