"""What ``loopgraphs.internals`` assumes of LangGraph and LangChain, one test per assumption,
and that no other module of the package reaches past it.

Each test states what the internal it checks must still do in the installed release: when
a release breaks one, it fails here, and the fix is one function of ``internals.py``.
"""

from __future__ import annotations

import ast
import asyncio
import operator
import threading
import typing
from pathlib import Path
from typing import Annotated, Any

import httpx
import openai
import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, before_model, hook_config
from langchain.agents.middleware.types import OmitFromInput, OmitFromOutput, PrivateStateAttr
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, Tool, tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages
from langgraph.managed import IsLastStep, RemainingSteps
from langgraph.runtime import Runtime
from langgraph.types import Command, Overwrite
from pydantic import BaseModel
from typing_extensions import TypedDict

from loopgraphs import internals
from loopgraphs.nodes.model_call import ModelCaller
from loopgraphs.state import merge_scratch
from tests.support.fakes import ScriptedChatModel

ROOT = Path(__file__).resolve().parents[2]


# --- The node callable --------------------------------------------------------------


class Counted(TypedDict, total=False):
    seen: list[str]


def one_node_graph(node: Any) -> Any:
    builder = StateGraph(Counted)
    builder.add_node("step", node)
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    return builder.compile()


def test_a_node_callable_runs_its_sync_path_under_invoke_and_its_async_one_under_ainvoke():
    def sync(state: Counted, config: RunnableConfig, runtime: Runtime[Any]) -> Counted:
        assert config["configurable"]["thread"] == "t"
        assert isinstance(runtime, Runtime)
        return {"seen": ["sync"]}

    async def asynchronous(state: Counted, config: RunnableConfig, runtime: Runtime[Any]) -> Any:
        assert config["configurable"]["thread"] == "t"
        assert isinstance(runtime, Runtime)
        return {"seen": ["async"]}

    graph = one_node_graph(internals.untraced_callable(sync, asynchronous, name="step"))
    config: RunnableConfig = {"configurable": {"thread": "t"}}
    assert graph.invoke({}, config)["seen"] == ["sync"]
    assert asyncio.run(graph.ainvoke({}, config))["seen"] == ["async"]


class RunNames(BaseCallbackHandler):
    def __init__(self) -> None:
        self.names: list[str] = []

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.names.append(kwargs.get("name") or "")


def test_a_node_callable_starts_no_run_of_its_own():
    runs = RunNames()
    node = internals.untraced_callable(lambda state: {"seen": ["x"]}, name="step")
    one_node_graph(node).invoke({}, {"callbacks": [runs]})
    assert runs.names.count("step") == 1  # LangGraph's run of the task, none inside it


def test_a_sync_only_router_runs_in_the_callers_thread_under_ainvoke():
    threads: list[int] = []

    def router(state: Counted) -> str:
        threads.append(threading.get_ident())
        return END

    builder = StateGraph(Counted)
    builder.add_node("step", lambda state: {"seen": ["x"]})
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", internals.untraced_callable(router, name="r"), [END])

    async def run() -> int:
        await builder.compile().ainvoke({})
        return threading.get_ident()

    assert threads == [asyncio.run(run())]


def test_a_node_naming_its_subgraph_shows_it_in_the_graph():
    inner_builder = StateGraph(Counted)
    inner_builder.add_node("inner_step", lambda state: {"seen": ["inner"]})
    inner_builder.add_edge(START, "inner_step")
    inner = inner_builder.compile()

    def run_inner(state: Counted, config: RunnableConfig, runtime: Runtime[Any]) -> Any:
        return {"seen": inner.invoke({}, config)["seen"]}

    runs = [run_inner]  # the node reads only this list, which LangGraph does not look into

    def step(state: Counted, config: RunnableConfig, runtime: Runtime[Any]) -> Any:
        return runs[0](state, config, runtime)

    graph = one_node_graph(internals.untraced_callable(step, name="step", subgraph=inner))
    assert dict(graph.get_subgraphs()) == {"step": inner}
    assert "inner_step" in graph.get_graph(xray=True).draw_mermaid()
    assert graph.invoke({})["seen"] == ["inner"]


