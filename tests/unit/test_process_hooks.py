"""Exit and fork hooks: importing loopgraphs registers none; first use registers each once."""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from loopgraphs import process_hooks
from loopgraphs.models import local_server
from loopgraphs.nodes import tool_guard, tool_step
from tests.support.package_modules import ROOT, package_modules

# Records every exit and fork hook, then imports the modules named by its argument.
IMPORT_EVERYTHING = """
import atexit, importlib, json, os, sys
hooks = []
real_exit, real_fork = atexit.register, getattr(os, "register_at_fork", None)
def record(hook, *args, **kwargs):
    hooks.append(getattr(hook, "__module__", None) or "")
    return real_exit(hook, *args, **kwargs)
def record_fork(**kwargs):
    hooks.extend(getattr(hook, "__module__", None) or "" for hook in kwargs.values())
    return real_fork(**kwargs)
atexit.register = record
if real_fork is not None:
    os.register_at_fork = record_fork
for name in json.loads(sys.argv[1]):
    importlib.import_module(name)
print(json.dumps([name for name in hooks if name.startswith("loopgraphs")]))
"""


def test_importing_every_module_registers_no_hook() -> None:
    names = [name for name in package_modules() if not name.endswith(".__main__")]
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERYTHING, json.dumps(names)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=300,
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Callable[[], None]]]:
    """A fresh record of the package's (and these tests') hooks, as handed to the
    interpreter; other libraries' hooks are registered as usual."""
    hooks: dict[str, list[Callable[[], None]]] = {"exit": [], "fork": []}
    real_exit = atexit.register

    def on_exit(hook: Callable[[], None]) -> None:
        if hook.__module__.startswith("loopgraphs") or hook.__module__ == __name__:
            hooks["exit"].append(hook)
        else:
            real_exit(hook)

    monkeypatch.setattr(process_hooks, "_registered", {})
    monkeypatch.setattr(atexit, "register", on_exit)
    monkeypatch.setattr(
        os, "register_at_fork", lambda after_in_child: hooks["fork"].append(after_in_child)
    )
    return hooks


def test_the_first_local_server_registers_its_exit_hook_once(
    registered: dict[str, list[Callable[[], None]]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setattr(local_server, "_local_servers", {})
    monkeypatch.setattr(local_server.LocalServer, "start", lambda self: self)
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    for _ in range(3):
        local_server.get_local_server(gguf)
    assert registered == {"exit": [local_server.stop_local_servers], "fork": []}


def test_the_first_tool_pool_registers_its_hooks_once(
    registered: dict[str, list[Callable[[], None]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tool_guard, "_timeout_pool", None)
    for _ in range(3):
        pool = tool_guard._pool()
    pool.shutdown()
    assert registered == {"exit": [tool_guard._shutdown_pool], "fork": [tool_guard._forget_pool]}


def test_the_first_tool_step_loop_registers_its_fork_hook_once(
    registered: dict[str, list[Callable[[], None]]],
) -> None:
    loops = [tool_step._StepLoop() for _ in range(3)]
    for held in loops:
        held.loop.close()
    assert registered == {"exit": [], "fork": [tool_step._forget_thread_loops]}


def test_asking_again_for_a_hook_registers_nothing(
    registered: dict[str, list[Callable[[], None]]],
) -> None:
    def hook() -> None:
        pass

    process_hooks.at_exit(hook)
    process_hooks.at_exit(hook)
    process_hooks.after_fork(hook)
    process_hooks.after_fork(hook)
    assert registered == {"exit": [hook], "fork": [hook]}
