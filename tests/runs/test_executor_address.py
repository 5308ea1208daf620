"""A sweep's ``--address`` and ``--workers``: schemes costsim cannot speak, servers that are not a
Dask scheduler (a listener that never answers, an HTTP server, one that sends garbage) and a
scheduler lost mid-sweep are each exit 2 with a message saying what to do, bounded in time, no
traceback and nothing written; more workers than cores are capped with a warning unless forced.

The servers are real sockets on 127.0.0.1; the lost scheduler is a real ``dask scheduler``
process killed with SIGKILL while the sweep runs."""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import TINY_RL, invoke_cli, tiny_sweep_files
from paths import ROOT

import costsim
from costsim.errors import ExecutorError
from costsim.runs import executors
from costsim.runs import sweep as sweep_mod
from costsim.runs.scheduler import SchedulerProblem, is_greeting, parse_address
from costsim.scenario import ScenarioError

SCENARIO = TINY_RL


@pytest.fixture
def files(tmp_path: Path) -> Path:
    return tiny_sweep_files(tmp_path)


def invoke(*args: str):
    return invoke_cli(*args)


# -- the address ------------------------------------------------------------------------------------

@pytest.mark.parametrize("address, words", [
    ("ucx://10.0.0.5:8786", "over TCP only (ucx:// needs a security or transport setup costsim does not make)"),
    ("http://10.0.0.5:8787", "over TCP only (a web address: a scheduler's dashboard (port 8787) is not the "
                             "scheduler)"),
    ("tls://10.0.0.5:8786", "over TCP only (tls:// needs a security or transport setup"),
    ("h:port", "is not HOST:PORT of a Dask scheduler"),
    ("h:70000", "is not HOST:PORT of a Dask scheduler"),
    ("tcp://h:8786/path", "is not HOST:PORT of a Dask scheduler"),
])
def test_an_address_costsim_cannot_use_is_exit_2_naming_it(files, address, words):
    """The schemes are new; the malformed forms were refused before too (kept as guards)."""
    pytest.importorskip("distributed", reason="dask[distributed] not installed (pip install 'costsim[dask]')")
    result = invoke("sweep", str(files / "sw.yaml"), "--executor", "dask", "--address", address,
                    "--out", str(files / "o"))
    assert result.exit_code == 2 and not (files / "o").exists()
    message = " ".join(result.stderr.split())
    assert f"error: executor dask: --address {address!r}" in message and words in message, message
    assert "HOST:PORT or tcp://HOST:PORT" in message or "is not HOST:PORT" in message


@pytest.mark.parametrize("address, host, port", [("10.0.0.5:8786", "10.0.0.5", 8786),
                                                 ("tcp://sched.local:1", "sched.local", 1),
                                                 ("TCP://[::1]:8786", "::1", 8786)])
def test_addresses_costsim_speaks(address, host, port):
    assert parse_address(address) == (host, port)


# -- servers that are not a Dask scheduler ----------------------------------------------------------

class Server:
    """A TCP listener on 127.0.0.1 that, per connection, says nothing, sends ``reply`` at once, or
    (``http``) waits for a request and answers it as a web server would."""

    def __init__(self, reply: bytes | None = None, http: bool = False):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.reply, self.http, self.conns = reply, http, []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            try:
                if self.http:
                    conn.settimeout(30)
                    if conn.recv(65536):
                        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                elif self.reply is not None:
                    conn.sendall(self.reply)
            except OSError:
                pass

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()


@pytest.mark.parametrize("server, words", [
    (lambda: Server(), "accepted the connection and sent nothing for 1 s"),
    (lambda: Server(http=True), "accepted the connection and sent nothing for 1 s"),  # a web server waits to be asked
    (lambda: Server(reply=b"\xff" * 64), "answered with bytes that are not Dask's handshake"),
    (lambda: Server(reply=b"HTTP/1.1 200 OK\r\n\r\n" * 4), "answered with bytes that are not Dask's handshake"),
    (lambda: Server(reply=struct.pack("<Q", 24) + struct.pack("<QQ", 1, 8) + b"\x93\x01\x02\x03" * 2),
     "answered with bytes that are not Dask's handshake"),  # Dask's framing around a msgpack list
])
def test_a_server_that_is_not_a_scheduler_is_exit_2_within_the_timeout(files, monkeypatch, server, words):
    pytest.importorskip("distributed", reason="dask[distributed] not installed (pip install 'costsim[dask]')")
    monkeypatch.setattr(executors, "CONNECT_TIMEOUT_S", 1)
    srv = server()
    try:
        start = time.monotonic()
        result = invoke("sweep", str(files / "sw.yaml"), "--executor", "dask", "--address",
                        f"127.0.0.1:{srv.port}", "--out", str(files / "o"))
        elapsed = time.monotonic() - start
    finally:
        srv.close()
    assert result.exit_code == 2 and not (files / "o").exists()
    message = " ".join(result.stderr.split())
    assert f"error: executor dask: the server at 127.0.0.1:{srv.port} is not a Dask scheduler: it {words}" in message
    assert "check the address" in message
    assert elapsed < 8, elapsed  # bounded by the 1 s timeout (and the imports), never a hang


