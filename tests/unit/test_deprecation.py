"""Renamed modules and names keep working for one release, each with a warning that
names the new one."""

from __future__ import annotations

import importlib
import sys

import pytest

from loopgraphs import state
from loopgraphs.nodes import driver, generate, model_call, model_send, tool_guard
from loopgraphs.nodes.parsing import react

MODULES = [("loopgraphs.nodes.call_tool", tool_guard), ("loopgraphs.nodes.runner", driver)]
NAMES = [
    (model_call, "Asker", model_call.ModelCaller),
    (model_call, "asking", model_call.caller_for),
    (generate, "asker", generate.node_caller),
    (model_send, "Form", model_send.RequestForm),
    (state, "Scratch", state.Bookkeeping),
    (react, "Step", react.ParsedReply),
    (tool_guard, "run_calls", tool_guard.calls_since),
]


@pytest.mark.parametrize(("old", "new"), MODULES)
def test_an_old_module_name_is_the_new_module(old, new, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=rf"{old} is now {new.__name__}"):
        assert importlib.import_module(old) is new


@pytest.mark.parametrize(("module", "old", "new"), NAMES)
def test_an_old_name_is_the_new_object(module, old, new):
    with pytest.warns(DeprecationWarning, match=rf"{module.__name__}\.{old} is now"):
        assert getattr(module, old) is new


def test_an_unknown_name_is_still_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        _ = model_call.Nothing  # type: ignore[attr-defined]
