"""Tree-of-Thoughts' model requests go through the middleware hooks with the run's state.

Every request (proposal or samples, scoring, the forced final answer) is built from the
conversation as the ``before_model`` hooks left it and carries the run's whole state,
the caller's ``state_schema`` keys included.
"""

from __future__ import annotations

import re

import pytest
from langchain.agents.middleware import PIIMiddleware, before_model, dynamic_prompt
from langchain_core.messages import HumanMessage, SystemMessage
from typing_extensions import TypedDict

from loopgraphs.graphs.tot import create_tot_graph
from tests.loops.test_tot import COMBOS, brain, prompt_text, scripted

EMAIL = "bob@example.com"
VERSION_RE = re.compile(r"Version (\d+) of the task")


def kinds_of(model) -> set[str]:
    """The kinds of request the model received."""
    kinds = set()
    for messages in model.prompts:
        text = prompt_text(messages)
        if "Score each candidate" in text or "How promising" in text:
            kinds.add("score")
        elif "exploration is over" in text:
            kinds.add("answer")
        else:
            kinds.add("expand")
    return kinds


@pytest.mark.parametrize(("generation", "scoring"), COMBOS)
def test_redacted_input_is_what_every_request_shows(generation, scoring):
    model = scripted(brain())
    graph = create_tot_graph(
        model,
        generation=generation,
        scoring=scoring,
        max_depth=2,
        middleware=[PIIMiddleware("email", strategy="redact", apply_to_input=True)],
    )
    out = graph.invoke({"messages": [("user", f"Write to {EMAIL} about the plan.")]})
    assert out["status"] == "completed"
    assert kinds_of(model) == {"expand", "score", "answer"}
    for messages in model.prompts:
        text = prompt_text(messages)
        assert EMAIL not in text
        assert "[REDACTED_EMAIL]" in text


class Tenant(TypedDict, total=False):
    tenant: str


@pytest.mark.parametrize("behind_a_hook", [False, True])
@pytest.mark.parametrize(("generation", "scoring"), COMBOS)
def test_dynamic_prompt_reads_the_callers_state_key_in_every_request(
    generation, scoring, behind_a_hook
):
    # Behind a before_model hook, its last node sends the expand tasks: they carry the
    # whole state, the caller's keys included, not only the loop's own.
    seen: list[str | None] = []

    @before_model
    def looks(state, runtime):
        return None

    @dynamic_prompt
    def per_tenant(request):
        seen.append(request.state.get("tenant"))
        return f"You work for {request.state.get('tenant')}."

    model = scripted(brain())
    graph = create_tot_graph(
        model,
        generation=generation,
        scoring=scoring,
        max_depth=2,
        state_schema=Tenant,
        middleware=[looks, per_tenant] if behind_a_hook else [per_tenant],
    )
    out = graph.invoke({"messages": [("user", "Solve it.")], "tenant": "acme"})
    assert out["status"] == "completed"
    assert kinds_of(model) == {"expand", "score", "answer"}
    assert seen and seen == ["acme"] * model.call_count
    for messages in model.prompts:
        systems = [m for m in messages if isinstance(m, SystemMessage)]
        assert systems and "You work for acme." in prompt_text(systems)


@pytest.mark.parametrize(("generation", "scoring"), COMBOS)
def test_before_model_update_is_what_the_next_request_sees(generation, scoring):
    runs = {"count": 0}

    @before_model
    def rewrite(state, runtime):
        runs["count"] += 1
        question = [m for m in state["messages"] if isinstance(m, HumanMessage)][-1]
        text = f"Version {runs['count']} of the task: solve it."
        return {"messages": [HumanMessage(text, id=question.id)]}

    model = scripted(brain())
    graph = create_tot_graph(
        model, generation=generation, scoring=scoring, max_depth=2, middleware=[rewrite]
    )
    out = graph.invoke({"messages": [("user", "Solve it.")]})
    assert out["status"] == "completed"
    assert kinds_of(model) == {"expand", "score", "answer"}
    versions = [VERSION_RE.findall(prompt_text(messages)) for messages in model.prompts]
    assert all(len(found) == 1 for found in versions)
    shown = [int(found[0]) for found in versions]
    # Requests run level by level, and each step's hook runs right before it: the versions
    # seen rise with the calls, every hook run is seen, the final answer sees the last.
    assert shown == sorted(shown)
    assert set(shown) == set(range(1, runs["count"] + 1))
    assert shown[-1] == runs["count"]