# --- Channels -----------------------------------------------------------------------


class Reduced(TypedDict, total=False):
    total: Annotated[int, operator.add]
    status: str
    messages: Annotated[list[Any], add_messages]
    scratch: Annotated[dict[str, Any], merge_scratch]
    remaining_steps: RemainingSteps


def test_the_state_channels_hold_every_key_and_tell_reducers_from_plain_values():
    channels = internals.state_channels(StateGraph(Reduced))
    assert {"total", "status", "messages", "scratch"} <= set(channels)
    assert "remaining_steps" not in channels  # a managed value, not a channel
    assert [internals.has_reducer(channels, k) for k in ("total", "messages", "status")] == [
        True,
        True,
        False,
    ]
    assert internals.takes_last_write(channels, "status")
    assert internals.takes_last_write(channels, "not_a_key")
    assert not internals.takes_last_write(channels, "total")


WRITES = [
    {"total": 2, "status": "a", "scratch": {"x": 1}, "messages": [AIMessage("new", id="a2")]},
    Command(update={"total": 3, "scratch": {"y": 2}}),
    {"messages": [RemoveMessage(id="h1"), HumanMessage("again", id="h3")]},
]


@pytest.mark.parametrize("start", [{}, {"total": 1, "scratch": {"x": 0, "z": 0}}])
def test_reducing_a_steps_writes_gives_what_langgraph_applies(start):
    seen: list[dict[str, Any]] = []
    builder = StateGraph(Reduced)
    builder.add_node("look", lambda state: seen.append(dict(state)) or {})
    builder.add_node("write", lambda state: WRITES)
    builder.add_edge(START, "look")
    builder.add_edge("look", "write")
    messages = [HumanMessage("q", id="h1"), AIMessage("a", id="a1")]
    out = builder.compile().invoke({**start, "messages": messages})

    channels = internals.state_channels(builder)
    before = seen[0]
    for key in ("total", "scratch", "messages"):
        writes = [w.update if isinstance(w, Command) else w for w in WRITES]
        values = [w[key] for w in writes if key in w]
        assert internals.reduced(channels, key, before, values) == out[key]
    assert out["status"] == "a"  # a key without a reducer takes its write


@pytest.mark.parametrize(
    "replace", [Overwrite(7), {"__overwrite__": 7}, {"type": "__overwrite__", "value": 7}]
)
def test_reducing_an_overwrite_gives_what_langgraph_applies(replace):
    seen: list[dict[str, Any]] = []
    builder = StateGraph(Reduced)
    builder.add_node("look", lambda state: seen.append(dict(state)) or {})
    builder.add_node(
        "write",
        lambda state: [Command(update={"total": 2}), Command(update={"total": replace})],
    )
    builder.add_edge(START, "look")
    builder.add_edge("look", "write")
    out = builder.compile().invoke({"total": 1, "messages": []})

    channels = internals.state_channels(builder)
    assert internals.reduced(channels, "total", seen[0], [2, replace]) == out["total"] == 7


def test_reducing_into_an_emptied_channel_reads_none():
    channels = internals.state_channels(StateGraph(Reduced))
    remove_all = [RemoveMessage(id=REMOVE_ALL_MESSAGES)]
    assert internals.reduced(channels, "messages", {}, [remove_all]) == []
    assert internals.reduced(channels, "total", {}, [4]) == 4


# --- Middleware ---------------------------------------------------------------------


class Declared(AgentMiddleware[Any, Any]):
    @hook_config(can_jump_to=["model", "end"])
    def after_model(self, state: Any, runtime: Any) -> Any:
        return None

    async def abefore_model(self, state: Any, runtime: Any) -> Any:
        return None


def test_a_hooks_declared_jumps_are_read_from_hook_config_and_the_decorators():
    assert internals.declared_jumps(Declared.after_model) == ["model", "end"]
    assert internals.declared_jumps(Declared.abefore_model) == []

    @before_model(can_jump_to=["end"])
    def stop(state: Any, runtime: Any) -> Any:
        return None

    assert internals.declared_jumps(type(stop).before_model) == ["end"]


