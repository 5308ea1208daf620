"""Browser tests: everything in this folder drives Debian's Chromium against a live dashboard, so
every test collected here is marked ``e2e`` (``make test-fast`` leaves them out; ``make test`` runs
them where Chromium is installed). The report's and the palette's browser tests, which live beside
the rest of their modules, carry the mark themselves.

The fixtures the files share: ``browser`` and ``app_url`` are module-scoped, so each test file has
its Chromium and its dashboard server (a second of Chromium, a few seconds of server and first run),
and ``make test``'s workers (``--dist loadfile``) can run the files side by side."""

from pathlib import Path

import pytest
from browser_helpers import launched_chromium, served

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="module")
def browser():
    yield from launched_chromium()


@pytest.fixture(scope="module")
def app_url():
    """The dashboard served for a test file's tests."""
    with served() as url:
        yield url


@pytest.fixture
def own_app_url():
    """A server of its own: the module's server may still be busy with earlier tests' runs."""
    with served() as url:
        yield url
