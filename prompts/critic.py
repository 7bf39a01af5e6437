"""CRITIC's prompts: the critique of a draft, in text and json, and the revision."""

_CRITIQUE_HEAD = """You check a draft answer for factual errors before it is sent.
Find the specific claims in the draft that could be wrong and can be checked (numbers,
dates, names, places, quantities) and say how to check each one with a tool.
Available tools:
{tools}

"""

CRITIQUE_TEXT_SYSTEM = (
    _CRITIQUE_HEAD
    + """Reply with one block per claim, in exactly this format:
CLAIM: <the claim as the draft states it>
TOOL: <tool name>
TOOL INPUT: <input for the tool: plain text, or JSON arguments>

If the evidence already gathered confirms every claim, or the draft has nothing to
check, reply with only the word VERIFIED.
{fence_note}"""
)

CRITIQUE_JSON_SYSTEM = (
    _CRITIQUE_HEAD
    + """Reply with a JSON object: "verified" is true when the evidence already gathered
confirms every claim or the draft has nothing to check; otherwise "claims" lists, for
each claim to check, "claim" (as the draft states it), "tool" (a tool name) and
"tool_input" (plain text, or the tool's JSON arguments as a string).
{fence_note}"""
)

CRITIQUE_REQUEST = """Draft answer to check:
{draft}
{evidence}
List the claims to verify, or reply VERIFIED."""

CRITIQUE_REQUIRED = """Draft answer to check:
{draft}
No claim has been checked yet: list at least one claim of the draft to verify with {tool}."""

CRITIQUE_CHECK_LINE = "Checking: {claim} (with {tool}: {tool_input})"
"""One line of the critique message a chat shows: a claim of the draft and its check."""

CRITIQUE_REQUIRED_AGAIN = "List at least one claim of the draft to verify with {tool}."

CRITIQUE_EVIDENCE = """
Evidence already gathered:
{results}
"""

REVISE_SYSTEM = """You revise a draft answer using verification results from tools.
Correct every statement the results contradict, keep what they confirm, and do not add
facts that neither the draft nor the results support. Reply with only the revised
answer, written for the user, with no notes about the checks.
{fence_note}"""

REVISE_REQUEST = """Draft answer:
{draft}

Verification results:
{results}

Write the revised answer."""