def test_create_agent_wires_the_jumps_read_there():
    @before_model(can_jump_to=["end"])
    def stop(state: Any, runtime: Any) -> Any:
        return None

    agent = create_agent(ScriptedChatModel(replies=["hi"]), tools=[], middleware=[stop])
    edges = {(e.source, e.target) for e in agent.get_graph().edges}
    assert internals.declared_jumps(type(stop).before_model) == ["end"]
    assert ("stop.before_model", END) in edges


class Marked(AgentMiddleware[Any, Any]):
    class state_schema(TypedDict, total=False):
        messages: Annotated[list[Any], add_messages]
        jump_to: Any
        no_input: Annotated[str, OmitFromInput]
        no_output: Annotated[str, OmitFromOutput]
        private: Annotated[str, PrivateStateAttr]
        shared: str


def test_the_schema_markers_name_the_schemas_create_agent_leaves_a_field_out_of():
    assert [internals.omits_from(OmitFromInput, s) for s in ("input", "output")] == [True, False]
    assert [internals.omits_from(OmitFromOutput, s) for s in ("input", "output")] == [False, True]
    assert [internals.omits_from(PrivateStateAttr, s) for s in ("input", "output")] == [True, True]
    assert not internals.omits_from(operator.add, "input")
    agent = create_agent(ScriptedChatModel(replies=["hi"]), tools=[], middleware=[Marked()])
    inputs = set(agent.get_input_jsonschema()["properties"])
    outputs = set(agent.get_output_jsonschema()["properties"])
    assert "no_output" in inputs and "shared" in inputs
    assert not {"no_input", "private"} & inputs
    assert "no_input" in outputs and "shared" in outputs
    assert not {"no_output", "private"} & outputs


def test_a_managed_value_is_told_from_other_markers():
    # A managed value is a type annotated with its manager, the marker read here.
    assert internals.is_managed(typing.get_args(RemainingSteps)[1])
    assert internals.is_managed(typing.get_args(IsLastStep)[1])
    assert not internals.is_managed(operator.add)
    assert not internals.is_managed(int)


# --- Tools --------------------------------------------------------------------------


THREADS: list[int] = []


def noted(a: Any) -> Any:
    """The input, the thread that ran the tool's code noted."""
    THREADS.append(threading.get_ident())
    return a


async def anoted(a: Any) -> Any:
    return noted(a)


@tool
def sync_tool(a: int) -> int:
    """Return a."""
    return noted(a)


@tool
async def async_tool(a: int) -> int:
    """Return a."""
    return noted(a)


class OwnRun(BaseTool):
    name: str = "own_run"
    description: str = "d"

    def _run(self, a: int) -> int:
        return noted(a)


class OwnAsync(OwnRun):
    name: str = "own_async"

    async def _arun(self, a: int) -> int:
        return noted(a)


def awaited_in_thread(made: BaseTool, given: Any) -> bool:
    """Whether the awaited tool ran its code outside the event loop's thread."""
    THREADS.clear()

    async def run() -> int:
        await made.ainvoke(given)
        return threading.get_ident()

    loop_thread = asyncio.run(run())
    assert len(THREADS) == 1
    return [loop_thread] != THREADS


def test_a_tool_without_async_code_of_its_own_runs_in_a_thread_when_awaited():
    assert issubclass(StructuredTool, BaseTool) and issubclass(Tool, BaseTool)
    both = StructuredTool.from_function(func=noted, coroutine=anoted, name="both", description="d")
    cases: list[tuple[BaseTool, Any]] = [
        (sync_tool, {"a": 1}),
        (async_tool, {"a": 1}),
        (OwnRun(), {"a": 1}),
        (OwnAsync(), {"a": 1}),
        (both, {"a": 1}),
        (Tool(name="plain", description="d", func=noted), "1"),
        (Tool(name="plain_async", description="d", func=None, coroutine=anoted), "1"),
    ]
    for made, given in cases:
        expected = awaited_in_thread(made, given)
        assert internals.runs_in_thread_when_awaited(made) == expected, made.name
    assert internals.runs_in_thread_when_awaited(sync_tool)
    assert not internals.runs_in_thread_when_awaited(async_tool)


