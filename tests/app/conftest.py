"""The dashboard's AppTest tests. Streamlit's caches live in this process: a module whose tests
must not see another test's cached values asks for them cleared with
``pytestmark = pytest.mark.usefixtures("fresh_cache_data")`` (or ``"fresh_streamlit_caches"``).
The helpers these tests share are in tests/apptest_helpers.py."""

import pytest


@pytest.fixture
def fresh_cache_data():
    """``st.cache_data`` cleared before the test."""
    import streamlit as st

    st.cache_data.clear()
    yield


@pytest.fixture
def fresh_streamlit_caches():
    """``st.cache_data`` and ``st.cache_resource`` (the app's result cache lives there) cleared
    before the test."""
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    yield
