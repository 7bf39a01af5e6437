"""Exit and fork hooks, registered on first use instead of at import.

Importing loopgraphs leaves the interpreter's exit and fork hooks alone. A module that
makes something to clean up at exit (a llama.cpp server, a thread pool) or to forget in a
forked child (threads, event loops) registers its hook when it first makes one; asking
again for the same hook does nothing, so each hook runs once per exit or fork.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable

Hook = Callable[[], None]

_registered: dict[tuple[str, Hook], object] = {}


def _first_time(kind: str, hook: Hook) -> bool:
    """Whether ``hook`` is asked for as a ``kind`` hook for the first time (thread-safe:
    ``dict.setdefault`` is atomic, and no lock is held that a fork could copy held)."""
    token = object()
    return _registered.setdefault((kind, hook), token) is token


def at_exit(hook: Hook) -> None:
    """Run ``hook`` at interpreter exit; asking again for the same hook does nothing.

    Args:
        hook: A function of no arguments.
    """
    if _first_time("exit", hook):
        atexit.register(hook)


def after_fork(hook: Hook) -> None:
    """Run ``hook`` in every child forked from now on; asking again does nothing, and so
    does asking on a platform without ``fork``.

    Args:
        hook: A function of no arguments.
    """
    if hasattr(os, "register_at_fork") and _first_time("fork", hook):
        os.register_at_fork(after_in_child=hook)
