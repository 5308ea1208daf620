"""Runs kept on disk between dashboard server starts: found only for the same key and the same code,
written whole or not at all, trimmed least recently used first, and a server started again shows
the first screen without simulating it."""

import os
import pickle
import stat

import pytest

from costsim.dashboard import bounded
from costsim.dashboard.bounded import ResultCache, run_key
from costsim.dashboard.disk_runs import DiskRuns, default_folder, server_disk
from costsim.dashboard.limits import Limits
from costsim.scenario import ScenarioError


def test_a_run_put_is_got_back_by_its_key_and_code_and_by_nothing_else(tmp_path):
    disk = DiskRuns(tmp_path / "runs", max_bytes=10_000, identity="code-a")
    disk.put("key-1", b"blob one")
    assert disk.get("key-1") == b"blob one" and disk.has("key-1")
    assert disk.get("key-2") is None and not disk.has("key-2")
    assert DiskRuns(tmp_path / "runs", max_bytes=10_000, identity="code-b").get("key-1") is None  # other code
    assert DiskRuns(tmp_path / "runs", max_bytes=10_000, identity="code-a").get("key-1") == b"blob one"  # a restart
    assert stat.S_IMODE((tmp_path / "runs").stat().st_mode) == 0o700  # pickles: no one else's to write


def test_a_file_holding_another_key_is_a_miss(tmp_path):
    """The file's name is a digest of the key; the key inside it is compared too."""
    disk = DiskRuns(tmp_path, max_bytes=10_000, identity="code")
    disk.put("key-1", b"blob")
    (path,) = tmp_path.glob("*.run")
    path.write_bytes(b"key-2\0blob")
    assert disk.get("key-1") is None


def test_the_least_recently_used_runs_go_first_and_a_run_over_the_limit_is_not_kept(tmp_path):
    disk = DiskRuns(tmp_path, max_bytes=3 * 110, identity="code")
    for k in range(3):
        disk.put(f"k{k}", b"x" * 100)  # 100 bytes and the key: 103 each
        path = disk.file_for(f"k{k}")
        os.utime(path, ns=(k * 10**9, k * 10**9))  # written in order, a second apart
    assert all(disk.has(f"k{k}") for k in range(3))
    os.utime(disk.file_for("k0"), ns=(5 * 10**9, 5 * 10**9))  # k0 read last: k1 is now the oldest
    disk.put("k3", b"x" * 100)
    assert [disk.has(f"k{k}") for k in range(4)] == [True, False, True, True]
    disk.put("huge", b"x" * 1000)
    assert not disk.has("huge") and disk.has("k3")
    assert not list(tmp_path.glob("*.part"))  # no half-written file left


