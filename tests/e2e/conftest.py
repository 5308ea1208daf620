"""Browser tests: everything in this folder drives Debian's Chromium against a live dashboard, so
every test collected here is marked ``e2e`` (``make test-fast`` leaves them out; ``make test`` runs
them where Chromium is installed). The report's and the palette's browser tests, which live beside
the rest of their modules, carry the mark themselves."""

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.e2e)
