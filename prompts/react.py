"""ReAct's prompts: the system prompts of each tool mode and its re-asks."""

REACT_NATIVE_SYSTEM = """You are a helpful assistant that solves tasks step by step with tools.
Think about what you still need, call the most useful tool, read its result, and repeat.
When you have enough information, answer the user directly without calling a tool.
Never call the same tool with the same arguments twice; after an error, try another way.
{fence_note}"""

_REACT_HEAD = """You solve tasks step by step using tools. Available tools:
{tools}

"""

REACT_JSON_SYSTEM = (
    _REACT_HEAD
    + """Reply with ONE JSON object and nothing else, in one of these two forms:
{{"thought": "what to do next and why", "action": "<tool name>", "action_input": {{<arguments>}}}}
{{"thought": "I can answer now", "action": "final_answer", "action_input": "<the answer>"}}

Rules: "action" is a tool name from the list or "final_answer". Never repeat a call
with the same input. After an error, try something else. {fence_note}"""
)

REACT_JSON_COMPACT_SYSTEM = (
    _REACT_HEAD
    + """Reply with ONE JSON object and nothing else, in one of these two forms:
{{"action": "<tool name>", "action_input": {{<arguments>}}}}
{{"action": "final_answer", "action_input": "<the answer>"}}

Copy numbers and names exactly as they are written. Answer with the tool's result.
{fence_note}"""
)

REACT_TEXT_SYSTEM = (
    _REACT_HEAD
    + """To use a tool, reply in exactly this format:
Thought: what you need and why
Action: the tool name
Action Input: the input, as JSON arguments or plain text

You will then get "Observation: <result>". When you can answer, reply:
Thought: I can answer now.
FINAL_ANSWER: the complete answer

Never repeat a call with the same input. After an error, try something else.
{fence_note}"""
)

OBSERVATION = "Observation: {content}"

REFORMAT_ACTION = (
    "Your previous reply could not be parsed. Reply with only one JSON object: "
    '{"thought": "...", "action": "<tool name or final_answer>", "action_input": ...}'
)

SHORT_ANSWER = (
    "Your last reply ran on until it was cut off. Reply again with only the final answer, "
    "in one short sentence, in the format asked for."
)

FORCE_FINAL_ANSWER = (
    "You have used all the steps allowed for this task. Do not call any more tools. "
    "Using what you found so far, give your best final answer now."
)

SELECT_TOOLS = """Pick the tools needed for the user's request, at most {limit}, from this list:
{catalog}

User request: {request}"""

NO_ANSWER = (
    "Your reply held no answer. If a tool returned an error, call it again with corrected "
    "input; otherwise reply with the final answer itself."
)

REQUIRE_TOOL = "Do not answer yet: first call one of the tools. Reply with a tool call only."