def test_a_folder_that_cannot_be_written_keeps_nothing_and_fails_nothing(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    disk = DiskRuns(blocked / "runs", max_bytes=10_000, identity="code")
    disk.put("key", b"blob")
    assert disk.get("key") is None


def test_the_disk_is_keyed_by_the_code_a_sweep_is(tmp_path):
    """One identity for code that made a stored run (``costsim.runs.identity``, tested with sweeps)."""
    from costsim.runs.identity import code_identity

    assert DiskRuns(tmp_path, max_bytes=1).identity == code_identity()


def test_a_folder_someone_else_may_write_is_not_used(tmp_path):
    """Its files are pickles: a folder others may write (or a link) is left alone, read or written."""
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    disk = DiskRuns(shared, max_bytes=10_000, identity="code")
    disk.put("key", b"blob")
    assert not list(shared.iterdir())
    os.chmod(shared, 0o700)
    disk.put("key", b"blob")
    assert disk.get("key") == b"blob"
    os.chmod(shared, 0o770)
    assert disk.get("key") is None and not disk.has("key")
    os.chmod(shared, 0o700)
    link = tmp_path / "link"
    link.symlink_to(shared)
    assert DiskRuns(link, max_bytes=10_000, identity="code").get("key") is None


def test_a_folder_that_cannot_be_looked_into_is_a_miss_not_an_error(tmp_path, monkeypatch):
    from pathlib import Path

    disk = DiskRuns(tmp_path / "runs", max_bytes=10_000, identity="code")
    disk.put("key", b"blob")

    def refused(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "is_file", refused)
    assert disk.has("key") is False


def test_a_part_left_by_a_write_cut_short_is_dropped_once_stale_and_other_files_are_left(tmp_path):
    disk = DiskRuns(tmp_path, max_bytes=10_000, identity="code")
    stale = tmp_path / (disk.file_for("a").name + ".x1.part")
    fresh = tmp_path / (disk.file_for("b").name + ".x2.part")
    mine = tmp_path / "notes.run"
    for f in (stale, fresh, mine):
        f.write_bytes(b"x")
    os.utime(stale, (0, 0))
    disk.put("c", b"blob")
    assert not stale.exists() and fresh.exists() and mine.exists()


def test_where_and_how_much_from_the_environment(tmp_path):
    assert default_folder({"COSTSIM_CACHE_DIR": str(tmp_path)}) == tmp_path
    assert default_folder({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "costsim" / "runs"
    assert server_disk({"COSTSIM_DISK_CACHE_MB": "0"}) is None
    disk = server_disk({"COSTSIM_CACHE_DIR": str(tmp_path), "COSTSIM_DISK_CACHE_MB": "1.5"})
    assert disk is not None and disk.folder == tmp_path and disk.max_bytes == int(1.5 * 2**20)
    assert Limits.from_env({}).disk_cache_mb == 2048
    with pytest.raises(ScenarioError, match=r"COSTSIM_DISK_CACHE_MB.*a number ≥ 0 \(got '-1'\)"):
        Limits.from_env({"COSTSIM_DISK_CACHE_MB": "-1"})
    with pytest.raises(ScenarioError, match=r"COSTSIM_CACHE_MB.*a positive number"):
        Limits.from_env({"COSTSIM_CACHE_MB": "0"})  # 0 turns off the disk only


@pytest.fixture(scope="module")
def baseline_blob():
    import costsim

    sc = costsim.load_scenario(bounded.SCENARIO_DIR / "baseline.yaml")
    short = costsim.scenario_from_data({**sc.model_dump(mode="json"), "horizon_days": 20, "warmup_days": 0},
                                       "disk", bounded.SCENARIO_DIR)
    return short, pickle.dumps(costsim.simulate(short), protocol=pickle.HIGHEST_PROTOCOL)


def test_a_server_started_again_reads_the_runs_an_earlier_one_kept(tmp_path, baseline_blob):
    sc, blob = baseline_blob
    key = run_key(sc)
    first = ResultCache(disk=DiskRuns(tmp_path, max_bytes=2**30))
    first.put(key, blob)
    again = ResultCache(disk=DiskRuns(tmp_path, max_bytes=2**30))  # a new server: nothing in memory
    assert again.size(key) is None
    got = again.get(key)
    assert got is not None and got.summary.equals(pickle.loads(blob).summary)
    assert again.size(key) == len(blob)  # now in memory too
    assert ResultCache().get(key) is None  # without the disk, nothing


def test_a_damaged_file_is_a_miss_and_is_dropped(tmp_path, baseline_blob):
    sc, blob = baseline_blob
    key = run_key(sc)
    disk = DiskRuns(tmp_path, max_bytes=2**30)
    disk.put(key, blob[: len(blob) // 2])  # as a disk that lost data might leave it
    assert ResultCache(disk=disk).get(key) is None
    assert not disk.has(key)


def test_a_primed_spare_does_not_run_a_replication_the_disk_holds(tmp_path, monkeypatch):
    """On a server started again, the spares that would run the first screen's replications find
    them on disk and leave the CPU to the first screen."""
    first = bounded.first_scenario()
    monkeypatch.setenv("COSTSIM_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("COSTSIM_DISK_CACHE_MB", "100")
    disk = server_disk(os.environ)
    seed = bounded.replication_seed(first.seed, 1)
    disk.put(run_key(first, seed), b"kept")
    ran = []
    monkeypatch.setattr(bounded, "simulate_with_memo", lambda *args: ran.append(args[1]))

    class Child:
        def kept(self, name, make):
            return make()

    bounded.warm_worker("1", Child())
    assert ran == []
    bounded.warm_worker("2", Child())  # not on disk: run as before
    assert ran == [bounded.replication_seed(first.seed, 2)]


def test_the_first_screen_is_noted_on_disk_only_when_every_primed_replication_of_it_is_kept(tmp_path):
    from costsim.dashboard.pool import SPARE_COUNT, first_screen_kept

    disk = DiskRuns(tmp_path, max_bytes=2**20)
    first = bounded.first_scenario()
    seeds = [bounded.replication_seed(first.seed, r) for r in range(SPARE_COUNT)]
    for s in seeds[:-1]:
        disk.put(run_key(first, s), b"run")
    bounded.note_first_screen(disk, first)
    assert not first_screen_kept(disk)  # one replication is missing
    disk.put(run_key(first, seeds[-1]), b"run")
    other = first.model_copy(update={"name": "another"})
    bounded.note_first_screen(disk, other)
    assert not first_screen_kept(disk)  # runs of another scenario say nothing of the first screen
    bounded.note_first_screen(None, first)
    bounded.note_first_screen(disk, first)
    assert first_screen_kept(disk)
    assert not first_screen_kept(DiskRuns(tmp_path, max_bytes=2**20, identity="other code"))


def test_a_server_whose_first_screen_is_on_disk_starts_its_spares_after_it(monkeypatch):
    from costsim.dashboard import server

    started = []
    monkeypatch.setattr(server, "warm_up", lambda **kw: started.append(kw))
    for kept, expected in ((True, []), (False, [1])):
        monkeypatch.setattr(server, "first_screen_kept", lambda kept=kept: kept)
        server.start_workers.clear()
        started.clear()
        assert server.start_workers() is (not kept)
        assert len(started) == len(expected)
    server.start_workers.clear()


def test_a_run_memory_would_not_keep_is_neither_written_nor_read_from_disk(tmp_path, baseline_blob):
    """A session keeps runs unpickled by their size in memory (``ResultCache.size``): one too big
    for memory must not come back from disk uncounted."""
    sc, blob = baseline_blob
    key = run_key(sc)
    disk = DiskRuns(tmp_path, max_bytes=2**30)
    ResultCache(max_bytes=len(blob) - 1, disk=disk).put(key, blob)
    assert not disk.has(key)
    disk.put(key, blob)  # kept by a server with a larger limit
    small = ResultCache(max_bytes=len(blob) - 1, disk=disk)
    assert small.get(key) is None and small.size(key) is None
    ResultCache(disk=disk).put("upload", blob, on_disk=False)
    assert not disk.has("upload")


def test_a_file_the_scenario_reads_rewritten_to_the_same_size_and_time_is_another_run(tmp_path):
    """A scaling fit's points (as a trace) are in the key by device, inode, size and both times:
    ``cp -p`` or ``touch -r`` can set the modification time back, not the change time."""
    import time

    import costsim

    (tmp_path / "fit.csv").write_text("iteration,reward\n1,0.1\n2,0.2\n")
    (tmp_path / "trace.csv").write_text("submit_h,gpus,duration_h\n0,8,1\n")
    sc = costsim.load_scenario(bounded.SCENARIO_DIR / "baseline.yaml")
    sc = sc.model_copy(update={"base_dir": tmp_path})
    data = sc.model_dump(mode="json")
    data["workload"] = {**data["workload"], "trace": "trace.csv"}
    with_trace = costsim.scenario_from_data(data, "s", tmp_path)
    before = run_key(with_trace)
    info = (tmp_path / "trace.csv").stat()
    time.sleep(0.01)
    (tmp_path / "trace.csv").write_text("submit_h,gpus,duration_h\n0,8,2\n")  # same size
    os.utime(tmp_path / "trace.csv", ns=(info.st_atime_ns, info.st_mtime_ns))  # same modification time
    assert run_key(with_trace) != before


def test_a_note_of_the_first_screen_whose_runs_were_dropped_is_not_believed(tmp_path):
    from costsim.dashboard.pool import SPARE_COUNT, first_screen_kept

    disk = DiskRuns(tmp_path, max_bytes=2**20)
    first = bounded.first_scenario()
    for r in range(SPARE_COUNT):
        disk.put(run_key(first, bounded.replication_seed(first.seed, r)), b"run")
    bounded.note_first_screen(disk, first)
    assert first_screen_kept(disk)
    disk.forget(run_key(first, bounded.replication_seed(first.seed, 1)))  # as the byte limit drops it
    assert not first_screen_kept(disk)


def test_after_a_first_screen_from_disk_the_spares_start_on_a_timer_not_at_once(monkeypatch):
    """The browser is still drawing that screen: three spares importing costsim would take its cores."""
    import time

    from costsim.dashboard import server

    started = []
    monkeypatch.setattr(server, "warm_up", lambda **kw: started.append(time.monotonic()))
    monkeypatch.setattr(server, "first_screen_kept", lambda: True)
    monkeypatch.setattr(server, "SPARES_DELAY_S", 0.3)
    monkeypatch.setattr(server, "_later", [])
    server.start_workers.clear()
    try:
        begun = time.monotonic()
        server.top_up_spares()
        server.top_up_spares()  # a second run meanwhile starts nothing either
        assert started == []
        server._later[0].join(2)
        assert len(started) == 1 and started[0] - begun >= 0.3
        server.top_up_spares()  # once: later spares are topped up after each batch of runs
        assert len(started) == 1
        monkeypatch.setattr(server, "first_screen_kept", lambda: False)
        server.start_workers.clear()
        server.top_up_spares()  # a server whose spares started with its first page: nothing more here
        assert len(started) == 2  # (that start, by start_workers)
    finally:
        server.start_workers.clear()


def test_a_server_whose_first_page_opens_a_link_primes_no_replication_of_the_first_scenario(monkeypatch):
    """That session shows the link's scenario: replications of the baseline would only take its CPU."""
    from costsim.dashboard import server

    made = []
    monkeypatch.setattr(server, "first_screen_kept", lambda: False)
    monkeypatch.setattr(server, "new_pool", lambda primed=True: made.append(primed) or object())
    monkeypatch.setattr(server, "warm_up", lambda **kw: None)
    for link, primed in (("abc", False), (None, True)):
        monkeypatch.setattr(server, "_pool", [])
        monkeypatch.setattr(server.st, "query_params", {"s": link} if link else {})
        server.start_workers.clear()
        server.start_workers()
        assert made[-1] is primed
    server.start_workers.clear()
