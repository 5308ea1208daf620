"""The dashboard's memory, bounded by its documented limits: a Parquet "dictionary bomb" (a few
kilobytes of one long string repeated millions of times) is refused before it is decoded, in a
child process and never in the server; the result cache keeps at most ``COSTSIM_CACHE_MB`` of
pickles; every session's worker processes together stay within ``COSTSIM_WORKERS``.

Peak memory is the kernel's count: ``VmHWM`` in ``/proc/<pid>/status`` (the resident high-water
mark of the process since it started its program; ``ru_maxrss`` would carry the parent's over).
"""

from __future__ import annotations

import io
import pickle
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import costsim
from costsim.dashboard import SCENARIO_DIR, Limits, Upload, bounded
from costsim.dashboard import pool as pool_of_workers
from costsim.dashboard.bounded import ResultCache
from costsim.dashboard.sweep_upload import read_sweep_uploads, read_uploads_here, upload_call
from costsim.runs.isolated import Worker, run_calls
from costsim.scenario import ScenarioError

MiB = 2**20
linux = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")


def bomb(rows: int, length: int) -> bytes:
    """A Parquet file of one text column: one string of ``length`` characters, ``rows`` times,
    dictionary-encoded (as pyarrow writes text by default) and compressed, with no Arrow schema
    stored, so a reader decodes it to plain strings (``rows × length`` bytes)."""
    column = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, dtype="int32")), pa.array(["x" * length]))
    buf = io.BytesIO()
    pq.write_table(pa.table({"option": column}), buf, compression="zstd", store_schema=False)
    data = buf.getvalue()
    assert pq.ParquetFile(io.BytesIO(data)).schema_arrow.field("option").type == pa.string()
    return data


def high_water(status: str) -> int:
    """VmHWM of a /proc/<pid>/status text, in bytes."""
    (line,) = [line for line in status.splitlines() if line.startswith("VmHWM:")]
    return int(line.split()[1]) * 1024


# ------------------------------------------------------------------ the Parquet guard


def test_the_dictionary_bomb_is_refused_from_its_footer(monkeypatch):
    data = bomb(2_000_000, 50_000)  # decodes to 100 GB
    assert len(data) < 6_000
    reads = []
    real = pq.ParquetFile.read
    monkeypatch.setattr(pq.ParquetFile, "read", lambda self, *a, **k: reads.append(1) or real(self, *a, **k))
    with pytest.raises(ScenarioError, match=r"runs\.parquet: holds 2,000,000 rows × 1 columns .*1,000,000 rows"):
        read_uploads_here([Upload("runs.parquet", data)])
    assert reads == []  # refused from the metadata: not one page read


def test_a_bomb_within_the_row_limit_is_refused_before_it_is_decoded():
    data = bomb(200_000, 2_000)
    decoded = 200_000 * 2_000 + 4 * 200_000  # the characters and a 4-byte offset per value, by hand
    assert decoded > Limits().trace_upload_mb * 4 * MiB  # over the unpacked limit (200 MiB)
    with pytest.raises(ScenarioError) as err:
        read_uploads_here([Upload("runs.parquet", data)])
    assert f"runs.parquet: decodes to {decoded / MiB:,.1f} MiB; the dashboard reads at most 200.0 MiB" in str(err.value)


def test_a_file_that_fits_is_read_as_before():
    frame = pd.DataFrame({"option": ["own", "cloud"] * 3, "variant": ["v0"] * 6, "x": np.arange(6.0)})
    buf = io.BytesIO()
    frame.to_parquet(buf)
    with pytest.raises(ScenarioError, match="has no column replication"):  # read whole, then found not a sweep's
        read_uploads_here([Upload("runs.parquet", buf.getvalue())])


@pytest.mark.slow
@linux
@pytest.mark.parametrize("rows, length, words", [(2_000_000, 50_000, "holds 2,000,000 rows"),
                                                 (100_000, 50_000, "decodes to 4,768.8 MiB")])
def test_the_reading_child_stays_small_under_the_bomb(rows, length, words):
    """The child ``read_sweep_uploads`` starts, run by hand to read its high-water mark: a
    bomb the footer check passes (4.8 GB decoded) is refused too, and neither comes near the
    documented per-process limit."""
    data = bomb(rows, length)
    limits = Limits()
    call = upload_call([Upload("runs.parquet", data)], limits)  # what read_sweep_uploads sends, as it sends it
    worker = Worker()
    start = time.monotonic()
    try:
        (reply,) = run_calls([(worker, call)], limit_s=120)
        assert time.monotonic() - start < 30
        status = Path(f"/proc/{worker.pid}/status").read_text()  # it waits for its next call: its peak so far
    finally:
        worker.close()
    assert isinstance(reply.error, ScenarioError) and words in reply.error.problems[0].message
    peak = high_water(status)
    print(f"\nreading child's peak: {peak / MiB:.0f} MiB ({rows:,} × {length:,} characters)")
    assert peak < 400 * MiB < limits.process_memory_gb * 2**30


@pytest.mark.slow
@linux
def test_the_server_does_not_grow_under_the_bomb():
    data = [bomb(2_000_000, 50_000), bomb(100_000, 50_000)]
    before = high_water(Path("/proc/self/status").read_text())
    for d in data:
        with pytest.raises(ScenarioError):
            read_sweep_uploads([Upload("runs.parquet", d)])
    grown = high_water(Path("/proc/self/status").read_text()) - before
    assert grown < 50 * MiB, f"the server's peak grew by {grown / MiB:.0f} MiB"


