"""Self-Ask's prompts: its grammar, the tool notes, and the guided small-model turns."""

SELF_ASK_FORMAT = """Break the question into simpler follow-up questions, one at a time.
Use exactly this format:
Are follow up questions needed here? Yes.
Follow up: <one simple question>
Intermediate answer: <its answer>
... (more follow-ups, each with its intermediate answer)
So the final answer is: <the answer>
A follow-up after an intermediate answer asks about that answer the fact the question
needs, in the question's words ("Who was the mentor of <that answer>?"), never only who
or what it is.
When no follow-up is needed, write "Are follow up questions needed here? No." and the
final answer line.

Example:
Question: In which year was the author of "The Hobbit" born?
Are follow up questions needed here? Yes.
Follow up: Who wrote "The Hobbit"?
Intermediate answer: J. R. R. Tolkien.
Follow up: In which year was J. R. R. Tolkien born?
Intermediate answer: 1892.
So the final answer is: 1892"""

SELF_ASK_TOOLS = """{format}

Each follow-up is answered for you: after a "Follow up:" line, stop and wait for the
"Intermediate answer:" that comes back. A follow-up goes to the tool {first}. To ask
another tool, write instead:
Tool: <tool name>
Tool Input: <input>
{input_note}
Available tools:
{tools}
{fence_note}"""

SELF_ASK_NATIVE = """{format}

Answer each follow-up by calling a tool: write the "Follow up:" line and call the tool
in the same reply, then read its result. Write the final answer line once you know it.
{fence_note}"""

SELF_ASK_SOLO = """{format}

No tools are available: answer each follow-up yourself, from what you know."""

SELF_ASK_TEXT_INPUT = "Tool Input is plain text."

SELF_ASK_JSON_INPUT = (
    'Tool Input is a JSON object with the tool\'s arguments, e.g. {"query": "..."}; '
    "plain text works for tools with one argument."
)

SELF_ASK_INTERMEDIATE = "Intermediate answer: {content}"

SELF_ASK_CONTINUE_SOLO = (
    'Answer your follow-up question yourself. Start with "Intermediate answer:", then '
    'either ask the next "Follow up:" question or finish with "So the final answer is: '
    '<answer>".'
)

SELF_ASK_CONTINUE = (
    'Continue: ask the next "Follow up:" question, or finish with '
    '"So the final answer is: <answer>".'
)

SELF_ASK_REQUIRE_FOLLOW_UP = (
    "Do not answer yet: first ask a follow-up question for the tool to answer. Reply with "
    'one line: "Follow up: <question>".'
)

SELF_ASK_FORCE_FINAL = (
    "You have asked all the follow-up questions allowed. Do not ask more and do not call "
    "tools. Using the intermediate answers so far (answer any open question yourself), "
    "reply now with one line: So the final answer is: <your best answer>"
)

# Self-Ask on models it guides (json and text modes on the embedded small model): each
# turn reads a short scratchpad after one worked example, and each tool result is read in
# a turn of its own.

SELF_ASK_GUIDED_SYSTEM = (
    "Answer the question by asking simple follow-up questions, one at a time. Each "
    "follow-up goes to a tool, and its intermediate answer comes back. Then ask the next "
    "follow-up, about that answer: the fact the question asks for, not who or what it "
    "is. Or give the final answer.\nTools:\n{tools}"
)

SELF_ASK_GUIDED_TEXT_NOTE = (
    'Reply with one line: "Follow up: <question>" or "So the final answer is: <answer>". '
    'A follow-up goes to the tool {tool}; for another tool, add a line "Tool: <name>".'
)

SELF_ASK_EXAMPLE_QUESTION = "In which city was the author of Silver Harbour born?"

SELF_ASK_EXAMPLE_STEPS = (
    (
        "Who is the author of Silver Harbour?",
        "Silver Harbour is a novel by Mara Lind. It was published in 1931.",
        "Mara Lind",
    ),
    (
        "In which city was Mara Lind born?",
        "Mara Lind was born in the year 1898. Mara Lind was born in Bergen.",
        "Bergen",
    ),
)
"""The worked example's follow-ups: (question, tool result, intermediate answer)."""

SELF_ASK_EXAMPLE_ANSWER = "Bergen"

SELF_ASK_QUESTION_LINE = "Question: {question}"

SELF_ASK_STEP_LINES = "Follow up: {question}\nIntermediate answer: {answer}"

SELF_ASK_FOLLOW_UP_LINE = "Follow up: {question}"

SELF_ASK_GUIDED_NEEDED = "What is the {needed} of {answer}?"
"""The follow-up a guided run asks instead of one that does not ask the fact the question
needs of the answer found ("Who is Ada Quinlan?"): ``{needed}`` is the question's words
that no follow-up used yet, ``{answer}`` the answer found."""

SELF_ASK_FINAL_LINE = "So the final answer is: {answer}"

SELF_ASK_READ_SYSTEM = (
    "Answer the question in a few words, with the answer read from the tool result.\n{fence_note}"
)

SELF_ASK_READ = "Tool result: {result}\n\nQuestion: {question}"