def test_a_port_nobody_listens_on_is_cannot_reach(files):
    pytest.importorskip("distributed", reason="dask[distributed] not installed (pip install 'costsim[dask]')")
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]
    srv.close()  # the port is now closed: connection refused
    with pytest.raises(ExecutorError, match=rf"executor dask: cannot reach the Dask scheduler at 127\.0\.0\.1:{port}: "):
        costsim.sweep(files / "sw.yaml", out=files / "o", executor="dask", address=f"127.0.0.1:{port}")
    assert not (files / "o").exists()


def test_a_dask_greeting_framed_by_distributed_is_recognised():
    """The greeting built by distributed's own serialisation and framing (not by costsim)."""
    pytest.importorskip("distributed", reason="dask[distributed] not installed (pip install 'costsim[dask]')")
    from distributed.protocol import dumps
    from distributed.protocol.utils import pack_frames

    body = pack_frames(dumps({"compression": None, "python": (3, 11, 7), "pickle-protocol": 5}))
    assert is_greeting(body)
    assert not is_greeting(pack_frames(dumps(["not", "a", "handshake"])))
    assert not is_greeting(b"\x00" * 64)


# -- a scheduler lost mid-sweep ---------------------------------------------------------------------

def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as s:
        return s.getsockname()[1]


@pytest.mark.slow
def test_a_scheduler_lost_mid_sweep_is_exit_2_and_the_saved_tasks_resume(tmp_path):
    pytest.importorskip("distributed", reason="dask[distributed] not installed (pip install 'costsim[dask]')")
    (tmp_path / "s.yaml").write_text(SCENARIO)
    (tmp_path / "big.yaml").write_text("base: s.yaml\nseed: 3\nreplications: 40\ngrid:\n  options.own.gpus: [16, 24]\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    port = _free_port()
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env, "cwd": tmp_path}
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                  "--port", str(port), "--no-dashboard"], **quiet)
    worker = None
    try:
        _wait_for_port(port)
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", f"tcp://127.0.0.1:{port}",
                                   "--nthreads", "1", "--no-dashboard"], **quiet)
        sweep = subprocess.Popen([sys.executable, "-m", "costsim.cli", "sweep", "big.yaml", "--executor",
                                  "dask", "--address", f"127.0.0.1:{port}", "--out", "out"], cwd=tmp_path, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        runs = tmp_path / "out" / "runs"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and sweep.poll() is None:
            if runs.is_dir() and len(list(runs.rglob("*.parquet"))) >= 3:
                break
            time.sleep(0.05)
        scheduler.send_signal(signal.SIGKILL)
        _, err = sweep.communicate(timeout=120)
    finally:
        for p in (scheduler, worker):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    saved = len(list(runs.rglob("*.parquet")))
    message = " ".join(err.split())
    assert sweep.returncode == 2, err
    assert "Traceback" not in err and "FutureCancelledError()" not in err and "ERROR" not in err, err
    assert 3 <= saved < 80
    assert (f"error: executor dask: lost the Dask scheduler at 127.0.0.1:{port} (" in message
            and f"): {saved} finished tasks are saved in out/runs; run again to resume" in message), message
    again = subprocess.run([sys.executable, "-m", "costsim.cli", "sweep", "big.yaml", "--executor", "local",
                            "--out", "out"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert f"resuming: {saved} of 80 tasks already in out/" in again.stderr


def _wait_for_port(port: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"no scheduler on port {port}")


# -- --workers --------------------------------------------------------------------------------------

@pytest.fixture
def asked(monkeypatch) -> dict:
    """The workers ``run_sweep`` is given (it is not run), on a machine of 2 cores."""
    seen: dict = {}

    def run_sweep(spec, out, executor, workers, address, progress=None, label="out", notify=None):
        seen["workers"] = workers
        raise ScenarioError("stub", [])

    monkeypatch.setattr(sweep_mod, "run_sweep", run_sweep)
    monkeypatch.setattr(executors, "available_cores", lambda: 2)
    return seen


def test_more_workers_than_cores_are_capped_with_a_warning(files, asked):
    result = invoke("sweep", str(files / "sw.yaml"), "--workers", "40", "--out", str(files / "o"))
    assert asked["workers"] == 2
    assert ("warning: --workers 40 is more than the 2 core(s) this process may use: starting 2 (more would only add "
            "processes and memory; --force-workers starts them anyway)") in " ".join(result.stderr.split())


@pytest.mark.parametrize("args, workers", [(["--workers", "40", "--force-workers"], 40), (["--workers", "2"], 2),
                                           ([], None), (["--workers", "40", "--executor", "local"], 40)])
def test_workers_within_the_cores_forced_or_unused_are_left_alone(files, asked, args, workers):
    result = invoke("sweep", str(files / "sw.yaml"), *args, "--out", str(files / "o"))
    assert asked["workers"] == workers and "warning" not in result.stderr


def test_worker_cap():
    assert executors.worker_cap(40, 2) == (2, executors.worker_cap(40, 2)[1]) and executors.worker_cap(40, 2)[1]
    assert executors.worker_cap(2, 2) == (2, None) and executors.worker_cap(40, 2, force=True) == (40, None)


def test_parse_address_refuses_without_importing_dask():
    with pytest.raises(SchedulerProblem, match="over TCP only"):
        parse_address("inproc://x:1")