# --- Provider errors ----------------------------------------------------------------


class Answer(BaseModel):
    a: str


def cut_reply(request: httpx.Request) -> httpx.Response:
    """An OpenAI-style server's reply cut at ``max_tokens``."""
    message = {"role": "assistant", "content": '{"a": "cu'}
    usage = {
        "prompt_tokens": 40,
        "completion_tokens": 8,
        "total_tokens": 48,
        "prompt_tokens_details": {"cached_tokens": 30},
    }
    choice = {"index": 0, "finish_reason": "length", "message": message}
    body = {"id": "c", "object": "chat.completion", "created": 0, "model": "m"}
    return httpx.Response(200, json={**body, "choices": [choice], "usage": usage})


def test_a_structured_reply_cut_at_max_tokens_escapes_as_openais_error_and_is_read():
    model = ChatOpenAI(
        model="m",
        api_key="k",  # type: ignore[arg-type]
        base_url="http://server.invalid/v1",
        http_client=httpx.Client(transport=httpx.MockTransport(cut_reply)),
        max_retries=0,
    )
    structured = model.with_structured_output(Answer, method="json_schema")
    with pytest.raises(openai.LengthFinishReasonError) as caught:
        structured.invoke("q")
    assert internals.is_cut_reply_error(caught.value)
    outcome = ModelCaller(structured).call([]).invoke({})  # type: ignore[arg-type]
    assert outcome.reply.content == '{"a": "cu'
    assert outcome.usage == {"input_tokens": 40, "output_tokens": 8, "cached_tokens": 30}


def test_an_error_only_named_like_openais_is_not_a_cut_reply():
    lookalike = type("LengthFinishReasonError", (Exception,), {})
    assert not internals.is_cut_reply_error(lookalike())


# --- No other module reaches past internals.py ----------------------------------------

LIBRARIES = ("langgraph", "langchain", "openai")
# What internals.py wraps: importing these elsewhere would bypass it.
WRAPPED_MODULES = ("langgraph.channels", "langgraph.pregel", "langgraph.managed.base")
WRAPPED_NAMES = {
    "RunnableCallable",
    "BaseChannel",
    "BinaryOperatorAggregate",
    "LastValue",
    "OmitFromSchema",
    "is_managed_value",
    "LengthFinishReasonError",
}
# Attributes of library objects that only internals.py reads.
PRIVATE_ATTRIBUTES = {
    "__can_jump_to__",
    "__code__",
    "__closure__",
    "__globals__",
    "cell_contents",
    "channels",
}
# Class names compared as strings that belong to no library of LIBRARIES (pandas, an
# optional dependency, recognised without importing it).
NAME_CHECKS_ALLOWED = {("eval/data.py", "DataFrame")}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _import_problems(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        modules = [alias.name for alias in node.names]
        names: list[str] = []
    else:
        modules = [node.module or ""]
        names = [alias.name for alias in node.names]
    problems = []
    for module in modules:
        if not module.split(".")[0].startswith(LIBRARIES):
            continue
        if any(part.startswith("_") for part in module.split(".")):
            problems.append(f"imports the private module {module}")
        if module.startswith(WRAPPED_MODULES):
            problems.append(f"imports {module}, which internals.py wraps")
        for name in names:
            if _is_private(name) or name in WRAPPED_NAMES:
                problems.append(f"imports {name} from {module}")
    return problems


def _attribute_problem(node: ast.Attribute) -> str | None:
    owner = node.value
    own = isinstance(owner, ast.Name) and owner.id in ("self", "cls")
    if node.attr in PRIVATE_ATTRIBUTES or (_is_private(node.attr) and not own):
        return f"reads .{node.attr}"
    return None


def _getattr_problem(node: ast.Call) -> str | None:
    accessors = ("getattr", "hasattr", "setattr")
    if not (isinstance(node.func, ast.Name) and node.func.id in accessors and len(node.args) > 1):
        return None
    owner, name = node.args[0], node.args[1]
    own = isinstance(owner, ast.Name) and owner.id in ("self", "cls")
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return None
    if name.value in PRIVATE_ATTRIBUTES or (_is_private(name.value) and not own):
        return f"reads {name.value!r} with {node.func.id}"
    return None


def _name_check(node: ast.Compare) -> str | None:
    """A class matched by the name it has (``type(x).__name__ == "..."``)."""
    sides = [node.left, *node.comparators]
    named = any(isinstance(s, ast.Attribute) and s.attr == "__name__" for s in sides)
    texts = [s.value for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, str)]
    return texts[0] if named and texts else None


