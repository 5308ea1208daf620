"""Runs kept on disk between dashboard server starts: found only for the same key and the same code,
written whole or not at all, trimmed least recently used first, and a server started again shows
the first screen without simulating it."""

import os
import pickle
import stat

import pytest

from costsim.dashboard import bounded
from costsim.dashboard.bounded import ResultCache, run_key
from costsim.dashboard.disk_runs import DiskRuns, default_folder, identity_of, server_disk
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
        path = disk._path(f"k{k}")
        os.utime(path, ns=(k * 10**9, k * 10**9))  # written in order, a second apart
    assert all(disk.has(f"k{k}") for k in range(3))
    os.utime(disk._path("k0"), ns=(5 * 10**9, 5 * 10**9))  # k0 read last: k1 is now the oldest
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


def test_the_code_identity_follows_every_file_of_the_package_but_not_its_compiled_caches(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub" / "catalog.yaml").write_text("price: 2.99\n")
    before = identity_of(tmp_path)
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    assert identity_of(tmp_path) == before
    (tmp_path / "sub" / "catalog.yaml").write_text("price: 2.98\n")
    assert identity_of(tmp_path) != before


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
    disk.put(key, blob[: len(blob) // 2])  # as a full disk or a killed process might leave it
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
