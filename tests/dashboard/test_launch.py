"""``make app`` (``python -m costsim.dashboard.launch app.py``): the server's primed warm workers
are running before any page is opened, which ``streamlit run app.py`` alone cannot do (it runs the
script only for a page); and they end with the server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from paths import ROOT

from costsim.dashboard import launch
from costsim.dashboard.pool import SPARE_COUNT

CHILD = b"costsim.runs.isolated_child"


def workers_of(pid: int) -> list[int]:
    """The worker processes (``costsim.runs.isolated``) whose parent is ``pid``."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid and CHILD in cmdline:
            out.append(int(entry.name))
    return out


def started(command: list[str], tmp_path: Path) -> tuple[subprocess.Popen, list[int]]:
    """``command`` serving on a free port, once it answers its health check: the process and its
    workers then (no page opened)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "COSTSIM_DISK_CACHE_MB": "0", "COSTSIM_CACHE_DIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", *command, "--server.headless", "true", "--server.port", str(port),
                             "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 60
    while True:
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1).read() == b"ok":
                break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail(f"{command} did not start")
            time.sleep(0.1)
    return proc, workers_of(proc.pid)


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, waiting to be reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def stopped(proc: subprocess.Popen, workers: list[int]) -> None:
    """End the server; its workers end with it."""
    proc.terminate()
    proc.wait(20)
    deadline = time.monotonic() + 10
    while any(alive(w) for w in workers):
        assert time.monotonic() < deadline, "a worker outlived its server"
        time.sleep(0.1)


@pytest.mark.slow
def test_the_launcher_starts_the_primed_workers_before_any_page_and_streamlit_alone_does_not(tmp_path):
    proc, workers = started(["costsim.dashboard.launch", "app.py"], tmp_path)
    try:
        assert len(workers) == SPARE_COUNT
    finally:
        stopped(proc, workers)
    proc, workers = started(["streamlit", "run", "app.py"], tmp_path)
    try:
        assert workers == []
    finally:
        stopped(proc, workers)


def test_the_launcher_needs_the_script_first(capsys):
    for argv in ([], ["--server.port", "8501"]):
        with pytest.raises(SystemExit) as stop:
            launch.main(argv)
        assert stop.value.code == 2
        assert "usage: python -m costsim.dashboard.launch app.py" in capsys.readouterr().err


def test_the_script_s_imports_are_made_before_streamlit_without_running_it(tmp_path):
    """What the script imports at its top level, names loaded lazily by ``costsim.dashboard``
    included, is imported by the launcher; nothing else in it runs, and an import that fails (a
    name the package lacks) spares the names after it and is left for the script's own run."""
    marker = tmp_path / "ran"
    script = tmp_path / "script.py"
    script.write_text(f"import wave\nimport no_such_module_anywhere\nfrom email import message\n"
                      f"from costsim.dashboard import no_such_name_here, knob_paths\nopen({str(marker)!r}, 'w').close()\n"
                      "def later():\n    import tabnanny\n")
    probe = ("import sys; from pathlib import Path; from costsim.dashboard import launch; "
             f"launch.import_script_modules(Path({str(script)!r})); "
             "print(*(m in sys.modules for m in ('wave', 'email.message', 'costsim.dashboard.knobs', 'tabnanny')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "True", "False"]
    assert not marker.exists()
    launch.import_script_modules(tmp_path / "missing.py")  # nothing to read: left to Streamlit
    (tmp_path / "broken.py").write_text("def (:\n")
    launch.import_script_modules(tmp_path / "broken.py")


def test_the_launcher_gives_streamlit_the_dashboard_s_settings_before_the_user_s(monkeypatch):
    """Wherever the server is started (Streamlit reads .streamlit/config.toml only from the folder
    it starts in): no error details shown and no file watched, before the user's own options (the
    last of a repeated option wins), and the same as the repository's config says."""
    import tomllib

    from streamlit.web import cli

    seen = []
    monkeypatch.setattr(launch, "start_spares", lambda primed: None)
    monkeypatch.setattr(launch, "import_script_modules", lambda script: None)
    monkeypatch.setattr(cli, "main", lambda: seen.append(list(sys.argv)))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    launch.main(["app.py", "--server.port", "8502"])
    assert seen == [["streamlit", "run", "app.py", "--client.showErrorDetails", "none",
                     "--server.fileWatcherType", "none", "--server.port", "8502"]]
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    options = dict(zip(launch.SERVER_OPTIONS[::2], launch.SERVER_OPTIONS[1::2], strict=True))
    assert options == {f"--{section}.{name}": value for section, table in config.items() for name, value in table.items()}
