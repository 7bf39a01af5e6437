"""Bad middleware gets a clear error when the graph is built (or, for a wrapper that lacks
the variant a run needs, when the run reaches it)."""

from __future__ import annotations

import pytest
from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    SummarizationMiddleware,
    before_model,
    hook_config,
    wrap_model_call,
    wrap_tool_call,
)

from loopgraphs import LOOPS
from loopgraphs.graphs.registry import get_spec
from tests.support.fakes import calls, tool_call
from tests.support.scripts import model_for


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def build(loop: str, middleware: object, replies: list | None = None):
    return get_spec(loop).build(model_for("native", replies or []), [lookup], middleware=middleware)


@pytest.mark.parametrize("loop", LOOPS)
def test_an_object_that_is_not_middleware_is_refused(loop):
    def plain(state, runtime):
        return None

    with pytest.raises(
        TypeError, match=r"middleware\[0\].*AgentMiddleware instance.*@before_model"
    ):
        build(loop, [plain])
    with pytest.raises(TypeError, match="pass an instance"):
        build(loop, [SummarizationMiddleware])
    with pytest.raises(TypeError, match="must be a list"):
        build(loop, before_model(lambda state, runtime: None))


class Tools(AgentMiddleware):
    @hook_config(can_jump_to=["tools"])
    def before_model(self, state, runtime):
        return None


@pytest.mark.parametrize("loop", ["plan_execute", "reflexion", "cot", "tot"])
def test_a_jump_to_tools_in_a_loop_without_a_tool_step_is_refused(loop):
    with pytest.raises(ValueError, match=f"{loop} has no tool step"):
        build(loop, [Tools()])


@pytest.mark.parametrize("loop", ["react", "self_ask", "critic"])
def test_a_jump_to_tools_is_wired_where_the_loop_has_a_tool_step(loop):
    assert build(loop, [Tools()]).get_graph() is not None


class Clash(AgentState):
    status: str


class Clashing(AgentMiddleware):
    state_schema = Clash


@pytest.mark.parametrize("loop", LOOPS)
def test_a_middleware_state_key_that_clashes_is_refused(loop):
    with pytest.raises(ValueError, match=r"'status'.*rename"):
        build(loop, [Clashing()])


def test_two_middleware_with_one_name_are_refused():
    @before_model(name="Same")
    def first(state, runtime):
        return None

    @before_model(name="Same")
    def second(state, runtime):
        return None

    with pytest.raises(ValueError, match="more than one instance named Same"):
        build("react", [first, second])


async def test_a_wrapper_without_the_needed_variant_raises_naming_the_middleware():
    @wrap_model_call
    async def only_async(request, handler):
        return await handler(request)

    graph = build("react", [only_async], ["done"])
    with pytest.raises(NotImplementedError, match="only_async defines only awrap_model_call"):
        graph.invoke({"messages": [("user", "hi")]})
    assert (await graph.ainvoke({"messages": [("user", "hi")]}))["answer"] == "done"

    @wrap_tool_call
    def only_sync(request, handler):
        return handler(request)

    replies = [calls(tool_call("lookup", {"key": "a"})), "done"]
    graph = build("react", [only_sync], replies)
    with pytest.raises(NotImplementedError, match="only_sync defines only wrap_tool_call"):
        await graph.ainvoke({"messages": [("user", "hi")]})
