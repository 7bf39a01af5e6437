"""Shared fixtures: the embedded llama.cpp server, a throwaway PostgreSQL server and a
``langgraph dev`` server."""

pytest_plugins = ["tests.local_server", "tests.postgres_server", "tests.langgraph_server"]
