"""Pytest plugin with session-scoped fixtures for the embedded llama.cpp server.

Register it from the root test conftest with ``pytest_plugins = ["tests.support.local_server"]``.
Outside CI the fixtures skip when xllamacpp or the bundled GGUF is missing; when the ``CI``
environment variable is set, a missing piece fails the tests instead.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from typing import NoReturn

import pytest
from langchain_openai import ChatOpenAI

from loopgraphs.models import LocalServer, find_default_gguf, local_chat_model

LOCAL_TEST_MAX_TOKENS = 96
# Tests share two cores with other work, where SmolLM2 has been measured as slow as
# 2 tokens/s: a generous timeout keeps a slow machine from failing them. The cap, not
# the timeout, is what ends a runaway reply.
LOCAL_TEST_TIMEOUT_SECONDS = 300.0


def _missing(reason: str) -> NoReturn:
    """Skip the test outside CI; fail it in CI, where every piece must be installed."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (required when CI is set)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def local_server() -> Iterator[LocalServer]:
    """One embedded llama.cpp server with the bundled SmolLM2 as ``load_model("local")``
    starts it (one slot, so replies depend on their request alone), for the session."""
    if importlib.util.find_spec("xllamacpp") is None:
        _missing('xllamacpp is not installed: pip install "loopgraphs[local]"')
    try:
        gguf = find_default_gguf(fetch=False)
    except FileNotFoundError as error:
        _missing(str(error))
    server = LocalServer(gguf).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def local_model(local_server: LocalServer) -> ChatOpenAI:
    """A chat model on the session server, capped at 96 generated tokens to keep tests fast."""
    return local_chat_model(
        local_server, max_tokens=LOCAL_TEST_MAX_TOKENS, timeout=LOCAL_TEST_TIMEOUT_SECONDS
    )
