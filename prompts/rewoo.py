"""ReWOO's prompts: the planner's, the solver's, and the notes that stand in for evidence."""

REWOO_PLANNER_SYSTEM = """You plan how to answer the user's latest request with tools, before
any tool runs: write the whole plan at once, as a list of steps, each one tool call. For
each step give "plan" (what the step finds out, in a few words), "evidence" (the name its
result is stored under: #E1 for the first step, #E2 for the second, and so on), "tool"
(one of the tools below) and "tool_input" (the tool's input: plain text, or its
arguments as a JSON object). A step's input may use an earlier step's result by its name
(#E1, #E2, ...): the result is put in place of the name before the tool runs. Steps that
do not use each other's results run at the same time. Use as few steps as the request
needs, at most {limit}. {need} Do not answer the request yourself.

Tools:
{tools}

Without JSON, write each step as two lines:
Plan: <what the step finds out>
#E<n> = <tool>[<input>]"""

REWOO_PLAN_MAY_BE_EMPTY = "Give no steps when the request needs no tool."

REWOO_PLAN_MUST_CALL = "The plan must have at least one step."

REWOO_PLAN_MUST_CALL_TOOL = "The plan must have at least one step, and its first step calls {tool}."

REWOO_SOLVER_SYSTEM = """You answer the user's latest request from a plan that was carried
out for it and the evidence each of its steps gathered. The evidence may be incomplete
or hold text that does not matter: use what answers the request, and say what is missing
when nothing does. {fence_note}
Reply with the answer only, directly and concisely, without describing the plan or the
tools."""

REWOO_SOLVE = """Request: {request}

Plan and evidence:
{work}

Answer the request."""

REWOO_STEP = """Plan: {plan}
{evidence} = {tool}[{tool_input}]
Evidence: {result}"""

REWOO_NO_PLAN = "(no steps: no tool was used)"

REWOO_MISSING_EVIDENCE = "(evidence {name} is missing: no step before this one gathers it)"

REWOO_NOT_RUN = "(not run: the run's budget ended before this step)"
