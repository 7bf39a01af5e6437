"""CRITIC guided for a small local model in json mode.

On a guided run (see ``loopgraphs.nodes.guides``) the first critique must name
a claim for a tool, as ReAct must call a tool first there. In json mode the critique and
the revision are decoded under grounded schemas: a claim and its tool input are written
from the words of the question and the draft, the tool is one of the run's tools, and
the revision from the words of the question, the draft, the evidence that bears on each
claim and a few verdict words. The evidence shown for a claim is the tool result's
sentences that share the most words with it. The steps that use these are in
``loopgraphs.graphs.critic.steps``.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic.json_schema import JsonDict, JsonValue

from loopgraphs.nodes import closed_object, grounded_string, takes_one_input, words_of
from loopgraphs.nodes.parsing.critic import CheckedClaim
from loopgraphs.nodes.parsing.self_ask import open_json_field, relevant_sentences
from loopgraphs.toolkits.registry import ToolRegistry

CLAIM_WORDS = 24  # most words of a grounded claim
INPUT_WORDS = 12  # most words of a grounded tool input
REVISION_WORDS = 24  # most words of a grounded revision
GUIDED_CLAIMS = 2  # most claims of a guided critique
EVIDENCE_SENTENCES = 3  # sentences of a tool result shown for a claim
VERDICT_WORDS = "true false yes no correct incorrect not the is was in of"
"""Words a revision may use besides the question, the draft and the evidence."""


def critique_schema(tools: ToolRegistry, words: Sequence[str], *, required: bool) -> JsonDict:
    """JSON schema of a guided critique: up to ``GUIDED_CLAIMS`` claims, each with a run
    tool and its input, grounded in ``words``; at least one when ``required``, else after
    a ``verified`` flag.

    Args:
        tools: The run's tools.
        words: What a claim and a tool input may be written from.
        required: Whether at least one claim must be named.

    Returns:
        The schema, named ``critique``.
    """
    claim = grounded_string(words, most=CLAIM_WORDS, end=".")
    items: list[JsonValue] = []
    for item in tools.schemas():
        tool_input = (
            grounded_string(words, most=INPUT_WORDS)
            if takes_one_input(tools, item["name"])
            else item["parameters"]
        )
        items.append(
            closed_object(
                {"claim": claim, "tool": {"const": item["name"]}, "tool_input": tool_input}
            )
        )
    claims: JsonDict = {
        "type": "array",
        "items": {"anyOf": items},
        "minItems": 1 if required else 0,
        "maxItems": GUIDED_CLAIMS,
    }
    properties = (
        {"claims": claims} if required else {"verified": {"type": "boolean"}, "claims": claims}
    )
    return {
        "name": "critique",
        "description": "Claims of the draft to check.",
        "schema": closed_object(properties),
    }


def evidence(claims: Sequence[CheckedClaim]) -> list[CheckedClaim]:
    """The claims with each observation cut to the sentences that bear on the claim."""
    return [
        CheckedClaim(
            claim=item["claim"],
            tool=item["tool"],
            tool_input=item["tool_input"],
            observation=relevant_sentences(item["observation"], item["claim"], EVIDENCE_SENTENCES),
            round=item["round"],
        )
        for item in claims
    ]


def revision_schema(request: str, draft: str, claims: Sequence[CheckedClaim]) -> JsonDict:
    """JSON schema of a guided revision: ``{"answer": ...}`` written from the words of the
    question, the draft, the evidence (as ``evidence`` shows it) and ``VERDICT_WORDS``."""
    shown = " ".join(item["observation"] for item in claims)
    words = words_of(request, draft, shown, VERDICT_WORDS)
    answer = grounded_string(words, most=REVISION_WORDS, end=".")
    return {
        "name": "revision",
        "description": "The revised answer.",
        "schema": closed_object({"answer": answer}),
    }


def revision_of(text: str) -> str:
    """The answer of a guided revision (its ``answer`` field), else the text as written."""
    return open_json_field(text, "answer") or text.strip()
