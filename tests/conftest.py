"""Shared fixtures: the embedded llama.cpp server, a throwaway PostgreSQL server and a
``langgraph dev`` server."""

pytest_plugins = [
    "tests.support.local_server",
    "tests.support.postgres_server",
    "tests.support.langgraph_server",
]
