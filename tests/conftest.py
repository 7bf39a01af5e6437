"""Shared fixtures: the embedded llama.cpp server and a throwaway PostgreSQL server."""

pytest_plugins = ["tests.local_server", "tests.postgres_server"]