@pytest.mark.slow
def test_reading_is_stopped_at_the_memory_limit():
    """A child that needs more than its limit is a refusal naming the limit, not an error page."""
    frame = pd.DataFrame({"variant": ["v0"] * 200_000, "replication": np.arange(200_000), "x": np.arange(200_000.0)})
    buf = io.BytesIO()
    frame.to_parquet(buf)
    with pytest.raises(ScenarioError, match=r"needed more than the dashboard's 0\.3 GiB of memory"):
        read_sweep_uploads([Upload("runs.parquet", buf.getvalue())], Limits(run_memory_gb=0.3))


# ------------------------------------------------------------------ the result cache


def test_the_result_cache_is_bounded_by_bytes():
    cache = ResultCache(max_entries=64, max_bytes=1_000)
    for key in "abc":
        cache.put(key, pickle.dumps(key) + bytes(400 - len(pickle.dumps(key))))
    assert cache.nbytes == 800 and cache.get("a") is None and cache.get("b") == "b"  # the oldest went
    cache.put("big", bytes(1_001))  # larger than the whole cache: not kept, nothing else dropped
    assert cache.nbytes == 800 and cache.get("c") == "c"
    cache.put("b", pickle.dumps("B"))  # a key kept again counts once
    assert cache.nbytes == 400 + len(pickle.dumps("B")) and cache.get("b") == "B"
    cache.clear()
    assert cache.nbytes == 0


def test_the_cache_limit_comes_from_the_environment():
    assert Limits().cache_mb == 1024
    assert ResultCache().max_bytes == 1024 * MiB
    assert Limits.from_env({"COSTSIM_CACHE_MB": "64"}).cache_mb == 64
    with pytest.raises(ScenarioError, match="COSTSIM_CACHE_MB: must be a positive number"):
        Limits.from_env({"COSTSIM_CACHE_MB": "0"})


# ------------------------------------------------------------------ one cap on worker processes


def test_worker_limits():
    assert (Limits().workers, Limits().workers_memory_gb, Limits().worker_slots) == (4, 32, 4)
    assert Limits(workers=8, workers_memory_gb=16).worker_slots == 2  # 8 GiB each: two fit in 16
    assert Limits(run_memory_gb=40).process_memory_gb == 32 and Limits(run_memory_gb=40).worker_slots == 1
    assert Limits.from_env({"COSTSIM_WORKERS": "2"}).worker_slots == 2
    with pytest.raises(ScenarioError, match="COSTSIM_WORKERS: must be a whole number"):
        Limits.from_env({"COSTSIM_WORKERS": "2.5"})


def short(seed_days: float = 30) -> costsim.Scenario:
    data = costsim.load_scenario(SCENARIO_DIR / "baseline.yaml").model_dump(mode="json")
    data.update(horizon_days=seed_days, warmup_days=0)
    return costsim.scenario.scenario_from_data(data, "short", SCENARIO_DIR)


@pytest.fixture
def cap_of_two(monkeypatch):
    """Every process started while the test runs, sampled for the most alive at once."""
    pool = pool_of_workers.new_pool()
    started: list[subprocess.Popen] = []
    real = subprocess.Popen

    def recording(*args, **kwargs):
        started.append(real(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(subprocess, "Popen", recording)
    peak, stop = [0], threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], sum(p.poll() is None for p in list(started)))
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    yield Limits(workers=2), started, peak, pool
    stop.set()
    sampler.join()
    pool.close()


@pytest.mark.slow
def test_eight_sessions_share_one_cap_on_worker_processes(cap_of_two):
    """Eight sessions at once (threads, as Streamlit runs them), each one run on warm workers,
    and a ninth reading an upload: never more than two worker processes alive, every result
    right, and the sessions that had to wait were told so."""
    limits, started, peak, pool = cap_of_two
    scenario = short()
    results, queued, errors = {}, set(), []

    def session(i: int) -> None:
        try:
            (blob,) = bounded.simulate_many(scenario, [i], limits, warm=True, on_queue=lambda s: queued.add(i),
                                            pool=pool)
            results[i] = pickle.loads(blob)
        except Exception as exc:  # reported below
            errors.append(exc)

    def uploader() -> None:
        with pytest.raises(ScenarioError, match="holds 2,000,000 rows"):
            read_sweep_uploads([Upload("runs.parquet", bomb(2_000_000, 50_000))], limits, pool=pool)
        results["upload"] = True

    threads = [threading.Thread(target=session, args=(i,)) for i in range(8)] + [threading.Thread(target=uploader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors and len(results) == 9
    assert peak[0] <= limits.worker_slots == 2, f"{peak[0]} worker processes alive at once"
    assert len(started) >= 3 and queued  # processes were started, and some sessions waited their turn
    for i in range(8):
        pd.testing.assert_frame_equal(results[i].summary, costsim.simulate(scenario, seed=i).summary)
    assert pool.busy == 0  # every slot given back


@pytest.mark.slow
def test_more_replications_than_the_cap_run_in_turns(cap_of_two):
    limits, started, peak, pool = cap_of_two
    scenario = short()
    blobs = bounded.simulate_many(scenario, [1, 2, 3, 4, 5], limits, warm=True, pool=pool)
    assert peak[0] <= 2
    for seed, blob in zip([1, 2, 3, 4, 5], blobs, strict=True):
        pd.testing.assert_frame_equal(pickle.loads(blob).summary, costsim.simulate(scenario, seed=seed).summary)