def problems_in(source: str, path: str) -> list[str]:
    """Every use of a library internal in one module's ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        problem: str | None = None
        if isinstance(node, ast.Import | ast.ImportFrom):
            found += [f"{path}:{node.lineno}: {p}" for p in _import_problems(node)]
        elif isinstance(node, ast.Attribute):
            problem = _attribute_problem(node)
        elif isinstance(node, ast.Call):
            problem = _getattr_problem(node)
        elif isinstance(node, ast.Compare):
            name = _name_check(node)
            if name and (path, name) not in NAME_CHECKS_ALLOWED:
                problem = f"matches a class by its name {name!r}"
        if problem:
            found.append(f"{path}:{node.lineno}: {problem}")
    return found


def package_modules() -> list[Path]:
    """The package's modules: the root's and its subpackages' (not tests, examples)."""
    roots = [ROOT / name for name in ("graphs", "nodes", "eval", "toolkits")]
    found = sorted(ROOT.glob("*.py"))
    for root in roots:
        found += sorted(root.rglob("*.py"))
    return [path for path in found if path.name != "internals.py"]


def test_no_module_but_internals_uses_a_library_internal():
    modules = package_modules()
    assert len(modules) > 40  # the package's modules, not an empty glob
    found = []
    for path in modules:
        found += problems_in(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert found == []


def test_the_internals_check_finds_each_kind_of_use():
    source = "\n".join(
        [
            "from langgraph._internal._runnable import RunnableCallable",
            "from langgraph.channels.binop import BinaryOperatorAggregate",
            "from langchain_core.tools import BaseTool",
            "import langgraph._internal",
            "x = builder.channels",
            "y = tool._arun",
            "z = getattr(method, '__can_jump_to__', None)",
            "w = f.__code__",
            "ok = type(exc).__name__ == 'LengthFinishReasonError'",
            "fine = self._own",
        ]
    )
    found = problems_in(source, "sample.py")
    assert [line.split(":")[1] for line in found] == [
        "1",
        "1",
        "2",
        "2",
        "4",
        "5",
        "6",
        "7",
        "8",
        "9",
    ]


def test_internals_imports_nothing_of_the_package():
    tree = ast.parse((ROOT / "internals.py").read_text(encoding="utf-8"))
    modules = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    modules += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in modules if m.startswith("loopgraphs")]


def test_the_context_bound_is_langgraphs():
    """``ContextLike`` is the bound LangGraph's own ``ContextT`` has, so a loop's graph
    typed with loopgraphs' ``ContextT`` is a ``CompiledStateGraph`` LangGraph accepts."""
    from langgraph.typing import ContextT

    assert internals.ContextLike == ContextT.__bound__


def test_a_graph_run_in_a_node_finds_the_stream_only_when_subgraphs_are_streamed():
    from langgraph.graph import START, StateGraph
    from typing_extensions import TypedDict

    from loopgraphs.internals import streams_subgraphs

    class State(TypedDict, total=False):
        seen: list[bool]

    def node(state: State, config: RunnableConfig) -> State:
        return {"seen": [streams_subgraphs(config)]}

    graph = StateGraph(State)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    compiled = graph.compile()
    assert compiled.invoke({})["seen"] == [False]
    updates = list(compiled.stream({}, stream_mode="updates"))
    assert updates == [{"node": {"seen": [False]}}]
    nested = list(compiled.stream({}, stream_mode="updates", subgraphs=True))
    assert nested == [((), {"node": {"seen": [True]}})]
